//! A small, strict reader and writer for NumPy `.npy` files.
//!
//! Written here rather than taken from a crate because we need exactly NumPy's
//! little-endian dtypes including `<f2` (half), bit-exact round trips, and error
//! messages that say what was wrong with the file. Supported: format versions 1.0, 2.0
//! and 3.0; dtypes `|b1`, `|i1 <i2 <i4 <i8`, `|u1 <u2 <u4 <u8`, `<f2 <f4 <f8`;
//! C order only. Fortran order, big-endian data and other dtypes are rejected with a
//! reason. Files are written as version 1.0 with the header padded to 64 bytes, as
//! NumPy itself does.
//!
//! Bytes in, bytes out: reading files is the caller's (the CLI reads them from disk, the
//! server from base64 in a request, the browser's worker from the page), so this stays
//! inside the core's no-IO invariant. [`params`] matches arrays to a module's entry
//! parameters.

pub mod params;

use crate::ir::{ElementType, Literal, Shape};
use std::fmt;

const MAGIC: &[u8] = b"\x93NUMPY";

/// An `.npy` array: its dtype (as an element type), its dimensions, its raw bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    pub elem: ElementType,
    pub dims: Vec<i64>,
    /// Row-major, little-endian element bytes.
    pub data: Vec<u8>,
}

/// Why a byte string is not an `.npy` file we can read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyError(pub String);

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NpyError {}

fn err<T>(msg: impl Into<String>) -> Result<T, NpyError> {
    Err(NpyError(msg.into()))
}

/// The element type of a NumPy dtype string, or why it is not supported.
pub fn elem_from_descr(descr: &str) -> Result<ElementType, NpyError> {
    use ElementType::*;
    // One-byte types have no byte order; NumPy writes `|`, but `<` and `=` mean the same.
    let e = match descr {
        "|b1" | "<b1" | "=b1" => Pred,
        "|i1" | "<i1" | "=i1" => S8,
        "|u1" | "<u1" | "=u1" => U8,
        "<i2" => S16,
        "<i4" => S32,
        "<i8" => S64,
        "<u2" => U16,
        "<u4" => U32,
        "<u8" => U64,
        "<f2" => F16,
        "<f4" => F32,
        "<f8" => F64,
        d if d.starts_with('>') => return err(format!("big-endian dtype `{d}` is not supported (use little-endian)")),
        d => {
            return err(format!(
                "dtype `{d}` is not supported (expected bool, int8..int64, uint8..uint64, float16, float32 or float64)"
            ))
        }
    };
    Ok(e)
}

/// The dtype string used when writing `elem`; bf16 has none (the caller widens it).
pub fn descr_of(elem: ElementType) -> Option<&'static str> {
    elem.numpy_descr()
}

/// A readable name for a dtype, as NumPy spells it (`float32`, `bool`, ...).
pub fn numpy_name(elem: ElementType) -> &'static str {
    use ElementType::*;
    match elem {
        Pred => "bool",
        S8 => "int8",
        S16 => "int16",
        S32 => "int32",
        S64 => "int64",
        U8 => "uint8",
        U16 => "uint16",
        U32 => "uint32",
        U64 => "uint64",
        F16 => "float16",
        BF16 => "bfloat16",
        F32 => "float32",
        F64 => "float64",
    }
}

/// An `.npy` array read in place: its data borrowed from the file's bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyRef<'a> {
    pub elem: ElementType,
    pub dims: Vec<i64>,
    /// Row-major, little-endian element bytes.
    pub data: &'a [u8],
}

/// Parses the bytes of an `.npy` file.
pub fn read(bytes: &[u8]) -> Result<NpyArray, NpyError> {
    read_ref(bytes).map(|a| NpyArray { elem: a.elem, dims: a.dims, data: a.data.to_vec() })
}

