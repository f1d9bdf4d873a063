//! Values in the bytes of a plan's arena: how the runtimes whose arena is one block of
//! memory (WebGPU's and CUDA's host mirror, the wasm module's linear memory) put the
//! arguments in and read the results and an opaque kernel's operands out.

use super::{BufferId, KernelPlan, ValueBufs};
use crate::ir::{Literal, Value};
use std::borrow::Cow;

/// Bytes an arena lives in: a slice of this process's memory, or memory the runtime
/// reaches only by copying (a browser's `WebAssembly.Memory` seen from the worker).
pub trait ArenaMemory {
    /// `len` bytes from `offset`, or why not (they lie outside).
    fn read_bytes(&self, offset: usize, len: usize) -> Result<Cow<'_, [u8]>, String>;
    /// Writes `bytes` at `offset`, or says why not.
    fn write_bytes(&mut self, offset: usize, bytes: &[u8]) -> Result<(), String>;
}

impl ArenaMemory for [u8] {
    fn read_bytes(&self, offset: usize, len: usize) -> Result<Cow<'_, [u8]>, String> {
        let end = offset.checked_add(len).ok_or("a span past the address space")?;
        self.get(offset..end).map(Cow::Borrowed).ok_or_else(|| outside(offset, len, self.len()))
    }

    fn write_bytes(&mut self, offset: usize, bytes: &[u8]) -> Result<(), String> {
        let size = self.len();
        let end = offset.checked_add(bytes.len()).ok_or("a span past the address space")?;
        self.get_mut(offset..end).ok_or_else(|| outside(offset, bytes.len(), size))?.copy_from_slice(bytes);
        Ok(())
    }
}

/// The error of a span that does not fit the memory.
pub fn outside(offset: usize, len: usize, size: usize) -> String {
    format!("bytes {offset}..{} lie outside the arena's {size} bytes", offset as u128 + len as u128)
}

impl KernelPlan {
    /// `module` with a computation per opaque kernel (what the host's interpreter runs
    /// between a device's kernels), and each kernel's computation, in plan order.
    pub fn host_computations(&self, module: &crate::ir::Module) -> (crate::ir::Module, Vec<Option<crate::ir::CompId>>) {
        let mut wrapped = module.clone();
        let computations = self
            .kernels
            .iter()
            .map(|k| match &k.body {
                super::KernelBody::Opaque { inst, .. } => Some(super::host_computation(&mut wrapped, self.comp, *inst)),
                _ => None,
            })
            .collect();
        (wrapped, computations)
    }

    /// Runs opaque kernel `k` on the host over the arena bytes `mem`: its operands read
    /// out, its computation `comp` (of the module [`KernelPlan::host_computations`] made)
    /// interpreted, its result written back. Returns where the result lies, for a runtime
    /// whose arena is a mirror of device memory to copy back.
    pub fn interpret_kernel<M: ArenaMemory + ?Sized>(
        &self,
        k: usize,
        (module, comp): (&crate::ir::Module, Option<crate::ir::CompId>),
        mem: &mut M,
        hook: Option<&mut crate::interp::CustomCallHook<'_>>,
    ) -> Result<&ValueBufs, String> {
        let kernel = &self.kernels[k];
        let super::KernelBody::Opaque { operands, result, .. } = &kernel.body else {
            return Err(format!("kernel {k} (%{}) is neither compiled nor a host computation", kernel.name));
        };
        let comp = comp.ok_or("a host kernel without its computation")?;
        let vals: Vec<Value> = operands.iter().map(|o| self.read_value(&*mem, o)).collect::<Result<_, _>>()?;
        let mut interp = crate::interp::Interpreter::new(module);
        if let Some(hook) = hook {
            interp = interp.with_custom_call_hook(|inst, args| hook(inst, args));
        }
        let v = interp.call(comp, &vals).map_err(|e| format!("%{}: {}", e.inst, e.message))?;
        self.write_value(mem, result, &v)?;
        Ok(result)
    }

    /// Byte offset and size of buffer `b` in the arena.
    pub fn span(&self, b: BufferId) -> (usize, usize) {
        (self.arena.offset(b) as usize, self.buffers[b].shape.byte_size())
    }

    /// Writes `v` into the buffers `at` of the arena bytes `mem`.
    pub fn write_value<M: ArenaMemory + ?Sized>(&self, mem: &mut M, at: &ValueBufs, v: &Value) -> Result<(), String> {
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
    pub fn read_value<M: ArenaMemory + ?Sized>(&self, mem: &M, at: &ValueBufs) -> Result<Value, String> {
        Ok(match at {
            ValueBufs::Array(b) => {
                let (off, n) = self.span(*b);
                let bytes = mem.read_bytes(off, n).map_err(|e| format!("{b}: {e}"))?;
                Value::Array(
                    Literal::from_le_bytes(self.buffers[*b].shape.clone(), &bytes)
                        .ok_or_else(|| format!("{b} has the wrong size"))?,
                )
            }
            ValueBufs::Tuple(ps) => Value::Tuple(ps.iter().map(|p| self.read_value(mem, p)).collect::<Result<_, _>>()?),
            ValueBufs::Token => Value::Token,
        })
    }

    fn place<M: ArenaMemory + ?Sized>(&self, mem: &mut M, b: BufferId, lit: &Literal) -> Result<(), String> {
        let (at, n) = self.span(b);
        let bytes = lit.to_le_bytes();
        if bytes.len() != n {
            return Err(format!("{b} holds {n} bytes, the value {}", bytes.len()));
        }
        mem.write_bytes(at, &bytes).map_err(|e| format!("{b}: {e}"))
    }
}
