//! Functions the JIT-compiled kernels call: f16 and bf16 rounding and conversions
//! (with `half`, which uses the CPU's F16C conversions where it has them: faster than
//! the inline code of `half_floats.rs` that AOT objects use, as Cranelift does not emit
//! F16C). Transcendentals are inline approximations or C library calls: see
//! [`super::math`].

use half::{bf16, f16};

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
