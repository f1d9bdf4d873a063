//! exp (a fast and a clamped form), expm1, log, log1p, tanh, logistic and erf in f32,
//! written once as generic functions over [`Lanes`]: the one description of these
//! approximations, which every backend instantiates (the CPU target's JIT emitter, and
//! [`crate::block`]'s native loops).
//!
//! Every polynomial was fitted for hloscope (a weighted least-squares fit iterated to
//! near-minimax relative error, Lawson's method, coefficients rounded to f32); the
//! reductions are the textbook ones. No branches: every lane computes the main path and
//! special cases are chosen with selects, so the code vectorizes as it is. exp comes in
//! two forms so that a backend can branch (per vector, per chunk) to the clamped one
//! only when some lane needs it. The errors these reach are measured, and tabled, with
//! the CPU target (`compiler-core/src/targets/cpu/math.rs`, `tests/cpu_math.rs`).
//!
//! - exp, expm1: `x = n ln2 + r`, `|r| <= ln2/2` (n from the 1.5·2^23 rounding trick, ln2
//!   in two parts), `expm1(r) = r + r²P(r)` (degree 5 in P; exp, which needs it only
//!   relative to `exp(r)`, degree 4), scaled by `2^n` built in the
//!   exponent bits; [`exp_fast`] scales by `2^n` in one step (valid where every lane has
//!   `|x| <=` [`exp_fast_limit`]: 87, or 69 without FMA), [`exp_clamped`] in two factors
//!   (so that results in the subnormal range round once); expm1 computes
//!   `2(s·p + (s - 1/2))` with `s = 2^(n-1)`, which is `p` itself when `n = 0`.
//! - log, log1p: `x = 2^e m`, `m` in `[√½, √2)`, `f = m - 1`, `s = f/(2+f)`,
//!   `log(1+f) = f + s(s²Q(s²) - f)` (= `2 atanh s`); log1p adds the rounding correction
//!   `(x - (u-1))/u` of `u = 1+x`.
//! - tanh: `expm1(2|x|) / (expm1(2|x|) + 2)` with expm1's main path only (its
//!   polynomial one degree lower, [`TANH_P`], which keeps tanh within 2 ulp; `2|x|` is
//!   clamped to `[0, 19]`), sign restored. logistic:
//!   `e = exp(-|x|)`, `1/(1+e)` or `e/(1+e)` (so that it stays accurate down to the
//!   subnormals).
//! - erf: `x P(x²)` for `|x| < 1`; beyond, `1 - exp(-x²) R(1/x)` with `x²` split in two
//!   (an fma) so that its rounding does not reach `exp`.
//!
//! The reduction helpers ([`reduce_ln2`], [`expm1_poly`], [`split_exponent`], ...) and
//! the constants are public too: the CPU target's pow reuses them.

use crate::lanes::{Cmp, Lanes};

// Constants (all exact f32 values).

/// 1.5·2^23: adding it to a float of magnitude below 2^22 rounds it to an integer,
/// which then sits in the low bits of the sum's representation.
pub const SHIFT: f32 = 12582912.0;
/// The bits of [`SHIFT`].
pub const SHIFT_BITS: i32 = 0x4B40_0000;
pub const LOG2E: f32 = std::f32::consts::LOG2_E;
/// ln 2 in two parts; the high one has 16 significant bits (0x3F317200), so `n·LN2_HI`
/// is exact for the `n` of any f32 exponent.
pub const LN2_HI: f32 = 0.693_145_75;
pub const LN2_LO: f32 = 1.428_606_8e-6;
/// The bits of √½ (rounded), where log's mantissa range starts.
pub const SQRT_HALF_BITS: i32 = 0x3F35_04F3;

