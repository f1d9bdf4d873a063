//! The compilation cache of `hloscope run --target cpu`, across processes: a second run
//! hits and gives the same bytes; a corrupt or truncated entry is rebuilt with a note,
//! also when the damage is in the binary module or plan sections (even under a valid
//! checksum); another parameter shape misses; --no-cache neither reads nor writes. The
//! same for `--target wasm`, whose entries hold the module as wasmtime compiled it.
//! (Another compiler version: `cache.rs` unit tests, which can forge one.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_hloscope");

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(name)
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hloscope-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs a corpus program on the cpu with its inputs.
fn run(module: &Path, inputs: &[PathBuf], cache: &Path, out: &Path, extra: &[&str]) -> (Output, String) {
    run_on("cpu", module, inputs, cache, out, extra)
}

/// Runs a corpus program on `target` with its inputs.
fn run_on(
    target: &str,
    module: &Path,
    inputs: &[PathBuf],
    cache: &Path,
    out: &Path,
    extra: &[&str],
) -> (Output, String) {
    let mut cmd = Command::new(BIN);
    cmd.env("HLOSCOPE_CACHE_DIR", cache)
        .args(["run", module.to_str().unwrap(), "--target", target, "-v", "--out-dir", out.to_str().unwrap()])
        .args(extra);
    for p in inputs {
        cmd.arg("--input").arg(p);
    }
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{err}");
    (o, err)
}

fn inputs(case: &str) -> Vec<PathBuf> {
    (0..).map(|i| corpus(case).join(format!("in{i}.npy"))).take_while(|p| p.exists()).collect()
}

/// The files of `dir` that `keep` takes, sorted (none when `dir` does not exist).
fn files(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<PathBuf> = read.map(|e| e.unwrap().path()).filter(|p| keep(p)).collect();
    v.sort();
    v
}

/// The cache entries in `dir`.
fn entries(dir: &Path) -> Vec<PathBuf> {
    files(dir, |p| p.extension().is_some_and(|x| x == "hsart"))
}

/// Flips 8 bytes in the middle of the file at `path`.
fn flip_middle_bytes(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 8] {
        *b ^= 0x5a;
    }
    std::fs::write(path, &bytes).unwrap();
}

