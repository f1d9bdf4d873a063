//! Reading attributes: numbers, strings, lists, dictionaries, `array<i64: ...>`,
//! `dense<...>` literals, `#stablehlo...` enums and structs, the compact convolution
//! dimension syntax, and `loc(...)` locations.

use super::ast::{Attr, AttrEntry, Dense, DenseBody, Elem, LocAst};
use super::lexer::{Cursor, Number};
use super::types::parse_type;
use crate::ir::{ConvDims, Type};
use crate::parse::ParseError;

/// Reads one attribute value. `with_type` consumes a `: type` suffix after numbers
/// (as in `{dimension = 0 : i64}`); pretty op syntax reads `dim = 0 : tensor<..>` where
/// the type belongs to the op, so it passes false there.
pub fn parse_attr(c: &mut Cursor, with_type: bool) -> Result<Attr, ParseError> {
    c.enter()?;
    let r = parse_attr_inner(c, with_type);
    c.leave();
    r
}

fn parse_attr_inner(c: &mut Cursor, with_type: bool) -> Result<Attr, ParseError> {
    c.skip_ws();
    let start = c.pos;
    let Some(b) = c.peek() else {
        return Err(c.expected("an attribute"));
    };
    match b {
        b'"' => Ok(Attr::Str(c.string()?)),
        b'[' => {
            c.pos += 1;
            let mut items = Vec::new();
            if !c.eat("]") {
                loop {
                    items.push(parse_attr(c, true)?);
                    if c.eat(",") {
                        continue;
                    }
                    c.expect("]")?;
                    break;
                }
            }
            Ok(Attr::Array(items))
        }
        b'{' => Ok(Attr::Dict(parse_dict(c)?)),
        b'@' => Ok(Attr::Symbol(c.symbol()?.unwrap_or_default())),
        b'#' => hash_attr(c),
        b'<' | b'(' => Ok(Attr::Raw(c.skip_balanced()?.to_string())),
        b'!' => Ok(Attr::Type(Box::new(parse_type(c)?))),
        _ if c.peek_number() => {
            let n = c.number(false)?;
            if with_type && c.eat(":") {
                parse_type(c)?;
            }
            Ok(Attr::Num(n))
        }
        _ => {
            let Some(id) = c.peek_ident() else {
                return Err(c.expected("an attribute"));
            };
            let after = start + id.len();
            let angle = c.src[after..].starts_with('<');
            match id {
                "true" | "false" => {
                    c.pos = after;
                    if with_type && c.eat(":") {
                        parse_type(c)?;
                    }
                    Ok(Attr::Bool(id == "true"))
                }
                "dense" if angle => Ok(Attr::Dense(Box::new(parse_dense(c)?))),
                "array" if angle => {
                    c.pos = after + 1;
                    parse_type(c)?;
                    let mut items = Vec::new();
                    if c.eat(":") {
                        loop {
                            items.push(parse_attr(c, false)?);
                            if !c.eat(",") {
                                break;
                            }
                        }
                    }
                    c.expect(">")?;
                    Ok(Attr::DenseArray(items))
                }
                "tensor" | "tuple" if angle => Ok(Attr::Type(Box::new(parse_type(c)?))),
                "unit" => {
                    c.pos = after;
                    Ok(Attr::Unit)
                }
                _ if angle => {
                    c.pos = after;
                    let body = c.skip_balanced()?;
                    Ok(Attr::Raw(format!("{id}{body}")))
                }
                _ => {
                    c.pos = after;
                    Ok(Attr::Enum(id.to_string()))
                }
            }
        }
    }
}

/// `{name = value, flag, "quoted" = value}`.
pub fn parse_dict(c: &mut Cursor) -> Result<Vec<AttrEntry>, ParseError> {
    c.expect("{")?;
    c.enter()?;
    let mut out = Vec::new();
    if !c.eat("}") {
        loop {
            let name =
                if c.peek() == Some(b'"') { c.string()? } else { c.expect_ident("an attribute name")?.to_string() };
            if c.eat("=") {
                c.skip_ws();
                let vs = c.pos;
                let value = parse_attr(c, true)?;
                let text = c.src[vs..c.pos].trim().to_string();
                out.push(AttrEntry { name, value, text });
            } else {
                out.push(AttrEntry { name, value: Attr::Unit, text: String::new() });
            }
            if c.eat(",") {
                continue;
            }
            c.expect("}")?;
            break;
        }
    }
    c.leave();
    Ok(out)
}

