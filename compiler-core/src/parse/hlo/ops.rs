//! From an HLO opcode and its attributes to a typed [`Op`].
//!
//! Each attribute is parsed from its own span of the text (see `Cur::sub`), in the
//! mini-languages XLA prints: `{1,0}` lists, `slice={[0:2:1], [1:3]}`,
//! `padding=0_0x1_2_1`, `window={size=3x3 stride=2x2 pad=1_1x1_1 ...}`,
//! `dim_labels=b01f_01io->b01f`, computation references `%name`. An attribute the op
//! does not use is ignored; a missing required one is an error at the opcode.

use super::cursor::{error_at, Cur};
use super::{RawArgs, RawInst};
use crate::ir::*;
use crate::parse::ParseError;
use std::collections::HashMap;

struct Attrs<'t, 'r> {
    text: &'t str,
    inst: &'r RawInst<'t>,
    comps: &'r HashMap<&'t str, CompId>,
}

/// A window as XLA prints it, one entry per window dimension.
struct Window {
    size: Vec<i64>,
    stride: Vec<i64>,
    pad: Vec<(i64, i64)>,
    lhs_dilate: Vec<i64>,
    rhs_dilate: Vec<i64>,
    reversal: Vec<bool>,
}

impl<'t, 'r> Attrs<'t, 'r> {
    fn get(&self, name: &str) -> Option<Cur<'t>> {
        self.inst.attrs.iter().rev().find(|a| a.name == name).map(|a| Cur::sub(self.text, a.start, a.end))
    }

    fn missing(&self, name: &str) -> ParseError {
        error_at(self.text, self.inst.opcode_pos, format!("`{}` needs the attribute `{name}`", self.inst.opcode))
    }

    /// Runs `f` on the attribute's value and checks that it consumed all of it.
    fn parse<T>(
        &self,
        name: &str,
        f: impl FnOnce(&mut Cur<'t>) -> Result<T, ParseError>,
    ) -> Result<Option<T>, ParseError> {
        let Some(mut cur) = self.get(name) else { return Ok(None) };
        let v = f(&mut cur)?;
        cur.ws();
        if !cur.at_end() {
            return Err(cur.err(format!("unexpected {} in attribute `{name}`", cur.describe())));
        }
        Ok(Some(v))
    }

    fn parse_req<T>(&self, name: &str, f: impl FnOnce(&mut Cur<'t>) -> Result<T, ParseError>) -> Result<T, ParseError> {
        self.parse(name, f)?.ok_or_else(|| self.missing(name))
    }

    fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, ParseError> {
        self.parse(name, |c| c.int_list())
    }
    fn ints_or_empty(&self, name: &str) -> Result<Vec<i64>, ParseError> {
        Ok(self.ints(name)?.unwrap_or_default())
    }
    fn ints_req(&self, name: &str) -> Result<Vec<i64>, ParseError> {
        self.parse_req(name, |c| c.int_list())
    }
    fn int(&self, name: &str) -> Result<Option<i64>, ParseError> {
        self.parse(name, |c| c.int())
    }
    fn int_req(&self, name: &str) -> Result<i64, ParseError> {
        self.parse_req(name, |c| c.int())
    }
    fn flag(&self, name: &str) -> Result<bool, ParseError> {
        Ok(self
            .parse(name, |c| {
                let at = c.pos;
                match c.word() {
                    "true" => Ok(true),
                    "false" => Ok(false),
                    w => Err(c.err_at(at, format!("expected true or false, found `{w}`"))),
                }
            })?
            .unwrap_or(false))
    }
    /// The bare word value of an attribute (`LT`, `kLoop`, `rng_three_fry`) and its position.
    fn word(&self, name: &str) -> Result<Option<(&'t str, usize)>, ParseError> {
        self.parse(name, |c| {
            c.ws();
            let at = c.pos;
            Ok((c.word(), at))
        })
    }
    fn comp_ref(&self, c: &mut Cur<'t>) -> Result<CompId, ParseError> {
        c.ws();
        let at = c.pos;
        let name = c.name("a computation name")?;
        self.comps.get(name).copied().ok_or_else(|| c.err_at(at, format!("unknown computation `{name}`")))
    }
    fn comp(&self, name: &str) -> Result<CompId, ParseError> {
        self.parse_req(name, |c| self.comp_ref(c))
    }
    fn comp_list(&self, name: &str) -> Result<Option<Vec<CompId>>, ParseError> {
        self.parse(name, |c| {
            c.expect(b'{')?;
            let mut out = Vec::new();
            if c.eat(b'}') {
                return Ok(out);
            }
            loop {
                out.push(self.comp_ref(c)?);
                if c.eat(b'}') {
                    return Ok(out);
                }
                c.expect(b',')?;
            }
        })
    }

    /// `window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x1}`;
    /// `rank` is used when the attribute or its `size` is absent.
    fn window(&self, rank: usize) -> Result<Window, ParseError> {
        let mut w = Window {
            size: vec![1; rank],
            stride: vec![1; rank],
            pad: vec![(0, 0); rank],
            lhs_dilate: vec![1; rank],
            rhs_dilate: vec![1; rank],
            reversal: vec![false; rank],
        };
        let Some(mut c) = self.get("window") else { return Ok(w) };
        c.expect(b'{')?;
        let mut fields: Vec<(&str, usize, Vec<Vec<i64>>)> = Vec::new();
        while !c.eat(b'}') {
            if c.at_end() {
                return Err(c.err("unterminated window"));
            }
            let at = c.pos;
            let key = c.word();
            if key.is_empty() {
                return Err(c.err(format!("bad window field {}", c.describe())));
            }
            c.expect(b'=')?;
            // `1_1x2_2`: dimensions split by `x`, numbers within one by `_`.
            let mut dims = Vec::new();
            loop {
                let mut nums = vec![c.int()?];
                while c.peek() == Some(b'_') {
                    c.pos += 1;
                    nums.push(c.int()?);
                }
                dims.push(nums);
                if c.peek() == Some(b'x') {
                    c.pos += 1;
                } else {
                    break;
                }
            }
            fields.push((key, at, dims));
        }
        let n = fields.iter().find(|f| f.0 == "size").map_or(rank, |f| f.2.len());
        w = Window {
            size: vec![1; n],
            stride: vec![1; n],
            pad: vec![(0, 0); n],
            lhs_dilate: vec![1; n],
            rhs_dilate: vec![1; n],
            reversal: vec![false; n],
        };
        for (key, at, dims) in fields {
            if dims.len() != n {
                return Err(c.err_at(at, format!("window field `{key}` has {} dimensions, expected {n}", dims.len())));
            }
            let want = if key == "pad" { 2 } else { 1 };
            if dims.iter().any(|d| d.len() != want) {
                return Err(c.err_at(at, format!("bad window field `{key}`")));
            }
            let first: Vec<i64> = dims.iter().map(|d| d[0]).collect();
            match key {
                "size" => w.size = first,
                "stride" => w.stride = first,
                "pad" => w.pad = dims.iter().map(|d| (d[0], d[1])).collect(),
                "lhs_dilate" => w.lhs_dilate = first,
                "rhs_dilate" => w.rhs_dilate = first,
                "rhs_reversal" => w.reversal = first.iter().map(|&v| v != 0).collect(),
                _ => {} // Unknown window fields are ignored.
            }
        }
        Ok(w)
    }
}

/// Builds the op of one raw instruction.
pub(super) fn build_op<'t>(
    text: &'t str,
    ri: &RawInst<'t>,
    comps: &HashMap<&'t str, CompId>,
) -> Result<Op, ParseError> {
    let a = Attrs { text, inst: ri, comps };
    let n_operands = match &ri.args {
        RawArgs::Operands(v) => v.len(),
        _ => 0,
    };
    let at = ri.opcode_pos;
    let bad = |msg: String| error_at(text, at, msg);
    let op = match ri.opcode {
        "parameter" => match ri.args {
            RawArgs::Param(n) if (0..=u32::MAX as i64).contains(&n) => Op::Parameter(n as u32),
            _ => return Err(bad("bad parameter number".into())),
        },
        "constant" => match &ri.args {
            RawArgs::Constant(l) => Op::Constant(l.clone()),
            _ => return Err(bad("bad constant".into())),
        },
        "iota" => Op::Iota { dim: a.int_req("iota_dimension")? },
        "compare" => {
            let (dir, dpos) = a.word("direction")?.ok_or_else(|| a.missing("direction"))?;
            let dir = CmpDir::from_name(dir)
                .ok_or_else(|| error_at(text, dpos, format!("unknown comparison direction `{dir}`")))?;
            let kind = match a.word("type")? {
                None => None,
                Some((k, kpos)) => Some(
                    CmpKind::from_name(k)
                        .ok_or_else(|| error_at(text, kpos, format!("unknown comparison type `{k}`")))?,
                ),
            };
            Op::Compare { dir, kind }
        }
        "select" => Op::Select,
        "clamp" => Op::Clamp,
        "convert" => Op::Convert,
        "bitcast-convert" => Op::BitcastConvert,
        "reduce-precision" => {
            let e = a.int_req("exponent_bits")?;
            let m = a.int_req("mantissa_bits")?;
            if !(1..=255).contains(&e) || !(0..=255).contains(&m) {
                return Err(bad(format!("bad reduce-precision bits {e}/{m}")));
            }
            Op::ReducePrecision { exponent_bits: e as u32, mantissa_bits: m as u32 }
        }
        "broadcast" => Op::BroadcastInDim { dims: a.ints_or_empty("dimensions")? },
        "reshape" => Op::Reshape,
        "bitcast" => Op::Bitcast,
        "copy" => Op::Copy,
        "transpose" => Op::Transpose { perm: a.ints_req("dimensions")? },
        "slice" => {
            let ranges = a.parse_req("slice", slice_ranges)?;
            Op::Slice {
                start: ranges.iter().map(|r| r.0).collect(),
                limit: ranges.iter().map(|r| r.1).collect(),
                stride: ranges.iter().map(|r| r.2).collect(),
            }
        }
        "dynamic-slice" => Op::DynamicSlice { sizes: a.ints_req("dynamic_slice_sizes")? },
        "dynamic-update-slice" => Op::DynamicUpdateSlice,
        "concatenate" => match a.ints_req("dimensions")?.as_slice() {
            [d] => Op::Concatenate { dim: *d },
            _ => return Err(bad("concatenate needs exactly one dimension".into())),
        },
        "pad" => {
            let p = a.parse("padding", padding_config)?.unwrap_or_default();
            Op::Pad {
                low: p.iter().map(|d| d.0).collect(),
                high: p.iter().map(|d| d.1).collect(),
                interior: p.iter().map(|d| d.2).collect(),
            }
        }
        "reverse" => Op::Reverse { dims: a.ints_req("dimensions")? },
        "dot" => Op::Dot(DotDims {
            lhs_batch: a.ints_or_empty("lhs_batch_dims")?,
            rhs_batch: a.ints_or_empty("rhs_batch_dims")?,
            lhs_contracting: a.ints_or_empty("lhs_contracting_dims")?,
            rhs_contracting: a.ints_or_empty("rhs_contracting_dims")?,
        }),
        "convolution" => {
            let dims = a.parse_req("dim_labels", dim_labels)?;
            let w = a.window(dims.input_spatial.len())?;
            if w.size.len() != dims.input_spatial.len() {
                return Err(bad(format!(
                    "window has {} dimensions, dim_labels has {} spatial dimensions",
                    w.size.len(),
                    dims.input_spatial.len()
                )));
            }
            Op::Convolution(Box::new(ConvAttrs {
                dims,
                window_strides: w.stride,
                padding: w.pad,
                lhs_dilation: w.lhs_dilate,
                rhs_dilation: w.rhs_dilate,
                window_reversal: w.reversal,
                feature_group_count: a.int("feature_group_count")?.unwrap_or(1),
                batch_group_count: a.int("batch_group_count")?.unwrap_or(1),
            }))
        }
        "reduce" => Op::Reduce { dims: a.ints_or_empty("dimensions")?, body: a.comp("to_apply")? },
        "reduce-window" => {
            let rank = match &ri.ty {
                Type::Array(s) => s.rank(),
                Type::Tuple(t) => t.first().and_then(Type::as_array).map_or(0, Shape::rank),
                Type::Token => 0,
            };
            let w = a.window(rank)?;
            if w.reversal.iter().any(|&r| r) {
                return Err(bad("reduce-window does not support window reversal".into()));
            }
            Op::ReduceWindow(Box::new(ReduceWindowAttrs {
                window_dims: w.size,
                strides: w.stride,
                base_dilations: w.lhs_dilate,
                window_dilations: w.rhs_dilate,
                padding: w.pad,
                body: a.comp("to_apply")?,
            }))
        }
        "select-and-scatter" => {
            let rank = ri.ty.as_array().map_or(0, Shape::rank);
            let w = a.window(rank)?;
            Op::SelectAndScatter(SelectAndScatterAttrs {
                window_dims: w.size,
                strides: w.stride,
                padding: w.pad,
                select: a.comp("select")?,
                scatter: a.comp("scatter")?,
            })
        }
        "gather" => Op::Gather(Box::new(GatherDims {
            offset_dims: a.ints_or_empty("offset_dims")?,
            collapsed_slice_dims: a.ints_or_empty("collapsed_slice_dims")?,
            operand_batching_dims: a.ints_or_empty("operand_batching_dims")?,
            start_indices_batching_dims: a.ints_or_empty("start_indices_batching_dims")?,
            start_index_map: a.ints_or_empty("start_index_map")?,
            index_vector_dim: a.int_req("index_vector_dim")?,
            slice_sizes: a.ints_req("slice_sizes")?,
            indices_are_sorted: a.flag("indices_are_sorted")?,
        })),
        "scatter" => Op::Scatter(Box::new(ScatterDims {
            update_window_dims: a.ints_or_empty("update_window_dims")?,
            inserted_window_dims: a.ints_or_empty("inserted_window_dims")?,
            input_batching_dims: a.ints_or_empty("input_batching_dims")?,
            scatter_indices_batching_dims: a.ints_or_empty("scatter_indices_batching_dims")?,
            scatter_dims_to_operand_dims: a.ints_or_empty("scatter_dims_to_operand_dims")?,
            index_vector_dim: a.int_req("index_vector_dim")?,
            indices_are_sorted: a.flag("indices_are_sorted")?,
            unique_indices: a.flag("unique_indices")?,
            body: a.comp("to_apply")?,
        })),
        "sort" => match a.ints_req("dimensions")?.as_slice() {
            [d] => Op::Sort { dim: *d, stable: a.flag("is_stable")?, comparator: a.comp("to_apply")? },
            _ => return Err(bad("sort needs exactly one dimension".into())),
        },
        "map" => {
            let dims = match a.ints("dimensions")? {
                Some(d) => d,
                None => (0..ri.ty.as_array().map_or(0, Shape::rank) as i64).collect(),
            };
            Op::Map { dims, body: a.comp("to_apply")? }
        }
        "while" => Op::While { cond: a.comp("condition")?, body: a.comp("body")? },
        "conditional" => {
            let branches = match a.comp_list("branch_computations")? {
                Some(b) => b,
                None => vec![a.comp("true_computation")?, a.comp("false_computation")?],
            };
            if branches.is_empty() {
                return Err(bad("conditional needs at least one branch".into()));
            }
            let branch_operands = match a.parse("branch_operands", branch_operand_lists)? {
                Some(lists) => lists,
                None => (0..branches.len() as u32).map(|i| vec![i]).collect(),
            };
            if branch_operands.len() != branches.len() {
                return Err(bad(format!(
                    "{} branch operand lists for {} branches",
                    branch_operands.len(),
                    branches.len()
                )));
            }
            let max = n_operands.saturating_sub(1) as u32;
            if branch_operands.iter().flatten().any(|&i| i >= max) {
                return Err(bad(format!(
                    "conditional has {} operands after the selector, its branches need more",
                    n_operands.saturating_sub(1)
                )));
            }
            Op::Case { branches, branch_operands }
        }
        "call" => Op::Call { comp: a.comp("to_apply")? },
        "fusion" => {
            let kind = match a.word("kind")? {
                Some((k, _)) => FusionKind::from_hlo_name(k).unwrap_or(FusionKind::Custom),
                None => FusionKind::Loop,
            };
            Op::Fusion { kind, body: a.comp("calls")? }
        }
        "tuple" => Op::Tuple,
        "get-tuple-element" => {
            let i = a.int_req("index")?;
            if !(0..=u32::MAX as i64).contains(&i) {
                return Err(bad(format!("bad tuple index {i}")));
            }
            Op::GetTupleElement { index: i as u32 }
        }
        "opt-barrier" => Op::OptimizationBarrier,
        "rng-bit-generator" => {
            let algorithm = match a.word("algorithm")? {
                None => RngAlgorithm::Default,
                Some(("rng_default", _)) => RngAlgorithm::Default,
                Some(("rng_three_fry", _)) => RngAlgorithm::ThreeFry,
                Some(("rng_philox", _)) => RngAlgorithm::Philox,
                Some((w, p)) => return Err(error_at(text, p, format!("unknown rng algorithm `{w}`"))),
            };
            Op::RngBitGenerator { algorithm }
        }
        "rng" => {
            let distribution = match a.word("distribution")? {
                Some(("rng_uniform", _)) => RngDistribution::Uniform,
                Some(("rng_normal", _)) => RngDistribution::Normal,
                Some((w, p)) => return Err(error_at(text, p, format!("unknown rng distribution `{w}`"))),
                None => return Err(a.missing("distribution")),
            };
            Op::Rng { distribution }
        }
        "triangular-solve" => {
            let opts = options(&a, "triangular_solve_options")?;
            let get = |k: &str| opts.iter().find(|o| o.0 == k).map(|o| o.1.as_str());
            let transpose_a = match get("transpose_a") {
                None | Some("NO_TRANSPOSE") => Transpose::NoTranspose,
                Some("TRANSPOSE") => Transpose::Transpose,
                Some("ADJOINT") => Transpose::Adjoint,
                Some(w) => return Err(bad(format!("unknown transpose_a `{w}`"))),
            };
            Op::TriangularSolve(TriangularSolveAttrs {
                left_side: get("left_side") == Some("true"),
                lower: get("lower") == Some("true"),
                unit_diagonal: get("unit_diagonal") == Some("true"),
                transpose_a,
            })
        }
        "cholesky" => {
            let opts = options(&a, "cholesky_options")?;
            Op::Cholesky { lower: opts.iter().any(|o| o.0 == "lower" && o.1 == "true") }
        }
        "replica-id" => Op::ReplicaId,
        "partition-id" => Op::PartitionId,
        "after-all" => Op::AfterAll,
        "custom-call" => {
            let target = a.parse_req("custom_call_target", |c| c.string())?;
            let backend_config = match a.get("backend_config") {
                None => String::new(),
                Some(mut c) => {
                    c.ws();
                    if c.peek() == Some(b'"') {
                        c.string()?
                    } else {
                        c.rest().to_string()
                    }
                }
            };
            let skip = [
                "custom_call_target",
                "custom_call_has_side_effect",
                "backend_config",
                "metadata",
                "sharding",
                "frontend_attributes",
                "control-predecessors",
            ];
            let attrs = ri
                .attrs
                .iter()
                .filter(|x| !skip.contains(&x.name))
                .map(|x| (x.name.to_string(), text[x.start..x.end].to_string()))
                .collect();
            Op::CustomCall(CustomCallAttrs {
                target,
                has_side_effect: a.flag("custom_call_has_side_effect")?,
                backend_config,
                attrs,
            })
        }
        op => {
            if let Some(u) = UnaryOp::ALL.into_iter().find(|u| u.hlo_name() == op) {
                Op::Unary(u)
            } else if let Some(b) = BinaryOp::ALL.into_iter().find(|b| b.hlo_name() == op) {
                Op::Binary(b)
            } else {
                return Err(bad(format!("unsupported HLO op `{op}`")));
            }
        }
    };
    Ok(op)
}

