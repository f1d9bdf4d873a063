// CodeMirror 6 for the page, bundled by esbuild into static/pkg/cm.js (one copy of
// every @codemirror package) and imported by the Leptos crate through wasm-bindgen
// (frontend/src/cm.rs). Also the page's small DOM helpers that are easier in JS.
import { EditorView, basicSetup } from "codemirror";
import { EditorState, Annotation } from "@codemirror/state";
import { StreamLanguage, syntaxHighlighting } from "@codemirror/language";
import { setDiagnostics as cmSetDiagnostics, lintGutter } from "@codemirror/lint";
import { classHighlighter } from "@lezer/highlight";

// MLIR (StableHLO, CHLO, func) and XLA HLO text: the token classes of LLVM's
// mlir/utils/pygments/mlir_lexer.py, plus HLO's `f32[4,16]{1,0}` types and keywords.
const HLO_KEYWORDS = new Set(["HloModule", "ENTRY", "ROOT", "func.func", "module", "return", "func.return",
  "public", "private", "attributes", "dense", "true", "false", "x"]);
const hloLanguage = StreamLanguage.define({
  name: "stablehlo",
  token(stream) {
    if (stream.eatSpace()) return null;
    if (stream.match("//")) { stream.skipToEnd(); return "comment"; }
    if (stream.match(/^"(?:[^"\\]|\\.)*"?/)) return "string";
    if (stream.match(/^%[\w.$#:-]+/)) return "variableName";
    if (stream.match(/^\^[\w.$-]+/)) return "labelName";
    if (stream.match(/^@[\w.$"-]+/)) return "function(variableName)";
    if (stream.match(/^#[\w.$-]+/)) return "meta";
    if (stream.match(/^(?:tensor|vector|memref|tuple|complex)(?=<)/)) return "typeName";
    if (stream.match(/^(?:pred|[suf]\d+|bf16|f8\w*|c64|c128|token|index|i\d+)(?=[\[\]>x,)\s{]|$)/)) return "typeName";
    if (stream.match(/^-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)/)) return "number";
    if (stream.match(/^[A-Za-z_][\w$]*(?:\.[A-Za-z_][\w$]*)+/)) {
      const w = stream.current();
      return HLO_KEYWORDS.has(w) ? "keyword" : "operatorKeyword";
    }
    if (stream.match(/^[A-Za-z_][\w$-]*/)) {
      const w = stream.current();
      if (HLO_KEYWORDS.has(w)) return "keyword";
      if (stream.peek() === "(") return "operatorKeyword";
      if (stream.peek() === "=") return "propertyName";
      return null;
    }
    if (stream.match(/^->|^[=:,(){}\[\]<>]/)) return "punctuation";
    stream.next();
    return null;
  },
  languageData: { commentTokens: { line: "//" } },
});

const external = Annotation.define();

/** An editor in `parent` holding `doc`; `onChange(text)` after each edit by a person,
 * `onCursor(line)` when the cursor moves to another line (1-based). */
export function createEditor(parent, doc, onChange, onCursor) {
  let lastLine = 0;
  return new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        basicSetup,
        hloLanguage,
        syntaxHighlighting(classHighlighter),
        lintGutter(),
        EditorView.updateListener.of((u) => {
          if (u.docChanged && !u.transactions.some((t) => t.annotation(external))) {
            onChange(u.state.doc.toString());
          }
          if (u.selectionSet || u.docChanged) {
            const line = u.state.doc.lineAt(u.state.selection.main.head).number;
            if (line !== lastLine) { lastLine = line; onCursor(line); }
          }
        }),
      ],
    }),
  });
}

/** Replaces the text (not reported as an edit). */
export function setDoc(view, text) {
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text }, annotations: external.of(true) });
}

export function getDoc(view) {
  return view.state.doc.toString();
}

/** One error diagnostic at 1-based `line`:`col` (line 0: none, clears). */
export function showError(view, line, col, message) {
  const doc = view.state.doc;
  if (line < 1) { view.dispatch(cmSetDiagnostics(view.state, [])); return; }
  const l = doc.line(Math.min(line, doc.lines));
  const from = Math.min(l.from + Math.max(col - 1, 0), l.to);
  const to = Math.min(Math.max(from + 1, l.to), doc.length);
  view.dispatch(cmSetDiagnostics(view.state, [{ from, to, severity: "error", message }]));
}

export function clearErrors(view) {
  view.dispatch(cmSetDiagnostics(view.state, []));
}

/** Puts the cursor on 1-based `line` and scrolls it into view. */
export function gotoLine(view, line) {
  const doc = view.state.doc;
  if (line < 1 || line > doc.lines) return;
  const l = doc.line(line);
  view.dispatch({ selection: { anchor: l.from, head: l.to }, effects: EditorView.scrollIntoView(l.from, { y: "center" }) });
  view.focus();
}

