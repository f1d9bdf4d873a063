//! The kernel plan: what a target runs for a (fused) module, shared by every target.
//!
//! The entry computation becomes a list of kernels over numbered buffers, in program
//! order. Parameters, constants, tuples and get-tuple-elements launch nothing: they only
//! name buffers ([`ValueBufs`]). Each other instruction becomes:
//! - a **Loop** or **Reduction** kernel described elementally ([`elemental`]): a fusion,
//!   or a lone elementwise / data-movement / reduce instruction;
//! - a convolution (f32/f64) as an im2col loop kernel, a **Library** dot and, unless
//!   the dot writes the output's order directly, a reordering loop kernel ([`conv`]);
//! - a **Library** dot (a GEMM call), for a float dot or an output fusion whose body is a
//!   dot plus an elementwise epilogue (the epilogue is then a Loop kernel reading the
//!   dot's result from a temporary buffer); other dots (integer, pred, mixed types) are
//!   Reduction kernels (multiply, then sum over the contracting dimensions);
//! - a **Sort** from the target's runtime with its comparator compiled (an elemental
//!   kernel over scalars, [`SortSpec`]);
//! - a **Scatter** from the target's runtime with its update computation compiled
//!   ([`ScatterSpec`]);
//! - a **While** loop or a **Case**, whose computations targets plan on their own
//!   ([`plan_computation`]) and run from a small runtime;
//! - an **Opaque** kernel, run by the reference interpreter: select-and-scatter,
//!   convolutions other than f32/f64, ... and anything the elemental layer cannot
//!   describe. Every module therefore runs; the plan says which parts are compiled
//!   ([`KernelPlan::summary`]).
//!
//! Dynamic slices, dynamic update slices, gathers and reduce-windows are elemental too
//! (start indices read from data and clamped; window positions as reduced variables).
//!
//! Buffers hold values in the interpreter's byte encoding (`Literal::to_le_bytes`: row
//! major, little endian, pred as one byte, f16/bf16 as their 16-bit patterns).

pub mod arena;
mod arena_bytes;
pub mod atomic_scatter;
pub use arena_bytes::{outside as arena_outside, ArenaMemory};
pub mod caps;
pub mod chains;
mod conv;
pub mod elemental;
pub mod index;
pub mod lower;
mod memo;
pub mod print;
pub mod reduction;
pub mod semantics;
pub mod vector;
pub mod verify;

use crate::ir::{CompId, DotDims, ElementType, InstId, Literal, Module, Op, Shape, Type};
pub use arena::{assign_arena, ArenaAssignment};
pub use caps::TargetCaps;
use cranelift_entity::{entity_impl, PrimaryMap};
pub use elemental::Elemental;
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A buffer of the plan.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BufferId(u32);
entity_impl!(BufferId, "buf");

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Buffer {
    pub shape: Shape,
    /// The value it holds (instruction name, or `name.dot` for a temporary).
    pub name: String,
}

/// How a value of the entry computation is laid out in buffers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ValueBufs {
    Array(BufferId),
    Tuple(Vec<ValueBufs>),
    Token,
}

