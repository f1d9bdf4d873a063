//! hloscope's web app: edit StableHLO or HLO, step through the pipeline's passes, see each
//! pass's graph with its fusion clusters, diff any two passes as text and as graphs, and
//! follow the fusion decisions.
//!
//! The compiler runs in a Web Worker (`frontend/worker`, messages in `protocol.rs`,
//! client in `api.rs`), so typing never waits for it; the page ([`App`]) keeps the state
//! (`state.rs`) and draws it, one pane per file in `components/`. The editor is
//! CodeMirror 6 (`cm.rs`); the state lives in the URL's hash (`url.rs`).

pub mod api;
pub mod base64;
pub mod cm;
pub mod components;
pub mod examples;
pub mod format;
pub mod knobs;
pub mod protocol;
pub mod state;
pub mod tours;
pub mod url;

use components::{
    cost::Cost, decisions::Decisions, diff::Diff, graph::Graph, kernels::Kernels, lab::Lab, node_details::NodeDetails,
    pass_list::PassList, run::Run, splitter::Splitter,
};
use leptos::prelude::*;
use state::State;
use std::cell::RefCell;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

thread_local! {
    static EDITOR: RefCell<Option<cm::Editor>> = const { RefCell::new(None) };
    static COMPILER: RefCell<Option<api::Compiler>> = const { RefCell::new(None) };
}

#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

pub fn with_editor(f: impl FnOnce(&cm::Editor)) {
    EDITOR.with(|e| {
        if let Some(e) = e.borrow().as_ref() {
            f(e)
        }
    });
}

pub fn with_compiler(f: impl FnOnce(&api::Compiler)) {
    let c = COMPILER.with(|c| c.borrow().clone());
    if let Some(c) = c {
        f(&c);
    }
}

/// An error to show: `line:col: message` (no position when line is 0).
#[derive(Clone, Debug, PartialEq)]
struct Problem {
    line: u32,
    col: u32,
    message: String,
}

impl Problem {
    fn text(&self) -> String {
        if self.line > 0 {
            format!("{}:{}: {}", self.line, self.col, self.message)
        } else {
            self.message.clone()
        }
    }
}

/// Keys that belong to a text field, not to the page's shortcuts.
fn typing_in_field(e: &web_sys::KeyboardEvent) -> bool {
    e.target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .and_then(|el| el.closest(".cm-editor, select, input, textarea").ok().flatten())
        .is_some()
}

/// Pane sizes in pixels, kept in local storage (a layout preference, not page state).
#[derive(Clone, Copy)]
struct Sizes {
    source: RwSignal<f64>,
    passes: RwSignal<f64>,
    graph: RwSignal<f64>,
    diff: RwSignal<f64>,
}

impl Sizes {
    const KEY: &'static str = "hloscope.panes";

    fn load() -> Sizes {
        let stored: Vec<f64> = window()
            .local_storage()
            .ok()
            .flatten()
            .and_then(|s| s.get_item(Self::KEY).ok().flatten())
            .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
            .unwrap_or_default();
        let at = |i: usize, default: f64| stored.get(i).copied().unwrap_or(default);
        Sizes {
            source: RwSignal::new(at(0, 340.0)),
            passes: RwSignal::new(at(1, 262.0)),
            graph: RwSignal::new(at(2, 420.0)),
            diff: RwSignal::new(at(3, 330.0)),
        }
    }

    fn save(&self) {
        let v =
            [self.source, self.passes, self.graph, self.diff].map(|s| format!("{:.0}", s.get_untracked())).join(",");
        if let Some(s) = window().local_storage().ok().flatten() {
            let _ = s.set_item(Self::KEY, &v);
        }
    }
}

/// Asks the server what it runs (`GET /api/targets`) and for its CPU's measured cost
/// profile (`GET /api/profile`); a page opened without the server says so in the run
/// menu.
fn ask_server(st: State) {
    let on_targets = Closure::once_into_js(move |ok: bool, text: String| {
        let targets = if ok {
            serde_json::from_str::<protocol::TargetsView>(&text)
                .map(|t| t.targets)
                .map_err(|e| format!("the server's /api/targets is not understood: {e}"))
        } else {
            Err(text)
        };
        let answered = targets.is_ok();
        st.server_targets.set(Some(targets));
        if answered {
            let on_profile = Closure::once_into_js(move |ok: bool, text: String| {
                let profile = if ok {
                    serde_json::from_str::<protocol::ProfileView>(&text)
                        .map_err(|e| format!("the server's /api/profile is not understood: {e}"))
                } else {
                    Err(text)
                };
                st.server_profile.set(Some(profile));
            });
            cm::get_json("api/profile", on_profile.unchecked_ref());
        }
    });
    cm::get_json("api/targets", on_targets.unchecked_ref());
}

