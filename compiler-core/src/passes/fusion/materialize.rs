//! Turns each group of two or more instructions into one `Op::Fusion` instruction.
//!
//! The fusion's operands are the distinct values its members read from outside, in the
//! order the members first read them; its body computation has one parameter per operand
//! and holds the members (they keep their names, so the UI can follow an instruction into
//! its kernel). A group with several outputs returns a tuple, read by get-tuple-element.
//! The fusion sits where the group's last member was; the computation's order is then
//! re-sorted so that every operand comes before its users again.
//!
//! In the entry (the computation the snapshot graph shows) it also records the
//! provenance of what fusion changed: see [`record_group`] and [`record_copies`].

use super::members::Members;
use super::rules::check_group;
use super::Fuser;
use crate::ir::{sized_map, CompId, Computation, InstId, Instruction, Op, Type};
use crate::passes::Provenance;
use cranelift_entity::packed_option::ReservedValue;
use cranelift_entity::SecondaryMap;
use rustc_hash::FxHashMap as HashMap;

/// Returns whether any fusion was made.
pub(super) fn run(f: &mut Fuser) -> bool {
    let mut pos: SecondaryMap<InstId, usize> = sized_map(f.comp().insts.len(), usize::MAX);
    for (i, &id) in f.comp().order.iter().enumerate() {
        pos[id] = i;
    }
    let mut groups: Vec<(Members, crate::ir::FusionKind)> = Vec::new();
    for members in f.clusters.iter().filter(|c| c.len() >= 2) {
        // Every merge was checked; a group that no longer passes is left unfused rather
        // than built wrong.
        if let Ok(kind) = check_group(&f.graph(), members, f.cfg) {
            groups.push((members.clone(), kind));
        }
    }
    // The instructions change from here on.
    f.reach = None;
    // Nobody reads the provenance of a quiet log (`f.explain` off).
    let record = f.explain && f.comp == f.module.entry;
    if groups.is_empty() {
        if record {
            record_copies(f, &SecondaryMap::new());
        }
        return false;
    }
    // Dense maps over the computation's instructions (new ones read as absent): most
    // instructions are looked up here, and a hash per lookup cost more than the rest.
    let none = InstId::reserved_value();
    let slots = f.comp().insts.len();
    let mut replace: SecondaryMap<InstId, InstId> = sized_map(slots, none);
    // The instructions (fusion, then its get-tuple-elements) that take the place of each
    // group's last member.
    let mut placed: HashMap<InstId, Vec<InstId>> = HashMap::default();
    let mut fused: SecondaryMap<InstId, bool> = sized_map(slots, false);
    // Each group's operands and members, to their ids in its body.
    let mut map: SecondaryMap<InstId, InstId> = sized_map(slots, none);
    // Each member's slot in its fusion body: filled by moving the member there once
    // every group is built (until then the groups still read the members in place).
    let mut moves: Vec<(CompId, InstId, InstId)> = Vec::new();
    for (members, kind) in groups {
        let mut sorted: Vec<InstId> = members.iter().copied().collect();
        sorted.sort_by_key(|&m| pos.get(m).copied().unwrap_or(usize::MAX));
        let outputs = {
            let mut o = f.graph().outputs(&members);
            o.sort_by_key(|&m| pos.get(m).copied().unwrap_or(usize::MAX));
            o
        };
        // Nothing outside reads the group (dead code, when fusion runs before DCE):
        // there is no kernel to build, and DCE will drop the members.
        if outputs.is_empty() {
            continue;
        }
        let mut operands: Vec<InstId> = Vec::new();
        for &m in &sorted {
            for &o in &f.inst(m).operands {
                if !members.contains(&o) && !operands.contains(&o) {
                    operands.push(o);
                }
            }
        }
        let body_name = f.module.fresh_name("fused_computation");
        // Parameters, members and the tuple of several outputs.
        let mut body = Computation::with_capacity(body_name, operands.len() + sorted.len() + 1, operands.len());
        for (i, &o) in operands.iter().enumerate() {
            let name = f.module.fresh_name_from(&["param_", &i.to_string()]);
            let ty = f.inst(o).ty.clone();
            let loc = f.inst(o).loc.clone();
            map[o] = body.push_param(name, ty, loc);
        }
        let mut slots = Vec::with_capacity(sorted.len());
        for &m in &sorted {
            let operands = f.inst(m).operands.iter().map(|&o| map[o]).collect();
            let slot = body.push(Instruction { operands, ..placeholder() });
            map[m] = slot;
            slots.push((m, slot));
        }
        let fusion_ty = if outputs.len() == 1 {
            body.root = map[outputs[0]];
            f.inst(outputs[0]).ty.clone()
        } else {
            let items: Vec<InstId> = outputs.iter().map(|&o| map[o]).collect();
            let ty = Type::Tuple(outputs.iter().map(|&o| f.inst(o).ty.clone()).collect());
            let name = f.module.fresh_name("tuple");
            body.root = body.push(Instruction {
                name,
                op: Op::Tuple,
                operands: items,
                ty: ty.clone(),
                loc: Default::default(),
            });
            ty
        };
        let tuple = (outputs.len() > 1).then(|| body.root_inst().name.clone());
        let last = *sorted.last().unwrap_or(&outputs[0]);
        let loc = f.inst(outputs[outputs.len() - 1]).loc.clone();
        let body_id = f.module.add_computation(body);
        moves.extend(slots.into_iter().map(|(m, slot)| (body_id, m, slot)));
        // A later group reading an entry it did not set (an operand after its user in
        // `order`, which verified input never has) then finds none, not this group's.
        for &o in operands.iter().chain(&sorted) {
            map[o] = none;
        }
        let name = f.module.fresh_name("fusion");
        let fusion_inst =
            Instruction { name, op: Op::Fusion { kind, body: body_id }, operands, ty: fusion_ty, loc: loc.clone() };
        let fusion = f.module.comp_mut(f.comp).insts.push(fusion_inst);
        let mut here = vec![fusion];
        if outputs.len() == 1 {
            replace[outputs[0]] = fusion;
        } else {
            for (i, &o) in outputs.iter().enumerate() {
                let ty = f.inst(o).ty.clone();
                let name = f.module.fresh_name("get-tuple-element");
                let gte = Instruction {
                    name,
                    op: Op::GetTupleElement { index: i as u32 },
                    operands: vec![fusion],
                    ty,
                    loc: loc.clone(),
                };
                let gte = f.module.comp_mut(f.comp).insts.push(gte);
                replace[o] = gte;
                here.push(gte);
            }
        }
        if record {
            record_group(f, &sorted, &outputs, &here, tuple);
        }
        placed.insert(last, here);
        for &m in members.iter() {
            fused[m] = true;
        }
    }
    if record {
        record_copies(f, &fused);
    }
    for (body, m, slot) in moves {
        let member = std::mem::replace(f.module.comp_mut(f.comp).inst_mut(m), placeholder());
        let inst = f.module.comp_mut(body).inst_mut(slot);
        *inst = Instruction { operands: std::mem::take(&mut inst.operands), ..member };
    }
    let comp = f.module.comp_mut(f.comp);
    let mut order = Vec::with_capacity(comp.order.len());
    for &id in &comp.order {
        if let Some(new) = placed.get(&id) {
            order.extend(new.iter().copied());
        } else if !fused[id] {
            order.push(id);
        }
    }
    for &id in &order {
        for o in comp.insts[id].operands.iter_mut() {
            if replace[*o] != none {
                *o = replace[*o];
            }
        }
    }
    if replace[comp.root] != none {
        comp.root = replace[comp.root];
    }
    // The computation is final: the pass reads nothing more of this fuser but its log,
    // so its user lists are not rebuilt.
    comp.order = topo_sort(comp, &order);
    true
}

