//! Two passes compared: their texts line by line ([`text_diff`], with `similar`), and
//! their graphs node by node ([`graph_diff`]).
//!
//! A graph diff is an id match, not a guess: a node's id is its instruction's name, which
//! passes keep (inside a fusion the id gains the fusion's prefix, so the match is by
//! name, and a name that moved into a fusion is *fused*). The graph drawn is the newer
//! pass's with the older pass's removed nodes added where that pass had them.

use crate::layout::{self, KernelInfo};
use crate::protocol::{DiffKind, DiffLine, GraphView, NodeDiff};
use hloscope_core::api::{Edge, Graph, Node};
use std::collections::{HashMap, HashSet};

/// Every line of `old` and `new` in diff order, with its line numbers.
pub fn text_diff(old: &str, new: &str) -> Vec<DiffLine> {
    let diff = similar::TextDiff::from_lines(old, new);
    diff.iter_all_changes()
        .map(|c| {
            let kind = match c.tag() {
                similar::ChangeTag::Equal => DiffKind::Same,
                similar::ChangeTag::Delete => DiffKind::Removed,
                similar::ChangeTag::Insert => DiffKind::Added,
            };
            let number = |i: Option<usize>| i.map_or(0, |i| i as u32 + 1);
            DiffLine {
                kind,
                old: number(c.old_index()),
                new: number(c.new_index()),
                text: c.value().trim_end_matches('\n').to_string(),
            }
        })
        .collect()
}

/// Each node's operands by name, sorted (what "same operands" means across passes,
/// where a fused operand's id has changed but its name has not).
fn operand_names(graph: &Graph) -> HashMap<&str, Vec<&str>> {
    let name: HashMap<&str, &str> = graph.nodes.iter().map(|n| (n.id.as_str(), n.name.as_str())).collect();
    let mut ops: HashMap<&str, Vec<&str>> = HashMap::new();
    for e in &graph.edges {
        if let (Some(&f), Some(&t)) = (name.get(e.from.as_str()), name.get(e.to.as_str())) {
            ops.entry(t).or_default().push(f);
        }
    }
    for v in ops.values_mut() {
        v.sort_unstable();
    }
    ops
}

fn is_fusion(n: &Node) -> bool {
    n.op == "fusion" && n.fusion_group.as_deref() == Some(n.name.as_str())
}

/// How `new` (a node of the newer pass) compares with the older pass.
fn classify(
    new: &Node,
    old: Option<&Node>,
    new_ops: &HashMap<&str, Vec<&str>>,
    old_ops: &HashMap<&str, Vec<&str>>,
) -> NodeDiff {
    let Some(old) = old else { return NodeDiff::Added };
    if new.fusion_group != old.fusion_group && new.fusion_group.is_some() && !is_fusion(new) {
        return NodeDiff::Fused;
    }
    let same = new.op == old.op
        && new.dtype == old.dtype
        && new.shape == old.shape
        && new_ops.get(new.name.as_str()) == old_ops.get(old.name.as_str());
    if same {
        NodeDiff::Same
    } else {
        NodeDiff::Changed
    }
}

