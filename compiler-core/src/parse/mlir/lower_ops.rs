//! One StableHLO / func / check / chlo op to IR instructions.
//!
//! Attributes are looked up under both their generic name and the name the pretty
//! form uses (`broadcast_dimensions` / `dims`). Ops with several results become one
//! tuple-typed instruction plus GetTupleElements (`Lowerer::emit_multi`).

use super::ast::{Attr, OpAst};
use super::attrs::{attr_i64, attr_i64_list};
use super::dense::dense_to_literal;
use super::lower::{Capture, Lowerer};
use crate::ir::literal::Literal;
use crate::ir::*;
use crate::parse::chlo::{decompose, ChloAttrs};
use crate::parse::ParseError;
use std::collections::HashMap;

type R<T> = Result<T, ParseError>;

/// The elementwise op a StableHLO name (after `stablehlo.`) stands for, if it is one.
/// A table built once: trying each op's name in turn was fifty string compares per op
/// of every program.
fn elementwise_op(short: &str) -> Option<Op> {
    static TABLE: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, Op>> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let unary = UnaryOp::ALL.into_iter().map(|u| (u.stablehlo_name(), Op::Unary(u)));
        let binary = BinaryOp::ALL.into_iter().map(|b| (b.stablehlo_name(), Op::Binary(b)));
        // Unary first: a name both spell keeps the unary op, as the scan did.
        let mut table = rustc_hash::FxHashMap::default();
        for (name, op) in unary.chain(binary) {
            table.entry(name).or_insert(op);
        }
        table
    });
    table.get(short).cloned()
}

impl<'a> Lowerer<'a> {
    // ---- attribute access ------------------------------------------------------

