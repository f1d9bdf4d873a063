//! 64-bit integers (s64, u64) in WGSL, which has no 64-bit type: a value is a
//! `vec2<u32>`, `x` the low word and `y` the high one, and a buffer element is two
//! little-endian words, low first (the bytes of the element itself). s64 and u64 share the
//! representation; what differs (compares, max and min, division, the right shift that
//! keeps the sign, converts) is spelled per type. Two's complement makes addition,
//! subtraction, multiplication (the low 64 bits of the product) and the bit operations
//! the same for both.
//!
//! The operations that one WGSL expression does not cover are helper functions in the
//! shader's header ([`HELPERS`]), included only when the shader calls them
//! ([`helpers_for`]). Every one follows the interpreter's semantics
//! (`interp/elementwise.rs`): arithmetic wraps; shifts count unsigned, a count of 64 or
//! more gives 0 (the sign, arithmetic right); `x / 0` is all ones and `x % 0` is `x`,
//! `MIN / -1` wraps to `MIN`; floats convert to integers truncated toward zero,
//! saturating, NaN to 0; integers convert to f32 rounded once to nearest even (to f16 and
//! bf16 through an f32 rounded to odd, so that their own rounding is the only one). Only
//! integer operations are used, so a driver's float arithmetic cannot change a result.
//! Integer `power` is refused, as on 32 bits.

use crate::ir::{BinaryOp, CmpDir, ElementType, Scalar, UnaryOp};

/// The WGSL type of a 64-bit value.
pub const TYPE: &str = "vec2<u32>";

/// Whether `t` is carried as a pair of words.
pub fn wide(t: ElementType) -> bool {
    matches!(t, ElementType::S64 | ElementType::U64)
}

/// The constant with the 64 bits `bits`.
pub fn literal(bits: u64) -> String {
    format!("vec2<u32>({:#x}u, {:#x}u)", bits as u32, (bits >> 32) as u32)
}

/// A constant of `elem` (s64 or u64), as the other types' constants take their scalars.
pub fn constant(s: Scalar, elem: ElementType) -> String {
    let bits = match (s, elem) {
        (Scalar::S(v), _) => v as u64,
        (Scalar::U(v), _) => v,
        (Scalar::Pred(b), _) => b as u64,
        (other, ElementType::S64) => other.as_f64() as i64 as u64,
        (other, _) => other.as_f64() as u64,
    };
    literal(bits)
}

/// `a` (a 64-bit value) as a data index (`i32`): saturating to 32 bits, as the 32-bit
/// types saturate (their clamp into the buffer undoes it).
pub fn data_index(elem: ElementType, a: &str) -> String {
    match elem {
        ElementType::S64 => format!("s64_index({a})"),
        _ => format!("u64_index({a})"),
    }
}

/// An index (`i32`) as a 64-bit value: sign-extended (an index is never negative where
/// it becomes a value, and an unsigned result wraps as the interpreter's does).
pub fn from_index(v: &str) -> String {
    format!("i64_from_i32({v})")
}

pub fn unary(op: UnaryOp, elem: ElementType, a: &str) -> Result<String, String> {
    use UnaryOp::*;
    let signed = elem == ElementType::S64;
    Ok(match op {
        Neg => format!("i64_neg({a})"),
        Abs if signed => format!("s64_abs({a})"),
        Abs => a.to_string(),
        Not => format!("(~{a})"),
        Sign if signed => format!("s64_sign({a})"),
        Sign => format!("vec2<u32>(select(0u, 1u, any({a} != vec2<u32>(0u))), 0u)"),
        PopCnt => format!("i64_popcnt({a})"),
        Clz => format!("i64_clz({a})"),
        other => return Err(format!("{} on {elem} is not emitted for webgpu yet", other.hlo_name())),
    })
}

