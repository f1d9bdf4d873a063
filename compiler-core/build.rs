//! Fingerprints the compiler's sources (this crate's and the approximations' of
//! `hloscope-approx`) into `HLOSCOPE_SOURCE_HASH`, which the CPU target's artifacts
//! carry as part of the compiler's identity (`targets/cpu/artifact.rs`): a cached
//! artifact from a build of other sources (another pass, another emitter, another
//! polynomial) is stale and rebuilt, with nobody having to remember to bump a number.

use std::hash::Hasher;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let roots = [manifest.join("src"), manifest.join("../approx/src")];
    let mut files = Vec::new();
    for root in &roots {
        println!("cargo:rerun-if-changed={}", root.display());
        rust_files(root, &mut files);
    }
    // By path relative to the workspace, so the hash does not depend on where it is built.
    files.sort();
    let workspace = manifest.parent().unwrap_or(&manifest).to_path_buf();
    // FNV-1a: stable across Rust versions (std's hasher is not promised to be).
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    for f in &files {
        let rel = f.strip_prefix(&manifest).map(|r| Path::new("compiler-core").join(r));
        let rel = rel.or_else(|_| f.strip_prefix(&workspace).map(Path::to_path_buf)).unwrap_or_else(|_| f.clone());
        h.write(rel.to_string_lossy().as_bytes());
        h.write(&std::fs::read(f).unwrap_or_default());
    }
    println!("cargo:rustc-env=HLOSCOPE_SOURCE_HASH={:016x}", h.finish());
}

struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
