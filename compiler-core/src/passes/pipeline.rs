//! The pass manager: runs named passes in order, verifies after each, and records a
//! snapshot after each one (XLA's `HloPassPipeline` plus `--xla_dump_to`).
//!
//! A pipeline is written as a spec: pass names separated by commas, each optionally with
//! knobs in braces: `inline,simplify{max_rounds=4},cse,dce,fusion`. `default` stands for
//! the default pipeline and `-name` removes a pass: `default,-cse`. Fusion's knobs have
//! their own spec (`FusionConfig`), since the UI and the CLI offer them separately.
//!
//! Each snapshot holds what a person needs to see what the pass did: the module as HLO
//! text, a graph (nodes with fusion groups, edges with bytes), the instructions added,
//! removed and rewritten, the rewrites and fusion decisions from the pass's `PassLog`,
//! the provenance of the graph's node ids (what each new id came from, where each
//! vanished one went), and the cost under the chosen hardware profile.

use super::constant_fold::ConstantFold;
use super::cse::Cse;
use super::dce::Dce;
use super::dot::{DotCanonicalize, DotMerger, DotStrengthReduction, TransposeFolding};
use super::fusion::{FusionConfig, FusionPass};
use super::inline::Inline;
use super::layout::LayoutAssignment;
use super::schedule::Scheduler;
use super::simplify::AlgebraicSimplifier;
use super::{Decision, Pass, PassLog, Provenance, Rewrite};
use crate::cost::{self, Profile};
use crate::ir::{Computation, InstId, Module, Op, Type};
use cranelift_entity::SecondaryMap;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// The default pipeline, in order.
pub const DEFAULT_PIPELINE: &[&str] = &[
    "inline",
    "simplify",
    "transpose-folding",
    "dot-strength-reduction",
    "dot-merger",
    "constant-fold",
    "cse",
    "dce",
    "fusion",
    "layout-assignment",
    "schedule",
];

/// Every pass a spec may name.
pub const KNOWN_PASSES: &[&str] = &[
    "inline",
    "simplify",
    "transpose-folding",
    "dot-strength-reduction",
    "dot-merger",
    "dot-canonicalize",
    "constant-fold",
    "cse",
    "dce",
    "fusion",
    "layout-assignment",
    "schedule",
];

/// One pass of a pipeline with its knobs (`name{key=value,...}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassSpec {
    pub name: String,
    pub knobs: Vec<(String, String)>,
}

/// How to run a pipeline.
#[derive(Clone, Debug)]
pub struct PipelineConfig {
    pub passes: Vec<PassSpec>,
    pub fusion: FusionConfig,
    /// Run the verifier after every pass, and check that a pass that reports no change
    /// left the module as it was (its snapshot is then the previous one's). The default
    /// is on in debug builds (and so in tests) and off in release builds, where the
    /// pipeline's speed matters; the CLI turns it on for `compile` and `explain`.
    pub verify: bool,
    /// Render text and graph for each snapshot (off for callers that only want the
    /// final module and the decisions).
    pub snapshots: bool,
    /// The hardware the cost in each snapshot is estimated for.
    pub profile: Profile,
    /// Milliseconds from some fixed start, for each snapshot's `time_ms` (the core has no
    /// clock of its own: `std::time` panics on wasm32-unknown-unknown, so the browser's
    /// worker passes `Date.now`).
    pub clock: Option<fn() -> f64>,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            passes: parse_pipeline_spec("default").expect("the default spec parses"),
            fusion: FusionConfig::default(),
            verify: cfg!(debug_assertions),
            snapshots: true,
            profile: cost::profiles::by_name("h100").expect("a built-in profile"),
            clock: None,
        }
    }
}

/// A pipeline stopped because a pass broke the module (a bug in that pass) or the spec
/// was wrong (bad input).
#[derive(Clone, Debug, PartialEq)]
pub enum PipelineError {
    /// Bad input: the spec names an unknown pass or knob, or a knob's value is malformed.
    Spec(String),
    /// A bug: the module failed verification after `pass`.
    Broken { pass: String, error: String },
    /// Bad input: the module is over the default resource limits ([`crate::limits`]), so
    /// no pass ran.
    Limit(crate::limits::LimitError),
}

