//! Generated inputs shared by the benchmarks.
#![allow(dead_code)]

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
            _ => writeln!(s, "  {v} = stablehlo.subtract %v{}, %v{} : {t}", i - 4, i - 1),
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
