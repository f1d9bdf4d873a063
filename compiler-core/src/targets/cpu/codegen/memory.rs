//! Loads and stores of scalars and vectors, and vectors built lane by lane.

use super::*;

impl<'a, 'f> Emit<'a, 'f> {
    /// Stores `val` as output `o` (as [`Emit::store`]).
    pub(super) fn store_value(&mut self, o: usize, val: Value) {
        let out = &self.e.outputs[o];
        let elem = out.elem;
        // A block function wrote it already (`BlockedOp::out`).
        if self.stage.is_some() && self.blocks.iter().any(|b| b.op.out == Some(o)) {
            return;
        }
        // Row-major with the vector variable last: stride 1 along it.
        let (linear, off) = self.vector_index(&mut |s| s.store_index(o));
        let base = self.bases[self.n_inputs + o];
        if self.lanes > 1 {
            self.store_vec(elem, val, base, linear, off);
        } else {
            self.store_elem(out.elem, val, base, linear);
        }
    }

    pub(super) fn address(&mut self, base: Value, linear: Value, elem: ElementType) -> Value {
        let off = self.b.ins().imul_imm_s(linear, elem.byte_size() as i64);
        self.b.ins().iadd(base, off)
    }

    pub(super) fn store_elem(&mut self, elem: ElementType, val: Value, base: Value, linear: Value) {
        let addr = self.address(base, linear, elem);
        let v = match elem {
            ElementType::F16 | ElementType::BF16 => self.half_bits(elem, val),
            _ => val,
        };
        self.b.ins().store(flags(), v, addr, 0);
    }

    /// Stores a vector at `linear + off..linear + off + lanes` (`off` in elements, an
    /// immediate); pred masks as bytes 0/1.
    pub(super) fn store_vec(&mut self, elem: ElementType, val: Value, base: Value, linear: Value, off: i64) {
        let addr = self.address(base, linear, elem);
        let disp = (off * elem.byte_size() as i64) as i32;
        if !elem.is_pred() {
            self.b.ins().store(flags(), val, addr, disp);
            return;
        }
        if self.b.func.dfg.value_type(val).lane_bits() == 8 {
            let one = self.konst(ElementType::U8, Scalar::U(1));
            let bytes = self.b.ins().band(val, one);
            self.b.ins().store(flags(), bytes, addr, disp);
            return;
        }
        for l in 0..self.lanes {
            let x = self.b.ins().extractlane(val, l as u8);
            let byte = if self.b.func.dfg.value_type(x) == types::I8 { x } else { self.b.ins().ireduce(types::I8, x) };
            let bit = self.b.ins().band_imm_s(byte, 1);
            self.b.ins().store(flags(), bit, addr, disp + l as i32);
        }
    }

    /// One element, in its scalar register.
    pub(super) fn load_elem(&mut self, elem: ElementType, base: Value, linear: Value) -> Value {
        let addr = self.address(base, linear, elem);
        match elem {
            ElementType::F16 | ElementType::BF16 => {
                let bits = self.b.ins().load(types::I16, flags(), addr, 0);
                self.half_from_bits(elem, bits)
            }
            _ => self.b.ins().load(reg(elem), flags(), addr, 0),
        }
    }

    /// Elements `linear + off..linear + off + lanes` as a vector (`off` in elements, an
    /// immediate); pred bytes become masks.
    pub(super) fn load_vec(&mut self, elem: ElementType, base: Value, linear: Value, off: i64) -> Value {
        let addr = self.address(base, linear, elem);
        let disp = (off * elem.byte_size() as i64) as i32;
        let ty = self.ty(elem);
        if !elem.is_pred() {
            return self.b.ins().load(ty, flags(), addr, disp);
        }
        if ty.lane_bits() == 8 {
            let bytes = self.b.ins().load(ty, flags(), addr, disp);
            return self.b.ins().ineg(bytes);
        }
        let lanes: Vec<Value> =
            (0..self.lanes).map(|l| self.b.ins().load(types::I8, flags(), addr, disp + l as i32)).collect();
        self.vector_from_lanes(elem, &lanes)
    }

