//! The conformance corpus's testdata programs that use only ops the CPU target compiles
//! (elementwise, data movement, reduce, dot, while, dynamic slices, gather, reduce-window,
//! sort, scatter, convolution, the chlo ops that decompose into them), run
//! on the CPU target after fusion, with the corpus's own `check.*` expectations.
//!
//! Programs the interpreter itself does not pass (`conformance/expected_failures.txt`)
//! or that upstream disables are skipped. Every other selected program must pass; the
//! test prints how many kernels were compiled and how many fell back to the interpreter.
//! Needs the `cpu` feature (on under `cargo test --workspace`).

#![cfg(feature = "cpu")]

#[path = "conformance/checks.rs"]
mod checks;

use hloscope_core::ir::Value;
use hloscope_core::kernel::KernelKind;
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

/// Ops whose programs are selected.
const COMPILED_OPS: &[&str] = &[
    "constant", "return", "compare", "add", "broadcast_in_dim", "select", "multiply", "maximum", "minimum",
    "convert", "slice", "and", "or", "reshape", "subtract", "iota", "divide", "negate", "pad", "concatenate",
    "log", "abs", "exponential", "bitcast_convert", "xor", "shift_right_logical", "shift_left",
    "shift_right_arithmetic", "transpose", "remainder", "sqrt", "reverse", "clamp", "sign", "power", "not",
    "log_plus_one", "atan2", "popcnt", "tanh", "sine", "cosine", "rsqrt", "round_nearest_afz",
    "round_nearest_even", "is_finite", "floor", "ceil", "exponential_minus_one", "cbrt", "reduce",
    "dot_general", "count_leading_zeros", "logistic", "while", "dynamic_slice", "dynamic_update_slice", "gather",
    "reduce_window", "sort", "scatter", "convolution",
];

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
        let (path, corpus, flags, ops) = (f[0], f[1], f[5], f[6]);
        if corpus != "testdata" || flags.contains("run_disabled") || skip.contains(path) {
            continue;
        }
        let ok = ops.split(',').all(|op| match op.strip_prefix("stablehlo.") {
            Some(name) => COMPILED_OPS.contains(&name),
            None => op.starts_with("chlo."),
        });
        if ok {
            out.push(path.to_string());
        }
    }
    out
}

/// Runs one program; returns (compiled, interpreted) kernels, not counting the checks.
fn run_program(dir: &Path, path: &str) -> Result<(usize, usize), String> {
    let text = std::fs::read_to_string(dir.join(path)).unwrap();
    let module = hloscope_core::parse::parse_module(&text).map_err(|e| format!("parse: {e:?}"))?;
    let module = cpu::optimize(&module)?;
    let exe = cpu::compile(&module)?;
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
    let interpreted = kernels
        .iter()
        .filter(|k| matches!(&k.kind, KernelKind::Opaque { reason } if !reason.contains("custom-call")))
        .count();
    if std::env::var("HLOSCOPE_SHOW_INTERPRETED").is_ok() {
        for k in kernels {
            if let KernelKind::Opaque { reason } = &k.kind {
                if !reason.contains("custom-call") {
                    eprintln!("interpreted: {path}: {}: {reason}", k.name);
                }
            }
        }
    }
    let checks = kernels.iter().filter(|k| matches!(&k.kind, KernelKind::Opaque { reason } if reason.contains("custom-call"))).count();
    Ok((kernels.len() - interpreted - checks, interpreted))
}

#[test]
fn compiled_programs_pass_their_checks() {
    let dir = corpus_dir();
    let programs = selected(&dir);
    let mut failures = Vec::new();
    let (mut compiled, mut interpreted) = (0, 0);
    for p in &programs {
        match run_program(&dir, p) {
            Ok((c, i)) => {
                compiled += c;
                interpreted += i;
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
