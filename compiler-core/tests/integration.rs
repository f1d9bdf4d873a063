//! Every integration test of this crate in one binary: one link instead of one per
//! file (each would link the whole compiler, its JITs and GPU runtimes), which keeps a
//! clean CI build within its time and disk. Each file stays a module of its own.

// The helpers several tests share, declared once.
#[allow(dead_code)]
#[path = "conformance/checks.rs"]
mod checks;
#[cfg(feature = "cpu")]
#[path = "common/cpu.rs"]
mod common;
#[path = "common/corpus.rs"]
mod corpus;
#[cfg(feature = "cpu")]
#[path = "common/math_kernel.rs"]
mod math_kernel;
#[path = "common/random_graphs.rs"]
mod random_graphs;
#[allow(dead_code)]
#[path = "conformance/selection.rs"]
mod selection;

// The tests, a module per file (the interpreter's conformance suite in its folder).
mod chlo;
#[path = "conformance/main.rs"]
mod conformance;
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
mod webgpu_wide;
