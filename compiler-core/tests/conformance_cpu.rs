//! The conformance corpus's testdata programs run on the CPU target, checked by the
//! corpus's own `check.*` expectations. Programs the interpreter itself does not pass
//! (`conformance/expected_failures.txt`) or that upstream disables are skipped. Two
//! selections:
//! - every program using only ops the CPU target compiles (elementwise, data movement,
//!   reduce, dot, while, dynamic slices, gather, reduce-window, sort, scatter,
//!   convolution, the chlo ops that decompose into them), after the cpu pipeline;
//! - the programs using dynamic slices, gathers, scatters, sorts, reduce-windows or
//!   convolutions, **without constant folding** (their inputs are constants, which
//!   folding would evaluate in the interpreter), so that the compiled forms of those ops
//!   are what runs.
//!
//! Each test prints how many kernels were compiled and how many fell back to the
//! interpreter (`HLOSCOPE_SHOW_INTERPRETED=1` lists them). Needs the `cpu` feature (on
//! under `cargo test --workspace`).

#![cfg(feature = "cpu")]

use crate::checks;
use crate::corpus;
use crate::selection;

use corpus::corpus_dir;
use hloscope_core::ir::Value;
use hloscope_core::kernel::KernelKind;
use hloscope_core::passes::pipeline::{parse_pipeline_spec, run_pipeline, PipelineConfig};
use hloscope_core::targets::cpu;
use selection::{compiled_programs, runnable_rows};
use std::path::Path;
use std::sync::Mutex;

/// The ops under test: a program must use at least one.
const TARGET_OPS: &[&str] =
    &["dynamic_slice", "dynamic_update_slice", "gather", "scatter", "sort", "reduce_window", "convolution"];

/// Other ops a selected program may use.
const OTHER_OPS: &[&str] = &[
    "constant",
    "return",
    "compare",
    "add",
    "broadcast_in_dim",
    "select",
    "multiply",
    "maximum",
    "minimum",
    "convert",
    "slice",
    "and",
    "or",
    "reshape",
    "subtract",
    "iota",
    "divide",
    "negate",
    "pad",
    "concatenate",
    "abs",
    "transpose",
    "reverse",
    "clamp",
    "reduce",
    "dot_general",
    "not",
    "xor",
];

/// f32 convolutions whose expected values (XLA's step-by-step f32 sums) differ from the
/// GEMM's sum order by a few ulps in some elements: they must run, and may fail only an
/// element comparison.
const SUM_ORDER_DIFFERS: &[&str] = &["testdata/conv_general_dilated_float32_2_3_9_float32_12_1_3.mlir"];

/// Runs one program after the pipeline `spec`; returns (compiled, interpreted) kernels,
/// not counting the checks.
fn run_program(dir: &Path, path: &str, spec: &str) -> Result<(usize, usize), String> {
    let text = std::fs::read_to_string(dir.join(path)).unwrap();
    let mut module = hloscope_core::parse::parse_module(&text).map_err(|e| format!("parse: {e:?}"))?;
    let passes = parse_pipeline_spec(spec).map_err(|e| e.to_string())?;
    let config = PipelineConfig { passes, snapshots: false, ..Default::default() };
    run_pipeline(&mut module, &config).map_err(|e| e.to_string())?;
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
    let is_check = |k: &KernelKind| matches!(k, KernelKind::Opaque { reason } if reason.contains("custom-call"));
    let interpreted: Vec<_> =
        kernels.iter().filter(|k| matches!(k.kind, KernelKind::Opaque { .. }) && !is_check(&k.kind)).collect();
    if std::env::var("HLOSCOPE_SHOW_INTERPRETED").is_ok() {
        for k in &interpreted {
            eprintln!("interpreted: {path}: {}: {}", k.name, k.kind);
        }
    }
    let checks = kernels.iter().filter(|k| is_check(&k.kind)).count();
    Ok((kernels.len() - interpreted.len() - checks, interpreted.len()))
}

/// Runs `programs` after `spec`; `tolerated(program, error)` says which failures are
/// expected. Asserts none other failed.
fn run_all(dir: &Path, programs: &[String], spec: &str, tolerated: impl Fn(&str, &str) -> bool) {
    let mut failures = Vec::new();
    let (mut compiled, mut interpreted) = (0, 0);
    for p in programs {
        match run_program(dir, p, spec) {
            Ok((c, i)) => {
                compiled += c;
                interpreted += i;
            }
            Err(e) if tolerated(p, &e) => {
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

#[test]
fn compiled_programs_pass_their_checks() {
    let dir = corpus_dir();
    let programs = compiled_programs(&dir);
    run_all(&dir, &programs, cpu::PIPELINE, |_, _| false);
}

#[test]
fn data_dependent_and_library_kernels_pass_the_corpus_checks() {
    let dir = corpus_dir();
    let programs: Vec<String> = runnable_rows(&dir)
        .into_iter()
        // Complex and the small float types stay out (the target does not compile them).
        .filter(|(_, types, ops)| {
            let names: Vec<&str> = ops.split(',').filter_map(|op| op.strip_prefix("stablehlo.")).collect();
            let known = ops.split(',').all(|op| match op.strip_prefix("stablehlo.") {
                Some(name) => TARGET_OPS.contains(&name) || OTHER_OPS.contains(&name),
                None => false,
            });
            !types.contains("complex") && known && names.iter().any(|n| TARGET_OPS.contains(n))
        })
        .map(|(path, _, _)| path)
        .collect();
    assert!(programs.len() > 100, "only {} programs selected", programs.len());
    let spec = format!("{},-constant-fold", cpu::PIPELINE);
    run_all(&dir, &programs, &spec, |p, e| {
        SUM_ORDER_DIFFERS.contains(&p) && e.starts_with("check:") && e.contains("elements differ")
    });
}
