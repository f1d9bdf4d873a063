//! Runs a [`WasmProgram`] natively through wasmtime (feature `wasm-run`): the module
//! compiled by Cranelift, instantiated once per executable; its linear memory is the
//! plan's arena. The steps of a run (kernels in plan order, host kernels on the
//! interpreter) are [`super::host`]'s, shared with the browser. Constants are the module's data
//! segments; parameters are written before each run ([`WasmExecutable::load`]), and the
//! arena pins both, so a bench can run the kernels again on what is loaded
//! ([`WasmExecutable::execute`]).
//!
//! One [`wasmtime::Engine`] serves the whole process (its set-up is paid once, not per
//! program). A threaded module ([`super::compile_threaded`]) gets a shared memory and
//! one instance per thread, in a store of its own, all instantiated here before any
//! run (each instantiation writes the constants' data segments again); the calling
//! thread's instance runs host-side steps and small kernels alone, and a large
//! kernel's range is split across all of them ([`super::pool`]).

use super::host::{self, HostKernels, Instance};
use super::pool::{Member, Pool};
use super::WasmProgram;
use crate::interp::CustomCallHook;
use crate::ir::{Module, Value};
use crate::kernel::ArenaMemory;
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use wasmtime::{Config, Engine, Extern, Memory, MemoryType, OptLevel, SharedMemory, Store, Val};

/// The process's engine: Cranelift at its speed setting, SIMD128 on (as in every
/// browser).
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut config = Config::new();
        config.cranelift_opt_level(OptLevel::Speed);
        config.wasm_simd(true);
        config.wasm_threads(true);
        config.shared_memory(true);
        Engine::new(&config).expect("wasmtime's default configuration is valid")
    })
}

/// One kernel of a timed run.
#[derive(Clone, Debug)]
pub struct KernelTime {
    /// The plan kernel's name (its source instruction's).
    pub name: String,
    /// Run on the host by the interpreter.
    pub on_host: bool,
    pub time: Duration,
}

/// What one run measured.
#[derive(Clone, Debug, Default)]
pub struct RunTimes {
    /// From writing the inputs to reading the result back.
    pub total: Duration,
    /// Per plan kernel, in plan order, for a timed run.
    pub kernels: Option<Vec<KernelTime>>,
}

/// The module's memory: its own (one thread) or the threads' shared one.
enum Linear {
    Own(Memory),
    Shared(SharedMemory),
}

/// The module instantiated in wasmtime: the calling thread's instance, the memory, and
/// the other threads' workers.
struct Wasmtime {
    caller: Member,
    memory: Linear,
    pool: Option<Pool>,
}

impl Instance for Wasmtime {
    fn call(&mut self, kernel: usize, extent: u64) -> Result<(), String> {
        let end = u32::try_from(extent)
            .ok()
            .filter(|&e| e <= i32::MAX as u32)
            .ok_or_else(|| format!("a range of {extent} past 31 bits"))?;
        match &self.pool {
            Some(pool) if pool.splits(kernel) => pool.run(kernel, &mut self.caller),
            _ => self.caller.call(kernel, (0, end)),
        }
    }
}

impl Wasmtime {
    /// The memory's bytes. SAFETY (shared memory): no kernel runs while the host holds
    /// them: the workers touch the memory only inside [`Pool::run`], which returns after
    /// the last piece, and the host is this one thread.
    fn bytes(&self) -> &[u8] {
        match &self.memory {
            Linear::Own(m) => m.data(&self.caller.store),
            Linear::Shared(m) => {
                let data = m.data();
                // SAFETY: see above; `UnsafeCell<u8>` has `u8`'s layout.
                unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, data.len()) }
            }
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match &self.memory {
            Linear::Own(m) => m.data_mut(&mut self.caller.store),
            Linear::Shared(m) => {
                let data = m.data();
                // SAFETY: as for `bytes`, and `&mut self` holds the only host access.
                unsafe { std::slice::from_raw_parts_mut(data.as_ptr() as *mut u8, data.len()) }
            }
        }
    }
}

impl ArenaMemory for Wasmtime {
    fn read_bytes(&self, offset: usize, len: usize) -> Result<Cow<'_, [u8]>, String> {
        self.bytes().read_bytes(offset, len)
    }

    fn write_bytes(&mut self, offset: usize, bytes: &[u8]) -> Result<(), String> {
        self.bytes_mut().write_bytes(offset, bytes)
    }
}

/// A program's module, compiled and instantiated.
pub struct WasmExecutable {
    program: WasmProgram,
    host: HostKernels,
    instance: RefCell<Wasmtime>,
    /// Compiling the module and instantiating it.
    pub compile_time: Duration,
}

impl WasmExecutable {
    /// Compiles the program's module with wasmtime and instantiates it.
    pub fn new(module: &Module, program: WasmProgram) -> Result<WasmExecutable, String> {
        let start = Instant::now();
        let compiled = wasmtime::Module::new(engine(), &program.bytes).map_err(|e| format!("wasmtime: {e:?}"))?;
        Self::instantiate(module, program, &compiled, start)
    }

