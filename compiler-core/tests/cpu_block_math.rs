//! The native block functions (`targets::cpu::block_math`) against the JIT's own inline
//! code: for every op and every dispatch level this CPU has, the block results must be
//! bit for bit those of the JIT-compiled 4-lane loop of the same op with the same fma
//! setting (NaN equals any NaN). Inputs: the dense sweep of `cpu_math.rs` (every 509th
//! bit pattern of the whole f32 range: subnormals, infinities, NaNs), random bit
//! patterns, uniform samples and special values; then odd lengths, empty and one-element
//! blocks through the exported symbols, and blocks mixing exp's rare inputs (`|x| > 87`,
//! infinities, NaN) with ordinary ones. Needs the `cpu` feature.

#![cfg(feature = "cpu")]

use crate::common;
use crate::math_kernel;

use common::{math_inputs, Rng};

use hloscope_core::ir::UnaryOp;
use hloscope_core::targets::cpu::block_math::{self, Level};
use hloscope_core::targets::cpu::math;
use math_kernel::{compile, Op};

const OPS: [UnaryOp; 7] =
    [UnaryOp::Exp, UnaryOp::Expm1, UnaryOp::Log, UnaryOp::Log1p, UnaryOp::Tanh, UnaryOp::Logistic, UnaryOp::Erf];

