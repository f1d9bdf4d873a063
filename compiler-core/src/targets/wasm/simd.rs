//! SIMD128 code for the kernels `kernel::vector::plan` vectorizes (the CPU target's
//! decision), in 4 lanes of 32 bits: f32, s32, u32, and pred as lane masks (all ones is
//! true). Along the innermost variable, with a scalar tail for the remainder (not written
//! where the extent is known to be whole steps):
//! - a **loop** kernel computes 4 consecutive elements per step;
//! - a **row reduction** keeps one vector accumulator per reduction (starting at its
//!   op's identity), combined lane by lane into the scalar accumulator (which started
//!   at the init, and takes the tail) after the reduced loops: float sums are
//!   reassociated, as on the CPU target and XLA:CPU; max/min and integer ops stay exact.
//!
//! A load whose index is `vector variable + invariant` is one `v128.load`; an invariant
//! one a scalar load and a splat; any other (transposed, strided, clamped reads), as
//! iotas and range tests, is built lane by lane from the scalar code with the variable
//! set to each lane's value. An op without a SIMD128 form here (integer division,
//! shifts, f32 remainder, ...) fails the vector attempt with a reason, and the kernel is
//! emitted scalar instead.

use super::approx::{self, WasmLanes};
use super::{mem, scalar_constant, Writer};
use crate::ir::{BinaryOp, CmpDir, ElementType, Scalar, UnaryOp};
use crate::kernel::elemental::{ExprId, Idx, IdxId, Node};
use crate::kernel::index::{store_strides, Dependence};
use crate::kernel::lower::Lower;
use crate::kernel::reduction;
use crate::kernel::vector::VecKind;
use std::collections::HashMap;
use wasm_encoder::{BlockType, Instruction as I, ValType};

/// Lanes per vector.
pub const LANES: i64 = 4;

/// What a vector loop's steps read without it changing: the values that read neither
/// its variable nor a reduced one (a row's mean, a column's bias, anything computed
/// from them), computed once before the loop, where each step would load and splat them
/// again (no engine hoists a load out of a loop: it may trap). Each step starts from
/// `vector` (the values its nodes read, splat), the scalar tail from `scalar` (every
/// value computed for them), both from `indices` (those that do not move with it).
pub(super) struct Hoisted {
    pub vector: HashMap<ExprId, u32>,
    pub scalar: HashMap<ExprId, u32>,
    pub indices: HashMap<IdxId, u32>,
}

/// How a reason for scalar code starts (the vector attempt's failure, not the kernel's).
pub const NO_FORM: &str = "no SIMD128 form: ";

