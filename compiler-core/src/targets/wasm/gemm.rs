//! The plan's dot kernels (`KernelBody::Dot`: a batched GEMM `out[b, m, n] = sum_k
//! lhs[b, m, k] rhs[b, k, n]`) as a blocked SIMD128 GEMM over f32. The parallel
//! variable runs over the batch times blocks of [`ROWS`] output rows ([`extent`]), so a
//! single large GEMM splits across threads as well as a batch does. A call packs the
//! rhs of a batch into panels of [`NR`] columns (`k` rows of [`NR`] contiguous floats,
//! zero past `n`) when it reaches that batch (a call over several blocks of one batch
//! packs it once), then per block its lhs rows into groups of [`MR`] (`k` groups of
//! [`MR`] floats, zero past `m`), and runs, panel by panel, a register tile of [`MR`] x
//! [`NR`] outputs (8 `f32x4` accumulators) over `k` for each group: the panel is
//! reused by every group of the block while it is in cache. Packing reads the operands
//! through their strides, so transposed operands cost nothing more. Each output sums
//! its products in `k` order, rounded at every step (`mul`, then `add`, from +0): the
//! interpreter's f32 dot, bit for bit, however the range is split. Edge tiles go through
//! a scratch tile and are stored element by element.
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
use wasm_encoder::{BlockType, Function, Instruction as I, MemArg, ValType};

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

/// The GEMM function of `d`, or why it is not emitted.
pub fn emit(d: &DotSpec, place: &DotPlace) -> Result<Function, String> {
    let (a_s, b_s) = (
        layout(place.lhs_dims, &d.lhs_perm, [d.batch, d.m, d.k]),
        layout(place.rhs_dims, &d.rhs_perm, [d.batch, d.k, d.n]),
    );
    let (Some(a), Some(b)) = (a_s, b_s) else {
        return Err("a dot operand whose free or contracting dimensions are not one stride each".into());
    };
    match d.elem {
        ElementType::F32 => Ok(blocked(d, place, a, b)),
        ElementType::F64 | ElementType::F16 | ElementType::BF16 => Ok(plain(d, place, a, b)),
        t => Err(format!("a {t} dot")),
    }
}

/// f64, f16 and bf16 dots: one output at a time, its products summed in `k` order (f64
/// in f64; f16 and bf16 in f32, whose products of them are exact, rounded once at the
/// end), as the dots the planner turns into reductions are.
fn plain(d: &DotSpec, place: &DotPlace, a: Layout, b_layout: Layout) -> Function {
    let ([sam, sak], [sbk, sbn]) = (a.strides, b_layout.strides);
    let wide = d.elem == ElementType::F64;
    let size = if wide { 8 } else { 2 };
    let ty = if wide { ValType::F64 } else { ValType::F32 };
    let (m, n, k) = (d.m as i32, d.n as i32, d.k as i32);
    let mut c = Code::new(2);
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
    c.finish()
}

/// for v in start..end (i32), `end` pushed by `end`.
fn range(c: &mut Code, v: u32, start: I<'static>, end: &[I<'static>], step: i32, body: &mut dyn FnMut(&mut Code)) {
    c.ops([start, I::LocalSet(v), I::Block(BlockType::Empty), I::Loop(BlockType::Empty), I::LocalGet(v)]);
    c.ops.extend(end.iter().cloned());
    c.ops([I::I32GeS, I::BrIf(1)]);
    body(c);
    c.ops([I::LocalGet(v), I::I32Const(step), I::I32Add, I::LocalSet(v), I::Br(0), I::End, I::End]);
}

