//! The plan verifier: checks the invariants every target's emitter relies on, so that a
//! planner bug shows up as a named broken rule instead of a wrong number on one target.
//!
//! It runs after planning and after every rewrite of a plan in debug builds
//! ([`debug_check`]) and on every corpus program in the test suite ([`verify`]).
//!
//! What it checks:
//! - **buffers**: every buffer a kernel, parameter, constant or the result names exists;
//!   each is written by at most one kernel (plans are in SSA form), and every kernel
//!   input is a parameter, a constant or written by an earlier kernel;
//! - **kernels**: inputs and outputs match the body (element types, element counts, a
//!   dot's GEMM sizes, an opaque kernel's operand buffers), and the kind matches the
//!   body ([`super::elemental_kind`]);
//! - **elemental bodies**: nodes and index expressions only refer to earlier ones (a
//!   DAG), variables exist, every load stays inside its input (from the index's value
//!   range); accumulators and reduction inputs (`Acc`, `Arg`) are read only inside
//!   their own reduction's combiner, and a combiner reads nothing else but constants;
//!   a reduction's result (`Reduced`) is read only outside the reduced loop (by outer
//!   outputs), never by a reduction's values, inits or combiner, nor by an output
//!   stored inside the loop; reduced variables are read only inside the loop;
//! - **row chains** are the ones the kernels prove now (for a target that wants them;
//!   none otherwise);
//! - **arena**: current for these kernels, aligned as the target needs, every buffer
//!   inside it, parameters, constants and results pinned, and no two buffers live at
//!   the same kernel sharing bytes, except an output that took over its input in place.

use super::elemental::{Elemental, ExprId, Idx, IdxId, Node};
use super::{chains, elemental_kind, BufferId, Kernel, KernelBody, KernelKind, KernelPlan, ValueBufs};
use crate::ir::{CompId, Module};
use cranelift_entity::EntityRef;
use rustc_hash::FxHashSet as HashSet;

/// Runs [`verify`] in debug builds and panics with the broken rule and the whole plan:
/// a broken invariant is a planner bug, and the plan text is what it takes to fix it.
pub(crate) fn debug_check(module: &Module, plan: &KernelPlan, when: &str) {
    if cfg!(debug_assertions) {
        if let Err(e) = verify(module, plan) {
            panic!("kernel plan verifier, {when}: {e}\n\n{plan}");
        }
    }
}

/// Checks `plan` (of a computation of `module`); the error names the kernel and rule.
pub fn verify(module: &Module, plan: &KernelPlan) -> Result<(), String> {
    let comp = module.comps.get(plan.comp).ok_or("the plan's computation does not exist")?;
    let nb = plan.buffers.len();
    let exists = |b: BufferId| b.index() < nb;
    if let Some(b) = plan.pinned_buffers().find(|&b| !exists(b)) {
        return Err(format!("{b} (a parameter, constant or result) does not exist"));
    }
    let mut available: HashSet<BufferId> =
        plan.params.iter().flat_map(ValueBufs::leaves).chain(plan.constants.iter().map(|(b, _)| *b)).collect();
    for (p, k) in plan.kernels.iter().enumerate() {
        let at = |rule: String| format!("kernel {p} ({}): {rule}", k.name);
        if comp.insts.get(k.source).is_none() {
            return Err(at("its source instruction does not exist".into()));
        }
        if let Some(b) = k.inputs.iter().chain(&k.outputs).find(|&&b| !exists(b)) {
            return Err(at(format!("{b} does not exist")));
        }
        if let Some(b) = k.inputs.iter().find(|b| !available.contains(b)) {
            return Err(at(format!("reads {b} before any kernel writes it")));
        }
        for &b in &k.outputs {
            if !available.insert(b) {
                return Err(at(format!("writes {b}, which a parameter, constant or earlier kernel already holds")));
            }
        }
        check_kernel(plan, k).map_err(at)?;
    }

    let wanted = if plan.caps.row_chains { chains::find_chains(plan) } else { Vec::new() };
    if plan.chains != wanted {
        return Err(format!("the row chains {:?} are not the ones the kernels prove now ({wanted:?})", plan.chains));
    }
    check_arena(plan)
}

