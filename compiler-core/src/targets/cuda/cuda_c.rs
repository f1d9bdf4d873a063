//! CUDA C for one elemental kernel of the plan: one thread per outer element (a
//! grid-stride loop over them), the reduced variables as a serial loop nest inside it,
//! every buffer a typed pointer into the one arena at its plan offset. Long rows of
//! associative reductions are shared by a block instead ([`cooperative_ops`]): one
//! block per outer element, its threads striding over the reduced elements, the
//! partials reduced within each warp by `__shfl_down_sync`, then across the block's
//! warps through shared memory.
//!
//! The emitter implements the instructions of the lowering driver (`kernel::lower`) and
//! nothing more: the driver walks the elemental description (values, index expressions,
//! store positions, the reduction protocol, what a loop reads unchanged). HLO's element
//! semantics are spelled out where C's own operators differ or are undefined (signed
//! overflow wraps through unsigned arithmetic, division by zero and `MIN / -1`, shifts
//! at or past the width, NaN in max/min, saturating float-to-int conversion through
//! PTX's `cvt.rzi`, which also sends NaN to 0, total-order compares), in the helpers of
//! [`PRELUDE`] or inline; `kernel::semantics` holds the cases they must meet.
//!
//! Types: every HLO element type. 32- and 64-bit values are native; 8- and 16-bit
//! integers are computed in a 32-bit carrier and wrapped back to their width after each
//! op that makes one ([`to_narrow`]); f16 and bf16 are computed in f32 and rounded to
//! nearest even after each op (`cuda_fp16.h`, `cuda_bf16.h`): f32 has more than twice
//! their precision, so one f32 operation rounded again is the narrow operation rounded
//! once. Bytes are addressable, so narrow buffers are plain arrays (no word packing).
//!
//! Indices are `int` where every index expression of the kernel fits 32 bits (as the
//! plan's index ranges say), else `long long`.

use super::approx;
use crate::ir::{BinaryOp, CmpDir, ElementType, Scalar, UnaryOp};
use crate::kernel::atomic_scatter::AtomicScatter;
use crate::kernel::elemental::{Elemental, ExprId, Idx, IdxId, Node};
use crate::kernel::index::{Dependence, IndexAnalysis};
use crate::kernel::lower::{loop_invariants, Lower, Memo};
use crate::kernel::reduction;
pub use crate::targets::cstyle::Mapping;
use crate::targets::cstyle::{
    blocked_dot, column_nest, column_position, column_store_guard, dot_block_side, fused_names, layout, line_origins,
    narrow, scoped, tiled_dot, tiled_transpose, ColumnTile, DotBlock, DotTile, Layout, TileSpelling, TransposeTile,
    DOT_TILE, TRANSPOSE_TILE,
};
use std::fmt::Write;

/// Threads per block.
pub const BLOCK: u32 = 256;
/// Warps per block (a block reduction's partials).
const WARPS: u32 = BLOCK / 32;
/// The most blocks one launch starts (the kernels loop over the rest).
pub const MAX_BLOCKS: u32 = 65535;
/// Columns per block of a column reduction ([`ColumnTile`]): a warp's width, in 8 lanes.
const COLUMN_RUN: i64 = 32;
/// Elements per thread of a loop kernel that moves memory 16 bytes at a time ([`Quads`]).
const QUAD: i64 = 4;
/// The fewest elements a loop kernel has for its threads to take four each.
const MIN_QUADS: i64 = 4096;

/// A loop kernel whose threads each compute [`QUAD`] neighbouring elements along the
/// innermost variable and store them with one vector store per output (every output 4
/// or 2 bytes wide: 16 or 8 bytes a quad, `float4` ... `ushort4`; the innermost extent
/// a multiple of four, so a quad's first element sits at a multiple of four from its
/// buffer's 256-byte aligned start). `loads` are read a quad at a time too: loads of
/// 4- or 2-byte elements contiguous along the innermost variable whose address is a
/// multiple of four where the variable is (its other terms are multiples of four); f16
/// and bf16 lanes convert as single loads do. The other loads are read element by
/// element. Each element is computed as one thread per element computes it.
#[derive(Clone, Debug, PartialEq)]
struct Quads {
    inner: u32,
    loads: Vec<ExprId>,
}

fn quads(e: &Elemental) -> Option<Quads> {
    let inner = e.space.len().checked_sub(1)? as u32;
    let n = e.space[inner as usize];
    if e.is_reduction()
        || n == 0
        || n % QUAD != 0
        || e.space.iter().product::<i64>() < MIN_QUADS
        || e.outputs.is_empty()
        || e.outputs.iter().any(|o| quad_type(o.elem).is_none())
    {
        return None;
    }
    let indices = IndexAnalysis::new(e);
    let aligned = |linear: IdxId| {
        indices.dependence(linear, inner) == Dependence::Affine(1)
            && indices.affine(linear).is_some_and(|f| {
                f.coeffs.iter().enumerate().all(|(v, &c)| v == inner as usize || c % QUAD == 0)
                    && f.atoms.iter().all(|&(_, m)| m % QUAD == 0)
                    && f.constant % QUAD == 0
            })
    };
    let loads = (0..e.nodes.len() as u32)
        .map(ExprId)
        .filter(|&x| {
            let n = e.expr(x);
            quad_type(n.elem).is_some() && matches!(n.node, Node::Load { linear, .. } if aligned(linear))
        })
        .collect();
    Some(Quads { inner, loads })
}

/// CUDA's 4-vector of `t`'s stored type (`None`: no quads of `t`).
fn quad_type(t: ElementType) -> Option<&'static str> {
    use ElementType::*;
    match t {
        F32 => Some("float4"),
        S32 => Some("int4"),
        U32 => Some("uint4"),
        S16 => Some("short4"),
        U16 | F16 | BF16 => Some("ushort4"),
        _ => None,
    }
}

/// Value `v` of type `elem` (in its carrier) as the bits its buffer stores.
fn stored_bits(elem: ElementType, v: String) -> String {
    use ElementType::*;
    match elem {
        Pred => format!("{v} ? 1 : 0"),
        S8 => format!("(signed char){v}"),
        U8 => format!("(unsigned char){v}"),
        S16 => format!("(short){v}"),
        U16 => format!("(unsigned short){v}"),
        F16 => format!("hs_f16_bits({v})"),
        BF16 => format!("hs_bf16_bits({v})"),
        _ => v,
    }
}

/// A stored element `bits` of type `elem` as its value (in its carrier).
fn loaded_value(elem: ElementType, bits: String) -> String {
    match elem {
        ElementType::F16 => format!("hs_from_f16({bits})"),
        ElementType::BF16 => format!("hs_from_bf16({bits})"),
        _ => bits,
    }
}

