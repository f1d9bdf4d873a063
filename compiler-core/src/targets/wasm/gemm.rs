//! The plan's dot kernels (`KernelBody::Dot`: a batched GEMM `out[b, m, n] = sum_k
//! lhs[b, m, k] rhs[b, k, n]`) as a blocked SIMD128 GEMM over f32. The parallel
//! variable runs over the batch times blocks of [`ROWS`] output rows ([`extent`]), so a
//! single large GEMM splits across threads as well as a batch does. A call packs the
//! rhs of a batch into panels of [`NR`] columns (`k` rows of [`NR`] contiguous floats)
//! when it reaches that batch (a call over several blocks of one batch packs it once),
//! then per block its lhs rows into groups of [`MR`] (`k` groups of [`MR`] floats), and
//! runs, panel by panel, a register tile of [`MR`] x [`NR`] outputs (8 `f32x4`
//! accumulators) over `k` for each group: the panel is reused by every group of the
//! block while it is in cache. Packing reads the operands through their strides, so
//! transposed operands cost nothing more; a row past `m` or a column past `n` repeats
//! the last one, since the outputs it feeds are never stored. Each output sums its
//! products in `k` order, rounded at every step (`mul`, then `add`, from +0): the
//! interpreter's f32 dot, bit for bit, however the range is split. Edge tiles go
//! through a scratch tile and are stored element by element.
//!
//! The code is written once, in a module of its own ([`library`]): the body of one
//! block of one batch ([`block_function`], its dims, strides and byte addresses
//! arguments) and the driver a dot kernel runs ([`dot_function`]), which walks a range of
//! blocks, says when a new batch's rhs must be packed (a call over several blocks of one
//! batch packs it once) and calls the body. A program's f32 dot is data, not code: its
//! [`descriptor`] (places, dims, strides, batch layout) in the program's memory, whose
//! address the program's `kernel` export passes to the driver. So a program's module
//! carries no GEMM and no function per dot: an engine compiles the library once (per
//! worker in the browser, per process natively), and each program's instance imports
//! the library instance's table, whose one entry is the driver, and calls it through
//! that (`call_indirect`), as the native target calls a GEMM compiled into its binary.
//! A program of f32 dots only has no module of its own: the library's own `kernel`
//! ([`kernel_function`]) runs it from the program's directory ([`super::DIRECTORY_ENTRY`]).
//! A table rather than a function import: V8 compiles a wrapper for every imported
//! function when it compiles a module, in case the import is JavaScript, and that one
//! wrapper cost half a millisecond, more than compiling the rest of a GEMM program.
//!
//! The packed panels, the packed block and the tile live in scratch memory after the
//! arena ([`scratch_bytes`]), at the module's global `scratch` (global 0), which each
//! instance of a threaded module sets to a region of its own. f64, f16 and bf16 dots are
//! a plain loop per output in `k` order over a range of output rows. The batch
//! dimensions may lie anywhere in an operand (attention's heads split out of `[b, s, h,
//! d]`): each batch's offset is computed from its coordinates. A dot whose free or
//! contracting dimensions are not one stride each is refused: the host runs it.

use super::emit::Code;
use super::helpers;
use crate::ir::ElementType;
use crate::kernel::DotSpec;
use wasm_encoder::{
    BlockType, CodeSection, ConstExpr, ElementSection, Elements, EntityType, ExportKind, ExportSection, Function,
    FunctionSection, GlobalSection, GlobalType, ImportSection, Instruction as I, MemArg, MemoryType, RefType,
    TableSection, TableType, TypeSection, ValType,
};

/// The import module and name under which a program's module imports the GEMM
/// library's table, which is also the library's export of it.
pub const LIBRARY_MODULE: &str = "gemm";
pub const LIBRARY_TABLE: &str = "table";

/// The library table's type: one function reference, the dot driver
/// ([`dot_function`]).
pub fn library_table() -> TableType {
    TableType { element_type: RefType::FUNCREF, minimum: 1, maximum: Some(1), table64: false, shared: false }
}

/// The GEMM library: a module that imports the program's memory (`env.memory`, shared
/// when `shared`, as a threaded program's is) and exports a table ([`LIBRARY_TABLE`])
/// holding [`dot_function`], which calls [`block_function`] (function 0). Its memory
/// import asks for nothing (no pages, any maximum), so every program's memory satisfies
/// it; its functions reach only the addresses their caller passes or its descriptors
/// hold, all inside that caller's memory.
///
/// It also exports a [`super::KERNEL`] of its own ([`kernel_function`]) with the globals
/// [`super::SCRATCH`] and [`DIRECTORY`]: a program whose kernels in WebAssembly are all f32 dots
/// needs no module, as the host calls this `kernel` as it would the program's, on the
/// program's directory ([`super::WasmProgram::directory`]).
pub fn library(shared: bool) -> Vec<u8> {
    library_for(shared, Splat::Load)
}

/// How the register tile broadcasts an lhs value to the 4 lanes: each engine's fastest
/// form, the same bits either way. V8 makes `v128.load32_splat` one broadcast load,
/// which leaves the shuffle port to the adds; Cranelift (wasmtime) loads it into a
/// general register and moves it over and broadcasts it, two shuffle-port operations,
/// and makes `f32.load` then `f32x4.splat` a load and one. On a 2-core Xeon the 1024
/// GEMM ran 58 against 45 ms under wasmtime, and 34 against 45 in V8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Splat {
    /// `v128.load32_splat`: the portable library ([`library`]; V8, `compile --emit`).
    Load,
    /// `f32.load`, `f32x4.splat`: wasmtime's (`runtime::gemm_library`, feature `wasm-run`).
    LoadThenSplat,
}

