//! Cranelift code for one loop or reduction kernel, emitted from its elemental
//! description.
//!
//! The function is `extern "C" fn(buffers: *const *mut u8)`: the base pointers of the
//! kernel's inputs, then its outputs. A loop kernel is a nest of scalar loops, one per
//! variable of the iteration space, whose innermost body evaluates every output at the
//! index and stores it. A reduction kernel loops over the kept variables; for each
//! output element it sets scalar accumulators from the inits, loops over the reduced
//! variables applying the combiner, then evaluates the reduce-shaped outputs.
//!
//! Registers: pred and integers in their own width (pred as i8 0/1), f32/f64 as such,
//! f16/bf16 widened to f32 and rounded back to their precision after every arithmetic
//! op, so results equal the interpreter's (which rounds once per op). Values are memoized
//! per region (before, inside and after the reduced loop), so an expression shared by
//! several outputs is computed once.

use super::helpers::{binary_code, unary_code};
use crate::ir::{BinaryOp, CmpDir, ElementType, Scalar, UnaryOp};
use crate::kernel::elemental::{Elemental, ExprId, Idx, IdxId, Node};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, AbiParam, FuncRef, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_module::{FuncId, Linkage, Module};
use std::collections::HashMap;

/// Imported helper functions, declared once per JIT module.
pub struct Helpers {
    unary: FuncId,
    binary: FuncId,
    round_f16: FuncId,
    round_bf16: FuncId,
    f16_to_f32: FuncId,
    f32_to_f16: FuncId,
}

impl Helpers {
    pub fn declare<M: Module>(m: &mut M) -> Result<Helpers, String> {
        let mut decl = |name: &str, params: &[Type], ret: Type| -> Result<FuncId, String> {
            let mut sig = m.make_signature();
            sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
            sig.returns.push(AbiParam::new(ret));
            m.declare_function(name, Linkage::Import, &sig).map_err(|e| e.to_string())
        };
        use types::{F32, F64, I32};
        Ok(Helpers {
            unary: decl("hs_unary_f64", &[I32, F64], F64)?,
            binary: decl("hs_binary_f64", &[I32, F64, F64], F64)?,
            round_f16: decl("hs_round_f16", &[F32], F32)?,
            round_bf16: decl("hs_round_bf16", &[F32], F32)?,
            f16_to_f32: decl("hs_f16_to_f32", &[I32], F32)?,
            f32_to_f16: decl("hs_f32_to_f16", &[F32], I32)?,
        })
    }
}

/// The register type of an element type.
fn reg(elem: ElementType) -> Type {
    use ElementType::*;
    match elem {
        Pred | S8 | U8 => types::I8,
        S16 | U16 => types::I16,
        S32 | U32 => types::I32,
        S64 | U64 => types::I64,
        F16 | BF16 | F32 => types::F32,
        F64 => types::F64,
    }
}

fn flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// A kernel's function as emitted: its id (defined, not yet finalized), its CLIF and its
/// machine code listing (for the explorer's views).
pub struct Emitted {
    pub id: FuncId,
    /// The machine code and relocations (for artifacts and AOT checks).
    pub code: super::artifact::FunctionCode,
    pub clif: String,
    pub asm: String,
}

/// Emits the kernel as function `name`.
pub fn emit<M: Module>(
    m: &mut M,
    helpers: &Helpers,
    e: &Elemental,
    name: &str,
    n_inputs: usize,
) -> Result<Emitted, String> {
    let ptr = m.target_config().pointer_type();
    let mut ctx = m.make_context();
    ctx.set_disasm(true);
    ctx.func.signature.params.push(AbiParam::new(ptr));
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let table = b.block_params(entry)[0];
        let n_bufs = n_inputs + e.outputs.len();
        let bases: Vec<Value> = (0..n_bufs).map(|k| b.ins().load(ptr, flags(), table, (k * 8) as i32)).collect();
        let mut refs = HashMap::new();
        for (key, id) in [
            ("unary", helpers.unary),
            ("binary", helpers.binary),
            ("round_f16", helpers.round_f16),
            ("round_bf16", helpers.round_bf16),
            ("f16_to_f32", helpers.f16_to_f32),
            ("f32_to_f16", helpers.f32_to_f16),
        ] {
            refs.insert(key, m.declare_func_in_func(id, b.func));
        }
        let mut em = Emit {
            b,
            e,
            bases,
            n_inputs,
            vars: vec![None; e.space.len()],
            memo: HashMap::new(),
            idx_memo: HashMap::new(),
            accs: Vec::new(),
            refs,
            loops: Vec::new(),
            err: None,
        };
        em.body();
        if let Some(err) = em.err.take() {
            return Err(err);
        }
        em.b.ins().return_(&[]);
        em.b.seal_all_blocks();
        em.b.finalize(m.isa().frontend_config());
    }
    let clif = ctx.func.display().to_string();
    let id = m.declare_function(name, Linkage::Local, &ctx.func.signature).map_err(|e| e.to_string())?;
    m.define_function(id, &mut ctx).map_err(|e| format!("cranelift: {e:?}"))?;
    let asm = ctx.compiled_code().and_then(|c| c.vcode.clone()).unwrap_or_default();
    let code = super::artifact::capture(m, &ctx, id)?;
    m.clear_context(&mut ctx);
    Ok(Emitted { id, code, clif, asm })
}

