//! The module's own helper functions, the same in every module that has an f16 or bf16
//! value (function indices [`F32_TO_F16`] ... before the kernels'; a module without
//! one has none, and its kernels start at function 0): the f16 and bf16 conversions,
//! rounded to nearest even as the `half` crate (and so the interpreter) rounds, and the
//! f64 to f32 rounding to odd that makes f64 → f16/bf16 round once. (The f32 GEMM body
//! every f32 dot kernel calls is not one of them: it lives in the GEMM library,
//! [`super::gemm::library`].) After them come the scalar approximations the module's
//! kernels call ([`Approximations`]).

use super::emit::Code;
use crate::ir::{BinaryOp, UnaryOp};
use wasm_encoder::{BlockType, Function, Instruction as I, ValType};

/// A function's (params, results).
pub type Signature = (Vec<ValType>, Vec<ValType>);

/// `(f32) -> i32`: the f16 bits of an f32, rounded to nearest even (NaN stays a quiet
/// NaN with the top of its payload).
pub const F32_TO_F16: u32 = 0;
/// `(i32) -> f32`: the f32 value of f16 bits (exact).
pub const F16_TO_F32: u32 = 1;
/// `(f32) -> i32`: the bf16 bits of an f32, rounded to nearest even.
pub const F32_TO_BF16: u32 = 2;
/// `(f64) -> f32`: rounded to odd (toward zero, the last bit set when inexact), so
/// that rounding it again to a narrower float gives the f64 rounded once.
pub const F64_TO_F32_ODD: u32 = 3;
/// How many helpers there are.
pub const COUNT: u32 = 4;

/// The helpers' signatures (params, results), in function-index order.
pub fn signatures() -> [Signature; COUNT as usize] {
    use ValType::*;
    [(vec![F32], vec![I32]), (vec![I32], vec![F32]), (vec![F32], vec![I32]), (vec![F64], vec![F32])]
}

/// The helpers' bodies, in function-index order; none without an f16 or bf16 value in
/// the program (`narrow_floats` false), where no kernel calls them. Even stubs cost
/// there: V8 compiled a one-dot program's module in 0.13 to 0.24 ms with four of them,
/// 0.10 to 0.15 without.
pub fn bodies(narrow_floats: bool) -> Vec<Function> {
    if narrow_floats {
        return vec![f32_to_f16(), f16_to_f32(), f32_to_bf16(), f64_to_f32_odd()];
    }
    vec![]
}

/// Whether any value of `module` (in any computation) is f16 or bf16: what makes its
/// kernels call the helpers (f64 → f32 rounded to odd serves only f64 → f16/bf16).
pub fn needed(module: &crate::ir::Module) -> bool {
    use crate::ir::ElementType::{BF16, F16};
    let narrow = |i: &crate::ir::Instruction| i.ty.leaves().any(|s| matches!(s.elem, F16 | BF16));
    module.comps.values().any(|c| c.insts.values().any(narrow))
}

fn f32_to_f16() -> Function {
    let mut c = Code::new(1);
    // b: the bits; s: the sign at bit 15; a: |b|.
    let (b, s, a) = (c.local(ValType::I32), c.local(ValType::I32), c.local(ValType::I32));
    c.ops([I::LocalGet(0), I::I32ReinterpretF32, I::LocalSet(b)]);
    c.ops([I::LocalGet(b), I::I32Const(16), I::I32ShrU, I::I32Const(0x8000), I::I32And, I::LocalSet(s)]);
    c.ops([I::LocalGet(b), I::I32Const(0x7fff_ffff), I::I32And, I::LocalSet(a)]);
    // NaN: quiet, the payload's top bits.
    c.ops([I::LocalGet(a), I::I32Const(0x7f80_0000), I::I32GtU, I::If(BlockType::Empty)]);
    c.ops([I::LocalGet(s), I::I32Const(0x7e00), I::I32Or, I::LocalGet(a), I::I32Const(13), I::I32ShrU]);
    c.ops([I::I32Const(0x3ff), I::I32And, I::I32Or, I::Return, I::End]);
    // From 65520 (half-way past the largest f16) up: infinity.
    c.ops([I::LocalGet(a), I::I32Const(0x477f_f000), I::I32GeU, I::If(BlockType::Empty)]);
    c.ops([I::LocalGet(s), I::I32Const(0x7c00), I::I32Or, I::Return, I::End]);
    // Normal f16: rebias the exponent (127 - 15 = 112), round the 13 dropped bits.
    c.ops([I::LocalGet(a), I::I32Const(0x3880_0000), I::I32GeU, I::If(BlockType::Empty)]);
    c.ops([I::LocalGet(a), I::I32Const(0x3800_0000), I::I32Sub, I::LocalTee(a), I::I32Const(0xfff), I::I32Add]);
    c.ops([I::LocalGet(a), I::I32Const(13), I::I32ShrU, I::I32Const(1), I::I32And, I::I32Add]);
    c.ops([I::I32Const(13), I::I32ShrU, I::LocalGet(s), I::I32Or, I::Return, I::End]);
    // Subnormal or zero: adding 0.5 (whose ulp is f16's smallest subnormal, 2^-24)
    // rounds to a multiple of it, which the low bits then count.
    c.ops([I::LocalGet(a), I::F32ReinterpretI32, I::F32Const(0.5f32.into()), I::F32Add, I::I32ReinterpretF32]);
    c.ops([I::I32Const(0x3f00_0000), I::I32Sub, I::LocalGet(s), I::I32Or]);
    c.finish()
}

