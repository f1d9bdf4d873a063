//! Interpreter: elementwise ops (unary, binary, compare, select, clamp, convert,
//! bitcast-convert, reduce-precision), with StableHLO's exact semantics.
//!
//! Floats are computed in f64 and rounded once to the result type (`round_float`); for
//! +, -, *, / and sqrt this equals the correctly rounded narrow result. Integers wrap to
//! their width. Where the spec leaves a case to the implementation we follow XLA:
//! integer `x / 0` is all ones (-1 signed, MAX unsigned), `INT_MIN / -1` is `INT_MIN`,
//! `x % 0` is `x`; shift amounts outside `[0, width)` shift everything out (arithmetic
//! shifts fill with the sign). On pred, add/max/or are logical or and mul/min/and are
//! logical and, as the StableHLO reference interpreter does.

use super::{expect_arity, expect_array, result_shape, Interpreter};
use crate::ir::literal::{float_bits, float_from_bits, float_to_signed, float_to_unsigned, width_mask};
use crate::ir::literal::{round_float, wrap_signed, wrap_unsigned};
use crate::ir::{
    BinaryOp, CmpDir, CmpKind, Data, ElementType, Instruction, Literal, Op, Scalar, Shape, UnaryOp, Value,
};

/// The declared result shape without a layout.
fn logical_result(inst: &Instruction) -> Result<Shape, String> {
    let s = result_shape(inst)?;
    Ok(Shape::new(s.elem, s.dims.clone()))
}

fn array(shape: Shape, data: Data) -> Value {
    Value::Array(Literal { shape, data })
}

// ---------------------------------------------------------------------------------------
// Unary

/// Whether `op` is defined on element type `elem`.
fn unary_supported(op: UnaryOp, elem: ElementType) -> bool {
    use UnaryOp::*;
    if elem.is_pred() {
        matches!(op, Not)
    } else if elem.is_int() {
        matches!(op, Abs | Neg | Not | Sign | PopCnt | Clz)
    } else {
        !matches!(op, Not | PopCnt | Clz)
    }
}

/// A float unary op computed in f64 (the caller rounds to the element type).
fn unary_f64(op: UnaryOp, x: f64) -> f64 {
    use UnaryOp::*;
    match op {
        Abs => x.abs(),
        Neg => -x,
        Exp => x.exp(),
        Expm1 => x.exp_m1(),
        Log => x.ln(),
        Log1p => x.ln_1p(),
        Logistic => 1.0 / (1.0 + (-x).exp()),
        Sqrt => x.sqrt(),
        Rsqrt => 1.0 / x.sqrt(),
        Cbrt => x.cbrt(),
        Tanh => x.tanh(),
        Sin => x.sin(),
        Cos => x.cos(),
        Tan => x.tan(),
        Erf => libm::erf(x),
        Floor => x.floor(),
        Ceil => x.ceil(),
        RoundAfz => x.round(),
        RoundEven => x.round_ties_even(),
        // NaN stays NaN, zeros keep their sign.
        Sign => {
            if x.is_nan() || x == 0.0 {
                x
            } else {
                x.signum()
            }
        }
        IsFinite | Not | PopCnt | Clz => f64::NAN, // excluded by `unary_supported`
    }
}

/// The bits of an integer element, zero-extended from its width.
fn int_bits(elem: ElementType, x: u64) -> u64 {
    x & width_mask(elem)
}

fn unary_signed(op: UnaryOp, elem: ElementType, x: i64) -> i64 {
    use UnaryOp::*;
    let w = elem.bit_width();
    let v = match op {
        Abs => x.wrapping_abs(),
        Neg => x.wrapping_neg(),
        Not => !x,
        Sign => x.signum(),
        PopCnt => int_bits(elem, x as u64).count_ones() as i64,
        Clz => (int_bits(elem, x as u64).leading_zeros() - (64 - w)) as i64,
        _ => 0, // excluded by `unary_supported`
    };
    wrap_signed(elem, v)
}

fn unary_unsigned(op: UnaryOp, elem: ElementType, x: u64) -> u64 {
    use UnaryOp::*;
    let w = elem.bit_width();
    let v = match op {
        Abs => x,
        Neg => x.wrapping_neg(),
        Not => !x,
        Sign => (x != 0) as u64,
        PopCnt => x.count_ones() as u64,
        Clz => (x.leading_zeros() - (64 - w)) as u64,
        _ => 0, // excluded by `unary_supported`
    };
    wrap_unsigned(elem, v)
}

pub(super) fn unary(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Unary(op) = inst.op else { return Err("expected a unary op".into()) };
    expect_arity(inst, args, 1)?;
    let x = expect_array(inst, args, 0)?;
    let shape = logical_result(inst)?;
    let elem = x.elem();
    if op == UnaryOp::IsFinite {
        let Data::F(v) = &x.data else { return Err(format!("is-finite needs floats, got {elem}")) };
        if !shape.same_shape(&x.shape.with_elem(ElementType::Pred)) {
            return Err(format!("is-finite of {} cannot produce {shape}", x.shape));
        }
        return Ok(array(shape, Data::Pred(v.iter().map(|f| f.is_finite()).collect())));
    }
    if !unary_supported(op, elem) {
        return Err(format!("{} is not defined on {elem}", op.hlo_name()));
    }
    if !shape.same_shape(&x.shape) {
        return Err(format!("{} of {} cannot produce {shape}", op.hlo_name(), x.shape));
    }
    let data = match &x.data {
        Data::Pred(v) => Data::Pred(v.iter().map(|&b| !b).collect()),
        Data::S(v) => Data::S(v.iter().map(|&a| unary_signed(op, elem, a)).collect()),
        Data::U(v) => Data::U(v.iter().map(|&a| unary_unsigned(op, elem, a)).collect()),
        Data::F(v) => Data::F(v.iter().map(|&a| round_float(elem, unary_f64(op, a))).collect()),
    };
    Ok(array(shape, data))
}

// ---------------------------------------------------------------------------------------
// Binary

fn binary_supported(op: BinaryOp, elem: ElementType) -> bool {
    use BinaryOp::*;
    if elem.is_pred() {
        matches!(op, Add | Mul | Max | Min | And | Or | Xor)
    } else if elem.is_int() {
        !matches!(op, Atan2)
    } else {
        !matches!(op, And | Or | Xor | ShiftLeft | ShiftRightArithmetic | ShiftRightLogical)
    }
}

/// IEEE maximum as StableHLO defines it: NaN if either is NaN, and +0 > -0.
pub(super) fn float_max(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else if a == b {
        if a.is_sign_negative() {
            b
        } else {
            a
        }
    } else if a > b {
        a
    } else {
        b
    }
}

/// IEEE minimum: NaN if either is NaN, and -0 < +0.
pub(super) fn float_min(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else if a == b {
        if a.is_sign_negative() {
            a
        } else {
            b
        }
    } else if a < b {
        a
    } else {
        b
    }
}

