//! A dot operand seen as `[batch, rows, cols]` through strides, over its buffer in place
//! when its dimension numbers allow and over a reordered copy otherwise.

use crate::ir::Shape;

/// An operand as `[batch, rows, cols]`: a base pointer, the batch axis as (size, element
/// stride) per batch dimension (outermost first: the heads of a `[b, s, h, d]` tensor are
/// one dimension of it, its batch another), and one element stride each for the rows and
/// the columns.
pub(super) struct Operand<T> {
    pub base: *const T,
    pub batch: Vec<(usize, isize)>,
    pub rows: isize,
    pub cols: isize,
    _copy: Vec<T>,
}

impl<T: Copy> Operand<T> {
    /// The operand at `p` (of `shape`) in the dimension order `perm`, grouped into axes
    /// of `sizes` elements.
    ///
    /// # Safety
    /// `p` points to the operand's elements, aligned for `T`.
    pub unsafe fn new(shape: &Shape, p: *const u8, perm: &[usize], sizes: [usize; 3]) -> Operand<T> {
        if let Some(v) = view(shape, perm, sizes) {
            return Operand { base: p as *const T, batch: v.batch, rows: v.rows, cols: v.cols, _copy: Vec::new() };
        }
        let vals = std::slice::from_raw_parts(p as *const T, shape.num_elements()).to_vec();
        Operand::owned(shape, vals, perm, sizes)
    }

    /// Elements `vals` of `shape`, copied into the order `perm` unless already in it.
    pub fn owned(shape: &Shape, vals: Vec<T>, perm: &[usize], sizes: [usize; 3]) -> Operand<T> {
        let ordered = if view(shape, perm, sizes).is_some_and(|v| v == View::contiguous(sizes)) {
            vals
        } else {
            permuted(shape, &vals, perm)
        };
        let v = View::contiguous(sizes);
        Operand { base: ordered.as_ptr(), batch: v.batch, rows: v.rows, cols: v.cols, _copy: ordered }
    }

    /// An operand over elements that someone else owns: `[batch, rows, cols]` with
    /// batches `batch_stride` apart.
    ///
    /// # Safety
    /// The elements addressed outlive the operand.
    pub unsafe fn over(base: *const T, (batch, batch_stride): (usize, isize), rows: isize, cols: isize) -> Operand<T> {
        Operand { base, batch: vec![(batch, batch_stride)], rows, cols, _copy: Vec::new() }
    }

    /// The element offset of batch `b`.
    pub fn batch_offset(&self, mut b: usize) -> isize {
        let mut at = 0;
        for &(size, stride) in self.batch.iter().rev() {
            at += (b % size) as isize * stride;
            b /= size;
        }
        at
    }
}

/// The strides of an operand's three axes (see [`Operand`]).
#[derive(Debug, PartialEq)]
pub(super) struct View {
    pub batch: Vec<(usize, isize)>,
    pub rows: isize,
    pub cols: isize,
}

impl View {
    /// Row-major `[batch, rows, cols]`.
    pub fn contiguous(sizes: [usize; 3]) -> View {
        View { batch: vec![(sizes[0], (sizes[1] * sizes[2]) as isize)], rows: sizes[2] as isize, cols: 1 }
    }
}

