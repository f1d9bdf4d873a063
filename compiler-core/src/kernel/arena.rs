//! Buffer assignment for a kernel plan: where each plan buffer lives in ONE arena.
//!
//! Why: a target runs the plan kernel by kernel; giving every buffer its own allocation
//! on every run costs allocator calls, page faults and cache misses, and wastes memory on
//! intermediates that are long dead. Every target (CPU today, WebGPU and CUDA later)
//! allocates one arena per executable instead and addresses each buffer by its offset.
//!
//! Liveness is over kernel positions (`plan.kernels`): a buffer is live from the first
//! kernel that touches it to the last kernel that reads or writes it. Parameters,
//! constants, the result's buffers and buffers no kernel writes are *pinned*: live for
//! the whole run (the runtime writes parameters before the first kernel, constants once
//! per arena, and reads the result after the last kernel), so nothing else ever shares
//! their bytes. At each position the kernel's outputs are placed first and only then
//! are the buffers whose last use is that position released, so an output never shares
//! bytes with another output, nor with an input of the same kernel, except in place.
//! Reuse is best fit through the allocator shared with the module-level buffer
//! assignment ([`crate::passes::buffers::BestFit`]); regions are laid end to end, each
//! aligned to the target's [`super::TargetCaps::arena_alignment`] bytes
//! ([`ARENA_ALIGNMENT`] on the CPU).
//!
//! In place: an output takes over the region of an input (`in_place_of`) when that input
//! dies at this kernel, is not pinned (so never caller memory, a constant or a result
//! that must survive), has the output's byte size, is read through no other input slot,
//! and the kernel reads each of its elements only to produce the output element at the
//! same position:
//! - a loop kernel (not a reduction) whose every load of that input is at the output
//!   element's own row-major position (the elemental index is exactly the store's
//!   `sum(var_k * stride_k)`, [`super::index::store_strides`]: no transpose, broadcast,
//!   slice, reverse, gather or data dependent index in between), with elements of the
//!   same byte size. The contract for every target: all the loads of one element (or
//!   vector of elements) happen before any store of that element's outputs, so lanes
//!   and thread chunks, which never share a position, read their inputs before
//!   overwriting them. A dynamic-update-slice
//!   reads its operand 0 that way (outside the window), so it updates it in place;
//! - a scatter or a sort, output i over input i (operand i): the runtime copies each
//!   operand into its output before updating or permuting the output alone, so the copy
//!   becomes a no-op.
//!
//! Row chains ([`super::chains`]), whose members a target may run interleaved chunk by
//! chunk: every buffer a member touches is live from the chain's first kernel to its
//! last, and no member's output goes in place, so no two buffers of a chain share bytes.
//!
//! While bodies and branches are planned on their own ([`super::plan_computation`]), so
//! the same rules hold per body; their parameters are pinned there.
//!
//! A plan whose kernels are rewritten after planning (a target that turns kernels it
//! cannot compile into opaque ones) must be assigned again: [`ArenaAssignment::is_current`]
//! tells whether an assignment still describes a plan's kernels.

use super::elemental::{Elemental, Node, Output};
use super::index::{store_strides, IndexAnalysis};
use super::{BufferId, Kernel, KernelBody, KernelKind, KernelPlan};
pub use crate::passes::buffers::ARENA_ALIGNMENT;
use crate::passes::buffers::{pack_aligned_to, BestFit};
use cranelift_entity::EntityRef;
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

/// Where each buffer of a plan lives in the arena.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArenaAssignment {
    /// Per buffer (by `BufferId` index): byte offset in the arena, a multiple of
    /// `alignment`.
    pub offsets: Vec<u64>,
    /// Per buffer: (first, last) kernel position where it is live, both inclusive;
    /// pinned buffers span every position.
    pub live: Vec<(usize, usize)>,
    /// Per buffer: whether it is pinned (parameter, constant, result, or never written).
    pub pinned: Vec<bool>,
    /// Per buffer: the input of its kernel whose region it took over in place.
    pub in_place_of: Vec<Option<BufferId>>,
    /// Size of each region (the first buffer placed there decides it).
    pub region_sizes: Vec<u64>,
    /// Bytes the arena needs (regions and alignment padding).
    pub arena_bytes: u64,
    /// Bytes of all buffers added up: what one allocation per buffer would take.
    pub buffer_bytes: u64,
    /// What every offset and the arena size are multiples of (the target's).
    pub alignment: u64,
    /// Fingerprint of the kernels' inputs and outputs it was computed for.
    signature: u64,
}

