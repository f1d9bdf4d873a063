//! Compiler passes: each one a semantics-preserving rewrite of a [`Module`].
//!
//! A pass has a stable name and reports whether it changed the module (XLA's
//! `HloPassInterface`). One pass per file.

pub mod cse;
pub mod dce;

use crate::ir::Module;

/// Whether a pass changed the module.
pub type Changed = bool;

pub trait Pass {
    /// Stable name, used in pipelines (`--pipeline`), dumps and the UI.
    fn name(&self) -> &'static str;
    fn run(&self, module: &mut Module) -> Changed;
}
