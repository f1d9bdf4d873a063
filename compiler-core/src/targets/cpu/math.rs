//! Float math for the CPU kernels: inline, branch-free approximations of the
//! transcendental ops in f32 (the same code for a scalar `F32` and an `F32X4` vector),
//! and calls to the C library's own functions (`exp`, `log1p`, `atan2`, ...) for f64,
//! so that an object file links with `-lm` alone.
//!
//! f16 and bf16 are computed in f32 and rounded by the caller (the kernels' convention),
//! so they use the f32 approximations; their error is far below half an f16/bf16 ulp.
//!
//! exp (its fast and its clamped form), expm1, log, log1p, tanh, logistic and erf are
//! written once, in the `hloscope-approx` crate, as generic functions over its `Lanes`
//! trait (lane primitives of one IEEE operation or exact bit operation each); the
//! Cranelift emitter `M` here implements `Lanes` as instructions of the JIT's IR, and
//! the crate's own native `f32` lanes run in block functions that LLVM vectorizes for
//! AVX-512 or AVX2 ([`super::block_math`]). Both give the same bits when their
//! multiply-adds are both fused or both not. sin, cos, tan, atan2, pow and cbrt exist
//! for the JIT only, written on `M` here (with the crate's helpers).
//!
//! # Methods (f32)
//!
//! exp, expm1, log, log1p, tanh, logistic and erf: see `hloscope_approx::algorithms`.
//! The polynomials below were fitted the same way (a weighted least-squares fit
//! iterated to near-minimax relative error, Lawson's method, coefficients rounded to
//! f32); no branches except exp's rare path (taken by a whole vector when any lane
//! needs it): special cases are chosen with selects.
//!
//! - sin, cos, tan: `x = k π/2 + r`, `π/2` in three parts with fma (four parts of 12
//!   bits without, so that each product is exact), odd/even polynomials on
//!   `|r| <= π/4`, chosen and signed by `k mod 4`.
//! - atan2: `t = min/max` of `|x|, |y|`, `atan t = π/4 + atan((t-1)/(t+1))` when
//!   `t > tan(π/8)`, an odd polynomial, then octant fix-ups and the signs of IEEE atan2
//!   (zeros and infinities included).
//! - pow: `exp2(y log2 x)` with `log2 x` and the product carried in two floats (exact
//!   products by fma, or Dekker's splitting without), so that large `|y log2 x|` keep
//!   their accuracy; C99 special cases (negative bases with
//!   integer exponents, zeros, infinities, `pow(1, y) = pow(x, 0) = 1`).
//! - cbrt: an exponent-bits guess and three Newton steps.
//! - Exact ops done inline for every float type: sign, round-half-away (`trunc`-based),
//!   rsqrt as `1/sqrt`.
//! - rem (fmod is exact) calls `fmodf`; f64 calls the C function of the same name
//!   (logistic in f64: `1/(1 + exp(-x))`, as the interpreter). Vectors of ops that call C are
//!   split into lanes.
//!
//! # Measured errors (`tests/cpu_math.rs` asserts them)
//!
//! Against the f64 C library rounded to f32 (so 0 ulp = correctly rounded), over a dense
//! sweep of the whole f32 range (every 509th bit pattern: all exponents, both signs,
//! subnormals, infinities, NaN), a million random and uniform samples and the special
//! values; atan2 and pow over 2.5 and 2.1 million pairs. Scalar and 4-lane code agree bit
//! for bit. Specials (NaN, ±inf, ±0, overflow, underflow) come out exactly. "with FMA" is
//! the native code on an x86-64 with FMA (or any aarch64); "without" is the multiply-add
//! fallback. The test asserts the "with FMA" column as is and the "without" one with a
//! one-ulp margin (it measures, and prints, both).
//!
//! | op       | with FMA | without | domain of the bound                                   |
//! |----------|----------|---------|-------------------------------------------------------|
//! | exp      | 1 ulp    | 1 ulp   | all f32 (overflow to inf, subnormal results)          |
//! | expm1    | 1 ulp    | 1 ulp   | all f32                                               |
//! | log      | 1 ulp    | 1 ulp   | all f32 (subnormals; 0 → -inf; negative → NaN)        |
//! | log1p    | 1 ulp    | 1 ulp   | all f32                                               |
//! | tanh     | 2 ulp    | 2 ulp   | all f32                                               |
//! | logistic | 2 ulp    | 2 ulp   | all f32 (subnormal results included)                  |
//! | erf      | 2 ulp    | 2 ulp   | all f32                                               |
//! | sin, cos | 1 ulp    | 2 ulp   | `|x| <= 2^15` (without FMA `|x| <= 2^12`), abs 2e-7 where `|result| < 1e-3` |
//! | tan      | 3 ulp    | 4 ulp   | as sin; abs 2e-7 where `|result| < 1e-3`              |
//! | atan2    | 2 ulp    | 2 ulp   | all f32 pairs                                         |
//! | pow      | 4 ulp    | 4 ulp   | normal results, `|y log2 x| < 126`                    |
//! | cbrt     | 1 ulp    | 1 ulp   | all f32                                               |
//! | rsqrt    | 1 ulp    | 1 ulp   | all f32                                               |
//! | sign, round-half-away | 0 | 0  | all f32 (exact)                                       |
//!
//! sin and cos beyond the table's domain: absolute error 8e-8 up to `|x| = 2^17` with
//! FMA, 4e-3 without (the reduction's parts stop being exact past `2^12`); past `2^22`
//! the reduction breaks down and the result is only kept in `[-1, 1]`.
//! The near-zero absolute bounds of the trigonometric functions are where a relative
//! bound means nothing: the abs error measured there is 1e-10.

