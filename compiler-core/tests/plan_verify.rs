//! The kernel plan verifier ([`hloscope_core::kernel::verify`]) on every corpus program,
//! for the CPU's capabilities and for a target without a GEMM library, row chains or
//! 64-byte alignment; and the verifier catching each kind of broken plan.
//!
//! Plans are made after the default pipeline (fused) and straight from the parsed module
//! (one kernel per instruction); the while bodies and branches a plan runs are planned
//! and verified too. Planning may refuse a module (sizes past the limits): those are
//! counted, and the test needs nearly the whole corpus planned.

use hloscope_core::ir::Module;
use hloscope_core::kernel::elemental::{ExprId, Node};
use hloscope_core::kernel::{self, verify::verify, KernelBody, KernelPlan, TargetCaps};
use hloscope_core::passes::pipeline::{run_pipeline, PipelineConfig};
use std::path::Path;

use crate::corpus;

/// A target unlike the CPU in every capability the planner reads.
fn other_caps() -> TargetCaps {
    TargetCaps {
        name: "test".into(),
        library_dot: false,
        arena_alignment: 256,
        row_chains: false,
        refused_elems: Vec::new(),
    }
}

/// Plans computation `comp` and every computation its while and case kernels run, and
/// verifies each plan: the number of plans (0 when the planner refuses the module, past
/// the limits), or the first broken rule.
fn plan_and_verify(module: &Module, comp: hloscope_core::ir::CompId, caps: &TargetCaps) -> Result<usize, String> {
    let Ok(plan) = kernel::plan_computation_with(module, comp, caps) else { return Ok(0) };
    verify(module, &plan).map_err(|e| format!("{e}\n{plan}"))?;
    let mut n = 1;
    for k in &plan.kernels {
        let nested: Vec<_> = match &k.body {
            KernelBody::While { cond, body, .. } => vec![*cond, *body],
            KernelBody::Case { branches, .. } => branches.clone(),
            _ => continue,
        };
        for c in nested {
            n += plan_and_verify(module, c, caps)?;
        }
    }
    Ok(n)
}

/// Verifies the plans of `module` as parsed and after the pipeline, for both targets.
fn check(module: Module) -> Result<usize, String> {
    let mut planned = 0;
    let mut fused = module.clone();
    let pipeline = run_pipeline(&mut fused, &PipelineConfig::default()).map(|_| fused);
    for m in std::iter::once(module).chain(pipeline.ok()) {
        for caps in [TargetCaps::cpu(), other_caps()] {
            planned += plan_and_verify(&m, m.entry, &caps)?;
        }
    }
    Ok(planned)
}

#[test]
fn every_conformance_plan_verifies() {
    let cases = corpus::collect_cases(&corpus::corpus_dir());
    let mut failures = Vec::new();
    let mut modules = 0;
    for case in &cases {
        let Ok(module) = hloscope_core::parse::mlir::parse(&case.text) else { continue };
        if hloscope_core::verify::verify(&module).is_err() {
            continue;
        }
        match check(module) {
            Ok(n) if n > 0 => modules += 1,
            Ok(_) => {}
            Err(e) => failures.push(format!("{}: {e}", case.name)),
        }
    }
    println!("{modules} conformance modules planned and verified");
    assert!(failures.is_empty(), "{} plans broke the verifier:\n{}", failures.len(), failures.join("\n\n"));
    assert!(modules > 1700, "only {modules} modules were planned");
}

#[test]
fn every_jax_corpus_plan_verifies() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend/tests/corpus");
    let mut programs: Vec<_> = std::fs::read_dir(&dir).expect("the JAX corpus").map(|e| e.unwrap().path()).collect();
    programs.sort();
    let mut plans = 0;
    for program in &programs {
        for file in ["module.mlir", "xla.hlo"] {
            let text = std::fs::read_to_string(program.join(file)).unwrap();
            let module = hloscope_core::parse::parse_module(&text).unwrap();
            // Every JAX program plans for both targets, fused and not.
            let n = check(module).unwrap_or_else(|e| panic!("{}/{file}: {e}", program.display()));
            assert!(n >= 4, "{}/{file}: only {n} plans", program.display());
            plans += n;
        }
    }
    assert!(programs.len() >= 20 && plans >= programs.len() * 8);
}

