//! End-to-end tests of `hloscope compile` and `hloscope explain`, driving the built
//! binary on the bundled examples (`examples/dense_relu.mlir`: relu(x @ W + b);
//! `examples/shared_exp.mlir`: an exp read by a reduction and a transpose).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hloscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hloscope")).args(args).output().unwrap()
}

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("examples").join(name).display().to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("compile-explain-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Standard output of a run that must succeed.
fn ok(o: Output) -> String {
    assert!(o.status.success(), "failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn fails_with(o: Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: ") && !err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks `{n}`:\n{err}");
    }
}

/// The decision rows of `explain`'s table whose cells include every one of `cells`.
fn rows_with<'a>(text: &'a str, cells: &[&str]) -> Vec<&'a str> {
    text.lines().filter(|l| cells.iter().all(|c| l.split_whitespace().any(|w| w == *c))).collect()
}

#[test]
fn explain_says_bias_add_and_relu_fused_into_the_dot_epilogue() {
    let text = ok(hloscope(&["explain", &example("dense_relu.mlir")]));
    // The dot is the hero; the add takes it as an epilogue, the relu (maximum) takes the add.
    assert_eq!(rows_with(&text, &["dot.3", "add.5", "fused", "epilogue-fusion"]).len(), 1, "{text}");
    assert_eq!(rows_with(&text, &["add.5", "maximum.7", "fused", "loop-fusion"]).len(), 1, "{text}");
    assert_eq!(rows_with(&text, &["broadcast.4", "add.5", "fused", "loop-fusion"]).len(), 1, "{text}");
    assert!(text.contains("fusion decisions: 3 (3 taken, 0 refused)"), "{text}");
    // Cost: dot, broadcast, add, maximum before; one kOutput fusion after.
    assert!(rows_with(&text, &["before", "4"]).len() == 1 && rows_with(&text, &["after", "1"]).len() == 1, "{text}");
    assert!(text.contains("fusion(kOutput)"), "{text}");
}

#[test]
fn explain_says_why_a_shared_exp_is_not_duplicated() {
    let text = ok(hloscope(&["explain", &example("shared_exp.mlir")]));
    let refused = rows_with(&text, &["exponential.1", "refused", "refuse-expensive-duplication"]);
    assert_eq!(refused.len(), 2, "{text}");
    assert!(refused[0]
        .contains("is expensive and its value is needed by 2 kernels; fusing it into each would compute it 2 times"));
    // Instead both readers share one kernel with it (multi-output fusion): one kernel.
    assert_eq!(rows_with(&text, &["exponential.1", "fused", "multi-output-fusion"]).len(), 2, "{text}");
    // Without duplication or multi-output fusion the exp stays a kernel of its own.
    let text = ok(hloscope(&["explain", "--fusion", "no-multi-output", &example("shared_exp.mlir")]));
    assert!(rows_with(&text, &["after", "3"]).len() == 1, "{text}");
}

