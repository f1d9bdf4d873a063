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
    "constant-to-rhs" => arith::constant_to_rhs,
    "compare-constant-to-rhs" => arith::compare_constant_to_rhs,
    "add-zero" => arith::add_zero,
    "sub-zero" => arith::sub_zero,
    "mul-one" => arith::mul_one,
    "div-one" => arith::div_one,
    "mul-zero-int" => arith::mul_zero_int,
    "sub-self-int" => arith::sub_self_int,
    "xor-self" => arith::xor_self,
    "and-all-ones" => arith::and_all_ones,
    "and-zero" => arith::and_zero,
    "or-zero" => arith::or_zero,
    "or-all-ones" => arith::or_all_ones,
    "xor-zero" => arith::xor_zero,
    "shift-by-zero" => arith::shift_by_zero,
    "max-identity" => arith::max_identity,
    "min-identity" => arith::min_identity,
    "idempotent-self" => arith::idempotent_self,
    "add-negate" => arith::add_negate,
    "sub-negate" => arith::sub_negate,
    "select-const-pred" => arith::select_const_pred,
    "select-same" => arith::select_same,
    "select-not-pred" => arith::select_not_pred,
    "neg-neg" => arith::neg_neg,
    "not-not" => arith::not_not,
    "abs-abs" => arith::abs_abs,
    "abs-of-negate" => arith::abs_of_negate,
    "compare-self-int" => arith::compare_self_int,
    "elementwise-of-scalar-broadcasts" => arith::elementwise_of_scalar_broadcasts,
    "convert-same-type" => convert::convert_same_type,
    "convert-chain-exact" => convert::convert_chain_exact,
    "reshape-same-shape" => shapes::reshape_same_shape,
    "reshape-reshape" => shapes::reshape_reshape,
    "broadcast-identity" => shapes::broadcast_identity,
    "broadcast-broadcast" => shapes::broadcast_broadcast,
    "transpose-identity" => shapes::transpose_identity,
    "transpose-transpose" => shapes::transpose_transpose,
    "transpose-is-reshape" => shapes::transpose_is_reshape,
    "shape-op-of-scalar-broadcast" => shapes::shape_op_of_scalar_broadcast,
    "reverse-reverse" => shapes::reverse_reverse,
    "reverse-trivial-dims" => shapes::reverse_trivial_dims,
    "pad-zero" => shapes::pad_zero,
    "concat-single" => shapes::concat_single,
    "iota-trivial-dim" => shapes::iota_trivial_dim,
    "get-tuple-element-of-tuple" => shapes::gte_of_tuple,
    "slice-full" => slices::slice_full,
    "slice-slice" => slices::slice_slice,
    "slice-of-broadcast" => slices::slice_of_broadcast,
    "slice-of-concat" => slices::slice_of_concat,
    "dynamic-slice-constant" => slices::dynamic_slice_constant,
    "dynamic-update-slice-full" => slices::dynamic_update_slice_full,
    "reduce-no-dims" => reduce::reduce_no_dims,
    "reduce-trivial-dims" => reduce::reduce_trivial_dims,
    "reduce-of-broadcast" => reduce::reduce_of_broadcast,
];

impl Pass for AlgebraicSimplifier {
    fn name(&self) -> &'static str {
        "simplify"
    }

    fn run(&self, module: &mut Module, log: &mut PassLog) -> Changed {
        run_rules(RULES, self.max_rounds, module, log)
    }
}
