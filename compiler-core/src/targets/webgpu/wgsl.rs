//! WGSL for one elemental kernel of the plan: one invocation per outer element (a
//! grid-stride loop past the dispatch limit), the reduced variables as a serial loop
//! nest inside it, every buffer addressed in the one arena storage buffer. Long rows
//! of associative reductions are shared by a workgroup instead (`cooperative_ops`): one
//! workgroup per outer element, its invocations striding over the reduced elements, the
//! partials tree-reduced in workgroup memory.
//!
//! The emitter implements the instructions of the lowering driver (`kernel::lower`) and
//! nothing more: the driver walks the elemental description (values, index expressions,
//! store positions, the reduction protocol, what a loop reads unchanged), HLO's element
//! semantics are spelled out where WGSL's own operators differ (division by zero,
//! shifts past the width, NaN in max/min and float-to-int conversion, total-order
//! compares), and `kernel::semantics` holds the cases it must meet.
//!
//! Types: values of f32, s32, u32 and pred; 8- and 16-bit buffers (pred, s8, u8, s16,
//! u16, f16, bf16) are read out of their words and written into them, each value
//! carried exactly in a 32-bit one ([`carrier`]): arithmetic on a narrow type runs in its
//! carrier and its result is brought back to the type (integers wrapped, f16 and bf16
//! rounded to nearest even in integer arithmetic: `f16_bits`, `bf16_bits`; f32 has more
//! than twice their precision, so one f32 operation rounded again is the narrow
//! operation rounded once). s64 and u64 are pairs of words, `vec2<u32>` low word first,
//! their operations helper functions in the header where the shader calls them
//! ([`wide`]). f64 (refused by the plan), integer `power`, scatters into 64-bit buffers
//! (WGSL has no 64-bit atomics), the few narrow ops a carrier would get wrong (shifts
//! that see the carrier's extension, bitcasts; bit counts mask it off), and the ops
//! without a WGSL spelling here yet refuse the kernel with a reason, and it runs on the
//! host (the plan's opaque fallback).
//!
//! Layout: `arena` is `array<u32>`, each buffer at its plan offset (a multiple of 256
//! bytes: the target's alignment), so that a kernel binds one buffer whatever it reads
//! and an output may take over its input's bytes in place as the arena allows (every
//! load of an element happens before its stores). A kernel that writes a narrow buffer
//! has neighbouring invocations writing parts of one word: its arena is
//! `array<atomic<u32>>`, every access atomic, and a narrow store clears its bits and
//! sets them with `atomicAnd` and `atomicOr` (no invocation touches another's bits).

use super::approx;
use super::wide::{self, wide};
use crate::ir::{BinaryOp, CmpDir, ElementType, Scalar, UnaryOp};
use crate::kernel::atomic_scatter::AtomicScatter;
use crate::kernel::elemental::{Elemental, ExprId, Idx, IdxId, Node};
use crate::kernel::lower::{loop_invariants, Lower, Memo};
use crate::kernel::reduction;
pub use crate::targets::cstyle::Mapping;
use crate::targets::cstyle::{
    blocked_dot, column_nest, column_position, column_store_guard, dot_block_side, fused_names, layout, line_origins,
    narrow, tiled_dot, tiled_transpose, ColumnTile, DotBlock, DotTile, Layout, TileSpelling, TransposeTile,
    DOT_BLOCK_DEPTH, DOT_TILE, TRANSPOSE_TILE,
};
use std::fmt::Write;

/// Invocations per workgroup.
pub const WORKGROUP: u32 = 64;
/// The most workgroups one dispatch starts along x (WebGPU's default limit).
pub const MAX_WORKGROUPS: u32 = 65535;
/// Columns per workgroup of a column reduction ([`ColumnTile`]): 16 columns in 4 lanes.
const COLUMN_RUN: i64 = 16;

/// A kernel's shader and how to launch it.
#[derive(Clone, Debug, PartialEq)]
pub struct WgslKernel {
    pub source: String,
    /// Invocations to launch (0: nothing to run).
    pub invocations: u64,
    pub mapping: Mapping,
    /// Per line of `source`: the HLO instruction its value implements, or "" (the lines
    /// that bind a node's value; loop control, loads and stores have none).
    pub line_hlo: Vec<String>,
    /// Shaders dispatched before this one, in order, as part of the same kernel: a
    /// scatter's copy of its operand into its output (none when the two share their
    /// bytes), then, for a replacing scatter, its claims.
    pub before: Vec<WgslKernel>,
    /// Words of the kernel's scratch buffer this shader binds as `claims` (binding 1):
    /// zeroed before the kernel's first pass, shared by its passes (0: none).
    pub scratch_words: u64,
}

impl WgslKernel {
    /// Its shaders in dispatch order (a scatter's copy first).
    pub fn passes(&self) -> impl Iterator<Item = &WgslKernel> {
        self.before.iter().chain([self])
    }

    /// Its shaders in dispatch order as one text, a blank line between two, with each
    /// line's HLO instruction.
    pub fn text(&self) -> (String, Vec<String>) {
        let (mut source, mut lines) = (String::new(), Vec::new());
        for (i, pass) in self.passes().enumerate() {
            if i > 0 {
                source.push('\n');
                lines.push(String::new());
            }
            source += &pass.source;
            lines.extend(pass.line_hlo.iter().cloned());
        }
        (source, lines)
    }

    /// Workgroups along x for one dispatch (the shader loops over the rest).
    pub fn workgroups(&self) -> u32 {
        self.invocations.div_ceil(WORKGROUP as u64).min(MAX_WORKGROUPS as u64) as u32
    }

    /// How it runs, in a few words (the kernels pane's "runs as").
    pub fn runs(&self) -> String {
        match self.mapping {
            // WGSL's loop kernels take one element per invocation (no quads: the arena is
            // words).
            Mapping::Elements | Mapping::Quads => {
                format!("{} invocations, workgroups of {WORKGROUP}", self.invocations)
            }
            Mapping::BlockReduction => {
                format!("workgroup reduction: {} workgroups of {WORKGROUP}", self.workgroups())
            }
            Mapping::TransposeTiles => format!(
                "transpose tiles: {} workgroups of {WORKGROUP}, each a {TRANSPOSE_TILE}x{TRANSPOSE_TILE} tile",
                self.invocations / WORKGROUP as u64
            ),
            Mapping::ColumnTiles => format!(
                "column tiles: {} workgroups of {WORKGROUP}, each {COLUMN_RUN} columns",
                self.invocations / WORKGROUP as u64
            ),
            Mapping::AtomicUpdates => {
                let n = self.invocations;
                let land = if self.scratch_words > 0 {
                    format!("{n} claim their elements, then {n} store the winning updates")
                } else {
                    format!("{n} combine the updates atomically")
                };
                match self.before.first().filter(|p| p.scratch_words == 0) {
                    Some(copy) => format!("{} invocations copy the operand, then {land}", copy.invocations),
                    None => format!("{land} (in place)"),
                }
            }
            Mapping::DotTiles => format!(
                "dot tiles: {} invocations of {DOT_TILE}x{DOT_TILE} outputs, workgroups of {WORKGROUP}",
                self.invocations
            ),
            Mapping::DotBlocks => {
                let side = dot_block_side(WORKGROUP);
                format!(
                    "dot blocks: {} workgroups of {WORKGROUP}, each {side}x{side} outputs",
                    self.invocations / WORKGROUP as u64
                )
            }
        }
    }

    /// How its invocations share the work, in a sentence (the kernels pane's note).
    pub fn how(&self) -> String {
        match self.mapping {
            Mapping::Elements | Mapping::Quads => {
                "one invocation per output element (a grid-stride loop past the dispatch limit)".into()
            }
            Mapping::BlockReduction => "one workgroup per output: its invocations stride over the reduced \
                elements and tree-reduce them in workgroup memory"
                .into(),
            Mapping::TransposeTiles => format!(
                "one workgroup per {TRANSPOSE_TILE}x{TRANSPOSE_TILE} tile of the output: its invocations read the \
                 transposed operands along their rows into workgroup memory, then compute and store the tile \
                 along its own rows, so neighbouring invocations read and write neighbouring elements"
            ),
            Mapping::ColumnTiles => format!(
                "one workgroup per {COLUMN_RUN} neighbouring columns: its invocations split each column's rows \
                 ({} lanes), neighbours reading neighbouring elements, and combine their partials in workgroup \
                 memory",
                WORKGROUP as i64 / COLUMN_RUN
            ),
            Mapping::AtomicUpdates if self.scratch_words > 0 => "a scatter that replaces: the operand copied \
                into the output (unless it is already there); then one invocation per update element claims the \
                element it targets with an atomic max of its position in a zeroed scratch buffer, and in a second \
                pass the update whose claim won stores itself, so the last update of each element wins, as in \
                the sequential scatter; updates outside the operand are skipped"
                .into(),
            Mapping::AtomicUpdates => "a scatter: the operand copied into the output (unless it is already \
                there), then one invocation per update element combining it into the element it targets with \
                an atomic add or a compare-exchange loop; updates outside the operand are skipped"
                .into(),
            Mapping::DotTiles => format!(
                "each invocation computes a {DOT_TILE}x{DOT_TILE} block of the dot's outputs in registers: at each \
                 step of the contraction it loads {DOT_TILE} elements of each operand for {} products, and runs \
                 the epilogue on each output of its block",
                DOT_TILE * DOT_TILE
            ),
            Mapping::DotBlocks => {
                let side = dot_block_side(WORKGROUP);
                format!(
                    "one workgroup per {side}x{side} block of the dot's outputs: for each slice of \
                     {DOT_BLOCK_DEPTH} steps of the contraction its invocations stage both operands' slices in \
                     workgroup memory (each element read once for the block), then each computes a \
                     {DOT_TILE}x{DOT_TILE} block of outputs in registers from there, and runs the epilogue on \
                     each output of its block"
                )
            }
        }
    }
}

