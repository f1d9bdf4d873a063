//! sin, cos, tan, atan2, pow and cbrt in f32, generic over [`Lanes`] like
//! [`crate::algorithms`]: the CPU target's JIT and the WebAssembly target instantiate
//! them (their errors are measured and tabled with the CPU target,
//! `compiler-core/src/targets/cpu/math.rs`).
//!
//! - sin, cos, tan: `x = k π/2 + r`, `π/2` in three parts with fma (four parts of 12
//!   bits without, so that each product is exact), odd/even polynomials on
//!   `|r| <= π/4`, chosen and signed by `k mod 4`.
//! - atan2: `t = min/max` of `|x|, |y|`, `atan t = π/4 + atan((t-1)/(t+1))` when
//!   `t > tan(π/8)`, an odd polynomial, then octant fix-ups and the signs of IEEE atan2
//!   (zeros and infinities included).
//! - pow: `exp2(y log2 x)` with `log2 x` and the product carried in two floats (exact
//!   products by fma, or Dekker's splitting without), C99's special cases.
//! - cbrt: an exponent-bits guess and three Newton steps.
//!
//! Masks are only combined with [`Lanes::and`]; where an "or" or a "not" would do,
//! two selects do instead, so that every backend's masks suffice.

use crate::algorithms::{expm1_poly, pow2i, split_exponent, LN2_HI, LN2_LO, LOG2E, LOG_Q, SHIFT_BITS};
use crate::lanes::{Cmp, Lanes};

// Constants (all exact f32 values).
const LOG2E_LO: f32 = 1.925_963e-8;
const TWO_OVER_PI: f32 = std::f32::consts::FRAC_2_PI;
const PIO2_1: f32 = 1.570_796_4;
const PIO2_2: f32 = -4.371_139e-8;
const PIO2_3: f32 = -1.715_124_5e-15;
/// π/2 in parts of 12 significant bits (the last one full): without FMA, `k * part` is
/// exact for `|k| < 2^12`.
const PIO2_12BIT: [f32; 4] = [1.570_800_8, -4.453_584_6e-6, -8.706_138e-10, 6.223_372e-14];
const PI_HI: f32 = std::f32::consts::PI;
const PI_LO: f32 = -8.742_278e-8;
const PIO4_HI: f32 = std::f32::consts::FRAC_PI_4;
const PIO4_LO: f32 = -2.185_569_4e-8;
const TAN_PI_8: f32 = 0.414_213_57;

/// `(sin r - r) / r³` in `r²`, `|r| <= π/4`.
const SIN_P: [f32; 3] = [-0.166_666_54, 0.008_332_113, -0.000_195_087_41];
/// `(cos r - 1 + r²/2) / r⁴` in `r²`, `|r| <= π/4`.
const COS_P: [f32; 3] = [0.041_666_646, -0.001_388_725_1, 2.442_568e-5];
/// `(atan u - u) / u³` in `u²`, `|u| <= tan(π/8)`.
const ATAN_P: [f32; 5] = [-0.333_333_13, 0.199_983_58, -0.142_412_69, 0.105_763_01, -0.060_321_08];

/// `a·b - p` exactly, for `p = fl(a·b)`: a fused multiply-add, or Dekker's product of
/// Veltkamp halves without one (valid while `|a|, |b| < 2^115`).
#[inline(always)]
fn prod_err<L: Lanes>(l: &mut L, a: L::F, b: L::F, p: L::F) -> L::F {
    if l.fused() {
        let np = l.neg(p);
        return l.mad(a, b, np);
    }
    let (ah, al) = split(l, a);
    let (bh, bl) = split(l, b);
    let hh = l.mul(ah, bh);
    let e = l.sub(hh, p);
    let hl = l.mul(ah, bl);
    let e = l.add(e, hl);
    let lh = l.mul(al, bh);
    let e = l.add(e, lh);
    let ll = l.mul(al, bl);
    l.add(e, ll)
}

/// Veltkamp's split of an f32 into two halves of 12 significant bits.
#[inline(always)]
fn split<L: Lanes>(l: &mut L, a: L::F) -> (L::F, L::F) {
    let t = l.mulc(a, 4097.0);
    let d = l.sub(t, a);
    let h = l.sub(t, d);
    let lo = l.sub(a, h);
    (h, lo)
}

/// `x = k π/2 + r`: returns `r` and `k` (an integer lane).
#[inline(always)]
fn reduce_pio2<L: Lanes>(l: &mut L, x: L::F) -> (L::F, L::I) {
    let (t, k) = l.round_scaled(x, TWO_OVER_PI);
    let nk = l.neg(k);
    let parts: &[f32] = if l.fused() { &[PIO2_1, PIO2_2, PIO2_3] } else { &PIO2_12BIT };
    let mut r = x;
    for &p in parts {
        r = l.madc(nk, p, r);
    }
    let tb = l.bits(t);
    let shift_bits = l.ci(SHIFT_BITS);
    (r, l.isub(tb, shift_bits))
}

