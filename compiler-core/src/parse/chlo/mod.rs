//! CHLO ops decomposed into StableHLO-level instructions.
//!
//! The StableHLO parser calls [`decompose`] for every `chlo.*` op it reads; the
//! instructions it appends to the computation compute the op's results exactly as
//! the CHLO legalization in openxla/stablehlo does (to the accuracy the conformance
//! corpus checks). The files of this folder hold one family each:
//! - `builder.rs`: [`builder::ChloBuilder`], one method per instruction kind;
//! - `special.rs`: lgamma, digamma, polygamma, zeta, erf, erfc, erf_inv, bessel_i1e;
//! - `trig.rs`: tan, sinh, cosh, asin, acos, atan, asinh, acosh, atanh;
//! - `ints.rs`: next_after (bit manipulation) and mulhi;
//! - `structured.rs`: top_k (sort + slice), ragged_dot (masked dots) and scan (a while
//!   loop over slices).
//!
//! This file dispatches on the op name, checks operand counts and types (bad input is
//! an `Err`, never a panic) and handles the `broadcast_*` binary ops and the trivial ops.

mod builder;
mod ints;
mod special;
mod structured;
mod trig;

use crate::ir::{BinaryOp, CmpDir, CmpKind, CompId, ElementType, InstId, Literal, Loc, Module, Shape, Type, UnaryOp};
use builder::ChloBuilder;

/// The attributes CHLO ops carry that the decompositions need.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChloAttrs {
    /// `chlo.top_k`: how many.
    pub k: Option<i64>,
    /// `chlo.top_k`: largest (default true).
    pub largest: Option<bool>,
    /// `chlo.broadcast_*`: `broadcast_dimensions`.
    pub broadcast_dimensions: Option<Vec<i64>>,
    /// `chlo.broadcast_compare`: direction and compare type names (`LT`, `FLOAT`).
    pub comparison_direction: Option<String>,
    pub compare_type: Option<String>,
    /// `chlo.top_k`: `is_stable` (default true).
    pub is_stable: Option<bool>,
    /// `chlo.constant_like` (a scalar, splatted) and `chlo.constant` (the full value).
    pub value: Option<Literal>,
    /// `chlo.ragged_dot`: `ragged_dot_dimension_numbers`.
    pub ragged_dot: Option<RaggedDotDims>,
    /// `chlo.scan`: the body region, lowered to a computation taking (input slices...,
    /// carries...) and returning (output slices..., new carries...) (a tuple when more
    /// than one).
    pub body: Option<CompId>,
    /// `chlo.scan`: how many of the operands are `inits` (the rest are inputs).
    pub num_inits: Option<usize>,
    /// `chlo.scan`: the scanned dimension and `is_reverse`.
    pub dimension: Option<i64>,
    pub is_reverse: Option<bool>,
}

/// `#chlo.ragged_dot<...>` dimension numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RaggedDotDims {
    pub lhs_batching_dimensions: Vec<i64>,
    pub rhs_batching_dimensions: Vec<i64>,
    pub lhs_contracting_dimensions: Vec<i64>,
    pub rhs_contracting_dimensions: Vec<i64>,
    pub lhs_ragged_dimensions: Vec<i64>,
    pub rhs_group_dimensions: Vec<i64>,
}

