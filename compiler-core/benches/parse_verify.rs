//! Parse + verify of a 10,000-instruction StableHLO module (and its HLO printout).
//!
//! The module is generated: a layer-like mix of dots, broadcasts, elementwise chains and
//! reductions over 64x64 tensors, the shapes a real model's dump is made of.

use criterion::{criterion_group, criterion_main, Criterion};
use std::fmt::Write;

/// A StableHLO module with exactly `n` instructions in `main` (parameters included).
pub fn synthetic_module(n: usize) -> String {
    let t = "tensor<64x64xf32>";
    let mut s = String::new();
    writeln!(s, "func.func public @main(%arg0: {t}, %arg1: {t}, %arg2: tensor<64xf32>) -> {t} {{").unwrap();
    let mut count = 3; // the parameters
    let mut last = "%arg0".to_string();
    let mut i = 0;
    writeln!(s, "  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>").unwrap();
    count += 1;
    while count < n {
        let v = format!("%v{i}");
        match i % 8 {
            0 => writeln!(s, "  {v} = stablehlo.dot_general {last}, %arg1, contracting_dims = [1] x [0] : ({t}, {t}) -> {t}"),
            1 => writeln!(s, "  {v} = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<64xf32>) -> {t}"),
            2 => writeln!(s, "  {v} = stablehlo.add {last}, %v{} : {t}", i - 1),
            3 => writeln!(s, "  {v} = stablehlo.tanh {last} : {t}"),
            4 => writeln!(s, "  {v} = stablehlo.multiply {last}, %arg0 : {t}"),
            5 => writeln!(s, "  {v} = stablehlo.reduce({last} init: %zero) applies stablehlo.add across dimensions = [1] : ({t}, tensor<f32>) -> tensor<64xf32>"),
            6 => writeln!(s, "  {v} = stablehlo.broadcast_in_dim %v{}, dims = [0] : (tensor<64xf32>) -> {t}", i - 1),
            _ => writeln!(s, "  {v} = stablehlo.subtract %v{}, {v_prev} : {t}", i - 4, v_prev = format!("%v{}", i - 1)),
        }
        .unwrap();
        if i % 8 != 1 && i % 8 != 5 {
            last = v;
        }
        count += 1;
        i += 1;
    }
    writeln!(s, "  return {last} : {t}\n}}").unwrap();
    s
}

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
