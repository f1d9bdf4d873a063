//! hloscope's web app: edit StableHLO or HLO, step through the pipeline's passes, see each
//! pass's graph with its fusion clusters, its text diff and its fusion decisions.
//!
//! The compiler runs in a Web Worker (`frontend/worker`, messages in `protocol.rs`), so
//! typing never waits for it; the page ([`App`]) only keeps state and draws. The editor is
//! CodeMirror 6 (`cm.rs`); the state lives in the URL's hash (`url.rs`).

pub mod api;
pub mod cm;
pub mod components;
pub mod examples;
pub mod protocol;
pub mod url;

use components::{decisions::Decisions, diff::Diff, graph::Graph, node_details::NodeDetails, pass_list::PassList};
use leptos::prelude::*;
use protocol::{NodeView, Outcome, PassView, Response};
use std::cell::RefCell;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Milliseconds between the last keystroke and the compile it starts.
const DEBOUNCE: Duration = Duration::from_millis(150);

thread_local! {
    static EDITOR: RefCell<Option<cm::Editor>> = const { RefCell::new(None) };
    static COMPILER: RefCell<Option<api::Compiler>> = const { RefCell::new(None) };
    static PENDING: RefCell<Option<TimeoutHandle>> = const { RefCell::new(None) };
}

#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

fn with_editor(f: impl FnOnce(&cm::Editor)) {
    EDITOR.with(|e| {
        if let Some(e) = e.borrow().as_ref() {
            f(e)
        }
    });
}

fn compile(source: &str) {
    COMPILER.with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            c.compile(source);
        }
    });
}

