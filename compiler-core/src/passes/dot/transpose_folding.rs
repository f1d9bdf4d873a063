//! Transpose folding (XLA's `TransposeFolding`): a transpose next to a dot becomes part of
//! the dot's dimension numbers, so it is no longer a kernel of its own.
//!
//! `dot` lays out its result as batch dims, then lhs free dims, then rhs free dims, each
//! group in increasing operand order. Two rules:
//! - `transpose-operand-into-dot`: `dot(transpose(a, p), b) -> dot(a, b)` with the lhs
//!   batch and contracting dims mapped through `p` (the same for a transposed rhs). Batch
//!   and contracting dims are paired by position, so renaming them through the transpose
//!   changes nothing; the free dims must keep their relative order, or the result would
//!   come out transposed, and then the rule refuses.
//! - `transposed-dot-swaps-operands`: `transpose(dot(a, b), p) -> dot(b, a)` when `p`
//!   keeps each free group in order and swaps the two groups (what JAX's transpose rule
//!   for `dot_general` writes in every gradient: `dW = transpose(dot(g, x))`); a `p` that
//!   also permutes the batch dims permutes the batch dim lists. Only when the transpose is
//!   the dot's one user, so no dot is computed twice.
//!
//! Both keep every result bit: a product is the same with its factors swapped, and the
//! contracting dims are summed in the same order.

use crate::ir::{DotDims, InstId, Op};
use crate::passes::rewrite::{rules, run_rules, Action, Ctx, Rule};
use crate::passes::{Changed, Pass, PassLog};

/// The transpose folding pass; see the module documentation.
pub struct TransposeFolding;

const RULES: &[Rule] = rules![
    "transpose-operand-into-dot" on ["dot"] => transpose_operand_into_dot,
    "transposed-dot-swaps-operands" on ["transpose"] => transposed_dot_swaps_operands,
];

impl Pass for TransposeFolding {
    fn name(&self) -> &'static str {
        "transpose-folding"
    }
    fn run(&self, module: &mut crate::ir::Module, log: &mut PassLog) -> Changed {
        run_rules(RULES, 4, module, log)
    }
}

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
fn transpose_operand_into_dot(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Dot(dd) = cx.op(id) else { return None };
    let dd = dd.clone();
    for side in 0..2 {
        let t = cx.arg(id, side);
        let Op::Transpose { perm } = cx.op(t) else { continue };
        let (batch, contracting) =
            if side == 0 { (&dd.lhs_batch, &dd.lhs_contracting) } else { (&dd.rhs_batch, &dd.rhs_contracting) };
        let Some((b, c)) = through_transpose(perm, batch, contracting) else { continue };
        let mut new = dd.clone();
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

/// `transpose(dot(a, b), p) -> dot(b, a)` (batch dims permuted as `p` permutes them)
/// when `p` puts the rhs free dims before the lhs free dims, each group in order.
fn transposed_dot_swaps_operands(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Transpose { perm } = cx.op(id) else { return None };
    let perm = perm.clone();
    let d = cx.arg(id, 0);
    let Op::Dot(dd) = cx.op(d).clone() else { return None };
    let (lr, rr) = (cx.shape(cx.arg(d, 0))?.rank(), cx.shape(cx.arg(d, 1))?.rank());
    let nb = dd.lhs_batch.len();
    let nl = lr.checked_sub(nb + dd.lhs_contracting.len())?;
    let nr = rr.checked_sub(nb + dd.rhs_contracting.len())?;
    if perm.len() != nb + nl + nr {
        return None;
    }
    // perm = [a permutation of the batch dims, rhs free dims in order, lhs free in order].
    let batch: Vec<usize> =
        perm[..nb].iter().map(|&p| usize::try_from(p).ok().filter(|&p| p < nb)).collect::<Option<_>>()?;
    let rfree = (nb + nl..nb + nl + nr).map(|p| p as i64);
    let lfree = (nb..nb + nl).map(|p| p as i64);
    if !perm[nb..].iter().copied().eq(rfree.chain(lfree)) {
        return None;
    }
    // The dot must have no other user: a scan of the computation, so it comes last.
    let comp = cx.module.comp(cx.comp);
    if comp.root == d || comp.order.iter().any(|&u| u != id && comp.inst(u).operands.contains(&d)) {
        return None;
    }
    let new = DotDims {
        lhs_batch: batch.iter().map(|&b| dd.rhs_batch[b]).collect(),
        rhs_batch: batch.iter().map(|&b| dd.lhs_batch[b]).collect(),
        lhs_contracting: dd.rhs_contracting.clone(),
        rhs_contracting: dd.lhs_contracting.clone(),
    };
    Some(Action::Rewrite { op: Op::Dot(new), operands: vec![cx.arg(d, 1), cx.arg(d, 0)] })
}
