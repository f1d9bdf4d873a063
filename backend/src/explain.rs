//! `hloscope explain`: why the module was fused the way it was, and what it costs.
//!
//! Prints every fusion decision (taken or refused, the rule and a sentence of reason,
//! the bytes it saves) and the cost of the resulting kernels under a hardware profile.
//! `--json` prints the same as one object ([`hloscope_core::api::ExplainReport`]).
//! `--no-passes` on XLA's own optimized HLO prices XLA's fusion under our cost model.

use crate::compile::{load_and_run, PipelineArgs};
use crate::run::RunError;
use clap::Args;
use hloscope_core::api::{self, ExplainReport};
use std::fmt::Write;

#[derive(Args, Debug)]
#[command(after_help = "\
JSON (--json): one object with profile, passes, kernels, bytes_moved, flops, est_time_s, \
before (the same totals for the input), decisions (producer, consumer, taken, rule, reason, \
bytes_saved, kernels_saved) and kernel_costs (one row per kernel).

Exit status: 0 on success, 2 on any error (bad text, bad pipeline, bad knobs, bad profile).")]
pub struct ExplainArgs {
    /// The module: StableHLO (MLIR text) or XLA HLO text; `-` reads standard input.
    #[arg(value_name = "MODULE")]
    pub module: String,

    #[command(flatten)]
    pub pipeline: PipelineArgs,

    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
}

pub fn explain(args: &ExplainArgs) -> Result<String, RunError> {
    let (module, snaps, config) = load_and_run(&args.module, &args.pipeline, false)?;
    let report = ExplainReport::new(&module, &snaps, &config.profile);
    Ok(if args.json { api::to_json(&report) + "\n" } else { render(&report) })
}

/// Column widths from the longest cell (capped, so that one long name does not push
/// the reasons off screen).
fn widths(rows: &[Vec<String>], cap: usize) -> Vec<usize> {
    let mut w = vec![0; rows.first().map_or(0, Vec::len)];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count().min(cap));
        }
    }
    w
}

/// A text table; the columns in `right` (numbers) are right-aligned, the others left-
/// aligned, and a last left-aligned column (the reason) is not padded.
fn table(rows: &[Vec<String>], right: &[usize]) -> String {
    let w = widths(rows, 28);
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if right.contains(&i) {
                let _ = write!(line, "{c:>width$}  ", width = w[i]);
            } else if i + 1 == r.len() {
                line += c;
            } else {
                let _ = write!(line, "{c:<width$}  ", width = w[i]);
            }
        }
        out += line.trim_end();
        out.push('\n');
    }
    out
}

/// `1.23 MB`-style sizes: easier to compare at a glance than raw byte counts.
fn bytes_text(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.2} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.2} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

fn time_text(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.2} us", s * 1e6)
    }
}

/// The human-readable report.
pub fn render(r: &ExplainReport) -> String {
    let mut out = String::new();
    let passes = if r.passes.is_empty() { "none".to_string() } else { r.passes.join(", ") };
    let _ = writeln!(out, "passes: {passes}\n");
    if r.decisions.is_empty() {
        out += "fusion decisions: none\n";
    } else {
        let taken = r.decisions.iter().filter(|d| d.taken).count();
        let _ = writeln!(
            out,
            "fusion decisions: {} ({taken} taken, {} refused)",
            r.decisions.len(),
            r.decisions.len() - taken
        );
        let mut rows =
            vec![["producer", "consumer", "decision", "rule", "bytes saved", "reason"].map(String::from).to_vec()];
        for d in &r.decisions {
            rows.push(vec![
                d.producer.clone(),
                d.consumer.clone(),
                if d.taken { "fused" } else { "refused" }.to_string(),
                d.rule.to_string(),
                d.bytes_saved.to_string(),
                d.reason.clone(),
            ]);
        }
        out += &table(&rows, &[4]);
    }
    let _ = writeln!(out, "\ncost on {}:", r.profile);
    let mut rows = vec![
        ["", "kernels", "bytes moved", "FLOPs", "est. time"].map(String::from).to_vec(),
        vec![
            "before".into(),
            r.before.kernels.to_string(),
            bytes_text(r.before.bytes_moved),
            r.before.flops.to_string(),
            time_text(r.before.est_time_s),
        ],
    ];
    rows.push(vec![
        "after".into(),
        r.kernels.to_string(),
        bytes_text(r.bytes_moved),
        r.flops.to_string(),
        time_text(r.est_time_s),
    ]);
    out += &table(&rows, &[1, 2, 3, 4]);
    if !r.kernel_costs.is_empty() {
        out += "\nkernels:\n";
        let mut rows = vec![["kernel", "op", "bytes read", "bytes written", "FLOPs", "FLOP/B", "time", "bound"]
            .map(String::from)
            .to_vec()];
        for k in &r.kernel_costs {
            let op = match k.cost.fusion_kind {
                Some(kind) => format!("fusion({})", kind.hlo_name()),
                None => k.cost.op.to_string(),
            };
            rows.push(vec![
                k.cost.name.clone(),
                op,
                k.cost.bytes_read.to_string(),
                k.cost.bytes_written.to_string(),
                k.cost.flops.to_string(),
                format!("{:.2}", k.intensity),
                time_text(k.cost.time_s),
                if k.memory_bound { "memory" } else { "compute" }.to_string(),
            ]);
        }
        out += &table(&rows, &[2, 3, 4, 5, 6]);
    }
    out
}
