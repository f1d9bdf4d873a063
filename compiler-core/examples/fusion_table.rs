//! Our fusion against XLA's on the JAX corpus, computed in-process (the numbers of
//! `cargo xtask fusion-vs-xla` without building the CLI): per program, kernels and bytes
//! moved after our default pipeline on `module.mlir` and for XLA's `xla.hlo` as is, both
//! under the h100 profile, as markdown table rows.
//! `cargo run -p hloscope-core --example fusion_table [-- PROGRAM [--hlo]]`: one program,
//! with `--hlo` also printing our fused module.

use hloscope_core::cost::{module_cost, profiles};
use hloscope_core::passes::pipeline::{run_pipeline, PipelineConfig};

fn cost(path: &std::path::Path, passes: bool, print: bool) -> (usize, u64) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut m = hloscope_core::parse::parse_module(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut config = PipelineConfig { snapshots: false, verify: true, ..Default::default() };
    if !passes {
        config.passes.clear();
    }
    run_pipeline(&mut m, &config).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if print {
        println!(
            "{}",
            hloscope_core::print::hlo::print_module_with(
                &m,
                &hloscope_core::print::hlo::PrintOptions { metadata: false }
            )
        );
    }
    let c = module_cost(&m, &profiles::by_name("h100").expect("a built-in profile"));
    (c.kernel_count(), c.bytes_moved)
}

fn main() {
    let only = std::env::args().nth(1);
    let print = std::env::args().any(|a| a == "--hlo");
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend/tests/corpus");
    let mut programs: Vec<_> = std::fs::read_dir(&corpus)
        .expect("the JAX corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("module.mlir").exists() && p.join("xla.hlo").exists())
        .collect();
    programs.sort();
    for p in programs {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let (ok, ob) = cost(&p.join("module.mlir"), true, print);
        let (xk, xb) = cost(&p.join("xla.hlo"), false, false);
        let mut flags = Vec::new();
        if ok > xk {
            flags.push("more kernels");
        }
        if ob > xb {
            flags.push("more bytes");
        }
        println!("| {name} | {ok} | {xk} | {ob} | {xb} | {:.2} | {} |", ob as f64 / xb.max(1) as f64, flags.join(", "));
    }
}
