//! Made-up entry arguments, deterministic from a seed and the same on every platform:
//! what `hloscope run --random-inputs` feeds a module, what the web UI will run in the
//! browser, and what the tests use to compare a module before and after a pass.

use crate::ir::literal::round_float;
use crate::ir::{Data, Literal, Module, Shape, Type, Value};
use crate::limits::{check_module, LimitError, Limits};

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and the same on every platform,
/// so `--seed N` gives the same inputs everywhere.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Signed integers are drawn from [-RANGE, RANGE), unsigned from [0, 2*RANGE): small
/// enough to be valid indices and shift amounts in most programs.
const INT_RANGE: i64 = 8;

/// Deterministic arguments for every entry parameter: floats uniform in [-1, 1),
/// integers in a small range, preds fair coin flips. Tuples are filled element-wise.
///
/// For a module over the default limits there are none: running it fails on the limit
/// anyway, and [`try_random_inputs`] says why.
pub fn random_inputs(module: &Module, seed: u64) -> Vec<Value> {
    try_random_inputs(module, seed).unwrap_or_default()
}

/// [`random_inputs`], or why not: the module is over the default limits
/// ([`crate::limits::check_module`]), checked before any argument is allocated.
pub fn try_random_inputs(module: &Module, seed: u64) -> Result<Vec<Value>, LimitError> {
    check_module(module, &Limits::default())?;
    // No entry, no parameters: running the module says what is wrong with it.
    let Some(entry) = module.comps.get(module.entry) else { return Ok(Vec::new()) };
    let mut rng = SplitMix64::new(seed);
    Ok(entry.param_types().iter().map(|t| random_value(t, &mut rng)).collect())
}

fn random_value(ty: &Type, rng: &mut SplitMix64) -> Value {
    match ty {
        Type::Array(s) => Value::Array(random_literal(s, rng)),
        Type::Tuple(ts) => Value::Tuple(ts.iter().map(|t| random_value(t, rng)).collect()),
        Type::Token => Value::Token,
    }
}

fn random_literal(shape: &Shape, rng: &mut SplitMix64) -> Literal {
    let n = shape.num_elements();
    let elem = shape.elem;
    let shape = Shape::new(elem, shape.dims.clone());
    let data = if elem.is_pred() {
        Data::Pred((0..n).map(|_| rng.next_u64() >> 63 == 1).collect())
    } else if elem.is_signed_int() {
        Data::S((0..n).map(|_| (rng.next_u64() % (2 * INT_RANGE) as u64) as i64 - INT_RANGE).collect())
    } else if elem.is_unsigned_int() {
        Data::U((0..n).map(|_| rng.next_u64() % (2 * INT_RANGE) as u64).collect())
    } else {
        Data::F(
            (0..n)
                .map(|_| {
                    let v = round_float(elem, rng.next_f64() * 2.0 - 1.0);
                    // Rounding to a narrow type can reach 1.0; keep the interval half-open.
                    if v >= 1.0 {
                        round_float(elem, 0.99)
                    } else {
                        v
                    }
                })
                .collect(),
        )
    };
    Literal::new(shape, data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::ElementType;

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // First outputs of SplitMix64 seeded with 0 (from the published reference code).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn random_literals_stay_in_range() {
        let mut r = SplitMix64::new(7);
        let f = random_literal(&Shape::new(ElementType::BF16, vec![1000]), &mut r);
        assert!(f.to_f64_vec().iter().all(|&v| (-1.0..1.0).contains(&v)));
        let s = random_literal(&Shape::new(ElementType::S8, vec![1000]), &mut r);
        assert!(s.to_f64_vec().iter().all(|&v| (-8.0..8.0).contains(&v)));
        let u = random_literal(&Shape::new(ElementType::U32, vec![1000]), &mut r);
        assert!(u.to_f64_vec().iter().all(|&v| (0.0..16.0).contains(&v)));
        let p = random_literal(&Shape::new(ElementType::Pred, vec![1000]), &mut r);
        let trues = p.to_f64_vec().iter().filter(|&&v| v == 1.0).count();
        assert!((400..600).contains(&trues), "{trues} of 1000 true");
    }
}
