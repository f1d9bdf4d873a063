//! Times the parts of one pipeline snapshot on a generated module (a profiling aid).
//! `cargo run --release -p hloscope-core --example time_snapshot -- 10000`
#[path = "../benches/common/mod.rs"]
mod common;
use hloscope_core::passes::pipeline::{graph_of, CostSummary};
fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let m = hloscope_core::parse::mlir::parse(&common::synthetic_module(n)).unwrap();
    let profile = hloscope_core::cost::profiles::by_name("h100").unwrap();
    let t = std::time::Instant::now();
    let text = hloscope_core::print::hlo::print_module(&m);
    println!("print: {:?} ({} bytes)", t.elapsed(), text.len());
    let t = std::time::Instant::now();
    let g = graph_of(&m);
    println!("graph: {:?} ({} nodes)", t.elapsed(), g.nodes.len());
    let t = std::time::Instant::now();
    let _ = hloscope_core::cost::module_cost(&m, &profile);
    println!("module cost: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let _ = hloscope_core::passes::buffers::assign_buffers(&m);
    println!("buffers: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let _ = CostSummary::of(&m, &profile);
    println!("cost summary: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    hloscope_core::verify::verify(&m).unwrap();
    println!("verify: {:?}", t.elapsed());
}
