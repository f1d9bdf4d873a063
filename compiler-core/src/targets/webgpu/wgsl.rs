//! WGSL for one elemental kernel of the plan: one invocation per outer element (a
//! grid-stride loop past the dispatch limit), the reduced variables as a serial loop
//! nest inside it, every buffer addressed in the one arena storage buffer.
//!
//! The emitter implements the plan's instructions and nothing more: index expressions,
//! store positions and regions come from the elemental description, HLO's element
//! semantics are spelled out where WGSL's own operators differ (division by zero,
//! shifts past the width, NaN in max/min and float-to-int conversion, total-order
//! compares), and `kernel::semantics` holds the cases it must meet.
//!
//! Types: buffers of 4-byte elements (f32, s32, u32), values of those and pred. Other
//! element types, and the few ops without a WGSL spelling here yet, refuse the kernel
//! with a reason, and it runs on the host (the plan's opaque fallback).
//!
//! Layout: `arena` is `array<u32>`, each buffer at its plan offset (a multiple of 256
//! bytes: the target's alignment), so that a kernel binds one buffer whatever it reads
//! and an output may take over its input's bytes in place as the arena allows (every
//! load of an element happens before its stores).

use crate::ir::{BinaryOp, CmpDir, ElementType, Scalar, UnaryOp};
use crate::kernel::elemental::{Elemental, ExprId, Idx, IdxId, Node};
use std::collections::HashSet;
use std::fmt::Write;

/// Invocations per workgroup.
pub const WORKGROUP: u32 = 64;
/// The most workgroups one dispatch starts along x (WebGPU's default limit).
pub const MAX_WORKGROUPS: u32 = 65535;

/// A kernel's shader and how to launch it.
#[derive(Clone, Debug, PartialEq)]
pub struct WgslKernel {
    pub source: String,
    /// Outer elements: one invocation each (0: nothing to run).
    pub invocations: u64,
}

impl WgslKernel {
    /// Workgroups along x for one dispatch (the shader loops over the rest).
    pub fn workgroups(&self) -> u32 {
        self.invocations.div_ceil(WORKGROUP as u64).min(MAX_WORKGROUPS as u64) as u32
    }
}

/// Where an elemental kernel's buffers are: word offsets into the arena.
pub struct Placement<'a> {
    pub inputs: &'a [u64],
    pub outputs: &'a [u64],
}

/// The WGSL of `e`, with a header naming the kernel; or why it is not emitted.
pub fn emit(e: &Elemental, title: &str, place: &Placement) -> Result<WgslKernel, String> {
    for (i, &t) in e.input_elems.iter().enumerate() {
        stored_type(t)
            .ok_or_else(|| format!("input {i} is {t}: only f32, s32 and u32 buffers are read on webgpu yet"))?;
    }
    for (i, o) in e.outputs.iter().enumerate() {
        stored_type(o.elem).ok_or_else(|| {
            format!("output {i} is {}: only f32, s32 and u32 buffers are written on webgpu yet", o.elem)
        })?;
    }
    if let Some(n) = e.nodes.iter().find(|n| value_type(n.elem).is_none()) {
        return Err(format!("a {} value: webgpu computes in f32, s32, u32 and pred only yet", n.elem));
    }
    // Data indices saturate to 32 bits, which their clamp (inside the buffer) undoes.
    let wide = |(i, &(lo, hi)): (usize, &(i64, i64))| {
        !matches!(e.idx[i], Idx::Data(_)) && (lo < i32::MIN as i64 || hi > i32::MAX as i64)
    };
    if e.idx_range.iter().enumerate().any(wide) {
        return Err("an index expression past 32 bits".into());
    }
    let outer = e.outer_vars();
    let invocations: u64 = outer.iter().map(|&v| e.space[v as usize].max(0) as u64).product();
    if invocations > u32::MAX as u64 || e.space.iter().any(|&n| n > i32::MAX as i64) {
        return Err("more than 2^32 outer elements".into());
    }
    let mut w =
        Writer { e, place, out: String::new(), defined: HashSet::new(), region: vec![Where::Pre; e.nodes.len()] };
    w.classify();
    w.header(title, invocations);
    w.body(&outer, invocations)?;
    Ok(WgslKernel { source: w.out, invocations })
}

