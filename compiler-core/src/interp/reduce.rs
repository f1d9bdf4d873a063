//! Interpreter: variadic `reduce` and `map`.
//!
//! `reduce` folds each group of elements (the reduced dimensions, visited in row-major
//! index order) into accumulators that start at the init values, calling the body
//! computation as `body(acc_0..acc_{N-1}, x_0..x_{N-1})`. Bodies that are a single binary
//! op of their two parameters (`add`, `max`, ...) take a fast path that applies the op
//! directly, in the same order, so results are identical to calling the body.

use super::elementwise::binary_scalar;
use super::{expect_array, for_each_index, linear_offset, Interpreter};
use crate::ir::{BinaryOp, CompId, Data, ElementType, Instruction, Literal, Op, Scalar, Shape, Type, Value};

/// The binary op `body` applies when it is exactly `op(param0, param1)` on scalars of
/// `elem` (or `op(param1, param0)` for a commutative op); `None` otherwise.
fn simple_body(interp: &Interpreter, body: CompId, elem: ElementType) -> Option<BinaryOp> {
    let comp = interp.module.comps.get(body)?;
    if comp.params.len() != 2 || comp.order.len() != 3 {
        return None;
    }
    let root = comp.root_inst();
    let Op::Binary(op) = root.op else { return None };
    let scalar = Type::Array(Shape::scalar(elem));
    let params_ok = comp.params.iter().all(|&p| comp.inst(p).ty.same_type(&scalar));
    let in_order = root.operands == [comp.params[0], comp.params[1]];
    let swapped = root.operands == [comp.params[1], comp.params[0]] && op.is_commutative();
    (params_ok && root.ty.same_type(&scalar) && (in_order || swapped)).then_some(op)
}

fn scalar_value(elem: ElementType, s: Scalar) -> Value {
    let data = match s {
        Scalar::Pred(v) => Data::Pred(vec![v]),
        Scalar::S(v) => Data::S(vec![v]),
        Scalar::U(v) => Data::U(vec![v]),
        Scalar::F(v) => Data::F(vec![v]),
    };
    Value::Array(Literal { shape: Shape::scalar(elem), data })
}

/// Calls `body` on scalars and returns its `n` scalar results.
fn call_scalar_body(interp: &mut Interpreter, body: CompId, args: &[Value], n: usize) -> Result<Vec<Scalar>, String> {
    let results = interp.call_flat(body, args)?;
    if results.len() != n {
        return Err(format!("the body returned {} values, expected {n}", results.len()));
    }
    results
        .iter()
        .map(|v| match v {
            Value::Array(l) if l.shape.rank() == 0 => Ok(l.get(0)),
            other => Err(format!("the body must return scalars, got {}", other.ty())),
        })
        .collect()
}

/// Appends scalar `s` to `data` (an error when the carrier does not match).
fn push_scalar(data: &mut Data, s: Scalar) -> Result<(), String> {
    match (data, s) {
        (Data::Pred(d), Scalar::Pred(v)) => d.push(v),
        (Data::S(d), Scalar::S(v)) => d.push(v),
        (Data::U(d), Scalar::U(v)) => d.push(v),
        (Data::F(d), Scalar::F(v)) => d.push(v),
        _ => return Err("the body returned a value of the wrong element type".into()),
    }
    Ok(())
}

