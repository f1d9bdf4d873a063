//! WebAssembly for one elemental kernel of the plan: a function `(begin: i32, end: i32)`
//! over a range of the kernel's *parallel variable* (its first kept variable; a kernel
//! without one runs its single element when the range is not empty), the other kept
//! variables as loops inside it, the reduced ones as loops inside those. Every buffer
//! is at its plan offset in the module's one linear memory, which a load or store names
//! as its static offset, or, for a function that several kernels share, adds from the
//! table of offsets its third parameter points at ([`Placement`]).
//!
//! The emitter implements the instructions of the lowering driver (`kernel::lower`) and
//! nothing more. Each value the driver asks for is computed into a fresh local (the
//! engine's register allocator merges them); indices are `i64` locals, the plan's index
//! semantics, wrapped to a 32-bit address only at a load or store. HLO's element
//! semantics are spelled out where WebAssembly's instructions differ (`kernel::semantics`
//! holds the cases): integer division by zero and `MIN / -1` trap in WebAssembly and
//! give -1 (all ones) and `MIN` in HLO; shift counts are taken modulo the width;
//! float-to-int conversions saturate through the `trunc_sat` instructions (NaN to 0);
//! total-order compares go through the bits.
//!
//! Types: pred and 8- to 32-bit integers in `i32` (narrow ones wrapped back to their width
//! after each op that makes one), 64-bit integers in `i64`, f32 and f64 natively, f16 and
//! bf16 in `f32` rounded to nearest even after each op (the module's helpers, `helpers.rs`).
//! f32 exp, log, tanh, sin, pow, atan2, ... are `hloscope-approx`'s algorithms
//! (`approx.rs`), inline in vector code and a call of the module's function of that op
//! in scalar code (`helpers::Approximations`); the f64 transcendentals and float
//! remainder are refused, and their kernels run on the host.

use super::approx::{self, WasmLanes};
use super::helpers::{self, Approximation, Approximations};
use crate::ir::{BinaryOp, CmpDir, ElementType, Scalar, UnaryOp};
use crate::kernel::elemental::{Elemental, ExprId, IdxId, Node};
use crate::kernel::index::IndexAnalysis;
use crate::kernel::lower::{loop_invariants, max_min_by_constant, Lower, Memo};
use crate::kernel::vector::{self, VecKind, VecPlan};
use wasm_encoder::{BlockType, Function, Instruction as I, MemArg, ValType};

/// A function body under construction: its extra locals and its instructions.
pub struct Code {
    params: u32,
    pub locals: Vec<ValType>,
    pub ops: Vec<I<'static>>,
    /// The vector constants it names ([`Code::vector_constant`]): each value's local.
    vector_constants: Vec<(i128, u32)>,
}

/// A module's vector constants, each distinct value a mutable `v128` global from
/// [`VectorConstants::FIRST_GLOBAL`] on, which every function that names it reads once,
/// at its entry, into a local ([`Code::vector_constant`]). V8 materializes a
/// `v128.const` where the code names it, inside a loop too: three instructions each
/// time, a fifth of an `exp`'s. A value it loads stays in a register or a stack slot.
/// Mutable, so that no engine folds it back into a constant (Cranelift hoists either
/// form out of loops).
#[derive(Debug, Default)]
pub struct VectorConstants {
    values: Vec<i128>,
}

impl VectorConstants {
    /// The first constant's global (global 0 is the module's `scratch`).
    pub const FIRST_GLOBAL: u32 = 1;

    /// The global of `bits`, declared on first use.
    fn global(&mut self, bits: i128) -> u32 {
        let at = self.values.iter().position(|&v| v == bits).unwrap_or_else(|| {
            self.values.push(bits);
            self.values.len() - 1
        });
        Self::FIRST_GLOBAL + at as u32
    }

    /// The values, in global order.
    pub fn values(&self) -> &[i128] {
        &self.values
    }
}

