//! The kernel plan as text: what every target is given, in a form a person can check
//! and a snapshot test can pin (`hloscope compile --emit plan` prints it too).
//!
//! ```text
//! plan for cpu (library dot, row chains, arena aligned to 64 B)
//! buffers:
//!   buf0 f32[4,8] %x: param 0 @0
//!   buf1 f32[4] %r: result @128
//! kernels:
//!   0 %r: reduction(row) (buf0) -> (buf1)
//!     space: v0 < 4, v1 < 8 reduced
//!     i2 = v0 * 8  [0, 24]
//!     i3 = i2 + v1  [0, 31]
//!     e0: f32 = load in0[i3]  ; %x
//!     ...
//!     red0: init e1; value e0; combine e4
//!     out0 <- e5
//! arena 192 B for 144 B of buffers (2 regions, 0 outputs in place)
//! ```
//!
//! Index expressions are numbered `i`, value nodes `e`, variables `v`; leaves (variables
//! and constants) are printed inline, and only the index expressions some node reads
//! are listed. A node's comment names the HLO instruction it implements.

use super::elemental::{Elemental, Idx, IdxId, Node};
use super::{BufferId, Kernel, KernelBody, KernelPlan, ValueBufs};
use crate::ir::{ElementType, Scalar};
use cranelift_entity::EntityRef;
use rustc_hash::FxHashSet as HashSet;
use std::fmt::{self, Write};

impl fmt::Display for KernelPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let caps = &self.caps;
        let mut traits = vec![if caps.library_dot { "library dot" } else { "dots as reductions" }.to_string()];
        if caps.row_chains {
            traits.push("row chains".into());
        }
        traits.push(format!("arena aligned to {} B", caps.arena_alignment));
        writeln!(f, "plan for {} ({})", caps.name, traits.join(", "))?;
        writeln!(f, "buffers:")?;
        let mut role: Vec<Vec<String>> = vec![Vec::new(); self.buffers.len()];
        for (i, p) in self.params.iter().enumerate() {
            p.leaves().iter().for_each(|b| role[b.index()].push(format!("param {i}")));
        }
        self.constants.iter().for_each(|(b, _)| role[b.index()].push("constant".into()));
        self.result.leaves().iter().for_each(|b| role[b.index()].push("result".into()));
        let arena = self.arena.offsets.len() == self.buffers.len();
        for (b, buf) in self.buffers.iter() {
            let mut line = format!("  {b} {} %{}", buf.shape, buf.name);
            if !role[b.index()].is_empty() {
                line += &format!(": {}", role[b.index()].join(", "));
            }
            if arena {
                line += &format!(" @{}", self.arena.offset(b));
                if let Some(src) = self.arena.in_place_of[b.index()] {
                    line += &format!(" (in place of {src})");
                }
            }
            writeln!(f, "{line}")?;
        }
        writeln!(f, "kernels:")?;
        for (p, k) in self.kernels.iter().enumerate() {
            write_kernel(f, p, k)?;
        }
        for c in &self.chains {
            let names: Vec<String> = self.kernels[c.clone()].iter().map(|k| format!("%{}", k.name)).collect();
            writeln!(f, "row chain {}..{}: {}", c.start, c.end, names.join(", "))?;
        }
        if arena {
            writeln!(f, "{}", self.arena.summary())?;
        }
        Ok(())
    }
}

fn bufs(v: &[BufferId]) -> String {
    v.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", ")
}

fn value_bufs(v: &ValueBufs) -> String {
    match v {
        ValueBufs::Array(b) => b.to_string(),
        ValueBufs::Tuple(vs) => format!("({})", vs.iter().map(value_bufs).collect::<Vec<_>>().join(", ")),
        ValueBufs::Token => "token".into(),
    }
}

