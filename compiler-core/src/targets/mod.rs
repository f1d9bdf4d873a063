//! Compiled targets: each turns a [`crate::kernel::KernelPlan`] into something that runs.
//!
//! `cpu` (feature `cpu`, native only): Cranelift JIT for loop and reduction kernels,
//! `gemm` for dots, the interpreter for opaque kernels. Its code generation alone
//! (feature `cpu-codegen`) also builds for wasm32: [`cpu::listing`] shows each kernel's
//! CLIF and machine code for a chosen ISA without running it.
//!
//! `webgpu`: WGSL per elemental kernel (always built: text only), run through wgpu with
//! feature `webgpu`; other kernels run on the host in the interpreter.
//!
//! `cuda`: CUDA C per elemental kernel (always built: text only), compiled by NVRTC and
//! run through the CUDA driver with feature `cuda` (both loaded at run time); other
//! kernels run on the host in the interpreter. `cstyle` is what the WGSL and CUDA C
//! emitters share.
//!
//! `wasm`: one WebAssembly module per program (always built: bytes only), run by the
//! browser's engine and natively by wasmtime with feature `wasm-run`; other kernels run
//! on the host in the interpreter.

use crate::ir::Module;
use crate::passes::fusion::FusionConfig;

#[cfg(feature = "cpu-codegen")]
pub mod cpu;

pub mod control;
pub mod cstyle;
pub mod cuda;
#[cfg(any(feature = "cpu-codegen", feature = "wasm-run"))]
pub mod envelope;
#[cfg(all(any(feature = "cpu", feature = "wasm-run"), not(target_arch = "wasm32")))]
pub mod pool;
pub mod split;
pub mod wasm;
pub mod webgpu;

/// The pipeline [`optimize`] runs (part of the compilation cache's key).
pub const PIPELINE: &str = "default,-layout-assignment";

/// The passes run before compiling for a target (the CPU, WebGPU): the default pipeline without layout
/// assignment (the kernel plan reads logical row-major arrays; a transpose turned into a
/// layout-changing bitcast would only be interpreted).
pub fn optimize(module: &Module) -> Result<Module, String> {
    optimize_with(module, &FusionConfig::default())
}

/// [`optimize`] with other fusion knobs (`hloscope bench --fusion off` and the like,
/// for fused-against-unfused comparisons on the same target).
pub fn optimize_with(module: &Module, fusion: &FusionConfig) -> Result<Module, String> {
    optimize_owned(module.clone(), fusion)
}

/// [`optimize_with`] on a module the caller no longer needs (no copy of it is made).
pub fn optimize_owned(mut m: Module, fusion: &FusionConfig) -> Result<Module, String> {
    use crate::passes::pipeline::{parse_pipeline_spec, run_passes, PipelineConfig};
    let passes = parse_pipeline_spec(PIPELINE).map_err(|e| e.to_string())?;
    let config = PipelineConfig { passes, fusion: fusion.clone(), snapshots: false, ..Default::default() };
    run_passes(&mut m, &config).map_err(|e| e.to_string())?;
    // The module is final: what the passes left behind need not be cloned, planned or stored.
    m.compact();
    Ok(m)
}
