//! Dots as batched GEMMs through the `gemm` crate; a large one is split into blocks of
//! rows (per batch) run on the thread pool, each a single-threaded GEMM.
//!
//! f32 and f64 operands are read in place: each is viewed as `[batch, rows, cols]`
//! through strides when its dimension numbers allow (any order of evenly strided
//! groups: a transposed operand needs no copy), and copied into that order otherwise. The
//! result `[batch, m, n]` is written straight into the output buffer. f16/bf16 are
//! computed in f32 and rounded once at the end.

use crate::ir::{ElementType, Literal, Shape};
use crate::kernel::{BufferId, DotSpec, KernelPlan};

/// Computes the dot of the operands in buffers `lb` and `rb` into buffer `ob`.
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
            let a = Operand::<f64>::new(ls, lhs, &spec.lhs_perm, lhs_sizes)?;
            let b = Operand::<f64>::new(rs, rhs, &spec.rhs_perm, rhs_sizes)?;
            batched(spec, &a, &b, out as *mut f64);
        }
        ElementType::F32 => {
            let a = Operand::<f32>::new(ls, lhs, &spec.lhs_perm, lhs_sizes)?;
            let b = Operand::<f32>::new(rs, rhs, &spec.rhs_perm, rhs_sizes)?;
            batched(spec, &a, &b, out as *mut f32);
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
            batched(spec, &a, &b, c.as_mut_ptr());
            let wide: Vec<f64> = c.iter().map(|&x| x as f64).collect();
            let bytes = Literal::from_f64s(Shape::new(elem, vec![len as i64]), &wide).to_le_bytes();
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len());
        }
    }
    Ok(())
}

/// An operand seen as `[batch, rows, cols]`: a base pointer and an element stride per
/// axis, over the buffer itself or over a reordered copy it owns.
struct Operand<T> {
    base: *const T,
    strides: [isize; 3],
    _copy: Vec<T>,
}

impl<T: Copy> Operand<T> {
    /// The operand at `p` (of `shape`) in the dimension order `perm`, grouped into axes
    /// of `sizes` elements.
    ///
    /// # Safety
    /// `p` points to the operand's elements, aligned for `T`.
    unsafe fn new(shape: &Shape, p: *const u8, perm: &[usize], sizes: [usize; 3]) -> Result<Operand<T>, String> {
        if let Some(strides) = view(shape, perm, sizes) {
            return Ok(Operand { base: p as *const T, strides, _copy: Vec::new() });
        }
        let n = shape.num_elements();
        let vals = std::slice::from_raw_parts(p as *const T, n).to_vec();
        Ok(Operand::owned(shape, vals, perm, sizes))
    }

    /// Elements `vals` of `shape`, copied into the order `perm`.
    fn owned(shape: &Shape, vals: Vec<T>, perm: &[usize], sizes: [usize; 3]) -> Operand<T> {
        let ordered = if view(shape, perm, sizes).is_some_and(|s| s == contiguous(sizes)) {
            vals
        } else {
            permuted(shape, &vals, perm)
        };
        Operand { base: ordered.as_ptr(), strides: contiguous(sizes), _copy: ordered }
    }
}

/// Row-major strides of `[batch, rows, cols]`.
fn contiguous(sizes: [usize; 3]) -> [isize; 3] {
    [(sizes[1] * sizes[2]) as isize, sizes[2] as isize, 1]
}

/// The element strides of the axes when each group of `perm` (dims of size 1 left out)
/// is evenly strided in the row-major buffer; None otherwise.
fn view(shape: &Shape, perm: &[usize], sizes: [usize; 3]) -> Option<[isize; 3]> {
    let strides = shape.strides();
    let dims: Vec<usize> = perm.iter().copied().filter(|&d| shape.dims[d] != 1).collect();
    let mut out = [0isize; 3];
    let mut at = 0;
    for (axis, &size) in sizes.iter().enumerate() {
        let start = at;
        let mut product = 1usize;
        while product < size && at < dims.len() {
            product *= shape.dims[dims[at]].max(0) as usize;
            at += 1;
        }
        if product != size {
            return None;
        }
        let group = &dims[start..at];
        for w in group.windows(2) {
            if strides[w[0]] != strides[w[1]] * shape.dims[w[1]] as usize {
                return None;
            }
        }
        out[axis] = group.last().map_or(0, |&d| strides[d] as isize);
    }
    (at == dims.len()).then_some(out)
}

