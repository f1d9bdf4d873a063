//! Temporary: dumps fused HLO text and decision logs for many modules and fusion
//! configs, to check that a refactor of the fusion pass changes no decision.
#[path = "../benches/common/mod.rs"]
mod common;
use hloscope_core::passes::fusion::{FusionConfig, FusionPass};
use hloscope_core::passes::pipeline::{parse_pipeline_spec, run_pipeline, PipelineConfig};
use hloscope_core::passes::{Pass, PassLog};
use std::fmt::Write;
use std::path::Path;

fn configs() -> Vec<(&'static str, FusionConfig)> {
    let d = FusionConfig::default();
    vec![
        ("default", d.clone()),
        ("nomulti", FusionConfig { multi_output: false, ..d.clone() }),
        ("nodup", FusionConfig { allow_duplication: false, ..d.clone() }),
        ("noepi", FusionConfig { epilogue: false, ..d.clone() }),
        ("size4", FusionConfig { max_fusion_size: 4, ..d.clone() }),
        ("size12", FusionConfig { max_fusion_size: 12, ..d.clone() }),
    ]
}

fn dump(name: &str, text: &str, out: &mut String) {
    eprintln!("{name}");
    let Ok(m0) = hloscope_core::parse::parse_module(text) else { return };
    let mut pre = m0.clone();
    let cfg = PipelineConfig {
        passes: parse_pipeline_spec("default,-fusion").unwrap(),
        verify: false,
        snapshots: false,
        ..Default::default()
    };
    let pre_ok = run_pipeline(&mut pre, &cfg).is_ok();
    for (stage, base) in [("raw", &m0), ("pre", &pre)] {
        if stage == "pre" && !pre_ok {
            continue;
        }
        for (cn, fc) in configs() {
            // Raw conformance modules with a small size budget can make the pass blow up
            // (a known problem, not ours here): default config only.
            if name.starts_with('/') && (cn != "default" || stage == "raw") {
                continue;
            }
            eprintln!("  {stage} {cn}");
            let mut m = base.clone();
            let mut log = PassLog::default();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| FusionPass::new(fc).run(&mut m, &mut log)));
            let Ok(changed) = r else {
                writeln!(out, "=== {name} {stage} {cn} PANIC").unwrap();
                continue;
            };
            writeln!(out, "=== {name} {stage} {cn} changed={changed}").unwrap();
            out.push_str(&hloscope_core::print::hlo::print_module(&m));
            for d in &log.decisions {
                writeln!(out, "{d:?}").unwrap();
            }
        }
    }
}

fn main() {
    let dir = std::env::args().nth(1).expect("output dir");
    std::panic::set_hook(Box::new(|_| {}));
    std::fs::create_dir_all(&dir).unwrap();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend/tests/corpus");
    let mut cases: Vec<_> = std::fs::read_dir(&corpus).unwrap().map(|e| e.unwrap().path()).collect();
    cases.sort();
    for c in cases {
        let mut out = String::new();
        for f in ["module.mlir", "xla.hlo"] {
            if let Ok(t) = std::fs::read_to_string(c.join(f)) {
                dump(f, &t, &mut out);
            }
        }
        std::fs::write(Path::new(&dir).join(c.file_name().unwrap()), out).unwrap();
    }
    // The conformance corpus, one file per source file.
    let conf = Path::new("/work/shared/conformance/stablehlo");
    let mut files = Vec::new();
    let mut stack = vec![conf.join("interpret"), conf.join("testdata")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "mlir") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut out = String::new();
    for p in files {
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, chunk) in text.split("\n// -----\n").enumerate() {
            dump(&format!("{}#{i}", p.display()), chunk, &mut out);
        }
    }
    std::fs::write(Path::new(&dir).join("conformance"), out).unwrap();
    for n in [300, 1000] {
        let mut out = String::new();
        dump(&format!("synthetic{n}"), &common::synthetic_module(n), &mut out);
        std::fs::write(Path::new(&dir).join(format!("synthetic{n}")), out).unwrap();
    }
}
