//! The StableHLO conformance corpus, shared by every test that reads it: where it lives
//! (the one locator, [`conformance_dir`]), and its cases (interpret/ files split on
//! `// -----` lines).
#![allow(dead_code)] // each test includes this file and uses a part of it

use std::path::{Path, PathBuf};

/// The variable that names the conformance folder (the one holding `stablehlo/`).
pub const CONFORMANCE_ENV: &str = "HLOSCOPE_CONFORMANCE_DIR";

/// The conformance folder: `$HLOSCOPE_CONFORMANCE_DIR` (a relative path is taken from
/// the workspace root, as tests run in their package's folder), else
/// `../shared/conformance/` beside the checkout. Panics, saying where it looked and how to
/// point it elsewhere, when that folder has no `stablehlo/` corpus: a test that found no
/// corpus must fail, not pass having checked nothing.
pub fn conformance_dir() -> PathBuf {
    // compiler-core lies one folder below the workspace root.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("compiler-core has a parent folder");
    let (dir, from) = match std::env::var_os(CONFORMANCE_ENV) {
        Some(dir) => (root.join(dir), format!("${CONFORMANCE_ENV}")),
        None => (root.join("../shared/conformance"), "the default, beside the checkout".to_string()),
    };
    if !dir.join("stablehlo").is_dir() {
        panic!(
            "conformance corpus not found: {} ({from}) has no stablehlo/ folder; put the corpus in \
             ../shared/conformance/ beside the checkout or set {CONFORMANCE_ENV} to the folder that holds \
             stablehlo/",
            dir.display()
        );
    }
    dir
}

/// The StableHLO corpus itself: `stablehlo/` in [`conformance_dir`] (holds `index.tsv`,
/// `interpret/` and `testdata/`).
pub fn corpus_dir() -> PathBuf {
    conformance_dir().join("stablehlo")
}

pub struct Case {
    /// `testdata/foo.mlir` or `interpret/foo.mlir#2` (0-based chunk).
    pub name: String,
    pub text: String,
    pub corpus: &'static str,
}

pub fn collect_cases(dir: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    for corpus in ["interpret", "testdata"] {
        let mut files: Vec<PathBuf> = walk(&dir.join(corpus));
        files.sort();
        for path in files {
            let rel = path.strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&path).unwrap();
            if corpus == "interpret" {
                for (i, chunk) in split_cases(&text).into_iter().enumerate() {
                    cases.push(Case { name: format!("{rel}#{i}"), text: chunk, corpus: "interpret" });
                }
            } else {
                cases.push(Case { name: rel, text, corpus: "testdata" });
            }
        }
    }
    cases
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "mlir") {
            out.push(path);
        }
    }
    out
}

/// Splits on lines that read exactly `// -----`, keeping line numbers: each chunk is
/// padded with the blank lines before it so that errors point into the original file.
pub fn split_cases(text: &str) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut current = String::new();
    for (line_no, line) in text.lines().enumerate() {
        if line.trim_end() == "// -----" {
            chunks.push(std::mem::take(&mut current));
            current = "\n".repeat(line_no + 1);
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    chunks.push(current);
    chunks
}
