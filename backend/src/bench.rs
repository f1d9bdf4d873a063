//! `hloscope bench`: how long a module takes to compile and to run, kernel by kernel.
//!
//! Compiles once (parse + verify, then for the cpu target the pass pipeline and code
//! generation: `compile_s`), runs `--warmup` untimed runs, then `--iters` timed runs
//! (by default as many as fit in about 1.5 s, between 1 and [`MAX_ITERS`]). Each cpu
//! kernel is timed on every run through `CpuExecutable::run_with`; a kernel's time is
//! its median over the runs, and the kernels of one instruction (a dot and its epilogue)
//! are reported as one row, so the rows are the cost model's kernels (`explain`) with
//! their bytes and FLOPs. The interpreter has no kernels: only its total is timed.
//!
//! The kernels of while loops (condition and body) and of conditionals (the branch
//! taken) get rows of their own after their loop's or conditional's row, named by where
//! they run (`while.3/body/fusion.7`, `while.3/cond/compare.2`, `conditional.4/branch1/
//! add.9`), through `CpuExecutable::run_bytes_scoped`: their time is summed over the
//! calls of one run (then the median over runs), `calls` says how many (the trip count
//! for a body, one more for a condition), and their bytes and FLOPs are per run too
//! (the cost model's, times the calls). The loop's own row still covers everything it
//! runs, so the share (`%`) is over the top-level rows only.
//!
//! A row chain (kernels the cpu runs interleaved, chunk by chunk of rows: softmax's
//! three kernels) is timed as one execution; at top level its time is shared among its
//! members in proportion to the bytes each moves (so the rows still add up to the run),
//! inside control flow it all goes to the chain's first kernel. `--no-row-chains` runs
//! the members one by one instead. A dot whose epilogue runs inside its tasks, block of
//! rows by block of rows, is timed the same way, as a chain of two;
//! `--no-tile-epilogues` runs the epilogue after the whole dot instead.
//!
//! On webgpu (`--target webgpu`) each timed run is two executions of the kernels on the
//! loaded inputs: a plain one (one submission between host kernels), whose time is the
//! run's, and a timed one, whose per-kernel times are the rows': GPU timestamps when the
//! adapter has them, else each kernel submitted alone and waited for (the report says
//! which); host kernels (the interpreter) on the host's clock. Compile is parse to
//! pipelines (the driver compiles the shaders then). The adapter, its backend and driver
//! head the report.
//!
//! `--fusion KNOBS` (cpu and webgpu) takes the fusion knobs of `compile` and `explain`
//! (`off`, `no-multi-output`, ...), for fused-against-unfused comparisons.
//!
//! `--json` prints one line: `{"target", "fusion", "compile_s", "compile_peak_rss_bytes"
//! (the process's peak resident memory once compiled, inputs included), "run_median_s",
//! "run_min_s", "iters", "arena_bytes", "buffer_bytes", "kernels": [{"name", "time_s",
//! "bytes", "flops", "calls", "code"}]}` (`code`: how the kernels run, e.g. `simd 4x4 +
//! native exp`, `scalar`, `gemm`, `interpreter`, `wgsl`, `interpreter (host)`); webgpu
//! adds `"timing"` (the method's label), `"adapter"`, `"backend"`, `"driver"`, and
//! `"on_host"` per kernel; wasm adds `"threads"`. Otherwise a table. `--out-dir` writes the last run's results
//! as .npy (what `cargo xtask bench` compares with XLA's).

use crate::run::{self, RunError, Target};
use clap::Args;
use hloscope_core::cost;
use hloscope_core::interp::Interpreter;
use hloscope_core::ir::{CompId, InstId, Literal, Module, Op, Value};
use hloscope_core::kernel::KernelPlan;
use hloscope_core::npy::params as inputs;
use hloscope_core::targets::cpu::{self, CpuExecutable};
use hloscope_core::targets::cstyle::Mapping;
use hloscope_core::targets::cuda::{self, runtime::CudaExecutable};
use hloscope_core::targets::wasm::{self, runtime::WasmExecutable};
use hloscope_core::targets::webgpu::runtime::WebGpuExecutable;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Most timed runs chosen by default.
const MAX_ITERS: usize = 1000;
/// What the default number of timed runs aims at, in seconds.
const TARGET_TOTAL_S: f64 = 1.5;

