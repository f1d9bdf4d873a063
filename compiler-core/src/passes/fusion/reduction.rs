//! Reduction (XLA `kInput`) fusion: a reduce with its fused producers and epilogue.
//!
//! The kernel walks the reduce's input once, computing fused producers on the fly (the
//! `exp(x - max)` of a softmax, the `(x - mean)^2` of a layernorm), and may finish with an
//! elementwise epilogue on the reduced values (`sum / n`, `rsqrt(var + eps)`). Row
//! reductions (the reduced dimensions are minor) and column reductions (major) fuse by
//! the same rules; they differ only in how a target emits them.
//!
//! What it refuses:
//! - using a reduce's result at another shape inside the kernel (a broadcast back to the
//!   input shape, as softmax does): the whole reduction must finish before any element
//!   of the broadcast is known, so every output element would redo the reduction;
//! - a reduce downstream of another reduce in one kernel, for the same reason;
//! - reduces of different shapes or dimensions in one kernel (their loops differ);
//! - outputs that are neither reduce-shaped nor input-shaped.

use super::members::Members;
use super::rules::{Graph, Refusal};
use crate::ir::{InstId, Op};

/// The shape of a reduce's (first) input, and its reduced dimensions.
fn loop_of<'a>(g: &'a Graph, r: InstId) -> (Option<&'a [i64]>, &'a [i64]) {
    let inst = g.inst(r);
    let dims = match &inst.op {
        Op::Reduce { dims, .. } => dims.as_slice(),
        _ => &[],
    };
    (inst.operands.first().and_then(|&o| g.dims(o)), dims)
}

/// Dimensions without their size-1 ones: `[4, 1]` and `[4]` hold the same elements in
/// the same order, so a reduction's epilogue may move between them (JAX keeps the
/// reduced dimension as size 1 before broadcasting back: `mean[:, None]`).
fn squeezed(dims: &[i64]) -> impl Iterator<Item = i64> + '_ {
    dims.iter().copied().filter(|&d| d != 1)
}

fn same_elements(a: Option<&[i64]>, b: Option<&[i64]>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if squeezed(a).eq(squeezed(b)))
}

/// Ops that may follow a reduction in its kernel, per element of its result:
/// elementwise ops, and reshapes or order-keeping broadcasts (whose shapes
/// `same_elements` then limits to adding or dropping size-1 dimensions).
fn epilogue_op(op: &Op) -> bool {
    match op {
        Op::Reshape => true,
        Op::BroadcastInDim { dims } => dims.windows(2).all(|w| w[0] < w[1]),
        op => op.is_elementwise(),
    }
}

pub(super) fn check(g: &Graph, members: &Members, reduces: &[InstId], outputs: &[InstId]) -> Result<(), Refusal> {
    let first = reduces[0];
    for &r in &reduces[1..] {
        if loop_of(g, r) != loop_of(g, first) {
            return Err(Refusal::hard(
                "refuse-incompatible-reductions",
                format!(
                    "{} and {} reduce different shapes or dimensions, so they cannot share one loop",
                    g.name(first),
                    g.name(r)
                ),
            ));
        }
    }
    for &r in reduces {
        let out_dims = g.dims(r);
        for d in g.downstream(members, r) {
            let inst = g.inst(d);
            if matches!(inst.op, Op::Reduce { .. }) {
                return Err(Refusal::hard(
                    "refuse-reduce-after-reduce",
                    format!(
                        "{} needs the finished result of {}, which takes a second pass over the data (a second kernel)",
                        g.name(d),
                        g.name(r)
                    ),
                ));
            }
            if !epilogue_op(&inst.op) || !same_elements(g.dims(d), out_dims) {
                return Err(Refusal::hard(
                    "refuse-reduce-epilogue-shape",
                    format!(
                        "{} ({}) uses the result of {} at shape {}: the whole reduction must finish before it, so it needs its own kernel",
                        g.name(d),
                        inst.op,
                        g.name(r),
                        inst.ty
                    ),
                ));
            }
        }
    }
    let (input_dims, _) = loop_of(g, first);
    let reduced_dims = g.dims(first);
    if let Some(&bad) = outputs.iter().find(|&&o| {
        let d = g.dims(o);
        !(same_elements(d, input_dims) || same_elements(d, reduced_dims) || reduces.contains(&o))
    }) {
        return Err(Refusal::hard(
            "refuse-output-shapes",
            format!(
                "{} ({}) would be an output of a reduction kernel but is neither the reduction's input nor its result shape",
                g.name(bad),
                g.inst(bad).ty
            ),
        ));
    }
    Ok(())
}
