//! Array values: constants in the IR and the values the reference interpreter computes.
//!
//! Elements are stored in logical row-major order, widened to one of four carriers:
//! `bool`, `i64` (signed ints), `u64` (unsigned ints) and `f64` (all floats). Every value
//! in a carrier is *normalized* to its element type: integers are wrapped to their width
//! and floats are rounded to their precision (`round_float`). Because f64 holds every
//! f16/bf16/f32 value exactly, and +,-,*,/,sqrt computed in f64 then rounded once equal
//! the correctly rounded narrow result, the interpreter can compute in the carrier and
//! normalize afterwards.

use super::types::{ElementType, Shape};
use half::{bf16, f16};
use serde::{Deserialize, Serialize};

/// Element storage, one carrier per kind of element type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Data {
    Pred(Vec<bool>),
    S(Vec<i64>),
    U(Vec<u64>),
    F(Vec<f64>),
}

impl Data {
    pub fn len(&self) -> usize {
        match self {
            Data::Pred(v) => v.len(),
            Data::S(v) => v.len(),
            Data::U(v) => v.len(),
            Data::F(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// An empty carrier of the right kind for `elem`.
    pub fn empty_for(elem: ElementType) -> Data {
        Data::with_capacity(elem, 0)
    }
    pub fn with_capacity(elem: ElementType, n: usize) -> Data {
        if elem.is_pred() {
            Data::Pred(Vec::with_capacity(n))
        } else if elem.is_signed_int() {
            Data::S(Vec::with_capacity(n))
        } else if elem.is_unsigned_int() {
            Data::U(Vec::with_capacity(n))
        } else {
            Data::F(Vec::with_capacity(n))
        }
    }
    /// Appends element `i` of `other` (same carrier kind) to `self`.
    pub fn push_from(&mut self, other: &Data, i: usize) {
        match (self, other) {
            (Data::Pred(a), Data::Pred(b)) => a.push(b[i]),
            (Data::S(a), Data::S(b)) => a.push(b[i]),
            (Data::U(a), Data::U(b)) => a.push(b[i]),
            (Data::F(a), Data::F(b)) => a.push(b[i]),
            _ => panic!("push_from between different carriers (a bug in the caller)"),
        }
    }
    /// Gathers the elements at `indices`, in that order.
    pub fn gather(&self, indices: impl IntoIterator<Item = usize>) -> Data {
        match self {
            Data::Pred(v) => Data::Pred(indices.into_iter().map(|i| v[i]).collect()),
            Data::S(v) => Data::S(indices.into_iter().map(|i| v[i]).collect()),
            Data::U(v) => Data::U(indices.into_iter().map(|i| v[i]).collect()),
            Data::F(v) => Data::F(indices.into_iter().map(|i| v[i]).collect()),
        }
    }
}

/// A scalar element, in its carrier.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Scalar {
    Pred(bool),
    S(i64),
    U(u64),
    F(f64),
}

impl Scalar {
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Pred(b) => b as u8 as f64,
            Scalar::S(v) => v as f64,
            Scalar::U(v) => v as f64,
            Scalar::F(v) => v,
        }
    }
    /// Integer view (floats truncate toward zero, saturating).
    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Pred(b) => b as i64,
            Scalar::S(v) => v,
            Scalar::U(v) => v as i64,
            Scalar::F(v) => v as i64,
        }
    }
}

/// An array value: a shape and its elements in row-major order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Literal {
    pub shape: Shape,
    pub data: Data,
}

/// Rounds an f64 to the precision of a float element type (round to nearest even),
/// returned widened again. Non-float types are returned unchanged.
pub fn round_float(elem: ElementType, v: f64) -> f64 {
    match elem {
        ElementType::F32 => v as f32 as f64,
        ElementType::F16 => to_f16(v).to_f64(),
        ElementType::BF16 => to_bf16(v).to_f64(),
        _ => v,
    }
}