/// Where an elemental kernel's buffers are: word offsets into the arena.
pub struct Placement<'a> {
    pub inputs: &'a [u64],
    pub outputs: &'a [u64],
}

/// Choices of the WGSL emitter that the adapter decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Stage operands in workgroup memory: dots in workgroup blocks ([`DotBlock`]) and
    /// transposes through tiles ([`TransposeTile`]). A GPU's workgroup memory is on chip
    /// and its loads from memory are wide, so staging saves traffic; on an adapter that
    /// runs on the CPU (lavapipe, SwiftShader) the CPU's caches already do that, and the
    /// staging's barriers cost (measured on lavapipe: dots 1.6-1.9 times, transposes 1.5
    /// to 1.8 times slower), so it is off unless asked for.
    pub workgroup_staging: bool,
}

/// The WGSL of `e`, with a header naming the kernel; or why it is not emitted.
pub fn emit(e: &Elemental, title: &str, place: &Placement, options: Options) -> Result<WgslKernel, String> {
    check(e)?;
    let outer = e.outer_vars();
    let Layout { mapping, positions: invocations, cooperative, tile, block, columns, transpose } =
        layout(e, WORKGROUP, COLUMN_RUN, options.workgroup_staging);
    let mut w = Writer::new(e, place, mapping);
    w.atomic = e.outputs.iter().any(|o| o.elem.byte_size() < 4);
    w.cooperative = cooperative;
    w.tile = tile;
    w.block = block;
    w.transpose = transpose;
    w.columns = columns;
    w.header(title, invocations);
    w.body(&outer, invocations);
    // Those counted in workgroups: a block reduction's outputs, a transpose's tiles, a
    // column reduction's runs of columns.
    let invocations = if w.per_workgroup() { invocations * WORKGROUP as u64 } else { invocations };
    w.finish(invocations)
}

/// The WGSL of a scatter's update phase ([`AtomicScatter`]): one invocation per update
/// element, which, where its target lies inside the output, combines itself into it
/// atomically (`atomicAdd` for an integer sum, else a compare-exchange loop around the
/// op's own semantics). A replacing scatter whose indices may repeat
/// ([`AtomicScatter::last_wins`]) stores only the update whose claim won (see
/// [`emit_scatter_claims`], dispatched before it). `place` has the index array's and the
/// updates' offsets as inputs, the output's as the one output.
pub fn emit_scatter_updates(s: &AtomicScatter, title: &str, place: &Placement) -> Result<WgslKernel, String> {
    let base = place.outputs[0];
    let int32 = matches!(s.elem, ElementType::S32 | ElementType::U32);
    scatter_pass(s, title, place, |w, at| match s.op {
        // A replacing scatter: the last update of each element, the one whose claim won.
        None if s.last_wins => {
            let v = w.value(s.value);
            w.line(format_args!("if (atomicLoad(&claims[u32({at})]) == t + 1u) {{"));
            w.pad += "  ";
            w.store_alone(base, &format!("u32({at})"), s.elem, &v);
            w.pad.truncate(w.pad.len() - 2);
            w.line(format_args!("}}"));
        }
        // Unique indices: one update per element, read, combined and stored.
        None => {
            let v = w.value(s.new_value);
            w.store_alone(base, &format!("u32({at})"), s.elem, &v);
        }
        Some(BinaryOp::Add) if int32 => {
            let x = w.value(s.value);
            w.line(format_args!("atomicAdd(&arena[{base}u + u32({at})], bitcast<u32>({x}));"));
        }
        Some(op) => {
            let x = w.value(s.value);
            w.combine_in_word(base, &at, s.elem, op, &x);
        }
    })
}

/// The claims of a replacing scatter whose indices may repeat
/// ([`AtomicScatter::last_wins`]), dispatched after the operand's copy and before
/// [`emit_scatter_updates`]: each update element inside the output raises its target's
/// scratch word to its position in the update space plus one, so that the word ends
/// at the last update's, the one the sequential scatter keeps.
pub fn emit_scatter_claims(s: &AtomicScatter, title: &str, place: &Placement) -> Result<WgslKernel, String> {
    if !s.last_wins {
        return Err("only a replacing scatter whose indices may repeat claims its elements".into());
    }
    scatter_pass(s, title, place, |w, at| w.line(format_args!("atomicMax(&claims[u32({at})], t + 1u);")))
}

/// One pass over a scatter's update elements: the grid-stride loop, the bounds test and
/// the target's position `at`, around what `land` writes for an update inside the output.
fn scatter_pass(
    s: &AtomicScatter,
    title: &str,
    place: &Placement,
    land: impl FnOnce(&mut Writer, String),
) -> Result<WgslKernel, String> {
    let e = &s.updates;
    check(e)?;
    if wide(s.elem) {
        return Err(format!("a scatter into {}: webgpu has no 64-bit atomics", s.elem));
    }
    let vars = e.outer_vars();
    let invocations: u64 = vars.iter().map(|&v| e.space[v as usize].max(0) as u64).product();
    if s.last_wins && invocations >= u32::MAX as u64 {
        return Err(format!("{invocations} updates: a claim (a position plus one) must fit in 32 bits"));
    }
    let mut w = Writer::new(e, place, Mapping::AtomicUpdates);
    // Every access atomic: the arena is `array<atomic<u32>>`.
    w.atomic = true;
    w.claims = s.last_wins;
    w.scatter_elem = Some(s.elem);
    w.header(title, invocations);
    if invocations == 0 {
        w.body(&vars, 0);
        return w.finish(0);
    }
    let _ = writeln!(w.out, "  for (var t: u32 = gid.x; t < {invocations}u; t += groups.x * {WORKGROUP}u) {{");
    w.pad = "    ".into();
    w.unravel("t", &vars, "q");
    let inside = w.value(s.in_bounds);
    w.line(format_args!("if ({inside}) {{"));
    w.pad += "  ";
    let at = w.index(s.target);
    land(&mut w, at);
    w.out += "    }\n  }\n}\n";
    w.finish(invocations)
}

/// Why `e` cannot be spelled in WGSL here, if it cannot: its types and the narrow ops a
/// carrier would get wrong.
fn check(e: &Elemental) -> Result<(), String> {
    for (i, &t) in e.input_elems.iter().enumerate() {
        if value_type(t).is_none() {
            return Err(format!("input {i} is {t}: not read on webgpu"));
        }
    }
    for (i, o) in e.outputs.iter().enumerate() {
        if value_type(o.elem).is_none() {
            return Err(format!("output {i} is {}: not written on webgpu", o.elem));
        }
    }
    if let Some(n) = e.nodes.iter().find(|n| value_type(n.elem).is_none()) {
        return Err(format!("a {} value: webgpu does not compute in it", n.elem));
    }
    // Narrow values live in their carriers; a bitcast from or to one goes through its
    // bits, exact for integers and bf16 (whose carrier's low half is zero), not for f16
    // (a NaN's payload through the f32 carrier is the adapter's choice).
    for n in &e.nodes {
        let of = |a: ExprId| e.expr(a).elem;
        let wrong = match n.node {
            Node::BitcastConvert(a) => {
                let (from, to) = (of(a), n.elem);
                (narrow(from) || narrow(to))
                    && (from.byte_size() != to.byte_size() || from == ElementType::F16 || to == ElementType::F16)
            }
            _ => false,
        };
        if wrong {
            return Err(format!("{:?} on {}: webgpu carries {} in 32 bits", n.node, n.elem, n.elem));
        }
    }
    // Data indices saturate to 32 bits, which their clamp (inside the buffer) undoes; a
    // clamp keeps its operand's range (checked on its own) whatever its bounds say.
    let wide = |(i, &(lo, hi)): (usize, &(i64, i64))| {
        !matches!(e.idx[i], Idx::Data(_) | Idx::Clamp(..)) && (lo < i32::MIN as i64 || hi > i32::MAX as i64)
    };
    if e.idx_range.iter().enumerate().any(wide) {
        return Err("an index expression past 32 bits".into());
    }
    let outer: u64 = e.outer_vars().iter().map(|&v| e.space[v as usize].max(0) as u64).product();
    if outer > u32::MAX as u64 || e.space.iter().any(|&n| n > i32::MAX as i64) {
        return Err("more than 2^32 outer elements".into());
    }
    Ok(())
}

