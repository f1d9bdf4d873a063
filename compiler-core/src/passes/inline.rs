//! Inlining: replaces every `call` instruction by a copy of the callee's body.
//!
//! StableHLO's `func.call` is already inlined by the parser; XLA HLO text keeps `call`
//! (JAX's dumps have them around named sub-functions). Later passes (fusion above all)
//! only see through inlined code, so this pass runs first. Callees are inlined bottom-up
//! (a callee's own calls first), so one run leaves no `call` reachable from the entry.
//! Refuses nothing: the parsers reject recursion, so every call graph is a DAG.
//!
//! The copies get fresh names (a callee may be inlined in several places), so in the
//! graph each is `created_by` `inline-call`; the call is `replaced_by` the copy of the
//! callee's root (or the operand it returns) and `removed`.

use super::provenance::Scope;
use super::{Changed, Pass, PassLog, Rewrite};
use crate::ir::{CompId, InstId, Instruction, Module, Op};
use std::collections::HashMap;

pub struct Inline;

impl Pass for Inline {
    fn name(&self) -> &'static str {
        "inline"
    }

    fn run(&self, module: &mut Module, log: &mut PassLog) -> Changed {
        let mut changed = false;
        let mut scope = Scope::new(module, log);
        // Post order: callees before callers, so every body copied is already call-free.
        for comp_id in module.post_order() {
            let mut in_graph = None;
            while let Some(pos) = first_call(module, comp_id) {
                let in_graph = *in_graph.get_or_insert_with(|| scope.in_graph(module, comp_id));
                inline_at(module, comp_id, pos, log, in_graph.then_some(&mut scope));
                changed = true;
            }
        }
        changed
    }
}

/// Position in `order` of the first `call` in `comp`.
fn first_call(module: &Module, comp: CompId) -> Option<usize> {
    let c = module.comp(comp);
    c.order.iter().position(|&id| matches!(c.inst(id).op, Op::Call { .. }))
}

/// Replaces the call at `order[pos]` with a copy of its callee's live instructions.
/// Records provenance when `scope` is given (the caller is in the graph).
fn inline_at(module: &mut Module, caller: CompId, pos: usize, log: &mut PassLog, scope: Option<&mut Scope>) {
    let call_id = module.comp(caller).order[pos];
    let call = module.comp(caller).inst(call_id).clone();
    let Op::Call { comp: callee } = call.op else { return };
    let body = module.comp(callee).clone();

    let mut map: HashMap<InstId, InstId> = HashMap::new();
    let mut new_ids: Vec<InstId> = Vec::new();
    for &id in &body.order {
        let inst = body.inst(id);
        if let Op::Parameter(n) = inst.op {
            // Parameters become the call's operands; a malformed call keeps the rest.
            if let Some(&arg) = call.operands.get(n as usize) {
                map.insert(id, arg);
                continue;
            }
        }
        let name = module.fresh_name(inst.op.hlo_name());
        let copy = Instruction {
            name,
            op: inst.op.clone(),
            operands: inst.operands.iter().map(|o| map.get(o).copied().unwrap_or(*o)).collect(),
            ty: inst.ty.clone(),
            // The caller's location says where the call was made; the body's, what it does.
            loc: if inst.loc.line == 0 { call.loc.clone() } else { inst.loc.clone() },
        };
        let new_id = module.comp_mut(caller).insts.push(copy);
        map.insert(id, new_id);
        new_ids.push(new_id);
    }
    let result = map.get(&body.root).copied();
    let comp = module.comp_mut(caller);
    comp.order.splice(pos..pos + 1, new_ids.iter().copied());
    if let Some(result) = result {
        comp.replace_all_uses(call_id, result);
    }
    const RULE: &str = "inline-call";
    if let Some(scope) = scope {
        for id in new_ids {
            scope.created(module, caller, id, RULE, log);
        }
        if let Some(result) = result {
            scope.replaced(module, caller, call_id, result, RULE, log);
        }
        scope.removed(module, caller, call_id, RULE, log);
    }
    log.rewrites.push(Rewrite { rule: RULE, inst: call.name });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::Interpreter;
    use crate::ir::*;

    #[test]
    fn inlines_nested_calls_and_keeps_values() {
        let t = Type::array(ElementType::F32, vec![2]);
        let mut m = Module::new("m");
        // inner(x) = x * x
        let mut inner = Computation::new("inner");
        let x = inner.push_param("x", t.clone(), Loc::default());
        inner.root = inner.push(Instruction {
            name: "sq".into(),
            op: Op::Binary(BinaryOp::Mul),
            operands: vec![x, x],
            ty: t.clone(),
            loc: Loc::default(),
        });
        let inner_id = m.add_computation(inner);
        // outer(y) = inner(y) + y
        let mut outer = Computation::new("outer");
        let y = outer.push_param("y", t.clone(), Loc::default());
        let c = outer.push(Instruction {
            name: "c1".into(),
            op: Op::Call { comp: inner_id },
            operands: vec![y],
            ty: t.clone(),
            loc: Loc::default(),
        });
        outer.root = outer.push(Instruction {
            name: "a".into(),
            op: Op::Binary(BinaryOp::Add),
            operands: vec![c, y],
            ty: t.clone(),
            loc: Loc::default(),
        });
        let outer_id = m.add_computation(outer);
        // main(p) = outer(p)
        let mut main = Computation::new("main");
        let p = main.push_param("p", t.clone(), Loc::default());
        main.root = main.push(Instruction {
            name: "c2".into(),
            op: Op::Call { comp: outer_id },
            operands: vec![p],
            ty: t.clone(),
            loc: Loc::default(),
        });
        m.entry = m.add_computation(main);
        m.reserve_names();

        let input = Value::Array(Literal::from_f64s(Shape::new(ElementType::F32, vec![2]), &[3.0, -0.5]));
        let before = Interpreter::new(&m).run(std::slice::from_ref(&input)).unwrap();
        let mut log = PassLog::default();
        assert!(Inline.run(&mut m, &mut log));
        crate::verify::verify(&m).unwrap();
        let entry = m.entry_comp();
        assert!(entry.order.iter().all(|&i| !matches!(entry.inst(i).op, Op::Call { .. })));
        assert_eq!(m.post_order(), vec![m.entry], "no computation is called any more");
        assert_eq!(log.rewrites.len(), 2);
        let after = Interpreter::new(&m).run(&[input]).unwrap();
        assert_eq!(after, before);
        assert_eq!(after.as_array().unwrap().to_f64_vec(), vec![12.0, -0.25]);
        assert!(!Inline.run(&mut m, &mut PassLog::default()));
    }
}
