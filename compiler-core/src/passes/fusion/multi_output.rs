//! Multi-output fusion: kernels that share data become one kernel with several outputs.
//!
//! - Producer–consumer (`multi-output-fusion`): a kernel whose result could not simply
//!   be fused into its users (it is expensive and has several, or it is also a result of
//!   the computation) joins a consumer kernel and stays an output of it where still
//!   needed. That consumer then reads the value from registers: softmax's `exp(x - max)`
//!   kernel joins the `sum` reduction that consumes it.
//! - Sibling (`sibling-multi-output-fusion`): kernels that read the same input merge so
//!   the input is read once (`sum(x)` and `sum(x*x)`; a reduction and an elementwise op
//!   of the same array).
//!
//! Every merge passes [`check_group`] (no cycle through an outside instruction, a
//! reduction's result not used at another shape, one iteration space for loop outputs,
//! the size budget). Kernels holding a dot or convolution are left alone: their outputs
//! come from a library call. A refusal is logged once per edge and rule.
//!
//! Producer–consumer merges are tried group by group, in index order, restarting after
//! each merge; a group whose every candidate pair has been tried is skipped on later
//! rounds until a merge changes it or a group it feeds (`dirty`), which tries the same
//! pairs in the same order as rescanning everything would.

use super::members::Members;
use super::reach::Reach;
use super::rules::{check_group, counts_toward_size, cycle_refusal, is_expensive, over_size, role, Refusal, Role};
use super::{Effect, Fuser};
use crate::ir::InstId;
use rustc_hash::FxHashSet as HashSet;

pub(super) fn run(f: &mut Fuser) {
    // Groups may get several outputs from here on, and the instructions no longer
    // change: answer cycle checks from reachability rows between groups.
    f.multi_output_groups = true;
    f.reach = Reach::new(&f.comp().order, &f.users, &f.cluster_of, f.clusters.len());
    let mut tried: HashSet<Pair> = HashSet::default();
    let mut dirty = Dirty::all(f.clusters.len());
    while producer_consumer_step(f, &mut tried, &mut dirty) {}
    siblings(f, &mut tried);
}

/// The groups to scan, lowest index first: one bit per group (a merge marks the groups
/// feeding it, and the scan takes them in index order again).
struct Dirty {
    words: Vec<u64>,
    /// No bit below this word is set.
    first: usize,
    groups: usize,
}

impl Dirty {
    fn all(groups: usize) -> Dirty {
        let mut words = vec![u64::MAX; groups.div_ceil(64)];
        if let Some(last) = words.last_mut().filter(|_| !groups.is_multiple_of(64)) {
            *last = (1u64 << (groups % 64)) - 1;
        }
        Dirty { words, first: 0, groups }
    }

    fn insert(&mut self, group: usize) {
        if let Some(word) = self.words.get_mut(group / 64).filter(|_| group < self.groups) {
            *word |= 1 << (group % 64);
            self.first = self.first.min(group / 64);
        }
    }

    fn pop_first(&mut self) -> Option<usize> {
        while let Some(word) = self.words.get_mut(self.first) {
            if *word != 0 {
                let bit = word.trailing_zeros() as usize;
                *word &= *word - 1;
                return Some(self.first * 64 + bit);
            }
            self.first += 1;
        }
        None
    }
}

/// Two groups at their current sizes: a pair is tried again once either has grown.
type Pair = (usize, usize, usize, usize);

fn pair(f: &Fuser, a: usize, b: usize) -> Pair {
    let (x, y) = (a.min(b), a.max(b));
    (x, y, f.clusters[x].len(), f.clusters[y].len())
}

/// Groups that may take part: they launch a kernel and hold no library call.
fn eligible(f: &Fuser, c: usize) -> bool {
    !f.clusters[c].is_empty() && f.kernel[c] && !f.library[c]
}

