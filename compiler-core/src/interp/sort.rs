//! Interpreter: `sort` of N arrays together along one dimension.
//!
//! Each 1-D slice is sorted as a permutation of positions with a stable bottom-up merge
//! sort, which never relies on the comparator being a consistent order (a NaN under
//! FLOAT comparison, say) and so never panics; an unstable sort may return any valid
//! order, so the stable one serves both. The comparator receives
//! (lhs_0, rhs_0, lhs_1, rhs_1, ...) and answers "lhs < rhs" as a pred. When its root is
//! one `compare` of a lhs/rhs parameter pair, it is evaluated natively (fast for large
//! sorts); otherwise the computation is called for every comparison.

use super::index::{array_arg, next_index, pack, result_shapes, scalar_value};
use super::Interpreter;
use crate::ir::{CmpDir, CmpKind, CompId, Instruction, Literal, Op, Scalar, Value};
use std::cmp::Ordering;

pub(super) fn sort(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Sort { dim, comparator, .. } = &inst.op else { return Err("not a sort".into()) };
    if args.is_empty() {
        return Err("sort needs at least one operand".into());
    }
    let inputs: Vec<&Literal> = (0..args.len()).map(|i| array_arg(args, i)).collect::<Result<_, _>>()?;
    let dims = inputs[0].shape.dims.clone();
    let rank = dims.len() as i64;
    if inputs.iter().any(|l| l.shape.dims != dims) {
        return Err("sort operands must all have the same dimensions".into());
    }
    let out_shapes = result_shapes(inst)?;
    if out_shapes.len() != inputs.len()
        || out_shapes.iter().zip(&inputs).any(|(s, l)| s.dims != dims || s.elem != l.elem())
    {
        return Err(format!("sort result type {} does not match its operands", inst.ty));
    }
    let d = if *dim < 0 { dim + rank } else { *dim };
    if d < 0 || d >= rank.max(1) || rank == 0 {
        return Err(format!("sort dimension {dim} out of range for rank {rank}"));
    }
    let d = d as usize;
    let len = dims[d] as usize;
    let stride = inputs[0].shape.strides()[d];
    let fast = simple_comparator(interp, *comparator, inputs.len());

    // Iterate over every slice: all indices with 0 at `d`.
    let mut outer_dims = dims.clone();
    outer_dims[d] = 1;
    let n_slices: usize = outer_dims.iter().map(|&x| x.max(0) as usize).product();
    let strides = inputs[0].shape.strides();
    let mut perm_all: Vec<usize> = (0..inputs[0].num_elements()).collect();
    let mut idx = vec![0i64; dims.len()];
    let mut args_buf = Vec::with_capacity(2 * inputs.len());
    for _ in 0..n_slices {
        if len == 0 {
            break;
        }
        let base: usize = idx.iter().zip(&strides).map(|(&i, &s)| i as usize * s).sum();
        let mut perm: Vec<usize> = (0..len).collect();
        let mut scratch = vec![0usize; len];
        match fast {
            Some((k, swapped, dir, kind)) => {
                let key = inputs[k];
                merge_sort(&mut perm, &mut scratch, &mut |a, b| {
                    let (x, y) = (key.get(base + a * stride), key.get(base + b * stride));
                    Ok::<bool, String>(if swapped { compare(y, x, dir, kind) } else { compare(x, y, dir, kind) })
                })?;
            }
            None => {
                merge_sort(&mut perm, &mut scratch, &mut |a, b| {
                    args_buf.clear();
                    for l in &inputs {
                        args_buf.push(scalar_value(l.elem(), l.get(base + a * stride))?);
                        args_buf.push(scalar_value(l.elem(), l.get(base + b * stride))?);
                    }
                    match interp.call_flat(*comparator, &args_buf)?.as_slice() {
                        [Value::Array(r)] if r.shape.rank() == 0 => match r.get(0) {
                            Scalar::Pred(b) => Ok(b),
                            other => Err(format!("the comparator must return a pred, got {other:?}")),
                        },
                        other => Err(format!("the comparator must return one pred scalar, got {} values", other.len())),
                    }
                })?;
            }
        }
        for (j, &p) in perm.iter().enumerate() {
            perm_all[base + j * stride] = base + p * stride;
        }
        next_index(&mut idx, &outer_dims);
    }
    let results =
        inputs.iter().zip(out_shapes).map(|(l, s)| Literal::new(s, l.data.gather(perm_all.iter().copied()))).collect();
    Ok(pack(results))
}