impl ValueBufs {
    /// The buffers, tuples flattened depth-first.
    pub fn leaves(&self) -> Vec<BufferId> {
        let mut out = Vec::new();
        fn walk(v: &ValueBufs, out: &mut Vec<BufferId>) {
            match v {
                ValueBufs::Array(b) => out.push(*b),
                ValueBufs::Tuple(vs) => vs.iter().for_each(|v| walk(v, out)),
                ValueBufs::Token => {}
            }
        }
        walk(self, &mut out);
        out
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReductionKind {
    /// The reduced dimensions are the minor ones: each output element reads a
    /// contiguous run.
    Row,
    /// Some kept dimension is more minor than a reduced one.
    Column,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum KernelKind {
    Loop,
    Reduction(ReductionKind),
    /// A library call: a dot.
    Dot,
    /// A sort from the target's runtime, calling a compiled comparator.
    Sort,
    /// A scatter from the target's runtime, calling a compiled combiner.
    Scatter,
    /// A while loop: the target runs the plans of its cond and body computations.
    While,
    /// A conditional: the target runs the plan of the selected branch.
    Case,
    /// Run by the reference interpreter; the reason says why it is not compiled.
    Opaque {
        reason: String,
    },
}

/// A dot as a batched GEMM: `out[b, m, n] = sum_k lhs[b, m, k] * rhs[b, k, n]`, where
/// the operands are first brought to those row-major forms by the permutations given
/// (identity permutations need no copy).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DotSpec {
    pub batch: usize,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Operand dimension order giving [batch.., free.., contracting..] for lhs.
    pub lhs_perm: Vec<usize>,
    /// Operand dimension order giving [batch.., contracting.., free..] for rhs.
    pub rhs_perm: Vec<usize>,
    pub elem: ElementType,
}

/// A sort of the kernel's inputs together along `dim` (each input copied to its output,
/// then every 1-D slice along `dim` permuted): a stable bottom-up merge sort, the
/// interpreter's algorithm, so even a comparator that is no strict weak order (NaN under
/// a FLOAT compare) gives the interpreter's result; an unstable sort may return any
/// valid order, so the stable one serves both.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SortSpec {
    pub dim: usize,
    pub dims: Vec<i64>,
    /// Element type of each input.
    pub elems: Vec<ElementType>,
    /// "lhs < rhs": a rank-0 elemental kernel over 2N scalar inputs
    /// (lhs_0, rhs_0, lhs_1, rhs_1, ...) with one pred output.
    pub comparator: Elemental,
}

/// A scatter: each output starts as a copy of its operand, then every update element,
/// in row-major order of the updates (sequential, so the result is deterministic), is
/// combined into the element it targets, unless that lies outside the operand (then it
/// is skipped, element by element, as the interpreter and the StableHLO spec do).
///
/// The kernel's inputs are the N operands, the index array, then the N updates. Update
/// index `u` targets operand index `r`: `r[scatter_dims_to_operand_dims[k]]` = component
/// `k` of the index vector at the batch position (the update dims in `scatter_axes`),
/// plus the batch coordinate for each `(operand dim, index dim)` of `batching`, plus
/// `u[a]` for each `(update dim a, operand dim)` of `window`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScatterSpec {
    pub operand_dims: Vec<i64>,
    pub update_dims: Vec<i64>,
    pub index_dims: Vec<i64>,
    pub index_elem: ElementType,
    /// The dimension of the index array holding the vector (its rank: implicit, length 1).
    pub index_vector_dim: usize,
    pub scatter_dims_to_operand_dims: Vec<usize>,
    pub batching: Vec<(usize, usize)>,
    pub window: Vec<(usize, usize)>,
    /// Update dims that are batch (index) dims, in order.
    pub scatter_axes: Vec<usize>,
    /// Element type of each operand (and its update and output).
    pub elems: Vec<ElementType>,
    /// The update computation: a rank-0 elemental kernel over 2N scalar inputs
    /// (N current values, N updates) with N outputs.
    pub combiner: Elemental,
    /// The producer's promise that no two update elements target one operand element
    /// (`unique_indices`), so their order cannot matter.
    pub unique_indices: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum KernelBody {
    Elemental(Elemental),
    Dot(DotSpec),
    // Boxed: a scatter's spec is 448 bytes, a sort's 296, and every kernel of a plan is
    // as large as the largest body (a 12-layer stack's plan holds 265 kernels).
    Sort(Box<SortSpec>),
    Scatter(Box<ScatterSpec>),
    /// A while loop over computations `cond` and `body` (planned with
    /// [`plan_computation`]), from `operands` to `result`.
    While {
        cond: CompId,
        body: CompId,
        operands: Vec<ValueBufs>,
        result: ValueBufs,
    },
    /// A conditional: `operands[0]` selects the branch (an s32 index, out of range meaning
    /// the last branch, or a pred, true meaning branch 0); branch i gets the operands
    /// `branch_operands[i]` (indices into `operands[1..]`).
    Case {
        branches: Vec<CompId>,
        branch_operands: Vec<Vec<u32>>,
        operands: Vec<ValueBufs>,
        result: ValueBufs,
    },
    /// Instruction `inst` of the planned computation, run by the interpreter on `operands`, writing `result`.
    Opaque {
        inst: InstId,
        operands: Vec<ValueBufs>,
        result: ValueBufs,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// The instruction it comes from (a fusion's name for each of its kernels).
    pub name: String,
    /// The entry instruction it comes from.
    pub source: InstId,
    pub kind: KernelKind,
    pub inputs: Vec<BufferId>,
    pub outputs: Vec<BufferId>,
    pub body: KernelBody,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelPlan {
    /// The computation planned.
    pub comp: CompId,
    #[serde(with = "crate::ir::module::serde_primary_map")]
    pub buffers: PrimaryMap<BufferId, Buffer>,
    /// Entry parameter i lives in `params[i]`.
    pub params: Vec<ValueBufs>,
    /// Buffers filled once from constants.
    pub constants: Vec<(BufferId, Literal)>,
    pub kernels: Vec<Kernel>,
    pub result: ValueBufs,
    /// The buffers of every value of the entry computation.
    #[serde(serialize_with = "serialize_sorted")]
    pub values: HashMap<InstId, ValueBufs>,
    /// Runs of consecutive kernels a target may execute chunk by chunk of their rows
    /// ([`chains`]); the arena is assigned so that running them either way is correct.
    pub chains: Vec<std::ops::Range<usize>>,
    /// Where each buffer lives in the one arena a target allocates ([`arena`]).
    pub arena: ArenaAssignment,
    /// What the target it was planned for can do.
    pub caps: TargetCaps,
}

/// A map in key order, so that the same plan always encodes to the same bytes.
fn serialize_sorted<S: serde::Serializer>(map: &HashMap<InstId, ValueBufs>, s: S) -> Result<S::Ok, S::Error> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_unstable_by_key(|e| *e.0);
    s.collect_map(entries)
}

impl KernelPlan {
    /// One line per kernel: `name: kind`, with the reason for opaque ones; then one line
    /// per row chain, naming its kernels in order.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        for k in &self.kernels {
            s += &format!("{}: {}\n", k.name, k.kind);
        }
        for c in &self.chains {
            let names: Vec<&str> = self.kernels[c.clone()].iter().map(|k| k.name.as_str()).collect();
            s += &format!("row chain: {}\n", names.join(", "));
        }
        s
    }
    /// The buffers the runtime fills or reads outside any kernel, which the arena pins:
    /// parameters, the result and constants.
    pub fn pinned_buffers(&self) -> impl Iterator<Item = BufferId> + '_ {
        self.params
            .iter()
            .chain(std::iter::once(&self.result))
            .flat_map(ValueBufs::leaves)
            .chain(self.constants.iter().map(|(b, _)| *b))
    }

    /// Derives the row chains (where the target wants them) and the arena from the
    /// kernels: after planning, and again after any rewrite of the kernels (positions
    /// move, and an opaque kernel joins no chain).
    pub fn derive_layout(&mut self) {
        self.chains = if self.caps.row_chains { chains::find_chains(self) } else { Vec::new() };
        self.arena = assign_arena(self);
    }

    /// Runs each entry instruction of `demoted` (instruction -> why) as one opaque kernel
    /// in place of all of its kernels (a target whose emitter refuses a kernel falls back
    /// to this), then derives the row chains and the arena again: kernel positions have
    /// moved, and an opaque kernel joins no chain. Returns, per old kernel position, its
    /// new one (`None` for a kernel replaced).
    pub fn demote_to_opaque<S: std::hash::BuildHasher>(
        &mut self,
        module: &Module,
        demoted: &std::collections::HashMap<InstId, String, S>,
    ) -> Result<Vec<Option<usize>>, String> {
        let old = std::mem::take(&mut self.kernels);
        let mut moved = Vec::with_capacity(old.len());
        let mut done = rustc_hash::FxHashSet::default();
        for k in old {
            match demoted.get(&k.source) {
                None => {
                    moved.push(Some(self.kernels.len()));
                    self.kernels.push(k);
                }
                Some(reason) => {
                    moved.push(None);
                    if done.insert(k.source) {
                        let opaque = opaque_kernel(module, self.comp, &self.values, k.source, reason.clone())?;
                        self.kernels.push(opaque);
                    }
                }
            }
        }
        self.derive_layout();
        verify::debug_check(module, self, "after demotion to opaque");
        Ok(moved)
    }
    /// (compiled kernels, interpreted kernels).
    pub fn counts(&self) -> (usize, usize) {
        let opaque = self.kernels.iter().filter(|k| matches!(k.kind, KernelKind::Opaque { .. })).count();
        (self.kernels.len() - opaque, opaque)
    }
}

impl fmt::Display for KernelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelKind::Loop => f.write_str("loop"),
            KernelKind::Reduction(ReductionKind::Row) => f.write_str("reduction(row)"),
            KernelKind::Reduction(ReductionKind::Column) => f.write_str("reduction(column)"),
            KernelKind::Dot => f.write_str("library(dot)"),
            KernelKind::Sort => f.write_str("library(sort, compiled comparator)"),
            KernelKind::Scatter => f.write_str("library(scatter, compiled combiner)"),
            KernelKind::While => f.write_str("while (cond and body planned on their own)"),
            KernelKind::Case => f.write_str("conditional (branches planned on their own)"),
            KernelKind::Opaque { reason } => write!(f, "opaque (interpreted: {reason})"),
        }
    }
}

/// Builds the plan of `module`'s entry computation. Never fails on an op it cannot
/// compile (that kernel is opaque); fails only on a malformed module.
pub fn plan(module: &Module) -> Result<KernelPlan, String> {
    plan_computation(module, module.entry)
}