/// `{[0:2], [1:5:2]}` -> (start, limit, stride) per dimension.
fn slice_ranges(c: &mut Cur) -> Result<Vec<(i64, i64, i64)>, ParseError> {
    c.expect(b'{')?;
    let mut out = Vec::new();
    if c.eat(b'}') {
        return Ok(out);
    }
    loop {
        c.expect(b'[')?;
        let start = c.int()?;
        c.expect(b':')?;
        let limit = c.int()?;
        let stride = if c.eat(b':') { c.int()? } else { 1 };
        c.expect(b']')?;
        out.push((start, limit, stride));
        if c.eat(b'}') {
            return Ok(out);
        }
        c.expect(b',')?;
    }
}

/// `0_0x1_2_1` -> (low, high, interior) per dimension.
fn padding_config(c: &mut Cur) -> Result<Vec<(i64, i64, i64)>, ParseError> {
    let mut out = Vec::new();
    loop {
        let low = c.int()?;
        if c.peek() != Some(b'_') {
            return Err(c.err("expected `_` in padding"));
        }
        c.pos += 1;
        let high = c.int()?;
        let interior = if c.peek() == Some(b'_') {
            c.pos += 1;
            c.int()?
        } else {
            0
        };
        out.push((low, high, interior));
        if c.peek() == Some(b'x') {
            c.pos += 1;
        } else {
            return Ok(out);
        }
    }
}