#[derive(Args, Debug)]
#[command(after_help = "\
JSON (--json): one line {\"target\", \"fusion\", \"compile_s\", \"compile_peak_rss_bytes\", \"run_median_s\", \"run_min_s\", \"iters\", \
\"arena_bytes\", \"buffer_bytes\", \"kernels\": [{\"name\", \"time_s\", \"bytes\", \"flops\", \"calls\", \"code\"}]}; \
a kernel's time is its median over the timed runs (summed over its calls in a run: kernels \
inside while bodies and branches are rows named like while.3/body/fusion.7); bytes and \
FLOPs come from the cost model. --target webgpu adds \"timing\" (how kernels were timed: \
\"gpu timestamps\" or \"submit and wait per kernel\"; host kernels on the host's clock), \
\"adapter\", \"backend\", \"driver\" and per kernel \"on_host\"; its run times are plain runs \
of the kernels on the loaded inputs, its kernel times those of a timed run after each. \
--target wasm adds \"threads\".

Exit status: 0 on success, 2 on any error (bad text, bad inputs, a failed run).")]
pub struct BenchArgs {
    /// The module: StableHLO (MLIR text) or XLA HLO text; `-` reads standard input.
    #[arg(value_name = "MODULE")]
    pub module: String,

    /// Where to run the module.
    #[arg(long, value_enum, default_value_t = Target::Cpu)]
    pub target: Target,

    /// Fusion knobs, a comma list, as for `compile` and `explain`: off, no-multi-output,
    /// no-epilogue, no-duplication, max-size=N, never=PRODUCER:CONSUMER,
    /// force=PRODUCER:CONSUMER (cpu and webgpu).
    #[arg(long, value_name = "KNOBS", default_value = "")]
    pub fusion: String,

    /// An .npy file for the next entry parameter (repeat, in parameter order). Without
    /// any, inputs are random.
    #[arg(long = "input", value_name = "FILE.npy", conflicts_with = "random_inputs")]
    pub inputs: Vec<PathBuf>,

    /// Random inputs (the default when no --input is given), as `run --random-inputs`.
    #[arg(long)]
    pub random_inputs: bool,

    /// Seed for random inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Timed runs (default: as many as take about 1.5 s, at most 1000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub iters: Option<u64>,

    /// Untimed runs first (caches, page faults, lazy allocation).
    #[arg(long, default_value_t = 2)]
    pub warmup: u64,

    /// Print one JSON line instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Write the last run's results as out0.npy, out1.npy, ... into this folder.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,

    /// Run row chains (consecutive row-wise kernels) kernel by kernel instead of
    /// interleaved chunk by chunk of rows.
    #[arg(long)]
    pub no_row_chains: bool,

    /// Run each dot fusion's epilogue after the whole dot instead of inside the dot's
    /// tasks, on each block of rows while it is in cache.
    #[arg(long)]
    pub no_tile_epilogues: bool,

    /// Working set of one chunk of a row chain, in bytes (default: half of a core's L2
    /// cache, 256 KiB where the system does not say).
    #[arg(long, value_name = "BYTES")]
    pub row_chain_bytes: Option<usize>,

    /// Keep exp, tanh, log, ... inline in 4-lane Cranelift vectors instead of strip-mining
    /// their loops into calls of the native block functions (same results, for comparing).
    #[arg(long)]
    pub no_block_math: bool,

    /// The engine that runs `--target wasm`: wasmtime (in this process) or V8, the
    /// browser's engine, in a Node.js child process (`node` on the PATH; programs whose
    /// kernels are all WebAssembly).
    #[arg(long, value_enum, default_value_t = Engine::Wasmtime)]
    pub engine: Engine,

    /// Threads the WebAssembly kernels run on (--target wasm, either engine): an
    /// instance per thread on one shared memory. Default: every core, as the CPU target uses.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(wasm::MAX_THREADS)))]
    pub threads: Option<u32>,
}

/// What runs `--target wasm`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    Wasmtime,
    V8,
}

/// One row of the report: an instruction's kernels, timed together.
#[derive(Debug)]
pub struct Row {
    pub name: String,
    /// Median over the timed runs.
    pub time_s: f64,
    pub bytes: u64,
    pub flops: u64,
    /// Times it ran in one run (1 at top level).
    pub calls: u64,
    /// Whether it runs inside a while loop or a conditional.
    pub nested: bool,
    /// How its kernels' code runs (`simd 4x4 + native exp`, `gemm`, `wgsl`, ...; see
    /// `KernelInfo::code`), distinct values joined by `, `.
    pub code: String,
    /// Its kernels all ran on the host while the others ran on a device (webgpu).
    pub on_host: bool,
}

/// One kernel inside control flow, as one run saw it.
#[derive(Clone, Debug, PartialEq)]
struct NestedKernel {
    scope: String,
    name: String,
    comp: CompId,
    source: InstId,
    /// Time summed over its calls.
    time_s: f64,
    calls: u64,
    code: String,
}

/// What one run times: per top-level kernel, and per kernel inside control flow (keyed
/// by scope and index, in the order they first ran).
#[derive(Default)]
struct RunTimes {
    top: Vec<f64>,
    nested: Vec<NestedKernel>,
    nested_at: HashMap<(String, usize), usize>,
    /// The run's own time, where it is not the whole call's (webgpu's plain execution).
    total: Option<f64>,
}

impl RunTimes {
    fn clear(&mut self) {
        self.top.iter_mut().for_each(|t| *t = 0.0);
        self.nested.clear();
        self.nested_at.clear();
        self.total = None;
    }
}

struct Report {
    target: Target,
    fusion: String,
    /// On wasm: the threads its kernels ran on.
    threads: Option<u32>,
    /// On webgpu and cuda: the device and how its kernels were timed.
    device: Option<Device>,
    compile_s: f64,
    /// The process's peak resident memory once the module is compiled (inputs loaded
    /// included), where the system tells it.
    compile_peak_rss_bytes: Option<u64>,
    run_median_s: f64,
    run_min_s: f64,
    iters: usize,
    arena_bytes: u64,
    buffer_bytes: u64,
    rows: Vec<Row>,
}

/// The device a bench ran on (a WebGPU adapter, a CUDA device).
pub struct Device {
    pub adapter: String,
    pub backend: String,
    pub driver: String,
    /// How kernels were timed (`TimingMethod::label`).
    pub timing: &'static str,
}

