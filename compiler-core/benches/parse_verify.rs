//! Parse + verify of a 10,000-instruction StableHLO module (and its HLO printout).
//!
//! The module is generated: a layer-like mix of dots, broadcasts, elementwise chains and
//! reductions over 64x64 tensors, the shapes a real model's dump is made of.

use criterion::{criterion_group, criterion_main, Criterion};

mod common;
use common::synthetic_module;

fn bench(c: &mut Criterion) {
    let text = synthetic_module(10_000);
    let module = hloscope_core::parse::mlir::parse(&text).expect("the synthetic module parses");
    assert!(module.instruction_count() >= 10_000);
    hloscope_core::verify::verify(&module).expect("the synthetic module verifies");
    let hlo_text = hloscope_core::print::hlo::print_module(&module);

    let mut group = c.benchmark_group("parse_verify_10k");
    group.sample_size(20);
    group.bench_function("stablehlo", |b| {
        b.iter(|| {
            let m = hloscope_core::parse::mlir::parse(&text).unwrap();
            hloscope_core::verify::verify(&m).unwrap();
            m
        })
    });
    group.bench_function("hlo", |b| {
        b.iter(|| {
            let m = hloscope_core::parse::hlo::parse(&hlo_text).unwrap();
            hloscope_core::verify::verify(&m).unwrap();
            m
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