/// `#...` attributes: `#stablehlo<comparison_direction LT>`, `#stablehlo.conv<...>`,
/// `#stablehlo.dot<...>` and friends; anything else is kept as raw text.
fn hash_attr(c: &mut Cursor) -> Result<Attr, ParseError> {
    let start = c.pos;
    c.pos += 1;
    let name = c.ident().unwrap_or("").to_string();
    if c.peek_raw(0) != Some(b'<') {
        return Ok(Attr::Raw(c.src[start..c.pos].to_string()));
    }
    let open = c.pos;
    c.pos += 1;
    if name == "stablehlo.conv" {
        let dims = if c.eat_kw("raw") || c.peek() != Some(b'[') { conv_dims_keyed(c)? } else { conv_dims_compact(c)? };
        c.expect(">")?;
        return Ok(Attr::Conv(Box::new(dims)));
    }
    if !name.contains('.') {
        // `#dialect<kind VALUE>`: an enum.
        if let (Some(_kind), Some(value)) = (c.ident(), c.ident()) {
            if c.eat(">") {
                return Ok(Attr::Enum(value.to_string()));
            }
        }
    } else if let Ok(entries) = struct_entries(c) {
        return Ok(Attr::Struct(Box::new((name, entries))));
    }
    c.pos = open;
    let body = c.skip_balanced()?;
    Ok(Attr::Raw(format!("#{name}{body}")))
}

/// `key = value, ...>` inside `#dialect.name<...>` (consumes the closing `>`).
fn struct_entries(c: &mut Cursor) -> Result<Vec<AttrEntry>, ParseError> {
    let mut out = Vec::new();
    if c.eat(">") {
        return Ok(out);
    }
    loop {
        let name = c.expect_ident("a field name")?.to_string();
        c.expect("=")?;
        c.skip_ws();
        let vs = c.pos;
        let value = parse_attr(c, false)?;
        let text = c.src[vs..c.pos].trim().to_string();
        out.push(AttrEntry { name, value, text });
        if c.eat(",") {
            continue;
        }
        c.expect(">")?;
        return Ok(out);
    }
}

/// `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`: the letters name the batch/feature
/// dimensions, the numbers give each spatial dimension's position.
pub fn conv_dims_compact(c: &mut Cursor) -> Result<ConvDims, ParseError> {
    let start = c.pos;
    let input = conv_group(c, &["b", "f"])?;
    if !c.eat_kw("x") {
        return Err(c.expected("`x` in convolution dimension numbers"));
    }
    let kernel = conv_group(c, &["i", "o"])?;
    c.expect("->")?;
    let output = conv_group(c, &["b", "f"])?;
    let bad = || c.err_at(start, "malformed convolution dimension numbers");
    if input.2.len() != kernel.2.len() || input.2.len() != output.2.len() {
        return Err(bad());
    }
    Ok(ConvDims {
        input_batch: input.0,
        input_feature: input.1,
        input_spatial: input.2,
        kernel_input_feature: kernel.0,
        kernel_output_feature: kernel.1,
        kernel_spatial: kernel.2,
        output_batch: output.0,
        output_feature: output.1,
        output_spatial: output.2,
    })
}

/// One bracketed group; returns (position of letters[0], position of letters[1],
/// positions of spatial dims 0, 1, ... in order).
fn conv_group(c: &mut Cursor, letters: &[&str; 2]) -> Result<(i64, i64, Vec<i64>), ParseError> {
    c.skip_ws();
    let start = c.pos;
    c.expect("[")?;
    let mut first = None;
    let mut second = None;
    let mut spatial: Vec<(i64, i64)> = Vec::new();
    let mut i = 0i64;
    if !c.eat("]") {
        loop {
            if c.peek_number() {
                let n = c.int()?;
                spatial.push((n, i));
            } else {
                let id = c.expect_ident("a dimension letter")?;
                if id == letters[0] && first.is_none() {
                    first = Some(i);
                } else if id == letters[1] && second.is_none() {
                    second = Some(i);
                } else {
                    return Err(c.err_at(start, format!("unexpected `{id}` in convolution dimension numbers")));
                }
            }
            i += 1;
            if c.eat(",") {
                continue;
            }
            c.expect("]")?;
            break;
        }
    }
    spatial.sort();
    let ok = spatial.iter().enumerate().all(|(k, &(n, _))| n == k as i64);
    match (first, second, ok) {
        (Some(a), Some(b), true) => Ok((a, b, spatial.into_iter().map(|(_, p)| p).collect())),
        _ => Err(c.err_at(start, "malformed convolution dimension numbers")),
    }
}