/// [`library`] with the tile's broadcast in form `splat`.
pub fn library_for(shared: bool, splat: Splat) -> Vec<u8> {
    let mut types = TypeSection::new();
    types.ty().function(vec![ValType::I32; BLOCK_PARAMS], []);
    types.ty().function(vec![ValType::I32; DOT_PARAMS], []);
    types.ty().function(vec![ValType::I32; super::KERNEL_PARAMS as usize], []);
    let mut imports = ImportSection::new();
    let maximum = shared.then_some(super::MAX_PAGES);
    let memory = MemoryType { minimum: 0, maximum, memory64: false, shared, page_size_log2: None };
    imports.import("env", "memory", EntityType::Memory(memory));
    let mut functions = FunctionSection::new();
    functions.function(0);
    functions.function(1);
    functions.function(2);
    let mut tables = TableSection::new();
    tables.table(library_table());
    let mut globals = GlobalSection::new();
    for _ in [LIBRARY_SCRATCH, LIBRARY_DIRECTORY] {
        globals.global(GlobalType { val_type: ValType::I32, mutable: true, shared: false }, &ConstExpr::i32_const(0));
    }
    let mut exports = ExportSection::new();
    exports.export(LIBRARY_TABLE, ExportKind::Table, 0);
    exports.export(super::KERNEL, ExportKind::Func, 2);
    exports.export(super::SCRATCH, ExportKind::Global, LIBRARY_SCRATCH);
    exports.export(DIRECTORY, ExportKind::Global, LIBRARY_DIRECTORY);
    let mut elements = ElementSection::new();
    elements.active(Some(0), &ConstExpr::i32_const(0), Elements::Functions([1].as_slice().into()));
    let mut code = CodeSection::new();
    code.function(&block_function(splat));
    code.function(&dot_function());
    code.function(&kernel_function());
    let mut m = wasm_encoder::Module::new();
    m.section(&types).section(&imports).section(&functions).section(&tables).section(&globals).section(&exports);
    m.section(&elements).section(&code);
    m.finish()
}

/// The library's global (and export) that holds where the program's directory is.
pub const DIRECTORY: &str = "directory";
const LIBRARY_SCRATCH: u32 = 0;
const LIBRARY_DIRECTORY: u32 = 1;

/// The library's [`super::KERNEL`]: as a program module's, `kernel(index, begin, end)`
/// runs plan kernel `index` over `begin..end` and `kernel(WHOLE, first, last)` runs
/// kernels `first..last` whole (those of extent 0 not at all), each through
/// [`dot_function`] on the descriptor the directory ([`super::DIRECTORY_ENTRY`], at global
/// [`DIRECTORY`]) gives it, with the global `scratch` as its scratch base: the program
/// module's [`super::dispatch`] with the driver as its one arm. A host kernel's index
/// traps, and [`super::WHOLE`] skips it.
fn kernel_function() -> Function {
    super::dispatch(&super::Dispatch {
        directory: 0,
        directory_global: Some(LIBRARY_DIRECTORY),
        kernels: None,
        arms: vec![vec![I::GlobalGet(LIBRARY_SCRATCH), I::Call(1)]],
    })
}

/// Rows of a register tile.
pub const MR: u32 = 4;
/// Output rows of one element of an f32 GEMM's parallel variable (a multiple of [`MR`]).
pub const ROWS: u32 = 32;
/// Columns of a register tile (two vectors).
pub const NR: u32 = 8;

/// Where a dot kernel's buffers are (byte offsets) and its operands' dims.
pub struct DotPlace<'a> {
    pub lhs: u64,
    pub rhs: u64,
    pub out: u64,
    pub lhs_dims: &'a [i64],
    pub rhs_dims: &'a [i64],
}

/// Rows of an f32 GEMM's block: [`ROWS`], or `m` in whole tiles when that is fewer.
fn block_rows(d: &DotSpec) -> u64 {
    (ROWS as u64).min((d.m as u64).next_multiple_of(MR as u64))
}

/// Scratch bytes the dot needs (a multiple of 16): the packed rhs, one packed lhs block
/// and a tile; none for the plain loops.
pub fn scratch_bytes(d: &DotSpec) -> u64 {
    if d.elem != ElementType::F32 {
        return 0;
    }
    let panels = (d.n as u64).div_ceil(NR as u64);
    4 * (panels * NR as u64 * d.k as u64 + block_rows(d) * d.k as u64 + (MR * NR) as u64)
}

/// The extent of the dot's parallel variable: batch x blocks of [`ROWS`] rows (f32), or
/// batch x rows (the plain loops).
pub fn extent(d: &DotSpec) -> u64 {
    let rows = if d.elem == ElementType::F32 { (d.m as u64).div_ceil(block_rows(d)) } else { d.m as u64 };
    d.batch as u64 * rows
}

/// How one operand's elements are addressed: each batch dimension as (size, stride),
/// outermost first, and the one stride of its free and of its contracting group.
struct Layout {
    batch: Vec<(i64, i64)>,
    strides: [i64; 2],
}

