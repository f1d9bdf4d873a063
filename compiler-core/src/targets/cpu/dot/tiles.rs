//! The f32 GEMM of the CPU target: `C[rows, n] = A[rows, k] x B[k, n]` for one batch
//! and a block of rows, on register tiles of up to `MR` rows by two SIMD vectors of
//! columns (AVX-512: 12 x 32, AVX2: 6 x 16).
//!
//! B is packed into column panels as wide as a tile (`[panel][k][NR]`, zero-padded past
//! `n`) in a buffer of the calling thread that is kept and only ever grows, so a small
//! product costs no allocation; A is read in place through its strides (each tile row
//! broadcasts one element per step, so any layout of A is as fast). Panels are packed a
//! chunk at a time, a chunk small enough to stay in L2 while every row tile of the block
//! sweeps it, and the tile's A rows stay in L1 across the chunk's panels.
//!
//! A product deeper than [`KC_MAX`] runs in blocks of `k` (equal ones, at most that
//! deep): the first block's tiles start from zero, a later block's from the C the one
//! before stored, so every output still sums its products in `k` order, one fused
//! multiply-add at a time, and the bits do not depend on the blocking.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Bytes of packed B a chunk holds: a share of L2 that leaves room for A and C.
const CHUNK_BYTES: usize = 256 << 10;

/// Deepest block of `k` a tile runs: its rows of A (`MR x KC_MAX` floats, 24 KiB on
/// AVX-512) stay in L1 while it streams a packed panel from L2.
const KC_MAX: usize = 512;

/// The depth of each block of `k` (all equal but the last).
fn k_block(k: usize) -> usize {
    k.div_ceil(k.div_ceil(KC_MAX).max(1)).max(1)
}

/// A register tile of `rows` rows: `C[0..rows, 0..cols] = A[0..rows, 0..k] x P`, P a
/// packed panel (`k` steps of `NR` floats), C with row stride `ldc`; with `more`, the
/// sums continue from C's values instead of zero.
type TileFn = unsafe fn(
    k: usize,
    a: *const f32,
    a_rs: isize,
    a_cs: isize,
    p: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
    more: bool,
);

/// One instruction set's tiles: `tiles[r - 1]` computes `r` rows.
pub(super) struct Tiles {
    nr: usize,
    tiles: &'static [TileFn],
}