/// The WGSL type a buffer element is read as (`None`: not stored on this target yet).
fn stored_type(t: ElementType) -> Option<&'static str> {
    match t {
        ElementType::F32 => Some("f32"),
        ElementType::S32 => Some("i32"),
        ElementType::U32 => Some("u32"),
        _ => None,
    }
}

fn value_type(t: ElementType) -> Option<&'static str> {
    if t == ElementType::Pred {
        return Some("bool");
    }
    stored_type(t)
}

/// Where a node is evaluated.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Where {
    /// Before the reduced loop (loop kernels: everything).
    Pre,
    /// Inside the reduced loop: reads a reduced variable.
    Inner,
    /// In a combiner: reads an accumulator or a reduction input.
    Combine,
    /// After the loop: reads a reduction's result.
    Post,
}

struct Writer<'a> {
    e: &'a Elemental,
    place: &'a Placement<'a>,
    out: String,
    defined: HashSet<ExprId>,
    region: Vec<Where>,
}

impl Writer<'_> {
    fn classify(&mut self) {
        let e = self.e;
        for x in 0..e.nodes.len() {
            let node = &e.nodes[x].node;
            let mut w = match node {
                Node::Acc { .. } | Node::Arg { .. } => Where::Combine,
                Node::Reduced { .. } => Where::Post,
                Node::Load { linear: i, .. } | Node::Index(i) | Node::InRange { idx: i, .. } => self.index_region(*i),
                _ => Where::Pre,
            };
            for o in node.operands() {
                w = join(w, self.region[o.0 as usize]);
            }
            self.region[x] = w;
        }
    }

    /// `Inner` when index `i` reads a reduced variable, or data computed inside.
    fn index_region(&self, i: IdxId) -> Where {
        let mut stack = vec![i];
        let mut w = Where::Pre;
        while let Some(i) = stack.pop() {
            match *self.e.idx_node(i) {
                Idx::Var(v) if self.e.reduced[v as usize] => w = join(w, Where::Inner),
                Idx::Var(_) | Idx::Const(_) => {}
                Idx::Add(a, b) => stack.extend([a, b]),
                Idx::Mul(a, _) | Idx::Div(a, _) | Idx::Rem(a, _) | Idx::Clamp(a, _, _) => stack.push(a),
                Idx::Data(x) => w = join(w, self.region[x.0 as usize]),
            }
        }
        w
    }

    fn header(&mut self, title: &str, invocations: u64) {
        let names: Vec<&str> = {
            let mut seen = Vec::new();
            for n in &self.e.origin_names {
                if !seen.contains(&n.as_str()) {
                    seen.push(n.as_str());
                }
            }
            seen
        };
        let _ = writeln!(self.out, "// {title}: {invocations} invocations");
        if !names.is_empty() {
            let list: Vec<String> = names.iter().map(|n| format!("%{n}")).collect();
            let _ = writeln!(self.out, "// fuses {}", list.join(", "));
        }
        self.out += "@group(0) @binding(0) var<storage, read_write> arena: array<u32>;\n\n";
        self.out += "fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n";
        self.out +=
            "fn total_key(x: f32) -> i32 { let k = bitcast<i32>(x); return select(k, k ^ 0x7fffffff, k < 0); }\n\n";
        let _ = writeln!(self.out, "@compute @workgroup_size({WORKGROUP})");
        self.out +=
            "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {\n";
    }

    fn body(&mut self, outer: &[u32], invocations: u64) -> Result<(), String> {
        let e = self.e;
        if invocations == 0 {
            // Never dispatched; an empty body (the outer positions would divide by 0).
            self.out += "}\n";
            return Ok(());
        }
        let _ = writeln!(self.out, "  for (var t: u32 = gid.x; t < {invocations}u; t += groups.x * {WORKGROUP}u) {{");
        // The outer variables from the invocation's row-major position among them.
        let mut rest = "t".to_string();
        for (k, &v) in outer.iter().enumerate().rev() {
            let n = e.space[v as usize];
            if k == 0 {
                let _ = writeln!(self.out, "    let v{v} = i32({rest});");
            } else {
                let _ = writeln!(self.out, "    let v{v} = i32({rest} % {n}u);");
                let _ = writeln!(self.out, "    let q{v} = {rest} / {n}u;");
                rest = format!("q{v}");
            }
        }
        let pad = "    ";
        if e.is_reduction() {
            for (k, r) in e.reductions.iter().enumerate() {
                for (i, &init) in r.inits.iter().enumerate() {
                    let v = self.value(init, pad)?;
                    let ty = value_type(e.expr(init).elem).unwrap_or("f32");
                    let _ = writeln!(self.out, "{pad}var acc{k}_{i}: {ty} = {v};");
                }
            }
            // What the loop reads but does not change, once before it.
            for x in 0..e.nodes.len() {
                let hoisted = self.region[x] == Where::Pre
                    && e.nodes
                        .iter()
                        .enumerate()
                        .any(|(y, n)| self.region[y] != Where::Pre && self.region[y] != Where::Post && reads(n, x));
                if hoisted {
                    self.value(ExprId(x as u32), pad)?;
                }
            }
            let reduced: Vec<u32> = (0..e.space.len() as u32).filter(|&v| e.reduced[v as usize]).collect();
            let mut inner_pad = pad.to_string();
            for &v in &reduced {
                let _ =
                    writeln!(self.out, "{inner_pad}for (var v{v}: i32 = 0; v{v} < {}; v{v}++) {{", e.space[v as usize]);
                inner_pad += "  ";
            }
            // Values, then outputs stored inside, then each combiner from the old
            // accumulators before any is replaced.
            let saved = self.defined.clone();
            let mut vals = Vec::new();
            for (k, r) in e.reductions.iter().enumerate() {
                for (i, &x) in r.values.iter().enumerate() {
                    vals.push((k, i, self.value(x, &inner_pad)?));
                }
            }
            for (o, out) in e.outputs.iter().enumerate().filter(|(_, o)| o.inner) {
                let v = self.value(out.expr, &inner_pad)?;
                let at = store_position(e, out);
                self.store(o, &at, &v, &inner_pad);
            }
            for (k, i, v) in vals {
                let ty = value_type(e.expr(e.reductions[k].values[i]).elem).unwrap_or("f32");
                let _ = writeln!(self.out, "{inner_pad}let arg{k}_{i}: {ty} = {v};");
            }
            let mut next = Vec::new();
            for (k, r) in e.reductions.iter().enumerate() {
                for (i, &c) in r.combiner.iter().enumerate() {
                    next.push((k, i, self.value(c, &inner_pad)?));
                }
            }
            // Through fresh names: a combiner may return another accumulator as it is.
            for (k, i, v) in &next {
                let _ = writeln!(self.out, "{inner_pad}let next{k}_{i} = {v};");
            }
            for (k, i, _) in next {
                let _ = writeln!(self.out, "{inner_pad}acc{k}_{i} = next{k}_{i};");
            }
            self.defined = saved;
            for _ in &reduced {
                inner_pad.truncate(inner_pad.len() - 2);
                let _ = writeln!(self.out, "{inner_pad}}}");
            }
        }
        // An outer output's store position (`kernel::index::store_strides` over the kept
        // variables) is the invocation's own index `t`, by the mapping above.
        for (o, out) in e.outputs.iter().enumerate().filter(|(_, o)| !o.inner) {
            let v = self.value(out.expr, pad)?;
            self.store(o, "t", &v, pad);
        }
        self.out += "  }\n}\n";
        Ok(())
    }

    fn store(&mut self, o: usize, at: &str, v: &str, pad: &str) {
        let elem = self.e.outputs[o].elem;
        let word = if elem == ElementType::U32 { v.to_string() } else { format!("bitcast<u32>({v})") };
        let base = self.place.outputs[o];
        let _ = writeln!(self.out, "{pad}arena[{base}u + {at}] = {word};");
    }

    /// The expression naming node `x`'s value, defining it (and what it reads) first.
    fn value(&mut self, x: ExprId, pad: &str) -> Result<String, String> {
        if matches!(self.e.expr(x).node, Node::Acc { .. } | Node::Arg { .. } | Node::Reduced { .. } | Node::Const(_)) {
            return self.expression(x, pad);
        }
        if !self.defined.contains(&x) {
            let ex = self.expression(x, pad)?;
            let ty = value_type(self.e.expr(x).elem).unwrap_or("f32");
            let _ = writeln!(self.out, "{pad}let e{}: {ty} = {ex};", x.0);
            // Nodes defined before the loop stay visible after it; those defined inside
            // are forgotten when it closes (`body`).
            self.defined.insert(x);
        }
        Ok(format!("e{}", x.0))
    }

    fn index(&mut self, i: IdxId, pad: &str) -> Result<String, String> {
        let e = self.e;
        Ok(match *e.idx_node(i) {
            Idx::Var(v) => format!("v{v}"),
            Idx::Const(c) => int_literal(c)?,
            Idx::Add(a, b) => format!("({} + {})", self.index(a, pad)?, self.index(b, pad)?),
            Idx::Mul(a, c) => format!("({} * {})", self.index(a, pad)?, int_literal(c)?),
            Idx::Div(a, c) => format!("({} / {})", self.index(a, pad)?, int_literal(c)?),
            Idx::Rem(a, c) => format!("({} % {})", self.index(a, pad)?, int_literal(c)?),
            Idx::Clamp(a, lo, hi) => {
                format!("clamp({}, {}, {})", self.index(a, pad)?, int_literal(lo)?, int_literal(hi)?)
            }
            Idx::Data(x) => {
                let v = self.value(x, pad)?;
                match e.expr(x).elem {
                    ElementType::S32 => v,
                    // Saturating, as the plan's data index is.
                    ElementType::U32 => format!("i32(min({v}, 2147483647u))"),
                    ElementType::Pred => format!("select(0, 1, {v})"),
                    t => return Err(format!("a data index of type {t}")),
                }
            }
        })
    }

    fn expression(&mut self, x: ExprId, pad: &str) -> Result<String, String> {
        let e = self.e;
        let node = e.expr(x);
        let elem = node.elem;
        let ty = value_type(elem).unwrap_or("f32");
        let operand_elem = |o: ExprId| e.expr(o).elem;
        Ok(match node.node {
            Node::Load { input, linear } => {
                let at = self.index(linear, pad)?;
                let word = format!("arena[{}u + u32({at})]", self.place.inputs[input as usize]);
                if elem == ElementType::U32 {
                    word
                } else {
                    format!("bitcast<{ty}>({word})")
                }
            }
            Node::Const(s) => constant(s, elem)?,
            Node::Index(i) => {
                let v = self.index(i, pad)?;
                match elem {
                    ElementType::Pred => format!("({v} != 0)"),
                    _ => format!("{ty}({v})"),
                }
            }
            Node::InRange { idx, lo, hi } => {
                let v = self.index(idx, pad)?;
                format!("({v} >= {} && {v} < {})", int_literal(lo)?, int_literal(hi)?)
            }
            Node::Unary(UnaryOp::IsFinite, a) if operand_elem(a) == ElementType::F32 => {
                let v = self.value(a, pad)?;
                format!("((bitcast<u32>({v}) & 0x7f800000u) != 0x7f800000u)")
            }
            Node::Unary(op, a) => {
                let v = self.value(a, pad)?;
                unary(op, elem, &v)?
            }
            Node::Binary(op, a, b) => {
                let (va, vb) = (self.value(a, pad)?, self.value(b, pad)?);
                binary(op, elem, &va, &vb)?
            }
            Node::Compare { dir, total, a, b } => {
                let (va, vb) = (self.value(a, pad)?, self.value(b, pad)?);
                compare(dir, total, operand_elem(a), &va, &vb)?
            }
            Node::Select { pred, on_true, on_false } => {
                let (p, t, f) = (self.value(pred, pad)?, self.value(on_true, pad)?, self.value(on_false, pad)?);
                format!("select({f}, {t}, {p})")
            }
            Node::Clamp { lo, x: v, hi } => {
                let (l, v, h) = (self.value(lo, pad)?, self.value(v, pad)?, self.value(hi, pad)?);
                let low = binary(BinaryOp::Max, elem, &v, &l)?;
                binary(BinaryOp::Min, elem, &format!("({low})"), &h)?
            }
            Node::Convert(a) => {
                let v = self.value(a, pad)?;
                convert(operand_elem(a), elem, &v)?
            }
            Node::BitcastConvert(a) => {
                let v = self.value(a, pad)?;
                if operand_elem(a) == ElementType::Pred || elem == ElementType::Pred {
                    return Err("a bitcast-convert of pred".into());
                }
                format!("bitcast<{ty}>({v})")
            }
            Node::Acc { red, i } => format!("acc{red}_{i}"),
            Node::Arg { red, i } => format!("arg{red}_{i}"),
            Node::Reduced { red, i } => format!("acc{red}_{i}"),
        })
    }
}

