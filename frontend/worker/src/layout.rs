//! A layered (Sugiyama-style) layout of a snapshot's graph, fusion groups as compound
//! nodes so each is one box that nothing else overlaps.
//!
//! Two levels of the same layered layout ([`layered`]): first the inside of each fusion
//! group, then the top level, where a group is one node of its inside's size (or of its
//! label's, when collapsed: its members are then not drawn and their edges end at the
//! box). Layers are longest paths from the sources; within a layer, nodes are ordered by
//! the mean position of their operands (two sweeps) and placed under them where there is
//! room. Edges are straight lines from an operand's bottom to its user's top. Inside a
//! fusion, the members that no other member reads feed the fusion instruction, which is
//! drawn in its cluster as the kernel's output (as `hloscope_core::api::graph_to_dot`).
//!
//! Stable across passes: given the previous pass's layout, a node (or cluster) with the
//! same id is ordered and placed where it was, so a pass that only removed or added a
//! few nodes moves nothing else. Linear in nodes plus edges per sweep (plus a sort per
//! layer), so 2,000 instructions lay out in milliseconds.

use crate::format;
use crate::protocol::{ClusterView, EdgeView, GraphView, NodeView};
use hloscope_core::api::{Graph, Node};
use std::collections::{BTreeMap, HashMap, HashSet};

const NODE_H: f64 = 34.0;
const LAYER_GAP: f64 = 40.0;
const NODE_GAP: f64 = 18.0;
const MARGIN: f64 = 16.0;
const PAD: f64 = 10.0;
/// Room for a cluster's label above its members (two lines: name and cost).
const LABEL: f64 = 28.0;
const CHAR_W: f64 = 6.6;
/// A collapsed cluster: one box with its two label lines.
const COLLAPSED_H: f64 = 40.0;

/// A fusion's kernel as the cost model sees it, for its cluster's label.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelInfo {
    pub kind: String,
    pub bytes_moved: u64,
    pub est_time_s: f64,
}

/// What a layout takes besides the graph.
#[derive(Clone, Copy, Default)]
pub struct Options<'a> {
    /// Fusion groups drawn as one box.
    pub collapsed: Option<&'a HashSet<String>>,
    /// The previous pass's layout: nodes and clusters it had keep their places.
    pub previous: Option<&'a GraphView>,
    /// Each fusion's kernel cost, by fusion name.
    pub kernels: Option<&'a HashMap<String, KernelInfo>>,
}

fn is_fusion_node(n: &Node) -> bool {
    n.op == "fusion" && n.fusion_group.as_deref() == Some(n.name.as_str()) && !n.id.contains('/')
}

fn type_text(n: &Node) -> String {
    match n.dtype.as_str() {
        "tuple" | "token" => n.dtype.clone(),
        d => format!("{d}[{}]", n.shape.iter().map(i64::to_string).collect::<Vec<_>>().join(",")),
    }
}

fn cluster_label(name: &str, members: usize, kernel: Option<&KernelInfo>) -> (String, String) {
    let cost = match kernel {
        Some(k) => format!("{} · {} · {}", k.kind, format::bytes(k.bytes_moved), format::seconds(k.est_time_s)),
        None => String::new(),
    };
    (format!("{name} · {members} ops"), cost)
}

