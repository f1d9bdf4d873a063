//! The messages between the page and the compiler's Web Worker, as JSON.
//!
//! One file, compiled into both crates (the worker includes it with `#[path]`), so the
//! two sides cannot drift. The worker is a session: a [`Request::Compile`] runs the
//! pipeline and keeps every snapshot, laid out; a [`Request::View`] asks for one pass of
//! the last compile (its graph, its diff against any other pass, its decisions) without
//! compiling again. Only the pass on screen crosses the channel, so a large module's
//! fifteen graphs are never serialized at once.
//!
//! A message is its JSON text, or the pair `[JSON text, Uint8Array]` when it carries a
//! file: a [`Request::Input`] carries the `.npy` file picked for a parameter, the answer
//! to a [`Request::OutputNpy`] carries the output's `.npy` file. Files travel beside the
//! JSON as raw bytes, not in it: postMessage copies an ArrayBuffer with one memcpy (the
//! worker's answer transfers it without a copy), where base64 in the JSON would add a
//! third to every megabyte and an encode and a decode, and a JSON array of numbers about
//! four times the bytes and a parse. An input crosses once, when it is picked; the worker
//! keeps it (across compiles, re-checked against each compile's parameters), so a run
//! sends none. The worker keeps the last run's outputs too, and sends one only when it is
//! downloaded.

use serde::{Deserialize, Serialize};

/// `id` comes back in the answer so the page can drop answers it has superseded.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Request {
    /// Compile `source` (StableHLO or HLO text) as `config` says and show `view` of it.
    Compile {
        id: u32,
        source: String,
        view: ViewSpec,
        #[serde(default)]
        config: CompileConfig,
    },
    /// Show another view of the last compile.
    View { id: u32, view: ViewSpec },
    /// Run the last compile's module on `inputs` on `target`: `browser-cpu` (the
    /// WebAssembly kernels) or `browser-webgpu` (the WGSL kernels on the worker's
    /// `navigator.gpu`); with `unfused`, the same pipeline with fusion off too.
    Run {
        id: u32,
        inputs: RunInputs,
        #[serde(default = "browser_cpu")]
        target: String,
        #[serde(default)]
        unfused: bool,
    },
    /// Keep the file `name` (the message's bytes) as parameter `param`'s input, or with
    /// no `name`, forget that parameter's file; answered with [`Outcome::Inputs`].
    Input { id: u32, param: u32, name: Option<String> },
    /// The last run's output `output` as an `.npy` file: [`Outcome::Npy`], the file
    /// attached.
    OutputNpy { id: u32, output: u32 },
    /// The kernels pane: the compiled module's kernels on `machine` (`x86-64-v3`,
    /// `aarch64`: CLIF and machine code; `webgpu`: WGSL) and the code of kernel `kernel`
    /// (its plan index; the first compiled one when absent).
    Kernels { id: u32, machine: String, kernel: Option<usize> },
}

fn browser_cpu() -> String {
    "browser-cpu".into()
}

/// Where a run's inputs come from (as `POST /api/run`'s `inputs`: `{"random": {"seed":
/// 3}}`, or the files).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunInputs {
    /// `hloscope_core::interp::random_inputs` from `seed`: the same inputs as the
    /// server's and `hloscope run --random-inputs --seed` for the same seed.
    Random { seed: u64 },
    /// The `.npy` files kept by [`Request::Input`], one per parameter.
    Files,
}

impl Request {
    pub fn id(&self) -> u32 {
        match self {
            Request::Compile { id, .. }
            | Request::View { id, .. }
            | Request::Run { id, .. }
            | Request::Input { id, .. }
            | Request::OutputNpy { id, .. }
            | Request::Kernels { id, .. } => *id,
        }
    }
}

/// How to compile: the fusion lab's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompileConfig {
    /// A pipeline spec, as `hloscope compile --pipeline` takes it (`default`,
    /// `default,-cse`, `inline,simplify{max_rounds=4},dce,fusion`).
    pub pipeline: String,
    /// Fusion knobs, as `--fusion` takes them (`off`, `no-multi-output`, `max-size=8`,
    /// `never=PRODUCER:CONSUMER`, ...).
    pub fusion: String,
    /// The hardware profile the cost is estimated for: a built-in one's name, or
    /// [`SERVER_PROFILE`] for `measured`'s numbers.
    pub profile: String,
    /// The server's CPU as `GET /api/profile` measured it, when the page has it.
    #[serde(default)]
    pub measured: Option<ProfileView>,
}

/// The profile name of the server's measured CPU (`GET /api/profile`).
pub const SERVER_PROFILE: &str = "server";

