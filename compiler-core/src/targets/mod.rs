//! Compiled targets: each turns a [`crate::kernel::KernelPlan`] into something that runs.
//!
//! `cpu` (feature `cpu`, native only): Cranelift JIT for loop and reduction kernels,
//! `gemm` for dots, the interpreter for opaque kernels.

#[cfg(feature = "cpu")]
pub mod cpu;