/// The operand's strides when its rows and its columns are each an evenly strided group
/// of the dimensions in `perm` (dims of size 1 left out); the batch dimensions may have
/// strides of their own (evenly strided neighbours merged). None otherwise.
pub(super) fn view(shape: &Shape, perm: &[usize], sizes: [usize; 3]) -> Option<View> {
    let strides = shape.strides();
    let dims: Vec<usize> = perm.iter().copied().filter(|&d| shape.dims[d] != 1).collect();
    let mut at = 0;
    // The dims of each axis: a run of `dims` whose sizes multiply to the axis's size.
    let mut group = |size: usize| -> Option<&[usize]> {
        let start = at;
        let mut product = 1usize;
        while product < size && at < dims.len() {
            product *= shape.dims[dims[at]].max(0) as usize;
            at += 1;
        }
        (product == size).then_some(&dims[start..at])
    };
    let even = |g: &[usize]| g.windows(2).all(|w| strides[w[0]] == strides[w[1]] * shape.dims[w[1]] as usize);
    let stride = |g: &[usize]| g.last().map_or(0, |&d| strides[d] as isize);

    let batch_dims = group(sizes[0])?.to_vec();
    let row_dims = group(sizes[1])?.to_vec();
    let col_dims = group(sizes[2])?.to_vec();
    if at != dims.len() || !even(&row_dims) || !even(&col_dims) {
        return None;
    }
    let mut batch: Vec<(usize, isize)> = Vec::new();
    for &d in &batch_dims {
        let (size, s) = (shape.dims[d] as usize, strides[d] as isize);
        match batch.last_mut() {
            Some(last) if last.1 == s * size as isize => *last = (last.0 * size, s),
            _ => batch.push((size, s)),
        }
    }
    if batch.is_empty() {
        batch.push((1, 0));
    }
    Some(View { batch, rows: stride(&row_dims), cols: stride(&col_dims) })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::ElementType;

    fn f32_shape(dims: &[i64]) -> Shape {
        Shape::new(ElementType::F32, dims)
    }

    fn strides(batch: &[(usize, isize)], rows: isize, cols: isize) -> Option<View> {
        Some(View { batch: batch.to_vec(), rows, cols })
    }

    #[test]
    fn operands_are_viewed_through_strides_when_their_groups_allow() {
        // [b, k, m] read as [b, m, k]: a transposed operand, no copy.
        assert_eq!(view(&f32_shape(&[2, 3, 4]), &[0, 2, 1], [2, 4, 3]), strides(&[(2, 12)], 1, 4));
        // The batch dimension in the middle: [m, b, k] as [b, m, k].
        assert_eq!(view(&f32_shape(&[3, 2, 4]), &[1, 0, 2], [2, 3, 4]), strides(&[(2, 4)], 8, 1));
        // Two adjacent dims form one axis; size-1 dims are ignored; no batch: stride 0.
        assert_eq!(view(&f32_shape(&[2, 3, 1, 4]), &[3, 0, 1, 2], [1, 4, 6]), strides(&[(1, 0)], 1, 4));
        // Dims 1 then 0 as one axis are not evenly strided: copied instead.
        assert_eq!(view(&f32_shape(&[2, 3, 4]), &[1, 0, 2], [1, 6, 4]), None);
    }

    #[test]
    fn batch_dimensions_keep_strides_of_their_own() {
        // Attention's heads: [b, s, h, d] with batch (b, h), rows s, contracting d.
        let v = view(&f32_shape(&[4, 128, 4, 64]), &[0, 2, 1, 3], [16, 128, 64]);
        assert_eq!(v, strides(&[(4, 128 * 256), (4, 64)], 256, 1));
        // Evenly strided batch dims merge into one.
        let v = view(&f32_shape(&[2, 3, 5, 7]), &[0, 1, 2, 3], [6, 5, 7]);
        assert_eq!(v, strides(&[(6, 35)], 7, 1));
        let op =
            Operand::<f32> { base: std::ptr::null(), batch: vec![(4, 1000), (4, 10)], rows: 0, cols: 0, _copy: vec![] };
        assert_eq!(op.batch_offset(6), 1000 + 2 * 10);
    }

    #[test]
    fn copied_operands_are_reordered() {
        let shape = f32_shape(&[2, 3]);
        let vals: Vec<f32> = (0..6).map(|x| x as f32).collect();
        let op = Operand::owned(&shape, vals, &[1, 0], [1, 3, 2]);
        // SAFETY: the copy holds six elements.
        let got = unsafe { std::slice::from_raw_parts(op.base, 6) };
        assert_eq!(got, &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!((op.rows, op.cols), (2, 1));
    }
}
