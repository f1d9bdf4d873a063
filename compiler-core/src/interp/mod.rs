//! The reference interpreter: the numerics oracle for every pass and target.
//!
//! Slow is fine, wrong is not. Values are [`Literal`]s in logical row-major order (see
//! `ir/literal.rs` for how narrow types are carried); each op is evaluated by a function
//! of one signature, [`EvalFn`], in the file for its family of ops.
//!
//! Helpers for those functions live here: `expect_arity`, `expect_array`, `result_shape`,
//! `check_result`, `scalar_index`, `for_each_index` (row-major multi-indices),
//! `linear_offset`, `set_elem`, and `Interpreter::{call_flat, call_owned, operand_type}`.
//! Tests build modules with `testutil` (no parser needed). An operand's last use moves
//! its value into the op instead of copying it.

pub mod check;
mod control;
mod conv;
mod custom_call;
mod dot;
mod elementwise;
mod gather_scatter;
mod index;
mod linalg;
mod random_inputs;
mod reduce;
mod rng;
mod shape_ops;
pub(crate) mod sort;
#[cfg(test)]
pub(crate) mod testutil;
mod window;

pub use random_inputs::{random_inputs, try_random_inputs, SplitMix64};

use crate::ir::{CompId, Data, InstId, Instruction, Literal, Loc, Module, Op, Shape, Type, Value};
use cranelift_entity::SecondaryMap;
use std::fmt;

/// A failure while running a module: an unsupported op or value, a failed check, or a
/// runaway loop. Carries the instruction and its source location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterpError {
    pub inst: String,
    pub loc: Loc,
    pub message: String,
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: %{}: {}", self.loc, self.inst, self.message)
    }
}

impl std::error::Error for InterpError {}

/// Evaluates one instruction given its operand values.
pub(crate) type EvalFn = fn(&mut Interpreter, &Instruction, &[Value]) -> Result<Value, String>;

/// Runs custom calls the interpreter does not know (the conformance `check.*` ops).
pub type CustomCallHook<'h> = dyn FnMut(&Instruction, &[Value]) -> Result<Value, String> + 'h;

pub struct Interpreter<'m, 'h> {
    pub module: &'m Module,
    custom_call: Option<Box<CustomCallHook<'h>>>,
    /// Total `while` iterations allowed in one run before giving up (never hang).
    pub max_loop_iterations: u64,
    loop_iterations: u64,
    /// What [`Interpreter::run`] checks the module against before evaluating anything:
    /// every value it allocates has one of the module's types.
    pub limits: crate::limits::Limits,
    /// Computations being run, innermost last (so an op can look at its operands' types).
    comp_stack: Vec<CompId>,
}

impl<'m, 'h> Interpreter<'m, 'h> {
    pub fn new(module: &'m Module) -> Self {
        Interpreter {
            module,
            custom_call: None,
            max_loop_iterations: 10_000_000,
            loop_iterations: 0,
            limits: crate::limits::Limits::default(),
            comp_stack: Vec::new(),
        }
    }

    pub fn with_custom_call_hook(
        mut self,
        hook: impl FnMut(&Instruction, &[Value]) -> Result<Value, String> + 'h,
    ) -> Self {
        self.custom_call = Some(Box::new(hook));
        self
    }

    /// Runs the entry computation, once the module is within [`Interpreter::limits`] (a
    /// module built directly, never verified, gets an error rather than an allocation
    /// the machine cannot grant).
    pub fn run(&mut self, args: &[Value]) -> Result<Value, InterpError> {
        crate::limits::check_module(self.module, &self.limits).map_err(|e| InterpError {
            inst: e.inst,
            loc: e.loc,
            message: e.message,
        })?;
        self.call(self.module.entry, args)
    }

    /// Runs computation `comp` on `args` (one value per parameter).
    pub fn call(&mut self, comp_id: CompId, args: &[Value]) -> Result<Value, InterpError> {
        self.call_owned(comp_id, args.to_vec())
    }

    /// Like [`Interpreter::call`], but takes the arguments by value, so that a caller
    /// that owns them (a `while` body's state) does not copy them.
    pub fn call_owned(&mut self, comp_id: CompId, args: Vec<Value>) -> Result<Value, InterpError> {
        self.comp_stack.push(comp_id);
        let result = self.call_inner(comp_id, args);
        self.comp_stack.pop();
        result
    }

