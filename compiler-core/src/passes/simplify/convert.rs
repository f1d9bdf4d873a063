//! Conversions: a convert to the operand's own type, and chains of converts whose first
//! step is exact (widening), which can skip the middle type.
//!
//! `convert` is a function of the *value* (round to nearest even, truncate and saturate
//! to integers, NaN to 0, nonzero to true), so when `A -> B` represents every value of
//! `A` exactly, `A -> B -> C` equals `A -> C`. Lossy first steps (`f32 -> f16`,
//! `s32 -> s8`, `f32 -> s32`, `u32 -> s32`, `s32 -> f32`) are refused.

use super::{Action, Ctx};
use crate::ir::{ElementType, InstId, Op};

/// Bits of precision of a float type's significand (including the implicit bit).
fn significand_bits(e: ElementType) -> u32 {
    match e {
        ElementType::F16 => 11,
        ElementType::BF16 => 8,
        ElementType::F32 => 24,
        _ => 53,
    }
}

/// Whether converting from `a` to `b` keeps every value of `a` exactly.
pub(super) fn exact_widening(a: ElementType, b: ElementType) -> bool {
    use ElementType::*;
    if a == b || a.is_pred() {
        return true;
    }
    if b.is_pred() {
        return false;
    }
    if a.is_float() {
        return matches!((a, b), (F16 | BF16, F32 | F64) | (F32, F64));
    }
    // `a` is an integer: the number of value bits it needs.
    let value_bits = if a.is_signed_int() { a.bit_width() - 1 } else { a.bit_width() };
    if b.is_float() {
        value_bits <= significand_bits(b)
    } else if b.is_signed_int() {
        value_bits < b.bit_width()
    } else {
        a.is_unsigned_int() && value_bits <= b.bit_width()
    }
}

/// `convert(x: T) -> T` is `x`.
pub(super) fn convert_same_type(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if !matches!(cx.op(id), Op::Convert) {
        return None;
    }
    let x = cx.arg(id, 0);
    cx.shape(x)?.same_shape(cx.shape(id)?).then_some(Action::Use(x))
}

/// `convert(convert(x: A) -> B) -> C` is `convert(x) -> C` when `A -> B` is exact
/// (`f16 -> f32 -> f64` is `f16 -> f64`; `s8 -> s32 -> f32` is `s8 -> f32`).
pub(super) fn convert_chain_exact(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if !matches!(cx.op(id), Op::Convert) {
        return None;
    }
    let mid = cx.arg(id, 0);
    if !matches!(cx.op(mid), Op::Convert) {
        return None;
    }
    let x = cx.arg(mid, 0);
    let (a, b) = (cx.shape(x)?.elem, cx.shape(mid)?.elem);
    exact_widening(a, b).then_some(Action::Rewrite { op: Op::Convert, operands: vec![x] })
}
