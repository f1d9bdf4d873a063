//! What the GPU text emitters (WGSL in `webgpu/wgsl.rs`, CUDA C in `cuda/cuda_c.rs`)
//! share: the decisions and bookkeeping that do not depend on the language's spelling.
//!
//! - [`cooperative_ops`]: when a reduction's rows are shared by a block (workgroup) of
//!   threads rather than reduced serially by one, and by which op;
//! - [`dot_tile`]: when a dot's outputs are computed in register tiles, a block of them
//!   per thread, and which factor of the product is read along which variable; and
//!   [`tiled_dot`], the code that computes them, over the few statements each language
//!   spells for itself ([`TileSpelling`]);
//! - [`dot_block`]: when such a dot's workgroup (block) stages its operands through
//!   shared memory slice by slice of the contraction, and [`blocked_dot`], its code;
//! - [`transpose_tile`]: when a loop kernel's transposed loads go through shared
//!   (workgroup) memory in square tiles, so that both its loads and its stores are
//!   contiguous across neighbouring threads, and [`tiled_transpose`], its code;
//! - [`column_tile`]: when a column reduction's block takes neighbouring columns, its
//!   threads splitting each column's rows and combining their partials through shared
//!   memory, and [`column_position`] and [`column_nest`], its code;
//! - [`Mapping`]: how a kernel's outputs are spread over threads, which its launch
//!   follows;
//! - [`fused_names`]: the HLO instructions a kernel implements, for its header comment;
//! - [`line_origins`]: per line of a kernel's text, the HLO instruction its value
//!   implements (the kernels pane links lines to the graph with it).
//!
//! Each emitter keeps its own spelling of values, types and loops: WGSL and CUDA C
//! differ in nearly every expression (types, casts, selects, bit casts, builtins).

use crate::ir::{BinaryOp, ElementType};
use crate::kernel::elemental::{Elemental, ExprId, Node};
use crate::kernel::index::{Dependence, IndexAnalysis};
use crate::kernel::lower::Lower;
use crate::kernel::reduction;

/// How a kernel's outputs are spread over a GPU's threads (WebGPU's invocations), which
/// the launch follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// One thread per outer element (a grid-stride loop past the launch limit).
    Elements,
    /// A block (workgroup) per output, its threads sharing the reduction
    /// ([`cooperative_ops`]).
    BlockReduction,
    /// A dot whose threads each compute a block of outputs ([`DotTile`]).
    DotTiles,
    /// A dot whose workgroups (blocks) each compute a block of outputs, the operands
    /// staged through shared memory ([`DotBlock`]).
    DotBlocks,
    /// A block per square tile of the output, its transposed loads staged through
    /// shared memory ([`TransposeTile`]).
    TransposeTiles,
    /// A block per run of neighbouring columns of a column reduction, its threads
    /// splitting the rows ([`ColumnTile`]).
    ColumnTiles,
    /// One thread per update element of a scatter, combining it into its target
    /// atomically (`kernel::atomic_scatter`).
    AtomicUpdates,
    /// Four neighbouring elements per thread, read and written 16 bytes at a time
    /// (CUDA's loop kernels).
    Quads,
}

impl Mapping {
    /// Whether a block (workgroup), not a thread, takes each of the mapping's positions.
    pub fn per_block(self) -> bool {
        matches!(self, Mapping::BlockReduction | Mapping::TransposeTiles | Mapping::ColumnTiles | Mapping::DotBlocks)
    }

    /// Whether the element a thread (block) computes is the position it was given, so
    /// that an outer output's store index is that position; the tiled mappings compute
    /// other elements and store through [`Lower::store_index`].
    pub fn stores_at_position(self) -> bool {
        matches!(self, Mapping::Elements | Mapping::BlockReduction)
    }
}

/// How a GPU emitter spreads a kernel over threads: the mapping, how many positions it
/// takes (threads, or blocks where [`Mapping::per_block`]), and what the mapping needs.
#[derive(Clone, Debug)]
pub struct Layout {
    pub mapping: Mapping,
    pub positions: u64,
    pub cooperative: Option<Vec<BinaryOp>>,
    pub tile: Option<DotTile>,
    pub block: Option<DotBlock>,
    pub columns: Option<ColumnTile>,
    pub transpose: Option<TransposeTile>,
}

