//! The compiler in a Web Worker: parse, verify, run the default pipeline with a snapshot
//! after every pass and keep them ([`Session`]); then answer views of one pass at a time:
//! its graph laid out ([`layout`]), stable against the passes before it, its text diff
//! and graph diff against any other pass ([`diff`]), its fusion decisions.
//!
//! `static/worker.js` loads this module and calls [`handle`] with each request's JSON (and
//! the file a request carries); the answer is JSON too, and [`attachment`] the file an
//! answer carries (both shapes in `frontend/src/protocol.rs`). Runs interpret the compiled
//! module on random inputs or on the `.npy` files the page picked (kept here, checked
//! against every compile's parameters by `hloscope_core::npy::params`), and keep their
//! outputs for a download.

#[path = "../../src/protocol.rs"]
pub mod protocol;

#[path = "../../src/format.rs"]
pub mod format;

#[cfg(target_arch = "wasm32")]
mod cpu;
pub mod diff;
#[cfg(target_arch = "wasm32")]
mod gpu;
pub mod layout;

// The page's examples, for the test that compiles every one; the page's lookups are unused here.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../src/examples.rs"]
mod examples;

// The page's tours, for the test that every step's selection exists.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../src/tours.rs"]
mod tours;

use hloscope_core::api::FusionConfig;
use hloscope_core::api::{Provenance, Snapshot};
use hloscope_core::cost::{self, DtypeClass, Profile};
use hloscope_core::ir::{Literal, Module, Op, Value};
use hloscope_core::npy;
use hloscope_core::passes::pipeline::{parse_pipeline_spec, run_pipeline};
use hloscope_core::passes::pipeline::{run_pipeline_observed, PipelineConfig, PipelineError};
use hloscope_core::targets::cpu::listing::{self, KernelListing, Machine};
use layout::KernelInfo;
use protocol::{
    CompileConfig, CostTotals, CostView, DecisionView, FileView, GraphView, KernelView, Outcome, ParamView,
    PassSummary, PassView, ProfileView, Request, Response, RunInputs, ViewSpec,
};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use wasm_bindgen::prelude::*;

thread_local! {
    static WORKER: RefCell<Worker> = const {
        RefCell::new(Worker { session: None, sent: None, inputs: Vec::new(), outputs: Vec::new() })
    };
    /// The file the last answer carries, until `static/worker.js` takes it.
    static ATTACHMENT: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// What the worker keeps between requests: the last compile, the last view it sent (the
/// next view is sent as the parts that differ from it), the input files by parameter
/// (name and bytes; kept across compiles) and the last run's outputs.
#[derive(Default)]
pub struct Worker {
    session: Option<Session>,
    sent: Option<PassView>,
    inputs: Vec<Option<(String, Vec<u8>)>>,
    outputs: Vec<Literal>,
}

/// Answers one request (JSON of [`Request`], with the file it carries) with JSON of
/// [`Response`]; the file the answer carries waits in [`attachment`].
#[wasm_bindgen]
pub fn handle(request: &str, file: Option<Vec<u8>>) -> String {
    let (response, out) = match serde_json::from_str::<Request>(request) {
        Ok(req) => WORKER.with(|w| answer_with(&mut w.borrow_mut(), &req, file, now_ms)),
        Err(e) => (
            Response {
                id: 0,
                compile_ms: 0.0,
                layout_ms: 0.0,
                result: Outcome::Error { line: 0, col: 0, message: format!("bad request: {e}"), in_config: false },
            },
            None,
        ),
    };
    ATTACHMENT.with(|a| *a.borrow_mut() = out);
    serde_json::to_string(&response).unwrap_or_default()
}

/// [`handle`] for every request, as a promise: a `browser-webgpu` run awaits the
/// device (`static/worker.js` awaits each answer before it takes the next message).
#[wasm_bindgen]
pub async fn handle_async(request: String, file: Option<Vec<u8>>) -> String {
    #[cfg(target_arch = "wasm32")]
    if let Ok(Request::Run { id, inputs, target, unfused }) = serde_json::from_str::<Request>(&request) {
        if target == "browser-webgpu" {
            let t0 = now_ms();
            let result = run_on_webgpu(&inputs, unfused).await;
            ATTACHMENT.with(|a| *a.borrow_mut() = None);
            let response = Response { id, compile_ms: 0.0, layout_ms: now_ms() - t0, result };
            return serde_json::to_string(&response).unwrap_or_default();
        }
    }
    handle(&request, file)
}

/// A `browser-webgpu` run (and its unfused twin): jobs made from the session, then run
/// without it ([`gpu`]).
#[cfg(target_arch = "wasm32")]
async fn run_on_webgpu(inputs: &RunInputs, unfused: bool) -> Outcome {
    let jobs = WORKER.with(|w| {
        let w = w.borrow();
        let s = w.session.as_ref().ok_or_else(|| run_error("nothing compiled yet".into()))?;
        let fused = prepare_run(s, inputs, &w.inputs, false)?;
        let plain = if unfused { Some(prepare_run(s, inputs, &w.inputs, true)?) } else { None };
        Ok::<_, Outcome>((fused, plain))
    });
    let (fused, plain) = match jobs {
        Ok(jobs) => jobs,
        Err(e) => return e,
    };
    let failed = |what: &str, e: String| run_error(format!("browser-webgpu{what}: {e}"));
    let (run, outputs) = match gpu::run(fused, now_ms).await {
        Ok(done) => done,
        Err(e) => return failed("", e),
    };
    let unfused = match plain {
        Some(job) => match gpu::run(job, now_ms).await {
            Ok((view, _)) => Some(view),
            Err(e) => return failed(" (unfused)", e),
        },
        None => None,
    };
    WORKER.with(|w| w.borrow_mut().outputs = outputs);
    Outcome::Ran { run, unfused }
}

/// The file the last answer carries (an output's `.npy` bytes), once.
#[wasm_bindgen]
pub fn attachment() -> Option<Vec<u8>> {
    ATTACHMENT.with(|a| a.borrow_mut().take())
}

#[cfg(target_arch = "wasm32")]
fn now_ms() -> f64 {
    #[wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_namespace = performance, js_name = now)]
        fn performance_now() -> f64;
    }
    performance_now()
}

#[cfg(not(target_arch = "wasm32"))]
fn now_ms() -> f64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64() * 1e3).unwrap_or(0.0)
}

/// One compile's snapshots, and the layouts made of them so far.
pub struct Session {
    /// The module as written, and as the pipeline left it (what a run runs).
    input: Module,
    compiled: Module,
    /// How it was compiled (an unfused run compiles the input again, fusion off).
    config: CompileConfig,
    /// Which compile this is, counted from the worker's start (keys what a target
    /// made of it, such as the WebGPU pipelines).
    generation: u64,
    snaps: Vec<Snapshot>,
    summaries: Vec<PassSummary>,
    cost: CostView,
    /// Each fusion's kernel cost per pass, by fusion name (empty before fusion).
    kernels: Vec<Arc<HashMap<String, KernelInfo>>>,
    /// Layouts of passes `0..layouts.len()` for the clusters in `toggled`; each one
    /// seeded with the one before, so they are made in order.
    layouts: Vec<Arc<GraphView>>,
    toggled: Vec<String>,
    /// The compiled module's code listings, by machine, made when first asked for; and
    /// its WGSL.
    listings: HashMap<Machine, Arc<Vec<KernelListing>>>,
    wgsl: Option<Arc<Vec<KernelListing>>>,
}

/// The kernels pane's name for the WebGPU target's code (WGSL), beside the CPU's machines.
const WEBGPU: &str = "webgpu";

/// Every kernel of `module` as the WebGPU target compiles it: the WGSL of each kernel on
/// the device (its lines' HLO instructions from the emitter), and for each kernel on the
/// host why it is there.
fn wgsl_listing(module: &Module) -> Result<Vec<KernelListing>, String> {
    use hloscope_core::targets::webgpu;
    let program = webgpu::compile(module)?;
    Ok(program
        .plan
        .kernels
        .iter()
        .zip(&program.shaders)
        .enumerate()
        .map(|(index, (k, shader))| {
            let (runs, notes, source, lines) = match shader {
                Some(sh) => {
                    let (source, lines) = sh.text();
                    (sh.runs(), vec![sh.how()], source, lines)
                }
                None if !program.nested[index].is_empty() => {
                    let source = program.control_listing(index);
                    let lines = vec![String::new(); source.lines().count()];
                    (
                        "driven from the host, its programs on the device".to_string(),
                        vec![format!(
                            "{}: the host reads the condition or selector and runs the chosen program's kernels on the device",
                            k.kind
                        )],
                        source,
                        lines,
                    )
                }
                None => {
                    let why = match &k.kind {
                        hloscope_core::kernel::KernelKind::Opaque { reason } => reason.clone(),
                        other => other.to_string(),
                    };
                    (
                        "on the host (interpreter)".to_string(),
                        vec![format!("not on the device: {why}")],
                        String::new(),
                        Vec::new(),
                    )
                }
            };
            KernelListing {
                index,
                name: k.name.clone(),
                kind: k.kind.to_string(),
                runs,
                notes,
                code_bytes: 0,
                clif: source,
                clif_hlo: lines,
                asm: String::new(),
            }
        })
        .collect())
}

