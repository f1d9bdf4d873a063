//! The pass pipeline preserves meaning: every pass, on every program we have.
//!
//! For each conformance case and each JAX corpus program (StableHLO and XLA's optimized
//! HLO), the default pipeline runs with the verifier after each pass, and after each
//! pass the interpreter's results — the root value and the operands of every `check.*`
//! call — must equal, bit for bit, the results before any pass ran (NaNs match NaNs).

use crate::corpus;

use hloscope_core::interp::Interpreter;
use hloscope_core::ir::{Data, Literal, Module, Value};
use hloscope_core::passes::pipeline::{
    parse_pipeline_spec, run_pipeline, run_pipeline_observed, PipelineConfig, PipelineError,
};
use std::path::Path;
use std::sync::Mutex;

/// What a run computed: the root and every custom call's operands, in order.
#[derive(Debug)]
struct Observed {
    root: Value,
    checks: Vec<Vec<Value>>,
}

fn observe(module: &Module, args: &[Value]) -> Result<Observed, String> {
    let checks = Mutex::new(Vec::new());
    let mut interp = Interpreter::new(module).with_custom_call_hook(|_, args| {
        checks.lock().unwrap().push(args.to_vec());
        Ok(Value::Tuple(vec![]))
    });
    interp.max_loop_iterations = 1_000_000;
    let root = interp.run(args).map_err(|e| e.to_string());
    drop(interp);
    Ok(Observed { root: root?, checks: checks.into_inner().unwrap() })
}

/// Bit-exact equality of values, any NaN equal to any NaN.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => same_literal(x, y),
        (Value::Tuple(xs), Value::Tuple(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_value(x, y))
        }
        (Value::Token, Value::Token) => true,
        _ => false,
    }
}

fn same_literal(x: &Literal, y: &Literal) -> bool {
    if !x.shape.same_shape(&y.shape) {
        return false;
    }
    match (&x.data, &y.data) {
        (Data::F(a), Data::F(b)) => {
            a.iter().zip(b).all(|(p, q)| (p.is_nan() && q.is_nan()) || p.to_bits() == q.to_bits())
        }
        _ => x.data == y.data,
    }
}

fn same_observed(a: &Observed, b: &Observed) -> Result<(), String> {
    if !same_value(&a.root, &b.root) {
        return Err("the result differs".into());
    }
    if a.checks.len() != b.checks.len() {
        return Err(format!("{} check calls before, {} after", a.checks.len(), b.checks.len()));
    }
    for (i, (x, y)) in a.checks.iter().zip(&b.checks).enumerate() {
        if x.len() != y.len() || !x.iter().zip(y).all(|(p, q)| same_value(p, q)) {
            return Err(format!("the operands of check call {i} differ"));
        }
    }
    Ok(())
}

/// Runs the default pipeline on `module`, comparing after each pass. `Ok(None)` when the
/// module cannot be interpreted to begin with (unsupported), `Ok(Some(passes))` when all
/// passes kept its meaning.
fn check_pipeline(module: Module, args: &[Value]) -> Result<Option<usize>, String> {
    check_passes(module, args, &PipelineConfig { snapshots: false, ..Default::default() })
}

/// [`check_pipeline`] with the passes of `config`.
fn check_passes(mut module: Module, args: &[Value], config: &PipelineConfig) -> Result<Option<usize>, String> {
    let Ok(before) = observe(&module, args) else { return Ok(None) };
    let mut failure: Option<String> = None;
    let mut passes = 0;
    let result = run_pipeline_observed(&mut module, config, &mut |pass, m| {
        passes += 1;
        if failure.is_some() {
            return;
        }
        match observe(m, args) {
            Ok(after) => {
                if let Err(e) = same_observed(&before, &after) {
                    failure = Some(format!("after {pass}: {e}"));
                }
            }
            Err(e) => failure = Some(format!("after {pass}: the interpreter failed: {e}")),
        }
    });
    if let Err(e) = result {
        return Err(e.to_string());
    }
    match failure {
        Some(f) => Err(f),
        None => Ok(Some(passes)),
    }
}

