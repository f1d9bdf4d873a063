//! Every integration test of this crate in one binary: one link instead of one per
//! file (each would link the whole compiler, its JITs and GPU runtimes), which keeps a
//! clean CI build within its time and disk. Each file stays a module of its own.

mod aot;
mod bench;
mod cache;
mod cli;
mod compile_explain;
mod cpu_target;
mod hostile_cli;
mod serve;