impl Code {
    /// A body for a function of `params` parameters.
    pub fn new(params: u32) -> Code {
        Code { params, locals: Vec::new(), ops: Vec::new(), vector_constants: Vec::new() }
    }
    pub fn op(&mut self, i: I<'static>) {
        self.ops.push(i);
    }
    pub fn ops<const N: usize>(&mut self, is: [I<'static>; N]) {
        self.ops.extend(is);
    }
    pub fn extend(&mut self, is: &[I<'static>]) {
        self.ops.extend_from_slice(is);
    }
    /// A new local of type `ty`.
    pub fn local(&mut self, ty: ValType) -> u32 {
        self.locals.push(ty);
        self.params + self.locals.len() as u32 - 1
    }
    /// The value on top of the stack, into a new local.
    pub fn set_new(&mut self, ty: ValType) -> u32 {
        let l = self.local(ty);
        self.op(I::LocalSet(l));
        l
    }
    /// [`Code::vector_constant`] of the 32-bit `lane` in all four lanes.
    pub fn splat_constant(&mut self, lane: u32) -> u32 {
        let bits = (0..4).fold(0u128, |v, _| (v << 32) | lane as u128);
        self.vector_constant(bits as i128)
    }
    /// The `v128` of `bits` as a local that is set once, at the function's entry, from
    /// the module's global of it ([`VectorConstants`]), and never again.
    pub fn vector_constant(&mut self, bits: i128) -> u32 {
        if let Some(&(_, l)) = self.vector_constants.iter().find(|(b, _)| *b == bits) {
            return l;
        }
        let l = self.local(ValType::V128);
        self.vector_constants.push((bits, l));
        l
    }
    /// The function, its vector constants read from `constants`' globals at its entry.
    pub fn finish_in(mut self, constants: &mut VectorConstants) -> Function {
        let entry: Vec<I<'static>> = std::mem::take(&mut self.vector_constants)
            .into_iter()
            .flat_map(|(bits, l)| [I::GlobalGet(constants.global(bits)), I::LocalSet(l)])
            .collect();
        self.ops.splice(0..0, entry);
        self.finish()
    }
    /// The function, which names no vector constant (else [`Code::finish_in`]).
    pub fn finish(mut self) -> Function {
        assert!(self.vector_constants.is_empty(), "a function with vector constants is finished in a module's");
        self.op(I::End);
        let mut f = Function::new_with_locals_types(self.locals);
        for i in &self.ops {
            f.instruction(i);
        }
        f
    }
}

/// Where an elemental kernel's buffers are.
pub enum Placement<'a> {
    /// At these byte offsets of the linear memory, which a load or store names as its
    /// static offset.
    Fixed { inputs: &'a [u64], outputs: &'a [u64] },
    /// Read from the table at the function's third parameter (an `i32` offset per input,
    /// then per output): kernels that are the same code up to their buffers (the layers
    /// of a stack) share one function, each called with its own table.
    Table,
}

/// A kernel's function, before it joins its module.
pub struct Emitted {
    /// Its function, to be finished in the module ([`Code::finish_in`]).
    pub body: Code,
    /// The parallel variable's extent: the range a call covers (0: nothing to run).
    pub extent: u64,
    /// The granularity of a call's range ([`super::WasmKernel::step`]).
    pub step: u64,
    /// How its code runs, in a few words (`scalar`).
    pub shape: String,
    /// The scalar approximations it calls (their function indices).
    pub called: Vec<u32>,
}

#[path = "simd.rs"]
mod simd;

/// The WebAssembly function of `e`, or why it is not emitted: SIMD128 code where
/// [`vector::plan`] vectorizes the kernel in 32-bit lanes as a loop or a row reduction
/// and every op has a SIMD128 form here, else scalar code.
pub fn emit(e: &Elemental, place: &Placement, approximations: &Approximations) -> Result<Emitted, String> {
    let outer = e.outer_vars();
    let extent = match outer.first() {
        Some(&v) => e.space[v as usize].max(0) as u64,
        None => 1,
    };
    if extent > i32::MAX as u64 {
        return Err(format!("a parallel extent of {extent} past 32 bits"));
    }
    let why_scalar = match simd_plan(e) {
        Ok(plan) => {
            let shape = match &plan.kind {
                VecKind::Row(ops) => {
                    let names: Vec<&str> = ops.iter().map(|op| op.hlo_name()).collect();
                    format!("simd128 4 lanes, row reduction ({})", names.join(", "))
                }
                _ => "simd128 4 lanes".to_string(),
            };
            // A vector loop over the parallel variable needs no scalar tail when the
            // lanes divide its extent and every call's range is whole vector steps.
            let steps = plan.kind == VecKind::Loop
                && outer.first() == Some(&plan.var)
                && extent.is_multiple_of(simd::LANES as u64);
            let step = if steps { simd::LANES as u64 } else { 1 };
            match write(e, place, approximations, &outer, Some(plan), steps) {
                Ok((body, called)) => return Ok(Emitted { body, extent, step, shape, called }),
                Err(why) if why.starts_with(simd::NO_FORM) => why,
                Err(why) => return Err(why),
            }
        }
        Err(why) => why,
    };
    let (body, called) = write(e, place, approximations, &outer, None, false)?;
    Ok(Emitted { body, extent, step: 1, shape: format!("scalar ({why_scalar})"), called })
}

/// The shared vectorization plan, where this target takes it: 32-bit lanes, a loop or
/// a row reduction.
fn simd_plan(e: &Elemental) -> Result<VecPlan, String> {
    let plan = vector::plan(e)?;
    if plan.width != 4 {
        return Err(format!("{}-byte lanes", plan.width));
    }
    if plan.kind == VecKind::Column {
        return Err("a column reduction".into());
    }
    let ok = |t: ElementType| matches!(t, ElementType::F32 | ElementType::S32 | ElementType::U32 | ElementType::Pred);
    if e.nodes.iter().any(|x| !ok(x.elem)) || e.input_elems.iter().any(|&t| !ok(t)) {
        return Err("a type other than f32, s32, u32 and pred".into());
    }
    Ok(plan)
}

fn write(
    e: &Elemental,
    place: &Placement,
    approximations: &Approximations,
    outer: &[u32],
    vplan: Option<VecPlan>,
    parallel_steps: bool,
) -> Result<(Code, Vec<u32>), String> {
    let mut w = Writer {
        e,
        place,
        approximations,
        called: Vec::new(),
        code: Code::new(super::KERNEL_PARAMS),
        memo: Memo::default(),
        err: None,
        vars: Vec::new(),
        accs: Vec::new(),
        vector: false,
        vplan,
        parallel_steps,
        analysis: IndexAnalysis::new(e),
        vaccs: Vec::new(),
        bases: Vec::new(),
        innermost: outer.last().copied(),
        hoisted: None,
    };
    w.vars = (0..e.space.len()).map(|_| w.code.local(ValType::I64)).collect();
    if let Placement::Table = place {
        // Each buffer's offset, once, from the table (parameter 2).
        for slot in 0..(e.input_elems.len() + e.outputs.len()) as u64 {
            w.ops([I::LocalGet(2), I::I32Load(mem(4 * slot, 2))]);
            let base = w.fresh(ValType::I32);
            w.bases.push(base);
        }
    }
    w.body(outer);
    match w.err {
        Some(why) => Err(why),
        None => Ok((w.code, w.called)),
    }
}

/// The instruction of a constant of the carrier `ty`: `bits` for an integer, `f` for a
/// float.
fn constant_instruction(ty: ValType, bits: i64, f: f64) -> I<'static> {
    match ty {
        ValType::I32 => I::I32Const(bits as i32),
        ValType::I64 => I::I64Const(bits),
        ValType::F32 => I::F32Const((f as f32).into()),
        _ => I::F64Const(f.into()),
    }
}

/// Scalar `s` of `elem` as its carrier's constant instruction (a pred is 0 or 1).
pub(super) fn scalar_constant(elem: ElementType, s: Scalar) -> I<'static> {
    use ElementType::*;
    let signed = match s {
        Scalar::S(v) => v,
        Scalar::U(v) => v as i64,
        Scalar::Pred(b) => b as i64,
        Scalar::F(f) => f as i64,
    };
    let unsigned = match s {
        Scalar::U(v) => v,
        Scalar::S(v) => v as u64,
        Scalar::Pred(b) => b as u64,
        Scalar::F(f) => f as u64,
    };
    let ty = carrier(elem);
    match elem {
        Pred => constant_instruction(ty, (s.as_f64() != 0.0) as i64, 0.0),
        F16 | BF16 | F32 | F64 => constant_instruction(ty, 0, s.as_f64()),
        S8 | S16 | S32 | S64 => constant_instruction(ty, signed, 0.0),
        U8 | U16 | U32 => constant_instruction(ty, unsigned as u32 as i32 as i64, 0.0),
        U64 => constant_instruction(ty, unsigned as i64, 0.0),
    }
}

/// The WebAssembly type a value of `t` is carried in.
pub fn carrier(t: ElementType) -> ValType {
    use ElementType::*;
    match t {
        Pred | S8 | S16 | S32 | U8 | U16 | U32 => ValType::I32,
        S64 | U64 => ValType::I64,
        F16 | BF16 | F32 => ValType::F32,
        F64 => ValType::F64,
    }
}

/// Whether `t` is stored in fewer bits than its carrier computes in (pred aside, which
/// stays 0 or 1).
fn narrow(t: ElementType) -> bool {
    use ElementType::*;
    matches!(t, S8 | U8 | S16 | U16 | F16 | BF16)
}

fn mem(offset: u64, align: u32) -> MemArg {
    MemArg { offset, align, memory_index: 0 }
}

struct Writer<'a> {
    e: &'a Elemental,
    place: &'a Placement<'a>,
    /// The module's scalar approximations, and those this code calls.
    approximations: &'a Approximations,
    called: Vec<u32>,
    code: Code,
    memo: Memo<u32, u32>,
    err: Option<String>,
    /// The `i64` local of each loop variable.
    vars: Vec<u32>,
    /// The local of each reduction's accumulators.
    accs: Vec<Vec<u32>>,
    /// Whether values are `v128` vectors of 4 lanes (else scalars).
    vector: bool,
    /// The vectorization this code follows, if any.
    vplan: Option<VecPlan>,
    /// The parallel variable is the vector loop's and every call's range is whole
    /// vector steps ([`Emitted::step`]): no scalar tail.
    parallel_steps: bool,
    analysis: IndexAnalysis<'a>,
    /// A row reduction's vector accumulators, in its vector loop.
    vaccs: Vec<Vec<u32>>,
    /// With [`Placement::Table`], the `i32` local of each input's offset, then each
    /// output's.
    bases: Vec<u32>,
    /// The innermost kept variable, whose loop a loop kernel's element is the body of.
    innermost: Option<u32>,
    /// In a vector loop: its values computed before it ([`simd::Hoisted`]).
    hoisted: Option<simd::Hoisted>,
}