/// The element strides of `perm`'s dims of an array of `dims`, grouped by `sizes` (the
/// products of each group: batch, free, contracting, in perm order): the batch dims
/// each with its own stride, the other two groups flattened to one stride each; none
/// when those are not laid out so.
fn layout(dims: &[i64], perm: &[usize], sizes: [usize; 3]) -> Option<Layout> {
    let mut strides = vec![1i64; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * dims[d + 1];
    }
    let mut out = Layout { batch: Vec::new(), strides: [0; 2] };
    let mut it = perm.iter().copied().peekable();
    for (g, &size) in sizes.iter().enumerate() {
        // This group's dims: taken while the product stays within its size (size-1 dims
        // go anywhere: their coordinate is always 0).
        let mut group = Vec::new();
        let mut product = 1usize;
        while let Some(&d) = it.peek() {
            let n = dims[d] as usize;
            if product * n > size || (product == size && n != 1) {
                break;
            }
            product *= n;
            group.push(d);
            it.next();
        }
        if product != size {
            return None;
        }
        let real: Vec<usize> = group.into_iter().filter(|&d| dims[d] != 1).collect();
        if g == 0 {
            out.batch = real.iter().map(|&d| (dims[d], strides[d])).collect();
            continue;
        }
        for w in real.windows(2) {
            if strides[w[0]] != strides[w[1]] * dims[w[1]] {
                return None;
            }
        }
        out.strides[g - 1] = real.last().map_or(0, |&d| strides[d]);
    }
    it.next().is_none().then_some(out)
}

/// Pushes batch `b`'s element offset in an operand with batch dims `batch`: the sum of
/// each coordinate (from `b`, row-major over the dims) times its stride.
fn batch_offset(c: &mut Code, b: u32, batch: &[(i64, i64)]) {
    c.op(I::I32Const(0));
    let mut inner = 1i64;
    for (i, &(n, stride)) in batch.iter().enumerate().rev() {
        c.op(I::LocalGet(b));
        if inner > 1 {
            c.ops([I::I32Const(inner as i32), I::I32DivU]);
        }
        if i > 0 {
            c.ops([I::I32Const(n as i32), I::I32RemU]);
        }
        c.ops([I::I32Const(stride as i32), I::I32Mul, I::I32Add]);
        inner *= n;
    }
}

fn mem(offset: u64, align: u32) -> MemArg {
    MemArg { offset, align, memory_index: 0 }
}

/// How a dot kernel runs: the library's driver on its descriptor (f32), or a function
/// of its own.
pub enum DotCode {
    /// [`descriptor`]'s bytes, for the program's memory.
    Descriptor(Vec<u8>),
    /// Its function, to be finished in the program's module.
    Function(Code),
}

/// The code of `d`, or why it is not emitted.
pub fn emit(d: &DotSpec, place: &DotPlace) -> Result<DotCode, String> {
    let (a_s, b_s) = (
        layout(place.lhs_dims, &d.lhs_perm, [d.batch, d.m, d.k]),
        layout(place.rhs_dims, &d.rhs_perm, [d.batch, d.k, d.n]),
    );
    let (Some(a), Some(b)) = (a_s, b_s) else {
        return Err("a dot operand whose free or contracting dimensions are not one stride each".into());
    };
    match d.elem {
        _ if runs_library(d) => Ok(DotCode::Descriptor(descriptor(d, place, &a, &b))),
        ElementType::F64 | ElementType::F16 | ElementType::BF16 => Ok(DotCode::Function(plain(d, place, a, b))),
        t => Err(format!("a {t} dot")),
    }
}

/// Whether the dot runs the library's driver ([`dot_function`]) on a descriptor: the f32
/// dots; the others are plain loops of their own.
pub fn runs_library(d: &DotSpec) -> bool {
    d.elem == ElementType::F32
}