use crate::ir::{BinaryOp, UnaryOp};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::FunctionBuilder;
use hloscope_approx::algorithms::{
    erf, exp_clamped, exp_fast, exp_fast_limit, expm1, expm1_poly, log, log1p, logistic, pow2i, split_exponent, tanh,
    LN2_HI, LN2_LO, LOG2E, LOG_Q, SHIFT, SHIFT_BITS,
};
use hloscope_approx::{Cmp, Lanes};

/// Emits a call of the C library function `name` on scalar arguments (f32 or f64) and
/// returns its result. The caller declares the import (see [`C_FUNCTIONS`]).
pub type Call<'c> = dyn FnMut(&mut FunctionBuilder, &'static str, &[Value]) -> Value + 'c;

/// The C library functions the lowerings may call: name, number of arguments, whether
/// they take f64 (else f32).
pub const C_FUNCTIONS: &[(&str, usize, bool)] = &[
    ("exp", 1, true),
    ("expm1", 1, true),
    ("log", 1, true),
    ("log1p", 1, true),
    ("tanh", 1, true),
    ("sin", 1, true),
    ("cos", 1, true),
    ("tan", 1, true),
    ("erf", 1, true),
    ("cbrt", 1, true),
    ("atan2", 2, true),
    ("pow", 2, true),
    ("fmod", 2, true),
    ("fmodf", 2, false),
];

/// The C functions that lowering unary `op` on `ty` (a float type, scalar or vector)
/// calls: what the caller must declare.
pub fn unary_calls(op: UnaryOp, ty: Type) -> &'static [&'static str] {
    use UnaryOp::*;
    if ty.lane_type() != types::F64 {
        return &[];
    }
    match op {
        Exp | Logistic => &["exp"],
        Expm1 => &["expm1"],
        Log => &["log"],
        Log1p => &["log1p"],
        Tanh => &["tanh"],
        Sin => &["sin"],
        Cos => &["cos"],
        Tan => &["tan"],
        Erf => &["erf"],
        Cbrt => &["cbrt"],
        _ => &[],
    }
}

/// The C functions that lowering binary `op` on `ty` calls.
pub fn binary_calls(op: BinaryOp, ty: Type) -> &'static [&'static str] {
    let wide = ty.lane_type() == types::F64;
    match op {
        BinaryOp::Rem if wide => &["fmod"],
        BinaryOp::Rem => &["fmodf"],
        BinaryOp::Pow if wide => &["pow"],
        BinaryOp::Atan2 if wide => &["atan2"],
        _ => &[],
    }
}

/// Whether `fma` is a native instruction of the target (else Cranelift calls a
/// function per lane, so the emitters use a multiply and an add instead).
pub fn has_fma(isa: &dyn cranelift_codegen::isa::TargetIsa) -> bool {
    match isa.name() {
        "x64" => isa.isa_flags().iter().any(|f| f.name == "has_fma" && f.as_bool() == Some(true)),
        _ => true,
    }
}