struct Emit<'a, 'f> {
    b: FunctionBuilder<'f>,
    e: &'a Elemental,
    bases: Vec<Value>,
    n_inputs: usize,
    vars: Vec<Option<Value>>,
    memo: HashMap<ExprId, Value>,
    idx_memo: HashMap<IdxId, Value>,
    accs: Vec<Vec<Variable>>,
    refs: HashMap<&'static str, FuncRef>,
    /// Open loops: (header block, exit block, induction value).
    loops: Vec<(cranelift_codegen::ir::Block, cranelift_codegen::ir::Block, Value)>,
    /// The first error met (an op/type pair the emitter does not handle).
    err: Option<String>,
}

impl<'a, 'f> Emit<'a, 'f> {
    fn fail(&mut self, msg: String) {
        if self.err.is_none() {
            self.err = Some(msg);
        }
    }

    fn body(&mut self) {
        let e = self.e;
        let outer = e.outer_vars();
        let inner: Vec<u32> = (0..e.space.len() as u32).filter(|&v| e.reduced[v as usize]).collect();
        for &v in &outer {
            self.open_loop(v);
        }
        if e.is_reduction() {
            // Before the reduced loop: accumulators from the inits.
            self.new_region();
            self.accs = Vec::new();
            for red in &e.reductions {
                let mut vs = Vec::new();
                for &init in &red.inits {
                    let val = self.value(init);
                    let var = self.b.declare_var(reg(e.expr(init).elem));
                    self.b.def_var(var, val);
                    vs.push(var);
                }
                self.accs.push(vs);
            }
            for &v in &inner {
                self.open_loop(v);
            }
            self.new_region();
            let mut updates = Vec::new();
            for (k, red) in e.reductions.iter().enumerate() {
                for (i, &c) in red.combiner.iter().enumerate() {
                    updates.push((k, i, self.value(c)));
                }
            }
            for (k, i, v) in updates {
                self.b.def_var(self.accs[k][i], v);
            }
            for (o, out) in e.outputs.iter().enumerate() {
                if out.inner {
                    let all: Vec<u32> = (0..e.space.len() as u32).collect();
                    self.store(o, &all);
                }
            }
            for _ in &inner {
                self.close_loop();
            }
            self.new_region();
            for (o, out) in e.outputs.iter().enumerate() {
                if !out.inner {
                    self.store(o, &outer);
                }
            }
        } else {
            self.new_region();
            for o in 0..e.outputs.len() {
                self.store(o, &outer);
            }
        }
        for _ in &outer {
            self.close_loop();
        }
    }

    fn new_region(&mut self) {
        self.memo.clear();
        self.idx_memo.clear();
    }

