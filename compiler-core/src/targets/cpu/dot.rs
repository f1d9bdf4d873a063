//! Dots as batched GEMMs through the `gemm` crate; a large one is split into blocks of
//! rows (per batch) run on the thread pool, each a single-threaded GEMM.
//!
//! Operands are first brought to row-major `[batch, m, k]` and `[batch, k, n]` (a copy
//! only when the dot's dimension numbers are not already in that order); the result
//! `[batch, m, n]` is the dot's own row-major layout. f16/bf16 are computed in f32 and
//! rounded once at the end.

use crate::ir::{ElementType, Literal, Shape};
use crate::kernel::{BufferId, DotSpec, KernelPlan};

/// Computes the dot; returns the result's bytes.
pub fn run(spec: &DotSpec, plan: &KernelPlan, lhs: &[u8], rhs: &[u8], lb: BufferId, rb: BufferId) -> Result<Vec<u8>, String> {
    let (ls, rs) = (&plan.buffers[lb].shape, &plan.buffers[rb].shape);
    match spec.elem {
        ElementType::F64 => {
            let a = permuted_f64(ls, lhs, &spec.lhs_perm)?;
            let b = permuted_f64(rs, rhs, &spec.rhs_perm)?;
            let c = batched(spec, &a, &b);
            Ok(c.iter().flat_map(|x| x.to_le_bytes()).collect())
        }
        elem => {
            let a: Vec<f32> = permuted_f64(ls, lhs, &spec.lhs_perm)?.iter().map(|&x| x as f32).collect();
            let b: Vec<f32> = permuted_f64(rs, rhs, &spec.rhs_perm)?.iter().map(|&x| x as f32).collect();
            let c = batched(spec, &a, &b);
            if elem == ElementType::F32 {
                return Ok(c.iter().flat_map(|x| x.to_le_bytes()).collect());
            }
            let wide: Vec<f64> = c.iter().map(|&x| x as f64).collect();
            let dims = vec![(spec.batch * spec.m * spec.n) as i64];
            Ok(Literal::from_f64s(Shape::new(elem, dims), &wide).to_le_bytes())
        }
    }
}

/// The operand's elements (widened to f64) in the order of dimensions `perm`.
fn permuted_f64(shape: &Shape, bytes: &[u8], perm: &[usize]) -> Result<Vec<f64>, String> {
    let lit = Literal::from_le_bytes(shape.clone(), bytes).ok_or("dot operand of the wrong size")?;
    let vals = lit.to_f64_vec();
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(vals);
    }
    let strides = shape.strides();
    let dims: Vec<i64> = perm.iter().map(|&p| shape.dims[p]).collect();
    let mut out = Vec::with_capacity(vals.len());
    let mut idx = vec![0i64; dims.len()];
    if dims.contains(&0) {
        return Ok(out);
    }
    loop {
        let src: usize = idx.iter().zip(perm).map(|(&i, &p)| i as usize * strides[p]).sum();
        out.push(vals[src]);
        let mut d = dims.len();
        loop {
            if d == 0 {
                return Ok(out);
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Multiply-adds (`m * n * k` over the batch) below which a dot runs on one thread.
const PARALLEL_FLOPS: usize = 1 << 18;

/// Pointers shared by the row blocks of one dot (each writes its own rows of C).
#[derive(Clone, Copy)]
struct Shared<T>(*const T, *const T, *mut T);
// SAFETY: see above; the slices outlive the job (`pool::run` waits for every block).
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// The pointers (a method, so closures capture the shareable whole).
    fn get(&self) -> (*const T, *const T, *mut T) {
        (self.0, self.1, self.2)
    }
}

fn batched<T: Copy + Default + Send + Sync + 'static + num_like::One>(spec: &DotSpec, a: &[T], b: &[T]) -> Vec<T> {
    let (m, n, k) = (spec.m, spec.n, spec.k);
    let mut c = vec![T::default(); spec.batch * m * n];
    if m == 0 || n == 0 || k == 0 {
        return c;
    }
    // Row blocks: enough for every thread, at least 16 rows each (GEMM's own tiles).
    let threads = super::pool::threads();
    let parallel = spec.batch * m * n * k >= PARALLEL_FLOPS && threads > 1;
    let blocks_per_batch = if parallel { threads.div_ceil(spec.batch).min(m.div_ceil(16)).max(1) } else { 1 };
    let rows = m.div_ceil(blocks_per_batch);
    let shared = Shared(a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
    let block = |t: usize| {
        let (a, b, c) = shared.get();
        let (bi, r0) = (t / blocks_per_batch, (t % blocks_per_batch) * rows);
        let r1 = (r0 + rows).min(m);
        if r0 >= r1 {
            return;
        }
        // SAFETY: rows r0..r1 of batch bi: an (r1-r0) x k block of A, B's k x n, and
        // the matching rows of C, all in bounds; blocks write disjoint rows.
        unsafe {
            gemm::gemm(
                r1 - r0,
                n,
                k,
                c.add(bi * m * n + r0 * n),
                1,
                n as isize,
                false,
                a.add(bi * m * k + r0 * k),
                1,
                k as isize,
                b.add(bi * k * n),
                1,
                n as isize,
                T::default(),
                T::one(),
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
    };
    if parallel {
        super::pool::run(spec.batch * blocks_per_batch, &block);
    } else {
        (0..spec.batch).for_each(block);
    }
    c
}

mod num_like {
    pub trait One {
        fn one() -> Self;
    }
    impl One for f32 {
        fn one() -> f32 {
            1.0
        }
    }
    impl One for f64 {
        fn one() -> f64 {
            1.0
        }
    }
}
