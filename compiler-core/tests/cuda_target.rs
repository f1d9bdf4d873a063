//! The CUDA target without a GPU: golden CUDA C for nine kernels (`tests/golden/cuda/`,
//! refreshed with `UPDATE_EXPECT=1`), and, with feature `cuda`, every program of the
//! conformance and JAX corpora compiled by NVRTC to PTX and assembled by
//! `ptxas -arch=sm_90` (NVIDIA's wheels: `cargo xtask test` installs them into
//! `.venv-cuda` and names it in `$HLOSCOPE_CUDA_VENV`). A failure prints the program's
//! source with line numbers and the compiler's message.
//!
//! Running kernels needs a GPU: the GPU check kit (`cargo xtask gpu-check --prepare`)
//! does that on a machine that has one.

use hloscope_core::ir::Module;
use hloscope_core::targets::cstyle::Mapping;
use hloscope_core::targets::{cuda, optimize};

use crate::corpus;

fn parse(hlo: &str) -> Module {
    hloscope_core::parse::parse_module(hlo).unwrap_or_else(|e| panic!("{e:?}"))
}

/// The CUDA program of `hlo` after the target's pipeline.
fn program(hlo: &str) -> cuda::CudaProgram {
    cuda::compile(&optimize(&parse(hlo)).unwrap()).unwrap()
}

#[test]
fn a_fused_loop_kernel_as_cuda() {
    let p = program(
        "HloModule m
ENTRY main {
  x = f32[2,3] parameter(0)
  b = f32[3] parameter(1)
  bb = f32[2,3] broadcast(b), dimensions={1}
  s = f32[2,3] add(x, bb)
  ROOT t = f32[2,3] maximum(s, x)
}",
    );
    assert_eq!(p.counts(), (1, 0));
    let k = p.kernels[0].as_ref().unwrap();
    expect_test::expect_file!["golden/cuda/fused_loop.cu"].assert_eq(&k.source);
    assert_eq!(k.runs(), "6 threads, blocks of 256");
    assert_eq!(k.blocks(), 1);
    // The lines that bind a value name the HLO instruction it implements; no others do.
    assert_eq!(k.line_hlo.len(), k.source.lines().count());
    let linked: Vec<(&str, &str)> =
        k.source.lines().zip(&k.line_hlo).filter(|(_, h)| !h.is_empty()).map(|(l, h)| (l.trim(), h.as_str())).collect();
    assert!(linked.iter().all(|(l, _)| l.starts_with("const ") && l.contains(" e")), "{linked:?}");
    for inst in ["s", "t"] {
        assert!(linked.iter().any(|(_, h)| *h == inst), "no line implements %{inst}: {linked:?}");
    }
}

