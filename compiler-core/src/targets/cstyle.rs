//! What the GPU text emitters (WGSL in `webgpu/wgsl.rs`, CUDA C in `cuda/cuda_c.rs`)
//! share: the decisions and bookkeeping that do not depend on the language's spelling.
//!
//! - [`cooperative_ops`]: when a reduction's rows are shared by a block (workgroup) of
//!   threads rather than reduced serially by one, and by which op;
//! - [`dot_tile`]: when a dot's outputs are computed in register tiles, a block of them
//!   per thread, and which factor of the product is read along which variable; and
//!   [`tiled_dot`], the code that computes them, over the few statements each language
//!   spells for itself ([`TileSpelling`]);
//! - [`fused_names`]: the HLO instructions a kernel implements, for its header comment;
//! - [`line_origins`]: per line of a kernel's text, the HLO instruction its value
//!   implements (the kernels pane links lines to the graph with it).
//!
//! Each emitter keeps its own spelling of values, types and loops: WGSL and CUDA C
//! differ in nearly every expression (types, casts, selects, bit casts, builtins).

use crate::ir::{BinaryOp, ElementType};
use crate::kernel::elemental::{Elemental, ExprId, Node};
use crate::kernel::index::IndexAnalysis;
use crate::kernel::lower::Lower;
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

/// Outputs per side of the block of a dot's outputs one thread computes ([`dot_tile`]).
pub const DOT_TILE: i64 = 4;

/// The fewest outputs a dot has for its threads to take [`DOT_TILE`]-square blocks of
/// them (fewer would leave the device idle: the block reductions serve those better).
pub const MIN_TILED_OUTPUTS: u64 = 1024;

/// A dot's reduction computed in register tiles: each thread takes a
/// [`DOT_TILE`] x [`DOT_TILE`] block of outputs along the kept variables `m` and `n`,
/// and at each step `k` of the reduced variable evaluates the `lhs` factor once per row
/// of its block (it does not read `n`) and the `rhs` factor once per column (it does not
/// read `m`): 2 x [`DOT_TILE`] loads feed [`DOT_TILE`]² products, where one thread per
/// output loads two operands for each. Every output still sums its products in `k`
/// order from its init, so its value is the serial reduction's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DotTile {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    /// The reduced value's two factors: `value = lhs * rhs`.
    pub lhs: ExprId,
    pub rhs: ExprId,
}

impl DotTile {
    /// The extent of kept variable `v` counted in blocks (tiled variables) or elements.
    pub fn extent(&self, e: &Elemental, v: u32) -> i64 {
        let n = e.space[v as usize];
        if v == self.m || v == self.n {
            (n + DOT_TILE - 1) / DOT_TILE
        } else {
            n
        }
    }

    /// Threads: one per block of outputs.
    pub fn threads(&self, e: &Elemental) -> u64 {
        e.outer_vars().iter().map(|&v| self.extent(e, v).max(0) as u64).product()
    }
}

/// Whether `e` is a dot that [`DotTile`] computes, and along which variables: one f32
/// sum over one reduced variable of a product of two factors, one of which reads a kept
/// variable the other does not (and the other way round), with a constant init, its
/// results stored only after the loop, and at least [`MIN_TILED_OUTPUTS`] outputs.
pub fn dot_tile(e: &Elemental) -> Option<DotTile> {
    let [red] = e.reductions.as_slice() else { return None };
    let reduced: Vec<u32> = (0..e.space.len() as u32).filter(|&v| e.reduced[v as usize]).collect();
    let [k] = reduced.as_slice() else { return None };
    let value = *red.values.first()?;
    if reduction::associative_op(e, 0) != Ok(BinaryOp::Add)
        || e.expr(value).elem != ElementType::F32
        || e.outputs.iter().any(|o| o.inner)
        || !matches!(e.expr(*red.inits.first()?).node, Node::Const(_))
        || (e.outer_elements() as u64) < MIN_TILED_OUTPUTS
    {
        return None;
    }
    let Node::Binary(BinaryOp::Mul, lhs, rhs) = e.expr(value).node else { return None };
    let indices = IndexAnalysis::new(e);
    let (lhs_vars, rhs_vars) = (vars_read(e, &indices, lhs)?, vars_read(e, &indices, rhs)?);
    // The innermost variable each side reads alone: the one whose neighbours sit closest.
    let only = |a: &[bool], b: &[bool]| {
        e.outer_vars().into_iter().rev().find(|&v| a[v as usize] && !b[v as usize] && e.space[v as usize] >= DOT_TILE)
    };
    let (m, n) = (only(&lhs_vars, &rhs_vars)?, only(&rhs_vars, &lhs_vars)?);
    Some(DotTile { m, n, k: *k, lhs, rhs })
}

/// Per variable of `e`'s space, whether the value of node `x` may vary with it; `None`
/// when `x` reads an accumulator or a reduction's input or result (no plain value).
fn vars_read(e: &Elemental, indices: &IndexAnalysis, x: ExprId) -> Option<Vec<bool>> {
    let mut reads = vec![false; e.space.len()];
    let mut stack = vec![x];
    let mut seen = vec![false; e.nodes.len()];
    while let Some(y) = stack.pop() {
        if std::mem::replace(&mut seen[y.0 as usize], true) {
            continue;
        }
        let node = &e.expr(y).node;
        match *node {
            Node::Acc { .. } | Node::Arg { .. } | Node::Reduced { .. } => return None,
            Node::Load { linear: i, .. } | Node::Index(i) | Node::InRange { idx: i, .. } => {
                for (v, r) in reads.iter_mut().enumerate() {
                    *r |= indices.varies_with(i, v as u32);
                }
            }
            _ => {}
        }
        stack.extend(node.operands());
    }
    Some(reads)
}