/// The WGSL type a buffer element is read as (`None`: not stored on this target yet).
fn stored_type(t: ElementType) -> Option<&'static str> {
    match t {
        ElementType::F32 => Some("f32"),
        ElementType::S32 => Some("i32"),
        ElementType::U32 => Some("u32"),
        _ => None,
    }
}

/// How an 8- or 16-bit element (pred included) sits in its word: elements per word,
/// bits, the mask of one (`None` for a 32-bit element, a word of its own).
fn packing(t: ElementType) -> Option<(u32, u32, &'static str)> {
    match t.byte_size() {
        1 => Some((4, 8, "0xffu")),
        2 => Some((2, 16, "0xffffu")),
        _ => None,
    }
}

/// The carried value of a narrow (not pred) element from its `field`, a `u32` holding
/// its bits at the bottom.
fn narrow_value(t: ElementType, field: &str) -> String {
    use ElementType::*;
    let bits = t.byte_size() * 8;
    match t {
        // Sign-extended: the field moved to the top, shifted back arithmetically.
        S8 | S16 => format!("(bitcast<i32>({field} << {}u) >> {}u)", 32 - bits, 32 - bits),
        F16 => format!("unpack2x16float({field}).x"),
        BF16 => format!("bitcast<f32>({field} << 16u)"),
        _ => field.to_string(),
    }
}

/// The bits of an 8- or 16-bit element (pred included) from its carried value `v`, exact
/// (a carried value is already of the narrow type, [`carrier`]; an f16 or bf16 one rounds
/// to it here), masked to the element.
fn narrow_bits(t: ElementType, v: &str, mask: &str) -> String {
    use ElementType::*;
    match t {
        Pred => format!("select(0u, 1u, {v})"),
        S8 | S16 => format!("bitcast<u32>({v}) & {mask}"),
        F16 => format!("f16_bits({v}) & {mask}"),
        BF16 => format!("bf16_bits({v}) & {mask}"),
        _ => format!("({v}) & {mask}"),
    }
}

/// The WGSL type a value of `t` is carried in: narrow types widened (integers extended
/// by their signedness, f16 and bf16 exactly in f32), 64-bit integers as pairs of words
/// ([`wide`]).
fn value_type(t: ElementType) -> Option<&'static str> {
    use ElementType::*;
    match t {
        Pred => Some("bool"),
        S8 | S16 => Some("i32"),
        U8 | U16 => Some("u32"),
        F16 | BF16 => Some("f32"),
        S64 | U64 => Some(wide::TYPE),
        _ => stored_type(t),
    }
}

/// The 32-bit type whose conversions a carried value of `t` follows.
fn carrier(t: ElementType) -> ElementType {
    use ElementType::*;
    match t {
        S8 | S16 => S32,
        U8 | U16 => U32,
        F16 | BF16 => F32,
        t => t,
    }
}

struct Writer<'a> {
    e: &'a Elemental,
    place: &'a Placement<'a>,
    out: String,
    /// The indentation of the lines written next.
    pad: String,
    memo: Memo<String, String>,
    err: Option<String>,
    /// Names given to the approximations' statements (`approx.rs`).
    tmps: u32,
    /// A cooperative reduction ([`cooperative_ops`]): each reduction's op.
    cooperative: Option<Vec<BinaryOp>>,
    /// A cooperative reduction's inits, combined with the workgroup's total at the end.
    inits: Vec<Vec<String>>,
    /// Where in `out` each node's value was bound (byte offset, node): the lines' HLO.
    bound: Vec<(usize, u32)>,
    /// The arena is `array<atomic<u32>>` (the kernel writes a narrow buffer).
    atomic: bool,
    /// A dot computed in register tiles ([`tiled_dot`]).
    tile: Option<DotTile>,
    /// Inside a tile: the accumulator of the output being combined or stored.
    tile_acc: Option<String>,
    /// A dot whose workgroups stage its operands in workgroup memory ([`blocked_dot`]).
    block: Option<DotBlock>,
    /// A loop kernel staging transposed loads through workgroup memory
    /// ([`tiled_transpose`]).
    transpose: Option<TransposeTile>,
    /// A column reduction whose workgroups split the rows ([`column_nest`]).
    columns: Option<ColumnTile>,
    /// Whether the shader binds the kernel's scratch words as `claims` (a replacing
    /// scatter's passes).
    claims: bool,
    /// A scatter's element type: its values are made into the output's bits.
    scatter_elem: Option<ElementType>,
    mapping: Mapping,
    /// Where in `out` the 64-bit helpers the shader calls go ([`wide::helpers_for`]),
    /// once it is written.
    helpers_at: usize,
}

impl<'a> Writer<'a> {
    fn new(e: &'a Elemental, place: &'a Placement<'a>, mapping: Mapping) -> Writer<'a> {
        Writer {
            e,
            place,
            out: String::new(),
            pad: String::new(),
            memo: Memo::default(),
            err: None,
            tmps: 0,
            cooperative: None,
            inits: Vec::new(),
            bound: Vec::new(),
            atomic: false,
            tile: None,
            tile_acc: None,
            block: None,
            transpose: None,
            columns: None,
            claims: false,
            scatter_elem: None,
            mapping,
            helpers_at: 0,
        }
    }

    /// The kernel written, or the first reason it could not be.
    fn finish(mut self, invocations: u64) -> Result<WgslKernel, String> {
        if let Some(why) = self.err {
            return Err(why);
        }
        let helpers = wide::helpers_for(&self.out[self.helpers_at..]);
        self.out.insert_str(self.helpers_at, &helpers);
        for (at, _) in &mut self.bound {
            if *at >= self.helpers_at {
                *at += helpers.len();
            }
        }
        let line_hlo = line_origins(self.e, &self.out, &self.bound);
        Ok(WgslKernel {
            source: self.out,
            invocations,
            mapping: self.mapping,
            line_hlo,
            before: Vec::new(),
            scratch_words: 0,
        })
    }
}

impl Writer<'_> {
    fn line(&mut self, text: std::fmt::Arguments) {
        let _ = writeln!(self.out, "{}{text}", self.pad);
    }

    /// The arena's word at `index` (an expression of type u32), read.
    fn word(&self, index: &str) -> String {
        if self.atomic {
            format!("atomicLoad(&arena[{index}])")
        } else {
            format!("arena[{index}]")
        }
    }

    /// Stores `v` (a value of `elem`) at element `at` (a `u32` expression) of the output at
    /// word `base`, an element no other invocation writes: a narrow one inside its word
    /// by bit operations, which leave its neighbours (others' elements) alone.
    fn store_alone(&mut self, base: u64, at: &str, elem: ElementType, v: &str) {
        let Some((per_word, width, mask)) = packing(elem) else {
            let bits = if elem == ElementType::U32 { v.to_string() } else { format!("bitcast<u32>({v})") };
            self.line(format_args!("atomicStore(&arena[{base}u + {at}], {bits});"));
            return;
        };
        let t = self.tmps;
        self.tmps += 1;
        let word = format!("&arena[{base}u + ({at}) / {per_word}u]");
        self.line(format_args!("let s{t} = (({at}) % {per_word}u) * {width}u;"));
        self.line(format_args!("let b{t} = {};", narrow_bits(elem, v, mask)));
        self.line(format_args!("atomicAnd({word}, ~({mask} << s{t}));"));
        self.line(format_args!("atomicOr({word}, b{t} << s{t});"));
    }

    /// Combines `x` into element `at` of the output at word `base` with `op`, atomically:
    /// a compare-exchange loop over the element's word, around the op's own semantics
    /// (a narrow element's neighbours, written by others, make it retry, never change).
    fn combine_in_word(&mut self, base: u64, at: &str, elem: ElementType, op: BinaryOp, x: &str) {
        let (per_word, width, mask) = packing(elem).unwrap_or((1, 32, "0xffffffffu"));
        self.line(format_args!("let p = &arena[{base}u + u32({at}) / {per_word}u];"));
        self.line(format_args!("let s = (u32({at}) % {per_word}u) * {width}u;"));
        self.line(format_args!("var old = atomicLoad(p);"));
        self.line(format_args!("loop {{"));
        let current = match packing(elem) {
            Some(_) => narrow_value(elem, &format!("((old >> s) & {mask})")),
            None if elem == ElementType::U32 => "old".into(),
            None => format!("bitcast<{}>(old)", value_type(elem).unwrap_or("f32")),
        };
        let next = self.binary(op, elem, current, x.to_string());
        let bits = match packing(elem) {
            Some(_) => format!("(old & ~({mask} << s)) | (({}) << s)", narrow_bits(elem, &next, mask)),
            None => format!("bitcast<u32>({next})"),
        };
        self.line(format_args!("  let r = atomicCompareExchangeWeak(p, old, {bits});"));
        self.line(format_args!("  if (r.exchanged) {{ break; }}"));
        self.line(format_args!("  old = r.old_value;"));
        self.line(format_args!("}}"));
    }

