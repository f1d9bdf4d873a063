//! The wire format: what the CLI's `--json`, the pass dumps and the web UI exchange.
//!
//! The JSON is the serde serialization of the pipeline's own types ([`Snapshot`],
//! [`Graph`], [`Decision`], [`Provenance`], [`CostSummary`], [`KernelCost`]),
//! re-exported here, so there is one definition of each shape and nothing to keep in
//! sync by hand. This module adds the report `hloscope explain` prints
//! ([`ExplainReport`]), the Graphviz rendering of a snapshot's graph ([`graph_to_dot`])
//! and profile lookup by name with a helpful error.

pub use crate::cost::{DtypeClass, KernelCost};
pub use crate::passes::fusion::{FusionConfig, FUSION_KNOBS};
pub use crate::passes::pipeline::{Changes, CostSummary, Edge, Graph, Node, Snapshot};
pub use crate::passes::{Decision, Provenance, Rewrite};

use crate::cost::{self, Profile};
use crate::ir::{FusionKind, Module};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt::Write;

/// A fusion kind as XLA spells it (`kLoop`, ...), for `KernelCost::fusion_kind`.
pub fn serialize_fusion_kind<S: Serializer>(kind: &Option<FusionKind>, s: S) -> Result<S::Ok, S::Error> {
    match kind {
        Some(k) => s.serialize_str(k.hlo_name()),
        None => s.serialize_none(),
    }
}

/// One kernel's cost with the figures derived from it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelRow {
    #[serde(flatten)]
    pub cost: KernelCost,
    /// Bytes read plus written.
    pub bytes: u64,
    /// FLOPs per byte.
    pub intensity: f64,
    pub memory_bound: bool,
}

/// What `hloscope explain` reports: the fusion decisions of a pipeline run and the cost
/// of the module it produced, under one hardware profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExplainReport {
    /// The profile's display name (`H100 SXM`).
    pub profile: String,
    /// The passes that ran, in order.
    pub passes: Vec<String>,
    /// Kernel count of the final module.
    pub kernels: usize,
    /// Bytes read and written by all kernels of the final module.
    pub bytes_moved: u64,
    pub flops: u64,
    /// Sum of the kernels' roofline times, launch overhead included.
    pub est_time_s: f64,
    /// The cost of the module before any pass ran.
    pub before: CostSummary,
    /// Every decision of every pass (fusion's, in practice), in the order taken.
    pub decisions: Vec<Decision>,
    /// The final module's kernels, in program order.
    pub kernel_costs: Vec<KernelRow>,
}

impl ExplainReport {
    /// The report for `module` (the pipeline's result) given the pipeline's snapshots.
    pub fn new(module: &Module, snapshots: &[Snapshot], profile: &Profile) -> ExplainReport {
        let total = cost::module_cost(module, profile);
        let before = snapshots.first().map(|s| s.cost.clone()).unwrap_or_else(|| CostSummary::of(module, profile));
        ExplainReport {
            profile: profile.name.to_string(),
            passes: snapshots.iter().skip(1).map(|s| s.pass.clone()).collect(),
            kernels: total.kernel_count(),
            bytes_moved: total.bytes_moved,
            flops: total.flops,
            est_time_s: total.time_s,
            before,
            decisions: snapshots.iter().flat_map(|s| s.decisions.iter().cloned()).collect(),
            kernel_costs: total
                .kernels
                .into_iter()
                .map(|k| KernelRow {
                    bytes: k.bytes(),
                    intensity: k.intensity(),
                    memory_bound: k.memory_bound(profile),
                    cost: k,
                })
                .collect(),
        }
    }
}

/// Pretty JSON of any wire type. Serializing these plain structs cannot fail.
pub fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("wire types serialize")
}

/// The names `profile_by_name` accepts, one per built-in profile.
pub const PROFILE_NAMES: &[&str] = &["a100", "h100", "h200", "l4", "rtx4090", "cpu"];

/// The built-in profile called `name`; the error lists the valid names.
pub fn profile_by_name(name: &str) -> Result<Profile, String> {
    cost::profiles::by_name(name)
        .ok_or_else(|| format!("unknown profile `{name}` (known: {})", PROFILE_NAMES.join(", ")))
}