/// Builds the plan of computation `comp_id` (the entry, or a while body a target runs)
/// for the CPU target.
pub fn plan_computation(module: &Module, comp_id: CompId) -> Result<KernelPlan, String> {
    plan_computation_with(module, comp_id, &TargetCaps::cpu())
}

/// [`plan_computation`] for a target with capabilities `caps`. In debug builds the plan
/// verifier ([`verify`]) checks the result.
pub fn plan_computation_with(module: &Module, comp_id: CompId, caps: &TargetCaps) -> Result<KernelPlan, String> {
    // Before anything is sized: a module built directly, never verified, gets this error
    // rather than buffers and an arena no machine can hold.
    crate::limits::check_module(module, &crate::limits::Limits::default()).map_err(|e| e.to_string())?;
    let comp = module.comps.get(comp_id).ok_or_else(|| format!("computation {comp_id} does not exist"))?;
    if !comp.has_root() {
        return Err(format!("the computation {} has no root", comp.name));
    }
    refuse_elems(module, comp_id, caps)?;
    let mut p = Planner {
        module,
        comp: comp_id,
        plan: KernelPlan {
            comp: comp_id,
            buffers: PrimaryMap::new(),
            params: Vec::new(),
            constants: Vec::new(),
            // About a kernel an instruction: one allocation, not a doubling per power of two.
            kernels: Vec::with_capacity(comp.order.len()),
            result: ValueBufs::Token,
            values: HashMap::default(),
            chains: Vec::new(),
            arena: ArenaAssignment::default(),
            caps: caps.clone(),
        },
        values: HashMap::default(),
        elementals: memo::ElementalMemo::default(),
    };
    for &param in &comp.params {
        let v = p.fresh_value(&comp.inst(param).ty, &comp.inst(param).name);
        p.values.insert(param, v.clone());
        p.plan.params.push(v);
    }
    for &id in &comp.order {
        if p.values.contains_key(&id) {
            continue;
        }
        p.instruction(id)?;
    }
    p.plan.result = p.value(comp.root)?;
    p.plan.values = p.values;
    check_buffers(module, &p.plan)?;
    p.plan.derive_layout();
    verify::debug_check(module, &p.plan, "after planning");
    Ok(p.plan)
}

/// Fails, naming the first instruction, when computation `comp_id` or one it calls
/// (fusion bodies, reducers, comparators, loop bodies) holds a value of an element type
/// the target refuses.
fn refuse_elems(module: &Module, comp_id: CompId, caps: &TargetCaps) -> Result<(), String> {
    if caps.refused_elems.is_empty() {
        return Ok(());
    }
    let mut seen = rustc_hash::FxHashSet::default();
    let mut stack = vec![comp_id];
    while let Some(c) = stack.pop() {
        if !seen.insert(c) {
            continue;
        }
        let comp = module.comps.get(c).ok_or_else(|| format!("computation {c} does not exist"))?;
        for &id in &comp.order {
            let inst = comp.inst(id);
            if let Some(elem) = inst.ty.leaves().map(|s| s.elem).find(|&e| caps.refuses(e)) {
                return Err(format!(
                    "{}: %{}: {} computes in {elem}, which the {} target does not support",
                    inst.loc,
                    inst.name,
                    inst.op.hlo_name(),
                    caps.name
                ));
            }
            stack.extend(inst.op.called_computations());
        }
    }
    Ok(())
}

/// The plan's buffers against the default limits, before the arena is sized from them:
/// its temporaries (a dot's result before its epilogue, ...) are arrays the module's
/// types do not show. The error names the instruction whose kernel writes the buffer.
fn check_buffers(module: &Module, plan: &KernelPlan) -> Result<(), String> {
    let limits = crate::limits::Limits::default();
    let mut total = 0u64;
    for (b, buf) in plan.buffers.iter() {
        let size = limits.check_shape(&buf.shape);
        total = total.saturating_add(*size.as_ref().unwrap_or(&u64::MAX));
        let problem = match size {
            Err(m) => m,
            Ok(_) if total > limits.max_total_bytes => format!(
                "the kernel plan's buffers up to this one total {}, more than the limit of {}",
                crate::limits::format_bytes(total),
                crate::limits::format_bytes(limits.max_total_bytes)
            ),
            Ok(_) => continue,
        };
        let writer =
            plan.kernels.iter().find(|k| k.outputs.contains(&b)).map(|k| module.comp(plan.comp).inst(k.source));
        let at = writer.map(|i| format!("{}: %{}: ", i.loc, i.name)).unwrap_or_default();
        return Err(format!("{at}buffer {}: {problem}", buf.name));
    }
    Ok(())
}

struct Planner<'m> {
    module: &'m Module,
    comp: CompId,
    plan: KernelPlan,
    values: HashMap<InstId, ValueBufs>,
    /// Fusion bodies' descriptions, for fusions whose bodies are the same code.
    elementals: memo::ElementalMemo,
}

impl<'m> Planner<'m> {
    fn buffer(&mut self, shape: Shape, name: String) -> BufferId {
        self.plan.buffers.push(Buffer { shape, name })
    }

    fn fresh_value(&mut self, ty: &Type, name: &str) -> ValueBufs {
        match ty {
            Type::Array(s) => ValueBufs::Array(self.buffer(s.clone(), name.to_string())),
            Type::Tuple(ts) => ValueBufs::Tuple(
                ts.iter().enumerate().map(|(i, t)| self.fresh_value(t, &format!("{name}.{i}"))).collect(),
            ),
            Type::Token => ValueBufs::Token,
        }
    }

    fn value(&self, id: InstId) -> Result<ValueBufs, String> {
        self.values
            .get(&id)
            .cloned()
            .ok_or_else(|| format!("%{} is used before it is defined", self.module.comp(self.comp).inst(id).name))
    }

    fn array_buf(&self, id: InstId) -> Option<BufferId> {
        match self.values.get(&id) {
            Some(ValueBufs::Array(b)) => Some(*b),
            _ => None,
        }
    }

    fn instruction(&mut self, id: InstId) -> Result<(), String> {
        let comp = self.module.comp(self.comp);
        let inst = comp.inst(id);
        match &inst.op {
            Op::Constant(l) => {
                let b = self.buffer(l.shape.clone(), inst.name.clone());
                self.plan.constants.push((b, l.clone()));
                self.values.insert(id, ValueBufs::Array(b));
            }
            Op::Tuple => {
                let parts = inst.operands.iter().map(|&o| self.value(o)).collect::<Result<_, _>>()?;
                self.values.insert(id, ValueBufs::Tuple(parts));
            }
            Op::GetTupleElement { index } => match self.value(inst.operands[0])? {
                ValueBufs::Tuple(mut parts) if (*index as usize) < parts.len() => {
                    self.values.insert(id, parts.swap_remove(*index as usize));
                }
                _ => return Err(format!("%{}: get-tuple-element of a non-tuple", inst.name)),
            },
            Op::AfterAll => {
                self.values.insert(id, ValueBufs::Token);
            }
            _ => {
                let result = self.fresh_value(&inst.ty, &inst.name);
                self.values.insert(id, result.clone());
                let before = self.plan.kernels.len();
                if let Err(reason) = self.compiled(id, &result) {
                    self.plan.kernels.truncate(before);
                    self.opaque(id, result, reason)?;
                }
            }
        }
        Ok(())
    }