/// The code every translation unit starts with: the half-precision headers and the
/// helpers for HLO's semantics where C's operators differ, overloaded per type.
pub const PRELUDE: &str = r#"// hloscope CUDA kernels: HLO's element semantics in helpers (kernel::semantics).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// x / 0 is -1 (all ones unsigned), MIN / -1 is MIN: no trap, no undefined value.
__device__ __forceinline__ int hs_div(int a, int b) { return b == 0 ? -1 : b == -1 ? (int)(0u - (unsigned)a) : a / b; }
__device__ __forceinline__ long long hs_div(long long a, long long b) { return b == 0 ? -1LL : b == -1 ? (long long)(0ull - (unsigned long long)a) : a / b; }
__device__ __forceinline__ unsigned hs_div(unsigned a, unsigned b) { return b == 0u ? 0xffffffffu : a / b; }
__device__ __forceinline__ unsigned long long hs_div(unsigned long long a, unsigned long long b) { return b == 0ull ? ~0ull : a / b; }
// x % 0 is x, MIN % -1 is 0; the sign of the dividend.
__device__ __forceinline__ int hs_rem(int a, int b) { return b == 0 ? a : b == -1 ? 0 : a % b; }
__device__ __forceinline__ long long hs_rem(long long a, long long b) { return b == 0 ? a : b == -1 ? 0LL : a % b; }
__device__ __forceinline__ unsigned hs_rem(unsigned a, unsigned b) { return b == 0u ? a : a % b; }
__device__ __forceinline__ unsigned long long hs_rem(unsigned long long a, unsigned long long b) { return b == 0ull ? a : a % b; }
// NaN in, NaN out (fmaxf and fminf return the other operand).
__device__ __forceinline__ float hs_max(float a, float b) { return isnan(a) || isnan(b) ? a + b : fmaxf(a, b); }
__device__ __forceinline__ float hs_min(float a, float b) { return isnan(a) || isnan(b) ? a + b : fminf(a, b); }
__device__ __forceinline__ double hs_max(double a, double b) { return isnan(a) || isnan(b) ? a + b : fmax(a, b); }
__device__ __forceinline__ double hs_min(double a, double b) { return isnan(a) || isnan(b) ? a + b : fmin(a, b); }
// The total order of compare's TOTALORDER: -NaN < -inf < ... < -0 < +0 < ... < inf < NaN.
__device__ __forceinline__ int hs_total_key(float x) { int k = __float_as_int(x); return k < 0 ? k ^ 0x7fffffff : k; }
__device__ __forceinline__ long long hs_total_key(double x) { long long k = __double_as_longlong(x); return k < 0 ? k ^ 0x7fffffffffffffffLL : k; }
// f16 and bf16 values live in floats: rounded to nearest even, read and written as bits.
__device__ __forceinline__ float hs_f16(float x) { return __half2float(__float2half_rn(x)); }
__device__ __forceinline__ float hs_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
__device__ __forceinline__ float hs_from_f16(unsigned short b) { return __half2float(__ushort_as_half(b)); }
__device__ __forceinline__ float hs_from_bf16(unsigned short b) { return __bfloat162float(__ushort_as_bfloat16(b)); }
__device__ __forceinline__ unsigned short hs_f16_bits(float x) { return __half_as_ushort(__float2half_rn(x)); }
__device__ __forceinline__ unsigned short hs_bf16_bits(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
"#;

/// A kernel's CUDA C function and how to launch it.
#[derive(Clone, Debug, PartialEq)]
pub struct CudaKernel {
    /// The `extern "C"` function's name (`hs_k{index}`).
    pub entry: String,
    /// The function with its header comment (compiled after [`PRELUDE`]).
    pub source: String,
    /// Outer elements: one thread each, or one block each for a block reduction, or
    /// for a tiled dot the threads, or for a transpose the tiles (0: nothing to run).
    pub outer: u64,
    pub mapping: Mapping,
    /// Per line of `source`: the HLO instruction its value implements, or "".
    pub line_hlo: Vec<String>,
    /// A function launched before this one, as part of the same kernel: a scatter's
    /// copy of its operand into its output (none when the two share their bytes).
    pub copy_first: Option<Box<CudaKernel>>,
}

impl CudaKernel {
    /// Blocks of [`BLOCK`] threads for one launch (the kernel loops over the rest).
    pub fn blocks(&self) -> u32 {
        let wanted = if self.mapping.per_block() { self.outer } else { self.outer.div_ceil(BLOCK as u64) };
        wanted.min(MAX_BLOCKS as u64) as u32
    }

    /// How it runs, in a few words.
    pub fn runs(&self) -> String {
        match self.mapping {
            Mapping::BlockReduction => format!("block reduction: {} blocks of {BLOCK}", self.blocks()),
            Mapping::DotTiles => {
                format!("dot tiles: {} threads of {DOT_TILE}x{DOT_TILE} outputs, blocks of {BLOCK}", self.outer)
            }
            Mapping::DotBlocks => {
                let side = dot_block_side(BLOCK);
                format!("dot blocks: {} blocks of {BLOCK}, each {side}x{side} outputs", self.outer)
            }
            Mapping::TransposeTiles => format!(
                "transpose tiles: {} blocks of {BLOCK}, each a {TRANSPOSE_TILE}x{TRANSPOSE_TILE} tile",
                self.outer
            ),
            Mapping::ColumnTiles => {
                format!("column tiles: {} blocks of {BLOCK}, each {COLUMN_RUN} columns", self.outer)
            }
            Mapping::AtomicUpdates => format!("atomic updates: {} threads, blocks of {BLOCK}", self.outer),
            Mapping::Elements => format!("{} threads, blocks of {BLOCK}", self.outer),
            Mapping::Quads => {
                format!("quads: {} threads of {QUAD} elements, 16-byte loads and stores, blocks of {BLOCK}", self.outer)
            }
        }
    }
}

/// Where an elemental kernel's buffers are: byte offsets into the arena.
pub struct Placement<'a> {
    pub inputs: &'a [u64],
    pub outputs: &'a [u64],
}

/// The CUDA C of `e` as function `entry`, with a header naming the kernel `title`; or
/// why it is not emitted.
pub fn emit(e: &Elemental, entry: &str, title: &str, place: &Placement) -> Result<CudaKernel, String> {
    let outer = e.outer_vars();
    // A GPU's shared memory is on chip: CUDA always stages (dot blocks, transpose tiles).
    let Layout { mapping, positions, cooperative, tile, block, columns, transpose } =
        layout(e, BLOCK, COLUMN_RUN, true);
    // One thread per element becomes four where the memory accesses go four at a time.
    let quads = if mapping == Mapping::Elements { quads(e) } else { None };
    let (mapping, outer_elements) = match quads {
        Some(_) => (Mapping::Quads, positions / QUAD as u64),
        None => (mapping, positions),
    };
    let mut w = Writer::new(e, place, mapping);
    w.fence = place.inputs.iter().enumerate().any(|(i, at)| {
        place
            .outputs
            .iter()
            .enumerate()
            .any(|(o, out)| at == out && stored_type(e.input_elems[i]) != stored_type(e.outputs[o].elem))
    });
    w.cooperative = cooperative;
    w.tile = tile;
    w.block = block;
    w.transpose = transpose;
    w.columns = columns;
    w.quads = quads;
    w.header(entry, title, outer_elements);
    w.body(&outer, outer_elements);
    w.finish(entry, outer_elements)
}

