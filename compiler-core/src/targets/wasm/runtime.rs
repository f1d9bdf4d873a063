//! Runs a [`WasmProgram`] natively through wasmtime (feature `wasm-run`): the module
//! compiled by Cranelift, instantiated once per executable; its linear memory is the
//! plan's arena. The steps of a run (kernels in plan order, host kernels on the
//! interpreter) are [`super::host`]'s, shared with the browser. Constants (with the
//! kernels' tables, [`WasmProgram::data`]) are written once, after instantiating;
//! parameters are written before each run ([`WasmExecutable::load`]), and the
//! arena pins both, so a bench can run the kernels again on what is loaded
//! ([`WasmExecutable::execute`]).
//!
//! One [`wasmtime::Engine`] serves the whole process (its set-up is paid once, not per
//! program). A threaded module ([`super::compile_threaded`]) gets a shared memory and
//! one instance per thread, in a store of its own, all instantiated here before any
//! run; the calling
//! thread's instance runs host-side steps and small kernels alone, and a large
//! kernel's pieces ([`host::chunks`]) run on the process's thread pool
//! ([`crate::targets::pool`], the CPU target's), each on an instance no other piece holds.

use super::host::{self, HostKernels, Instance};
use super::WasmProgram;
use crate::interp::CustomCallHook;
use crate::ir::{Module, Value};
use crate::kernel::ArenaMemory;
use crate::targets::pool;
use std::borrow::Cow;
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};
use wasmtime::{Config, Engine, Extern, Memory, MemoryType, OptLevel, SharedMemory, Store, TypedFunc, Val};

static ENGINE: OnceLock<Engine> = OnceLock::new();

/// The process's engine: Cranelift at its speed setting, SIMD128 on (as in every
/// browser).
pub fn engine() -> &'static Engine {
    ENGINE.get_or_init(|| {
        let mut config = Config::new();
        config.cranelift_opt_level(OptLevel::Speed);
        config.wasm_simd(true);
        config.wasm_threads(true);
        config.shared_memory(true);
        Engine::new(&config).expect("wasmtime's default configuration is valid")
    })
}

/// Makes the engine and loads the GEMM library (the one a module built for `threads`
/// imports, from [`keep_gemm_library_in`]'s folder) on a thread of their own, so that a compile
/// starting now finds them ready: a fresh process's front end (parse, the passes, the
/// emitter) runs meanwhile, on the other core. A program without an f32 dot leaves the
/// library unused; without a folder the library is not compiled ahead (seconds of a
/// core's time), and where everything is ready nothing is started.
pub fn warm_up(threads: u32) {
    // A threaded module's memory is shared, as in `WasmExecutable::instantiate`.
    let shared = threads > 1;
    let library = LIBRARY_FOLDER.get().is_some() && LIBRARIES[shared as usize].get().is_none();
    if ENGINE.get().is_some() && !library {
        return;
    }
    let warm = move || {
        engine();
        if library {
            let _ = gemm_library(shared);
        }
    };
    // Without the thread, the compile makes them itself when it needs them.
    let _ = std::thread::Builder::new().name("wasmtime warm-up".into()).spawn(warm);
}

/// Where the compiled GEMM library is kept between processes (set once, by
/// [`keep_gemm_library_in`]); without it each process compiles the library itself.
static LIBRARY_FOLDER: OnceLock<PathBuf> = OnceLock::new();

/// Keeps the GEMM library as wasmtime compiled it in `folder` (the compilation cache's):
/// a process after the first loads it instead of compiling it, as the native target
/// calls a GEMM compiled into its binary. Takes effect before the library's first use
/// in the process; later calls are ignored.
pub fn keep_gemm_library_in(folder: PathBuf) {
    let _ = LIBRARY_FOLDER.set(folder);
}

const LIBRARY_MAGIC: &[u8; 8] = b"HSWASMLB";

