//! `cargo xtask gpu-check --prepare DIR [--binary PATH]`: the GPU check kit. Builds
//! `hloscope` here (release, with the `cuda` feature, which the binary always has) and
//! gathers into DIR what a machine with an NVIDIA GPU, its driver, JAX and PyTorch but no
//! Rust needs to check the CUDA target:
//!
//! - `hloscope`, the binary (`--binary` takes one already built instead);
//! - `cuda/`: NVRTC's libraries and headers from `.venv-cuda` or `$HLOSCOPE_CUDA_VENV`
//!   (NVIDIA's pinned wheels),
//!   used when the machine has no CUDA 13 NVRTC of its own;
//! - `jax-corpus/`: the JAX corpus (`backend/tests/corpus`: modules, inputs, JAX's outputs);
//! - `conformance/`: the StableHLO conformance corpus's testdata programs;
//! - `bench/xla_bench.py`: the bench suite's JAX side (here run on the GPU);
//! - `kit.py`, the checks, and `run.sh RESULTS_DIR`, the one script to run: conformance
//!   and JAX corpora on `--target cuda` against the interpreter and JAX, the bench suite
//!   against XLA:GPU side by side, a device-to-device copy bandwidth probe (PyTorch);
//!   results as `results.json` and `results.md` in RESULTS_DIR.

use std::path::{Path, PathBuf};

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let mut dir = None;
    let mut binary = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--prepare" => dir = it.next().map(PathBuf::from),
            "--binary" => binary = it.next().map(PathBuf::from),
            other => {
                return Err(format!("gpu-check: unknown argument `{other}` (gpu-check --prepare DIR [--binary PATH])"))
            }
        }
    }
    let dir = dir.ok_or("gpu-check needs --prepare DIR")?;
    let binary = match binary {
        Some(b) => b,
        None => {
            crate::run_in(root, "cargo", &["build", "--release", "-p", "hloscope"])?;
            let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
            target.join("release/hloscope")
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    copy(&binary, &dir.join("hloscope"))?;
    set_executable(&dir.join("hloscope"))?;
    // NVRTC from the pinned wheels, for a machine without CUDA 13's NVRTC.
    let venv = std::env::var_os("HLOSCOPE_CUDA_VENV").map_or_else(|| root.join(".venv-cuda"), PathBuf::from);
    let wheels = std::fs::read_dir(venv.join("lib"))
        .ok()
        .and_then(|mut entries| entries.find_map(|e| e.ok().map(|e| e.path().join("site-packages/nvidia/cu13"))))
        .filter(|p| p.join("lib/libnvrtc.so.13").is_file())
        .ok_or_else(|| {
            format!(
                "gpu-check: {} has no NVRTC wheel (run `cargo xtask test` once, or install the wheels as the README says)",
                venv.display()
            )
        })?;
    for lib in ["libnvrtc.so.13", "libnvrtc-builtins.so.13.0"] {
        copy(&wheels.join("lib").join(lib), &dir.join("cuda/lib").join(lib))?;
    }
    copy_tree(&wheels.join("include"), &dir.join("cuda/include"), &|_| true)?;
    copy_tree(&root.join("backend/tests/corpus"), &dir.join("jax-corpus"), &|_| true)?;
    let conformance = std::env::var_os("HLOSCOPE_CONFORMANCE_DIR")
        .map_or_else(|| root.join("../shared/conformance"), |d| root.join(d))
        .join("stablehlo/testdata");
    copy_tree(&conformance, &dir.join("conformance"), &|p| p.extension().is_some_and(|e| e == "mlir"))?;
    copy(&root.join("tools/bench/xla_bench.py"), &dir.join("bench/xla_bench.py"))?;
    write(&dir.join("kit.py"), KIT_PY)?;
    write(&dir.join("run.sh"), RUN_SH)?;
    set_executable(&dir.join("run.sh"))?;
    eprintln!("gpu-check: the kit is in {}; on the GPU machine: ./run.sh RESULTS_DIR", dir.display());
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot make {}: {e}", parent.display()))?;
    }
    std::fs::copy(from, to).map(|_| ()).map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

fn copy_tree(from: &Path, to: &Path, keep: &dyn Fn(&Path) -> bool) -> Result<(), String> {
    let entries = std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("cannot read {}: {e}", from.display()))?.path();
        let target = to.join(path.file_name().unwrap_or_default());
        if path.is_dir() {
            copy_tree(&path, &target, keep)?;
        } else if keep(&path) {
            copy(&path, &target)?;
        }
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn set_executable(path: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("cannot make {} executable: {e}", path.display()))?;
    }
    Ok(())
}