/// f64, f16 and bf16 dots: one output at a time, its products summed in `k` order (f64
/// in f64; f16 and bf16 in f32, whose products of them are exact, rounded once at the
/// end), as the dots the planner turns into reductions are.
fn plain(d: &DotSpec, place: &DotPlace, a: Layout, b_layout: Layout) -> Code {
    let ([sam, sak], [sbk, sbn]) = (a.strides, b_layout.strides);
    let wide = d.elem == ElementType::F64;
    let size = if wide { 8 } else { 2 };
    let ty = if wide { ValType::F64 } else { ValType::F32 };
    let (m, n, k) = (d.m as i32, d.n as i32, d.k as i32);
    let mut c = Code::new(super::KERNEL_PARAMS);
    let l = |c: &mut Code| c.local(ValType::I32);
    let (b, i, j, p) = (l(&mut c), l(&mut c), l(&mut c), l(&mut c));
    let (a_at, b_at) = (l(&mut c), l(&mut c));
    let acc = c.local(ty);
    let load = |c: &mut Code, base: u64| match d.elem {
        ElementType::F64 => c.op(I::F64Load(mem(base, 3))),
        ElementType::F16 => c.ops([I::I32Load16U(mem(base, 1)), I::Call(helpers::F16_TO_F32)]),
        _ => c.ops([I::I32Load16U(mem(base, 1)), I::I32Const(16), I::I32Shl, I::F32ReinterpretI32]),
    };
    let row = l(&mut c);
    // Output row `row` of the whole product: batch b = row / m, row i = row % m.
    range(&mut c, row, I::LocalGet(0), &[I::LocalGet(1)], 1, &mut |c| {
        c.ops([I::LocalGet(row), I::I32Const(m), I::I32DivU, I::LocalSet(b)]);
        c.ops([I::LocalGet(row), I::I32Const(m), I::I32RemU, I::LocalSet(i)]);
        batch_offset(c, b, &a.batch);
        c.op(I::LocalSet(a_at));
        batch_offset(c, b, &b_layout.batch);
        c.op(I::LocalSet(b_at));
        range(c, j, I::I32Const(0), &[I::I32Const(n)], 1, &mut |c| {
            c.op(if wide { I::F64Const(0.0.into()) } else { I::F32Const(0.0f32.into()) });
            c.op(I::LocalSet(acc));
            range(c, p, I::I32Const(0), &[I::I32Const(k)], 1, &mut |c| {
                c.op(I::LocalGet(acc));
                c.ops([I::LocalGet(a_at), I::LocalGet(i), I::I32Const(sam as i32)]);
                c.ops([I::I32Mul, I::I32Add, I::LocalGet(p), I::I32Const(sak as i32), I::I32Mul, I::I32Add]);
                c.ops([I::I32Const(size), I::I32Mul]);
                load(c, place.lhs);
                c.ops([I::LocalGet(b_at), I::LocalGet(p), I::I32Const(sbk as i32)]);
                c.ops([I::I32Mul, I::I32Add, I::LocalGet(j), I::I32Const(sbn as i32), I::I32Mul, I::I32Add]);
                c.ops([I::I32Const(size), I::I32Mul]);
                load(c, place.rhs);
                c.ops(if wide { [I::F64Mul, I::F64Add] } else { [I::F32Mul, I::F32Add] });
                c.op(I::LocalSet(acc));
            });
            c.ops([I::LocalGet(b), I::I32Const(m), I::I32Mul, I::LocalGet(i), I::I32Add, I::I32Const(n), I::I32Mul]);
            c.ops([I::LocalGet(j), I::I32Add, I::I32Const(size), I::I32Mul, I::LocalGet(acc)]);
            match d.elem {
                ElementType::F64 => c.op(I::F64Store(mem(place.out, 3))),
                ElementType::F16 => c.ops([I::Call(helpers::F32_TO_F16), I::I32Store16(mem(place.out, 1))]),
                _ => c.ops([I::Call(helpers::F32_TO_BF16), I::I32Store16(mem(place.out, 1))]),
            }
        });
    });
    c
}

/// for v in start..end (i32), `end` pushed by `end`.
fn range(c: &mut Code, v: u32, start: I<'static>, end: &[I<'static>], step: i32, body: &mut dyn FnMut(&mut Code)) {
    c.ops([start, I::LocalSet(v), I::Block(BlockType::Empty), I::Loop(BlockType::Empty), I::LocalGet(v)]);
    c.ops.extend(end.iter().cloned());
    c.ops([I::I32GeS, I::BrIf(1)]);
    body(c);
    c.ops([I::LocalGet(v), I::I32Const(step), I::I32Add, I::LocalSet(v), I::Br(0), I::End, I::End]);
}

/// The parameters of [`block_function`], in order (all i32): the byte addresses of
/// this batch's lhs, rhs and output, the block's rows `i_start..i_end`, the dims `m`,
/// `n`, `k`, the element strides of the lhs's free and contracting groups and of the
/// rhs's contracting and free groups, whether to pack this batch's rhs (0 or 1), and the
/// scratch base.
pub const BLOCK_PARAMS: usize = 14;
const A: u32 = 0;
const B: u32 = 1;
const OUT: u32 = 2;
const I_START: u32 = 3;
const I_END: u32 = 4;
const M: u32 = 5;
const N: u32 = 6;
const K: u32 = 7;
const SAM: u32 = 8;
const SAK: u32 = 9;
const SBK: u32 = 10;
const SBN: u32 = 11;
const PACK: u32 = 12;
const SB: u32 = 13;

/// The parameters of [`dot_function`], in order (all i32): the range `begin, end` of the
/// dot's parallel variable (batch x blocks of rows), its descriptor's byte address
/// ([`descriptor`]) and the calling instance's scratch base.
pub const DOT_PARAMS: usize = 4;

/// A descriptor's words (i32, little-endian), in order: the byte addresses of the lhs,
/// rhs and output; `m`, `n`, `k`; the rows of a block and the blocks of a batch; the
/// element strides of the lhs's free and contracting groups and of the rhs's contracting
/// and free groups; the output's bytes per batch; the counts of the lhs's and the rhs's
/// batch dimensions; then each batch dimension as (size, byte stride), the lhs's then
/// the rhs's, innermost first.
const D_LHS: u64 = 0;
const D_RHS: u64 = 1;
const D_OUT: u64 = 2;
const D_M: u64 = 3;
const D_N: u64 = 4;
const D_K: u64 = 5;
const D_ROWS: u64 = 6;
const D_BLOCKS: u64 = 7;
const D_SAM: u64 = 8;
const D_SAK: u64 = 9;
const D_SBK: u64 = 10;
const D_SBN: u64 = 11;
const D_OUT_BATCH: u64 = 12;
const D_LHS_BATCH: u64 = 13;
const D_RHS_BATCH: u64 = 14;
const D_BATCH_DIMS: u64 = 15;

