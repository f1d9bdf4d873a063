//! Times each phase of a CPU compile of one module file (a profiling aid): parse, verify,
//! the target's pass pipeline and code generation, each the fastest of `N` runs.
//! `cargo run --release -p hloscope-core --features cpu --example time_compile -- FILE [N]`
use std::time::{Duration, Instant};

/// The fastest of `runs` calls of `f`, and its last value.
fn fastest<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..runs {
        let t = Instant::now();
        out = Some(f());
        best = best.min(t.elapsed());
    }
    (best, out.expect("runs at least once"))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: time_compile FILE [RUNS]");
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let text = std::fs::read_to_string(&path).expect("a readable module file");
    let (parse, module) = fastest(runs, || hloscope_core::parse::parse_module(&text).expect("the module parses"));
    let (verify, ()) = fastest(runs, || hloscope_core::verify::verify(&module).expect("a valid module"));
    let fusion = Default::default();
    let (passes, optimized) =
        fastest(runs, || hloscope_core::targets::optimize_with(&module, &fusion).expect("the pipeline runs"));
    let (codegen, exe) =
        fastest(runs, || hloscope_core::targets::cpu::compile(&optimized).expect("the module compiles"));
    let total = parse + verify + passes + codegen;
    println!(
        "parse {parse:.2?}, verify {verify:.2?}, passes {passes:.2?}, codegen {codegen:.2?}: {total:.2?} ({} kernels)",
        exe.plan().kernels.len()
    );
}
