//! The untrusted half of the server: what a worker process does with one job.
//!
//! `hloscope worker` (started by the server, never by a person) applies its resource
//! limits to itself, reads one [`Job`] as JSON from standard input, does it, and writes
//! a [`JobHeader`] line followed by the response body to standard output, then exits.
//! Everything that touches the stranger's text — parsing, verifying, the pipeline, code
//! generation, JIT-compiled runs, the interpreter — happens here, so an abort, a
//! segfault, an endless loop or a runaway allocation ends this process and fails this
//! one job; the server reads the exit status and carries on.
//!
//! This module also converts the compiler's structs into the wire DTOs of `api.rs`.

use super::api::*;
use crate::bench::{self, Runner};
use crate::cache::{Cache, Key};
use axum::http::StatusCode;
use base64::Engine as _;
use hloscope_core::api::{ExplainReport, Snapshot};
use hloscope_core::interp::{check, Interpreter};
use hloscope_core::ir::{Literal, Module};
use hloscope_core::npy;
use hloscope_core::parse::{self, Format};
use hloscope_core::passes::fusion::FusionConfig;
use hloscope_core::passes::pipeline::{parse_pipeline_spec, run_pipeline, PipelineConfig};
use hloscope_core::targets::{cpu, cuda};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Instant;

/// What the server asks a worker to do.
#[derive(Debug, Serialize, Deserialize)]
pub enum Job {
    Compile(CompileRequest),
    Run(RunRequest),
}

/// Most timed runs one request may ask for.
pub const MAX_ITERS: u32 = 100;

/// The first line a worker writes: the HTTP status and what the compilation cache did.
/// The response body (a DTO or an [`ErrorBody`], as JSON) follows on the next line.
#[derive(Debug, Serialize, Deserialize)]
pub struct JobHeader {
    pub status: u16,
    /// `hit`, `miss`, or absent when the job used no cache.
    pub cache: Option<String>,
}

/// The limits a worker runs under, passed on its command line.
#[derive(Clone, Debug, clap::Args)]
pub struct WorkerArgs {
    /// Address space cap, bytes (RLIMIT_AS).
    #[arg(long)]
    pub max_memory: u64,
    /// CPU time cap, seconds (RLIMIT_CPU), all threads together.
    #[arg(long)]
    pub max_cpu_s: u64,
    /// The compilation cache's folder (shared by all workers).
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Largest array, in elements, a job's module may hold.
    #[arg(long)]
    pub max_elements: u64,
}

/// A job's failure: a status and the body the client sees.
struct Failure(StatusCode, ErrorBody);

impl Failure {
    fn new(status: StatusCode, kind: &str, error: String) -> Failure {
        Failure(status, ErrorBody { error, kind: kind.into(), line: None, col: None })
    }
    fn bad_request(error: String) -> Failure {
        Failure::new(StatusCode::BAD_REQUEST, "bad_request", error)
    }
    fn invalid(error: String, line: u32, col: u32) -> Failure {
        let mut f = Failure::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_module", error);
        if line > 0 {
            f.1.line = Some(line);
            f.1.col = Some(col);
        }
        f
    }
}

/// `hloscope worker`: limits, one job, one answer. Returns the process's exit status.
pub fn worker_main(args: &WorkerArgs) -> std::process::ExitCode {
    if let Err(e) = apply_limits(args) {
        eprintln!("worker: cannot apply resource limits: {e}");
        return std::process::ExitCode::from(3);
    }
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("worker: cannot read the job: {e}");
        return std::process::ExitCode::from(3);
    }
    // A panic is a bug in hloscope: it fails this job with a 500, and the message goes
    // to standard error, which the server logs.
    std::panic::set_hook(Box::new(|info| eprintln!("worker panic: {info}")));
    let args2 = args.clone();
    let answer = std::thread::Builder::new()
        .stack_size(crate::STACK_BYTES)
        .spawn(move || std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| do_job(&input, &args2))))
        .map_err(|e| e.to_string())
        .and_then(|h| h.join().map_err(|_| "the job thread failed".to_string()));
    let (header, body) = match answer {
        Ok(Ok(r)) => r,
        // A panic (already printed by the hook) or a thread that could not start.
        _ => {
            let body = ErrorBody {
                error: "internal error in hloscope (a bug, please report it)".into(),
                kind: "internal".into(),
                line: None,
                col: None,
            };
            (JobHeader { status: 500, cache: None }, serde_json::to_string(&body).unwrap_or_default())
        }
    };
    let mut out = std::io::stdout().lock();
    let header = serde_json::to_string(&header).unwrap_or_default();
    let _ = out.write_all(header.as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.write_all(body.as_bytes());
    let _ = out.flush();
    std::process::ExitCode::SUCCESS
}

