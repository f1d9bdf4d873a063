//! Strip-mining: a vector loop's transcendentals evaluated a block at a time by native
//! block functions (see the module doc of `codegen`).

use super::*;

/// Elements per block of a strip-mined loop: a multiple of every vector step (16 f32
/// lanes), small enough that the block buffers stay in the L1 cache, large enough that
/// one call per block costs little next to the block's work.
pub(super) const BLOCK: i64 = 512;

/// At most this many blocked ops per kernel (each takes a stack buffer of [`BLOCK`]
/// floats, 2 KiB): the rest are computed inline, so a huge fusion cannot exhaust a
/// thread's stack.
const MAX_BLOCKED_OPS: usize = 16;

/// The shortest vector loop worth strip-mining: below, a call per block costs about as
/// much as the wider vectors save.
const MIN_STRIP: i64 = 128;

/// A transcendental of a strip-mined loop, evaluated by a native block function
/// ([`block_math`]) on a buffer of its arguments.
#[derive(Clone, Debug)]
pub struct BlockedOp {
    pub(super) expr: ExprId,
    pub(super) arg: ExprId,
    pub(super) function: BlockFunction,
    /// The stage whose loop first reads its results: one more than its argument's (the
    /// arguments of level-`s` ops are computed in stage `s - 1`).
    pub(super) level: u32,
    /// When its argument is a contiguous f32 load (input, index): the native function
    /// reads the block of that input itself, so no stage copies it into the buffer.
    pub(super) direct: Option<(u32, IdxId)>,
    /// A division by a value the vector loop does not change (`arg / divisor`): the
    /// divisor's f32 load (input, index), whose address the native function reads.
    pub(super) divisor: Option<(u32, IdxId)>,
    /// The output whose values this op's are, when that output is a result (never
    /// sharing bytes with an input): the native function writes the block there
    /// instead of into its buffer, and the last stage does not store it again.
    pub(super) out: Option<usize>,
}

/// The ops to strip-mine in a vector loop or row reduction (none when it does not pay):
/// f32 transcendentals with a native block function, where the native code has more
/// lanes than Cranelift's vectors and the vector loop is at least [`MIN_STRIP`] long. Column
/// reductions keep their one-vector steps.
pub(super) fn blocked_ops(
    e: &Elemental,
    indices: &IndexAnalysis,
    vp: &VecPlan,
    results: &[bool],
    block_lanes: u32,
) -> Vec<BlockedOp> {
    if block_lanes <= vp.lanes || vp.width != 4 || e.space[vp.var as usize] < MIN_STRIP
        // `strip_mined` rounds down to whole steps with a mask.
        || !(vp.lanes * vp.unroll).is_power_of_two()
    {
        return Vec::new();
    }
    let roots: Vec<ExprId> = match &vp.kind {
        VecKind::Loop => e.outputs.iter().map(|o| o.expr).collect(),
        VecKind::Row(_) => {
            let inner = e.outputs.iter().filter(|o| o.inner).map(|o| o.expr);
            e.reductions.iter().flat_map(|r| r.values.iter().copied()).chain(inner).collect()
        }
        VecKind::Column => return Vec::new(),
    };
    // Nodes are created after their operands, so one pass in id order sees every
    // operand's level first, and one pass backwards marks what the roots reach.
    let n = e.nodes.len();
    let mut reached = vec![false; n];
    for r in roots {
        reached[r.0 as usize] = true;
    }
    for i in (0..n).rev() {
        if reached[i] {
            for a in e.nodes[i].node.operands() {
                if a.0 as usize >= i {
                    return Vec::new();
                }
                reached[a.0 as usize] = true;
            }
        }
    }
    let mut level = vec![0u32; n];
    let mut ops = Vec::new();
    // An f32 load of `x` with dependence `dep` on the vector variable: (input, index).
    let f32_load = |x: ExprId, dep: Dependence| match e.expr(x).node {
        Node::Load { input, linear }
            if e.input_elems[input as usize] == ElementType::F32 && indices.dependence(linear, vp.var) == dep =>
        {
            Some((input, linear))
        }
        _ => None,
    };
    for i in 0..n {
        let x = &e.nodes[i];
        let mut l = x.node.operands().iter().map(|a| level[a.0 as usize]).max().unwrap_or(0);
        let f32s = |a: ExprId| x.elem == ElementType::F32 && e.expr(a).elem == ElementType::F32;
        let candidate = match x.node {
            Node::Unary(op, a) => block_math::block_function(op).filter(|_| f32s(a)).map(|f| (f, a, None)),
            Node::Binary(BinaryOp::Div, a, d) if f32s(a) => {
                f32_load(d, Dependence::Invariant).map(|d| (block_math::DIV, a, Some(d)))
            }
            _ => None,
        };
        if let (Some((function, a, divisor)), true) = (candidate, reached[i] && ops.len() < MAX_BLOCKED_OPS) {
            l = level[a.0 as usize] + 1;
            let direct = f32_load(a, Dependence::Affine(1));
            let out = e
                .outputs
                .iter()
                .position(|o| o.expr.0 as usize == i && o.elem == ElementType::F32)
                .filter(|&o| results.get(o) == Some(&true));
            ops.push(BlockedOp { expr: ExprId(i as u32), arg: a, function, level: l, direct, divisor, out });
        }
        level[i] = l;
    }
    // An output is written by one op at most.
    for k in 1..ops.len() {
        if ops[..k].iter().any(|o| o.out.is_some() && o.out == ops[k].out) {
            ops[k].out = None;
        }
    }
    ops
}
/// A blocked op in the function being emitted: its call and its block buffer.
pub(super) struct Block {
    pub(super) op: BlockedOp,
    pub(super) func: FuncRef,
    pub(super) addr: Value,
}