fn binary_f64(op: BinaryOp, a: f64, b: f64) -> f64 {
    use BinaryOp::*;
    match op {
        Add => a + b,
        Sub => a - b,
        Mul => a * b,
        Div => a / b,
        // fmod: the result has the dividend's sign.
        Rem => a % b,
        Max => float_max(a, b),
        Min => float_min(a, b),
        Pow => a.powf(b),
        Atan2 => a.atan2(b),
        _ => f64::NAN, // excluded by `binary_supported`
    }
}

/// Shift amount as the spec reads it: an unsigned number, in range when `< width`.
fn shift_amount(elem: ElementType, b: u64) -> Option<u32> {
    let b = int_bits(elem, b);
    (b < elem.bit_width() as u64).then_some(b as u32)
}

fn binary_signed(op: BinaryOp, elem: ElementType, a: i64, b: i64) -> i64 {
    use BinaryOp::*;
    let v = match op {
        Add => a.wrapping_add(b),
        Sub => a.wrapping_sub(b),
        Mul => a.wrapping_mul(b),
        // x / 0 = -1; INT_MIN / -1 wraps to INT_MIN (for narrow types, after wrapping).
        Div => {
            if b == 0 {
                -1
            } else {
                a.wrapping_div(b)
            }
        }
        Rem => {
            if b == 0 {
                a
            } else {
                a.wrapping_rem(b)
            }
        }
        Max => a.max(b),
        Min => a.min(b),
        Pow => {
            // Negative exponents: 1 and -1 have inverses, everything else truncates to 0.
            let exponent = if b < 0 {
                if a == 1 || a == -1 {
                    b.unsigned_abs()
                } else {
                    return 0;
                }
            } else {
                b as u64
            };
            int_pow(a as u64, exponent) as i64
        }
        And => a & b,
        Or => a | b,
        Xor => a ^ b,
        ShiftLeft => match shift_amount(elem, b as u64) {
            Some(s) => a.wrapping_shl(s),
            None => 0,
        },
        ShiftRightArithmetic => match shift_amount(elem, b as u64) {
            Some(s) => a >> s,
            None => {
                if a < 0 {
                    -1
                } else {
                    0
                }
            }
        },
        ShiftRightLogical => match shift_amount(elem, b as u64) {
            Some(s) => (int_bits(elem, a as u64) >> s) as i64,
            None => 0,
        },
        Atan2 => 0, // excluded by `binary_supported`
    };
    wrap_signed(elem, v)
}

/// `base ^ exponent` by squaring, wrapping modulo 2^64 (callers wrap to their width).
fn int_pow(mut base: u64, mut exponent: u64) -> u64 {
    let mut result = 1u64;
    while exponent != 0 {
        if exponent & 1 == 1 {
            result = result.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exponent >>= 1;
    }
    result
}

fn binary_unsigned(op: BinaryOp, elem: ElementType, a: u64, b: u64) -> u64 {
    use BinaryOp::*;
    let v = match op {
        Add => a.wrapping_add(b),
        Sub => a.wrapping_sub(b),
        Mul => a.wrapping_mul(b),
        Div => a.checked_div(b).unwrap_or(u64::MAX),
        Rem => {
            if b == 0 {
                a
            } else {
                a % b
            }
        }
        Max => a.max(b),
        Min => a.min(b),
        Pow => int_pow(a, b),
        And => a & b,
        Or => a | b,
        Xor => a ^ b,
        ShiftLeft => match shift_amount(elem, b) {
            Some(s) => a << s,
            None => 0,
        },
        // The top bit of the width is the sign.
        ShiftRightArithmetic => {
            let signed = wrap_signed(signed_of(elem), a as i64);
            match shift_amount(elem, b) {
                Some(s) => (signed >> s) as u64,
                None => {
                    if signed < 0 {
                        u64::MAX
                    } else {
                        0
                    }
                }
            }
        }
        ShiftRightLogical => match shift_amount(elem, b) {
            Some(s) => a >> s,
            None => 0,
        },
        Atan2 => 0, // excluded by `binary_supported`
    };
    wrap_unsigned(elem, v)
}

/// The signed type of the same width.
fn signed_of(elem: ElementType) -> ElementType {
    match elem {
        ElementType::U8 => ElementType::S8,
        ElementType::U16 => ElementType::S16,
        ElementType::U32 => ElementType::S32,
        ElementType::U64 => ElementType::S64,
        e => e,
    }
}

fn binary_pred(op: BinaryOp, a: bool, b: bool) -> bool {
    use BinaryOp::*;
    match op {
        Add | Max | Or => a | b,
        Mul | Min | And => a & b,
        Xor => a ^ b,
        _ => false, // excluded by `binary_supported`
    }
}

/// One binary op on two scalars of type `elem` (used by reductions' fast path). Returns
/// `None` when the op is not defined on the type or the carriers do not match it.
pub(super) fn binary_scalar(op: BinaryOp, elem: ElementType, a: Scalar, b: Scalar) -> Option<Scalar> {
    if !binary_supported(op, elem) {
        return None;
    }
    Some(match (a, b) {
        (Scalar::Pred(x), Scalar::Pred(y)) => Scalar::Pred(binary_pred(op, x, y)),
        (Scalar::S(x), Scalar::S(y)) => Scalar::S(binary_signed(op, elem, x, y)),
        (Scalar::U(x), Scalar::U(y)) => Scalar::U(binary_unsigned(op, elem, x, y)),
        (Scalar::F(x), Scalar::F(y)) => Scalar::F(round_float(elem, binary_f64(op, x, y))),
        _ => return None,
    })
}

/// Checks that all operands have the same shape and element type; returns the first.
fn same_operands<'a>(inst: &Instruction, args: &'a [Value], n: usize) -> Result<Vec<&'a Literal>, String> {
    expect_arity(inst, args, n)?;
    let ls: Vec<&Literal> = (0..n).map(|i| expect_array(inst, args, i)).collect::<Result<_, _>>()?;
    for l in &ls[1..] {
        if !l.shape.same_shape(&ls[0].shape) {
            return Err(format!("{} operands differ: {} vs {}", inst.op.hlo_name(), ls[0].shape, l.shape));
        }
    }
    Ok(ls)
}

pub(super) fn binary(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Binary(op) = inst.op else { return Err("expected a binary op".into()) };
    let ls = same_operands(inst, args, 2)?;
    let (a, b) = (ls[0], ls[1]);
    let elem = a.elem();
    if !binary_supported(op, elem) {
        return Err(format!("{} is not defined on {elem}", op.hlo_name()));
    }
    let shape = logical_result(inst)?;
    if !shape.same_shape(&a.shape) {
        return Err(format!("{} of {} cannot produce {shape}", op.hlo_name(), a.shape));
    }
    let data = match (&a.data, &b.data) {
        (Data::Pred(x), Data::Pred(y)) => Data::Pred(x.iter().zip(y).map(|(&p, &q)| binary_pred(op, p, q)).collect()),
        (Data::S(x), Data::S(y)) => Data::S(x.iter().zip(y).map(|(&p, &q)| binary_signed(op, elem, p, q)).collect()),
        (Data::U(x), Data::U(y)) => Data::U(x.iter().zip(y).map(|(&p, &q)| binary_unsigned(op, elem, p, q)).collect()),
        (Data::F(x), Data::F(y)) => {
            Data::F(x.iter().zip(y).map(|(&p, &q)| round_float(elem, binary_f64(op, p, q))).collect())
        }
        _ => return Err("operand carriers do not match their element type".into()),
    };
    Ok(array(shape, data))
}

