//! What the compiled module costs on a chosen chip: a row per kernel (bytes read and
//! written, FLOPs, intensity, estimated time, what bounds it) and the roofline chart, log
//! against log, each kernel a point under its roof. After a run that timed its kernels (a
//! server run), each kernel's measured time stands beside the estimate and lands on the
//! chart too, so the cost model's error shows. Clicking a kernel selects its node.

use crate::format::seconds as time;
use crate::protocol::{CostView, KernelView, SERVER_PROFILE};
use crate::state::state;
use leptos::prelude::*;

const W: f64 = 380.0;
const H: f64 = 230.0;
const LEFT: f64 = 52.0;
const BOTTOM: f64 = 30.0;
const TOP: f64 = 10.0;
const RIGHT: f64 = 10.0;

/// `3.2 T` for 3.2e12.
fn si(v: f64) -> String {
    let (d, u) = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(d, _)| v >= *d)
        .unwrap_or((1.0, ""));
    let x = v / d;
    if x >= 100.0 || x == x.round() {
        format!("{x:.0}{u}")
    } else {
        format!("{x:.1}{u}")
    }
}

fn peak(c: &CostView, class: &str) -> f64 {
    match class {
        "f16_tensor" => c.profile.peak_f16_tensor,
        "f64" => c.profile.peak_f64,
        _ => c.profile.peak_f32,
    }
}

