//! The elemental description of a loop or reduction kernel: what each output element is,
//! as an expression DAG over input loads whose addresses are index expressions.
//!
//! Every target emits from this one description (a loop nest on the CPU, one thread per
//! element on a GPU), so no target re-derives the indexing of broadcasts, reshapes,
//! transposes, slices, pads or concatenates. The builder walks a fusion body (or a single
//! top-level instruction) from its outputs back to its inputs, XLA's elemental IR emitter
//! style: an instruction evaluated at index `i` asks its operands for the elements its
//! semantics need, and data-movement ops only rewrite the index.
//!
//! The iteration space is a list of loop variables (`space`). A loop kernel has one
//! variable per output dimension. A reduction kernel has one per dimension of the reduce's
//! input; the `reduced` ones form the inner loop, and reduce-shaped values are evaluated
//! at the outer (kept) variables only.
//!
//! Index expressions are hash-consed and simplified with value ranges (`x % n` is `x`
//! when `0 <= x < n`, `(a*k + b) / k` is `a` when `0 <= b < k`, `(x/k)*k + x%k` is `x`),
//! so a reshape that only splits or merges dimensions costs no division.
//!
//! Ops the layer does not describe (gather, dynamic slices, sort, ...) make the builder
//! fail with a reason; the plan then runs that kernel in the interpreter.

use crate::ir::{
    BinaryOp, CmpDir, CmpKind, Computation, ElementType, InstId, Literal, Module, Op, Scalar, Shape, Type, UnaryOp,
};
use std::collections::HashMap;

/// An index expression (an `i64`), by position in [`Elemental::idx`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdxId(pub u32);

/// A value expression, by position in [`Elemental::nodes`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExprId(pub u32);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Idx {
    /// Loop variable `k` of the iteration space.
    Var(u32),
    Const(i64),
    Add(IdxId, IdxId),
    /// Times a constant.
    Mul(IdxId, i64),
    /// Floor division by a positive constant (operands are never negative where used).
    Div(IdxId, i64),
    /// Remainder by a positive constant.
    Rem(IdxId, i64),
    /// Clamped into `[lo, hi]`: keeps the address of a load that a select will discard
    /// in bounds (concatenate, pad).
    Clamp(IdxId, i64, i64),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// Element `linear` (row-major) of kernel input `input`.
    Load { input: u32, linear: IdxId },
    /// A scalar constant of the node's type.
    Const(Scalar),
    /// An index value as a number (iota): the node's type says which.
    Index(IdxId),
    /// pred: `lo <= idx < hi`.
    InRange { idx: IdxId, lo: i64, hi: i64 },
    Unary(UnaryOp, ExprId),
    Binary(BinaryOp, ExprId, ExprId),
    /// pred result; `total` selects IEEE total order for floats.
    Compare { dir: CmpDir, total: bool, a: ExprId, b: ExprId },
    Select { pred: ExprId, on_true: ExprId, on_false: ExprId },
    Clamp { lo: ExprId, x: ExprId, hi: ExprId },
    /// To the node's type, with `convert`'s semantics.
    Convert(ExprId),
    /// Bit reinterpretation between types of one width.
    BitcastConvert(ExprId),
    /// Accumulator `i` of reduction `red` (only inside its combiner).
    Acc { red: u32, i: u32 },
    /// Input element `i` of reduction `red` (only inside its combiner).
    Arg { red: u32, i: u32 },
    /// Result `i` of reduction `red`, after its loop.
    Reduced { red: u32, i: u32 },
}

/// A value node with its element type.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub node: Node,
    pub elem: ElementType,
}

/// One (possibly variadic) reduction over the `reduced` loop variables.
#[derive(Clone, Debug, PartialEq)]
pub struct Reduction {
    /// Initial accumulator values (scalars, evaluated before the inner loop).
    pub inits: Vec<ExprId>,
    /// The values reduced, evaluated at the full index inside the inner loop.
    pub values: Vec<ExprId>,
    /// New accumulator values, over `Acc`/`Arg` leaves.
    pub combiner: Vec<ExprId>,
}

/// Where an output is stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub expr: ExprId,
    /// True: stored at the full index inside the inner loop (an input-shaped output of
    /// a reduction kernel). False: at the outer index (loop outputs, reduce results).
    pub inner: bool,
    pub elem: ElementType,
}