/// sin and cos of a reduced `|r| <= π/4`.
#[inline(always)]
fn sin_cos_kernel<L: Lanes>(l: &mut L, r: L::F) -> (L::F, L::F) {
    let z = l.mul(r, r);
    let ps = l.poly(z, &SIN_P);
    let rz = l.mul(r, z);
    let s = l.mad(rz, ps, r);
    let pc = l.poly(z, &COS_P);
    let z2 = l.mul(z, z);
    let hz = l.mulc(z, 0.5);
    // cos = 1 - (z/2 - z² P).
    let w = l.neg(z2);
    let w = l.mad(w, pc, hz);
    let one = l.c(1.0);
    (s, l.sub(one, w))
}

/// `x` itself where `|x| < 2^-12` (sin and tan: the reduction's negative parts would
/// turn -0 into +0; there `x` is the correctly rounded result anyway).
#[inline(always)]
fn tiny_identity<L: Lanes>(l: &mut L, x: L::F, v: L::F) -> L::F {
    let a = l.abs(x);
    let tiny = l.cmpc(Cmp::Lt, a, 2.441_406_3e-4);
    l.sel(tiny, x, v)
}

/// sin (`phase` 0) or cos (`phase` 1): quadrant `k + phase` picks and signs.
#[inline(always)]
fn sin_cos<L: Lanes>(l: &mut L, x: L::F, phase: i32) -> L::F {
    let (r, k) = reduce_pio2(l, x);
    let (s, c) = sin_cos_kernel(l, r);
    let q = l.iaddc(k, phase);
    let one = l.ci(1);
    let odd = l.iand(q, one);
    let odd = l.nonzero(odd);
    let v = l.sel(odd, c, s);
    // Quadrants 2 and 3 negate.
    let two = l.ci(2);
    let upper = l.iand(q, two);
    let upper = l.nonzero(upper);
    let nv = l.neg(v);
    let v = l.sel(upper, nv, v);
    // Beyond the reduction's range (|x| > 2^22) the value is wrong: keep it in [-1, 1].
    let v = l.max(v, -1.0);
    let v = l.min(v, 1.0);
    if phase == 0 {
        tiny_identity(l, x, v)
    } else {
        v
    }
}

/// sin over all f32 (see the CPU target's table for the domain of its bound).
#[inline(always)]
pub fn sin<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    sin_cos(l, x, 0)
}

/// cos over all f32.
#[inline(always)]
pub fn cos<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    sin_cos(l, x, 1)
}

/// tan over all f32.
#[inline(always)]
pub fn tan<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let (r, k) = reduce_pio2(l, x);
    let (s, c) = sin_cos_kernel(l, r);
    // Even k: s/c; odd k: -c/s.
    let one = l.ci(1);
    let odd = l.iand(k, one);
    let odd = l.nonzero(odd);
    let ns = l.neg(s);
    let num = l.sel(odd, c, s);
    let den = l.sel(odd, ns, c);
    let t = l.div(num, den);
    tiny_identity(l, x, t)
}

/// atan2(y, x), IEEE special cases included.
#[inline(always)]
pub fn atan2<L: Lanes>(l: &mut L, y: L::F, x: L::F) -> L::F {
    let ax = l.abs(x);
    let ay = l.abs(y);
    // min and max of the two.
    let swap = l.cmp(Cmp::Gt, ay, ax);
    let mn = l.sel(swap, ax, ay);
    let mx = l.sel(swap, ay, ax);
    let t = l.div(mn, mx);
    // 0/0 -> 0 (both zero), inf/inf -> 1 (both infinite).
    let zero_mx = l.cmpc(Cmp::Eq, mx, 0.0);
    let t = l.selc(zero_mx, 0.0, t);
    let inf_mn = l.cmpc(Cmp::Eq, mn, f32::INFINITY);
    let t = l.selc(inf_mn, 1.0, t);
    // atan t = π/4 + atan((t-1)/(t+1)) above tan(π/8).
    let big = l.cmpc(Cmp::Gt, t, TAN_PI_8);
    let tm = l.addc(t, -1.0);
    let tp = l.addc(t, 1.0);
    let u2 = l.div(tm, tp);
    let u = l.sel(big, u2, t);
    let z = l.mul(u, u);
    let p = l.poly(z, &ATAN_P);
    let uz = l.mul(u, z);
    let at = l.mad(uz, p, u);
    let base_lo = l.c(PIO4_LO);
    let zero = l.c(0.0);
    let lo = l.sel(big, base_lo, zero);
    let at = l.add(at, lo);
    let base_hi = l.c(PIO4_HI);
    let hi = l.sel(big, base_hi, zero);
    let a = l.add(hi, at);
    // |y| > |x|: π/2 - a.
    let h_lo = l.c(PI_LO * 0.5);
    let d = l.sub(h_lo, a);
    let a2 = l.addc(d, PI_HI * 0.5);
    let a = l.sel(swap, a2, a);
    // x negative (-0 included): π - a.
    let xb = l.bits(x);
    let neg = l.negative(xb);
    let p_lo = l.c(PI_LO);
    let d = l.sub(p_lo, a);
    let a3 = l.addc(d, PI_HI);
    let a = l.sel(neg, a3, a);
    let a = l.copysign(a, y);
    // NaN in either gives NaN (the selects above can hide one: atan2(inf, NaN)).
    let x_ord = l.cmp(Cmp::Eq, x, x);
    let y_ord = l.cmp(Cmp::Eq, y, y);
    let ordered = l.and(x_ord, y_ord);
    let nan = l.c(f32::NAN);
    l.sel(ordered, a, nan)
}