    /// The declared type of operand `i` of `inst`, an instruction of the computation now
    /// running (`Bitcast` needs the operand's layout, which values do not carry).
    pub(crate) fn operand_type(&self, inst: &Instruction, i: usize) -> Option<&'m Type> {
        let module = self.module;
        let comp = module.comps.get(*self.comp_stack.last()?)?;
        let id = *inst.operands.get(i)?;
        comp.insts.get(id).map(|o| &o.ty)
    }

    fn call_inner(&mut self, comp_id: CompId, args: Vec<Value>) -> Result<Value, InterpError> {
        let module = self.module;
        let Some(comp) = module.comps.get(comp_id) else {
            return Err(InterpError {
                inst: comp_id.to_string(),
                loc: Loc::default(),
                message: format!("computation {comp_id} does not exist"),
            });
        };
        if !comp.has_root() {
            return Err(InterpError {
                inst: comp.name.clone(),
                loc: Loc::default(),
                message: format!("computation {} has no root", comp.name),
            });
        }
        if args.len() != comp.params.len() {
            return Err(InterpError {
                inst: comp.name.clone(),
                loc: Loc::default(),
                message: format!("{} takes {} arguments, got {}", comp.name, comp.params.len(), args.len()),
            });
        }
        let mut values: SecondaryMap<InstId, Option<Value>> = SecondaryMap::new();
        for (&p, a) in comp.params.iter().zip(args) {
            values[p] = Some(a);
        }
        // Uses left per value: an operand's last use moves the value instead of cloning
        // it, so chains of elementwise ops on big arrays do not copy every intermediate.
        let mut uses_left: SecondaryMap<InstId, u32> = SecondaryMap::new();
        for &id in &comp.order {
            for &o in &comp.inst(id).operands {
                uses_left[o] += 1;
            }
        }
        uses_left[comp.root] += 1;
        for &id in &comp.order {
            let inst = comp.inst(id);
            if matches!(inst.op, Op::Parameter(_)) {
                continue;
            }
            let mut operands: Vec<Value> = Vec::with_capacity(inst.operands.len());
            for &o in &inst.operands {
                uses_left[o] = uses_left[o].saturating_sub(1);
                let v = if uses_left[o] == 0 { values[o].take() } else { values[o].clone() };
                operands.push(v.ok_or_else(|| self.error(inst, "operand used before it is defined"))?);
            }
            let value = eval_fn(&inst.op)(self, inst, &operands).map_err(|m| self.error(inst, m))?;
            values[id] = Some(value);
        }
        let root = comp.root_inst();
        values[comp.root].take().ok_or_else(|| self.error(root, "the root is not computed"))
    }

    /// Runs a computation on scalar arguments and returns its results as a list (for
    /// reduction bodies and comparators).
    pub(crate) fn call_flat(&mut self, comp: CompId, args: &[Value]) -> Result<Vec<Value>, String> {
        match self.call(comp, args).map_err(|e| e.to_string())? {
            Value::Tuple(vs) => Ok(vs),
            v => Ok(vec![v]),
        }
    }

    /// Counts one loop iteration; fails once the budget is spent.
    pub(crate) fn count_loop_iteration(&mut self) -> Result<(), String> {
        self.loop_iterations += 1;
        if self.loop_iterations > self.max_loop_iterations {
            return Err(format!("gave up after {} loop iterations (is the loop infinite?)", self.max_loop_iterations));
        }
        Ok(())
    }

    pub(crate) fn run_custom_call(&mut self, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
        if let Some(result) = custom_call::known(inst, args) {
            return result;
        }
        match self.custom_call.as_mut() {
            Some(hook) => hook(inst, args),
            None => Err(format!("cannot run custom call {:?}", custom_call_target(inst))),
        }
    }

    fn error(&self, inst: &Instruction, message: impl Into<String>) -> InterpError {
        InterpError { inst: inst.name.clone(), loc: inst.loc.clone(), message: message.into() }
    }
}

fn custom_call_target(inst: &Instruction) -> &str {
    match &inst.op {
        Op::CustomCall(c) => &c.target,
        _ => "",
    }
}

/// Checks that `inst` got exactly `n` operands.
pub(crate) fn expect_arity(inst: &Instruction, args: &[Value], n: usize) -> Result<(), String> {
    if args.len() != n {
        return Err(format!("{} takes {n} operands, got {}", inst.op.hlo_name(), args.len()));
    }
    Ok(())
}

