//! The conformance corpus's testdata programs on the WebGPU target (lavapipe in CI),
//! checked by the corpus's own `check.*` expectations: every program using only ops the
//! compiled targets take (the CPU test's first selection, `conformance/selection.rs`),
//! after the WebGPU pipeline without constant folding (the programs' inputs are
//! constants, which folding would evaluate on the host). Programs that compute in f64 are refused by the target
//! with one error naming the instruction; the test lists how many and checks the
//! message, and every other program must pass. Needs feature `webgpu` and an adapter.

#![cfg(feature = "webgpu")]

use crate::checks;
use crate::corpus;
use crate::selection;

use hloscope_core::ir::Value;
use hloscope_core::passes::pipeline::{parse_pipeline_spec, run_pipeline, PipelineConfig};
use hloscope_core::targets::webgpu::{self, runtime::WebGpuExecutable};
use selection::compiled_programs;
use std::path::Path;

/// How one program went: its kernels on the device and on the host, or the target's
/// refusal (f64), or a failure.
enum Outcome {
    /// Kernels on the device, and why each host kernel is (the checks aside).
    Ran {
        device: usize,
        host: Vec<String>,
    },
    Refused(String),
}

fn run_program(dir: &Path, path: &str) -> Result<Outcome, String> {
    let text = std::fs::read_to_string(dir.join(path)).unwrap();
    let mut module = hloscope_core::parse::parse_module(&text).map_err(|e| format!("parse: {e:?}"))?;
    let spec = format!("{},-constant-fold", hloscope_core::targets::PIPELINE);
    let passes = parse_pipeline_spec(&spec).map_err(|e| e.to_string())?;
    let config = PipelineConfig { passes, snapshots: false, ..Default::default() };
    run_pipeline(&mut module, &config).map_err(|e| e.to_string())?;
    let program = match webgpu::compile(&module) {
        Ok(p) => p,
        Err(e) if e.contains("which the webgpu target does not support") => return Ok(Outcome::Refused(e)),
        Err(e) => return Err(format!("compile: {e}")),
    };
    let device = program.counts().0;
    let host: Vec<String> = program
        .host_kernels()
        .into_iter()
        .map(|k| k.kind.to_string())
        .filter(|kind| !kind.contains("custom-call"))
        .collect();
    let listing = program.listing();
    let exe = WebGpuExecutable::new(&module, program)?;
    let mut failures = Vec::new();
    exe.run_with_custom_calls(&[], &mut |inst, args| {
        if let Err(e) = checks::run_check(inst, args, "testdata") {
            failures.push(e);
        }
        Ok(Value::Tuple(vec![]))
    })?;
    if let Some(first) = failures.first() {
        return Err(format!("check: {first}\n{listing}"));
    }
    Ok(Outcome::Ran { device, host })
}

#[test]
fn conformance_programs_pass_their_checks_on_the_device() {
    let dir = corpus::corpus_dir();
    let programs = compiled_programs(&dir);
    assert!(programs.len() > 1000, "only {} programs selected", programs.len());
    let (mut device, mut ran, mut refused) = (0, 0, Vec::new());
    let mut host: std::collections::BTreeMap<String, usize> = Default::default();
    let mut failures = Vec::new();
    for p in &programs {
        match run_program(&dir, p) {
            Ok(Outcome::Ran { device: d, host: h }) => {
                (device, ran) = (device + d, ran + 1);
                for why in h {
                    *host.entry(why).or_default() += 1;
                }
            }
            Ok(Outcome::Refused(why)) => refused.push(format!("{p}: {why}")),
            Err(e) => failures.push(format!("{p}: {e}")),
        }
    }
    let on_host: usize = host.values().sum();
    eprintln!(
        "{} programs: {ran} ran ({device} kernels on the device, {on_host} on the host besides the checks), {} refused (f64), {} failed",
        programs.len(),
        refused.len(),
        failures.len()
    );
    let mut reasons: Vec<(&String, &usize)> = host.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1));
    for (why, n) in reasons.iter().take(12) {
        eprintln!("  {n:5} on the host: {why}");
    }
    if let Some(example) = refused.first() {
        eprintln!("refused, e.g. {example}");
    }
    assert!(failures.is_empty(), "{} programs fail on webgpu:\n{}", failures.len(), failures.join("\n\n"));
    assert!(ran > 1200 && device >= 1330, "only {ran} programs ran, {device} kernels on the device");
}
