//! Times the worker's answer to a compile of a module, natively (a profiling aid: the
//! browser runs the same code as wasm, a few times slower).
//! `cargo run --release --manifest-path frontend/Cargo.toml -p hloscope-worker --example time_compile -- FILE [N]`
use hloscope_worker::protocol::{Outcome, Request, ViewSpec};
use hloscope_worker::{answer, Worker};
use std::time::Instant;

fn clock() -> f64 {
    use std::sync::OnceLock;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

fn main() {
    let path = std::env::args().nth(1).expect("a module file");
    let n: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    let source = std::fs::read_to_string(&path).expect("readable");
    let mut runs: Vec<(f64, f64, f64)> = Vec::new();
    for id in 0..n as u32 {
        let mut worker = Worker::default();
        let t0 = clock();
        let req =
            Request::Compile { id, source: source.clone(), view: ViewSpec::default(), config: Default::default() };
        let r = answer(&mut worker, &req, clock);
        let json = serde_json::to_string(&r).unwrap();
        let total = clock() - t0;
        if let Outcome::Error { message, .. } = &r.result {
            panic!("{message}");
        }
        runs.push((r.compile_ms, r.layout_ms, total));
        if id == 0 {
            println!("answer: {} KB of JSON", json.len() / 1024);
        }
    }
    runs.sort_by(|a, b| a.2.total_cmp(&b.2));
    let (c, l, t) = runs[runs.len() / 2];
    println!("median of {n}: compile {c:.2} ms, view {l:.2} ms, with JSON {t:.2} ms");
}
