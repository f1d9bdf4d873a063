//! The WebGPU target: every shader it generates for the conformance and JAX corpora
//! parses and validates with naga (no GPU needed); golden WGSL for two kernels; and,
//! with feature `webgpu` and an adapter (lavapipe in CI), the semantic cases and the JAX
//! corpus run on the device against the interpreter, and timed runs time every kernel.

use hloscope_core::ir::Module;
use hloscope_core::targets::{optimize, webgpu};
use std::path::Path;

use crate::corpus;

/// naga's verdict on one shader (WGSL front end, then the full validator).
fn validate(source: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

/// Compiles `module` for WebGPU and validates each shader: the number of shaders.
fn shaders_validate(name: &str, module: &Module) -> Result<usize, String> {
    shaders_validate_with(name, module, webgpu::wgsl::Options::default())
}

/// [`shaders_validate`] with the emitter's `options`; a scatter's copy and claims, and
/// control flow's programs, count too.
fn shaders_validate_with(name: &str, module: &Module, options: webgpu::wgsl::Options) -> Result<usize, String> {
    let Ok(program) = webgpu::compile_with(module, options) else { return Ok(0) };
    let shaders = program.all_shaders();
    for s in &shaders {
        validate(&s.source).map_err(|e| format!("{name}: {e}\n{}", s.source))?;
    }
    Ok(shaders.len())
}

fn jax_corpus() -> Vec<(String, Module)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend/tests/corpus");
    let mut programs: Vec<_> = std::fs::read_dir(&dir).expect("the JAX corpus").map(|e| e.unwrap().path()).collect();
    programs.sort();
    assert!(programs.len() >= 20, "the JAX corpus is missing");
    programs
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p.join("module.mlir")).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, hloscope_core::parse::parse_module(&text).unwrap())
        })
        .collect()
}

#[test]
fn every_conformance_shader_validates_with_naga() {
    let cases = corpus::collect_cases(&corpus::corpus_dir());
    let (mut shaders, mut failures) = (0, Vec::new());
    for case in &cases {
        let Ok(module) = hloscope_core::parse::mlir::parse(&case.text) else { continue };
        if hloscope_core::verify::verify(&module).is_err() {
            continue;
        }
        for m in [Some(module.clone()), optimize(&module).ok()].into_iter().flatten() {
            match shaders_validate(&case.name, &m) {
                Ok(n) => shaders += n,
                Err(e) => failures.push(e),
            }
        }
    }
    println!("{shaders} conformance shaders validate");
    assert!(
        failures.is_empty(),
        "{} shaders do not validate:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n\n")
    );
    assert!(shaders > 1500, "only {shaders} shaders were generated");
}