impl Default for CompileConfig {
    fn default() -> Self {
        CompileConfig { pipeline: "default".into(), fusion: String::new(), profile: "h100".into(), measured: None }
    }
}

impl CompileConfig {
    /// Whether this is the default pipeline with the default fusion (cost profile aside).
    pub fn is_default_pipeline(&self) -> bool {
        let d = CompileConfig::default();
        self.pipeline.trim() == d.pipeline && self.fusion.trim().is_empty()
    }
}

/// Which pass to show, and how.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ViewSpec {
    /// The pass by name (`input` for the input); the fusion pass, else the last, when
    /// absent or unknown.
    pub pass: Option<String>,
    /// The pass to diff against by name; the previous pass when absent or unknown.
    pub against: Option<String>,
    /// Draw the graph diff: nodes coloured added / removed / changed / fused against
    /// `against`, removed nodes drawn too.
    pub graph_diff: bool,
    /// Fusion clusters whose collapsed state is the opposite of the default (collapsed
    /// when the graph is large, [`COLLAPSE_ABOVE`] nodes, else expanded).
    pub toggled: Vec<String>,
}

/// A graph with more nodes than this starts with its fusion clusters collapsed.
pub const COLLAPSE_ABOVE: usize = 400;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Response {
    pub id: u32,
    /// Milliseconds the worker spent: parse and pipeline (0 for a view), then layouts
    /// and diffs.
    pub compile_ms: f64,
    pub layout_ms: f64,
    pub result: Outcome,
}

/// What `static/worker.js` posts instead of a [`Response`] when the compiler trapped (the
/// worker then closes itself and the page starts a new one).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Crash {
    pub id: u32,
    pub crash: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// A fresh compile: every pass's summary, the compiled module's cost, the view asked
    /// for, and the entry's parameters with the input files kept for them.
    Compiled {
        passes: Vec<PassSummary>,
        cost: Box<CostView>,
        view: Box<ViewParts>,
        #[serde(default)]
        params: Vec<ParamView>,
    },
    /// Another view of the same compile.
    Viewed { view: Box<ViewParts> },
    /// A run's results.
    /// A run, and with [`Request::Run`]'s `unfused` the same run with fusion off.
    Ran {
        run: Box<RunView>,
        #[serde(default)]
        unfused: Option<Box<RunView>>,
    },
    /// The kernels pane's listing.
    Kernels { listing: Box<KernelsView> },
    /// The parameters of the last compile with the files kept for them, after a
    /// [`Request::Input`] (None before a compile: a restarted worker gets the page's
    /// files again before it has compiled anything).
    Inputs { params: Option<Vec<ParamView>> },
    /// Output `output` of the last run, its `.npy` bytes attached to the message.
    Npy { output: u32 },
    /// Bad input (parse or verify error) or a failing pass; `line`/`col` are 1-based and
    /// 0 when the error has no position. `in_config`: the fusion lab's pipeline spec or
    /// knobs are wrong, not the text.
    Error {
        line: u32,
        col: u32,
        message: String,
        #[serde(default)]
        in_config: bool,
    },
}

/// A parameter of the entry computation, and the `.npy` file kept for it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamView {
    pub index: u32,
    /// Its name without the `%`.
    pub name: String,
    /// `f32[4,16]`.
    pub ty: String,
    /// What its file must hold, as NumPy says it: `float32 (4, 16)`; None for a tuple or
    /// token, which no file can hold.
    pub expects: Option<String>,
    pub file: Option<FileView>,
}

/// An input file the worker keeps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileView {
    pub name: String,
    pub bytes: u64,
    /// Why it does not fit its parameter (the parameter named, with what it expects and
    /// what the file holds); None when it fits.
    pub error: Option<String>,
}

/// One pipeline snapshot's row in the pass list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PassSummary {
    /// `input` for the first snapshot, else the pass's name.
    pub name: String,
    pub changed: bool,
    /// Instructions in the printed module (graph nodes, fused members included).
    pub insts: usize,
    pub kernels: usize,
    pub bytes_moved: u64,
    pub est_time_s: f64,
    /// Milliseconds the pass took in the worker (0 for the input).
    pub time_ms: f64,
    pub rewrites: usize,
    pub decisions: usize,
}

/// A [`PassView`] as sent: each part absent when it equals the part of the view sent
/// before it (messages arrive in order, so the page knows which that was). An edit that
/// changes nothing on screen costs a message of a few bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewParts {
    pub pass: usize,
    pub against: usize,
    pub diff: Option<Vec<DiffLine>>,
    pub decisions: Option<Vec<DecisionView>>,
    pub rewrites: Option<Vec<(String, String)>>,
    pub graph: Option<GraphView>,
}

