//! `cargo xtask`: the project's chores in one place (alias in `.cargo/config.toml`).

mod bench;
mod chart;
mod fusion_vs_xla;
mod gpu_check;
mod schemathesis;
mod serve;
mod server_bench;
mod web;

use std::path::Path;
use std::process::{Command, ExitCode};

const HELP: &str = "\
cargo xtask <command>

Commands:
  serve [ARGS]
           Build the web app and the server (release) and start it at
           http://127.0.0.1:8080;
           ARGS go to `hloscope serve` (see `hloscope serve --help`).
  web      Build the web app (frontend/) into static/pkg/: CodeMirror bundled by
           esbuild, the page and the compiler's worker for wasm32 (release), bound
           by wasm-bindgen (installed once, pinned to frontend/Cargo.lock).
  test     Check the formatting (cargo fmt --check) and clippy's lints (warnings
           denied, on every target and on the wasm32 build), then run every test:
           the workspace's tests (debug build, incl. the conformance corpus, the JAX
           corpus and the bounded parser fuzzing), and check that hloscope-core
           builds for wasm32-unknown-unknown; then the web app's: its worker's unit
           tests, and the app built (`web`) and driven in headless Chromium by
           Playwright (e2e-tests/; chromium from apt-get when missing).
  test-web Only the web app's tests (the last part of `test`).
  lint     Only the checks: formatting, then `cargo clippy` on every target of
           both workspaces (native, and wasm32 for the web app) with warnings denied.
  fusion-vs-xla
           Compare our fusion with XLA's on the JAX corpus (kernels, bytes moved)
           and write docs/fusion-vs-xla.md.
  bench [--quick]
           hloscope's CPU target against XLA:CPU on realistic programs (release
           build): run and compile times, outputs checked against XLA's, memory
           bandwidth; writes target/bench/results.{json,md,png} and the README's
           bench table. --quick: small sizes, a smoke test (README untouched).
  bench --target webgpu [--quick]
           Fusion on the WebGPU adapter (lavapipe where there is no GPU): each
           program of the same suite fused and with --fusion off, alternating in
           rounds, outputs checked against XLA's; writes target/bench/webgpu.
           {json,md} and the README's WebGPU table (--quick: small sizes).
  bench --target wasm [--quick]
           The WebAssembly target (wasmtime) against the native CPU target on
           the same suite, alternating in rounds, outputs checked against XLA's:
           run and compile times; writes target/bench/wasm.md and the README's
           table (--quick: small sizes, README untouched).
  bench --server [--clients N] [--seconds S]
           Load test of `hloscope serve` (release build): 64 clients compile
           and run the transformer block for 20 s; writes target/bench/server.json.
  gpu-check --prepare DIR [--binary PATH]
           The GPU check kit: builds hloscope (release, cuda) and gathers it, NVRTC
           from .venv-cuda, the conformance and JAX corpora, the bench suite's JAX
           side and one script into DIR. On a machine with an NVIDIA GPU, its driver,
           JAX and PyTorch (no Rust), `DIR/run.sh RESULTS [--quick]` runs both corpora
           on --target cuda against the interpreter and JAX, the bench suite against
           XLA:GPU and a copy bandwidth probe, into RESULTS/results.{json,md}.
  help     Show this text.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("lint") => lint(),
        Some("serve") => serve::run(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap(), &args[1..]),
        // xtask lives one folder below the workspace root.
        Some("web") => web::run(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()),
        Some("test-web") => web::test(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap(), true),
        Some("fusion-vs-xla") => fusion_vs_xla::run(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()),
        Some("gpu-check") => gpu_check::run(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap(), &args[1..]),
        Some("bench") => bench::run(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap(), &args[1..]),
        Some("help") | Some("--help") | Some("-h") | None => {
            print!("{HELP}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command {other:?}\n\n{HELP}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a command, echoing it first; fails with its name when it fails.
fn run(program: &str, args: &[&str]) -> Result<(), String> {
    eprintln!("$ {program} {}", args.join(" "));
    let status = Command::new(program).args(args).status().map_err(|e| format!("cannot start {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{program} {}` failed ({status})", args.join(" ")))
    }
}

/// Runs a command in folder `dir`, echoing it first; fails with its name when it fails.
fn run_in(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
    run_in_env(dir, program, args, &[])
}

/// [`run_in`] with environment variables set for the command alone.
fn run_in_env(dir: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    eprintln!("$ {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .status()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{program} {}` failed ({status})", args.join(" ")))
    }
}

/// Seeds of the randomized tests under `cargo xtask test` (and so in CI), so that a run
/// that passed here passes there. A plain `cargo test` draws fresh seeds each time and
/// keeps exploring; set these variables to repeat one of its runs.
const TEST_SEEDS: [(&str, &str); 2] = [("PROPTEST_RNG_SEED", "20261130"), ("HLOSCOPE_FUZZ_SEED", "20261130")];

/// Clippy's lints, warnings denied, on a workspace's own crates while cargo compiles them
/// for real: clippy's driver as the workspace's compiler wrapper. The tests' build
/// lints what `cargo clippy` would, without a second pass over every dependency (a
/// clean CI build spent ten minutes on that pass alone).
pub const LINTED_BUILD: [(&str, &str); 2] =
    [("RUSTC_WORKSPACE_WRAPPER", "clippy-driver"), ("CLIPPY_ARGS", "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__")];

