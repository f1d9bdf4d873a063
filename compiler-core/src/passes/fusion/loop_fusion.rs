//! Producer–consumer fusion: each producer joins the kernel of its consumers.
//!
//! Instructions are visited from the root back to the parameters, so when a producer is
//! visited all its users already sit in their final groups. Then:
//! - all users in one group: the producer joins it (`loop-fusion`, `reduction-fusion`,
//!   `reduction-epilogue-fusion`, `epilogue-fusion`), unless a rule refuses;
//! - users in several groups (or also used by the root or an unfusible op): a cheap
//!   producer is duplicated into each group (`duplicate-into-consumer`); scalar constants
//!   always are, since they are immediates.
//!
//! Profitability rules (soft: a force-fuse override lifts them):
//! - `refuse-expensive-duplication`: a transcendental, division, reduce or dot with users
//!   in several kernels would be computed once per kernel;
//! - `refuse-expensive-into-reuse`: an expensive producer fused under a broadcast would
//!   be recomputed for every broadcast element;
//! - `refuse-operand-much-larger`: duplicating a producer that reads far more than it
//!   writes (a slice of a huge array) multiplies the big reads;
//! - `refuse-duplication-adds-traffic`: the copies together would move more bytes than
//!   they save (each copy reads the producer's operands instead of its result), which
//!   also stops duplication from cascading up a graph;
//! - `duplication-disabled`: the `allow_duplication` knob is off.

use super::members::Members;
use super::rules::{check_group, is_expensive, opaque_reason, role, Graph, Refusal, Role};
use super::{Effect, Fuser};
use crate::cost::{group_traffic, group_traffic_saved};
use crate::ir::{InstId, Instruction, Op};
use smallvec::SmallVec;

/// A producer is not duplicated when its operands are more than this many times the size
/// of its result.
const MAX_DUPLICATION_READ_RATIO: usize = 4;

pub(super) fn run(f: &mut Fuser) {
    let order: Vec<InstId> = f.comp().order.clone();
    for &p in order.iter().rev() {
        consider_producer(f, p);
    }
    f.flush_order();
}

/// The groups of a producer's users, each with those users (a few, mostly one: on the
/// stack).
type ConsumerGroups = SmallVec<[(usize, SmallVec<[InstId; 2]>); 2]>;

/// The groups `p`'s users are in, each with those users; and whether `p` is also needed
/// outside any group (root, tuple, unfusible op).
fn consumer_groups(f: &Fuser, p: InstId) -> (ConsumerGroups, bool) {
    let mut groups = ConsumerGroups::new();
    let mut outside = f.comp().root == p;
    let users = f.users.get(p);
    // A user's uses sit next to each other in the list: each user once.
    for (i, &u) in users.iter().enumerate() {
        if i > 0 && users[i - 1] == u {
            continue;
        }
        match f.cluster(u) {
            Some(c) => match groups.iter_mut().find(|(g, _)| *g == c) {
                Some((_, us)) => us.push(u),
                None => groups.push((c, smallvec::smallvec![u])),
            },
            None => outside = true,
        }
    }
    (groups, outside)
}

fn consider_producer(f: &mut Fuser, p: InstId) {
    let r = role(f.inst(p));
    if r == Role::Value {
        return;
    }
    let (groups, outside) = consumer_groups(f, p);
    if r == Role::Opaque {
        if !f.explain {
            return;
        }
        let reason =
            format!("{} ({}) is not fused as a producer: {}", f.name(p), f.inst(p).op, opaque_reason(&f.inst(p).op));
        for (_, us) in &groups {
            f.log(f.name(p), f.name(us[0]), false, "refuse-opaque-producer", reason.clone(), Effect::default());
        }
        return;
    }
    if groups.is_empty() {
        return;
    }
    if groups.len() == 1 && !outside {
        let (c, us) = groups.into_iter().next().unwrap_or_default();
        fuse_into(f, p, c, &us);
    } else {
        duplicate(f, p, groups, outside);
    }
}

