//! Reading MLIR types: `tensor<2x3xf32>`, `tuple<...>`, `!stablehlo.token`, scalar
//! builtin types, and the `: (T, T) -> T` / `: T, T` type lists after an op.
//!
//! Element types outside hloscope's set (complex, quantized, sub-byte integers, 8/6/4-bit
//! floats) and dynamic dimensions are rejected here, at the type's own position.

use super::ast::Types;
use super::lexer::Cursor;
use crate::ir::{ElementType, Type};
use crate::parse::ParseError;

fn elem_from_name(name: &str) -> Option<ElementType> {
    ElementType::from_mlir_name(name).or(match name {
        "si8" => Some(ElementType::S8),
        "si16" => Some(ElementType::S16),
        "si32" => Some(ElementType::S32),
        "si64" => Some(ElementType::S64),
        _ => None,
    })
}

/// Reads an element type name (`f32`, `ui8`, `complex<f32>`, `!quant.uniform<...>`).
fn elem_type(c: &mut Cursor) -> Result<ElementType, ParseError> {
    c.skip_ws();
    let start = c.pos;
    if c.peek() == Some(b'!') {
        c.pos += 1;
        let name = c.ident().unwrap_or("");
        let mut text = format!("!{name}");
        if c.peek_raw(0) == Some(b'<') {
            text.push_str(c.skip_balanced()?);
        }
        return Err(c.err_at(start, format!("unsupported element type {text}")));
    }
    let Some(name) = c.ident() else {
        return Err(c.expected("an element type"));
    };
    if let Some(e) = elem_from_name(name) {
        return Ok(e);
    }
    let mut text = name.to_string();
    if c.peek_raw(0) == Some(b'<') {
        text.push_str(c.skip_balanced()?);
    }
    Err(c.err_at(start, format!("unsupported element type {text}")))
}

/// Reads one type.
pub fn parse_type(c: &mut Cursor) -> Result<Type, ParseError> {
    c.skip_ws();
    let start = c.pos;
    if c.starts_with("!stablehlo.token") {
        c.pos += "!stablehlo.token".len();
        return Ok(Type::Token);
    }
    if c.peek() == Some(b'!') {
        // Quantized and other dialect types: report them as element types, which is
        // what they stand for in tensors.
        elem_type(c)?;
        return Err(c.err_at(start, "unsupported type"));
    }
    if c.peek_kw("tensor") && c.src[start + 6..].starts_with('<') {
        // A tensor type read before, with the same text up to its `>` (its body holds
        // none: a nested `<` is an unsupported element type or an encoding, never stored).
        let src = c.src;
        if let Some(text) = src[start..].find('>').map(|e| &src[start..start + e + 1]) {
            if let Some(ty) = c.tensor_types.get(text) {
                c.pos = start + text.len();
                return Ok(ty.clone());
            }
        }
        c.pos = start + 7;
        c.enter()?;
        let r = tensor_body(c, start);
        c.leave();
        if let Ok(ty) = &r {
            c.tensor_types.insert(&src[start..c.pos], ty.clone());
        }
        return r;
    }
    if c.peek_kw("tuple") && c.src[start + 5..].starts_with('<') {
        c.pos = start + 6;
        c.enter()?;
        let mut elems = Vec::new();
        if !c.eat(">") {
            loop {
                elems.push(parse_type(c)?);
                if c.eat(",") {
                    continue;
                }
                c.expect(">")?;
                break;
            }
        }
        c.leave();
        return Ok(Type::Tuple(elems));
    }
    if c.eat_kw("index") {
        return Ok(Type::array(ElementType::S64, vec![]));
    }
    if c.peek_ident().is_some() {
        // A scalar builtin type such as `f32` or `i64` (attribute types).
        let e = elem_type(c)?;
        return Ok(Type::array(e, vec![]));
    }
    Err(c.expected("a type"))
}

fn tensor_body(c: &mut Cursor, start: usize) -> Result<Type, ParseError> {
    let mut dims = Vec::new();
    loop {
        c.skip_ws();
        match c.peek_raw(0) {
            Some(b) if b.is_ascii_digit() => {
                let ds = c.pos;
                while c.peek_raw(0).is_some_and(|b| b.is_ascii_digit()) {
                    c.pos += 1;
                }
                let d: i64 = c.src[ds..c.pos].parse().map_err(|_| c.err_at(ds, "dimension out of range"))?;
                dims.push(d);
                if c.peek_raw(0) != Some(b'x') {
                    return Err(c.err_at(c.pos, "expected `x` after a tensor dimension"));
                }
                c.pos += 1;
            }
            Some(b'?') => return Err(c.err_at(c.pos, "dynamic dimension `?` is not supported")),
            _ => break,
        }
    }
    let elem = elem_type(c)?;
    if c.peek() == Some(b',') {
        return Err(c.err_at(c.pos, "tensor encodings (bounds, sparsity) are not supported"));
    }
    c.expect(">")?;
    // Refused at the type, before anything is sized from it; the same limit as the HLO
    // reader's and the verifier's.
    let shape = crate::ir::Shape::new(elem, dims);
    crate::limits::Limits::default().check_shape(&shape).map_err(|m| c.err_at(start, m))?;
    Ok(Type::Array(shape))
}

/// The types after an op's `:`: either a function type `(A, B) -> C` / `A -> (B, C)`
/// (`true` and the results) or a plain list `A, B` (`false`, the list). A function
/// type's operand types are read (a bad one is an error at its position) but not kept:
/// lowering takes operand types from the operands.
pub fn parse_colon_types(c: &mut Cursor) -> Result<(bool, Types), ParseError> {
    let results =
        |c: &mut Cursor| if c.eat("(") { type_list_until(c, ")") } else { Ok(smallvec::smallvec![parse_type(c)?]) };
    if c.peek() == Some(b'(') {
        c.pos += 1;
        each_type_until(c, ")", drop)?;
        if !c.eat("->") {
            return Err(c.expected("`->`"));
        }
        return Ok((true, results(c)?));
    }
    let mut list: Types = smallvec::smallvec![parse_type(c)?];
    while c.eat(",") {
        list.push(parse_type(c)?);
    }
    if c.eat("->") {
        Ok((true, results(c)?))
    } else {
        Ok((false, list))
    }
}

/// Comma-separated types up to the closing `close` (consumed); empty allowed.
fn type_list_until(c: &mut Cursor, close: &str) -> Result<Types, ParseError> {
    let mut out = Types::new();
    each_type_until(c, close, |t| out.push(t))?;
    Ok(out)
}

/// Reads `T, T, ...` up to `close` (consumed; empty allowed), handing each type to `each`.
fn each_type_until(c: &mut Cursor, close: &str, mut each: impl FnMut(Type)) -> Result<(), ParseError> {
    if c.eat(close) {
        return Ok(());
    }
    loop {
        each(parse_type(c)?);
        if c.eat(",") {
            continue;
        }
        return c.expect(close);
    }
}