/// The one script to run on the GPU machine.
const RUN_SH: &str = r##"#!/bin/sh
# hloscope's GPU check kit (made by `cargo xtask gpu-check --prepare`): checks the CUDA
# target on this machine's NVIDIA GPU and writes RESULTS_DIR/results.{json,md}.
# Needs the CUDA driver, python3 with numpy, JAX (for XLA:GPU) and PyTorch (for the copy
# bandwidth probe); NVRTC is the system's CUDA 13 one, else the kit's own (cuda/).
set -eu
KIT=$(cd "$(dirname "$0")" && pwd)
OUT=${1:?usage: run.sh RESULTS_DIR [--quick]}
shift
mkdir -p "$OUT"
if [ -z "${HLOSCOPE_CUDA_LIB:-}" ] && [ ! -e /usr/local/cuda/lib64/libnvrtc.so.13 ]; then
  export HLOSCOPE_CUDA_LIB="$KIT/cuda/lib"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/gpu.txt" || true
exec python3 "$KIT/kit.py" "$KIT" "$OUT" "$@"
"##;

/// The checks, in Python (the GPU machine has no Rust).
const KIT_PY: &str = r##""""The GPU check kit's checks: see run.sh. Arguments: KIT_DIR RESULTS_DIR [--quick]."""
import concurrent.futures as futures
import datetime
import glob
import json
import os
import subprocess
import sys
import time

import numpy as np

