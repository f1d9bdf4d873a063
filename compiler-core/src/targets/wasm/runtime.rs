//! Runs a [`WasmProgram`] natively through wasmtime (feature `wasm-run`): the module
//! compiled by Cranelift, instantiated once per executable; its linear memory is the
//! plan's arena. Kernels run in plan order, each compiled kernel called once over its
//! whole parallel range, each host kernel (opaque: the interpreter) reading its operands
//! straight from the memory and writing its result back. Constants are the module's data
//! segments; parameters are written before each run ([`WasmExecutable::load`]), and the
//! arena pins both, so a bench can run the kernels again on what is loaded
//! ([`WasmExecutable::execute`]).
//!
//! One [`wasmtime::Engine`] serves the whole process (its set-up is paid once, not per
//! program).

use super::WasmProgram;
use crate::interp::{CustomCallHook, Interpreter};
use crate::ir::{CompId, Module, Value};
use crate::kernel::KernelBody;
use std::cell::RefCell;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use wasmtime::{Config, Engine, Instance, Memory, OptLevel, Store, TypedFunc};

/// The process's engine: Cranelift at its speed setting, SIMD128 on (as in every
/// browser).
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut config = Config::new();
        config.cranelift_opt_level(OptLevel::Speed);
        config.wasm_simd(true);
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

/// A program's module, compiled and instantiated.
pub struct WasmExecutable {
    program: WasmProgram,
    /// The module with a host computation per host kernel.
    module: Module,
    host: Vec<Option<CompId>>,
    store: RefCell<Store<()>>,
    memory: Memory,
    funcs: Vec<Option<TypedFunc<(i32, i32), ()>>>,
    /// Compiling the module and instantiating it.
    pub compile_time: Duration,
}

impl WasmExecutable {
    /// Compiles the program's module with wasmtime and instantiates it.
    pub fn new(module: &Module, program: WasmProgram) -> Result<WasmExecutable, String> {
        let start = Instant::now();
        let compiled = wasmtime::Module::new(engine(), &program.bytes).map_err(|e| format!("wasmtime: {e:?}"))?;
        let mut store = Store::new(engine(), ());
        let instance = Instance::new(&mut store, &compiled, &[]).map_err(|e| format!("wasmtime: {e:?}"))?;
        let memory = instance.get_memory(&mut store, "memory").ok_or("the module exports no memory")?;
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
        let compile_time = start.elapsed();
        let mut wrapped = module.clone();
        let host = program
            .plan
            .kernels
            .iter()
            .map(|k| match &k.body {
                KernelBody::Opaque { inst, .. } => {
                    Some(crate::kernel::host_computation(&mut wrapped, program.plan.comp, *inst))
                }
                _ => None,
            })
            .collect();
        Ok(WasmExecutable { program, module: wrapped, host, store: RefCell::new(store), memory, funcs, compile_time })
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
        let plan = &self.program.plan;
        if args.len() != plan.params.len() {
            return Err(format!("{} arguments for {} parameters", args.len(), plan.params.len()));
        }
        let mut store = self.store.borrow_mut();
        let mem = self.memory.data_mut(&mut *store);
        plan.params.iter().zip(args).try_for_each(|(p, v)| plan.write_value(mem, p, v))
    }

    /// Runs every kernel on what the memory holds (after [`WasmExecutable::load`]);
    /// `timed`: each kernel's time, in plan order.
    pub fn execute(&self, timed: bool) -> Result<Option<Vec<KernelTime>>, String> {
        self.execute_with(timed, None)
    }

    fn execute_with(
        &self,
        timed: bool,
        mut hook: Option<&mut CustomCallHook<'_>>,
    ) -> Result<Option<Vec<KernelTime>>, String> {
        let plan = &self.program.plan;
        let mut store = self.store.borrow_mut();
        let mut times = Vec::new();
        for (i, k) in plan.kernels.iter().enumerate() {
            let t = Instant::now();
            if let (Some(f), Some(wk)) = (&self.funcs[i], &self.program.kernels[i]) {
                if wk.extent > 0 {
                    f.call(&mut *store, (0, wk.extent as i32))
                        .map_err(|e| format!("kernel {i} (%{}): {e:?}", k.name))?;
                }
            } else {
                let KernelBody::Opaque { operands, result, .. } = &k.body else {
                    return Err(format!("kernel {i} (%{}) has neither a function nor a host computation", k.name));
                };
                let vals: Vec<Value> = {
                    let mem = self.memory.data(&*store);
                    operands.iter().map(|o| plan.read_value(mem, o)).collect::<Result<_, _>>()?
                };
                let comp = self.host[i].ok_or("a host kernel without its computation")?;
                let mut interp = Interpreter::new(&self.module);
                if let Some(hook) = hook.as_deref_mut() {
                    interp = interp.with_custom_call_hook(|inst, args| hook(inst, args));
                }
                let v = interp.call(comp, &vals).map_err(|e| format!("%{}: {}", e.inst, e.message))?;
                plan.write_value(self.memory.data_mut(&mut *store), result, &v)?;
            }
            if timed {
                times.push(KernelTime { name: k.name.clone(), on_host: self.funcs[i].is_none(), time: t.elapsed() });
            }
        }
        Ok(timed.then_some(times))
    }

    /// The result of the last run, read from the memory.
    pub fn read_result(&self) -> Result<Value, String> {
        let plan = &self.program.plan;
        let store = self.store.borrow();
        plan.read_value(self.memory.data(&*store), &plan.result)
    }
}
