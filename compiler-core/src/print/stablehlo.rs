//! StableHLO (MLIR text) printer.
//!
//! Prints a module as the StableHLO that `mlir-opt`/`stablehlo-opt` and JAX's MLIR
//! bindings accept: `module @name { func.func public @main(...) -> ... { ... } }`.
//! Elementwise ops whose operands and result share one type use the pretty form
//! (`%add.3 = stablehlo.add %a, %b : tensor<4xf32>`), constants print as
//! `stablehlo.constant dense<...>`, and everything else uses the generic form
//! (`"stablehlo.reduce"(...) <{...}> ({ ^bb0(...): ... }) : (...) -> ...`), which is
//! always valid. SSA names are the instructions' names, so the text stays recognizable
//! next to the HLO view.
//!
//! How the IR maps where XLA and StableHLO differ:
//! - Tuples: multi-result ops print with several results (`%w:2 = ...`, used as
//!   `%w#1`); a `get-tuple-element` of such a value, or of a `tuple` instruction, just
//!   refers to the element and prints nothing. Only tuple values that really exist as
//!   values (a tuple-typed function parameter, a tuple passed to a call) go through
//!   `stablehlo.tuple` / `stablehlo.get_tuple_element`.
//! - `while` and `conditional`: the loop-carried values are flattened to their array
//!   leaves (XLA's single tuple operand becomes N operands). Branches of a
//!   `conditional` read their operands from the enclosing scope (StableHLO case regions
//!   take no arguments); a pred selector with two branches prints as `stablehlo.if`.
//! - Reduction bodies, comparators, scatter/select bodies and map bodies are inlined as
//!   regions whose block arguments are rank-0 tensors.
//! - `fusion` and `call`: the called computation becomes a private function and the
//!   instruction a `func.call` to it. This keeps fusion boundaries visible (a reader sees
//!   one call per kernel) and MLIR tools inline it if asked.
//! - `bitcast` becomes `stablehlo.reshape` when both layouts are the default, else a
//!   transpose to physical order, a reshape, and a transpose back. `copy` only changes
//!   layouts, which StableHLO does not have, so it prints nothing and its users read the
//!   operand.
//! - `erf` prints as `chlo.erf` (StableHLO has none).
//! - Layouts and source locations are not printed.

use crate::ir::literal::float_bits;
use crate::ir::*;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// The module as StableHLO text.
pub fn print_module(m: &Module) -> String {
    let mut p = Printer { m, out: String::new(), funcs: HashMap::new() };
    p.module();
    p.out
}

/// A printed value: one SSA value, or a tuple whose elements are separate values.
#[derive(Clone)]
enum Val {
    One(String, Type),
    Many(Vec<Val>),
}

impl Val {
    fn ty(&self) -> Type {
        match self {
            Val::One(_, t) => t.clone(),
            Val::Many(vs) => Type::Tuple(vs.iter().map(Val::ty).collect()),
        }
    }
}

struct Printer<'m> {
    m: &'m Module,
    out: String,
    /// Computations printed as private functions, by symbol name.
    funcs: HashMap<CompId, String>,
}

/// Per-function state: SSA names in use and the current indentation.
struct FnState {
    used: HashSet<String>,
    indent: usize,
}

impl FnState {
    /// A fresh SSA name (with `%`) based on `base`, unique in the function.
    fn fresh(&mut self, base: &str) -> String {
        let mut s: String =
            base.chars().map(|c| if c.is_ascii_alphanumeric() || "_$.-".contains(c) { c } else { '_' }).collect();
        if s.is_empty() {
            s = "v".into();
        }
        // A name starting with a digit must be all digits.
        if s.starts_with(|c: char| c.is_ascii_digit()) && !s.chars().all(|c| c.is_ascii_digit()) {
            s = format!("v{s}");
        }
        let mut candidate = s.clone();
        let mut k = 1;
        while !self.used.insert(candidate.clone()) {
            candidate = format!("{s}_{k}");
            k += 1;
        }
        format!("%{candidate}")
    }
}

/// An MLIR symbol name: `[A-Za-z_][A-Za-z0-9_$.]*`.
fn symbol(name: &str) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "_$.".contains(c) { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit() || c == '$' || c == '.') {
        format!("_{s}")
    } else {
        s
    }
}

/// `tensor<2x3xf32>`, `tensor<f32>`, `tuple<...>`, `!stablehlo.token`.
pub fn type_text(t: &Type) -> String {
    match t {
        Type::Array(s) => {
            let mut out = String::from("tensor<");
            for d in &s.dims {
                let _ = write!(out, "{d}x");
            }
            out.push_str(s.elem.mlir_name());
            out.push('>');
            out
        }
        Type::Tuple(ts) => format!("tuple<{}>", ts.iter().map(type_text).collect::<Vec<_>>().join(", ")),
        Type::Token => "!stablehlo.token".into(),
    }
}

/// The array leaves of a type, tuples flattened depth-first.
fn leaf_types(t: &Type) -> Vec<Type> {
    match t {
        Type::Tuple(ts) => ts.iter().flat_map(leaf_types).collect(),
        t => vec![t.clone()],
    }
}

