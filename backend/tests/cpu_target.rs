//! The CPU target against the interpreter on the JAX corpus.
//!
//! Each program of `backend/tests/corpus/` is simplified and fused, compiled for the CPU
//! (`hloscope_core::targets::cpu`) and run on its inputs; every output must match the
//! interpreter's run of the original module within the program's tolerance (`meta.json`;
//! bit-exact for integers and bool). The test also reports, per program, how many kernels
//! were compiled and how many run in the interpreter. One CLI test drives `--target cpu`.

use hloscope_core::interp::Interpreter;
use hloscope_core::ir::{Literal, Module, Value};
use hloscope_core::npy;
use hloscope_core::targets::cpu;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("corpus")
}

fn parse(path: &Path) -> Module {
    let text = std::fs::read_to_string(path).unwrap();
    hloscope_core::parse::parse_module(&text).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()))
}

/// The program's inputs, converted to its parameters' types.
fn inputs(dir: &Path, module: &Module) -> Vec<Value> {
    let entry = module.entry_comp();
    (0..entry.params.len())
        .map(|i| {
            let bytes = std::fs::read(dir.join(format!("in{i}.npy"))).unwrap();
            let arr = npy::read(&bytes).unwrap();
            let elem = entry.inst(entry.params[i]).ty.as_array().unwrap().elem;
            Value::Array(arr.to_literal(elem).unwrap())
        })
        .collect()
}

/// (rtol, atol) of output `i` from meta.json: a small scan, no JSON parser needed.
fn tolerance(dir: &Path) -> (f64, f64) {
    let meta = std::fs::read_to_string(dir.join("meta.json")).unwrap_or_default();
    let num = |key: &str| -> Option<f64> {
        let at = meta.find(&format!("\"{key}\""))?;
        let rest = &meta[at + key.len() + 2..];
        let rest = rest.trim_start().strip_prefix(':')?.trim_start();
        let end = rest.find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))?;
        rest[..end].parse().ok()
    };
    (num("rtol").unwrap_or(1e-5).max(1e-5), num("atol").unwrap_or(1e-6).max(1e-6))
}

fn compare(got: &Literal, want: &Literal, rtol: f64, atol: f64) -> Result<(), String> {
    if !got.shape.same_shape(&want.shape) {
        return Err(format!("shape {} vs {}", got.shape, want.shape));
    }
    if !want.elem().is_float() {
        return match (0..want.num_elements()).find(|&i| got.bits(i) != want.bits(i)) {
            None => Ok(()),
            Some(i) => Err(format!("element {i}: {:?} vs {:?}", got.get(i), want.get(i))),
        };
    }
    let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
    for (i, (&a, &b)) in g.iter().zip(&w).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= atol + rtol * b.abs();
        if !ok {
            return Err(format!("element {i}: got {a}, want {b}"));
        }
    }
    Ok(())
}

/// Runs one corpus program both ways; returns (compiled, interpreted) kernel counts.
fn check_program(name: &str) -> Result<(usize, usize), String> {
    let dir = corpus_dir().join(name);
    let module = parse(&dir.join("module.mlir"));
    let args = inputs(&dir, &module);
    let want = Interpreter::new(&module).run(&args).map_err(|e| e.to_string())?.flatten();
    let fused = cpu::optimize(&module).unwrap();
    let exe = cpu::compile(&fused)?;
    let got = exe.run(&args)?.flatten();
    if got.len() != want.len() {
        return Err(format!("{} outputs, want {}", got.len(), want.len()));
    }
    let (rtol, atol) = tolerance(&dir);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        compare(g, w, rtol, atol).map_err(|e| format!("output {i}: {e}\nplan:\n{}", exe.plan().summary()))?;
    }
    // A second run reuses the arena of the first: the same results, bit for bit.
    let again = exe.run(&args)?.flatten();
    for (i, (a, g)) in again.iter().zip(&got).enumerate() {
        compare(a, g, 0.0, 0.0).map_err(|e| format!("second run, output {i}: {e}"))?;
    }
    let arena = exe.arena_assignment();
    if arena.arena_bytes > arena.buffer_bytes + 64 * exe.plan().buffers.len() as u64 {
        return Err(format!("arena of {} B for {} B of buffers", arena.arena_bytes, arena.buffer_bytes));
    }
    Ok(exe.plan().counts())
}

