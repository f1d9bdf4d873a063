//! Data-movement chains: broadcast/reshape/transpose/reverse of themselves, identity
//! forms of each, transposes that only move size-1 dimensions, pads without padding,
//! single-operand concatenates, shape ops applied to a broadcast scalar, and
//! `get-tuple-element` of a `tuple`.
//!
//! All of these are exact for every value: they only move elements.

use super::{Action, Ctx};
use crate::ir::{InstId, Op, Scalar};

fn is_identity_perm(p: &[i64]) -> bool {
    p.iter().enumerate().all(|(i, &d)| d == i as i64)
}

/// `reshape(x) -> x` when the dimensions do not change.
pub(super) fn reshape_same_shape(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if !matches!(cx.op(id), Op::Reshape) {
        return None;
    }
    let x = cx.arg(id, 0);
    (cx.dims(x) == cx.dims(id)).then_some(Action::Use(x))
}

/// `reshape(reshape(x)) -> reshape(x)` (row-major order is kept by both).
pub(super) fn reshape_reshape(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if !matches!(cx.op(id), Op::Reshape) {
        return None;
    }
    let inner = cx.arg(id, 0);
    matches!(cx.op(inner), Op::Reshape).then(|| Action::Rewrite { op: Op::Reshape, operands: vec![cx.arg(inner, 0)] })
}

/// `broadcast(x, dims={0..n}) -> x` when the shape does not change.
pub(super) fn broadcast_identity(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::BroadcastInDim { dims } = cx.op(id) else { return None };
    let x = cx.arg(id, 0);
    (is_identity_perm(dims) && cx.dims(x) == cx.dims(id)).then_some(Action::Use(x))
}

/// `broadcast(broadcast(x, d1), d2) -> broadcast(x, d2[d1])`: operand dim j lands in
/// result dim `d2[d1[j]]` (a size-1 dim may expand at either step).
pub(super) fn broadcast_broadcast(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::BroadcastInDim { dims: outer } = cx.op(id) else { return None };
    let inner_id = cx.arg(id, 0);
    let Op::BroadcastInDim { dims: inner } = cx.op(inner_id) else { return None };
    let dims: Option<Vec<i64>> = inner.iter().map(|&d| outer.get(d as usize).copied()).collect();
    Some(Action::Rewrite { op: Op::BroadcastInDim { dims: dims? }, operands: vec![cx.arg(inner_id, 0)] })
}

/// `transpose(x, {0,1,..}) -> x`.
pub(super) fn transpose_identity(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Transpose { perm } = cx.op(id) else { return None };
    is_identity_perm(perm).then(|| Action::Use(cx.arg(id, 0)))
}

/// `transpose(transpose(x, p1), p2) -> transpose(x, p1[p2])`: result dim i is the
/// inner result's dim `p2[i]`, which is x's dim `p1[p2[i]]`.
pub(super) fn transpose_transpose(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Transpose { perm: p2 } = cx.op(id) else { return None };
    let inner = cx.arg(id, 0);
    let Op::Transpose { perm: p1 } = cx.op(inner) else { return None };
    let perm: Option<Vec<i64>> = p2.iter().map(|&d| p1.get(d as usize).copied()).collect();
    Some(Action::Rewrite { op: Op::Transpose { perm: perm? }, operands: vec![cx.arg(inner, 0)] })
}

/// `transpose(x, p) -> reshape(x)` when `p` keeps the dimensions larger than 1 in their
/// order (it only moves size-1 dimensions, so row-major order is unchanged).
pub(super) fn transpose_is_reshape(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Transpose { perm } = cx.op(id) else { return None };
    let out = cx.dims(id);
    if is_identity_perm(perm) || out.len() != perm.len() {
        return None;
    }
    let moved: Vec<i64> = perm.iter().zip(out).filter(|(_, &n)| n != 1).map(|(&p, _)| p).collect();
    moved.windows(2).all(|w| w[0] < w[1]).then(|| Action::Rewrite { op: Op::Reshape, operands: vec![cx.arg(id, 0)] })
}

/// `reshape|transpose|reverse|slice(broadcast(s)) -> broadcast(s)` for a scalar `s`:
/// every element is `s` before and after.
pub(super) fn shape_op_of_scalar_broadcast(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if !matches!(cx.op(id), Op::Reshape | Op::Transpose { .. } | Op::Reverse { .. } | Op::Slice { .. }) {
        return None;
    }
    let b = cx.arg(id, 0);
    if !matches!(cx.op(b), Op::BroadcastInDim { .. }) {
        return None;
    }
    let s = cx.arg(b, 0);
    (cx.shape(s)?.rank() == 0).then_some(Action::Rewrite { op: Op::BroadcastInDim { dims: vec![] }, operands: vec![s] })
}

/// `reverse(reverse(x, d1), d2) -> reverse(x, d1 xor d2)`, and `-> x` when `d1 == d2`.
pub(super) fn reverse_reverse(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Reverse { dims: d2 } = cx.op(id) else { return None };
    let inner = cx.arg(id, 0);
    let Op::Reverse { dims: d1 } = cx.op(inner) else { return None };
    let mut dims: Vec<i64> =
        d1.iter().filter(|d| !d2.contains(d)).chain(d2.iter().filter(|d| !d1.contains(d))).copied().collect();
    dims.sort_unstable();
    let x = cx.arg(inner, 0);
    Some(if dims.is_empty() { Action::Use(x) } else { Action::Rewrite { op: Op::Reverse { dims }, operands: vec![x] } })
}

/// `reverse(x, dims)` drops the dims of size <= 1 (reversing them moves nothing);
/// `-> x` when none is left.
pub(super) fn reverse_trivial_dims(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Reverse { dims } = cx.op(id) else { return None };
    let shape = cx.dims(id);
    let kept: Vec<i64> = dims.iter().copied().filter(|&d| shape.get(d as usize).is_some_and(|&n| n > 1)).collect();
    if kept.len() == dims.len() {
        return None;
    }
    let x = cx.arg(id, 0);
    Some(if kept.is_empty() {
        Action::Use(x)
    } else {
        Action::Rewrite { op: Op::Reverse { dims: kept }, operands: vec![x] }
    })
}

/// `pad(x, v, 0_0x0_0...) -> x` (no low, high or interior padding).
pub(super) fn pad_zero(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Pad { low, high, interior } = cx.op(id) else { return None };
    low.iter().chain(high).chain(interior).all(|&p| p == 0).then(|| Action::Use(cx.arg(id, 0)))
}

/// `concatenate(x) -> x`.
pub(super) fn concat_single(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if !matches!(cx.op(id), Op::Concatenate { .. }) || cx.args(id).len() != 1 {
        return None;
    }
    Some(Action::Use(cx.arg(id, 0)))
}

/// `iota(dim=d) -> broadcast(0)` when dimension d has size 1 (every index along it is 0).
pub(super) fn iota_trivial_dim(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Iota { dim } = *cx.op(id) else { return None };
    if cx.dims(id).get(dim as usize) != Some(&1) {
        return None;
    }
    cx.splat_action(id, Scalar::S(0))
}

/// `get-tuple-element(tuple(a, b, ..), i) -> the i-th operand`.
pub(super) fn gte_of_tuple(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::GetTupleElement { index } = *cx.op(id) else { return None };
    let t = cx.arg(id, 0);
    if !matches!(cx.op(t), Op::Tuple) {
        return None;
    }
    cx.args(t).get(index as usize).map(|&x| Action::Use(x))
}