/// What runs: the interpreter on the module, or a compiled executable with its input
/// and output bytes (prepared once, so that a timed run moves only what its kernels move,
/// as XLA's timed calls do; on webgpu the inputs stay in the device's arena).
pub enum Runner {
    Interp(Module),
    Cpu {
        exe: Rc<CpuExecutable>,
        inputs: Vec<AlignedBytes>,
        outputs: Vec<AlignedBytes>,
    },
    /// The executable and the module it was planned from (for the cost model).
    WebGpu {
        exe: Box<WebGpuExecutable>,
        module: Module,
    },
    /// The executable and the module it was planned from (for the cost model).
    Wasm {
        exe: Box<WasmExecutable>,
        module: Module,
    },
    /// The program in V8 (Node.js) and the module it was planned from.
    V8 {
        engine: Box<crate::v8::V8Engine>,
        module: Module,
    },
    /// The executable and the module it was planned from (for the cost model).
    Cuda {
        exe: Box<CudaExecutable>,
        module: Module,
    },
}

/// Bytes at an 8-byte aligned address (the executable reads them in place).
pub struct AlignedBytes {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBytes {
    fn new(bytes: &[u8]) -> AlignedBytes {
        let mut b = AlignedBytes { words: vec![0; bytes.len().div_ceil(8)], len: bytes.len() };
        b.bytes_mut().copy_from_slice(bytes);
        b
    }
    fn bytes(&self) -> &[u8] {
        // SAFETY: `words` holds at least `len` bytes.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.len) }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, self.len) }
    }
}

impl Runner {
    /// A compiled executable, its input and output bytes made by [`Runner::prepare`].
    pub fn cpu(exe: Rc<CpuExecutable>) -> Runner {
        Runner::Cpu { exe, inputs: Vec::new(), outputs: Vec::new() }
    }

    /// Lays out the input bytes and the output buffers once, before any timed run.
    fn prepare(&mut self, arguments: &[Value]) -> Result<(), String> {
        if let Runner::WebGpu { exe, .. } = self {
            return exe.load(arguments);
        }
        if let Runner::Cuda { exe, .. } = self {
            return exe.load(arguments);
        }
        if let Runner::Wasm { exe, .. } = self {
            return exe.load(arguments);
        }
        if let Runner::V8 { engine, .. } = self {
            return engine.load(arguments);
        }
        if let Runner::Cpu { exe, inputs, outputs } = self {
            *inputs = arguments
                .iter()
                .cloned()
                .flat_map(Value::flatten)
                .map(|l| AlignedBytes::new(&l.to_le_bytes()))
                .collect();
            let plan = exe.plan();
            *outputs = plan
                .result
                .leaves()
                .iter()
                .map(|&b| AlignedBytes::new(&vec![0; plan.buffers[b].shape.byte_size()]))
                .collect();
        }
        Ok(())
    }

    /// One run; `times` gets each kernel's time (cpu and webgpu). The interpreter returns
    /// its result; the cpu leaves it in its output bytes, webgpu in its arena (see
    /// `results`).
    fn run(&mut self, args: &[Value], times: &mut RunTimes) -> Result<Option<Value>, String> {
        match self {
            Runner::WebGpu { exe, .. } => {
                times.clear();
                let t = Instant::now();
                exe.execute(None)?;
                times.total = Some(t.elapsed().as_secs_f64());
                let timed = exe.execute(Some(exe.timing_method()))?.ok_or("a timed run gave no kernel times")?;
                for (slot, k) in times.top.iter_mut().zip(&timed.kernels) {
                    *slot = k.time.as_secs_f64();
                }
                Ok(None)
            }
            // A plain execution for the run's time, then a timed one (the host's clock
            // around each call) for the kernels'.
            Runner::Wasm { exe, .. } => {
                times.clear();
                let t = Instant::now();
                exe.execute(false)?;
                times.total = Some(t.elapsed().as_secs_f64());
                let timed = exe.execute(true)?.ok_or("a timed run gave no kernel times")?;
                for (slot, k) in times.top.iter_mut().zip(&timed) {
                    *slot = k.time.as_secs_f64();
                }
                Ok(None)
            }
            Runner::V8 { engine, .. } => {
                times.clear();
                let (total, kernels) = engine.run()?;
                times.total = Some(total);
                for (slot, t) in times.top.iter_mut().zip(kernels) {
                    *slot = t;
                }
                Ok(None)
            }
            // A plain execution for the run's time, then a timed one (CUDA events
            // around each launch) for the kernels'.
            Runner::Cuda { exe, .. } => {
                times.clear();
                let t = Instant::now();
                exe.execute(false)?;
                times.total = Some(t.elapsed().as_secs_f64());
                let timed = exe.execute(true)?.ok_or("a timed run gave no kernel times")?;
                for (slot, k) in times.top.iter_mut().zip(&timed) {
                    *slot = k.time.as_secs_f64();
                }
                Ok(None)
            }
            Runner::Interp(m) => Interpreter::new(m)
                .run(args)
                .map(Some)
                .map_err(|e| format!("running %{} failed: {}", e.inst, e.message)),
            Runner::Cpu { exe, inputs, outputs, .. } => {
                let ins: Vec<&[u8]> = inputs.iter().map(AlignedBytes::bytes).collect();
                let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(AlignedBytes::bytes_mut).collect();
                times.clear();
                let cell = RefCell::new(times);
                let plan = exe.plan();
                // A kernel's bytes moved: how a row chain's time is shared among its members.
                let moved = |j: usize| -> f64 {
                    let k = &plan.kernels[j];
                    k.inputs.iter().chain(&k.outputs).map(|&b| plan.buffers[b].shape.byte_size() as f64).sum()
                };
                exe.run_bytes_scoped(&ins, &mut outs, &|k, exec| {
                    let t = Instant::now();
                    let r = exec();
                    let dt = t.elapsed().as_secs_f64();
                    // Borrowed only now: `exec` may have re-entered this closure.
                    let mut times = cell.borrow_mut();
                    if k.scope.is_empty() && k.chained.len() > 1 {
                        let total: f64 = k.chained.clone().map(moved).sum();
                        for j in k.chained.clone() {
                            times.top[j] =
                                if total > 0.0 { dt * moved(j) / total } else { dt / k.chained.len() as f64 };
                        }
                    } else if k.scope.is_empty() {
                        times.top[k.index] = dt;
                    } else {
                        let key = (k.scope.to_string(), k.index);
                        let at = match times.nested_at.get(&key) {
                            Some(&at) => at,
                            None => {
                                let at = times.nested.len();
                                times.nested.push(NestedKernel {
                                    scope: key.0.clone(),
                                    name: k.name.to_string(),
                                    comp: k.comp,
                                    source: k.source,
                                    time_s: 0.0,
                                    calls: 0,
                                    code: k.code.to_string(),
                                });
                                times.nested_at.insert(key, at);
                                at
                            }
                        };
                        times.nested[at].time_s += dt;
                        times.nested[at].calls += 1;
                    }
                    r
                })?;
                Ok(None)
            }
        }
    }

