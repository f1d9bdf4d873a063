//! The CPU target: the kernel plan compiled to native code with Cranelift (loop and
//! reduction kernels), dots through the `gemm` crate, and the reference interpreter for
//! opaque kernels, so that every module runs.
//!
//! `compile` plans the module ([`crate::kernel::plan`]), JIT-compiles each elemental
//! kernel (a kernel whose body the emitter cannot handle is interpreted instead, with the
//! reason recorded) and returns a [`CpuExecutable`]. `run` executes the kernels in
//! program order on byte buffers. Timing is the caller's business (this crate reads no
//! clock): [`CpuExecutable::run_with`] wraps each kernel's execution in a callback.
//! A while loop or a conditional runs from a small runtime here, its computations
//! compiled as plans of their own; everything else the plan calls opaque (sort, scatter,
//! gather, convolution, dynamic slices, ...) runs in the interpreter on values decoded
//! from the buffers.
//!
//! Feature `cpu` (native only): the default build of this crate stays wasm32-clean and
//! does not compile Cranelift at all. CLIF text and machine-code listings of each kernel
//! are kept ([`CpuExecutable::clif`], [`CpuExecutable::asm`]) for the explorer.
//!
//! A compiled module can be kept as bytes and loaded by a later process without
//! compiling again ([`compile_to_artifact`], [`load_artifact`], format in [`artifact`]):
//! the backend's compilation cache stores these. [`aot`] writes a module as a
//! relocatable object with one C entry point and its C header.
//!
//! Not yet: SIMD vectors, threads, inline
//! transcendental approximations (they call `helpers` now), sort comparators
//! compiled (issue 4).

pub mod aot;
pub mod artifact;
mod codegen;
mod compile;
mod dot;
pub mod helpers;
mod runtime;

pub use artifact::compiler_version;
pub use compile::{compile, compile_to_artifact, load_artifact, optimize, PIPELINE};

use crate::ir::{CompId, Instruction, Module, Value};
use crate::kernel::{self, KernelKind, KernelPlan, ValueBufs};
use cranelift_jit::JITModule;

/// A compiled module.
pub struct CpuExecutable {
    plan: KernelPlan,
    /// Per kernel: its compiled entry point, or how it runs otherwise.
    code: Vec<Code>,
    /// The module with one wrapper computation per opaque kernel (the interpreter runs
    /// those).
    module: Module,
    /// Per kernel: its CLIF and machine code listing (empty when not JIT-compiled).
    listings: Vec<(String, String)>,
    /// Owns the machine code; freed on drop.
    jit: Option<JITModule>,
}

impl Drop for CpuExecutable {
    fn drop(&mut self) {
        self.code.clear();
        if let Some(jit) = self.jit.take() {
            // SAFETY: the only pointers into this code were in `self.code`, just dropped,
            // and no kernel is running (`run` borrows `self`).
            unsafe { jit.free_memory() };
        }
    }
}

enum Code {
    Native(extern "C" fn(*const *mut u8)),
    Dot(kernel::DotSpec),
    Interpret { comp: CompId, operands: Vec<ValueBufs>, result: ValueBufs },
    While { cond: Box<CpuExecutable>, body: Box<CpuExecutable>, operands: Vec<ValueBufs>, result: ValueBufs },
    Case { branches: Vec<CpuExecutable>, branch_operands: Vec<Vec<u32>>, operands: Vec<ValueBufs>, result: ValueBufs },
}

/// A per-kernel wrapper: gets the kernel and its execution, must run it once.
pub type Wrap<'w> = dyn FnMut(&KernelInfo, &mut dyn FnMut() -> Result<(), String>) -> Result<(), String> + 'w;

/// Runs custom calls the interpreter does not know.
pub type CustomCalls<'h> = dyn FnMut(&Instruction, &[Value]) -> Result<Value, String> + 'h;

/// What a timing callback learns about the kernel it wraps.
pub struct KernelInfo<'a> {
    pub index: usize,
    pub name: &'a str,
    pub kind: &'a KernelKind,
}