#[test]
fn explain_json_has_the_totals_decisions_and_kernels() {
    let out = ok(hloscope(&["explain", "--json", &example("dense_relu.mlir")]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["profile"], "H100 SXM");
    assert_eq!(v["kernels"], 1);
    // Reads x 4x8, W 8x16, b 16 and the zero 4x16 splat (f32): 128+512+64+256; writes 4x16.
    assert_eq!(v["bytes_moved"], 960 + 256);
    // 2*4*16*8 (dot) + 64 (add) + 64 (maximum).
    assert_eq!(v["flops"], 1152);
    // Memory bound: 1216 B / 3.35 TB/s, plus H100's 4 us launch overhead.
    let t = v["est_time_s"].as_f64().unwrap();
    assert!((t - (1216.0 / 3350e9 + 4e-6)).abs() < 1e-15, "{t}");
    assert_eq!(v["before"]["kernels"], 4);
    let decisions = v["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 3);
    let epi = decisions.iter().find(|d| d["rule"] == "epilogue-fusion").unwrap();
    assert_eq!(
        (epi["producer"].as_str(), epi["consumer"].as_str(), epi["taken"].as_bool()),
        (Some("dot.3"), Some("add.5"), Some(true))
    );
    assert!(epi["reason"].as_str().unwrap().contains("never written to memory"));
    assert_eq!(epi["bytes_saved"], 512);
    let k = &v["kernel_costs"][0];
    assert_eq!((k["op"].as_str(), k["fusion_kind"].as_str()), (Some("fusion"), Some("kOutput")));
    assert_eq!(
        (k["bytes_read"].as_u64(), k["bytes_written"].as_u64(), k["flops"].as_u64()),
        (Some(960), Some(256), Some(1152))
    );
    assert_eq!(k["memory_bound"], true);

    // --no-passes prices the module as written: 4 kernels, each reading and writing.
    let v: serde_json::Value = serde_json::from_str(&ok(hloscope(&[
        "explain",
        "--json",
        "--no-passes",
        "--profile",
        "a100",
        &example("dense_relu.mlir"),
    ])))
    .unwrap();
    assert_eq!((v["kernels"].as_u64(), v["decisions"].as_array().unwrap().len()), (Some(4), 0));
    assert_eq!(v["profile"], "A100 SXM 80GB");
    // dot 128+512 -> 256, broadcast 64 -> 256, add 256+256 -> 256, maximum 256+256 -> 256.
    assert_eq!(v["bytes_moved"], (640 + 256) + (64 + 256) + (512 + 256) + (512 + 256));
}

#[test]
fn dump_dir_writes_every_stage_in_order() {
    let dir = scratch("dump");
    ok(hloscope(&["compile", &example("dense_relu.mlir"), "--dump-dir", dir.to_str().unwrap()]));
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    let stages = [
        "00-input",
        "01-inline",
        "02-simplify",
        "03-transpose-folding",
        "04-dot-strength-reduction",
        "05-dot-merger",
        "06-constant-fold",
        "07-cse",
        "08-dce",
        "09-fusion",
        "10-layout-assignment",
        "11-schedule",
    ];
    let want: Vec<String> = stages.iter().flat_map(|s| ["dot", "hlo", "json"].map(|e| format!("{s}.{e}"))).collect();
    assert_eq!(names, want);
    for s in stages {
        let hlo = std::fs::read_to_string(dir.join(format!("{s}.hlo"))).unwrap();
        let m = hloscope_core::parse::parse_module(&hlo).unwrap_or_else(|e| panic!("{s}.hlo: {e:?}"));
        hloscope_core::verify::verify(&m).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{s}.json"))).unwrap()).unwrap();
        assert_eq!(json["pass"], s[3..]);
        assert!(json["graph"]["nodes"].as_array().unwrap().len() >= 4);
        assert!(json["changes"]["added"].is_array() && json["rewrites"].is_array() && json["decisions"].is_array());
    }
    let last: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("09-fusion.json")).unwrap()).unwrap();
    assert_eq!(last["cost"]["kernels"], 1);
    assert_eq!(last["decisions"].as_array().unwrap().len(), 3);
    let dot = std::fs::read_to_string(dir.join("09-fusion.dot")).unwrap();
    assert_eq!(dot.matches("subgraph cluster_").count(), 1);
    assert!(dot.contains("\"dot.3\\ndot f32[4,16]\""), "{dot}");
    let dot = std::fs::read_to_string(dir.join("00-input.dot")).unwrap();
    assert_eq!(dot.matches("subgraph cluster_").count(), 0);
}

/// `--emit stablehlo` prints a module that the StableHLO parser reads back and that
/// computes the same values as the input.
#[test]
fn emitted_stablehlo_parses_and_runs_to_the_same_values() {
    for name in ["dense_relu.mlir", "shared_exp.mlir"] {
        let dir = scratch(&format!("emit-{name}"));
        let text = ok(hloscope(&["compile", "--emit", "stablehlo", &example(name)]));
        assert_eq!(hloscope_core::parse::detect_format(&text), hloscope_core::parse::Format::StableHlo);
        hloscope_core::parse::parse_module(&text).unwrap();
        assert!(text.contains("func.call @fused_computation"), "{text}");
        let emitted = dir.join("emitted.mlir");
        std::fs::write(&emitted, &text).unwrap();
        for (src, out) in [(example(name), dir.join("before")), (emitted.display().to_string(), dir.join("after"))] {
            ok(hloscope(&["run", "--random-inputs", "--seed", "7", "--out-dir", out.to_str().unwrap(), &src]));
        }
        let outs = if name == "dense_relu.mlir" { 1 } else { 2 };
        for i in 0..outs {
            let f = format!("out{i}.npy");
            let (a, b) = (
                std::fs::read(dir.join("before").join(&f)).unwrap(),
                std::fs::read(dir.join("after").join(&f)).unwrap(),
            );
            assert_eq!(a, b, "{name}: {f} differs");
        }
    }
}

