//! Layout assignment, scheduling and buffer assignment on programs JAX wrote
//! (`tests/mlir_samples/`, fused first as a pipeline would): every module still
//! verifies and computes the same bits on random inputs, and the buffer report is
//! consistent (the arena holds at least the peak; every temporary value has an
//! allocation large enough for it).

use hloscope_core::ir::{Data, ElementType, Literal, Module, Shape, Value};
use hloscope_core::passes::buffers::{assign_buffers, AllocationKind};
use hloscope_core::passes::fusion::FusionPass;
use hloscope_core::passes::layout::LayoutAssignment;
use hloscope_core::passes::schedule::Scheduler;
use hloscope_core::passes::{Pass, PassLog};

/// Reproducible inputs: floats in [-2, 2), integers in [0, 6), random preds.
fn random_inputs(m: &Module, seed: u64) -> Vec<Value> {
    let mut state = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        state >> 11
    };
    m.entry_comp()
        .param_types()
        .iter()
        .map(|t| {
            let s = t.as_array().expect("array parameter");
            let n = s.num_elements();
            let shape = Shape::new(s.elem, s.dims.clone());
            let lit = if s.elem.is_float() {
                let v: Vec<f64> = (0..n).map(|_| (next() as f64 / (1u64 << 53) as f64) * 4.0 - 2.0).collect();
                Literal::from_f64s(shape, &v)
            } else if s.elem == ElementType::Pred {
                Literal::new(shape, Data::Pred((0..n).map(|_| next() % 2 == 1).collect()))
            } else {
                let v: Vec<i64> = (0..n).map(|_| (next() % 6) as i64).collect();
                Literal::from_i64s(shape, &v)
            };
            Value::Array(lit)
        })
        .collect()
}

#[test]
fn samples_keep_their_meaning() {
    let dir = format!("{}/tests/mlir_samples", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "mlir"))
        .collect();
    names.sort();
    assert!(!names.is_empty());
    let mut bitcasts = 0;
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(m) = hloscope_core::parse::mlir::parse(&text) else { continue };
        let mut after = m.clone();
        let mut log = PassLog::default();
        FusionPass::default().run(&mut after, &mut log);
        LayoutAssignment.run(&mut after, &mut log);
        Scheduler.run(&mut after, &mut log);
        bitcasts += log.rewrites.len();
        hloscope_core::verify::verify(&after).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for seed in 0..2 {
            let args = random_inputs(&m, seed);
            if let (Ok(w), Ok(g)) = (hloscope_core::interp::run(&m, &args), hloscope_core::interp::run(&after, &args)) {
                let (w, g) = (w.flatten(), g.flatten());
                assert_eq!(w.len(), g.len());
                for (a, b) in w.iter().zip(&g) {
                    assert_eq!(a.to_le_bytes(), b.to_le_bytes(), "{}: results differ", path.display());
                }
            }
        }
        let ba = assign_buffers(&after);
        assert!(ba.total_allocated_bytes >= ba.peak_bytes, "{}", path.display());
        for v in &ba.values {
            let a = &ba.allocations[v.allocation];
            assert!(a.size >= v.size && a.values.iter().any(|&x| ba.values[x].inst == v.inst));
            if a.kind == AllocationKind::Temp {
                assert!(a.arena_offset + a.size <= ba.arena_bytes);
            }
        }
    }
    assert!(bitcasts > 0, "some sample has a reshape or transpose that becomes a bitcast");
}