/// `v` rounded once to the nearest f16 (ties to even). `half`'s own f64 conversions
/// round either the upper half of the f64's bits alone (a tie where the lower half
/// says "above") or through f32 (rounding twice); rounding through f32 *to odd* first
/// keeps every bit that decides, since f32 has more than two bits past f16's.
pub fn to_f16(v: f64) -> f16 {
    f16::from_f32(f32_round_to_odd(v))
}

/// `v` rounded once to the nearest bf16 (ties to even), as [`to_f16`].
pub fn to_bf16(v: f64) -> bf16 {
    bf16::from_f32(f32_round_to_odd(v))
}

/// `v` as the nearest f32 toward zero, its last bit set when that is inexact (round to
/// odd): rounding the result again to a format at least two bits narrower rounds `v`
/// itself. Infinities and NaN as they are; past the f32 range, the largest f32 (odd).
fn f32_round_to_odd(v: f64) -> f32 {
    if !v.is_finite() {
        return v as f32;
    }
    let mut f = v as f32;
    if f64::from(f).abs() > v.abs() {
        // One step toward zero: the magnitude's bits less one (an infinity becomes the
        // largest finite value).
        f = f32::from_bits(f.to_bits() - 1);
    }
    if f64::from(f) != v {
        f = f32::from_bits(f.to_bits() | 1);
    }
    f
}

/// Wraps a signed value to the width of `elem` (two's complement), sign-extended.
pub fn wrap_signed(elem: ElementType, v: i64) -> i64 {
    match elem {
        ElementType::S8 => v as i8 as i64,
        ElementType::S16 => v as i16 as i64,
        ElementType::S32 => v as i32 as i64,
        _ => v,
    }
}

/// Wraps an unsigned value to the width of `elem`.
pub fn wrap_unsigned(elem: ElementType, v: u64) -> u64 {
    match elem {
        ElementType::U8 => v as u8 as u64,
        ElementType::U16 => v as u16 as u64,
        ElementType::U32 => v as u32 as u64,
        _ => v,
    }
}

impl Literal {
    /// Builds a literal; panics if the element count or carrier does not match the shape
    /// (constructing a malformed literal is a bug in the caller, never bad user input).
    pub fn new(shape: Shape, data: Data) -> Literal {
        assert_eq!(shape.num_elements(), data.len(), "literal element count mismatch for {shape}");
        assert!(
            std::mem::discriminant(&Data::empty_for(shape.elem)) == std::mem::discriminant(&data),
            "literal carrier does not match element type {}",
            shape.elem
        );
        Literal { shape, data }
    }

    /// All elements zero (false for pred).
    pub fn zeros(shape: Shape) -> Literal {
        Literal::splat(shape, Scalar::F(0.0))
    }

    /// Every element equal to `value`, converted to the element type.
    pub fn splat(shape: Shape, value: Scalar) -> Literal {
        let n = shape.num_elements();
        let one = Literal::scalar_from(shape.elem, value);
        let data = match one.data {
            Data::Pred(v) => Data::Pred(vec![v[0]; n]),
            Data::S(v) => Data::S(vec![v[0]; n]),
            Data::U(v) => Data::U(vec![v[0]; n]),
            Data::F(v) => Data::F(vec![v[0]; n]),
        };
        Literal { shape, data }
    }

    /// A scalar of `elem` holding `value` converted as `convert` would.
    pub fn scalar_from(elem: ElementType, value: Scalar) -> Literal {
        let data = match value {
            Scalar::Pred(b) => Literal::from_f64s_data(elem, &[b as u8 as f64]),
            Scalar::S(v) => Literal::from_i64s_data(elem, &[v]),
            Scalar::U(v) => {
                if elem.is_unsigned_int() {
                    Data::U(vec![wrap_unsigned(elem, v)])
                } else if elem.is_float() {
                    Data::F(vec![round_float(elem, v as f64)])
                } else {
                    Literal::from_i64s_data(elem, &[v as i64])
                }
            }
            Scalar::F(v) => Literal::from_f64s_data(elem, &[v]),
        };
        Literal { shape: Shape::scalar(elem), data }
    }