/// The layout of `e` for blocks of `threads` threads, column reductions in runs of
/// `column_run` columns, with or without staging operands in shared memory (dot
/// blocks, transpose tiles): a dot in register tiles (in blocks when staged), else a
/// column reduction in runs, else a reduction shared by a block, else a transpose in
/// tiles (staged), else one thread per element.
pub fn layout(e: &Elemental, threads: u32, column_run: i64, staging: bool) -> Layout {
    let outer: u64 = positions(&e.outer_vars(), |v| e.space[v as usize]);
    let tile = dot_tile(e);
    let block = tile.and_then(|t| dot_block(e, t, threads)).filter(|_| staging);
    let columns = if tile.is_some() { None } else { column_tile(e, outer, threads, column_run) };
    let cooperative = if tile.is_some() || columns.is_some() { None } else { cooperative_ops(e, outer) };
    let transpose = transpose_tile(e).filter(|_| staging);
    let (mapping, positions) = match (&cooperative, &tile, &block, &columns, &transpose) {
        (Some(_), ..) => (Mapping::BlockReduction, outer),
        (_, _, Some(b), ..) => (Mapping::DotBlocks, b.blocks(e)),
        (_, Some(t), ..) => (Mapping::DotTiles, t.threads(e)),
        (_, _, _, Some(c), _) => (Mapping::ColumnTiles, c.blocks(e)),
        (_, _, _, _, Some(t)) => (Mapping::TransposeTiles, t.tiles(e)),
        _ => (Mapping::Elements, outer),
    };
    Layout { mapping, positions, cooperative, tile, block, columns, transpose }
}

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
    reorderable_ops(e)
}

/// Each reduction's op, when every reduction is one associative op
/// ([`reduction::associative_op`]) whose order may change: a narrow sum rounds at every
/// step, so its order is part of its value.
fn reorderable_ops(e: &Elemental) -> Option<Vec<BinaryOp>> {
    if e.reductions.iter().any(|r| r.values.iter().any(|&v| narrow(e.expr(v).elem))) {
        return None;
    }
    (0..e.reductions.len()).map(|k| reduction::associative_op(e, k).ok()).collect()
}

/// The most outputs a column reduction has for its blocks to split the rows
/// ([`ColumnTile`]): past it, one thread per output fills the device already.
pub const MAX_COLUMN_TILED_OUTPUTS: u64 = 1 << 16;

/// A column reduction (its innermost variable kept: neighbouring outputs reduce
/// neighbouring elements) with too few outputs to fill the device one thread each: a
/// block takes `width` neighbouring columns (the other kept variables fixed), its
/// threads `lanes` to a column, each thread reducing every `lanes`-th row of its column
/// (neighbouring threads read neighbouring elements), then the column's partials
/// combined through shared memory in lane order and with the init. The ops are
/// reordered as in a block reduction ([`cooperative_ops`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnTile {
    /// The innermost variable (kept).
    pub column: u32,
    pub width: i64,
    pub lanes: i64,
    /// Each reduction's op.
    pub ops: Vec<BinaryOp>,
}

impl ColumnTile {
    /// The extent of kept variable `v` counted in runs of `width` columns or elements.
    pub fn extent(&self, e: &Elemental, v: u32) -> i64 {
        extent_in(e, v, &[self.column], self.width)
    }

    /// Blocks: one per run of columns.
    pub fn blocks(&self, e: &Elemental) -> u64 {
        positions(&e.outer_vars(), |v| self.extent(e, v))
    }
}

/// Whether `e` is a column reduction for [`ColumnTile`] with blocks of `threads`
/// threads, `width` of them along the columns: its innermost variable is kept and at
/// least half `width`, it reduces at least [`MIN_COOPERATIVE`] elements per output into
/// fewer than [`MAX_COLUMN_TILED_OUTPUTS`] outputs, stores nothing inside its loop, and
/// its ops may be reordered.
pub fn column_tile(e: &Elemental, outer_elements: u64, threads: u32, width: i64) -> Option<ColumnTile> {
    let column = e.space.len().checked_sub(1)? as u32;
    if !e.is_reduction() || e.reduced[column as usize] || e.space[column as usize] < width / 2 {
        return None;
    }
    let reduced: i64 = (0..e.space.len()).filter(|&v| e.reduced[v]).map(|v| e.space[v]).product();
    if reduced < MIN_COOPERATIVE
        || reduced > i32::MAX as i64
        || outer_elements >= MAX_COLUMN_TILED_OUTPUTS
        || e.outputs.iter().any(|o| o.inner)
    {
        return None;
    }
    let ops = reorderable_ops(e)?;
    Some(ColumnTile { column, width, lanes: threads as i64 / width, ops })
}