/// The elements of `shape` in the order of dimensions `perm`.
fn permuted<T: Copy>(shape: &Shape, vals: &[T], perm: &[usize]) -> Vec<T> {
    let strides = shape.strides();
    let dims: Vec<i64> = perm.iter().map(|&p| shape.dims[p]).collect();
    let mut out = Vec::with_capacity(vals.len());
    let mut idx = vec![0i64; dims.len()];
    if dims.contains(&0) {
        return out;
    }
    loop {
        let src: usize = idx.iter().zip(perm).map(|(&i, &p)| i as usize * strides[p]).sum();
        out.push(vals[src]);
        let mut d = dims.len();
        loop {
            if d == 0 {
                return out;
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

/// `out[b] = a[b] x b[b]` for every batch, `out` row-major `[batch, m, n]`.
fn batched<T: Copy + Default + Send + Sync + 'static + num_like::One>(
    spec: &DotSpec,
    a: &Operand<T>,
    b: &Operand<T>,
    out: *mut T,
) {
    let (m, n, k) = (spec.m, spec.n, spec.k);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        // An empty sum: zeros.
        // SAFETY: `out` holds batch * m * n elements.
        unsafe { std::slice::from_raw_parts_mut(out, spec.batch * m * n).fill(T::default()) };
        return;
    }
    // Row blocks: enough for every thread, at least 16 rows each (GEMM's own tiles).
    let threads = super::pool::threads();
    let parallel = spec.batch * m * n * k >= PARALLEL_FLOPS && threads > 1;
    let blocks_per_batch = if parallel { threads.div_ceil(spec.batch).min(m.div_ceil(16)).max(1) } else { 1 };
    let rows = m.div_ceil(blocks_per_batch);
    let shared = Shared(a.base, b.base, out);
    let (sa, sb) = (a.strides, b.strides);
    let block = |t: usize| {
        let (a, b, c) = shared.get();
        let (bi, r0) = (t / blocks_per_batch, (t % blocks_per_batch) * rows);
        let r1 = (r0 + rows).min(m);
        if r0 >= r1 {
            return;
        }
        // SAFETY: rows r0..r1 of batch bi: an (r1-r0) x k block of A, B's k x n, and
        // the matching rows of C, all in bounds by the operands' strides; blocks write
        // disjoint rows.
        unsafe {
            gemm::gemm(
                r1 - r0,
                n,
                k,
                c.add(bi * m * n + r0 * n),
                1,
                n as isize,
                false,
                a.offset(bi as isize * sa[0] + r0 as isize * sa[1]),
                sa[2],
                sa[1],
                b.offset(bi as isize * sb[0]),
                sb[2],
                sb[1],
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

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_shape(dims: &[i64]) -> Shape {
        Shape::new(ElementType::F32, dims.to_vec())
    }

    #[test]
    fn operands_are_viewed_through_strides_when_their_groups_allow() {
        // [b, k, m] read as [b, m, k]: a transposed operand, no copy.
        assert_eq!(view(&f32_shape(&[2, 3, 4]), &[0, 2, 1], [2, 4, 3]), Some([12, 1, 4]));
        // The batch dimension in the middle: [m, b, k] as [b, m, k].
        assert_eq!(view(&f32_shape(&[3, 2, 4]), &[1, 0, 2], [2, 3, 4]), Some([4, 8, 1]));
        // Two adjacent dims form one axis; size-1 dims are ignored; no batch: stride 0.
        assert_eq!(view(&f32_shape(&[2, 3, 1, 4]), &[3, 0, 1, 2], [1, 4, 6]), Some([0, 1, 4]));
        // Dims 1 then 0 as one axis are not evenly strided: copied instead.
        assert_eq!(view(&f32_shape(&[2, 3, 4]), &[1, 0, 2], [1, 6, 4]), None);
    }

    #[test]
    fn copied_operands_are_reordered() {
        let shape = f32_shape(&[2, 3]);
        let vals: Vec<f32> = (0..6).map(|x| x as f32).collect();
        let op = Operand::owned(&shape, vals, &[1, 0], [1, 3, 2]);
        // SAFETY: the copy holds six elements.
        let got = unsafe { std::slice::from_raw_parts(op.base, 6) };
        assert_eq!(got, &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(op.strides, [6, 2, 1]);
    }
}
