//! The page's state in the URL's hash (`#example=mlp&pass=fusion&against=dce&gdiff=1`,
//! or `#src=...` once the text was edited), so a reload or a copied link shows the same
//! thing: the source, the pass, the pass diffed against, the selected node, the fusion
//! lab's settings, the view settings and the run target. Settings at their defaults are left out.

use leptos::prelude::window;
use wasm_bindgen::JsValue;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct UrlState {
    pub example: Option<String>,
    pub source: Option<String>,
    pub pass: Option<String>,
    pub against: Option<String>,
    pub graph_diff: bool,
    pub hide_unchanged: bool,
    pub side_by_side: bool,
    pub node: Option<String>,
    pub pipeline: Option<String>,
    pub fusion: Option<String>,
    pub profile: Option<String>,
    pub tab: Option<String>,
    /// The run pane's target (`browser-cpu` left out).
    pub target: Option<String>,
}

fn decode(v: &str) -> Option<String> {
    js_sys::decode_uri_component(v).ok().map(String::from)
}

fn encode(v: &str) -> String {
    String::from(js_sys::encode_uri_component(v))
}

/// The share id in the query (`/?share=ID`), when the page was opened from a share link.
pub fn share_id() -> Option<String> {
    let search = window().location().search().ok()?;
    search.trim_start_matches('?').split('&').find_map(|p| p.strip_prefix("share=").and_then(decode))
}

/// The state as a share stores it: a JSON object of the settings (the source apart).
pub fn settings_json(state: &UrlState) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    let mut put = |k: &str, v: Option<&String>| {
        if let Some(v) = v {
            m.insert(k.into(), v.clone().into());
        }
    };
    put("example", state.example.as_ref());
    put("pass", state.pass.as_ref());
    put("against", state.against.as_ref());
    put("node", state.node.as_ref());
    put("pipeline", state.pipeline.as_ref());
    put("fusion", state.fusion.as_ref());
    put("profile", state.profile.as_ref());
    put("tab", state.tab.as_ref());
    put("target", state.target.as_ref());
    for (k, on) in [("gdiff", state.graph_diff), ("changed", state.hide_unchanged), ("sbs", state.side_by_side)] {
        m.insert(k.into(), on.into());
    }
    m
}

/// The settings a share stored (unknown or mistyped keys ignored: a share outlives versions).
pub fn from_settings(v: &serde_json::Value) -> UrlState {
    let text = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let flag = |k: &str| v.get(k).and_then(|x| x.as_bool()).unwrap_or(false);
    UrlState {
        example: text("example"),
        source: None,
        pass: text("pass"),
        against: text("against"),
        graph_diff: flag("gdiff"),
        hide_unchanged: flag("changed"),
        side_by_side: flag("sbs"),
        node: text("node"),
        pipeline: text("pipeline"),
        fusion: text("fusion"),
        profile: text("profile"),
        tab: text("tab"),
        target: text("target"),
    }
}

pub fn read() -> UrlState {
    let hash = window().location().hash().unwrap_or_default();
    let mut state = UrlState::default();
    for part in hash.trim_start_matches('#').split('&') {
        let Some((key, value)) = part.split_once('=') else { continue };
        let flag = value == "1";
        let value = decode(value);
        match key {
            "example" => state.example = value,
            "src" => state.source = value,
            "pass" => state.pass = value,
            "against" => state.against = value,
            "node" => state.node = value,
            "pipeline" => state.pipeline = value,
            "fusion" => state.fusion = value,
            "profile" => state.profile = value,
            "tab" => state.tab = value,
            "target" => state.target = value,
            "gdiff" => state.graph_diff = flag,
            "changed" => state.hide_unchanged = flag,
            "sbs" => state.side_by_side = flag,
            _ => {}
        }
    }
    state
}

/// Replaces the URL's hash (no new history entry); the query keeps `share=ID` while the
/// page shows that share's text unedited, and drops it after.
pub fn write(state: &UrlState, share: Option<&str>) {
    let mut parts = Vec::new();
    match (&state.source, &state.example) {
        (Some(s), _) => parts.push(format!("src={}", encode(s))),
        (None, Some(e)) => parts.push(format!("example={}", encode(e))),
        (None, None) => {}
    }
    let fields = [
        ("pass", &state.pass),
        ("against", &state.against),
        ("node", &state.node),
        ("pipeline", &state.pipeline),
        ("fusion", &state.fusion),
        ("profile", &state.profile),
        ("tab", &state.tab),
        ("target", &state.target),
    ];
    for (key, value) in fields {
        if let Some(v) = value {
            parts.push(format!("{key}={}", encode(v)));
        }
    }
    for (key, on) in [("gdiff", state.graph_diff), ("changed", state.hide_unchanged), ("sbs", state.side_by_side)] {
        if on {
            parts.push(format!("{key}=1"));
        }
    }
    let path = window().location().pathname().unwrap_or_else(|_| "/".into());
    let query = share.map(|id| format!("?share={}", encode(id))).unwrap_or_default();
    let url = format!("{path}{query}#{}", parts.join("&"));
    if let Ok(history) = window().history() {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
    }
}