/// Rebuilds a value of type `t` from its leaves.
fn unflatten(t: &Type, leaves: &mut impl Iterator<Item = (String, Type)>) -> Val {
    match t {
        Type::Tuple(ts) => Val::Many(ts.iter().map(|t| unflatten(t, leaves)).collect()),
        t => {
            let (name, ty) = leaves.next().unwrap_or_else(|| ("%missing".into(), t.clone()));
            Val::One(name, ty)
        }
    }
}

fn types_list(ts: &[Type]) -> String {
    ts.iter().map(type_text).collect::<Vec<_>>().join(", ")
}

/// `(a, b) -> (c, d)` as MLIR function types print (a single result without parens).
fn fn_type(ins: &[Type], outs: &[Type]) -> String {
    let res = if outs.len() == 1 { type_text(&outs[0]) } else { format!("({})", types_list(outs)) };
    format!("({}) -> {res}", types_list(ins))
}

fn i64_array(v: &[i64]) -> String {
    if v.is_empty() {
        "array<i64>".into()
    } else {
        format!("array<i64: {}>", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
    }
}

fn bool_array(v: &[bool]) -> String {
    if v.is_empty() {
        "array<i1>".into()
    } else {
        format!("array<i1: {}>", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
    }
}

fn int_list(v: &[i64]) -> String {
    format!("[{}]", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
}

/// `dense<[[lo, hi], ...]> : tensor<Nx2xi64>`.
fn padding_attr(p: &[(i64, i64)]) -> String {
    if p.is_empty() {
        return "dense<> : tensor<0x2xi64>".into();
    }
    let rows: Vec<String> = p.iter().map(|(l, h)| format!("[{l}, {h}]")).collect();
    format!("dense<[{}]> : tensor<{}x2xi64>", rows.join(", "), p.len())
}

/// A float as an MLIR literal: shortest round-trip decimal with a `.`, or the bit
/// pattern in hex for NaN and infinities.
fn mlir_float(elem: ElementType, v: f64) -> String {
    if !v.is_finite() {
        let digits = elem.bit_width() as usize / 4;
        return format!("0x{:0digits$X}", float_bits(elem, v));
    }
    let a = v.abs();
    let plain = a == 0.0 || (1e-5..1e16).contains(&a);
    let s = match (elem, plain) {
        (ElementType::F64, true) => format!("{v}"),
        (ElementType::F64, false) => format!("{v:e}"),
        (_, true) => format!("{}", v as f32),
        (_, false) => format!("{:e}", v as f32),
    };
    // MLIR needs a `.` in the mantissa: `1` -> `1.0`, `1e-7` -> `1.0e-7`.
    if s.contains('.') {
        s
    } else if let Some(i) = s.find('e') {
        format!("{}.0{}", &s[..i], &s[i..])
    } else {
        format!("{s}.0")
    }
}

/// `dense<...>` of a literal (a splat when all elements are equal).
fn dense(l: &Literal) -> String {
    let elem = l.shape.elem;
    let el = |i: usize| -> String {
        match l.get(i) {
            Scalar::Pred(b) => b.to_string(),
            Scalar::S(v) => v.to_string(),
            Scalar::U(v) => v.to_string(),
            Scalar::F(v) => mlir_float(elem, v),
        }
    };
    let n = l.num_elements();
    if n == 0 {
        return "dense<>".into();
    }
    if (1..n).all(|i| l.bits(i) == l.bits(0)) {
        return format!("dense<{}>", el(0));
    }
    fn rec(dims: &[i64], offset: usize, el: &dyn Fn(usize) -> String, out: &mut String) {
        let n = dims[0] as usize;
        let inner: usize = dims[1..].iter().map(|&d| d as usize).product();
        out.push('[');
        for i in 0..n {
            if i > 0 {
                out.push_str(", ");
            }
            if dims.len() == 1 {
                out.push_str(&el(offset + i));
            } else {
                rec(&dims[1..], offset + i * inner, el, out);
            }
        }
        out.push(']');
    }
    let mut out = String::from("dense<");
    rec(&l.shape.dims, 0, &el, &mut out);
    out.push('>');
    out
}

/// Custom-call attributes kept as text that read as MLIR attributes (numbers, strings,
/// `dense<>`/`array<>`/`#dialect` values); HLO-only spellings are left out.
fn mlir_like(value: &str) -> bool {
    let v = value.trim();
    let head = v.split(':').next().unwrap_or("").trim();
    v.starts_with('"')
        || v.starts_with("dense<")
        || v.starts_with("array<")
        || v.starts_with('#')
        || v == "true"
        || v == "false"
        || (!head.is_empty() && head.parse::<f64>().is_ok())
}

impl<'m> Printer<'m> {
    fn module(&mut self) {
        let m = self.m;
        let order = m.post_order();
        // Computations called by fusion/call become private functions.
        let mut used: HashSet<String> = HashSet::from(["main".to_string()]);
        for &c in &order {
            for &i in &m.comps[c].order {
                if let Op::Fusion { body: callee, .. } | Op::Call { comp: callee } = m.comps[c].insts[i].op {
                    self.funcs.entry(callee).or_insert_with(|| {
                        let base = symbol(&m.comps[callee].name);
                        let mut name = base.clone();
                        let mut k = 1;
                        while !used.insert(name.clone()) {
                            name = format!("{base}_{k}");
                            k += 1;
                        }
                        name
                    });
                }
            }
        }
        let _ = writeln!(self.out, "module @{} {{", symbol(&m.name));
        for &c in &order {
            if let Some(name) = self.funcs.get(&c).cloned() {
                self.function(c, &name, "private");
            }
        }
        if m.comps.get(m.entry).is_some() {
            self.function(m.entry, "main", "public");
        }
        self.out.push_str("}\n");
    }

    fn line(&mut self, f: &FnState, s: &str) {
        for _ in 0..f.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn function(&mut self, c: CompId, name: &str, visibility: &str) {
        let comp = &self.m.comps[c];
        let mut f = FnState { used: HashSet::new(), indent: 2 };
        let mut params = Vec::new();
        let mut sig = Vec::new();
        for &p in &comp.params {
            let inst = &comp.insts[p];
            let n = f.fresh(&inst.name);
            sig.push(format!("{n}: {}", type_text(&inst.ty)));
            params.push(Val::One(n, inst.ty.clone()));
        }
        // The header goes before the body, whose result types are known only after.
        let header_at = self.out.len();
        let root = self.body(&mut f, c, params);
        let leaves = self.flatten(&mut f, &root);
        let types: Vec<Type> = leaves.iter().map(|l| l.1.clone()).collect();
        if leaves.is_empty() {
            self.line(&f, "return");
        } else {
            let names: Vec<&str> = leaves.iter().map(|l| l.0.as_str()).collect();
            let s = format!("return {} : {}", names.join(", "), types_list(&types));
            self.line(&f, &s);
        }
        self.out.push_str("  }\n");
        let results = match types.len() {
            0 => String::new(),
            1 => format!(" -> {}", type_text(&types[0])),
            _ => format!(" -> ({})", types_list(&types)),
        };
        let header = format!("  func.func {visibility} @{name}({}){results} {{\n", sig.join(", "));
        self.out.insert_str(header_at, &header);
    }

    /// Emits computation `c`'s instructions with its parameters bound to `params`;
    /// returns the root's value.
    fn body(&mut self, f: &mut FnState, c: CompId, params: Vec<Val>) -> Val {
        let comp = &self.m.comps[c];
        let mut vals: HashMap<InstId, Val> = HashMap::new();
        for (&p, v) in comp.params.iter().zip(params) {
            vals.insert(p, v);
        }
        for &id in &comp.order {
            if vals.contains_key(&id) {
                continue;
            }
            let inst = &comp.insts[id];
            let operands: Vec<Val> = inst
                .operands
                .iter()
                .map(|o| {
                    vals.get(o).cloned().unwrap_or_else(|| Val::One("%undefined".into(), comp.insts[*o].ty.clone()))
                })
                .collect();
            let v = self.instruction(f, inst, operands);
            vals.insert(id, v);
        }
        if comp.has_root() {
            vals.get(&comp.root).cloned().unwrap_or(Val::Many(Vec::new()))
        } else {
            Val::Many(Vec::new())
        }
    }

    /// One SSA value for `v`, building a `stablehlo.tuple` if it is a tuple of values.
    fn materialize(&mut self, f: &mut FnState, v: &Val) -> String {
        match v {
            Val::One(n, _) => n.clone(),
            Val::Many(vs) => {
                let names: Vec<String> = vs.iter().map(|x| self.materialize(f, x)).collect();
                let types: Vec<Type> = vs.iter().map(Val::ty).collect();
                let n = f.fresh("tuple");
                let s = format!(
                    "{n} = \"stablehlo.tuple\"({}) : {}",
                    names.join(", "),
                    fn_type(&types, &[Type::Tuple(types.clone())])
                );
                self.line(f, &s);
                n
            }
        }
    }

    /// The array leaves of a value, extracting tuple elements where needed.
    fn flatten(&mut self, f: &mut FnState, v: &Val) -> Vec<(String, Type)> {
        match v {
            Val::Many(vs) => vs.iter().flat_map(|x| self.flatten(f, x)).collect(),
            Val::One(n, Type::Tuple(ts)) => {
                let mut out = Vec::new();
                for (i, t) in ts.iter().enumerate() {
                    let g = self.get_tuple_element(f, n, &Type::Tuple(ts.clone()), i, t);
                    out.extend(self.flatten(f, &Val::One(g, t.clone())));
                }
                out
            }
            Val::One(n, t) => vec![(n.clone(), t.clone())],
        }
    }

    fn get_tuple_element(&mut self, f: &mut FnState, tuple: &str, tuple_ty: &Type, i: usize, t: &Type) -> String {
        let base = format!("{}.{i}", tuple.trim_start_matches('%'));
        let n = f.fresh(&base);
        let s = format!(
            "{n} = \"stablehlo.get_tuple_element\"({tuple}) <{{index = {i} : i32}}> : {}",
            fn_type(std::slice::from_ref(tuple_ty), std::slice::from_ref(t))
        );
        self.line(f, &s);
        n
    }

    /// Leaves of all operands, for ops that take a flat list.
    fn flat_operands(&mut self, f: &mut FnState, ops: &[Val]) -> Vec<(String, Type)> {
        ops.iter().flat_map(|v| self.flatten(f, v)).collect()
    }

    /// Result naming for an op with the leaves of `ty` as results: the `%r` or `%r:N`
    /// prefix, and the value the instruction stands for.
    fn results(&mut self, f: &mut FnState, name: &str, ty: &Type) -> (String, Val) {
        let leaves = leaf_types(ty);
        let n = f.fresh(name);
        match leaves.len() {
            0 => (String::new(), Val::Many(Vec::new())),
            1 if !matches!(ty, Type::Tuple(_)) => (format!("{n} = "), Val::One(n, ty.clone())),
            k => {
                let mut it = leaves.iter().enumerate().map(|(i, t)| (format!("{n}#{i}"), t.clone()));
                let v = unflatten(ty, &mut it);
                (format!("{n}:{k} = "), v)
            }
        }
    }

    /// A generic-form op with array operands and the leaves of `ty` as results.
    fn generic(
        &mut self,
        f: &mut FnState,
        inst: &Instruction,
        op_name: &str,
        ops: &[Val],
        props: &str,
        ty: &Type,
    ) -> Val {
        let leaves = self.flat_operands(f, ops);
        let (prefix, v) = self.results(f, &inst.name, ty);
        let names: Vec<&str> = leaves.iter().map(|l| l.0.as_str()).collect();
        let in_types: Vec<Type> = leaves.iter().map(|l| l.1.clone()).collect();
        let props = if props.is_empty() { String::new() } else { format!(" <{{{props}}}>") };
        let s = format!("{prefix}\"{op_name}\"({}){props} : {}", names.join(", "), fn_type(&in_types, &leaf_types(ty)));
        self.line(f, &s);
        v
    }

    /// A generic-form op with regions. Each region is (computation, block argument types,
    /// values bound to the computation's parameters from outside); block arguments are
    /// bound to the parameters' leaves in order.
    #[allow(clippy::too_many_arguments)]
    fn with_regions(
        &mut self,
        f: &mut FnState,
        inst: &Instruction,
        op_name: &str,
        ops: &[Val],
        props: &str,
        regions: &[(CompId, Option<Vec<Val>>)],
        ty: &Type,
    ) -> Val {
        let leaves = self.flat_operands(f, ops);
        let (prefix, v) = self.results(f, &inst.name, ty);
        let names: Vec<&str> = leaves.iter().map(|l| l.0.as_str()).collect();
        let props = if props.is_empty() { String::new() } else { format!(" <{{{props}}}>") };
        self.line(f, &format!("{prefix}\"{op_name}\"({}){props} ({{", names.join(", ")));
        for (k, (comp, outer)) in regions.iter().enumerate() {
            if k > 0 {
                self.line(f, "}, {");
            }
            let c = &self.m.comps[*comp];
            let params: Vec<Val> = match outer {
                Some(vals) => vals.clone(),
                None => {
                    // Block arguments: the leaves of every parameter's type.
                    let mut args = Vec::new();
                    let mut bound = Vec::new();
                    for &p in &c.params {
                        let pi = &c.insts[p];
                        let leaves = leaf_types(&pi.ty);
                        let named: Vec<(String, Type)> = leaves
                            .iter()
                            .enumerate()
                            .map(|(i, t)| {
                                let base = if leaves.len() == 1 && !matches!(pi.ty, Type::Tuple(_)) {
                                    pi.name.clone()
                                } else {
                                    format!("{}.{i}", pi.name)
                                };
                                (f.fresh(&base), t.clone())
                            })
                            .collect();
                        args.extend(named.iter().map(|(n, t)| format!("{n}: {}", type_text(t))));
                        bound.push(unflatten(&pi.ty, &mut named.into_iter()));
                    }
                    self.line(f, &format!("^bb0({}):", args.join(", ")));
                    bound
                }
            };
            f.indent += 1;
            let root = self.body(f, *comp, params);
            let rl = self.flatten(f, &root);
            let rn: Vec<&str> = rl.iter().map(|l| l.0.as_str()).collect();
            let rt: Vec<Type> = rl.iter().map(|l| l.1.clone()).collect();
            self.line(f, &format!("\"stablehlo.return\"({}) : ({}) -> ()", rn.join(", "), types_list(&rt)));
            f.indent -= 1;
        }
        let in_types: Vec<Type> = leaves.iter().map(|l| l.1.clone()).collect();
        self.line(f, &format!("}}) : {}", fn_type(&in_types, &leaf_types(ty))));
        v
    }

    fn one(&mut self, f: &mut FnState, v: &Val) -> (String, Type) {
        let n = self.materialize(f, v);
        (n, v.ty())
    }

    /// A short elementwise op in pretty form when all types agree, else generic.
    fn elementwise(&mut self, f: &mut FnState, inst: &Instruction, op_name: &str, ops: &[Val]) -> Val {
        let args: Vec<(String, Type)> = ops.iter().map(|v| self.one(f, v)).collect();
        if args.iter().all(|a| a.1 == inst.ty) && !args.is_empty() && inst.ty.as_array().is_some() {
            let n = f.fresh(&inst.name);
            let names: Vec<&str> = args.iter().map(|a| a.0.as_str()).collect();
            let s = format!("{n} = {op_name} {} : {}", names.join(", "), type_text(&inst.ty));
            self.line(f, &s);
            return Val::One(n, inst.ty.clone());
        }
        self.generic(f, inst, op_name, ops, "", &inst.ty)
    }

    fn instruction(&mut self, f: &mut FnState, inst: &Instruction, ops: Vec<Val>) -> Val {
        let ty = &inst.ty;
        match &inst.op {
            Op::Parameter(_) => Val::One("%unbound_parameter".into(), ty.clone()),
            Op::Constant(l) => {
                let n = f.fresh(&inst.name);
                let s = format!("{n} = stablehlo.constant {} : {}", dense(l), type_text(ty));
                self.line(f, &s);
                Val::One(n, ty.clone())
            }
            Op::Iota { dim } => {
                self.generic(f, inst, "stablehlo.iota", &ops, &format!("iota_dimension = {dim} : i64"), ty)
            }
            Op::Unary(UnaryOp::Erf) => self.generic(f, inst, "chlo.erf", &ops, "", ty),
            Op::Unary(u) => self.elementwise(f, inst, &format!("stablehlo.{}", u.stablehlo_name()), &ops),
            Op::Binary(b) => self.elementwise(f, inst, &format!("stablehlo.{}", b.stablehlo_name()), &ops),
            Op::Compare { dir, kind } => {
                let mut p = format!("comparison_direction = #stablehlo<comparison_direction {}>", dir.name());
                if let Some(k) = kind {
                    let _ = write!(p, ", compare_type = #stablehlo<comparison_type {}>", k.name());
                }
                self.generic(f, inst, "stablehlo.compare", &ops, &p, ty)
            }
            Op::Select => self.generic(f, inst, "stablehlo.select", &ops, "", ty),
            Op::Clamp => self.generic(f, inst, "stablehlo.clamp", &ops, "", ty),
            Op::Convert => self.generic(f, inst, "stablehlo.convert", &ops, "", ty),
            Op::BitcastConvert => self.generic(f, inst, "stablehlo.bitcast_convert", &ops, "", ty),
            Op::ReducePrecision { exponent_bits, mantissa_bits } => self.generic(
                f,
                inst,
                "stablehlo.reduce_precision",
                &ops,
                &format!("exponent_bits = {exponent_bits} : i32, mantissa_bits = {mantissa_bits} : i32"),
                ty,
            ),
            Op::BroadcastInDim { dims } => self.generic(
                f,
                inst,
                "stablehlo.broadcast_in_dim",
                &ops,
                &format!("broadcast_dimensions = {}", i64_array(dims)),
                ty,
            ),
            Op::Reshape => self.generic(f, inst, "stablehlo.reshape", &ops, "", ty),
            Op::Bitcast => self.bitcast(f, inst, &ops),
            // A copy only changes the layout: the value is the operand's.
            Op::Copy => ops.into_iter().next().unwrap_or(Val::Many(Vec::new())),
            Op::Transpose { perm } => {
                self.generic(f, inst, "stablehlo.transpose", &ops, &format!("permutation = {}", i64_array(perm)), ty)
            }
            Op::Slice { start, limit, stride } => self.generic(
                f,
                inst,
                "stablehlo.slice",
                &ops,
                &format!(
                    "start_indices = {}, limit_indices = {}, strides = {}",
                    i64_array(start),
                    i64_array(limit),
                    i64_array(stride)
                ),
                ty,
            ),
            Op::DynamicSlice { sizes } => self.generic(
                f,
                inst,
                "stablehlo.dynamic_slice",
                &ops,
                &format!("slice_sizes = {}", i64_array(sizes)),
                ty,
            ),
            Op::DynamicUpdateSlice => self.generic(f, inst, "stablehlo.dynamic_update_slice", &ops, "", ty),
            Op::Concatenate { dim } => {
                self.generic(f, inst, "stablehlo.concatenate", &ops, &format!("dimension = {dim} : i64"), ty)
            }
            Op::Pad { low, high, interior } => self.generic(
                f,
                inst,
                "stablehlo.pad",
                &ops,
                &format!(
                    "edge_padding_low = {}, edge_padding_high = {}, interior_padding = {}",
                    i64_array(low),
                    i64_array(high),
                    i64_array(interior)
                ),
                ty,
            ),
            Op::Reverse { dims } => {
                self.generic(f, inst, "stablehlo.reverse", &ops, &format!("dimensions = {}", i64_array(dims)), ty)
            }
            Op::Dot(d) => {
                let mut fields = Vec::new();
                for (k, v) in [
                    ("lhs_batching_dimensions", &d.lhs_batch),
                    ("rhs_batching_dimensions", &d.rhs_batch),
                    ("lhs_contracting_dimensions", &d.lhs_contracting),
                    ("rhs_contracting_dimensions", &d.rhs_contracting),
                ] {
                    if !v.is_empty() {
                        fields.push(format!("{k} = {}", int_list(v)));
                    }
                }
                let p = format!("dot_dimension_numbers = #stablehlo.dot<{}>", fields.join(", "));
                self.generic(f, inst, "stablehlo.dot_general", &ops, &p, ty)
            }
            Op::Convolution(c) => {
                let p = format!(
                    "batch_group_count = {} : i64, dimension_numbers = #stablehlo.conv<{}>, feature_group_count = {} : i64, \
                     lhs_dilation = {}, padding = {}, rhs_dilation = {}, window_reversal = {}, window_strides = {}",
                    c.batch_group_count,
                    conv_dims(&c.dims),
                    c.feature_group_count,
                    i64_array(&c.lhs_dilation),
                    padding_attr(&c.padding),
                    i64_array(&c.rhs_dilation),
                    bool_array(&c.window_reversal),
                    i64_array(&c.window_strides)
                );
                self.generic(f, inst, "stablehlo.convolution", &ops, &p, ty)
            }
            Op::Reduce { dims, body } => self.with_regions(
                f,
                inst,
                "stablehlo.reduce",
                &ops,
                &format!("dimensions = {}", i64_array(dims)),
                &[(*body, None)],
                ty,
            ),
            Op::ReduceWindow(w) => {
                let p = format!(
                    "base_dilations = {}, padding = {}, window_dilations = {}, window_dimensions = {}, window_strides = {}",
                    i64_array(&w.base_dilations),
                    padding_attr(&w.padding),
                    i64_array(&w.window_dilations),
                    i64_array(&w.window_dims),
                    i64_array(&w.strides)
                );
                self.with_regions(f, inst, "stablehlo.reduce_window", &ops, &p, &[(w.body, None)], ty)
            }
            Op::SelectAndScatter(s) => {
                let p = format!(
                    "padding = {}, window_dimensions = {}, window_strides = {}",
                    padding_attr(&s.padding),
                    i64_array(&s.window_dims),
                    i64_array(&s.strides)
                );
                self.with_regions(
                    f,
                    inst,
                    "stablehlo.select_and_scatter",
                    &ops,
                    &p,
                    &[(s.select, None), (s.scatter, None)],
                    ty,
                )
            }
            Op::Gather(g) => {
                let fields = dimension_number_fields(
                    &[
                        ("offset_dims", &g.offset_dims),
                        ("collapsed_slice_dims", &g.collapsed_slice_dims),
                        ("operand_batching_dims", &g.operand_batching_dims),
                        ("start_indices_batching_dims", &g.start_indices_batching_dims),
                        ("start_index_map", &g.start_index_map),
                    ],
                    g.index_vector_dim,
                );
                let p = format!(
                    "dimension_numbers = #stablehlo.gather<{fields}>, indices_are_sorted = {}, slice_sizes = {}",
                    g.indices_are_sorted,
                    i64_array(&g.slice_sizes)
                );
                self.generic(f, inst, "stablehlo.gather", &ops, &p, ty)
            }
            Op::Scatter(s) => {
                let fields = dimension_number_fields(
                    &[
                        ("update_window_dims", &s.update_window_dims),
                        ("inserted_window_dims", &s.inserted_window_dims),
                        ("input_batching_dims", &s.input_batching_dims),
                        ("scatter_indices_batching_dims", &s.scatter_indices_batching_dims),
                        ("scatter_dims_to_operand_dims", &s.scatter_dims_to_operand_dims),
                    ],
                    s.index_vector_dim,
                );
                let p = format!(
                    "indices_are_sorted = {}, scatter_dimension_numbers = #stablehlo.scatter<{fields}>, unique_indices = {}",
                    s.indices_are_sorted,
                    s.unique_indices
                );
                self.with_regions(f, inst, "stablehlo.scatter", &ops, &p, &[(s.body, None)], ty)
            }
            Op::Sort { dim, stable, comparator } => self.with_regions(
                f,
                inst,
                "stablehlo.sort",
                &ops,
                &format!("dimension = {dim} : i64, is_stable = {stable}"),
                &[(*comparator, None)],
                ty,
            ),
            Op::Map { dims, body } => self.with_regions(
                f,
                inst,
                "stablehlo.map",
                &ops,
                &format!("dimensions = {}", i64_array(dims)),
                &[(*body, None)],
                ty,
            ),
            Op::While { cond, body } => {
                self.with_regions(f, inst, "stablehlo.while", &ops, "", &[(*cond, None), (*body, None)], ty)
            }
            Op::Case { branches, branch_operands } => {
                let selector = ops.first().cloned().unwrap_or(Val::Many(Vec::new()));
                let rest = ops.get(1..).unwrap_or(&[]);
                let regions: Vec<(CompId, Option<Vec<Val>>)> = branches
                    .iter()
                    .zip(branch_operands)
                    .map(|(&b, idx)| {
                        let vals = idx.iter().map(|&i| rest.get(i as usize).cloned().unwrap_or(Val::Many(Vec::new())));
                        (b, Some(vals.collect()))
                    })
                    .collect();
                let sel_ty = selector.ty();
                let is_pred = matches!(&sel_ty, Type::Array(s) if s.elem == ElementType::Pred);
                if is_pred && branches.len() == 2 {
                    return self.with_regions(f, inst, "stablehlo.if", &[selector], "", &regions, ty);
                }
                let index = self.case_index(f, &selector, is_pred);
                self.with_regions(f, inst, "stablehlo.case", &[index], "", &regions, ty)
            }
            Op::Call { comp } | Op::Fusion { body: comp, .. } => {
                let callee = self.funcs.get(comp).cloned().unwrap_or_else(|| symbol(&self.m.comps[*comp].name));
                let args: Vec<(String, Type)> = ops.iter().map(|v| self.one(f, v)).collect();
                let (prefix, v) = self.results(f, &inst.name, ty);
                let names: Vec<&str> = args.iter().map(|a| a.0.as_str()).collect();
                let in_types: Vec<Type> = args.iter().map(|a| a.1.clone()).collect();
                let s = format!(
                    "{prefix}func.call @{callee}({}) : {}",
                    names.join(", "),
                    fn_type(&in_types, &leaf_types(ty))
                );
                self.line(f, &s);
                v
            }
            Op::Tuple => Val::Many(ops),
            Op::GetTupleElement { index } => {
                let i = *index as usize;
                match ops.into_iter().next() {
                    Some(Val::Many(vs)) => vs.get(i).cloned().unwrap_or(Val::Many(Vec::new())),
                    Some(Val::One(n, t)) => {
                        let n = self.get_tuple_element(f, &n, &t, i, ty);
                        Val::One(n, ty.clone())
                    }
                    None => Val::Many(Vec::new()),
                }
            }
            Op::OptimizationBarrier => self.generic(f, inst, "stablehlo.optimization_barrier", &ops, "", ty),
            Op::RngBitGenerator { algorithm } => {
                let a = match algorithm {
                    RngAlgorithm::Default => "DEFAULT",
                    RngAlgorithm::ThreeFry => "THREE_FRY",
                    RngAlgorithm::Philox => "PHILOX",
                };
                let p = format!("rng_algorithm = #stablehlo<rng_algorithm {a}>");
                self.generic(f, inst, "stablehlo.rng_bit_generator", &ops, &p, ty)
            }
            Op::Rng { distribution } => {
                let dims = ty.as_array().map(|s| s.dims.clone()).unwrap_or_default();
                let shape = f.fresh(&format!("{}.shape", inst.name));
                let lit = if dims.is_empty() { "dense<>".to_string() } else { format!("dense<{}>", int_list(&dims)) };
                let s = format!("{shape} = stablehlo.constant {lit} : tensor<{}xi64>", dims.len());
                self.line(f, &s);
                let mut all = ops.clone();
                all.push(Val::One(shape, Type::array(ElementType::S64, vec![dims.len() as i64])));
                let d = match distribution {
                    RngDistribution::Uniform => "UNIFORM",
                    RngDistribution::Normal => "NORMAL",
                };
                let p = format!("rng_distribution = #stablehlo<rng_distribution {d}>");
                self.generic(f, inst, "stablehlo.rng", &all, &p, ty)
            }
            Op::TriangularSolve(t) => {
                let tr = match t.transpose_a {
                    Transpose::NoTranspose => "NO_TRANSPOSE",
                    Transpose::Transpose => "TRANSPOSE",
                    Transpose::Adjoint => "ADJOINT",
                };
                let p = format!(
                    "left_side = {}, lower = {}, transpose_a = #stablehlo<transpose {tr}>, unit_diagonal = {}",
                    t.left_side, t.lower, t.unit_diagonal
                );
                self.generic(f, inst, "stablehlo.triangular_solve", &ops, &p, ty)
            }
            Op::Cholesky { lower } => {
                self.generic(f, inst, "stablehlo.cholesky", &ops, &format!("lower = {lower}"), ty)
            }
            Op::ReplicaId => self.generic(f, inst, "stablehlo.replica_id", &ops, "", ty),
            Op::PartitionId => self.generic(f, inst, "stablehlo.partition_id", &ops, "", ty),
            Op::AfterAll => self.generic(f, inst, "stablehlo.after_all", &ops, "", ty),
            Op::CustomCall(cc) => {
                let mut p =
                    format!("call_target_name = {}, has_side_effect = {}", mlir_string(&cc.target), cc.has_side_effect);
                if !cc.backend_config.is_empty() {
                    let _ = write!(p, ", backend_config = {}", mlir_string(&cc.backend_config));
                }
                let extra: Vec<String> = cc
                    .attrs
                    .iter()
                    .filter(|(k, v)| {
                        mlir_like(v) && !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    })
                    .map(|(k, v)| format!("{k} = {}", v.trim()))
                    .collect();
                let v = self.generic(f, inst, "stablehlo.custom_call", &ops, &p, ty);
                if !extra.is_empty() {
                    // Discardable attributes follow the properties: `<{...}> {k = v}`.
                    if let Some(pos) = self.out.rfind("}> : ") {
                        self.out.insert_str(pos + 2, &format!(" {{{}}}", extra.join(", ")));
                    }
                }
                v
            }
        }
    }

    /// The s32 index for `stablehlo.case` from an XLA selector (pred: true -> branch 0).
    fn case_index(&mut self, f: &mut FnState, selector: &Val, is_pred: bool) -> Val {
        let (name, ty) = self.one(f, selector);
        let s32 = Type::array(ElementType::S32, Vec::<i64>::new());
        if ty == s32 {
            return Val::One(name, ty);
        }
        let mut src = name;
        if is_pred {
            let n = f.fresh("not_pred");
            self.line(f, &format!("{n} = stablehlo.not {src} : tensor<i1>"));
            src = n;
        }
        let n = f.fresh("case_index");
        self.line(f, &format!("{n} = \"stablehlo.convert\"({src}) : ({}) -> tensor<i32>", type_text(&ty)));
        Val::One(n, s32)
    }

    /// XLA `bitcast`: a reshape when both layouts are row-major; otherwise transpose to
    /// physical order, reshape, transpose back to the result's logical order.
    fn bitcast(&mut self, f: &mut FnState, inst: &Instruction, ops: &[Val]) -> Val {
        let Some(v) = ops.first() else { return Val::Many(Vec::new()) };
        let (src, src_ty) = self.one(f, v);
        let (Some(a), Some(b)) = (src_ty.as_array().cloned(), inst.ty.as_array()) else {
            return self.generic(f, inst, "stablehlo.reshape", ops, "", &inst.ty);
        };
        // XLA also bitcasts between element types of one width: convert the bits first.
        let (src, src_ty) = if a.elem != b.elem {
            let t = Type::Array(Shape::new(b.elem, a.dims.clone()));
            let n = f.fresh(&format!("{}.bits", inst.name));
            let s = format!(
                "{n} = \"stablehlo.bitcast_convert\"({src}) : {}",
                fn_type(std::slice::from_ref(&src_ty), std::slice::from_ref(&t))
            );
            self.line(f, &s);
            (n, Type::Array(Shape { layout: a.layout.clone(), ..Shape::new(b.elem, a.dims.clone()) }))
        } else {
            (src, src_ty)
        };
        let a = src_ty.as_array().cloned().unwrap_or(a);
        let physical = |s: &Shape| -> Vec<i64> { s.minor_to_major().into_iter().rev().collect() };
        let is_perm = |s: &Shape| crate::ir::is_permutation(&s.minor_to_major(), s.rank());
        if !is_perm(&a) || !is_perm(b) {
            // A malformed layout (a bug upstream): print the logical reshape.
            return self.generic(f, inst, "stablehlo.reshape", ops, "", &inst.ty);
        }
        let (pa, pb) = (physical(&a), physical(b));
        let identity = |p: &[i64]| p.iter().enumerate().all(|(i, &d)| d == i as i64);
        let mut cur = (src, Shape { layout: None, ..a.clone() });
        // 1. Operand in physical order.
        if !identity(&pa) {
            let dims: Vec<i64> = pa.iter().map(|&d| a.dims[d as usize]).collect();
            let t = Shape::new(a.elem, dims);
            let n = f.fresh(&format!("{}.phys", inst.name));
            let s = format!(
                "{n} = \"stablehlo.transpose\"({}) <{{permutation = {}}}> : {}",
                cur.0,
                i64_array(&pa),
                fn_type(&[cur.1.clone().into()], &[t.clone().into()])
            );
            self.line(f, &s);
            cur = (n, t);
        }
        // 2. Reshape to the result's physical dimensions.
        let phys_b = Shape::new(b.elem, pb.iter().map(|&d| b.dims[d as usize]).collect::<Vec<_>>());
        let last = identity(&pb);
        if cur.1.dims != phys_b.dims || last {
            let n = f.fresh(if last { inst.name.clone() } else { format!("{}.reshape", inst.name) }.as_str());
            let s = format!(
                "{n} = \"stablehlo.reshape\"({}) : {}",
                cur.0,
                fn_type(&[cur.1.clone().into()], &[phys_b.clone().into()])
            );
            self.line(f, &s);
            cur = (n, phys_b);
        }
        if last {
            return Val::One(cur.0, inst.ty.clone());
        }
        // 3. Back to logical order: result dim i is physical dim position_of(i).
        let mut inv = vec![0i64; pb.len()];
        for (j, &d) in pb.iter().enumerate() {
            inv[d as usize] = j as i64;
        }
        let n = f.fresh(&inst.name);
        let out_ty = Type::Array(Shape { layout: None, ..b.clone() });
        let s = format!(
            "{n} = \"stablehlo.transpose\"({}) <{{permutation = {}}}> : {}",
            cur.0,
            i64_array(&inv),
            fn_type(&[cur.1.clone().into()], std::slice::from_ref(&out_ty))
        );
        self.line(f, &s);
        Val::One(n, inst.ty.clone())
    }
}

/// `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`.
fn conv_dims(d: &ConvDims) -> String {
    let labels = |a: (i64, &str), b: (i64, &str), spatial: &[i64]| -> String {
        let rank = spatial.len() + 2;
        let mut s = vec!["?".to_string(); rank];
        let mut put = |i: i64, l: String| {
            if let Some(slot) = usize::try_from(i).ok().and_then(|i| s.get_mut(i)) {
                *slot = l;
            }
        };
        put(a.0, a.1.to_string());
        put(b.0, b.1.to_string());
        for (k, &i) in spatial.iter().enumerate() {
            put(i, k.to_string());
        }
        format!("[{}]", s.join(", "))
    };
    format!(
        "{}x{}->{}",
        labels((d.input_batch, "b"), (d.input_feature, "f"), &d.input_spatial),
        labels((d.kernel_input_feature, "i"), (d.kernel_output_feature, "o"), &d.kernel_spatial),
        labels((d.output_batch, "b"), (d.output_feature, "f"), &d.output_spatial)
    )
}

/// An MLIR string literal.
fn mlir_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The body of `#stablehlo.gather<...>` / `#stablehlo.scatter<...>`: the non-empty
/// dimension lists in the given order, then `index_vector_dim`.
fn dimension_number_fields(lists: &[(&str, &Vec<i64>)], index_vector_dim: i64) -> String {
    let mut fields: Vec<String> =
        lists.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| format!("{k} = {}", int_list(v))).collect();
    fields.push(format!("index_vector_dim = {index_vector_dim}"));
    fields.join(", ")
}
