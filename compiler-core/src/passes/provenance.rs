//! Recording [`Provenance`]: the graph ids of an instruction, the records passes push
//! when they create, replace or remove one, and the clean-up the snapshot applies.
//!
//! Only the entry computation and the bodies of its fusions are in the snapshot graph
//! (`pipeline::graph_of`), so only changes there are recorded; changes elsewhere
//! (reduction bodies, loop bodies) have no ids. A fusion body's parameters are not nodes:
//! they stand for the fusion's operands, whose ids they take here too (a simplifier rule
//! inside a fusion that replaces a value by a parameter reads as "replaced by the
//! fusion's operand").
//!
//! Cost: one push per change. The only walk is [`Scope`]'s list of the entry's fusions,
//! made once per pass and only when a pass changes a computation other than the entry.

use super::{PassLog, Provenance};
use crate::ir::{CompId, Computation, InstId, Module, Op};
use std::collections::{HashMap, HashSet};

/// Which computations of a module are in the graph, and under which fusions. A pass
/// records provenance only for the computations [`Scope::in_graph`] admits (none for a
/// quiet log).
pub(crate) struct Scope {
    entry: CompId,
    /// Fusion bodies called from the entry, with the fusion instructions calling them.
    /// Built on first use, from the module as it is then: passes visit computations
    /// callees first, so every body is done with before the entry changes.
    bodies: Option<HashMap<CompId, Vec<InstId>>>,
    /// The pass's log is quiet: nobody reads provenance, so none is recorded.
    quiet: bool,
}

impl Scope {
    pub fn new(module: &Module, log: &PassLog) -> Scope {
        Scope { entry: module.entry, bodies: None, quiet: log.quiet }
    }

    fn bodies(&mut self, module: &Module) -> &HashMap<CompId, Vec<InstId>> {
        self.bodies.get_or_insert_with(|| {
            let mut bodies: HashMap<CompId, Vec<InstId>> = HashMap::new();
            if let Some(entry) = module.comps.get(module.entry) {
                for &i in &entry.order {
                    if let Op::Fusion { body, .. } = entry.inst(i).op {
                        bodies.entry(body).or_default().push(i);
                    }
                }
            }
            bodies
        })
    }

    /// Whether `comp`'s instructions are graph nodes (never for a quiet log: no provenance).
    pub fn in_graph(&mut self, module: &Module, comp: CompId) -> bool {
        !self.quiet && (comp == self.entry || self.bodies(module).contains_key(&comp))
    }

    /// The graph ids of instruction `id` of `comp`: its name in the entry, one id per
    /// fusion calling `comp` in a fusion body, none elsewhere.
    pub fn ids(&mut self, module: &Module, comp: CompId, id: InstId) -> Vec<String> {
        if comp == self.entry {
            return vec![module.comp(comp).inst(id).name.clone()];
        }
        let entry = self.entry;
        let Some(callers) = self.bodies(module).get(&comp) else { return Vec::new() };
        let (e, body) = (module.comp(entry), module.comp(comp));
        callers.iter().map(|&f| body_node_id(e, f, body, id)).collect()
    }

    /// Records `removed` for instruction `id` of `comp` and, when it is a fusion of the
    /// entry, for the nodes of its body.
    pub fn removed(&mut self, module: &Module, comp: CompId, id: InstId, rule: &'static str, log: &mut PassLog) {
        for node in self.ids(module, comp, id) {
            log.provenance.push(Provenance::Removed { id: node, rule });
        }
        if comp == self.entry {
            for_each_member(module, id, |node| log.provenance.push(Provenance::Removed { id: node, rule }));
        }
    }

    /// Records `created_by` for instruction `id` of `comp` and, when it is a fusion of
    /// the entry, for the nodes of its body.
    pub fn created(&mut self, module: &Module, comp: CompId, id: InstId, rule: &'static str, log: &mut PassLog) {
        for node in self.ids(module, comp, id) {
            log.provenance.push(Provenance::CreatedBy { id: node, rule });
        }
        if comp == self.entry {
            for_each_member(module, id, |node| log.provenance.push(Provenance::CreatedBy { id: node, rule }));
        }
    }

    /// Records `replaced_by`: the users of `id` of `comp` now read `by`.
    pub fn replaced(
        &mut self,
        module: &Module,
        comp: CompId,
        id: InstId,
        by: InstId,
        rule: &'static str,
        log: &mut PassLog,
    ) {
        let (ids, bys) = (self.ids(module, comp, id), self.ids(module, comp, by));
        for (id, by) in ids.into_iter().zip(bys) {
            log.provenance.push(Provenance::ReplacedBy { id, by, rule });
        }
    }
}