/// Appends instructions computing `chlo.<name>` to the end of `comp`'s order and
/// returns the result values (one per result type). `name` is without the `chlo.`
/// prefix. An op it does not know gives `Err` with a one-line reason.
pub fn decompose(
    module: &mut Module,
    comp: CompId,
    name: &str,
    operands: &[InstId],
    result_types: &[Type],
    attrs: &ChloAttrs,
    loc: &Loc,
) -> Result<Vec<InstId>, String> {
    if !module.comps.is_valid(comp) {
        return Err(format!("chlo.{name}: computation {comp} does not exist"));
    }
    let mut b = ChloBuilder::new(module, comp, loc.clone());
    let shapes: Vec<Shape> =
        operands.iter().map(|&o| b.shape(o)).collect::<Result<_, _>>().map_err(|e| format!("chlo.{name}: {e}"))?;
    let results: Vec<Shape> = result_types
        .iter()
        .map(|t| {
            t.as_array()
                .map(|s| Shape::new(s.elem, s.dims.clone()))
                .ok_or_else(|| format!("chlo.{name}: result type {t} is not an array"))
        })
        .collect::<Result<_, _>>()?;
    let ctx = Ctx { name, shapes: &shapes, results: &results };

    let out = match name {
        // Unary float functions.
        "lgamma" => unary_float(&mut b, &ctx, operands, special::lgamma)?,
        "digamma" => unary_float(&mut b, &ctx, operands, special::digamma)?,
        // XLA keeps erf as one op (kErf) and expands it only in its backends; so does
        // hloscope, which keeps fusion decisions about it readable and its size honest.
        "erf" => unary_float(&mut b, &ctx, operands, |b, x| Ok(b.unary(UnaryOp::Erf, x)))?,
        "erfc" => unary_float(&mut b, &ctx, operands, special::erfc)?,
        "erf_inv" => unary_float(&mut b, &ctx, operands, special::erf_inv)?,
        "bessel_i1e" => unary_float(&mut b, &ctx, operands, special::bessel_i1e)?,
        "tan" => unary_float(&mut b, &ctx, operands, trig::tan)?,
        "sinh" => unary_float(&mut b, &ctx, operands, trig::sinh)?,
        "cosh" => unary_float(&mut b, &ctx, operands, trig::cosh)?,
        "asin" => unary_float(&mut b, &ctx, operands, trig::asin)?,
        "acos" => unary_float(&mut b, &ctx, operands, trig::acos)?,
        "atan" => unary_float(&mut b, &ctx, operands, trig::atan)?,
        "asinh" => unary_float(&mut b, &ctx, operands, trig::asinh)?,
        "acosh" => unary_float(&mut b, &ctx, operands, trig::acosh)?,
        "atanh" => unary_float(&mut b, &ctx, operands, trig::atanh)?,
        "is_inf" | "is_pos_inf" | "is_neg_inf" => {
            ctx.arity(operands, 1)?;
            ctx.float_operands()?;
            ctx.result(0, &shapes[0].with_elem(ElementType::Pred))?;
            let x = operands[0];
            let inf = b.constant_like(x, f64::INFINITY);
            vec![match name {
                "is_inf" => {
                    let ax = b.abs(x);
                    b.eq(ax, inf)
                }
                "is_pos_inf" => b.eq(x, inf),
                _ => {
                    let ninf = b.neg(inf);
                    b.eq(x, ninf)
                }
            }]
        }
        "square" => {
            ctx.arity(operands, 1)?;
            ctx.result(0, &shapes[0])?;
            if shapes[0].elem.is_pred() {
                return Err(ctx.err("is not defined on i1"));
            }
            vec![b.mul(operands[0], operands[0])]
        }
        // Real inputs only (complex types are rejected by the parsers), so conj is x.
        "conj" => {
            ctx.arity(operands, 1)?;
            ctx.result(0, &shapes[0])?;
            vec![operands[0]]
        }
        "constant_like" => {
            // The operand's shape, the value's element type (converted to the declared
            // result element type when there is one).
            ctx.arity(operands, 1)?;
            let value = attrs.value.as_ref().ok_or_else(|| ctx.err("needs a `value` attribute"))?;
            if value.num_elements() != 1 {
                return Err(ctx.err("`value` must be a scalar"));
            }
            let elem = results.first().map_or(value.elem(), |r| r.elem);
            let s = shapes[0].with_elem(elem);
            ctx.result(0, &s)?;
            vec![b.splat(&s, value.get(0))]
        }
        "constant" => {
            ctx.arity(operands, 0)?;
            let value = attrs.value.as_ref().ok_or_else(|| ctx.err("needs a `value` attribute"))?;
            ctx.result(0, &Shape::new(value.elem(), value.shape.dims.clone()))?;
            let ty = Type::Array(Shape::new(value.elem(), value.shape.dims.clone()));
            vec![b.push("constant", crate::ir::Op::Constant(value.clone()), vec![], ty)]
        }
        "next_after" | "polygamma" | "zeta" => {
            ctx.arity(operands, 2)?;
            ctx.float_operands()?;
            ctx.same_shapes()?;
            ctx.result(0, &shapes[0])?;
            vec![binary_special(&mut b, name, operands[0], operands[1])?]
        }
        "mulhi" => {
            ctx.arity(operands, 2)?;
            ctx.same_shapes()?;
            ctx.result(0, &shapes[0])?;
            if !shapes[0].elem.is_int() {
                return Err(ctx.err(&format!("needs integer operands, got {}", shapes[0].elem)));
            }
            vec![ints::mulhi(&mut b, operands[0], operands[1])?]
        }
        "top_k" => structured::top_k(&mut b, &ctx, operands, attrs)?,
        "ragged_dot" => structured::ragged_dot(&mut b, &ctx, operands, attrs)?,
        "scan" => structured::scan(&mut b, &ctx, operands, attrs)?,
        _ => match name.strip_prefix("broadcast_") {
            Some(op) => vec![broadcast_binary(&mut b, &ctx, op, operands, attrs)?],
            None => return Err(format!("unsupported CHLO op chlo.{name}")),
        },
    };
    Ok(out)
}

