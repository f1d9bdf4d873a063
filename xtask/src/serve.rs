//! `cargo xtask serve`: build what the server needs (the web app into `static/pkg/`, the
//! server in release) and start it at http://127.0.0.1:8080 on the embedded defaults;
//! extra arguments go to `hloscope serve`.

use std::path::Path;
use std::process::Command;

pub fn run(root: &Path, extra: &[String]) -> Result<(), String> {
    crate::web::run(root)?;
    crate::run_in(root, "cargo", &["build", "--release", "-p", "hloscope"])?;
    let exe = root.join("target/release/hloscope");
    eprintln!("$ {} serve {}", exe.display(), extra.join(" "));
    let status = Command::new(&exe)
        .arg("serve")
        .args(extra)
        .current_dir(root)
        .status()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("hloscope serve ended with {status}"))
    }
}