#[component]
pub fn App() -> impl IntoView {
    let st = State::new();
    provide_context(st);
    let initial = url::read();
    st.pass.set(initial.pass.clone());
    st.against.set(initial.against.clone());
    st.graph_diff.set(initial.graph_diff);
    st.hide_unchanged.set(initial.hide_unchanged);
    st.side_by_side.set(initial.side_by_side);
    st.node.set(initial.node.clone());
    let defaults = protocol::CompileConfig::default();
    st.pipeline.set(initial.pipeline.clone().unwrap_or(defaults.pipeline.clone()));
    st.fusion.set(initial.fusion.clone().unwrap_or_default());
    st.profile.set(initial.profile.clone().unwrap_or(defaults.profile.clone()));
    if let Some(tab) = &initial.tab {
        st.tab.set(tab.clone());
    }
    if let Some(target) = &initial.target {
        st.run_target.set(target.clone());
    }
    // Whether browser-webgpu can run here, what the server runs and its CPU's profile,
    // asked once.
    leptos::task::spawn_local(async move { st.webgpu.set(Some(components::run::probe_webgpu().await)) });
    ask_server(st);
    let example = RwSignal::new(match (&initial.source, &initial.example) {
        (Some(_), _) => String::new(),
        (None, Some(id)) if examples::by_id(id).is_some() => id.clone(),
        _ => examples::DEFAULT_EXAMPLE.to_string(),
    });
    // Opened from a share link: its text comes from the server (the hash, when it has
    // anything, says what was on screen since: it wins over the share's settings).
    let share = url::share_id();
    let from_share = share.is_some();
    let shared: RwSignal<Option<(String, String)>> = RwSignal::new(None);
    let share_note: RwSignal<Option<(bool, String)>> = RwSignal::new(None);
    let initial_source = match (&share, &initial.source) {
        (Some(_), _) => String::new(),
        (None, Some(src)) => src.clone(),
        (None, None) => examples::by_id(&example.get_untracked()).map(|e| e.source.to_string()).unwrap_or_default(),
    };
    // Edited text, kept in the URL (None while an example is shown as it is).
    let custom = RwSignal::new(initial.source.clone());
    let problem: RwSignal<Option<Problem>> = RwSignal::new(None);
    let status = RwSignal::new("compiling…".to_string());
    let sizes = Sizes::load();

    let on_answer = move |answer: api::Answer| match answer {
        api::Answer::Compiled { passes, cost, view, params, compile_ms, layout_ms } => {
            with_editor(cm::clear_errors);
            problem.set(None);
            st.config_problem.set(None);
            st.cost.set(Some(*cost));
            let total: f64 = passes.iter().map(|p| p.time_ms).sum();
            status.set(format!(
                "{} passes: {:.1} ms · compile {:.1} ms · view {:.1} ms",
                passes.len().saturating_sub(1),
                total,
                compile_ms,
                layout_ms
            ));
            let first = st.passes.with_untracked(Vec::is_empty);
            if st.passes.with_untracked(|p| *p != passes) {
                st.passes.set(passes);
            }
            st.view.set(Some(view));
            if st.params.with_untracked(|p| *p != params) {
                st.params.set(params);
            }
            // Kernel indices are the old plan's: the selection picks again.
            st.kernel.set(None);
            st.compiles.update(|n| *n += 1);
            if first {
                st.fit.update(|f| *f += 1);
            }
            cm::measure_after_paint();
        }
        api::Answer::Viewed(view) => st.view.set(Some(view)),
        api::Answer::Ran(run, unfused) => {
            st.run_busy.set(false);
            st.run_error.set(None);
            st.show_run(state::RunOutcome { fused: *run, unfused: unfused.map(|u| *u) });
        }
        api::Answer::RunFailed(message) => {
            st.run_busy.set(false);
            st.run_error.set(Some(message));
        }
        api::Answer::Inputs(params) => st.params.set(params),
        api::Answer::Npy(Ok((output, bytes))) => {
            cm::download_bytes(&bytes, &format!("out{output}.npy"), "application/octet-stream")
        }
        api::Answer::Npy(Err(message)) => st.run_error.set(Some(message)),
        api::Answer::Kernels(Ok(listing)) => {
            st.kernels_error.set(None);
            st.kernels.set(Some(*listing));
        }
        api::Answer::Kernels(Err(message)) => st.kernels_error.set(Some(message)),
        api::Answer::Error { message, in_config: true, .. } => {
            status.set("the fusion lab's settings are wrong: the last good result stays below".into());
            st.config_problem.set(Some(message));
        }
        api::Answer::Error { line, col, message, .. } => {
            with_editor(|e| cm::show_error(e, line, col, &message));
            status.set("error: the last good result stays below".into());
            problem.set(Some(Problem { line, col, message }));
        }
    };
    let on_crash = move |message: String| {
        status.set("the compiler's worker was restarted".into());
        problem.set(Some(Problem { line: 0, col: 0, message }));
    };
    match api::Compiler::start(on_answer, on_crash) {
        Ok(c) => COMPILER.with(|slot| *slot.borrow_mut() = Some(c)),
        Err(e) => problem.set(Some(Problem { line: 0, col: 0, message: format!("cannot start the worker: {e:?}") })),
    }
    let compile = move |text: &str| {
        if !st.awaits_server_profile() {
            with_compiler(|c| c.compile(text, st.spec(), st.config()))
        }
    };

    // The editor, once its element exists; compiles what it shows.
    let editor_ref = NodeRef::<leptos::html::Div>::new();
    Effect::new(move |_| {
        let Some(el) = editor_ref.get() else { return };
        if EDITOR.with(|e| e.borrow().is_some()) {
            return;
        }
        let on_change = Closure::<dyn Fn(String)>::new(move |text: String| {
            cm::mark_edit();
            compile(&text);
            example.set(String::new());
            custom.set(Some(text));
        });
        let on_cursor = Closure::<dyn Fn(u32)>::new(move |line: u32| st.cursor_line.set(line));
        let view = cm::create_editor(
            &el,
            &initial_source,
            on_change.as_ref().unchecked_ref(),
            on_cursor.as_ref().unchecked_ref(),
        );
        on_change.forget();
        on_cursor.forget();
        EDITOR.with(|e| *e.borrow_mut() = Some(view));
        if !from_share {
            cm::mark_edit();
            compile(&initial_source);
        }
    });

    // Another pass, another pass to diff against, the graph diff or a cluster opened:
    // a view of the same compile.
    Effect::new(move |first: Option<()>| {
        let _ = (st.pass.get(), st.against.get(), st.graph_diff.get(), st.toggled.get());
        if first.is_some() && !st.passes.with_untracked(Vec::is_empty) {
            with_compiler(|c| c.view(st.spec()));
        }
    });
    // The fusion lab's settings changed: the same text again.
    Effect::new(move |first: Option<()>| {
        let _ = (st.pipeline.get(), st.fusion.get(), st.profile.get());
        // The server's profile chosen: again when its numbers (or no server) arrive.
        if st.profile.get() == protocol::SERVER_PROFILE {
            st.server_profile.track();
            st.server_targets.track();
        }
        if first.is_some() {
            let mut text = String::new();
            with_editor(|e| text = cm::get_doc(e));
            compile(&text);
        }
    });
    // A decision belongs to its pass's list (a tour's step picks one once its list is here).
    Effect::new(move |_| {
        let found = st.decisions.with(|ds| {
            let (p, c) = st.pending_decision.get_untracked()?;
            ds.iter().position(|d| d.producer == p && d.consumer == c)
        });
        if found.is_some() {
            st.pending_decision.set(None);
        }
        st.decision.set(found);
    });

    // The URL follows the state, a moment after it settles (the source can be long, and
    // rewriting the URL on every keystroke costs more than the compile).
    let url_timer: StoredValue<Option<TimeoutHandle>> = StoredValue::new(None);
    let url_state = move || url::UrlState {
        example: Some(example.get()).filter(|e| !e.is_empty()),
        source: custom.get(),
        pass: st.shown_pass(),
        against: st.against.get(),
        graph_diff: st.graph_diff.get(),
        hide_unchanged: st.hide_unchanged.get(),
        side_by_side: st.side_by_side.get(),
        node: st.node.get(),
        pipeline: Some(st.pipeline.get()).filter(|p| *p != protocol::CompileConfig::default().pipeline),
        fusion: Some(st.fusion.get()).filter(|f| !f.trim().is_empty()),
        profile: Some(st.profile.get()).filter(|p| *p != protocol::CompileConfig::default().profile),
        tab: Some(st.tab.get()).filter(|t| t != "decisions"),
        target: Some(st.run_target.get()).filter(|t| t != "browser-cpu"),
    };
    Effect::new(move |_| {
        if st.shown_pass().is_none() {
            return;
        }
        let mut state = url_state();
        // While the page shows a share's text unedited, the link names the share.
        let share =
            shared.with(|s| s.as_ref().filter(|(_, text)| state.source.as_ref() == Some(text)).map(|s| s.0.clone()));
        if share.is_some() {
            state.source = None;
            state.example = None;
        }
        if let Some(h) = url_timer.get_value() {
            h.clear();
        }
        let write = move || url::write(&state, share.as_deref());
        url_timer.set_value(set_timeout_with_handle(write, Duration::from_millis(250)).ok());
    });

    // A clicked node: the editor goes to its line.
    Effect::new(move |_| {
        if st.node.get().is_none() {
            return;
        }
        if let Some(line) = untrack(|| st.selected_node_line()) {
            with_editor(|e| cm::goto_line(e, line));
        }
    });

    // Keys outside text fields: ↑/↓ step through the passes, j/k through the fusion
    // decisions, / finds a node, f fits the graph. The page lives as long as the tab:
    // the listener is never removed.
    let _keys = window_event_listener(leptos::ev::keydown, move |e: web_sys::KeyboardEvent| {
        if typing_in_field(&e) || e.ctrl_key() || e.meta_key() || e.alt_key() {
            return;
        }
        match e.key().as_str() {
            "ArrowDown" | "ArrowUp" => {
                let visible = st.visible_passes();
                let names: Vec<String> =
                    st.passes.with_untracked(|ps| visible.iter().map(|&i| ps[i].name.clone()).collect());
                // From the pass chosen last (its view may still be on its way).
                let from = st.pass.get_untracked().filter(|p| names.contains(p)).or_else(|| st.shown_pass());
                let at = names.iter().position(|n| Some(n) == from.as_ref()).unwrap_or(0);
                let next = if e.key() == "ArrowDown" {
                    (at + 1).min(names.len().saturating_sub(1))
                } else {
                    at.saturating_sub(1)
                };
                if let Some(name) = names.get(next) {
                    st.pass.set(Some(name.clone()));
                }
            }
            "j" | "k" => {
                let n = st.decisions.with_untracked(Vec::len);
                if n == 0 {
                    return;
                }
                let next = match (st.decision.get_untracked(), e.key().as_str()) {
                    (None, "j") => 0,
                    (None, _) => n - 1,
                    (Some(i), "j") => (i + 1).min(n - 1),
                    (Some(i), _) => i.saturating_sub(1),
                };
                st.decision.set(Some(next));
            }
            "/" => {
                if let Some(el) = document().query_selector("[data-testid=graph-search]").ok().flatten() {
                    if let Ok(input) = el.dyn_into::<web_sys::HtmlElement>() {
                        let _ = input.focus();
                    }
                }
            }
            "f" => st.fit.update(|f| *f += 1),
            _ => return,
        }
        e.prevent_default();
    });

    let load_text = move |text: &str| {
        st.node.set(None);
        with_editor(|e| cm::set_doc(e, text));
        cm::mark_edit();
        compile(text);
        st.fit.update(|f| *f += 1);
    };
    let choose_example = move |id: String| choose_example_source(&id, example, custom, load_text);
    // A file opened or dropped: its text replaces the editor's.
    let open_file = move |file: web_sys::File| {
        let on_text = Closure::once_into_js(move |text: Option<String>, name: String| match text {
            Some(text) => {
                example.set(String::new());
                custom.set(Some(text.clone()));
                load_text(&text);
            }
            None => problem.set(Some(Problem { line: 0, col: 0, message: format!("cannot read the file: {name}") })),
        });
        cm::read_file(&file, on_text.unchecked_ref());
    };
    let on_pick = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        if let Some(file) = input.files().and_then(|f| f.get(0)) {
            open_file(file);
        }
        input.set_value("");
    };
    let dragging = RwSignal::new(false);
    let on_drop = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        dragging.set(false);
        if let Some(file) = ev.data_transfer().and_then(|d| d.files()).and_then(|f| f.get(0)) {
            open_file(file);
        }
    };

    // A share link: the stored text and settings, then a compile.
    if let Some(id) = share {
        let wanted = id.clone();
        status.set("loading the shared state…".into());
        let hash_has_state = !window().location().hash().unwrap_or_default().trim_start_matches('#').is_empty();
        let on_done = Closure::once_into_js(move |ok: bool, text: String| {
            let loaded = ok.then(|| serde_json::from_str::<serde_json::Value>(&text).ok()).flatten().and_then(|v| {
                let source = v.get("source")?.as_str()?.to_string();
                Some((source, v.get("settings").cloned().unwrap_or_default()))
            });
            let Some((source, settings)) = loaded else {
                let why = if ok { "the server's answer is not a share".to_string() } else { text };
                // Beside the share button, where a compile's answer does not clear it.
                share_note.set(Some((false, format!("cannot open the share {id}: {why}"))));
                choose_example_source(examples::DEFAULT_EXAMPLE, example, custom, load_text);
                return;
            };
            if !hash_has_state {
                let s = url::from_settings(&settings);
                st.pass.set(s.pass);
                st.against.set(s.against);
                st.graph_diff.set(s.graph_diff);
                st.hide_unchanged.set(s.hide_unchanged);
                st.side_by_side.set(s.side_by_side);
                st.node.set(s.node);
                st.pipeline.set(s.pipeline.unwrap_or_else(|| protocol::CompileConfig::default().pipeline));
                st.fusion.set(s.fusion.unwrap_or_default());
                st.profile.set(s.profile.unwrap_or_else(|| protocol::CompileConfig::default().profile));
                st.tab.set(s.tab.unwrap_or_else(|| "decisions".into()));
                st.run_target.set(s.target.unwrap_or_else(|| "browser-cpu".into()));
            }
            example.set(String::new());
            custom.set(Some(source.clone()));
            shared.set(Some((id, source.clone())));
            let node = st.node.get_untracked();
            load_text(&source);
            st.node.set(node);
        });
        cm::get_share(&wanted, on_done.unchecked_ref());
    }
    let share_now = move |_| {
        let mut source = String::new();
        with_editor(|e| source = cm::get_doc(e));
        let settings = url::settings_json(&url_state());
        let body = serde_json::json!({ "source": source, "settings": settings }).to_string();
        share_note.set(Some((true, "storing…".into())));
        let on_done = Closure::once_into_js(move |ok: bool, text: String| {
            let created = ok
                .then(|| serde_json::from_str::<serde_json::Value>(&text).ok())
                .flatten()
                .and_then(|v| Some((v.get("id")?.as_str()?.to_string(), v.get("url")?.as_str()?.to_string())));
            match created {
                Some((id, path)) => {
                    let origin = window().location().origin().unwrap_or_default();
                    let link = format!("{origin}{path}");
                    cm::copy_text(&link);
                    shared.set(Some((id, source)));
                    share_note.set(Some((true, link)));
                }
                None => {
                    share_note.set(Some((false, if ok { "the server's answer is not a share".into() } else { text })))
                }
            }
        });
        cm::post_share(&body, on_done.unchecked_ref());
    };

    let grid = move || {
        format!(
            "grid-template-columns: {:.0}px 5px {:.0}px 5px minmax(0, 1fr); \
             --graph-h: {:.0}px; --diff-w: {:.0}px",
            sizes.source.get(),
            sizes.passes.get(),
            sizes.graph.get(),
            sizes.diff.get()
        )
    };
    let clamp = |v: f64, lo: f64, hi: f64| v.max(lo).min(hi.max(lo));
    let viewport = || {
        (
            window().inner_width().ok().and_then(|v| v.as_f64()).unwrap_or(1280.0),
            window().inner_height().ok().and_then(|v| v.as_f64()).unwrap_or(800.0),
        )
    };

    view! {
        <header>
            <h1>"hloscope"</h1>
            <label>
                "example "
                <select
                    data-testid="examples"
                    prop:value=move || example.get()
                    on:change=move |ev| choose_example(event_target_value(&ev))
                >
                    <option value="" disabled=true>
                        "(edited)"
                    </option>
                    {examples::EXAMPLES
                        .iter()
                        .map(|e| view! { <option value=e.id>{e.label}</option> })
                        .collect_view()}
                </select>
            </label>
            <label class="button" title="open a StableHLO (.mlir) or HLO (.hlo, .txt) file; or drop one on the editor">
                "open file…"
                <input type="file" data-testid="open-file" accept=".mlir,.hlo,.txt,text/plain" on:change=on_pick />
            </label>
            <button class="button" data-testid="share" title="store this page's state on the server and copy a link to it" on:click=share_now>
                "share"
            </button>
            {move || {
                share_note
                    .get()
                    .map(|(ok, text)| {
                        if ok && text.starts_with("http") {
                            view! {
                                <span class="share-note">
                                    <input readonly data-testid="share-link" prop:value=text.clone() on:focus=|ev| {
                                        let input: web_sys::HtmlInputElement = event_target(&ev);
                                        input.select();
                                    } />
                                    <small>"copied"</small>
                                    <button class="close" title="close" on:click=move |_| share_note.set(None)>"×"</button>
                                </span>
                            }
                                .into_any()
                        } else {
                            view! {
                                <span class="share-note" class:error=!ok data-testid=(!ok).then_some("share-error")>
                                    {text}
                                    <button class="close" title="close" on:click=move |_| share_note.set(None)>"×"</button>
                                </span>
                            }
                                .into_any()
                        }
                    })
            }}
            {move || {
                tours::for_example(&example.get())
                    .map(|t| {
                        let title = t.title.clone();
                        view! {
                            <button
                                class="button"
                                data-testid="tour-start"
                                title=format!("a guided tour: {title}")
                                on:click=move |_| {
                                    st.tour.set(Some((t.clone(), 0)));
                                    st.tour_step(0);
                                }
                            >
                                "tour"
                            </button>
                        }
                    })
            }}
            <span class="keys" title="keyboard: ↑/↓ step through the passes, j/k through the fusion decisions, / finds a node, f fits the graph">"keys: ↑↓ j k / f"</span>
            <span class="status" data-testid="status">
                {move || status.get()}
            </span>
        </header>
        <main style=grid>
            <section
                class="pane source"
                class:dragging=move || dragging.get()
                on:dragover=move |ev: leptos::ev::DragEvent| {
                    ev.prevent_default();
                    dragging.set(true);
                }
                on:dragleave=move |_| dragging.set(false)
                on:drop=on_drop
            >
                <h2>"source " <small>"StableHLO or HLO · drop a file here"</small></h2>
                <div class="editor" data-testid="editor" node_ref=editor_ref></div>
                {move || {
                    problem
                        .get()
                        .map(|p| {
                            view! {
                                <div class="diagnostic" data-testid="diagnostic">
                                    {p.text()}
                                </div>
                            }
                        })
                }}
            </section>
            <Splitter
                testid="split-source"
                vertical=true
                on_drag=move |d| sizes.source.update(|w| *w = clamp(*w + d, 220.0, viewport().0 - 600.0))
                on_end=move || sizes.save()
            />
            <div class="middle">
            <section class="pane passes">
                <h2>
                    "passes "
                    <label class="toggle" title="hide the passes that changed nothing">
                        <input
                            type="checkbox"
                            data-testid="hide-unchanged"
                            prop:checked=move || st.hide_unchanged.get()
                            on:change=move |ev| st.hide_unchanged.set(event_target_checked(&ev))
                        />
                        "changed only"
                    </label>
                </h2>
                <PassList />
            </section>
            <section class="pane details">
                <h2>"node"</h2>
                <NodeDetails />
            </section>
            </div>
            <Splitter
                testid="split-passes"
                vertical=true
                on_drag=move |d| sizes.passes.update(|w| *w = clamp(*w + d, 160.0, 480.0))
                on_end=move || sizes.save()
            />
            <div class="right">
                <section class="pane graph-pane">
                    <h2>
                        "graph "
                        <small>
                            {move || {
                                let shown = st.shown_pass().unwrap_or_default();
                                if st.graph_diff.get() {
                                    let against = st.view.with(|v| {
                                        v.as_ref().and_then(|v| st.passes.with(|p| p.get(v.against).map(|p| p.name.clone())))
                                    });
                                    format!("after {shown}, diffed against {}", against.unwrap_or_default())
                                } else {
                                    format!("after {shown}")
                                }
                            }}
                        </small>
                    </h2>
                    <Graph />
                    <TourPanel />
                </section>
                <Splitter
                    testid="split-graph"
                    vertical=false
                    on_drag=move |d| sizes.graph.update(|h| *h = clamp(*h + d, 160.0, viewport().1 - 220.0))
                    on_end=move || sizes.save()
                />
                <div class="bottom">
                    <section class="pane diff-pane">
                        <Diff />
                    </section>
                    <Splitter
                        testid="split-diff"
                        vertical=true
                        on_drag=move |d| sizes.diff.update(|w| *w = clamp(*w + d, 200.0, viewport().0 - 900.0))
                        on_end=move || sizes.save()
                    />
                    <section class="pane decisions-pane">
                        <h2 class="tabs">
                            {[("decisions", "decisions"), ("lab", "fusion lab"), ("cost", "cost"), ("kernels", "kernels"), ("run", "run")]
                                .into_iter()
                                .map(|(id, label)| {
                                    view! {
                                        <button
                                            class="tab"
                                            data-testid=format!("tab-{id}")
                                            class:active=move || st.tab.get() == id
                                            on:click=move |_| st.tab.set(id.to_string())
                                        >
                                            {label}
                                        </button>
                                    }
                                })
                                .collect_view()}
                            <small>{move || (st.tab.get() == "decisions").then_some("(j/k)")}</small>
                        </h2>
                        {move || match st.tab.get().as_str() {
                            "lab" => view! { <Lab /> }.into_any(),
                            "cost" => view! { <Cost /> }.into_any(),
                            "kernels" => view! { <Kernels /> }.into_any(),
                            "run" => view! { <Run /> }.into_any(),
                            _ => view! { <Decisions /> }.into_any(),
                        }}
                    </section>
                </div>
            </div>
        </main>
    }
}