pub fn binary(op: BinaryOp, elem: ElementType, a: &str, b: &str) -> Result<String, String> {
    use BinaryOp::*;
    let ty = if elem == ElementType::S64 { "s64" } else { "u64" };
    Ok(match op {
        Add => format!("i64_add({a}, {b})"),
        Sub => format!("i64_sub({a}, {b})"),
        Mul => format!("i64_mul({a}, {b})"),
        Div => format!("{ty}_div({a}, {b})"),
        Rem => format!("{ty}_rem({a}, {b})"),
        Max => format!("{ty}_max({a}, {b})"),
        Min => format!("{ty}_min({a}, {b})"),
        And => format!("({a} & {b})"),
        Or => format!("({a} | {b})"),
        Xor => format!("({a} ^ {b})"),
        ShiftLeft => format!("i64_shl({a}, {b})"),
        ShiftRightLogical => format!("i64_shr_logical({a}, {b})"),
        // The top bit is the sign for u64 too.
        ShiftRightArithmetic => format!("i64_shr_arithmetic({a}, {b})"),
        other => return Err(format!("{} on {elem} is not emitted for webgpu yet", other.hlo_name())),
    })
}

pub fn compare(dir: CmpDir, elem: ElementType, a: &str, b: &str) -> String {
    let lt = if elem == ElementType::S64 { "s64_lt" } else { "u64_lt" };
    match dir {
        CmpDir::Eq => format!("all({a} == {b})"),
        CmpDir::Ne => format!("any({a} != {b})"),
        CmpDir::Lt => format!("{lt}({a}, {b})"),
        CmpDir::Gt => format!("{lt}({b}, {a})"),
        CmpDir::Le => format!("(!{lt}({b}, {a}))"),
        CmpDir::Ge => format!("(!{lt}({a}, {b}))"),
    }
}

/// A convert from `from` (a 32-bit carrier type or pred) to `to` (s64 or u64): integers
/// extended by their signedness, floats truncated and saturated (NaN to 0).
pub fn convert_to_wide(from: ElementType, to: ElementType, v: &str) -> Result<String, String> {
    use ElementType::*;
    Ok(match from {
        S64 | U64 => v.to_string(),
        Pred => format!("vec2<u32>(select(0u, 1u, {v}), 0u)"),
        S32 => format!("i64_from_i32({v})"),
        U32 => format!("vec2<u32>({v}, 0u)"),
        F32 if to == S64 => format!("f32_to_s64({v})"),
        F32 => format!("f32_to_u64({v})"),
        other => return Err(format!("a convert from {other} to {to}")),
    })
}

/// A convert from `from` (s64 or u64) to the 32-bit carrier type or pred `to`: integers
/// wrap (the low word), f32 rounds to nearest even; with `odd`, f32 rounds to odd
/// instead, for a rounding to f16 or bf16 next.
pub fn convert_from_wide(from: ElementType, to: ElementType, v: &str, odd: bool) -> Result<String, String> {
    use ElementType::*;
    Ok(match to {
        S64 | U64 => v.to_string(),
        Pred => format!("any({v} != vec2<u32>(0u))"),
        S32 => format!("bitcast<i32>(({v}).x)"),
        U32 => format!("({v}).x"),
        F32 if from == S64 => format!("s64_to_f32({v}, {odd})"),
        F32 => format!("bitcast<f32>(u64_f32_bits({v}, {odd}))"),
        other => return Err(format!("a convert from {from} to {other}")),
    })
}

/// The helpers the shader text `body` calls, with those they call, in [`HELPERS`]'
/// order (WGSL declarations at module scope may come in any order).
pub fn helpers_for(body: &str) -> String {
    let called = |text: &str, name: &str| {
        text.match_indices(name).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
            !before.is_some_and(ident) && text[at + name.len()..].starts_with('(')
        })
    };
    let mut used = vec![false; HELPERS.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for (k, &(name, _)) in HELPERS.iter().enumerate() {
            if used[k] {
                continue;
            }
            let caller = called(body, name)
                || HELPERS.iter().zip(&used).any(|(&(other, text), &u)| u && other != name && called(text, name));
            if caller {
                used[k] = true;
                changed = true;
            }
        }
    }
    HELPERS.iter().zip(&used).filter(|(_, &u)| u).map(|(&(_, text), _)| text).collect()
}

