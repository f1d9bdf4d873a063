//! Run the compiled module and check it: in the page (`browser-cpu`: the compiled
//! module's WebAssembly kernels in the worker, each timed;
//! `browser-webgpu`: the WGSL kernels on the worker's `navigator.gpu`, each timed)
//! or on the server's native CPU code (`server-cpu`, `POST /api/run`), on random inputs
//! from a seed or on an `.npy` file per parameter (picked or dropped; the worker checks
//! each against its parameter at once, and the same files go to the server as base64).
//! Every run's outputs are checked against the reference interpreter's, and each one
//! downloads as `.npy` (a browser run's from the worker, which keeps them; a server run's
//! from its answer, asked with `return_npy`); server and WebGPU runs have per-kernel
//! times (bars, and a Chrome trace for Perfetto), and every target runs unfused beside
//! fused on request.

use crate::format::{bytes, seconds};
use crate::protocol::{ParamView, RunInputs, RunView};
use crate::state::{state, RunOutcome, State};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The targets, each with what it runs, or why it cannot run here: the browser's from
/// the page, the server's from `GET /api/targets` (`server-cuda` when it lists CUDA).
fn targets(st: State) -> Vec<(&'static str, String, bool)> {
    let webgpu = match st.webgpu.get() {
        None => ("browser-webgpu: asking navigator.gpu for an adapter…".to_string(), false),
        Some(Ok(adapter)) => (format!("browser-webgpu: the WGSL kernels on {adapter}"), true),
        Some(Err(why)) => (format!("browser-webgpu: not available: {why}"), false),
    };
    let server = |target: &'static str, name: &str| -> (&'static str, String, bool) {
        match st.server_targets.get() {
            None => (target, format!("{target}: asking the server…"), false),
            Some(Err(why)) => (target, format!("{target}: not available: {why}"), false),
            Some(Ok(list)) => match list.iter().find(|t| t.name == name) {
                Some(t) if t.available => (target, format!("{target}: {}", t.description), true),
                Some(t) => (target, format!("{target}: not available: {}", t.description), false),
                None => (target, format!("{target}: not available: the server does not list `{name}`"), false),
            },
        }
    };
    vec![
        ("browser-cpu", "browser-cpu: WebAssembly kernels in this page's worker".into(), true),
        ("browser-webgpu", webgpu.0, webgpu.1),
        server("server-cpu", "cpu"),
        server("server-cuda", "cuda"),
    ]
}

/// The adapter `navigator.gpu` offers this page, in words (vendor, architecture), or why
/// there is none: no WebGPU in this browser, not a secure context, or no adapter.
pub async fn probe_webgpu() -> Result<String, String> {
    use js_sys::Reflect;
    let global = js_sys::global();
    let get = |o: &JsValue, k: &str| Reflect::get(o, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED);
    let gpu = get(&get(&global, "navigator"), "gpu");
    if gpu.is_undefined() {
        return Err(if get(&global, "isSecureContext").as_bool() == Some(false) {
            "the page is not a secure context (WebGPU needs https, localhost or 127.0.0.1)".into()
        } else {
            "this browser has no navigator.gpu (WebGPU is off or missing; Chromium on Linux needs --enable-unsafe-webgpu)".into()
        });
    }
    let request: js_sys::Function =
        get(&gpu, "requestAdapter").dyn_into().map_err(|_| "navigator.gpu has no requestAdapter".to_string())?;
    let promise: js_sys::Promise = request
        .call0(&gpu)
        .and_then(|p| p.dyn_into().map_err(|_| JsValue::from_str("not a promise")))
        .map_err(|e| format!("navigator.gpu.requestAdapter failed: {e:?}"))?;
    let adapter = wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .map_err(|e| format!("navigator.gpu.requestAdapter failed: {e:?}"))?;
    if adapter.is_null() || adapter.is_undefined() {
        return Err("navigator.gpu offers no adapter (no usable GPU, or its driver is blocklisted)".into());
    }
    let info = get(&adapter, "info");
    let words: Vec<String> = ["vendor", "architecture", "description"]
        .iter()
        .filter_map(|k| get(&info, k).as_string())
        .filter(|w| !w.is_empty())
        .collect();
    Ok(if words.is_empty() { "this browser's WebGPU adapter".into() } else { words.join(" ") })
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), |v| format!("{v:.5}"))
}

