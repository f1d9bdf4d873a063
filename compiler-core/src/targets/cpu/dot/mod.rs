//! Dots as batched GEMMs: every (batch, block of rows) is a task on the thread pool, so
//! a batch of small products (attention's heads) spreads over the cores as well as one
//! large product does. f32 runs on this target's own register tiles (`tiles.rs`: no
//! allocation or set-up per call, which dominates a 128x128x64 product), f64 and CPUs
//! without AVX2 through the `gemm` crate, one single-threaded call per task.
//!
//! f32 and f64 operands are read in place: each is viewed as `[batch, rows, cols]`
//! through strides when its dimension numbers allow (`operand.rs`: a transposed operand,
//! or heads split out of a `[b, s, h, d]` tensor, need no copy), and copied into that
//! order otherwise. The result `[batch, m, n]` is written straight into the output
//! buffer. f16/bf16 are computed in f32 and rounded once at the end.
//!
//! A dot fusion's epilogue may run inside the dot's tasks ([`Epilogue`], when the plan
//! allows it: `kernel::chains::tile_epilogue`): each task computes a block of whole rows
//! of the result, then runs the epilogue on the rows that read exactly that block, while
//! it is still in the task's cache, instead of a second pass over the whole result.

mod operand;
mod tiles;

use operand::Operand;

use crate::ir::{ElementType, Literal, Shape};
use crate::kernel::{BufferId, DotSpec, KernelPlan};

/// The epilogue of a dot run block by block of the dot's rows: `run(r0, r1)` computes its
/// rows `r0..r1`, which read only the dot's result rows `r0 * dot_rows..r1 * dot_rows`
/// (the result viewed as `[batch * m, n]`), and writes nothing the dot reads.
pub struct Epilogue<'a> {
    pub rows: usize,
    pub dot_rows: usize,
    /// Whether the epilogue alone is worth splitting across threads (then so is the
    /// pair, however small the dot).
    pub parallel: bool,
    pub run: &'a (dyn Fn(usize, usize) + Sync),
}

/// Computes the dot of the operands in buffers `lb` and `rb` into buffer `ob`, and then
/// `epilogue` (each task's rows as soon as they are computed, for f32 and f64; after the
/// whole dot for the types computed in f32).
///
/// # Safety
/// `lhs`, `rhs` and `out` point to the bytes of those buffers (of their plan sizes),
/// aligned to their element types; `out` overlaps neither operand.
pub unsafe fn run(
    spec: &DotSpec,
    plan: &KernelPlan,
    (lb, lhs): (BufferId, *const u8),
    (rb, rhs): (BufferId, *const u8),
    (ob, out): (BufferId, *mut u8),
    epilogue: Option<&Epilogue>,
) -> Result<(), String> {
    let (ls, rs) = (&plan.buffers[lb].shape, &plan.buffers[rb].shape);
    let len = spec.batch * spec.m * spec.n;
    if plan.buffers[ob].shape.num_elements() != len {
        return Err("the dot's output buffer has the wrong size".into());
    }
    let lhs_sizes = [spec.batch, spec.m, spec.k];
    let rhs_sizes = [spec.batch, spec.k, spec.n];
    match spec.elem {
        ElementType::F64 => {
            let a = Operand::<f64>::new(ls, lhs, &spec.lhs_perm, lhs_sizes);
            let b = Operand::<f64>::new(rs, rhs, &spec.rhs_perm, rhs_sizes);
            batched(spec, &a, &b, out as *mut f64, epilogue);
        }
        ElementType::F32 => {
            let a = Operand::<f32>::new(ls, lhs, &spec.lhs_perm, lhs_sizes);
            let b = Operand::<f32>::new(rs, rhs, &spec.rhs_perm, rhs_sizes);
            match f32::tiles().and_then(|t| t.padded_a_stride(spec.k, a.rows, a.cols)) {
                Some(stride) => PADDED_A.with(|buf| {
                    let mut buf = buf.borrow_mut();
                    let a = padded(&a, lhs_sizes, stride, &mut buf);
                    batched(spec, &a, &b, out as *mut f32, epilogue);
                }),
                None => batched(spec, &a, &b, out as *mut f32, epilogue),
            }
        }
        elem => {
            let widen = |shape: &Shape, p: *const u8, perm: &[usize], sizes| -> Result<Operand<f32>, String> {
                let bytes = std::slice::from_raw_parts(p, shape.byte_size());
                let lit = Literal::from_le_bytes(shape.clone(), bytes).ok_or("dot operand of the wrong size")?;
                let vals: Vec<f32> = lit.to_f64_vec().iter().map(|&x| x as f32).collect();
                let f32_shape = Shape::new(ElementType::F32, shape.dims.clone());
                Ok(Operand::owned(&f32_shape, vals, perm, sizes))
            };
            let a = widen(ls, lhs, &spec.lhs_perm, lhs_sizes)?;
            let b = widen(rs, rhs, &spec.rhs_perm, rhs_sizes)?;
            let mut c = vec![0f32; len];
            batched(spec, &a, &b, c.as_mut_ptr(), None);
            let wide: Vec<f64> = c.iter().map(|&x| x as f64).collect();
            let bytes = Literal::from_f64s(Shape::new(elem, vec![len as i64]), &wide).to_le_bytes();
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len());
            if let Some(e) = epilogue {
                (e.run)(0, e.rows);
            }
        }
    }
    Ok(())
}