/// The name of the rule a producer–consumer fusion applies.
fn fusion_rule(f: &Fuser, p: InstId, group: usize) -> &'static str {
    let has = |r: Role| f.clusters[group].iter().any(|&m| role(f.inst(m)) == r);
    match role(f.inst(p)) {
        Role::Library => "epilogue-fusion",
        Role::Reduce => "reduction-epilogue-fusion",
        _ if has(Role::Library) => "epilogue-fusion",
        _ if has(Role::Reduce) => "reduction-fusion",
        _ => "loop-fusion",
    }
}

/// Checks a producer–consumer merge of `p` (alone in its group) into group `c`, whose
/// members `us` use it. Returns the refusal, if any, and whether a force override
/// lifted a soft one.
/// `orig` is the instruction the overrides name (`p` may be its copy).
///
/// The merged group is checked in place: `p` joins `c`'s member set for the checks and
/// leaves it again (a copy of a large group per candidate was most of the pass's time).
fn judge(
    f: &mut Fuser,
    orig: InstId,
    p: InstId,
    c: usize,
    us: &[InstId],
    profitability: Option<Refusal>,
) -> (Option<Refusal>, bool) {
    if let Some((a, b)) = f.never_fused(&[orig], f.clusters[c].as_slice()) {
        let reason = format!("the never-fuse override ({a}, {b}) keeps them in separate kernels");
        return (Some(Refusal::hard("override-never-fuse", reason)), false);
    }
    let forced = us.iter().any(|&u| f.forced(orig, u));
    let added = f.clusters[c].insert(p);
    let refusal = judge_merged(f, p, c, profitability);
    if added {
        f.clusters[c].remove(&p);
    }
    match refusal {
        Some(r) if forced && !r.hard => (Some(r), true),
        r => (r, false),
    }
}

/// [`judge`]'s checks of group `c`, which holds `p` for now.
fn judge_merged(f: &Fuser, p: InstId, c: usize, profitability: Option<Refusal>) -> Option<Refusal> {
    let merged = &f.clusters[c];
    // Every user of `p` is in `c` (`fuse_into`; a copy's users in `duplicate`).
    let g = Graph { producer_into_group: true, ..f.graph() };
    // Legality first, so that a reason shown is the deepest one.
    let mut refusal = check_group(&g, merged, f.cfg).err().or(profitability);
    if refusal.is_none() && is_expensive(f.inst(p)) {
        if let Some(b) = g.reuses_elements_of(merged, p) {
            refusal = Some(Refusal::soft(
                "refuse-expensive-into-reuse",
                format!(
                    "{} ({}) is expensive and {} broadcasts it, so the kernel would recompute each element many times",
                    f.name(p),
                    f.inst(p).op,
                    g.name(b)
                ),
            ));
        }
    }
    refusal
}

/// Fuses `p`, all of whose users `us` are in group `c`, into that group.
fn fuse_into(f: &mut Fuser, p: InstId, c: usize, us: &[InstId]) {
    let Some(pc) = f.cluster(p) else { return };
    let (refusal, forced) = judge(f, p, p, c, us, None);
    // What the decision saves and why: only for a log that is read.
    let explained =
        |f: &Fuser| f.explain.then(|| (f.effect(&f.clusters[pc], &f.clusters[c]), f.name(p), f.name(us[0])));
    match refusal {
        Some(r) if !forced => {
            if let Some((effect, producer, consumer)) = explained(f) {
                f.log(producer, consumer, false, r.rule, r.reason, effect);
            }
        }
        lifted => {
            let rule = if forced { "force-fuse" } else { fusion_rule(f, p, c) };
            let explanation = explained(f).map(|(effect, producer, consumer)| {
                let reason = match lifted {
                    Some(r) => format!("forced by an override, lifting {}: {}", r.rule, r.reason),
                    None => describe(f, p, us),
                };
                (effect, producer, consumer, reason)
            });
            f.merge(c, pc, rule);
            if let Some((effect, producer, consumer, reason)) = explanation {
                f.log(producer, consumer, true, rule, reason, effect);
            }
        }
    }
}