/// `(expm1(r) - r) / r²` on `|r| <= ln2/2`, lowest degree first.
pub const EXPM1_P: [f32; 6] = [0.5, 0.166_666_66, 0.041_666_347, 0.008_333_392, 0.001_394_165_2, 0.000_198_459_59];
/// `(exp(r) - 1 - r) / r²` on `|r| <= ln2/2`, fitted for the relative error of `exp(r)`
/// (3.9e-9 with these f32 coefficients, a sixteenth of an ulp).
pub const EXP_P: [f32; 5] = [0.499_999_94, 0.166_665_21, 0.041_668_39, 0.008_368_698, 0.001_381_456_9];
/// `(expm1(r) - r) / r²` on `|r| <= ln2/2` for tanh, one degree less than [`EXPM1_P`]
/// (fitted for expm1's relative error: 1.7e-8 with these f32 coefficients).
pub const TANH_P: [f32; 5] = [0.499_999_97, 0.166_665_43, 0.041_667_2, 0.008_366_503, 0.001_388_249_5];
/// `(log((1+s)/(1-s)) - 2s) / s³` in `s²`, `|s| <= 0.1716`.
pub const LOG_Q: [f32; 4] = [0.666_666_6, 0.400_003_55, 0.285_359, 0.236_104_16];
/// `erf(x) / x` in `x²`, `|x| <= 1` (the fitted constant term is 2/√π in f32).
#[allow(clippy::approx_constant)]
pub const ERF_P: [f32; 6] = [1.128_379_1, -0.376_122_95, 0.112_799_06, -0.026_702_81, 0.004_906_901, -0.000_558_514_5];
/// `erfc(x) exp(x²)` in `1/x`, `1 <= x <= 4`.
pub const ERFC_R: [f32; 8] = [
    0.000_169_640_58,
    0.559_420_9,
    0.044_598_65,
    -0.493_091_97,
    0.561_462_7,
    -0.345_561_65,
    0.118_269_97,
    -0.017_684_668,
];

/// `t = x/ln2 + SHIFT` (whose low bits hold `n = round(x / ln2)`) and `r = x - n ln2`.
#[inline(always)]
fn reduce_ln2_core<L: Lanes>(l: &mut L, x: L::F) -> (L::F, L::F) {
    let (t, n) = l.round_scaled(x, LOG2E);
    // `n·LN2_HI` is exact and `x` is close to it, so `x - n·LN2_HI` is exact: one
    // multiply-add gives the bits of a multiply and an add, fused or not.
    let r = l.madc(n, -LN2_HI, x);
    let r = l.madc(n, -LN2_LO, r);
    (t, r)
}

/// `n = round(x / ln2)` as the integer in `t`'s bits, and `r = x - n ln2`.
#[inline(always)]
pub fn reduce_ln2<L: Lanes>(l: &mut L, x: L::F) -> (L::F, L::I) {
    let (t, r) = reduce_ln2_core(l, x);
    let tb = l.bits(t);
    let shift_bits = l.ci(SHIFT_BITS);
    let ni = l.isub(tb, shift_bits);
    (r, ni)
}

/// [`reduce_ln2`], returning `2^(n + bias - 127)` (the exponent must stay in 1..=254)
/// instead of `n`: `t`'s bits are `SHIFT_BITS + n`, and shifting them left by 23 leaves
/// `n << 23` alone (`SHIFT_BITS << 23` wraps to 0): two integer ops.
#[inline(always)]
pub fn reduce_ln2_pow2<L: Lanes>(l: &mut L, x: L::F, bias: i32) -> (L::F, L::F) {
    let (t, r) = reduce_ln2_core(l, x);
    let tb = l.bits(t);
    let e = l.shl(tb, 23);
    let e = l.iaddc(e, bias << 23);
    (r, l.float(e))
}

/// `2^(ni + bias - 127)` from an integer lane (the exponent must stay in 1..=254).
#[inline(always)]
pub fn pow2i<L: Lanes>(l: &mut L, ni: L::I, bias: i32) -> L::F {
    let e = l.iaddc(ni, bias);
    let e = l.shl(e, 23);
    l.float(e)
}

