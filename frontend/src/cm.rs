//! CodeMirror and the page's JS helpers (`frontend/js/cm-entry.js`, bundled into
//! `static/pkg/cm.js` next to this crate's wasm-bindgen output).

use wasm_bindgen::prelude::*;

#[wasm_bindgen(raw_module = "./cm.js")]
extern "C" {
    /// An `EditorView`.
    pub type Editor;

    #[wasm_bindgen(js_name = createEditor)]
    pub fn create_editor(
        parent: &web_sys::HtmlElement,
        doc: &str,
        on_change: &js_sys::Function,
        on_cursor: &js_sys::Function,
    ) -> Editor;
    #[wasm_bindgen(js_name = setDoc)]
    pub fn set_doc(view: &Editor, text: &str);
    #[wasm_bindgen(js_name = getDoc)]
    pub fn get_doc(view: &Editor) -> String;
    #[wasm_bindgen(js_name = showError)]
    pub fn show_error(view: &Editor, line: u32, col: u32, message: &str);
    #[wasm_bindgen(js_name = clearErrors)]
    pub fn clear_errors(view: &Editor);
    #[wasm_bindgen(js_name = gotoLine)]
    pub fn goto_line(view: &Editor, line: u32);
    #[wasm_bindgen(js_name = markEdit)]
    pub fn mark_edit();
    #[wasm_bindgen(js_name = measureAfterPaint)]
    pub fn measure_after_paint();
    /// Calls `on_text(text, name)` with a file's contents (`text` null when unreadable).
    #[wasm_bindgen(js_name = readFile)]
    pub fn read_file(file: &web_sys::File, on_text: &js_sys::Function);
    /// POSTs JSON to `/api/share`; `on_done(ok, text)`.
    #[wasm_bindgen(js_name = postShare)]
    pub fn post_share(body: &str, on_done: &js_sys::Function);
    /// GETs `/api/share/{id}`; `on_done(ok, text)`.
    #[wasm_bindgen(js_name = getShare)]
    pub fn get_share(id: &str, on_done: &js_sys::Function);
    /// GETs JSON from the server's `path`; `on_done(ok, text)`.
    #[wasm_bindgen(js_name = getJson)]
    pub fn get_json(path: &str, on_done: &js_sys::Function);
    /// POSTs JSON to the server's `path`; `on_done(ok, text)`.
    #[wasm_bindgen(js_name = postJson)]
    pub fn post_json(path: &str, body: &str, on_done: &js_sys::Function);
    /// Downloads `text` as a file.
    #[wasm_bindgen(js_name = download)]
    pub fn download(text: &str, name: &str, mime: &str);
    /// Downloads `bytes` as a file (the same helper: a Blob takes text or bytes).
    #[wasm_bindgen(js_name = download)]
    pub fn download_bytes(bytes: &js_sys::Uint8Array, name: &str, mime: &str);
    /// Calls `on_bytes(bytes, name)` with a file's contents as a `Uint8Array` (`bytes`
    /// null when unreadable).
    #[wasm_bindgen(js_name = readBytes)]
    pub fn read_bytes(file: &web_sys::File, on_bytes: &js_sys::Function);
    #[wasm_bindgen(js_name = copyText)]
    pub fn copy_text(text: &str);
    /// Downloads the graph's `<svg>` as a file.
    #[wasm_bindgen(js_name = exportSvg)]
    pub fn export_svg(svg: &web_sys::Element, name: &str);
}
