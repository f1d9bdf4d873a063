//! Schemathesis against a running `hloscope serve`, part of `cargo xtask test`.
//!
//! Starts the debug server (`target/debug/hloscope serve --addr 127.0.0.1:0`) on a free
//! loopback port with a temporary data folder, points Schemathesis at its
//! `/api/openapi.json` with a bounded number of examples per operation and a fixed seed,
//! and fails when it reports anything: a 5xx, a response that breaks the schema (body,
//! status, content type, headers), a schema-violating request accepted. The server is
//! stopped afterwards however the run ends.
//!
//! Not checked: `positive_data_acceptance` (that every schema-valid request is answered
//! 2xx). For a compiler any string is a schema-valid `source` and most are not valid
//! modules; the server answers those 4xx with the line and column, as it must.
//!
//! Schemathesis comes from PyPI into `.venv-test` at the repo root, installed only when
//! that venv does not have this version yet.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Schemathesis release the test command runs.
const VERSION: &str = "4.32.5";
/// Test cases per API operation and phase: the whole run stays well under 3 minutes on 2 cores.
const MAX_EXAMPLES: &str = "200";
/// Same seed each run, so that a pass here is a pass in CI.
const SEED: &str = "20261130";

/// Runs Schemathesis against the debug server `target/debug/hloscope`, which the
/// workspace's tests have just built (its features unified with the workspace's: a
/// `cargo build -p hloscope` here would rebuild the core for minutes for nothing).
pub fn run(root: &Path) -> Result<(), String> {
    let st = ensure_installed(root)?;
    let exe = root.join("target").join("debug").join("hloscope");
    if !exe.exists() {
        crate::run_in(root, "cargo", &["build", "--quiet", "-p", "hloscope"])?;
    }
    let work = std::env::temp_dir().join(format!("hloscope-schemathesis-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let result = Server::start(&exe, &work, &[]).and_then(|server| {
        let r = schemathesis(&st, &server.url, &work);
        let log = server.stop();
        r.map_err(|e| format!("{e}\n--- the server's log (last lines) ---\n{log}"))
    });
    let _ = std::fs::remove_dir_all(&work);
    result
}

/// The venv's `schemathesis`, installed first when it is missing or another version.
fn ensure_installed(root: &Path) -> Result<PathBuf, String> {
    let venv = root.join(".venv-test");
    let st = venv.join("bin").join("schemathesis");
    let installed = Command::new(&st)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().ends_with(&format!("version {VERSION}")))
        .unwrap_or(false);
    if installed {
        return Ok(st);
    }
    let python = venv.join("bin").join("python");
    if !python.exists() {
        crate::run_in(root, "python3", &["-m", "venv", ".venv-test"])?;
    }
    let python = python.display().to_string();
    let spec = format!("schemathesis=={VERSION}");
    crate::run_in(root, &python, &["-m", "pip", "install", "--quiet", "--disable-pip-version-check", &spec])?;
    Ok(st)
}

/// Runs Schemathesis against `url`; an error when it reports failures.
fn schemathesis(st: &Path, url: &str, work: &Path) -> Result<(), String> {
    let schema = format!("{url}/api/openapi.json");
    #[rustfmt::skip]
    let args = [
        "run", schema.as_str(), "--url", url,
        "--checks", "all", "--exclude-checks", "positive_data_acceptance",
        "--max-examples", MAX_EXAMPLES, "--seed", SEED,
        "--workers", "2", "--request-timeout", "60",
        "--generation-database", "none", "--no-color",
    ];
    eprintln!("$ {} {}", st.display(), args.join(" "));
    // In the temporary folder: whatever Schemathesis writes beside itself goes away with it.
    let status = Command::new(st)
        .args(args)
        .current_dir(work)
        .status()
        .map_err(|e| format!("cannot start {}: {e}", st.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "schemathesis found failures against /api/openapi.json ({status}): the server answered 5xx or \
             broke its own schema; see the FAILURES above (`st replay ID` needs the same server running)"
        ))
    }
}

/// A `hloscope serve` on a free loopback port, its data (and compilation cache) in
/// `WORK/data`, its log in `WORK/server.log`; stopped on drop. Also used by the load test.
pub struct Server {
    child: Child,
    pub url: String,
    log: PathBuf,
}

impl Server {
    /// Starts `EXE serve` with `extra` arguments and waits for its address.
    pub fn start(exe: &Path, work: &Path, extra: &[&str]) -> Result<Server, String> {
        let log = work.join("server.log");
        let log_file = std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let data = work.join("data");
        let mut child = Command::new(exe)
            .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
            .arg(&data)
            .args(extra)
            .env("RUST_LOG", "warn")
            .env_remove("HLOSCOPE_CACHE_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        // Reads until the line with the address, then keeps draining so the server never
        // blocks on a full pipe.
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            for line in lines.by_ref().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("hloscope serving on ") {
                    let _ = tx.send(url.trim().to_string());
                    break;
                }
            }
            for _ in lines {}
        });
        let mut server = Server { child, url: String::new(), log };
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(url) => {
                server.url = url;
                eprintln!("hloscope serve (pid {}) on {}", server.child.id(), server.url);
                Ok(server)
            }
            Err(_) => {
                let log = server.stop();
                Err(format!("`{} serve` did not print its address within 60 s; its log:\n{log}", exe.display()))
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s); the last lines of its log.
    pub fn stop(mut self) -> String {
        self.shutdown();
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn shutdown(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}
