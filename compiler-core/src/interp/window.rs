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

use super::index::{array_arg, call_scalars, in_bounds, next_index, offset, pack, result_shape, result_shapes,
    scalar_value, set_scalar};
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

pub(super) fn reduce_window(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::ReduceWindow(a) = &inst.op else { return Err("not a reduce_window".into()) };
    if args.is_empty() || args.len() % 2 != 0 {
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
    let out_shapes = result_shapes(inst)?;
    if out_shapes.len() != n {
        return Err(format!("reduce_window of {n} inputs must have {n} results"));
    }
    let out_dims: Vec<i64> = (0..rank)
        .map(|d| num_windows(dims[d], a.window_dims[d], a.strides[d], a.base_dilations[d], a.window_dilations[d], a.padding[d]))
        .collect();
    for s in &out_shapes {
        if s.dims != out_dims {
            return Err(format!("result dims {:?} differ from the window count {out_dims:?}", s.dims));
        }
    }
    let mut results: Vec<Literal> = out_shapes
        .iter()
        .zip(&inits)
        .map(|(s, init)| Literal::splat(s.clone(), init.get(0)))
        .collect();
    for (r, init) in results.iter_mut().zip(&inits) {
        if r.elem() != init.elem() {
            return Err(format!("result type {} differs from the init type {}", r.elem(), init.elem()));
        }
    }
    let elems: Vec<_> = inputs.iter().map(|l| l.elem()).collect();
    let strides = inputs[0].shape.strides();
    let init_vals: Vec<Scalar> = inits.iter().map(|l| l.get(0)).collect();
    let total: usize = out_dims.iter().map(|&x| x as usize).product();
    let window_count: usize = a.window_dims.iter().map(|&x| x as usize).product();
    let mut oi = vec![0i64; rank];
    let mut wi = vec![0i64; rank];
    let mut src = vec![0i64; rank];
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
            for (&acc_v, &e) in acc.iter().zip(&elems) {
                body_args.push(scalar_value(e, acc_v)?);
            }
            if inside {
                let at = offset(&src, &strides);
                for (x, &e) in inputs.iter().zip(&elems) {
                    body_args.push(scalar_value(e, x.get(at))?);
                }
            } else {
                for (&v, &e) in init_vals.iter().zip(&elems) {
                    body_args.push(scalar_value(e, v)?);
                }
            }
            acc = call_scalars(interp, a.body, &body_args, n)?;
            next_index(&mut wi, &a.window_dims);
        }
        for (r, v) in results.iter_mut().zip(acc) {
            set_scalar(&mut r.data, out_pos, v)?;
        }
        next_index(&mut oi, &out_dims);
    }
    Ok(pack(results))
}

pub(super) fn select_and_scatter(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
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
    let expected: Vec<i64> =
        (0..rank).map(|d| num_windows(dims[d], a.window_dims[d], a.strides[d], 1, 1, a.padding[d])).collect();
    if source.shape.dims != expected {
        return Err(format!("source dims {:?} differ from the window count {expected:?}", source.shape.dims));
    }
    let out_shape = result_shape(inst)?;
    if !out_shape.same_dims(&operand.shape) || out_shape.elem != source.elem() || init.elem() != source.elem() || init.shape.rank() != 0 {
        return Err(format!("result {} must have the operand's dims and the source/init type", out_shape));
    }
    let mut result = Literal::splat(out_shape.clone(), init.get(0));
    let op_elem = operand.elem();
    let elem = out_shape.elem;
    let strides = operand.shape.strides();
    let window_count: usize = a.window_dims.iter().map(|&x| x as usize).product();
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
                let keep = call_scalars(interp, a.select, &[scalar_value(op_elem, sel_v)?, scalar_value(op_elem, cur)?], 1)?;
                selected = match keep[0] {
                    Scalar::Pred(true) => Some((sel_at, sel_v)),
                    Scalar::Pred(false) => Some((at, cur)),
                    other => return Err(format!("the select computation must return a pred, got {other:?}")),
                };
            }
            next_index(&mut wi, &a.window_dims);
        }
        if let Some((at, _)) = selected {
            let new = call_scalars(
                interp,
                a.scatter,
                &[scalar_value(elem, result.get(at))?, scalar_value(elem, source.get(src_pos))?],
                1,
            )?;
            set_scalar(&mut result.data, at, new[0])?;
        }
        next_index(&mut si, &source.shape.dims);
    }
    Ok(Value::Array(result))
}