/// `exp(r) - 1` on `|r| <= ln2/2`, accurate relative to `exp(r)` (what exp needs): one
/// degree less than [`expm1_poly`], whose result must be accurate relative to itself.
#[inline(always)]
pub fn exp_poly<L: Lanes>(l: &mut L, r: L::F) -> L::F {
    r_plus_r2_poly(l, r, &EXP_P)
}

/// `expm1(r)` on `|r| <= ln2/2`.
#[inline(always)]
pub fn expm1_poly<L: Lanes>(l: &mut L, r: L::F) -> L::F {
    r_plus_r2_poly(l, r, &EXPM1_P)
}

/// `r + r²·P(r)` with `P`'s coefficients lowest degree first.
#[inline(always)]
fn r_plus_r2_poly<L: Lanes>(l: &mut L, r: L::F, p: &[f32]) -> L::F {
    let q = l.poly(r, p);
    let r2 = l.mul(r, r);
    l.mad(r2, q, r)
}

/// Where [`exp_fast`] gives the bits of [`exp_clamped`]: `|x| <=` this (and NaN, where
/// both give NaN). There `2^n` and the result are normal, so one scaling by `2^n` built
/// in the exponent bits rounds as the two-factor scaling does. Without FMA `p·2^n` is
/// rounded on its own and may be subnormal; below `|x| = 69` (`n >= -100`) it is then
/// too small to change the rounding of `2^n + p·2^n`, so that is the fast range there.
#[inline(always)]
pub fn exp_fast_limit(fused: bool) -> f32 {
    if fused {
        87.0
    } else {
        69.0
    }
}

/// exp on `|x| <=` [`exp_fast_limit`]: `2^n` in one step.
#[inline(always)]
pub fn exp_fast<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let (r, s) = reduce_ln2_pow2(l, x, 127);
    let p = exp_poly(l, r);
    l.mad(p, s, s)
}

/// exp over all f32: clamped (results beyond are inf or 0), `2^n` in two normal
/// factors so that a subnormal result rounds once.
#[inline(always)]
pub fn exp_clamped<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    // Below -104 the result rounds to +0: those lanes compute exp(0) and are replaced,
    // because an underflowing multiply costs x86 a microcode assist (~100 cycles) per
    // vector, and masked attention scores (-1e9) are full of them. NaN is not `gone`.
    let gone = l.cmpc(Cmp::Lt, x, -104.0);
    let x = l.selc(gone, 0.0, x);
    // Beyond this the result is inf anyway; min keeps NaN.
    let x = l.min(x, 89.0);
    let (r, ni) = reduce_ln2(l, x);
    let p = exp_poly(l, r);
    // 2^n = 2^n1 * 2^n2, both normal, so a subnormal result rounds once.
    let n1 = l.sshr(ni, 1);
    let n2 = l.isub(ni, n1);
    let s1 = pow2i(l, n1, 127);
    let s2 = pow2i(l, n2, 127);
    let y = l.mad(p, s1, s1);
    let y = l.mul(y, s2);
    l.selc(gone, 0.0, y)
}

/// expm1 over all f32 (`x` itself below `2^-25`; clamped to `[-18, 89]`, where the
/// result is -1 or inf anyway).
#[inline(always)]
pub fn expm1<L: Lanes>(l: &mut L, x0: L::F) -> L::F {
    let x = l.max(x0, -18.0);
    let x = l.min(x, 89.0);
    let (r, ni) = reduce_ln2(l, x);
    let p = expm1_poly(l, r);
    // 2 (s p + (s - 1/2)) with s = 2^(n-1): one rounding, and exactly p when n = 0.
    let s = pow2i(l, ni, 126);
    let sh = l.addc(s, -0.5);
    let y = l.mad(s, p, sh);
    let y = l.mulc(y, 2.0);
    // Tiny x: x itself (keeps -0 and subnormals exact).
    let a = l.abs(x0);
    let tiny = l.cmpc(Cmp::Lt, a, 2.980_232_2e-8); // 2^-25
    let y = l.sel(tiny, x0, y);
    l.copysign(y, x0)
}

