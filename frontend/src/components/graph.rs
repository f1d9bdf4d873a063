//! The selected pass's graph as SVG, laid out by the worker (`frontend/worker/src/layout.rs`):
//! fusion groups as labelled boxes (kind, kernel, bytes, time) that open and close,
//! nodes as boxes with name, op and type; in a graph diff, nodes coloured by how they
//! compare with the other pass.
//!
//! Zoom with the wheel, pan by dragging (a CSS transform of the whole `<svg>`, so a pan
//! repaints nothing), find nodes by name or op, hover an edge for its shape and bytes,
//! export what is drawn as an SVG file. The SVG is drawn once per view; what changes
//! without a new view (the selected node, the editor's cursor line, search matches, the
//! selected decision) is marked on the drawn elements with classes, so a large graph is
//! never redrawn for it.

use crate::format;
use crate::protocol::{DecisionView, GraphView, NodeDiff};
use crate::state::state;
use leptos::prelude::*;
use std::collections::HashSet;
use wasm_bindgen::JsCast;

fn f(v: f64) -> String {
    format!("{v:.1}")
}

fn diff_class(d: Option<NodeDiff>) -> &'static str {
    match d {
        None | Some(NodeDiff::Same) => "",
        Some(NodeDiff::Added) => " diff-added",
        Some(NodeDiff::Removed) => " diff-removed",
        Some(NodeDiff::Changed) => " diff-changed",
        Some(NodeDiff::Fused) => " diff-fused",
    }
}

fn diff_name(d: Option<NodeDiff>) -> Option<&'static str> {
    Some(match d? {
        NodeDiff::Same => "same",
        NodeDiff::Added => "added",
        NodeDiff::Removed => "removed",
        NodeDiff::Changed => "changed",
        NodeDiff::Fused => "fused",
    })
}

/// An attribute selector's value, quoted.
fn quoted(v: &str) -> String {
    format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Takes `class` off every element under `root` that has it, then puts it on those that
/// match `selector` (none when empty).
fn mark(root: &web_sys::Element, class: &str, selector: &str) {
    if let Ok(old) = root.query_selector_all(&format!(".{class}")) {
        for i in 0..old.length() {
            if let Some(el) = old.item(i).and_then(|n| n.dyn_into::<web_sys::Element>().ok()) {
                let _ = el.class_list().remove_1(class);
            }
        }
    }
    if selector.is_empty() {
        return;
    }
    if let Ok(new) = root.query_selector_all(selector) {
        for i in 0..new.length() {
            if let Some(el) = new.item(i).and_then(|n| n.dyn_into::<web_sys::Element>().ok()) {
                let _ = el.class_list().add_1(class);
            }
        }
    }
}

/// Text for SVG markup.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The inside of the `<svg>` of one laid-out graph, as markup: a graph of thousands of
/// nodes is parsed by the browser in one go far faster than built element by element
/// across the wasm boundary (nothing in it is reactive: see [`mark`]).
fn draw(g: &GraphView) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(256 * (g.nodes.len() + g.clusters.len()) + 160 * g.edges.len());
    s.push_str("<g class=\"clusters\">");
    for c in &g.clusters {
        let cost = if c.kind.is_empty() {
            String::new()
        } else {
            format!("{} · {} · {}", c.kind, format::bytes(c.bytes_moved), format::seconds(c.est_time_s))
        };
        let title = if c.collapsed { "show the kernel's instructions" } else { "collapse the kernel to one box" };
        let _ = write!(
            s,
            "<g data-testid=\"fusion-cluster\" data-name=\"{name}\" class=\"cluster-g{collapsed}\">\
             <rect class=\"cluster\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" rx=\"6\"/>\
             <text class=\"cluster-label\" x=\"{lx}\" y=\"{ly}\">{name} · {members} ops</text>\
             <text class=\"cluster-cost\" x=\"{lx}\" y=\"{cy}\">{cost}</text>\
             <g class=\"cluster-toggle\" data-testid=\"cluster-toggle\"><title>{title}</title>\
             <rect x=\"{tx}\" y=\"{ty}\" width=\"16\" height=\"16\" rx=\"3\"/>\
             <text x=\"{tcx}\" y=\"{tcy}\">{sign}</text></g></g>",
            name = esc(&c.name),
            collapsed = if c.collapsed { " collapsed" } else { "" },
            x = f(c.x),
            y = f(c.y),
            w = f(c.w),
            h = f(c.h),
            lx = f(c.x + 8.0),
            ly = f(c.y + 13.0),
            cy = f(c.y + 25.0),
            members = c.members,
            cost = esc(&cost),
            tx = f(c.x + c.w - 20.0),
            ty = f(c.y + 3.0),
            tcx = f(c.x + c.w - 12.0),
            tcy = f(c.y + 15.0),
            sign = if c.collapsed { "+" } else { "−" },
        );
    }
    s.push_str("</g><g class=\"edges\">");
    for (i, e) in g.edges.iter().enumerate() {
        let (x1, y1, x2, y2) = (f(e.x1), f(e.y1), f(e.x2), f(e.y2));
        let _ = write!(
            s,
            "<g class=\"edge-g{internal}\" data-edge=\"{i}\">\
             <line class=\"edge\" x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\"/>\
             <line class=\"edge-hit\" x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\"/></g>",
            internal = if e.bytes == 0 { " internal" } else { "" },
        );
    }
    s.push_str("</g><g class=\"nodes\">");
    for n in &g.nodes {
        let diff = diff_name(n.diff).map(|d| format!(" data-diff=\"{d}\"")).unwrap_or_default();
        let _ = write!(
            s,
            "<g data-testid=\"graph-node\" data-op=\"{op}\" data-id=\"{id}\" data-name=\"{name}\" data-line=\"{line}\"{diff} \
             class=\"node{fused}{diff_class}\">\
             <rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" rx=\"4\"/>\
             <text class=\"node-name\" x=\"{tx}\" y=\"{ny}\">{name}</text>\
             <text class=\"node-type\" x=\"{tx}\" y=\"{ty}\">{op} {ty_text}</text></g>",
            op = esc(&n.op),
            id = esc(&n.id),
            name = esc(&n.name),
            line = n.line,
            fused = if n.fusion_group.is_some() { " fused" } else { "" },
            diff_class = diff_class(n.diff),
            x = f(n.x),
            y = f(n.y),
            w = f(n.w),
            h = f(n.h),
            tx = f(n.x + 8.0),
            ny = f(n.y + 14.0),
            ty = f(n.y + 27.0),
            ty_text = esc(&n.ty),
        );
    }
    s.push_str("</g>");
    s
}