/// What `POST /api/run` takes as `inputs`: the seed, or every parameter's file as base64
/// (or the first parameter without a file that fits, named).
fn server_inputs(st: State) -> Result<serde_json::Value, String> {
    if st.run_inputs.get_untracked() != "files" {
        return Ok(serde_json::json!({ "random": { "seed": st.run_seed.get_untracked() } }));
    }
    let params = st.params.get_untracked();
    let mut files = Vec::with_capacity(params.len());
    for p in &params {
        // The worker's check, which names the parameter.
        if let Some(e) = p.file.as_ref().and_then(|f| f.error.clone()) {
            return Err(e);
        }
        let mut picked = None;
        crate::with_compiler(|c| picked = c.input(p.index));
        match picked.filter(|_| p.file.is_some()) {
            Some(b) => files.push(crate::base64::encode(&b.to_vec())),
            None => return Err(format!("parameter {} (%{}: {}) has no .npy file: pick one", p.index, p.name, p.ty)),
        }
    }
    Ok(serde_json::Value::from(files))
}

/// A server run on `target` (`cpu`, `cuda`) with `fusion` knobs on `inputs`;
/// `then(result)`.
fn server_run(
    target: &'static str,
    source: &str,
    fusion: String,
    inputs: &serde_json::Value,
    then: impl FnOnce(Result<RunView, String>) + 'static,
) {
    let body = serde_json::json!({
        "source": source,
        "target": target,
        "inputs": inputs,
        "iters": 5,
        "fusion": fusion,
        "return_npy": true,
    })
    .to_string();
    let done = Closure::once_into_js(move |ok: bool, text: String| {
        let result = if ok {
            serde_json::from_str::<RunView>(&text)
                .map(|mut r| {
                    r.target = format!("server-{target}");
                    r
                })
                .map_err(|e| format!("the server's answer is not a run: {e}"))
        } else {
            Err(text)
        };
        then(result);
    });
    crate::cm::post_json("api/run", &body, done.unchecked_ref());
}

/// Chrome's trace-event JSON of a run's kernels, one after another as one run calls them
/// (each for its median time times its calls), so Perfetto draws the timeline.
fn trace(run: &RunView, unfused: Option<&RunView>) -> String {
    let mut events = Vec::new();
    for (tid, r) in std::iter::once((1, run)).chain(unfused.map(|u| (2, u))) {
        let mut t = 0.0;
        for k in &r.kernels {
            let dur = k.time_s * k.calls.max(1) as f64 * 1e6;
            events.push(serde_json::json!({
                "name": k.name, "ph": "X", "ts": t, "dur": dur, "pid": 1, "tid": tid,
                "args": { "bytes": k.bytes, "flops": k.flops, "calls": k.calls },
            }));
            t += dur;
        }
        events.push(serde_json::json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
            "args": { "name": if tid == 1 { "fused" } else { "unfused" } },
        }));
    }
    serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ms" }).to_string()
}

/// Downloads output `index` of the run shown as `label` (`fused` or `unfused`).
fn download_output(st: State, label: &'static str, index: u32) {
    let found = st.run.with_untracked(|r| {
        let r = r.as_ref()?;
        let run = if label == "unfused" { r.unfused.as_ref()? } else { &r.fused };
        Some((run.target.clone(), run.outputs.get(index as usize)?.npy.clone()))
    });
    let name = if label == "unfused" { format!("unfused-out{index}.npy") } else { format!("out{index}.npy") };
    match found {
        // The worker keeps a browser run's outputs and answers with the file (lib.rs).
        Some((target, _)) if target.starts_with("browser-") && label == "fused" => {
            crate::with_compiler(|c| c.output_npy(index))
        }
        Some((target, _)) if target.starts_with("browser-") => {
            st.run_error.set(Some("the worker keeps the fused run's outputs only: download those".into()))
        }
        Some((_, Some(b64))) => match crate::base64::decode(&b64) {
            Some(b) => crate::cm::download_bytes(&js_sys::Uint8Array::from(&b[..]), &name, "application/octet-stream"),
            None => st.run_error.set(Some(format!("output {index} of the server's answer is not base64"))),
        },
        _ => st.run_error.set(Some(format!("output {index} has no .npy file in the server's answer"))),
    }
}