/// What every decomposition needs to check its input: the op name (for messages) and
/// the operand and result shapes.
pub(crate) struct Ctx<'a> {
    pub name: &'a str,
    pub shapes: &'a [Shape],
    pub results: &'a [Shape],
}

impl Ctx<'_> {
    pub fn err(&self, msg: &str) -> String {
        format!("chlo.{}: {msg}", self.name)
    }

    pub fn arity(&self, operands: &[InstId], n: usize) -> Result<(), String> {
        if operands.len() != n {
            return Err(self.err(&format!("takes {n} operand(s), got {}", operands.len())));
        }
        Ok(())
    }

    pub fn float_operands(&self) -> Result<(), String> {
        match self.shapes.iter().find(|s| !s.elem.is_float()) {
            Some(s) => Err(self.err(&format!("needs floating-point operands, got {}", s.elem))),
            None => Ok(()),
        }
    }

    pub fn same_shapes(&self) -> Result<(), String> {
        if self.shapes.windows(2).any(|w| !w[0].same_shape(&w[1])) {
            return Err(self.err("operands must have the same type"));
        }
        Ok(())
    }

    /// Checks that result `i` is declared (when declared at all) as `want`.
    pub fn result(&self, i: usize, want: &Shape) -> Result<(), String> {
        match self.results.get(i) {
            Some(got) if !got.same_shape(want) => {
                Err(self.err(&format!("result {i} is declared as {got} but the op computes {want}")))
            }
            _ => Ok(()),
        }
    }
}

fn unary_float(
    b: &mut ChloBuilder,
    ctx: &Ctx,
    operands: &[InstId],
    f: fn(&mut ChloBuilder, InstId) -> Result<InstId, String>,
) -> Result<Vec<InstId>, String> {
    ctx.arity(operands, 1)?;
    ctx.float_operands()?;
    ctx.result(0, &ctx.shapes[0])?;
    Ok(vec![f(b, operands[0])?])
}

/// The binary CHLO ops that are not plain StableHLO ops (their `broadcast_` forms too).
fn binary_special(b: &mut ChloBuilder, name: &str, x: InstId, y: InstId) -> Result<InstId, String> {
    match name {
        "next_after" => ints::next_after(b, x, y),
        "polygamma" => special::polygamma(b, x, y),
        _ => special::zeta(b, x, y),
    }
}