/// [`gemm_library`]'s, per memory kind (unshared, shared).
static LIBRARIES: [OnceLock<Result<wasmtime::Module, String>>; 2] = [OnceLock::new(), OnceLock::new()];

/// The GEMM library ([`super::gemm::library_for`], in the broadcast form Cranelift
/// compiles best, [`super::gemm::Splat::LoadThenSplat`]) as this process's engine compiled it
/// (or loaded it from [`keep_gemm_library_in`]'s folder), once per process for each
/// memory kind (unshared, shared).
pub fn gemm_library(shared: bool) -> Result<&'static wasmtime::Module, String> {
    LIBRARIES[shared as usize].get_or_init(|| load_or_compile_library(shared)).as_ref().map_err(Clone::clone)
}

fn load_or_compile_library(shared: bool) -> Result<wasmtime::Module, String> {
    let bytes = super::gemm::library_for(shared, super::gemm::Splat::LoadThenSplat);
    let compile =
        || wasmtime::Module::new(engine(), &bytes).map_err(|e| format!("wasmtime refuses the GEMM library: {e:?}"));
    let Some(folder) = LIBRARY_FOLDER.get() else { return compile() };
    // The file's name stands for everything that decides the code: the library's bytes,
    // this compiler and wasmtime's configuration. The envelope's checksum guards the
    // contents, and wasmtime refuses code from another version or configuration.
    let mut h = std::hash::DefaultHasher::new();
    (&bytes, crate::targets::envelope::compiler_version()).hash(&mut h);
    engine().precompile_compatibility_hash().hash(&mut h);
    let path = folder.join(format!("wasm-gemm-library-{:016x}.bin", h.finish()));
    if let Ok(stored) = std::fs::read(&path) {
        if let Ok(code) = crate::targets::envelope::open(LIBRARY_MAGIC, 1, "GEMM library", &stored) {
            // SAFETY: the checksum matched, so these are the bytes `serialize` wrote
            // below for this library, compiler and engine configuration (the name);
            // wasmtime checks its own version and configuration again.
            if let Ok(module) = unsafe { wasmtime::Module::deserialize(engine(), code) } {
                return Ok(module);
            }
        }
    }
    let module = compile()?;
    // A failure to store only costs the next process a compile.
    if let Ok(code) = module.serialize() {
        let _ =
            crate::targets::envelope::write_atomically(&path, &crate::targets::envelope::seal(LIBRARY_MAGIC, 1, &code));
    }
    Ok(module)
}

/// The program's module as wasmtime compiles it, or `None` for a program the GEMM
/// library runs ([`WasmProgram::runs_on_library`]).
pub(super) fn compile_module(program: &WasmProgram) -> Result<Option<wasmtime::Module>, String> {
    if program.runs_on_library() {
        return Ok(None);
    }
    wasmtime::Module::new(engine(), &program.bytes).map(Some).map_err(|e| format!("wasmtime: {e:?}"))
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

/// One instance of the module in its own store.
struct Member {
    store: Store<()>,
    /// The module's [`super::KERNEL`]: one kernel over a range (a host kernel's index
    /// traps; the host never asks for one), or kernels `first..last` whole.
    kernel: TypedFunc<(i32, i32, i32), ()>,
}

impl Member {
    /// Runs kernel `kernel` over `[begin, end)`.
    fn call(&mut self, kernel: usize, (begin, end): (u32, u32)) -> Result<(), String> {
        self.kernel.call(&mut self.store, (kernel as i32, begin as i32, end as i32)).map_err(|e| format!("{e:?}"))
    }

    fn run_whole(&mut self, first: usize, last: usize) -> Result<(), String> {
        self.kernel.call(&mut self.store, (super::WHOLE, first as i32, last as i32)).map_err(|e| format!("{e:?}"))
    }
}

/// The module instantiated in wasmtime.
enum Wasmtime {
    /// One thread: the instance and the memory it defines.
    One { member: Member, memory: Memory },
    /// A threaded module: an instance per thread on one shared memory, and per plan
    /// kernel the pieces of its range (one: it runs whole on the first instance).
    Many { members: Vec<Mutex<Member>>, memory: SharedMemory, pieces: Vec<Vec<(u32, u32)>> },
}

/// An instance no one else holds: a free one, else the `i`-th in turn (more pieces run
/// at once than there are instances only when the pool has more threads than the module).
fn hold(members: &[Mutex<Member>], i: usize) -> MutexGuard<'_, Member> {
    members
        .iter()
        .find_map(|m| m.try_lock().ok())
        .unwrap_or_else(|| members[i % members.len()].lock().unwrap_or_else(|e| e.into_inner()))
}

