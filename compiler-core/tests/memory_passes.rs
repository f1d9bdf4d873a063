//! Layout assignment, scheduling and buffer assignment on programs JAX wrote
//! (`tests/mlir_samples/`, fused first as a pipeline would): every module still
//! verifies and computes the same bits on random inputs, and the buffer report is
//! consistent (the arena holds at least the peak; every temporary value has an
//! allocation large enough for it).

use hloscope_core::passes::buffers::{assign_buffers, AllocationKind};
use hloscope_core::passes::fusion::FusionPass;
use hloscope_core::passes::layout::LayoutAssignment;
use hloscope_core::passes::schedule::Scheduler;
use hloscope_core::passes::{Pass, PassLog};

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
            let args = hloscope_core::interp::random_inputs(&m, seed);
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