/// The JIT's 4-lane results on `x` (padded with zeros to a multiple of 4).
fn jit(op: UnaryOp, fma: bool, x: &[f32]) -> Vec<f32> {
    let mut xs = x.to_vec();
    xs.resize(x.len().next_multiple_of(4), 0.0);
    let mut out = vec![0f32; xs.len()];
    let (module, k) = compile(Op::U(op), true, Some(fma));
    k(xs.as_ptr(), xs.as_ptr(), out.as_mut_ptr(), xs.len() as i64);
    // SAFETY: `k` is not used after this.
    unsafe { module.free_memory() };
    out.truncate(x.len());
    out
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Asserts `got` equals `want` bit for bit (NaN = NaN), naming the first few mismatches.
fn assert_same(what: &str, x: &[f32], got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    let bad: Vec<String> = (0..x.len())
        .filter(|&i| !same(got[i], want[i]))
        .take(5)
        .map(|i| {
            format!(
                "x={:e} ({:#010x}): block {:e} ({:#010x}), jit {:e} ({:#010x})",
                x[i],
                x[i].to_bits(),
                got[i],
                got[i].to_bits(),
                want[i],
                want[i].to_bits()
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} mismatches, first:\n  {}",
        (0..x.len()).filter(|&i| !same(got[i], want[i])).count(),
        bad.join("\n  ")
    );
}

/// The levels this CPU runs.
fn levels() -> Vec<Level> {
    Level::ALL.into_iter().filter(|l| l.available()).collect()
}

/// The math inputs ([`math_inputs`]) with 300,000 uniform samples, plus the edges of
/// exp's fast range (69 without fma, 87 with), tanh's clamp and tiny case, and -NaN.
fn inputs(lo: f32, hi: f32, seed: u64) -> Vec<f32> {
    let extra = [-f32::NAN, 69.0, -69.0, 69.000_01, 87.0, -87.0, 87.000_01, -87.000_01, 9.5, 4.0, -4.0, 2.441_406_3e-4];
    math_inputs(lo, hi, seed, 300_000, &extra)
}

fn range(op: UnaryOp) -> (f32, f32) {
    match op {
        UnaryOp::Erf => (-5.0, 5.0),
        UnaryOp::Log1p => (-1.0, 10.0),
        UnaryOp::Log => (0.0, 1000.0),
        _ => (-110.0, 90.0),
    }
}

#[test]
fn every_level_matches_the_jit_bit_for_bit() {
    let levels = levels();
    assert!(levels.contains(&Level::Portable));
    for (k, op) in OPS.into_iter().enumerate() {
        let (lo, hi) = range(op);
        let x = inputs(lo, hi, 0x5DEE_CE66_D1CE_4E5B ^ k as u64);
        for fma in [true, false] {
            let want = jit(op, fma, &x);
            for &level in levels.iter().filter(|l| l.fused() == fma) {
                let mut got = x.clone();
                block_math::apply(op, level, &mut got).unwrap();
                assert_same(&format!("{op:?} at {level:?} (fma={fma})"), &x, &got, &want);
                println!("{op:?} at {level:?}: {} inputs bit-identical to the JIT (fma={fma})", x.len());
            }
        }
    }
}

/// The JIT's fma setting on this machine, which the exported symbols' level must share.
fn host_fma() -> bool {
    let isa = cranelift_native::builder()
        .unwrap()
        .finish(cranelift_codegen::settings::Flags::new(cranelift_codegen::settings::builder()))
        .unwrap();
    math::has_fma(&*isa)
}

#[test]
fn symbols_lanes_and_levels() {
    assert_eq!(block_math::block_function(UnaryOp::Exp).map(|f| (f.name, f.symbol)), Some(("exp", "hs_block_exp_f32")));
    assert_eq!(
        block_math::block_function(UnaryOp::Logistic).map(|f| (f.name, f.symbol)),
        Some(("logistic", "hs_block_logistic_f32"))
    );
    assert_eq!(block_math::block_function(UnaryOp::Sin), None);
    assert_eq!(block_math::block_function(UnaryOp::Abs), None);
    let symbols = block_math::block_symbols();
    // Every op's, and the division's.
    assert_eq!(symbols.len(), OPS.len() + 1);
    assert!(symbols.iter().any(|s| s.0 == block_math::DIV_SYMBOL));
    for op in OPS {
        let name = block_math::block_function(op).unwrap().symbol;
        assert_eq!(symbols.iter().filter(|s| s.0 == name).count(), 1, "{name}");
    }
    let best = block_math::level();
    assert!(best.available());
    let lanes = block_math::native_lanes();
    assert_eq!(
        lanes,
        match best {
            Level::Avx512 => 16,
            Level::Avx2 => 8,
            Level::Portable => 4,
        }
    );
    // Wherever the emitter would call the blocks (more than 4 lanes), they fuse as the JIT.
    if lanes > 4 {
        assert_eq!(best.fused(), host_fma());
    }
    // A level this CPU lacks is an error, as is an op without a block function.
    for level in Level::ALL.into_iter().filter(|l| !l.available()) {
        assert!(block_math::apply(UnaryOp::Exp, level, &mut [1.0]).is_err());
    }
    assert!(block_math::apply(UnaryOp::Sin, Level::Portable, &mut [1.0]).is_err());
}

/// The exported function of `op` (as the JIT would call it).
type BlockFn = unsafe extern "C" fn(*const f32, *mut f32, i64);

fn symbol(op: UnaryOp) -> BlockFn {
    let name = block_math::block_function(op).unwrap().symbol;
    let addr = block_math::block_symbols().into_iter().find(|s| s.0 == name).unwrap().1;
    // SAFETY: every block function has this signature.
    unsafe { std::mem::transmute::<*const u8, BlockFn>(addr) }
}

#[test]
fn lengths_empty_one_and_odd() {
    let fma = host_fma();
    let mut rng = Rng(99);
    let x: Vec<f32> = (0..1000).map(|i| if i % 7 == 0 { rng.f32_bits() } else { rng.uniform(-20.0, 20.0) }).collect();
    for op in OPS {
        // Log of the magnitudes too, so that most results are numbers.
        let x: Vec<f32> =
            if matches!(op, UnaryOp::Log | UnaryOp::Log1p) { x.iter().map(|v| v.abs()).collect() } else { x.clone() };
        let want = jit(op, fma, &x);
        let f = symbol(op);
        // n = 0 and negative n leave the buffer alone (and a null pointer is no error).
        let mut buf = x[..4].to_vec();
        let p = buf.as_mut_ptr();
        // SAFETY (this and the calls below): `buf` holds at least `n` elements.
        unsafe {
            f(p, p, 0);
            f(p, p, -3);
            f(std::ptr::null(), p, 5);
        }
        assert_eq!(buf, x[..4]);
        for n in [1usize, 17, 33, 1000] {
            // Through the symbol, at the detected level, with a canary after the block.
            let mut buf = x[..n].to_vec();
            buf.push(-7.5);
            let p = buf.as_mut_ptr();
            unsafe { f(p, p, n as i64) };
            assert_eq!(buf[n], -7.5, "{op:?} n={n} wrote past the block");
            // From the input into another buffer, as for an argument loaded directly.
            let mut out = vec![-7.5f32; n + 1];
            unsafe { f(x.as_ptr(), out.as_mut_ptr(), n as i64) };
            assert_eq!(out[n], -7.5, "{op:?} n={n} wrote past the block");
            if block_math::level().fused() == fma {
                assert_same(&format!("{op:?} symbol n={n}"), &x[..n], &buf[..n], &want[..n]);
                assert_same(&format!("{op:?} symbol from the input n={n}"), &x[..n], &out[..n], &want[..n]);
            }
            // And at each level (starting at an odd offset too).
            for level in levels() {
                let want_l = if level.fused() == fma { want.clone() } else { jit(op, level.fused(), &x) };
                let mut b = x[..n].to_vec();
                block_math::apply(op, level, &mut b).unwrap();
                assert_same(&format!("{op:?} {level:?} n={n}"), &x[..n], &b, &want_l[..n]);
                let mut b = x[1..n.min(999) + 1].to_vec();
                block_math::apply(op, level, &mut b).unwrap();
                assert_same(
                    &format!("{op:?} {level:?} offset 1 n={n}"),
                    &x[1..b.len() + 1],
                    &b,
                    &want_l[1..b.len() + 1],
                );
            }
        }
    }
    // Hand-checked: exp(1) = e and exp(0) = 1 at every level, log(1) = 0, tanh(-0) = -0.
    for level in levels() {
        let mut v = [1.0f32, 0.0];
        block_math::apply(UnaryOp::Exp, level, &mut v).unwrap();
        assert_eq!(v, [2.718_281_7, 1.0]);
    }
    let mut v = [1.0f32, -0.0];
    // SAFETY: one element each.
    unsafe {
        let p = v.as_mut_ptr();
        symbol(UnaryOp::Log)(p, p, 1);
        symbol(UnaryOp::Tanh)(p.add(1), p.add(1), 1);
    }
    assert_eq!(v.map(f32::to_bits), [0.0f32.to_bits(), (-0.0f32).to_bits()]);
}

#[test]
fn blocks_mixing_rare_and_ordinary_values() {
    // exp takes its fast form per chunk of the block, the JIT per vector of 4; a rare
    // value (|x| beyond the fast range, infinities; NaN is not rare) moves its chunk or
    // vector to the clamped form. Each case puts one rare value at a different position
    // among ordinary ones, including both sides of a chunk boundary, and every lane must
    // still equal the JIT (whose vectors mix the same way).
    let ordinary = [0.5f32, -1.25, 3.0, -68.99, 60.0, -86.9, 86.9, 1e-30, -0.0, 20.0];
    let rare = [-87.5f32, -100.0, -103.5, 88.5, 88.8, 200.0, 70.0, -69.5, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
    let chunk = block_math::EXP_CHUNK;
    let n = 3 * chunk + 5;
    let base: Vec<f32> = (0..n).map(|i| ordinary[i % ordinary.len()]).collect();
    let mut blocks = vec![base.clone()];
    for (k, &r) in rare.iter().enumerate() {
        for pos in [0, 1, chunk - 1, chunk, chunk + 2 + k, 2 * chunk + 7, n - 1] {
            let mut b = base.clone();
            b[pos] = r;
            blocks.push(b);
        }
    }
    // Every value rare but one, and rare values in every lane of a chunk.
    blocks.push((0..n).map(|i| if i == chunk + 3 { 1.5 } else { rare[i % rare.len()] }).collect());
    for op in [UnaryOp::Exp, UnaryOp::Logistic, UnaryOp::Erf, UnaryOp::Tanh, UnaryOp::Expm1] {
        for level in levels() {
            let fma = level.fused();
            for b in &blocks {
                let want = jit(op, fma, b);
                let mut got = b.clone();
                block_math::apply(op, level, &mut got).unwrap();
                assert_same(&format!("{op:?} {level:?} mixed"), b, &got, &want);
            }
        }
    }
    // Hand-checked exp values inside a mixed block: a subnormal result (exp(-100) =
    // 27 * 2^-149), overflow, underflow to 0, and exp(0.5) = 1.64872127 (1.6487212 in f32).
    let mut b = base.clone();
    b[3] = -100.0;
    b[4] = 88.8;
    b[5] = f32::NEG_INFINITY;
    for level in levels() {
        let mut got = b.clone();
        block_math::apply(UnaryOp::Exp, level, &mut got).unwrap();
        assert_eq!(
            [got[3].to_bits(), got[4].to_bits(), got[5].to_bits()],
            [27, f32::INFINITY.to_bits(), 0],
            "{level:?}"
        );
        assert_eq!(got[0], 1.648_721_2, "{level:?}");
    }
}