/// Stable bottom-up merge sort of positions `v` with a fallible "less than"; `buf` is
/// scratch of `v`'s length. Shared with the CPU runtime's sort, so that both order equal
/// and unordered (NaN) keys the same way.
pub(crate) fn merge_sort<E>(
    v: &mut [usize],
    buf: &mut [usize],
    less: &mut impl FnMut(usize, usize) -> Result<bool, E>,
) -> Result<(), E> {
    let n = v.len();
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j, mut o) = (start, mid, start);
            while i < mid && j < end {
                // Take from the right run only when strictly less: equal keys keep their order.
                if less(v[j], v[i])? {
                    buf[o] = v[j];
                    j += 1;
                } else {
                    buf[o] = v[i];
                    i += 1;
                }
                o += 1;
            }
            buf[o..o + mid - i].copy_from_slice(&v[i..mid]);
            o += mid - i;
            buf[o..o + end - j].copy_from_slice(&v[j..end]);
            start = end;
        }
        v.copy_from_slice(&buf[..n]);
        width *= 2;
    }
    Ok(())
}

/// Recognizes a comparator whose root is `compare(p_{2k}, p_{2k+1})` (or swapped):
/// returns (operand k, swapped, direction, kind).
fn simple_comparator(interp: &Interpreter, comp: CompId, n: usize) -> Option<(usize, bool, CmpDir, Option<CmpKind>)> {
    let c = interp.module.comp(comp);
    if !c.has_root() || c.params.len() != 2 * n {
        return None;
    }
    let root = c.root_inst();
    let Op::Compare { dir, kind } = root.op else { return None };
    let param = |i: usize| match c.inst(*root.operands.get(i)?).op {
        Op::Parameter(p) => Some(p as usize),
        _ => None,
    };
    let (a, b) = (param(0)?, param(1)?);
    if a / 2 != b / 2 || a == b {
        return None;
    }
    Some((a / 2, a % 2 == 1, dir, kind))
}

/// `compare` on two scalars of one carrier, as StableHLO defines it.
pub(super) fn compare(x: Scalar, y: Scalar, dir: CmpDir, kind: Option<CmpKind>) -> bool {
    let ord = match (x, y) {
        (Scalar::F(a), Scalar::F(b)) if kind == Some(CmpKind::TotalOrder) => Some(total_key(a).cmp(&total_key(b))),
        (Scalar::F(a), Scalar::F(b)) => a.partial_cmp(&b),
        (Scalar::S(a), Scalar::S(b)) => Some(a.cmp(&b)),
        (Scalar::U(a), Scalar::U(b)) => Some(a.cmp(&b)),
        (Scalar::Pred(a), Scalar::Pred(b)) => Some(a.cmp(&b)),
        _ => None,
    };
    match ord {
        // Unordered (a NaN under FLOAT comparison): only NE holds.
        None => dir == CmpDir::Ne,
        Some(o) => match dir {
            CmpDir::Eq => o == Ordering::Equal,
            CmpDir::Ne => o != Ordering::Equal,
            CmpDir::Lt => o == Ordering::Less,
            CmpDir::Le => o != Ordering::Greater,
            CmpDir::Gt => o == Ordering::Greater,
            CmpDir::Ge => o != Ordering::Less,
        },
    }
}

