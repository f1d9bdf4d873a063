// The compiler's Web Worker: hloscope-core built for wasm32 (frontend/worker), one
// JSON request in, one JSON answer out (frontend/src/protocol.rs); a message that carries
// a file (an .npy input in, an .npy output out) is the pair [JSON, Uint8Array]. A trap in
// the compiler leaves its instance unusable: the worker reports it and closes, and the
// page starts a fresh one.
import init, { handle, attachment } from "./pkg/hloscope_worker.js";

const ready = init();
onmessage = async (e) => {
  await ready;
  const [json, file] = typeof e.data === "string" ? [e.data, undefined] : e.data;
  try {
    const answer = handle(json, file);
    const out = attachment();
    // The output's buffer is transferred, not copied.
    if (out) postMessage([answer, out], [out.buffer]); else postMessage(answer);
  } catch (err) {
    let id = 0;
    try { id = JSON.parse(json).id | 0; } catch { /* not even JSON */ }
    postMessage(JSON.stringify({ id, crash: String(err && err.message || err) }));
    close();
  }
};