// ---------------------------------------------------------------------------------------
// Compare, select, clamp

/// A key whose integer order is the IEEE totalOrder of floats:
/// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
fn total_order_key(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    if bits < 0 {
        bits ^ i64::MAX
    } else {
        bits
    }
}

fn ordering_holds(dir: CmpDir, ord: Option<std::cmp::Ordering>) -> bool {
    use std::cmp::Ordering::*;
    match (dir, ord) {
        // Unordered (NaN under FLOAT): only NE holds.
        (CmpDir::Ne, None) => true,
        (_, None) => false,
        (CmpDir::Eq, Some(o)) => o == Equal,
        (CmpDir::Ne, Some(o)) => o != Equal,
        (CmpDir::Lt, Some(o)) => o == Less,
        (CmpDir::Le, Some(o)) => o != Greater,
        (CmpDir::Gt, Some(o)) => o == Greater,
        (CmpDir::Ge, Some(o)) => o != Less,
    }
}

pub(super) fn compare(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Compare { dir, kind } = inst.op else { return Err("expected a compare".into()) };
    let ls = same_operands(inst, args, 2)?;
    let (a, b) = (ls[0], ls[1]);
    let shape = logical_result(inst)?;
    if !shape.same_shape(&a.shape.with_elem(ElementType::Pred)) {
        return Err(format!("compare of {} cannot produce {shape}", a.shape));
    }
    let total = kind == Some(CmpKind::TotalOrder);
    let out: Vec<bool> = match (&a.data, &b.data) {
        (Data::Pred(x), Data::Pred(y)) => x.iter().zip(y).map(|(p, q)| ordering_holds(dir, Some(p.cmp(q)))).collect(),
        (Data::S(x), Data::S(y)) => x.iter().zip(y).map(|(p, q)| ordering_holds(dir, Some(p.cmp(q)))).collect(),
        (Data::U(x), Data::U(y)) => x.iter().zip(y).map(|(p, q)| ordering_holds(dir, Some(p.cmp(q)))).collect(),
        (Data::F(x), Data::F(y)) if total => x
            .iter()
            .zip(y)
            .map(|(&p, &q)| ordering_holds(dir, Some(total_order_key(p).cmp(&total_order_key(q)))))
            .collect(),
        (Data::F(x), Data::F(y)) => x.iter().zip(y).map(|(p, q)| ordering_holds(dir, p.partial_cmp(q))).collect(),
        _ => return Err("operand carriers do not match their element type".into()),
    };
    Ok(array(shape, Data::Pred(out)))
}

/// Element `i` of `l`, or element 0 when `l` is a scalar being broadcast.
fn bcast(l: &Literal, i: usize) -> usize {
    if l.shape.rank() == 0 {
        0
    } else {
        i
    }
}

/// `select(pred, on_true, on_false)`; `pred` may be a scalar.
pub(super) fn select(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    expect_arity(inst, args, 3)?;
    let p = expect_array(inst, args, 0)?;
    let t = expect_array(inst, args, 1)?;
    let f = expect_array(inst, args, 2)?;
    let Data::Pred(pv) = &p.data else { return Err(format!("select needs a pred selector, got {}", p.shape)) };
    if !t.shape.same_shape(&f.shape) || (p.shape.rank() != 0 && !p.shape.same_dims(&t.shape)) {
        return Err(format!("select operands do not match: {}, {}, {}", p.shape, t.shape, f.shape));
    }
    let shape = logical_result(inst)?;
    if !shape.same_shape(&t.shape) {
        return Err(format!("select of {} cannot produce {shape}", t.shape));
    }
    let picks = (0..t.num_elements()).map(|i| pv[bcast(p, i)]);
    let data = match (&t.data, &f.data) {
        (Data::Pred(x), Data::Pred(y)) => {
            Data::Pred(picks.enumerate().map(|(i, c)| if c { x[i] } else { y[i] }).collect())
        }
        (Data::S(x), Data::S(y)) => Data::S(picks.enumerate().map(|(i, c)| if c { x[i] } else { y[i] }).collect()),
        (Data::U(x), Data::U(y)) => Data::U(picks.enumerate().map(|(i, c)| if c { x[i] } else { y[i] }).collect()),
        (Data::F(x), Data::F(y)) => Data::F(picks.enumerate().map(|(i, c)| if c { x[i] } else { y[i] }).collect()),
        _ => return Err("operand carriers do not match their element type".into()),
    };
    Ok(array(shape, data))
}

/// `clamp(min, x, max) = minimum(maximum(x, min), max)`; min and max may be scalars.
pub(super) fn clamp(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    expect_arity(inst, args, 3)?;
    let lo = expect_array(inst, args, 0)?;
    let x = expect_array(inst, args, 1)?;
    let hi = expect_array(inst, args, 2)?;
    for bound in [lo, hi] {
        let fits = bound.shape.rank() == 0 || bound.shape.same_dims(&x.shape);
        if bound.elem() != x.elem() || !fits {
            return Err(format!("clamp bound {} does not fit operand {}", bound.shape, x.shape));
        }
    }
    let shape = logical_result(inst)?;
    if !shape.same_shape(&x.shape) {
        return Err(format!("clamp of {} cannot produce {shape}", x.shape));
    }
    let elem = x.elem();
    let n = x.num_elements();
    let data = match (&lo.data, &x.data, &hi.data) {
        (Data::Pred(l), Data::Pred(v), Data::Pred(h)) => {
            Data::Pred((0..n).map(|i| (v[i] | l[bcast(lo, i)]) & h[bcast(hi, i)]).collect())
        }
        (Data::S(l), Data::S(v), Data::S(h)) => {
            Data::S((0..n).map(|i| v[i].max(l[bcast(lo, i)]).min(h[bcast(hi, i)])).collect())
        }
        (Data::U(l), Data::U(v), Data::U(h)) => {
            Data::U((0..n).map(|i| v[i].max(l[bcast(lo, i)]).min(h[bcast(hi, i)])).collect())
        }
        (Data::F(l), Data::F(v), Data::F(h)) => Data::F(
            (0..n).map(|i| round_float(elem, float_min(float_max(v[i], l[bcast(lo, i)]), h[bcast(hi, i)]))).collect(),
        ),
        _ => return Err("operand carriers do not match their element type".into()),
    };
    Ok(array(shape, data))
}

// ---------------------------------------------------------------------------------------
// Conversions

