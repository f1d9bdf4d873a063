//! Randomized pipeline check: proptest builds small graphs of elementwise ops,
//! reductions, broadcasts and data movement (the stuff fusion works on, see
//! `common/random_graphs.rs`), and the whole default pipeline must leave their results
//! bit-identical on the interpreter, with no more kernels than before.

use crate::random_graphs;

use hloscope_core::interp::Interpreter;
use hloscope_core::passes::pipeline::{run_pipeline, PipelineConfig};
use proptest::prelude::*;
use random_graphs::{arguments, case, program, same_bits, Ops};

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn the_pipeline_keeps_random_graphs_bit_identical(
        (n, steps, values) in case(Ops::All, 24),
    ) {
        let text = program(n, &steps);
        let mut module = hloscope_core::parse::mlir::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let args = arguments(n, &values);
        let before = Interpreter::new(&module).run(&args).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let snapshots = run_pipeline(&mut module, &PipelineConfig { snapshots: false, ..Default::default() })
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let after = Interpreter::new(&module).run(&args).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(same_bits(&before, &after), "results differ after the pipeline for\n{}", text);
        // Fusion never adds kernels.
        let first = &snapshots[0].cost;
        let last = &snapshots.last().unwrap().cost;
        prop_assert!(last.kernels <= first.kernels, "{} kernels became {}", first.kernels, last.kernels);
    }
}