/// A 32 x 36 dot with relu after it, contracting `k` elements.
fn relu_dot(k: usize) -> String {
    format!(
        "HloModule m
ENTRY %main (x: f32[32,{k}], w: f32[{k},36]) -> f32[32,36] {{
  %x = f32[32,{k}] parameter(0)
  %w = f32[{k},36] parameter(1)
  %d = f32[32,36] dot(%x, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %z = f32[] constant(0)
  %zb = f32[32,36] broadcast(%z), dimensions={{}}
  ROOT %r = f32[32,36] maximum(%d, %zb)
}}"
    )
}

#[test]
fn a_dot_and_its_epilogue_run_in_register_tiles() {
    // A contraction shorter than a slice of shared memory: each thread a 4x4 block of
    // the 32 x 36 outputs (8 x 9 blocks), relu after the sum in the same kernel; the
    // decisions and the code are `cstyle`'s, shared with WGSL.
    let p = program(&relu_dot(8));
    assert_eq!(p.counts(), (1, 0));
    let k = p.kernels[0].as_ref().unwrap();
    assert_eq!(k.mapping, Mapping::DotTiles);
    assert_eq!(k.runs(), "dot tiles: 72 threads of 4x4 outputs, blocks of 256");
    expect_test::expect_file!["golden/cuda/dot_tiles.cu"].assert_eq(&k.source);
}

#[test]
fn a_dot_stages_its_operands_in_shared_memory_blocks() {
    // One block of 256 threads for the 32 x 36 outputs (a 64x64 block): slices of 16
    // steps of each operand staged in shared memory, each thread's 4x4 register tile
    // computed from there, relu after the sum (`cstyle`'s code, run on lavapipe).
    let p = program(&relu_dot(20));
    assert_eq!(p.counts(), (1, 0));
    let k = p.kernels[0].as_ref().unwrap();
    assert_eq!(k.mapping, Mapping::DotBlocks);
    assert_eq!(k.runs(), "dot blocks: 1 blocks of 256, each 64x64 outputs");
    expect_test::expect_file!["golden/cuda/dot_blocks.cu"].assert_eq(&k.source);
}

#[test]
fn a_transpose_goes_through_shared_memory_tiles() {
    // One block per 32x32 tile (3 x 2 x 3 of them): the transposed operand read along
    // its own rows into shared memory, the tile computed and stored along the output's
    // rows; the operand already in order is read where it is used. `cstyle`'s code,
    // shared with WGSL (run on lavapipe there).
    let p = program(
        "HloModule m
ENTRY %main (x: f32[3,70,45], y: f32[3,45,70]) -> f32[3,45,70] {
  %x = f32[3,70,45] parameter(0)
  %y = f32[3,45,70] parameter(1)
  %t = f32[3,45,70] transpose(%x), dimensions={0,2,1}
  %m = f32[3,45,70] multiply(%t, %y)
  ROOT %s = f32[3,45,70] add(%m, %t)
}",
    );
    assert_eq!(p.counts(), (1, 0));
    let k = p.kernels[0].as_ref().unwrap();
    assert_eq!(k.mapping, Mapping::TransposeTiles);
    assert_eq!(k.runs(), "transpose tiles: 18 blocks of 256, each a 32x32 tile");
    expect_test::expect_file!["golden/cuda/transpose_tiles.cu"].assert_eq(&k.source);
}

#[test]
fn scatters_combine_their_updates_atomically() {
    // An f32 scatter-add of rows (atomicAdd), after the operand's copy into the output;
    // an f32 scatter-max through a compare-and-swap loop around HLO's max; a replacing
    // one with indices promised unique as a plain store; each update combined only where
    // its target lies inside the operand.
    let p = program(
        "HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] maximum(%a, %b)
}
%second (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  ROOT %b = f32[] parameter(1)
}
ENTRY %main (e: f32[50,16], i: s32[30,1], g: f32[30,16]) -> (f32[50,16], f32[50,16], f32[50,16]) {
  %e = f32[50,16] parameter(0)
  %i = s32[30,1] parameter(1)
  %g = f32[30,16] parameter(2)
  %sa = f32[50,16] scatter(%e, %i, %g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
  %sm = f32[50,16] scatter(%e, %i, %g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%max
  %su = f32[50,16] scatter(%e, %i, %g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=%second
  ROOT %t = (f32[50,16], f32[50,16], f32[50,16]) tuple(%sa, %sm, %su)
}",
    );
    assert_eq!(p.counts(), (3, 0), "{}", p.listing());
    let mut sources = Vec::new();
    for k in p.kernels.iter().flatten() {
        let copy = k.copy_first.as_ref().expect("the operand is live after: copied");
        assert_eq!((copy.outer, k.outer), (800, 480));
        sources.push(copy.source.as_str());
        sources.push(k.source.as_str());
    }
    expect_test::expect_file!["golden/cuda/scatters.cu"].assert_eq(&sources.join("\n"));
}

#[test]
fn loop_kernels_move_memory_sixteen_bytes_at_a_time() {
    // Four neighbouring elements per thread: the operands contiguous along the row (the
    // bias too) read as float4, the per-row one element by element, one float4 store.
    let p = program(
        "HloModule m
ENTRY %main (x: f32[64,256], y: f32[64,256], b: f32[256], c: f32[64,1]) -> f32[64,256] {
  %x = f32[64,256] parameter(0)
  %y = f32[64,256] parameter(1)
  %b = f32[256] parameter(2)
  %bb = f32[64,256] broadcast(%b), dimensions={1}
  %c = f32[64,1] parameter(3)
  %cr = f32[64] reshape(%c)
  %cb = f32[64,256] broadcast(%cr), dimensions={0}
  %m = f32[64,256] multiply(%x, %y)
  %s = f32[64,256] add(%m, %bb)
  ROOT %t = f32[64,256] subtract(%s, %cb)
}",
    );
    assert_eq!(p.counts(), (1, 0));
    let k = p.kernels[0].as_ref().unwrap();
    assert_eq!(k.mapping, Mapping::Quads);
    assert_eq!(k.runs(), "quads: 4096 threads of 4 elements, 16-byte loads and stores, blocks of 256");
    assert_eq!(k.source.matches("*(const float4*)").count(), 3, "{}", k.source);
    expect_test::expect_file!["golden/cuda/quads.cu"].assert_eq(&k.source);
    // f16 in quads of 8 bytes (`ushort4`), each lane converted as a single load is and
    // rounded back to its bits before the store.
    let p = program(
        "HloModule m
ENTRY %main (x: f16[64,256], y: f16[64,256]) -> f16[64,256] {
  %x = f16[64,256] parameter(0)
  %y = f16[64,256] parameter(1)
  %m = f16[64,256] multiply(%x, %y)
  ROOT %s = f16[64,256] add(%m, %x)
}",
    );
    let k = p.kernels[0].as_ref().unwrap();
    assert_eq!(k.mapping, Mapping::Quads);
    assert_eq!(k.source.matches("*(const ushort4*)").count(), 2, "{}", k.source);
    expect_test::expect_file!["golden/cuda/quads_f16.cu"].assert_eq(&k.source);
    // A row of 6 is no multiple of four: one element per thread.
    let p = program(
        "HloModule m
ENTRY %main (x: f32[1000,6]) -> f32[1000,6] {
  %x = f32[1000,6] parameter(0)
  ROOT %y = f32[1000,6] add(%x, %x)
}",
    );
    assert_eq!(p.kernels[0].as_ref().unwrap().mapping, Mapping::Elements);
}

#[test]
fn a_long_row_reduction_is_shared_by_a_block_with_warp_shuffles() {
    let p = program(
        "HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[4,1000]) -> f32[4] {
  %x = f32[4,1000] parameter(0)
  %e = f32[4,1000] exponential(%x)
  %z = f32[] constant(0)
  ROOT %r = f32[4] reduce(%e, %z), dimensions={1}, to_apply=%add
}",
    );
    assert_eq!(p.counts(), (1, 0));
    let k = p.kernels[0].as_ref().unwrap();
    assert_eq!(k.mapping, Mapping::BlockReduction);
    assert_eq!(k.runs(), "block reduction: 4 blocks of 256");
    expect_test::expect_file!["golden/cuda/row_sum_of_exp.cu"].assert_eq(&k.source);
}

#[test]
fn half_floats_and_narrow_integers_compute_in_their_carriers() {
    // f16 arithmetic rounded back after each op; s8 wrapped; f64 and s64 native.
    let p = program(
        "HloModule m
ENTRY main {
  a = f16[5] parameter(0)
  b = f16[5] parameter(1)
  i = s8[5] parameter(2)
  d = f64[5] parameter(3)
  l = s64[5] parameter(4)
  m = f16[5] multiply(a, b)
  s = f16[5] add(m, a)
  j = s8[5] multiply(i, i)
  e = f64[5] divide(d, d)
  q = s64[5] divide(l, l)
  ROOT t = (f16[5], s8[5], f64[5], s64[5]) tuple(s, j, e, q)
}",
    );
    assert_eq!(p.counts().1, 0, "everything runs on the device:\n{}", p.listing());
    let sources: Vec<&str> = p.kernels.iter().flatten().map(|k| k.source.as_str()).collect();
    expect_test::expect_file!["golden/cuda/carriers.cu"].assert_eq(&sources.join("\n"));
}

#[test]
fn the_listing_names_every_kernel_and_why_some_run_on_the_host() {
    // A sort stays on the host; the listing says so, in a comment of the unit.
    let p = program(
        "HloModule m
%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}
ENTRY main {
  x = f32[8] parameter(0)
  n = f32[8] negate(x)
  ROOT s = f32[8] sort(n), dimensions={0}, to_apply=%lt
}",
    );
    let listing = p.listing();
    assert!(listing.starts_with(cuda::cuda_c::PRELUDE), "{listing}");
    assert!(listing.contains("// ---- kernel 0 %"), "{listing}");
    assert!(listing.contains(": on the host: "), "{listing}");
    assert_eq!(p.counts(), (1, 1), "{listing}");
}

#[cfg(feature = "cuda")]
mod with_nvrtc {
    //! NVRTC and ptxas on every program of the corpora.

    use super::*;
    use hloscope_core::targets::cuda::nvrtc;
    use hloscope_core::targets::cuda::toolkit::{Toolkit, LIB_ENV, VENV_ENV};
    use std::path::Path;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    use std::time::Instant;

    /// The toolkit the tests compile with: as `$HLOSCOPE_CUDA_VENV` or
    /// `$HLOSCOPE_CUDA_LIB` say, else the workspace's `.venv-cuda` (what `cargo xtask
    /// test` installs), else the library path. Missing, the test fails saying how to
    /// install it: the compile checks are part of every test run.
    fn toolkit() -> Toolkit {
        let named = std::env::var_os(VENV_ENV).is_some() || std::env::var_os(LIB_ENV).is_some();
        let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv-cuda");
        let found = if !named && venv.is_dir() { Toolkit::in_venv(&venv) } else { Toolkit::locate() };
        found.unwrap_or_else(|e| panic!("{e} (`cargo xtask test` installs the wheels into .venv-cuda itself)"))
    }

    /// A program's kernels, by name: what one unit compiles at the least.
    struct Program {
        name: String,
        /// (entry, function source) per kernel on the device.
        kernels: Vec<(String, String)>,
    }

    /// The kernels of `programs` (one case's module as given and optimized) as one
    /// program, a scatter's copy of its operand included.
    fn program_of(name: &str, programs: &[cuda::CudaProgram]) -> Option<Program> {
        let kernels: Vec<(String, String)> = programs
            .iter()
            .flat_map(|p| p.kernels.iter().flatten())
            .flat_map(|k| k.copy_first.as_deref().into_iter().chain([k]))
            .map(|k| (k.entry.clone(), k.source.clone()))
            .collect();
        (!kernels.is_empty()).then(|| Program { name: name.to_string(), kernels })
    }

    /// The programs' kernels in one translation unit after the prelude: extern "C"
    /// names must differ within a unit, so kernel `j` of the unit is renamed `hs_u{j}`.
    fn unit(programs: &[&Program]) -> String {
        let mut source = String::from(cuda::cuda_c::PRELUDE);
        let mut j = 0;
        for p in programs {
            for (entry, text) in &p.kernels {
                source.push('\n');
                source += &text.replace(&format!(" {entry}("), &format!(" hs_u{j}("));
                j += 1;
            }
        }
        source
    }

    fn numbered(source: &str) -> String {
        source.lines().enumerate().map(|(i, l)| format!("{:5} {l}\n", i + 1)).collect()
    }

    /// Programs per translation unit: NVRTC's fixed cost per unit (the prelude's
    /// headers) is most of a small program's compile, so units hold several; a unit
    /// that fails is compiled again program by program, to name the failing ones.
    const PER_UNIT: usize = 16;

    /// NVRTC then ptxas on every program, in units of [`PER_UNIT`], on every core:
    /// (kernels compiled, units compiled, failures).
    fn compile_all(programs: &[Program]) -> (usize, usize, Vec<String>) {
        let tk = toolkit();
        let check = |source: &str| {
            nvrtc::compile_ptx(&tk, source, cuda::DEFAULT_ARCH)
                .and_then(|ptx| nvrtc::ptxas(&tk, &ptx, cuda::DEFAULT_ARCH))
                .map(|_| ())
        };
        let batches: Vec<&[Program]> = programs.chunks(PER_UNIT).collect();
        let next = AtomicUsize::new(0);
        let (compiled, units) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let failures = Mutex::new(Vec::new());
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(batch) = batches.get(i) else { break };
                    let all: Vec<&Program> = batch.iter().collect();
                    units.fetch_add(1, Ordering::Relaxed);
                    if check(&unit(&all)).is_ok() {
                        compiled.fetch_add(batch.iter().map(|p| p.kernels.len()).sum(), Ordering::Relaxed);
                        continue;
                    }
                    for p in batch.iter() {
                        let source = unit(&[p]);
                        match check(&source) {
                            Ok(()) => {
                                compiled.fetch_add(p.kernels.len(), Ordering::Relaxed);
                            }
                            Err(e) => failures.lock().unwrap().push(format!("{}: {e}\n{}", p.name, numbered(&source))),
                        }
                    }
                });
            }
        });
        (compiled.into_inner(), units.into_inner(), failures.into_inner().unwrap())
    }

    fn report(what: &str, programs: &[Program], started: Instant) {
        let started_compile = Instant::now();
        let (kernels, units, failures) = compile_all(programs);
        eprintln!(
            "{what}: {} programs in {units} units, {kernels} kernels compiled by NVRTC and ptxas (sm_{}), {} \
             programs failed; {:.1} s ({:.1} s compiling)",
            programs.len(),
            cuda::DEFAULT_ARCH,
            failures.len(),
            started.elapsed().as_secs_f64(),
            started_compile.elapsed().as_secs_f64()
        );
        assert!(
            failures.is_empty(),
            "{} of {} programs fail to compile:\n{}",
            failures.len(),
            programs.len(),
            failures[..failures.len().min(3)].join("\n\n")
        );
    }

    #[test]
    fn every_conformance_kernel_compiles_with_nvrtc_and_ptxas() {
        let started = Instant::now();
        let cases = corpus::collect_cases(&corpus::corpus_dir());
        let mut all = Vec::new();
        for case in &cases {
            let Ok(module) = hloscope_core::parse::mlir::parse(&case.text) else { continue };
            if hloscope_core::verify::verify(&module).is_err() {
                continue;
            }
            // As given (one kernel per instruction) and as the target compiles it.
            let programs: Vec<cuda::CudaProgram> = [Some(module.clone()), optimize(&module).ok()]
                .into_iter()
                .flatten()
                .filter_map(|m| cuda::compile(&m).ok())
                .collect();
            all.extend(program_of(&case.name, &programs));
        }
        let kernels: usize = all.iter().map(|p| p.kernels.len()).sum();
        assert!(kernels > 2000, "only {kernels} kernels were generated");
        report("conformance", &all, started);
    }

    #[test]
    fn every_jax_corpus_kernel_compiles_with_nvrtc_and_ptxas() {
        let started = Instant::now();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend/tests/corpus");
        let mut paths: Vec<_> = std::fs::read_dir(&dir).expect("the JAX corpus").map(|e| e.unwrap().path()).collect();
        paths.sort();
        assert!(paths.len() >= 20, "the JAX corpus is missing");
        let mut all = Vec::new();
        for p in &paths {
            let text = std::fs::read_to_string(p.join("module.mlir")).unwrap();
            let module = parse(&text);
            let programs: Vec<cuda::CudaProgram> = [module.clone(), optimize(&module).unwrap()]
                .iter()
                .map(|m| cuda::compile(m).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
                .collect();
            all.extend(program_of(&p.file_name().unwrap().to_string_lossy(), &programs));
        }
        let kernels: usize = all.iter().map(|p| p.kernels.len()).sum();
        assert!(kernels >= 100, "only {kernels} kernels");
        report("JAX corpus", &all, started);
    }

    #[test]
    fn the_golden_kernels_compile() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/cuda");
        let tk = toolkit();
        for name in ["fused_loop.cu", "row_sum_of_exp.cu", "carriers.cu"] {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            let source = format!("{}\n{text}", cuda::cuda_c::PRELUDE);
            let ptx = nvrtc::compile_ptx(&tk, &source, cuda::DEFAULT_ARCH).unwrap_or_else(|e| panic!("{name}: {e}"));
            nvrtc::ptxas(&tk, &ptx, cuda::DEFAULT_ARCH).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn nvrtc_messages_come_back_whole() {
        let tk = toolkit();
        let e = nvrtc::compile_ptx(&tk, "extern \"C\" __global__ void k() { undeclared = 1; }", 90).unwrap_err();
        assert!(e.starts_with("NVRTC refused the program:") && e.contains("undeclared"), "{e}");
        let e = nvrtc::ptxas(&tk, ".version 8.0\n.target sm_90\nnot ptx", 90).unwrap_err();
        assert!(e.starts_with("ptxas refused the PTX:"), "{e}");
    }
}

#[test]
fn an_output_in_place_of_an_input_of_another_type_stores_behind_a_compiler_barrier() {
    // Unfused, `u` (s32) takes over `t`'s bytes (f32, dying there): the load of `t` must
    // stay before the store of `u`, which differ in type, so the store is fenced.
    let m = parse(
        "HloModule m
ENTRY main {
  p = f32[64] parameter(0)
  t = f32[64] exponential(p)
  u = s32[64] convert(t)
  ROOT v = s32[64] add(u, u)
}",
    );
    let p = cuda::compile(&m).unwrap();
    let fenced: Vec<&str> =
        p.kernels.iter().flatten().filter(|k| k.source.contains("asm volatile")).map(|k| k.source.as_str()).collect();
    assert_eq!(fenced.len(), 1, "{}", p.listing());
    assert!(fenced[0].contains("__float2int_rz"), "{}", fenced[0]);
}

#[test]
fn every_semantic_case_is_emitted_for_the_device() {
    // CUDA computes every element type, so no case falls back to the host (WebGPU
    // refuses the 64-bit ones and a few narrow ops).
    for c in hloscope_core::kernel::semantics::cases() {
        let p = cuda::compile(&parse(&c.hlo)).unwrap();
        assert_eq!(p.counts(), (1, 0), "{}:\n{}", c.name, p.listing());
    }
}
