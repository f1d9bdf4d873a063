//! `cargo xtask bench`: hloscope's CPU target against XLA:CPU on realistic programs.
//!
//! 1. `tools/bench/xla_bench.py export` builds each program in JAX, writes its StableHLO,
//!    inputs and XLA's outputs, and times XLA's compile (lower + compile) and runs.
//! 2. A release `hloscope bench --json --input ... --out-dir ...` compiles and runs the
//!    same module on the same inputs; `xla_bench.py compare` checks its outputs against
//!    XLA's (within the program's tolerance): a mismatch fails the suite.
//! 3. Two more rounds alternate the sides (`xla_bench.py time` in a fresh process, then
//!    `hloscope bench`); each side keeps its best round's median, so that a burst of
//!    load on a shared machine does not decide a ratio.
//! 4. STREAM-like copy and triad bandwidths of this machine (threads on arrays far larger
//!    than the last-level cache) put the achieved GB/s in context.
//! 5. Writes `target/bench/results.json`, `results.md` (with geometric means) and
//!    `results.png` (a bar chart), and rewrites the table between `<!-- bench:begin -->`
//!    and `<!-- bench:end -->` in README.md.
//!
//! `--quick` runs every program at small sizes (a smoke test of the whole chain).
//!
//! `--depth` runs the depth suite instead, the same way: a GPT-2-small-sized stack at 1,
//! 4, 12 and 48 layers, compile and run against XLA:CPU (the question there is how
//! compile time grows with depth). It writes `target/bench/depth.{json,md,png}` and the
//! table between `<!-- bench-depth:begin -->` and `<!-- bench-depth:end -->` in README.md.
//!
//! `--target wasm` runs each program on the WebAssembly target (wasmtime) and on the
//! native CPU target, alternating in rounds, and writes `target/bench/wasm.md` and the
//! table between `<!-- bench-wasm:begin -->` and `<!-- bench-wasm:end -->` in README.md.
//!
//! `--target webgpu` measures fusion instead, on the system's WebGPU adapter: each
//! program of the same suite (the same export, XLA's outputs the reference) runs through
//! `hloscope bench --target webgpu` fused and with `--fusion off`, alternating, in rounds
//! that each keep their best median; both runs' outputs must match XLA's. It writes
//! `target/bench/webgpu.{json,md}` and the table between `<!-- bench-webgpu:begin -->`
//! and `<!-- bench-webgpu:end -->` in README.md (also with `--quick`, which says so in
//! the caption: lavapipe, a CPU driver, is slow at the full sizes).
//! Python: `$HLOSCOPE_PYTHON`, else `.venv/bin/python`, made with JAX and numpy when
//! missing.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// One program's numbers.
struct Row {
    name: String,
    xla_run_s: f64,
    hs_run_s: f64,
    xla_compile_s: f64,
    hs_compile_s: f64,
    /// hloscope's peak resident memory once compiled (`hloscope bench`'s report).
    hs_compile_peak_bytes: u64,
    /// The cost model's bytes moved by one run (all kernels).
    bytes: u64,
    /// The cost model's floating-point operations of one run (all kernels).
    flops: u64,
    kernels: usize,
    max_abs_err: f64,
}

impl Row {
    /// How many times longer hloscope takes than XLA (above 1: XLA is faster).
    fn slowdown(&self) -> f64 {
        self.hs_run_s / self.xla_run_s
    }
    fn compile_ratio(&self) -> f64 {
        self.hs_compile_s / self.xla_compile_s
    }
    fn gbps(&self) -> f64 {
        self.bytes as f64 / self.hs_run_s / 1e9
    }
}

/// Bandwidths in GB/s.
struct Stream {
    copy: f64,
    triad: f64,
    threads: usize,
    array_mib: usize,
}

/// The exported suite and the release binary that runs it.
struct Suite {
    out: PathBuf,
    programs_dir: PathBuf,
    python: String,
    hloscope: PathBuf,
    names: Vec<String>,
}

