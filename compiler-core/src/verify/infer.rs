//! Shape and type inference for every op, following the StableHLO spec's constraints.
//!
//! [`infer_type`] computes an op's result type from its operand types, its attributes
//! and, for ops with bodies, the signatures of the computations it calls. Passes that
//! build new instructions use it. Some ops carry information only in their result type
//! (convert, bitcast-convert, reshape, bitcast, broadcast, iota, rng, rng-bit-generator,
//! custom-call, parameter): for those `infer_type` refuses and [`check_type`] validates
//! a declared type instead. The verifier calls [`check_type`] for every instruction;
//! for inferable ops it compares the declared type with the inferred one, ignoring
//! layouts.
//!
//! Errors are one line, prefixed with the op's HLO name:
//! `dot: lhs contracting dim 1 has size 3 but rhs contracting dim 0 has size 4`.
//!
//! Deliberate leniencies, where XLA and JAX's output accept what the spec's text does
//! not:
//! - dot and convolution may declare any result element type (JAX's
//!   `preferred_element_type`, e.g. bf16 x bf16 -> f32), and their two operands may be
//!   floats of different widths (XLA's mixed precision);
//! - convolution and reduce-window attribute lists other than `window_dims` may be empty,
//!   meaning the default (stride 1, no padding, no dilation, no reversal);
//! - reduction init values may have either the input's or the body's element type.

use crate::ir::{
    BinaryOp, CmpKind, CompId, ConvAttrs, Data, DotDims, ElementType, GatherDims, Literal, Module, Op,
    ReduceWindowAttrs, RngAlgorithm, RngDistribution, ScatterDims, SelectAndScatterAttrs, Shape, Type, UnaryOp,
};

type R<T> = Result<T, String>;

/// The result type of `op` applied to operands of types `operands`, or why the
/// combination is invalid (one line, starting with the op's name).
///
/// Ops whose result type is not determined by their operands ([`needs_declared_type`])
/// return an error; use [`check_type`] for them.
pub fn infer_type(module: &Module, op: &Op, operands: &[&Type]) -> Result<Type, String> {
    infer(module, op, operands).map_err(|e| format!("{}: {e}", op.hlo_name()))
}

/// Checks that `declared` is a valid result type for `op` on `operands`: equal to the
/// inferred type (layouts ignored) for inferable ops, and consistent with the operands
/// and attributes for the others.
pub fn check_type(module: &Module, op: &Op, operands: &[&Type], declared: &Type) -> Result<(), String> {
    check(module, op, operands, declared).map_err(|e| format!("{}: {e}", op.hlo_name()))
}

/// Ops whose result type carries information the operands do not (the target element
/// type of a convert, the shape of a reshape or broadcast, ...): [`infer_type`] cannot
/// compute it, and a pass building one must choose the type itself.
pub fn needs_declared_type(op: &Op) -> bool {
    matches!(
        op,
        Op::Parameter(_)
            | Op::Iota { .. }
            | Op::Convert
            | Op::BitcastConvert
            | Op::BroadcastInDim { .. }
            | Op::Reshape
            | Op::Bitcast
            | Op::RngBitGenerator { .. }
            | Op::Rng { .. }
            | Op::CustomCall(_)
    )
}

// ---------------------------------------------------------------------------------------
// Small helpers shared by the rules.

/// An array type without layout.
fn plain(elem: ElementType, dims: impl AsRef<[i64]>) -> Type {
    Type::Array(Shape::new(elem, dims))
}

fn count(operands: &[&Type], n: usize) -> R<()> {
    if operands.len() != n {
        return Err(format!("takes {n} operand{}, got {}", if n == 1 { "" } else { "s" }, operands.len()));
    }
    Ok(())
}

fn array<'a>(t: &'a Type, what: &str) -> R<&'a Shape> {
    t.as_array().ok_or_else(|| format!("{what} must be an array, got {t}"))
}

fn scalar<'a>(t: &'a Type, what: &str) -> R<&'a Shape> {
    let s = array(t, what)?;
    if s.rank() != 0 {
        return Err(format!("{what} must be a scalar, got {s}"));
    }
    Ok(s)
}

/// Checks `0 <= d < rank` and returns `d` as an index.
fn dim_in(d: i64, rank: usize, what: &str) -> R<usize> {
    if d < 0 || d as usize >= rank {
        return Err(format!("{what} {d} is out of range for rank {rank}"));
    }
    Ok(d as usize)
}

fn all_in(dims: &[i64], rank: usize, what: &str) -> R<()> {
    dims.iter().try_for_each(|&d| dim_in(d, rank, what).map(|_| ()))
}

fn unique(dims: &[i64], what: &str) -> R<()> {
    for (i, d) in dims.iter().enumerate() {
        if dims[..i].contains(d) {
            return Err(format!("{what} {dims:?} repeat dim {d}"));
        }
    }
    Ok(())
}

fn sorted(dims: &[i64], what: &str) -> R<()> {
    if dims.windows(2).any(|w| w[0] > w[1]) {
        return Err(format!("{what} {dims:?} must be sorted"));
    }
    Ok(())
}

fn len_is(v_len: usize, n: usize, what: &str) -> R<()> {
    if v_len != n {
        return Err(format!("{what} has {v_len} entries but must have {n}"));
    }
    Ok(())
}

/// An optional per-dimension attribute: empty means all `default`.
fn or_default<T: Copy>(v: &[T], n: usize, default: T, what: &str) -> R<Vec<T>> {
    if v.is_empty() {
        return Ok(vec![default; n]);
    }
    len_is(v.len(), n, what)?;
    Ok(v.to_vec())
}

fn positive(v: &[i64], what: &str) -> R<()> {
    if let Some(x) = v.iter().find(|&&x| x <= 0) {
        return Err(format!("{what} {v:?} must be positive, has {x}"));
    }
    Ok(())
}

/// The spec's `is_promotable`: same kind, no narrower.
fn promotable(from: ElementType, to: ElementType) -> bool {
    from == to
        || (from.is_signed_int() && to.is_signed_int() && from.bit_width() <= to.bit_width())
        || (from.is_unsigned_int() && to.is_unsigned_int() && from.bit_width() <= to.bit_width())
        || (from.is_float() && to.is_float() && from.bit_width() <= to.bit_width())
}

fn same_arrays<'a>(ts: &[&'a Type], what: &str) -> R<Vec<&'a Shape>> {
    let shapes: Vec<&Shape> = ts.iter().enumerate().map(|(i, t)| array(t, &format!("{what} {i}"))).collect::<R<_>>()?;
    if let Some(first) = shapes.first() {
        for (i, s) in shapes.iter().enumerate().skip(1) {
            if !s.same_dims(first) {
                return Err(format!("{what} {i} has dims {:?} but {what} 0 has {:?}", s.dims, first.dims));
            }
        }
    }
    Ok(shapes)
}

/// The size of a window dimension per the spec: `floor((padded - window) / stride) + 1`,
/// or 0 when the window does not fit. Shared by every op with windows (convolution,
/// reduce-window, select-and-scatter) in the verifier, the interpreter and the kernel plan.
pub fn num_windows(
    input: i64,
    base_dilation: i64,
    pad: (i64, i64),
    window: i64,
    window_dilation: i64,
    stride: i64,
) -> R<i64> {
    // In i128: attribute values come from the text and may be huge.
    let (input, window) = (input as i128, window as i128);
    let dilated_input = if input == 0 { 0 } else { (input - 1) * base_dilation as i128 + 1 };
    let padded = pad.0 as i128 + dilated_input + pad.1 as i128;
    let dilated_window = if window == 0 { 0 } else { (window - 1) * window_dilation as i128 + 1 };
    if padded <= 0 || dilated_window > padded {
        Ok(0)
    } else {
        fit((padded - dilated_window) / stride as i128 + 1, "a window dimension")
    }
}

/// A size computed in i128, if it fits a dimension.
fn fit(v: i128, what: &str) -> R<i64> {
    i64::try_from(v).map_err(|_| format!("{what} would have size {v}, which overflows"))
}

/// The number of elements of a shape, without overflow.
fn elements(s: &Shape) -> i128 {
    s.dims.iter().fold(1i128, |acc, &d| acc.saturating_mul(d.max(0) as i128))
}

/// The signature of a called computation: parameter types and root type.
fn signature(module: &Module, id: CompId, what: &str) -> R<(String, Vec<Type>, Type)> {
    let comp = module.comps.get(id).ok_or_else(|| format!("{what} {id} does not exist"))?;
    if !comp.has_root() || comp.insts.get(comp.root).is_none() {
        return Err(format!("{what} {} has no root", comp.name));
    }
    Ok((comp.name.clone(), comp.param_types(), comp.root_inst().ty.clone()))
}

/// Splits a root type into `n` results (a tuple of `n`, or the value itself when `n == 1`).
fn results(root: &Type, n: usize) -> Option<Vec<Type>> {
    if n == 1 {
        return Some(vec![root.clone()]);
    }
    match root {
        Type::Tuple(ts) if ts.len() == n => Some(ts.clone()),
        _ => None,
    }
}

fn types_str(ts: &[Type]) -> String {
    let parts: Vec<String> = ts.iter().map(Type::to_string).collect();
    format!("({})", parts.join(", "))
}

fn same_types(a: &[Type], b: &[&Type]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_type(y))
}

/// Checks a reduction body (reduce, reduce-window, scatter, select-and-scatter's scatter):
/// 2N scalar parameters `(acc_0..acc_{N-1}, x_0..x_{N-1})` with `acc_i` and `x_i` of one
/// element type `E_i`, returning N scalars of `E_i`, where each input element type is
/// promotable to `E_i`. Returns the `E_i`.
fn reducer(module: &Module, body: CompId, inputs: &[ElementType]) -> R<Vec<ElementType>> {
    let n = inputs.len();
    let (name, params, root) = signature(module, body, "body")?;
    if params.len() != 2 * n {
        return Err(format!("body {name} takes {} parameters but must take {} (2 per input)", params.len(), 2 * n));
    }
    let mut elems = Vec::with_capacity(n);
    for i in 0..n {
        let acc = scalar(&params[i], &format!("body {name} parameter {i}"))?;
        let x = scalar(&params[n + i], &format!("body {name} parameter {}", n + i))?;
        if acc.elem != x.elem {
            return Err(format!(
                "body {name} parameters {i} and {} have types {} and {} but must match",
                n + i,
                acc,
                x
            ));
        }
        if !promotable(inputs[i], acc.elem) {
            return Err(format!(
                "input {i} has element type {} which body {name} cannot take as {}",
                inputs[i], acc.elem
            ));
        }
        elems.push(acc.elem);
    }
    let outs = results(&root, n).ok_or_else(|| format!("body {name} returns {root} but must return {n} scalars"))?;
    for (i, (out, &e)) in outs.iter().zip(&elems).enumerate() {
        let s = scalar(out, &format!("body {name} result {i}"))?;
        if s.elem != e {
            return Err(format!("body {name} result {i} is {s} but must be {e}[]"));
        }
    }
    Ok(elems)
}

// ---------------------------------------------------------------------------------------
// Inference.