/// Caps this process's address space and CPU time, and turns core dumps off.
fn apply_limits(args: &WorkerArgs) -> Result<(), String> {
    #[cfg(unix)]
    {
        let set = |resource, value: u64, name: &str| -> Result<(), String> {
            let lim = libc::rlimit { rlim_cur: value as libc::rlim_t, rlim_max: value as libc::rlim_t };
            // SAFETY: setrlimit reads the struct we pass and nothing else.
            if unsafe { libc::setrlimit(resource, &lim) } != 0 {
                return Err(format!("{name}: {}", std::io::Error::last_os_error()));
            }
            Ok(())
        };
        set(libc::RLIMIT_AS, args.max_memory, "RLIMIT_AS")?;
        set(libc::RLIMIT_CPU, args.max_cpu_s, "RLIMIT_CPU")?;
        set(libc::RLIMIT_CORE, 0, "RLIMIT_CORE")?;
    }
    Ok(())
}

/// Decodes and runs a job; the header and the JSON body to write.
fn do_job(input: &str, args: &WorkerArgs) -> (JobHeader, String) {
    let job: Job = match serde_json::from_str(input) {
        Ok(j) => j,
        Err(e) => return failure(Failure::bad_request(format!("malformed job: {e}"))),
    };
    let mut cache_event = None;
    let result = match job {
        Job::Compile(req) => compile(&req, args).map(|r| serde_json::to_string(&r)),
        Job::Run(req) => run(&req, args, &mut cache_event).map(|r| serde_json::to_string(&r)),
    };
    match result {
        Ok(Ok(body)) => (JobHeader { status: 200, cache: cache_event }, body),
        Ok(Err(e)) => failure(Failure::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("cannot serialize the answer: {e}"),
        )),
        Err(f) => {
            let (mut h, b) = failure(f);
            h.cache = cache_event;
            (h, b)
        }
    }
}

fn failure(f: Failure) -> (JobHeader, String) {
    (JobHeader { status: f.0.as_u16(), cache: None }, serde_json::to_string(&f.1).unwrap_or_default())
}

/// Parses in the requested format and verifies, then applies the job's size limits;
/// every error points at its line and column.
fn load(source: &str, format: SourceFormat, args: &WorkerArgs) -> Result<(Module, SourceFormat), Failure> {
    let format = match format {
        SourceFormat::Auto => match parse::detect_format(source) {
            Format::Hlo => SourceFormat::Hlo,
            Format::StableHlo => SourceFormat::Stablehlo,
        },
        f => f,
    };
    let parsed = match format {
        SourceFormat::Hlo => parse::hlo::parse(source),
        _ => parse::mlir::parse(source),
    };
    let module = parsed.map_err(|e| Failure::invalid(format!("{}:{}: {}", e.line, e.col, e.message), e.line, e.col))?;
    hloscope_core::verify::verify(&module).map_err(|e| {
        Failure::invalid(
            format!("{}: invalid module: {}", e.loc, crate::run::strip_loc(&e.to_string())),
            e.loc.line,
            e.loc.col,
        )
    })?;
    check_sizes(&module, args)?;
    Ok((module, format))
}

/// Refuses a module over this server's limits (an array over `max_elements`, more
/// bytes than the worker may hold) before anything is allocated for it.
fn check_sizes(module: &Module, args: &WorkerArgs) -> Result<(), Failure> {
    use hloscope_core::limits::{check_module, Limits};
    let limits = Limits {
        max_elements: args.max_elements,
        // The worker's address space bounds what its arrays can need.
        max_total_bytes: args.max_memory.min(Limits::DEFAULT.max_total_bytes),
        ..Limits::DEFAULT
    };
    check_module(module, &limits).map_err(|e| {
        let mut f = Failure::invalid(e.to_string(), e.loc.line, e.loc.col);
        f.1.kind = "resource_limit".into();
        f
    })
}

fn fusion_config(spec: &Option<String>) -> Result<FusionConfig, Failure> {
    let spec = spec.as_deref().unwrap_or("");
    FusionConfig::from_spec(spec).map_err(|e| Failure::bad_request(format!("fusion `{spec}`: {e}")))
}

