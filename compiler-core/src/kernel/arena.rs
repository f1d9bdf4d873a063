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
//! are the buffers whose last use is that position released: an output never shares
//! bytes with an input of the same kernel (no in-place updates: not worth the proof
//! here), nor with another output. Reuse is best fit through the allocator shared with
//! the module-level buffer assignment ([`crate::passes::buffers::BestFit`]); regions are
//! laid end to end, each aligned to [`ARENA_ALIGNMENT`] bytes.
//!
//! A plan whose kernels are rewritten after planning (a target that turns kernels it
//! cannot compile into opaque ones) must be assigned again: [`ArenaAssignment::is_current`]
//! tells whether an assignment still describes a plan's kernels.

use super::{BufferId, KernelPlan};
use crate::passes::buffers::{pack_aligned, BestFit};
pub use crate::passes::buffers::ARENA_ALIGNMENT;
use cranelift_entity::EntityRef;
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

/// Where each buffer of a plan lives in the arena.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArenaAssignment {
    /// Per buffer (by `BufferId` index): byte offset in the arena, a multiple of
    /// [`ARENA_ALIGNMENT`].
    pub offsets: Vec<u64>,
    /// Per buffer: (first, last) kernel position where it is live, both inclusive;
    /// pinned buffers span every position.
    pub live: Vec<(usize, usize)>,
    /// Per buffer: whether it is pinned (parameter, constant, result, or never written).
    pub pinned: Vec<bool>,
    /// Size of each region (the first buffer placed there decides it).
    pub region_sizes: Vec<u64>,
    /// Bytes the arena needs (regions and alignment padding).
    pub arena_bytes: u64,
    /// Bytes of all buffers added up: what one allocation per buffer would take.
    pub buffer_bytes: u64,
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

    /// `arena 1.00 MiB for 3.00 MiB of buffers (3 regions)`-style line.
    pub fn summary(&self) -> String {
        format!("arena {} B for {} B of buffers ({} regions)", self.arena_bytes, self.buffer_bytes, self.region_sizes.len())
    }
}

/// A fingerprint of the plan's buffer count and each kernel's inputs and outputs: what
/// the assignment depends on.
fn signature(plan: &KernelPlan) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    plan.buffers.len().hash(&mut h);
    for k in &plan.kernels {
        k.inputs.hash(&mut h);
        k.outputs.hash(&mut h);
    }
    h.finish()
}

/// Computes the arena assignment of `plan` (see the module doc).
pub fn assign_arena(plan: &KernelPlan) -> ArenaAssignment {
    let nb = plan.buffers.len();
    let n = plan.kernels.len();
    let size = |b: usize| plan.buffers[BufferId::new(b)].shape.byte_size() as u64;
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
    let mut pinned: Vec<bool> = written.iter().map(|w| !w).collect();
    let pinned_leaves = plan.params.iter().chain(std::iter::once(&plan.result)).flat_map(|v| v.leaves());
    for b in pinned_leaves.chain(plan.constants.iter().map(|(b, _)| *b)) {
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
    for (p, k) in plan.kernels.iter().enumerate() {
        for &b in &k.outputs {
            let b = b.index();
            if pinned[b] || region_of[b] != usize::MAX {
                continue;
            }
            region_of[b] = free.take(size(b)).unwrap_or_else(|| {
                region_sizes.push(size(b));
                region_sizes.len() - 1
            });
        }
        for &b in &dying[p] {
            free.give_back(region_sizes[region_of[b]], region_of[b]);
        }
    }
    let (region_offsets, arena_bytes) = pack_aligned(region_sizes.iter().copied());
    let live = (0..nb)
        .map(|b| if pinned[b] { (0, n.saturating_sub(1)) } else { (first[b].unwrap_or(0), last[b]) })
        .collect();
    ArenaAssignment {
        offsets: region_of.iter().map(|&r| region_offsets[r]).collect(),
        live,
        pinned,
        region_sizes,
        arena_bytes,
        buffer_bytes: (0..nb).map(size).sum(),
        signature: signature(plan),
    }
}