/// The elemental description of one kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Elemental {
    pub idx: Vec<Idx>,
    /// The range `[min, max]` each index expression takes.
    pub idx_range: Vec<(i64, i64)>,
    pub nodes: Vec<Expr>,
    /// Loop extents, one per variable.
    pub space: Vec<i64>,
    /// Which variables are reduced (all false for a loop kernel).
    pub reduced: Vec<bool>,
    pub reductions: Vec<Reduction>,
    /// One per kernel output, in the kernel's output order.
    pub outputs: Vec<Output>,
    /// Element types of the kernel inputs (what `Load { input }` reads).
    pub input_elems: Vec<ElementType>,
}

impl Elemental {
    pub fn expr(&self, e: ExprId) -> &Expr {
        &self.nodes[e.0 as usize]
    }
    pub fn idx_node(&self, i: IdxId) -> &Idx {
        &self.idx[i.0 as usize]
    }
    /// Variables of the outer loop (the kept ones), in order.
    pub fn outer_vars(&self) -> Vec<u32> {
        (0..self.space.len() as u32).filter(|&v| !self.reduced[v as usize]).collect()
    }
    /// Whether this is a reduction kernel.
    pub fn is_reduction(&self) -> bool {
        !self.reductions.is_empty()
    }
    /// Elements of the outer iteration space.
    pub fn outer_elements(&self) -> usize {
        self.outer_vars().iter().map(|&v| self.space[v as usize].max(0) as usize).product()
    }
}

/// Builds the description of the values `outputs` of computation `comp`; `slots` maps
/// the instructions read from outside (fusion parameters, or a lone instruction's
/// operands) to kernel input slots. Non-scalar constants met inside are reported in
/// `extra_inputs` and get new slots after the given ones.
pub fn build(
    module: &Module,
    comp: &Computation,
    outputs: &[InstId],
    slots: &HashMap<InstId, u32>,
) -> Result<(Elemental, Vec<(InstId, Literal)>), String> {
    let mut b = Builder::new(comp, slots.clone());
    b.setup_space(outputs)?;
    let outer: Vec<IdxId> = b.e.outer_vars().iter().map(|&v| b.idx(Idx::Var(v))).collect();
    let full: Vec<IdxId> = (0..b.e.space.len() as u32).map(|v| b.idx(Idx::Var(v))).collect();
    let kept_dims: Vec<i64> = b.e.outer_vars().iter().map(|&v| b.e.space[v as usize]).collect();
    for &o in outputs {
        let shape = array_shape(&comp.inst(o).ty)?;
        let depends_on_reduce = b.depends_on_reduce(o);
        let inner = if b.reduce_of.is_empty() || shape.dims == kept_dims {
            false
        } else if shape.dims == b.e.space && !depends_on_reduce {
            true
        } else {
            return Err(format!("output {} ({}) fits neither the reduce's input nor its result", comp.inst(o).name, shape));
        };
        let at = if inner { full.clone() } else { outer.clone() };
        let expr = b.eval(o, &at, !inner)?;
        b.e.outputs.push(Output { expr, inner, elem: shape.elem });
    }
    let extra = std::mem::take(&mut b.extra);
    let input_elems = b.input_elems_by_slot();
    let mut e = b.e;
    e.input_elems = input_elems;
    let reduces = reduce_bodies(comp, outputs, slots);
    if e.reductions.len() != reduces.len() {
        return Err("a reduce in the kernel is not used by its outputs".into());
    }
    let bodies: Vec<&Computation> = reduces
        .iter()
        .map(|&r| match comp.inst(r).op {
            Op::Reduce { body, .. } => module.comp(body),
            _ => unreachable!("reduce_bodies returns reduces"),
        })
        .collect();
    add_combiners(&mut e, &bodies)?;
    Ok((e, extra))
}

fn array_shape(ty: &Type) -> Result<&Shape, String> {
    ty.as_array().ok_or_else(|| format!("a kernel value must be an array, got {ty}"))
}

struct Builder<'c> {
    comp: &'c Computation,
    slots: HashMap<InstId, u32>,
    e: Elemental,
    idx_memo: HashMap<Idx, IdxId>,
    /// (instruction, index, outer region) -> value.
    memo: HashMap<(InstId, Vec<IdxId>), ExprId>,
    /// Reduce instruction -> its reduction number.
    reduce_of: HashMap<InstId, u32>,
    extra: Vec<(InstId, Literal)>,
}

