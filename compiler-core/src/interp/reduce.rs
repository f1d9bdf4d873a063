//! Interpreter: reduce.

use super::Interpreter;
use crate::ir::{Instruction, Value};

pub(super) fn reduce(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn map(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}
