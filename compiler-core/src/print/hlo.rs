//! XLA HLO-like text printer.
//!
//! Prints a module the way XLA dumps one: computations in post order (callees first,
//! `ENTRY` last), one instruction per line with its `name` as given (never renumbered, so
//! that the text of two pipeline stages diffs small), `ROOT` on the root, shapes with
//! layouts when set, operands as bare `%names`, and attributes spelled as XLA spells
//! them. `parse::hlo::parse` reads the output back to the same module: same structure,
//! ops, attributes, types and constants (floats print as the shortest decimal that reads
//! back to the same value in their type; NaN and infinity as XLA spells them).
//!
//! Two things XLA cannot express get hloscope spellings: a `conditional` whose branches
//! do not each take exactly operand i prints `branch_operands={{..},..}`, and custom-call
//! attributes kept as text print as `name=value`.

use crate::ir::literal::float_bits;
use crate::ir::*;
use cranelift_entity::SecondaryMap;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write};

/// What to include besides the instructions themselves.
#[derive(Clone, Debug)]
pub struct PrintOptions {
    /// `metadata={op_name=... source_file=... source_line=...}` from each `Loc::source`.
    pub metadata: bool,
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions { metadata: true }
    }
}

/// The module as HLO text, with metadata.
pub fn print_module(m: &Module) -> String {
    print_module_with(m, &PrintOptions::default())
}

pub fn print_module_with(m: &Module, opts: &PrintOptions) -> String {
    let order = m.post_order();
    let comp_names = unique_comp_names(m, &order);
    let mut out = String::new();
    let _ = writeln!(out, "HloModule {}", sanitize(&m.name));
    for &c in &order {
        out.push('\n');
        print_computation_into(&mut out, m, c, &comp_names, opts);
    }
    out
}

/// One computation as HLO text (for views that show a single computation).
pub fn print_computation(m: &Module, comp: CompId, opts: &PrintOptions) -> String {
    let order: Vec<CompId> = m.comps.keys().collect();
    let comp_names = unique_comp_names(m, &order);
    let mut out = String::new();
    print_computation_into(&mut out, m, comp, &comp_names, opts);
    out
}

/// Names as the parser reads them back: only `[A-Za-z0-9_.-]`, never empty.
fn sanitize(name: &str) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "_.-".contains(c) { c } else { '_' }).collect();
    if s.is_empty() {
        "unnamed".to_string()
    } else {
        s
    }
}

/// Makes names unique by appending `.dupN` to repeats (only a malformed module has any).
fn dedupe(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = HashSet::new();
    names
        .map(|n| {
            let mut candidate = n.clone();
            let mut k = 1;
            while !seen.insert(candidate.clone()) {
                candidate = format!("{n}.dup{k}");
                k += 1;
            }
            candidate
        })
        .collect()
}

fn unique_comp_names(m: &Module, order: &[CompId]) -> HashMap<CompId, String> {
    let names = dedupe(order.iter().map(|&c| sanitize(&m.comps[c].name)));
    order.iter().copied().zip(names).collect()
}

/// The printed name of each instruction of `comp`: its own name when every name is
/// already valid and unique (always, for a verified module: no copy is made), else the
/// sanitized, deduplicated names.
fn instruction_names(comp: &Computation) -> SecondaryMap<InstId, Cow<'_, str>> {
    let mut names: SecondaryMap<InstId, Cow<'_, str>> = SecondaryMap::new();
    let mut seen: HashSet<&str> = HashSet::with_capacity(comp.order.len());
    let plain = comp.order.iter().all(|&i| {
        let n = comp.insts[i].name.as_str();
        is_sane(n) && seen.insert(n)
    });
    if plain {
        for &i in &comp.order {
            names[i] = Cow::Borrowed(comp.insts[i].name.as_str());
        }
    } else {
        for (&i, n) in comp.order.iter().zip(dedupe(comp.order.iter().map(|&i| sanitize(&comp.insts[i].name)))) {
            names[i] = Cow::Owned(n);
        }
    }
    names
}

/// Whether `sanitize` would leave `name` as it is.
fn is_sane(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || b"_.-".contains(&c))
}

/// The text of the few types last printed: consecutive instructions mostly share a type.
#[derive(Default)]
struct TypeCache<'a> {
    recent: Vec<(&'a Type, String)>,
    next: usize,
}

