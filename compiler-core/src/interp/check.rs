//! The numerics check: a target's outputs against the reference interpreter's, within a
//! tolerance per element type. One definition for every place that checks (the server's
//! runs, the browser's, the tests).

use crate::ir::{ElementType, Literal};

/// One output compared.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputCheck {
    pub index: usize,
    pub passed: bool,
    /// Largest |target - reference| over the elements (0 for exact types that agree).
    pub max_abs_error: f64,
    /// Elements outside the tolerance.
    pub mismatches: u64,
    /// The tolerance: |t - r| <= atol + rtol * |r| (0 and 0 for integers and preds); atol
    /// is the type's per unit of the output's largest magnitude (at least 1).
    pub atol: f64,
    pub rtol: f64,
}

/// Every output compared.
#[derive(Clone, Debug, PartialEq)]
pub struct NumericsCheck {
    /// Every output within its tolerance (and as many outputs as the reference has).
    pub passed: bool,
    pub outputs: Vec<OutputCheck>,
}

/// The tolerance a target's output is held to against the interpreter's: exact for
/// integers and preds; for floats a few ulps of the type plus reassociated sums. The
/// absolute part is per unit of the output's scale (see `check_outputs`).
pub fn tolerance(elem: ElementType) -> (f64, f64) {
    match elem {
        ElementType::F64 => (1e-12, 1e-10),
        ElementType::F32 => (1e-5, 1e-4),
        ElementType::F16 => (1e-3, 1e-2),
        ElementType::BF16 => (1e-2, 2e-2),
        _ => (0.0, 0.0),
    }
}

/// Compares each output with the reference's: NaN matches NaN, equal infinities match.
///
/// The absolute tolerance scales with the reference output's largest finite magnitude
/// (at least 1): an element that is the small difference of large terms (a residual
/// add, a dot with cancellation) carries the rounding error of those terms, not of
/// itself. The transformer block's outputs reach 20; a reassociated sum then differs
/// by 2e-5 at an element of 0.08, which a fixed 1e-5 called a mismatch.
pub fn check_outputs(got: &[Literal], want: &[Literal]) -> NumericsCheck {
    let outputs: Vec<OutputCheck> = got
        .iter()
        .zip(want)
        .enumerate()
        .map(|(i, (g, w))| {
            let (gv, wv) = (g.to_f64_vec(), w.to_f64_vec());
            let (atol, rtol) = tolerance(w.elem());
            let scale = wv.iter().filter(|v| v.is_finite()).fold(1.0f64, |m, v| m.max(v.abs()));
            let atol = atol * scale;
            let mut max_abs_error: f64 = 0.0;
            let mut mismatches = (gv.len() as u64).abs_diff(wv.len() as u64);
            for (&a, &b) in gv.iter().zip(&wv) {
                let same = (a.is_nan() && b.is_nan()) || a == b;
                if same {
                    continue;
                }
                let err = (a - b).abs();
                if err.is_finite() {
                    max_abs_error = max_abs_error.max(err);
                }
                // NaN against a number is a mismatch.
                if err.is_nan() || err > atol + rtol * b.abs() {
                    mismatches += 1;
                }
            }
            OutputCheck {
                index: i,
                passed: mismatches == 0 && g.shape.dims == w.shape.dims,
                max_abs_error,
                mismatches,
                atol,
                rtol,
            }
        })
        .collect();
    let passed = got.len() == want.len() && outputs.iter().all(|o| o.passed);
    NumericsCheck { passed, outputs }
}

/// What a run's output looks like at a glance.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// Over the finite values (None when there are none).
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    /// The first `n` values in row-major order; NaN and infinities as None.
    pub first: Vec<Option<f64>>,
}

/// `l`'s range, mean and first `n` values.
pub fn stats(l: &Literal, n: usize) -> Stats {
    let values = l.to_f64_vec();
    let finite = |v: f64| Some(v).filter(|v| v.is_finite());
    let (mut min, mut max, mut sum, mut count) = (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0usize);
    for &v in values.iter().filter(|v| v.is_finite()) {
        (min, max, sum, count) = (min.min(v), max.max(v), sum + v, count + 1);
    }
    let any = count > 0;
    Stats {
        min: any.then_some(min),
        max: any.then_some(max),
        mean: if any { finite(sum / count as f64) } else { None },
        first: values.iter().take(n).map(|&v| finite(v)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Data, Shape};

    fn f32s(v: &[f64]) -> Literal {
        Literal::new(Shape::new(ElementType::F32, [v.len() as i64]), Data::F(v.to_vec()))
    }

    /// The values of the load test's false alarm (the transformer block, random seed
    /// 42949672967): a reassociated sum off by 2e-5 at 0.08 in an output that reaches 20
    /// is within tolerance; an error fifty times larger is not.
    #[test]
    fn the_absolute_tolerance_scales_with_the_output() {
        let want = f32s(&[20.252769470214844, -0.08457183837890625]);
        let close = f32s(&[20.252769470214844, -0.08459186553955078]);
        let check = check_outputs(&[close], std::slice::from_ref(&want));
        assert!(check.passed, "{check:?}");
        let wrong = f32s(&[20.252769470214844, -0.0856]);
        let check = check_outputs(&[wrong], &[want]);
        assert!(!check.passed && check.outputs[0].mismatches == 1, "{check:?}");
    }

    #[test]
    fn stats_skip_what_is_not_finite() {
        let s = stats(&f32s(&[1.0, f64::NAN, -3.0, f64::INFINITY, 5.0]), 4);
        assert_eq!((s.min, s.max, s.mean), (Some(-3.0), Some(5.0), Some(1.0)));
        assert_eq!(s.first, vec![Some(1.0), None, Some(-3.0), None]);
        let none = stats(&f32s(&[f64::NAN]), 16);
        assert_eq!((none.min, none.mean, none.first), (None, None, vec![None]));
    }

    #[test]
    fn integers_are_exact_and_nan_matches_nan() {
        let ints = |v: &[i64]| Literal::new(Shape::new(ElementType::S32, [v.len() as i64]), Data::S(v.to_vec()));
        assert!(!check_outputs(&[ints(&[1, 2])], &[ints(&[1, 3])]).passed);
        assert!(check_outputs(&[f32s(&[f64::NAN, 1.0])], &[f32s(&[f64::NAN, 1.0])]).passed);
        assert!(!check_outputs(&[f32s(&[f64::NAN])], &[f32s(&[1.0])]).passed);
        // A missing output fails.
        assert!(!check_outputs(&[], &[f32s(&[1.0])]).passed);
    }
}
