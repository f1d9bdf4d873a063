//! `cargo xtask web`: build the web app into `static/pkg/` (not committed).
//!
//! Nothing is downloaded at build time beyond the registries: the wasm-bindgen CLI is
//! installed once with `cargo install`, pinned to the version in `frontend/Cargo.lock`
//! (the library and the CLI must agree); the npm packages come from the committed
//! `frontend/package-lock.json` (`npm ci`, only when `node_modules` is missing or older
//! than the lock). Steps: CodeMirror bundled by esbuild into `static/pkg/cm.js`; the page
//! (`hloscope-web`) and the compiler's worker (`hloscope-worker`) built for
//! wasm32-unknown-unknown (release, its own workspace and `target/frontend/`); both bound
//! by wasm-bindgen for `--target web`.

use std::path::Path;
use std::process::Command;

/// The browser the end-to-end tests drive (Debian's package; Playwright downloads none).
const CHROMIUM: &str = "/usr/bin/chromium";

/// The web app's tests, after the workspace's: the frontend's formatting, clippy and unit
/// tests (native), then the app built and driven in headless Chromium by Playwright
/// (`e2e-tests/`) against the real `hloscope serve` (its debug build, built first when
/// `build_server`; `cargo xtask test` has just built it). Installs chromium (and Node.js
/// with npm) with apt-get when missing.
pub fn test(root: &Path, build_server: bool) -> Result<(), String> {
    // The frontend workspace's own checks: formatting, and the unit tests of both crates
    // (natively: they touch no browser API).
    crate::run_in(root, "cargo", &["fmt", "--manifest-path", "frontend/Cargo.toml", "--all", "--check"])?;
    // Clippy's lints come with the builds (`LINTED_BUILD`): these unit tests natively,
    // the app for wasm32 below.
    crate::run_in_env(
        root,
        "cargo",
        &[
            "test",
            "--locked",
            "--manifest-path",
            "frontend/Cargo.toml",
            "-p",
            "hloscope-worker",
            "-p",
            "hloscope-web",
            "--target-dir",
            "target/frontend",
        ],
        &crate::LINTED_BUILD,
    )?;
    let has_npm = Command::new("npm").arg("--version").output().is_ok_and(|o| o.status.success());
    let mut missing: Vec<&str> = Vec::new();
    if !Path::new(CHROMIUM).exists() {
        missing.push("chromium");
    }
    if !has_npm {
        missing.extend(["nodejs", "npm"]);
    }
    if !missing.is_empty() {
        crate::run("apt-get", &["update"])?;
        crate::run("apt-get", &[&["install", "-y"][..], &missing].concat())?;
    }
    build(root, true)?;
    if build_server {
        crate::run_in(root, "cargo", &["build", "-p", "hloscope"])?;
    }
    let e2e = root.join("e2e-tests");
    npm_ci_if_stale(&e2e)?;
    crate::run_in(&e2e, &e2e.join("node_modules/.bin/playwright").to_string_lossy(), &["test"])
}

/// Clippy on the web app's crates, wasm32 and every target, warnings denied.
pub fn lint(root: &Path) -> Result<(), String> {
    crate::ensure_wasm_target()?;
    crate::run_in(
        root,
        "cargo",
        &[
            "clippy",
            "--locked",
            "--manifest-path",
            "frontend/Cargo.toml",
            "--workspace",
            "--all-targets",
            "--target",
            "wasm32-unknown-unknown",
            "--target-dir",
            "target/clippy-web",
            "--",
            "-D",
            "warnings",
        ],
    )
}

/// The crates of `frontend/`, as their wasm files are named.
const CRATES: [&str; 2] = ["hloscope_web", "hloscope_worker"];

pub fn run(root: &Path) -> Result<(), String> {
    build(root, false)
}

