//! Bit-level CHLO ops: `next_after` (stepping a float's bit pattern) and `mulhi` (the
//! high half of a double-width integer product).

use super::builder::ChloBuilder;
use crate::ir::{ElementType, InstId};

/// The signed integer type as wide as a float type.
fn int_of_width(elem: ElementType) -> Result<ElementType, String> {
    match elem {
        ElementType::F16 | ElementType::BF16 => Ok(ElementType::S16),
        ElementType::F32 => Ok(ElementType::S32),
        ElementType::F64 => Ok(ElementType::S64),
        e => Err(format!("needs a floating-point type, got {e}")),
    }
}

/// `next_after(x, y)`: the representable value after x in the direction of y. On the
/// bit patterns: ±1 on the magnitude (toward y), the smallest subnormal signed like y
/// when x is ±0, y when x == y, NaN when either is NaN.
pub(crate) fn next_after(b: &mut ChloBuilder, x: InstId, y: InstId) -> Result<InstId, String> {
    let float = b.elem(x);
    let int = int_of_width(float)?;
    let bits = float.bit_width();
    let xi = b.bitcast_convert(x, int);
    let yi = b.bitcast_convert(y, int);

    let x_nan = b.ne(x, x);
    let y_nan = b.ne(y, y);
    let nan_in = b.or(x_nan, y_nan);
    let nan = b.constant_like(x, f64::NAN);
    let nan_i = b.bitcast_convert(nan, int);

    let sign_bit = 1i64 << (bits - 1);
    let sign_mask = b.int_like(xi, sign_bit);
    let magnitude_mask = b.int_like(xi, !sign_bit);
    let x_abs = b.and(xi, magnitude_mask);
    let y_abs = b.and(yi, magnitude_mask);
    let equal = b.eq(x, y);
    let zero = b.int_like(xi, 0);
    let x_zero = b.eq(x_abs, zero);
    let y_zero = b.eq(y_abs, zero);
    let x_sign = b.and(xi, sign_mask);
    let y_sign = b.and(yi, sign_mask);
    let one = b.int_like(xi, 1);
    let from_zero = b.or(y_sign, one);

    // Toward zero when the signs differ or |x| > |y|, away from zero otherwise.
    let disagree = b.ne(x_sign, y_sign);
    let x_bigger = b.gt(x_abs, y_abs);
    let shrink = b.or(x_bigger, disagree);
    let minus_one = b.int_like(xi, -1);
    let step = b.select(shrink, minus_one, one);
    let mut r = b.add(xi, step);
    let zero_case = b.select(y_zero, yi, from_zero);
    r = b.select(x_zero, zero_case, r);
    r = b.select(equal, yi, r);
    r = b.select(nan_in, nan_i, r);
    Ok(b.bitcast_convert(r, float))
}

/// `mulhi(x, y)`: the upper half of the 2N-bit product. Below 64 bits: widen, multiply,
/// shift right by N (arithmetic for signed), narrow. u64: schoolbook on 32-bit halves.
/// s64: the u64 result corrected for the two's complement operands.
pub(crate) fn mulhi(b: &mut ChloBuilder, x: InstId, y: InstId) -> Result<InstId, String> {
    use ElementType::*;
    let elem = b.elem(x);
    let wide = match elem {
        S8 => S16,
        S16 => S32,
        S32 => S64,
        U8 => U16,
        U16 => U32,
        U32 => U64,
        U64 => return Ok(mulhi_u64(b, x, y)),
        S64 => {
            let xu = b.bitcast_convert(x, U64);
            let yu = b.bitcast_convert(y, U64);
            let hi = mulhi_u64(b, xu, yu);
            let zero = b.int_like(x, 0);
            let zero_u = b.int_like(xu, 0);
            let x_neg = b.lt(x, zero);
            let y_neg = b.lt(y, zero);
            let fix_x = b.select(x_neg, yu, zero_u);
            let fix_y = b.select(y_neg, xu, zero_u);
            let hi = b.sub(hi, fix_x);
            let hi = b.sub(hi, fix_y);
            return Ok(b.bitcast_convert(hi, S64));
        }
        e => return Err(format!("needs an integer type, got {e}")),
    };
    let xw = b.convert(x, wide);
    let yw = b.convert(y, wide);
    let prod = b.mul(xw, yw);
    let n = b.int_like(prod, elem.bit_width() as i64);
    let hi = if elem.is_signed_int() { b.shift_right_arithmetic(prod, n) } else { b.shift_right_logical(prod, n) };
    Ok(b.convert(hi, elem))
}

/// High 64 bits of a u64 × u64 product from 32-bit halves:
/// `p3 + (mid1 >> 32) + (mid2 >> 32)` with `mid1 = a_lo*b_hi + (a_lo*b_lo >> 32)` and
/// `mid2 = a_hi*b_lo + (mid1 & 0xFFFFFFFF)` (no partial sum can overflow).
fn mulhi_u64(b: &mut ChloBuilder, x: InstId, y: InstId) -> InstId {
    let c32 = b.int_like(x, 32);
    let low_mask = b.int_like(x, 0xFFFF_FFFF);
    let a_hi = b.shift_right_logical(x, c32);
    let b_hi = b.shift_right_logical(y, c32);
    let a_lo = b.and(x, low_mask);
    let b_lo = b.and(y, low_mask);
    let p0 = b.mul(a_lo, b_lo);
    let p1 = b.mul(a_lo, b_hi);
    let p2 = b.mul(a_hi, b_lo);
    let p3 = b.mul(a_hi, b_hi);
    let carry_p0 = b.shift_right_logical(p0, c32);
    let mid1 = b.add(p1, carry_p0);
    let mid1_lo = b.and(mid1, low_mask);
    let mid2 = b.add(p2, mid1_lo);
    let carry1 = b.shift_right_logical(mid1, c32);
    let carry2 = b.shift_right_logical(mid2, c32);
    let s = b.add(p3, carry1);
    b.add(s, carry2)
}
