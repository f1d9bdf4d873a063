//! The selected pass's fusion decisions: producer, consumer, taken or refused, the rule
//! and its reason, the bytes of memory traffic saved.

use crate::protocol::PassView;
use leptos::prelude::*;

#[component]
pub fn Decisions(
    /// The selected pass.
    #[prop(into)]
    pass: Signal<Option<PassView>>,
) -> impl IntoView {
    view! {
        <div class="decisions">
            {move || {
                pass.with(|p| match p {
                    Some(p) if !p.decisions.is_empty() => {
                        let rows = p
                            .decisions
                            .iter()
                            .map(|d| {
                                view! {
                                    <tr data-testid="decision" class:taken=d.taken class:refused=!d.taken>
                                        <td>{d.producer.clone()}</td>
                                        <td>{d.consumer.clone()}</td>
                                        <td>{if d.taken { "taken" } else { "refused" }}</td>
                                        <td>{d.rule.clone()}</td>
                                        <td class="num">{d.bytes_saved}</td>
                                        <td class="reason">{d.reason.clone()}</td>
                                    </tr>
                                }
                            })
                            .collect_view();
                        view! {
                            <table>
                                <thead>
                                    <tr>
                                        <th>"producer"</th>
                                        <th>"consumer"</th>
                                        <th></th>
                                        <th>"rule"</th>
                                        <th class="num">"bytes saved"</th>
                                        <th>"reason"</th>
                                    </tr>
                                </thead>
                                <tbody>{rows}</tbody>
                            </table>
                        }
                            .into_any()
                    }
                    Some(_) => view! { <p class="empty">"no fusion decisions in this pass"</p> }.into_any(),
                    None => ().into_any(),
                })
            }}
        </div>
    }
}
