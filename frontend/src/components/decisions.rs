//! The selected pass's fusion decisions: producer, consumer, taken or refused, the rule
//! and its reason, the bytes of memory traffic saved. Linked both ways with the graph:
//! clicking a row (or j/k) lights up its producer, consumer and cluster there, and the
//! rows about the node selected in the graph are marked.

use crate::knobs::{self, Override};
use crate::state::state;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// Rows drawn beyond the selected one (a large module's fusion pass decides thousands of
/// times; more rows come into the table as j steps or "show more" asks).
const PAGE: usize = 300;

#[component]
pub fn Decisions() -> impl IntoView {
    let st = state();
    let body = NodeRef::<leptos::html::Tbody>::new();
    // The selected row stays in sight while j/k step through.
    Effect::new(move |_| {
        let Some(i) = st.decision.get() else { return };
        let Some(tbody) = body.get() else { return };
        if let Some(row) = tbody.children().item(i as u32) {
            if let Ok(row) = row.dyn_into::<web_sys::HtmlElement>() {
                let opts = web_sys::ScrollIntoViewOptions::new();
                opts.set_block(web_sys::ScrollLogicalPosition::Nearest);
                row.scroll_into_view_with_scroll_into_view_options(&opts);
            }
        }
    });
    let node_name = Memo::new(move |_| st.selected_node().map(|n| n.name));
    let limit = RwSignal::new(PAGE);
    Effect::new(move |_| {
        st.decisions.track();
        limit.set(PAGE);
    });
    // Enough rows to show the selected one.
    let shown = Memo::new(move |_| limit.get().max(st.decision.get().map_or(0, |i| i + PAGE / 2)));
    view! {
        <div class="decisions">
            {move || {
                let has_view = st.view.with(Option::is_some);
                st.decisions
                    .with(|decisions| match decisions {
                        d if !d.is_empty() => {
                            let more = d.len().saturating_sub(shown.get());
                            let rows = d
                                .iter()
                                .take(shown.get())
                                .enumerate()
                                .map(|(i, d)| {
                                    let (p, c) = (d.producer.clone(), d.consumer.clone());
                                    // The fusion lab's per-edge override: undo what was decided.
                                    let flip = Override { force: !d.taken, producer: p.clone(), consumer: c.clone() };
                                    let flip_title = if d.taken {
                                        format!("never fuse {} into {} (the fusion lab's override)", d.producer, d.consumer)
                                    } else {
                                        format!("force {} into {} (the fusion lab's override)", d.producer, d.consumer)
                                    };
                                    view! {
                                        <tr
                                            data-testid="decision"
                                            class:taken=d.taken
                                            class:refused=!d.taken
                                            class:selected=move || st.decision.get() == Some(i)
                                            class:involves=move || {
                                                node_name.with(|n| n.as_ref().is_some_and(|n| *n == p || *n == c))
                                            }
                                            on:click=move |_| st.decision.set(Some(i))
                                        >
                                            <td class="num">{i + 1}</td>
                                            <td>{d.producer.clone()}</td>
                                            <td>{d.consumer.clone()}</td>
                                            <td>{if d.taken { "taken" } else { "refused" }}</td>
                                            <td>{d.rule.clone()}</td>
                                            <td class="num">{d.bytes_saved}</td>
                                            <td>
                                                <button
                                                    class="flip"
                                                    data-testid="decision-override"
                                                    data-action=if d.taken { "never" } else { "force" }
                                                    title=flip_title
                                                    on:click=move |e| {
                                                        e.stop_propagation();
                                                        st.fusion.update(|f| *f = knobs::add_override(f, &flip));
                                                    }
                                                >
                                                    {if d.taken { "never" } else { "force" }}
                                                </button>
                                            </td>
                                            <td class="reason">{d.reason.clone()}</td>
                                        </tr>
                                    }
                                })
                                .collect_view();
                            view! {
                                <table>
                                    <thead>
                                        <tr>
                                            <th class="num">"#"</th>
                                            <th>"producer"</th>
                                            <th>"consumer"</th>
                                            <th></th>
                                            <th>"rule"</th>
                                            <th class="num">"bytes saved"</th>
                                            <th title="override this decision in the fusion lab"></th>
                                            <th>"reason"</th>
                                        </tr>
                                    </thead>
                                    <tbody node_ref=body>{rows}</tbody>
                                </table>
                                {(more > 0)
                                    .then(|| {
                                        view! {
                                            <button class="more" data-testid="decisions-more" on:click=move |_| limit.update(|l| *l += PAGE)>
                                                {format!("{more} more decisions: show {}", more.min(PAGE))}
                                            </button>
                                        }
                                    })}
                            }
                                .into_any()
                        }
                        _ if has_view => {
                            view! { <p class="empty">"no fusion decisions in this pass: select the fusion pass"</p> }
                                .into_any()
                        }
                        _ => ().into_any(),
                    })
            }}
        </div>
    }
}
