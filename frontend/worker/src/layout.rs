//! A layered (Sugiyama-style) layout of a snapshot's graph, fusion groups as compound
//! nodes so each is one box that nothing else overlaps.
//!
//! Two levels of the same layered layout ([`layered`]): first the inside of each fusion
//! group, then the top level, where a group is one node of its inside's size. Layers are
//! longest paths from the sources; within a layer, nodes are ordered by the mean position
//! of their operands (two sweeps) and placed under them where there is room. Edges are
//! straight lines from an operand's bottom to its user's top. Inside a fusion, the members
//! that no other member reads feed the fusion instruction, which is drawn in its cluster as
//! the kernel's output (as `hloscope_core::api::graph_to_dot`). Linear in nodes plus edges
//! per sweep, so 2,000 instructions lay out in milliseconds.

use crate::protocol::{ClusterView, EdgeView, GraphView, NodeView};
use hloscope_core::api::{Graph, Node};
use std::collections::{BTreeMap, HashMap, HashSet};

const NODE_H: f64 = 34.0;
const LAYER_GAP: f64 = 40.0;
const NODE_GAP: f64 = 18.0;
const MARGIN: f64 = 16.0;
const PAD: f64 = 10.0;
/// Room for a cluster's label above its members.
const LABEL: f64 = 16.0;
const CHAR_W: f64 = 6.6;

fn is_fusion_node(n: &Node) -> bool {
    n.op == "fusion" && n.fusion_group.as_deref() == Some(n.name.as_str()) && !n.id.contains('/')
}

fn type_text(n: &Node) -> String {
    match n.dtype.as_str() {
        "tuple" | "token" => n.dtype.clone(),
        d => format!("{d}[{}]", n.shape.iter().map(i64::to_string).collect::<Vec<_>>().join(",")),
    }
}

