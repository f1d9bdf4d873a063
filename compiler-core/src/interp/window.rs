//! Interpreter: `reduce_window` (variadic) and `select_and_scatter`.
//!
//! reduce_window follows the StableHLO reference exactly: the inputs are conceptually
//! padded (low/high padding and base-dilation holes) with the init values, and every
//! window element, padding included, is folded into an accumulator that starts at the
//! init values, in row-major window order. select_and_scatter walks each source
//! element's window over the operand (low padding shifts it; positions outside the
//! operand are skipped), keeps the first element the `select` comparator prefers
//! (a candidate replaces the current choice only when `select(current, candidate)` is
//! false), then folds the source value into that output element with `scatter`; the
//! output starts filled with the init value.

use super::index::{
    array_arg, check_attr_range, in_bounds, next_index, offset, pack, result_shape, result_shapes, set_scalar, Body,
};
use super::Interpreter;
use crate::ir::{Instruction, Literal, Op, Scalar, Value};

/// Number of windows along one dimension (the spec's `num_windows`).
fn num_windows(size: i64, window: i64, stride: i64, base_dil: i64, win_dil: i64, pad: (i64, i64)) -> i64 {
    let dilated = if size == 0 { 0 } else { (size - 1) * base_dil + 1 };
    let padded = pad.0 + dilated + pad.1;
    let dilated_window = if window == 0 { 0 } else { (window - 1) * win_dil + 1 };
    if padded <= 0 || dilated_window > padded {
        0
    } else {
        (padded - dilated_window) / stride + 1
    }
}

fn check_len(what: &str, v: &[impl Sized], rank: usize) -> Result<(), String> {
    if v.len() != rank {
        return Err(format!("{what} has {} entries, expected {rank}", v.len()));
    }
    Ok(())
}

fn check_positive(what: &str, v: &[i64]) -> Result<(), String> {
    if let Some(x) = v.iter().find(|&&x| x <= 0) {
        return Err(format!("{what} must be positive, got {x}"));
    }
    Ok(())
}

/// Number of positions in a window, refusing sizes that overflow.
fn window_size(window: &[i64]) -> Result<usize, String> {
    window
        .iter()
        .try_fold(1usize, |acc, &x| acc.checked_mul(x as usize))
        .ok_or_else(|| format!("window {window:?} is too large"))
}

fn check_window_ranges(window: &[i64], strides: &[i64], padding: &[(i64, i64)]) -> Result<(), String> {
    check_attr_range("window dimension", window)?;
    check_attr_range("stride", strides)?;
    check_attr_range("padding", padding.iter().flat_map(|(lo, hi)| [lo, hi]))
}