    /// Evaluates `index`, an index with stride 1 along the vector variable, at the
    /// current unrolled step's first vector; returns it with the current vector's offset
    /// from there (elements, 0 outside vector steps), for [`Emit::load_vec`] and
    /// [`Emit::store_vec`].
    pub(super) fn vector_index(&mut self, index: &mut dyn FnMut(&mut Self) -> Value) -> (Value, i64) {
        let Some((v, first, off)) = self.step_base.filter(|&(_, _, off)| off != 0 && self.lanes > 1) else {
            return (index(self), 0);
        };
        let saved = (self.vars[v as usize], std::mem::take(&mut self.memo.indices));
        self.vars[v as usize] = Some(first);
        let i = index(self);
        self.vars[v as usize] = saved.0;
        self.memo.indices = saved.1;
        (i, off)
    }

    /// A vector from one scalar register per lane (pred 0/1 become masks).
    pub(super) fn vector_from_lanes(&mut self, elem: ElementType, lanes: &[Value]) -> Value {
        let ty = self.ty(elem);
        let mut parts = Vec::with_capacity(lanes.len());
        for &x in lanes {
            parts.push(self.lane_of(elem, ty, x));
        }
        let mut v = self.b.ins().splat(ty, parts[0]);
        for (l, &x) in parts.iter().enumerate().skip(1) {
            v = self.b.ins().insertlane(v, x, l as u8);
        }
        v
    }

    /// A scalar register as a lane of vector type `ty`: a pred 0/1 becomes a mask lane.
    pub(super) fn lane_of(&mut self, elem: ElementType, ty: Type, x: Value) -> Value {
        if !elem.is_pred() {
            return x;
        }
        let lane = ty.lane_type();
        let w = if lane == types::I8 { x } else { self.b.ins().uextend(lane, x) };
        self.b.ins().ineg(w)
    }

    /// A scalar register splatted to the current lanes.
    pub(super) fn splat(&mut self, elem: ElementType, x: Value) -> Value {
        if self.lanes == 1 {
            return x;
        }
        let ty = self.ty(elem);
        let lane = self.lane_of(elem, ty, x);
        self.b.ins().splat(ty, lane)
    }

    /// A constant of the type of `like` (scalar or vector), from its lane's bits or value.
    pub(super) fn const_like(&mut self, like: Value, int: i64, float: f64) -> Value {
        let ty = self.b.func.dfg.value_type(like);
        let lane = ty.lane_type();
        let x = match lane {
            types::F32 => self.b.ins().f32const(float as f32),
            types::F64 => self.b.ins().f64const(float),
            _ => self.b.ins().iconst(lane, int),
        };
        if ty.is_vector() {
            self.b.ins().splat(ty, x)
        } else {
            x
        }
    }

    /// Index `i` at each lane of the current vector step (the vector variable is lane
    /// 0's value plus the lane number).
    pub(super) fn lane_indices(&mut self, i: IdxId) -> Vec<Value> {
        let v = self.vp.as_ref().expect("a vector plan").var as usize;
        let base = self.vars[v].expect("the vector variable in scope");
        let saved = std::mem::take(&mut self.memo.indices);
        let mut out = Vec::with_capacity(self.lanes as usize);
        for l in 0..self.lanes {
            self.vars[v] = Some(if l == 0 { base } else { self.b.ins().iadd_imm_s(base, l as i64) });
            out.push(self.index(i));
            self.memo.indices.clear();
        }
        self.vars[v] = Some(base);
        self.memo.indices = saved;
        out
    }

    /// How index `i` depends on the vector variable.
    pub(super) fn dependence(&self, i: IdxId) -> Dependence {
        let var = self.vp.as_ref().expect("a vector plan").var;
        self.indices.dependence(i, var)
    }
}
