//! Compiler passes: each one a semantics-preserving rewrite of a [`Module`].
//!
//! A pass has a stable name and reports whether it changed the module (XLA's
//! `HloPassInterface`). One pass per file.

pub mod buffers;
pub mod constant_fold;
pub mod cse;
pub mod dce;
pub mod dot;
pub mod fusion;
pub mod inline;
pub mod layout;
pub mod pipeline;
pub(crate) mod provenance;
pub(crate) mod rewrite;
pub mod schedule;
pub mod simplify;

use crate::ir::Module;

/// Whether a pass changed the module.
pub type Changed = bool;

pub trait Pass {
    /// Stable name, used in pipelines (`--pipeline`), dumps and the UI.
    fn name(&self) -> &'static str;
    /// Rewrites `module`; records what it did (rules applied, decisions taken or refused)
    /// in `log`, which becomes part of the pass's snapshot.
    fn run(&self, module: &mut Module, log: &mut PassLog) -> Changed;
}

/// What a pass reports about its run, beyond the rewritten module.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PassLog {
    /// One line per rewrite applied: rule name and the instruction it applied to.
    pub rewrites: Vec<Rewrite>,
    /// Fusion decisions, taken or refused, with their reasons.
    pub decisions: Vec<Decision>,
    /// Where the graph's new node ids come from and where the vanished ones went, in
    /// the order the pass made the changes. Raw: an id a pass made and removed again
    /// within the same run may appear here; the snapshot keeps only the records about ids
    /// its graphs show (`provenance::normalize`).
    pub provenance: Vec<Provenance>,
    /// Nobody reads the decisions' reasons and savings nor the provenance (a target's
    /// pipeline, which keeps no snapshots): a pass may skip composing them. Rewrites are
    /// kept.
    pub quiet: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Rewrite {
    /// The rule's stable name (`add-zero`, `transpose-of-transpose`).
    pub rule: &'static str,
    /// The instruction it rewrote (its name before the rewrite).
    pub inst: String,
}

/// A fusion decision: may `producer` be fused into `consumer`, and why (not).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Decision {
    pub producer: String,
    pub consumer: String,
    pub taken: bool,
    /// The rule that decided (`loop-fusion`, `refuse-expensive-duplication`, ...).
    pub rule: &'static str,
    /// One sentence a person can read.
    pub reason: String,
    /// Estimated effect if taken: bytes of memory traffic saved (negative: added) and
    /// kernels saved.
    pub bytes_saved: i64,
    pub kernels_saved: i64,
}

/// Why a node id of the snapshot graph ([`pipeline::Node::id`]) appeared or disappeared
/// between the previous snapshot (A) and this one (B).
///
/// Ids are graph node ids: instruction names of the entry computation, and
/// `fusion/name` for an instruction inside one of the entry's fusions. Each field says
/// which snapshot it refers to. Every id in B but not in A is the `id` of a
/// `fused_into`'s new place (`fusion/name`), a `cloned_from` or a `created_by`, or the
/// `by` of a `replaced_by`; every id in A but not in B is the `id` of a `fused_into`,
/// a `removed` or a `replaced_by`. (The passes record a `removed` for every deleted
/// instruction, replaced or not, so `fused_into` and `removed` alone account for every
/// id that disappears.) Nothing is recorded for an instruction rewritten in place (it
/// keeps its name, so its id): that is a [`Rewrite`].
///
/// `rule` names what decided: a simplifier rule (`add-zero`), a fusion decision's rule
/// (`loop-fusion`, `duplicate-into-consumer`, `multi-output-fusion`, ...), or the pass's
/// own: `cse`, `dce` (dead code removal, also where `simplify` and `constant-fold` clean
/// up after themselves), `inline-call`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Provenance {
    /// `id` (in A, an entry instruction) now lives inside fusion `fusion` (in B), where
    /// its id is `fusion/<id>`.
    FusedInto { id: String, fusion: String, rule: &'static str },
    /// `id` (in B) is a copy of `original` (in A), as fusion makes of a cheap producer
    /// for each kernel that reads it.
    ClonedFrom { id: String, original: String, rule: &'static str },
    /// The users of `id` (in A) now read `by` (in B), whether or not `id` is then
    /// removed (a `removed` says so).
    ReplacedBy { id: String, by: String, rule: &'static str },
    /// `id` (in B) is a new instruction that `rule` made: a simplifier's helper, a
    /// fusion instruction and the tuple and get-tuple-elements of a multi-output one,
    /// an inlined callee's instructions.
    CreatedBy { id: String, rule: &'static str },
    /// `id` (in A) was deleted.
    Removed { id: String, rule: &'static str },
}