/// `x = 2^e m` with `m` in `[√½, √2)`: returns `(e as float, m)` for positive finite
/// `x` (subnormals scaled first).
#[inline(always)]
pub fn split_exponent<L: Lanes>(l: &mut L, x: L::F) -> (L::F, L::F) {
    let tiny = l.cmpc(Cmp::Lt, x, 1.175_494_4e-38);
    let xs = l.mulc(x, 8_388_608.0); // 2^23
    let xs = l.sel(tiny, xs, x);
    let bias = l.c(-23.0);
    let zero = l.c(0.0);
    let bias = l.sel(tiny, bias, zero);
    let bits = l.bits(xs);
    let sh = l.ci(SQRT_HALF_BITS);
    let d = l.isub(bits, sh);
    let e = l.sshr(d, 23);
    let mask = l.ci(0x7F_FFFF);
    let mb = l.iand(d, mask);
    let mb = l.iadd(mb, sh);
    let m = l.float(mb);
    let ef = l.to_float(e);
    let ef = l.add(ef, bias);
    (ef, m)
}

/// `log(1 + f)` for `f` in `[√½ - 1, √2 - 1]`; also returns `s = f/(2+f)`.
#[inline(always)]
pub fn log1p_kernel<L: Lanes>(l: &mut L, f: L::F) -> (L::F, L::F) {
    let d = l.addc(f, 2.0);
    let s = l.div(f, d);
    let z = l.mul(s, s);
    let q = l.poly(z, &LOG_Q);
    let zq = l.mul(z, q);
    let t = l.sub(zq, f);
    (l.mad(s, t, f), s)
}

/// log over all f32: subnormals included, `log(0) = -inf`, negative and NaN give NaN.
#[inline(always)]
pub fn log<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let (ef, m) = split_exponent(l, x);
    let f = l.addc(m, -1.0);
    let (y, _) = log1p_kernel(l, f);
    let lo = l.madc(ef, LN2_LO, y);
    let y = l.madc(ef, LN2_HI, lo);
    // log(+inf) = inf, log(±0) = -inf, log(<0) = log(NaN) = NaN.
    let is_inf = l.cmpc(Cmp::Eq, x, f32::INFINITY);
    let y = l.selc(is_inf, f32::INFINITY, y);
    let is_zero = l.cmpc(Cmp::Eq, x, 0.0);
    let y = l.selc(is_zero, f32::NEG_INFINITY, y);
    let ok = l.cmpc(Cmp::Ge, x, 0.0);
    let nan = l.c(f32::NAN);
    l.sel(ok, y, nan)
}

/// log1p over all f32 (`x` itself below `2^-24`).
#[inline(always)]
pub fn log1p<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let u = l.addc(x, 1.0);
    let lu = log(l, u);
    // u = 1 + x rounded; log1p(x) = log(u) + (x - (u - 1)) / u to first order.
    let um1 = l.addc(u, -1.0);
    let err = l.sub(x, um1);
    let c = l.div(err, u);
    let pos = l.cmpc(Cmp::Gt, u, 0.0);
    let fin = l.cmpc(Cmp::Lt, u, 16_777_216.0);
    let use_c = l.and(pos, fin);
    let zero = l.c(0.0);
    let c = l.sel(use_c, c, zero);
    let y = l.add(lu, c);
    let a = l.abs(x);
    let tiny = l.cmpc(Cmp::Lt, a, 5.960_464_5e-8); // 2^-24
    l.sel(tiny, x, y)
}

