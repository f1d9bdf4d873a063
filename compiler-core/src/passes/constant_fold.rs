//! Constant folding: an instruction whose operands are all constants is evaluated with
//! the reference interpreter and replaced by a `Constant` holding its value.
//!
//! Each candidate is copied into a tiny module (its constant operands, itself, and any
//! reduction-like bodies it calls) and run by [`crate::interp`], so folding computes
//! exactly what execution would. The instruction keeps its name, type (layout included)
//! and `loc`; one [`Rewrite`] named `constant-fold` is logged per fold. Since the folded
//! instruction keeps its name, the only provenance is for the operands the fold leaves
//! unused, which are `removed` by `dce`.
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

use super::provenance::Scope;
use super::{Changed, Pass, PassLog, Rewrite};
use crate::ir::{CompId, Computation, InstId, Instruction, Literal, Module, Op, Shape, Type};
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
fn copy_comp(
    src: &Module,
    c: CompId,
    dst: &mut Module,
    map: &mut HashMap<CompId, CompId>,
    depth: u32,
) -> Option<CompId> {
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
    // Literals carry no layout (as the parsers make them); the instruction's type keeps it.
    value.shape.same_shape(shape).then(|| Literal { shape: Shape { layout: None, ..shape.clone() }, data: value.data })
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
            let largest =
                inst.operands.iter().filter_map(|&o| comp.inst(o).ty.as_array()).map(|s| s.num_elements()).max();
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
        let mut scope = Scope::new(module, log);
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
                let dead = module.comp_mut(comp).remove_dead_ids();
                if !dead.is_empty() && scope.in_graph(module, comp) {
                    for id in dead {
                        scope.removed(module, comp, id, "dce", log);
                    }
                }
                changed = true;
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::dce::Dce;
    use crate::passes::simplify::tests::{assert_same_results, entry_text, module, normalize};
    use crate::passes::simplify::AlgebraicSimplifier;

    const ADD_F32: &str = "%add (a: f32[], b: f32[]) -> f32[] {\n %a = f32[] parameter(0)\n %b = f32[] parameter(1)\n ROOT %r = f32[] add(%a, %b)\n}\n";

    fn fold_with(pass: &ConstantFold, comps: &str, body: &str) -> (Module, Module, PassLog, bool) {
        let m = module(comps, body);
        let mut after = m.clone();
        let mut log = PassLog::default();
        let changed = pass.run(&mut after, &mut log);
        (m, after, log, changed)
    }

    fn fold(body: &str) -> (Module, Module, PassLog, bool) {
        fold_with(&ConstantFold::default(), "", body)
    }

    #[test]
    fn folds_elementwise_ops_exactly() {
        let (_, after, log, changed) = fold(
            "%a = f32[3] constant({1, 2, -0})\n %b = f32[3] constant({0.5, nan, 0})\n %s = f32[3] add(%a, %b)\n ROOT %n = f32[3] negate(%s)",
        );
        assert!(changed);
        // -(1 + 0.5), -(2 + NaN), -(-0 + 0) = -(+0): folded in one sweep, in order.
        assert_eq!(entry_text(&after), "ROOT %n = f32[3] constant({-1.5, -nan, -0})");
        let rules: Vec<(&str, &str)> = log.rewrites.iter().map(|r| (r.rule, r.inst.as_str())).collect();
        assert_eq!(rules, vec![("constant-fold", "s"), ("constant-fold", "n")]);
    }

    #[test]
    fn folds_reductions_with_their_body() {
        let (_, after, _, changed) = fold_with(
            &ConstantFold::default(),
            ADD_F32,
            "%x = f32[2,2] constant({ {1, 2}, {3, 4.5} })\n %z = f32[] constant(0)\n ROOT %r = f32[2] reduce(%x, %z), dimensions={1}, to_apply=%add",
        );
        assert!(changed);
        assert_eq!(entry_text(&after), "ROOT %r = f32[2] constant({3, 7.5})");
    }

    #[test]
    fn folds_shape_ops_and_converts_keeping_layouts() {
        let (_, after, _, changed) = fold(
            "%x = s32[2,3]{1,0} constant({ {1, 2, 3}, {4, 5, 6} })\n %t = s32[3,2]{0,1} transpose(%x), dimensions={1,0}\n ROOT %c = u8[3,2]{0,1} convert(%t)",
        );
        assert!(changed);
        assert_eq!(entry_text(&after), "ROOT %c = u8[3,2]{0,1} constant({ {1, 4}, {2, 5}, {3, 6} })");
    }

    #[test]
    fn refuses_generators_big_results_and_non_constants() {
        // A broadcast of a scalar constant and an iota stay (they would bloat the module).
        let body = "%c = f32[] constant(2)\n %b = f32[1000] broadcast(%c), dimensions={}\n %i = f32[1000] iota(), iota_dimension=0\n ROOT %t = (f32[1000], f32[1000]) tuple(%b, %i)";
        let (m, after, log, changed) = fold(body);
        assert!(!changed && log.rewrites.is_empty());
        assert_eq!(entry_text(&after), entry_text(&m));
        // Over the element cap.
        let pass = ConstantFold { max_elements: 3 };
        let (_, _, _, changed) =
            fold_with(&pass, "", "%a = s32[4] constant({1, 2, 3, 4})\n ROOT %n = s32[4] negate(%a)");
        assert!(!changed);
        let (_, _, _, changed) = fold_with(&pass, "", "%a = s32[3] constant({1, 2, 3})\n ROOT %n = s32[3] negate(%a)");
        assert!(changed);
        // A parameter operand.
        let (_, _, _, changed) =
            fold("%x = f32[2] parameter(0)\n %a = f32[2] constant({1, 2})\n ROOT %s = f32[2] add(%x, %a)");
        assert!(!changed);
    }

    #[test]
    fn one_element_generators_fold() {
        let (_, after, _, changed) =
            fold("%c = s32[] constant(7)\n %b = s32[1] broadcast(%c), dimensions={}\n ROOT %i = s32[1] add(%b, %b)");
        assert!(changed);
        assert_eq!(entry_text(&after), "ROOT %i = s32[1] constant({14})");
    }

    #[test]
    fn simplify_then_fold_preserves_meaning() {
        // x * (broadcast(2) + broadcast(3)) + broadcast(-0): the scalar broadcasts become
        // one broadcast of a folded 5; the -0 add goes away.
        let m = module(
            "",
            "%x = f32[2,3] parameter(0)\n %two = f32[] constant(2)\n %three = f32[] constant(3)\n \
             %b2 = f32[2,3] broadcast(%two), dimensions={}\n %b3 = f32[2,3] broadcast(%three), dimensions={}\n \
             %s = f32[2,3] add(%b2, %b3)\n %m = f32[2,3] multiply(%s, %x)\n %z = f32[] constant(-0)\n \
             %bz = f32[2,3] broadcast(%z), dimensions={}\n ROOT %r = f32[2,3] add(%m, %bz)",
        );
        let mut after = m.clone();
        let mut log = PassLog::default();
        for _ in 0..3 {
            AlgebraicSimplifier::default().run(&mut after, &mut log);
            ConstantFold::default().run(&mut after, &mut log);
            Dce.run(&mut after, &mut log);
        }
        let want = "%x = f32[2,3] parameter(0)\n %add.0 = f32[] constant(5)\n %s = f32[2,3] broadcast(%add.0), dimensions={}\n ROOT %m = f32[2,3] multiply(%x, %s)";
        assert_eq!(entry_text(&after), normalize(want));
        assert_same_results(&m, &after, 100);
    }

    #[test]
    fn folding_preserves_meaning_on_integers() {
        let (m, after, _, changed) = fold(
            "%x = s8[4] parameter(0)\n %a = s8[4] constant({127, -128, 5, -1})\n %b = s8[4] constant({1, -1, 0, -1})\n \
             %s = s8[4] add(%a, %b)\n %d = s8[4] divide(%a, %b)\n %q = s8[4] multiply(%s, %d)\n ROOT %r = s8[4] add(%q, %x)",
        );
        assert!(changed);
        assert_same_results(&m, &after, 50);
        // s = {127 + 1, -128 + -1, 5, -2} wraps to {-128, 127, 5, -2}; d = {127, -128 / -1
        // (wraps to -128), 5 / 0 (-1, as XLA divides by zero), 1}; q = s * d wraps to:
        let c = after.entry_comp();
        let q = c.order.iter().map(|&i| c.inst(i)).find(|i| i.name == "q").unwrap();
        let Op::Constant(l) = &q.op else { panic!("q not folded") };
        assert_eq!(l.to_f64_vec(), vec![-128.0, -128.0, -5.0, -2.0]);
    }
}