/// `(hi, lo)` of `log2 |x|` (about 32 bits), for positive finite nonzero x.
#[inline(always)]
fn log2_hilo<L: Lanes>(l: &mut L, x: L::F) -> (L::F, L::F) {
    let (ef, m) = split_exponent(l, x);
    let f = l.addc(m, -1.0);
    // q = 2f/(2+f) in two parts.
    let two = l.c(2.0);
    let dh = l.add(two, f);
    let dd = l.sub(two, dh);
    let dl = l.add(dd, f);
    let f2 = l.add(f, f);
    let qh = l.div(f2, dh);
    // rem = f2 - qh (dh + dl); f2 - qh·dh is exact (the quotient is close).
    let qd = l.mul(qh, dh);
    let qe = prod_err(l, qh, dh, qd);
    let rem = l.sub(f2, qd);
    let rem = l.sub(rem, qe);
    let nqh = l.neg(qh);
    let rem = l.mad(nqh, dl, rem);
    let ql = l.div(rem, dh);
    // log(1+f) = q + (q/2)³ Q((q/2)²) = qh + (ql + tail).
    let s = l.mulc(qh, 0.5);
    let z = l.mul(s, s);
    let pq = l.poly(z, &LOG_Q);
    let sz = l.mul(s, z);
    let tail = l.mad(sz, pq, ql);
    // Times log2(e) in two parts.
    let l2h = l.c(LOG2E);
    let ph = l.mul(qh, l2h);
    let pe = prod_err(l, qh, l2h, ph);
    let t1 = l.mulc(tail, LOG2E);
    let t2 = l.madc(qh, LOG2E_LO, t1);
    let pl = l.add(pe, t2);
    // + e (exact): fast two-sum, |e| >= |ph| unless e = 0.
    let h = l.add(ef, ph);
    let eh = l.sub(ef, h);
    let c = l.add(eh, ph);
    let lo = l.add(c, pl);
    // Renormalize so that |lo| <= ulp(h)/2 (the tail above may exceed it), else
    // rounding y·h to an integer would leave the exp2 polynomial's range.
    let hn = l.add(h, lo);
    let d = l.sub(h, hn);
    (hn, l.add(d, lo))
}