/// The CPU target's pipeline with the request's fusion knobs.
fn optimize_for_cpu(module: &Module, fusion: &FusionConfig) -> Result<Module, Failure> {
    hloscope_core::targets::optimize_with(module, fusion).map_err(|e| {
        Failure::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("optimizing for the cpu failed: {e}"))
    })
}

fn compile(req: &CompileRequest, args: &WorkerArgs) -> Result<CompileResponse, Failure> {
    let started = Instant::now();
    for t in &req.targets {
        if t != "cpu" {
            return Err(Failure::bad_request(format!("unknown target `{t}` (code generation is offered for: cpu)")));
        }
    }
    let (module, format) = load(&req.source, req.format, args)?;
    let spec = req.pipeline.as_deref().unwrap_or("default");
    let passes = parse_pipeline_spec(spec).map_err(|e| Failure::bad_request(format!("pipeline `{spec}`: {e}")))?;
    let fusion = fusion_config(&req.fusion)?;
    let profile_name = req.profile.as_deref().unwrap_or("h100");
    let profile = hloscope_core::api::profile_by_name(profile_name).map_err(Failure::bad_request)?;
    let config = PipelineConfig { passes, fusion: fusion.clone(), verify: true, snapshots: true, profile, clock: None };
    let mut optimized = module.clone();
    let snaps = run_pipeline(&mut optimized, &config).map_err(|e| match e {
        hloscope_core::passes::pipeline::PipelineError::Spec(m) => Failure::bad_request(m),
        hloscope_core::passes::pipeline::PipelineError::Limit(e) => {
            let mut f = Failure::invalid(e.to_string(), e.loc.line, e.loc.col);
            f.1.kind = "resource_limit".into();
            f
        }
        e => Failure::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    })?;
    let report = ExplainReport::new(&optimized, &snaps, &config.profile);
    let mut diagnostics = Vec::new();
    let plan = match hloscope_core::kernel::plan(&optimized) {
        Ok(p) => plan_dto(&p),
        Err(e) => {
            diagnostics.push(note("warning", format!("no kernel plan for the final module: {e}")));
            Vec::new()
        }
    };
    let mut code = Vec::new();
    if req.targets.iter().any(|t| t == "cpu") {
        let m = optimize_for_cpu(&module, &fusion)?;
        match cpu::compile(&m) {
            Ok(exe) => code.push(cpu_code(&exe)),
            Err(e) => diagnostics.push(note("error", format!("the cpu target could not compile the module: {e}"))),
        }
    }
    Ok(CompileResponse {
        format,
        snapshots: snaps.iter().map(snapshot_dto).collect(),
        cost: cost_dto(&report),
        plan,
        code,
        diagnostics,
        compile_s: started.elapsed().as_secs_f64(),
    })
}

fn note(severity: &str, message: String) -> Diagnostic {
    Diagnostic { severity: severity.into(), message, line: None, col: None }
}

