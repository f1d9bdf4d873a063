//! The CPU target's f16/bf16 conversions against the `half` crate, bit for bit, both
//! ways a kernel can do them: inline code (`targets/cpu/half_floats.rs`, what AOT
//! objects use) and calls of the Rust helpers (the JIT's default): f16 to f32 for all 65536 patterns, f32 to f16 and to
//! bf16 on a sweep of the whole f32 range plus every rounding tie and its neighbours
//! at every exponent (NaN payloads, infinities, subnormals and overflow included). The
//! kernels run on raw bytes, so no payload is lost on the way. Needs the `cpu` feature.

#![cfg(feature = "cpu")]

use half::{bf16, f16};
use hloscope_core::targets::cpu;

/// Compiles `hlo` with inline conversions or helper calls, runs it on one input buffer
/// and returns its one output's bytes.
fn run(hlo: &str, input: &[u8], out_bytes: usize, inline: bool) -> Vec<u8> {
    let module = hloscope_core::parse::parse_module(hlo).unwrap_or_else(|e| panic!("{e:?}"));
    let options = cpu::CompileOptions { inline_half_floats: inline, ..Default::default() };
    let exe = cpu::compile_with(&cpu::optimize(&module).unwrap(), options).unwrap();
    let calls = (0..exe.plan().kernels.len()).filter_map(|i| exe.clif(i)).any(|c| c.contains("call fn"));
    assert_eq!(calls, !inline, "inline = {inline}: helper calls in the code: {calls}");
    let mut out = vec![0u8; out_bytes];
    exe.run_bytes(&[input], &mut [&mut out], &mut |_, exec| exec()).unwrap();
    out
}

fn convert(from: &str, to: &str, n: usize) -> String {
    format!("HloModule c\nENTRY e {{\n  x = {from}[{n}] parameter(0)\n  ROOT c = {to}[{n}] convert(x)\n}}")
}

/// A sweep of f32 bit patterns: every 1021st, and at every exponent and both signs the
/// mantissas around the f16 and bf16 rounding points (ties to even, just below and
/// above), the smallest and largest.
fn f32_patterns() -> Vec<u32> {
    let mut v: Vec<u32> = (0..=u32::MAX).step_by(1021).collect();
    for sign in [0u32, 0x8000_0000] {
        for exp in 0..=255u32 {
            for man in [
                0u32, 1, 0x7F_FFFF, 0x40_0000, 0x1000, 0x0FFF, 0x1001, 0x3000, 0x2FFF, 0x3001, 0x8000, 0x7FFF, 0x8001,
                0x1_8000, 0x1_7FFF, 0x1_8001,
            ] {
                v.push(sign | exp << 23 | man);
            }
        }
    }
    v
}

fn bytes32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u16s(b: &[u8]) -> Vec<u16> {
    b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}

#[test]
fn f16_to_f32_matches_half_for_every_pattern() {
    let n = 1 << 16;
    let input: Vec<u8> = (0..n as u32).flat_map(|h| (h as u16).to_le_bytes()).collect();
    for inline in [true, false] {
        let out = run(&convert("f16", "f32", n), &input, 4 * n, inline);
        for (h, c) in out.chunks_exact(4).enumerate() {
            let got = u32::from_le_bytes(c.try_into().unwrap());
            let want = f16::from_bits(h as u16).to_f32().to_bits();
            assert_eq!(got, want, "inline = {inline}, f16 {h:#06x}: {got:#010x}, half says {want:#010x}");
        }
    }
}

#[test]
fn f32_to_f16_and_bf16_match_half() {
    let pats = f32_patterns();
    let n = pats.len();
    let input = bytes32(&pats);
    for inline in [true, false] {
        let f16s = u16s(&run(&convert("f32", "f16", n), &input, 2 * n, inline));
        let bf16s = u16s(&run(&convert("f32", "bf16", n), &input, 2 * n, inline));
        for (i, &p) in pats.iter().enumerate() {
            let x = f32::from_bits(p);
            let want = f16::from_f32(x).to_bits();
            assert_eq!(
                f16s[i], want,
                "inline = {inline}, f32 {p:#010x} ({x:e}) to f16: {:#06x}, half says {want:#06x}",
                f16s[i]
            );
            let want = bf16::from_f32(x).to_bits();
            assert_eq!(
                bf16s[i], want,
                "inline = {inline}, f32 {p:#010x} ({x:e}) to bf16: {:#06x}, half says {want:#06x}",
                bf16s[i]
            );
        }
    }
}

#[test]
fn f16_arithmetic_rounds_after_every_op() {
    // (a * b) + c in f16, each op rounded: compared with half's own arithmetic (which
    // computes in f32 and rounds), over a grid of f16 values with ties and subnormals.
    let vals: Vec<u16> = (0..=u16::MAX).step_by(97).collect();
    let n = vals.len();
    let hlo = format!(
        "HloModule m\nENTRY e {{\n  x = f16[{n}] parameter(0)\n  h = f16[] constant(0.3335)\n  b = f16[{n}] broadcast(h), dimensions={{}}\n  m = f16[{n}] multiply(x, b)\n  ROOT s = f16[{n}] add(m, x)\n}}"
    );
    let input: Vec<u8> = vals.iter().flat_map(|h| h.to_le_bytes()).collect();
    let k = f16::from_f32(0.3335);
    for inline in [true, false] {
        let out = u16s(&run(&hlo, &input, 2 * n, inline));
        for (i, &h) in vals.iter().enumerate() {
            let x = f16::from_bits(h);
            let want = (x * k) + x;
            let got = f16::from_bits(out[i]);
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "inline = {inline}, x = {x} ({h:#06x}): {got}, half says {want}"
            );
        }
    }
}