/// A column reduction's block at `flat` among [`ColumnTile::blocks`]: the kept
/// variables, the column clamped into the result (a run at the edge reads in bounds),
/// `col` the thread's column unclamped, `lx` its place in the run and `ly` its lane.
pub fn column_position<'e, W: TileSpelling<'e>>(w: &mut W, flat: &str, tile: &ColumnTile) {
    let e = w.elemental();
    let c = tile.column;
    let origin: Vec<(u32, String, i64)> = e
        .outer_vars()
        .into_iter()
        .map(|v| (v, if v == c { format!("w{v}") } else { format!("v{v}") }, tile.extent(e, v)))
        .collect();
    w.unravel_as(flat, &origin, "q");
    let thread = w.thread_in_block();
    let lx = w.index_rem(thread.clone(), tile.width);
    w.define_index("lx", &lx);
    let ly = w.index_div(thread, tile.width);
    w.define_index("ly", &ly);
    let origin = w.index_mul(format!("w{c}"), tile.width);
    let col = w.index_add(origin, "lx".into());
    w.define_index("col", &col);
    let at = w.index_clamp("col".into(), 0, e.space[c as usize] - 1);
    w.define_index(&format!("v{c}"), &at);
}

/// Whether the thread stores its column's results: lane 0 of a column inside the result.
pub fn column_store_guard<'e, W: TileSpelling<'e>>(w: &mut W, tile: &ColumnTile) -> String {
    let n = w.index_const(w.elemental().space[tile.column as usize]);
    let zero = w.index_const(0);
    format!("ly == {zero} && col < {n}")
}

/// A column reduction's reduced variables `vars`: every `lanes`-th of their row-major
/// positions from the thread's lane, the accumulators (set to the ops' identities)
/// taking `body`'s combines; then each partial into `part{k}` of shared memory (one
/// element per thread), a barrier, and every thread's accumulators set to the `inits`
/// combined with its column's partials in lane order (the block's next use of `part`
/// must wait at a barrier after the stores).
pub fn column_nest<'e, W: TileSpelling<'e>>(
    w: &mut W,
    vars: &[u32],
    tile: &ColumnTile,
    inits: Vec<String>,
    body: &mut dyn FnMut(&mut W),
) {
    let e = w.elemental();
    let n: i64 = vars.iter().map(|&v| e.space[v as usize]).product();
    let (saved, saved_indices) = (w.memo().values.clone(), w.memo().indices.clone());
    w.open_loop("r", "ly", n, tile.lanes);
    w.pad().push_str("  ");
    let named: Vec<_> = vars.iter().map(|&v| (v, format!("v{v}"), e.space[v as usize])).collect();
    w.unravel_as("r", &named, "rq");
    body(w);
    close(w);
    w.memo().values = saved;
    w.memo().indices = saved_indices;
    let mine = w.index_mul("ly".into(), tile.width);
    let mine = w.index_add(mine, "lx".into());
    for k in 0..tile.ops.len() {
        let acc = w.accumulator(k as u32, 0);
        w.line(format_args!("part{k}[{mine}] = {acc};"));
    }
    w.barrier();
    for (k, (&op, init)) in tile.ops.iter().zip(inits).enumerate() {
        let acc = w.accumulator(k as u32, 0);
        w.line(format_args!("{acc} = {init};"));
        let elem = e.expr(e.reductions[k].values[0]).elem;
        for lane in 0..tile.lanes {
            let at = w.index_const(lane * tile.width);
            let at = w.index_add(at, "lx".into());
            let v = w.binary(op, elem, acc.clone(), format!("part{k}[{at}]"));
            w.line(format_args!("{acc} = {v};"));
        }
    }
}

/// The extent of variable `v` of `e` counted in runs of `side` when it is one of
/// `tiled` (a partial run at the end counts), else in elements.
fn extent_in(e: &Elemental, v: u32, tiled: &[u32], side: i64) -> i64 {
    let n = e.space[v as usize];
    if tiled.contains(&v) {
        (n + side - 1) / side
    } else {
        n
    }
}

