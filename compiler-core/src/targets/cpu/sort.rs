//! Sorts for the CPU runtime: N arrays permuted together along one dimension, ordered by
//! the sort's comparator compiled as a scalar kernel.
//!
//! The comparator kernel reads 2N one-element buffers (lhs_0, rhs_0, lhs_1, ...) and
//! writes a pred byte. Each 1-D slice is sorted as a permutation of positions with the
//! interpreter's stable bottom-up merge sort (the right run wins only on a strict
//! "less"), so results match it even for comparators that are not strict weak orders.

use super::KernelFn;
use crate::interp::sort::merge_sort;
use crate::kernel::SortSpec;

/// Sorts `outs` (already holding copies of the inputs, row-major, in the plan's byte
/// encoding) in place.
///
/// # Safety
/// `outs[i]` must point to an 8-byte aligned buffer of `spec.dims` elements of
/// `spec.elems[i]`, and `cmp` must be the comparator kernel of `spec`.
pub unsafe fn run(spec: &SortSpec, cmp: KernelFn, outs: &[*mut u8]) {
    let n = outs.len();
    let dims = &spec.dims;
    let len = dims[spec.dim].max(0) as usize;
    let total: usize = dims.iter().map(|&d| d.max(0) as usize).product();
    if len == 0 || total == 0 {
        return;
    }
    let stride: usize = dims[spec.dim + 1..].iter().map(|&d| d as usize).product();
    let sizes: Vec<usize> = spec.elems.iter().map(|e| e.byte_size()).collect();
    // One 8-byte scratch word per comparator input, then the result.
    let mut scratch = vec![0u64; 2 * n + 1];
    let base_ptr = scratch.as_mut_ptr();
    let table: Vec<*mut u8> = (0..2 * n + 1).map(|i| base_ptr.wrapping_add(i) as *mut u8).collect();
    let less = |a: usize, b: usize| -> bool {
        for i in 0..n {
            let sz = sizes[i];
            // SAFETY: positions are inside the buffers; scratch words hold 8 bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(outs[i].add(a * sz), table[2 * i], sz);
                std::ptr::copy_nonoverlapping(outs[i].add(b * sz), table[2 * i + 1], sz);
            }
        }
        cmp(table.as_ptr(), 0, 1);
        // SAFETY: the comparator wrote its pred byte into the last scratch word.
        unsafe { *table[2 * n] != 0 }
    };
    let mut perm: Vec<usize> = Vec::with_capacity(len);
    let mut buf = vec![0usize; len];
    let mut tmp: Vec<u8> = Vec::new();
    // Slices start at every position whose index along `dim` is 0.
    for start in 0..total {
        if !(start / stride).is_multiple_of(len) {
            continue;
        }
        perm.clear();
        perm.extend((0..len).map(|j| start + j * stride));
        let sorted: Result<(), std::convert::Infallible> = merge_sort(&mut perm, &mut buf, &mut |a, b| Ok(less(a, b)));
        let Ok(()) = sorted;
        for i in 0..n {
            let sz = sizes[i];
            tmp.clear();
            for &p in &perm {
                // SAFETY: `p` is a position of the slice.
                tmp.extend_from_slice(unsafe { std::slice::from_raw_parts(outs[i].add(p * sz), sz) });
            }
            for (j, chunk) in tmp.chunks(sz).enumerate() {
                // SAFETY: as above.
                unsafe { std::ptr::copy_nonoverlapping(chunk.as_ptr(), outs[i].add((start + j * stride) * sz), sz) };
            }
        }
    }
}