/// Top-left corners for boxes of `sizes` (width, height) joined by `edges` (from, to),
/// laid out in layers from the top, each box where `prev` puts it when it can be; and
/// the width and height of the whole.
fn layered(sizes: &[(f64, f64)], edges: &[(usize, usize)], prev: &[Option<f64>]) -> (Vec<(f64, f64)>, f64, f64) {
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
    // Order within layers by a key in x: where the previous layout had the box, else the
    // mean of its operands' keys (the first layer: its order as given).
    let mut key = vec![0.0f64; n];
    let mut running = 0.0;
    for &v in layers.first().into_iter().flatten() {
        key[v] = prev[v].map_or(running, |x| x + sizes[v].0 / 2.0);
        running += sizes[v].0 + NODE_GAP;
    }
    for sweep in 0..2 {
        for l in layers.iter_mut().skip(usize::from(sweep == 0)) {
            let mut keyed: Vec<(f64, usize)> = l
                .iter()
                .map(|&v| {
                    let p = &preds[v];
                    let k = match prev[v] {
                        Some(x) => x + sizes[v].0 / 2.0,
                        None if p.is_empty() => key[v],
                        None => p.iter().map(|&u| key[u]).sum::<f64>() / p.len() as f64,
                    };
                    (k, v)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
            *l = keyed.iter().map(|&(_, v)| v).collect();
            for (k, v) in keyed {
                key[v] = k;
            }
        }
    }
    // Coordinates: each box where it was, else under the mean of its operands, where
    // there is room.
    let mut xy = vec![(0.0, 0.0); n];
    let mut y = 0.0;
    for l in &layers {
        let mut right = f64::MIN;
        for &v in l {
            let (w, _) = sizes[v];
            let p = &preds[v];
            let want = match prev[v] {
                Some(x) => x,
                None if p.is_empty() => right.max(0.0) + if right == f64::MIN { 0.0 } else { NODE_GAP },
                None => p.iter().map(|&u| xy[u].0 + sizes[u].0 / 2.0).sum::<f64>() / p.len() as f64 - w / 2.0,
            };
            let x = if right == f64::MIN { want } else { want.max(right + NODE_GAP) };
            xy[v] = (x, y);
            right = x + w;
        }
        y += l.iter().map(|&v| sizes[v].1).fold(0.0, f64::max) + LAYER_GAP;
    }
    // Nothing left of 0; and unseeded layouts start at 0 (a seeded one keeps its places).
    let min_x = xy.iter().map(|p| p.0).fold(f64::MAX, f64::min);
    let seeded = prev.iter().any(Option::is_some);
    let shift = if min_x == f64::MAX || (seeded && min_x >= 0.0) { 0.0 } else { min_x };
    for p in &mut xy {
        p.0 -= shift;
    }
    let width = xy.iter().zip(sizes).map(|(p, s)| p.0 + s.0).fold(0.0, f64::max);
    (xy, width, (y - LAYER_GAP).max(0.0))
}

/// Lays `graph` out; the result holds every drawn node, edge and fusion cluster with
/// coordinates (a collapsed cluster's members are not drawn).
pub fn layout(graph: &Graph, opts: Options) -> GraphView {
    let n = graph.nodes.len();
    let no_collapsed = HashSet::new();
    let collapsed = opts.collapsed.unwrap_or(&no_collapsed);
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

    // Where the previous layout had each node and cluster.
    let prev_node: HashMap<&str, (f64, f64)> =
        opts.previous.map(|g| g.nodes.iter().map(|n| (n.id.as_str(), (n.x, n.y))).collect()).unwrap_or_default();
    let prev_cluster: HashMap<&str, (f64, f64)> =
        opts.previous.map(|g| g.clusters.iter().map(|c| (c.name.as_str(), (c.x, c.y))).collect()).unwrap_or_default();

    // Units of the top level: a node outside any fusion, or a whole fusion group.
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, nd) in graph.nodes.iter().enumerate() {
        if let Some(g) = &nd.fusion_group {
            groups.entry(g.as_str()).or_default().push(i);
        }
    }
    let mut unit_of = vec![0usize; n];
    let mut units: Vec<(f64, f64)> = Vec::new();
    let mut unit_prev: Vec<Option<f64>> = Vec::new();
    // Each node's offset inside its unit.
    let mut offset = vec![(0.0, 0.0); n];
    let mut cluster_units: Vec<(&str, usize, usize, bool)> = Vec::new();
    for (i, nd) in graph.nodes.iter().enumerate() {
        if nd.fusion_group.is_none() {
            unit_of[i] = units.len();
            units.push((widths[i], NODE_H));
            unit_prev.push(prev_node.get(nd.id.as_str()).map(|p| p.0 - MARGIN));
        }
    }
    for (g, members) in &groups {
        let u = units.len();
        let was = prev_cluster.get(g);
        unit_prev.push(was.map(|p| p.0 - MARGIN));
        let is_collapsed = collapsed.contains(*g);
        cluster_units.push((g, u, members.len(), is_collapsed));
        for &i in members {
            unit_of[i] = u;
        }
        if is_collapsed {
            let (l1, l2) = cluster_label(g, members.len(), opts.kernels.and_then(|k| k.get(*g)));
            units.push(((l1.len().max(l2.len()) as f64 * CHAR_W + 2.0 * PAD).max(80.0), COLLAPSED_H));
            continue;
        }
        let local: HashMap<usize, usize> = members.iter().enumerate().map(|(k, &i)| (i, k)).collect();
        let inner: Vec<(usize, usize)> =
            edges.iter().filter_map(|&(f, t, _, _)| Some((*local.get(&f)?, *local.get(&t)?))).collect();
        let sizes: Vec<(f64, f64)> = members.iter().map(|&i| (widths[i], NODE_H)).collect();
        // A member keeps its place inside a cluster that was there before.
        let inner_prev: Vec<Option<f64>> =
            members.iter().map(|&i| Some(prev_node.get(graph.nodes[i].id.as_str())?.0 - was?.0 - PAD)).collect();
        let (xy, w, h) = layered(&sizes, &inner, &inner_prev);
        for (k, &i) in members.iter().enumerate() {
            offset[i] = (PAD + xy[k].0, PAD + LABEL + xy[k].1);
        }
        let (l1, l2) = cluster_label(g, members.len(), opts.kernels.and_then(|k| k.get(*g)));
        let label_w = l1.len().max(l2.len()) as f64 * CHAR_W + 2.0 * PAD;
        units.push(((w + 2.0 * PAD).max(label_w), h + 2.0 * PAD + LABEL));
    }
    let mut top: Vec<(usize, usize)> =
        edges.iter().map(|&(f, t, _, _)| (unit_of[f], unit_of[t])).filter(|(a, b)| a != b).collect();
    top.sort_unstable();
    top.dedup();
    let (unit_xy, width, height) = layered(&units, &top, &unit_prev);
    let hidden = |i: usize| graph.nodes[i].fusion_group.as_ref().is_some_and(|g| collapsed.contains(g.as_str()));
    let at = |i: usize| {
        let (ux, uy) = unit_xy[unit_of[i]];
        (MARGIN + ux + offset[i].0, MARGIN + uy + offset[i].1)
    };

    let nodes: Vec<NodeView> = graph
        .nodes
        .iter()
        .enumerate()
        .filter(|&(i, _)| !hidden(i))
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
                hlo: String::new(),
                diff: None,
                provenance: Vec::new(),
                x,
                y,
                w: widths[i],
                h: NODE_H,
            }
        })
        .collect();
    // An endpoint in a collapsed cluster is the cluster's box; edges between the same
    // two boxes are drawn once, with their bytes summed.
    let box_of = |i: usize| -> (f64, f64, f64, f64) {
        if hidden(i) {
            let u = unit_of[i];
            (MARGIN + unit_xy[u].0, MARGIN + unit_xy[u].1, units[u].0, units[u].1)
        } else {
            let (x, y) = at(i);
            (x, y, widths[i], NODE_H)
        }
    };
    let mut edge_views: Vec<EdgeView> = Vec::with_capacity(edges.len());
    let mut drawn: HashMap<(usize, usize), usize> = HashMap::new();
    for &(f, t, shape, bytes) in &edges {
        if hidden(f) && hidden(t) && unit_of[f] == unit_of[t] {
            continue; // inside a collapsed cluster
        }
        let key = (if hidden(f) { n + unit_of[f] } else { f }, if hidden(t) { n + unit_of[t] } else { t });
        if hidden(f) || hidden(t) {
            if let Some(&k) = drawn.get(&key) {
                edge_views[k].bytes += bytes;
                continue;
            }
            drawn.insert(key, edge_views.len());
        }
        let ((fx, fy, fw, fh), (tx, ty, tw, _)) = (box_of(f), box_of(t));
        edge_views.push(EdgeView {
            from: graph.nodes[f].id.clone(),
            to: graph.nodes[t].id.clone(),
            shape: shape.to_string(),
            bytes,
            x1: fx + fw / 2.0,
            y1: fy + fh,
            x2: tx + tw / 2.0,
            y2: ty,
        });
    }
    let clusters = cluster_units
        .into_iter()
        .map(|(name, u, members, collapsed)| {
            let kernel = opts.kernels.and_then(|k| k.get(name)).cloned().unwrap_or_default();
            ClusterView {
                name: name.to_string(),
                members,
                kind: kernel.kind,
                bytes_moved: kernel.bytes_moved,
                est_time_s: kernel.est_time_s,
                collapsed,
                x: MARGIN + unit_xy[u].0,
                y: MARGIN + unit_xy[u].1,
                w: units[u].0,
                h: units[u].1,
            }
        })
        .collect();
    GraphView { width: width + 2.0 * MARGIN, height: height + 2.0 * MARGIN, nodes, edges: edge_views, clusters }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hloscope_core::passes::pipeline::{run_pipeline, PipelineConfig};

    fn overlaps(a: (f64, f64, f64, f64), b: (f64, f64, f64, f64)) -> bool {
        a.0 < b.0 + b.2 && b.0 < a.0 + a.2 && a.1 < b.1 + b.3 && b.1 < a.1 + a.3
    }

    fn fusion_graph() -> Graph {
        let src = include_str!("../../../backend/tests/corpus/transformer_block/module.mlir");
        let mut module = hloscope_core::parse::parse_module(src).unwrap();
        let snaps = run_pipeline(&mut module, &PipelineConfig::default()).unwrap();
        (*snaps.iter().find(|s| s.pass == "fusion").unwrap().graph).clone()
    }

    #[test]
    fn clusters_hold_their_members_and_nothing_else() {
        let g = layout(&fusion_graph(), Options::default());
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

    #[test]
    fn a_collapsed_cluster_is_one_box_and_its_edges_end_there() {
        let graph = fusion_graph();
        let open = layout(&graph, Options::default());
        let big = open.clusters.iter().max_by_key(|c| c.members).unwrap();
        let collapsed: HashSet<String> = [big.name.clone()].into();
        let g = layout(&graph, Options { collapsed: Some(&collapsed), ..Options::default() });
        let c = g.clusters.iter().find(|c| c.name == big.name).unwrap();
        assert!(c.collapsed && c.h == COLLAPSED_H);
        assert!(g.nodes.iter().all(|n| n.fusion_group.as_deref() != Some(big.name.as_str())));
        assert_eq!(g.nodes.len(), open.nodes.len() - big.members);
        // Every edge that touches the cluster ends on its box's bottom or top edge.
        let touching: Vec<&EdgeView> = g.edges.iter().filter(|e| e.to.starts_with(&big.name)).collect();
        assert!(!touching.is_empty());
        for e in touching {
            assert_eq!((e.x2, e.y2), (c.x + c.w / 2.0, c.y), "{e:?}");
        }
    }

    #[test]
    fn the_previous_layout_keeps_untouched_nodes_in_place() {
        let src = include_str!("../../../backend/tests/corpus/transformer_block/module.mlir");
        let mut module = hloscope_core::parse::parse_module(src).unwrap();
        let mut g = (*run_pipeline(&mut module, &PipelineConfig::default()).unwrap()[0].graph).clone();
        let first = layout(&g, Options::default());
        // Drop a sink (a node nothing reads): every other node keeps its place.
        let read: HashSet<&str> = g.edges.iter().map(|e| e.from.as_str()).collect();
        let sink = g.nodes.iter().position(|n| !read.contains(n.id.as_str()) && n.op != "parameter").unwrap();
        let gone = g.nodes.remove(sink).id;
        g.edges.retain(|e| e.to != gone);
        let second = layout(&g, Options { previous: Some(&first), ..Options::default() });
        assert_eq!(second.nodes.len(), first.nodes.len() - 1);
        for n in &second.nodes {
            let was = first.nodes.iter().find(|m| m.id == n.id).unwrap();
            assert_eq!((n.x, n.y), (was.x, was.y), "{}", n.id);
        }
        // Without the previous layout the same graph may move; with it, a second pass
        // over the same graph moves nothing at all.
        let third = layout(&g, Options { previous: Some(&second), ..Options::default() });
        assert_eq!(third.nodes, second.nodes);
    }
}
