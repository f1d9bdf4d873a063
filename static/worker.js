// The compiler's Web Worker: hloscope-core built for wasm32 (frontend/worker), one
// JSON request in, one JSON answer out (frontend/src/protocol.rs). A trap in the
// compiler leaves its instance unusable: the worker reports it and closes, and the page
// starts a fresh one.
import init, { handle } from "./pkg/hloscope_worker.js";

const ready = init();
onmessage = async (e) => {
  await ready;
  try {
    postMessage(handle(e.data));
  } catch (err) {
    let id = 0;
    try { id = JSON.parse(e.data).id | 0; } catch { /* not even JSON */ }
    postMessage(JSON.stringify({ id, crash: String(err && err.message || err) }));
    close();
  }
};
