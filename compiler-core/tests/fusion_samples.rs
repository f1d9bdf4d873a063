//! The fusion pass on programs JAX wrote (`tests/mlir_samples/`, made by `generate.py`):
//! kernel counts and bytes after fusion for the MLP and the softmax (hand-computed, f32),
//! and, for every sample, bit-identical interpreter outputs before and after fusion.

use hloscope_core::cost::{module_cost, profiles};
use hloscope_core::ir::{FusionKind, Module, Op};
use hloscope_core::passes::fusion::{FusionConfig, FusionPass};
use hloscope_core::passes::{Decision, Pass, PassLog};

fn sample(name: &str) -> Module {
    let path = format!("{}/tests/mlir_samples/{name}.mlir", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    hloscope_core::parse::mlir::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Fuses `m` and checks that it computes the same bits on random inputs (or fails the
/// same way, for ops the interpreter does not run).
fn fuse(m: &Module) -> (Module, Vec<Decision>) {
    let mut fused = m.clone();
    let mut log = PassLog::default();
    FusionPass::new(FusionConfig::default()).run(&mut fused, &mut log);
    hloscope_core::verify::verify(&fused).unwrap_or_else(|e| panic!("the fused module is invalid: {e}"));
    for seed in 0..4 {
        let args = hloscope_core::interp::random_inputs(m, seed);
        let want = hloscope_core::interp::run(m, &args);
        let got = hloscope_core::interp::run(&fused, &args);
        match (want, got) {
            (Ok(w), Ok(g)) => {
                let (w, g) = (w.flatten(), g.flatten());
                assert_eq!(w.len(), g.len());
                for (a, b) in w.iter().zip(&g) {
                    assert_eq!(a.shape, b.shape);
                    let same = a.data == b.data
                        || a.to_f64_vec().iter().zip(b.to_f64_vec()).all(|(x, y)| x.to_bits() == y.to_bits());
                    assert!(same, "outputs differ: {a:?} vs {b:?}");
                }
            }
            (Err(_), Err(_)) => {}
            (w, g) => panic!("before: {w:?}, after: {g:?}"),
        }
    }
    (fused, log.decisions)
}

fn cost(m: &Module) -> (usize, u64) {
    let c = module_cost(m, &profiles::A100);
    (c.kernel_count(), c.bytes_moved)
}

fn kinds(m: &Module) -> Vec<FusionKind> {
    let e = m.entry_comp();
    e.order
        .iter()
        .filter_map(|&i| match e.inst(i).op {
            Op::Fusion { kind, .. } => Some(kind),
            _ => None,
        })
        .collect()
}

/// relu(x @ W1 + b1) @ W2 + b2: two GEMMs, each with its epilogue in its kernel.
#[test]
fn jax_mlp_is_two_output_fusions() {
    let m = sample("mlp");
    assert_eq!(cost(&m).0, 10);
    let (fused, d) = fuse(&m);
    // Kernel 1 reads x (512), W1 (2048), b1 (128), writes h (1024); kernel 2 reads h,
    // W2 (512), b2 (16), writes the result (128).
    assert_eq!(cost(&fused), (2, 3712 + 1680));
    assert_eq!(kinds(&fused), vec![FusionKind::Output, FusionKind::Output]);
    // h is the second dot's operand: the library call reads it from memory.
    assert!(d.iter().any(|d| !d.taken && d.rule == "refuse-library-operand"));
}

#[test]
fn jax_softmax_is_three_kernels() {
    let m = sample("softmax");
    assert_eq!(cost(&m).0, 11);
    let (fused, d) = fuse(&m);
    // max: reads x (160), writes 16; exp + sum: reads x and max, writes exp (160) and
    // sum (16); divide: reads exp and sum, writes 160.
    assert_eq!(cost(&fused), (3, 176 + 352 + 336));
    assert_eq!(kinds(&fused), vec![FusionKind::Input, FusionKind::Input, FusionKind::Loop]);
    assert!(d.iter().any(|d| d.taken && d.rule == "multi-output-fusion"));
}

#[test]
fn every_jax_sample_computes_the_same_after_fusion() {
    for name in ["mlp", "softmax", "while_loop", "cond", "scan", "argmax", "sort"] {
        let m = sample(name);
        let (fused, _) = fuse(&m);
        // Fusion never adds kernels or traffic on these programs.
        let (before, after) = (cost(&m), cost(&fused));
        assert!(after.0 <= before.0 && after.1 <= before.1, "{name}: {before:?} -> {after:?}");
    }
}
