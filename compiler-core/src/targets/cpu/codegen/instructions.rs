//! The Cranelift instructions of the lowering driver's nodes ([`Lower`]), at the
//! current lanes: scalars, or the vector plan's vectors.

use super::*;

impl<'a, 'f> Emit<'a, 'f> {
    pub(super) fn call(&mut self, helper: &str, args: &[Value]) -> Value {
        let f = self.refs[helper];
        let inst = self.b.ins().call(f, args);
        self.b.inst_results(inst)[0]
    }

    /// A constant of `elem` at the current lanes.
    pub(super) fn konst(&mut self, elem: ElementType, s: Scalar) -> Value {
        let x = match elem {
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
        };
        self.splat(elem, x)
    }

    /// Rounds an f32-carried f16/bf16 result to its precision (scalars only: kernels
    /// with f16/bf16 are not vectorized).
    pub(super) fn narrow(&mut self, elem: ElementType, v: Value) -> Value {
        match elem {
            ElementType::F16 if self.inline_half => half_floats::round_f16(&mut self.b, v),
            ElementType::BF16 if self.inline_half => half_floats::round_bf16(&mut self.b, v),
            ElementType::F16 => self.call("hs_round_f16", &[v]),
            ElementType::BF16 => self.call("hs_round_bf16", &[v]),
            _ => v,
        }
    }

    /// Makes node `x`'s HLO instruction (`Elemental::origins`) the source location of
    /// the instructions emitted next, so listings link code to HLO; returns the location
    /// it replaces, for the caller to restore.
    pub(super) fn enter_origin(&mut self, x: ExprId) -> SourceLoc {
        let caller = self.b.srcloc();
        if let Some(&Some(origin)) = self.e.origins.get(x.0 as usize) {
            self.b.set_srcloc(SourceLoc::new(origin));
        }
        caller
    }

    /// Float max/min of a value and a constant ([`max_min_by_constant`]) as one
    /// compare-and-select in the operand order x86-64 lowers to a single
    /// `maxps`/`minps`, instead of the generic sequence that orders NaNs and zeros (eight
    /// instructions).
    pub(super) fn max_min_constant(&mut self, op: BinaryOp, elem: ElementType, a: ExprId, c: ExprId) -> Option<Value> {
        let m = max_min_by_constant(self.e, op, elem, a, c)?;
        let xv = self.value(m.x);
        let kv = self.konst(elem, Scalar::F(m.k));
        let (lo, hi) = if m.max { (xv, kv) } else { (kv, xv) };
        let pick_k = self.b.ins().fcmp(FloatCC::LessThan, lo, hi);
        let r = if self.lanes > 1 {
            let ty = self.b.func.dfg.value_type(xv);
            let mask = self.b.ins().bitcast(ty, MemFlagsData::new(), pick_k);
            self.b.ins().bitselect(mask, kv, xv)
        } else {
            self.b.ins().select(pick_k, kv, xv)
        };
        Some(if m.add_zero {
            let zero = self.konst(elem, Scalar::F(0.0));
            self.b.ins().fadd(r, zero)
        } else {
            r
        })
    }