impl Instance for Wasmtime {
    fn call(&mut self, kernel: usize, extent: u64) -> Result<(), String> {
        let end = u32::try_from(extent)
            .ok()
            .filter(|&e| e <= i32::MAX as u32)
            .ok_or_else(|| format!("a range of {extent} past 31 bits"))?;
        match self {
            Wasmtime::One { member, .. } => member.call(kernel, (0, end)),
            Wasmtime::Many { members, pieces, .. } if pieces[kernel].len() > 1 => {
                let pieces = &pieces[kernel];
                let error: Mutex<Option<String>> = Mutex::new(None);
                pool::run(pieces.len(), &|i| {
                    if let Err(e) = hold(members, i).call(kernel, pieces[i]) {
                        error.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
                    }
                });
                error.into_inner().unwrap_or_else(|e| e.into_inner()).map_or(Ok(()), Err)
            }
            Wasmtime::Many { members, .. } => hold(members, 0).call(kernel, (0, end)),
        }
    }

    fn run_whole(&mut self, first: usize, last: usize) -> Result<(), String> {
        match self {
            Wasmtime::One { member, .. } => member.run_whole(first, last),
            Wasmtime::Many { members, .. } => hold(members, 0).run_whole(first, last),
        }
    }
}

impl Wasmtime {
    /// The memory's bytes. SAFETY (shared memory): no kernel runs while the host holds
    /// them: the pool's threads touch the memory only inside [`pool::run`], which
    /// returns after the last piece, and the host is this one thread.
    fn bytes(&self) -> &[u8] {
        match self {
            Wasmtime::One { member, memory } => memory.data(&member.store),
            Wasmtime::Many { memory, .. } => {
                let data = memory.data();
                // SAFETY: see above; `UnsafeCell<u8>` has `u8`'s layout.
                unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, data.len()) }
            }
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Wasmtime::One { member, memory } => memory.data_mut(&mut member.store),
            Wasmtime::Many { memory, .. } => {
                let data = memory.data();
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
    /// Compiles the program's module with wasmtime (none for a program the GEMM library
    /// runs, [`WasmProgram::runs_on_library`]) and instantiates it.
    pub fn new(module: &Module, program: WasmProgram) -> Result<WasmExecutable, String> {
        let start = Instant::now();
        let compiled = compile_module(&program)?;
        Self::instantiate(module, program, compiled.as_ref(), start)
    }

    /// Instantiates `compiled` (the program's module, compiled by wasmtime, or `None` for
    /// a program the GEMM library runs; `start`: when that began, for
    /// [`WasmExecutable::compile_time`]).
    pub(super) fn instantiate(
        module: &Module,
        program: WasmProgram,
        compiled: Option<&wasmtime::Module>,
        start: Instant,
    ) -> Result<WasmExecutable, String> {
        let threads = program.threads.max(1);
        let shared = if threads > 1 {
            let pages = u32::try_from(program.pages).map_err(|_| "a memory past 32 bits".to_string())?;
            let shared = SharedMemory::new(engine(), MemoryType::shared(pages, pages))
                .map_err(|e| format!("wasmtime cannot make the shared memory: {e:?}"))?;
            Some(shared)
        } else {
            None
        };
        let library = if program.gemm { Some(gemm_library(threads > 1)?) } else { None };
        let mut members = Vec::new();
        let mut own = None;
        for t in 0..threads as u64 {
            let mut store = Store::new(engine(), ());
            // The imports in the module's order: its memory, then the table of the
            // library's instance on that memory.
            let mut imports: Vec<Extern> = Vec::new();
            let mut made = None;
            if let Some(shared) = &shared {
                imports.push(shared.clone().into());
            } else if program.gemm {
                let pages = u32::try_from(program.pages).map_err(|_| "a memory past 32 bits".to_string())?;
                let memory = Memory::new(&mut store, MemoryType::new(pages, None))
                    .map_err(|e| format!("wasmtime cannot make the memory: {e:?}"))?;
                made = Some(memory);
                imports.push(memory.into());
            }
            let mut lib = None;
            if let Some(library) = library {
                let instance = wasmtime::Instance::new(&mut store, library, &imports[..1])
                    .map_err(|e| format!("wasmtime: the GEMM library: {e:?}"))?;
                let table = instance
                    .get_table(&mut store, super::gemm::LIBRARY_TABLE)
                    .ok_or("the GEMM library exports no table")?;
                imports.push(table.into());
                lib = Some(instance);
            }
            // The instance whose `kernel` the host calls: the program's, or the library's
            // on the program's directory.
            let instance = match (compiled, lib) {
                (Some(compiled), _) => {
                    wasmtime::Instance::new(&mut store, compiled, &imports).map_err(|e| format!("wasmtime: {e:?}"))?
                }
                (None, Some(lib)) => {
                    let directory = lib
                        .get_global(&mut store, super::gemm::DIRECTORY)
                        .ok_or("the GEMM library exports no directory global")?;
                    directory
                        .set(&mut store, Val::I32(program.directory as u32 as i32))
                        .map_err(|e| format!("wasmtime: {e:?}"))?;
                    lib
                }
                (None, None) => return Err("a program without a module of its own needs the GEMM library".into()),
            };
            let scratch =
                instance.get_global(&mut store, super::SCRATCH).ok_or("the module exports no scratch global")?;
            let base = program.scratch + t * program.scratch_stride;
            scratch.set(&mut store, Val::I32(base as u32 as i32)).map_err(|e| format!("wasmtime: {e:?}"))?;
            if threads == 1 {
                own = Some(match made {
                    Some(memory) => memory,
                    None => instance.get_memory(&mut store, "memory").ok_or("the module exports no memory")?,
                });
            }
            let kernel = instance
                .get_typed_func::<(i32, i32, i32), ()>(&mut store, super::KERNEL)
                .map_err(|e| format!("{}: {e:?}", super::KERNEL))?;
            members.push(Member { store, kernel });
        }
        let mut instance = match (shared, own) {
            (Some(memory), _) => {
                let pieces = program
                    .kernels
                    .iter()
                    .map(|k| k.as_ref().map_or_else(Vec::new, |k| host::chunks(k, threads)))
                    .collect();
                Wasmtime::Many { members: members.into_iter().map(Mutex::new).collect(), memory, pieces }
            }
            (None, Some(memory)) => {
                let member = members.pop().ok_or("no instance")?;
                Wasmtime::One { member, memory }
            }
            (None, None) => return Err("no memory".into()),
        };
        program.write_data(&mut instance)?;
        let compile_time = start.elapsed();
        let host = HostKernels::new(module, &program);
        let instance = RefCell::new(instance);
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
        let run = || self.host.execute(&self.program, &mut *self.instance.borrow_mut(), clock, hook);
        // A threaded run's calling thread on the CPU the pool's workers leave free, as the
        // CPU target's runs do.
        let times = if self.threads() > 1 { pool::as_caller(run)? } else { run()? };
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
