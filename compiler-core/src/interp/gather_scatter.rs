//! Interpreter: `gather` and `scatter`, following the StableHLO spec index by index.
//!
//! Both map an index of the batch-like array (gather's result, scatter's updates) to an
//! operand index: start index (from the index array, along `index_vector_dim`, which may
//! equal the rank for an implicit trailing size-1 dimension) + batching index (the
//! operand/indices batching dims pair up) + offset within the slice/window.
//! Gather clamps start indices so the whole slice fits; scatter skips each update element
//! whose destination falls outside the operand, and applies updates in row-major order
//! of the updates array, calling the update body with (N current values, N updates).

use super::index::{array_arg, call_scalars, check_axes, in_bounds, index_value, next_index, offset, pack,
    result_shape, result_shapes, scalar_value, set_scalar};
use super::Interpreter;
use crate::ir::{Instruction, Literal, Op, Value};

/// Where the index vector for one batch position lives inside the index array.
struct IndexArray<'a> {
    lit: &'a Literal,
    strides: Vec<usize>,
    /// `index_vector_dim`; equal to the rank when the vector is implicit (length 1).
    vector_dim: usize,
}

impl<'a> IndexArray<'a> {
    fn new(lit: &'a Literal, vector_dim: i64, expected_len: usize) -> Result<Self, String> {
        let rank = lit.shape.rank();
        if !lit.elem().is_int() {
            return Err(format!("indices must be integers, got {}", lit.elem()));
        }
        if vector_dim < 0 || vector_dim as usize > rank {
            return Err(format!("index_vector_dim {vector_dim} out of range for indices of rank {rank}"));
        }
        let vector_dim = vector_dim as usize;
        let len = if vector_dim < rank { lit.shape.dims[vector_dim] as usize } else { 1 };
        if len != expected_len {
            return Err(format!("index vectors have {len} elements, the dimension map has {expected_len}"));
        }
        Ok(IndexArray { lit, strides: lit.shape.strides(), vector_dim })
    }

    /// Dimensions of the index array without the index vector dimension.
    fn batch_dims(&self) -> Vec<i64> {
        let mut d = self.lit.shape.dims.clone();
        if self.vector_dim < d.len() {
            d.remove(self.vector_dim);
        }
        d
    }

    /// The index array position of component `k` of the vector at `batch`.
    fn full_index(&self, batch: &[i64], k: usize) -> Vec<i64> {
        let mut idx = batch.to_vec();
        if self.vector_dim < self.lit.shape.rank() {
            idx.insert(self.vector_dim, k as i64);
        }
        idx
    }

    fn component(&self, batch: &[i64], k: usize) -> i64 {
        index_value(self.lit.get(offset(&self.full_index(batch, k), &self.strides)))
    }

    /// Batch coordinate for index-array dimension `d` (which is not the vector dim).
    fn batch_coord(&self, batch: &[i64], d: usize) -> i64 {
        batch[if d < self.vector_dim { d } else { d - 1 }]
    }
}

/// Axes of `rank` not in `excluded`, in order.
fn remaining_axes(rank: usize, excluded: &[&[i64]]) -> Vec<usize> {
    (0..rank).filter(|&d| !excluded.iter().any(|e| e.contains(&(d as i64)))).collect()
}

fn check_batching_pairs(
    what: &str,
    operand_dims: &[i64],
    operand_batching: &[i64],
    indices: &IndexArray,
    indices_batching: &[i64],
) -> Result<(), String> {
    if operand_batching.len() != indices_batching.len() {
        return Err(format!("{what}: operand and indices batching dims differ in number"));
    }
    check_axes("indices batching dims", indices_batching, indices.lit.shape.rank())?;
    for (&od, &id) in operand_batching.iter().zip(indices_batching) {
        if id as usize == indices.vector_dim {
            return Err(format!("{what}: index_vector_dim {id} cannot be a batching dim"));
        }
        if operand_dims[od as usize] != indices.lit.shape.dims[id as usize] {
            return Err(format!("{what}: batching dims {od} and {id} have different sizes"));
        }
    }
    Ok(())
}