/// Parses the bytes of an `.npy` file without copying its data (every check of [`read`]
/// is made: the header, the dtype, the data's length, bool bytes).
pub fn read_ref(bytes: &[u8]) -> Result<NpyRef<'_>, NpyError> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return err("not an .npy file (missing the \\x93NUMPY magic)");
    }
    let major = bytes[6];
    let (header_len, header_start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return err("truncated .npy header");
            }
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        v => return err(format!(".npy format version {v} is not supported (1, 2 or 3)")),
    };
    let header_end = header_start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| NpyError("truncated .npy header".into()))?;
    let header = std::str::from_utf8(&bytes[header_start..header_end])
        .map_err(|_| NpyError("the .npy header is not valid text".into()))?;
    let h = parse_header(header)?;
    if h.fortran_order {
        return err("Fortran-order arrays are not supported (save a C-order array, e.g. np.ascontiguousarray)");
    }
    let elem = elem_from_descr(&h.descr)?;
    // `usize::try_from`, not `as`: on wasm32 a dimension of 2^32 would wrap to 0.
    let count = h
        .dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?))
        .ok_or_else(|| NpyError("the .npy shape is too large".into()))?;
    let want = count.checked_mul(elem.byte_size()).ok_or_else(|| NpyError("the .npy shape is too large".into()))?;
    let data = &bytes[header_end..];
    if data.len() != want {
        return err(format!(
            "the .npy data has {} bytes, but shape {} of {} needs {want}",
            data.len(),
            dims_text(&h.dims),
            h.descr
        ));
    }
    if elem == ElementType::Pred {
        if let Some(b) = data.iter().find(|&&b| b > 1) {
            return err(format!("a bool element holds byte {b}, not 0 or 1"));
        }
    }
    Ok(NpyRef { elem, dims: h.dims, data })
}

/// Serializes an array in the `.npy` format (version 1.0).
pub fn write(a: &NpyArray) -> Vec<u8> {
    let descr = descr_of(a.elem).expect("bf16 has no .npy dtype; widen it first (a bug in the caller)");
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}", dims_text(&a.dims));
    // Pad with spaces so that magic + version + length + header + '\n' is a multiple of 64.
    let unpadded = MAGIC.len() + 2 + 2 + header.len() + 1;
    header.extend(std::iter::repeat_n(' ', (64 - unpadded % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + a.data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&a.data);
    out
}

/// A Python tuple of the dims: `()`, `(3,)`, `(2, 3)`.
pub fn dims_text(dims: &[i64]) -> String {
    match dims {
        [] => "()".into(),
        [d] => format!("({d},)"),
        ds => format!("({})", ds.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
    }
}

impl NpyArray {
    /// The array holding a literal's values. bf16 is widened exactly to float32, since
    /// NumPy has no bfloat16 dtype.
    pub fn from_literal(l: &Literal) -> NpyArray {
        if l.elem() == ElementType::BF16 {
            let f32s = Literal::from_f64s(l.shape.with_elem(ElementType::F32), &l.to_f64_vec());
            return NpyArray { elem: ElementType::F32, dims: l.shape.dims.to_vec(), data: f32s.to_le_bytes() };
        }
        NpyArray { elem: l.elem(), dims: l.shape.dims.to_vec(), data: l.to_le_bytes() }
    }

    /// The literal of shape `dims`/`elem` this array holds. The dtype must match, except
    /// that a bf16 target accepts float32 data, rounded to nearest even.
    pub fn to_literal(&self, elem: ElementType) -> Option<Literal> {
        self.as_ref().to_literal(elem)
    }

    /// The array, its data borrowed.
    pub fn as_ref(&self) -> NpyRef<'_> {
        NpyRef { elem: self.elem, dims: self.dims.clone(), data: &self.data }
    }
}

impl NpyRef<'_> {
    /// As [`NpyArray::to_literal`].
    pub fn to_literal(&self, elem: ElementType) -> Option<Literal> {
        let shape = Shape::new(elem, self.dims.clone());
        if elem == ElementType::BF16 && self.elem == ElementType::F32 {
            let f = Literal::from_le_bytes(Shape::new(ElementType::F32, self.dims.clone()), self.data)?;
            return Some(Literal::from_f64s(shape, &f.to_f64_vec()));
        }
        if elem != self.elem {
            return None;
        }
        Literal::from_le_bytes(shape, self.data)
    }
}