impl<'a, 'f> Emit<'a, 'f> {
    /// Runs the whole vector steps of variable `v` from `lo` in blocks of at most
    /// [`BLOCK`] elements, each in stages: stage `s` computes the arguments of the level-`s + 1` blocked ops into
    /// their buffers and then calls their native functions on them; the last stage runs
    /// `body`, which reads every blocked op's result from its buffer. Everything else is
    /// recomputed in each stage that needs it (loads and arithmetic are cheap next to a
    /// transcendental, and the block's inputs are in cache): only the blocked ops'
    /// values cross stages. A block's stages read inputs only inside the block before its
    /// last stage stores, so outputs written in place stay safe. Returns where the
    /// remainder (vector steps and scalar tail) starts.
    pub(super) fn strip_mined(&mut self, v: u32, lo: Value, hi: Value, body: &mut dyn FnMut(&mut Self)) -> Value {
        let vp = self.vp.clone().expect("a vector plan");
        let last = self.blocks.iter().map(|b| b.op.level).max().unwrap_or(0);
        let step = (vp.lanes * vp.unroll) as i64;
        // Blocks cover the whole vector steps (the last one may be shorter); what is
        // left is shorter than one step, for the scalar tail.
        let len = self.b.ins().isub(hi, lo);
        let zero = self.b.ins().iconst(types::I64, 0);
        let len = self.b.ins().smax(len, zero);
        let whole = self.b.ins().band_imm_s(len, -step);
        let vec_end = self.b.ins().iadd(lo, whole);
        let header = self.b.create_block();
        let block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.append_block_param(header, types::I64);
        let parked = self.park_slots();
        self.b.ins().jump(header, &[lo.into()]);
        self.b.switch_to_block(header);
        let start = self.b.block_params(header)[0];
        let more = self.b.ins().icmp(IntCC::SignedLessThan, start, vec_end);
        self.b.ins().brif(more, block, &[], exit, &[]);
        self.b.switch_to_block(block);
        let full = self.b.ins().iadd_imm_s(start, BLOCK);
        let end = self.b.ins().smin(full, vec_end);
        let n = self.b.ins().isub(end, start);
        // Where each block function reads (its buffer, or the block of its input) and
        // writes (its buffer, or its output's block), and its divisor.
        let args: Vec<Vec<Value>> = (0..self.blocks.len()).map(|k| self.block_args(k, v, start, n)).collect();
        self.block_results = args.iter().map(|a| a[1]).collect();
        // The last stage has nothing to do when a loop kernel's outputs are all written
        // by block functions.
        let idle_last = matches!(self.vp.as_ref().map(|p| &p.kind), Some(VecKind::Loop))
            && (0..self.e.outputs.len()).all(|o| self.blocks.iter().any(|b| b.op.out == Some(o)));
        for stage in 0..=last {
            if stage == last {
                self.reload_vector_accumulators(&parked);
            }
            let copies = self.blocks.iter().any(|b| b.op.level == stage + 1 && b.op.direct.is_none());
            if (stage < last && !copies) || (stage == last && idle_last) {
                self.call_blocks(stage, &args);
                continue;
            }
            // The loop counts the position in the block (which indexes the buffers);
            // the vector variable is the block's start plus that.
            self.counted_loop(zero, n, step, &mut |s, pos| {
                let first = s.b.ins().iadd(start, pos);
                for j in 0..vp.unroll {
                    s.enter_vector(v, first, j);
                    s.stage = Some((stage, pos));
                    if stage == last {
                        body(s);
                        continue;
                    }
                    s.new_region();
                    for k in 0..s.blocks.len() {
                        if s.blocks[k].op.level == stage + 1 && s.blocks[k].op.direct.is_none() {
                            let x = s.value(s.blocks[k].op.arg);
                            let addr = s.blocks[k].addr;
                            s.store_vec(ElementType::F32, x, addr, pos, (j * vp.lanes) as i64);
                        }
                    }
                }
            });
            self.stage = None;
            self.step_base = None;
            if stage == last {
                self.park_vector_accumulators(&parked);
            }
            self.call_blocks(stage, &args);
        }
        self.b.ins().jump(header, &[end.into()]);
        self.b.switch_to_block(exit);
        self.reload_vector_accumulators(&parked);
        vec_end
    }

