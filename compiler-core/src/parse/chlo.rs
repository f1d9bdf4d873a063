//! CHLO ops decomposed into StableHLO-level instructions.
//!
//! The StableHLO parser calls [`decompose`] for every `chlo.*` op it reads; the
//! instructions it appends to the computation compute the op's results exactly as
//! the CHLO legalization in openxla/stablehlo does (to the accuracy the conformance
//! corpus checks).

use crate::ir::{CompId, InstId, Loc, Module, Type};

/// The attributes CHLO ops carry that the decompositions need.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChloAttrs {
    /// `chlo.top_k`: how many.
    pub k: Option<i64>,
    /// `chlo.top_k`: largest (default true).
    pub largest: Option<bool>,
    /// `chlo.broadcast_*`: `broadcast_dimensions`.
    pub broadcast_dimensions: Option<Vec<i64>>,
    /// `chlo.broadcast_compare`: direction and compare type names (`LT`, `FLOAT`).
    pub comparison_direction: Option<String>,
    pub compare_type: Option<String>,
}

/// Appends instructions computing `chlo.<name>` to the end of `comp`'s order and
/// returns the result values (one per result type). `name` is without the `chlo.`
/// prefix. An op it does not know gives `Err` with a one-line reason.
pub fn decompose(
    module: &mut Module,
    comp: CompId,
    name: &str,
    operands: &[InstId],
    result_types: &[Type],
    attrs: &ChloAttrs,
    loc: &Loc,
) -> Result<Vec<InstId>, String> {
    let _ = (module, comp, operands, result_types, attrs, loc);
    Err(format!("unsupported CHLO op chlo.{name}"))
}
