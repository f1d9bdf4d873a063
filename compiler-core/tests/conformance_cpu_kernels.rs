//! The conformance corpus's testdata programs that use dynamic slices, gathers, scatters,
//! sorts, reduce-windows or convolutions, run on the CPU target **without constant
//! folding** (their inputs are constants, which folding would evaluate in the
//! interpreter), checked by the corpus's own `check.*` expectations. This exercises the
//! compiled forms of those ops on the corpus; programs the interpreter does not pass
//! (`conformance/expected_failures.txt`) or that upstream disables are skipped, as are
//! those using ops outside the CPU target's compiled set. Needs the `cpu` feature.

#![cfg(feature = "cpu")]

#[path = "conformance/checks.rs"]
mod checks;

use hloscope_core::ir::{Module, Value};
use hloscope_core::kernel::KernelKind;
use hloscope_core::passes::pipeline::{parse_pipeline_spec, run_pipeline, PipelineConfig};
use hloscope_core::targets::cpu;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

fn corpus_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("HLOSCOPE_CONFORMANCE_DIR") {
        return PathBuf::from(dir);
    }
    let beside_repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/stablehlo");
    if beside_repo.exists() {
        return beside_repo;
    }
    PathBuf::from("/work/shared/conformance/stablehlo")
}

/// The ops under test: a program must use at least one.
const TARGET_OPS: &[&str] =
    &["dynamic_slice", "dynamic_update_slice", "gather", "scatter", "sort", "reduce_window", "convolution"];

/// Other ops a selected program may use.
const OTHER_OPS: &[&str] = &[
    "constant", "return", "compare", "add", "broadcast_in_dim", "select", "multiply", "maximum", "minimum",
    "convert", "slice", "and", "or", "reshape", "subtract", "iota", "divide", "negate", "pad", "concatenate",
    "abs", "transpose", "reverse", "clamp", "reduce", "dot_general", "not", "xor",
];

/// f32 convolutions whose expected values (XLA's step-by-step f32 sums) differ from the
/// GEMM's sum order by a few ulps in some elements: they must run, and may fail only an
/// element comparison.
const SUM_ORDER_DIFFERS: &[&str] = &["testdata/conv_general_dilated_float32_2_3_9_float32_12_1_3.mlir"];

fn selected(dir: &Path) -> Vec<String> {
    let index = std::fs::read_to_string(dir.join("index.tsv")).unwrap();
    let skip: HashSet<String> = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/expected_failures.txt"),
    )
    .unwrap()
    .lines()
    .filter_map(|l| l.split('\t').next().map(str::to_string))
    .collect();
    let mut out = Vec::new();
    for line in index.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        let (path, corpus, types, flags, ops) = (f[0], f[1], f[4], f[5], f[6]);
        // Complex and the small float types stay out (the target does not compile them).
        if corpus != "testdata" || flags.contains("run_disabled") || skip.contains(path) || types.contains("complex") {
            continue;
        }
        let names: Vec<&str> = ops.split(',').filter_map(|op| op.strip_prefix("stablehlo.")).collect();
        let known = ops.split(',').all(|op| match op.strip_prefix("stablehlo.") {
            Some(name) => TARGET_OPS.contains(&name) || OTHER_OPS.contains(&name),
            None => false,
        });
        if known && names.iter().any(|n| TARGET_OPS.contains(n)) {
            out.push(path.to_string());
        }
    }
    out
}

fn optimize_without_folding(module: &Module) -> Result<Module, String> {
    let mut m = module.clone();
    let passes = parse_pipeline_spec("default,-layout-assignment,-constant-fold").map_err(|e| e.to_string())?;
    let config = PipelineConfig { passes, snapshots: false, ..Default::default() };
    run_pipeline(&mut m, &config).map_err(|e| e.to_string())?;
    Ok(m)
}

/// Runs one program; returns (compiled, interpreted) kernels, not counting the checks.
fn run_program(dir: &Path, path: &str) -> Result<(usize, usize), String> {
    let text = std::fs::read_to_string(dir.join(path)).unwrap();
    let module = hloscope_core::parse::parse_module(&text).map_err(|e| format!("parse: {e:?}"))?;
    let exe = cpu::compile(&optimize_without_folding(&module)?)?;
    let failures = Mutex::new(Vec::new());
    exe.run_with_custom_calls(&[], &mut |inst, args| {
        if let Err(e) = checks::run_check(inst, args, "testdata") {
            failures.lock().unwrap().push(e);
        }
        Ok(Value::Tuple(vec![]))
    })?;
    if let Some(first) = failures.into_inner().unwrap().first() {
        return Err(format!("check: {first}\nplan:\n{}", exe.plan().summary()));
    }
    let kernels = &exe.plan().kernels;
    let is_check = |k: &KernelKind| matches!(k, KernelKind::Opaque { reason } if reason.contains("custom-call"));
    let interpreted = kernels.iter().filter(|k| matches!(k.kind, KernelKind::Opaque { .. }) && !is_check(&k.kind)).count();
    if std::env::var("HLOSCOPE_SHOW_INTERPRETED").is_ok() {
        for k in kernels.iter().filter(|k| matches!(k.kind, KernelKind::Opaque { .. }) && !is_check(&k.kind)) {
            eprintln!("interpreted: {path}: {}: {}", k.name, k.kind);
        }
    }
    let checks = kernels.iter().filter(|k| is_check(&k.kind)).count();
    Ok((kernels.len() - interpreted - checks, interpreted))
}

#[test]
fn data_dependent_and_library_kernels_pass_the_corpus_checks() {
    let dir = corpus_dir();
    let programs = selected(&dir);
    assert!(programs.len() > 100, "only {} programs selected", programs.len());
    let mut failures = Vec::new();
    let (mut compiled, mut interpreted) = (0, 0);
    for p in &programs {
        match run_program(&dir, p) {
            Ok((c, i)) => {
                compiled += c;
                interpreted += i;
            }
            Err(e) if SUM_ORDER_DIFFERS.contains(&p.as_str()) && e.starts_with("check:") && e.contains("elements differ") => {
                eprintln!("{p}: differs in the f32 sum order, as expected: {}", e.lines().next().unwrap_or(""));
            }
            Err(e) => failures.push(format!("{p}: {e}")),
        }
    }
    eprintln!(
        "{} programs: {compiled} compiled kernels, {interpreted} interpreted (besides the checks), {} failed",
        programs.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{} programs fail on the cpu target:\n{}", failures.len(), failures.join("\n"));
}