    /// An i64 index as a scalar of type `elem` (iota).
    pub(super) fn int_to_elem(&mut self, v: Value, elem: ElementType) -> Value {
        match elem {
            ElementType::F64 => self.b.ins().fcvt_from_sint(types::F64, v),
            e if e.is_float() => {
                let f = self.b.ins().fcvt_from_sint(types::F32, v);
                self.narrow(e, f)
            }
            ElementType::S64 | ElementType::U64 => v,
            ElementType::Pred => self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0),
            e => self.b.ins().ireduce(reg(e), v),
        }
    }

    /// Converts a vector between types of one lane width (the plan ensures it), or to
    /// and from pred masks.
    pub(super) fn convert_vec(&mut self, from: ElementType, to: ElementType, v: Value) -> Value {
        let tty = self.ty(to);
        if to.is_pred() {
            let zero = self.const_like(v, 0, 0.0);
            return if from.is_float() {
                self.b.ins().fcmp(FloatCC::NotEqual, v, zero)
            } else {
                self.b.ins().icmp(IntCC::NotEqual, v, zero)
            };
        }
        // A mask -> 0/1 in an integer of the same width.
        let (v, from) = if from.is_pred() {
            let one = self.const_like(v, 1, 0.0);
            (self.b.ins().band(v, one), ElementType::S32)
        } else {
            (v, from)
        };
        match (from.is_float(), to.is_float()) {
            (false, false) | (true, true) => v,
            (false, true) if from.is_signed_int() => self.b.ins().fcvt_from_sint(tty, v),
            (false, true) => self.b.ins().fcvt_from_uint(tty, v),
            (true, false) if to.is_signed_int() => self.b.ins().fcvt_to_sint_sat(tty, v),
            (true, false) => self.b.ins().fcvt_to_uint_sat(tty, v),
        }
    }

    /// exp, log, tanh, ...: inline approximations for f32 and f32 vectors, C library
    /// calls for f64 (lane by lane in vectors); see `math`.
    pub(super) fn transcendental(&mut self, op: UnaryOp, elem: ElementType, a: Value) -> Value {
        let refs = &self.refs;
        let mut call = |b: &mut FunctionBuilder, name: &'static str, args: &[Value]| {
            let inst = b.ins().call(refs[name], args);
            b.inst_results(inst)[0]
        };
        match math::unary(&mut self.b, self.fma, op, a, &mut call) {
            Some(r) => r,
            None => {
                self.fail(format!("{} on {elem}", op.hlo_name()));
                a
            }
        }
    }

    /// `convert` of a scalar.
    pub(super) fn convert_scalar(&mut self, from: ElementType, to: ElementType, v: Value) -> Value {
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
            let f = if from.is_signed_int() {
                self.b.ins().fcvt_from_sint(tty, w)
            } else {
                self.b.ins().fcvt_from_uint(tty, w)
            };
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
        let wide = if signed {
            self.b.ins().fcvt_to_sint_sat(types::I32, v)
        } else {
            self.b.ins().fcvt_to_uint_sat(types::I32, v)
        };
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

    pub(super) fn bitcast_convert(&mut self, from: ElementType, to: ElementType, v: Value) -> Value {
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
    pub(super) fn half_bits(&mut self, elem: ElementType, val: Value) -> Value {
        if elem == ElementType::F16 {
            let bits = if self.inline_half {
                half_floats::f32_to_f16_bits(&mut self.b, val)
            } else {
                self.call("hs_f32_to_f16", &[val])
            };
            self.b.ins().ireduce(types::I16, bits)
        } else {
            // Already rounded to bf16: its bits are the f32's top half.
            let bits = self.b.ins().bitcast(types::I32, MemFlagsData::new(), val);
            let hi = self.b.ins().ushr_imm_u(bits, 16);
            self.b.ins().ireduce(types::I16, hi)
        }
    }

    /// An f16/bf16 value (widened to f32) from its 16-bit pattern (an i16).
    pub(super) fn half_from_bits(&mut self, elem: ElementType, bits: Value) -> Value {
        let w = self.b.ins().uextend(types::I32, bits);
        if elem == ElementType::F16 {
            if self.inline_half {
                half_floats::f16_bits_to_f32(&mut self.b, w)
            } else {
                self.call("hs_f16_to_f32", &[w])
            }
        } else {
            let hi = self.b.ins().ishl_imm_u(w, 16);
            self.b.ins().bitcast(types::F32, MemFlagsData::new(), hi)
        }
    }

    /// Sets the accumulators to `inits` (per reduction and value).
    pub(super) fn set_accumulators(&mut self, inits: Vec<Vec<Value>>) {
        for (k, vals) in inits.into_iter().enumerate() {
            for (i, v) in vals.into_iter().enumerate() {
                self.b.def_var(self.accs[k][i], v);
            }
        }
    }
}

impl<'a, 'f> Lower<'a> for Emit<'a, 'f> {
    type Value = Value;
    type Index = Value;

    fn elemental(&self) -> &'a Elemental {
        self.e
    }

    fn memo(&mut self) -> &mut Memo<Value, Value> {
        &mut self.memo
    }

    fn fail(&mut self, msg: String) {
        if self.err.is_none() {
            self.err = Some(msg);
        }
    }

    fn var(&mut self, v: u32) -> Value {
        self.vars[v as usize].expect("variable in scope")
    }

    fn index_const(&mut self, c: i64) -> Value {
        self.b.ins().iconst(types::I64, c)
    }

    fn index_add(&mut self, a: Value, c: Value) -> Value {
        self.b.ins().iadd(a, c)
    }

    fn index_mul(&mut self, a: Value, k: i64) -> Value {
        self.b.ins().imul_imm_s(a, k)
    }

    fn index_div(&mut self, a: Value, k: i64) -> Value {
        let k = self.b.ins().iconst(types::I64, k);
        self.b.ins().sdiv(a, k)
    }

    fn index_rem(&mut self, a: Value, k: i64) -> Value {
        let k = self.b.ins().iconst(types::I64, k);
        self.b.ins().srem(a, k)
    }

    fn index_clamp(&mut self, a: Value, lo: i64, hi: i64) -> Value {
        let lo = self.b.ins().iconst(types::I64, lo);
        let hi = self.b.ins().iconst(types::I64, hi);
        let t = self.b.ins().smax(a, lo);
        self.b.ins().smin(t, hi)
    }

    /// An integer (or pred) value as an i64 index: signed types sign-extend, unsigned
    /// ones zero-extend, u64 above `i64::MAX` saturates (as the interpreter reads start
    /// indices).
    fn data_index(&mut self, elem: ElementType, v: Value) -> Value {
        if reg(elem) == types::I64 {
            if elem.is_signed_int() {
                return v;
            }
            let max = self.b.ins().iconst(types::I64, i64::MAX);
            return self.b.ins().umin(v, max);
        }
        if elem.is_signed_int() {
            self.b.ins().sextend(types::I64, v)
        } else {
            self.b.ins().uextend(types::I64, v)
        }
    }

    /// A load at the current lanes: one element, a contiguous vector, a splat of an
    /// element the vector variable does not move, or lane by lane.
    fn load(&mut self, x: ExprId, input: u32, linear: IdxId) -> Value {
        let base = self.bases[input as usize];
        let in_elem = self.e.input_elems[input as usize];
        if self.lanes == 1 {
            let l = self.index(linear);
            return self.load_elem(in_elem, base, l);
        }
        match self.dependence(linear) {
            Dependence::Invariant => {
                // One load per loop step, shared by its unrolled vectors (loads are
                // not merged by Cranelift, the arithmetic on them is). Only where a
                // step is straight-line code: a column reduction's steps hold loops.
                let shared = !matches!(self.vp.as_ref().map(|p| &p.kind), Some(VecKind::Column));
                if let Some(&v) = self.step_invariants.get(&x).filter(|_| shared) {
                    return v;
                }
                let l = self.index(linear);
                let s = self.load_elem(in_elem, base, l);
                let v = self.splat(in_elem, s);
                if shared {
                    self.step_invariants.insert(x, v);
                }
                v
            }
            Dependence::Affine(1) => {
                let (l, off) = self.vector_index(&mut |s| s.index(linear));
                self.load_vec(in_elem, base, l, off)
            }
            _ => {
                let ls = self.lane_indices(linear);
                let xs: Vec<Value> = ls.into_iter().map(|l| self.load_elem(in_elem, base, l)).collect();
                self.vector_from_lanes(in_elem, &xs)
            }
        }
    }

    fn constant(&mut self, elem: ElementType, s: Scalar) -> Value {
        self.konst(elem, s)
    }

    fn iota(&mut self, i: IdxId, elem: ElementType) -> Value {
        if self.lanes == 1 {
            let v = self.index(i);
            return self.int_to_elem(v, elem);
        }
        let ls = self.lane_indices(i);
        let xs: Vec<Value> = ls.into_iter().map(|l| self.int_to_elem(l, elem)).collect();
        self.vector_from_lanes(elem, &xs)
    }

    fn in_range(&mut self, i: IdxId, lo: i64, hi: i64) -> Value {
        let vector = self.lanes > 1;
        let ls = if vector { self.lane_indices(i) } else { vec![self.index(i)] };
        let xs: Vec<Value> = ls
            .into_iter()
            .map(|v| {
                let a = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, v, lo);
                let c = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, v, hi);
                self.b.ins().band(a, c)
            })
            .collect();
        if vector {
            self.vector_from_lanes(ElementType::Pred, &xs)
        } else {
            xs[0]
        }
    }

    /// Unary `op` on a scalar or a vector `a` (its type says which; `from` is the
    /// operand's element type, `elem` the result's).
    fn unary(&mut self, op: UnaryOp, from: ElementType, elem: ElementType, a: Value) -> Value {
        use UnaryOp::*;
        let vector = self.b.func.dfg.value_type(a).is_vector();
        if op == IsFinite {
            let abs = math::fabs(&mut self.b, a);
            let inf = self.const_like(a, 0, f64::INFINITY);
            return self.b.ins().fcmp(FloatCC::LessThan, abs, inf);
        }
        if elem.is_pred() {
            return match op {
                Not if vector => self.b.ins().bnot(a),
                Not => self.b.ins().bxor_imm_s(a, 1),
                _ => {
                    self.fail(format!("{} on pred", op.hlo_name()));
                    a
                }
            };
        }
        if elem.is_int() {
            return match op {
                Abs if elem.is_signed_int() => self.b.ins().iabs(a),
                Abs => a,
                Neg => self.b.ins().ineg(a),
                Not => self.b.ins().bnot(a),
                Sign if elem.is_signed_int() => {
                    let m1 = self.const_like(a, crate::ir::literal::width_mask(elem) as i64, 0.0);
                    let one = self.const_like(a, 1, 0.0);
                    let t = self.b.ins().smax(a, m1);
                    self.b.ins().smin(t, one)
                }
                Sign if vector => {
                    let zero = self.const_like(a, 0, 0.0);
                    let one = self.const_like(a, 1, 0.0);
                    let c = self.b.ins().icmp(IntCC::NotEqual, a, zero);
                    self.b.ins().band(c, one)
                }
                Sign => {
                    let c = self.b.ins().icmp_imm_s(IntCC::NotEqual, a, 0);
                    self.b.ins().uextend(reg(elem), c)
                }
                PopCnt if !vector => self.b.ins().popcnt(a),
                Clz if !vector => self.b.ins().clz(a),
                _ => {
                    self.fail(format!("{} on {elem}", op.hlo_name()));
                    a
                }
            };
        }
        let _ = from;
        let r = match op {
            Abs => return math::fabs(&mut self.b, a),
            Neg => return math::fneg(&mut self.b, a),
            Floor => return self.b.ins().floor(a),
            Ceil => return self.b.ins().ceil(a),
            RoundEven => return self.b.ins().nearest(a),
            Sqrt => self.b.ins().sqrt(a),
            Not | PopCnt | Clz | IsFinite => {
                self.fail(format!("{} on {elem}", op.hlo_name()));
                return a;
            }
            _ => self.transcendental(op, elem, a),
        };
        self.narrow(elem, r)
    }

    fn binary(&mut self, op: BinaryOp, elem: ElementType, a: Value, c: Value) -> Value {
        use BinaryOp::*;
        let ty = reg(elem);
        let a_vec = self.b.func.dfg.value_type(a).is_vector();
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
                    let refs = &self.refs;
                    let mut call = |b: &mut FunctionBuilder, name: &'static str, args: &[Value]| {
                        let inst = b.ins().call(refs[name], args);
                        b.inst_results(inst)[0]
                    };
                    match math::binary(&mut self.b, self.fma, op, a, c, &mut call) {
                        Some(r) => r,
                        None => {
                            self.fail(format!("{} on {elem}", op.hlo_name()));
                            return a;
                        }
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
            Div | Rem if !a_vec => {
                // x / 0 = -1 (all ones), x % 0 = x; INT_MIN / -1 wraps, INT_MIN % -1 = 0.
                let one = self.b.ins().iconst(ty, 1);
                let zero_div = self.b.ins().icmp_imm_s(IntCC::Equal, c, 0);
                let mut bad = zero_div;
                if signed {
                    let min = self
                        .b
                        .ins()
                        .iconst(ty, (1u64 << (width - 1)) as i64 & crate::ir::literal::width_mask(elem) as i64);
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
                let on_zero =
                    if op == Div { self.b.ins().iconst(ty, crate::ir::literal::width_mask(elem) as i64) } else { a };
                self.b.ins().select(zero_div, on_zero, q)
            }
            ShiftLeft | ShiftRightLogical | ShiftRightArithmetic if !a_vec => {
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
            let fty = self.b.func.dfg.value_type(a);
            let ity = fty.as_int();
            let key = |s: &mut Self, v: Value| {
                let bits = s.b.ins().bitcast(ity, if fty.is_vector() { lane_order() } else { MemFlagsData::new() }, v);
                let top = s.b.ins().iconst(types::I32, ity.lane_bits() as i64 - 1);
                let one = s.b.ins().iconst(types::I32, 1);
                let sign = s.b.ins().sshr(bits, top);
                let mag = s.b.ins().ushr(sign, one);
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

    fn select(&mut self, p: Value, t: Value, f: Value) -> Value {
        if self.lanes == 1 {
            return self.b.ins().select(p, t, f);
        }
        let ty = self.b.func.dfg.value_type(t);
        let mask = if self.b.func.dfg.value_type(p) == ty { p } else { self.b.ins().bitcast(ty, lane_order(), p) };
        self.b.ins().bitselect(mask, t, f)
    }

    fn clamp(&mut self, elem: ElementType, l: Value, v: Value, h: Value) -> Value {
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

    fn convert(&mut self, from: ElementType, to: ElementType, v: Value) -> Value {
        if self.lanes > 1 {
            self.convert_vec(from, to, v)
        } else {
            self.convert_scalar(from, to, v)
        }
    }

    fn bitcast(&mut self, from: ElementType, to: ElementType, v: Value) -> Value {
        if self.lanes == 1 {
            return self.bitcast_convert(from, to, v);
        }
        let ty = self.ty(to);
        if self.b.func.dfg.value_type(v) == ty {
            v
        } else {
            self.b.ins().bitcast(ty, lane_order(), v)
        }
    }

    fn accumulator(&mut self, red: u32, i: u32) -> Value {
        self.b.use_var(self.accs[red as usize][i as usize])
    }

    /// Loops over `vars` (outermost first) around `body`.
    fn nest(&mut self, vars: &[u32], body: &mut dyn FnMut(&mut Self)) {
        let Some((&v, rest)) = vars.split_first() else { return body(self) };
        let (lo, hi) = self.bounds(v);
        self.counted_loop(lo, hi, 1, &mut |s, i| {
            s.vars[v as usize] = Some(i);
            s.nest(rest, body);
        });
    }

    /// Declares the accumulators at the current lanes' types and sets them.
    fn begin_accumulators(&mut self, inits: Vec<Vec<Value>>) {
        let e = self.e;
        self.accs = Vec::new();
        for red in &e.reductions {
            let mut vs = Vec::new();
            for &init in &red.inits {
                let ty = self.ty(e.expr(init).elem);
                vs.push(self.b.declare_var(ty));
            }
            self.accs.push(vs);
        }
        self.set_accumulators(inits);
    }

    fn update_accumulators(&mut self, updates: Vec<(u32, u32, Value)>) {
        for (k, i, v) in updates {
            self.b.def_var(self.accs[k as usize][i as usize], v);
        }
    }

    fn store(&mut self, o: usize, v: Value) {
        self.store_value(o, v);
    }

    /// The instructions made for a node carry its HLO instruction; its operands' carry
    /// theirs.
    fn enter_node(&mut self, x: ExprId) {
        let caller = self.enter_origin(x);
        self.callers.push(caller);
    }

    fn leave_node(&mut self, _x: ExprId) {
        let caller = self.callers.pop().expect("a node being lowered");
        self.b.set_srcloc(caller);
    }

    fn precomputed(&mut self, x: ExprId) -> Option<Value> {
        self.block_result(x)
    }

    fn binary_of_nodes(&mut self, op: BinaryOp, elem: ElementType, a: ExprId, c: ExprId) -> Option<Value> {
        self.max_min_constant(op, elem, a, c)
    }
}