    fn open_loop(&mut self, var: u32) {
        let extent = self.e.space[var as usize];
        let header = self.b.create_block();
        let body = self.b.create_block();
        let exit = self.b.create_block();
        self.b.append_block_param(header, types::I64);
        let zero = self.b.ins().iconst(types::I64, 0);
        self.b.ins().jump(header, &[zero.into()]);
        self.b.switch_to_block(header);
        let i = self.b.block_params(header)[0];
        let c = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, i, extent);
        self.b.ins().brif(c, body, &[], exit, &[]);
        self.b.switch_to_block(body);
        self.vars[var as usize] = Some(i);
        self.loops.push((header, exit, i));
    }

    fn close_loop(&mut self) {
        let (header, exit, i) = self.loops.pop().expect("balanced loops");
        let one = self.b.ins().iconst(types::I64, 1);
        let next = self.b.ins().iadd(i, one);
        self.b.ins().jump(header, &[next.into()]);
        self.b.switch_to_block(exit);
    }

    /// Stores output `o` at the row-major position of variables `vars`.
    fn store(&mut self, o: usize, vars: &[u32]) {
        let out = &self.e.outputs[o];
        let dims: Vec<i64> = vars.iter().map(|&v| self.e.space[v as usize]).collect();
        let strides = crate::ir::Shape::new(ElementType::F32, dims).strides();
        let mut linear = self.b.ins().iconst(types::I64, 0);
        for (&v, &s) in vars.iter().zip(&strides) {
            let i = self.vars[v as usize].expect("variable in scope");
            let t = self.b.ins().imul_imm_s(i, s as i64);
            linear = self.b.ins().iadd(linear, t);
        }
        let val = self.value(out.expr);
        let base = self.bases[self.n_inputs + o];
        self.store_elem(out.elem, val, base, linear);
    }

    fn address(&mut self, base: Value, linear: Value, elem: ElementType) -> Value {
        let off = self.b.ins().imul_imm_s(linear, elem.byte_size() as i64);
        self.b.ins().iadd(base, off)
    }

    fn store_elem(&mut self, elem: ElementType, val: Value, base: Value, linear: Value) {
        let addr = self.address(base, linear, elem);
        let v = match elem {
            ElementType::F16 | ElementType::BF16 => self.half_bits(elem, val),
            _ => val,
        };
        self.b.ins().store(flags(), v, addr, 0);
    }

    fn load_elem(&mut self, elem: ElementType, base: Value, linear: Value) -> Value {
        let addr = self.address(base, linear, elem);
        match elem {
            ElementType::F16 | ElementType::BF16 => {
                let bits = self.b.ins().load(types::I16, flags(), addr, 0);
                self.half_from_bits(elem, bits)
            }
            _ => self.b.ins().load(reg(elem), flags(), addr, 0),
        }
    }

    fn call(&mut self, helper: &str, args: &[Value]) -> Value {
        let f = self.refs[helper];
        let inst = self.b.ins().call(f, args);
        self.b.inst_results(inst)[0]
    }

    fn index(&mut self, i: IdxId) -> Value {
        if let Some(&v) = self.idx_memo.get(&i) {
            return v;
        }
        let v = match self.e.idx_node(i).clone() {
            Idx::Var(k) => self.vars[k as usize].expect("variable in scope"),
            Idx::Const(c) => self.b.ins().iconst(types::I64, c),
            Idx::Add(a, c) => {
                let (a, c) = (self.index(a), self.index(c));
                self.b.ins().iadd(a, c)
            }
            Idx::Mul(a, k) => {
                let a = self.index(a);
                self.b.ins().imul_imm_s(a, k)
            }
            Idx::Div(a, k) => {
                let a = self.index(a);
                let k = self.b.ins().iconst(types::I64, k);
                self.b.ins().sdiv(a, k)
            }
            Idx::Rem(a, k) => {
                let a = self.index(a);
                let k = self.b.ins().iconst(types::I64, k);
                self.b.ins().srem(a, k)
            }
            Idx::Clamp(a, lo, hi) => {
                let a = self.index(a);
                let lo = self.b.ins().iconst(types::I64, lo);
                let hi = self.b.ins().iconst(types::I64, hi);
                let t = self.b.ins().smax(a, lo);
                self.b.ins().smin(t, hi)
            }
        };
        self.idx_memo.insert(i, v);
        v
    }

    fn konst(&mut self, elem: ElementType, s: Scalar) -> Value {
        match elem {
            ElementType::F64 => self.b.ins().f64const(s.as_f64()),
            e if e.is_float() => self.b.ins().f32const(s.as_f64() as f32),
            ElementType::Pred => self.b.ins().iconst(types::I8, (s.as_f64() != 0.0) as i64),
            e => {
                let bits = match s {
                    Scalar::U(u) => u,
                    Scalar::S(v) => v as u64,
                    other => other.as_i64() as u64,
                };
                self.b.ins().iconst(reg(e), (bits & crate::ir::literal::width_mask(e)) as i64)
            }
        }
    }

    /// Rounds an f32-carried f16/bf16 result to its precision.
    fn narrow(&mut self, elem: ElementType, v: Value) -> Value {
        match elem {
            ElementType::F16 => self.call("round_f16", &[v]),
            ElementType::BF16 => self.call("round_bf16", &[v]),
            _ => v,
        }
    }

    fn value(&mut self, x: ExprId) -> Value {
        if let Some(&v) = self.memo.get(&x) {
            return v;
        }
        let v = self.value_uncached(x);
        self.memo.insert(x, v);
        v
    }

    fn value_uncached(&mut self, x: ExprId) -> Value {
        let e = self.e;
        let expr = e.expr(x);
        let elem = expr.elem;
        match expr.node.clone() {
            Node::Load { input, linear } => {
                let base = self.bases[input as usize];
                let l = self.index(linear);
                let in_elem = e.input_elems[input as usize];
                self.load_elem(in_elem, base, l)
            }
            Node::Const(s) => self.konst(elem, s),
            Node::Index(i) => {
                let v = self.index(i);
                self.int_to_elem(v, elem)
            }
            Node::InRange { idx, lo, hi } => {
                let v = self.index(idx);
                let a = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, v, lo);
                let c = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, v, hi);
                self.b.ins().band(a, c)
            }
            Node::Unary(op, a) => {
                let av = self.value(a);
                let from = e.expr(a).elem;
                self.unary(op, from, elem, av)
            }
            Node::Binary(op, a, c) => {
                let (av, cv) = (self.value(a), self.value(c));
                self.binary(op, elem, av, cv)
            }
            Node::Compare { dir, total, a, b } => {
                let (av, bv) = (self.value(a), self.value(b));
                self.compare(dir, total, e.expr(a).elem, av, bv)
            }
            Node::Select { pred, on_true, on_false } => {
                let p = self.value(pred);
                let (t, f) = (self.value(on_true), self.value(on_false));
                self.b.ins().select(p, t, f)
            }
            Node::Clamp { lo, x: xv, hi } => {
                let (l, v, h) = (self.value(lo), self.value(xv), self.value(hi));
                if elem.is_float() {
                    let t = self.b.ins().fmax(v, l);
                    self.b.ins().fmin(t, h)
                } else if elem.is_pred() {
                    let t = self.b.ins().bor(v, l);
                    self.b.ins().band(t, h)
                } else if elem.is_signed_int() {
                    let t = self.b.ins().smax(v, l);
                    self.b.ins().smin(t, h)
                } else {
                    let t = self.b.ins().umax(v, l);
                    self.b.ins().umin(t, h)
                }
            }
            Node::Convert(a) => {
                let av = self.value(a);
                self.convert(e.expr(a).elem, elem, av)
            }
            Node::BitcastConvert(a) => {
                let av = self.value(a);
                self.bitcast_convert(e.expr(a).elem, elem, av)
            }
            Node::Acc { red, i } => self.b.use_var(self.accs[red as usize][i as usize]),
            Node::Arg { red, i } => {
                let v = e.reductions[red as usize].values[i as usize];
                self.value(v)
            }
            Node::Reduced { red, i } => self.b.use_var(self.accs[red as usize][i as usize]),
        }
    }

    /// An i64 index as a value of type `elem` (iota).
    fn int_to_elem(&mut self, v: Value, elem: ElementType) -> Value {
        match elem {
            ElementType::F64 => self.b.ins().fcvt_from_sint(types::F64, v),
            e if e.is_float() => {
                let f = self.b.ins().fcvt_from_sint(types::F32, v);
                self.narrow(e, f)
            }
            ElementType::S64 | ElementType::U64 => v,
            ElementType::Pred => {
                let c = self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0);
                c
            }
            e => self.b.ins().ireduce(reg(e), v),
        }
    }

    fn unary(&mut self, op: UnaryOp, from: ElementType, elem: ElementType, a: Value) -> Value {
        use UnaryOp::*;
        if op == IsFinite {
            let abs = self.b.ins().fabs(a);
            let inf = if reg(from) == types::F64 { self.b.ins().f64const(f64::INFINITY) } else { self.b.ins().f32const(f32::INFINITY) };
            return self.b.ins().fcmp(FloatCC::LessThan, abs, inf);
        }
        if elem.is_pred() {
            return match op {
                Not => self.b.ins().bxor_imm_s(a, 1),
                _ => {
                    self.fail(format!("{} on pred", op.hlo_name()));
                    a
                }
            };
        }
        if elem.is_int() {
            let ty = reg(elem);
            return match op {
                Abs if elem.is_signed_int() => self.b.ins().iabs(a),
                Abs => a,
                Neg => self.b.ins().ineg(a),
                Not => self.b.ins().bnot(a),
                Sign if elem.is_signed_int() => {
                    let m1 = self.b.ins().iconst(ty, crate::ir::literal::width_mask(elem) as i64);
                    let one = self.b.ins().iconst(ty, 1);
                    let t = self.b.ins().smax(a, m1);
                    self.b.ins().smin(t, one)
                }
                Sign => {
                    let c = self.b.ins().icmp_imm_s(IntCC::NotEqual, a, 0);
                    self.b.ins().uextend(ty, c)
                }
                PopCnt => self.b.ins().popcnt(a),
                Clz => self.b.ins().clz(a),
                _ => {
                    self.fail(format!("{} on {elem}", op.hlo_name()));
                    a
                }
            };
        }
        let r = match op {
            Abs => return self.b.ins().fabs(a),
            Neg => return self.b.ins().fneg(a),
            Floor => return self.b.ins().floor(a),
            Ceil => return self.b.ins().ceil(a),
            RoundEven => return self.b.ins().nearest(a),
            Sqrt => self.b.ins().sqrt(a),
            Not | PopCnt | Clz | IsFinite => {
                self.fail(format!("{} on {elem}", op.hlo_name()));
                return a;
            }
            _ => {
                // In f64 through the helper, as the interpreter computes it.
                let wide = if reg(elem) == types::F64 { a } else { self.b.ins().fpromote(types::F64, a) };
                let code = self.b.ins().iconst(types::I32, unary_code(op) as i64);
                let r = self.call("unary", &[code, wide]);
                if reg(elem) == types::F64 {
                    r
                } else {
                    self.b.ins().fdemote(types::F32, r)
                }
            }
        };
        self.narrow(elem, r)
    }

    fn binary(&mut self, op: BinaryOp, elem: ElementType, a: Value, c: Value) -> Value {
        use BinaryOp::*;
        let ty = reg(elem);
        if elem.is_pred() {
            return match op {
                Add | Max | Or => self.b.ins().bor(a, c),
                Mul | Min | And => self.b.ins().band(a, c),
                Xor => self.b.ins().bxor(a, c),
                _ => {
                    self.fail(format!("{} on pred", op.hlo_name()));
                    a
                }
            };
        }
        if elem.is_float() {
            let r = match op {
                Add => self.b.ins().fadd(a, c),
                Sub => self.b.ins().fsub(a, c),
                Mul => self.b.ins().fmul(a, c),
                Div => self.b.ins().fdiv(a, c),
                Max => return self.b.ins().fmax(a, c),
                Min => return self.b.ins().fmin(a, c),
                Rem | Pow | Atan2 => {
                    let (wa, wc) = if ty == types::F64 {
                        (a, c)
                    } else {
                        (self.b.ins().fpromote(types::F64, a), self.b.ins().fpromote(types::F64, c))
                    };
                    let code = self.b.ins().iconst(types::I32, binary_code(op) as i64);
                    let r = self.call("binary", &[code, wa, wc]);
                    if ty == types::F64 {
                        r
                    } else {
                        self.b.ins().fdemote(types::F32, r)
                    }
                }
                _ => {
                    self.fail(format!("{} on {elem}", op.hlo_name()));
                    return a;
                }
            };
            return self.narrow(elem, r);
        }
        let signed = elem.is_signed_int();
        let width = elem.bit_width() as i64;
        match op {
            Add => self.b.ins().iadd(a, c),
            Sub => self.b.ins().isub(a, c),
            Mul => self.b.ins().imul(a, c),
            And => self.b.ins().band(a, c),
            Or => self.b.ins().bor(a, c),
            Xor => self.b.ins().bxor(a, c),
            Max if signed => self.b.ins().smax(a, c),
            Max => self.b.ins().umax(a, c),
            Min if signed => self.b.ins().smin(a, c),
            Min => self.b.ins().umin(a, c),
            Div | Rem => {
                // x / 0 = -1 (all ones), x % 0 = x; INT_MIN / -1 wraps, INT_MIN % -1 = 0.
                let one = self.b.ins().iconst(ty, 1);
                let zero_div = self.b.ins().icmp_imm_s(IntCC::Equal, c, 0);
                let mut bad = zero_div;
                if signed {
                    let min = self.b.ins().iconst(ty, (1u64 << (width - 1)) as i64 & crate::ir::literal::width_mask(elem) as i64);
                    let is_min = self.b.ins().icmp(IntCC::Equal, a, min);
                    let is_m1 = self.b.ins().icmp_imm_s(IntCC::Equal, c, -1);
                    let ovf = self.b.ins().band(is_min, is_m1);
                    bad = self.b.ins().bor(bad, ovf);
                }
                let safe = self.b.ins().select(bad, one, c);
                let q = match (op, signed) {
                    (Div, true) => self.b.ins().sdiv(a, safe),
                    (Div, false) => self.b.ins().udiv(a, safe),
                    (_, true) => self.b.ins().srem(a, safe),
                    (_, false) => self.b.ins().urem(a, safe),
                };
                let on_zero = if op == Div { self.b.ins().iconst(ty, crate::ir::literal::width_mask(elem) as i64) } else { a };
                self.b.ins().select(zero_div, on_zero, q)
            }
            ShiftLeft | ShiftRightLogical | ShiftRightArithmetic => {
                let in_range = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, c, width);
                let (shifted, fallback) = match op {
                    ShiftLeft => (self.b.ins().ishl(a, c), self.b.ins().iconst(ty, 0)),
                    ShiftRightLogical => (self.b.ins().ushr(a, c), self.b.ins().iconst(ty, 0)),
                    _ => (self.b.ins().sshr(a, c), self.b.ins().sshr_imm_s(a, width - 1)),
                };
                self.b.ins().select(in_range, shifted, fallback)
            }
            _ => {
                self.fail(format!("{} on {elem}", op.hlo_name()));
                a
            }
        }
    }

    fn compare(&mut self, dir: CmpDir, total: bool, elem: ElementType, a: Value, c: Value) -> Value {
        if elem.is_float() && !total {
            let cc = match dir {
                CmpDir::Eq => FloatCC::Equal,
                CmpDir::Ne => FloatCC::NotEqual,
                CmpDir::Lt => FloatCC::LessThan,
                CmpDir::Le => FloatCC::LessThanOrEqual,
                CmpDir::Gt => FloatCC::GreaterThan,
                CmpDir::Ge => FloatCC::GreaterThanOrEqual,
            };
            return self.b.ins().fcmp(cc, a, c);
        }
        let (a, c, signed) = if elem.is_float() {
            // Total order: the bits as a signed integer, negatives with their magnitude
            // bits flipped.
            let ity = if reg(elem) == types::F64 { types::I64 } else { types::I32 };
            let key = |s: &mut Self, v: Value| {
                let bits = s.b.ins().bitcast(ity, MemFlagsData::new(), v);
                let sign = s.b.ins().sshr_imm_s(bits, ity.bits() as i64 - 1);
                let mag = s.b.ins().ushr_imm_u(sign, 1);
                s.b.ins().bxor(bits, mag)
            };
            (key(self, a), key(self, c), true)
        } else {
            (a, c, elem.is_signed_int())
        };
        let cc = match (dir, signed) {
            (CmpDir::Eq, _) => IntCC::Equal,
            (CmpDir::Ne, _) => IntCC::NotEqual,
            (CmpDir::Lt, true) => IntCC::SignedLessThan,
            (CmpDir::Le, true) => IntCC::SignedLessThanOrEqual,
            (CmpDir::Gt, true) => IntCC::SignedGreaterThan,
            (CmpDir::Ge, true) => IntCC::SignedGreaterThanOrEqual,
            (CmpDir::Lt, false) => IntCC::UnsignedLessThan,
            (CmpDir::Le, false) => IntCC::UnsignedLessThanOrEqual,
            (CmpDir::Gt, false) => IntCC::UnsignedGreaterThan,
            (CmpDir::Ge, false) => IntCC::UnsignedGreaterThanOrEqual,
        };
        self.b.ins().icmp(cc, a, c)
    }

    fn convert(&mut self, from: ElementType, to: ElementType, v: Value) -> Value {
        let (fty, tty) = (reg(from), reg(to));
        if to.is_pred() {
            return if from.is_float() {
                let z = if fty == types::F64 { self.b.ins().f64const(0.0) } else { self.b.ins().f32const(0.0) };
                self.b.ins().fcmp(FloatCC::NotEqual, v, z)
            } else {
                self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0)
            };
        }
        if !from.is_float() && !to.is_float() {
            // Integer (or pred) to integer: extend by the source's signedness, or wrap.
            let from_bits = fty.bits();
            let to_bits = tty.bits();
            return if to_bits == from_bits {
                v
            } else if to_bits < from_bits {
                self.b.ins().ireduce(tty, v)
            } else if from.is_signed_int() {
                self.b.ins().sextend(tty, v)
            } else {
                self.b.ins().uextend(tty, v)
            };
        }
        if !from.is_float() {
            // Integer to float: widen narrow integers first (Cranelift converts from 32/64).
            let w = if fty.bits() < 32 {
                if from.is_signed_int() {
                    self.b.ins().sextend(types::I32, v)
                } else {
                    self.b.ins().uextend(types::I32, v)
                }
            } else {
                v
            };
            let f = if from.is_signed_int() { self.b.ins().fcvt_from_sint(tty, w) } else { self.b.ins().fcvt_from_uint(tty, w) };
            return self.narrow(to, f);
        }
        if to.is_float() {
            let f = match (fty == types::F64, tty == types::F64) {
                (true, true) | (false, false) => v,
                (false, true) => self.b.ins().fpromote(types::F64, v),
                (true, false) => self.b.ins().fdemote(types::F32, v),
            };
            return if to == from { f } else { self.narrow(to, f) };
        }
        // Float to integer: truncate, saturate, NaN -> 0.
        let signed = to.is_signed_int();
        if tty.bits() >= 32 {
            return if signed { self.b.ins().fcvt_to_sint_sat(tty, v) } else { self.b.ins().fcvt_to_uint_sat(tty, v) };
        }
        let wide = if signed { self.b.ins().fcvt_to_sint_sat(types::I32, v) } else { self.b.ins().fcvt_to_uint_sat(types::I32, v) };
        let bits = tty.bits();
        let clamped = if signed {
            let lo = self.b.ins().iconst(types::I32, -(1i64 << (bits - 1)));
            let hi = self.b.ins().iconst(types::I32, (1i64 << (bits - 1)) - 1);
            let t = self.b.ins().smax(wide, lo);
            self.b.ins().smin(t, hi)
        } else {
            let hi = self.b.ins().iconst(types::I32, (1i64 << bits) - 1);
            self.b.ins().umin(wide, hi)
        };
        self.b.ins().ireduce(tty, clamped)
    }

    fn bitcast_convert(&mut self, from: ElementType, to: ElementType, v: Value) -> Value {
        if from == to {
            return v;
        }
        if from.is_pred() || to.is_pred() {
            self.fail(format!("bitcast-convert {from} -> {to}"));
            return v;
        }
        // f16/bf16 live widened in f32 registers: go through their 16-bit patterns.
        let bits = match from {
            ElementType::F16 | ElementType::BF16 => self.half_bits(from, v),
            _ if reg(from) == reg(to) => return v,
            _ => v,
        };
        match to {
            ElementType::F16 | ElementType::BF16 => self.half_from_bits(to, bits),
            _ if self.b.func.dfg.value_type(bits) == reg(to) => bits,
            _ => self.b.ins().bitcast(reg(to), MemFlagsData::new(), bits),
        }
    }

    /// The 16-bit pattern (as i16) of an f16/bf16 value held in an f32 register.
    fn half_bits(&mut self, elem: ElementType, val: Value) -> Value {
        if elem == ElementType::F16 {
            let bits = self.call("f32_to_f16", &[val]);
            self.b.ins().ireduce(types::I16, bits)
        } else {
            // Already rounded to bf16: its bits are the f32's top half.
            let bits = self.b.ins().bitcast(types::I32, MemFlagsData::new(), val);
            let hi = self.b.ins().ushr_imm_u(bits, 16);
            self.b.ins().ireduce(types::I16, hi)
        }
    }

    /// An f16/bf16 value (widened to f32) from its 16-bit pattern (an i16).
    fn half_from_bits(&mut self, elem: ElementType, bits: Value) -> Value {
        let w = self.b.ins().uextend(types::I32, bits);
        if elem == ElementType::F16 {
            self.call("f16_to_f32", &[w])
        } else {
            let hi = self.b.ins().ishl_imm_u(w, 16);
            self.b.ins().bitcast(types::F32, MemFlagsData::new(), hi)
        }
    }
}