pub(super) fn gather(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Gather(g) = &inst.op else { return Err("not a gather".into()) };
    let operand = array_arg(args, 0)?;
    let out_shape = result_shape(inst)?;
    let indices = IndexArray::new(array_arg(args, 1)?, g.index_vector_dim, g.start_index_map.len())?;
    let rank = operand.shape.rank();
    let dims = &operand.shape.dims;
    if g.slice_sizes.len() != rank {
        return Err(format!("slice_sizes has {} entries for an operand of rank {rank}", g.slice_sizes.len()));
    }
    for (d, (&s, &n)) in g.slice_sizes.iter().zip(dims).enumerate() {
        if s < 0 || s > n {
            return Err(format!("slice size {s} does not fit dimension {d} of size {n}"));
        }
    }
    check_axes("collapsed_slice_dims", &g.collapsed_slice_dims, rank)?;
    check_axes("operand_batching_dims", &g.operand_batching_dims, rank)?;
    check_axes("start_index_map", &g.start_index_map, rank)?;
    for &d in g.collapsed_slice_dims.iter().chain(&g.operand_batching_dims) {
        if g.slice_sizes[d as usize] > 1 {
            return Err(format!("collapsed or batching dim {d} must have slice size <= 1"));
        }
    }
    check_batching_pairs("gather", dims, &g.operand_batching_dims, &indices, &g.start_indices_batching_dims)?;
    let out_rank = out_shape.rank();
    check_axes("offset_dims", &g.offset_dims, out_rank)?;
    let offset_axes = remaining_axes(rank, &[&g.collapsed_slice_dims, &g.operand_batching_dims]);
    if offset_axes.len() != g.offset_dims.len() {
        return Err(format!("{} offset dims for {} uncollapsed operand dims", g.offset_dims.len(), offset_axes.len()));
    }
    let batch_out_axes = remaining_axes(out_rank, &[&g.offset_dims]);
    let index_batch = indices.batch_dims();
    if batch_out_axes.len() != index_batch.len() {
        return Err(format!("result has {} batch dims, indices have {}", batch_out_axes.len(), index_batch.len()));
    }
    for (k, &a) in batch_out_axes.iter().enumerate() {
        if out_shape.dims[a] != index_batch[k] {
            return Err(format!("result dim {a} is {}, indices give {}", out_shape.dims[a], index_batch[k]));
        }
    }
    for (k, &a) in g.offset_dims.iter().enumerate() {
        if out_shape.dims[a as usize] != g.slice_sizes[offset_axes[k]] {
            return Err(format!("result dim {a} does not match slice size {}", g.slice_sizes[offset_axes[k]]));
        }
    }
    if out_shape.elem != operand.elem() {
        return Err(format!("result type {} differs from operand type {}", out_shape.elem, operand.elem()));
    }

    let strides = operand.shape.strides();
    let n = out_shape.num_elements();
    let mut picks = Vec::with_capacity(n);
    let mut ri = vec![0i64; out_rank];
    let mut batch = vec![0i64; batch_out_axes.len()];
    let mut oi = vec![0i64; rank];
    for _ in 0..n {
        for (k, &a) in batch_out_axes.iter().enumerate() {
            batch[k] = ri[a];
        }
        oi.iter_mut().for_each(|x| *x = 0);
        for (k, &d) in g.start_index_map.iter().enumerate() {
            let d = d as usize;
            let start = indices.component(&batch, k);
            oi[d] = start.clamp(0, dims[d] - g.slice_sizes[d]);
        }
        for (&od, &id) in g.operand_batching_dims.iter().zip(&g.start_indices_batching_dims) {
            oi[od as usize] += indices.batch_coord(&batch, id as usize);
        }
        for (k, &a) in g.offset_dims.iter().enumerate() {
            oi[offset_axes[k]] += ri[a as usize];
        }
        if !in_bounds(&oi, dims) {
            return Err(format!("gather reads outside the operand at {oi:?}"));
        }
        picks.push(offset(&oi, &strides));
        next_index(&mut ri, &out_shape.dims);
    }
    Ok(Value::Array(Literal::new(out_shape, operand.data.gather(picks))))
}

