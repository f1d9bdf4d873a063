//! Times each pass of the default pipeline on a generated module (a profiling aid).
//! `cargo run --release -p hloscope-core --example time_passes -- 2000 [snap]` (`snap`: with
//! snapshots; env `NO_VERIFY`: without the verifier). Each line is one pass plus the
//! snapshot taken after it, as wall time and as this process's CPU time (Linux; 10 ms
//! ticks), since a shared machine's wall clock is noisy.
#[path = "../benches/common/mod.rs"]
mod common;
use hloscope_core::passes::pipeline::{run_pipeline_observed, PipelineConfig};
use std::time::{Duration, Instant};

/// CPU time of this process so far (user + system, from `/proc/self/stat`).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    Duration::from_millis((f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) * 10)
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let mut m = hloscope_core::parse::mlir::parse(&common::synthetic_module(n)).unwrap();
    let config = PipelineConfig {
        snapshots: std::env::args().nth(2).is_some(),
        verify: std::env::var("NO_VERIFY").is_err(),
        ..Default::default()
    };
    let (start, start_cpu) = (Instant::now(), cpu_time());
    let (mut last, mut last_cpu) = (start, start_cpu);
    let snaps = run_pipeline_observed(&mut m, &config, &mut |pass, _| {
        let cpu = cpu_time();
        println!("{pass}: {:?} wall, {:?} cpu", last.elapsed(), cpu - last_cpu);
        (last, last_cpu) = (Instant::now(), cpu);
    })
    .unwrap();
    println!("total: {:?} wall, {:?} cpu", start.elapsed(), cpu_time() - start_cpu);
    let changed: Vec<&str> = snaps.iter().skip(1).filter(|s| s.changed).map(|s| s.pass.as_str()).collect();
    println!("changed the module: {}", changed.join(", "));
}
