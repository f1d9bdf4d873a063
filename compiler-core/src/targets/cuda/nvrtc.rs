//! A program's CUDA C compiled: NVRTC (through cudarc) to PTX for one architecture,
//! `ptxas` from the PTX to a cubin (what checks the PTX without a GPU, and what the
//! SASS listing disassembles), `cuobjdump -sass` or `nvdisasm` for SASS.
//!
//! NVRTC runs with `--fmad=false`: HLO's `a * b + c` is two roundings, as on every other
//! target; the approximations ask for their fused multiply-adds by name (`fmaf`).
//! Precise division and square root and no flush-to-zero are NVRTC's defaults.

use super::toolkit::Toolkit;
use super::CudaProgram;
use std::path::PathBuf;
use std::process::Command;

/// PTX for `arch` (`90`: `compute_90`) from CUDA C `source`, or NVRTC's message.
pub fn compile_ptx(toolkit: &Toolkit, source: &str, arch: u32) -> Result<String, String> {
    toolkit.load_nvrtc()?;
    let opts = cudarc::nvrtc::CompileOptions {
        fmad: Some(false),
        include_paths: toolkit.include_dir.iter().map(|d| d.display().to_string()).collect(),
        options: vec![format!("--gpu-architecture=compute_{arch}"), "--std=c++17".into()],
        name: Some("hloscope.cu".into()),
        ..Default::default()
    };
    match cudarc::nvrtc::compile_ptx_with_opts(source, opts) {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(cudarc::nvrtc::CompileError::CompileError { log, .. }) => {
            Err(format!("NVRTC refused the program:\n{}", log.to_string_lossy().trim_end()))
        }
        Err(e) => Err(format!("NVRTC failed: {e}")),
    }
}

/// The program's PTX ([`CudaProgram::translation_unit`] through [`compile_ptx`]).
pub fn program_ptx(toolkit: &Toolkit, program: &CudaProgram, arch: u32) -> Result<String, String> {
    compile_ptx(toolkit, &program.translation_unit(), arch)
}

/// A scratch folder for one tool run, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, String> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("hloscope-cuda-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `ptxas -arch=sm_{arch}` on `ptx`: the cubin, or ptxas's message.
pub fn ptxas(toolkit: &Toolkit, ptx: &str, arch: u32) -> Result<Vec<u8>, String> {
    let tool = toolkit
        .tool("ptxas")
        .ok_or_else(|| format!("ptxas was not found (beside {}, on $PATH or in /usr/local/cuda/bin)", toolkit.from))?;
    let scratch = Scratch::new()?;
    let (input, output) = (scratch.0.join("kernels.ptx"), scratch.0.join("kernels.cubin"));
    std::fs::write(&input, ptx).map_err(|e| format!("cannot write {}: {e}", input.display()))?;
    let out = Command::new(&tool)
        .arg(format!("-arch=sm_{arch}"))
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tool.display()))?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr);
        return Err(format!("ptxas refused the PTX:\n{}", msg.trim_end()));
    }
    std::fs::read(&output).map_err(|e| format!("cannot read {}: {e}", output.display()))
}

/// The SASS of `cubin`: `cuobjdump -sass`, else `nvdisasm`; an error when neither
/// tool is found.
pub fn sass(toolkit: &Toolkit, cubin: &[u8]) -> Result<String, String> {
    let (tool, args): (PathBuf, &[&str]) = if let Some(t) = toolkit.tool("cuobjdump") {
        (t, &["-sass"])
    } else if let Some(t) = toolkit.tool("nvdisasm") {
        (t, &["-c"])
    } else {
        return Err("--emit sass needs cuobjdump or nvdisasm (NVIDIA's nvidia-cuda-cuobjdump wheel, or a CUDA \
                    toolkit), and neither was found"
            .into());
    };
    let scratch = Scratch::new()?;
    let input = scratch.0.join("kernels.cubin");
    std::fs::write(&input, cubin).map_err(|e| format!("cannot write {}: {e}", input.display()))?;
    let out = Command::new(&tool)
        .args(args)
        .arg(&input)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tool.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed: {}", tool.display(), String::from_utf8_lossy(&out.stderr).trim_end()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
