//! Interpreter: constants, iota and the data-movement ops (broadcast, reshape, bitcast,
//! copy, transpose, slices, concatenate, pad, reverse).
//!
//! Every op here only moves elements: it computes, for each result element in row-major
//! order, which operand element it copies, then gathers them. Attributes are checked
//! against the operand ranks first, so a malformed module gives an error, not a panic.

use super::{
    check_result, expect_arity, expect_array, for_each_index, linear_offset, result_shape, scalar_index, set_elem,
    Interpreter,
};
use crate::ir::{Data, Instruction, Literal, Op, Shape, Value};

fn new_array(shape: Shape, data: Data) -> Value {
    Value::Array(Literal { shape, data })
}

/// The declared result shape without a layout (values are logical row-major).
fn logical_result(inst: &Instruction) -> Result<Shape, String> {
    let s = result_shape(inst)?;
    Ok(Shape::new(s.elem, s.dims.clone()))
}

pub(super) fn constant(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    let Op::Constant(lit) = &inst.op else { return Err("expected a constant".into()) };
    Ok(Value::Array(lit.clone()))
}

/// Counts along `dim`: element `i` holds `i[dim]` converted to the element type.
pub(super) fn iota(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Iota { dim } = inst.op else { return Err("expected an iota".into()) };
    expect_arity(inst, args, 0)?;
    let shape = logical_result(inst)?;
    if dim < 0 || dim as usize >= shape.rank() {
        return Err(format!("iota dimension {dim} out of range for {shape}"));
    }
    let mut values = Vec::with_capacity(shape.num_elements());
    for_each_index(&shape.dims, |i| values.push(i[dim as usize]));
    Ok(Value::Array(Literal::from_i64s(shape, &values)))
}

pub(super) fn broadcast_in_dim(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::BroadcastInDim { dims } = &inst.op else { return Err("expected a broadcast".into()) };
    expect_arity(inst, args, 1)?;
    let x = expect_array(inst, args, 0)?;
    let shape = logical_result(inst)?;
    if dims.len() != x.shape.rank() || shape.elem != x.elem() {
        return Err(format!("cannot broadcast {} to {shape} with dimensions {dims:?}", x.shape));
    }
    for (i, &d) in dims.iter().enumerate() {
        let ok = d >= 0
            && (d as usize) < shape.rank()
            && (x.shape.dims[i] == 1 || x.shape.dims[i] == shape.dims[d as usize]);
        if !ok {
            return Err(format!("cannot broadcast {} to {shape} with dimensions {dims:?}", x.shape));
        }
    }
    let strides = x.shape.strides();
    let mut src = Vec::with_capacity(shape.num_elements());
    for_each_index(&shape.dims, |r| {
        let off: usize = dims
            .iter()
            .enumerate()
            .map(|(i, &d)| if x.shape.dims[i] == 1 { 0 } else { r[d as usize] as usize * strides[i] })
            .sum();
        src.push(off);
    });
    Ok(new_array(shape, x.data.gather(src)))
}

pub(super) fn reshape(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    expect_arity(inst, args, 1)?;
    let x = expect_array(inst, args, 0)?;
    let shape = logical_result(inst)?;
    if shape.num_elements() != x.num_elements() || shape.elem != x.elem() {
        return Err(format!("cannot reshape {} to {shape}", x.shape));
    }
    Ok(new_array(shape, x.data.clone()))
}

/// Physical offset of each logical (row-major) element of `shape` under `minor_to_major`.
fn physical_offsets(shape: &Shape, minor_to_major: &[i64]) -> Result<Vec<usize>, String> {
    let rank = shape.rank();
    let mut seen = vec![false; rank];
    for &d in minor_to_major {
        if d < 0 || d as usize >= rank || std::mem::replace(&mut seen[d as usize], true) {
            return Err(format!("layout {minor_to_major:?} is not a permutation for {shape}"));
        }
    }
    if minor_to_major.len() != rank {
        return Err(format!("layout {minor_to_major:?} is not a permutation for {shape}"));
    }
    // Physical stride of each dimension: the most minor dimension has stride 1.
    let mut pstride = vec![0usize; rank];
    let mut s = 1usize;
    for &d in minor_to_major {
        pstride[d as usize] = s;
        s *= shape.dims[d as usize].max(0) as usize;
    }
    let mut out = Vec::with_capacity(shape.num_elements());
    for_each_index(&shape.dims, |i| out.push(linear_offset(&pstride, i)));
    Ok(out)
}