    /// The last run's results, flattened.
    fn results(&mut self, last: Option<Value>) -> Result<Vec<Literal>, String> {
        match self {
            Runner::Interp(_) => Ok(last.map(Value::flatten).unwrap_or_default()),
            Runner::WebGpu { exe, .. } => Ok(exe.read_result()?.flatten()),
            Runner::Cuda { exe, .. } => Ok(exe.read_result()?.flatten()),
            Runner::Wasm { exe, .. } => Ok(exe.read_result()?.flatten()),
            Runner::V8 { engine, .. } => engine.result(),
            Runner::Cpu { exe, outputs, .. } => {
                let plan = exe.plan();
                plan.result
                    .leaves()
                    .iter()
                    .zip(outputs)
                    .map(|(&b, bytes)| {
                        Literal::from_le_bytes(plan.buffers[b].shape.clone(), bytes.bytes())
                            .ok_or_else(|| format!("result buffer {b} has the wrong size"))
                    })
                    .collect()
            }
        }
    }

    fn kernel_count(&self) -> usize {
        match self {
            Runner::Interp(_) => 0,
            Runner::Cpu { exe, .. } => exe.plan().kernels.len(),
            Runner::WebGpu { exe, .. } => exe.program().plan.kernels.len(),
            Runner::Cuda { exe, .. } => exe.program().plan.kernels.len(),
            Runner::Wasm { exe, .. } => exe.program().plan.kernels.len(),
            Runner::V8 { engine, .. } => engine.program().plan.kernels.len(),
        }
    }
}

pub fn bench(args: &BenchArgs) -> Result<String, RunError> {
    let (source_name, text) = run::read_module_text(&args.module)?;
    let mut input_files = Vec::with_capacity(args.inputs.len());
    for path in &args.inputs {
        let bytes = std::fs::read(path).map_err(|e| RunError(format!("cannot read input {}: {e}", path.display())))?;
        input_files.push((path.display().to_string(), bytes));
    }

    let threads = crate::run::wasm_threads(args.threads, args.target)?;
    if args.target == Target::Wasm && args.engine == Engine::Wasmtime {
        // wasmtime's engine and the GEMM library get ready while the front end runs (a
        // fresh process's compile, as `run`'s).
        wasm::runtime::warm_up(threads);
    }
    let started = Instant::now();
    let module = hloscope_core::parse::parse_module(&text)
        .map_err(|e| RunError(format!("{source_name}:{}:{}: {}", e.line, e.col, e.message)))?;
    hloscope_core::verify::verify(&module).map_err(|e| {
        RunError(format!("{source_name}:{}: invalid module: {}", e.loc, run::strip_loc(&e.to_string())))
    })?;
    // Converting the inputs is not compiling: it stays out of the clock.
    let parse_s = started.elapsed();
    let arguments = if input_files.is_empty() {
        hloscope_core::interp::random_inputs(&module, args.seed)
    } else {
        inputs::from_npy(&module, &input_files).map_err(RunError)?
    };
    let fusion = crate::compile::fusion_config(&args.fusion)?;
    if args.target == Target::Interp && !args.fusion.trim().is_empty() {
        return Err(RunError("--fusion is for the compiled targets (--target cpu or webgpu)".into()));
    }
    if args.engine != Engine::Wasmtime && args.target != Target::Wasm {
        return Err(RunError("--engine chooses the engine of --target wasm".into()));
    }
    let started = Instant::now();
    let mut device = None;
    let mut not_compiling = Duration::ZERO;
    let runner = match args.target {
        Target::Interp => Runner::Interp(module),
        Target::Cpu => {
            let optimized = hloscope_core::targets::optimize_owned(module, &fusion)
                .map_err(|e| RunError(format!("{source_name}: optimizing for the cpu failed: {e}")))?;
            // A bench only runs the code: no CLIF or machine-code listings to write.
            let options =
                cpu::CompileOptions { block_math: !args.no_block_math, listings: false, ..Default::default() };
            let exe = cpu::compile_owned(optimized, options)
                .map_err(|e| RunError(format!("{source_name}: compiling for the cpu failed: {e}")))?;
            exe.set_row_chains(
                (!args.no_row_chains).then(|| args.row_chain_bytes.unwrap_or_else(cpu::default_chain_bytes)),
            );
            exe.set_tile_epilogues(!args.no_tile_epilogues);
            Runner::cpu(std::rc::Rc::new(exe))
        }
        Target::Webgpu => {
            let failed = |e: String| RunError(format!("{source_name}: webgpu: {e}"));
            let optimized = hloscope_core::targets::optimize_owned(module, &fusion).map_err(failed)?;
            // The shaders are made for the adapter (workgroup staging on a GPU).
            let exe = WebGpuExecutable::compile_and_new(&optimized).map_err(failed)?;
            let a = &exe.adapter;
            device = Some(Device {
                adapter: a.name.clone(),
                backend: a.backend.clone(),
                driver: a.driver.clone(),
                timing: exe.timing_method().label(),
            });
            Runner::WebGpu { exe: Box::new(exe), module: optimized }
        }
        Target::Wasm => {
            let failed = |e: String| RunError(format!("{source_name}: wasm: {e}"));
            let optimized = hloscope_core::targets::optimize_owned(module, &fusion).map_err(failed)?;
            let program = wasm::compile_threaded(&optimized, threads).map_err(failed)?;
            match args.engine {
                Engine::Wasmtime => {
                    let exe = WasmExecutable::new(&optimized, program).map_err(failed)?;
                    Runner::Wasm { exe: Box::new(exe), module: optimized }
                }
                Engine::V8 => {
                    // The compile is ours plus V8's compile and instantiate, not Node's start.
                    let spawned = Instant::now();
                    let engine = crate::v8::V8Engine::start(program).map_err(failed)?;
                    not_compiling = spawned.elapsed().saturating_sub(Duration::from_secs_f64(engine.instantiate_s));
                    device = Some(Device {
                        adapter: format!("V8 (Node.js {})", engine.node),
                        backend: "node".into(),
                        driver: engine.node.clone(),
                        timing: "performance.now around each call",
                    });
                    Runner::V8 { engine: Box::new(engine), module: optimized }
                }
            }
        }
        Target::Cuda => {
            let failed = |e: String| RunError(format!("{source_name}: cuda: {e}"));
            if let Some(why) = hloscope_core::targets::cuda::runtime::unavailable() {
                return Err(failed(why));
            }
            let optimized = hloscope_core::targets::optimize_owned(module, &fusion).map_err(failed)?;
            let program = cuda::compile(&optimized).map_err(failed)?;
            let exe = CudaExecutable::new(&optimized, program).map_err(failed)?;
            let d = &exe.device;
            device = Some(Device {
                adapter: d.name.clone(),
                backend: format!("cuda sm_{}", d.arch),
                driver: format!("NVRTC from {}", d.toolkit),
                timing: "cuda events",
            });
            Runner::Cuda { exe: Box::new(exe), module: optimized }
        }
    };
    let compile_s = (parse_s + started.elapsed().saturating_sub(not_compiling)).as_secs_f64();
    let compile_peak_rss_bytes = peak_rss_bytes();
    let fail = |e: String| RunError(format!("{source_name}: running on the {} failed: {e}", target_name(args.target)));
    let iters = args.iters.map(|n| n as usize);
    let m = measure(runner, &arguments, iters, args.warmup, true).map_err(fail)?;
    if let Some(dir) = &args.out_dir {
        run::write_outputs(dir, &m.outputs)?;
    }
    let report = Report {
        target: args.target,
        fusion: args.fusion.trim().to_string(),
        threads: (args.target == Target::Wasm).then_some(threads),
        device,
        compile_s,
        compile_peak_rss_bytes,
        run_median_s: m.run_median_s,
        run_min_s: m.run_min_s,
        iters: m.iters,
        arena_bytes: m.arena_bytes,
        buffer_bytes: m.buffer_bytes,
        rows: m.rows,
    };
    Ok(if args.json { json(&report) } else { table(&report) })
}

/// What [`measure`] timed and computed.
pub struct Measurement {
    pub iters: usize,
    pub run_median_s: f64,
    pub run_min_s: f64,
    /// One per instruction's kernels (empty for the interpreter).
    pub rows: Vec<Row>,
    /// The last run's results, flattened.
    pub outputs: Vec<Literal>,
    pub arena_bytes: u64,
    pub buffer_bytes: u64,
}

/// Runs `runner` on `arguments`: `warmup` untimed runs (at least one when `iters` is
/// None, to estimate how many runs fit in [`TARGET_TOTAL_S`]), then the timed runs, each
/// kernel timed on every run. `progress`: a counter on standard error (on a terminal).
pub fn measure(
    mut runner: Runner,
    arguments: &[Value],
    iters: Option<usize>,
    warmup: u64,
    progress: bool,
) -> Result<Measurement, String> {
    runner.prepare(arguments)?;
    let nk = runner.kernel_count();
    let mut scratch = RunTimes { top: vec![0.0; nk], ..RunTimes::default() };
    let mut estimate = f64::INFINITY;
    for _ in 0..warmup.max(u64::from(iters.is_none())) {
        let t = Instant::now();
        runner.run(arguments, &mut scratch)?;
        estimate = estimate.min(t.elapsed().as_secs_f64());
    }
    let iters = match iters {
        Some(n) => n.max(1),
        None => ((TARGET_TOTAL_S / estimate.max(1e-9)).round() as usize).clamp(1, MAX_ITERS),
    };
    let progress = Progress::new(iters, if progress { estimate * iters as f64 } else { 0.0 });
    let mut totals = Vec::with_capacity(iters);
    let mut per_kernel: Vec<Vec<f64>> = vec![Vec::with_capacity(iters); nk];
    let mut nested_runs: Vec<Vec<NestedKernel>> = Vec::with_capacity(iters);
    let mut last = None;
    for i in 0..iters {
        let t = Instant::now();
        let v = runner.run(arguments, &mut scratch)?;
        totals.push(scratch.total.unwrap_or_else(|| t.elapsed().as_secs_f64()));
        for (k, &s) in scratch.top.iter().enumerate() {
            per_kernel[k].push(s);
        }
        nested_runs.push(scratch.nested.clone());
        last = v;
        progress.tick(i + 1);
    }
    progress.done();
    let outputs = runner.results(last)?;
    let (rows, arena_bytes, buffer_bytes) = match &runner {
        Runner::Interp(_) => (Vec::new(), 0, 0),
        Runner::Cpu { exe, .. } => {
            let arena = exe.arena_assignment();
            let code = |k: usize| exe.code_summary(k).to_string();
            (
                rows(exe.module(), exe.plan(), &code, false, &per_kernel, &nested_runs),
                arena.arena_bytes,
                arena.buffer_bytes,
            )
        }
        Runner::WebGpu { exe, module } => {
            let program = exe.program();
            let code = |k: usize| match (&program.shaders[k], program.nested[k].is_empty()) {
                (Some(_), _) => "wgsl".to_string(),
                (None, false) => "control flow: its programs' wgsl, driven from the host".to_string(),
                (None, true) => "interpreter (host)".to_string(),
            };
            let arena = &program.plan.arena;
            (rows(module, &program.plan, &code, true, &per_kernel, &nested_runs), arena.arena_bytes, arena.buffer_bytes)
        }
        Runner::Wasm { exe, module } => wasm_rows(exe.program(), module, &per_kernel, &nested_runs),
        Runner::V8 { engine, module } => wasm_rows(engine.program(), module, &per_kernel, &nested_runs),
        Runner::Cuda { exe, module } => {
            let program = exe.program();
            let code = |k: usize| match &program.kernels[k] {
                Some(f) if f.mapping == Mapping::BlockReduction => "cuda block reduction".to_string(),
                Some(f) if f.mapping == Mapping::DotTiles => "cuda dot tiles".to_string(),
                Some(f) if f.mapping == Mapping::DotBlocks => "cuda dot blocks".to_string(),
                Some(f) if f.mapping == Mapping::TransposeTiles => "cuda transpose tiles".to_string(),
                Some(f) if f.mapping == Mapping::ColumnTiles => "cuda column tiles".to_string(),
                Some(f) if f.mapping == Mapping::AtomicUpdates => "cuda atomic scatter".to_string(),
                Some(f) if f.mapping == Mapping::Quads => "cuda quads".to_string(),
                Some(_) => "cuda".to_string(),
                None => "interpreter (host)".to_string(),
            };
            let arena = &program.plan.arena;
            (rows(module, &program.plan, &code, true, &per_kernel, &nested_runs), arena.arena_bytes, arena.buffer_bytes)
        }
    };
    Ok(Measurement {
        iters,
        run_median_s: median(&mut totals.clone()),
        run_min_s: totals.iter().copied().fold(f64::INFINITY, f64::min),
        rows,
        outputs,
        arena_bytes,
        buffer_bytes,
    })
}

fn target_name(t: Target) -> &'static str {
    match t {
        Target::Interp => "interp",
        Target::Cpu => "cpu",
        Target::Webgpu => "webgpu",
        Target::Cuda => "cuda",
        Target::Wasm => "wasm",
    }
}