/// The graph id of instruction `id` of `body` inside fusion `fusion` of `entry`.
fn body_node_id(entry: &Computation, fusion: InstId, body: &Computation, id: InstId) -> String {
    let f = entry.inst(fusion);
    let inst = body.inst(id);
    if let Op::Parameter(n) = inst.op {
        if let Some(&o) = f.operands.get(n as usize) {
            return entry.inst(o).name.clone();
        }
    }
    format!("{}/{}", f.name, inst.name)
}

/// Calls `each` with the graph id of every node inside `id`, an entry instruction, when
/// it is a fusion (its body's instructions, less the parameters that stand for its
/// operands).
fn for_each_member(module: &Module, id: InstId, mut each: impl FnMut(String)) {
    let f = module.entry_comp().inst(id);
    let Op::Fusion { body, .. } = f.op else { return };
    let Some(body) = module.comps.get(body) else { return };
    for &i in &body.order {
        let inst = body.inst(i);
        if matches!(inst.op, Op::Parameter(n) if (n as usize) < f.operands.len()) {
            continue;
        }
        each(format!("{}/{}", f.name, inst.name));
    }
}

/// The records about ids the snapshots show, from a pass's raw ones:
/// - an id the pass made and removed again (a simplifier's helper that a later round
///   replaced) is dropped with everything recorded about it;
/// - a `replaced_by` whose `by` the pass removed later (`x -> y`, then `y -> z` and `y`
///   removed) is pointed on to what replaced that in turn (`x -> z`), or dropped when
///   nothing did (then `by`'s users are gone too, and `id` has its own `removed`).
pub fn normalize(records: Vec<Provenance>) -> Vec<Provenance> {
    let removed: HashSet<&str> = records
        .iter()
        .filter_map(|r| match r {
            Provenance::Removed { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    if removed.is_empty() {
        return records;
    }
    let transient: HashSet<&str> = records
        .iter()
        .filter_map(|r| match r {
            Provenance::CreatedBy { id, .. } | Provenance::ClonedFrom { id, .. } if removed.contains(id.as_str()) => {
                Some(id.as_str())
            }
            _ => None,
        })
        .collect();
    let stale = |r: &Provenance| matches!(r, Provenance::ReplacedBy { by, .. } if removed.contains(by.as_str()));
    if transient.is_empty() && !records.iter().any(stale) {
        return records;
    }
    let forward: HashMap<&str, &str> = records
        .iter()
        .filter_map(|r| match r {
            Provenance::ReplacedBy { id, by, .. } if removed.contains(id.as_str()) => Some((id.as_str(), by.as_str())),
            _ => None,
        })
        .collect();
    // What replaced `start`, a removed id, in the end.
    let resolve = |start: &str| -> Option<String> {
        let mut by: &str = forward.get(start)?;
        // Each step leaves a removed id; more steps than there are would be a cycle.
        for _ in 0..forward.len() {
            if !removed.contains(by) {
                return Some(by.to_string());
            }
            by = forward.get(by)?;
        }
        None
    };
    let mut out = Vec::with_capacity(records.len());
    for r in &records {
        match r {
            Provenance::CreatedBy { id, .. }
            | Provenance::ClonedFrom { id, .. }
            | Provenance::Removed { id, .. }
            | Provenance::ReplacedBy { id, .. }
            | Provenance::FusedInto { id, .. }
                if transient.contains(id.as_str()) => {}
            Provenance::ReplacedBy { id, by, rule } if removed.contains(by.as_str()) => {
                if let Some(by) = resolve(by) {
                    out.push(Provenance::ReplacedBy { id: id.clone(), by, rule });
                }
            }
            r => out.push(r.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_drops_ids_made_and_removed_in_one_pass() {
        let s = String::from;
        let records = vec![
            Provenance::CreatedBy { id: s("c.1"), rule: "mul-zero-int" },
            Provenance::ReplacedBy { id: s("x"), by: s("c.1"), rule: "add-zero" },
            Provenance::ReplacedBy { id: s("c.1"), by: s("c.2"), rule: "cse" },
            Provenance::Removed { id: s("c.1"), rule: "dce" },
            Provenance::Removed { id: s("x"), rule: "dce" },
        ];
        assert_eq!(
            normalize(records),
            vec![
                Provenance::ReplacedBy { id: s("x"), by: s("c.2"), rule: "add-zero" },
                Provenance::Removed { id: s("x"), rule: "dce" },
            ]
        );
        let kept =
            vec![Provenance::CreatedBy { id: s("c.1"), rule: "r" }, Provenance::Removed { id: s("y"), rule: "dce" }];
        assert_eq!(normalize(kept.clone()), kept);
    }
}
