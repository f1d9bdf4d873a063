// Starts the page (the hloscope-web crate, built by `cargo xtask web` into ./pkg/).
// A file, not an inline script: the server's CSP allows scripts from 'self' only.
import init from "./pkg/hloscope_web.js";

init();
