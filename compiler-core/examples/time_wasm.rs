use std::time::{Duration, Instant};
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap();
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let text = std::fs::read_to_string(&path).unwrap();
    let m = hloscope_core::parse::parse_module(&text).unwrap();
    let o = hloscope_core::targets::optimize_owned(m, &Default::default()).unwrap();
    let p = hloscope_core::targets::wasm::compile_threaded(&o, 2).unwrap();
    let engine = hloscope_core::targets::wasm::runtime::engine();
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        let _m = wasmtime::Module::new(engine, &p.bytes).unwrap();
        best = best.min(t.elapsed());
    }
    println!("{:.3}", best.as_secs_f64() * 1e3);
}
