//! `hloscope-approx`'s f32 approximations (exp, expm1, log, log1p, tanh, logistic, erf,
//! sin, cos, tan, cbrt, pow, atan2) in WebAssembly: its lane primitives implemented as instructions on locals, scalar
//! (`f32`) or SIMD128 (`f32x4`), so the kernels compute the CPU target's algorithms with
//! its measured (unfused) ulp bounds.
//!
//! WebAssembly has no fused multiply-add outside the relaxed-SIMD proposal (whose
//! results an engine may choose), so [`Lanes::mad`] is a multiply and an add: the
//! algorithms' unfused form, whose bounds `tests/cpu_math.rs` measures.

use super::emit::Code;
use crate::ir::{BinaryOp, UnaryOp};
use hloscope_approx::algorithms::{erf, exp_clamped, expm1, log, log1p, logistic, tanh};
use hloscope_approx::circular::{atan2, cbrt, cos, pow, sin, tan};
use hloscope_approx::{Cmp, Lanes};
use wasm_encoder::{Instruction as I, ValType};

/// The lane primitives as instructions appended to `code`; each result is a new local.
/// `vector`: `f32x4` lanes (masks are `i32x4` all-ones lanes), else scalar `f32`
/// (masks are `i32` 0/1).
pub struct WasmLanes<'c> {
    pub code: &'c mut Code,
    pub vector: bool,
}

impl WasmLanes<'_> {
    fn ty(&self) -> ValType {
        if self.vector {
            ValType::V128
        } else {
            ValType::F32
        }
    }
    fn ity(&self) -> ValType {
        if self.vector {
            ValType::V128
        } else {
            ValType::I32
        }
    }
    /// `op(a, b)` into a new local of type `ty`.
    fn bin(&mut self, ty: ValType, a: u32, b: u32, op: I<'static>) -> u32 {
        self.code.ops([I::LocalGet(a), I::LocalGet(b), op]);
        self.code.set_new(ty)
    }
    fn un(&mut self, ty: ValType, a: u32, op: I<'static>) -> u32 {
        self.code.ops([I::LocalGet(a), op]);
        self.code.set_new(ty)
    }
    /// An integer lane compared with zero: `scalar` or `vector`'s comparison.
    fn compare_zero(&mut self, a: u32, scalar: I<'static>, vector: I<'static>) -> u32 {
        let zero = if self.vector { I::V128Const(0) } else { I::I32Const(0) };
        let op = self.pick(scalar, vector);
        self.code.ops([I::LocalGet(a), zero, op]);
        let ty = self.ity();
        self.code.set_new(ty)
    }
    fn pick<'a>(&self, scalar: I<'a>, vector: I<'a>) -> I<'a> {
        if self.vector {
            vector
        } else {
            scalar
        }
    }
}

