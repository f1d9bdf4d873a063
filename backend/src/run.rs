//! `hloscope run`: read a module, check it, run it on a target, report the results.
//!
//! Every failure becomes one [`RunError`] whose text is what the person sees; `main`
//! prints it and exits with status 2.

use crate::summary;
use clap::{Args, ValueEnum};
use hloscope_core::interp::Interpreter;
use hloscope_core::ir::{Module, Value};
use hloscope_core::npy::{self, params as inputs, NpyArray};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Where the module runs: the reference interpreter, or a compiled target.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// The reference interpreter (exact semantics, slow).
    #[default]
    Interp,
    /// Native code: simplify and fuse, then Cranelift JIT for loop and reduction kernels,
    /// gemm for dots, the interpreter for the rest.
    Cpu,
    /// WebGPU through wgpu (Vulkan, Metal or DX12; lavapipe where there is no GPU): a
    /// WGSL compute shader per loop and reduction kernel, the interpreter on the host for
    /// the rest. The adapter is named on standard error.
    Webgpu,
    /// CUDA on an NVIDIA GPU: CUDA C per loop and reduction kernel, compiled by NVRTC
    /// (found through $HLOSCOPE_CUDA_LIB, $HLOSCOPE_CUDA_VENV or the library path) for
    /// the device's architecture, the interpreter on the host for the rest. Needs the
    /// CUDA driver and a device; the device is named on standard error.
    Cuda,
    /// WebAssembly (SIMD128), as a browser runs it: one module per program, a function
    /// per loop and reduction kernel, run natively by wasmtime; the interpreter on the
    /// host for the rest.
    Wasm,
}

#[derive(Args, Debug)]
#[command(after_help = "\
Outputs: with --out-dir DIR every result (tuples flattened) is written as DIR/out0.npy, \
DIR/out1.npy, ... in the result's own dtype (pred as numpy bool, f16 as <f2); bf16 results are \
widened exactly to float32 (<f4), since NumPy has no bfloat16. Without --out-dir a summary of \
each result is printed.

Inputs: one --input per entry parameter, in order. A bf16 parameter takes a float32 (<f4) \
file, rounded to nearest even.

