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
//! Dynamic slices, dynamic update slices and gathers read their start indices from
//! data: an [`Idx::Data`] index wraps a loaded integer, clamped as XLA clamps starts.
//!
//! Ops the layer does not describe (sort, scatter, ...) make the builder fail with a
//! reason; the plan then runs that kernel in the interpreter.

use crate::ir::{
    BinaryOp, CmpDir, CmpKind, Computation, ElementType, InstId, Literal, Module, Op, Scalar, Shape, Type, UnaryOp,
};
use rustc_hash::FxHashMap as HashMap;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

/// An index expression (an `i64`), by position in [`Elemental::idx`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct IdxId(pub u32);

/// A value expression, by position in [`Elemental::nodes`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ExprId(pub u32);

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// in bounds (concatenate, pad), and clamps data-dependent start indices.
    Clamp(IdxId, i64, i64),
    /// A data-dependent index: the value of integer (or pred) expression `e` as an i64,
    /// unsigned values above `i64::MAX` saturating to it (dynamic slices, gather). Always
    /// used under a `Clamp`, as XLA clamps start indices so the window fits.
    Data(ExprId),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Node {
    /// Element `linear` (row-major) of kernel input `input`.
    Load {
        input: u32,
        linear: IdxId,
    },
    /// A scalar constant of the node's type.
    Const(Scalar),
    /// An index value as a number (iota): the node's type says which.
    Index(IdxId),
    /// pred: `lo <= idx < hi`.
    InRange {
        idx: IdxId,
        lo: i64,
        hi: i64,
    },
    Unary(UnaryOp, ExprId),
    Binary(BinaryOp, ExprId, ExprId),
    /// pred result; `total` selects IEEE total order for floats.
    Compare {
        dir: CmpDir,
        total: bool,
        a: ExprId,
        b: ExprId,
    },
    Select {
        pred: ExprId,
        on_true: ExprId,
        on_false: ExprId,
    },
    Clamp {
        lo: ExprId,
        x: ExprId,
        hi: ExprId,
    },
    /// To the node's type, with `convert`'s semantics.
    Convert(ExprId),
    /// Bit reinterpretation between types of one width.
    BitcastConvert(ExprId),
    /// Accumulator `i` of reduction `red` (only inside its combiner).
    Acc {
        red: u32,
        i: u32,
    },
    /// Input element `i` of reduction `red` (only inside its combiner).
    Arg {
        red: u32,
        i: u32,
    },
    /// Result `i` of reduction `red`, after its loop.
    Reduced {
        red: u32,
        i: u32,
    },
}

impl Node {
    /// The value nodes this node reads directly (not through an index: a data-dependent
    /// index's value is reached through `Idx::Data`).
    pub fn operands(&self) -> Vec<ExprId> {
        match *self {
            Node::Unary(_, a) | Node::Convert(a) | Node::BitcastConvert(a) => vec![a],
            Node::Binary(_, a, b) | Node::Compare { a, b, .. } => vec![a, b],
            Node::Select { pred, on_true, on_false } => vec![pred, on_true, on_false],
            Node::Clamp { lo, x, hi } => vec![lo, x, hi],
            Node::Load { .. } | Node::Const(_) | Node::Index(_) | Node::InRange { .. } => vec![],
            Node::Acc { .. } | Node::Arg { .. } | Node::Reduced { .. } => vec![],
        }
    }
}

/// A value node with its element type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Expr {
    pub node: Node,
    pub elem: ElementType,
}

/// One (possibly variadic) reduction over the `reduced` loop variables.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reduction {
    /// Initial accumulator values (scalars, evaluated before the inner loop).
    pub inits: Vec<ExprId>,
    /// The values reduced, evaluated at the full index inside the inner loop.
    pub values: Vec<ExprId>,
    /// New accumulator values, over `Acc`/`Arg` leaves.
    pub combiner: Vec<ExprId>,
}

/// Where an output is stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Output {
    pub expr: ExprId,
    /// True: stored at the full index inside the inner loop (an input-shaped output of
    /// a reduction kernel). False: at the outer index (loop outputs, reduce results).
    pub inner: bool,
    pub elem: ElementType,
}

/// The elemental description of one kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// Per node: the HLO instruction it implements, an index into `origin_names` (a
    /// combiner's nodes: their reduce's), so that a listing links generated code to HLO.
    pub origins: Vec<Option<u32>>,
    pub origin_names: Vec<String>,
}

impl Elemental {
    /// Its iterations: the product of its loops' extents (what decides whether splitting
    /// its range across threads pays).
    pub fn work(&self) -> u64 {
        self.space.iter().fold(1u64, |n, &d| n.saturating_mul(d.max(0) as u64))
    }