    fn opaque(&mut self, id: InstId, result: ValueBufs, reason: String) -> Result<(), String> {
        self.values.insert(id, result);
        let k = opaque_kernel(self.module, self.comp, &self.values, id, reason)?;
        self.plan.kernels.push(k);
        Ok(())
    }

    /// Plans `id` as compiled kernels, or says why it cannot be.
    fn compiled(&mut self, id: InstId, result: &ValueBufs) -> Result<(), String> {
        let module = self.module;
        let comp = module.comp(self.comp);
        let inst = comp.inst(id);
        let outputs = result.leaves();
        match &inst.op {
            Op::Fusion { body, .. } => {
                let body_comp = module.comp(*body);
                let mut slots = HashMap::default();
                let mut inputs = Vec::new();
                for (i, &p) in body_comp.params.iter().enumerate() {
                    let o = inst.operands.get(i).ok_or("fusion with too few operands")?;
                    let b = self.array_buf(*o).ok_or("a fusion operand that is not an array")?;
                    slots.insert(p, i as u32);
                    inputs.push(b);
                }
                let root = body_comp.root_inst();
                let roots: Vec<InstId> =
                    if matches!(root.op, Op::Tuple) { root.operands.clone() } else { vec![body_comp.root] };
                // A variadic reduce among the outputs (argmax next to a sum): read each of
                // its results through a get-tuple-element in a scratch copy of the body.
                let scratch;
                let (body_comp, roots, body_id) = if roots.iter().any(|&r| body_comp.inst(r).ty.as_tuple().is_some()) {
                    scratch = flatten_roots(body_comp, &roots)?;
                    (&scratch.0, scratch.1.clone(), None)
                } else {
                    (body_comp, roots, Some(*body))
                };
                if roots.len() != outputs.len() {
                    return Err("fusion outputs do not match its type".into());
                }
                // A dot or convolution inside (output fusion): GEMM into a temporary, then
                // the epilogue.
                let dots: Vec<InstId> = body_comp
                    .order
                    .iter()
                    .copied()
                    .filter(|&m| matches!(body_comp.inst(m).op, Op::Dot(_) | Op::Convolution(_)))
                    .collect();
                if dots.len() > 1 {
                    return Err("more than one dot or convolution in a fusion".into());
                }
                if let Some(&d) = dots.first() {
                    let dinst = body_comp.inst(d);
                    let ins: Vec<BufferId> = dinst
                        .operands
                        .iter()
                        .map(|o| slots.get(o).map(|&s| inputs[s as usize]))
                        .collect::<Option<_>>()
                        .ok_or("a dot whose operands are computed inside the fusion")?;
                    let dshape = dinst.ty.as_array().ok_or("a dot must produce an array")?.clone();
                    let conv = matches!(dinst.op, Op::Convolution(_));
                    // Without a GEMM library, an epilogue that reads the dot at its own
                    // element follows the dot's reduction in the same kernel.
                    if !conv && !self.plan.caps.library_dot {
                        let fused =
                            self.dot_with_epilogue(&inst.name, id, body_comp, d, &roots, &slots, &inputs, &outputs);
                        if let Ok(kernel) = fused {
                            self.plan.kernels.push(kernel);
                            return Ok(());
                        }
                    }
                    if conv && ins.len() != 2 {
                        return Err("malformed convolution".into());
                    }
                    // The dot's kernel writes the fusion's output, or a temporary the
                    // epilogue reads: a GEMM call, or a reduction kernel on a target
                    // without a GEMM library.
                    let only_dot = roots == [d];
                    let into = if only_dot {
                        outputs[0]
                    } else {
                        self.buffer(dshape, format!("{}.{}", inst.name, if conv { "conv" } else { "dot" }))
                    };
                    if conv {
                        self.convolution(&inst.name, id, body_comp, d, ins[0], ins[1], into)?;
                    } else if self.plan.caps.library_dot {
                        self.dot(inst.name.clone(), id, body_comp, d, ins, into)?;
                    } else {
                        self.dot_as_reduction(inst.name.clone(), id, body_comp, d, ins, into)?;
                    }
                    if only_dot {
                        return Ok(());
                    }
                    let tmp = into;
                    slots.insert(d, inputs.len() as u32);
                    inputs.push(tmp);
                }
                self.elemental(inst.name.clone(), id, (body_comp, body_id), &roots, slots, inputs, outputs)
            }
            Op::While { cond, body } => {
                let operands: Vec<ValueBufs> =
                    inst.operands.iter().map(|&o| self.value(o)).collect::<Result<_, _>>()?;
                self.plan.kernels.push(Kernel {
                    name: inst.name.clone(),
                    source: id,
                    kind: KernelKind::While,
                    inputs: operands.iter().flat_map(|v| v.leaves()).collect(),
                    outputs,
                    body: KernelBody::While { cond: *cond, body: *body, operands, result: result.clone() },
                });
                Ok(())
            }
            Op::Case { branches, branch_operands } => {
                let operands: Vec<ValueBufs> =
                    inst.operands.iter().map(|&o| self.value(o)).collect::<Result<_, _>>()?;
                if branches.is_empty() || branch_operands.len() != branches.len() {
                    return Err("a conditional without branches".into());
                }
                self.plan.kernels.push(Kernel {
                    name: inst.name.clone(),
                    source: id,
                    kind: KernelKind::Case,
                    inputs: operands.iter().flat_map(|v| v.leaves()).collect(),
                    outputs,
                    body: KernelBody::Case {
                        branches: branches.clone(),
                        branch_operands: branch_operands.clone(),
                        operands,
                        result: result.clone(),
                    },
                });
                Ok(())
            }
            Op::Dot(_) => {
                let ins: Vec<BufferId> = inst
                    .operands
                    .iter()
                    .map(|&o| self.array_buf(o))
                    .collect::<Option<_>>()
                    .ok_or("dot of non-arrays")?;
                if !self.plan.caps.library_dot {
                    return self.dot_as_reduction(inst.name.clone(), id, comp, id, ins, outputs[0]);
                }
                let before = self.plan.kernels.len();
                match self.dot(inst.name.clone(), id, comp, id, ins.clone(), outputs[0]) {
                    Ok(()) => Ok(()),
                    Err(_) => {
                        // Not a float GEMM (integers, pred, mixed types): a reduction.
                        self.plan.kernels.truncate(before);
                        self.dot_as_reduction(inst.name.clone(), id, comp, id, ins, outputs[0])
                    }
                }
            }
            Op::Sort { dim, comparator, .. } => {
                let ins: Vec<BufferId> = inst
                    .operands
                    .iter()
                    .map(|&o| self.array_buf(o))
                    .collect::<Option<_>>()
                    .ok_or("sort of non-arrays")?;
                let spec = self.sort_spec(&ins, &outputs, *dim, *comparator)?;
                self.plan.kernels.push(Kernel {
                    name: inst.name.clone(),
                    source: id,
                    kind: KernelKind::Sort,
                    inputs: ins,
                    outputs,
                    body: KernelBody::Sort(Box::new(spec)),
                });
                Ok(())
            }
            Op::Scatter(dims) => {
                let ins: Vec<BufferId> = inst
                    .operands
                    .iter()
                    .map(|&o| self.array_buf(o))
                    .collect::<Option<_>>()
                    .ok_or("scatter of non-arrays")?;
                let spec = self.scatter_spec(&ins, &outputs, dims)?;
                self.plan.kernels.push(Kernel {
                    name: inst.name.clone(),
                    source: id,
                    kind: KernelKind::Scatter,
                    inputs: ins,
                    outputs,
                    body: KernelBody::Scatter(Box::new(spec)),
                });
                Ok(())
            }
            Op::Convolution(_) => {
                let ins: Vec<BufferId> = inst
                    .operands
                    .iter()
                    .map(|&o| self.array_buf(o))
                    .collect::<Option<_>>()
                    .ok_or("convolution of non-arrays")?;
                if ins.len() != 2 || outputs.len() != 1 {
                    return Err("malformed convolution".into());
                }
                self.convolution(&inst.name, id, comp, id, ins[0], ins[1], outputs[0])
            }
            op if op.is_elementwise()
                || op.is_data_movement()
                || matches!(
                    op,
                    Op::Reduce { .. }
                        | Op::ReduceWindow(_)
                        | Op::DynamicSlice { .. }
                        | Op::DynamicUpdateSlice
                        | Op::Gather(_)
                ) =>
            {
                let mut slots = HashMap::default();
                let mut inputs = Vec::new();
                for &o in &inst.operands {
                    if slots.contains_key(&o) {
                        continue;
                    }
                    let b = self.array_buf(o).ok_or("an operand that is not an array")?;
                    slots.insert(o, inputs.len() as u32);
                    inputs.push(b);
                }
                let roots: Vec<InstId> = if let Type::Tuple(ts) = &inst.ty {
                    // A variadic reduce: one kernel output per result, read through the
                    // reduce's results.
                    return self.variadic_reduce(id, ts.len(), slots, inputs, outputs);
                } else {
                    vec![id]
                };
                self.elemental(inst.name.clone(), id, (comp, None), &roots, slots, inputs, outputs)
            }
            other => Err(format!("{} is not compiled", other.hlo_name())),
        }
    }

