//! `browser-cpu` runs: the compiled module's WebAssembly kernels (the wasm target's
//! module, SIMD128), instantiated by this worker's engine (`new WebAssembly.Module`,
//! which a worker may do synchronously at any size) and run on the module's linear
//! memory by the target's host driver (`targets::wasm::host`, the steps wasmtime runs
//! natively); the host kernels run in the interpreter. Checked against the interpreter
//! like every run.
//!
//! Instantiated modules are kept in memory, keyed by the module's text (fused and
//! unfused apart), so compiling the same program again reuses them. The GEMM library
//! (`targets::wasm::gemm::library`), whose table a module with an f32 dot imports its
//! GEMM from, is compiled once per worker, by the first such program; after each run
//! the worker makes a spare memory with the library's instance on it, which the next
//! such program grows and takes instead of making its own. A program whose kernels in
//! WebAssembly are all f32 dots has no module to compile: that library instance's own
//! `kernel` runs it, on the program's directory of dots. A worker's clock
//! ticks in tenths of a millisecond: each timed round runs a batch of runs that takes
//! at least 2 ms (its size found by doubling), each kernel read from the clock every time, and the round's per-kernel
//! times are the batch's means; the view's are medians over the rounds.

use crate::protocol::RunView;
use crate::{kernel_times, run_view, RunJob, RunTiming};
use hloscope_core::ir::Literal;
use hloscope_core::kernel::ArenaMemory;
use hloscope_core::targets::wasm::{self, host::HostKernels, host::Instance, WasmProgram};
use js_sys::{Function, Object, Reflect, Uint8Array, WebAssembly};
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::{JsCast, JsValue};

/// Timed rounds: at most this many, and no more once they have taken
/// [`TIMED_BUDGET_MS`].
const MAX_ROUNDS: usize = 5;
const TIMED_BUDGET_MS: f64 = 300.0;
/// A timed batch of runs lasts at least this long, of at most [`MAX_BATCH`] runs.
const BATCH_MS: f64 = 2.0;
const MAX_BATCH: usize = 1 << 14;
/// Instantiated modules kept (the most recent first).
const KEPT: usize = 4;

/// The module instantiated by the browser's engine.
struct Browser {
    memory: WebAssembly::Memory,
    /// The module's `kernel(index, begin, end)` export (a host kernel's index traps; the
    /// host never asks for one), which with index [`wasm::WHOLE`] runs several kernels in
    /// one call.
    kernel: Function,
}

impl Browser {
    /// A view of `len` bytes at `offset` of the memory, or why it does not fit.
    fn view(&self, offset: usize, len: usize) -> Result<Uint8Array, String> {
        let buffer = self.memory.buffer().unchecked_into::<js_sys::ArrayBuffer>();
        let size = buffer.byte_length() as usize;
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(hloscope_core::kernel::arena_outside(offset, len, size));
        }
        Ok(Uint8Array::new_with_byte_offset_and_length(&buffer, offset as u32, len as u32))
    }
}

impl ArenaMemory for Browser {
    fn read_bytes(&self, offset: usize, len: usize) -> Result<Cow<'_, [u8]>, String> {
        Ok(Cow::Owned(self.view(offset, len)?.to_vec()))
    }

    fn write_bytes(&mut self, offset: usize, bytes: &[u8]) -> Result<(), String> {
        self.view(offset, bytes.len())?.copy_from(bytes);
        Ok(())
    }
}

impl Instance for Browser {
    fn call(&mut self, kernel: usize, extent: u64) -> Result<(), String> {
        let end = i32::try_from(extent).map_err(|_| format!("a range of {extent} past 32 bits"))?;
        let (index, begin) = (JsValue::from(kernel as u32), JsValue::from(0));
        self.kernel.call3(&JsValue::UNDEFINED, &index, &begin, &JsValue::from(end)).map(drop).map_err(js_error)
    }

    fn run_whole(&mut self, first: usize, last: usize) -> Result<(), String> {
        let (whole, first, last) =
            (JsValue::from(wasm::WHOLE), JsValue::from(first as u32), JsValue::from(last as u32));
        self.kernel.call3(&JsValue::UNDEFINED, &whole, &first, &last).map(drop).map_err(js_error)
    }
}

/// A program's module, instantiated, with what its host kernels need.
struct Executable {
    program: WasmProgram,
    host: HostKernels,
    instance: Browser,
    /// Emitting the module, compiling and instantiating it.
    compile_ms: f64,
}

/// (module text, unfused), the executable.
type Kept = ((String, bool), Rc<RefCell<Executable>>);