fn parse(hlo: &str) -> Module {
    hloscope_core::parse::parse_module(hlo).unwrap_or_else(|e| panic!("{e:?}"))
}

const ROW_SUM: &str = "HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,8] parameter(0)
  e = f32[4,8] exponential(x)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(e, z), dimensions={1}, to_apply=add
}";

/// The reduction kernel of a fused row sum, and its plan.
fn fused_row_sum() -> (Module, KernelPlan) {
    let mut m = parse(ROW_SUM);
    run_pipeline(&mut m, &PipelineConfig::default()).unwrap();
    let p = kernel::plan(&m).unwrap();
    verify(&m, &p).unwrap();
    (m, p)
}

fn elemental(p: &mut KernelPlan) -> &mut kernel::Elemental {
    p.kernels
        .iter_mut()
        .find_map(|k| match &mut k.body {
            KernelBody::Elemental(e) => Some(e),
            _ => None,
        })
        .expect("an elemental kernel")
}

#[test]
fn a_reduction_result_read_inside_its_own_loop_is_refused() {
    // The shape of the mean/variance miscompile: a reduction's values reading a
    // reduction's result, which exists only after the loop.
    let (m, mut p) = fused_row_sum();
    let e = elemental(&mut p);
    let value = e.reductions[0].values[0];
    let elem = e.expr(value).elem;
    e.nodes.push(kernel::elemental::Expr { node: Node::Reduced { red: 0, i: 0 }, elem });
    e.origins.push(None);
    let reduced = ExprId(e.nodes.len() as u32 - 1);
    e.nodes
        .push(kernel::elemental::Expr { node: Node::Binary(hloscope_core::ir::BinaryOp::Sub, value, reduced), elem });
    e.origins.push(None);
    e.reductions[0].values[0] = ExprId(e.nodes.len() as u32 - 1);
    let err = verify(&m, &p).unwrap_err();
    assert!(err.contains("inside the reduced loop, where it does not exist"), "{err}");
}

#[test]
fn an_accumulator_outside_its_combiner_is_refused() {
    let (m, mut p) = fused_row_sum();
    let e = elemental(&mut p);
    let elem = e.outputs[0].elem;
    e.nodes.push(kernel::elemental::Expr { node: Node::Acc { red: 0, i: 0 }, elem });
    e.origins.push(None);
    e.outputs[0].expr = ExprId(e.nodes.len() as u32 - 1);
    let err = verify(&m, &p).unwrap_err();
    assert!(err.contains("Acc") && err.contains("at the outer index"), "{err}");
}

#[test]
fn a_load_past_its_input_is_refused() {
    let (m, mut p) = fused_row_sum();
    let input = p.kernels[0].inputs[0];
    // The input is 32 elements; pretend it holds 16 (and the parameter with it).
    p.buffers[input].shape = hloscope_core::ir::Shape::new(hloscope_core::ir::ElementType::F32, vec![2, 8]);
    let err = verify(&m, &p).unwrap_err();
    assert!(err.contains("loads input 0 at [0, 31], outside its 16 elements"), "{err}");
}

