//! The server's wire types: what `/api/*` takes and returns, as JSON.
//!
//! These are DTOs of their own, not the compiler's internal structs: the compiler can
//! rename a field or restructure a snapshot and only the conversions in `convert.rs`
//! change, never the web app. The OpenAPI document (`/api/openapi.json`) is generated
//! from these types and the handlers' annotations, so it cannot drift from them.

use serde::{Deserialize, Serialize};
use utoipa::{OpenApi, ToSchema};

/// Every error: a message for a person, a machine-readable kind, and where in the
/// source it is when it is about the source.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct ErrorBody {
    /// One sentence: what went wrong and why.
    pub error: String,
    /// `bad_request`, `invalid_module`, `resource_limit`, `time_limit`, `busy`,
    /// `not_found`, `too_large`, `worker_crashed` or `internal`.
    pub kind: String,
    /// 1-based line in `source`, when the error is about a place in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based column in `source`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub col: Option<u32>,
}

/// The text format of a module.
#[derive(Copy, Clone, Debug, Default, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SourceFormat {
    /// Told apart by the contents (HLO text starts with `HloModule`).
    #[default]
    Auto,
    /// StableHLO / MLIR text, as `jax.jit(f).lower(x).as_text()` prints it.
    Stablehlo,
    /// XLA HLO text, as `--xla_dump_to` and `compile().as_text()` print it.
    Hlo,
}

/// A small module for the examples in the OpenAPI document: Schemathesis sends them, so
/// its run gets 200 answers whose bodies it checks against the schema.
const EXAMPLE_SOURCE: &str = "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %x : tensor<4xf32>
  %1 = stablehlo.exponential %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
";

/// `POST /api/compile`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"source": EXAMPLE_SOURCE, "targets": ["cpu"]})))]
pub struct CompileRequest {
    /// The module's text.
    pub source: String,
    #[serde(default)]
    pub format: SourceFormat,
    /// A pipeline spec (`default`, `default,-cse`, `inline,simplify{max_rounds=4},fusion`).
    #[serde(default)]
    pub pipeline: Option<String>,
    /// Fusion knobs (`off`, `no-multi-output`, `max-size=8`, `never=a:b`, `force=a:b`).
    #[serde(default)]
    pub fusion: Option<String>,
    /// The hardware profile for the cost estimates: a100, h100 (default), h200, l4,
    /// rtx4090, cpu.
    #[serde(default)]
    pub profile: Option<String>,
    /// The targets to generate code for (`cpu`: Cranelift IR and machine code).
    #[serde(default)]
    pub targets: Vec<String>,
}

/// A note about the request that did not stop it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct Diagnostic {
    /// `error`, `warning` or `note`.
    pub severity: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub col: Option<u32>,
}

/// `POST /api/compile`'s answer.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct CompileResponse {
    /// The format the source was read as (`stablehlo` or `hlo`).
    pub format: SourceFormat,
    /// The module after each pass, the input first.
    pub snapshots: Vec<SnapshotDto>,
    /// The cost of the final module under the chosen profile.
    pub cost: CostReport,
    /// The kernel plan of the final module's entry computation (shared by all targets).
    pub plan: Vec<PlanKernel>,
    /// Generated code, one entry per requested target.
    pub code: Vec<TargetCode>,
    pub diagnostics: Vec<Diagnostic>,
    /// Seconds the worker spent, from parsing to the last listing.
    pub compile_s: f64,
}

