//! The fusion rules: which ops may share a kernel, and the legality check that every
//! merge (producer–consumer, duplication, multi-output) goes through.
//!
//! A candidate kernel is a set of instructions. [`check_group`] says whether that set can
//! be one kernel and of which kind, or returns a [`Refusal`] naming the rule that says no
//! and why. Refusals are *hard* (the kernel would be wrong or impossible: a cycle, a
//! reduction consumed at another shape, a dot's operand fused into the library call) or
//! *soft* (a budget or a profitability judgement: the size limit, duplicating an expensive
//! op); a force-fuse override lifts soft refusals only.

use super::members::Members;
use super::reach::Reach;
use super::{epilogue, reduction, FusionConfig, Pos};
use crate::ir::{BinaryOp, Computation, FusionKind, InstId, Instruction, Op, UserLists};
use cranelift_entity::SecondaryMap;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use smallvec::SmallVec;

/// What part an instruction can play in a fused kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// Computed per output element (elementwise ops, data movement, scalar constants):
    /// fuses into anything.
    Loop,
    /// A reduce: the hero of an input fusion.
    Reduce,
    /// A dot or convolution: a library call, the hero of an output (epilogue) fusion.
    Library,
    /// dynamic-update-slice: writes into its operand 0 in place.
    InPlace,
    /// Names a value and computes nothing (parameters, tuples, big constants): never
    /// fused, never a reason to refuse anything.
    Value,
    /// Runs as its own kernel or control flow (while, sort, scatter, custom-call, ...).
    Opaque,
}

pub(super) fn role(inst: &Instruction) -> Role {
    match &inst.op {
        // Scalars are immediates in the kernel; bigger constants stay buffers that the
        // kernel reads like any operand.
        Op::Constant(l) if l.shape.rank() == 0 => Role::Loop,
        Op::Constant(_) | Op::Parameter(_) | Op::Tuple | Op::GetTupleElement { .. } | Op::AfterAll => Role::Value,
        op if op.has_side_effect() => Role::Opaque,
        op if op.is_elementwise() || op.is_data_movement() => Role::Loop,
        // Each output element of a dynamic slice or a gather is one operand element at an
        // index it reads: a loop over the output, as XLA fuses them.
        Op::DynamicSlice { .. } | Op::Gather(_) => Role::Loop,
        Op::Reduce { .. } => Role::Reduce,
        Op::Dot(_) | Op::Convolution(_) => Role::Library,
        Op::DynamicUpdateSlice => Role::InPlace,
        _ => Role::Opaque,
    }
}

/// Why an opaque op is never fused (for the decision log).
pub(super) fn opaque_reason(op: &Op) -> &'static str {
    match op {
        Op::While { .. } | Op::Case { .. } | Op::Call { .. } => {
            "it is control flow, whose bodies hold their own kernels"
        }
        Op::Sort { .. } => "sort needs the whole array before it writes anything",
        Op::Scatter(_) | Op::SelectAndScatter(_) => "scatter updates its operand in place at data-dependent indices",
        Op::CustomCall(_) => "a custom call is code the compiler cannot see into",
        Op::Fusion { .. } => "it is already a fusion",
        _ => "it runs as its own kernel",
    }
}

/// Ops too costly to compute twice (XLA's `IsExpensive`): transcendentals, divisions,
/// reductions, library calls and everything opaque.
pub(super) fn is_expensive(inst: &Instruction) -> bool {
    match &inst.op {
        Op::Unary(u) => u.is_transcendental(),
        Op::Binary(b) => matches!(b, BinaryOp::Div | BinaryOp::Rem | BinaryOp::Pow | BinaryOp::Atan2),
        _ => !matches!(role(inst), Role::Loop | Role::Value | Role::InPlace),
    }
}

/// A hard or soft "no", with the rule that said it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Refusal {
    pub rule: &'static str,
    pub reason: String,
    /// Legality (true) or a budget / profitability judgement (false).
    pub hard: bool,
}

impl Refusal {
    pub fn hard(rule: &'static str, reason: String) -> Refusal {
        Refusal { rule, reason, hard: true }
    }
    pub fn soft(rule: &'static str, reason: String) -> Refusal {
        Refusal { rule, reason, hard: false }
    }
}

/// The group of each grouped instruction, and the groups (indexed by that number).
pub(super) type Groups<'a> = (&'a HashMap<InstId, usize>, &'a [Members]);

/// A computation seen as a graph: instructions and their users.
pub(super) struct Graph<'a> {
    pub comp: &'a Computation,
    pub users: &'a UserLists,
    /// Program-order positions in which every operand precedes its users, when known.
    pub pos: Option<&'a SecondaryMap<InstId, Pos>>,
    /// Group of each grouped instruction and the groups, once groups may have several
    /// outputs (multi-output fusion): then a cycle may pass through a group as a whole.
    pub groups: Option<Groups<'a>>,
    /// Who reaches whom between groups, when computed (multi-output fusion).
    pub reach: Option<&'a Reach>,
    /// The sets checked are a group and a producer all of whose users are in it
    /// (producer–consumer fusion), which cannot create a cycle: nothing leaves the
    /// producer but into the group, a path from the group back to the producer would be a
    /// cycle of the program, and one from the group back into itself a cycle of the
    /// group, which was checked when it formed.
    pub producer_into_group: bool,
}

