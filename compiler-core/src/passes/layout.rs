//! Layout assignment: gives every array an explicit physical layout and turns the
//! reshapes and transposes that then move no data into `bitcast`s.
//!
//! Why: a backend must know how each array is laid out in memory before it can emit
//! kernels or plan buffers. Once layouts are fixed, some data-movement ops turn out to
//! be free: a reshape between row-major arrays keeps every element at the same byte, and
//! a transpose whose result layout lists the operand's physical order is a relabelling
//! of the same bytes. As `bitcast`s they launch no kernel and need no buffer (the cost
//! model and `passes::buffers` treat them as aliases).
//!
//! What it does, per computation (callers before callees):
//! - Every array without a layout gets row-major (`{n-1,...,0}`), as XLA's CPU and GPU
//!   backends choose for parameters and results. Layouts already present (from an XLA
//!   dump, or a previous run) are kept: they may be an ABI, and existing bitcasts depend
//!   on them. Parameters of a fusion body called from one place take the layouts of the
//!   fusion's operands, since that is the memory the kernel reads.
//! - `reshape-to-bitcast`: a reshape whose operand and result are both row-major (size-1
//!   dimensions may sit anywhere) keeps the physical order, so it becomes a bitcast.
//! - `transpose-to-bitcast`: a transpose is a bitcast when its operand's physical
//!   dimension order, seen through the permutation, is the result's (size-1 dimensions
//!   ignored). With a row-major result that holds only for transposes that move size-1
//!   dimensions. Otherwise, when every user accepts an operand in any layout (elementwise
//!   ops, which index each operand through its layout, and fusions, whose kernels do the
//!   same) and the transpose is not the computation's result, its result gets the
//!   permuted operand layout, which makes it a bitcast: the transpose is folded into the
//!   users' reads instead of being a copy of its own.
//!
//! Refused: a reshape whose operand or result has a non-row-major layout stays a reshape
//! (proving it physical would need to factor the dimensions; keeping it is always
//! correct). A transpose used by anything else (a dot, a reduce, a tuple, the root...)
//! keeps a row-major result and stays a transpose, since those users expect row-major
//! operands. Malformed instructions (a permutation of the wrong rank, a non-array
//! operand) are left alone.
//!
//! Provenance: none to record. A bitcast is the reshape or transpose rewritten in place
//! (logged as a `Rewrite`): it keeps the instruction's name, so its graph id, and no
//! instruction is added or removed.
//!
//! The interpreter evaluates reshapes and transposes logically and bitcasts physically
//! (through both layouts), so a wrong layout here shows up as wrong values; the tests
//! run modules before and after on random inputs and compare bit for bit.

use super::{Changed, Pass, PassLog, Rewrite};
use crate::ir::{is_permutation, CompId, Module, Op, Shape, Type};
use std::collections::HashMap;

/// The layout assignment pass (`layout-assignment`).
pub struct LayoutAssignment;

impl Pass for LayoutAssignment {
    fn name(&self) -> &'static str {
        "layout-assignment"
    }
    fn run(&self, module: &mut Module, log: &mut PassLog) -> Changed {
        let mut comps = module.post_order();
        comps.reverse();
        // How many fusion instructions call each body: a body called from one place can
        // take that caller's operand layouts.
        let fusion_callers = module.fusion_callers();
        let mut param_types: HashMap<CompId, Vec<Type>> = HashMap::new();
        let mut changed = false;
        for c in comps {
            changed |= assign_computation(module, c, &fusion_callers, &mut param_types, log);
        }
        changed
    }
}

/// The row-major layout of rank `n`: `{n-1, ..., 0}`.
fn row_major(n: usize) -> Vec<i64> {
    (0..n as i64).rev().collect()
}

/// Gives every array of `ty` without a layout the row-major one.
fn fill_row_major(ty: &mut Type) -> bool {
    match ty {
        Type::Array(s) if s.layout.is_none() => {
            s.layout = Some(row_major(s.rank()));
            true
        }
        Type::Tuple(ts) => ts.iter_mut().fold(false, |c, t| fill_row_major(t) | c),
        _ => false,
    }
}

/// Copies the layouts of `from` into the arrays of `ty` that have none (same structure
/// and dimensions required; otherwise nothing is copied).
fn fill_from(ty: &mut Type, from: &Type) -> bool {
    match (ty, from) {
        (Type::Array(s), Type::Array(f)) if s.layout.is_none() && s.dims == f.dims => {
            s.layout = Some(f.minor_to_major());
            true
        }
        (Type::Tuple(ts), Type::Tuple(fs)) if ts.len() == fs.len() => {
            ts.iter_mut().zip(fs).fold(false, |c, (t, f)| fill_from(t, f) | c)
        }
        _ => false,
    }
}

