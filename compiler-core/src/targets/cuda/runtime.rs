//! Runs a [`CudaProgram`] through the CUDA driver (cudarc, loaded at run time): one
//! device allocation holds the plan's arena, the program's one translation unit is
//! compiled by NVRTC for the device's own architecture and loaded as one module, and
//! each kernel is one launch on one stream, in plan order (a launch sees the stores of
//! the launches before it).
//!
//! Host kernels (opaque: the interpreter) read the arena back into a host mirror after
//! the stream is drained, run, and write their outputs back. Constants are written once,
//! when the executable is made, and parameters before each run
//! ([`CudaExecutable::load`]): the arena pins both, so no kernel overwrites them and a
//! bench can run the kernels again on what is loaded ([`CudaExecutable::execute`]). Only
//! the result's buffers are read back.
//!
//! Per-kernel times are opt-in ([`CudaExecutable::run_timed`]): a CUDA event before and
//! after each launch, read once the stream is done (the GPU's own clock; launches still
//! queue back to back); host kernels are timed on the host.
//!
//! The module cache: NVRTC's PTX is kept per (translation unit, architecture) for the
//! process's life, so a bench or a second executable of the same program does not
//! compile again.

use super::cuda_c::BLOCK;
use super::toolkit::{self, Toolkit};
use super::{nvrtc, CudaProgram};
use crate::interp::CustomCallHook;
use crate::ir::{Literal, Module, Value};
use crate::kernel::{BufferId, ValueBufs};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The device a program runs on, in words (for the CLI and the bench).
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub name: String,
    /// Compute capability as `major * 10 + minor` (90: Hopper).
    pub arch: u32,
    /// Where NVRTC was found.
    pub toolkit: String,
}

/// One kernel of a timed run.
#[derive(Clone, Debug)]
pub struct KernelTime {
    /// The plan kernel's name (its source instruction's).
    pub name: String,
    /// Run on the host by the interpreter (timed from reading the arena back to its
    /// outputs' upload), not on the device.
    pub on_host: bool,
    pub time: Duration,
}

/// What one run measured.
#[derive(Clone, Debug, Default)]
pub struct RunTimes {
    /// From writing the inputs to reading the result back.
    pub total: Duration,
    /// Per plan kernel in plan order, for a timed run (a kernel with nothing to do gets
    /// zero).
    pub kernels: Option<Vec<KernelTime>>,
}

/// Why `--target cuda` cannot run here, in one line; `None` when a driver and a device
/// are present (NVRTC is checked when a program is compiled).
pub fn unavailable() -> Option<String> {
    if !toolkit::driver_present() {
        return Some(
            "no CUDA driver (libcuda.so) on this machine: --target cuda needs an NVIDIA GPU and its driver".into(),
        );
    }
    match CudaContext::device_count() {
        Ok(n) if n > 0 => None,
        Ok(_) => Some("the CUDA driver sees no device".into()),
        Err(e) => Some(format!("the CUDA driver sees no device: {e:?}")),
    }
}

/// Device 0 in a few words (its name), or why nothing can run on it: no driver, no
/// device, or no NVRTC to compile for it (the server's `/api/targets`).
pub fn device() -> Result<String, String> {
    if let Some(why) = unavailable() {
        return Err(why);
    }
    Toolkit::locate()?;
    let ctx = CudaContext::new(0).map_err(driver("cannot open CUDA device 0"))?;
    ctx.name().map_err(driver("the device has no name"))
}

/// PTX per (translation unit, architecture), compiled once per process.
fn cached_ptx(tk: &Toolkit, source: &str, arch: u32) -> Result<String, String> {
    static CACHE: OnceLock<Mutex<HashMap<(String, u32), String>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (source.to_string(), arch);
    if let Some(ptx) = cache.lock().map_err(|_| "the PTX cache is poisoned")?.get(&key) {
        return Ok(ptx.clone());
    }
    let ptx = nvrtc::compile_ptx(tk, source, arch)?;
    cache.lock().map_err(|_| "the PTX cache is poisoned")?.insert(key, ptx.clone());
    Ok(ptx)
}