pub(super) fn reduce(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Reduce { dims, body } = &inst.op else { return Err("expected a reduce".into()) };
    if args.is_empty() || !args.len().is_multiple_of(2) {
        return Err(format!("reduce takes N inputs and N init values, got {} operands", args.len()));
    }
    let n = args.len() / 2;
    let inputs: Vec<&Literal> = (0..n).map(|i| expect_array(inst, args, i)).collect::<Result<_, _>>()?;
    let inits: Vec<&Literal> = (n..2 * n).map(|i| expect_array(inst, args, i)).collect::<Result<_, _>>()?;
    let shape = &inputs[0].shape;
    for (x, init) in inputs.iter().zip(&inits) {
        if !x.shape.same_dims(shape) || init.shape.rank() != 0 || init.elem() != x.elem() {
            return Err(format!("reduce inputs {} and init {} do not match", x.shape, init.shape));
        }
    }
    let rank = shape.rank();
    let mut reduced = vec![false; rank];
    for &d in dims {
        if d < 0 || d as usize >= rank || std::mem::replace(&mut reduced[d as usize], true) {
            return Err(format!("reduce dimensions {dims:?} are invalid for {shape}"));
        }
    }
    let strides = shape.strides();
    let kept: Vec<usize> = (0..rank).filter(|&d| !reduced[d]).collect();
    let rdims: Vec<usize> = (0..rank).filter(|&d| reduced[d]).collect();
    let out_dims: Vec<i64> = kept.iter().map(|&d| shape.dims[d]).collect();
    // Offsets of the elements of one group, in row-major order of the reduced dims.
    let mut group: Vec<usize> = Vec::new();
    let rstrides: Vec<usize> = rdims.iter().map(|&d| strides[d]).collect();
    for_each_index(&rdims.iter().map(|&d| shape.dims[d]).collect::<Vec<_>>(), |i| {
        group.push(linear_offset(&rstrides, i))
    });
    let kstrides: Vec<usize> = kept.iter().map(|&d| strides[d]).collect();
    let mut bases: Vec<usize> = Vec::new();
    for_each_index(&out_dims, |i| bases.push(linear_offset(&kstrides, i)));

    let result_types: Vec<Type> = inputs.iter().map(|x| Type::array(x.elem(), out_dims.clone())).collect();
    if !Type::from_results(result_types.clone()).same_type(&inst.ty) {
        return Err(format!("reduce computes {}, its type says {}", Type::from_results(result_types), inst.ty));
    }

    let mut outs: Vec<Data> = inputs.iter().map(|x| Data::with_capacity(x.elem(), bases.len())).collect();
    let fast = if n == 1 { simple_body(interp, *body, inputs[0].elem()) } else { None };
    if let Some(op) = fast {
        let (x, elem) = (inputs[0], inputs[0].elem());
        for &base in &bases {
            let mut acc = inits[0].get(0);
            for &off in &group {
                acc = binary_scalar(op, elem, acc, x.get(base + off))
                    .ok_or_else(|| format!("{} is not defined on {elem}", op.hlo_name()))?;
            }
            push_scalar(&mut outs[0], acc)?;
        }
    } else {
        let elems: Vec<ElementType> = inputs.iter().map(|x| x.elem()).collect();
        for &base in &bases {
            let mut accs: Vec<Scalar> = inits.iter().map(|l| l.get(0)).collect();
            for &off in &group {
                let mut call_args: Vec<Value> = Vec::with_capacity(2 * n);
                call_args.extend(accs.iter().zip(&elems).map(|(&a, &e)| scalar_value(e, a)));
                call_args.extend(inputs.iter().map(|x| scalar_value(x.elem(), x.get(base + off))));
                accs = call_scalar_body(interp, *body, &call_args, n)?;
            }
            for (out, acc) in outs.iter_mut().zip(accs) {
                push_scalar(out, acc)?;
            }
        }
    }
    let mut values: Vec<Value> = outs
        .into_iter()
        .zip(&inputs)
        .map(|(data, x)| Value::Array(Literal { shape: Shape::new(x.elem(), out_dims.clone()), data }))
        .collect();
    Ok(if n == 1 { values.pop().unwrap_or(Value::Tuple(vec![])) } else { Value::Tuple(values) })
}