fn describe(f: &Fuser, p: InstId, us: &[InstId]) -> String {
    let inst = f.inst(p);
    let users = us.iter().map(|&u| f.name(u)).collect::<Vec<_>>().join(", ");
    format!(
        "{} ({}, {}) is computed inside the kernel of {users}; it is never written to memory",
        inst.name, inst.op, inst.ty
    )
}

/// A copy of a producer that a group may take: the group, its users of the producer,
/// the copy, a soft refusal a force override lifted, and the group's traffic saved.
struct Candidate {
    group: usize,
    users: SmallVec<[InstId; 2]>,
    clone: InstId,
    lifted: Option<Refusal>,
    effect: Effect,
}

/// `p` has users in several groups, or is needed outside: put a copy of it in each
/// group that may take one.
fn duplicate(f: &mut Fuser, p: InstId, groups: ConsumerGroups, outside: bool) {
    // Its name for the log and the refusals (the instruction itself is not copied: the
    // pass sees each producer, and most are scalar constants copied into every kernel).
    let name = f.name(p);
    let inst = f.inst(p);
    let scalar_constant = matches!(&inst.op, Op::Constant(l) if l.shape.rank() == 0);
    let profitability = if scalar_constant {
        None
    } else if is_expensive(inst) {
        let n = groups.len() + outside as usize;
        Some(Refusal::soft(
            "refuse-expensive-duplication",
            format!(
                "{} ({}) is expensive and its value is needed by {n} kernels; fusing it into each would compute it {n} times",
                name, inst.op
            ),
        ))
    } else if !f.cfg.allow_duplication {
        Some(Refusal::soft(
            "duplication-disabled",
            format!("{} has users in {} kernels and duplication is turned off", name, groups.len() + outside as usize),
        ))
    } else {
        let read = inst.operands.iter().map(|&o| f.inst(o).ty.byte_size()).fold(0usize, usize::saturating_add);
        let written = inst.ty.byte_size();
        (read > MAX_DUPLICATION_READ_RATIO.saturating_mul(written.max(1))).then(|| {
            Refusal::soft(
                "refuse-operand-much-larger",
                format!(
                    "{} reads {read} bytes to produce {written}; each copy in another kernel would read them again",
                    name
                ),
            )
        })
    };
    // The traffic the copies save decides whether they pay off, except for a scalar
    // constant (an immediate in every kernel, always copied): then only the log reads it.
    let weighed = !scalar_constant || f.explain;
    // The original's own kernel: what disappears if every user gets a copy.
    let own = Members::one(p);
    let own_traffic = if weighed { group_traffic(f.comp(), own.as_slice(), &f.users) as i64 } else { 0 };
    let own_kernel = f.is_kernel(&own) as i64;
    // First, which groups may legally take a copy.
    let mut accepted: Vec<Candidate> = Vec::with_capacity(groups.len());
    for (c, us) in groups {
        let clone = clone_for(f, p, &us);
        // With the copy as the group's operand, the effect is the group's traffic saved
        // by taking it in.
        let effect = |f: &mut Fuser| Effect {
            bytes: group_traffic_saved(f.comp(), f.clusters[c].as_slice(), &f.users, clone),
            kernels: 0,
        };
        let (refusal, forced) = judge(f, p, clone, c, &us, profitability.clone());
        match refusal {
            Some(r) if !forced => {
                let effect = f.explain.then(|| effect(f));
                unclone(f, p, clone, &us);
                if let Some(effect) = effect {
                    f.log(name.clone(), f.name(us[0]), false, r.rule, r.reason, effect);
                }
            }
            lifted => {
                let effect = if weighed { effect(f) } else { Effect::default() };
                accepted.push(Candidate { group: c, users: us, clone, lifted, effect })
            }
        }
    }
    if accepted.is_empty() {
        return;
    }
    // Then, whether the copies together pay off: each copy reads the producer's operands
    // instead of its result; the producer's kernel goes away only if no user is left.
    // A tie is refused: the copies would force the producer's operands to be written
    // out, which this local estimate does not see.
    let dies = !outside && f.users.get(p).is_empty();
    let copies_saved: i64 = accepted.iter().map(|a| a.effect.bytes).sum();
    let total =
        Effect { bytes: copies_saved + if dies { own_traffic } else { 0 }, kernels: if dies { own_kernel } else { 0 } };
    let forced_any = accepted.iter().any(|a| a.users.iter().any(|&u| f.forced(p, u)));
    if !scalar_constant && !forced_any && total.bytes <= 0 {
        let n = accepted.len();
        for Candidate { users: us, clone, effect, .. } in accepted {
            unclone(f, p, clone, &us);
            if !f.explain {
                continue;
            }
            let reason = format!(
                "copies of {} in {n} kernels would save {} bytes of memory traffic (and {} kernels): not worth recomputing it",
                name, total.bytes, total.kernels
            );
            f.log(name.clone(), f.name(us[0]), false, "refuse-duplication-adds-traffic", reason, effect);
        }
        return;
    }
    let last = accepted.len() - 1;
    let mut last_rule = "duplicate-into-consumer";
    for (i, Candidate { group: c, users: us, clone, lifted, mut effect }) in accepted.into_iter().enumerate() {
        let rule = if lifted.is_some() { "force-fuse" } else { "duplicate-into-consumer" };
        let c2 = f.new_cluster(clone);
        f.merge(c, c2, rule);
        last_rule = rule;
        if !f.explain {
            continue;
        }
        let reason = match lifted {
            Some(r) => format!("forced by an override, lifting {}: {}", r.rule, r.reason),
            None => format!(
                "{} is cheap to recompute, so a copy ({}) is fused into the kernel of {}",
                name,
                f.name(clone),
                f.name(us[0])
            ),
        };
        // The last copy takes the credit for the original's kernel disappearing.
        if i == last && dies {
            effect.bytes += own_traffic;
            effect.kernels += own_kernel;
        }
        f.log(name.clone(), f.name(us[0]), true, rule, reason, effect);
    }
    if dies {
        f.unassign(p);
        for o in f.inst(p).operands.clone() {
            f.remove_user(o, p);
        }
        f.removed.insert(p);
        f.dropped.push((p, last_rule));
    }
}