    /// A sort's spec, its comparator described elementally over scalar inputs.
    fn sort_spec(&self, ins: &[BufferId], outs: &[BufferId], dim: i64, comparator: CompId) -> Result<SortSpec, String> {
        let shapes: Vec<&Shape> = ins.iter().map(|&b| &self.plan.buffers[b].shape).collect();
        let first = shapes.first().ok_or("a sort of nothing")?;
        let rank = first.rank() as i64;
        let d = if dim < 0 { dim + rank } else { dim };
        let fits = outs.len() == ins.len()
            && shapes.iter().all(|s| s.dims == first.dims)
            && outs
                .iter()
                .zip(&shapes)
                .all(|(&o, s)| self.plan.buffers[o].shape.dims == s.dims && self.plan.buffers[o].shape.elem == s.elem);
        if !fits || rank == 0 || d < 0 || d >= rank {
            return Err("malformed sort".into());
        }
        let cmp = self.module.comps.get(comparator).ok_or("missing comparator")?;
        if cmp.params.len() != 2 * ins.len() || !cmp.has_root() {
            return Err("the comparator does not take two scalars per operand".into());
        }
        for (i, &p) in cmp.params.iter().enumerate() {
            let t = cmp.inst(p).ty.as_array().ok_or("comparator parameter not an array")?;
            if t.rank() != 0 || t.elem != shapes[i / 2].elem {
                return Err("comparator parameters do not match the operands".into());
            }
        }
        if !cmp.root_inst().ty.is_scalar_of(ElementType::Pred) {
            return Err("the comparator does not return a pred".into());
        }
        let slots: HashMap<InstId, u32> = cmp.params.iter().enumerate().map(|(i, &p)| (p, i as u32)).collect();
        let (comparator, extra) =
            elemental::build(self.module, cmp, &[cmp.root], &slots).map_err(|e| format!("comparator: {e}"))?;
        if !extra.is_empty() || comparator.is_reduction() {
            return Err("comparator: not a scalar function".into());
        }
        Ok(SortSpec {
            dim: d as usize,
            dims: first.dims.to_vec(),
            elems: shapes.iter().map(|s| s.elem).collect(),
            comparator,
        })
    }