fn check_kernel(plan: &KernelPlan, k: &Kernel) -> Result<(), String> {
    let shape = |b: BufferId| &plan.buffers[b].shape;
    match (&k.kind, &k.body) {
        (kind, KernelBody::Elemental(e)) => {
            if *kind != elemental_kind(e) {
                return Err(format!("kind {kind} for a body that is a {}", elemental_kind(e)));
            }
            if e.input_elems.len() != k.inputs.len() {
                return Err(format!("{} input types for {} inputs", e.input_elems.len(), k.inputs.len()));
            }
            for (slot, (&b, &elem)) in k.inputs.iter().zip(&e.input_elems).enumerate() {
                if shape(b).elem != elem {
                    return Err(format!("input {slot} is read as {elem} but {b} holds {}", shape(b).elem));
                }
            }
            if e.outputs.len() != k.outputs.len() {
                return Err(format!("{} outputs described for {} output buffers", e.outputs.len(), k.outputs.len()));
            }
            let full: u64 = e.space.iter().map(|&n| n.max(0) as u64).product();
            for (o, (&b, out)) in k.outputs.iter().zip(&e.outputs).enumerate() {
                let elements = if out.inner { full } else { e.outer_elements() as u64 };
                if shape(b).elem != out.elem || shape(b).num_elements() as u64 != elements {
                    return Err(format!("output {o} stores {elements} {} elements into {b} of {}", out.elem, shape(b)));
                }
            }
            let sizes: Vec<u64> = k.inputs.iter().map(|&b| shape(b).num_elements() as u64).collect();
            check_elemental(e, &sizes)
        }
        (KernelKind::Dot, KernelBody::Dot(d)) => {
            let elements = |b: &BufferId| shape(*b).num_elements();
            let want = [d.batch * d.m * d.k, d.batch * d.k * d.n];
            if k.inputs.len() != 2 || k.outputs.len() != 1 {
                return Err("a dot with other than two inputs and one output".into());
            }
            if k.inputs.iter().map(elements).ne(want) || elements(&k.outputs[0]) != d.batch * d.m * d.n {
                return Err(format!(
                    "dot sizes batch {} m {} n {} k {} do not match its buffers",
                    d.batch, d.m, d.n, d.k
                ));
            }
            let is_perm = |p: &[usize], rank: usize| {
                let mut v = p.to_vec();
                v.sort_unstable();
                v == (0..rank).collect::<Vec<_>>()
            };
            if !is_perm(&d.lhs_perm, shape(k.inputs[0]).rank()) || !is_perm(&d.rhs_perm, shape(k.inputs[1]).rank()) {
                return Err("a dot operand permutation that is not one of its dimensions".into());
            }
            Ok(())
        }
        (KernelKind::Sort, KernelBody::Sort(s)) => {
            check_scalar_function(&s.comparator, s.elems.len() * 2, 1, "comparator")?;
            check_same_arrays(plan, k, s.elems.len())
        }
        (KernelKind::Scatter, KernelBody::Scatter(s)) => {
            let n = s.elems.len();
            check_scalar_function(&s.combiner, 2 * n, n, "combiner")?;
            if k.inputs.len() != 2 * n + 1 {
                return Err(format!("a scatter of {n} operands with {} inputs", k.inputs.len()));
            }
            check_same_arrays(plan, k, n)
        }
        (KernelKind::While, KernelBody::While { operands, result, .. })
        | (KernelKind::Case, KernelBody::Case { operands, result, .. })
        | (KernelKind::Opaque { .. }, KernelBody::Opaque { operands, result, .. }) => {
            let ins: Vec<BufferId> = operands.iter().flat_map(ValueBufs::leaves).collect();
            if ins != k.inputs || result.leaves() != k.outputs {
                return Err("its inputs and outputs are not its operands' and result's buffers".into());
            }
            Ok(())
        }
        (kind, _) => Err(format!("kind {kind} for another kind of body")),
    }
}

/// A sort or scatter: its `n` outputs are shaped as its first `n` inputs (the operands).
fn check_same_arrays(plan: &KernelPlan, k: &Kernel, n: usize) -> Result<(), String> {
    if k.outputs.len() != n {
        return Err(format!("{} outputs for {n} operands", k.outputs.len()));
    }
    for (i, &out) in k.outputs.iter().enumerate() {
        let input = k.inputs.get(i).ok_or("fewer inputs than operands")?;
        let (o, i) = (&plan.buffers[out].shape, &plan.buffers[*input].shape);
        if (o.elem, &o.dims) != (i.elem, &i.dims) {
            return Err(format!("output {i} ({out}) is not shaped as operand {i} ({input})"));
        }
    }
    Ok(())
}

