//! Small helpers shared by the index-walking ops (convolution, gather/scatter, sort,
//! windows, rng, linalg): operand and result access, row-major multi-index stepping,
//! and scalar reads/writes in a literal's carrier.
//!
//! They return `Err` with a reason rather than panicking: the interpreter may be handed
//! modules the verifier has not seen.

use super::Interpreter;
use crate::ir::{
    BinaryOp, CmpDir, CmpKind, CompId, Data, ElementType, InstId, Instruction, Literal, Op, Scalar, Shape, Type, Value,
};

/// Operand `i` as an array.
pub(super) fn array_arg(args: &[Value], i: usize) -> Result<&Literal, String> {
    match args.get(i) {
        Some(Value::Array(l)) => Ok(l),
        Some(v) => Err(format!("operand {i} must be an array, got {v}")),
        None => Err(format!("missing operand {i} (got {})", args.len())),
    }
}

/// The instruction's result shapes: one for an array result, N for a tuple of arrays.
pub(super) fn result_shapes(inst: &Instruction) -> Result<Vec<Shape>, String> {
    match &inst.ty {
        Type::Array(s) => Ok(vec![s.clone()]),
        Type::Tuple(ts) => ts
            .iter()
            .map(|t| t.as_array().cloned().ok_or_else(|| format!("result type {} must hold arrays", inst.ty)))
            .collect(),
        Type::Token => Err("result type must be an array, not a token".into()),
    }
}

/// The single array result shape.
pub(super) fn result_shape(inst: &Instruction) -> Result<Shape, String> {
    inst.ty.as_array().cloned().ok_or_else(|| format!("result type {} must be an array", inst.ty))
}

/// One array, or a tuple of several (the IR's multi-result convention).
pub(super) fn pack(mut results: Vec<Literal>) -> Value {
    if results.len() == 1 {
        Value::Array(results.pop().unwrap())
    } else {
        Value::Tuple(results.into_iter().map(Value::Array).collect())
    }
}

/// Steps `idx` to the next row-major index inside `dims`; false after the last one.
pub(super) fn next_index(idx: &mut [i64], dims: &[i64]) -> bool {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < dims[d] {
            return true;
        }
        idx[d] = 0;
    }
    false
}

/// Row-major offset of `idx` given `strides` (all components must be in bounds).
pub(super) fn offset(idx: &[i64], strides: &[usize]) -> usize {
    idx.iter().zip(strides).map(|(&i, &s)| i as usize * s).sum()
}

/// True when every component of `idx` lies inside `dims`.
pub(super) fn in_bounds(idx: &[i64], dims: &[i64]) -> bool {
    idx.iter().zip(dims).all(|(&i, &d)| i >= 0 && i < d)
}

/// An index element read as i64 (unsigned values above i64::MAX saturate).
pub(super) fn index_value(s: Scalar) -> i64 {
    match s {
        Scalar::U(v) => v.min(i64::MAX as u64) as i64,
        other => other.as_i64(),
    }
}

/// A rank-0 value of `elem` holding `s` (which must be in `elem`'s carrier).
pub(super) fn scalar_value(elem: ElementType, s: Scalar) -> Result<Value, String> {
    let data = match s {
        Scalar::Pred(b) => Data::Pred(vec![b]),
        Scalar::S(v) => Data::S(vec![v]),
        Scalar::U(v) => Data::U(vec![v]),
        Scalar::F(v) => Data::F(vec![v]),
    };
    if std::mem::discriminant(&Data::empty_for(elem)) != std::mem::discriminant(&data) {
        return Err(format!("value {s:?} does not fit element type {elem}"));
    }
    Ok(Value::Array(Literal { shape: Shape::scalar(elem), data }))
}

/// Writes `s` at `i`; the carrier must match.
pub(super) fn set_scalar(data: &mut Data, i: usize, s: Scalar) -> Result<(), String> {
    match (data, s) {
        (Data::Pred(v), Scalar::Pred(x)) => v[i] = x,
        (Data::S(v), Scalar::S(x)) => v[i] = x,
        (Data::U(v), Scalar::U(x)) => v[i] = x,
        (Data::F(v), Scalar::F(x)) => v[i] = x,
        (_, s) => return Err(format!("value {s:?} has the wrong kind for its destination")),
    }
    Ok(())
}

