// The compiler's Web Worker: hloscope-core built for wasm32 (frontend/worker), one
// JSON request in, one JSON answer out (frontend/src/protocol.rs).
import init, { handle } from "./pkg/hloscope_worker.js";

const ready = init();
onmessage = async (e) => {
  await ready;
  postMessage(handle(e.data));
};