/// An integer `(-1)^neg * mag` rounded once (to nearest even) to float type `elem`.
///
/// Going through f64 would round twice for magnitudes above 2^53; instead the magnitude
/// is first cut to 53 bits with round-to-odd (a sticky last bit), which makes the second
/// rounding to f32/f16/bf16 exact.
fn int_to_float(elem: ElementType, neg: bool, mag: u64) -> f64 {
    let v = if elem == ElementType::F64 || mag < (1u64 << 53) {
        mag as f64
    } else {
        let shift = 64 - mag.leading_zeros() - 53;
        let kept = (mag >> shift) | ((mag & ((1u64 << shift) - 1) != 0) as u64);
        kept as f64 * (shift as f64).exp2()
    };
    round_float(elem, if neg { -v } else { v })
}

/// One element converted to `to`, as `convert` defines it.
pub(super) fn convert_scalar(x: Scalar, to: ElementType) -> Scalar {
    match x {
        Scalar::Pred(b) => convert_scalar(Scalar::U(b as u64), to),
        Scalar::S(v) => {
            if to.is_pred() {
                Scalar::Pred(v != 0)
            } else if to.is_signed_int() {
                Scalar::S(wrap_signed(to, v))
            } else if to.is_unsigned_int() {
                Scalar::U(wrap_unsigned(to, v as u64))
            } else {
                Scalar::F(int_to_float(to, v < 0, v.unsigned_abs()))
            }
        }
        Scalar::U(v) => {
            if to.is_pred() {
                Scalar::Pred(v != 0)
            } else if to.is_signed_int() {
                Scalar::S(wrap_signed(to, v as i64))
            } else if to.is_unsigned_int() {
                Scalar::U(wrap_unsigned(to, v))
            } else {
                Scalar::F(int_to_float(to, false, v))
            }
        }
        Scalar::F(v) => {
            if to.is_pred() {
                Scalar::Pred(v != 0.0)
            } else if to.is_signed_int() {
                Scalar::S(float_to_signed(to, v))
            } else if to.is_unsigned_int() {
                Scalar::U(float_to_unsigned(to, v))
            } else {
                Scalar::F(round_float(to, v))
            }
        }
    }
}

/// Converts a whole literal to element type `to` (same dimensions).
pub(crate) fn convert_literal(x: &Literal, to: ElementType) -> Literal {
    let shape = Shape::new(to, x.shape.dims.clone());
    if x.elem() == to {
        return Literal { shape, data: x.data.clone() };
    }
    let mut data = Data::with_capacity(to, x.num_elements());
    for i in 0..x.num_elements() {
        match (&mut data, convert_scalar(x.get(i), to)) {
            (Data::Pred(d), Scalar::Pred(v)) => d.push(v),
            (Data::S(d), Scalar::S(v)) => d.push(v),
            (Data::U(d), Scalar::U(v)) => d.push(v),
            (Data::F(d), Scalar::F(v)) => d.push(v),
            _ => {} // convert_scalar always yields the carrier of `to`
        }
    }
    Literal { shape, data }
}

pub(super) fn convert(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    expect_arity(inst, args, 1)?;
    let x = expect_array(inst, args, 0)?;
    let shape = logical_result(inst)?;
    if !shape.same_dims(&x.shape) {
        return Err(format!("convert of {} cannot produce {shape}", x.shape));
    }
    Ok(Value::Array(convert_literal(x, shape.elem)))
}

/// The element of type `elem` whose bit pattern is `bits` (of the type's width).
fn from_bits(elem: ElementType, bits: u64) -> Scalar {
    if elem.is_pred() {
        Scalar::Pred(bits != 0)
    } else if elem.is_signed_int() {
        let w = elem.bit_width();
        Scalar::S(((bits << (64 - w)) as i64) >> (64 - w))
    } else if elem.is_unsigned_int() {
        Scalar::U(bits)
    } else {
        Scalar::F(float_from_bits(elem, bits))
    }
}

/// Reinterprets bits. Equal widths map element to element; a wider operand splits into
/// a new trailing dimension of narrower elements (least significant first), and a
/// trailing dimension of narrower operand elements joins into one wider element.
pub(super) fn bitcast_convert(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    expect_arity(inst, args, 1)?;
    let x = expect_array(inst, args, 0)?;
    let shape = logical_result(inst)?;
    let (win, wout) = (x.elem().bit_width(), shape.elem.bit_width());
    let in_bits: Vec<u64> = (0..x.num_elements()).map(|i| x.bits(i)).collect();
    let bad = || format!("cannot bitcast-convert {} to {shape}", x.shape);
    let out_bits: Vec<u64> = if win == wout {
        if !shape.same_dims(&x.shape) {
            return Err(bad());
        }
        in_bits
    } else if win > wout {
        let ratio = (win / wout) as i64;
        let mut dims = x.shape.dims.clone();
        dims.push(ratio);
        if win % wout != 0 || shape.dims != dims {
            return Err(bad());
        }
        let mask = width_mask(shape.elem);
        in_bits.iter().flat_map(|&b| (0..ratio as u32).map(move |k| (b >> (k * wout)) & mask)).collect()
    } else {
        let ratio = (wout / win) as usize;
        let ok = wout % win == 0
            && x.shape.dims.last() == Some(&(ratio as i64))
            && shape.dims[..] == x.shape.dims[..x.shape.rank() - 1];
        if !ok {
            return Err(bad());
        }
        in_bits
            .chunks(ratio)
            .map(|c| c.iter().enumerate().fold(0u64, |acc, (k, &b)| acc | (b << (k as u32 * win))))
            .collect()
    };
    let mut data = Data::with_capacity(shape.elem, out_bits.len());
    for b in out_bits {
        match (&mut data, from_bits(shape.elem, b)) {
            (Data::Pred(d), Scalar::Pred(v)) => d.push(v),
            (Data::S(d), Scalar::S(v)) => d.push(v),
            (Data::U(d), Scalar::U(v)) => d.push(v),
            (Data::F(d), Scalar::F(v)) => d.push(v),
            _ => {} // from_bits always yields the carrier of the element type
        }
    }
    Ok(array(shape, data))
}

/// (exponent bits, explicit mantissa bits) of a float type.
fn float_format(elem: ElementType) -> (u32, u32) {
    match elem {
        ElementType::F16 => (5, 10),
        ElementType::BF16 => (8, 7),
        ElementType::F32 => (8, 23),
        _ => (11, 52),
    }
}