/// One row per entry parameter: its name, type and what its file must hold, a file picker
/// (or drop the file on the row), and the file picked with ✓ or why it does not fit.
fn input_files(st: State) -> impl IntoView {
    let pick = move |param: u32, file: web_sys::File| {
        let on_bytes =
            Closure::once_into_js(move |b: JsValue, name: String| match b.dyn_into::<js_sys::Uint8Array>() {
                Ok(b) => crate::with_compiler(|c| c.set_input(param, &name, b)),
                Err(_) => st.run_error.set(Some(format!("cannot read the file: {name}"))),
            });
        crate::cm::read_bytes(&file, on_bytes.unchecked_ref());
    };
    view! {
        <div class="run-inputs" data-testid="run-inputs">
            {move || {
                st.params
                    .get()
                    .into_iter()
                    .map(|p: ParamView| {
                        let index = p.index;
                        let dragging = RwSignal::new(false);
                        let on_pick = move |ev: leptos::ev::Event| {
                            let input: web_sys::HtmlInputElement = event_target(&ev);
                            if let Some(file) = input.files().and_then(|f| f.get(0)) {
                                pick(index, file);
                            }
                            input.set_value("");
                        };
                        let on_drop = move |ev: leptos::ev::DragEvent| {
                            ev.prevent_default();
                            dragging.set(false);
                            if let Some(file) = ev.data_transfer().and_then(|d| d.files()).and_then(|f| f.get(0)) {
                                pick(index, file);
                            }
                        };
                        let (ok, status) = match &p.file {
                            None => (None, "no file: pick one or drop it here".to_string()),
                            Some(f) => match &f.error {
                                None => (Some(true), format!("✓ {} ({})", f.name, bytes(f.bytes))),
                                Some(e) => (Some(false), format!("✗ {e}")),
                            },
                        };
                        view! {
                            <div
                                class="run-input"
                                data-param=index
                                class:dragging=move || dragging.get()
                                on:dragover=move |ev: leptos::ev::DragEvent| {
                                    ev.prevent_default();
                                    dragging.set(true);
                                }
                                on:dragleave=move |_| dragging.set(false)
                                on:drop=on_drop
                            >
                                <span class="run-param">{format!("{index}: %{} {}", p.name, p.ty)}</span>
                                <small>
                                    {p.expects.clone().unwrap_or_else(|| "a tuple or token: no .npy file can hold it".into())}
                                </small>
                                <label class="button">
                                    ".npy…"
                                    <input
                                        type="file"
                                        accept=".npy"
                                        data-testid="run-input-file"
                                        data-param=index
                                        on:change=on_pick
                                    />
                                </label>
                                <span
                                    class="run-input-status"
                                    class:pass=ok == Some(true)
                                    class:fail=ok == Some(false)
                                    data-testid="run-input-status"
                                    data-param=index
                                >
                                    {status}
                                </span>
                            </div>
                        }
                    })
                    .collect_view()
            }}
        </div>
    }
}