/// What a member's slot holds until the member moves there, and what its old slot holds
/// after (no longer in any order: `compact` drops it).
fn placeholder() -> Instruction {
    Instruction {
        name: String::new(),
        op: Op::Tuple,
        operands: Vec::new(),
        ty: Type::Tuple(Vec::new()),
        loc: Default::default(),
    }
}

/// Records the provenance of one fusion built from `sorted` (its members in program
/// order): `here` is the fusion instruction, then its get-tuple-elements (one per output,
/// when there are several), and `tuple` names its body's root tuple then.
///
/// The fusion is `created_by` the rule by which its last member (the consumer whose
/// place it takes) joined the group; each member is `fused_into` it (a copy: `cloned_from`
/// its original, under its new id) by the rule by which it joined; each output is
/// `replaced_by` what its users now read; the tuple and get-tuple-elements are
/// `created_by` the group's first multi-output rule.
fn record_group(f: &mut Fuser, sorted: &[InstId], outputs: &[InstId], here: &[InstId], tuple: Option<String>) {
    let fusion = f.name(here[0]);
    let rule = sorted.last().and_then(|m| f.joined.get(m)).copied().unwrap_or("fusion");
    let multi =
        sorted.iter().filter_map(|m| f.joined.get(m)).copied().find(|r| r.contains("multi-output")).unwrap_or(rule);
    let mut out = std::mem::take(&mut f.provenance);
    out.push(Provenance::CreatedBy { id: fusion.clone(), rule });
    for &m in sorted {
        let r = f.joined.get(&m).copied().unwrap_or(rule);
        out.push(match f.clone_of.get(&m) {
            Some(&original) => {
                Provenance::ClonedFrom { id: format!("{fusion}/{}", f.name(m)), original: f.name(original), rule: r }
            }
            None => Provenance::FusedInto { id: f.name(m), fusion: fusion.clone(), rule: r },
        });
    }
    if let Some(t) = tuple {
        out.push(Provenance::CreatedBy { id: format!("{fusion}/{t}"), rule: multi });
    }
    let reads = if here.len() == 1 { here } else { &here[1..] };
    for (&o, &by) in outputs.iter().zip(reads) {
        if !f.clone_of.contains_key(&o) {
            out.push(Provenance::ReplacedBy { id: f.name(o), by: f.name(by), rule });
        }
    }
    for &g in &here[1..] {
        out.push(Provenance::CreatedBy { id: f.name(g), rule: multi });
    }
    f.provenance = out;
}