    /// Whether `other` is the same code: every field but `origin_names`, which only label
    /// listings. Kernels of equal descriptions on the same number of buffers compile to
    /// the same function whatever buffers they touch, where a target reads the buffers'
    /// places at run time (the layers of a stack).
    pub fn same_code(&self, other: &Elemental) -> bool {
        // Listed so that a new field is not forgotten.
        let Elemental {
            idx,
            idx_range,
            nodes,
            space,
            reduced,
            reductions,
            outputs,
            input_elems,
            origins,
            origin_names: _,
        } = self;
        let o = other;
        (space, reduced, input_elems) == (&o.space, &o.reduced, &o.input_elems)
            && (idx, idx_range, nodes) == (&o.idx, &o.idx_range, &o.nodes)
            && (reductions, outputs, origins) == (&o.reductions, &o.outputs, &o.origins)
    }

    /// A cheap hash of the description's shape: equal under [`Elemental::same_code`]
    /// gives equal hashes, so kernels are grouped by it before the full comparison.
    pub fn code_hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        (&self.space, &self.reduced, &self.input_elems).hash(&mut h);
        (self.nodes.len(), self.idx.len(), self.outputs.len(), self.reductions.len()).hash(&mut h);
        h.finish()
    }

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
    /// Renumbers the input slots in the order the nodes first load them (slots never
    /// loaded keep their order, after those), permuting `inputs` (the kernel's buffers,
    /// one per slot) to match. The order of a fusion's operands follows program order,
    /// which differs between the layers of a stack; the nodes' order follows the
    /// computation's structure, so kernels that are the same up to their buffers get the
    /// same description and share code.
    pub fn canonicalize_inputs<T>(&mut self, inputs: &mut Vec<T>) {
        let n = self.input_elems.len();
        if inputs.len() != n {
            return;
        }
        let mut order: Vec<u32> = Vec::with_capacity(n);
        let mut seen = vec![false; n];
        let loaded = self.nodes.iter().filter_map(|x| match x.node {
            Node::Load { input, .. } => Some(input),
            _ => None,
        });
        for slot in loaded.chain(0..n as u32) {
            if let Some(s) = seen.get_mut(slot as usize).filter(|s| !**s) {
                *s = true;
                order.push(slot);
            }
        }
        if order.iter().enumerate().all(|(new, &old)| new as u32 == old) {
            return;
        }
        let mut new_slot = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            new_slot[old as usize] = new as u32;
        }
        for x in &mut self.nodes {
            if let Node::Load { input, .. } = &mut x.node {
                *input = new_slot[*input as usize];
            }
        }
        self.input_elems = order.iter().map(|&old| self.input_elems[old as usize]).collect();
        let mut old: Vec<Option<T>> = std::mem::take(inputs).into_iter().map(Some).collect();
        inputs.extend(order.iter().filter_map(|&o| old[o as usize].take()));
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
    let built = build_with_split(module, comp, outputs, slots, None)?;
    match reshape_split(&built.0) {
        Some(k) => build_with_split(module, comp, outputs, slots, Some(k)),
        None => Ok(built),
    }
}

/// The factor to split a loop kernel's last variable by, when its indices read it only
/// through `v / k` and `v % k` for one `k` (a transpose or slice seen through a reshape
/// that merged dimensions: `[b, s, h*d]` read from `[b, h, s, d]`). Split into
/// `[n / k, k]`, the loads become affine in the new inner variable (contiguous vectors
/// instead of a division and a remainder per lane), and the stores stay where they
/// were: outputs are stored at the row-major position of the whole space.
fn reshape_split(e: &Elemental) -> Option<i64> {
    if e.is_reduction() {
        return None;
    }
    let last = e.space.len().checked_sub(1)? as u32;
    let n = e.space[last as usize];
    let mut factors = e.idx.iter().filter_map(|i| match *i {
        Idx::Div(a, k) | Idx::Rem(a, k) if e.idx[a.0 as usize] == Idx::Var(last) => Some(k),
        _ => None,
    });
    let k = factors.next()?;
    (factors.all(|j| j == k) && k >= 4 && k < n && n % k == 0).then_some(k)
}