fn infer(module: &Module, op: &Op, ops: &[&Type]) -> R<Type> {
    match op {
        Op::Constant(lit) => {
            count(ops, 0)?;
            literal_ok(lit)?;
            Ok(plain(lit.shape.elem, lit.shape.dims.clone()))
        }
        Op::Unary(u) => {
            count(ops, 1)?;
            unary(*u, array(ops[0], "operand")?)
        }
        Op::Binary(b) => {
            count(ops, 2)?;
            binary(*b, ops)
        }
        Op::Compare { kind, .. } => {
            count(ops, 2)?;
            compare(*kind, ops)
        }
        Op::Select => {
            count(ops, 3)?;
            select(ops)
        }
        Op::Clamp => {
            count(ops, 3)?;
            clamp(ops)
        }
        Op::ReducePrecision { exponent_bits, .. } => {
            count(ops, 1)?;
            let s = array(ops[0], "operand")?;
            if !s.elem.is_float() {
                return Err(format!("operand must be a float array, got {s}"));
            }
            if *exponent_bits < 1 {
                return Err("exponent_bits must be at least 1".to_string());
            }
            Ok(plain(s.elem, s.dims.clone()))
        }
        Op::Copy => {
            count(ops, 1)?;
            Ok(ops[0].clone())
        }
        Op::Transpose { perm } => {
            count(ops, 1)?;
            transpose(perm, array(ops[0], "operand")?)
        }
        Op::Slice { start, limit, stride } => {
            count(ops, 1)?;
            slice(start, limit, stride, array(ops[0], "operand")?)
        }
        Op::DynamicSlice { sizes } => dynamic_slice(sizes, ops),
        Op::DynamicUpdateSlice => dynamic_update_slice(ops),
        Op::Concatenate { dim } => concatenate(*dim, ops),
        Op::Pad { low, high, interior } => {
            count(ops, 2)?;
            pad(low, high, interior, ops)
        }
        Op::Reverse { dims } => {
            count(ops, 1)?;
            let s = array(ops[0], "operand")?;
            unique(dims, "dimensions")?;
            all_in(dims, s.rank(), "dimension")?;
            Ok(plain(s.elem, s.dims.clone()))
        }
        Op::Dot(d) => {
            count(ops, 2)?;
            dot(d, array(ops[0], "lhs")?, array(ops[1], "rhs")?)
        }
        Op::Convolution(c) => {
            count(ops, 2)?;
            convolution(c, array(ops[0], "lhs")?, array(ops[1], "rhs")?)
        }
        Op::Reduce { dims, body } => reduce(module, dims, *body, ops),
        Op::ReduceWindow(a) => reduce_window(module, a, ops),
        Op::SelectAndScatter(a) => {
            count(ops, 3)?;
            select_and_scatter(module, a, ops)
        }
        Op::Gather(g) => {
            count(ops, 2)?;
            gather(g, array(ops[0], "operand")?, array(ops[1], "start indices")?)
        }
        Op::Scatter(s) => scatter(module, s, ops),
        Op::Sort { dim, comparator, .. } => sort(module, *dim, *comparator, ops),
        Op::Map { dims, body } => map(module, dims, *body, ops),
        Op::While { cond, body } => while_loop(module, *cond, *body, ops),
        Op::Case { branches, branch_operands } => case(module, branches, branch_operands, ops),
        Op::Call { comp } | Op::Fusion { body: comp, .. } => {
            let (name, params, root) = signature(module, *comp, "callee")?;
            if !same_types(&params, ops) {
                let got: Vec<Type> = ops.iter().map(|t| (*t).clone()).collect();
                return Err(format!("{name} takes {} but is given {}", types_str(&params), types_str(&got)));
            }
            Ok(root)
        }
        Op::Tuple => Ok(Type::Tuple(ops.iter().map(|t| (*t).clone()).collect())),
        Op::GetTupleElement { index } => {
            count(ops, 1)?;
            let ts = ops[0].as_tuple().ok_or_else(|| format!("operand must be a tuple, got {}", ops[0]))?;
            ts.get(*index as usize)
                .cloned()
                .ok_or_else(|| format!("index {index} is out of range for a tuple of {} elements", ts.len()))
        }
        Op::OptimizationBarrier => Ok(Type::from_results(ops.iter().map(|t| (*t).clone()).collect())),
        Op::TriangularSolve(a) => {
            count(ops, 2)?;
            triangular_solve(a.left_side, array(ops[0], "a")?, array(ops[1], "b")?)
        }
        Op::Cholesky { .. } => {
            count(ops, 1)?;
            let a = array(ops[0], "operand")?;
            if !a.elem.is_float() {
                return Err(format!("operand must be a float array, got {a}"));
            }
            let r = a.rank();
            if r < 2 || a.dims[r - 1] != a.dims[r - 2] {
                return Err(format!("operand must be square matrices of rank >= 2, got {a}"));
            }
            Ok(plain(a.elem, a.dims.clone()))
        }
        Op::ReplicaId | Op::PartitionId => {
            count(ops, 0)?;
            Ok(plain(ElementType::U32, vec![]))
        }
        Op::AfterAll => {
            if let Some((i, t)) = ops.iter().enumerate().find(|(_, t)| ***t != Type::Token) {
                return Err(format!("operand {i} must be a token, got {t}"));
            }
            Ok(Type::Token)
        }
        Op::Parameter(_)
        | Op::Iota { .. }
        | Op::Convert
        | Op::BitcastConvert
        | Op::BroadcastInDim { .. }
        | Op::Reshape
        | Op::Bitcast
        | Op::RngBitGenerator { .. }
        | Op::Rng { .. }
        | Op::CustomCall(_) => {
            Err("the result type cannot be inferred from the operands; it must be declared".to_string())
        }
    }
}

/// A literal's data must hold one element per shape element, in the carrier of its type.
fn literal_ok(lit: &Literal) -> R<()> {
    let carrier_ok = matches!(
        (&lit.data, lit.shape.elem),
        (Data::Pred(_), e) if e.is_pred()
    ) || matches!((&lit.data, lit.shape.elem), (Data::S(_), e) if e.is_signed_int())
        || matches!((&lit.data, lit.shape.elem), (Data::U(_), e) if e.is_unsigned_int())
        || matches!((&lit.data, lit.shape.elem), (Data::F(_), e) if e.is_float());
    if !carrier_ok {
        return Err(format!("literal data is not stored as {} elements", lit.shape.elem));
    }
    if lit.data.len() as i128 != elements(&lit.shape) {
        return Err(format!(
            "literal has {} elements but its shape {} needs {}",
            lit.data.len(),
            lit.shape,
            elements(&lit.shape)
        ));
    }
    Ok(())
}

fn unary(u: UnaryOp, s: &Shape) -> R<Type> {
    use UnaryOp::*;
    let e = s.elem;
    let (ok, wants) = match u {
        // XLA accepts abs of unsigned integers (the identity); the spec lists signed only.
        Abs | Neg => (e.is_int() || e.is_float(), "an integer or float"),
        Sign => (e.is_signed_int() || e.is_float(), "a signed integer or float"),
        Not => (e.is_pred() || e.is_int(), "a pred or integer"),
        PopCnt | Clz => (e.is_int(), "an integer"),
        Exp | Expm1 | Log | Log1p | Logistic | Sqrt | Rsqrt | Cbrt | Tanh | Sin | Cos | Tan | Erf | Floor | Ceil
        | RoundAfz | RoundEven | IsFinite => (e.is_float(), "a float"),
    };
    if !ok {
        return Err(format!("operand must be {wants} array, got {s}"));
    }
    let elem = if u == IsFinite { ElementType::Pred } else { e };
    Ok(plain(elem, s.dims.clone()))
}

fn binary(b: BinaryOp, ops: &[&Type]) -> R<Type> {
    use BinaryOp::*;
    let l = array(ops[0], "lhs")?;
    let r = array(ops[1], "rhs")?;
    if !l.same_shape(r) {
        return Err(format!("operands must have the same type, got {l} and {r}"));
    }
    let e = l.elem;
    let (ok, wants) = match b {
        // On pred, add is `or`, multiply is `and`, maximum/minimum are `or`/`and`.
        Add | Mul | Max | Min => (true, "any"),
        Sub | Div | Rem | Pow => (e.is_int() || e.is_float(), "integer or float"),
        Atan2 => (e.is_float(), "float"),
        And | Or | Xor => (e.is_pred() || e.is_int(), "pred or integer"),
        ShiftLeft | ShiftRightArithmetic | ShiftRightLogical => (e.is_int(), "integer"),
    };
    if !ok {
        return Err(format!("operands must be {wants} arrays, got {l}"));
    }
    Ok(plain(e, l.dims.clone()))
}

fn compare(kind: Option<CmpKind>, ops: &[&Type]) -> R<Type> {
    let l = array(ops[0], "lhs")?;
    let r = array(ops[1], "rhs")?;
    if !l.same_shape(r) {
        return Err(format!("operands must have the same type, got {l} and {r}"));
    }
    if let Some(k) = kind {
        let e = l.elem;
        let ok = match k {
            CmpKind::Float | CmpKind::TotalOrder => e.is_float(),
            CmpKind::Signed => e.is_signed_int(),
            CmpKind::Unsigned => e.is_unsigned_int() || e.is_pred(),
        };
        if !ok {
            return Err(format!("comparison type {} does not apply to {e} operands", k.name()));
        }
    }
    Ok(plain(ElementType::Pred, l.dims.clone()))
}

fn select(ops: &[&Type]) -> R<Type> {
    let p = array(ops[0], "pred")?;
    let t = array(ops[1], "on_true")?;
    let f = array(ops[2], "on_false")?;
    if !p.elem.is_pred() {
        return Err(format!("the selector must be pred, got {p}"));
    }
    if !t.same_shape(f) {
        return Err(format!("on_true and on_false must have the same type, got {t} and {f}"));
    }
    if p.rank() != 0 && !p.same_dims(t) {
        return Err(format!("the selector {p} must be a scalar or have the dims of {t}"));
    }
    Ok(plain(t.elem, t.dims.clone()))
}

fn clamp(ops: &[&Type]) -> R<Type> {
    let lo = array(ops[0], "min")?;
    let x = array(ops[1], "operand")?;
    let hi = array(ops[2], "max")?;
    for (b, what) in [(lo, "min"), (hi, "max")] {
        if b.elem != x.elem {
            return Err(format!("{what} has element type {} but the operand has {}", b.elem, x.elem));
        }
        if b.rank() != 0 && !b.same_dims(x) {
            return Err(format!("{what} {b} must be a scalar or have the dims of {x}"));
        }
    }
    Ok(plain(x.elem, x.dims.clone()))
}

fn transpose(perm: &[i64], s: &Shape) -> R<Type> {
    len_is(perm.len(), s.rank(), "permutation")?;
    all_in(perm, s.rank(), "permutation entry")?;
    unique(perm, "permutation")?;
    Ok(plain(s.elem, perm.iter().map(|&p| s.dims[p as usize]).collect::<Vec<_>>()))
}

fn slice(start: &[i64], limit: &[i64], stride: &[i64], s: &Shape) -> R<Type> {
    let n = s.rank();
    len_is(start.len(), n, "start_indices")?;
    len_is(limit.len(), n, "limit_indices")?;
    len_is(stride.len(), n, "strides")?;
    positive(stride, "strides")?;
    let mut dims = Vec::with_capacity(n);
    for i in 0..n {
        if !(0 <= start[i] && start[i] <= limit[i] && limit[i] <= s.dims[i]) {
            return Err(format!("dim {i}: need 0 <= start {} <= limit {} <= size {}", start[i], limit[i], s.dims[i]));
        }
        dims.push(fit((limit[i] as i128 - start[i] as i128 + stride[i] as i128 - 1) / stride[i] as i128, "slice")?);
    }
    Ok(plain(s.elem, dims))
}

/// Start indices: one integer scalar per dimension, all of one type.
fn start_indices(ops: &[&Type], rank: usize) -> R<()> {
    len_is(ops.len(), rank, "start indices")?;
    let mut first: Option<ElementType> = None;
    for (i, t) in ops.iter().enumerate() {
        let s = scalar(t, &format!("start index {i}"))?;
        if !s.elem.is_int() {
            return Err(format!("start index {i} must be an integer, got {s}"));
        }
        match first {
            Some(e) if e != s.elem => {
                return Err(format!("start indices must share one type, got {e} and {}", s.elem));
            }
            _ => first = Some(s.elem),
        }
    }
    Ok(())
}

fn dynamic_slice(sizes: &[i64], ops: &[&Type]) -> R<Type> {
    let s = array(ops.first().ok_or("takes an operand and start indices")?, "operand")?;
    start_indices(&ops[1..], s.rank())?;
    len_is(sizes.len(), s.rank(), "slice_sizes")?;
    for (i, (&z, &d)) in sizes.iter().zip(&s.dims).enumerate() {
        if z < 0 || z > d {
            return Err(format!("slice size {z} of dim {i} must be in 0..={d}"));
        }
    }
    Ok(plain(s.elem, sizes))
}

