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
use crate::targets::split::Split;

/// An instantiated module, as an engine holds it; its bytes are the module's linear
/// memory (the `memory` export).
pub trait Instance: ArenaMemory {
    /// Calls kernel `kernel`'s export (`k{kernel}`) over `0..extent` of its parallel
    /// variable.
    fn call(&mut self, kernel: usize, extent: u64) -> Result<(), String>;

    /// Runs kernels `first..last` (a stretch of [`stretches`]) in one call of the
    /// module's [`super::KERNEL`] export ([`super::WHOLE`]).
    fn run_whole(&mut self, first: usize, last: usize) -> Result<(), String>;
}

/// Pieces per thread of a split elemental kernel (the CPU target's number).
const PIECES_PER_THREAD: u64 = 4;

/// Pieces per thread of a split dot: each piece packs its batch's rhs again.
const DOT_PIECES_PER_THREAD: u64 = 2;

/// The pieces `[begin, end)` of kernel `k`'s range that `threads` instances take, one at
/// a time, in any order: the whole range when [`Split`] keeps it on one thread, else
/// its pieces (the native CPU target's rule, fewer per thread for a dot), each
/// beginning and ending on a whole [`WasmKernel::step`] or at the extent.
pub fn chunks(k: &WasmKernel, threads: u32) -> Vec<(u32, u32)> {
    let per_thread = if k.dot { DOT_PIECES_PER_THREAD } else { PIECES_PER_THREAD };
    match Split::of(k.extent, k.work, threads as u64, per_thread) {
        Some(s) => {
            let s = s.in_steps(k.step);
            (0..s.count).map(|i| s.piece(i)).map(|(b, e)| (b as u32, e as u32)).collect()
        }
        None => vec![(0, k.extent as u32)],
    }
}

/// The stretches of two or more consecutive plan kernels that an untimed run calls
/// through the module's [`super::KERNEL`] export ([`super::WHOLE`]), one call into the module for them all:
/// kernels in WebAssembly that [`chunks`] keeps whole on the program's threads (a host
/// kernel or a split one ends a stretch).
pub fn stretches(program: &WasmProgram) -> Vec<std::ops::Range<usize>> {
    stretches_of(&program.kernels, program.threads)
}

/// [`stretches`] of a program's kernels on `threads`, before the program is whole (the
/// module's [`super::WHOLE`] code is for these stretches only).
pub(super) fn stretches_of(kernels: &[Option<WasmKernel>], threads: u32) -> Vec<std::ops::Range<usize>> {
    let threads = threads.max(1);
    let whole = |k: &Option<WasmKernel>| {
        k.as_ref().is_some_and(|k| k.extent <= i32::MAX as u64 && chunks(k, threads).len() == 1)
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < kernels.len() {
        let end = (i..kernels.len()).find(|&j| !whole(&kernels[j])).unwrap_or(kernels.len());
        if end - i > 1 {
            out.push(i..end);
        }
        i = end.max(i + 1);
    }
    out
}

/// What the host keeps beside a program's module: the module with a computation per
/// host kernel, for the interpreter to run, and the program's [`stretches`].
pub struct HostKernels {
    module: Module,
    computations: Vec<Option<CompId>>,
    stretches: Vec<std::ops::Range<usize>>,
}

impl HostKernels {
    pub fn new(module: &Module, program: &WasmProgram) -> HostKernels {
        let (module, computations) = program.plan.host_computations(module);
        HostKernels { module, computations, stretches: stretches(program) }
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
        let mut stretches = self.stretches.iter().peekable();
        let mut next = 0;
        for (i, (k, compiled)) in plan.kernels.iter().zip(&program.kernels).enumerate() {
            if i < next {
                continue;
            }
            // Untimed, a stretch is one call into the module.
            let stretch = if clock.is_none() { stretches.next_if(|r| r.start == i) } else { None };
            if let Some(r) = stretch {
                let last = &plan.kernels[r.end - 1].name;
                instance
                    .run_whole(r.start, r.end)
                    .map_err(|e| format!("kernels {i} to {} (%{} to %{last}): {e}", r.end - 1, k.name))?;
                next = r.end;
                continue;
            }
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
