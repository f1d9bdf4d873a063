//! Interpreter: `dot_general` (XLA `dot`) with batch and contracting dimensions.
//!
//! The result's dimensions are the batch dimensions, then the lhs free dimensions, then
//! the rhs free dimensions, each in operand order. Operands of another element type are
//! first converted to the result type (computing in the result type). f32 products are
//! rounded and summed in f32, one step at a time in contracting-index order, because that
//! is what XLA does and the corpus's expected values show it (with cancellation an f64
//! sum lands several ULPs away). f16/bf16 products are summed in f64 and rounded once (XLA
//! accumulates them in f32, which is within the corpus tolerances of that); integers wrap;
//! pred is the or of ands.

use super::elementwise::convert_literal;
use super::{expect_arity, expect_array, for_each_index, linear_offset, result_shape, Interpreter};
use crate::ir::literal::{round_float, wrap_signed, wrap_unsigned};
use crate::ir::ElementType;
use crate::ir::{Data, Instruction, Literal, Op, Shape, Value};
use std::borrow::Cow;

/// Checks a list of dimension numbers against a rank; returns them as indices.
fn dim_list(what: &str, dims: &[i64], rank: usize) -> Result<Vec<usize>, String> {
    let mut seen = vec![false; rank];
    dims.iter()
        .map(|&d| {
            if d < 0 || d as usize >= rank || std::mem::replace(&mut seen[d as usize], true) {
                Err(format!("{what} dimensions {dims:?} are invalid for rank {rank}"))
            } else {
                Ok(d as usize)
            }
        })
        .collect()
}

/// `l` converted to element type `elem` (borrowed when it already is).
fn in_type(l: &Literal, elem: crate::ir::ElementType) -> Cow<'_, Literal> {
    if l.elem() == elem {
        Cow::Borrowed(l)
    } else {
        Cow::Owned(convert_literal(l, elem))
    }
}