/// f32: packed operands and register tiles, over blocks of rows (see the module doc).
fn blocked(d: &DotSpec, place: &DotPlace, a: Layout, b_layout: Layout) -> Function {
    let ([sam, sak], [sbk, sbn]) = (a.strides, b_layout.strides);
    let (m, n, k) = (d.m as i32, d.n as i32, d.k as i32);
    let panels = (d.n as u32).div_ceil(NR) as i32;
    let rows = block_rows(d) as i32;
    let blocks = (m as u32).div_ceil(rows as u32) as i32;
    // Scratch offsets from the instance's base: packed rhs, packed block, edge tile.
    let pb = 0u64;
    let pa = pb + 4 * (panels as u64 * NR as u64 * d.k as u64);
    let tile = pa + 4 * (rows as u64 * d.k as u64);
    let nr = NR as i32;
    let mut c = Code::new(2);
    let l = |c: &mut Code| c.local(ValType::I32);
    let (idx, b, i_start, i_end, i0) = (l(&mut c), l(&mut c), l(&mut c), l(&mut c), l(&mut c));
    let (jp, p, r, col, at, ga) = (l(&mut c), l(&mut c), l(&mut c), l(&mut c), l(&mut c), l(&mut c));
    let (a_at, b_at, packed, sb) = (l(&mut c), l(&mut c), l(&mut c), l(&mut c));
    let accs: Vec<u32> = (0..8).map(|_| c.local(ValType::V128)).collect();
    let (bv0, bv1, av) = (c.local(ValType::V128), c.local(ValType::V128), c.local(ValType::V128));

    c.ops([I::GlobalGet(0), I::LocalSet(sb), I::I32Const(-1), I::LocalSet(packed)]);
    range(&mut c, idx, I::LocalGet(0), &[I::LocalGet(1)], 1, &mut |c| {
        // Batch b, rows i_start..i_end.
        c.ops([I::LocalGet(idx), I::I32Const(blocks), I::I32DivU, I::LocalSet(b)]);
        c.ops([I::LocalGet(idx), I::I32Const(blocks), I::I32RemU, I::I32Const(rows), I::I32Mul, I::LocalTee(i_start)]);
        c.ops([I::I32Const(rows), I::I32Add, I::LocalTee(i_end), I::I32Const(m), I::LocalGet(i_end)]);
        c.ops([I::I32Const(m), I::I32LtS, I::Select, I::LocalSet(i_end)]);
        batch_offset(c, b, &a.batch);
        c.op(I::LocalSet(a_at));
        // This batch's rhs, packed unless this call packed it already.
        c.ops([I::LocalGet(b), I::LocalGet(packed), I::I32Ne, I::If(BlockType::Empty)]);
        c.ops([I::LocalGet(b), I::LocalSet(packed)]);
        batch_offset(c, b, &b_layout.batch);
        c.op(I::LocalSet(b_at));
        pack_rhs(c, place, (k, n, panels, sbk, sbn), (jp, p, col, at, b_at, sb), pb);
        c.op(I::End);
        // Pack the block's rows in groups of MR: group g, row p holds lhs[b, i0 + r, p]
        // for each r (i0 = i_start + g*MR), or 0 past m, at ((i0 - i_start)*k + p*MR)*4.
        range(c, i0, I::LocalGet(i_start), &[I::LocalGet(i_end)], MR as i32, &mut |c| {
            c.ops([I::LocalGet(i0), I::LocalGet(i_start), I::I32Sub, I::I32Const(k * 4), I::I32Mul]);
            c.ops([I::LocalGet(sb), I::I32Add, I::LocalSet(ga)]);
            range(c, p, I::I32Const(0), &[I::I32Const(k)], 1, &mut |c| {
                for rr in 0..MR as i32 {
                    c.ops([I::LocalGet(i0), I::I32Const(rr), I::I32Add, I::LocalSet(r)]);
                    c.ops([I::LocalGet(ga), I::LocalGet(p), I::I32Const(4 * MR as i32), I::I32Mul, I::I32Add]);
                    c.op(I::LocalGet(a_at));
                    c.ops([I::LocalGet(r), I::I32Const(m - 1), I::LocalGet(r), I::I32Const(m), I::I32LtS, I::Select]);
                    c.ops([I::I32Const(sam as i32), I::I32Mul, I::I32Add]);
                    c.ops([I::LocalGet(p), I::I32Const(sak as i32), I::I32Mul, I::I32Add, I::I32Const(4), I::I32Mul]);
                    c.ops([I::F32Load(mem(place.lhs, 2)), I::F32Const(0.0f32.into())]);
                    c.ops([I::LocalGet(r), I::I32Const(m), I::I32LtS, I::Select]);
                    c.op(I::F32Store(mem(pa + 4 * rr as u64, 2)));
                }
            });
        });
        range(c, jp, I::I32Const(0), &[I::I32Const(panels)], 1, &mut |c| {
            range(c, i0, I::LocalGet(i_start), &[I::LocalGet(i_end)], MR as i32, &mut |c| {
                for &a in &accs {
                    c.ops([I::V128Const(0), I::LocalSet(a)]);
                }
                // at: this panel's packed rows; ga: this group's.
                c.ops([
                    I::LocalGet(jp),
                    I::I32Const(k * 4 * nr),
                    I::I32Mul,
                    I::LocalGet(sb),
                    I::I32Add,
                    I::LocalSet(at),
                ]);
                c.ops([I::LocalGet(i0), I::LocalGet(i_start), I::I32Sub, I::I32Const(k * 4), I::I32Mul]);
                c.ops([I::LocalGet(sb), I::I32Add, I::LocalSet(ga)]);
                range(c, p, I::I32Const(0), &[I::I32Const(k)], 1, &mut |c| {
                    c.ops([I::LocalGet(at), I::V128Load(mem(pb, 4)), I::LocalSet(bv0)]);
                    c.ops([I::LocalGet(at), I::V128Load(mem(pb + 16, 4)), I::LocalSet(bv1)]);
                    for rr in 0..MR as usize {
                        c.ops([I::LocalGet(ga), I::V128Load32Splat(mem(pa + 4 * rr as u64, 2)), I::LocalSet(av)]);
                        for (h, bv) in [bv0, bv1].into_iter().enumerate() {
                            let acc = accs[rr * 2 + h];
                            c.ops([I::LocalGet(acc), I::LocalGet(av), I::LocalGet(bv), I::F32x4Mul, I::F32x4Add]);
                            c.op(I::LocalSet(acc));
                        }
                    }
                    c.ops([I::LocalGet(at), I::I32Const(4 * nr), I::I32Add, I::LocalSet(at)]);
                    c.ops([I::LocalGet(ga), I::I32Const(4 * MR as i32), I::I32Add, I::LocalSet(ga)]);
                });
                store_tile(c, place, (m, n), (b, i0, jp, r, p, col, sb), &accs, tile);
            });
        });
    });
    c.finish()
}

