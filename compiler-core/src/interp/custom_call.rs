//! Interpreter: the custom calls XLA itself emits and hloscope understands.
//!
//! XLA's optimized HLO replaces some ops with library calls; reading its dumps means
//! running those too. Today that is `TopK` (XLA:CPU's lowering of `top_k`): operand
//! `[batch..., n]`, result `(values[batch..., k], s32 indices[batch..., k])`, largest
//! first, ties broken by the lower index; floats in total order (NaN above +inf), which
//! is what XLA's `compare-greater-than` comparator with `type=TOTALORDER` gives.

use super::{expect_arity, expect_array};
use crate::ir::literal::float_bits;
use crate::ir::{Data, ElementType, Instruction, Literal, Op, Scalar, Shape, Type, Value};
use std::cmp::Ordering;

/// Runs `inst` if it is a custom call hloscope knows; `None` otherwise.
pub(super) fn known(inst: &Instruction, args: &[Value]) -> Option<Result<Value, String>> {
    let Op::CustomCall(call) = &inst.op else { return None };
    match call.target.as_str() {
        "TopK" => Some(top_k(inst, args)),
        _ => None,
    }
}

/// Total order key of a float: sign-magnitude bits mapped to a monotone integer.
fn total_order_key(elem: ElementType, v: f64) -> i64 {
    let bits = float_bits(elem, v);
    let sign_bit = 1u64 << (elem.bit_width() - 1);
    // Below 2^63 for every width, so it fits an i64 and so does its negation.
    let magnitude = (bits & (sign_bit - 1)) as i64;
    if bits & sign_bit != 0 {
        -magnitude - 1
    } else {
        magnitude
    }
}

fn compare_desc(elem: ElementType, a: Scalar, b: Scalar) -> Ordering {
    match (a, b) {
        (Scalar::F(x), Scalar::F(y)) => total_order_key(elem, y).cmp(&total_order_key(elem, x)),
        (Scalar::S(x), Scalar::S(y)) => y.cmp(&x),
        (Scalar::U(x), Scalar::U(y)) => y.cmp(&x),
        (Scalar::Pred(x), Scalar::Pred(y)) => y.cmp(&x),
        _ => Ordering::Equal,
    }
}

fn top_k(inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    expect_arity(inst, args, 1)?;
    let input = expect_array(inst, args, 0)?;
    let k = match &inst.ty {
        Type::Tuple(ts) if ts.len() == 2 => match (&ts[0], &ts[1]) {
            (Type::Array(v), Type::Array(i)) if i.elem == ElementType::S32 && v.rank() == input.shape.rank() => {
                *v.dims.last().ok_or("TopK of a scalar")?
            }
            _ => return Err("TopK must return (values, s32 indices) of the operand's rank".into()),
        },
        _ => return Err("TopK must return a tuple of two arrays".into()),
    };
    let n = *input.shape.dims.last().ok_or("TopK of a scalar")?;
    if k < 0 || k > n {
        return Err(format!("TopK: k = {k} out of range for {n} elements"));
    }
    let (n, k) = (n as usize, k as usize);
    let rows = input.num_elements().checked_div(n).unwrap_or(0);
    let elem = input.elem();
    let mut picked: Vec<usize> = Vec::with_capacity(rows * k);
    let mut indices: Vec<i64> = Vec::with_capacity(rows * k);
    for r in 0..rows {
        let mut order: Vec<usize> = (0..n).collect();
        // A stable sort keeps the lower index first among equals.
        order.sort_by(|&a, &b| compare_desc(elem, input.get(r * n + a), input.get(r * n + b)));
        for &i in &order[..k] {
            picked.push(r * n + i);
            indices.push(i as i64);
        }
    }
    let mut dims = input.shape.dims.clone();
    *dims.last_mut().unwrap() = k as i64;
    let values = Literal::new(Shape::new(elem, dims.clone()), input.data.gather(picked));
    let indices = Literal::new(Shape::new(ElementType::S32, dims), Data::S(indices));
    Ok(Value::Tuple(vec![Value::Array(values), Value::Array(indices)]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CustomCallAttrs, Loc};

    #[test]
    fn top_k_picks_largest_with_stable_ties_and_nan_first() {
        let ty =
            Type::Tuple(vec![Type::array(ElementType::F32, vec![2, 2]), Type::array(ElementType::S32, vec![2, 2])]);
        let inst = Instruction {
            name: "topk".into(),
            op: Op::CustomCall(CustomCallAttrs {
                target: "TopK".into(),
                has_side_effect: false,
                backend_config: String::new(),
                attrs: vec![],
            }),
            operands: vec![],
            ty,
            loc: Loc::default(),
        };
        let x = Literal::from_f64s(Shape::new(ElementType::F32, vec![2, 3]), &[1.0, 5.0, 5.0, -0.0, f64::NAN, 0.0]);
        let out = known(&inst, &[Value::Array(x)]).unwrap().unwrap();
        let Value::Tuple(parts) = out else { panic!("tuple expected") };
        let values = parts[0].as_array().unwrap().to_f64_vec();
        assert_eq!(&values[..2], &[5.0, 5.0]);
        assert!(values[2].is_nan());
        assert_eq!(values[3], 0.0);
        assert!(values[3].is_sign_positive(), "+0 ranks above -0 in total order");
        assert_eq!(parts[1].as_array().unwrap().data, Data::S(vec![1, 2, 1, 2]));
    }

    #[test]
    fn top_k_orders_f64_including_the_extremes() {
        let ty = Type::Tuple(vec![Type::array(ElementType::F64, vec![3]), Type::array(ElementType::S32, vec![3])]);
        let inst = Instruction {
            name: "topk".into(),
            op: Op::CustomCall(CustomCallAttrs {
                target: "TopK".into(),
                has_side_effect: false,
                backend_config: String::new(),
                attrs: vec![],
            }),
            operands: vec![],
            ty,
            loc: Loc::default(),
        };
        let x =
            Literal::from_f64s(Shape::new(ElementType::F64, vec![4]), &[f64::NEG_INFINITY, -f64::MAX, f64::MAX, -0.0]);
        let Value::Tuple(parts) = known(&inst, &[Value::Array(x)]).unwrap().unwrap() else { panic!("tuple expected") };
        assert_eq!(parts[0].as_array().unwrap().to_f64_vec(), vec![f64::MAX, -0.0, -f64::MAX]);
        assert_eq!(parts[1].as_array().unwrap().data, Data::S(vec![2, 3, 1]));
    }
}
