//! Interpreter: control flow and tuples.
//!
//! `while`, `case` (conditional), `call` and `fusion` run sub-computations through
//! [`Interpreter::call`]; tuples are plain `Value::Tuple`s. Loop iterations count against
//! the interpreter's budget so a runaway loop ends with an error, never a hang.

use super::{expect_arity, result_shape, scalar_index, Interpreter};
use crate::ir::{Instruction, Literal, Op, Scalar, Value};

/// Runs a sub-computation, turning its error into this instruction's message.
fn run_comp(interp: &mut Interpreter, comp: crate::ir::CompId, args: &[Value]) -> Result<Value, String> {
    interp.call(comp, args).map_err(|e| e.to_string())
}

/// `while`: the N loop-carried values go through `body` while `cond` holds.
pub(super) fn while_loop(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::While { cond, body } = inst.op else { return Err("expected a while op".into()) };
    let n = args.len();
    if n == 0 {
        return Err("while needs at least one loop-carried value".into());
    }
    let mut state: Vec<Value> = args.to_vec();
    loop {
        let keep_going = match run_comp(interp, cond, &state)? {
            Value::Array(l) if l.shape.rank() == 0 && l.elem().is_pred() => l.get(0) == Scalar::Pred(true),
            other => return Err(format!("while condition must return a pred scalar, got {}", other.ty())),
        };
        if !keep_going {
            break;
        }
        interp.count_loop_iteration()?;
        let next = interp.call_owned(body, std::mem::take(&mut state)).map_err(|e| e.to_string())?;
        state = if n == 1 {
            vec![next]
        } else {
            match next {
                Value::Tuple(vs) if vs.len() == n => vs,
                other => return Err(format!("while body must return {n} values, got {}", other.ty())),
            }
        };
    }
    Ok(if n == 1 { state.pop().unwrap_or(Value::Tuple(vec![])) } else { Value::Tuple(state) })
}

/// `case` / XLA `conditional`: an s32 index (out of range selects the last branch) or a
/// pred (true selects branch 0, false branch 1).
pub(super) fn case(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Case { branches, branch_operands } = &inst.op else { return Err("expected a case op".into()) };
    if branches.is_empty() {
        return Err("case needs at least one branch".into());
    }
    let selector = super::expect_array(inst, args, 0)?;
    let last = branches.len() - 1;
    let branch = if selector.elem().is_pred() {
        if selector.shape.rank() != 0 {
            return Err(format!("case selector must be a scalar, got {}", selector.shape));
        }
        // XLA's pred conditional: true runs the first branch, false the second.
        if selector.get(0) == Scalar::Pred(true) {
            0
        } else {
            1.min(last)
        }
    } else {
        let i = scalar_index(inst, args, 0)?;
        if i < 0 || i as usize > last {
            last
        } else {
            i as usize
        }
    };
    let operands: Vec<Value> = match branch_operands.get(branch) {
        Some(list) => list
            .iter()
            .map(|&k| {
                args.get(k as usize + 1).cloned().ok_or_else(|| format!("branch {branch} uses missing operand {k}"))
            })
            .collect::<Result<_, _>>()?,
        // No list: the branch takes every operand after the selector.
        None => args[1..].to_vec(),
    };
    run_comp(interp, branches[branch], &operands)
}

/// XLA `call`: runs the callee on all operands.
pub(super) fn call(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Call { comp } = inst.op else { return Err("expected a call op".into()) };
    run_comp(interp, comp, args)
}

/// A fusion computes exactly what its body computes.
pub(super) fn fusion(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Fusion { body, .. } = inst.op else { return Err("expected a fusion op".into()) };
    run_comp(interp, body, args)
}

pub(super) fn tuple(_: &mut Interpreter, _: &Instruction, args: &[Value]) -> Result<Value, String> {
    Ok(Value::Tuple(args.to_vec()))
}