/// The positions of `vars` together, each counted by `extent`.
fn positions(vars: &[u32], extent: impl Fn(u32) -> i64) -> u64 {
    vars.iter().map(|&v| extent(v).max(0) as u64).product()
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
        extent_in(e, v, &[self.m, self.n], DOT_TILE)
    }

    /// Threads: one per block of outputs.
    pub fn threads(&self, e: &Elemental) -> u64 {
        positions(&e.outer_vars(), |v| self.extent(e, v))
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
    for y in nodes_under(e, x) {
        match e.expr(y).node {
            Node::Acc { .. } | Node::Arg { .. } | Node::Reduced { .. } => return None,
            Node::Load { linear: i, .. } | Node::Index(i) | Node::InRange { idx: i, .. } => {
                for (v, r) in reads.iter_mut().enumerate() {
                    *r |= indices.varies_with(i, v as u32);
                }
            }
            _ => {}
        }
    }
    Some(reads)
}

/// Node `x` and every node it reads (directly, not through an index), each once.
fn nodes_under(e: &Elemental, x: ExprId) -> Vec<ExprId> {
    let (mut stack, mut seen, mut under) = (vec![x], vec![false; e.nodes.len()], Vec::new());
    while let Some(y) = stack.pop() {
        if !std::mem::replace(&mut seen[y.0 as usize], true) {
            under.push(y);
            stack.extend(e.expr(y).node.operands());
        }
    }
    under
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
    /// Opens a loop of index `name` from `from` (an index) below `below` by `step`.
    fn open_loop(&mut self, name: &str, from: &str, below: i64, step: i64);
    /// The thread's position in its block (WebGPU: its workgroup), as an index.
    fn thread_in_block(&mut self) -> String;
    /// Waits for every thread of the block, its shared-memory writes visible after.
    fn barrier(&mut self);
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
    let init = w.value(e.reductions[0].inits[0]);
    declare_register_tile(w, &init);
    open_loop(w, &format!("v{}", tile.k), e.space[tile.k as usize]);
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
    combine_register_tile(w, tile);
    close(w);
    store_register_tile(w, tile, |w, i, j| {
        block_position(w, tile.m, i, false);
        block_position(w, tile.n, j, false);
    });
}

/// One step of a register tile: the combiner once per output `(i, j)` of the thread's
/// block, with factor `lhs` as `a{i}` and `rhs` as `b{j}` (defined by the caller).
fn combine_register_tile<'e, W: TileSpelling<'e>>(w: &mut W, tile: DotTile) {
    let combiner = w.elemental().reductions[0].combiner[0];
    for (i, j) in tile_outputs() {
        scoped(w, |w| {
            w.memo().values.insert(tile.lhs, format!("a{i}"));
            w.memo().values.insert(tile.rhs, format!("b{j}"));
            w.set_tile_acc(Some(format!("acc_{i}_{j}")));
            let v = w.value(combiner);
            w.line(format_args!("acc_{i}_{j} = {v};"));
            w.set_tile_acc(None);
        });
    }
}

/// Each output `(i, j)` of the thread's register tile that lies inside the result,
/// stored through the driver with its accumulator (the epilogue at its own position):
/// `place` defines `v{m}` and `v{n}` for it.
fn store_register_tile<'e, W: TileSpelling<'e>>(w: &mut W, tile: DotTile, place: impl Fn(&mut W, i64, i64)) {
    let e = w.elemental();
    let (rows, cols) = (e.space[tile.m as usize], e.space[tile.n as usize]);
    for (i, j) in tile_outputs() {
        scoped(w, |w| {
            place(w, i, j);
            let (rows, cols) = (w.index_const(rows), w.index_const(cols));
            w.line(format_args!("if (v{} < {rows} && v{} < {cols}) {{", tile.m, tile.n));
            w.pad().push_str("  ");
            w.set_tile_acc(Some(format!("acc_{i}_{j}")));
            w.store_outputs(false);
            w.set_tile_acc(None);
            close(w);
        });
    }
}

/// The outputs `(i, j)` of a thread's register tile, row by row.
fn tile_outputs() -> impl Iterator<Item = (i64, i64)> {
    (0..DOT_TILE).flat_map(|i| (0..DOT_TILE).map(move |j| (i, j)))
}

