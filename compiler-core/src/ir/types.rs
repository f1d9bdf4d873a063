//! Element types, array shapes (with optional layouts) and value types.
//!
//! A `Shape` is XLA's array shape: element type, static dimensions and an optional
//! layout (`minor_to_major`, as XLA prints `{1,0}`). Logical equality of shapes ignores
//! the layout; `Shape::same_shape` says so explicitly.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The element types hloscope supports. Complex, quantized, sub-byte and 8/6/4-bit float
/// types are rejected by the parsers with a clear error.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ElementType {
    Pred,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
}

impl ElementType {
    pub const ALL: [ElementType; 13] = [
        ElementType::Pred,
        ElementType::S8,
        ElementType::S16,
        ElementType::S32,
        ElementType::S64,
        ElementType::U8,
        ElementType::U16,
        ElementType::U32,
        ElementType::U64,
        ElementType::F16,
        ElementType::BF16,
        ElementType::F32,
        ElementType::F64,
    ];

    /// Size of one element in bytes (pred takes a byte, as in XLA).
    pub fn byte_size(self) -> usize {
        use ElementType::*;
        match self {
            Pred | S8 | U8 => 1,
            S16 | U16 | F16 | BF16 => 2,
            S32 | U32 | F32 => 4,
            S64 | U64 | F64 => 8,
        }
    }

    /// Width in bits of the value (pred is 1).
    pub fn bit_width(self) -> u32 {
        if self == ElementType::Pred {
            1
        } else {
            self.byte_size() as u32 * 8
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, ElementType::F16 | ElementType::BF16 | ElementType::F32 | ElementType::F64)
    }
    pub fn is_signed_int(self) -> bool {
        matches!(self, ElementType::S8 | ElementType::S16 | ElementType::S32 | ElementType::S64)
    }
    pub fn is_unsigned_int(self) -> bool {
        matches!(self, ElementType::U8 | ElementType::U16 | ElementType::U32 | ElementType::U64)
    }
    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }
    pub fn is_pred(self) -> bool {
        self == ElementType::Pred
    }

    /// The XLA HLO spelling: `f32`, `s32`, `pred`, ...
    pub fn hlo_name(self) -> &'static str {
        use ElementType::*;
        match self {
            Pred => "pred",
            S8 => "s8",
            S16 => "s16",
            S32 => "s32",
            S64 => "s64",
            U8 => "u8",
            U16 => "u16",
            U32 => "u32",
            U64 => "u64",
            F16 => "f16",
            BF16 => "bf16",
            F32 => "f32",
            F64 => "f64",
        }
    }

    /// The MLIR spelling: `f32`, `i32`, `ui8`, `i1`, ...
    pub fn mlir_name(self) -> &'static str {
        use ElementType::*;
        match self {
            Pred => "i1",
            S8 => "i8",
            S16 => "i16",
            S32 => "i32",
            S64 => "i64",
            U8 => "ui8",
            U16 => "ui16",
            U32 => "ui32",
            U64 => "ui64",
            F16 => "f16",
            BF16 => "bf16",
            F32 => "f32",
            F64 => "f64",
        }
    }

    pub fn from_hlo_name(s: &str) -> Option<ElementType> {
        ElementType::ALL.into_iter().find(|e| e.hlo_name() == s)
    }
    pub fn from_mlir_name(s: &str) -> Option<ElementType> {
        ElementType::ALL.into_iter().find(|e| e.mlir_name() == s)
    }

    /// NumPy's dtype string for this type (`<f4`, `|b1`, ...); bf16 has none.
    pub fn numpy_descr(self) -> Option<&'static str> {
        use ElementType::*;
        Some(match self {
            Pred => "|b1",
            S8 => "|i1",
            S16 => "<i2",
            S32 => "<i4",
            S64 => "<i8",
            U8 => "|u1",
            U16 => "<u2",
            U32 => "<u4",
            U64 => "<u8",
            F16 => "<f2",
            BF16 => return None,
            F32 => "<f4",
            F64 => "<f8",
        })
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.hlo_name())
    }
}

/// A shape's dimensions: inline up to rank 4, so that the many shapes a compile makes
/// and copies (every instruction's type, every rewrite's) allocate nothing.
pub type Dims = smallvec::SmallVec<[i64; 4]>;

/// An array shape: element type, static dimensions, optional layout.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shape {
    pub elem: ElementType,
    pub dims: Dims,
    /// `minor_to_major` order of the dimensions; `None` means the default row-major
    /// layout (`{n-1, ..., 1, 0}`), chosen later by layout assignment.
    pub layout: Option<Vec<i64>>,
}

