//! Interpreter: `gather` and `scatter`, following the StableHLO spec index by index.
//!
//! Both map an index of the batch-like array (gather's result, scatter's updates) to an
//! operand index: start index (from the index array, along `index_vector_dim`, which may
//! equal the rank for an implicit trailing size-1 dimension) + batching index (the
//! operand/indices batching dims pair up) + offset within the slice/window.
//! Gather clamps start indices so the whole slice fits; scatter skips each update element
//! whose destination falls outside the operand, and applies updates in row-major order
//! of the updates array, calling the update body with (N current values, N updates).
//! (XLA's own backends drop a whole update window when any part of it is outside; the
//! per-element rule here is the spec's and the StableHLO reference interpreter's.)

use super::index::{
    array_arg, check_axes, in_bounds, index_value, next_index, offset, pack, result_shape, result_shapes, set_scalar,
    Body,
};
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
        let mut d = self.lit.shape.dims.to_vec();
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
            oi[od as usize] = oi[od as usize].saturating_add(indices.batch_coord(&batch, id as usize));
        }
        for (k, &a) in g.offset_dims.iter().enumerate() {
            oi[offset_axes[k]] = oi[offset_axes[k]].saturating_add(ri[a as usize]);
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
    if args.len() < 3 || args.len().is_multiple_of(2) {
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
        return Err(format!(
            "{} update window dims for {} operand window dims",
            s.update_window_dims.len(),
            window_axes.len()
        ));
    }
    let scatter_axes = remaining_axes(upd_dims.len(), &[&s.update_window_dims]);
    let index_batch = indices.batch_dims();
    if scatter_axes.len() != index_batch.len() || scatter_axes.iter().zip(&index_batch).any(|(&a, &d)| upd_dims[a] != d)
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
    let body = Body::new(interp, s.body, [elems.clone(), elems.clone()].concat(), n);
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
            ri[od as usize] = ri[od as usize].saturating_add(indices.batch_coord(&batch, id as usize));
        }
        for (k, &a) in s.update_window_dims.iter().enumerate() {
            ri[window_axes[k]] = ri[window_axes[k]].saturating_add(ui[a as usize]);
        }
        if in_bounds(&ri, dims) {
            let at = offset(&ri, &strides);
            let from = offset(&ui, &upd_strides);
            body_args.clear();
            body_args.extend(results.iter().map(|r| r.get(at)));
            body_args.extend(updates.iter().map(|u| u.get(from)));
            let new = body.apply(interp, &body_args)?;
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

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::ir::{BinaryOp, ElementType::*, GatherDims, Op, ScatterDims, Type, Value};

    fn iota(n: i64) -> Vec<i64> {
        (1..=n).collect()
    }

    fn as_i64s(v: &Value) -> Vec<i64> {
        let l = v.as_array().unwrap();
        (0..l.num_elements()).map(|i| l.get(i).as_i64()).collect()
    }

    #[test]
    fn gather_spec_example_clamps_start_indices() {
        // stablehlo interpret/gather.mlir @gather_op_test: [0, 9] clamps to [0, 2].
        let operand = ints(S64, &[3, 4, 2], &iota(24));
        let idx = ints(S64, &[2, 3, 2], &[0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9]);
        let g = GatherDims {
            offset_dims: vec![2, 3],
            collapsed_slice_dims: vec![0],
            start_index_map: vec![1, 0],
            index_vector_dim: 2,
            slice_sizes: vec![1, 2, 2],
            ..Default::default()
        };
        let out = run_op_array(Op::Gather(Box::new(g)), arr(S64, &[2, 3, 2, 2]), &[operand.into(), idx.into()]);
        let want = [1, 2, 3, 4, 3, 4, 5, 6, 13, 14, 15, 16, 9, 10, 11, 12, 11, 12, 13, 14, 17, 18, 19, 20];
        assert_eq!(as_i64s(&out.into()), want);
    }

    #[test]
    fn gather_with_batching_dims() {
        // stablehlo interpret/gather.mlir @gather_op_with_batching_dim_test.
        let operand = ints(S64, &[2, 3, 4, 2], &iota(48));
        let idx = ints(S64, &[2, 2, 3, 2], &[0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9, 0, 0, 2, 1, 2, 2, 1, 2, 0, 1, 1, 0]);
        let g = GatherDims {
            offset_dims: vec![3, 4],
            collapsed_slice_dims: vec![1],
            operand_batching_dims: vec![0],
            start_indices_batching_dims: vec![1],
            start_index_map: vec![2, 1],
            index_vector_dim: 3,
            slice_sizes: vec![1, 1, 2, 2],
            ..Default::default()
        };
        let out = run_op_array(Op::Gather(Box::new(g)), arr(S64, &[2, 2, 3, 2, 2]), &[operand.into(), idx.into()]);
        let want = [
            1, 2, 3, 4, 3, 4, 5, 6, 13, 14, 15, 16, //
            33, 34, 35, 36, 35, 36, 37, 38, 41, 42, 43, 44, //
            1, 2, 3, 4, 13, 14, 15, 16, 21, 22, 23, 24, //
            43, 44, 45, 46, 33, 34, 35, 36, 27, 28, 29, 30,
        ];
        assert_eq!(as_i64s(&out.into()), want);
    }

    #[test]
    fn gather_implicit_index_vector_dim() {
        // index_vector_dim == rank(indices): each index is a scalar row number; -1 and 7
        // clamp to rows 0 and 2.
        let operand = ints(S32, &[3, 2], &[10, 11, 20, 21, 30, 31]);
        let idx = ints(S32, &[4], &[2, 0, -1, 7]);
        let g = GatherDims {
            offset_dims: vec![1],
            collapsed_slice_dims: vec![0],
            start_index_map: vec![0],
            index_vector_dim: 1,
            slice_sizes: vec![1, 2],
            ..Default::default()
        };
        let out = run_op_array(Op::Gather(Box::new(g)), arr(S32, &[4, 2]), &[operand.into(), idx.into()]);
        assert_eq!(as_i64s(&out.into()), [30, 31, 10, 11, 10, 11, 30, 31]);
    }

    #[test]
    fn gather_rejects_bad_slice_sizes() {
        let g = GatherDims {
            offset_dims: vec![0],
            start_index_map: vec![0],
            index_vector_dim: 1,
            slice_sizes: vec![5],
            ..Default::default()
        };
        let err = run_op(
            Op::Gather(Box::new(g)),
            arr(F32, &[5]),
            &[f32s(&[3], &[1.0, 2.0, 3.0]).into(), ints(S32, &[1], &[0]).into()],
        );
        assert!(err.unwrap_err().message.contains("slice size 5"));
    }

    fn scatter_dims(body: crate::ir::CompId) -> ScatterDims {
        ScatterDims {
            update_window_dims: vec![2, 3],
            inserted_window_dims: vec![0],
            input_batching_dims: vec![],
            scatter_indices_batching_dims: vec![],
            scatter_dims_to_operand_dims: vec![1, 0],
            index_vector_dim: 2,
            indices_are_sorted: false,
            unique_indices: false,
            body,
        }
    }

    #[test]
    fn scatter_spec_example_skips_out_of_bounds() {
        // stablehlo interpret/scatter.mlir @scatter_op_test.
        // Once with the native add, once with `(a + b) + 0`, which is called.
        for called in [false, true] {
            let mut m = TestModule::new();
            let body = if called {
                let t = arr(S64, &[]);
                m.comp("add_zero", &[t.clone(), t.clone()], |b, p| {
                    let s = b.op(Op::Binary(BinaryOp::Add), &[p[0], p[1]], t.clone());
                    let z = b.constant(ints(S64, &[], &[0]));
                    b.op(Op::Binary(BinaryOp::Add), &[s, z], t.clone())
                })
            } else {
                m.binary_body(BinaryOp::Add, S64)
            };
            let inputs = ints(S64, &[3, 4, 2], &iota(24));
            let idx = ints(S64, &[2, 3, 2], &[0, 2, 1, 0, 2, 1, 0, 1, 1, 0, 0, 9]);
            let updates = ints(S64, &[2, 3, 2, 2], &[1; 24]);
            let out = m
                .run_op(
                    Op::Scatter(Box::new(scatter_dims(body))),
                    arr(S64, &[3, 4, 2]),
                    &[inputs.into(), idx.into(), updates.into()],
                )
                .unwrap();
            let want = [1, 2, 5, 6, 7, 8, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 21, 22, 23, 24];
            assert_eq!(as_i64s(&out), want, "called={called}");
        }
    }

    #[test]
    fn scatter_with_batching_dims() {
        // stablehlo interpret/scatter.mlir @scatter_op_with_batching_dim_test.
        let mut m = TestModule::new();
        let body = m.binary_body(BinaryOp::Add, S64);
        let inputs = ints(S64, &[2, 3, 4, 2], &iota(48));
        let idx = ints(S64, &[2, 2, 3, 2], &[0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9, 0, 0, 2, 1, 2, 2, 1, 2, 0, 1, 1, 0]);
        let updates = ints(S64, &[2, 2, 3, 2, 2], &[1; 48]);
        let dims = ScatterDims {
            update_window_dims: vec![3, 4],
            inserted_window_dims: vec![1],
            input_batching_dims: vec![0],
            scatter_indices_batching_dims: vec![1],
            scatter_dims_to_operand_dims: vec![2, 1],
            index_vector_dim: 3,
            ..scatter_dims(body)
        };
        let out = m
            .run_op(Op::Scatter(Box::new(dims)), arr(S64, &[2, 3, 4, 2]), &[inputs.into(), idx.into(), updates.into()])
            .unwrap();
        let want = [
            3, 4, 6, 7, 6, 7, 7, 8, 9, 10, 11, 12, 15, 16, 17, 18, 17, 18, 19, 20, 22, 23, 24, 25, //
            25, 26, 28, 29, 30, 31, 31, 32, 35, 36, 38, 39, 38, 39, 39, 40, 41, 42, 44, 45, 46, 47, 47, 48,
        ];
        assert_eq!(as_i64s(&out), want);
    }

    #[test]
    fn scatter_variadic_applies_in_index_order() {
        // Two inputs; the body keeps the first input's update and counts hits in the second.
        // Updates to index 1 arrive in order 5 then 7, so "replace" leaves 7 there.
        let mut m = TestModule::new();
        let s = Type::array(F32, vec![]);
        let si = Type::array(S32, vec![]);
        let body = m.comp("replace_count", &[s.clone(), si.clone(), s.clone(), si.clone()], |b, p| {
            let count = b.op(Op::Binary(BinaryOp::Add), &[p[1], p[3]], si.clone());
            b.tuple(&[p[2], count])
        });
        let dims = ScatterDims {
            update_window_dims: vec![],
            inserted_window_dims: vec![0],
            input_batching_dims: vec![],
            scatter_indices_batching_dims: vec![],
            scatter_dims_to_operand_dims: vec![0],
            index_vector_dim: 1,
            indices_are_sorted: false,
            unique_indices: false,
            body,
        };
        let ty = Type::Tuple(vec![arr(F32, &[3]), arr(S32, &[3])]);
        let out = m
            .run_op(
                Op::Scatter(Box::new(dims)),
                ty,
                &[
                    f32s(&[3], &[0.5, 0.5, 0.5]).into(),
                    ints(S32, &[3], &[0, 0, 0]).into(),
                    ints(S32, &[4], &[1, 3, 1, -1]).into(),
                    f32s(&[4], &[5.0, 6.0, 7.0, 8.0]).into(),
                    ints(S32, &[4], &[1, 1, 1, 1]).into(),
                ],
            )
            .unwrap();
        let parts = out.flatten();
        assert_eq!(parts[0].to_f64_vec(), [0.5, 7.0, 0.5]);
        assert_eq!(parts[1].to_f64_vec(), [0.0, 2.0, 0.0]);
    }
}