thread_local! {
    /// The calling thread's copy of an A whose rows crowd L1 sets (grown as needed, kept:
    /// a fresh allocation of megabytes per call would fault every page in again).
    static PADDED_A: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `a` (`[batch, rows, cols]` of `sizes`, columns contiguous) copied into `buf` with each
/// row `stride` floats after the one before, the rows split across the pool's threads,
/// once per dot rather than once per task. Returns the operand over `buf`.
///
/// # Safety
/// `a`'s elements exist; the operand is used only while `buf` is neither resized nor
/// dropped.
unsafe fn padded(a: &Operand<f32>, sizes: [usize; 3], stride: usize, buf: &mut Vec<f32>) -> Operand<f32> {
    let [batch, rows, cols] = sizes;
    let total = batch * rows;
    if buf.len() < total * stride {
        buf.resize(total * stride, 0.0);
    }
    let dst = Shared { a, b: a, c: buf.as_mut_ptr() };
    let copy = |range: std::ops::Range<usize>| {
        // The whole of `dst` (which is Sync), not its raw-pointer fields one by one.
        let Shared { a, c, .. } = &dst;
        for g in range {
            let src = a.base.offset(a.batch_offset(g / rows) + (g % rows) as isize * a.rows);
            // SAFETY: row `g` of A exists and the copy holds `total` rows of `stride`.
            std::ptr::copy_nonoverlapping(src, c.add(g * stride), cols);
        }
    };
    let pieces = if total * cols >= PARALLEL_FLOPS { super::pool::threads() } else { 1 };
    let per = total.div_ceil(pieces);
    super::pool::run(total.div_ceil(per), &|t| copy(t * per..((t + 1) * per).min(total)));
    Operand::over(buf.as_ptr(), (batch, (rows * stride) as isize), stride as isize, 1)
}

/// Multiply-adds (`m * n * k` over the batch) below which a dot runs on one thread.
const PARALLEL_FLOPS: usize = 1 << 18;

/// Tasks per pool thread where the product allows: a thread slowed by other work on its
/// core takes fewer.
const TASKS_PER_THREAD: usize = 4;

/// The element types dots compute in, each with a single-threaded GEMM of a block.
trait Element: Copy + Default + Send + Sync + 'static {
    /// The block GEMM, if this CPU has one for the type.
    fn tiles() -> Option<&'static tiles::Tiles>;
    fn one() -> Self;
}

impl Element for f32 {
    fn tiles() -> Option<&'static tiles::Tiles> {
        tiles::Tiles::detect()
    }
    fn one() -> f32 {
        1.0
    }
}

impl Element for f64 {
    fn tiles() -> Option<&'static tiles::Tiles> {
        None
    }
    fn one() -> f64 {
        1.0
    }
}

/// The operands and result of one dot, shared by its tasks (each writes its own block
/// of C).
struct Shared<'a, T> {
    a: &'a Operand<T>,
    b: &'a Operand<T>,
    c: *mut T,
}
// SAFETY: the operands are only read, and tasks write disjoint blocks of C; everything
// outlives the job (`pool::run` waits for every task).
unsafe impl<T> Send for Shared<'_, T> {}
unsafe impl<T> Sync for Shared<'_, T> {}

