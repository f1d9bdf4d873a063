//! The verifier: structural invariants and shape/type inference for every op.
//!
//! Parsers run it on what they build (a failure is bad input) and the pass pipeline runs
//! it after every pass (a failure is a bug in that pass, which tests catch). It checks the
//! computations reachable from the entry; computations nothing calls are ignored, as the
//! printers and the interpreter ignore them.
//!
//! Invariants:
//! - The entry computation exists and has a root.
//! - Every called computation exists, and the call graph has no cycles (no recursion).
//! - Every reachable computation has a root, and the root is live (in `order`).
//! - `order` lists each live instruction once, and each is in the arena.
//! - Every operand is a live instruction that comes earlier in `order` (so each
//!   computation is a DAG and `order` is a valid evaluation order).
//! - `params[i]` is a live `Parameter(i)` instruction, and every live parameter
//!   instruction is listed in `params` at its number: parameters are numbered 0..n.
//! - Every instruction's declared type is valid for its op, operands and attributes
//!   ([`infer::check_type`]): equal to the inferred type, layouts ignored, for ops whose
//!   type can be inferred; consistent with them for the rest (convert, reshape, ...).
//!   This covers called computations' signatures: reduction bodies take 2N scalars and
//!   return N scalars of the init types, comparators and while conditions return
//!   `pred[]`, while bodies return the loop state, case branches take the operands
//!   `branch_operands` lists and all return one type, call and fusion bodies take the
//!   operands' types.
//! - Instruction names are unique among the live instructions of reachable computations.
//! - Array dimension sizes are non-negative, and layouts, where set, are permutations of
//!   `0..rank` (declared types and constants).
//! - The module is within the default resource limits ([`crate::limits`]): no array over
//!   [`crate::limits::MAX_ELEMENTS`] elements, and so on. [`verify_structure`] is the
//!   rest without this one (for a module already checked, whose sizes a pass may grow
//!   past the total, such as fusion's bodies repeating their operands).

pub mod infer;

use crate::ir::{CompId, Computation, InstId, Loc, Module, Op, Shape, Type};
use cranelift_entity::EntityRef;
use std::collections::HashMap;
use std::fmt;