/// Calls a scalar body (reduction, scatter update, comparator) and returns its results
/// as scalars, checking there are `n` of them, each rank 0.
pub(super) fn call_scalars(
    interp: &mut Interpreter,
    comp: CompId,
    args: &[Value],
    n: usize,
) -> Result<Vec<Scalar>, String> {
    let results = interp.call_flat(comp, args)?;
    if results.len() != n {
        return Err(format!("the body returned {} values, expected {n}", results.len()));
    }
    results
        .iter()
        .map(|v| match v {
            Value::Array(l) if l.shape.rank() == 0 => Ok(l.get(0)),
            v => Err(format!("the body must return scalars, got {v}")),
        })
        .collect()
}

/// Checks that every entry of `dims` is a distinct axis below `rank`.
pub(super) fn check_axes(what: &str, dims: &[i64], rank: usize) -> Result<(), String> {
    for (i, &d) in dims.iter().enumerate() {
        if d < 0 || d as usize >= rank {
            return Err(format!("{what}: axis {d} out of range for rank {rank}"));
        }
        if dims[..i].contains(&d) {
            return Err(format!("{what}: axis {d} repeated"));
        }
    }
    Ok(())
}

/// A scalar body (reduction, scatter update, select comparator) ready to apply: either
/// one op of its two parameters, evaluated natively (the common `add`/`max`/`GE` bodies,
/// which dominate the run time of window and scatter ops), or a call of the computation.
pub(super) enum Body {
    /// `op(p[lhs], p[1 - lhs])` on scalars of the element type.
    Binary {
        op: BinaryOp,
        elem: ElementType,
        swapped: bool,
    },
    Compare {
        dir: CmpDir,
        kind: Option<CmpKind>,
        swapped: bool,
    },
    Call {
        comp: CompId,
        elems: Vec<ElementType>,
        results: usize,
    },
}

impl Body {
    /// Inspects `comp`, whose parameters have `elems` (one per parameter), and which
    /// returns `results` scalars.
    pub(super) fn new(interp: &Interpreter, comp: CompId, elems: Vec<ElementType>, results: usize) -> Body {
        let c = interp.module.comp(comp);
        let simple = (|| {
            if elems.len() != 2 || results != 1 || !c.has_root() || c.params.len() != 2 {
                return None;
            }
            let root = c.root_inst();
            let [x, y] = root.operands.as_slice() else { return None };
            let param = |id: InstId| match c.inst(id).op {
                Op::Parameter(p) => Some(p),
                _ => None,
            };
            let swapped = match (param(*x)?, param(*y)?) {
                (0, 1) => false,
                (1, 0) => true,
                _ => return None,
            };
            let scalar_of = |e: ElementType| root.ty.is_scalar_of(e);
            if c.param_types().iter().any(|t| !t.is_scalar_of(elems[0])) || elems[0] != elems[1] {
                return None;
            }
            match root.op {
                Op::Binary(op) if scalar_of(elems[0]) => Some(Body::Binary { op, elem: elems[0], swapped }),
                Op::Compare { dir, kind } if scalar_of(ElementType::Pred) => Some(Body::Compare { dir, kind, swapped }),
                _ => None,
            }
        })();
        simple.unwrap_or(Body::Call { comp, elems, results })
    }

    /// Applies the body to one scalar per parameter.
    pub(super) fn apply(&self, interp: &mut Interpreter, args: &[Scalar]) -> Result<Vec<Scalar>, String> {
        match self {
            Body::Binary { op, elem, swapped } => {
                let (a, b) = if *swapped { (args[1], args[0]) } else { (args[0], args[1]) };
                super::elementwise::binary_scalar(*op, *elem, a, b)
                    .map(|s| vec![s])
                    .ok_or_else(|| format!("{} is not defined on {elem}", op.hlo_name()))
            }
            Body::Compare { dir, kind, swapped } => {
                let (a, b) = if *swapped { (args[1], args[0]) } else { (args[0], args[1]) };
                Ok(vec![Scalar::Pred(super::sort::compare(a, b, *dir, *kind))])
            }
            Body::Call { comp, elems, results } => {
                let values =
                    args.iter().zip(elems).map(|(&s, &e)| scalar_value(e, s)).collect::<Result<Vec<_>, _>>()?;
                call_scalars(interp, *comp, &values, *results)
            }
        }
    }
}

/// Rejects window attributes (strides, paddings, dilations) so large that index
/// arithmetic could overflow; no real program comes near 2^40.
pub(super) fn check_attr_range<'a>(what: &str, values: impl IntoIterator<Item = &'a i64>) -> Result<(), String> {
    const LIMIT: i64 = 1 << 40;
    match values.into_iter().find(|v| !(-LIMIT..=LIMIT).contains(*v)) {
        Some(v) => Err(format!("{what} value {v} is out of the supported range")),
        None => Ok(()),
    }
}
