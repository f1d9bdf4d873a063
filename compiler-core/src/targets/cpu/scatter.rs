//! Scatters for the CPU runtime: updates combined into copies of the operands by the
//! scatter's update computation, compiled as a scalar kernel.
//!
//! The combiner kernel reads 2N one-element buffers (N current values, N updates) and
//! writes N. Update elements are visited in row-major order, one at a time, so repeated
//! targets combine in the interpreter's order; an element whose target lies outside the
//! operand is skipped (see [`crate::kernel::ScatterSpec`]).

use super::KernelFn;
use crate::ir::{Literal, Scalar, Shape};
use crate::kernel::ScatterSpec;

/// Scatters into `outs` (already holding copies of the operands).
///
/// # Safety
/// `outs[i]` must point to a buffer of `spec.operand_dims` elements of `spec.elems[i]`,
/// `updates[i]` hold `spec.update_dims` of them, and `combine` must be the combiner
/// kernel of `spec`.
pub unsafe fn run(
    spec: &ScatterSpec,
    combine: KernelFn,
    indices: &[u8],
    updates: &[&[u8]],
    outs: &[*mut u8],
) -> Result<(), String> {
    let n = outs.len();
    let index_shape = Shape::new(spec.index_elem, spec.index_dims.clone());
    let index = Literal::from_le_bytes(index_shape.clone(), indices).ok_or("scatter indices of the wrong size")?;
    let index_strides = index_shape.strides();
    let dims = &spec.operand_dims;
    let strides = Shape::new(spec.elems[0], dims.clone()).strides();
    let upd_dims = &spec.update_dims;
    let total: usize = upd_dims.iter().map(|&d| d.max(0) as usize).product();
    let sizes: Vec<usize> = spec.elems.iter().map(|e| e.byte_size()).collect();
    // 2N input words, then N output words.
    let mut scratch = vec![0u64; 3 * n];
    let base_ptr = scratch.as_mut_ptr();
    let table: Vec<*mut u8> = (0..3 * n).map(|i| base_ptr.wrapping_add(i) as *mut u8).collect();
    let component = |batch: &[i64], k: usize| -> i64 {
        let mut pos = 0usize;
        let mut b = 0;
        for (d, &s) in index_strides.iter().enumerate() {
            let i = if d == spec.index_vector_dim {
                k as i64
            } else {
                b += 1;
                batch[b - 1]
            };
            pos += i as usize * s;
        }
        match index.get(pos) {
            Scalar::U(v) => v.min(i64::MAX as u64) as i64,
            s => s.as_i64(),
        }
    };
    let mut ui = vec![0i64; upd_dims.len()];
    let mut batch = vec![0i64; spec.scatter_axes.len()];
    let mut ri = vec![0i64; dims.len()];
    for from in 0..total {
        for (k, &a) in spec.scatter_axes.iter().enumerate() {
            batch[k] = ui[a];
        }
        ri.iter_mut().for_each(|x| *x = 0);
        for (k, &d) in spec.scatter_dims_to_operand_dims.iter().enumerate() {
            ri[d] = component(&batch, k);
        }
        for &(od, id) in &spec.batching {
            let b = batch[if id < spec.index_vector_dim { id } else { id - 1 }];
            ri[od] = ri[od].saturating_add(b);
        }
        for &(a, d) in &spec.window {
            ri[d] = ri[d].saturating_add(ui[a]);
        }
        if ri.iter().zip(dims).all(|(&i, &n)| 0 <= i && i < n) {
            let at: usize = ri.iter().zip(&strides).map(|(&i, &s)| i as usize * s).sum();
            for i in 0..n {
                let sz = sizes[i];
                // SAFETY: `at` and `from` are inside their buffers; scratch words hold 8 bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(outs[i].add(at * sz), table[i], sz);
                    std::ptr::copy_nonoverlapping(updates[i].as_ptr().add(from * sz), table[n + i], sz);
                }
            }
            combine(table.as_ptr(), 0, 1);
            for i in 0..n {
                // SAFETY: as above.
                unsafe { std::ptr::copy_nonoverlapping(table[2 * n + i], outs[i].add(at * sizes[i]), sizes[i]) };
            }
        }
        // Next update index, row-major.
        for d in (0..ui.len()).rev() {
            ui[d] += 1;
            if ui[d] < upd_dims[d] {
                break;
            }
            ui[d] = 0;
        }
    }
    Ok(())
}