thread_local! {
    static EXECUTABLES: RefCell<Vec<Kept>> = const { RefCell::new(Vec::new()) };
    static GEMM_LIBRARY: RefCell<Option<WebAssembly::Module>> = const { RefCell::new(None) };
    /// A memory of one page and the GEMM library's instance on it ([`prepare_spare`]).
    static SPARE: RefCell<Option<(WebAssembly::Memory, WebAssembly::Instance)>> = const { RefCell::new(None) };
}

/// Sets `o[k] = v`.
fn set(o: &Object, k: &str, v: &JsValue) -> Result<(), String> {
    Reflect::set(o, &k.into(), v).map(drop).map_err(js_error)
}

/// A new memory of one page and the GEMM library's instance on it.
fn gemm_memory() -> Result<(WebAssembly::Memory, WebAssembly::Instance), String> {
    let (descriptor, env, imports) = (Object::new(), Object::new(), Object::new());
    set(&descriptor, "initial", &JsValue::from(1))?;
    let memory = WebAssembly::Memory::new(&descriptor).map_err(js_error)?;
    set(&env, "memory", &memory)?;
    set(&imports, "env", &env)?;
    let library = WebAssembly::Instance::new(&gemm_library()?, &imports).map_err(js_error)?;
    Ok((memory, library))
}

/// Makes the spare memory and library instance for the next program with an f32 dot,
/// once a program has had this worker compile the library, so that the next program's
/// compile does not wait for them (a tenth of a millisecond, a fifth of a GEMM
/// program's compile in V8).
fn prepare_spare() {
    let compiled = GEMM_LIBRARY.with(|l| l.borrow().is_some());
    if compiled && SPARE.with(|s| s.borrow().is_none()) {
        let spare = gemm_memory().ok();
        SPARE.with(|s| *s.borrow_mut() = spare);
    }
}

/// The GEMM library compiled by this worker's engine (compiled at the first call).
fn gemm_library() -> Result<WebAssembly::Module, String> {
    GEMM_LIBRARY.with(|l| {
        if let Some(m) = &*l.borrow() {
            return Ok(m.clone());
        }
        let bytes = Uint8Array::from(wasm::gemm::library(false).as_slice());
        let m = WebAssembly::Module::new(&bytes.into()).map_err(js_error)?;
        *l.borrow_mut() = Some(m.clone());
        Ok(m)
    })
}

/// Runs `job` on the WebAssembly kernels: its view and outputs, or why not (a module the
/// engine refused, a failed kernel), in words.
pub fn run(job: &RunJob, clock: fn() -> f64) -> Result<(Box<RunView>, Vec<Literal>), String> {
    let (exe, fresh) = executable(job, clock)?;
    let result = run_on(job, &mut exe.borrow_mut(), fresh, clock);
    prepare_spare();
    result
}

fn run_on(
    job: &RunJob,
    exe: &mut Executable,
    fresh: bool,
    clock: fn() -> f64,
) -> Result<(Box<RunView>, Vec<Literal>), String> {
    let Executable { program, host, instance, compile_ms } = exe;
    // The first run is untimed: it gives the outputs. Then batches double until one
    // takes [`BATCH_MS`] (the clock ticks in 0.1 ms; a small program runs in µs).
    host.load(program, instance, &job.args)?;
    host.execute(program, instance, None, None)?;
    let got = host.read_result(program, instance)?.flatten();
    let mut batch = 1;
    loop {
        let t0 = clock();
        for _ in 0..batch {
            host.execute(program, instance, None, None)?;
        }
        if clock() - t0 >= BATCH_MS || batch >= MAX_BATCH {
            break;
        }
        batch *= 2;
    }
    let seconds = || clock() / 1e3;
    let mut runs_s = Vec::new();
    let mut per_kernel: Vec<Vec<f64>> = vec![Vec::new(); program.kernels.len()];
    let started = clock();
    while runs_s.len() < MAX_ROUNDS && (runs_s.is_empty() || clock() - started < TIMED_BUDGET_MS) {
        let mut sums = vec![0.0; program.kernels.len()];
        let round = clock();
        for _ in 0..batch {
            let times = host.execute(program, instance, Some(&seconds), None)?;
            sums.iter_mut().zip(times).for_each(|(s, t)| *s += t);
        }
        runs_s.push((clock() - round) / 1e3 / batch as f64);
        per_kernel.iter_mut().zip(sums).for_each(|(k, s)| k.push(s / batch as f64));
    }
    let (compiled, on_host) = program.counts();
    let cached = if fresh { "" } else { ", the module kept from an earlier run" };
    let compiled = if program.runs_on_library() {
        format!("{compiled} kernels, all f32 dots: the GEMM library runs them (no module compiled)")
    } else {
        format!("{compiled} kernels compiled")
    };
    let device = format!(
        "WebAssembly (SIMD128) in this page's worker: {compiled}, {on_host} on the host \
         (interpreter){cached}; timed by performance.now() over batches of {batch} runs"
    );
    let kernels = kernel_times(job, &program.plan.kernels, &per_kernel);
    let compile_s = if fresh { *compile_ms / 1e3 } else { 0.0 };
    let timing = RunTiming { target: "browser-cpu", device, compile_s, runs_s, kernels };
    Ok((run_view(job, &got, timing), got))
}

