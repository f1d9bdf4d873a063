//! Interpreter: elementwise.

use super::Interpreter;
use crate::ir::{Instruction, Value};

pub(super) fn unary(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn binary(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn compare(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn select(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn clamp(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn convert(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn bitcast_convert(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn reduce_precision(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}
