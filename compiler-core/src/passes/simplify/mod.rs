//! Algebraic simplification (XLA's `AlgebraicSimplifier`, in spirit): local rewrites that
//! make the module smaller or simpler without changing any result bit.
//!
//! The rules live in a table, [`RULES`], one small function each, grouped by family in
//! the files next to this one (`arith.rs`, `shapes.rs`, `slices.rs`, `convert.rs`,
//! `dot.rs`, `reduce.rs`). Each rule's doc comment states its identity (`x + (-0.0) -> x`)
//! and the conditions under which it is exact. Every rule that fires is recorded in
//! [`PassLog::rewrites`] under its stable name.
//!
//! The driver visits every live instruction of every reachable computation in order
//! (operands before users) and applies the first rule that matches; rounds repeat until
//! nothing fires, at most `max_rounds` times. A rule returns an [`Action`]:
//! - `Use(y)`: every use of the instruction is replaced by the existing value `y`. The
//!   driver refuses it unless `y`'s type is *exactly* the instruction's type, layouts
//!   included (an unset layout stays unset), so no rule can silently change a type.
//! - `Rewrite { op, operands }`: the instruction keeps its name, type and `loc` and gets
//!   a new op and operands. Helper instructions a rule needs (a scalar constant, an inner
//!   slice) are inserted just before it, with `Module::fresh_name` names.
//!
//! After each round that changed a computation, its unused instructions are removed
//! (parameters and side effects stay), so computations the pass does not change are
//! left exactly as they were.
//!
//! Provenance (in the graph's computations: the entry and its fusion bodies), recorded
//! here in the driver, not in the rules: a helper a rule inserts is `created_by` the
//! rule, a `Use(y)` is `replaced_by` y under the rule's name, and what the clean-up
//! removes is `removed` by `dce`. A `Rewrite` keeps the instruction's name, so its id.
//!
//! What it deliberately refuses (each has a test that it does not fire):
//! - float rewrites that are wrong for NaN, infinities or signed zeros: `x * 0 -> 0`,
//!   `x - x -> 0`, `x + 0.0 -> x` (wrong for `x = -0.0`; `x + (-0.0) -> x` is exact),
//!   `max(x, +inf) -> +inf` (wrong for NaN), `x == x -> true`;
//! - multiplications by powers of two are never turned into anything else for floats;
//! - lossy convert chains (`f32 -> f16 -> f32` is not the identity);
//! - reductions over no dimensions whose init is not the body's identity.
//!
//! A broadcast of a scalar constant is kept as a broadcast: it is cheap, fuses into its
//! users and keeps the module small; `constant-fold` refuses to expand it too. Elementwise
//! ops over scalar broadcasts are instead rewritten to broadcast one scalar op
//! (`elementwise-of-scalar-broadcasts`), which constant folding can then fold.

mod arith;
mod convert;
mod dot;
mod reduce;
mod shapes;
mod slices;
#[cfg(test)]
pub(crate) mod tests;

use super::provenance::Scope;
use super::{Changed, Pass, PassLog, Rewrite};
use crate::ir::{CompId, Computation, InstId, Instruction, Literal, Loc, Module, Op, Scalar, Shape, Type};
use cranelift_entity::EntityRef;
use std::collections::HashSet;

/// The algebraic simplifier; see the module documentation.
pub struct AlgebraicSimplifier {
    /// Upper bound on rounds over the module (each round applies every rule that fires);
    /// a fixed point is usually reached in two or three.
    pub max_rounds: usize,
}

impl Default for AlgebraicSimplifier {
    fn default() -> Self {
        AlgebraicSimplifier { max_rounds: 16 }
    }
}

/// What a rule does to the instruction it matched. (Short-lived, one at a time: the size
/// difference between the variants does not matter.)
#[allow(clippy::large_enum_variant)]
pub(crate) enum Action {
    /// Replace every use by this existing value (its type must be exactly the same).
    Use(InstId),
    /// Give the instruction a new op and operands; its name, type and loc stay.
    Rewrite { op: Op, operands: Vec<InstId> },
}

