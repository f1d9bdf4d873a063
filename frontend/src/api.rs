//! The compiler's Web Worker (`static/worker.js` running the `hloscope-worker` crate):
//! requests out, answers in.
//!
//! At most one compile is in flight: an edit made while the worker is busy waits, and
//! only the newest such edit is sent when the worker is free, so typing fast never
//! queues stale work and a lone edit is compiled at once. Answers the page has
//! superseded are dropped here. A worker that dies (a trap in the compiler) is replaced
//! by a fresh one, and the page is told. The `.npy` input files live here too, by
//! parameter: the worker gets each one once, when it is picked (and again after a
//! restart), and a server run reads them from here.

use crate::protocol::{
    CompileConfig, CostView, Crash, KernelsView, Outcome, ParamView, PassSummary, PassView, Request, Response,
    RunInputs, RunView, ViewSpec,
};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// An answer the page wants, its view whole.
pub enum Answer {
    Compiled {
        passes: Vec<PassSummary>,
        cost: Box<CostView>,
        view: PassView,
        params: Vec<ParamView>,
        compile_ms: f64,
        layout_ms: f64,
    },
    Viewed(PassView),
    /// A run, and its unfused twin when one was asked for.
    Ran(Box<RunView>, Option<Box<RunView>>),
    /// A run that failed (its error is the run's, not the text's).
    RunFailed(String),
    /// The kernels pane's listing, or why there is none.
    Kernels(Result<Box<KernelsView>, String>),
    /// The parameters with their input files, after one was picked or forgotten.
    Inputs(Vec<ParamView>),
    /// Output `output` of the last browser run as `.npy` bytes, or why not.
    Npy(Result<(u32, js_sys::Uint8Array), String>),
    Error {
        line: u32,
        col: u32,
        message: String,
        in_config: bool,
    },
}

type OnAnswer = Rc<dyn Fn(Answer)>;
type OnCrash = Rc<dyn Fn(String)>;

struct Inner {
    worker: RefCell<Option<web_sys::Worker>>,
    next_id: Cell<u32>,
    /// The last compile sent, and whether its answer is still to come.
    last_compile: Cell<u32>,
    compiling: Cell<bool>,
    /// The last run, the last view and the last output download asked for.
    last_run: Cell<u32>,
    last_view: Cell<u32>,
    /// The last kernels listing asked for.
    last_kernels: Cell<u32>,
    last_npy: Cell<u32>,
    /// The input file picked for each parameter: its name and bytes.
    files: RefCell<Vec<Option<(String, js_sys::Uint8Array)>>>,
    /// Text edited while a compile was in flight, and the view to ask for with it.
    waiting: RefCell<Option<(String, ViewSpec, CompileConfig)>>,
    /// The last view received, wanted or not: the next one is sent as what differs.
    received: RefCell<Option<PassView>>,
    on_answer: OnAnswer,
    on_crash: OnCrash,
}

#[derive(Clone)]
pub struct Compiler(Rc<Inner>);

impl Compiler {
    /// Starts the worker; `on_answer` gets each answer the page still wants, `on_crash`
    /// a message when the worker failed (it has been restarted by then).
    pub fn start(
        on_answer: impl Fn(Answer) + 'static,
        on_crash: impl Fn(String) + 'static,
    ) -> Result<Compiler, JsValue> {
        let compiler = Compiler(Rc::new(Inner {
            worker: RefCell::new(None),
            next_id: Cell::new(0),
            last_compile: Cell::new(0),
            compiling: Cell::new(false),
            last_run: Cell::new(0),
            last_view: Cell::new(0),
            last_kernels: Cell::new(0),
            last_npy: Cell::new(0),
            files: RefCell::new(Vec::new()),
            waiting: RefCell::new(None),
            received: RefCell::new(None),
            on_answer: Rc::new(on_answer),
            on_crash: Rc::new(on_crash),
        }));
        compiler.spawn()?;
        Ok(compiler)
    }