/// Maps a float to an integer whose order is IEEE totalOrder:
/// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN. Widening to f64 keeps that order.
fn total_key(v: f64) -> i64 {
    let b = v.to_bits() as i64;
    b ^ (((b >> 63) as u64) >> 1) as i64
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::ir::{BinaryOp, CmpDir, CmpKind, CompId, ElementType, ElementType::*, Literal, Op, Type, Value};

    /// `compare(p[lhs], p[rhs])` over `n` operand types, optionally hidden behind an
    /// `and` with true so that the general (called) path runs.
    fn comparator(
        m: &mut TestModule,
        elems: &[ElementType],
        dir: CmpDir,
        kind: Option<CmpKind>,
        called: bool,
    ) -> CompId {
        let params: Vec<Type> = elems.iter().flat_map(|&e| [arr(e, &[]), arr(e, &[])]).collect();
        m.comp("cmp", &params, |b, p| {
            let c = b.op(Op::Compare { dir, kind }, &[p[0], p[1]], arr(Pred, &[]));
            if called {
                let t = b.constant(preds(&[], &[true]));
                b.op(Op::Binary(BinaryOp::And), &[c, t], arr(Pred, &[]))
            } else {
                c
            }
        })
    }

    fn sort(m: TestModule, dim: i64, comparator: CompId, inputs: Vec<Literal>) -> Vec<Literal> {
        let ty = Type::from_results(inputs.iter().map(|l| Type::Array(l.shape.clone())).collect());
        let args: Vec<Value> = inputs.into_iter().map(Value::Array).collect();
        m.run_op(Op::Sort { dim, stable: true, comparator }, ty, &args).unwrap().flatten()
    }

    fn i64s(l: &Literal) -> Vec<i64> {
        (0..l.num_elements()).map(|i| l.get(i).as_i64()).collect()
    }

    #[test]
    fn spec_example_two_operands_both_paths() {
        for called in [false, true] {
            let mut m = TestModule::new();
            let c = comparator(&mut m, &[S64, S64], CmpDir::Gt, None, called);
            let out =
                sort(m, 0, c, vec![ints(S64, &[2, 3], &[1, 2, 3, 3, 2, 1]), ints(S64, &[2, 3], &[3, 2, 1, 1, 2, 3])]);
            assert_eq!(i64s(&out[0]), [3, 2, 3, 1, 2, 1], "called={called}");
            assert_eq!(i64s(&out[1]), [1, 2, 1, 3, 2, 3], "called={called}");
        }
    }

    #[test]
    fn columns_along_dim_0() {
        // stablehlo interpret/sort.mlir @sort_issue_2440.
        let mut m = TestModule::new();
        let c = comparator(&mut m, &[S64], CmpDir::Lt, Some(CmpKind::Signed), false);
        let input = ints(
            S64,
            &[5, 7],
            &[
                0, 1, 1, -3, -3, -2, 0, 4, -1, 3, 0, 4, 0, -3, 1, 0, 0, 0, 0, 2, 3, -3, -4, -4, -2, 0, 3, 3, 0, 5, 2,
                -2, 0, -2, 0,
            ],
        );
        let out = sort(m, 0, c, vec![input]);
        let want = [
            -3, -4, -4, -3, -3, -2, -3, 0, -1, 0, -2, 0, -2, 0, 0, 0, 1, -2, 0, 0, 0, 1, 1, 2, 0, 0, 2, 3, 4, 5, 3, 0,
            4, 3, 3,
        ];
        assert_eq!(i64s(&out[0]), want);
    }

    #[test]
    fn stable_ties_keep_input_order_on_negative_dim() {
        for called in [false, true] {
            let mut m = TestModule::new();
            let c = comparator(&mut m, &[U8, S32], CmpDir::Lt, None, called);
            let keys = ints(U8, &[2, 4], &[2, 1, 2, 1, 5, 5, 5, 4]);
            let vals = ints(S32, &[2, 4], &[0, 1, 2, 3, 0, 1, 2, 3]);
            let out = sort(m, -1, c, vec![keys, vals]);
            assert_eq!(i64s(&out[0]), [1, 1, 2, 2, 4, 5, 5, 5]);
            assert_eq!(i64s(&out[1]), [1, 3, 0, 2, 3, 0, 1, 2], "called={called}");
        }
    }

    #[test]
    fn total_order_places_nans_and_signed_zeros() {
        for called in [false, true] {
            let mut m = TestModule::new();
            let c = comparator(&mut m, &[F32], CmpDir::Lt, Some(CmpKind::TotalOrder), called);
            let input = f32s(&[7], &[f64::NAN, 1.0, 0.0, -0.0, f64::NEG_INFINITY, -f64::NAN, -2.5]);
            let out = sort(m, 0, c, vec![input]).remove(0).to_f64_vec();
            assert!(out[0].is_nan() && out[0].is_sign_negative(), "{out:?}");
            assert_bits_eq(&out[1..6], &[f64::NEG_INFINITY, -2.5, -0.0, 0.0, 1.0]);
            assert!(out[6].is_nan() && out[6].is_sign_positive());
        }
    }

    #[test]
    fn float_compare_with_nan_does_not_panic() {
        // LT under FLOAT is not an order when NaNs are present; any result is allowed,
        // but the sort must finish and keep the multiset of values.
        let mut m = TestModule::new();
        let c = comparator(&mut m, &[F64], CmpDir::Lt, None, false);
        let input = lit(F64, &[5], &[3.0, f64::NAN, 1.0, f64::NAN, 2.0]);
        let out = sort(m, 0, c, vec![input]).remove(0).to_f64_vec();
        assert_eq!(out.iter().filter(|v| v.is_nan()).count(), 2);
        let mut finite: Vec<f64> = out.into_iter().filter(|v| !v.is_nan()).collect();
        finite.sort_by(f64::total_cmp);
        assert_eq!(finite, [1.0, 2.0, 3.0]);
    }

    #[test]
    fn lexicographic_two_key_comparator() {
        // (a0 < b0) or (a0 == b0 and a1 > b1): first key ascending, second descending.
        let mut m = TestModule::new();
        let s = arr(S32, &[]);
        let p = arr(Pred, &[]);
        let c = m.comp("lex", &[s.clone(), s.clone(), s.clone(), s], |b, a| {
            let lt = b.op(Op::Compare { dir: CmpDir::Lt, kind: None }, &[a[0], a[1]], p.clone());
            let eq = b.op(Op::Compare { dir: CmpDir::Eq, kind: None }, &[a[0], a[1]], p.clone());
            let gt = b.op(Op::Compare { dir: CmpDir::Gt, kind: None }, &[a[2], a[3]], p.clone());
            let both = b.op(Op::Binary(BinaryOp::And), &[eq, gt], p.clone());
            b.op(Op::Binary(BinaryOp::Or), &[lt, both], p.clone())
        });
        let out = sort(m, 0, c, vec![ints(S32, &[5], &[2, 1, 2, 1, 0]), ints(S32, &[5], &[1, 5, 9, 6, 0])]);
        assert_eq!(i64s(&out[0]), [0, 1, 1, 2, 2]);
        assert_eq!(i64s(&out[1]), [0, 6, 5, 9, 1]);
    }

    #[test]
    fn ten_thousand_elements() {
        for called in [false, true] {
            let mut m = TestModule::new();
            let c = comparator(&mut m, &[S32], CmpDir::Lt, None, called);
            // A permutation of 0..10000 (7919 is prime, so coprime with 10000).
            let input: Vec<i64> = (0..10_000).map(|i| (i * 7919) % 10_000).collect();
            let out = sort(m, 0, c, vec![ints(S32, &[10_000], &input)]);
            assert_eq!(i64s(&out[0]), (0..10_000).collect::<Vec<_>>());
        }
    }
}