#[test]
fn compile_emits_hlo_and_json_and_honours_knobs() {
    let hlo = ok(hloscope(&["compile", &example("dense_relu.mlir")]));
    assert!(hlo.contains("kind=kOutput"), "{hlo}");
    let unfused = ok(hloscope(&["compile", "--fusion", "off", &example("dense_relu.mlir")]));
    assert!(!unfused.contains("fusion(") && unfused.contains("maximum("), "{unfused}");
    let no_epilogue = ok(hloscope(&["compile", "--fusion", "no-epilogue", &example("dense_relu.mlir")]));
    assert!(no_epilogue.contains("kind=kLoop") && !no_epilogue.contains("kind=kOutput"), "{no_epilogue}");
    let never = ok(hloscope(&["explain", "--fusion", "never=dot.3:add.5", &example("dense_relu.mlir")]));
    assert_eq!(rows_with(&never, &["dot.3", "add.5", "refused"]).len(), 1, "{never}");
    let json: serde_json::Value = serde_json::from_str(&ok(hloscope(&[
        "compile",
        "--emit",
        "json",
        "--pipeline",
        "inline,fusion",
        &example("dense_relu.mlir"),
    ])))
    .unwrap();
    let passes: Vec<&str> = json.as_array().unwrap().iter().map(|s| s["pass"].as_str().unwrap()).collect();
    assert_eq!(passes, ["input", "inline", "fusion"]);
    let none: serde_json::Value =
        serde_json::from_str(&ok(hloscope(&["compile", "--emit", "json", "--no-passes", &example("dense_relu.mlir")])))
            .unwrap();
    assert_eq!(none.as_array().unwrap().len(), 1);
}

/// `--emit plan` prints the kernel plan: the dense layer's GEMM call, then its bias and
/// relu epilogue as one loop kernel reading the GEMM's result, with the arena.
#[test]
fn compile_emits_the_kernel_plan() {
    let plan = ok(hloscope(&["compile", "--emit", "plan", &example("dense_relu.mlir")]));
    assert!(plan.starts_with("plan for cpu (library dot, row chains, arena aligned to 64 B)\n"), "{plan}");
    assert!(plan.contains("library(dot)") && plan.contains("gemm 1 x [4x8] * [8x16]"), "{plan}");
    let epilogue = plan.split("\n  1 %fusion").nth(1).unwrap_or_else(|| panic!("no second kernel: {plan}"));
    assert!(epilogue.split_once('\n').unwrap().0.contains(": loop ("), "{plan}");
    assert!(epilogue.contains("= add ") && epilogue.contains("= maximum "), "{plan}");
    assert!(plan.lines().last().unwrap().starts_with("arena "), "{plan}");
    let unfused = ok(hloscope(&["compile", "--emit", "plan", "--fusion", "off", &example("dense_relu.mlir")]));
    assert_eq!(
        unfused.lines().filter(|l| l.starts_with("  ") && !l.starts_with("   ") && l.contains(" -> ")).count(),
        4,
        "{unfused}"
    );
}

