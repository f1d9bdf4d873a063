//! hloscope-core: the compiler behind hloscope.
//!
//! Text (StableHLO or XLA HLO) is parsed by [`parse`] into an XLA-style [`ir::Module`],
//! checked by [`verify`], printed back by [`print`], and executed by the reference
//! interpreter in [`interp`], the numerics oracle for every pass and target. [`kernel`]
//! plans the kernels of a fused module for every target; [`targets`] compiles them
//! (the CPU JIT behind the `cpu` feature). [`limits`] bounds the sizes of a module
//! before any of them allocates for it. [`npy`] reads and writes NumPy `.npy` bytes and
//! matches them to a module's parameters.
//!
//! Architecture invariant: this crate does no IO (no files, no network, no clocks), so
//! that it builds and runs unchanged in the browser as WebAssembly.

pub mod api;
pub mod cost;
pub mod interp;
pub mod ir;
pub mod kernel;
pub mod limits;
pub mod npy;
pub mod parse;
pub mod passes;
pub mod print;
pub mod targets;
pub mod verify;
