//! The CPU target: the kernel plan compiled to native code with Cranelift (loop and
//! reduction kernels), dots through the `gemm` crate, and the reference interpreter for
//! opaque kernels, so that every module runs.
//!
//! `compile` plans the module ([`crate::kernel::plan`]), JIT-compiles each elemental
//! kernel (a kernel whose body the emitter cannot handle is interpreted instead, with the
//! reason recorded) and returns a [`CpuExecutable`]. `run` executes the kernels in
//! program order on byte buffers. Timing is the caller's business (this crate reads no
//! clock): [`CpuExecutable::run_with`] wraps each kernel's execution in a callback, and
//! [`CpuExecutable::run_bytes_scoped`] also the kernels run inside while loops and
//! conditionals, each with the path of where it runs ([`KernelInfo::scope`]).
//! A while loop or a conditional runs from a small runtime here, its computations
//! compiled as plans of their own, and so do sorts and scatters (`sort`, `scatter`),
//! calling their comparator or update computation compiled as a scalar kernel; everything
//! else the plan calls opaque (select-and-scatter, ...) runs in the interpreter on values
//! decoded from the buffers.
//!
//! Speed: the innermost loop of a kernel runs 128-bit SIMD vectors with a scalar tail
//! where its ops and types allow (`kernel/vector.rs` says when: loops, row reductions with
//! vector accumulators, column reductions across the kept minor dimension). Large
//! kernels are split across threads along a kept loop variable (`runtime.rs`, on the
//! persistent pool of `targets/pool.rs`), and large dots into row blocks of single-threaded
//! GEMMs (`dot.rs`). Where the CPU's own vectors are wider than Cranelift's (AVX2,
//! AVX-512), vector loops and row reductions with f32 transcendentals are strip-mined:
//! blocks of their arguments go through native functions ([`block_math`], chosen at run
//! time) that give the inline code's bits ([`CompileOptions::block_math`] turns this off).
//!
//! Feature `cpu` (native only): the default build of this crate stays wasm32-clean and
//! does not compile Cranelift at all. CLIF text and machine-code listings of each kernel
//! are kept ([`CpuExecutable::clif`], [`CpuExecutable::asm`]) for the explorer. How each
//! kernel's code runs is a value the emitter returns (`code_shape.rs`: vectorized or
//! why not, what it strip-mined), from which both the comment heading its CLIF and
//! [`CpuExecutable::code_summary`] (`simd 4x4 + native exp`, `scalar`, `gemm`, ...) are
//! rendered.
//!
//! Transcendentals are inline f32 approximations with measured error bounds (at most
//! 1 to 4 ulp, see [`math`]; f16/bf16 through f32), and calls to the C library's
//! functions by their standard names for f64. f16/bf16 values are rounded and converted
//! by the Rust helpers of [`helpers`] in JIT code (the `half` crate uses the CPU's F16C
//! instructions) and by inline code (`half_floats.rs`, the same bits) in AOT objects. [`block_math`] has native block versions
//! of the f32 ones (exp, tanh, ...: the same code, bit for bit) that LLVM compiles for
//! AVX-512 or AVX2, for kernels that strip-mine a compute-bound loop.
//!
//! A compiled module can be kept as bytes and loaded by a later process without
//! compiling again ([`compile_to_artifact`], [`load_artifact`], format in [`artifact`]):
//! the backend's compilation cache stores these. [`aot`] writes a module as a
//! relocatable object with one C entry point and its C header.
//!
//! Row chains ([`crate::kernel::chains`]): consecutive row-wise kernels (softmax's max,
//! exp-and-sum and divide) run chunk by chunk of rows, every member on one chunk before
//! the next, chunks spread over the pool, so a chunk's rows stay in cache between
//! members; [`CpuExecutable::set_row_chains`] turns this off or sets the per-chunk working set.
//!
//! Not yet: f16/bf16 vectors.

// Code generation (feature `cpu-codegen`, which builds for wasm32 too: the explorer
// shows each kernel's CLIF and machine code in the browser).
pub mod artifact;
pub mod block_math;
mod code_shape;
mod codegen;
mod half_floats;
pub mod helpers;
pub mod listing;
pub mod math;
use crate::kernel::vector;

// The JIT, its runtime and the AOT objects (feature `cpu`, native only).
#[cfg(feature = "cpu")]
pub mod aot;
#[cfg(feature = "cpu")]
mod compile;
#[cfg(feature = "cpu")]
mod dot;
#[cfg(feature = "cpu")]
mod executable;
#[cfg(feature = "cpu")]
use crate::targets::pool;
#[cfg(feature = "cpu")]
mod runtime;
#[cfg(feature = "cpu")]
mod scatter;
#[cfg(feature = "cpu")]
mod sort;

/// Cranelift's own IR verifier (its `enable_verifier` flag, for every ISA this target
/// builds): on in debug builds, so that every test checks each CLIF function the
/// emitters write; off in release builds, where it was over a third of a compile's
/// instructions (production JITs, wasmtime among them, leave it off too).
pub(crate) const CRANELIFT_VERIFIER: &str = if cfg!(debug_assertions) { "true" } else { "false" };

pub use artifact::compiler_version;
#[cfg(feature = "cpu")]
pub use compile::{
    compile, compile_owned, compile_to_artifact, compile_to_artifact_with, compile_with, load_artifact, optimize,
    CompileOptions, PIPELINE,
};
#[cfg(feature = "cpu")]
use executable::{Code, KernelFn};
#[cfg(feature = "cpu")]
pub use executable::{CpuExecutable, CustomCalls, KernelInfo, ScopedWrap, Wrap};
#[cfg(feature = "cpu")]
pub use runtime::default_chain_bytes;
