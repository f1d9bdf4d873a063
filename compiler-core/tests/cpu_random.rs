//! Randomized CPU target check: proptest builds small graphs (`common/random_graphs.rs`)
//! from steps whose f32 results do not depend on evaluation order or approximations
//! (no transcendentals, no sums), so the compiled program — the cpu pipeline, fused
//! kernels, vector loops — must match the interpreter bit for bit. Transcendentals and
//! reassociated sums are checked with stated bounds in `cpu_math.rs` and `cpu_simd.rs`.
#![cfg(feature = "cpu")]

use crate::random_graphs;

use hloscope_core::interp::Interpreter;
use hloscope_core::kernel::KernelKind;
use hloscope_core::targets::cpu;
use proptest::prelude::*;
use random_graphs::{arguments, case, program, same_bits, Ops};

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn compiled_random_graphs_match_the_interpreter_bit_for_bit(
        (n, steps, values) in case(Ops::Exact, 24),
    ) {
        let text = program(n, &steps);
        let module = hloscope_core::parse::mlir::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let args = arguments(n, &values);
        let want = Interpreter::new(&module).run(&args).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let optimized = cpu::optimize(&module).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let exe = cpu::compile(&optimized).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let interpreted = exe.plan().kernels.iter().find(|k| matches!(k.kind, KernelKind::Opaque { .. }));
        prop_assert!(interpreted.is_none(), "every kernel is compiled, but\n{}", exe.plan().summary());
        let got = exe.run(&args).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert!(same_bits(&want, &got), "the CPU differs from the interpreter for\n{}\nplan:\n{}\ninterpreter: {:?}\ncpu: {:?}", text, exe.plan().summary(), want, got);
    }
}