fn write_kernel(f: &mut fmt::Formatter<'_>, p: usize, k: &Kernel) -> fmt::Result {
    writeln!(f, "  {p} %{}: {} ({}) -> ({})", k.name, k.kind, bufs(&k.inputs), bufs(&k.outputs))?;
    let pad = "    ";
    match &k.body {
        KernelBody::Elemental(e) => f.write_str(&elemental_text(e, pad)),
        KernelBody::Dot(d) => writeln!(
            f,
            "{pad}gemm {} x [{}x{}] * [{}x{}], lhs order {:?}, rhs order {:?}, {}",
            d.batch, d.m, d.k, d.k, d.n, d.lhs_perm, d.rhs_perm, d.elem
        ),
        KernelBody::Sort(s) => {
            writeln!(f, "{pad}sort along dimension {} of {:?}, comparator:", s.dim, s.dims)?;
            f.write_str(&elemental_text(&s.comparator, "      "))
        }
        KernelBody::Scatter(s) => {
            writeln!(
                f,
                "{pad}scatter into {:?} from updates {:?} at indices {:?} (vector dimension {}), to operand dims {:?}, combiner:",
                s.operand_dims, s.update_dims, s.index_dims, s.index_vector_dim, s.scatter_dims_to_operand_dims
            )?;
            f.write_str(&elemental_text(&s.combiner, "      "))
        }
        KernelBody::While { cond, body, operands, result } => {
            let ops: Vec<String> = operands.iter().map(value_bufs).collect();
            writeln!(f, "{pad}while {cond} do {body}, from ({}) to {}", ops.join(", "), value_bufs(result))
        }
        KernelBody::Case { branches, branch_operands, operands, result } => {
            let ops: Vec<String> = operands.iter().map(value_bufs).collect();
            let arms: Vec<String> = branches.iter().zip(branch_operands).map(|(b, o)| format!("{b} {o:?}")).collect();
            writeln!(f, "{pad}case ({}) of {}, to {}", ops.join(", "), arms.join(", "), value_bufs(result))
        }
        KernelBody::Opaque { operands, result, .. } => {
            let ops: Vec<String> = operands.iter().map(value_bufs).collect();
            writeln!(f, "{pad}interpreted on ({}) to {}", ops.join(", "), value_bufs(result))
        }
    }
}

/// One elemental description, each line indented by `pad`.
pub fn elemental_text(e: &Elemental, pad: &str) -> String {
    let mut s = String::new();
    let vars: Vec<String> = e
        .space
        .iter()
        .enumerate()
        .map(|(v, n)| format!("v{v} < {n}{}", if e.reduced[v] { " reduced" } else { "" }))
        .collect();
    if !vars.is_empty() {
        let _ = writeln!(s, "{pad}space: {}", vars.join(", "));
    }
    let mut printed = rustc_hash::FxHashSet::default();
    for (x, node) in e.nodes.iter().enumerate() {
        // The index expressions a node reads, just before it (operands first).
        if let Some(i) = node_index(&node.node) {
            write_index(&mut s, e, i, pad, &mut printed);
        }
        let mut line = format!("{pad}e{x}: {} = {}", node.elem, node_text(e, &node.node, node.elem));
        if let Some(name) = e.origins[x].and_then(|o| e.origin_names.get(o as usize)) {
            line += &format!("  ; %{name}");
        }
        let _ = writeln!(s, "{line}");
    }
    for (k, r) in e.reductions.iter().enumerate() {
        let list =
            |v: &[super::elemental::ExprId]| v.iter().map(|x| format!("e{}", x.0)).collect::<Vec<_>>().join(", ");
        let _ = writeln!(
            s,
            "{pad}red{k}: init {}; value {}; combine {}",
            list(&r.inits),
            list(&r.values),
            list(&r.combiner)
        );
    }
    for (o, out) in e.outputs.iter().enumerate() {
        let place = if out.inner { " (inside the reduced loop)" } else { "" };
        let _ = writeln!(s, "{pad}out{o} <- e{}{place}", out.expr.0);
    }
    s
}