    pub fn scalar_f64(elem: ElementType, v: f64) -> Literal {
        Literal::scalar_from(elem, Scalar::F(v))
    }
    pub fn scalar_i64(elem: ElementType, v: i64) -> Literal {
        Literal::scalar_from(elem, Scalar::S(v))
    }
    pub fn scalar_pred(v: bool) -> Literal {
        Literal { shape: Shape::scalar(ElementType::Pred), data: Data::Pred(vec![v]) }
    }

    /// Builds from f64 values, converting each to the element type (floats round,
    /// integers truncate toward zero and saturate, pred is `v != 0`).
    pub fn from_f64s(shape: Shape, values: &[f64]) -> Literal {
        let data = Literal::from_f64s_data(shape.elem, values);
        Literal::new(shape, data)
    }

    /// Builds from i64 values, wrapping or converting to the element type.
    pub fn from_i64s(shape: Shape, values: &[i64]) -> Literal {
        let data = Literal::from_i64s_data(shape.elem, values);
        Literal::new(shape, data)
    }

    fn from_f64s_data(elem: ElementType, values: &[f64]) -> Data {
        if elem.is_pred() {
            Data::Pred(values.iter().map(|&v| v != 0.0).collect())
        } else if elem.is_signed_int() {
            Data::S(values.iter().map(|&v| float_to_signed(elem, v)).collect())
        } else if elem.is_unsigned_int() {
            Data::U(values.iter().map(|&v| float_to_unsigned(elem, v)).collect())
        } else {
            Data::F(values.iter().map(|&v| round_float(elem, v)).collect())
        }
    }

    fn from_i64s_data(elem: ElementType, values: &[i64]) -> Data {
        if elem.is_pred() {
            Data::Pred(values.iter().map(|&v| v != 0).collect())
        } else if elem.is_signed_int() {
            Data::S(values.iter().map(|&v| wrap_signed(elem, v)).collect())
        } else if elem.is_unsigned_int() {
            Data::U(values.iter().map(|&v| wrap_unsigned(elem, v as u64)).collect())
        } else {
            Data::F(values.iter().map(|&v| round_float(elem, v as f64)).collect())
        }
    }

    pub fn elem(&self) -> ElementType {
        self.shape.elem
    }
    pub fn num_elements(&self) -> usize {
        self.data.len()
    }

    /// Element `i` (row-major index).
    pub fn get(&self, i: usize) -> Scalar {
        match &self.data {
            Data::Pred(v) => Scalar::Pred(v[i]),
            Data::S(v) => Scalar::S(v[i]),
            Data::U(v) => Scalar::U(v[i]),
            Data::F(v) => Scalar::F(v[i]),
        }
    }

