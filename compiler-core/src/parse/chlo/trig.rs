//! Trigonometric and hyperbolic CHLO ops on real inputs: tan, sinh, cosh, and the
//! inverse functions.
//!
//! The formulas are the ones the StableHLO CHLO legalization uses (so the results
//! match XLA's to a few ULP): the inverse functions are rewritten to avoid cancellation
//! near ±1 and overflow for huge arguments, and sinh/cosh are computed in at least f32.

use super::builder::ChloBuilder;
use crate::ir::{InstId, UnaryOp};

/// `tan(x)`: the IR has it as a unary op.
pub(crate) fn tan(b: &mut ChloBuilder, x: InstId) -> Result<InstId, String> {
    Ok(b.unary(UnaryOp::Tan, x))
}

/// `e^(x + log(1/2)) ∓ e^(-x + log(1/2))`: half of e^x without overflowing where e^x
/// does but e^x / 2 does not. Returns (e^(x+log½), e^(log½-x)).
fn half_exps(b: &mut ChloBuilder, x: InstId) -> (InstId, InstId) {
    let half = b.constant_like(x, 0.5);
    let log_half = b.log(half);
    let xp = b.add(x, log_half);
    let exp_add = b.exp(xp);
    let xm = b.sub(log_half, x);
    let exp_sub = b.exp(xm);
    (exp_add, exp_sub)
}

/// `cosh(x) = e^(x + log ½) + e^(-x + log ½)`, in at least f32.
pub(crate) fn cosh(b: &mut ChloBuilder, x: InstId) -> Result<InstId, String> {
    b.with_upcast(&[x], |b, a| {
        let (p, m) = half_exps(b, a[0]);
        Ok(b.add(p, m))
    })
}

/// `sinh(x)`, in at least f32: for |x| < 1, `(expm1(x) + expm1(x) / (expm1(x) + 1)) / 2`
/// keeps the first-order term that `e^x - e^-x` cancels away; otherwise the
/// overflow-safe difference of half exponentials.
pub(crate) fn sinh(b: &mut ChloBuilder, x: InstId) -> Result<InstId, String> {
    b.with_upcast(&[x], |b, a| {
        let x = a[0];
        let (p, m) = half_exps(b, x);
        let large = b.sub(p, m);
        let em1 = b.expm1(x);
        let one = b.constant_like(x, 1.0);
        let half = b.constant_like(x, 0.5);
        let em1_p1 = b.add(em1, one);
        let ratio = b.div(em1, em1_p1);
        let sum = b.add(em1, ratio);
        let small = b.mul(half, sum);
        let ax = b.abs(x);
        let small_x = b.lt(ax, one);
        Ok(b.select(small_x, small, large))
    })
}

/// `asin(x) = 2 * atan2(x, 1 + sqrt((1 - x) * (1 + x)))`.
pub(crate) fn asin(b: &mut ChloBuilder, x: InstId) -> Result<InstId, String> {
    let one = b.constant_like(x, 1.0);
    let omx = b.sub(one, x);
    let opx = b.add(one, x);
    let prod = b.mul(omx, opx);
    let root = b.sqrt(prod);
    let den = b.add(one, root);
    let ta = b.atan2(x, den);
    Ok(b.add(ta, ta))
}

/// `acos(x) = atan2(sqrt((1 - x) * (1 + x)), x)`.
pub(crate) fn acos(b: &mut ChloBuilder, x: InstId) -> Result<InstId, String> {
    let one = b.constant_like(x, 1.0);
    let omx = b.sub(one, x);
    let opx = b.add(one, x);
    let prod = b.mul(omx, opx);
    let root = b.sqrt(prod);
    Ok(b.atan2(root, x))
}

/// `atan(x) = atan2(x, 1)`.
pub(crate) fn atan(b: &mut ChloBuilder, x: InstId) -> Result<InstId, String> {
    let one = b.constant_like(x, 1.0);
    Ok(b.atan2(x, one))
}

/// `asinh(x) = sign(x) * log1p(|x| + x² / (1 + sqrt(1 + x²)))`, and
/// `sign(x) * (log 2 + log |x|)` once x² would overflow (|x| >= sqrt(max)).
pub(crate) fn asinh(b: &mut ChloBuilder, x: InstId) -> Result<InstId, String> {
    let sign = b.sign(x);
    let ax = b.abs(x);
    let max = b.max_finite_like(x);
    let sqrt_max = b.sqrt(max);
    let huge = b.ge(ax, sqrt_max);
    let two = b.constant_like(x, 2.0);
    let log2 = b.log(two);
    let log_ax = b.log(ax);
    let large = b.add(log2, log_ax);
    let ax2 = b.mul(ax, ax);
    let one = b.constant_like(x, 1.0);
    let opx2 = b.add(one, ax2);
    let root = b.sqrt(opx2);
    let den = b.add(one, root);
    let q = b.div(ax2, den);
    let arg = b.add(ax, q);
    let small = b.log1p(arg);
    let mag = b.select(huge, large, small);
    Ok(b.mul(sign, mag))
}

/// `acosh(x) = log1p(sqrt(x - 1) * (sqrt(x + 1) + sqrt(x - 1)))` (NaN below 1 through
/// the sqrt), and `log 2 + log x` for x >= max / 2.
pub(crate) fn acosh(b: &mut ChloBuilder, x: InstId) -> Result<InstId, String> {
    let max = b.max_finite_like(x);
    let two = b.constant_like(x, 2.0);
    let half_max = b.div(max, two);
    let huge = b.ge(x, half_max);
    let log2 = b.log(two);
    let log_x = b.log(x);
    let large = b.add(log2, log_x);
    let one = b.constant_like(x, 1.0);
    let xm1 = b.sub(x, one);
    let sqrt_xm1 = b.sqrt(xm1);
    let xp1 = b.add(x, one);
    let sqrt_xp1 = b.sqrt(xp1);
    let sum = b.add(sqrt_xp1, sqrt_xm1);
    let prod = b.mul(sqrt_xm1, sum);
    let small = b.log1p(prod);
    Ok(b.select(huge, large, small))
}

/// `atanh(x) = (log1p(x) - log1p(-x)) / 2` for |x| <= 1, NaN beyond.
pub(crate) fn atanh(b: &mut ChloBuilder, x: InstId) -> Result<InstId, String> {
    let ax = b.abs(x);
    let one = b.constant_like(x, 1.0);
    let outside = b.gt(ax, one);
    let nan = b.constant_like(x, f64::NAN);
    let lp = b.log1p(x);
    let nx = b.neg(x);
    let lm = b.log1p(nx);
    let diff = b.sub(lp, lm);
    let half = b.constant_like(x, 0.5);
    let r = b.mul(diff, half);
    Ok(b.select(outside, nan, r))
}
