//! Dots: a transposed operand folds into the dot's dimension numbers.
//!
//! `dot` lays out its result as batch dims, then lhs free dims, then rhs free dims, each
//! group in increasing operand order. Batch and contracting dims are paired by position,
//! so renaming them through the transpose changes nothing; the free dims must keep their
//! relative order, or the result would come out transposed, and then the rule refuses.

use super::{Action, Ctx};
use crate::ir::{DotDims, InstId, Op};

/// Maps one side's batch and contracting dims through `perm`; `None` when the free dims
/// would change order.
fn through_transpose(perm: &[i64], batch: &[i64], contracting: &[i64]) -> Option<(Vec<i64>, Vec<i64>)> {
    let map = |ds: &[i64]| ds.iter().map(|&d| perm.get(d as usize).copied()).collect::<Option<Vec<i64>>>();
    let free: Vec<i64> = (0..perm.len() as i64)
        .filter(|d| !batch.contains(d) && !contracting.contains(d))
        .map(|d| perm[d as usize])
        .collect();
    free.windows(2).all(|w| w[0] < w[1]).then_some(())?;
    Some((map(batch)?, map(contracting)?))
}

/// `dot(transpose(a, p), b) -> dot(a, b)` with lhs batch/contracting dims mapped through
/// `p` (and the same for a transposed rhs), when the free dims keep their order.
pub(super) fn dot_transpose_operand(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Dot(dd) = cx.op(id).clone() else { return None };
    if cx.args(id).len() != 2 {
        return None;
    }
    for side in 0..2 {
        let t = cx.arg(id, side);
        let Op::Transpose { perm } = cx.op(t) else { continue };
        let (batch, contracting) =
            if side == 0 { (&dd.lhs_batch, &dd.lhs_contracting) } else { (&dd.rhs_batch, &dd.rhs_contracting) };
        let Some((b, c)) = through_transpose(perm, batch, contracting) else { continue };
        let mut new = DotDims { ..dd.clone() };
        if side == 0 {
            new.lhs_batch = b;
            new.lhs_contracting = c;
        } else {
            new.rhs_batch = b;
            new.rhs_contracting = c;
        }
        let mut operands = cx.args(id).to_vec();
        operands[side] = cx.arg(t, 0);
        return Some(Action::Rewrite { op: Op::Dot(new), operands });
    }
    None
}