#[test]
fn every_pass_preserves_the_conformance_corpus() {
    let cases = corpus::collect_cases(&corpus::corpus_dir());
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let checked = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let Ok(module) = hloscope_core::parse::mlir::parse(&case.text) else { continue };
                match check_pipeline(module, &[]) {
                    Ok(Some(_)) => {
                        checked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Ok(None) => {}
                    Err(e) => failures.lock().unwrap().push(format!("{}: {e}", case.name)),
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let checked = checked.into_inner();
    println!("{checked} conformance cases keep their meaning through every pass");
    assert!(failures.is_empty(), "{} cases changed meaning:\n{}", failures.len(), failures.join("\n"));
    assert!(checked > 1700, "only {checked} cases were checked");
}

#[test]
fn every_pass_preserves_the_jax_corpus() {
    check_jax_corpus(&PipelineConfig { snapshots: false, ..Default::default() });
}

/// The passes outside the default pipeline too: dot canonicalization (after the other
/// dot passes, as XLA runs its `DotDecomposer`), on both texts of every JAX program.
#[test]
fn dot_canonicalization_preserves_the_jax_corpus() {
    let passes = parse_pipeline_spec(
        "inline,simplify,transpose-folding,dot-strength-reduction,dot-merger,dot-canonicalize,\
         constant-fold,cse,dce,fusion,layout-assignment,schedule",
    )
    .unwrap();
    check_jax_corpus(&PipelineConfig { passes, snapshots: false, ..Default::default() });
}

fn check_jax_corpus(config: &PipelineConfig) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend/tests/corpus");
    let mut programs: Vec<_> = std::fs::read_dir(&dir).expect("the JAX corpus").map(|e| e.unwrap().path()).collect();
    programs.sort();
    let mut checked = 0;
    for program in &programs {
        for file in ["module.mlir", "xla.hlo"] {
            let text = std::fs::read_to_string(program.join(file)).unwrap();
            let module = hloscope_core::parse::parse_module(&text).unwrap();
            let args = hloscope_core::interp::random_inputs(&module, 7);
            match check_passes(module, &args, config) {
                Ok(Some(_)) => checked += 1,
                Ok(None) => panic!("{}/{file} does not run on the interpreter", program.display()),
                Err(e) => panic!("{}/{file}: {e}", program.display()),
            }
        }
    }
    assert_eq!(checked, programs.len() * 2);
    assert!(checked >= 40);
}

/// A target's pipeline runs the passes quietly (no decision reasons composed) and
/// compacts the result: on every JAX program it must give the module the explorer's
/// pipeline (the same passes, every decision explained) ends with, and these pipelines
/// do decide (each StableHLO text at least).
#[test]
fn the_targets_quiet_pipeline_decides_as_the_explained_one() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend/tests/corpus");
    let mut programs: Vec<_> = std::fs::read_dir(&dir).expect("the JAX corpus").map(|e| e.unwrap().path()).collect();
    programs.sort();
    let passes = parse_pipeline_spec(hloscope_core::targets::PIPELINE).unwrap();
    let (mut compared, mut fusions, mut decided) = (0, 0, 0);
    for program in &programs {
        for file in ["module.mlir", "xla.hlo"] {
            let text = std::fs::read_to_string(program.join(file)).unwrap();
            let module = hloscope_core::parse::parse_module(&text).unwrap();
            let quiet = hloscope_core::targets::optimize_with(&module, &Default::default()).unwrap();
            let mut explained = module.clone();
            let config = PipelineConfig { passes: passes.clone(), ..Default::default() };
            let snapshots = run_pipeline(&mut explained, &config).unwrap();
            decided += snapshots.iter().any(|s| !s.decisions.is_empty()) as usize;
            let printed = hloscope_core::print::hlo::print_module(&quiet);
            assert_eq!(printed, hloscope_core::print::hlo::print_module(&explained), "{}/{file}", program.display());
            fusions += printed.matches(" fusion(").count();
            compared += 1;
        }
    }
    assert_eq!(compared, programs.len() * 2);
    // XLA's texts come fused already; the StableHLO ones are fused here.
    assert!(compared >= 40 && decided >= compared / 2, "{compared} programs, {decided} with decisions");
    assert!(fusions >= compared, "{compared} programs, {fusions} fusions");
}