/// Whether `p` is a permutation of `0..rank` (a transpose's, a layout's minor-to-major
/// order).
pub fn is_permutation(p: &[i64], rank: usize) -> bool {
    let mut seen = vec![false; rank];
    p.len() == rank
        && p.iter().all(|&d| d >= 0 && (d as usize) < rank && !std::mem::replace(&mut seen[d as usize], true))
}

impl Shape {
    pub fn new(elem: ElementType, dims: impl AsRef<[i64]>) -> Shape {
        Shape { elem, dims: Dims::from_slice(dims.as_ref()), layout: None }
    }
    pub fn scalar(elem: ElementType) -> Shape {
        Shape::new(elem, Dims::new())
    }
    pub fn rank(&self) -> usize {
        self.dims.len()
    }
    /// Number of elements (1 for a scalar; negative dimensions count as 0), or `None`
    /// when it does not fit 64 bits. Sizes of untrusted shapes go through this (or
    /// [`crate::limits`], which uses it), never through a plain product of the dims.
    pub fn checked_num_elements(&self) -> Option<u64> {
        self.dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d.max(0) as u64))
    }
    /// Bytes of the array in the interpreter's encoding, or `None` past 64 bits.
    pub fn checked_byte_size(&self) -> Option<u64> {
        self.checked_num_elements()?.checked_mul(self.elem.byte_size() as u64)
    }
    /// Number of elements (1 for a scalar), for shapes already within
    /// [`crate::limits`]: past `usize` it saturates to `usize::MAX` instead of
    /// wrapping, so a size that escaped the checks fails loudly rather than as a small
    /// wrong number.
    pub fn num_elements(&self) -> usize {
        self.checked_num_elements().and_then(|n| usize::try_from(n).ok()).unwrap_or(usize::MAX)
    }
    /// Bytes of the array, saturating like [`Shape::num_elements`].
    pub fn byte_size(&self) -> usize {
        self.checked_byte_size().and_then(|n| usize::try_from(n).ok()).unwrap_or(usize::MAX)
    }
    /// Same element type and dimensions; layouts are ignored.
    pub fn same_shape(&self, other: &Shape) -> bool {
        self.elem == other.elem && self.dims == other.dims
    }
    /// Same dimensions, any element type.
    pub fn same_dims(&self, other: &Shape) -> bool {
        self.dims == other.dims
    }
    pub fn with_elem(&self, elem: ElementType) -> Shape {
        Shape { elem, dims: self.dims.clone(), layout: self.layout.clone() }
    }
    /// The layout in effect: the explicit one, or row-major.
    pub fn minor_to_major(&self) -> Vec<i64> {
        match &self.layout {
            Some(l) => l.clone(),
            None => (0..self.rank() as i64).rev().collect(),
        }
    }
    /// Row-major strides in elements (the logical layout every interpreter value uses);
    /// saturating, like [`Shape::num_elements`].
    pub fn strides(&self) -> Vec<usize> {
        let mut strides = vec![1usize; self.rank()];
        for i in (0..self.rank().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1].saturating_mul(self.dims[i + 1].max(0) as usize);
        }
        strides
    }
}

impl fmt::Display for Shape {
    /// XLA style: `f32[2,3]{1,0}` (layout only when set).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.elem)?;
        for (i, d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")?;
        if let Some(layout) = &self.layout {
            f.write_str("{")?;
            for (i, d) in layout.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{d}")?;
            }
            f.write_str("}")?;
        }
        Ok(())
    }
}

/// The type of an instruction's result: an array, a tuple of types, or a token.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Type {
    Array(Shape),
    Tuple(Vec<Type>),
    Token,
}