pub(super) fn reduce_window(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::ReduceWindow(a) = &inst.op else { return Err("not a reduce_window".into()) };
    if args.is_empty() || !args.len().is_multiple_of(2) {
        return Err(format!("reduce_window takes N inputs and N init values, got {} operands", args.len()));
    }
    let n = args.len() / 2;
    let inputs: Vec<&Literal> = (0..n).map(|i| array_arg(args, i)).collect::<Result<_, _>>()?;
    let inits: Vec<&Literal> = (0..n).map(|i| array_arg(args, n + i)).collect::<Result<_, _>>()?;
    let dims = inputs[0].shape.dims.clone();
    let rank = dims.len();
    for (i, (x, init)) in inputs.iter().zip(&inits).enumerate() {
        if x.shape.dims != dims {
            return Err("reduce_window inputs must all have the same dimensions".into());
        }
        if init.shape.rank() != 0 || init.elem() != x.elem() {
            return Err(format!("init value {i} must be a scalar of the input's type {}", x.elem()));
        }
    }
    check_len("window_dimensions", &a.window_dims, rank)?;
    check_len("window_strides", &a.strides, rank)?;
    check_len("base_dilations", &a.base_dilations, rank)?;
    check_len("window_dilations", &a.window_dilations, rank)?;
    check_len("padding", &a.padding, rank)?;
    check_positive("window_dimensions", &a.window_dims)?;
    check_positive("window_strides", &a.strides)?;
    check_positive("base_dilations", &a.base_dilations)?;
    check_positive("window_dilations", &a.window_dilations)?;
    check_window_ranges(&a.window_dims, &a.strides, &a.padding)?;
    check_attr_range("dilation", a.base_dilations.iter().chain(&a.window_dilations))?;
    let out_shapes = result_shapes(inst)?;
    if out_shapes.len() != n {
        return Err(format!("reduce_window of {n} inputs must have {n} results"));
    }
    let out_dims: Vec<i64> = (0..rank)
        .map(|d| {
            num_windows(
                dims[d],
                a.window_dims[d],
                a.strides[d],
                a.base_dilations[d],
                a.window_dilations[d],
                a.padding[d],
            )
        })
        .collect();
    for s in &out_shapes {
        if s.dims[..] != out_dims[..] {
            return Err(format!("result dims {:?} differ from the window count {out_dims:?}", s.dims));
        }
    }
    let mut results: Vec<Literal> =
        out_shapes.iter().zip(&inits).map(|(s, init)| Literal::splat(s.clone(), init.get(0))).collect();
    for (r, init) in results.iter_mut().zip(&inits) {
        if r.elem() != init.elem() {
            return Err(format!("result type {} differs from the init type {}", r.elem(), init.elem()));
        }
    }
    let elems: Vec<_> = inputs.iter().map(|l| l.elem()).collect();
    let strides = inputs[0].shape.strides();
    let init_vals: Vec<Scalar> = inits.iter().map(|l| l.get(0)).collect();
    let total: usize = out_dims.iter().map(|&x| x as usize).product();
    let window_count = window_size(&a.window_dims)?;
    let mut oi = vec![0i64; rank];
    let mut wi = vec![0i64; rank];
    let mut src = vec![0i64; rank];
    let body = Body::new(interp, a.body, [elems.clone(), elems.clone()].concat(), n);
    let mut body_args = Vec::with_capacity(2 * n);
    for out_pos in 0..total {
        let mut acc = init_vals.clone();
        wi.iter_mut().for_each(|x| *x = 0);
        for _ in 0..window_count {
            // Position in the padded, dilated input; None means padding or a dilation hole.
            let mut inside = true;
            for d in 0..rank {
                let q = oi[d] * a.strides[d] + wi[d] * a.window_dilations[d] - a.padding[d].0;
                if q < 0 || q % a.base_dilations[d] != 0 {
                    inside = false;
                    break;
                }
                src[d] = q / a.base_dilations[d];
            }
            inside = inside && in_bounds(&src, &dims);
            body_args.clear();
            body_args.extend_from_slice(&acc);
            if inside {
                let at = offset(&src, &strides);
                body_args.extend(inputs.iter().map(|x| x.get(at)));
            } else {
                body_args.extend_from_slice(&init_vals);
            }
            acc = body.apply(interp, &body_args)?;
            next_index(&mut wi, &a.window_dims);
        }
        for (r, v) in results.iter_mut().zip(acc) {
            set_scalar(&mut r.data, out_pos, v)?;
        }
        next_index(&mut oi, &out_dims);
    }
    Ok(pack(results))
}

