//! Compiled targets: each turns a [`crate::kernel::KernelPlan`] into something that runs.
//!
//! `cpu` (feature `cpu`, native only): Cranelift JIT for loop and reduction kernels,
//! `gemm` for dots, the interpreter for opaque kernels. Its code generation alone
//! (feature `cpu-codegen`) also builds for wasm32: [`cpu::listing`] shows each kernel's
//! CLIF and machine code for a chosen ISA without running it.

#[cfg(feature = "cpu-codegen")]
pub mod cpu;