impl Graph<'_> {
    pub fn inst(&self, id: InstId) -> &Instruction {
        self.comp.inst(id)
    }
    pub fn name(&self, id: InstId) -> &str {
        &self.comp.inst(id).name
    }
    pub fn users_of(&self, id: InstId) -> &[InstId] {
        self.users.get(id)
    }
    pub fn dims(&self, id: InstId) -> Option<&[i64]> {
        self.inst(id).ty.as_array().map(|s| s.dims.as_slice())
    }

    /// Members of `members` that (transitively, through members) use `from`, nearest
    /// first. (On the stack for the usual group: every candidate merge asks.)
    pub fn downstream(&self, members: &Members, from: InstId) -> SmallVec<[InstId; 16]> {
        let mut seen: SmallVec<[bool; 64]> = smallvec::smallvec![false; members.len()];
        let mut out: SmallVec<[InstId; 16]> = SmallVec::new();
        let mut visit = |id: InstId, out: &mut SmallVec<[InstId; 16]>| {
            for &u in self.users_of(id) {
                if let Some(i) = members.position(&u) {
                    if !std::mem::replace(&mut seen[i], true) {
                        out.push(u);
                    }
                }
            }
        };
        visit(from, &mut out);
        let mut next = 0;
        while let Some(&id) = out.get(next) {
            next += 1;
            visit(id, &mut out);
        }
        out
    }

    /// Members whose value is needed outside the set (or is the computation's root).
    pub fn outputs(&self, members: &Members) -> SmallVec<[InstId; 8]> {
        members
            .iter()
            .copied()
            .filter(|&m| self.comp.root == m || self.users_of(m).iter().any(|u| !members.contains(u)))
            .collect()
    }

    /// Whether making `members` one kernel creates a cycle: a path that leaves the set
    /// and comes back into it (the kernel would wait on its own output).
    pub fn creates_cycle(&self, members: &Members) -> bool {
        if self.producer_into_group {
            debug_assert!(!self.walk_for_cycle(members), "a producer joining its consumers' group made a cycle");
            return false;
        }
        self.walk_for_cycle(members)
    }

    fn walk_for_cycle(&self, members: &Members) -> bool {
        if let Some(cycle) = self.reach.and_then(|r| r.creates_cycle(members)) {
            return cycle;
        }
        match self.groups {
            Some((group_of, groups)) => self.cycle_through_groups(members, group_of, groups),
            None => self.cycle_through_instructions(members),
        }
    }

    /// The check while every group has one output, which all its members feed through
    /// members: a path through a group is then a path through instructions.
    ///
    /// Positions go up along every edge, so an instruction after the last member cannot
    /// lead back into the set: the walk stays between the first and last member.
    fn cycle_through_instructions(&self, members: &Members) -> bool {
        let last = self.pos.and_then(|pos| members.iter().map(|&m| pos[m]).max());
        let may_return = |id: InstId| match (self.pos, last) {
            (Some(pos), Some(last)) => pos[id] < last,
            _ => true,
        };
        let mut seen = HashSet::default();
        let mut stack: Vec<InstId> = Vec::new();
        for &m in members {
            stack.extend(self.users_of(m).iter().copied().filter(|&u| !members.contains(&u) && may_return(u)));
        }
        while let Some(id) = stack.pop() {
            if !seen.insert(id) || !may_return(id) {
                continue;
            }
            for &u in self.users_of(id) {
                if members.contains(&u) {
                    return true;
                }
                stack.push(u);
            }
        }
        false
    }

    /// The check once groups may have several outputs: reaching one member of a group
    /// reaches all of its outputs, since the group runs as one kernel. (No pruning by
    /// position: a group may hold members on both sides of the set.)
    fn cycle_through_groups(&self, members: &Members, group_of: &HashMap<InstId, usize>, groups: &[Members]) -> bool {
        let mut seen = HashSet::default();
        let mut expanded = HashSet::default();
        let mut stack: Vec<InstId> = Vec::new();
        for &m in members {
            stack.extend(self.users_of(m).iter().copied().filter(|&u| !members.contains(&u)));
        }
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            if let Some(&g) = group_of.get(&id) {
                if expanded.insert(g) {
                    for &m in groups.get(g).into_iter().flatten() {
                        if members.contains(&m) {
                            return true;
                        }
                        stack.push(m);
                    }
                }
            }
            for &u in self.users_of(id) {
                if members.contains(&u) {
                    return true;
                }
                stack.push(u);
            }
        }
        false
    }

    /// Whether some member of `members` downstream of `p` broadcasts a value, so that
    /// each element of `p` would be recomputed for many output elements.
    pub fn reuses_elements_of(&self, members: &Members, p: InstId) -> Option<InstId> {
        self.downstream(members, p).into_iter().find(|&d| {
            let inst = self.inst(d);
            matches!(inst.op, Op::BroadcastInDim { .. })
                && inst.operands.first().is_some_and(|&o| self.inst(o).ty.byte_size() < inst.ty.byte_size())
        })
    }
}