/// The report's rows of a WebAssembly program (wasmtime's or V8's run), its arena bytes
/// and its buffers' bytes.
fn wasm_rows(
    program: &wasm::WasmProgram,
    module: &Module,
    per_kernel: &[Vec<f64>],
    nested_runs: &[Vec<NestedKernel>],
) -> (Vec<Row>, u64, u64) {
    let code = |k: usize| match &program.kernels[k] {
        Some(w) => format!("wasm {}", w.shape),
        None => "interpreter (host)".to_string(),
    };
    let arena = &program.plan.arena;
    (rows(module, &program.plan, &code, true, per_kernel, nested_runs), arena.arena_bytes, arena.buffer_bytes)
}

/// One row per instruction (in order of its first kernel): the median of the summed
/// time of its kernels, and the cost model's bytes and FLOPs for it; after a while
/// loop's or conditional's row, the rows of the instructions run inside it
/// ([`nested_rows`]). `code(k)` says how kernel `k` runs; with `device`, kernels the plan
/// made opaque ran on the host (`Row::on_host`).
fn rows(
    module: &Module,
    plan: &KernelPlan,
    code: &dyn Fn(usize) -> String,
    device: bool,
    per_kernel: &[Vec<f64>],
    nested_runs: &[Vec<NestedKernel>],
) -> Vec<Row> {
    let comp = module.comp(plan.comp);
    let profile = cost::profiles::GENERIC_CPU;
    let mut order: Vec<InstId> = Vec::new();
    let mut kernels_of: std::collections::HashMap<InstId, Vec<usize>> = Default::default();
    for (i, k) in plan.kernels.iter().enumerate() {
        let e = kernels_of.entry(k.source).or_default();
        if e.is_empty() {
            order.push(k.source);
        }
        e.push(i);
    }
    let runs = per_kernel.first().map_or(0, Vec::len);
    let top = order
        .into_iter()
        .map(|src| {
            let ks = &kernels_of[&src];
            let mut sums: Vec<f64> = (0..runs).map(|r| ks.iter().map(|&k| per_kernel[k][r]).sum()).collect();
            let inst = comp.inst(src);
            let (bytes, flops) = match &inst.op {
                // Control flow: what its computations' kernels move, once each.
                Op::While { .. } | Op::Case { .. } | Op::Call { .. } => inst
                    .op
                    .called_computations()
                    .into_iter()
                    .map(|c| cost::computation_cost(module, c, &profile))
                    .fold((0, 0), |(b, f), c| (b + c.bytes_moved, f + c.flops)),
                _ => cost::instruction_cost(module, comp, src, &profile).map_or((0, 0), |c| (c.bytes(), c.flops)),
            };
            let codes: Vec<String> = ks.iter().map(|&k| code(k)).collect();
            let code = join_distinct(codes.iter().map(String::as_str));
            let on_host = device
                && ks.iter().all(|&k| matches!(plan.kernels[k].body, hloscope_core::kernel::KernelBody::Opaque { .. }));
            Row {
                name: inst.name.clone(),
                time_s: median(&mut sums),
                bytes,
                flops,
                calls: 1,
                nested: false,
                code,
                on_host,
            }
        })
        .collect::<Vec<Row>>();
    let mut nested = nested_rows(module, nested_runs);
    let mut out = Vec::new();
    for row in top {
        let prefix = format!("{}/", row.name);
        out.push(row);
        let (inside, rest): (Vec<Row>, Vec<Row>) = nested.into_iter().partition(|r| r.name.starts_with(&prefix));
        out.extend(inside);
        nested = rest;
    }
    out.extend(nested);
    out
}

