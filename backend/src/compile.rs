//! `hloscope compile`: read a module, run the pass pipeline, print the result; with
//! `--dump-dir` write every stage like XLA's `--xla_dump_to` (see `dump.rs`).
//!
//! The options that choose the pipeline (`--pipeline`, `--fusion`, `--no-passes`,
//! `--profile`) are shared with `hloscope explain` through [`PipelineArgs`].

use crate::dump;
use crate::run::{read_module_text, strip_loc, RunError};
use clap::{Args, ValueEnum};
use hloscope_core::api::{self, Snapshot};
use hloscope_core::ir::Module;
use hloscope_core::passes::fusion::FusionConfig;
use hloscope_core::passes::pipeline::{parse_pipeline_spec, run_pipeline, PipelineConfig};
use std::path::PathBuf;

/// How to build the pipeline; shared by `compile` and `explain`.
#[derive(Args, Debug)]
pub struct PipelineArgs {
    /// The passes, e.g. `default`, `inline,simplify{max_rounds=4},cse,dce,fusion` or
    /// `default,-cse` (passes: inline, simplify, transpose-folding,
    /// dot-strength-reduction, dot-merger, constant-fold, cse, dce, fusion,
    /// layout-assignment, schedule; an unknown name lists them).
    #[arg(long, value_name = "SPEC", default_value = "default")]
    pub pipeline: String,

    /// Fusion knobs, a comma list: off, no-multi-output, no-epilogue, no-duplication,
    /// max-size=N, never=PRODUCER:CONSUMER, force=PRODUCER:CONSUMER.
    #[arg(long, value_name = "KNOBS", default_value = "")]
    pub fusion: String,

    /// Run no pass at all: report the module as it is (e.g. XLA's own optimized HLO).
    #[arg(long, conflicts_with = "pipeline")]
    pub no_passes: bool,

    /// The hardware the cost is estimated for: a100, h100, h200, l4, rtx4090, cpu, or
    /// `measured` (this machine's CPU, probed on the spot: bandwidth, FLOP/s, overhead).
    #[arg(long, value_name = "NAME", default_value = "h100")]
    pub profile: String,
}

impl PipelineArgs {
    /// The pipeline configuration these options describe, or a message saying which
    /// option is wrong.
    pub fn config(&self, snapshots: bool) -> Result<PipelineConfig, RunError> {
        let passes = if self.no_passes {
            Vec::new()
        } else {
            parse_pipeline_spec(&self.pipeline).map_err(|e| RunError(format!("--pipeline `{}`: {e}", self.pipeline)))?
        };
        let fusion = fusion_config(&self.fusion)?;
        let profile = if self.profile == "measured" {
            crate::probe::measure_cpu().map_err(|e| RunError(format!("--profile measured: the probe failed: {e}")))?
        } else {
            api::profile_by_name(&self.profile).map_err(|e| RunError(format!("--profile: {e} (or `measured`)")))?
        };
        Ok(PipelineConfig { passes, fusion, verify: true, snapshots, profile, clock: None })
    }
}

/// The fusion knobs of `--fusion` (shared by `compile`, `explain` and `bench`), or a
/// message naming the bad knob.
pub fn fusion_config(spec: &str) -> Result<FusionConfig, RunError> {
    FusionConfig::from_spec(spec).map_err(|e| RunError(format!("--fusion `{spec}`: {e}")))
}

/// Reads, parses and verifies a module; errors carry the file name and location.
pub fn load_module(arg: &str) -> Result<(String, Module), RunError> {
    let (source_name, text) = read_module_text(arg)?;
    let module = hloscope_core::parse::parse_module(&text)
        .map_err(|e| RunError(format!("{source_name}:{}:{}: {}", e.line, e.col, e.message)))?;
    hloscope_core::verify::verify(&module)
        .map_err(|e| RunError(format!("{source_name}:{}: invalid module: {}", e.loc, strip_loc(&e.to_string()))))?;
    Ok((source_name, module))
}

