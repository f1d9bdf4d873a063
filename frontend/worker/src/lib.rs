//! The compiler in a Web Worker: parse, verify, run the default pipeline with a snapshot
//! after every pass, then lay out each snapshot's graph ([`layout`]) and diff its text
//! against the previous one, so the page only draws.
//!
//! `static/worker.js` loads this module and calls [`handle`] with each request's JSON; the
//! answer is JSON too (both shapes in `frontend/src/protocol.rs`).

#[path = "../../src/protocol.rs"]
pub mod protocol;

pub mod layout;

// The page's examples, for the test that compiles every one; the page's lookups are unused here.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../src/examples.rs"]
mod examples;

use hloscope_core::api::Snapshot;
use hloscope_core::passes::pipeline::{run_pipeline, PipelineConfig, PipelineError};
use protocol::{DecisionView, DiffKind, DiffLine, Outcome, PassView, Request, Response};
use wasm_bindgen::prelude::*;

/// Answers one request (JSON of [`Request`]) with JSON of [`Response`].
#[wasm_bindgen]
pub fn handle(request: &str) -> String {
    let response = match serde_json::from_str::<Request>(request) {
        Ok(req) => compile(&req, now_ms),
        Err(e) => Response {
            id: 0,
            compile_ms: 0.0,
            layout_ms: 0.0,
            result: Outcome::Error { line: 0, col: 0, message: format!("bad request: {e}") },
        },
    };
    serde_json::to_string(&response).unwrap_or_default()
}

#[cfg(target_arch = "wasm32")]
fn now_ms() -> f64 {
    #[wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_namespace = Date, js_name = now)]
        fn date_now() -> f64;
    }
    date_now()
}

#[cfg(not(target_arch = "wasm32"))]
fn now_ms() -> f64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64() * 1e3).unwrap_or(0.0)
}

/// Compiles one request; `clock` gives milliseconds.
pub fn compile(req: &Request, clock: fn() -> f64) -> Response {
    let t0 = clock();
    let snapshots = snapshots(&req.source);
    let t1 = clock();
    let result = match snapshots {
        Ok(snaps) => Outcome::Ok { passes: views(&snaps) },
        Err(e) => e,
    };
    let t2 = clock();
    Response { id: req.id, compile_ms: t1 - t0, layout_ms: t2 - t1, result }
}

fn error(line: u32, col: u32, message: String) -> Outcome {
    Outcome::Error { line, col, message }
}

/// Parse, verify and run the default pipeline; an error carries its position.
fn snapshots(source: &str) -> Result<Vec<Snapshot>, Outcome> {
    let mut module = hloscope_core::parse::parse_module(source).map_err(|e| error(e.line, e.col, e.message))?;
    hloscope_core::verify::verify(&module)
        .map_err(|e| error(e.loc.line, e.loc.col, format!("invalid module: {}", e.message)))?;
    let config = PipelineConfig { snapshots: true, ..PipelineConfig::default() };
    run_pipeline(&mut module, &config).map_err(|e| match e {
        PipelineError::Limit(l) => error(l.loc.line, l.loc.col, l.message),
        other => error(0, 0, other.to_string()),
    })
}

fn views(snaps: &[Snapshot]) -> Vec<PassView> {
    let mut out: Vec<PassView> = Vec::with_capacity(snaps.len());
    for (i, s) in snaps.iter().enumerate() {
        let diff = if i == 0 { Vec::new() } else { unified_diff(&snaps[i - 1].text, &s.text) };
        // A pass that changed nothing shares its predecessor's graph: keep its layout.
        let graph = match out.last() {
            Some(prev) if !s.changed => prev.graph.clone(),
            _ => layout::layout(&s.graph),
        };
        out.push(PassView {
            name: s.pass.clone(),
            changed: s.changed,
            insts: s.graph.nodes.len(),
            kernels: s.cost.kernels,
            bytes_moved: s.cost.bytes_moved,
            est_time_s: s.cost.est_time_s,
            diff,
            decisions: s
                .decisions
                .iter()
                .map(|d| DecisionView {
                    producer: d.producer.clone(),
                    consumer: d.consumer.clone(),
                    taken: d.taken,
                    rule: d.rule.to_string(),
                    reason: d.reason.clone(),
                    bytes_saved: d.bytes_saved,
                })
                .collect(),
            graph,
        });
    }
    out
}

/// A unified diff (3 lines of context) of `old` → `new`, one entry per line.
pub fn unified_diff(old: &str, new: &str) -> Vec<DiffLine> {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = Vec::new();
    for group in diff.grouped_ops(3) {
        let (first, last) = (&group[0], &group[group.len() - 1]);
        let (o, n) = (first.old_range().start, first.new_range().start);
        let (oe, ne) = (last.old_range().end, last.new_range().end);
        out.push(DiffLine { kind: DiffKind::Hunk, text: format!("@@ -{},{} +{},{} @@", o + 1, oe - o, n + 1, ne - n) });
        for op in &group {
            for change in diff.iter_changes(op) {
                let kind = match change.tag() {
                    similar::ChangeTag::Equal => DiffKind::Same,
                    similar::ChangeTag::Delete => DiffKind::Removed,
                    similar::ChangeTag::Insert => DiffKind::Added,
                };
                out.push(DiffLine { kind, text: change.value().trim_end_matches('\n').to_string() });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MLP: &str = include_str!("../../../examples/mlp.mlir");

    fn clock() -> f64 {
        0.0
    }

    #[test]
    fn the_mlp_compiles_into_passes_with_clusters() {
        let r = compile(&Request { id: 7, source: MLP.into() }, clock);
        assert_eq!(r.id, 7);
        let Outcome::Ok { passes } = r.result else { panic!("{:?}", r.result) };
        assert_eq!(passes[0].name, "input");
        let fusion = passes.iter().find(|p| p.name == "fusion").unwrap();
        assert!(fusion.changed && !fusion.graph.clusters.is_empty() && !fusion.decisions.is_empty());
        assert!(fusion.diff.iter().any(|l| l.kind == DiffKind::Added));
        assert!(fusion.diff.iter().any(|l| l.kind == DiffKind::Removed));
        for n in &fusion.graph.nodes {
            assert!(n.x >= 0.0 && n.x + n.w <= fusion.graph.width && n.y + n.h <= fusion.graph.height, "{n:?}");
        }
    }

    #[test]
    fn every_example_compiles() {
        for ex in crate::examples::EXAMPLES {
            let r = compile(&Request { id: 0, source: ex.source.into() }, clock);
            let Outcome::Ok { passes } = r.result else { panic!("{}: {:?}", ex.id, r.result) };
            assert!(passes.len() > 1, "{}", ex.id);
        }
    }

    #[test]
    fn a_syntax_error_has_its_position() {
        let bad = MLP.replacen("stablehlo.dot_general", "stablehlo.dot_generall", 1);
        let r = compile(&Request { id: 1, source: bad }, clock);
        let Outcome::Error { line, col, .. } = r.result else { panic!() };
        assert!(line > 0 && col > 0);
    }
}
