//! Printers: XLA HLO-like text (stable names, small diffs between passes) and StableHLO.

pub mod hlo;
pub mod stablehlo;