fn dynamic_update_slice(ops: &[&Type]) -> R<Type> {
    if ops.len() < 2 {
        return Err(format!("takes an operand, an update and start indices, got {} operands", ops.len()));
    }
    let s = array(ops[0], "operand")?;
    let u = array(ops[1], "update")?;
    if u.elem != s.elem || u.rank() != s.rank() {
        return Err(format!("update {u} must have the element type and rank of the operand {s}"));
    }
    if let Some(i) = (0..s.rank()).find(|&i| u.dims[i] > s.dims[i]) {
        return Err(format!("update dim {i} has size {} larger than the operand's {}", u.dims[i], s.dims[i]));
    }
    start_indices(&ops[2..], s.rank())?;
    Ok(plain(s.elem, s.dims.clone()))
}

fn concatenate(dim: i64, ops: &[&Type]) -> R<Type> {
    if ops.is_empty() {
        return Err("takes at least one operand".to_string());
    }
    let first = array(ops[0], "operand 0")?;
    let d = dim_in(dim, first.rank(), "dimension")?;
    let mut dims = first.dims.clone();
    for (i, t) in ops.iter().enumerate().skip(1) {
        let s = array(t, &format!("operand {i}"))?;
        if s.elem != first.elem || s.rank() != first.rank() {
            return Err(format!("operand {i} is {s} but operand 0 is {first}"));
        }
        if let Some(j) = (0..s.rank()).find(|&j| j != d && s.dims[j] != first.dims[j]) {
            return Err(format!("operand {i} has size {} in dim {j} but operand 0 has {}", s.dims[j], first.dims[j]));
        }
        dims[d] = fit(dims[d] as i128 + s.dims[d] as i128, "the concatenated dimension")?;
    }
    Ok(plain(first.elem, dims))
}

fn pad(low: &[i64], high: &[i64], interior: &[i64], ops: &[&Type]) -> R<Type> {
    let s = array(ops[0], "operand")?;
    let v = scalar(ops[1], "padding value")?;
    if v.elem != s.elem {
        return Err(format!("padding value {v} must have the operand's element type {}", s.elem));
    }
    let n = s.rank();
    len_is(low.len(), n, "edge_padding_low")?;
    len_is(high.len(), n, "edge_padding_high")?;
    len_is(interior.len(), n, "interior_padding")?;
    let mut dims = Vec::with_capacity(n);
    for i in 0..n {
        if interior[i] < 0 {
            return Err(format!("interior padding {} of dim {i} is negative", interior[i]));
        }
        let (x, k) = (s.dims[i] as i128, interior[i] as i128);
        let d = fit(low[i] as i128 + x + (x - 1).max(0) * k + high[i] as i128, &format!("dim {i}"))?;
        if d < 0 {
            return Err(format!("dim {i} would have negative size {d}"));
        }
        dims.push(d);
    }
    Ok(plain(s.elem, dims))
}

/// Operand element types of dot and convolution: equal, or of one kind (floats, or
/// integers) and different widths, as XLA accepts (`s32 x s8`); the wider one is what
/// the contraction computes in before the result type.
fn contraction_elem(l: &Shape, r: &Shape) -> R<ElementType> {
    let same_kind = (l.elem.is_float() && r.elem.is_float()) || (l.elem.is_int() && r.elem.is_int());
    if l.elem == r.elem {
        Ok(l.elem)
    } else if same_kind {
        Ok(if l.elem.bit_width() >= r.elem.bit_width() { l.elem } else { r.elem })
    } else {
        Err(format!("lhs and rhs element types differ: {} and {}", l.elem, r.elem))
    }
}

fn dot(d: &DotDims, l: &Shape, r: &Shape) -> R<Type> {
    let elem = contraction_elem(l, r)?;
    len_is(d.rhs_batch.len(), d.lhs_batch.len(), "rhs batching dims")?;
    len_is(d.rhs_contracting.len(), d.lhs_contracting.len(), "rhs contracting dims")?;
    all_in(&d.lhs_batch, l.rank(), "lhs batching dim")?;
    all_in(&d.lhs_contracting, l.rank(), "lhs contracting dim")?;
    all_in(&d.rhs_batch, r.rank(), "rhs batching dim")?;
    all_in(&d.rhs_contracting, r.rank(), "rhs contracting dim")?;
    unique(&[d.lhs_batch.clone(), d.lhs_contracting.clone()].concat(), "lhs batching and contracting dims")?;
    unique(&[d.rhs_batch.clone(), d.rhs_contracting.clone()].concat(), "rhs batching and contracting dims")?;
    for (kind, ls, rs) in
        [("batching", &d.lhs_batch, &d.rhs_batch), ("contracting", &d.lhs_contracting, &d.rhs_contracting)]
    {
        for (&a, &b) in ls.iter().zip(rs.iter()) {
            let (x, y) = (l.dims[a as usize], r.dims[b as usize]);
            if x != y {
                return Err(format!("lhs {kind} dim {a} has size {x} but rhs {kind} dim {b} has size {y}"));
            }
        }
    }
    let mut dims: Vec<i64> = d.lhs_batch.iter().map(|&b| l.dims[b as usize]).collect();
    let free = |s: &Shape, batch: &[i64], contracting: &[i64]| -> Vec<i64> {
        (0..s.rank() as i64)
            .filter(|i| !batch.contains(i) && !contracting.contains(i))
            .map(|i| s.dims[i as usize])
            .collect()
    };
    dims.extend(free(l, &d.lhs_batch, &d.lhs_contracting));
    dims.extend(free(r, &d.rhs_batch, &d.rhs_contracting));
    Ok(plain(elem, dims))
}

fn convolution(c: &ConvAttrs, l: &Shape, r: &Shape) -> R<Type> {
    let elem = contraction_elem(l, r)?;
    let n = l.rank();
    if r.rank() != n {
        return Err(format!("lhs {l} and rhs {r} must have the same rank"));
    }
    if n < 2 {
        return Err(format!("operands must have rank >= 2, got {l}"));
    }
    let sp = n - 2;
    let d = &c.dims;
    len_is(d.input_spatial.len(), sp, "input spatial dims")?;
    len_is(d.kernel_spatial.len(), sp, "kernel spatial dims")?;
    len_is(d.output_spatial.len(), sp, "output spatial dims")?;
    let input_dims = [vec![d.input_batch], d.input_spatial.clone(), vec![d.input_feature]].concat();
    let kernel_dims = [d.kernel_spatial.clone(), vec![d.kernel_input_feature, d.kernel_output_feature]].concat();
    let output_dims = [vec![d.output_batch], d.output_spatial.clone(), vec![d.output_feature]].concat();
    for (v, what) in [(&input_dims, "input dims"), (&kernel_dims, "kernel dims"), (&output_dims, "output dims")] {
        all_in(v, n, what)?;
        unique(v, what)?;
    }
    let strides = or_default(&c.window_strides, sp, 1, "window_strides")?;
    let padding = or_default(&c.padding, sp, (0, 0), "padding")?;
    let lhs_dil = or_default(&c.lhs_dilation, sp, 1, "lhs_dilation")?;
    let rhs_dil = or_default(&c.rhs_dilation, sp, 1, "rhs_dilation")?;
    or_default(&c.window_reversal, sp, false, "window_reversal")?;
    positive(&strides, "window_strides")?;
    positive(&lhs_dil, "lhs_dilation")?;
    positive(&rhs_dil, "rhs_dilation")?;
    let (fg, bg) = (c.feature_group_count, c.batch_group_count);
    if fg <= 0 || bg <= 0 {
        return Err(format!("feature_group_count {fg} and batch_group_count {bg} must be positive"));
    }
    if fg > 1 && bg > 1 {
        return Err(format!("feature_group_count {fg} and batch_group_count {bg} cannot both exceed 1"));
    }
    let in_batch = l.dims[d.input_batch as usize];
    let in_feat = l.dims[d.input_feature as usize];
    let k_in = r.dims[d.kernel_input_feature as usize];
    let k_out = r.dims[d.kernel_output_feature as usize];
    if in_batch % bg != 0 {
        return Err(format!("input batch size {in_batch} is not a multiple of batch_group_count {bg}"));
    }
    if in_feat % fg != 0 {
        return Err(format!("input feature size {in_feat} is not a multiple of feature_group_count {fg}"));
    }
    if k_in as i128 * fg as i128 != in_feat as i128 {
        return Err(format!(
            "kernel input feature size {k_in} must be the input feature size {in_feat} / feature_group_count {fg}"
        ));
    }
    if k_out % bg != 0 || k_out % fg != 0 {
        return Err(format!(
            "kernel output feature size {k_out} must be a multiple of the group counts ({fg} feature, {bg} batch)"
        ));
    }
    let mut dims = vec![0i64; n];
    dims[d.output_batch as usize] = in_batch / bg;
    dims[d.output_feature as usize] = k_out;
    for i in 0..sp {
        let input = l.dims[d.input_spatial[i] as usize];
        let window = r.dims[d.kernel_spatial[i] as usize];
        dims[d.output_spatial[i] as usize] =
            num_windows(input, lhs_dil[i], padding[i], window, rhs_dil[i], strides[i])?;
    }
    Ok(plain(elem, dims))
}

/// Splits the operands of reduce / reduce-window (N inputs then N inits).
fn inputs_and_inits<'a>(ops: &[&'a Type]) -> R<(Vec<&'a Shape>, Vec<&'a Shape>)> {
    if ops.is_empty() || !ops.len().is_multiple_of(2) {
        return Err(format!("takes N inputs and N init values, got {} operands", ops.len()));
    }
    let n = ops.len() / 2;
    let inputs = same_arrays(&ops[..n], "input")?;
    let inits =
        ops[n..].iter().enumerate().map(|(i, t)| scalar(t, &format!("init value {i}"))).collect::<R<Vec<_>>>()?;
    Ok((inputs, inits))
}

/// Each init value has the input's element type or the body's.
fn check_inits(inputs: &[&Shape], inits: &[&Shape], elems: &[ElementType]) -> R<()> {
    for (i, ((x, init), &e)) in inputs.iter().zip(inits).zip(elems).enumerate() {
        if init.elem != x.elem && init.elem != e {
            return Err(format!("init value {i} is {init} but input {i} has element type {}", x.elem));
        }
    }
    Ok(())
}

fn reduce(module: &Module, dims: &[i64], body: CompId, ops: &[&Type]) -> R<Type> {
    let (inputs, inits) = inputs_and_inits(ops)?;
    let rank = inputs[0].rank();
    all_in(dims, rank, "dimension")?;
    unique(dims, "dimensions")?;
    let elems = reducer(module, body, &inputs.iter().map(|s| s.elem).collect::<Vec<_>>())?;
    check_inits(&inputs, &inits, &elems)?;
    let kept: Vec<i64> = (0..rank).filter(|&i| !dims.contains(&(i as i64))).map(|i| inputs[0].dims[i]).collect();
    Ok(Type::from_results(elems.iter().map(|&e| plain(e, kept.clone())).collect()))
}

fn reduce_window(module: &Module, a: &ReduceWindowAttrs, ops: &[&Type]) -> R<Type> {
    let (inputs, inits) = inputs_and_inits(ops)?;
    let rank = inputs[0].rank();
    len_is(a.window_dims.len(), rank, "window_dimensions")?;
    positive(&a.window_dims, "window_dimensions")?;
    let strides = or_default(&a.strides, rank, 1, "window_strides")?;
    let base = or_default(&a.base_dilations, rank, 1, "base_dilations")?;
    let wdil = or_default(&a.window_dilations, rank, 1, "window_dilations")?;
    let padding = or_default(&a.padding, rank, (0, 0), "padding")?;
    positive(&strides, "window_strides")?;
    positive(&base, "base_dilations")?;
    positive(&wdil, "window_dilations")?;
    let elems = reducer(module, a.body, &inputs.iter().map(|s| s.elem).collect::<Vec<_>>())?;
    check_inits(&inputs, &inits, &elems)?;
    let dims: Vec<i64> = (0..rank)
        .map(|i| num_windows(inputs[0].dims[i], base[i], padding[i], a.window_dims[i], wdil[i], strides[i]))
        .collect::<R<_>>()?;
    Ok(Type::from_results(elems.iter().map(|&e| plain(e, dims.clone())).collect()))
}