#[test]
fn snapshots_record_each_pass() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend/tests/corpus/softmax/module.mlir");
    let mut module = hloscope_core::parse::parse_module(&std::fs::read_to_string(dir).unwrap()).unwrap();
    let snaps = run_pipeline(&mut module, &PipelineConfig::default()).unwrap();
    let names: Vec<&str> = snaps.iter().map(|s| s.pass.as_str()).collect();
    assert_eq!(
        names,
        [
            "input",
            "inline",
            "simplify",
            "transpose-folding",
            "dot-strength-reduction",
            "dot-merger",
            "constant-fold",
            "cse",
            "dce",
            "fusion",
            "layout-assignment",
            "schedule"
        ]
    );
    let input = &snaps[0];
    let fused = snaps.iter().find(|s| s.pass == "fusion").unwrap();
    assert!(input.text.starts_with("HloModule"));
    assert!(fused.changed);
    assert!(fused.cost.kernels < input.cost.kernels, "{} -> {} kernels", input.cost.kernels, fused.cost.kernels);
    assert!(fused.cost.bytes_moved < input.cost.bytes_moved);
    assert!(!fused.decisions.is_empty());
    assert!(fused.cost.peak_memory_bytes > 0);
    // Layout assignment gives every array a layout.
    assert!(snaps.last().unwrap().text.contains("{1,0}"));
    assert!(fused.changes.added.iter().any(|n| n.starts_with("fusion")), "{:?}", fused.changes);
    assert!(!fused.changes.removed.is_empty());
    // The graph puts the fused instructions in their fusion's group.
    let grouped = fused.graph.nodes.iter().filter(|n| n.fusion_group.is_some()).count();
    assert!(grouped > fused.cost.kernels);
    for e in &fused.graph.edges {
        assert!(fused.graph.nodes.iter().any(|n| n.id == e.from), "edge from unknown node {}", e.from);
        assert!(fused.graph.nodes.iter().any(|n| n.id == e.to), "edge to unknown node {}", e.to);
    }
    // A pass that changed nothing shows the previous snapshot's module, and no changes.
    let unchanged = snaps.iter().position(|s| !s.changed).expect("some pass leaves softmax as it is");
    let (before, same) = (&snaps[unchanged - 1], &snaps[unchanged]);
    assert_eq!((&same.text, &same.graph, &same.cost), (&before.text, &before.graph, &before.cost));
    assert_eq!(same.changes, Default::default());
    // Each snapshot's peak memory is buffer assignment's.
    let last = snaps.last().unwrap();
    assert_eq!(last.cost.peak_memory_bytes, hloscope_core::passes::buffers::assign_buffers(&module).peak_bytes);
}

/// cross_entropy (log-softmax, a label pick, the batch mean) in XLA's 3 kernels and 872
/// bytes: the row max (reads the f32[6,10] logits, 240 B, writes f32[6], 24 B), the
/// log-sum-exp (reads logits and max, writes f32[6]: 288 B), and one reduction kernel for
/// the pick and the mean (reads logits, max, log-sum and the s32[6] labels, writes the
/// f32[] loss: 240 + 3 * 24 + 4 = 316 B). Before `reduce-trivial-dims`, the mask's
/// reduce over a size-1 dimension kept the pick out of the mean's kernel (4 kernels, 920 B).
#[test]
fn cross_entropy_fuses_like_xla() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend/tests/corpus/cross_entropy/module.mlir");
    let mut module = hloscope_core::parse::parse_module(&std::fs::read_to_string(path).unwrap()).unwrap();
    let snaps = run_pipeline(&mut module, &PipelineConfig::default()).unwrap();
    let cost = &snaps.last().unwrap().cost;
    assert_eq!((cost.kernels, cost.bytes_moved), (3, 268 + 288 + 316));
    let simplify = snaps.iter().find(|s| s.pass == "simplify").unwrap();
    assert!(simplify.rewrites.iter().any(|r| r.rule == "reduce-trivial-dims"), "{:?}", simplify.rewrites);
}

#[test]
fn pipeline_specs() {
    let names = |spec: &str| parse_pipeline_spec(spec).map(|p| p.into_iter().map(|p| p.name).collect::<Vec<_>>());
    assert_eq!(
        names("default,-cse,-schedule,-dot-merger").unwrap(),
        [
            "inline",
            "simplify",
            "transpose-folding",
            "dot-strength-reduction",
            "constant-fold",
            "dce",
            "fusion",
            "layout-assignment"
        ]
    );
    assert_eq!(names("dce, simplify{max_rounds=2}").unwrap(), ["dce", "simplify"]);
    assert_eq!(
        parse_pipeline_spec("simplify{max_rounds=2}").unwrap()[0].knobs,
        [("max_rounds".to_string(), "2".to_string())]
    );
    let err = |spec: &str| match parse_pipeline_spec(spec) {
        Err(PipelineError::Spec(m)) => m,
        other => panic!("{spec}: expected a spec error, got {other:?}"),
    };
    assert_eq!(
        err("cse,fuse"),
        "unknown pass `fuse` (known: inline, simplify, transpose-folding, dot-strength-reduction, dot-merger, \
         dot-canonicalize, constant-fold, cse, dce, fusion, layout-assignment, schedule)"
    );
    assert_eq!(err("dot-merger{max_bytes=-1}"), "dot-merger: knob max_bytes takes a whole number, not `-1`");
    assert_eq!(err("simplify{rounds=2}"), "simplify has no knob `rounds`");
    assert_eq!(
        err("constant-fold{max_elements=many}"),
        "constant-fold: knob max_elements takes a whole number, not `many`"
    );
    assert_eq!(err("dce,-cse"), "`-cse`: cse is not in the pipeline at that point");
    assert_eq!(err("simplify{max_rounds=2"), "`simplify{max_rounds=2`: knobs must end with `}`");
}