/// XLA `bitcast`: the operand's bytes in its physical layout, read back in the result's
/// physical layout. With default layouts on both sides it is a reshape. Element types
/// may differ only when their sizes match (then the bits are reinterpreted).
pub(super) fn bitcast(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    expect_arity(inst, args, 1)?;
    let x = expect_array(inst, args, 0)?;
    let declared = result_shape(inst)?;
    if declared.num_elements() != x.num_elements() || declared.elem.byte_size() != x.elem().byte_size() {
        return Err(format!("cannot bitcast {} to {declared}", x.shape));
    }
    let operand_shape = match interp.operand_type(inst, 0).and_then(|t| t.as_array()) {
        Some(s) if s.same_dims(&x.shape) => s.clone(),
        _ => x.shape.clone(),
    };
    // Logical operand element -> physical slot, and physical slot -> logical operand element.
    let op_phys = physical_offsets(&x.shape, &operand_shape.minor_to_major())?;
    let mut logical_at = vec![0usize; op_phys.len()];
    for (logical, &phys) in op_phys.iter().enumerate() {
        logical_at[phys] = logical;
    }
    let res_phys = physical_offsets(declared, &declared.minor_to_major())?;
    let data = x.data.gather(res_phys.iter().map(|&p| logical_at[p]));
    let moved = Literal { shape: Shape::new(x.elem(), declared.dims.clone()), data };
    if declared.elem == x.elem() {
        return Ok(Value::Array(moved));
    }
    let shape = Shape::new(declared.elem, declared.dims.clone());
    Literal::from_le_bytes(shape, &moved.to_le_bytes())
        .map(Value::Array)
        .ok_or_else(|| format!("cannot bitcast {} to {declared}", x.shape))
}

pub(super) fn copy(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    expect_arity(inst, args, 1)?;
    Ok(args[0].clone())
}

/// Result dimension `i` is operand dimension `perm[i]`.
pub(super) fn transpose(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Transpose { perm } = &inst.op else { return Err("expected a transpose".into()) };
    expect_arity(inst, args, 1)?;
    let x = expect_array(inst, args, 0)?;
    let rank = x.shape.rank();
    let mut seen = vec![false; rank];
    let valid = perm.len() == rank
        && perm.iter().all(|&p| p >= 0 && (p as usize) < rank && !std::mem::replace(&mut seen[p as usize], true));
    if !valid {
        return Err(format!("permutation {perm:?} is invalid for {}", x.shape));
    }
    let dims: Vec<i64> = perm.iter().map(|&p| x.shape.dims[p as usize]).collect();
    let shape = Shape::new(x.elem(), dims);
    check_result(inst, &shape)?;
    let strides = x.shape.strides();
    let permuted: Vec<usize> = perm.iter().map(|&p| strides[p as usize]).collect();
    let mut src = Vec::with_capacity(shape.num_elements());
    for_each_index(&shape.dims, |r| src.push(linear_offset(&permuted, r)));
    Ok(new_array(shape, x.data.gather(src)))
}