    /// Whether a workgroup (not an invocation) takes each of the outer positions.
    fn per_workgroup(&self) -> bool {
        self.mapping.per_block()
    }

    fn header(&mut self, title: &str, invocations: u64) {
        let names = fused_names(self.e);
        let each = match self.mapping {
            Mapping::Elements | Mapping::Quads => format!("{invocations} invocations"),
            Mapping::BlockReduction => format!("{invocations} workgroups of {WORKGROUP}, one per output element"),
            Mapping::DotTiles => {
                format!("{invocations} invocations, each a {DOT_TILE}x{DOT_TILE} block of the dot's outputs")
            }
            Mapping::DotBlocks => {
                let side = dot_block_side(WORKGROUP);
                format!("{invocations} workgroups of {WORKGROUP}, each a {side}x{side} block of the dot's outputs")
            }
            Mapping::TransposeTiles => {
                format!("{invocations} workgroups of {WORKGROUP}, each a {TRANSPOSE_TILE}x{TRANSPOSE_TILE} tile")
            }
            Mapping::ColumnTiles => format!("{invocations} workgroups of {WORKGROUP}, each {COLUMN_RUN} columns"),
            Mapping::AtomicUpdates => format!("{invocations} invocations, one per update element"),
        };
        let _ = writeln!(self.out, "// {title}: {each}");
        if !names.is_empty() {
            let list: Vec<String> = names.iter().map(|n| format!("%{n}")).collect();
            let _ = writeln!(self.out, "// fuses {}", list.join(", "));
        }
        self.out += if self.atomic {
            "@group(0) @binding(0) var<storage, read_write> arena: array<atomic<u32>>;\n\n"
        } else {
            "@group(0) @binding(0) var<storage, read_write> arena: array<u32>;\n\n"
        };
        if self.claims {
            self.out.truncate(self.out.len() - 1);
            self.out += "@group(0) @binding(1) var<storage, read_write> claims: array<atomic<u32>>;\n\n";
        }
        self.out += "fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n";
        let e = self.e;
        // The rounding helpers where an f16 or bf16 value is made (not only loaded).
        let makes = |t: ElementType| {
            e.nodes.iter().any(|n| n.elem == t && !matches!(n.node, Node::Load { .. }))
                || e.outputs.iter().any(|o| o.elem == t)
                || self.scatter_elem == Some(t)
        };
        if makes(ElementType::F16) {
            self.out += F16_BITS;
        }
        if makes(ElementType::BF16) {
            self.out += BF16_BITS;
        }
        if e.nodes
            .iter()
            .any(|n| matches!(n.node, Node::Binary(BinaryOp::Rem, ..)) && carrier(n.elem) == ElementType::F32)
        {
            self.out += FMOD_F32;
        }
        self.out += "fn f32_bits(b: u32) -> f32 { return bitcast<f32>(b); }\n";
        self.out +=
            "fn total_key(x: f32) -> i32 { let k = bitcast<i32>(x); return select(k, k ^ 0x7fffffff, k < 0); }\n";
        self.helpers_at = self.out.len();
        self.out += "\n";
        if self.cooperative.is_some() || self.columns.is_some() {
            // Each reduction's partial accumulators, one per invocation of the workgroup.
            for (k, r) in self.e.reductions.iter().enumerate() {
                let ty = value_type(self.e.expr(r.values[0]).elem).unwrap_or("f32");
                let _ = writeln!(self.out, "var<workgroup> part{k}: array<{ty}, {WORKGROUP}>;");
            }
            self.out += "\n";
        }
        if let Some(t) = &self.transpose {
            // A tile per staged load, each row one longer than the tile (no bank conflicts).
            for (k, &x) in t.loads.iter().enumerate() {
                let ty = value_type(self.e.expr(x).elem).unwrap_or("f32");
                let _ = writeln!(self.out, "var<workgroup> tile{k}: array<{ty}, {}>;", TransposeTile::shared_len());
            }
            self.out += "\n";
        }
        if let Some(b) = &self.block {
            // A slice of each factor: steps of the contraction by rows (columns) of the block.
            let n = b.shared_len();
            let _ =
                writeln!(self.out, "var<workgroup> dot_a: array<f32, {n}>;\nvar<workgroup> dot_b: array<f32, {n}>;\n");
        }
        let _ = writeln!(self.out, "@compute @workgroup_size({WORKGROUP})");
        self.out += if self.per_workgroup() {
            "fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {\n"
        } else {
            "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {\n"
        };
    }

    /// The grid-stride loop over the outer elements, each one the driver's element.
    fn body(&mut self, outer: &[u32], invocations: u64) {
        if invocations == 0 {
            // Never dispatched; an empty body (the outer positions would divide by 0)
            // that still names the arena, so the pipeline's layout has its binding.
            let word = self.word("0u");
            let _ = writeln!(self.out, "  _ = {word};\n}}");
            return;
        }
        if self.per_workgroup() {
            let _ = writeln!(self.out, "  for (var t: u32 = wid.x; t < {invocations}u; t += groups.x) {{");
        } else {
            let _ =
                writeln!(self.out, "  for (var t: u32 = gid.x; t < {invocations}u; t += groups.x * {WORKGROUP}u) {{");
        }
        self.pad = "    ".into();
        if let Some(block) = self.block {
            blocked_dot(self, "t", WORKGROUP, block);
            self.out += "  }\n}\n";
            return;
        }
        if let Some(tile) = self.tile {
            tiled_dot(self, "t", tile);
            self.out += "  }\n}\n";
            return;
        }
        if let Some(tile) = self.transpose.clone() {
            tiled_transpose(self, "t", WORKGROUP, &tile);
            self.out += "  }\n}\n";
            return;
        }
        match self.columns.clone() {
            Some(columns) => column_position(self, "t", &columns),
            // The outer variables from the invocation's row-major position among them.
            None => self.unravel("t", outer, "q"),
        }
        self.element();
        if self.cooperative.is_some() || self.columns.is_some() {
            // The next element's partials overwrite this one's only after all have read.
            self.line(format_args!("workgroupBarrier();"));
        }
        self.out += "  }\n}\n";
    }

    /// Defines variables `vars` (`v{k}`) from `flat`, their row-major position among
    /// them; the quotients are named `{quotient}{k}`.
    fn unravel(&mut self, flat: &str, vars: &[u32], quotient: &str) {
        let named: Vec<_> = vars.iter().map(|&v| (v, format!("v{v}"), self.e.space[v as usize])).collect();
        self.unravel_as(flat, &named, quotient);
    }

    /// Defines each `(v, name, extent)` (`i32`) from `flat` (`u32`), their row-major
    /// position among them; the quotients are named `{quotient}{v}`.
    fn unravel_as(&mut self, flat: &str, vars: &[(u32, String, i64)], quotient: &str) {
        let mut rest = flat.to_string();
        for (k, (v, name, n)) in vars.iter().enumerate().rev() {
            if k == 0 {
                self.line(format_args!("let {name} = i32({rest});"));
            } else {
                self.line(format_args!("let {name} = i32({rest} % {n}u);"));
                self.line(format_args!("let {quotient}{v} = {rest} / {n}u;"));
                rest = format!("{quotient}{v}");
            }
        }
    }

    fn int(&mut self, c: i64) -> String {
        int_literal(c).unwrap_or_else(|why| {
            self.fail(why);
            "0".into()
        })
    }

    /// `Err`'s reason recorded, and a placeholder for the kernel that is discarded.
    fn refuse(&mut self, r: Result<String, String>) -> String {
        r.unwrap_or_else(|why| {
            self.fail(why);
            "0".into()
        })
    }
}

