//! One row per pass: instruction count, kernel count, changed or not; clicking a row
//! (or the arrow keys, handled by the page) selects its snapshot.

use crate::protocol::PassView;
use leptos::prelude::*;

#[component]
pub fn PassList(
    /// Snapshots in pipeline order.
    passes: RwSignal<Vec<PassView>>,
    /// Index of the selected pass.
    selected: RwSignal<usize>,
) -> impl IntoView {
    view! {
        <table class="pass-list">
            <thead>
                <tr>
                    <th>"pass"</th>
                    <th class="num">"insts"</th>
                    <th class="num">"kernels"</th>
                    <th></th>
                </tr>
            </thead>
            <tbody>
                {move || {
                    passes
                        .with(|ps| {
                            ps.iter()
                                .enumerate()
                                .map(|(i, p)| {
                                    let changed = p.changed;
                                    let title = if changed { "changed the module" } else { "changed nothing" };
                                    view! {
                                        <tr
                                            data-testid="pass"
                                            data-pass=p.name.clone()
                                            class:selected=move || selected.get() == i
                                            class:unchanged=!changed
                                            on:click=move |_| selected.set(i)
                                        >
                                            <td>{p.name.clone()}</td>
                                            <td class="num">{p.insts}</td>
                                            <td class="num">{p.kernels}</td>
                                            <td class="mark" title=title>{if changed { "●" } else { "·" }}</td>
                                        </tr>
                                    }
                                })
                                .collect_view()
                        })
                }}
            </tbody>
        </table>
    }
}