/// The descriptor of an f32 dot (see [`D_LHS`] for its words): everything
/// [`dot_function`] needs to run it.
fn descriptor(d: &DotSpec, place: &DotPlace, a: &Layout, b: &Layout) -> Vec<u8> {
    let rows = block_rows(d);
    let blocks = (d.m as u64).div_ceil(rows);
    // Values past 32 bits wrap, as the constants of a kernel's code would; a plan whose
    // arena fits the 32-bit memory never has one.
    let mut words: Vec<i64> = vec![place.lhs as i64, place.rhs as i64, place.out as i64];
    words.extend([d.m, d.n, d.k].map(|x| x as i64));
    words.extend([rows as i64, blocks as i64]);
    words.extend(a.strides.iter().chain(&b.strides));
    words.push((d.m as i64).wrapping_mul(d.n as i64).wrapping_mul(4));
    words.extend([a.batch.len() as i64, b.batch.len() as i64]);
    for l in [a, b] {
        words.extend(l.batch.iter().rev().flat_map(|&(n, stride)| [n, stride.wrapping_mul(4)]));
    }
    words.into_iter().flat_map(|w| (w as u32).to_le_bytes()).collect()
}

/// The driver an f32 dot kernel runs (see [`DOT_PARAMS`]): per block of its range, the
/// batch's operand addresses from the descriptor's batch dimensions, then a call of
/// [`block_function`] (function 0 of the library), which packs the batch's rhs when the
/// batch changes.
pub fn dot_function() -> Function {
    const BEGIN: u32 = 0;
    const END: u32 = 1;
    const DESC: u32 = 2;
    const SCRATCH: u32 = 3;
    let mut c = Code::new(DOT_PARAMS as u32);
    let l = |c: &mut Code| c.local(ValType::I32);
    let (idx, b, i_start, packed, pack) = (l(&mut c), l(&mut c), l(&mut c), l(&mut c), l(&mut c));
    let (rows, blocks, m, lhs_dims) = (l(&mut c), l(&mut c), l(&mut c), l(&mut c));
    let (at, end, inner, offset) = (l(&mut c), l(&mut c), l(&mut c), l(&mut c));
    let word = |w: u64| I::I32Load(mem(4 * w, 2));
    c.ops([I::LocalGet(DESC), word(D_ROWS), I::LocalSet(rows)]);
    c.ops([I::LocalGet(DESC), word(D_BLOCKS), I::LocalSet(blocks)]);
    c.ops([I::LocalGet(DESC), word(D_M), I::LocalSet(m)]);
    // The lhs's batch dimensions start at word D_BATCH_DIMS, the rhs's after them.
    c.ops([I::LocalGet(DESC), I::I32Const(4 * D_BATCH_DIMS as i32), I::I32Add, I::LocalSet(lhs_dims)]);
    c.ops([I::I32Const(-1), I::LocalSet(packed)]);
    // Pushes operand batch `b`'s byte offset: the sum over its batch dimensions (from
    // address `first`, as many as word `count` says) of ((b / inner) % size) * stride,
    // inner the product of the sizes before it; `at` ends past them.
    let batch_offset = |c: &mut Code, first: I<'static>, count: u64| {
        c.ops([I::I32Const(0), I::LocalSet(offset), I::I32Const(1), I::LocalSet(inner)]);
        c.ops([first, I::LocalTee(at), I::LocalGet(DESC), word(count), I::I32Const(8), I::I32Mul, I::I32Add]);
        c.ops([I::LocalSet(end), I::Block(BlockType::Empty), I::Loop(BlockType::Empty)]);
        c.ops([I::LocalGet(at), I::LocalGet(end), I::I32GeU, I::BrIf(1)]);
        c.ops([I::LocalGet(b), I::LocalGet(inner), I::I32DivU, I::LocalGet(at), word(0), I::I32RemU]);
        c.ops([I::LocalGet(at), word(1), I::I32Mul, I::LocalGet(offset), I::I32Add, I::LocalSet(offset)]);
        c.ops([I::LocalGet(inner), I::LocalGet(at), word(0), I::I32Mul, I::LocalSet(inner)]);
        c.ops([I::LocalGet(at), I::I32Const(8), I::I32Add, I::LocalSet(at), I::Br(0), I::End, I::End]);
        c.op(I::LocalGet(offset));
    };
    range(&mut c, idx, I::LocalGet(BEGIN), &[I::LocalGet(END)], 1, &mut |c| {
        c.ops([I::LocalGet(idx), I::LocalGet(blocks), I::I32DivU, I::LocalSet(b)]);
        c.ops([I::LocalGet(idx), I::LocalGet(blocks), I::I32RemU, I::LocalGet(rows), I::I32Mul, I::LocalSet(i_start)]);
        c.ops([I::LocalGet(b), I::LocalGet(packed), I::I32Ne, I::LocalTee(pack), I::If(BlockType::Empty)]);
        c.ops([I::LocalGet(b), I::LocalSet(packed), I::End]);
        // Arguments, in BLOCK_PARAMS order.
        batch_offset(c, I::LocalGet(lhs_dims), D_LHS_BATCH);
        c.ops([I::LocalGet(DESC), word(D_LHS), I::I32Add]);
        // The rhs's dimensions follow the lhs's: `at` ended there.
        batch_offset(c, I::LocalGet(at), D_RHS_BATCH);
        c.ops([I::LocalGet(DESC), word(D_RHS), I::I32Add]);
        c.ops([I::LocalGet(b), I::LocalGet(DESC), word(D_OUT_BATCH), I::I32Mul, I::LocalGet(DESC), word(D_OUT)]);
        c.op(I::I32Add);
        // i_start, i_end = min(i_start + rows, m)
        c.ops([I::LocalGet(i_start), I::LocalGet(i_start), I::LocalGet(rows), I::I32Add]);
        c.ops([
            I::LocalGet(m),
            I::LocalGet(i_start),
            I::LocalGet(rows),
            I::I32Add,
            I::LocalGet(m),
            I::I32LtS,
            I::Select,
        ]);
        c.op(I::LocalGet(m));
        for w in [D_N, D_K, D_SAM, D_SAK, D_SBK, D_SBN] {
            c.ops([I::LocalGet(DESC), word(w)]);
        }
        c.ops([I::LocalGet(pack), I::LocalGet(SCRATCH), I::Call(0)]);
    });
    c.finish()
}

