//! A compiled module and what its runs report: [`CpuExecutable`] (machine code, the plan
//! it implements and the runtime state of its runs), its per-kernel code and the
//! callbacks that time kernels.

use super::runtime;
use crate::ir::{CompId, Instruction, Module, Value};
use crate::kernel::{self, KernelKind, KernelPlan, ValueBufs};
use cranelift_jit::JITModule;

/// A compiled module.
pub struct CpuExecutable {
    pub(super) plan: KernelPlan,
    /// Per kernel: its compiled entry point, or how it runs otherwise.
    pub(super) code: Vec<Code>,
    /// The module with one wrapper computation per opaque kernel (the interpreter runs
    /// those).
    pub(super) module: Module,
    /// Per kernel: its CLIF and machine code listing (empty when not JIT-compiled).
    pub(super) listings: Vec<super::compile::Listing>,
    /// Per kernel: how its code runs ([`KernelInfo::code`]).
    pub(super) summaries: Vec<String>,
    /// Owns the machine code; freed on drop.
    pub(super) jit: Option<JITModule>,
    /// The buffers' memory, allocated on the first run and reused by the next ones (a
    /// run that ever found it busy would allocate its own).
    pub(super) arena: std::sync::Mutex<Option<runtime::Arena>>,
    /// The plan's row chains this code can run interleaved (see [`runtime::Chain`]).
    pub(super) chains: Vec<runtime::Chain>,
    /// Bytes of one chunk of a row chain; 0: chains off ([`CpuExecutable::set_row_chains`]).
    pub(super) chain_bytes: std::sync::atomic::AtomicUsize,
    /// Per kernel: for a dot whose epilogue (the next kernel) may run inside its tasks,
    /// how its rows map to the dot's (see [`runtime::runnable_epilogues`]).
    pub(super) epilogues: Vec<Option<kernel::chains::TileEpilogue>>,
    /// Whether such epilogues run inside their dots' tasks
    /// ([`CpuExecutable::set_tile_epilogues`]).
    pub(super) tile_epilogues: std::sync::atomic::AtomicBool,
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
pub(super) type KernelFn = extern "C" fn(*const *mut u8, i64, i64);

pub(super) enum Code {
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
    /// The kernels (plan positions) this execution runs: `index..index + 1`, a whole
    /// row chain headed by this kernel, its members interleaved chunk by chunk of rows
    /// and so timed together ([`CpuExecutable::set_row_chains`]), or a dot and its
    /// epilogue run block by block of rows ([`CpuExecutable::set_tile_epilogues`]).
    pub chained: std::ops::Range<usize>,
}