    /// A scatter's spec, after the checks the interpreter makes (a malformed scatter
    /// stays opaque, so the interpreter reports it).
    fn scatter_spec(
        &self,
        ins: &[BufferId],
        outs: &[BufferId],
        s: &crate::ir::ScatterDims,
    ) -> Result<ScatterSpec, String> {
        let bad = || Err::<ScatterSpec, String>("malformed scatter".into());
        if ins.len() < 3 || ins.len().is_multiple_of(2) {
            return bad();
        }
        let n = (ins.len() - 1) / 2;
        let shape = |b: BufferId| self.plan.buffers[b].shape.clone();
        let operand = shape(ins[0]);
        let index = shape(ins[n]);
        let update = shape(ins[n + 1]);
        let rank = operand.rank();
        for i in 0..n {
            let (o, u) = (shape(ins[i]), shape(ins[n + 1 + i]));
            let out = outs.get(i).map(|&b| shape(b));
            if o.dims != operand.dims || u.dims != update.dims || u.elem != o.elem || out != Some(o.clone()) {
                return bad();
            }
        }
        if outs.len() != n || !index.elem.is_int() {
            return bad();
        }
        let axes_ok = |v: &[i64], r: usize| {
            let mut seen = vec![false; r];
            v.iter().all(|&a| a >= 0 && (a as usize) < r && !std::mem::replace(&mut seen[a as usize], true))
        };
        let vdim = s.index_vector_dim;
        if !axes_ok(&s.inserted_window_dims, rank)
            || !axes_ok(&s.input_batching_dims, rank)
            || !axes_ok(&s.scatter_dims_to_operand_dims, rank)
            || !axes_ok(&s.update_window_dims, update.rank())
            || vdim < 0
            || vdim as usize > index.rank()
            || s.input_batching_dims.len() != s.scatter_indices_batching_dims.len()
        {
            return bad();
        }
        let vdim = vdim as usize;
        let vlen = if vdim < index.rank() { index.dims[vdim] } else { 1 };
        if vlen != s.scatter_dims_to_operand_dims.len() as i64 {
            return bad();
        }
        let mut batching = Vec::new();
        for (&od, &id) in s.input_batching_dims.iter().zip(&s.scatter_indices_batching_dims) {
            if id < 0
                || id as usize >= index.rank()
                || id as usize == vdim
                || operand.dims[od as usize] != index.dims[id as usize]
            {
                return bad();
            }
            batching.push((od as usize, id as usize));
        }
        let window_axes: Vec<usize> = (0..rank)
            .filter(|d| !s.inserted_window_dims.contains(&(*d as i64)) && !s.input_batching_dims.contains(&(*d as i64)))
            .collect();
        if window_axes.len() != s.update_window_dims.len() {
            return bad();
        }
        let scatter_axes: Vec<usize> =
            (0..update.rank()).filter(|a| !s.update_window_dims.contains(&(*a as i64))).collect();
        let index_batch: Vec<i64> = (0..index.rank()).filter(|&d| d != vdim).map(|d| index.dims[d]).collect();
        if scatter_axes.len() != index_batch.len()
            || scatter_axes.iter().zip(&index_batch).any(|(&a, &d)| update.dims[a] != d)
        {
            return bad();
        }
        let window: Vec<(usize, usize)> =
            s.update_window_dims.iter().zip(&window_axes).map(|(&a, &d)| (a as usize, d)).collect();
        if window.iter().any(|&(a, d)| update.dims[a] > operand.dims[d]) {
            return bad();
        }
        let body = self.module.comps.get(s.body).ok_or("missing scatter body")?;
        let elems: Vec<ElementType> = (0..n).map(|i| shape(ins[i]).elem).collect();
        if body.params.len() != 2 * n || !body.has_root() {
            return Err("the scatter body does not take 2N scalars".into());
        }
        for (i, &p) in body.params.iter().enumerate() {
            let t = body.inst(p).ty.as_array().ok_or("scatter body parameter not an array")?;
            if t.rank() != 0 || t.elem != elems[i % n] {
                return Err("scatter body parameters do not match the operands".into());
            }
        }
        let root = body.root_inst();
        let roots: Vec<InstId> = if matches!(root.op, Op::Tuple) { root.operands.clone() } else { vec![body.root] };
        if roots.len() != n {
            return Err("the scatter body does not return N values".into());
        }
        for (i, &r) in roots.iter().enumerate() {
            if !body.inst(r).ty.is_scalar_of(elems[i]) {
                return Err("the scatter body returns values of other types".into());
            }
        }
        let slots: HashMap<InstId, u32> = body.params.iter().enumerate().map(|(i, &p)| (p, i as u32)).collect();
        let (combiner, extra) =
            elemental::build(self.module, body, &roots, &slots).map_err(|e| format!("scatter body: {e}"))?;
        if !extra.is_empty() || combiner.is_reduction() {
            return Err("scatter body: not a scalar function".into());
        }
        Ok(ScatterSpec {
            operand_dims: operand.dims.to_vec(),
            update_dims: update.dims.to_vec(),
            index_dims: index.dims.to_vec(),
            index_elem: index.elem,
            index_vector_dim: vdim,
            scatter_dims_to_operand_dims: s.scatter_dims_to_operand_dims.iter().map(|&d| d as usize).collect(),
            batching,
            window,
            scatter_axes,
            elems,
            combiner,
            unique_indices: s.unique_indices,
        })
    }

    /// A top-level variadic reduce (argmax...): described through a scratch computation
    /// holding the reduce and one get-tuple-element per result.
    fn variadic_reduce(
        &mut self,
        id: InstId,
        n: usize,
        slots: HashMap<InstId, u32>,
        inputs: Vec<BufferId>,
        outputs: Vec<BufferId>,
    ) -> Result<(), String> {
        let comp = self.module.comp(self.comp);
        let inst = comp.inst(id);
        let mut scratch = comp.clone();
        let mut roots = Vec::new();
        for i in 0..n {
            let ty = inst.ty.as_tuple().ok_or("variadic reduce type")?[i].clone();
            roots.push(scratch.push(crate::ir::Instruction {
                name: format!("{}.{i}", inst.name),
                op: Op::GetTupleElement { index: i as u32 },
                operands: vec![id],
                ty,
                loc: inst.loc.clone(),
            }));
        }
        self.elemental(inst.name.clone(), id, (&scratch, None), &roots, slots, inputs, outputs)
    }

    #[allow(clippy::too_many_arguments)]
    fn elemental(
        &mut self,
        name: String,
        source: InstId,
        comp: (&crate::ir::Computation, Option<CompId>),
        roots: &[InstId],
        slots: HashMap<InstId, u32>,
        inputs: Vec<BufferId>,
        outputs: Vec<BufferId>,
    ) -> Result<(), String> {
        let module = self.module;
        let kernel = self.elemental_kernel(module, name, source, comp, roots, &slots, inputs, outputs)?;
        self.plan.kernels.push(kernel);
        Ok(())
    }

    /// The elemental kernel of `roots` of `comp` (whose reduce bodies `module` holds):
    /// the constants it meets become plan constants read as extra inputs. `comp` comes
    /// with its id when it is a computation of `module` (a fusion body), whose
    /// description may then be a copy of an earlier body's with the same code.
    #[allow(clippy::too_many_arguments)]
    fn elemental_kernel(
        &mut self,
        module: &Module,
        name: String,
        source: InstId,
        (comp, id): (&crate::ir::Computation, Option<CompId>),
        roots: &[InstId],
        slots: &HashMap<InstId, u32>,
        mut inputs: Vec<BufferId>,
        outputs: Vec<BufferId>,
    ) -> Result<Kernel, String> {
        let (mut e, extra) = match id {
            Some(id) => self.elementals.build(module, id, roots, slots)?,
            None => elemental::build(module, comp, roots, slots)?,
        };
        for (_, lit) in extra {
            let b = self.buffer(lit.shape.clone(), format!("{name}.const"));
            self.plan.constants.push((b, lit));
            inputs.push(b);
        }
        e.canonicalize_inputs(&mut inputs);
        let kind = elemental_kind(&e);
        Ok(Kernel { name, source, kind, inputs, outputs, body: KernelBody::Elemental(e) })
    }

