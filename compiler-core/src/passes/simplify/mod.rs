//! Algebraic simplification (XLA's `AlgebraicSimplifier`, in spirit): local rewrites that
//! make the module smaller or simpler without changing any result bit.
//!
//! The rules live in a table, [`RULES`], one small function each, grouped by family in
//! the files next to this one (`arith.rs`, `shapes.rs`, `slices.rs`, `convert.rs`,
//! `reduce.rs`). Each rule's doc comment states its identity (`x + (-0.0) -> x`)
//! and the conditions under which it is exact. Every rule that fires is recorded in
//! [`PassLog::rewrites`] under its stable name.
//!
//! They run under the rule driver shared with the dot passes (`passes/rewrite.rs`: the
//! order of visits, what an [`Action`] may do, the clean-up and the provenance).
//!
//! What it deliberately refuses (each has a test that it does not fire):
//! - float rewrites that are wrong for NaN, infinities or signed zeros: `x * 0 -> 0`,
//!   `x - x -> 0`, `x + 0.0 -> x` (wrong for `x = -0.0`; `x + (-0.0) -> x` is exact),
//!   `max(x, +inf) -> +inf` (wrong for NaN), `x == x -> true`;
//! - multiplications by powers of two are never turned into anything else for floats;
//! - lossy convert chains (`f32 -> f16 -> f32` is not the identity);
//! - reductions over no dimensions whose init is not the body's identity.
//!
//! A broadcast of a scalar constant is kept as a broadcast: it is cheap, fuses into its
//! users and keeps the module small; `constant-fold` refuses to expand it too. Elementwise
//! ops over scalar broadcasts are instead rewritten to broadcast one scalar op
//! (`elementwise-of-scalar-broadcasts`), which constant folding can then fold.

mod arith;
mod convert;
mod reduce;
mod shapes;
mod slices;
#[cfg(test)]
pub(crate) mod tests;

use super::rewrite::{rules, run_rules, Rule};
pub(crate) use super::rewrite::{Action, Ctx};
use super::{Changed, Pass, PassLog};
use crate::ir::Module;

/// The algebraic simplifier; see the module documentation.
pub struct AlgebraicSimplifier {
    /// Upper bound on rounds over the module (each round applies every rule that fires);
    /// a fixed point is usually reached in two or three.
    pub max_rounds: usize,
}

impl Default for AlgebraicSimplifier {
    fn default() -> Self {
        AlgebraicSimplifier { max_rounds: 16 }
    }
}
/// All rules, in the order they are tried on each instruction.
pub(crate) const RULES: &[Rule] = rules![
    // Canonical form first, so that later rules see constants on the right.
    "constant-to-rhs" on ["binary"] => arith::constant_to_rhs,
    "compare-constant-to-rhs" on ["compare"] => arith::compare_constant_to_rhs,
    "add-zero" on ["binary"] => arith::add_zero,
    "sub-zero" on ["binary"] => arith::sub_zero,
    "mul-one" on ["binary"] => arith::mul_one,
    "div-one" on ["binary"] => arith::div_one,
    "mul-zero-int" on ["binary"] => arith::mul_zero_int,
    "sub-self-int" on ["binary"] => arith::sub_self_int,
    "xor-self" on ["binary"] => arith::xor_self,
    "and-all-ones" on ["binary"] => arith::and_all_ones,
    "and-zero" on ["binary"] => arith::and_zero,
    "or-zero" on ["binary"] => arith::or_zero,
    "or-all-ones" on ["binary"] => arith::or_all_ones,
    "xor-zero" on ["binary"] => arith::xor_zero,
    "shift-by-zero" on ["binary"] => arith::shift_by_zero,
    "max-identity" on ["binary"] => arith::max_identity,
    "min-identity" on ["binary"] => arith::min_identity,
    "idempotent-self" on ["binary"] => arith::idempotent_self,
    "add-negate" on ["binary"] => arith::add_negate,
    "sub-negate" on ["binary"] => arith::sub_negate,
    "select-const-pred" on ["select"] => arith::select_const_pred,
    "select-same" on ["select"] => arith::select_same,
    "select-not-pred" on ["select"] => arith::select_not_pred,
    "neg-neg" on ["unary"] => arith::neg_neg,
    "not-not" on ["unary"] => arith::not_not,
    "abs-abs" on ["unary"] => arith::abs_abs,
    "abs-of-negate" on ["unary"] => arith::abs_of_negate,
    "compare-self-int" on ["compare"] => arith::compare_self_int,
    "elementwise-of-scalar-broadcasts" on ["unary", "binary", "compare", "select", "clamp", "convert",
        "reduce-precision"] => arith::elementwise_of_scalar_broadcasts,
    "convert-same-type" on ["convert"] => convert::convert_same_type,
    "convert-chain-exact" on ["convert"] => convert::convert_chain_exact,
    "reshape-same-shape" on ["reshape"] => shapes::reshape_same_shape,
    "reshape-reshape" on ["reshape"] => shapes::reshape_reshape,
    "broadcast-identity" on ["broadcast"] => shapes::broadcast_identity,
    "broadcast-broadcast" on ["broadcast"] => shapes::broadcast_broadcast,
    "transpose-identity" on ["transpose"] => shapes::transpose_identity,
    "transpose-transpose" on ["transpose"] => shapes::transpose_transpose,
    "transpose-is-reshape" on ["transpose"] => shapes::transpose_is_reshape,
    "shape-op-of-scalar-broadcast" on ["reshape", "transpose", "reverse", "slice"] =>
        shapes::shape_op_of_scalar_broadcast,
    "reverse-reverse" on ["reverse"] => shapes::reverse_reverse,
    "reverse-trivial-dims" on ["reverse"] => shapes::reverse_trivial_dims,
    "pad-zero" on ["pad"] => shapes::pad_zero,
    "concat-single" on ["concatenate"] => shapes::concat_single,
    "iota-trivial-dim" on ["iota"] => shapes::iota_trivial_dim,
    "get-tuple-element-of-tuple" on ["get-tuple-element"] => shapes::gte_of_tuple,
    "slice-full" on ["slice"] => slices::slice_full,
    "slice-slice" on ["slice"] => slices::slice_slice,
    "slice-of-broadcast" on ["slice"] => slices::slice_of_broadcast,
    "slice-of-concat" on ["slice"] => slices::slice_of_concat,
    "dynamic-slice-constant" on ["dynamic-slice"] => slices::dynamic_slice_constant,
    "dynamic-update-slice-full" on ["dynamic-update-slice"] => slices::dynamic_update_slice_full,
    "reduce-no-dims" on ["reduce"] => reduce::reduce_no_dims,
    "reduce-trivial-dims" on ["reduce"] => reduce::reduce_trivial_dims,
    "reduce-of-broadcast" on ["reduce"] => reduce::reduce_of_broadcast,
];

impl Pass for AlgebraicSimplifier {
    fn name(&self) -> &'static str {
        "simplify"
    }

    fn run(&self, module: &mut Module, log: &mut PassLog) -> Changed {
        run_rules(RULES, self.max_rounds, module, log)
    }
}
