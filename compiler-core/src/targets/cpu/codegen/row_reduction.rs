use super::*;

/// Whether a row reduction takes the fast max/min path (`Emit::row_reduction`): every
/// reduction is an f32/f64 max or min of one value, nothing is strip-mined, and no
/// output is stored inside the row (a second run would store it twice).
pub(super) fn fast_extrema(e: &Elemental, ops: &[BinaryOp], strip_mined: bool) -> bool {
    !strip_mined
        && !e.outputs.iter().any(|o| o.inner)
        && e.reductions.iter().zip(ops).all(|(red, op)| {
            matches!(op, BinaryOp::Max | BinaryOp::Min)
                && red.values.len() == 1
                && matches!(e.expr(red.values[0]).elem, ElementType::F32 | ElementType::F64)
        })
}

impl<'a, 'f> Emit<'a, 'f> {
    /// A row reduction with vector accumulators along the innermost reduced variable;
    /// they are combined into the scalar accumulators (which took the inits and the tail
    /// elements) after the reduced loops.
    ///
    /// Float max/min rows take a fast path first ([`fast_extrema`]): the exact
    /// IEEE max of Cranelift (`fmax`: NaN and signed zeros ordered) is eight x86
    /// instructions per vector, one `maxps` is not exact for a NaN operand or for
    /// `max(-0, +0)`. So the vector steps use `maxps` plus an add into a tracker that
    /// turns NaN if any element was NaN (or infinities of both signs met); a row whose
    /// tracker is NaN or whose result is a zero (of either sign, where the `maxps`
    /// order of zeros may have picked the wrong one) runs again with the exact ops. A
    /// softmax's row max drops from nine instructions per vector to three.
    pub(super) fn row_reduction(&mut self, inner: &[u32], ops: &[BinaryOp]) {
        let e = self.e;
        let vp = self.vp.clone().expect("a vector plan");
        self.new_region();
        let inits = self.inits();
        self.begin_accumulators(inits);
        let fast = fast_extrema(e, ops, !self.blocks.is_empty());
        // The vector accumulators (and trackers), declared at their vector type.
        self.lanes = vp.lanes;
        let types: Vec<Type> = e.reductions.iter().map(|red| self.ty(e.expr(red.values[0]).elem)).collect();
        self.lanes = 1;
        let declare = |b: &mut FunctionBuilder, ty: Type| (0..vp.unroll).map(|_| b.declare_var(ty)).collect::<Vec<_>>();
        self.vaccs = types.iter().map(|&ty| declare(&mut self.b, ty)).collect();
        self.trackers = if fast { types.iter().map(|&ty| declare(&mut self.b, ty)).collect() } else { Vec::new() };
        self.reset_vector_accumulators(ops);
        self.row_loop(inner, ops, fast);
        self.combine_vector_accumulators(ops);
        if fast {
            let suspect = self.suspect_extrema();
            let exact = self.b.create_block();
            let join = self.b.create_block();
            self.b.ins().brif(suspect, exact, &[], join, &[]);
            self.b.switch_to_block(exact);
            self.new_region();
            let inits = self.inits();
            self.set_accumulators(inits);
            self.reset_vector_accumulators(ops);
            self.row_loop(inner, ops, false);
            self.combine_vector_accumulators(ops);
            self.b.ins().jump(join, &[]);
            self.b.switch_to_block(join);
        }
        self.new_region();
        self.store_outputs(false);
    }

    /// Sets the vector accumulators to their op's identity (and the trackers to 0).
    pub(super) fn reset_vector_accumulators(&mut self, ops: &[BinaryOp]) {
        let e = self.e;
        let lanes = std::mem::replace(&mut self.lanes, self.vp.as_ref().map_or(1, |p| p.lanes));
        for (k, red) in e.reductions.iter().enumerate() {
            let elem = e.expr(red.values[0]).elem;
            for j in 0..self.vaccs[k].len() {
                let id = self.identity(ops[k], elem);
                self.b.def_var(self.vaccs[k][j], id);
            }
            for j in 0..self.trackers.get(k).map_or(0, Vec::len) {
                let zero = self.konst(elem, Scalar::F(0.0));
                self.b.def_var(self.trackers[k][j], zero);
            }
        }
        self.lanes = lanes;
    }