/// Whether an instruction counts against the size budget (scalar constants are free
/// immediates).
pub(super) fn counts_toward_size(inst: &Instruction) -> bool {
    !matches!(inst.op, Op::Constant(_))
}

/// The refusal of a kernel of `size` counted instructions over the budget, if it is.
pub(super) fn over_size(size: usize, cfg: &FusionConfig) -> Option<Refusal> {
    (size > cfg.max_fusion_size).then(|| {
        Refusal::soft(
            "refuse-max-size",
            format!("the kernel would hold {size} instructions, more than max_fusion_size = {}", cfg.max_fusion_size),
        )
    })
}

/// The refusal of a group that creates a cycle.
pub(super) fn cycle_refusal() -> Refusal {
    Refusal::hard(
        "refuse-cycle",
        "a value leaves the kernel and comes back through an instruction outside it, so the kernel would wait on itself"
            .into(),
    )
}

/// Whether `members` can be one kernel; if so, its fusion kind.
pub(super) fn check_group(g: &Graph, members: &Members, cfg: &FusionConfig) -> Result<FusionKind, Refusal> {
    let mut reduces: SmallVec<[InstId; 4]> = SmallVec::new();
    let mut library: SmallVec<[InstId; 2]> = SmallVec::new();
    let mut in_place: SmallVec<[InstId; 2]> = SmallVec::new();
    for &m in members {
        match role(g.inst(m)) {
            Role::Loop => {}
            Role::Reduce => reduces.push(m),
            Role::Library => library.push(m),
            Role::InPlace => in_place.push(m),
            Role::Value | Role::Opaque => {
                return Err(Refusal::hard(
                    "refuse-unfusible-op",
                    format!("{} ({}) cannot be fused: {}", g.name(m), g.inst(m).op, opaque_reason(&g.inst(m).op)),
                ))
            }
        }
    }
    if let Some(refusal) = over_size(members.iter().filter(|&&m| counts_toward_size(g.inst(m))).count(), cfg) {
        return Err(refusal);
    }
    if g.creates_cycle(members) {
        return Err(cycle_refusal());
    }
    in_place_check(g, members, &in_place)?;
    let outputs = g.outputs(members);
    if !library.is_empty() {
        if !reduces.is_empty() {
            return Err(Refusal::hard(
                "refuse-mixed-heroes",
                format!(
                    "{} is a library call and {} a reduction: one kernel cannot be both",
                    g.name(library[0]),
                    g.name(reduces[0])
                ),
            ));
        }
        epilogue::check(g, members, &library, &outputs, cfg)?;
        return Ok(FusionKind::Output);
    }
    if !reduces.is_empty() {
        reduction::check(g, members, &reduces, &outputs)?;
        return Ok(FusionKind::Input);
    }
    // A loop kernel runs one thread per element of its output; several outputs must
    // share that iteration space.
    let first = outputs.first().and_then(|&o| g.dims(o));
    if let Some(bad) = outputs.iter().find(|&&o| g.dims(o) != first) {
        return Err(Refusal::hard(
            "refuse-output-shapes",
            format!(
                "a loop kernel's outputs must have one shape, but {} is {} and {} is {}",
                g.name(outputs[0]),
                g.inst(outputs[0]).ty,
                g.name(*bad),
                g.inst(*bad).ty
            ),
        ));
    }
    Ok(FusionKind::Loop)
}

/// dynamic-update-slice writes its operand 0's buffer in place: that buffer must come
/// from outside, nothing else in the kernel may read it, and the update is the kernel's
/// only output.
fn in_place_check(g: &Graph, members: &Members, in_place: &[InstId]) -> Result<(), Refusal> {
    for &d in in_place {
        let Some(&buffer) = g.inst(d).operands.first() else { continue };
        if members.contains(&buffer) {
            return Err(Refusal::hard(
                "refuse-in-place-operand",
                format!(
                    "{} updates {} in place; computing {} in the same kernel would write the buffer it reads",
                    g.name(d),
                    g.name(buffer),
                    g.name(buffer)
                ),
            ));
        }
        if let Some(&reader) = members.iter().find(|&&m| m != d && g.inst(m).operands.contains(&buffer)) {
            return Err(Refusal::hard(
                "refuse-in-place-conflict",
                format!(
                    "{} reads {} while {} overwrites it in place in the same kernel",
                    g.name(reader),
                    g.name(buffer),
                    g.name(d)
                ),
            ));
        }
        if let Some(&other) = g.outputs(members).iter().find(|&&o| o != d) {
            return Err(Refusal::hard(
                "refuse-in-place-conflict",
                format!(
                    "{} must be the only output of its kernel, but {} is needed outside too",
                    g.name(d),
                    g.name(other)
                ),
            ));
        }
    }
    Ok(())
}