impl ViewParts {
    /// `view` as sent after `last`.
    pub fn between(last: Option<&PassView>, view: &PassView) -> ViewParts {
        fn part<T: Clone + PartialEq>(last: Option<&T>, now: &T) -> Option<T> {
            (last != Some(now)).then(|| now.clone())
        }
        ViewParts {
            pass: view.pass,
            against: view.against,
            diff: part(last.map(|l| &l.diff), &view.diff),
            decisions: part(last.map(|l| &l.decisions), &view.decisions),
            rewrites: part(last.map(|l| &l.rewrites), &view.rewrites),
            graph: part(last.map(|l| &l.graph), &view.graph),
        }
    }

    /// The whole view, its absent parts taken from `last`, the view received before it
    /// (None when a part is absent but there is no `last`: a protocol error).
    pub fn complete(self, last: Option<&PassView>) -> Option<PassView> {
        Some(PassView {
            pass: self.pass,
            against: self.against,
            diff: self.diff.or_else(|| last.map(|l| l.diff.clone()))?,
            decisions: self.decisions.or_else(|| last.map(|l| l.decisions.clone()))?,
            rewrites: self.rewrites.or_else(|| last.map(|l| l.rewrites.clone()))?,
            graph: self.graph.or_else(|| last.map(|l| l.graph.clone()))?,
        })
    }
}

/// One pass, ready to draw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PassView {
    /// Indexes into the pass list: the pass shown, and the one its diffs are against.
    pub pass: usize,
    pub against: usize,
    /// Every line of both texts, in diff order (the page collapses unchanged runs).
    pub diff: Vec<DiffLine>,
    pub decisions: Vec<DecisionView>,
    /// Rewrites the pass applied: rule and instruction.
    pub rewrites: Vec<(String, String)>,
    pub graph: GraphView,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffKind {
    Same,
    Added,
    Removed,
}

/// A line of the text diff with its 1-based line numbers on each side (0: not there).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiffLine {
    pub kind: DiffKind,
    pub old: u32,
    pub new: u32,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionView {
    pub producer: String,
    pub consumer: String,
    pub taken: bool,
    pub rule: String,
    pub reason: String,
    pub bytes_saved: i64,
}

/// A laid-out graph: coordinates in SVG user units.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphView {
    pub width: f64,
    pub height: f64,
    pub nodes: Vec<NodeView>,
    pub edges: Vec<EdgeView>,
    pub clusters: Vec<ClusterView>,
}

/// How a node compares with the same id in the pass diffed against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeDiff {
    Same,
    Added,
    /// Only in the pass diffed against (drawn where that pass had it).
    Removed,
    /// Same id, other op, type or operands.
    Changed,
    /// Moved into a fusion (or into another one).
    Fused,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    /// Stable across passes: the instruction's name, prefixed with its fusion's for a
    /// fused member (`fusion.3/add.1`).
    pub id: String,
    pub name: String,
    pub op: String,
    /// `f32[4,16]`.
    pub ty: String,
    /// 1-based source line of the instruction (0: none).
    pub line: u32,
    pub loc: String,
    pub source: Option<String>,
    pub fusion_group: Option<String>,
    /// The instruction as the pass's HLO text prints it, attributes and all.
    pub hlo: String,
    /// Only in a graph diff.
    pub diff: Option<NodeDiff>,
    /// Where the node came from, as the compiler recorded it (`fused into fusion.3 by
    /// loop-fusion`), when the pass diffed against is the previous one.
    pub provenance: Vec<String>,
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EdgeView {
    pub from: String,
    pub to: String,
    pub shape: String,
    pub bytes: u64,
    /// Start and end points.
    pub x1: f64,
    pub y1: f64,
    pub x2: f64,
    pub y2: f64,
}

/// A fusion group drawn as a box around its members, or as one box when collapsed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterView {
    /// The fusion instruction's name, which is its kernel's name.
    pub name: String,
    pub members: usize,
    /// `loop`, `input` (a reduction), `output` (a library call's epilogue), ...
    pub kind: String,
    pub bytes_moved: u64,
    pub est_time_s: f64,
    pub collapsed: bool,
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// The compiled module's cost on the chosen hardware: kernel by kernel, in total, and the
/// same totals for the default pipeline (the fusion lab's comparison).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostView {
    pub profile: ProfileView,
    /// Every built-in profile's name, in the order the menu lists them.
    pub profiles: Vec<String>,
    pub kernels: Vec<KernelView>,
    pub totals: CostTotals,
    /// The default pipeline's totals (the same as `totals` when this is the default).
    pub default: CostTotals,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CostTotals {
    pub kernels: usize,
    pub bytes_moved: u64,
    pub flops: u64,
    pub est_time_s: f64,
}