#[test]
fn hit_corrupt_truncated_and_no_cache() {
    let dir = temp("main");
    let cache = dir.join("cache");
    let module = corpus("transformer_block").join("module.mlir");
    let ins = inputs("transformer_block");
    let (_, err) = run(&module, &ins, &cache, &dir.join("a"), &[]);
    assert!(err.contains("cpu: cache miss (stored"), "{err}");
    let files = entries(&cache);
    assert_eq!(files.len(), 1);
    let reference = std::fs::read(dir.join("a/out0.npy")).unwrap();
    // The interpreter's own result file: the cpu run is within rounding of it.
    assert_eq!(reference.len(), std::fs::read(corpus("transformer_block").join("out0.npy")).unwrap().len());

    let (_, err) = run(&module, &ins, &cache, &dir.join("b"), &[]);
    assert!(err.contains("cpu: cache hit"), "{err}");
    assert_eq!(std::fs::read(dir.join("b/out0.npy")).unwrap(), reference);

    // Flipped bytes in the middle of the entry: a note, a rebuild, the same outputs.
    flip_middle_bytes(&files[0]);
    let (_, err) = run(&module, &ins, &cache, &dir.join("c"), &[]);
    assert!(err.contains("note: the compilation cache entry") && err.contains("checksum mismatch"), "{err}");
    assert!(err.contains("cache miss (rebuilt)"), "{err}");
    assert_eq!(std::fs::read(dir.join("c/out0.npy")).unwrap(), reference);
    let (_, err) = run(&module, &ins, &cache, &dir.join("d"), &[]);
    assert!(err.contains("cpu: cache hit"), "the rebuilt entry is used: {err}");

    // Truncated.
    let len = std::fs::metadata(&files[0]).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&files[0]).unwrap().set_len(len / 3).unwrap();
    let (_, err) = run(&module, &ins, &cache, &dir.join("e"), &[]);
    assert!(err.contains("truncated"), "{err}");
    assert_eq!(std::fs::read(dir.join("e/out0.npy")).unwrap(), reference);

    // --no-cache: compiles, says so, writes nothing new.
    let before = std::fs::read(&files[0]).unwrap();
    let (_, err) = run(&module, &ins, &cache, &dir.join("f"), &["--no-cache"]);
    assert!(err.contains("cpu: cache off"), "{err}");
    assert_eq!(std::fs::read(&files[0]).unwrap(), before);
    assert_eq!(std::fs::read(dir.join("f/out0.npy")).unwrap(), reference);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn another_parameter_shape_misses() {
    let dir = temp("shape");
    let cache = dir.join("cache");
    let text = "HloModule m\n\nENTRY main {\n  p = f32[4] parameter(0)\n  ROOT e = f32[4] exponential(p)\n}\n";
    let small = dir.join("small.hlo");
    let big = dir.join("big.hlo");
    std::fs::write(&small, text).unwrap();
    std::fs::write(&big, text.replace("f32[4]", "f32[6]")).unwrap();
    let go = |m: &Path| {
        let o = Command::new(BIN)
            .env("HLOSCOPE_CACHE_DIR", &cache)
            .args(["run", m.to_str().unwrap(), "--target", "cpu", "-v", "--random-inputs"])
            .output()
            .unwrap();
        assert!(o.status.success());
        (String::from_utf8_lossy(&o.stderr).to_string(), String::from_utf8_lossy(&o.stdout).to_string())
    };
    let (a, out_a) = go(&small);
    let (b, _) = go(&big);
    let (c, out_c) = go(&small);
    assert!(a.contains("cache miss") && b.contains("cache miss") && c.contains("cache hit"), "{a}{b}{c}");
    assert_eq!(out_a, out_c);
    assert_eq!(entries(&cache).len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn corrupt_binary_sections_are_rebuilt() {
    use hloscope_core::targets::cpu::artifact::Artifact;
    let dir = temp("sections");
    let cache = dir.join("cache");
    // A while loop: its cond and body have plans of their own in the entry.
    let text = "HloModule m
%cond (i: s32[], s: f32[4]) -> pred[] {
  %i = s32[] parameter(0)
  %s = f32[4] parameter(1)
  %three = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %three), direction=LT
}
%body (i: s32[], s: f32[4]) -> (s32[], f32[4]) {
  %i = s32[] parameter(0)
  %s = f32[4] parameter(1)
  %e = f32[4] exponential(%s)
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[4]) tuple(%i2, %e)
}
ENTRY %main (x: f32[4]) -> (s32[], f32[4]) {
  %x = f32[4] parameter(0)
  %zero = s32[] constant(0)
  ROOT %w = (s32[], f32[4]) while(%zero, %x), condition=%cond, body=%body
}
";
    let module = dir.join("m.hlo");
    std::fs::write(&module, text).unwrap();
    let go = || {
        let o = Command::new(BIN)
            .env("HLOSCOPE_CACHE_DIR", &cache)
            .args(["run", module.to_str().unwrap(), "--target", "cpu", "-v", "--random-inputs"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (String::from_utf8_lossy(&o.stderr).to_string(), String::from_utf8_lossy(&o.stdout).to_string())
    };
    let (err, reference) = go();
    assert!(err.contains("cache miss (stored"), "{err}");
    let entry = entries(&cache).pop().unwrap();
    let bytes = std::fs::read(&entry).unwrap();
    let art = Artifact::from_bytes(&bytes).unwrap();
    assert_eq!(art.entry.children.len(), 2);

    // A flipped byte inside the module section, then inside the body's plan: the checksum.
    for section in [&art.module, &art.entry.children[1].plan] {
        let at = bytes.windows(section.len()).position(|w| w == &section[..]).unwrap();
        let mut b = bytes.clone();
        b[at + section.len() / 2] ^= 0x04;
        std::fs::write(&entry, &b).unwrap();
        let (err, out) = go();
        assert!(err.contains("note: the compilation cache entry") && err.contains("checksum mismatch"), "{err}");
        assert!(err.contains("cache miss (rebuilt)"), "{err}");
        assert_eq!(out, reference);
        let (err, out) = go();
        assert!(err.contains("cpu: cache hit"), "the rebuilt entry is used: {err}");
        assert_eq!(out, reference);
    }

    // Under a valid checksum: a plan section cut short, then the entry's plan given to the
    // loop body. Refused with the reason, rebuilt.
    let mut cut = art.clone();
    cut.entry.children[0].plan.truncate(5);
    let mut swapped = art.clone();
    swapped.entry.children[1].plan = art.entry.plan.clone();
    for (forged, why) in [(cut, "plan section does not decode"), (swapped, "stale artifact")] {
        std::fs::write(&entry, forged.to_bytes()).unwrap();
        let (err, out) = go();
        assert!(err.contains("note: the compilation cache entry") && err.contains(why), "{err}");
        assert_eq!(out, reference);
        assert_eq!(std::fs::read(&entry).unwrap(), bytes, "the rebuilt entry is the original one");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn wasm_entries_hit_and_damaged_ones_are_rebuilt() {
    let dir = temp("wasm");
    let cache = dir.join("cache");
    let module = corpus("layernorm").join("module.mlir");
    let ins = inputs("layernorm");
    let wasm = |out: &str| run_on("wasm", &module, &ins, &cache, &dir.join(out), &["--threads", "2"]);
    let (_, err) = wasm("a");
    assert!(err.contains("wasm: cache miss (stored"), "{err}");
    let files = entries(&cache);
    assert_eq!(files.len(), 1);
    let reference = std::fs::read(dir.join("a/out0.npy")).unwrap();

    let (_, err) = wasm("b");
    assert!(err.contains("wasm: cache hit"), "{err}");
    assert!(err.contains("kernels in WebAssembly"), "{err}");
    assert_eq!(std::fs::read(dir.join("b/out0.npy")).unwrap(), reference);

    // Damaged in the middle (the compiled code): a note, a rebuild, the same outputs.
    flip_middle_bytes(&files[0]);
    let (_, err) = wasm("c");
    assert!(err.contains("checksum mismatch") && err.contains("wasm: cache miss (rebuilt)"), "{err}");
    assert_eq!(std::fs::read(dir.join("c/out0.npy")).unwrap(), reference);

    // The cpu's entry for the same module is another entry; both stay.
    let (_, err) = run(&module, &ins, &cache, &dir.join("d"), &[]);
    assert!(err.contains("cpu: cache miss (stored"), "{err}");
    assert_eq!(entries(&cache).len(), 2);
    let (_, err) = wasm("e");
    assert!(err.contains("wasm: cache hit"), "{err}");

    // The module is built for a thread count (an imported shared memory past one), so
    // each count is an entry of its own, with the same outputs.
    for threads in ["1", "3"] {
        let out = dir.join(format!("threads{threads}"));
        for expected in ["wasm: cache miss (stored", "wasm: cache hit"] {
            let (_, err) = run_on("wasm", &module, &ins, &cache, &out, &["--threads", threads]);
            assert!(err.contains(expected) && err.contains(&format!(", {threads} thread")), "{err}");
            assert_eq!(std::fs::read(out.join("out0.npy")).unwrap(), reference);
        }
    }
    assert_eq!(entries(&cache).len(), 4);

    // --no-cache neither reads nor writes.
    let (_, err) = run_on("wasm", &module, &ins, &cache, &dir.join("f"), &["--no-cache"]);
    assert!(err.contains("wasm: cache off"), "{err}");
    assert_eq!(std::fs::read(dir.join("f/out0.npy")).unwrap(), reference);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The files of the compiled GEMM library in `dir`.
fn gemm_libraries(dir: &Path) -> Vec<PathBuf> {
    files(dir, |p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("wasm-gemm-library-")))
}

#[test]
fn the_gemm_library_is_compiled_once_and_a_damaged_copy_compiled_again() {
    // A program with f32 dots on the WebAssembly target imports the GEMM library, which
    // the first process compiles and keeps in the cache folder, and later ones load.
    let dir = temp("gemm-library");
    let cache = dir.join("cache");
    let module = corpus("mlp_gelu_tanh").join("module.mlir");
    let ins = inputs("mlp_gelu_tanh");
    let wasm = |out: &str, extra: &[&str]| run_on("wasm", &module, &ins, &cache, &dir.join(out), extra);
    wasm("a", &["--no-cache"]);
    assert!(gemm_libraries(&cache).is_empty(), "--no-cache keeps nothing on disk");
    let reference = std::fs::read(dir.join("a/out0.npy")).unwrap();
    wasm("b", &[]);
    let libraries = gemm_libraries(&cache);
    assert_eq!(libraries.len(), 1, "{libraries:?}");
    let stored = std::fs::read(&libraries[0]).unwrap();
    assert!(stored.len() > 1000, "{} bytes", stored.len());
    assert_eq!(std::fs::read(dir.join("b/out0.npy")).unwrap(), reference);
    // Loaded by the next process (a fresh compile of the program: other threads).
    wasm("c", &["--threads", "1"]);
    assert_eq!(std::fs::read(dir.join("c/out0.npy")).unwrap(), reference);
    assert_eq!(std::fs::read(&libraries[0]).unwrap(), stored, "loaded, not rewritten");
    // Damaged in the middle, then truncated: compiled again and stored again.
    flip_middle_bytes(&libraries[0]);
    wasm("d", &["--threads", "3"]);
    assert_eq!(std::fs::read(dir.join("d/out0.npy")).unwrap(), reference);
    assert_eq!(std::fs::read(&libraries[0]).unwrap(), stored, "the damaged copy was replaced");
    std::fs::write(&libraries[0], &stored[..stored.len() / 3]).unwrap();
    wasm("e", &["--threads", "4"]);
    assert_eq!(std::fs::read(dir.join("e/out0.npy")).unwrap(), reference);
    assert_eq!(std::fs::read(&libraries[0]).unwrap(), stored, "the truncated copy was replaced");
    let _ = std::fs::remove_dir_all(&dir);
}