fn test(extra: &[String]) -> Result<(), String> {
    ensure_wasm_target()?;
    check_format_and_wasm32()?;
    for (var, seed) in TEST_SEEDS {
        if std::env::var_os(var).is_none() {
            std::env::set_var(var, seed);
        }
    }
    // The wasm32 build of hloscope-core: its featureless form is checked by the lint's
    // clippy; with the browser's features (listing, webgpu) it is built by the web app.
    ensure_lavapipe()?;
    ensure_cuda_wheels()?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    // Every target built (and so linted, benches included), then the tests run.
    let linted = |e: String| format!("{e}: fix what clippy or the compiler reports above (warnings are denied)");
    run_in_env(root, "cargo", &["test", "--workspace", "--all-targets", "--no-run"], &LINTED_BUILD).map_err(linted)?;
    let mut args = vec!["test", "--workspace"];
    args.extend(extra.iter().map(String::as_str));
    run_in_env(root, "cargo", &args, &LINTED_BUILD)?;
    // After the workspace's tests, which built the server's debug binary.
    web::test(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap(), false)?;
    schemathesis::run(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
}

/// The WebGPU target's device tests need a Vulkan driver: without a GPU, Mesa's
/// lavapipe (Vulkan on the CPU). Installs it when missing, and gives wgpu the private
/// runtime folder it expects.
fn ensure_lavapipe() -> Result<(), String> {
    let icd = Path::new("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json");
    let loader = Path::new("/usr/lib/x86_64-linux-gnu/libvulkan.so.1");
    if cfg!(target_os = "linux") && (!icd.exists() || !loader.exists()) {
        run("apt-get", &["update"])?;
        run("apt-get", &["install", "-y", "mesa-vulkan-drivers", "libvulkan1"])?;
    }
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        let dir = std::env::temp_dir().join("hloscope-xdg-runtime");
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        }
        std::env::set_var("XDG_RUNTIME_DIR", dir);
    }
    Ok(())
}

/// NVIDIA's wheels the CUDA target's tests compile with (NVRTC, ptxas; no GPU needed),
/// pinned to CUDA 13.0 (the GPU machines' driver), as `../shared/RECIPES.md` says.
pub const CUDA_WHEELS: [&str; 7] = [
    "nvidia-cuda-nvrtc==13.0.88",
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-cuobjdump==13.2.51",
    "nvidia-cuda-nvdisasm==13.2.51",
];

/// Installs [`CUDA_WHEELS`] into `.venv-cuda` at the workspace root when NVRTC is not
/// there, and names the venv in `$HLOSCOPE_CUDA_VENV` for the tests (unless it or
/// `$HLOSCOPE_CUDA_LIB` is set already).
fn ensure_cuda_wheels() -> Result<(), String> {
    if std::env::var_os("HLOSCOPE_CUDA_VENV").is_some() || std::env::var_os("HLOSCOPE_CUDA_LIB").is_some() {
        return Ok(());
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let venv = root.join(".venv-cuda");
    let has_nvrtc = std::fs::read_dir(venv.join("lib")).is_ok_and(|entries| {
        entries.flatten().any(|e| e.path().join("site-packages/nvidia/cu13/lib/libnvrtc.so.13").is_file())
    });
    if !has_nvrtc {
        let venv_arg = venv.display().to_string();
        run("python3", &["-m", "venv", &venv_arg])?;
        let pip = venv.join("bin/pip").display().to_string();
        run(&pip, &[&["install", "--quiet"][..], &CUDA_WHEELS].concat())?;
    }
    std::env::set_var("HLOSCOPE_CUDA_VENV", &venv);
    Ok(())
}

/// The checks: the formatting, then clippy with warnings denied on every target of the
/// workspace and on hloscope-core's wasm32 build. Each failure fails the command, saying
/// what to do.
fn lint() -> Result<(), String> {
    check_format_and_wasm32()?;
    let native = ["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"];
    run("cargo", &native).map_err(|e| format!("{e}: fix what clippy reports above (warnings are denied)"))?;
    web::lint(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
}

/// The formatting, and clippy on hloscope-core's featureless wasm32 build (no test
/// builds it; the web app's builds give it the browser's features).
fn check_format_and_wasm32() -> Result<(), String> {
    ensure_component("rustfmt")?;
    ensure_component("clippy")?;
    run("cargo", &["fmt", "--check"])
        .map_err(|e| format!("{e}: the code is not formatted as rustfmt.toml says (run `cargo fmt`)"))?;
    let wasm = ["clippy", "-p", "hloscope-core", "--target", "wasm32-unknown-unknown", "--", "-D", "warnings"];
    run("cargo", &wasm)
        .map_err(|e| format!("{e}: fix what clippy reports above for the wasm32 build (warnings are denied)"))
}

/// Installs a rustup component (rustfmt, clippy) when it is missing.
fn ensure_component(name: &str) -> Result<(), String> {
    let installed = Command::new("rustup")
        .args(["component", "list", "--installed"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| l == name || l.starts_with(&format!("{name}-"))))
        .unwrap_or(false);
    if installed {
        Ok(())
    } else {
        run("rustup", &["component", "add", name])
    }
}

/// Installs the wasm32 standard library through rustup when it is missing.
fn ensure_wasm_target() -> Result<(), String> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("wasm32-unknown-unknown"))
        .unwrap_or(false);
    if installed {
        Ok(())
    } else {
        run("rustup", &["target", "add", "wasm32-unknown-unknown"])
    }
}
