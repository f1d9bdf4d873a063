//! Row chains: runs of consecutive kernels that a target may execute chunk by chunk of
//! their rows (all members on rows `[b, e)`, then all members on the next chunk), so the
//! intermediates one member writes are still in cache when the next reads them.
//!
//! Why: softmax, layernorm and the like plan as a few row-wise kernels (row max, then
//! exp and row sum, then divide) that each stream the whole input through memory. Run
//! kernel after kernel, every pass misses the cache; run chunk by chunk, the input rows
//! and the intermediate rows of one chunk fit in L2 and are read back from there.
//!
//! A kernel can be a member when it is an elemental loop or row-reduction kernel whose
//! first loop variable is kept (not reduced) with extent `N >= 2`: its *rows* are the
//! values of that variable, and every output it stores at row `r` lies in the `r`-th of
//! `N` equal row-major slices of the output buffer (loop outputs and input-shaped outputs
//! are stored at the row-major position of the whole space, reduce-shaped ones at that of
//! the kept variables, both starting with variable 0). Every member of a chain has the
//! same `N`.
//!
//! Interleaving is sound when no member reads, at row `r`, data another member writes at
//! another row: for every buffer written by a member and read by a later one, each load
//! of it must provably address the same row, i.e. its linear index must be
//! `var0 * R + rest` with `R` the buffer's elements per row and `0 <= rest < R` over the
//! whole iteration space (from the index's affine form, [`super::index`]: the extents of
//! the other variables and the value ranges of its other terms). Anything not proven
//! (a transposed read, a broadcast along rows, a read at another row, a data-dependent
//! index, an index this check cannot decompose) ends the chain. A member may not write a
//! buffer an earlier member touches (plans are in SSA form, so this only guards against
//! surprises).
//!
//! Chains are a permission, not an obligation: a target that cannot run a chain (a
//! member it compiled differently, a parallel split along another variable) runs its
//! kernels one by one. The arena ([`super::arena`]) keeps every buffer a chain touches
//! live across the whole chain and puts no chain member's output in place, so either
//! way of running is correct.

use super::elemental::{Elemental, Node};
use super::index::{Dependence, IndexAnalysis};
use super::{BufferId, Kernel, KernelBody, KernelKind, KernelPlan, ReductionKind};
use rustc_hash::FxHashSet as HashSet;
use std::ops::Range;

/// Bytes a chain's members must touch together (every distinct buffer once) for the
/// chain to be worth it: below this the whole chain's data stays in a core's cache when
/// run kernel by kernel, and a chain would only cost arena reuse (its buffers live
/// across it, and its members never work in place).
pub const MIN_CHAIN_BYTES: usize = 256 << 10;

/// Most bytes one row of a chain may touch (every distinct buffer's share of a row):
/// a chunk of several rows must fit in a core's cache, or interleaving keeps nothing
/// there and only costs arena reuse.
pub const MAX_ROW_BYTES: usize = 64 << 10;

/// The maximal chains of `plan` (each of at least two kernels touching at least
/// [`MIN_CHAIN_BYTES`], at most [`MAX_ROW_BYTES`] per row), in order.
pub fn find_chains(plan: &KernelPlan) -> Vec<Range<usize>> {
    find_chains_with(plan, MIN_CHAIN_BYTES)
}

/// [`find_chains`] with another minimum of bytes touched.
pub fn find_chains_with(plan: &KernelPlan, min_bytes: usize) -> Vec<Range<usize>> {
    let mut chains = Vec::new();
    let mut i = 0;
    while i < plan.kernels.len() {
        let Some(rows) = chain_rows(plan, &plan.kernels[i]) else {
            i += 1;
            continue;
        };
        let mut written: HashSet<BufferId> = plan.kernels[i].outputs.iter().copied().collect();
        let mut touched: HashSet<BufferId> =
            plan.kernels[i].inputs.iter().chain(&plan.kernels[i].outputs).copied().collect();
        let mut end = i + 1;
        while let Some(k) = plan.kernels.get(end) {
            if chain_rows(plan, k) != Some(rows) || !joins(plan, k, rows, &written, &touched) {
                break;
            }
            written.extend(k.outputs.iter().copied());
            touched.extend(k.inputs.iter().chain(&k.outputs).copied());
            end += 1;
        }
        if end - i >= 2
            && touched_bytes(plan, i..end) >= min_bytes
            && bytes_per_row(plan, i..end, rows) <= MAX_ROW_BYTES
        {
            chains.push(i..end);
        }
        i = end;
    }
    chains
}

/// The number of rows `N` of a kernel that can be a chain member (see the module doc).
pub fn chain_rows(plan: &KernelPlan, k: &Kernel) -> Option<i64> {
    let KernelBody::Elemental(e) = &k.body else { return None };
    if !matches!(k.kind, KernelKind::Loop | KernelKind::Reduction(ReductionKind::Row)) {
        return None;
    }
    let n = *e.space.first()?;
    if n < 2 || e.reduced[0] || e.outputs.len() != k.outputs.len() {
        return None;
    }
    let extent =
        |vars: &mut dyn Iterator<Item = usize>| vars.map(|v| e.space[v].max(0)).try_fold(1i64, |a, d| a.checked_mul(d));
    let full = extent(&mut (0..e.space.len()))?;
    let kept = extent(&mut (0..e.space.len()).filter(|&v| !e.reduced[v]))?;
    // Each output holds exactly the elements it stores, row 0 first.
    for (o, &b) in e.outputs.iter().zip(&k.outputs) {
        let count = plan.buffers[b].shape.num_elements() as i64;
        if count != if o.inner { full } else { kept } {
            return None;
        }
    }
    Some(n)
}

