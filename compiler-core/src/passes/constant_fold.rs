//! Constant folding: an instruction whose operands are all constants is evaluated with
//! the reference interpreter and replaced by a `Constant` holding its value.
//!
//! Each candidate is copied into a tiny module (its constant operands, itself, and any
//! reduction-like bodies it calls) and run by [`crate::interp`], so folding computes
//! exactly what execution would. The instruction keeps its name, type (layout included)
//! and `loc`; one [`Rewrite`] named `constant-fold` is logged per fold.
//!
//! Refused:
//! - side effects (`rng`, side-effecting custom calls), control flow and calls (`while`,
//!   `conditional`, `call`, `fusion`, custom calls), tuples and tokens, ids
//!   (`replica-id`, ...): only array results of ops with reduction-like bodies, at most;
//! - results with more than `max_elements` elements (folding would bloat the module);
//! - `iota` and `broadcast` whose result is larger than their largest operand: they
//!   are cheap generators that fuse into their users, and a literal of their value
//!   would only make the module bigger (a broadcast of a scalar constant stays);
//! - anything the interpreter fails on (the instruction is then left as it is).

use super::{Changed, Pass, PassLog, Rewrite};
use crate::ir::{CompId, Computation, InstId, Instruction, Literal, Module, Op, Type};
use std::collections::HashMap;

pub struct ConstantFold {
    /// Largest result (in elements) that is folded.
    pub max_elements: usize,
}

impl Default for ConstantFold {
    fn default() -> Self {
        ConstantFold { max_elements: 65_536 }
    }
}

/// Ops that may be folded when their operands are constants.
fn foldable_op(op: &Op) -> bool {
    !op.has_side_effect()
        && !matches!(
            op,
            Op::Parameter(_)
                | Op::Constant(_)
                | Op::While { .. }
                | Op::Case { .. }
                | Op::Call { .. }
                | Op::Fusion { .. }
                | Op::CustomCall(_)
                | Op::Rng { .. }
                | Op::RngBitGenerator { .. }
                | Op::ReplicaId
                | Op::PartitionId
                | Op::AfterAll
                | Op::Tuple
                | Op::GetTupleElement { .. }
                | Op::OptimizationBarrier
        )
}

/// Copies computation `c` of `src` (and what it calls) into `dst`; `None` on a cycle
/// (only a malformed module has one).
fn copy_comp(src: &Module, c: CompId, dst: &mut Module, map: &mut HashMap<CompId, CompId>, depth: u32) -> Option<CompId> {
    if let Some(&d) = map.get(&c) {
        return Some(d);
    }
    if depth > 64 {
        return None;
    }
    let mut comp = src.comps.get(c)?.clone();
    let ids: Vec<InstId> = comp.insts.keys().collect();
    for i in ids {
        let mut called = HashMap::new();
        for callee in comp.insts[i].op.called_computations() {
            called.insert(callee, copy_comp(src, callee, dst, map, depth + 1)?);
        }
        comp.insts[i].op.map_called_computations(|x| called[&x]);
    }
    let id = dst.add_computation(comp);
    map.insert(c, id);
    Some(id)
}

/// Runs instruction `id` of `comp` (all of whose operands are constants) in a module of
/// its own and returns its value.
fn evaluate(module: &Module, comp: CompId, id: InstId) -> Option<Literal> {
    let src = module.comp(comp);
    let inst = src.inst(id);
    let mut tiny = Module::new("constant_fold");
    let mut map = HashMap::new();
    let mut op = inst.op.clone();
    let mut called = HashMap::new();
    for c in op.called_computations() {
        called.insert(c, copy_comp(module, c, &mut tiny, &mut map, 0)?);
    }
    op.map_called_computations(|c| called[&c]);
    let mut entry = Computation::new("fold");
    let operands: Vec<InstId> = inst.operands.iter().map(|&o| entry.push(src.inst(o).clone())).collect();
    entry.root = entry.push(Instruction { op, operands, ..inst.clone() });
    tiny.entry = tiny.add_computation(entry);
    let value = crate::interp::run(&tiny, &[]).ok()?.into_array()?;
    let shape = inst.ty.as_array()?;
    value.shape.same_shape(shape).then(|| Literal { shape: shape.clone(), data: value.data })
}

impl ConstantFold {
    /// Whether `id` may be folded (before evaluating it).
    fn wants(&self, comp: &Computation, id: InstId) -> bool {
        let inst = comp.inst(id);
        let Type::Array(shape) = &inst.ty else { return false };
        if !foldable_op(&inst.op) || shape.num_elements() > self.max_elements {
            return false;
        }
        if !inst.operands.iter().all(|&o| matches!(comp.inst(o).op, Op::Constant(_))) {
            return false;
        }
        if matches!(inst.op, Op::Iota { .. } | Op::BroadcastInDim { .. }) {
            let largest = inst.operands.iter().filter_map(|&o| comp.inst(o).ty.as_array()).map(|s| s.num_elements()).max();
            return shape.num_elements() <= largest.unwrap_or(1);
        }
        true
    }
}

impl Pass for ConstantFold {
    fn name(&self) -> &'static str {
        "constant-fold"
    }

    fn run(&self, module: &mut Module, log: &mut PassLog) -> Changed {
        let mut changed = false;
        for comp in module.post_order() {
            let mut comp_changed = false;
            // In order: a folded instruction is a constant for the users after it.
            for id in module.comp(comp).order.clone() {
                if !self.wants(module.comp(comp), id) {
                    continue;
                }
                let Some(lit) = evaluate(module, comp, id) else { continue };
                let inst = module.comp_mut(comp).inst_mut(id);
                inst.op = Op::Constant(lit);
                inst.operands.clear();
                log.rewrites.push(Rewrite { rule: "constant-fold", inst: inst.name.clone() });
                comp_changed = true;
            }
            if comp_changed {
                module.comp_mut(comp).remove_dead();
                changed = true;
            }
        }
        changed
    }
}