    /// The calls of the block functions whose arguments stage `stage` computes, with
    /// their arguments ([`Emit::block_args`]).
    pub(super) fn call_blocks(&mut self, stage: u32, args: &[Vec<Value>]) {
        for (k, args) in args.iter().enumerate() {
            let (op, func) = (&self.blocks[k].op, self.blocks[k].func);
            if op.level == stage + 1 {
                // The call computes the blocked op's node: it carries that node's origin.
                let caller = self.enter_origin(op.expr);
                self.b.ins().call(func, args);
                self.b.set_srcloc(caller);
            }
        }
    }

    /// Blocked op `k`'s call arguments for the block of `n` elements starting at `start`
    /// of vector variable `v`: where it reads (its buffer, or its input's element
    /// there), where it writes (its buffer, or its output's element there), `n`, and
    /// for a division the divisor's address.
    pub(super) fn block_args(&mut self, k: usize, v: u32, start: Value, n: Value) -> Vec<Value> {
        let op = self.blocks[k].op.clone();
        let buffer = self.blocks[k].addr;
        let saved = self.vars[v as usize].replace(start);
        self.new_region();
        let at = |s: &mut Self, input: u32, linear: IdxId| {
            let l = s.index(linear);
            let base = s.bases[input as usize];
            s.address(base, l, ElementType::F32)
        };
        let src = op.direct.map_or(buffer, |(input, linear)| at(self, input, linear));
        let dst = match op.out {
            Some(o) => {
                let linear = self.store_index(o);
                let base = self.bases[self.n_inputs + o];
                self.address(base, linear, ElementType::F32)
            }
            None => buffer,
        };
        let mut args = vec![src, dst, n];
        if let Some((input, linear)) = op.divisor {
            args.push(at(self, input, linear));
        }
        self.vars[v as usize] = saved;
        self.new_region();
        args
    }

    /// A row reduction's vector accumulators would be live across the block calls, which
    /// clobber every vector register, and the register allocator then keeps them on the
    /// stack even inside the last stage's loop. So they are parked in stack slots of
    /// their own around the calls and reloaded into fresh values for that loop (the
    /// same values in the same order: the same bits). Returns the slots (none for a loop
    /// kernel), after parking the accumulators' current values.
    pub(super) fn park_slots(&mut self) -> Vec<StackSlot> {
        let mut slots = Vec::new();
        for k in 0..self.vaccs.len() {
            for j in 0..self.vaccs[k].len() {
                let slot = self.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 4));
                slots.push(slot);
                let v = self.b.use_var(self.vaccs[k][j]);
                self.b.ins().stack_store(types::I64, v, slot, 0);
            }
        }
        slots
    }

    /// Stores the vector accumulators into their slots ([`Emit::park_slots`]).
    pub(super) fn park_vector_accumulators(&mut self, slots: &[StackSlot]) {
        let vars: Vec<Variable> = self.vaccs.iter().flatten().copied().collect();
        for (var, &slot) in vars.into_iter().zip(slots) {
            let v = self.b.use_var(var);
            self.b.ins().stack_store(types::I64, v, slot, 0);
        }
    }

    /// Sets the vector accumulators from their slots ([`Emit::park_slots`]).
    pub(super) fn reload_vector_accumulators(&mut self, slots: &[StackSlot]) {
        let e = self.e;
        let lanes = std::mem::replace(&mut self.lanes, self.vp.as_ref().map_or(1, |p| p.lanes));
        let mut i = 0;
        for k in 0..self.vaccs.len() {
            let ty = self.ty(e.expr(e.reductions[k].values[0]).elem);
            for j in 0..self.vaccs[k].len() {
                let v = self.b.ins().stack_load(types::I64, ty, slots[i], 0);
                self.b.def_var(self.vaccs[k][j], v);
                i += 1;
            }
        }
        self.lanes = lanes;
    }

    /// A blocked op's result at the current position, in the stages after its call.
    pub(super) fn block_result(&mut self, x: ExprId) -> Option<Value> {
        let (stage, pos) = self.stage?;
        let k = self.blocks.iter().position(|b| b.op.expr == x && b.op.level <= stage)?;
        let addr = self.block_results[k];
        // The current vector's distance from the step's first, whose position is `pos`.
        let off = self.step_base.map_or(0, |(_, _, off)| off);
        Some(self.load_vec(ElementType::F32, addr, pos, off))
    }
}
