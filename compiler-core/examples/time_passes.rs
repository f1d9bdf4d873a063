//! Times each pass of the default pipeline on a generated module (a profiling aid).
//! `cargo run --release -p hloscope-core --example time_passes -- 2000`
#[path = "../benches/common/mod.rs"]
mod common;
use hloscope_core::passes::pipeline::{run_pipeline_observed, PipelineConfig};
fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let mut m = hloscope_core::parse::mlir::parse(&common::synthetic_module(n)).unwrap();
    let mut last = std::time::Instant::now();
    let config = PipelineConfig {
        snapshots: std::env::args().nth(2).is_some(),
        verify: std::env::var("NO_VERIFY").is_err(),
        ..Default::default()
    };
    run_pipeline_observed(&mut m, &config, &mut |pass, _| {
        println!("{pass}: {:?}", last.elapsed());
        last = std::time::Instant::now();
    })
    .unwrap();
}