/// The accumulators of a thread's register tile, each set to `init`.
fn declare_register_tile<'e, W: TileSpelling<'e>>(w: &mut W, init: &str) {
    for (i, j) in tile_outputs() {
        w.declare_f32(&format!("acc_{i}_{j}"), Some(init));
    }
}

/// Outputs per side of the block of a dot's outputs one workgroup (block) computes with
/// its operands staged through shared memory, for `threads` threads ([`DotBlock`]):
/// the threads form a square of [`DOT_TILE`]-square register tiles.
pub fn dot_block_side(threads: u32) -> i64 {
    (threads as f64).sqrt() as i64 * DOT_TILE
}

/// Steps of the contraction staged through shared memory at a time ([`DotBlock`]).
pub const DOT_BLOCK_DEPTH: i64 = 16;

/// A dot in register tiles ([`DotTile`]) whose workgroup (block) computes a `side` x
/// `side` block of outputs together ([`dot_block_side`]): at each slice of
/// [`DOT_BLOCK_DEPTH`] steps of the contraction, its threads first evaluate the two
/// factors over the block's rows or columns and the slice into shared memory, each
/// factor element once for the whole block (neighbouring threads along the factor's
/// contiguous variable), then, after a barrier, each thread runs its register tile's
/// steps from shared memory. Every output still sums its products in contraction order
/// from its init (the slice's steps past the end are skipped), so its value is the
/// serial reduction's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DotBlock {
    pub tile: DotTile,
    pub side: i64,
    /// Per factor (lhs, rhs): whether its loads run along the contraction (staged with
    /// neighbouring threads along `k`) rather than along `m` or `n`.
    pub k_fast: [bool; 2],
}

impl DotBlock {
    /// The extent of kept variable `v` counted in blocks (tiled variables) or elements.
    pub fn extent(&self, e: &Elemental, v: u32) -> i64 {
        extent_in(e, v, &[self.tile.m, self.tile.n], self.side)
    }

    /// Workgroups (blocks): one per block of outputs.
    pub fn blocks(&self, e: &Elemental) -> u64 {
        positions(&e.outer_vars(), |v| self.extent(e, v))
    }

    /// Elements of each factor's slice in shared memory (`dot_a`, `dot_b`).
    pub fn shared_len(&self) -> i64 {
        DOT_BLOCK_DEPTH * self.side
    }
}

/// Whether dot `tile` (see [`dot_tile`]) is computed by [`DotBlock`]s of `threads`
/// threads: both tiled sides at least half a block and a contraction of at least one
/// slice.
pub fn dot_block(e: &Elemental, tile: DotTile, threads: u32) -> Option<DotBlock> {
    let side = dot_block_side(threads);
    let big = |v: u32| e.space[v as usize] >= side / 2;
    if !big(tile.m) || !big(tile.n) || e.space[tile.k as usize] < DOT_BLOCK_DEPTH {
        return None;
    }
    let indices = IndexAnalysis::new(e);
    let k_fast = [tile.lhs, tile.rhs].map(|f| runs_along(e, &indices, f, tile.k));
    Some(DotBlock { tile, side, k_fast })
}

/// Whether some load under node `x` is contiguous along variable `v`.
fn runs_along(e: &Elemental, indices: &IndexAnalysis, x: ExprId, v: u32) -> bool {
    nodes_under(e, x).into_iter().any(|y| {
        matches!(e.expr(y).node, Node::Load { linear, .. } if indices.dependence(linear, v) == Dependence::Affine(1))
    })
}

