//! Compiler passes: each one a semantics-preserving rewrite of a [`Module`].
//!
//! A pass has a stable name and reports whether it changed the module (XLA's
//! `HloPassInterface`). One pass per file.

pub mod buffers;
pub mod constant_fold;
pub mod cse;
pub mod dce;
pub mod fusion;
pub mod inline;
pub mod layout;
pub mod pipeline;
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
