//! Helpers shared by the CPU target's tests: literals, a deterministic generator, f32
//! ulp distance, and running a module on the CPU next to the interpreter.
#![allow(dead_code)]

use hloscope_core::interp::Interpreter;
use hloscope_core::ir::{ElementType, Literal, Shape, Value};
use hloscope_core::kernel::KernelKind;
use hloscope_core::targets::cpu;

pub fn lit(elem: ElementType, dims: &[i64], v: &[i64]) -> Literal {
    Literal::from_i64s(Shape::new(elem, dims), v)
}
pub fn s32(dims: &[i64], v: &[i64]) -> Literal {
    lit(ElementType::S32, dims, v)
}
pub fn f32s(dims: &[i64], v: &[f64]) -> Literal {
    Literal::from_f64s(Shape::new(ElementType::F32, dims), v)
}

/// A deterministic pseudo-random generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// An integer in `[lo, hi]`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
    /// Any f32 bit pattern.
    pub fn f32_bits(&mut self) -> f32 {
        f32::from_bits((self.next() >> 32) as u32)
    }
    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }
}

/// Distance in representable f32 values (0 = equal; NaN = NaN).
#[allow(unused_imports)] // Not every test that includes this file measures ulps.
pub use hloscope_approx::ulps;

/// Parses `hlo`, runs it in the interpreter and, after the cpu pipeline, on the CPU;
/// `agree(cpu, interpreter)` checks each output (Err: why not). Returns the CPU's
/// outputs with the kernel kinds.
pub fn run_against_interpreter(
    hlo: &str,
    args: &[Literal],
    agree: impl Fn(&Literal, &Literal) -> Result<(), String>,
) -> (Vec<Literal>, Vec<KernelKind>) {
    let module = hloscope_core::parse::parse_module(hlo).unwrap_or_else(|e| panic!("{e:?}"));
    let args: Vec<Value> = args.iter().cloned().map(Value::Array).collect();
    let want = Interpreter::new(&module).run(&args).unwrap().flatten();
    let exe = cpu::compile(&cpu::optimize(&module).unwrap()).unwrap();
    let got = exe.run(&args).unwrap().flatten();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        if let Err(why) = agree(g, w) {
            panic!("cpu vs interpreter: {why}; plan:\n{}", exe.plan().summary());
        }
    }
    (got, exe.plan().kernels.iter().map(|k| k.kind.clone()).collect())
}

/// Special f32 inputs for the transcendentals: zeros, infinities, NaN, extremes,
/// subnormals, and the edges of exp's and the trigonometric functions' ranges.
pub const SPECIALS: &[f32] = &[
    0.0,
    -0.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    1.0,
    -1.0,
    0.5,
    -0.5,
    2.0,
    -2.0,
    3.0,
    -3.0,
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
    1e-45,
    -1e-45,
    f32::MAX,
    f32::MIN,
    f32::EPSILON,
    88.72284,
    88.72283,
    -87.33654,
    -103.27893,
    -103.97208,
    -104.0,
    89.0,
    std::f32::consts::PI,
    std::f32::consts::FRAC_PI_2,
    -std::f32::consts::FRAC_PI_4,
    3.919_206,
    9.01,
];

/// Inputs for the math tests: a dense bit-pattern sweep of the whole f32 range (every
/// 509th pattern), 200,000 random bit patterns, `uniform` samples on `[lo, hi]`, the
/// [`SPECIALS`] and `extra` ones.
pub fn math_inputs(lo: f32, hi: f32, seed: u64, uniform: usize, extra: &[f32]) -> Vec<f32> {
    let mut v: Vec<f32> = (0..=u32::MAX).step_by(509).map(f32::from_bits).collect();
    let mut rng = Rng(seed);
    v.extend((0..200_000).map(|_| rng.f32_bits()));
    v.extend((0..uniform).map(|_| rng.uniform(lo, hi)));
    v.extend_from_slice(SPECIALS);
    v.extend_from_slice(extra);
    v
}