/// `--emit wgsl` prints one compute shader per kernel on the device (the dense layer's
/// dot summed with its bias and relu after the sum, in one shader), and `run --target
/// webgpu` (lavapipe where there is no GPU) gives the interpreter's results, naming the
/// adapter on standard error.
#[test]
fn webgpu_emits_wgsl_and_runs_like_the_interpreter() {
    let wgsl = ok(hloscope(&["compile", "--emit", "wgsl", &example("dense_relu.mlir")]));
    assert_eq!(wgsl.matches("@compute @workgroup_size(64)").count(), 1, "{wgsl}");
    assert!(wgsl.contains("// ---- kernel 0 %fusion") && wgsl.contains("var acc0_0: f32"), "{wgsl}");
    assert!(wgsl.contains("%dot.3.part, %param_2.11, %add.5, %param_3.12, %maximum.7"), "{wgsl}");
    fails_with(
        hloscope(&["compile", "--emit", "wgsl", "--target", "cpu", &example("dense_relu.mlir")]),
        &["--target webgpu"],
    );
    for name in ["dense_relu.mlir", "mlp.mlir", "shared_exp.mlir"] {
        let dir = scratch(&format!("webgpu-{name}"));
        let run = |target: &str| {
            let out = dir.join(target);
            let o = hloscope(&[
                "run",
                "--random-inputs",
                "--seed",
                "3",
                "--target",
                target,
                "--out-dir",
                out.to_str().unwrap(),
                &example(name),
            ]);
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            ok(o);
            (out, err)
        };
        let ((gpu, err), (interp, _)) = (run("webgpu"), run("interp"));
        assert!(err.starts_with("webgpu: ") && err.contains("kernels on the device"), "{err}");
        for i in 0.. {
            let f = format!("out{i}.npy");
            let Ok(want) = std::fs::read(interp.join(&f)) else { break };
            let got = std::fs::read(gpu.join(&f)).unwrap();
            let values = |bytes: &[u8]| {
                let a = hloscope_core::npy::read(bytes).unwrap();
                a.to_literal(a.elem).unwrap().to_f64_vec()
            };
            let (g, w) = (values(&got), values(&want));
            assert_eq!(g.len(), w.len());
            for (a, b) in g.iter().zip(&w) {
                assert!((a - b).abs() <= 1e-5 + 1e-4 * b.abs(), "{name} {f}: {a} vs {b}");
            }
        }
    }
}

#[test]
fn bad_pipeline_knob_or_profile_exits_2_with_a_clear_message() {
    let m = example("dense_relu.mlir");
    fails_with(
        hloscope(&["compile", "--pipeline", "inline,fuse", &m]),
        &["--pipeline", "unknown pass `fuse`", "known: inline"],
    );
    fails_with(hloscope(&["compile", "--pipeline", "simplify{rounds=2}", &m]), &["simplify has no knob `rounds`"]);
    fails_with(
        hloscope(&["explain", "--fusion", "max-size=big", &m]),
        &["--fusion", "max-size takes a whole number, not `big`"],
    );
    fails_with(hloscope(&["explain", "--fusion", "turbo", &m]), &["unknown fusion knob `turbo`", "no-multi-output"]);
    fails_with(
        hloscope(&["explain", "--profile", "tpu-v5", &m]),
        &["unknown profile `tpu-v5`", "a100, h100, h200, l4, rtx4090, cpu", "or `measured`"],
    );
    fails_with(hloscope(&["compile", "no/such/file.mlir"]), &["cannot read module no/such/file.mlir"]);
}

#[test]
fn measured_profile_probes_this_cpu() {
    let json = |profile: &str| -> serde_json::Value {
        serde_json::from_str(&ok(hloscope(&["explain", "--json", "--profile", profile, &example("dense_relu.mlir")])))
            .unwrap()
    };
    let measured = json("measured");
    let h100 = json("h100");
    assert_eq!(measured["profile"], "measured (this CPU)");
    assert_eq!(measured["kernels"], h100["kernels"], "the profile prices kernels, it does not change them");
    // One fused kernel moving 1216 bytes: above zero on any machine, far below a
    // millisecond unless the probe measured nonsense; and not H100's 4 us launch cost.
    let t = measured["est_time_s"].as_f64().unwrap();
    assert!(t > 0.0 && t < 1e-3, "estimated {t} s");
    assert_ne!(measured["est_time_s"], h100["est_time_s"]);
}