/// The guided tour's current step, over the graph: its text with the numbers of the
/// compile on screen, and the way to the next step.
#[component]
fn TourPanel() -> impl IntoView {
    let st = state::state();
    move || {
        st.tour.get().map(|(tour, i)| {
            let n = tour.steps.len();
            let step = tour.steps[i].clone();
            let profile = st.cost.with(|c| c.as_ref().map(|c| c.profile.name.clone()).unwrap_or_default());
            let text = st.passes.with(|p| tours::fill(&step.text, p, &profile).unwrap_or_else(|e| e));
            view! {
                <div class="tour" data-testid="tour">
                    <div class="tour-head">
                        <b>{tour.title.clone()}</b>
                        <small data-testid="tour-step">{format!("step {} of {n}", i + 1)}</small>
                        <button class="close" data-testid="tour-close" title="end the tour" on:click=move |_| st.tour.set(None)>
                            "×"
                        </button>
                    </div>
                    <p data-testid="tour-text">{text}</p>
                    <div class="tour-buttons">
                        <button data-testid="tour-prev" prop:disabled={i == 0} on:click=move |_| st.tour_step(i.saturating_sub(1))>
                            "← back"
                        </button>
                        <button data-testid="tour-next" prop:disabled={i + 1 >= n} on:click=move |_| st.tour_step(i + 1)>
                            "next →"
                        </button>
                    </div>
                </div>
            }
        })
    }
}

/// Shows the built-in example `id`.
fn choose_example_source(
    id: &str,
    example: RwSignal<String>,
    custom: RwSignal<Option<String>>,
    load_text: impl Fn(&str),
) {
    let Some(ex) = examples::by_id(id) else { return };
    example.set(id.to_string());
    custom.set(None);
    load_text(ex.source);
}

impl State {
    /// The selected node's source line, when it has one.
    fn selected_node_line(&self) -> Option<u32> {
        self.selected_node().map(|n| n.line).filter(|&l| l > 0)
    }
}
