//! A scatter as a GPU runs it: the operand copied to the output, then one thread per
//! update element combining it into the element it targets with an atomic
//! read-modify-write. The plan's [`ScatterSpec`] says what the scatter is; this module
//! describes the two phases as elemental descriptions, so an emitter spells the
//! loads, the index arithmetic and the bounds test through the lowering driver like any
//! kernel's, and only the atomic combine is its own.
//!
//! Which scatters qualify: one operand of a 32-, 16- or 8-bit type (not pred; a narrow
//! element shares its 32-bit word with its neighbours, so a target updates it inside
//! the word, with a compare-exchange loop or bit operations that leave them alone), and
//! - an update computation that is `add`, `maximum` or `minimum` of the current value
//!   and the update (in either order), or an integer `multiply`: those combine
//!   atomically, and as they commute, the order the updates land in does not matter for
//!   integers (wrapping sums and products are exact in any order), nor for max and min
//!   (an exact choice of one of the values); a float sum rounds at each step, so its
//!   value may differ from the sequential scatter's by rounding, as XLA's GPU scatters
//!   do; or
//! - any update computation, when the producer promises `unique_indices`: each element
//!   is then updated by one update at most, so a plain read, combine and store is the
//!   sequential scatter's result whatever the order (a broken promise is undefined
//!   behaviour in XLA too); or
//! - an update computation that returns the update (a scatter that replaces, as JAX's
//!   `x.at[i].set(v)` does) without the promise: several updates may then target one
//!   element and the sequential scatter keeps the last one in the update array's
//!   row-major order. A target runs it deterministically in two passes after the copy
//!   ([`AtomicScatter::last_wins`]): each update claims its element with an atomic max of
//!   its position, then the update whose claim won stores itself.
//!
//! Any other scatter (a float product, or another update computation without the
//! promise: their values depend on the order) stays with the sequential scatter, where
//! a target has one, or on the host.

use super::elemental::{Builder, Elemental, ExprId, Idx, IdxId, Node, Output};
use super::ScatterSpec;
use crate::ir::{BinaryOp, Computation, ElementType, Scalar};
use rustc_hash::FxHashMap as HashMap;

/// A scatter's two phases on a GPU ([`atomic_scatter`]).
#[derive(Clone, Debug, PartialEq)]
pub struct AtomicScatter {
    /// The copy of the operand into the output: a loop kernel over the operand (kernel
    /// input 0 to the output). A target skips it when the two share their bytes.
    pub copy: Elemental,
    /// The updates: a space of the update array's dimensions over the kernel's index
    /// array (input 1) and updates (input 2); its nodes hold `value`, `in_bounds` and the
    /// loads they read, its indices `target`. It has no outputs: the combine is the
    /// target's.
    pub updates: Elemental,
    /// The update element at the current position.
    pub value: ExprId,
    /// pred: whether the element it targets lies inside the operand (else it is
    /// skipped, as the interpreter skips it).
    pub in_bounds: ExprId,
    /// The row-major position of the targeted element in the output (meaningful where
    /// `in_bounds` holds).
    pub target: IdxId,
    /// How the update lands: combined atomically with `Add`, `Max` or `Min` (new =
    /// op(current, value), with HLO's semantics); `None` (unique indices): `new_value`,
    /// which reads the current element through input 2 (the output itself), stored.
    pub op: Option<BinaryOp>,
    /// The update computation applied to the current element and `value` (read only
    /// when `op` is `None`).
    pub new_value: ExprId,
    /// A replacing scatter whose indices may repeat (`op` is `None` and `new_value` is
    /// `value`): of the updates that target one element, only the one at the highest
    /// position of the update space may store, so a target needs a scratch word per
    /// output element in which the updates claim their elements first.
    pub last_wins: bool,
    pub elem: ElementType,
}

/// The element types whose updates are combined atomically.
const ATOMIC_ELEMS: [ElementType; 9] = {
    use ElementType::*;
    [F32, S32, U32, F16, BF16, S16, U16, S8, U8]
};