impl ArenaAssignment {
    /// Where buffer `b` starts in the arena.
    pub fn offset(&self, b: BufferId) -> u64 {
        self.offsets[b.index()]
    }

    /// Whether this assignment was computed for the kernels `plan` has now.
    pub fn is_current(&self, plan: &KernelPlan) -> bool {
        self.offsets.len() == plan.buffers.len() && self.signature == signature(plan)
    }

    /// `arena 256 B for 320 B of buffers (4 regions, 2 outputs in place)`-style line.
    pub fn summary(&self) -> String {
        let in_place = self.in_place_of.iter().filter(|x| x.is_some()).count();
        format!(
            "arena {} B for {} B of buffers ({} regions, {in_place} outputs in place)",
            self.arena_bytes,
            self.buffer_bytes,
            self.region_sizes.len()
        )
    }
}

/// A fingerprint of the plan's buffer count and each kernel's inputs and outputs: what
/// the assignment depends on.
fn signature(plan: &KernelPlan) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    plan.buffers.len().hash(&mut h);
    plan.chains.hash(&mut h);
    plan.caps.arena_alignment.hash(&mut h);
    for k in &plan.kernels {
        k.inputs.hash(&mut h);
        k.outputs.hash(&mut h);
        std::mem::discriminant(&k.kind).hash(&mut h);
    }
    h.finish()
}

/// Computes the arena assignment of `plan` (see the module doc).
pub fn assign_arena(plan: &KernelPlan) -> ArenaAssignment {
    assign_arena_with(plan, true)
}

