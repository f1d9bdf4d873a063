//! CHLO ops that decompose into data movement and library ops rather than arithmetic:
//! `top_k` (a stable sort of values and indices, then a slice) and `ragged_dot` (one
//! masked `dot` per group, as the legalization unrolls it).

use super::builder::ChloBuilder;
use super::{ChloAttrs, Ctx};
use crate::ir::{CmpDir, CmpKind, CustomCallAttrs, DotDims, ElementType, InstId, Literal, Op, Shape, Type};

/// `top_k(x, k)`: sort each last-dimension row (with an s32 iota of positions) in
/// descending order (ascending when `largest = false`), stable, with a total order on
/// floats; the first `min(k, n)` values and indices.
pub(crate) fn top_k(
    b: &mut ChloBuilder,
    ctx: &Ctx,
    operands: &[InstId],
    attrs: &ChloAttrs,
) -> Result<Vec<InstId>, String> {
    ctx.arity(operands, 1)?;
    let x = operands[0];
    let shape = ctx.shapes[0].clone();
    if shape.rank() == 0 {
        return Err(ctx.err("needs an operand of rank >= 1"));
    }
    let k = attrs.k.ok_or_else(|| ctx.err("needs the attribute k"))?;
    if k < 0 {
        return Err(ctx.err(&format!("k must be >= 0, got {k}")));
    }
    let last = shape.rank() - 1;
    let kk = k.min(shape.dims[last]);
    let mut out_dims = shape.dims.to_vec();
    out_dims[last] = kk;
    ctx.result(0, &Shape::new(shape.elem, out_dims.clone()))?;
    ctx.result(1, &Shape::new(ElementType::S32, out_dims.clone()))?;

    if attrs.largest.unwrap_or(true) {
        // The largest k in total order, ties to the lower index: exactly XLA's `TopK`
        // library call, which XLA lowers chlo.top_k to (one kernel, not a full sort).
        let call = CustomCallAttrs {
            target: "TopK".into(),
            has_side_effect: false,
            backend_config: String::new(),
            attrs: vec![],
        };
        let values_ty = Type::Array(Shape::new(shape.elem, out_dims.clone()));
        let indices_ty = Type::Array(Shape::new(ElementType::S32, out_dims));
        let ty = Type::Tuple(vec![values_ty.clone(), indices_ty.clone()]);
        let topk = b.push("topk", Op::CustomCall(call), vec![x], ty);
        let values = b.get_tuple_element(topk, 0, values_ty);
        let indices = b.get_tuple_element(topk, 1, indices_ty);
        return Ok(vec![values, indices]);
    }
    let iota_shape = shape.with_elem(ElementType::S32);
    let iota = b.iota(iota_shape.clone(), last as i64);
    let dir = if attrs.largest.unwrap_or(true) { CmpDir::Gt } else { CmpDir::Lt };
    let kind = shape.elem.is_float().then_some(CmpKind::TotalOrder);
    let comparator = b.sort_comparator(&[shape.elem, ElementType::S32], dir, kind);
    let sort_ty = Type::Tuple(vec![Type::Array(shape.clone()), Type::Array(iota_shape.clone())]);
    let stable = attrs.is_stable.unwrap_or(true);
    let sorted = b.push("sort", Op::Sort { dim: last as i64, stable, comparator }, vec![x, iota], sort_ty);
    let values = b.get_tuple_element(sorted, 0, Type::Array(shape.clone()));
    let indices = b.get_tuple_element(sorted, 1, Type::Array(iota_shape));
    let start = vec![0; shape.rank()];
    let values = b.slice(values, start.clone(), out_dims.clone());
    let indices = b.slice(indices, start, out_dims);
    Ok(vec![values, indices])
}

fn check_dims(ctx: &Ctx, what: &str, dims: &[i64], rank: usize) -> Result<(), String> {
    if dims.iter().any(|&d| d < 0 || d as usize >= rank) {
        return Err(ctx.err(&format!("{what} {dims:?} out of range for rank {rank}")));
    }
    Ok(())
}