impl<'a> TypeCache<'a> {
    const SIZE: usize = 8;

    fn push(&mut self, out: &mut String, ty: &'a Type) {
        if let Some((_, text)) = self.recent.iter().find(|(t, _)| *t == ty) {
            out.push_str(text);
            return;
        }
        let text = ty.to_string();
        out.push_str(&text);
        if self.recent.len() < Self::SIZE {
            self.recent.push((ty, text));
        } else {
            self.recent[self.next] = (ty, text);
            self.next = (self.next + 1) % Self::SIZE;
        }
    }
}

fn print_computation_into(
    out: &mut String,
    m: &Module,
    c: CompId,
    comp_names: &HashMap<CompId, String>,
    opts: &PrintOptions,
) {
    let comp = m.comp(c);
    let names = instruction_names(comp);
    let name_of = |id: InstId| -> Cow<'_, str> {
        match names.get(id) {
            Some(n) if !n.is_empty() => Cow::Borrowed(n.as_ref()),
            _ => Cow::Owned(sanitize(&comp.insts[id].name)),
        }
    };
    if c == m.entry {
        out.push_str("ENTRY ");
    }
    let _ = write!(out, "%{} (", comp_names.get(&c).cloned().unwrap_or_else(|| sanitize(&comp.name)));
    for (i, &p) in comp.params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}: {}", name_of(p), type_without_layout(&comp.insts[p].ty));
    }
    let root_ty = if comp.has_root() { type_without_layout(&comp.root_inst().ty) } else { "()".to_string() };
    let _ = writeln!(out, ") -> {root_ty} {{");
    let mut types = TypeCache::default();
    for &id in &comp.order {
        let inst = &comp.insts[id];
        out.push_str("  ");
        if comp.has_root() && id == comp.root {
            out.push_str("ROOT ");
        }
        out.push('%');
        out.push_str(&name_of(id));
        out.push_str(" = ");
        types.push(out, &inst.ty);
        out.push(' ');
        out.push_str(inst.op.hlo_name());
        out.push('(');
        match &inst.op {
            Op::Parameter(n) => {
                let _ = write!(out, "{n}");
            }
            Op::Constant(l) => out.push_str(&literal_text(l)),
            _ => {
                for (k, &o) in inst.operands.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    out.push('%');
                    out.push_str(&name_of(o));
                }
            }
        }
        out.push(')');
        let operand_ty = |k: usize| inst.operands.get(k).map(|&o| &comp.insts[o].ty);
        attributes(out, &inst.op, &operand_ty, comp_names);
        if opts.metadata {
            if let Some(src) = &inst.loc.source {
                out.push_str(", ");
                out.push_str(&metadata(src));
            }
        }
        out.push('\n');
    }
    out.push_str("}\n");
}

/// A type as XLA prints it in computation signatures: no layouts.
fn type_without_layout(t: &Type) -> String {
    match t {
        Type::Array(s) => Shape { layout: None, ..s.clone() }.to_string(),
        Type::Tuple(ts) => format!("({})", ts.iter().map(type_without_layout).collect::<Vec<_>>().join(", ")),
        Type::Token => "token[]".to_string(),
    }
}

/// `{1,2,3}`.
struct List<'a>(&'a [i64]);

impl fmt::Display for List<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, x) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{x}")?;
        }
        f.write_str("}")
    }
}

fn list(v: &[i64]) -> List<'_> {
    List(v)
}

fn xs(v: &[i64]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("x")
}

/// `window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`,
/// fields at their defaults left out, as XLA does.
fn window(size: &[i64], stride: &[i64], pad: &[(i64, i64)], lhs: &[i64], rhs: &[i64], rev: &[bool]) -> String {
    let mut f = vec![format!("size={}", xs(size))];
    if stride.iter().any(|&s| s != 1) {
        f.push(format!("stride={}", xs(stride)));
    }
    if pad.iter().any(|&p| p != (0, 0)) {
        f.push(format!("pad={}", pad.iter().map(|(l, h)| format!("{l}_{h}")).collect::<Vec<_>>().join("x")));
    }
    if lhs.iter().any(|&s| s != 1) {
        f.push(format!("lhs_dilate={}", xs(lhs)));
    }
    if rhs.iter().any(|&s| s != 1) {
        f.push(format!("rhs_dilate={}", xs(rhs)));
    }
    if rev.iter().any(|&r| r) {
        f.push(format!(
            "rhs_reversal={}",
            rev.iter().map(|&r| if r { "1" } else { "0" }).collect::<Vec<_>>().join("x")
        ));
    }
    format!("window={{{}}}", f.join(" "))
}

