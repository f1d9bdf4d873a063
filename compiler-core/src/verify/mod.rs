//! The verifier: structural invariants and shape/type inference for every op.
//!
//! Invariants checked (a pass that breaks one is a bug, which tests catch):
//! (filled in by the verifier's implementation)

pub mod infer;

use crate::ir::{Loc, Module};
use std::fmt;

/// An instruction whose type or structure is wrong. From a parser this is bad input;
/// after a pass it is a bug in that pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    pub computation: String,
    pub inst: String,
    pub loc: Loc,
    pub message: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: in {}, %{}: {}", self.loc, self.computation, self.inst, self.message)
    }
}

impl std::error::Error for VerifyError {}

pub fn verify(module: &Module) -> Result<(), VerifyError> {
    let _ = module;
    Ok(())
}