impl Tiles {
    /// The widest tiles this CPU runs, if it has AVX-512 or AVX2 with FMA.
    pub fn detect() -> Option<&'static Tiles> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Some(&AVX512);
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                return Some(&AVX2);
            }
        }
        None
    }

    /// The row stride, in floats, to copy a row-major A (rows `a_rs` apart, columns
    /// `a_cs`) into before the tiles read it, when its own rows would crowd into few L1
    /// sets (rows of 1024 or 3072 floats): a row's `k` floats and one line more, so that
    /// consecutive rows start in consecutive sets. None when A is read as it is.
    pub fn padded_a_stride(&self, k: usize, a_rs: isize, a_cs: isize) -> Option<usize> {
        (a_cs == 1 && rows_share_l1_sets(a_rs.unsigned_abs() * 4, self.mr())).then(|| padded_row_stride(k))
    }

    /// Rows per full tile.
    pub fn mr(&self) -> usize {
        self.tiles.len()
    }

    /// Columns of C a task should cover for depth `k`: whole panels, as many as one
    /// chunk of packed B holds, and few enough that `n` columns make `pieces` tasks
    /// (splitting rows instead would pack B once per block of rows).
    pub fn task_cols(&self, k: usize, n: usize, pieces: usize) -> usize {
        let chunk = (CHUNK_BYTES / (k_block(k) * self.nr * 4)).max(1) * self.nr;
        chunk.min(n.div_ceil(pieces.max(1)).next_multiple_of(self.nr))
    }

    /// `C[r0..r1, c0..c1] = A[r0..r1, 0..k] x B[0..k, c0..c1]`: A's element `(i, p)` at
    /// `a + i*a_rs + p*a_cs`, B's `(p, j)` at `b + p*b_rs + j*b_cs`, C row-major with `n`
    /// columns; `c0` a multiple of the panel width (as [`Tiles::task_cols`] is).
    ///
    /// # Safety
    /// Every element addressed exists; C's block overlaps neither operand.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn block(
        &self,
        (k, n): (usize, usize),
        (a, a_rs, a_cs): (*const f32, isize, isize),
        (b, b_rs, b_cs): (*const f32, isize, isize),
        c: *mut f32,
        (r0, r1): (usize, usize),
        (c0, c1): (usize, usize),
    ) {
        let (nr, mr) = (self.nr, self.mr());
        let (first, panels) = (c0 / nr, c1.div_ceil(nr));
        let kc = k_block(k);
        let per_chunk = (CHUNK_BYTES / (kc * nr * 4)).clamp(1, panels - first);
        PACKED.with(|packed| {
            let mut packed = packed.borrow_mut();
            let need = per_chunk * kc * nr;
            if packed.len() < need {
                packed.resize(need, 0.0);
            }
            for chunk in (first..panels).step_by(per_chunk) {
                let last = (chunk + per_chunk).min(panels);
                for k0 in (0..k).step_by(kc) {
                    let depth = (k - k0).min(kc);
                    let b_block = b.offset(k0 as isize * b_rs);
                    pack(&mut packed[..(last - chunk) * depth * nr], (depth, c1, nr), (b_block, b_rs, b_cs), chunk);
                    // The block of B packed next (this chunk's next block of k, else the
                    // next chunk's first), fetched into L2 a share per row tile while the
                    // tiles compute: B read from memory then costs its packing no wait.
                    let next = if k0 + kc < k {
                        Some((k0 + kc, chunk * nr, last * nr))
                    } else {
                        (last < panels).then(|| (0, last * nr, ((last + per_chunk).min(panels) * nr)))
                    };
                    let row_tiles = (r1 - r0).div_ceil(mr);
                    for (t, row) in (r0..r1).step_by(mr).enumerate() {
                        if let Some((p0, j0, j1)) = next {
                            let steps = (k - p0).min(kc);
                            let share = (steps * t / row_tiles, steps * (t + 1) / row_tiles);
                            prefetch((b, b_rs, b_cs), (p0 + share.0, p0 + share.1), (j0, j1.min(c1)));
                        }
                        let rows = (r1 - row).min(mr);
                        let tile = self.tiles[rows - 1];
                        let a_at = a.offset(row as isize * a_rs + k0 as isize * a_cs);
                        for j in chunk..last {
                            let p = packed.as_ptr().add((j - chunk) * depth * nr);
                            let cols = (c1 - j * nr).min(nr);
                            tile(depth, a_at, a_rs, a_cs, p, c.add(row * n + j * nr), n, cols, k0 > 0);
                        }
                    }
                }
            }
        });
    }
}

