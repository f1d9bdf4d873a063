//! Times wasmtime's compile of one module file's WebAssembly module (a profiling aid):
//! the fastest of `N` compiles in this process, after parse, the pipeline and the
//! emitter (the module is built for 2 threads, as `hloscope bench` builds it on 2 cores).
//! `cargo run --release -p hloscope-core --features cpu,wasm-run --example time_wasm -- FILE [N]`
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: time_wasm FILE [RUNS]");
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let text = std::fs::read_to_string(&path).expect("a readable module file");
    let module = hloscope_core::parse::parse_module(&text).expect("the module parses");
    let optimized = hloscope_core::targets::optimize_owned(module, &Default::default()).expect("the pipeline runs");
    let program = hloscope_core::targets::wasm::compile_threaded(&optimized, 2).expect("the module is emitted");
    let engine = hloscope_core::targets::wasm::runtime::engine();
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        wasmtime::Module::new(engine, &program.bytes).expect("wasmtime compiles the module");
        best = best.min(t.elapsed());
    }
    println!("wasmtime compile {best:.2?} (fastest of {runs}), module {} bytes", program.bytes.len());
}