/// The module after one pass.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct SnapshotDto {
    pub index: u32,
    /// The pass's name (`input` for the first).
    pub pass: String,
    pub changed: bool,
    /// HLO text.
    pub text: String,
    pub graph: GraphDto,
    /// Entry instructions added, removed and rewritten by this pass.
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub rewritten: Vec<String>,
    /// Rewrite rules applied, with the instruction each rewrote.
    pub rewrites: Vec<RewriteDto>,
    pub decisions: Vec<DecisionDto>,
    pub cost: CostSummaryDto,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct GraphDto {
    pub nodes: Vec<NodeDto>,
    pub edges: Vec<EdgeDto>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct NodeDto {
    /// Stable across snapshots (`fusion.3/add.1` inside a fusion).
    pub id: String,
    pub name: String,
    pub op: String,
    /// Element type, `tuple` or `token`.
    pub dtype: String,
    pub shape: Vec<i64>,
    /// The fusion this node belongs to (a fusion belongs to itself).
    pub fusion_group: Option<String>,
    /// `line:col` in the source.
    pub loc: String,
    /// The program's own location (a JAX `loc(...)`), when it had one.
    pub source: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct EdgeDto {
    pub from: String,
    pub to: String,
    /// The value's type as text.
    pub shape: String,
    pub bytes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct RewriteDto {
    pub rule: String,
    pub inst: String,
}

/// A fusion decision, taken or refused, with its reason.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct DecisionDto {
    pub producer: String,
    pub consumer: String,
    pub taken: bool,
    pub rule: String,
    pub reason: String,
    pub bytes_saved: i64,
    pub kernels_saved: i64,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct CostSummaryDto {
    pub profile: String,
    pub kernels: u64,
    pub bytes_moved: u64,
    pub flops: u64,
    pub est_time_s: f64,
    pub peak_memory_bytes: u64,
}

/// The final module's cost, kernel by kernel.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct CostReport {
    pub profile: String,
    pub kernels: u64,
    pub bytes_moved: u64,
    pub flops: u64,
    pub est_time_s: f64,
    pub kernel_costs: Vec<KernelCostDto>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct KernelCostDto {
    pub name: String,
    pub op: String,
    /// `kLoop`, `kInput`, `kOutput` for fusions.
    pub fusion_kind: Option<String>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub flops: u64,
    /// FLOPs per byte moved.
    pub intensity: f64,
    pub memory_bound: bool,
    pub est_time_s: f64,
}

/// One kernel of the shared plan.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PlanKernel {
    pub name: String,
    /// `loop`, `reduction(row)`, `library(dot)`, `opaque (interpreted: ...)`, ...
    pub kind: String,
    /// The buffers it reads and writes, as `name: type`.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
}

/// One target's generated code.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TargetCode {
    pub target: String,
    pub kernels: Vec<KernelCode>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct KernelCode {
    pub name: String,
    pub kind: String,
    /// How it runs: `simd 4x4 + native exp`, `scalar`, `gemm`, `interpreter`, ...
    pub summary: String,
    /// Cranelift IR, when Cranelift compiled it.
    pub clif: Option<String>,
    /// Machine code, when Cranelift compiled it.
    pub asm: Option<String>,
}

/// Where a run's inputs come from: `{"random": {"seed": N}}` or a list of base64 `.npy`
/// files, one per entry parameter.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum RunInputs {
    Random {
        random: RandomInputs,
    },
    /// Base64 of each `.npy` file, in parameter order.
    Npy(Vec<String>),
}

impl Default for RunInputs {
    fn default() -> Self {
        RunInputs::Random { random: RandomInputs { seed: 0 } }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RandomInputs {
    #[serde(default)]
    pub seed: u64,
}

/// `POST /api/run`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"source": EXAMPLE_SOURCE, "target": "cpu", "inputs": {"random": {"seed": 1}}, "iters": 3, "return_npy": true})))]
pub struct RunRequest {
    pub source: String,
    #[serde(default)]
    pub format: SourceFormat,
    /// `interp` (the reference interpreter), `cpu` (native code) or `cuda` (where the
    /// server has a device); see `/api/targets`.
    pub target: String,
    #[serde(default)]
    pub inputs: RunInputs,
    /// Timed runs (default 1, at most 100).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 100)]
    pub iters: Option<u32>,
    /// Fusion knobs, as for `/api/compile`.
    #[serde(default)]
    pub fusion: Option<String>,
    /// Return every output in full as a base64 `.npy` file too.
    #[serde(default)]
    pub return_npy: bool,
}

/// `POST /api/run`'s answer.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct RunResponse {
    pub target: String,
    /// The entry's results, tuples flattened.
    pub outputs: Vec<OutputSummary>,
    /// Parse to ready executable, seconds (0 on a cache hit's load is not possible: the
    /// load time is counted).
    pub compile_s: f64,
    /// `hit`, `miss` or `off` (the interpreter compiles nothing).
    pub cache: String,
    pub iters: u32,
    pub run_median_s: f64,
    pub run_min_s: f64,
    /// Per kernel, median over the timed runs (none for the interpreter).
    pub kernels: Vec<KernelTiming>,
    /// The outputs compared with the reference interpreter's (absent when the target is
    /// the interpreter).
    pub check: Option<NumericsCheck>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct OutputSummary {
    pub index: u32,
    /// `f32`, `s32`, `pred`, ... (HLO names).
    pub dtype: String,
    pub shape: Vec<i64>,
    /// Over the finite values (null when there are none).
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    /// The first values in row-major order (at most 16); NaN and infinities as null.
    pub first: Vec<Option<f64>>,
    /// The whole output as a base64 `.npy` file, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub npy: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct KernelTiming {
    pub name: String,
    pub time_s: f64,
    pub bytes: u64,
    pub flops: u64,
    /// Times it ran in one run (more than 1 inside a while loop).
    pub calls: u64,
    pub code: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct NumericsCheck {
    /// `interp`.
    pub reference: String,
    /// Every output within its tolerance.
    pub passed: bool,
    pub outputs: Vec<OutputCheck>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct OutputCheck {
    pub index: u32,
    pub passed: bool,
    /// Largest |target - reference| over the elements (0 for exact types that agree).
    pub max_abs_error: f64,
    /// Elements outside the tolerance.
    pub mismatches: u64,
    /// The tolerance: |t - r| <= atol + rtol * |r| (0 and 0 for integers and preds); atol
    /// is the type's per unit of the output's largest magnitude (at least 1).
    pub atol: f64,
    pub rtol: f64,
}

/// `GET /api/targets`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TargetsResponse {
    pub cpu: CpuInfo,
    pub targets: Vec<TargetInfo>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct CpuInfo {
    /// The CPU's model name.
    pub model: String,
    pub cores: u32,
    /// `avx512`, `avx2`, `sse4.2`, `neon`, ...
    pub simd: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TargetInfo {
    /// The name `/api/run` takes.
    pub name: String,
    pub available: bool,
    /// What it is, or why it is not available.
    pub description: String,
}

/// `GET /api/profile`: this server's CPU as a hardware profile for the cost model,
/// measured once (bandwidth, f32/f64 GEMM FLOP/s by the CPU target, kernel overhead).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ProfileResponse {
    pub name: String,
    /// FLOP/s for f32 (and integer) arithmetic.
    pub peak_f32: f64,
    /// FLOP/s for f16/bf16 dots (a CPU has no tensor units: the f32 peak).
    pub peak_f16_tensor: f64,
    pub peak_f64: f64,
    /// Bytes per second between memory and the cores.
    pub mem_bandwidth: f64,
    /// Seconds added to every kernel.
    pub launch_overhead_s: f64,
    /// When it was measured (seconds since the Unix epoch).
    pub measured_at: u64,
}

/// `POST /api/share`: the state of the app to store.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"source": EXAMPLE_SOURCE, "settings": {"pass": 2, "fusion": "max-size=8"}})))]
pub struct ShareRequest {
    pub source: String,
    /// The app's settings (selected pass, fusion knobs, ...): a JSON object, stored as
    /// given (absent: `{}`).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub settings: serde_json::Map<String, serde_json::Value>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ShareCreated {
    /// URL-safe, at least 64 random bits.
    pub id: String,
    /// The page that restores the state (`/?share=ID`).
    pub url: String,
}

/// `GET /api/share/{id}`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct SharedState {
    pub id: String,
    pub source: String,
    #[schema(value_type = Object)]
    pub settings: serde_json::Value,
    /// Seconds since 1970 when it was first stored.
    pub created_at: i64,
}

/// `GET /api/health`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
    pub version: String,
    pub uptime_s: f64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Jobs waiting for a worker.
    pub queue_depth: u64,
    /// Jobs running now.
    pub running: u64,
}

#[derive(OpenApi)]
#[openapi(
    info(title = "hloscope", description = "Compile, run and share StableHLO and XLA HLO programs."),
    paths(
        super::routes::compile,
        super::routes::run,
        super::routes::targets,
        super::routes::profile,
        super::routes::share_create,
        super::routes::share_get,
        super::routes::health
    ),
    components(schemas(
        ErrorBody,
        CompileRequest,
        CompileResponse,
        RunRequest,
        RunResponse,
        ShareRequest,
        ShareCreated,
        SharedState,
        Health,
        TargetsResponse,
        ProfileResponse
    ))
)]
pub struct ApiDoc;