/// Bytes of the result one task of a dot with an epilogue computes, when the product
/// leaves the choice: the block must still be in the core's L2 when the epilogue reads it.
const EPILOGUE_TASK_BYTES: usize = 256 << 10;

/// Fewest result rows of one such task on the tiles (see [`with_epilogue`]).
const EPILOGUE_TASK_ROWS: usize = 64;

/// `out[b] = a[b] x b[b]` for every batch, `out` row-major `[batch, m, n]`: tasks of
/// (batch, block of rows, block of columns), or with an epilogue, of blocks of whole
/// rows of `[batch * m, n]` (see [`with_epilogue`]).
fn batched<T: Element>(spec: &DotSpec, a: &Operand<T>, b: &Operand<T>, out: *mut T, epilogue: Option<&Epilogue>) {
    let (m, n, k) = (spec.m, spec.n, spec.k);
    if m == 0 || n == 0 || k == 0 {
        if k == 0 {
            // An empty sum: zeros.
            // SAFETY: `out` holds batch * m * n elements.
            unsafe { std::slice::from_raw_parts_mut(out, spec.batch * m * n).fill(T::default()) };
        }
        if let Some(e) = epilogue {
            (e.run)(0, e.rows);
        }
        return;
    }
    let tiles = T::tiles();
    let threads = super::pool::threads();
    let parallel = spec.batch * m * n * k >= PARALLEL_FLOPS && threads > 1;
    let shared = Shared { a, b, c: out };
    if let Some(e) = epilogue {
        return with_epilogue(spec, &shared, tiles, parallel || (e.parallel && threads > 1), e);
    }
    in_column_blocks(spec, &shared, tiles, parallel);
}

/// The dot in tasks of (batch, block of rows, block of columns).
fn in_column_blocks<T: Element>(
    spec: &DotSpec,
    shared: &Shared<T>,
    tiles: Option<&'static tiles::Tiles>,
    parallel: bool,
) {
    let (m, n, k) = (spec.m, spec.n, spec.k);
    let threads = super::pool::threads();
    // `gemm` packs all of B for each call, so it gets one task per thread (several cost a
    // GELU MLP's 256-row products 3x); the tiles pack only a task's own columns.
    let wanted = match (parallel, tiles) {
        (false, _) => 1,
        (true, Some(_)) => threads * TASKS_PER_THREAD,
        (true, None) => threads,
    };
    // Columns: at most a chunk of packed panels each for the tiles, split before rows
    // are; all of them for `gemm`, which blocks its columns itself.
    let cols = tiles.map_or(n, |t| t.task_cols(k, n, wanted.div_ceil(spec.batch)).min(n));
    let col_blocks = n.div_ceil(cols);
    // Rows: whole tiles, at least two each, split until every thread has a few tasks.
    let tile_rows = tiles.map_or(16, |t| t.mr());
    let row_blocks = wanted.div_ceil(spec.batch * col_blocks).min(m.div_ceil(2 * tile_rows)).max(1);
    let rows = m.div_ceil(row_blocks).div_ceil(tile_rows) * tile_rows;
    let row_blocks = m.div_ceil(rows);
    let task = |t: usize| {
        let (bi, rest) = (t / (row_blocks * col_blocks), t % (row_blocks * col_blocks));
        let (r0, c0) = ((rest / col_blocks) * rows, (rest % col_blocks) * cols);
        // SAFETY: tasks' blocks of C are disjoint and inside the result.
        unsafe { block(spec, shared, tiles, bi, (r0, (r0 + rows).min(m)), (c0, (c0 + cols).min(n))) };
    };
    let tasks = spec.batch * row_blocks * col_blocks;
    if parallel {
        super::pool::run(tasks, &task);
    } else {
        (0..tasks).for_each(task);
    }
}