/// The GEMM body every f32 dot calls (see the module doc and [`BLOCK_PARAMS`]): packs
/// the batch's rhs when asked, then the block's lhs rows, and runs the register tiles
/// over them panel by panel, broadcasting lhs values in form `splat`.
pub fn block_function(splat: Splat) -> Function {
    let mut c = Code::new(BLOCK_PARAMS as u32);
    let l = |c: &mut Code| c.local(ValType::I32);
    let (jp, p, r, col, at, ga, i0) = (l(&mut c), l(&mut c), l(&mut c), l(&mut c), l(&mut c), l(&mut c), l(&mut c));
    let (panels, k4, kpanel, pa, tile) = (l(&mut c), l(&mut c), l(&mut c), l(&mut c), l(&mut c));
    let accs: Vec<u32> = (0..8).map(|_| c.local(ValType::V128)).collect();
    let (bv0, bv1, av) = (c.local(ValType::V128), c.local(ValType::V128), c.local(ValType::V128));
    // The byte address of each packed lhs row's first element, and (other locals) of
    // each packed rhs column's.
    let row_bases: Vec<u32> = (0..MR).map(|_| c.local(ValType::I32)).collect();
    let col_bases: Vec<u32> = (0..NR).map(|_| c.local(ValType::I32)).collect();
    let nr = NR as i32;
    // panels = ceil(n / NR); k4 = k * 4 (a packed row of the block); kpanel = k4 * NR (a
    // packed panel). Scratch, from sb: the packed rhs, the packed block (pa), the edge
    // tile (after the block's whole groups of MR rows).
    c.ops([I::LocalGet(N), I::I32Const(nr - 1), I::I32Add, I::I32Const(nr), I::I32DivU, I::LocalSet(panels)]);
    c.ops([
        I::LocalGet(K),
        I::I32Const(4),
        I::I32Mul,
        I::LocalTee(k4),
        I::I32Const(nr),
        I::I32Mul,
        I::LocalSet(kpanel),
    ]);
    c.ops([I::LocalGet(SB), I::LocalGet(panels), I::LocalGet(kpanel), I::I32Mul, I::I32Add, I::LocalSet(pa)]);
    c.ops([I::LocalGet(I_END), I::LocalGet(I_START), I::I32Sub, I::I32Const(MR as i32 - 1), I::I32Add]);
    c.ops([
        I::I32Const(-(MR as i32)),
        I::I32And,
        I::LocalGet(k4),
        I::I32Mul,
        I::LocalGet(pa),
        I::I32Add,
        I::LocalSet(tile),
    ]);
    c.ops([I::LocalGet(PACK), I::If(BlockType::Empty)]);
    pack_rhs(&mut c, (jp, p, col, at), kpanel, panels, &col_bases);
    c.op(I::End);
    // Pack the block's rows in groups of MR: group g, row p holds lhs[b, i0 + r, p] for
    // each r (i0 = i_start + g*MR) at pa + (i0 - i_start)*k*4 + p*MR*4. A row past m
    // repeats row m - 1: its outputs are never stored, so any finite or not value will do.
    range(&mut c, i0, I::LocalGet(I_START), &[I::LocalGet(I_END)], MR as i32, &mut |c| {
        c.ops([I::LocalGet(i0), I::LocalGet(I_START), I::I32Sub, I::LocalGet(k4), I::I32Mul]);
        c.ops([I::LocalGet(pa), I::I32Add, I::LocalSet(ga)]);
        for (rr, &base) in (0..).zip(&row_bases) {
            // base = A + min(i0 + rr, m - 1) * sam * 4
            c.ops([I::LocalGet(i0), I::I32Const(rr), I::I32Add, I::LocalTee(r), I::LocalGet(M), I::I32Const(1)]);
            c.ops([I::I32Sub, I::LocalGet(r), I::LocalGet(M), I::I32LtS, I::Select, I::LocalGet(SAM), I::I32Mul]);
            c.ops([I::I32Const(4), I::I32Mul, I::LocalGet(A), I::I32Add, I::LocalSet(base)]);
        }
        // col: p * sak * 4, the element's distance from its row's base.
        c.ops([I::I32Const(0), I::LocalSet(col)]);
        range(c, p, I::I32Const(0), &[I::LocalGet(K)], 1, &mut |c| {
            for (rr, &base) in (0..).zip(&row_bases) {
                c.ops([I::LocalGet(ga), I::LocalGet(base), I::LocalGet(col), I::I32Add, I::F32Load(mem(0, 2))]);
                c.op(I::F32Store(mem(4 * rr, 2)));
            }
            c.ops([I::LocalGet(ga), I::I32Const(4 * MR as i32), I::I32Add, I::LocalSet(ga)]);
            c.ops([I::LocalGet(col), I::LocalGet(SAK), I::I32Const(4), I::I32Mul, I::I32Add, I::LocalSet(col)]);
        });
    });
    // Per panel: at0, its packed rows; the group's packed rows start where the previous
    // group's walk over k ended (ga); obase, the output address of the group's first row
    // in the panel, steps MR rows a group.
    let (at0, obase, n4) = (l(&mut c), l(&mut c), l(&mut c));
    c.ops([I::LocalGet(N), I::I32Const(4), I::I32Mul, I::LocalSet(n4)]);
    range(&mut c, jp, I::I32Const(0), &[I::LocalGet(panels)], 1, &mut |c| {
        c.ops([I::LocalGet(jp), I::LocalGet(kpanel), I::I32Mul, I::LocalGet(SB), I::I32Add, I::LocalSet(at0)]);
        c.ops([I::LocalGet(pa), I::LocalSet(ga)]);
        c.ops([I::LocalGet(I_START), I::LocalGet(n4), I::I32Mul, I::LocalGet(jp), I::I32Const(4 * nr), I::I32Mul]);
        c.ops([I::I32Add, I::LocalGet(OUT), I::I32Add, I::LocalSet(obase)]);
        range(c, i0, I::LocalGet(I_START), &[I::LocalGet(I_END)], MR as i32, &mut |c| {
            for &a in &accs {
                c.ops([I::V128Const(0), I::LocalSet(a)]);
            }
            c.ops([I::LocalGet(at0), I::LocalSet(at)]);
            range(c, p, I::I32Const(0), &[I::LocalGet(K)], 1, &mut |c| {
                c.ops([I::LocalGet(at), I::V128Load(mem(0, 4)), I::LocalSet(bv0)]);
                c.ops([I::LocalGet(at), I::V128Load(mem(16, 4)), I::LocalSet(bv1)]);
                for rr in 0..MR as usize {
                    let at = mem(4 * rr as u64, 2);
                    match splat {
                        Splat::Load => c.ops([I::LocalGet(ga), I::V128Load32Splat(at), I::LocalSet(av)]),
                        Splat::LoadThenSplat => {
                            c.ops([I::LocalGet(ga), I::F32Load(at), I::F32x4Splat, I::LocalSet(av)])
                        }
                    }
                    for (h, bv) in [bv0, bv1].into_iter().enumerate() {
                        let acc = accs[rr * 2 + h];
                        c.ops([I::LocalGet(acc), I::LocalGet(av), I::LocalGet(bv), I::F32x4Mul, I::F32x4Add]);
                        c.op(I::LocalSet(acc));
                    }
                }
                c.ops([I::LocalGet(at), I::I32Const(4 * nr), I::I32Add, I::LocalSet(at)]);
                c.ops([I::LocalGet(ga), I::I32Const(4 * MR as i32), I::I32Add, I::LocalSet(ga)]);
            });
            store_tile(c, (i0, jp, r, p, col, tile), (obase, n4), &accs);
            c.ops([
                I::LocalGet(obase),
                I::LocalGet(n4),
                I::I32Const(MR as i32),
                I::I32Mul,
                I::I32Add,
                I::LocalSet(obase),
            ]);
        });
    });
    c.finish()
}

