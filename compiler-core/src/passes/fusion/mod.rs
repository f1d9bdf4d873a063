//! Fusion: groups instructions into kernels (`Op::Fusion`), XLA style, and records every
//! decision — taken or refused — with its reason and its estimated effect.
//!
//! Why: on a GPU (and a CPU) an unfused elementwise op is memory bound; each one reads
//! its operands from memory and writes its result back. Fusing a producer into its
//! consumer keeps the intermediate in registers, saving a kernel launch and two trips
//! through memory. `relu(x @ W + b)` goes from 5 kernels to 1, softmax from 7 to 3 and
//! layernorm from 18 to 3 (XLA's CPU backend makes 4 and 3 of the last two: it has no
//! multi-output fusion; without ours, softmax is 4 here too).
//!
//! How (per computation: the entry, and the bodies of while/conditional/call):
//! 1. Producer–consumer fusion (`loop_fusion`): instructions are visited from the root
//!    back to the parameters; each producer joins the kernel of its users when all of
//!    them are in one kernel, or is duplicated into each user's kernel when it is cheap.
//!    This covers loop fusion, reduction (kInput) fusion (`reduction`) and epilogue
//!    (kOutput) fusion after a dot or convolution (`epilogue`).
//! 2. Multi-output fusion (`multi_output`): a producer kernel whose result is also
//!    needed elsewhere joins its consumer and stays an output; sibling kernels that read
//!    the same input merge so that the input is read once.
//! 3. Materialization (`materialize`): each group becomes a fusion instruction whose
//!    body computation holds the members, with one parameter per operand; multi-output
//!    fusions return a tuple that users read with get-tuple-element. In the entry it
//!    records the provenance (`fused_into`, `cloned_from`, `created_by`, ...), each with
//!    the rule of the decision by which the instruction joined its group.
//!
//! Every merge goes through `rules::check_group` (cycles, shapes, heroes, in-place
//! updates, size); profitability refusals (duplicating an expensive op, an op whose
//! operands are much larger than its result, copies that do not pay off) live in
//! `loop_fusion`. The effect of each decision comes from the cost model
//! (`crate::cost::group_traffic`): bytes of memory traffic saved and kernels saved.
//! Users steer it with [`FusionConfig`]: knobs, and per-edge never-fuse / force-fuse
//! overrides (force lifts soft refusals only).
//!
//! Cost: the pass is meant to stay near-linear on large graphs (10,000 instructions in
//! tens of milliseconds). The user lists are kept up to date as copies are made instead
//! of being rebuilt; the cycle check walks only the instructions between a group's first
//! and last member in program order (nothing later can lead back into it); multi-output
//! fusion rescans only the groups that a merge touched.

mod epilogue;
mod loop_fusion;
mod materialize;
mod members;
mod multi_output;
mod reach;
mod reduction;
mod rules;
mod spec;
#[cfg(test)]
mod tests;

pub use spec::FUSION_KNOBS;

use super::{Changed, Decision, Pass, PassLog, Provenance};
use crate::cost::{group_traffic, is_trivial};
use crate::ir::{sized_map, CompId, Computation, InstId, Instruction, Module, Op, UserLists};
use cranelift_entity::SecondaryMap;
use members::Members;
use rules::Graph;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use smallvec::SmallVec;
use std::collections::BTreeMap;

/// Where an instruction sits in program order: (index in the original order, copy
/// number). A copy of `p` sits right after `p` and before older copies of `p`, so copies
/// count down from `u32::MAX`; the original has 0. Ordering keys orders instructions as
/// the computation's order does, and every operand's key is below its users'.
pub(super) type Pos = (u32, u32);

/// The knobs of the fusion pass.
#[derive(Clone, Debug, PartialEq)]
pub struct FusionConfig {
    /// Off: the pass does nothing.
    pub enabled: bool,
    /// Multi-output fusion (producer–consumer and sibling).
    pub multi_output: bool,
    /// Epilogue fusion after dots and convolutions.
    pub epilogue: bool,
    /// Most instructions in one kernel (scalar constants are free).
    pub max_fusion_size: usize,
    /// Whether cheap producers may be computed again in each consumer's kernel.
    pub allow_duplication: bool,
    /// (producer, consumer) instruction names never to put in one kernel.
    pub never_fuse: Vec<(String, String)>,
    /// (producer, consumer) edges to fuse whenever it is legal, overriding budgets and
    /// profitability rules.
    pub force_fuse: Vec<(String, String)>,
}