/// log1p for backends whose compiler may reassociate float arithmetic (WGSL drivers
/// fold [`log1p`]'s rounding correction `x - ((1 + x) - 1)` to 0): on the log kernel's
/// own range `[√½ - 1, √2 - 1]` the kernel of `x` itself ([`log1p_kernel`], no rounded
/// `1 + x` at all); beyond it `log(1 + x)`, where the rounding of `1 + x` moves the
/// result by under 1.5 ulp (`|log(1 + x)| >= 0.34` there).
#[inline(always)]
pub fn log1p_reassociable<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let (k, _) = log1p_kernel(l, x);
    let u = l.addc(x, 1.0);
    let lu = log(l, u);
    let lo = l.cmpc(Cmp::Gt, x, -0.292_893_22); // √½ - 1
    let hi = l.cmpc(Cmp::Lt, x, 0.414_213_57); // √2 - 1
    let inside = l.and(lo, hi);
    let y = l.sel(inside, k, lu);
    let a = l.abs(x);
    let tiny = l.cmpc(Cmp::Lt, a, 5.960_464_5e-8); // 2^-24
    l.sel(tiny, x, y)
}

/// `expm1(2|x|) / (expm1(2|x|) + 2)`, sign restored; `2|x|` is in `[0, 19]`, so
/// expm1's main path runs without its clamps, sign and tiny case. Tiny `x` needs no
/// case of its own: `n = 0` there, the quotient is within 2 ulp of `x` (the bound
/// everywhere), and `-0` and subnormals come out as themselves (measured: 4% faster
/// elementwise chains than with a select of `x` below `2^-12`).
#[inline(always)]
pub fn tanh<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let a = l.abs(x);
    let a = l.min(a, 9.5);
    let a2 = l.add(a, a);
    // 2 (s p + (s - 1/2)) with s = 2^(n-1), as expm1.
    let (r, s) = reduce_ln2_pow2(l, a2, 126);
    let p = r_plus_r2_poly(l, r, &TANH_P);
    // e/(e + 2) with e = 2h is h/(h + 1), bit for bit (scaling by 2 is exact).
    let sh = l.addc(s, -0.5);
    let h = l.mad(s, p, sh);
    let d = l.addc(h, 1.0);
    let t = l.div(h, d);
    l.copysign(t, x)
}

/// `1/(1+e)` for `x >= 0`, `e/(1+e)` for `x < 0`, with `e = exp(-|x|)`.
#[inline(always)]
pub fn logistic_from<L: Lanes>(l: &mut L, x: L::F, e: L::F) -> L::F {
    let one = l.c(1.0);
    let d = l.add(one, e);
    let neg = l.cmpc(Cmp::Lt, x, 0.0);
    let n = l.sel(neg, e, one);
    l.div(n, d)
}

/// logistic, with `exp` one of [`exp_fast`] / [`exp_clamped`] or a composition of the
/// two (its argument is `-|x|`, in the fast range where `|x| <= 87`).
#[inline(always)]
pub fn logistic<L: Lanes>(l: &mut L, x: L::F, exp: impl FnOnce(&mut L, L::F) -> L::F) -> L::F {
    let a = l.abs(x);
    let na = l.neg(a);
    let e = exp(l, na);
    logistic_from(l, x, e)
}

/// erf, with `exp` as for [`logistic`] (its argument is in `[-16, 0]` or NaN, always in
/// the fast range).
#[inline(always)]
pub fn erf<L: Lanes>(l: &mut L, x: L::F, exp: impl FnOnce(&mut L, L::F) -> L::F) -> L::F {
    let a = l.abs(x);
    let a = l.min(a, 4.0);
    let z = l.mul(a, a);
    let p = l.poly(z, &ERF_P);
    let small = l.mul(a, p);
    // 1 - exp(-(zh + zl)) R(1/a), exp(-zl) ~ 1 - zl; zl is the product's rounding
    // error, known only with an fma.
    let zl = if l.fused() {
        let nz = l.neg(z);
        l.mad(a, a, nz)
    } else {
        l.c(0.0)
    };
    let one = l.c(1.0);
    let t = l.div(one, a);
    let r = l.poly(t, &ERFC_R);
    let nz = l.neg(z);
    let e = exp(l, nz);
    let nzl = l.neg(zl);
    let r = l.mad(r, nzl, r);
    let erfc = l.mul(e, r);
    let large = l.sub(one, erfc);
    let is_small = l.cmpc(Cmp::Lt, a, 1.0);
    let y = l.sel(is_small, small, large);
    l.copysign(y, x)
}