/// The non-size-1 dimensions of `shape` from most major to most minor.
fn physical_dims(shape: &Shape, minor_to_major: &[i64]) -> Vec<i64> {
    minor_to_major.iter().rev().copied().filter(|&d| shape.dims.get(d as usize).is_some_and(|&n| n != 1)).collect()
}

/// Whether `shape` is row-major once size-1 dimensions are ignored.
fn is_effectively_row_major(shape: &Shape) -> bool {
    physical_dims(shape, &shape.minor_to_major()).windows(2).all(|w| w[0] < w[1])
}

/// Whether a transpose from `x` to `y` by `perm` keeps every element at the same
/// physical offset under the shapes' layouts.
fn transpose_is_bitcast(x: &Shape, y: &Shape, perm: &[i64]) -> bool {
    let seen_through: Vec<i64> = physical_dims(y, &y.minor_to_major()).iter().map(|&d| perm[d as usize]).collect();
    physical_dims(x, &x.minor_to_major()) == seen_through
}

/// Users that read an operand in any layout (they index it through its layout).
fn accepts_any_layout(op: &Op) -> bool {
    super::buffers::elementwise_same_dims(op) || matches!(op, Op::Fusion { .. })
}

fn assign_computation(
    module: &mut Module,
    c: CompId,
    fusion_callers: &rustc_hash::FxHashMap<CompId, usize>,
    param_types: &mut HashMap<CompId, Vec<Type>>,
    log: &mut PassLog,
) -> bool {
    let mut changed = false;
    let users = module.comp(c).users();
    let from_caller = param_types.remove(&c);
    let order = module.comp(c).order.clone();
    for id in order {
        let comp = module.comp(c);
        let inst = comp.inst(id);
        let mut ty = inst.ty.clone();
        // Parameters of a fusion body follow the caller's operands.
        if let (Op::Parameter(n), Some(types)) = (&inst.op, &from_caller) {
            if let Some(t) = types.get(*n as usize) {
                changed |= fill_from(&mut ty, t);
            }
        }
        let mut new_op = None;
        let operand_shape =
            inst.operands.first().and_then(|&o| comp.insts.get(o)).and_then(|o| o.ty.as_array()).cloned();
        match (&inst.op, &mut ty, operand_shape) {
            (Op::Transpose { perm }, Type::Array(y), Some(x))
                if is_permutation(perm, x.rank()) && y.rank() == x.rank() && operand_layout_ok(&x) =>
            {
                if y.layout.is_none() {
                    let mut rm = y.clone();
                    rm.layout = Some(row_major(y.rank()));
                    let us = users.get(id);
                    let folds = !transpose_is_bitcast(&x, &rm, perm)
                        && comp.root != id
                        && !us.is_empty()
                        && us.iter().all(|&u| {
                            let op = &comp.inst(u).op;
                            accepts_any_layout(op)
                                && match op {
                                    Op::Fusion { body, .. } => fusion_callers.get(body) == Some(&1),
                                    _ => true,
                                }
                        });
                    if folds {
                        // Result dimension i is operand dimension perm[i]: list the result
                        // dimensions in the operand's physical order.
                        let mut inverse = vec![0i64; perm.len()];
                        for (i, &p) in perm.iter().enumerate() {
                            inverse[p as usize] = i as i64;
                        }
                        y.layout = Some(x.minor_to_major().iter().map(|&d| inverse[d as usize]).collect());
                    } else {
                        y.layout = rm.layout;
                    }
                    changed = true;
                }
                if transpose_is_bitcast(&x, y, perm) {
                    new_op = Some((Op::Bitcast, "transpose-to-bitcast"));
                }
            }
            (Op::Reshape, Type::Array(y), Some(x)) if operand_layout_ok(&x) && x.elem == y.elem => {
                changed |= fill_row_major(&mut ty);
                let y = ty.as_array().expect("still an array");
                if is_effectively_row_major(&x) && is_effectively_row_major(y) && x.num_elements() == y.num_elements() {
                    new_op = Some((Op::Bitcast, "reshape-to-bitcast"));
                }
            }
            _ => {}
        }
        changed |= fill_row_major(&mut ty);
        let name = inst.name.clone();
        let callee = match &inst.op {
            Op::Fusion { body, .. } if fusion_callers.get(body) == Some(&1) => Some(*body),
            _ => None,
        };
        let operand_types: Vec<Type> =
            inst.operands.iter().filter_map(|&o| comp.insts.get(o)).map(|o| o.ty.clone()).collect();
        let inst = module.comp_mut(c).inst_mut(id);
        inst.ty = ty;
        if let Some((op, rule)) = new_op {
            inst.op = op;
            log.rewrites.push(Rewrite { rule, inst: name });
            changed = true;
        }
        if let Some(body) = callee {
            param_types.insert(body, operand_types);
        }
    }
    changed
}