/// A CUDA device with the program's module loaded and its arena allocated.
pub struct CudaExecutable {
    program: CudaProgram,
    /// The module with a host computation per host kernel.
    module: Module,
    host: Vec<Option<crate::ir::CompId>>,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    arena: CudaSlice<u8>,
    /// Per kernel on the device: its launches in order (a scatter's copy, then its
    /// updates; one otherwise), each a function and the kernel it launches.
    functions: Vec<Option<Vec<(CudaFunction, super::cuda_c::CudaKernel)>>>,
    pub device: DeviceInfo,
}

fn driver(what: &str) -> impl FnOnce(cudarc::driver::DriverError) -> String + '_ {
    move |e| format!("{what}: {e:?}")
}

impl CudaExecutable {
    /// Opens device 0, compiles the program for its architecture (through the PTX
    /// cache), loads the module and writes the constants; errors say what is missing (no
    /// driver, no device, no NVRTC, a kernel the compiler refuses).
    pub fn new(module: &Module, program: CudaProgram) -> Result<CudaExecutable, String> {
        if let Some(why) = unavailable() {
            return Err(why);
        }
        let ctx = CudaContext::new(0).map_err(driver("cannot open CUDA device 0"))?;
        let name = ctx.name().map_err(driver("the device has no name"))?;
        let (major, minor) = ctx.compute_capability().map_err(driver("the device's compute capability"))?;
        let arch = (major * 10 + minor) as u32;
        let tk = Toolkit::locate()?;
        let functions = if program.kernels.iter().any(Option::is_some) {
            let ptx = cached_ptx(&tk, &program.translation_unit(), arch)?;
            let m = ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(driver("the driver refused the PTX"))?;
            program
                .kernels
                .iter()
                .map(|k| match k {
                    Some(k) => k
                        .copy_first
                        .as_deref()
                        .into_iter()
                        .chain([k])
                        .filter(|f| f.outer > 0)
                        .map(|f| {
                            let function =
                                m.load_function(&f.entry).map_err(driver("a kernel is missing from the module"))?;
                            Ok((function, f.clone()))
                        })
                        .collect::<Result<Vec<_>, String>>()
                        .map(Some),
                    None => Ok(None),
                })
                .collect::<Result<Vec<_>, _>>()?
        } else {
            vec![None; program.kernels.len()]
        };
        let stream = ctx.default_stream();
        let bytes = program.plan.arena.arena_bytes.max(1) as usize;
        let arena = stream.alloc_zeros::<u8>(bytes).map_err(|e| {
            format!("cannot allocate the arena ({}) on {name}: {e:?}", crate::limits::format_bytes(bytes as u64))
        })?;
        let (wrapped, host) = program.plan.host_computations(module);
        let device = DeviceInfo { name, arch, toolkit: tk.from.clone() };
        let mut exe = CudaExecutable { program, module: wrapped, host, ctx, stream, arena, functions, device };
        let constants = exe.program.plan.constants.clone();
        for (b, lit) in &constants {
            exe.upload(*b, lit)?;
        }
        Ok(exe)
    }

    pub fn program(&self) -> &CudaProgram {
        &self.program
    }

    /// Runs the program on `args` (one value per entry parameter).
    pub fn run(&mut self, args: &[Value]) -> Result<(Value, RunTimes), String> {
        self.run_measured(args, false)
    }

    /// [`CudaExecutable::run`], each kernel timed (CUDA events; host kernels on the host).
    pub fn run_timed(&mut self, args: &[Value]) -> Result<(Value, RunTimes), String> {
        self.run_measured(args, true)
    }