/// hloscope's own `branch_operands={{0,1},{}}` (printed only when the branches do not
/// each take exactly operand i, which XLA cannot express).
fn branch_operand_lists(c: &mut Cur) -> Result<Vec<Vec<u32>>, ParseError> {
    c.expect(b'{')?;
    let mut out = Vec::new();
    if c.eat(b'}') {
        return Ok(out);
    }
    loop {
        let at = c.pos;
        let list = c.int_list()?;
        if list.iter().any(|&i| !(0..=u32::MAX as i64).contains(&i)) {
            return Err(c.err_at(at, "bad branch operand index"));
        }
        out.push(list.into_iter().map(|i| i as u32).collect());
        if c.eat(b'}') {
            return Ok(out);
        }
        c.expect(b',')?;
    }
}

/// `key=value` options, either as top-level attributes or inside `name={...}`.
fn options(a: &Attrs, group: &str) -> Result<Vec<(String, String)>, ParseError> {
    let mut out: Vec<(String, String)> =
        a.inst.attrs.iter().map(|x| (x.name.to_string(), a.text[x.start..x.end].trim().to_string())).collect();
    if let Some(mut c) = a.get(group) {
        c.expect(b'{')?;
        while !c.eat(b'}') {
            if c.at_end() {
                return Err(c.err(format!("unterminated `{group}`")));
            }
            let key = c.word();
            c.expect(b'=')?;
            c.ws();
            let value = c.word();
            if key.is_empty() || value.is_empty() {
                return Err(c.err(format!("bad `{group}` entry")));
            }
            out.push((key.to_string(), value.to_string()));
            c.eat(b',');
        }
    }
    Ok(out)
}