/// `b01f_01io->b01f`.
fn dim_labels(d: &ConvDims) -> String {
    let labels = |rank: usize, a: (i64, char), b: (i64, char), spatial: &[i64]| -> String {
        let mut s = vec!['?'; rank];
        let mut put = |i: i64, ch: char| {
            if let Some(slot) = usize::try_from(i).ok().and_then(|i| s.get_mut(i)) {
                *slot = ch;
            }
        };
        put(a.0, a.1);
        put(b.0, b.1);
        for (k, &i) in spatial.iter().enumerate() {
            put(i, char::from_digit(k as u32, 10).unwrap_or('?'));
        }
        s.into_iter().collect()
    };
    let n = d.input_spatial.len() + 2;
    format!(
        "dim_labels={}_{}->{}",
        labels(n, (d.input_batch, 'b'), (d.input_feature, 'f'), &d.input_spatial),
        labels(n, (d.kernel_input_feature, 'i'), (d.kernel_output_feature, 'o'), &d.kernel_spatial),
        labels(n, (d.output_batch, 'b'), (d.output_feature, 'f'), &d.output_spatial)
    )
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The attributes after the operand list, in XLA's spelling and order.
/// Each is written as `, name=value` after what `out` holds.
fn attributes<'a>(
    out: &mut String,
    op: &Op,
    operand_ty: &dyn Fn(usize) -> Option<&'a Type>,
    comps: &HashMap<CompId, String>,
) {
    let c = |id: &CompId| CompName(comps.get(id).map(String::as_str).unwrap_or("unknown"));
    let mut a = Attrs(out);
    match op {
        Op::Iota { dim } => a.push_fmt(format_args!("iota_dimension={dim}")),
        Op::Compare { dir, kind } => {
            a.push_fmt(format_args!("direction={}", dir.name()));
            if let Some(k) = kind {
                a.push_fmt(format_args!("type={}", k.name()));
            }
        }
        Op::ReducePrecision { exponent_bits, mantissa_bits } => {
            a.push_fmt(format_args!("exponent_bits={exponent_bits}"));
            a.push_fmt(format_args!("mantissa_bits={mantissa_bits}"));
        }
        Op::BroadcastInDim { dims } | Op::Transpose { perm: dims } | Op::Reverse { dims } => {
            a.push_fmt(format_args!("dimensions={}", list(dims)))
        }
        Op::Slice { start, limit, stride } => {
            let ranges: Vec<String> = (0..start.len())
                .map(|i| {
                    let s = stride.get(i).copied().unwrap_or(1);
                    let l = limit.get(i).copied().unwrap_or(0);
                    if s == 1 {
                        format!("[{}:{l}]", start[i])
                    } else {
                        format!("[{}:{l}:{s}]", start[i])
                    }
                })
                .collect();
            a.push_fmt(format_args!("slice={{{}}}", ranges.join(", ")));
        }
        Op::DynamicSlice { sizes } => a.push_fmt(format_args!("dynamic_slice_sizes={}", list(sizes))),
        Op::Concatenate { dim } => a.push_fmt(format_args!("dimensions={{{dim}}}")),
        Op::Pad { low, high, interior } if !low.is_empty() => {
            let dims: Vec<String> = (0..low.len())
                .map(|i| {
                    let (h, n) = (high.get(i).copied().unwrap_or(0), interior.get(i).copied().unwrap_or(0));
                    if n == 0 {
                        format!("{}_{h}", low[i])
                    } else {
                        format!("{}_{h}_{n}", low[i])
                    }
                })
                .collect();
            a.push_fmt(format_args!("padding={}", dims.join("x")));
        }
        Op::Dot(d) => {
            if !d.lhs_batch.is_empty() {
                a.push_fmt(format_args!("lhs_batch_dims={}", list(&d.lhs_batch)));
            }
            a.push_fmt(format_args!("lhs_contracting_dims={}", list(&d.lhs_contracting)));
            if !d.rhs_batch.is_empty() {
                a.push_fmt(format_args!("rhs_batch_dims={}", list(&d.rhs_batch)));
            }
            a.push_fmt(format_args!("rhs_contracting_dims={}", list(&d.rhs_contracting)));
        }
        Op::Convolution(cv) => {
            if !cv.dims.kernel_spatial.is_empty() {
                let kernel = operand_ty(1).and_then(Type::as_array);
                let size: Vec<i64> = cv
                    .dims
                    .kernel_spatial
                    .iter()
                    .map(|&d| kernel.and_then(|k| k.dims.get(d as usize).copied()).unwrap_or(1))
                    .collect();
                a.push(window(
                    &size,
                    &cv.window_strides,
                    &cv.padding,
                    &cv.lhs_dilation,
                    &cv.rhs_dilation,
                    &cv.window_reversal,
                ));
            }
            a.push(dim_labels(&cv.dims));
            if cv.feature_group_count != 1 {
                a.push_fmt(format_args!("feature_group_count={}", cv.feature_group_count));
            }
            if cv.batch_group_count != 1 {
                a.push_fmt(format_args!("batch_group_count={}", cv.batch_group_count));
            }
        }
        Op::Reduce { dims, body } => {
            a.push_fmt(format_args!("dimensions={}", list(dims)));
            a.push_fmt(format_args!("to_apply={}", c(body)));
        }
        Op::ReduceWindow(w) => {
            if !w.window_dims.is_empty() {
                a.push(window(&w.window_dims, &w.strides, &w.padding, &w.base_dilations, &w.window_dilations, &[]));
            }
            a.push_fmt(format_args!("to_apply={}", c(&w.body)));
        }
        Op::SelectAndScatter(s) => {
            if !s.window_dims.is_empty() {
                a.push(window(&s.window_dims, &s.strides, &s.padding, &[], &[], &[]));
            }
            a.push_fmt(format_args!("select={}", c(&s.select)));
            a.push_fmt(format_args!("scatter={}", c(&s.scatter)));
        }
        Op::Gather(g) => {
            a.push_fmt(format_args!("offset_dims={}", list(&g.offset_dims)));
            a.push_fmt(format_args!("collapsed_slice_dims={}", list(&g.collapsed_slice_dims)));
            a.push_fmt(format_args!("start_index_map={}", list(&g.start_index_map)));
            if !g.operand_batching_dims.is_empty() || !g.start_indices_batching_dims.is_empty() {
                a.push_fmt(format_args!("operand_batching_dims={}", list(&g.operand_batching_dims)));
                a.push_fmt(format_args!("start_indices_batching_dims={}", list(&g.start_indices_batching_dims)));
            }
            a.push_fmt(format_args!("index_vector_dim={}", g.index_vector_dim));
            a.push_fmt(format_args!("slice_sizes={}", list(&g.slice_sizes)));
            if g.indices_are_sorted {
                a.push("indices_are_sorted=true");
            }
        }
        Op::Scatter(s) => {
            a.push_fmt(format_args!("update_window_dims={}", list(&s.update_window_dims)));
            a.push_fmt(format_args!("inserted_window_dims={}", list(&s.inserted_window_dims)));
            a.push_fmt(format_args!("scatter_dims_to_operand_dims={}", list(&s.scatter_dims_to_operand_dims)));
            if !s.input_batching_dims.is_empty() || !s.scatter_indices_batching_dims.is_empty() {
                a.push_fmt(format_args!("input_batching_dims={}", list(&s.input_batching_dims)));
                a.push_fmt(format_args!("scatter_indices_batching_dims={}", list(&s.scatter_indices_batching_dims)));
            }
            a.push_fmt(format_args!("index_vector_dim={}", s.index_vector_dim));
            if s.indices_are_sorted {
                a.push("indices_are_sorted=true");
            }
            if s.unique_indices {
                a.push("unique_indices=true");
            }
            a.push_fmt(format_args!("to_apply={}", c(&s.body)));
        }
        Op::Sort { dim, stable, comparator } => {
            a.push_fmt(format_args!("dimensions={{{dim}}}"));
            if *stable {
                a.push("is_stable=true");
            }
            a.push_fmt(format_args!("to_apply={}", c(comparator)));
        }
        Op::Map { dims, body } => {
            a.push_fmt(format_args!("dimensions={}", list(dims)));
            a.push_fmt(format_args!("to_apply={}", c(body)));
        }
        Op::While { cond, body } => {
            a.push_fmt(format_args!("condition={}", c(cond)));
            a.push_fmt(format_args!("body={}", c(body)));
        }
        Op::Case { branches, branch_operands } => {
            let canonical = branch_operands.iter().enumerate().all(|(i, ops)| ops.as_slice() == [i as u32]);
            let pred = matches!(operand_ty(0), Some(Type::Array(s)) if s.elem == ElementType::Pred);
            if pred && branches.len() == 2 && canonical {
                a.push_fmt(format_args!("true_computation={}", c(&branches[0])));
                a.push_fmt(format_args!("false_computation={}", c(&branches[1])));
            } else {
                a.push_fmt(format_args!(
                    "branch_computations={{{}}}",
                    branches.iter().map(|b| c(b).to_string()).collect::<Vec<_>>().join(", ")
                ));
                if !canonical {
                    let lists: Vec<String> = branch_operands
                        .iter()
                        .map(|l| list(&l.iter().map(|&i| i as i64).collect::<Vec<_>>()).to_string())
                        .collect();
                    a.push_fmt(format_args!("branch_operands={{{}}}", lists.join(",")));
                }
            }
        }
        Op::Call { comp } => a.push_fmt(format_args!("to_apply={}", c(comp))),
        Op::Fusion { kind, body } => {
            a.push_fmt(format_args!("kind={}", kind.hlo_name()));
            a.push_fmt(format_args!("calls={}", c(body)));
        }
        Op::GetTupleElement { index } => a.push_fmt(format_args!("index={index}")),
        Op::RngBitGenerator { algorithm } => a.push_fmt(format_args!(
            "algorithm={}",
            match algorithm {
                RngAlgorithm::Default => "rng_default",
                RngAlgorithm::ThreeFry => "rng_three_fry",
                RngAlgorithm::Philox => "rng_philox",
            }
        )),
        Op::Rng { distribution } => a.push_fmt(format_args!(
            "distribution={}",
            match distribution {
                RngDistribution::Uniform => "rng_uniform",
                RngDistribution::Normal => "rng_normal",
            }
        )),
        Op::TriangularSolve(t) => {
            a.push_fmt(format_args!("left_side={}", t.left_side));
            a.push_fmt(format_args!("lower={}", t.lower));
            a.push_fmt(format_args!("unit_diagonal={}", t.unit_diagonal));
            a.push_fmt(format_args!(
                "transpose_a={}",
                match t.transpose_a {
                    Transpose::NoTranspose => "NO_TRANSPOSE",
                    Transpose::Transpose => "TRANSPOSE",
                    Transpose::Adjoint => "ADJOINT",
                }
            ));
        }
        Op::Cholesky { lower } => a.push_fmt(format_args!("lower={lower}")),
        Op::CustomCall(cc) => {
            a.push_fmt(format_args!("custom_call_target={}", quote(&cc.target)));
            if cc.has_side_effect {
                a.push("custom_call_has_side_effect=true");
            }
            for (k, v) in &cc.attrs {
                a.push_fmt(format_args!("{}={v}", sanitize(k)));
            }
            if !cc.backend_config.is_empty() {
                a.push_fmt(format_args!("backend_config={}", quote(&cc.backend_config)));
            }
        }
        _ => {}
    }
}