impl Writer<'_> {
    /// The reduced variables of a cooperative reduction as one loop over their
    /// row-major position, strided by the workgroup's invocations; then the partials
    /// tree-reduced in workgroup memory, and each total combined with its init.
    fn cooperative_nest(&mut self, vars: &[u32], ops: &[BinaryOp], body: &mut dyn FnMut(&mut Self)) {
        let e = self.e;
        let n: i64 = vars.iter().map(|&v| e.space[v as usize]).product();
        let (saved, saved_indices) = (self.memo.values.clone(), self.memo.indices.clone());
        self.line(format_args!("for (var r: u32 = lid.x; r < {n}u; r += {WORKGROUP}u) {{"));
        self.pad += "  ";
        self.unravel("r", vars, "rq");
        body(self);
        self.pad.truncate(self.pad.len() - 2);
        self.line(format_args!("}}"));
        self.memo.values = saved;
        self.memo.indices = saved_indices;
        let elems: Vec<ElementType> = e.reductions.iter().map(|r| e.expr(r.values[0]).elem).collect();
        for k in 0..ops.len() {
            self.line(format_args!("part{k}[lid.x] = acc{k}_0;"));
        }
        self.line(format_args!("workgroupBarrier();"));
        self.line(format_args!("for (var s: u32 = {}u; s > 0u; s = s >> 1u) {{", WORKGROUP / 2));
        self.line(format_args!("  if (lid.x < s) {{"));
        for (k, &op) in ops.iter().enumerate() {
            let r = binary(op, elems[k], &format!("part{k}[lid.x]"), &format!("part{k}[lid.x + s]"));
            let r = self.refuse(r);
            self.line(format_args!("    part{k}[lid.x] = {r};"));
        }
        self.line(format_args!("  }}"));
        self.line(format_args!("  workgroupBarrier();"));
        self.line(format_args!("}}"));
        let inits = std::mem::take(&mut self.inits);
        for (k, &op) in ops.iter().enumerate() {
            let r = binary(op, elems[k], &inits[k][0], &format!("part{k}[0]"));
            let r = self.refuse(r);
            self.line(format_args!("acc{k}_0 = {r};"));
        }
    }
}

impl<'a> TileSpelling<'a> for Writer<'a> {
    fn line(&mut self, text: std::fmt::Arguments) {
        Writer::line(self, text);
    }
    fn pad(&mut self) -> &mut String {
        &mut self.pad
    }
    fn set_tile_acc(&mut self, acc: Option<String>) {
        self.tile_acc = acc;
    }
    fn unravel_as(&mut self, flat: &str, vars: &[(u32, String, i64)], quotient: &str) {
        Writer::unravel_as(self, flat, vars, quotient);
    }
    fn declare_f32(&mut self, name: &str, init: Option<&str>) {
        match init {
            Some(init) => self.line(format_args!("var {name}: f32 = {init};")),
            None => self.line(format_args!("var {name}: f32;")),
        }
    }
    fn define_index(&mut self, name: &str, value: &str) {
        self.line(format_args!("let {name} = {value};"));
    }
    fn open_loop(&mut self, name: &str, from: &str, below: i64, step: i64) {
        let n = self.int(below);
        let next = if step == 1 { format!("{name}++") } else { format!("{name} += {}", self.int(step)) };
        self.line(format_args!("for (var {name}: i32 = {from}; {name} < {n}; {next}) {{"));
    }
    fn thread_in_block(&mut self) -> String {
        "i32(lid.x)".into()
    }
    fn barrier(&mut self) {
        self.line(format_args!("workgroupBarrier();"));
    }
}