/// Packs batch `b`'s rhs (its element offset in `b_at`) at the scratch base `sb` plus
/// `pb`: panel jp, row p, column c holds rhs[b, p, jp*NR + c], or 0 past n. A whole
/// panel of a rhs whose columns are contiguous is copied two vectors a row.
fn pack_rhs(
    c: &mut Code,
    place: &DotPlace,
    (k, n, panels, sbk, sbn): (i32, i32, i32, i64, i64),
    (jp, p, col, at, b_at, sb): (u32, u32, u32, u32, u32, u32),
    pb: u64,
) {
    let nr = NR as i32;
    range(c, jp, I::I32Const(0), &[I::I32Const(panels)], 1, &mut |c| {
        // at = ((jp * k) * NR) * 4 + sb: the panel's first row.
        c.ops([I::LocalGet(jp), I::I32Const(k * 4 * nr), I::I32Mul, I::LocalGet(sb), I::I32Add, I::LocalSet(at)]);
        if sbn == 1 {
            c.ops([I::LocalGet(jp), I::I32Const(nr), I::I32Mul, I::I32Const(nr), I::I32Add, I::I32Const(n)]);
            c.ops([I::I32LeS, I::If(BlockType::Empty)]);
            // col: the element offset of row p's first column of the panel.
            range(c, p, I::I32Const(0), &[I::I32Const(k)], 1, &mut |c| {
                c.ops([I::LocalGet(b_at), I::LocalGet(p), I::I32Const(sbk as i32), I::I32Mul, I::I32Add]);
                c.ops([I::LocalGet(jp), I::I32Const(nr), I::I32Mul, I::I32Add, I::I32Const(4), I::I32Mul]);
                c.op(I::LocalSet(col));
                c.ops([I::LocalGet(at), I::LocalGet(col), I::V128Load(mem(place.rhs, 2)), I::V128Store(mem(pb, 4))]);
                c.ops([I::LocalGet(at), I::LocalGet(col), I::V128Load(mem(place.rhs + 16, 2))]);
                c.ops([I::V128Store(mem(pb + 16, 4))]);
                c.ops([I::LocalGet(at), I::I32Const(4 * nr), I::I32Add, I::LocalSet(at)]);
            });
            c.op(I::Else);
        }
        range(c, p, I::I32Const(0), &[I::I32Const(k)], 1, &mut |c| {
            for cc in 0..nr {
                // col = jp*NR + cc; the element (at a clamped column), or 0.
                c.ops([I::LocalGet(jp), I::I32Const(nr), I::I32Mul, I::I32Const(cc), I::I32Add, I::LocalSet(col)]);
                c.ops([I::LocalGet(at), I::LocalGet(b_at)]);
                c.ops([I::LocalGet(p), I::I32Const(sbk as i32), I::I32Mul, I::I32Add]);
                c.ops([I::LocalGet(col), I::I32Const(n - 1), I::LocalGet(col), I::I32Const(n), I::I32LtS, I::Select]);
                c.ops([I::I32Const(sbn as i32), I::I32Mul, I::I32Add, I::I32Const(4), I::I32Mul]);
                c.ops([I::F32Load(mem(place.rhs, 2)), I::F32Const(0.0f32.into())]);
                c.ops([I::LocalGet(col), I::I32Const(n), I::I32LtS, I::Select]);
                c.op(I::F32Store(mem(pb + 4 * cc as u64, 2)));
            }
            c.ops([I::LocalGet(at), I::I32Const(4 * nr), I::I32Add, I::LocalSet(at)]);
        });
        if sbn == 1 {
            c.op(I::End);
        }
    });
}