/// Packs the batch's rhs (at byte address `B`) at the scratch base `SB`: panel jp, row
/// p, column c holds rhs[p, jp*NR + c] (column n - 1 past n). A whole panel of a rhs whose
/// columns are contiguous is copied two vectors a row.
fn pack_rhs(c: &mut Code, (jp, p, col, at): (u32, u32, u32, u32), kpanel: u32, panels: u32, col_bases: &[u32]) {
    let nr = NR as i32;
    range(c, jp, I::I32Const(0), &[I::LocalGet(panels)], 1, &mut |c| {
        // at = jp * k*4*NR + sb: the panel's first row.
        c.ops([I::LocalGet(jp), I::LocalGet(kpanel), I::I32Mul, I::LocalGet(SB), I::I32Add, I::LocalSet(at)]);
        c.ops([I::LocalGet(SBN), I::I32Const(1), I::I32Eq]);
        c.ops([I::LocalGet(jp), I::I32Const(nr), I::I32Mul, I::I32Const(nr), I::I32Add, I::LocalGet(N), I::I32LeS]);
        c.ops([I::I32And, I::If(BlockType::Empty)]);
        // col: the byte address of row p's first column of the panel.
        range(c, p, I::I32Const(0), &[I::LocalGet(K)], 1, &mut |c| {
            c.ops([I::LocalGet(p), I::LocalGet(SBK), I::I32Mul, I::LocalGet(jp), I::I32Const(nr), I::I32Mul]);
            c.ops([I::I32Add, I::I32Const(4), I::I32Mul, I::LocalGet(B), I::I32Add, I::LocalSet(col)]);
            c.ops([I::LocalGet(at), I::LocalGet(col), I::V128Load(mem(0, 2)), I::V128Store(mem(0, 4))]);
            c.ops([I::LocalGet(at), I::LocalGet(col), I::V128Load(mem(16, 2)), I::V128Store(mem(16, 4))]);
            c.ops([I::LocalGet(at), I::I32Const(4 * nr), I::I32Add, I::LocalSet(at)]);
        });
        c.op(I::Else);
        // A column past n repeats column n - 1 (its outputs are never stored).
        for (cc, &base) in (0..).zip(col_bases) {
            // base = B + min(jp*NR + cc, n - 1) * sbn * 4
            c.ops([I::LocalGet(jp), I::I32Const(nr), I::I32Mul, I::I32Const(cc), I::I32Add, I::LocalTee(col)]);
            c.ops([I::LocalGet(N), I::I32Const(1), I::I32Sub, I::LocalGet(col), I::LocalGet(N), I::I32LtS, I::Select]);
            c.ops([
                I::LocalGet(SBN),
                I::I32Mul,
                I::I32Const(4),
                I::I32Mul,
                I::LocalGet(B),
                I::I32Add,
                I::LocalSet(base),
            ]);
        }
        // col: p * sbk * 4, the element's distance from its column's base.
        c.ops([I::I32Const(0), I::LocalSet(col)]);
        range(c, p, I::I32Const(0), &[I::LocalGet(K)], 1, &mut |c| {
            for (cc, &base) in (0..).zip(col_bases) {
                c.ops([I::LocalGet(at), I::LocalGet(base), I::LocalGet(col), I::I32Add, I::F32Load(mem(0, 2))]);
                c.op(I::F32Store(mem(4 * cc, 2)));
            }
            c.ops([I::LocalGet(at), I::I32Const(4 * nr), I::I32Add, I::LocalSet(at)]);
            c.ops([I::LocalGet(col), I::LocalGet(SBK), I::I32Const(4), I::I32Mul, I::I32Add, I::LocalSet(col)]);
        });
        c.op(I::End);
    });
}

