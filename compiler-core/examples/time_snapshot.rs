//! Times the parts of one pipeline snapshot on a generated module (a profiling aid): each
//! part runs 5 times and the fastest run is shown, and then 20 more times for the mean
//! CPU time this process spent (on Linux; a shared machine's wall clock is noisy).
//! `cargo run --release -p hloscope-core --example time_snapshot -- 10000`
#[path = "../benches/common/mod.rs"]
mod common;
use hloscope_core::passes::pipeline::{graph_of, CostSummary};
use std::time::{Duration, Instant};

/// CPU time of this process so far (user + system, from `/proc/self/stat`; zero where
/// that file does not exist).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses): utime and stime are the
    // 12th and 13th, in clock ticks of 1/100 s.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// The fastest of 5 runs of `f`, and the mean CPU time of 20 more.
fn best<T>(mut f: impl FnMut() -> T) -> (String, T) {
    let mut out = None;
    let mut fastest = Duration::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let v = f();
        fastest = fastest.min(t.elapsed());
        out = Some(v);
    }
    let c = cpu_time();
    for _ in 0..20 {
        std::hint::black_box(f());
    }
    let cpu = (cpu_time() - c) / 20;
    (format!("{fastest:?} wall, {cpu:?} cpu"), out.expect("ran at least once"))
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let mut m = hloscope_core::parse::mlir::parse(&common::synthetic_module(n)).unwrap();
    if std::env::args().nth(2).is_some_and(|a| a == "fused") {
        let config =
            hloscope_core::passes::pipeline::PipelineConfig { snapshots: false, verify: false, ..Default::default() };
        hloscope_core::passes::pipeline::run_pipeline(&mut m, &config).unwrap();
    }
    let profile = hloscope_core::cost::profiles::by_name("h100").unwrap();
    let (t, text) = best(|| hloscope_core::print::hlo::print_module(&m));
    println!("print: {t} ({} bytes)", text.len());
    let (t, g) = best(|| graph_of(&m));
    println!("graph: {t} ({} nodes)", g.nodes.len());
    let (t, _) = best(|| hloscope_core::cost::module_cost(&m, &profile));
    println!("module cost: {t}");
    let (t, _) = best(|| hloscope_core::passes::buffers::assign_buffers(&m));
    println!("buffers: {t}");
    let (t, _) = best(|| CostSummary::of(&m, &profile));
    println!("cost summary: {t}");
    let (t, _) = best(|| hloscope_core::verify::verify(&m).unwrap());
    println!("verify: {t}");
}