pub(super) fn dot(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Dot(dn) = &inst.op else { return Err("expected a dot".into()) };
    expect_arity(inst, args, 2)?;
    let declared = result_shape(inst)?;
    let elem = declared.elem;
    let lhs = in_type(expect_array(inst, args, 0)?, elem);
    let rhs = in_type(expect_array(inst, args, 1)?, elem);
    let (lr, rr) = (lhs.shape.rank(), rhs.shape.rank());
    let lb = dim_list("lhs batch", &dn.lhs_batch, lr)?;
    let rb = dim_list("rhs batch", &dn.rhs_batch, rr)?;
    let lc = dim_list("lhs contracting", &dn.lhs_contracting, lr)?;
    let rc = dim_list("rhs contracting", &dn.rhs_contracting, rr)?;
    let ld = &lhs.shape.dims;
    let rd = &rhs.shape.dims;
    if lb.len() != rb.len() || lc.len() != rc.len() {
        return Err("lhs and rhs need as many batch and contracting dimensions".into());
    }
    if lb.iter().zip(&rb).any(|(&a, &b)| ld[a] != rd[b]) || lc.iter().zip(&rc).any(|(&a, &b)| ld[a] != rd[b]) {
        return Err(format!("dimension sizes do not match between {} and {}", lhs.shape, rhs.shape));
    }
    if lb.iter().any(|d| lc.contains(d)) || rb.iter().any(|d| rc.contains(d)) {
        return Err("a dimension cannot be both batch and contracting".into());
    }
    let lfree: Vec<usize> = (0..lr).filter(|d| !lb.contains(d) && !lc.contains(d)).collect();
    let rfree: Vec<usize> = (0..rr).filter(|d| !rb.contains(d) && !rc.contains(d)).collect();
    let mut dims: Vec<i64> = lb.iter().map(|&d| ld[d]).collect();
    dims.extend(lfree.iter().map(|&d| ld[d]));
    dims.extend(rfree.iter().map(|&d| rd[d]));
    let shape = Shape::new(elem, dims);
    if !declared.same_shape(&shape) {
        return Err(format!("dot of {} and {} computes {shape}, its type says {declared}", lhs.shape, rhs.shape));
    }

    let (ls, rs) = (lhs.shape.strides(), rhs.shape.strides());
    // Offsets of every contracting index, in row-major order of the contracting dims.
    let cdims: Vec<i64> = lc.iter().map(|&d| ld[d]).collect();
    let lcs: Vec<usize> = lc.iter().map(|&d| ls[d]).collect();
    let rcs: Vec<usize> = rc.iter().map(|&d| rs[d]).collect();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for_each_index(&cdims, |c| pairs.push((linear_offset(&lcs, c), linear_offset(&rcs, c))));
    // Each result position: strides into lhs and rhs for its dims.
    let mut lstride: Vec<usize> = lb.iter().map(|&d| ls[d]).collect();
    let mut rstride: Vec<usize> = rb.iter().map(|&d| rs[d]).collect();
    lstride.extend(lfree.iter().map(|&d| ls[d]));
    rstride.extend(lfree.iter().map(|_| 0));
    lstride.extend(rfree.iter().map(|_| 0));
    rstride.extend(rfree.iter().map(|&d| rs[d]));
    let mut bases = Vec::with_capacity(shape.num_elements());
    for_each_index(&shape.dims, |r| bases.push((linear_offset(&lstride, r), linear_offset(&rstride, r))));

    let data = match (&lhs.data, &rhs.data) {
        (Data::F(a), Data::F(b)) => Data::F(
            bases
                .iter()
                .map(|&(l, r)| {
                    if elem == ElementType::F32 {
                        pairs
                            .iter()
                            .fold(0f64, |s, &(i, j)| round_float(elem, s + round_float(elem, a[l + i] * b[r + j])))
                    } else {
                        round_float(elem, pairs.iter().map(|&(i, j)| a[l + i] * b[r + j]).sum::<f64>())
                    }
                })
                .collect(),
        ),
        (Data::S(a), Data::S(b)) => Data::S(
            bases
                .iter()
                .map(|&(l, r)| {
                    let s = pairs.iter().fold(0i64, |s, &(i, j)| s.wrapping_add(a[l + i].wrapping_mul(b[r + j])));
                    wrap_signed(elem, s)
                })
                .collect(),
        ),
        (Data::U(a), Data::U(b)) => Data::U(
            bases
                .iter()
                .map(|&(l, r)| {
                    let s = pairs.iter().fold(0u64, |s, &(i, j)| s.wrapping_add(a[l + i].wrapping_mul(b[r + j])));
                    wrap_unsigned(elem, s)
                })
                .collect(),
        ),
        (Data::Pred(a), Data::Pred(b)) => {
            Data::Pred(bases.iter().map(|&(l, r)| pairs.iter().any(|&(i, j)| a[l + i] && b[r + j])).collect())
        }
        _ => return Err("operand carriers do not match their element type".into()),
    };
    Ok(Value::Array(Literal { shape, data }))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::ir::{DotDims, ElementType::*, Op};

    fn matmul() -> Op {
        Op::Dot(DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() })
    }

    #[test]
    fn matrix_product() {
        // [[1,2,3],[4,5,6]] x [[1,0],[0,1],[1,1]] = [[4,5],[10,11]]
        let a = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let b = f32s(&[3, 2], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        let out = run_op_array(matmul(), arr(F32, &[2, 2]), &[a.into(), b.into()]);
        assert_eq!(out.to_f64_vec(), vec![4.0, 5.0, 10.0, 11.0]);
        // Vector dot product: contracting dim 0 of both, scalar result.
        let v = ints(S32, &[3], &[1, 2, 3]);
        let op = Op::Dot(DotDims { lhs_contracting: vec![0], rhs_contracting: vec![0], ..Default::default() });
        assert_eq!(run_op_array(op, arr(S32, &[]), &[v.clone().into(), v.into()]), ints(S32, &[], &[14]));
    }

    #[test]
    fn batch_and_free_dimension_order() {
        // lhs [b=2, k=2, m=1], rhs [n=2, b=2, k=2]: result [b, m, n].
        let lhs = ints(S32, &[2, 2, 1], &[1, 2, 3, 4]);
        let rhs = ints(S32, &[2, 2, 2], &[1, 1, 10, 20, 2, 0, 0, 3]);
        let op = Op::Dot(DotDims {
            lhs_batch: vec![0],
            rhs_batch: vec![1],
            lhs_contracting: vec![1],
            rhs_contracting: vec![2],
        });
        let out = run_op_array(op, arr(S32, &[2, 1, 2]), &[lhs.into(), rhs.into()]);
        // b=0: lhs k = [1,2]; rhs[n,0,:] = [1,1], [2,0] -> 3, 2.
        // b=1: lhs k = [3,4]; rhs[n,1,:] = [10,20], [0,3] -> 110, 12.
        assert_eq!(out, ints(S32, &[2, 1, 2], &[3, 2, 110, 12]));
        // Outer product: no contracting dimensions.
        let a = ints(S32, &[2], &[1, 2]);
        let b = ints(S32, &[3], &[1, 10, 100]);
        let out = run_op_array(Op::Dot(DotDims::default()), arr(S32, &[2, 3]), &[a.into(), b.into()]);
        assert_eq!(out, ints(S32, &[2, 3], &[1, 10, 100, 2, 20, 200]));
    }

    #[test]
    fn accumulation_rounds_once_and_ints_wrap() {
        // In bf16, 1 + 2^-8 + 2^-8 summed step by step would stay 1.0; the f64 sum rounds
        // once to 1 + 2^-7.
        let a = lit(BF16, &[1, 3], &[1.0, 1.0 / 256.0, 1.0 / 256.0]);
        let b = lit(BF16, &[3, 1], &[1.0, 1.0, 1.0]);
        let out = run_op_array(matmul(), arr(BF16, &[1, 1]), &[a.into(), b.into()]);
        assert_eq!(out.to_f64_vec(), vec![1.0078125]);
        let a = ints(S8, &[1, 2], &[100, 100]);
        let b = ints(S8, &[2, 1], &[2, 1]);
        assert_eq!(run_op_array(matmul(), arr(S8, &[1, 1]), &[a.into(), b.into()]), ints(S8, &[1, 1], &[44]));
        let a = preds(&[1, 2], &[true, false]);
        let b = preds(&[2, 2], &[false, true, true, true]);
        assert_eq!(run_op_array(matmul(), arr(Pred, &[1, 2]), &[a.into(), b.into()]), preds(&[1, 2], &[false, true]));
    }

    #[test]
    fn mixed_operand_types_compute_in_result_type() {
        // s8 x f32 -> f32: the s8 operand is converted first.
        let a = ints(S8, &[1, 2], &[-3, 4]);
        let b = f32s(&[2, 1], &[0.5, 0.25]);
        let out = run_op_array(matmul(), arr(F32, &[1, 1]), &[a.into(), b.into()]);
        assert_eq!(out.to_f64_vec(), vec![-0.5]);
    }

    #[test]
    fn bad_dimensions_are_errors() {
        let a = f32s(&[2, 3], &[0.0; 6]);
        assert!(run_op(matmul(), arr(F32, &[2, 2]), &[a.clone().into(), a.clone().into()]).is_err());
        let op = Op::Dot(DotDims { lhs_contracting: vec![5], rhs_contracting: vec![0], ..Default::default() });
        assert!(run_op(op, arr(F32, &[2, 2]), &[a.clone().into(), a.clone().into()]).is_err());
        let b = f32s(&[3, 2], &[0.0; 6]);
        assert!(run_op(matmul(), arr(F32, &[2, 3]), &[a.into(), b.into()]).is_err());
    }
}
