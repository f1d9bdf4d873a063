//! The corpus's `check.*` assertions, with the tolerances its README describes.

use hloscope_core::ir::literal::{float_bits, width_mask};
use hloscope_core::ir::{ElementType, Instruction, Literal, Op, Value};

/// Default absolute tolerance of `expect_almost_eq`: the check dialect's 1e-4 in
/// interpret/, the reference tool's 1e-3 for testdata's custom calls.
pub fn default_almost_eq_tolerance(corpus: &str) -> f64 {
    if corpus == "interpret" {
        1e-4
    } else {
        1e-3
    }
}

pub fn run_check(inst: &Instruction, args: &[Value], corpus: &str) -> Result<(), String> {
    let Op::CustomCall(call) = &inst.op else { return Err("not a custom call".into()) };
    let attr = |name: &str| call.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.trim().to_string());
    let parse_num = |name: &str| -> Result<Option<f64>, String> {
        match attr(name) {
            None => Ok(None),
            Some(v) => {
                let v = v.split(':').next().unwrap_or("").trim().to_string();
                v.parse::<f64>().map(Some).map_err(|_| format!("bad {name} attribute {v:?}"))
            }
        }
    };
    let [Value::Array(actual), Value::Array(expected)] = args else {
        return Err(format!("{} takes two arrays, got {} operands", call.target, args.len()));
    };
    if actual.shape.dims != expected.shape.dims || actual.elem() != expected.elem() {
        return Err(format!("{}: got {}, expected {}", call.target, actual.shape, expected.shape));
    }
    match call.target.as_str() {
        "check.expect_eq" => compare_each(actual, expected, |a, b, i| {
            if actual.elem().is_float() {
                let (x, y) = (a.get(i).as_f64(), b.get(i).as_f64());
                x == y || (x.is_nan() && y.is_nan())
            } else {
                a.get(i) == b.get(i)
            }
        }),
        "check.expect_almost_eq" => {
            let tol = parse_num("tolerance")?.unwrap_or(default_almost_eq_tolerance(corpus));
            compare_each(actual, expected, |a, b, i| {
                let (x, y) = (a.get(i).as_f64(), b.get(i).as_f64());
                if x.is_nan() || y.is_nan() {
                    x.is_nan() && y.is_nan()
                } else if x.is_infinite() || y.is_infinite() {
                    x == y
                } else {
                    (x - y).abs() <= tol
                }
            })
        }
        "check.expect_close" => {
            let max = parse_num("max_ulp_difference")?.unwrap_or(3.0) as u64;
            let min = parse_num("min_ulp_difference")?.unwrap_or(0.0) as u64;
            let elem = actual.elem();
            if !elem.is_float() {
                return Err(format!("expect_close on {elem}"));
            }
            compare_each(actual, expected, |a, b, i| match ulp_distance(elem, a.get(i).as_f64(), b.get(i).as_f64()) {
                Some(d) => min <= d && d <= max,
                None => false,
            })
        }
        other => Err(format!("unknown check {other}")),
    }
}

fn compare_each(
    actual: &Literal,
    expected: &Literal,
    ok: impl Fn(&Literal, &Literal, usize) -> bool,
) -> Result<(), String> {
    let bad: Vec<usize> = (0..actual.num_elements()).filter(|&i| !ok(actual, expected, i)).collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{} of {} elements differ; first at index {i}: got {}, expected {}",
            bad.len(),
            actual.num_elements(),
            show(actual, i),
            show(expected, i)
        )),
    }
}

fn show(l: &Literal, i: usize) -> String {
    match l.elem() {
        e if e.is_float() => format!("{:e}", l.get(i).as_f64()),
        _ => format!("{:?}", l.get(i)),
    }
}

/// ULP distance as the corpus defines it: on the bit patterns of |a| and |b|
/// (difference when the signs agree, sum when they differ); NaN vs NaN is 0; any other
/// pair with a non-finite value is `None` (fails) unless bitwise identical.
pub fn ulp_distance(elem: ElementType, a: f64, b: f64) -> Option<u64> {
    if a.is_nan() && b.is_nan() {
        return Some(0);
    }
    let (ba, bb) = (float_bits(elem, a), float_bits(elem, b));
    if !a.is_finite() || !b.is_finite() {
        return if ba == bb { Some(0) } else { None };
    }
    let sign = 1u64 << (elem.bit_width() - 1);
    let (ma, mb) = (ba & !sign & width_mask(elem), bb & !sign & width_mask(elem));
    if (ba & sign) == (bb & sign) {
        Some(ma.abs_diff(mb))
    } else {
        Some(ma + mb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulp_distance_rules() {
        assert_eq!(ulp_distance(ElementType::F32, 1.0, 1.0), Some(0));
        let next = f32::from_bits(1.0f32.to_bits() + 2) as f64;
        assert_eq!(ulp_distance(ElementType::F32, 1.0, next), Some(2));
        // Across zero: distance of each to +0 added.
        let tiny = f32::from_bits(1) as f64;
        assert_eq!(ulp_distance(ElementType::F32, tiny, -tiny), Some(2));
        assert_eq!(ulp_distance(ElementType::F32, f64::NAN, f64::NAN), Some(0));
        assert_eq!(ulp_distance(ElementType::F32, f64::INFINITY, f64::INFINITY), Some(0));
        assert_eq!(ulp_distance(ElementType::F32, f64::INFINITY, 1.0), None);
    }
}
