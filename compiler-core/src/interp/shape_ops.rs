//! Interpreter: shape_ops.

use super::Interpreter;
use crate::ir::{Instruction, Value};

pub(super) fn constant(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn iota(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn broadcast_in_dim(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn reshape(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn bitcast(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn copy(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn transpose(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn slice(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn dynamic_slice(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn dynamic_update_slice(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn concatenate(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn pad(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}

pub(super) fn reverse(_: &mut Interpreter, inst: &Instruction, _: &[Value]) -> Result<Value, String> {
    Err(format!("{} is not interpreted yet", inst.op.hlo_name()))
}