/// `ragged_dot(lhs, rhs, group_sizes)`. Mode 1 (ragged lhs non-contracting dimension m,
/// rhs has a group dimension): sum over groups g of `dot(lhs masked to rows of g, rhs[g])`.
/// Mode 2 (ragged contracting dimension): one `dot` per group with lhs masked to the
/// group's columns, stacked on a new leading dimension. Mode 3 (ragged batch
/// dimension): a plain batched `dot`.
pub(crate) fn ragged_dot(
    b: &mut ChloBuilder,
    ctx: &Ctx,
    operands: &[InstId],
    attrs: &ChloAttrs,
) -> Result<Vec<InstId>, String> {
    ctx.arity(operands, 3)?;
    let dn = attrs.ragged_dot.as_ref().ok_or_else(|| ctx.err("needs ragged_dot_dimension_numbers"))?;
    let (lhs, rhs, gs) = (operands[0], operands[1], operands[2]);
    let (ls, rs, gss) = (ctx.shapes[0].clone(), ctx.shapes[1].clone(), ctx.shapes[2].clone());
    let result = ctx.results.first().cloned().ok_or_else(|| ctx.err("needs a declared result type"))?;
    if !gss.elem.is_int() || gss.rank() == 0 {
        return Err(ctx.err("group_sizes must be an integer array of rank >= 1"));
    }
    check_dims(
        ctx,
        "lhs dimensions",
        &[&dn.lhs_batching_dimensions[..], &dn.lhs_contracting_dimensions, &dn.lhs_ragged_dimensions].concat(),
        ls.rank(),
    )?;
    check_dims(
        ctx,
        "rhs dimensions",
        &[&dn.rhs_batching_dimensions[..], &dn.rhs_contracting_dimensions, &dn.rhs_group_dimensions].concat(),
        rs.rank(),
    )?;
    if dn.lhs_ragged_dimensions.len() != 1 {
        return Err(ctx.err("needs exactly one lhs ragged dimension"));
    }
    let ragged = dn.lhs_ragged_dimensions[0] as usize;
    let dot_dims = |rhs_adjust: &dyn Fn(i64) -> i64| DotDims {
        lhs_batch: dn.lhs_batching_dimensions.clone(),
        rhs_batch: dn.rhs_batching_dimensions.iter().map(|&d| rhs_adjust(d)).collect(),
        lhs_contracting: dn.lhs_contracting_dimensions.clone(),
        rhs_contracting: dn.rhs_contracting_dimensions.iter().map(|&d| rhs_adjust(d)).collect(),
    };

    if ls.rank() >= rs.rank() && ls.rank() >= result.rank() {
        // Mode 3.
        let ty = Type::Array(result);
        return Ok(vec![b.push("dot", Op::Dot(dot_dims(&|d| d)), vec![lhs, rhs], ty)]);
    }

    // Group sizes [batch..., g]: one s64 size per batch element and group.
    let g_rank = gss.rank();
    let g = gss.dims[g_rank - 1];
    let batch_shape: Vec<i64> = gss.dims[..g_rank - 1].to_vec();
    if batch_shape.len() > ls.rank() {
        return Err(ctx.err("group_sizes has more batch dimensions than lhs"));
    }
    let batch_map: Vec<i64> = (0..batch_shape.len() as i64).collect();
    let s64_lhs = ls.with_elem(ElementType::S64);
    let positions = b.iota(s64_lhs.clone(), ragged as i64);
    let zero = b.splat(&ls, crate::ir::Scalar::F(0.0));
    let mut start = b.push(
        "constant",
        Op::Constant(Literal::zeros(Shape::new(ElementType::S64, batch_shape.clone()))),
        vec![],
        Type::Array(Shape::new(ElementType::S64, batch_shape.clone())),
    );
    // lhs masked to the rows/columns of group i, for each i in turn.
    let mut masked_groups = Vec::new();
    for i in 0..g {
        let mut lo = vec![0; g_rank];
        lo[g_rank - 1] = i;
        let mut hi = gss.dims.to_vec();
        hi[g_rank - 1] = i + 1;
        let size = b.slice(gs, lo, hi);
        let mut size = b.reshape(size, batch_shape.clone());
        if gss.elem != ElementType::S64 {
            size = b.convert(size, ElementType::S64);
        }
        let limit = b.add(start, size);
        let start_b = b.broadcast_in_dim(start, batch_map.clone(), s64_lhs.clone());
        let limit_b = b.broadcast_in_dim(limit, batch_map.clone(), s64_lhs.clone());
        let ge = b.ge(positions, start_b);
        let lt = b.lt(positions, limit_b);
        let mask = b.and(ge, lt);
        masked_groups.push(b.select(mask, lhs, zero));
        start = limit;
    }

    if ls.rank() < rs.rank() {
        // Mode 1.
        if dn.rhs_group_dimensions.len() != 1 {
            return Err(ctx.err("needs exactly one rhs group dimension"));
        }
        let gd = dn.rhs_group_dimensions[0];
        if rs.dims[gd as usize] != g {
            return Err(ctx.err("rhs group dimension and group_sizes disagree on the number of groups"));
        }
        let adjust = |d: i64| if d > gd { d - 1 } else { d };
        let rhs_dims: Vec<i64> = rs.dims.iter().enumerate().filter(|&(d, _)| d as i64 != gd).map(|(_, &s)| s).collect();
        let mut out: Option<InstId> = None;
        for (i, masked) in masked_groups.into_iter().enumerate() {
            let mut lo = vec![0; rs.rank()];
            lo[gd as usize] = i as i64;
            let mut hi = rs.dims.to_vec();
            hi[gd as usize] = i as i64 + 1;
            let slice = b.slice(rhs, lo, hi);
            let rhs_i = b.reshape(slice, rhs_dims.clone());
            let dot = b.push("dot", Op::Dot(dot_dims(&adjust)), vec![masked, rhs_i], Type::Array(result.clone()));
            out = Some(match out {
                None => dot,
                Some(acc) => b.add(acc, dot),
            });
        }
        return out.ok_or_else(|| ctx.err("needs at least one group")).map(|o| vec![o]);
    }

    // Mode 2.
    let per_group: Vec<i64> = result.dims[1..].to_vec();
    let mut stacked_dims = vec![1];
    stacked_dims.extend_from_slice(&per_group);
    let mut parts = Vec::new();
    for masked in masked_groups {
        let ty = Type::Array(Shape::new(result.elem, per_group.clone()));
        let dot = b.push("dot", Op::Dot(dot_dims(&|d| d)), vec![masked, rhs], ty);
        parts.push(b.reshape(dot, stacked_dims.clone()));
    }
    if parts.is_empty() {
        return Err(ctx.err("needs at least one group"));
    }
    Ok(vec![b.push("concatenate", Op::Concatenate { dim: 0 }, parts, Type::Array(result))])
}

