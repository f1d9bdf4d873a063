//! f16 and bf16 conversions emitted inline as Cranelift IR: the kernels carry both in
//! f32 registers and round after every op, and load and store their 16-bit patterns.
//!
//! The bits are those of the `half` crate (what the interpreter and the tests use):
//! round to nearest even, overflow to infinity, f16 subnormals, NaNs kept quiet with
//! their payload's top bits. Written without branches (every case computed, one chosen
//! with selects), so the code has no calls: kernels with f16/bf16 need no Rust helper,
//! and AOT objects take them as they are. Scalars only (`F32`, `I32`).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;

fn bits(b: &mut FunctionBuilder, x: Value) -> Value {
    b.ins().bitcast(types::I32, MemFlagsData::new(), x)
}

fn float(b: &mut FunctionBuilder, i: Value) -> Value {
    b.ins().bitcast(types::F32, MemFlagsData::new(), i)
}

/// `a & mask != 0 && a & sticky != 0`: round-to-nearest-even's "round up" test, with
/// `mask` the first dropped bit and `sticky` the other dropped bits plus the kept last
/// bit (`3 * mask - 1`).
fn round_up(b: &mut FunctionBuilder, a: Value, mask: Value, sticky: Value) -> Value {
    let half = b.ins().band(a, mask);
    let half = b.ins().icmp_imm_s(IntCC::NotEqual, half, 0);
    let rest = b.ins().band(a, sticky);
    let rest = b.ins().icmp_imm_s(IntCC::NotEqual, rest, 0);
    let up = b.ins().band(half, rest);
    b.ins().uextend(types::I32, up)
}

/// The f16 bit pattern (in the low 16 bits of an `I32`) nearest to f32 `x`.
pub fn f32_to_f16_bits(b: &mut FunctionBuilder, x: Value) -> Value {
    let x = bits(b, x);
    let sign = b.ins().band_imm_s(x, 0x8000_0000u32 as i32 as i64);
    let hs = b.ins().ushr_imm_u(sign, 16);
    let exp = b.ins().band_imm_s(x, 0x7F80_0000);
    let man = b.ins().band_imm_s(x, 0x007F_FFFF);
    // The f16 exponent: unbiased + 15.
    let e = b.ins().ushr_imm_u(exp, 23);
    let e = b.ins().iadd_imm_s(e, 15 - 127);

    // Infinity or NaN (quiet, top payload bits kept).
    let is_nan = b.ins().icmp_imm_s(IntCC::NotEqual, man, 0);
    let nan_bit = b.ins().iconst(types::I32, 0x0200);
    let zero = b.ins().iconst(types::I32, 0);
    let nan_bit = b.ins().select(is_nan, nan_bit, zero);
    let man13 = b.ins().ushr_imm_u(man, 13);
    let inf = b.ins().bor_imm_s(hs, 0x7C00);
    let special = b.ins().bor(inf, nan_bit);
    let special = b.ins().bor(special, man13);

    // Normal: sign | e << 10 | man >> 13, rounded (a carry may reach the exponent, up
    // to infinity, which is right).
    let e10 = b.ins().ishl_imm_u(e, 10);
    let normal = b.ins().bor(hs, e10);
    let normal = b.ins().bor(normal, man13);
    let mask = b.ins().iconst(types::I32, 0x1000);
    let sticky = b.ins().iconst(types::I32, 0x2FFF);
    let up = round_up(b, man, mask, sticky);
    let normal = b.ins().iadd(normal, up);

    // Subnormal (e <= 0): the full significand shifted right by 14 - e, in 14..=24
    // where it matters (clamped so that every shift stays in range).
    let full = b.ins().bor_imm_s(man, 0x0080_0000);
    let fourteen = b.ins().iconst(types::I32, 14);
    let sh = b.ins().isub(fourteen, e);
    let lo = b.ins().iconst(types::I32, 1);
    let hi = b.ins().iconst(types::I32, 31);
    let sh = b.ins().smax(sh, lo);
    let sh = b.ins().smin(sh, hi);
    let sub_man = b.ins().ushr(full, sh);
    let one = b.ins().iconst(types::I32, 1);
    let sh1 = b.ins().iadd_imm_s(sh, -1);
    let round_bit = b.ins().ishl(one, sh1);
    let three = b.ins().imul_imm_s(round_bit, 3);
    let sub_sticky = b.ins().iadd_imm_s(three, -1);
    let sub_up = round_up(b, full, round_bit, sub_sticky);
    let sub_man = b.ins().iadd(sub_man, sub_up);
    let subnormal = b.ins().bor(hs, sub_man);

    let over = b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, e, 0x1F);
    let r = b.ins().select(over, inf, normal);
    // Below 2^-25 (14 - e > 24) nothing is left but the sign.
    let gone = b.ins().icmp_imm_s(IntCC::SignedLessThan, e, -10);
    let sub = b.ins().select(gone, hs, subnormal);
    let is_sub = b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, e, 0);
    let r = b.ins().select(is_sub, sub, r);
    let is_special = b.ins().icmp_imm_s(IntCC::Equal, exp, 0x7F80_0000);
    b.ins().select(is_special, special, r)
}

