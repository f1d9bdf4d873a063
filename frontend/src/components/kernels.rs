//! The generated code of each kernel: a list of the compiled module's kernels (what each
//! implements, how it runs), and the chosen one's CLIF or machine code for a chosen
//! machine, made in the worker by the CPU target's own emitter, or its WGSL (machine
//! `webgpu`) by the WebGPU target's. The kernel follows the
//! selection: select a fusion (its cluster, a member, its cost row) and its kernel shows;
//! pick a kernel and its fusion is selected in the graph.

use crate::protocol::{KernelRow, KernelsView};
use crate::state::state;
use leptos::prelude::*;

/// The kernel a selected node id stands for: a fused member (`fusion.3/add.1`) for its
/// fusion's kernel, a cluster or a lone instruction for its own.
pub fn kernel_of<'a>(kernels: &'a [KernelRow], node: &str) -> Option<&'a KernelRow> {
    let name = node.split('/').next().unwrap_or(node);
    kernels.iter().find(|k| k.name == name)
}

#[component]
pub fn Kernels() -> impl IntoView {
    let st = state();
    // Ask the worker whenever the compile, the machine or the kernel asked for changes.
    Effect::new(move |_| {
        st.compiles.track();
        let machine = st.kernel_machine.get();
        let kernel = st.kernel.get();
        crate::with_compiler(|c| c.kernels(&machine, kernel));
    });
    // The selection picks the kernel (again when a new listing comes).
    Effect::new(move |_| {
        let Some(node) = st.node.get() else { return };
        let found = st.kernels.with(|v| v.as_ref().and_then(|v| kernel_of(&v.kernels, &node).map(|k| k.index)));
        if found.is_some() && found != st.kernel.get_untracked() {
            st.kernel.set(found);
        }
    });
    let pick = move |k: &KernelRow| {
        st.kernel.set(Some(k.index));
        st.node.set(Some(k.name.clone()));
    };
    let rows = move || {
        st.kernels.with(|v| {
            let Some(v) = v else { return Vec::new() };
            let shown = v.shown.as_ref().map(|s| s.index);
            v.kernels
                .iter()
                .map(|k| {
                    let row = k.clone();
                    let title = format!("{} kernel {}: {}", row.kind, row.index, row.runs);
                    view! {
                        <tr
                            data-testid="kernel-row"
                            data-name=k.name.clone()
                            class:selected=shown == Some(k.index)
                            title=title
                            on:click=move |_| pick(&row)
                        >
                            <td class="num">{k.index}</td>
                            <td class="name">{k.name.clone()}</td>
                            <td>{k.kind.clone()}</td>
                            <td data-testid="kernel-runs">{k.runs.clone()}</td>
                        </tr>
                    }
                })
                .collect_view()
                .into_iter()
                .collect::<Vec<_>>()
        })
    };
    // The code, a span per line; a CLIF line that implements an HLO instruction lights
    // it up in the graph when clicked.
    let code = move || {
        st.kernels.with(|v| {
            let v: &KernelsView = v.as_ref()?;
            let shown = v.shown.as_ref()?;
            let name = v.kernels.iter().find(|k| k.index == shown.index).map(|k| k.name.clone()).unwrap_or_default();
            let asm = st.kernel_form.get() == "asm" && v.language != "wgsl";
            let text = if asm { &shown.asm } else { &shown.clif };
            if text.is_empty() {
                return Some(view! { <span class="line">"(no code: see above)"</span> }.into_any());
            }
            let lit = st.code_lit.get().filter(|(k, _)| *k == name).map(|(_, h)| h);
            let lines = text
                .lines()
                .enumerate()
                .map(|(i, line)| {
                    let hlo = if asm { String::new() } else { shown.clif_hlo.get(i).cloned().unwrap_or_default() };
                    let on = !hlo.is_empty() && lit.as_deref() == Some(hlo.as_str());
                    let (kernel, inst) = (name.clone(), hlo.clone());
                    view! {
                        <span
                            class="line"
                            class:lit=on
                            class:linked=!hlo.is_empty()
                            data-hlo=hlo.clone()
                            title=(!hlo.is_empty()).then(|| format!("implements %{hlo}"))
                            on:click=move |_| {
                                if !inst.is_empty() {
                                    st.code_lit.set(Some((kernel.clone(), inst.clone())));
                                }
                            }
                        >
                            {line.to_string()}
                        </span>
                    }
                })
                .collect_view();
            Some(lines.into_any())
        })
    };
    let header = move || {
        st.kernels.with(|v| {
            let v = v.as_ref()?;
            let shown = v.shown.as_ref()?;
            let row = v.kernels.iter().find(|k| k.index == shown.index)?;
            let bytes =
                if row.code_bytes > 0 { format!(" · {} bytes of code", row.code_bytes) } else { String::new() };
            Some(view! {
                <div class="kernel-head">
                    <b>{format!("kernel {} · {}", row.index, row.name)}</b>
                    <span data-testid="kernel-how">{format!(" {} · {}{bytes}", row.kind, row.runs)}</span>
                </div>
                <ul class="kernel-notes" data-testid="kernel-notes">
                    {shown.notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}
                </ul>
            })
        })
    };
    view! {
        <div class="kernels">
            <div class="kernel-controls">
                <label>
                    "machine "
                    <select data-testid="kernel-machine" on:change=move |ev| st.kernel_machine.set(event_target_value(&ev))>
                        {move || {
                            let machines = st
                                .kernels
                                .with(|v| v.as_ref().map(|v| v.machines.clone()))
                                .unwrap_or_else(|| vec![st.kernel_machine.get_untracked()]);
                            machines
                                .into_iter()
                                .map(|m| {
                                    let selected = m == st.kernel_machine.get_untracked();
                                    view! { <option value=m.clone() selected=selected>{m.clone()}</option> }
                                })
                                .collect_view()
                        }}
                    </select>
                </label>
                {move || {
                    let wgsl = st.kernels.with(|v| v.as_ref().is_some_and(|v| v.language == "wgsl"));
                    let forms: &[(&str, &str)] =
                        if wgsl { &[("wgsl", "WGSL")] } else { &[("clif", "Cranelift IR"), ("asm", "machine code")] };
                    forms
                        .iter()
                        .map(|&(id, label)| {
                            view! {
                                <button
                                    class="toggle-button"
                                    data-testid=format!("kernel-form-{id}")
                                    class:active=move || wgsl || st.kernel_form.get() == id
                                    on:click=move |_| {
                                        if !wgsl {
                                            st.kernel_form.set(id.to_string())
                                        }
                                    }
                                >
                                    {label}
                                </button>
                            }
                        })
                        .collect_view()
                }}
                <small data-testid="kernel-status">
                    {move || match (st.kernels_error.get(), st.kernels.with(|v| v.as_ref().map(|v| (v.kernels.len(), v.codegen_ms)))) {
                        (Some(e), _) => e,
                        (None, Some((n, ms))) if ms > 0.0 => format!("{n} kernels, generated in {ms:.0} ms"),
                        (None, Some((n, _))) => format!("{n} kernels"),
                        (None, None) => "generating code…".into(),
                    }}
                </small>
            </div>
            <div class="kernel-body">
                <div class="kernel-list">
                    <table data-testid="kernel-list">
                        <thead>
                            <tr>
                                <th>"#"</th>
                                <th>"kernel"</th>
                                <th>"kind"</th>
                                <th>"runs as"</th>
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
                <div class="kernel-view">
                    {header}
                    <pre class="kernel-code" data-testid="kernel-code">{code}</pre>
                </div>
            </div>
        </div>
    }
}
