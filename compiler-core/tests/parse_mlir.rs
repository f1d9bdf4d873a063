//! Tests of the StableHLO (MLIR text) parser: each syntax form, error positions, JAX
//! output (tests/mlir_samples) and the whole conformance corpus.

use hloscope_core::ir::*;
use hloscope_core::parse::mlir::parse;
use std::path::PathBuf;

fn conformance_dir() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(d) = std::env::var("HLOSCOPE_CONFORMANCE_DIR") {
        candidates.push(PathBuf::from(d));
    }
    candidates.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance"));
    candidates.push(PathBuf::from("/work/shared/conformance"));
    candidates.into_iter().find(|p| p.join("stablehlo").is_dir())
}

fn mlir_files(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            mlir_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "mlir") {
            out.push(p);
        }
    }
}

/// Is this error one the corpus is allowed to produce (unsupported types or ops, CHLO
/// ops whose decomposition lives elsewhere)?
fn allowed_failure(msg: &str) -> bool {
    msg.contains("unsupported element type")
        || msg.contains("unsupported op")
        || msg.contains("unsupported type")
        || msg.contains("CHLO")
        || msg.contains("chlo.")
}

#[test]
fn parses_conformance_corpus() {
    let Some(dir) = conformance_dir() else {
        panic!("conformance corpus not found; set HLOSCOPE_CONFORMANCE_DIR");
    };
    let mut files = Vec::new();
    mlir_files(&dir.join("stablehlo"), &mut files);
    assert!(files.len() > 1500, "found only {} files", files.len());
    let (mut chunks, mut ok, mut allowed) = (0, 0, 0);
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let is_interp = f.to_string_lossy().contains("/interpret/");
        let parts: Vec<String> = if is_interp {
            let mut parts = vec![String::new()];
            for line in text.split_inclusive('\n') {
                if line.trim_end() == "// -----" {
                    // Keep line numbers: the chunk starts with blank lines.
                    let prev = parts.last().unwrap().matches('\n').count();
                    let _ = prev;
                    parts.push(String::new());
                } else {
                    parts.last_mut().unwrap().push_str(line);
                }
            }
            parts
        } else {
            vec![text]
        };
        for part in parts {
            if !part.contains("func.func") {
                continue;
            }
            chunks += 1;
            match parse(&part) {
                Ok(m) => {
                    assert!(m.entry_comp().has_root(), "{}", f.display());
                    ok += 1;
                }
                Err(e) if allowed_failure(&e.message) => allowed += 1,
                Err(e) => bad.push(format!("{}: {e}", f.display())),
            }
        }
    }
    eprintln!("conformance: {} files, {chunks} chunks, {ok} parsed, {allowed} unsupported, {} bad", files.len(), bad.len());
    for b in bad.iter().take(40) {
        eprintln!("  {b}");
    }
    assert!(bad.is_empty(), "{} chunks failed with unexpected errors", bad.len());
}
