//! Reductions: over no dimensions, over size-1 dimensions only, and of a broadcast over
//! dimensions the broadcast added.
//!
//! Both need to know what the body computes; only bodies that are one commutative binary
//! op of the two parameters (`add`, `max`, ...) qualify, and the init value must be the
//! op's identity (`-0.0` for float add, `-inf` for float max, ...), since a reduction
//! combines the init with the elements.

use super::arith::is_identity_of;
use super::{Action, Ctx};
use crate::ir::{BinaryOp, CompId, InstId, Op};

/// The op a reduction body applies, when the body is exactly `p0 op p1` (or `p1 op p0`)
/// for a commutative `op`.
fn body_op(cx: &Ctx, body: CompId) -> Option<BinaryOp> {
    let comp = cx.module.comps.get(body)?;
    if comp.params.len() != 2 || !comp.has_root() {
        return None;
    }
    let root = comp.root_inst();
    let Op::Binary(op) = root.op else { return None };
    let (p0, p1) = (comp.params[0], comp.params[1]);
    let plain = root.operands == [p0, p1] || root.operands == [p1, p0];
    (plain && op.is_commutative()).then_some(op)
}

/// A single-input reduce whose init is the identity of its body: `(input, body op)`.
fn identity_reduce(cx: &Ctx, id: InstId) -> Option<(InstId, BinaryOp)> {
    let Op::Reduce { body, .. } = cx.op(id) else { return None };
    if cx.args(id).len() != 2 {
        return None;
    }
    let op = body_op(cx, *body)?;
    let (x, init) = (cx.arg(id, 0), cx.arg(id, 1));
    let e = cx.shape(x)?.elem;
    is_identity_of(op, cx.splat(init)?, e).then_some((x, op))
}

/// `reduce(x, init, dims={}, body=op) -> x` when `init` is the identity of `op` (each
/// result element is `init op x[i]`, which is `x[i]` only then: `+0.0 + -0.0` is `+0.0`).
pub(super) fn reduce_no_dims(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Reduce { dims, .. } = cx.op(id) else { return None };
    if !dims.is_empty() {
        return None;
    }
    let (x, _) = identity_reduce(cx, id)?;
    Some(Action::Use(x))
}

/// `reduce(x, init, dims=R, body=op) -> reshape(x)` when every dimension in R has size 1
/// and `init` is the identity of `op`: each result element is `init op x[i]` for the one
/// element reduced into it, which is `x[i]`. (JAX's `take_along_axis` reduces its mask
/// over such a dimension; as a reshape it no longer stops the mask from fusing into a
/// reduction kernel of another shape.)
pub(super) fn reduce_trivial_dims(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Reduce { dims, .. } = cx.op(id) else { return None };
    if dims.is_empty() {
        return None;
    }
    let (x, _) = identity_reduce(cx, id)?;
    let xdims = cx.dims(x);
    if !dims.iter().all(|&d| usize::try_from(d).ok().and_then(|d| xdims.get(d)) == Some(&1)) {
        return None;
    }
    Some(Action::Rewrite { op: Op::Reshape, operands: vec![x] })
}

/// `reduce(broadcast(x), dims=R, body=max|min|and|or) -> broadcast(x)` over the kept
/// dims, when R holds only dims the broadcast added, none of them empty, and the init is
/// the identity: an idempotent op over copies of one value gives that value. (For `add`
/// it would multiply, so `add` is refused.)
pub(super) fn reduce_of_broadcast(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Reduce { dims: reduced, .. } = cx.op(id) else { return None };
    let reduced = reduced.clone();
    let (b, op) = identity_reduce(cx, id)?;
    if !matches!(op, BinaryOp::Max | BinaryOp::Min | BinaryOp::And | BinaryOp::Or) {
        return None;
    }
    let Op::BroadcastInDim { dims: bd } = cx.op(b).clone() else { return None };
    let bdims = cx.dims(b);
    if reduced.iter().any(|d| bd.contains(d) || bdims.get(*d as usize).is_none_or(|&n| n < 1)) {
        return None;
    }
    let kept: Vec<i64> = (0..bdims.len() as i64).filter(|d| !reduced.contains(d)).collect();
    let dims: Option<Vec<i64>> = bd.iter().map(|d| kept.iter().position(|k| k == d).map(|p| p as i64)).collect();
    Some(Action::Rewrite { op: Op::BroadcastInDim { dims: dims? }, operands: vec![cx.arg(b, 0)] })
}