/// `input_batch_dimension = 0, input_feature_dimension = 3, ...` (the long form).
fn conv_dims_keyed(c: &mut Cursor) -> Result<ConvDims, ParseError> {
    let start = c.pos;
    let mut d = ConvDims {
        input_batch: 0,
        input_feature: 0,
        input_spatial: vec![],
        kernel_input_feature: 0,
        kernel_output_feature: 0,
        kernel_spatial: vec![],
        output_batch: 0,
        output_feature: 0,
        output_spatial: vec![],
    };
    while let Some(key) = c.ident() {
        c.expect("=")?;
        let v = parse_attr(c, false)?;
        let one = attr_i64(&v);
        let list = attr_i64_list(&v);
        let bad = || c.err_at(start, format!("bad value for `{key}`"));
        match key {
            "input_batch_dimension" => d.input_batch = one.ok_or_else(bad)?,
            "input_feature_dimension" => d.input_feature = one.ok_or_else(bad)?,
            "input_spatial_dimensions" => d.input_spatial = list.ok_or_else(bad)?,
            "kernel_input_feature_dimension" => d.kernel_input_feature = one.ok_or_else(bad)?,
            "kernel_output_feature_dimension" => d.kernel_output_feature = one.ok_or_else(bad)?,
            "kernel_spatial_dimensions" => d.kernel_spatial = list.ok_or_else(bad)?,
            "output_batch_dimension" => d.output_batch = one.ok_or_else(bad)?,
            "output_feature_dimension" => d.output_feature = one.ok_or_else(bad)?,
            "output_spatial_dimensions" => d.output_spatial = list.ok_or_else(bad)?,
            _ => {}
        }
        if !c.eat(",") {
            break;
        }
    }
    Ok(d)
}

/// An integer attribute (`3`, `3 : i64`, hex, `true` as 1).
pub fn attr_i64(a: &Attr) -> Option<i64> {
    match a {
        Attr::Num(Number::Int(v)) => i64::try_from(*v).ok(),
        Attr::Num(Number::Hex(v)) => i64::try_from(*v).ok(),
        Attr::Bool(b) => Some(*b as i64),
        _ => None,
    }
}

/// A list of integers: `[1, 2]`, `array<i64: 1, 2>`, or an integer `dense<...>`.
pub fn attr_i64_list(a: &Attr) -> Option<Vec<i64>> {
    match a {
        Attr::Array(items) | Attr::DenseArray(items) => items.iter().map(attr_i64).collect(),
        Attr::Dense(d) => match &d.body {
            DenseBody::List { elems, .. } => elems
                .iter()
                .map(|e| match e {
                    Elem::Num(n) => attr_i64(&Attr::Num(n.clone())),
                    Elem::Bool(b) => Some(*b as i64),
                    Elem::Complex => None,
                })
                .collect(),
            DenseBody::Splat(e) => {
                let n = d.ty.as_array()?.num_elements();
                let v = match e {
                    Elem::Num(n) => attr_i64(&Attr::Num(n.clone()))?,
                    Elem::Bool(b) => *b as i64,
                    Elem::Complex => return None,
                };
                Some(vec![v; n])
            }
            DenseBody::Blob(_) => None,
        },
        _ => None,
    }
}

/// `dense<...> : tensor<...>` (the cursor is at `dense`).
pub fn parse_dense(c: &mut Cursor) -> Result<Dense, ParseError> {
    c.skip_ws();
    let pos = c.pos;
    c.expect_kw("dense")?;
    c.expect("<")?;
    let body = if c.peek() == Some(b'"') {
        let sp = c.pos;
        let s = c.string()?;
        let hex = s
            .strip_prefix("0x")
            .or_else(|| s.strip_prefix("0X"))
            .ok_or_else(|| c.err_at(sp, "dense string literals other than hex blobs are not supported"))?;
        if hex.len() % 2 != 0 {
            return Err(c.err_at(sp, "hex blob has an odd number of digits"));
        }
        let mut bytes = Vec::with_capacity(hex.len() / 2);
        for k in (0..hex.len()).step_by(2) {
            let b = hex
                .get(k..k + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| c.err_at(sp, "bad hex digit in blob"))?;
            bytes.push(b);
        }
        DenseBody::Blob(bytes)
    } else if c.peek() == Some(b'[') {
        let mut elems = Vec::new();
        let shape = dense_list(c, &mut elems)?;
        DenseBody::List { shape, elems }
    } else if c.peek() == Some(b'>') {
        DenseBody::List { shape: vec![0], elems: vec![] }
    } else {
        DenseBody::Splat(dense_elem(c)?)
    };
    c.expect(">")?;
    if !c.eat(":") {
        return Err(c.expected("`:` and the type of the dense literal"));
    }
    let ty = parse_type(c)?;
    if !matches!(ty, Type::Array(_)) {
        return Err(c.err_at(pos, "a dense literal needs a tensor type"));
    }
    Ok(Dense { body, ty, pos })
}