/// Rounds `x` (of type `elem`) to a float with `exponent_bits` and `mantissa_bits`, kept in
/// `elem`: mantissa rounded to nearest even, exponents beyond the narrow range overflow to
/// infinity, and values below its smallest normal flush to zero. NaN stays NaN (becomes
/// infinity when no mantissa bit is left to hold it), as XLA does.
fn reduce_precision_one(elem: ElementType, x: f64, exponent_bits: u32, mantissa_bits: u32) -> f64 {
    let (src_exp, src_man) = float_format(elem);
    let width = elem.bit_width();
    let mut bits = float_bits(elem, x);
    if mantissa_bits < src_man {
        let last_bit = 1u64 << (src_man - mantissa_bits);
        let base_bias = (last_bit >> 1) - 1;
        let x_last = (bits & last_bit) >> (src_man - mantissa_bits);
        bits = bits.wrapping_add(x_last + base_bias) & !(last_bit - 1);
        bits &= width_mask(elem);
    }
    if exponent_bits < src_exp {
        let sign = bits & (1u64 << (width - 1));
        let exp_mask = ((1u64 << src_exp) - 1) << src_man;
        let bias = (1u64 << (src_exp - 1)) - 1;
        let reduced_bias = (1u64 << (exponent_bits - 1)) - 1;
        let exponent = bits & exp_mask;
        if exponent > (bias + reduced_bias) << src_man {
            bits = sign | exp_mask;
        } else if exponent <= (bias - reduced_bias) << src_man {
            bits = sign;
        }
    }
    if x.is_nan() {
        // With no mantissa bit left a NaN cannot be represented: it becomes +infinity.
        return if mantissa_bits > 0 { x } else { f64::INFINITY };
    }
    float_from_bits(elem, bits)
}