/// [`build`], with the last variable of a loop kernel split by `split` ([`reshape_split`]).
fn build_with_split(
    module: &Module,
    comp: &Computation,
    outputs: &[InstId],
    slots: &HashMap<InstId, u32>,
    split: Option<i64>,
) -> Result<(Elemental, Vec<(InstId, Literal)>), String> {
    let mut b = Builder::new(comp, slots.clone());
    b.setup_space(outputs)?;
    if let Some(k) = split {
        let last = b.e.space.pop().ok_or("a split of a rank-0 space")?;
        b.e.space.extend([last / k, k]);
        b.e.reduced.push(false);
    }
    let mut outer: Vec<IdxId> = b.e.outer_vars().iter().map(|&v| b.idx(Idx::Var(v))).collect();
    if let Some(k) = split {
        // The output's last dimension is `hi * k + lo` over the variables `[n / k, k]`.
        let (lo, hi) = (outer.pop(), outer.pop());
        let scaled = b.idx(Idx::Mul(hi.ok_or("a split of a rank-0 space")?, k));
        outer.push(b.add(scaled, lo.ok_or("a split of a rank-0 space")?));
    }
    b.outer_at = Some(outer.clone());
    let full: Vec<IdxId> = (0..b.e.space.len() as u32).map(|v| b.idx(Idx::Var(v))).collect();
    let kept_dims: Vec<i64> = b.e.outer_vars().iter().map(|&v| b.e.space[v as usize]).collect();
    for &o in outputs {
        let shape = array_shape(&comp.inst(o).ty)?;
        let depends_on_reduce = b.depends_on_reduce(o);
        let (inner, at) = if b.reduce_of.is_empty() || shape.dims[..] == kept_dims[..] {
            (false, outer.clone())
        } else if shape.dims[..] == b.e.space[..] && !depends_on_reduce {
            (true, full.clone())
        } else if let Some(at) = b.outer_index_up_to_unit_dims(&shape.dims, &kept_dims, &outer) {
            // The reduce's result with size-1 dimensions added or dropped (a mean kept
            // as [n, 1]): the same elements in the same row-major order.
            (false, at)
        } else {
            return Err(format!(
                "output {} ({}) fits neither the reduce's input nor its result",
                comp.inst(o).name,
                shape
            ));
        };
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
            Op::ReduceWindow(ref a) => module.comp(a.body),
            _ => unreachable!("reduce_bodies returns reduces"),
        })
        .collect();
    // A combiner's nodes implement their reduce.
    let reduce_origins: Vec<u32> = reduces
        .iter()
        .map(|&r| {
            let name = &comp.inst(r).name;
            match e.origin_names.iter().position(|n| n == name) {
                Some(i) => i as u32,
                None => {
                    e.origin_names.push(name.clone());
                    e.origin_names.len() as u32 - 1
                }
            }
        })
        .collect();
    add_combiners(&mut e, &bodies, &reduce_origins)?;
    Ok((e, extra))
}

/// The values an [`Idx::Data`] of element type `elem` takes.
fn data_range(elem: ElementType) -> (i64, i64) {
    use ElementType::*;
    match elem {
        Pred => (0, 1),
        S8 => (i8::MIN as i64, i8::MAX as i64),
        S16 => (i16::MIN as i64, i16::MAX as i64),
        S32 => (i32::MIN as i64, i32::MAX as i64),
        U8 => (0, u8::MAX as i64),
        U16 => (0, u16::MAX as i64),
        U32 => (0, u32::MAX as i64),
        U64 => (0, i64::MAX),
        _ => (i64::MIN, i64::MAX),
    }
}

fn array_shape(ty: &Type) -> Result<&Shape, String> {
    ty.as_array().ok_or_else(|| format!("a kernel value must be an array, got {ty}"))
}

pub(crate) struct Builder<'c> {
    comp: &'c Computation,
    slots: HashMap<InstId, u32>,
    pub(crate) e: Elemental,
    /// The instruction being evaluated: the origin of the nodes made now.
    current: Option<InstId>,
    /// Each origin's index in `e.origin_names`.
    origin_of: FxHashMap<InstId, u32>,
    idx_memo: HashMap<Idx, IdxId>,
    /// (instruction, index, outer region) -> value. The region is part of the key: a
    /// value made at the outer index (a reduce's result) must not be found when the same
    /// element is read inside a reduced loop, where that result does not exist yet.
    memo: FxHashMap<(InstId, Vec<IdxId>, bool), ExprId>,
    /// Reduce instruction -> its reduction number.
    reduce_of: FxHashMap<InstId, u32>,
    /// The outer index: the only index a reduce's result exists at (a `Reduced` node is
    /// the value at the element being computed), once known.
    outer_at: Option<Vec<IdxId>>,
    extra: Vec<(InstId, Literal)>,
}