impl Lanes for WasmLanes<'_> {
    type F = u32;
    type I = u32;
    type Mask = u32;

    fn fused(&self) -> bool {
        false
    }
    fn c(&mut self, v: f32) -> u32 {
        self.code.op(I::F32Const(v.into()));
        if self.vector {
            self.code.op(I::F32x4Splat);
        }
        let ty = self.ty();
        self.code.set_new(ty)
    }
    fn ci(&mut self, v: i32) -> u32 {
        self.code.op(I::I32Const(v));
        if self.vector {
            self.code.op(I::I32x4Splat);
        }
        let ty = self.ity();
        self.code.set_new(ty)
    }
    fn sign_bit(&mut self) -> u32 {
        self.ci(i32::MIN)
    }
    fn add(&mut self, a: u32, b: u32) -> u32 {
        let op = self.pick(I::F32Add, I::F32x4Add);
        self.bin(self.ty(), a, b, op)
    }
    fn sub(&mut self, a: u32, b: u32) -> u32 {
        let op = self.pick(I::F32Sub, I::F32x4Sub);
        self.bin(self.ty(), a, b, op)
    }
    fn mul(&mut self, a: u32, b: u32) -> u32 {
        let op = self.pick(I::F32Mul, I::F32x4Mul);
        self.bin(self.ty(), a, b, op)
    }
    fn div(&mut self, a: u32, b: u32) -> u32 {
        let op = self.pick(I::F32Div, I::F32x4Div);
        self.bin(self.ty(), a, b, op)
    }
    /// Unfused: rounded after the multiply and after the add.
    fn mad(&mut self, a: u32, b: u32, c: u32) -> u32 {
        let p = self.mul(a, b);
        self.add(p, c)
    }
    fn abs(&mut self, a: u32) -> u32 {
        let op = self.pick(I::F32Abs, I::F32x4Abs);
        self.un(self.ty(), a, op)
    }
    fn neg(&mut self, a: u32) -> u32 {
        let op = self.pick(I::F32Neg, I::F32x4Neg);
        self.un(self.ty(), a, op)
    }
    /// WebAssembly's float comparisons are ordered (false where either is NaN).
    fn cmp(&mut self, cc: Cmp, a: u32, b: u32) -> u32 {
        let op = match (cc, self.vector) {
            (Cmp::Lt, false) => I::F32Lt,
            (Cmp::Gt, false) => I::F32Gt,
            (Cmp::Ge, false) => I::F32Ge,
            (Cmp::Eq, false) => I::F32Eq,
            (Cmp::Lt, true) => I::F32x4Lt,
            (Cmp::Gt, true) => I::F32x4Gt,
            (Cmp::Ge, true) => I::F32x4Ge,
            (Cmp::Eq, true) => I::F32x4Eq,
        };
        self.bin(self.ity(), a, b, op)
    }
    fn and(&mut self, a: u32, b: u32) -> u32 {
        let op = self.pick(I::I32And, I::V128And);
        self.bin(self.ity(), a, b, op)
    }
    fn sel(&mut self, m: u32, a: u32, b: u32) -> u32 {
        if self.vector {
            self.code.ops([I::LocalGet(a), I::LocalGet(b), I::LocalGet(m), I::V128Bitselect]);
        } else {
            self.code.ops([I::LocalGet(a), I::LocalGet(b), I::LocalGet(m), I::Select]);
        }
        let ty = self.ty();
        self.code.set_new(ty)
    }
    fn bits(&mut self, a: u32) -> u32 {
        if self.vector {
            return a;
        }
        self.un(ValType::I32, a, I::I32ReinterpretF32)
    }
    fn float(&mut self, a: u32) -> u32 {
        if self.vector {
            return a;
        }
        self.un(ValType::F32, a, I::F32ReinterpretI32)
    }
    fn iadd(&mut self, a: u32, b: u32) -> u32 {
        let op = self.pick(I::I32Add, I::I32x4Add);
        self.bin(self.ity(), a, b, op)
    }
    fn isub(&mut self, a: u32, b: u32) -> u32 {
        let op = self.pick(I::I32Sub, I::I32x4Sub);
        self.bin(self.ity(), a, b, op)
    }
    fn iand(&mut self, a: u32, b: u32) -> u32 {
        let op = self.pick(I::I32And, I::V128And);
        self.bin(self.ity(), a, b, op)
    }
    fn ior(&mut self, a: u32, b: u32) -> u32 {
        let op = self.pick(I::I32Or, I::V128Or);
        self.bin(self.ity(), a, b, op)
    }
    fn iandnot(&mut self, a: u32, b: u32) -> u32 {
        if self.vector {
            return self.bin(ValType::V128, a, b, I::V128AndNot);
        }
        self.code.ops([I::LocalGet(a), I::LocalGet(b), I::I32Const(-1), I::I32Xor, I::I32And]);
        self.code.set_new(ValType::I32)
    }
    fn shl(&mut self, a: u32, n: u32) -> u32 {
        let op = self.pick(I::I32Shl, I::I32x4Shl);
        self.code.ops([I::LocalGet(a), I::I32Const(n as i32), op]);
        let ty = self.ity();
        self.code.set_new(ty)
    }
    fn sshr(&mut self, a: u32, n: u32) -> u32 {
        let op = self.pick(I::I32ShrS, I::I32x4ShrS);
        self.code.ops([I::LocalGet(a), I::I32Const(n as i32), op]);
        let ty = self.ity();
        self.code.set_new(ty)
    }
    fn to_float(&mut self, a: u32) -> u32 {
        let op = self.pick(I::F32ConvertI32S, I::F32x4ConvertI32x4S);
        self.un(self.ty(), a, op)
    }
    fn trunc(&mut self, a: u32) -> u32 {
        let op = self.pick(I::F32Trunc, I::F32x4Trunc);
        self.un(self.ty(), a, op)
    }
    fn to_int(&mut self, a: u32) -> u32 {
        let op = self.pick(I::I32TruncSatF32S, I::I32x4TruncSatF32x4S);
        self.un(self.ity(), a, op)
    }
    fn nonzero(&mut self, a: u32) -> u32 {
        self.compare_zero(a, I::I32Ne, I::I32x4Ne)
    }
    fn negative(&mut self, a: u32) -> u32 {
        self.compare_zero(a, I::I32LtS, I::I32x4LtS)
    }
}

/// Whether f32 `op` is one of the approximations.
pub fn approximated(op: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(op, Exp | Expm1 | Log | Log1p | Tanh | Logistic | Erf | Sin | Cos | Tan | Cbrt)
}

/// f32 `op` of local `x` (scalar or `f32x4`), NaN passed through: the result's local.
pub fn unary(l: &mut WasmLanes, op: UnaryOp, x: u32) -> Option<u32> {
    use UnaryOp::*;
    let y = match op {
        Exp => exp_clamped(l, x),
        Expm1 => expm1(l, x),
        Log => log(l, x),
        Log1p => log1p(l, x),
        Tanh => tanh(l, x),
        Logistic => logistic(l, x, exp_clamped),
        Erf => erf(l, x, exp_clamped),
        Sin => sin(l, x),
        Cos => cos(l, x),
        Tan => tan(l, x),
        Cbrt => cbrt(l, x),
        _ => return None,
    };
    // x != x: NaN lanes keep their input.
    let nan = if l.vector { l.bin(ValType::V128, x, x, I::F32x4Ne) } else { l.bin(ValType::I32, x, x, I::F32Ne) };
    Some(l.sel(nan, x, y))
}

/// f32 pow or atan2 of locals `x`, `y` (scalar or `f32x4`): the result's local. Their
/// special cases (NaN included) are the algorithms' own.
pub fn binary(l: &mut WasmLanes, op: BinaryOp, x: u32, y: u32) -> Option<u32> {
    match op {
        BinaryOp::Pow => Some(pow(l, x, y)),
        BinaryOp::Atan2 => Some(atan2(l, x, y)),
        _ => None,
    }
}