/// A sort's comparator or a scatter's combiner: a kernel over scalars.
fn check_scalar_function(e: &Elemental, inputs: usize, outputs: usize, what: &str) -> Result<(), String> {
    if !e.space.is_empty() || e.input_elems.len() != inputs || e.outputs.len() != outputs {
        return Err(format!(
            "the {what} must be a scalar function of {inputs} values to {outputs}; it has {} variables, {} inputs, {} outputs",
            e.space.len(),
            e.input_elems.len(),
            e.outputs.len()
        ));
    }
    check_elemental(e, &vec![1; inputs]).map_err(|m| format!("{what}: {m}"))
}

/// Where a value is evaluated.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Region {
    /// At the outer (kept) index, after every reduced loop: outputs not stored inside.
    Outer,
    /// Before the reduced loop: a reduction's inits.
    Init,
    /// Inside the reduced loop: a reduction's values, outputs stored inside.
    Inner,
    /// Reduction k's combiner.
    Combiner(u32),
}

/// Checks one elemental description; `input_elements[s]`: elements of input slot `s`.
pub fn check_elemental(e: &Elemental, input_elements: &[u64]) -> Result<(), String> {
    let (n_idx, n_nodes) = (e.idx.len(), e.nodes.len());
    if e.idx_range.len() != n_idx || e.origins.len() != n_nodes {
        return Err("index ranges or node origins out of step with their lists".into());
    }
    if e.reduced.len() != e.space.len() {
        return Err("a reduced flag per variable is missing".into());
    }
    if let Some(bad) = e.origins.iter().flatten().find(|&&o| o as usize >= e.origin_names.len()) {
        return Err(format!("origin {bad} has no name"));
    }
    for (i, idx) in e.idx.iter().enumerate() {
        let earlier = |j: IdxId| (j.0 as usize) < i;
        let ok = match *idx {
            Idx::Var(v) => (v as usize) < e.space.len(),
            Idx::Const(_) => true,
            Idx::Add(a, b) => earlier(a) && earlier(b),
            Idx::Mul(a, _) => earlier(a),
            Idx::Div(a, c) | Idx::Rem(a, c) => earlier(a) && c > 0,
            Idx::Clamp(a, lo, hi) => earlier(a) && lo <= hi,
            Idx::Data(x) => {
                let elem = e.nodes.get(x.0 as usize).map(|n| n.elem);
                elem.is_some_and(|t| !t.is_float())
            }
        };
        if !ok {
            return Err(format!(
                "index i{i} = {idx:?} refers to a later index, a missing variable or a non-integer value"
            ));
        }
    }
    let empty_space = e.space.iter().any(|&n| n <= 0);
    for (x, node) in e.nodes.iter().enumerate() {
        let at = |m: String| format!("node e{x}: {m}");
        if node.node.operands().iter().any(|o| o.0 as usize >= x) {
            return Err(at("reads a later node".into()));
        }
        let idx_ok = |i: IdxId| (i.0 as usize) < n_idx;
        match node.node {
            Node::Load { input, linear } => {
                let &elements = input_elements
                    .get(input as usize)
                    .ok_or_else(|| at(format!("loads input {input}, which does not exist")))?;
                if !idx_ok(linear) {
                    return Err(at("a load at a missing index".into()));
                }
                if e.input_elems[input as usize] != node.elem {
                    return Err(at(format!("loads {} from an input of {}", node.elem, e.input_elems[input as usize])));
                }
                let (lo, hi) = e.idx_range[linear.0 as usize];
                if !empty_space && elements > 0 && (lo < 0 || hi as u64 >= elements) {
                    return Err(at(format!("loads input {input} at [{lo}, {hi}], outside its {elements} elements")));
                }
            }
            Node::Index(i) | Node::InRange { idx: i, .. } if !idx_ok(i) => {
                return Err(at("an index that does not exist".into()));
            }
            Node::Acc { red, i } | Node::Arg { red, i } | Node::Reduced { red, i } => {
                let r = e.reductions.get(red as usize).ok_or_else(|| at(format!("reduction {red} does not exist")))?;
                if i as usize >= r.values.len() {
                    return Err(at(format!("reduction {red} has no value {i}")));
                }
            }
            _ => {}
        }
    }
    for (k, r) in e.reductions.iter().enumerate() {
        if r.inits.len() != r.values.len() || r.combiner.len() != r.values.len() {
            return Err(format!(
                "reduction {k}: {} inits, {} values, {} combiner results",
                r.inits.len(),
                r.values.len(),
                r.combiner.len()
            ));
        }
    }
    if !e.is_reduction() && (e.reduced.iter().any(|&r| r) || e.outputs.iter().any(|o| o.inner)) {
        return Err("a loop kernel with reduced variables or outputs stored inside a reduced loop".into());
    }
    let mut roots: Vec<(ExprId, Region)> = Vec::new();
    for o in &e.outputs {
        roots.push((o.expr, if o.inner { Region::Inner } else { Region::Outer }));
    }
    for (k, r) in e.reductions.iter().enumerate() {
        roots.extend(r.inits.iter().map(|&x| (x, Region::Init)));
        roots.extend(r.values.iter().map(|&x| (x, Region::Inner)));
        roots.extend(r.combiner.iter().map(|&x| (x, Region::Combiner(k as u32))));
    }
    if let Some(&(x, _)) = roots.iter().find(|(x, _)| x.0 as usize >= n_nodes) {
        return Err(format!("a root e{} that does not exist", x.0));
    }
    for (root, region) in roots {
        check_region(e, root, region)?;
    }
    Ok(())
}

