//! The text `hloscope run` prints for each result when no `--out-dir` is given:
//! type, min/max/mean and the first few values, each float shown in its own precision.

use half::{bf16, f16};
use hloscope_core::ir::{ElementType, Literal, Scalar, Shape};
use std::fmt::Write;

/// How many leading values the summary shows.
const SHOWN: usize = 8;

/// One output, e.g.
/// `out0: f32[2,3]  min -1.5  max 2  mean 0.25` then `  [1, 2, ...] (first 8 of 6)`.
pub fn summarize(index: usize, l: &Literal) -> String {
    // Layouts are physical detail; the summary speaks of logical values.
    let mut s = format!("out{index}: {}", Shape::new(l.elem(), l.shape.dims.clone()));
    let n = l.num_elements();
    let values = l.to_f64_vec();
    let finite_or_inf: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    let nans = n - finite_or_inf.len();
    if !finite_or_inf.is_empty() {
        let min = finite_or_inf.iter().copied().fold(f64::INFINITY, f64::min);
        let max = finite_or_inf.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = finite_or_inf.iter().sum::<f64>() / finite_or_inf.len() as f64;
        let elem = l.elem();
        let _ = write!(
            s,
            "  min {}  max {}  mean {}",
            show(elem, Scalar::F(min)),
            show(elem, Scalar::F(max)),
            show_mean(mean)
        );
    }
    if nans > 0 {
        let _ = write!(s, "  ({nans} NaN)");
    }
    let shown: Vec<String> = (0..n.min(SHOWN)).map(|i| show(l.elem(), l.get(i))).collect();
    let _ = write!(s, "\n  [{}", shown.join(", "));
    if n > SHOWN {
        let _ = write!(s, ", ...] (first {SHOWN} of {n})");
    } else {
        s.push(']');
    }
    s
}

/// A value printed as the shortest text that reads back to it in its own type.
fn show(elem: ElementType, v: Scalar) -> String {
    match (elem, v) {
        (ElementType::Pred, s) => (s.as_f64() != 0.0).to_string(),
        (ElementType::F32, s) => (s.as_f64() as f32).to_string(),
        (ElementType::F16, s) => f16::from_f64(s.as_f64()).to_f32().to_string(),
        (ElementType::BF16, s) => bf16::from_f64(s.as_f64()).to_f32().to_string(),
        (_, Scalar::S(v)) => v.to_string(),
        (_, Scalar::U(v)) => v.to_string(),
        (e, s) if e.is_int() => (s.as_f64() as i128).to_string(),
        (_, s) => s.as_f64().to_string(),
    }
}

/// Means get six significant digits: they are a sanity check, not a value to copy.
fn show_mean(m: f64) -> String {
    if m == 0.0 || !m.is_finite() {
        return m.to_string();
    }
    let digits = (5 - m.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let t = format!("{m:.digits$}");
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_summary_uses_the_narrow_precision() {
        let l = Literal::from_f64s(Shape::new(ElementType::F32, vec![3]), &[0.1, -2.0, 0.5]);
        assert_eq!(summarize(0, &l), "out0: f32[3]  min -2  max 0.5  mean -0.466667\n  [0.1, -2, 0.5]");
    }

    #[test]
    fn long_int_and_pred_summaries() {
        let l = Literal::from_i64s(Shape::new(ElementType::S32, vec![10]), &(0..10).collect::<Vec<_>>());
        assert_eq!(
            summarize(1, &l),
            "out1: s32[10]  min 0  max 9  mean 4.5\n  [0, 1, 2, 3, 4, 5, 6, 7, ...] (first 8 of 10)"
        );
        let p = Literal::from_i64s(Shape::new(ElementType::Pred, vec![2]), &[1, 0]);
        assert_eq!(summarize(2, &p), "out2: pred[2]  min false  max true  mean 0.5\n  [true, false]");
    }

    #[test]
    fn layouts_are_not_shown() {
        let mut l = Literal::from_f64s(Shape::new(ElementType::F64, vec![1, 2]), &[0.5, 1.0]);
        l.shape.layout = Some(vec![0, 1]);
        assert!(summarize(0, &l).starts_with("out0: f64[1,2]  min 0.5"));
    }

    #[test]
    fn nans_are_counted_not_averaged() {
        let l = Literal::from_f64s(Shape::new(ElementType::BF16, vec![2]), &[f64::NAN, 3.0]);
        assert_eq!(summarize(0, &l), "out0: bf16[2]  min 3  max 3  mean 3  (1 NaN)\n  [NaN, 3]");
    }
}
