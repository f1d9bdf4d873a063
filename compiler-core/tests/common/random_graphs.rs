//! Random programs for the randomized tests: proptest strategies for small graphs of
//! `f32[n,n]` values (n from 1 to 33, and now and then 260 so that kernels split across
//! threads; odd sizes leave scalar tails after vector loops) built from elementwise ops, row and column reductions broadcast
//! back, data movement (transpose, reverse, slices with concatenate or pad) and scaled
//! copies — the material fusion works on — printed as StableHLO text.
//!
//! [`Ops::All`] draws every step; [`Ops::Exact`] only steps whose f32 results do not
//! depend on evaluation order or on approximations (no transcendentals, no sums), so a
//! compiled target must match the interpreter bit for bit.
#![allow(dead_code)]

use hloscope_core::ir::{Data, ElementType, Literal, Shape, Value};
use proptest::prelude::*;

/// One step; operands are indices of earlier values (taken modulo how many exist).
#[derive(Clone, Debug)]
pub enum Step {
    Unary(&'static str, usize),
    Binary(&'static str, usize, usize),
    /// `select(a > b, a, c)`.
    SelectGreater(usize, usize, usize),
    /// Reduce over dimension 1 (a row reduction) or 0 (a column reduction) with `op`,
    /// then broadcast the `[n]` result back along the reduced dimension.
    Reduce(&'static str, i64, usize),
    Transpose(usize),
    Reverse(i64, usize),
    /// The two halves along a dimension swapped: concatenate(slice(hi), slice(lo)).
    SwapHalves(i64, usize),
    /// The first n - 2 rows, padded with one row of `c` above and below.
    PadRows(usize, i8),
    /// Multiplied by a broadcast scalar constant.
    Scale(usize, i8),
}

/// Which steps a program may use.
#[derive(Copy, Clone, Debug)]
pub enum Ops {
    All,
    Exact,
}

pub fn step(ops: Ops) -> BoxedStrategy<Step> {
    let (unary, reducers): (Vec<&'static str>, Vec<&'static str>) = match ops {
        Ops::All => (
            vec!["exponential", "negate", "tanh", "abs", "sqrt", "logistic", "floor", "sign"],
            vec!["add", "maximum", "minimum"],
        ),
        Ops::Exact => (vec!["negate", "abs", "sqrt", "floor", "ceil", "sign"], vec!["maximum", "minimum"]),
    };
    let unary = prop::sample::select(unary);
    let binary = prop::sample::select(vec!["add", "multiply", "maximum", "subtract", "divide", "minimum"]);
    let reducer = prop::sample::select(reducers);
    let i = any::<usize>;
    prop_oneof![
        (unary, i()).prop_map(|(o, a)| Step::Unary(o, a)),
        (binary, i(), i()).prop_map(|(o, a, b)| Step::Binary(o, a, b)),
        (i(), i(), i()).prop_map(|(a, b, c)| Step::SelectGreater(a, b, c)),
        (reducer, 0..2i64, i()).prop_map(|(o, d, a)| Step::Reduce(o, d, a)),
        i().prop_map(Step::Transpose),
        (0..2i64, i()).prop_map(|(d, a)| Step::Reverse(d, a)),
        (0..2i64, i()).prop_map(|(d, a)| Step::SwapHalves(d, a)),
        (i(), any::<i8>()).prop_map(|(a, c)| Step::PadRows(a, c)),
        (i(), any::<i8>()).prop_map(|(a, c)| Step::Scale(a, c)),
    ]
    .boxed()
}

/// A program's size and steps, and its inputs (`2 * n * n` values).
pub fn case(ops: Ops, max_steps: usize) -> impl Strategy<Value = (usize, Vec<Step>, Vec<f64>)> {
    prop_oneof![20 => prop::sample::select(vec![1usize, 2, 3, 5, 8, 13, 17, 33]), 1 => Just(260usize)]
        .prop_flat_map(move |n| (Just(n), prop::collection::vec(step(ops), 1..max_steps), inputs(2 * n * n)))
}

/// The program as StableHLO text: two `f32[n,n]` parameters, then the steps; returns
/// the last value and one from the middle (so that fusion sees several outputs).
pub fn program(n: usize, steps: &[Step]) -> String {
    let t = format!("tensor<{n}x{n}xf32>");
    let t = t.as_str();
    let mut body = String::new();
    let mut values = vec!["%arg0".to_string(), "%arg1".to_string()];
    for (i, s) in steps.iter().enumerate() {
        let pick = |k: usize| values[k % values.len()].clone();
        let v = format!("%v{i}");
        let line = match s {
            Step::Unary(op, a) => format!("{v} = stablehlo.{op} {} : {t}", pick(*a)),
            Step::Binary(op, a, b) => format!("{v} = stablehlo.{op} {}, {} : {t}", pick(*a), pick(*b)),
            Step::SelectGreater(a, b, c) => format!(
                "%p{i} = stablehlo.compare GT, {a}, {b} : ({t}, {t}) -> tensor<{n}x{n}xi1>\n  \
                 {v} = stablehlo.select %p{i}, {a}, {c} : tensor<{n}x{n}xi1>, {t}",
                a = pick(*a),
                b = pick(*b),
                c = pick(*c)
            ),
            Step::Reduce(op, dim, a) => {
                let init = match *op {
                    "add" => "0.000000e+00",
                    "maximum" => "0xFF800000",
                    _ => "0x7F800000",
                };
                format!(
                    "%i{i} = stablehlo.constant dense<{init}> : tensor<f32>\n  \
                     %r{i} = stablehlo.reduce({} init: %i{i}) applies stablehlo.{op} across dimensions = [{dim}] : ({t}, tensor<f32>) -> tensor<{n}xf32>\n  \
                     {v} = stablehlo.broadcast_in_dim %r{i}, dims = [{keep}] : (tensor<{n}xf32>) -> {t}",
                    pick(*a),
                    keep = 1 - dim
                )
            }
            Step::Transpose(a) => format!("{v} = stablehlo.transpose {}, dims = [1, 0] : ({t}) -> {t}", pick(*a)),
            Step::Reverse(d, a) => format!("{v} = stablehlo.reverse {}, dims = [{d}] : {t}", pick(*a)),
            Step::SwapHalves(d, a) => {
                let h = n / 2;
                let part = |from: usize, to: usize| {
                    let rows = if *d == 0 { (from, to) } else { (0, n) };
                    let cols = if *d == 0 { (0, n) } else { (from, to) };
                    let ty = format!("tensor<{}x{}xf32>", rows.1 - rows.0, cols.1 - cols.0);
                    (format!("[{}:{}, {}:{}]", rows.0, rows.1, cols.0, cols.1), ty)
                };
                let ((lo, lo_t), (hi, hi_t)) = (part(0, h), part(h, n));
                format!(
                    "%lo{i} = stablehlo.slice {a} {lo} : ({t}) -> {lo_t}\n  \
                     %hi{i} = stablehlo.slice {a} {hi} : ({t}) -> {hi_t}\n  \
                     {v} = stablehlo.concatenate %hi{i}, %lo{i}, dim = {d} : ({hi_t}, {lo_t}) -> {t}",
                    a = pick(*a)
                )
            }
            Step::PadRows(a, c) => {
                let k = n.saturating_sub(2);
                format!(
                    "%s{i} = stablehlo.slice {} [0:{k}, 0:{n}] : ({t}) -> tensor<{k}x{n}xf32>\n  \
                     %c{i} = stablehlo.constant dense<{c}.0> : tensor<f32>\n  \
                     {v} = stablehlo.pad %s{i}, %c{i}, low = [1, 0], high = [{high}, 0], interior = [0, 0] : (tensor<{k}x{n}xf32>, tensor<f32>) -> {t}",
                    pick(*a),
                    high = n - k - 1
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
    let last = values.last().cloned().unwrap_or_default();
    let middle = &values[values.len() / 2];
    format!(
        "func.func @main(%arg0: {t}, %arg1: {t}) -> ({t}, {t}) {{\n{body}  return {last}, {middle} : {t}, {t}\n}}\n"
    )
}

/// The two `f32[n,n]` arguments from `2 * n * n` values.
pub fn arguments(n: usize, values: &[f64]) -> [Value; 2] {
    let shape = Shape::new(ElementType::F32, vec![n as i64, n as i64]);
    let (a, b) = values.split_at(n * n);
    [Value::Array(Literal::from_f64s(shape.clone(), a)), Value::Array(Literal::from_f64s(shape, b))]
}

/// Inputs: mostly in [-3, 3], with zeros of both signs and small integers mixed in.
pub fn inputs(len: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(
        prop_oneof![6 => -3.0f64..3.0, 1 => Just(0.0), 1 => Just(-0.0), 2 => (-4i8..5).prop_map(f64::from)],
        len,
    )
}

/// Bit-identical values (any NaN equals any NaN).
pub fn same_bits(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Tuple(x), Value::Tuple(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_bits(p, q)),
        (Value::Array(x), Value::Array(y)) => match (&x.data, &y.data) {
            (Data::F(p), Data::F(q)) => {
                p.len() == q.len()
                    && p.iter().zip(q).all(|(u, v)| (u.is_nan() && v.is_nan()) || u.to_bits() == v.to_bits())
            }
            _ => x == y,
        },
        _ => false,
    }
}
