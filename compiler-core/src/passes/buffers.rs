//! Buffer assignment: which bytes of memory each value of a scheduled computation lives
//! in, and how much memory the schedule needs.
//!
//! Why: a runtime that executes a module kernel by kernel needs a place for every
//! intermediate value. Giving each value its own buffer wastes memory; XLA instead
//! computes liveness over the schedule and lets values whose lifetimes do not overlap
//! share storage. This analysis does the same for the entry computation, so the UI can
//! show peak memory per schedule and the CPU runtime can allocate one arena up front.
//!
//! Model (XLA's `TuplePointsToAnalysis` + `BufferAssignment`, simplified):
//! - A *logical buffer* is one array of a value that an instruction defines: an array
//!   result is one buffer, a tuple result (sort, while, variadic reduce...) one buffer
//!   per array leaf; tokens have none. `tuple`, `get-tuple-element`, `bitcast` and
//!   `opt-barrier` define nothing: their value *aliases* their operands' buffers.
//!   Parameters are live-in buffers owned by the caller; constants are read-only data
//!   baked into the program. Neither is ever reused or written in place.
//! - Positions are indices into `order` (the schedule). A buffer is live from the
//!   position of its defining instruction to the last position of an instruction that
//!   reads it through any alias; buffers the root refers to are live out (to the end).
//!   A buffer nothing reads is live at its definition only.
//! - At each position the outputs are placed first, then the buffers whose last use is
//!   this position are released (an instruction reads its operands while it writes its
//!   result, so they overlap), except in place:
//! - In-place updates: a `dynamic-update-slice`, a single-input `scatter`, an elementwise
//!   op or a loop fusion made only of elementwise ops may write its result into an
//!   operand's buffer when that operand is a temporary that dies at this instruction,
//!   has the result's size and layout, and (for dynamic-update-slice and scatter) is
//!   not read through another operand.
//! - Reuse: a new buffer takes the free allocation of the smallest size that fits
//!   (best fit; ties: the lowest index); when none fits, a new allocation is made.
//!   Allocations never grow or split, so an allocation is exactly as large as the first
//!   value placed in it, and every value sits at offset 0 of its allocation.
//!   The free list ([`BestFit`]) and the aligned packing ([`pack_aligned`]) are shared with
//!   the kernel plan's arena ([`crate::kernel::arena`]).
//!
//! Refused / out of scope: called computations (while bodies, branches, fusion bodies)
//! are not analyzed: a `while` or `conditional` result gets fresh buffers, conservatively.
//! Malformed instructions (a get-tuple-element out of range, a tuple whose leaves do not
//! match its operands) define fresh buffers instead of aliasing; nothing here panics.

use crate::ir::{Computation, FusionKind, InstId, Module, Op, Shape, Type};
use cranelift_entity::SecondaryMap;
use std::collections::HashMap;

/// Alignment of each temporary allocation in the arena (bytes): what XLA's CPU
/// runtime uses, enough for any vector load.
pub const ARENA_ALIGNMENT: u64 = 64;

/// Who owns an allocation's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocationKind {
    /// Part of the arena the runtime allocates: intermediates and results.
    Temp,
    /// Entry parameter `number`: the caller's buffer.
    Parameter(u32),
    /// Read-only data of the program (a constant).
    Constant,
}

/// One region of memory holding one or more values, one at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub index: usize,
    pub kind: AllocationKind,
    pub size: u64,
    /// For `Temp`: where the allocation starts in the arena (aligned to
    /// [`ARENA_ALIGNMENT`]); 0 for the others.
    pub arena_offset: u64,
    /// Whether a value of the computation's result lives here (the runtime must hand
    /// these bytes back to the caller).
    pub live_out: bool,
    /// Indices into [`BufferAssignment::values`] of the values placed here, in order.
    pub values: Vec<usize>,
}

/// Where one logical buffer lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueSlot {
    /// The defining instruction's name.
    pub inst: String,
    /// For a tuple-valued instruction: which array leaf (depth-first); `None` for an
    /// array result.
    pub leaf: Option<usize>,
    pub allocation: usize,
    /// Byte offset inside the allocation (always 0 in this allocator; the runtime must
    /// still add it).
    pub offset: u64,
    pub size: u64,
    /// Schedule position of the defining instruction.
    pub defined_at: usize,
    /// Last schedule position that reads it (`order.len()` when it is live out).
    pub last_use: usize,
    /// The operand value whose buffer this one took over in place, if any.
    pub in_place_of: Option<String>,
}