/// Lowers float unary `op` on `x` (F32, F32X4, F64 or F64X2). `None`: not an op this
/// module lowers (abs, neg, floor, sqrt, ... are single instructions, left to the caller).
pub fn unary(b: &mut FunctionBuilder, fma: bool, op: UnaryOp, x: Value, call: &mut Call) -> Option<Value> {
    use UnaryOp::*;
    let ty = b.func.dfg.value_type(x);
    let mut m = M::new(b, ty, fma);
    // Exact ops, any float type.
    match op {
        Sign => return Some(m.sign(x)),
        RoundAfz => return Some(m.round_afz(x)),
        Rsqrt => {
            let s = m.b.ins().sqrt(x);
            let one = m.c(1.0);
            return Some(m.b.ins().fdiv(one, s));
        }
        _ => {}
    }
    if ty.lane_type() == types::F64 {
        if op == Logistic {
            // 1/(1 + exp(-x)), the interpreter's formula (f64 results equal its own).
            let nx = fneg(m.b, x);
            let e = m.per_lane("exp", &[nx], call);
            let one = m.c(1.0);
            let d = m.add(one, e);
            return Some(m.div(one, d));
        }
        let name = *unary_calls(op, ty).first()?;
        return Some(m.per_lane(name, &[x], call));
    }
    if ty.lane_type() != types::F32 {
        return None;
    }
    Some(match op {
        Exp => m.exp(x),
        Expm1 => expm1(&mut m, x),
        Log => log(&mut m, x),
        Log1p => log1p(&mut m, x),
        Tanh => tanh(&mut m, x),
        Logistic => logistic(&mut m, x, M::exp),
        Erf => erf(&mut m, x, M::exp),
        Sin => m.sin_cos(x, 0),
        Cos => m.sin_cos(x, 1),
        Tan => m.tan(x),
        Cbrt => m.cbrt(x),
        _ => return None,
    })
}

/// Lowers float binary `op` (rem, pow, atan2) on `x`, `y` of one float type. `None`:
/// not an op this module lowers.
pub fn binary(b: &mut FunctionBuilder, fma: bool, op: BinaryOp, x: Value, y: Value, call: &mut Call) -> Option<Value> {
    let ty = b.func.dfg.value_type(x);
    let mut m = M::new(b, ty, fma);
    if ty.lane_type() == types::F32 {
        match op {
            BinaryOp::Pow => return Some(m.pow(x, y)),
            BinaryOp::Atan2 => return Some(m.atan2(x, y)),
            _ => {}
        }
    }
    let name = *binary_calls(op, ty).first()?;
    Some(m.per_lane(name, &[x, y], call))
}

// Constants of the JIT-only approximations (all exact f32 values); the shared ones are
// `hloscope_approx::algorithms`'s.
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

// ---- The Cranelift emitter ----

/// An emitter for one value type: `ty` is F32, F32X4, F64 or F64X2; `ity` the integer
/// type of the same lane width and count. Masks are what `fcmp`/`icmp` give (i8 for a
/// scalar, a lane mask for a vector). Its [`Lanes`] primitives emit one instruction each
/// (the f32 approximations are written over them); the exact ops below also take f64.
/// `-a`. On a float vector, an xor with a sign-mask constant, which Cranelift reads from
/// its constant pool as a memory operand: one instruction, where its own `fneg` builds
/// the mask in registers each time (three).
pub(super) fn fneg(b: &mut FunctionBuilder, a: Value) -> Value {
    match sign_mask(b, a, true) {
        Some(m) => b.ins().bxor(a, m),
        None => b.ins().fneg(a),
    }
}

/// `|a|`, as [`fneg`]: an and with the complement of the sign mask on a float vector.
pub(super) fn fabs(b: &mut FunctionBuilder, a: Value) -> Value {
    match sign_mask(b, a, false) {
        Some(m) => b.ins().band(a, m),
        None => b.ins().fabs(a),
    }
}

/// For a float vector `like`: a constant of its type whose lanes hold just the sign bit
/// (`sign`) or every bit but it.
fn sign_mask(b: &mut FunctionBuilder, like: Value, sign: bool) -> Option<Value> {
    let ty = b.func.dfg.value_type(like);
    if !ty.is_vector() {
        return None;
    }
    let lane = match (ty.lane_type(), sign) {
        (types::F32, true) => b.ins().f32const(f32::from_bits(0x8000_0000)),
        (types::F32, false) => b.ins().f32const(f32::from_bits(0x7fff_ffff)),
        (types::F64, true) => b.ins().f64const(f64::from_bits(1 << 63)),
        (types::F64, false) => b.ins().f64const(f64::from_bits(!(1 << 63))),
        _ => return None,
    };
    Some(b.ins().splat(ty, lane))
}

struct M<'a, 'f> {
    b: &'a mut FunctionBuilder<'f>,
    ty: Type,
    ity: Type,
    fma: bool,
}

impl Lanes for M<'_, '_> {
    type F = Value;
    type I = Value;
    type Mask = Value;