pub(super) fn select_and_scatter(
    interp: &mut Interpreter,
    inst: &Instruction,
    args: &[Value],
) -> Result<Value, String> {
    let Op::SelectAndScatter(a) = &inst.op else { return Err("not a select_and_scatter".into()) };
    let operand = array_arg(args, 0)?;
    let source = array_arg(args, 1)?;
    let init = array_arg(args, 2)?;
    let dims = &operand.shape.dims;
    let rank = dims.len();
    check_len("window_dimensions", &a.window_dims, rank)?;
    check_len("window_strides", &a.strides, rank)?;
    check_len("padding", &a.padding, rank)?;
    check_positive("window_dimensions", &a.window_dims)?;
    check_positive("window_strides", &a.strides)?;
    check_window_ranges(&a.window_dims, &a.strides, &a.padding)?;
    let expected: Vec<i64> =
        (0..rank).map(|d| num_windows(dims[d], a.window_dims[d], a.strides[d], 1, 1, a.padding[d])).collect();
    if source.shape.dims[..] != expected[..] {
        return Err(format!("source dims {:?} differ from the window count {expected:?}", source.shape.dims));
    }
    let out_shape = result_shape(inst)?;
    if !out_shape.same_dims(&operand.shape)
        || out_shape.elem != source.elem()
        || init.elem() != source.elem()
        || init.shape.rank() != 0
    {
        return Err(format!("result {} must have the operand's dims and the source/init type", out_shape));
    }
    let mut result = Literal::splat(out_shape.clone(), init.get(0));
    let op_elem = operand.elem();
    let elem = out_shape.elem;
    let strides = operand.shape.strides();
    let window_count = window_size(&a.window_dims)?;
    let select = Body::new(interp, a.select, vec![op_elem, op_elem], 1);
    let scatter = Body::new(interp, a.scatter, vec![elem, elem], 1);
    let mut si = vec![0i64; rank];
    let mut wi = vec![0i64; rank];
    let mut oi = vec![0i64; rank];
    for src_pos in 0..source.num_elements() {
        let mut selected: Option<(usize, Scalar)> = None;
        wi.iter_mut().for_each(|x| *x = 0);
        for _ in 0..window_count {
            for d in 0..rank {
                oi[d] = si[d] * a.strides[d] + wi[d] - a.padding[d].0;
            }
            if in_bounds(&oi, dims) {
                let at = offset(&oi, &strides);
                let cur = operand.get(at);
                let (sel_at, sel_v) = selected.unwrap_or((at, cur));
                let keep = select.apply(interp, &[sel_v, cur])?;
                selected = match keep[0] {
                    Scalar::Pred(true) => Some((sel_at, sel_v)),
                    Scalar::Pred(false) => Some((at, cur)),
                    other => return Err(format!("the select computation must return a pred, got {other:?}")),
                };
            }
            next_index(&mut wi, &a.window_dims);
        }
        if let Some((at, _)) = selected {
            let new = scatter.apply(interp, &[result.get(at), source.get(src_pos)])?;
            set_scalar(&mut result.data, at, new[0])?;
        }
        next_index(&mut si, &source.shape.dims);
    }
    Ok(Value::Array(result))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::ir::{
        BinaryOp, CmpDir, ElementType::*, Literal, Op, ReduceWindowAttrs, SelectAndScatterAttrs, Type, Value,
    };

    fn i64s(l: &Literal) -> Vec<i64> {
        (0..l.num_elements()).map(|i| l.get(i).as_i64()).collect()
    }

    fn attrs(
        body: crate::ir::CompId,
        window: &[i64],
        strides: &[i64],
        base: &[i64],
        wdil: &[i64],
        pad: &[(i64, i64)],
    ) -> ReduceWindowAttrs {
        ReduceWindowAttrs {
            window_dims: window.to_vec(),
            strides: strides.to_vec(),
            base_dilations: base.to_vec(),
            window_dilations: wdil.to_vec(),
            padding: pad.to_vec(),
            body,
        }
    }

    #[test]
    fn spec_example_with_dilations_and_padding() {
        // stablehlo interpret/reduce_window.mlir @reduce_window and @reduce_window_issue_1662.
        for (window, out_dims, want) in [(2, [2, 2], vec![0, 0, 3, 4]), (3, [1, 2], vec![5, 6])] {
            let mut m = TestModule::new();
            let body = m.binary_body(BinaryOp::Add, S64);
            let a = attrs(body, &[window, 1], &[4, 1], &[2, 1], &[3, 1], &[(2, 1), (0, 0)]);
            let input = ints(S64, &[3, 2], &[1, 2, 3, 4, 5, 6]);
            let out = m
                .run_op(
                    Op::ReduceWindow(Box::new(a)),
                    arr(S64, &out_dims),
                    &[input.into(), ints(S64, &[], &[0]).into()],
                )
                .unwrap();
            assert_eq!(i64s(out.as_array().unwrap()), want);
        }
    }

    /// `(a + b) + 0`: an add that is not a single op, so it is called, not run natively.
    fn called_add(m: &mut TestModule, e: crate::ir::ElementType) -> crate::ir::CompId {
        let t = arr(e, &[]);
        m.comp("add_zero", &[t.clone(), t.clone()], |b, p| {
            let s = b.op(Op::Binary(BinaryOp::Add), &[p[0], p[1]], t.clone());
            let z = b.constant(ints(e, &[], &[0]));
            b.op(Op::Binary(BinaryOp::Add), &[s, z], t.clone())
        })
    }

    #[test]
    fn called_body_matches_the_native_one() {
        let mut m = TestModule::new();
        let body = called_add(&mut m, S32);
        let a = attrs(body, &[2], &[1], &[1], &[1], &[(1, 0)]);
        let out = m
            .run_op(
                Op::ReduceWindow(Box::new(a)),
                arr(S32, &[3]),
                &[ints(S32, &[3], &[1, 2, 3]).into(), ints(S32, &[], &[10]).into()],
            )
            .unwrap();
        assert_eq!(i64s(out.as_array().unwrap()), [21, 13, 15]);
    }

    #[test]
    fn padding_counts_as_init_values() {
        // As in the StableHLO reference, padded positions hold the init value and are
        // folded in too: [pad, 1] with init 10 gives 10 + 10 + 1.
        let mut m = TestModule::new();
        let body = m.binary_body(BinaryOp::Add, S32);
        let a = attrs(body, &[2], &[1], &[1], &[1], &[(1, 0)]);
        let out = m
            .run_op(
                Op::ReduceWindow(Box::new(a)),
                arr(S32, &[3]),
                &[ints(S32, &[3], &[1, 2, 3]).into(), ints(S32, &[], &[10]).into()],
            )
            .unwrap();
        assert_eq!(i64s(out.as_array().unwrap()), [21, 13, 15]);
    }

    #[test]
    fn negative_padding_and_window_dilation() {
        // Padding (-1, 0) drops the first element: [2, 3, 4, 5, 6]; a window of 2 with
        // dilation 2 covers positions {0, 2}, {1, 3}, {2, 4}.
        let mut m = TestModule::new();
        let body = m.binary_body(BinaryOp::Max, F32);
        let a = attrs(body, &[2], &[1], &[1], &[2], &[(-1, 0)]);
        let input = f32s(&[6], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let out = m
            .run_op(
                Op::ReduceWindow(Box::new(a)),
                arr(F32, &[3]),
                &[input.into(), f32s(&[], &[f64::NEG_INFINITY]).into()],
            )
            .unwrap();
        assert_eq!(out.as_array().unwrap().to_f64_vec(), [4.0, 5.0, 6.0]);
    }

    #[test]
    fn variadic_argmax() {
        let mut m = TestModule::new();
        let (f, i, p) = (arr(F32, &[]), arr(S32, &[]), arr(Pred, &[]));
        let body = m.comp("argmax", &[f.clone(), i.clone(), f.clone(), i.clone()], |b, a| {
            let gt = b.op(Op::Compare { dir: CmpDir::Gt, kind: None }, &[a[2], a[0]], p.clone());
            let v = b.op(Op::Select, &[gt, a[2], a[0]], f.clone());
            let k = b.op(Op::Select, &[gt, a[3], a[1]], i.clone());
            b.tuple(&[v, k])
        });
        let a = attrs(body, &[3], &[2], &[1], &[1], &[(0, 0)]);
        let ty = Type::Tuple(vec![arr(F32, &[3]), arr(S32, &[3])]);
        let args: Vec<Value> = vec![
            f32s(&[8], &[3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]).into(),
            ints(S32, &[8], &[0, 1, 2, 3, 4, 5, 6, 7]).into(),
            f32s(&[], &[f64::NEG_INFINITY]).into(),
            ints(S32, &[], &[-1]).into(),
        ];
        let out = m.run_op(Op::ReduceWindow(Box::new(a)), ty, &args).unwrap().flatten();
        assert_eq!(out[0].to_f64_vec(), [4.0, 5.0, 9.0]);
        assert_eq!(i64s(&out[1]), [2, 4, 5]);
    }

    #[test]
    fn extreme_attributes_are_errors_not_overflows() {
        let args: [Value; 2] = [ints(S32, &[1, 1], &[1]).into(), ints(S32, &[], &[0]).into()];
        let window = |m: &mut TestModule, window: &[i64]| {
            let body = m.binary_body(BinaryOp::Add, S32);
            Op::ReduceWindow(Box::new(attrs(body, window, &[1, 1], &[1, 1], &[1, 1], &[(0, 0), (i64::MAX, 0)])))
        };
        // 2^80 window positions: over the limits (`crate::limits`), refused before it runs
        // (past 64 bits, whatever the limits).
        let mut m = TestModule::new();
        let op = window(&mut m, &[1 << 40, 1 << 40]);
        let err = m.run_op(op, arr(S32, &[1, 1]), &args).unwrap_err();
        assert_eq!(
            err.message,
            "the window [1099511627776, 1099511627776] has 1.2e24 positions, more than the limit of 536870912"
        );
        // Behind the limits, the interpreter's own range check.
        let mut m = TestModule::new();
        let op = window(&mut m, &[1 << 40, 1]);
        let err = m.run_op_unlimited(op, arr(S32, &[1, 1]), &args).unwrap_err();
        assert!(err.message.contains("out of the supported range"), "{err}");
    }

    #[test]
    fn rejects_wrong_result_shape() {
        let mut m = TestModule::new();
        let body = m.binary_body(BinaryOp::Add, S32);
        let a = attrs(body, &[2], &[1], &[1], &[1], &[(0, 0)]);
        let err = m
            .run_op(
                Op::ReduceWindow(Box::new(a)),
                arr(S32, &[4]),
                &[ints(S32, &[3], &[1, 2, 3]).into(), ints(S32, &[], &[0]).into()],
            )
            .unwrap_err();
        assert!(err.message.contains("window count"), "{err}");
    }

    fn select_and_scatter(
        dir: CmpDir,
        operand: Literal,
        source: Literal,
        window: &[i64],
        strides: &[i64],
        pad: &[(i64, i64)],
    ) -> Vec<i64> {
        let native = select_and_scatter_with(false, dir, operand.clone(), source.clone(), window, strides, pad);
        let called = select_and_scatter_with(true, dir, operand, source, window, strides, pad);
        assert_eq!(native, called, "native and called bodies disagree");
        native
    }

    fn select_and_scatter_with(
        called: bool,
        dir: CmpDir,
        operand: Literal,
        source: Literal,
        window: &[i64],
        strides: &[i64],
        pad: &[(i64, i64)],
    ) -> Vec<i64> {
        let mut m = TestModule::new();
        let e = operand.elem();
        let s = arr(e, &[]);
        let select = m.comp("select", &[s.clone(), s.clone()], |b, p| {
            let c = b.op(Op::Compare { dir, kind: None }, &[p[0], p[1]], arr(Pred, &[]));
            if called {
                let t = b.constant(preds(&[], &[true]));
                b.op(Op::Binary(BinaryOp::And), &[c, t], arr(Pred, &[]))
            } else {
                c
            }
        });
        let scatter = if called { called_add(&mut m, e) } else { m.binary_body(BinaryOp::Add, e) };
        let a = SelectAndScatterAttrs {
            window_dims: window.to_vec(),
            strides: strides.to_vec(),
            padding: pad.to_vec(),
            select,
            scatter,
        };
        let ty = Type::Array(operand.shape.clone());
        let out =
            m.run_op(Op::SelectAndScatter(a), ty, &[operand.into(), source.into(), ints(e, &[], &[0]).into()]).unwrap();
        i64s(out.as_array().unwrap())
    }

    #[test]
    fn select_and_scatter_spec_example() {
        // stablehlo interpret/select_and_scatter.mlir.
        let operand = ints(S64, &[4, 2], &[1, 5, 2, 5, 3, 6, 4, 4]);
        let source = ints(S64, &[2, 2], &[5, 6, 7, 8]);
        let out = select_and_scatter(CmpDir::Ge, operand, source, &[3, 1], &[2, 1], &[(0, 1), (0, 0)]);
        assert_eq!(out, [0, 0, 0, 0, 5, 14, 7, 0]);
    }

    #[test]
    fn select_and_scatter_ties_follow_the_comparator() {
        // GE keeps the first of equal maxima, GT moves on to the last one.
        let operand = ints(S32, &[4], &[1, 3, 3, 2]);
        let ge = select_and_scatter(CmpDir::Ge, operand.clone(), ints(S32, &[1], &[10]), &[4], &[1], &[(0, 0)]);
        assert_eq!(ge, [0, 10, 0, 0]);
        let gt = select_and_scatter(CmpDir::Gt, operand, ints(S32, &[1], &[10]), &[4], &[1], &[(0, 0)]);
        assert_eq!(gt, [0, 0, 10, 0]);
    }

    #[test]
    fn select_and_scatter_overlapping_windows_accumulate() {
        // Windows [0..2) and [1..3) both select element 1 (value 9): 4 + 6 lands there.
        let operand = ints(S32, &[3], &[1, 9, 2]);
        let out = select_and_scatter(CmpDir::Ge, operand, ints(S32, &[2], &[4, 6]), &[2], &[1], &[(0, 0)]);
        assert_eq!(out, [0, 10, 0]);
    }
}
