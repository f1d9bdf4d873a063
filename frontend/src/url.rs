//! The page's state in the URL's hash (`#example=mlp&pass=fusion`, or `#src=...` once
//! the text was edited), so a reload or a copied link shows the same thing.

use leptos::prelude::window;
use wasm_bindgen::JsValue;

#[derive(Clone, Debug, Default)]
pub struct UrlState {
    pub example: Option<String>,
    pub source: Option<String>,
    pub pass: Option<String>,
}

fn decode(v: &str) -> Option<String> {
    js_sys::decode_uri_component(v).ok().map(String::from)
}

fn encode(v: &str) -> String {
    String::from(js_sys::encode_uri_component(v))
}

pub fn read() -> UrlState {
    let hash = window().location().hash().unwrap_or_default();
    let mut state = UrlState::default();
    for part in hash.trim_start_matches('#').split('&') {
        let Some((key, value)) = part.split_once('=') else { continue };
        let value = decode(value);
        match key {
            "example" => state.example = value,
            "src" => state.source = value,
            "pass" => state.pass = value,
            _ => {}
        }
    }
    state
}

/// Replaces the URL's hash (no new history entry).
pub fn write(example: &str, source: Option<&str>, pass: Option<&str>) {
    let mut parts = Vec::new();
    match source {
        Some(s) => parts.push(format!("src={}", encode(s))),
        None => parts.push(format!("example={}", encode(example))),
    }
    if let Some(p) = pass {
        parts.push(format!("pass={}", encode(p)));
    }
    let url = format!("#{}", parts.join("&"));
    if let Ok(history) = window().history() {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
    }
}