/// Applies the scalar computation `body` to the same-index elements of all operands.
pub(super) fn map(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Map { dims, body } = &inst.op else { return Err("expected a map".into()) };
    if args.is_empty() {
        return Err("map needs at least one operand".into());
    }
    let inputs: Vec<&Literal> = (0..args.len()).map(|i| expect_array(inst, args, i)).collect::<Result<_, _>>()?;
    let shape = &inputs[0].shape;
    if inputs.iter().any(|x| !x.shape.same_dims(shape)) {
        return Err("map operands must have the same dimensions".into());
    }
    if !dims.iter().copied().eq(0..shape.rank() as i64) {
        return Err(format!("map dimensions {dims:?} must be all dimensions of {shape}, in order"));
    }
    let declared = super::result_shape(inst)?;
    if !declared.same_dims(shape) {
        return Err(format!("map of {shape} cannot produce {declared}"));
    }
    let elem = declared.elem;
    let mut out = Data::with_capacity(elem, shape.num_elements());
    let fast = if inputs.len() == 2 && inputs[1].elem() == inputs[0].elem() && inputs[0].elem() == elem {
        simple_body(interp, *body, elem)
    } else {
        None
    };
    for i in 0..shape.num_elements() {
        let r = match fast {
            Some(op) => binary_scalar(op, elem, inputs[0].get(i), inputs[1].get(i))
                .ok_or_else(|| format!("{} is not defined on {elem}", op.hlo_name()))?,
            None => {
                let call_args: Vec<Value> = inputs.iter().map(|x| scalar_value(x.elem(), x.get(i))).collect();
                call_scalar_body(interp, *body, &call_args, 1)?[0]
            }
        };
        push_scalar(&mut out, r)?;
    }
    Ok(Value::Array(Literal { shape: Shape::new(elem, shape.dims.clone()), data: out }))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::ir::{BinaryOp, CmpDir, ElementType::*, Op, Type, Value};

    fn reduce_with(
        op: BinaryOp,
        x: crate::ir::Literal,
        init: crate::ir::Literal,
        dims: Vec<i64>,
        out: &[i64],
    ) -> Value {
        let mut m = TestModule::new();
        let body = m.binary_body(op, x.elem());
        let ty = arr(x.elem(), out);
        m.run_op(Op::Reduce { dims, body }, ty, &[x.into(), init.into()]).unwrap()
    }

    #[test]
    fn sums_along_each_dimension() {
        let x = ints(S32, &[2, 3], &[1, 2, 3, 4, 5, 6]);
        let zero = ints(S32, &[], &[0]);
        assert_eq!(
            reduce_with(BinaryOp::Add, x.clone(), zero.clone(), vec![1], &[2]),
            ints(S32, &[2], &[6, 15]).into()
        );
        assert_eq!(
            reduce_with(BinaryOp::Add, x.clone(), zero.clone(), vec![0], &[3]),
            ints(S32, &[3], &[5, 7, 9]).into()
        );
        assert_eq!(
            reduce_with(BinaryOp::Add, x.clone(), ints(S32, &[], &[100]), vec![0, 1], &[]),
            ints(S32, &[], &[121]).into()
        );
        // No dimensions reduced: each element combined with the init once.
        assert_eq!(
            reduce_with(BinaryOp::Mul, x.clone(), ints(S32, &[], &[2]), vec![], &[2, 3]),
            ints(S32, &[2, 3], &[2, 4, 6, 8, 10, 12]).into()
        );
        // Empty reduced dimension: the init value.
        let e = ints(S32, &[2, 0], &[]);
        assert_eq!(
            reduce_with(BinaryOp::Max, e, ints(S32, &[], &[-7]), vec![1], &[2]),
            ints(S32, &[2], &[-7, -7]).into()
        );
    }

    #[test]
    fn float_reduction_order_and_rounding() {
        // f32, in index order: ((0 + 1) + 2^-24) + 2^-24 = 1 (each step rounds), whereas
        // a sum of the two small terms first would give 1 + 2^-23.
        let eps = (2.0f64).powi(-24);
        let x = f32s(&[3], &[1.0, eps, eps]);
        let out = reduce_with(BinaryOp::Add, x, f32s(&[], &[0.0]), vec![0], &[]);
        assert_eq!(out, f32s(&[], &[1.0]).into());
        let x = f32s(&[3], &[1.0, f64::NAN, 5.0]);
        let out = reduce_with(BinaryOp::Max, x, f32s(&[], &[f64::NEG_INFINITY]), vec![0], &[]);
        assert!(out.as_array().unwrap().to_f64_vec()[0].is_nan());
        let p = preds(&[2, 2], &[true, false, true, true]);
        assert_eq!(
            reduce_with(BinaryOp::And, p.clone(), preds(&[], &[true]), vec![1], &[2]),
            preds(&[2], &[false, true]).into()
        );
        assert_eq!(
            reduce_with(BinaryOp::Or, p, preds(&[], &[false]), vec![0], &[2]),
            preds(&[2], &[true, true]).into()
        );
    }

    #[test]
    fn general_body_matches_fast_path() {
        // The body `acc - x` is not commutative: applied in index order, 10-1-2-3-4.
        let x = ints(S32, &[4], &[1, 2, 3, 4]);
        assert_eq!(reduce_with(BinaryOp::Sub, x, ints(S32, &[], &[10]), vec![0], &[]), ints(S32, &[], &[0]).into());
        // A body with an extra instruction: (acc + x) * 1 takes the general path.
        let mut m = TestModule::new();
        let t = arr(F32, &[]);
        let body = m.comp("body", &[t.clone(), t.clone()], |b, p| {
            let s = b.op(Op::Binary(BinaryOp::Add), &[p[0], p[1]], arr(F32, &[]));
            let one = b.constant(f32s(&[], &[1.0]));
            b.op(Op::Binary(BinaryOp::Mul), &[s, one], arr(F32, &[]))
        });
        let x = f32s(&[2, 2], &[1.5, 2.5, -1.0, 4.0]);
        let out = m.run_op(Op::Reduce { dims: vec![1], body }, arr(F32, &[2]), &[x.into(), f32s(&[], &[0.0]).into()]);
        assert_eq!(out.unwrap(), f32s(&[2], &[4.0, 3.0]).into());
    }

    #[test]
    fn variadic_argmax() {
        // Reduce (value, index) pairs: keep the larger value, the smaller index on ties.
        let mut m = TestModule::new();
        let (tf, ti) = (arr(F32, &[]), arr(S32, &[]));
        let body = m.comp("argmax", &[tf.clone(), ti.clone(), tf.clone(), ti.clone()], |b, p| {
            let gt = b.op(Op::Compare { dir: CmpDir::Gt, kind: None }, &[p[0], p[2]], arr(Pred, &[]));
            let eq = b.op(Op::Compare { dir: CmpDir::Eq, kind: None }, &[p[0], p[2]], arr(Pred, &[]));
            let v = b.op(Op::Select, &[gt, p[0], p[2]], tf.clone());
            let lower = b.op(Op::Binary(BinaryOp::Min), &[p[1], p[3]], ti.clone());
            let pick = b.op(Op::Select, &[gt, p[1], p[3]], ti.clone());
            let i = b.op(Op::Select, &[eq, lower, pick], ti.clone());
            b.tuple(&[v, i])
        });
        let vals = f32s(&[2, 3], &[1.0, 7.0, 7.0, 9.0, 2.0, 3.0]);
        let idx = ints(S32, &[2, 3], &[0, 1, 2, 0, 1, 2]);
        let ty = Type::Tuple(vec![arr(F32, &[2]), arr(S32, &[2])]);
        let args = [vals.into(), idx.into(), f32s(&[], &[f64::NEG_INFINITY]).into(), ints(S32, &[], &[0]).into()];
        let out = m.run_op(Op::Reduce { dims: vec![1], body }, ty, &args).unwrap();
        assert_eq!(out, Value::Tuple(vec![f32s(&[2], &[7.0, 9.0]).into(), ints(S32, &[2], &[1, 0]).into()]));
    }

    #[test]
    fn bad_reduce_operands_are_errors() {
        let mut m = TestModule::new();
        let body = m.binary_body(BinaryOp::Add, F32);
        let x = f32s(&[2], &[1.0, 2.0]);
        let r =
            m.run_op(Op::Reduce { dims: vec![1], body }, arr(F32, &[]), &[x.clone().into(), f32s(&[], &[0.0]).into()]);
        assert!(r.is_err());
        let mut m = TestModule::new();
        let body = m.binary_body(BinaryOp::Add, F32);
        let r = m.run_op(Op::Reduce { dims: vec![0], body }, arr(F32, &[]), &[x.into(), ints(S32, &[], &[0]).into()]);
        assert!(r.is_err());
    }

    #[test]
    fn map_applies_the_body() {
        let mut m = TestModule::new();
        let t = arr(S32, &[]);
        // (a, b) -> a * a + b
        let body = m.comp("body", &[t.clone(), t.clone()], |b, p| {
            let sq = b.op(Op::Binary(BinaryOp::Mul), &[p[0], p[0]], t.clone());
            b.op(Op::Binary(BinaryOp::Add), &[sq, p[1]], t.clone())
        });
        let a = ints(S32, &[2, 2], &[1, 2, 3, 4]);
        let b = ints(S32, &[2, 2], &[10, 20, 30, 40]);
        let out =
            m.run_op(Op::Map { dims: vec![0, 1], body }, arr(S32, &[2, 2]), &[a.clone().into(), b.clone().into()]);
        assert_eq!(out.unwrap(), ints(S32, &[2, 2], &[11, 24, 39, 56]).into());
        let mut m = TestModule::new();
        let body = m.binary_body(BinaryOp::Max, S32);
        let out = m.run_op(
            Op::Map { dims: vec![0, 1], body },
            arr(S32, &[2, 2]),
            &[a.clone().into(), ints(S32, &[2, 2], &[2, 2, 2, 2]).into()],
        );
        assert_eq!(out.unwrap(), ints(S32, &[2, 2], &[2, 2, 3, 4]).into());
        let mut m = TestModule::new();
        let body = m.binary_body(BinaryOp::Max, S32);
        assert!(m.run_op(Op::Map { dims: vec![0], body }, arr(S32, &[2, 2]), &[a.into(), b.into()]).is_err());
    }
}