fn run(req: &RunRequest, args: &WorkerArgs, cache_event: &mut Option<String>) -> Result<RunResponse, Failure> {
    let started = Instant::now();
    if !matches!(req.target.as_str(), "interp" | "cpu" | "cuda") {
        return Err(Failure::bad_request(format!(
            "unknown target `{}` (this server runs: interp, cpu, and cuda where it has a device; see /api/targets)",
            req.target
        )));
    }
    if req.target == "cuda" {
        if let Err(why) = cuda::runtime::device() {
            return Err(Failure::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "target_unavailable",
                format!("this server cannot run cuda: {why}"),
            ));
        }
    }
    let iters = req.iters.unwrap_or(1);
    if iters == 0 || iters > MAX_ITERS {
        return Err(Failure::bad_request(format!("iters must be between 1 and {MAX_ITERS}, not {iters}")));
    }
    let fusion = fusion_config(&req.fusion)?;
    let (module, _) = load(&req.source, req.format, args)?;
    let arguments = match &req.inputs {
        RunInputs::Random { random } => hloscope_core::interp::random_inputs(&module, random.seed),
        RunInputs::Npy(files) => {
            let mut decoded = Vec::with_capacity(files.len());
            for (i, f) in files.iter().enumerate() {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(f)
                    .map_err(|e| Failure::bad_request(format!("inputs[{i}]: not base64: {e}")))?;
                decoded.push((format!("inputs[{i}]"), bytes));
            }
            npy::params::from_npy(&module, &decoded).map_err(Failure::bad_request)?
        }
    };
    let (runner, cache) = match req.target.as_str() {
        "cpu" => {
            let key = Key::new(
                &req.source,
                "cpu",
                &format!("{}|fusion={:?}", cpu::PIPELINE, req.fusion),
                &cpu::compiler_version(),
            );
            let mut cache = Cache::new(args.cache_dir.clone(), crate::cache::DEFAULT_MAX_BYTES);
            let (exe, hit) = match cache.lookup(key) {
                Ok((exe, _)) => (exe, true),
                Err(_) => {
                    let m = optimize_for_cpu(&module, &fusion)?;
                    let (exe, bytes) = cpu::compile_to_artifact(&m).map_err(|e| {
                        Failure::new(
                            StatusCode::UNPROCESSABLE_ENTITY,
                            "invalid_module",
                            format!("compiling for the cpu failed: {e}"),
                        )
                    })?;
                    (cache.insert(key, exe, &bytes), false)
                }
            };
            *cache_event = Some(if hit { "hit" } else { "miss" }.to_string());
            (Runner::cpu(exe), if hit { "hit" } else { "miss" })
        }
        "cuda" => {
            let failed = |e: String| {
                Failure::new(StatusCode::UNPROCESSABLE_ENTITY, "run_failed", format!("compiling for cuda failed: {e}"))
            };
            let m = hloscope_core::targets::optimize_with(&module, &fusion).map_err(failed)?;
            let program = cuda::compile(&m).map_err(failed)?;
            let exe = cuda::runtime::CudaExecutable::new(&m, program).map_err(failed)?;
            (Runner::Cuda { exe: Box::new(exe), module: m }, "off")
        }
        _ => (Runner::Interp(module.clone()), "off"),
    };
    let compile_s = started.elapsed().as_secs_f64();
    let m = bench::measure(runner, &arguments, Some(iters as usize), 1, false).map_err(|e| {
        Failure::new(StatusCode::UNPROCESSABLE_ENTITY, "run_failed", format!("running on {} failed: {e}", req.target))
    })?;
    let check = if req.target == "interp" {
        None
    } else {
        let reference = Interpreter::new(&module).run(&arguments).map_err(|e| {
            Failure::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "run_failed",
                format!("the reference interpreter failed at %{} ({}): {}", e.inst, e.loc, e.message),
            )
        })?;
        Some(check_outputs(&m.outputs, &reference.flatten()))
    };
    Ok(RunResponse {
        target: req.target.clone(),
        outputs: m.outputs.iter().enumerate().map(|(i, l)| output_summary(i, l, req.return_npy)).collect(),
        compile_s,
        cache: cache.to_string(),
        iters: m.iters as u32,
        run_median_s: m.run_median_s,
        run_min_s: m.run_min_s,
        kernels: m
            .rows
            .into_iter()
            .map(|r| KernelTiming {
                name: r.name,
                time_s: r.time_s,
                bytes: r.bytes,
                flops: r.flops,
                calls: r.calls,
                code: r.code,
            })
            .collect(),
        check,
    })
}

/// How many leading values an output summary shows.
const FIRST_VALUES: usize = 16;

fn output_summary(index: usize, l: &Literal, with_npy: bool) -> OutputSummary {
    let stats = check::stats(l, FIRST_VALUES);
    OutputSummary {
        index: index as u32,
        dtype: l.elem().hlo_name().to_string(),
        shape: l.shape.dims.to_vec(),
        min: stats.min,
        max: stats.max,
        mean: stats.mean,
        first: stats.first,
        npy: with_npy
            .then(|| base64::engine::general_purpose::STANDARD.encode(npy::write(&npy::NpyArray::from_literal(l)))),
    }
}

/// The core's numerics check ([`hloscope_core::interp::check`]) as the API reports it.
pub fn check_outputs(got: &[Literal], want: &[Literal]) -> NumericsCheck {
    let c = check::check_outputs(got, want);
    NumericsCheck {
        reference: "interp".into(),
        passed: c.passed,
        outputs: c
            .outputs
            .into_iter()
            .map(|o| OutputCheck {
                index: o.index as u32,
                passed: o.passed,
                max_abs_error: o.max_abs_error,
                mismatches: o.mismatches,
                atol: o.atol,
                rtol: o.rtol,
            })
            .collect(),
    }
}