impl Writer<'_> {
    fn ops<const N: usize>(&mut self, is: [I<'static>; N]) {
        self.code.ops(is);
    }
    /// With a byte index into input `input` on the stack, what a load's static offset
    /// must be: the input's offset, or 0 with the offset added to the index.
    fn input_at(&mut self, input: u32) -> u64 {
        match self.place {
            Placement::Fixed { inputs, .. } => inputs[input as usize],
            Placement::Table => {
                self.ops([I::LocalGet(self.bases[input as usize]), I::I32Add]);
                0
            }
        }
    }
    /// [`Writer::input_at`] for output `o`.
    fn output_at(&mut self, o: usize) -> u64 {
        match self.place {
            Placement::Fixed { outputs, .. } => outputs[o],
            Placement::Table => {
                self.ops([I::LocalGet(self.bases[self.e.input_elems.len() + o]), I::I32Add]);
                0
            }
        }
    }
    fn get(&mut self, l: u32) {
        self.code.op(I::LocalGet(l));
    }
    fn fresh(&mut self, ty: ValType) -> u32 {
        self.code.set_new(ty)
    }

    /// The function of scalar approximation `op`, if the module has one (noted as called).
    fn approximation(&mut self, op: Approximation) -> Option<u32> {
        let f = self.approximations.index(op)?;
        if !self.called.contains(&f) {
            self.called.push(f);
        }
        Some(f)
    }

    /// `for v in start..end { body }` over `i64` local `v`; `start` and `end` are pushed
    /// by the closures' instructions.
    fn for_range(&mut self, v: u32, start: &[I<'static>], end: &[I<'static>], body: &mut dyn FnMut(&mut Self)) {
        self.code.ops.extend(start.iter().cloned());
        self.ops([I::LocalSet(v), I::Block(BlockType::Empty), I::Loop(BlockType::Empty), I::LocalGet(v)]);
        self.code.ops.extend(end.iter().cloned());
        self.ops([I::I64GeS, I::BrIf(1)]);
        body(self);
        self.ops([I::LocalGet(v), I::I64Const(1), I::I64Add, I::LocalSet(v), I::Br(0), I::End, I::End]);
    }

    /// The parallel variable over `[begin, end)`, the other kept variables inside, then
    /// the driver's element.
    fn body(&mut self, outer: &[u32]) {
        let Some((&p, rest)) = outer.split_first() else {
            self.ops([I::LocalGet(0), I::LocalGet(1), I::I32LtS, I::If(BlockType::Empty)]);
            self.element();
            self.code.op(I::End);
            return;
        };
        let rest = rest.to_vec();
        let (start, end) = ([I::LocalGet(0), I::I64ExtendI32S], [I::LocalGet(1), I::I64ExtendI32S]);
        self.var_range(p, &start, &end, self.parallel_steps, &mut |w| w.kept(&rest));
    }

    fn kept(&mut self, vars: &[u32]) {
        let Some((&v, rest)) = vars.split_first() else {
            // Each element's code on its own: the vector step's and the tail's, from
            // the values computed before their loop.
            self.memo.clear();
            if let Some(h) = &self.hoisted {
                self.memo.values = if self.vector { h.vector.clone() } else { h.scalar.clone() };
                self.memo.indices = h.indices.clone();
            }
            return self.element();
        };
        let n = self.e.space[v as usize];
        let rest = rest.to_vec();
        let steps = n % simd::LANES == 0;
        self.var_range(v, &[I::I64Const(0)], &[I::I64Const(n)], steps, &mut |w| w.kept(&rest));
    }

    /// A kept variable's loop: in vectors and a tail for a vectorized loop kernel's
    /// vector variable, else one element at a time; `steps`: the range's ends are
    /// multiples of the lanes (no tail).
    fn var_range(
        &mut self,
        v: u32,
        start: &[I<'static>],
        end: &[I<'static>],
        steps: bool,
        inner: &mut dyn FnMut(&mut Self),
    ) {
        if self.vector_kind() == Some(&VecKind::Loop) && self.vplan.as_ref().is_some_and(|p| p.var == v) {
            if self.innermost == Some(v) {
                self.hoisted = Some(self.hoist_invariants(v));
            }
            self.vector_range(v, start, end, steps, inner);
            self.hoisted = None;
            return;
        }
        self.for_range(self.vars[v as usize], start, end, inner);
    }

    /// `Err`'s reason recorded, and a placeholder local for the discarded kernel.
    fn refuse(&mut self, why: String, ty: ValType) -> u32 {
        self.fail(why);
        self.code.local(ty)
    }

    /// `v`, a value of `t`'s carrier, brought to the narrow type `t` in place: wrapped,
    /// or rounded to nearest even.
    fn narrowed(&mut self, t: ElementType, v: u32) -> u32 {
        use ElementType::*;
        let tail: Vec<I<'static>> = match t {
            S8 => vec![I::I32Extend8S],
            S16 => vec![I::I32Extend16S],
            U8 => vec![I::I32Const(0xff), I::I32And],
            U16 => vec![I::I32Const(0xffff), I::I32And],
            F16 => vec![I::Call(helpers::F32_TO_F16), I::Call(helpers::F16_TO_F32)],
            BF16 => vec![I::Call(helpers::F32_TO_BF16), I::I32Const(16), I::I32Shl, I::F32ReinterpretI32],
            _ => return v,
        };
        self.get(v);
        self.code.ops.extend(tail);
        self.fresh(carrier(t))
    }

    /// `a op b` for the carriers' plain instructions.
    fn bin(&mut self, ty: ValType, a: u32, b: u32, op: I<'static>) -> u32 {
        self.ops([I::LocalGet(a), I::LocalGet(b), op]);
        self.fresh(ty)
    }

    fn un(&mut self, ty: ValType, a: u32, op: I<'static>) -> u32 {
        self.ops([I::LocalGet(a), op]);
        self.fresh(ty)
    }

    /// `c ? t : f` for locals.
    fn sel(&mut self, ty: ValType, c: u32, t: u32, f: u32) -> u32 {
        self.ops([I::LocalGet(t), I::LocalGet(f), I::LocalGet(c), I::Select]);
        self.fresh(ty)
    }

    /// A constant of the carrier `ty`, into a local.
    fn konst(&mut self, ty: ValType, bits: i64, f: f64) -> u32 {
        self.code.op(constant_instruction(ty, bits, f));
        self.fresh(ty)
    }

    /// The identity-free integer division and remainder of HLO (`kernel::semantics`):
    /// `x / 0` is all ones, `MIN / -1` is `MIN`, `x % 0` is `x`, `MIN % -1` is 0.
    fn int_div(&mut self, op: BinaryOp, signed: bool, wide: bool, a: u32, b: u32) -> u32 {
        let ty = if wide { ValType::I64 } else { ValType::I32 };
        let (zero, one, minus1) = if wide {
            (I::I64Const(0), I::I64Const(1), I::I64Const(-1))
        } else {
            (I::I32Const(0), I::I32Const(1), I::I32Const(-1))
        };
        let eq = if wide { I::I64Eq } else { I::I32Eq };
        // b == 0, and b == -1 (signed only)
        self.ops([I::LocalGet(b), zero.clone(), eq.clone()]);
        let by0 = self.fresh(ValType::I32);
        let byneg = if signed {
            self.ops([I::LocalGet(b), minus1.clone(), eq]);
            self.fresh(ValType::I32)
        } else {
            self.konst(ValType::I32, 0, 0.0)
        };
        // A divisor that cannot trap.
        self.ops([one, I::LocalGet(b), I::LocalGet(by0), I::LocalGet(byneg), I::I32Or, I::Select]);
        let safe = self.fresh(ty);
        let raw = match (op, signed, wide) {
            (BinaryOp::Div, true, false) => I::I32DivS,
            (BinaryOp::Div, false, false) => I::I32DivU,
            (BinaryOp::Div, true, true) => I::I64DivS,
            (BinaryOp::Div, false, true) => I::I64DivU,
            (_, true, false) => I::I32RemS,
            (_, false, false) => I::I32RemU,
            (_, true, true) => I::I64RemS,
            (_, false, true) => I::I64RemU,
        };
        let q = self.bin(ty, a, safe, raw);
        if op == BinaryOp::Div {
            // by -1: 0 - a (wrapping); by 0: -1.
            let sub = if wide { I::I64Sub } else { I::I32Sub };
            self.ops([zero, I::LocalGet(a), sub, I::LocalGet(q), I::LocalGet(byneg), I::Select]);
            let r = self.fresh(ty);
            self.ops([minus1, I::LocalGet(r), I::LocalGet(by0), I::Select]);
            self.fresh(ty)
        } else {
            // by -1: 0; by 0: a.
            self.ops([zero, I::LocalGet(q), I::LocalGet(byneg), I::Select]);
            let r = self.fresh(ty);
            self.ops([I::LocalGet(a), I::LocalGet(r), I::LocalGet(by0), I::Select]);
            self.fresh(ty)
        }
    }

    /// HLO's shifts: a count at or past the width (as unsigned) gives 0 for left and
    /// logical shifts and the sign for arithmetic ones; narrow values shift within
    /// their width.
    fn shift(&mut self, op: BinaryOp, elem: ElementType, a: u32, b: u32) -> u32 {
        let width = elem.bit_width() as i64;
        let wide = width == 64;
        let ty = if wide { ValType::I64 } else { ValType::I32 };
        let k = |v: i64| if wide { I::I64Const(v) } else { I::I32Const(v as i32) };
        let ge_u = if wide { I::I64GeU } else { I::I32GeU };
        // past = (unsigned)b >= width
        self.ops([I::LocalGet(b), k(width), ge_u]);
        let past = self.fresh(ValType::I32);
        match op {
            BinaryOp::ShiftLeft => {
                let shl = if wide { I::I64Shl } else { I::I32Shl };
                self.ops([k(0), I::LocalGet(a), I::LocalGet(b), shl, I::LocalGet(past), I::Select]);
                self.fresh(ty)
            }
            BinaryOp::ShiftRightLogical => {
                let shr = if wide { I::I64ShrU } else { I::I32ShrU };
                self.get(a);
                if width < 32 {
                    self.ops([I::I32Const(((1i64 << width) - 1) as i32), I::I32And]);
                }
                let v = self.fresh(ty);
                self.ops([k(0), I::LocalGet(v), I::LocalGet(b), shr, I::LocalGet(past), I::Select]);
                self.fresh(ty)
            }
            _ => {
                let shr = if wide { I::I64ShrS } else { I::I32ShrS };
                self.get(a);
                if width < 32 && !elem.is_signed_int() {
                    // The value's own sign at its width.
                    let s = 32 - width as i32;
                    self.ops([I::I32Const(s), I::I32Shl, I::I32Const(s), I::I32ShrS]);
                }
                let v = self.fresh(ty);
                self.ops([I::LocalGet(v), k(width - 1), I::LocalGet(b), I::LocalGet(past), I::Select, shr]);
                self.fresh(ty)
            }
        }
    }

    /// The total-order key of a float (`-NaN < -inf < ... < -0 < +0 < ... < NaN`) as a
    /// signed integer of its width.
    fn total_key(&mut self, elem: ElementType, v: u32) -> u32 {
        if elem == ElementType::F64 {
            self.ops([I::LocalGet(v), I::I64ReinterpretF64]);
            let k = self.fresh(ValType::I64);
            self.ops([I::LocalGet(k), I::I64Const(i64::MAX), I::I64Xor, I::LocalGet(k), I::LocalGet(k)]);
            self.ops([I::I64Const(0), I::I64LtS, I::Select]);
            return self.fresh(ValType::I64);
        }
        self.ops([I::LocalGet(v), I::I32ReinterpretF32]);
        let k = self.fresh(ValType::I32);
        self.ops([I::LocalGet(k), I::I32Const(i32::MAX), I::I32Xor, I::LocalGet(k), I::LocalGet(k)]);
        self.ops([I::I32Const(0), I::I32LtS, I::Select]);
        self.fresh(ValType::I32)
    }

    fn float_unary(&mut self, op: UnaryOp, elem: ElementType, a: u32) -> u32 {
        use UnaryOp::*;
        let f64_ = carrier(elem) == ValType::F64;
        let ty = carrier(elem);
        let pick = |s: I<'static>, d: I<'static>| if f64_ { d } else { s };
        match op {
            Neg => self.un(ty, a, pick(I::F32Neg, I::F64Neg)),
            Abs => self.un(ty, a, pick(I::F32Abs, I::F64Abs)),
            Sqrt => self.un(ty, a, pick(I::F32Sqrt, I::F64Sqrt)),
            Floor => self.un(ty, a, pick(I::F32Floor, I::F64Floor)),
            Ceil => self.un(ty, a, pick(I::F32Ceil, I::F64Ceil)),
            RoundEven => self.un(ty, a, pick(I::F32Nearest, I::F64Nearest)),
            Rsqrt if f64_ => {
                self.ops([I::F64Const(1.0.into()), I::LocalGet(a), I::F64Sqrt, I::F64Div]);
                self.fresh(ty)
            }
            // In f64 and rounded once, as the interpreter computes it.
            Rsqrt => {
                self.ops([I::F64Const(1.0.into()), I::LocalGet(a), I::F64PromoteF32, I::F64Sqrt, I::F64Div]);
                self.ops([I::F32DemoteF64]);
                self.fresh(ty)
            }
            // Half away from zero: the truncation, one further when |x - t| >= 0.5.
            RoundAfz => {
                let t = self.un(ty, a, pick(I::F32Trunc, I::F64Trunc));
                let one = self.konst(ty, 0, 1.0);
                let step = self.bin(ty, one, a, pick(I::F32Copysign, I::F64Copysign));
                let up = self.bin(ty, t, step, pick(I::F32Add, I::F64Add));
                let d = self.bin(ty, a, t, pick(I::F32Sub, I::F64Sub));
                self.ops([I::LocalGet(d), pick(I::F32Abs, I::F64Abs)]);
                self.code.op(if f64_ { I::F64Const(0.5.into()) } else { I::F32Const(0.5f32.into()) });
                self.code.op(pick(I::F32Ge, I::F64Ge));
                let far = self.fresh(ValType::I32);
                self.sel(ty, far, up, t)
            }
            // Zeros keep their sign, NaN stays NaN.
            Sign => {
                let one = self.konst(ty, 0, 1.0);
                let s = self.bin(ty, one, a, pick(I::F32Copysign, I::F64Copysign));
                let zero = self.konst(ty, 0, 0.0);
                let is0 = self.bin(ValType::I32, a, zero, pick(I::F32Eq, I::F64Eq));
                let nan = self.bin(ValType::I32, a, a, pick(I::F32Ne, I::F64Ne));
                let keep = self.bin(ValType::I32, is0, nan, I::I32Or);
                self.sel(ty, keep, a, s)
            }
            op if ty == ValType::F32 && approx::approximated(op) => {
                if let Some(f) = self.approximation(Approximation::Unary(op)) {
                    self.ops([I::LocalGet(a), I::Call(f)]);
                    return self.fresh(ty);
                }
                let mut lanes = WasmLanes { code: &mut self.code, vector: false };
                approx::unary(&mut lanes, op, a).expect("an approximated op")
            }
            other => self.refuse(format!("{} on {elem} is not emitted for wasm", other.hlo_name()), ty),
        }
    }

    fn int_unary(&mut self, op: UnaryOp, elem: ElementType, a: u32) -> u32 {
        use UnaryOp::*;
        let ty = carrier(elem);
        let wide = ty == ValType::I64;
        let k = |v: i64| if wide { I::I64Const(v) } else { I::I32Const(v as i32) };
        let width = elem.bit_width() as i64;
        match op {
            Not if elem == ElementType::Pred => self.un(ty, a, I::I32Eqz),
            Not => {
                self.ops([I::LocalGet(a), k(-1), if wide { I::I64Xor } else { I::I32Xor }]);
                self.fresh(ty)
            }
            Neg => {
                self.ops([k(0), I::LocalGet(a), if wide { I::I64Sub } else { I::I32Sub }]);
                self.fresh(ty)
            }
            Abs if elem.is_unsigned_int() => a,
            Abs => {
                self.ops([k(0), I::LocalGet(a), if wide { I::I64Sub } else { I::I32Sub }, I::LocalGet(a)]);
                self.ops([I::LocalGet(a), k(0), if wide { I::I64LtS } else { I::I32LtS }, I::Select]);
                self.fresh(ty)
            }
            Sign if elem.is_signed_int() => {
                self.ops([I::LocalGet(a), k(0), if wide { I::I64GtS } else { I::I32GtS }]);
                self.ops([I::LocalGet(a), k(0), if wide { I::I64LtS } else { I::I32LtS }, I::I32Sub]);
                if wide {
                    self.code.op(I::I64ExtendI32S);
                }
                self.fresh(ty)
            }
            Sign => {
                self.ops([I::LocalGet(a), if wide { I::I64Eqz } else { I::I32Eqz }, I::I32Eqz]);
                if wide {
                    self.code.op(I::I64ExtendI32U);
                }
                self.fresh(ty)
            }
            PopCnt if wide => self.un(ty, a, I::I64Popcnt),
            PopCnt => {
                self.get(a);
                if width < 32 {
                    self.ops([I::I32Const(((1i64 << width) - 1) as i32), I::I32And]);
                }
                self.code.op(I::I32Popcnt);
                self.fresh(ty)
            }
            Clz if wide => self.un(ty, a, I::I64Clz),
            Clz => {
                self.get(a);
                if width < 32 {
                    self.ops([I::I32Const(((1i64 << width) - 1) as i32), I::I32And]);
                }
                self.ops([I::I32Clz, I::I32Const(32 - width as i32), I::I32Sub]);
                self.fresh(ty)
            }
            other => self.refuse(format!("{} on {elem} is not emitted for wasm", other.hlo_name()), ty),
        }
    }

    fn float_binary(&mut self, op: BinaryOp, elem: ElementType, a: u32, b: u32) -> u32 {
        use BinaryOp::*;
        let ty = carrier(elem);
        let d = ty == ValType::F64;
        let i = match op {
            Add => {
                if d {
                    I::F64Add
                } else {
                    I::F32Add
                }
            }
            Sub => {
                if d {
                    I::F64Sub
                } else {
                    I::F32Sub
                }
            }
            Mul => {
                if d {
                    I::F64Mul
                } else {
                    I::F32Mul
                }
            }
            Div => {
                if d {
                    I::F64Div
                } else {
                    I::F32Div
                }
            }
            // NaN in either gives NaN, +0 is above -0: HLO's maximum and minimum.
            Max => {
                if d {
                    I::F64Max
                } else {
                    I::F32Max
                }
            }
            Min => {
                if d {
                    I::F64Min
                } else {
                    I::F32Min
                }
            }
            op @ (Pow | Atan2) if ty == ValType::F32 => {
                if let Some(f) = self.approximation(Approximation::Binary(op)) {
                    self.ops([I::LocalGet(a), I::LocalGet(b), I::Call(f)]);
                    return self.fresh(ty);
                }
                let mut lanes = WasmLanes { code: &mut self.code, vector: false };
                return approx::binary(&mut lanes, op, a, b).expect("an approximated op");
            }
            other => return self.refuse(format!("{} on {elem} is not emitted for wasm", other.hlo_name()), ty),
        };
        self.bin(ty, a, b, i)
    }

    fn int_binary(&mut self, op: BinaryOp, elem: ElementType, a: u32, b: u32) -> u32 {
        use BinaryOp::*;
        let ty = carrier(elem);
        let w = ty == ValType::I64;
        let signed = elem.is_signed_int();
        let pick = |n: I<'static>, wi: I<'static>| if w { wi } else { n };
        let i = match op {
            Add => pick(I::I32Add, I::I64Add),
            Sub => pick(I::I32Sub, I::I64Sub),
            Mul => pick(I::I32Mul, I::I64Mul),
            And => pick(I::I32And, I::I64And),
            Or => pick(I::I32Or, I::I64Or),
            Xor => pick(I::I32Xor, I::I64Xor),
            Div | Rem => return self.int_div(op, signed, w, a, b),
            ShiftLeft | ShiftRightLogical | ShiftRightArithmetic => return self.shift(op, elem, a, b),
            Max | Min => {
                let cmp = match (signed, w) {
                    (true, false) => I::I32GtS,
                    (false, false) => I::I32GtU,
                    (true, true) => I::I64GtS,
                    (false, true) => I::I64GtU,
                };
                let gt = self.bin(ValType::I32, a, b, cmp);
                return if op == Max { self.sel(ty, gt, a, b) } else { self.sel(ty, gt, b, a) };
            }
            other => return self.refuse(format!("{} on {elem} is not emitted for wasm", other.hlo_name()), ty),
        };
        self.bin(ty, a, b, i)
    }

    fn pred_binary(&mut self, op: BinaryOp, a: u32, b: u32) -> u32 {
        use BinaryOp::*;
        let i = match op {
            Add | Max | Or => I::I32Or,
            Mul | Min | And => I::I32And,
            Xor => I::I32Xor,
            other => return self.refuse(format!("{} on pred is not emitted for wasm", other.hlo_name()), ValType::I32),
        };
        self.bin(ValType::I32, a, b, i)
    }

    /// A float (in its carrier `f32`/`f64`) to the integer type `to`, saturating, NaN to 0.
    fn float_to_int(&mut self, from64: bool, to: ElementType, v: u32) -> u32 {
        use ElementType::*;
        let ty = carrier(to);
        self.get(v);
        if narrow(to) {
            let (lo, hi) = if to.is_signed_int() {
                (-(1i64 << (to.bit_width() - 1)), (1i64 << (to.bit_width() - 1)) - 1)
            } else {
                (0, (1i64 << to.bit_width()) - 1)
            };
            if from64 {
                self.ops([I::F64Const((lo as f64).into()), I::F64Max, I::F64Const((hi as f64).into()), I::F64Min]);
            } else {
                self.ops([I::F32Const((lo as f32).into()), I::F32Max, I::F32Const((hi as f32).into()), I::F32Min]);
            }
        }
        let signed = to.is_signed_int();
        let i = match (from64, ty == ValType::I64, signed) {
            (false, false, true) => I::I32TruncSatF32S,
            (false, false, false) => I::I32TruncSatF32U,
            (false, true, true) => I::I64TruncSatF32S,
            (false, true, false) => I::I64TruncSatF32U,
            (true, false, true) => I::I32TruncSatF64S,
            (true, false, false) => I::I32TruncSatF64U,
            (true, true, true) => I::I64TruncSatF64S,
            (true, true, false) => I::I64TruncSatF64U,
        };
        self.code.op(i);
        let _ = (S8, U8);
        self.fresh(ty)
    }
}

impl<'a> Lower<'a> for Writer<'a> {
    type Value = u32;
    type Index = u32;

    fn elemental(&self) -> &'a Elemental {
        self.e
    }

    fn memo(&mut self) -> &mut Memo<u32, u32> {
        &mut self.memo
    }

    fn fail(&mut self, why: String) {
        self.err.get_or_insert(why);
    }

    fn var(&mut self, v: u32) -> u32 {
        self.vars[v as usize]
    }

    /// Float max/min with a constant ([`max_min_by_constant`]) as the CPU target's:
    /// [`approx::max_min_pick`], `+0` added where it mends `max(-0, +0)`.
    fn binary_of_nodes(&mut self, op: BinaryOp, elem: ElementType, a: ExprId, b: ExprId) -> Option<u32> {
        let (ty, add) = match (self.vector, elem) {
            (true, ElementType::F32) => (ValType::V128, I::F32x4Add),
            (false, ElementType::F32) => (ValType::F32, I::F32Add),
            (false, ElementType::F64) => (ValType::F64, I::F64Add),
            _ => return None,
        };
        let m = max_min_by_constant(self.e, op, elem, a, b)?;
        let xv = self.value(m.x);
        let kv = self.constant(elem, Scalar::F(m.k));
        let r = approx::max_min_pick(&mut self.code, ty, xv, kv, m.max);
        if !m.add_zero {
            return Some(r);
        }
        let zero = self.constant(elem, Scalar::F(0.0));
        Some(self.bin(ty, r, zero, add))
    }

    fn index_const(&mut self, c: i64) -> u32 {
        self.konst(ValType::I64, c, 0.0)
    }

    fn index_add(&mut self, a: u32, b: u32) -> u32 {
        self.bin(ValType::I64, a, b, I::I64Add)
    }

    fn index_mul(&mut self, a: u32, k: i64) -> u32 {
        if k == 1 {
            return a;
        }
        self.ops([I::LocalGet(a), I::I64Const(k), I::I64Mul]);
        self.fresh(ValType::I64)
    }

    fn index_div(&mut self, a: u32, k: i64) -> u32 {
        self.ops([I::LocalGet(a), I::I64Const(k), I::I64DivS]);
        self.fresh(ValType::I64)
    }

    fn index_rem(&mut self, a: u32, k: i64) -> u32 {
        self.ops([I::LocalGet(a), I::I64Const(k), I::I64RemS]);
        self.fresh(ValType::I64)
    }

    fn index_clamp(&mut self, a: u32, lo: i64, hi: i64) -> u32 {
        self.ops([I::I64Const(lo), I::LocalGet(a), I::LocalGet(a), I::I64Const(lo), I::I64LtS, I::Select]);
        let l = self.fresh(ValType::I64);
        self.ops([I::I64Const(hi), I::LocalGet(l), I::LocalGet(l), I::I64Const(hi), I::I64GtS, I::Select]);
        self.fresh(ValType::I64)
    }

    /// Signed types sign-extend, unsigned ones zero-extend, u64 saturates at `i64::MAX`.
    fn data_index(&mut self, elem: ElementType, v: u32) -> u32 {
        use ElementType::*;
        match elem {
            S8 | S16 | S32 => self.un(ValType::I64, v, I::I64ExtendI32S),
            U8 | U16 | U32 | Pred => self.un(ValType::I64, v, I::I64ExtendI32U),
            S64 => v,
            U64 => {
                self.ops([I::I64Const(i64::MAX), I::LocalGet(v), I::LocalGet(v), I::I64Const(0), I::I64LtS, I::Select]);
                self.fresh(ValType::I64)
            }
            t => self.refuse(format!("a data index of type {t}"), ValType::I64),
        }
    }

    fn load(&mut self, x: ExprId, input: u32, linear: IdxId) -> u32 {
        use ElementType::*;
        if self.vector {
            return self.v_load(x, input, linear);
        }
        let at = self.index(linear);
        let elem = self.e.expr(x).elem;
        let size = elem.byte_size() as i32;
        self.ops([I::LocalGet(at), I::I32WrapI64]);
        if size > 1 {
            self.ops([I::I32Const(size), I::I32Mul]);
        }
        let m = mem(self.input_at(input), size.trailing_zeros());
        match elem {
            Pred => self.ops([I::I32Load8U(m), I::I32Const(0), I::I32Ne]),
            U8 => self.ops([I::I32Load8U(m)]),
            S8 => self.ops([I::I32Load8S(m)]),
            U16 => self.ops([I::I32Load16U(m)]),
            S16 => self.ops([I::I32Load16S(m)]),
            F16 => self.ops([I::I32Load16U(m), I::Call(helpers::F16_TO_F32)]),
            BF16 => self.ops([I::I32Load16U(m), I::I32Const(16), I::I32Shl, I::F32ReinterpretI32]),
            S32 | U32 => self.ops([I::I32Load(m)]),
            S64 | U64 => self.ops([I::I64Load(m)]),
            F32 => self.ops([I::F32Load(m)]),
            F64 => self.ops([I::F64Load(m)]),
        }
        self.fresh(carrier(elem))
    }

    fn constant(&mut self, elem: ElementType, s: Scalar) -> u32 {
        if self.vector {
            return self.v_constant(elem, s);
        }
        self.code.op(scalar_constant(elem, s));
        self.fresh(carrier(elem))
    }

    fn iota(&mut self, i: IdxId, elem: ElementType) -> u32 {
        use ElementType::*;
        if self.vector {
            return self.v_iota(i, elem);
        }
        let v = self.index(i);
        let op = match carrier(elem) {
            _ if elem == Pred => {
                self.ops([I::LocalGet(v), I::I64Eqz, I::I32Eqz]);
                return self.fresh(ValType::I32);
            }
            ValType::I32 => I::I32WrapI64,
            ValType::I64 => return v,
            ValType::F32 => I::F32ConvertI64S,
            _ => I::F64ConvertI64S,
        };
        self.un(carrier(elem), v, op)
    }

    fn in_range(&mut self, i: IdxId, lo: i64, hi: i64) -> u32 {
        if self.vector {
            return self.v_in_range(i, lo, hi);
        }
        let v = self.index(i);
        self.ops([I::LocalGet(v), I::I64Const(lo), I::I64GeS, I::LocalGet(v), I::I64Const(hi), I::I64LtS, I::I32And]);
        self.fresh(ValType::I32)
    }

    fn unary(&mut self, op: UnaryOp, from: ElementType, elem: ElementType, a: u32) -> u32 {
        if self.vector {
            return self.v_unary(op, from, elem, a);
        }
        if op == UnaryOp::IsFinite {
            let d = carrier(from) == ValType::F64;
            self.get(a);
            if d {
                self.ops([I::F64Abs, I::F64Const(f64::INFINITY.into()), I::F64Lt]);
            } else {
                self.ops([I::F32Abs, I::F32Const(f32::INFINITY.into()), I::F32Lt]);
            }
            return self.fresh(ValType::I32);
        }
        if elem.is_float() {
            self.float_unary(op, elem, a)
        } else {
            self.int_unary(op, elem, a)
        }
    }

    fn binary(&mut self, op: BinaryOp, elem: ElementType, a: u32, b: u32) -> u32 {
        if self.vector {
            return self.v_binary(op, elem, a, b);
        }
        if elem == ElementType::Pred {
            self.pred_binary(op, a, b)
        } else if elem.is_float() {
            self.float_binary(op, elem, a, b)
        } else {
            self.int_binary(op, elem, a, b)
        }
    }

    fn compare(&mut self, dir: CmpDir, total: bool, elem: ElementType, a: u32, b: u32) -> u32 {
        use CmpDir::*;
        if self.vector {
            return self.v_compare(dir, total, elem, a, b);
        }
        let ty = carrier(elem);
        let (a, b, ty, signed) = if elem.is_float() && total {
            let (ka, kb) = (self.total_key(elem, a), self.total_key(elem, b));
            let t = if ty == ValType::F64 { ValType::I64 } else { ValType::I32 };
            (ka, kb, t, true)
        } else {
            (a, b, ty, elem.is_signed_int())
        };
        let i = match (ty, dir, signed) {
            (ValType::F32, Eq, _) => I::F32Eq,
            (ValType::F32, Ne, _) => I::F32Ne,
            (ValType::F32, Lt, _) => I::F32Lt,
            (ValType::F32, Le, _) => I::F32Le,
            (ValType::F32, Gt, _) => I::F32Gt,
            (ValType::F32, Ge, _) => I::F32Ge,
            (ValType::F64, Eq, _) => I::F64Eq,
            (ValType::F64, Ne, _) => I::F64Ne,
            (ValType::F64, Lt, _) => I::F64Lt,
            (ValType::F64, Le, _) => I::F64Le,
            (ValType::F64, Gt, _) => I::F64Gt,
            (ValType::F64, Ge, _) => I::F64Ge,
            (ValType::I64, Eq, _) => I::I64Eq,
            (ValType::I64, Ne, _) => I::I64Ne,
            (ValType::I64, Lt, true) => I::I64LtS,
            (ValType::I64, Le, true) => I::I64LeS,
            (ValType::I64, Gt, true) => I::I64GtS,
            (ValType::I64, Ge, true) => I::I64GeS,
            (ValType::I64, Lt, false) => I::I64LtU,
            (ValType::I64, Le, false) => I::I64LeU,
            (ValType::I64, Gt, false) => I::I64GtU,
            (ValType::I64, Ge, false) => I::I64GeU,
            (_, Eq, _) => I::I32Eq,
            (_, Ne, _) => I::I32Ne,
            (_, Lt, true) => I::I32LtS,
            (_, Le, true) => I::I32LeS,
            (_, Gt, true) => I::I32GtS,
            (_, Ge, true) => I::I32GeS,
            (_, Lt, false) => I::I32LtU,
            (_, Le, false) => I::I32LeU,
            (_, Gt, false) => I::I32GtU,
            (_, Ge, false) => I::I32GeU,
        };
        self.bin(ValType::I32, a, b, i)
    }

    fn select(&mut self, p: u32, t: u32, f: u32) -> u32 {
        if self.vector {
            return self.v_select(p, t, f);
        }
        let ty = self.code.locals[(t - self.code.params) as usize];
        self.sel(ty, p, t, f)
    }

    fn clamp(&mut self, elem: ElementType, lo: u32, x: u32, hi: u32) -> u32 {
        let low = self.binary(BinaryOp::Max, elem, x, lo);
        self.binary(BinaryOp::Min, elem, low, hi)
    }

    /// `convert`: floats to integers saturate (NaN to 0), integers wrap, and every
    /// conversion to a float rounds once, to nearest even.
    fn convert(&mut self, from: ElementType, to: ElementType, v: u32) -> u32 {
        use ElementType::*;
        if self.vector {
            return self.v_convert(from, to, v);
        }
        if from == to {
            return v;
        }
        let (cf, ct) = (carrier(from), carrier(to));
        if to == Pred {
            let i = match cf {
                ValType::F32 => {
                    self.ops([I::LocalGet(v), I::F32Const(0.0f32.into()), I::F32Ne]);
                    return self.fresh(ValType::I32);
                }
                ValType::F64 => {
                    self.ops([I::LocalGet(v), I::F64Const(0.0.into()), I::F64Ne]);
                    return self.fresh(ValType::I32);
                }
                ValType::I64 => I::I64Eqz,
                _ => I::I32Eqz,
            };
            self.ops([I::LocalGet(v), i, I::I32Eqz]);
            return self.fresh(ValType::I32);
        }
        if from.is_float() && to.is_int() {
            return self.float_to_int(cf == ValType::F64, to, v);
        }
        let from_signed = from.is_signed_int();
        if from.is_int() || from == Pred {
            if to.is_int() {
                let w = match (cf, ct) {
                    (ValType::I32, ValType::I64) => {
                        self.un(ct, v, if from_signed { I::I64ExtendI32S } else { I::I64ExtendI32U })
                    }
                    (ValType::I64, ValType::I32) => self.un(ct, v, I::I32WrapI64),
                    _ => v,
                };
                return self.narrowed(to, w);
            }
            // Integers to floats: i32 values are exact in f64, rounded from there once.
            let i = match (cf, ct, from_signed) {
                (ValType::I32, ValType::F32, true) if !narrow(to) => I::F32ConvertI32S,
                (ValType::I32, ValType::F32, false) if !narrow(to) => I::F32ConvertI32U,
                (ValType::I32, _, true) => I::F64ConvertI32S,
                (ValType::I32, _, false) => I::F64ConvertI32U,
                (ValType::I64, ValType::F32, true) if !narrow(to) => I::F32ConvertI64S,
                (ValType::I64, ValType::F32, false) if !narrow(to) => I::F32ConvertI64U,
                (ValType::I64, ValType::F64, true) => I::F64ConvertI64S,
                (ValType::I64, ValType::F64, false) => I::F64ConvertI64U,
                _ => return self.refuse(format!("a convert from {from} to {to}"), ct),
            };
            let f = self.un(
                if matches!(i, I::F32ConvertI32S | I::F32ConvertI32U | I::F32ConvertI64S | I::F32ConvertI64U) {
                    ValType::F32
                } else {
                    ValType::F64
                },
                v,
                i,
            );
            if to == F64 || !narrow(to) {
                return f;
            }
            return self.f64_to_narrow(to, f);
        }
        // Float to float.
        match (cf, to) {
            (ValType::F32, F64) => self.un(ValType::F64, v, I::F64PromoteF32),
            (ValType::F64, F32) => self.un(ValType::F32, v, I::F32DemoteF64),
            (ValType::F64, F16 | BF16) => self.f64_to_narrow(to, v),
            (ValType::F32, F32) => v,
            (ValType::F32, F16 | BF16) => self.narrowed(to, v),
            _ => self.refuse(format!("a convert from {from} to {to}"), ct),
        }
    }

    fn bitcast(&mut self, from: ElementType, to: ElementType, v: u32) -> u32 {
        use ElementType::*;
        if self.vector {
            return self.v_bitcast(from, to, v);
        }
        if from == Pred || to == Pred || from.bit_width() != to.bit_width() {
            return self.refuse(format!("a bitcast-convert from {from} to {to}"), carrier(to));
        }
        if from == to {
            return v;
        }
        match (from, to) {
            (F32, S32 | U32) => self.un(ValType::I32, v, I::I32ReinterpretF32),
            (S32 | U32, F32) => self.un(ValType::F32, v, I::F32ReinterpretI32),
            (F64, S64 | U64) => self.un(ValType::I64, v, I::I64ReinterpretF64),
            (S64 | U64, F64) => self.un(ValType::F64, v, I::F64ReinterpretI64),
            (S64 | U64, S64 | U64) | (S32 | U32, S32 | U32) => v,
            (S8 | U8, _) => self.narrowed(to, v),
            // 16 bits: the float's bits, or an integer's as a float.
            _ => {
                let bits = match from {
                    F16 => self.un(ValType::I32, v, I::Call(helpers::F32_TO_F16)),
                    BF16 => {
                        self.ops([I::LocalGet(v), I::I32ReinterpretF32, I::I32Const(16), I::I32ShrU]);
                        self.fresh(ValType::I32)
                    }
                    _ => {
                        self.ops([I::LocalGet(v), I::I32Const(0xffff), I::I32And]);
                        self.fresh(ValType::I32)
                    }
                };
                match to {
                    S16 | U16 => self.narrowed(to, bits),
                    F16 => self.un(ValType::F32, bits, I::Call(helpers::F16_TO_F32)),
                    _ => {
                        self.ops([I::LocalGet(bits), I::I32Const(16), I::I32Shl, I::F32ReinterpretI32]);
                        self.fresh(ValType::F32)
                    }
                }
            }
        }
    }

    fn accumulator(&mut self, red: u32, i: u32) -> u32 {
        if self.vector {
            return self.vaccs[red as usize][i as usize];
        }
        self.accs[red as usize][i as usize]
    }

    /// The reduced loops, with what they read but do not change computed once before
    /// them; what is computed inside is forgotten when they close.
    fn nest(&mut self, vars: &[u32], body: &mut dyn FnMut(&mut Self)) {
        for x in loop_invariants(self.e) {
            self.value(x);
        }
        let (saved, saved_indices) = (self.memo.values.clone(), self.memo.indices.clone());
        match self.vector_kind() {
            Some(VecKind::Row(ops)) if vars.last() == self.vplan.as_ref().map(|p| &p.var) => {
                let ops = ops.clone();
                self.row_nest(vars, &ops, body);
            }
            _ => self.reduced_loops(vars, body),
        }
        self.memo.values = saved;
        self.memo.indices = saved_indices;
    }

    fn begin_accumulators(&mut self, inits: Vec<Vec<u32>>) {
        let e = self.e;
        self.accs = inits
            .into_iter()
            .enumerate()
            .map(|(k, vals)| {
                vals.into_iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let ty = carrier(e.expr(e.reductions[k].inits[i]).elem);
                        self.get(v);
                        self.fresh(ty)
                    })
                    .collect()
            })
            .collect();
    }

    /// All new values on the stack first, then into the accumulators (a combiner may
    /// return another accumulator as it is).
    fn update_accumulators(&mut self, updates: Vec<(u32, u32, u32)>) {
        for (_, _, v) in &updates {
            self.get(*v);
        }
        for (k, i, _) in updates.iter().rev() {
            let accs = if self.vector { &self.vaccs } else { &self.accs };
            let acc = accs[*k as usize][*i as usize];
            self.code.op(I::LocalSet(acc));
        }
    }

    fn store(&mut self, o: usize, v: u32) {
        use ElementType::*;
        if self.vector {
            return self.v_store(o, v);
        }
        let at = self.store_index(o);
        let elem = self.e.outputs[o].elem;
        let size = elem.byte_size() as i32;
        self.ops([I::LocalGet(at), I::I32WrapI64]);
        if size > 1 {
            self.ops([I::I32Const(size), I::I32Mul]);
        }
        let m = mem(self.output_at(o), size.trailing_zeros());
        self.get(v);
        match elem {
            Pred | S8 | U8 => self.ops([I::I32Store8(m)]),
            S16 | U16 => self.ops([I::I32Store16(m)]),
            F16 => self.ops([I::Call(helpers::F32_TO_F16), I::I32Store16(m)]),
            BF16 => self.ops([I::Call(helpers::F32_TO_BF16), I::I32Store16(m)]),
            S32 | U32 => self.ops([I::I32Store(m)]),
            S64 | U64 => self.ops([I::I64Store(m)]),
            F32 => self.ops([I::F32Store(m)]),
            F64 => self.ops([I::F64Store(m)]),
        }
    }

    /// Locals stay valid where they were computed: values before a loop are reused in
    /// it ([`Lower::nest`] forgets those computed inside).
    fn new_region(&mut self) {}

    /// A narrow result computed in its carrier, back to its type (loads, converts and
    /// selects of narrow values are already of it).
    fn bind(&mut self, x: ExprId, v: u32) -> u32 {
        let expr = self.e.expr(x);
        let made = !matches!(
            expr.node,
            Node::Load { .. }
                | Node::Convert(_)
                | Node::Select { .. }
                | Node::Acc { .. }
                | Node::Arg { .. }
                | Node::Reduced { .. }
                | Node::Const(_)
                | Node::BitcastConvert(_)
        );
        if narrow(expr.elem) && made {
            self.narrowed(expr.elem, v)
        } else {
            v
        }
    }
}

impl Writer<'_> {
    fn reduced_loops(&mut self, vars: &[u32], body: &mut dyn FnMut(&mut Self)) {
        let Some((&v, rest)) = vars.split_first() else {
            return body(self);
        };
        let (local, n) = (self.vars[v as usize], self.e.space[v as usize]);
        let rest = rest.to_vec();
        self.for_range(local, &[I::I64Const(0)], &[I::I64Const(n)], &mut |w| w.reduced_loops(&rest, body));
    }

    /// An `f64` value rounded once to f16 or bf16, in its `f32` carrier.
    fn f64_to_narrow(&mut self, to: ElementType, v: u32) -> u32 {
        let odd = self.un(ValType::F32, v, I::Call(helpers::F64_TO_F32_ODD));
        self.narrowed(to, odd)
    }
}
