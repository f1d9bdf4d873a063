//! hloscope's f32 transcendental approximations (exp, expm1, log, log1p, tanh, logistic,
//! erf, sin, cos, tan, atan2, pow, cbrt), written once and shared by every backend that computes them.
//!
//! - [`lanes`]: the lane primitives ([`Lanes`]) the approximations are written in, one
//!   IEEE or exact bit operation each, and native `f32` lanes ([`Scalar`]).
//! - [`algorithms`]: the approximations themselves, generic over [`Lanes`], and
//!   [`circular`]: sin, cos, tan, atan2, pow and cbrt, the same way. The CPU
//!   target's JIT emitter (`hloscope-core`, `targets/cpu/math.rs`) instantiates them as
//!   Cranelift instructions, the WebGPU target's (`targets/webgpu/approx.rs`) as WGSL
//!   statements; the CUDA emitter is to do the same.
//! - [`block`]: native block functions (`hs_block_<op>_f32(src, dst, n)`, and
//!   `hs_block_div_f32` dividing by one value) that apply one op to a block of
//!   elements, compiled by LLVM for AVX-512, AVX2 or the baseline and chosen at run time;
//!   the JIT's strip-mined kernels call them. They give the JIT's own bits.
//!
//! Why a crate of its own: the block functions are only fast, and only tested as they
//! ship, when LLVM vectorizes them, which it does from opt-level 2. The workspace's dev
//! profile builds its own crates at opt-level 1; this small crate gets opt-level 3 there
//! too (root `Cargo.toml`), so the bit-identity tests of the CPU target
//! (`compiler-core/tests/cpu_block_math.rs`, `cpu_strip_mining.rs`) run in debug builds
//! the same vectorized code as release. It has no dependencies.

pub mod algorithms;
pub mod block;
pub mod circular;
pub mod lanes;

pub use block::{BlockOp, Level};
pub use lanes::{Cmp, Lanes, Scalar};

/// The distance between two f32 in ulps (steps between their bit patterns, `+0` and `-0`
/// one step apart), the unit the approximations' bounds are stated in; a NaN is 0 from
/// another NaN and infinitely far from anything else.
pub fn ulps(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() { 0 } else { u64::MAX };
    }
    let key = |v: f32| {
        let i = v.to_bits() as i32;
        (if i < 0 { i32::MIN.wrapping_sub(i) } else { i }) as i64
    };
    (key(a) - key(b)).unsigned_abs()
}