pub(super) fn get_tuple_element(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::GetTupleElement { index } = inst.op else { return Err("expected a get-tuple-element op".into()) };
    expect_arity(inst, args, 1)?;
    match &args[0] {
        Value::Tuple(vs) => vs
            .get(index as usize)
            .cloned()
            .ok_or_else(|| format!("tuple index {index} out of range for a tuple of {}", vs.len())),
        other => Err(format!("get-tuple-element needs a tuple, got {}", other.ty())),
    }
}

/// Returns the operands unchanged: the single one, or a tuple of several.
pub(super) fn optimization_barrier(_: &mut Interpreter, _: &Instruction, args: &[Value]) -> Result<Value, String> {
    Ok(if args.len() == 1 { args[0].clone() } else { Value::Tuple(args.to_vec()) })
}

/// `replica-id` / `partition-id`: a single-device run is replica 0 of partition 0.
pub(super) fn zero_id(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    expect_arity(inst, args, 0)?;
    let shape = result_shape(inst)?;
    if shape.rank() != 0 || !shape.elem.is_int() {
        return Err(format!("{} must produce an integer scalar, its type is {shape}", inst.op.hlo_name()));
    }
    Ok(Value::Array(Literal::zeros(shape.clone())))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::ir::{BinaryOp, CmpDir, ElementType::*, Op, Type, Value};

    fn s32(v: i64) -> Value {
        ints(S32, &[], &[v]).into()
    }

    /// while (i < 5) { i += 1; acc *= 2 } from (0, 1) -> (5, 32).
    #[test]
    fn while_counts_and_carries_tuple() {
        let mut m = TestModule::new();
        let t = arr(S32, &[]);
        let cond = m.comp("cond", &[t.clone(), t.clone()], |b, p| {
            let five = b.constant(ints(S32, &[], &[5]));
            b.op(Op::Compare { dir: CmpDir::Lt, kind: None }, &[p[0], five], arr(Pred, &[]))
        });
        let body = m.comp("body", &[t.clone(), t.clone()], |b, p| {
            let one = b.constant(ints(S32, &[], &[1]));
            let two = b.constant(ints(S32, &[], &[2]));
            let i = b.op(Op::Binary(BinaryOp::Add), &[p[0], one], t.clone());
            let acc = b.op(Op::Binary(BinaryOp::Mul), &[p[1], two], t.clone());
            b.tuple(&[i, acc])
        });
        let out = m.run_op(Op::While { cond, body }, Type::Tuple(vec![t.clone(), t]), &[s32(0), s32(1)]).unwrap();
        assert_eq!(out, Value::Tuple(vec![s32(5), s32(32)]));
    }

    #[test]
    fn while_with_one_value_is_not_a_tuple_and_runaway_loops_stop() {
        let mut m = TestModule::new();
        let t = arr(S32, &[]);
        let cond = m.comp("cond", std::slice::from_ref(&t), |b, _| b.constant(preds(&[], &[true])));
        let body = m.comp("body", std::slice::from_ref(&t), |_, p| p[0]);
        let module = m.finish_with_entry(std::slice::from_ref(&t), |b, p| b.op(Op::While { cond, body }, p, t.clone()));
        let mut interp = crate::interp::Interpreter::new(&module);
        interp.max_loop_iterations = 100;
        let err = interp.run(&[s32(0)]).unwrap_err();
        assert!(err.message.contains("gave up after 100"), "{err}");

        let mut m = TestModule::new();
        let cond = m.comp("cond", std::slice::from_ref(&t), |b, p| {
            let ten = b.constant(ints(S32, &[], &[10]));
            b.op(Op::Compare { dir: CmpDir::Lt, kind: None }, &[p[0], ten], arr(Pred, &[]))
        });
        let body = m.comp("body", std::slice::from_ref(&t), |b, p| {
            let three = b.constant(ints(S32, &[], &[3]));
            b.op(Op::Binary(BinaryOp::Add), &[p[0], three], arr(S32, &[]))
        });
        assert_eq!(m.run_op(Op::While { cond, body }, t, &[s32(1)]).unwrap(), s32(10));
    }

    fn case_module(selector: Value) -> Result<Value, crate::interp::InterpError> {
        let mut m = TestModule::new();
        let t = arr(S32, &[]);
        // branch 0: a + b, branch 1: a * b, branch 2: b (gets only operand 1).
        let b0 =
            m.comp("b0", &[t.clone(), t.clone()], |b, p| b.op(Op::Binary(BinaryOp::Add), &[p[0], p[1]], arr(S32, &[])));
        let b1 =
            m.comp("b1", &[t.clone(), t.clone()], |b, p| b.op(Op::Binary(BinaryOp::Mul), &[p[0], p[1]], arr(S32, &[])));
        let b2 = m.comp("b2", std::slice::from_ref(&t), |_, p| p[0]);
        let op = Op::Case { branches: vec![b0, b1, b2], branch_operands: vec![vec![0, 1], vec![0, 1], vec![1]] };
        m.run_op(op, t, &[selector, s32(6), s32(7)])
    }

    #[test]
    fn case_selects_branches() {
        assert_eq!(case_module(s32(0)).unwrap(), s32(13));
        assert_eq!(case_module(s32(1)).unwrap(), s32(42));
        assert_eq!(case_module(s32(2)).unwrap(), s32(7));
        // Out of range (either side) runs the last branch.
        assert_eq!(case_module(s32(9)).unwrap(), s32(7));
        assert_eq!(case_module(s32(-1)).unwrap(), s32(7));
        // pred: true -> branch 0, false -> branch 1.
        assert_eq!(case_module(preds(&[], &[true]).into()).unwrap(), s32(13));
        assert_eq!(case_module(preds(&[], &[false]).into()).unwrap(), s32(42));
        assert!(case_module(f32s(&[], &[0.0]).into()).is_err());
    }

    #[test]
    fn call_fusion_tuples_and_ids() {
        let mut m = TestModule::new();
        let t = arr(F32, &[2]);
        let callee = m.comp("callee", &[t.clone(), t.clone()], |b, p| {
            b.op(Op::Binary(BinaryOp::Sub), &[p[0], p[1]], arr(F32, &[2]))
        });
        let a: Value = f32s(&[2], &[5.0, 1.0]).into();
        let b: Value = f32s(&[2], &[2.0, 4.0]).into();
        let want: Value = f32s(&[2], &[3.0, -3.0]).into();
        let m2 = TestModule { module: m.module.clone() };
        assert_eq!(m.run_op(Op::Call { comp: callee }, t.clone(), &[a.clone(), b.clone()]).unwrap(), want);
        let fusion = Op::Fusion { kind: crate::ir::FusionKind::Loop, body: callee };
        assert_eq!(m2.run_op(fusion, t.clone(), &[a.clone(), b.clone()]).unwrap(), want);

        let tup = run_op(Op::Tuple, Type::Tuple(vec![t.clone(), t.clone()]), &[a.clone(), b.clone()]).unwrap();
        assert_eq!(tup, Value::Tuple(vec![a.clone(), b.clone()]));
        let gte = run_op(Op::GetTupleElement { index: 1 }, t.clone(), std::slice::from_ref(&tup)).unwrap();
        assert_eq!(gte, b);
        assert!(run_op(Op::GetTupleElement { index: 2 }, t.clone(), std::slice::from_ref(&tup)).is_err());
        assert!(run_op(Op::GetTupleElement { index: 0 }, t.clone(), std::slice::from_ref(&a)).is_err());
        let barrier = run_op(Op::OptimizationBarrier, t.clone(), std::slice::from_ref(&a)).unwrap();
        assert_eq!(barrier, a);
        assert_eq!(run_op(Op::ReplicaId, arr(U32, &[]), &[]).unwrap(), uints(U32, &[], &[0]).into());
        assert_eq!(run_op(Op::PartitionId, arr(S32, &[]), &[]).unwrap(), s32(0));
    }
}