/** The 1-based line of the cursor. */
export function cursorLine(view) {
  return view.state.doc.lineAt(view.state.selection.main.head).number;
}

/** Marks the start of an edit for the `hloscope:edit-to-graph` measure. */
export function markEdit() {
  performance.clearMarks("hloscope:edit");
  performance.mark("hloscope:edit");
}

/** After the next paint, records `hloscope:edit-to-graph` from the last edit mark. */
export function measureAfterPaint() {
  requestAnimationFrame(() => setTimeout(() => {
    if (performance.getEntriesByName("hloscope:edit", "mark").length) {
      performance.measure("hloscope:edit-to-graph", "hloscope:edit");
    }
  }, 0));
}

/** Calls `onText(text, name)` with the contents of `file` (a File from an input or a drop). */
export function readFile(file, onText) {
  file.text().then((text) => onText(text, file.name), (e) => onText(null, String(e)));
}

/** Calls `onBytes(bytes, name)` with the contents of `file` as a Uint8Array (null when
 * unreadable; `name` is then why). */
export function readBytes(file, onBytes) {
  file.arrayBuffer().then((b) => onBytes(new Uint8Array(b), file.name), (e) => onBytes(null, String(e)));
}

/** Downloads `svg` (the graph's element) as a standalone SVG file named `name`: the
 * page's graph styles go along with the colours of the current theme resolved, and the
 * pan and zoom are left behind. */
export function exportSvg(svg, name) {
  const clone = svg.cloneNode(true);
  clone.removeAttribute("style");
  clone.setAttribute("xmlns", "http://www.w3.org/2000/svg");
  const root = getComputedStyle(document.documentElement);
  const resolve = (text) => text.replace(/var\((--[\w-]+)\)/g, (_, v) => root.getPropertyValue(v).trim());
  const rules = [];
  for (const sheet of document.styleSheets) {
    let list;
    try { list = sheet.cssRules; } catch { continue; }
    for (const rule of list) {
      if (rule.selectorText && rule.selectorText.includes(".graph ")) {
        rules.push(resolve(rule.cssText.replaceAll(".graph ", "svg ")));
      }
    }
  }
  const style = document.createElementNS("http://www.w3.org/2000/svg", "style");
  style.textContent = `svg { background: ${root.getPropertyValue("--bg").trim()}; font-family: sans-serif; }\n` + rules.join("\n");
  clone.insertBefore(style, clone.firstChild);
  download(new XMLSerializer().serializeToString(clone), name, "image/svg+xml");
}

/** The server's error text from a failed answer: its JSON `error`, else the status. */
async function failure(r) {
  const text = await r.text();
  try { return JSON.parse(text).error || `${r.status} ${r.statusText}`; } catch { return `${r.status} ${r.statusText}`; }
}

/** POSTs `body` (JSON text) to the server's `/api/share`; `onDone(ok, text)` gets the
 * answer's JSON, or why it failed (a page served without the hloscope server cannot share). */
export function postShare(body, onDone) {
  fetch("./api/share", { method: "POST", headers: { "content-type": "application/json" }, body }).then(
    async (r) => (r.ok ? onDone(true, await r.text()) : onDone(false, `sharing needs the hloscope server: ${await failure(r)}`)),
    (e) => onDone(false, `sharing needs the hloscope server, and none answered (${e})`));
}

/** POSTs `body` (JSON text) to the server's `path` (`api/run`); `onDone(ok, text)` gets the
 * answer's JSON, or the server's error. */
export function postJson(path, body, onDone) {
  fetch(`./${path}`, { method: "POST", headers: { "content-type": "application/json" }, body }).then(
    async (r) => (r.ok ? onDone(true, await r.text()) : onDone(false, await failure(r))),
    (e) => onDone(false, `no hloscope server answered (${e})`));
}

/** GETs the server's `path` (`api/targets`); `onDone(ok, text)` as for postJson. */
export function getJson(path, onDone) {
  fetch(`./${path}`).then(
    async (r) => (r.ok ? onDone(true, await r.text()) : onDone(false, await failure(r))),
    (e) => onDone(false, `no hloscope server answered (${e})`));
}

/** Downloads `text` (a string, or bytes: a Uint8Array) as a file `name` of type `mime`. */
export function download(text, name, mime) {
  const url = URL.createObjectURL(new Blob([text], { type: mime }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** GETs the shared state `id`; `onDone(ok, text)` as for postShare. */
export function getShare(id, onDone) {
  fetch(`./api/share/${encodeURIComponent(id)}`).then(
    async (r) => (r.ok ? onDone(true, await r.text()) : onDone(false, await failure(r))),
    (e) => onDone(false, `no hloscope server answered (${e})`));
}

/** Copies `text` to the clipboard where the page may (nothing happens where it may not). */
export function copyText(text) {
  if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => {});
}