Compilation cache (--target cpu and wasm): compiled modules are kept in $HLOSCOPE_CACHE_DIR (default: \
the user's cache folder + hloscope), capped at $HLOSCOPE_CACHE_MAX_BYTES (default 512 MiB, \
oldest entries removed first); a second run of the same module and parameter types loads \
the machine code instead of compiling. --no-cache skips it; an unusable entry is rebuilt \
with a note.

Exit status: 0 on success, 2 on any error (bad text, bad inputs, a failed run).")]
pub struct RunArgs {
    /// The module: StableHLO (MLIR text) or XLA HLO text, detected from the contents;
    /// `-` reads standard input.
    #[arg(value_name = "MODULE")]
    pub module: String,

    /// An .npy file for the next entry parameter (repeat, in parameter order).
    #[arg(long = "input", value_name = "FILE.npy", conflicts_with = "random_inputs")]
    pub inputs: Vec<PathBuf>,

    /// Make deterministic inputs: floats uniform in [-1, 1), integers in [-8, 8)
    /// (unsigned [0, 16)), preds random.
    #[arg(long)]
    pub random_inputs: bool,

    /// Seed for --random-inputs.
    #[arg(long, default_value_t = 0, requires = "random_inputs")]
    pub seed: u64,

    /// Where to run the module.
    #[arg(long, value_enum, default_value_t = Target::Interp)]
    pub target: Target,

    /// Write the results as out0.npy, out1.npy, ... into this folder (created if needed).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,

    /// Compile afresh: neither read nor write the compilation cache (--target cpu and wasm).
    #[arg(long)]
    pub no_cache: bool,

    /// Threads the WebAssembly kernels run on (--target wasm): an instance per thread
    /// on one shared memory. Default: every core, as the CPU target uses.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(hloscope_core::targets::wasm::MAX_THREADS)))]
    pub threads: Option<u32>,

    /// Say on standard error whether the compilation cache hit and how long compiling
    /// took (from parsing to a ready executable); on webgpu, also time each kernel
    /// (GPU timestamps where the adapter has them, else submit and wait per kernel).
    #[arg(short, long)]
    pub verbose: bool,

    /// Answer the StableHLO conformance corpus's `check.expect_*` custom calls (testdata
    /// tolerances) and print how many passed; a failed check is an error. With
    /// `--target cuda` the module is compiled without constant folding, so its
    /// constants are computed on the device (the GPU check kit's conformance run).
    #[arg(long, hide = true)]
    pub conformance_checks: bool,
}

/// A message for the person running the command; never a bug report.
#[derive(Debug)]
pub struct RunError(pub String);

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The conformance corpus's checks, shared with compiler-core's conformance tests.
#[path = "../../compiler-core/tests/conformance/checks.rs"]
#[allow(dead_code)] // the tests use the rest of it
mod conformance_checks;

/// `run --conformance-checks`: runs a conformance program (no parameters) on the
/// interpreter or on cuda, answering its checks.
fn run_checked(args: &RunArgs, module: &Module, source_name: &str) -> Result<String, RunError> {
    let mut failures = Vec::new();
    let mut passed = 0;
    let mut hook = |inst: &hloscope_core::ir::Instruction, vals: &[Value]| {
        match conformance_checks::run_check(inst, vals, "testdata") {
            Ok(()) => passed += 1,
            Err(e) => failures.push(e),
        }
        Ok(Value::Tuple(vec![]))
    };
    match args.target {
        Target::Interp => {
            Interpreter::new(module)
                .with_custom_call_hook(&mut hook)
                .run(&[])
                .map_err(|e| RunError(format!("{source_name}: running %{} failed: {}", e.inst, e.message)))?;
        }
        Target::Cuda => {
            use hloscope_core::passes::pipeline::{parse_pipeline_spec, run_passes, PipelineConfig};
            use hloscope_core::targets::cuda;
            let failed = |e: String| RunError(format!("{source_name}: cuda: {e}"));
            let spec = format!("{},-constant-fold", hloscope_core::targets::PIPELINE);
            let passes = parse_pipeline_spec(&spec).map_err(|e| failed(e.to_string()))?;
            let mut optimized = module.clone();
            let config = PipelineConfig { passes, snapshots: false, ..Default::default() };
            run_passes(&mut optimized, &config).map_err(|e| failed(e.to_string()))?;
            let program = cuda::compile(&optimized).map_err(failed)?;
            let mut exe = cuda::runtime::CudaExecutable::new(&optimized, program).map_err(failed)?;
            exe.run_with_custom_calls(&[], &mut hook).map_err(failed)?;
        }
        _ => return Err(RunError("--conformance-checks runs on --target interp or cuda".into())),
    }
    match failures.first() {
        Some(first) => Err(RunError(format!("{source_name}: {} checks failed, the first: {first}", failures.len()))),
        None => Ok(format!("{passed} checks passed\n")),
    }
}

/// Runs the command; returns the text to print on standard output.
pub fn run(args: &RunArgs) -> Result<String, RunError> {
    let threads = wasm_threads(args.threads, args.target)?;
    if args.target == Target::Wasm {
        // wasmtime's engine and the GEMM library get ready while the front end runs.
        hloscope_core::targets::wasm::runtime::warm_up(threads);
    }
    // Read every file first, so that a missing one is reported before any parse error.
    let (source_name, text) = read_module_text(&args.module)?;
    let started = std::time::Instant::now();
    let mut input_files = Vec::with_capacity(args.inputs.len());
    for path in &args.inputs {
        let bytes = std::fs::read(path).map_err(|e| RunError(format!("cannot read input {}: {e}", path.display())))?;
        input_files.push((path.display().to_string(), bytes));
    }
    let parse = || -> Result<Module, RunError> {
        let module = hloscope_core::parse::parse_module(&text)
            .map_err(|e| RunError(format!("{source_name}:{}:{}: {}", e.line, e.col, e.message)))?;
        hloscope_core::verify::verify(&module)
            .map_err(|e| RunError(format!("{source_name}:{}: invalid module: {}", e.loc, strip_loc(&e.to_string()))))?;
        Ok(module)
    };

    // Compiling first keeps making the inputs out of the compile time `-v` reports. A
    // cache hit needs no parse of the source: the executable's module has the same
    // parameters.
    let mut wasm = None;
    let (exe, parsed) = match args.target {
        Target::Cpu => {
            let (exe, parsed) = compile_cpu(args, &text, &source_name, started, &parse)?;
            (Some(exe), parsed)
        }
        Target::Wasm if !args.conformance_checks => {
            wasm = Some(compile_wasm(args, &text, &source_name, started, &parse)?);
            (None, None)
        }
        Target::Cuda => {
            // Said before anything else: nothing can run here.
            if let Some(why) = hloscope_core::targets::cuda::runtime::unavailable() {
                return Err(RunError(format!("--target cuda: {why}")));
            }
            (None, Some(parse()?))
        }
        Target::Interp | Target::Webgpu | Target::Wasm => (None, Some(parse()?)),
    };
    if args.conformance_checks {
        let module = parsed.as_ref().ok_or_else(|| RunError("--conformance-checks needs the module parsed".into()))?;
        return run_checked(args, module, &source_name);
    }
    let module: &Module = match (&parsed, &exe, &wasm) {
        (Some(m), _, _) => m,
        (None, Some(exe), _) => exe.module(),
        (None, None, Some(entry)) => &entry.module,
        (None, None, None) => return Err(RunError("internal error: no module to run".into())),
    };
    let arguments = if args.random_inputs {
        hloscope_core::interp::random_inputs(module, args.seed)
    } else {
        inputs::from_npy(module, &input_files).map_err(RunError)?
    };
    let result = match exe {
        Some(exe) => {
            exe.run(&arguments).map_err(|e| RunError(format!("{source_name}: running on the cpu failed: {e}")))?
        }
        None if args.target == Target::Webgpu => run_webgpu(module, &arguments, &source_name, args.verbose)?,
        None if args.target == Target::Cuda => run_cuda(module, &arguments, &source_name, args.verbose)?,
        None if args.target == Target::Wasm => {
            let entry = wasm.as_ref().ok_or_else(|| RunError("internal error: no wasm executable".into()))?;
            run_wasm(&entry.exe, &arguments, &source_name, args.verbose)?
        }
        None => interpret(module, &arguments, &source_name)?,
    };
    let outputs = result.flatten();

    match &args.out_dir {
        Some(dir) => write_outputs(dir, &outputs),
        None if outputs.is_empty() => Ok("the module returned no arrays\n".into()),
        None => Ok(outputs.iter().enumerate().map(|(i, l)| summary::summarize(i, l) + "\n").collect()),
    }
}

/// Runs the module on the system's WebGPU adapter, naming it on standard error.
fn run_webgpu(module: &Module, args: &[Value], source_name: &str, verbose: bool) -> Result<Value, RunError> {
    use hloscope_core::targets::{optimize, webgpu};
    let failed = |e: String| RunError(format!("{source_name}: webgpu: {e}"));
    let started = std::time::Instant::now();
    let optimized = optimize(module).map_err(failed)?;
    // The shaders are made for the adapter (workgroup staging on a GPU).
    let exe = webgpu::runtime::WebGpuExecutable::compile_and_new(&optimized).map_err(failed)?;
    let (on_device, on_host) = exe.program().counts();
    let a = &exe.adapter;
    eprintln!(
        "webgpu: {} ({}, {}): {on_device} kernels on the device, {on_host} on the host",
        a.name, a.backend, a.driver
    );
    if verbose {
        eprintln!("webgpu: parse to pipelines in {:.2} ms", started.elapsed().as_secs_f64() * 1e3);
    }
    if !verbose {
        return Ok(exe.run(args).map_err(failed)?.0);
    }
    let (value, times) = exe.run_timed(args, exe.timing_method()).map_err(failed)?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let kernels = times.kernels.ok_or_else(|| failed("a timed run gave no kernel times".into()))?;
    eprintln!("webgpu: run in {:.2} ms, kernels timed by {}:", ms(times.total), kernels.method.label());
    for (i, k) in kernels.kernels.iter().enumerate() {
        let place = if k.on_host { "host" } else { "device" };
        eprintln!("webgpu:   kernel {i} %{} on the {place}: {:.3} ms", k.name, ms(k.time));
    }
    Ok(value)
}

/// Runs the WebAssembly executable under wasmtime; with `verbose`, each kernel timed.
fn run_wasm(
    exe: &hloscope_core::targets::wasm::runtime::WasmExecutable,
    args: &[Value],
    source_name: &str,
    verbose: bool,
) -> Result<Value, RunError> {
    let failed = |e: String| RunError(format!("{source_name}: wasm: {e}"));
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    if !verbose {
        return Ok(exe.run(args).map_err(failed)?.0);
    }
    let (value, times) = exe.run_timed(args).map_err(failed)?;
    let kernels = times.kernels.ok_or_else(|| failed("a timed run gave no kernel times".into()))?;
    eprintln!("wasm: run in {:.2} ms:", ms(times.total));
    for (i, k) in kernels.iter().enumerate() {
        let place = if k.on_host { "host" } else { "wasm" };
        eprintln!("wasm:   kernel {i} %{} on the {place}: {:.3} ms", k.name, ms(k.time));
    }
    Ok(value)
}

/// Runs the module on CUDA device 0, naming it on standard error.
fn run_cuda(module: &Module, args: &[Value], source_name: &str, verbose: bool) -> Result<Value, RunError> {
    use hloscope_core::targets::{cuda, optimize};
    let failed = |e: String| RunError(format!("{source_name}: cuda: {e}"));
    let started = std::time::Instant::now();
    let optimized = optimize(module).map_err(failed)?;
    let program = cuda::compile(&optimized).map_err(failed)?;
    let (on_device, on_host) = program.counts();
    let mut exe = cuda::runtime::CudaExecutable::new(&optimized, program).map_err(failed)?;
    let d = &exe.device;
    eprintln!(
        "cuda: {} (sm_{}, NVRTC from {}): {on_device} kernels on the device, {on_host} on the host",
        d.name, d.arch, d.toolkit
    );
    if verbose {
        eprintln!("cuda: parse to loaded module in {:.2} ms", started.elapsed().as_secs_f64() * 1e3);
    }
    if !verbose {
        return Ok(exe.run(args).map_err(failed)?.0);
    }
    let (value, times) = exe.run_timed(args).map_err(failed)?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let kernels = times.kernels.ok_or_else(|| failed("a timed run gave no kernel times".into()))?;
    eprintln!("cuda: run in {:.2} ms, kernels timed by cuda events:", ms(times.total));
    for (i, k) in kernels.iter().enumerate() {
        let place = if k.on_host { "host" } else { "device" };
        eprintln!("cuda:   kernel {i} %{} on the {place}: {:.3} ms", k.name, ms(k.time));
    }
    Ok(value)
}

/// Runs the entry computation on the reference interpreter.
fn interpret(module: &Module, args: &[Value], source_name: &str) -> Result<Value, RunError> {
    Interpreter::new(module).run(args).map_err(|e| {
        let at = if e.loc.line > 0 { format!("{source_name}:{}", e.loc) } else { source_name.to_string() };
        RunError(format!("{at}: running %{} failed: {}", e.inst, e.message))
    })
}

/// Compiles for the CPU through the compilation cache (unless --no-cache); notes on
/// stderr for unusable entries, and with --verbose hit or miss and the time taken.
/// Returns the executable and, unless the cache had it, the parsed source module.
fn compile_cpu(
    args: &RunArgs,
    text: &str,
    source_name: &str,
    started: std::time::Instant,
    parse: &dyn Fn() -> Result<Module, RunError>,
) -> Result<(std::rc::Rc<hloscope_core::targets::cpu::CpuExecutable>, Option<Module>), RunError> {
    use hloscope_core::targets::cpu;
    let failed = |e: String| RunError(format!("{source_name}: compiling for the cpu failed: {e}"));
    let compile = |module: &Module, store: bool| {
        let optimized = cpu::optimize(module)?;
        if store {
            cpu::compile_to_artifact(&optimized).map(|(exe, bytes)| (exe, Some(bytes)))
        } else {
            Ok((cpu::compile(&optimized)?, None))
        }
    };
    let (exe, parsed, what) = compile_cached(args, text, "cpu", parse, compile, &failed)?;
    if args.verbose {
        eprintln!("cpu: {what}; parse to executable in {:.2} ms", started.elapsed().as_secs_f64() * 1e3);
    }
    Ok((exe, parsed))
}

/// Compiles for WebAssembly (wasmtime) through the compilation cache, as [`compile_cpu`].
fn compile_wasm(
    args: &RunArgs,
    text: &str,
    source_name: &str,
    started: std::time::Instant,
    parse: &dyn Fn() -> Result<Module, RunError>,
) -> Result<std::rc::Rc<crate::cache::WasmEntry>, RunError> {
    use hloscope_core::targets::{optimize, wasm};
    let failed = |e: String| RunError(format!("{source_name}: wasm: {e}"));
    let threads = wasm_threads(args.threads, args.target)?;
    let compile = |module: &Module, store: bool| {
        let optimized = optimize(module)?;
        let program = wasm::compile_threaded(&optimized, threads)?;
        let (exe, bytes) = if store {
            let (exe, bytes) = wasm::artifact::compile(&optimized, program)?;
            (exe, Some(bytes))
        } else {
            (wasm::runtime::WasmExecutable::new(&optimized, program)?, None)
        };
        Ok((crate::cache::WasmEntry { exe, module: optimized }, bytes))
    };
    // The module differs with the thread count (an imported shared memory, a scratch
    // region per thread), so the count is part of the key.
    let target = format!("wasm threads={threads}");
    let (entry, _, what) = compile_cached(args, text, &target, parse, compile, &failed)?;
    let program = entry.exe.program();
    let (compiled, on_host) = program.counts();
    let data = program.data.iter().map(|(_, bytes)| bytes.len()).sum::<usize>();
    let code = if program.runs_on_library() {
        format!("all f32 dots, run by the GEMM library: no module, {data} bytes of data")
    } else {
        format!("{} bytes, {data} of data", program.bytes.len())
    };
    eprintln!(
        "wasm: wasmtime: {compiled} kernels in WebAssembly ({code}), {on_host} on the host, {threads} thread{}",
        if threads == 1 { "" } else { "s" }
    );
    if args.verbose {
        eprintln!(
            "wasm: {what}; parse to instance in {:.2} ms (wasmtime compile or load, and instantiate {:.2} ms)",
            started.elapsed().as_secs_f64() * 1e3,
            entry.exe.compile_time.as_secs_f64() * 1e3
        );
    }
    Ok(entry)
}

/// The threads `--target wasm` runs on: `--threads`, else every core the CPU target's
/// pool uses; `--threads` with another target is an error.
pub(crate) fn wasm_threads(threads: Option<u32>, target: Target) -> Result<u32, RunError> {
    match (threads, target) {
        (Some(n), Target::Wasm) => Ok(n),
        (None, Target::Wasm) => {
            Ok(hloscope_core::targets::pool::threads().min(hloscope_core::targets::wasm::MAX_THREADS as usize) as u32)
        }
        (Some(_), _) => Err(RunError("--threads is for --target wasm (the CPU target uses every core)".into())),
        (None, _) => Ok(1),
    }
}

/// Target `target`'s executable for module `text` from the compilation cache, or made by
/// `compile` (from the module `parse` gives, with its artifact's bytes when it is to be
/// stored; its errors go through `failed`) and stored,
/// unless --no-cache; notes on stderr for unusable entries. Returns the executable, the
/// parsed source module unless the cache had it, and what the cache did (for --verbose).
fn compile_cached<E: crate::cache::Entry>(
    args: &RunArgs,
    text: &str,
    target: &str,
    parse: &dyn Fn() -> Result<Module, RunError>,
    compile: impl FnOnce(&Module, bool) -> Result<(E, Option<Vec<u8>>), String>,
    failed: &dyn Fn(String) -> RunError,
) -> Result<(std::rc::Rc<E>, Option<Module>, String), RunError> {
    use crate::cache::{Cache, Key, Outcome};
    use hloscope_core::targets::cpu;
    if args.no_cache {
        let module = parse()?;
        let (exe, _) = compile(&module, false).map_err(failed)?;
        return Ok((std::rc::Rc::new(exe), Some(module), "cache off".to_string()));
    }
    let mut cache = Cache::<E>::from_env();
    let key = Key::new(text, target, cpu::PIPELINE, &cpu::compiler_version());
    let at = cache.path(key).map(|p| p.display().to_string()).unwrap_or_default();
    match cache.lookup(key) {
        Ok((exe, _)) => Ok((exe, None, format!("cache hit ({at})"))),
        Err(outcome) => {
            let module = parse()?;
            let (exe, bytes) = compile(&module, true).map_err(failed)?;
            let bytes = bytes.ok_or_else(|| failed("the compile made no artifact to store".into()))?;
            let exe = cache.insert(key, exe, &bytes);
            for note in &cache.notes {
                eprintln!("note: {note}");
            }
            let what = match outcome {
                Outcome::Rebuilt(reason) => {
                    eprintln!("note: the compilation cache entry {at} was unusable ({reason}); rebuilt it");
                    "cache miss (rebuilt)".to_string()
                }
                _ => format!("cache miss (stored {at})"),
            };
            Ok((exe, Some(module), what))
        }
    }
}

/// The module text and the name to use for it in messages.
pub(crate) fn read_module_text(arg: &str) -> Result<(String, String), RunError> {
    if arg == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| RunError(format!("cannot read the module from standard input: {e}")))?;
        return Ok(("<stdin>".into(), text));
    }
    let bytes = std::fs::read(arg).map_err(|e| RunError(format!("cannot read module {arg}: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        RunError(format!(
            "{arg}: the module is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    Ok((arg.to_string(), text))
}

/// `2,3` for dims [2, 3].
fn npy_dims(dims: &[i64]) -> String {
    dims.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// VerifyError's text starts with its own `line:col: `; the CLI puts the file name first.
pub(crate) fn strip_loc(s: &str) -> &str {
    let mut parts = s.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(l), Some(c), Some(rest)) if l.parse::<u32>().is_ok() && c.parse::<u32>().is_ok() => rest.trim_start(),
        _ => s,
    }
}

pub(crate) fn write_outputs(dir: &Path, outputs: &[hloscope_core::ir::Literal]) -> Result<String, RunError> {
    std::fs::create_dir_all(dir).map_err(|e| RunError(format!("cannot create {}: {e}", dir.display())))?;
    let mut report = String::new();
    for (i, l) in outputs.iter().enumerate() {
        let path = dir.join(format!("out{i}.npy"));
        let arr = NpyArray::from_literal(l);
        std::fs::write(&path, npy::write(&arr))
            .map_err(|e| RunError(format!("cannot write {}: {e}", path.display())))?;
        let widened = if l.elem() == hloscope_core::ir::ElementType::BF16 { " (bf16 widened to float32)" } else { "" };
        report += &format!("wrote {} ({}[{}]){widened}\n", path.display(), l.elem(), npy_dims(&l.shape.dims));
    }
    if outputs.is_empty() {
        report = "the module returned no arrays; nothing was written\n".into();
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::strip_loc;

    #[test]
    fn strips_a_leading_location_only() {
        assert_eq!(strip_loc("3:7: in main, %add: bad"), "in main, %add: bad");
        assert_eq!(strip_loc("in main: a: b"), "in main: a: b");
    }
}