/// A bracketed (possibly nested) list; returns its shape.
fn dense_list(c: &mut Cursor, out: &mut Vec<Elem>) -> Result<Vec<usize>, ParseError> {
    c.enter()?;
    let start = c.pos;
    c.expect("[")?;
    let mut inner: Option<Vec<usize>> = None;
    let mut n = 0usize;
    if !c.eat("]") {
        loop {
            let shape = if c.peek() == Some(b'[') {
                dense_list(c, out)?
            } else {
                out.push(dense_elem(c)?);
                Vec::new()
            };
            match &inner {
                None => inner = Some(shape),
                Some(s) if *s == shape => {}
                Some(_) => return Err(c.err_at(start, "ragged dense literal: sublists differ in shape")),
            }
            n += 1;
            if c.eat(",") {
                continue;
            }
            c.expect("]")?;
            break;
        }
    }
    c.leave();
    let mut shape = vec![n];
    shape.extend(inner.unwrap_or_default());
    Ok(shape)
}

fn dense_elem(c: &mut Cursor) -> Result<Elem, ParseError> {
    match c.peek() {
        Some(b'(') => {
            c.skip_balanced()?;
            Ok(Elem::Complex)
        }
        _ if c.eat_kw("true") => Ok(Elem::Bool(true)),
        _ if c.eat_kw("false") => Ok(Elem::Bool(false)),
        _ => Ok(Elem::Num(c.number(true)?)),
    }
}

/// `loc(...)` (the cursor is at `loc`). Location syntax it does not know is skipped
/// and reads as unknown: locations never make a program fail.
pub fn parse_loc(c: &mut Cursor) -> Result<LocAst, ParseError> {
    c.expect_kw("loc")?;
    c.skip_ws();
    let open = c.pos;
    c.expect("(")?;
    let save_depth = c.depth;
    match loc_expr(c).and_then(|l| c.expect(")").map(|_| l)) {
        Ok(l) => Ok(l),
        Err(_) => {
            c.depth = save_depth;
            c.pos = open;
            c.skip_balanced()?;
            Ok(LocAst::Unknown)
        }
    }
}

fn loc_expr(c: &mut Cursor) -> Result<LocAst, ParseError> {
    c.enter()?;
    let r = loc_expr_inner(c);
    c.leave();
    r
}

fn loc_expr_inner(c: &mut Cursor) -> Result<LocAst, ParseError> {
    match c.peek() {
        Some(b'#') => {
            c.pos += 1;
            let name = c.expect_ident("a location alias")?;
            Ok(LocAst::Alias(name.to_string()))
        }
        Some(b'"') => {
            let s = c.string()?;
            if c.eat(":") {
                let line = c.int()?;
                c.expect(":")?;
                let col = c.int()?;
                if c.eat_kw("to") {
                    if c.peek_number() {
                        c.int()?;
                    }
                    c.expect(":")?;
                    c.int()?;
                }
                Ok(LocAst::File {
                    file: s,
                    line: line.clamp(0, u32::MAX as i64) as u32,
                    col: col.clamp(0, u32::MAX as i64) as u32,
                })
            } else if c.peek() == Some(b'(') {
                c.pos += 1;
                let inner = loc_expr(c)?;
                c.expect(")")?;
                Ok(LocAst::Name(s, Some(Box::new(inner))))
            } else {
                Ok(LocAst::Name(s, None))
            }
        }
        _ if c.eat_kw("unknown") => Ok(LocAst::Unknown),
        _ if c.eat_kw("callsite") => {
            c.expect("(")?;
            let callee = loc_expr(c)?;
            c.expect_kw("at")?;
            let caller = loc_expr(c)?;
            c.expect(")")?;
            Ok(LocAst::CallSite(Box::new(callee), Box::new(caller)))
        }
        _ if c.eat_kw("fused") => {
            if c.peek() == Some(b'<') {
                c.skip_balanced()?;
            }
            c.expect("[")?;
            let mut parts = Vec::new();
            if !c.eat("]") {
                loop {
                    parts.push(loc_expr(c)?);
                    if c.eat(",") {
                        continue;
                    }
                    c.expect("]")?;
                    break;
                }
            }
            Ok(LocAst::Fused(parts))
        }
        _ => Err(c.expected("a location")),
    }
}