/// Loads `arg`, runs the pipeline `args` describe; returns the module after the last
/// pass and one snapshot per stage (the input first).
pub fn load_and_run(
    arg: &str,
    args: &PipelineArgs,
    snapshots: bool,
) -> Result<(Module, Vec<Snapshot>, PipelineConfig), RunError> {
    let config = args.config(snapshots)?;
    let (source_name, mut module) = load_module(arg)?;
    let snaps = run_pipeline(&mut module, &config).map_err(|e| RunError(format!("{source_name}: {e}")))?;
    Ok((module, snaps, config))
}

/// What `compile` prints.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// XLA HLO text.
    #[default]
    Hlo,
    /// StableHLO (MLIR text); fusions become calls to private functions.
    Stablehlo,
    /// Every stage's snapshot as JSON (graph, changes, rewrites, decisions, cost).
    Json,
    /// A relocatable object file with a C entry point and its C header (needs
    /// `--target cpu` and `-o NAME.o`; writes NAME.h next to it).
    Object,
    /// The CPU target's kernels as Cranelift IR, each headed by its kind and whether it
    /// was vectorized (needs `--target cpu`).
    Clif,
    /// The CPU target's kernels as machine code (needs `--target cpu`).
    Asm,
    /// The kernel plan every target is given, for the CPU's capabilities: buffers, each
    /// kernel with its elemental body (index expressions, value nodes, reductions), row
    /// chains and the arena.
    Plan,
    /// The WebGPU target's compute shaders (WGSL), one per kernel on the device; kernels
    /// that run on the host say why.
    Wgsl,
    /// The CUDA target's kernels as one CUDA C translation unit (needs `--target cuda`);
    /// kernels that run on the host say why in comments.
    Cuda,
    /// The CUDA target's PTX, compiled by NVRTC for `--arch` (needs `--target cuda` and
    /// NVRTC).
    Ptx,
    /// The CUDA target's SASS for `--arch`: PTX assembled by ptxas and disassembled by
    /// cuobjdump or nvdisasm (needs `--target cuda`, NVRTC and those tools).
    Sass,
    /// The WebAssembly target's module in the text format (WAT), headed by one comment
    /// line per kernel (its export, or why the host runs it), followed by the GEMM
    /// library when the module imports it; `--target wasm`.
    Wat,
    /// The WebAssembly target's binary module (`--target wasm`; needs `-o FILE`), and
    /// beside it, when the module calls a GEMM, the GEMM library it imports
    /// (`FILE.gemm.wasm`).
    Wasm,
}

/// What `compile --emit object` compiles for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum AotTarget {
    /// This machine's CPU (Cranelift).
    Cpu,
    /// WebGPU (WGSL).
    Webgpu,
    /// CUDA (CUDA C, PTX, SASS).
    Cuda,
    /// WebAssembly (SIMD128): one module per program.
    Wasm,
}

#[derive(Args, Debug)]
#[command(after_help = "\
Dumps: with --dump-dir DIR each stage is written as DIR/NN-STAGE.hlo (the module), \
NN-STAGE.json (the snapshot: graph, changes, rewrites, decisions, cost) and NN-STAGE.dot \
(Graphviz, one cluster per fusion), numbered in order from 00-input.

Objects: --target cpu --emit object -o NAME.o writes a relocatable object for this CPU with \
one C entry point, int NAME_run(const void *const *inputs, void *const *outputs, void *scratch), \
and the header NAME.h (buffer sizes, scratch size); link with -lm. The module is optimized \
with the cpu target's pipeline without epilogue fusion; dots become loop reductions; kernels \
that are not Cranelift-compiled (interpreted ops, while/conditional, f16/bf16 rounding) are \
refused with the reason.

Exit status: 0 on success, 2 on any error (bad text, bad pipeline, bad knobs).")]
pub struct CompileArgs {
    /// The module: StableHLO (MLIR text) or XLA HLO text; `-` reads standard input.
    #[arg(value_name = "MODULE")]
    pub module: String,

    #[command(flatten)]
    pub pipeline: PipelineArgs,

    /// Write every stage into this folder (created if needed).
    #[arg(long, value_name = "DIR")]
    pub dump_dir: Option<PathBuf>,

    /// The format of the final module on standard output.
    #[arg(long, value_enum, default_value_t = Emit::Hlo)]
    pub emit: Emit,

    /// The target of `--emit object`, `--emit clif` and `--emit asm`.
    #[arg(long, value_enum)]
    pub target: Option<AotTarget>,