/// Stores the tile of rows i0.. and panel jp: a whole tile straight to the output (its
/// first row at `obase`, rows `n4` bytes apart), an edge tile through the scratch tile,
/// element by element (the output at byte address `OUT`).
fn store_tile(
    c: &mut Code,
    (i0, jp, r, p, col, tile): (u32, u32, u32, u32, u32, u32),
    (obase, n4): (u32, u32),
    accs: &[u32],
) {
    let nr = NR as i32;
    c.ops([I::LocalGet(i0), I::I32Const(MR as i32), I::I32Add, I::LocalGet(M), I::I32LeS]);
    c.ops([I::LocalGet(jp), I::I32Const(nr), I::I32Mul, I::I32Const(nr), I::I32Add]);
    c.ops([I::LocalGet(N), I::I32LeS, I::I32And, I::If(BlockType::Empty)]);
    // Row rr of the tile at obase + rr * n * 4.
    c.ops([I::LocalGet(obase), I::LocalSet(col)]);
    for rr in 0..MR as usize {
        c.ops([I::LocalGet(col), I::LocalGet(accs[rr * 2]), I::V128Store(mem(0, 2))]);
        c.ops([I::LocalGet(col), I::LocalGet(accs[rr * 2 + 1]), I::V128Store(mem(16, 2))]);
        c.ops([I::LocalGet(col), I::LocalGet(n4), I::I32Add, I::LocalSet(col)]);
    }
    c.op(I::Else);
    for (q, &a) in accs.iter().enumerate() {
        c.ops([I::LocalGet(tile), I::LocalGet(a), I::V128Store(mem(16 * q as u64, 4))]);
    }
    range(c, r, I::I32Const(0), &[I::I32Const(MR as i32)], 1, &mut |c| {
        range(c, p, I::I32Const(0), &[I::I32Const(nr)], 1, &mut |c| {
            // row i0 + r < m and column jp*NR + p < n: out[...] = tile[r*NR + p]
            c.ops([I::LocalGet(i0), I::LocalGet(r), I::I32Add, I::LocalGet(M), I::I32LtS]);
            c.ops([I::LocalGet(jp), I::I32Const(nr), I::I32Mul, I::LocalGet(p), I::I32Add]);
            c.ops([I::LocalGet(N), I::I32LtS, I::I32And, I::If(BlockType::Empty)]);
            c.ops([I::LocalGet(i0), I::LocalGet(r), I::I32Add, I::LocalGet(N), I::I32Mul, I::LocalGet(jp)]);
            c.ops([I::I32Const(nr), I::I32Mul, I::I32Add, I::LocalGet(p), I::I32Add, I::I32Const(4), I::I32Mul]);
            c.ops([I::LocalGet(OUT), I::I32Add]);
            c.ops([I::LocalGet(r), I::I32Const(nr), I::I32Mul, I::LocalGet(p), I::I32Add, I::I32Const(4), I::I32Mul]);
            c.ops([I::LocalGet(tile), I::I32Add, I::F32Load(mem(0, 2)), I::F32Store(mem(0, 2)), I::End]);
        });
    });
    c.op(I::End);
}