/// One target of `GET /api/targets`: what the server runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// The name `POST /api/run` takes (`cpu`, `cuda`, ...).
    pub name: String,
    pub available: bool,
    /// What it is, or why it is not available.
    pub description: String,
}

/// `GET /api/targets`'s answer (the page reads its targets).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetsView {
    pub targets: Vec<TargetInfo>,
}

/// A hardware profile's roofs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileView {
    pub name: String,
    /// FLOP/s: f32 (and integers), f16/bf16 on tensor cores, f64.
    pub peak_f32: f64,
    pub peak_f16_tensor: f64,
    pub peak_f64: f64,
    /// Bytes per second.
    pub mem_bandwidth: f64,
    pub launch_overhead_s: f64,
}

/// One kernel as the cost model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelView {
    pub name: String,
    /// `fusion`, `dot`, `reduce`, ...
    pub op: String,
    /// For a fusion, its kind (`loop`, `input`, `output`).
    pub kind: String,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub flops: u64,
    /// FLOPs per byte moved.
    pub intensity: f64,
    /// `f32`, `f16_tensor` or `f64`: which peak its arithmetic runs at.
    pub class: String,
    /// The roofline estimate, launch overhead included.
    pub est_time_s: f64,
    pub memory_bound: bool,
}

/// A run's results, from the worker (`browser-cpu`) or the server (`POST /api/run`'s
/// answer has these fields, so the page reads both alike).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    pub target: String,
    /// What ran it, in words (a browser run on WebGPU: the adapter, how kernels were
    /// timed, how many ran on the device and how many on the host).
    #[serde(default)]
    pub device: String,
    pub outputs: Vec<OutputView>,
    #[serde(default)]
    pub compile_s: f64,
    pub iters: u32,
    pub run_median_s: f64,
    pub run_min_s: f64,
    /// Per kernel, median over the timed runs (none where the run is interpreted).
    #[serde(default)]
    pub kernels: Vec<KernelTimingView>,
    /// The outputs against the reference interpreter's.
    pub check: Option<CheckView>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputView {
    pub index: u32,
    pub dtype: String,
    pub shape: Vec<i64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    /// The first values in row-major order; NaN and infinities as null.
    pub first: Vec<Option<f64>>,
    /// The whole output as base64 `.npy` (a server run asked with `return_npy`; the
    /// worker keeps its outputs instead, see [`Request::OutputNpy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npy: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelTimingView {
    pub name: String,
    pub time_s: f64,
    pub bytes: u64,
    pub flops: u64,
    pub calls: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckView {
    /// What the outputs were compared with (`interp`).
    pub reference: String,
    pub passed: bool,
    pub outputs: Vec<OutputCheckView>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputCheckView {
    pub index: u32,
    pub passed: bool,
    pub max_abs_error: f64,
    pub mismatches: u64,
    pub atol: f64,
    pub rtol: f64,
}

/// The kernels pane: every kernel of the compiled module on one machine, and one
/// kernel's code (each listing is made once per compile and machine, in the worker).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelsView {
    pub machine: String,
    /// What `clif` holds: `clif` (with `asm` beside it) or `wgsl`.
    #[serde(default)]
    pub language: String,
    /// The machines code can be listed for.
    pub machines: Vec<String>,
    pub kernels: Vec<KernelRow>,
    /// The code of the kernel asked for.
    pub shown: Option<KernelCode>,
    /// Milliseconds the worker took to generate every kernel's code (0 when cached).
    pub codegen_ms: f64,
}

/// One kernel in the kernels pane's list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelRow {
    /// Its position in the plan (the order kernels run).
    pub index: usize,
    /// The instruction it implements (a fusion's name for each of its kernels).
    pub name: String,
    /// As the plan says it: `loop`, `reduction(row)`, `library(dot)`, ...
    pub kind: String,
    /// How it runs: `simd 4x4`, `simd 4x4 + native exp`, `scalar`, `gemm library call`, ...
    pub runs: String,
    pub code_bytes: usize,
}

/// One kernel's code.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelCode {
    pub index: usize,
    /// How it was vectorized or why not, what it strip-mined, why it is not compiled code.
    pub notes: Vec<String>,
    pub clif: String,
    /// Per line of `clif`: the HLO instruction it implements ("" when none is known).
    pub clif_hlo: Vec<String>,
    pub asm: String,
}