impl Writer<'_> {
    /// The vector attempt fails; a placeholder for the discarded code.
    fn vfail(&mut self, why: String) -> u32 {
        self.fail(format!("{NO_FORM}{why}"));
        self.code.local(ValType::V128)
    }

    fn vvar(&self) -> u32 {
        self.vplan.as_ref().expect("vector code has a plan").var
    }

    /// [`Hoisted`] for the vector loop over `v`, the innermost kept variable: computed
    /// here, in scalar code.
    pub(super) fn hoist_invariants(&mut self, v: u32) -> Hoisted {
        let e = self.e;
        let mut varies = vec![false; e.nodes.len()];
        for (x, expr) in e.nodes.iter().enumerate() {
            let own = match expr.node {
                Node::Load { linear: i, .. } | Node::Index(i) | Node::InRange { idx: i, .. } => {
                    self.analysis.dependence(i, v) != Dependence::Invariant
                }
                Node::Acc { .. } | Node::Arg { .. } | Node::Reduced { .. } => true,
                _ => false,
            };
            varies[x] = own || expr.node.operands().iter().any(|o| varies[o.0 as usize]);
        }
        // The invariant values a varying node or an output reads (constants are the
        // module's globals already).
        let mut read = vec![false; e.nodes.len()];
        for (x, expr) in e.nodes.iter().enumerate() {
            if varies[x] {
                expr.node.operands().iter().for_each(|o| read[o.0 as usize] = true);
            }
        }
        e.outputs.iter().for_each(|o| read[o.expr.0 as usize] = true);
        let hoist: Vec<ExprId> = (0..e.nodes.len())
            .filter(|&x| read[x] && !varies[x] && !matches!(e.nodes[x].node, Node::Const(_)))
            .map(|x| ExprId(x as u32))
            .collect();
        // And the invariant parts of the indices that move with it (a row's start).
        let invariant = |i: IdxId| self.analysis.dependence(i, v) == Dependence::Invariant;
        let mut parts = Vec::new();
        for i in (0..e.idx.len() as u32).map(IdxId) {
            let operand = match *e.idx_node(i) {
                Idx::Add(a, b) => vec![a, b],
                Idx::Mul(a, _) | Idx::Div(a, _) | Idx::Rem(a, _) | Idx::Clamp(a, _, _) => vec![a],
                Idx::Var(_) | Idx::Const(_) | Idx::Data(_) => vec![],
            };
            if !invariant(i) {
                let computed = |a: &IdxId| !matches!(e.idx_node(*a), Idx::Var(_) | Idx::Const(_));
                parts.extend(operand.into_iter().filter(|&a| invariant(a) && computed(&a)));
            }
        }
        self.memo.clear();
        for i in parts {
            self.index(i);
        }
        let scalars: Vec<u32> = hoist.iter().map(|&x| self.value(x)).collect();
        let vector = hoist.iter().zip(scalars).map(|(&x, s)| (x, self.splat(e.expr(x).elem, s))).collect();
        let indices = self
            .memo
            .indices
            .iter()
            .filter(|(&i, _)| self.analysis.dependence(i, v) == Dependence::Invariant)
            .map(|(&i, &l)| (i, l))
            .collect();
        Hoisted { vector, scalar: self.memo.values.clone(), indices }
    }

    /// Scalar `s` of `elem` in every lane (a pred as a mask).
    pub(super) fn splat(&mut self, elem: ElementType, s: u32) -> u32 {
        match elem {
            ElementType::F32 => self.ops([I::LocalGet(s), I::F32x4Splat]),
            ElementType::Pred => self.ops([I::I32Const(0), I::LocalGet(s), I::I32Sub, I::I32x4Splat]),
            _ => self.ops([I::LocalGet(s), I::I32x4Splat]),
        }
        self.fresh(ValType::V128)
    }

    /// `f`'s scalar value, computed in scalar mode.
    fn scalar(&mut self, f: &mut dyn FnMut(&mut Self) -> u32) -> u32 {
        self.vector = false;
        let s = f(self);
        self.vector = true;
        s
    }

    /// A vector built lane by lane: `f`'s scalar value with the vector variable set to
    /// each lane's (indices recomputed per lane), then put back.
    fn gather(&mut self, elem: ElementType, f: &mut dyn FnMut(&mut Self) -> u32) -> u32 {
        let var = self.vars[self.vvar() as usize];
        self.get(var);
        let base = self.fresh(ValType::I64);
        let saved = std::mem::take(&mut self.memo.indices);
        self.code.op(I::V128Const(0));
        let acc = self.fresh(ValType::V128);
        for j in 0..LANES as u8 {
            if j > 0 {
                self.ops([I::LocalGet(base), I::I64Const(j as i64), I::I64Add, I::LocalSet(var)]);
            }
            self.memo.indices.clear();
            let s = self.scalar(f);
            self.ops([I::LocalGet(acc), I::LocalGet(s)]);
            self.code.op(if elem == ElementType::F32 { I::F32x4ReplaceLane(j) } else { I::I32x4ReplaceLane(j) });
            self.code.op(I::LocalSet(acc));
        }
        self.ops([I::LocalGet(base), I::LocalSet(var)]);
        self.memo.indices = saved;
        if elem == ElementType::Pred {
            self.ops([I::LocalGet(acc), I::V128Const(0), I::I32x4Ne]);
            return self.fresh(ValType::V128);
        }
        acc
    }

    fn vbin(&mut self, a: u32, b: u32, op: I<'static>) -> u32 {
        self.ops([I::LocalGet(a), I::LocalGet(b), op]);
        self.fresh(ValType::V128)
    }

    fn vun(&mut self, a: u32, op: I<'static>) -> u32 {
        self.ops([I::LocalGet(a), op]);
        self.fresh(ValType::V128)
    }

    pub(super) fn v_load(&mut self, x: ExprId, input: u32, linear: IdxId) -> u32 {
        let elem = self.e.expr(x).elem;
        let var = self.vvar();
        match self.analysis.dependence(linear, var) {
            Dependence::Invariant => {
                let s = self.scalar(&mut |w| w.load(x, input, linear));
                self.splat(elem, s)
            }
            Dependence::Affine(1) if elem != ElementType::Pred => {
                let at = self.index(linear);
                let size = elem.byte_size() as i32;
                self.ops([I::LocalGet(at), I::I32WrapI64, I::I32Const(size), I::I32Mul]);
                let offset = self.input_at(input);
                self.code.op(I::V128Load(mem(offset, 2)));
                self.fresh(ValType::V128)
            }
            _ => self.gather(elem, &mut |w| w.load(x, input, linear)),
        }
    }

    /// Scalar `s` in every lane (a pred as a mask), a constant set at the function's
    /// entry ([`Code::vector_constant`](super::Code::vector_constant)).
    pub(super) fn v_constant(&mut self, elem: ElementType, s: Scalar) -> u32 {
        let lane = match scalar_constant(elem, s) {
            I::I32Const(v) if elem == ElementType::Pred => (v as u32).wrapping_neg(),
            I::I32Const(v) => v as u32,
            I::F32Const(f) => f.bits(),
            // `simd_plan` admits 32-bit lanes only.
            other => return self.vfail(format!("a {elem} constant ({other:?})")),
        };
        self.code.splat_constant(lane)
    }

    pub(super) fn v_iota(&mut self, i: IdxId, elem: ElementType) -> u32 {
        self.gather(elem, &mut |w| w.iota(i, elem))
    }

    pub(super) fn v_in_range(&mut self, i: IdxId, lo: i64, hi: i64) -> u32 {
        self.gather(ElementType::Pred, &mut |w| w.in_range(i, lo, hi))
    }

    pub(super) fn v_unary(&mut self, op: UnaryOp, from: ElementType, elem: ElementType, a: u32) -> u32 {
        use UnaryOp::*;
        if op == IsFinite && from == ElementType::F32 {
            let m = approx::sign_bits(&mut self.code, a, false);
            let inf = self.code.splat_constant(f32::INFINITY.to_bits());
            self.ops([I::LocalGet(m), I::LocalGet(inf), I::F32x4Lt]);
            return self.fresh(ValType::V128);
        }
        match (elem, op) {
            (ElementType::F32, Neg) => approx::sign_bits(&mut self.code, a, true),
            (ElementType::F32, Abs) => approx::sign_bits(&mut self.code, a, false),
            (ElementType::F32, Sqrt) => self.vun(a, I::F32x4Sqrt),
            (ElementType::F32, Floor) => self.vun(a, I::F32x4Floor),
            (ElementType::F32, Ceil) => self.vun(a, I::F32x4Ceil),
            (ElementType::F32, RoundEven) => self.vun(a, I::F32x4Nearest),
            (ElementType::F32, op) if approx::approximated(op) => {
                let mut lanes = WasmLanes { code: &mut self.code, vector: true };
                approx::unary(&mut lanes, op, a).expect("an approximated op")
            }
            (ElementType::Pred, Not) => self.vun(a, I::V128Not),
            (ElementType::S32 | ElementType::U32, Not) => self.vun(a, I::V128Not),
            (ElementType::S32 | ElementType::U32, Neg) => self.vun(a, I::I32x4Neg),
            (ElementType::S32, Abs) => self.vun(a, I::I32x4Abs),
            (ElementType::U32, Abs) => a,
            (t, op) => self.vfail(format!("{} on {t}", op.hlo_name())),
        }
    }

    pub(super) fn v_binary(&mut self, op: BinaryOp, elem: ElementType, a: u32, b: u32) -> u32 {
        use BinaryOp::*;
        use ElementType::*;
        let i = match (elem, op) {
            (F32, Add) => I::F32x4Add,
            (F32, Sub) => I::F32x4Sub,
            (F32, Mul) => I::F32x4Mul,
            (F32, Div) => I::F32x4Div,
            // NaN-propagating, +0 above -0: HLO's, as the scalar f32.max.
            (F32, Max) => I::F32x4Max,
            (F32, Min) => I::F32x4Min,
            (S32 | U32, Add) => I::I32x4Add,
            (S32 | U32, Sub) => I::I32x4Sub,
            (S32 | U32, Mul) => I::I32x4Mul,
            (S32, Max) => I::I32x4MaxS,
            (S32, Min) => I::I32x4MinS,
            (U32, Max) => I::I32x4MaxU,
            (U32, Min) => I::I32x4MinU,
            (S32 | U32, And) | (Pred, And | Mul | Min) => I::V128And,
            (S32 | U32, Or) | (Pred, Or | Add | Max) => I::V128Or,
            (S32 | U32 | Pred, Xor) => I::V128Xor,
            (F32, Pow | Atan2) => {
                let mut lanes = WasmLanes { code: &mut self.code, vector: true };
                return approx::binary(&mut lanes, op, a, b).expect("an approximated op");
            }
            (t, op) => return self.vfail(format!("{} on {t}", op.hlo_name())),
        };
        self.vbin(a, b, i)
    }

    /// The total-order key of f32 lanes: `k ^ ((k >> 31) >>> 1)`.
    fn v_total_key(&mut self, v: u32) -> u32 {
        self.ops([I::LocalGet(v), I::LocalGet(v), I::I32Const(31), I::I32x4ShrS, I::I32Const(1), I::I32x4ShrU]);
        self.code.op(I::V128Xor);
        self.fresh(ValType::V128)
    }

    pub(super) fn v_compare(&mut self, dir: CmpDir, total: bool, elem: ElementType, a: u32, b: u32) -> u32 {
        use CmpDir::*;
        use ElementType::*;
        let (a, b, elem) =
            if elem == F32 && total { (self.v_total_key(a), self.v_total_key(b), S32) } else { (a, b, elem) };
        let i = match (elem, dir) {
            (F32, Eq) => I::F32x4Eq,
            (F32, Ne) => I::F32x4Ne,
            (F32, Lt) => I::F32x4Lt,
            (F32, Le) => I::F32x4Le,
            (F32, Gt) => I::F32x4Gt,
            (F32, Ge) => I::F32x4Ge,
            (S32 | U32 | Pred, Eq) => I::I32x4Eq,
            (S32 | U32 | Pred, Ne) => I::I32x4Ne,
            (S32, Lt) => I::I32x4LtS,
            (S32, Le) => I::I32x4LeS,
            (S32, Gt) => I::I32x4GtS,
            (S32, Ge) => I::I32x4GeS,
            (U32, Lt) => I::I32x4LtU,
            (U32, Le) => I::I32x4LeU,
            (U32, Gt) => I::I32x4GtU,
            (U32, Ge) => I::I32x4GeU,
            (t, d) => return self.vfail(format!("a {d:?} compare of {t}")),
        };
        self.vbin(a, b, i)
    }

    pub(super) fn v_select(&mut self, p: u32, t: u32, f: u32) -> u32 {
        self.ops([I::LocalGet(t), I::LocalGet(f), I::LocalGet(p), I::V128Bitselect]);
        self.fresh(ValType::V128)
    }

    pub(super) fn v_convert(&mut self, from: ElementType, to: ElementType, v: u32) -> u32 {
        use ElementType::*;
        match (from, to) {
            (a, b) if a == b => v,
            (S32, U32) | (U32, S32) => v,
            (F32, S32) => self.vun(v, I::I32x4TruncSatF32x4S),
            (F32, U32) => self.vun(v, I::I32x4TruncSatF32x4U),
            (S32, F32) => self.vun(v, I::F32x4ConvertI32x4S),
            (U32, F32) => self.vun(v, I::F32x4ConvertI32x4U),
            // NaN != 0 is true, as HLO wants.
            (F32, Pred) => {
                self.ops([I::LocalGet(v), I::V128Const(0), I::F32x4Ne]);
                self.fresh(ValType::V128)
            }
            (S32 | U32, Pred) => {
                self.ops([I::LocalGet(v), I::V128Const(0), I::I32x4Ne]);
                self.fresh(ValType::V128)
            }
            (Pred, S32 | U32 | F32) => {
                self.ops([I::LocalGet(v), I::I32Const(1), I::I32x4Splat, I::V128And]);
                if to == F32 {
                    self.code.op(I::F32x4ConvertI32x4U);
                }
                self.fresh(ValType::V128)
            }
            (a, b) => self.vfail(format!("a convert from {a} to {b}")),
        }
    }

    pub(super) fn v_bitcast(&mut self, from: ElementType, to: ElementType, v: u32) -> u32 {
        use ElementType::*;
        match (from, to) {
            (F32 | S32 | U32, F32 | S32 | U32) => v,
            (a, b) => self.vfail(format!("a bitcast-convert from {a} to {b}")),
        }
    }

    /// Output `o`'s 4 elements from the current position: one `v128.store` where the
    /// vector variable is its minor dimension; pred bytes one by one.
    pub(super) fn v_store(&mut self, o: usize, v: u32) {
        let out = &self.e.outputs[o];
        let elem = out.elem;
        let var = self.vvar();
        if !store_strides(self.e, out).contains(&(var, 1)) {
            self.vfail("an output whose minor dimension is not the vector's".into());
            return;
        }
        let at = self.store_index(o);
        let size = elem.byte_size() as i32;
        self.ops([I::LocalGet(at), I::I32WrapI64, I::I32Const(size), I::I32Mul]);
        let base = self.output_at(o);
        if elem != ElementType::Pred {
            self.ops([I::LocalGet(v), I::V128Store(mem(base, 2))]);
            return;
        }
        let addr = self.fresh(ValType::I32);
        for j in 0..LANES as u8 {
            self.ops([I::LocalGet(addr), I::LocalGet(v), I::I32x4ExtractLane(j), I::I32Const(1), I::I32And]);
            self.code.op(I::I32Store8(mem(base + j as u64, 0)));
        }
    }

    /// `for var in start..end` over the vector variable: steps of 4 lanes while a whole
    /// vector fits, then the scalar tail, unless `steps` (both ends are multiples of the
    /// lanes: the tail would never run); `inner` runs at the current mode.
    pub(super) fn vector_range(
        &mut self,
        v: u32,
        start: &[I<'static>],
        end: &[I<'static>],
        steps: bool,
        inner: &mut dyn FnMut(&mut Self),
    ) {
        let var = self.vars[v as usize];
        self.code.ops.extend(start.iter().cloned());
        self.ops([I::LocalSet(var), I::Block(BlockType::Empty), I::Loop(BlockType::Empty)]);
        self.ops([I::LocalGet(var), I::I64Const(LANES), I::I64Add]);
        self.code.ops.extend(end.iter().cloned());
        self.ops([I::I64GtS, I::BrIf(1)]);
        self.vector = true;
        inner(self);
        self.vector = false;
        self.ops([I::LocalGet(var), I::I64Const(LANES), I::I64Add, I::LocalSet(var), I::Br(0), I::End, I::End]);
        // No tail to write: it would be half the kernel's code.
        if steps {
            return;
        }
        // The tail, from where the vectors stopped.
        self.ops([I::Block(BlockType::Empty), I::Loop(BlockType::Empty), I::LocalGet(var)]);
        self.code.ops.extend(end.iter().cloned());
        self.ops([I::I64GeS, I::BrIf(1)]);
        inner(self);
        self.ops([I::LocalGet(var), I::I64Const(1), I::I64Add, I::LocalSet(var), I::Br(0), I::End, I::End]);
    }

    /// A row reduction's reduced loops: `unroll` sets of vector accumulators (the plan's
    /// unroll: independent chains, so the steps overlap) at the ops' identities, the
    /// innermost loop in steps of `unroll` vectors and a scalar tail (the values read
    /// unchanged splat once before it), then the sets combined vector by vector and
    /// each one's lanes into its scalar accumulator.
    pub(super) fn row_nest(&mut self, vars: &[u32], ops: &[BinaryOp], body: &mut dyn FnMut(&mut Self)) {
        let e = self.e;
        let elems: Vec<ElementType> = e.reductions.iter().map(|r| e.expr(r.values[0]).elem).collect();
        let unroll = self.vplan.as_ref().map_or(1, |p| p.unroll.max(1)) as usize;
        let mut sets: Vec<Vec<Vec<u32>>> = vec![Vec::new(); unroll];
        for (k, &op) in ops.iter().enumerate() {
            let Some(id) = reduction::identity(op, elems[k]) else {
                self.vfail(format!("no identity of {} on {}", op.hlo_name(), elems[k]));
                return;
            };
            let c = self.constant(elems[k], id);
            for set in sets.iter_mut() {
                set.push(vec![self.splat(elems[k], c)]);
            }
        }
        let (last, outer) = vars.split_last().expect("a row reduction reduces a variable");
        let last = *last;
        self.reduced_loops(outer, &mut |w| {
            // The values read unchanged, as vectors for the vector loop.
            let scalar_memo = w.memo.values.clone();
            let mut vector_memo = std::collections::HashMap::new();
            // In expression order, so the module's bytes do not depend on the map's.
            let mut read: Vec<(ExprId, u32)> = scalar_memo.iter().map(|(&x, &l)| (x, l)).collect();
            read.sort_unstable_by_key(|&(x, _)| x);
            for (x, l) in read {
                let elem = w.e.expr(x).elem;
                let v = w.splat(elem, l);
                vector_memo.insert(x, v);
            }
            let n = w.e.space[last as usize];
            let saved_indices = w.memo.indices.clone();
            let var = w.vars[last as usize];
            let step = LANES * unroll as i64;
            // The vector loop: `unroll` vectors per step, each with its accumulators.
            w.ops([I::I64Const(0), I::LocalSet(var), I::Block(BlockType::Empty), I::Loop(BlockType::Empty)]);
            w.ops([I::LocalGet(var), I::I64Const(step), I::I64Add, I::I64Const(n), I::I64GtS, I::BrIf(1)]);
            w.get(var);
            let base = w.fresh(ValType::I64);
            w.vector = true;
            for (u, set) in sets.iter().enumerate() {
                if u > 0 {
                    w.ops([I::LocalGet(base), I::I64Const(LANES * u as i64), I::I64Add, I::LocalSet(var)]);
                }
                w.vaccs = set.clone();
                w.memo.values = vector_memo.clone();
                w.memo.indices = saved_indices.clone();
                body(w);
            }
            w.vector = false;
            w.ops([I::LocalGet(base), I::I64Const(step), I::I64Add, I::LocalSet(var), I::Br(0), I::End, I::End]);
            // The scalar tail, unless the steps cover the row (its code would never run).
            if n % step != 0 {
                w.ops([I::Block(BlockType::Empty), I::Loop(BlockType::Empty)]);
                w.ops([I::LocalGet(var), I::I64Const(n), I::I64GeS, I::BrIf(1)]);
                w.memo.values = scalar_memo.clone();
                w.memo.indices = saved_indices.clone();
                body(w);
                w.ops([I::LocalGet(var), I::I64Const(1), I::I64Add, I::LocalSet(var), I::Br(0), I::End, I::End]);
            }
            w.memo.values = scalar_memo;
            w.memo.indices = saved_indices;
        });
        for (k, &op) in ops.iter().enumerate() {
            // The sets, vector by vector, then the lanes.
            self.vector = true;
            let mut vacc = sets[0][k][0];
            for set in &sets[1..] {
                vacc = self.v_binary(op, elems[k], vacc, set[k][0]);
            }
            self.vector = false;
            let acc = self.accs[k][0];
            for j in 0..LANES as u8 {
                self.get(vacc);
                if elems[k] == ElementType::F32 {
                    self.code.op(I::F32x4ExtractLane(j));
                } else {
                    self.code.op(I::I32x4ExtractLane(j));
                    if elems[k] == ElementType::Pred {
                        self.ops([I::I32Const(1), I::I32And]);
                    }
                }
                let ty = if elems[k] == ElementType::F32 { ValType::F32 } else { ValType::I32 };
                let lane = self.fresh(ty);
                let r = self.binary(op, elems[k], acc, lane);
                self.ops([I::LocalGet(r), I::LocalSet(acc)]);
            }
        }
        self.vaccs.clear();
    }

    /// The vectorized kinds this target emits, from the plan's.
    pub(super) fn vector_kind(&self) -> Option<&VecKind> {
        self.vplan.as_ref().map(|p| &p.kind)
    }
}
