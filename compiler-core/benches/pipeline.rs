//! The full default pipeline, with a snapshot (text, graph, changes, cost) after every
//! pass: on the 10,000-instruction synthetic module and on the JAX transformer block.

use criterion::{criterion_group, criterion_main, Criterion};
use hloscope_core::passes::pipeline::{run_pipeline, PipelineConfig};

mod common;

fn bench(c: &mut Criterion) {
    let synthetic = hloscope_core::parse::mlir::parse(&common::synthetic_module(10_000)).expect("parses");
    let block_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../backend/tests/corpus/transformer_block/module.mlir");
    let block_text = std::fs::read_to_string(block_path).expect("the JAX corpus");
    let block = hloscope_core::parse::parse_module(&block_text).expect("parses");
    let config = PipelineConfig::default();

    let mut group = c.benchmark_group("pipeline_with_snapshots");
    group.sample_size(10);
    group.bench_function("synthetic_10k", |b| {
        b.iter_batched(
            || synthetic.clone(),
            |mut m| run_pipeline(&mut m, &config).expect("the pipeline runs"),
            criterion::BatchSize::LargeInput,
        )
    });
    group.bench_function("transformer_block", |b| {
        b.iter_batched(
            || block.clone(),
            |mut m| run_pipeline(&mut m, &config).expect("the pipeline runs"),
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