/// Records the copies left outside any fusion (`cloned_from`, under their own names) and
/// the producers removed because every user got a copy (`removed`).
fn record_copies(f: &mut Fuser, fused: &SecondaryMap<InstId, bool>) {
    let mut out = std::mem::take(&mut f.provenance);
    for (&copy, &original) in &f.clone_of {
        if !fused[copy] {
            let rule = f.joined.get(&copy).copied().unwrap_or("duplicate-into-consumer");
            out.push(Provenance::ClonedFrom { id: f.name(copy), original: f.name(original), rule });
        }
    }
    for &(p, rule) in &f.dropped {
        out.push(Provenance::Removed { id: f.name(p), rule });
    }
    f.provenance = out;
}

/// `order` re-sorted so every operand precedes its users, otherwise keeping its order.
/// A cycle (which the fusion checks rule out) cannot be sorted: its back edge is left
/// as it is, for the verifier to report, rather than looping.
fn topo_sort(comp: &Computation, order: &[InstId]) -> Vec<InstId> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        /// Not in `order`: never sorted in.
        Dead,
        Waiting,
        Open,
        Done,
    }
    let mut state: SecondaryMap<InstId, State> = sized_map(comp.insts.len(), State::Dead);
    for &id in order {
        state[id] = State::Waiting;
    }
    let mut out = Vec::with_capacity(order.len());
    let mut stack = Vec::new();
    for &start in order {
        stack.push((start, false));
        while let Some((id, expanded)) = stack.pop() {
            if expanded {
                state[id] = State::Done;
                out.push(id);
                continue;
            }
            if state[id] != State::Waiting {
                continue;
            }
            state[id] = State::Open;
            stack.push((id, true));
            for &o in comp.inst(id).operands.iter().rev() {
                if state[o] == State::Waiting {
                    stack.push((o, false));
                }
            }
        }
    }
    out
}