/// `spec` in two phases ([`AtomicScatter`]), or why it does not qualify (see the
/// module doc). `comp` is the planned computation (the descriptions name no
/// instruction of it).
pub fn atomic_scatter(spec: &ScatterSpec, comp: &Computation) -> Result<AtomicScatter, String> {
    let [elem] = spec.elems[..] else { return Err("a variadic scatter".into()) };
    if !ATOMIC_ELEMS.contains(&elem) {
        return Err(format!("a scatter of {elem}: atomic combines are for 32-, 16- and 8-bit types but pred"));
    }
    let op = combiner_op(&spec.combiner, elem);
    let last_wins = op.is_none() && !spec.unique_indices;
    if last_wins && !replaces(&spec.combiner) {
        return Err("the update computation is not add, maximum or minimum of the current value and the update \
                    (nor an integer multiply), nor the update itself, and the indices are not promised unique"
            .into());
    }

    // The copy: output[i] = operand[i].
    let mut b = Builder::new(comp, HashMap::default());
    b.e.space = spec.operand_dims.clone();
    b.e.reduced = vec![false; spec.operand_dims.len()];
    let vars: Vec<IdxId> = (0..spec.operand_dims.len() as u32).map(|v| b.idx(Idx::Var(v))).collect();
    let linear = b.linearize(&vars, &spec.operand_dims);
    let load = b.node(Node::Load { input: 0, linear }, elem);
    b.e.outputs.push(Output { expr: load, inner: false, elem });
    b.e.input_elems = vec![elem];
    let copy = b.e;

    // The updates, over the update array: inputs 0 (the index array) and 1 (updates).
    let mut b = Builder::new(comp, HashMap::default());
    b.e.space = spec.update_dims.clone();
    b.e.reduced = vec![false; spec.update_dims.len()];
    // Input 2 is the output itself: the current elements, read where `op` is `None`.
    b.e.input_elems = vec![spec.index_elem, elem, elem];
    let u: Vec<IdxId> = (0..spec.update_dims.len() as u32).map(|v| b.idx(Idx::Var(v))).collect();
    let at = b.linearize(&u, &spec.update_dims);
    let value = b.node(Node::Load { input: 1, linear: at }, elem);
    // The batch position in the index array: its dimensions but the vector's, in order,
    // are the update's scatter axes.
    let index_rank = spec.index_dims.len();
    let batch: Vec<usize> = (0..index_rank).filter(|&d| d != spec.index_vector_dim).collect();
    let batch_coord = |d: usize| batch.iter().position(|&x| x == d).map(|j| u[spec.scatter_axes[j]]);
    let rank = spec.operand_dims.len();
    let mut target: Vec<IdxId> = vec![b.konst(0); rank];
    let mut checked = vec![false; rank];
    for (k, &d) in spec.scatter_dims_to_operand_dims.iter().enumerate() {
        let mut coords = Vec::with_capacity(index_rank);
        for dim in 0..index_rank {
            coords.push(if dim == spec.index_vector_dim {
                b.konst(k as i64)
            } else {
                batch_coord(dim).ok_or("bad scatter axes")?
            });
        }
        let linear = b.linearize(&coords, &spec.index_dims);
        let start = b.node(Node::Load { input: 0, linear }, spec.index_elem);
        // Clamped only so far that an out-of-range start stays out of range once the
        // window offset is added (and the index arithmetic stays small).
        let window = spec.window.iter().find(|&&(_, od)| od == d).map_or(0, |&(a, _)| spec.update_dims[a]);
        let data = b.idx(Idx::Data(start));
        let start = b.idx(Idx::Clamp(data, -window.max(1), spec.operand_dims[d]));
        target[d] = b.add(target[d], start);
        checked[d] = true;
    }
    for &(od, id) in &spec.batching {
        let coord = batch_coord(id).ok_or("bad scatter batching dims")?;
        target[od] = b.add(target[od], coord);
    }
    for &(a, od) in &spec.window {
        target[od] = b.add(target[od], u[a]);
    }
    let mut in_bounds: Option<ExprId> = None;
    for d in (0..rank).filter(|&d| checked[d]) {
        let inside = b.node(Node::InRange { idx: target[d], lo: 0, hi: spec.operand_dims[d] }, ElementType::Pred);
        in_bounds = Some(match in_bounds {
            None => inside,
            Some(p) => b.node(Node::Binary(BinaryOp::And, p, inside), ElementType::Pred),
        });
    }
    let in_bounds = match in_bounds {
        Some(p) => p,
        None => b.node(Node::Const(Scalar::Pred(true)), ElementType::Pred),
    };
    let target = b.linearize(&target, &spec.operand_dims);
    let current = b.node(Node::Load { input: 2, linear: target }, elem);
    let new_value = match op {
        Some(_) => value,
        None => apply(&mut b, &spec.combiner, current, value)?,
    };
    Ok(AtomicScatter { copy, updates: b.e, value, in_bounds, target, op, new_value, last_wins, elem })
}