    /// With `--emit clif|asm`: list the code for another machine instead of this CPU's JIT
    /// (`x86-64-v3`: AVX2 and FMA; `aarch64`: NEON), as the web app's kernels pane does.
    #[arg(long, value_name = "MACHINE")]
    pub machine: Option<String>,

    /// The object file `--emit object` writes (NAME.o; the header goes to NAME.h and the
    /// entry point is NAME_run); with `--emit cuda|ptx|sass`, the file the listing goes
    /// to instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// With `--target cuda --emit ptx|sass`: the GPU architecture, as its compute
    /// capability (90: sm_90, Hopper).
    #[arg(long, value_name = "SM", default_value_t = hloscope_core::targets::cuda::DEFAULT_ARCH)]
    pub arch: u32,

    /// With `--emit wgsl`: the shaders a GPU adapter gets, its operands staged in
    /// workgroup memory (dots in workgroup blocks, transposes through tiles); without
    /// it, those of an adapter on the CPU (lavapipe, SwiftShader).
    #[arg(long)]
    pub workgroup_staging: bool,
}

pub fn compile(args: &CompileArgs) -> Result<String, RunError> {
    let print: fn(&hloscope_core::ir::Module) -> String = match args.emit {
        Emit::Object => return compile_object(args),
        Emit::Clif | Emit::Asm => return kernel_listings(args),
        Emit::Wgsl => return wgsl_listing(args),
        Emit::Cuda | Emit::Ptx | Emit::Sass => return cuda_listing(args),
        Emit::Wat | Emit::Wasm => return wasm_listing(args),
        Emit::Hlo => hloscope_core::print::hlo::print_module,
        Emit::Stablehlo => hloscope_core::print::stablehlo::print_module,
        Emit::Json | Emit::Plan => |_| String::new(),
    };
    let snapshots = args.dump_dir.is_some() || args.emit == Emit::Json;
    let (module, snaps, _) = load_and_run(&args.module, &args.pipeline, snapshots)?;
    if let Some(dir) = &args.dump_dir {
        dump::write_stages(dir, &snaps)?;
    }
    Ok(match args.emit {
        Emit::Json => api::to_json(&snaps) + "\n",
        // The plan the target runs: WebGPU's with its caps and its refused kernels on
        // the host, else the CPU's.
        Emit::Plan if args.target == Some(AotTarget::Webgpu) => hloscope_core::targets::webgpu::compile(&module)
            .map_err(|e| RunError(format!("{}: cannot plan the kernels for webgpu: {e}", args.module)))?
            .plan
            .to_string(),
        Emit::Plan if args.target == Some(AotTarget::Wasm) => hloscope_core::targets::wasm::compile(&module)
            .map_err(|e| RunError(format!("{}: cannot plan the kernels for wasm: {e}", args.module)))?
            .plan
            .to_string(),
        Emit::Plan if args.target == Some(AotTarget::Cuda) => hloscope_core::targets::cuda::compile(&module)
            .map_err(|e| RunError(format!("{}: cannot plan the kernels for cuda: {e}", args.module)))?
            .plan
            .to_string(),
        Emit::Plan => hloscope_core::kernel::plan(&module)
            .map_err(|e| RunError(format!("{}: cannot plan the kernels: {e}", args.module)))?
            .to_string(),
        _ => print(&module),
    })
}

/// `--emit wgsl`: the WebGPU target's shaders, in plan order (after the target's
/// pipeline with `--fusion`'s knobs).
fn wgsl_listing(args: &CompileArgs) -> Result<String, RunError> {
    use hloscope_core::targets::{optimize_with, webgpu};
    if args.target.is_some_and(|t| t != AotTarget::Webgpu) {
        return Err(RunError("--emit wgsl is the webgpu target's (--target webgpu)".into()));
    }
    let fusion = fusion_config(&args.pipeline.fusion)?;
    let (source_name, module) = load_module(&args.module)?;
    let failed = |e: String| RunError(format!("{source_name}: compiling for webgpu failed: {e}"));
    let options = webgpu::wgsl::Options { workgroup_staging: args.workgroup_staging };
    let program = webgpu::compile_with(&optimize_with(&module, &fusion).map_err(failed)?, options).map_err(failed)?;
    Ok(program.listing())
}

