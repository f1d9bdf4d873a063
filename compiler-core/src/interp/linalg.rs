//! Interpreter: linalg.

use super::Interpreter;
use crate::ir::{Instruction, Value};

pub(super) fn triangular_solve(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn cholesky(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}
