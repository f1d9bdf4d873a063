//! Where the CUDA toolkit's pieces are on this machine: NVRTC's libraries, the headers
//! the kernels include (`cuda_fp16.h`, `cuda_bf16.h`), and the command-line tools
//! (`ptxas`, `cuobjdump`, `nvdisasm`). Nothing of CUDA is linked: NVRTC is opened at run
//! time (through cudarc, after [`Toolkit::load_nvrtc`] has preloaded it by absolute
//! path), so a build without CUDA starts and says here what is missing.
//!
//! Looked for, in order:
//! 1. `$HLOSCOPE_CUDA_LIB`: the folder holding `libnvrtc.so.13` (its `../include` and
//!    `../bin` for the headers and tools);
//! 2. `$HLOSCOPE_CUDA_VENV`: a Python venv with NVIDIA's PyPI wheels
//!    (`<venv>/lib/python3*/site-packages/nvidia/cu13/{lib,include,bin}`);
//! 3. the library path: `$LD_LIBRARY_PATH`'s folders, then `/usr/local/cuda/lib64` and
//!    the system's library folders.
//!
//! This module does IO (it reads folders and the environment), unlike the rest of the
//! compiler: it is the CUDA feature's edge with the machine.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The variable naming NVRTC's library folder.
pub const LIB_ENV: &str = "HLOSCOPE_CUDA_LIB";
/// The variable naming a venv with NVIDIA's wheels.
pub const VENV_ENV: &str = "HLOSCOPE_CUDA_VENV";
/// NVRTC's library, by the name its SONAME gives (CUDA 13).
pub const NVRTC: &str = "libnvrtc.so.13";
/// The library NVRTC opens for its built-in headers.
pub const NVRTC_BUILTINS: &str = "libnvrtc-builtins.so.13.0";