/// Exports the programs (the depth suite's with `depth`) from JAX, timing XLA:CPU, and
/// builds hloscope (release).
fn prepare(root: &Path, quick: bool, depth: bool) -> Result<Suite, String> {
    let out = root.join("target").join("bench");
    let programs_dir = out.join(if depth { "depth" } else { "programs" });
    std::fs::create_dir_all(&programs_dir).map_err(|e| format!("cannot create {}: {e}", programs_dir.display()))?;

    let python = python(root)?;
    progress("exporting the programs from JAX and timing XLA:CPU");
    let mut export = vec!["tools/bench/xla_bench.py".to_string(), "export".into(), programs_dir.display().to_string()];
    if quick {
        export.push("--quick".into());
    }
    if depth {
        export.push("--depth".into());
    }
    crate::run_in(root, &python, &export.iter().map(String::as_str).collect::<Vec<_>>())?;

    progress("building hloscope (release)");
    crate::run_in(root, "cargo", &["build", "--release", "--quiet", "-p", "hloscope"])?;
    let hloscope = root.join("target").join("release").join("hloscope");

    let names: Vec<String> =
        serde_json::from_str(&read(&programs_dir.join("programs.json"))?).map_err(|e| format!("programs.json: {e}"))?;
    Ok(Suite { out, programs_dir, python, hloscope, names })
}

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "--server") {
        return crate::server_bench::run(root, args);
    }
    let quick = args.iter().any(|a| a == "--quick");
    let depth = args.iter().any(|a| a == "--depth");
    let mut target = "cpu";
    let mut rest = args.iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--quick" | "--depth" => {}
            "--target" => target = rest.next().map(String::as_str).unwrap_or(""),
            bad => {
                return Err(format!(
                    "bench: unknown argument {bad:?} (only --quick, --depth and --target cpu|webgpu|wasm)"
                ))
            }
        }
    }
    match target {
        "cpu" => cpu(root, quick, depth),
        "webgpu" if depth => Err("bench: --depth runs on the CPU target only".into()),
        "webgpu" => webgpu(root, quick),
        "wasm" if depth => Err("bench: --depth runs on the CPU target only".into()),
        "wasm" => wasm(root, quick),
        other => Err(format!("bench: --target {other:?}: cpu, webgpu or wasm")),
    }
}