    fn fused(&self) -> bool {
        self.fma
    }
    /// A float constant, splatted for a vector.
    fn c(&mut self, v: f32) -> Value {
        let s =
            if self.ty.lane_type() == types::F64 { self.b.ins().f64const(v as f64) } else { self.b.ins().f32const(v) };
        if self.vector() {
            self.b.ins().splat(self.ty, s)
        } else {
            s
        }
    }
    fn ci(&mut self, v: i32) -> Value {
        self.ci_lane(v as i64)
    }
    fn sign_bit(&mut self) -> Value {
        self.ci_lane(if self.ty.lane_type() == types::F64 { i64::MIN } else { 0x8000_0000 })
    }
    fn add(&mut self, a: Value, c: Value) -> Value {
        self.b.ins().fadd(a, c)
    }
    fn sub(&mut self, a: Value, c: Value) -> Value {
        self.b.ins().fsub(a, c)
    }
    fn mul(&mut self, a: Value, c: Value) -> Value {
        self.b.ins().fmul(a, c)
    }
    fn div(&mut self, a: Value, c: Value) -> Value {
        self.b.ins().fdiv(a, c)
    }
    /// `a * c + d`, fused when the target has FMA.
    fn mad(&mut self, a: Value, c: Value, d: Value) -> Value {
        if self.fma {
            self.b.ins().fma(a, c, d)
        } else {
            let p = self.b.ins().fmul(a, c);
            self.b.ins().fadd(p, d)
        }
    }
    fn abs(&mut self, a: Value) -> Value {
        fabs(self.b, a)
    }
    fn neg(&mut self, a: Value) -> Value {
        fneg(self.b, a)
    }
    fn cmp(&mut self, cc: Cmp, a: Value, c: Value) -> Value {
        let cc = match cc {
            Cmp::Lt => FloatCC::LessThan,
            Cmp::Gt => FloatCC::GreaterThan,
            Cmp::Ge => FloatCC::GreaterThanOrEqual,
            Cmp::Eq => FloatCC::Equal,
        };
        self.b.ins().fcmp(cc, a, c)
    }
    fn and(&mut self, a: Value, c: Value) -> Value {
        self.b.ins().band(a, c)
    }
    fn sel(&mut self, m: Value, a: Value, c: Value) -> Value {
        if self.vector() {
            let vt = self.b.func.dfg.value_type(a);
            let mt = self.b.func.dfg.value_type(m);
            let m = if mt != vt { self.b.ins().bitcast(vt, MemFlagsData::new(), m) } else { m };
            self.b.ins().bitselect(m, a, c)
        } else {
            self.b.ins().select(m, a, c)
        }
    }
    fn bits(&mut self, x: Value) -> Value {
        self.b.ins().bitcast(self.ity, MemFlagsData::new(), x)
    }
    fn float(&mut self, i: Value) -> Value {
        self.b.ins().bitcast(self.ty, MemFlagsData::new(), i)
    }
    fn iadd(&mut self, a: Value, c: Value) -> Value {
        self.b.ins().iadd(a, c)
    }
    fn isub(&mut self, a: Value, c: Value) -> Value {
        self.b.ins().isub(a, c)
    }
    fn iand(&mut self, a: Value, c: Value) -> Value {
        self.b.ins().band(a, c)
    }
    fn ior(&mut self, a: Value, c: Value) -> Value {
        self.b.ins().bor(a, c)
    }
    fn iandnot(&mut self, a: Value, c: Value) -> Value {
        self.b.ins().band_not(a, c)
    }
    fn shl(&mut self, a: Value, n: u32) -> Value {
        self.b.ins().ishl_imm_u(a, n as i64)
    }
    fn sshr(&mut self, a: Value, n: u32) -> Value {
        self.b.ins().sshr_imm_s(a, n as i64)
    }
    fn to_float(&mut self, a: Value) -> Value {
        self.b.ins().fcvt_from_sint(self.ty, a)
    }
}

impl<'a, 'f> M<'a, 'f> {
    fn new(b: &'a mut FunctionBuilder<'f>, ty: Type, fma: bool) -> Self {
        M { b, ty, ity: ty.as_int(), fma }
    }

    fn vector(&self) -> bool {
        self.ty.is_vector()
    }

    /// An integer constant of the lane width (32 or 64 bits), splatted for a vector.
    fn ci_lane(&mut self, v: i64) -> Value {
        // Immediates are zero-extended from the lane width.
        let lane = self.ity.lane_type();
        let v = if lane == types::I32 { v & 0xFFFF_FFFF } else { v };
        let s = self.b.ins().iconst(lane, v);
        if self.vector() {
            self.b.ins().splat(self.ity, s)
        } else {
            s
        }
    }