impl<'c> Builder<'c> {
    fn new(comp: &'c Computation, slots: HashMap<InstId, u32>) -> Builder<'c> {
        Builder {
            comp,
            slots,
            e: Elemental {
                idx: Vec::new(),
                idx_range: Vec::new(),
                nodes: Vec::new(),
                space: Vec::new(),
                reduced: Vec::new(),
                reductions: Vec::new(),
                outputs: Vec::new(),
                input_elems: Vec::new(),
            },
            idx_memo: HashMap::new(),
            memo: HashMap::new(),
            reduce_of: HashMap::new(),
            extra: Vec::new(),
        }
    }

    fn input_elems_by_slot(&self) -> Vec<ElementType> {
        let n = self.slots.values().map(|&s| s as usize + 1).max().unwrap_or(0);
        let mut out = vec![ElementType::F32; n];
        for (&id, &s) in &self.slots {
            if let Some(shape) = self.comp.inst(id).ty.as_array() {
                out[s as usize] = shape.elem;
            }
        }
        out
    }

    /// Reduces reachable from `outputs` (not through kernel inputs) fix the space: all of
    /// them must share input dims and reduced dims. Without one, the space is the shape
    /// of the first output, and every output must have it.
    fn setup_space(&mut self, outputs: &[InstId]) -> Result<(), String> {
        let mut reduces = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut stack: Vec<InstId> = outputs.to_vec();
        while let Some(id) = stack.pop() {
            if !seen.insert(id) || self.slots.contains_key(&id) {
                continue;
            }
            let inst = self.comp.inst(id);
            if matches!(inst.op, Op::Reduce { .. }) {
                reduces.push(id);
            }
            stack.extend(inst.operands.iter().copied());
        }
        reduces.sort();
        if reduces.is_empty() {
            let first = array_shape(&self.comp.inst(outputs[0]).ty)?.dims.clone();
            for &o in outputs {
                if array_shape(&self.comp.inst(o).ty)?.dims != first {
                    return Err("outputs of different shapes in one loop kernel".into());
                }
            }
            self.e.reduced = vec![false; first.len()];
            self.e.space = first;
            return Ok(());
        }
        let mut space: Option<(Vec<i64>, Vec<i64>)> = None;
        for (k, &r) in reduces.iter().enumerate() {
            let inst = self.comp.inst(r);
            let Op::Reduce { dims, .. } = &inst.op else { unreachable!("filtered above") };
            let input = array_shape(&self.comp.inst(inst.operands[0]).ty)?.dims.clone();
            match &space {
                None => space = Some((input, dims.clone())),
                Some((i, d)) if *i == input && d == dims => {}
                Some(_) => return Err("reduces of different shapes in one kernel".into()),
            }
            self.reduce_of.insert(r, k as u32);
        }
        let (input, dims) = space.expect("at least one reduce");
        self.e.reduced = (0..input.len() as i64).map(|d| dims.contains(&d)).collect();
        self.e.space = input;
        Ok(())
    }

    fn depends_on_reduce(&self, id: InstId) -> bool {
        let mut stack = vec![id];
        let mut seen = std::collections::HashSet::new();
        while let Some(i) = stack.pop() {
            if !seen.insert(i) || self.slots.contains_key(&i) {
                continue;
            }
            if self.reduce_of.contains_key(&i) {
                return true;
            }
            stack.extend(self.comp.inst(i).operands.iter().copied());
        }
        false
    }

    // ---- index expressions ----

    fn range(&self, i: IdxId) -> (i64, i64) {
        self.e.idx_range[i.0 as usize]
    }

    fn idx(&mut self, node: Idx) -> IdxId {
        let node = self.simplify(node);
        if let Some(&id) = self.idx_memo.get(&node) {
            return id;
        }
        let r = match &node {
            Idx::Var(v) => (0, (self.e.space[*v as usize] - 1).max(0)),
            Idx::Const(c) => (*c, *c),
            Idx::Add(a, b) => {
                let (ra, rb) = (self.range(*a), self.range(*b));
                (ra.0 + rb.0, ra.1 + rb.1)
            }
            Idx::Mul(a, k) => {
                let ra = self.range(*a);
                let (x, y) = (ra.0 * k, ra.1 * k);
                (x.min(y), x.max(y))
            }
            Idx::Div(a, k) => {
                let ra = self.range(*a);
                (ra.0.div_euclid(*k), ra.1.div_euclid(*k))
            }
            Idx::Rem(a, k) => {
                let ra = self.range(*a);
                if ra.0 >= 0 {
                    (0, (k - 1).min(ra.1))
                } else {
                    (-(k - 1), k - 1)
                }
            }
            Idx::Clamp(_, lo, hi) => (*lo, *hi),
        };
        let id = IdxId(self.e.idx.len() as u32);
        self.e.idx.push(node.clone());
        self.e.idx_range.push(r);
        self.idx_memo.insert(node, id);
        id
    }

    /// Constant folding and range-based rewrites.
    fn simplify(&mut self, node: Idx) -> Idx {
        match node {
            Idx::Add(a, b) => match (self.e.idx[a.0 as usize].clone(), self.e.idx[b.0 as usize].clone()) {
                (Idx::Const(x), Idx::Const(y)) => Idx::Const(x + y),
                (Idx::Const(0), _) => self.e.idx[b.0 as usize].clone(),
                (_, Idx::Const(0)) => self.e.idx[a.0 as usize].clone(),
                // (x / k) * k + x % k = x: a flatten after a split.
                (Idx::Mul(q, k), Idx::Rem(x, j)) | (Idx::Rem(x, j), Idx::Mul(q, k))
                    if k == j && self.e.idx[q.0 as usize] == Idx::Div(x, k) =>
                {
                    self.e.idx[x.0 as usize].clone()
                }
                _ => Idx::Add(a.min(b), a.max(b)),
            },
            Idx::Mul(a, k) => match self.e.idx[a.0 as usize].clone() {
                _ if k == 0 => Idx::Const(0),
                _ if k == 1 => self.e.idx[a.0 as usize].clone(),
                Idx::Const(x) => Idx::Const(x * k),
                Idx::Mul(b, j) => Idx::Mul(b, j * k),
                _ => Idx::Mul(a, k),
            },
            Idx::Div(a, k) => {
                let r = self.range(a);
                if k == 1 {
                    return self.e.idx[a.0 as usize].clone();
                }
                if r.0 >= 0 && r.1 < k {
                    return Idx::Const(0);
                }
                // (x*k*m + y) / k = x*m + y/k when 0 <= y.
                if let Idx::Add(p, q) = self.e.idx[a.0 as usize].clone() {
                    for (m, rest) in [(p, q), (q, p)] {
                        if let Idx::Mul(x, j) = self.e.idx[m.0 as usize].clone() {
                            if j % k == 0 && self.range(rest).0 >= 0 {
                                let hi = self.idx(Idx::Mul(x, j / k));
                                let lo = self.idx(Idx::Div(rest, k));
                                let sum = self.idx(Idx::Add(hi, lo));
                                return self.e.idx[sum.0 as usize].clone();
                            }
                        }
                    }
                }
                Idx::Div(a, k)
            }
            Idx::Rem(a, k) => {
                let r = self.range(a);
                if k == 1 {
                    return Idx::Const(0);
                }
                if r.0 >= 0 && r.1 < k {
                    return self.e.idx[a.0 as usize].clone();
                }
                // (x*k*m + y) % k = y % k when 0 <= y.
                if let Idx::Add(p, q) = self.e.idx[a.0 as usize].clone() {
                    for (m, rest) in [(p, q), (q, p)] {
                        if let Idx::Mul(_, j) = self.e.idx[m.0 as usize].clone() {
                            if j % k == 0 && self.range(rest).0 >= 0 {
                                let id = self.idx(Idx::Rem(rest, k));
                                return self.e.idx[id.0 as usize].clone();
                            }
                        }
                    }
                }
                Idx::Rem(a, k)
            }
            Idx::Clamp(a, lo, hi) => {
                let r = self.range(a);
                if r.0 >= lo && r.1 <= hi {
                    self.e.idx[a.0 as usize].clone()
                } else {
                    Idx::Clamp(a, lo, hi)
                }
            }
            n => n,
        }
    }

    fn add(&mut self, a: IdxId, b: IdxId) -> IdxId {
        self.idx(Idx::Add(a, b))
    }
    fn konst(&mut self, c: i64) -> IdxId {
        self.idx(Idx::Const(c))
    }
    fn add_const(&mut self, a: IdxId, c: i64) -> IdxId {
        let k = self.konst(c);
        self.add(a, k)
    }

    /// Row-major linear index of `index` in an array of dimensions `dims`.
    fn linearize(&mut self, index: &[IdxId], dims: &[i64]) -> IdxId {
        let strides = Shape::new(ElementType::F32, dims.to_vec()).strides();
        let mut acc = self.konst(0);
        for (&i, &s) in index.iter().zip(&strides) {
            let t = self.idx(Idx::Mul(i, s as i64));
            acc = self.add(acc, t);
        }
        acc
    }

    /// The multi-index of row-major position `linear` in dimensions `dims`.
    fn delinearize(&mut self, linear: IdxId, dims: &[i64]) -> Vec<IdxId> {
        let strides = Shape::new(ElementType::F32, dims.to_vec()).strides();
        dims.iter()
            .zip(&strides)
            .map(|(&d, &s)| {
                // A zero stride (an empty array) is never evaluated: any divisor does.
                let q = self.idx(Idx::Div(linear, (s as i64).max(1)));
                self.idx(Idx::Rem(q, d.max(1)))
            })
            .collect()
    }

    // ---- value expressions ----

    fn node(&mut self, node: Node, elem: ElementType) -> ExprId {
        // Structural sharing of identical nodes (a broadcast scalar read by many ops).
        let id = ExprId(self.e.nodes.len() as u32);
        self.e.nodes.push(Expr { node, elem });
        id
    }

    fn shape_of(&self, id: InstId) -> Result<Shape, String> {
        Ok(array_shape(&self.comp.inst(id).ty)?.clone())
    }

    /// Slot of a kernel input; a non-scalar constant becomes a new input.
    fn slot(&mut self, id: InstId) -> Option<u32> {
        if let Some(&s) = self.slots.get(&id) {
            return Some(s);
        }
        if let Op::Constant(l) = &self.comp.inst(id).op {
            if l.shape.rank() > 0 {
                let s = self.slots.values().map(|&s| s + 1).max().unwrap_or(0);
                self.slots.insert(id, s);
                self.extra.push((id, l.clone()));
                return Some(s);
            }
        }
        None
    }

    /// The element of instruction `id` at multi-index `at`. `outer` says whether the
    /// index uses only kept variables (where reduce results exist).
    fn eval(&mut self, id: InstId, at: &[IdxId], outer: bool) -> Result<ExprId, String> {
        let key = (id, at.to_vec());
        if let Some(&e) = self.memo.get(&key) {
            return Ok(e);
        }
        let e = self.eval_uncached(id, at, outer)?;
        self.memo.insert(key, e);
        Ok(e)
    }

    fn eval_uncached(&mut self, id: InstId, at: &[IdxId], outer: bool) -> Result<ExprId, String> {
        let comp = self.comp;
        let inst = comp.inst(id);
        let shape = self.shape_of(id)?;
        let elem = shape.elem;
        if at.len() != shape.rank() {
            return Err(format!("%{} ({shape}) read at a rank-{} index", inst.name, at.len()));
        }
        if let Some(slot) = self.slot(id) {
            let linear = self.linearize(at, &shape.dims);
            return Ok(self.node(Node::Load { input: slot, linear }, elem));
        }
        let ops = &inst.operands;
        // Operand k at the same index, or at index 0 when it is a scalar (select, clamp).
        let same = |b: &mut Self, k: usize| -> Result<ExprId, String> {
            let rank = b.shape_of(ops[k])?.rank();
            if rank == 0 && !at.is_empty() {
                b.eval(ops[k], &[], outer)
            } else {
                b.eval(ops[k], at, outer)
            }
        };
        Ok(match &inst.op {
            Op::Parameter(_) => return Err(format!("parameter {} is not a kernel input", inst.name)),
            Op::Constant(l) => {
                if l.shape.rank() != 0 {
                    return Err("non-scalar constant".into());
                }
                self.node(Node::Const(l.get(0)), elem)
            }
            Op::Iota { dim } => {
                let i = at[*dim as usize];
                self.node(Node::Index(i), elem)
            }
            Op::Unary(u) => {
                let a = same(self, 0)?;
                self.node(Node::Unary(*u, a), elem)
            }
            Op::Binary(bop) => {
                let a = same(self, 0)?;
                let c = same(self, 1)?;
                self.node(Node::Binary(*bop, a, c), elem)
            }
            Op::Compare { dir, kind } => {
                let a = same(self, 0)?;
                let c = same(self, 1)?;
                let total = *kind == Some(CmpKind::TotalOrder);
                self.node(Node::Compare { dir: *dir, total, a, b: c }, elem)
            }
            Op::Select => {
                let p = same(self, 0)?;
                let t = same(self, 1)?;
                let f = same(self, 2)?;
                self.node(Node::Select { pred: p, on_true: t, on_false: f }, elem)
            }
            Op::Clamp => {
                let lo = same(self, 0)?;
                let x = same(self, 1)?;
                let hi = same(self, 2)?;
                self.node(Node::Clamp { lo, x, hi }, elem)
            }
            Op::Convert => {
                let a = same(self, 0)?;
                if self.e.nodes[a.0 as usize].elem == elem {
                    a
                } else {
                    self.node(Node::Convert(a), elem)
                }
            }
            Op::BitcastConvert => {
                let from = self.shape_of(ops[0])?;
                if from.rank() != shape.rank() || from.elem.byte_size() != elem.byte_size() {
                    return Err("width-changing bitcast-convert".into());
                }
                let a = same(self, 0)?;
                self.node(Node::BitcastConvert(a), elem)
            }
            Op::Copy => self.eval(ops[0], at, outer)?,
            Op::BroadcastInDim { dims } => {
                let from = self.shape_of(ops[0])?;
                let mut src = Vec::with_capacity(dims.len());
                for (k, &d) in dims.iter().enumerate() {
                    if from.dims[k] == 1 && shape.dims[d as usize] != 1 {
                        src.push(self.konst(0));
                    } else {
                        src.push(at[d as usize]);
                    }
                }
                self.eval(ops[0], &src, outer)?
            }
            Op::Reshape => self.reshape(ops[0], &shape, at, outer)?,
            Op::Bitcast => {
                let from = self.shape_of(ops[0])?;
                let row_major = |s: &Shape| s.layout.is_none() || s.minor_to_major() == (0..s.rank() as i64).rev().collect::<Vec<_>>();
                if !row_major(&from) || !row_major(&shape) {
                    return Err("bitcast with a non-default layout".into());
                }
                self.reshape(ops[0], &shape, at, outer)?
            }
            Op::Transpose { perm } => {
                let mut src = vec![IdxId(0); perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    src[p as usize] = at[i];
                }
                self.eval(ops[0], &src, outer)?
            }
            Op::Reverse { dims } => {
                let mut src = at.to_vec();
                for &d in dims {
                    let neg = self.idx(Idx::Mul(at[d as usize], -1));
                    src[d as usize] = self.add_const(neg, shape.dims[d as usize] - 1);
                }
                self.eval(ops[0], &src, outer)?
            }
            Op::Slice { start, stride, .. } => {
                let mut src = Vec::with_capacity(at.len());
                for d in 0..at.len() {
                    let m = self.idx(Idx::Mul(at[d], stride[d]));
                    src.push(self.add_const(m, start[d]));
                }
                self.eval(ops[0], &src, outer)?
            }
            Op::Concatenate { dim } => {
                let d = *dim as usize;
                // select(i < end_0, a_0[i], select(i < end_1, a_1[i - end_0], ...)).
                let mut pieces = Vec::new();
                let mut offset = 0;
                for &o in ops {
                    let size = self.shape_of(o)?.dims[d];
                    pieces.push((o, offset, size));
                    offset += size;
                }
                let (last, last_off, last_size) = *pieces.last().ok_or("concatenate of nothing")?;
                let mut acc = self.piece(last, at, d, last_off, last_size, outer)?;
                for &(o, off, size) in pieces.iter().rev().skip(1) {
                    let v = self.piece(o, at, d, off, size, outer)?;
                    let p = self.node(Node::InRange { idx: at[d], lo: i64::MIN, hi: off + size }, ElementType::Pred);
                    acc = self.node(Node::Select { pred: p, on_true: v, on_false: acc }, elem);
                }
                acc
            }
            Op::Pad { low, interior, .. } => {
                let from = self.shape_of(ops[0])?;
                let pad_value = self.eval(ops[1], &[], outer)?;
                let mut src = Vec::new();
                let mut cond: Option<ExprId> = None;
                for d in 0..at.len() {
                    let step = interior[d] + 1;
                    let shifted = self.add_const(at[d], -low[d]);
                    let nonneg = self.clamp_nonneg(shifted);
                    let q = self.idx(Idx::Div(nonneg, step));
                    let hit = self.node(Node::InRange { idx: shifted, lo: 0, hi: (from.dims[d] - 1) * step + 1 }, ElementType::Pred);
                    let mut c = hit;
                    if step > 1 {
                        let r = self.idx(Idx::Rem(nonneg, step));
                        let on_grid = self.node(Node::InRange { idx: r, lo: 0, hi: 1 }, ElementType::Pred);
                        c = self.node(Node::Binary(BinaryOp::And, c, on_grid), ElementType::Pred);
                    }
                    cond = Some(match cond {
                        None => c,
                        Some(p) => self.node(Node::Binary(BinaryOp::And, p, c), ElementType::Pred),
                    });
                    src.push(self.idx(Idx::Clamp(q, 0, (from.dims[d] - 1).max(0))));
                }
                let v = self.eval(ops[0], &src, outer)?;
                match cond {
                    None => v,
                    Some(p) => self.node(Node::Select { pred: p, on_true: v, on_false: pad_value }, elem),
                }
            }
            Op::Reduce { .. } => {
                if !outer {
                    return Err("a reduce result used inside its own loop".into());
                }
                self.reduce_value(id, 0)?
            }
            Op::GetTupleElement { index } => {
                let src = ops[0];
                if !matches!(comp.inst(src).op, Op::Reduce { .. }) || !outer {
                    return Err("get-tuple-element of something other than a reduce".into());
                }
                self.reduce_value(src, *index)?
            }
            other => return Err(format!("{} has no elemental form", other.hlo_name())),
        })
    }

    fn clamp_nonneg(&mut self, i: IdxId) -> IdxId {
        self.idx(Idx::Clamp(i, 0, i64::MAX / 4))
    }

    /// Operand `o` of a concatenate, read at `at` shifted by `off` along `d` (clamped so
    /// the discarded reads stay in bounds).
    fn piece(&mut self, o: InstId, at: &[IdxId], d: usize, off: i64, size: i64, outer: bool) -> Result<ExprId, String> {
        let mut src = at.to_vec();
        let shifted = self.add_const(at[d], -off);
        src[d] = self.idx(Idx::Clamp(shifted, 0, (size - 1).max(0)));
        self.eval(o, &src, outer)
    }

    fn reshape(&mut self, operand: InstId, shape: &Shape, at: &[IdxId], outer: bool) -> Result<ExprId, String> {
        let from = self.shape_of(operand)?;
        let linear = self.linearize(at, &shape.dims);
        let src = self.delinearize(linear, &from.dims);
        self.eval(operand, &src, outer)
    }

    /// Result `i` of reduce `r`, building its reduction the first time.
    fn reduce_value(&mut self, r: InstId, i: u32) -> Result<ExprId, String> {
        let k = *self.reduce_of.get(&r).ok_or("a reduce outside the kernel's loop")?;
        if self.e.reductions.len() <= k as usize {
            // Reductions are built in number order; make sure the earlier ones exist.
            let order: Vec<InstId> = {
                let mut v: Vec<(u32, InstId)> = self.reduce_of.iter().map(|(&r, &k)| (k, r)).collect();
                v.sort();
                v.into_iter().map(|(_, r)| r).collect()
            };
            for &rr in order.iter().take(k as usize + 1).skip(self.e.reductions.len()) {
                let red = self.build_reduction(rr)?;
                self.e.reductions.push(red);
            }
        }
        let inst = self.comp.inst(r);
        let elem = match &inst.ty {
            Type::Array(s) => s.elem,
            Type::Tuple(ts) => array_shape(&ts[i as usize])?.elem,
            Type::Token => return Err("a reduce cannot produce a token".into()),
        };
        Ok(self.node(Node::Reduced { red: k, i }, elem))
    }

    fn build_reduction(&mut self, r: InstId) -> Result<Reduction, String> {
        let inst = self.comp.inst(r);
        let Op::Reduce { body, .. } = inst.op else { unreachable!("only reduces are numbered") };
        let n = inst.operands.len() / 2;
        let full: Vec<IdxId> = (0..self.e.space.len() as u32).map(|v| self.idx(Idx::Var(v))).collect();
        let mut values = Vec::new();
        let mut inits = Vec::new();
        for j in 0..n {
            values.push(self.eval(inst.operands[j], &full, false)?);
            inits.push(self.eval(inst.operands[n + j], &[], true)?);
        }
        debug_assert!(matches!(inst.op, Op::Reduce { .. }), "{body}");
        Ok(Reduction { inits, values, combiner: Vec::new() })
    }
}

/// Fills in each reduction's combiner from its reduce body (a computation of scalar
/// parameters `acc_0..acc_{n-1}, x_0..x_{n-1}`); separate from `Builder` because the body
/// is another computation.
pub fn add_combiners(e: &mut Elemental, bodies: &[&Computation]) -> Result<(), String> {
    for (k, body) in bodies.iter().enumerate() {
        let n = e.reductions[k].values.len();
        let mut vals: HashMap<InstId, ExprId> = HashMap::new();
        let push = |e: &mut Elemental, node: Node, elem: ElementType| {
            e.nodes.push(Expr { node, elem });
            ExprId(e.nodes.len() as u32 - 1)
        };
        for (p, &pid) in body.params.iter().enumerate() {
            let elem = array_shape(&body.inst(pid).ty)?.elem;
            let node = if p < n { Node::Acc { red: k as u32, i: p as u32 } } else { Node::Arg { red: k as u32, i: (p - n) as u32 } };
            vals.insert(pid, push(e, node, elem));
        }
        for &id in &body.order {
            let inst = body.inst(id);
            if vals.contains_key(&id) {
                continue;
            }
            let get = |k: usize| vals.get(&inst.operands[k]).copied().ok_or_else(|| "reduce body operand not scalar".to_string());
            let ty = &inst.ty;
            let node = match &inst.op {
                Op::Tuple | Op::Parameter(_) => continue,
                Op::Constant(l) if l.shape.rank() == 0 => Node::Const(l.get(0)),
                Op::Unary(u) => Node::Unary(*u, get(0)?),
                Op::Binary(b) => Node::Binary(*b, get(0)?, get(1)?),
                Op::Compare { dir, kind } => {
                    Node::Compare { dir: *dir, total: *kind == Some(CmpKind::TotalOrder), a: get(0)?, b: get(1)? }
                }
                Op::Select => Node::Select { pred: get(0)?, on_true: get(1)?, on_false: get(2)? },
                Op::Clamp => Node::Clamp { lo: get(0)?, x: get(1)?, hi: get(2)? },
                Op::Convert => Node::Convert(get(0)?),
                other => return Err(format!("reduce body op {} has no elemental form", other.hlo_name())),
            };
            let elem = array_shape(ty)?.elem;
            if array_shape(ty)?.rank() != 0 {
                return Err("reduce body on non-scalars".into());
            }
            vals.insert(id, push(e, node, elem));
        }
        let root = body.root_inst();
        let results: Vec<InstId> = if matches!(root.op, Op::Tuple) { root.operands.clone() } else { vec![body.root] };
        if results.len() != n {
            return Err("reduce body returns the wrong number of values".into());
        }
        e.reductions[k].combiner = results
            .iter()
            .map(|r| vals.get(r).copied().ok_or_else(|| "reduce body result not computed".to_string()))
            .collect::<Result<_, _>>()?;
    }
    Ok(())
}

/// The reduce bodies of an elemental description's reductions, in reduction order.
pub fn reduce_bodies(comp: &Computation, outputs: &[InstId], slots: &HashMap<InstId, u32>) -> Vec<InstId> {
    let mut reduces = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<InstId> = outputs.to_vec();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) || slots.contains_key(&id) {
            continue;
        }
        let inst = comp.inst(id);
        if matches!(inst.op, Op::Reduce { .. }) {
            reduces.push(id);
        }
        stack.extend(inst.operands.iter().copied());
    }
    reduces.sort();
    reduces
}