fn f16_to_f32() -> Function {
    let mut c = Code::new(1);
    let (s, e) = (c.local(ValType::I32), c.local(ValType::I32));
    c.ops([I::LocalGet(0), I::I32Const(0x8000), I::I32And, I::I32Const(16), I::I32Shl, I::LocalSet(s)]);
    c.ops([I::LocalGet(0), I::I32Const(10), I::I32ShrU, I::I32Const(0x1f), I::I32And, I::LocalSet(e)]);
    // Infinity and NaN.
    c.ops([I::LocalGet(e), I::I32Const(0x1f), I::I32Eq, I::If(BlockType::Empty)]);
    c.ops([I::LocalGet(s), I::I32Const(0x7f80_0000), I::I32Or, I::LocalGet(0), I::I32Const(0x3ff), I::I32And]);
    c.ops([I::I32Const(13), I::I32Shl, I::I32Or, I::F32ReinterpretI32, I::Return, I::End]);
    // Subnormal and zero: the mantissa times 2^-24, exactly.
    c.ops([I::LocalGet(e), I::I32Eqz, I::If(BlockType::Empty)]);
    c.ops([
        I::LocalGet(0),
        I::I32Const(0x3ff),
        I::I32And,
        I::F32ConvertI32U,
        I::F32Const((1.0f32 / 16_777_216.0).into()),
    ]);
    c.ops([I::F32Mul, I::I32ReinterpretF32, I::LocalGet(s), I::I32Or, I::F32ReinterpretI32, I::Return, I::End]);
    // Normal: exponent and mantissa moved up, the exponent rebiased by 112.
    c.ops([I::LocalGet(0), I::I32Const(0x7fff), I::I32And, I::I32Const(13), I::I32Shl, I::I32Const(0x3800_0000)]);
    c.ops([I::I32Add, I::LocalGet(s), I::I32Or, I::F32ReinterpretI32]);
    c.finish()
}

fn f32_to_bf16() -> Function {
    let mut c = Code::new(1);
    let b = c.local(ValType::I32);
    c.ops([I::LocalGet(0), I::I32ReinterpretF32, I::LocalSet(b)]);
    c.ops([I::LocalGet(b), I::I32Const(0x7fff_ffff), I::I32And, I::I32Const(0x7f80_0000), I::I32GtU]);
    c.ops([I::If(BlockType::Empty), I::LocalGet(b), I::I32Const(16), I::I32ShrU, I::I32Const(0x40), I::I32Or]);
    c.ops([I::Return, I::End]);
    c.ops([I::LocalGet(b), I::I32Const(0x7fff), I::I32Add, I::LocalGet(b), I::I32Const(16), I::I32ShrU]);
    c.ops([I::I32Const(1), I::I32And, I::I32Add, I::I32Const(16), I::I32ShrU]);
    c.finish()
}