    /// All elements as f64 (for summaries and tolerant comparisons).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        (0..self.num_elements()).map(|i| self.get(i).as_f64()).collect()
    }

    /// Row-major index of a multi-dimensional index.
    pub fn linear_index(&self, index: &[i64]) -> usize {
        let strides = self.shape.strides();
        index.iter().zip(&strides).map(|(&i, &s)| i as usize * s).sum()
    }

    /// The same elements with new dimensions (same count).
    pub fn reshaped(&self, dims: Vec<i64>) -> Literal {
        let shape = Shape::new(self.shape.elem, dims);
        assert_eq!(shape.num_elements(), self.num_elements());
        Literal { shape, data: self.data.clone() }
    }

    /// Raw little-endian bytes in the element type's native encoding
    /// (pred as 0/1 bytes, f16/bf16 as their 16-bit patterns).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let elem = self.shape.elem;
        let mut out = Vec::with_capacity(self.num_elements() * elem.byte_size());
        match &self.data {
            Data::Pred(v) => out.extend(v.iter().map(|&b| b as u8)),
            Data::S(v) => {
                let w = elem.byte_size();
                for x in v {
                    out.extend_from_slice(&x.to_le_bytes()[..w]);
                }
            }
            Data::U(v) => {
                let w = elem.byte_size();
                for x in v {
                    out.extend_from_slice(&x.to_le_bytes()[..w]);
                }
            }
            Data::F(v) => {
                for &x in v {
                    match elem {
                        ElementType::F16 => out.extend_from_slice(&to_f16(x).to_le_bytes()),
                        ElementType::BF16 => out.extend_from_slice(&to_bf16(x).to_le_bytes()),
                        ElementType::F32 => out.extend_from_slice(&(x as f32).to_le_bytes()),
                        _ => out.extend_from_slice(&x.to_le_bytes()),
                    }
                }
            }
        }
        out
    }

    /// Decodes raw little-endian bytes (the inverse of `to_le_bytes`). Returns `None`
    /// when the byte count does not match the shape.
    pub fn from_le_bytes(shape: Shape, bytes: &[u8]) -> Option<Literal> {
        let elem = shape.elem;
        let w = elem.byte_size();
        if bytes.len() != shape.num_elements() * w {
            return None;
        }
        let chunks = bytes.chunks_exact(w);
        let data = if elem.is_pred() {
            Data::Pred(bytes.iter().map(|&b| b != 0).collect())
        } else if elem.is_signed_int() {
            Data::S(
                chunks
                    .map(|c| {
                        let mut buf = [0u8; 8];
                        buf[..w].copy_from_slice(c);
                        wrap_signed(elem, i64::from_le_bytes(buf))
                    })
                    .collect(),
            )
        } else if elem.is_unsigned_int() {
            Data::U(
                chunks
                    .map(|c| {
                        let mut buf = [0u8; 8];
                        buf[..w].copy_from_slice(c);
                        u64::from_le_bytes(buf)
                    })
                    .collect(),
            )
        } else {
            Data::F(
                chunks
                    .map(|c| match elem {
                        ElementType::F16 => f16::from_le_bytes([c[0], c[1]]).to_f64(),
                        ElementType::BF16 => bf16::from_le_bytes([c[0], c[1]]).to_f64(),
                        ElementType::F32 => f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64,
                        _ => f64::from_le_bytes(c.try_into().unwrap()),
                    })
                    .collect(),
            )
        };
        Some(Literal { shape, data })
    }

    /// The bit pattern of element `i` as an unsigned integer of the element's width.
    pub fn bits(&self, i: usize) -> u64 {
        let elem = self.shape.elem;
        match self.get(i) {
            Scalar::Pred(b) => b as u64,
            Scalar::S(v) => (v as u64) & width_mask(elem),
            Scalar::U(v) => v,
            Scalar::F(v) => float_bits(elem, v),
        }
    }
}

/// All-ones mask of the element's bit width.
pub fn width_mask(elem: ElementType) -> u64 {
    let w = elem.bit_width();
    if w >= 64 {
        u64::MAX
    } else {
        (1u64 << w) - 1
    }
}

/// The bit pattern of a float value of type `elem`.
pub fn float_bits(elem: ElementType, v: f64) -> u64 {
    match elem {
        ElementType::F16 => to_f16(v).to_bits() as u64,
        ElementType::BF16 => to_bf16(v).to_bits() as u64,
        ElementType::F32 => (v as f32).to_bits() as u64,
        _ => v.to_bits(),
    }
}

/// The float value of type `elem` with bit pattern `bits`, widened to f64.
pub fn float_from_bits(elem: ElementType, bits: u64) -> f64 {
    match elem {
        ElementType::F16 => f16::from_bits(bits as u16).to_f64(),
        ElementType::BF16 => bf16::from_bits(bits as u16).to_f64(),
        ElementType::F32 => f32::from_bits(bits as u32) as f64,
        _ => f64::from_bits(bits),
    }
}