/// The update computation `c` (a scalar function of inputs 0, the current value, and
/// 1, the update) rebuilt in `b` over `current` and `update`: its one output's node.
fn apply(b: &mut Builder, c: &Elemental, current: ExprId, update: ExprId) -> Result<ExprId, String> {
    let mut map: Vec<ExprId> = Vec::with_capacity(c.nodes.len());
    for n in &c.nodes {
        let m = |x: ExprId| map[x.0 as usize];
        let node = match n.node {
            Node::Load { input: 0, .. } => {
                map.push(current);
                continue;
            }
            Node::Load { input: 1, .. } => {
                map.push(update);
                continue;
            }
            Node::Const(s) => Node::Const(s),
            Node::Unary(op, a) => Node::Unary(op, m(a)),
            Node::Binary(op, a, x) => Node::Binary(op, m(a), m(x)),
            Node::Compare { dir, total, a, b: x } => Node::Compare { dir, total, a: m(a), b: m(x) },
            Node::Select { pred, on_true, on_false } => {
                Node::Select { pred: m(pred), on_true: m(on_true), on_false: m(on_false) }
            }
            Node::Clamp { lo, x, hi } => Node::Clamp { lo: m(lo), x: m(x), hi: m(hi) },
            Node::Convert(a) => Node::Convert(m(a)),
            Node::BitcastConvert(a) => Node::BitcastConvert(m(a)),
            ref other => return Err(format!("the update computation has a {other:?} node")),
        };
        map.push(b.node(node, n.elem));
    }
    let [out] = c.outputs.as_slice() else { return Err("the update computation has several results".into()) };
    Ok(map[out.expr.0 as usize])
}

/// Whether the update computation returns the update (input 1) unchanged.
fn replaces(c: &Elemental) -> bool {
    let [out] = c.outputs.as_slice() else { return false };
    matches!(c.expr(out.expr).node, Node::Load { input: 1, .. })
}

/// The op of an update computation `op(current, update)` (or `op(update, current)`) for
/// an op whose combines may land in any order: add, max and min, and an integer
/// multiply (a float product rounds differently in another order, and no target has an
/// atomic for it anyway).
fn combiner_op(c: &Elemental, elem: ElementType) -> Option<BinaryOp> {
    let [out] = c.outputs.as_slice() else { return None };
    let Node::Binary(op, a, b) = c.expr(out.expr).node else { return None };
    let input = |x: ExprId| match c.expr(x).node {
        Node::Load { input, .. } => Some(input),
        _ => None,
    };
    let mut inputs = [input(a)?, input(b)?];
    inputs.sort();
    let commutes = match op {
        BinaryOp::Add | BinaryOp::Max | BinaryOp::Min => true,
        BinaryOp::Mul => elem.is_int(),
        _ => false,
    };
    (inputs == [0, 1] && commutes).then_some(op)
}
