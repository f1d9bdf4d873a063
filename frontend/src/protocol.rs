//! The messages between the page and the compiler's Web Worker, as JSON.
//!
//! One file, compiled into both crates (the worker includes it with `#[path]`), so the
//! two sides cannot drift. The page sends a [`Request`]; the worker answers with a
//! [`Response`]: either every pass of the pipeline, laid out and diffed, or the error with
//! its line and column.

use serde::{Deserialize, Serialize};

/// Compile `source` (StableHLO or HLO text); `id` comes back in the answer so the page
/// can drop answers to edits it has already superseded.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Request {
    pub id: u32,
    pub source: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Response {
    pub id: u32,
    /// Milliseconds the worker spent: parse and pipeline, then layout and diffs.
    pub compile_ms: f64,
    pub layout_ms: f64,
    pub result: Outcome,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    Ok {
        passes: Vec<PassView>,
    },
    /// Bad input (parse or verify error) or a failing pass; `line`/`col` are 1-based and
    /// 0 when the error has no position.
    Error {
        line: u32,
        col: u32,
        message: String,
    },
}

/// One pipeline snapshot, ready to draw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PassView {
    /// `input` for the first snapshot, else the pass's name.
    pub name: String,
    pub changed: bool,
    /// Instructions in the printed module (graph nodes, fused members included).
    pub insts: usize,
    pub kernels: usize,
    pub bytes_moved: u64,
    pub est_time_s: f64,
    /// Unified diff of this snapshot's text against the previous one (empty for the input).
    pub diff: Vec<DiffLine>,
    pub decisions: Vec<DecisionView>,
    pub graph: GraphView,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffKind {
    Same,
    Added,
    Removed,
    /// A `@@ ... @@` hunk header.
    Hunk,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiffLine {
    pub kind: DiffKind,
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

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
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

/// A fusion group drawn as a box around its members.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterView {
    pub name: String,
    pub members: usize,
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}
