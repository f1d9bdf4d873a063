//! The dot passes (XLA's dot pipeline, run between the simplifier and fusion): transpose
//! folding, dot strength reduction, sibling dot merging and canonicalization, one file each. Each keeps
//! every result bit on the interpreter (the pipeline tests check it on every corpus).

mod canonicalize;
mod merger;
mod strength_reduction;
#[cfg(test)]
mod tests;
mod transpose_folding;

pub use canonicalize::DotCanonicalize;
pub use merger::DotMerger;
pub use strength_reduction::DotStrengthReduction;
pub use transpose_folding::TransposeFolding;