impl Default for FusionConfig {
    fn default() -> Self {
        FusionConfig {
            enabled: true,
            multi_output: true,
            epilogue: true,
            max_fusion_size: 256,
            allow_duplication: true,
            never_fuse: Vec::new(),
            force_fuse: Vec::new(),
        }
    }
}

/// The fusion pass (`fusion`).
#[derive(Clone, Debug, Default)]
pub struct FusionPass {
    pub config: FusionConfig,
}

impl FusionPass {
    pub fn new(config: FusionConfig) -> FusionPass {
        FusionPass { config }
    }
}

impl Pass for FusionPass {
    fn name(&self) -> &'static str {
        "fusion"
    }
    fn run(&self, module: &mut Module, log: &mut PassLog) -> Changed {
        if !self.config.enabled {
            return false;
        }
        let mut changed = false;
        for comp in kernel_computations(module) {
            let mut f = Fuser::new(module, comp, &self.config);
            f.explain = !log.quiet;
            loop_fusion::run(&mut f);
            if self.config.multi_output {
                multi_output::run(&mut f);
            }
            changed |= materialize::run(&mut f);
            log.decisions.append(&mut f.decisions);
            log.provenance.append(&mut f.provenance);
        }
        changed
    }
}

/// Computations whose instructions run as kernels: the entry and, under it, the bodies
/// of while / conditional / call (not reduction bodies, comparators or fusion bodies).
fn kernel_computations(module: &Module) -> Vec<CompId> {
    let mut out = Vec::new();
    let mut seen = HashSet::default();
    let mut stack = vec![module.entry];
    while let Some(c) = stack.pop() {
        if module.comps.get(c).is_none() || !seen.insert(c) {
            continue;
        }
        out.push(c);
        for &i in &module.comp(c).order {
            let op = &module.comp(c).inst(i).op;
            if matches!(op, Op::While { .. } | Op::Case { .. } | Op::Call { .. }) {
                stack.extend(op.called_computations());
            }
        }
    }
    out
}