fn latest_request() -> u32 {
    COMPILER.with(|c| c.borrow().as_ref().map_or(0, api::Compiler::latest))
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

#[component]
pub fn App() -> impl IntoView {
    let initial = url::read();
    let example = RwSignal::new(match (&initial.source, &initial.example) {
        (Some(_), _) => String::new(),
        (None, Some(id)) if examples::by_id(id).is_some() => id.clone(),
        _ => examples::DEFAULT_EXAMPLE.to_string(),
    });
    let initial_source = initial
        .source
        .clone()
        .unwrap_or_else(|| examples::by_id(&example.get_untracked()).map(|e| e.source.to_string()).unwrap_or_default());
    // Edited text, kept in the URL (None while an example is shown as it is).
    let custom = RwSignal::new(initial.source.clone());
    let passes: RwSignal<Vec<PassView>> = RwSignal::new(Vec::new());
    let selected = RwSignal::new(0usize);
    let wanted_pass = StoredValue::new(initial.pass.clone());
    let problem: RwSignal<Option<Problem>> = RwSignal::new(None);
    let status = RwSignal::new("compiling…".to_string());
    let node: RwSignal<Option<NodeView>> = RwSignal::new(None);
    let current = Memo::new(move |_| passes.with(|p| p.get(selected.get()).cloned()));
    let graph = Signal::derive(move || current.with(|p| p.as_ref().map(|p| p.graph.clone())));

    let on_answer = move |r: Response| {
        if r.id != latest_request() {
            return; // superseded by a later edit
        }
        match r.result {
            Outcome::Ok { passes: new } => {
                let keep = wanted_pass
                    .get_value()
                    .or_else(|| passes.with_untracked(|old| old.get(selected.get_untracked()).map(|p| p.name.clone())));
                wanted_pass.set_value(None);
                let index = keep
                    .and_then(|name| new.iter().position(|p| p.name == name))
                    .or_else(|| new.iter().position(|p| p.name == "fusion"))
                    .unwrap_or(new.len().saturating_sub(1));
                with_editor(cm::clear_errors);
                problem.set(None);
                status.set(format!(
                    "{} passes · compiled in {:.1} ms · laid out in {:.1} ms",
                    new.len().saturating_sub(1),
                    r.compile_ms,
                    r.layout_ms
                ));
                passes.set(new);
                selected.set(index);
                cm::measure_after_paint();
            }
            Outcome::Error { line, col, message } => {
                with_editor(|e| cm::show_error(e, line, col, &message));
                status.set("error: the last good result stays below".into());
                problem.set(Some(Problem { line, col, message }));
            }
        }
    };
    let on_crash = move |message: String| {
        problem.set(Some(Problem { line: 0, col: 0, message }));
    };
    match api::Compiler::start(on_answer, on_crash) {
        Ok(c) => COMPILER.with(|slot| *slot.borrow_mut() = Some(c)),
        Err(e) => problem.set(Some(Problem { line: 0, col: 0, message: format!("cannot start the worker: {e:?}") })),
    }

    // The editor, once its element exists; compiles what it shows.
    let editor_ref = NodeRef::<leptos::html::Div>::new();
    Effect::new(move |_| {
        let Some(el) = editor_ref.get() else { return };
        if EDITOR.with(|e| e.borrow().is_some()) {
            return;
        }
        let on_change = Closure::<dyn Fn(String)>::new(move |text: String| {
            cm::mark_edit();
            PENDING.with(|p| {
                if let Some(h) = p.borrow_mut().take() {
                    h.clear();
                }
            });
            let handle = set_timeout_with_handle(
                move || {
                    compile(&text);
                    example.set(String::new());
                    custom.set(Some(text));
                },
                DEBOUNCE,
            );
            PENDING.with(|p| *p.borrow_mut() = handle.ok());
        });
        let view = cm::create_editor(&el, &initial_source, on_change.as_ref().unchecked_ref());
        on_change.forget();
        EDITOR.with(|e| *e.borrow_mut() = Some(view));
        cm::mark_edit();
        compile(&initial_source);
    });

    // The URL follows the state.
    Effect::new(move |_| {
        let pass = passes.with(|p| p.get(selected.get()).map(|p| p.name.clone()));
        let (ex, src) = (example.get(), custom.get());
        if pass.is_some() {
            url::write(&ex, src.as_deref(), pass.as_deref());
        }
    });

    // A clicked node: the editor goes to its line.
    Effect::new(move |_| {
        if let Some(line) = node.with(|n| n.as_ref().map(|n| n.line)) {
            with_editor(|e| cm::goto_line(e, line));
        }
    });

    // Arrow keys step through the passes (outside the editor).
    // The page lives as long as the tab: the listener is never removed.
    let _keys = window_event_listener(leptos::ev::keydown, move |e: web_sys::KeyboardEvent| {
        let in_editor = e
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|el| el.closest(".cm-editor, select, input").ok().flatten())
            .is_some();
        if in_editor {
            return;
        }
        let n = passes.with_untracked(Vec::len);
        let i = selected.get_untracked();
        match e.key().as_str() {
            "ArrowDown" if i + 1 < n => selected.set(i + 1),
            "ArrowUp" if i > 0 => selected.set(i - 1),
            _ => return,
        }
        e.prevent_default();
    });

    let choose_example = move |id: String| {
        let Some(ex) = examples::by_id(&id) else { return };
        example.set(id);
        custom.set(None);
        node.set(None);
        with_editor(|e| cm::set_doc(e, ex.source));
        cm::mark_edit();
        compile(ex.source);
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
            <span class="status" data-testid="status">
                {move || status.get()}
            </span>
        </header>
        <main>
            <section class="pane source">
                <h2>"source"</h2>
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
            <section class="pane passes">
                <h2>"passes " <small>"(↑/↓)"</small></h2>
                <PassList passes=passes selected=selected />
            </section>
            <section class="pane graph-pane">
                <h2>
                    "graph "
                    <small>{move || current.with(|p| p.as_ref().map(|p| format!("after {}", p.name)))}</small>
                </h2>
                <Graph graph=graph node=node />
            </section>
            <section class="pane details">
                <h2>"node"</h2>
                <NodeDetails node=node />
            </section>
            <section class="pane diff-pane">
                <h2>"diff " <small>"against the previous pass"</small></h2>
                <Diff pass=current />
            </section>
            <section class="pane decisions-pane">
                <h2>"fusion decisions"</h2>
                <Decisions pass=current />
            </section>
        </main>
    }
}
