//! `dense<...>` literals to IR literals, once the element type is known.
//!
//! Floats written in decimal are read at the precision of their type (f32 and f64
//! directly; f16 and bf16 through f64, then rounded to nearest even). Hexadecimal float
//! elements are bit patterns (`0x7FC00000` is an f32 NaN); hexadecimal integer elements
//! are values. Hex blobs (`dense<"0x...">`) are raw little-endian bytes; a blob of one
//! element is a splat, as in MLIR.

use super::ast::{Dense, DenseBody, Elem};
use super::lexer::Number;
use crate::ir::literal::{float_from_bits, round_float, width_mask, wrap_signed, wrap_unsigned};
use crate::ir::{Data, ElementType, Literal, Shape};

/// Constants with more elements than this are refused (they would not fit in memory).
const MAX_CONSTANT_ELEMENTS: usize = 1 << 27;

/// Converts a dense literal; errors are one-line reasons (the caller adds the position).
pub fn dense_to_literal(d: &Dense) -> Result<Literal, String> {
    let Some(shape) = d.ty.as_array() else {
        return Err("a dense literal needs a tensor type".to_string());
    };
    let n = shape.num_elements();
    if n > MAX_CONSTANT_ELEMENTS {
        return Err(format!("constant with {n} elements is too large"));
    }
    let elem = shape.elem;
    match &d.body {
        DenseBody::Blob(bytes) => {
            let w = elem.byte_size();
            if bytes.len() == w && n != 1 {
                let one = Literal::from_le_bytes(Shape::scalar(elem), bytes).ok_or("bad hex blob")?;
                return Ok(Literal::splat(shape.clone(), one.get(0)));
            }
            if bytes.len() != n * w {
                return Err(format!("hex blob has {} bytes but {} needs {}", bytes.len(), shape, n * w));
            }
            Literal::from_le_bytes(shape.clone(), bytes).ok_or_else(|| "bad hex blob".to_string())
        }
        DenseBody::Splat(e) => {
            let mut data = Data::with_capacity(elem, n);
            let mut one = Data::with_capacity(elem, 1);
            push_elem(&mut one, elem, e)?;
            for _ in 0..n {
                data.push_from(&one, 0);
            }
            Ok(Literal::new(shape.clone(), data))
        }
        DenseBody::List { shape: written, elems } => {
            if elems.len() != n {
                return Err(format!("dense literal has {} elements but {} has {}", elems.len(), shape, n));
            }
            if n > 0 {
                let dims: Vec<i64> = written.iter().map(|&x| x as i64).collect();
                if dims[..] != shape.dims[..] && !(shape.dims.is_empty() && dims == [1]) {
                    return Err(format!("dense literal of shape {:?} does not match {}", dims, shape));
                }
            }
            let mut data = Data::with_capacity(elem, n);
            for e in elems {
                push_elem(&mut data, elem, e)?;
            }
            Ok(Literal::new(shape.clone(), data))
        }
    }
}

/// Checks that `v` is representable in `bits` bits, read as signed or unsigned.
fn int_fits(v: i128, bits: u32) -> bool {
    let lo = -(1i128 << (bits - 1));
    let hi = (1i128 << bits) - 1;
    (lo..=hi).contains(&v)
}

fn push_elem(data: &mut Data, elem: ElementType, e: &Elem) -> Result<(), String> {
    let ty = elem.mlir_name();
    let bad = || format!("invalid {ty} element in dense literal");
    match (data, e) {
        (_, Elem::Complex) => return Err(format!("complex value in a dense literal of type {ty}")),
        (Data::Pred(v), Elem::Bool(b)) => v.push(*b),
        (Data::Pred(v), Elem::Num(Number::Int(i))) if *i == 0 || *i == 1 => v.push(*i == 1),
        (Data::Pred(v), Elem::Num(Number::Hex(i))) if *i <= 1 => v.push(*i == 1),
        (Data::Pred(_), _) => return Err(bad()),
        (Data::S(v), Elem::Num(n)) => {
            let x = match n {
                Number::Int(i) if int_fits(*i, elem.bit_width()) => *i as i64,
                Number::Hex(h) if *h <= width_mask(elem) as u128 => *h as u64 as i64,
                _ => return Err(format!("integer out of range for {ty} in dense literal")),
            };
            v.push(wrap_signed(elem, x));
        }
        (Data::U(v), Elem::Num(n)) => {
            let x = match n {
                Number::Int(i) if int_fits(*i, elem.bit_width()) => *i as i64 as u64,
                Number::Hex(h) if *h <= width_mask(elem) as u128 => *h as u64,
                _ => return Err(format!("integer out of range for {ty} in dense literal")),
            };
            v.push(wrap_unsigned(elem, x));
        }
        (Data::S(v), Elem::Bool(b)) => v.push(*b as i64),
        (Data::U(v), Elem::Bool(b)) => v.push(*b as u64),
        (Data::F(v), Elem::Num(n)) => {
            let x = match n {
                Number::Float(t) => match elem {
                    ElementType::F32 => t.parse::<f32>().map_err(|_| bad())? as f64,
                    _ => round_float(elem, t.parse::<f64>().map_err(|_| bad())?),
                },
                Number::Int(i) => round_float(elem, *i as f64),
                Number::Hex(h) if *h <= width_mask(elem) as u128 => float_from_bits(elem, *h as u64),
                Number::Hex(_) => return Err(format!("hex bit pattern too wide for {ty}")),
            };
            v.push(x);
        }
        (Data::F(_), Elem::Bool(_)) => return Err(bad()),
    }
    Ok(())
}