/// The CUDA C of a scatter's update phase ([`AtomicScatter`]) as function `entry`: one
/// thread per update element, which, where its target lies inside the output, combines
/// itself into it atomically (`atomicAdd`, or `atomicMax`/`atomicMin` on integers, else
/// a compare-and-swap loop around the op's own semantics). `place` has the index
/// array's and the updates' offsets as inputs, the output's as the one output.
pub fn emit_scatter_updates(
    s: &AtomicScatter,
    entry: &str,
    title: &str,
    place: &Placement,
) -> Result<CudaKernel, String> {
    if s.last_wins {
        return Err("a replacing scatter whose indices may repeat: its claims need a scratch buffer, \
                    which the CUDA runtime does not give a kernel yet"
            .into());
    }
    if narrow(s.elem) || s.op == Some(BinaryOp::Mul) {
        return Err(format!(
            "a scatter of {}{}: the CUDA target updates 32-bit elements, by add, max, min or a plain store",
            s.elem,
            if s.op == Some(BinaryOp::Mul) { " by multiply" } else { "" }
        ));
    }
    let e = &s.updates;
    let vars = e.outer_vars();
    let n: u64 = vars.iter().map(|&v| e.space[v as usize].max(0) as u64).product();
    let mut w = Writer::new(e, place, Mapping::AtomicUpdates);
    w.header(entry, title, n);
    let ty = stored_type(s.elem);
    let _ = writeln!(w.out, "  {ty}* out0 = ({ty}*)(arena + {});", place.outputs[0]);
    if n == 0 {
        w.body(&vars, 0);
        return w.finish(entry, 0);
    }
    let _ = writeln!(
        w.out,
        "  for (long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; t0 < {n}LL; t0 += (long long)gridDim.x * blockDim.x) {{"
    );
    w.pad = "    ".into();
    let idx = w.idx;
    w.line(format_args!("const {idx} t = ({idx})t0;"));
    w.unravel("t", &vars, "q");
    let inside = w.value(s.in_bounds);
    w.line(format_args!("if ({inside}) {{"));
    w.pad += "  ";
    let at = w.index(s.target);
    let int = matches!(s.elem, ElementType::S32 | ElementType::U32);
    let Some(op) = s.op else {
        // Unique indices: one update per element, read, combined and stored.
        let v = w.value(s.new_value);
        w.line(format_args!("out0[{at}] = {v};"));
        w.out += "    }\n  }\n}\n";
        return w.finish(entry, n);
    };
    let x = w.value(s.value);
    match op {
        BinaryOp::Add => w.line(format_args!("atomicAdd(&out0[{at}], {x});")),
        BinaryOp::Max if int => w.line(format_args!("atomicMax(&out0[{at}], {x});")),
        BinaryOp::Min if int => w.line(format_args!("atomicMin(&out0[{at}], {x});")),
        op => {
            w.line(format_args!("int* p = (int*)&out0[{at}];"));
            w.line(format_args!("int old = *p, seen;"));
            w.line(format_args!("do {{"));
            let next = w.binary(op, s.elem, "__int_as_float(seen)".into(), x);
            w.line(format_args!("  seen = old;"));
            w.line(format_args!("  old = atomicCAS(p, seen, __float_as_int({next}));"));
            w.line(format_args!("}} while (old != seen);"));
        }
    }
    w.out += "    }\n  }\n}\n";
    w.finish(entry, n)
}

/// The C type a buffer element is stored as.
fn stored_type(t: ElementType) -> &'static str {
    use ElementType::*;
    match t {
        Pred | U8 => "unsigned char",
        S8 => "signed char",
        S16 => "short",
        U16 | F16 | BF16 => "unsigned short",
        S32 => "int",
        U32 => "unsigned",
        S64 => "long long",
        U64 => "unsigned long long",
        F32 => "float",
        F64 => "double",
    }
}

/// The 32- or 64-bit type whose arithmetic a value of `t` follows: narrow integers
/// extended by their signedness, f16 and bf16 exactly in f32.
fn carrier(t: ElementType) -> ElementType {
    use ElementType::*;
    match t {
        S8 | S16 => S32,
        U8 | U16 => U32,
        F16 | BF16 => F32,
        t => t,
    }
}

/// The C type a value of `t` is carried in.
fn value_type(t: ElementType) -> &'static str {
    match carrier(t) {
        ElementType::Pred => "bool",
        c => stored_type(c),
    }
}

/// The unsigned C type of an integer carrier's width (for wrapping arithmetic).
fn unsigned_of(t: ElementType) -> &'static str {
    if carrier(t).bit_width() == 64 {
        "unsigned long long"
    } else {
        "unsigned"
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
    /// Names given to the approximations' statements (`approx.rs`) and to stores'
    /// and shuffles' temporaries.
    tmps: u32,
    /// A block reduction ([`cooperative_ops`]): each reduction's op.
    cooperative: Option<Vec<BinaryOp>>,
    /// A block reduction's inits, combined with the block's total at the end.
    inits: Vec<Vec<String>>,
    /// Where in `out` each node's value was bound (byte offset, node): the lines' HLO.
    bound: Vec<(usize, u32)>,
    /// The index type: `int` or `long long`.
    idx: &'static str,
    /// An output takes over the bytes of an input of another C type (in place): a
    /// compiler barrier before each store keeps the element's loads before it, which
    /// type-based alias analysis would otherwise let the compiler move past the store.
    fence: bool,
    /// A dot computed in register tiles ([`tiled_dot`]).
    tile: Option<DotTile>,
    /// Inside a tile: the accumulator of the output being combined or stored.
    tile_acc: Option<String>,
    /// A dot whose blocks stage its operands in shared memory ([`blocked_dot`]).
    block: Option<DotBlock>,
    /// A loop kernel staging transposed loads through shared memory
    /// ([`tiled_transpose`]).
    transpose: Option<TransposeTile>,
    /// A column reduction whose blocks split the rows ([`column_nest`]).
    columns: Option<ColumnTile>,
    /// A loop kernel of four elements per thread, 16 bytes per access ([`Quads`]).
    quads: Option<Quads>,
    mapping: Mapping,
}

impl<'a> Writer<'a> {
    fn new(e: &'a Elemental, place: &'a Placement<'a>, mapping: Mapping) -> Writer<'a> {
        let outer: u64 = e.outer_vars().iter().map(|&v| e.space[v as usize].max(0) as u64).product();
        // Data indices saturate to the index type, which their clamp (inside the buffer)
        // undoes; a clamp keeps its operand's range (checked on its own).
        let wide = |(i, &(lo, hi)): (usize, &(i64, i64))| {
            !matches!(e.idx[i], Idx::Data(_) | Idx::Clamp(..)) && (lo < i32::MIN as i64 || hi > i32::MAX as i64)
        };
        let wide_index = e.idx_range.iter().enumerate().any(wide)
            || outer > i32::MAX as u64
            || e.space.iter().any(|&n| n > i32::MAX as i64);
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
            idx: if wide_index { "long long" } else { "int" },
            fence: false,
            tile: None,
            tile_acc: None,
            block: None,
            transpose: None,
            columns: None,
            quads: None,
            mapping,
        }
    }

    /// The kernel written as function `entry`, or the first reason it could not be.
    fn finish(self, entry: &str, outer: u64) -> Result<CudaKernel, String> {
        if let Some(why) = self.err {
            return Err(why);
        }
        let line_hlo = line_origins(self.e, &self.out, &self.bound);
        Ok(CudaKernel {
            entry: entry.to_string(),
            source: self.out,
            outer,
            mapping: self.mapping,
            line_hlo,
            copy_first: None,
        })
    }
}