/// Answers `req`, which carries no file: a compile replaces the session, a view reads it;
/// `clock` gives milliseconds.
pub fn answer(worker: &mut Worker, req: &Request, clock: fn() -> f64) -> Response {
    answer_with(worker, req, None, clock).0
}

/// Answers `req` carrying `file`, with the file the answer carries.
pub fn answer_with(
    worker: &mut Worker,
    req: &Request,
    file: Option<Vec<u8>>,
    clock: fn() -> f64,
) -> (Response, Option<Vec<u8>>) {
    let session = &mut worker.session;
    let t0 = clock();
    let reply = |result| Response { id: req.id(), compile_ms: 0.0, layout_ms: clock() - t0, result };
    let (fresh, view) = match req {
        Request::Compile { source, view, config, .. } => match compile(source, config, clock) {
            Ok(s) => {
                *session = Some(s);
                (true, view)
            }
            Err(e) => return (Response { id: req.id(), compile_ms: clock() - t0, layout_ms: 0.0, result: *e }, None),
        },
        Request::View { view, .. } => (false, view),
        // A run reads the session and sends no view.
        Request::Run { inputs, target, unfused, .. } => {
            let result = match session.as_ref() {
                Some(s) => {
                    let run = |unfused| {
                        prepare_run(s, inputs, &worker.inputs, unfused).and_then(|job| run_on_cpu(&job, target, clock))
                    };
                    match run(false).and_then(|fused| Ok((fused, if *unfused { Some(run(true)?.0) } else { None }))) {
                        Ok(((run, outputs), unfused)) => {
                            worker.outputs = outputs;
                            Outcome::Ran { run, unfused }
                        }
                        Err(e) => e,
                    }
                }
                None => run_error("nothing compiled yet".into()),
            };
            return (reply(result), None);
        }
        Request::Input { param, name, .. } => return (reply(keep_input(worker, *param, name.as_deref(), file)), None),
        Request::OutputNpy { output, .. } => {
            let (result, bytes) = output_npy(&worker.outputs, *output);
            return (reply(result), bytes);
        }
        // So does the kernels pane.
        Request::Kernels { machine, kernel, .. } => {
            let result = match session.as_mut() {
                Some(s) => s.kernels_view(machine, *kernel, clock),
                None => Outcome::Error { line: 0, col: 0, message: "nothing compiled yet".into(), in_config: false },
            };
            return (reply(result), None);
        }
    };
    let t1 = clock();
    let Some(s) = session.as_mut() else {
        let result = Outcome::Error { line: 0, col: 0, message: "nothing compiled yet".into(), in_config: false };
        return (Response { id: req.id(), compile_ms: 0.0, layout_ms: 0.0, result }, None);
    };
    let full = s.view(view);
    let pass_view = Box::new(protocol::ViewParts::between(worker.sent.as_ref(), &full));
    worker.sent = Some(full);
    let result = if fresh {
        Outcome::Compiled {
            passes: s.summaries.clone(),
            cost: Box::new(s.cost.clone()),
            view: pass_view,
            params: params(&s.input, &worker.inputs),
        }
    } else {
        Outcome::Viewed { view: pass_view }
    };
    (Response { id: req.id(), compile_ms: t1 - t0, layout_ms: clock() - t1, result }, None)
}

/// Keeps `file` as parameter `param`'s input (or forgets it, without a `name`); the
/// parameters with their files, checked.
fn keep_input(worker: &mut Worker, param: u32, name: Option<&str>, file: Option<Vec<u8>>) -> Outcome {
    let slot = param as usize;
    let kept = match (name, file) {
        (Some(name), Some(bytes)) => Some((name.to_string(), bytes)),
        (Some(name), None) => {
            let message = format!("the file {name} did not come with its message");
            return Outcome::Error { line: 0, col: 0, message, in_config: false };
        }
        (None, _) => None,
    };
    if worker.inputs.len() <= slot {
        worker.inputs.resize(slot + 1, None);
    }
    worker.inputs[slot] = kept;
    Outcome::Inputs { params: worker.session.as_ref().map(|s| params(&s.input, &worker.inputs)) }
}

/// Output `output` of the last run as `.npy` bytes.
fn output_npy(outputs: &[Literal], output: u32) -> (Outcome, Option<Vec<u8>>) {
    match outputs.get(output as usize) {
        Some(l) => (Outcome::Npy { output }, Some(npy::write(&npy::NpyArray::from_literal(l)))),
        None => {
            let message = format!("the worker has no output {output} (it keeps the last browser run's): run again");
            (Outcome::Error { line: 0, col: 0, message, in_config: false }, None)
        }
    }
}

/// `module`'s entry parameters, each with the file kept for it checked against it (its
/// header and length only: this runs on every compile, and decoding waits for a run).
fn params(module: &Module, inputs: &[Option<(String, Vec<u8>)>]) -> Vec<ParamView> {
    let entry = module.entry_comp();
    (0..entry.params.len())
        .map(|i| {
            let inst = entry.inst(entry.params[i]);
            let file = inputs.get(i).and_then(Option::as_ref).map(|(name, bytes)| FileView {
                name: name.clone(),
                bytes: bytes.len() as u64,
                error: npy::params::check_param(module, i, name, bytes).err(),
            });
            ParamView {
                index: i as u32,
                name: inst.name.clone(),
                ty: inst.ty.to_string(),
                expects: npy::params::expected_npy(module, i),
                file,
            }
        })
        .collect()
}

fn error(line: u32, col: u32, message: String) -> Box<Outcome> {
    Box::new(Outcome::Error { line, col, message, in_config: false })
}

/// The fusion lab's settings are wrong (not the text).
fn config_error(message: String) -> Box<Outcome> {
    Box::new(Outcome::Error { line: 0, col: 0, message, in_config: true })
}

fn class_name(c: DtypeClass) -> &'static str {
    match c {
        DtypeClass::F32 => "f32",
        DtypeClass::F16Tensor => "f16_tensor",
        DtypeClass::F64 => "f64",
    }
}

fn totals(c: &cost::ModuleCost) -> CostTotals {
    CostTotals { kernels: c.kernel_count(), bytes_moved: c.bytes_moved, flops: c.flops, est_time_s: c.time_s }
}

/// `module`'s cost on `profile`, kernel by kernel; `default` the default pipeline's totals.
fn cost_view(module: &Module, profile: &Profile, default: Option<CostTotals>) -> CostView {
    let c = cost::module_cost(module, profile);
    let kernels = c
        .kernels
        .iter()
        .map(|k| KernelView {
            name: k.name.clone(),
            op: k.op.to_string(),
            kind: k.fusion_kind.map(|f| format!("{f:?}").to_lowercase()).unwrap_or_default(),
            bytes_read: k.bytes_read,
            bytes_written: k.bytes_written,
            flops: k.flops,
            intensity: k.intensity(),
            class: class_name(k.class).to_string(),
            est_time_s: k.time_s,
            memory_bound: k.memory_bound(profile),
        })
        .collect();
    let totals = totals(&c);
    CostView {
        profile: ProfileView {
            name: profile.name.to_string(),
            peak_f32: profile.peak_f32,
            peak_f16_tensor: profile.peak_f16_tensor,
            peak_f64: profile.peak_f64,
            mem_bandwidth: profile.mem_bandwidth,
            launch_overhead_s: profile.launch_overhead_s,
        },
        profiles: cost::profiles::all().iter().map(|p| p.name.to_string()).collect(),
        kernels,
        default: default.unwrap_or_else(|| totals.clone()),
        totals,
    }
}

