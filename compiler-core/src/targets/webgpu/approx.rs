//! `hloscope-approx`'s f32 approximations (exp, expm1, log, log1p, tanh, logistic, erf,
//! sin, cos, tan, cbrt, atan2) in WGSL: its lane primitives implemented as WGSL
//! statements, one `let` per primitive, so the shaders compute the same algorithms as
//! the CPU target, with their measured ulp bounds, instead of WGSL's built-ins (whose
//! accuracy the spec leaves loose: `exp` within `3 + 2|x|` ulp) or hand-written series.
//!
//! The multiply-adds are written unfused (`a * b + c`): WGSL has no guaranteed-fused
//! multiply-add. A driver may still contract them, which only makes them more exact; it
//! may also reassociate, which the range reduction's rounding trick does not survive, so
//! that rounds with WGSL's `round` ([`Lanes::round_scaled`]).

use crate::ir::{BinaryOp, UnaryOp};
use hloscope_approx::algorithms::{erf, exp_clamped, expm1, log, log1p_reassociable, logistic, tanh, SHIFT};
use hloscope_approx::circular::{atan2, cbrt, cos, sin, tan};
use hloscope_approx::{Cmp, Lanes};
use std::fmt::Write;

/// A named WGSL value (`a{n}`) of the lane being written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tmp(u32);

/// WGSL statements for the lane primitives, appended to `out` at indentation `pad`;
/// `next` numbers the names (shared by every call in one shader).
pub struct WgslLanes<'w> {
    pub out: &'w mut String,
    pub pad: &'w str,
    pub next: &'w mut u32,
}

impl WgslLanes<'_> {
    fn let_(&mut self, ty: &str, expr: std::fmt::Arguments) -> Tmp {
        let n = *self.next;
        *self.next += 1;
        let _ = writeln!(self.out, "{}let a{n}: {ty} = {expr};", self.pad);
        Tmp(n)
    }

    fn f(&mut self, expr: std::fmt::Arguments) -> Tmp {
        self.let_("f32", expr)
    }

    fn i(&mut self, expr: std::fmt::Arguments) -> Tmp {
        self.let_("i32", expr)
    }

    /// The value of WGSL expression `x`, named.
    pub fn input(&mut self, x: &str) -> Tmp {
        self.f(format_args!("{x}"))
    }
}

impl std::fmt::Display for Tmp {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a{}", self.0)
    }
}

/// An f32 literal WGSL reads back to the same bits: subnormal values through their bits,
/// and non-finite ones through the shader's `f32_bits` function, since a constant
/// expression that evaluates to an infinity or a NaN is an error in WGSL (Chromium's
/// compiler refuses `bitcast<f32>(0xff800000u)`; naga lets it pass) and a function call
/// is not a constant expression.
pub fn f32_literal(v: f32) -> String {
    if v.is_finite() && (v == 0.0 || v.abs() >= f32::MIN_POSITIVE) {
        format!("{v:?}f")
    } else if v.is_finite() {
        format!("bitcast<f32>({:#010x}u)", v.to_bits())
    } else {
        format!("f32_bits({:#010x}u)", v.to_bits())
    }
}

