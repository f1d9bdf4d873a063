//! The lane primitives the f32 approximations are written in ([`Lanes`]), and native
//! `f32` lanes ([`Scalar`]).
//!
//! Every primitive is one IEEE operation or an exact bit operation, so two
//! implementations give the same bits as long as their multiply-adds ([`Lanes::mad`])
//! are both fused or both not. The CPU target's Cranelift emitter implements the trait
//! as instructions of the JIT's IR (a scalar `F32` or an `F32X4` vector); [`Scalar`] as
//! native arithmetic, which [`crate::block`] runs in loops that LLVM vectorizes.

/// An ordered float comparison (false where either operand is NaN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Gt,
    Ge,
    Eq,
}

/// The lane primitives the f32 approximations are written in, so that each is written
/// once for every backend: the CPU target's Cranelift emitter (a scalar `F32` or an
/// `F32X4` vector in the JIT's IR) and [`Scalar`] (native `f32` code that
/// [`crate::block`] runs in loops for LLVM to vectorize). Every primitive is one IEEE
/// operation or an exact bit operation, so all backends give the same bits as long as
/// [`Lanes::mad`] is fused in all or in none.
pub trait Lanes {
    /// A float lane.
    type F: Copy;
    /// An integer lane of the same width.
    type I: Copy;
    /// A lane mask, what a comparison gives.
    type Mask: Copy;

