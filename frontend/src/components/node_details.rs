//! What the graph's selected node is: op, type, fusion group, source location.

use crate::protocol::NodeView;
use leptos::prelude::*;

#[component]
pub fn NodeDetails(
    /// The node clicked last.
    node: RwSignal<Option<NodeView>>,
) -> impl IntoView {
    view! {
        <div class="node-details" data-testid="node-details">
            {move || {
                node.with(|n| match n {
                    Some(n) => {
                        view! {
                            <dl>
                                <dt>"name"</dt>
                                <dd>{n.name.clone()}</dd>
                                <dt>"op"</dt>
                                <dd>{n.op.clone()}</dd>
                                <dt>"type"</dt>
                                <dd>{n.ty.clone()}</dd>
                                <dt>"fusion"</dt>
                                <dd>{n.fusion_group.clone().unwrap_or_else(|| "—".into())}</dd>
                                <dt>"line:col"</dt>
                                <dd>{n.loc.clone()}</dd>
                                <dt>"source"</dt>
                                <dd>{n.source.clone().unwrap_or_else(|| "—".into())}</dd>
                            </dl>
                        }
                            .into_any()
                    }
                    None => view! { <p class="empty">"click a node in the graph"</p> }.into_any(),
                })
            }}
        </div>
    }
}