impl Lanes for WgslLanes<'_> {
    type F = Tmp;
    type I = Tmp;
    type Mask = Tmp;

    fn fused(&self) -> bool {
        false
    }
    fn c(&mut self, v: f32) -> Tmp {
        let lit = f32_literal(v);
        self.f(format_args!("{lit}"))
    }
    fn ci(&mut self, v: i32) -> Tmp {
        self.i(format_args!("bitcast<i32>({:#010x}u)", v as u32))
    }
    fn sign_bit(&mut self) -> Tmp {
        self.i(format_args!("bitcast<i32>(0x80000000u)"))
    }
    fn add(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.f(format_args!("{a} + {b}"))
    }
    fn sub(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.f(format_args!("{a} - {b}"))
    }
    fn mul(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.f(format_args!("{a} * {b}"))
    }
    fn div(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.f(format_args!("{a} / {b}"))
    }
    fn mad(&mut self, a: Tmp, b: Tmp, c: Tmp) -> Tmp {
        self.f(format_args!("{a} * {b} + {c}"))
    }
    fn abs(&mut self, a: Tmp) -> Tmp {
        self.f(format_args!("abs({a})"))
    }
    fn neg(&mut self, a: Tmp) -> Tmp {
        self.f(format_args!("-{a}"))
    }
    fn cmp(&mut self, cc: Cmp, a: Tmp, b: Tmp) -> Tmp {
        let op = match cc {
            Cmp::Lt => "<",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Eq => "==",
        };
        // Ordered, as the trait wants: false where either is NaN (WGSL may assume no
        // NaN in its own comparisons).
        self.let_("bool", format_args!("{a} {op} {b} && !is_nan({a}) && !is_nan({b})"))
    }
    fn and(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.let_("bool", format_args!("{a} && {b}"))
    }
    fn sel(&mut self, m: Tmp, a: Tmp, b: Tmp) -> Tmp {
        self.f(format_args!("select({b}, {a}, {m})"))
    }
    fn bits(&mut self, a: Tmp) -> Tmp {
        self.i(format_args!("bitcast<i32>({a})"))
    }
    fn float(&mut self, a: Tmp) -> Tmp {
        self.f(format_args!("bitcast<f32>({a})"))
    }
    fn iadd(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.i(format_args!("{a} + {b}"))
    }
    fn isub(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.i(format_args!("{a} - {b}"))
    }
    fn iand(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.i(format_args!("{a} & {b}"))
    }
    fn ior(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.i(format_args!("{a} | {b}"))
    }
    fn iandnot(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.i(format_args!("{a} & ~{b}"))
    }
    fn shl(&mut self, a: Tmp, n: u32) -> Tmp {
        self.i(format_args!("{a} << {n}u"))
    }
    fn sshr(&mut self, a: Tmp, n: u32) -> Tmp {
        self.i(format_args!("{a} >> {n}u"))
    }
    fn to_float(&mut self, a: Tmp) -> Tmp {
        self.f(format_args!("f32({a})"))
    }
    fn trunc(&mut self, a: Tmp) -> Tmp {
        self.f(format_args!("trunc({a})"))
    }
    /// WGSL's conversion rounds toward zero and clamps.
    fn to_int(&mut self, a: Tmp) -> Tmp {
        self.i(format_args!("i32({a})"))
    }
    /// Through `round`: drivers fold the default's `(x·k + SHIFT) - SHIFT` to `x·k`.
    fn round_scaled(&mut self, x: Tmp, k: f32) -> (Tmp, Tmp) {
        let k = f32_literal(k);
        let n = self.f(format_args!("round({x} * {k})"));
        let shift = f32_literal(SHIFT);
        let t = self.f(format_args!("{n} + {shift}"));
        (t, n)
    }
}

/// Whether f32 `op` is one of the approximations.
pub fn approximated(op: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(op, Exp | Expm1 | Log | Log1p | Tanh | Logistic | Erf | Sin | Cos | Tan | Cbrt)
}

/// Writes f32 `op` of WGSL expression `x` as statements; returns the result's name.
/// A NaN argument gives NaN whatever the driver assumes about NaN.
pub fn unary(l: &mut WgslLanes, op: UnaryOp, x: &str) -> Option<Tmp> {
    use UnaryOp::*;
    let a = l.input(x);
    let y = match op {
        Exp => exp_clamped(l, a),
        Expm1 => expm1(l, a),
        Log => log(l, a),
        Log1p => log1p_reassociable(l, a),
        Tanh => tanh(l, a),
        Logistic => logistic(l, a, exp_clamped),
        Erf => erf(l, a, exp_clamped),
        Sin => sin(l, a),
        Cos => cos(l, a),
        Tan => tan(l, a),
        Cbrt => cbrt(l, a),
        _ => return None,
    };
    Some(l.f(format_args!("select({y}, {a}, is_nan({a}))")))
}

/// Writes f32 atan2 of WGSL expressions `y`, `x` as statements; returns the result's
/// name. Its special cases (NaN included) are the algorithm's own, built from
/// comparisons that are false for NaN whatever the driver assumes.
///
/// Not pow: its `log2` is carried in two floats by compensated sums (`e = (a + b) - a`
/// and the like), which shader compilers may fold away (Mesa's does, as it folds
/// `(x + SHIFT) - SHIFT`: WGSL has no way to mark arithmetic exact). pow runs on the
/// host until a form without them meets its bound on the device.
pub fn binary(l: &mut WgslLanes, op: BinaryOp, y: &str, x: &str) -> Option<Tmp> {
    if op != BinaryOp::Atan2 {
        return None;
    }
    let (a, b) = (l.input(y), l.input(x));
    Some(atan2(l, a, b))
}