/// The buffers of a scheduled entry computation: a plain report for the UI and the
/// contract for the CPU runtime, which allocates one arena of `arena_bytes` and places
/// each `Temp` value at `allocations[a].arena_offset + offset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferAssignment {
    /// The computation analyzed (the entry).
    pub computation: String,
    pub allocations: Vec<Allocation>,
    /// Every logical buffer, in order of definition.
    pub values: Vec<ValueSlot>,
    /// For every instruction with array leaves (definers and aliases alike): the value
    /// index of each leaf. A bitcast's entry is its operand's buffer.
    pub leaves: HashMap<String, Vec<usize>>,
    /// The most bytes of temporaries live at one schedule position (a value updated in
    /// place counts once): the least memory any packing of this schedule needs.
    pub peak_bytes: u64,
    /// Sum of the sizes of the `Temp` allocations (what this allocator uses).
    pub total_allocated_bytes: u64,
    /// The arena the runtime allocates: `total_allocated_bytes` plus alignment padding.
    pub arena_bytes: u64,
    /// Bytes of the entry parameters (the caller's) and of the constants.
    pub parameter_bytes: u64,
    pub constant_bytes: u64,
}

impl BufferAssignment {
    /// Number of allocations of every kind.
    pub fn allocation_count(&self) -> usize {
        self.allocations.len()
    }
    /// Number of `Temp` allocations (arena regions).
    pub fn temp_allocation_count(&self) -> usize {
        self.allocations.iter().filter(|a| a.kind == AllocationKind::Temp).count()
    }
    /// The slot of an instruction's (first) array leaf, following aliases.
    pub fn slot(&self, inst: &str) -> Option<&ValueSlot> {
        self.leaves.get(inst).and_then(|l| l.first()).map(|&v| &self.values[v])
    }
}

/// One logical buffer, as the analyses see it.
#[derive(Clone, Debug)]
pub(crate) struct Buffer<'c> {
    pub inst: InstId,
    pub leaf: Option<usize>,
    pub size: u64,
    pub kind: AllocationKind,
    pub shape: &'c Shape,
}

/// A run of buffer indices in [`Buffers::pool`]; `len == u32::MAX` for an instruction
/// not seen.
#[derive(Copy, Clone, Debug)]
struct Span {
    start: u32,
    len: u32,
}

impl Default for Span {
    fn default() -> Self {
        Span { start: 0, len: u32::MAX }
    }
}

/// Logical buffers of one computation and the buffers each instruction's value refers
/// to (shared with the scheduler, which needs the same notion of what frees memory).
/// The per-instruction lists share one pool: no allocation per instruction.
pub(crate) struct Buffers<'c> {
    pub bufs: Vec<Buffer<'c>>,
    refs: SecondaryMap<InstId, Span>,
    defines: SecondaryMap<InstId, Span>,
    pool: Vec<usize>,
}

fn leaf_count(ty: &Type) -> usize {
    match ty {
        Type::Array(_) => 1,
        _ => ty.leaf_shapes().len(),
    }
}