    /// A dot as an elemental reduction ([`push_dot_reduction`]), its own kernel.
    fn dot_as_reduction(
        &mut self,
        name: String,
        source: InstId,
        comp: &crate::ir::Computation,
        id: InstId,
        inputs: Vec<BufferId>,
        output: BufferId,
    ) -> Result<(), String> {
        let (mut module, mut scratch) = (self.module.clone(), comp.clone());
        let red = push_dot_reduction(&mut module, &mut scratch, id)?;
        let (l, r) = (comp.inst(id).operands[0], comp.inst(id).operands[1]);
        let mut slots = HashMap::default();
        slots.insert(l, 0);
        let mut ins = vec![inputs[0]];
        if r != l {
            slots.insert(r, 1);
            ins.push(inputs[1]);
        }
        let (e, _) = elemental::build(&module, &scratch, &[red], &slots)?;
        self.plan.kernels.push(Kernel {
            name,
            source,
            kind: elemental_kind(&e),
            inputs: ins,
            outputs: vec![output],
            body: KernelBody::Elemental(e),
        });
        Ok(())
    }

    /// An output fusion on a target without a GEMM library as one reduction kernel: dot
    /// `d` of fusion body `comp` in its reduction form ([`push_dot_reduction`]), every
    /// root computed from its result after the loop. The builder refuses an epilogue
    /// that reads the dot's result at another element than its own (a transpose of it):
    /// the caller then plans the dot and the epilogue as two kernels.
    #[allow(clippy::too_many_arguments)]
    fn dot_with_epilogue(
        &mut self,
        name: &str,
        source: InstId,
        comp: &crate::ir::Computation,
        d: InstId,
        roots: &[InstId],
        slots: &HashMap<InstId, u32>,
        inputs: &[BufferId],
        outputs: &[BufferId],
    ) -> Result<Kernel, String> {
        let (mut module, mut scratch) = (self.module.clone(), comp.clone());
        let red = push_dot_reduction(&mut module, &mut scratch, d)?;
        scratch.replace_all_uses(d, red);
        let roots: Vec<InstId> = roots.iter().map(|&r| if r == d { red } else { r }).collect();
        self.elemental_kernel(
            &module,
            name.into(),
            source,
            (&scratch, None),
            &roots,
            slots,
            inputs.to_vec(),
            outputs.to_vec(),
        )
    }

    fn dot(
        &mut self,
        name: String,
        source: InstId,
        comp: &crate::ir::Computation,
        d: InstId,
        inputs: Vec<BufferId>,
        output: BufferId,
    ) -> Result<(), String> {
        let inst = comp.inst(d);
        let Op::Dot(dims) = &inst.op else { return Err("not a dot".into()) };
        let lhs = comp.inst(inst.operands[0]).ty.as_array().ok_or("dot lhs")?;
        let rhs = comp.inst(inst.operands[1]).ty.as_array().ok_or("dot rhs")?;
        let out = inst.ty.as_array().ok_or("dot result")?;
        if !(out.elem.is_float() && lhs.elem == out.elem && rhs.elem == out.elem) {
            return Err(format!("dot of {} x {} -> {} is not a float GEMM", lhs.elem, rhs.elem, out.elem));
        }
        let spec = dot_spec(dims, &lhs.dims, &rhs.dims, out.elem)?;
        self.plan.kernels.push(Kernel {
            name,
            source,
            kind: KernelKind::Dot,
            inputs,
            outputs: vec![output],
            body: KernelBody::Dot(spec),
        });
        Ok(())
    }
}

/// A dot as an elemental reduction: both operands broadcast to
/// `[batch, lhs free, rhs free, contracting]`, converted to the result type,
/// multiplied (and for pred) and summed (or) over the contracting variables; f16
/// and bf16 in f32, rounded once at the end, as a dot is (the interpreter, XLA's
/// GEMMs), not at every step as a `reduce` in that type would be. Pushed into
/// `scratch`, a copy of the computation holding dot `id`, its reduce body added to
/// `module`, a copy of the module; the result (in the dot's type).
fn push_dot_reduction(module: &mut Module, scratch: &mut crate::ir::Computation, id: InstId) -> Result<InstId, String> {
    use crate::ir::{BinaryOp, Computation, Instruction, Loc};
    let inst = scratch.inst(id).clone();
    let Op::Dot(d) = &inst.op else { return Err("not a dot".into()) };
    let out = inst.ty.as_array().ok_or("dot result")?.clone();
    let elem = if matches!(out.elem, ElementType::F16 | ElementType::BF16) { ElementType::F32 } else { out.elem };
    let (l, r) = (inst.operands[0], inst.operands[1]);
    let lhs = scratch.inst(l).ty.as_array().ok_or("dot lhs")?.clone();
    let rhs = scratch.inst(r).ty.as_array().ok_or("dot rhs")?.clone();
    let (nb, nlf) = (d.lhs_batch.len(), lhs.rank() - d.lhs_batch.len() - d.lhs_contracting.len());
    let nrf = rhs.rank() - d.rhs_batch.len() - d.rhs_contracting.len();
    let mut full = out.dims.clone();
    full.extend(d.lhs_contracting.iter().map(|&c| lhs.dims[c as usize]));
    // Where each operand dimension goes in `full`.
    let place = |rank: usize, batch: &[i64], contracting: &[i64], free_at: usize| -> Vec<i64> {
        let mut free = free_at;
        (0..rank as i64)
            .map(|dim| {
                if let Some(i) = batch.iter().position(|&b| b == dim) {
                    i as i64
                } else if let Some(i) = contracting.iter().position(|&c| c == dim) {
                    (nb + nlf + nrf + i) as i64
                } else {
                    free += 1;
                    (free - 1) as i64
                }
            })
            .collect()
    };
    let lmap = place(lhs.rank(), &d.lhs_batch, &d.lhs_contracting, nb);
    let rmap = place(rhs.rank(), &d.rhs_batch, &d.rhs_contracting, nb + nlf);
    let mut body = Computation::new(format!("{}.sum", inst.name));
    let scalar = Type::Array(Shape::scalar(elem));
    let acc = body.push_param("acc", scalar.clone(), Loc::default());
    let x = body.push_param("x", scalar.clone(), Loc::default());
    let combine = if elem.is_pred() { BinaryOp::Or } else { BinaryOp::Add };
    body.root = body.push(Instruction {
        name: "sum".into(),
        op: Op::Binary(combine),
        operands: vec![acc, x],
        ty: scalar.clone(),
        loc: Loc::default(),
    });
    let body_id = module.add_computation(body);
    let full_ty = Type::Array(Shape::new(elem, full.clone()));
    let mut push = |op: Op, operands: Vec<InstId>, ty: Type| {
        scratch.push(Instruction { name: format!("{}.part", inst.name), op, operands, ty, loc: inst.loc.clone() })
    };
    let side = |push: &mut dyn FnMut(Op, Vec<InstId>, Type) -> InstId, o: InstId, from: &Shape, map: Vec<i64>| {
        let b = push(Op::BroadcastInDim { dims: map }, vec![o], Type::Array(Shape::new(from.elem, full.clone())));
        if from.elem == elem {
            b
        } else {
            push(Op::Convert, vec![b], full_ty.clone())
        }
    };
    let lb = side(&mut push, l, &lhs, lmap);
    let rb = side(&mut push, r, &rhs, rmap);
    let product = if elem.is_pred() { BinaryOp::And } else { BinaryOp::Mul };
    let m = push(Op::Binary(product), vec![lb, rb], full_ty.clone());
    let zero = push(Op::Constant(Literal::zeros(Shape::scalar(elem))), vec![], scalar);
    let reduced: Vec<i64> = (out.rank()..full.len()).map(|i| i as i64).collect();
    let summed = Type::Array(Shape::new(elem, out.dims.clone()));
    let mut red = push(Op::Reduce { dims: reduced, body: body_id }, vec![m, zero], summed);
    if elem != out.elem {
        red = push(Op::Convert, vec![red], Type::Array(out));
    }
    Ok(red)
}