pub(super) fn slice(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Slice { start, limit, stride } = &inst.op else { return Err("expected a slice".into()) };
    expect_arity(inst, args, 1)?;
    let x = expect_array(inst, args, 0)?;
    let rank = x.shape.rank();
    if start.len() != rank || limit.len() != rank || stride.len() != rank {
        return Err(format!("slice attributes do not match the rank of {}", x.shape));
    }
    let mut dims = Vec::with_capacity(rank);
    for d in 0..rank {
        let (s, l, k) = (start[d], limit[d], stride[d]);
        if s < 0 || l < s || l > x.shape.dims[d] || k <= 0 {
            return Err(format!("slice [{s}:{l}:{k}] is out of bounds for dimension {d} of {}", x.shape));
        }
        // ceil((l - s) / k) without `l - s + k - 1`, which overflows for a huge stride.
        dims.push(if l == s { 0 } else { (l - s - 1) / k + 1 });
    }
    let shape = Shape::new(x.elem(), dims);
    check_result(inst, &shape)?;
    let strides = x.shape.strides();
    let mut src = Vec::with_capacity(shape.num_elements());
    for_each_index(&shape.dims, |r| {
        src.push((0..rank).map(|d| (start[d] + r[d] * stride[d]) as usize * strides[d]).sum());
    });
    Ok(new_array(shape, x.data.gather(src)))
}

/// Start indices of a dynamic slice or update, each clamped to `[0, dim - size]` as the
/// spec says (so the window always lies inside the operand).
fn clamped_starts(
    inst: &Instruction,
    args: &[Value],
    first: usize,
    operand: &Shape,
    sizes: &[i64],
) -> Result<Vec<i64>, String> {
    let rank = operand.rank();
    if args.len() != first + rank || sizes.len() != rank {
        return Err(format!("needs {rank} start indices for {}, got {}", operand, args.len().saturating_sub(first)));
    }
    (0..rank)
        .map(|d| {
            if sizes[d] < 0 || sizes[d] > operand.dims[d] {
                return Err(format!("slice size {} does not fit dimension {d} of {operand}", sizes[d]));
            }
            Ok(scalar_index(inst, args, first + d)?.clamp(0, operand.dims[d] - sizes[d]))
        })
        .collect()
}

pub(super) fn dynamic_slice(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::DynamicSlice { sizes } = &inst.op else { return Err("expected a dynamic-slice".into()) };
    let x = expect_array(inst, args, 0)?;
    let starts = clamped_starts(inst, args, 1, &x.shape, sizes)?;
    let shape = Shape::new(x.elem(), sizes.clone());
    check_result(inst, &shape)?;
    let strides = x.shape.strides();
    let mut src = Vec::with_capacity(shape.num_elements());
    for_each_index(&shape.dims, |r| {
        src.push(r.iter().zip(&starts).zip(&strides).map(|((&i, &s), &k)| (i + s) as usize * k).sum());
    });
    Ok(new_array(shape, x.data.gather(src)))
}

pub(super) fn dynamic_update_slice(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let x = expect_array(inst, args, 0)?;
    let update = expect_array(inst, args, 1)?;
    if update.elem() != x.elem() || update.shape.rank() != x.shape.rank() {
        return Err(format!("cannot update {} with {}", x.shape, update.shape));
    }
    let starts = clamped_starts(inst, args, 2, &x.shape, &update.shape.dims)?;
    check_result(inst, &x.shape)?;
    let mut out = x.clone();
    let strides = x.shape.strides();
    let mut result = Ok(());
    let mut k = 0;
    for_each_index(&update.shape.dims, |u| {
        let dst: usize = u.iter().zip(&starts).zip(&strides).map(|((&i, &s), &st)| (i + s) as usize * st).sum();
        if result.is_ok() {
            result = set_elem(&mut out.data, dst, &update.data, k);
        }
        k += 1;
    });
    result?;
    Ok(Value::Array(out))
}

