//! What the graph's selected node is: op, type, fusion group, source location, how it
//! compares with the pass diffed against and where the compiler says it came from.

use crate::state::state;
use leptos::prelude::*;

#[component]
pub fn NodeDetails() -> impl IntoView {
    let st = state();
    view! {
        <div class="node-details" data-testid="node-details">
            {move || match st.selected_node() {
                Some(n) => {
                    let diff = n.diff.map(|d| format!("{d:?}").to_lowercase());
                    let provenance = n.provenance.clone();
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
                            <dt>"hlo"</dt>
                            <dd class="hlo" data-testid="node-hlo">{n.hlo.clone()}</dd>
                            <dt>"line:col"</dt>
                            <dd>{n.loc.clone()}</dd>
                            <dt>"source"</dt>
                            <dd>{n.source.clone().unwrap_or_else(|| "—".into())}</dd>
                            {diff.map(|d| view! { <dt>"diff"</dt><dd data-testid="node-diff">{d}</dd> })}
                            {(!provenance.is_empty())
                                .then(|| {
                                    view! {
                                        <dt>"history"</dt>
                                        <dd data-testid="node-provenance">
                                            {provenance.into_iter().map(|p| view! { <div>{p}</div> }).collect_view()}
                                        </dd>
                                    }
                                })}
                        </dl>
                    }
                        .into_any()
                }
                None => view! { <p class="empty">"click a node in the graph"</p> }.into_any(),
            }}
        </div>
    }
}
