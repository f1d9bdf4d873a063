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
//!    fusions return a tuple that users read with get-tuple-element.
//!
//! Every merge goes through `rules::check_group` (cycles, shapes, heroes, in-place
//! updates, size); profitability refusals (duplicating an expensive op, an op whose
//! operands are much larger than its result, copies that do not pay off) live in
//! `loop_fusion`. The effect of each decision comes from the cost model
//! (`crate::cost::group_traffic`): bytes of memory traffic saved and kernels saved.
//! Users steer it with [`FusionConfig`]: knobs, and per-edge never-fuse / force-fuse
//! overrides (force lifts soft refusals only).

mod epilogue;
mod loop_fusion;
mod materialize;
mod multi_output;
mod reduction;
mod rules;
mod spec;
#[cfg(test)]
mod tests;

pub use spec::FUSION_KNOBS;

use super::{Changed, Decision, Pass, PassLog};
use crate::cost::{group_traffic, is_trivial};
use crate::ir::{CompId, Computation, InstId, Instruction, Module, Op};
use rules::Graph;
use std::collections::{BTreeSet, HashMap, HashSet};

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
            loop_fusion::run(&mut f);
            if self.config.multi_output {
                multi_output::run(&mut f);
            }
            changed |= materialize::run(&mut f);
            log.decisions.append(&mut f.decisions);
        }
        changed
    }
}

/// Computations whose instructions run as kernels: the entry and, under it, the bodies
/// of while / conditional / call (not reduction bodies, comparators or fusion bodies).
fn kernel_computations(module: &Module) -> Vec<CompId> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
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
    users: HashMap<InstId, Vec<InstId>>,
    /// Groups by index; a group merged into another is left empty.
    clusters: Vec<BTreeSet<InstId>>,
    cluster_of: HashMap<InstId, usize>,
    decisions: Vec<Decision>,
    /// Multi-output refusals already logged (producer, consumer, rule): a pair retried
    /// after a group grew is not logged again.
    refusals_logged: HashSet<(String, String, &'static str)>,
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
            users: HashMap::new(),
            clusters: Vec::new(),
            cluster_of: HashMap::new(),
            decisions: Vec::new(),
            refusals_logged: HashSet::new(),
        };
        f.refresh_users();
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
        Graph { comp: self.module.comp(self.comp), users: &self.users }
    }

    /// Recomputes the user lists (after an instruction is cloned or removed).
    fn refresh_users(&mut self) {
        let comp = self.module.comp(self.comp);
        let mut users: HashMap<InstId, Vec<InstId>> = HashMap::new();
        for &id in &comp.order {
            for &o in &comp.inst(id).operands {
                users.entry(o).or_default().push(id);
            }
        }
        self.users = users;
    }

    /// Distinct users of `id`, in program order.
    fn users_of(&self, id: InstId) -> Vec<InstId> {
        let mut seen = HashSet::new();
        self.users.get(&id).map(|us| us.iter().copied().filter(|u| seen.insert(*u)).collect()).unwrap_or_default()
    }

    fn new_cluster(&mut self, id: InstId) -> usize {
        self.clusters.push(BTreeSet::from([id]));
        let c = self.clusters.len() - 1;
        self.cluster_of.insert(id, c);
        c
    }

    fn cluster(&self, id: InstId) -> Option<usize> {
        self.cluster_of.get(&id).copied()
    }

    /// Moves every member of group `b` into group `a`.
    fn merge(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let moved = std::mem::take(&mut self.clusters[b]);
        for &m in &moved {
            self.cluster_of.insert(m, a);
        }
        self.clusters[a].extend(moved);
    }

    /// Whether a group launches a kernel (has a member that is not trivial).
    fn is_kernel(&self, members: &BTreeSet<InstId>) -> bool {
        members.iter().any(|&m| !is_trivial(&self.inst(m).op))
    }

    /// The effect of making groups `a` and `b` one kernel, from the cost model.
    fn effect(&self, a: &BTreeSet<InstId>, b: &BTreeSet<InstId>) -> Effect {
        let comp = self.comp();
        let merged: BTreeSet<InstId> = a.union(b).copied().collect();
        let before = group_traffic(comp, a, &self.users) + group_traffic(comp, b, &self.users);
        let after = group_traffic(comp, &merged, &self.users);
        let kernels = self.is_kernel(a) as i64 + self.is_kernel(b) as i64 - self.is_kernel(&merged) as i64;
        Effect { bytes: before as i64 - after as i64, kernels }
    }

    /// A never-fuse override that forbids `a` and `b` in one kernel, if any.
    fn never_fused(&self, a: &BTreeSet<InstId>, b: &BTreeSet<InstId>) -> Option<(String, String)> {
        let names = |s: &BTreeSet<InstId>| s.iter().map(|&i| self.name(i)).collect::<HashSet<_>>();
        let (na, nb) = (names(a), names(b));
        self.cfg
            .never_fuse
            .iter()
            .find(|(p, c)| (na.contains(p) && nb.contains(c)) || (nb.contains(p) && na.contains(c)))
            .cloned()
    }

    /// Whether the user asked to fuse producer `p` into consumer `c`.
    fn forced(&self, p: InstId, c: InstId) -> bool {
        let (pn, cn) = (self.name(p), self.name(c));
        self.cfg.force_fuse.iter().any(|(a, b)| *a == pn && *b == cn)
    }

    fn log(&mut self, producer: String, consumer: String, taken: bool, rule: &'static str, reason: String, e: Effect) {
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