/// Where output `out` is stored, from the plan's store strides.
fn store_position(e: &Elemental, out: &crate::kernel::elemental::Output) -> String {
    let terms: Vec<String> =
        crate::kernel::index::store_strides(e, out).iter().map(|(v, s)| format!("v{v} * {s}")).collect();
    format!("u32({})", if terms.is_empty() { "0".to_string() } else { terms.join(" + ") })
}

/// Whether node `n` reads node `x` as an operand or through a data index.
fn reads(n: &crate::kernel::elemental::Expr, x: usize) -> bool {
    n.node.operands().iter().any(|o| o.0 as usize == x)
}

fn join(a: Where, b: Where) -> Where {
    use Where::*;
    match (a, b) {
        (Combine, _) | (_, Combine) => Combine,
        (Post, _) | (_, Post) => Post,
        (Inner, _) | (_, Inner) => Inner,
        _ => Pre,
    }
}

fn int_literal(c: i64) -> Result<String, String> {
    if c == i32::MIN as i64 {
        return Ok("(-2147483647 - 1)".into());
    }
    if c < i32::MIN as i64 || c > i32::MAX as i64 {
        return Err(format!("an index constant {c} past 32 bits"));
    }
    Ok(if c < 0 { format!("({c})") } else { c.to_string() })
}