/// `scan(inputs..., inits...)` along `dimension`: a `while` loop over the positions
/// (backwards when `is_reverse`), whose state is (position, inputs, carries, outputs).
/// Each step slices every input at the position, calls the body on (slices, carries),
/// writes the body's output slices into the outputs and keeps its new carries.
pub(crate) fn scan(
    b: &mut ChloBuilder,
    ctx: &Ctx,
    operands: &[InstId],
    attrs: &ChloAttrs,
) -> Result<Vec<InstId>, String> {
    let body = attrs.body.ok_or_else(|| ctx.err("needs a body region"))?;
    let m = attrs.num_inits.ok_or_else(|| ctx.err("needs to know which operands are inits"))?;
    let dim = attrs.dimension.ok_or_else(|| ctx.err("needs the attribute dimension"))?;
    let reverse = attrs.is_reverse.unwrap_or(false);
    if m > operands.len() || m > ctx.results.len() {
        return Err(ctx.err("more inits than operands or results"));
    }
    let n = operands.len() - m;
    let k = ctx.results.len() - m;
    let (inputs, inits) = operands.split_at(n);
    let outs: Vec<Shape> = ctx.results[..k].to_vec();
    // All inputs and outputs share the scanned dimension's length.
    let scanned: Vec<&Shape> = ctx.shapes[..n].iter().chain(&outs).collect();
    let len = match scanned.first() {
        Some(s) if dim >= 0 && (dim as usize) < s.rank() => s.dims[dim as usize],
        Some(_) => return Err(ctx.err(&format!("dimension {dim} out of range"))),
        None => return Err(ctx.err("needs at least one input or output")),
    };
    if scanned.iter().any(|s| s.rank() <= dim as usize || s.dims[dim as usize] != len) {
        return Err(ctx.err("inputs and outputs disagree on the scanned dimension"));
    }
    for (i, (c, r)) in ctx.shapes[n..].iter().zip(&ctx.results[k..]).enumerate() {
        if !c.same_shape(r) {
            return Err(ctx.err(&format!("carry {i} is {c} but its result is {r}")));
        }
    }
    let body_params = b.module.comp(body).param_types();
    if body_params.len() != n + m {
        return Err(ctx.err(&format!("the body takes {} values, expected {}", body_params.len(), n + m)));
    }
    let drop_dim = |s: &Shape| -> Shape {
        let mut d = s.dims.clone();
        d.remove(dim as usize);
        Shape::new(s.elem, d)
    };

    // Loop state: position (s32), inputs, carries, outputs.
    let pos_shape = Shape::scalar(ElementType::S32);
    let mut state_shapes = vec![pos_shape.clone()];
    state_shapes.extend(ctx.shapes.iter().cloned());
    state_shapes.extend(outs.iter().cloned());
    let state_types: Vec<Type> = state_shapes.iter().cloned().map(Type::Array).collect();
    let loc = b.loc.clone();

    // cond(pos, ...) = pos < len
    let cond_name = b.module.fresh_name("scan_cond");
    let cond = b.module.add_computation(crate::ir::Computation::new(cond_name));
    let mut cb = ChloBuilder::new(b.module, cond, loc.clone());
    let params = add_params(&mut cb, &state_types);
    let limit = cb.int_like(params[0], len);
    let root = cb.lt(params[0], limit);
    cb.module.comp_mut(cond).root = root;

    // body(pos, inputs, carries, outputs)
    let body_name = b.module.fresh_name("scan_body");
    let loop_body = b.module.add_computation(crate::ir::Computation::new(body_name));
    let mut lb = ChloBuilder::new(b.module, loop_body, loc.clone());
    let p = add_params(&mut lb, &state_types);
    let pos = p[0];
    let at = if reverse {
        let last = lb.int_like(pos, len - 1);
        lb.sub(last, pos)
    } else {
        pos
    };
    let zero = lb.int_like(pos, 0);
    let mut call_args = Vec::new();
    for (i, s) in ctx.shapes[..n].iter().enumerate() {
        let mut sizes = s.dims.to_vec();
        sizes[dim as usize] = 1;
        let starts: Vec<InstId> = (0..s.rank()).map(|d| if d == dim as usize { at } else { zero }).collect();
        let mut ops = vec![p[1 + i]];
        ops.extend(starts);
        let ty = Type::Array(Shape::new(s.elem, sizes.clone()));
        let slice = lb.push("dynamic-slice", Op::DynamicSlice { sizes }, ops, ty);
        call_args.push(lb.reshape(slice, drop_dim(s).dims.to_vec()));
    }
    call_args.extend_from_slice(&p[1 + n..1 + n + m]);
    let body_root = lb.module.comp(body).root_inst().ty.clone();
    let called = lb.push("call", Op::Call { comp: body }, call_args, body_root.clone());
    let body_results: Vec<InstId> = match &body_root {
        Type::Tuple(ts) if ts.len() == k + m => {
            let ts = ts.clone();
            ts.into_iter().enumerate().map(|(i, t)| lb.get_tuple_element(called, i as u32, t)).collect()
        }
        t if k + m == 1 && t.as_array().is_some() => vec![called],
        _ => return Err(ctx.err(&format!("the body must return {} values", k + m))),
    };
    let one = lb.int_like(pos, 1);
    let mut next = vec![lb.add(pos, one)];
    next.extend_from_slice(&p[1..1 + n]);
    next.extend_from_slice(&body_results[k..]);
    for (j, out) in outs.iter().enumerate() {
        let slice = body_results[j];
        if !lb.shape(slice)?.same_shape(&drop_dim(out)) {
            return Err(ctx.err(&format!("body output {j} does not match result {out}")));
        }
        let mut dims = out.dims.to_vec();
        dims[dim as usize] = 1;
        let update = lb.reshape(slice, dims);
        let acc = p[1 + n + m + j];
        let mut ops = vec![acc, update];
        ops.extend((0..out.rank()).map(|d| if d == dim as usize { at } else { zero }));
        next.push(lb.push("dynamic-update-slice", Op::DynamicUpdateSlice, ops, Type::Array(out.clone())));
    }
    for (i, (&v, s)) in body_results[k..].iter().zip(&ctx.shapes[n..]).enumerate() {
        if !lb.shape(v)?.same_shape(s) {
            return Err(ctx.err(&format!("body carry {i} does not match its init {s}")));
        }
    }
    let tuple_ty = Type::Tuple(state_types.clone());
    let root = lb.push("tuple", Op::Tuple, next, tuple_ty.clone());
    lb.module.comp_mut(loop_body).root = root;

    // The loop itself.
    let mut init = vec![b.splat(&pos_shape, crate::ir::Scalar::S(0))];
    init.extend_from_slice(inputs);
    init.extend_from_slice(inits);
    for out in &outs {
        init.push(b.splat(out, crate::ir::Scalar::S(0)));
    }
    let w = b.push("while", Op::While { cond, body: loop_body }, init, tuple_ty);
    let mut results = Vec::new();
    for (j, out) in outs.iter().enumerate() {
        results.push(b.get_tuple_element(w, (1 + n + m + j) as u32, Type::Array(out.clone())));
    }
    for (i, s) in ctx.shapes[n..].iter().enumerate() {
        results.push(b.get_tuple_element(w, (1 + n + i) as u32, Type::Array(s.clone())));
    }
    Ok(results)
}

/// Appends one parameter per type to the builder's computation.
fn add_params(b: &mut ChloBuilder, types: &[Type]) -> Vec<InstId> {
    types
        .iter()
        .map(|t| {
            let name = b.module.fresh_name("param");
            let loc = b.loc.clone();
            b.module.comp_mut(b.comp).push_param(name, t.clone(), loc)
        })
        .collect()
}