/// One row per (scope, instruction) run inside control flow, in the order they first
/// ran: per run, its kernels' times summed over their calls, then the median over the
/// runs (0 for a run that did not reach it); calls, bytes and FLOPs of the last run that
/// did.
fn nested_rows(module: &Module, runs: &[Vec<NestedKernel>]) -> Vec<Row> {
    let profile = cost::profiles::GENERIC_CPU;
    // (scope, comp, source) -> row index; per row, its time in each run.
    let mut at: HashMap<(String, CompId, InstId), usize> = HashMap::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut per_run: Vec<Vec<f64>> = Vec::new();
    let mut origin: Vec<(CompId, InstId)> = Vec::new();
    for (r, run) in runs.iter().enumerate() {
        let mut calls_now: HashMap<usize, u64> = HashMap::new();
        for k in run {
            let key = (k.scope.clone(), k.comp, k.source);
            let i = *at.entry(key).or_insert_with(|| {
                rows.push(Row {
                    name: format!("{}/{}", k.scope, k.name),
                    time_s: 0.0,
                    bytes: 0,
                    flops: 0,
                    calls: 0,
                    nested: true,
                    code: String::new(),
                    on_host: false,
                });
                per_run.push(vec![0.0; runs.len()]);
                origin.push((k.comp, k.source));
                rows.len() - 1
            });
            per_run[i][r] += k.time_s;
            if !rows[i].code.split(", ").any(|c| c == k.code) {
                rows[i].code = join_distinct([rows[i].code.as_str(), k.code.as_str()].into_iter());
            }
            // The kernels of one instruction (a dot and its epilogue) run together.
            let c = calls_now.entry(i).or_insert(0);
            *c = (*c).max(k.calls);
        }
        for (i, calls) in calls_now {
            let (comp, source) = origin[i];
            let (bytes, flops) = cost::instruction_cost(module, module.comp(comp), source, &profile)
                .map_or((0, 0), |c| (c.bytes(), c.flops));
            rows[i].calls = calls;
            rows[i].bytes = bytes * calls;
            rows[i].flops = flops * calls;
        }
    }
    for (row, times) in rows.iter_mut().zip(&mut per_run) {
        row.time_s = median(times);
    }
    rows
}