    fn spawn(&self) -> Result<(), JsValue> {
        let opts = web_sys::WorkerOptions::new();
        opts.set_type(web_sys::WorkerType::Module);
        let worker = web_sys::Worker::new_with_options("./worker.js", &opts)?;
        let me = self.clone();
        let on_message = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            // The answer's JSON, or [JSON, bytes] when it carries a file.
            let data = e.data();
            let (text, file) = match data.as_string() {
                Some(text) => (text, None),
                None => {
                    let pair = js_sys::Array::from(&data);
                    let Some(text) = pair.get(0).as_string() else { return };
                    (text, pair.get(1).dyn_into::<js_sys::Uint8Array>().ok())
                }
            };
            match serde_json::from_str::<Response>(&text) {
                Ok(r) => me.answered(r, file),
                Err(_) => match serde_json::from_str::<Crash>(&text) {
                    Ok(c) => me.crashed(format!("the compiler crashed: {}", c.crash)),
                    Err(err) => web_sys::console::error_1(&format!("bad answer from the worker: {err}").into()),
                },
            }
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        on_message.forget();
        let me = self.clone();
        let on_error = Closure::<dyn Fn(web_sys::ErrorEvent)>::new(move |e: web_sys::ErrorEvent| {
            me.crashed(format!("the compiler's worker failed: {}", e.message()));
        });
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();
        if let Some(old) = self.0.worker.replace(Some(worker)) {
            old.terminate();
        }
        // A fresh worker has sent nothing yet, and keeps no files: it gets them again.
        self.0.received.replace(None);
        let files = self.0.files.borrow().clone();
        for (param, file) in files.iter().enumerate() {
            if let Some((name, bytes)) = file {
                self.post_input(param as u32, name, bytes);
            }
        }
        Ok(())
    }

    fn crashed(&self, message: String) {
        self.0.compiling.set(false);
        if let Err(e) = self.spawn() {
            web_sys::console::error_1(&e);
        }
        (self.0.on_crash)(message);
        self.send_waiting();
    }

    fn answered(&self, r: Response, file: Option<js_sys::Uint8Array>) {
        if r.id == self.0.last_npy.get() {
            let answer = match (r.result, file) {
                (Outcome::Npy { output }, Some(bytes)) => Ok((output, bytes)),
                (Outcome::Error { message, .. }, _) => Err(message),
                (other, _) => Err(format!("the worker answered a download with {other:?} and no file")),
            };
            (self.0.on_answer)(Answer::Npy(answer));
            return;
        }
        if let Outcome::Inputs { params } = r.result {
            // None: a restarted worker that has compiled nothing yet (the page keeps what
            // it showed).
            if let Some(params) = params {
                (self.0.on_answer)(Answer::Inputs(params));
            }
            return;
        }
        if r.id == self.0.last_run.get() {
            let answer = match r.result {
                Outcome::Ran { run, unfused } => Answer::Ran(run, unfused),
                Outcome::Error { message, .. } => Answer::RunFailed(message),
                other => Answer::RunFailed(format!("the worker answered a run with {other:?}")),
            };
            (self.0.on_answer)(answer);
            return;
        }
        if r.id == self.0.last_kernels.get() {
            let listing = match r.result {
                Outcome::Kernels { listing } => Ok(listing),
                Outcome::Error { message, .. } => Err(message),
                other => Err(format!("the worker answered a listing with {other:?}")),
            };
            (self.0.on_answer)(Answer::Kernels(listing));
            return;
        }
        let is_compile = matches!(r.result, Outcome::Compiled { .. } | Outcome::Error { .. });
        if is_compile && r.id == self.0.last_compile.get() {
            self.0.compiling.set(false);
        }
        let wanted = match r.result {
            // A compile's answer is wanted while no later compile was sent (a view sent
            // after it is answered from its session, next).
            Outcome::Compiled { .. } | Outcome::Error { .. } => r.id == self.0.last_compile.get(),
            Outcome::Viewed { .. } => r.id == self.0.last_view.get() && r.id > self.0.last_compile.get(),
            Outcome::Ran { .. } | Outcome::Kernels { .. } | Outcome::Inputs { .. } | Outcome::Npy { .. } => false,
        };
        let complete = |parts: Box<crate::protocol::ViewParts>| {
            let view = parts.complete(self.0.received.borrow().as_ref());
            if view.is_none() {
                web_sys::console::error_1(&"the worker sent part of a view the page never had".into());
            }
            self.0.received.replace(view.clone());
            view
        };
        let answer = match r.result {
            Outcome::Compiled { passes, cost, view, params } => complete(view).map(|view| Answer::Compiled {
                passes,
                cost,
                view,
                params,
                compile_ms: r.compile_ms,
                layout_ms: r.layout_ms,
            }),
            Outcome::Viewed { view } => complete(view).map(Answer::Viewed),
            Outcome::Error { line, col, message, in_config } => Some(Answer::Error { line, col, message, in_config }),
            Outcome::Ran { .. } | Outcome::Kernels { .. } | Outcome::Inputs { .. } | Outcome::Npy { .. } => None,
        };
        if let (true, Some(answer)) = (wanted, answer) {
            (self.0.on_answer)(answer);
        }
        self.send_waiting();
    }