/// One rewrite rule: a stable name and the function that tries it.
pub(crate) struct Rule {
    pub name: &'static str,
    pub apply: fn(&mut Ctx, InstId) -> Option<Action>,
}

macro_rules! rules {
    ($($name:literal => $f:path,)*) => { &[$(Rule { name: $name, apply: $f },)*] };
}

/// All rules, in the order they are tried on each instruction.
pub(crate) const RULES: &[Rule] = rules![
    // Canonical form first, so that later rules see constants on the right.
    "constant-to-rhs" => arith::constant_to_rhs,
    "compare-constant-to-rhs" => arith::compare_constant_to_rhs,
    "add-zero" => arith::add_zero,
    "sub-zero" => arith::sub_zero,
    "mul-one" => arith::mul_one,
    "div-one" => arith::div_one,
    "mul-zero-int" => arith::mul_zero_int,
    "sub-self-int" => arith::sub_self_int,
    "xor-self" => arith::xor_self,
    "and-all-ones" => arith::and_all_ones,
    "and-zero" => arith::and_zero,
    "or-zero" => arith::or_zero,
    "or-all-ones" => arith::or_all_ones,
    "xor-zero" => arith::xor_zero,
    "shift-by-zero" => arith::shift_by_zero,
    "max-identity" => arith::max_identity,
    "min-identity" => arith::min_identity,
    "idempotent-self" => arith::idempotent_self,
    "add-negate" => arith::add_negate,
    "sub-negate" => arith::sub_negate,
    "select-const-pred" => arith::select_const_pred,
    "select-same" => arith::select_same,
    "select-not-pred" => arith::select_not_pred,
    "neg-neg" => arith::neg_neg,
    "not-not" => arith::not_not,
    "abs-abs" => arith::abs_abs,
    "abs-of-negate" => arith::abs_of_negate,
    "compare-self-int" => arith::compare_self_int,
    "elementwise-of-scalar-broadcasts" => arith::elementwise_of_scalar_broadcasts,
    "convert-same-type" => convert::convert_same_type,
    "convert-chain-exact" => convert::convert_chain_exact,
    "reshape-same-shape" => shapes::reshape_same_shape,
    "reshape-reshape" => shapes::reshape_reshape,
    "broadcast-identity" => shapes::broadcast_identity,
    "broadcast-broadcast" => shapes::broadcast_broadcast,
    "transpose-identity" => shapes::transpose_identity,
    "transpose-transpose" => shapes::transpose_transpose,
    "transpose-is-reshape" => shapes::transpose_is_reshape,
    "shape-op-of-scalar-broadcast" => shapes::shape_op_of_scalar_broadcast,
    "reverse-reverse" => shapes::reverse_reverse,
    "reverse-trivial-dims" => shapes::reverse_trivial_dims,
    "pad-zero" => shapes::pad_zero,
    "concat-single" => shapes::concat_single,
    "iota-trivial-dim" => shapes::iota_trivial_dim,
    "get-tuple-element-of-tuple" => shapes::gte_of_tuple,
    "slice-full" => slices::slice_full,
    "slice-slice" => slices::slice_slice,
    "slice-of-broadcast" => slices::slice_of_broadcast,
    "slice-of-concat" => slices::slice_of_concat,
    "dynamic-slice-constant" => slices::dynamic_slice_constant,
    "dynamic-update-slice-full" => slices::dynamic_update_slice_full,
    "dot-transpose-operand" => dot::dot_transpose_operand,
    "reduce-no-dims" => reduce::reduce_no_dims,
    "reduce-trivial-dims" => reduce::reduce_trivial_dims,
    "reduce-of-broadcast" => reduce::reduce_of_broadcast,
];

/// What a rule sees: the module and the computation being simplified.
pub(crate) struct Ctx<'m> {
    pub module: &'m mut Module,
    pub comp: CompId,
}