#[test]
fn stale_chains_and_a_stale_arena_are_refused() {
    // A softmax plans as row kernels forming one chain (rows of 64 KiB... here 1024 f32
    // per row, 512 rows: 2 MiB touched).
    let mut m = parse(
        "HloModule m
max { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b) }
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b) }
ENTRY main {
  x = f32[512,1024] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[512] reduce(x, ninf), dimensions={1}, to_apply=max
  b = f32[512,1024] broadcast(mx), dimensions={0}
  s = f32[512,1024] subtract(x, b)
  e = f32[512,1024] exponential(s)
  z = f32[] constant(0)
  sum = f32[512] reduce(e, z), dimensions={1}, to_apply=add
  bs = f32[512,1024] broadcast(sum), dimensions={0}
  ROOT d = f32[512,1024] divide(e, bs)
}",
    );
    run_pipeline(&mut m, &PipelineConfig::default()).unwrap();
    let p = kernel::plan(&m).unwrap();
    verify(&m, &p).unwrap();
    assert_eq!(p.chains.len(), 1, "{p}");

    // Renumbering kernels without deriving chains again (what the CPU fallback once did).
    let mut stale = p.clone();
    let c = stale.chains[0].clone();
    stale.chains[0] = c.start + 1..c.end + 1;
    let err = verify(&m, &stale).unwrap_err();
    assert!(err.contains("row chains") && err.contains("not the ones the kernels prove now"), "{err}");

    // Two buffers live at once in one region.
    let mut overlap = p.clone();
    let live_together = (0..overlap.buffers.len())
        .flat_map(|a| (0..overlap.buffers.len()).map(move |b| (a, b)))
        .find(|&(a, b)| {
            let (la, lb) = (overlap.arena.live[a], overlap.arena.live[b]);
            a != b && overlap.arena.offsets[a] != overlap.arena.offsets[b] && la.0 <= lb.1 && lb.0 <= la.1
        })
        .expect("two buffers live at once");
    overlap.arena.offsets[live_together.1] = overlap.arena.offsets[live_together.0];
    let err = verify(&m, &overlap).unwrap_err();
    assert!(err.contains("share bytes"), "{err}");

    // Without row chains (a target that never interleaves), the same kernels verify
    // with no chain, and a chain left over is refused.
    let caps = TargetCaps { row_chains: false, ..TargetCaps::cpu() };
    let unchained = kernel::plan_computation_with(&m, m.entry, &caps).unwrap();
    assert!(unchained.chains.is_empty());
    verify(&m, &unchained).unwrap();
    let mut leftover = unchained.clone();
    leftover.chains = p.chains.clone();
    assert!(verify(&m, &leftover).unwrap_err().contains("row chains"));
}

#[test]
fn the_arena_follows_the_targets_alignment() {
    let m = parse(
        "HloModule m
ENTRY main {
  x = f32[3] parameter(0)
  e = f32[3] exponential(x)
  n = f32[3] negate(e)
  ROOT t = (f32[3], f32[3]) tuple(e, n)
}",
    );
    let cpu = kernel::plan(&m).unwrap();
    let wide =
        kernel::plan_computation_with(&m, m.entry, &TargetCaps { arena_alignment: 256, ..TargetCaps::cpu() }).unwrap();
    // Three pinned 12-byte buffers (parameter and two results), each in its own region.
    assert_eq!(cpu.arena.offsets, vec![0, 64, 128]);
    assert_eq!(cpu.arena.arena_bytes, 192);
    assert_eq!(wide.arena.offsets, vec![0, 256, 512]);
    assert_eq!(wide.arena.arena_bytes, 768);
    verify(&m, &wide).unwrap();
    // An assignment made for another alignment is not the target's.
    let mut mixed = wide.clone();
    mixed.arena = cpu.arena.clone();
    assert!(verify(&m, &mixed).is_err());
}

#[test]
fn a_refused_element_type_names_the_instruction() {
    let m = hloscope_core::parse::parse_module(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf64> {
  %0 = stablehlo.exponential %x : tensor<4xf32>
  %1 = stablehlo.convert %0 : (tensor<4xf32>) -> tensor<4xf64>
  return %1 : tensor<4xf64>
}",
    )
    .unwrap();
    let caps = TargetCaps {
        name: "webgpu".into(),
        refused_elems: vec![hloscope_core::ir::ElementType::F64],
        ..TargetCaps::cpu()
    };
    let err = kernel::plan_computation_with(&m, m.entry, &caps).unwrap_err();
    assert!(err.starts_with("3:8: %convert"), "the location and instruction come first: {err}");
    assert!(err.contains("convert computes in f64, which the webgpu target does not support"), "{err}");
    // Refused inside a fusion body too.
    let mut fused = m.clone();
    run_pipeline(&mut fused, &PipelineConfig::default()).unwrap();
    let err = kernel::plan_computation_with(&fused, fused.entry, &caps).unwrap_err();
    assert!(err.contains("f64, which the webgpu target does not support"), "{err}");
    assert!(kernel::plan(&m).is_ok());
}