    fn run_measured(&mut self, args: &[Value], timed: bool) -> Result<(Value, RunTimes), String> {
        let start = Instant::now();
        self.load(args)?;
        let kernels = self.execute_with(timed, None)?;
        let out = self.read_result()?;
        Ok((out, RunTimes { total: start.elapsed(), kernels }))
    }

    /// [`CudaExecutable::run`] with the custom calls the interpreter does not know (the
    /// conformance corpus's `check.*` ops) answered by `hook`.
    pub fn run_with_custom_calls(&mut self, args: &[Value], hook: &mut CustomCallHook) -> Result<Value, String> {
        self.load(args)?;
        self.execute_with(false, Some(hook))?;
        self.read_result()
    }

    /// Writes the parameters into the arena.
    pub fn load(&mut self, args: &[Value]) -> Result<(), String> {
        let params = self.program.plan.params.clone();
        if args.len() != params.len() {
            return Err(format!("{} arguments for {} parameters", args.len(), params.len()));
        }
        params.iter().zip(args).try_for_each(|(p, v)| self.upload_value(p, v))
    }

    /// Runs every kernel on what the arena holds (after [`CudaExecutable::load`]) and
    /// waits until the device is done; `timed`: each kernel's time.
    pub fn execute(&mut self, timed: bool) -> Result<Option<Vec<KernelTime>>, String> {
        self.execute_with(timed, None)
    }

    /// [`CudaExecutable::execute`], with `hook` answering the custom calls the
    /// interpreter does not know.
    pub fn execute_with(
        &mut self,
        timed: bool,
        mut hook: Option<&mut CustomCallHook<'_>>,
    ) -> Result<Option<Vec<KernelTime>>, String> {
        let n = self.program.plan.kernels.len();
        let mut times = vec![Duration::ZERO; n];
        // (kernel, start, end) per timed launch, read when the stream is done.
        let mut events: Vec<(usize, CudaEvent, CudaEvent)> = Vec::new();
        let new_event = |ctx: &Arc<CudaContext>| {
            ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver("cannot make a CUDA event"))
        };
        // Whether the host mirror misses the device's stores (it starts empty).
        let mut stale = true;
        let mut mirror: Vec<u8> = Vec::new();
        for (i, time) in times.iter_mut().enumerate() {
            if let Some(launches) = &self.functions[i] {
                if launches.is_empty() {
                    continue;
                }
                let (ptr, _sync) = self.arena.device_ptr(&self.stream);
                let span = if timed {
                    let (a, b) = (new_event(&self.ctx)?, new_event(&self.ctx)?);
                    a.record(&self.stream).map_err(driver("cannot record an event"))?;
                    Some((a, b))
                } else {
                    None
                };
                for (f, k) in launches {
                    let cfg =
                        LaunchConfig { grid_dim: (k.blocks(), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
                    let mut launch = self.stream.launch_builder(f);
                    launch.arg(&ptr);
                    // SAFETY: the kernel takes one argument, the arena's device address; it
                    // reads and writes only inside the arena (the plan's offsets, every load
                    // in bounds as the plan verifier proves, a scatter's stores under their
                    // bounds test).
                    unsafe { launch.launch(cfg) }.map_err(|e| {
                        format!("kernel {i} (%{}) failed to launch: {e:?}", self.program.plan.kernels[i].name)
                    })?;
                }
                if let Some((a, b)) = span {
                    b.record(&self.stream).map_err(driver("cannot record an event"))?;
                    events.push((i, a, b));
                }
                stale = true;
                continue;
            }
            // The device kernels before this one are theirs, not its time.
            self.stream.synchronize().map_err(driver("the device failed"))?;
            let t = Instant::now();
            if stale {
                mirror = self.read(&[(0, self.arena.len())])?.pop().unwrap_or_default();
                stale = false;
            }
            let result = self
                .program
                .plan
                .interpret_kernel(i, (&self.module, self.host[i]), &mut mirror[..], hook.as_deref_mut())?
                .leaves();
            for b in result {
                let (at, len) = self.program.plan.span(b);
                if len > 0 {
                    self.stream
                        .memcpy_htod(&mirror[at..at + len], &mut self.arena.slice_mut(at..at + len))
                        .map_err(driver("cannot write the arena"))?;
                }
            }
            if timed {
                self.stream.synchronize().map_err(driver("the device failed"))?;
            }
            *time = t.elapsed();
        }
        self.stream.synchronize().map_err(driver("a kernel failed"))?;
        for (i, a, b) in &events {
            let ms = a.elapsed_ms(b).map_err(driver("cannot read an event"))?;
            times[*i] = Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3);
        }
        Ok(timed.then(|| {
            self.program
                .plan
                .kernels
                .iter()
                .zip(times)
                .enumerate()
                .map(|(i, (k, time))| KernelTime { name: k.name.clone(), on_host: self.functions[i].is_none(), time })
                .collect()
        }))
    }

