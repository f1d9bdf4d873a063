//! What the GPU text emitters (WGSL in `webgpu/wgsl.rs`, CUDA C in `cuda/cuda_c.rs`)
//! share: the decisions and bookkeeping that do not depend on the language's spelling.
//!
//! - [`cooperative_ops`]: when a reduction's rows are shared by a block (workgroup) of
//!   threads rather than reduced serially by one, and by which op;
//! - [`fused_names`]: the HLO instructions a kernel implements, for its header comment;
//! - [`line_origins`]: per line of a kernel's text, the HLO instruction its value
//!   implements (the kernels pane links lines to the graph with it).
//!
//! Each emitter keeps its own spelling of values, types and loops: WGSL and CUDA C
//! differ in nearly every expression (types, casts, selects, bit casts, builtins).

use crate::ir::{BinaryOp, ElementType};
use crate::kernel::elemental::Elemental;
use crate::kernel::reduction;

/// The fewest elements a reduction reduces per output for a block to share it.
pub const MIN_COOPERATIVE: i64 = 128;

/// Whether `t` is stored in less than 32 bits and computed in a wider carrier (pred
/// aside, which both emitters keep as a boolean).
pub fn narrow(t: ElementType) -> bool {
    use ElementType::*;
    matches!(t, S8 | U8 | S16 | U16 | F16 | BF16)
}

/// When the reduced elements of each output are spread over one block's threads and
/// tree-reduced (rather than one thread's serial loop): every reduction is one
/// associative op ([`reduction::associative_op`], so the order may change), an output
/// reduces at least [`MIN_COOPERATIVE`] elements, and either the rows are contiguous
/// (the innermost variable is reduced) or there are too few outputs to fill the device
/// one per thread. Column reductions with many outputs stay serial: neighbouring threads
/// then read neighbouring elements. A narrow sum rounds at every step, so its order is
/// part of its value: it stays serial too. The ops, per reduction.
pub fn cooperative_ops(e: &Elemental, outer_elements: u64) -> Option<Vec<BinaryOp>> {
    if !e.is_reduction() {
        return None;
    }
    let reduced: i64 = (0..e.space.len()).filter(|&v| e.reduced[v]).map(|v| e.space[v]).product();
    let rows = e.reduced.last() == Some(&true);
    if reduced < MIN_COOPERATIVE || reduced > u32::MAX as i64 || !(rows || outer_elements < 4096) {
        return None;
    }
    if e.reductions.iter().any(|r| r.values.iter().any(|&v| narrow(e.expr(v).elem))) {
        return None;
    }
    (0..e.reductions.len()).map(|k| reduction::associative_op(e, k).ok()).collect()
}

/// The HLO instructions `e` implements, each once, in the order of first appearance.
pub fn fused_names(e: &Elemental) -> Vec<&str> {
    let mut seen = Vec::new();
    for n in &e.origin_names {
        if !seen.contains(&n.as_str()) {
            seen.push(n.as_str());
        }
    }
    seen
}

/// Per line of `source`, the HLO instruction of the node bound there (`bound`: byte
/// offsets of the binding lines, in order, with their node), or "".
pub fn line_origins(e: &Elemental, source: &str, bound: &[(usize, u32)]) -> Vec<String> {
    let mut names = vec![String::new(); source.lines().count()];
    let (mut line, mut scanned) = (0, 0);
    for &(offset, x) in bound {
        line += source[scanned..offset].matches('\n').count();
        scanned = offset;
        let origin = e.origins.get(x as usize).copied().flatten();
        if let (Some(slot), Some(name)) = (names.get_mut(line), origin.and_then(|o| e.origin_names.get(o as usize))) {
            slot.clone_from(name);
        }
    }
    names
}