pub(super) fn reduce_precision(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::ReducePrecision { exponent_bits, mantissa_bits } = inst.op else {
        return Err("expected a reduce-precision".into());
    };
    expect_arity(inst, args, 1)?;
    let x = expect_array(inst, args, 0)?;
    let Data::F(v) = &x.data else { return Err(format!("reduce-precision needs floats, got {}", x.shape)) };
    if exponent_bits < 1 {
        return Err("reduce-precision needs at least one exponent bit".into());
    }
    let shape = logical_result(inst)?;
    if !shape.same_shape(&x.shape) {
        return Err(format!("reduce-precision of {} cannot produce {shape}", x.shape));
    }
    let elem = x.elem();
    Ok(array(shape, Data::F(v.iter().map(|&f| reduce_precision_one(elem, f, exponent_bits, mantissa_bits)).collect())))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::ir::{BinaryOp, CmpDir, CmpKind, ElementType, ElementType::*, Literal, Op, UnaryOp, Value};

    fn un(op: UnaryOp, x: Literal) -> Literal {
        let ty = arr(x.elem(), &x.shape.dims);
        run_op_array(Op::Unary(op), ty, &[x.into()])
    }
    fn bin(op: BinaryOp, a: Literal, b: Literal) -> Literal {
        let ty = arr(a.elem(), &a.shape.dims);
        run_op_array(Op::Binary(op), ty, &[a.into(), b.into()])
    }
    fn cmp(dir: CmpDir, kind: Option<CmpKind>, a: Literal, b: Literal) -> Vec<bool> {
        let ty = arr(Pred, &a.shape.dims);
        let out = run_op_array(Op::Compare { dir, kind }, ty, &[a.into(), b.into()]);
        (0..out.num_elements()).map(|i| out.get(i) == crate::ir::Scalar::Pred(true)).collect()
    }
    fn conv(x: Literal, to: ElementType) -> Literal {
        let ty = arr(to, &x.shape.dims);
        run_op_array(Op::Convert, ty, &[x.into()])
    }
    const NAN: f64 = f64::NAN;
    const INF: f64 = f64::INFINITY;

    #[test]
    fn float_unary_ops() {
        assert_bits_eq(&un(UnaryOp::Neg, f32s(&[2], &[0.0, -1.5])).to_f64_vec(), &[-0.0, 1.5]);
        assert_bits_eq(&un(UnaryOp::Abs, f32s(&[2], &[-0.0, -2.0])).to_f64_vec(), &[0.0, 2.0]);
        let x = f32s(&[5], &[-2.5, -0.0, 0.0, NAN, 3.0]);
        assert_bits_eq(&un(UnaryOp::Sign, x).to_f64_vec(), &[-1.0, -0.0, 0.0, NAN, 1.0]);
        let x = f32s(&[5], &[2.5, -2.5, 0.5, 1.4, -0.4]);
        assert_bits_eq(&un(UnaryOp::RoundAfz, x.clone()).to_f64_vec(), &[3.0, -3.0, 1.0, 1.0, -0.0]);
        assert_bits_eq(&un(UnaryOp::RoundEven, x.clone()).to_f64_vec(), &[2.0, -2.0, 0.0, 1.0, -0.0]);
        assert_bits_eq(&un(UnaryOp::Floor, x.clone()).to_f64_vec(), &[2.0, -3.0, 0.0, 1.0, -1.0]);
        assert_bits_eq(&un(UnaryOp::Ceil, x).to_f64_vec(), &[3.0, -2.0, 1.0, 2.0, -0.0]);
        // e rounded to bf16's 8 significant bits is 2.71875.
        assert_eq!(un(UnaryOp::Exp, lit(BF16, &[1], &[1.0])).to_f64_vec(), vec![2.71875]);
        // sqrt(2) in f32 is 0x3FB504F3.
        assert_eq!(un(UnaryOp::Sqrt, f32s(&[1], &[2.0])).to_f64_vec(), vec![f32::from_bits(0x3FB5_04F3) as f64]);
        let erf = un(UnaryOp::Erf, lit(F64, &[1], &[0.5])).to_f64_vec()[0];
        assert!((erf - 0.520_499_877_813_046_5).abs() < 1e-16, "{erf}");
        // erf(0.5) in f16: 1066 * 2^-11.
        assert_eq!(un(UnaryOp::Erf, lit(F16, &[1], &[0.5])).to_f64_vec(), vec![0.520_507_812_5]);
        assert_eq!(un(UnaryOp::Logistic, f32s(&[1], &[0.0])).to_f64_vec(), vec![0.5]);
        assert_eq!(un(UnaryOp::Cbrt, lit(F64, &[1], &[-27.0])).to_f64_vec(), vec![-3.0]);
        assert_eq!(un(UnaryOp::Rsqrt, f32s(&[1], &[4.0])).to_f64_vec(), vec![0.5]);
        assert_bits_eq(&un(UnaryOp::Log, f32s(&[3], &[0.0, -1.0, 1.0])).to_f64_vec(), &[-INF, NAN, 0.0]);
        assert_bits_eq(&un(UnaryOp::Tan, f32s(&[1], &[-0.0])).to_f64_vec(), &[-0.0]);
        let finite =
            run_op_array(Op::Unary(UnaryOp::IsFinite), arr(Pred, &[4]), &[f32s(&[4], &[INF, -INF, NAN, 1.0]).into()]);
        assert_eq!(finite, preds(&[4], &[false, false, false, true]));
        assert!(run_op(Op::Unary(UnaryOp::Exp), arr(S32, &[1]), &[ints(S32, &[1], &[1]).into()]).is_err());
        assert!(run_op(Op::Unary(UnaryOp::Not), arr(F32, &[1]), &[f32s(&[1], &[1.0]).into()]).is_err());
    }

    #[test]
    fn integer_and_pred_unary_ops() {
        assert_eq!(un(UnaryOp::Abs, ints(S8, &[2], &[-128, -5])), ints(S8, &[2], &[-128, 5]));
        assert_eq!(un(UnaryOp::Neg, ints(S8, &[2], &[-128, 5])), ints(S8, &[2], &[-128, -5]));
        assert_eq!(un(UnaryOp::Neg, uints(U8, &[2], &[1, 0])), uints(U8, &[2], &[255, 0]));
        assert_eq!(un(UnaryOp::Not, ints(S8, &[1], &[5])), ints(S8, &[1], &[-6]));
        assert_eq!(un(UnaryOp::Not, uints(U8, &[1], &[5])), uints(U8, &[1], &[250]));
        assert_eq!(un(UnaryOp::Sign, ints(S32, &[3], &[-7, 0, 9])), ints(S32, &[3], &[-1, 0, 1]));
        assert_eq!(un(UnaryOp::PopCnt, ints(S8, &[2], &[-1, 6])), ints(S8, &[2], &[8, 2]));
        assert_eq!(un(UnaryOp::PopCnt, uints(U16, &[1], &[0xF0F0])), uints(U16, &[1], &[8]));
        assert_eq!(un(UnaryOp::Clz, ints(S32, &[3], &[1, -1, 0])), ints(S32, &[3], &[31, 0, 32]));
        assert_eq!(un(UnaryOp::Clz, ints(S16, &[1], &[0])), ints(S16, &[1], &[16]));
        assert_eq!(un(UnaryOp::Clz, uints(U64, &[2], &[0, 1 << 40])), uints(U64, &[2], &[64, 23]));
        assert_eq!(un(UnaryOp::Not, preds(&[2], &[true, false])), preds(&[2], &[false, true]));
    }

    #[test]
    fn integer_division_and_remainder_edge_cases() {
        let min = i32::MIN as i64;
        let q = bin(BinaryOp::Div, ints(S32, &[6], &[7, -7, 7, -7, 5, min]), ints(S32, &[6], &[2, 2, -2, -2, 0, -1]));
        assert_eq!(q, ints(S32, &[6], &[3, -3, -3, 3, -1, min]));
        let r = bin(BinaryOp::Rem, ints(S32, &[5], &[7, -7, 7, 5, min]), ints(S32, &[5], &[2, 2, -2, 0, -1]));
        assert_eq!(r, ints(S32, &[5], &[1, -1, 1, 5, 0]));
        let q = bin(BinaryOp::Div, ints(S8, &[1], &[-128]), ints(S8, &[1], &[-1]));
        assert_eq!(q, ints(S8, &[1], &[-128]));
        assert_eq!(bin(BinaryOp::Div, uints(U8, &[2], &[7, 9]), uints(U8, &[2], &[0, 2])), uints(U8, &[2], &[255, 4]));
        assert_eq!(bin(BinaryOp::Rem, uints(U8, &[2], &[7, 9]), uints(U8, &[2], &[0, 2])), uints(U8, &[2], &[7, 1]));
        let fr = bin(BinaryOp::Rem, f32s(&[3], &[5.5, -5.5, 1.0]), f32s(&[3], &[2.0, 2.0, 0.0]));
        assert_bits_eq(&fr.to_f64_vec(), &[1.5, -1.5, NAN]);
    }

    #[test]
    fn integer_arithmetic_wraps() {
        assert_eq!(bin(BinaryOp::Add, ints(S8, &[1], &[100]), ints(S8, &[1], &[100])), ints(S8, &[1], &[-56]));
        assert_eq!(bin(BinaryOp::Mul, uints(U8, &[1], &[16]), uints(U8, &[1], &[16])), uints(U8, &[1], &[0]));
        assert_eq!(
            bin(BinaryOp::Sub, uints(U32, &[1], &[0]), uints(U32, &[1], &[1])),
            uints(U32, &[1], &[0xFFFF_FFFF])
        );
        let max = bin(BinaryOp::Max, uints(U64, &[1], &[u64::MAX]), uints(U64, &[1], &[1]));
        assert_eq!(max, uints(U64, &[1], &[u64::MAX]));
        let min = bin(BinaryOp::Min, ints(S64, &[1], &[i64::MIN]), ints(S64, &[1], &[0]));
        assert_eq!(min, ints(S64, &[1], &[i64::MIN]));
    }

    #[test]
    fn shifts_follow_the_spec_out_of_range() {
        let x = ints(S8, &[4], &[1, 1, 1, -1]);
        assert_eq!(bin(BinaryOp::ShiftLeft, x, ints(S8, &[4], &[3, 8, -1, 7])), ints(S8, &[4], &[8, 0, 0, -128]));
        let x = ints(S8, &[4], &[-128, -128, 64, -1]);
        let sra = bin(BinaryOp::ShiftRightArithmetic, x, ints(S8, &[4], &[3, 8, -1, 100]));
        assert_eq!(sra, ints(S8, &[4], &[-16, -1, 0, -1]));
        let srl = bin(BinaryOp::ShiftRightLogical, ints(S8, &[3], &[-128, -1, 64]), ints(S8, &[3], &[3, 8, 1]));
        assert_eq!(srl, ints(S8, &[3], &[16, 0, 32]));
        let x = uints(U32, &[3], &[0x8000_0000, 0x8000_0000, 0x4000_0000]);
        let sra = bin(BinaryOp::ShiftRightArithmetic, x, uints(U32, &[3], &[4, 32, 40]));
        assert_eq!(sra, uints(U32, &[3], &[0xF800_0000, 0xFFFF_FFFF, 0]));
        let x = uints(U64, &[2], &[1, u64::MAX]);
        let shl = bin(BinaryOp::ShiftLeft, x.clone(), uints(U64, &[2], &[63, 64]));
        assert_eq!(shl, uints(U64, &[2], &[1 << 63, 0]));
        assert_eq!(bin(BinaryOp::ShiftRightLogical, x, uints(U64, &[2], &[0, 63])), uints(U64, &[2], &[1, 1]));
    }

    #[test]
    fn integer_power() {
        let base = ints(S32, &[8], &[2, 2, -1, -1, 1, 2, 3, 0]);
        let exp = ints(S32, &[8], &[10, -1, -3, -2, -5, 31, 0, 0]);
        let want = ints(S32, &[8], &[1024, 0, -1, 1, 1, i32::MIN as i64, 1, 1]);
        assert_eq!(bin(BinaryOp::Pow, base, exp), want);
        assert_eq!(bin(BinaryOp::Pow, uints(U8, &[2], &[3, 2]), uints(U8, &[2], &[5, 8])), uints(U8, &[2], &[243, 0]));
        let p = bin(BinaryOp::Pow, f32s(&[3], &[2.0, -8.0, 0.0]), f32s(&[3], &[0.5, 1.0 / 3.0, 0.0]));
        assert_bits_eq(&p.to_f64_vec(), &[std::f32::consts::SQRT_2 as f64, NAN, 1.0]);
    }

    #[test]
    fn float_binary_rounding_and_nan() {
        let a = f32s(&[4], &[NAN, 1.0, -0.0, 0.0]);
        let b = f32s(&[4], &[1.0, NAN, 0.0, -0.0]);
        assert_bits_eq(&bin(BinaryOp::Max, a.clone(), b.clone()).to_f64_vec(), &[NAN, NAN, 0.0, 0.0]);
        assert_bits_eq(&bin(BinaryOp::Min, a, b).to_f64_vec(), &[NAN, NAN, -0.0, -0.0]);
        // Ties to even: 1 + 2^-24 -> 1; 1 + 3*2^-24 -> 1 + 2^-22.
        let eps = (2.0f64).powi(-24);
        let s = bin(BinaryOp::Add, f32s(&[2], &[1.0, 1.0]), f32s(&[2], &[eps, 3.0 * eps]));
        assert_eq!(s.to_f64_vec(), vec![1.0, 1.0 + (2.0f64).powi(-22)]);
        let s = bin(BinaryOp::Add, lit(BF16, &[2], &[1.0, 1.0]), lit(BF16, &[2], &[1.0 / 256.0, 3.0 / 256.0]));
        assert_eq!(s.to_f64_vec(), vec![1.0, 1.015625]);
        let s = bin(BinaryOp::Add, lit(F16, &[1], &[60000.0]), lit(F16, &[1], &[10000.0]));
        assert_eq!(s.to_f64_vec(), vec![INF]);
        let t = bin(BinaryOp::Atan2, lit(F64, &[1], &[1.0]), lit(F64, &[1], &[-1.0]));
        assert_eq!(t.to_f64_vec(), vec![3.0 * std::f64::consts::FRAC_PI_4]);
        let d = bin(BinaryOp::Div, f32s(&[3], &[1.0, -1.0, 0.0]), f32s(&[3], &[0.0, 0.0, 0.0]));
        assert_bits_eq(&d.to_f64_vec(), &[INF, -INF, NAN]);
        let bad =
            run_op(Op::Binary(BinaryOp::And), arr(F32, &[1]), &[f32s(&[1], &[1.0]).into(), f32s(&[1], &[1.0]).into()]);
        assert!(bad.is_err());
        let mismatched = run_op(
            Op::Binary(BinaryOp::Add),
            arr(F32, &[1]),
            &[f32s(&[1], &[1.0]).into(), lit(F64, &[1], &[1.0]).into()],
        );
        assert!(mismatched.is_err());
    }

    #[test]
    fn pred_binary_ops_are_logical() {
        let a = preds(&[3], &[true, false, false]);
        let b = preds(&[3], &[true, true, false]);
        assert_eq!(bin(BinaryOp::Add, a.clone(), b.clone()), preds(&[3], &[true, true, false]));
        assert_eq!(bin(BinaryOp::Mul, a.clone(), b.clone()), preds(&[3], &[true, false, false]));
        assert_eq!(bin(BinaryOp::Xor, a.clone(), b.clone()), preds(&[3], &[false, true, false]));
        assert_eq!(bin(BinaryOp::Or, a.clone(), b.clone()), preds(&[3], &[true, true, false]));
        assert_eq!(bin(BinaryOp::Min, a.clone(), b.clone()), preds(&[3], &[true, false, false]));
        assert!(run_op(Op::Binary(BinaryOp::Sub), arr(Pred, &[3]), &[a.into(), b.into()]).is_err());
    }

    #[test]
    fn compare_float_and_total_order() {
        let a = f32s(&[3], &[NAN, 1.0, -0.0]);
        let b = f32s(&[3], &[NAN, 2.0, 0.0]);
        assert_eq!(cmp(CmpDir::Eq, None, a.clone(), b.clone()), vec![false, false, true]);
        assert_eq!(cmp(CmpDir::Ne, Some(CmpKind::Float), a.clone(), b.clone()), vec![true, true, false]);
        assert_eq!(cmp(CmpDir::Lt, None, a.clone(), b.clone()), vec![false, true, false]);
        assert_eq!(cmp(CmpDir::Ge, None, a.clone(), b.clone()), vec![false, false, true]);
        let total = Some(CmpKind::TotalOrder);
        assert_eq!(cmp(CmpDir::Eq, total, a.clone(), b.clone()), vec![true, false, false]);
        assert_eq!(cmp(CmpDir::Lt, total, a, b), vec![false, true, true]);
        let a = lit(F64, &[4], &[-NAN, -INF, -0.0, INF]);
        let b = lit(F64, &[4], &[-INF, -0.0, 0.0, NAN]);
        assert_eq!(cmp(CmpDir::Lt, total, a.clone(), b.clone()), vec![true, true, true, true]);
        assert_eq!(cmp(CmpDir::Gt, total, b, a), vec![true, true, true, true]);
    }

    #[test]
    fn compare_integers_and_preds() {
        assert_eq!(cmp(CmpDir::Lt, None, ints(S32, &[2], &[-1, 3]), ints(S32, &[2], &[1, 3])), vec![true, false]);
        assert_eq!(cmp(CmpDir::Le, None, ints(S32, &[2], &[-1, 3]), ints(S32, &[2], &[1, 3])), vec![true, true]);
        let u = cmp(CmpDir::Gt, Some(CmpKind::Unsigned), uints(U32, &[1], &[0xFFFF_FFFF]), uints(U32, &[1], &[1]));
        assert_eq!(u, vec![true]);
        assert_eq!(cmp(CmpDir::Lt, None, preds(&[2], &[false, true]), preds(&[2], &[true, true])), vec![true, false]);
        assert_eq!(cmp(CmpDir::Ne, None, preds(&[2], &[false, true]), preds(&[2], &[true, true])), vec![true, false]);
    }

    #[test]
    fn select_and_clamp() {
        let t = ints(S32, &[3], &[1, 2, 3]);
        let f = ints(S32, &[3], &[-1, -2, -3]);
        let out = run_op_array(
            Op::Select,
            arr(S32, &[3]),
            &[preds(&[3], &[true, false, true]).into(), t.clone().into(), f.clone().into()],
        );
        assert_eq!(out, ints(S32, &[3], &[1, -2, 3]));
        let out = run_op_array(
            Op::Select,
            arr(S32, &[3]),
            &[preds(&[], &[false]).into(), t.clone().into(), f.clone().into()],
        );
        assert_eq!(out, f);
        assert!(run_op(Op::Select, arr(S32, &[3]), &[preds(&[2], &[true, true]).into(), t.into(), f.into()]).is_err());

        let x = f32s(&[4], &[NAN, -1.0, 5.0, 0.5]);
        let out =
            run_op_array(Op::Clamp, arr(F32, &[4]), &[f32s(&[], &[0.0]).into(), x.into(), f32s(&[], &[1.0]).into()]);
        assert_bits_eq(&out.to_f64_vec(), &[NAN, 0.0, 1.0, 0.5]);
        let lo = ints(S8, &[3], &[0, 5, -10]);
        let hi = ints(S8, &[3], &[1, 9, -5]);
        let out = run_op_array(Op::Clamp, arr(S8, &[3]), &[lo.into(), ints(S8, &[3], &[7, 7, 7]).into(), hi.into()]);
        assert_eq!(out, ints(S8, &[3], &[1, 7, -5]));
    }

    #[test]
    fn convert_between_all_kinds() {
        let x = f32s(&[6], &[1.9, -1.9, 300.0, -300.0, NAN, INF]);
        assert_eq!(conv(x, S8), ints(S8, &[6], &[1, -1, 127, -128, 0, 127]));
        assert_eq!(conv(lit(F64, &[3], &[-1.5, 255.9, 256.0]), U8), uints(U8, &[3], &[0, 255, 255]));
        assert_eq!(conv(lit(F64, &[1], &[0.1]), F32).to_f64_vec(), vec![0.1f32 as f64]);
        assert_eq!(conv(f32s(&[1], &[1.0 / 3.0]), BF16).to_f64_vec(), vec![0.333984375]);
        assert_eq!(conv(f32s(&[1], &[1.0 / 3.0]), F16).to_f64_vec(), vec![0.333251953125]);
        // 2^60 + 2^36 + 1 rounds up to 2^60 + 2^37 in f32 (a detour through f64 would tie
        // and round down to 2^60).
        let big = (1i64 << 60) + (1i64 << 36) + 1;
        assert_eq!(conv(ints(S64, &[1], &[big]), F32).to_f64_vec(), vec![((1u64 << 60) + (1u64 << 37)) as f64]);
        assert_eq!(conv(ints(S64, &[1], &[-big]), F32).to_f64_vec(), vec![-(((1u64 << 60) + (1u64 << 37)) as f64)]);
        assert_eq!(conv(uints(U64, &[1], &[u64::MAX]), F32).to_f64_vec(), vec![18446744073709551616.0]);
        assert_eq!(conv(ints(S32, &[1], &[70000]), F16).to_f64_vec(), vec![INF]);
        assert_eq!(conv(preds(&[2], &[true, false]), F32).to_f64_vec(), vec![1.0, 0.0]);
        assert_eq!(conv(preds(&[2], &[true, false]), S32), ints(S32, &[2], &[1, 0]));
        assert_eq!(conv(f32s(&[4], &[0.0, -0.0, 0.5, NAN]), Pred), preds(&[4], &[false, false, true, true]));
        assert_eq!(conv(ints(S32, &[2], &[-1, 256]), U8), uints(U8, &[2], &[255, 0]));
        assert_eq!(conv(uints(U64, &[1], &[u64::MAX]), S32), ints(S32, &[1], &[-1]));
        assert_eq!(conv(uints(U32, &[1], &[0xFFFF_FFFF]), S64), ints(S64, &[1], &[0xFFFF_FFFF]));
        assert_eq!(conv(ints(S8, &[2], &[0, -3]), Pred), preds(&[2], &[false, true]));
    }

    #[test]
    fn bitcast_convert_same_and_changing_widths() {
        let bc = |x: Literal, ty| run_op_array(Op::BitcastConvert, ty, &[x.into()]);
        assert_eq!(bc(f32s(&[1], &[1.0]), arr(U32, &[1])), uints(U32, &[1], &[0x3F80_0000]));
        assert_eq!(bc(ints(S32, &[1], &[-1]), arr(U32, &[1])), uints(U32, &[1], &[0xFFFF_FFFF]));
        assert_eq!(bc(uints(U16, &[1], &[0xC000]), arr(BF16, &[1])).to_f64_vec(), vec![-2.0]);
        // Splitting: least significant part first.
        assert_eq!(bc(f32s(&[], &[1.0]), arr(U8, &[4])), uints(U8, &[4], &[0, 0, 0x80, 0x3F]));
        assert_eq!(bc(uints(U16, &[1], &[0xFF80]), arr(S8, &[1, 2])), ints(S8, &[1, 2], &[-128, -1]));
        // Joining.
        assert_eq!(bc(uints(U8, &[2], &[0x00, 0x3C]), arr(F16, &[])).to_f64_vec(), vec![1.0]);
        let bits = preds(&[8], &[true, false, false, false, false, false, false, true]);
        assert_eq!(bc(bits, arr(U8, &[])), uints(U8, &[], &[0x81]));
        assert_eq!(bc(ints(S64, &[], &[0x0123_4567_89AB_CDEF]), arr(Pred, &[64])).data, {
            let v: Vec<bool> = (0..64).map(|k| (0x0123_4567_89AB_CDEFu64 >> k) & 1 == 1).collect();
            crate::ir::Data::Pred(v)
        });
        assert!(run_op(Op::BitcastConvert, arr(U8, &[3]), &[f32s(&[], &[1.0]).into()]).is_err());
        assert!(run_op(Op::BitcastConvert, arr(F32, &[2]), &[lit(F64, &[2], &[1.0, 2.0]).into()]).is_err());
    }

    #[test]
    fn reduce_precision_matches_xla() {
        let rp = |x: Literal, e: u32, m: u32| {
            let ty = arr(x.elem(), &x.shape.dims);
            run_op_array(Op::ReducePrecision { exponent_bits: e, mantissa_bits: m }, ty, &[x.into()]).to_f64_vec()
        };
        let x = lit(F64, &[6], &[INF, NAN, 5e-324, 0.0, 65505.0, 65520.0]);
        assert_bits_eq(&rp(x, 5, 10), &[INF, NAN, 0.0, 0.0, 65504.0, INF]);
        assert_bits_eq(&rp(lit(F64, &[1], &[NAN]), 5, 0), &[INF]);
        // To bf16's format: ties to even.
        assert_eq!(rp(f32s(&[2], &[1.0 + 1.0 / 256.0, 1.0 + 3.0 / 256.0]), 8, 7), vec![1.0, 1.015625]);
        // Below f16's smallest normal (2^-14) flushes to a signed zero.
        assert_bits_eq(&rp(f32s(&[3], &[1e-5, -1e-5, 1e-4]), 5, 10), &[0.0, -0.0, 0.000_100_016_593_933_105_47]);
        assert!(run_op(
            Op::ReducePrecision { exponent_bits: 5, mantissa_bits: 2 },
            arr(S32, &[1]),
            &[ints(S32, &[1], &[1]).into()]
        )
        .is_err());
    }

    #[test]
    fn wrong_operands_are_errors() {
        let tuple = Value::Tuple(vec![]);
        assert!(run_op(Op::Unary(UnaryOp::Neg), arr(F32, &[]), &[tuple]).is_err());
        assert!(run_op(Op::Binary(BinaryOp::Add), arr(F32, &[1]), &[f32s(&[1], &[1.0]).into()]).is_err());
        assert!(run_op(Op::Convert, arr(F32, &[2]), &[f32s(&[1], &[1.0]).into()]).is_err());
    }
}
