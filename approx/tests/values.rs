//! Hand-checked values of the approximations, through the block functions at every
//! level this CPU has (buffers long enough that the vectorized loops run, plus a
//! remainder), and the safety of the exported functions on empty or null input.
//! The bit-identity with the JIT and the error sweeps are in `compiler-core`'s tests
//! (`cpu_block_math.rs`, `cpu_math.rs`): they need the JIT.

use hloscope_approx::block::{self, BlockOp, Level};

/// Distance in units in the last place between two finite f32 of the same sign.
fn ulps(a: f32, b: f32) -> u32 {
    (a.to_bits() as i32).abs_diff(b.to_bits() as i32)
}

/// `op` of `x` at `level`, checked to be the same for all 37 copies in a buffer
/// (two 16-lane vectors and a tail of 5).
fn at(op: BlockOp, level: Level, x: f32) -> f32 {
    let mut buf = [x; 37];
    block::apply(op, level, &mut buf).unwrap();
    assert!(buf.iter().all(|y| y.to_bits() == buf[0].to_bits()), "{op:?} {level:?} {x}: {buf:?}");
    buf[0]
}

fn levels() -> impl Iterator<Item = Level> {
    Level::ALL.into_iter().filter(|l| l.available())
}

#[test]
fn exact_values() {
    for level in levels() {
        assert_eq!(at(BlockOp::Exp, level, 0.0).to_bits(), 1.0f32.to_bits(), "{level:?}");
        assert_eq!(at(BlockOp::Log, level, 1.0).to_bits(), 0.0f32.to_bits(), "{level:?}");
        assert_eq!(at(BlockOp::Logistic, level, 0.0), 0.5, "{level:?}");
        assert_eq!(at(BlockOp::Tanh, level, 0.0).to_bits(), 0.0f32.to_bits(), "{level:?}");
        // Signed zeros and tiny arguments come out as themselves.
        assert_eq!(at(BlockOp::Expm1, level, -0.0).to_bits(), (-0.0f32).to_bits(), "{level:?}");
        assert_eq!(at(BlockOp::Log1p, level, 1e-9), 1e-9, "{level:?}");
        assert_eq!(at(BlockOp::Erf, level, -0.0).to_bits(), (-0.0f32).to_bits(), "{level:?}");
        // Special values.
        assert_eq!(at(BlockOp::Exp, level, f32::INFINITY), f32::INFINITY, "{level:?}");
        assert_eq!(at(BlockOp::Exp, level, 100.0), f32::INFINITY, "{level:?}");
        // Results that round to +0: masked attention scores (-1e9) are full of them.
        for x in [f32::NEG_INFINITY, -1e9, -104.5, -104.0] {
            assert_eq!(at(BlockOp::Exp, level, x).to_bits(), 0, "exp({x}) at {level:?}");
        }
        assert_eq!(at(BlockOp::Log, level, 0.0), f32::NEG_INFINITY, "{level:?}");
        assert!(at(BlockOp::Log, level, -1.0).is_nan(), "{level:?}");
        assert!(at(BlockOp::Exp, level, f32::NAN).is_nan(), "{level:?}");
        assert_eq!(at(BlockOp::Tanh, level, 20.0), 1.0, "{level:?}");
        assert_eq!(at(BlockOp::Erf, level, -5.0), -1.0, "{level:?}");
    }
}

#[test]
fn values_within_their_bounds() {
    // (op, x, the correctly rounded f32 result, the ulp bound of math.rs's table).
    let cases = [
        (BlockOp::Exp, 1.0, 2.718_281_7, 1),
        (BlockOp::Exp, -10.0, 4.539_993e-5, 1),
        // A subnormal result (exp(-100) = 3.7200760e-44, 26.5 times the smallest
        // subnormal): the clamped path's two-factor scaling rounds it once.
        (BlockOp::Exp, -100.0, f32::from_bits(27), 1),
        (BlockOp::Expm1, 1e-3, 1.000_500_2e-3, 1),
        (BlockOp::Log, 10.0, std::f32::consts::LN_10, 1),
        (BlockOp::Log1p, -0.5, -std::f32::consts::LN_2, 1),
        (BlockOp::Tanh, 0.5, 0.462_117_17, 2),
        (BlockOp::Logistic, 2.0, 0.880_797_1, 2),
        (BlockOp::Logistic, -2.0, 0.119_202_92, 2),
        (BlockOp::Erf, 0.5, 0.520_499_9, 2),
        (BlockOp::Erf, 1.5, 0.966_105_16, 2),
    ];
    for level in levels() {
        for (op, x, want, bound) in cases {
            let got = at(op, level, x);
            assert!(ulps(got, want) <= bound, "{op:?}({x}) at {level:?}: {got} vs {want}");
        }
    }
}