    /// exp: [`exp_fast`] where every lane is in its range (NaN included), else
    /// [`exp_clamped`]: a branch, taken by a whole vector when any lane needs the slow
    /// path (overflow, subnormal results, infinities), so the common case pays one
    /// compare and one test.
    fn exp(&mut self, x: Value) -> Value {
        let a = fabs(self.b, x);
        let rare = self.fcmpc(FloatCC::GreaterThan, a, exp_fast_limit(self.fma));
        let any = if self.vector() { self.b.ins().vany_true(rare) } else { rare };
        let fast = self.b.create_block();
        let slow = self.b.create_block();
        let join = self.b.create_block();
        let y = self.b.append_block_param(join, self.ty);
        self.b.ins().brif(any, slow, &[], fast, &[]);
        self.b.seal_block(fast);
        self.b.seal_block(slow);
        self.b.switch_to_block(fast);
        let yf = exp_fast(self, x);
        self.b.ins().jump(join, &[yf.into()]);
        self.b.switch_to_block(slow);
        let ys = exp_clamped(self, x);
        self.b.ins().jump(join, &[ys.into()]);
        self.b.seal_block(join);
        self.b.switch_to_block(join);
        y
    }

    /// `a·b - p` exactly, for `p = fl(a·b)`: an fma, or Dekker's product of Veltkamp
    /// halves without one (valid while `|a|, |b| < 2^115`).
    fn prod_err(&mut self, a: Value, b: Value, p: Value) -> Value {
        if self.fma {
            let np = fneg(self.b, p);
            return self.b.ins().fma(a, b, np);
        }
        let (ah, al) = self.split(a);
        let (bh, bl) = self.split(b);
        let hh = self.mul(ah, bh);
        let e = self.sub(hh, p);
        let hl = self.mul(ah, bl);
        let e = self.add(e, hl);
        let lh = self.mul(al, bh);
        let e = self.add(e, lh);
        let ll = self.mul(al, bl);
        self.add(e, ll)
    }

    /// Veltkamp's split of an f32 into two halves of 12 significant bits.
    fn split(&mut self, a: Value) -> (Value, Value) {
        let t = self.mulc(a, 4097.0);
        let d = self.sub(t, a);
        let h = self.sub(t, d);
        let l = self.sub(a, h);
        (h, l)
    }
    fn fcmp(&mut self, cc: FloatCC, a: Value, c: Value) -> Value {
        self.b.ins().fcmp(cc, a, c)
    }
    fn fcmpc(&mut self, cc: FloatCC, a: Value, k: f32) -> Value {
        let k = self.c(k);
        self.fcmp(cc, a, k)
    }
    fn icmpc(&mut self, cc: IntCC, a: Value, k: i64) -> Value {
        let k = self.ci_lane(k);
        self.b.ins().icmp(cc, a, k)
    }

    /// The C function `name` on each lane (vectors are split and rebuilt).
    fn per_lane(&mut self, name: &'static str, args: &[Value], call: &mut Call) -> Value {
        if !self.vector() {
            return call(self.b, name, args);
        }
        let mut out = args[0];
        for lane in 0..self.ty.lane_count() as u8 {
            let xs: Vec<Value> = args.iter().map(|&a| self.b.ins().extractlane(a, lane)).collect();
            let r = call(self.b, name, &xs);
            out = self.b.ins().insertlane(out, r, lane);
        }
        out
    }

    // ---- exact ops, any float type ----

    fn sign(&mut self, x: Value) -> Value {
        // ±1 for nonzero numbers; zeros and NaN stay.
        let one = self.c(1.0);
        let s = self.copysign(one, x);
        let a = fabs(self.b, x);
        let nz = self.fcmpc(FloatCC::GreaterThan, a, 0.0);
        self.sel(nz, s, x)
    }

    fn round_afz(&mut self, x: Value) -> Value {
        let t = self.b.ins().trunc(x);
        let d = self.sub(x, t);
        let d = fabs(self.b, d);
        let one = self.c(1.0);
        let s = self.copysign(one, x);
        let up = self.add(t, s);
        let half = self.fcmpc(FloatCC::GreaterThanOrEqual, d, 0.5);
        let r = self.sel(half, up, t);
        self.copysign(r, x)
    }

    // ---- f32 approximations only the JIT has (no native block versions) ----

    /// `x = k π/2 + r`: returns `r` and `k` (an integer lane).
    fn reduce_pio2(&mut self, x: Value) -> (Value, Value) {
        let shift = self.c(SHIFT);
        let t = self.madc(x, TWO_OVER_PI, shift);
        let k = self.sub(t, shift);
        let nk = fneg(self.b, k);
        let parts: &[f32] = if self.fma { &[PIO2_1, PIO2_2, PIO2_3] } else { &PIO2_12BIT };
        let mut r = x;
        for &p in parts {
            r = self.madc(nk, p, r);
        }
        let tb = self.bits(t);
        let shift_bits = self.ci(SHIFT_BITS);
        let ki = self.b.ins().isub(tb, shift_bits);
        (r, ki)
    }