    /// The reduced loops of a row reduction: vector steps into the vector accumulators
    /// (fast max/min ones with trackers when `fast`), the tail into the scalar ones.
    pub(super) fn row_loop(&mut self, inner: &[u32], ops: &[BinaryOp], fast: bool) {
        let (&v, rest) = inner.split_last().expect("a row reduction has a reduced innermost variable");
        self.nest(rest, &mut |s| {
            s.split(v, &mut |s| {
                s.new_region();
                if s.lanes == 1 {
                    s.combine();
                } else {
                    for (k, red) in s.e.reductions.iter().enumerate() {
                        let elem = s.e.expr(red.values[0]).elem;
                        let x = s.value(red.values[0]);
                        let var = s.vaccs[k][s.step as usize];
                        let acc = s.b.use_var(var);
                        let r = if fast {
                            let t = s.trackers[k][s.step as usize];
                            let tv = s.b.use_var(t);
                            let tv = s.b.ins().fadd(tv, x);
                            s.b.def_var(t, tv);
                            s.sticky_extremum(ops[k], acc, x)
                        } else {
                            s.binary(ops[k], elem, acc, x)
                        };
                        s.b.def_var(var, r);
                    }
                }
                s.store_outputs(true);
            })
        });
    }

    /// `acc < x ? x : acc` for max, `x < acc ? x : acc` for min: one `maxps`/`minps`
    /// (the operand order Cranelift lowers so). A NaN `acc` stays; a NaN `x` is
    /// dropped, and a zero keeps whichever came first: the trackers catch both.
    pub(super) fn sticky_extremum(&mut self, op: BinaryOp, acc: Value, x: Value) -> Value {
        let take_x = match op {
            BinaryOp::Max => self.b.ins().fcmp(FloatCC::LessThan, acc, x),
            _ => self.b.ins().fcmp(FloatCC::LessThan, x, acc),
        };
        let ty = self.b.func.dfg.value_type(acc);
        let mask = self.b.ins().bitcast(ty, MemFlagsData::new(), take_x);
        self.b.ins().bitselect(mask, x, acc)
    }

    /// After a fast max/min row: whether it must run again exactly (i8 flag): a
    /// tracker lane is NaN, or a result is a zero.
    pub(super) fn suspect_extrema(&mut self) -> Value {
        let e = self.e;
        let mut suspect = self.b.ins().iconst(types::I8, 0);
        for k in 0..self.trackers.len() {
            for j in 0..self.trackers[k].len() {
                let t = self.b.use_var(self.trackers[k][j]);
                let nan = self.b.ins().fcmp(FloatCC::Unordered, t, t);
                let any = self.b.ins().vany_true(nan);
                suspect = self.b.ins().bor(suspect, any);
            }
            let elem = e.expr(e.reductions[k].values[0]).elem;
            let acc = self.b.use_var(self.accs[k][0]);
            let zero = self.konst(elem, Scalar::F(0.0));
            let is_zero = self.b.ins().fcmp(FloatCC::Equal, acc, zero);
            suspect = self.b.ins().bor(suspect, is_zero);
        }
        suspect
    }

    /// Folds the vector accumulators, exactly, into the scalar ones.
    pub(super) fn combine_vector_accumulators(&mut self, ops: &[BinaryOp]) {
        let e = self.e;
        let vp = self.vp.clone().expect("a vector plan");
        self.new_region();
        for (k, red) in e.reductions.iter().enumerate() {
            let elem = e.expr(red.values[0]).elem;
            let mut t = self.b.use_var(self.vaccs[k][0]);
            for j in 1..vp.unroll as usize {
                let u = self.b.use_var(self.vaccs[k][j]);
                t = self.binary(ops[k], elem, t, u);
            }
            let mut h = self.lane_scalar(elem, t, 0);
            for l in 1..vp.lanes {
                let x = self.lane_scalar(elem, t, l);
                h = self.binary(ops[k], elem, h, x);
            }
            let acc = self.b.use_var(self.accs[k][0]);
            let r = self.binary(ops[k], elem, acc, h);
            self.b.def_var(self.accs[k][0], r);
        }
    }

    /// The identity of associative `op` on `elem` ([`reduction::identity`]), at the
    /// current lanes.
    pub(super) fn identity(&mut self, op: BinaryOp, elem: ElementType) -> Value {
        let id = reduction::identity(op, elem).expect("a row reduction's op is associative (vector::plan)");
        self.konst(elem, id)
    }

    /// Lane `l` of vector `v` as a scalar register of `elem`.
    pub(super) fn lane_scalar(&mut self, elem: ElementType, v: Value, l: u32) -> Value {
        let x = self.b.ins().extractlane(v, l as u8);
        if elem.is_pred() {
            self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
        } else {
            x
        }
    }
}