/// How to get NVRTC, for the messages that say it is missing.
pub const INSTALL_HINT: &str =
    "install NVIDIA's wheels with `python3 -m venv .venv-cuda && .venv-cuda/bin/pip install \
nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
nvidia-cuda-runtime==13.0.96 nvidia-cuda-cuobjdump==13.2.51 nvidia-cuda-nvdisasm==13.2.51` and set \
HLOSCOPE_CUDA_VENV=.venv-cuda, or set HLOSCOPE_CUDA_LIB to the folder holding libnvrtc.so.13";

/// The pieces of a CUDA toolkit found on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolkit {
    /// The folder holding [`NVRTC`].
    pub lib_dir: PathBuf,
    /// The folder holding `cuda_fp16.h` (None: not found; the kernels then fail to
    /// compile with NVRTC's message).
    pub include_dir: Option<PathBuf>,
    /// The folder holding `ptxas` and friends, where one was found beside the library.
    pub bin_dir: Option<PathBuf>,
    /// Where it was found, in words (for messages).
    pub from: String,
}

impl Toolkit {
    /// Finds the toolkit as the module doc says, or says in one line what is missing.
    pub fn locate() -> Result<Toolkit, String> {
        if let Some(dir) = std::env::var_os(LIB_ENV).filter(|d| !d.is_empty()) {
            let dir = PathBuf::from(dir);
            if !dir.join(NVRTC).is_file() {
                return Err(format!("${LIB_ENV} is {} but it holds no {NVRTC}", dir.display()));
            }
            return Ok(Toolkit::beside(dir, format!("${LIB_ENV}")));
        }
        if let Some(venv) = std::env::var_os(VENV_ENV).filter(|d| !d.is_empty()) {
            return Toolkit::in_venv(Path::new(&venv));
        }
        let mut dirs: Vec<PathBuf> =
            std::env::var_os("LD_LIBRARY_PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
        dirs.extend(
            [
                "/usr/local/cuda/lib64",
                "/usr/lib/x86_64-linux-gnu",
                "/usr/lib64",
                "/usr/lib/aarch64-linux-gnu",
                "/usr/lib",
            ]
            .map(PathBuf::from),
        );
        for dir in dirs {
            if dir.join(NVRTC).is_file() {
                return Ok(Toolkit::beside(dir, "the library path".into()));
            }
        }
        Err(format!("NVRTC ({NVRTC}) was not found: {INSTALL_HINT}"))
    }

    /// The toolkit of NVIDIA's wheels in `venv`.
    pub fn in_venv(venv: &Path) -> Result<Toolkit, String> {
        let lib = venv.join("lib");
        let mut found = None;
        if let Ok(entries) = std::fs::read_dir(&lib) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                let root = entry.path().join("site-packages/nvidia/cu13");
                if name.starts_with("python3") && root.join("lib").join(NVRTC).is_file() {
                    found = Some(root);
                }
            }
        }
        let Some(root) = found else {
            return Err(format!(
                "the venv {} has no NVRTC wheel (lib/python3*/site-packages/nvidia/cu13/lib/{NVRTC}): {INSTALL_HINT}",
                venv.display()
            ));
        };
        Ok(Toolkit::beside(root.join("lib"), format!("the venv {}", venv.display())))
    }

    /// The toolkit whose library folder is `lib_dir`, with the headers and tools beside
    /// it where they are.
    fn beside(lib_dir: PathBuf, from: String) -> Toolkit {
        let up = lib_dir.parent().map(Path::to_path_buf).unwrap_or_default();
        let include_dir = [up.join("include"), PathBuf::from("/usr/local/cuda/include")]
            .into_iter()
            .find(|d| d.join("cuda_fp16.h").is_file());
        let bin_dir = Some(up.join("bin")).filter(|d| d.join("ptxas").is_file());
        Toolkit { lib_dir, include_dir, bin_dir, from }
    }

    /// The command-line tool `name` (`ptxas`, `cuobjdump`, `nvdisasm`): beside the
    /// library, else on `$PATH`, else `/usr/local/cuda/bin`.
    pub fn tool(&self, name: &str) -> Option<PathBuf> {
        let mut dirs: Vec<PathBuf> = self.bin_dir.iter().cloned().collect();
        if let Some(path) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&path));
        }
        dirs.push(PathBuf::from("/usr/local/cuda/bin"));
        dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
    }

    /// Opens NVRTC from [`Toolkit::lib_dir`] (its built-ins first, which NVRTC opens by
    /// name), so that cudarc's open by name finds it already loaded; the libraries stay
    /// loaded for the process's life. Errors say what could not be loaded.
    pub fn load_nvrtc(&self) -> Result<(), String> {
        static LOADED: OnceLock<Result<(), String>> = OnceLock::new();
        static HANDLES: OnceLock<Vec<libloading::Library>> = OnceLock::new();
        LOADED
            .get_or_init(|| {
                let mut handles = Vec::new();
                for name in [NVRTC_BUILTINS, NVRTC] {
                    let path = self.lib_dir.join(name);
                    if !path.is_file() && name == NVRTC_BUILTINS {
                        continue; // a system install finds it through the loader's own paths
                    }
                    // SAFETY: NVRTC's libraries run no initialisation with preconditions.
                    let lib = unsafe { libloading::Library::new(&path) }
                        .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
                    handles.push(lib);
                }
                let _ = HANDLES.set(handles);
                // SAFETY: only probes whether the library opens by name.
                if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                    Ok(())
                } else {
                    Err(format!("{NVRTC} was loaded from {} but cudarc cannot open it", self.lib_dir.display()))
                }
            })
            .clone()
    }
}

/// Whether the CUDA driver (`libcuda.so`, installed with NVIDIA's GPU driver) can be
/// opened: what running kernels needs, beyond NVRTC.
pub fn driver_present() -> bool {
    // SAFETY: only probes whether the library opens.
    unsafe { cudarc::driver::sys::is_culib_present() }
}
