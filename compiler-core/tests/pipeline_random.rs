//! Randomized pipeline check: proptest builds small graphs of elementwise ops, row
//! reductions and broadcasts (the stuff fusion works on), and the whole default pipeline
//! must leave their results bit-identical on the interpreter.

use hloscope_core::interp::Interpreter;
use hloscope_core::ir::{Data, ElementType, Literal, Shape, Value};
use hloscope_core::passes::pipeline::{run_pipeline, PipelineConfig};
use proptest::prelude::*;

/// One step of a generated program; operands are indices of earlier `[4,8]` values
/// (taken modulo how many exist).
#[derive(Clone, Debug)]
enum Step {
    Unary(&'static str, usize),
    Binary(&'static str, usize, usize),
    /// Reduce a value over its rows with `op`, then broadcast the `[4]` result back.
    RowReduce(&'static str, usize),
    /// Reduce over the columns (a column reduction), broadcast back over dim 1.
    ColReduce(&'static str, usize),
    /// Multiply by a broadcast scalar constant.
    Scale(usize, i8),
}

fn step() -> impl Strategy<Value = Step> {
    let unary = prop::sample::select(vec!["exponential", "negate", "tanh", "abs", "sqrt", "logistic"]);
    let binary = prop::sample::select(vec!["add", "multiply", "maximum", "subtract", "divide", "minimum"]);
    let reducer = prop::sample::select(vec!["add", "maximum", "minimum"]);
    prop_oneof![
        (unary, any::<usize>()).prop_map(|(o, a)| Step::Unary(o, a)),
        (binary, any::<usize>(), any::<usize>()).prop_map(|(o, a, b)| Step::Binary(o, a, b)),
        (reducer.clone(), any::<usize>()).prop_map(|(o, a)| Step::RowReduce(o, a)),
        (reducer, any::<usize>()).prop_map(|(o, a)| Step::ColReduce(o, a)),
        (any::<usize>(), any::<i8>()).prop_map(|(a, c)| Step::Scale(a, c)),
    ]
}

/// The program as StableHLO text: two `f32[4,8]` parameters, then the steps; returns
/// the last value and one value from the middle (so that fusion sees several outputs).
fn program(steps: &[Step]) -> String {
    let t = "tensor<4x8xf32>";
    let mut body = String::new();
    let mut values = vec!["%arg0".to_string(), "%arg1".to_string()];
    for (i, s) in steps.iter().enumerate() {
        let pick = |k: usize| values[k % values.len()].clone();
        let v = format!("%v{i}");
        let line = match s {
            Step::Unary(op, a) => format!("{v} = stablehlo.{op} {} : {t}", pick(*a)),
            Step::Binary(op, a, b) => format!("{v} = stablehlo.{op} {}, {} : {t}", pick(*a), pick(*b)),
            Step::RowReduce(op, a) | Step::ColReduce(op, a) => {
                let (dim, keep, n) = if matches!(s, Step::RowReduce(..)) { (1, 0, 4) } else { (0, 1, 8) };
                let init = match *op {
                    "add" => "0.000000e+00",
                    "maximum" => "0xFF800000",
                    _ => "0x7F800000",
                };
                format!(
                    "%i{i} = stablehlo.constant dense<{init}> : tensor<f32>\n  \
                     %r{i} = stablehlo.reduce({} init: %i{i}) applies stablehlo.{op} across dimensions = [{dim}] : ({t}, tensor<f32>) -> tensor<{n}xf32>\n  \
                     {v} = stablehlo.broadcast_in_dim %r{i}, dims = [{keep}] : (tensor<{n}xf32>) -> {t}",
                    pick(*a)
                )
            }
            Step::Scale(a, c) => format!(
                "%c{i} = stablehlo.constant dense<{c}.0> : tensor<f32>\n  \
                 %b{i} = stablehlo.broadcast_in_dim %c{i}, dims = [] : (tensor<f32>) -> {t}\n  \
                 {v} = stablehlo.multiply {}, %b{i} : {t}",
                pick(*a)
            ),
        };
        body.push_str("  ");
        body.push_str(&line);
        body.push('\n');
        values.push(v);
    }
    let last = values.last().unwrap();
    let middle = &values[values.len() / 2];
    format!(
        "func.func @main(%arg0: {t}, %arg1: {t}) -> ({t}, {t}) {{\n{body}  return {last}, {middle} : {t}, {t}\n}}\n"
    )
}

fn same_bits(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Tuple(x), Value::Tuple(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_bits(p, q)),
        (Value::Array(x), Value::Array(y)) => match (&x.data, &y.data) {
            (Data::F(p), Data::F(q)) => p.iter().zip(q).all(|(u, v)| (u.is_nan() && v.is_nan()) || u.to_bits() == v.to_bits()),
            _ => x == y,
        },
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn the_pipeline_keeps_random_graphs_bit_identical(
        steps in prop::collection::vec(step(), 1..14),
        inputs in prop::collection::vec(-3.0f64..3.0, 64),
    ) {
        let text = program(&steps);
        let mut module = hloscope_core::parse::mlir::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let shape = Shape::new(ElementType::F32, vec![4, 8]);
        let args = [
            Value::Array(Literal::from_f64s(shape.clone(), &inputs[..32])),
            Value::Array(Literal::from_f64s(shape, &inputs[32..])),
        ];
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