/// Tries one producer–consumer merge; true if one happened. Only `dirty` groups are
/// scanned: a clean group's candidate pairs have all been tried already.
fn producer_consumer_step(f: &mut Fuser, tried: &mut HashSet<Pair>, dirty: &mut Dirty) -> bool {
    while let Some(a) = dirty.pop_first() {
        if !eligible(f, a) {
            continue;
        }
        let outputs = f.graph().outputs(&f.clusters[a]);
        for o in outputs {
            for u in f.users_of(o) {
                let Some(b) = f.cluster(u) else { continue };
                if b == a || !eligible(f, b) || !tried.insert(pair(f, a, b)) {
                    continue;
                }
                if try_merge(f, a, b, o, u, "multi-output-fusion") {
                    // `a` grew; the groups feeding it now see it at a new size (and
                    // `b`'s members under a new group), so they have untried pairs.
                    dirty.insert(a);
                    let members: Vec<InstId> = f.clusters[a].iter().copied().collect();
                    for m in members {
                        for &op in &f.inst(m).operands {
                            if let Some(x) = f.cluster(op) {
                                dirty.insert(x);
                            }
                        }
                    }
                    return true;
                }
            }
        }
    }
    false
}

/// How many later readers of a value each reader is paired with. A value read by n
/// kernels has n²/2 sibling pairs, nearly all refused as cycles once the first few merge;
/// a window keeps the pass near-linear on wide graphs (a 10k-instruction layer stack)
/// and changes nothing for values with fewer readers than this. XLA bounds its
/// multi-output candidates in the same spirit.
const SIBLING_WINDOW: usize = 16;

/// Sibling merges: for each value, the kernels reading it.
fn siblings(f: &mut Fuser, tried: &mut HashSet<Pair>) {
    let order: Vec<InstId> = f.comp().order.clone();
    for p in order {
        // Sharing a scalar saves nothing worth a merge.
        if f.inst(p).ty.leaves().all(|s| s.rank() == 0) {
            continue;
        }
        let users = f.users_of(p);
        for i in 0..users.len() {
            for j in i + 1..users.len().min(i + 1 + SIBLING_WINDOW) {
                let (Some(a), Some(b)) = (f.cluster(users[i]), f.cluster(users[j])) else { continue };
                if a == b || !eligible(f, a) || !eligible(f, b) || !tried.insert(pair(f, a, b)) {
                    continue;
                }
                try_merge(f, a, b, p, users[j], "sibling-multi-output-fusion");
            }
        }
    }
}