/// Asks for B's elements `(p, j)`, `p` in `p0..p1` and `j` in `j0..j1`, to be brought
/// into L2, along whichever of B's axes is contiguous (none: nothing).
///
/// # Safety
/// The elements exist (a prefetch of any address is harmless, but the pointer
/// arithmetic must stay inside B).
#[inline]
unsafe fn prefetch((b, rs, cs): (*const f32, isize, isize), (p0, p1): (usize, usize), (j0, j1): (usize, usize)) {
    #[cfg(target_arch = "x86_64")]
    {
        let lines = |from: *const f32, to: *const f32| {
            let mut at = (from as usize) & !63;
            while at <= to as usize {
                _mm_prefetch::<_MM_HINT_T1>(at as *const i8);
                at += 64;
            }
        };
        if j0 >= j1 {
            return;
        }
        if cs == 1 {
            for p in p0..p1 {
                let row = b.offset(p as isize * rs);
                lines(row.add(j0), row.add(j1 - 1));
            }
        } else if rs == 1 && p0 < p1 {
            for j in j0..j1 {
                let col = b.offset(j as isize * cs);
                lines(col.add(p0), col.add(p1 - 1));
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (b, rs, cs, p0, p1, j0, j1);
}

/// Floats between the starts of two rows of A as [`Tiles::padded_a_stride`] has them.
fn padded_row_stride(k: usize) -> usize {
    k.next_multiple_of(16) + 16
}

/// Whether a tile's `rows` rows of A, `stride` bytes apart, crowd into few sets of L1
/// (64 sets of 64-byte lines on the CPUs these tiles run on, a way every 4 KiB): more than
/// half of them in one set (a stride of 4 KiB puts all in one) evicts the packed B a tile
/// streams past them.
fn rows_share_l1_sets(stride: usize, rows: usize) -> bool {
    if stride < 64 {
        // Rows within a line or two of each other share lines, not just sets.
        return false;
    }
    let lines = (stride / 64) % 64;
    let gcd = |mut x: usize, mut y: usize| {
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    let period = 64 / gcd(lines, 64);
    rows.div_ceil(period) > rows / 2
}

thread_local! {
    /// Packed panels of B, per thread (grown as needed, kept).
    static PACKED: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Packs B's panels `first..` into `out` (`[panel][k][nr]`, zeros from column `n`).
///
/// # Safety
/// B's elements `(p, j)` for `p < k`, `j < n` exist.
unsafe fn pack(
    out: &mut [f32],
    (k, n, nr): (usize, usize, usize),
    (b, rs, cs): (*const f32, isize, isize),
    first: usize,
) {
    let panels = out.len() / (k * nr);
    if cs == 1 {
        // Row by row across the chunk, so that each row of B is read as one run (every
        // row is on a page of its own when B is wide), the rows a few steps ahead asked
        // for while this one is copied.
        let (j0, j1) = (first * nr, ((first + panels) * nr).min(n));
        for p in 0..k {
            if p + PACK_AHEAD < k {
                prefetch((b, rs, cs), (p + PACK_AHEAD, p + PACK_AHEAD + 1), (j0, j1));
            }
            let row = b.offset(p as isize * rs);
            for i in 0..panels {
                let j = j0 + i * nr;
                let step = &mut out[(i * k + p) * nr..][..nr];
                if j + nr <= n {
                    step.copy_from_slice(std::slice::from_raw_parts(row.add(j), nr));
                } else {
                    step[..n - j].copy_from_slice(std::slice::from_raw_parts(row.add(j), n - j));
                    step[n - j..].fill(0.0);
                }
            }
        }
        return;
    }
    for (i, panel) in out.chunks_exact_mut(k * nr).enumerate() {
        let j0 = (first + i) * nr;
        let cols = (n - j0).min(nr);
        // A transposed B (K in Q x K^T): read each column along k, where it is
        // contiguous when `rs` is 1.
        if cols < nr {
            panel.fill(0.0);
        }
        for j in 0..cols {
            let src = b.offset((j0 + j) as isize * cs);
            for p in 0..k {
                panel[p * nr + j] = *src.offset(p as isize * rs);
            }
        }
    }
}

/// Rows of B [`pack`] asks for ahead of the one it copies.
const PACK_AHEAD: usize = 8;

/// Stores the first `cols` of a tile row's `2 * W` floats (held in `v`) at `c`.
#[inline(always)]
unsafe fn store_row<const W: usize>(v: &[f32], c: *mut f32, cols: usize) {
    std::ptr::copy_nonoverlapping(v.as_ptr(), c, cols.min(2 * W));
}

/// A tile row's `2 * W` floats from the first `cols` at `c`, zeros past them.
#[inline(always)]
unsafe fn load_row<const W: usize>(c: *const f32, cols: usize) -> [[f32; W]; 2] {
    let mut v = [[0f32; W]; 2];
    std::ptr::copy_nonoverlapping(c, v.as_mut_ptr().cast::<f32>(), cols.min(2 * W));
    v
}

#[cfg(target_arch = "x86_64")]
static AVX512: Tiles = Tiles {
    nr: 32,
    tiles: &[
        tile_avx512::<1>,
        tile_avx512::<2>,
        tile_avx512::<3>,
        tile_avx512::<4>,
        tile_avx512::<5>,
        tile_avx512::<6>,
        tile_avx512::<7>,
        tile_avx512::<8>,
        tile_avx512::<9>,
        tile_avx512::<10>,
        tile_avx512::<11>,
        tile_avx512::<12>,
    ],
};

#[cfg(target_arch = "x86_64")]
static AVX2: Tiles = Tiles {
    nr: 16,
    tiles: &[tile_avx2::<1>, tile_avx2::<2>, tile_avx2::<3>, tile_avx2::<4>, tile_avx2::<5>, tile_avx2::<6>],
};

/// An `R` x 32 tile in 2R zmm accumulators (see [`TileFn`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile_avx512<const R: usize>(
    k: usize,
    a: *const f32,
    a_rs: isize,
    a_cs: isize,
    p: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
    more: bool,
) {
    // Masks of the row's columns in each vector (a ragged last panel has fewer).
    let lanes = |n: usize| if n >= 16 { 0xffff } else { (1u16 << n) - 1 };
    let (m0, m1) = (lanes(cols), lanes(cols.saturating_sub(16)));
    let mut acc = [[_mm512_setzero_ps(); 2]; R];
    if more {
        for (r, row) in acc.iter_mut().enumerate() {
            let at = c.add(r * ldc);
            *row = [_mm512_maskz_loadu_ps(m0, at), _mm512_maskz_loadu_ps(m1, at.add(16))];
        }
    }
    let mut a_at = a;
    for step in 0..k {
        let b0 = _mm512_loadu_ps(p.add(step * 32));
        let b1 = _mm512_loadu_ps(p.add(step * 32 + 16));
        for (r, row) in acc.iter_mut().enumerate() {
            let x = _mm512_set1_ps(*a_at.offset(r as isize * a_rs));
            row[0] = _mm512_fmadd_ps(x, b0, row[0]);
            row[1] = _mm512_fmadd_ps(x, b1, row[1]);
        }
        a_at = a_at.offset(a_cs);
    }
    for (r, row) in acc.iter().enumerate() {
        let out = c.add(r * ldc);
        _mm512_mask_storeu_ps(out, m0, row[0]);
        _mm512_mask_storeu_ps(out.add(16), m1, row[1]);
    }
}

/// An `R` x 16 tile in 2R ymm accumulators (see [`TileFn`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile_avx2<const R: usize>(
    k: usize,
    a: *const f32,
    a_rs: isize,
    a_cs: isize,
    p: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
    more: bool,
) {
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    if more {
        for (r, row) in acc.iter_mut().enumerate() {
            let at = c.add(r * ldc);
            *row = if cols == 16 {
                [_mm256_loadu_ps(at), _mm256_loadu_ps(at.add(8))]
            } else {
                let v = load_row::<8>(at, cols);
                [_mm256_loadu_ps(v[0].as_ptr()), _mm256_loadu_ps(v[1].as_ptr())]
            };
        }
    }
    let mut a_at = a;
    for step in 0..k {
        let b0 = _mm256_loadu_ps(p.add(step * 16));
        let b1 = _mm256_loadu_ps(p.add(step * 16 + 8));
        for (r, row) in acc.iter_mut().enumerate() {
            let x = _mm256_set1_ps(*a_at.offset(r as isize * a_rs));
            row[0] = _mm256_fmadd_ps(x, b0, row[0]);
            row[1] = _mm256_fmadd_ps(x, b1, row[1]);
        }
        a_at = a_at.offset(a_cs);
    }
    for (r, row) in acc.iter().enumerate() {
        let out = c.add(r * ldc);
        if cols == 16 {
            _mm256_storeu_ps(out, row[0]);
            _mm256_storeu_ps(out.add(8), row[1]);
        } else {
            let mut v = [0f32; 16];
            _mm256_storeu_ps(v.as_mut_ptr(), row[0]);
            _mm256_storeu_ps(v.as_mut_ptr().add(8), row[1]);
            store_row::<8>(&v, out, cols);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rows_crowding_an_l1_set_are_packed() {
        // 12 rows 4 KiB apart share one set; 2 KiB apart, two sets of six; 3 KiB apart,
        // four sets of three; 4400 bytes apart, twelve sets.
        assert!(rows_share_l1_sets(4096, 12) && rows_share_l1_sets(3 * 4096, 12));
        assert!(!rows_share_l1_sets(2048, 12) && !rows_share_l1_sets(3072, 12) && !rows_share_l1_sets(4400, 12));
        assert!(rows_share_l1_sets(4096, 6) && !rows_share_l1_sets(2048, 6));
        // Rows a float or a few apart share lines; the copies' own stride never crowds.
        assert!(!rows_share_l1_sets(4, 12) && !rows_share_l1_sets(48, 12));
        for k in [1, 16, 500, 512, 1024, 3072] {
            let stride = padded_row_stride(k) * 4;
            assert!(!rows_share_l1_sets(stride, 12) && !rows_share_l1_sets(stride, 6), "{k}");
            if let Some(t) = Tiles::detect() {
                let want = (k % 1024 == 0).then_some(padded_row_stride(k));
                assert_eq!(t.padded_a_stride(k, k as isize, 1), want, "{k}");
                assert_eq!(t.padded_a_stride(k, 1, k as isize), None, "a transposed A is read as it is");
            }
        }
    }

    /// Every tile height, ragged edges, and B both row-major and transposed, against
    /// a plain triple loop in f64 (hand-checkable: small integers, exact in f32); deep
    /// products in blocks of `k`.
    #[test]
    fn blocks_match_the_definition() {
        let Some(widest) = Tiles::detect() else {
            // Only x86-64 has tiles; every x86-64 machine this runs on has AVX2.
            #[cfg(target_arch = "x86_64")]
            panic!("an x86-64 CPU without AVX2 and FMA");
            #[cfg(not(target_arch = "x86_64"))]
            return;
        };
        // The AVX2 tiles too where the CPU has AVX-512 (it has AVX2 as well).
        #[cfg(target_arch = "x86_64")]
        for tiles in [widest, &AVX2] {
            check_blocks(tiles);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = widest;
    }

    fn check_blocks(tiles: &Tiles) {
        for &(m, n, k) in &[
            (1, 1, 1),
            (13, 33, 7),
            (25, 70, 64),
            (12, 32, 300),
            (7, 5, 3),
            (13, 40, 1100),
            (3, 33, 513),
            (25, 33, 1024),
        ] {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 13) as f32 - 6.0).collect();
            let want: Vec<f32> = (0..m * n)
                .map(|x| (0..k).map(|p| a[(x / n) * k + p] as f64 * b[p * n + x % n] as f64).sum::<f64>() as f32)
                .collect();
            let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
            for (bp, rs, cs) in [(b.as_ptr(), n as isize, 1), (bt.as_ptr(), 1, k as isize)] {
                let mut c = vec![f32::NAN; m * n];
                let mid = m / 2;
                // Two row blocks as the pool would split them, and column blocks of one
                // panel at a time.
                for (r0, r1) in [(0, mid), (mid, m)] {
                    for c0 in (0..n).step_by(tiles.nr) {
                        let cols = (c0, (c0 + tiles.nr).min(n));
                        let (a, b) = ((a.as_ptr(), k as isize, 1), (bp, rs, cs));
                        // SAFETY: the vectors hold every element addressed.
                        unsafe { tiles.block((k, n), a, b, c.as_mut_ptr(), (r0, r1), cols) };
                    }
                }
                // And the whole product as one block.
                let mut whole = vec![f32::NAN; m * n];
                // SAFETY: as above.
                unsafe {
                    tiles.block((k, n), (a.as_ptr(), k as isize, 1), (bp, rs, cs), whole.as_mut_ptr(), (0, m), (0, n))
                };
                assert_eq!(whole, want, "{m}x{n}x{k} whole, {} columns a panel", tiles.nr);
                assert_eq!(c, want, "{m}x{n}x{k}, B strides ({rs}, {cs}), {} columns a panel", tiles.nr);
            }
        }
    }
}