fn constant(s: Scalar, elem: ElementType) -> Result<String, String> {
    Ok(match elem {
        ElementType::Pred => (s.as_f64() != 0.0).to_string(),
        ElementType::F32 => {
            let v = s.as_f64() as f32;
            if v.is_finite() {
                format!("{v:?}f")
            } else {
                format!("bitcast<f32>({:#010x}u)", v.to_bits())
            }
        }
        ElementType::S32 => {
            let v = match s {
                Scalar::S(v) => v,
                Scalar::U(v) => v as i64,
                other => other.as_f64() as i64,
            };
            format!("i32({})", int_literal(v)?)
        }
        ElementType::U32 => {
            let v = match s {
                Scalar::U(v) => v,
                Scalar::S(v) => v as u64,
                other => other.as_f64() as u64,
            };
            format!("{}u", v as u32)
        }
        t => return Err(format!("a {t} constant")),
    })
}

fn unary(op: UnaryOp, elem: ElementType, a: &str) -> Result<String, String> {
    use UnaryOp::*;
    let float = elem == ElementType::F32;
    Ok(match op {
        Neg if elem == ElementType::U32 => format!("(0u - {a})"),
        Neg => format!("(-{a})"),
        Abs if elem == ElementType::U32 => a.to_string(),
        Abs => format!("abs({a})"),
        Not if elem == ElementType::Pred => format!("(!{a})"),
        Not => format!("(~{a})"),
        Exp if float => format!("exp({a})"),
        Log if float => format!("log({a})"),
        Sqrt if float => format!("sqrt({a})"),
        Rsqrt if float => format!("inverseSqrt({a})"),
        Tanh if float => format!("tanh({a})"),
        Sin if float => format!("sin({a})"),
        Cos if float => format!("cos({a})"),
        Tan if float => format!("tan({a})"),
        Logistic if float => format!("(1.0f / (1.0f + exp(-{a})))"),
        Floor if float => format!("floor({a})"),
        Ceil if float => format!("ceil({a})"),
        RoundEven if float => format!("round({a})"),
        // trunc, then one away from zero when the dropped part is at least a half.
        RoundAfz if float => format!("select(trunc({a}), trunc({a}) + sign({a}), abs({a} - trunc({a})) >= 0.5f)"),
        // Zeros keep their sign, NaN stays NaN.
        Sign if float => format!("select(sign({a}), {a}, is_nan({a}) || {a} == 0.0f)"),
        Sign if elem == ElementType::S32 => format!("sign({a})"),
        Sign if elem == ElementType::U32 => format!("min({a}, 1u)"),
        PopCnt if !float && elem != ElementType::Pred => format!("countOneBits({a})"),
        Clz if !float && elem != ElementType::Pred => format!("countLeadingZeros({a})"),
        other => return Err(format!("{} on {elem} is not emitted for webgpu yet", other.hlo_name())),
    })
}