impl<'a> Lower<'a> for Writer<'a> {
    type Value = String;
    type Index = String;

    fn elemental(&self) -> &'a Elemental {
        self.e
    }

    fn memo(&mut self) -> &mut Memo<String, String> {
        &mut self.memo
    }

    fn fail(&mut self, why: String) {
        self.err.get_or_insert(why);
    }

    fn var(&mut self, v: u32) -> String {
        format!("v{v}")
    }

    fn index_const(&mut self, c: i64) -> String {
        self.int(c)
    }

    fn index_add(&mut self, a: String, b: String) -> String {
        if a == "0" {
            return b;
        }
        format!("({a} + {b})")
    }

    fn index_mul(&mut self, a: String, k: i64) -> String {
        if k == 1 {
            return a;
        }
        format!("({a} * {})", self.int(k))
    }

    fn index_div(&mut self, a: String, k: i64) -> String {
        format!("({a} / {})", self.int(k))
    }

    fn index_rem(&mut self, a: String, k: i64) -> String {
        format!("({a} % {})", self.int(k))
    }

    /// The bounds cut to 32 bits: the operand is within them.
    fn index_clamp(&mut self, a: String, lo: i64, hi: i64) -> String {
        let cut = |b: i64| b.clamp(i32::MIN as i64, i32::MAX as i64);
        format!("clamp({a}, {}, {})", self.int(cut(lo)), self.int(cut(hi)))
    }

    fn data_index(&mut self, elem: ElementType, v: String) -> String {
        match elem {
            ElementType::S32 | ElementType::S8 | ElementType::S16 => v,
            ElementType::U8 | ElementType::U16 => format!("i32({v})"),
            // Saturating, as the plan's data index is.
            ElementType::U32 => format!("i32(min({v}, 2147483647u))"),
            ElementType::Pred => format!("select(0, 1, {v})"),
            t if wide(t) => wide::data_index(t, &v),
            t => self.refuse(Err(format!("a data index of type {t}"))),
        }
    }

    /// A 32-bit element is its word; a narrower one is read out of its word
    /// (little-endian: element `i` of a byte buffer is byte `i % 4` of word `i / 4`); a
    /// 64-bit one is two words, low first.
    fn load(&mut self, x: ExprId, input: u32, linear: IdxId) -> String {
        use ElementType::*;
        let at = self.index(linear);
        let base = self.place.inputs[input as usize];
        let elem = self.e.expr(x).elem;
        let bytes = elem.byte_size();
        if bytes == 4 {
            let word = self.word(&format!("{base}u + u32({at})"));
            return match elem {
                U32 => word,
                _ => format!("bitcast<{}>({word})", value_type(elem).unwrap_or("f32")),
            };
        }
        if bytes == 8 {
            let t = self.tmps;
            self.tmps += 1;
            self.line(format_args!("let wi{t} = {base}u + 2u * u32({at});"));
            let (low, high) = (self.word(&format!("wi{t}")), self.word(&format!("wi{t} + 1u")));
            return format!("vec2<u32>({low}, {high})");
        }
        let per_word = 4 / bytes;
        let bits = bytes * 8;
        let mask = if bytes == 1 { "0xffu" } else { "0xffffu" };
        let word = self.word(&format!("{base}u + u32({at}) / {per_word}u"));
        let field = format!("(({word} >> ((u32({at}) % {per_word}u) * {bits}u)) & {mask})");
        match elem {
            Pred => format!("({field} != 0u)"),
            U8 | U16 | S8 | S16 | F16 | BF16 => narrow_value(elem, &field),
            t => self.refuse(Err(format!("a {t} load"))),
        }
    }

    fn constant(&mut self, elem: ElementType, s: Scalar) -> String {
        // A narrow constant is its value in its carrier (exact).
        let c = constant(s, carrier(elem));
        self.refuse(c)
    }

    fn iota(&mut self, i: IdxId, elem: ElementType) -> String {
        let v = self.index(i);
        match elem {
            ElementType::Pred => format!("({v} != 0)"),
            t if wide(t) => wide::from_index(&v),
            _ => format!("{}({v})", value_type(elem).unwrap_or("f32")),
        }
    }

    /// The index is an `i32`: a bound past 32 bits decides the comparison by itself.
    fn in_range(&mut self, i: IdxId, lo: i64, hi: i64) -> String {
        let (min, max) = (i32::MIN as i64, i32::MAX as i64);
        if lo > max || hi <= min || lo >= hi {
            return "false".into();
        }
        let v = self.index(i);
        let mut holds = Vec::new();
        if lo > min {
            holds.push(format!("{v} >= {}", self.int(lo)));
        }
        if hi <= max {
            holds.push(format!("{v} < {}", self.int(hi)));
        }
        if holds.is_empty() {
            return "true".into();
        }
        format!("({})", holds.join(" && "))
    }

    fn unary(&mut self, op: UnaryOp, from: ElementType, elem: ElementType, a: String) -> String {
        if op == UnaryOp::IsFinite && from == ElementType::F32 {
            return format!("((bitcast<u32>({a}) & 0x7f800000u) != 0x7f800000u)");
        }
        // A narrow integer's bits are the carrier's low ones; the rest are its extension.
        if matches!(op, UnaryOp::PopCnt | UnaryOp::Clz) && narrow(from) && !from.is_float() {
            let width = from.bit_width();
            let unsigned = carrier(from) == ElementType::U32;
            let (mask, extra) = if unsigned {
                (format!("{}u", (1u32 << width) - 1), format!("{}u", 32 - width))
            } else {
                (format!("{}", (1u32 << width) - 1), format!("{}", 32 - width))
            };
            return match op {
                UnaryOp::PopCnt => format!("countOneBits({a} & {mask})"),
                _ => format!("(countLeadingZeros({a} & {mask}) - {extra})"),
            };
        }
        let elem = carrier(elem);
        if elem == ElementType::F32 && approx::approximated(op) {
            let mut lanes = approx::WgslLanes { out: &mut self.out, pad: &self.pad, next: &mut self.tmps };
            if let Some(y) = approx::unary(&mut lanes, op, &a) {
                return y.to_string();
            }
        }
        let u = unary(op, elem, &a);
        self.refuse(u)
    }

    fn binary(&mut self, op: BinaryOp, elem: ElementType, a: String, b: String) -> String {
        if let Some(shifted) = narrow_shift(op, elem, &a, &b) {
            return shifted;
        }
        let elem = carrier(elem);
        if elem == ElementType::F32 {
            let mut lanes = approx::WgslLanes { out: &mut self.out, pad: &self.pad, next: &mut self.tmps };
            if let Some(y) = approx::binary(&mut lanes, op, &a, &b) {
                return y.to_string();
            }
        }
        let r = binary(op, elem, &a, &b);
        self.refuse(r)
    }

    fn compare(&mut self, dir: CmpDir, total: bool, elem: ElementType, a: String, b: String) -> String {
        let r = compare(dir, total, carrier(elem), &a, &b);
        self.refuse(r)
    }

    fn select(&mut self, p: String, t: String, f: String) -> String {
        format!("select({f}, {t}, {p})")
    }

    fn clamp(&mut self, elem: ElementType, lo: String, x: String, hi: String) -> String {
        let elem = carrier(elem);
        let low = binary(BinaryOp::Max, elem, &x, &lo).map(|low| format!("({low})"));
        let r = low.and_then(|low| binary(BinaryOp::Min, elem, &low, &hi));
        self.refuse(r)
    }

    fn convert(&mut self, from: ElementType, to: ElementType, v: String) -> String {
        // Narrow values are exact in their carriers ([`carrier`]); a convert to one
        // rounds or wraps its 32-bit operand into the carrier (the check in `emit`).
        let r = if narrow(to) { convert_to_narrow(from, to, &v) } else { convert(carrier(from), to, &v) };
        self.refuse(r)
    }

    fn bitcast(&mut self, from: ElementType, to: ElementType, v: String) -> String {
        if from == ElementType::Pred || to == ElementType::Pred {
            return self.refuse(Err("a bitcast-convert of pred".into()));
        }
        if wide(from) && wide(to) {
            return v;
        }
        if narrow(from) {
            // The pattern from the carrier, then the carrier of the other type.
            let bits = match from {
                ElementType::BF16 => format!("(bitcast<u32>({v}) >> 16u)"),
                _ => format!("(bitcast<u32>({v}) & {:#x}u)", (1u32 << from.bit_width()) - 1),
            };
            return narrow_value(to, &bits);
        }
        format!("bitcast<{}>({v})", value_type(to).unwrap_or("f32"))
    }

    fn accumulator(&mut self, red: u32, i: u32) -> String {
        match &self.tile_acc {
            Some(acc) => acc.clone(),
            None => format!("acc{red}_{i}"),
        }
    }

    /// The reduced loops (the only nest the driver asks for: the outer variables come
    /// from the invocation), with what they read but do not change defined once before
    /// them; what is defined inside is forgotten when they close.
    fn nest(&mut self, vars: &[u32], body: &mut dyn FnMut(&mut Self)) {
        for x in loop_invariants(self.e) {
            self.value(x);
        }
        if let Some(ops) = self.cooperative.clone() {
            return self.cooperative_nest(vars, &ops, body);
        }
        if let Some(columns) = self.columns.clone() {
            let inits = std::mem::take(&mut self.inits).into_iter().map(|mut i| i.swap_remove(0)).collect();
            return column_nest(self, vars, &columns, inits, body);
        }
        let (saved, saved_indices) = (self.memo.values.clone(), self.memo.indices.clone());
        for &v in vars {
            let n = self.e.space[v as usize];
            self.line(format_args!("for (var v{v}: i32 = 0; v{v} < {n}; v{v}++) {{"));
            self.pad += "  ";
        }
        body(self);
        for _ in vars {
            self.pad.truncate(self.pad.len() - 2);
            self.line(format_args!("}}"));
        }
        self.memo.values = saved;
        self.memo.indices = saved_indices;
    }

    /// A cooperative or column reduction's partials start from the identity; the inits
    /// join at the end ([`Writer::cooperative_nest`], [`column_nest`]).
    fn begin_accumulators(&mut self, inits: Vec<Vec<String>>) {
        let e = self.e;
        if let Some(ops) = self.cooperative.clone().or_else(|| self.columns.as_ref().map(|c| c.ops.clone())) {
            for (k, r) in e.reductions.iter().enumerate() {
                let elem = e.expr(r.values[0]).elem;
                let ty = value_type(elem).unwrap_or("f32");
                let id = reduction::identity(ops[k], elem).map(|s| constant(s, elem));
                let id =
                    self.refuse(id.unwrap_or_else(|| Err(format!("no identity of {} on {elem}", ops[k].hlo_name()))));
                self.line(format_args!("var acc{k}_0: {ty} = {id};"));
            }
            self.inits = inits;
            return;
        }
        for (k, vals) in inits.into_iter().enumerate() {
            for (i, v) in vals.into_iter().enumerate() {
                let ty = value_type(e.expr(e.reductions[k].inits[i]).elem).unwrap_or("f32");
                self.line(format_args!("var acc{k}_{i}: {ty} = {v};"));
            }
        }
    }

    /// Through fresh names: a combiner may return another accumulator as it is.
    fn update_accumulators(&mut self, updates: Vec<(u32, u32, String)>) {
        for (k, i, v) in &updates {
            self.line(format_args!("let next{k}_{i} = {v};"));
        }
        for (k, i, _) in updates {
            self.line(format_args!("acc{k}_{i} = next{k}_{i};"));
        }
    }

    fn store(&mut self, o: usize, v: String) {
        use ElementType::*;
        let out = &self.e.outputs[o];
        // An outer output's store position (the plan's store strides over the kept
        // variables) is the invocation's own index `t`, by the mapping in `body`, except
        // where an invocation computes elements other than its own (tiles).
        let own = out.inner || !self.mapping.stores_at_position();
        let at = if own { format!("u32({})", self.store_index(o)) } else { "t".into() };
        let base = self.place.outputs[o];
        // A block reduction's results: every invocation has them, one stores; a column
        // reduction's: lane 0 of each column inside the result.
        let guard = match &self.columns {
            _ if out.inner => String::new(),
            Some(columns) => format!("if ({}) {{ ", column_store_guard(self, &columns.clone())),
            None if self.cooperative.is_some() => "if (lid.x == 0u) { ".into(),
            None => String::new(),
        };
        let end = if guard.is_empty() { "" } else { " }" };
        let bytes = out.elem.byte_size();
        if bytes == 4 {
            let bits = if out.elem == U32 { v } else { format!("bitcast<u32>({v})") };
            let store = if self.atomic {
                format!("atomicStore(&arena[{base}u + {at}], {bits});")
            } else {
                format!("arena[{base}u + {at}] = {bits};")
            };
            self.line(format_args!("{guard}{store}{end}"));
            return;
        }
        if bytes == 8 {
            // Two words, low first; the invocation's own, so plain stores unless the
            // arena is atomic.
            let t = self.tmps;
            self.tmps += 1;
            let pad = self.pad.clone();
            if !guard.is_empty() {
                self.line(format_args!("{}", guard.trim_end()));
                self.pad += "  ";
            }
            self.line(format_args!("let wi{t} = {base}u + 2u * ({at});"));
            self.line(format_args!("let wv{t} = {v};"));
            for (k, part) in [(0, "x"), (1, "y")] {
                if self.atomic {
                    self.line(format_args!("atomicStore(&arena[wi{t} + {k}u], wv{t}.{part});"));
                } else {
                    self.line(format_args!("arena[wi{t} + {k}u] = wv{t}.{part};"));
                }
            }
            self.pad = pad;
            if !guard.is_empty() {
                self.line(format_args!("}}"));
            }
            return;
        }
        // A narrow element shares its word: set by bit operations (the arena is atomic).
        let pad = self.pad.clone();
        if !guard.is_empty() {
            self.line(format_args!("{}", guard.trim_end()));
            self.pad += "  ";
        }
        self.store_alone(base, &at, out.elem, &v);
        self.pad = pad;
        if !guard.is_empty() {
            self.line(format_args!("}}"));
        }
    }

    /// Scopes are lexical: what is defined before a loop stays visible in it.
    fn new_region(&mut self) {}

    /// Every computed value gets a name, defined where it is first needed.
    fn bind(&mut self, x: ExprId, v: String) -> String {
        let expr = self.e.expr(x);
        if matches!(expr.node, Node::Acc { .. } | Node::Arg { .. } | Node::Reduced { .. } | Node::Const(_)) {
            return v;
        }
        let ty = value_type(expr.elem).unwrap_or("f32");
        // A narrow result computed in its carrier, back to its type (loads, converts,
        // bitcasts and selects of narrow values are already of it).
        let made =
            !matches!(expr.node, Node::Load { .. } | Node::Convert(_) | Node::BitcastConvert(_) | Node::Select { .. });
        let v = if narrow(expr.elem) && made { to_narrow(expr.elem, &v) } else { v };
        self.bound.push((self.out.len(), x.0));
        self.line(format_args!("let e{}: {ty} = {v};", x.0));
        format!("e{}", x.0)
    }
}

