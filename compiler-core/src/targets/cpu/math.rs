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
//! multiply-adds are both fused or both not. sin, cos, tan, atan2, pow and cbrt are the
//! crate's too (`hloscope_approx::circular`), without native block versions.
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
use hloscope_approx::algorithms::{erf, exp_clamped, exp_fast, exp_fast_limit, expm1, log, log1p, logistic, tanh};
use hloscope_approx::circular::{atan2, cbrt, cos, pow, sin, tan};
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
        Sin => sin(&mut m, x),
        Cos => cos(&mut m, x),
        Tan => tan(&mut m, x),
        Cbrt => cbrt(&mut m, x),
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
            BinaryOp::Pow => return Some(pow(&mut m, x, y)),
            BinaryOp::Atan2 => return Some(atan2(&mut m, x, y)),
            _ => {}
        }
    }
    let name = *binary_calls(op, ty).first()?;
    Some(m.per_lane(name, &[x, y], call))
}

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
    fn trunc(&mut self, a: Value) -> Value {
        self.b.ins().trunc(a)
    }
    fn to_int(&mut self, a: Value) -> Value {
        self.b.ins().fcvt_to_sint_sat(self.ity, a)
    }
    fn nonzero(&mut self, a: Value) -> Value {
        self.icmpc(IntCC::NotEqual, a, 0)
    }
    fn negative(&mut self, a: Value) -> Value {
        self.icmpc(IntCC::SignedLessThan, a, 0)
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
}
