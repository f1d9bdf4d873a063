//! The fusion lab: change the compiler's mind and see what it costs. Fusion knobs (the
//! CLI's `--fusion`), per-edge overrides (added from the decisions' buttons), the pipeline
//! spec; every change recompiles, and the compiled module's kernels, bytes and estimated
//! time stand beside the default pipeline's.

use crate::format;
use crate::knobs::{self, Override, SWITCHES};
use crate::protocol::CostTotals;
use crate::state::state;
use leptos::prelude::*;

/// `+12 %` (of `default`), or `same`.
fn change(this: f64, default: f64) -> String {
    if this == default {
        "same".into()
    } else if default == 0.0 {
        "new".into()
    } else {
        format!("{:+.0} %", (this - default) / default * 100.0)
    }
}

fn comparison(this: &CostTotals, default: &CostTotals) -> impl IntoView {
    let rows = [
        (
            "kernels",
            this.kernels.to_string(),
            default.kernels.to_string(),
            change(this.kernels as f64, default.kernels as f64),
        ),
        (
            "bytes moved",
            format::bytes(this.bytes_moved),
            format::bytes(default.bytes_moved),
            change(this.bytes_moved as f64, default.bytes_moved as f64),
        ),
        ("FLOPs", this.flops.to_string(), default.flops.to_string(), change(this.flops as f64, default.flops as f64)),
        (
            "estimated time",
            format::seconds(this.est_time_s),
            format::seconds(default.est_time_s),
            change(this.est_time_s, default.est_time_s),
        ),
    ];
    view! {
        <table class="lab-compare" data-testid="lab-compare">
            <thead>
                <tr>
                    <th></th>
                    <th class="num">"these settings"</th>
                    <th class="num">"default pipeline"</th>
                    <th class="num">"change"</th>
                </tr>
            </thead>
            <tbody>
                {rows
                    .into_iter()
                    .map(|(what, a, b, c)| {
                        view! {
                            <tr data-row=what>
                                <td>{what}</td>
                                <td class="num" data-testid="lab-this">{a}</td>
                                <td class="num" data-testid="lab-default">{b}</td>
                                <td class="num">{c}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

#[component]
pub fn Lab() -> impl IntoView {
    let st = state();
    let switch = |(name, what): (&'static str, &'static str)| {
        view! {
            <label class="knob" title=what>
                <input
                    type="checkbox"
                    data-testid="fusion-knob"
                    data-knob=name
                    prop:checked=move || st.fusion.with(|f| knobs::has(f, name))
                    on:change=move |ev| {
                        let on = event_target_checked(&ev);
                        st.fusion.update(|f| *f = knobs::set(f, name, on));
                    }
                />
                <code>{name}</code>
                <small>{what}</small>
            </label>
        }
    };
    let overrides = move || {
        let list = st.fusion.with(|f| knobs::overrides(f));
        if list.is_empty() {
            return view! { <p class="hint">"per edge: the never / force buttons in the decisions"</p> }.into_any();
        }
        list.into_iter()
            .map(|o: Override| {
                let text = format!("{} {} → {}", if o.force { "force" } else { "never" }, o.producer, o.consumer);
                view! {
                    <div class="override" data-testid="fusion-override">
                        <code>{text}</code>
                        <button title="remove this override" on:click=move |_| st.fusion.update(|f| *f = knobs::remove_override(f, &o))>
                            "×"
                        </button>
                    </div>
                }
            })
            .collect_view()
            .into_any()
    };
    view! {
        <div class="lab" data-testid="lab">
            <div class="lab-result">
                <h3>"compiled " <small>{move || st.cost.with(|c| c.as_ref().map(|c| format!("estimated on {}", c.profile.name)))}</small></h3>
                {move || st.cost.with(|c| c.as_ref().map(|c| comparison(&c.totals, &c.default)))}
            </div>
            <div class="lab-settings">
                <h3>"fusion"</h3>
                {SWITCHES.into_iter().map(switch).collect_view()}
                <label class="knob">
                    <code>"max-size"</code>
                    <input
                        type="number"
                        min="1"
                        placeholder="no limit"
                        data-testid="fusion-knob"
                        data-knob="max-size"
                        prop:value=move || st.fusion.with(|f| knobs::max_size(f).map(|n| n.to_string()).unwrap_or_default())
                        on:change=move |ev| {
                            let n = event_target_value(&ev).trim().parse::<usize>().ok().filter(|&n| n > 0);
                            st.fusion.update(|f| *f = knobs::set_max_size(f, n));
                        }
                    />
                    <small>"instructions per kernel at most"</small>
                </label>
                <h3>"overrides"</h3>
                {overrides}
                <h3>"pipeline"</h3>
                <input
                    class="spec"
                    data-testid="pipeline-spec"
                    title="passes in order, `-name` drops one, knobs in braces: inline, simplify{max_rounds=4}, cse, dce, fusion"
                    prop:value=move || st.pipeline.get()
                    on:change=move |ev| st.pipeline.set(event_target_value(&ev))
                />
                <div class="lab-buttons">
                    <button data-testid="lab-reset" on:click=move |_| {
                        st.fusion.set(String::new());
                        st.pipeline.set(crate::protocol::CompileConfig::default().pipeline);
                    }>
                        "back to the defaults"
                    </button>
                </div>
                {move || {
                    st.config_problem.get().map(|m| view! { <div class="diagnostic" data-testid="config-error">{m}</div> })
                }}
            </div>
        </div>
    }
}