fn binary(op: BinaryOp, elem: ElementType, a: &str, b: &str) -> Result<String, String> {
    use BinaryOp::*;
    let int = matches!(elem, ElementType::S32 | ElementType::U32);
    let pred = elem == ElementType::Pred;
    let all_ones = if elem == ElementType::U32 { "0xffffffffu" } else { "-1" };
    let zero = if elem == ElementType::U32 { "0u" } else { "0" };
    Ok(match op {
        Add if pred => format!("({a} || {b})"),
        Mul if pred => format!("({a} && {b})"),
        Add => format!("({a} + {b})"),
        Sub if !pred => format!("({a} - {b})"),
        Mul => format!("({a} * {b})"),
        // WGSL gives the dividend for x / 0 (and INT_MIN / -1, as HLO); HLO wants -1
        // (all ones unsigned).
        Div if int => format!("select({a} / {b}, {all_ones}, {b} == {zero})"),
        Div if !pred => format!("({a} / {b})"),
        // HLO: x % 0 = x (WGSL gives 0).
        Rem if int => format!("select({a} % {b}, {a}, {b} == {zero})"),
        // fmod: an infinite divisor leaves a finite dividend as it is.
        Rem if !pred => format!(
            "select({a} - {b} * trunc({a} / {b}), {a}, (bitcast<u32>({b}) & 0x7fffffffu) == 0x7f800000u && !is_nan({a}) && (bitcast<u32>({a}) & 0x7fffffffu) != 0x7f800000u)"
        ),
        // NaN in, NaN out (WGSL's max and min need not propagate it).
        Max if elem == ElementType::F32 => format!("select(select(max({a}, {b}), {a}, is_nan({a})), {b}, is_nan({b}))"),
        Min if elem == ElementType::F32 => format!("select(select(min({a}, {b}), {a}, is_nan({a})), {b}, is_nan({b}))"),
        Max if pred => format!("({a} || {b})"),
        Min if pred => format!("({a} && {b})"),
        Max => format!("max({a}, {b})"),
        Min => format!("min({a}, {b})"),
        Atan2 if elem == ElementType::F32 => format!("atan2({a}, {b})"),
        And if pred => format!("({a} && {b})"),
        Or if pred => format!("({a} || {b})"),
        Xor if pred => format!("({a} != {b})"),
        And if int => format!("({a} & {b})"),
        Or if int => format!("({a} | {b})"),
        Xor if int => format!("({a} ^ {b})"),
        // Shift counts are unsigned; at or past the width, left and logical shifts give 0
        // and arithmetic ones the sign (WGSL would take the count modulo 32).
        ShiftLeft if int => format!("select({a} << u32({b}), {zero}, u32({b}) >= 32u)"),
        ShiftRightLogical if elem == ElementType::U32 => format!("select({a} >> {b}, 0u, {b} >= 32u)"),
        ShiftRightLogical if int => {
            format!("select(bitcast<i32>(bitcast<u32>({a}) >> u32({b})), 0, u32({b}) >= 32u)")
        }
        ShiftRightArithmetic if elem == ElementType::S32 => format!("({a} >> min(u32({b}), 31u))"),
        ShiftRightArithmetic if elem == ElementType::U32 => {
            format!("bitcast<u32>(bitcast<i32>({a}) >> min({b}, 31u))")
        }
        other => return Err(format!("{} on {elem} is not emitted for webgpu yet", other.hlo_name())),
    })
}