    fn attr<'o>(&self, op: &'o OpAst, names: &[&str]) -> Option<&'o Attr> {
        op.attr(names).map(|e| &e.value)
    }

    fn opt_i64(&self, op: &OpAst, names: &[&str]) -> R<Option<i64>> {
        match self.attr(op, names) {
            None => Ok(None),
            Some(a) => attr_i64(a)
                .map(Some)
                .ok_or_else(|| self.err(op.pos, format!("{}: `{}` must be an integer", op.name, names[0]))),
        }
    }

    fn req_i64(&self, op: &OpAst, names: &[&str]) -> R<i64> {
        self.opt_i64(op, names)?
            .ok_or_else(|| self.err(op.pos, format!("{}: missing attribute `{}`", op.name, names[0])))
    }

    fn opt_list(&self, op: &OpAst, names: &[&str]) -> R<Option<Vec<i64>>> {
        match self.attr(op, names) {
            None => Ok(None),
            Some(a) => attr_i64_list(a)
                .map(Some)
                .ok_or_else(|| self.err(op.pos, format!("{}: `{}` must be a list of integers", op.name, names[0]))),
        }
    }

    fn req_list(&self, op: &OpAst, names: &[&str]) -> R<Vec<i64>> {
        self.opt_list(op, names)?
            .ok_or_else(|| self.err(op.pos, format!("{}: missing attribute `{}`", op.name, names[0])))
    }

    fn opt_bool(&self, op: &OpAst, names: &[&str]) -> R<Option<bool>> {
        match self.attr(op, names) {
            None => Ok(None),
            Some(Attr::Bool(b)) => Ok(Some(*b)),
            Some(Attr::Unit) => Ok(Some(true)),
            Some(_) => Err(self.err(op.pos, format!("{}: `{}` must be true or false", op.name, names[0]))),
        }
    }

    fn opt_enum(&self, op: &OpAst, names: &[&str]) -> Option<String> {
        match self.attr(op, names)? {
            Attr::Enum(s) | Attr::Str(s) => Some(s.clone()),
            _ => None,
        }
    }

    /// Pairs from `[[lo, hi], ...]` or an `Nx2` dense literal.
    fn pairs(&self, op: &OpAst, a: &Attr) -> R<Vec<(i64, i64)>> {
        fn flat(a: &Attr, out: &mut Vec<i64>) -> Option<()> {
            match a {
                Attr::Array(items) => items.iter().try_for_each(|i| flat(i, out)),
                _ => {
                    out.extend(attr_i64_list(a).or_else(|| attr_i64(a).map(|v| vec![v]))?);
                    Some(())
                }
            }
        }
        let mut v = Vec::new();
        if flat(a, &mut v).is_none() || v.len() % 2 != 0 {
            return Err(self.err(op.pos, format!("{}: padding must be pairs of integers", op.name)));
        }
        Ok(v.chunks(2).map(|c| (c[0], c[1])).collect())
    }

    fn fields<'o>(&self, op: &'o OpAst, names: &[&str]) -> R<HashMap<&'o str, &'o Attr>> {
        match self.attr(op, names) {
            Some(Attr::Struct(s)) => Ok(s.1.iter().map(|e| (e.name.as_str(), &e.value)).collect()),
            Some(_) => Err(self.err(op.pos, format!("{}: `{}` has an unexpected form", op.name, names[0]))),
            None => Err(self.err(op.pos, format!("{}: missing attribute `{}`", op.name, names[0]))),
        }
    }

    fn field_list(&self, op: &OpAst, f: &HashMap<&str, &Attr>, name: &str) -> R<Vec<i64>> {
        match f.get(name) {
            None => Ok(vec![]),
            Some(a) => attr_i64_list(a)
                .ok_or_else(|| self.err(op.pos, format!("{}: `{name}` must be a list of integers", op.name))),
        }
    }

    fn field_i64(&self, op: &OpAst, f: &HashMap<&str, &Attr>, name: &str) -> R<i64> {
        match f.get(name) {
            None => Ok(0),
            Some(a) => attr_i64(a).ok_or_else(|| self.err(op.pos, format!("{}: `{name}` must be an integer", op.name))),
        }
    }

    // ---- operand and type helpers ----------------------------------------------

    fn operands_n(&mut self, op: &OpAst, n: usize) -> R<Vec<InstId>> {
        if op.operands.len() != n {
            return Err(self.err(op.pos, format!("{} takes {n} operands, got {}", op.name, op.operands.len())));
        }
        self.resolve_all(&op.operands)
    }

    /// The op's `n` result types as written.
    fn result_types(&self, op: &OpAst, n: usize) -> R<Vec<Type>> {
        if op.result_types.len() == n {
            return Ok(op.result_types.to_vec());
        }
        if n == 1 && !op.spells_operand_types && op.result_types.len() > 1 {
            // `select %p, %a, %b : tensor<i1>, tensor<4xf32>`: the last type is the result's.
            return Ok(op.result_types[op.result_types.len() - 1..].to_vec());
        }
        Err(self.err(op.pos, format!("{}: expected {n} result type(s), found {}", op.name, op.result_types.len())))
    }

    fn result_type(&self, op: &OpAst) -> R<Type> {
        // [`Self::result_types`] for one result, without a vector (most ops take this).
        match &op.result_types[..] {
            [t] => Ok(t.clone()),
            [.., t] if !op.spells_operand_types => Ok(t.clone()),
            _ => self.result_types(op, 1).map(|mut v| v.remove(0)),
        }
    }

    fn shape_of(&self, op: &OpAst, id: InstId) -> R<Shape> {
        match self.ty(id) {
            Type::Array(s) => Ok(s),
            t => Err(self.err(op.pos, format!("{}: expected an array operand, got {t}", op.name))),
        }
    }

    /// Integer values of a constant operand (shape-as-operand ops).
    fn const_ints(&self, op: &OpAst, id: InstId, what: &str) -> R<Vec<i64>> {
        let inst = self.module.comp(self.cur_comp()).inst(id);
        match &inst.op {
            Op::Constant(l) if l.elem().is_int() => Ok((0..l.num_elements()).map(|i| l.get(i).as_i64()).collect()),
            _ => Err(self.err(
                op.pos,
                format!(
                    "{}: the {what} operand must be an integer constant (dynamic shapes are not supported)",
                    op.name
                ),
            )),
        }
    }

    // ---- dispatch --------------------------------------------------------------

    pub fn lower_op(&mut self, op: &OpAst) -> R<()> {
        let vals = self.lower_op_values(op)?;
        self.bind(op, vals)
    }

    fn lower_op_values(&mut self, op: &OpAst) -> R<Vec<InstId>> {
        let loc = self.loc(op.pos, op.loc.as_ref());
        let name = op.name.as_str();
        if let Some(elementwise) = name.strip_prefix("stablehlo.").and_then(elementwise_op) {
            let x = self.operands_n(op, if matches!(elementwise, Op::Unary(_)) { 1 } else { 2 })?;
            let ty = self.result_type(op)?;
            return Ok(vec![self.emit(elementwise, x, ty, &loc)?]);
        }
        if let Some(short) = name.strip_prefix("chlo.") {
            return self.lower_chlo(op, short, &loc);
        }
        if let Some(check) = name.strip_prefix("check.") {
            let (base, is_const) = match check.strip_suffix("_const") {
                Some(b) => (b, true),
                None => (check, false),
            };
            return self.lower_check(op, base, is_const, false, &loc);
        }
        let single = |s: &mut Self, o: Op, operands: Vec<InstId>| -> R<Vec<InstId>> {
            let ty = s.result_type(op)?;
            Ok(vec![s.emit(o, operands, ty, &loc)?])
        };
        match name {
            "stablehlo.constant" => {
                let Some(Attr::Dense(d)) = self.attr(op, &["value"]) else {
                    return Err(self.err(op.pos, "stablehlo.constant: expected a `dense<...>` value"));
                };
                let lit = dense_to_literal(d).map_err(|m| self.err(d.pos, m))?;
                let ty = Type::Array(lit.shape.clone());
                Ok(vec![self.emit(Op::Constant(lit), vec![], ty, &loc)?])
            }
            "stablehlo.iota" => {
                let dim = self.req_i64(op, &["iota_dimension", "dim"])?;
                single(self, Op::Iota { dim }, vec![])
            }
            "stablehlo.compare" => {
                let x = self.operands_n(op, 2)?;
                let d = self.opt_enum(op, &["comparison_direction"]).unwrap_or_default();
                let dir = CmpDir::from_name(&d)
                    .ok_or_else(|| self.err(op.pos, format!("stablehlo.compare: bad direction `{d}`")))?;
                let kind = match self.opt_enum(op, &["compare_type"]) {
                    None => None,
                    Some(k) => Some(
                        CmpKind::from_name(&k)
                            .ok_or_else(|| self.err(op.pos, format!("stablehlo.compare: bad compare type `{k}`")))?,
                    ),
                };
                single(self, Op::Compare { dir, kind }, x)
            }
            "stablehlo.select" => {
                let x = self.operands_n(op, 3)?;
                single(self, Op::Select, x)
            }
            "stablehlo.clamp" => {
                let x = self.operands_n(op, 3)?;
                single(self, Op::Clamp, x)
            }
            "stablehlo.convert" => {
                let x = self.operands_n(op, 1)?;
                single(self, Op::Convert, x)
            }
            "stablehlo.bitcast_convert" => {
                let x = self.operands_n(op, 1)?;
                single(self, Op::BitcastConvert, x)
            }
            "stablehlo.reduce_precision" => {
                let x = self.operands_n(op, 1)?;
                let (e, m) = match self.opt_enum(op, &["format"]) {
                    Some(f) => {
                        let parsed = f
                            .strip_prefix('e')
                            .and_then(|r| r.split_once('m'))
                            .and_then(|(e, m)| Some((e.parse::<u32>().ok()?, m.parse::<u32>().ok()?)));
                        parsed
                            .ok_or_else(|| self.err(op.pos, format!("stablehlo.reduce_precision: bad format `{f}`")))?
                    }
                    None => {
                        let e = self.req_i64(op, &["exponent_bits"])?;
                        let m = self.req_i64(op, &["mantissa_bits"])?;
                        let c = |v: i64| {
                            u32::try_from(v).map_err(|_| self.err(op.pos, "stablehlo.reduce_precision: bad bit count"))
                        };
                        (c(e)?, c(m)?)
                    }
                };
                single(self, Op::ReducePrecision { exponent_bits: e, mantissa_bits: m }, x)
            }
            "stablehlo.broadcast_in_dim" => {
                let x = self.operands_n(op, 1)?;
                let dims = self.req_list(op, &["broadcast_dimensions", "dims"])?;
                single(self, Op::BroadcastInDim { dims }, x)
            }
            "stablehlo.broadcast" => {
                let x = self.operands_n(op, 1)?;
                let sizes = self.req_list(op, &["broadcast_sizes", "sizes"])?;
                let rank = self.shape_of(op, x[0])?.rank() as i64;
                let n = sizes.len() as i64;
                single(self, Op::BroadcastInDim { dims: (n..n + rank).collect() }, x)
            }
            "stablehlo.reshape" => {
                let x = self.operands_n(op, 1)?;
                single(self, Op::Reshape, x)
            }
            "stablehlo.transpose" => {
                let x = self.operands_n(op, 1)?;
                let perm = self.req_list(op, &["permutation", "dims"])?;
                single(self, Op::Transpose { perm }, x)
            }
            "stablehlo.reverse" => {
                let x = self.operands_n(op, 1)?;
                let dims = self.req_list(op, &["dimensions", "dims"])?;
                single(self, Op::Reverse { dims }, x)
            }
            "stablehlo.slice" => {
                let x = self.operands_n(op, 1)?;
                let start = self.req_list(op, &["start_indices"])?;
                let limit = self.req_list(op, &["limit_indices"])?;
                let stride = self.opt_list(op, &["strides"])?.unwrap_or_else(|| vec![1; start.len()]);
                single(self, Op::Slice { start, limit, stride }, x)
            }
            "stablehlo.dynamic_slice" => {
                let x = self.resolve_all(&op.operands)?;
                let sizes = self.req_list(op, &["slice_sizes", "sizes"])?;
                single(self, Op::DynamicSlice { sizes }, x)
            }
            "stablehlo.dynamic_update_slice" => {
                let x = self.resolve_all(&op.operands)?;
                single(self, Op::DynamicUpdateSlice, x)
            }
            "stablehlo.concatenate" => {
                let x = self.resolve_all(&op.operands)?;
                let dim = self.req_i64(op, &["dimension", "dim"])?;
                single(self, Op::Concatenate { dim }, x)
            }
            "stablehlo.pad" => {
                let x = self.operands_n(op, 2)?;
                let low = self.req_list(op, &["edge_padding_low", "low"])?;
                let high = self.req_list(op, &["edge_padding_high", "high"])?;
                let interior =
                    self.opt_list(op, &["interior_padding", "interior"])?.unwrap_or_else(|| vec![0; low.len()]);
                single(self, Op::Pad { low, high, interior }, x)
            }
            "stablehlo.dot_general" => {
                let x = self.operands_n(op, 2)?;
                let dims = self.dot_dims(op)?;
                single(self, Op::Dot(dims), x)
            }
            "stablehlo.dot" => {
                let x = self.operands_n(op, 2)?;
                let rank = self.shape_of(op, x[0])?.rank() as i64;
                let dims = DotDims {
                    lhs_contracting: vec![(rank - 1).max(0)],
                    rhs_contracting: vec![0],
                    ..DotDims::default()
                };
                single(self, Op::Dot(dims), x)
            }
            "stablehlo.convolution" => {
                let x = self.operands_n(op, 2)?;
                let attrs = self.conv_attrs(op, None)?;
                single(self, Op::Convolution(Box::new(attrs)), x)
            }
            "stablehlo.dynamic_conv" => {
                let x = self.operands_n(op, 3)?;
                let pad = self.const_ints(op, x[2], "padding")?;
                let attrs =
                    self.conv_attrs(op, Some(pad.chunks(2).map(|c| (c[0], *c.get(1).unwrap_or(&0))).collect()))?;
                single(self, Op::Convolution(Box::new(attrs)), x[..2].to_vec())
            }
            "stablehlo.reduce" => self.lower_reduce(op, &loc),
            "stablehlo.reduce_window" => self.lower_reduce_window(op, &loc),
            "stablehlo.select_and_scatter" => {
                let x = self.operands_n(op, 3)?;
                let window_dims = self.req_list(op, &["window_dimensions"])?;
                let n = window_dims.len();
                let strides = self.opt_list(op, &["window_strides"])?.unwrap_or_else(|| vec![1; n]);
                let padding = match self.attr(op, &["padding"]) {
                    Some(a) => self.pairs(op, a)?,
                    None => vec![(0, 0); n],
                };
                if op.regions.len() != 2 {
                    return Err(self.err(op.pos, "stablehlo.select_and_scatter needs two regions"));
                }
                let select = self.scalar_region(op, 0)?;
                let scatter = self.scalar_region(op, 1)?;
                single(
                    self,
                    Op::SelectAndScatter(SelectAndScatterAttrs { window_dims, strides, padding, select, scatter }),
                    x,
                )
            }
            "stablehlo.gather" | "stablehlo.dynamic_gather" => {
                let dynamic = name == "stablehlo.dynamic_gather";
                let x = self.operands_n(op, if dynamic { 3 } else { 2 })?;
                let f = self.fields(op, &["dimension_numbers"])?;
                let slice_sizes = if dynamic {
                    self.const_ints(op, x[2], "slice_sizes")?
                } else {
                    self.req_list(op, &["slice_sizes"])?
                };
                let dims = GatherDims {
                    offset_dims: self.field_list(op, &f, "offset_dims")?,
                    collapsed_slice_dims: self.field_list(op, &f, "collapsed_slice_dims")?,
                    operand_batching_dims: self.field_list(op, &f, "operand_batching_dims")?,
                    start_indices_batching_dims: self.field_list(op, &f, "start_indices_batching_dims")?,
                    start_index_map: self.field_list(op, &f, "start_index_map")?,
                    index_vector_dim: self.field_i64(op, &f, "index_vector_dim")?,
                    slice_sizes,
                    indices_are_sorted: self.opt_bool(op, &["indices_are_sorted"])?.unwrap_or(false),
                };
                single(self, Op::Gather(Box::new(dims)), x[..2].to_vec())
            }
            "stablehlo.scatter" => {
                let x = self.resolve_all(&op.operands)?;
                if x.len() < 3 || x.len() % 2 == 0 {
                    return Err(self.err(op.pos, "stablehlo.scatter takes N inputs, the indices and N updates"));
                }
                let n = (x.len() - 1) / 2;
                let f = self.fields(op, &["scatter_dimension_numbers"])?;
                let update_window_dims = self.field_list(op, &f, "update_window_dims")?;
                let inserted_window_dims = self.field_list(op, &f, "inserted_window_dims")?;
                let input_batching_dims = self.field_list(op, &f, "input_batching_dims")?;
                let scatter_indices_batching_dims = self.field_list(op, &f, "scatter_indices_batching_dims")?;
                let scatter_dims_to_operand_dims = self.field_list(op, &f, "scatter_dims_to_operand_dims")?;
                let index_vector_dim = self.field_i64(op, &f, "index_vector_dim")?;
                let body = self.scalar_region(op, 0)?;
                let dims = ScatterDims {
                    update_window_dims,
                    inserted_window_dims,
                    input_batching_dims,
                    scatter_indices_batching_dims,
                    scatter_dims_to_operand_dims,
                    index_vector_dim,
                    indices_are_sorted: self.opt_bool(op, &["indices_are_sorted"])?.unwrap_or(false),
                    unique_indices: self.opt_bool(op, &["unique_indices"])?.unwrap_or(false),
                    body,
                };
                let types = self.result_types(op, n)?;
                self.emit_multi(Op::Scatter(Box::new(dims)), x, types, &loc)
            }
            "stablehlo.sort" => {
                let x = self.resolve_all(&op.operands)?;
                if x.is_empty() {
                    return Err(self.err(op.pos, "stablehlo.sort needs at least one operand"));
                }
                let rank = self.shape_of(op, x[0])?.rank() as i64;
                let mut dim = self.opt_i64(op, &["dimension"])?.unwrap_or(-1);
                if dim < 0 {
                    dim += rank;
                }
                let stable = self.opt_bool(op, &["is_stable"])?.unwrap_or(false);
                let comparator = self.scalar_region(op, 0)?;
                let types = self.result_types(op, x.len())?;
                self.emit_multi(Op::Sort { dim, stable, comparator }, x, types, &loc)
            }
            "stablehlo.map" => {
                let x = self.resolve_all(&op.operands)?;
                let dims = self.req_list(op, &["dimensions"])?;
                let body = self.scalar_region(op, 0)?;
                single(self, Op::Map { dims, body }, x)
            }
            "stablehlo.while" => self.lower_while(op, &loc),
            "stablehlo.case" | "stablehlo.if" => self.lower_case(op, &loc),
            "stablehlo.tuple" => {
                let x = self.resolve_all(&op.operands)?;
                let ty = Type::Tuple(x.iter().map(|&v| self.ty(v)).collect());
                Ok(vec![self.emit(Op::Tuple, x, ty, &loc)?])
            }
            "stablehlo.get_tuple_element" => {
                let x = self.operands_n(op, 1)?;
                let index = self.req_i64(op, &["index"])?;
                let ty = match self.ty(x[0]) {
                    Type::Tuple(ts) => usize::try_from(index).ok().and_then(|i| ts.get(i).cloned()),
                    _ => None,
                };
                let ty = ty.ok_or_else(|| {
                    self.err(op.pos, "stablehlo.get_tuple_element: index out of range or operand is not a tuple")
                })?;
                Ok(vec![self.emit(Op::GetTupleElement { index: index as u32 }, x, ty, &loc)?])
            }
            "stablehlo.optimization_barrier" => {
                let x = self.resolve_all(&op.operands)?;
                let types = x.iter().map(|&v| self.ty(v)).collect();
                self.emit_multi(Op::OptimizationBarrier, x, types, &loc)
            }
            "stablehlo.rng_bit_generator" => {
                let x = self.operands_n(op, 1)?;
                let a = self.opt_enum(op, &["rng_algorithm", "algorithm"]).unwrap_or_else(|| "DEFAULT".into());
                let algorithm = match a.as_str() {
                    "DEFAULT" => RngAlgorithm::Default,
                    "THREE_FRY" => RngAlgorithm::ThreeFry,
                    "PHILOX" => RngAlgorithm::Philox,
                    _ => return Err(self.err(op.pos, format!("stablehlo.rng_bit_generator: unknown algorithm `{a}`"))),
                };
                let types = self.result_types(op, 2)?;
                self.emit_multi(Op::RngBitGenerator { algorithm }, x, types, &loc)
            }
            "stablehlo.rng" => {
                let x = self.operands_n(op, 3)?;
                let d = self.opt_enum(op, &["rng_distribution", "distribution"]).unwrap_or_default();
                let distribution = match d.as_str() {
                    "UNIFORM" => RngDistribution::Uniform,
                    "NORMAL" => RngDistribution::Normal,
                    _ => return Err(self.err(op.pos, format!("stablehlo.rng: unknown distribution `{d}`"))),
                };
                single(self, Op::Rng { distribution }, x[..2].to_vec())
            }
            "stablehlo.triangular_solve" => {
                let x = self.operands_n(op, 2)?;
                let t = self.opt_enum(op, &["transpose_a"]).unwrap_or_else(|| "NO_TRANSPOSE".into());
                let transpose_a = match t.as_str() {
                    "NO_TRANSPOSE" => crate::ir::Transpose::NoTranspose,
                    "TRANSPOSE" => crate::ir::Transpose::Transpose,
                    "ADJOINT" => crate::ir::Transpose::Adjoint,
                    _ => return Err(self.err(op.pos, format!("stablehlo.triangular_solve: bad transpose_a `{t}`"))),
                };
                let attrs = TriangularSolveAttrs {
                    left_side: self.opt_bool(op, &["left_side"])?.unwrap_or(false),
                    lower: self.opt_bool(op, &["lower"])?.unwrap_or(false),
                    unit_diagonal: self.opt_bool(op, &["unit_diagonal"])?.unwrap_or(false),
                    transpose_a,
                };
                single(self, Op::TriangularSolve(attrs), x)
            }
            "stablehlo.cholesky" => {
                let x = self.operands_n(op, 1)?;
                let lower = self.opt_bool(op, &["lower"])?.unwrap_or(false);
                single(self, Op::Cholesky { lower }, x)
            }
            "stablehlo.replica_id" => single(self, Op::ReplicaId, vec![]),
            "stablehlo.partition_id" => single(self, Op::PartitionId, vec![]),
            "stablehlo.after_all" | "stablehlo.create_token" => {
                let x = self.resolve_all(&op.operands)?;
                Ok(vec![self.emit(Op::AfterAll, x, Type::Token, &loc)?])
            }
            "stablehlo.custom_call" => self.lower_custom_call(op, &loc),
            "stablehlo.composite" => {
                let x = self.resolve_all(&op.operands)?;
                let Some(Attr::Symbol(f)) = self.attr(op, &["decomposition"]) else {
                    return Err(self.err(op.pos, "stablehlo.composite: missing `decomposition = @function`"));
                };
                self.inline_call(f, x, op.pos)
            }
            "func.call" | "call" => {
                let x = self.resolve_all(&op.operands)?;
                let callee = match (&op.callee, self.attr(op, &["callee"])) {
                    (Some(c), _) => c.clone(),
                    (None, Some(Attr::Symbol(s))) => s.clone(),
                    _ => return Err(self.err(op.pos, "func.call: missing callee")),
                };
                self.inline_call(&callee, x, op.pos)
            }
            "stablehlo.dynamic_broadcast_in_dim" => {
                let x = self.operands_n(op, 2)?;
                let dims = self.req_list(op, &["broadcast_dimensions", "dims"])?;
                self.check_shape_operand(op, x[1])?;
                single(self, Op::BroadcastInDim { dims }, x[..1].to_vec())
            }
            "stablehlo.dynamic_reshape" => {
                let x = self.operands_n(op, 2)?;
                self.check_shape_operand(op, x[1])?;
                single(self, Op::Reshape, x[..1].to_vec())
            }
            "stablehlo.dynamic_iota" => {
                let x = self.operands_n(op, 1)?;
                self.check_shape_operand(op, x[0])?;
                let dim = self.req_i64(op, &["iota_dimension", "dim"])?;
                single(self, Op::Iota { dim }, vec![])
            }
            "stablehlo.dynamic_pad" => {
                let x = self.operands_n(op, 5)?;
                let low = self.const_ints(op, x[2], "edge_padding_low")?;
                let high = self.const_ints(op, x[3], "edge_padding_high")?;
                let interior = self.const_ints(op, x[4], "interior_padding")?;
                single(self, Op::Pad { low, high, interior }, x[..2].to_vec())
            }
            "stablehlo.get_dimension_size" => {
                let x = self.operands_n(op, 1)?;
                let d = self.req_i64(op, &["dimension", "dim"])?;
                let shape = self.shape_of(op, x[0])?;
                let size = usize::try_from(d).ok().and_then(|d| shape.dims.get(d).copied());
                let size = size.ok_or_else(|| {
                    self.err(op.pos, format!("stablehlo.get_dimension_size: dimension {d} out of range"))
                })?;
                let ty = self.result_type(op)?;
                let elem = ty.as_array().map(|s| s.elem).unwrap_or(ElementType::S32);
                let lit = Literal::scalar_i64(elem, size);
                Ok(vec![self.emit(Op::Constant(lit), vec![], ty, &loc)?])
            }
            "stablehlo.return" | "func.return" | "return" => {
                Err(self.err(op.pos, format!("`{name}` must be the last op of its region")))
            }
            // Collectives, infeed/outfeed, send/recv, `interpreter.*` and anything unknown.
            _ => Err(self.err(op.pos, format!("unsupported op {name}"))),
        }
    }

    /// The result dims must equal the constant shape operand.
    fn check_shape_operand(&self, op: &OpAst, shape: InstId) -> R<()> {
        let want = self.const_ints(op, shape, "shape")?;
        let ty = self.result_type(op)?;
        match ty.as_array() {
            Some(s) if s.dims[..] == want[..] => Ok(()),
            _ => Err(self
                .err(op.pos, format!("{}: shape operand {:?} does not match the result type {}", op.name, want, ty))),
        }
    }

    fn dot_dims(&self, op: &OpAst) -> R<DotDims> {
        if self.attr(op, &["dot_dimension_numbers"]).is_some() {
            let f = self.fields(op, &["dot_dimension_numbers"])?;
            return Ok(DotDims {
                lhs_batch: self.field_list(op, &f, "lhs_batching_dimensions")?,
                rhs_batch: self.field_list(op, &f, "rhs_batching_dimensions")?,
                lhs_contracting: self.field_list(op, &f, "lhs_contracting_dimensions")?,
                rhs_contracting: self.field_list(op, &f, "rhs_contracting_dimensions")?,
            });
        }
        let pair = |names: &[&str]| -> R<(Vec<i64>, Vec<i64>)> {
            match self.attr(op, names) {
                None => Ok((vec![], vec![])),
                Some(Attr::Pair(a, b)) => match (attr_i64_list(a), attr_i64_list(b)) {
                    (Some(a), Some(b)) => Ok((a, b)),
                    _ => Err(self.err(op.pos, format!("stablehlo.dot_general: bad `{}`", names[0]))),
                },
                Some(_) => {
                    Err(self.err(op.pos, format!("stablehlo.dot_general: `{}` must be `[..] x [..]`", names[0])))
                }
            }
        };
        let (lhs_batch, rhs_batch) = pair(&["batching_dims"])?;
        let (lhs_contracting, rhs_contracting) = pair(&["contracting_dims"])?;
        Ok(DotDims { lhs_batch, rhs_batch, lhs_contracting, rhs_contracting })
    }

    fn conv_attrs(&self, op: &OpAst, dyn_padding: Option<Vec<(i64, i64)>>) -> R<ConvAttrs> {
        let dims = match self.attr(op, &["dimension_numbers", "dim_numbers"]) {
            Some(Attr::Conv(d)) => (**d).clone(),
            _ => return Err(self.err(op.pos, format!("{}: missing convolution dimension numbers", op.name))),
        };
        let n = dims.input_spatial.len();
        let window: HashMap<&str, &Attr> = match self.attr(op, &["window"]) {
            Some(Attr::Dict(e)) => e.iter().map(|e| (e.name.as_str(), &e.value)).collect(),
            _ => HashMap::new(),
        };
        let list = |generic: &str, pretty: &str, default: i64| -> R<Vec<i64>> {
            let a = window.get(pretty).copied().or_else(|| self.attr(op, &[generic]));
            match a {
                None => Ok(vec![default; n]),
                Some(a) => attr_i64_list(a)
                    .ok_or_else(|| self.err(op.pos, format!("{}: `{generic}` must be a list of integers", op.name))),
            }
        };
        let window_strides = list("window_strides", "stride", 1)?;
        let lhs_dilation = list("lhs_dilation", "lhs_dilate", 1)?;
        let rhs_dilation = list("rhs_dilation", "rhs_dilate", 1)?;
        let window_reversal = list("window_reversal", "reverse", 0)?.into_iter().map(|v| v != 0).collect();
        let padding = match dyn_padding {
            Some(p) => p,
            None => match window.get("pad").copied().or_else(|| self.attr(op, &["padding"])) {
                Some(a) => self.pairs(op, a)?,
                None => vec![(0, 0); n],
            },
        };
        Ok(ConvAttrs {
            dims,
            window_strides,
            padding,
            lhs_dilation,
            rhs_dilation,
            window_reversal,
            feature_group_count: self.opt_i64(op, &["feature_group_count"])?.unwrap_or(1),
            batch_group_count: self.opt_i64(op, &["batch_group_count"])?.unwrap_or(1),
        })
    }

    /// Region `i` of a reduction-like op: block arguments become parameters; only
    /// constants may be captured.
    fn scalar_region(&mut self, op: &OpAst, i: usize) -> R<CompId> {
        let region = op.regions.get(i).ok_or_else(|| self.err(op.pos, format!("{}: missing region", op.name)))?;
        let out = self.lower_region(region, &op.name, Capture::ConstantsOnly)?;
        let loc = self.loc(region.pos, None);
        self.set_root(out.comp, &out.rets, &loc)?;
        Ok(out.comp)
    }

    fn lower_reduce(&mut self, op: &OpAst, loc: &Loc) -> R<Vec<InstId>> {
        let x = self.resolve_all(&op.operands)?;
        if x.is_empty() || x.len() % 2 != 0 {
            return Err(self.err(op.pos, "stablehlo.reduce takes N inputs and N init values"));
        }
        let n = x.len() / 2;
        let dims = self.req_list(op, &["dimensions"])?;
        let body = match &op.applies {
            Some((body_op, p)) => {
                let short = body_op.strip_prefix("stablehlo.").unwrap_or(body_op);
                let b = BinaryOp::ALL
                    .into_iter()
                    .find(|b| b.stablehlo_name() == short)
                    .ok_or_else(|| self.err(*p, format!("cannot reduce with `{body_op}`")))?;
                let name = self.module.fresh_name("reduce_region");
                let comp = self.module.add_computation(Computation::new(name));
                let init_types: Vec<Type> = x[n..].iter().map(|&v| self.ty(v)).collect();
                let mut params = Vec::new();
                for _ in 0..2 {
                    for t in &init_types {
                        let pname = self.module.fresh_name("param");
                        params.push(self.module.comp_mut(comp).push_param(pname, t.clone(), loc.clone()));
                    }
                }
                let mut rets = Vec::new();
                for (k, t) in init_types.iter().enumerate() {
                    rets.push(self.emit_in(comp, Op::Binary(b), vec![params[k], params[n + k]], t.clone(), loc)?);
                }
                self.set_root(comp, &rets, loc)?;
                comp
            }
            None => self.scalar_region(op, 0)?,
        };
        let types = self.result_types(op, n)?;
        self.emit_multi(Op::Reduce { dims, body }, x, types, loc)
    }

    fn lower_reduce_window(&mut self, op: &OpAst, loc: &Loc) -> R<Vec<InstId>> {
        let x = self.resolve_all(&op.operands)?;
        if x.is_empty() || x.len() % 2 != 0 {
            return Err(self.err(op.pos, "stablehlo.reduce_window takes N inputs and N init values"));
        }
        let window_dims = self.req_list(op, &["window_dimensions"])?;
        let r = window_dims.len();
        let attrs = ReduceWindowAttrs {
            strides: self.opt_list(op, &["window_strides"])?.unwrap_or_else(|| vec![1; r]),
            base_dilations: self.opt_list(op, &["base_dilations"])?.unwrap_or_else(|| vec![1; r]),
            window_dilations: self.opt_list(op, &["window_dilations"])?.unwrap_or_else(|| vec![1; r]),
            padding: match self.attr(op, &["padding"]) {
                Some(a) => self.pairs(op, a)?,
                None => vec![(0, 0); r],
            },
            window_dims,
            body: self.scalar_region(op, 0)?,
        };
        let types = self.result_types(op, x.len() / 2)?;
        self.emit_multi(Op::ReduceWindow(Box::new(attrs)), x, types, loc)
    }

    /// `case`/`if`: values the branches capture become extra operands, listed per
    /// branch in `branch_operands`.
    fn lower_case(&mut self, op: &OpAst, loc: &Loc) -> R<Vec<InstId>> {
        let x = self.operands_n(op, 1)?;
        let nres = op.result_count();
        let types = self.result_types(op, nres)?;
        if op.regions.is_empty() {
            return Err(self.err(op.pos, format!("{} needs at least one branch", op.name)));
        }
        let mut branches = Vec::new();
        let mut captured: Vec<InstId> = Vec::new();
        let mut branch_operands = Vec::new();
        for region in &op.regions {
            if !region.args.is_empty() {
                return Err(self.err(region.pos, format!("{} branches take no arguments", op.name)));
            }
            let out = self.lower_region(region, &op.name, Capture::Params)?;
            if out.rets.len() != nres {
                return Err(self
                    .err(region.pos, format!("branch returns {} values, {} expects {nres}", out.rets.len(), op.name)));
            }
            let rloc = self.loc(region.pos, None);
            self.set_root(out.comp, &out.rets, &rloc)?;
            let mut idx = Vec::new();
            for (outer, _) in &out.captures {
                let k = match captured.iter().position(|c| c == outer) {
                    Some(k) => k,
                    None => {
                        captured.push(*outer);
                        captured.len() - 1
                    }
                };
                idx.push(k as u32);
            }
            branches.push(out.comp);
            branch_operands.push(idx);
        }
        let mut operands = x;
        operands.extend(captured);
        self.emit_multi(Op::Case { branches, branch_operands }, operands, types, loc)
    }

    /// `while`: captured values are appended to the loop state; both regions take
    /// them as parameters and the body passes them through unchanged.
    fn lower_while(&mut self, op: &OpAst, loc: &Loc) -> R<Vec<InstId>> {
        let inits = self.resolve_all(&op.operands)?;
        let n = inits.len();
        if op.regions.len() != 2 {
            return Err(self.err(op.pos, "stablehlo.while needs a cond and a body region"));
        }
        let types = self.result_types(op, n)?;
        for r in &op.regions {
            if r.args.len() != n {
                return Err(
                    self.err(r.pos, format!("while region takes {} arguments for {n} loop values", r.args.len()))
                );
            }
        }
        let cond = self.lower_region(&op.regions[0], &op.name, Capture::Params)?;
        let body = self.lower_region(&op.regions[1], &op.name, Capture::Params)?;
        if cond.rets.len() != 1 {
            return Err(self.err(op.regions[0].pos, "the while condition must return one value"));
        }
        if body.rets.len() != n {
            return Err(self.err(
                op.regions[1].pos,
                format!("the while body returns {} values for {n} loop values", body.rets.len()),
            ));
        }
        let mut extra: Vec<InstId> = Vec::new();
        for (outer, _) in cond.captures.iter().chain(&body.captures) {
            if !extra.contains(outer) {
                extra.push(*outer);
            }
        }
        self.align_params(cond.comp, n, &cond.captures, &extra, loc);
        let body_params = self.align_params(body.comp, n, &body.captures, &extra, loc);
        self.set_root(cond.comp, &cond.rets, loc)?;
        let mut body_rets = body.rets.clone();
        body_rets.extend_from_slice(&body_params[n..]);
        self.set_root(body.comp, &body_rets, loc)?;
        let mut operands = inits;
        operands.extend(extra.iter().copied());
        let w = Op::While { cond: cond.comp, body: body.comp };
        if extra.is_empty() {
            return self.emit_multi(w, operands, types, loc);
        }
        let mut all = types.clone();
        all.extend(extra.iter().map(|&v| self.ty(v)));
        let t = self.emit(w, operands, Type::Tuple(all), loc)?;
        self.unpack(t, &types, loc)
    }

    /// Reorders a region's parameters to (block args, one per `extra` value), adding
    /// unused parameters for values only the other region captured.
    fn align_params(
        &mut self,
        comp: CompId,
        n: usize,
        captures: &[(InstId, InstId)],
        extra: &[InstId],
        loc: &Loc,
    ) -> Vec<InstId> {
        let mut params: Vec<InstId> = self.module.comp(comp).params.iter().take(n).copied().collect();
        for outer in extra {
            let p = match captures.iter().find(|(o, _)| o == outer) {
                Some((_, p)) => *p,
                None => {
                    let ty = self.module.comp(self.cur_comp()).inst(*outer).ty.clone();
                    let name = self.module.fresh_name("param");
                    self.module.comp_mut(comp).push(Instruction {
                        name,
                        op: Op::Parameter(0),
                        operands: vec![],
                        ty,
                        loc: loc.clone(),
                    })
                }
            };
            params.push(p);
        }
        let c = self.module.comp_mut(comp);
        for (i, &p) in params.iter().enumerate() {
            c.inst_mut(p).op = Op::Parameter(i as u32);
        }
        c.params = params.clone();
        params
    }

    fn lower_custom_call(&mut self, op: &OpAst, loc: &Loc) -> R<Vec<InstId>> {
        let target = match (&op.callee, self.attr(op, &["call_target_name"])) {
            (Some(t), _) => t.clone(),
            (None, Some(Attr::Str(s))) | (None, Some(Attr::Symbol(s))) => s.clone(),
            _ => return Err(self.err(op.pos, "stablehlo.custom_call: missing target")),
        };
        if let Some(check) = target.strip_prefix("check.") {
            return self.lower_check(op, check, false, true, loc);
        }
        let x = self.resolve_all(&op.operands)?;
        let has_side_effect = self.opt_bool(op, &["has_side_effect"])?.unwrap_or(false);
        let backend_config = match op.attr(&["backend_config"]) {
            Some(e) => match &e.value {
                Attr::Str(s) => s.clone(),
                _ => e.text.clone(),
            },
            None => String::new(),
        };
        let attrs = op
            .attrs
            .iter()
            .filter(|e| !matches!(e.name.as_str(), "call_target_name" | "has_side_effect" | "backend_config"))
            .map(|e| (e.name.clone(), e.text.clone()))
            .collect();
        let nres = op.result_count();
        let types = self.result_types(op, nres)?;
        let cc = Op::CustomCall(CustomCallAttrs { target, has_side_effect, backend_config, attrs });
        self.emit_multi(cc, x, types, loc)
    }

    /// `check.expect_*` ops and `custom_call @check.expect_*`: a side-effecting custom
    /// call on (actual, expected) with its tolerances made explicit.
    fn lower_check(&mut self, op: &OpAst, base: &str, is_const: bool, custom: bool, loc: &Loc) -> R<Vec<InstId>> {
        let target = match base {
            "expect_eq" | "expect_almost_eq" | "expect_close" => format!("check.{base}"),
            _ => return Err(self.err(op.pos, format!("unsupported op {}", op.name))),
        };
        let mut x = if is_const { self.operands_n(op, 1)? } else { self.operands_n(op, 2)? };
        if is_const {
            let Some(Attr::Dense(d)) = self.attr(op, &["value"]) else {
                return Err(self.err(op.pos, format!("{}: expected a `dense<...>` value", op.name)));
            };
            let lit = dense_to_literal(d).map_err(|m| self.err(d.pos, m))?;
            let ty = Type::Array(lit.shape.clone());
            let dloc = self.loc(d.pos, op.loc.as_ref());
            x.push(self.emit(Op::Constant(lit), vec![], ty, &dloc)?);
        }
        let num = |s: &Self, name: &str| -> R<Option<f64>> {
            match s.attr(op, &[name]) {
                None => Ok(None),
                Some(Attr::Num(n)) => Ok(Some(n.as_f64())),
                Some(_) => Err(s.err(op.pos, format!("{}: `{name}` must be a number", op.name))),
            }
        };
        let mut attrs = Vec::new();
        match base {
            "expect_almost_eq" => {
                // The upstream tool checks the custom-call form at 1e-3 and the check
                // dialect op at its default of 1e-4.
                let tol = num(self, "tolerance")?.unwrap_or(if custom { 1e-3 } else { 1e-4 });
                attrs.push(("tolerance".to_string(), format!("{tol}")));
            }
            "expect_close" => {
                let max = num(self, "max_ulp_difference")?.unwrap_or(3.0);
                let min = num(self, "min_ulp_difference")?.unwrap_or(0.0);
                attrs.push(("max_ulp_difference".to_string(), format!("{max}")));
                attrs.push(("min_ulp_difference".to_string(), format!("{min}")));
            }
            _ => {}
        }
        let cc = CustomCallAttrs { target, has_side_effect: true, backend_config: String::new(), attrs };
        self.emit(Op::CustomCall(cc), x, Type::Tuple(vec![]), loc)?;
        Ok(vec![])
    }

    fn lower_chlo(&mut self, op: &OpAst, short: &str, loc: &Loc) -> R<Vec<InstId>> {
        let x = self.resolve_all(&op.operands)?;
        let nres = op.result_count();
        let types = self.result_types(op, nres)?;
        let attrs = ChloAttrs {
            k: self.opt_i64(op, &["k"])?,
            largest: self.opt_bool(op, &["largest"])?,
            broadcast_dimensions: self.opt_list(op, &["broadcast_dimensions"])?,
            comparison_direction: self.opt_enum(op, &["comparison_direction"]),
            compare_type: self.opt_enum(op, &["compare_type"]),
            is_stable: self.opt_bool(op, &["is_stable"])?,
            ragged_dot: match self.attr(op, &["ragged_dot_dimension_numbers"]) {
                Some(Attr::Struct(s)) => {
                    let entries = &s.1;
                    let dims = |n: &str| {
                        entries.iter().find(|e| e.name == n).and_then(|e| attr_i64_list(&e.value)).unwrap_or_default()
                    };
                    Some(crate::parse::chlo::RaggedDotDims {
                        lhs_batching_dimensions: dims("lhs_batching_dimensions"),
                        rhs_batching_dimensions: dims("rhs_batching_dimensions"),
                        lhs_contracting_dimensions: dims("lhs_contracting_dimensions"),
                        rhs_contracting_dimensions: dims("rhs_contracting_dimensions"),
                        lhs_ragged_dimensions: dims("lhs_ragged_dimensions"),
                        rhs_group_dimensions: dims("rhs_group_dimensions"),
                    })
                }
                _ => None,
            },
            body: if op.regions.is_empty() { None } else { Some(self.scalar_region(op, 0)?) },
            num_inits: self.opt_i64(op, &["num_inits"])?.map(|n| n.max(0) as usize),
            dimension: self.opt_i64(op, &["dimension"])?,
            is_reverse: self.opt_bool(op, &["is_reverse"])?,
            ..Default::default()
        };
        let comp = self.cur_comp();
        let vals =
            decompose(&mut self.module, comp, short, &x, &types, &attrs, loc).map_err(|m| self.err(op.pos, m))?;
        if vals.len() != nres {
            return Err(
                self.err(op.pos, format!("chlo.{short}: decomposition gave {} results, expected {nres}", vals.len()))
            );
        }
        Ok(vals)
    }
}
