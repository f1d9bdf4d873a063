//! A layered (Sugiyama-style) layout of a snapshot's graph, with fusion groups kept
//! together so each can be drawn as one box.
//!
//! Layers are longest paths from the sources; within a layer, nodes are ordered by the
//! mean position of their operands (two sweeps), members of one fusion group next to each
//! other. Edges are straight lines from an operand's bottom to its user's top. Inside a
//! fusion, the members that no other member reads feed the fusion instruction, which is
//! drawn in its cluster as the kernel's output (as `hloscope_core::api::graph_to_dot`).
//! Linear in nodes plus edges per sweep, so 2,000 instructions lay out in milliseconds.

use crate::protocol::{ClusterView, EdgeView, GraphView, NodeView};
use hloscope_core::api::{Graph, Node};
use std::collections::{BTreeMap, HashMap};

const NODE_H: f64 = 34.0;
const LAYER_GAP: f64 = 44.0;
const NODE_GAP: f64 = 18.0;
const MARGIN: f64 = 24.0;
const PAD: f64 = 8.0;
/// Room for a cluster's label above its members.
const LABEL: f64 = 14.0;
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
    for (fi, f) in graph.nodes.iter().enumerate().filter(|(_, n)| is_fusion_node(n)) {
        let prefix = format!("{}/", f.id);
        for (mi, m) in graph.nodes.iter().enumerate().filter(|(_, m)| m.id.starts_with(&prefix)) {
            if !graph.edges.iter().any(|e| e.from == m.id && e.to.starts_with(&prefix)) {
                edges.push((mi, fi, "", 0));
            }
        }
    }
    let mut succs = vec![Vec::new(); n];
    let mut preds = vec![Vec::new(); n];
    for &(f, t, _, _) in &edges {
        succs[f].push(t);
        preds[t].push(f);
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
    for i in 0..n {
        layers[layer[i]].push(i);
    }

    // Order within layers: barycenters of operands, fusion groups kept contiguous.
    let mut pos = vec![0.0f64; n];
    for l in &layers {
        for (k, &v) in l.iter().enumerate() {
            pos[v] = k as f64;
        }
    }
    for _ in 0..2 {
        for l in layers.iter_mut().skip(1) {
            let bary: Vec<f64> = l
                .iter()
                .map(|&v| {
                    let p = &preds[v];
                    if p.is_empty() {
                        pos[v]
                    } else {
                        p.iter().map(|&u| pos[u]).sum::<f64>() / p.len() as f64
                    }
                })
                .collect();
            let mut group_sum: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
            for (k, &v) in l.iter().enumerate() {
                if let Some(g) = &graph.nodes[v].fusion_group {
                    let e = group_sum.entry(g.as_str()).or_default();
                    e.0 += bary[k];
                    e.1 += 1;
                }
            }
            let mut keyed: Vec<(f64, f64, usize)> = l
                .iter()
                .enumerate()
                .map(|(k, &v)| {
                    let g = graph.nodes[v].fusion_group.as_deref().and_then(|g| group_sum.get(g));
                    (g.map_or(bary[k], |(s, c)| s / *c as f64), bary[k], v)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
            *l = keyed.into_iter().map(|(_, _, v)| v).collect();
            for (k, &v) in l.iter().enumerate() {
                pos[v] = k as f64;
            }
        }
    }

    // Coordinates: each layer a centred row.
    let types: Vec<String> = graph.nodes.iter().map(type_text).collect();
    let widths: Vec<f64> = graph
        .nodes
        .iter()
        .zip(&types)
        .map(|(n, t)| {
            let chars = n.name.len().max(n.op.len() + 1 + t.len());
            (chars as f64 * CHAR_W + 16.0).max(56.0)
        })
        .collect();
    let row_w: Vec<f64> = layers
        .iter()
        .map(|l| l.iter().map(|&v| widths[v]).sum::<f64>() + NODE_GAP * l.len().saturating_sub(1) as f64)
        .collect();
    let max_w = row_w.iter().copied().fold(0.0, f64::max);
    let (mut xs, mut ys) = (vec![0.0; n], vec![0.0; n]);
    for (li, l) in layers.iter().enumerate() {
        let mut x = MARGIN + (max_w - row_w[li]) / 2.0;
        let y = MARGIN + LABEL + li as f64 * (NODE_H + LAYER_GAP);
        for &v in l {
            xs[v] = x;
            ys[v] = y;
            x += widths[v] + NODE_GAP;
        }
    }

    let nodes: Vec<NodeView> = graph
        .nodes
        .iter()
        .enumerate()
        .map(|(i, nd)| NodeView {
            id: nd.id.clone(),
            name: nd.name.clone(),
            op: nd.op.clone(),
            ty: types[i].clone(),
            line: nd.loc.split(':').next().and_then(|l| l.parse().ok()).unwrap_or(0),
            loc: nd.loc.clone(),
            source: nd.source.clone(),
            fusion_group: nd.fusion_group.clone(),
            x: xs[i],
            y: ys[i],
            w: widths[i],
            h: NODE_H,
        })
        .collect();
    let edge_views = edges
        .iter()
        .map(|&(f, t, shape, bytes)| EdgeView {
            from: graph.nodes[f].id.clone(),
            to: graph.nodes[t].id.clone(),
            shape: shape.to_string(),
            bytes,
            x1: xs[f] + widths[f] / 2.0,
            y1: ys[f] + NODE_H,
            x2: xs[t] + widths[t] / 2.0,
            y2: ys[t],
        })
        .collect();
    let mut boxes: BTreeMap<&str, (f64, f64, f64, f64, usize)> = BTreeMap::new();
    for (i, nd) in graph.nodes.iter().enumerate() {
        if let Some(g) = &nd.fusion_group {
            let b = boxes.entry(g.as_str()).or_insert((f64::MAX, f64::MAX, f64::MIN, f64::MIN, 0));
            b.0 = b.0.min(xs[i]);
            b.1 = b.1.min(ys[i]);
            b.2 = b.2.max(xs[i] + widths[i]);
            b.3 = b.3.max(ys[i] + NODE_H);
            b.4 += 1;
        }
    }
    let clusters = boxes
        .into_iter()
        .map(|(name, (x0, y0, x1, y1, members))| ClusterView {
            name: name.to_string(),
            members,
            x: x0 - PAD,
            y: y0 - PAD - LABEL,
            w: x1 - x0 + 2.0 * PAD,
            h: y1 - y0 + 2.0 * PAD + LABEL,
        })
        .collect();
    GraphView {
        width: max_w + 2.0 * MARGIN,
        height: MARGIN * 2.0 + LABEL + depth as f64 * (NODE_H + LAYER_GAP),
        nodes,
        edges: edge_views,
        clusters,
    }
}