pub(super) fn concatenate(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Concatenate { dim } = inst.op else { return Err("expected a concatenate".into()) };
    let first = expect_array(inst, args, 0)?;
    let rank = first.shape.rank();
    if dim < 0 || dim as usize >= rank {
        return Err(format!("concatenate dimension {dim} out of range for {}", first.shape));
    }
    let d = dim as usize;
    let mut parts = Vec::with_capacity(args.len());
    let mut total = 0;
    for i in 0..args.len() {
        let a = expect_array(inst, args, i)?;
        let same_other_dims =
            a.shape.rank() == rank && (0..rank).all(|k| k == d || a.shape.dims[k] == first.shape.dims[k]);
        if a.elem() != first.elem() || !same_other_dims {
            return Err(format!("cannot concatenate {} with {} along {dim}", first.shape, a.shape));
        }
        parts.push((a, total));
        total += a.shape.dims[d];
    }
    let mut dims = first.shape.dims.clone();
    dims[d] = total;
    let shape = Shape::new(first.elem(), dims);
    check_result(inst, &shape)?;
    let mut data = Data::with_capacity(shape.elem, shape.num_elements());
    let strides: Vec<Vec<usize>> = parts.iter().map(|(a, _)| a.shape.strides()).collect();
    let mut idx = Vec::with_capacity(rank);
    for_each_index(&shape.dims, |r| {
        // The last part whose offset is <= r[d] holds this element.
        let k = parts.iter().rposition(|&(a, off)| off <= r[d] && a.shape.dims[d] > 0).unwrap_or(0);
        let (a, off) = parts[k];
        idx.clear();
        idx.extend_from_slice(r);
        idx[d] -= off;
        data.push_from(&a.data, linear_offset(&strides[k], &idx));
    });
    Ok(new_array(shape, data))
}

/// Edge padding `low`/`high` (negative values cut) and `interior` padding between
/// elements, filled with the scalar padding value.
pub(super) fn pad(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Pad { low, high, interior } = &inst.op else { return Err("expected a pad".into()) };
    expect_arity(inst, args, 2)?;
    let x = expect_array(inst, args, 0)?;
    let value = expect_array(inst, args, 1)?;
    let rank = x.shape.rank();
    if value.shape.rank() != 0 || value.elem() != x.elem() {
        return Err(format!("padding value must be a {} scalar, got {}", x.elem(), value.shape));
    }
    if low.len() != rank || high.len() != rank || interior.len() != rank || interior.iter().any(|&i| i < 0) {
        return Err(format!("pad attributes do not match {}", x.shape));
    }
    let mut dims = Vec::with_capacity(rank);
    for d in 0..rank {
        let n = x.shape.dims[d];
        let size = low[d] + high[d] + n + (n - 1).max(0) * interior[d];
        if size < 0 {
            return Err(format!("padding makes dimension {d} of {} negative", x.shape));
        }
        dims.push(size);
    }
    let shape = Shape::new(x.elem(), dims);
    check_result(inst, &shape)?;
    let mut out = Literal::new(shape.clone(), value.data.gather(std::iter::repeat_n(0, shape.num_elements())));
    let out_strides = shape.strides();
    let mut result = Ok(());
    let mut k = 0;
    for_each_index(&x.shape.dims, |o| {
        let mut dst = 0usize;
        let mut inside = true;
        for d in 0..rank {
            let r = low[d] + o[d] * (interior[d] + 1);
            if r < 0 || r >= shape.dims[d] {
                inside = false;
                break;
            }
            dst += r as usize * out_strides[d];
        }
        if inside && result.is_ok() {
            result = set_elem(&mut out.data, dst, &x.data, k);
        }
        k += 1;
    });
    result?;
    Ok(Value::Array(out))
}