/// Each fusion's kernel in `module` as the cost model sees it.
fn fusion_kernels(module: &Module, config: &PipelineConfig) -> HashMap<String, KernelInfo> {
    let entry = module.entry_comp();
    if !entry.order.iter().any(|&i| matches!(entry.inst(i).op, Op::Fusion { .. })) {
        return HashMap::new();
    }
    hloscope_core::cost::module_cost(module, &config.profile)
        .kernels
        .into_iter()
        .filter_map(|k| {
            let kind = format!("{:?}", k.fusion_kind?).to_lowercase();
            Some((k.name.clone(), KernelInfo { kind, bytes_moved: k.bytes(), est_time_s: k.time_s }))
        })
        .collect()
}

/// Parse, verify and run the pipeline `config` asks for; an error carries its position
/// (or says the config is wrong).
/// The hardware profile `config` names: a built-in one, or the server's measured CPU
/// with the numbers the page sent.
fn profile_of(config: &CompileConfig) -> Result<Profile, Box<Outcome>> {
    if config.profile == protocol::SERVER_PROFILE {
        let m = config.measured.as_ref().ok_or_else(|| {
            config_error("the server's measured profile has not come (it needs the hloscope server)".into())
        })?;
        let numbers = [m.peak_f32, m.peak_f16_tensor, m.peak_f64, m.mem_bandwidth, m.launch_overhead_s];
        if numbers.iter().any(|v| !v.is_finite() || *v < 0.0) || m.mem_bandwidth == 0.0 || m.peak_f32 == 0.0 {
            return Err(config_error(format!("the server's measured profile is not usable: {m:?}")));
        }
        let (f32, f16, f64, bw, launch) = (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4]);
        return Ok(Profile::measured(m.name.clone(), f32, f16, f64, bw, launch));
    }
    cost::profiles::by_name(&config.profile).ok_or_else(|| {
        let known: Vec<String> = cost::profiles::all().iter().map(|p| p.name.to_string()).collect();
        config_error(format!("unknown hardware profile `{}` (known: {})", config.profile, known.join(", ")))
    })
}