impl<'c> Buffers<'c> {
    /// Finds the logical buffers of `comp`, visiting `order`.
    pub fn of(comp: &'c Computation) -> Buffers<'c> {
        let mut b = Buffers {
            bufs: Vec::with_capacity(comp.order.len()),
            refs: SecondaryMap::new(),
            defines: SecondaryMap::new(),
            pool: Vec::with_capacity(comp.order.len()),
        };
        for &id in &comp.order {
            let inst = comp.inst(id);
            let n = leaf_count(&inst.ty);
            // An alias refers to buffers already in the pool: a copy of those indices.
            let start = b.pool.len();
            let aliased = match &inst.op {
                Op::Tuple | Op::OptimizationBarrier => {
                    let mut ok = true;
                    for o in &inst.operands {
                        match b.span(*o) {
                            Some(sp) => b.pool.extend_from_within(sp.start as usize..(sp.start + sp.len) as usize),
                            None => ok = false,
                        }
                    }
                    ok
                }
                Op::Bitcast => match inst.operands.first().and_then(|&o| b.span(o)) {
                    Some(sp) => {
                        b.pool.extend_from_within(sp.start as usize..(sp.start + sp.len) as usize);
                        true
                    }
                    None => false,
                },
                Op::GetTupleElement { index } => {
                    let src = inst.operands.first().map(|&o| &comp.inst(o).ty);
                    match (src.and_then(Type::as_tuple), inst.operands.first().and_then(|&o| b.span(o))) {
                        (Some(elems), Some(sp))
                            if (*index as usize) < elems.len() && sp.len as usize == leaf_count(src.unwrap()) =>
                        {
                            let first: usize = elems[..*index as usize].iter().map(leaf_count).sum();
                            let from = sp.start as usize + first;
                            b.pool.extend_from_within(from..from + leaf_count(&elems[*index as usize]));
                            true
                        }
                        _ => false,
                    }
                }
                _ => false,
            };
            if aliased && b.pool.len() - start == n {
                b.refs[id] = Span { start: start as u32, len: n as u32 };
                continue;
            }
            b.pool.truncate(start);
            let kind = match inst.op {
                Op::Parameter(p) => AllocationKind::Parameter(p),
                Op::Constant(_) => AllocationKind::Constant,
                _ => AllocationKind::Temp,
            };
            let push = |b: &mut Buffers<'c>, leaf: Option<usize>, shape: &'c Shape| {
                // Saturating: a shape past 64 bits (a module nobody checked against
                // `crate::limits`) sizes at u64::MAX, never at a wrapped small number.
                let size = shape.checked_byte_size().unwrap_or(u64::MAX);
                b.bufs.push(Buffer { inst: id, leaf, size, kind: kind.clone(), shape });
                b.pool.push(b.bufs.len() - 1);
            };
            match &inst.ty {
                Type::Array(shape) => push(&mut b, None, shape),
                ty => {
                    for (k, shape) in ty.leaf_shapes().into_iter().enumerate() {
                        push(&mut b, Some(k), shape);
                    }
                }
            }
            let span = Span { start: start as u32, len: (b.pool.len() - start) as u32 };
            b.refs[id] = span;
            b.defines[id] = span;
        }
        b
    }

    fn span(&self, id: InstId) -> Option<Span> {
        self.refs.get(id).copied().filter(|s| s.len != u32::MAX)
    }

    fn slice(&self, sp: Span) -> &[usize] {
        &self.pool[sp.start as usize..(sp.start + sp.len) as usize]
    }

    /// The buffers of each array leaf of `id`'s value (None for an instruction not in
    /// the order).
    pub fn refs(&self, id: InstId) -> Option<&[usize]> {
        self.span(id).map(|sp| self.slice(sp))
    }

    /// The buffers `id` defines (none for an alias).
    pub fn defines(&self, id: InstId) -> &[usize] {
        match self.defines.get(id).copied().filter(|s| s.len != u32::MAX) {
            Some(sp) => self.slice(sp),
            None => &[],
        }
    }

    /// Buffers read by `id` through its operands (with repeats).
    pub fn reads<'a>(&'a self, comp: &'a Computation, id: InstId) -> impl Iterator<Item = usize> + 'a {
        comp.inst(id).operands.iter().flat_map(move |&o| self.refs(o).unwrap_or(&[]).iter().copied())
    }

    /// Buffers the computation's root refers to (live out).
    pub fn live_out(&self, comp: &Computation) -> Vec<usize> {
        if !comp.has_root() {
            return Vec::new();
        }
        self.refs(comp.root).map(<[usize]>::to_vec).unwrap_or_default()
    }
}

/// Whether the loop fusion body `comp` is made only of elementwise ops (with parameters
/// and scalar constants): then output element i depends only on input elements i, and
/// the result may overwrite an input of the same shape.
fn elementwise_body(module: &Module, body: crate::ir::CompId) -> bool {
    let Some(b) = module.comps.get(body) else { return false };
    b.order.iter().all(|&i| {
        let inst = b.inst(i);
        match &inst.op {
            Op::Parameter(_) => true,
            Op::Constant(l) => l.shape.rank() == 0,
            op => elementwise_same_dims(op),
        }
    })
}

/// Elementwise ops whose result has its operands' dimensions (not a width-changing
/// bitcast-convert).
pub(crate) fn elementwise_same_dims(op: &Op) -> bool {
    op.is_elementwise() && !matches!(op, Op::BitcastConvert)
}

/// The operand buffers that instruction `id` may overwrite with its single array result
/// `out`, in order of preference (before the liveness checks).
fn in_place_candidates(module: &Module, comp: &Computation, b: &Buffers, id: InstId, out: &Buffer) -> Vec<usize> {
    let inst = comp.inst(id);
    let single = |i: usize| -> Option<usize> {
        let r = b.refs(*inst.operands.get(i)?)?;
        (r.len() == 1).then(|| r[0])
    };
    let fits = |buf: usize| {
        let x = &b.bufs[buf];
        x.kind == AllocationKind::Temp
            && x.size == out.size
            && x.shape.dims == out.shape.dims
            && (x.shape.layout == out.shape.layout || x.shape.minor_to_major() == out.shape.minor_to_major())
    };
    match &inst.op {
        Op::DynamicUpdateSlice | Op::Scatter(_) if matches!(inst.ty, Type::Array(_)) => {
            // Only when operand 0's buffer is not also read through another operand.
            match single(0) {
                Some(buf) if fits(buf) && b.reads(comp, id).filter(|&x| x == buf).count() == 1 => vec![buf],
                _ => Vec::new(),
            }
        }
        op if elementwise_same_dims(op)
            || matches!(op, Op::Fusion { kind: FusionKind::Loop, body } if elementwise_body(module, *body)) =>
        {
            (0..inst.operands.len()).filter_map(single).filter(|&buf| fits(buf)).collect()
        }
        _ => Vec::new(),
    }
}

/// `x` rounded up to [`ARENA_ALIGNMENT`] (saturating, like every size here).
pub fn align(x: u64) -> u64 {
    x.div_ceil(ARENA_ALIGNMENT).saturating_mul(ARENA_ALIGNMENT)
}

/// The best-fit free list shared by every buffer assignment (this pass's and the kernel
/// plan's arena, [`crate::kernel::arena`]): regions never grow or split; a request takes
/// the free region of the smallest size that fits, ties going to the lowest id.
#[derive(Clone, Debug, Default)]
pub struct BestFit {
    /// Free regions keyed by (size, id): the best fit is the first at or above a size.
    free: std::collections::BTreeSet<(u64, usize)>,
}

impl BestFit {
    /// Takes the best free region for `size` bytes out of the free list; `None` when no
    /// free region is large enough (the caller makes a new one).
    pub fn take(&mut self, size: u64) -> Option<usize> {
        let best = self.free.range((size, 0)..).next().copied()?;
        self.free.remove(&best);
        Some(best.1)
    }

