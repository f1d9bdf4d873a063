// The compiler's Web Worker: hloscope-core built for wasm32 (frontend/worker), one
// JSON request in, one JSON answer out (frontend/src/protocol.rs); a message that carries
// a file (an .npy input in, an .npy output out) is the pair [JSON, Uint8Array]. Messages
// are answered one at a time, in order: a browser-webgpu run awaits the device, and the
// next message waits for it (the compiler's state is not shared by two at once). A trap
// in the compiler leaves its instance unusable: the worker reports it and closes, and
// the page starts a fresh one.
import init, { handle_async, attachment } from "./pkg/hloscope_worker.js";

let queue = init();
onmessage = (e) => {
  queue = queue.then(() => answer(e.data));
};

async function answer(data) {
  const [json, file] = typeof data === "string" ? [data, undefined] : data;
  try {
    const answer = await handle_async(json, file);
    const out = attachment();
    // The output's buffer is transferred, not copied.
    if (out) postMessage([answer, out], [out.buffer]); else postMessage(answer);
  } catch (err) {
    let id = 0;
    try { id = JSON.parse(json).id | 0; } catch { /* not even JSON */ }
    postMessage(JSON.stringify({ id, crash: String(err && err.message || err) }));
    close();
  }
}