/// Everything `root` reads, evaluated in `region`, is available there.
fn check_region(e: &Elemental, root: ExprId, region: Region) -> Result<(), String> {
    let mut seen_nodes = HashSet::default();
    let mut seen_idx = HashSet::default();
    let mut nodes = vec![root];
    let mut idxs: Vec<IdxId> = Vec::new();
    let place = match region {
        Region::Outer => "at the outer index".to_string(),
        Region::Init => "in a reduction's init".to_string(),
        Region::Inner => "inside the reduced loop".to_string(),
        Region::Combiner(k) => format!("in reduction {k}'s combiner"),
    };
    while !nodes.is_empty() || !idxs.is_empty() {
        while let Some(x) = nodes.pop() {
            if !seen_nodes.insert(x) {
                continue;
            }
            let node = &e.expr(x).node;
            let bad = match (node, region) {
                (Node::Acc { red, .. } | Node::Arg { red, .. }, Region::Combiner(k)) => *red != k,
                (Node::Acc { .. } | Node::Arg { .. }, _) => true,
                (
                    Node::Load { .. } | Node::Index(_) | Node::InRange { .. } | Node::Reduced { .. },
                    Region::Combiner(_),
                ) => true,
                (Node::Reduced { .. }, Region::Outer) => false,
                (Node::Reduced { .. }, _) => true,
                _ => false,
            };
            if bad {
                return Err(format!("e{} ({:?}) is read {place}, where it does not exist", x.0, node));
            }
            nodes.extend(node.operands());
            match *node {
                Node::Load { linear: i, .. } | Node::Index(i) | Node::InRange { idx: i, .. } => idxs.push(i),
                _ => {}
            }
        }
        while let Some(i) = idxs.pop() {
            if !seen_idx.insert(i) {
                continue;
            }
            match *e.idx_node(i) {
                Idx::Var(v) => {
                    if e.reduced[v as usize] && region != Region::Inner {
                        return Err(format!("reduced variable v{v} is read {place}, outside its loop"));
                    }
                }
                Idx::Const(_) => {}
                Idx::Add(a, b) => idxs.extend([a, b]),
                Idx::Mul(a, _) | Idx::Div(a, _) | Idx::Rem(a, _) | Idx::Clamp(a, _, _) => idxs.push(a),
                Idx::Data(x) => nodes.push(x),
            }
        }
    }
    Ok(())
}