fn node_index(n: &Node) -> Option<IdxId> {
    match *n {
        Node::Load { linear: i, .. } | Node::Index(i) | Node::InRange { idx: i, .. } => Some(i),
        _ => None,
    }
}

/// Defines index `i` (a composite one, once), after the composite ones it reads.
fn write_index(s: &mut String, e: &Elemental, i: IdxId, pad: &str, printed: &mut HashSet<IdxId>) {
    let node = e.idx_node(i);
    if matches!(node, Idx::Var(_) | Idx::Const(_)) || printed.contains(&i) {
        return;
    }
    match *node {
        Idx::Add(a, b) => {
            write_index(s, e, a, pad, printed);
            write_index(s, e, b, pad, printed);
        }
        Idx::Mul(a, _) | Idx::Div(a, _) | Idx::Rem(a, _) | Idx::Clamp(a, _, _) => write_index(s, e, a, pad, printed),
        _ => {}
    }
    printed.insert(i);
    let (lo, hi) = e.idx_range[i.0 as usize];
    let _ = writeln!(s, "{pad}i{} = {}  [{lo}, {hi}]", i.0, idx_text(e, i, true));
}

/// An index as an operand (`v0`, `7`, `i12`), or with `define` its definition.
fn idx_text(e: &Elemental, i: IdxId, define: bool) -> String {
    let r = |j: IdxId| idx_text(e, j, false);
    match *e.idx_node(i) {
        Idx::Var(v) => format!("v{v}"),
        Idx::Const(c) => c.to_string(),
        _ if !define => format!("i{}", i.0),
        Idx::Add(a, b) => format!("{} + {}", r(a), r(b)),
        Idx::Mul(a, c) => format!("{} * {c}", r(a)),
        Idx::Div(a, c) => format!("{} / {c}", r(a)),
        Idx::Rem(a, c) => format!("{} % {c}", r(a)),
        Idx::Clamp(a, lo, hi) => format!("clamp({}, {lo}, {hi})", r(a)),
        Idx::Data(x) => format!("data(e{})", x.0),
    }
}

fn scalar_text(s: Scalar, elem: ElementType) -> String {
    match s {
        Scalar::Pred(b) => b.to_string(),
        Scalar::S(v) => v.to_string(),
        Scalar::U(v) => v.to_string(),
        Scalar::F(v) => crate::print::hlo::float_text(elem, v),
    }
}

fn node_text(e: &Elemental, n: &Node, elem: ElementType) -> String {
    let x = |id: super::elemental::ExprId| format!("e{}", id.0);
    let i = |id: IdxId| idx_text(e, id, false);
    match *n {
        Node::Load { input, linear } => format!("load in{input}[{}]", i(linear)),
        Node::Const(s) => scalar_text(s, elem),
        Node::Index(id) => format!("index {}", i(id)),
        Node::InRange { idx, lo, hi } => format!("{lo} <= {} < {hi}", i(idx)),
        Node::Unary(op, a) => format!("{} {}", op.hlo_name(), x(a)),
        Node::Binary(op, a, b) => format!("{} {}, {}", op.hlo_name(), x(a), x(b)),
        Node::Compare { dir, total, a, b } => {
            format!("compare {} {}, {}{}", dir.name(), x(a), x(b), if total { " (total order)" } else { "" })
        }
        Node::Select { pred, on_true, on_false } => format!("select {}, {}, {}", x(pred), x(on_true), x(on_false)),
        Node::Clamp { lo, x: v, hi } => format!("clamp {}, {}, {}", x(lo), x(v), x(hi)),
        Node::Convert(a) => format!("convert {}", x(a)),
        Node::BitcastConvert(a) => format!("bitcast-convert {}", x(a)),
        Node::Acc { red, i } => format!("acc{red}.{i}"),
        Node::Arg { red, i } => format!("arg{red}.{i}"),
        Node::Reduced { red, i } => format!("reduced{red}.{i}"),
    }
}