/// Stores the tile of rows i0.. and panel jp: a whole tile straight to the output, an
/// edge tile through the scratch tile (at `sb` plus `tile`), element by element.
fn store_tile(
    c: &mut Code,
    place: &DotPlace,
    (m, n): (i32, i32),
    (b, i0, jp, r, p, col, sb): (u32, u32, u32, u32, u32, u32, u32),
    accs: &[u32],
    tile: u64,
) {
    let nr = NR as i32;
    c.ops([I::LocalGet(i0), I::I32Const(MR as i32), I::I32Add, I::I32Const(m), I::I32LeS]);
    c.ops([I::LocalGet(jp), I::I32Const(nr), I::I32Mul, I::I32Const(nr), I::I32Add]);
    c.ops([I::I32Const(n), I::I32LeS, I::I32And, I::If(BlockType::Empty)]);
    for rr in 0..MR as usize {
        // col = ((b*m + i0 + rr) * n + jp*NR) * 4
        c.ops([I::LocalGet(b), I::I32Const(m), I::I32Mul, I::LocalGet(i0), I::I32Add]);
        c.ops([I::I32Const(rr as i32), I::I32Add, I::I32Const(n), I::I32Mul]);
        c.ops([I::LocalGet(jp), I::I32Const(nr), I::I32Mul, I::I32Add, I::I32Const(4), I::I32Mul]);
        c.op(I::LocalTee(col));
        c.ops([I::LocalGet(accs[rr * 2]), I::V128Store(mem(place.out, 2))]);
        c.ops([I::LocalGet(col), I::LocalGet(accs[rr * 2 + 1]), I::V128Store(mem(place.out + 16, 2))]);
    }
    c.op(I::Else);
    for (q, &a) in accs.iter().enumerate() {
        c.ops([I::LocalGet(sb), I::LocalGet(a), I::V128Store(mem(tile + 16 * q as u64, 4))]);
    }
    range(c, r, I::I32Const(0), &[I::I32Const(MR as i32)], 1, &mut |c| {
        range(c, p, I::I32Const(0), &[I::I32Const(nr)], 1, &mut |c| {
            // row i0 + r < m and column jp*NR + p < n: out[...] = tile[r*NR + p]
            c.ops([I::LocalGet(i0), I::LocalGet(r), I::I32Add, I::I32Const(m), I::I32LtS]);
            c.ops([I::LocalGet(jp), I::I32Const(nr), I::I32Mul, I::LocalGet(p), I::I32Add]);
            c.ops([I::I32Const(n), I::I32LtS, I::I32And, I::If(BlockType::Empty)]);
            c.ops([I::LocalGet(b), I::I32Const(m), I::I32Mul, I::LocalGet(i0), I::I32Add, I::LocalGet(r)]);
            c.ops([I::I32Add, I::I32Const(n), I::I32Mul, I::LocalGet(jp), I::I32Const(nr), I::I32Mul]);
            c.ops([I::I32Add, I::LocalGet(p), I::I32Add, I::I32Const(4), I::I32Mul]);
            c.ops([I::LocalGet(r), I::I32Const(nr), I::I32Mul, I::LocalGet(p), I::I32Add, I::I32Const(4), I::I32Mul]);
            c.ops([I::LocalGet(sb), I::I32Add, I::F32Load(mem(tile, 2)), I::F32Store(mem(place.out, 2)), I::End]);
        });
    });
    c.op(I::End);
}
