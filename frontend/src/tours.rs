//! Guided tours: a few steps through a built-in example's passes, each selecting a pass
//! and a node or a fusion decision, with a sentence or two. Tours are data, one JSON file
//! per example in `frontend/tours/`; their numbers are not written in them but filled in
//! from the compile on screen (`{kernels@input}`, `{bytes@fusion}`, `{time@schedule}`,
//! `{insts@cse}`, `{profile}`), so a tour stays true when the compiler changes. The
//! worker's tests check that every step's pass, node and decision exist.

use crate::protocol::PassSummary;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Tour {
    pub example: String,
    pub title: String,
    pub steps: Vec<Step>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Step {
    /// The pass to show.
    pub pass: String,
    /// A node to select, by its id in that pass's graph.
    #[serde(default)]
    pub node: Option<String>,
    /// A fusion decision of that pass to select: (producer, consumer).
    #[serde(default)]
    pub decision: Option<(String, String)>,
    pub text: String,
}

const FILES: &[&str] = &[
    include_str!("../tours/mlp.json"),
    include_str!("../tours/matmul_chain.json"),
    include_str!("../tours/bf16_mlp.json"),
    include_str!("../tours/mlp_gelu_erf.json"),
    include_str!("../tours/mlp_gelu_tanh.json"),
    include_str!("../tours/layernorm.json"),
    include_str!("../tours/rmsnorm.json"),
    include_str!("../tours/softmax.json"),
    include_str!("../tours/causal_attention.json"),
    include_str!("../tours/transformer_block.json"),
    include_str!("../tours/conv_relu_maxpool.json"),
    include_str!("../tours/train_step.json"),
    include_str!("../tours/adam_update.json"),
    include_str!("../tours/cross_entropy.json"),
    include_str!("../tours/fori_loop.json"),
];

/// Every tour (a file that does not parse is a bug the tests catch: it is left out here).
pub fn all() -> Vec<Tour> {
    FILES.iter().filter_map(|f| serde_json::from_str(f).ok()).collect()
}

/// The tour of example `id`, if it has one.
pub fn for_example(id: &str) -> Option<Tour> {
    all().into_iter().find(|t| t.example == id)
}

/// `text` with each `{what@pass}` filled in from `passes` (and `{profile}` from
/// `profile`); an unknown placeholder is an error naming it.
pub fn fill(text: &str, passes: &[PassSummary], profile: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').ok_or_else(|| format!("`{{` without `}}` in \"{text}\""))? + open;
        let key = &rest[open + 1..close];
        out.push_str(&value(key, passes, profile)?);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn value(key: &str, passes: &[PassSummary], profile: &str) -> Result<String, String> {
    if key == "profile" {
        return Ok(profile.to_string());
    }
    let (what, pass) = key.split_once('@').ok_or_else(|| format!("`{{{key}}}`: write what@pass"))?;
    let p = passes.iter().find(|p| p.name == pass).ok_or_else(|| format!("`{{{key}}}`: no pass `{pass}`"))?;
    Ok(match what {
        "kernels" => p.kernels.to_string(),
        "insts" => p.insts.to_string(),
        "bytes" => match p.bytes_moved {
            b if b < 1024 => format!("{b} B"),
            b => format!("{:.2} KiB", b as f64 / 1024.0),
        },
        "time" => format!("{:.1} µs", p.est_time_s * 1e6),
        _ => return Err(format!("`{{{key}}}`: `{what}` is not kernels, insts, bytes or time")),
    })
}