/// The roofline chart of `c`'s kernels (those that compute: a kernel of no FLOPs has no
/// place on a log axis of intensity, and is counted under the chart).
fn roofline(
    c: &CostView,
    selected: Option<String>,
    measured: Option<&std::collections::HashMap<String, f64>>,
    on_pick: impl Fn(String) + Copy + 'static,
) -> impl IntoView {
    let points: Vec<&KernelView> = c.kernels.iter().filter(|k| k.flops > 0 && k.intensity > 0.0).collect();
    let bw = c.profile.mem_bandwidth;
    let top = c.profile.peak_f32.max(c.profile.peak_f16_tensor) * 2.0;
    // Decades of intensity around the ridge and the kernels.
    let ridge = c.profile.peak_f32 / bw;
    let (mut lo, mut hi) = (ridge / 100.0, ridge * 100.0);
    for k in &points {
        lo = lo.min(k.intensity / 2.0);
        hi = hi.max(k.intensity * 2.0);
    }
    let (x0, x1) = (lo.log10().floor(), hi.log10().ceil());
    // Measured points: the same kernel at the FLOP/s it ran at.
    let ran: Vec<(&KernelView, f64)> = points
        .iter()
        .filter_map(|k| Some((*k, k.flops as f64 / measured?.get(&k.name).copied().filter(|&t| t > 0.0)?)))
        .collect();
    let y_lo =
        points.iter().map(|k| k.flops as f64 / k.est_time_s).chain(ran.iter().map(|r| r.1)).fold(bw * lo, f64::min)
            / 2.0;
    let (y0, y1) = (y_lo.log10().floor(), top.log10().ceil());
    let x = move |i: f64| LEFT + (i.log10() - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let y = move |p: f64| TOP + (y1 - p.log10()) / (y1 - y0) * (H - TOP - BOTTOM);
    let roof = |peak: f64| {
        let knee = peak / bw;
        let a = 10f64.powf(x0);
        let b = 10f64.powf(x1);
        format!("M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1}", x(a), y(bw * a), x(knee), y(peak), x(b), y(peak))
    };
    let x_ticks = (x0 as i32..=x1 as i32)
        .map(|e| {
            let v = 10f64.powi(e);
            view! {
                <line class="grid" x1=x(v) x2=x(v) y1=TOP y2=H - BOTTOM />
                <text class="tick" x=x(v) y=H - BOTTOM + 12.0 text-anchor="middle">{si(v)}</text>
            }
        })
        .collect_view();
    let y_ticks = (y0 as i32..=y1 as i32)
        .step_by(((y1 - y0) as usize / 6).max(1))
        .map(|e| {
            let v = 10f64.powi(e);
            view! {
                <line class="grid" x1=LEFT x2=W - RIGHT y1=y(v) y2=y(v) />
                <text class="tick" x=LEFT - 4.0 y=y(v) + 3.0 text-anchor="end">{si(v)}</text>
            }
        })
        .collect_view();
    let dots = points
        .iter()
        .map(|k| {
            let achieved = k.flops as f64 / k.est_time_s;
            let name = k.name.clone();
            let is_selected = selected.as_deref() == Some(k.name.as_str());
            view! {
                <circle
                    data-testid="roofline-point"
                    data-kernel=k.name.clone()
                    class="point"
                    class:memory=k.memory_bound
                    class:selected=is_selected
                    cx=x(k.intensity)
                    cy=y(achieved)
                    r=if is_selected { 6.0 } else { 4.0 }
                    on:click=move |_| on_pick(name.clone())
                >
                    <title>
                        {format!(
                            "{}: {:.2} FLOP/B, {}FLOP/s estimated ({})",
                            k.name,
                            k.intensity,
                            si(achieved),
                            if k.memory_bound { "memory bound" } else { "compute bound" }
                        )}
                    </title>
                </circle>
            }
        })
        .collect_view();
    let ran_dots = ran
        .iter()
        .map(|(k, achieved)| {
            view! {
                <circle data-testid="roofline-measured" data-kernel=k.name.clone() class="point measured" cx=x(k.intensity) cy=y(*achieved) r="3.5">
                    <title>{format!("{}: measured {}FLOP/s", k.name, si(*achieved))}</title>
                </circle>
                <line class="error-line" x1=x(k.intensity) x2=x(k.intensity) y1=y(k.flops as f64 / k.est_time_s) y2=y(*achieved) />
            }
        })
        .collect_view();
    let tensor = (c.profile.peak_f16_tensor > c.profile.peak_f32).then(|| {
        view! { <path class="roof tensor" d=roof(c.profile.peak_f16_tensor) /> }
    });
    let data_only = c.kernels.len() - points.len();
    view! {
        <svg class="roofline" data-testid="roofline" width=W height=H viewBox=format!("0 0 {W} {H}")>
            {x_ticks}
            {y_ticks}
            {tensor}
            <path class="roof" d=roof(c.profile.peak_f32) />
            {ran_dots}
            {dots}
            <text class="axis" x=(LEFT + W - RIGHT) / 2.0 y=H - 2.0 text-anchor="middle">
                "FLOPs per byte"
            </text>
            <text class="axis" x=10.0 y=(TOP + H - BOTTOM) / 2.0 text-anchor="middle" transform=format!("rotate(-90 10 {})", (TOP + H - BOTTOM) / 2.0)>
                "FLOP/s"
            </text>
        </svg>
        <p class="hint">
            {format!(
                "{}: {}B/s, {}FLOP/s f32{}; {} of {} kernels only move data (not drawn)",
                c.profile.name,
                si(bw),
                si(c.profile.peak_f32),
                if c.profile.peak_f16_tensor > c.profile.peak_f32 {
                    format!(", {}FLOP/s f16 tensor (dashed)", si(c.profile.peak_f16_tensor))
                } else {
                    String::new()
                },
                data_only,
                c.kernels.len()
            )}
        </p>
    }
}

/// Each kernel's measured time in the last run that timed kernels (a server or WebGPU run), by name.
fn measured(st: crate::state::State) -> Option<(String, std::collections::HashMap<String, f64>)> {
    st.run.with(|r| {
        let r = r.as_ref()?;
        (!r.fused.kernels.is_empty()).then(|| {
            let times = r.fused.kernels.iter().map(|k| (k.name.clone(), k.time_s * k.calls.max(1) as f64)).collect();
            (r.fused.target.clone(), times)
        })
    })
}

#[component]
pub fn Cost() -> impl IntoView {
    let st = state();
    let selected = Memo::new(move |_| st.node.get());
    let pick = move |name: String| st.node.set(Some(name));
    view! {
        <div class="cost">
            <label>
                "hardware "
                <select
                    data-testid="cost-profile"
                    on:change=move |ev| st.profile.set(event_target_value(&ev))
                >
                    {move || {
                        // The built-in profiles, and the server's CPU once it was measured.
                        let server =
                            st.server_profile.get().and_then(Result::ok).map(|p| (SERVER_PROFILE.to_string(), p.name));
                        st.cost
                            .with(|c| {
                                c.as_ref()
                                    .map(|c| {
                                        c.profiles
                                            .iter()
                                            .map(|p| (p.clone(), p.clone()))
                                            .chain(server)
                                            .map(|(value, label)| {
                                                let on = label == c.profile.name;
                                                view! { <option value=value prop:selected=on>{label}</option> }
                                            })
                                            .collect_view()
                                    })
                            })
                    }}
                </select>
            </label>
            {move || {
                let m = measured(st);
                st.cost.with(|c| c.as_ref().map(|c| roofline(c, selected.get(), m.as_ref().map(|m| &m.1), pick)))
            }}
            {move || {
                st.cost
                    .with(|c| {
                        let m = measured(st);
                        c.as_ref()
                            .map(|c| {
                                let times = m.as_ref().map(|m| &m.1);
                                let measured_head = m.as_ref().map(|(target, _)| {
                                    view! {
                                        <th class="num" title=format!("median over the last run on {target}")>"measured"</th>
                                        <th class="num" title="measured ÷ estimated">"× est."</th>
                                    }
                                });
                                let rows = c
                                    .kernels
                                    .iter()
                                    .map(|k| {
                                        let name = k.name.clone();
                                        let bound = if k.memory_bound { "memory" } else { "compute" };
                                        let what = if k.kind.is_empty() { k.op.clone() } else { format!("{} ({})", k.op, k.kind) };
                                        let ceiling = peak(c, &k.class);
                                        let ran = times.map(|t| {
                                            let got = t.get(&k.name).copied();
                                            view! {
                                                <td class="num" data-testid="cost-measured">{got.map(time).unwrap_or_else(|| "—".into())}</td>
                                                <td class="num">{got.map(|g| format!("{:.1}", g / k.est_time_s)).unwrap_or_default()}</td>
                                            }
                                        });
                                        view! {
                                            <tr
                                                data-testid="cost-row"
                                                data-kernel=k.name.clone()
                                                class:selected=move || selected.get().as_deref() == Some(name.as_str())
                                                on:click={
                                                    let name = k.name.clone();
                                                    move |_| pick(name.clone())
                                                }
                                            >
                                                <td>{k.name.clone()}</td>
                                                <td>{what}</td>
                                                <td class="num">{k.bytes_read}</td>
                                                <td class="num">{k.bytes_written}</td>
                                                <td class="num">{k.flops}</td>
                                                <td class="num">{format!("{:.2}", k.intensity)}</td>
                                                <td class="num">{time(k.est_time_s)}</td>
                                                {ran}
                                                <td title=format!("of {}FLOP/s peak", si(ceiling))>{bound}</td>
                                            </tr>
                                        }
                                    })
                                    .collect_view();
                                view! {
                                    <table class="cost-table" data-testid="cost-table">
                                        <thead>
                                            <tr>
                                                <th>"kernel"</th>
                                                <th>"op"</th>
                                                <th class="num">"bytes read"</th>
                                                <th class="num">"written"</th>
                                                <th class="num">"FLOPs"</th>
                                                <th class="num">"FLOP/B"</th>
                                                <th class="num">"est. time"</th>
                                                {measured_head}
                                                <th>"bound"</th>
                                            </tr>
                                        </thead>
                                        <tbody>{rows}</tbody>
                                        <tfoot>
                                            <tr>
                                                <td>{format!("{} kernels", c.totals.kernels)}</td>
                                                <td></td>
                                                <td class="num" colspan="2">{c.totals.bytes_moved}</td>
                                                <td class="num">{c.totals.flops}</td>
                                                <td></td>
                                                <td class="num">{time(c.totals.est_time_s)}</td>
                                                {times.map(|_| view! { <td></td><td></td> })}
                                                <td></td>
                                            </tr>
                                        </tfoot>
                                    </table>
                                }
                            })
                    })
            }}
        </div>
    }
}