impl<'c> Builder<'c> {
    pub(crate) fn new(comp: &'c Computation, slots: HashMap<InstId, u32>) -> Builder<'c> {
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
                origins: Vec::new(),
                origin_names: Vec::new(),
            },
            current: None,
            origin_of: FxHashMap::default(),
            idx_memo: HashMap::default(),
            memo: FxHashMap::default(),
            reduce_of: FxHashMap::default(),
            outer_at: None,
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
        let mut seen = FxHashSet::default();
        let mut stack: Vec<InstId> = outputs.to_vec();
        while let Some(id) = stack.pop() {
            if !seen.insert(id) || self.slots.contains_key(&id) {
                continue;
            }
            let inst = self.comp.inst(id);
            if matches!(inst.op, Op::Reduce { .. } | Op::ReduceWindow(_)) {
                reduces.push(id);
            }
            stack.extend(inst.operands.iter().copied());
        }
        reduces.sort();
        if let Some(&w) = reduces.iter().find(|&&r| matches!(self.comp.inst(r).op, Op::ReduceWindow(_))) {
            // A reduce-window: the output dims, then the window dims (reduced).
            if reduces.len() > 1 {
                return Err("a reduce-window shares its kernel with another reduction".into());
            }
            let inst = self.comp.inst(w);
            let Op::ReduceWindow(a) = &inst.op else { unreachable!("found above") };
            let out = match &inst.ty {
                Type::Tuple(ts) => array_shape(ts.first().ok_or("reduce-window without results")?)?.dims.clone(),
                t => array_shape(t)?.dims.clone(),
            };
            if a.window_dims.len() != out.len() {
                return Err("malformed reduce-window".into());
            }
            self.e.space = out.iter().chain(&a.window_dims).copied().collect();
            self.e.reduced = (0..2 * out.len()).map(|v| v >= out.len()).collect();
            self.reduce_of.insert(w, 0);
            return Ok(());
        }
        if reduces.is_empty() {
            let first = array_shape(&self.comp.inst(outputs[0]).ty)?.dims.to_vec();
            for &o in outputs {
                if array_shape(&self.comp.inst(o).ty)?.dims[..] != first[..] {
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
            let input = array_shape(&self.comp.inst(inst.operands[0]).ty)?.dims.to_vec();
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
        let mut seen = FxHashSet::default();
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

    /// The index of an output of `dims` at the outer index `outer` (over `kept` dims),
    /// when `dims` and `kept` differ only by dimensions of size 1: those take index 0.
    fn outer_index_up_to_unit_dims(&mut self, dims: &[i64], kept: &[i64], outer: &[IdxId]) -> Option<Vec<IdxId>> {
        let big = |d: &[i64]| d.iter().copied().filter(|&x| x != 1).collect::<Vec<_>>();
        if big(dims) != big(kept) {
            return None;
        }
        let mut vars = kept.iter().zip(outer).filter(|(&k, _)| k != 1).map(|(_, &v)| v);
        let zero = self.idx(Idx::Const(0));
        dims.iter().map(|&d| if d == 1 { Some(zero) } else { vars.next() }).collect()
    }

    pub(crate) fn idx(&mut self, node: Idx) -> IdxId {
        let node = self.simplify(node);
        if let Some(&id) = self.idx_memo.get(&node) {
            return id;
        }
        let r = match &node {
            Idx::Var(v) => (0, (self.e.space[*v as usize] - 1).max(0)),
            Idx::Const(c) => (*c, *c),
            // Saturating: a data index may span all of i64 (it is clamped before use).
            Idx::Add(a, b) => {
                let (ra, rb) = (self.range(*a), self.range(*b));
                (ra.0.saturating_add(rb.0), ra.1.saturating_add(rb.1))
            }
            Idx::Mul(a, k) => {
                let ra = self.range(*a);
                let (x, y) = (ra.0.saturating_mul(*k), ra.1.saturating_mul(*k));
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
            Idx::Data(e) => data_range(self.e.nodes[e.0 as usize].elem),
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
                // (k*q + y) / k = q + y/k when 0 <= y.
                if let Some((q, rest)) = self.split_multiple(a, k) {
                    let lo = self.idx(Idx::Div(rest, k));
                    let sum = self.idx(Idx::Add(q, lo));
                    return self.e.idx[sum.0 as usize].clone();
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
                // (k*q + y) % k = y % k when 0 <= y.
                if let Some((_, rest)) = self.split_multiple(a, k) {
                    let id = self.idx(Idx::Rem(rest, k));
                    return self.e.idx[id.0 as usize].clone();
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

    /// `a` as `k * q + rest`, when some of its terms are multiples of `k` and the others
    /// (`rest`) are never negative: `q` sums those terms over `k`. A row-major position
    /// read through a reshape (`(s0*v0 + s1*v1 + v2) / k` with `k` dividing the strides)
    /// then loses every division but the innermost variable's.
    fn split_multiple(&mut self, a: IdxId, k: i64) -> Option<(IdxId, IdxId)> {
        let mut terms = Vec::new();
        let mut stack = vec![(a, 1i64)];
        let mut constant = 0i64;
        while let Some((t, m)) = stack.pop() {
            match self.e.idx[t.0 as usize] {
                Idx::Add(p, q) => stack.extend([(p, m), (q, m)]),
                Idx::Mul(x, j) => terms.push((x, j.checked_mul(m)?)),
                Idx::Const(c) => constant = constant.checked_add(c.checked_mul(m)?)?,
                _ => terms.push((t, m)),
            }
        }
        if !terms.iter().any(|&(_, m)| m % k == 0) {
            return None;
        }
        let (mut q, mut rest) = (self.konst(0), self.konst(constant.rem_euclid(k)));
        let carried = self.konst(constant.div_euclid(k));
        q = self.add(q, carried);
        for (x, m) in terms {
            if m % k == 0 {
                let t = self.idx(Idx::Mul(x, m / k));
                q = self.add(q, t);
            } else {
                let t = self.idx(Idx::Mul(x, m));
                rest = self.add(rest, t);
            }
        }
        (self.range(rest).0 >= 0).then_some((q, rest))
    }

    pub(crate) fn add(&mut self, a: IdxId, b: IdxId) -> IdxId {
        self.idx(Idx::Add(a, b))
    }
    pub(crate) fn konst(&mut self, c: i64) -> IdxId {
        self.idx(Idx::Const(c))
    }
    pub(crate) fn add_const(&mut self, a: IdxId, c: i64) -> IdxId {
        let k = self.konst(c);
        self.add(a, k)
    }

    /// Row-major linear index of `index` in an array of dimensions `dims`.
    pub(crate) fn linearize(&mut self, index: &[IdxId], dims: &[i64]) -> IdxId {
        let strides = Shape::new(ElementType::F32, dims).strides();
        let mut acc = self.konst(0);
        for (&i, &s) in index.iter().zip(&strides) {
            let t = self.idx(Idx::Mul(i, s as i64));
            acc = self.add(acc, t);
        }
        acc
    }

    /// The multi-index of row-major position `linear` in dimensions `dims`.
    pub(crate) fn delinearize(&mut self, linear: IdxId, dims: &[i64]) -> Vec<IdxId> {
        let strides = Shape::new(ElementType::F32, dims).strides();
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

    pub(crate) fn node(&mut self, node: Node, elem: ElementType) -> ExprId {
        // Structural sharing of identical nodes (a broadcast scalar read by many ops).
        let id = ExprId(self.e.nodes.len() as u32);
        self.e.nodes.push(Expr { node, elem });
        let origin = self.current.map(|inst| {
            let names = &mut self.e.origin_names;
            *self.origin_of.entry(inst).or_insert_with(|| {
                names.push(self.comp.inst(inst).name.clone());
                names.len() as u32 - 1
            })
        });
        self.e.origins.push(origin);
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
        let key = (id, at.to_vec(), outer);
        if let Some(&e) = self.memo.get(&key) {
            return Ok(e);
        }
        let caller = self.current.replace(id);
        let e = self.eval_uncached(id, at, outer);
        self.current = caller;
        let e = e?;
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
                let row_major = |s: &Shape| {
                    s.layout.is_none() || s.minor_to_major() == (0..s.rank() as i64).rev().collect::<Vec<_>>()
                };
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
                    let hit = self.node(
                        Node::InRange { idx: shifted, lo: 0, hi: (from.dims[d] - 1) * step + 1 },
                        ElementType::Pred,
                    );
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
            Op::Reduce { .. } | Op::ReduceWindow(_) => {
                if !outer {
                    return Err("a reduce result used inside its own loop".into());
                }
                self.check_outer_index(id, at)?;
                self.reduce_value(id, 0)?
            }
            Op::GetTupleElement { index } => {
                let src = ops[0];
                if !matches!(comp.inst(src).op, Op::Reduce { .. } | Op::ReduceWindow(_)) || !outer {
                    return Err("get-tuple-element of something other than a reduce".into());
                }
                self.check_outer_index(src, at)?;
                self.reduce_value(src, *index)?
            }
            Op::DynamicSlice { sizes } => {
                let from = self.shape_of(ops[0])?;
                if sizes.len() != from.rank()
                    || ops.len() != 1 + from.rank()
                    || sizes[..] != shape.dims[..]
                    || sizes.iter().zip(&from.dims).any(|(&s, &n)| s < 0 || s > n)
                {
                    return Err("malformed dynamic-slice".into());
                }
                let mut src = Vec::with_capacity(at.len());
                for d in 0..at.len() {
                    let s = self.start_index(ops[1 + d], &[], from.dims[d] - sizes[d], outer)?;
                    src.push(self.add(at[d], s));
                }
                self.eval(ops[0], &src, outer)?
            }
            Op::DynamicUpdateSlice => {
                // select(inside the window, update[i - start], operand[i]).
                let upd = self.shape_of(ops[1])?;
                if upd.rank() != shape.rank() || ops.len() != 2 + shape.rank() || upd.elem != elem {
                    return Err("malformed dynamic-update-slice".into());
                }
                let base = self.eval(ops[0], at, outer)?;
                if upd.dims.iter().zip(&shape.dims).any(|(&u, &n)| u > n) {
                    return Err("dynamic-update-slice with an update larger than its operand".into());
                }
                if upd.num_elements() == 0 {
                    base
                } else {
                    let mut src = Vec::with_capacity(at.len());
                    let mut inside: Option<ExprId> = None;
                    for d in 0..at.len() {
                        let s = self.start_index(ops[2 + d], &[], shape.dims[d] - upd.dims[d], outer)?;
                        let neg = self.idx(Idx::Mul(s, -1));
                        let rel = self.add(at[d], neg);
                        let c = self.node(Node::InRange { idx: rel, lo: 0, hi: upd.dims[d] }, ElementType::Pred);
                        inside = Some(match inside {
                            None => c,
                            Some(p) => self.node(Node::Binary(BinaryOp::And, p, c), ElementType::Pred),
                        });
                        src.push(self.idx(Idx::Clamp(rel, 0, upd.dims[d] - 1)));
                    }
                    let u = self.eval(ops[1], &src, outer)?;
                    match inside {
                        None => u,
                        Some(p) => self.node(Node::Select { pred: p, on_true: u, on_false: base }, elem),
                    }
                }
            }
            Op::Gather(g) => self.gather(g, ops[0], ops[1], &shape, at, outer)?,
            other => return Err(format!("{} has no elemental form", other.hlo_name())),
        })
    }

    /// A start index read from integer instruction `id` at `at`, clamped into `[0, hi]`.
    fn start_index(&mut self, id: InstId, at: &[IdxId], hi: i64, outer: bool) -> Result<IdxId, String> {
        let elem = self.shape_of(id)?.elem;
        if elem.is_float() {
            return Err("a float start index".into());
        }
        let v = self.eval(id, at, outer)?;
        let d = self.idx(Idx::Data(v));
        Ok(self.idx(Idx::Clamp(d, 0, hi.max(0))))
    }

    /// Element `at` of a gather's result (the StableHLO rule, as the interpreter applies
    /// it): the batch dims of `at` select an index vector, whose components (clamped so
    /// the slice fits) start the slice in the operand dims of `start_index_map`; operand
    /// batching dims take the matching batch coordinate, offset dims add the offset.
    fn gather(
        &mut self,
        g: &crate::ir::GatherDims,
        operand: InstId,
        indices: InstId,
        out: &Shape,
        at: &[IdxId],
        outer: bool,
    ) -> Result<ExprId, String> {
        let from = self.shape_of(operand)?;
        let ind = self.shape_of(indices)?;
        let rank = from.rank();
        let bad = || Err::<ExprId, String>("malformed gather".into());
        let axis_ok = |v: &[i64], n: usize| v.iter().all(|&a| a >= 0 && (a as usize) < n);
        if g.slice_sizes.len() != rank
            || !axis_ok(&g.start_index_map, rank)
            || !axis_ok(&g.collapsed_slice_dims, rank)
            || !axis_ok(&g.operand_batching_dims, rank)
            || !axis_ok(&g.offset_dims, out.rank())
            || g.index_vector_dim < 0
            || g.index_vector_dim as usize > ind.rank()
            || g.operand_batching_dims.len() != g.start_indices_batching_dims.len()
            || ind.elem.is_float()
            || out.elem != from.elem
        {
            return bad();
        }
        if g.start_index_map.iter().any(|d| g.operand_batching_dims.contains(d)) {
            return Err("gather starting in a batching dim".into());
        }
        let vdim = g.index_vector_dim as usize;
        let vlen = if vdim < ind.rank() { ind.dims[vdim] } else { 1 };
        if vlen != g.start_index_map.len() as i64 {
            return bad();
        }
        let offset_axes: Vec<usize> = (0..rank)
            .filter(|d| {
                !g.collapsed_slice_dims.contains(&(*d as i64)) && !g.operand_batching_dims.contains(&(*d as i64))
            })
            .collect();
        let batch_axes: Vec<usize> = (0..out.rank()).filter(|a| !g.offset_dims.contains(&(*a as i64))).collect();
        if offset_axes.len() != g.offset_dims.len() || batch_axes.len() + usize::from(vdim < ind.rank()) != ind.rank() {
            return bad();
        }
        for (k, &a) in g.offset_dims.iter().enumerate() {
            if out.dims[a as usize] != g.slice_sizes[offset_axes[k]] {
                return bad();
            }
        }
        let ind_batch: Vec<i64> = (0..ind.rank()).filter(|&d| d != vdim).map(|d| ind.dims[d]).collect();
        if batch_axes.iter().zip(&ind_batch).any(|(&a, &n)| out.dims[a] != n) {
            return bad();
        }
        for (d, (&s, &n)) in g.slice_sizes.iter().zip(&from.dims).enumerate() {
            let collapsed =
                g.collapsed_slice_dims.contains(&(d as i64)) || g.operand_batching_dims.contains(&(d as i64));
            if s < 0 || s > n || (collapsed && s > 1) {
                return bad();
            }
        }
        let batch: Vec<IdxId> = batch_axes.iter().map(|&a| at[a]).collect();
        // Index-array position of component k of the vector at `batch`.
        let vector_at = |b: &mut Self, k: i64| -> Vec<IdxId> {
            let mut v = batch.clone();
            if vdim < ind.rank() {
                let c = b.konst(k);
                v.insert(vdim, c);
            }
            v
        };
        let mut oi: Vec<IdxId> = (0..rank).map(|_| self.konst(0)).collect();
        for (k, &d) in g.start_index_map.iter().enumerate() {
            let d = d as usize;
            let pos = vector_at(self, k as i64);
            oi[d] = self.start_index(indices, &pos, from.dims[d] - g.slice_sizes[d], outer)?;
        }
        for (&od, &id) in g.operand_batching_dims.iter().zip(&g.start_indices_batching_dims) {
            let id = id as usize;
            if id == vdim || id >= ind.rank() {
                return bad();
            }
            let b = batch[if id < vdim { id } else { id - 1 }];
            if from.dims[od as usize] != ind.dims[id] {
                return bad();
            }
            oi[od as usize] = self.add(oi[od as usize], b);
        }
        for (k, &a) in g.offset_dims.iter().enumerate() {
            let d = offset_axes[k];
            oi[d] = self.add(oi[d], at[a as usize]);
        }
        self.eval(operand, &oi, outer)
    }

    /// Reads position `q` of a dimension of size `n` dilated by `step` (holes between
    /// elements, the conceptual padding outside): the index to load (clamped in bounds)
    /// and the pred saying whether `q` is an element at all.
    pub(crate) fn dilated_read(&mut self, q: IdxId, n: i64, step: i64) -> (IdxId, ExprId) {
        if n <= 0 {
            let never = self.node(Node::Const(Scalar::Pred(false)), ElementType::Pred);
            return (self.konst(0), never);
        }
        let nonneg = self.clamp_nonneg(q);
        let quot = self.idx(Idx::Div(nonneg, step));
        let mut hit = self.node(Node::InRange { idx: q, lo: 0, hi: (n - 1) * step + 1 }, ElementType::Pred);
        if step > 1 {
            let r = self.idx(Idx::Rem(nonneg, step));
            let on_grid = self.node(Node::InRange { idx: r, lo: 0, hi: 1 }, ElementType::Pred);
            hit = self.node(Node::Binary(BinaryOp::And, hit, on_grid), ElementType::Pred);
        }
        (self.idx(Idx::Clamp(quot, 0, n - 1)), hit)
    }

    /// A reduce-window's reduction: window position `w` of output `o` reads the input
    /// at `q = o * stride + w * window_dilation - pad_low` in the padded, base-dilated
    /// input, the init value where that is padding or a hole (as the interpreter folds
    /// padding in).
    fn build_window_reduction(&mut self, r: InstId, a: &crate::ir::ReduceWindowAttrs) -> Result<Reduction, String> {
        let comp = self.comp;
        let inst = comp.inst(r);
        let n = inst.operands.len() / 2;
        let rank = self.e.space.len() / 2;
        let lens = [a.strides.len(), a.base_dilations.len(), a.window_dilations.len(), a.padding.len()];
        if n == 0
            || inst.operands.len() != 2 * n
            || lens.iter().any(|&l| l != rank)
            || a.strides.iter().chain(&a.base_dilations).chain(&a.window_dilations).any(|&x| x <= 0)
        {
            return Err("malformed reduce-window".into());
        }
        let from = self.shape_of(inst.operands[0])?;
        if from.rank() != rank {
            return Err("malformed reduce-window".into());
        }
        for j in 1..n {
            if self.shape_of(inst.operands[j])?.dims != from.dims {
                return Err("reduce-window inputs of different shapes".into());
            }
        }
        let mut src = Vec::with_capacity(rank);
        let mut cond: Option<ExprId> = None;
        for d in 0..rank {
            let o = self.idx(Idx::Var(d as u32));
            let w = self.idx(Idx::Var((rank + d) as u32));
            let os = self.idx(Idx::Mul(o, a.strides[d]));
            let ws = self.idx(Idx::Mul(w, a.window_dilations[d]));
            let q0 = self.add(os, ws);
            let q = self.add_const(q0, -a.padding[d].0);
            let (i, hit) = self.dilated_read(q, from.dims[d], a.base_dilations[d]);
            src.push(i);
            if from.dims[d] > 0 && a.padding[d] == (0, 0) && a.base_dilations[d] == 1 {
                // The window always lies inside: no test needed.
                continue;
            }
            cond = Some(match cond {
                None => hit,
                Some(p) => self.node(Node::Binary(BinaryOp::And, p, hit), ElementType::Pred),
            });
        }
        let mut values = Vec::new();
        let mut inits = Vec::new();
        for j in 0..n {
            let init = self.eval(inst.operands[n + j], &[], true)?;
            let v = self.eval(inst.operands[j], &src, false)?;
            values.push(match cond {
                None => v,
                Some(p) => {
                    let elem = self.e.nodes[v.0 as usize].elem;
                    self.node(Node::Select { pred: p, on_true: v, on_false: init }, elem)
                }
            });
            inits.push(init);
        }
        Ok(Reduction { inits, values, combiner: Vec::new() })
    }

    pub(crate) fn clamp_nonneg(&mut self, i: IdxId) -> IdxId {
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

    /// A reduce's result is read where it exists: at the element being computed (a
    /// transpose or slice of it in the same kernel would read another element's).
    fn check_outer_index(&self, r: InstId, at: &[IdxId]) -> Result<(), String> {
        match &self.outer_at {
            Some(outer) if outer.as_slice() != at => Err(format!(
                "{} is read at another element than the one being computed (its result exists only there)",
                self.comp.inst(r).name
            )),
            _ => Ok(()),
        }
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
        let comp = self.comp;
        let inst = comp.inst(r);
        if let Op::ReduceWindow(a) = &inst.op {
            return self.build_window_reduction(r, a);
        }
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
/// is another computation. Reduction k's nodes get origin `origins[k]`.
pub fn add_combiners(e: &mut Elemental, bodies: &[&Computation], origins: &[u32]) -> Result<(), String> {
    for (k, body) in bodies.iter().enumerate() {
        let n = e.reductions[k].values.len();
        let mut vals: FxHashMap<InstId, ExprId> = FxHashMap::default();
        let origin = origins.get(k).copied();
        let push = |e: &mut Elemental, node: Node, elem: ElementType| {
            e.nodes.push(Expr { node, elem });
            e.origins.push(origin);
            ExprId(e.nodes.len() as u32 - 1)
        };
        for (p, &pid) in body.params.iter().enumerate() {
            let elem = array_shape(&body.inst(pid).ty)?.elem;
            let node = if p < n {
                Node::Acc { red: k as u32, i: p as u32 }
            } else {
                Node::Arg { red: k as u32, i: (p - n) as u32 }
            };
            vals.insert(pid, push(e, node, elem));
        }
        for &id in &body.order {
            let inst = body.inst(id);
            if vals.contains_key(&id) {
                continue;
            }
            let get = |k: usize| {
                vals.get(&inst.operands[k]).copied().ok_or_else(|| "reduce body operand not scalar".to_string())
            };
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
    let mut seen = FxHashSet::default();
    let mut stack: Vec<InstId> = outputs.to_vec();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) || slots.contains_key(&id) {
            continue;
        }
        let inst = comp.inst(id);
        if matches!(inst.op, Op::Reduce { .. } | Op::ReduceWindow(_)) {
            reduces.push(id);
        }
        stack.extend(inst.operands.iter().copied());
    }
    reduces.sort();
    reduces
}