fn snapshot_dto(s: &Snapshot) -> SnapshotDto {
    SnapshotDto {
        index: s.index as u32,
        pass: s.pass.clone(),
        changed: s.changed,
        text: s.text.clone(),
        graph: GraphDto {
            nodes: s
                .graph
                .nodes
                .iter()
                .map(|n| NodeDto {
                    id: n.id.clone(),
                    name: n.name.clone(),
                    op: n.op.clone(),
                    dtype: n.dtype.clone(),
                    shape: n.shape.clone(),
                    fusion_group: n.fusion_group.clone(),
                    loc: n.loc.clone(),
                    source: n.source.clone(),
                })
                .collect(),
            edges: s
                .graph
                .edges
                .iter()
                .map(|e| EdgeDto { from: e.from.clone(), to: e.to.clone(), shape: e.shape.clone(), bytes: e.bytes })
                .collect(),
        },
        added: s.changes.added.clone(),
        removed: s.changes.removed.clone(),
        rewritten: s.changes.rewritten.clone(),
        rewrites: s.rewrites.iter().map(|r| RewriteDto { rule: r.rule.to_string(), inst: r.inst.clone() }).collect(),
        decisions: s
            .decisions
            .iter()
            .map(|d| DecisionDto {
                producer: d.producer.clone(),
                consumer: d.consumer.clone(),
                taken: d.taken,
                rule: d.rule.to_string(),
                reason: d.reason.clone(),
                bytes_saved: d.bytes_saved,
                kernels_saved: d.kernels_saved,
            })
            .collect(),
        cost: CostSummaryDto {
            profile: s.cost.profile.clone(),
            kernels: s.cost.kernels as u64,
            bytes_moved: s.cost.bytes_moved,
            flops: s.cost.flops,
            est_time_s: s.cost.est_time_s,
            peak_memory_bytes: s.cost.peak_memory_bytes,
        },
    }
}

fn cost_dto(r: &ExplainReport) -> CostReport {
    CostReport {
        profile: r.profile.clone(),
        kernels: r.kernels as u64,
        bytes_moved: r.bytes_moved,
        flops: r.flops,
        est_time_s: r.est_time_s,
        kernel_costs: r
            .kernel_costs
            .iter()
            .map(|k| KernelCostDto {
                name: k.cost.name.clone(),
                op: k.cost.op.to_string(),
                fusion_kind: k.cost.fusion_kind.map(|f| f.hlo_name().to_string()),
                bytes_read: k.cost.bytes_read,
                bytes_written: k.cost.bytes_written,
                flops: k.cost.flops,
                intensity: k.intensity,
                memory_bound: k.memory_bound,
                est_time_s: k.cost.time_s,
            })
            .collect(),
    }
}

fn plan_dto(plan: &hloscope_core::kernel::KernelPlan) -> Vec<PlanKernel> {
    let buffer = |b: &hloscope_core::kernel::BufferId| {
        let buf = &plan.buffers[*b];
        format!("{}: {}", buf.name, buf.shape)
    };
    plan.kernels
        .iter()
        .map(|k| PlanKernel {
            name: k.name.clone(),
            kind: k.kind.to_string(),
            inputs: k.inputs.iter().map(buffer).collect(),
            outputs: k.outputs.iter().map(buffer).collect(),
        })
        .collect()
}

/// Every kernel the CPU target compiled, with how it runs and its listings.
fn cpu_code(exe: &cpu::CpuExecutable) -> TargetCode {
    TargetCode {
        target: "cpu".into(),
        kernels: exe
            .plan()
            .kernels
            .iter()
            .enumerate()
            .map(|(i, k)| KernelCode {
                name: k.name.clone(),
                kind: k.kind.to_string(),
                summary: exe.code_summary(i).to_string(),
                clif: exe.clif(i).map(str::to_string),
                asm: exe.asm(i).map(str::to_string),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hloscope_core::ir::{Data, ElementType, Shape};

    fn f32s(v: &[f64]) -> Literal {
        Literal::new(Shape::new(ElementType::F32, [v.len() as i64]), Data::F(v.to_vec()))
    }

    #[test]
    fn the_api_reports_the_cores_check() {
        let c = check_outputs(&[f32s(&[1.0, 2.5])], &[f32s(&[1.0, 2.0])]);
        assert_eq!(c.reference, "interp");
        assert!(!c.passed);
        let o = &c.outputs[0];
        assert_eq!((o.index, o.passed, o.mismatches, o.max_abs_error), (0, false, 1, 0.5));
        assert_eq!((o.atol, o.rtol), (1e-5 * 2.0, 1e-4));
    }
}