    /// Region `id` of `size` bytes is free again.
    pub fn give_back(&mut self, size: u64, id: usize) {
        self.free.insert((size, id));
    }
}

/// Offsets of regions of `sizes` laid end to end, each aligned to [`ARENA_ALIGNMENT`],
/// and the arena size they need.
pub fn pack_aligned(sizes: impl IntoIterator<Item = u64>) -> (Vec<u64>, u64) {
    pack_aligned_to(sizes, ARENA_ALIGNMENT)
}

/// [`pack_aligned`] to `alignment` bytes (a target's, [`crate::kernel::TargetCaps`]).
pub fn pack_aligned_to(sizes: impl IntoIterator<Item = u64>, alignment: u64) -> (Vec<u64>, u64) {
    let alignment = alignment.max(1);
    let mut end = 0u64;
    let offsets = sizes
        .into_iter()
        .map(|size| {
            let at = end;
            end = at.saturating_add(size).div_ceil(alignment).saturating_mul(alignment);
            at
        })
        .collect();
    (offsets, end)
}

/// Assigns buffers to the entry computation of `module`, in its current schedule
/// (`order`).
pub fn assign_buffers(module: &Module) -> BufferAssignment {
    match module.comps.get(module.entry) {
        Some(comp) => assign_computation(module, comp),
        None => BufferAssignment {
            computation: String::new(),
            allocations: Vec::new(),
            values: Vec::new(),
            leaves: HashMap::new(),
            peak_bytes: 0,
            total_allocated_bytes: 0,
            arena_bytes: 0,
            parameter_bytes: 0,
            constant_bytes: 0,
        },
    }
}

/// The most bytes of temporaries the entry computation of `module` keeps live at once
/// in its current schedule: [`BufferAssignment::peak_bytes`] without building the
/// report (what each pipeline snapshot needs).
pub fn peak_bytes(module: &Module) -> u64 {
    match module.comps.get(module.entry) {
        Some(comp) => Plan::of(module, comp, &Buffers::of(comp), false).peak,
        None => 0,
    }
}

/// The allocation decisions for one computation (see the module documentation).
struct Plan {
    allocations: Vec<Allocation>,
    alloc_of: Vec<usize>,
    in_place_of: Vec<Option<usize>>,
    defined_at: Vec<usize>,
    last_use: Vec<usize>,
    live_out: Vec<usize>,
    peak: u64,
}

impl Plan {
    /// With `record`, each allocation lists the values placed in it.
    fn of(module: &Module, comp: &Computation, b: &Buffers, record: bool) -> Plan {
        let n = comp.order.len();
        let mut pos: SecondaryMap<InstId, usize> = SecondaryMap::with_default(usize::MAX);
        for (p, &i) in comp.order.iter().enumerate() {
            pos[i] = p;
        }
        let defined_at: Vec<usize> = b.bufs.iter().map(|x| pos[x.inst]).collect();
        let mut last_use = defined_at.clone();
        for (p, &id) in comp.order.iter().enumerate() {
            for buf in b.reads(comp, id) {
                last_use[buf] = last_use[buf].max(p);
            }
        }
        let live_out = b.live_out(comp);
        for &buf in &live_out {
            last_use[buf] = n;
        }

        let mut allocations: Vec<Allocation> = Vec::new();
        let mut alloc_of: Vec<usize> = vec![usize::MAX; b.bufs.len()];
        let mut in_place_of: Vec<Option<usize>> = vec![None; b.bufs.len()];
        // Who holds each allocation now (a buffer taken over in place hands it on).
        let mut holder: Vec<usize> = Vec::new();
        let mut free = BestFit::default();
        // The buffers dying at each position, grouped by position (counting sort).
        let mut dying_start = vec![0usize; n + 2];
        for &l in &last_use {
            dying_start[l + 1] += 1;
        }
        for p in 0..=n {
            dying_start[p + 1] += dying_start[p];
        }
        let mut dying = vec![0usize; last_use.len()];
        let mut fill = dying_start.clone();
        for (buf, &l) in last_use.iter().enumerate() {
            dying[fill[l]] = buf;
            fill[l] += 1;
        }
        // Peak: +size at definition, -size after the last use (a value consumed in place
        // stops counting at the instruction that took it over).
        let mut delta: Vec<i64> = vec![0; n + 2];

        for (p, &id) in comp.order.iter().enumerate() {
            for &d in b.defines(id) {
                let buf = &b.bufs[d];
                if buf.kind != AllocationKind::Temp {
                    allocations.push(Allocation {
                        index: allocations.len(),
                        kind: buf.kind.clone(),
                        size: buf.size,
                        arena_offset: 0,
                        live_out: false,
                        values: if record { vec![d] } else { Vec::new() },
                    });
                    holder.push(d);
                    alloc_of[d] = allocations.len() - 1;
                    continue;
                }
                // Sizes in i64 for the running sum, saturating (see `Buffers::of`).
                let size = i64::try_from(buf.size).unwrap_or(i64::MAX);
                delta[p] = delta[p].saturating_add(size);
                delta[last_use[d] + 1] = delta[last_use[d] + 1].saturating_sub(size);
                let candidate = if buf.leaf.is_none() {
                    in_place_candidates(module, comp, b, id, buf)
                        .into_iter()
                        .find(|&o| last_use[o] == p && alloc_of[o] != usize::MAX && holder[alloc_of[o]] == o)
                } else {
                    None
                };
                if let Some(o) = candidate {
                    let a = alloc_of[o];
                    alloc_of[d] = a;
                    holder[a] = d;
                    in_place_of[d] = Some(o);
                    if record {
                        allocations[a].values.push(d);
                    }
                    // The operand's bytes are the result's from here on.
                    let size = i64::try_from(b.bufs[o].size).unwrap_or(i64::MAX);
                    delta[p] = delta[p].saturating_sub(size);
                    delta[p + 1] = delta[p + 1].saturating_add(size);
                    continue;
                }
                let a = match free.take(buf.size) {
                    Some(a) => a,
                    None => {
                        allocations.push(Allocation {
                            index: allocations.len(),
                            kind: AllocationKind::Temp,
                            size: buf.size,
                            arena_offset: 0,
                            live_out: false,
                            values: Vec::new(),
                        });
                        holder.push(d);
                        allocations.len() - 1
                    }
                };
                alloc_of[d] = a;
                holder[a] = d;
                if record {
                    allocations[a].values.push(d);
                }
            }
            for &gone in &dying[dying_start[p]..dying_start[p + 1]] {
                let a = alloc_of[gone];
                if a != usize::MAX && holder[a] == gone && allocations[a].kind == AllocationKind::Temp {
                    free.give_back(allocations[a].size, a);
                }
            }
        }
        let (mut live, mut peak) = (0i64, 0i64);
        for d in &delta[..=n] {
            live = live.saturating_add(*d);
            peak = peak.max(live);
        }
        Plan { allocations, alloc_of, in_place_of, defined_at, last_use, live_out, peak: peak.max(0) as u64 }
    }
}

/// Assigns buffers to one computation of `module`, in its `order`.
pub fn assign_computation(module: &Module, comp: &Computation) -> BufferAssignment {
    let b = Buffers::of(comp);
    let Plan { mut allocations, alloc_of, in_place_of, defined_at, last_use, live_out, peak } =
        Plan::of(module, comp, &b, true);
    for &buf in &live_out {
        if let Some(a) = allocations.get_mut(alloc_of[buf]) {
            a.live_out = true;
        }
    }
    let (offsets, arena) = pack_aligned(allocations.iter().filter(|a| a.kind == AllocationKind::Temp).map(|a| a.size));
    let mut total = 0u64;
    for (a, at) in allocations.iter_mut().filter(|a| a.kind == AllocationKind::Temp).zip(offsets) {
        a.arena_offset = at;
        total = total.saturating_add(a.size);
    }
    let values: Vec<ValueSlot> = b
        .bufs
        .iter()
        .enumerate()
        .map(|(i, x)| ValueSlot {
            inst: comp.inst(x.inst).name.clone(),
            leaf: x.leaf,
            allocation: alloc_of[i],
            offset: 0,
            size: x.size,
            defined_at: defined_at[i],
            last_use: last_use[i],
            in_place_of: in_place_of[i].map(|o| comp.inst(b.bufs[o].inst).name.clone()),
        })
        .collect();
    let leaves = comp
        .order
        .iter()
        .filter_map(|&id| b.refs(id).filter(|r| !r.is_empty()).map(|r| (comp.inst(id).name.clone(), r.to_vec())))
        .collect();
    let bytes_of = |pred: &dyn Fn(&AllocationKind) -> bool| -> u64 {
        allocations.iter().filter(|a| pred(&a.kind)).map(|a| a.size).fold(0u64, u64::saturating_add)
    };
    BufferAssignment {
        computation: comp.name.clone(),
        parameter_bytes: bytes_of(&|k| matches!(k, AllocationKind::Parameter(_))),
        constant_bytes: bytes_of(&|k| *k == AllocationKind::Constant),
        allocations,
        values,
        leaves,
        peak_bytes: peak,
        total_allocated_bytes: total,
        arena_bytes: arena,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::testutil::*;
    use crate::ir::{BinaryOp, ElementType::*, UnaryOp};

    /// p: f32[16] (64 B) -> a = broadcast f32[4,16] (256 B) -> t = transpose f32[16,4]
    /// (256 B) -> c = reduce f32[16] (64 B) -> d = broadcast f32[4,16] (256 B) -> root
    /// e = reduce f32[4] (16 B). Schedule: p 0, zero 1, a 2, t 3, c 4, d 5, e 6.
    /// Live temporaries: at t: a+t = 512; at c: t+c = 320; at d: c+d = 320; at e: d+e =
    /// 272. Peak 512. Allocations: a -> #2 (256), t -> #3 (256); a dies at t, so c
    /// best-fits into #2 (the only free one); t dies at c, so d takes #3; c dies at d, so
    /// e takes #2. Two temporaries of 256 B.
    #[test]
    fn chain_reuses_buffers() {
        let mut m = TestModule::new();
        let add = m.binary_body(BinaryOp::Add, F32);
        let module = m.finish_with_entry(&[arr(F32, &[16])], |b, p| {
            let zero = b.constant(f32s(&[], &[0.0]));
            let a = b.op(Op::BroadcastInDim { dims: vec![1] }, &[p[0]], arr(F32, &[4, 16]));
            let t = b.op(Op::Transpose { perm: vec![1, 0] }, &[a], arr(F32, &[16, 4]));
            let c = b.op(Op::Reduce { dims: vec![1], body: add }, &[t, zero], arr(F32, &[16]));
            let d = b.op(Op::BroadcastInDim { dims: vec![1] }, &[c], arr(F32, &[4, 16]));
            b.op(Op::Reduce { dims: vec![1], body: add }, &[d, zero], arr(F32, &[4]))
        });
        let ba = assign_buffers(&module);
        assert_eq!(ba.peak_bytes, 512);
        assert_eq!((ba.parameter_bytes, ba.constant_bytes), (64, 4));
        // The parameter, the constant, then two temporaries: {a, c, e} and {t, d}.
        assert_eq!(ba.allocation_count(), 4);
        assert_eq!(ba.temp_allocation_count(), 2);
        assert_eq!(ba.total_allocated_bytes, 512);
        assert_eq!(ba.arena_bytes, 512);
        let name = |i: usize| module.entry_comp().inst(module.entry_comp().order[i]).name.clone();
        let (a, t, c, d, e) = (name(2), name(3), name(4), name(5), name(6));
        let alloc = |n: &str| ba.slot(n).unwrap().allocation;
        assert_eq!((alloc(&a), alloc(&c), alloc(&e)), (2, 2, 2));
        assert_eq!((alloc(&t), alloc(&d)), (3, 3));
        let alloc_e = &ba.allocations[alloc(&e)];
        assert!(alloc_e.live_out);
        assert_eq!((alloc_e.size, alloc_e.arena_offset), (256, 0));
        assert_eq!(ba.allocations[alloc(&t)].arena_offset, 256);
        assert_eq!(ba.slot(&e).unwrap().last_use, 7);
        assert_eq!(ba.slot(&t).unwrap().defined_at, 3);
    }

    /// Diamond: a = exp(p) [f32[64] 256 B]; b = negate(a); c = abs(a); d = b + c.
    /// a is alive until c, so at c both a and b are live with c: a's buffer cannot be
    /// reused by b (a still has a user), but c takes a over in place (a dies at c), and d
    /// takes b over in place. Live: at a 256, at b 512, at c 512 (a's bytes are c's), at
    /// d 512 (b's bytes are d's, c dies at d). Peak 512, two allocations.
    #[test]
    fn diamond_keeps_two_alive() {
        let t = arr(F32, &[64]);
        let module = TestModule::new().finish_with_entry(std::slice::from_ref(&t), |b, p| {
            let a = b.op(Op::Unary(UnaryOp::Exp), &[p[0]], t.clone());
            let x = b.op(Op::Unary(UnaryOp::Neg), &[a], t.clone());
            let y = b.op(Op::Unary(UnaryOp::Abs), &[a], t.clone());
            b.op(Op::Binary(BinaryOp::Add), &[x, y], t.clone())
        });
        let ba = assign_buffers(&module);
        assert_eq!(ba.peak_bytes, 512);
        assert_eq!(ba.temp_allocation_count(), 2);
        assert_eq!(ba.total_allocated_bytes, 512);
        let comp = module.entry_comp();
        let name = |i: usize| comp.inst(comp.order[i]).name.clone();
        let (a, x, y, d) = (name(1), name(2), name(3), name(4));
        // The parameter is never written in place.
        assert_eq!(ba.slot(&a).unwrap().in_place_of, None);
        assert_eq!(ba.slot(&x).unwrap().in_place_of, None);
        assert_eq!(ba.slot(&y).unwrap().in_place_of.as_deref(), Some(a.as_str()));
        assert_eq!(ba.slot(&d).unwrap().in_place_of.as_deref(), Some(x.as_str()));
        assert_eq!(ba.slot(&d).unwrap().allocation, ba.slot(&x).unwrap().allocation);
    }

    /// a = exp(p) f32[8,8] (256 B); u = dynamic-update-slice(a, q f32[2,8], i, j) writes
    /// into a's buffer (a dies there); root = tuple(u). One temporary allocation of
    /// 256 B, peak 256. When a is still used afterwards, the update needs a copy: peak
    /// 512 and two allocations.
    #[test]
    fn dynamic_update_slice_in_place() {
        for keep_a in [false, true] {
            let t = arr(F32, &[8, 8]);
            let module = TestModule::new().finish_with_entry(&[t.clone(), arr(F32, &[2, 8]), arr(S32, &[])], |b, p| {
                let a = b.op(Op::Unary(UnaryOp::Exp), &[p[0]], t.clone());
                let u = b.op(Op::DynamicUpdateSlice, &[a, p[1], p[2], p[2]], t.clone());
                if keep_a {
                    b.tuple(&[u, a])
                } else {
                    b.tuple(&[u])
                }
            });
            let ba = assign_buffers(&module);
            let comp = module.entry_comp();
            let (a, u) = (comp.inst(comp.order[3]).name.clone(), comp.inst(comp.order[4]).name.clone());
            if keep_a {
                assert_eq!((ba.peak_bytes, ba.temp_allocation_count()), (512, 2));
                assert_eq!(ba.slot(&u).unwrap().in_place_of, None);
            } else {
                assert_eq!((ba.peak_bytes, ba.temp_allocation_count()), (256, 1));
                assert_eq!(peak_bytes(&module), 256);
                assert_eq!(ba.slot(&u).unwrap().in_place_of.as_deref(), Some(a.as_str()));
                assert!(ba.allocations[ba.slot(&u).unwrap().allocation].live_out);
            }
            // The root tuple aliases its operands.
            let root = comp.inst(comp.root).name.clone();
            assert_eq!(ba.leaves[&root][0], ba.leaves[&u][0]);
            assert_eq!(ba.parameter_bytes, 256 + 64 + 4);
        }
    }

    /// Tuples, get-tuple-element and bitcast alias; tokens and odd modules do not panic.
    #[test]
    fn aliases_and_odd_values() {
        let t = arr(F32, &[4]);
        let module = TestModule::new().finish_with_entry(std::slice::from_ref(&t), |b, p| {
            let a = b.op(Op::Unary(UnaryOp::Exp), &[p[0]], t.clone());
            let tup = b.tuple(&[a, p[0]]);
            let g = b.op(Op::GetTupleElement { index: 0 }, &[tup], t.clone());
            let bad = b.op(Op::GetTupleElement { index: 7 }, &[tup], t.clone());
            let bc = b.op(Op::Bitcast, &[g], arr(F32, &[2, 2]));
            let tok = b.op(Op::AfterAll, &[], Type::Token);
            b.tuple(&[bc, bad, tok])
        });
        let ba = assign_buffers(&module);
        let comp = module.entry_comp();
        let name = |i: usize| comp.inst(comp.order[i]).name.clone();
        let a = ba.leaves[&name(1)][0];
        assert_eq!(ba.leaves[&name(2)], vec![a, 0]);
        assert_eq!(ba.leaves[&name(3)], vec![a]);
        assert_eq!(ba.leaves[&name(5)], vec![a]);
        // The out-of-range get-tuple-element gets its own buffer; the token none.
        assert_ne!(ba.leaves[&name(4)], vec![a]);
        assert!(!ba.leaves.contains_key(&name(6)));
        assert_eq!(ba.peak_bytes, 32);
        assert_eq!(peak_bytes(&module), 32);
        assert!(ba.allocations[ba.values[a].allocation].live_out);
        let empty = assign_buffers(&crate::ir::Module::new("empty"));
        assert_eq!(empty.allocation_count(), 0);
    }
}