/// A computation's name as an attribute value: `%name`.
struct CompName<'a>(&'a str);

impl fmt::Display for CompName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// Appends attributes to the instruction's line.
struct Attrs<'o>(&'o mut String);

impl Attrs<'_> {
    fn push(&mut self, text: impl AsRef<str>) {
        self.0.push_str(", ");
        self.0.push_str(text.as_ref());
    }
    fn push_fmt(&mut self, args: fmt::Arguments<'_>) {
        self.0.push_str(", ");
        let _ = self.0.write_fmt(args);
    }
}

/// `metadata={op_name="..." source_file="..." source_line=N [source_column=M]}` from
/// `op_name @ file:line[:col]` (either part may be missing).
fn metadata(source: &str) -> String {
    let (op_name, place) = match source.rsplit_once(" @ ") {
        Some((o, p)) => (Some(o), Some(p)),
        None if split_place(source).is_some() => (None, Some(source)),
        None => (Some(source), None),
    };
    let mut f = Vec::new();
    if let Some(o) = op_name {
        f.push(format!("op_name={}", quote(o)));
    }
    if let Some(p) = place {
        match split_place(p) {
            Some((file, line, col)) => {
                f.push(format!("source_file={}", quote(file)));
                f.push(format!("source_line={line}"));
                if let Some(c) = col {
                    f.push(format!("source_column={c}"));
                }
            }
            None => f.push(format!("source_file={}", quote(p))),
        }
    }
    format!("metadata={{{}}}", f.join(" "))
}

