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
//! Tiles accumulate over the whole of `k` in registers and store once: no read of C.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Bytes of packed B a chunk holds: a share of L2 that leaves room for A and C.
const CHUNK_BYTES: usize = 256 << 10;

/// A register tile of `rows` rows: `C[0..rows, 0..cols] = A[0..rows, 0..k] x P`, P a
/// packed panel (`k` steps of `NR` floats), C with row stride `ldc`.
type TileFn =
    unsafe fn(k: usize, a: *const f32, a_rs: isize, a_cs: isize, p: *const f32, c: *mut f32, ldc: usize, cols: usize);

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

    /// Rows per full tile.
    pub fn mr(&self) -> usize {
        self.tiles.len()
    }

    /// Columns of C a task should cover for depth `k`: whole panels, as many as one
    /// chunk of packed B holds.
    pub fn task_cols(&self, k: usize) -> usize {
        (CHUNK_BYTES / (k * self.nr * 4).max(1)).max(1) * self.nr
    }

    /// `C[r0..r1, c0..c1] = A[r0..r1, 0..k] x B[0..k, c0..c1]`: A's element `(i, p)` at
    /// `a + i*a_rs + p*a_cs`, B's `(p, j)` at `b + p*b_rs + j*b_cs`, C row-major with `n`
    /// columns; `c0` a multiple of [`Tiles::task_cols`].
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
        let per_chunk = (CHUNK_BYTES / (k * nr * 4).max(1)).clamp(1, panels - first);
        PACKED.with(|packed| {
            let mut packed = packed.borrow_mut();
            let need = per_chunk * k * nr;
            if packed.len() < need {
                packed.resize(need, 0.0);
            }
            for chunk in (first..panels).step_by(per_chunk) {
                let last = (chunk + per_chunk).min(panels);
                pack(&mut packed[..(last - chunk) * k * nr], (k, c1, nr), (b, b_rs, b_cs), chunk);
                for row in (r0..r1).step_by(mr) {
                    let rows = (r1 - row).min(mr);
                    let tile = self.tiles[rows - 1];
                    let a_row = a.offset(row as isize * a_rs);
                    for j in chunk..last {
                        let p = packed.as_ptr().add((j - chunk) * k * nr);
                        let cols = (c1 - j * nr).min(nr);
                        tile(k, a_row, a_rs, a_cs, p, c.add(row * n + j * nr), n, cols);
                    }
                }
            }
        });
    }
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
    for (i, panel) in out.chunks_exact_mut(k * nr).enumerate() {
        let j0 = (first + i) * nr;
        let cols = (n - j0).min(nr);
        if cs == 1 {
            for (p, step) in panel.chunks_exact_mut(nr).enumerate() {
                let src = b.offset(p as isize * rs + j0 as isize);
                std::ptr::copy_nonoverlapping(src, step.as_mut_ptr(), cols);
                step[cols..].fill(0.0);
            }
        } else {
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
}

/// Stores the first `cols` of a tile row's `2 * W` floats (held in `v`) at `c`.
#[inline(always)]
unsafe fn store_row<const W: usize>(v: &[f32], c: *mut f32, cols: usize) {
    std::ptr::copy_nonoverlapping(v.as_ptr(), c, cols.min(2 * W));
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
) {
    let mut acc = [[_mm512_setzero_ps(); 2]; R];
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
        if cols == 32 {
            _mm512_storeu_ps(out, row[0]);
            _mm512_storeu_ps(out.add(16), row[1]);
        } else {
            let mut v = [0f32; 32];
            _mm512_storeu_ps(v.as_mut_ptr(), row[0]);
            _mm512_storeu_ps(v.as_mut_ptr().add(16), row[1]);
            store_row::<16>(&v, out, cols);
        }
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
) {
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
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

    /// Every tile height, ragged edges, and B both row-major and transposed, against
    /// a plain triple loop in f64 (hand-checkable: small integers, exact in f32).
    #[test]
    fn blocks_match_the_definition() {
        let Some(tiles) = Tiles::detect() else {
            // Only x86-64 has tiles; every x86-64 machine this runs on has AVX2.
            #[cfg(target_arch = "x86_64")]
            panic!("an x86-64 CPU without AVX2 and FMA");
            #[cfg(not(target_arch = "x86_64"))]
            return;
        };
        for &(m, n, k) in &[(1, 1, 1), (13, 33, 7), (25, 70, 64), (12, 32, 300), (7, 5, 3)] {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 13) as f32 - 6.0).collect();
            let want: Vec<f32> = (0..m * n)
                .map(|x| (0..k).map(|p| a[(x / n) * k + p] as f64 * b[p * n + x % n] as f64).sum::<f64>() as f32)
                .collect();
            let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
            for (bp, rs, cs) in [(b.as_ptr(), n as isize, 1), (bt.as_ptr(), 1, k as isize)] {
                let mut c = vec![f32::NAN; m * n];
                // Two row blocks, as the pool would split them.
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
                assert_eq!(whole, want, "{m}x{n}x{k} whole");
                assert_eq!(c, want, "{m}x{n}x{k}, B strides ({rs}, {cs})");
            }
        }
    }
}
