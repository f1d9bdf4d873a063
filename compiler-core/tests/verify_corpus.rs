//! Verifies every parsable module of the StableHLO conformance corpus.
//!
//! The corpus (`stablehlo/` in the conformance folder that `tests/common/corpus.rs`
//! locates) holds valid programs only, so any verifier error on a module the parser
//! accepts is a false error: either the verifier is stricter than StableHLO or the parser
//! built the IR against its conventions. The test lists every such error and fails if
//! there is one; it fails too when the corpus is missing. Files the parser rejects
//! (unsupported types, CHLO ops not yet decomposed, ...) are counted, not failed: the
//! parser's own tests own that.
//!
//! Files in `interpret/` hold several modules separated by `// -----` lines
//! (`composite.mlir` excepted); `testdata/` files hold one each.

use hloscope_core::parse::parse_module;
use hloscope_core::verify::verify;
use std::path::{Path, PathBuf};

use crate::corpus;

/// `(name, text)` of each module in the corpus, in a stable order.
fn modules(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for sub in ["interpret", "testdata"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(sub))
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.join(sub).display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.retain(|p| p.extension().is_some_and(|e| e == "mlir"));
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let name = format!("{sub}/{}", path.file_name().unwrap().to_string_lossy());
            let split = sub == "interpret" && !name.ends_with("/composite.mlir");
            if split {
                let mut case = String::new();
                let mut n = 0;
                for line in text.lines() {
                    if line.trim_start().starts_with("// -----") {
                        out.push((format!("{name}#{n}"), std::mem::take(&mut case)));
                        n += 1;
                    } else {
                        case.push_str(line);
                        case.push('\n');
                    }
                }
                out.push((format!("{name}#{n}"), case));
            } else {
                out.push((name, text));
            }
        }
    }
    out
}

#[test]
fn verifier_accepts_every_parsable_conformance_module() {
    let dir = corpus::corpus_dir();
    let all = modules(&dir);
    assert!(all.len() > 1000, "expected the whole corpus, found {} modules in {}", all.len(), dir.display());
    let (mut parsed, mut rejected) = (0usize, 0usize);
    let mut false_errors = Vec::new();
    for (name, text) in &all {
        let Ok(module) = parse_module(text) else {
            rejected += 1;
            continue;
        };
        parsed += 1;
        if let Err(e) = verify(&module) {
            false_errors.push(format!("{name}: {e}"));
        }
    }
    eprintln!(
        "{} modules: {parsed} parsed, {rejected} rejected by the parser, {} verifier errors",
        all.len(),
        false_errors.len()
    );
    assert!(false_errors.is_empty(), "verifier errors on valid modules:\n{}", false_errors.join("\n"));
}

/// The parser's JAX-style samples (`tests/mlir_samples/`) verify too.
#[test]
fn verifier_accepts_the_parser_samples() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mlir_samples");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "mlir"));
    files.sort();
    let mut errors = Vec::new();
    let mut parsed = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let Ok(module) = parse_module(&text) else { continue };
        parsed += 1;
        if let Err(e) = verify(&module) {
            errors.push(format!("{}: {e}", path.display()));
        }
    }
    eprintln!("{} samples, {parsed} parsed, {} verifier errors", files.len(), errors.len());
    assert!(errors.is_empty(), "verifier errors on valid samples:\n{}", errors.join("\n"));
}
