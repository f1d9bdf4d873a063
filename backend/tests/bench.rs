//! End-to-end tests of `hloscope bench`: the JSON line's fields and their relations, the
//! kernel rows against `explain`'s kernels, the table, random inputs by default, and
//! clear errors for inputs of the wrong shape; `--fusion` on the cpu and on webgpu, whose
//! rows are the plan's kernels (on the system's adapter: lavapipe where there is no GPU;
//! without one these tests fail, saying so).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hloscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hloscope")).args(args).output().unwrap()
}

fn corpus(program: &str, file: &str) -> String {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("corpus").join(program).join(file);
    p.display().to_string()
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// `hloscope bench --json` on a corpus program with its own inputs.
fn bench_json(program: &str, inputs: usize, target: &str) -> Value {
    let module = corpus(program, "module.mlir");
    let files: Vec<String> = (0..inputs).map(|i| corpus(program, &format!("in{i}.npy"))).collect();
    let mut args = vec!["bench", module.as_str(), "--target", target, "--json", "--iters", "5", "--warmup", "1"];
    for f in &files {
        args.extend(["--input", f.as_str()]);
    }
    let out = ok(hloscope(&args));
    assert_eq!(out.lines().count(), 1, "one JSON line: {out}");
    serde_json::from_str(&out).unwrap()
}

fn positive(v: &Value) -> f64 {
    let x = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!(x > 0.0 && x.is_finite(), "{x}");
    x
}

#[test]
fn cpu_json_has_every_field_and_explains_kernels() {
    for (program, inputs) in [("layernorm", 3), ("softmax", 1), ("mlp_gelu_tanh", 5)] {
        let j = bench_json(program, inputs, "cpu");
        assert_eq!(j["target"], "cpu");
        positive(&j["compile_s"]);
        // The peak resident memory holds at least the binary's own pages and the inputs.
        let peak = j["compile_peak_rss_bytes"].as_u64().expect("Linux reports VmHWM");
        assert!(peak > 1 << 20 && peak < 1 << 34, "{peak}");
        let median = positive(&j["run_median_s"]);
        let min = positive(&j["run_min_s"]);
        assert!(min <= median, "{program}: min {min} > median {median}");
        assert_eq!(j["iters"], 5);
        // The arena is whole 64-byte lines (small buffers are padded to one each).
        let arena = j["arena_bytes"].as_u64().unwrap();
        assert!(arena > 0 && arena.is_multiple_of(64) && j["buffer_bytes"].as_u64().unwrap() > 0, "{arena}");
        let kernels = j["kernels"].as_array().unwrap();
        let explain: Value =
            serde_json::from_str(&ok(hloscope(&["explain", &corpus(program, "module.mlir"), "--json"]))).unwrap();
        assert_eq!(kernels.len() as u64, explain["kernels"].as_u64().unwrap(), "{program}");
        let mut bytes = 0;
        for k in kernels {
            assert!(!k["name"].as_str().unwrap().is_empty());
            positive(&k["time_s"]);
            bytes += k["bytes"].as_u64().unwrap();
            k["flops"].as_u64().unwrap();
        }
        // Same cost model as explain's.
        assert_eq!(bytes, explain["bytes_moved"].as_u64().unwrap(), "{program}");
        // Kernels run inside the timed run: their median sum cannot exceed it by much.
        let sum: f64 = kernels.iter().map(|k| k["time_s"].as_f64().unwrap()).sum();
        assert!(sum <= 2.0 * median + 1e-3, "{program}: kernels {sum} vs run {median}");
    }
}

#[test]
fn kernel_bytes_and_flops_are_hand_checked() {
    // Two kernels: exp+negate fused over f32[256] reads 1024 B and writes 1024 B, and
    // costs 256 * 4 (exp, transcendental) + 256 (negate) = 1280 FLOPs; the dot
    // f32[8,16] x f32[16,4] reads 512 + 256 B, writes 128 B and costs 2*8*4*16 = 1024.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-hand");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.hlo");
    std::fs::write(
        &path,
        "HloModule m
ENTRY %main (x: f32[256], a: f32[8,16], w: f32[16,4]) -> (f32[256], f32[8,4]) {
  %x = f32[256] parameter(0)
  %a = f32[8,16] parameter(1)
  %w = f32[16,4] parameter(2)
  %e = f32[256] exponential(%x)
  %n = f32[256] negate(%e)
  %d = f32[8,4] dot(%a, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[256], f32[8,4]) tuple(%n, %d)
}",
    )
    .unwrap();
    let out = ok(hloscope(&["bench", &path.display().to_string(), "--json", "--iters", "3", "--random-inputs"]));
    let j: Value = serde_json::from_str(&out).unwrap();
    let mut rows: Vec<(u64, u64)> = j["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["bytes"].as_u64().unwrap(), k["flops"].as_u64().unwrap()))
        .collect();
    rows.sort();
    assert_eq!(rows, vec![(896, 1024), (2048, 1280)]);
    // How each runs: the dot through gemm; exp+negate in 4-lane vectors, its exp
    // strip-mined into the native block function where the CPU's vectors are wider.
    let mut codes: Vec<&str> = j["kernels"].as_array().unwrap().iter().map(|k| k["code"].as_str().unwrap()).collect();
    codes.sort();
    let wide = hloscope_core::targets::cpu::block_math::native_lanes() > 4;
    assert_eq!(codes, ["gemm", if wide { "simd 4x4 + native exp" } else { "simd 4x4" }]);
    // Parameters and results are pinned: 1024 + 512 + 256 + 1024 + 128 B, all on 64 B
    // boundaries, and nothing else (no temporaries).
    assert_eq!(j["buffer_bytes"], 2944);
    assert_eq!(j["arena_bytes"], 2944);
}

#[test]
fn interp_json_times_the_whole_run() {
    let j = bench_json("softmax", 1, "interp");
    assert_eq!(j["target"], "interp");
    positive(&j["compile_s"]);
    assert!(positive(&j["run_min_s"]) <= positive(&j["run_median_s"]));
    assert_eq!(j["kernels"].as_array().unwrap().len(), 0);
}

#[test]
fn table_and_random_inputs_by_default() {
    let text = ok(hloscope(&["bench", &corpus("softmax", "module.mlir"), "--iters", "3"]));
    assert!(text.starts_with("target cpu: compile "), "{text}");
    assert!(text.contains("run: median ") && text.contains("over 3 runs"), "{text}");
    let header = text.lines().find(|l| l.starts_with("kernel")).expect("a kernel table");
    for col in ["time", "%", "GB/s", "GFLOP/s", "code"] {
        assert!(header.split_whitespace().any(|w| w == col), "{header}");
    }
}

#[test]
fn outputs_are_written_and_match_run() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-out");
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.display().to_string();
    let input = corpus("softmax", "in0.npy");
    ok(hloscope(&["bench", &corpus("softmax", "module.mlir"), "--iters", "2", "--input", &input, "--out-dir", &d]));
    let run_dir = dir.join("run");
    let r = run_dir.display().to_string();
    ok(hloscope(&["run", &corpus("softmax", "module.mlir"), "--target", "cpu", "--input", &input, "--out-dir", &r]));
    assert_eq!(std::fs::read(dir.join("out0.npy")).unwrap(), std::fs::read(run_dir.join("out0.npy")).unwrap());
}

#[test]
fn wrong_inputs_are_clear_errors() {
    // softmax takes f32[4,10]; layernorm's first input is f32[4,16].
    let o = hloscope(&["bench", &corpus("softmax", "module.mlir"), "--input", &corpus("layernorm", "in0.npy")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: ") && err.contains("parameter 0") && !err.contains("panicked"), "{err}");
    let o = hloscope(&["bench", &corpus("softmax", "module.mlir"), "--iters", "0"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn kernels_inside_a_while_loop_get_rows_with_their_calls() {
    // i counts 0..5: the body runs 5 times, the condition 6 (the last one says stop).
    // Each body step scales x (f32[64]) by 0.5 and adds its sine; the condition is one
    // compare. The loop's row comes first, then its condition's and body's rows.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-while");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.hlo");
    std::fs::write(
        &path,
        "HloModule m
%cond (s: (s32[], f32[64])) -> pred[] {
  %s = (s32[], f32[64]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[64])) -> (s32[], f32[64]) {
  %s = (s32[], f32[64]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[64] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %half = f32[] constant(0.5)
  %h = f32[64] broadcast(%half), dimensions={}
  %m = f32[64] multiply(%x, %h)
  %sn = f32[64] sine(%x)
  %y = f32[64] add(%m, %sn)
  ROOT %t = (s32[], f32[64]) tuple(%next, %y)
}
ENTRY %main (x: f32[64]) -> f32[64] {
  %x = f32[64] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[64]) tuple(%zero, %x)
  %loop = (s32[], f32[64]) while(%init), condition=%cond, body=%body
  ROOT %r = f32[64] get-tuple-element(%loop), index=1
}",
    )
    .unwrap();
    let file = path.display().to_string();
    let out = ok(hloscope(&["bench", &file, "--json", "--iters", "3", "--warmup", "1", "--random-inputs"]));
    let j: Value = serde_json::from_str(&out).unwrap();
    let kernels = j["kernels"].as_array().unwrap();
    let names: Vec<&str> = kernels.iter().map(|k| k["name"].as_str().unwrap()).collect();
    let lp = kernels.iter().position(|k| k["name"].as_str().unwrap().starts_with("loop")).expect("the loop's row");
    let loop_name = names[lp];
    assert_eq!(kernels[lp]["calls"], 1, "{names:?}");
    let (mut body, mut cond) = (Vec::new(), Vec::new());
    for (at, k) in kernels.iter().enumerate() {
        let name = k["name"].as_str().unwrap();
        positive(&k["time_s"]);
        if let Some(rest) = name.strip_prefix(&format!("{loop_name}/")) {
            assert!(at > lp, "{names:?}: nested rows come after their loop's");
            let calls = k["calls"].as_u64().unwrap();
            if rest.starts_with("body/") {
                assert_eq!(calls, 5, "{name}");
                body.push(k);
            } else {
                assert!(rest.starts_with("cond/"), "{name}");
                assert_eq!(calls, 6, "{name}");
                cond.push(k);
            }
        }
    }
    // Per run (calls times the cost model's per call): the body's x*0.5 + sin(x) over
    // f32[64] reads and writes 256 B and costs 64 * (1 + 4 + 1) = 384 FLOPs (sine counts
    // 4), 5 times; its i + 1 reads and writes 4 B, 1 FLOP, 5 times; the condition's
    // compare reads 4 B and writes a 1-byte pred, 1 FLOP, 6 times.
    let cost = |ks: &[&Value]| {
        let mut v: Vec<(u64, u64)> =
            ks.iter().map(|k| (k["bytes"].as_u64().unwrap(), k["flops"].as_u64().unwrap())).collect();
        v.sort();
        v
    };
    assert_eq!(cost(&body), vec![(40, 5), (2560, 1920)]);
    assert_eq!(cost(&cond), vec![(30, 6)]);

    // The table: a calls column, and the nested rows named by path.
    let text = ok(hloscope(&["bench", &file, "--iters", "2", "--random-inputs"]));
    let header = text.lines().find(|l| l.starts_with("kernel")).expect("a kernel table");
    assert!(header.split_whitespace().any(|w| w == "calls"), "{header}");
    let body_line = text.lines().find(|l| l.starts_with(&format!("{loop_name}/body/"))).expect("a body row");
    assert_eq!(body_line.split_whitespace().nth(1), Some("5"), "{body_line}");
}

/// Writes `text` as `name.hlo` in a scratch folder of its own; its path.
fn hlo_file(name: &str, text: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-modules");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.hlo"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// exp, multiply and add over f32[65536]: one loop kernel fused, three with `--fusion
/// off` (nothing for the simplifier to fold).
const CHAIN: &str = "HloModule m
ENTRY %main (x: f32[65536], y: f32[65536]) -> f32[65536] {
  %x = f32[65536] parameter(0)
  %y = f32[65536] parameter(1)
  %e = f32[65536] exponential(%x)
  %m = f32[65536] multiply(%e, %y)
  ROOT %a = f32[65536] add(%m, %x)
}";

/// The kernels `compile --emit wgsl` lists (on the device or the host) with `fusion`.
fn wgsl_kernels(module: &str, fusion: &str) -> usize {
    let wgsl = ok(hloscope(&["compile", "--emit", "wgsl", "--fusion", fusion, module]));
    wgsl.lines().filter(|l| l.starts_with("// ---- kernel ")).count()
}

fn bench_webgpu(module: &str, fusion: &str) -> Value {
    let args = ["bench", module, "--target", "webgpu", "--fusion", fusion, "--json", "--iters", "3", "--warmup", "1"];
    let out = ok(hloscope(&args));
    assert_eq!(out.lines().count(), 1, "one JSON line: {out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// On webgpu (lavapipe where there is no GPU): one row per plan kernel, fused and with
/// `--fusion off`, each timed by the method the report names, with the adapter.
#[test]
fn webgpu_bench_times_each_kernel_fused_and_unfused() {
    let module = hlo_file("chain", CHAIN);
    let mut bytes = Vec::new();
    for (fusion, want) in [("", 1), ("off", 3)] {
        let j = bench_webgpu(&module, fusion);
        assert_eq!(j["target"], "webgpu");
        assert_eq!(j["fusion"], fusion);
        let timing = j["timing"].as_str().unwrap();
        assert!(["gpu timestamps", "submit and wait per kernel"].contains(&timing), "{timing}");
        for key in ["adapter", "backend", "driver"] {
            assert!(!j[key].as_str().unwrap().is_empty(), "{key}: {j}");
        }
        assert_eq!(j["iters"], 3);
        assert!(positive(&j["run_min_s"]) <= positive(&j["run_median_s"]));
        let kernels = j["kernels"].as_array().unwrap();
        assert_eq!(kernels.len(), want, "--fusion {fusion:?}: {j}");
        assert_eq!(kernels.len(), wgsl_kernels(&module, fusion), "--fusion {fusion:?}");
        for k in kernels {
            assert!(k["time_s"].as_f64().unwrap() >= 0.0, "{k}");
            assert_eq!(k["code"], "wgsl", "{k}");
            assert_eq!(k["on_host"], false, "{k}");
        }
        // The arena is whole 256-byte binding steps.
        assert!(j["arena_bytes"].as_u64().unwrap().is_multiple_of(256));
        bytes.push(kernels.iter().map(|k| k["bytes"].as_u64().unwrap()).sum::<u64>());
    }
    // Fused: x and y read once, the sum written once (3 x 256 KiB); unfused, x is read
    // twice and the two temporaries are written and read again (8 x 256 KiB).
    assert_eq!(bytes, [3 << 18, 8 << 18]);
}

/// A sort runs on the host: its row says so, between the device kernels' rows, and the
/// table heads with the adapter and the timing method.
#[test]
fn webgpu_bench_marks_host_kernels() {
    let module = hlo_file(
        "sorted",
        "HloModule m
%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}
ENTRY %main (x: f32[1024]) -> f32[1024] {
  %x = f32[1024] parameter(0)
  %e = f32[1024] exponential(%x)
  %s = f32[1024] sort(%e), dimensions={0}, to_apply=%lt
  ROOT %n = f32[1024] negate(%s)
}",
    );
    let j = bench_webgpu(&module, "");
    let rows: Vec<(&str, bool)> = j["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["code"].as_str().unwrap(), k["on_host"].as_bool().unwrap()))
        .collect();
    assert_eq!(rows, [("wgsl", false), ("interpreter (host)", true), ("wgsl", false)], "{j}");
    assert_eq!(rows.len(), wgsl_kernels(&module, ""));
    let text = ok(hloscope(&["bench", &module, "--target", "webgpu", "--iters", "2"]));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("target webgpu: compile "), "{text}");
    assert!(lines[1].starts_with("adapter: ") && lines[2].starts_with("kernel times: "), "{text}");
    assert!(text.contains("interpreter (host)"), "{text}");
}

/// `run --target webgpu -v` names every kernel with its time and where it ran.
#[test]
fn webgpu_run_verbose_times_each_kernel() {
    let module = hlo_file("chain-run", CHAIN);
    let o = hloscope(&["run", &module, "--target", "webgpu", "--random-inputs", "-v"]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    ok(o);
    assert!(
        err.contains("kernels timed by gpu timestamps:") || err.contains("kernels timed by submit and wait"),
        "{err}"
    );
    let kernels: Vec<&str> = err.lines().filter(|l| l.starts_with("webgpu:   kernel ")).collect();
    assert_eq!(kernels.len(), 1, "{err}");
    assert!(kernels[0].contains(" on the device: ") && kernels[0].ends_with(" ms"), "{err}");
}

/// `--fusion off` on the cpu: the rows are `explain --fusion off`'s kernels, more than
/// fused; a bad knob is refused as `compile` refuses it.
#[test]
fn cpu_bench_takes_the_fusion_knobs() {
    let module = corpus("layernorm", "module.mlir");
    let count = |fusion: &str| {
        let out = ok(hloscope(&["bench", &module, "--fusion", fusion, "--json", "--iters", "2", "--random-inputs"]));
        let j: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(j["fusion"], fusion);
        let explain: Value =
            serde_json::from_str(&ok(hloscope(&["explain", &module, "--fusion", fusion, "--json"]))).unwrap();
        let n = j["kernels"].as_array().unwrap().len();
        assert_eq!(n as u64, explain["kernels"].as_u64().unwrap(), "--fusion {fusion:?}");
        n
    };
    let (fused, unfused) = (count(""), count("off"));
    assert!(fused < unfused, "{fused} fused vs {unfused} unfused kernels");
    for (args, needle) in [
        (vec!["--fusion", "sideways"], "--fusion `sideways`: unknown fusion knob `sideways`"),
        (vec!["--target", "interp", "--fusion", "off"], "--fusion is for the compiled targets"),
    ] {
        let o = hloscope(&[&["bench", module.as_str()][..], &args].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(needle), "{err}");
    }
}

/// `--threads N` runs the WebAssembly kernels on N instances over one shared memory: the
/// report says how many, and the split dots and loops give the bytes of one thread.
#[test]
fn wasm_bench_threads_give_one_threads_bytes() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-wasm-threads");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Big enough that both kernels split: a GEMM with ragged tiles and a relu epilogue,
    // and 76,800 tanh's (the split starts at 65,536 iterations).
    let module = dir.join("split.mlir").display().to_string();
    std::fs::write(
        &module,
        r#"func.func public @main(%a: tensor<300x256xf32>, %b: tensor<256x200xf32>) -> (tensor<300x200xf32>, tensor<300x256xf32>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<300x256xf32>, tensor<256x200xf32>) -> tensor<300x200xf32>
  %z = stablehlo.constant dense<0.0> : tensor<300x200xf32>
  %1 = stablehlo.maximum %0, %z : tensor<300x200xf32>
  %2 = stablehlo.tanh %a : tensor<300x256xf32>
  return %1, %2 : tensor<300x200xf32>, tensor<300x256xf32>
}"#,
    )
    .unwrap();
    let run = |target: &str, threads: &str| {
        let out = dir.join(format!("{target}{threads}"));
        let mut args = vec!["bench", &module, "--target", target, "--json", "--iters", "2"];
        args.extend(["--out-dir", out.to_str().unwrap()]);
        if target == "wasm" {
            args.extend(["--threads", threads]);
        }
        let json: Value = serde_json::from_str(&ok(hloscope(&args))).unwrap();
        if target == "wasm" {
            assert_eq!(json["threads"].as_u64().unwrap().to_string(), threads, "{json}");
        }
        ["out0.npy", "out1.npy"].map(|f| std::fs::read(out.join(f)).unwrap())
    };
    let one = run("wasm", "1");
    assert_eq!(run("wasm", "3"), one, "three threads compute one thread's bytes");
    // And the dot is the interpreter's, bit for bit (every output sums in k order).
    assert_eq!(run("interp", "")[0], one[0]);
    let table = ok(hloscope(&["bench", &module, "--target", "wasm", "--threads", "2", "--iters", "1"]));
    assert!(table.starts_with("target wasm on 2 threads: compile "), "{table}");
    for (args, needle) in [
        (vec!["--threads", "2"], "--threads is for --target wasm"),
        (vec!["--target", "wasm", "--threads", "0"], "--threads"),
        (vec!["--target", "wasm", "--threads", "65"], "--threads"),
    ] {
        let o = hloscope(&[&["bench", module.as_str()][..], &args].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(needle), "{err}");
    }
}

/// `--engine v8` runs the WebAssembly target's module in Node.js: the same result bytes
/// as wasmtime's, a time for every kernel, the engine named; programs with host kernels
/// and other targets are refused with the reason.
#[test]
fn wasm_bench_in_v8_gives_wasmtimes_bytes() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-v8");
    let _ = std::fs::remove_dir_all(&dir);
    let module = corpus("transformer_block", "module.mlir");
    let run = |engine: &str| {
        let out = dir.join(engine).display().to_string();
        let args =
            ["bench", &module, "--target", "wasm", "--engine", engine, "--json", "--iters", "3", "--out-dir", &out];
        let json: Value = serde_json::from_str(&ok(hloscope(&args))).unwrap();
        (json, std::fs::read(dir.join(engine).join("out0.npy")).unwrap())
    };
    let ((v8, v8_out), (wasmtime, wasmtime_out)) = (run("v8"), run("wasmtime"));
    assert_eq!(v8_out, wasmtime_out, "V8 and wasmtime compute the same bytes");
    assert!(v8["adapter"].as_str().unwrap().starts_with("V8 (Node.js v"), "{v8}");
    assert!(wasmtime.get("adapter").is_none(), "{wasmtime}");
    positive(&v8["run_median_s"]);
    positive(&v8["compile_s"]);
    let kernels = v8["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), wasmtime["kernels"].as_array().unwrap().len());
    for k in kernels {
        assert!(k["code"].as_str().unwrap().starts_with("wasm "), "{k}");
        assert!(k["time_s"].as_f64().unwrap() >= 0.0, "{k}");
    }

    let o = hloscope(&["bench", &corpus("sort_argsort", "module.mlir"), "--target", "wasm", "--engine", "v8"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("kernels are all WebAssembly") && err.contains("run on the host"), "{err}");
    let o = hloscope(&["bench", &module, "--engine", "v8"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--engine chooses the engine of --target wasm"));
}
