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
//! - Layouts, where set, are permutations of `0..rank` (declared types and constants).

pub mod infer;

use crate::ir::{CompId, Computation, InstId, Loc, Module, Op, Shape, Type};
use std::collections::{HashMap, HashSet};
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

/// Checks every invariant listed in the module doc; returns the first violation.
pub fn verify(module: &Module) -> Result<(), VerifyError> {
    let comps = reachable(module)?;
    let mut names: HashMap<&str, &str> = HashMap::new();
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
    VerifyError { computation: comp.name.clone(), inst: inst.name.clone(), loc: inst.loc.clone(), message: message.into() }
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
    let mut state: HashMap<CompId, State> = HashMap::new();
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
                        format!("calls {}, which is already being called: the call graph has a cycle", callee_comp.name),
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

fn verify_computation<'m>(module: &'m Module, c: CompId, names: &mut HashMap<&'m str, &'m str>) -> Result<(), VerifyError> {
    let comp = module.comp(c);
    let mut live: HashSet<InstId> = HashSet::new();
    for &id in &comp.order {
        if !live.insert(id) {
            return Err(inst_error(comp, id, "is listed twice in the computation's order"));
        }
    }
    if !comp.has_root() || comp.insts.get(comp.root).is_none() {
        return Err(comp_error(comp, "the computation has no root"));
    }
    if !live.contains(&comp.root) {
        return Err(inst_error(comp, comp.root, "the root is not a live instruction"));
    }
    for (k, &p) in comp.params.iter().enumerate() {
        if comp.insts.get(p).is_none() || !live.contains(&p) {
            return Err(comp_error(comp, format!("parameter {k} ({p}) is not a live instruction")));
        }
        if comp.inst(p).op != Op::Parameter(k as u32) {
            return Err(inst_error(comp, p, format!("is listed as parameter {k} but is {:?}", comp.inst(p).op)));
        }
    }

    let mut defined: HashSet<InstId> = HashSet::new();
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
            if !defined.contains(&o) {
                let what = match comp.insts.get(o) {
                    Some(op_inst) if live.contains(&o) => format!("%{} is defined after its use", op_inst.name),
                    Some(op_inst) => format!("%{} is not a live instruction", op_inst.name),
                    None => format!("{o} is not in the computation"),
                };
                return Err(inst_error(comp, id, format!("operand {i}: {what}")));
            }
        }
        if let Some(other) = names.insert(inst.name.as_str(), comp.name.as_str()) {
            return Err(inst_error(comp, id, format!("the name is already used in computation {other}")));
        }
        check_layouts(&inst.ty).map_err(|m| inst_error(comp, id, m))?;
        if let Op::Constant(lit) = &inst.op {
            check_layout(&lit.shape).map_err(|m| inst_error(comp, id, format!("constant: {m}")))?;
        }
        let operand_types: Vec<&Type> = inst.operands.iter().map(|&o| &comp.inst(o).ty).collect();
        infer::check_type(module, &inst.op, &operand_types, &inst.ty).map_err(|m| inst_error(comp, id, m))?;
        defined.insert(id);
    }
    Ok(())
}

fn check_layouts(ty: &Type) -> Result<(), String> {
    ty.leaf_shapes().into_iter().try_for_each(check_layout)
}

/// A layout must list every dimension exactly once.
fn check_layout(s: &Shape) -> Result<(), String> {
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