    /// sin and cos of a reduced `|r| <= π/4`.
    fn sin_cos_kernel(&mut self, r: Value) -> (Value, Value) {
        let z = self.mul(r, r);
        let ps = self.poly(z, &SIN_P);
        let rz = self.mul(r, z);
        let s = self.mad(rz, ps, r);
        let pc = self.poly(z, &COS_P);
        let z2 = self.mul(z, z);
        let hz = self.mulc(z, 0.5);
        // cos = 1 - (z/2 - z² P).
        let w = fneg(self.b, z2);
        let w = self.mad(w, pc, hz);
        let one = self.c(1.0);
        let c = self.sub(one, w);
        (s, c)
    }

    /// sin (`phase` 0) or cos (`phase` 1): quadrant `k + phase` picks and signs.
    fn sin_cos(&mut self, x: Value, phase: i32) -> Value {
        let (r, k) = self.reduce_pio2(x);
        let (s, c) = self.sin_cos_kernel(r);
        let q = self.iaddc(k, phase);
        let one = self.ci(1);
        let odd = self.b.ins().band(q, one);
        let odd = self.icmpc(IntCC::NotEqual, odd, 0);
        let v = self.sel(odd, c, s);
        // Quadrants 2 and 3 negate: bit 1 of q into the sign bit.
        let two = self.ci(2);
        let neg = self.b.ins().band(q, two);
        let sign = self.b.ins().ishl_imm_u(neg, 30);
        let vb = self.bits(v);
        let vb = self.b.ins().bxor(vb, sign);
        let v = self.float(vb);
        // Beyond the reduction's range (|x| > 2^22) the value is wrong: keep it in [-1, 1].
        let v = self.max(v, -1.0);
        let v = self.min(v, 1.0);
        if phase == 0 {
            self.tiny_identity(x, v)
        } else {
            v
        }
    }

    /// `x` itself where `|x| < 2^-12` (sin and tan: the reduction's negative parts
    /// would turn -0 into +0; there `x` is the correctly rounded result anyway).
    fn tiny_identity(&mut self, x: Value, v: Value) -> Value {
        let a = fabs(self.b, x);
        let tiny = self.fcmpc(FloatCC::LessThan, a, 2.441_406_3e-4);
        self.sel(tiny, x, v)
    }

    fn tan(&mut self, x: Value) -> Value {
        let (r, k) = self.reduce_pio2(x);
        let (s, c) = self.sin_cos_kernel(r);
        // Even k: s/c; odd k: -c/s.
        let one = self.ci(1);
        let odd = self.b.ins().band(k, one);
        let odd = self.icmpc(IntCC::NotEqual, odd, 0);
        let ns = fneg(self.b, s);
        let num = self.sel(odd, c, s);
        let den = self.sel(odd, ns, c);
        let t = self.div(num, den);
        self.tiny_identity(x, t)
    }

    /// atan2(y, x), IEEE special cases included.
    fn atan2(&mut self, y: Value, x: Value) -> Value {
        let ax = fabs(self.b, x);
        let ay = fabs(self.b, y);
        let mn = self.b.ins().fmin(ax, ay);
        let mx = self.b.ins().fmax(ax, ay);
        let t = self.div(mn, mx);
        // 0/0 -> 0 (both zero), inf/inf -> 1 (both infinite).
        let zero_mx = self.fcmpc(FloatCC::Equal, mx, 0.0);
        let t = self.selc(zero_mx, 0.0, t);
        let inf_mn = self.fcmpc(FloatCC::Equal, mn, f32::INFINITY);
        let t = self.selc(inf_mn, 1.0, t);
        // atan t = π/4 + atan((t-1)/(t+1)) above tan(π/8).
        let big = self.fcmpc(FloatCC::GreaterThan, t, TAN_PI_8);
        let tm = self.addc(t, -1.0);
        let tp = self.addc(t, 1.0);
        let u2 = self.div(tm, tp);
        let u = self.sel(big, u2, t);
        let z = self.mul(u, u);
        let p = self.poly(z, &ATAN_P);
        let uz = self.mul(u, z);
        let at = self.mad(uz, p, u);
        let base_lo = self.c(PIO4_LO);
        let zero = self.c(0.0);
        let lo = self.sel(big, base_lo, zero);
        let at = self.add(at, lo);
        let base_hi = self.c(PIO4_HI);
        let hi = self.sel(big, base_hi, zero);
        let a = self.add(hi, at);
        // |y| > |x|: π/2 - a.
        let swap = self.fcmp(FloatCC::GreaterThan, ay, ax);
        let h_lo = self.c(PI_LO * 0.5);
        let d = self.sub(h_lo, a);
        let a2 = self.addc(d, PI_HI * 0.5);
        let a = self.sel(swap, a2, a);
        // x negative (-0 included): π - a.
        let xb = self.bits(x);
        let neg = self.icmpc(IntCC::SignedLessThan, xb, 0);
        let p_lo = self.c(PI_LO);
        let d = self.sub(p_lo, a);
        let a3 = self.addc(d, PI_HI);
        let a = self.sel(neg, a3, a);
        self.copysign(a, y)
    }