KIT, OUT = sys.argv[1], sys.argv[2]
QUICK = "--quick" in sys.argv[3:]
HLOSCOPE = os.path.join(KIT, "hloscope")
JOBS = min(8, os.cpu_count() or 4)
results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def hloscope(*args, timeout=120):
    try:
        p = subprocess.run([HLOSCOPE, *args], capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr.strip()
    except subprocess.TimeoutExpired:
        return 124, "", "timed out"


def log(msg):
    print(f"gpu-check: {msg}", file=sys.stderr, flush=True)


def gpu():
    try:
        results["gpu"] = open(os.path.join(OUT, "gpu.txt")).read().strip()
    except OSError:
        results["gpu"] = "unknown"
    log(f"GPU: {results['gpu']}")


def conformance():
    """Every testdata program the interpreter passes, run on cuda with its checks."""
    files = sorted(glob.glob(os.path.join(KIT, "conformance", "*.mlir")))
    if QUICK:
        files = files[::10]

    def one(f):
        rc, _, _ = hloscope("run", f, "--conformance-checks")
        if rc != 0:
            return (f, "interp", None)
        rc, _, err = hloscope("run", f, "--conformance-checks", "--target", "cuda")
        return (f, "cuda", None if rc == 0 else err.splitlines()[-1] if err else f"exit {rc}")

    t = time.time()
    with futures.ThreadPoolExecutor(JOBS) as pool:
        done = list(pool.map(one, files))
    ran = [d for d in done if d[1] == "cuda"]
    failed = [{"program": os.path.basename(f), "error": e} for f, _, e in ran if e]
    results["conformance"] = {"programs": len(files), "interp_passes": len(ran), "cuda_passes": len(ran) - len(failed),
                              "failures": failed, "seconds": round(time.time() - t, 1)}
    log(f"conformance: {len(ran) - len(failed)} of {len(ran)} pass on cuda ({len(files)} programs)")


def close(got, want, rtol, atol):
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "biu" or got.dtype.kind in "biu":
        return np.array_equal(got.astype(np.float64), want.astype(np.float64))
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(w)
    return bool(np.all(np.isnan(g[nan]))) and bool(np.all(np.abs(g[~nan] - w[~nan]) <= atol + rtol * np.abs(w[~nan])))


def jax_corpus():
    """Every JAX program on cuda against JAX's outputs and the interpreter's."""
    rows = []
    for d in sorted(glob.glob(os.path.join(KIT, "jax-corpus", "*"))):
        name = os.path.basename(d)
        ins = sorted(glob.glob(os.path.join(d, "in*.npy")), key=lambda p: int(p.rsplit("in", 1)[1][:-4]))
        args = [a for p in ins for a in ("--input", p)]
        outs = {}
        for target in ("interp", "cuda"):
            o = os.path.join(OUT, "jax-corpus", target, name)
            rc, _, err = hloscope("run", os.path.join(d, "module.mlir"), "--target", target, *args, "--out-dir", o,
                                  timeout=600)
            outs[target] = (rc, err, o)
        rc, err, o = outs["cuda"]
        row = {"program": name, "ok": rc == 0, "error": err if rc else ""}
        meta = json.load(open(os.path.join(d, "meta.json")))
        for k, spec in enumerate(meta["outputs"] if rc == 0 else []):
            got = np.load(os.path.join(o, f"out{k}.npy"))
            ref = np.load(os.path.join(outs["interp"][2], f"out{k}.npy")) if outs["interp"][0] == 0 else None
            want = np.load(os.path.join(d, spec["file"]))
            # The corpus's tolerance, at least a few f32 ulps (the GPU sums in another order).
            narrow = spec["dtype"] in ("float16", "bfloat16")
            rtol = 0 if spec.get("exact") else max(spec.get("rtol", 0), 1e-2 if narrow else 1e-4)
            atol = 0 if spec.get("exact") else max(spec.get("atol", 0), 1e-2 if narrow else 1e-5)
            if not close(got, want, rtol, atol):
                row["ok"], row["error"] = False, f"out{k} differs from JAX's"
            elif ref is not None and not close(got, ref, rtol, atol):
                row["ok"], row["error"] = False, f"out{k} differs from the interpreter's"
        rows.append(row)
        log(f"jax corpus: {name}: {'ok' if row['ok'] else row['error']}")
    results["jax_corpus"] = {"programs": len(rows), "pass": sum(r["ok"] for r in rows), "rows": rows}


def copy_bandwidth():
    """Device-to-device copy with PyTorch: bytes read plus written per second."""
    try:
        import torch
    except ImportError:
        results["copy_gbps"] = None
        return
    n = (1 << 28) // 4
    a = torch.empty(n, dtype=torch.float32, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(20):
        start.record()
        b.copy_(a)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    results["copy_gbps"] = round(2 * 4 * n / best / 1e9, 1)
    log(f"copy bandwidth: {results['copy_gbps']} GB/s")


def bench():
    """The bench suite: XLA:GPU (JAX) and hloscope --target cuda on the same inputs."""
    programs = os.path.join(OUT, "bench-programs")
    cmd = [sys.executable, os.path.join(KIT, "bench", "xla_bench.py"), "export", programs] + (["--quick"] if QUICK else [])
    env = dict(os.environ, JAX_PLATFORMS="cuda")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        results["bench"] = {"error": p.stderr.strip()[-2000:]}
        log("bench: the JAX export failed")
        return
    rows = []
    for d in sorted(glob.glob(os.path.join(programs, "*"))):
        meta = json.load(open(os.path.join(d, "xla.json")))
        args = [a for i in range(len(meta["inputs"])) for a in ("--input", os.path.join(d, f"in{i}.npy"))]
        o = os.path.join(OUT, "bench-out", meta["name"])
        rc, out, err = hloscope("bench", os.path.join(d, "module.mlir"), "--target", "cuda", "--json", "--out-dir", o,
                                *args, timeout=600)
        row = {"program": meta["name"], "xla_run_median_s": meta["xla_run_median_s"]}
        if rc != 0:
            row["error"] = err
        else:
            r = json.loads(out)
            row["hloscope_run_median_s"] = r["run_median_s"]
            row["speed_vs_xla"] = meta["xla_run_median_s"] / r["run_median_s"]
            cmp = subprocess.run([sys.executable, os.path.join(KIT, "bench", "xla_bench.py"), "compare", d, o],
                                 capture_output=True, text=True, env=env)
            row["outputs_match"] = cmp.stdout.strip()
            loops = [k for k in r["kernels"] if k["code"] == "cuda" and k["time_s"] > 0 and k["flops"] <= k["bytes"]]
            if loops:
                row["elementwise_gbps"] = round(sum(k["bytes"] for k in loops) / sum(k["time_s"] for k in loops) / 1e9, 1)
        rows.append(row)
        log(f"bench: {row['program']}: {row.get('speed_vs_xla', row.get('error'))}")
    speeds = [r["speed_vs_xla"] for r in rows if "speed_vs_xla" in r]
    geo = float(np.exp(np.mean(np.log(speeds)))) if speeds else None
    results["bench"] = {"rows": rows, "geomean_speed_vs_xla": geo}


def markdown():
    c, j, b = results.get("conformance", {}), results.get("jax_corpus", {}), results.get("bench", {})
    lines = [f"# hloscope --target cuda on {results.get('gpu')}", "", f"Run {results['date']}.", "",
             f"- conformance: {c.get('cuda_passes')} of {c.get('interp_passes')} programs the interpreter passes "
             f"pass on cuda",
             f"- JAX corpus: {j.get('pass')} of {j.get('programs')} match JAX and the interpreter",
             f"- copy bandwidth (PyTorch, device to device): {results.get('copy_gbps')} GB/s",
             f"- bench geomean, XLA:GPU time / hloscope time: {b.get('geomean_speed_vs_xla')}", "",
             "| program | XLA:GPU | hloscope cuda | speed vs XLA | elementwise GB/s |", "|---|---|---|---|---|"]
    for r in b.get("rows", []):
        lines.append(f"| {r['program']} | {r['xla_run_median_s'] * 1e3:.3f} ms | "
                     f"{r.get('hloscope_run_median_s', float('nan')) * 1e3:.3f} ms | "
                     f"{r.get('speed_vs_xla', float('nan')):.2f} | {r.get('elementwise_gbps', '')} |")
    for f in c.get("failures", [])[:50]:
        lines.append(f"- conformance failure: {f['program']}: {f['error']}")
    for r in j.get("rows", []):
        if not r["ok"]:
            lines.append(f"- JAX corpus failure: {r['program']}: {r['error']}")
    return "\n".join(lines) + "\n"


def preflight():
    """NVRTC and the driver, checked on one program before the long steps."""
    module = os.path.join(KIT, "jax-corpus", "softmax", "module.mlir")
    rc, _, err = hloscope("compile", module, "--target", "cuda", "--emit", "ptx")
    if rc != 0:
        sys.exit(f"gpu-check: NVRTC does not work here: {err}")
    rc, _, err = hloscope("run", module, "--target", "cuda", "--random-inputs")
    if rc != 0:
        sys.exit(f"gpu-check: --target cuda does not run here: {err}")
    log(f"preflight: {err.splitlines()[0] if err else 'ok'}")


def main():
    gpu()
    preflight()
    started = time.time()
    for step in (jax_corpus, conformance, copy_bandwidth, bench):
        try:
            step()
        except Exception as e:  # one step's failure must not lose the others' results
            results[step.__name__ + "_error"] = repr(e)
            log(f"{step.__name__} failed: {e!r}")
        results["seconds"] = round(time.time() - started, 1)
        json.dump(results, open(os.path.join(OUT, "results.json"), "w"), indent=2)
    open(os.path.join(OUT, "results.md"), "w").write(markdown())
    log(f"results in {OUT}/results.json and results.md")


main()
"##;