/// An operand layout that is a valid permutation (or absent, meaning row-major).
fn operand_layout_ok(x: &Shape) -> bool {
    is_permutation(&x.minor_to_major(), x.rank())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::testutil::*;
    use crate::ir::Value;
    use crate::ir::{BinaryOp, ElementType::*, FusionKind, InstId, UnaryOp};
    use crate::passes::simplify::tests::{random_literal, XorShift};

    /// Runs both modules on `trials` random inputs (NaN, ±0, ±inf included) and asserts
    /// the results agree bit for bit. Only the layouts of the signatures may differ.
    fn assert_same_results(before: &Module, after: &Module, trials: u64) {
        let params = before.entry_comp().param_types();
        assert!(params.iter().zip(after.entry_comp().param_types()).all(|(a, b)| a.same_type(&b)));
        for seed in 1..=trials {
            let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let args: Vec<Value> =
                params.iter().map(|t| Value::Array(random_literal(&mut rng, t.as_array().unwrap()))).collect();
            let want = crate::interp::run(before, &args).unwrap().flatten();
            let got = crate::interp::run(after, &args).unwrap().flatten();
            assert_eq!(want.len(), got.len());
            for (w, g) in want.iter().zip(&got) {
                assert!(w.shape.same_shape(&g.shape), "{} vs {}", w.shape, g.shape);
                assert_eq!(w.to_le_bytes(), g.to_le_bytes(), "seed {seed}");
            }
        }
    }

    fn layout_of(module: &Module, id: InstId) -> Vec<i64> {
        module.entry_comp().inst(id).ty.as_array().unwrap().layout.clone().unwrap()
    }

    /// p: f32[2,3,4]. r = reshape(p) f32[6,4]: a bitcast. t = transpose(p, {2,0,1})
    /// f32[4,2,3] used only by exp: a bitcast whose layout is p's order seen through the
    /// permutation, {0,2,1} (worked out below). u = transpose(p, {1,0,2}) used by the root
    /// tuple: stays. v = transpose(q f32[1,5] -> f32[5,1]): moves a size-1 dimension, a
    /// bitcast with row-major layouts. w = reshape of q2 (f32[2,3]{0,1}, column-major)
    /// to f32[6]: refused.
    #[test]
    fn reshapes_and_transposes_become_bitcasts() {
        let mut col = Shape::new(F32, vec![2, 3]);
        col.layout = Some(vec![0, 1]);
        let (mut ids, mut names) = (Vec::new(), Vec::new());
        let before = TestModule::new().finish_with_entry(
            &[arr(F32, &[2, 3, 4]), arr(F32, &[1, 5]), Type::Array(col)],
            |b, p| {
                let r = b.op(Op::Reshape, &[p[0]], arr(F32, &[6, 4]));
                let t = b.op(Op::Transpose { perm: vec![2, 0, 1] }, &[p[0]], arr(F32, &[4, 2, 3]));
                let e = b.op(Op::Unary(UnaryOp::Exp), &[t], arr(F32, &[4, 2, 3]));
                let u = b.op(Op::Transpose { perm: vec![1, 0, 2] }, &[p[0]], arr(F32, &[3, 2, 4]));
                let v = b.op(Op::Transpose { perm: vec![1, 0] }, &[p[1]], arr(F32, &[5, 1]));
                let w = b.op(Op::Reshape, &[p[2]], arr(F32, &[6]));
                ids = vec![r, t, e, u, v, w];
                b.tuple(&[r, e, u, v, w])
            },
        );
        for &i in &ids {
            names.push(before.entry_comp().inst(i).name.clone());
        }
        let mut after = before.clone();
        let mut log = PassLog::default();
        assert!(LayoutAssignment.run(&mut after, &mut log));
        crate::verify::verify(&after).unwrap();
        let rules: Vec<(&str, &str)> = log.rewrites.iter().map(|r| (r.rule, r.inst.as_str())).collect();
        assert_eq!(
            rules,
            vec![
                ("reshape-to-bitcast", names[0].as_str()),
                ("transpose-to-bitcast", names[1].as_str()),
                ("transpose-to-bitcast", names[4].as_str()),
            ]
        );
        let comp = after.entry_comp();
        let op = |k: usize| comp.inst(ids[k]).op.clone();
        assert_eq!((op(0), op(1), op(4)), (Op::Bitcast, Op::Bitcast, Op::Bitcast));
        assert!(matches!(op(3), Op::Transpose { .. }));
        assert_eq!(op(5), Op::Reshape);
        // p is {2,1,0}: its physical order, major to minor, is dims 0,1,2, which are the
        // result's dims 1,2,0 (perm {2,0,1}): minor-to-major {0,2,1}.
        assert_eq!(layout_of(&after, ids[1]), vec![0, 2, 1]);
        assert_eq!(layout_of(&after, ids[2]), vec![2, 1, 0]);
        assert_eq!(layout_of(&after, ids[3]), vec![2, 1, 0]);
        assert_eq!(layout_of(&after, ids[0]), vec![1, 0]);
        // Every array has a layout, the parameters included; q2 keeps its own.
        assert!(comp.order.iter().all(|&i| comp.inst(i).ty.leaf_shapes().iter().all(|s| s.layout.is_some())));
        assert_eq!(comp.inst(comp.params[2]).ty.as_array().unwrap().layout, Some(vec![0, 1]));
        assert_same_results(&before, &after, 10);
        // A second run finds nothing to do.
        let mut log2 = PassLog::default();
        assert!(!LayoutAssignment.run(&mut after, &mut log2));
        assert!(log2.rewrites.is_empty());
    }

    /// A transpose read by a fusion: the fusion body's parameter takes the transposed
    /// layout, and the module computes the same values.
    #[test]
    fn transpose_into_fusion() {
        let mut m = TestModule::new();
        let t = arr(S32, &[3, 2]);
        let body = m.comp("fused", &[t.clone(), t.clone()], |b, p| {
            let s = b.op(Op::Binary(BinaryOp::Add), &[p[0], p[1]], t.clone());
            b.op(Op::Unary(UnaryOp::Neg), &[s], t.clone())
        });
        let before = m.finish_with_entry(&[arr(S32, &[2, 3]), t.clone()], |b, p| {
            let tr = b.op(Op::Transpose { perm: vec![1, 0] }, &[p[0]], t.clone());
            let f = b.op(Op::Fusion { kind: FusionKind::Loop, body }, &[tr, p[1]], t.clone());
            // Reshaping the fusion's (row-major) result is a bitcast.
            b.op(Op::Reshape, &[f], arr(S32, &[6]))
        });
        let mut after = before.clone();
        let mut log = PassLog::default();
        assert!(LayoutAssignment.run(&mut after, &mut log));
        crate::verify::verify(&after).unwrap();
        assert_eq!(log.rewrites.len(), 2);
        let comp = after.entry_comp();
        let tr = comp.order[2];
        assert_eq!(comp.inst(tr).op, Op::Bitcast);
        assert_eq!(layout_of(&after, tr), vec![0, 1]);
        let body_comp = after.comp(body);
        assert_eq!(body_comp.inst(body_comp.params[0]).ty.as_array().unwrap().layout, Some(vec![0, 1]));
        assert_eq!(body_comp.inst(body_comp.params[1]).ty.as_array().unwrap().layout, Some(vec![1, 0]));
        assert_same_results(&before, &after, 10);
    }

    /// Transposes that are the result, or feed a dot-like user, keep row-major; odd
    /// modules (tuples, tokens, malformed permutations) do not panic.
    #[test]
    fn refusals_and_odd_modules() {
        let before = TestModule::new().finish_with_entry(&[arr(F32, &[2, 3])], |b, p| {
            let t = b.op(Op::Transpose { perm: vec![1, 0] }, &[p[0]], arr(F32, &[3, 2]));
            let bad = b.op(Op::Transpose { perm: vec![0, 0] }, &[p[0]], arr(F32, &[3, 2]));
            let tok = b.op(Op::AfterAll, &[], Type::Token);
            let tup = b.tuple(&[t, tok, bad]);
            let g = b.op(Op::GetTupleElement { index: 0 }, &[tup], arr(F32, &[3, 2]));
            let t2 = b.op(Op::Transpose { perm: vec![1, 0] }, &[g], arr(F32, &[2, 3]));
            b.tuple(&[t2, tup])
        });
        let mut after = before.clone();
        let mut log = PassLog::default();
        assert!(LayoutAssignment.run(&mut after, &mut log));
        assert!(log.rewrites.is_empty(), "{:?}", log.rewrites);
        let comp = after.entry_comp();
        assert_eq!(layout_of(&after, comp.order[1]), vec![1, 0]);
        let tup = &comp.inst(comp.order[4]).ty;
        assert_eq!(tup.leaf_shapes().len(), 2);
        assert!(tup.leaf_shapes().iter().all(|s| s.layout == Some(vec![1, 0])));
    }
}