/// Operand `i` as an array (an error if it is missing, a tuple or a token).
pub(crate) fn expect_array<'a>(inst: &Instruction, args: &'a [Value], i: usize) -> Result<&'a Literal, String> {
    match args.get(i) {
        Some(Value::Array(l)) => Ok(l),
        Some(other) => Err(format!("{} operand {i} must be an array, got {}", inst.op.hlo_name(), other.ty())),
        None => Err(format!("{} needs operand {i}, got {} operands", inst.op.hlo_name(), args.len())),
    }
}

/// The instruction's result type as an array shape (an error for tuples and tokens).
pub(crate) fn result_shape(inst: &Instruction) -> Result<&Shape, String> {
    match &inst.ty {
        Type::Array(s) => Ok(s),
        other => Err(format!("{} must produce an array, its type is {other}", inst.op.hlo_name())),
    }
}

/// A rank-0 integer (or pred) operand as an i64: dynamic-slice starts, case selectors.
pub(crate) fn scalar_index(inst: &Instruction, args: &[Value], i: usize) -> Result<i64, String> {
    let l = expect_array(inst, args, i)?;
    if l.shape.rank() != 0 || l.elem().is_float() {
        return Err(format!("{} operand {i} must be an integer scalar, got {}", inst.op.hlo_name(), l.shape));
    }
    Ok(match l.get(0) {
        // Huge unsigned values stay huge (they clamp like any index past the end).
        crate::ir::Scalar::U(v) => v.min(i64::MAX as u64) as i64,
        s => s.as_i64(),
    })
}

/// Calls `f` with every multi-index of an array of dimensions `dims`, in row-major order
/// (the last dimension varies fastest). Nothing is called when a dimension is 0; a scalar
/// (no dimensions) gets one call with the empty index.
pub(crate) fn for_each_index(dims: &[i64], mut f: impl FnMut(&[i64])) {
    let _ = try_for_each_index::<()>(dims, |idx| {
        f(idx);
        Ok(())
    });
}

