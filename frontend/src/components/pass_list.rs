//! One row per pass: instructions, kernels, time, changed or not; clicking a row (or the
//! arrow keys, handled by the page) selects its snapshot. The "changed only" toggle in the
//! header hides the passes that changed nothing.

use crate::state::state;
use leptos::prelude::*;

#[component]
pub fn PassList() -> impl IntoView {
    let st = state();
    view! {
        <table class="pass-list">
            <thead>
                <tr>
                    <th>"pass"</th>
                    <th class="num" title="instructions, fused members included">"insts"</th>
                    <th class="num">"kernels"</th>
                    <th class="num" title="milliseconds the pass took in the browser">"ms"</th>
                    <th></th>
                </tr>
            </thead>
            <tbody>
                {move || {
                    let shown = st.shown_pass();
                    let visible = st.visible_passes();
                    st.passes
                        .with(|ps| {
                            visible
                                .iter()
                                .map(|&i| {
                                    let p = &ps[i];
                                    let changed = p.changed;
                                    let title = if changed { "changed the module" } else { "changed nothing" };
                                    let name = p.name.clone();
                                    view! {
                                        <tr
                                            data-testid="pass"
                                            data-pass=p.name.clone()
                                            class:selected=shown.as_deref() == Some(p.name.as_str())
                                            class:unchanged=!changed
                                            on:click=move |_| st.pass.set(Some(name.clone()))
                                        >
                                            <td>{p.name.clone()}</td>
                                            <td class="num">{p.insts}</td>
                                            <td class="num">{p.kernels}</td>
                                            <td class="num" data-testid="pass-time">
                                                {if i == 0 { String::new() } else { format!("{:.1}", p.time_ms) }}
                                            </td>
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
