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
    // One copy per run made beforehand: a compile owns its module (as `hloscope bench`'s does).
    let mut copies: Vec<_> = (0..runs).map(|_| module.clone()).collect();
    let (passes, optimized) = fastest(runs, || {
        let copy = copies.pop().expect("a copy per run");
        hloscope_core::targets::optimize_owned(copy, &fusion).expect("the pipeline runs")
    });
    let (codegen, exe) =
        fastest(runs, || hloscope_core::targets::cpu::compile(&optimized).expect("the module compiles"));
    if std::env::var_os("TIME_PASSES").is_some() {
        print_pass_times(&module, runs);
    }
    let total = parse + verify + passes + codegen;
    println!(
        "parse {parse:.2?}, verify {verify:.2?}, passes {passes:.2?}, codegen {codegen:.2?}: {total:.2?} ({} kernels)",
        exe.plan().kernels.len()
    );
}

/// Each pass of the targets' pipeline with its fastest time of `runs` (set `TIME_PASSES`).
fn print_pass_times(module: &hloscope_core::ir::Module, runs: usize) {
    use hloscope_core::passes::pipeline::{parse_pipeline_spec, run_pipeline, PipelineConfig};
    fn now_ms() -> f64 {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
    }
    let passes = parse_pipeline_spec(hloscope_core::targets::PIPELINE).expect("the targets' pipeline parses");
    let config = PipelineConfig { passes, clock: Some(now_ms), ..Default::default() };
    let mut best: Vec<(String, f64)> = Vec::new();
    for _ in 0..runs {
        let snapshots = run_pipeline(&mut module.clone(), &config).expect("the pipeline runs");
        let times = snapshots.iter().skip(1).map(|s| (s.pass.clone(), s.time_ms));
        if best.is_empty() {
            best = times.collect();
        } else {
            best.iter_mut().zip(times).for_each(|(b, (_, t))| b.1 = b.1.min(t));
        }
    }
    for (pass, ms) in best {
        println!("  {pass:<24} {ms:.2} ms");
    }
}