fn int_literal(c: i64) -> Result<String, String> {
    if c == i32::MIN as i64 {
        return Ok("(-2147483647 - 1)".into());
    }
    if c < i32::MIN as i64 || c > i32::MAX as i64 {
        return Err(format!("an index constant {c} past 32 bits"));
    }
    Ok(if c < 0 { format!("({c})") } else { c.to_string() })
}

fn constant(s: Scalar, elem: ElementType) -> Result<String, String> {
    Ok(match elem {
        t if wide(t) => wide::constant(s, t),
        ElementType::Pred => (s.as_f64() != 0.0).to_string(),
        ElementType::F32 => approx::f32_literal(s.as_f64() as f32),
        ElementType::S32 => {
            let v = match s {
                Scalar::S(v) => v,
                Scalar::U(v) => v as i64,
                other => other.as_f64() as i64,
            };
            format!("i32({})", int_literal(v)?)
        }
        ElementType::U32 => {
            let v = match s {
                Scalar::U(v) => v,
                Scalar::S(v) => v as u64,
                other => other.as_f64() as u64,
            };
            format!("{}u", v as u32)
        }
        t => return Err(format!("a {t} constant")),
    })
}

fn unary(op: UnaryOp, elem: ElementType, a: &str) -> Result<String, String> {
    use UnaryOp::*;
    if wide(elem) {
        return wide::unary(op, elem, a);
    }
    let float = elem == ElementType::F32;
    Ok(match op {
        Neg if elem == ElementType::U32 => format!("(0u - {a})"),
        Neg => format!("(-{a})"),
        Abs if elem == ElementType::U32 => a.to_string(),
        Abs => format!("abs({a})"),
        Not if elem == ElementType::Pred => format!("(!{a})"),
        Not => format!("(~{a})"),
        Sqrt if float => format!("sqrt({a})"),
        Rsqrt if float => format!("inverseSqrt({a})"),
        Floor if float => format!("floor({a})"),
        Ceil if float => format!("ceil({a})"),
        RoundEven if float => format!("round({a})"),
        // trunc, then one away from zero when the dropped part is at least a half.
        RoundAfz if float => format!("select(trunc({a}), trunc({a}) + sign({a}), abs({a} - trunc({a})) >= 0.5f)"),
        // Zeros keep their sign, NaN stays NaN.
        Sign if float => format!("select(sign({a}), {a}, is_nan({a}) || {a} == 0.0f)"),
        Sign if elem == ElementType::S32 => format!("sign({a})"),
        Sign if elem == ElementType::U32 => format!("min({a}, 1u)"),
        PopCnt if !float && elem != ElementType::Pred => format!("countOneBits({a})"),
        Clz if !float && elem != ElementType::Pred => format!("countLeadingZeros({a})"),
        other => return Err(format!("{} on {elem} is not emitted for webgpu yet", other.hlo_name())),
    })
}

fn binary(op: BinaryOp, elem: ElementType, a: &str, b: &str) -> Result<String, String> {
    use BinaryOp::*;
    if wide(elem) {
        return wide::binary(op, elem, a, b);
    }
    let int = matches!(elem, ElementType::S32 | ElementType::U32);
    let pred = elem == ElementType::Pred;
    let all_ones = if elem == ElementType::U32 { "0xffffffffu" } else { "-1" };
    let zero = if elem == ElementType::U32 { "0u" } else { "0" };
    Ok(match op {
        Add if pred => format!("({a} || {b})"),
        Mul if pred => format!("({a} && {b})"),
        Add => format!("({a} + {b})"),
        Sub if !pred => format!("({a} - {b})"),
        Mul => format!("({a} * {b})"),
        // WGSL gives the dividend for x / 0 (and INT_MIN / -1, as HLO); HLO wants -1
        // (all ones unsigned).
        Div if int => format!("select({a} / {b}, {all_ones}, {b} == {zero})"),
        Div if !pred => format!("({a} / {b})"),
        // HLO: x % 0 = x (WGSL gives 0).
        Rem if int => format!("select({a} % {b}, {a}, {b} == {zero})"),
        // C's fmod, exact ([`FMOD_F32`]); WGSL's `%` is `x - y * trunc(x / y)`, rounded.
        Rem if elem == ElementType::F32 => format!("fmod_f32({a}, {b})"),

        // NaN in, NaN out (WGSL's max and min need not propagate it).
        Max if elem == ElementType::F32 => format!("select(select(max({a}, {b}), {a}, is_nan({a})), {b}, is_nan({b}))"),
        Min if elem == ElementType::F32 => format!("select(select(min({a}, {b}), {a}, is_nan({a})), {b}, is_nan({b}))"),
        Max if pred => format!("({a} || {b})"),
        Min if pred => format!("({a} && {b})"),
        Max => format!("max({a}, {b})"),
        Min => format!("min({a}, {b})"),
        And if pred => format!("({a} && {b})"),
        Or if pred => format!("({a} || {b})"),
        Xor if pred => format!("({a} != {b})"),
        And if int => format!("({a} & {b})"),
        Or if int => format!("({a} | {b})"),
        Xor if int => format!("({a} ^ {b})"),
        // Shift counts are unsigned; at or past the width, left and logical shifts give 0
        // and arithmetic ones the sign (WGSL would take the count modulo 32). The count is
        // masked even so: a constant count past the width is a WGSL error.
        ShiftLeft if int => format!("select({a} << (u32({b}) & 31u), {zero}, u32({b}) >= 32u)"),
        ShiftRightLogical if elem == ElementType::U32 => format!("select({a} >> ({b} & 31u), 0u, {b} >= 32u)"),
        ShiftRightLogical if int => {
            format!("select(bitcast<i32>(bitcast<u32>({a}) >> (u32({b}) & 31u)), 0, u32({b}) >= 32u)")
        }
        ShiftRightArithmetic if elem == ElementType::S32 => format!("({a} >> min(u32({b}), 31u))"),
        ShiftRightArithmetic if elem == ElementType::U32 => {
            format!("bitcast<u32>(bitcast<i32>({a}) >> min({b}, 31u))")
        }
        other => return Err(format!("{} on {elem} is not emitted for webgpu yet", other.hlo_name())),
    })
}

/// The right shifts that must see a narrow value's own pattern, not its carrier's
/// extension: a logical one of a signed value (its sign bit shifted in as a plain bit)
/// and an arithmetic one of an unsigned value (its top bit is the sign). Counts at or
/// past the width give 0, or the sign, as HLO says.
fn narrow_shift(op: BinaryOp, elem: ElementType, a: &str, b: &str) -> Option<String> {
    use ElementType::*;
    match (op, elem) {
        (BinaryOp::ShiftRightLogical, S8 | S16) => {
            let mask = (1u32 << elem.bit_width()) - 1;
            Some(format!(
                "select(bitcast<i32>((bitcast<u32>({a}) & {mask:#x}u) >> (u32({b}) & 31u)), 0, u32({b}) >= 32u)"
            ))
        }
        (BinaryOp::ShiftRightArithmetic, U8 | U16) => {
            let sign = 1u32 << (elem.bit_width() - 1);
            Some(format!("bitcast<u32>(((bitcast<i32>({a}) ^ {sign:#x}) - {sign:#x}) >> min({b}, 31u))"))
        }
        _ => None,
    }
}

fn compare(dir: CmpDir, total: bool, elem: ElementType, a: &str, b: &str) -> Result<String, String> {
    if wide(elem) {
        return Ok(wide::compare(dir, elem, a, b));
    }
    let sym = match dir {
        CmpDir::Eq => "==",
        CmpDir::Ne => "!=",
        CmpDir::Lt => "<",
        CmpDir::Le => "<=",
        CmpDir::Gt => ">",
        CmpDir::Ge => ">=",
    };
    Ok(match elem {
        ElementType::F32 if total => format!("(total_key({a}) {sym} total_key({b}))"),
        // IEEE: NaN is unordered, so only != holds.
        ElementType::F32 if dir == CmpDir::Ne => format!("({a} != {b} || is_nan({a}) || is_nan({b}))"),
        ElementType::F32 => format!("({a} {sym} {b} && !is_nan({a}) && !is_nan({b}))"),
        ElementType::Pred => format!("(select(0, 1, {a}) {sym} select(0, 1, {b}))"),
        _ => format!("({a} {sym} {b})"),
    })
}

