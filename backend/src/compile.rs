//! `hloscope compile`: read a module, run the pass pipeline, print the result; with
//! `--dump-dir` write every stage like XLA's `--xla_dump_to` (see `dump.rs`).
//!
//! The options that choose the pipeline (`--pipeline`, `--fusion`, `--no-passes`,
//! `--profile`) are shared with `hloscope explain` through [`PipelineArgs`].

use crate::dump;
use crate::run::{read_module_text, strip_loc, RunError};
use clap::{Args, ValueEnum};
use hloscope_core::api::{self, Snapshot};
use hloscope_core::ir::Module;
use hloscope_core::passes::fusion::FusionConfig;
use hloscope_core::passes::pipeline::{parse_pipeline_spec, run_pipeline, PipelineConfig};
use std::path::PathBuf;

/// How to build the pipeline; shared by `compile` and `explain`.
#[derive(Args, Debug)]
pub struct PipelineArgs {
    /// The passes, e.g. `default`, `inline,simplify{max_rounds=4},cse,dce,fusion` or
    /// `default,-cse` (passes: inline, simplify, constant-fold, cse, dce, fusion,
    /// layout-assignment, schedule; an unknown name lists them).
    #[arg(long, value_name = "SPEC", default_value = "default")]
    pub pipeline: String,

    /// Fusion knobs, a comma list: off, no-multi-output, no-epilogue, no-duplication,
    /// max-size=N, never=PRODUCER:CONSUMER, force=PRODUCER:CONSUMER.
    #[arg(long, value_name = "KNOBS", default_value = "")]
    pub fusion: String,

    /// Run no pass at all: report the module as it is (e.g. XLA's own optimized HLO).
    #[arg(long, conflicts_with = "pipeline")]
    pub no_passes: bool,

    /// The hardware the cost is estimated for: a100, h100, h200, l4, rtx4090, cpu, or
    /// `measured` (this machine's CPU, probed on the spot: bandwidth, FLOP/s, overhead).
    #[arg(long, value_name = "NAME", default_value = "h100")]
    pub profile: String,
}

impl PipelineArgs {
    /// The pipeline configuration these options describe, or a message saying which
    /// option is wrong.
    pub fn config(&self, snapshots: bool) -> Result<PipelineConfig, RunError> {
        let passes = if self.no_passes {
            Vec::new()
        } else {
            parse_pipeline_spec(&self.pipeline).map_err(|e| RunError(format!("--pipeline `{}`: {e}", self.pipeline)))?
        };
        let fusion = FusionConfig::from_spec(&self.fusion)
            .map_err(|e| RunError(format!("--fusion `{}`: {e}", self.fusion)))?;
        let profile = if self.profile == "measured" {
            crate::probe::measure_cpu().map_err(|e| RunError(format!("--profile measured: the probe failed: {e}")))?
        } else {
            api::profile_by_name(&self.profile).map_err(|e| RunError(format!("--profile: {e} (or `measured`)")))?
        };
        Ok(PipelineConfig { passes, fusion, verify: true, snapshots, profile })
    }
}

/// Reads, parses and verifies a module; errors carry the file name and location.
pub fn load_module(arg: &str) -> Result<(String, Module), RunError> {
    let (source_name, text) = read_module_text(arg)?;
    let module = hloscope_core::parse::parse_module(&text)
        .map_err(|e| RunError(format!("{source_name}:{}:{}: {}", e.line, e.col, e.message)))?;
    hloscope_core::verify::verify(&module)
        .map_err(|e| RunError(format!("{source_name}:{}: invalid module: {}", e.loc, strip_loc(&e.to_string()))))?;
    Ok((source_name, module))
}

/// Loads `arg`, runs the pipeline `args` describe; returns the module after the last
/// pass and one snapshot per stage (the input first).
pub fn load_and_run(arg: &str, args: &PipelineArgs, snapshots: bool) -> Result<(Module, Vec<Snapshot>, PipelineConfig), RunError> {
    let config = args.config(snapshots)?;
    let (source_name, mut module) = load_module(arg)?;
    let snaps = run_pipeline(&mut module, &config).map_err(|e| RunError(format!("{source_name}: {e}")))?;
    Ok((module, snaps, config))
}

/// What `compile` prints.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// XLA HLO text.
    #[default]
    Hlo,
    /// StableHLO (MLIR text); fusions become calls to private functions.
    Stablehlo,
    /// Every stage's snapshot as JSON (graph, changes, rewrites, decisions, cost).
    Json,
}

#[derive(Args, Debug)]
#[command(after_help = "\
Dumps: with --dump-dir DIR each stage is written as DIR/NN-STAGE.hlo (the module), \
NN-STAGE.json (the snapshot: graph, changes, rewrites, decisions, cost) and NN-STAGE.dot \
(Graphviz, one cluster per fusion), numbered in order from 00-input.

Exit status: 0 on success, 2 on any error (bad text, bad pipeline, bad knobs).")]
pub struct CompileArgs {
    /// The module: StableHLO (MLIR text) or XLA HLO text; `-` reads standard input.
    #[arg(value_name = "MODULE")]
    pub module: String,

    #[command(flatten)]
    pub pipeline: PipelineArgs,

    /// Write every stage into this folder (created if needed).
    #[arg(long, value_name = "DIR")]
    pub dump_dir: Option<PathBuf>,

    /// The format of the final module on standard output.
    #[arg(long, value_enum, default_value_t = Emit::Hlo)]
    pub emit: Emit,
}

pub fn compile(args: &CompileArgs) -> Result<String, RunError> {
    let snapshots = args.dump_dir.is_some() || args.emit == Emit::Json;
    let (module, snaps, _) = load_and_run(&args.module, &args.pipeline, snapshots)?;
    if let Some(dir) = &args.dump_dir {
        dump::write_stages(dir, &snaps)?;
    }
    Ok(match args.emit {
        Emit::Hlo => hloscope_core::print::hlo::print_module(&module),
        Emit::Stablehlo => hloscope_core::print::stablehlo::print_module(&module),
        Emit::Json => api::to_json(&snaps) + "\n",
    })
}
