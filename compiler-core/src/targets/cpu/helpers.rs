//! Functions the JIT-compiled kernels call: transcendentals and f16 conversions.
//!
//! First step, deliberately simple: transcendentals (exp, log, tanh, erf, pow, ...) go
//! through one dispatcher that computes in f64 with the same std/libm functions the
//! interpreter uses, so f32 results match the interpreter bit for bit. Inline vector
//! polynomial approximations are the next step (issue 4). f16 rounding uses `half`.

use crate::ir::{BinaryOp, UnaryOp};
use half::{bf16, f16};

/// The code of a unary op passed to [`hs_unary_f64`]: its position in `UnaryOp::ALL`.
pub fn unary_code(op: UnaryOp) -> u32 {
    UnaryOp::ALL.iter().position(|&u| u == op).unwrap_or(0) as u32
}

/// The code of a binary op passed to [`hs_binary_f64`]: its position in `BinaryOp::ALL`.
pub fn binary_code(op: BinaryOp) -> u32 {
    BinaryOp::ALL.iter().position(|&b| b == op).unwrap_or(0) as u32
}

pub extern "C" fn hs_unary_f64(op: u32, x: f64) -> f64 {
    use UnaryOp::*;
    match UnaryOp::ALL.get(op as usize) {
        Some(Exp) => x.exp(),
        Some(Expm1) => x.exp_m1(),
        Some(Log) => x.ln(),
        Some(Log1p) => x.ln_1p(),
        Some(Logistic) => 1.0 / (1.0 + (-x).exp()),
        Some(Sqrt) => x.sqrt(),
        Some(Rsqrt) => 1.0 / x.sqrt(),
        Some(Cbrt) => x.cbrt(),
        Some(Tanh) => x.tanh(),
        Some(Sin) => x.sin(),
        Some(Cos) => x.cos(),
        Some(Tan) => x.tan(),
        Some(Erf) => libm::erf(x),
        Some(RoundAfz) => x.round(),
        Some(Sign) => {
            if x.is_nan() || x == 0.0 {
                x
            } else {
                x.signum()
            }
        }
        _ => f64::NAN,
    }
}

pub extern "C" fn hs_binary_f64(op: u32, a: f64, b: f64) -> f64 {
    match BinaryOp::ALL.get(op as usize) {
        Some(BinaryOp::Rem) => a % b,
        Some(BinaryOp::Pow) => a.powf(b),
        Some(BinaryOp::Atan2) => a.atan2(b),
        _ => f64::NAN,
    }
}

pub extern "C" fn hs_round_f16(x: f32) -> f32 {
    f16::from_f32(x).to_f32()
}

pub extern "C" fn hs_round_bf16(x: f32) -> f32 {
    bf16::from_f32(x).to_f32()
}

pub extern "C" fn hs_f16_to_f32(bits: u32) -> f32 {
    f16::from_bits(bits as u16).to_f32()
}

pub extern "C" fn hs_f32_to_f16(x: f32) -> u32 {
    f16::from_f32(x).to_bits() as u32
}