/// A dot in shared-memory blocks ([`DotBlock`]) for the workgroup (block) at `flat` among
/// [`DotBlock::blocks`], with `threads` threads: the block's origin (`w{m}` and `w{n}`
/// count blocks), the accumulators, the loop over slices of the contraction (each
/// factor staged into `dot_a` or `dot_b`, a barrier, the register tile's steps, a
/// barrier), then each output of the thread's register tile inside the result stored
/// through the driver (the epilogue at its own position: the writer's `store` must use
/// [`Lower::store_index`]).
pub fn blocked_dot<'e, W: TileSpelling<'e>>(w: &mut W, flat: &str, threads: u32, block: DotBlock) {
    let e = w.elemental();
    let tile = block.tile;
    let (side, depth) = (block.side, DOT_BLOCK_DEPTH);
    let origin: Vec<(u32, String, i64)> = e
        .outer_vars()
        .into_iter()
        .map(|v| (v, if v == tile.m || v == tile.n { format!("w{v}") } else { format!("v{v}") }, block.extent(e, v)))
        .collect();
    w.unravel_as(flat, &origin, "q");
    let across = side / DOT_TILE;
    let thread = w.thread_in_block();
    let tx = w.index_rem(thread.clone(), across);
    w.define_index("tx", &tx);
    let ty = w.index_div(thread.clone(), across);
    w.define_index("ty", &ty);
    w.define_index("th", &thread);
    let init = w.value(e.reductions[0].inits[0]);
    declare_register_tile(w, &init);
    let contraction = e.space[tile.k as usize];
    let zero = w.index_const(0);
    w.open_loop("kt", &zero, contraction, depth);
    w.pad().push_str("  ");
    // Stage each factor's slice: element `s` of it is step `s / side` (or `s % depth`
    // when the factor runs along the contraction) at row or column `s % side` (or
    // `s / depth`) of the block, stored at `step * side + row`.
    let per_thread = block.shared_len() / threads as i64;
    for (f, (factor, along, other, shared)) in
        [(tile.lhs, tile.m, tile.n, "dot_a"), (tile.rhs, tile.n, tile.m, "dot_b")].into_iter().enumerate()
    {
        open_loop(w, "r", per_thread);
        scoped(w, |w| {
            let step = w.index_mul("r".into(), threads as i64);
            let s = w.index_add("th".into(), step);
            w.define_index("s", &s);
            let (kk, rc) = if block.k_fast[f] {
                (w.index_rem("s".into(), depth), w.index_div("s".into(), depth))
            } else {
                (w.index_div("s".into(), side), w.index_rem("s".into(), side))
            };
            w.define_index("kk", &kk);
            w.define_index("rc", &rc);
            let at = w.index_add("kt".into(), "kk".into());
            let at = w.index_clamp(at, 0, contraction - 1);
            w.define_index(&format!("v{}", tile.k), &at);
            block_row(w, along, side, "rc", true);
            // The factor reads the other side's variable nowhere, but its text may name it.
            block_row(w, other, side, "0", true);
            let v = w.value(factor);
            let slot = w.index_mul("kk".into(), side);
            let slot = w.index_add(slot, "rc".into());
            w.line(format_args!("{shared}[{slot}] = {v};"));
        });
        close(w);
    }
    w.barrier();
    open_loop(w, "kk", depth);
    let last = w.index_const(contraction);
    w.line(format_args!("if (kt + kk < {last}) {{"));
    w.pad().push_str("  ");
    for (name, shared, pos) in [("a", "dot_a", "ty"), ("b", "dot_b", "tx")] {
        for i in 0..DOT_TILE {
            let row = w.index_mul(pos.into(), DOT_TILE);
            let off = w.index_const(i);
            let row = w.index_add(row, off);
            let slot = w.index_mul("kk".into(), side);
            let slot = w.index_add(slot, row);
            w.declare_f32(&format!("{name}{i}"), Some(&format!("{shared}[{slot}]")));
        }
    }
    combine_register_tile(w, tile);
    close(w);
    close(w);
    // The next slice overwrites the shared memory only after every thread has read it.
    w.barrier();
    close(w);
    store_register_tile(w, tile, |w, i, j| {
        for (v, pos, off) in [(tile.m, "ty", i), (tile.n, "tx", j)] {
            let at = w.index_mul(pos.into(), DOT_TILE);
            let off = w.index_const(off);
            let at = w.index_add(at, off);
            w.define_index(&format!("p{v}"), &at);
            block_row(w, v, side, &format!("p{v}"), false);
        }
    });
}