/// The three header fields we need.
struct Header {
    descr: String,
    fortran_order: bool,
    dims: Vec<i64>,
}

/// Parses the header: a Python dict literal with keys `descr`, `fortran_order`, `shape`.
fn parse_header(text: &str) -> Result<Header, NpyError> {
    let mut p = HeaderParser { s: text.trim_end().as_bytes(), i: 0 };
    let (mut descr, mut fortran, mut dims) = (None, None, None);
    p.expect(b'{')?;
    loop {
        p.skip_ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.expect(b':')?;
        match key.as_str() {
            "descr" => {
                p.skip_ws();
                if p.peek() != Some(b'\'') && p.peek() != Some(b'"') {
                    return err("structured (record) dtypes are not supported");
                }
                descr = Some(p.string()?);
            }
            "fortran_order" => fortran = Some(p.boolean()?),
            "shape" => dims = Some(p.tuple()?),
            k => return err(format!("unexpected key `{k}` in the .npy header")),
        }
        p.skip_ws();
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    match (descr, fortran, dims) {
        (Some(descr), Some(fortran_order), Some(dims)) => Ok(Header { descr, fortran_order, dims }),
        _ => err("the .npy header lacks one of descr, fortran_order, shape"),
    }
}

struct HeaderParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl HeaderParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: u8) -> Result<(), NpyError> {
        if self.eat(c) {
            Ok(())
        } else {
            err(format!("malformed .npy header: expected `{}` at byte {}", c as char, self.i))
        }
    }
    fn string(&mut self) -> Result<String, NpyError> {
        self.skip_ws();
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return err(format!("malformed .npy header: expected a string at byte {}", self.i)),
        };
        self.i += 1;
        let start = self.i;
        while self.peek().is_some_and(|c| c != quote) {
            self.i += 1;
        }
        if self.peek().is_none() {
            return err("malformed .npy header: unterminated string");
        }
        let s = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        self.i += 1;
        Ok(s)
    }
    fn boolean(&mut self) -> Result<bool, NpyError> {
        self.skip_ws();
        let rest = &self.s[self.i..];
        if rest.starts_with(b"True") {
            self.i += 4;
            Ok(true)
        } else if rest.starts_with(b"False") {
            self.i += 5;
            Ok(false)
        } else {
            err("malformed .npy header: fortran_order is not True or False")
        }
    }
    fn tuple(&mut self) -> Result<Vec<i64>, NpyError> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            if self.eat(b')') {
                return Ok(dims);
            }
            self.skip_ws();
            let start = self.i;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.i += 1;
            }
            let d: i64 = std::str::from_utf8(&self.s[start..self.i])
                .ok()
                .and_then(|t| t.parse().ok())
                .ok_or_else(|| NpyError(format!("malformed .npy header: bad dimension at byte {start}")))?;
            dims.push(d);
            if !self.eat(b',') {
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes NumPy 2.x writes for `np.save(f, np.array([[1, 2, 3]], dtype=np.int16))`.
    fn numpy_int16_file() -> Vec<u8> {
        let header = "{'descr': '<i2', 'fortran_order': False, 'shape': (1, 3), }";
        // NumPy pads the header with spaces so that the data starts at byte 128.
        let mut h = header.to_string();
        h.extend(std::iter::repeat_n(' ', 128 - 10 - header.len() - 1));
        h.push('\n');
        assert_eq!(h.len(), 0x76, "numpy writes header length 0x76 for this array");
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(h.len() as u16).to_le_bytes());
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(&[1, 0, 2, 0, 3, 0]);
        out
    }

    #[test]
    fn reads_numpy_output_and_writes_it_back_identically() {
        let bytes = numpy_int16_file();
        let a = read(&bytes).unwrap();
        assert_eq!(a.elem, ElementType::S16);
        assert_eq!(a.dims, vec![1, 3]);
        assert_eq!(a.to_literal(ElementType::S16).unwrap().to_f64_vec(), vec![1.0, 2.0, 3.0]);
        assert_eq!(write(&a), bytes);
    }

    #[test]
    fn scalar_and_half_round_trip() {
        // 1.5 in f16 is 0x3e00.
        let a = NpyArray { elem: ElementType::F16, dims: vec![], data: vec![0x00, 0x3e] };
        let bytes = write(&a);
        assert_eq!(bytes.len() % 64, 2);
        let back = read(&bytes).unwrap();
        assert_eq!(back, a);
        assert_eq!(back.to_literal(ElementType::F16).unwrap().to_f64_vec(), vec![1.5]);
    }

    #[test]
    fn bf16_is_widened_on_write_and_rounded_on_read() {
        let l = Literal::from_f64s(Shape::new(ElementType::BF16, vec![2]), &[1.0 / 3.0, -2.0]);
        let a = NpyArray::from_literal(&l);
        assert_eq!(a.elem, ElementType::F32);
        assert_eq!(a.to_literal(ElementType::F32).unwrap().to_f64_vec(), vec![0.333984375, -2.0]);
        // 1/3 as f32 rounds to the same bf16 value.
        let third = NpyArray { elem: ElementType::F32, dims: vec![1], data: (1.0f32 / 3.0).to_le_bytes().to_vec() };
        assert_eq!(third.to_literal(ElementType::BF16).unwrap().to_f64_vec(), vec![0.333984375]);
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        let mut bytes = numpy_int16_file();
        let pos = bytes.windows(5).position(|w| w == b"False").unwrap();
        bytes[pos..pos + 5].copy_from_slice(b"True ");
        assert!(read(&bytes).unwrap_err().0.contains("Fortran-order"));

        let mut bytes = numpy_int16_file();
        let pos = bytes.windows(3).position(|w| w == b"<i2").unwrap();
        bytes[pos..pos + 3].copy_from_slice(b"<c8");
        assert!(read(&bytes).unwrap_err().0.contains("`<c8` is not supported"));
        bytes[pos..pos + 3].copy_from_slice(b">i2");
        assert!(read(&bytes).unwrap_err().0.contains("big-endian"));

        let mut bytes = numpy_int16_file();
        bytes.pop();
        assert!(read(&bytes).unwrap_err().0.contains("has 5 bytes"));
        assert!(read(b"hello world").unwrap_err().0.contains("magic"));
        assert!(read(&bytes[..40]).unwrap_err().0.contains("truncated .npy header"));

        // A shape whose byte count overflows (on wasm32 too, where usize is 32 bits).
        let huge = NpyArray { elem: ElementType::F32, dims: vec![1 << 40, 1 << 40], data: vec![] };
        assert!(read(&write(&huge)).unwrap_err().0.contains("too large"));
        let mut bools = write(&NpyArray { elem: ElementType::Pred, dims: vec![2], data: vec![1, 0] });
        *bools.last_mut().unwrap() = 2;
        assert!(read(&bools).unwrap_err().0.contains("holds byte 2"));
    }

    #[test]
    fn version_2_headers_read_and_data_is_borrowed() {
        let v1 = write(&NpyArray { elem: ElementType::S32, dims: vec![2], data: vec![7, 0, 0, 0, 9, 0, 0, 0] });
        // Version 2.0: the same header with a four-byte length.
        let header_len = u16::from_le_bytes([v1[8], v1[9]]) as u32;
        let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
        v2.extend_from_slice(&header_len.to_le_bytes());
        v2.extend_from_slice(&v1[10..]);
        let a = read_ref(&v2).unwrap();
        assert_eq!((a.elem, a.dims.as_slice()), (ElementType::S32, &[2i64][..]));
        assert!(std::ptr::eq(a.data.as_ptr(), v2[v2.len() - 8..].as_ptr()), "the data is not copied");
        assert_eq!(a.to_literal(ElementType::S32).unwrap().to_f64_vec(), vec![7.0, 9.0]);
        assert_eq!(a.to_literal(ElementType::F32), None, "a dtype mismatch decodes nothing");
        assert!(read(&v2[..11]).unwrap_err().0.contains("truncated"));
    }
}