    fn send_waiting(&self) {
        if self.0.compiling.get() {
            return;
        }
        let next = self.0.waiting.borrow_mut().take();
        if let Some((source, view, config)) = next {
            self.compile(&source, view, config);
        }
    }

    fn post(&self, req: &Request) {
        self.post_with(req, None);
    }

    /// Posts `req` with the file it carries, as `[JSON, bytes]` (the bytes are copied by
    /// postMessage: the page keeps its own for server runs and for a restarted worker).
    fn post_with(&self, req: &Request, file: Option<&js_sys::Uint8Array>) {
        let json = JsValue::from_str(&serde_json::to_string(req).unwrap_or_default());
        let message = match file {
            Some(bytes) => js_sys::Array::of2(&json, bytes).into(),
            None => json,
        };
        if let Some(w) = self.0.worker.borrow().as_ref() {
            if let Err(e) = w.post_message(&message) {
                web_sys::console::error_1(&e);
            }
        }
    }

    fn post_input(&self, param: u32, name: &str, bytes: &js_sys::Uint8Array) {
        let id = self.next_id();
        self.post_with(&Request::Input { id, param, name: Some(name.to_string()) }, Some(bytes));
    }

    fn next_id(&self) -> u32 {
        let id = self.0.next_id.get() + 1;
        self.0.next_id.set(id);
        id
    }

    /// Compiles `source` and asks for `view` of it: now when the worker is free, else
    /// when it is (replacing any edit still waiting).
    pub fn compile(&self, source: &str, view: ViewSpec, config: CompileConfig) {
        if self.0.compiling.get() {
            *self.0.waiting.borrow_mut() = Some((source.to_string(), view, config));
            return;
        }
        let id = self.next_id();
        self.0.last_compile.set(id);
        self.0.compiling.set(true);
        self.post(&Request::Compile { id, source: source.to_string(), view, config });
    }

    /// Runs the last compile's module on `inputs` in the worker, on `target`
    /// (`browser-cpu`, `browser-webgpu`); with `unfused`, with fusion off too.
    pub fn run(&self, inputs: RunInputs, target: &str, unfused: bool) {
        let id = self.next_id();
        self.0.last_run.set(id);
        self.post(&Request::Run { id, inputs, target: target.to_string(), unfused });
    }

    /// Keeps the file `name` holding `bytes` as parameter `param`'s input, and sends it to
    /// the worker, which answers with every parameter's file checked.
    pub fn set_input(&self, param: u32, name: &str, bytes: js_sys::Uint8Array) {
        let slot = param as usize;
        {
            let mut files = self.0.files.borrow_mut();
            if files.len() <= slot {
                files.resize(slot + 1, None);
            }
            files[slot] = Some((name.to_string(), bytes.clone()));
        }
        self.post_input(param, name, &bytes);
    }

    /// The bytes of parameter `param`'s file, if one was picked.
    pub fn input(&self, param: u32) -> Option<js_sys::Uint8Array> {
        self.0.files.borrow().get(param as usize).cloned().flatten().map(|(_, bytes)| bytes)
    }

    /// Asks for output `output` of the last browser run as an `.npy` file.
    pub fn output_npy(&self, output: u32) {
        let id = self.next_id();
        self.0.last_npy.set(id);
        self.post(&Request::OutputNpy { id, output });
    }

    /// Asks for the last compile's kernels on `machine`, with the code of kernel `kernel`.
    pub fn kernels(&self, machine: &str, kernel: Option<usize>) {
        let id = self.next_id();
        self.0.last_kernels.set(id);
        self.post(&Request::Kernels { id, machine: machine.to_string(), kernel });
    }

    /// Asks for another view of the last compile.
    pub fn view(&self, view: ViewSpec) {
        let id = self.next_id();
        self.0.last_view.set(id);
        self.post(&Request::View { id, view });
    }
}