/// Defines variable `v{v}` at `within` (an index) in the workgroup's block of `side`;
/// with `inside`, clamped into its extent.
fn block_row<'e, W: TileSpelling<'e>>(w: &mut W, v: u32, side: i64, within: &str, inside: bool) {
    let origin = w.index_mul(format!("w{v}"), side);
    let mut at = w.index_add(origin, within.to_string());
    if inside {
        at = w.index_clamp(at, 0, w.elemental().space[v as usize] - 1);
    }
    w.define_index(&format!("v{v}"), &at);
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
pub(crate) fn scoped<'e, W: TileSpelling<'e>>(w: &mut W, body: impl FnOnce(&mut W)) {
    let (saved, saved_indices) = (w.memo().values.clone(), w.memo().indices.clone());
    w.line(format_args!("{{"));
    w.pad().push_str("  ");
    body(w);
    close(w);
    w.memo().values = saved;
    w.memo().indices = saved_indices;
}

/// Opens a loop of `name` from 0 below `n`, the lines after it indented.
fn open_loop<'e, W: TileSpelling<'e>>(w: &mut W, name: &str, n: i64) {
    let zero = w.index_const(0);
    w.open_loop(name, &zero, n, 1);
    w.pad().push_str("  ");
}

/// Closes the innermost brace.
fn close<'e, W: TileSpelling<'e>>(w: &mut W) {
    let pad = w.pad();
    pad.truncate(pad.len() - 2);
    w.line(format_args!("}}"));
}

/// Side of the square tile of outputs a transposing kernel's block computes
/// ([`TransposeTile`]).
pub const TRANSPOSE_TILE: i64 = 32;

/// The fewest elements a loop kernel has for its transposed loads to go through tiles.
pub const MIN_TRANSPOSED: i64 = 4096;

/// The most loads one kernel stages through tiles (each a tile of shared memory).
const MAX_TILED_LOADS: usize = 4;

/// A loop kernel whose stores are contiguous along its innermost variable (`store_var`)
/// but some of whose loads are contiguous along another (`load_var`): one thread per
/// element would read those loads with a stride between neighbouring threads. Instead a
/// block takes a [`TRANSPOSE_TILE`]-square tile of the (`load_var`, `store_var`) plane
/// (the other variables fixed) and works in two phases: its threads first read the
/// tiled loads of the whole tile along `load_var`, neighbours reading neighbours, into
/// shared memory (a tile per load, each row one element longer than the tile so that a
/// column's elements lie in different banks); then, after a barrier, they compute the
/// tile's elements along `store_var`, taking those loads' values from shared memory, and
/// store them, neighbours writing neighbours. Every element's value is computed as
/// before, from the same loaded values: only where each load is done changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransposeTile {
    pub store_var: u32,
    pub load_var: u32,
    /// The loads staged through shared memory (tile `k` holds `loads[k]`).
    pub loads: Vec<ExprId>,
}

impl TransposeTile {
    /// The extent of variable `v` counted in tiles (the tiled plane) or elements.
    pub fn extent(&self, e: &Elemental, v: u32) -> i64 {
        extent_in(e, v, &[self.load_var, self.store_var], TRANSPOSE_TILE)
    }

    /// Blocks: one per tile.
    pub fn tiles(&self, e: &Elemental) -> u64 {
        positions(&e.outer_vars(), |v| self.extent(e, v))
    }

    /// The elements of one tile of shared memory (a padded row per tile row).
    pub fn shared_len() -> i64 {
        TRANSPOSE_TILE * (TRANSPOSE_TILE + 1)
    }
}

/// Whether `e` is a loop kernel with loads to stage through tiles ([`TransposeTile`]):
/// at least [`MIN_TRANSPOSED`] elements, and loads (not of pred) whose address moves by
/// one element along a variable other than the innermost and neither stays nor moves by
/// one along the innermost; the variable most of them run along, when both sides of the
/// tiled plane hold at least half a tile, is `load_var`.
pub fn transpose_tile(e: &Elemental) -> Option<TransposeTile> {
    if e.is_reduction() || e.space.len() < 2 || e.space.iter().product::<i64>() < MIN_TRANSPOSED {
        return None;
    }
    let store_var = e.space.len() as u32 - 1;
    let half = TRANSPOSE_TILE / 2;
    if e.space[store_var as usize] < half {
        return None;
    }
    let indices = IndexAnalysis::new(e);
    let mut along: Vec<Vec<ExprId>> = vec![Vec::new(); e.space.len()];
    for (x, n) in e.nodes.iter().enumerate() {
        let Node::Load { linear, .. } = n.node else { continue };
        if n.elem == ElementType::Pred
            || matches!(indices.dependence(linear, store_var), Dependence::Affine(1) | Dependence::Invariant)
        {
            continue;
        }
        let var = (0..store_var).find(|&v| indices.dependence(linear, v) == Dependence::Affine(1));
        if let Some(v) = var.filter(|&v| e.space[v as usize] >= half) {
            along[v as usize].push(ExprId(x as u32));
        }
    }
    let load_var = (0..store_var).rev().max_by_key(|&v| along[v as usize].len())?;
    let mut loads = std::mem::take(&mut along[load_var as usize]);
    if loads.is_empty() {
        return None;
    }
    loads.truncate(MAX_TILED_LOADS);
    Some(TransposeTile { store_var, load_var, loads })
}