fn compare(dir: CmpDir, total: bool, elem: ElementType, a: &str, b: &str) -> Result<String, String> {
    let sym = match dir {
        CmpDir::Eq => "==",
        CmpDir::Ne => "!=",
        CmpDir::Lt => "<",
        CmpDir::Le => "<=",
        CmpDir::Gt => ">",
        CmpDir::Ge => ">=",
    };
    Ok(match elem {
        ElementType::F32 if total => format!("(total_key({a}) {sym} total_key({b}))"),
        // IEEE: NaN is unordered, so only != holds.
        ElementType::F32 if dir == CmpDir::Ne => format!("({a} != {b} || is_nan({a}) || is_nan({b}))"),
        ElementType::F32 => format!("({a} {sym} {b} && !is_nan({a}) && !is_nan({b}))"),
        ElementType::Pred => format!("(select(0, 1, {a}) {sym} select(0, 1, {b}))"),
        _ => format!("({a} {sym} {b})"),
    })
}

fn convert(from: ElementType, to: ElementType, v: &str) -> Result<String, String> {
    use ElementType::*;
    Ok(match (from, to) {
        (a, b) if a == b => v.to_string(),
        (_, Pred) if from == F32 => format!("({v} != 0.0f)"),
        (_, Pred) if from == U32 => format!("({v} != 0u)"),
        (_, Pred) => format!("({v} != 0)"),
        (Pred, F32) => format!("select(0.0f, 1.0f, {v})"),
        (Pred, S32) => format!("select(0, 1, {v})"),
        (Pred, U32) => format!("select(0u, 1u, {v})"),
        // Saturating (WGSL clamps), NaN to 0.
        // WGSL clamps to the largest float below the bound (2^31 - 128): at or past
        // 2^31 (2^32) the answer is the integer bound itself.
        (F32, S32) => format!("select(select(i32({v}), 2147483647, {v} >= 2147483648.0f), 0, is_nan({v}))"),
        (F32, U32) => format!("select(select(u32({v}), 0xffffffffu, {v} >= 4294967296.0f), 0u, is_nan({v}))"),
        (S32, F32) | (U32, F32) => format!("f32({v})"),
        (S32, U32) => format!("bitcast<u32>({v})"),
        (U32, S32) => format!("bitcast<i32>({v})"),
        (a, b) => return Err(format!("a convert from {a} to {b}")),
    })
}