/// Each helper's name and text.
pub const HELPERS: &[(&str, &str)] = &[
    (
        "i64_add",
        "fn i64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
",
    ),
    (
        "i64_sub",
        "fn i64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}
",
    ),
    ("i64_neg", "fn i64_neg(a: vec2<u32>) -> vec2<u32> { return i64_sub(vec2<u32>(0u), a); }\n"),
    (
        "u32_mul_wide",
        "// The 64-bit product of two words, from four 16-bit partial products.
fn u32_mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>((mid << 16u) | (p00 & 0xffffu), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
",
    ),
    (
        "i64_mul",
        "// The low 64 bits of the product (the same for s64 and u64).
fn i64_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let p = u32_mul_wide(a.x, b.x);
  return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}
",
    ),
    (
        "s64_lt",
        "fn s64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
  let ah = bitcast<i32>(a.y);
  let bh = bitcast<i32>(b.y);
  return ah < bh || (ah == bh && a.x < b.x);
}
",
    ),
    ("u64_lt", "fn u64_lt(a: vec2<u32>, b: vec2<u32>) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }\n"),
    ("s64_max", "fn s64_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return select(a, b, s64_lt(a, b)); }\n"),
    ("s64_min", "fn s64_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return select(a, b, s64_lt(b, a)); }\n"),
    ("u64_max", "fn u64_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return select(a, b, u64_lt(a, b)); }\n"),
    ("u64_min", "fn u64_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return select(a, b, u64_lt(b, a)); }\n"),
    ("s64_abs", "fn s64_abs(a: vec2<u32>) -> vec2<u32> { return select(a, i64_neg(a), bitcast<i32>(a.y) < 0); }\n"),
    (
        "s64_sign",
        "fn s64_sign(a: vec2<u32>) -> vec2<u32> {
  if (bitcast<i32>(a.y) < 0) { return vec2<u32>(0xffffffffu); }
  return vec2<u32>(select(0u, 1u, any(a != vec2<u32>(0u))), 0u);
}
",
    ),
    (
        "i64_popcnt",
        "fn i64_popcnt(a: vec2<u32>) -> vec2<u32> { return vec2<u32>(countOneBits(a.x) + countOneBits(a.y), 0u); }\n",
    ),
    (
        "i64_clz",
        "fn i64_clz(a: vec2<u32>) -> vec2<u32> {
  return vec2<u32>(select(countLeadingZeros(a.y), 32u + countLeadingZeros(a.x), a.y == 0u), 0u);
}
",
    ),
    (
        "i64_shl",
        "// HLO's shifts: the count unsigned, 64 or more shifts every bit out. WGSL would take
// a count modulo 32: every shift below is by 0 to 31.
fn i64_shl(a: vec2<u32>, n: vec2<u32>) -> vec2<u32> {
  if (n.y != 0u || n.x >= 64u) { return vec2<u32>(0u); }
  let s = n.x;
  if (s == 0u) { return a; }
  if (s >= 32u) { return vec2<u32>(0u, a.x << (s - 32u)); }
  return vec2<u32>(a.x << s, (a.y << s) | (a.x >> (32u - s)));
}
",
    ),
    (
        "i64_shr_logical",
        "fn i64_shr_logical(a: vec2<u32>, n: vec2<u32>) -> vec2<u32> {
  if (n.y != 0u || n.x >= 64u) { return vec2<u32>(0u); }
  let s = n.x;
  if (s == 0u) { return a; }
  if (s >= 32u) { return vec2<u32>(a.y >> (s - 32u), 0u); }
  return vec2<u32>((a.x >> s) | (a.y << (32u - s)), a.y >> s);
}
",
    ),
    (
        "i64_shr_arithmetic",
        "fn i64_shr_arithmetic(a: vec2<u32>, n: vec2<u32>) -> vec2<u32> {
  let high = bitcast<i32>(a.y);
  let fill = select(0u, 0xffffffffu, high < 0);
  if (n.y != 0u || n.x >= 64u) { return vec2<u32>(fill); }
  let s = n.x;
  if (s == 0u) { return a; }
  if (s >= 32u) { return vec2<u32>(bitcast<u32>(high >> (s - 32u)), fill); }
  return vec2<u32>((a.x >> s) | (a.y << (32u - s)), bitcast<u32>(high >> s));
}
",
    ),
    (
        "u64_divmod",
        "// The quotient (xy) and remainder (zw) of n / d, d not 0: one quotient bit per step,
// the remainder kept below d (before step i it is below 2^i: it never overflows).
fn u64_divmod(n: vec2<u32>, d: vec2<u32>) -> vec4<u32> {
  if (n.y == 0u && d.y == 0u) { return vec4<u32>(n.x / d.x, 0u, n.x % d.x, 0u); }
  var rest = n;
  var q = vec2<u32>(0u);
  var r = vec2<u32>(0u);
  for (var i = 0u; i < 64u; i++) {
    r = vec2<u32>((r.x << 1u) | (rest.y >> 31u), (r.y << 1u) | (r.x >> 31u));
    rest = vec2<u32>(rest.x << 1u, (rest.y << 1u) | (rest.x >> 31u));
    q = vec2<u32>(q.x << 1u, (q.y << 1u) | (q.x >> 31u));
    if (!u64_lt(r, d)) {
      r = i64_sub(r, d);
      q.x = q.x | 1u;
    }
  }
  return vec4<u32>(q, r);
}
",
    ),
    (
        "u64_div",
        "fn u64_div(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  if (all(b == vec2<u32>(0u))) { return vec2<u32>(0xffffffffu); }
  return u64_divmod(a, b).xy;
}
",
    ),
    (
        "u64_rem",
        "fn u64_rem(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  if (all(b == vec2<u32>(0u))) { return a; }
  return u64_divmod(a, b).zw;
}
",
    ),
    (
        "s64_div",
        "// On the magnitudes; MIN / -1 wraps to MIN.
fn s64_div(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  if (all(b == vec2<u32>(0u))) { return vec2<u32>(0xffffffffu); }
  let na = bitcast<i32>(a.y) < 0;
  let nb = bitcast<i32>(b.y) < 0;
  let q = u64_divmod(select(a, i64_neg(a), na), select(b, i64_neg(b), nb)).xy;
  return select(q, i64_neg(q), na != nb);
}
",
    ),
    (
        "s64_rem",
        "// The dividend's sign.
fn s64_rem(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  if (all(b == vec2<u32>(0u))) { return a; }
  let na = bitcast<i32>(a.y) < 0;
  let nb = bitcast<i32>(b.y) < 0;
  let r = u64_divmod(select(a, i64_neg(a), na), select(b, i64_neg(b), nb)).zw;
  return select(r, i64_neg(r), na);
}
",
    ),
    (
        "i64_from_i32",
        "fn i64_from_i32(v: i32) -> vec2<u32> { return vec2<u32>(bitcast<u32>(v), select(0u, 0xffffffffu, v < 0)); }\n",
    ),
    (
        "s64_index",
        "fn s64_index(a: vec2<u32>) -> i32 {
  let high = bitcast<i32>(a.y);
  if (high > 0 || (high == 0 && a.x > 0x7fffffffu)) { return 2147483647; }
  if (high < -1 || (high == -1 && a.x < 0x80000000u)) { return -2147483647 - 1; }
  return bitcast<i32>(a.x);
}
",
    ),
    (
        "u64_index",
        "fn u64_index(a: vec2<u32>) -> i32 {
  if (a.y != 0u || a.x > 0x7fffffffu) { return 2147483647; }
  return i32(a.x);
}
",
    ),
    (
        "f32_trunc_u64",
        "// The integer part of a float with bits a (sign cleared) and exponent 0 <= e < 64.
fn f32_trunc_u64(a: u32, e: u32) -> vec2<u32> {
  let m = (a & 0x7fffffu) | 0x800000u;
  if (e <= 23u) { return vec2<u32>(m >> (23u - e), 0u); }
  return i64_shl(vec2<u32>(m, 0u), vec2<u32>(e - 23u, 0u));
}
",
    ),
    (
        "f32_to_s64",
        "// Truncated toward zero, saturating; NaN is 0.
fn f32_to_s64(x: f32) -> vec2<u32> {
  let b = bitcast<u32>(x);
  let a = b & 0x7fffffffu;
  let neg = b != a;
  if (a > 0x7f800000u || a < 0x3f800000u) { return vec2<u32>(0u); }
  let e = (a >> 23u) - 127u;
  if (e >= 63u) { return select(vec2<u32>(0xffffffffu, 0x7fffffffu), vec2<u32>(0u, 0x80000000u), neg); }
  let m = f32_trunc_u64(a, e);
  return select(m, i64_neg(m), neg);
}
",
    ),
    (
        "f32_to_u64",
        "// Truncated toward zero, saturating (negatives to 0); NaN is 0.
fn f32_to_u64(x: f32) -> vec2<u32> {
  let b = bitcast<u32>(x);
  if (b >= 0x80000000u || b > 0x7f800000u || b < 0x3f800000u) { return vec2<u32>(0u); }
  let e = (b >> 23u) - 127u;
  if (e >= 64u) { return vec2<u32>(0xffffffffu); }
  return f32_trunc_u64(b, e);
}
",
    ),
    (
        "u64_f32_bits",
        "// The f32 bits of an unsigned 64-bit value: the top 24 bits from its leading one,
// rounded to nearest even by the bits below, or, with odd, to odd (the dropped bits
// leave a trace in the last bit kept, so that a later rounding to fewer bits rounds once).
fn u64_f32_bits(m: vec2<u32>, odd: bool) -> u32 {
  if (all(m == vec2<u32>(0u))) { return 0u; }
  let lz = select(countLeadingZeros(m.y), 32u + countLeadingZeros(m.x), m.y == 0u);
  let n = i64_shl(m, vec2<u32>(lz, 0u));
  let kept = n.y >> 8u;
  let half = (n.y & 0x80u) != 0u;
  let below = (n.y & 0x7fu) != 0u || n.x != 0u;
  var q = kept;
  if (odd) {
    q = q | select(0u, 1u, half || below);
  } else {
    q = q + select(0u, 1u, half && (below || (kept & 1u) != 0u));
  }
  // The leading one is bit 63 - lz; a carry out of the significand raises the exponent.
  return ((189u - lz) << 23u) + q;
}
",
    ),
    (
        "s64_to_f32",
        "fn s64_to_f32(v: vec2<u32>, odd: bool) -> f32 {
  let neg = bitcast<i32>(v.y) < 0;
  return bitcast<f32>(u64_f32_bits(select(v, i64_neg(v), neg), odd) | select(0u, 0x80000000u, neg));
}
",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_called_helpers_and_theirs_are_included() {
        let text = helpers_for("let e3: vec2<u32> = s64_div(e1, e2);");
        for name in ["s64_div", "u64_divmod", "i64_neg", "i64_sub", "u64_lt"] {
            assert!(text.contains(&format!("fn {name}(")), "{name} missing:\n{text}");
        }
        assert!(!text.contains("fn i64_mul("), "{text}");
        assert!(!text.contains("fn i64_add("), "{text}");
        // A name inside a longer one is not a call of it.
        assert_eq!(helpers_for("let x = my_i64_add(a, b); let y = i64_adder(a);"), "");
    }

    #[test]
    fn constants_are_two_words_low_first() {
        assert_eq!(literal(i64::MIN as u64), "vec2<u32>(0x0u, 0x80000000u)");
        assert_eq!(constant(Scalar::S(-2), ElementType::S64), "vec2<u32>(0xfffffffeu, 0xffffffffu)");
        assert_eq!(constant(Scalar::U(1 << 32), ElementType::U64), "vec2<u32>(0x0u, 0x1u)");
    }
}
