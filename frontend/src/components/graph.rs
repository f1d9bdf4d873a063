//! The selected pass's graph as SVG, laid out by the worker (`frontend/worker/src/layout.rs`):
//! fusion groups as labelled boxes, nodes as boxes with name, op and type.

use crate::protocol::{GraphView, NodeView};
use leptos::prelude::*;

fn f(v: f64) -> String {
    format!("{v:.1}")
}

#[component]
pub fn Graph(
    /// The selected pass's laid-out graph.
    #[prop(into)]
    graph: Signal<Option<GraphView>>,
    /// Set when a node is clicked.
    node: RwSignal<Option<NodeView>>,
) -> impl IntoView {
    let selected_id = move || node.with(|n| n.as_ref().map(|n| n.id.clone()));
    view! {
        <div class="graph" data-testid="graph">
            {move || {
                graph
                    .with(|g| {
                        g.as_ref()
                            .map(|g| {
                                let clusters = g
                                    .clusters
                                    .iter()
                                    .map(|c| {
                                        view! {
                                            <g data-testid="fusion-cluster" data-name=c.name.clone()>
                                                <rect class="cluster" x=f(c.x) y=f(c.y) width=f(c.w) height=f(c.h) rx="6" />
                                                <text class="cluster-label" x=f(c.x + 6.0) y=f(c.y + 12.0)>
                                                    {format!("{} · {} ops", c.name, c.members)}
                                                </text>
                                            </g>
                                        }
                                    })
                                    .collect_view();
                                let edges = g
                                    .edges
                                    .iter()
                                    .map(|e| {
                                        view! {
                                            <line
                                                class="edge"
                                                class:internal=e.bytes == 0
                                                x1=f(e.x1)
                                                y1=f(e.y1)
                                                x2=f(e.x2)
                                                y2=f(e.y2)
                                            />
                                        }
                                    })
                                    .collect_view();
                                let nodes = g
                                    .nodes
                                    .iter()
                                    .map(|n| {
                                        let clicked = n.clone();
                                        let id = n.id.clone();
                                        view! {
                                            <g
                                                data-testid="graph-node"
                                                data-op=n.op.clone()
                                                data-id=n.id.clone()
                                                class="node"
                                                class:fused=n.fusion_group.is_some()
                                                class:selected=move || selected_id().as_deref() == Some(id.as_str())
                                                on:click=move |_| node.set(Some(clicked.clone()))
                                            >
                                                <rect x=f(n.x) y=f(n.y) width=f(n.w) height=f(n.h) rx="4" />
                                                <text class="node-name" x=f(n.x + 8.0) y=f(n.y + 14.0)>
                                                    {n.name.clone()}
                                                </text>
                                                <text class="node-type" x=f(n.x + 8.0) y=f(n.y + 27.0)>
                                                    {format!("{} {}", n.op, n.ty)}
                                                </text>
                                            </g>
                                        }
                                    })
                                    .collect_view();
                                view! {
                                    <svg
                                        width=f(g.width)
                                        height=f(g.height)
                                        viewBox=format!("0 0 {} {}", f(g.width), f(g.height))
                                    >
                                        {clusters}
                                        {edges}
                                        {nodes}
                                    </svg>
                                }
                            })
                    })
            }}
        </div>
    }
}