impl fmt::Display for PipelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PipelineError::Spec(m) => write!(f, "pipeline: {m}"),
            PipelineError::Broken { pass, error } => {
                write!(f, "pass {pass} produced an invalid module (a bug in hloscope): {error}")
            }
            PipelineError::Limit(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PipelineError {}

/// The state of the module after one pass (index 0 is the input).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Snapshot {
    pub index: usize,
    /// `input` for the first snapshot.
    pub pass: String,
    pub changed: bool,
    /// Milliseconds the pass took by the config's clock (0 without one, and for the input).
    pub time_ms: f64,
    /// HLO text (empty when snapshots are off).
    pub text: String,
    /// Shared with the previous snapshot when the pass changed nothing (a graph of a
    /// large module is costly to copy); serialized as the graph itself.
    pub graph: Arc<Graph>,
    pub changes: Changes,
    pub rewrites: Vec<Rewrite>,
    pub decisions: Vec<Decision>,
    /// Where the graph's node ids that are new since the previous snapshot come from and
    /// where the ones that are gone went (see [`Provenance`] for which field names an id
    /// of which snapshot). Empty for the input and for a pass that changed nothing.
    pub provenance: Vec<Provenance>,
    pub cost: CostSummary,
    /// The entry's instruction signatures, for the next snapshot's `changes` (shared
    /// with the next snapshot when a pass changes nothing).
    #[serde(skip)]
    signatures: Arc<HashMap<String, String>>,
}

/// Instructions of the entry computation, by name, compared with the previous snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Changes {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Same name, different op, operands or type.
    pub rewritten: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CostSummary {
    pub profile: String,
    pub kernels: usize,
    pub bytes_moved: u64,
    pub flops: u64,
    pub est_time_s: f64,
    /// Peak bytes of temporaries live at once under the current schedule (buffer
    /// assignment's answer; parameters and constants not included).
    pub peak_memory_bytes: u64,
}

impl CostSummary {
    /// The cost of `module` as it stands, on `profile`.
    pub fn of(module: &Module, profile: &Profile) -> CostSummary {
        let module_cost = cost::module_cost(module, profile);
        CostSummary {
            profile: profile.name.to_string(),
            kernels: module_cost.kernel_count(),
            bytes_moved: module_cost.bytes_moved,
            flops: module_cost.flops,
            est_time_s: module_cost.time_s,
            peak_memory_bytes: super::buffers::peak_bytes(module),
        }
    }
}

/// The entry computation as a graph, with the instructions inside fusions as members of
/// their fusion's group.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Node {
    /// Stable across snapshots: the instruction name, prefixed with its fusion's name
    /// for instructions inside a fusion (`fusion.3/add.1`).
    pub id: String,
    pub name: String,
    pub op: String,
    /// Element type, `tuple` or `token`.
    pub dtype: String,
    pub shape: Vec<i64>,
    /// The fusion instruction this node belongs to (a fusion belongs to itself).
    pub fusion_group: Option<String>,
    /// `line:col` in the source text, and the program's own location when it had one.
    pub loc: String,
    pub source: Option<String>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub shape: String,
    pub bytes: u64,
}