/// Adds a copy of `p` right after it (in program order; `comp.order` is rebuilt at the
/// end of the phase) and points `users` at the copy.
fn clone_for(f: &mut Fuser, p: InstId, users: &[InstId]) -> InstId {
    let inst = f.inst(p).clone();
    let name = f.module.fresh_name_from(&[&inst.name, ".clone"]);
    let operands = inst.operands.clone();
    let comp = f.module.comp_mut(f.comp);
    let clone = comp.insts.push(Instruction { name, ..inst });
    for &u in users {
        for o in comp.inst_mut(u).operands.iter_mut() {
            if *o == p {
                *o = clone;
            }
        }
    }
    f.copies += 1;
    f.pos[clone] = (f.pos[p].0, u32::MAX - f.copies);
    f.added.push(clone);
    if f.explain {
        f.clone_of.insert(clone, p);
    }
    let mut seen: SmallVec<[InstId; 4]> = SmallVec::new();
    for o in operands {
        if !seen.contains(&o) {
            seen.push(o);
            f.add_user(o, clone);
        }
    }
    for &u in users {
        f.remove_user(p, u);
        f.add_user(clone, u);
    }
    clone
}

/// Undoes [`clone_for`].
fn unclone(f: &mut Fuser, p: InstId, clone: InstId, users: &[InstId]) {
    let comp = f.module.comp_mut(f.comp);
    for &u in users {
        for o in comp.inst_mut(u).operands.iter_mut() {
            if *o == clone {
                *o = p;
            }
        }
    }
    f.removed.insert(clone);
    f.clone_of.remove(&clone);
    for o in f.inst(clone).operands.clone() {
        f.remove_user(o, clone);
    }
    f.users.list_mut(clone).clear();
    for &u in users {
        f.add_user(p, u);
    }
}
