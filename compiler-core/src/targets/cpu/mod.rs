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
//! where its ops and types allow (`vector.rs` says when: loops, row reductions with
//! vector accumulators, column reductions across the kept minor dimension). Large
//! kernels are split across threads along a kept loop variable (`runtime.rs`, on the
//! persistent pool of `pool.rs`), and large dots into row blocks of single-threaded
//! GEMMs (`dot.rs`). Where the CPU's own vectors are wider than Cranelift's (AVX2,
//! AVX-512), vector loops and row reductions with f32 transcendentals are strip-mined:
//! blocks of their arguments go through native functions ([`block_math`], chosen at run
//! time) that give the inline code's bits ([`CompileOptions::block_math`] turns this off).
//!
//! Feature `cpu` (native only): the default build of this crate stays wasm32-clean and
//! does not compile Cranelift at all. CLIF text and machine-code listings of each kernel
//! are kept ([`CpuExecutable::clif`], [`CpuExecutable::asm`]) for the explorer; the CLIF
//! starts with a comment saying whether the kernel was vectorized, or why not, and what
//! it strip-mined; [`CpuExecutable::code_summary`] condenses that to `simd 4x4 + native
//! exp`, `scalar`, `gemm`, ...
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

pub mod aot;
pub mod artifact;
pub mod block_math;
mod codegen;
mod compile;
mod dot;
mod half_floats;
pub mod helpers;
pub mod math;
mod pool;
mod runtime;
mod scatter;
mod sort;
mod vector;

pub use artifact::compiler_version;
pub use compile::{
    compile, compile_to_artifact, compile_to_artifact_with, compile_with, load_artifact, optimize, CompileOptions,
    PIPELINE,
};
pub use runtime::DEFAULT_CHAIN_BYTES;

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
    /// Per kernel: how its code runs ([`KernelInfo::code`]).
    summaries: Vec<String>,
    /// Owns the machine code; freed on drop.
    jit: Option<JITModule>,
    /// The buffers' memory, allocated on the first run and reused by the next ones (a
    /// run that ever found it busy would allocate its own).
    arena: std::sync::Mutex<Option<runtime::Arena>>,
    /// The plan's row chains this code can run interleaved (see [`runtime::Chain`]).
    chains: Vec<runtime::Chain>,
    /// Bytes of one chunk of a row chain; 0: chains off ([`CpuExecutable::set_row_chains`]).
    chain_bytes: std::sync::atomic::AtomicUsize,
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

/// A JIT-compiled kernel: `(buffers, begin, end)` runs `begin..end` of its parallel
/// variable.
type KernelFn = extern "C" fn(*const *mut u8, i64, i64);

enum Code {
    /// `par_extent`: the parallel variable's extent; `work`: iterations of the whole
    /// kernel (the runtime splits it across threads when large).
    Native {
        f: KernelFn,
        par_extent: i64,
        work: usize,
    },
    Dot(kernel::DotSpec),
    /// A sort, with its compiled comparator.
    Sort {
        spec: kernel::SortSpec,
        cmp: KernelFn,
    },
    /// A scatter, with its compiled combiner.
    Scatter {
        spec: kernel::ScatterSpec,
        combine: KernelFn,
    },
    Interpret {
        comp: CompId,
        operands: Vec<ValueBufs>,
        result: ValueBufs,
    },
    While {
        cond: Box<CpuExecutable>,
        body: Box<CpuExecutable>,
        operands: Vec<ValueBufs>,
        result: ValueBufs,
    },
    Case {
        branches: Vec<CpuExecutable>,
        branch_operands: Vec<Vec<u32>>,
        operands: Vec<ValueBufs>,
        result: ValueBufs,
    },
}

/// A per-kernel wrapper: gets the kernel and its execution, must run it once.
pub type Wrap<'w> = dyn FnMut(&KernelInfo, &mut dyn FnMut() -> Result<(), String>) -> Result<(), String> + 'w;

/// A per-kernel wrapper that also sees the kernels of while bodies, conditions and
/// branches ([`CpuExecutable::run_bytes_scoped`]): it is entered again, for those, while
/// it runs the control-flow kernel around them, hence `Fn` (keep state in a `RefCell`
/// borrowed only after `exec` returns).
pub type ScopedWrap<'w> = dyn Fn(&KernelInfo, &mut dyn FnMut() -> Result<(), String>) -> Result<(), String> + 'w;

/// Runs custom calls the interpreter does not know.
pub type CustomCalls<'h> = dyn FnMut(&Instruction, &[Value]) -> Result<Value, String> + 'h;

/// What a timing callback learns about the kernel it wraps.
pub struct KernelInfo<'a> {
    /// Its position in the plan of its computation.
    pub index: usize,
    pub name: &'a str,
    pub kind: &'a KernelKind,
    /// Where it runs: empty for the entry computation; inside control flow, the path of
    /// the control-flow kernels above it with the part taken: `while.3/body`,
    /// `while.3/cond`, `conditional.2/branch1`, `while.3/body/conditional.5/branch0`.
    pub scope: &'a str,
    /// The computation whose plan holds it (in [`CpuExecutable::module`]).
    pub comp: CompId,
    /// The instruction of `comp` it comes from.
    pub source: crate::ir::InstId,
    /// How its code runs: `simd 4x4` (lanes x unrolled vectors), `simd 4x4 + native exp`
    /// (strip-mined), `scalar`, `gemm`, `interpreter`, ...
    pub code: &'a str,
    /// The kernels (plan positions) this execution runs: `index..index + 1`, or a whole
    /// row chain headed by this kernel, its members interleaved chunk by chunk of rows
    /// and so timed together ([`CpuExecutable::set_row_chains`]).
    pub chained: std::ops::Range<usize>,
}