#[test]
fn every_jax_corpus_shader_validates_with_naga() {
    let mut shaders = 0;
    for (name, module) in jax_corpus() {
        for m in [module.clone(), optimize(&module).unwrap()] {
            shaders += shaders_validate(&name, &m).unwrap_or_else(|e| panic!("{e}"));
            shaders += shaders_validate_with(&name, &m, STAGING).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    assert!(shaders >= 200, "only {shaders} shaders");
}

#[test]
fn a_fused_loop_kernel_as_wgsl() {
    let m = hloscope_core::parse::parse_module(
        "HloModule m
ENTRY main {
  x = f32[2,3] parameter(0)
  b = f32[3] parameter(1)
  bb = f32[2,3] broadcast(b), dimensions={1}
  s = f32[2,3] add(x, bb)
  ROOT t = f32[2,3] maximum(s, x)
}",
    )
    .unwrap();
    let program = webgpu::compile(&optimize(&m).unwrap()).unwrap();
    assert_eq!(program.counts(), (1, 0));
    let source = &program.shaders[0].as_ref().unwrap().source;
    validate(source).unwrap();
    expect_test::expect![[r#"
        // %fusion.3 (loop): 6 invocations
        // fuses %param_1.2, %param_0.1, %s, %t
        @group(0) @binding(0) var<storage, read_write> arena: array<u32>;

        fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
        fn f32_bits(b: u32) -> f32 { return bitcast<f32>(b); }
        fn total_key(x: f32) -> i32 { let k = bitcast<i32>(x); return select(k, k ^ 0x7fffffff, k < 0); }

        @compute @workgroup_size(64)
        fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
          for (var t: u32 = gid.x; t < 6u; t += groups.x * 64u) {
            let v1 = i32(t % 3u);
            let q1 = t / 3u;
            let v0 = i32(q1);
    "#]]
    .assert_eq(&source[..source.find("    let e0").unwrap()]);
    // The lines that bind a value name the HLO instruction it implements; no others do.
    let sh = program.shaders[0].as_ref().unwrap();
    assert_eq!(sh.line_hlo.len(), source.lines().count());
    let linked: Vec<(&str, &str)> =
        source.lines().zip(&sh.line_hlo).filter(|(_, h)| !h.is_empty()).map(|(l, h)| (l.trim(), h.as_str())).collect();
    assert!(linked.iter().all(|(l, _)| l.starts_with("let e")), "{linked:?}");
    for inst in ["s", "t"] {
        assert!(linked.iter().any(|(_, h)| *h == inst), "no line implements %{inst}: {linked:?}");
    }
    assert_eq!(sh.runs(), "6 invocations, workgroups of 64");
    assert_eq!(sh.mapping, webgpu::wgsl::Mapping::Elements);
}

/// A hand-written output fusion (as XLA dumps them) whose epilogue also reads the dot's
/// result transposed: the dot cannot be summed in the epilogue's kernel, so it is its
/// own kernel and the epilogue reads its result from memory.
const DOT_READ_TRANSPOSED: &str = "HloModule m
%fused (p0: f32[40,24], p1: f32[24,40]) -> f32[40,40] {
  %p0 = f32[40,24] parameter(0)
  %p1 = f32[24,40] parameter(1)
  %d = f32[40,40] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t = f32[40,40] transpose(%d), dimensions={1,0}
  ROOT %a = f32[40,40] add(%d, %t)
}
ENTRY %main (x: f32[40,24], y: f32[24,40]) -> f32[40,40] {
  %x = f32[40,24] parameter(0)
  %y = f32[24,40] parameter(1)
  ROOT %f = f32[40,40] fusion(%x, %y), kind=kOutput, calls=%fused
}";

/// Dots the WebGPU target computes in register tiles: a batched one whose sides are no
/// multiple of the tile (66 x 50, contracting 37) with a bias and relu after it, and one
/// against a transposed weight (`x @ w.T`, both operands contiguous along the
/// contraction), with a tanh-GELU-like epilogue.
const TILED_DOTS: &str = "HloModule m
ENTRY %main (x: f32[3,66,37], w: f32[3,37,50], b: f32[50], y: f32[130,40], v: f32[72,40]) -> (f32[3,66,50], f32[130,72]) {
  %x = f32[3,66,37] parameter(0)
  %w = f32[3,37,50] parameter(1)
  %b = f32[50] parameter(2)
  %d = f32[3,66,50] dot(%x, %w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %bb = f32[3,66,50] broadcast(%b), dimensions={2}
  %s = f32[3,66,50] add(%d, %bb)
  %z = f32[] constant(0)
  %zb = f32[3,66,50] broadcast(%z), dimensions={}
  %r = f32[3,66,50] maximum(%s, %zb)
  %y = f32[130,40] parameter(3)
  %v = f32[72,40] parameter(4)
  %e = f32[130,72] dot(%y, %v), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %t = f32[130,72] tanh(%e)
  %g = f32[130,72] multiply(%e, %t)
  ROOT %o = (f32[3,66,50], f32[130,72]) tuple(%r, %g)
}";

/// A dot whose contraction is shorter than a slice of workgroup blocks (8 steps): its
/// invocations take register tiles on their own.
const SHORT_DOT: &str = "HloModule m
ENTRY %main (y: f32[130,8], v: f32[72,8]) -> f32[130,72] {
  %y = f32[130,8] parameter(0)
  %v = f32[72,8] parameter(1)
  %e = f32[130,72] dot(%y, %v), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT %t = f32[130,72] tanh(%e)
}";

#[test]
fn dots_run_in_workgroup_blocks_or_register_tiles() {
    use webgpu::wgsl::Mapping;
    let module = hloscope_core::parse::parse_module(TILED_DOTS).unwrap();
    // Without staging: register tiles, one invocation per 4x4 block: 3 x 17 x 13 blocks
    // of the batched dot, 33 x 18 of the other.
    let plain = webgpu::compile(&optimize(&module).unwrap()).unwrap();
    let mut invocations: Vec<(Mapping, u64)> =
        plain.shaders.iter().flatten().map(|s| (s.mapping, s.invocations)).collect();
    invocations.sort_by_key(|&(_, n)| n);
    assert_eq!(invocations, vec![(Mapping::DotTiles, 594), (Mapping::DotTiles, 663)], "{}", plain.listing());
    let program = webgpu::compile_with(&optimize(&module).unwrap(), STAGING).unwrap();
    let blocked: Vec<_> = program.shaders.iter().flatten().filter(|s| s.mapping == Mapping::DotBlocks).collect();
    assert_eq!(blocked.len(), 2, "both dots run in workgroup blocks:\n{}", program.listing());
    // Each epilogue runs in its dot's kernel, after the sum: the dots' results are never
    // written to memory.
    assert_eq!(program.plan.kernels.len(), 2, "{}", program.listing());
    for epilogue in ["%t, %g", "%s, %z, %r"] {
        assert!(blocked.iter().any(|s| s.source.lines().nth(1).unwrap().ends_with(epilogue)), "{}", program.listing());
    }
    // One workgroup per 32x32 block: 3 x 3 x 2 blocks of the batched dot, 5 x 3 of the
    // other.
    let mut workgroups: Vec<u32> = blocked.iter().map(|s| s.workgroups()).collect();
    workgroups.sort();
    assert_eq!(workgroups, vec![15, 18]);
    for s in &blocked {
        validate(&s.source).unwrap_or_else(|e| panic!("{e}\n{}", s.source));
        // Each factor is read from memory once per slice, into workgroup memory; the
        // register tiles read it from there.
        let slice = s.source.find("for (var kt").unwrap();
        let staging = &s.source[slice..slice + s.source[slice..].find("workgroupBarrier").unwrap()];
        assert_eq!(staging.matches("arena[").count(), 2, "{}", s.source);
        assert_eq!(s.source.matches("workgroupBarrier()").count(), 2, "{}", s.source);
    }
    // A short contraction: register tiles, one invocation per 4x4 block (33 x 18).
    let short = optimize(&hloscope_core::parse::parse_module(SHORT_DOT).unwrap()).unwrap();
    let program = webgpu::compile_with(&short, STAGING).unwrap();
    let s = program.shaders[0].as_ref().unwrap();
    assert_eq!((s.mapping, s.invocations), (Mapping::DotTiles, 594), "{}", program.listing());
    validate(&s.source).unwrap_or_else(|e| panic!("{e}\n{}", s.source));
    // Each factor is loaded once per row or column of the block at each step.
    let steps = s.source.find("++) {").unwrap();
    let contraction = &s.source[steps..steps + s.source[steps..].find("if (v").unwrap()];
    assert_eq!(contraction.matches("arena[").count(), 8, "{}", s.source);
    let module = hloscope_core::parse::parse_module(DOT_READ_TRANSPOSED).unwrap();
    let program = webgpu::compile(&module).unwrap();
    assert_eq!(program.plan.kernels.len(), 2, "the dot is its own kernel:\n{}", program.listing());
    // Small dots keep one invocation (or workgroup) per output.
    let small = TILED_DOTS.replace("130", "13").replace("3,66", "3,6");
    let program = webgpu::compile(&optimize(&hloscope_core::parse::parse_module(&small).unwrap()).unwrap()).unwrap();
    assert!(
        program.shaders.iter().flatten().all(|s| !matches!(s.mapping, Mapping::DotTiles | Mapping::DotBlocks)),
        "{}",
        program.listing()
    );
}

/// Transposes fused with elementwise work: a batched f32 one whose sides are no
/// multiple of the tile (70 x 45), mixed with an operand read in order; an s8 one
/// converted to s32 (narrow loads out of their words); and one too small for tiles.
const TRANSPOSES: &str = "HloModule m
ENTRY %main (x: f32[3,70,45], y: f32[3,45,70], b: s8[130,100], c: f32[8,8]) -> (f32[3,45,70], s32[100,130], f32[8,8]) {
  %x = f32[3,70,45] parameter(0)
  %y = f32[3,45,70] parameter(1)
  %t = f32[3,45,70] transpose(%x), dimensions={0,2,1}
  %m = f32[3,45,70] multiply(%t, %y)
  %s = f32[3,45,70] add(%m, %t)
  %b = s8[130,100] parameter(2)
  %bt = s8[100,130] transpose(%b), dimensions={1,0}
  %bc = s32[100,130] convert(%bt)
  %c = f32[8,8] parameter(3)
  %ct = f32[8,8] transpose(%c), dimensions={1,0}
  ROOT %o = (f32[3,45,70], s32[100,130], f32[8,8]) tuple(%s, %bc, %ct)
}";

/// The emitter's options with workgroup staging (dot blocks, transpose tiles): a GPU's
/// choice, off by default (see `wgsl::Options`).
const STAGING: webgpu::wgsl::Options = webgpu::wgsl::Options { workgroup_staging: true };

#[test]
fn transposes_go_through_workgroup_tiles() {
    use webgpu::wgsl::Mapping;
    let module = hloscope_core::parse::parse_module(TRANSPOSES).unwrap();
    let plain = webgpu::compile(&optimize(&module).unwrap()).unwrap();
    assert!(plain.shaders.iter().flatten().all(|s| s.mapping == Mapping::Elements), "{}", plain.listing());
    let program = webgpu::compile_with(&optimize(&module).unwrap(), STAGING).unwrap();
    let tiled: Vec<_> = program.shaders.iter().flatten().filter(|s| s.mapping == Mapping::TransposeTiles).collect();
    assert_eq!(tiled.len(), 2, "both large transposes are tiled:\n{}", program.listing());
    // One workgroup per 32x32 tile: 3 x 2 x 3 tiles of the batched one, 4 x 5 of the other.
    let mut workgroups: Vec<u32> = tiled.iter().map(|s| s.workgroups()).collect();
    workgroups.sort();
    assert_eq!(workgroups, vec![18, 20], "{}", program.listing());
    for s in &tiled {
        validate(&s.source).unwrap_or_else(|e| panic!("{e}\n{}", s.source));
        // The transposed operand is read once, into the tile; the other operand of the
        // batched one is read where its element is computed.
        assert_eq!(s.source.matches("var<workgroup> tile").count(), 1, "{}", s.source);
        assert_eq!(s.source.matches("workgroupBarrier()").count(), 2, "{}", s.source);
    }
    assert!(program.shaders.iter().flatten().any(|s| s.mapping == Mapping::Elements), "{}", program.listing());
}

/// Column reductions (the innermost dimension kept) with few outputs: a float sum with
/// an init and a max of one operand (one kernel or two), an integer sum, and a
/// batched mean whose columns are no multiple of the workgroup's run.
const COLUMN_REDUCTIONS: &str = "HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%iadd (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] maximum(%a, %b)
}
ENTRY %main (x: f32[1000,70], i: s32[500,33], y: f32[4,300,40]) -> (f32[70], f32[70], s32[33], f32[4,40]) {
  %x = f32[1000,70] parameter(0)
  %sq = f32[1000,70] multiply(%x, %x)
  %init = f32[] constant(1.5)
  %s = f32[70] reduce(%sq, %init), dimensions={0}, to_apply=%add
  %l = f32[] constant(-inf)
  %m = f32[70] reduce(%x, %l), dimensions={0}, to_apply=%max
  %i = s32[500,33] parameter(1)
  %big = s32[500,33] multiply(%i, %i)
  %k = s32[] constant(2147483000)
  %n = s32[33] reduce(%big, %k), dimensions={0}, to_apply=%iadd
  %y = f32[4,300,40] parameter(2)
  %z = f32[] constant(0)
  %ys = f32[4,40] reduce(%y, %z), dimensions={1}, to_apply=%add
  %c = f32[] constant(300)
  %cb = f32[4,40] broadcast(%c), dimensions={}
  %mean = f32[4,40] divide(%ys, %cb)
  ROOT %t = (f32[70], f32[70], s32[33], f32[4,40]) tuple(%s, %m, %n, %mean)
}";

#[test]
fn column_reductions_split_their_rows_across_a_workgroup() {
    use webgpu::wgsl::Mapping;
    let module = hloscope_core::parse::parse_module(COLUMN_REDUCTIONS).unwrap();
    let program = webgpu::compile(&optimize(&module).unwrap()).unwrap();
    let tiled: Vec<_> = program.shaders.iter().flatten().filter(|s| s.mapping == Mapping::ColumnTiles).collect();
    assert_eq!(tiled.len(), program.plan.kernels.len(), "every reduction is column-tiled:\n{}", program.listing());
    for s in &tiled {
        validate(&s.source).unwrap_or_else(|e| panic!("{e}\n{}", s.source));
        // Each invocation strides over every fourth row of its column.
        assert!(s.source.contains("for (var r: i32 = ly; r < "), "{}", s.source);
    }
    // 70 columns in runs of 16: 5 workgroups; 33 columns: 3; 4 x 40: 4 x 3.
    let mut workgroups: Vec<u32> = tiled.iter().map(|s| s.workgroups()).collect();
    workgroups.sort();
    assert!(workgroups == vec![3, 5, 12] || workgroups == vec![3, 5, 5, 12], "{workgroups:?}");
    // With many outputs one invocation per column fills the device: no tiles.
    let wide = "HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[200,70000]) -> f32[70000] {
  %x = f32[200,70000] parameter(0)
  %z = f32[] constant(0)
  ROOT %s = f32[70000] reduce(%x, %z), dimensions={0}, to_apply=%add
}";
    let program = webgpu::compile(&hloscope_core::parse::parse_module(wide).unwrap()).unwrap();
    assert_eq!(program.shaders[0].as_ref().unwrap().mapping, Mapping::Elements, "{}", program.listing());
}

/// HLO lines defining `%rows`, s32[300,1]: row `i` of an update goes to row `(7i mod 60)
/// - 5`, so rows `i` and `i + 60` repeat an index, and some fall outside a 50-row operand
/// on both sides (also `%seven`, `%sixty` and `%five`, the scalars it is made of).
macro_rules! repeating_rows {
    () => {
        "  %io = s32[300,1] iota(), iota_dimension=0
  %seven = s32[] constant(7)
  %sb = s32[300,1] broadcast(%seven), dimensions={}
  %m = s32[300,1] multiply(%io, %sb)
  %sixty = s32[] constant(60)
  %b60 = s32[300,1] broadcast(%sixty), dimensions={}
  %r = s32[300,1] remainder(%m, %b60)
  %five = s32[] constant(5)
  %b5 = s32[300,1] broadcast(%five), dimensions={}
  %rows = s32[300,1] subtract(%r, %b5)
"
    };
}

/// Scatters the WebGPU target runs on the device: an embedding-gradient-like f32
/// scatter-add of rows (a window of 16) whose indices repeat and fall outside the
/// operand on both sides; an s32 scatter-add of single elements through a 2-vector
/// index, also out of bounds in places; an f32 scatter-max; one that replaces with
/// indices promised unique (a plain store: one update per element); one that replaces
/// without the promise (the last update of each element wins: claims, then stores); and
/// one that multiplies, which stays on the host (its rounding depends on the order).
const SCATTERS: &str = concat!(
    "HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%iadd (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] maximum(%b, %a)
}
%second (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  ROOT %b = f32[] parameter(1)
}
%mul (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] multiply(%a, %b)
}
ENTRY %main (e: f32[50,16], g: f32[300,16], c: s32[20,30], w: s32[700]) -> (f32[50,16], s32[20,30], f32[50,16], f32[50,16], f32[50,16], f32[50,16]) {
  %e = f32[50,16] parameter(0)
  %g = f32[300,16] parameter(1)
",
    repeating_rows!(),
    "  %sa = f32[50,16] scatter(%e, %rows, %g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
  %c = s32[20,30] parameter(2)
  %w = s32[700] parameter(3)
  %i2 = s32[700,2] iota(), iota_dimension=0
  %p = s32[700,2] broadcast(%seven), dimensions={}
  %q = s32[700,2] multiply(%i2, %p)
  %j = s32[700,2] iota(), iota_dimension=1
  %thirteen = s32[] constant(13)
  %b13 = s32[700,2] broadcast(%thirteen), dimensions={}
  %jq = s32[700,2] multiply(%j, %b13)
  %qq = s32[700,2] add(%q, %jq)
  %b33 = s32[700,2] broadcast(%sixty), dimensions={}
  %ix = s32[700,2] remainder(%qq, %b33)
  %b2 = s32[700,2] broadcast(%five), dimensions={}
  %ix2 = s32[700,2] subtract(%ix, %b2)
  %si = s32[20,30] scatter(%c, %ix2, %w), update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=%iadd
  %sm = f32[50,16] scatter(%e, %rows, %g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%max
  %sr = f32[50,16] scatter(%e, %rows, %g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%second
  %g40 = f32[40,16] slice(%g), slice={[0:40], [0:16]}
  %u40 = s32[40,1] iota(), iota_dimension=0
  %su = f32[50,16] scatter(%e, %u40, %g40), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=%second
  %sp = f32[50,16] scatter(%e, %rows, %g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%mul
  ROOT %t = (f32[50,16], s32[20,30], f32[50,16], f32[50,16], f32[50,16], f32[50,16]) tuple(%sa, %si, %sm, %sr, %su, %sp)
}"
);

#[test]
fn scatters_that_commute_or_replace_run_on_the_device() {
    let module = hloscope_core::parse::parse_module(SCATTERS).unwrap();
    let program = webgpu::compile(&optimize(&module).unwrap()).unwrap();
    let scatters: Vec<_> = program.plan.kernels.iter().enumerate().filter(|(_, k)| k.name.starts_with('s')).collect();
    let mut on_device: Vec<&str> =
        scatters.iter().filter(|(i, _)| program.shaders[*i].is_some()).map(|(_, k)| k.name.as_str()).collect();
    on_device.sort();
    assert_eq!(on_device, ["sa", "si", "sm", "sr", "su"], "{}", program.listing());
    for sh in program.shaders.iter().flatten().flat_map(|sh| sh.passes()) {
        validate(&sh.source).unwrap_or_else(|e| panic!("{e}\n{}", sh.source));
    }
    let listing = program.listing();
    // The integer sum adds atomically; the float ones go around a compare-exchange; the
    // unique one stores.
    assert_eq!(listing.matches("atomicAdd(&arena[").count(), 1, "{listing}");
    assert_eq!(listing.matches("atomicCompareExchangeWeak(p, ").count(), 2, "{listing}");
    let unique = program.plan.kernels.iter().position(|k| k.name == "su").unwrap();
    let unique = &program.shaders[unique].as_ref().unwrap().source;
    assert!(unique.contains("atomicStore(&arena[") && !unique.contains("atomicCompare"), "{unique}");
    // The replacing one: its operand's copy, its claims, its winners' stores, the last
    // two sharing one scratch word per element of the output.
    let replacing = program.plan.kernels.iter().position(|k| k.name == "sr").unwrap();
    let replacing = program.shaders[replacing].as_ref().unwrap();
    let passes: Vec<_> =
        replacing.passes().map(|p| (p.scratch_words, p.source.contains("atomicMax(&claims["))).collect();
    assert_eq!(passes, [(0, false), (800, true), (800, false)], "{listing}");
    assert!(replacing.source.contains("if (atomicLoad(&claims[u32("), "{}", replacing.source);
    assert!(listing.contains("%sp: on the host: opaque (interpreted: the update computation is not add"), "{listing}");
}

/// Scatters of 8- and 16-bit elements, which share their words with their neighbours'
/// (the rows hold 16, so neighbouring invocations update one word): a u8 sum, an s16
/// max and an s8 product over rows whose indices repeat (wrapping, exact in any
/// order), a bf16 sum over distinct rows (one rounding per element, exact), and an f16
/// scatter that replaces over repeating rows (the last update wins).
const NARROW_SCATTERS: &str = concat!(
    "HloModule m
%addu8 (a: u8[], b: u8[]) -> u8[] {
  %a = u8[] parameter(0)
  %b = u8[] parameter(1)
  ROOT %s = u8[] add(%a, %b)
}
%maxs16 (a: s16[], b: s16[]) -> s16[] {
  %a = s16[] parameter(0)
  %b = s16[] parameter(1)
  ROOT %s = s16[] maximum(%a, %b)
}
%muls8 (a: s8[], b: s8[]) -> s8[] {
  %a = s8[] parameter(0)
  %b = s8[] parameter(1)
  ROOT %s = s8[] multiply(%b, %a)
}
%addbf16 (a: bf16[], b: bf16[]) -> bf16[] {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  ROOT %s = bf16[] add(%a, %b)
}
%second (a: f16[], b: f16[]) -> f16[] {
  %a = f16[] parameter(0)
  ROOT %b = f16[] parameter(1)
}
ENTRY %main (a: u8[50,16], ga: u8[300,16], b: s16[50,16], gb: s16[300,16], c: s8[50,16], gc: s8[300,16], d: bf16[50,16], gd: bf16[40,16], f: f16[50,16], gf: f16[300,16]) -> (u8[50,16], s16[50,16], s8[50,16], bf16[50,16], f16[50,16]) {
  %a = u8[50,16] parameter(0)
  %ga = u8[300,16] parameter(1)
  %b = s16[50,16] parameter(2)
  %gb = s16[300,16] parameter(3)
  %c = s8[50,16] parameter(4)
  %gc = s8[300,16] parameter(5)
  %d = bf16[50,16] parameter(6)
  %gd = bf16[40,16] parameter(7)
  %f = f16[50,16] parameter(8)
  %gf = f16[300,16] parameter(9)
",
    repeating_rows!(),
    "  %u40 = s32[40,1] iota(), iota_dimension=0
  %sa = u8[50,16] scatter(%a, %rows, %ga), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%addu8
  %sm = s16[50,16] scatter(%b, %rows, %gb), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%maxs16
  %sp = s8[50,16] scatter(%c, %rows, %gc), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%muls8
  %sd = bf16[50,16] scatter(%d, %u40, %gd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%addbf16
  %sr = f16[50,16] scatter(%f, %rows, %gf), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%second
  ROOT %t = (u8[50,16], s16[50,16], s8[50,16], bf16[50,16], f16[50,16]) tuple(%sa, %sm, %sp, %sd, %sr)
}"
);

/// Control flow the host drives: a while loop (HLO's variadic form) whose body halves a
/// vector and adds one, five times, and a conditional on a pred whose branches negate or
/// double the loop's result; each computation has kernels of its own.
const CONTROL_FLOW: &str = "HloModule m
%cond (i: s32[], x: f32[1024]) -> pred[] {
  %i = s32[] parameter(0)
  %x = f32[1024] parameter(1)
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (i: s32[], x: f32[1024]) -> (s32[], f32[1024]) {
  %i = s32[] parameter(0)
  %x = f32[1024] parameter(1)
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %h = f32[] constant(0.5)
  %hb = f32[1024] broadcast(%h), dimensions={}
  %y = f32[1024] multiply(%x, %hb)
  %u = f32[] constant(1)
  %ub = f32[1024] broadcast(%u), dimensions={}
  %z = f32[1024] add(%y, %ub)
  ROOT %r = (s32[], f32[1024]) tuple(%j, %z)
}
%neg (x: f32[1024]) -> f32[1024] {
  %x = f32[1024] parameter(0)
  ROOT %n = f32[1024] negate(%x)
}
%dbl (x: f32[1024]) -> f32[1024] {
  %x = f32[1024] parameter(0)
  ROOT %d = f32[1024] add(%x, %x)
}
ENTRY %main (x: f32[1024], p: pred[]) -> (s32[], f32[1024], f32[1024]) {
  %x = f32[1024] parameter(0)
  %p = pred[] parameter(1)
  %zero = s32[] constant(0)
  %w = (s32[], f32[1024]) while(%zero, %x), condition=%cond, body=%body
  %n = s32[] get-tuple-element(%w), index=0
  %wx = f32[1024] get-tuple-element(%w), index=1
  %c = f32[1024] conditional(%p, %wx, %x), true_computation=%neg, false_computation=%dbl
  ROOT %t = (s32[], f32[1024], f32[1024]) tuple(%n, %wx, %c)
}";

#[cfg(feature = "webgpu")]
mod on_a_device {
    use super::*;
    use hloscope_approx::ulps;
    use hloscope_core::interp::Interpreter;
    use hloscope_core::ir::{ElementType, Literal, Value};
    use hloscope_core::kernel::semantics::{cases, same_result};
    use hloscope_core::targets::webgpu::runtime::{TimingMethod, WebGpuExecutable};

    fn device_run(module: &Module, args: &[Value]) -> (Value, webgpu::WebGpuProgram) {
        device_run_with(module, args, webgpu::wgsl::Options::default())
    }

    fn device_run_with(
        module: &Module,
        args: &[Value],
        options: webgpu::wgsl::Options,
    ) -> (Value, webgpu::WebGpuProgram) {
        let program = webgpu::compile_with(module, options).unwrap();
        let exe = WebGpuExecutable::new(module, program.clone()).unwrap_or_else(|e| panic!("{e}"));
        (exe.run(args).unwrap_or_else(|e| panic!("{e}")).0, program)
    }

    #[test]
    fn the_semantic_cases_hold_on_the_device() {
        let (mut on_gpu, mut failures) = (0, Vec::new());
        for c in cases().iter().flat_map(|c| [c.clone(), c.repeated(70)]) {
            let module = hloscope_core::parse::parse_module(&c.hlo).unwrap();
            let args: Vec<Value> = c.inputs.iter().cloned().map(Value::Array).collect();
            let (got, program) = device_run(&module, &args);
            if program.counts().0 == 1 {
                on_gpu += 1;
            }
            match got {
                Value::Array(l) if same_result(&l, &c.want) => {}
                other => failures.push(format!("{}: got {other:?}, want {:?}\n{}", c.name, c.want, program.listing())),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n\n"));
        assert!(on_gpu >= 40, "only {on_gpu} cases ran on the device");
    }

    #[test]
    fn reductions_shared_by_a_workgroup_match_the_interpreter() {
        // Long rows and whole-array reductions run one workgroup per output, its
        // invocations striding over the row and tree-reducing in workgroup memory: a
        // float sum within rounding of the interpreter's order, an integer sum exact
        // (wrapping), a max exact and NaN when a NaN is in the row.
        let hlo = "HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%iadd (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] maximum(%a, %b)
}
ENTRY %main (x: f32[3,1000], i: s32[5000]) -> (f32[3], f32[], s32[], f32[3]) {
  %x = f32[3,1000] parameter(0)
  %i = s32[5000] parameter(1)
  %z = f32[] constant(1.5)
  %e = f32[3,1000] exponential(%x)
  %r = f32[3] reduce(%e, %z), dimensions={1}, to_apply=%add
  %l = f32[] constant(-inf)
  %m = f32[] reduce(%x, %l), dimensions={0,1}, to_apply=%max
  %k = s32[] constant(2147483000)
  %big = s32[5000] multiply(%i, %i)
  %n = s32[] reduce(%big, %k), dimensions={0}, to_apply=%iadd
  %lg = f32[3,1000] log(%x)
  %ml = f32[3] reduce(%lg, %l), dimensions={1}, to_apply=%max
  ROOT %t = (f32[3], f32[], s32[], f32[3]) tuple(%r, %m, %n, %ml)
}";
        let module = hloscope_core::parse::parse_module(hlo).unwrap();
        let optimized = optimize(&module).unwrap();
        let program = webgpu::compile(&optimized).unwrap();
        let cooperative = program.shaders.iter().flatten().filter(|s| s.source.contains("workgroupBarrier")).count();
        // The two row reductions of `x` fuse into one kernel.
        assert_eq!(cooperative, 3, "every reduction kernel shares a workgroup:\n{}", program.listing());
        // Rows 0 and 2 of `x` are in (0, 1): their log max is finite; row 1 holds a
        // negative number, whose log is NaN.
        let args = hloscope_core::interp::random_inputs(&module, 3);
        let mut args = args;
        if let Value::Array(x) = &mut args[0] {
            let v: Vec<f64> = x
                .to_f64_vec()
                .iter()
                .enumerate()
                .map(|(j, &v)| if j / 1000 == 1 { v } else { v.abs() + 0.01 })
                .collect();
            *x = Literal::from_f64s(x.shape.clone(), &v);
        }
        let want = Interpreter::new(&module).run(&args).unwrap().flatten();
        let (got, _) = device_run(&optimized, &args);
        let got = got.flatten();
        assert!(close(&got[0], &want[0], 1e-5), "row sums: {:?} vs {:?}", got[0], want[0]);
        // Exact, NaN matching NaN of either sign (log's NaN is the host's negative one).
        assert!(close(&got[1], &want[1], 0.0), "the whole-array max: {:?} vs {:?}", got[1], want[1]);
        assert_eq!(got[2].to_le_bytes(), want[2].to_le_bytes(), "the wrapping integer sum");
        assert!(close(&got[3], &want[3], 0.0), "the log row maxes: {:?} vs {:?}", got[3], want[3]);
        assert!(got[3].to_f64_vec()[1].is_nan() && got[3].to_f64_vec()[0].is_finite());
    }

    #[test]
    fn dots_in_blocks_and_register_tiles_match_the_interpreter() {
        // Each output sums its products in the contraction's order, as the interpreter
        // does: the relu'd batched dot bit for bit, the tanh epilogues within their
        // approximation; the blocks past the result's edges store nothing.
        let short = hloscope_core::parse::parse_module(SHORT_DOT).unwrap();
        let args = hloscope_core::interp::random_inputs(&short, 5);
        let want = Interpreter::new(&short).run(&args).unwrap().flatten();
        let (got, _) = device_run(&optimize(&short).unwrap(), &args);
        assert!(close(&got.flatten()[0], &want[0], 1e-5));
        let module = hloscope_core::parse::parse_module(TILED_DOTS).unwrap();
        let optimized = optimize(&module).unwrap();
        let transposed = hloscope_core::parse::parse_module(DOT_READ_TRANSPOSED).unwrap();
        let args = hloscope_core::interp::random_inputs(&transposed, 3);
        let want = Interpreter::new(&transposed).run(&args).unwrap().flatten();
        let (got, _) = device_run(&transposed, &args);
        let got = got.flatten();
        assert!(close(&got[0], &want[0], 1e-5), "{got:?} vs {want:?}");
        for (seed, options) in [(1, STAGING), (2, STAGING), (3, webgpu::wgsl::Options::default())] {
            let args = hloscope_core::interp::random_inputs(&module, seed);
            let want = Interpreter::new(&module).run(&args).unwrap().flatten();
            let (got, program) = device_run_with(&optimized, &args, options);
            assert_eq!(program.counts().1, 0, "everything runs on the device:\n{}", program.listing());
            let got = got.flatten();
            assert_eq!(got[0].to_le_bytes(), want[0].to_le_bytes(), "seed {seed}: the batched dot");
            assert!(close(&got[1], &want[1], 1e-5), "seed {seed}: {:?} vs {:?}", got[1], want[1]);
        }
    }

    #[test]
    fn transposes_through_workgroup_tiles_match_the_interpreter() {
        // Every element computed from the same loaded values as one invocation per
        // element computes it: exact, the tiles at the edges included.
        let module = hloscope_core::parse::parse_module(TRANSPOSES).unwrap();
        let optimized = optimize(&module).unwrap();
        for seed in [1, 2] {
            let args = hloscope_core::interp::random_inputs(&module, seed);
            let want = Interpreter::new(&module).run(&args).unwrap().flatten();
            let (got, program) = device_run_with(&optimized, &args, STAGING);
            assert_eq!(program.counts().1, 0, "everything runs on the device:\n{}", program.listing());
            for (g, w) in got.flatten().iter().zip(&want) {
                assert_eq!(g.to_le_bytes(), w.to_le_bytes(), "seed {seed}");
            }
        }
    }

    #[test]
    fn column_reductions_in_workgroups_match_the_interpreter() {
        // Float sums within rounding of the interpreter's order (the rows are split
        // across lanes), the max and the wrapping integer sum exact.
        let module = hloscope_core::parse::parse_module(COLUMN_REDUCTIONS).unwrap();
        let optimized = optimize(&module).unwrap();
        for seed in [1, 2] {
            let args = hloscope_core::interp::random_inputs(&module, seed);
            let want = Interpreter::new(&module).run(&args).unwrap().flatten();
            let (got, program) = device_run(&optimized, &args);
            assert_eq!(program.counts().1, 0, "everything runs on the device:\n{}", program.listing());
            let got = got.flatten();
            assert!(close(&got[0], &want[0], 1e-5), "seed {seed}: {:?} vs {:?}", got[0], want[0]);
            assert!(close(&got[1], &want[1], 0.0), "seed {seed}: {:?} vs {:?}", got[1], want[1]);
            assert_eq!(got[2].to_le_bytes(), want[2].to_le_bytes(), "seed {seed}: the wrapping sum");
            assert!(close(&got[3], &want[3], 1e-5), "seed {seed}: {:?} vs {:?}", got[3], want[3]);
        }
    }

    #[test]
    fn a_column_reduction_with_a_narrow_result_stores_every_column() {
        // 70 columns' max, rounded to bf16 in the epilogue: each column's lane 0 stores
        // its own element of a shared word (not only the workgroup's first invocation).
        let hlo = "HloModule m
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] maximum(%a, %b)
}
ENTRY %main (x: f32[1000,70]) -> bf16[70] {
  %x = f32[1000,70] parameter(0)
  %l = f32[] constant(-inf)
  %m = f32[70] reduce(%x, %l), dimensions={0}, to_apply=%max
  ROOT %b = bf16[70] convert(%m)
}";
        let module = hloscope_core::parse::parse_module(hlo).unwrap();
        let optimized = optimize(&module).unwrap();
        let args = hloscope_core::interp::random_inputs(&module, 5);
        let want = Interpreter::new(&module).run(&args).unwrap().flatten();
        let (got, program) = device_run(&optimized, &args);
        let mappings: Vec<_> = program.shaders.iter().flatten().map(|s| s.mapping).collect();
        assert_eq!(mappings, [webgpu::wgsl::Mapping::ColumnTiles], "{}", program.listing());
        assert_eq!(got.flatten()[0].to_le_bytes(), want[0].to_le_bytes());
    }

    #[test]
    fn scatters_on_the_device_match_the_interpreter() {
        // Updates that repeat an index land in some order: the integer sum and the max
        // exactly the interpreter's, the float sum within rounding of it, the replacing
        // one's last update wins as in order; those outside the operand are skipped,
        // element by element.
        let module = hloscope_core::parse::parse_module(SCATTERS).unwrap();
        let optimized = optimize(&module).unwrap();
        for seed in [1, 2] {
            let args = hloscope_core::interp::random_inputs(&module, seed);
            let want = Interpreter::new(&module).run(&args).unwrap().flatten();
            let (got, program) = device_run(&optimized, &args);
            assert_eq!(program.counts().1, 1, "only the multiplying scatter on the host:\n{}", program.listing());
            let got = got.flatten();
            assert!(close(&got[0], &want[0], 1e-5), "seed {seed}: {:?} vs {:?}", got[0], want[0]);
            assert_eq!(got[1].to_le_bytes(), want[1].to_le_bytes(), "seed {seed}: the integer sum");
            assert_eq!(got[2].to_le_bytes(), want[2].to_le_bytes(), "seed {seed}: the max");
            assert_eq!(got[3].to_le_bytes(), want[3].to_le_bytes(), "seed {seed}: the replacing one");
            assert_eq!(got[4].to_le_bytes(), want[4].to_le_bytes(), "seed {seed}: the unique one");
            assert_eq!(got[5].to_le_bytes(), want[5].to_le_bytes(), "seed {seed}: the multiplying one");
        }
    }

    #[test]
    fn control_flow_runs_its_computations_kernels_on_the_device() {
        let module = optimize(&hloscope_core::parse::parse_module(CONTROL_FLOW).unwrap()).unwrap();
        let program = webgpu::compile(&module).unwrap();
        let listing = program.listing();
        // Nothing interpreted: the loop's and the branches' kernels are shaders, the
        // control flow itself driven from the host.
        assert_eq!(program.counts().1, 0, "{listing}");
        assert_eq!(listing.matches(", driven from the host ----").count(), 2, "{listing}");
        assert!(listing.contains(".body.") && listing.contains(".branch1."), "{listing}");
        for sh in program.all_shaders() {
            validate(&sh.source).unwrap_or_else(|e| panic!("{e}\n{}", sh.source));
        }
        let exe = WebGpuExecutable::new(&module, program).unwrap_or_else(|e| panic!("{e}"));
        for (seed, p) in [(1, true), (2, false)] {
            let mut args = hloscope_core::interp::random_inputs(&module, seed);
            args[1] = Value::Array(Literal::scalar_from(ElementType::Pred, hloscope_core::ir::Scalar::Pred(p)));
            let want = Interpreter::new(&module).run(&args).unwrap().flatten();
            let (got, times) = exe.run_timed(&args, TimingMethod::SubmitAndWait).unwrap();
            let got = got.flatten();
            assert_eq!(got[0].to_le_bytes(), [5, 0, 0, 0], "five iterations");
            for k in 0..3 {
                assert_eq!(got[k].to_le_bytes(), want[k].to_le_bytes(), "seed {seed}, pred {p}: output {k}");
            }
            // The loop and the conditional are timed whole, as device work.
            let kernels = times.kernels.expect("a timed run").kernels;
            assert!(kernels.iter().all(|t| !t.on_host), "{kernels:?}");
        }
    }

    #[test]
    fn narrow_scatters_update_their_elements_inside_shared_words() {
        let module = hloscope_core::parse::parse_module(NARROW_SCATTERS).unwrap();
        let optimized = optimize(&module).unwrap();
        for seed in [1, 2] {
            let args = hloscope_core::interp::random_inputs(&module, seed);
            let want = Interpreter::new(&module).run(&args).unwrap().flatten();
            let (got, program) = device_run(&optimized, &args);
            assert_eq!(program.counts().1, 0, "every scatter on the device:\n{}", program.listing());
            for sh in program.shaders.iter().flatten().flat_map(|sh| sh.passes()) {
                validate(&sh.source).unwrap_or_else(|e| panic!("{e}\n{}", sh.source));
            }
            let got = got.flatten();
            for (k, what) in ["u8 sum", "s16 max", "s8 product", "bf16 sum", "f16 replacing"].iter().enumerate() {
                assert_eq!(got[k].to_le_bytes(), want[k].to_le_bytes(), "seed {seed}: the {what}");
            }
        }
    }

    #[test]
    fn narrow_bit_counts_see_only_their_own_bits() {
        // A narrow value's carrier extends it (signed ones with ones): the counts mask the
        // extension off. Every s8 and u16 pattern's popcount and leading zeros, exactly.
        let hlo = "HloModule m
ENTRY %main (a: s8[256], b: u16[65536]) -> (s8[256], s8[256], u16[65536], u16[65536]) {
  %a = s8[256] parameter(0)
  %b = u16[65536] parameter(1)
  %pa = s8[256] popcnt(%a)
  %ca = s8[256] count-leading-zeros(%a)
  %pb = u16[65536] popcnt(%b)
  %cb = u16[65536] count-leading-zeros(%b)
  ROOT %t = (s8[256], s8[256], u16[65536], u16[65536]) tuple(%pa, %ca, %pb, %cb)
}";
        let module = hloscope_core::parse::parse_module(hlo).unwrap();
        let a = Literal::from_f64s(
            hloscope_core::ir::Shape::new(ElementType::S8, vec![256]),
            &(0..256).map(|i| (i as u8 as i8) as f64).collect::<Vec<_>>(),
        );
        let b = Literal::from_f64s(
            hloscope_core::ir::Shape::new(ElementType::U16, vec![65536]),
            &(0..65536).map(|i| i as f64).collect::<Vec<_>>(),
        );
        let args = [Value::Array(a), Value::Array(b)];
        let want = Interpreter::new(&module).run(&args).unwrap().flatten();
        let (got, program) = device_run(&module, &args);
        assert_eq!(program.counts().1, 0, "everything runs on the device:\n{}", program.listing());
        for (g, w) in got.flatten().iter().zip(&want) {
            assert_eq!(g.to_le_bytes(), w.to_le_bytes());
        }
    }

    #[test]
    fn narrow_bitcasts_and_shifts_see_the_pattern_not_the_carrier() {
        // Every u16 pattern as bf16 (NaN payloads kept) and as s16, every u8 as s8; each
        // pattern shifted arithmetically (u16: its top bit is the sign) and logically
        // (s8: its sign bit shifted in as a plain bit) by counts 0 to 19, past the width.
        let hlo = "HloModule m
ENTRY %main (a: u16[65536], b: u8[256], n: u16[65536], m: s8[256]) -> (bf16[65536], s16[65536], s8[256], u16[65536], s8[256], u16[65536]) {
  %a = u16[65536] parameter(0)
  %b = u8[256] parameter(1)
  %n = u16[65536] parameter(2)
  %m = s8[256] parameter(3)
  %ab = bf16[65536] bitcast-convert(%a)
  %as = s16[65536] bitcast-convert(%a)
  %bs = s8[256] bitcast-convert(%b)
  %sra = u16[65536] shift-right-arithmetic(%a, %n)
  %srl = s8[256] shift-right-logical(%bs, %m)
  %back = u16[65536] bitcast-convert(%as)
  ROOT %t = (bf16[65536], s16[65536], s8[256], u16[65536], s8[256], u16[65536]) tuple(%ab, %as, %bs, %sra, %srl, %back)
}";
        let module = hloscope_core::parse::parse_module(hlo).unwrap();
        let lit = |elem, n: usize, f: &dyn Fn(usize) -> f64| {
            let values: Vec<f64> = (0..n).map(f).collect();
            Value::Array(Literal::from_f64s(hloscope_core::ir::Shape::new(elem, vec![n as i64]), &values))
        };
        let args = [
            lit(ElementType::U16, 65536, &|i| i as f64),
            lit(ElementType::U8, 256, &|i| i as f64),
            lit(ElementType::U16, 65536, &|i| (i % 20) as f64),
            lit(ElementType::S8, 256, &|i| (i % 11) as f64),
        ];
        let want = Interpreter::new(&module).run(&args).unwrap().flatten();
        let (got, program) = device_run(&module, &args);
        assert_eq!(program.counts().1, 0, "everything runs on the device:\n{}", program.listing());
        for sh in program.all_shaders() {
            validate(&sh.source).unwrap_or_else(|e| panic!("{e}\n{}", sh.source));
        }
        let what = ["u16 as bf16", "u16 as s16", "u8 as s8", "u16 >> (arithmetic)", "s8 >>> (logical)", "s16 as u16"];
        for ((g, w), what) in got.flatten().iter().zip(&want).zip(what) {
            let mismatch = (0..w.num_elements()).find(|&i| g.bits(i) != w.bits(i));
            assert_eq!(
                mismatch,
                None,
                "{what}: {:?} against {:?}",
                mismatch.map(|i| g.get(i)),
                mismatch.map(|i| w.get(i))
            );
        }
    }

    #[test]
    fn narrow_buffers_are_read_out_of_their_words() {
        // Odd lengths, so elements sit at every position of their words; every narrow
        // type converted as it is read, against the interpreter, exactly.
        let hlo = "HloModule m
ENTRY %main (a: s8[7], b: u8[7], c: s16[7], d: u16[7], e: f16[7], f: bf16[7], p: pred[7]) -> (s32[7], f32[7], s32[7], f32[7], f32[7], f32[7], f32[7]) {
  %a = s8[7] parameter(0)
  %b = u8[7] parameter(1)
  %c = s16[7] parameter(2)
  %d = u16[7] parameter(3)
  %e = f16[7] parameter(4)
  %f = bf16[7] parameter(5)
  %p = pred[7] parameter(6)
  %a1 = s32[7] convert(%a)
  %b1 = f32[7] convert(%b)
  %c1 = s32[7] convert(%c)
  %d1 = f32[7] convert(%d)
  %e1 = f32[7] convert(%e)
  %f1 = f32[7] convert(%f)
  %one = f32[7] constant({1, 2, 3, 4, 5, 6, 7})
  %z = f32[7] negate(%one)
  %p1 = f32[7] select(%p, %one, %z)
  ROOT %t = (s32[7], f32[7], s32[7], f32[7], f32[7], f32[7], f32[7]) tuple(%a1, %b1, %c1, %d1, %e1, %f1, %p1)
}";
        let module = hloscope_core::parse::parse_module(hlo).unwrap();
        let program = webgpu::compile(&module).unwrap();
        assert_eq!(program.counts().1, 0, "everything runs on the device:\n{}", program.listing());
        for seed in [1, 2, 3] {
            let args = hloscope_core::interp::random_inputs(&module, seed);
            let want = Interpreter::new(&module).run(&args).unwrap().flatten();
            let (got, _) = device_run(&module, &args);
            for (i, (g, w)) in got.flatten().iter().zip(&want).enumerate() {
                assert_eq!(g.to_le_bytes(), w.to_le_bytes(), "output {i} (seed {seed}): {g:?} vs {w:?}");
            }
        }
    }

    /// The bits of each element of `l`, a NaN of a float type as one pattern (the
    /// interpreter keeps values as f64: a NaN's payload is not part of its result).
    fn element_bits(l: &Literal) -> Vec<u64> {
        let bytes = l.to_le_bytes();
        let width = l.shape.elem.byte_size().max(1);
        let nan = |b: u64| match l.shape.elem {
            ElementType::F16 => b & 0x7c00 == 0x7c00 && b & 0x3ff != 0,
            ElementType::BF16 => b & 0x7f80 == 0x7f80 && b & 0x7f != 0,
            _ => false,
        };
        bytes
            .chunks(width)
            .map(|c| c.iter().rev().fold(0u64, |acc, &b| acc << 8 | u64::from(b)))
            .map(|b| if nan(b) { u64::MAX } else { b })
            .collect()
    }

    #[test]
    fn narrow_stores_round_wrap_and_saturate_as_the_interpreter_does() {
        // Every 4099th f32 bit pattern, and the edges of f16 and bf16 (the largest
        // finite values, their halfway points to infinity and between neighbours, the
        // subnormal range, signed zeros), converted to every narrow type and stored by
        // one kernel: neighbouring invocations write parts of one word. Then s32s wrapped
        // to the narrow integers. Bit for bit against the interpreter.
        let mut x: Vec<f32> = (0..=u32::MAX / 4099).map(|k| f32::from_bits(k * 4099)).collect();
        let p = |e: i32| 2f32.powi(e);
        x.extend([
            65504.0,
            65519.0,
            65520.0,
            65536.0,
            -65520.0,
            p(-14),
            p(-24),
            p(-25),
            p(-25) * 1.5,
            p(-26),
            1.0 + p(-11),
            1.0 + 3.0 * p(-11),
            1.0 + p(-8),
            1.0 + 3.0 * p(-8),
            -0.0,
            0.0,
            300.0,
            -129.5,
            255.9,
            -1.5,
            1e10,
            -1e10,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            3.3895314e38,
        ]);
        let n = x.len();
        let m = 4099;
        let ints: Vec<i64> = (0..m as i64).map(|k| (k * 1_048_573) % (1 << 31) - (1 << 30)).collect();
        let hlo = format!(
            "HloModule m
ENTRY %main (x: f32[{n}], i: s32[{m}]) -> (f16[{n}], bf16[{n}], s8[{n}], u8[{n}], s16[{n}], u16[{n}], pred[{n}], s8[{m}], u8[{m}], s16[{m}], u16[{m}], f16[{m}]) {{
  %x = f32[{n}] parameter(0)
  %i = s32[{m}] parameter(1)
  %a = f16[{n}] convert(%x)
  %b = bf16[{n}] convert(%x)
  %c = s8[{n}] convert(%x)
  %d = u8[{n}] convert(%x)
  %e = s16[{n}] convert(%x)
  %f = u16[{n}] convert(%x)
  %g = pred[{n}] convert(%x)
  %h = s8[{m}] convert(%i)
  %j = u8[{m}] convert(%i)
  %k = s16[{m}] convert(%i)
  %l = u16[{m}] convert(%i)
  %o = f16[{m}] convert(%i)
  ROOT %t = (f16[{n}], bf16[{n}], s8[{n}], u8[{n}], s16[{n}], u16[{n}], pred[{n}], s8[{m}], u8[{m}], s16[{m}], u16[{m}], f16[{m}]) tuple(%a, %b, %c, %d, %e, %f, %g, %h, %j, %k, %l, %o)
}}"
        );
        let module = hloscope_core::parse::parse_module(&hlo).unwrap();
        let optimized = optimize(&module).unwrap();
        let f32s = Literal::from_f64s(
            hloscope_core::ir::Shape::new(ElementType::F32, [n as i64]),
            &x.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        );
        let s32s = Literal::from_i64s(hloscope_core::ir::Shape::new(ElementType::S32, [m as i64]), &ints);
        let args = [Value::Array(f32s), Value::Array(s32s)];
        let (got, program) = device_run(&optimized, &args);
        assert_eq!(program.counts().1, 0, "everything runs on the device:\n{}", program.listing());
        let want = Interpreter::new(&module).run(&args).unwrap().flatten();
        for (i, (g, w)) in got.flatten().iter().zip(&want).enumerate() {
            let (gb, wb) = (element_bits(g), element_bits(w));
            let wrong: Vec<String> = (0..gb.len())
                .filter(|&k| gb[k] != wb[k])
                .take(8)
                .map(|k| {
                    let input = if i < 7 { format!("{:e}", x[k]) } else { ints[k].to_string() };
                    format!("{input} -> {:#x}, want {:#x}", gb[k], wb[k])
                })
                .collect();
            assert!(wrong.is_empty(), "output {i} ({}): {}", w.shape, wrong.join("; "));
        }
    }

    #[test]
    fn narrow_arithmetic_runs_in_its_carrier_and_rounds_or_wraps_to_its_type() {
        // f16 and bf16 add, multiply, divide and sqrt in f32 rounded again (f32 has more
        // than twice their precision: the same as rounding once), a bf16 sum reduced in
        // order, and 8- and 16-bit integer arithmetic wrapping, shifts at and past the
        // width: bit for bit against the interpreter.
        let hlo = "HloModule m
%add (a: bf16[], b: bf16[]) -> bf16[] {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  ROOT %s = bf16[] add(%a, %b)
}
ENTRY %main (a: f16[301], b: f16[301], c: bf16[301], d: bf16[301], i: s8[301], j: s8[301], u: u16[301], k: u16[301]) -> (f16[301], f16[301], bf16[301], bf16[], s8[301], s8[301], u16[301], u16[301]) {
  %a = f16[301] parameter(0)
  %b = f16[301] parameter(1)
  %c = bf16[301] parameter(2)
  %d = bf16[301] parameter(3)
  %i = s8[301] parameter(4)
  %j = s8[301] parameter(5)
  %u = u16[301] parameter(6)
  %k = u16[301] parameter(7)
  %ab = f16[301] multiply(%a, %b)
  %q = f16[301] divide(%ab, %b)
  %s = f16[301] add(%q, %a)
  %ab2 = f16[301] abs(%ab)
  %r = f16[301] sqrt(%ab2)
  %cd = bf16[301] multiply(%c, %d)
  %cs = bf16[301] subtract(%cd, %c)
  %z = bf16[] constant(0)
  %sum = bf16[] reduce(%cs, %z), dimensions={0}, to_apply=%add
  %ij = s8[301] multiply(%i, %j)
  %ij2 = s8[301] add(%ij, %i)
  %sh = s8[301] shift-left(%i, %j)
  %uk = u16[301] multiply(%u, %k)
  %us = u16[301] shift-right-logical(%u, %k)
  ROOT %t = (f16[301], f16[301], bf16[301], bf16[], s8[301], s8[301], u16[301], u16[301]) tuple(%s, %r, %cs, %sum, %ij2, %sh, %uk, %us)
}";
        let module = hloscope_core::parse::parse_module(hlo).unwrap();
        let optimized = optimize(&module).unwrap();
        let program = webgpu::compile(&optimized).unwrap();
        assert_eq!(program.counts().1, 0, "everything runs on the device:\n{}", program.listing());
        for seed in [1, 2] {
            let mut args = hloscope_core::interp::random_inputs(&module, seed);
            // Shift counts from 0 to past the width.
            for (slot, width) in [(5, 8), (7, 16)] {
                if let Value::Array(l) = &mut args[slot] {
                    let counts: Vec<i64> = (0..301).map(|k| k % (width + 3)).collect();
                    *l = Literal::from_i64s(l.shape.clone(), &counts);
                }
            }
            let want = Interpreter::new(&module).run(&args).unwrap().flatten();
            let (got, _) = device_run(&optimized, &args);
            for (i, (g, w)) in got.flatten().iter().zip(&want).enumerate() {
                assert_eq!(element_bits(g), element_bits(w), "output {i} (seed {seed}): {g:?} vs {w:?}");
            }
        }
    }

    #[test]
    fn narrow_data_moves_and_workgroup_reductions_store_narrow_results() {
        // A bf16 transpose (loaded and stored narrow, odd sizes), and f32 row sums of
        // long rows (a workgroup per row) stored as f16 by one invocation of each group.
        let hlo = "HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: bf16[5,7], y: f32[3,999]) -> (bf16[7,5], f16[3]) {
  %x = bf16[5,7] parameter(0)
  %t = bf16[7,5] transpose(%x), dimensions={1,0}
  %y = f32[3,999] parameter(1)
  %z = f32[] constant(0)
  %r = f32[3] reduce(%y, %z), dimensions={1}, to_apply=%add
  %h = f16[3] convert(%r)
  ROOT %o = (bf16[7,5], f16[3]) tuple(%t, %h)
}";
        let module = hloscope_core::parse::parse_module(hlo).unwrap();
        let optimized = optimize(&module).unwrap();
        let program = webgpu::compile(&optimized).unwrap();
        assert_eq!(program.counts().1, 0, "everything runs on the device:\n{}", program.listing());
        assert!(
            program.shaders.iter().flatten().any(|s| s.mapping == webgpu::wgsl::Mapping::BlockReduction),
            "{}",
            program.listing()
        );
        assert!(program.shaders.iter().flatten().all(|s| s.source.contains("array<atomic<u32>>")));
        let args = hloscope_core::interp::random_inputs(&module, 4);
        let want = Interpreter::new(&module).run(&args).unwrap().flatten();
        let (got, _) = device_run(&optimized, &args);
        let got = got.flatten();
        assert_eq!(got[0].to_le_bytes(), want[0].to_le_bytes(), "the transpose moves bits");
        // A sum in another order rounds to f16 within one f16 ulp of the interpreter's.
        for (g, w) in got[1].to_f64_vec().iter().zip(want[1].to_f64_vec()) {
            assert!((g - w).abs() <= w.abs() * 2f64.powi(-10), "{g} vs {w}");
        }
    }

    #[test]
    fn the_approximations_meet_their_bounds_on_the_device() {
        // hloscope-approx's algorithms as WGSL (`targets/webgpu/approx.rs`), on every
        // 4099th f32 bit pattern (all exponents, both signs, infinities, NaNs) against
        // the f64 library rounded to f32. The bounds are the CPU target's unfused ones
        // (`tests/cpu_math.rs`) plus one ulp: a driver may contract or reorder the
        // arithmetic. Subnormal inputs and results count absolutely (a GPU may flush them).
        let x: Vec<f32> = (0..=u32::MAX / 4099).map(|k| f32::from_bits(k * 4099)).collect();
        let n = x.len();
        let input = Literal::from_f64s(
            hloscope_core::ir::Shape::new(hloscope_core::ir::ElementType::F32, [n as i64]),
            &x.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        );
        let logistic = |v: f64| 1.0 / (1.0 + (-v).exp());
        // (HLO op, the f64 reference, the bound in ulps)
        type Check = (&'static str, fn(f64) -> f64, u64);
        let checks: [Check; 7] = [
            ("exponential", f64::exp, 2),
            ("exponential-minus-one", f64::exp_m1, 2),
            ("log", f64::ln, 2),
            ("log-plus-one", f64::ln_1p, 2),
            ("tanh", f64::tanh, 3),
            ("logistic", logistic, 3),
            ("erf", libm::erf, 3),
        ];
        let mut failures = Vec::new();
        for (op, reference, bound) in checks {
            let hlo = format!(
                "HloModule m\nENTRY %main (x: f32[{n}]) -> f32[{n}] {{\n  %x = f32[{n}] parameter(0)\n  ROOT %y = f32[{n}] {op}(%x)\n}}"
            );
            let module = hloscope_core::parse::parse_module(&hlo).unwrap();
            let (got, program) = device_run(&module, &[Value::Array(input.clone())]);
            assert_eq!(program.counts(), (1, 0), "{op} runs on the device");
            let Value::Array(got) = got else { panic!("{op}: not an array") };
            let got = got.to_f64_vec();
            let (mut worst, mut at) = (0, 0.0f32);
            for (i, &xi) in x.iter().enumerate() {
                let want = reference(xi as f64) as f32;
                let g = got[i] as f32;
                let tiny = |v: f32| v != 0.0 && v.abs() < f32::MIN_POSITIVE;
                if tiny(xi) || tiny(want) {
                    if (g - want).abs() > f32::MIN_POSITIVE {
                        failures.push(format!("{op}({xi:e}) = {g:e}, want {want:e}"));
                    }
                    continue;
                }
                let u = ulps(g, want);
                if u > worst {
                    (worst, at) = (u, xi);
                }
            }
            println!("{op:22} max {worst} ulp (at x = {at:e}) over {n} inputs");
            if worst > bound {
                failures.push(format!("{op}: {worst} ulp at x = {at:e}, bound {bound}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n"));
    }

    /// The f32 values of `module`'s one result on the device, for the f32 inputs `args`
    /// (the module must run there as one kernel).
    fn device_f32s(module: &Module, args: &[&[f32]]) -> Vec<f32> {
        let args: Vec<Value> = args
            .iter()
            .map(|a| {
                let shape = hloscope_core::ir::Shape::new(ElementType::F32, [a.len() as i64]);
                Value::Array(Literal::from_f64s(shape, &a.iter().map(|&v| v as f64).collect::<Vec<_>>()))
            })
            .collect();
        let (got, program) = device_run(module, &args);
        assert_eq!(program.counts(), (1, 0), "runs on the device as one kernel:\n{}", program.listing());
        let Value::Array(got) = got else { panic!("not an array") };
        got.to_f64_vec().into_iter().map(|v| v as f32).collect()
    }

    /// `ROOT = op(x)` or `op(x, y)` over `n` f32 elements.
    fn f32_module(op: &str, n: usize, binary: bool) -> Module {
        let (params, args) =
            if binary { (format!("x: f32[{n}], y: f32[{n}]"), "%x, %y") } else { (format!("x: f32[{n}]"), "%x") };
        let y = if binary { format!("\n  %y = f32[{n}] parameter(1)") } else { String::new() };
        let hlo = format!(
            "HloModule m\nENTRY %main ({params}) -> f32[{n}] {{\n  %x = f32[{n}] parameter(0){y}\n  ROOT %r = f32[{n}] {op}({args})\n}}"
        );
        hloscope_core::parse::parse_module(&hlo).unwrap()
    }

    #[test]
    fn circular_functions_and_cbrt_meet_their_bounds_on_the_device() {
        // sin, cos, tan and cbrt as the CPU computes them without FMA (WGSL has no
        // guaranteed fused multiply-add), on every 4099th f32 bit pattern. The bounds are
        // the CPU's unfused ones (`tests/cpu_math.rs`) plus one ulp for the driver. The
        // trigonometric reduction is exact for |x| <= 4096 without FMA: beyond, only NaN
        // for the infinities is checked; near their zeros (and for subnormal x) the error
        // counts absolutely.
        let x: Vec<f32> = (0..=u32::MAX / 4099).map(|k| f32::from_bits(k * 4099)).collect();
        type Check = (&'static str, fn(f64) -> f64, u64);
        let checks: [Check; 4] =
            [("sine", f64::sin, 3), ("cosine", f64::cos, 3), ("tan", f64::tan, 5), ("cbrt", f64::cbrt, 3)];
        let mut failures = Vec::new();
        for (op, reference, bound) in checks {
            let got = device_f32s(&f32_module(op, x.len(), false), &[&x]);
            let trig = op != "cbrt";
            let (mut worst, mut at, mut n) = (0, 0.0f32, 0);
            for (&xi, &g) in x.iter().zip(&got) {
                if trig && xi.is_infinite() {
                    if !g.is_nan() {
                        failures.push(format!("{op}({xi}) = {g}, want NaN"));
                    }
                    continue;
                }
                if trig && xi.abs() > 4096.0 {
                    continue;
                }
                let want = reference(xi as f64);
                let tiny = |v: f32| v != 0.0 && v.abs() < f32::MIN_POSITIVE;
                // A device may flush a subnormal input to zero (cbrt's result is normal).
                if !trig && tiny(xi) && g == 0.0 {
                    continue;
                }
                if trig && (tiny(xi) || want.abs() < 1e-3) {
                    if (g as f64 - want).abs() > 2e-7 {
                        failures.push(format!("{op}({xi:e}) = {g:e}, want {want:e}"));
                    }
                    continue;
                }
                n += 1;
                let u = ulps(g, want as f32);
                if u > worst {
                    (worst, at) = (u, xi);
                }
            }
            println!("{op:8} max {worst} ulp (at x = {at:e}) over {n} inputs");
            if worst > bound {
                failures.push(format!("{op}: {worst} ulp at x = {at:e}, bound {bound}"));
            }
            // |x| <= 4096 holds about 9% of the bit patterns.
            assert!(n > if trig { 80_000 } else { 900_000 }, "{op}: only {n} inputs measured");
        }
        assert!(failures.is_empty(), "{}", failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n"));
    }

    /// `n` pairs of random f32 bit patterns (every exponent and ratio, NaNs included).
    #[cfg(feature = "cpu")]
    fn random_bit_pairs(rng: &mut crate::common::Rng, n: usize) -> (Vec<f32>, Vec<f32>) {
        (0..n).map(|_| (rng.f32_bits(), rng.f32_bits())).unzip()
    }

    /// Appends every pair of the special values (`common::SPECIALS`).
    #[cfg(feature = "cpu")]
    fn add_special_pairs(a: &mut Vec<f32>, b: &mut Vec<f32>) {
        use crate::common::SPECIALS;
        for &p in SPECIALS {
            a.extend(std::iter::repeat_n(p, SPECIALS.len()));
            b.extend_from_slice(SPECIALS);
        }
    }

    #[cfg(feature = "cpu")]
    #[test]
    fn atan2_meets_its_bound_on_the_device_and_pow_runs_on_the_host() {
        // Random bit patterns (every ratio and exponent), ordinary values and every pair of
        // specials, against f64; the bound is the CPU's unfused one plus one ulp. pow is
        // not emitted for WGSL (`targets/webgpu/approx.rs`): it must run on the host.
        let mut rng = crate::common::Rng(0xA7A2);
        let (mut a, mut b) = random_bit_pairs(&mut rng, 200_000);
        for _ in 0..100_000 {
            a.push(rng.uniform(0.0, 8.0));
            b.push(rng.uniform(-20.0, 20.0));
        }
        for _ in 0..50_000 {
            a.push(-rng.uniform(0.0, 4.0));
            b.push((rng.next() % 121) as f32 - 60.0);
        }
        add_special_pairs(&mut a, &mut b);
        let got = device_f32s(&f32_module("atan2", a.len(), true), &[&a, &b]);
        let (mut worst, mut at) = (0, (0.0f32, 0.0f32));
        for i in 0..a.len() {
            let u = ulps(got[i], (a[i] as f64).atan2(b[i] as f64) as f32);
            if u > worst {
                (worst, at) = (u, (a[i], b[i]));
            }
        }
        println!("atan2 max {worst} ulp (at {at:?}) over {} inputs", a.len());
        assert!(worst <= 4, "atan2: {worst} ulp at {at:?}, bound 4");
        let program = webgpu::compile(&f32_module("power", 4, true)).unwrap();
        assert_eq!(program.counts(), (0, 1), "pow runs on the host:\n{}", program.listing());
    }

    #[cfg(feature = "cpu")]
    #[test]
    fn float_remainder_is_exact_on_the_device() {
        // C's fmod (HLO's float remainder) bit for bit, against Rust's `%` (also fmod):
        // random bit patterns (exponents far apart, subnormals), ratios near integers,
        // and every pair of specials.
        let mut rng = crate::common::Rng(0xF30D);
        let (mut a, mut b) = random_bit_pairs(&mut rng, 200_000);
        for _ in 0..100_000 {
            let y = rng.uniform(-10.0, 10.0);
            a.push(y * ((rng.next() % 2000) as f32 - 1000.0) + rng.uniform(-1e-3, 1e-3));
            b.push(y);
        }
        for _ in 0..20_000 {
            // Subnormal divisors and dividends.
            a.push(f32::from_bits((rng.next() >> 41) as u32) * if rng.next().is_multiple_of(2) { 1.0 } else { -1.0 });
            b.push(f32::from_bits((rng.next() >> 45) as u32 + 1));
        }
        add_special_pairs(&mut a, &mut b);
        let got = device_f32s(&f32_module("remainder", a.len(), true), &[&a, &b]);
        let bits = |v: f32| if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() };
        let wrong: Vec<String> = (0..a.len())
            .filter(|&i| bits(got[i]) != bits(a[i] % b[i]))
            .take(10)
            .map(|i| format!("fmod({:e}, {:e}) = {:e}, want {:e}", a[i], b[i], got[i], a[i] % b[i]))
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// Equal within `rel` relative (plus a tiny absolute) error; NaN matches NaN.
    fn close(got: &Literal, want: &Literal, rel: f64) -> bool {
        if got.shape.dims != want.shape.dims || got.shape.elem != want.shape.elem {
            return false;
        }
        if !want.shape.elem.is_float() {
            return got.to_le_bytes() == want.to_le_bytes();
        }
        got.to_f64_vec()
            .iter()
            .zip(want.to_f64_vec())
            .all(|(&g, w)| (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= 1e-6 + rel * w.abs())
    }

    #[test]
    fn the_jax_corpus_runs_on_the_device() {
        let mut failures = Vec::new();
        let (mut gpu, mut host) = (0, 0);
        for (name, module) in jax_corpus() {
            let optimized = optimize(&module).unwrap();
            let args = hloscope_core::interp::random_inputs(&module, 7);
            let want = Interpreter::new(&module).run(&args).unwrap().flatten();
            // As a CPU adapter gets it, and as a GPU does (workgroup staging).
            for options in [webgpu::wgsl::Options::default(), STAGING] {
                let (got, program) = device_run_with(&optimized, &args, options);
                if options == STAGING {
                    let (g, h) = program.counts();
                    gpu += g;
                    host += h;
                }
                let got = got.flatten();
                if got.len() != want.len() || got.iter().zip(&want).any(|(g, w)| !close(g, w, 2e-4)) {
                    failures.push(format!("{name} ({options:?}): the device's outputs differ from the interpreter's"));
                }
            }
        }
        println!("{gpu} kernels on the device, {host} on the host");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(gpu >= 114, "only {gpu} kernels ran on the device");
    }

    /// A device kernel (exp over 64K elements), a host kernel (the sort) and a device
    /// reduction (negate and sum, fused), in that order.
    const DEVICE_HOST_DEVICE: &str = "HloModule m
%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[65536]) -> (f32[65536], f32[]) {
  %x = f32[65536] parameter(0)
  %e = f32[65536] exponential(%x)
  %s = f32[65536] sort(%e), dimensions={0}, to_apply=%lt
  %n = f32[65536] negate(%s)
  %z = f32[] constant(0)
  %r = f32[] reduce(%n, %z), dimensions={0}, to_apply=%add
  ROOT %t = (f32[65536], f32[]) tuple(%s, %r)
}";

    #[test]
    fn a_timed_run_times_every_plan_kernel_in_order() {
        let module = optimize(&hloscope_core::parse::parse_module(DEVICE_HOST_DEVICE).unwrap()).unwrap();
        let program = webgpu::compile(&module).unwrap();
        let on_host: Vec<bool> = program.shaders.iter().map(Option::is_none).collect();
        assert_eq!(on_host, [false, true, false], "{}", program.plan);
        let exe = WebGpuExecutable::new(&module, program.clone()).unwrap_or_else(|e| panic!("{e}"));
        let args = hloscope_core::interp::random_inputs(&module, 3);
        let want = Interpreter::new(&module).run(&args).unwrap().flatten();
        // The sorted exponentials within a few ulps; their sum of 64K terms, added in
        // f32 one by one on the device, within its rounding.
        let matches = |got: Value| {
            let got = got.flatten();
            close(&got[0], &want[0], 1e-5) && close(&got[1], &want[1], 1e-3)
        };
        let (plain, times) = exe.run(&args).unwrap();
        assert!(times.kernels.is_none(), "a plain run times no kernel");
        assert!(matches(plain));
        let mut methods = vec![TimingMethod::SubmitAndWait];
        if exe.timing_method() == TimingMethod::GpuTimestamps {
            methods.push(TimingMethod::GpuTimestamps);
        }
        println!("{}: best timing {}", exe.adapter.name, exe.timing_method().label());
        for method in methods {
            let (got, times) = exe.run_timed(&args, method).unwrap_or_else(|e| panic!("{}: {e}", method.label()));
            assert!(matches(got), "{}", method.label());
            let k = times.kernels.expect("a timed run times its kernels");
            assert_eq!(k.method, method);
            let names: Vec<&str> = k.kernels.iter().map(|t| t.name.as_str()).collect();
            let plan_names: Vec<&str> = program.plan.kernels.iter().map(|k| k.name.as_str()).collect();
            assert_eq!(names, plan_names, "{}", method.label());
            assert_eq!(k.kernels.iter().map(|t| t.on_host).collect::<Vec<_>>(), on_host);
            // Every kernel ran inside the run, and sorting 64K floats in the interpreter
            // and exponentials of 64K floats take measurable time.
            let sum: std::time::Duration = k.kernels.iter().map(|t| t.time).sum();
            assert!(sum <= times.total, "{}: kernels {sum:?} in a run of {:?}", method.label(), times.total);
            assert!(k.kernels[0].time > std::time::Duration::ZERO, "{}: {:?}", method.label(), k.kernels);
            assert!(k.kernels[1].time > std::time::Duration::ZERO, "{}: {:?}", method.label(), k.kernels);
        }
        assert_eq!(TimingMethod::GpuTimestamps.label(), "gpu timestamps");
        assert_eq!(TimingMethod::SubmitAndWait.label(), "submit and wait per kernel");
    }

    #[test]
    fn runs_again_on_loaded_inputs() {
        // Constants are written once and parameters are pinned: executing again without
        // loading gives the same result, and new inputs a new one.
        let module = optimize(&hloscope_core::parse::parse_module(DEVICE_HOST_DEVICE).unwrap()).unwrap();
        let exe = WebGpuExecutable::new(&module, webgpu::compile(&module).unwrap()).unwrap_or_else(|e| panic!("{e}"));
        let (a, b) =
            (hloscope_core::interp::random_inputs(&module, 1), hloscope_core::interp::random_inputs(&module, 2));
        let first = exe.run(&a).unwrap().0;
        exe.execute(None).unwrap();
        assert_eq!(exe.read_result().unwrap(), first);
        let other = exe.run(&b).unwrap().0;
        assert_ne!(other, first);
    }
}