pub(super) fn reverse(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Reverse { dims } = &inst.op else { return Err("expected a reverse".into()) };
    expect_arity(inst, args, 1)?;
    let x = expect_array(inst, args, 0)?;
    let rank = x.shape.rank();
    let mut flip = vec![false; rank];
    for &d in dims {
        if d < 0 || d as usize >= rank {
            return Err(format!("reverse dimension {d} out of range for {}", x.shape));
        }
        flip[d as usize] = true;
    }
    check_result(inst, &x.shape)?;
    let strides = x.shape.strides();
    let mut src = Vec::with_capacity(x.num_elements());
    for_each_index(&x.shape.dims, |r| {
        src.push(
            (0..rank)
                .map(|d| if flip[d] { (x.shape.dims[d] - 1 - r[d]) as usize } else { r[d] as usize } * strides[d])
                .sum(),
        );
    });
    Ok(new_array(Shape::new(x.elem(), x.shape.dims.clone()), x.data.gather(src)))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::ir::{ElementType::*, Op, Shape, Type, Value};

    fn s32s(dims: &[i64], v: &[i64]) -> crate::ir::Literal {
        ints(S32, dims, v)
    }
    fn iota6() -> Value {
        s32s(&[2, 3], &[0, 1, 2, 3, 4, 5]).into()
    }

    #[test]
    fn constant_and_iota() {
        let c = s32s(&[2], &[7, 8]);
        assert_eq!(run_op_array(Op::Constant(c.clone()), arr(S32, &[2]), &[]), c);
        let out = run_op_array(Op::Iota { dim: 1 }, arr(F32, &[2, 3]), &[]);
        assert_eq!(out.to_f64_vec(), vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
        let out = run_op_array(Op::Iota { dim: 0 }, arr(U8, &[3, 1]), &[]);
        assert_eq!(out, uints(U8, &[3, 1], &[0, 1, 2]));
        assert!(run_op(Op::Iota { dim: 2 }, arr(S32, &[2, 3]), &[]).is_err());
    }

    #[test]
    fn broadcast_in_dim_maps_and_expands() {
        // [3] -> [2,3] along dim 1; [2,1] -> [2,3] expanding the size-1 dim.
        let v: Value = s32s(&[3], &[1, 2, 3]).into();
        let out = run_op_array(Op::BroadcastInDim { dims: vec![1] }, arr(S32, &[2, 3]), std::slice::from_ref(&v));
        assert_eq!(out, s32s(&[2, 3], &[1, 2, 3, 1, 2, 3]));
        let col: Value = s32s(&[2, 1], &[5, 6]).into();
        let out = run_op_array(Op::BroadcastInDim { dims: vec![0, 1] }, arr(S32, &[2, 3]), &[col]);
        assert_eq!(out, s32s(&[2, 3], &[5, 5, 5, 6, 6, 6]));
        let out = run_op_array(Op::BroadcastInDim { dims: vec![] }, arr(S32, &[2]), &[s32s(&[], &[4]).into()]);
        assert_eq!(out, s32s(&[2], &[4, 4]));
        assert!(run_op(Op::BroadcastInDim { dims: vec![0] }, arr(S32, &[2, 3]), &[v]).is_err());
    }

    #[test]
    fn reshape_copy_transpose() {
        let out = run_op_array(Op::Reshape, arr(S32, &[3, 2]), &[iota6()]);
        assert_eq!(out, s32s(&[3, 2], &[0, 1, 2, 3, 4, 5]));
        assert!(run_op(Op::Reshape, arr(S32, &[4]), &[iota6()]).is_err());
        assert_eq!(run_op_array(Op::Copy, arr(S32, &[2, 3]), &[iota6()]), s32s(&[2, 3], &[0, 1, 2, 3, 4, 5]));
        let out = run_op_array(Op::Transpose { perm: vec![1, 0] }, arr(S32, &[3, 2]), &[iota6()]);
        assert_eq!(out, s32s(&[3, 2], &[0, 3, 1, 4, 2, 5]));
        // [2,3,2] with perm [2,0,1]: result[k,i,j] = x[i,j,k].
        let x: Value = s32s(&[2, 3, 2], &(0..12).collect::<Vec<_>>()).into();
        let out = run_op_array(Op::Transpose { perm: vec![2, 0, 1] }, arr(S32, &[2, 2, 3]), std::slice::from_ref(&x));
        assert_eq!(out, s32s(&[2, 2, 3], &[0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11]));
        assert!(run_op(Op::Transpose { perm: vec![0, 0, 1] }, arr(S32, &[2, 2, 3]), &[x]).is_err());
    }

    #[test]
    fn bitcast_follows_layouts() {
        // Default layouts: a reshape.
        assert_eq!(run_op_array(Op::Bitcast, arr(S32, &[3, 2]), &[iota6()]), s32s(&[3, 2], &[0, 1, 2, 3, 4, 5]));
        // Operand [2,3]{1,0} (row-major) bitcast to [3,2]{0,1} (column-major): physically
        // 0..5 in memory; the result's element [i,j] sits at physical i + 3j, so this is
        // the transpose of the [2,3] matrix.
        let mut m = TestModule::new();
        let module = {
            let mut res = Shape::new(S32, vec![3, 2]);
            res.layout = Some(vec![0, 1]);
            m.module.name = "bitcast".into();
            m.finish_with_entry(&[arr(S32, &[2, 3])], |b, p| b.op(Op::Bitcast, p, Type::Array(res)))
        };
        let out = crate::interp::run(&module, &[iota6()]).unwrap();
        assert_eq!(out, Value::Array(s32s(&[3, 2], &[0, 3, 1, 4, 2, 5])));
        // Column-major operand [2,3]{0,1} to a row-major [6]: physical order x[0,0], x[1,0], ...
        let module = TestModule::new().finish_with_entry(&[arr(S32, &[2, 3])], |b, p| {
            let mut s = Shape::new(S32, vec![2, 3]);
            s.layout = Some(vec![0, 1]);
            let c = b.op(Op::Copy, p, Type::Array(s));
            b.op(Op::Bitcast, &[c], arr(S32, &[6]))
        });
        let out = crate::interp::run(&module, &[iota6()]).unwrap();
        assert_eq!(out, Value::Array(s32s(&[6], &[0, 3, 1, 4, 2, 5])));
        // Same size, other element type: the bits are reinterpreted.
        let out = run_op_array(Op::Bitcast, arr(F32, &[1]), &[uints(U32, &[1], &[0x3f80_0000]).into()]);
        assert_eq!(out.to_f64_vec(), vec![1.0]);
    }

    #[test]
    fn slices() {
        let x: Value = s32s(&[2, 5], &(0..10).collect::<Vec<_>>()).into();
        let op = Op::Slice { start: vec![0, 1], limit: vec![2, 5], stride: vec![1, 2] };
        assert_eq!(run_op_array(op, arr(S32, &[2, 2]), std::slice::from_ref(&x)), s32s(&[2, 2], &[1, 3, 6, 8]));
        let op = Op::Slice { start: vec![1, 0], limit: vec![2, 5], stride: vec![1, 3] };
        assert_eq!(run_op_array(op, arr(S32, &[1, 2]), std::slice::from_ref(&x)), s32s(&[1, 2], &[5, 8]));
        let bad = Op::Slice { start: vec![0, 0], limit: vec![3, 5], stride: vec![1, 1] };
        assert!(run_op(bad, arr(S32, &[3, 5]), std::slice::from_ref(&x)).is_err());

        // Dynamic slice: starts clamped into range (start 1 on a dim of 2 with size 2 -> 0;
        // start -3 -> 0; start 4 with size 2 on 5 -> 3).
        let i = |v: i64| -> Value { s32s(&[], &[v]).into() };
        let op = Op::DynamicSlice { sizes: vec![2, 2] };
        let out = run_op_array(op.clone(), arr(S32, &[2, 2]), &[x.clone(), i(1), i(4)]);
        assert_eq!(out, s32s(&[2, 2], &[3, 4, 8, 9]));
        let out = run_op_array(op.clone(), arr(S32, &[2, 2]), &[x.clone(), i(0), i(-3)]);
        assert_eq!(out, s32s(&[2, 2], &[0, 1, 5, 6]));
        assert!(run_op(op, arr(S32, &[2, 2]), &[x.clone(), i(0)]).is_err());

        let upd: Value = s32s(&[1, 2], &[-1, -2]).into();
        let out = run_op_array(Op::DynamicUpdateSlice, arr(S32, &[2, 5]), &[x.clone(), upd.clone(), i(5), i(4)]);
        assert_eq!(out, s32s(&[2, 5], &[0, 1, 2, 3, 4, 5, 6, 7, -1, -2]));
        let out = run_op_array(Op::DynamicUpdateSlice, arr(S32, &[2, 5]), &[x.clone(), upd, i(0), i(1)]);
        assert_eq!(out, s32s(&[2, 5], &[0, -1, -2, 3, 4, 5, 6, 7, 8, 9]));
        let bad: Value = f32s(&[1, 2], &[0.0, 0.0]).into();
        assert!(run_op(Op::DynamicUpdateSlice, arr(S32, &[2, 5]), &[x, bad, i(0), i(0)]).is_err());
    }

    #[test]
    fn concatenate_along_each_dim() {
        let a: Value = s32s(&[2, 1], &[1, 2]).into();
        let b: Value = s32s(&[2, 2], &[3, 4, 5, 6]).into();
        let e: Value = s32s(&[2, 0], &[]).into();
        let out = run_op_array(Op::Concatenate { dim: 1 }, arr(S32, &[2, 3]), &[a.clone(), e, b.clone()]);
        assert_eq!(out, s32s(&[2, 3], &[1, 3, 4, 2, 5, 6]));
        let out = run_op_array(Op::Concatenate { dim: 0 }, arr(S32, &[4, 2]), &[b.clone(), b.clone()]);
        assert_eq!(out, s32s(&[4, 2], &[3, 4, 5, 6, 3, 4, 5, 6]));
        assert!(run_op(Op::Concatenate { dim: 0 }, arr(S32, &[4, 2]), &[a, b]).is_err());
    }

    #[test]
    fn pad_edges_interior_and_negative() {
        let x: Value = s32s(&[3], &[1, 2, 3]).into();
        let zero: Value = s32s(&[], &[0]).into();
        let op = Op::Pad { low: vec![1], high: vec![2], interior: vec![1] };
        let out = run_op_array(op, arr(S32, &[8]), &[x.clone(), zero.clone()]);
        assert_eq!(out, s32s(&[8], &[0, 1, 0, 2, 0, 3, 0, 0]));
        // Negative low cuts elements off the front (after interior padding).
        let op = Op::Pad { low: vec![-2], high: vec![-1], interior: vec![1] };
        let out = run_op_array(op, arr(S32, &[2]), &[x.clone(), zero.clone()]);
        assert_eq!(out, s32s(&[2], &[2, 0]));
        let m: Value = s32s(&[2, 2], &[1, 2, 3, 4]).into();
        let nine: Value = s32s(&[], &[9]).into();
        let op = Op::Pad { low: vec![0, 1], high: vec![1, 0], interior: vec![0, 0] };
        let out = run_op_array(op, arr(S32, &[3, 3]), &[m, nine]);
        assert_eq!(out, s32s(&[3, 3], &[9, 1, 2, 9, 3, 4, 9, 9, 9]));
        let bad = Op::Pad { low: vec![-5], high: vec![0], interior: vec![0] };
        assert!(run_op(bad, arr(S32, &[0]), &[x, zero]).is_err());
    }

    #[test]
    fn reverse_dims() {
        let out = run_op_array(Op::Reverse { dims: vec![1] }, arr(S32, &[2, 3]), &[iota6()]);
        assert_eq!(out, s32s(&[2, 3], &[2, 1, 0, 5, 4, 3]));
        let out = run_op_array(Op::Reverse { dims: vec![0, 1] }, arr(S32, &[2, 3]), &[iota6()]);
        assert_eq!(out, s32s(&[2, 3], &[5, 4, 3, 2, 1, 0]));
        assert!(run_op(Op::Reverse { dims: vec![2] }, arr(S32, &[2, 3]), &[iota6()]).is_err());
    }
}