impl Type {
    pub fn array(elem: ElementType, dims: impl AsRef<[i64]>) -> Type {
        Type::Array(Shape::new(elem, dims))
    }
    /// The result type of an op with `n` results: the single type, or a tuple of them.
    pub fn from_results(mut types: Vec<Type>) -> Type {
        if types.len() == 1 {
            types.pop().unwrap()
        } else {
            Type::Tuple(types)
        }
    }
    pub fn as_array(&self) -> Option<&Shape> {
        match self {
            Type::Array(s) => Some(s),
            _ => None,
        }
    }
    /// Whether this is a scalar of `elem`, whatever its layout (layout assignment gives
    /// scalars an empty one, so comparing with `Shape::scalar` would say no).
    pub fn is_scalar_of(&self, elem: ElementType) -> bool {
        matches!(self, Type::Array(s) if s.rank() == 0 && s.elem == elem)
    }
    pub fn as_tuple(&self) -> Option<&[Type]> {
        match self {
            Type::Tuple(t) => Some(t),
            _ => None,
        }
    }
    /// Total bytes of all arrays in this type, or `None` past 64 bits.
    pub fn checked_byte_size(&self) -> Option<u64> {
        match self {
            Type::Array(s) => s.checked_byte_size(),
            Type::Tuple(ts) => ts.iter().try_fold(0u64, |n, t| n.checked_add(t.checked_byte_size()?)),
            Type::Token => Some(0),
        }
    }
    /// Total bytes of all arrays in this type, saturating like [`Shape::num_elements`].
    pub fn byte_size(&self) -> usize {
        self.checked_byte_size().and_then(|n| usize::try_from(n).ok()).unwrap_or(usize::MAX)
    }
    /// [`Type::leaf_shapes`] as an iterator, which allocates nothing for an array (most
    /// types).
    pub fn leaves(&self) -> impl Iterator<Item = &Shape> + '_ {
        let (one, many) = match self {
            Type::Array(s) => (Some(s), Vec::new()),
            ty => (None, ty.leaf_shapes()),
        };
        one.into_iter().chain(many)
    }

    /// The arrays of this type, tuples flattened depth-first.
    pub fn leaf_shapes(&self) -> Vec<&Shape> {
        let mut out = Vec::new();
        fn walk<'a>(t: &'a Type, out: &mut Vec<&'a Shape>) {
            match t {
                Type::Array(s) => out.push(s),
                Type::Tuple(ts) => ts.iter().for_each(|t| walk(t, out)),
                Type::Token => {}
            }
        }
        walk(self, &mut out);
        out
    }
    /// Equality ignoring layouts.
    pub fn same_type(&self, other: &Type) -> bool {
        match (self, other) {
            (Type::Array(a), Type::Array(b)) => a.same_shape(b),
            (Type::Tuple(a), Type::Tuple(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_type(y)),
            (Type::Token, Type::Token) => true,
            _ => false,
        }
    }
}

impl From<Shape> for Type {
    fn from(s: Shape) -> Type {
        Type::Array(s)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Array(s) => write!(f, "{s}"),
            Type::Tuple(ts) => {
                f.write_str("(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(")")
            }
            Type::Token => f.write_str("token[]"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_display_and_strides() {
        let mut s = Shape::new(ElementType::F32, vec![2, 3, 4]);
        assert_eq!(s.to_string(), "f32[2,3,4]");
        assert_eq!(s.strides(), vec![12, 4, 1]);
        assert_eq!(s.num_elements(), 24);
        s.layout = Some(vec![0, 1, 2]);
        assert_eq!(s.to_string(), "f32[2,3,4]{0,1,2}");
        assert!(s.same_shape(&Shape::new(ElementType::F32, vec![2, 3, 4])));
    }

    #[test]
    fn sizes_past_64_bits_are_none_or_saturate() {
        let huge = Shape::new(ElementType::F32, vec![65536; 4]);
        assert_eq!(huge.checked_num_elements(), None);
        assert_eq!(huge.num_elements(), usize::MAX);
        assert_eq!(huge.byte_size(), usize::MAX);
        // 2^62 elements fit, their f32 bytes (2^64) do not.
        let big = Shape::new(ElementType::F32, vec![1 << 31, 1 << 31]);
        assert_eq!(big.checked_num_elements(), Some(1 << 62));
        assert_eq!(big.checked_byte_size(), None);
        let t = Type::Tuple(vec![
            Type::array(ElementType::F64, vec![1 << 60]),
            Type::array(ElementType::F64, vec![1 << 60]),
        ]);
        assert_eq!(t.checked_byte_size(), None);
        assert_eq!(Type::array(ElementType::S8, vec![3, 0, 5]).checked_byte_size(), Some(0));
        assert_eq!(Shape::new(ElementType::F32, vec![2, 1 << 40, 1 << 40]).strides(), vec![usize::MAX, 1 << 40, 1]);
    }

    #[test]
    fn element_type_names_round_trip() {
        for e in ElementType::ALL {
            assert_eq!(ElementType::from_hlo_name(e.hlo_name()), Some(e));
            assert_eq!(ElementType::from_mlir_name(e.mlir_name()), Some(e));
        }
    }
}