/// [`assign_arena`], with in-place updates allowed or not (to measure what they save).
pub fn assign_arena_with(plan: &KernelPlan, in_place: bool) -> ArenaAssignment {
    let nb = plan.buffers.len();
    let n = plan.kernels.len();
    // Saturating sizes (and `pack_aligned` saturates): a plan the resource check did not
    // see gets an arena too large to allocate, never one wrapped to a small size.
    let size = |b: usize| plan.buffers[BufferId::new(b)].shape.checked_byte_size().unwrap_or(u64::MAX);
    let mut first: Vec<Option<usize>> = vec![None; nb];
    let mut last = vec![0usize; nb];
    let mut written = vec![false; nb];
    for (p, k) in plan.kernels.iter().enumerate() {
        for &b in k.inputs.iter().chain(&k.outputs) {
            let b = b.index();
            first[b].get_or_insert(p);
            last[b] = p;
        }
        for &b in &k.outputs {
            written[b.index()] = true;
        }
    }
    // A chain may run its members interleaved, chunk by chunk of rows: every buffer a
    // member touches is live across the whole chain, and no member works in place.
    let mut chained = vec![false; n];
    for c in plan.chains.iter().filter(|c| c.start < c.end && c.end <= n) {
        for k in &plan.kernels[c.clone()] {
            for &b in k.inputs.iter().chain(&k.outputs) {
                let b = b.index();
                first[b] = Some(first[b].map_or(c.start, |f| f.min(c.start)));
                last[b] = last[b].max(c.end - 1);
            }
        }
        chained[c.clone()].iter_mut().for_each(|x| *x = true);
    }
    let mut pinned: Vec<bool> = written.iter().map(|w| !w).collect();
    for b in plan.pinned_buffers() {
        pinned[b.index()] = true;
    }

    // Regions: pinned buffers first (one each, in buffer order), then temporaries.
    let mut region_sizes: Vec<u64> = Vec::new();
    let mut region_of = vec![usize::MAX; nb];
    for b in (0..nb).filter(|&b| pinned[b]) {
        region_of[b] = region_sizes.len();
        region_sizes.push(size(b));
    }
    let mut dying: Vec<Vec<usize>> = vec![Vec::new(); n];
    for b in (0..nb).filter(|&b| !pinned[b]) {
        dying[last[b]].push(b);
    }
    let mut free = BestFit::default();
    let mut in_place_of: Vec<Option<BufferId>> = vec![None; nb];
    // Inputs whose region an output of their last kernel took over: not released there.
    let mut handed_over = vec![false; nb];
    for (p, k) in plan.kernels.iter().enumerate() {
        for (j, &out) in k.outputs.iter().enumerate() {
            let b = out.index();
            if pinned[b] || region_of[b] != usize::MAX {
                continue;
            }
            let reusable = |src: BufferId| {
                let s = src.index();
                !pinned[s] && last[s] == p && !handed_over[s] && region_of[s] != usize::MAX && size(s) == size(b)
            };
            if let Some(src) = (in_place && !chained[p]).then(|| in_place_input(k, j, reusable)).flatten() {
                region_of[b] = region_of[src.index()];
                handed_over[src.index()] = true;
                in_place_of[b] = Some(src);
                continue;
            }
            region_of[b] = free.take(size(b)).unwrap_or_else(|| {
                region_sizes.push(size(b));
                region_sizes.len() - 1
            });
        }
        for &b in &dying[p] {
            if !handed_over[b] {
                free.give_back(region_sizes[region_of[b]], region_of[b]);
            }
        }
    }
    let alignment = plan.caps.arena_alignment;
    let (region_offsets, arena_bytes) = pack_aligned_to(region_sizes.iter().copied(), alignment);
    let live =
        (0..nb).map(|b| if pinned[b] { (0, n.saturating_sub(1)) } else { (first[b].unwrap_or(0), last[b]) }).collect();
    ArenaAssignment {
        offsets: region_of.iter().map(|&r| region_offsets[r]).collect(),
        live,
        pinned,
        in_place_of,
        region_sizes,
        arena_bytes,
        buffer_bytes: (0..nb).map(size).fold(0u64, u64::saturating_add),
        alignment,
        signature: signature(plan),
    }
}

/// The first input whose bytes output `j` of kernel `k` may overwrite as far as the
/// kernel's indexing goes (see the module doc) and `reusable` allows (liveness).
fn in_place_input(k: &Kernel, j: usize, reusable: impl Fn(BufferId) -> bool) -> Option<BufferId> {
    // The input must be read through exactly one slot.
    let single = |slot: usize| {
        let b = *k.inputs.get(slot)?;
        (k.inputs.iter().filter(|&&x| x == b).count() == 1 && reusable(b)).then_some(b)
    };
    match (&k.kind, &k.body) {
        (KernelKind::Scatter, KernelBody::Scatter(_)) | (KernelKind::Sort, KernelBody::Sort(_)) => single(j),
        (KernelKind::Loop, KernelBody::Elemental(e)) if !e.is_reduction() => {
            let out = e.outputs.get(j)?;
            if out.inner {
                return None;
            }
            // Analysed once a candidate passes the cheaper tests.
            let mut indices = None;
            (0..k.inputs.len()).find_map(|slot| {
                let b = single(slot)?;
                if e.input_elems.get(slot)?.byte_size() != out.elem.byte_size() {
                    return None;
                }
                let indices = indices.get_or_insert_with(|| IndexAnalysis::new(e));
                reads_only_in_place(e, indices, slot as u32, out).then_some(b)
            })
        }
        _ => None,
    }
}

/// Whether `e` loads input `slot` (at least once) and only at the position where it
/// stores output `out`'s element, i.e. exactly at that element.
fn reads_only_in_place(e: &Elemental, indices: &IndexAnalysis, slot: u32, out: &Output) -> bool {
    let position = store_strides(e, out);
    let mut loads = 0;
    for n in &e.nodes {
        if let Node::Load { input, linear } = n.node {
            if input != slot {
                continue;
            }
            if !indices.is_position(linear, &position) {
                return false;
            }
            loads += 1;
        }
    }
    loads > 0
}
