//! Common subexpression elimination: one instruction per distinct (op, operands, type).
//!
//! Operands of commutative binary ops are compared as a set (`a+b` equals `b+a`).
//! Refuses side-effecting instructions and parameters. Constants are merged when their
//! literals have the same bits: `-0.0` and `0.0` compare equal as floats but are
//! different constants (`max(x, -0)` and `max(x, 0)` differ at `x = -0`).
//!
//! Provenance: each duplicate is `replaced_by` the instruction it equals and `removed`,
//! both under the rule `cse` (this pass drops duplicates itself; DCE has nothing left).

use super::provenance::Scope;
use super::{Changed, Pass, PassLog};
use crate::ir::{InstId, Instruction, Module, Op};
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;

pub struct Cse;

/// The part of an instruction that identifies its value, apart from the op's attributes
/// (compared separately, since literals hold floats and cannot be hashed): the op's
/// name, the operands (sorted for a commutative op), and a hash of the result type and
/// of a constant's first element, so that a module's many constants and broadcasts of
/// one scalar do not all land in one bucket (which made the pass quadratic in depth).
/// Up to four operands are inline, as are a key's candidates up to one: most keys
/// allocate nothing.
type Key = (&'static str, SmallVec<[InstId; 4]>, u64);

fn key(inst: &Instruction) -> Key {
    use std::hash::{Hash, Hasher};
    let mut operands = SmallVec::from_slice(&inst.operands);
    if let Op::Binary(b) = &inst.op {
        if b.is_commutative() {
            operands.sort();
        }
    }
    // A bucket's hash (the ops in it are compared in full): no need for SipHash's.
    let mut h = rustc_hash::FxHasher::default();
    inst.ty.hash(&mut h);
    if let Op::Constant(l) = &inst.op {
        (l.num_elements() > 0).then(|| l.bits(0)).hash(&mut h);
    }
    (inst.op.hlo_name(), operands, h.finish())
}

/// Whether two ops with equal keys compute the same value: equal attributes, and for
/// constants the same bits (float equality would merge signed zeros, and never NaNs).
fn same_op(a: &Op, b: &Op) -> bool {
    match (a, b) {
        (Op::Constant(x), Op::Constant(y)) => {
            x.shape == y.shape && (0..x.num_elements()).all(|i| x.bits(i) == y.bits(i))
        }
        _ => a == b,
    }
}

impl Pass for Cse {
    fn name(&self) -> &'static str {
        "cse"
    }
    fn run(&self, module: &mut Module, log: &mut PassLog) -> Changed {
        let mut changed = false;
        let mut scope = Scope::new(module, log);
        for comp_id in module.post_order() {
            let in_graph = scope.in_graph(module, comp_id);
            let comp = module.comp_mut(comp_id);
            let mut seen: HashMap<Key, SmallVec<[InstId; 1]>> =
                HashMap::with_capacity_and_hasher(comp.order.len(), Default::default());
            let mut replaced: HashMap<InstId, InstId> = HashMap::default();
            // The same pairs in order, for the provenance.
            let mut merged: Vec<(InstId, InstId)> = Vec::new();
            for idx in 0..comp.order.len() {
                let id = comp.order[idx];
                // Earlier replacements may have rewritten this instruction's operands.
                for o in comp.insts[id].operands.iter_mut() {
                    if let Some(&new) = replaced.get(o) {
                        *o = new;
                    }
                }
                let inst = &comp.insts[id];
                if matches!(inst.op, Op::Parameter(_)) || inst.op.has_side_effect() {
                    continue;
                }
                let k = key(inst);
                let candidates = seen.entry(k).or_default();
                let same = candidates
                    .iter()
                    .copied()
                    .find(|&c| same_op(&comp.insts[c].op, &inst.op) && comp.insts[c].ty == inst.ty);
                match same {
                    Some(earlier) => {
                        replaced.insert(id, earlier);
                        if in_graph {
                            merged.push((id, earlier));
                        }
                    }
                    None => candidates.push(id),
                }
            }
            if !replaced.is_empty() {
                changed = true;
                if let Some(&new) = replaced.get(&comp.root) {
                    comp.root = new;
                }
                comp.order.retain(|id| !replaced.contains_key(id));
            }
            for (id, earlier) in merged {
                scope.replaced(module, comp_id, id, earlier, "cse", log);
                scope.removed(module, comp_id, id, "cse", log);
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::*;
    use crate::passes::PassLog;

    fn inst(name: &str, op: Op, operands: Vec<InstId>, ty: &Type) -> Instruction {
        Instruction { name: name.into(), op, operands, ty: ty.clone(), loc: Loc::default() }
    }

    #[test]
    fn merges_commutative_duplicates_transitively() {
        let mut m = Module::new("m");
        let mut c = Computation::new("main");
        let t = Type::array(ElementType::F32, vec![2]);
        let a = c.push_param("a", t.clone(), Loc::default());
        let b = c.push_param("b", t.clone(), Loc::default());
        let s1 = c.push(inst("s1", Op::Binary(BinaryOp::Add), vec![a, b], &t));
        let s2 = c.push(inst("s2", Op::Binary(BinaryOp::Add), vec![b, a], &t));
        let e1 = c.push(inst("e1", Op::Unary(UnaryOp::Exp), vec![s1], &t));
        let e2 = c.push(inst("e2", Op::Unary(UnaryOp::Exp), vec![s2], &t));
        let d1 = c.push(inst("d1", Op::Binary(BinaryOp::Sub), vec![e1, e2], &t));
        // Subtract is not commutative: b-a differs from a-b.
        let d2 = c.push(inst("d2", Op::Binary(BinaryOp::Sub), vec![b, a], &t));
        let d3 = c.push(inst("d3", Op::Binary(BinaryOp::Sub), vec![a, b], &t));
        let root =
            c.push(inst("root", Op::Tuple, vec![d1, d2, d3], &Type::Tuple(vec![t.clone(), t.clone(), t.clone()])));
        c.root = root;
        m.entry = m.add_computation(c);
        assert!(Cse.run(&mut m, &mut PassLog::default()));
        let c = m.entry_comp();
        assert_eq!(c.order, vec![a, b, s1, e1, d1, d2, d3, root]);
        assert_eq!(c.inst(d1).operands, vec![e1, e1]);
        assert!(!Cse.run(&mut m, &mut PassLog::default()));
        let _ = (s2, e2);
    }

    #[test]
    fn merges_constants_by_bits() {
        // 0.0 and -0.0 are equal floats but different constants; two 1.5s are one.
        let mut m = Module::new("m");
        let mut c = Computation::new("main");
        let t = Type::array(ElementType::F32, vec![]);
        let k = |v: f64| Op::Constant(Literal::from_f64s(Shape::new(ElementType::F32, vec![]), &[v]));
        let z = c.push(inst("z", k(0.0), vec![], &t));
        let nz = c.push(inst("nz", k(-0.0), vec![], &t));
        let a = c.push(inst("a", k(1.5), vec![], &t));
        let b = c.push(inst("b", k(1.5), vec![], &t));
        let root = c.push(inst("root", Op::Tuple, vec![z, nz, a, b], &Type::Tuple(vec![t.clone(); 4])));
        c.root = root;
        m.entry = m.add_computation(c);
        assert!(Cse.run(&mut m, &mut PassLog::default()));
        let c = m.entry_comp();
        assert_eq!(c.order, vec![z, nz, a, root]);
        assert_eq!(c.inst(root).operands, vec![z, nz, a, a]);
    }
}