/// `b01f_01io->b01f`: which dimension of each operand is batch, feature, spatial i.
fn dim_labels(c: &mut Cur) -> Result<ConvDims, ParseError> {
    c.ws();
    let at = c.pos;
    let s = c.rest();
    let bad = |msg: &str| c.err_at(at, format!("bad dim_labels `{s}`: {msg}"));
    let (ins, out) = s.split_once("->").ok_or_else(|| bad("expected `->`"))?;
    let (lhs, rhs) = ins.split_once('_').ok_or_else(|| bad("expected `_`"))?;
    let n = lhs.len().checked_sub(2).ok_or_else(|| bad("too short"))?;
    if rhs.len() != n + 2 || out.len() != n + 2 || n > 10 {
        return Err(bad("operands have different ranks"));
    }
    // Position of label `ch` in `labels`, exactly once.
    let pos = |labels: &str, ch: char| -> Result<i64, ParseError> {
        let hits: Vec<usize> = labels.char_indices().filter(|&(_, x)| x == ch).map(|(i, _)| i).collect();
        match hits.as_slice() {
            [i] => Ok(*i as i64),
            _ => Err(bad(&format!("`{ch}` must appear once in `{labels}`"))),
        }
    };
    let spatial = |labels: &str| -> Result<Vec<i64>, ParseError> {
        (0..n).map(|k| pos(labels, char::from_digit(k as u32, 10).unwrap_or('?'))).collect()
    };
    let dims = ConvDims {
        input_batch: pos(lhs, 'b')?,
        input_feature: pos(lhs, 'f')?,
        input_spatial: spatial(lhs)?,
        kernel_input_feature: pos(rhs, 'i')?,
        kernel_output_feature: pos(rhs, 'o')?,
        kernel_spatial: spatial(rhs)?,
        output_batch: pos(out, 'b')?,
        output_feature: pos(out, 'f')?,
        output_spatial: spatial(out)?,
    };
    c.pos = c.end;
    Ok(dims)
}
