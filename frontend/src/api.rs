//! The compiler's Web Worker (`static/worker.js` running the `hloscope-worker` crate):
//! requests out, answers in, answers to superseded requests dropped.

use crate::protocol::{Request, Response};
use std::cell::Cell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

pub struct Compiler {
    worker: web_sys::Worker,
    next_id: Cell<u32>,
}

impl Compiler {
    /// Starts the worker; `on_answer` gets the latest request's answer, `on_crash` a
    /// message when the worker fails.
    pub fn start(
        on_answer: impl Fn(Response) + 'static,
        on_crash: impl Fn(String) + 'static,
    ) -> Result<Compiler, JsValue> {
        let opts = web_sys::WorkerOptions::new();
        opts.set_type(web_sys::WorkerType::Module);
        let worker = web_sys::Worker::new_with_options("./worker.js", &opts)?;
        let compiler = Compiler { worker, next_id: Cell::new(0) };
        let on_message = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            let Some(text) = e.data().as_string() else { return };
            match serde_json::from_str::<Response>(&text) {
                Ok(r) => on_answer(r),
                Err(err) => web_sys::console::error_1(&format!("bad answer from the worker: {err}").into()),
            }
        });
        compiler.worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        on_message.forget();
        let on_error = Closure::<dyn Fn(web_sys::ErrorEvent)>::new(move |e: web_sys::ErrorEvent| {
            on_crash(format!("the compiler's worker failed: {}", e.message()));
        });
        compiler.worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();
        Ok(compiler)
    }

    /// Sends `source` to compile; returns the request's id.
    pub fn compile(&self, source: &str) -> u32 {
        let id = self.next_id.get() + 1;
        self.next_id.set(id);
        let req = Request { id, source: source.to_string() };
        let json = serde_json::to_string(&req).unwrap_or_default();
        if let Err(e) = self.worker.post_message(&JsValue::from_str(&json)) {
            web_sys::console::error_1(&e);
        }
        id
    }

    /// The id of the last request sent.
    pub fn latest(&self) -> u32 {
        self.next_id.get()
    }
}