/// The names a fusion decision's step `k` has fused so far: the producers and consumers
/// of the decisions taken up to it (a clone counts once its original does).
fn fused_by(decisions: &[DecisionView], k: usize) -> HashSet<String> {
    decisions[..=k.min(decisions.len().saturating_sub(1))]
        .iter()
        .filter(|d| d.taken)
        .flat_map(|d| [d.producer.clone(), d.consumer.clone()])
        .collect()
}

fn joined(name: &str, fused: &HashSet<String>) -> bool {
    fused.contains(name) || name.split_once(".clone.").is_some_and(|(base, _)| fused.contains(base))
}

/// Puts `name` in the list of clusters toggled from their default, or takes it out.
fn flip(toggled: &mut Vec<String>, name: String) {
    match toggled.iter().position(|x| *x == name) {
        Some(i) => {
            toggled.remove(i);
        }
        None => toggled.push(name),
    }
}

/// A press on the graph: where it started, the pan then, and whether it has moved (a pan,
/// not a click).
#[derive(Clone, Copy)]
struct Press {
    x0: f64,
    y0: f64,
    pan: (f64, f64),
    moving: bool,
}

#[component]
pub fn Graph() -> impl IntoView {
    let st = state();
    let scale = RwSignal::new(1.0f64);
    let pan = RwSignal::new((16.0f64, 16.0f64));
    let viewport = NodeRef::<leptos::html::Div>::new();
    let query = RwSignal::new(String::new());
    let match_at = RwSignal::new(0usize);
    let tip: RwSignal<Option<(f64, f64, String)>> = RwSignal::new(None);
    let press: StoredValue<Option<Press>> = StoredValue::new(None);
    let panned = StoredValue::new(false);

    let size = move || {
        viewport.get_untracked().map_or((800.0, 400.0), |el| (el.client_width() as f64, el.client_height() as f64))
    };
    let fit = move || {
        let Some((gw, gh)) = st.graph.with_untracked(|g| g.as_ref().map(|g| (g.width, g.height))) else {
            return;
        };
        let (vw, vh) = size();
        // The whole graph when it fits at half size or more; else its width, and a tall
        // graph is panned down.
        let s = (vw / gw).min((vh / gh).max(0.5)).clamp(0.1, 1.0);
        scale.set(s);
        pan.set((((vw - gw * s) / 2.0).max(0.0), 0.0));
    };
    // Only when asked (a new example, a file, the f key): a new view of the same module
    // keeps the pan and zoom, so stepping through passes shows what moved.
    Effect::new(move |_| {
        st.fit.get();
        fit();
    });
    let zoom_at = move |factor: f64, px: f64, py: f64| {
        let s = scale.get_untracked();
        let ns = (s * factor).clamp(0.05, 4.0);
        let (tx, ty) = pan.get_untracked();
        pan.set((px - (px - tx) * ns / s, py - (py - ty) * ns / s));
        scale.set(ns);
    };
    let zoom_center = move |factor: f64| {
        let (vw, vh) = size();
        zoom_at(factor, vw / 2.0, vh / 2.0);
    };

    // Search: nodes whose name or op holds the query.
    let matches = Memo::new(move |_| {
        let q = query.get().trim().to_lowercase();
        if q.is_empty() {
            return Vec::new();
        }
        st.graph.with(|g| {
            g.as_ref().map_or_else(Vec::new, |g| {
                g.nodes
                    .iter()
                    .filter(|n| n.name.to_lowercase().contains(&q) || n.op.to_lowercase().contains(&q))
                    .map(|n| (n.id.clone(), n.x + n.w / 2.0, n.y + n.h / 2.0))
                    .collect()
            })
        })
    });
    let goto_match = move |step: usize| {
        let m = matches.get_untracked();
        if m.is_empty() {
            return;
        }
        let i = (match_at.get_untracked() + step) % m.len();
        match_at.set(i);
        let (id, x, y) = m[i].clone();
        let (vw, vh) = size();
        let s = scale.get_untracked();
        pan.set((vw / 2.0 - x * s, vh / 2.0 - y * s));
        st.node.set(Some(id));
    };

    // What changes without a redraw, marked on the drawn elements.
    let root = move || viewport.get().and_then(|v| v.query_selector("svg").ok().flatten());
    Effect::new(move |_| {
        st.graph.track();
        let Some(svg) = root() else { return };
        let id = st.node.get();
        let selector = id.map(|id| {
            let q = quoted(&id);
            format!("[data-id={q}],[data-testid=fusion-cluster][data-name={q}]")
        });
        mark(&svg, "selected", &selector.unwrap_or_default());
    });
    // The HLO instruction a clicked line of kernel code implements: a fused member
    // (`fusion.3/add.1`) or a lone instruction.
    Effect::new(move |_| {
        st.graph.track();
        let Some(svg) = root() else { return };
        let selector = st.code_lit.get().map(|(kernel, inst)| {
            format!("[data-id={}],[data-id={}]", quoted(&format!("{kernel}/{inst}")), quoted(&inst))
        });
        mark(&svg, "code-lit", &selector.unwrap_or_default());
    });
    Effect::new(move |_| {
        st.graph.track();
        let Some(svg) = root() else { return };
        let line = st.cursor_line.get();
        let selector = if line > 0 { format!("[data-testid=graph-node][data-line=\"{line}\"]") } else { String::new() };
        mark(&svg, "at-cursor", &selector);
    });
    Effect::new(move |_| {
        st.graph.track();
        let Some(svg) = root() else { return };
        let selector = matches
            .with(|m| m.iter().map(|(id, _, _)| format!("[data-id={}]", quoted(id))).collect::<Vec<_>>().join(","));
        mark(&svg, "match", &selector);
    });
    Effect::new(move |_| {
        st.graph.track();
        let Some(svg) = root() else { return };
        let picked = st.decision.get();
        let (ends, later, cluster) = st.graph.with_untracked(|g| {
            let none = || (String::new(), String::new(), String::new());
            let (Some(g), Some(k)) = (g.as_ref(), picked) else { return none() };
            let decisions = st.decisions.get_untracked();
            let Some(d) = decisions.get(k) else { return none() };
            let ends = [&d.producer, &d.consumer]
                .map(|n| format!("[data-testid=graph-node][data-name={}]", quoted(n)))
                .join(",");
            // The clusters as they stood after decision k: members fused later are dimmed.
            let fused = fused_by(&decisions, k);
            let later: Vec<String> = g
                .nodes
                .iter()
                // The fusion and its output tuple are the kernel itself, made by fusion.
                .filter(|n| n.fusion_group.is_some() && !["fusion", "tuple"].contains(&n.op.as_str()))
                .filter(|n| !joined(&n.name, &fused))
                .map(|n| format!("[data-id={}]", quoted(&n.id)))
                .collect();
            let groups: HashSet<&str> = g
                .nodes
                .iter()
                .filter(|n| n.name == d.producer || n.name == d.consumer)
                .filter_map(|n| n.fusion_group.as_deref())
                .collect();
            let cluster = groups
                .iter()
                .map(|g| format!("[data-testid=fusion-cluster][data-name={}]", quoted(g)))
                .collect::<Vec<_>>();
            (ends, later.join(","), cluster.join(","))
        });
        mark(&svg, "decision-end", &ends);
        mark(&svg, "later", &later);
        mark(&svg, "decision-cluster", &cluster);
    });

    let closest = |e: &web_sys::Event, selector: &str| -> Option<web_sys::Element> {
        e.target()?.dyn_into::<web_sys::Element>().ok()?.closest(selector).ok().flatten()
    };
    let toggle_cluster = move |name: String| st.toggled.update(|t| flip(t, name));
    let on_click = move |e: web_sys::MouseEvent| {
        if panned.get_value() {
            return;
        }
        let ev: &web_sys::Event = e.as_ref();
        if let Some(t) = closest(ev, "[data-testid=cluster-toggle]") {
            if let Some(name) =
                t.closest("[data-testid=fusion-cluster]").ok().flatten().and_then(|c| c.get_attribute("data-name"))
            {
                toggle_cluster(name);
            }
        } else if let Some(n) = closest(ev, "[data-testid=graph-node]") {
            st.node.set(n.get_attribute("data-id"));
        } else if let Some(c) = closest(ev, "[data-testid=fusion-cluster]") {
            // A cluster's own box selects the fusion (its kernel, in the kernels pane).
            st.node.set(c.get_attribute("data-name"));
        }
    };
    let on_dblclick = move |e: web_sys::MouseEvent| {
        if let Some(c) = closest(e.as_ref(), "[data-testid=fusion-cluster]") {
            if let Some(name) = c.get_attribute("data-name") {
                toggle_cluster(name);
            }
        }
    };
    let on_over = move |e: web_sys::MouseEvent| {
        let Some(edge) = closest(e.as_ref(), "[data-edge]") else {
            tip.set(None);
            return;
        };
        let Some(i) = edge.get_attribute("data-edge").and_then(|i| i.parse::<usize>().ok()) else { return };
        let text = st.graph.with_untracked(|g| {
            let e = g.as_ref()?.edges.get(i)?;
            let what = if e.bytes == 0 && e.shape.is_empty() {
                "inside the kernel".to_string()
            } else {
                format!("{} · {}", e.shape, format::bytes(e.bytes))
            };
            Some(format!("{} → {}: {what}", e.from, e.to))
        });
        let Some(vp) = viewport.get_untracked() else { return };
        let r = vp.get_bounding_client_rect();
        tip.set(text.map(|t| (e.client_x() as f64 - r.left() + 12.0, e.client_y() as f64 - r.top() + 12.0, t)));
    };
    let on_down = move |e: web_sys::PointerEvent| {
        if e.button() == 0 {
            press.set_value(Some(Press {
                x0: e.client_x() as f64,
                y0: e.client_y() as f64,
                pan: pan.get_untracked(),
                moving: false,
            }));
            panned.set_value(false);
        }
    };
    let on_move = move |e: web_sys::PointerEvent| {
        let Some(Press { x0, y0, pan: (tx, ty), moving }) = press.get_value() else { return };
        let (dx, dy) = (e.client_x() as f64 - x0, e.client_y() as f64 - y0);
        if !moving && dx.abs() + dy.abs() < 4.0 {
            return;
        }
        if !moving {
            press.set_value(Some(Press { x0, y0, pan: (tx, ty), moving: true }));
            panned.set_value(true);
        }
        pan.set((tx + dx, ty + dy));
    };
    // Moves and releases anywhere in the window: a pan goes on when the pointer leaves
    // the pane (no pointer capture, which would take the click from the node under it).
    // The graph lives as long as the page: the listeners are never removed.
    let _moves = window_event_listener(leptos::ev::pointermove, on_move);
    let _ups = window_event_listener(leptos::ev::pointerup, move |_| press.set_value(None));
    let on_wheel = move |e: web_sys::WheelEvent| {
        e.prevent_default();
        let Some(vp) = viewport.get_untracked() else { return };
        let r = vp.get_bounding_client_rect();
        zoom_at((-e.delta_y() * 0.0015).exp(), e.client_x() as f64 - r.left(), e.client_y() as f64 - r.top());
    };
    let set_all = move |open: bool| {
        let flip: Vec<String> = st.graph.with_untracked(|g| {
            g.as_ref().map_or_else(Vec::new, |g| {
                g.clusters.iter().filter(|c| c.collapsed == open).map(|c| c.name.clone()).collect()
            })
        });
        st.toggled.update(|t| {
            for name in flip {
                self::flip(t, name);
            }
        });
    };
    let export = move |_| {
        if let Some(svg) = viewport.get_untracked().and_then(|v| v.query_selector("svg").ok().flatten()) {
            let name = st.shown_pass().unwrap_or_else(|| "graph".into());
            crate::cm::export_svg(&svg, &format!("hloscope-{name}.svg"));
        }
    };

    let svg = move || {
        st.graph.with(|g| {
            g.as_ref().map(|g| {
                view! {
                    <svg
                        width=f(g.width)
                        height=f(g.height)
                        viewBox=format!("0 0 {} {}", f(g.width), f(g.height))
                        style=move || {
                            let (x, y) = pan.get();
                            format!("transform: translate({x:.1}px, {y:.1}px) scale({:.4})", scale.get())
                        }
                        inner_html=draw(g)
                    ></svg>
                }
            })
        })
    };
    let legend = move || {
        st.graph_diff.get().then(|| {
            view! {
                <span class="legend">
                    <i class="diff-added">"added"</i>
                    <i class="diff-removed">"removed"</i>
                    <i class="diff-changed">"changed"</i>
                    <i class="diff-fused">"fused"</i>
                </span>
            }
        })
    };

    view! {
        <div class="graph-toolbar">
            <input
                type="search"
                placeholder="find a node (name or op) — /"
                data-testid="graph-search"
                prop:value=move || query.get()
                on:input=move |ev| {
                    query.set(event_target_value(&ev));
                    match_at.set(0);
                }
                on:keydown=move |e: web_sys::KeyboardEvent| {
                    if e.key() == "Enter" {
                        e.prevent_default();
                        // From the match on screen, forward (or back with Shift).
                        let n = matches.with_untracked(Vec::len);
                        let on_it = matches.with_untracked(|m| {
                            m.get(match_at.get_untracked()).map(|m| Some(m.0.clone())) == Some(st.node.get_untracked())
                        });
                        goto_match(match (on_it, e.shift_key()) {
                            (false, _) => 0,
                            (true, false) => 1,
                            (true, true) => n.saturating_sub(1),
                        });
                    } else if e.key() == "Escape" {
                        query.set(String::new());
                    }
                }
            />
            <span class="count" data-testid="search-count">
                {move || {
                    let n = matches.with(Vec::len);
                    if query.with(|q| q.trim().is_empty()) { String::new() } else { format!("{n} found") }
                }}
            </span>
            <button title="zoom out" on:click=move |_| zoom_center(1.0 / 1.25)>"−"</button>
            <span class="zoom" data-testid="zoom">{move || format!("{:.0}%", scale.get() * 100.0)}</span>
            <button title="zoom in" on:click=move |_| zoom_center(1.25)>"+"</button>
            <button title="fit the graph to the pane (f)" data-testid="fit" on:click=move |_| fit()>"fit"</button>
            <button title="open every fusion cluster" data-testid="expand-all" on:click=move |_| set_all(true)>"expand all"</button>
            <button title="collapse every fusion cluster to one box" data-testid="collapse-all" on:click=move |_| set_all(false)>"collapse all"</button>
            <label class="toggle" title="colour the nodes by how they compare with the pass the diff is against">
                <input
                    type="checkbox"
                    data-testid="graph-diff"
                    prop:checked=move || st.graph_diff.get()
                    on:change=move |ev| st.graph_diff.set(event_target_checked(&ev))
                />
                "graph diff"
            </label>
            {legend}
            <button title="download the graph as an SVG file" data-testid="export-svg" on:click=export>"export SVG"</button>
        </div>
        <div
            class="graph"
            data-testid="graph"
            node_ref=viewport
            on:click=on_click
            on:dblclick=on_dblclick
            on:mouseover=on_over
            on:mouseleave=move |_| tip.set(None)
            on:pointerdown=on_down
            on:wheel=on_wheel
        >
            {svg}
            {move || {
                tip.get()
                    .map(|(x, y, t)| {
                        view! {
                            <div class="edge-tip" data-testid="edge-tooltip" style=format!("left: {x:.0}px; top: {y:.0}px")>
                                {t}
                            </div>
                        }
                    })
            }}
        </div>
    }
}
