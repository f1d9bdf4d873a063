//! The StableHLO conformance corpus, shared by the tests that walk it: where it lives,
//! and its cases (interpret/ files split on `// -----` lines).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Where the corpus lives: `$HLOSCOPE_CONFORMANCE_DIR`, or `shared/` beside the repo.
pub fn corpus_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("HLOSCOPE_CONFORMANCE_DIR") {
        return PathBuf::from(dir);
    }
    let beside_repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/stablehlo");
    if beside_repo.exists() {
        return beside_repo;
    }
    PathBuf::from("/work/shared/conformance/stablehlo")
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
    let mut line_no = 0usize;
    for line in text.lines() {
        if line.trim_end() == "// -----" {
            chunks.push(std::mem::take(&mut current));
            current = "\n".repeat(line_no + 1);
        } else {
            current.push_str(line);
            current.push('\n');
        }
        line_no += 1;
    }
    chunks.push(current);
    chunks
}