impl Ctx<'_> {
    pub fn inst(&self, id: InstId) -> &Instruction {
        self.module.comp(self.comp).inst(id)
    }
    pub fn op(&self, id: InstId) -> &Op {
        &self.inst(id).op
    }
    /// Operand `k` of `id`.
    pub fn arg(&self, id: InstId, k: usize) -> InstId {
        self.inst(id).operands[k]
    }
    pub fn args(&self, id: InstId) -> &[InstId] {
        &self.inst(id).operands
    }
    /// The array shape of `id` (`None` for tuples and tokens).
    pub fn shape(&self, id: InstId) -> Option<&Shape> {
        self.inst(id).ty.as_array()
    }
    /// The dimensions of `id` (empty for non-arrays, which no rule matches anyway).
    pub fn dims(&self, id: InstId) -> Vec<i64> {
        self.shape(id).map(|s| s.dims.clone()).unwrap_or_default()
    }

    /// The single value every element of `id` holds, when `id` is a constant whose
    /// elements all have the same bits, or a broadcast of one. Empty arrays have none.
    pub fn splat(&self, id: InstId) -> Option<Scalar> {
        match self.op(id) {
            Op::Constant(l) => literal_splat(l),
            Op::BroadcastInDim { .. } => self.splat(self.arg(id, 0)),
            _ => None,
        }
    }

    /// Inserts a new instruction just before `before` (so it dominates it), named
    /// `fresh_name(base)`, carrying `before`'s loc.
    pub fn insert_before(&mut self, before: InstId, base: &str, op: Op, operands: Vec<InstId>, ty: Type) -> InstId {
        let name = self.module.fresh_name(base);
        let comp = self.module.comp_mut(self.comp);
        let loc: Loc = comp.inst(before).loc.clone();
        let id = comp.insts.push(Instruction { name, op, operands, ty, loc });
        let pos = comp.order.iter().position(|&i| i == before).unwrap_or(comp.order.len());
        comp.order.insert(pos, id);
        id
    }

    /// Rewrites `id` (an array of any shape) into a splat of `value`: a constant when it
    /// is a scalar, else a broadcast of a new scalar constant (never a big literal).
    pub fn splat_action(&mut self, id: InstId, value: Scalar) -> Option<Action> {
        let shape = self.shape(id)?.clone();
        let scalar = Literal::scalar_from(shape.elem, value);
        if shape.rank() == 0 {
            let lit = Literal { shape: Shape { layout: None, ..shape.clone() }, data: scalar.data };
            return Some(Action::Rewrite { op: Op::Constant(lit), operands: vec![] });
        }
        let ty = Type::Array(scalar.shape.clone());
        let c = self.insert_before(id, "constant", Op::Constant(scalar), vec![], ty);
        Some(Action::Rewrite { op: Op::BroadcastInDim { dims: vec![] }, operands: vec![c] })
    }
}

/// The common value of a literal whose elements all have the same bit pattern.
pub(crate) fn literal_splat(l: &Literal) -> Option<Scalar> {
    if l.num_elements() == 0 {
        return None;
    }
    let first = l.bits(0);
    (1..l.num_elements()).all(|i| l.bits(i) == first).then(|| l.get(0))
}

/// Whether `id` has the operands and attributes its op needs, so that rules may index
/// them freely. The verifier guarantees this for verified modules; the check keeps the
/// pass from panicking on one that was not verified (such instructions are skipped).
fn well_formed(comp: &Computation, id: InstId) -> bool {
    let inst = comp.inst(id);
    let rank = |i: usize| inst.operands.get(i).and_then(|&o| comp.inst(o).ty.as_array()).map(Shape::rank);
    let out_rank = inst.ty.as_array().map(Shape::rank);
    let n = inst.operands.len();
    match &inst.op {
        Op::Unary(_) | Op::Convert | Op::Reshape | Op::GetTupleElement { .. } => n == 1,
        Op::Binary(_) | Op::Compare { .. } | Op::Dot(_) | Op::Pad { .. } => n == 2,
        Op::Select | Op::Clamp => n == 3,
        Op::BroadcastInDim { dims } => {
            n == 1 && rank(0) == Some(dims.len()) && dims.iter().all(|&d| d >= 0 && Some(d as usize) < out_rank)
        }
        Op::Transpose { perm } => {
            let mut sorted = perm.clone();
            sorted.sort_unstable();
            n == 1 && rank(0) == Some(perm.len()) && sorted.iter().enumerate().all(|(i, &d)| d == i as i64)
        }
        Op::Slice { start, limit, stride } => {
            n == 1 && rank(0) == Some(start.len()) && limit.len() == start.len() && stride.len() == start.len()
        }
        Op::Reverse { dims } => n == 1 && dims.iter().all(|&d| d >= 0 && Some(d as usize) < rank(0)),
        Op::Concatenate { dim } => n >= 1 && *dim >= 0 && (0..n).all(|i| rank(i).is_some_and(|r| (*dim as usize) < r)),
        Op::DynamicSlice { .. } => n >= 1,
        Op::DynamicUpdateSlice => n >= 2,
        Op::Reduce { .. } => n >= 2,
        Op::Iota { dim } => *dim >= 0 && Some(*dim as usize) < out_rank,
        _ => true,
    }
}