/// `--emit wat|wasm`: the WebAssembly target's module (after the target's pipeline with
/// `--fusion`'s knobs), as text or, to `-o FILE`, as the binary.
fn wasm_listing(args: &CompileArgs) -> Result<String, RunError> {
    use hloscope_core::targets::{optimize_with, wasm};
    if args.target != Some(AotTarget::Wasm) {
        return Err(RunError("--emit wat and wasm are the wasm target's (--target wasm)".into()));
    }
    let fusion = fusion_config(&args.pipeline.fusion)?;
    let (source_name, module) = load_module(&args.module)?;
    let failed = |e: String| RunError(format!("{source_name}: compiling for wasm failed: {e}"));
    let program = wasm::compile(&optimize_with(&module, &fusion).map_err(failed)?).map_err(failed)?;
    if args.emit == Emit::Wasm {
        let out =
            args.output.as_ref().ok_or_else(|| RunError("--emit wasm writes a binary: give -o FILE.wasm".into()))?;
        let write = |path: &std::path::Path, bytes: &[u8]| {
            std::fs::write(path, bytes).map_err(|e| RunError(format!("{}: {e}", path.display())))
        };
        write(out, &program.standalone())?;
        if !program.gemm {
            return Ok(format!("wrote {}\n", out.display()));
        }
        // The module imports its GEMM from the library: written beside it.
        let library = out.with_extension("gemm.wasm");
        write(&library, &wasm::gemm::library(false))?;
        return Ok(format!(
            "wrote {} and {} (the GEMM library it imports: instantiate it on the module's memory, \
             env.memory, and pass its table as gemm.table)\n",
            out.display(),
            library.display()
        ));
    }
    let print = |bytes: &[u8]| wasmprinter::print_bytes(bytes).map_err(|e| failed(format!("printing the module: {e}")));
    let mut text = program.summary() + &print(&program.standalone())? + "\n";
    if program.gemm {
        // The GEMM its dot kernels call is in the library it imports: shown after it.
        text += ";; the GEMM library this module imports (gemm.table: the GEMM body)\n";
        text += &(print(&wasm::gemm::library(false))? + "\n");
    }
    match &args.output {
        Some(out) => {
            std::fs::write(out, &text).map_err(|e| RunError(format!("{}: {e}", out.display())))?;
            Ok(format!("wrote {}\n", out.display()))
        }
        None => Ok(text),
    }
}

/// `--emit cuda|ptx|sass`: the CUDA target's kernels (after the target's pipeline with
/// `--fusion`'s knobs) as CUDA C, or compiled for `--arch`; written to `-o FILE` when
/// given.
fn cuda_listing(args: &CompileArgs) -> Result<String, RunError> {
    use hloscope_core::targets::cuda::{self, nvrtc, toolkit::Toolkit};
    if args.target != Some(AotTarget::Cuda) {
        return Err(RunError("--emit cuda, ptx and sass are the cuda target's (--target cuda)".into()));
    }
    let fusion = fusion_config(&args.pipeline.fusion)?;
    let (source_name, module) = load_module(&args.module)?;
    let failed = |e: String| RunError(format!("{source_name}: compiling for cuda failed: {e}"));
    let program =
        cuda::compile(&hloscope_core::targets::optimize_with(&module, &fusion).map_err(failed)?).map_err(failed)?;
    let text = match args.emit {
        Emit::Cuda => program.listing(),
        _ => {
            let tk = Toolkit::locate().map_err(|e| RunError(format!("--emit {}: {e}", emit_name(args.emit))))?;
            let ptx = nvrtc::compile_ptx(&tk, &program.listing(), args.arch).map_err(failed)?;
            if args.emit == Emit::Ptx {
                ptx
            } else {
                let cubin = nvrtc::ptxas(&tk, &ptx, args.arch).map_err(failed)?;
                nvrtc::sass(&tk, &cubin).map_err(RunError)?
            }
        }
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| RunError(format!("cannot write {}: {e}", path.display())))?;
            Ok(format!("wrote {} ({} bytes)\n", path.display(), text.len()))
        }
        None => Ok(text),
    }
}