/// An instruction whose type or structure is wrong. From a parser this is bad input;
/// after a pass it is a bug in that pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The computation the problem is in (empty for module-level problems).
    pub computation: String,
    /// The offending instruction (empty for computation-level problems).
    pub inst: String,
    pub loc: Loc,
    pub message: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.loc)?;
        if !self.computation.is_empty() {
            write!(f, "in {}, ", self.computation)?;
        }
        if !self.inst.is_empty() {
            write!(f, "%{}: ", self.inst)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for VerifyError {}

impl From<crate::limits::LimitError> for VerifyError {
    fn from(e: crate::limits::LimitError) -> VerifyError {
        VerifyError { computation: e.computation, inst: e.inst, loc: e.loc, message: e.message }
    }
}

/// Checks every invariant listed in the module doc; returns the first violation.
pub fn verify(module: &Module) -> Result<(), VerifyError> {
    // Sizes first: type inference multiplies dimensions, and the error should name the
    // oversized shape rather than whatever overflowed first.
    crate::limits::check_module(module, &crate::limits::Limits::default())?;
    verify_structure(module)
}

/// Instruction names seen so far, with the computation of each.
type Names<'m> = HashMap<&'m str, &'m str, foldhash::fast::RandomState>;

/// Every invariant but the resource limits.
pub fn verify_structure(module: &Module) -> Result<(), VerifyError> {
    let comps = reachable(module)?;
    // Sized up front: growing it rehashed every name several times.
    let insts = comps.iter().map(|&c| module.comp(c).order.len()).sum();
    // The names are the input's, so the hasher is randomly seeded (foldhash's, as the
    // parser's: SipHash made this map half of a verify).
    let mut names: Names = HashMap::with_capacity_and_hasher(insts, Default::default());
    for &c in &comps {
        verify_computation(module, c, &mut names)?;
    }
    Ok(())
}

fn comp_error(comp: &Computation, message: impl Into<String>) -> VerifyError {
    VerifyError { computation: comp.name.clone(), inst: String::new(), loc: Loc::default(), message: message.into() }
}

fn inst_error(comp: &Computation, id: InstId, message: impl Into<String>) -> VerifyError {
    let inst = comp.inst(id);
    VerifyError {
        computation: comp.name.clone(),
        inst: inst.name.clone(),
        loc: inst.loc.clone(),
        message: message.into(),
    }
}

/// The computations reachable from the entry, callees first. Fails on a missing entry or
/// callee, an instruction id outside the arena, or a cycle in the call graph.
fn reachable(module: &Module) -> Result<Vec<CompId>, VerifyError> {
    if module.comps.get(module.entry).is_none() {
        return Err(VerifyError {
            computation: String::new(),
            inst: String::new(),
            loc: Loc::default(),
            message: format!("module {} has no entry computation", module.name),
        });
    }
    #[derive(Copy, Clone, PartialEq)]
    enum State {
        OnStack,
        Done,
    }
    let mut state: rustc_hash::FxHashMap<CompId, State> = Default::default();
    let mut out = Vec::new();
    // Explicit stack of (computation, next position in its order) so deep call chains
    // cannot overflow the native stack.
    let mut stack: Vec<(CompId, usize)> = vec![(module.entry, 0)];
    state.insert(module.entry, State::OnStack);
    while let Some(&(c, pos)) = stack.last() {
        let comp = module.comp(c);
        if pos >= comp.order.len() {
            stack.pop();
            state.insert(c, State::Done);
            out.push(c);
            continue;
        }
        let id = comp.order[pos];
        if comp.insts.get(id).is_none() {
            return Err(comp_error(comp, format!("order lists {id}, which is not in the computation")));
        }
        // Visit the first callee not yet done; move past the instruction once all are.
        let mut next = None;
        for callee in comp.inst(id).op.called_computations() {
            let Some(callee_comp) = module.comps.get(callee) else {
                return Err(inst_error(comp, id, format!("calls {callee}, which does not exist")));
            };
            match state.get(&callee) {
                Some(State::Done) => {}
                Some(State::OnStack) => {
                    return Err(inst_error(
                        comp,
                        id,
                        format!(
                            "calls {}, which is already being called: the call graph has a cycle",
                            callee_comp.name
                        ),
                    ));
                }
                None => {
                    next = Some(callee);
                    break;
                }
            }
        }
        match next {
            Some(callee) => {
                state.insert(callee, State::OnStack);
                stack.push((callee, 0));
            }
            None => {
                if let Some(top) = stack.last_mut() {
                    top.1 += 1;
                }
            }
        }
    }
    Ok(out)
}

fn verify_computation<'m>(module: &'m Module, c: CompId, names: &mut Names<'m>) -> Result<(), VerifyError> {
    let comp = module.comp(c);
    // Per arena slot (instruction ids index it): listed in the order, defined so far.
    let slots = comp.insts.len();
    let mut live = vec![false; slots];
    for &id in &comp.order {
        match live.get_mut(id.index()) {
            Some(seen) if !*seen => *seen = true,
            Some(_) => return Err(inst_error(comp, id, "is listed twice in the computation's order")),
            None => return Err(comp_error(comp, format!("{id} in the computation's order is not in the computation"))),
        }
    }
    let is_live = |id: InstId| live.get(id.index()).copied().unwrap_or(false);
    if !comp.has_root() || comp.insts.get(comp.root).is_none() {
        return Err(comp_error(comp, "the computation has no root"));
    }
    if !is_live(comp.root) {
        return Err(inst_error(comp, comp.root, "the root is not a live instruction"));
    }
    for (k, &p) in comp.params.iter().enumerate() {
        if comp.insts.get(p).is_none() || !is_live(p) {
            return Err(comp_error(comp, format!("parameter {k} ({p}) is not a live instruction")));
        }
        if comp.inst(p).op != Op::Parameter(k as u32) {
            return Err(inst_error(comp, p, format!("is listed as parameter {k} but is {:?}", comp.inst(p).op)));
        }
    }

    let mut defined = vec![false; slots];
    let mut operand_types: Vec<&Type> = Vec::new();
    for &id in &comp.order {
        let inst = comp.inst(id);
        if let Op::Parameter(k) = inst.op {
            if comp.params.get(k as usize) != Some(&id) {
                return Err(inst_error(
                    comp,
                    id,
                    format!("is parameter {k} but the computation's parameter {k} is another instruction or missing"),
                ));
            }
        }
        for (i, &o) in inst.operands.iter().enumerate() {
            if !defined.get(o.index()).copied().unwrap_or(false) {
                let what = match comp.insts.get(o) {
                    Some(op_inst) if is_live(o) => format!("%{} is defined after its use", op_inst.name),
                    Some(op_inst) => format!("%{} is not a live instruction", op_inst.name),
                    None => format!("{o} is not in the computation"),
                };
                return Err(inst_error(comp, id, format!("operand {i}: {what}")));
            }
        }
        if let Some(other) = names.insert(inst.name.as_str(), comp.name.as_str()) {
            return Err(inst_error(comp, id, format!("the name is already used in computation {other}")));
        }
        check_shapes(&inst.ty).map_err(|m| inst_error(comp, id, m))?;
        if let Op::Constant(lit) = &inst.op {
            check_shape(&lit.shape).map_err(|m| inst_error(comp, id, format!("constant: {m}")))?;
        }
        operand_types.clear();
        operand_types.extend(inst.operands.iter().map(|&o| &comp.inst(o).ty));
        infer::check_type(module, &inst.op, &operand_types, &inst.ty).map_err(|m| inst_error(comp, id, m))?;
        defined[id.index()] = true;
    }
    Ok(())
}

