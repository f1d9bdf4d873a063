//! Parsers: StableHLO (MLIR text, as JAX prints it) and XLA HLO text.
//!
//! Both return a verified-shape-ready [`Module`] or one [`ParseError`] with the line and
//! column of the problem and a one-line reason. Parsing never panics.

pub mod chlo;
pub mod hlo;
pub mod mlir;

use crate::ir::Module;
use std::fmt;

/// Bad input text: where and why. Never a bug in hloscope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line and column of the offending token.
    pub line: u32,
    pub col: u32,
    pub message: String,
}

impl ParseError {
    pub fn new(line: u32, col: u32, message: impl Into<String>) -> ParseError {
        ParseError { line, col, message: message.into() }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Which text format a module is written in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// MLIR text: StableHLO / CHLO / func dialects.
    StableHlo,
    /// XLA HLO text (`HloModule ...`).
    Hlo,
}

/// Guesses the format: HLO text starts (after comments) with `HloModule`.
pub fn detect_format(text: &str) -> Format {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with("//") && !l.starts_with('#'));
    match first {
        Some(l) if l.starts_with("HloModule") => Format::Hlo,
        _ => Format::StableHlo,
    }
}

/// Parses either format, detected with [`detect_format`].
pub fn parse_module(text: &str) -> Result<Module, ParseError> {
    match detect_format(text) {
        Format::StableHlo => mlir::parse(text),
        Format::Hlo => hlo::parse(text),
    }
}
