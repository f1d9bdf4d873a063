//! Interpreter: window.

use super::Interpreter;
use crate::ir::{Instruction, Value};

pub(super) fn reduce_window(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn select_and_scatter(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}
