//! Measured error of the CPU target's inline f32 approximations (`targets::cpu::math`).
//!
//! Each op is JIT-compiled twice into a loop over an array, scalar and 4 lanes at a time,
//! with and without FMA, and run on a dense sweep of f32 inputs (every 509th bit pattern
//! of the whole f32 range: all exponents, both signs, subnormals, infinities and NaNs),
//! random samples and special values. The reference is the f64 C library (Rust's `f64`
//! methods, `libm::erf`) rounded to f32. The test asserts the maximum error in ulps
//! (distance between the f32 bit patterns, 0 = correctly rounded) against the table in
//! `math.rs`, that specials are exact, and that scalar and vector code agree bit for
//! bit; it prints the measured maxima. Needs the `cpu` feature.

#![cfg(feature = "cpu")]

use crate::common;
use crate::math_kernel;

use common::{math_inputs, ulps, Rng, SPECIALS};
use hloscope_core::ir::{BinaryOp, UnaryOp};
use math_kernel::{compile, Op};

/// The math inputs ([`math_inputs`]) for this file: 800,000 uniform samples, padded
/// to whole vectors of 4.
fn inputs(lo: f32, hi: f32, seed: u64) -> Vec<f32> {
    let mut v = math_inputs(lo, hi, seed, 800_000, &[]);
    while !v.len().is_multiple_of(4) {
        v.push(0.0);
    }
    v
}

/// Runs `op` on (x, y) in the four variants; checks the vector code equals the scalar
/// code bit for bit and returns the results per fma setting.
fn run(op: Op, x: &[f32], y: &[f32]) -> Vec<(bool, Vec<f32>)> {
    let mut out = Vec::new();
    for fma in [true, false] {
        let mut res = Vec::new();
        for lanes in [false, true] {
            let (jit, k) = compile(op, lanes, Some(fma));
            let mut o = vec![0f32; x.len()];
            k(x.as_ptr(), y.as_ptr(), o.as_mut_ptr(), x.len() as i64);
            res.push(o);
            // SAFETY: `k` is not used after this.
            unsafe { jit.free_memory() };
        }
        for i in 0..x.len() {
            assert!(
                ulps(res[0][i], res[1][i]) == 0,
                "{op:?} fma={fma}: scalar {} vs vector {} at x={:e} y={:e}",
                res[0][i],
                res[1][i],
                x[i],
                y[i]
            );
        }
        out.push((fma, res.swap_remove(0)));
    }
    out
}

/// Where an error is measured in ulps, and where (also) absolutely: `abs(x, want)` says
/// whether the absolute error counts at this input.
struct Check {
    name: &'static str,
    op: Op,
    reference: fn(f64, f64) -> f64,
    /// Inputs inside the stated domain (with FMA; without, `|x| <= 4096` for sin, cos
    /// and tan, where their reduction is exact).
    domain: fn(f32, f32) -> bool,
    max_ulp: u64,
    /// Absolute error accepted where ulps are meaningless (`abs_where`), else 0.
    max_abs: f64,
    abs_where: fn(f32, f32, f64) -> bool,
}

fn never(_: f32, _: f32, _: f64) -> bool {
    false
}
fn all(_: f32, _: f32) -> bool {
    true
}

/// Measures `check` on (x, y); returns a line of the report and failures.
fn measure(c: &Check, x: &[f32], y: &[f32]) -> Vec<String> {
    let want: Vec<f64> = x.iter().zip(y).map(|(&a, &b)| (c.reference)(a as f64, b as f64)).collect();
    let mut lines = Vec::new();
    for (fma, got) in run(c.op, x, y) {
        let (mut worst, mut worst_at, mut worst_abs, mut n) = (0u64, 0usize, 0f64, 0usize);
        let mut failures = Vec::new();
        for i in 0..x.len() {
            if !(c.domain)(x[i], y[i]) || (!fma && c.max_abs > 0.0 && x[i].abs() > 4096.0) {
                continue;
            }
            n += 1;
            let w = want[i] as f32;
            let u = ulps(got[i], w);
            if (c.abs_where)(x[i], y[i], want[i]) && got[i].is_finite() {
                let e = (got[i] as f64 - want[i]).abs();
                worst_abs = worst_abs.max(e);
                if e <= c.max_abs {
                    continue;
                }
            }
            if u > worst {
                worst = u;
                worst_at = i;
            }
            if u > c.max_ulp && failures.len() < 5 {
                failures.push(format!(
                    "{} fma={fma}: x={:e} y={:e}: got {:e}, want {:e} ({u} ulp)",
                    c.name, x[i], y[i], got[i], w
                ));
            }
        }
        let line = format!(
            "{:9} fma={fma:5}: max {worst} ulp (at x={:e}, y={:e}), max abs err where counted {worst_abs:.2e}, {n} inputs",
            c.name, x[worst_at], y[worst_at]
        );
        println!("{line}");
        // Without FMA the bound is looser by one ulp (the reductions round more).
        let bound = if fma { c.max_ulp } else { c.max_ulp + 1 };
        if worst > bound {
            lines.push(format!("{line}\n  {}", failures.join("\n  ")));
        }
    }
    lines
}

fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Inputs that are finite and near a multiple of π/2 (sin/cos/tan pass through zero or
/// a pole there, so their relative error says nothing about the approximation).
fn near_zero_of_trig(_: f32, _: f32, want: f64) -> bool {
    want.abs() < 1e-3
}

#[test]
fn unary_approximations_meet_their_stated_bounds() {
    use UnaryOp::*;
    let checks = [
        Check {
            name: "exp",
            op: Op::U(Exp),
            reference: |x, _| x.exp(),
            domain: all,
            max_ulp: 1,
            max_abs: 0.0,
            abs_where: never,
        },
        Check {
            name: "expm1",
            op: Op::U(Expm1),
            reference: |x, _| x.exp_m1(),
            domain: all,
            max_ulp: 1,
            max_abs: 0.0,
            abs_where: never,
        },
        Check {
            name: "log",
            op: Op::U(Log),
            reference: |x, _| x.ln(),
            domain: all,
            max_ulp: 1,
            max_abs: 0.0,
            abs_where: never,
        },
        Check {
            name: "log1p",
            op: Op::U(Log1p),
            reference: |x, _| x.ln_1p(),
            domain: all,
            max_ulp: 1,
            max_abs: 0.0,
            abs_where: never,
        },
        Check {
            name: "tanh",
            op: Op::U(Tanh),
            reference: |x, _| x.tanh(),
            domain: all,
            max_ulp: 2,
            max_abs: 0.0,
            abs_where: never,
        },
        Check {
            name: "logistic",
            op: Op::U(Logistic),
            reference: |x, _| logistic(x),
            domain: all,
            max_ulp: 2,
            max_abs: 0.0,
            abs_where: never,
        },
        Check {
            name: "erf",
            op: Op::U(Erf),
            reference: |x, _| libm::erf(x),
            domain: all,
            max_ulp: 2,
            max_abs: 0.0,
            abs_where: never,
        },
        Check {
            name: "sin",
            op: Op::U(Sin),
            reference: |x, _| x.sin(),
            domain: |x, _| x.abs() <= 32768.0 || !x.is_finite(),
            max_ulp: 1,
            max_abs: 2e-7,
            abs_where: near_zero_of_trig,
        },
        Check {
            name: "cos",
            op: Op::U(Cos),
            reference: |x, _| x.cos(),
            domain: |x, _| x.abs() <= 32768.0 || !x.is_finite(),
            max_ulp: 1,
            max_abs: 2e-7,
            abs_where: near_zero_of_trig,
        },
        Check {
            name: "tan",
            op: Op::U(Tan),
            reference: |x, _| x.tan(),
            domain: |x, _| x.abs() <= 32768.0 || !x.is_finite(),
            max_ulp: 3,
            max_abs: 2e-7,
            abs_where: near_zero_of_trig,
        },
        Check {
            name: "cbrt",
            op: Op::U(Cbrt),
            reference: |x, _| x.cbrt(),
            domain: all,
            max_ulp: 1,
            max_abs: 0.0,
            abs_where: never,
        },
        Check {
            name: "rsqrt",
            op: Op::U(Rsqrt),
            reference: |x, _| 1.0 / x.sqrt(),
            domain: all,
            max_ulp: 1,
            max_abs: 0.0,
            abs_where: never,
        },
        Check {
            name: "sign",
            op: Op::U(Sign),
            reference: |x, _| if x == 0.0 || x.is_nan() { x } else { x.signum() },
            domain: all,
            max_ulp: 0,
            max_abs: 0.0,
            abs_where: never,
        },
        Check {
            name: "round",
            op: Op::U(RoundAfz),
            reference: |x, _| x.round(),
            domain: all,
            max_ulp: 0,
            max_abs: 0.0,
            abs_where: never,
        },
    ];
    let mut failures = Vec::new();
    for (k, c) in checks.iter().enumerate() {
        let (lo, hi) = match c.name {
            "exp" | "expm1" | "logistic" | "tanh" => (-110.0, 90.0),
            "erf" => (-5.0, 5.0),
            "sin" | "cos" | "tan" => (-100.0, 100.0),
            "log1p" => (-1.0, 10.0),
            _ => (0.0, 1000.0),
        };
        let x = inputs(lo, hi, 0x9E37_79B9_7F4A_7C15 ^ k as u64);
        let y = vec![0f32; x.len()];
        failures.extend(measure(c, &x, &y));
    }
    assert!(failures.is_empty(), "bounds exceeded:\n{}", failures.join("\n"));
}

/// sin and cos outside the main domain: the absolute error up to 2^17 (without FMA,
/// where the reduction loses bits beyond 2^12, a looser bound).
#[test]
fn sin_cos_on_larger_arguments() {
    let mut rng = Rng(7);
    let x: Vec<f32> = (0..400_000).map(|_| rng.uniform(-131072.0, 131072.0)).collect();
    let y = vec![0f32; x.len()];
    for (name, op, f) in [("sin", UnaryOp::Sin, f64::sin as fn(f64) -> f64), ("cos", UnaryOp::Cos, f64::cos)] {
        for (fma, got) in run(Op::U(op), &x, &y) {
            let worst = x.iter().zip(&got).map(|(&a, &g)| (g as f64 - f(a as f64)).abs()).fold(0.0, f64::max);
            println!("{name} on |x| <= 2^17, fma={fma}: max abs err {worst:.2e}");
            assert!(worst < if fma { 1e-7 } else { 5e-3 }, "{name} fma={fma}: {worst:e}");
        }
    }
}

#[test]
fn binary_approximations_meet_their_stated_bounds() {
    let mut rng = Rng(42);
    let mut failures = Vec::new();

    // atan2: random bit patterns (every ratio), uniform pairs and every pair of specials.
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..1_500_000 {
        y.push(rng.f32_bits());
        x.push(rng.f32_bits());
    }
    for _ in 0..1_000_000 {
        y.push(rng.uniform(-10.0, 10.0));
        x.push(rng.uniform(-10.0, 10.0));
    }
    for &a in SPECIALS {
        for &b in SPECIALS {
            y.push(a);
            x.push(b);
        }
    }
    while !x.len().is_multiple_of(4) {
        x.push(1.0);
        y.push(1.0);
    }
    // The kernel computes op(first, second) = atan2(y, x).
    let atan2 = Check {
        name: "atan2",
        op: Op::B(BinaryOp::Atan2),
        reference: |y, x| y.atan2(x),
        domain: |_, _| true,
        max_ulp: 2,
        max_abs: 0.0,
        abs_where: never,
    };
    failures.extend(measure(&atan2, &y, &x));

    // pow: positive bases over all exponents with y keeping |y log2 x| in range, negative
    // bases with integer y, and every pair of specials.
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..1_500_000 {
        let b = f32::from_bits((rng.next() >> 33) as u32 & 0x7FFF_FFFF);
        if !b.is_finite() || b == 0.0 {
            continue;
        }
        let l = (b as f64).log2().abs().max(1e-3);
        let lim = (126.0 / l).min(1e6) as f32;
        x.push(b);
        y.push(rng.uniform(-lim, lim));
    }
    for _ in 0..300_000 {
        x.push(-rng.uniform(0.0, 4.0));
        y.push((rng.next() % 121) as f32 - 60.0);
    }
    for _ in 0..300_000 {
        x.push(rng.uniform(0.0, 8.0));
        y.push(rng.uniform(-20.0, 20.0));
    }
    for &a in SPECIALS {
        for &b in SPECIALS {
            x.push(a);
            y.push(b);
        }
    }
    while !x.len().is_multiple_of(4) {
        x.push(1.0);
        y.push(1.0);
    }
    let pow = Check {
        name: "pow",
        op: Op::B(BinaryOp::Pow),
        reference: |x, y| x.powf(y),
        // Results in the normal range (or exactly 0, inf, NaN).
        domain: |x, y| {
            let r = (x as f64).powf(y as f64).abs();
            r == 0.0 || r.is_nan() || (r >= f32::MIN_POSITIVE as f64)
        },
        max_ulp: 4,
        max_abs: 0.0,
        abs_where: never,
    };
    failures.extend(measure(&pow, &x, &y));
    assert!(failures.is_empty(), "bounds exceeded:\n{}", failures.join("\n"));
}

#[test]
fn specials_are_exact() {
    // A few values that must come out exactly (also covered by the sweeps above).
    let x = [0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY];
    let y = [0f32; 4];
    let exp = &run(Op::U(UnaryOp::Exp), &x, &y)[0].1;
    assert_eq!(exp.map_bits(), [1.0f32, 1.0, f32::INFINITY, 0.0].map_bits());
    let log = &run(Op::U(UnaryOp::Log), &x, &y)[0].1;
    assert_eq!(log.map_bits(), vec![f32::NEG_INFINITY, f32::NEG_INFINITY, f32::INFINITY, f32::NAN].map_bits());
    let tanh = &run(Op::U(UnaryOp::Tanh), &x, &y)[0].1;
    assert_eq!(tanh.map_bits(), [0.0f32, -0.0, 1.0, -1.0].map_bits());
    let sin = &run(Op::U(UnaryOp::Sin), &x, &y)[0].1;
    assert_eq!(sin[1].to_bits(), (-0.0f32).to_bits());
    assert!(sin[2].is_nan() && sin[3].is_nan());
}

/// Bit patterns, so that -0 differs from 0 and NaN equals NaN (as the canonical NaN).
trait MapBits {
    fn map_bits(&self) -> Vec<u32>;
}
impl<T: AsRef<[f32]>> MapBits for T {
    fn map_bits(&self) -> Vec<u32> {
        self.as_ref().iter().map(|v| if v.is_nan() { 0x7FC0_0000 } else { v.to_bits() }).collect()
    }
}

#[test]
fn exp_fast_and_rare_paths_agree() {
    // exp takes its one-step scaling where every lane of a vector has |x| <= 87 (69
    // without FMA), and the clamped two-factor path where any lane needs it (subnormal
    // results, overflow, infinities). Each group of four is one vector: all-fast groups,
    // and groups with one rare lane in each position, so both paths run on the same
    // ordinary values.
    let ordinary = [0.5f32, -1.25, 3.0, -68.99];
    let rare = [-87.5f32, -100.0, -103.5, 88.5, 88.8, 200.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
    let mut x: Vec<f32> = ordinary.to_vec();
    x.extend_from_slice(&[87.0, -87.0, 1e-30, -0.0]);
    for &r in &rare {
        for pos in 0..4 {
            let mut g = ordinary;
            g[pos] = r;
            x.extend_from_slice(&g);
        }
    }
    let y = vec![0f32; x.len()];
    // `run` also checks that scalar and vector code agree bit for bit.
    for (fma, got) in run(Op::U(UnaryOp::Exp), &x, &y) {
        for (i, (&xi, &g)) in x.iter().zip(&got).enumerate() {
            let want = (xi as f64).exp() as f32;
            assert!(ulps(g, want) <= 1, "fma={fma} exp({xi:e}) at {i}: got {g:e}, want {want:e}");
        }
        // Hand-checked values: a subnormal result (exp(-100) = 3.72008e-44 =
        // 26.55 * 2^-149, so 27 * 2^-149), overflow, underflow to 0, NaN.
        let at = |v: f32| got[x.iter().position(|&a| a.to_bits() == v.to_bits()).unwrap()];
        assert_eq!(at(1e-30), 1.0);
        assert_eq!(at(-0.0), 1.0);
        assert_eq!(at(-100.0).to_bits(), 27);
        assert_eq!(at(88.8), f32::INFINITY);
        assert_eq!(at(f32::INFINITY), f32::INFINITY);
        assert_eq!(at(f32::NEG_INFINITY).to_bits(), 0);
        assert!(at(f32::NAN).is_nan());
    }
    // e, 1, 1/e and e² rounded to f32.
    let e1 = &run(Op::U(UnaryOp::Exp), &[1.0, 0.0, -1.0, 2.0], &[0.0; 4])[0].1;
    assert_eq!(e1, &[2.718_281_7f32, 1.0, 0.367_879_44, 7.389_056]);
}

#[test]
fn tanh_tiny_and_boundary_values() {
    // tanh is the expm1-based quotient everywhere: within 2 ulp of the f64 reference from
    // the subnormals (which, with -0, come out as themselves) to the clamp at 9.5.
    let x = [
        0.0f32,
        -0.0,
        1e-45,
        -1e-45,
        1e-38,
        2.4e-4,
        -2.4e-4,
        2.45e-4,
        -2.45e-4,
        1e-3,
        0.5,
        -0.5,
        9.4,
        9.6,
        -20.0,
        f32::NAN,
    ];
    let y = [0f32; 16];
    for (fma, got) in run(Op::U(UnaryOp::Tanh), &x, &y) {
        for (&xi, &g) in x.iter().zip(&got) {
            let want = (xi as f64).tanh() as f32;
            if xi.is_nan() {
                assert!(g.is_nan());
            } else {
                assert!(ulps(g, want) <= 2, "fma={fma} tanh({xi:e}): got {g:e}, want {want:e}");
            }
        }
        assert_eq!((&got[..4]).map_bits(), (&x[..4]).map_bits(), "tiny inputs are their own tanh");
        assert_eq!(got[14], -1.0);
    }
}