impl AlgebraicSimplifier {
    /// One round over one computation: tries the rules on every live instruction.
    /// Records provenance when `scope` is given (the computation is in the graph).
    fn round(&self, module: &mut Module, comp: CompId, log: &mut PassLog, mut scope: Option<&mut Scope>) -> bool {
        let order = module.comp(comp).order.clone();
        let mut changed = false;
        let mut replaced: HashSet<InstId> = HashSet::new();
        for id in order {
            if replaced.contains(&id) {
                continue;
            }
            let mut cx = Ctx { module, comp };
            if matches!(cx.op(id), Op::Parameter(_)) || cx.op(id).has_side_effect() {
                continue;
            }
            // Rules look at the instruction and its operands (and their operands).
            let c = cx.module.comp(comp);
            if !well_formed(c, id) || !c.inst(id).operands.iter().all(|&o| well_formed(c, o)) {
                continue;
            }
            for rule in RULES {
                let made_from = cx.module.comp(comp).insts.len();
                let action = (rule.apply)(&mut cx, id);
                // Helpers the rule inserted (whether or not its action is taken: one left
                // unused is removed with the round's dead code).
                if let Some(scope) = scope.as_deref_mut() {
                    for k in made_from..cx.module.comp(comp).insts.len() {
                        scope.created(cx.module, comp, InstId::new(k), rule.name, log);
                    }
                }
                let Some(action) = action else { continue };
                let c = cx.module.comp_mut(comp);
                let name = c.inst(id).name.clone();
                match action {
                    Action::Use(y) => {
                        if y == id || c.inst(y).ty != c.inst(id).ty {
                            continue;
                        }
                        c.replace_all_uses(id, y);
                        replaced.insert(id);
                        if let Some(scope) = scope.as_deref_mut() {
                            scope.replaced(cx.module, comp, id, y, rule.name, log);
                        }
                    }
                    Action::Rewrite { op, operands } => {
                        let inst = c.inst_mut(id);
                        inst.op = op;
                        inst.operands = operands;
                    }
                }
                log.rewrites.push(Rewrite { rule: rule.name, inst: name });
                changed = true;
                break;
            }
        }
        changed
    }
}

impl Pass for AlgebraicSimplifier {
    fn name(&self) -> &'static str {
        "simplify"
    }

    fn run(&self, module: &mut Module, log: &mut PassLog) -> Changed {
        let mut changed = false;
        let mut scope = Scope::new(module);
        for comp in module.post_order() {
            let mut comp_changed = false;
            let in_graph = scope.in_graph(module, comp);
            for _ in 0..self.max_rounds {
                if !self.round(module, comp, log, in_graph.then_some(&mut scope)) {
                    break;
                }
                // Drop what the round left unused, so that the next round neither
                // revisits it nor counts it as a user.
                let dead = module.comp_mut(comp).remove_dead_ids();
                if in_graph {
                    for id in dead {
                        scope.removed(module, comp, id, "dce", log);
                    }
                }
                comp_changed = true;
            }
            changed |= comp_changed;
        }
        changed
    }
}
