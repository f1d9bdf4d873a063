//! Dot canonicalization (XLA's `DotDecomposer`): every dot becomes a batched matrix
//! product, `[batch.., m, k] x [batch.., k, n] -> [batch.., m, n]`, with its batch dims
//! leading in order on both sides and one contracting and one free dim per side, the
//! form a GEMM library call or a tiled matmul kernel takes.
//!
//! A dot already in that form (up to which of its last two dims is contracting) is left
//! alone. Any other is rewritten: each operand is transposed to `[batch.., free..,
//! contracting..]` (lhs) or `[batch.., contracting.., free..]` (rhs), skipped when that
//! is its order already, and reshaped to rank `batch + 2`; the dot of those is reshaped
//! back to the original result. The transposes keep the contracting dims in the lhs's
//! order, so the products are summed in the same order and every result bit is kept.
//!
//! The cost: a transpose that does not fold into its producer is a copy, which a target
//! that takes strided or permuted operands (the CPU target's plan does) would not need;
//! XLA pays it on every backend.

use crate::ir::{DotDims, InstId, Op, Shape, Type};
use crate::passes::rewrite::{rules, run_rules, Action, Ctx, Rule};
use crate::passes::{Changed, Pass, PassLog};

/// The dot canonicalization pass; see the module documentation.
pub struct DotCanonicalize;

const RULES: &[Rule] = rules![
    "dot-canonical-form" on ["dot"] => dot_canonical_form,
];

impl Pass for DotCanonicalize {
    fn name(&self) -> &'static str {
        "dot-canonicalize"
    }
    fn run(&self, module: &mut crate::ir::Module, log: &mut PassLog) -> Changed {
        run_rules(RULES, 1, module, log)
    }
}

/// Whether a side is canonical: its batch dims are `0..nb` in order, and at most one
/// contracting and one free dim follow.
fn canonical_side(rank: usize, batch: &[i64], contracting: &[i64]) -> bool {
    batch.iter().copied().eq(0..batch.len() as i64)
        && contracting.len() <= 1
        && rank - batch.len() - contracting.len() <= 1
}

fn dot_canonical_form(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Dot(dd) = cx.op(id) else { return None };
    let dd = dd.clone();
    let out = cx.shape(id)?.clone();
    let (a, b) = (cx.arg(id, 0), cx.arg(id, 1));
    let (ash, bsh) = (cx.shape(a)?.clone(), cx.shape(b)?.clone());
    if canonical_side(ash.rank(), &dd.lhs_batch, &dd.lhs_contracting)
        && canonical_side(bsh.rank(), &dd.rhs_batch, &dd.rhs_contracting)
        && dd.lhs_contracting.len() == 1
    {
        return None;
    }
    let nb = dd.lhs_batch.len();
    let free = |rank: usize, batch: &[i64], contracting: &[i64]| -> Vec<i64> {
        (0..rank as i64).filter(|d| !batch.contains(d) && !contracting.contains(d)).collect()
    };
    let lfree = free(ash.rank(), &dd.lhs_batch, &dd.lhs_contracting);
    let rfree = free(bsh.rank(), &dd.rhs_batch, &dd.rhs_contracting);
    let size = |sh: &Shape, ds: &[i64]| ds.iter().map(|&d| sh.dims[d as usize]).product::<i64>();
    let batch_dims: Vec<i64> = dd.lhs_batch.iter().map(|&d| ash.dims[d as usize]).collect();
    let (m, k, n) = (size(&ash, &lfree), size(&ash, &dd.lhs_contracting), size(&bsh, &rfree));
    // Each operand: transposed (when needed) and reshaped to rank nb + 2.
    let prepare = |cx: &mut Ctx, x: InstId, sh: &Shape, perm: Vec<i64>, last_two: [i64; 2]| -> InstId {
        let mut x = x;
        if !perm.iter().copied().eq(0..perm.len() as i64) {
            let dims = perm.iter().map(|&d| sh.dims[d as usize]).collect::<Vec<_>>();
            let ty = Type::Array(Shape::new(sh.elem, dims));
            x = cx.insert_before(id, "transpose", Op::Transpose { perm }, vec![x], ty);
        }
        let mut dims = batch_dims.clone();
        dims.extend(last_two);
        if cx.dims(x) != dims {
            x = cx.insert_before(id, "reshape", Op::Reshape, vec![x], Type::Array(Shape::new(sh.elem, dims)));
        }
        x
    };
    let lperm = [&dd.lhs_batch[..], &lfree, &dd.lhs_contracting].concat();
    let rperm = [&dd.rhs_batch[..], &dd.rhs_contracting, &rfree].concat();
    let lhs = prepare(cx, a, &ash, lperm, [m, k]);
    let rhs = prepare(cx, b, &bsh, rperm, [k, n]);
    let batch: Vec<i64> = (0..nb as i64).collect();
    let dims = DotDims {
        lhs_batch: batch.clone(),
        rhs_batch: batch,
        lhs_contracting: vec![nb as i64 + 1],
        rhs_contracting: vec![nb as i64],
    };
    let mut product = batch_dims.clone();
    product.extend([m, n]);
    if product[..] == out.dims[..] {
        return Some(Action::Rewrite { op: Op::Dot(dims), operands: vec![lhs, rhs] });
    }
    let ty = Type::Array(Shape::new(out.elem, product));
    let dot = cx.insert_before(id, "dot", Op::Dot(dims), vec![lhs, rhs], ty);
    Some(Action::Rewrite { op: Op::Reshape, operands: vec![dot] })
}