/// The statements [`tiled_dot`] needs that WGSL and CUDA C spell differently; values,
/// indices, the combiner and the stores go through the driver's instructions
/// ([`Lower`]).
pub trait TileSpelling<'e>: Lower<'e, Value = String, Index = String> {
    /// Writes one line at the current indentation.
    fn line(&mut self, text: std::fmt::Arguments);
    /// The indentation of the lines written next.
    fn pad(&mut self) -> &mut String;
    /// The accumulator [`Lower::accumulator`] returns from now on (`None`: its own).
    fn set_tile_acc(&mut self, acc: Option<String>);
    /// Defines each `(v, name, extent)` (an index, outermost first) from `flat`, their
    /// row-major position among them; the quotients are named `{quotient}{v}`.
    fn unravel_as(&mut self, flat: &str, vars: &[(u32, String, i64)], quotient: &str);
    /// Declares f32 variable `name`, set to `init` or left to be set.
    fn declare_f32(&mut self, name: &str, init: Option<&str>);
    /// Defines index `name` as `value` (an index expression).
    fn define_index(&mut self, name: &str, value: &str);
    /// Opens a loop of variable `v{v}` from 0 below `n`.
    fn open_counted_loop(&mut self, v: u32, n: i64);
}

/// A dot in register tiles ([`DotTile`]), the thread's position `flat` in its
/// [`DotTile::threads`]: the block's origin (`w{m}` and `w{n}` count blocks), one
/// accumulator per output of the block set to the init, the contraction loop evaluating
/// each factor once per row or column of the block and the combiner once per output,
/// then each output of the block that lies inside the result stored through the driver
/// (the epilogue, each output at its own position: the writer's `store` must use
/// [`Lower::store_index`]).
pub fn tiled_dot<'e, W: TileSpelling<'e>>(w: &mut W, flat: &str, tile: DotTile) {
    let e = w.elemental();
    let origin: Vec<(u32, String, i64)> = e
        .outer_vars()
        .into_iter()
        .map(|v| (v, if v == tile.m || v == tile.n { format!("w{v}") } else { format!("v{v}") }, tile.extent(e, v)))
        .collect();
    w.unravel_as(flat, &origin, "q");
    let red = &e.reductions[0];
    let init = w.value(red.inits[0]);
    let block: Vec<(i64, i64)> = (0..DOT_TILE).flat_map(|i| (0..DOT_TILE).map(move |j| (i, j))).collect();
    for &(i, j) in &block {
        w.declare_f32(&format!("acc_{i}_{j}"), Some(&init));
    }
    w.open_counted_loop(tile.k, e.space[tile.k as usize]);
    w.pad().push_str("  ");
    // A factor reads the other side's variable nowhere, but its text may name it: both
    // are defined, inside the result.
    for (factor, name, along, across) in [(tile.lhs, "a", tile.m, tile.n), (tile.rhs, "b", tile.n, tile.m)] {
        for i in 0..DOT_TILE {
            w.declare_f32(&format!("{name}{i}"), None);
            scoped(w, |w| {
                block_position(w, along, i, true);
                block_position(w, across, 0, true);
                let v = w.value(factor);
                w.line(format_args!("{name}{i} = {v};"));
            });
        }
    }
    for &(i, j) in &block {
        scoped(w, |w| {
            w.memo().values.insert(tile.lhs, format!("a{i}"));
            w.memo().values.insert(tile.rhs, format!("b{j}"));
            w.set_tile_acc(Some(format!("acc_{i}_{j}")));
            let v = w.value(red.combiner[0]);
            w.line(format_args!("acc_{i}_{j} = {v};"));
            w.set_tile_acc(None);
        });
    }
    let pad = w.pad();
    pad.truncate(pad.len() - 2);
    w.line(format_args!("}}"));
    let (rows, cols) = (e.space[tile.m as usize], e.space[tile.n as usize]);
    for &(i, j) in &block {
        scoped(w, |w| {
            block_position(w, tile.m, i, false);
            block_position(w, tile.n, j, false);
            let (rows, cols) = (w.index_const(rows), w.index_const(cols));
            w.line(format_args!("if (v{} < {rows} && v{} < {cols}) {{", tile.m, tile.n));
            w.pad().push_str("  ");
            w.set_tile_acc(Some(format!("acc_{i}_{j}")));
            w.store_outputs(false);
            w.set_tile_acc(None);
            let pad = w.pad();
            pad.truncate(pad.len() - 2);
            w.line(format_args!("}}"));
        });
    }
}

/// Defines variable `v{v}` of a tiled dot at `offset` in the thread's block; with
/// `inside`, clamped into its extent (a factor's loads stay in their buffer; the outputs
/// past the end are not stored).
fn block_position<'e, W: TileSpelling<'e>>(w: &mut W, v: u32, offset: i64, inside: bool) {
    let origin = w.index_mul(format!("w{v}"), DOT_TILE);
    let offset = w.index_const(offset);
    let mut at = w.index_add(origin, offset);
    if inside {
        at = w.index_clamp(at, 0, w.elemental().space[v as usize] - 1);
    }
    w.define_index(&format!("v{v}"), &at);
}

/// `body` inside braces: the names it defines are forgotten after them.
fn scoped<'e, W: TileSpelling<'e>>(w: &mut W, body: impl FnOnce(&mut W)) {
    let (saved, saved_indices) = (w.memo().values.clone(), w.memo().indices.clone());
    w.line(format_args!("{{"));
    w.pad().push_str("  ");
    body(w);
    let pad = w.pad();
    pad.truncate(pad.len() - 2);
    w.line(format_args!("}}"));
    w.memo().values = saved;
    w.memo().indices = saved_indices;
}