fn compile(source: &str, config: &CompileConfig, clock: fn() -> f64) -> Result<Session, Box<Outcome>> {
    let passes = parse_pipeline_spec(&config.pipeline).map_err(|e| config_error(e.to_string()))?;
    let fusion = FusionConfig::from_spec(&config.fusion).map_err(config_error)?;
    let profile = profile_of(config)?;
    let mut module = hloscope_core::parse::parse_module(source).map_err(|e| error(e.line, e.col, e.message))?;
    hloscope_core::verify::verify(&module)
        .map_err(|e| error(e.loc.line, e.loc.col, format!("invalid module: {}", e.message)))?;
    let input = module.clone();
    let pipeline_error = |e: PipelineError| match e {
        PipelineError::Limit(l) => error(l.loc.line, l.loc.col, l.message),
        other => error(0, 0, other.to_string()),
    };
    // The fusion lab compares with the default pipeline: its totals, without snapshots.
    let default = if config.is_default_pipeline() {
        None
    } else {
        let mut m = module.clone();
        let plain = PipelineConfig { snapshots: false, profile: profile.clone(), ..PipelineConfig::default() };
        run_pipeline(&mut m, &plain).map_err(pipeline_error)?;
        Some(totals(&cost::module_cost(&m, &profile)))
    };
    let pipeline =
        PipelineConfig { passes, fusion, profile, snapshots: true, clock: Some(clock), ..PipelineConfig::default() };
    let mut kernels = vec![Arc::new(HashMap::new())];
    let snaps = run_pipeline_observed(&mut module, &pipeline, &mut |_, m| {
        kernels.push(Arc::new(fusion_kernels(m, &pipeline)));
    })
    .map_err(pipeline_error)?;
    let summaries = snaps
        .iter()
        .map(|s| PassSummary {
            name: s.pass.clone(),
            changed: s.changed,
            insts: s.graph.nodes.len(),
            kernels: s.cost.kernels,
            bytes_moved: s.cost.bytes_moved,
            est_time_s: s.cost.est_time_s,
            time_ms: s.time_ms,
            rewrites: s.rewrites.len(),
            decisions: s.decisions.len(),
        })
        .collect();
    let cost = cost_view(&module, &pipeline.profile, default);
    thread_local! {
        static COMPILES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    let generation = COMPILES.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    Ok(Session {
        input,
        compiled: module,
        config: config.clone(),
        generation,
        snaps,
        summaries,
        cost,
        kernels,
        layouts: Vec::new(),
        toggled: Vec::new(),
        listings: HashMap::new(),
        wgsl: None,
    })
}

impl Session {
    /// The kernels pane for `machine`: every kernel of the compiled module, and the code
    /// of kernel `shown` (the first with code when `None`).
    fn kernels_view(&mut self, machine: &str, shown: Option<usize>, clock: fn() -> f64) -> Outcome {
        let failed = |message: String| Outcome::Error { line: 0, col: 0, message, in_config: false };
        let t0 = clock();
        let (name, language, listing) = if machine == WEBGPU {
            let listing = match &self.wgsl {
                Some(l) => Arc::clone(l),
                None => match wgsl_listing(&self.compiled) {
                    Ok(l) => Arc::clone(self.wgsl.insert(Arc::new(l))),
                    Err(e) => return failed(format!("cannot generate WGSL: {e}")),
                },
            };
            (WEBGPU.to_string(), "wgsl", listing)
        } else {
            let Ok(m) = Machine::parse(machine) else {
                let known: Vec<&str> = Machine::ALL.iter().map(|m| m.name()).chain([WEBGPU]).collect();
                return failed(format!("unknown machine `{machine}` (known: {})", known.join(", ")));
            };
            let listing = match self.listings.get(&m) {
                Some(l) => Arc::clone(l),
                None => match listing::list(&self.compiled, m) {
                    Ok(l) => Arc::clone(self.listings.entry(m).or_insert(Arc::new(l))),
                    Err(e) => return failed(format!("cannot generate code for {machine}: {e}")),
                },
            };
            (m.name().to_string(), "clif", listing)
        };
        let codegen_ms = clock() - t0;
        let kernels = listing
            .iter()
            .map(|k| protocol::KernelRow {
                index: k.index,
                name: k.name.clone(),
                kind: k.kind.clone(),
                runs: k.runs.clone(),
                code_bytes: k.code_bytes,
            })
            .collect();
        let chosen = shown.and_then(|i| listing.get(i)).or_else(|| listing.iter().find(|k| !k.clif.is_empty()));
        let shown = chosen.or(listing.first()).map(|k| protocol::KernelCode {
            index: k.index,
            notes: k.notes.clone(),
            clif: k.clif.clone(),
            clif_hlo: k.clif_hlo.clone(),
            asm: k.asm.clone(),
        });
        let machines = Machine::ALL.iter().map(|m| m.name().to_string()).chain([WEBGPU.to_string()]).collect();
        let view =
            protocol::KernelsView { machine: name, language: language.into(), machines, kernels, shown, codegen_ms };
        Outcome::Kernels { listing: Box::new(view) }
    }

    /// The index of the pass `name`, or the fusion pass, or the last.
    fn find(&self, name: Option<&str>) -> usize {
        let by = |n: &str| self.snaps.iter().position(|s| s.pass == n);
        name.and_then(by).or_else(|| by("fusion")).unwrap_or(self.snaps.len() - 1)
    }

    /// The clusters drawn collapsed in pass `i`.
    fn collapsed(&self, i: usize) -> HashSet<String> {
        let graph = &self.snaps[i].graph;
        let by_default = graph.nodes.len() > protocol::COLLAPSE_ABOVE;
        let groups: HashSet<&str> = graph.nodes.iter().filter_map(|n| n.fusion_group.as_deref()).collect();
        groups.into_iter().filter(|g| by_default != self.toggled.iter().any(|t| t == g)).map(str::to_string).collect()
    }

    /// Pass `i`'s layout, making the ones before it first (each is seeded with the last).
    fn layout(&mut self, i: usize, toggled: &[String]) -> Arc<GraphView> {
        if self.toggled != toggled {
            self.toggled = toggled.to_vec();
            self.layouts.clear();
        }
        while self.layouts.len() <= i {
            let k = self.layouts.len();
            let next = match self.layouts.last() {
                // A pass that changed nothing has its predecessor's graph.
                Some(prev) if !self.snaps[k].changed => Arc::clone(prev),
                prev => {
                    let collapsed = self.collapsed(k);
                    let opts = layout::Options {
                        collapsed: Some(&collapsed),
                        previous: prev.map(|p| &**p),
                        kernels: Some(&self.kernels[k]),
                    };
                    Arc::new(layout::layout(&self.snaps[k].graph, opts))
                }
            };
            self.layouts.push(next);
        }
        Arc::clone(&self.layouts[i])
    }

    /// What the page draws for `spec`.
    pub fn view(&mut self, spec: &ViewSpec) -> PassView {
        let pass = self.find(spec.pass.as_deref());
        let against = match spec.against.as_deref() {
            Some(name) => self.snaps.iter().position(|s| s.pass == name).unwrap_or(pass.saturating_sub(1)),
            None => pass.saturating_sub(1),
        };
        let (a, b) = (&self.snaps[against], &self.snaps[pass]);
        let text_diff = diff::text_diff(&a.text, &b.text);
        let decisions = b
            .decisions
            .iter()
            .map(|d| DecisionView {
                producer: d.producer.clone(),
                consumer: d.consumer.clone(),
                taken: d.taken,
                rule: d.rule.to_string(),
                reason: d.reason.clone(),
                bytes_saved: d.bytes_saved,
            })
            .collect();
        let rewrites = b.rewrites.iter().map(|r| (r.rule.to_string(), r.inst.clone())).collect();
        let graph = if spec.graph_diff && against != pass {
            let (old, new) = (Arc::clone(&a.graph), Arc::clone(&b.graph));
            let old_layout = self.layout(against, &spec.toggled);
            let new_layout = self.layout(pass, &spec.toggled);
            let collapsed = self.collapsed(pass);
            diff::graph_diff(&old, &new, &old_layout, &new_layout, &collapsed, &self.kernels[pass])
        } else {
            (*self.layout(pass, &spec.toggled)).clone()
        };
        let mut graph = graph;
        // Each node's line of HLO text (a removed node's from the pass it was removed from).
        let (new_lines, old_lines) =
            (instruction_lines(&self.snaps[pass].text), instruction_lines(&self.snaps[against].text));
        for n in &mut graph.nodes {
            if let Some(line) = new_lines.get(n.name.as_str()).or_else(|| old_lines.get(n.name.as_str())) {
                n.hlo = line.to_string();
            }
        }
        if against + 1 == pass {
            let notes = provenance_notes(&self.snaps[pass].provenance);
            for n in &mut graph.nodes {
                if let Some(p) = notes.get(n.id.as_str()) {
                    n.provenance = p.clone();
                }
            }
        }
        PassView { pass, against, diff: text_diff, decisions, rewrites, graph }
    }
}

/// Loop iterations a run in the browser may take before it gives up (the worker is busy
/// until it does: a runaway `while` must not keep it for minutes).
const MAX_LOOP_ITERATIONS: u64 = 1_000_000;

/// What a run runs, made from the session before anything is awaited (a WebGPU run
/// must not hold the session across its awaits): the arguments, the module to run (the
/// compiled one, or with `unfused` the module as written through the same pipeline with
/// fusion off) and the interpreter's outputs on the module as written, which every run
/// is checked against: the passes and the target must not change what it computes.
pub struct RunJob {
    args: Vec<Value>,
    module: Module,
    want: Vec<Literal>,
    unfused: bool,
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    generation: u64,
}

fn run_error(message: String) -> Outcome {
    Outcome::Error { line: 0, col: 0, message, in_config: false }
}

fn prepare_run(
    s: &Session,
    inputs: &RunInputs,
    files: &[Option<(String, Vec<u8>)>],
    unfused: bool,
) -> Result<RunJob, Outcome> {
    use hloscope_core::interp::random_inputs;
    let args = match inputs {
        RunInputs::Random { seed } => random_inputs(&s.input, *seed),
        RunInputs::Files => file_inputs(&s.input, files).map_err(run_error)?,
    };
    let module = if unfused {
        let passes = parse_pipeline_spec(&s.config.pipeline).map_err(|e| run_error(e.to_string()))?;
        let fusion = FusionConfig::from_spec("off").map_err(run_error)?;
        let mut m = s.input.clone();
        let config = PipelineConfig { passes, fusion, snapshots: false, ..PipelineConfig::default() };
        run_pipeline(&mut m, &config).map_err(|e| run_error(format!("compiling unfused: {e}")))?;
        m
    } else {
        s.compiled.clone()
    };
    let want = interpret(&s.input, &args, "input")?;
    Ok(RunJob { args, module, want, unfused, generation: s.generation })
}

/// The module on the reference interpreter, its outputs flattened; a failure has the
/// instruction's position.
fn interpret(m: &Module, args: &[Value], what: &str) -> Result<Vec<Literal>, Outcome> {
    use hloscope_core::interp::Interpreter;
    let mut i = Interpreter::new(m);
    i.max_loop_iterations = MAX_LOOP_ITERATIONS;
    i.run(args).map(|v| v.flatten()).map_err(|e| {
        let message = format!("running the {what} module failed at %{} ({}): {}", e.inst, e.loc, e.message);
        Outcome::Error { line: e.loc.line, col: e.loc.col, message, in_config: false }
    })
}

/// A `browser-cpu` run: in the browser, the compiled module's WebAssembly kernels
/// ([`cpu`]). The outputs come back too, for a download.
fn run_on_cpu(
    job: &RunJob,
    target: &str,
    clock: fn() -> f64,
) -> Result<(Box<protocol::RunView>, Vec<Literal>), Outcome> {
    if target != "browser-cpu" {
        return Err(run_error(format!("the worker runs on browser-cpu and browser-webgpu, not `{target}`")));
    }
    #[cfg(target_arch = "wasm32")]
    return cpu::run(job, clock).map_err(|e| run_error(format!("browser-cpu: {e}")));
    #[cfg(not(target_arch = "wasm32"))]
    run_interpreted(job, clock)
}

/// Natively (this crate's unit tests, which have no browser engine), `browser-cpu` is
/// the interpreter on the job's module. A worker's clock ticks in tenths of a
/// millisecond, so each timed run is the mean of a batch of runs that takes about 2 ms;
/// five batches, or fewer past a fifth of a second.
#[cfg(not(target_arch = "wasm32"))]
fn run_interpreted(job: &RunJob, clock: fn() -> f64) -> Result<(Box<protocol::RunView>, Vec<Literal>), Outcome> {
    let what = if job.unfused { "unfused" } else { "compiled" };
    let started = clock();
    let got = interpret(&job.module, &job.args, what)?;
    let once_ms = (clock() - started).max(0.01);
    let batch = ((2.0 / once_ms).ceil() as usize).clamp(1, 1000);
    let mut runs_s = Vec::new();
    while runs_s.len() < 5 && (runs_s.is_empty() || clock() - started < 200.0) {
        let t0 = clock();
        for _ in 0..batch {
            interpret(&job.module, &job.args, what)?;
        }
        runs_s.push((clock() - t0) / 1e3 / batch as f64);
    }
    let timing = RunTiming {
        target: "browser-cpu",
        device: format!("the reference interpreter in this page's worker, timed over batches of {batch} runs"),
        compile_s: 0.0,
        runs_s,
        kernels: Vec::new(),
    };
    Ok((run_view(job, &got, timing), got))
}

/// Per instruction (a fusion's kernels together), its median time over the timed runs,
/// with the cost model's bytes and FLOPs for it, in plan order.
#[cfg(target_arch = "wasm32")]
fn kernel_times(
    job: &RunJob,
    plan_kernels: &[hloscope_core::kernel::Kernel],
    per_kernel: &[Vec<f64>],
) -> Vec<protocol::KernelTimingView> {
    let costs = cost::module_cost(&job.module, &cost::profiles::all()[0]);
    let mut out: Vec<protocol::KernelTimingView> = Vec::new();
    for (k, times) in plan_kernels.iter().zip(per_kernel) {
        let mut sorted = times.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
        if let Some(row) = out.iter_mut().find(|r| r.name == k.name) {
            row.time_s += median;
            continue;
        }
        let cost = costs.kernels.iter().find(|c| c.name == k.name);
        out.push(protocol::KernelTimingView {
            name: k.name.clone(),
            time_s: median,
            bytes: cost.map_or(0, |c| c.bytes_read + c.bytes_written),
            flops: cost.map_or(0, |c| c.flops),
            calls: 1,
        });
    }
    out
}

/// How a run went, beside its outputs.
pub struct RunTiming {
    target: &'static str,
    device: String,
    compile_s: f64,
    /// Each timed run's total.
    runs_s: Vec<f64>,
    kernels: Vec<protocol::KernelTimingView>,
}

/// The run's view: a summary per output, checked against the interpreter's outputs.
fn run_view(job: &RunJob, got: &[Literal], timing: RunTiming) -> Box<protocol::RunView> {
    use hloscope_core::interp::check;
    let c = check::check_outputs(got, &job.want);
    let outputs = got
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let stats = check::stats(l, 16);
            protocol::OutputView {
                index: i as u32,
                dtype: l.elem().hlo_name().to_string(),
                shape: l.shape.dims.to_vec(),
                min: stats.min,
                max: stats.max,
                mean: stats.mean,
                first: stats.first,
                npy: None,
            }
        })
        .collect();
    let check = protocol::CheckView {
        reference: "interp".into(),
        passed: c.passed,
        outputs: c
            .outputs
            .iter()
            .map(|o| protocol::OutputCheckView {
                index: o.index as u32,
                passed: o.passed,
                max_abs_error: o.max_abs_error,
                mismatches: o.mismatches,
                atol: o.atol,
                rtol: o.rtol,
            })
            .collect(),
    };
    let mut runs = timing.runs_s;
    runs.sort_by(f64::total_cmp);
    Box::new(protocol::RunView {
        target: timing.target.into(),
        device: timing.device,
        outputs,
        compile_s: timing.compile_s,
        iters: runs.len() as u32,
        run_median_s: runs.get(runs.len() / 2).copied().unwrap_or(0.0),
        run_min_s: runs.first().copied().unwrap_or(0.0),
        kernels: timing.kernels,
        check: Some(check),
    })
}