    /// Instantiates `compiled` (the program's module, compiled by wasmtime; `start`: when
    /// that began, for [`WasmExecutable::compile_time`]).
    pub(super) fn instantiate(
        module: &Module,
        program: WasmProgram,
        compiled: &wasmtime::Module,
        start: Instant,
    ) -> Result<WasmExecutable, String> {
        let threads = program.threads.max(1);
        let (memory, imports) = if threads > 1 {
            let pages = u32::try_from(program.pages).map_err(|_| "a memory past 32 bits".to_string())?;
            let shared = SharedMemory::new(engine(), MemoryType::shared(pages, pages))
                .map_err(|e| format!("wasmtime cannot make the shared memory: {e:?}"))?;
            (Some(Linear::Shared(shared.clone())), vec![Extern::from(shared)])
        } else {
            (None, Vec::new())
        };
        let mut members = Vec::new();
        let mut own = None;
        for t in 0..threads as u64 {
            let mut store = Store::new(engine(), ());
            let instance =
                wasmtime::Instance::new(&mut store, compiled, &imports).map_err(|e| format!("wasmtime: {e:?}"))?;
            let scratch = instance.get_global(&mut store, "scratch").ok_or("the module exports no scratch global")?;
            let base = program.scratch + t * program.scratch_stride;
            scratch.set(&mut store, Val::I32(base as u32 as i32)).map_err(|e| format!("wasmtime: {e:?}"))?;
            if threads == 1 {
                own = Some(instance.get_memory(&mut store, "memory").ok_or("the module exports no memory")?);
            }
            let funcs = program
                .kernels
                .iter()
                .map(|k| match k {
                    Some(k) => instance
                        .get_typed_func::<(i32, i32), ()>(&mut store, &k.export)
                        .map(Some)
                        .map_err(|e| format!("{}: {e:?}", k.export)),
                    None => Ok(None),
                })
                .collect::<Result<Vec<_>, _>>()?;
            members.push(Member { store, funcs });
        }
        let memory = match (memory, own) {
            (Some(m), _) => m,
            (None, Some(m)) => Linear::Own(m),
            (None, None) => return Err("no memory".into()),
        };
        let caller = members.remove(0);
        let pool = if threads > 1 {
            let pieces = program
                .kernels
                .iter()
                .map(|k| k.as_ref().map_or_else(Vec::new, |k| host::chunks(k, threads)))
                .collect();
            Some(Pool::start(members, pieces)?)
        } else {
            None
        };
        let compile_time = start.elapsed();
        let host = HostKernels::new(module, &program);
        let instance = RefCell::new(Wasmtime { caller, memory, pool });
        Ok(WasmExecutable { program, host, instance, compile_time })
    }

    /// The threads a run uses (the module's).
    pub fn threads(&self) -> u32 {
        self.program.threads.max(1)
    }

    pub fn program(&self) -> &WasmProgram {
        &self.program
    }

    /// Runs the program on `args` (one value per entry parameter).
    pub fn run(&self, args: &[Value]) -> Result<(Value, RunTimes), String> {
        self.run_measured(args, false)
    }

    /// [`WasmExecutable::run`], each kernel timed.
    pub fn run_timed(&self, args: &[Value]) -> Result<(Value, RunTimes), String> {
        self.run_measured(args, true)
    }

    fn run_measured(&self, args: &[Value], timed: bool) -> Result<(Value, RunTimes), String> {
        let start = Instant::now();
        self.load(args)?;
        let kernels = self.execute_with(timed, None)?;
        let out = self.read_result()?;
        Ok((out, RunTimes { total: start.elapsed(), kernels }))
    }

    /// [`WasmExecutable::run`] with the custom calls the interpreter does not know (the
    /// conformance corpus's `check.*` ops) answered by `hook`.
    pub fn run_with_custom_calls(&self, args: &[Value], hook: &mut CustomCallHook) -> Result<Value, String> {
        self.load(args)?;
        self.execute_with(false, Some(hook))?;
        self.read_result()
    }

    /// Writes the parameters into the memory.
    pub fn load(&self, args: &[Value]) -> Result<(), String> {
        self.host.load(&self.program, &mut *self.instance.borrow_mut(), args)
    }

    /// Runs every kernel on what the memory holds (after [`WasmExecutable::load`]);
    /// `timed`: each kernel's time, in plan order.
    pub fn execute(&self, timed: bool) -> Result<Option<Vec<KernelTime>>, String> {
        self.execute_with(timed, None)
    }

    fn execute_with(
        &self,
        timed: bool,
        hook: Option<&mut CustomCallHook<'_>>,
    ) -> Result<Option<Vec<KernelTime>>, String> {
        let epoch = Instant::now();
        let clock = move || epoch.elapsed().as_secs_f64();
        let clock: Option<&dyn Fn() -> f64> = if timed { Some(&clock) } else { None };
        let times = self.host.execute(&self.program, &mut *self.instance.borrow_mut(), clock, hook)?;
        Ok(timed.then(|| {
            let plan = &self.program.plan;
            (plan.kernels.iter().zip(&self.program.kernels).zip(times))
                .map(|((k, compiled), t)| KernelTime {
                    name: k.name.clone(),
                    on_host: compiled.is_none(),
                    time: Duration::from_secs_f64(t),
                })
                .collect()
        }))
    }

    /// The result of the last run, read from the memory.
    pub fn read_result(&self) -> Result<Value, String> {
        self.host.read_result(&self.program, &*self.instance.borrow())
    }
}