    /// `(hi, lo)` of `log2 |x|` (about 32 bits), for positive finite nonzero x.
    fn log2_hilo(&mut self, x: Value) -> (Value, Value) {
        let (ef, m) = split_exponent(self, x);
        let f = self.addc(m, -1.0);
        // q = 2f/(2+f) in two parts.
        let two = self.c(2.0);
        let dh = self.add(two, f);
        let dd = self.sub(two, dh);
        let dl = self.add(dd, f);
        let f2 = self.add(f, f);
        let qh = self.div(f2, dh);
        // rem = f2 - qh (dh + dl); f2 - qh·dh is exact (the quotient is close).
        let qd = self.mul(qh, dh);
        let qe = self.prod_err(qh, dh, qd);
        let rem = self.sub(f2, qd);
        let rem = self.sub(rem, qe);
        let nqh = fneg(self.b, qh);
        let rem = self.mad(nqh, dl, rem);
        let ql = self.div(rem, dh);
        // log(1+f) = q + (q/2)³ Q((q/2)²) = qh + (ql + tail).
        let s = self.mulc(qh, 0.5);
        let z = self.mul(s, s);
        let pq = self.poly(z, &LOG_Q);
        let sz = self.mul(s, z);
        let tail = self.mad(sz, pq, ql);
        // Times log2(e) in two parts.
        let l2h = self.c(LOG2E);
        let ph = self.mul(qh, l2h);
        let pe = self.prod_err(qh, l2h, ph);
        let t1 = self.mulc(tail, LOG2E);
        let t2 = self.madc(qh, LOG2E_LO, t1);
        let pl = self.add(pe, t2);
        // + e (exact): fast two-sum, |e| >= |ph| unless e = 0.
        let h = self.add(ef, ph);
        let eh = self.sub(ef, h);
        let c = self.add(eh, ph);
        let l = self.add(c, pl);
        // Renormalize so that |l| <= ulp(h)/2 (the tail above may exceed it), else
        // rounding y·h to an integer would leave the exp2 polynomial's range.
        let hn = self.add(h, l);
        let d = self.sub(h, hn);
        let ln = self.add(d, l);
        (hn, ln)
    }