    /// The result of the last [`CudaExecutable::execute`], read from the device.
    pub fn read_result(&self) -> Result<Value, String> {
        let plan = &self.program.plan;
        let leaves = plan.result.leaves();
        let spans: Vec<(usize, usize)> = leaves.iter().map(|&b| plan.span(b)).collect();
        let literals = leaves
            .iter()
            .zip(self.read(&spans)?)
            .map(|(&b, bytes)| {
                Literal::from_le_bytes(plan.buffers[b].shape.clone(), &bytes)
                    .ok_or_else(|| format!("{b} has the wrong size"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Leaves are depth-first, as `assemble` takes them.
        fn assemble(at: &ValueBufs, leaves: &mut std::vec::IntoIter<Literal>) -> Value {
            match at {
                ValueBufs::Array(_) => Value::Array(leaves.next().expect("one literal per leaf")),
                ValueBufs::Tuple(ps) => Value::Tuple(ps.iter().map(|p| assemble(p, leaves)).collect()),
                ValueBufs::Token => Value::Token,
            }
        }
        Ok(assemble(&plan.result, &mut literals.into_iter()))
    }

    /// Writes buffer `b`'s bytes, `lit`, into the arena.
    fn upload(&mut self, b: BufferId, lit: &Literal) -> Result<(), String> {
        let (at, n) = self.program.plan.span(b);
        let bytes = lit.to_le_bytes();
        if bytes.len() != n {
            return Err(format!("{b} holds {n} bytes, the value {}", bytes.len()));
        }
        if n > 0 {
            self.stream
                .memcpy_htod(&bytes[..], &mut self.arena.slice_mut(at..at + n))
                .map_err(driver("cannot write the arena"))?;
        }
        Ok(())
    }

    fn upload_value(&mut self, at: &ValueBufs, v: &Value) -> Result<(), String> {
        match (at, v) {
            (ValueBufs::Array(b), Value::Array(l)) => self.upload(*b, l),
            (ValueBufs::Tuple(ps), Value::Tuple(vs)) if ps.len() == vs.len() => {
                ps.iter().zip(vs).try_for_each(|(p, v)| self.upload_value(p, v))
            }
            (ValueBufs::Token, _) => Ok(()),
            _ => Err("a value of another structure than its buffers".into()),
        }
    }

    /// The arena's bytes at each (offset, length), after everything queued so far.
    fn read(&self, spans: &[(usize, usize)]) -> Result<Vec<Vec<u8>>, String> {
        let mut out = Vec::with_capacity(spans.len());
        for &(at, n) in spans {
            let mut bytes = vec![0u8; n];
            if n > 0 {
                self.stream
                    .memcpy_dtoh(&self.arena.slice(at..at + n), &mut bytes[..])
                    .map_err(driver("cannot read the arena"))?;
            }
            out.push(bytes);
        }
        self.stream.synchronize().map_err(driver("the device failed"))?;
        Ok(out)
    }
}
