//! Times what a compilation-cache hit saves: compiling a module for the CPU (pipeline +
//! Cranelift) against loading its artifact, and the parts of a load.
//! `cargo run --release -p hloscope-core --features cpu --example time_cache -- MODULE`

use hloscope_core::targets::cpu;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: time_cache MODULE");
    let text = std::fs::read_to_string(&path).expect("readable module");
    let module = hloscope_core::parse::parse_module(&text).expect("a module");
    let time = |f: &mut dyn FnMut()| {
        median(
            (0..15)
                .map(|_| {
                    let t = Instant::now();
                    f();
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect(),
        )
    };
    // The first load in a fresh process pays one-time costs (CPU feature detection, the
    // first executable mappings): what a second process sees. Time it first, from the
    // artifact a separate compile made.
    let bytes = cpu::compile_to_artifact(&cpu::optimize(&module).unwrap()).unwrap().1;
    let t = Instant::now();
    drop(cpu::load_artifact(&bytes).unwrap());
    let cold = t.elapsed().as_secs_f64() * 1e3;
    println!("first load in this process {cold:.2} ms");
    let mut bytes = Vec::new();
    let compile = time(&mut || bytes = cpu::compile_to_artifact(&cpu::optimize(&module).unwrap()).unwrap().1);
    let load = time(&mut || drop(cpu::load_artifact(&bytes).unwrap()));
    let parse = time(&mut || drop(hloscope_core::parse::parse_module(&text).unwrap()));
    println!(
        "compile {compile:.2} ms, load {load:.2} ms ({:.1}x), parse of the source {parse:.2} ms, artifact {} bytes",
        compile / load,
        bytes.len()
    );
}