/// The dot in tasks of whole epilogue rows: each computes the result rows those read
/// (every column, across batches where a block spans them), then runs the epilogue on
/// them. On the tiles a task's block is about [`EPILOGUE_TASK_BYTES`] and at least
/// [`EPILOGUE_TASK_ROWS`] rows (each task packs all of B, which that many rows repay),
/// through `gemm` one block per thread; a parallel dot's tasks are a multiple of the
/// threads, so none waits for a last odd task.
fn with_epilogue<T: Element>(
    spec: &DotSpec,
    shared: &Shared<T>,
    tiles: Option<&'static tiles::Tiles>,
    parallel: bool,
    e: &Epilogue,
) {
    let (m, n) = (spec.m, spec.n);
    let threads = super::pool::threads();
    let row_bytes = e.dot_rows * n * std::mem::size_of::<T>();
    let per = match tiles {
        Some(_) => (EPILOGUE_TASK_BYTES / row_bytes.max(1)).max(EPILOGUE_TASK_ROWS.div_ceil(e.dot_rows)).max(1),
        None => e.rows,
    };
    let mut tasks = e.rows.div_ceil(per);
    if parallel {
        tasks = tasks.div_ceil(threads) * threads;
    }
    // Each task packs all of B for its rows. When packing it again per task moves more
    // bytes than a second pass over the result would (a few rows against large weights,
    // a transformer's projections), the dot runs in blocks of columns, which pack B once
    // between them, and the epilogue after it.
    let (k, size) = (spec.k, std::mem::size_of::<T>());
    if tiles.is_some() && spec.batch == 1 && (tasks - 1) * k * n * size > 2 * m * n * size {
        in_column_blocks(spec, shared, tiles, parallel);
        let tasks = if parallel { threads.min(e.rows) } else { 1 };
        let per = e.rows.div_ceil(tasks);
        let epilogue = |t: usize| (e.run)(t * per, ((t + 1) * per).min(e.rows));
        if parallel {
            super::pool::run(e.rows.div_ceil(per), &epilogue);
        } else {
            epilogue(0);
        }
        return;
    }
    // Rows per task for that many tasks (rounding up may leave fewer tasks).
    let per = e.rows.div_ceil(tasks);
    let tasks = e.rows.div_ceil(per);
    let task = |t: usize| {
        let (r0, r1) = (t * per, ((t + 1) * per).min(e.rows));
        let (f0, f1) = (r0 * e.dot_rows, r1 * e.dot_rows);
        for bi in f0 / m..f1.div_ceil(m) {
            let (lo, hi) = (f0.max(bi * m) - bi * m, f1.min((bi + 1) * m) - bi * m);
            // SAFETY: the tasks' row blocks are disjoint and inside the result.
            unsafe { block(spec, shared, tiles, bi, (lo, hi), (0, n)) };
        }
        (e.run)(r0, r1);
    };
    if parallel {
        super::pool::run(tasks, &task);
    } else {
        (0..tasks).for_each(task);
    }
}

/// `C[bi][r0..r1, c0..c1]` of the dot, on the tiles (f32) or through `gemm`.
///
/// # Safety
/// The block lies inside batch `bi` of the result, and no other thread writes it.
unsafe fn block<T: Element>(
    spec: &DotSpec,
    Shared { a, b, c }: &Shared<T>,
    tiles: Option<&'static tiles::Tiles>,
    bi: usize,
    (r0, r1): (usize, usize),
    (c0, c1): (usize, usize),
) {
    let (m, n, k) = (spec.m, spec.n, spec.k);
    // SAFETY: batch `bi` of each operand lies at its batch offset (by their strides).
    let a_at = a.base.offset(a.batch_offset(bi));
    let b_at = b.base.offset(b.batch_offset(bi));
    let c_at = c.add(bi * m * n);
    match tiles {
        // `tiles` is only Some for f32.
        Some(t) => t.block(
            (k, n),
            (a_at as *const f32, a.rows, a.cols),
            (b_at as *const f32, b.rows, b.cols),
            c_at as *mut f32,
            (r0, r1),
            (c0, c1),
        ),
        None => gemm::gemm(
            r1 - r0,
            c1 - c0,
            k,
            c_at.add(r0 * n + c0),
            1,
            n as isize,
            false,
            a_at.offset(r0 as isize * a.rows),
            a.cols,
            a.rows,
            b_at.offset(c0 as isize * b.cols),
            b.cols,
            b.rows,
            T::default(),
            T::one(),
            false,
            false,
            false,
            gemm::Parallelism::None,
        ),
    }
}