#[test]
fn exported_functions_on_empty_and_null_input() {
    for op in BlockOp::ALL {
        let f = op.function();
        let mut buf = [1.0f32, 2.0];
        let p = buf.as_mut_ptr();
        // SAFETY: `buf` is valid for 2 elements; n = 0 and n < 0 touch none, and a
        // null pointer is documented to do nothing.
        unsafe {
            f(p, p, 0);
            f(p, p, -3);
            f(std::ptr::null(), p, 5);
            f(p, std::ptr::null_mut(), 5);
        }
        assert_eq!(buf, [1.0, 2.0], "{op:?}");
        // SAFETY: valid for 1 element; the second must stay.
        unsafe { f(p, p, 1) };
        assert_ne!(buf[0], 1.0, "{op:?}");
        assert_eq!(buf[1], 2.0, "{op:?}");
        // From one buffer into another: the source stays.
        let src = [0.5f32; 3];
        let mut dst = [7.0f32; 4];
        // SAFETY: valid for 3 elements each, not overlapping.
        unsafe { f(src.as_ptr(), dst.as_mut_ptr(), 3) };
        assert_eq!(src, [0.5; 3]);
        assert_eq!(dst[0].to_bits(), at(op, block::level(), 0.5).to_bits(), "{op:?}");
        assert_eq!(dst[3], 7.0, "{op:?}");
    }
    // An empty slice at every level.
    for level in levels() {
        block::apply(BlockOp::Exp, level, &mut []).unwrap();
    }
}

/// From one buffer into another gives the in-place bits, at every level, over whole
/// vectors, exp's chunks with and without rare arguments, and a remainder.
#[test]
fn out_of_place_is_in_place() {
    let n = 3 * 256 + 37;
    let mut src: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.7311).sin() * 12.0).collect();
    src[300] = 200.0; // a rare exp argument in the second chunk only
    for level in levels() {
        for op in BlockOp::ALL {
            let mut in_place = src.clone();
            block::apply(op, level, &mut in_place).unwrap();
            let mut dst = vec![0.0; n];
            block::apply_to(op, level, &src, &mut dst).unwrap();
            for i in 0..n {
                assert_eq!(dst[i].to_bits(), in_place[i].to_bits(), "{op:?} {level:?} at {i}: {}", src[i]);
            }
        }
        assert!(block::apply_to(BlockOp::Exp, level, &[1.0, 2.0], &mut [0.0]).is_err());
    }
}

#[test]
fn symbols_and_levels() {
    let symbols = block::symbols();
    assert_eq!(symbols.len(), 8);
    for (op, (name, addr)) in BlockOp::ALL.into_iter().zip(&symbols) {
        assert_eq!(*name, op.symbol());
        assert!(name.starts_with("hs_block_") && name.ends_with("_f32"));
        assert!(!addr.is_null());
    }
    assert_eq!(symbols[7].0, block::DIV_SYMBOL);
    assert_eq!(BlockOp::Logistic.symbol(), "hs_block_logistic_f32");
    assert!(Level::Portable.available());
    assert!(block::level().available());
    let lanes = block::native_lanes();
    assert!([4, 8, 16].contains(&lanes));
    // A level this CPU lacks is refused, not run.
    for level in Level::ALL.into_iter().filter(|l| !l.available()) {
        assert!(block::apply(BlockOp::Exp, level, &mut [1.0]).is_err());
    }
}

/// The division block function is IEEE division, bit for bit, at every level, in place
/// and from one buffer into another, on ordinary and special values and divisors.
#[test]
fn division_is_ieee_division() {
    let specials =
        [0.0f32, -0.0, 1.0, -1.0, 3.0, 1e-40, -1e-40, 1e38, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 0.1, 7.0e-39];
    let mut xs: Vec<f32> = (0..301).map(|i| ((i as f32) * 0.37).sin() * 1e3).collect();
    xs.extend_from_slice(&specials);
    for d in specials {
        let want: Vec<f32> = xs.iter().map(|x| x / d).collect();
        let same =
            |got: &[f32]| got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()));
        for level in levels() {
            let mut out = vec![0.0; xs.len()];
            block::apply_div(level, &xs, &mut out, d).unwrap();
            assert!(same(&out), "{level:?} / {d}");
        }
        // Through the exported symbol: in place, and with n = 0 and null pointers.
        let mut buf = xs.clone();
        let p = buf.as_mut_ptr();
        // SAFETY: `buf` holds `xs.len()` elements; `d` is one f32.
        unsafe {
            block::hs_block_div_f32(p, p, buf.len() as i64, &d);
            block::hs_block_div_f32(p, p, 0, &d);
            block::hs_block_div_f32(p, p, 5, std::ptr::null());
        }
        assert!(same(&buf), "in place / {d}");
    }
    assert!(block::apply_div(block::Level::Portable, &[1.0], &mut [], 2.0).is_err());
}