/// The f32 value of the f16 bit pattern in the low 16 bits of `h` (an `I32`, upper
/// bits zero). Exact.
pub fn f16_bits_to_f32(b: &mut FunctionBuilder, h: Value) -> Value {
    let sign = b.ins().band_imm_s(h, 0x8000);
    let sign = b.ins().ishl_imm_u(sign, 16);
    let hexp = b.ins().band_imm_s(h, 0x7C00);
    let hman = b.ins().band_imm_s(h, 0x03FF);
    let mag = b.ins().band_imm_s(h, 0x7FFF);

    // Normal: rebias the exponent (+112 = 127 - 15) and widen the significand.
    let wide = b.ins().ishl_imm_u(mag, 13);
    let wide = b.ins().iadd_imm_s(wide, 112 << 23);
    let normal = b.ins().bor(wide, sign);
    // Subnormal (and zero): hman * 2^-24, exact in f32.
    let m = b.ins().fcvt_from_uint(types::F32, hman);
    let scale = b.ins().f32const(f32::from_bits(0x3380_0000)); // 2^-24
    let m = b.ins().fmul(m, scale);
    let m = bits(b, m);
    let subnormal = b.ins().bor(m, sign);
    // Infinity, or a NaN made quiet with its payload.
    let man13 = b.ins().ishl_imm_u(hman, 13);
    let inf = b.ins().bor_imm_s(sign, 0x7F80_0000);
    let nan = b.ins().bor_imm_s(sign, 0x7FC0_0000);
    let nan = b.ins().bor(nan, man13);
    let is_nan = b.ins().icmp_imm_s(IntCC::NotEqual, hman, 0);
    let special = b.ins().select(is_nan, nan, inf);

    let is_sub = b.ins().icmp_imm_s(IntCC::Equal, hexp, 0);
    let r = b.ins().select(is_sub, subnormal, normal);
    let is_special = b.ins().icmp_imm_s(IntCC::Equal, hexp, 0x7C00);
    let r = b.ins().select(is_special, special, r);
    float(b, r)
}

/// `x` rounded to the nearest f16, as an f32.
pub fn round_f16(b: &mut FunctionBuilder, x: Value) -> Value {
    let h = f32_to_f16_bits(b, x);
    f16_bits_to_f32(b, h)
}

/// `x` rounded to the nearest bf16 (its top 16 bits), as an f32; a NaN stays a NaN,
/// made quiet.
pub fn round_bf16(b: &mut FunctionBuilder, x: Value) -> Value {
    let x = bits(b, x);
    let top = b.ins().ushr_imm_u(x, 16);
    let mask = b.ins().iconst(types::I32, 0x8000);
    let sticky = b.ins().iconst(types::I32, 0x0001_7FFF);
    let up = round_up(b, x, mask, sticky);
    let rounded = b.ins().iadd(top, up);
    let quiet = b.ins().bor_imm_s(top, 0x0040);
    let mag = b.ins().band_imm_s(x, 0x7FFF_FFFF);
    let is_nan = b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, mag, 0x7F80_0000);
    let r = b.ins().select(is_nan, quiet, rounded);
    let r = b.ins().ishl_imm_u(r, 16);
    float(b, r)
}
