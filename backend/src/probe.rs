//! `--profile measured`: a hardware profile for the CPU at hand, measured on the spot.
//!
//! Three short probes, each the best of a few runs (these machines are noisy; the best
//! run is the one least disturbed): memory bandwidth from copying a 32 MiB buffer,
//! f32 and f64 FLOP/s from a 256³ matrix product compiled by hloscope's own CPU target
//! (so the numbers are what its kernels can reach), and the per-kernel overhead from
//! running a one-element kernel. The CPU has no tensor cores: f16 dots get the f32 peak.

use hloscope_core::cost::Profile;
use hloscope_core::ir::{ElementType, Literal, Shape, Value};
use hloscope_core::targets::cpu;
use std::time::{Duration, Instant};

fn best_of(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or(Duration::from_secs(1))
        .max(Duration::from_nanos(1))
}

/// Bytes per second moved by a large copy (read + write).
fn bandwidth() -> f64 {
    let n = 8 << 20; // 8 Mi f32 = 32 MiB
    let src = vec![1.0f32; n];
    let mut dst = vec![0.0f32; n];
    let t = best_of(5, || {
        dst.copy_from_slice(&src);
        std::hint::black_box(&mut dst);
    });
    (2 * n * 4) as f64 / t.as_secs_f64()
}

/// FLOP/s of an n³ matrix product of `elem` on the CPU target.
fn dot_flops(elem: ElementType) -> Result<f64, String> {
    let n = 256;
    let ty = format!("tensor<{n}x{n}x{}>", elem.mlir_name());
    let text = format!(
        "func.func @main(%a: {ty}, %b: {ty}) -> {ty} {{\n  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : ({ty}, {ty}) -> {ty}\n  return %0 : {ty}\n}}\n"
    );
    let module = hloscope_core::parse::mlir::parse(&text).map_err(|e| e.to_string())?;
    let exe = cpu::compile(&module)?;
    let x = Value::Array(Literal::from_f64s(Shape::new(elem, vec![n, n]), &vec![0.5; (n * n) as usize]));
    let args = [x.clone(), x];
    exe.run(&args)?; // warm-up: page in the buffers
    let mut result = Ok(());
    let t = best_of(5, || {
        if let Err(e) = exe.run(&args) {
            result = Err(e);
        }
    });
    result?;
    Ok(2.0 * (n * n * n) as f64 / t.as_secs_f64())
}

/// Seconds to run one tiny kernel end to end.
fn kernel_overhead() -> Result<f64, String> {
    let text = "func.func @main(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.add %a, %a : tensor<f32>\n  return %0 : tensor<f32>\n}\n";
    let module = hloscope_core::parse::mlir::parse(text).map_err(|e| e.to_string())?;
    let exe = cpu::compile(&module)?;
    let args = [Value::Array(Literal::scalar_f64(ElementType::F32, 1.0))];
    let runs = 200;
    let t = best_of(5, || {
        for _ in 0..runs {
            let _ = std::hint::black_box(exe.run(&args));
        }
    });
    Ok(t.as_secs_f64() / runs as f64)
}

/// Measures this machine's CPU (about a quarter of a second).
pub fn measure_cpu() -> Result<Profile, String> {
    let f32_peak = dot_flops(ElementType::F32)?;
    let f64_peak = dot_flops(ElementType::F64)?;
    Ok(Profile::measured("measured (this CPU)", f32_peak, f32_peak, f64_peak, bandwidth(), kernel_overhead()?))
}