/// The graph diff of `old` → `new`, laid out: `new`'s nodes where `new_layout` has them,
/// `old`'s removed nodes where `old_layout` had them, each node's `diff` set.
pub fn graph_diff(
    old: &Graph,
    new: &Graph,
    old_layout: &GraphView,
    new_layout: &GraphView,
    collapsed: &HashSet<String>,
    kernels: &HashMap<String, KernelInfo>,
) -> GraphView {
    let old_by_name: HashMap<&str, &Node> = old.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let new_by_name: HashMap<&str, &Node> = new.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let (old_ops, new_ops) = (operand_names(old), operand_names(new));

    let mut union = new.clone();
    let removed: Vec<&Node> = old.nodes.iter().filter(|n| !new_by_name.contains_key(n.name.as_str())).collect();
    let removed_ids: HashSet<&str> = removed.iter().map(|n| n.id.as_str()).collect();
    union.nodes.extend(removed.iter().map(|&n| n.clone()));
    // The old edges of removed nodes, their other ends where the new pass has them.
    let old_name: HashMap<&str, &str> = old.nodes.iter().map(|n| (n.id.as_str(), n.name.as_str())).collect();
    let resolve = |id: &str| -> Option<String> {
        if removed_ids.contains(id) {
            return Some(id.to_string());
        }
        new_by_name.get(old_name.get(id)?).map(|n| n.id.clone())
    };
    for e in old.edges.iter().filter(|e| removed_ids.contains(e.from.as_str()) || removed_ids.contains(e.to.as_str())) {
        if let (Some(from), Some(to)) = (resolve(&e.from), resolve(&e.to)) {
            union.edges.push(Edge { from, to, shape: e.shape.clone(), bytes: e.bytes });
        }
    }

    // Seeds: the new pass's places, and the old pass's for what it alone had.
    let mut seeds = new_layout.clone();
    seeds.nodes.extend(old_layout.nodes.iter().filter(|n| removed_ids.contains(n.id.as_str())).cloned());
    let mut view = layout::layout(
        &union,
        layout::Options { collapsed: Some(collapsed), previous: Some(&seeds), kernels: Some(kernels) },
    );
    for n in &mut view.nodes {
        n.diff = Some(if removed_ids.contains(n.id.as_str()) && !new_by_name.contains_key(n.name.as_str()) {
            NodeDiff::Removed
        } else {
            let new_node = new_by_name[n.name.as_str()];
            classify(new_node, old_by_name.get(n.name.as_str()).copied(), &new_ops, &old_ops)
        });
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, op: &str, group: Option<&str>) -> Node {
        Node {
            id: id.into(),
            name: id.rsplit('/').next().unwrap().into(),
            op: op.into(),
            dtype: "f32".into(),
            shape: vec![4],
            fusion_group: group.map(Into::into),
            loc: "1:1".into(),
            source: None,
        }
    }

    fn edge(from: &str, to: &str) -> Edge {
        Edge { from: from.into(), to: to.into(), shape: "f32[4]".into(), bytes: 16 }
    }

    #[test]
    fn a_hand_made_pair_is_classified_node_by_node() {
        // p → a → b → c, and d unused; after: a and b fused into f, c now reads p too, d gone,
        // e new.
        let old = Graph {
            nodes: vec![node("p", "parameter", None), node("a", "exp", None), node("b", "tanh", None)]
                .into_iter()
                .chain([node("c", "add", None), node("d", "negate", None)])
                .collect(),
            edges: vec![edge("p", "a"), edge("a", "b"), edge("b", "c"), edge("p", "d")],
        };
        let new = Graph {
            nodes: vec![
                node("p", "parameter", None),
                node("f/a", "exp", Some("f")),
                node("f/b", "tanh", Some("f")),
                node("f", "fusion", Some("f")),
                node("c", "add", None),
                node("e", "abs", None),
            ],
            edges: vec![edge("p", "f/a"), edge("f/a", "f/b"), edge("f", "c"), edge("p", "c"), edge("c", "e")],
        };
        let (ol, nl) = (layout::layout(&old, Default::default()), layout::layout(&new, Default::default()));
        let g = graph_diff(&old, &new, &ol, &nl, &HashSet::new(), &HashMap::new());
        let status: HashMap<&str, NodeDiff> = g.nodes.iter().map(|n| (n.id.as_str(), n.diff.unwrap())).collect();
        assert_eq!(status["p"], NodeDiff::Same);
        assert_eq!(status["f/a"], NodeDiff::Fused);
        assert_eq!(status["f/b"], NodeDiff::Fused);
        assert_eq!(status["f"], NodeDiff::Added);
        assert_eq!(status["c"], NodeDiff::Changed); // reads f and p now, not b
        assert_eq!(status["d"], NodeDiff::Removed);
        assert_eq!(status["e"], NodeDiff::Added);
        assert_eq!(status.len(), 7);
        // The removed node keeps its edge from p.
        assert!(g.edges.iter().any(|e| e.from == "p" && e.to == "d"));
    }

    #[test]
    fn the_text_diff_numbers_both_sides() {
        let d = text_diff("a\nb\nc\n", "a\nc\nd\n");
        let got: Vec<(DiffKind, u32, u32, &str)> = d.iter().map(|l| (l.kind, l.old, l.new, l.text.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (DiffKind::Same, 1, 1, "a"),
                (DiffKind::Removed, 2, 0, "b"),
                (DiffKind::Same, 3, 2, "c"),
                (DiffKind::Added, 0, 3, "d"),
            ]
        );
    }
}