/// Builds the app into `static/pkg`. `for_tests`: linted as it compiles
/// ([`crate::LINTED_BUILD`]) and without whole-program optimization, which only makes
/// the shipped files smaller and faster and would cost a clean CI build minutes.
fn build(root: &Path, for_tests: bool) -> Result<(), String> {
    crate::ensure_wasm_target()?;
    let frontend = root.join("frontend");
    let pkg = root.join("static/pkg");
    std::fs::create_dir_all(&pkg).map_err(|e| format!("cannot create {}: {e}", pkg.display()))?;
    npm_ci_if_stale(&frontend)?;
    let esbuild = frontend.join("node_modules/.bin/esbuild");
    crate::run_in(
        root,
        &esbuild.to_string_lossy(),
        &[
            "frontend/js/cm-entry.js",
            "--bundle",
            "--format=esm",
            "--minify",
            "--log-level=warning",
            "--outfile=static/pkg/cm.js",
        ],
    )?;
    ensure_wasm_bindgen(&frontend.join("Cargo.lock"))?;
    let test_profile = [("CARGO_PROFILE_RELEASE_LTO", "off"), ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")];
    let env: Vec<(&str, &str)> =
        if for_tests { [&crate::LINTED_BUILD[..], &test_profile].concat() } else { Vec::new() };
    crate::run_in_env(
        root,
        "cargo",
        &[
            "build",
            "--release",
            "--locked",
            "--target",
            "wasm32-unknown-unknown",
            "--manifest-path",
            "frontend/Cargo.toml",
            "--target-dir",
            "target/frontend",
            "--workspace",
        ],
        &env,
    )?;
    for krate in CRATES {
        let wasm = format!("target/frontend/wasm32-unknown-unknown/release/{krate}.wasm");
        crate::run_in(root, "wasm-bindgen", &["--target", "web", "--no-typescript", "--out-dir", "static/pkg", &wasm])?;
    }
    for file in ["cm.js", "hloscope_web_bg.wasm", "hloscope_worker_bg.wasm"] {
        let size = std::fs::metadata(pkg.join(file)).map(|m| m.len()).unwrap_or(0);
        eprintln!("static/pkg/{file}: {} KB", size / 1024);
    }
    Ok(())
}

/// `npm ci` when `node_modules` is missing or older than `package-lock.json`.
fn npm_ci_if_stale(frontend: &Path) -> Result<(), String> {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let lock = modified(&frontend.join("package-lock.json"));
    let installed = modified(&frontend.join("node_modules/.package-lock.json"));
    match (lock, installed) {
        (Some(lock), Some(installed)) if installed >= lock => Ok(()),
        _ => crate::run_in(frontend, "npm", &["ci", "--no-audit", "--no-fund"]),
    }
}

/// The `wasm-bindgen` CLI at the version `lock` pins, installed when missing or different.
fn ensure_wasm_bindgen(lock: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(lock).map_err(|e| format!("cannot read {}: {e}", lock.display()))?;
    let version = locked_version(&text, "wasm-bindgen").ok_or("frontend/Cargo.lock has no wasm-bindgen")?;
    let have = Command::new("wasm-bindgen")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if have.as_deref() == Some(format!("wasm-bindgen {version}").as_str()) {
        return Ok(());
    }
    // Not --locked: the CLI's own lock file does not resolve here. Only the binary the
    // build runs, at a lighter optimization (it runs for a second per build): a third of
    // the time of a full install.
    crate::run_in_env(
        Path::new("."),
        "cargo",
        &["install", "wasm-bindgen-cli", "--version", &version, "--bin", "wasm-bindgen"],
        &[("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1")],
    )
}

/// The version of package `name` in a Cargo.lock.
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == format!("name = \"{name}\"") {
            let v = lines.next()?.strip_prefix("version = \"")?.strip_suffix('"')?;
            return Some(v.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_a_locked_version() {
        let lock = "[[package]]\nname = \"wasm-bindgen-macro\"\nversion = \"9\"\n\n[[package]]\nname = \"wasm-bindgen\"\nversion = \"0.2.130\"\n";
        assert_eq!(super::locked_version(lock, "wasm-bindgen").as_deref(), Some("0.2.130"));
        assert_eq!(super::locked_version(lock, "leptos"), None);
    }
}