/// A dot whose next kernel, its epilogue, reads the dot's result only at the epilogue's
/// own rows ([`tile_epilogue`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileEpilogue {
    /// The epilogue's rows: the extent of its first loop variable.
    pub rows: usize,
    /// Rows of the dot's `[batch * m, n]` result that one epilogue row reads (the
    /// epilogue's row `r` reads result rows `r * dot_rows..(r + 1) * dot_rows`).
    pub dot_rows: usize,
}

/// Whether kernel `i`, a dot, and kernel `i + 1` may run row block by row block: each
/// block of the dot's result rows computed, then the epilogue on the rows that read
/// exactly that block, while it is still in cache (a permission like a chain: running
/// the two one after the other is just as correct).
///
/// Sound when the epilogue reads the dot's result only at its own row (as a chain member
/// reads an earlier member's output, [`reads_own_row`]) and that row is whole rows of
/// the result viewed as `[batch * m, n]`, the order a dot writes it in. The dot writes
/// nothing else, and every other input of the epilogue was computed before the dot. What
/// this cannot see is where the buffers lie: the epilogue's outputs must not share bytes
/// with the dot's operands (the arena may hand a dead operand's bytes to them), which a
/// target checks on the addresses it runs with.
pub fn tile_epilogue(plan: &KernelPlan, i: usize) -> Option<TileEpilogue> {
    let (dot, epilogue) = (plan.kernels.get(i)?, plan.kernels.get(i + 1)?);
    let KernelBody::Dot(spec) = &dot.body else { return None };
    let KernelBody::Elemental(e) = &epilogue.body else { return None };
    let rows = chain_rows(plan, epilogue)?;
    let result = *dot.outputs.first()?;
    let count = plan.buffers[result].shape.num_elements() as i64;
    let n = spec.n as i64;
    if rows < 2 || n == 0 || count % rows != 0 || (count / rows) % n != 0 {
        return None;
    }
    let indices = IndexAnalysis::new(e);
    let slots = epilogue.inputs.iter().enumerate().filter(|(_, &b)| b == result);
    let mut reads = false;
    for (slot, _) in slots {
        reads = true;
        if !reads_own_row(e, &indices, slot as u32, count / rows) {
            return None;
        }
    }
    reads.then_some(TileEpilogue { rows: rows as usize, dot_rows: (count / rows / n) as usize })
}

/// Whether kernel `k` (with `rows` rows) may join a chain whose members wrote `written`
/// and touched `touched`.
fn joins(plan: &KernelPlan, k: &Kernel, rows: i64, written: &HashSet<BufferId>, touched: &HashSet<BufferId>) -> bool {
    let KernelBody::Elemental(e) = &k.body else { return false };
    if k.outputs.iter().any(|b| touched.contains(b)) {
        return false;
    }
    let mut indices = None;
    k.inputs.iter().enumerate().all(|(slot, b)| {
        if !written.contains(b) {
            return true;
        }
        let count = plan.buffers[*b].shape.num_elements() as i64;
        let indices = indices.get_or_insert_with(|| IndexAnalysis::new(e));
        count % rows == 0 && reads_own_row(e, indices, slot as u32, count / rows)
    })
}

/// Whether every load of input `slot` in `e` addresses row `var0` of a buffer with
/// `row` elements per row: its index is `row * var0 + rest`, where nothing in `rest`
/// varies with `var0` through a non-affine term (nor is data-dependent) and
/// `0 <= rest < row` over the whole iteration space.
fn reads_own_row(e: &Elemental, indices: &IndexAnalysis, slot: u32, row: i64) -> bool {
    e.nodes.iter().all(|n| match n.node {
        Node::Load { input, linear } if input == slot => {
            indices.dependence(linear, 0) == Dependence::Affine(row)
                && indices.range_without(linear, 0).is_some_and(|(lo, hi)| lo >= 0 && hi < row)
        }
        _ => true,
    })
}

/// Bytes of the distinct buffers a run of kernels touches.
fn touched_bytes(plan: &KernelPlan, kernels: Range<usize>) -> usize {
    let mut seen = HashSet::default();
    plan.kernels[kernels]
        .iter()
        .flat_map(|k| k.inputs.iter().chain(&k.outputs))
        .filter(|b| seen.insert(**b))
        .map(|&b| plan.buffers[b].shape.byte_size())
        .sum()
}

/// Bytes per row of a chain: every distinct buffer its members touch, divided by the
/// rows (what one row of the chain brings into cache).
pub fn bytes_per_row(plan: &KernelPlan, chain: Range<usize>, rows: i64) -> usize {
    let mut seen = HashSet::default();
    plan.kernels[chain]
        .iter()
        .flat_map(|k| k.inputs.iter().chain(&k.outputs))
        .filter(|b| seen.insert(**b))
        .map(|&b| plan.buffers[b].shape.byte_size().div_ceil(rows.max(1) as usize))
        .sum()
}