fn convert(from: ElementType, to: ElementType, v: &str) -> Result<String, String> {
    use ElementType::*;
    if wide(to) {
        return wide::convert_to_wide(from, to, v);
    }
    if wide(from) {
        return wide::convert_from_wide(from, to, v, false);
    }
    Ok(match (from, to) {
        (a, b) if a == b => v.to_string(),
        // NaN is true; drivers may fold `NaN != 0` to false, so it is asked by its bits.
        (_, Pred) if from == F32 => format!("({v} != 0.0f || is_nan({v}))"),
        (_, Pred) if from == U32 => format!("({v} != 0u)"),
        (_, Pred) => format!("({v} != 0)"),
        (Pred, F32) => format!("select(0.0f, 1.0f, {v})"),
        (Pred, S32) => format!("select(0, 1, {v})"),
        (Pred, U32) => format!("select(0u, 1u, {v})"),
        // Saturating (WGSL clamps), NaN to 0.
        // WGSL clamps to the largest float below the bound (2^31 - 128): at or past
        // 2^31 (2^32) the answer is the integer bound itself.
        (F32, S32) => format!("select(select(i32({v}), 2147483647, {v} >= 2147483648.0f), 0, is_nan({v}))"),
        (F32, U32) => format!("select(select(u32({v}), 0xffffffffu, {v} >= 4294967296.0f), 0u, is_nan({v}))"),
        (S32, F32) | (U32, F32) => format!("f32({v})"),
        (S32, U32) => format!("bitcast<u32>({v})"),
        (U32, S32) => format!("bitcast<i32>({v})"),
        (a, b) => return Err(format!("a convert from {a} to {b}")),
    })
}

/// A convert from a value of `from` (in its carrier) to the narrow type `to`, carried
/// as [`carrier`] says: integers wrap, floats saturate to integers (NaN to 0) and round
/// to nearest even to f16 and bf16 (a 32-bit integer to bf16 would round twice through
/// f32: the host does it; narrower ones are exact in f32).
fn convert_to_narrow(from: ElementType, to: ElementType, v: &str) -> Result<String, String> {
    use ElementType::*;
    let bits = to.bit_width();
    if from == to {
        return Ok(v.to_string());
    }
    // An integer from the low word; a float from an f32 rounded to odd (24 bits: the
    // rounding to f16's 11 or bf16's 8 is then the only one).
    if wide(from) {
        return match to {
            F16 | BF16 => Ok(to_narrow(to, &wide::convert_from_wide(from, F32, v, true)?)),
            _ => convert_to_narrow(U32, to, &wide::convert_from_wide(from, U32, v, false)?),
        };
    }
    if matches!((from, to), (S8 | U8 | S16 | U16, BF16)) {
        return Ok(format!("bitcast<f32>(bf16_bits(f32({v})) << 16u)"));
    }
    Ok(match (carrier(from), to) {
        (Pred, S8 | S16) => format!("select(0, 1, {v})"),
        (Pred, U8 | U16) => format!("select(0u, 1u, {v})"),
        (Pred, F16 | BF16) => format!("select(0.0f, 1.0f, {v})"),
        (S32 | U32, S8 | S16) => to_narrow(to, &format!("bitcast<i32>({v})")),
        (S32 | U32, U8 | U16) => format!("(bitcast<u32>({v}) & {:#x}u)", (1u32 << bits) - 1),
        (F32, S8 | S16) => {
            let (lo, hi) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
            format!("select(i32(clamp({v}, {lo}.0f, {hi}.0f)), 0, is_nan({v}))")
        }
        (F32, U8 | U16) => format!("select(u32(clamp({v}, 0.0f, {}.0f)), 0u, is_nan({v}))", (1u64 << bits) - 1),
        (F32, F16) => format!("unpack2x16float(f16_bits({v})).x"),
        (F32, BF16) => format!("bitcast<f32>(bf16_bits({v}) << 16u)"),
        // Exact in f32 up to 2^24, and past 65520 infinite either way.
        (S32 | U32, F16) => format!("unpack2x16float(f16_bits(f32({v}))).x"),
        (a, b) => return Err(format!("a convert from {a} to {b}")),
    })
}

/// `v`, a value of `t`'s carrier, brought to the narrow type `t`: wrapped, or rounded to
/// nearest even.
fn to_narrow(t: ElementType, v: &str) -> String {
    use ElementType::*;
    match t {
        // Sign-extended by xor and subtract: no shift, which WGSL refuses in a constant
        // expression when it overflows.
        S8 | S16 => {
            let (mask, sign) = ((1u32 << t.bit_width()) - 1, 1u32 << (t.bit_width() - 1));
            format!("((({v} & {mask:#x}) ^ {sign:#x}) - {sign:#x})")
        }
        U8 | U16 => format!("({v} & {:#x}u)", (1u32 << t.bit_width()) - 1),
        F16 => format!("unpack2x16float(f16_bits({v})).x"),
        BF16 => format!("bitcast<f32>(bf16_bits({v}) << 16u)"),
        _ => v.to_string(),
    }
}

/// C's `fmod` on f32, exact (as HLO's float `remainder` is): the significands divided bit
/// by bit over the exponents' difference (shift and subtract), subnormals normalized
/// first, the remainder rebuilt with the dividend's sign. It touches only bits, so a
/// device that flushes subnormal arithmetic still gets subnormal results right.
const FMOD_F32: &str = "fn fmod_f32(x: f32, y: f32) -> f32 {
    let sign = bitcast<u32>(x) & 0x80000000u;
    let ax = bitcast<u32>(x) & 0x7fffffffu;
    let ay = bitcast<u32>(y) & 0x7fffffffu;
    // A NaN, an infinite dividend or a zero divisor: NaN.
    if (ax >= 0x7f800000u || ay > 0x7f800000u || ay == 0u) { return f32_bits(0x7fc00000u); }
    // |x| < |y| (an infinite divisor too): x; |x| = |y|: a zero of x's sign.
    if (ax < ay) { return x; }
    if (ax == ay) { return bitcast<f32>(sign); }
    // Significands with bit 23 set, and their exponents.
    var ex = i32(ax >> 23u);
    var ey = i32(ay >> 23u);
    var mx = ax & 0x7fffffu;
    var my = ay & 0x7fffffu;
    if (ex == 0) { let s = countLeadingZeros(mx) - 8u; mx = mx << s; ex = 1 - i32(s); } else { mx = mx | 0x800000u; }
    if (ey == 0) { let s = countLeadingZeros(my) - 8u; my = my << s; ey = 1 - i32(s); } else { my = my | 0x800000u; }
    // mx * 2^(ex - ey) mod my, one quotient bit per step; mx stays below 2 my.
    for (var k = ex; k > ey; k = k - 1) {
        if (mx >= my) { mx = mx - my; }
        if (mx == 0u) { return bitcast<f32>(sign); }
        mx = mx << 1u;
    }
    if (mx >= my) { mx = mx - my; }
    if (mx == 0u) { return bitcast<f32>(sign); }
    // The remainder, renormalized: exactly representable, subnormal below exponent 1.
    let s = countLeadingZeros(mx) - 8u;
    mx = mx << s;
    let er = ey - i32(s);
    if (er >= 1) { return bitcast<f32>(sign | (u32(er) << 23u) | (mx & 0x7fffffu)); }
    return bitcast<f32>(sign | (mx >> u32(1 - er)));
}
";

/// f32 to f16 bits, rounded to nearest even: NaN stays NaN (quieted, its payload's top
/// bits kept), past the largest f16 is infinite, below the smallest normal subnormal.
const F16_BITS: &str = "fn f16_bits(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  if (a > 0x7f800000u) { return sign | 0x7e00u | ((a >> 13u) & 0x3ffu); }
  if (a >= 0x477ff000u) { return sign | 0x7c00u; }
  if (a < 0x38800000u) {
    let e = a >> 23u;
    if (e < 102u) { return sign; }
    let m = (a & 0x7fffffu) | 0x800000u;
    let shift = 126u - e;
    let q = m >> shift;
    let r = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    return sign | (q + select(0u, 1u, r > half || (r == half && (q & 1u) == 1u)));
  }
  let n = a - 0x38000000u;
  let q = n >> 13u;
  let r = n & 0x1fffu;
  return sign | (q + select(0u, 1u, r > 0x1000u || (r == 0x1000u && (q & 1u) == 1u)));
}
";

/// f32 to bf16 bits, rounded to nearest even (NaN quieted).
const BF16_BITS: &str = "fn bf16_bits(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) { return (b >> 16u) | 0x40u; }
  return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}
";
