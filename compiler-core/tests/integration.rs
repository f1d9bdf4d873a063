//! Every integration test of this crate in one binary: one link instead of one per
//! file (each would link the whole compiler, its JITs and GPU runtimes), which keeps a
//! clean CI build within its time and disk. Each file stays a module of its own.

mod chlo;
mod conformance_cpu;
mod conformance_webgpu;
mod cpu_block_math;
mod cpu_data_kernels;
mod cpu_half_floats;
mod cpu_math;
mod cpu_random;
mod cpu_simd;
mod cpu_strip_mining;
mod cpu_target;
mod cuda_target;
mod fusion_samples;
mod fuzz_parsers;
mod hlo_text;
mod hostile_inputs;
mod memory_passes;
mod parse_mlir;
mod pipeline;
mod pipeline_random;
mod plan_snapshots;
mod plan_verify;
mod provenance;
mod semantics_cpu;
mod verify_corpus;
mod wasm_target;
mod webgpu_target;
