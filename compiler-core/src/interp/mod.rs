//! The reference interpreter: the numerics oracle for every pass and target.
//!
//! Slow is fine, wrong is not. Values are [`Literal`]s in logical row-major order (see
//! `ir/literal.rs` for how narrow types are carried); each op is evaluated by a function
//! of one signature, [`EvalFn`], in the file for its family of ops.

mod control;
mod conv;
mod dot;
mod elementwise;
mod gather_scatter;
mod index;
mod linalg;
mod reduce;
mod rng;
mod shape_ops;
mod sort;
mod window;

use crate::ir::{CompId, InstId, Instruction, Loc, Module, Op, Value};
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
}

impl<'m, 'h> Interpreter<'m, 'h> {
    pub fn new(module: &'m Module) -> Self {
        Interpreter { module, custom_call: None, max_loop_iterations: 10_000_000, loop_iterations: 0 }
    }

    pub fn with_custom_call_hook(mut self, hook: impl FnMut(&Instruction, &[Value]) -> Result<Value, String> + 'h) -> Self {
        self.custom_call = Some(Box::new(hook));
        self
    }

    /// Runs the entry computation.
    pub fn run(&mut self, args: &[Value]) -> Result<Value, InterpError> {
        self.call(self.module.entry, args)
    }

    /// Runs computation `comp` on `args` (one value per parameter).
    pub fn call(&mut self, comp_id: CompId, args: &[Value]) -> Result<Value, InterpError> {
        let module = self.module;
        let comp = module.comp(comp_id);
        if args.len() != comp.params.len() {
            return Err(InterpError {
                inst: comp.name.clone(),
                loc: Loc::default(),
                message: format!("{} takes {} arguments, got {}", comp.name, comp.params.len(), args.len()),
            });
        }
        let mut values: SecondaryMap<InstId, Option<Value>> = SecondaryMap::new();
        for (&p, a) in comp.params.iter().zip(args) {
            values[p] = Some(a.clone());
        }
        for &id in &comp.order {
            let inst = comp.inst(id);
            if matches!(inst.op, Op::Parameter(_)) {
                continue;
            }
            let operands: Vec<Value> = inst
                .operands
                .iter()
                .map(|&o| values[o].clone().ok_or_else(|| self.error(inst, "operand used before it is defined")))
                .collect::<Result<_, _>>()?;
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
            return Err(format!(
                "gave up after {} loop iterations (is the loop infinite?)",
                self.max_loop_iterations
            ));
        }
        Ok(())
    }

    pub(crate) fn run_custom_call(&mut self, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
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