/// The entry arguments from the kept files, one per parameter; a parameter without one,
/// or whose file does not fit, is named.
fn file_inputs(module: &Module, files: &[Option<(String, Vec<u8>)>]) -> Result<Vec<Value>, String> {
    (0..module.entry_comp().params.len())
        .map(|i| match files.get(i).and_then(Option::as_ref) {
            Some((name, bytes)) => npy::params::param_from_npy(module, i, name, bytes),
            None => Err(format!("{} has no .npy file: pick one", npy::params::describe_param(module, i))),
        })
        .collect()
}

/// Each instruction's line in HLO text (`%add.3 = f32[4]{0} add(...)`), by name.
fn instruction_lines(text: &str) -> HashMap<&str, &str> {
    text.lines()
        .filter_map(|line| {
            let t = line.trim_start();
            let t = t.strip_prefix("ROOT ").unwrap_or(t);
            let name = t.strip_prefix('%')?.split(' ').next()?;
            Some((name, t))
        })
        .collect()
}

/// What the compiler recorded about each node id a pass made or unmade, as sentences by
/// id (ids of either snapshot: a removed node is drawn in a graph diff).
fn provenance_notes(records: &[Provenance]) -> HashMap<String, Vec<String>> {
    let mut notes: HashMap<String, Vec<String>> = HashMap::new();
    let mut note = |id: String, text: String| notes.entry(id).or_default().push(text);
    for r in records {
        match r {
            Provenance::FusedInto { id, fusion, rule } => {
                note(format!("{fusion}/{id}"), format!("fused into {fusion} ({rule})"))
            }
            Provenance::ClonedFrom { id, original, rule } => note(id.clone(), format!("a copy of {original} ({rule})")),
            Provenance::ReplacedBy { id, by, rule } => {
                note(by.clone(), format!("read instead of {id} ({rule})"));
                note(id.clone(), format!("replaced by {by} ({rule})"));
            }
            Provenance::CreatedBy { id, rule } => note(id.clone(), format!("created by {rule}")),
            Provenance::Removed { id, rule } => note(id.clone(), format!("removed ({rule})")),
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::{DiffKind, NodeDiff};

    const MLP: &str = include_str!("../../../examples/mlp.mlir");

    fn clock() -> f64 {
        0.0
    }

    fn compile_view(source: &str, view: ViewSpec) -> (Worker, Response) {
        compile_with(source, view, CompileConfig::default())
    }

    fn compile_with(source: &str, view: ViewSpec, config: CompileConfig) -> (Worker, Response) {
        let mut worker = Worker::default();
        let r = answer(&mut worker, &Request::Compile { id: 7, source: source.into(), view, config }, clock);
        (worker, r)
    }

    /// The whole view in an answer that had no view before it.
    #[allow(clippy::boxed_local)] // as the answers hold it
    fn whole(parts: Box<protocol::ViewParts>) -> PassView {
        (*parts).complete(None).expect("a first view has every part")
    }

    #[test]
    fn the_mlp_compiles_into_passes_with_clusters() {
        let (_, r) = compile_view(MLP, ViewSpec::default());
        assert_eq!(r.id, 7);
        let Outcome::Compiled { passes, view, cost, .. } = r.result else { panic!("{:?}", r.result) };
        let view = whole(view);
        assert_eq!(passes[0].name, "input");
        // The cost: the last pass's kernels, one row each, their sum the total.
        assert_eq!(cost.kernels.len(), passes.last().unwrap().kernels);
        assert_eq!(cost.totals, cost.default);
        assert_eq!(cost.kernels.iter().map(|k| k.bytes_read + k.bytes_written).sum::<u64>(), cost.totals.bytes_moved);
        assert_eq!(cost.profile.name, "H100 SXM");
        // No pass named: the fusion pass, against the one before it.
        assert_eq!(passes[view.pass].name, "fusion");
        assert_eq!(view.against, view.pass - 1);
        assert!(passes[view.pass].changed && !view.graph.clusters.is_empty() && !view.decisions.is_empty());
        assert!(view.diff.iter().any(|l| l.kind == DiffKind::Added));
        assert!(view.diff.iter().any(|l| l.kind == DiffKind::Removed));
        for n in &view.graph.nodes {
            assert!(n.x >= 0.0 && n.x + n.w <= view.graph.width && n.y + n.h <= view.graph.height, "{n:?}");
        }
        // Each node carries its instruction's text.
        for n in &view.graph.nodes {
            assert!(n.hlo.starts_with(&format!("%{} = ", n.name)), "{n:?}");
        }
        let dot = view.graph.nodes.iter().find(|n| n.op == "dot").unwrap();
        assert!(dot.hlo.contains("lhs_contracting_dims="), "{}", dot.hlo);
        // Each cluster carries its kernel's cost.
        for c in &view.graph.clusters {
            assert!(["loop", "input", "output"].contains(&c.kind.as_str()) && c.bytes_moved > 0, "{c:?}");
        }
    }

    #[test]
    fn a_view_reads_the_session_without_compiling() {
        let (mut worker, first) = compile_view(MLP, ViewSpec::default());
        let Outcome::Compiled { view: first, .. } = first.result else { panic!() };
        let first = whole(first);
        let spec = ViewSpec { pass: Some("dce".into()), against: Some("input".into()), ..ViewSpec::default() };
        let r = answer(&mut worker, &Request::View { id: 8, view: spec.clone() }, clock);
        let Outcome::Viewed { view } = r.result else { panic!("{:?}", r.result) };
        let view = view.complete(Some(&first)).unwrap();
        // inline, simplify, transpose-folding, dot-strength-reduction, dot-merger,
        // constant-fold, cse, dce.
        assert_eq!((view.against, view.pass), (0, 8));
        // The same view again is sent as its indexes alone.
        let r = answer(&mut worker, &Request::View { id: 9, view: spec }, clock);
        let Outcome::Viewed { view: again } = r.result else { panic!() };
        assert!(again.graph.is_none() && again.diff.is_none() && again.decisions.is_none(), "{again:?}");
        assert_eq!(again.complete(Some(&view)).as_ref(), Some(&view));
        // The diff against the input holds every line of both texts once.
        let s = worker.session.as_ref().unwrap();
        let lines = |t: &str| t.lines().count();
        let old = view.diff.iter().filter(|l| l.kind != DiffKind::Added).count();
        let new = view.diff.iter().filter(|l| l.kind != DiffKind::Removed).count();
        assert_eq!((old, new), (lines(&s.snaps[0].text), lines(&s.snaps[8].text)));
    }

    #[test]
    fn the_graph_diff_of_fusion_colours_fused_and_added_nodes() {
        let spec = ViewSpec { pass: Some("fusion".into()), graph_diff: true, ..ViewSpec::default() };
        let (_, r) = compile_view(MLP, spec);
        let Outcome::Compiled { view, .. } = r.result else { panic!("{:?}", r.result) };
        let view = whole(view);
        let count = |d: NodeDiff| view.graph.nodes.iter().filter(|n| n.diff == Some(d)).count();
        // Every fused member was an instruction of the entry before; the fusions are new.
        assert!(count(NodeDiff::Fused) > 5, "{}", count(NodeDiff::Fused));
        assert!(count(NodeDiff::Added) >= view.graph.clusters.len());
        assert!(view.graph.nodes.iter().all(|n| n.diff.is_some()));
        // What the compiler recorded comes along: every fused node says where it went.
        for n in view.graph.nodes.iter().filter(|n| n.diff == Some(NodeDiff::Fused)) {
            let group = n.fusion_group.as_deref().unwrap();
            let fused = format!("fused into {group} (");
            let copied = "a copy of ";
            assert!(n.provenance.iter().any(|p| p.starts_with(&fused) || p.starts_with(copied)), "{n:?}");
        }
        for n in view.graph.nodes.iter().filter(|n| n.op == "fusion" && !n.id.contains('/')) {
            assert!(n.provenance.iter().any(|p| p.starts_with("created by ")), "{n:?}");
        }
    }

    #[test]
    fn the_lab_compares_fusion_off_with_the_default() {
        let config = CompileConfig { fusion: "off".into(), profile: "a100".into(), ..CompileConfig::default() };
        let (_, r) = compile_with(MLP, ViewSpec::default(), config);
        let Outcome::Compiled { cost, .. } = r.result else { panic!("{:?}", r.result) };
        assert!(cost.profile.name.starts_with("A100"), "{}", cost.profile.name);
        // Unfused: more kernels and more bytes than the default pipeline's.
        assert!(cost.totals.kernels > cost.default.kernels, "{:?} vs {:?}", cost.totals, cost.default);
        assert!(cost.totals.bytes_moved > cost.default.bytes_moved);
        assert!(cost.kernels.iter().all(|k| k.op != "fusion"));
        // A never-fuse override splits what the default fused.
        let (_, r) = compile_view(MLP, ViewSpec::default());
        let Outcome::Compiled { cost: default, .. } = r.result else { panic!() };
        let config = CompileConfig { fusion: "never=dot.5:add.8".into(), ..CompileConfig::default() };
        let (_, r) = compile_with(MLP, ViewSpec::default(), config);
        let Outcome::Compiled { cost: split, .. } = r.result else { panic!() };
        assert_eq!(split.default, default.totals);
        assert!(split.totals.kernels > default.totals.kernels, "{:?}", split.totals);
    }

    #[test]
    fn a_bad_pipeline_spec_or_knob_is_a_config_error() {
        for config in [
            CompileConfig { pipeline: "default,frobnicate".into(), ..CompileConfig::default() },
            CompileConfig { fusion: "max-size=many".into(), ..CompileConfig::default() },
            CompileConfig { profile: "abacus".into(), ..CompileConfig::default() },
        ] {
            let (worker, r) = compile_with(MLP, ViewSpec::default(), config.clone());
            let Outcome::Error { in_config: true, message, .. } = r.result else {
                panic!("{config:?}: {:?}", r.result)
            };
            assert!(
                message.contains("frobnicate") || message.contains("many") || message.contains("abacus"),
                "{message}"
            );
            assert!(worker.session.is_none());
        }
    }

    #[test]
    fn the_servers_measured_profile_prices_the_kernels_by_its_numbers() {
        let server = |bandwidth: f64| CompileConfig {
            profile: protocol::SERVER_PROFILE.into(),
            measured: Some(protocol::ProfileView {
                name: "server CPU (measured)".into(),
                peak_f32: 1e11,
                peak_f16_tensor: 1e11,
                peak_f64: 5e10,
                mem_bandwidth: bandwidth,
                launch_overhead_s: 0.0,
            }),
            ..CompileConfig::default()
        };
        let cost = |config: CompileConfig| match compile_with(MLP, ViewSpec::default(), config).1.result {
            Outcome::Compiled { cost, .. } => cost,
            other => panic!("{other:?}"),
        };
        let (slow, fast) = (cost(server(1e9)), cost(server(1e10)));
        assert_eq!(slow.profile.name, "server CPU (measured)");
        assert_eq!(slow.profile.mem_bandwidth, 1e9);
        // A memory-bound kernel on a tenth of the bandwidth: ten times the time.
        let k = slow.kernels.iter().position(|k| k.memory_bound).expect("a memory-bound kernel");
        let ratio = slow.kernels[k].est_time_s / fast.kernels[k].est_time_s;
        assert!((ratio - 10.0).abs() < 1e-6, "{ratio}");
        // Without the numbers, or with unusable ones, the lab says so.
        for config in [CompileConfig { measured: None, ..server(1e9) }, server(f64::NAN), server(-1.0)] {
            let r = compile_with(MLP, ViewSpec::default(), config).1;
            let Outcome::Error { in_config: true, message, .. } = r.result else { panic!("{:?}", r.result) };
            assert!(message.contains("server's measured profile"), "{message}");
        }
    }

    fn run_request(id: u32, inputs: RunInputs, unfused: bool) -> Request {
        Request::Run { id, inputs, target: "browser-cpu".into(), unfused }
    }

    #[test]
    fn an_unfused_run_beside_the_fused_one_computes_the_same_and_another_target_is_refused() {
        let (mut worker, _) = compile_view(MLP, ViewSpec::default());
        let r = answer(&mut worker, &run_request(5, RunInputs::Random { seed: 2 }, true), clock);
        let Outcome::Ran { run, unfused: Some(plain) } = r.result else { panic!("{:?}", r.result) };
        assert!(run.check.as_ref().unwrap().passed && plain.check.as_ref().unwrap().passed);
        assert_eq!((run.target.as_str(), plain.target.as_str()), ("browser-cpu", "browser-cpu"));
        assert_eq!(run.outputs[0].shape, plain.outputs[0].shape);
        for (a, b) in run.outputs[0].first.iter().zip(&plain.outputs[0].first) {
            assert!((a.unwrap() - b.unwrap()).abs() < 1e-6, "{a:?} {b:?}");
        }
        let server =
            Request::Run { id: 6, inputs: RunInputs::Random { seed: 2 }, target: "server-cpu".into(), unfused: false };
        let Outcome::Error { message, .. } = answer(&mut worker, &server, clock).result else { panic!() };
        assert!(message.contains("server-cpu"), "{message}");
    }

    #[test]
    fn a_browser_run_checks_the_compiled_module_against_the_input() {
        let (mut worker, _) = compile_view(MLP, ViewSpec::default());
        let r = answer(&mut worker, &run_request(9, RunInputs::Random { seed: 3 }, false), clock);
        let Outcome::Ran { run, .. } = r.result else { panic!("{:?}", r.result) };
        let check = run.check.unwrap();
        assert!(check.passed, "{check:?}");
        assert_eq!(run.outputs.len(), 1);
        // softmax rows: every value in (0, 1), each row summing to 1.
        let o = &run.outputs[0];
        assert_eq!((o.dtype.as_str(), o.shape.as_slice()), ("f32", &[4i64, 3][..]));
        assert!(o.min.unwrap() > 0.0 && o.max.unwrap() < 1.0);
        let first: f64 = o.first[..3].iter().map(|v| v.unwrap()).sum();
        assert!((first - 1.0).abs() < 1e-5, "{first}");
        // Another seed, other inputs, other outputs.
        let r = answer(&mut worker, &run_request(10, RunInputs::Random { seed: 4 }, false), clock);
        let Outcome::Ran { run: other, .. } = r.result else { panic!() };
        assert_ne!(other.outputs[0].first, o.first);
    }

    /// The `.npy` file of `l`.
    fn npy_file(l: &Literal) -> Vec<u8> {
        npy::write(&npy::NpyArray::from_literal(l))
    }

    /// Keeps `bytes` as parameter `param`'s file named `name`; the parameters as answered.
    fn keep(worker: &mut Worker, param: u32, name: &str, bytes: Vec<u8>) -> Vec<ParamView> {
        let req = Request::Input { id: 20 + param, param, name: Some(name.into()) };
        let (r, out) = answer_with(worker, &req, Some(bytes), clock);
        assert!(out.is_none());
        let Outcome::Inputs { params: Some(params) } = r.result else { panic!("{:?}", r.result) };
        params
    }

    #[test]
    fn a_run_on_npy_files_equals_the_interpreter_on_their_values_and_its_outputs_download() {
        let (mut worker, r) = compile_view(MLP, ViewSpec::default());
        let Outcome::Compiled { params, .. } = r.result else { panic!("{:?}", r.result) };
        // The entry's parameters, each with what its file must hold; no files yet.
        let shown: Vec<_> = params.iter().map(|p| (p.name.as_str(), p.ty.as_str(), p.expects.as_deref())).collect();
        assert_eq!(shown[0], ("Arg.0", "f32[4,8]", Some("float32 (4, 8)")), "{shown:?}");
        assert_eq!(shown.len(), 5);
        assert!(params.iter().all(|p| p.file.is_none()));
        // Values other than any seed's: 0.1·(i mod 17) − 0.8 per element.
        let input = hloscope_core::parse::parse_module(MLP).unwrap();
        let values: Vec<Literal> = input
            .entry_comp()
            .param_types()
            .iter()
            .map(|t| {
                let shape = t.as_array().unwrap().clone();
                let n = shape.num_elements();
                Literal::from_f64s(shape, &(0..n).map(|i| 0.1 * (i % 17) as f64 - 0.8).collect::<Vec<_>>())
            })
            .collect();
        for (i, v) in values.iter().enumerate() {
            let params = keep(&mut worker, i as u32, &format!("in{i}.npy"), npy_file(v));
            let file = params[i].file.as_ref().unwrap();
            assert_eq!((file.name.clone(), file.error.clone()), (format!("in{i}.npy"), None));
            assert_eq!(file.bytes as usize, npy_file(v).len());
        }
        let r = answer(&mut worker, &run_request(30, RunInputs::Files, false), clock);
        let Outcome::Ran { run, .. } = r.result else { panic!("{:?}", r.result) };
        assert!(run.check.as_ref().unwrap().passed, "{:?}", run.check);
        // The interpreter on the module as written, on the same values (what `hloscope run
        // --input` computes): the same summary, and the downloaded file holds the same bytes.
        let args: Vec<Value> = values.iter().cloned().map(Value::Array).collect();
        let want = hloscope_core::interp::Interpreter::new(&input).run(&args).unwrap().flatten();
        let stats = hloscope_core::interp::check::stats(&want[0], 16);
        let o = &run.outputs[0];
        assert_eq!((o.min, o.max, o.mean, &o.first), (stats.min, stats.max, stats.mean, &stats.first));
        let (r, file) = answer_with(&mut worker, &Request::OutputNpy { id: 31, output: 0 }, None, clock);
        assert!(matches!(r.result, Outcome::Npy { output: 0 }), "{:?}", r.result);
        assert_eq!(file.unwrap(), npy_file(&want[0]));
        // Output 1 does not exist; random inputs still run, and replace the outputs kept.
        let r = answer(&mut worker, &Request::OutputNpy { id: 32, output: 1 }, clock);
        let Outcome::Error { message, .. } = r.result else { panic!("{:?}", r.result) };
        assert!(message.contains("no output 1"), "{message}");
        let r = answer(&mut worker, &run_request(33, RunInputs::Random { seed: 1 }, false), clock);
        let Outcome::Ran { run: random, .. } = r.result else { panic!("{:?}", r.result) };
        assert_ne!(random.outputs[0].first, o.first);
        let (_, file) = answer_with(&mut worker, &Request::OutputNpy { id: 34, output: 0 }, None, clock);
        assert_ne!(file.unwrap(), npy_file(&want[0]));
    }

    #[test]
    fn a_file_that_does_not_fit_or_is_missing_names_its_parameter() {
        let (mut worker, _) = compile_view(MLP, ViewSpec::default());
        // No files at all: the first parameter is named.
        let r = answer(&mut worker, &run_request(1, RunInputs::Files, false), clock);
        let Outcome::Error { message, .. } = r.result else { panic!("{:?}", r.result) };
        assert_eq!(message, "parameter 0 (%Arg.0: f32[4,8]) has no .npy file: pick one");
        // A file of the wrong shape is marked at once, and a run names it.
        let wrong = Literal::zeros(hloscope_core::ir::Shape::new(hloscope_core::ir::ElementType::F32, vec![8, 4]));
        let params = keep(&mut worker, 0, "x.npy", npy_file(&wrong));
        let error = params[0].file.as_ref().unwrap().error.clone().unwrap();
        assert_eq!(
            error,
            "x.npy: parameter 0 (%Arg.0: f32[4,8]) expects shape (4, 8), but the file holds shape (8, 4)"
        );
        let r = answer(&mut worker, &run_request(2, RunInputs::Files, false), clock);
        let Outcome::Error { message, .. } = r.result else { panic!("{:?}", r.result) };
        assert_eq!(message, error);
        // Kept across compiles and checked against each: here a module whose %x is f32[8,4].
        let other = "func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {\n  %y = stablehlo.negate %x : tensor<8x4xf32>\n  return %y : tensor<8x4xf32>\n}\n";
        let r = answer(
            &mut worker,
            &Request::Compile {
                id: 3,
                source: other.into(),
                view: ViewSpec::default(),
                config: CompileConfig::default(),
            },
            clock,
        );
        let Outcome::Compiled { params, .. } = r.result else { panic!("{:?}", r.result) };
        assert_eq!(params.len(), 1);
        assert_eq!(params[0].file.as_ref().map(|f| f.error.clone()), Some(None));
        let r = answer(&mut worker, &run_request(4, RunInputs::Files, false), clock);
        let Outcome::Ran { run, .. } = r.result else { panic!("{:?}", r.result) };
        assert_eq!(run.outputs[0].first[0], Some(-0.0));
        // Forgotten, the parameter has no file again; a name without its bytes is refused.
        let r = answer(&mut worker, &Request::Input { id: 5, param: 0, name: None }, clock);
        let Outcome::Inputs { params: Some(params) } = r.result else { panic!("{:?}", r.result) };
        assert!(params[0].file.is_none());
        let r = answer(&mut worker, &Request::Input { id: 6, param: 0, name: Some("y.npy".into()) }, clock);
        let Outcome::Error { message, .. } = r.result else { panic!("{:?}", r.result) };
        assert!(message.contains("y.npy did not come"), "{message}");
        // Not an .npy file at all.
        let params = keep(&mut worker, 0, "notes.txt", b"hello".to_vec());
        let error = params[0].file.as_ref().unwrap().error.clone().unwrap();
        assert!(error.starts_with("notes.txt: not an .npy file"), "{error}");
    }

    #[test]
    fn kernels_pane_lists_each_kernel_and_shows_the_code_of_the_one_asked_for() {
        let ex = crate::examples::by_id("softmax").unwrap();
        let (mut worker, r) = compile_view(ex.source, ViewSpec::default());
        let Outcome::Compiled { cost, .. } = r.result else { panic!("{:?}", r.result) };
        let ask = |worker: &mut Worker, machine: &str, kernel: Option<usize>| {
            let req = Request::Kernels { id: 3, machine: machine.into(), kernel };
            match answer(worker, &req, clock).result {
                Outcome::Kernels { listing } => *listing,
                other => panic!("{other:?}"),
            }
        };
        let x86 = ask(&mut worker, "x86-64-v3", None);
        // One row per kernel the cost model counts (softmax: max, exp-and-sum, divide).
        assert_eq!(x86.kernels.len(), cost.kernels.len());
        let names: Vec<&str> = x86.kernels.iter().map(|k| k.name.as_str()).collect();
        for k in &cost.kernels {
            assert!(names.contains(&k.name.as_str()), "{} not in {names:?}", k.name);
        }
        assert!(x86.kernels.iter().all(|k| k.code_bytes > 0 && k.runs.starts_with("simd")), "{:?}", x86.kernels);
        let shown = x86.shown.unwrap();
        assert_eq!(shown.index, 0);
        assert!(shown.clif.starts_with("function") && shown.asm.contains("%xmm"), "{}", shown.asm);
        assert!(shown.notes[0].starts_with("vectorized:"), "{:?}", shown.notes);
        // Its lines link to the HLO instructions of the fusion it implements.
        assert_eq!(shown.clif_hlo.len(), shown.clif.lines().count());
        assert!(shown.clif_hlo.iter().any(|h| !h.is_empty()), "{:?}", shown.clif_hlo);
        // Another kernel on the other machine.
        let arm = ask(&mut worker, "aarch64", Some(2));
        let shown = arm.shown.unwrap();
        assert_eq!((arm.machine.as_str(), shown.index), ("aarch64", 2));
        assert!(shown.asm.contains(".4s"), "{}", shown.asm);
        let req = Request::Kernels { id: 4, machine: "riscv".into(), kernel: None };
        let Outcome::Error { message, .. } = answer(&mut worker, &req, clock).result else { panic!() };
        assert!(message.contains("x86-64-v3, aarch64, webgpu"), "{message}");
    }

    #[test]
    fn the_kernels_pane_says_which_kernels_run_an_earlier_kernels_code() {
        // The transformer block's two layer norms are the same code on different buffers.
        let ex = crate::examples::by_id("transformer_block").unwrap();
        let (mut worker, _) = compile_view(ex.source, ViewSpec::default());
        let req = Request::Kernels { id: 3, machine: "x86-64-v3".into(), kernel: None };
        let Outcome::Kernels { listing } = answer(&mut worker, &req, clock).result else { panic!() };
        let sharing: Vec<_> = listing.kernels.iter().filter(|k| k.runs.contains(", code of kernel ")).collect();
        assert!(!sharing.is_empty(), "{:?}", listing.kernels.iter().map(|k| &k.runs).collect::<Vec<_>>());
        for k in sharing {
            let first: usize =
                k.runs.rsplit(", code of kernel ").next().unwrap().split(' ').next().unwrap().parse().unwrap();
            let earlier = &listing.kernels[first];
            assert!(first < k.index && !earlier.runs.contains("code of"), "{} shares {}", k.runs, earlier.runs);
            assert_eq!(k.runs, format!("{}, code of kernel {first} ({})", earlier.runs, earlier.name));
        }
    }

    #[test]
    fn the_kernels_pane_shows_each_kernels_wgsl_with_its_lines_linked_to_the_fusion() {
        let ex = crate::examples::by_id("softmax").unwrap();
        let (mut worker, r) = compile_view(ex.source, ViewSpec::default());
        let Outcome::Compiled { cost, .. } = r.result else { panic!("{:?}", r.result) };
        let req = Request::Kernels { id: 3, machine: "webgpu".into(), kernel: Some(1) };
        let Outcome::Kernels { listing } = answer(&mut worker, &req, clock).result else { panic!() };
        assert_eq!((listing.machine.as_str(), listing.language.as_str()), ("webgpu", "wgsl"));
        assert!(listing.machines.contains(&"webgpu".to_string()));
        // The same kernels as the cost model counts, all on the device.
        assert_eq!(listing.kernels.len(), cost.kernels.len());
        assert!(listing.kernels.iter().all(|k| !k.runs.contains("host")), "{:?}", listing.kernels);
        let shown = listing.shown.unwrap();
        assert_eq!(shown.index, 1);
        assert!(shown.clif.contains("@compute @workgroup_size(64)") && shown.asm.is_empty(), "{}", shown.clif);
        // The lines binding a value link to the HLO instruction it implements: the
        // exp-and-sum kernel's exponential among them.
        assert_eq!(shown.clif_hlo.len(), shown.clif.lines().count());
        let (line, hlo) = shown
            .clif
            .lines()
            .zip(&shown.clif_hlo)
            .find(|(_, h)| h.starts_with("exp"))
            .unwrap_or_else(|| panic!("no line links to an exp: {:?}", shown.clif_hlo));
        assert!(line.trim_start().starts_with("let e"), "{line} ({hlo})");
        assert!(shown
            .clif
            .lines()
            .zip(&shown.clif_hlo)
            .all(|(l, h)| h.is_empty() || l.trim_start().starts_with("let e")));
    }

    #[test]
    fn every_tour_step_selects_what_exists_and_its_numbers_fill_in() {
        let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../tours")).unwrap().count();
        let tours = crate::tours::all();
        assert_eq!(tours.len(), files, "{} tours of {files} files parse", tours.len());
        // Every built-in example has exactly one tour (and every tour's example exists, below).
        for ex in crate::examples::EXAMPLES {
            let n = tours.iter().filter(|t| t.example == ex.id).count();
            assert_eq!(n, 1, "{}: {n} tours", ex.id);
        }
        for tour in tours {
            let ex =
                crate::examples::by_id(&tour.example).unwrap_or_else(|| panic!("{}: no such example", tour.example));
            let (mut worker, r) = compile_view(ex.source, ViewSpec::default());
            let Outcome::Compiled { passes, cost, .. } = r.result else { panic!("{}", tour.example) };
            assert!(tour.steps.len() >= 3, "{}", tour.example);
            for (i, step) in tour.steps.iter().enumerate() {
                let at = format!("{} step {}", tour.example, i + 1);
                let text =
                    crate::tours::fill(&step.text, &passes, &cost.profile.name).unwrap_or_else(|e| panic!("{at}: {e}"));
                assert!(!text.contains('{') && text.len() > 20, "{at}: {text}");
                // As the page's test reads it: this pass's kernel count, then "kernels".
                if step.text.contains(&format!("{{kernels@{}}}", step.pass)) {
                    let kernels = passes.iter().find(|p| p.name == step.pass).map_or(0, |p| p.kernels);
                    assert!(text.contains(&format!("{kernels} kernels")), "{at}: {text}");
                }
                let spec = ViewSpec { pass: Some(step.pass.clone()), ..ViewSpec::default() };
                let r = answer(&mut worker, &Request::View { id: 1, view: spec }, clock);
                let Outcome::Viewed { .. } = r.result else { panic!("{at}: {:?}", r.result) };
                let view = worker.sent.clone().unwrap();
                assert_eq!(passes[view.pass].name, step.pass, "{at}: no pass {}", step.pass);
                if let Some(node) = &step.node {
                    assert!(view.graph.nodes.iter().any(|n| n.id == *node), "{at}: no node {node} in {}", step.pass);
                }
                if let Some((p, c)) = &step.decision {
                    let found = view.decisions.iter().any(|d| d.producer == *p && d.consumer == *c);
                    assert!(found, "{at}: no decision {p} → {c} in {}", step.pass);
                }
            }
        }
    }

    #[test]
    fn every_example_compiles() {
        for ex in crate::examples::EXAMPLES {
            let (_, r) = compile_view(ex.source, ViewSpec::default());
            let Outcome::Compiled { passes, .. } = r.result else { panic!("{}: {:?}", ex.id, r.result) };
            assert!(passes.len() > 1, "{}", ex.id);
        }
    }

    #[test]
    fn a_syntax_error_has_its_position() {
        let bad = MLP.replacen("stablehlo.dot_general", "stablehlo.dot_generall", 1);
        let (worker, r) = compile_view(&bad, ViewSpec::default());
        let Outcome::Error { line, col, .. } = r.result else { panic!() };
        assert!(line > 0 && col > 0);
        assert!(worker.session.is_none());
    }

    #[test]
    fn a_large_graph_starts_collapsed_and_a_toggle_opens_one_cluster() {
        // 64 independent chains of elementwise ops and a reduction each: > 400 nodes.
        let mut src = String::from("func.func @main(%x: tensor<64x64xf32>) -> tensor<64xf32> {\n");
        src += "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n  %acc0 = stablehlo.constant dense<0.0> : tensor<64xf32>\n";
        for i in 0..64 {
            src += &format!("  %k{i} = stablehlo.constant dense<{i}.5> : tensor<64x64xf32>\n");
            src += &format!("  %a{i} = stablehlo.add %x, %k{i} : tensor<64x64xf32>\n");
            src += &format!("  %b{i} = stablehlo.multiply %a{i}, %x : tensor<64x64xf32>\n");
            src += &format!("  %c{i} = stablehlo.tanh %b{i} : tensor<64x64xf32>\n");
            src += &format!("  %r{i} = stablehlo.reduce(%c{i} init: %z) applies stablehlo.add across dimensions = [1] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>\n");
            src += &format!("  %d{i} = stablehlo.sine %r{i} : tensor<64xf32>\n");
            src += &format!("  %acc{} = stablehlo.add %acc{i}, %d{i} : tensor<64xf32>\n", i + 1);
        }
        src += "  return %acc64 : tensor<64xf32>\n}\n";
        let (mut worker, r) = compile_view(&src, ViewSpec::default());
        let Outcome::Compiled { passes, view, .. } = r.result else { panic!("{:?}", r.result) };
        let view = whole(view);
        assert!(passes[view.pass].insts > protocol::COLLAPSE_ABOVE, "{}", passes[view.pass].insts);
        assert!(!view.graph.clusters.is_empty() && view.graph.clusters.iter().all(|c| c.collapsed));
        let one = view.graph.clusters[0].name.clone();
        let spec = ViewSpec { toggled: vec![one.clone()], ..ViewSpec::default() };
        let r = answer(&mut worker, &Request::View { id: 9, view: spec }, clock);
        let Outcome::Viewed { view: open } = r.result else { panic!() };
        let open = open.complete(Some(&view)).unwrap();
        for c in &open.graph.clusters {
            assert_eq!(c.collapsed, c.name != one, "{}", c.name);
        }
        let members = open.graph.clusters.iter().find(|c| c.name == one).unwrap().members;
        assert_eq!(open.graph.nodes.len(), view.graph.nodes.len() + members);
    }
}