    /// Whether [`Lanes::mad`] is fused.
    fn fused(&self) -> bool;
    fn c(&mut self, v: f32) -> Self::F;
    fn ci(&mut self, v: i32) -> Self::I;
    /// The sign bit of a float lane, as an integer lane.
    fn sign_bit(&mut self) -> Self::I;
    fn add(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn sub(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn mul(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn div(&mut self, a: Self::F, b: Self::F) -> Self::F;
    /// `a * b + c`: rounded once where [`Lanes::fused`], else twice.
    fn mad(&mut self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    fn abs(&mut self, a: Self::F) -> Self::F;
    fn neg(&mut self, a: Self::F) -> Self::F;
    fn cmp(&mut self, cc: Cmp, a: Self::F, b: Self::F) -> Self::Mask;
    fn and(&mut self, a: Self::Mask, b: Self::Mask) -> Self::Mask;
    /// `m ? a : b`, per lane.
    fn sel(&mut self, m: Self::Mask, a: Self::F, b: Self::F) -> Self::F;
    /// The float's bits as an integer.
    fn bits(&mut self, a: Self::F) -> Self::I;
    /// The integer's bits as a float.
    fn float(&mut self, a: Self::I) -> Self::F;
    /// Wrapping integer add.
    fn iadd(&mut self, a: Self::I, b: Self::I) -> Self::I;
    /// Wrapping integer subtract.
    fn isub(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn iand(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn ior(&mut self, a: Self::I, b: Self::I) -> Self::I;
    /// `a & !b`.
    fn iandnot(&mut self, a: Self::I, b: Self::I) -> Self::I;
    /// Shift left by `n` (< the lane width), bits shifted out are lost.
    fn shl(&mut self, a: Self::I, n: u32) -> Self::I;
    /// Arithmetic shift right by `n` (< the lane width).
    fn sshr(&mut self, a: Self::I, n: u32) -> Self::I;
    /// The signed integer as a float (exact for the small integers used here).
    fn to_float(&mut self, a: Self::I) -> Self::F;
    /// The float rounded toward zero, as a float.
    fn trunc(&mut self, a: Self::F) -> Self::F;
    /// The float rounded toward zero, as a signed integer (saturating; used in range).
    fn to_int(&mut self, a: Self::F) -> Self::I;

    // Conveniences built on the primitives.

    /// Where the integer lane is not zero. By default through its float value (exact in
    /// sign and in being zero); a backend with integer compares overrides it.
    #[inline(always)]
    fn nonzero(&mut self, a: Self::I) -> Self::Mask {
        let f = self.to_float(a);
        let f = self.abs(f);
        self.cmpc(Cmp::Gt, f, 0.0)
    }
    /// Where the integer lane is negative (a float's sign bit, seen in its bits).
    #[inline(always)]
    fn negative(&mut self, a: Self::I) -> Self::Mask {
        let f = self.to_float(a);
        self.cmpc(Cmp::Lt, f, 0.0)
    }

    /// `n = round(x·k)` to the nearest integer (ties to even; `|x·k| < 2^22`), with
    /// `t = n + SHIFT`, whose low mantissa bits hold `n`: by default the one multiply-add
    /// `x·k + SHIFT`, then `t - SHIFT`. A backend whose compiler may reassociate float
    /// arithmetic (WGSL drivers fold `(a + SHIFT) - SHIFT` to `a`) rounds otherwise.
    #[inline(always)]
    fn round_scaled(&mut self, x: Self::F, k: f32) -> (Self::F, Self::F) {
        let shift = self.c(crate::algorithms::SHIFT);
        let t = self.madc(x, k, shift);
        let n = self.sub(t, shift);
        (t, n)
    }

    #[inline(always)]
    fn addc(&mut self, a: Self::F, k: f32) -> Self::F {
        let k = self.c(k);
        self.add(a, k)
    }
    #[inline(always)]
    fn mulc(&mut self, a: Self::F, k: f32) -> Self::F {
        let k = self.c(k);
        self.mul(a, k)
    }
    #[inline(always)]
    fn madc(&mut self, a: Self::F, k: f32, d: Self::F) -> Self::F {
        let k = self.c(k);
        self.mad(a, k, d)
    }
    #[inline(always)]
    fn cmpc(&mut self, cc: Cmp, a: Self::F, k: f32) -> Self::Mask {
        let k = self.c(k);
        self.cmp(cc, a, k)
    }
    #[inline(always)]
    fn selc(&mut self, m: Self::Mask, k: f32, b: Self::F) -> Self::F {
        let k = self.c(k);
        self.sel(m, k, b)
    }
    #[inline(always)]
    fn iaddc(&mut self, a: Self::I, k: i32) -> Self::I {
        let k = self.ci(k);
        self.iadd(a, k)
    }
    /// `min(a, k)` for clamping: a compare and a select (Cranelift's `fmin` orders
    /// zeros and NaNs exactly, seven x86 instructions per vector); a NaN `a` stays NaN,
    /// and `k` is never zero, so zeros need no care.
    #[inline(always)]
    fn min(&mut self, a: Self::F, k: f32) -> Self::F {
        debug_assert!(k != 0.0);
        let kv = self.c(k);
        let over = self.cmp(Cmp::Lt, kv, a);
        self.sel(over, kv, a)
    }
    /// `max(a, k)` for clamping, as [`Lanes::min`]. Both are written in the operand
    /// order that Cranelift's x86-64 backend lowers to one `minps`/`maxps`.
    #[inline(always)]
    fn max(&mut self, a: Self::F, k: f32) -> Self::F {
        debug_assert!(k != 0.0);
        let kv = self.c(k);
        let under = self.cmp(Cmp::Lt, a, kv);
        self.sel(under, kv, a)
    }
    /// Horner: `coeffs[0] + z (coeffs[1] + z (...))`.
    #[inline(always)]
    fn poly(&mut self, z: Self::F, coeffs: &[f32]) -> Self::F {
        let mut acc = self.c(coeffs[coeffs.len() - 1]);
        for &k in coeffs[..coeffs.len() - 1].iter().rev() {
            let kv = self.c(k);
            acc = self.mad(acc, z, kv);
        }
        acc
    }
    /// The magnitude of `a` with the sign of `s` (in the bits: x86-64 has no vector
    /// `fcopysign`).
    #[inline(always)]
    fn copysign(&mut self, a: Self::F, s: Self::F) -> Self::F {
        let sign = self.sign_bit();
        let ab = self.bits(a);
        let sb = self.bits(s);
        let mag = self.iandnot(ab, sign);
        let sgn = self.iand(sb, sign);
        let r = self.ior(mag, sgn);
        self.float(r)
    }
}

/// Native `f32` lanes (one element at a time; [`crate::block`] runs them in loops that
/// LLVM vectorizes). `FMA`: whether [`Lanes::mad`] is fused (`f32::mul_add`, one instruction
/// only where the caller is compiled with the `fma` target feature).
#[derive(Clone, Copy, Debug, Default)]
pub struct Scalar<const FMA: bool>;

impl<const FMA: bool> Lanes for Scalar<FMA> {
    type F = f32;
    type I = i32;
    type Mask = bool;

    #[inline(always)]
    fn fused(&self) -> bool {
        FMA
    }
    #[inline(always)]
    fn c(&mut self, v: f32) -> f32 {
        v
    }
    #[inline(always)]
    fn ci(&mut self, v: i32) -> i32 {
        v
    }
    #[inline(always)]
    fn sign_bit(&mut self) -> i32 {
        i32::MIN
    }
    #[inline(always)]
    fn add(&mut self, a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    fn sub(&mut self, a: f32, b: f32) -> f32 {
        a - b
    }
    #[inline(always)]
    fn mul(&mut self, a: f32, b: f32) -> f32 {
        a * b
    }
    #[inline(always)]
    fn div(&mut self, a: f32, b: f32) -> f32 {
        a / b
    }
    #[inline(always)]
    fn mad(&mut self, a: f32, b: f32, c: f32) -> f32 {
        // Rust never contracts `a * b + c` into an fma.
        if FMA {
            a.mul_add(b, c)
        } else {
            a * b + c
        }
    }
    #[inline(always)]
    fn abs(&mut self, a: f32) -> f32 {
        a.abs()
    }
    #[inline(always)]
    fn neg(&mut self, a: f32) -> f32 {
        -a
    }
    #[inline(always)]
    fn cmp(&mut self, cc: Cmp, a: f32, b: f32) -> bool {
        match cc {
            Cmp::Lt => a < b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Eq => a == b,
        }
    }
    #[inline(always)]
    fn and(&mut self, a: bool, b: bool) -> bool {
        a & b
    }
    #[inline(always)]
    fn sel(&mut self, m: bool, a: f32, b: f32) -> f32 {
        if m {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn bits(&mut self, a: f32) -> i32 {
        a.to_bits() as i32
    }
    #[inline(always)]
    fn float(&mut self, a: i32) -> f32 {
        f32::from_bits(a as u32)
    }
    #[inline(always)]
    fn iadd(&mut self, a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }
    #[inline(always)]
    fn isub(&mut self, a: i32, b: i32) -> i32 {
        a.wrapping_sub(b)
    }
    #[inline(always)]
    fn iand(&mut self, a: i32, b: i32) -> i32 {
        a & b
    }
    #[inline(always)]
    fn ior(&mut self, a: i32, b: i32) -> i32 {
        a | b
    }
    #[inline(always)]
    fn iandnot(&mut self, a: i32, b: i32) -> i32 {
        a & !b
    }
    #[inline(always)]
    fn shl(&mut self, a: i32, n: u32) -> i32 {
        a.wrapping_shl(n)
    }
    #[inline(always)]
    fn sshr(&mut self, a: i32, n: u32) -> i32 {
        a.wrapping_shr(n)
    }
    #[inline(always)]
    fn to_float(&mut self, a: i32) -> f32 {
        a as f32
    }
    #[inline(always)]
    fn trunc(&mut self, a: f32) -> f32 {
        a.trunc()
    }
    #[inline(always)]
    fn to_int(&mut self, a: f32) -> i32 {
        a as i32
    }
    #[inline(always)]
    fn nonzero(&mut self, a: i32) -> bool {
        a != 0
    }
    #[inline(always)]
    fn negative(&mut self, a: i32) -> bool {
        a < 0
    }
}
