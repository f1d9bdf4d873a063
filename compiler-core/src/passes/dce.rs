//! Dead code elimination: drops instructions whose values nothing uses.
//!
//! Keeps parameters (they define a computation's signature), roots, and instructions with
//! side effects (custom calls marked so, `rng`). Runs on every reachable computation.
//! Each instruction it drops from the graph is recorded as `removed` by `dce`.

use super::provenance::Scope;
use super::{Changed, Pass, PassLog};
use crate::ir::Module;

pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &'static str {
        "dce"
    }
    fn run(&self, module: &mut Module, log: &mut PassLog) -> Changed {
        let mut removed = 0;
        let mut scope = Scope::new(module, log);
        for comp in module.post_order() {
            let dead = module.comp_mut(comp).remove_dead_ids();
            removed += dead.len();
            if !dead.is_empty() && scope.in_graph(module, comp) {
                for id in dead {
                    scope.removed(module, comp, id, "dce", log);
                }
            }
        }
        removed > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::*;
    use crate::passes::PassLog;

    #[test]
    fn removes_unused_and_keeps_side_effects() {
        let mut m = Module::new("m");
        let mut c = Computation::new("main");
        let t = Type::array(ElementType::F32, vec![2]);
        let p = c.push_param("p", t.clone(), Loc::default());
        let dead = c.push(Instruction {
            name: "dead".into(),
            op: Op::Unary(UnaryOp::Exp),
            operands: vec![p],
            ty: t.clone(),
            loc: Loc::default(),
        });
        let effect = c.push(Instruction {
            name: "check".into(),
            op: Op::CustomCall(CustomCallAttrs {
                target: "x".into(),
                has_side_effect: true,
                backend_config: String::new(),
                attrs: vec![],
            }),
            operands: vec![p],
            ty: Type::Tuple(vec![]),
            loc: Loc::default(),
        });
        let live = c.push(Instruction {
            name: "live".into(),
            op: Op::Unary(UnaryOp::Neg),
            operands: vec![p],
            ty: t,
            loc: Loc::default(),
        });
        c.root = live;
        m.entry = m.add_computation(c);
        assert!(Dce.run(&mut m, &mut PassLog::default()));
        assert_eq!(m.entry_comp().order, vec![p, effect, live]);
        assert!(!m.entry_comp().order.contains(&dead));
        assert!(!Dce.run(&mut m, &mut PassLog::default()), "a second run finds nothing");
    }
}
