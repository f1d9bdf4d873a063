//! `hloscope-approx`'s f32 approximations (exp, expm1, log, log1p, tanh, logistic, erf)
//! in CUDA C: its lane primitives implemented as CUDA C statements, one `const` per
//! primitive, so the kernels compute the same algorithms as the CPU target and WGSL,
//! with their measured ulp bounds, rather than CUDA's `expf`/`tanhf` (whose bounds are
//! NVIDIA's and differ from the other targets').
//!
//! The multiply-adds are `fmaf` (fused, as on the CPU target with FMA): NVRTC is run
//! with `--fmad=false`, so nothing else is contracted and the range reduction's
//! `(x·k + SHIFT) - SHIFT` rounding trick survives (no fast-math reassociation).

use crate::ir::UnaryOp;
use hloscope_approx::algorithms::{erf, exp_clamped, expm1, log, log1p, logistic, tanh};
use hloscope_approx::{Cmp, Lanes};
use std::fmt::Write;

/// A named CUDA C value (`a{n}`) of the lane being written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tmp(u32);

impl std::fmt::Display for Tmp {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a{}", self.0)
    }
}

/// CUDA C statements for the lane primitives, appended to `out` at indentation `pad`;
/// `next` numbers the names (shared by every call in one kernel).
pub struct CudaLanes<'w> {
    pub out: &'w mut String,
    pub pad: &'w str,
    pub next: &'w mut u32,
}

impl CudaLanes<'_> {
    fn let_(&mut self, ty: &str, expr: std::fmt::Arguments) -> Tmp {
        let n = *self.next;
        *self.next += 1;
        let _ = writeln!(self.out, "{}const {ty} a{n} = {expr};", self.pad);
        Tmp(n)
    }

    fn f(&mut self, expr: std::fmt::Arguments) -> Tmp {
        self.let_("float", expr)
    }

    fn i(&mut self, expr: std::fmt::Arguments) -> Tmp {
        self.let_("int", expr)
    }

    /// The value of CUDA C expression `x`, named.
    pub fn input(&mut self, x: &str) -> Tmp {
        self.f(format_args!("{x}"))
    }
}

/// An f32 literal NVRTC reads back to the same bits: finite normal values and zeros as
/// decimal (Rust's shortest round-trip form), subnormal and non-finite ones by their
/// bits.
pub fn f32_literal(v: f32) -> String {
    if v.is_finite() && (v == 0.0 || v.abs() >= f32::MIN_POSITIVE) {
        format!("{v:?}f")
    } else {
        format!("__int_as_float({:#010x})", v.to_bits())
    }
}

impl Lanes for CudaLanes<'_> {
    type F = Tmp;
    type I = Tmp;
    type Mask = Tmp;

    fn fused(&self) -> bool {
        true
    }
    fn c(&mut self, v: f32) -> Tmp {
        let lit = f32_literal(v);
        self.f(format_args!("{lit}"))
    }
    fn ci(&mut self, v: i32) -> Tmp {
        self.i(format_args!("(int){:#010x}u", v as u32))
    }
    fn sign_bit(&mut self) -> Tmp {
        self.i(format_args!("(int)0x80000000u"))
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
        self.f(format_args!("fmaf({a}, {b}, {c})"))
    }
    fn abs(&mut self, a: Tmp) -> Tmp {
        self.f(format_args!("fabsf({a})"))
    }
    fn neg(&mut self, a: Tmp) -> Tmp {
        self.f(format_args!("-{a}"))
    }
    /// C's float comparisons are ordered already (false where either is NaN).
    fn cmp(&mut self, cc: Cmp, a: Tmp, b: Tmp) -> Tmp {
        let op = match cc {
            Cmp::Lt => "<",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Eq => "==",
        };
        self.let_("bool", format_args!("{a} {op} {b}"))
    }
    fn and(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.let_("bool", format_args!("{a} && {b}"))
    }
    fn sel(&mut self, m: Tmp, a: Tmp, b: Tmp) -> Tmp {
        self.f(format_args!("{m} ? {a} : {b}"))
    }
    fn bits(&mut self, a: Tmp) -> Tmp {
        self.i(format_args!("__float_as_int({a})"))
    }
    fn float(&mut self, a: Tmp) -> Tmp {
        self.f(format_args!("__int_as_float({a})"))
    }
    /// Wrapping, through unsigned arithmetic (signed overflow is undefined in C++).
    fn iadd(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.i(format_args!("(int)((unsigned)({a}) + (unsigned)({b}))"))
    }
    fn isub(&mut self, a: Tmp, b: Tmp) -> Tmp {
        self.i(format_args!("(int)((unsigned)({a}) - (unsigned)({b}))"))
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
        self.i(format_args!("(int)((unsigned)({a}) << {n})"))
    }
    fn sshr(&mut self, a: Tmp, n: u32) -> Tmp {
        self.i(format_args!("{a} >> {n}"))
    }
    fn to_float(&mut self, a: Tmp) -> Tmp {
        self.f(format_args!("(float)({a})"))
    }
    fn trunc(&mut self, a: Tmp) -> Tmp {
        self.f(format_args!("truncf({a})"))
    }
    /// Rounds toward zero, saturating.
    fn to_int(&mut self, a: Tmp) -> Tmp {
        self.i(format_args!("__float2int_rz({a})"))
    }
}

/// Whether f32 `op` is one of the approximations.
pub fn approximated(op: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(op, Exp | Expm1 | Log | Log1p | Tanh | Logistic | Erf)
}

/// Writes f32 `op` of CUDA C expression `x` as statements; returns the result's name.
pub fn unary(l: &mut CudaLanes, op: UnaryOp, x: &str) -> Option<Tmp> {
    use UnaryOp::*;
    let a = l.input(x);
    let y = match op {
        Exp => exp_clamped(l, a),
        Expm1 => expm1(l, a),
        Log => log(l, a),
        Log1p => log1p(l, a),
        Tanh => tanh(l, a),
        Logistic => logistic(l, a, exp_clamped),
        Erf => erf(l, a, exp_clamped),
        _ => return None,
    };
    Some(l.f(format_args!("isnan({a}) ? {a} : {y}")))
}
