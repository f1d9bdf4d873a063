//! Running a [`WasmProgram`] on whichever engine instantiated it: wasmtime natively
//! ([`super::runtime`]), the browser's `WebAssembly` in the explorer's worker. The
//! engine gives an [`Instance`] (call kernel `i` over its range, reach the linear
//! memory); this driver writes the parameters, calls the kernels in plan order, runs
//! each host kernel (opaque: the reference interpreter) on operands read from the
//! memory, and reads the result back — the same steps, in one place, for every engine.

use super::{WasmKernel, WasmProgram};
use crate::interp::CustomCallHook;
use crate::ir::{CompId, Module, Value};
use crate::kernel::ArenaMemory;

/// An instantiated module, as an engine holds it; its bytes are the module's linear
/// memory (the `memory` export).
pub trait Instance: ArenaMemory {
    /// Calls kernel `kernel`'s export (`k{kernel}`) over `0..extent` of its parallel
    /// variable.
    fn call(&mut self, kernel: usize, extent: u64) -> Result<(), String>;
}

/// Iterations of a kernel below which it runs on one thread: handing a range to another
/// thread costs microseconds, about what this much simple elementwise work takes (the
/// native CPU target's threshold).
pub const PARALLEL_WORK: u64 = 1 << 16;

/// Pieces per thread of a split elemental kernel: a thread slowed down by other work on
/// its core takes fewer, instead of holding up the kernel with its share.
const PIECES_PER_THREAD: u64 = 4;

/// Pieces per thread of a split dot: each piece packs its batch's rhs again.
const DOT_PIECES_PER_THREAD: u64 = 2;

/// The pieces `[begin, end)` of kernel `k`'s range that `threads` instances take, one at
/// a time, in any order: the whole range when there is one thread or the kernel is too
/// small to gain from more; else a few pieces per thread, each a multiple of 32
/// elements where the range allows (fewer vector tails).
pub fn chunks(k: &WasmKernel, threads: u32) -> Vec<(u32, u32)> {
    let extent = k.extent;
    if threads < 2 || k.work < PARALLEL_WORK || extent < 2 {
        return vec![(0, extent as u32)];
    }
    let per_thread = if k.dot { DOT_PIECES_PER_THREAD } else { PIECES_PER_THREAD };
    let n = (threads as u64 * per_thread).min(extent);
    let mut per = extent.div_ceil(n);
    if per > 32 {
        per = per.div_ceil(32) * 32;
    }
    (0..extent.div_ceil(per)).map(|c| ((c * per) as u32, ((c + 1) * per).min(extent) as u32)).collect()
}

/// What the host keeps beside a program's module: the module with a computation per
/// host kernel, for the interpreter to run.
pub struct HostKernels {
    module: Module,
    computations: Vec<Option<CompId>>,
}

impl HostKernels {
    pub fn new(module: &Module, program: &WasmProgram) -> HostKernels {
        let (module, computations) = program.plan.host_computations(module);
        HostKernels { module, computations }
    }

    /// Writes the parameters (one value per entry parameter) into the memory.
    pub fn load(&self, program: &WasmProgram, instance: &mut dyn Instance, args: &[Value]) -> Result<(), String> {
        let plan = &program.plan;
        if args.len() != plan.params.len() {
            return Err(format!("{} arguments for {} parameters", args.len(), plan.params.len()));
        }
        plan.params.iter().zip(args).try_for_each(|(p, v)| plan.write_value(&mut *instance, p, v))
    }

    /// Runs every kernel on what the memory holds, in plan order. With a `clock`
    /// (seconds), each kernel's time, in plan order.
    pub fn execute(
        &self,
        program: &WasmProgram,
        instance: &mut dyn Instance,
        clock: Option<&dyn Fn() -> f64>,
        mut hook: Option<&mut CustomCallHook<'_>>,
    ) -> Result<Vec<f64>, String> {
        let plan = &program.plan;
        let mut times = Vec::new();
        for (i, (k, compiled)) in plan.kernels.iter().zip(&program.kernels).enumerate() {
            let started = clock.map(|c| c());
            if let Some(wk) = compiled {
                if wk.extent > 0 {
                    instance.call(i, wk.extent).map_err(|e| format!("kernel {i} (%{}): {e}", k.name))?;
                }
            } else {
                plan.interpret_kernel(i, (&self.module, self.computations[i]), &mut *instance, hook.as_deref_mut())?;
            }
            if let (Some(clock), Some(started)) = (clock, started) {
                times.push(clock() - started);
            }
        }
        Ok(times)
    }

    /// The result of the last run, read from the memory.
    pub fn read_result(&self, program: &WasmProgram, instance: &dyn Instance) -> Result<Value, String> {
        let plan = &program.plan;
        plan.read_value(instance, &plan.result)
    }
}