/// `chlo.broadcast_<op>`: broadcast both operands to the result shape (numpy rules, or
/// `broadcast_dimensions` for the lower-rank operand), then the elementwise op.
fn broadcast_binary(
    b: &mut ChloBuilder,
    ctx: &Ctx,
    op: &str,
    operands: &[InstId],
    attrs: &ChloAttrs,
) -> Result<InstId, String> {
    let binary = match op {
        "add" => Some(BinaryOp::Add),
        "subtract" => Some(BinaryOp::Sub),
        "multiply" => Some(BinaryOp::Mul),
        "divide" => Some(BinaryOp::Div),
        "remainder" => Some(BinaryOp::Rem),
        "maximum" => Some(BinaryOp::Max),
        "minimum" => Some(BinaryOp::Min),
        "power" => Some(BinaryOp::Pow),
        "atan2" => Some(BinaryOp::Atan2),
        "and" => Some(BinaryOp::And),
        "or" => Some(BinaryOp::Or),
        "xor" => Some(BinaryOp::Xor),
        "shift_left" => Some(BinaryOp::ShiftLeft),
        "shift_right_arithmetic" => Some(BinaryOp::ShiftRightArithmetic),
        "shift_right_logical" => Some(BinaryOp::ShiftRightLogical),
        "compare" | "next_after" | "polygamma" | "zeta" => None,
        _ => return Err(format!("unsupported CHLO op chlo.{}", ctx.name)),
    };
    ctx.arity(operands, 2)?;
    let (ls, rs) = (&ctx.shapes[0], &ctx.shapes[1]);
    if ls.elem != rs.elem {
        return Err(ctx.err(&format!("operand element types differ ({} vs {})", ls.elem, rs.elem)));
    }
    let dims = broadcast_shape(ls, rs, attrs.broadcast_dimensions.as_deref()).map_err(|e| ctx.err(&e))?;
    let out_elem = if op == "compare" { ElementType::Pred } else { ls.elem };
    ctx.result(0, &Shape::new(out_elem, dims.clone()))?;
    let target = Shape::new(ls.elem, dims);
    let bdims = attrs.broadcast_dimensions.as_deref();
    let lhs = broadcast_to(b, operands[0], ls, &target, bdims, rs.rank()).map_err(|e| ctx.err(&e))?;
    let rhs = broadcast_to(b, operands[1], rs, &target, bdims, ls.rank()).map_err(|e| ctx.err(&e))?;
    match binary {
        Some(op) => {
            let bad = match op {
                BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => ls.elem.is_float(),
                BinaryOp::ShiftLeft | BinaryOp::ShiftRightArithmetic | BinaryOp::ShiftRightLogical => !ls.elem.is_int(),
                BinaryOp::Atan2 => !ls.elem.is_float(),
                _ => ls.elem.is_pred(),
            };
            if bad {
                return Err(ctx.err(&format!("is not defined on {}", ls.elem)));
            }
            Ok(b.binary(op, lhs, rhs))
        }
        None if op == "compare" => {
            let dir_name =
                attrs.comparison_direction.as_deref().ok_or_else(|| ctx.err("needs comparison_direction"))?;
            let dir = CmpDir::from_name(dir_name)
                .ok_or_else(|| ctx.err(&format!("unknown comparison direction {dir_name}")))?;
            let kind = match attrs.compare_type.as_deref() {
                None | Some("NOTYPE") => None,
                Some(k) => Some(CmpKind::from_name(k).ok_or_else(|| ctx.err(&format!("unknown compare type {k}")))?),
            };
            Ok(b.compare_kind(dir, kind, lhs, rhs))
        }
        None => {
            if !ls.elem.is_float() {
                return Err(ctx.err(&format!("needs floating-point operands, got {}", ls.elem)));
            }
            binary_special(b, op, lhs, rhs)
        }
    }
}

/// Where operand `shape`'s dimensions land in a result of rank `rank`: the given
/// `broadcast_dimensions` when the operand has the lower rank, else trailing (numpy).
fn operand_dims(shape: &Shape, rank: usize, bdims: Option<&[i64]>, other_rank: usize) -> Result<Vec<i64>, String> {
    match bdims {
        Some(d) if shape.rank() < other_rank => {
            if d.len() != shape.rank() {
                return Err(format!(
                    "broadcast_dimensions has {} entries for an operand of rank {}",
                    d.len(),
                    shape.rank()
                ));
            }
            if d.iter().any(|&x| x < 0 || x as usize >= rank) || d.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!("broadcast_dimensions {d:?} are not increasing dimensions below {rank}"));
            }
            Ok(d.to_vec())
        }
        _ => Ok(((rank - shape.rank()) as i64..rank as i64).collect()),
    }
}

/// The broadcast result dimensions of two operands.
fn broadcast_shape(l: &Shape, r: &Shape, bdims: Option<&[i64]>) -> Result<Vec<i64>, String> {
    let rank = l.rank().max(r.rank());
    let mut dims = vec![1i64; rank];
    for (s, other) in [(l, r.rank()), (r, l.rank())] {
        let map = operand_dims(s, rank, bdims, other)?;
        for (&d, &to) in s.dims.iter().zip(&map) {
            let cur = &mut dims[to as usize];
            if *cur == 1 {
                *cur = d;
            } else if d != 1 && d != *cur {
                return Err(format!("shapes {l} and {r} are not broadcastable"));
            }
        }
    }
    Ok(dims)
}

/// Broadcasts `x` to `target` (same element type as `x`): size-1 dimensions that grow
/// are reshaped away first, as XLA's broadcast needs exact sizes.
fn broadcast_to(
    b: &mut ChloBuilder,
    x: InstId,
    shape: &Shape,
    target: &Shape,
    bdims: Option<&[i64]>,
    other_rank: usize,
) -> Result<InstId, String> {
    if shape.dims == target.dims {
        return Ok(x);
    }
    let map = operand_dims(shape, target.rank(), bdims, other_rank)?;
    let keep: Vec<usize> = (0..shape.rank()).filter(|&i| shape.dims[i] == target.dims[map[i] as usize]).collect();
    let mut x = x;
    if keep.len() != shape.rank() {
        x = b.reshape(x, keep.iter().map(|&i| shape.dims[i]).collect());
    }
    let dims = keep.iter().map(|&i| map[i]).collect();
    Ok(b.broadcast_in_dim(x, dims, Shape::new(shape.elem, target.dims.clone())))
}