pub(super) fn scatter(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Scatter(s) = &inst.op else { return Err("not a scatter".into()) };
    if args.len() < 3 || args.len() % 2 == 0 {
        return Err(format!("scatter takes N inputs, indices and N updates, got {} operands", args.len()));
    }
    let n = (args.len() - 1) / 2;
    let inputs: Vec<&Literal> = (0..n).map(|i| array_arg(args, i)).collect::<Result<_, _>>()?;
    let updates: Vec<&Literal> = (0..n).map(|i| array_arg(args, n + 1 + i)).collect::<Result<_, _>>()?;
    let indices = IndexArray::new(array_arg(args, n)?, s.index_vector_dim, s.scatter_dims_to_operand_dims.len())?;
    let out_shapes = result_shapes(inst)?;
    if out_shapes.len() != n {
        return Err(format!("scatter of {n} inputs must have {n} results"));
    }
    let dims = &inputs[0].shape.dims;
    let rank = dims.len();
    for (i, (inp, upd)) in inputs.iter().zip(&updates).enumerate() {
        if &inp.shape.dims != dims || upd.shape.dims != updates[0].shape.dims {
            return Err(format!("inputs (and updates) must all have the same shape (operand {i})"));
        }
        if !out_shapes[i].same_dims(&inp.shape) || out_shapes[i].elem != inp.elem() || upd.elem() != inp.elem() {
            return Err(format!("input, update and result {i} must have the same type"));
        }
    }
    check_axes("inserted_window_dims", &s.inserted_window_dims, rank)?;
    check_axes("input_batching_dims", &s.input_batching_dims, rank)?;
    check_axes("scatter_dims_to_operand_dims", &s.scatter_dims_to_operand_dims, rank)?;
    check_batching_pairs("scatter", dims, &s.input_batching_dims, &indices, &s.scatter_indices_batching_dims)?;
    let upd_dims = &updates[0].shape.dims;
    check_axes("update_window_dims", &s.update_window_dims, upd_dims.len())?;
    let window_axes = remaining_axes(rank, &[&s.inserted_window_dims, &s.input_batching_dims]);
    if window_axes.len() != s.update_window_dims.len() {
        return Err(format!("{} update window dims for {} operand window dims", s.update_window_dims.len(), window_axes.len()));
    }
    let scatter_axes = remaining_axes(upd_dims.len(), &[&s.update_window_dims]);
    let index_batch = indices.batch_dims();
    if scatter_axes.len() != index_batch.len()
        || scatter_axes.iter().zip(&index_batch).any(|(&a, &d)| upd_dims[a] != d)
    {
        return Err(format!("updates {:?} do not match the scatter indices batch dims {index_batch:?}", upd_dims));
    }
    for (k, &a) in s.update_window_dims.iter().enumerate() {
        if upd_dims[a as usize] > dims[window_axes[k]] {
            return Err(format!("update window dim {a} is larger than operand dim {}", window_axes[k]));
        }
    }

    let mut results: Vec<Literal> = inputs.iter().map(|l| (*l).clone()).collect();
    let elems: Vec<_> = inputs.iter().map(|l| l.elem()).collect();
    let strides = inputs[0].shape.strides();
    let upd_strides = updates[0].shape.strides();
    let mut ui = vec![0i64; upd_dims.len()];
    let mut batch = vec![0i64; scatter_axes.len()];
    let mut ri = vec![0i64; rank];
    let mut body_args = Vec::with_capacity(2 * n);
    for _ in 0..updates[0].num_elements() {
        for (k, &a) in scatter_axes.iter().enumerate() {
            batch[k] = ui[a];
        }
        ri.iter_mut().for_each(|x| *x = 0);
        for (k, &d) in s.scatter_dims_to_operand_dims.iter().enumerate() {
            ri[d as usize] = indices.component(&batch, k);
        }
        for (&od, &id) in s.input_batching_dims.iter().zip(&s.scatter_indices_batching_dims) {
            ri[od as usize] += indices.batch_coord(&batch, id as usize);
        }
        for (k, &a) in s.update_window_dims.iter().enumerate() {
            ri[window_axes[k]] = ri[window_axes[k]].saturating_add(ui[a as usize]);
        }
        if in_bounds(&ri, dims) {
            let at = offset(&ri, &strides);
            let from = offset(&ui, &upd_strides);
            body_args.clear();
            for (r, &e) in results.iter().zip(&elems) {
                body_args.push(scalar_value(e, r.get(at))?);
            }
            for (u, &e) in updates.iter().zip(&elems) {
                body_args.push(scalar_value(e, u.get(from))?);
            }
            let new = call_scalars(interp, s.body, &body_args, n)?;
            for (r, v) in results.iter_mut().zip(new) {
                set_scalar(&mut r.data, at, v)?;
            }
        }
        next_index(&mut ui, upd_dims);
    }
    for (r, sh) in results.iter_mut().zip(out_shapes) {
        r.shape = sh;
    }
    Ok(pack(results))
}