/// The state of fusing one computation: the groups formed so far (clusters of
/// instructions that will become one kernel) and the decisions taken.
pub(super) struct Fuser<'a> {
    module: &'a mut Module,
    comp: CompId,
    cfg: &'a FusionConfig,
    /// Each instruction's users, once per use, in program order (as
    /// [`Fuser::refresh_users`] builds them; kept so incrementally).
    users: UserLists,
    /// Program-order position of every live instruction (see [`Pos`]).
    pos: SecondaryMap<InstId, Pos>,
    /// Whether every operand comes before its users in `pos` (true for verified
    /// modules); the cycle check's pruning relies on it.
    pos_topological: bool,
    /// Copies made so far (the next copy's number counts down from this).
    copies: u32,
    /// Copies added and instructions removed since `comp.order` was last rebuilt.
    added: Vec<InstId>,
    removed: HashSet<InstId>,
    /// Whether groups may have several outputs (from multi-output fusion on): cycle
    /// checks then treat each group as one node.
    multi_output_groups: bool,
    /// Reachability between groups, while the instructions stay fixed (multi-output
    /// fusion); kept up to date by [`Fuser::merge`].
    reach: Option<reach::Reach>,
    /// Groups by index; a group merged into another is left empty.
    clusters: Vec<Members>,
    /// Per group: whether it launches a kernel, and whether it holds a library call.
    kernel: Vec<bool>,
    library: Vec<bool>,
    cluster_of: HashMap<InstId, usize>,
    decisions: Vec<Decision>,
    /// Whether decisions are recorded with their reasons and savings (not when the
    /// pass's log is quiet).
    explain: bool,
    /// Multi-output refusals already logged (producer, consumer, rule): a pair retried
    /// after a group grew is not logged again.
    refusals_logged: std::collections::HashSet<(String, String, &'static str)>,
    /// The same, by instruction (cheap to look up before building names).
    refused_edges: HashSet<(InstId, InstId, &'static str)>,
    /// For provenance: the rule of the merge by which each instruction joined a group of
    /// two or more (both sides of a group's first merge get it; kept only when the log
    /// is read).
    joined: HashMap<InstId, &'static str>,
    /// Copies made of a producer (by [`loop_fusion`]), to the original, while they live
    /// (for provenance: kept only when the log is read).
    clone_of: BTreeMap<InstId, InstId>,
    /// Producers removed because every user got a copy, with the rule that copied them.
    dropped: Vec<(InstId, &'static str)>,
    /// Provenance of the entry's changes (`materialize` records it; other computations
    /// are not in the graph).
    provenance: Vec<Provenance>,
}

/// The estimated effect of a merge: bytes of traffic saved and kernels saved.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub(super) struct Effect {
    bytes: i64,
    kernels: i64,
}

impl<'a> Fuser<'a> {
    fn new(module: &'a mut Module, comp: CompId, cfg: &'a FusionConfig) -> Fuser<'a> {
        let mut f = Fuser {
            module,
            comp,
            cfg,
            users: UserLists::default(),
            pos: SecondaryMap::new(),
            pos_topological: true,
            copies: 0,
            added: Vec::new(),
            removed: HashSet::default(),
            multi_output_groups: false,
            reach: None,
            clusters: Vec::new(),
            kernel: Vec::new(),
            library: Vec::new(),
            cluster_of: HashMap::default(),
            decisions: Vec::new(),
            explain: true,
            refusals_logged: std::collections::HashSet::new(),
            refused_edges: HashSet::default(),
            joined: HashMap::default(),
            clone_of: BTreeMap::new(),
            dropped: Vec::new(),
            provenance: Vec::new(),
        };
        f.refresh_users();
        let order = f.comp().order.clone();
        f.pos = sized_map(f.comp().insts.len(), Pos::default());
        for (i, &id) in order.iter().enumerate() {
            f.pos[id] = (i as u32, 0);
        }
        f.pos_topological = order
            .iter()
            .all(|&id| f.comp().inst(id).operands.iter().all(|&o| f.pos.get(o).is_some_and(|&p| p < f.pos[id])));
        // Every instruction that can be part of a kernel starts as its own group.
        let order = f.comp().order.clone();
        for id in order {
            if !matches!(rules::role(f.comp().inst(id)), rules::Role::Value | rules::Role::Opaque) {
                f.new_cluster(id);
            }
        }
        f
    }

    fn comp(&self) -> &Computation {
        self.module.comp(self.comp)
    }
    fn inst(&self, id: InstId) -> &Instruction {
        self.comp().inst(id)
    }
    fn name(&self, id: InstId) -> String {
        self.inst(id).name.clone()
    }
    fn graph(&self) -> Graph<'_> {
        let pos = if self.pos_topological { Some(&self.pos) } else { None };
        let groups = self.multi_output_groups.then_some((&self.cluster_of, self.clusters.as_slice()));
        Graph {
            comp: self.module.comp(self.comp),
            users: &self.users,
            pos,
            groups,
            reach: self.reach.as_ref(),
            producer_into_group: false,
        }
    }

    /// Inserts `user` (once per use of `of`) into `of`'s user list at its place in
    /// program order.
    fn add_user(&mut self, of: InstId, user: InstId) {
        let uses = self.inst(user).operands.iter().filter(|&&o| o == of).count();
        let key = self.pos[user];
        let pos = &self.pos;
        let list = self.users.list_mut(of);
        let at = list.partition_point(|&u| pos[u] < key);
        list.insert_many(at, std::iter::repeat_n(user, uses));
    }

    fn remove_user(&mut self, of: InstId, user: InstId) {
        self.users.list_mut(of).retain(|u| *u != user);
    }

    /// Rebuilds the computation's order after copies were added or instructions removed.
    fn flush_order(&mut self) {
        if self.added.is_empty() && self.removed.is_empty() {
            return;
        }
        let (added, removed) = (std::mem::take(&mut self.added), std::mem::take(&mut self.removed));
        let pos = &self.pos;
        let comp = self.module.comp_mut(self.comp);
        let mut order: Vec<InstId> = comp.order.iter().copied().chain(added).filter(|i| !removed.contains(i)).collect();
        order.sort_by_key(|&i| pos[i]);
        comp.order = order;
    }

    /// Recomputes the user lists (after an instruction is cloned or removed).
    fn refresh_users(&mut self) {
        self.users = self.module.comp(self.comp).users();
    }

    /// Distinct users of `id`, in program order. (A user's uses sit next to each other
    /// in the list, which is kept in program order.)
    fn users_of(&self, id: InstId) -> SmallVec<[InstId; 4]> {
        let mut us = SmallVec::from_slice(self.users.get(id));
        us.dedup();
        us
    }

    fn new_cluster(&mut self, id: InstId) -> usize {
        self.kernel.push(!is_trivial(&self.inst(id).op));
        self.library.push(rules::role(self.inst(id)) == rules::Role::Library);
        self.clusters.push(Members::one(id));
        let c = self.clusters.len() - 1;
        self.cluster_of.insert(id, c);
        c
    }

    fn cluster(&self, id: InstId) -> Option<usize> {
        self.cluster_of.get(&id).copied()
    }

    /// Moves every member of group `b` into group `a`, a merge that `rule` decided.
    fn merge(&mut self, a: usize, b: usize, rule: &'static str) {
        if a == b {
            return;
        }
        // Only provenance reads `joined`, and only a log that is read records it.
        if self.explain && self.clusters[a].len() == 1 {
            let first = *self.clusters[a].first().expect("one member");
            self.joined.entry(first).or_insert(rule);
        }
        let moved = std::mem::take(&mut self.clusters[b]);
        for &m in &moved {
            self.cluster_of.insert(m, a);
            if self.explain {
                self.joined.entry(m).or_insert(rule);
            }
        }
        self.clusters[a].extend(moved);
        if let Some(reach) = &mut self.reach {
            reach.merge(a, b);
        }
        self.kernel[a] |= std::mem::take(&mut self.kernel[b]);
        self.library[a] |= std::mem::take(&mut self.library[b]);
    }

    /// Takes `id` out of its group.
    fn unassign(&mut self, id: InstId) {
        if let Some(c) = self.cluster_of.remove(&id) {
            self.clusters[c].remove(&id);
            self.kernel[c] = self.is_kernel(&self.clusters[c]);
            self.library[c] = self.clusters[c].iter().any(|&m| rules::role(self.inst(m)) == rules::Role::Library);
        }
    }

    /// Whether a group launches a kernel (has a member that is not trivial).
    fn is_kernel(&self, members: &Members) -> bool {
        members.iter().any(|&m| !is_trivial(&self.inst(m).op))
    }

    /// The effect of making groups `a` and `b` one kernel, from the cost model.
    fn effect(&self, a: &Members, b: &Members) -> Effect {
        let comp = self.comp();
        let merged = a.union(b);
        let before = group_traffic(comp, a.as_slice(), &self.users) + group_traffic(comp, b.as_slice(), &self.users);
        let after = group_traffic(comp, merged.as_slice(), &self.users);
        let kernels = self.is_kernel(a) as i64 + self.is_kernel(b) as i64 - self.is_kernel(&merged) as i64;
        Effect { bytes: before as i64 - after as i64, kernels }
    }

    /// A never-fuse override that forbids `a` and `b` in one kernel, if any.
    fn never_fused(&self, a: &[InstId], b: &[InstId]) -> Option<(String, String)> {
        if self.cfg.never_fuse.is_empty() {
            return None;
        }
        let names = |s: &[InstId]| s.iter().map(|&i| self.name(i)).collect::<std::collections::HashSet<_>>();
        let (na, nb) = (names(a), names(b));
        self.cfg
            .never_fuse
            .iter()
            .find(|(p, c)| (na.contains(p) && nb.contains(c)) || (nb.contains(p) && na.contains(c)))
            .cloned()
    }

    /// Whether the user asked to fuse producer `p` into consumer `c`.
    fn forced(&self, p: InstId, c: InstId) -> bool {
        if self.cfg.force_fuse.is_empty() {
            return false;
        }
        let (pn, cn) = (self.name(p), self.name(c));
        self.cfg.force_fuse.iter().any(|(a, b)| *a == pn && *b == cn)
    }

    fn log(&mut self, producer: String, consumer: String, taken: bool, rule: &'static str, reason: String, e: Effect) {
        if !self.explain {
            return;
        }
        self.decisions.push(Decision {
            producer,
            consumer,
            taken,
            rule,
            reason,
            bytes_saved: e.bytes,
            kernels_saved: e.kernels,
        });
    }
}