fn check_shapes(ty: &Type) -> Result<(), String> {
    ty.leaves().try_for_each(check_shape)
}

/// Dimensions are non-negative; a layout must list every dimension exactly once.
fn check_shape(s: &Shape) -> Result<(), String> {
    if let Some(d) = s.dims.iter().find(|&&d| d < 0) {
        return Err(format!("{s} has a negative dimension size {d}"));
    }
    let Some(layout) = &s.layout else { return Ok(()) };
    let mut seen = vec![false; s.rank()];
    let ok = layout.len() == s.rank()
        && layout.iter().all(|&d| d >= 0 && (d as usize) < s.rank() && !std::mem::replace(&mut seen[d as usize], true));
    if !ok {
        return Err(format!("layout {layout:?} of {s} is not a permutation of 0..{}", s.rank()));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use crate::ir::{BinaryOp, ElementType, Literal};

    /// `relu(x @ w + b)` summed over rows with a reduce: valid.
    fn mlp() -> Module {
        let mut m = Module::new("mlp");
        let add = binary_body(&mut m, "add_f32", BinaryOp::Add, ElementType::F32);
        let mut b = CompBuilder::new("main");
        let x = b.param(f32(&[2, 3]));
        let w = b.param(f32(&[3, 4]));
        let bias = b.param(f32(&[4]));
        let dims = crate::ir::DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() };
        let xw = b.op(Op::Dot(dims), &[x, w], f32(&[2, 4]));
        let bb = b.op(Op::BroadcastInDim { dims: vec![1] }, &[bias], f32(&[2, 4]));
        let sum = b.op(Op::Binary(BinaryOp::Add), &[xw, bb], f32(&[2, 4]));
        let zero = b.op(Op::Constant(Literal::scalar_f64(ElementType::F32, 0.0)), &[], f32(&[]));
        let zeros = b.op(Op::BroadcastInDim { dims: vec![] }, &[zero], f32(&[2, 4]));
        let relu = b.op(Op::Binary(BinaryOp::Max), &[sum, zeros], f32(&[2, 4]));
        let red = b.op(Op::Reduce { dims: vec![0], body: add }, &[relu, zero], f32(&[4]));
        with_entry(m, b.finish(red))
    }

    fn err(m: &Module) -> VerifyError {
        verify(m).expect_err("the module should be rejected")
    }

    #[test]
    fn valid_module_passes() {
        verify(&mlp()).unwrap();
    }

    #[test]
    fn layouts_are_ignored_when_comparing_types() {
        let mut m = mlp();
        let e = m.entry;
        let id = m.comp(e).order[5]; // the add
        m.comp_mut(e).inst_mut(id).ty = with_layout(f32(&[2, 4]), &[0, 1]);
        verify(&m).unwrap();
    }

    #[test]
    fn missing_entry() {
        let m = Module::new("empty");
        let e = err(&m);
        assert_eq!(e.message, "module empty has no entry computation");
        assert_eq!(e.to_string(), "0:0: module empty has no entry computation");
    }

    #[test]
    fn entry_without_root() {
        let mut b = CompBuilder::new("main");
        b.param(f32(&[2]));
        let m = with_entry(Module::new("m"), b.comp);
        let e = err(&m);
        assert_eq!((e.computation.as_str(), e.message.as_str()), ("main", "the computation has no root"));
    }

    #[test]
    fn root_must_be_live() {
        let mut m = mlp();
        let e = m.entry;
        m.comp_mut(e).order.pop();
        let e = err(&m);
        assert_eq!(e.inst, "main.reduce.9");
        assert_eq!(e.message, "the root is not a live instruction");
    }

    #[test]
    fn operand_defined_after_use() {
        let mut m = mlp();
        let e = m.entry;
        m.comp_mut(e).order.swap(4, 5); // the add before the broadcast it uses
        let e = err(&m);
        assert_eq!(e.inst, "main.add.5");
        assert_eq!(e.message, "operand 1: %main.broadcast.4 is defined after its use");
        assert_eq!(e.loc, Loc::at(6, 3));
        assert_eq!(e.to_string(), "6:3: in main, %main.add.5: operand 1: %main.broadcast.4 is defined after its use");
    }

    #[test]
    fn operand_not_live() {
        let mut m = mlp();
        let e = m.entry;
        m.comp_mut(e).order.remove(4); // the broadcast of the bias
        assert_eq!(err(&m).message, "operand 1: %main.broadcast.4 is not a live instruction");
    }

    #[test]
    fn parameters_are_numbered() {
        let mut m = mlp();
        let e = m.entry;
        m.comp_mut(e).params.swap(0, 1);
        let e = err(&m);
        assert_eq!(e.inst, "main.p1");
        assert_eq!(e.message, "is listed as parameter 0 but is Parameter(1)");
        let mut m = mlp();
        let e = m.entry;
        m.comp_mut(e).params.pop();
        assert_eq!(
            err(&m).message,
            "is parameter 2 but the computation's parameter 2 is another instruction or missing"
        );
    }

    #[test]
    fn declared_type_must_match_inferred() {
        let mut m = mlp();
        let e = m.entry;
        let id = m.comp(e).order[5];
        m.comp_mut(e).inst_mut(id).ty = f32(&[4, 2]);
        let e = err(&m);
        assert_eq!(e.inst, "main.add.5");
        assert_eq!(e.message, "add: declared type f32[4,2] but the operands give f32[2,4]");
    }

    #[test]
    fn callee_must_exist() {
        let mut m = mlp();
        let e = m.entry;
        let id = *m.comp(e).order.last().unwrap();
        m.comp_mut(e).inst_mut(id).op = Op::Reduce { dims: vec![0], body: CompId::from_u32(7) };
        assert_eq!(err(&m).message, "calls comp7, which does not exist");
    }

    #[test]
    fn reduce_body_signature() {
        let mut m = mlp();
        // Make the body return pred instead of f32.
        let body = m.comp(m.entry).inst(*m.comp(m.entry).order.last().unwrap()).op.called_computations()[0];
        let root = m.comp(body).root;
        m.comp_mut(body).inst_mut(root).op = Op::Compare { dir: crate::ir::CmpDir::Lt, kind: None };
        m.comp_mut(body).inst_mut(root).ty = pred(&[]);
        assert_eq!(err(&m).message, "reduce: body add_f32 result 0 is pred[] but must be f32[]");
    }

    #[test]
    fn comparator_returns_pred() {
        let mut m = Module::new("m");
        let add = binary_body(&mut m, "add", BinaryOp::Add, ElementType::F32);
        let mut b = CompBuilder::new("main");
        let x = b.param(f32(&[5]));
        let s = b.op(Op::Sort { dim: 0, stable: true, comparator: add }, &[x], f32(&[5]));
        let m = with_entry(m, b.finish(s));
        assert_eq!(err(&m).message, "sort: comparator add returns f32[] but must return pred[]");
    }

    /// `while (i < 10) i = i + 1` over an s32 counter and an f32 vector.
    fn counting_loop(cond_result: Type, body_result_is_tuple: bool) -> Module {
        let mut m = Module::new("loop");
        let state = [s32(&[]), f32(&[3])];
        let mut c = CompBuilder::new("cond");
        let i = c.param(state[0].clone());
        c.param(state[1].clone());
        let ten = c.op(Op::Constant(Literal::scalar_i64(ElementType::S32, 10)), &[], s32(&[]));
        let lt = c.op(Op::Compare { dir: crate::ir::CmpDir::Lt, kind: None }, &[i, ten], cond_result);
        let cond = m.add_computation(c.finish(lt));
        let mut b = CompBuilder::new("body");
        let i = b.param(state[0].clone());
        let v = b.param(state[1].clone());
        let one = b.op(Op::Constant(Literal::scalar_i64(ElementType::S32, 1)), &[], s32(&[]));
        let next = b.op(Op::Binary(BinaryOp::Add), &[i, one], s32(&[]));
        let root = if body_result_is_tuple { b.op(Op::Tuple, &[next, v], Type::Tuple(state.to_vec())) } else { next };
        let body = m.add_computation(b.finish(root));
        let mut e = CompBuilder::new("main");
        let i0 = e.param(s32(&[]));
        let v0 = e.param(f32(&[3]));
        let w = e.op(Op::While { cond, body }, &[i0, v0], Type::Tuple(state.to_vec()));
        let out = e.op(Op::GetTupleElement { index: 1 }, &[w], f32(&[3]));
        with_entry(m, e.finish(out))
    }

    #[test]
    fn while_signatures() {
        verify(&counting_loop(pred(&[]), true)).unwrap();
        // The compare itself is caught first: its declared type is wrong.
        assert_eq!(
            err(&counting_loop(s32(&[]), true)).message,
            "compare: declared type s32[] but the operands give pred[]"
        );
        assert_eq!(
            err(&counting_loop(pred(&[]), false)).message,
            "while: body body returns s32[] but the loop carries (s32[], f32[3])"
        );
    }

    #[test]
    fn while_cond_must_return_pred() {
        let mut m = counting_loop(pred(&[]), true);
        // Replace the cond's root by its counter parameter (s32[]).
        let cond = m.comps.keys().next().unwrap();
        let p = m.comp(cond).params[0];
        m.comp_mut(cond).root = p;
        assert_eq!(err(&m).message, "while: cond cond returns s32[] but must return pred[]");
    }

    /// `case index { 0 => x + y, 1 => x }` with the branch results given as parameters.
    fn two_branches(second_result: Type) -> Module {
        let mut m = Module::new("case");
        let mut b0 = CompBuilder::new("branch0");
        let x = b0.param(f32(&[2]));
        let y = b0.param(f32(&[2]));
        let r = b0.op(Op::Binary(BinaryOp::Add), &[x, y], f32(&[2]));
        let br0 = m.add_computation(b0.finish(r));
        let mut b1 = CompBuilder::new("branch1");
        let x = b1.param(second_result.clone());
        let br1 = m.add_computation(b1.finish(x));
        let mut e = CompBuilder::new("main");
        let idx = e.param(s32(&[]));
        let x = e.param(f32(&[2]));
        let y = e.param(f32(&[2]));
        let z = e.param(second_result);
        let c = e.op(
            Op::Case { branches: vec![br0, br1], branch_operands: vec![vec![0, 1], vec![2]] },
            &[idx, x, y, z],
            f32(&[2]),
        );
        with_entry(m, e.finish(c))
    }

    #[test]
    fn case_branches_return_one_type() {
        verify(&two_branches(f32(&[2]))).unwrap();
        assert_eq!(
            err(&two_branches(f32(&[3]))).message,
            "conditional: branch 1 (branch1) returns f32[3] but branch 0 (branch0) returns f32[2]"
        );
    }

    #[test]
    fn names_are_unique() {
        let mut m = mlp();
        let e = m.entry;
        let id = m.comp(e).order[5];
        m.comp_mut(e).inst_mut(id).name = "main.dot.3".to_string();
        let e = err(&m);
        assert_eq!(e.inst, "main.dot.3");
        assert_eq!(e.message, "the name is already used in computation main");
        // Across computations too.
        let mut m = mlp();
        let e = m.entry;
        let id = m.comp(e).order[5];
        m.comp_mut(e).inst_mut(id).name = "add_f32.p0".to_string();
        assert_eq!(err(&m).message, "the name is already used in computation add_f32");
    }

    #[test]
    fn call_graph_has_no_cycles() {
        let mut m = Module::new("rec");
        // f calls itself.
        let f_id = CompId::from_u32(0);
        let mut f = CompBuilder::new("f");
        let x = f.param(f32(&[]));
        let c = f.op(Op::Call { comp: f_id }, &[x], f32(&[]));
        assert_eq!(m.add_computation(f.finish(c)), f_id);
        let mut e = CompBuilder::new("main");
        let x = e.param(f32(&[]));
        let c = e.op(Op::Call { comp: f_id }, &[x], f32(&[]));
        let m = with_entry(m, e.finish(c));
        let e = err(&m);
        assert_eq!((e.computation.as_str(), e.inst.as_str()), ("f", "f.call.1"));
        assert_eq!(e.message, "calls f, which is already being called: the call graph has a cycle");
    }

    #[test]
    fn call_checks_signature() {
        let mut m = Module::new("m");
        let add = binary_body(&mut m, "add", BinaryOp::Add, ElementType::F32);
        let mut e = CompBuilder::new("main");
        let x = e.param(f32(&[]));
        let y = e.param(s32(&[]));
        let c = e.op(Op::Call { comp: add }, &[x, y], f32(&[]));
        let m = with_entry(m, e.finish(c));
        assert_eq!(err(&m).message, "call: add takes (f32[], f32[]) but is given (f32[], s32[])");
    }

    #[test]
    fn fusion_result_is_its_body_result() {
        let mut m = Module::new("m");
        let mut f = CompBuilder::new("fused");
        let a = f.param(f32(&[4]));
        let b = f.param(f32(&[4]));
        let s = f.op(Op::Binary(BinaryOp::Mul), &[a, b], f32(&[4]));
        let n = f.op(Op::Unary(crate::ir::UnaryOp::Neg), &[s], f32(&[4]));
        let body = m.add_computation(f.finish(n));
        let mut e = CompBuilder::new("main");
        let a = e.param(f32(&[4]));
        let b = e.param(f32(&[4]));
        let fu = e.op(Op::Fusion { kind: crate::ir::FusionKind::Loop, body }, &[a, b], f32(&[4]));
        let mut ok = with_entry(m, e.finish(fu));
        verify(&ok).unwrap();
        let entry = ok.entry;
        ok.comp_mut(entry).inst_mut(fu).ty = f32(&[2, 2]);
        assert_eq!(err(&ok).message, "fusion: declared type f32[2,2] but the operands give f32[4]");
    }

    #[test]
    fn layouts_are_permutations() {
        let mut m = mlp();
        let e = m.entry;
        let id = m.comp(e).order[5];
        m.comp_mut(e).inst_mut(id).ty = with_layout(f32(&[2, 4]), &[1, 1]);
        assert_eq!(err(&m).message, "layout [1, 1] of f32[2,4]{1,1} is not a permutation of 0..2");
        let mut m = mlp();
        let id = m.comp(e).order[5];
        m.comp_mut(e).inst_mut(id).ty = with_layout(f32(&[2, 4]), &[0]);
        assert_eq!(err(&m).message, "layout [0] of f32[2,4]{0} is not a permutation of 0..2");
    }

    #[test]
    fn dimensions_are_non_negative() {
        let mut m = mlp();
        let e = m.entry;
        let id = m.comp(e).order[0];
        m.comp_mut(e).inst_mut(id).ty = f32(&[2, -3]);
        assert_eq!(err(&m).message, "f32[2,-3] has a negative dimension size -3");
    }

    #[test]
    fn order_lists_each_instruction_once() {
        let mut m = mlp();
        let e = m.entry;
        let id = m.comp(e).order[3];
        m.comp_mut(e).order.insert(5, id);
        assert_eq!(err(&m).message, "is listed twice in the computation's order");
        // An id past the computation's instructions (a corrupt artifact's module): an
        // error, not an index out of bounds.
        let mut m = mlp();
        let beyond = InstId::new(m.comp(e).insts.len() + 3);
        m.comp_mut(e).order.push(beyond);
        assert!(err(&m).message.contains("is not in the computation"), "{}", err(&m).message);
    }

    #[test]
    fn unreachable_computations_are_not_checked() {
        let mut m = mlp();
        let mut junk = CompBuilder::new("junk");
        junk.param(f32(&[1]));
        m.add_computation(junk.comp); // no root, but nothing calls it
        verify(&m).unwrap();
    }
}