/// Top-left corners for boxes of `sizes` (width, height) joined by `edges` (from, to),
/// laid out in layers from the top; and the width and height of the whole.
fn layered(sizes: &[(f64, f64)], edges: &[(usize, usize)]) -> (Vec<(f64, f64)>, f64, f64) {
    let n = sizes.len();
    let mut succs = vec![Vec::new(); n];
    let mut preds = vec![Vec::new(); n];
    for &(f, t) in edges {
        if f != t {
            succs[f].push(t);
            preds[t].push(f);
        }
    }
    // Longest path from the sources (Kahn's order); a node on a cycle stays on layer 0.
    let mut layer = vec![0usize; n];
    let mut indeg: Vec<usize> = preds.iter().map(Vec::len).collect();
    let mut queue: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut head = 0;
    while head < queue.len() {
        let v = queue[head];
        head += 1;
        for &s in &succs[v] {
            layer[s] = layer[s].max(layer[v] + 1);
            indeg[s] -= 1;
            if indeg[s] == 0 {
                queue.push(s);
            }
        }
    }
    let depth = layer.iter().copied().max().map_or(0, |d| d + 1);
    let mut layers: Vec<Vec<usize>> = vec![Vec::new(); depth];
    for (i, &l) in layer.iter().enumerate() {
        layers[l].push(i);
    }
    // Order within layers by the barycenter of the operands' positions.
    let mut pos = vec![0.0f64; n];
    for l in &layers {
        for (k, &v) in l.iter().enumerate() {
            pos[v] = k as f64;
        }
    }
    for _ in 0..2 {
        for l in layers.iter_mut().skip(1) {
            let mut keyed: Vec<(f64, usize)> = l
                .iter()
                .map(|&v| {
                    let p = &preds[v];
                    let b = if p.is_empty() { pos[v] } else { p.iter().map(|&u| pos[u]).sum::<f64>() / p.len() as f64 };
                    (b, v)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
            *l = keyed.into_iter().map(|(_, v)| v).collect();
            for (k, &v) in l.iter().enumerate() {
                pos[v] = k as f64;
            }
        }
    }
    // Coordinates: each node under the mean of its operands where there is room.
    let mut xy = vec![(0.0, 0.0); n];
    let mut y = 0.0;
    for l in &layers {
        let mut right = f64::MIN;
        for &v in l {
            let (w, _) = sizes[v];
            let p = &preds[v];
            let want = if p.is_empty() {
                right.max(0.0)
            } else {
                p.iter().map(|&u| xy[u].0 + sizes[u].0 / 2.0).sum::<f64>() / p.len() as f64 - w / 2.0
            };
            let x = if right == f64::MIN { want } else { want.max(right + NODE_GAP) };
            xy[v] = (x, y);
            right = x + w;
        }
        y += l.iter().map(|&v| sizes[v].1).fold(0.0, f64::max) + LAYER_GAP;
    }
    let min_x = xy.iter().map(|p| p.0).fold(f64::MAX, f64::min);
    let min_x = if min_x == f64::MAX { 0.0 } else { min_x };
    for p in &mut xy {
        p.0 -= min_x;
    }
    let width = xy.iter().zip(sizes).map(|(p, s)| p.0 + s.0).fold(0.0, f64::max);
    (xy, width, (y - LAYER_GAP).max(0.0))
}

/// Lays `graph` out; the result holds every node, edge and fusion cluster with coordinates.
pub fn layout(graph: &Graph) -> GraphView {
    let n = graph.nodes.len();
    let index: HashMap<&str, usize> = graph.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
    // Edges into a fusion instruction are drawn to the members that read them instead.
    let mut edges: Vec<(usize, usize, &str, u64)> = graph
        .edges
        .iter()
        .filter_map(|e| {
            let (&f, &t) = (index.get(e.from.as_str())?, index.get(e.to.as_str())?);
            (!is_fusion_node(&graph.nodes[t]) && f != t).then_some((f, t, e.shape.as_str(), e.bytes))
        })
        .collect();
    let read_inside: HashSet<&str> = graph
        .edges
        .iter()
        .filter(|e| {
            e.to.split_once('/').is_some_and(|(g, _)| e.from.starts_with(g) && e.from[g.len()..].starts_with('/'))
        })
        .map(|e| e.from.as_str())
        .collect();
    for (fi, f) in graph.nodes.iter().enumerate().filter(|(_, n)| is_fusion_node(n)) {
        let prefix = format!("{}/", f.id);
        for (mi, m) in graph.nodes.iter().enumerate().filter(|(_, m)| m.id.starts_with(&prefix)) {
            if !read_inside.contains(m.id.as_str()) {
                edges.push((mi, fi, "", 0));
            }
        }
    }

    let types: Vec<String> = graph.nodes.iter().map(type_text).collect();
    let widths: Vec<f64> = graph
        .nodes
        .iter()
        .zip(&types)
        .map(|(n, t)| ((n.name.len().max(n.op.len() + 1 + t.len())) as f64 * CHAR_W + 16.0).max(56.0))
        .collect();

    // Units of the top level: a node outside any fusion, or a whole fusion group.
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, nd) in graph.nodes.iter().enumerate() {
        if let Some(g) = &nd.fusion_group {
            groups.entry(g.as_str()).or_default().push(i);
        }
    }
    let mut unit_of = vec![0usize; n];
    let mut units: Vec<(f64, f64)> = Vec::new();
    // Each node's offset inside its unit.
    let mut offset = vec![(0.0, 0.0); n];
    let mut cluster_units: Vec<(&str, usize, usize)> = Vec::new();
    for (i, nd) in graph.nodes.iter().enumerate() {
        if nd.fusion_group.is_none() {
            unit_of[i] = units.len();
            units.push((widths[i], NODE_H));
        }
    }
    for (g, members) in &groups {
        let local: HashMap<usize, usize> = members.iter().enumerate().map(|(k, &i)| (i, k)).collect();
        let inner: Vec<(usize, usize)> =
            edges.iter().filter_map(|&(f, t, _, _)| Some((*local.get(&f)?, *local.get(&t)?))).collect();
        let sizes: Vec<(f64, f64)> = members.iter().map(|&i| (widths[i], NODE_H)).collect();
        let (xy, w, h) = layered(&sizes, &inner);
        let u = units.len();
        for (k, &i) in members.iter().enumerate() {
            unit_of[i] = u;
            offset[i] = (PAD + xy[k].0, PAD + LABEL + xy[k].1);
        }
        units.push((w + 2.0 * PAD, h + 2.0 * PAD + LABEL));
        cluster_units.push((g, u, members.len()));
    }
    let mut top: Vec<(usize, usize)> =
        edges.iter().map(|&(f, t, _, _)| (unit_of[f], unit_of[t])).filter(|(a, b)| a != b).collect();
    top.sort_unstable();
    top.dedup();
    let (unit_xy, width, height) = layered(&units, &top);
    let at = |i: usize| {
        let (ux, uy) = unit_xy[unit_of[i]];
        (MARGIN + ux + offset[i].0, MARGIN + uy + offset[i].1)
    };

    let nodes: Vec<NodeView> = graph
        .nodes
        .iter()
        .enumerate()
        .map(|(i, nd)| {
            let (x, y) = at(i);
            NodeView {
                id: nd.id.clone(),
                name: nd.name.clone(),
                op: nd.op.clone(),
                ty: types[i].clone(),
                line: nd.loc.split(':').next().and_then(|l| l.parse().ok()).unwrap_or(0),
                loc: nd.loc.clone(),
                source: nd.source.clone(),
                fusion_group: nd.fusion_group.clone(),
                x,
                y,
                w: widths[i],
                h: NODE_H,
            }
        })
        .collect();
    let edge_views = edges
        .iter()
        .map(|&(f, t, shape, bytes)| {
            let ((fx, fy), (tx, ty)) = (at(f), at(t));
            EdgeView {
                from: graph.nodes[f].id.clone(),
                to: graph.nodes[t].id.clone(),
                shape: shape.to_string(),
                bytes,
                x1: fx + widths[f] / 2.0,
                y1: fy + NODE_H,
                x2: tx + widths[t] / 2.0,
                y2: ty,
            }
        })
        .collect();
    let clusters = cluster_units
        .into_iter()
        .map(|(name, u, members)| ClusterView {
            name: name.to_string(),
            members,
            x: MARGIN + unit_xy[u].0,
            y: MARGIN + unit_xy[u].1,
            w: units[u].0,
            h: units[u].1,
        })
        .collect();
    GraphView { width: width + 2.0 * MARGIN, height: height + 2.0 * MARGIN, nodes, edges: edge_views, clusters }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overlaps(a: (f64, f64, f64, f64), b: (f64, f64, f64, f64)) -> bool {
        a.0 < b.0 + b.2 && b.0 < a.0 + a.2 && a.1 < b.1 + b.3 && b.1 < a.1 + a.3
    }

    #[test]
    fn clusters_hold_their_members_and_nothing_else() {
        let src = include_str!("../../../backend/tests/corpus/transformer_block/module.mlir");
        let mut module = hloscope_core::parse::parse_module(src).unwrap();
        let config = hloscope_core::passes::pipeline::PipelineConfig::default();
        let snaps = hloscope_core::passes::pipeline::run_pipeline(&mut module, &config).unwrap();
        let g = layout(&snaps.iter().find(|s| s.pass == "fusion").unwrap().graph);
        assert!(g.clusters.len() > 1);
        for (i, a) in g.clusters.iter().enumerate() {
            for b in &g.clusters[i + 1..] {
                assert!(!overlaps((a.x, a.y, a.w, a.h), (b.x, b.y, b.w, b.h)), "{a:?} {b:?}");
            }
        }
        for nd in &g.nodes {
            let r = (nd.x, nd.y, nd.w, nd.h);
            for c in &g.clusters {
                let inside = nd.fusion_group.as_deref() == Some(c.name.as_str());
                assert_eq!(overlaps(r, (c.x, c.y, c.w, c.h)), inside, "{} vs {}", nd.id, c.name);
            }
            assert!(nd.x >= 0.0 && nd.x + nd.w <= g.width && nd.y + nd.h <= g.height);
        }
    }
}