/// Parses a pipeline spec (see the module doc).
pub fn parse_pipeline_spec(spec: &str) -> Result<Vec<PassSpec>, PipelineError> {
    let mut passes: Vec<PassSpec> = Vec::new();
    for item in split_top_level(spec) {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        if item == "default" {
            passes.extend(DEFAULT_PIPELINE.iter().map(|n| PassSpec { name: n.to_string(), knobs: vec![] }));
            continue;
        }
        if let Some(name) = item.strip_prefix('-') {
            let name = name.trim();
            check_known(name)?;
            let before = passes.len();
            passes.retain(|p| p.name != name);
            if passes.len() == before {
                return Err(PipelineError::Spec(format!("`-{name}`: {name} is not in the pipeline at that point")));
            }
            continue;
        }
        let (name, knobs) = match item.split_once('{') {
            Some((name, rest)) => {
                let body = rest
                    .strip_suffix('}')
                    .ok_or_else(|| PipelineError::Spec(format!("`{item}`: knobs must end with `}}`")))?;
                let knobs = body
                    .split(',')
                    .filter(|k| !k.trim().is_empty())
                    .map(|k| match k.split_once('=') {
                        Some((key, value)) => Ok((key.trim().to_string(), value.trim().to_string())),
                        None => Err(PipelineError::Spec(format!("`{k}` in `{item}`: a knob is key=value"))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                (name.trim(), knobs)
            }
            None => (item, vec![]),
        };
        check_known(name)?;
        passes.push(PassSpec { name: name.to_string(), knobs });
    }
    // Build each pass once so that bad knobs are reported before anything runs.
    for p in &passes {
        make_pass(p, &FusionConfig::default())?;
    }
    Ok(passes)
}

/// Splits on commas outside braces.
fn split_top_level(spec: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in spec.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&spec[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&spec[start..]);
    out
}

fn check_known(name: &str) -> Result<(), PipelineError> {
    if KNOWN_PASSES.contains(&name) {
        Ok(())
    } else {
        Err(PipelineError::Spec(format!("unknown pass `{name}` (known: {})", KNOWN_PASSES.join(", "))))
    }
}

fn knob_usize(spec: &PassSpec, key: &str, value: &str) -> Result<usize, PipelineError> {
    value
        .parse()
        .map_err(|_| PipelineError::Spec(format!("{}: knob {key} takes a whole number, not `{value}`", spec.name)))
}

/// Sets each of a pass's whole-number knobs that `spec` gives; any other knob is an error.
fn set_usize_knobs(spec: &PassSpec, knobs: &mut [(&str, &mut usize)]) -> Result<(), PipelineError> {
    for (k, v) in &spec.knobs {
        let Some((_, field)) = knobs.iter_mut().find(|(name, _)| name == k) else {
            return Err(PipelineError::Spec(format!("{} has no knob `{k}`", spec.name)));
        };
        **field = knob_usize(spec, k, v)?;
    }
    Ok(())
}

/// Builds the pass a spec names.
fn make_pass(spec: &PassSpec, fusion: &FusionConfig) -> Result<Box<dyn Pass>, PipelineError> {
    let unknown_knob = |key: &str| PipelineError::Spec(format!("{} has no knob `{key}`", spec.name));
    match spec.name.as_str() {
        "simplify" => {
            let mut pass = AlgebraicSimplifier::default();
            set_usize_knobs(spec, &mut [("max_rounds", &mut pass.max_rounds)])?;
            Ok(Box::new(pass))
        }
        "constant-fold" => {
            let mut pass = ConstantFold::default();
            set_usize_knobs(spec, &mut [("max_elements", &mut pass.max_elements)])?;
            Ok(Box::new(pass))
        }
        "dot-merger" => {
            let mut pass = DotMerger::default();
            set_usize_knobs(spec, &mut [("max_bytes", &mut pass.max_bytes)])?;
            Ok(Box::new(pass))
        }
        "fusion" => match spec.knobs.first() {
            Some((k, _)) => Err(PipelineError::Spec(format!(
                "fusion knobs go in the fusion config (`--fusion`), not the pipeline spec (`{k}`)"
            ))),
            None => Ok(Box::new(FusionPass::new(fusion.clone()))),
        },
        name => {
            if let Some((k, _)) = spec.knobs.first() {
                return Err(unknown_knob(k));
            }
            Ok(match name {
                "inline" => Box::new(Inline) as Box<dyn Pass>,
                "cse" => Box::new(Cse),
                "dce" => Box::new(Dce),
                "layout-assignment" => Box::new(LayoutAssignment),
                "transpose-folding" => Box::new(TransposeFolding),
                "dot-strength-reduction" => Box::new(DotStrengthReduction),
                "dot-canonicalize" => Box::new(DotCanonicalize),
                "schedule" => Box::new(Scheduler),
                other => return Err(PipelineError::Spec(format!("unknown pass `{other}`"))),
            })
        }
    }
}

/// Runs the pipeline on `module` in place and returns one snapshot per stage, the
/// input first.
pub fn run_pipeline(module: &mut Module, config: &PipelineConfig) -> Result<Vec<Snapshot>, PipelineError> {
    run_pipeline_observed(module, config, &mut |_, _| {})
}

/// Runs the pipeline on `module` in place, taking no snapshot: what a target's compile
/// wants (a snapshot costs about as much as the passes themselves: the cost model and
/// every instruction's signature). With `config.verify` each pass is still verified.
pub fn run_passes(module: &mut Module, config: &PipelineConfig) -> Result<(), PipelineError> {
    let passes: Vec<Box<dyn Pass>> =
        config.passes.iter().map(|p| make_pass(p, &config.fusion)).collect::<Result<_, _>>()?;
    crate::limits::check_module(module, &crate::limits::Limits::default()).map_err(PipelineError::Limit)?;
    for pass in &passes {
        pass.run(module, &mut PassLog { quiet: true, ..Default::default() });
        if config.verify {
            crate::verify::verify_structure(module)
                .map_err(|e| PipelineError::Broken { pass: pass.name().to_string(), error: e.to_string() })?;
        }
    }
    Ok(())
}

/// [`run_pipeline`], calling `after_pass(name, module)` after each pass has run and been
/// verified (differential tests compare the module's meaning before and after).
pub fn run_pipeline_observed(
    module: &mut Module,
    config: &PipelineConfig,
    after_pass: &mut dyn FnMut(&str, &Module),
) -> Result<Vec<Snapshot>, PipelineError> {
    let passes: Vec<Box<dyn Pass>> =
        config.passes.iter().map(|p| make_pass(p, &config.fusion)).collect::<Result<_, _>>()?;
    // Before any pass sizes anything (the input snapshot's cost, constant folding).
    crate::limits::check_module(module, &crate::limits::Limits::default()).map_err(PipelineError::Limit)?;
    let mut snapshots = vec![snapshot(module, config, 0, "input", true, PassLog::default(), None)];
    for (i, pass) in passes.iter().enumerate() {
        let mut log = PassLog::default();
        let started = config.clock.map(|now| now());
        let changed = pass.run(module, &mut log);
        let time_ms = match (config.clock, started) {
            (Some(now), Some(t0)) => now() - t0,
            _ => 0.0,
        };
        if config.verify {
            // The input was within the limits; a pass may legitimately grow the total
            // (fusion bodies repeat their operands), which is no bug.
            crate::verify::verify_structure(module)
                .map_err(|e| PipelineError::Broken { pass: pass.name().to_string(), error: e.to_string() })?;
        }
        after_pass(pass.name(), module);
        let previous = snapshots.last().expect("the input snapshot comes first");
        let mut snap = if changed {
            snapshot(module, config, i + 1, pass.name(), changed, log, Some(previous))
        } else {
            // Nothing changed: the module's text, graph and cost are the previous
            // snapshot's (in tests, `verify` checks that the pass told the truth).
            if config.verify {
                check_unchanged(module, config, previous)
                    .map_err(|error| PipelineError::Broken { pass: pass.name().to_string(), error })?;
            }
            Snapshot {
                index: i + 1,
                pass: pass.name().to_string(),
                changed,
                time_ms: 0.0,
                text: previous.text.clone(),
                graph: Arc::clone(&previous.graph),
                changes: Changes::default(),
                rewrites: log.rewrites,
                decisions: log.decisions,
                provenance: Vec::new(),
                cost: previous.cost.clone(),
                signatures: Arc::clone(&previous.signatures),
            }
        };
        snap.time_ms = time_ms;
        snapshots.push(snap);
    }
    Ok(snapshots)
}

/// That a pass which reported no change left the module as `previous` shows it.
fn check_unchanged(module: &Module, config: &PipelineConfig, previous: &Snapshot) -> Result<(), String> {
    let lie = |what: &str| Err(format!("the pass reported no change, but the module's {what} changed"));
    if *previous.signatures != entry_signatures(module) {
        return lie("entry instructions");
    }
    if config.snapshots && previous.text != crate::print::hlo::print_module(module) {
        return lie("text");
    }
    if previous.cost != CostSummary::of(module, &config.profile) {
        return lie("cost");
    }
    Ok(())
}

fn snapshot(
    module: &Module,
    config: &PipelineConfig,
    index: usize,
    pass: &str,
    changed: bool,
    log: PassLog,
    previous: Option<&Snapshot>,
) -> Snapshot {
    let cost = CostSummary::of(module, &config.profile);
    let signatures = Arc::new(entry_signatures(module));
    let changes = match previous {
        Some(prev) => diff_signatures(&prev.signatures, &signatures),
        None => Changes::default(),
    };
    let (text, graph) = if config.snapshots {
        (crate::print::hlo::print_module(module), graph_of(module))
    } else {
        (String::new(), Graph::default())
    };
    Snapshot {
        index,
        pass: pass.to_string(),
        changed,
        time_ms: 0.0,
        text,
        graph: Arc::new(graph),
        changes,
        rewrites: log.rewrites,
        decisions: log.decisions,
        provenance: super::provenance::normalize(log.provenance),
        cost,
        signatures,
    }
}

/// What identifies an instruction's computation: op, attributes, operand names, type.
fn entry_signatures(module: &Module) -> HashMap<String, String> {
    use std::fmt::Write;
    let comp = module.entry_comp();
    comp.order
        .iter()
        .map(|&id| {
            let inst = comp.inst(id);
            let mut sig = String::with_capacity(64);
            let _ = write!(sig, "{:?} (", inst.op);
            for (k, &o) in inst.operands.iter().enumerate() {
                if k > 0 {
                    sig.push_str(", ");
                }
                sig.push_str(&comp.inst(o).name);
            }
            let _ = write!(sig, ") : {}", inst.ty);
            (inst.name.clone(), sig)
        })
        .collect()
}

/// The changes between two signature maps, each list sorted by name.
fn diff_signatures(before: &HashMap<String, String>, after: &HashMap<String, String>) -> Changes {
    let mut changes = Changes::default();
    for (name, sig) in after {
        match before.get(name) {
            None => changes.added.push(name.clone()),
            Some(old) if old != sig => changes.rewritten.push(name.clone()),
            Some(_) => {}
        }
    }
    changes.removed = before.keys().filter(|n| !after.contains_key(*n)).cloned().collect();
    changes.added.sort_unstable();
    changes.rewritten.sort_unstable();
    changes.removed.sort_unstable();
    changes
}

fn dtype_and_dims(ty: &Type) -> (String, Vec<i64>) {
    match ty {
        Type::Array(s) => (s.elem.hlo_name().to_string(), s.dims.to_vec()),
        Type::Tuple(_) => ("tuple".to_string(), vec![]),
        Type::Token => ("token".to_string(), vec![]),
    }
}

/// The entry computation's graph, fusion bodies expanded into their groups.
pub fn graph_of(module: &Module) -> Graph {
    let mut graph = Graph::default();
    add_computation(module, module.entry_comp(), "", None, &[], &mut graph);
    graph
}

/// The text of an instruction's type, formatted once per instruction (an edge shows its
/// producer's type, and a value has many readers).
fn type_texts(comp: &Computation) -> SecondaryMap<InstId, String> {
    let mut texts: SecondaryMap<InstId, String> = SecondaryMap::new();
    let mut last: Option<(&Type, InstId)> = None;
    for &id in &comp.order {
        let ty = &comp.inst(id).ty;
        texts[id] = match last {
            Some((t, prev)) if t == ty => texts[prev].clone(),
            _ => ty.to_string(),
        };
        last = Some((ty, id));
    }
    texts
}

/// Adds `comp`'s instructions (ids prefixed with `prefix`) to `graph`; its parameters
/// stand for `params_as` (node ids of the fusion's operands) when it is a fusion body.
fn add_computation(
    module: &Module,
    comp: &Computation,
    prefix: &str,
    group: Option<&str>,
    params_as: &[String],
    graph: &mut Graph,
) {
    /// Where an instruction's node id is: a node of `graph`, or one of `params_as`.
    #[derive(Copy, Clone)]
    enum At {
        Missing,
        Node(usize),
        Outer(usize),
    }
    let mut at: SecondaryMap<InstId, At> = SecondaryMap::with_default(At::Missing);
    let id_text = |graph: &Graph, at: At| -> Option<String> {
        match at {
            At::Node(k) => Some(graph.nodes[k].id.clone()),
            At::Outer(k) => Some(params_as[k].clone()),
            At::Missing => None,
        }
    };
    let types = type_texts(comp);
    let mut loc = String::new();
    for &id in &comp.order {
        let inst = comp.inst(id);
        if let (Op::Parameter(n), Some(_)) = (&inst.op, group) {
            if (*n as usize) < params_as.len() {
                at[id] = At::Outer(*n as usize);
                continue;
            }
        }
        let mut nid = String::with_capacity(prefix.len() + inst.name.len());
        nid.push_str(prefix);
        nid.push_str(&inst.name);
        let (dtype, shape) = dtype_and_dims(&inst.ty);
        let own_group = match &inst.op {
            Op::Fusion { .. } if group.is_none() => Some(inst.name.clone()),
            _ => group.map(str::to_string),
        };
        {
            use std::fmt::Write;
            loc.clear();
            let _ = write!(loc, "{}", inst.loc);
        }
        for &o in &inst.operands {
            let from = id_text(graph, at[o]).unwrap_or_else(|| format!("{prefix}{}", comp.inst(o).name));
            let ty = &comp.inst(o).ty;
            let shape = match types.get(o) {
                Some(t) if !t.is_empty() => t.clone(),
                _ => ty.to_string(),
            };
            graph.edges.push(Edge { from, to: nid.clone(), shape, bytes: ty.byte_size() as u64 });
        }
        at[id] = At::Node(graph.nodes.len());
        graph.nodes.push(Node {
            id: nid,
            name: inst.name.clone(),
            op: inst.op.hlo_name().to_string(),
            dtype,
            shape,
            fusion_group: own_group,
            loc: loc.clone(),
            source: inst.loc.source.as_deref().map(str::to_string),
        });
        if let (Op::Fusion { body, .. }, None) = (&inst.op, group) {
            let operands: Vec<String> =
                inst.operands.iter().map(|&o| id_text(graph, at[o]).unwrap_or_default()).collect();
            let inner_prefix = format!("{}/", graph.nodes[graph.nodes.len() - 1].id);
            add_computation(module, module.comp(*body), &inner_prefix, Some(&inst.name), &operands, graph);
        }
    }
}
