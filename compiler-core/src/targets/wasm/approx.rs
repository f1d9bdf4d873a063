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
use hloscope_approx::algorithms::{erf, exp_clamped, exp_fast, exp_fast_limit, expm1, log, log1p, logistic, tanh};
use hloscope_approx::circular::{atan2, cbrt, cos, pow, sin, tan};
use hloscope_approx::{Cmp, Lanes};
use wasm_encoder::{BlockType, Instruction as I, ValType};

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
        if self.vector {
            return self.code.splat_constant(v.to_bits());
        }
        self.code.op(I::F32Const(v.into()));
        self.code.set_new(ValType::F32)
    }
    fn ci(&mut self, v: i32) -> u32 {
        if self.vector {
            return self.code.splat_constant(v as u32);
        }
        self.code.op(I::I32Const(v));
        self.code.set_new(ValType::I32)
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
        if self.vector {
            return sign_bits(self.code, a, false);
        }
        self.un(ValType::F32, a, I::F32Abs)
    }
    fn neg(&mut self, a: u32) -> u32 {
        if self.vector {
            return sign_bits(self.code, a, true);
        }
        self.un(ValType::F32, a, I::F32Neg)
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

    // Overrides of the conveniences, each with the default's bits in fewer instructions.

    /// [`max_min_pick`]: the default's compare and select exactly, one `minps` on
    /// vectors where the select is a blend.
    fn min(&mut self, a: u32, k: f32) -> u32 {
        let kv = self.c(k);
        let ty = self.ty();
        max_min_pick(self.code, ty, a, kv, false)
    }
    /// [`max_min_pick`], as [`Lanes::min`].
    fn max(&mut self, a: u32, k: f32) -> u32 {
        let kv = self.c(k);
        let ty = self.ty();
        max_min_pick(self.code, ty, a, kv, true)
    }
    /// Selecting `+0` where the mask is set clears those lanes: one `andnot`.
    fn selc(&mut self, m: u32, k: f32, b: u32) -> u32 {
        if self.vector && k.to_bits() == 0 {
            return self.bin(ValType::V128, b, m, I::V128AndNot);
        }
        let kv = self.c(k);
        self.sel(m, kv, b)
    }
}

/// `max` (`x < k ? k : x`) or min (`k < x ? k : x`) of locals of type `ty` (`v128` of
/// f32 lanes, `f32` or `f64`): `f32x4.pmax`/`pmin` on vectors, which are these selects
/// exactly (one `maxps`/`minps`; `f32x4.max` orders NaNs and zeros in eight), a compare
/// and `select` on scalars.
pub fn max_min_pick(code: &mut Code, ty: ValType, x: u32, k: u32, max: bool) -> u32 {
    let (lo, hi) = if max { (x, k) } else { (k, x) };
    match ty {
        ValType::V128 => code.ops([I::LocalGet(x), I::LocalGet(k), if max { I::F32x4PMax } else { I::F32x4PMin }]),
        ValType::F64 => {
            code.ops([I::LocalGet(k), I::LocalGet(x), I::LocalGet(lo), I::LocalGet(hi), I::F64Lt, I::Select])
        }
        _ => code.ops([I::LocalGet(k), I::LocalGet(x), I::LocalGet(lo), I::LocalGet(hi), I::F32Lt, I::Select]),
    }
    code.set_new(ty)
}

/// `-a` (`negate`) or `|a|` of f32 lanes as one bitwise op with a constant: Cranelift
/// builds `f32x4.neg`'s and `f32x4.abs`'s sign mask in registers each time (three
/// instructions); an `xor`/`and` with a constant reads it.
pub fn sign_bits(code: &mut Code, a: u32, negate: bool) -> u32 {
    let mask = code.splat_constant(if negate { 0x8000_0000 } else { 0x7FFF_FFFF });
    code.ops([I::LocalGet(a), I::LocalGet(mask), if negate { I::V128Xor } else { I::V128And }]);
    code.set_new(ValType::V128)
}

/// Whether f32 `op` is one of the approximations.
pub fn approximated(op: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(op, Exp | Expm1 | Log | Log1p | Tanh | Logistic | Erf | Sin | Cos | Tan | Cbrt)
}

/// f32 `op` of local `x` (scalar or `f32x4`): the result's local. NaN gives NaN, as the
/// algorithms do on the CPU target.
pub fn unary(l: &mut WasmLanes, op: UnaryOp, x: u32) -> Option<u32> {
    use UnaryOp::*;
    Some(match op {
        Exp => exp(l, x),
        Expm1 => expm1(l, x),
        Log => log(l, x),
        Log1p => log1p(l, x),
        Tanh => tanh(l, x),
        Logistic => logistic(l, x, exp),
        Erf => erf(l, x, exp),
        Sin => sin(l, x),
        Cos => cos(l, x),
        Tan => tan(l, x),
        Cbrt => cbrt(l, x),
        _ => return None,
    })
}

/// exp as the CPU target's: [`exp_fast`] where every lane is in its range (NaN
/// included), else [`exp_clamped`]; a branch taken by the whole vector when any lane
/// needs the clamped form, so the common case pays a compare and a test.
fn exp(l: &mut WasmLanes, x: u32) -> u32 {
    let a = l.abs(x);
    let rare = l.cmpc(Cmp::Gt, a, exp_fast_limit(l.fused()));
    let ty = l.ty();
    let y = l.code.local(ty);
    l.code.op(I::LocalGet(rare));
    if l.vector {
        l.code.op(I::V128AnyTrue);
    }
    // The fast form first: it is the fall-through of the branch.
    l.code.ops([I::I32Eqz, I::If(BlockType::Empty)]);
    let fast = exp_fast(l, x);
    l.code.ops([I::LocalGet(fast), I::LocalSet(y), I::Else]);
    let clamped = exp_clamped(l, x);
    l.code.ops([I::LocalGet(clamped), I::LocalSet(y), I::End]);
    y
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