/// The job's executable, and whether it was made now: a kept one for the same module
/// text, or a new one (emitted, compiled and instantiated), timed.
fn executable(job: &RunJob, clock: fn() -> f64) -> Result<(Rc<RefCell<Executable>>, bool), String> {
    let key = (hloscope_core::print::hlo::print_module(&job.module), job.unfused);
    let kept = EXECUTABLES.with(|e| e.borrow().iter().find(|(k, _)| *k == key).map(|(_, x)| Rc::clone(x)));
    if let Some(kept) = kept {
        return Ok((kept, false));
    }
    let t0 = clock();
    let program = wasm::compile(&job.module)?;
    let imports = Object::new();
    // The memory and the GEMM library's instance on it (the spare's, else new ones), the
    // memory grown to the program's pages, for a program with an f32 dot.
    let mut gemm = None;
    if program.gemm {
        let (memory, library) = match SPARE.with(|s| s.borrow_mut().take()) {
            Some(spare) => spare,
            None => gemm_memory()?,
        };
        let grow = u32::try_from(program.pages - 1).map_err(|_| "a memory past 32 bits".to_string())?;
        memory.grow(grow);
        gemm = Some((memory, library));
    }
    let get = |o: &Object, name: &str| Reflect::get(o, &JsValue::from_str(name)).map_err(js_error);
    let set_global = |exports: &Object, name: &str, value: u64| -> Result<(), String> {
        let global = get(exports, name)?.dyn_into::<WebAssembly::Global>().map_err(|_| format!("no global {name}"))?;
        global.set_value(&JsValue::from(value as u32));
        Ok(())
    };
    // The instance whose `kernel` runs the program: its standalone module's (the engine
    // copies the segments as it instantiates, in less time than a host's writes), or for
    // a program of f32 dots only the library's own on the program's directory (no module
    // to compile, and its data for this host to write).
    let (module, data) = program.with_segments();
    let (exports, memory) = match (module, gemm) {
        (None, Some((memory, library))) => {
            let exports = library.exports();
            set_global(&exports, wasm::gemm::DIRECTORY, program.directory)?;
            set_global(&exports, wasm::SCRATCH, program.scratch)?;
            (exports, memory)
        }
        (None, None) => return Err("a program without a module of its own needs the GEMM library".into()),
        (Some(module), gemm) => {
            if let Some((memory, library)) = &gemm {
                // `{ env: { memory }, gemm: { table } }`
                let (env, table) = (Object::new(), Object::new());
                set(&env, "memory", memory)?;
                set(&imports, "env", &env)?;
                set(&table, wasm::gemm::LIBRARY_TABLE, &get(&library.exports(), wasm::gemm::LIBRARY_TABLE)?)?;
                set(&imports, wasm::gemm::LIBRARY_MODULE, &table)?;
            }
            let bytes = Uint8Array::from(module.as_slice());
            let module = WebAssembly::Module::new(&bytes.into()).map_err(js_error)?;
            let exports = WebAssembly::Instance::new(&module, &imports).map_err(js_error)?.exports();
            let memory = get(&exports, "memory")?.dyn_into().map_err(|_| "the module exports no memory")?;
            (exports, memory)
        }
    };
    let kernel = get(&exports, wasm::KERNEL)?.dyn_into::<Function>().map_err(|_| "no kernel export")?;
    let mut instance = Browser { memory, kernel };
    data.iter().try_for_each(|(at, bytes)| instance.write_bytes(*at as usize, bytes))?;
    let host = HostKernels::new(&job.module, &program);
    let compile_ms = clock() - t0;
    let exe = Rc::new(RefCell::new(Executable { program, host, instance, compile_ms }));
    EXECUTABLES.with(|e| {
        let mut e = e.borrow_mut();
        e.insert(0, (key, Rc::clone(&exe)));
        e.truncate(KEPT);
    });
    Ok((exe, true))
}

/// A JavaScript exception in words.
fn js_error(e: JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}