impl Writer<'_> {
    fn line(&mut self, text: std::fmt::Arguments) {
        let _ = writeln!(self.out, "{}{text}", self.pad);
    }

    fn header(&mut self, entry: &str, title: &str, outer: u64) {
        let e = self.e;
        let each = match self.mapping {
            Mapping::Elements => format!("{outer} threads"),
            Mapping::Quads => format!("{outer} threads, each {QUAD} neighbouring elements"),
            Mapping::BlockReduction => format!("{outer} blocks of {BLOCK}, one per output element"),
            Mapping::DotTiles => format!("{outer} threads, each a {DOT_TILE}x{DOT_TILE} block of the dot's outputs"),
            Mapping::DotBlocks => {
                let side = dot_block_side(BLOCK);
                format!("{outer} blocks of {BLOCK}, each a {side}x{side} block of the dot's outputs")
            }
            Mapping::TransposeTiles => {
                format!("{outer} blocks of {BLOCK}, each a {TRANSPOSE_TILE}x{TRANSPOSE_TILE} tile")
            }
            Mapping::ColumnTiles => format!("{outer} blocks of {BLOCK}, each {COLUMN_RUN} columns"),
            Mapping::AtomicUpdates => format!("{outer} threads, one per update element"),
        };
        let _ = writeln!(self.out, "// {title}: {each}");
        let names = fused_names(e);
        if !names.is_empty() {
            let list: Vec<String> = names.iter().map(|n| format!("%{n}")).collect();
            let _ = writeln!(self.out, "// fuses {}", list.join(", "));
        }
        let _ = writeln!(
            self.out,
            "extern \"C\" __global__ void __launch_bounds__({BLOCK}) {entry}(unsigned char* arena) {{"
        );
        for (i, &t) in e.input_elems.iter().enumerate() {
            let ty = stored_type(t);
            let _ = writeln!(self.out, "  const {ty}* in{i} = (const {ty}*)(arena + {});", self.place.inputs[i]);
        }
        for (o, out) in e.outputs.iter().enumerate() {
            let ty = stored_type(out.elem);
            let _ = writeln!(self.out, "  {ty}* out{o} = ({ty}*)(arena + {});", self.place.outputs[o]);
        }
        if self.cooperative.is_some() {
            // Each reduction's per-warp partials.
            for (k, r) in e.reductions.iter().enumerate() {
                let ty = value_type(e.expr(r.values[0]).elem);
                let _ = writeln!(self.out, "  __shared__ {ty} part{k}[{WARPS}];");
            }
        }
        if self.columns.is_some() {
            // Each reduction's partials, one per thread.
            for (k, r) in e.reductions.iter().enumerate() {
                let ty = value_type(e.expr(r.values[0]).elem);
                let _ = writeln!(self.out, "  __shared__ {ty} part{k}[{BLOCK}];");
            }
        }
        if let Some(t) = &self.transpose {
            // A tile per staged load, each row one longer than the tile (no bank conflicts).
            for (k, &x) in t.loads.iter().enumerate() {
                let ty = value_type(e.expr(x).elem);
                let _ = writeln!(self.out, "  __shared__ {ty} tile{k}[{}];", TransposeTile::shared_len());
            }
        }
        if let Some(b) = &self.block {
            // A slice of each factor: steps of the contraction by rows (columns) of the block.
            let n = b.shared_len();
            let _ = writeln!(self.out, "  __shared__ float dot_a[{n}];\n  __shared__ float dot_b[{n}];");
        }
    }

    /// The grid-stride loop over the outer elements, each one the driver's element.
    fn body(&mut self, outer: &[u32], outer_elements: u64) {
        if outer_elements == 0 {
            // Never launched: the outer positions would divide by 0.
            self.out += "}\n";
            return;
        }
        if self.mapping.per_block() {
            let _ =
                writeln!(self.out, "  for (long long t0 = blockIdx.x; t0 < {outer_elements}LL; t0 += gridDim.x) {{");
        } else {
            let _ = writeln!(
                self.out,
                "  for (long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; t0 < {outer_elements}LL; t0 += (long long)gridDim.x * blockDim.x) {{"
            );
        }
        self.pad = "    ".into();
        let idx = self.idx;
        self.line(format_args!("const {idx} t = ({idx})t0;"));
        if let Some(block) = self.block {
            blocked_dot(self, "t", BLOCK, block);
            self.out += "  }\n}\n";
            return;
        }
        if let Some(tile) = self.tile {
            tiled_dot(self, "t", tile);
            self.out += "  }\n}\n";
            return;
        }
        if let Some(tile) = self.transpose.clone() {
            tiled_transpose(self, "t", BLOCK, &tile);
            self.out += "  }\n}\n";
            return;
        }
        if let Some(quads) = self.quads.clone() {
            self.quad_elements(outer, &quads);
            self.out += "  }\n}\n";
            return;
        }
        match self.columns.clone() {
            Some(columns) => column_position(self, "t", &columns),
            // The outer variables from the thread's row-major position among them.
            None => self.unravel("t", outer, "q"),
        }
        self.element();
        if self.cooperative.is_some() || self.columns.is_some() {
            // The next element's partials overwrite this one's only after all have read.
            self.line(format_args!("__syncthreads();"));
        }
        self.out += "  }\n}\n";
    }

    /// The four elements of quad `t` ([`Quads`]): the 16-byte loads at the quad's first
    /// element, then each element's outputs (every output of every element evaluated
    /// before any store: an output in place of an input is read at its own position
    /// only), then one 16-byte store per output.
    fn quad_elements(&mut self, outer: &[u32], quads: &Quads) {
        let e = self.e;
        let (idx, inner) = (self.idx, quads.inner);
        let named: Vec<_> = outer
            .iter()
            .map(|&v| {
                let n = e.space[v as usize];
                if v == inner {
                    (v, format!("w{v}"), n / QUAD)
                } else {
                    (v, format!("v{v}"), n)
                }
            })
            .collect();
        self.unravel_as("t", &named, "q");
        let first = self.int(QUAD);
        self.line(format_args!("const {idx} v{inner} = w{inner} * {first};"));
        for (k, &x) in quads.loads.iter().enumerate() {
            let Node::Load { input, linear } = e.expr(x).node else { continue };
            let at = self.index(linear);
            let ty = quad_type(e.expr(x).elem).unwrap_or("uint4");
            self.line(format_args!("const {ty} quad{k} = *(const {ty}*)&in{input}[{at}];"));
        }
        for (o, out) in e.outputs.iter().enumerate() {
            let ty = stored_type(out.elem);
            self.line(format_args!("{ty} out{o}_0, out{o}_1, out{o}_2, out{o}_3;"));
        }
        for j in 0..QUAD {
            scoped(self, |w| {
                let j_at = w.int(j);
                w.line(format_args!("const {idx} v{inner} = w{inner} * {first} + {j_at};"));
                // Everything again at the element's position, but the loads read through a
                // quad: its lanes.
                w.memo.clear();
                for (k, &x) in quads.loads.iter().enumerate() {
                    let lane = ["x", "y", "z", "w"][j as usize];
                    w.memo.values.insert(x, loaded_value(e.expr(x).elem, format!("quad{k}.{lane}")));
                }
                let vals: Vec<String> = e.outputs.iter().map(|out| w.value(out.expr)).collect();
                for (o, v) in vals.into_iter().enumerate() {
                    let bits = stored_bits(e.outputs[o].elem, v);
                    w.line(format_args!("out{o}_{j} = {bits};"));
                }
            });
        }
        if self.fence {
            self.line(format_args!("asm volatile(\"\" ::: \"memory\");"));
        }
        for (o, out) in e.outputs.iter().enumerate() {
            let at = self.store_index(o);
            let ty = quad_type(out.elem).unwrap_or("uint4");
            let make = format!("make_{ty}");
            self.line(format_args!("*({ty}*)&out{o}[{at}] = {make}(out{o}_0, out{o}_1, out{o}_2, out{o}_3);"));
        }
    }

    /// Defines variables `vars` (`v{k}`) from `flat`, their row-major position among
    /// them; the quotients are named `{quotient}{k}`.
    fn unravel(&mut self, flat: &str, vars: &[u32], quotient: &str) {
        let named: Vec<_> = vars.iter().map(|&v| (v, format!("v{v}"), self.e.space[v as usize])).collect();
        self.unravel_as(flat, &named, quotient);
    }

    /// Defines each `(v, name, extent)` from `flat`, their row-major position among
    /// them; the quotients are named `{quotient}{v}`.
    fn unravel_as(&mut self, flat: &str, vars: &[(u32, String, i64)], quotient: &str) {
        let idx = self.idx;
        let mut rest = flat.to_string();
        for (k, (v, name, n)) in vars.iter().enumerate().rev() {
            let n = self.int(*n);
            if k == 0 {
                self.line(format_args!("const {idx} {name} = {rest};"));
            } else {
                self.line(format_args!("const {idx} {name} = {rest} % {n};"));
                self.line(format_args!("const {idx} {quotient}{v} = {rest} / {n};"));
                rest = format!("{quotient}{v}");
            }
        }
    }

    /// An index constant of the kernel's index type.
    fn int(&mut self, c: i64) -> String {
        if self.idx == "long long" {
            return s64_literal(c);
        }
        s32_literal(c).unwrap_or_else(|why| {
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

    fn tmp(&mut self) -> u32 {
        self.tmps += 1;
        self.tmps - 1
    }

    /// The reduced variables of a block reduction as one loop over their row-major
    /// position, strided by the block's threads; then each partial reduced across its
    /// warp by shuffles, the warps' totals across the block in shared memory, and the
    /// block's total (which every thread reads back) combined with the init.
    fn cooperative_nest(&mut self, vars: &[u32], ops: &[BinaryOp], body: &mut dyn FnMut(&mut Self)) {
        let e = self.e;
        let idx = self.idx;
        let n: i64 = vars.iter().map(|&v| e.space[v as usize]).product();
        let n = self.int(n);
        let (saved, saved_indices) = (self.memo.values.clone(), self.memo.indices.clone());
        self.line(format_args!("for ({idx} r = threadIdx.x; r < {n}; r += {BLOCK}) {{"));
        self.pad += "  ";
        self.unravel("r", vars, "rq");
        body(self);
        self.pad.truncate(self.pad.len() - 2);
        self.line(format_args!("}}"));
        self.memo.values = saved;
        self.memo.indices = saved_indices;
        let elems: Vec<ElementType> = e.reductions.iter().map(|r| e.expr(r.values[0]).elem).collect();
        // Within each warp: lane 0 ends with the warp's total.
        self.line(format_args!("for (int s = 16; s > 0; s >>= 1) {{"));
        for (k, &op) in ops.iter().enumerate() {
            self.shuffle_combine(k, op, elems[k]);
        }
        self.line(format_args!("}}"));
        for k in 0..ops.len() {
            self.line(format_args!("if ((threadIdx.x & 31) == 0) part{k}[threadIdx.x >> 5] = acc{k}_0;"));
        }
        self.line(format_args!("__syncthreads();"));
        // The first warp reduces the warps' totals; its lane 0 publishes the block's.
        self.line(format_args!("if (threadIdx.x < 32) {{"));
        self.pad += "  ";
        for (k, &op) in ops.iter().enumerate() {
            let id = self.identity(op, elems[k]);
            self.line(format_args!("acc{k}_0 = threadIdx.x < {WARPS} ? part{k}[threadIdx.x] : {id};"));
        }
        self.line(format_args!("for (int s = {}; s > 0; s >>= 1) {{", WARPS / 2));
        for (k, &op) in ops.iter().enumerate() {
            self.shuffle_combine(k, op, elems[k]);
        }
        self.line(format_args!("}}"));
        self.line(format_args!("__syncwarp();"));
        for k in 0..ops.len() {
            self.line(format_args!("if (threadIdx.x == 0) part{k}[0] = acc{k}_0;"));
        }
        self.pad.truncate(self.pad.len() - 2);
        self.line(format_args!("}}"));
        self.line(format_args!("__syncthreads();"));
        let inits = std::mem::take(&mut self.inits);
        for (k, &op) in ops.iter().enumerate() {
            let r = binary(op, elems[k], &inits[k][0], &format!("part{k}[0]"));
            let r = self.refuse(r);
            self.line(format_args!("acc{k}_0 = {r};"));
        }
    }

    /// `acc{k}_0 = op(acc{k}_0, the accumulator of lane + s)`, the shuffle on its own
    /// line so that every lane of the warp runs it (a select could skip it).
    fn shuffle_combine(&mut self, k: usize, op: BinaryOp, elem: ElementType) {
        let t = self.tmp();
        let ty = value_type(elem);
        if elem == ElementType::Pred {
            self.line(format_args!("  const bool o{t} = __shfl_down_sync(0xffffffffu, (int)acc{k}_0, s) != 0;"));
        } else {
            self.line(format_args!("  const {ty} o{t} = __shfl_down_sync(0xffffffffu, acc{k}_0, s);"));
        }
        let r = binary(op, elem, &format!("acc{k}_0"), &format!("o{t}"));
        let r = self.refuse(r);
        self.line(format_args!("  acc{k}_0 = {r};"));
    }

    /// The identity of `op` on `elem`, as a constant.
    fn identity(&mut self, op: BinaryOp, elem: ElementType) -> String {
        let id = reduction::identity(op, elem).map(|s| constant(s, elem));
        self.refuse(id.unwrap_or_else(|| Err(format!("no identity of {} on {elem}", op.hlo_name()))))
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
            Some(init) => self.line(format_args!("float {name} = {init};")),
            None => self.line(format_args!("float {name};")),
        }
    }
    fn define_index(&mut self, name: &str, value: &str) {
        let idx = self.idx;
        self.line(format_args!("const {idx} {name} = {value};"));
    }
    fn open_loop(&mut self, name: &str, from: &str, below: i64, step: i64) {
        let (idx, n) = (self.idx, self.int(below));
        let next = if step == 1 { format!("++{name}") } else { format!("{name} += {}", self.int(step)) };
        self.line(format_args!("for ({idx} {name} = {from}; {name} < {n}; {next}) {{"));
    }
    fn thread_in_block(&mut self) -> String {
        format!("({})threadIdx.x", self.idx)
    }
    fn barrier(&mut self) {
        self.line(format_args!("__syncthreads();"));
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
        if a == "0" || a == "0LL" {
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

    /// The bounds cut to the index type: the operand is within them.
    fn index_clamp(&mut self, a: String, lo: i64, hi: i64) -> String {
        let cut = |b: i64| if self.idx == "int" { b.clamp(i32::MIN as i64, i32::MAX as i64) } else { b };
        let (lo, hi) = (cut(lo), cut(hi));
        format!("min(max({a}, {}), {})", self.int(lo), self.int(hi))
    }

    /// Saturating to the index type, as the plan's data index saturates to `i64`.
    fn data_index(&mut self, elem: ElementType, v: String) -> String {
        use ElementType::*;
        let idx = self.idx;
        if idx == "int" {
            return match elem {
                S8 | S16 | S32 => v,
                U8 | U16 => format!("(int){v}"),
                U32 => format!("(int)min({v}, 2147483647u)"),
                S64 => format!("(int)max(min({v}, 2147483647LL), -2147483648LL)"),
                U64 => format!("(int)min({v}, 2147483647ull)"),
                Pred => format!("({v} ? 1 : 0)"),
                t => self.refuse(Err(format!("a data index of type {t}"))),
            };
        }
        match elem {
            S8 | S16 | S32 | S64 | U8 | U16 | U32 => format!("(long long){v}"),
            U64 => format!("(long long)min({v}, 9223372036854775807ull)"),
            Pred => format!("({v} ? 1LL : 0LL)"),
            t => self.refuse(Err(format!("a data index of type {t}"))),
        }
    }

    fn load(&mut self, x: ExprId, input: u32, linear: IdxId) -> String {
        use ElementType::*;
        let at = self.index(linear);
        let elem = self.e.expr(x).elem;
        let v = format!("in{input}[{at}]");
        match elem {
            Pred => format!("({v} != 0)"),
            F16 => format!("hs_from_f16({v})"),
            BF16 => format!("hs_from_bf16({v})"),
            _ => v,
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
            _ => format!("({})({v})", value_type(elem)),
        }
    }

    fn in_range(&mut self, i: IdxId, lo: i64, hi: i64) -> String {
        let v = self.index(i);
        format!("({v} >= {} && {v} < {})", self.int(lo), self.int(hi))
    }

    fn unary(&mut self, op: UnaryOp, from: ElementType, elem: ElementType, a: String) -> String {
        if op == UnaryOp::IsFinite {
            return format!("isfinite({a})");
        }
        if carrier(elem) == ElementType::F32 && approx::approximated(op) {
            let mut lanes = approx::CudaLanes { out: &mut self.out, pad: &self.pad, next: &mut self.tmps };
            if let Some(y) = approx::unary(&mut lanes, op, &a) {
                return y.to_string();
            }
        }
        let u = unary(op, from, &a);
        self.refuse(u)
    }

    fn binary(&mut self, op: BinaryOp, elem: ElementType, a: String, b: String) -> String {
        let r = binary(op, elem, &a, &b);
        self.refuse(r)
    }

    fn compare(&mut self, dir: CmpDir, total: bool, elem: ElementType, a: String, b: String) -> String {
        compare(dir, total, elem, &a, &b)
    }

    fn select(&mut self, p: String, t: String, f: String) -> String {
        format!("({p} ? {t} : {f})")
    }

    fn clamp(&mut self, elem: ElementType, lo: String, x: String, hi: String) -> String {
        let low = binary(BinaryOp::Max, elem, &x, &lo);
        let r = low.and_then(|low| binary(BinaryOp::Min, elem, &low, &hi));
        self.refuse(r)
    }

    fn convert(&mut self, from: ElementType, to: ElementType, v: String) -> String {
        let r = convert(from, to, &v);
        self.refuse(r)
    }

    fn bitcast(&mut self, from: ElementType, to: ElementType, v: String) -> String {
        let r = bitcast(from, to, &v);
        self.refuse(r)
    }

    fn accumulator(&mut self, red: u32, i: u32) -> String {
        match &self.tile_acc {
            Some(acc) => acc.clone(),
            None => format!("acc{red}_{i}"),
        }
    }

    /// The reduced loops (the only nest the driver asks for: the outer variables come
    /// from the thread), with what they read but do not change defined once before
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
        let idx = self.idx;
        for &v in vars {
            let n = self.int(self.e.space[v as usize]);
            self.line(format_args!("for ({idx} v{v} = 0; v{v} < {n}; ++v{v}) {{"));
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

    /// A block reduction's partials start from the identity; the inits join at the end
    /// ([`Writer::cooperative_nest`]).
    fn begin_accumulators(&mut self, inits: Vec<Vec<String>>) {
        let e = self.e;
        if let Some(ops) = self.cooperative.clone().or_else(|| self.columns.as_ref().map(|c| c.ops.clone())) {
            for (k, r) in e.reductions.iter().enumerate() {
                let elem = e.expr(r.values[0]).elem;
                let id = self.identity(ops[k], elem);
                self.line(format_args!("{} acc{k}_0 = {id};", value_type(elem)));
            }
            self.inits = inits;
            return;
        }
        for (k, vals) in inits.into_iter().enumerate() {
            for (i, v) in vals.into_iter().enumerate() {
                let ty = value_type(e.expr(e.reductions[k].inits[i]).elem);
                self.line(format_args!("{ty} acc{k}_{i} = {v};"));
            }
        }
    }

    /// Through fresh names: a combiner may return another accumulator as it is.
    fn update_accumulators(&mut self, updates: Vec<(u32, u32, String)>) {
        let e = self.e;
        for (k, i, v) in &updates {
            let ty = value_type(e.expr(e.reductions[*k as usize].inits[*i as usize]).elem);
            self.line(format_args!("const {ty} next{k}_{i} = {v};"));
        }
        for (k, i, _) in updates {
            self.line(format_args!("acc{k}_{i} = next{k}_{i};"));
        }
    }

    fn store(&mut self, o: usize, v: String) {
        let out = &self.e.outputs[o];
        // An outer output's store position (the plan's store strides over the kept
        // variables) is the thread's own index `t`, by the mapping in `body`, except where
        // a thread computes elements other than its own (tiles).
        let own = out.inner || !self.mapping.stores_at_position();
        let at = if own { self.store_index(o) } else { "t".into() };
        let bits = stored_bits(out.elem, v);
        // A block reduction's results: every thread has them, one stores; a column
        // reduction's: lane 0 of each column inside the result.
        let guard = match &self.columns {
            _ if out.inner => String::new(),
            Some(columns) => format!("if ({}) ", column_store_guard(self, &columns.clone())),
            None if self.cooperative.is_some() => "if (threadIdx.x == 0) ".into(),
            None => String::new(),
        };
        if self.fence {
            self.line(format_args!("asm volatile(\"\" ::: \"memory\");"));
        }
        self.line(format_args!("{guard}out{o}[{at}] = {bits};"));
    }

    /// Scopes are lexical: what is defined before a loop stays visible in it.
    fn new_region(&mut self) {}

    /// Every computed value gets a name, defined where it is first needed.
    fn bind(&mut self, x: ExprId, v: String) -> String {
        let expr = self.e.expr(x);
        if matches!(expr.node, Node::Acc { .. } | Node::Arg { .. } | Node::Reduced { .. } | Node::Const(_)) {
            return v;
        }
        let ty = value_type(expr.elem);
        // A narrow result computed in its carrier, back to its type (loads, converts and
        // selects of narrow values are already of it).
        let made = !matches!(expr.node, Node::Load { .. } | Node::Convert(_) | Node::Select { .. });
        let v = if narrow(expr.elem) && made { to_narrow(expr.elem, &v) } else { v };
        self.bound.push((self.out.len(), x.0));
        self.line(format_args!("const {ty} e{} = {v};", x.0));
        format!("e{}", x.0)
    }
}

/// An `int` literal, or why the value is not one.
fn s32_literal(c: i64) -> Result<String, String> {
    if c == i32::MIN as i64 {
        return Ok("(-2147483647 - 1)".into());
    }
    if c < i32::MIN as i64 || c > i32::MAX as i64 {
        return Err(format!("an index constant {c} past 32 bits"));
    }
    Ok(if c < 0 { format!("({c})") } else { c.to_string() })
}

/// A `long long` literal.
fn s64_literal(c: i64) -> String {
    if c == i64::MIN {
        "(-9223372036854775807LL - 1)".into()
    } else if c < 0 {
        format!("({c}LL)")
    } else {
        format!("{c}LL")
    }
}

/// An f64 literal NVRTC reads back to the same bits (subnormal and non-finite values by
/// their bits).
fn f64_literal(v: f64) -> String {
    if v.is_finite() && (v == 0.0 || v.abs() >= f64::MIN_POSITIVE) {
        format!("{v:?}")
    } else {
        format!("__longlong_as_double({:#018x}LL)", v.to_bits())
    }
}

/// A constant of type `elem` (a carrier type: narrow constants are their carriers').
fn constant(s: Scalar, elem: ElementType) -> Result<String, String> {
    use ElementType::*;
    let signed = || match s {
        Scalar::S(v) => v,
        Scalar::U(v) => v as i64,
        Scalar::Pred(b) => b as i64,
        Scalar::F(f) => f as i64,
    };
    let unsigned = || match s {
        Scalar::U(v) => v,
        Scalar::S(v) => v as u64,
        Scalar::Pred(b) => b as u64,
        Scalar::F(f) => f as u64,
    };
    Ok(match elem {
        Pred => (s.as_f64() != 0.0).to_string(),
        F32 | F16 | BF16 => approx::f32_literal(s.as_f64() as f32),
        F64 => f64_literal(s.as_f64()),
        S8 | S16 | S32 => s32_literal(signed() as i32 as i64)?,
        S64 => s64_literal(signed()),
        U8 | U16 | U32 => format!("{}u", unsigned() as u32),
        U64 => format!("{}ull", unsigned()),
    })
}

/// `elem`'s C math function `name` (`sqrtf` for f32 and its carried types, `sqrt` for f64).
fn math(name: &str, elem: ElementType, args: &str) -> String {
    if carrier(elem) == ElementType::F64 {
        format!("{name}({args})")
    } else {
        format!("{name}f({args})")
    }
}

fn unary(op: UnaryOp, elem: ElementType, a: &str) -> Result<String, String> {
    use ElementType::*;
    use UnaryOp::*;
    let c = carrier(elem);
    let float = c.is_float();
    let ty = value_type(elem);
    let width = elem.bit_width();
    let mask = if width >= 32 { String::new() } else { format!(" & {:#x}u", (1u32 << width) - 1) };
    let u = unsigned_of(elem);
    Ok(match op {
        Neg if float => format!("(-{a})"),
        Neg if c.is_signed_int() => format!("({ty})(0 - ({u}){a})"),
        Neg if c.is_unsigned_int() => format!("(0 - {a})"),
        Abs if float => math("fabs", elem, a),
        Abs if c.is_signed_int() => format!("({ty})({a} < 0 ? 0 - ({u}){a} : ({u}){a})"),
        Abs if c.is_unsigned_int() => a.to_string(),
        Not if c == Pred => format!("(!{a})"),
        Not if c.is_int() => format!("(~{a})"),
        Sqrt if float => math("sqrt", elem, a),
        Rsqrt if float => math("rsqrt", elem, a),
        Cbrt if float => math("cbrt", elem, a),
        Sin if float => math("sin", elem, a),
        Cos if float => math("cos", elem, a),
        Tan if float => math("tan", elem, a),
        Floor if float => math("floor", elem, a),
        Ceil if float => math("ceil", elem, a),
        RoundEven if float => math("rint", elem, a),
        // round() rounds half away from zero.
        RoundAfz if float => math("round", elem, a),
        // Zeros keep their sign, NaN stays NaN.
        Sign if float => {
            let one = if c == F64 { "1.0" } else { "1.0f" };
            format!("(isnan({a}) || {a} == 0 ? {a} : {})", math("copysign", elem, &format!("{one}, {a}")))
        }
        Sign if c.is_signed_int() => format!("({ty})(({a} > 0) - ({a} < 0))"),
        Sign if c.is_unsigned_int() => format!("({a} != 0 ? ({ty})1 : ({ty})0)"),
        // f64 has its own accurate library functions; logistic from exp.
        Exp | Expm1 | Log | Log1p | Tanh | Erf if c == F64 => {
            let name = match op {
                Exp => "exp",
                Expm1 => "expm1",
                Log => "log",
                Log1p => "log1p",
                Tanh => "tanh",
                _ => "erf",
            };
            format!("{name}({a})")
        }
        Logistic if c == F64 => format!("(1.0 / (1.0 + exp(-{a})))"),
        PopCnt if width == 64 => format!("({ty})__popcll({a})"),
        PopCnt if c.is_int() => format!("({ty})__popc((unsigned){a}{mask})"),
        Clz if width == 64 => format!("({ty})__clzll((long long){a})"),
        Clz if c.is_int() => format!("({ty})(__clz((int)((unsigned){a}{mask})) - {})", 32 - width),
        other => return Err(format!("{} on {elem} is not emitted for cuda", other.hlo_name())),
    })
}

/// `a op b` on values of `elem` (in their carriers; narrow results are brought back to
/// their type by the caller's binding).
fn binary(op: BinaryOp, elem: ElementType, a: &str, b: &str) -> Result<String, String> {
    use BinaryOp::*;
    let c = carrier(elem);
    let float = c.is_float();
    let pred = c == ElementType::Pred;
    let signed = c.is_signed_int();
    let ty = value_type(elem);
    let u = unsigned_of(elem);
    let width = elem.bit_width();
    let w = width.to_string();
    Ok(match op {
        Add if pred => format!("({a} || {b})"),
        Mul if pred => format!("({a} && {b})"),
        Max if pred => format!("({a} || {b})"),
        Min if pred => format!("({a} && {b})"),
        And if pred => format!("({a} && {b})"),
        Or if pred => format!("({a} || {b})"),
        Xor if pred => format!("({a} != {b})"),
        _ if pred => return Err(format!("{} on pred is not emitted for cuda", op.hlo_name())),
        Add | Sub | Mul if float => {
            let sym = match op {
                Add => "+",
                Sub => "-",
                _ => "*",
            };
            format!("({a} {sym} {b})")
        }
        // Wrapping: signed overflow is undefined in C++.
        Add if signed => format!("({ty})(({u}){a} + ({u}){b})"),
        Sub if signed => format!("({ty})(({u}){a} - ({u}){b})"),
        Mul if signed => format!("({ty})(({u}){a} * ({u}){b})"),
        Add => format!("({a} + {b})"),
        Sub => format!("({a} - {b})"),
        Mul => format!("({a} * {b})"),
        Div if float => format!("({a} / {b})"),
        Div => format!("hs_div({a}, {b})"),
        Rem if float => math("fmod", elem, &format!("{a}, {b}")),
        Rem => format!("hs_rem({a}, {b})"),
        Max if float => format!("hs_max({a}, {b})"),
        Min if float => format!("hs_min({a}, {b})"),
        Max => format!("max({a}, {b})"),
        Min => format!("min({a}, {b})"),
        Pow if float => math("pow", elem, &format!("{a}, {b}")),
        Atan2 if float => math("atan2", elem, &format!("{a}, {b}")),
        And if !float => format!("({a} & {b})"),
        Or if !float => format!("({a} | {b})"),
        Xor if !float => format!("({a} ^ {b})"),
        // The count as unsigned: at or past the width (or negative), left and logical
        // shifts give 0, arithmetic ones the sign. Narrow values shift within their
        // width (a logical shift sees no carrier sign bits; an arithmetic one sees the
        // value's own sign).
        ShiftLeft if !float => format!("(({u}){b} >= {w} ? ({ty})0 : ({ty})(({u}){a} << ({u}){b}))"),
        ShiftRightLogical if !float => {
            let bits =
                if width < 32 { format!("(({u}){a} & {:#x}u)", (1u32 << width) - 1) } else { format!("({u}){a}") };
            format!("(({u}){b} >= {w} ? ({ty})0 : ({ty})({bits} >> ({u}){b}))")
        }
        ShiftRightArithmetic if !float => {
            let s = if width == 64 { "long long" } else { "int" };
            // The value as signed at its width: narrow unsigned ones sign-extended.
            let v = if width < 32 && !signed {
                format!("((int)({a} << {}) >> {})", 32 - width, 32 - width)
            } else {
                format!("({s}){a}")
            };
            format!("({ty})({v} >> (({u}){b} >= {w} ? {} : ({u}){b}))", width - 1)
        }
        other => return Err(format!("{} on {elem} is not emitted for cuda", other.hlo_name())),
    })
}

fn compare(dir: CmpDir, total: bool, elem: ElementType, a: &str, b: &str) -> String {
    let sym = match dir {
        CmpDir::Eq => "==",
        CmpDir::Ne => "!=",
        CmpDir::Lt => "<",
        CmpDir::Le => "<=",
        CmpDir::Gt => ">",
        CmpDir::Ge => ">=",
    };
    match carrier(elem) {
        // C's float compares are IEEE's: NaN is unordered, -0 equals 0.
        c if c.is_float() && total => format!("(hs_total_key({a}) {sym} hs_total_key({b}))"),
        ElementType::Pred => format!("((int){a} {sym} (int){b})"),
        _ => format!("({a} {sym} {b})"),
    }
}

/// `v`, a value of `t`'s carrier, brought to the narrow type `t`: wrapped, or rounded to
/// nearest even.
fn to_narrow(t: ElementType, v: &str) -> String {
    use ElementType::*;
    match t {
        S8 => format!("(int)(signed char)({v})"),
        S16 => format!("(int)(short)({v})"),
        U8 => format!("(({v}) & 0xffu)"),
        U16 => format!("(({v}) & 0xffffu)"),
        F16 => format!("hs_f16({v})"),
        BF16 => format!("hs_bf16({v})"),
        _ => v.to_string(),
    }
}

/// A convert of `v` (a value of `from`, in its carrier) to `to`, carried as [`carrier`]
/// says: floats to integers saturate through PTX's `cvt.rzi` (NaN to 0), integers wrap,
/// and every conversion to a float rounds once, to nearest even.
fn convert(from: ElementType, to: ElementType, v: &str) -> Result<String, String> {
    use ElementType::*;
    let (cf, ct) = (carrier(from), carrier(to));
    let tty = value_type(to);
    if from == to {
        return Ok(v.to_string());
    }
    Ok(match (cf, to) {
        // NaN != 0 is true, as HLO wants.
        (_, Pred) => format!("({v} != 0)"),
        (Pred, _) => format!("({v} ? ({tty})1 : ({tty})0)"),
        // Floats to integers, saturating.
        (F32 | F64, _) if to.is_int() => {
            let d = if cf == F64 { "double" } else { "float" };
            let name = match ct {
                S32 => "int",
                U32 => "uint",
                S64 => "ll",
                _ => "ull",
            };
            if narrow(to) {
                let (lo, hi) = if to.is_signed_int() {
                    (-(1i64 << (to.bit_width() - 1)), (1i64 << (to.bit_width() - 1)) - 1)
                } else {
                    (0, (1i64 << to.bit_width()) - 1)
                };
                let (fmax, fmin, f) = if cf == F64 { ("fmax", "fmin", "") } else { ("fmaxf", "fminf", "f") };
                format!("(isnan({v}) ? ({tty})0 : __{d}2{name}_rz({fmin}({fmax}({v}, {lo}.0{f}), {hi}.0{f})))")
            } else {
                format!("__{d}2{name}_rz({v})")
            }
        }
        // Integers to integers: wrapped (a cast to a narrower type takes the low bits).
        (_, _) if cf.is_int() && to.is_int() => to_narrow(to, &format!("({tty}){v}")),
        // To f16 and bf16, rounded once from the exact value.
        (F32, F16 | BF16) => to_narrow(to, v),
        (F64, F16) => format!("__half2float(__double2half({v}))"),
        (F64, BF16) => format!("__bfloat162float(__double2bfloat16({v}))"),
        (_, F16 | BF16) => {
            let (kind, conv) = if to == F16 { ("half", "__half2float") } else { ("bfloat16", "__bfloat162float") };
            let name = match cf {
                S32 => "int",
                U32 => "uint",
                S64 => "ll",
                _ => "ull",
            };
            format!("{conv}(__{name}2{kind}_rn({v}))")
        }
        // Floats from floats and integers: C's conversions round to nearest even.
        (_, F32 | F64) => format!("({tty}){v}"),
        (a, b) => return Err(format!("a convert from {a} to {b}")),
    })
}

/// A bitcast-convert between types of one width, from the value's carrier to the other's.
fn bitcast(from: ElementType, to: ElementType, v: &str) -> Result<String, String> {
    use ElementType::*;
    if from == Pred || to == Pred || from.bit_width() != to.bit_width() {
        return Err(format!("a bitcast-convert from {from} to {to}"));
    }
    let tty = value_type(to);
    Ok(match (from, to) {
        (a, b) if a == b => v.to_string(),
        (F32, S32) => format!("__float_as_int({v})"),
        (F32, U32) => format!("__float_as_uint({v})"),
        (S32, F32) => format!("__int_as_float({v})"),
        (U32, F32) => format!("__uint_as_float({v})"),
        (F64, S64) => format!("__double_as_longlong({v})"),
        (F64, U64) => format!("(unsigned long long)__double_as_longlong({v})"),
        (S64 | U64, F64) => format!("__longlong_as_double((long long){v})"),
        // 16-bit floats through their bits.
        (F16, _) => to_bits_type(to, &format!("hs_f16_bits({v})")),
        (BF16, _) => to_bits_type(to, &format!("hs_bf16_bits({v})")),
        (_, F16) => format!("hs_from_f16((unsigned short){v})"),
        (_, BF16) => format!("hs_from_bf16((unsigned short){v})"),
        // Integers of one width: the same bits, read with the other signedness.
        _ => to_narrow(to, &format!("({tty}){v}")),
    })
}

/// 16 bits (an `unsigned short`) as a value of the 16-bit type `to`.
fn to_bits_type(to: ElementType, bits: &str) -> String {
    use ElementType::*;
    match to {
        S16 => format!("(int)(short){bits}"),
        U16 => format!("(unsigned){bits}"),
        F16 => format!("hs_from_f16({bits})"),
        _ => format!("hs_from_bf16({bits})"),
    }
}