/// Graphviz text for a snapshot's graph: one `subgraph cluster_` per fusion group
/// holding its members, each node labelled with its op and shape. A fusion instruction
/// is drawn inside its cluster as the kernel's output; edges into it from outside are
/// left out (they are drawn to the members that read them).
pub fn graph_to_dot(graph: &Graph, title: &str) -> String {
    let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let quote = |s: &str| format!("\"{}\"", esc(s));
    let is_fusion_node =
        |n: &Node| n.op == "fusion" && n.fusion_group.as_deref() == Some(n.name.as_str()) && !n.id.contains('/');
    let fusion_nodes: std::collections::HashSet<&str> =
        graph.nodes.iter().filter(|n| is_fusion_node(n)).map(|n| n.id.as_str()).collect();
    let label = |n: &Node| {
        let dims: Vec<String> = n.shape.iter().map(i64::to_string).collect();
        let shape = match n.dtype.as_str() {
            "tuple" | "token" => n.dtype.clone(),
            d => format!("{d}[{}]", dims.join(",")),
        };
        // Already escaped: the `\n` is Graphviz's line break.
        format!("\"{}\\n{} {}\"", esc(&n.name), esc(&n.op), esc(&shape))
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "digraph {} {{\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];",
        quote(title)
    );
    let mut groups: BTreeMap<&str, Vec<&Node>> = BTreeMap::new();
    for n in &graph.nodes {
        match &n.fusion_group {
            Some(g) => groups.entry(g.as_str()).or_default().push(n),
            None => {
                let _ = writeln!(out, "  {} [label={}];", quote(&n.id), label(n));
            }
        }
    }
    for (i, (group, members)) in groups.iter().enumerate() {
        let _ =
            writeln!(out, "  subgraph cluster_{i} {{\n    label={};\n    style=filled; color=lightgrey;", quote(group));
        for n in members {
            let style = if fusion_nodes.contains(n.id.as_str()) { ", style=bold" } else { "" };
            let _ = writeln!(out, "    {} [label={}{style}];", quote(&n.id), label(n));
        }
        out.push_str("  }\n");
    }
    for e in &graph.edges {
        if fusion_nodes.contains(e.to.as_str()) {
            continue;
        }
        let _ = writeln!(out, "  {} -> {} [label={}];", quote(&e.from), quote(&e.to), quote(&e.shape));
    }
    // Members that no other member reads produce the kernel's outputs.
    for f in &fusion_nodes {
        let prefix = format!("{f}/");
        let members: Vec<&Node> = graph.nodes.iter().filter(|n| n.id.starts_with(&prefix)).collect();
        for m in &members {
            let read_inside = graph.edges.iter().any(|e| e.from == m.id && e.to.starts_with(&prefix));
            if !read_inside {
                let _ = writeln!(out, "  {} -> {} [style=dashed];", quote(&m.id), quote(f));
            }
        }
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::pipeline::{run_pipeline, PipelineConfig};

    const RELU_DENSE: &str = r#"
HloModule m
ENTRY main {
  x = f32[4,8] parameter(0)
  w = f32[8,16] parameter(1)
  b = f32[16] parameter(2)
  d = f32[4,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[4,16] broadcast(b), dimensions={1}
  a = f32[4,16] add(d, bb)
  z = f32[] constant(0)
  zb = f32[4,16] broadcast(z), dimensions={}
  ROOT r = f32[4,16] maximum(a, zb)
}
"#;

    #[test]
    fn report_and_json_of_a_fused_dense_layer() {
        let mut module = crate::parse::parse_module(RELU_DENSE).unwrap();
        let config = PipelineConfig::default();
        let snaps = run_pipeline(&mut module, &config).unwrap();
        let report = ExplainReport::new(&module, &snaps, &config.profile);
        assert_eq!(report.kernels, 1);
        // Reads x (128 B), w (512 B), b (64 B); writes r (256 B).
        assert_eq!(report.bytes_moved, 128 + 512 + 64 + 256);
        // 2*4*16*8 for the dot, 64 for the add, 64 for the max (broadcasts are free).
        assert_eq!(report.flops, 1024 + 64 + 64);
        let json: serde_json::Value = serde_json::from_str(&to_json(&report)).unwrap();
        assert_eq!(json["kernels"], 1);
        assert_eq!(json["kernel_costs"][0]["fusion_kind"], "kOutput");
        assert_eq!(json["kernel_costs"][0]["class"], "f32");
        assert!(json["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["rule"] == "epilogue-fusion" && d["taken"] == true));
        let snap: serde_json::Value = serde_json::from_str(&to_json(&snaps[snaps.len() - 1])).unwrap();
        assert!(snap.get("signatures").is_none());
        assert_eq!(snap["cost"]["kernels"], 1);
    }

    #[test]
    fn dot_has_one_cluster_per_fusion() {
        let mut module = crate::parse::parse_module(RELU_DENSE).unwrap();
        let snaps = run_pipeline(&mut module, &PipelineConfig::default()).unwrap();
        let dot = graph_to_dot(&snaps.last().unwrap().graph, "fusion");
        assert_eq!(dot.matches("subgraph cluster_").count(), 1);
        assert!(dot.contains("dot f32[4,16]"), "{dot}");
        assert_eq!(graph_to_dot(&snaps[0].graph, "input").matches("subgraph cluster_").count(), 0);
    }

    #[test]
    fn profile_names_all_resolve() {
        for n in PROFILE_NAMES {
            assert!(profile_by_name(n).is_ok(), "{n}");
        }
        assert_eq!(PROFILE_NAMES.len(), cost::profiles::all().len());
        let e = profile_by_name("tpu").unwrap_err();
        assert!(e.contains("unknown profile `tpu`") && e.contains("h100, h200"), "{e}");
    }
}
