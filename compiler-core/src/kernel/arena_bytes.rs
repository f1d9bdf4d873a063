//! Values in the bytes of a plan's arena: how the runtimes whose arena is one block of
//! memory (WebGPU's and CUDA's host mirror, the wasm module's linear memory) put the
//! arguments in and read the results and an opaque kernel's operands out.

use super::{BufferId, KernelPlan, ValueBufs};
use crate::ir::{Literal, Value};

impl KernelPlan {
    /// Byte offset and size of buffer `b` in the arena.
    pub fn span(&self, b: BufferId) -> (usize, usize) {
        (self.arena.offset(b) as usize, self.buffers[b].shape.byte_size())
    }

    /// Writes `v` into the buffers `at` of the arena bytes `mem`.
    pub fn write_value(&self, mem: &mut [u8], at: &ValueBufs, v: &Value) -> Result<(), String> {
        match (at, v) {
            (ValueBufs::Array(b), Value::Array(l)) => self.place(mem, *b, l),
            (ValueBufs::Tuple(ps), Value::Tuple(vs)) if ps.len() == vs.len() => {
                ps.iter().zip(vs).try_for_each(|(p, v)| self.write_value(mem, p, v))
            }
            (ValueBufs::Token, _) => Ok(()),
            _ => Err("a value of another structure than its buffers".into()),
        }
    }

    /// Reads the value in the buffers `at` of the arena bytes `mem`.
    pub fn read_value(&self, mem: &[u8], at: &ValueBufs) -> Result<Value, String> {
        Ok(match at {
            ValueBufs::Array(b) => {
                let (off, n) = self.span(*b);
                let bytes = mem.get(off..off + n).ok_or_else(|| format!("{b} lies outside the arena"))?;
                Value::Array(
                    Literal::from_le_bytes(self.buffers[*b].shape.clone(), bytes)
                        .ok_or_else(|| format!("{b} has the wrong size"))?,
                )
            }
            ValueBufs::Tuple(ps) => Value::Tuple(ps.iter().map(|p| self.read_value(mem, p)).collect::<Result<_, _>>()?),
            ValueBufs::Token => Value::Token,
        })
    }

    fn place(&self, mem: &mut [u8], b: BufferId, lit: &Literal) -> Result<(), String> {
        let (at, n) = self.span(b);
        let bytes = lit.to_le_bytes();
        if bytes.len() != n {
            return Err(format!("{b} holds {n} bytes, the value {}", bytes.len()));
        }
        mem.get_mut(at..at + n).ok_or_else(|| format!("{b} lies outside the arena"))?.copy_from_slice(&bytes);
        Ok(())
    }
}