/// hloscope's CPU target against XLA:CPU, on the main suite or the depth suite.
fn cpu(root: &Path, quick: bool, depth: bool) -> Result<(), String> {
    let Suite { out, programs_dir, python, hloscope, names } = prepare(root, quick, depth)?;
    let mut rows = Vec::new();
    for name in &names {
        let dir = programs_dir.join(name);
        let xla: Value =
            serde_json::from_str(&read(&dir.join("xla.json"))?).map_err(|e| format!("{name}/xla.json: {e}"))?;
        progress(&format!("{name}: hloscope bench"));
        let hs_out = dir.join("hloscope_out");
        let _ = std::fs::remove_dir_all(&hs_out);
        let report = hloscope_bench(&hloscope, &dir, Some(&hs_out), &["--target", "cpu"])?;
        let verdict = compare(root, &python, &dir, &hs_out)?;
        // Top-level rows only: rows inside a while body or branch (`while.3/body/...`)
        // are already counted in their loop's row.
        let mut kernels = report["kernels"].as_array().cloned().unwrap_or_default();
        kernels.retain(|k| !k["name"].as_str().unwrap_or("").contains('/'));
        rows.push(Row {
            name: name.clone(),
            xla_run_s: num(&xla["xla_run_median_s"]),
            hs_run_s: num(&report["run_median_s"]),
            xla_compile_s: num(&xla["xla_compile_s"]),
            hs_compile_s: num(&report["compile_s"]),
            hs_compile_peak_bytes: report["compile_peak_rss_bytes"].as_u64().unwrap_or(0),
            bytes: kernels.iter().map(|k| k["bytes"].as_u64().unwrap_or(0)).sum(),
            flops: kernels.iter().map(|k| k["flops"].as_u64().unwrap_or(0)).sum(),
            kernels: kernels.len(),
            max_abs_err: num(&verdict["max_abs_err"]),
        });
    }
    // Later rounds time both sides again, XLA in a fresh process and then hloscope, and
    // each side keeps its best round: a burst of load from other jobs on a shared
    // machine then cannot decide a ratio.
    let rounds = if quick { 2 } else { ROUNDS };
    for round in 2..=rounds {
        progress(&format!("round {round} of {rounds}: XLA:CPU again"));
        let mut args = vec!["tools/bench/xla_bench.py".to_string(), "time".into(), programs_dir.display().to_string()];
        args.extend(names.iter().cloned());
        let output = Command::new(&python)
            .current_dir(root)
            .args(&args)
            .output()
            .map_err(|e| format!("cannot start {python}: {e}"))?;
        if !output.status.success() {
            return Err(format!("xla_bench.py time failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
        }
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let v: Value = serde_json::from_str(line).map_err(|e| format!("xla_bench.py time: {e}: {line}"))?;
            if let Some(row) = rows.iter_mut().find(|r| v["name"] == r.name.as_str()) {
                row.xla_run_s = row.xla_run_s.min(num(&v["run_median_s"]));
            }
        }
        progress(&format!("round {round} of {rounds}: hloscope again"));
        for row in &mut rows {
            let report = hloscope_bench(&hloscope, &programs_dir.join(&row.name), None, &["--target", "cpu"])?;
            row.hs_run_s = row.hs_run_s.min(num(&report["run_median_s"]));
            row.hs_compile_s = row.hs_compile_s.min(num(&report["compile_s"]));
        }
    }
    for row in &rows {
        progress(&format!(
            "{}: XLA {} / hloscope {} run, XLA {} / hloscope {} compile, outputs match (max abs err {:.1e})",
            row.name,
            ms(row.xla_run_s),
            ms(row.hs_run_s),
            ms(row.xla_compile_s),
            ms(row.hs_compile_s),
            row.max_abs_err
        ));
    }

    progress("measuring memory bandwidth (STREAM copy and triad)");
    let stream = stream(quick);
    progress(&format!("copy {:.1} GB/s, triad {:.1} GB/s ({} threads)", stream.copy, stream.triad, stream.threads));

    let mut table = markdown(&rows, &stream, quick, rounds);
    let (file, key, heading) = if depth {
        table += &depth_reading(&rows);
        ("depth", "bench-depth", "Compile time against depth: hloscope vs XLA:CPU")
    } else {
        ("results", "bench", "hloscope vs XLA:CPU")
    };
    let write = |ext: &str, bytes: &[u8]| {
        std::fs::write(out.join(format!("{file}.{ext}")), bytes).map_err(|e| format!("cannot write {file}.{ext}: {e}"))
    };
    write("md", table.as_bytes())?;
    write("json", json(&rows, &stream, quick).as_bytes())?;
    let png = crate::chart::bar_chart(
        "hloscope run time / XLA:CPU run time (log scale; below 1: hloscope faster)",
        &rows.iter().map(|r| (r.name.clone(), r.slowdown())).collect::<Vec<_>>(),
    );
    write("png", &png)?;
    if !quick {
        update_readme(&root.join("README.md"), &table, (key, heading))?;
    }
    print!("{table}");
    progress(&format!("wrote {}/{file}.{{json,md,png}}", out.display()));
    Ok(())
}

/// The depth suite's reading: each compiler's compile time at each depth against its
/// own one-layer compile (the goal: hloscope's 12 layers within 2x of its one).
fn depth_reading(rows: &[Row]) -> String {
    let Some(one) = rows.first() else { return String::new() };
    let mut t = String::from("\nCompile time against the same compiler's 1-layer compile:");
    for r in rows {
        t += &format!(
            " {}: hloscope {:.1}x ({:.0} MiB peak resident), XLA {:.1}x;",
            r.name,
            r.hs_compile_s / one.hs_compile_s,
            r.hs_compile_peak_bytes as f64 / (1u64 << 20) as f64,
            r.xla_compile_s / one.xla_compile_s
        );
    }
    t.pop();
    t += ".\n";
    t
}

/// Timing rounds per side (the first is the export's for XLA; `--quick` makes 2).
const ROUNDS: usize = 3;

/// `xla_bench.py compare`: whether hloscope's outputs in `outputs` match XLA's for the
/// program in `dir` (an error when they do not).
fn compare(root: &Path, python: &str, dir: &Path, outputs: &Path) -> Result<Value, String> {
    let name = dir.file_name().map_or(String::new(), |n| n.to_string_lossy().to_string());
    let check = Command::new(python)
        .current_dir(root)
        .arg("tools/bench/xla_bench.py")
        .arg("compare")
        .arg(dir)
        .arg(outputs)
        .output()
        .map_err(|e| format!("cannot start {python}: {e}"))?;
    let verdict: Value = serde_json::from_slice(&check.stdout)
        .map_err(|e| format!("{name}: compare: {e} ({})", String::from_utf8_lossy(&check.stderr).trim()))?;
    if verdict["ok"] != Value::Bool(true) {
        return Err(format!(
            "{name}: hloscope's outputs in {} differ from XLA's: {}",
            outputs.display(),
            verdict["detail"]
        ));
    }
    Ok(verdict)
}

/// `hloscope bench --json` of one exported program on its saved inputs, with `extra`
/// arguments (the target, fusion knobs); with `out`, also writes the outputs there for
/// the comparison with XLA's.
fn hloscope_bench(hloscope: &Path, dir: &Path, out: Option<&Path>, extra: &[&str]) -> Result<Value, String> {
    let xla: Value =
        serde_json::from_str(&read(&dir.join("xla.json"))?).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut cmd = Command::new(hloscope);
    cmd.arg("bench").arg(dir.join("module.mlir")).args(extra).arg("--json");
    if let Some(out) = out {
        cmd.arg("--out-dir").arg(out);
    }
    for i in 0..xla["inputs"].as_array().map_or(0, Vec::len) {
        cmd.arg("--input").arg(dir.join(format!("in{i}.npy")));
    }
    let output = cmd.output().map_err(|e| format!("cannot start {}: {e}", hloscope.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{}: hloscope bench failed: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("{}: hloscope bench --json: {e}", dir.display()))
}

fn progress(msg: &str) {
    eprintln!("bench: {msg}");
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn ms(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

fn geomean(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut n) = (0.0, 0);
    for x in xs.filter(|x| x.is_finite() && *x > 0.0) {
        sum += x.ln();
        n += 1;
    }
    if n == 0 {
        f64::NAN
    } else {
        (sum / n as f64).exp()
    }
}

/// The Python with JAX: `$HLOSCOPE_PYTHON`, else the project's `.venv` (made when
/// missing: `python3 -m venv` and `pip install jax numpy`).
fn python(root: &Path) -> Result<String, String> {
    if let Ok(p) = std::env::var("HLOSCOPE_PYTHON") {
        return Ok(p);
    }
    let venv: PathBuf = root.join(".venv");
    let py = venv.join("bin").join("python");
    if !py.exists() {
        progress("creating .venv with jax and numpy");
        crate::run_in(root, "python3", &["-m", "venv", ".venv"])?;
        let pip = venv.join("bin").join("pip").display().to_string();
        crate::run_in(root, &pip, &["install", "--quiet", "jax", "numpy"])?;
    }
    Ok(py.display().to_string())
}

/// Copy (`b = a`) and triad (`a = b + s c`) over f64 arrays of at least 128 MiB each
/// (32 MiB in quick mode), split across all cores; the best of several repetitions,
/// counting the bytes read and written (STREAM's convention).
fn stream(quick: bool) -> Stream {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let array_mib = if quick { 32 } else { 128 };
    let n = array_mib * (1 << 20) / 8;
    let mut a = vec![1.0f64; n];
    let mut b = vec![2.0f64; n];
    let c = vec![0.5f64; n];
    let chunk = n.div_ceil(threads);
    let best = |f: &mut dyn FnMut()| -> f64 {
        let mut best = f64::INFINITY;
        for _ in 0..if quick { 3 } else { 6 } {
            let t = Instant::now();
            f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        best
    };
    let copy_s = best(&mut || {
        std::thread::scope(|s| {
            for (dst, src) in b.chunks_mut(chunk).zip(a.chunks(chunk)) {
                s.spawn(move || dst.copy_from_slice(src));
            }
        })
    });
    let triad_s = best(&mut || {
        std::thread::scope(|s| {
            for ((x, y), z) in a.chunks_mut(chunk).zip(b.chunks(chunk)).zip(c.chunks(chunk)) {
                s.spawn(move || {
                    for ((x, y), z) in x.iter_mut().zip(y).zip(z) {
                        *x = y + 3.0 * z;
                    }
                });
            }
        })
    });
    // Keep the results observable so the loops are not optimized away.
    std::hint::black_box((&a, &b));
    let bytes = (n * 8) as f64;
    Stream { copy: 2.0 * bytes / copy_s / 1e9, triad: 3.0 * bytes / triad_s / 1e9, threads, array_mib }
}

fn markdown(rows: &[Row], s: &Stream, quick: bool, rounds: usize) -> String {
    let mut t = String::new();
    if quick {
        t += "(quick mode: small sizes, a smoke test; the numbers mean little)\n\n";
    }
    t += "| program | XLA run | hloscope run | hloscope/XLA run | XLA compile | hloscope compile | hloscope/XLA compile | kernels | GB/s | % of triad |\n";
    t += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for r in rows {
        t += &format!(
            "| {} | {} | {} | {:.2}x | {} | {} | {:.2}x | {} | {:.1} | {:.0}% |\n",
            r.name,
            ms(r.xla_run_s),
            ms(r.hs_run_s),
            r.slowdown(),
            ms(r.xla_compile_s),
            ms(r.hs_compile_s),
            r.compile_ratio(),
            r.kernels,
            r.gbps(),
            100.0 * r.gbps() / s.triad
        );
    }
    t += &format!(
        "| **geomean** | | | **{:.2}x** | | | **{:.2}x** | | | |\n",
        geomean(rows.iter().map(Row::slowdown)),
        geomean(rows.iter().map(Row::compile_ratio))
    );
    t += &format!(
        "\nhloscope/XLA above 1: XLA is that many times faster. Run: median of timed runs after warm-up, \
the best of {} rounds that alternate XLA and hloscope (XLA: the compiled function called from Python with `block_until_ready`, so its times include JAX's dispatch, several microseconds, which dominates the tiny corpus programs; hloscope: `hloscope bench`). Compile: XLA lower + compile; hloscope parse + \
pipeline + codegen. GB/s: the cost model's bytes moved per run over hloscope's run time. Memory \
bandwidth of this machine ({} threads, {} MiB arrays): copy {:.1} GB/s, triad {:.1} GB/s. Every \
hloscope output matched XLA's within tolerance.\n",
        rounds, s.threads, s.array_mib, s.copy, s.triad
    );
    t += &dot_rates(rows);
    t
}

/// The batched small products' rate against the large GEMM's, both measured in this run
/// (the goal: at least half), when the suite has both programs.
fn dot_rates(rows: &[Row]) -> String {
    let rate = |name: &str| rows.iter().find(|r| r.name == name).map(|r| r.flops as f64 / r.hs_run_s / 1e9);
    let (Some(small), Some(large)) = (rate("batched_dots_128x128x64"), rate("gemm_1024")) else {
        return String::new();
    };
    format!(
        "\nDot rates (hloscope, this run): batched 128x128x64 products {small:.0} GFLOP/s, the 1024x1024x1024 \
GEMM {large:.0} GFLOP/s: the small products at {:.0}% of the large GEMM's rate (goal: at least 50%).\n",
        100.0 * small / large
    )
}

fn json(rows: &[Row], s: &Stream, quick: bool) -> String {
    let programs: Vec<Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "name": r.name,
                "xla_run_s": r.xla_run_s,
                "hloscope_run_s": r.hs_run_s,
                "run_ratio": r.slowdown(),
                "xla_compile_s": r.xla_compile_s,
                "hloscope_compile_s": r.hs_compile_s,
                "compile_ratio": r.compile_ratio(),
                "kernels": r.kernels,
                "bytes": r.bytes,
                "gbps": r.gbps(),
                "triad_fraction": r.gbps() / s.triad,
                "max_abs_err": r.max_abs_err,
            })
        })
        .collect();
    let v = serde_json::json!({
        "quick": quick,
        "programs": programs,
        "geomean_run_ratio": geomean(rows.iter().map(Row::slowdown)),
        "geomean_compile_ratio": geomean(rows.iter().map(Row::compile_ratio)),
        "stream": {"copy_gbps": s.copy, "triad_gbps": s.triad, "threads": s.threads, "array_mib": s.array_mib},
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// Replaces the text between `<!-- KEY:begin -->` and `<!-- KEY:end -->` (adds a
/// section headed `heading` at the end when they are missing); `(key, heading)`.
fn update_readme(path: &Path, table: &str, (key, heading): (&str, &str)) -> Result<(), String> {
    let (begin, end) = (format!("<!-- {key}:begin -->"), format!("<!-- {key}:end -->"));
    let text = read(path)?;
    let block = format!("{begin}\n{table}{end}");
    let new = match (text.find(&begin), text.find(&end)) {
        (Some(a), Some(b)) if a < b => format!("{}{block}{}", &text[..a], &text[b + end.len()..]),
        _ => format!("{}\n## {heading}\n\n{block}\n", text.trim_end()),
    };
    std::fs::write(path, new).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// One program fused and unfused on webgpu.
struct FusionRow {
    name: String,
    fused_s: f64,
    unfused_s: f64,
    fused_kernels: usize,
    unfused_kernels: usize,
    /// The cost model's bytes moved by one run's kernels.
    fused_bytes: u64,
    unfused_bytes: u64,
    flops: u64,
}

impl FusionRow {
    /// How many times faster the fused program runs (above 1: fusion wins).
    fn speedup(&self) -> f64 {
        self.unfused_s / self.fused_s
    }
    /// FLOPs per byte moved, unfused: below [`MEMORY_BOUND_FLOPS_PER_BYTE`] the
    /// program is memory-bound on any device, the case fusion is for.
    fn intensity(&self) -> f64 {
        self.flops as f64 / self.unfused_bytes.max(1) as f64
    }
    fn memory_bound(&self) -> bool {
        self.intensity() < MEMORY_BOUND_FLOPS_PER_BYTE
    }
}

/// Below this many FLOPs per byte a program is counted memory-bound (well under the
/// ridge point of GPUs and CPUs alike, some 10 to 100 FLOP/B).
const MEMORY_BOUND_FLOPS_PER_BYTE: f64 = 4.0;

/// The top-level rows of one `hloscope bench --json` (rows inside control flow are in
/// their loop's): (kernels, bytes, FLOPs).
fn top_level(report: &Value) -> (usize, u64, u64) {
    let kernels: Vec<&Value> = report["kernels"]
        .as_array()
        .map(|ks| ks.iter().filter(|k| !k["name"].as_str().unwrap_or("").contains('/')).collect())
        .unwrap_or_default();
    let sum = |key: &str| kernels.iter().map(|k| k[key].as_u64().unwrap_or(0)).sum();
    (kernels.len(), sum("bytes"), sum("flops"))
}

/// Fusion against `--fusion off` on the WebGPU adapter, each program in the same run.
fn webgpu(root: &Path, quick: bool) -> Result<(), String> {
    crate::ensure_lavapipe()?;
    let Suite { out, programs_dir, python, hloscope, names } = prepare(root, quick, false)?;
    let fused_args: &[&str] = &["--target", "webgpu"];
    let unfused_args: &[&str] = &["--target", "webgpu", "--fusion", "off"];
    let mut rows = Vec::new();
    // Programs the adapter cannot hold, with why.
    let mut skipped: Vec<(String, String)> = Vec::new();
    let mut device = Value::Null;
    for name in &names {
        let dir = programs_dir.join(name);
        progress(&format!("{name}: hloscope bench --target webgpu, fused and --fusion off"));
        let (fused_out, unfused_out) = (dir.join("webgpu_fused_out"), dir.join("webgpu_unfused_out"));
        let _ = std::fs::remove_dir_all(&fused_out);
        let _ = std::fs::remove_dir_all(&unfused_out);
        let both = hloscope_bench(&hloscope, &dir, Some(&fused_out), fused_args)
            .and_then(|fused| Ok((fused, hloscope_bench(&hloscope, &dir, Some(&unfused_out), unfused_args)?)));
        let (fused, unfused) = match both {
            Ok(both) => both,
            // A storage buffer past the adapter's limit (lavapipe binds 128 MiB) is the
            // adapter's size, not a failure of the suite: the table says so.
            Err(e) if e.contains("binds at most") => {
                let why = e.find("the arena needs").map_or(e.as_str(), |at| &e[at..]);
                let which = if fused_out.exists() { "unfused" } else { "fused" };
                progress(&format!("{name}: not run ({which}): {why}"));
                skipped.push((name.clone(), format!("{which}: {why}")));
                continue;
            }
            Err(e) => return Err(e),
        };
        compare(root, &python, &dir, &fused_out)?;
        compare(root, &python, &dir, &unfused_out)?;
        device = serde_json::json!({
            "adapter": fused["adapter"], "backend": fused["backend"], "driver": fused["driver"], "timing": fused["timing"],
        });
        let ((fused_kernels, fused_bytes, flops), (unfused_kernels, unfused_bytes, _)) =
            (top_level(&fused), top_level(&unfused));
        rows.push(FusionRow {
            name: name.clone(),
            fused_s: num(&fused["run_median_s"]),
            unfused_s: num(&unfused["run_median_s"]),
            fused_kernels,
            unfused_kernels,
            fused_bytes,
            unfused_bytes,
            flops,
        });
    }
    // As for the cpu: later rounds time both sides again, alternating, and each keeps
    // its best round.
    let rounds = if quick { 2 } else { ROUNDS };
    for round in 2..=rounds {
        progress(&format!("round {round} of {rounds}: fused and unfused again"));
        for row in &mut rows {
            let dir = programs_dir.join(&row.name);
            let fused = hloscope_bench(&hloscope, &dir, None, fused_args)?;
            let unfused = hloscope_bench(&hloscope, &dir, None, unfused_args)?;
            row.fused_s = row.fused_s.min(num(&fused["run_median_s"]));
            row.unfused_s = row.unfused_s.min(num(&unfused["run_median_s"]));
        }
    }
    for row in &rows {
        progress(&format!(
            "{}: fused {} ({} kernels), unfused {} ({} kernels): {:.2}x",
            row.name,
            ms(row.fused_s),
            row.fused_kernels,
            ms(row.unfused_s),
            row.unfused_kernels,
            row.speedup()
        ));
    }
    let table = fusion_markdown(&rows, &skipped, &device, quick, rounds);
    std::fs::write(out.join("webgpu.md"), &table).map_err(|e| format!("cannot write webgpu.md: {e}"))?;
    std::fs::write(out.join("webgpu.json"), fusion_json(&rows, &skipped, &device, quick))
        .map_err(|e| format!("cannot write webgpu.json: {e}"))?;
    update_readme(&root.join("README.md"), &table, ("bench-webgpu", "Fusion on WebGPU"))?;
    print!("{table}");
    progress(&format!("wrote {}/webgpu.{{json,md}}", out.display()));
    Ok(())
}

/// One program on the WebAssembly target (wasmtime) and on the native CPU target.
struct WasmRow {
    name: String,
    wasm_s: f64,
    cpu_s: f64,
    wasm_compile_s: f64,
    cpu_compile_s: f64,
    /// The same module in V8 (Node.js): run and compile time; none where the program
    /// has host kernels (V8 runs only WebAssembly).
    v8: Option<(f64, f64)>,
    /// FLOPs over bytes moved (the cost model's, fused).
    intensity: f64,
}

impl WasmRow {
    /// The WebAssembly kernels' speed as a fraction of the native target's.
    fn ratio(&self) -> f64 {
        self.cpu_s / self.wasm_s
    }

    /// The same in V8.
    fn v8_ratio(&self) -> Option<f64> {
        self.v8.map(|(run, _)| self.cpu_s / run)
    }
}

/// `hloscope bench --target wasm --engine v8` on one program: its JSON, or none when the
/// program has host kernels (anything else is an error).
fn v8_bench(hloscope: &Path, dir: &Path, out: Option<&Path>) -> Result<Option<Value>, String> {
    match hloscope_bench(hloscope, dir, out, &["--target", "wasm", "--engine", "v8"]) {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.contains("kernels are all WebAssembly") => Ok(None),
        Err(e) => Err(e),
    }
}

/// The WebAssembly target under wasmtime and in V8 (Node.js) against the native CPU
/// target, each program in the same run, alternating in rounds (each side keeps its
/// best); every output checked against XLA's.
fn wasm(root: &Path, quick: bool) -> Result<(), String> {
    let Suite { out, programs_dir, python, hloscope, names } = prepare(root, quick, false)?;
    let (wasm_args, cpu_args): (&[&str], &[&str]) = (&["--target", "wasm"], &["--target", "cpu"]);
    let mut rows = Vec::new();
    for name in &names {
        let dir = programs_dir.join(name);
        progress(&format!("{name}: hloscope bench --target wasm (wasmtime, v8) and --target cpu"));
        let (wasm_out, v8_out, cpu_out) = (dir.join("wasm_out"), dir.join("wasm_v8_out"), dir.join("wasm_cpu_out"));
        for d in [&wasm_out, &v8_out, &cpu_out] {
            let _ = std::fs::remove_dir_all(d);
        }
        let w = hloscope_bench(&hloscope, &dir, Some(&wasm_out), wasm_args)?;
        let v = v8_bench(&hloscope, &dir, Some(&v8_out))?;
        let c = hloscope_bench(&hloscope, &dir, Some(&cpu_out), cpu_args)?;
        compare(root, &python, &dir, &wasm_out)?;
        if v.is_some() {
            compare(root, &python, &dir, &v8_out)?;
        }
        compare(root, &python, &dir, &cpu_out)?;
        let (_, bytes, flops) = top_level(&w);
        rows.push(WasmRow {
            name: name.clone(),
            wasm_s: num(&w["run_median_s"]),
            cpu_s: num(&c["run_median_s"]),
            wasm_compile_s: num(&w["compile_s"]),
            cpu_compile_s: num(&c["compile_s"]),
            v8: v.map(|v| (num(&v["run_median_s"]), num(&v["compile_s"]))),
            intensity: flops as f64 / bytes.max(1) as f64,
        });
    }
    let rounds = if quick { 2 } else { ROUNDS };
    for round in 2..=rounds {
        progress(&format!("round {round} of {rounds}: wasm (wasmtime, v8) and cpu again"));
        for row in &mut rows {
            let dir = programs_dir.join(&row.name);
            let w = hloscope_bench(&hloscope, &dir, None, wasm_args)?;
            if let (Some(v), Some((run, _))) = (v8_bench(&hloscope, &dir, None)?, row.v8.as_mut()) {
                *run = run.min(num(&v["run_median_s"]));
            }
            let c = hloscope_bench(&hloscope, &dir, None, cpu_args)?;
            row.wasm_s = row.wasm_s.min(num(&w["run_median_s"]));
            row.cpu_s = row.cpu_s.min(num(&c["run_median_s"]));
        }
    }
    let mut t = String::new();
    if quick {
        t += "(quick mode: the suite at small sizes)\n\n";
    }
    t += "| program | wasmtime run | V8 run | cpu run | wasmtime speed / cpu | V8 speed / cpu | wasmtime compile | V8 compile | cpu compile | FLOP/B | memory-bound |\n";
    t += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|\n";
    for r in &rows {
        let bound = r.intensity < MEMORY_BOUND_FLOPS_PER_BYTE;
        let (v8_run, v8_compile) = r.v8.map_or(("host kernels".into(), "".into()), |(run, c)| (ms(run), ms(c)));
        t += &format!(
            "| {} | {} | {v8_run} | {} | {:.2}x | {} | {} | {v8_compile} | {} | {:.2} | {} |\n",
            r.name,
            ms(r.wasm_s),
            ms(r.cpu_s),
            r.ratio(),
            r.v8_ratio().map_or(String::new(), |x| format!("{x:.2}x")),
            ms(r.wasm_compile_s),
            ms(r.cpu_compile_s),
            r.intensity,
            if bound { "yes" } else { "no" }
        );
    }
    let bound = |r: &&WasmRow| r.intensity < MEMORY_BOUND_FLOPS_PER_BYTE;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    t += &format!(
        "| **geomean** | | | | **{:.2}x** (memory-bound: **{:.2}x**) | **{:.2}x** (memory-bound: **{:.2}x**) | | | | | |\n",
        geomean(rows.iter().map(WasmRow::ratio)),
        geomean(rows.iter().filter(bound).map(WasmRow::ratio)),
        geomean(rows.iter().filter_map(WasmRow::v8_ratio)),
        geomean(rows.iter().filter(bound).filter_map(WasmRow::v8_ratio))
    );
    t += &format!(
        "\nspeed / cpu: the native CPU target's run time over the WebAssembly target's, both on every core ({threads} \
threads: an instance per thread on one shared memory under wasmtime, a worker per thread in V8), so 1 is parity; V8 geomeans over the programs it ran (a program with host kernels \
runs only under wasmtime). Run: `hloscope bench --target wasm` (wasmtime), `--target wasm --engine v8` \
(Node.js, timed inside it with `performance.now`) and `--target cpu` on the inputs exported for the cpu suite, \
the median of timed runs, the best of {rounds} rounds that alternate them; every output matched XLA:CPU's \
within tolerance. Compile: parse to a ready executable (the engine's compile and instantiate included; not \
Node's start).\n"
    );
    std::fs::write(out.join("wasm.md"), &t).map_err(|e| format!("cannot write wasm.md: {e}"))?;
    if !quick {
        update_readme(&root.join("README.md"), &t, ("bench-wasm", "WebAssembly against the native CPU target"))?;
    }
    print!("{t}");
    progress(&format!("wrote {}/wasm.md", out.display()));
    Ok(())
}

/// Bytes in decimal units, three significant digits or so.
fn size(bytes: u64) -> String {
    match bytes as f64 {
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.1} kB", b / 1e3),
        b => format!("{b} B"),
    }
}

fn fusion_markdown(
    rows: &[FusionRow],
    skipped: &[(String, String)],
    device: &Value,
    quick: bool,
    rounds: usize,
) -> String {
    let text = |key: &str| device[key].as_str().unwrap_or("?").to_string();
    let mut t = String::new();
    if quick {
        t += "(quick mode: the suite at small sizes)\n\n";
    }
    t += "| program | fused run | unfused run | unfused/fused | kernels fused / unfused | bytes moved fused / unfused | FLOP/B | memory-bound |\n";
    t += "|---|---:|---:|---:|---:|---:|---:|:---:|\n";
    for r in rows {
        t += &format!(
            "| {} | {} | {} | {:.2}x | {} / {} | {} / {} | {:.2} | {} |\n",
            r.name,
            ms(r.fused_s),
            ms(r.unfused_s),
            r.speedup(),
            r.fused_kernels,
            r.unfused_kernels,
            size(r.fused_bytes),
            size(r.unfused_bytes),
            r.intensity(),
            if r.memory_bound() { "yes" } else { "no" }
        );
    }
    let bound = rows.iter().filter(|r| r.memory_bound());
    t += &format!(
        "| **geomean** | | | **{:.2}x** (memory-bound: **{:.2}x**) | | | | |\n",
        geomean(rows.iter().map(FusionRow::speedup)),
        geomean(bound.clone().map(FusionRow::speedup))
    );
    let losses: Vec<&str> = bound.filter(|r| r.speedup() <= 1.0).map(|r| r.name.as_str()).collect();
    t += &format!(
        "\nOn {} (backend {}, driver {}). unfused/fused above 1: the fused program is that many times faster. \
Run: `hloscope bench --target webgpu` (and `--fusion off`) on the inputs exported for the cpu suite, the median \
of plain runs of the kernels on the loaded inputs (one submission between host kernels), the best of {} rounds \
that alternate the two; both outputs matched XLA:CPU's within tolerance. Bytes moved: the cost model's, \
per run; FLOP/B: its FLOPs over the unfused bytes, memory-bound below {}. Fusion {}. Per-kernel times \
(`hloscope bench`'s rows) by {}.\n",
        text("adapter"),
        text("backend"),
        text("driver"),
        rounds,
        MEMORY_BOUND_FLOPS_PER_BYTE,
        if losses.is_empty() {
            "won on every memory-bound program".to_string()
        } else {
            format!("did not win on {}", losses.join(", "))
        },
        text("timing")
    );
    if !skipped.is_empty() {
        let list: Vec<String> = skipped.iter().map(|(name, why)| format!("{name} ({why})")).collect();
        t += &format!("\nNot run on this adapter: {}.\n", list.join("; "));
    }
    t
}

fn fusion_json(rows: &[FusionRow], skipped: &[(String, String)], device: &Value, quick: bool) -> String {
    let programs: Vec<Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "name": r.name,
                "fused_run_s": r.fused_s,
                "unfused_run_s": r.unfused_s,
                "speedup": r.speedup(),
                "fused_kernels": r.fused_kernels,
                "unfused_kernels": r.unfused_kernels,
                "fused_bytes": r.fused_bytes,
                "unfused_bytes": r.unfused_bytes,
                "flops": r.flops,
                "memory_bound": r.memory_bound(),
            })
        })
        .collect();
    let v = serde_json::json!({
        "quick": quick,
        "device": device,
        "programs": programs,
        "not_run": skipped.iter().map(|(name, why)| serde_json::json!({"name": name, "why": why})).collect::<Vec<_>>(),
        "geomean_speedup": geomean(rows.iter().map(FusionRow::speedup)),
        "geomean_speedup_memory_bound": geomean(rows.iter().filter(|r| r.memory_bound()).map(FusionRow::speedup)),
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}