fn select_and_scatter(module: &Module, a: &SelectAndScatterAttrs, ops: &[&Type]) -> R<Type> {
    let operand = array(ops[0], "operand")?;
    let source = array(ops[1], "source")?;
    let init = scalar(ops[2], "init value")?;
    let rank = operand.rank();
    len_is(a.window_dims.len(), rank, "window_dimensions")?;
    positive(&a.window_dims, "window_dimensions")?;
    let strides = or_default(&a.strides, rank, 1, "window_strides")?;
    let padding = or_default(&a.padding, rank, (0, 0), "padding")?;
    positive(&strides, "window_strides")?;
    if source.elem != operand.elem {
        return Err(format!("source {source} must have the operand's element type {}", operand.elem));
    }
    let windows: Vec<i64> = (0..rank)
        .map(|i| num_windows(operand.dims[i], 1, padding[i], a.window_dims[i], 1, strides[i]))
        .collect::<R<_>>()?;
    if source.dims[..] != windows[..] {
        return Err(format!("source has dims {:?} but the operand's windows give {windows:?}", source.dims));
    }
    let (name, params, root) = signature(module, a.select, "select")?;
    let e = plain(operand.elem, vec![]);
    if !same_types(&params, &[&e, &e]) {
        return Err(format!("select {name} takes {} but must take ({e}, {e})", types_str(&params)));
    }
    if !root.same_type(&plain(ElementType::Pred, vec![])) {
        return Err(format!("select {name} returns {root} but must return pred[]"));
    }
    let elems = reducer(module, a.scatter, &[operand.elem])?;
    if init.elem != operand.elem && init.elem != elems[0] {
        return Err(format!("init value {init} must have the operand's element type {}", operand.elem));
    }
    Ok(plain(elems[0], operand.dims.clone()))
}

/// The index vector dimension's size (1 when it is the implicit trailing dimension), and
/// the batch dimension sizes (the indices' dims without it).
fn index_batch(indices: &Shape, index_vector_dim: i64, batching: &[i64]) -> R<(i64, Vec<i64>)> {
    if !indices.elem.is_int() {
        return Err(format!("indices must be integers, got {indices}"));
    }
    let r = indices.rank() as i64;
    if index_vector_dim < 0 || index_vector_dim > r {
        return Err(format!("index_vector_dim {index_vector_dim} is out of range for indices of rank {r}"));
    }
    unique(batching, "indices batching dims")?;
    all_in(batching, indices.rank(), "indices batching dim")?;
    if batching.contains(&index_vector_dim) {
        return Err(format!("index_vector_dim {index_vector_dim} cannot be a batching dim"));
    }
    let vec_size = if index_vector_dim < r { indices.dims[index_vector_dim as usize] } else { 1 };
    let batch = (0..r).filter(|&i| i != index_vector_dim).map(|i| indices.dims[i as usize]).collect();
    Ok((vec_size, batch))
}

/// Checks the operand-side batching dims against the indices-side ones.
fn batching_match(
    operand: &Shape,
    op_batching: &[i64],
    indices: &Shape,
    idx_batching: &[i64],
    names: (&str, &str),
) -> R<()> {
    len_is(idx_batching.len(), op_batching.len(), names.1)?;
    for (&a, &b) in op_batching.iter().zip(idx_batching) {
        let (x, y) = (operand.dims[a as usize], indices.dims[b as usize]);
        if x != y {
            return Err(format!("{} dim {a} has size {x} but {} dim {b} has size {y}", names.0, names.1));
        }
    }
    Ok(())
}

fn gather(g: &GatherDims, operand: &Shape, indices: &Shape) -> R<Type> {
    let rank = operand.rank();
    let (vec_size, batch) = index_batch(indices, g.index_vector_dim, &g.start_indices_batching_dims)?;
    if rank != g.offset_dims.len() + g.collapsed_slice_dims.len() + g.operand_batching_dims.len() {
        return Err(format!(
            "operand rank {rank} must equal offset_dims ({}) + collapsed_slice_dims ({}) + operand_batching_dims ({})",
            g.offset_dims.len(),
            g.collapsed_slice_dims.len(),
            g.operand_batching_dims.len()
        ));
    }
    len_is(g.start_index_map.len(), vec_size as usize, "start_index_map")?;
    unique(&g.offset_dims, "offset_dims")?;
    sorted(&g.offset_dims, "offset_dims")?;
    unique(&[g.collapsed_slice_dims.clone(), g.operand_batching_dims.clone()].concat(), "collapsed and batching dims")?;
    sorted(&g.collapsed_slice_dims, "collapsed_slice_dims")?;
    sorted(&g.operand_batching_dims, "operand_batching_dims")?;
    all_in(&g.collapsed_slice_dims, rank, "collapsed slice dim")?;
    all_in(&g.operand_batching_dims, rank, "operand batching dim")?;
    batching_match(
        operand,
        &g.operand_batching_dims,
        indices,
        &g.start_indices_batching_dims,
        ("operand batching", "start indices batching"),
    )?;
    unique(
        &[g.start_index_map.clone(), g.operand_batching_dims.clone()].concat(),
        "start_index_map and batching dims",
    )?;
    all_in(&g.start_index_map, rank, "start_index_map entry")?;
    len_is(g.slice_sizes.len(), rank, "slice_sizes")?;
    for (i, (&z, &d)) in g.slice_sizes.iter().zip(&operand.dims).enumerate() {
        if z < 0 || z > d {
            return Err(format!("slice size {z} of dim {i} must be in 0..={d}"));
        }
        let dropped = g.collapsed_slice_dims.contains(&(i as i64)) || g.operand_batching_dims.contains(&(i as i64));
        if dropped && z > 1 {
            return Err(format!("slice size of collapsed or batching dim {i} is {z} but must be at most 1"));
        }
    }
    let offsets: Vec<i64> = (0..rank)
        .filter(|&i| !g.collapsed_slice_dims.contains(&(i as i64)) && !g.operand_batching_dims.contains(&(i as i64)))
        .map(|i| g.slice_sizes[i])
        .collect();
    let out_rank = batch.len() + offsets.len();
    all_in(&g.offset_dims, out_rank, "offset dim")?;
    let (mut bi, mut oi) = (batch.iter(), offsets.iter());
    let dims = (0..out_rank as i64)
        .map(|r| if g.offset_dims.contains(&r) { *oi.next().unwrap() } else { *bi.next().unwrap() })
        .collect::<Vec<_>>();
    Ok(plain(operand.elem, dims))
}

fn scatter(module: &Module, s: &ScatterDims, ops: &[&Type]) -> R<Type> {
    if ops.len() < 3 || ops.len().is_multiple_of(2) {
        return Err(format!("takes N inputs, the indices and N updates, got {} operands", ops.len()));
    }
    let n = (ops.len() - 1) / 2;
    let inputs = same_arrays(&ops[..n], "input")?;
    let indices = array(ops[n], "scatter indices")?;
    let updates = same_arrays(&ops[n + 1..], "update")?;
    let (input, update) = (inputs[0], updates[0]);
    let rank = input.rank();
    for (i, (x, u)) in inputs.iter().zip(&updates).enumerate() {
        if x.elem != u.elem {
            return Err(format!("update {i} is {u} but input {i} has element type {}", x.elem));
        }
    }
    let (vec_size, batch) = index_batch(indices, s.index_vector_dim, &s.scatter_indices_batching_dims)?;
    if rank != s.update_window_dims.len() + s.inserted_window_dims.len() + s.input_batching_dims.len() {
        return Err(format!(
            "input rank {rank} must equal update_window_dims ({}) + inserted_window_dims ({}) + input_batching_dims ({})",
            s.update_window_dims.len(),
            s.inserted_window_dims.len(),
            s.input_batching_dims.len()
        ));
    }
    unique(&s.update_window_dims, "update_window_dims")?;
    sorted(&s.update_window_dims, "update_window_dims")?;
    all_in(&s.update_window_dims, update.rank(), "update window dim")?;
    unique(&[s.inserted_window_dims.clone(), s.input_batching_dims.clone()].concat(), "inserted and batching dims")?;
    sorted(&s.inserted_window_dims, "inserted_window_dims")?;
    sorted(&s.input_batching_dims, "input_batching_dims")?;
    all_in(&s.inserted_window_dims, rank, "inserted window dim")?;
    all_in(&s.input_batching_dims, rank, "input batching dim")?;
    batching_match(
        input,
        &s.input_batching_dims,
        indices,
        &s.scatter_indices_batching_dims,
        ("input batching", "scatter indices batching"),
    )?;
    len_is(s.scatter_dims_to_operand_dims.len(), vec_size as usize, "scatter_dims_to_operand_dims")?;
    unique(
        &[s.scatter_dims_to_operand_dims.clone(), s.input_batching_dims.clone()].concat(),
        "scatter_dims_to_operand_dims and batching dims",
    )?;
    all_in(&s.scatter_dims_to_operand_dims, rank, "scatter_dims_to_operand_dims entry")?;
    if update.rank() != s.update_window_dims.len() + batch.len() {
        return Err(format!(
            "updates have rank {} but must have {} (update_window_dims) + {} (scatter batch dims)",
            update.rank(),
            s.update_window_dims.len(),
            batch.len()
        ));
    }
    let window_bounds: Vec<i64> = (0..rank)
        .filter(|&i| !s.inserted_window_dims.contains(&(i as i64)) && !s.input_batching_dims.contains(&(i as i64)))
        .map(|i| input.dims[i])
        .collect();
    let (mut bi, mut wi) = (batch.iter(), window_bounds.iter());
    for (d, &size) in update.dims.iter().enumerate() {
        if s.update_window_dims.contains(&(d as i64)) {
            let bound = *wi.next().unwrap();
            if size > bound {
                return Err(format!("update window dim {d} has size {size} larger than the input's {bound}"));
            }
        } else {
            let want = *bi.next().unwrap();
            if size != want {
                return Err(format!("update scatter dim {d} has size {size} but the indices give {want}"));
            }
        }
    }
    let elems = reducer(module, s.body, &inputs.iter().map(|x| x.elem).collect::<Vec<_>>())?;
    Ok(Type::from_results(elems.iter().map(|&e| plain(e, input.dims.clone())).collect()))
}

fn sort(module: &Module, dim: i64, comparator: CompId, ops: &[&Type]) -> R<Type> {
    if ops.is_empty() {
        return Err("takes at least one operand".to_string());
    }
    let inputs = same_arrays(ops, "input")?;
    let rank = inputs[0].rank() as i64;
    if dim < -rank || dim >= rank {
        return Err(format!("dimension {dim} is out of range for rank {rank}"));
    }
    let (name, params, root) = signature(module, comparator, "comparator")?;
    let want: Vec<Type> = inputs.iter().flat_map(|s| [plain(s.elem, vec![]), plain(s.elem, vec![])]).collect();
    if params.len() != want.len() || !params.iter().zip(&want).all(|(a, b)| a.same_type(b)) {
        return Err(format!("comparator {name} takes {} but must take {}", types_str(&params), types_str(&want)));
    }
    if !root.same_type(&plain(ElementType::Pred, vec![])) {
        return Err(format!("comparator {name} returns {root} but must return pred[]"));
    }
    Ok(Type::from_results(inputs.iter().map(|s| plain(s.elem, s.dims.clone())).collect()))
}