fn result_view(st: State, r: &RunView, label: &'static str) -> impl IntoView {
    let check = r.check.clone();
    let max_kernel = r.kernels.iter().map(|k| k.time_s * k.calls.max(1) as f64).fold(0.0, f64::max);
    view! {
        <div class="run-one" data-testid=format!("run-{label}")>
            <h3>
                {format!("{label} on {}: ", r.target)}
                <span data-testid="run-time">{seconds(r.run_median_s)}</span>
                <small>{format!(" median of {}", r.iters)}</small>
            </h3>
            {(!r.device.is_empty()).then(|| view! { <p class="run-device" data-testid="run-device">{r.device.clone()}</p> })}
            {check
                .map(|c| {
                    view! {
                        <p class="check" class:pass=c.passed class:fail=!c.passed data-testid="run-check">
                            {if c.passed { "✓ matches the reference interpreter" } else { "✗ differs from the reference interpreter" }}
                            {c.outputs
                                .iter()
                                .map(|o| {
                                    format!(
                                        " · output {}: max |error| {:.2e}, {} outside |t−r| ≤ {:.1e} + {:.0e}·|r|",
                                        o.index, o.max_abs_error, o.mismatches, o.atol, o.rtol
                                    )
                                })
                                .collect::<String>()}
                        </p>
                    }
                })}
            <table class="outputs">
                <thead>
                    <tr>
                        <th>"output"</th>
                        <th></th>
                        <th>"type"</th>
                        <th class="num">"min"</th>
                        <th class="num">"max"</th>
                        <th class="num">"mean"</th>
                        <th>"first values"</th>
                    </tr>
                </thead>
                <tbody>
                    {r.outputs
                        .iter()
                        .map(|o| {
                            let first = o.first.iter().take(6).map(|v| num(*v)).collect::<Vec<_>>().join(", ");
                            let shape = o.shape.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
                            let index = o.index;
                            view! {
                                <tr data-testid="run-output">
                                    <td>{o.index}</td>
                                    <td>
                                        <button
                                            data-testid="run-output-download"
                                            title="download this output as an .npy file"
                                            on:click=move |_| download_output(st, label, index)
                                        >
                                            ".npy"
                                        </button>
                                    </td>
                                    <td>{format!("{}[{shape}]", o.dtype)}</td>
                                    <td class="num">{num(o.min)}</td>
                                    <td class="num">{num(o.max)}</td>
                                    <td class="num">{num(o.mean)}</td>
                                    <td class="first">{first}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
            {(!r.kernels.is_empty())
                .then(|| {
                    view! {
                        <div class="bars">
                            {r.kernels
                                .iter()
                                .map(|k| {
                                    let t = k.time_s * k.calls.max(1) as f64;
                                    let w = if max_kernel > 0.0 { t / max_kernel * 100.0 } else { 0.0 };
                                    view! {
                                        <div class="bar-row" data-testid="kernel-time" data-kernel=k.name.clone()>
                                            <span class="bar-name">{k.name.clone()}</span>
                                            <span class="bar" style=format!("width: {w:.1}%")></span>
                                            <span class="bar-time">{seconds(t)}</span>
                                        </div>
                                    }
                                })
                                .collect_view()}
                        </div>
                    }
                })}
        </div>
    }
}

#[component]
pub fn Run() -> impl IntoView {
    let st = state();
    let start = move |_| {
        st.run_busy.set(true);
        st.run_error.set(None);
        let target = st.run_target.get_untracked();
        if target.starts_with("browser-") {
            let inputs = if st.run_inputs.get_untracked() == "files" {
                RunInputs::Files
            } else {
                RunInputs::Random { seed: st.run_seed.get_untracked() }
            };
            let unfused = st.run_unfused.get_untracked();
            crate::with_compiler(|c| c.run(inputs, &target, unfused));
            return;
        }
        let inputs = match server_inputs(st) {
            Ok(inputs) => inputs,
            Err(e) => {
                st.run_busy.set(false);
                st.run_error.set(Some(e));
                return;
            }
        };
        let mut source = String::new();
        crate::with_editor(|e| source = crate::cm::get_doc(e));
        let unfused = st.run_unfused.get_untracked();
        let fusion = st.fusion.get_untracked();
        let second = source.clone();
        let second_inputs = inputs.clone();
        let on: &'static str = if target == "server-cuda" { "cuda" } else { "cpu" };
        server_run(on, &source, fusion, &inputs, move |fused| match fused {
            Err(e) => {
                st.run_busy.set(false);
                st.run_error.set(Some(e));
            }
            Ok(fused) if !unfused => {
                st.run_busy.set(false);
                st.show_run(RunOutcome { fused, unfused: None });
            }
            Ok(fused) => server_run(on, &second, "off".into(), &second_inputs, move |plain| {
                st.run_busy.set(false);
                match plain {
                    Ok(plain) => st.show_run(RunOutcome { fused, unfused: Some(plain) }),
                    Err(e) => st.run_error.set(Some(format!("the unfused run failed: {e}"))),
                }
            }),
        });
    };
    let export = move |_| {
        if let Some(r) = st.run.get_untracked() {
            crate::cm::download(&trace(&r.fused, r.unfused.as_ref()), "hloscope-trace.json", "application/json");
        }
    };
    view! {
        <div class="run">
            <div class="run-controls">
                <select data-testid="run-target" on:change=move |ev| st.run_target.set(event_target_value(&ev))>
                    {move || {
                        targets(st)
                            .into_iter()
                            .map(|(id, label, on)| {
                                view! {
                                    <option value=id disabled=!on prop:selected=move || st.run_target.get() == id>
                                        {label}
                                    </option>
                                }
                            })
                            .collect_view()
                    }}
                </select>
                <select
                    data-testid="run-input-mode"
                    title="the inputs: random from a seed (the same in the browser, on the server and in hloscope run --random-inputs --seed), or an .npy file per parameter"
                    on:change=move |ev| st.run_inputs.set(event_target_value(&ev))
                >
                    <option value="random" prop:selected=move || st.run_inputs.get() == "random">
                        "inputs: random"
                    </option>
                    <option value="files" prop:selected=move || st.run_inputs.get() == "files">
                        "inputs: .npy files"
                    </option>
                </select>
                {move || {
                    (st.run_inputs.get() != "files")
                        .then(|| {
                            view! {
                                <label>
                                    "seed "
                                    <input
                                        type="number"
                                        min="0"
                                        data-testid="run-seed"
                                        prop:value=move || st.run_seed.get().to_string()
                                        on:change=move |ev| {
                                            st.run_seed.set(event_target_value(&ev).trim().parse().unwrap_or(0))
                                        }
                                    />
                                </label>
                            }
                        })
                }}
                <label class="toggle" title="run the same module with fusion off too, side by side">
                    <input
                        type="checkbox"
                        data-testid="run-unfused"
                        prop:checked=move || st.run_unfused.get()
                        on:change=move |ev| st.run_unfused.set(event_target_checked(&ev))
                    />
                    "also unfused"
                </label>
                <button data-testid="run" prop:disabled=move || st.run_busy.get() on:click=start>
                    {move || if st.run_busy.get() { "running…" } else { "run" }}
                </button>
                <button
                    data-testid="export-trace"
                    title="the kernels' timeline as Chrome trace JSON (Perfetto opens it)"
                    prop:disabled=move || st.run.with(|r| r.as_ref().is_none_or(|r| r.fused.kernels.is_empty()))
                    on:click=export
                >
                    "export trace"
                </button>
            </div>
            {move || (st.run_inputs.get() == "files").then(|| input_files(st))}
            {move || st.run_error.get().map(|e| view! { <div class="diagnostic" data-testid="run-error">{e}</div> })}
            {move || {
                st.run
                    .get()
                    .map(|r| {
                        let passed = r.fused.check.as_ref().is_some_and(|c| c.passed)
                            && r.unfused.as_ref().is_none_or(|u| u.check.as_ref().is_some_and(|c| c.passed));
                        let speedup = r.unfused.as_ref().map(|u| {
                            view! {
                                <p class="speedup" data-testid="run-speedup">
                                    {format!(
                                        "fused {} against unfused {}: {:.2}× ({} kernels against {})",
                                        seconds(r.fused.run_median_s),
                                        seconds(u.run_median_s),
                                        u.run_median_s / r.fused.run_median_s.max(1e-12),
                                        r.fused.kernels.len(),
                                        u.kernels.len()
                                    )}
                                </p>
                            }
                        });
                        view! {
                            <div
                                class="run-result"
                                data-testid="run-result"
                                data-check=if passed { "pass" } else { "fail" }
                                data-runs=move || st.runs_shown.get()
                            >
                                {speedup}
                                <div class="run-sides">
                                    {result_view(st, &r.fused, "fused")}
                                    {r.unfused.as_ref().map(|u| result_view(st, u, "unfused"))}
                                </div>
                            </div>
                        }
                    })
            }}
        </div>
    }
}