/// Merges group `b` into group `a` if the rules allow; logs the decision either way.
/// `producer` and `consumer` name the edge shown to the user.
fn try_merge(f: &mut Fuser, a: usize, b: usize, producer: InstId, consumer: InstId, rule: &'static str) -> bool {
    let quick = quick_refusal(f, a, b);
    // The same refusal for the same edge, retried after a group grew: nothing changes
    // and nothing is logged.
    if quick.as_ref().is_some_and(|r| f.refused_edges.contains(&(producer, consumer, r.rule))) {
        return false;
    }
    let refusal = if quick.is_some() {
        quick
    } else if let Some((x, y)) = f.never_fused(f.clusters[a].as_slice(), f.clusters[b].as_slice()) {
        Some(Refusal::hard(
            "override-never-fuse",
            format!("the never-fuse override ({x}, {y}) keeps them in separate kernels"),
        ))
    } else {
        let merged: Members = f.clusters[a].union(&f.clusters[b]);
        let g = f.graph();
        // An expensive member whose value the other kernel broadcasts would be recomputed
        // for every broadcast element.
        let reuse = || {
            f.clusters[a]
                .iter()
                .chain(&f.clusters[b])
                .filter(|&&m| is_expensive(f.inst(m)))
                .find_map(|&m| g.reuses_elements_of(&merged, m).map(|bc| (m, bc)))
        };
        check_group(&g, &merged, f.cfg).err().or_else(|| {
            reuse().map(|(m, bc)| {
                Refusal::soft(
                    "refuse-expensive-into-reuse",
                    format!("{} is expensive and {} broadcasts it", g.name(m), g.name(bc)),
                )
            })
        })
    };
    match refusal {
        Some(r) => {
            // The same refusal for the same edge, retried after a group grew, is logged
            // once (and, for the quick ones, not even checked again).
            f.refused_edges.insert((producer, consumer, r.rule));
            if f.explain {
                let (pn, cn) = (f.name(producer), f.name(consumer));
                if f.refusals_logged.insert((pn.clone(), cn.clone(), r.rule)) {
                    let effect: Effect = f.effect(&f.clusters[a], &f.clusters[b]);
                    f.log(pn, cn, false, r.rule, r.reason, effect);
                }
            }
            false
        }
        None => {
            if !f.explain {
                f.merge(a, b, rule);
                return true;
            }
            let (pn, cn) = (f.name(producer), f.name(consumer));
            let reason = if rule == "sibling-multi-output-fusion" {
                format!(
                    "the kernels of {} and {cn} both read {pn}; one kernel reads it once and writes both results",
                    f.name(*f.clusters[a].iter().next().unwrap_or(&producer))
                )
            } else {
                format!("{cn} reads {pn} from registers in the same kernel; {pn} is written out only if something outside still needs it")
            };
            let effect: Effect = f.effect(&f.clusters[a], &f.clusters[b]);
            f.merge(a, b, rule);
            f.log(pn, cn, true, rule, reason, effect);
            true
        }
    }
}

/// [`check_group`]'s refusal of merging `a` and `b`, word for word, where it is the size
/// budget or a cycle, found without building the merged set (from the members' roles
/// and count, and the reachability rows, which answer its cycle check for two whole
/// groups: [`Reach::groups_cycle`]). Sibling merges try every pair of readers of a
/// value, and most pairs of kernels far apart are refused as a cycle. None where the
/// full check must decide: a never-fuse override (checked before), a member no kernel
/// can hold (refused before the size), groups that share members, or no rows.
fn quick_refusal(f: &Fuser, a: usize, b: usize) -> Option<Refusal> {
    if !f.cfg.never_fuse.is_empty() {
        return None;
    }
    let (ca, cb) = (&f.clusters[a], &f.clusters[b]);
    let members = || ca.iter().chain(cb.iter()).map(|&m| f.inst(m));
    if members().any(|m| matches!(role(m), Role::Value | Role::Opaque)) || !ca.is_disjoint(cb) {
        return None;
    }
    over_size(members().filter(|m| counts_toward_size(m)).count(), f.cfg)
        .or_else(|| f.reach.as_ref().and_then(|reach| reach.groups_cycle(&[a, b]).then(cycle_refusal)))
}

#[cfg(test)]
mod tests {
    use super::Dirty;

    #[test]
    fn dirty_groups_come_out_lowest_first_and_once() {
        let mut d = Dirty::all(70);
        let first: Vec<usize> = std::iter::from_fn(|| d.pop_first()).take(3).collect();
        assert_eq!(first, [0, 1, 2]);
        // A merge marks groups below and above the scan, and one already marked.
        d.insert(1);
        d.insert(69);
        d.insert(5);
        let rest: Vec<usize> = std::iter::from_fn(|| d.pop_first()).collect();
        let expected: Vec<usize> = [1].into_iter().chain(3..70).collect();
        assert_eq!(rest, expected);
        assert_eq!(d.pop_first(), None);
        // Past its groups, a mark is ignored; a group exactly at a word's end counts.
        d.insert(70);
        d.insert(63);
        assert_eq!((d.pop_first(), d.pop_first()), (Some(63), None));
        let mut whole = Dirty::all(64);
        assert_eq!(std::iter::from_fn(|| whole.pop_first()).count(), 64);
    }
}