    fn pow(&mut self, x: Value, y: Value) -> Value {
        let ax = fabs(self.b, x);
        let (lh, ll) = self.log2_hilo(ax);
        // z = y log2|x| = zh + zl.
        let zh = self.mul(y, lh);
        let ze = self.prod_err(y, lh, zh);
        let zl = self.mad(y, ll, ze);
        // Far out of range (or not finite): the low part is meaningless.
        let azh = fabs(self.b, zh);
        let inr = self.fcmpc(FloatCC::LessThan, azh, 200.0);
        // (Also where it overflowed: Dekker's split of a huge y, with log2|x| = 0.)
        let azl = fabs(self.b, zl);
        let zl_ok = self.fcmpc(FloatCC::LessThan, azl, 1.0);
        let inr = self.b.ins().band(inr, zl_ok);
        let zero = self.c(0.0);
        let zl = self.sel(inr, zl, zero);
        let zh = self.max(zh, -200.0);
        let zh = self.min(zh, 200.0);
        // exp2: n = round(zh), r = (zh - n + zl) ln2.
        let shift = self.c(SHIFT);
        let t = self.add(zh, shift);
        let n = self.sub(t, shift);
        let fr = self.sub(zh, n);
        let fr = self.add(fr, zl);
        let r = self.mulc(fr, LN2_HI + LN2_LO);
        let p = expm1_poly(self, r);
        let tb = self.bits(t);
        let shift_bits = self.ci(SHIFT_BITS);
        let ni = self.b.ins().isub(tb, shift_bits);
        let n1 = self.b.ins().sshr_imm_s(ni, 1);
        let n2 = self.b.ins().isub(ni, n1);
        let s1 = pow2i(self, n1, 127);
        let s2 = pow2i(self, n2, 127);
        let v = self.mad(p, s1, s1);
        let v = self.mul(v, s2);
        // |x| = 0 or inf: log2 gives ±inf, z = ±inf or NaN (y = 0 handled below).
        let xzero = self.fcmpc(FloatCC::Equal, ax, 0.0);
        let xinf = self.fcmpc(FloatCC::Equal, ax, f32::INFINITY);
        let ypos = self.fcmpc(FloatCC::GreaterThan, y, 0.0);
        let inf = self.c(f32::INFINITY);
        let big = self.sel(ypos, inf, zero); // x = inf
        let small = self.sel(ypos, zero, inf); // x = 0
        let v = self.sel(xinf, big, v);
        let v = self.sel(xzero, small, v);
        // Negative x (or -0): integer y gives the sign of y's parity, otherwise NaN.
        let yt = self.b.ins().trunc(y);
        let is_int = self.fcmp(FloatCC::Equal, yt, y);
        let hy = self.mulc(y, 0.5);
        let hyt = self.b.ins().trunc(hy);
        let half_int = self.fcmp(FloatCC::Equal, hyt, hy);
        let odd = self.b.ins().band_not(is_int, half_int);
        let nv = fneg(self.b, v);
        let signed = self.sel(odd, nv, v);
        let xb = self.bits(x);
        let xneg = self.icmpc(IntCC::SignedLessThan, xb, 0);
        let nan = self.c(f32::NAN);
        let neg_res = self.sel(is_int, signed, nan);
        // -0 and -inf with non-integer y: like +0 / +inf.
        let zi = self.b.ins().bor(xzero, xinf);
        let neg_res = self.sel(zi, signed, neg_res);
        let v = self.sel(xneg, neg_res, v);
        // |y| = inf: |x| = 1 gives 1 (x = -1 included); otherwise 0 or inf.
        let ay = fabs(self.b, y);
        let yinf = self.fcmpc(FloatCC::Equal, ay, f32::INFINITY);
        let gt1 = self.fcmpc(FloatCC::GreaterThan, ax, 1.0);
        let lt1 = self.fcmpc(FloatCC::LessThan, ax, 1.0);
        let grow = self.sel(ypos, gt1, lt1);
        let one = self.c(1.0);
        let yi = self.sel(grow, inf, zero);
        let eq1 = self.fcmpc(FloatCC::Equal, ax, 1.0);
        let yi = self.sel(eq1, one, yi);
        let v = self.sel(yinf, yi, v);
        // NaN in x or y gives NaN, except pow(1, y) = pow(x, 0) = 1.
        let un = self.fcmp(FloatCC::Unordered, x, y);
        let v = self.sel(un, nan, v);
        let x1 = self.fcmpc(FloatCC::Equal, x, 1.0);
        let y0 = self.fcmpc(FloatCC::Equal, y, 0.0);
        let ones = self.b.ins().bor(x1, y0);
        self.sel(ones, one, v)
    }

    fn cbrt(&mut self, x: Value) -> Value {
        let a = fabs(self.b, x);
        // Subnormals: scale by 2^24 (cbrt: 2^8).
        let tiny = self.fcmpc(FloatCC::LessThan, a, 1.175_494_4e-38);
        let scaled = self.mulc(a, 16_777_216.0);
        let a2 = self.sel(tiny, scaled, a);
        // Guess: a third of the exponent bits, rebiased; converted through float since
        // there is no vector integer division.
        let bits = self.bits(a2);
        let bf = self.b.ins().fcvt_from_sint(self.ty, bits);
        let third = self.mulc(bf, 1.0 / 3.0);
        let ti = self.b.ins().fcvt_to_sint_sat(self.ity, third);
        let g = self.iaddc(ti, 0x2A55_5556);
        let mut g = self.float(g);
        // Newton: g += (a/g² - g)/3, quadratic from a few percent: three steps.
        for _ in 0..3 {
            let g2 = self.mul(g, g);
            let q = self.div(a2, g2);
            let d = self.sub(q, g);
            g = self.madc(d, 1.0 / 3.0, g);
        }
        let unscale = self.c(1.0 / 256.0);
        let one = self.c(1.0);
        let k = self.sel(tiny, unscale, one);
        let y = self.mul(g, k);
        let y = self.copysign(y, x);
        // 0, inf and NaN are their own cube roots.
        let pos = self.fcmpc(FloatCC::GreaterThan, a, 0.0);
        let fin = self.fcmpc(FloatCC::LessThan, a, f32::INFINITY);
        let ok = self.b.ins().band(pos, fin);
        self.sel(ok, y, x)
    }
}