/// A copy of `comp` with one get-tuple-element per result of each tuple-typed root,
/// and the flattened list of roots.
fn flatten_roots(
    comp: &crate::ir::Computation,
    roots: &[InstId],
) -> Result<(crate::ir::Computation, Vec<InstId>), String> {
    let mut scratch = comp.clone();
    let mut flat = Vec::new();
    for &r in roots {
        let inst = comp.inst(r);
        match &inst.ty {
            Type::Tuple(ts) => {
                for (i, t) in ts.iter().enumerate() {
                    if t.as_array().is_none() {
                        return Err("a nested tuple output".into());
                    }
                    flat.push(scratch.push(crate::ir::Instruction {
                        name: format!("{}.{i}", inst.name),
                        op: Op::GetTupleElement { index: i as u32 },
                        operands: vec![r],
                        ty: t.clone(),
                        loc: inst.loc.clone(),
                    }));
                }
            }
            _ => flat.push(r),
        }
    }
    Ok((scratch, flat))
}

/// An opaque kernel running entry instruction `id` in the interpreter, reading and
/// writing the buffers `values` assigns (a target whose emitter refuses a kernel falls
/// back to this).
pub fn opaque_kernel(
    module: &Module,
    comp: CompId,
    values: &HashMap<InstId, ValueBufs>,
    id: InstId,
    reason: String,
) -> Result<Kernel, String> {
    let inst = module.comp(comp).inst(id);
    let get = |o: InstId| values.get(&o).cloned().ok_or_else(|| format!("%{} has no buffers", inst.name));
    let operands: Vec<ValueBufs> = inst.operands.iter().map(|&o| get(o)).collect::<Result<_, _>>()?;
    let result = get(id)?;
    Ok(Kernel {
        name: inst.name.clone(),
        source: id,
        kind: KernelKind::Opaque { reason },
        inputs: operands.iter().flat_map(|v| v.leaves()).collect(),
        outputs: result.leaves(),
        body: KernelBody::Opaque { inst: id, operands, result },
    })
}

/// A computation running just instruction `id` of `comp_id` on parameters of its
/// operands' types: what a target's runtime hands the interpreter for an opaque kernel
/// (its operands read from the kernel's buffers).
pub fn host_computation(module: &mut Module, comp_id: CompId, id: InstId) -> CompId {
    let from = module.comp(comp_id);
    let inst = from.inst(id).clone();
    let types: Vec<_> = inst.operands.iter().map(|&o| from.inst(o).ty.clone()).collect();
    let mut comp = crate::ir::Computation::new(format!("{}.interpreted", inst.name));
    let params: Vec<_> = types
        .into_iter()
        .enumerate()
        .map(|(i, t)| comp.push_param(format!("p{i}"), t, crate::ir::Loc::default()))
        .collect();
    let mut copy = inst.clone();
    copy.operands = params;
    comp.root = comp.push(copy);
    module.add_computation(comp)
}

/// Per kernel, the first kernel whose code key equals its own (itself when no earlier one
/// does, or when it has no key): the kernels a target compiles once and calls with each
/// kernel's buffers. `bucket` is a cheap hash that equal keys share, so a key is compared
/// in full only against keys of its bucket. The CPU target's JIT and listings and the
/// WebAssembly target group kernels with it, each with its own key.
pub fn first_of_same_code<K: PartialEq>(keys: &[Option<K>], bucket: impl Fn(&K) -> u64) -> Vec<usize> {
    let mut seen: rustc_hash::FxHashMap<u64, Vec<usize>> = Default::default();
    let mut firsts: Vec<usize> = (0..keys.len()).collect();
    for (i, key) in keys.iter().enumerate() {
        let Some(key) = key else { continue };
        let bucket = seen.entry(bucket(key)).or_default();
        match bucket.iter().copied().find(|&f| keys[f].as_ref() == Some(key)) {
            Some(first) => firsts[i] = first,
            None => bucket.push(i),
        }
    }
    firsts
}

/// The kind of an elemental kernel: a loop, or a row reduction when every reduced
/// variable comes after every kept one, else a column reduction.
pub fn elemental_kind(e: &Elemental) -> KernelKind {
    if !e.is_reduction() {
        return KernelKind::Loop;
    }
    let last_kept = e.reduced.iter().rposition(|&r| !r);
    let first_reduced = e.reduced.iter().position(|&r| r);
    match (last_kept, first_reduced) {
        (Some(k), Some(r)) if k > r => KernelKind::Reduction(ReductionKind::Column),
        _ => KernelKind::Reduction(ReductionKind::Row),
    }
}

/// The batched-GEMM view of a dot.
fn dot_spec(d: &DotDims, lhs: &[i64], rhs: &[i64], elem: ElementType) -> Result<DotSpec, String> {
    let size = |dims: &[i64], which: &[usize]| which.iter().map(|&i| dims[i] as usize).product::<usize>();
    let to_usize = |v: &[i64]| v.iter().map(|&x| x as usize).collect::<Vec<_>>();
    let (lb, rb, lc, rc) =
        (to_usize(&d.lhs_batch), to_usize(&d.rhs_batch), to_usize(&d.lhs_contracting), to_usize(&d.rhs_contracting));
    let lf: Vec<usize> = (0..lhs.len()).filter(|i| !lb.contains(i) && !lc.contains(i)).collect();
    let rf: Vec<usize> = (0..rhs.len()).filter(|i| !rb.contains(i) && !rc.contains(i)).collect();
    let spec = DotSpec {
        batch: size(lhs, &lb),
        m: size(lhs, &lf),
        n: size(rhs, &rf),
        k: size(lhs, &lc),
        lhs_perm: lb.iter().chain(&lf).chain(&lc).copied().collect(),
        rhs_perm: rb.iter().chain(&rc).chain(&rf).copied().collect(),
        elem,
    };
    if spec.k != size(rhs, &rc) || spec.batch != size(rhs, &rb) {
        return Err("dot dimensions do not match".into());
    }
    Ok(spec)
}

#[cfg(test)]
mod tests;