/// The arena against the plan (see the module doc).
fn check_arena(plan: &KernelPlan) -> Result<(), String> {
    let a = &plan.arena;
    if !a.is_current(plan) {
        return Err("the arena was assigned for other kernels".into());
    }
    let align = plan.caps.arena_alignment;
    if a.alignment != align || !a.arena_bytes.is_multiple_of(align.max(1)) {
        return Err(format!("the arena is aligned to {} bytes, the target needs {align}", a.alignment));
    }
    if let Some(b) = plan.pinned_buffers().find(|b| !a.pinned[b.index()]) {
        return Err(format!("{b} (a parameter, constant or result) is not pinned"));
    }
    // Byte ranges in offset order; each pair that shares bytes must not be live at once.
    let size = |b: usize| plan.buffers[BufferId::new(b)].shape.checked_byte_size().unwrap_or(u64::MAX);
    let mut spans: Vec<(u64, u64, usize)> = Vec::new();
    for b in 0..plan.buffers.len() {
        let (at, n) = (a.offsets[b], size(b));
        if !at.is_multiple_of(align.max(1)) || at.checked_add(n).is_none_or(|end| end > a.arena_bytes) {
            return Err(format!("buf{b} at offset {at} ({n} bytes) is not aligned or not inside the arena"));
        }
        if n > 0 {
            spans.push((at, at + n, b));
        }
    }
    spans.sort_unstable();
    for (i, &(_, end, b)) in spans.iter().enumerate() {
        for &(start, _, c) in spans[i + 1..].iter().take_while(|s| s.0 < end) {
            debug_assert!(start < end);
            let (lb, lc) = (a.live[b], a.live[c]);
            let disjoint = lb.1 < lc.0 || lc.1 < lb.0;
            let handed_over = |from: usize, to: usize| {
                a.in_place_of[to] == Some(BufferId::new(from)) && a.live[from].1 == a.live[to].0
            };
            if !disjoint && !handed_over(b, c) && !handed_over(c, b) {
                return Err(format!(
                    "buf{b} (live at kernels {}..={}) and buf{c} (live at {}..={}) share bytes",
                    lb.0, lb.1, lc.0, lc.1
                ));
            }
        }
    }
    Ok(())
}

/// Checks that a stored plan fits its module: the computation, every instruction and
/// computation it names and every buffer it uses exist, and the arena places every
/// buffer. (The checksum already rules out corruption; this keeps a plan that was
/// stored for another module from reaching the runtime.)
pub fn check_stored(module: &Module, comp_id: CompId, plan: &KernelPlan) -> Result<(), String> {
    let bad = |what: &str| Err(format!("stale artifact: the stored plan {what}"));
    let Some(comp) = module.comps.get(comp_id) else { return bad("names a computation the module lacks") };
    if plan.comp != comp_id {
        return bad("is for another computation");
    }
    let n = plan.buffers.len();
    let buf_ok = |b: &BufferId| b.index() < n;
    let vals_ok = |v: &ValueBufs| v.leaves().iter().all(buf_ok);
    let inst_ok = |i: &crate::ir::InstId| comp.insts.get(*i).is_some();
    let comp_ok = |c: &CompId| module.comps.get(*c).is_some();
    let arena = &plan.arena;
    if !arena.is_current(plan) || arena.live.len() != n || arena.pinned.len() != n {
        return bad("has an arena assignment for other kernels");
    }
    // The runtime allocates this many bytes: never more than a compile would plan.
    if arena.arena_bytes > crate::limits::Limits::default().max_total_bytes {
        return bad("has an arena over the limit on a module's bytes");
    }
    for b in plan.buffers.keys() {
        let end = plan.buffers[b].shape.checked_byte_size().and_then(|size| arena.offset(b).checked_add(size));
        if end.is_none_or(|e| e > arena.arena_bytes) {
            return bad("places a buffer outside the arena");
        }
    }
    let kernels_ok = plan.kernels.iter().all(|k| {
        inst_ok(&k.source)
            && k.inputs.iter().all(buf_ok)
            && k.outputs.iter().all(buf_ok)
            && match &k.body {
                KernelBody::Opaque { inst, operands, result } => {
                    inst_ok(inst) && operands.iter().all(vals_ok) && vals_ok(result)
                }
                KernelBody::While { cond, body, operands, result } => {
                    comp_ok(cond) && comp_ok(body) && operands.iter().all(vals_ok) && vals_ok(result)
                }
                KernelBody::Case { branches, operands, result, .. } => {
                    branches.iter().all(comp_ok) && operands.iter().all(vals_ok) && vals_ok(result)
                }
                _ => true,
            }
    });
    if plan.chains.iter().any(|c| c.start >= c.end || c.end > plan.kernels.len()) {
        return bad("has a row chain outside its kernels");
    }
    if !kernels_ok
        || !plan.params.iter().all(vals_ok)
        || !vals_ok(&plan.result)
        || !plan.constants.iter().all(|(b, _)| buf_ok(b))
    {
        return bad("names an instruction, computation or buffer that does not exist");
    }
    Ok(())
}