fn map(module: &Module, dims: &[i64], body: CompId, ops: &[&Type]) -> R<Type> {
    if ops.is_empty() {
        return Err("takes at least one operand".to_string());
    }
    let inputs = same_arrays(ops, "input")?;
    let rank = inputs[0].rank() as i64;
    if dims != (0..rank).collect::<Vec<_>>() {
        return Err(format!("dimensions {dims:?} must be all dims 0..{rank} in order"));
    }
    let (name, params, root) = signature(module, body, "body")?;
    let want: Vec<Type> = inputs.iter().map(|s| plain(s.elem, vec![])).collect();
    if params.len() != want.len() || !params.iter().zip(&want).all(|(a, b)| a.same_type(b)) {
        return Err(format!("body {name} takes {} but must take {}", types_str(&params), types_str(&want)));
    }
    let out = scalar(&root, &format!("body {name} result"))?;
    Ok(plain(out.elem, inputs[0].dims.clone()))
}

fn while_loop(module: &Module, cond: CompId, body: CompId, ops: &[&Type]) -> R<Type> {
    let state: Vec<Type> = ops.iter().map(|t| (*t).clone()).collect();
    let (cname, cparams, croot) = signature(module, cond, "cond")?;
    if !same_types(&cparams, ops) {
        return Err(format!("cond {cname} takes {} but the loop carries {}", types_str(&cparams), types_str(&state)));
    }
    if !croot.same_type(&plain(ElementType::Pred, vec![])) {
        return Err(format!("cond {cname} returns {croot} but must return pred[]"));
    }
    let (bname, bparams, broot) = signature(module, body, "body")?;
    if !same_types(&bparams, ops) {
        return Err(format!("body {bname} takes {} but the loop carries {}", types_str(&bparams), types_str(&state)));
    }
    let result = Type::from_results(state);
    if !broot.same_type(&result) {
        return Err(format!("body {bname} returns {broot} but the loop carries {result}"));
    }
    Ok(result)
}

fn case(module: &Module, branches: &[CompId], branch_operands: &[Vec<u32>], ops: &[&Type]) -> R<Type> {
    let index = scalar(ops.first().ok_or("takes a branch index")?, "branch index")?;
    if branches.is_empty() {
        return Err("needs at least one branch".to_string());
    }
    match index.elem {
        ElementType::S32 => {}
        ElementType::Pred if branches.len() == 2 => {}
        ElementType::Pred => return Err(format!("a pred selector needs 2 branches, got {}", branches.len())),
        _ => return Err(format!("branch index must be s32[] or pred[], got {index}")),
    }
    len_is(branch_operands.len(), branches.len(), "branch_operands")?;
    let args = &ops[1..];
    let mut result: Option<(String, Type)> = None;
    for (i, (&b, listed)) in branches.iter().zip(branch_operands).enumerate() {
        let (name, params, root) = signature(module, b, &format!("branch {i}"))?;
        let given: Vec<&Type> = listed
            .iter()
            .map(|&k| {
                args.get(k as usize).copied().ok_or_else(|| format!("branch {i} operand index {k} is out of range"))
            })
            .collect::<R<_>>()?;
        if !same_types(&params, &given) {
            let got: Vec<Type> = given.iter().map(|t| (*t).clone()).collect();
            return Err(format!("branch {i} ({name}) takes {} but is given {}", types_str(&params), types_str(&got)));
        }
        match &result {
            Some((first, t)) if !t.same_type(&root) => {
                return Err(format!("branch {i} ({name}) returns {root} but branch 0 ({first}) returns {t}"));
            }
            Some(_) => {}
            None => result = Some((name, root)),
        }
    }
    Ok(result.map(|(_, t)| t).unwrap_or(Type::Tuple(vec![])))
}

fn triangular_solve(left_side: bool, a: &Shape, b: &Shape) -> R<Type> {
    if a.elem != b.elem || !a.elem.is_float() {
        return Err(format!("a {a} and b {b} must have one float element type"));
    }
    let r = a.rank();
    if r < 2 || b.rank() != r {
        return Err(format!("a {a} and b {b} must have one rank >= 2"));
    }
    if a.dims[..r - 2] != b.dims[..r - 2] {
        return Err(format!("a {a} and b {b} must have the same batch dims"));
    }
    let m = a.dims[r - 1];
    let bm = if left_side { b.dims[r - 2] } else { b.dims[r - 1] };
    if a.dims[r - 2] != m || bm != m {
        return Err(format!(
            "a {a} must be square and match b {b} along its {} dim",
            if left_side { "second-to-last" } else { "last" }
        ));
    }
    Ok(plain(b.elem, b.dims.clone()))
}

// ---------------------------------------------------------------------------------------
// Checking a declared type.

fn check(module: &Module, op: &Op, ops: &[&Type], declared: &Type) -> R<()> {
    match op {
        Op::Parameter(_) => count(ops, 0),
        Op::CustomCall(_) => Ok(()),
        Op::Iota { dim } => {
            count(ops, 0)?;
            let s = array(declared, "result")?;
            if s.elem.is_pred() {
                return Err(format!("result must be an integer or float array, got {s}"));
            }
            dim_in(*dim, s.rank(), "iota dimension")?;
            Ok(())
        }
        Op::Convert => {
            count(ops, 1)?;
            let (x, y) = (array(ops[0], "operand")?, array(declared, "result")?);
            if !x.same_dims(y) {
                return Err(format!("result {y} must have the dims of the operand {x}"));
            }
            Ok(())
        }
        Op::BitcastConvert => {
            count(ops, 1)?;
            bitcast_convert(array(ops[0], "operand")?, array(declared, "result")?)
        }
        Op::Reshape => {
            count(ops, 1)?;
            let (x, y) = (array(ops[0], "operand")?, array(declared, "result")?);
            if x.elem != y.elem || elements(x) != elements(y) {
                return Err(format!("result {y} must have the element type and element count of the operand {x}"));
            }
            Ok(())
        }
        Op::Bitcast => {
            count(ops, 1)?;
            let (x, y) = (array(ops[0], "operand")?, array(declared, "result")?);
            if elements(x) * x.elem.byte_size() as i128 != elements(y) * y.elem.byte_size() as i128 {
                return Err(format!("result {y} must have the byte size of the operand {x}"));
            }
            Ok(())
        }
        Op::BroadcastInDim { dims } => {
            count(ops, 1)?;
            broadcast_in_dim(dims, array(ops[0], "operand")?, array(declared, "result")?)
        }
        Op::Rng { distribution } => {
            count(ops, 2)?;
            let a = scalar(ops[0], "a")?;
            let b = scalar(ops[1], "b")?;
            let y = array(declared, "result")?;
            if a.elem != b.elem || y.elem != a.elem {
                return Err(format!("a {a}, b {b} and the result {y} must share one element type"));
            }
            if *distribution == RngDistribution::Normal && !a.elem.is_float() {
                return Err(format!("a normal distribution needs a float type, got {}", a.elem));
            }
            if a.elem.is_pred() {
                return Err("pred is not a valid rng element type".to_string());
            }
            Ok(())
        }
        Op::RngBitGenerator { algorithm } => {
            count(ops, 1)?;
            rng_bit_generator(*algorithm, array(ops[0], "initial state")?, declared)
        }
        Op::Dot(_) | Op::Convolution(_) => {
            // The result element type is free (JAX's preferred_element_type); dims are not.
            let want = infer(module, op, ops)?;
            let (w, y) = (array(&want, "inferred result")?, array(declared, "result")?);
            if !w.same_dims(y) {
                return Err(format!("declared type {y} but the operands give dims {:?}", w.dims));
            }
            Ok(())
        }
        _ => {
            let want = infer(module, op, ops)?;
            if !want.same_type(declared) {
                return Err(format!("declared type {declared} but the operands give {want}"));
            }
            Ok(())
        }
    }
}

fn bitcast_convert(x: &Shape, y: &Shape) -> R<()> {
    let (bx, by) = (x.elem.bit_width() as i64, y.elem.bit_width() as i64);
    let r = x.rank();
    let ok = if bx == by {
        x.same_dims(y)
    } else if by < bx {
        y.rank() == r + 1 && y.dims[..r] == x.dims[..] && y.dims[r] as i128 * by as i128 == bx as i128
    } else {
        r >= 1 && y.rank() == r - 1 && y.dims[..] == x.dims[..r - 1] && x.dims[r - 1] as i128 * bx as i128 == by as i128
    };
    if !ok {
        return Err(format!("cannot reinterpret {x} as {y}"));
    }
    Ok(())
}

fn broadcast_in_dim(dims: &[i64], x: &Shape, y: &Shape) -> R<()> {
    if x.elem != y.elem {
        return Err(format!("result {y} must have the operand's element type {}", x.elem));
    }
    len_is(dims.len(), x.rank(), "broadcast_dimensions")?;
    all_in(dims, y.rank(), "broadcast dimension")?;
    unique(dims, "broadcast_dimensions")?;
    for (i, &d) in dims.iter().enumerate() {
        let (from, to) = (x.dims[i], y.dims[d as usize]);
        if from != 1 && from != to {
            return Err(format!("operand dim {i} has size {from} but result dim {d} has size {to}"));
        }
    }
    Ok(())
}