/// Like [`for_each_index`], but stops at (and returns) the first error.
pub(crate) fn try_for_each_index<E>(dims: &[i64], mut f: impl FnMut(&[i64]) -> Result<(), E>) -> Result<(), E> {
    if dims.iter().any(|&d| d <= 0) {
        return Ok(());
    }
    let mut idx = vec![0i64; dims.len()];
    loop {
        f(&idx)?;
        let mut d = dims.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Row-major linear offset of `idx` given `strides` (from [`Shape::strides`]).
pub(crate) fn linear_offset(strides: &[usize], idx: &[i64]) -> usize {
    idx.iter().zip(strides).map(|(&i, &s)| i as usize * s).sum()
}

/// Overwrites element `di` of `dst` with element `si` of `src`; an error when the two
/// carriers differ (operands of different element types).
pub(crate) fn set_elem(dst: &mut Data, di: usize, src: &Data, si: usize) -> Result<(), String> {
    match (dst, src) {
        (Data::Pred(a), Data::Pred(b)) => a[di] = b[si],
        (Data::S(a), Data::S(b)) => a[di] = b[si],
        (Data::U(a), Data::U(b)) => a[di] = b[si],
        (Data::F(a), Data::F(b)) => a[di] = b[si],
        _ => return Err("element types of the operands differ".into()),
    }
    Ok(())
}

/// Checks that a computed result shape matches the instruction's declared type
/// (element type and dimensions), so that a wrongly typed module is an error, not a
/// malformed value.
pub(crate) fn check_result(inst: &Instruction, shape: &Shape) -> Result<(), String> {
    let declared = result_shape(inst)?;
    if !declared.same_shape(shape) {
        return Err(format!("{} computes {shape} but its type says {declared}", inst.op.hlo_name()));
    }
    Ok(())
}

/// Convenience: runs `module`'s entry on `args`.
pub fn run(module: &Module, args: &[Value]) -> Result<Value, InterpError> {
    Interpreter::new(module).run(args)
}

/// The evaluation function for each op.
fn eval_fn(op: &Op) -> EvalFn {
    match op {
        Op::Parameter(_) => |_, _, _| Err("parameters are bound by the caller".into()),
        Op::Constant(_) => shape_ops::constant,
        Op::Iota { .. } => shape_ops::iota,
        Op::Unary(_) => elementwise::unary,
        Op::Binary(_) => elementwise::binary,
        Op::Compare { .. } => elementwise::compare,
        Op::Select => elementwise::select,
        Op::Clamp => elementwise::clamp,
        Op::Convert => elementwise::convert,
        Op::BitcastConvert => elementwise::bitcast_convert,
        Op::ReducePrecision { .. } => elementwise::reduce_precision,
        Op::BroadcastInDim { .. } => shape_ops::broadcast_in_dim,
        Op::Reshape => shape_ops::reshape,
        Op::Bitcast => shape_ops::bitcast,
        Op::Copy => shape_ops::copy,
        Op::Transpose { .. } => shape_ops::transpose,
        Op::Slice { .. } => shape_ops::slice,
        Op::DynamicSlice { .. } => shape_ops::dynamic_slice,
        Op::DynamicUpdateSlice => shape_ops::dynamic_update_slice,
        Op::Concatenate { .. } => shape_ops::concatenate,
        Op::Pad { .. } => shape_ops::pad,
        Op::Reverse { .. } => shape_ops::reverse,
        Op::Dot(_) => dot::dot,
        Op::Convolution(_) => conv::convolution,
        Op::Reduce { .. } => reduce::reduce,
        Op::Map { .. } => reduce::map,
        Op::ReduceWindow(_) => window::reduce_window,
        Op::SelectAndScatter(_) => window::select_and_scatter,
        Op::Gather(_) => gather_scatter::gather,
        Op::Scatter(_) => gather_scatter::scatter,
        Op::Sort { .. } => sort::sort,
        Op::While { .. } => control::while_loop,
        Op::Case { .. } => control::case,
        Op::Call { .. } => control::call,
        Op::Fusion { .. } => control::fusion,
        Op::Tuple => control::tuple,
        Op::GetTupleElement { .. } => control::get_tuple_element,
        Op::OptimizationBarrier => control::optimization_barrier,
        Op::RngBitGenerator { .. } => rng::rng_bit_generator,
        Op::Rng { .. } => rng::rng,
        Op::TriangularSolve(_) => linalg::triangular_solve,
        Op::Cholesky { .. } => linalg::cholesky,
        Op::ReplicaId | Op::PartitionId => control::zero_id,
        Op::AfterAll => |_, _, _| Ok(Value::Token),
        Op::CustomCall(_) => |interp, inst, args| interp.run_custom_call(inst, args),
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use crate::ir::{BinaryOp, ElementType::S32};
    use cranelift_entity::EntityRef;

    #[test]
    fn values_used_several_times_survive_being_moved() {
        // a = x + x; b = a * x; root (a, b, x): x's last use must not take it early, and
        // the root keeps every value it returns.
        let t = arr(S32, &[2]);
        let module = TestModule::new().finish_with_entry(std::slice::from_ref(&t), |b, p| {
            let a = b.op(Op::Binary(BinaryOp::Add), &[p[0], p[0]], t.clone());
            let m = b.op(Op::Binary(BinaryOp::Mul), &[a, p[0]], t.clone());
            b.tuple(&[a, m, p[0]])
        });
        let x: Value = ints(S32, &[2], &[3, -4]).into();
        let out = run(&module, std::slice::from_ref(&x)).unwrap();
        let want = Value::Tuple(vec![ints(S32, &[2], &[6, -8]).into(), ints(S32, &[2], &[18, 32]).into(), x]);
        assert_eq!(out, want);
    }

    #[test]
    fn bad_calls_are_errors() {
        let module = TestModule::new().finish_with_entry(&[arr(S32, &[])], |_, p| p[0]);
        let err = run(&module, &[]).unwrap_err();
        assert!(err.message.contains("takes 1 arguments, got 0"), "{err}");
        let mut interp = Interpreter::new(&module);
        let missing = CompId::new(7);
        assert!(interp.call(missing, &[]).unwrap_err().message.contains("does not exist"));
    }

    #[test]
    fn index_iteration_is_row_major() {
        let mut seen = Vec::new();
        for_each_index(&[2, 3], |i| seen.push(i.to_vec()));
        assert_eq!(seen, vec![vec![0, 0], vec![0, 1], vec![0, 2], vec![1, 0], vec![1, 1], vec![1, 2]]);
        let mut n = 0;
        for_each_index(&[], |i| {
            assert!(i.is_empty());
            n += 1
        });
        assert_eq!(n, 1);
        for_each_index(&[3, 0], |_| panic!("no elements"));
        let r = try_for_each_index(&[4], |i| if i[0] == 2 { Err(i[0]) } else { Ok(()) });
        assert_eq!(r, Err(2));
        assert_eq!(linear_offset(&[3, 1], &[1, 2]), 5);
    }
}
