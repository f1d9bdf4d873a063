//! The selected pass's decisions (fusion's, and the dot merger's): producer, consumer,
//! taken or refused, the rule and its reason, the bytes of memory traffic saved. Linked
//! both ways with the graph: clicking a row (or j/k) lights up its producer, consumer and
//! cluster there, and the rows about the node selected in the graph are marked. Below
//! them, the rewrites the pass applied (the simplifier's and the dot passes' rules), each
//! selecting its instruction in the graph.

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
    // The fusion lab's overrides steer fusion only: other passes' decisions have none.
    let fusion_pass = Memo::new(move |_| {
        let pass = st.view.with(|v| v.as_ref().map(|v| v.pass));
        pass.is_some_and(|i| st.passes.with(|ps| ps.get(i).is_some_and(|p| p.name == "fusion")))
    });
    view! {
        <div class="decisions">
            {move || {
                let has_view = st.view.with(Option::is_some);
                let has_rewrites = st.rewrites.with(|r| !r.is_empty());
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
                                                    hidden=move || !fusion_pass.get()
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
                        _ if has_view && !has_rewrites => {
                            view! {
                                <p class="empty">
                                    "nothing decided or rewritten in this pass: fusion and the dot merger decide, simplify and the dot passes rewrite"
                                </p>
                            }
                                .into_any()
                        }
                        _ => ().into_any(),
                    })
            }}
            <Rewrites />
        </div>
    }
}

/// The rewrites the pass on screen applied, one row each: rule, instruction. Clicking a
/// row selects the instruction in the graph (it keeps its name through a rewrite).
#[component]
fn Rewrites() -> impl IntoView {
    let st = state();
    let limit = RwSignal::new(PAGE);
    Effect::new(move |_| {
        st.rewrites.track();
        limit.set(PAGE);
    });
    move || {
        st.rewrites.with(|rewrites| {
            if rewrites.is_empty() {
                return ().into_any();
            }
            let more = rewrites.len().saturating_sub(limit.get());
            let rows = rewrites
                .iter()
                .take(limit.get())
                .map(|(rule, inst)| {
                    let (id, selected_id) = (inst.clone(), inst.clone());
                    view! {
                        <tr
                            data-testid="rewrite"
                            class:selected=move || st.node.with(|n| n.as_deref() == Some(selected_id.as_str()))
                            on:click=move |_| st.node.set(Some(id.clone()))
                        >
                            <td>{rule.clone()}</td>
                            <td>{inst.clone()}</td>
                        </tr>
                    }
                })
                .collect_view();
            let count = rewrites.len();
            view! {
                <table class="rewrites" data-testid="rewrites">
                    <thead>
                        <tr>
                            <th>{format!("{count} rewrite{}: rule", if count == 1 { "" } else { "s" })}</th>
                            <th>"instruction"</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
                {(more > 0)
                    .then(|| {
                        view! {
                            <button class="more" on:click=move |_| limit.update(|l| *l += PAGE)>
                                {format!("{more} more rewrites: show {}", more.min(PAGE))}
                            </button>
                        }
                    })}
            }
            .into_any()
        })
    }
}