fn f64_to_f32_odd() -> Function {
    let mut c = Code::new(1);
    let (f, b) = (c.local(ValType::F32), c.local(ValType::I32));
    c.ops([I::LocalGet(0), I::F32DemoteF64, I::LocalSet(f)]);
    // Inexact (NaN aside: NaN != NaN).
    c.ops([I::LocalGet(f), I::F64PromoteF32, I::LocalGet(0), I::F64Ne, I::LocalGet(0), I::LocalGet(0), I::F64Eq]);
    c.ops([I::I32And, I::If(BlockType::Empty)]);
    c.ops([I::LocalGet(f), I::I32ReinterpretF32, I::LocalSet(b)]);
    // Rounded away from zero: one step back toward it.
    c.ops([I::LocalGet(f), I::F64PromoteF32, I::F64Abs, I::LocalGet(0), I::F64Abs, I::F64Gt, I::If(BlockType::Empty)]);
    c.ops([I::LocalGet(b), I::I32Const(1), I::I32Sub, I::LocalSet(b), I::End]);
    c.ops([I::LocalGet(b), I::I32Const(1), I::I32Or, I::F32ReinterpretI32, I::LocalSet(f), I::End]);
    c.op(I::LocalGet(f));
    c.finish()
}

/// An f32 approximation ([`super::approx`]) that scalar code calls as a function of the
/// module rather than inlining: a unary op, or pow and atan2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approximation {
    Unary(UnaryOp),
    Binary(BinaryOp),
}

/// The scalar approximations of a module, each a function after the narrow-float
/// helpers, as the CPU target's scalar code calls the C library: a program's scalar
/// code (a rank-0 kernel, a vector loop's tail) holds each polynomial once, however many
/// kernels compute it (two rank-0 pows were 1,750 of an Adam update's 2,100 lines). The
/// vector code keeps its approximations inline, where a call per vector would cost
/// more than it saves. Found before the kernels are emitted (their calls name the
/// functions), so one that no kernel ends up calling (an op only in vector loops
/// without a tail) is a stub, which costs nothing to compile.
#[derive(Clone, Debug, Default)]
pub struct Approximations {
    /// The function index of the first.
    first: u32,
    ops: Vec<Approximation>,
}

impl Approximations {
    /// The approximations `plan`'s elemental kernels compute (f32, f16 or bf16 values,
    /// all computed in f32), in plan order, as functions from index `first`.
    pub fn of(plan: &crate::kernel::KernelPlan, first: u32) -> Approximations {
        use crate::ir::ElementType::{BF16, F16, F32};
        use crate::kernel::elemental::Node;
        let mut ops = Vec::new();
        for k in &plan.kernels {
            let crate::kernel::KernelBody::Elemental(e) = &k.body else { continue };
            for x in e.nodes.iter().filter(|x| matches!(x.elem, F32 | F16 | BF16)) {
                let op = match x.node {
                    Node::Unary(op, _) if super::approx::approximated(op) => Approximation::Unary(op),
                    Node::Binary(op @ (BinaryOp::Pow | BinaryOp::Atan2), _, _) => Approximation::Binary(op),
                    _ => continue,
                };
                if !ops.contains(&op) {
                    ops.push(op);
                }
            }
        }
        Approximations { first, ops }
    }

    /// The function index of `op`'s scalar approximation, if the module has one.
    pub fn index(&self, op: Approximation) -> Option<u32> {
        self.ops.iter().position(|&o| o == op).map(|i| self.first + i as u32)
    }

    /// How many functions they are.
    pub fn count(&self) -> u32 {
        self.ops.len() as u32
    }

    /// Those of them whose function index `called` holds, from the same first index.
    pub fn only(&self, called: &[u32]) -> Approximations {
        let ops = (self.ops.iter().enumerate())
            .filter(|&(i, _)| called.contains(&(self.first + i as u32)))
            .map(|(_, &op)| op)
            .collect();
        Approximations { first: self.first, ops }
    }

    /// Their functions in index order, with their signatures.
    pub fn bodies(&self) -> Vec<(Function, Signature)> {
        let mut bodies = Vec::with_capacity(self.ops.len());
        for &op in &self.ops {
            let params = match op {
                Approximation::Unary(_) => 1,
                Approximation::Binary(_) => 2,
            };
            let mut c = Code::new(params);
            let mut lanes = super::approx::WasmLanes { code: &mut c, vector: false };
            let y = match op {
                Approximation::Unary(op) => super::approx::unary(&mut lanes, op, 0),
                Approximation::Binary(op) => super::approx::binary(&mut lanes, op, 0, 1),
            };
            c.op(I::LocalGet(y.expect("an approximated op")));
            bodies.push((c.finish(), (vec![ValType::F32; params as usize], vec![ValType::F32])));
        }
        bodies
    }
}