/// pow(x, y) with C99's special cases (negative bases with integer exponents, zeros,
/// infinities, `pow(1, y) = pow(x, 0) = 1`).
#[inline(always)]
pub fn pow<L: Lanes>(l: &mut L, x: L::F, y: L::F) -> L::F {
    let ax = l.abs(x);
    let (lh, ll) = log2_hilo(l, ax);
    // z = y log2|x| = zh + zl.
    let zh = l.mul(y, lh);
    let ze = prod_err(l, y, lh, zh);
    let zl = l.mad(y, ll, ze);
    // Far out of range (or not finite): the low part is meaningless. (Also where it
    // overflowed: Dekker's split of a huge y, with log2|x| = 0.)
    let azh = l.abs(zh);
    let inr = l.cmpc(Cmp::Lt, azh, 200.0);
    let azl = l.abs(zl);
    let zl_ok = l.cmpc(Cmp::Lt, azl, 1.0);
    let inr = l.and(inr, zl_ok);
    let zero = l.c(0.0);
    let zl = l.sel(inr, zl, zero);
    let zh = l.max(zh, -200.0);
    let zh = l.min(zh, 200.0);
    // exp2: n = round(zh), r = (zh - n + zl) ln2.
    let (t, n) = l.round_scaled(zh, 1.0);
    let fr = l.sub(zh, n);
    let fr = l.add(fr, zl);
    let r = l.mulc(fr, LN2_HI + LN2_LO);
    let p = expm1_poly(l, r);
    let tb = l.bits(t);
    let shift_bits = l.ci(SHIFT_BITS);
    let ni = l.isub(tb, shift_bits);
    let n1 = l.sshr(ni, 1);
    let n2 = l.isub(ni, n1);
    let s1 = pow2i(l, n1, 127);
    let s2 = pow2i(l, n2, 127);
    let v = l.mad(p, s1, s1);
    let v = l.mul(v, s2);
    // |x| = 0 or inf: log2 gives ±inf, z = ±inf or NaN (y = 0 handled below).
    let xzero = l.cmpc(Cmp::Eq, ax, 0.0);
    let xinf = l.cmpc(Cmp::Eq, ax, f32::INFINITY);
    let ypos = l.cmpc(Cmp::Gt, y, 0.0);
    let inf = l.c(f32::INFINITY);
    let big = l.sel(ypos, inf, zero); // x = inf
    let small = l.sel(ypos, zero, inf); // x = 0
    let v = l.sel(xinf, big, v);
    let v = l.sel(xzero, small, v);
    // Negative x (or -0): integer y gives the sign of y's parity, otherwise NaN.
    let yt = l.trunc(y);
    let is_int = l.cmp(Cmp::Eq, yt, y);
    let hy = l.mulc(y, 0.5);
    let hyt = l.trunc(hy);
    // y/2 not an integer (y infinite: inf - inf is NaN, so not odd).
    let frac = l.sub(hy, hyt);
    let frac = l.abs(frac);
    let half_frac = l.cmpc(Cmp::Gt, frac, 0.0);
    let odd = l.and(is_int, half_frac);
    let nv = l.neg(v);
    let signed = l.sel(odd, nv, v);
    let xb = l.bits(x);
    let xneg = l.negative(xb);
    let nan = l.c(f32::NAN);
    let neg_res = l.sel(is_int, signed, nan);
    // -0 and -inf with non-integer y: like +0 / +inf.
    let neg_res = l.sel(xzero, signed, neg_res);
    let neg_res = l.sel(xinf, signed, neg_res);
    let v = l.sel(xneg, neg_res, v);
    // |y| = inf: |x| = 1 gives 1 (x = -1 included); otherwise 0 or inf.
    let ay = l.abs(y);
    let yinf = l.cmpc(Cmp::Eq, ay, f32::INFINITY);
    let gt1 = l.cmpc(Cmp::Gt, ax, 1.0);
    let lt1 = l.cmpc(Cmp::Lt, ax, 1.0);
    let grows = l.sel(gt1, inf, zero);
    let shrinks = l.sel(lt1, inf, zero);
    let yi = l.sel(ypos, grows, shrinks);
    let one = l.c(1.0);
    let eq1 = l.cmpc(Cmp::Eq, ax, 1.0);
    let yi = l.sel(eq1, one, yi);
    let v = l.sel(yinf, yi, v);
    // NaN in x or y gives NaN, except pow(1, y) = pow(x, 0) = 1.
    let x_ord = l.cmp(Cmp::Eq, x, x);
    let y_ord = l.cmp(Cmp::Eq, y, y);
    let ordered = l.and(x_ord, y_ord);
    let v = l.sel(ordered, v, nan);
    let x1 = l.cmpc(Cmp::Eq, x, 1.0);
    let y0 = l.cmpc(Cmp::Eq, y, 0.0);
    let v = l.sel(x1, one, v);
    l.sel(y0, one, v)
}

/// cbrt over all f32 (0, infinities and NaN are their own cube roots).
#[inline(always)]
pub fn cbrt<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let a = l.abs(x);
    // Subnormals: scale by 2^24 (cbrt: 2^8).
    let tiny = l.cmpc(Cmp::Lt, a, 1.175_494_4e-38);
    let scaled = l.mulc(a, 16_777_216.0);
    let a2 = l.sel(tiny, scaled, a);
    // Guess: a third of the exponent bits, rebiased; through float, as there is no
    // vector integer division.
    let bits = l.bits(a2);
    let bf = l.to_float(bits);
    let third = l.mulc(bf, 1.0 / 3.0);
    let ti = l.to_int(third);
    let g = l.iaddc(ti, 0x2A55_5556);
    let mut g = l.float(g);
    // Newton: g += (a/g² - g)/3, quadratic from a few percent: three steps.
    for _ in 0..3 {
        let g2 = l.mul(g, g);
        let q = l.div(a2, g2);
        let d = l.sub(q, g);
        g = l.madc(d, 1.0 / 3.0, g);
    }
    let unscale = l.c(1.0 / 256.0);
    let one = l.c(1.0);
    let k = l.sel(tiny, unscale, one);
    let y = l.mul(g, k);
    let y = l.copysign(y, x);
    let pos = l.cmpc(Cmp::Gt, a, 0.0);
    let fin = l.cmpc(Cmp::Lt, a, f32::INFINITY);
    let ok = l.and(pos, fin);
    l.sel(ok, y, x)
}