#[test]
fn corpus_matches_the_interpreter() {
    let mut names: Vec<String> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut failures = Vec::new();
    let (mut compiled, mut interpreted) = (0, 0);
    for name in &names {
        match check_program(name) {
            Ok((c, i)) => {
                eprintln!("{name}: {c} compiled kernels, {i} interpreted");
                compiled += c;
                interpreted += i;
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    eprintln!("total: {compiled} compiled kernels, {interpreted} interpreted, {} programs", names.len());
    assert!(failures.is_empty(), "{} programs differ:\n{}", failures.len(), failures.join("\n"));
    // Only top_k's XLA custom call is left to the interpreter.
    assert_eq!(interpreted, 1, "kernels run by the interpreter instead of compiled code");
}

#[test]
fn cli_runs_on_the_cpu_target() {
    let dir = corpus_dir().join("softmax");
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cpu-cli-softmax");
    let _ = std::fs::remove_dir_all(&out);
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_hloscope"))
        .arg("run")
        .arg(dir.join("module.mlir"))
        .arg("--input")
        .arg(dir.join("in0.npy"))
        .args(["--target", "cpu", "--out-dir"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let got = npy::read(&std::fs::read(out.join("out0.npy")).unwrap()).unwrap();
    let want = npy::read(&std::fs::read(dir.join("out0.npy")).unwrap()).unwrap();
    let (g, w) = (got.to_literal(got.elem).unwrap(), want.to_literal(want.elem).unwrap());
    let (rtol, atol) = tolerance(&dir);
    compare(&g, &w, rtol, atol).unwrap();
}

#[test]
fn each_kernel_can_be_timed_by_the_caller() {
    let dir = corpus_dir().join("layernorm");
    let module = parse(&dir.join("module.mlir"));
    let args = inputs(&dir, &module);
    let exe = cpu::compile(&cpu::optimize(&module).unwrap()).unwrap();
    let mut seen = Vec::new();
    let out = exe
        .run_with(&args, &mut |k, exec| {
            let t = std::time::Instant::now();
            let r = exec();
            seen.push((k.name.to_string(), t.elapsed()));
            r
        })
        .unwrap();
    assert_eq!(seen.len(), exe.plan().kernels.len());
    assert_eq!(out, exe.run(&args).unwrap());
}

#[test]
fn the_arena_reuses_dead_buffers_and_runs_again() {
    // The transformer block is a long chain of kernels: intermediates die early, so the
    // arena is well under one allocation per buffer; runs on other inputs in between do
    // not disturb the results.
    let dir = corpus_dir().join("transformer_block");
    let module = parse(&dir.join("module.mlir"));
    let args = inputs(&dir, &module);
    let exe = cpu::compile(&cpu::optimize(&module).unwrap()).unwrap();
    let arena = exe.arena_assignment();
    eprintln!("transformer_block: {}", arena.summary());
    assert!(arena.arena_bytes < arena.buffer_bytes, "{}", arena.summary());
    let first = exe.run(&args).unwrap();
    let zeros: Vec<Value> =
        args.iter().map(|a| Value::Array(Literal::zeros(a.as_array().unwrap().shape.clone()))).collect();
    let on_zeros = exe.run(&zeros).unwrap();
    assert_ne!(first, on_zeros);
    assert_eq!(exe.run(&args).unwrap(), first);
}

/// (arena bytes with in-place updates, without) of `plan` and of the plans of the while
/// bodies, conditions and branches it runs, added up.
fn arena_sizes(module: &Module, plan: &hloscope_core::kernel::KernelPlan) -> (u64, u64) {
    use hloscope_core::kernel::{arena, plan_computation, KernelBody};
    let mut sizes = (plan.arena.arena_bytes, arena::assign_arena_with(plan, false).arena_bytes);
    for k in &plan.kernels {
        let inner = match &k.body {
            KernelBody::While { cond, body, .. } => vec![*cond, *body],
            KernelBody::Case { branches, .. } => branches.clone(),
            _ => Vec::new(),
        };
        for c in inner {
            let (with, without) = arena_sizes(module, &plan_computation(module, c).unwrap());
            sizes = (sizes.0 + with, sizes.1 + without);
        }
    }
    sizes
}

#[test]
fn in_place_updates_shrink_the_corpus_arenas() {
    // Per program (entry plus loop bodies and branches), after the cpu pipeline: never
    // larger with in-place updates, and smaller over the corpus.
    let mut names: Vec<String> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let (mut with, mut without) = (0, 0);
    for name in &names {
        let module = parse(&corpus_dir().join(name).join("module.mlir"));
        let fused = cpu::optimize(&module).unwrap();
        let plan = hloscope_core::kernel::plan(&fused).unwrap();
        let (w, wo) = arena_sizes(&fused, &plan);
        eprintln!("{name}: {wo} B -> {w} B");
        assert!(w <= wo, "{name}: {w} B with in-place updates, {wo} B without");
        with += w;
        without += wo;
    }
    eprintln!("corpus: {without} B -> {with} B");
    assert!(with < without, "{with} vs {without}");
}

#[test]
fn emitted_clif_shows_row_chains_and_strip_mining() {
    // Softmax over 256 rows of 1024: its three kernels (max, exp-and-sum, divide) run as
    // one row chain, and the exp-and-sum loop is strip-mined into native exp calls where
    // this CPU's native vectors are wider than Cranelift's.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("clif-softmax");
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(corpus_dir().join("softmax").join("module.mlir"))
        .unwrap()
        .replace("tensor<4x10x", "tensor<256x1024x")
        .replace("tensor<4x1x", "tensor<256x1x")
        .replace("tensor<4xf32>", "tensor<256xf32>");
    let path = dir.join("softmax.mlir");
    std::fs::write(&path, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hloscope"))
        .arg("compile")
        .arg(&path)
        .args(["--target", "cpu", "--emit", "clif"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let clif = String::from_utf8(out.stdout).unwrap();
    let chain = clif.lines().find(|l| l.starts_with("; row chain:")).unwrap_or_else(|| panic!("no row chain:\n{clif}"));
    assert!(chain.starts_with("; row chain: kernels 0..3 ("), "{chain}");
    assert!(clif.find("; row chain").unwrap() < clif.find("; kernel 0:").unwrap());
    // The exp-and-sum kernel and the division by the sums.
    let mined = clif.lines().filter(|l| l.starts_with("; strip-mined in blocks of 512 elements")).count();
    let wide = cpu::block_math::native_lanes() > 4;
    assert_eq!(
        mined,
        2 * wide as usize,
        "{}",
        clif.lines().filter(|l| l.starts_with(';')).collect::<Vec<_>>().join("\n")
    );
    if wide {
        assert!(clif.contains("hs_block_exp_f32 (stage 1)"));
        assert!(clif.contains("hs_block_div_f32 (stage 1, from input 0, into output 0)"));
    }
    assert!(clif.contains("; max/min rows: one maxps/minps per vector"));
}

#[test]
fn emitted_code_for_another_machine_lists_its_own_instructions() {
    let path = corpus_dir().join("softmax").join("module.mlir");
    let listing = |machine: &str, emit: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hloscope"))
            .arg("compile")
            .arg(&path)
            .args(["--target", "cpu", "--emit", emit, "--machine", machine])
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, arm, err) = listing("aarch64", "asm");
    assert!(ok, "{err}");
    assert!(arm.contains("; kernel 0:") && arm.contains(".4s") && !arm.contains("%xmm"), "{arm}");
    let (ok, x86, err) = listing("x86-64-v3", "asm");
    assert!(ok, "{err}");
    assert!(x86.contains("%xmm") && !x86.contains(".4s"), "{x86}");
    let (ok, clif, _) = listing("x86-64-v3", "clif");
    assert!(ok && clif.contains("function u0:") && clif.contains("; vectorized: 4 lanes"), "{clif}");
    let (ok, _, err) = listing("riscv64", "asm");
    assert!(!ok && err.contains("unknown (known: x86-64-v3, aarch64)"), "{err}");
}

#[test]
fn no_corpus_kernel_loses_its_vector_code() {
    // A vector plan whose code Cranelift refuses falls back to scalar code with
    // "vector code failed" in the listing: correct but slow, so none may in the corpus.
    for entry in std::fs::read_dir(corpus_dir()).unwrap() {
        let dir = entry.unwrap().path();
        let module = parse(&dir.join("module.mlir"));
        let exe = cpu::compile(&cpu::optimize(&module).unwrap()).unwrap();
        for i in 0..exe.plan().kernels.len() {
            let clif = exe.clif(i).unwrap_or("");
            assert!(
                !clif.contains("vector code failed"),
                "{}: kernel {i}: {}",
                dir.display(),
                clif.lines().next().unwrap_or("")
            );
        }
    }
}