fn emit_name(e: Emit) -> &'static str {
    match e {
        Emit::Ptx => "ptx",
        Emit::Sass => "sass",
        _ => "cuda",
    }
}

/// `--emit clif|asm`: every kernel the CPU target compiles, in plan order.
fn kernel_listings(args: &CompileArgs) -> Result<String, RunError> {
    use hloscope_core::targets::cpu;
    if args.target != Some(AotTarget::Cpu) {
        return Err(RunError("--emit clif and --emit asm need --target cpu".into()));
    }
    let (source_name, module) = load_module(&args.module)?;
    let optimized =
        cpu::optimize(&module).map_err(|e| RunError(format!("{source_name}: optimizing for the cpu failed: {e}")))?;
    if let Some(name) = &args.machine {
        return machine_listings(&source_name, &optimized, name, args.emit == Emit::Clif);
    }
    let exe =
        cpu::compile(&optimized).map_err(|e| RunError(format!("{source_name}: compiling for the cpu failed: {e}")))?;
    let mut out = String::new();
    let plan = exe.plan();
    for (i, k) in plan.kernels.iter().enumerate() {
        if let Some(chain) = plan.chains.iter().find(|c| c.start == i) {
            let names: Vec<&str> = plan.kernels[chain.clone()].iter().map(|k| k.name.as_str()).collect();
            out.push_str(&format!(
                "; row chain: kernels {}..{} ({}) run together, chunk by chunk of rows\n",
                chain.start,
                chain.end,
                names.join(", ")
            ));
        }
        let listing = if args.emit == Emit::Clif { exe.clif(i) } else { exe.asm(i) };
        out.push_str(&format!("; kernel {i}: {} ({})\n", k.name, k.kind));
        match listing {
            Some(text) => out.push_str(text),
            None => out.push_str("; not compiled by Cranelift (a library call or the runtime)\n"),
        }
        out.push('\n');
    }
    Ok(out)
}

/// `--emit clif|asm --machine NAME`: every kernel's code for machine `name`.
fn machine_listings(
    source_name: &str,
    module: &hloscope_core::ir::Module,
    name: &str,
    clif: bool,
) -> Result<String, RunError> {
    use hloscope_core::targets::cpu::listing::{self, Machine};
    let machine = Machine::parse(name).map_err(|e| RunError(format!("--machine `{name}`: {e}")))?;
    let kernels = listing::list(module, machine)
        .map_err(|e| RunError(format!("{source_name}: generating code for {name} failed: {e}")))?;
    let mut out = String::new();
    for k in kernels {
        out.push_str(&format!("; kernel {}: {} ({}, {})\n", k.index, k.name, k.kind, k.runs));
        for note in &k.notes {
            out.push_str(&format!("; {note}\n"));
        }
        out.push_str(if clif { &k.clif } else { &k.asm });
        out.push_str("\n\n");
    }
    Ok(out)
}

/// `--emit object`: the module as an object file and a C header.
fn compile_object(args: &CompileArgs) -> Result<String, RunError> {
    use hloscope_core::targets::cpu;
    if args.target != Some(AotTarget::Cpu) {
        return Err(RunError("--emit object needs --target cpu".into()));
    }
    let out = args.output.as_ref().ok_or_else(|| RunError("--emit object needs -o NAME.o".into()))?;
    let name = out
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| RunError(format!("-o {}: the file needs a name", out.display())))?;
    let (source_name, module) = load_module(&args.module)?;
    let optimized = cpu::aot::optimize(&module)
        .map_err(|e| RunError(format!("{source_name}: optimizing for the cpu failed: {e}")))?;
    let aot = cpu::aot::compile_object(&optimized, name)
        .map_err(|e| RunError(format!("{source_name}: cannot emit an object: {e}")))?;
    let header = out.with_extension("h");
    std::fs::write(out, &aot.object).map_err(|e| RunError(format!("cannot write {}: {e}", out.display())))?;
    std::fs::write(&header, &aot.header).map_err(|e| RunError(format!("cannot write {}: {e}", header.display())))?;
    Ok(format!(
        "wrote {} ({} bytes) and {} (entry point {name}_run, {} bytes of scratch)\n",
        out.display(),
        aot.object.len(),
        header.display(),
        aot.scratch_bytes
    ))
}