/// `file.py:12` or `file.py:12:5` -> (file, line, column); `None` for anything else
/// (a file part with spaces, parentheses or quotes reads as an op name).
fn split_place(s: &str) -> Option<(&str, u64, Option<u64>)> {
    let (head, last) = s.rsplit_once(':')?;
    let last: u64 = last.parse().ok()?;
    let (file, line, col) = match head.rsplit_once(':') {
        Some((file, line)) if line.parse::<u64>().is_ok() => (file, line.parse().ok()?, Some(last)),
        _ => (head, last, None),
    };
    if file.is_empty() || file.contains([' ', '(', ')', '"']) {
        return None;
    }
    Some((file, line, col))
}

/// A constant's value: a scalar, or nested braces `{ {1, 2}, {3, 4} }` for arrays.
pub fn literal_text(l: &Literal) -> String {
    let elem = l.shape.elem;
    let scalar = |i: usize| -> String {
        match l.get(i) {
            Scalar::Pred(b) => b.to_string(),
            Scalar::S(v) => v.to_string(),
            Scalar::U(v) => v.to_string(),
            Scalar::F(v) => float_text(elem, v),
        }
    };
    if l.shape.rank() == 0 {
        return if l.num_elements() == 1 { scalar(0) } else { "{}".to_string() };
    }
    fn rec(dims: &[i64], offset: usize, stride: usize, scalar: &dyn Fn(usize) -> String, out: &mut String) {
        let n = dims[0].max(0) as usize;
        if dims.len() == 1 {
            out.push('{');
            for i in 0..n {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&scalar(offset + i));
            }
            out.push('}');
            return;
        }
        let inner = stride / n.max(1);
        out.push_str("{ ");
        for i in 0..n {
            if i > 0 {
                out.push_str(", ");
            }
            rec(&dims[1..], offset + i * inner, inner, scalar, out);
        }
        out.push_str(" }");
    }
    let total: usize = l.shape.dims.iter().map(|&d| d.max(0) as usize).product();
    let mut out = String::new();
    // With a zero dimension, the inner lists are empty: strides would divide by zero.
    let stride = if total == 0 { 0 } else { total };
    rec(&l.shape.dims, 0, stride, &scalar, &mut out);
    out
}

/// A float as the shortest decimal that reads back to the same value of type `elem`;
/// `inf`, `-inf`, `nan`, `-nan`, and `nan(0x...)` for a NaN with a non-default payload.
pub fn float_text(elem: ElementType, v: f64) -> String {
    if v.is_nan() {
        let bits = float_bits(elem, v);
        let mbits = match elem {
            ElementType::F16 => 10,
            ElementType::BF16 => 7,
            ElementType::F32 => 23,
            _ => 52,
        };
        let payload = bits & ((1u64 << mbits) - 1);
        let sign = if bits >> (elem.bit_width() - 1) & 1 == 1 { "-" } else { "" };
        return if payload == 1u64 << (mbits - 1) { format!("{sign}nan") } else { format!("{sign}nan(0x{payload:x})") };
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let a = v.abs();
    let plain = a == 0.0 || (1e-5..1e16).contains(&a);
    match elem {
        ElementType::F64 => {
            if plain {
                format!("{v}")
            } else {
                format!("{v:e}")
            }
        }
        _ => {
            let f = v as f32;
            if plain {
                format!("{f}")
            } else {
                format!("{f:e}")
            }
        }
    }
}