fn rng_bit_generator(algorithm: RngAlgorithm, state: &Shape, declared: &Type) -> R<()> {
    if state.rank() != 1 || !state.elem.is_int() {
        return Err(format!("initial state must be a rank-1 integer array, got {state}"));
    }
    let n = state.dims[0];
    match algorithm {
        RngAlgorithm::ThreeFry if n != 2 => return Err(format!("THREE_FRY needs a state of 2 elements, got {n}")),
        RngAlgorithm::Philox if n != 2 && n != 3 => {
            return Err(format!("PHILOX needs a state of 2 or 3 elements, got {n}"))
        }
        _ => {}
    }
    let parts = declared
        .as_tuple()
        .filter(|t| t.len() == 2)
        .ok_or_else(|| format!("result {declared} must be (state, output)"))?;
    let out_state = array(&parts[0], "output state")?;
    if !out_state.same_shape(state) {
        return Err(format!("output state {out_state} must have the initial state's type {state}"));
    }
    let out = array(&parts[1], "output")?;
    if out.elem.is_pred() {
        return Err(format!("output must be an integer or float array, got {out}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::ir::{CmpDir, ConvDims, FusionKind, Literal, ReduceWindowAttrs, Transpose, TriangularSolveAttrs};
    use ElementType::*;

    fn inf_in(m: &Module, op: Op, ops: &[Type]) -> Result<Type, String> {
        infer_type(m, &op, &ops.iter().collect::<Vec<_>>())
    }
    fn inf(op: Op, ops: &[Type]) -> Result<Type, String> {
        inf_in(&Module::new("t"), op, ops)
    }
    fn chk_in(m: &Module, op: Op, ops: &[Type], declared: Type) -> Result<(), String> {
        check_type(m, &op, &ops.iter().collect::<Vec<_>>(), &declared)
    }
    fn chk(op: Op, ops: &[Type], declared: Type) -> Result<(), String> {
        chk_in(&Module::new("t"), op, ops, declared)
    }
    fn bin(b: BinaryOp) -> Op {
        Op::Binary(b)
    }

    #[test]
    fn elementwise() {
        assert_eq!(inf(bin(BinaryOp::Add), &[f32(&[2, 3]), f32(&[2, 3])]), Ok(f32(&[2, 3])));
        assert_eq!(
            inf(bin(BinaryOp::Add), &[f32(&[2, 3]), f32(&[3, 2])]),
            Err("add: operands must have the same type, got f32[2,3] and f32[3,2]".into())
        );
        assert_eq!(
            inf(bin(BinaryOp::Atan2), &[s32(&[2]), s32(&[2])]),
            Err("atan2: operands must be float arrays, got s32[2]".into())
        );
        assert_eq!(
            inf(bin(BinaryOp::ShiftLeft), &[f32(&[]), f32(&[])]),
            Err("shift-left: operands must be integer arrays, got f32[]".into())
        );
        assert_eq!(inf(bin(BinaryOp::And), &[pred(&[2]), pred(&[2])]), Ok(pred(&[2])));
        assert_eq!(inf(bin(BinaryOp::Add), &[f32(&[2])]), Err("add: takes 2 operands, got 1".into()));
        assert_eq!(inf(Op::Unary(UnaryOp::IsFinite), &[f32(&[3])]), Ok(pred(&[3])));
        assert_eq!(
            inf(Op::Unary(UnaryOp::Exp), &[s32(&[3])]),
            Err("exponential: operand must be a float array, got s32[3]".into())
        );
        assert_eq!(
            inf(Op::Unary(UnaryOp::Not), &[f32(&[3])]),
            Err("not: operand must be a pred or integer array, got f32[3]".into())
        );
        assert_eq!(inf(Op::Unary(UnaryOp::PopCnt), &[ty(S8, &[3])]), Ok(ty(S8, &[3])));
        assert_eq!(
            inf(Op::ReducePrecision { exponent_bits: 0, mantissa_bits: 2 }, &[f32(&[3])]),
            Err("reduce-precision: exponent_bits must be at least 1".into())
        );
        assert_eq!(inf(Op::ReducePrecision { exponent_bits: 5, mantissa_bits: 10 }, &[f32(&[3])]), Ok(f32(&[3])));
    }

    #[test]
    fn compare_select_clamp() {
        let cmp = |kind| Op::Compare { dir: CmpDir::Lt, kind };
        assert_eq!(inf(cmp(None), &[f32(&[4]), f32(&[4])]), Ok(pred(&[4])));
        assert_eq!(
            inf(cmp(Some(CmpKind::Signed)), &[f32(&[4]), f32(&[4])]),
            Err("compare: comparison type SIGNED does not apply to f32 operands".into())
        );
        assert_eq!(inf(cmp(Some(CmpKind::Unsigned)), &[pred(&[]), pred(&[])]), Ok(pred(&[])));
        assert_eq!(inf(Op::Select, &[pred(&[]), f32(&[2, 3]), f32(&[2, 3])]), Ok(f32(&[2, 3])));
        assert_eq!(inf(Op::Select, &[pred(&[2, 3]), f32(&[2, 3]), f32(&[2, 3])]), Ok(f32(&[2, 3])));
        assert_eq!(
            inf(Op::Select, &[pred(&[3]), f32(&[2, 3]), f32(&[2, 3])]),
            Err("select: the selector pred[3] must be a scalar or have the dims of f32[2,3]".into())
        );
        assert_eq!(
            inf(Op::Select, &[s32(&[]), f32(&[2]), f32(&[2])]),
            Err("select: the selector must be pred, got s32[]".into())
        );
        assert_eq!(inf(Op::Clamp, &[f32(&[]), f32(&[5]), f32(&[])]), Ok(f32(&[5])));
        assert_eq!(inf(Op::Clamp, &[f32(&[5]), f32(&[5]), f32(&[5])]), Ok(f32(&[5])));
        assert_eq!(
            inf(Op::Clamp, &[s32(&[]), f32(&[5]), f32(&[])]),
            Err("clamp: min has element type s32 but the operand has f32".into())
        );
        assert_eq!(
            inf(Op::Clamp, &[f32(&[]), f32(&[5]), f32(&[4])]),
            Err("clamp: max f32[4] must be a scalar or have the dims of f32[5]".into())
        );
    }

    #[test]
    fn declared_only_ops() {
        assert_eq!(
            inf(Op::Convert, &[f32(&[2])]),
            Err("convert: the result type cannot be inferred from the operands; it must be declared".into())
        );
        assert!(needs_declared_type(&Op::Reshape) && !needs_declared_type(&Op::Copy));
        assert_eq!(chk(Op::Convert, &[f32(&[2, 3])], ty(S8, &[2, 3])), Ok(()));
        assert_eq!(
            chk(Op::Convert, &[f32(&[2, 3])], ty(S8, &[3, 2])),
            Err("convert: result s8[3,2] must have the dims of the operand f32[2,3]".into())
        );
        let bc = Op::BitcastConvert;
        assert_eq!(chk(bc.clone(), &[f32(&[2])], s32(&[2])), Ok(()));
        assert_eq!(chk(bc.clone(), &[f32(&[2])], ty(U8, &[2, 4])), Ok(()));
        assert_eq!(chk(bc.clone(), &[ty(U8, &[2, 4])], f32(&[2])), Ok(()));
        assert_eq!(
            chk(bc.clone(), &[f32(&[2])], ty(U8, &[2, 2])),
            Err("bitcast-convert: cannot reinterpret f32[2] as u8[2,2]".into())
        );
        assert_eq!(
            chk(bc, &[ty(F64, &[3])], f32(&[3])),
            Err("bitcast-convert: cannot reinterpret f64[3] as f32[3]".into())
        );
        assert_eq!(chk(Op::Reshape, &[f32(&[2, 3])], f32(&[6])), Ok(()));
        assert_eq!(
            chk(Op::Reshape, &[f32(&[2, 3])], f32(&[7])),
            Err("reshape: result f32[7] must have the element type and element count of the operand f32[2,3]".into())
        );
        assert_eq!(chk(Op::Bitcast, &[f32(&[2, 3])], with_layout(f32(&[3, 2]), &[0, 1])), Ok(()));
        assert_eq!(chk(Op::Iota { dim: 1 }, &[], f32(&[4, 5])), Ok(()));
        assert_eq!(
            chk(Op::Iota { dim: 2 }, &[], f32(&[4, 5])),
            Err("iota: iota dimension 2 is out of range for rank 2".into())
        );
        assert_eq!(chk(Op::Parameter(0), &[], f32(&[4, 5])), Ok(()));
    }

    #[test]
    fn broadcast_in_dim() {
        let b = |dims: &[i64]| Op::BroadcastInDim { dims: dims.to_vec() };
        assert_eq!(chk(b(&[1]), &[f32(&[3])], f32(&[2, 3])), Ok(()));
        assert_eq!(chk(b(&[0, 2]), &[f32(&[1, 3])], f32(&[4, 5, 3])), Ok(()));
        // Dims need not be increasing: this one also transposes.
        assert_eq!(chk(b(&[1, 0]), &[f32(&[2, 3])], f32(&[3, 2])), Ok(()));
        assert_eq!(
            chk(b(&[0]), &[f32(&[3])], f32(&[2, 3])),
            Err("broadcast: operand dim 0 has size 3 but result dim 0 has size 2".into())
        );
        assert_eq!(
            chk(b(&[1, 1]), &[f32(&[1, 3])], f32(&[2, 3])),
            Err("broadcast: broadcast_dimensions [1, 1] repeat dim 1".into())
        );
        assert_eq!(
            chk(b(&[2]), &[f32(&[3])], f32(&[2, 3])),
            Err("broadcast: broadcast dimension 2 is out of range for rank 2".into())
        );
        assert_eq!(
            chk(b(&[1]), &[f32(&[3])], s32(&[2, 3])),
            Err("broadcast: result s32[2,3] must have the operand's element type f32".into())
        );
    }

    #[test]
    fn data_movement() {
        let t = |p: &[i64]| Op::Transpose { perm: p.to_vec() };
        assert_eq!(inf(t(&[2, 0, 1]), &[f32(&[2, 3, 4])]), Ok(f32(&[4, 2, 3])));
        assert_eq!(inf(t(&[0, 0, 1]), &[f32(&[2, 3, 4])]), Err("transpose: permutation [0, 0, 1] repeat dim 0".into()));
        let sl =
            |a: &[i64], b: &[i64], c: &[i64]| Op::Slice { start: a.to_vec(), limit: b.to_vec(), stride: c.to_vec() };
        // ceil((8 - 1) / 3) = 3, ceil(4 / 2) = 2.
        assert_eq!(inf(sl(&[1, 0], &[8, 4], &[3, 2]), &[f32(&[10, 4])]), Ok(f32(&[3, 2])));
        assert_eq!(
            inf(sl(&[1, 0], &[11, 4], &[1, 1]), &[f32(&[10, 4])]),
            Err("slice: dim 0: need 0 <= start 1 <= limit 11 <= size 10".into())
        );
        let ds = |s: &[i64]| Op::DynamicSlice { sizes: s.to_vec() };
        assert_eq!(inf(ds(&[2, 6]), &[f32(&[8, 6]), s32(&[]), s32(&[])]), Ok(f32(&[2, 6])));
        assert_eq!(
            inf(ds(&[2, 7]), &[f32(&[8, 6]), s32(&[]), s32(&[])]),
            Err("dynamic-slice: slice size 7 of dim 1 must be in 0..=6".into())
        );
        assert_eq!(
            inf(ds(&[2, 6]), &[f32(&[8, 6]), s32(&[]), ty(S64, &[])]),
            Err("dynamic-slice: start indices must share one type, got s32 and s64".into())
        );
        assert_eq!(
            inf(ds(&[2, 6]), &[f32(&[8, 6]), s32(&[])]),
            Err("dynamic-slice: start indices has 1 entries but must have 2".into())
        );
        let dus = Op::DynamicUpdateSlice;
        assert_eq!(inf(dus.clone(), &[f32(&[8, 6]), f32(&[2, 6]), s32(&[]), s32(&[])]), Ok(f32(&[8, 6])));
        assert_eq!(
            inf(dus, &[f32(&[8, 6]), f32(&[9, 6]), s32(&[]), s32(&[])]),
            Err("dynamic-update-slice: update dim 0 has size 9 larger than the operand's 8".into())
        );
        let cat = |d| Op::Concatenate { dim: d };
        assert_eq!(inf(cat(0), &[f32(&[2, 3]), f32(&[5, 3])]), Ok(f32(&[7, 3])));
        assert_eq!(
            inf(cat(0), &[f32(&[2, 3]), f32(&[2, 4])]),
            Err("concatenate: operand 1 has size 4 in dim 1 but operand 0 has 3".into())
        );
        assert_eq!(inf(Op::Reverse { dims: vec![1] }, &[f32(&[2, 3])]), Ok(f32(&[2, 3])));
        assert_eq!(
            inf(Op::Reverse { dims: vec![2] }, &[f32(&[2, 3])]),
            Err("reverse: dimension 2 is out of range for rank 2".into())
        );
        assert_eq!(inf(Op::Copy, &[f32(&[2, 3])]), Ok(f32(&[2, 3])));
    }

    #[test]
    fn pad_with_negative_and_interior_padding() {
        let p = |l: &[i64], h: &[i64], i: &[i64]| Op::Pad { low: l.to_vec(), high: h.to_vec(), interior: i.to_vec() };
        // -1 + 5 + 4 * 1 + 2 = 10.
        assert_eq!(inf(p(&[-1], &[2], &[1]), &[f32(&[5]), f32(&[])]), Ok(f32(&[10])));
        // [0 + 2 + 0 + 1, 1 + 3 + 2 * 2 + 0] = [3, 8].
        assert_eq!(inf(p(&[0, 1], &[1, 0], &[0, 2]), &[f32(&[2, 3]), f32(&[])]), Ok(f32(&[3, 8])));
        assert_eq!(
            inf(p(&[-6], &[0], &[0]), &[f32(&[5]), f32(&[])]),
            Err("pad: dim 0 would have negative size -1".into())
        );
        assert_eq!(
            inf(p(&[0], &[0], &[0]), &[f32(&[5]), s32(&[])]),
            Err("pad: padding value s32[] must have the operand's element type f32".into())
        );
        assert_eq!(
            inf(p(&[0], &[0], &[-1]), &[f32(&[5]), f32(&[])]),
            Err("pad: interior padding -1 of dim 0 is negative".into())
        );
        // Sizes from the text may be huge: an error, never an overflow panic.
        assert_eq!(
            inf(p(&[0], &[0], &[i64::MAX]), &[f32(&[5]), f32(&[])]),
            Err(format!("pad: dim 0 would have size {}, which overflows", 5 + 4 * i64::MAX as i128))
        );
    }

    fn dot(lb: &[i64], rb: &[i64], lc: &[i64], rc: &[i64]) -> Op {
        Op::Dot(DotDims {
            lhs_batch: lb.to_vec(),
            rhs_batch: rb.to_vec(),
            lhs_contracting: lc.to_vec(),
            rhs_contracting: rc.to_vec(),
        })
    }

    #[test]
    fn dot_general() {
        assert_eq!(inf(dot(&[0], &[0], &[2], &[1]), &[f32(&[2, 3, 4]), f32(&[2, 4, 5])]), Ok(f32(&[2, 3, 5])));
        assert_eq!(inf(dot(&[], &[], &[], &[]), &[f32(&[2]), f32(&[3])]), Ok(f32(&[2, 3])));
        assert_eq!(
            inf(dot(&[], &[], &[1], &[0]), &[f32(&[2, 3]), f32(&[4, 5])]),
            Err("dot: lhs contracting dim 1 has size 3 but rhs contracting dim 0 has size 4".into())
        );
        assert_eq!(
            inf(dot(&[0], &[0], &[0], &[1]), &[f32(&[2, 3]), f32(&[2, 2])]),
            Err("dot: lhs batching and contracting dims [0, 0] repeat dim 0".into())
        );
        assert_eq!(
            inf(dot(&[], &[], &[1], &[0]), &[f32(&[2, 3]), s32(&[3, 5])]),
            Err("dot: lhs and rhs element types differ: f32 and s32".into())
        );
        // The result element type is free (preferred_element_type); the dims are not.
        let op = dot(&[], &[], &[1], &[0]);
        assert_eq!(chk(op.clone(), &[ty(BF16, &[2, 3]), ty(BF16, &[3, 5])], f32(&[2, 5])), Ok(()));
        assert_eq!(chk(op.clone(), &[ty(S8, &[2, 3]), ty(S8, &[3, 5])], s32(&[2, 5])), Ok(()));
        assert_eq!(
            chk(op, &[f32(&[2, 3]), f32(&[3, 5])], f32(&[5, 2])),
            Err("dot: declared type f32[5,2] but the operands give dims [2, 5]".into())
        );
    }

    /// NHWC input, HWIO kernel, NHWC output.
    fn conv(strides: &[i64], padding: &[(i64, i64)], lhs_dil: &[i64], rhs_dil: &[i64], fg: i64, bg: i64) -> Op {
        Op::Convolution(Box::new(ConvAttrs {
            dims: ConvDims {
                input_batch: 0,
                input_feature: 3,
                input_spatial: vec![1, 2],
                kernel_input_feature: 2,
                kernel_output_feature: 3,
                kernel_spatial: vec![0, 1],
                output_batch: 0,
                output_feature: 3,
                output_spatial: vec![1, 2],
            },
            window_strides: strides.to_vec(),
            padding: padding.to_vec(),
            lhs_dilation: lhs_dil.to_vec(),
            rhs_dilation: rhs_dil.to_vec(),
            window_reversal: vec![],
            feature_group_count: fg,
            batch_group_count: bg,
        }))
    }

    #[test]
    fn convolution() {
        // Padded 5 + 2 = 7, window 3, stride 2: (7 - 3) / 2 + 1 = 3.
        let op = conv(&[2, 2], &[(1, 1), (1, 1)], &[1, 1], &[1, 1], 1, 1);
        assert_eq!(inf(op, &[f32(&[1, 5, 5, 2]), f32(&[3, 3, 2, 4])]), Ok(f32(&[1, 3, 3, 4])));
        // Dilated input (5 - 1) * 2 + 1 = 9, dilated window (3 - 1) * 2 + 1 = 5: 9 - 5 + 1 = 5.
        let op = conv(&[1, 1], &[(0, 0), (0, 0)], &[2, 2], &[2, 2], 1, 1);
        assert_eq!(inf(op, &[f32(&[1, 5, 5, 2]), f32(&[3, 3, 2, 4])]), Ok(f32(&[1, 5, 5, 4])));
        // Empty attribute lists mean the defaults; negative padding shrinks: 5 - 2 - 3 + 1 = 1.
        let op = conv(&[], &[], &[], &[], 1, 1);
        assert_eq!(inf(op, &[f32(&[1, 5, 5, 2]), f32(&[3, 3, 2, 4])]), Ok(f32(&[1, 3, 3, 4])));
        let op = conv(&[1, 1], &[(-1, -1), (0, 0)], &[1, 1], &[1, 1], 1, 1);
        assert_eq!(inf(op, &[f32(&[1, 5, 5, 2]), f32(&[3, 3, 2, 4])]), Ok(f32(&[1, 1, 3, 4])));
        // Feature groups: 4 input features in 2 groups of 2.
        let op = conv(&[], &[], &[], &[], 2, 1);
        assert_eq!(inf(op.clone(), &[f32(&[1, 5, 5, 4]), f32(&[3, 3, 2, 6])]), Ok(f32(&[1, 3, 3, 6])));
        assert_eq!(
            inf(op, &[f32(&[1, 5, 5, 4]), f32(&[3, 3, 3, 6])]),
            Err("convolution: kernel input feature size 3 must be the input feature size 4 / feature_group_count 2"
                .into())
        );
        // Batch groups divide the batch.
        let op = conv(&[], &[], &[], &[], 1, 2);
        assert_eq!(inf(op, &[f32(&[4, 5, 5, 2]), f32(&[3, 3, 2, 4])]), Ok(f32(&[2, 3, 3, 4])));
        let op = conv(&[1], &[], &[], &[], 1, 1);
        assert_eq!(
            inf(op, &[f32(&[1, 5, 5, 2]), f32(&[3, 3, 2, 4])]),
            Err("convolution: window_strides has 1 entries but must have 2".into())
        );
        let op = conv(&[], &[], &[], &[], 1, 1);
        assert_eq!(chk(op, &[ty(BF16, &[1, 5, 5, 2]), ty(BF16, &[3, 3, 2, 4])], f32(&[1, 3, 3, 4])), Ok(()));
    }

    /// A variadic (max f32, min s32) body, as an argmax-like reduction uses.
    fn max_min_body(m: &mut Module) -> CompId {
        let mut b = CompBuilder::new("maxmin");
        let a0 = b.param(f32(&[]));
        let a1 = b.param(s32(&[]));
        let x0 = b.param(f32(&[]));
        let x1 = b.param(s32(&[]));
        let mx = b.op(Op::Binary(BinaryOp::Max), &[a0, x0], f32(&[]));
        let mn = b.op(Op::Binary(BinaryOp::Min), &[a1, x1], s32(&[]));
        let t = b.op(Op::Tuple, &[mx, mn], Type::Tuple(vec![f32(&[]), s32(&[])]));
        m.add_computation(b.finish(t))
    }

    #[test]
    fn reduce() {
        let mut m = Module::new("t");
        let body = max_min_body(&mut m);
        let add = binary_body(&mut m, "add", BinaryOp::Add, F32);
        let r = |dims: &[i64], body| Op::Reduce { dims: dims.to_vec(), body };
        assert_eq!(
            inf_in(&m, r(&[1], body), &[f32(&[3, 4]), s32(&[3, 4]), f32(&[]), s32(&[])]),
            Ok(Type::Tuple(vec![f32(&[3]), s32(&[3])]))
        );
        assert_eq!(inf_in(&m, r(&[0, 1], add), &[f32(&[3, 4]), f32(&[])]), Ok(f32(&[])));
        // f16 inputs promote to the f32 body; the result takes the body's type.
        assert_eq!(inf_in(&m, r(&[0], add), &[ty(F16, &[3]), ty(F16, &[])]), Ok(f32(&[])));
        assert_eq!(
            inf_in(&m, r(&[0], add), &[ty(F64, &[3]), ty(F64, &[])]),
            Err("reduce: input 0 has element type f64 which body add cannot take as f32".into())
        );
        assert_eq!(
            inf_in(&m, r(&[2], add), &[f32(&[3, 4]), f32(&[])]),
            Err("reduce: dimension 2 is out of range for rank 2".into())
        );
        assert_eq!(
            inf_in(&m, r(&[1], add), &[f32(&[3, 4]), s32(&[3, 4]), f32(&[]), s32(&[])]),
            Err("reduce: body add takes 2 parameters but must take 4 (2 per input)".into())
        );
        assert_eq!(
            inf_in(&m, r(&[1], add), &[f32(&[3, 4]), f32(&[]), f32(&[])]),
            Err("reduce: takes N inputs and N init values, got 3 operands".into())
        );
        assert_eq!(
            inf_in(&m, r(&[1], add), &[f32(&[3, 4]), f32(&[1])]),
            Err("reduce: init value 0 must be a scalar, got f32[1]".into())
        );
        assert_eq!(
            inf_in(&m, r(&[1], body), &[f32(&[3, 4]), s32(&[3, 5]), f32(&[]), s32(&[])]),
            Err("reduce: input 1 has dims [3, 5] but input 0 has [3, 4]".into())
        );
    }

    #[test]
    fn reduce_window() {
        let mut m = Module::new("t");
        let add = binary_body(&mut m, "add", BinaryOp::Add, F32);
        let rw = |w: &[i64], s: &[i64], bd: &[i64], wd: &[i64], p: &[(i64, i64)]| {
            Op::ReduceWindow(Box::new(ReduceWindowAttrs {
                window_dims: w.to_vec(),
                strides: s.to_vec(),
                base_dilations: bd.to_vec(),
                window_dilations: wd.to_vec(),
                padding: p.to_vec(),
                body: add,
            }))
        };
        let x = [f32(&[4, 6]), f32(&[])];
        assert_eq!(inf_in(&m, rw(&[2, 3], &[2, 3], &[], &[], &[]), &x), Ok(f32(&[2, 2])));
        // dim 0: (4 - 1) * 2 + 1 + 2 = 9, window 3: 7; dim 1: window (3 - 1) * 2 + 1 = 5: 2.
        assert_eq!(inf_in(&m, rw(&[3, 3], &[1, 1], &[2, 1], &[1, 2], &[(1, 1), (0, 0)]), &x), Ok(f32(&[7, 2])));
        // A window larger than the padded input gives an empty result.
        assert_eq!(inf_in(&m, rw(&[5, 1], &[], &[], &[], &[]), &x), Ok(f32(&[0, 6])));
        assert_eq!(
            inf_in(&m, rw(&[0, 3], &[], &[], &[], &[]), &x),
            Err("reduce-window: window_dimensions [0, 3] must be positive, has 0".into())
        );
        assert_eq!(
            inf_in(&m, rw(&[2, 3], &[1, 0], &[], &[], &[]), &x),
            Err("reduce-window: window_strides [1, 0] must be positive, has 0".into())
        );
    }

    #[test]
    fn select_and_scatter() {
        let mut m = Module::new("t");
        let add = binary_body(&mut m, "add", BinaryOp::Add, F32);
        let ge = {
            let mut b = CompBuilder::new("ge");
            let x = b.param(f32(&[]));
            let y = b.param(f32(&[]));
            let r = b.op(Op::Compare { dir: CmpDir::Ge, kind: None }, &[x, y], pred(&[]));
            m.add_computation(b.finish(r))
        };
        let op = |select| {
            Op::SelectAndScatter(SelectAndScatterAttrs {
                window_dims: vec![2, 3],
                strides: vec![2, 3],
                padding: vec![],
                select,
                scatter: add,
            })
        };
        assert_eq!(inf_in(&m, op(ge), &[f32(&[4, 6]), f32(&[2, 2]), f32(&[])]), Ok(f32(&[4, 6])));
        assert_eq!(
            inf_in(&m, op(ge), &[f32(&[4, 6]), f32(&[2, 3]), f32(&[])]),
            Err("select-and-scatter: source has dims [2, 3] but the operand's windows give [2, 2]".into())
        );
        assert_eq!(
            inf_in(&m, op(add), &[f32(&[4, 6]), f32(&[2, 2]), f32(&[])]),
            Err("select-and-scatter: select add returns f32[] but must return pred[]".into())
        );
    }

    fn gather_dims(
        offset: &[i64],
        collapsed: &[i64],
        ob: &[i64],
        ib: &[i64],
        map: &[i64],
        ivd: i64,
        sizes: &[i64],
    ) -> Op {
        Op::Gather(Box::new(GatherDims {
            offset_dims: offset.to_vec(),
            collapsed_slice_dims: collapsed.to_vec(),
            operand_batching_dims: ob.to_vec(),
            start_indices_batching_dims: ib.to_vec(),
            start_index_map: map.to_vec(),
            index_vector_dim: ivd,
            slice_sizes: sizes.to_vec(),
            indices_are_sorted: false,
        }))
    }

    #[test]
    fn gather() {
        // Rows of a [3, 4] table picked by 2 indices.
        let rows = gather_dims(&[1], &[0], &[], &[], &[0], 1, &[1, 4]);
        assert_eq!(inf(rows.clone(), &[f32(&[3, 4]), s32(&[2, 1])]), Ok(f32(&[2, 4])));
        // index_vector_dim = rank(indices): an implicit trailing dim of size 1.
        assert_eq!(inf(rows, &[f32(&[3, 4]), s32(&[5])]), Ok(f32(&[5, 4])));
        // Offset dims first, then the batch dims: [4, 2].
        assert_eq!(
            inf(gather_dims(&[0], &[0], &[], &[], &[0], 1, &[1, 4]), &[f32(&[3, 4]), s32(&[2, 1])]),
            Ok(f32(&[4, 2]))
        );
        // Batching: operand dim 0 pairs with indices dim 0: batch [2, 5] then offset [4].
        let batched = gather_dims(&[2], &[1], &[0], &[0], &[1], 2, &[1, 1, 4]);
        assert_eq!(inf(batched, &[f32(&[2, 3, 4]), s32(&[2, 5, 1])]), Ok(f32(&[2, 5, 4])));
        assert_eq!(
            inf(gather_dims(&[1], &[0], &[], &[], &[0], 1, &[2, 4]), &[f32(&[3, 4]), s32(&[2, 1])]),
            Err("gather: slice size of collapsed or batching dim 0 is 2 but must be at most 1".into())
        );
        assert_eq!(
            inf(gather_dims(&[1], &[0], &[], &[], &[0, 1], 1, &[1, 4]), &[f32(&[3, 4]), s32(&[2, 1])]),
            Err("gather: start_index_map has 2 entries but must have 1".into())
        );
        assert_eq!(
            inf(gather_dims(&[1], &[0], &[], &[], &[0], 1, &[1, 4]), &[f32(&[3, 4]), f32(&[2, 1])]),
            Err("gather: indices must be integers, got f32[2,1]".into())
        );
    }

    #[test]
    fn scatter() {
        let mut m = Module::new("t");
        let add = binary_body(&mut m, "add", BinaryOp::Add, F32);
        let op = Op::Scatter(Box::new(ScatterDims {
            update_window_dims: vec![1],
            inserted_window_dims: vec![0],
            input_batching_dims: vec![],
            scatter_indices_batching_dims: vec![],
            scatter_dims_to_operand_dims: vec![0],
            index_vector_dim: 1,
            indices_are_sorted: false,
            unique_indices: false,
            body: add,
        }));
        assert_eq!(inf_in(&m, op.clone(), &[f32(&[3, 4]), s32(&[2, 1]), f32(&[2, 4])]), Ok(f32(&[3, 4])));
        // Update windows may be smaller than the input.
        assert_eq!(inf_in(&m, op.clone(), &[f32(&[3, 4]), s32(&[2, 1]), f32(&[2, 3])]), Ok(f32(&[3, 4])));
        assert_eq!(
            inf_in(&m, op.clone(), &[f32(&[3, 4]), s32(&[2, 1]), f32(&[3, 4])]),
            Err("scatter: update scatter dim 0 has size 3 but the indices give 2".into())
        );
        assert_eq!(
            inf_in(&m, op.clone(), &[f32(&[3, 4]), s32(&[2, 1]), f32(&[2, 5])]),
            Err("scatter: update window dim 1 has size 5 larger than the input's 4".into())
        );
        assert_eq!(
            inf_in(&m, op, &[f32(&[3, 4]), s32(&[2, 1]), s32(&[2, 4])]),
            Err("scatter: update 0 is s32[2,4] but input 0 has element type f32".into())
        );
    }

    #[test]
    fn sort_and_map() {
        let mut m = Module::new("t");
        let lt2 = less_than(&mut m, "lt2", &[F32, S32]);
        let lt1 = less_than(&mut m, "lt1", &[F32]);
        let add = binary_body(&mut m, "add", BinaryOp::Add, F32);
        let sort = |c| Op::Sort { dim: 0, stable: false, comparator: c };
        assert_eq!(inf_in(&m, sort(lt2), &[f32(&[5]), s32(&[5])]), Ok(Type::Tuple(vec![f32(&[5]), s32(&[5])])));
        assert_eq!(inf_in(&m, sort(lt1), &[f32(&[5])]), Ok(f32(&[5])));
        assert_eq!(
            inf_in(&m, sort(lt1), &[f32(&[5]), s32(&[5])]),
            Err("sort: comparator lt1 takes (f32[], f32[]) but must take (f32[], f32[], s32[], s32[])".into())
        );
        assert_eq!(
            inf_in(&m, Op::Sort { dim: 1, stable: false, comparator: lt1 }, &[f32(&[5])]),
            Err("sort: dimension 1 is out of range for rank 1".into())
        );
        let map = |dims: &[i64]| Op::Map { dims: dims.to_vec(), body: add };
        assert_eq!(inf_in(&m, map(&[0, 1]), &[f32(&[2, 3]), f32(&[2, 3])]), Ok(f32(&[2, 3])));
        assert_eq!(
            inf_in(&m, map(&[0]), &[f32(&[2, 3]), f32(&[2, 3])]),
            Err("map: dimensions [0] must be all dims 0..2 in order".into())
        );
        assert_eq!(
            inf_in(&m, map(&[0]), &[s32(&[2]), s32(&[2])]),
            Err("map: body add takes (f32[], f32[]) but must take (s32[], s32[])".into())
        );
    }

    #[test]
    fn tuples_and_control() {
        let pair = Type::Tuple(vec![f32(&[2]), s32(&[])]);
        assert_eq!(inf(Op::Tuple, &[f32(&[2]), s32(&[])]), Ok(pair.clone()));
        assert_eq!(inf(Op::GetTupleElement { index: 1 }, std::slice::from_ref(&pair)), Ok(s32(&[])));
        assert_eq!(
            inf(Op::GetTupleElement { index: 2 }, std::slice::from_ref(&pair)),
            Err("get-tuple-element: index 2 is out of range for a tuple of 2 elements".into())
        );
        assert_eq!(
            inf(Op::GetTupleElement { index: 0 }, &[f32(&[2])]),
            Err("get-tuple-element: operand must be a tuple, got f32[2]".into())
        );
        assert_eq!(inf(Op::OptimizationBarrier, &[f32(&[2])]), Ok(f32(&[2])));
        assert_eq!(inf(Op::OptimizationBarrier, &[f32(&[2]), s32(&[])]), Ok(pair));
        assert_eq!(inf(Op::ReplicaId, &[]), Ok(ty(U32, &[])));
        assert_eq!(inf(Op::AfterAll, &[Type::Token, Type::Token]), Ok(Type::Token));
        assert_eq!(inf(Op::AfterAll, &[f32(&[])]), Err("after-all: operand 0 must be a token, got f32[]".into()));
        // Call and fusion bodies; case with a pred selector needs two branches.
        let mut m = Module::new("t");
        let add = binary_body(&mut m, "add", BinaryOp::Add, F32);
        assert_eq!(inf_in(&m, Op::Fusion { kind: FusionKind::Loop, body: add }, &[f32(&[]), f32(&[])]), Ok(f32(&[])));
        assert_eq!(
            inf_in(
                &m,
                Op::Case { branches: vec![add], branch_operands: vec![vec![0, 1]] },
                &[pred(&[]), f32(&[]), f32(&[])]
            ),
            Err("conditional: a pred selector needs 2 branches, got 1".into())
        );
        assert_eq!(
            inf_in(
                &m,
                Op::Case { branches: vec![add], branch_operands: vec![vec![0, 1]] },
                &[s32(&[]), f32(&[]), f32(&[])]
            ),
            Ok(f32(&[]))
        );
        assert_eq!(
            inf_in(
                &m,
                Op::Case { branches: vec![add], branch_operands: vec![vec![0, 2]] },
                &[s32(&[]), f32(&[]), f32(&[])]
            ),
            Err("conditional: branch 0 operand index 2 is out of range".into())
        );
    }

    #[test]
    fn linalg_and_rng() {
        let ts = |left_side| {
            Op::TriangularSolve(TriangularSolveAttrs {
                left_side,
                lower: true,
                unit_diagonal: false,
                transpose_a: Transpose::NoTranspose,
            })
        };
        assert_eq!(inf(ts(true), &[f32(&[2, 3, 3]), f32(&[2, 3, 5])]), Ok(f32(&[2, 3, 5])));
        assert_eq!(inf(ts(false), &[f32(&[2, 3, 3]), f32(&[2, 5, 3])]), Ok(f32(&[2, 5, 3])));
        assert_eq!(
            inf(ts(false), &[f32(&[2, 3, 3]), f32(&[2, 3, 5])]),
            Err("triangular-solve: a f32[2,3,3] must be square and match b f32[2,3,5] along its last dim".into())
        );
        assert_eq!(
            inf(ts(true), &[f32(&[2, 3, 3]), f32(&[4, 3, 5])]),
            Err("triangular-solve: a f32[2,3,3] and b f32[4,3,5] must have the same batch dims".into())
        );
        assert_eq!(inf(Op::Cholesky { lower: true }, &[f32(&[2, 4, 4])]), Ok(f32(&[2, 4, 4])));
        assert_eq!(
            inf(Op::Cholesky { lower: true }, &[f32(&[3, 4])]),
            Err("cholesky: operand must be square matrices of rank >= 2, got f32[3,4]".into())
        );
        let rng = |d| Op::Rng { distribution: d };
        assert_eq!(chk(rng(RngDistribution::Uniform), &[s32(&[]), s32(&[])], s32(&[3, 3])), Ok(()));
        assert_eq!(
            chk(rng(RngDistribution::Normal), &[s32(&[]), s32(&[])], s32(&[3, 3])),
            Err("rng: a normal distribution needs a float type, got s32".into())
        );
        assert_eq!(
            chk(rng(RngDistribution::Uniform), &[f32(&[]), f32(&[])], s32(&[3])),
            Err("rng: a f32[], b f32[] and the result s32[3] must share one element type".into())
        );
        let rbg = |a| Op::RngBitGenerator { algorithm: a };
        let out = |n| Type::Tuple(vec![ty(U64, &[n]), ty(U32, &[4, 4])]);
        assert_eq!(chk(rbg(RngAlgorithm::ThreeFry), &[ty(U64, &[2])], out(2)), Ok(()));
        assert_eq!(chk(rbg(RngAlgorithm::Philox), &[ty(U64, &[3])], out(3)), Ok(()));
        assert_eq!(
            chk(rbg(RngAlgorithm::ThreeFry), &[ty(U64, &[3])], out(3)),
            Err("rng-bit-generator: THREE_FRY needs a state of 2 elements, got 3".into())
        );
        assert_eq!(
            chk(rbg(RngAlgorithm::Default), &[ty(U64, &[2])], ty(U32, &[4, 4])),
            Err("rng-bit-generator: result u32[4,4] must be (state, output)".into())
        );
    }

    #[test]
    fn constants() {
        let lit = Literal::from_f64s(crate::ir::Shape::new(F32, vec![2]), &[1.0, 2.0]);
        assert_eq!(inf(Op::Constant(lit.clone()), &[]), Ok(f32(&[2])));
        let mut bad = lit;
        bad.shape.dims = smallvec::smallvec![3];
        assert_eq!(
            inf(Op::Constant(bad), &[]),
            Err("constant: literal has 2 elements but its shape f32[3] needs 3".into())
        );
    }
}