/// A transposing loop kernel ([`TransposeTile`]) for the block at `flat` among
/// [`TransposeTile::tiles`], with `threads` threads (a multiple of [`TRANSPOSE_TILE`],
/// at most its square): the tile's origin (`w{v}` counts tiles), then the two phases,
/// each thread taking rows `ly`, `ly + lanes`, ... of the tile at column `lx`. Reads
/// clamp into the result (a tile at an edge reads in bounds); the elements past the
/// edges are not computed. The writer's shared memory holds `tile{k}` of
/// [`TransposeTile::shared_len`] elements of `loads[k]`'s value type; its `store` must
/// use [`Lower::store_index`].
pub fn tiled_transpose<'e, W: TileSpelling<'e>>(w: &mut W, flat: &str, threads: u32, tile: &TransposeTile) {
    let e = w.elemental();
    let (a, b) = (tile.load_var, tile.store_var);
    let origin: Vec<(u32, String, i64)> = (0..e.space.len() as u32)
        .map(|v| (v, if v == a || v == b { format!("w{v}") } else { format!("v{v}") }, tile.extent(e, v)))
        .collect();
    w.unravel_as(flat, &origin, "q");
    let lanes = threads as i64 / TRANSPOSE_TILE;
    let thread = w.thread_in_block();
    let lx = w.index_rem(thread.clone(), TRANSPOSE_TILE);
    w.define_index("lx", &lx);
    let ly = w.index_div(thread, TRANSPOSE_TILE);
    w.define_index("ly", &ly);
    // Element (row, column) of a tile of shared memory.
    let pitch = TRANSPOSE_TILE + 1;
    let shared_at = |w: &mut W, row: &str, col: &str| {
        let r = w.index_mul(row.to_string(), pitch);
        w.index_add(r, col.to_string())
    };
    // Phase 1: row `row` of the tile along `store_var`, column `lx` along `load_var`.
    for phase in [1, 2] {
        open_loop(w, "r", TRANSPOSE_TILE / lanes);
        scoped(w, |w| {
            let step = w.index_mul("r".into(), lanes);
            let row = w.index_add("ly".into(), step);
            w.define_index("row", &row);
            if phase == 1 {
                tile_position(w, b, "row", true);
                tile_position(w, a, "lx", true);
                let at = shared_at(w, "row", "lx");
                for (k, &x) in tile.loads.iter().enumerate() {
                    let v = w.value(x);
                    w.line(format_args!("tile{k}[{at}] = {v};"));
                }
            } else {
                // Phase 2: the element at column `lx` along `store_var`, row `row` along
                // `load_var`: the tiles read transposed.
                tile_position(w, b, "lx", false);
                tile_position(w, a, "row", false);
                let (na, nb) = (w.index_const(e.space[a as usize]), w.index_const(e.space[b as usize]));
                w.line(format_args!("if (v{a} < {na} && v{b} < {nb}) {{"));
                w.pad().push_str("  ");
                let at = shared_at(w, "lx", "row");
                for (k, &x) in tile.loads.iter().enumerate() {
                    w.memo().values.insert(x, format!("tile{k}[{at}]"));
                }
                w.element();
                close(w);
            }
        });
        close(w);
        // Phase 2 reads what every thread wrote; the next tile's writes wait for its reads.
        w.barrier();
    }
}

/// Defines variable `v{v}` at `within` in its tile; with `inside`, clamped into its
/// extent.
fn tile_position<'e, W: TileSpelling<'e>>(w: &mut W, v: u32, within: &str, inside: bool) {
    let origin = w.index_mul(format!("w{v}"), TRANSPOSE_TILE);
    let mut at = w.index_add(origin, within.to_string());
    if inside {
        at = w.index_clamp(at, 0, w.elemental().space[v as usize] - 1);
    }
    w.define_index(&format!("v{v}"), &at);
}