/// `--emit cuda` prints one translation unit with a function per kernel on the device,
/// `--emit ptx` and `--emit sass` compile it (NVRTC from `$HLOSCOPE_CUDA_VENV`, which
/// `cargo xtask test` sets), and `run --target cuda` gives the interpreter's results
/// where a CUDA driver and device are, else says why not in one line (exit 2).
#[test]
fn cuda_emits_c_ptx_and_sass_and_runs_or_says_why_not() {
    let module = example("dense_relu.mlir");
    let c = ok(hloscope(&["compile", "--target", "cuda", "--emit", "cuda", &module]));
    let on_device = c.lines().filter(|l| l.starts_with("// ---- kernel") && !l.contains("on the host")).count();
    assert!(on_device >= 1, "{c}");
    assert_eq!(c.matches("extern \"C\" __global__").count(), on_device, "{c}");
    fails_with(hloscope(&["compile", "--emit", "cuda", &module]), &["--target cuda"]);
    let ptx = ok(hloscope(&["compile", "--target", "cuda", "--emit", "ptx", "--arch", "90", &module]));
    assert!(ptx.contains(".target sm_90") && ptx.contains(".entry hs_k0("), "{ptx}");
    let dir = scratch("cuda");
    let file = dir.join("k.sass");
    let wrote = ok(hloscope(&["compile", "--target", "cuda", "--emit", "sass", "-o", file.to_str().unwrap(), &module]));
    assert!(wrote.starts_with("wrote "), "{wrote}");
    let sass = std::fs::read_to_string(&file).unwrap();
    assert!(sass.contains("Function : hs_k0"), "{sass}");
    let run = |target: &str| {
        let out = dir.join(target);
        let o = hloscope(&["run", "--random-inputs", "--target", target, "--out-dir", out.to_str().unwrap(), &module]);
        (o, out)
    };
    match hloscope_core::targets::cuda::runtime::unavailable() {
        Some(why) => {
            let (o, _) = run("cuda");
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            assert_eq!(err.lines().count(), 1, "{err}");
            fails_with(o, &["--target cuda", &why]);
        }
        None => {
            let ((o, gpu), (i, interp)) = (run("cuda"), run("interp"));
            ok(o);
            ok(i);
            let values = |path: PathBuf| {
                let a = hloscope_core::npy::read(&std::fs::read(path).unwrap()).unwrap();
                a.to_literal(a.elem).unwrap().to_f64_vec()
            };
            let (g, w) = (values(gpu.join("out0.npy")), values(interp.join("out0.npy")));
            assert_eq!(g.len(), w.len());
            for (a, b) in g.iter().zip(&w) {
                assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "cuda {a} vs interpreter {b}");
            }
        }
    }
}

/// `--emit wat` prints the WebAssembly target's module as text, `--emit wasm -o FILE`
/// writes the binary, and `run --target wasm` (wasmtime) gives the interpreter's results.
#[test]
fn wasm_emits_wat_and_a_binary_and_runs_like_the_interpreter() {
    let module = example("dense_relu.mlir");
    let wat = ok(hloscope(&["compile", "--target", "wasm", "--emit", "wat", &module]));
    assert!(
        wat.contains("(module") && wat.contains("(export \"memory\"") && wat.contains("(export \"kernel\""),
        "{wat}"
    );
    assert!(wat.starts_with(";; kernel 0 %"), "{wat}");
    // Its dot calls the GEMM in the library it imports, printed after it.
    let (module_text, library_text) = wat.split_once(";; the GEMM library this module imports").unwrap();
    assert!(module_text.contains("(import \"gemm\" \"table\"") && module_text.contains("call_indirect"), "{wat}");
    assert!(library_text.contains("(export \"table\"") && library_text.contains("f32x4.mul"), "{wat}");
    fails_with(hloscope(&["compile", "--emit", "wat", &module]), &["--target wasm"]);
    let dir = scratch("wasm");
    let file = dir.join("m.wasm");
    let wrote = ok(hloscope(&["compile", "--target", "wasm", "--emit", "wasm", "-o", file.to_str().unwrap(), &module]));
    assert!(wrote.starts_with("wrote ") && wrote.contains("m.gemm.wasm"), "{wrote}");
    assert!(std::fs::read(&file).unwrap().starts_with(b"\0asm"));
    // Its dot calls the GEMM library, written beside it.
    let library = std::fs::read(dir.join("m.gemm.wasm")).unwrap();
    assert_eq!(library, hloscope_core::targets::wasm::gemm::library(false));
    let run = |target: &str| {
        let out = dir.join(target);
        let o = hloscope(&["run", "--random-inputs", "--target", target, "--out-dir", out.to_str().unwrap(), &module]);
        (o, out)
    };
    let ((o, wasm), (i, interp)) = (run("wasm"), run("interp"));
    assert!(String::from_utf8_lossy(&o.stderr).contains("kernels in WebAssembly"));
    ok(o);
    ok(i);
    let values = |path: PathBuf| {
        let a = hloscope_core::npy::read(&std::fs::read(path).unwrap()).unwrap();
        a.to_literal(a.elem).unwrap().to_f64_vec()
    };
    let (g, w) = (values(wasm.join("out0.npy")), values(interp.join("out0.npy")));
    assert_eq!(g.len(), w.len());
    for (a, b) in g.iter().zip(&w) {
        assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "wasm {a} vs interpreter {b}");
    }
}
