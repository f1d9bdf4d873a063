//! Slices: full slices, slices of slices, of broadcasts and of concatenates, dynamic
//! slices with constant start indices, and dynamic updates that cover everything.

use super::{Action, Ctx};
use crate::ir::{InstId, Op, Scalar, Shape, Type};

/// `slice(x, [0:n] per dim) -> x`.
pub(super) fn slice_full(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Slice { start, limit, stride } = cx.op(id) else { return None };
    let x = cx.arg(id, 0);
    let full = start.iter().all(|&s| s == 0) && stride.iter().all(|&s| s == 1) && *limit == cx.dims(x);
    full.then_some(Action::Use(x))
}

/// `slice(slice(x, s1:l1:t1), s2:l2:t2) -> slice(x, s1+s2*t1 : .. : t1*t2)` per dim; the
/// new limit is one past the last element taken, so the element count is unchanged.
pub(super) fn slice_slice(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Slice { start: s2, stride: t2, .. } = cx.op(id) else { return None };
    let inner = cx.arg(id, 0);
    let Op::Slice { start: s1, stride: t1, .. } = cx.op(inner) else { return None };
    let out = cx.dims(id);
    if out.len() != s1.len() || out.len() != s2.len() {
        return None;
    }
    let mut start = Vec::new();
    let mut limit = Vec::new();
    let mut stride = Vec::new();
    for k in 0..out.len() {
        let s = s1[k] + s2[k] * t1[k];
        let t = t1[k] * t2[k];
        start.push(s);
        limit.push(if out[k] == 0 { s } else { s + (out[k] - 1) * t + 1 });
        stride.push(t);
    }
    Some(Action::Rewrite { op: Op::Slice { start, limit, stride }, operands: vec![cx.arg(inner, 0)] })
}

/// `slice(broadcast(x)) -> broadcast(slice(x))`: the slice moves to the (smaller)
/// operand; dimensions only the broadcast makes, or that it expands from size 1, need
/// no slicing of `x`. No inner slice is made when it would take all of `x`.
pub(super) fn slice_of_broadcast(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Slice { start, limit, stride } = cx.op(id) else { return None };
    let (start, limit, stride) = (start.clone(), limit.clone(), stride.clone());
    let b = cx.arg(id, 0);
    let Op::BroadcastInDim { dims: bd } = cx.op(b).clone() else { return None };
    let x = cx.arg(b, 0);
    let xs = cx.shape(x)?.clone();
    let out = cx.dims(id);
    let (mut s, mut l, mut t, mut dims) = (vec![], vec![], vec![], vec![]);
    for (j, &k) in bd.iter().enumerate() {
        let k = k as usize;
        if xs.dims[j] == 1 {
            s.push(0);
            l.push(1);
            t.push(1);
            dims.push(1);
        } else {
            s.push(start[k]);
            l.push(limit[k]);
            t.push(stride[k]);
            dims.push(*out.get(k)?);
        }
    }
    let full = s.iter().all(|&v| v == 0) && t.iter().all(|&v| v == 1) && l[..] == xs.dims[..];
    let src = if full {
        x
    } else {
        let ty = Type::Array(Shape::new(xs.elem, dims));
        cx.insert_before(id, "slice", Op::Slice { start: s, limit: l, stride: t }, vec![x], ty)
    };
    Some(Action::Rewrite { op: Op::BroadcastInDim { dims: bd }, operands: vec![src] })
}

/// `slice(concatenate(a, b, ..), dim d) -> slice(a)` (or of `b`, ...) when every element
/// the slice takes along `d` lies in one operand; its start shifts by that operand's
/// offset.
pub(super) fn slice_of_concat(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Slice { start, limit, stride } = cx.op(id) else { return None };
    let (start, limit, stride) = (start.clone(), limit.clone(), stride.clone());
    let c = cx.arg(id, 0);
    let Op::Concatenate { dim } = *cx.op(c) else { return None };
    let d = dim as usize;
    let n = *cx.dims(id).get(d)?;
    if n == 0 {
        return None;
    }
    let first = start[d];
    let last = first + (n - 1) * stride[d];
    let mut offset = 0;
    for &o in cx.args(c) {
        let size = *cx.dims(o).get(d)?;
        if first >= offset && last < offset + size {
            let mut start = start.clone();
            let mut limit = limit.clone();
            start[d] = first - offset;
            limit[d] = last - offset + 1;
            return Some(Action::Rewrite { op: Op::Slice { start, limit, stride }, operands: vec![o] });
        }
        offset += size;
    }
    None
}

/// `dynamic_slice(x, c0, c1, ..) -> slice(x, [ci':ci'+size])` for constant starts, each
/// clamped as dynamic_slice does: `ci' = clamp(ci, 0, dim - size)`.
pub(super) fn dynamic_slice_constant(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::DynamicSlice { sizes } = cx.op(id) else { return None };
    let sizes = sizes.clone();
    let x = cx.arg(id, 0);
    let dims = cx.dims(x);
    if cx.args(id).len() != dims.len() + 1 || sizes.len() != dims.len() {
        return None;
    }
    let mut start = Vec::new();
    for (k, &i) in cx.args(id)[1..].iter().enumerate() {
        if cx.shape(i)?.rank() != 0 || !matches!(cx.op(i), Op::Constant(_)) {
            return None;
        }
        let v = match cx.splat(i)? {
            Scalar::S(v) => v,
            Scalar::U(v) => v.min(i64::MAX as u64) as i64,
            _ => return None,
        };
        start.push(v.clamp(0, (dims[k] - sizes[k]).max(0)));
    }
    let limit = start.iter().zip(&sizes).map(|(s, n)| s + n).collect();
    let stride = vec![1; dims.len()];
    Some(Action::Rewrite { op: Op::Slice { start, limit, stride }, operands: vec![x] })
}

/// `dynamic_update_slice(x, u, ..) -> u` when `u` has the shape of `x` (every start
/// index clamps to 0, so `u` replaces everything).
pub(super) fn dynamic_update_slice_full(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if !matches!(cx.op(id), Op::DynamicUpdateSlice) || cx.args(id).len() < 2 {
        return None;
    }
    let (x, u) = (cx.arg(id, 0), cx.arg(id, 1));
    (cx.dims(x) == cx.dims(u)).then_some(Action::Use(u))
}