/// Float to signed integer as `convert` does: truncate toward zero, saturate, NaN → 0.
pub fn float_to_signed(elem: ElementType, v: f64) -> i64 {
    let (lo, hi) = match elem {
        ElementType::S8 => (i8::MIN as i64, i8::MAX as i64),
        ElementType::S16 => (i16::MIN as i64, i16::MAX as i64),
        ElementType::S32 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    };
    (v as i64).clamp(lo, hi)
}

/// Float to unsigned integer as `convert` does: truncate toward zero, saturate, NaN → 0.
pub fn float_to_unsigned(elem: ElementType, v: f64) -> u64 {
    (v as u64).min(width_mask(elem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_floats_round_once_to_nearest_even() {
        // An f32 just above a bf16 tie only in its last bits (0x0200_8006: the rounding
        // bit set, the rest in the low three bits): up, where rounding the f64's upper
        // half alone says "tie, to even": down.
        let x = f64::from(f32::from_bits(0x0200_8006));
        assert_eq!(to_bf16(x).to_bits(), 0x0201);
        // An exact tie goes to even, either way.
        assert_eq!(to_bf16(f64::from(f32::from_bits(0x3f80_8000))).to_bits(), 0x3f80);
        assert_eq!(to_bf16(f64::from(f32::from_bits(0x3f81_8000))).to_bits(), 0x3f82);
        // A true f64 just above an f16 tie by less than an f32 ulp: rounding through f32
        // makes it a tie (to even: down); once, it goes up.
        let tie = 1.0 + 2f64.powi(-11);
        assert_eq!(to_f16(tie).to_bits(), 0x3c00);
        assert_eq!(to_f16(tie + 2f64.powi(-40)).to_bits(), 0x3c01);
        assert_eq!(to_bf16(1.0 + 2f64.powi(-8) + 2f64.powi(-40)).to_bits(), 0x3f81);
        // Signs, zeros, infinities, NaN, the f16 overflow and subnormal edges.
        assert_eq!(to_f16(-0.0).to_bits(), 0x8000);
        assert_eq!(to_f16(65519.0).to_bits(), 0x7bff);
        assert_eq!(to_f16(65520.0).to_bits(), 0x7c00);
        assert_eq!(to_f16(-1e300).to_bits(), 0xfc00);
        assert_eq!(to_bf16(1e300).to_bits(), 0x7f80);
        assert_eq!(to_f16(2f64.powi(-25)).to_bits(), 0x0000);
        assert_eq!(to_f16(2f64.powi(-25) + 2f64.powi(-60)).to_bits(), 0x0001);
        assert!(to_f16(f64::NAN).is_nan() && to_bf16(f64::NAN).is_nan());
        assert_eq!(to_bf16(f64::NEG_INFINITY).to_bits(), 0xff80);
    }

    #[test]
    fn normalizes_on_construction() {
        let l = Literal::from_f64s(Shape::new(ElementType::BF16, vec![2]), &[1.0 / 3.0, 300.5]);
        assert_eq!(l.to_f64_vec(), vec![0.333984375, 300.0]);
        let l = Literal::from_i64s(Shape::new(ElementType::S8, vec![2]), &[200, -129]);
        assert_eq!(l.data, Data::S(vec![-56, 127]));
        let l = Literal::from_f64s(Shape::new(ElementType::U8, vec![3]), &[-3.5, 300.0, 7.9]);
        assert_eq!(l.data, Data::U(vec![0, 255, 7]));
    }

    #[test]
    fn bytes_round_trip() {
        for elem in ElementType::ALL {
            let l = Literal::from_f64s(Shape::new(elem, vec![3]), &[1.0, 0.0, 2.5]);
            let back = Literal::from_le_bytes(l.shape.clone(), &l.to_le_bytes()).unwrap();
            assert_eq!(back, l, "{elem}");
        }
        let l = Literal::from_i64s(Shape::new(ElementType::S16, vec![1]), &[-2]);
        assert_eq!(l.to_le_bytes(), vec![0xfe, 0xff]);
        assert_eq!(l.bits(0), 0xfffe);
    }
}