/// The distinct non-empty strings of `parts`, in order, joined by `, `.
fn join_distinct<'a>(parts: impl Iterator<Item = &'a str>) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for p in parts.flat_map(|p| p.split(", ")) {
        if !p.is_empty() && !seen.contains(&p) {
            seen.push(p);
        }
    }
    seen.join(", ")
}

fn median(xs: &mut [f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// A JSON string literal.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out += "\\\"",
            '\\' => out += "\\\\",
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out + "\""
}

/// A JSON number (never NaN or infinite: those become 0).
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:e}")
    } else {
        "0".into()
    }
}

fn json(r: &Report) -> String {
    let kernels: Vec<String> = r
        .rows
        .iter()
        .map(|k| {
            let on_host = if r.device.is_some() { format!(",\"on_host\":{}", k.on_host) } else { String::new() };
            format!(
                "{{\"name\":{},\"time_s\":{},\"bytes\":{},\"flops\":{},\"calls\":{},\"code\":{}{on_host}}}",
                quote(&k.name),
                num(k.time_s),
                k.bytes,
                k.flops,
                k.calls,
                quote(&k.code)
            )
        })
        .collect();
    let device = r.device.as_ref().map_or(String::new(), |d| {
        format!(
            "\"timing\":{},\"adapter\":{},\"backend\":{},\"driver\":{},",
            quote(d.timing),
            quote(&d.adapter),
            quote(&d.backend),
            quote(&d.driver)
        )
    });
    let threads = r.threads.map_or(String::new(), |t| format!("\"threads\":{t},"));
    format!(
        "{{\"target\":{},\"fusion\":{},{threads}{device}\"compile_s\":{},\"compile_peak_rss_bytes\":{},\"run_median_s\":{},\"run_min_s\":{},\"iters\":{},\"arena_bytes\":{},\"buffer_bytes\":{},\"kernels\":[{}]}}\n",
        quote(target_name(r.target)),
        quote(&r.fusion),
        num(r.compile_s),
        r.compile_peak_rss_bytes.map_or("null".to_string(), |b| b.to_string()),
        num(r.run_median_s),
        num(r.run_min_s),
        r.iters,
        r.arena_bytes,
        r.buffer_bytes,
        kernels.join(",")
    )
}

