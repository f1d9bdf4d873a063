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
mod linalg;
mod reduce;
mod rng;
mod shape_ops;
mod sort;
mod window;

use crate::ir::{CompId, Instruction, Loc, Module, Op, Value};
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
    pub fn call(&mut self, comp: CompId, args: &[Value]) -> Result<Value, InterpError> {
        let _ = (comp, args);
        Err(InterpError { inst: String::new(), loc: Loc::default(), message: "the interpreter is being written".into() })
    }
}

/// Convenience: runs `module`'s entry on `args`.
pub fn run(module: &Module, args: &[Value]) -> Result<Value, InterpError> {
    Interpreter::new(module).run(args)
}

#[allow(dead_code)]
fn eval_fn(op: &Op) -> EvalFn {
    let _ = op;
    unimplemented_op
}

fn unimplemented_op(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("the interpreter does not support {} yet", inst.op.hlo_name()))
}