fn time_text(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.2} us", s * 1e6)
    }
}

fn table(r: &Report) -> String {
    let mut out = String::new();
    let fusion = if r.fusion.is_empty() { String::new() } else { format!(" (--fusion {})", r.fusion) };
    let threads = r.threads.map_or(String::new(), |t| format!(" on {t} thread{}", if t == 1 { "" } else { "s" }));
    let _ = writeln!(out, "target {}{threads}{fusion}: compile {}", target_name(r.target), time_text(r.compile_s));
    if let Some(d) = &r.device {
        let _ = writeln!(out, "adapter: {}; backend {}; driver {}", d.adapter, d.backend, d.driver);
        let _ = writeln!(out, "kernel times: {}; host kernels on the host's clock", d.timing);
    }
    let _ = writeln!(
        out,
        "run: median {}, min {} over {} runs",
        time_text(r.run_median_s),
        time_text(r.run_min_s),
        r.iters
    );
    if r.buffer_bytes > 0 {
        let _ = writeln!(
            out,
            "arena: {} bytes for {} bytes of buffers ({:.0}%)",
            r.arena_bytes,
            r.buffer_bytes,
            100.0 * r.arena_bytes as f64 / r.buffer_bytes as f64
        );
    }
    if r.rows.is_empty() {
        return out;
    }
    // Nested rows are already inside their loop's row.
    let total: f64 = r.rows.iter().filter(|k| !k.nested).map(|k| k.time_s).sum();
    let mut cells = vec![["kernel", "calls", "time", "%", "GB/s", "GFLOP/s", "code"].map(String::from).to_vec()];
    for k in &r.rows {
        let rate = |x: u64| if k.time_s > 0.0 { format!("{:.2}", x as f64 / k.time_s / 1e9) } else { "-".into() };
        cells.push(vec![
            k.name.clone(),
            k.calls.to_string(),
            time_text(k.time_s),
            format!("{:.1}", if total > 0.0 { 100.0 * k.time_s / total } else { 0.0 }),
            rate(k.bytes),
            rate(k.flops),
            k.code.clone(),
        ]);
    }
    let widths: Vec<usize> =
        (0..7).map(|c| cells.iter().map(|row| row[c].chars().count()).max().unwrap_or(0)).collect();
    out.push('\n');
    for row in &cells {
        let mut line = format!("{:<w$}", row[0], w = widths[0]);
        for c in 1..6 {
            let _ = write!(line, "  {:>w$}", row[c], w = widths[c]);
        }
        let _ = write!(line, "  {}", row[6]);
        out += line.trim_end();
        out.push('\n');
    }
    out
}

/// `run 12/40` on standard error, rewritten in place; only on a terminal and only for
/// runs expected to take more than a second.
struct Progress {
    total: usize,
    on: bool,
    last: std::cell::Cell<Instant>,
}

impl Progress {
    fn new(total: usize, expected_s: f64) -> Progress {
        let on = std::io::stderr().is_terminal() && expected_s > 1.0;
        Progress { total, on, last: std::cell::Cell::new(Instant::now()) }
    }
    fn tick(&self, done: usize) {
        if self.on && self.last.get().elapsed() > Duration::from_millis(100) {
            self.last.set(Instant::now());
            eprint!("\rrun {done}/{}", self.total);
        }
    }
    fn done(&self) {
        if self.on {
            eprint!("\r\x1b[K");
        }
    }
}

/// The process's peak resident set so far (Linux's `VmHWM`), in bytes.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}
