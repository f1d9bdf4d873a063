//! The character-level reader under the HLO parser: whitespace and comments, names,
//! numbers, shapes with layouts, and HLO literals (`{ {1, 2}, {3, 4} }`, `-inf`, `nan`).
//!
//! HLO text has no separate token grammar (names hold `-` and `.`, attribute values are
//! mini-languages such as `0_0x1_2` or `b01f_01io->b01f`), so the parser reads
//! characters directly. A `Cur` can be limited to a sub-range (`end`), which is how each
//! attribute value is parsed on its own while errors still point into the whole text.

use crate::ir::literal::{float_from_bits, round_float, wrap_signed, wrap_unsigned, Data, Literal};
use crate::ir::{ElementType, Shape, Type};
use crate::parse::ParseError;

/// Tuple types nested deeper than this are refused (as the StableHLO reader refuses
/// nesting past its `MAX_DEPTH`): every walk over a type recurses.
const MAX_TUPLE_DEPTH: usize = 200;

/// A position in the text plus an end limit. Cheap to copy.
#[derive(Clone, Copy)]
pub(super) struct Cur<'a> {
    pub text: &'a str,
    pub pos: usize,
    pub end: usize,
}

/// 1-based line and column of byte offset `pos` in `text`.
pub(super) fn line_col(text: &str, pos: usize) -> (u32, u32) {
    let pos = pos.min(text.len());
    let before = &text.as_bytes()[..pos];
    let line = before.iter().filter(|&&b| b == b'\n').count() as u32 + 1;
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let col = text[line_start..pos].chars().count() as u32 + 1;
    (line, col)
}

/// Line starts of a text, so that the location of every instruction is a binary search
/// rather than a scan from the start (which made parsing quadratic).
pub(super) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.bytes().enumerate().filter(|&(_, b)| b == b'\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// Same answer as [`line_col`].
    pub fn line_col(&self, text: &str, pos: usize) -> (u32, u32) {
        let pos = pos.min(text.len());
        let line = self.starts.partition_point(|&s| s <= pos); // 1-based
        let line_start = self.starts[line - 1];
        let col = text.get(line_start..pos).map_or(0, |s| s.chars().count()) as u32 + 1;
        (line as u32, col)
    }
}

pub(super) fn error_at(text: &str, pos: usize, msg: impl Into<String>) -> ParseError {
    let (line, col) = line_col(text, pos);
    ParseError::new(line, col, msg)
}

pub(super) fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

impl<'a> Cur<'a> {
    pub fn new(text: &'a str) -> Cur<'a> {
        Cur { text, pos: 0, end: text.len() }
    }

    /// A cursor over `text[start..end]` (positions stay absolute).
    pub fn sub(text: &'a str, start: usize, end: usize) -> Cur<'a> {
        Cur { text, pos: start, end }
    }

    pub fn err(&self, msg: impl Into<String>) -> ParseError {
        error_at(self.text, self.pos, msg)
    }

    pub fn err_at(&self, pos: usize, msg: impl Into<String>) -> ParseError {
        error_at(self.text, pos, msg)
    }

    pub fn peek(&self) -> Option<u8> {
        if self.pos < self.end {
            Some(self.text.as_bytes()[self.pos])
        } else {
            None
        }
    }

    pub fn peek_at(&self, k: usize) -> Option<u8> {
        if self.pos + k < self.end {
            Some(self.text.as_bytes()[self.pos + k])
        } else {
            None
        }
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.end
    }

    pub fn rest(&self) -> &'a str {
        &self.text[self.pos..self.end]
    }

    /// Skips spaces, newlines and `/* ... */` or `// ...` comments.
    pub fn ws(&mut self) {
        loop {
            match self.peek() {
                Some(c) if c.is_ascii_whitespace() => self.pos += 1,
                Some(b'/') if self.peek_at(1) == Some(b'*') => match self.rest()[2..].find("*/") {
                    Some(i) => self.pos += i + 4,
                    None => self.pos = self.end,
                },
                Some(b'/') if self.peek_at(1) == Some(b'/') => {
                    while let Some(c) = self.peek() {
                        if c == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                _ => return,
            }
        }
    }

    /// Skips whitespace, then consumes `c` if it is next.
    pub fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub fn eat_str(&mut self, s: &str) -> bool {
        self.ws();
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    pub fn expect(&mut self, c: u8) -> Result<(), ParseError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.err(format!("expected `{}`, found {}", c as char, self.describe())))
        }
    }

    pub fn expect_str(&mut self, s: &str) -> Result<(), ParseError> {
        if self.eat_str(s) {
            Ok(())
        } else {
            Err(self.err(format!("expected `{s}`, found {}", self.describe())))
        }
    }

    /// A short description of what comes next, for error messages.
    pub fn describe(&self) -> String {
        let rest = self.rest();
        if rest.is_empty() {
            return "end of input".to_string();
        }
        let word: String = rest.chars().take_while(|c| !c.is_whitespace()).take(20).collect();
        if word.is_empty() {
            format!("`{}`", rest.chars().next().unwrap_or(' '))
        } else {
            format!("`{word}`")
        }
    }

    /// A name (`add.3`, `get-tuple-element`, `fused_computation.1`), possibly empty.
    pub fn word(&mut self) -> &'a str {
        self.ws();
        let start = self.pos;
        while let Some(c) = self.peek() {
            if !is_name_char(c) {
                break;
            }
            self.pos += 1;
        }
        &self.text[start..self.pos]
    }

    /// An instruction or computation name, with or without its `%` sigil.
    pub fn name(&mut self, what: &str) -> Result<&'a str, ParseError> {
        self.ws();
        let at = self.pos;
        self.eat(b'%');
        let w = self.word();
        if w.is_empty() {
            return Err(self.err_at(at, format!("expected {what}, found {}", self.describe())));
        }
        Ok(w)
    }

    /// A (possibly negative) decimal integer.
    pub fn int(&mut self) -> Result<i64, ParseError> {
        self.ws();
        let start = self.pos;
        if matches!(self.peek(), Some(b'-') | Some(b'+')) {
            self.pos += 1;
        }
        while matches!(self.peek(), Some(c) if c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.text[start..self.pos].parse::<i64>().map_err(|_| {
            self.err_at(start, format!("expected an integer, found {}", Cur { pos: start, ..*self }.describe()))
        })
    }

    /// `{1,0}` or `{}`: a list of integers in braces.
    pub fn int_list(&mut self) -> Result<Vec<i64>, ParseError> {
        self.expect(b'{')?;
        let mut out = Vec::new();
        if self.eat(b'}') {
            return Ok(out);
        }
        loop {
            out.push(self.int()?);
            if self.eat(b'}') {
                return Ok(out);
            }
            self.expect(b',')?;
        }
    }

    /// A double-quoted string with C escapes, returned unescaped.
    pub fn string(&mut self) -> Result<String, ParseError> {
        self.ws();
        if self.peek() != Some(b'"') {
            return Err(self.err(format!("expected a string, found {}", self.describe())));
        }
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        let rest = &self.text[self.pos..self.end];
        let mut chars = rest.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((_, e)) => out.push(e),
                    None => break,
                },
                c => out.push(c),
            }
        }
        Err(self.err_at(start, "unterminated string"))
    }

    /// Skips one balanced value: up to a `,` at nesting depth 0, a newline, or an
    /// unmatched closing bracket. Strings are skipped whole. Returns the trimmed span.
    pub fn balanced_value(&mut self) -> Result<(usize, usize), ParseError> {
        // Leading spaces only; a newline right after `=` would end the value.
        while matches!(self.peek(), Some(b' ') | Some(b'\t')) {
            self.pos += 1;
        }
        let start = self.pos;
        let mut closers: Vec<u8> = Vec::new();
        while let Some(c) = self.peek() {
            match c {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'{' => closers.push(b'}'),
                b'[' => closers.push(b']'),
                b'(' => closers.push(b')'),
                b'}' | b']' | b')' => match closers.pop() {
                    None => break,
                    Some(want) if want != c => {
                        return Err(self.err(format!("expected `{}`, found `{}`", want as char, c as char)));
                    }
                    Some(_) => {}
                },
                b'\n' => break,
                b',' if closers.is_empty() => break,
                _ => {}
            }
            self.pos += 1;
        }
        if let Some(want) = closers.last() {
            return Err(self.err(format!("expected `{}` before the end of the line", *want as char)));
        }
        let mut end = self.pos;
        while end > start && self.text.as_bytes()[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        Ok((start, end))
    }

    /// Skips balanced brackets starting at the opening one.
    pub fn skip_group(&mut self) -> Result<(), ParseError> {
        self.ws();
        let start = self.pos;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'{' | b'[' | b'(' => depth += 1,
                b'}' | b']' | b')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.pos += 1;
                        return Ok(());
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
        Err(self.err_at(start, "unbalanced brackets"))
    }

    /// Does a shape start here (`f32[`, `token[`, or a tuple `(`)?
    pub fn at_type(&self) -> bool {
        let mut c = *self;
        c.ws();
        if c.peek() == Some(b'(') {
            return true;
        }
        let w = c.word();
        c.peek() == Some(b'[') && (w == "token" || ElementType::from_hlo_name(w).is_some() || is_unsupported_elem(w))
    }

    /// A type: `f32[2,3]{1,0}`, `pred[]`, `(f32[], s32[2])`, `token[]`.
    pub fn ty(&mut self) -> Result<Type, ParseError> {
        self.ty_nested(0)
    }

    /// A type inside `depth` tuples: deeper than [`MAX_TUPLE_DEPTH`] is an error, not a
    /// stack overflow.
    fn ty_nested(&mut self, depth: usize) -> Result<Type, ParseError> {
        self.ws();
        if self.eat(b'(') {
            if depth >= MAX_TUPLE_DEPTH {
                return Err(
                    self.err_at(self.pos - 1, format!("tuple types nested deeper than {MAX_TUPLE_DEPTH} levels"))
                );
            }
            let mut elems = Vec::new();
            if self.eat(b')') {
                return Ok(Type::Tuple(elems));
            }
            loop {
                elems.push(self.ty_nested(depth + 1)?);
                if self.eat(b')') {
                    return Ok(Type::Tuple(elems));
                }
                self.expect(b',')?;
            }
        }
        let at = self.pos;
        let w = self.word();
        if w == "token" {
            self.expect(b'[')?;
            self.expect(b']')?;
            return Ok(Type::Token);
        }
        let elem = match ElementType::from_hlo_name(w) {
            Some(e) => e,
            None if is_unsupported_elem(w) => {
                return Err(self.err_at(at, format!("unsupported element type `{w}`")));
            }
            None => {
                return Err(self.err_at(at, format!("expected a shape, found {}", Cur { pos: at, ..*self }.describe())))
            }
        };
        self.expect(b'[')?;
        let mut dims = Vec::new();
        if !self.eat(b']') {
            loop {
                self.ws();
                if matches!(self.peek(), Some(b'<') | Some(b'?')) {
                    return Err(self.err("dynamic dimensions are not supported"));
                }
                let d = self.int()?;
                if d < 0 {
                    return Err(self.err("negative dimension size"));
                }
                dims.push(d);
                if self.eat(b']') {
                    break;
                }
                self.expect(b',')?;
            }
        }
        let mut shape = Shape::new(elem, dims);
        // Refused here, at the shape, before anything (a constant's literal) is sized
        // from it; the same limit as the StableHLO reader's and the verifier's.
        crate::limits::Limits::default().check_shape(&shape).map_err(|m| self.err_at(at, m))?;
        // A layout follows directly (no space): `{1,0}` or `{1,0:T(8,128)}`.
        if self.peek() == Some(b'{') {
            shape.layout = Some(self.layout(shape.rank())?);
        }
        Ok(Type::Array(shape))
    }

    /// `{1,0}` with an optional `:...` suffix (tiling, memory space), which is ignored.
    fn layout(&mut self, rank: usize) -> Result<Vec<i64>, ParseError> {
        let at = self.pos;
        self.expect(b'{')?;
        let mut m2m = Vec::new();
        loop {
            self.ws();
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                Some(b':') => {
                    // Skip to the matching `}`.
                    let mut depth = 0i32;
                    while let Some(c) = self.peek() {
                        match c {
                            b'(' | b'{' => depth += 1,
                            b')' => depth -= 1,
                            b'}' if depth == 0 => break,
                            b'}' => depth -= 1,
                            _ => {}
                        }
                        self.pos += 1;
                    }
                }
                Some(b',') => self.pos += 1,
                Some(c) if c.is_ascii_digit() => m2m.push(self.int()?),
                _ => return Err(self.err(format!("bad layout: unexpected {}", self.describe()))),
            }
        }
        let mut sorted = m2m.clone();
        sorted.sort_unstable();
        if sorted != (0..rank as i64).collect::<Vec<_>>() {
            return Err(self.err_at(at, format!("layout {m2m:?} is not a permutation of the {rank} dimensions")));
        }
        Ok(m2m)
    }

    /// A constant's literal for an array shape: a scalar, or nested `{...}` lists.
    pub fn literal(&mut self, shape: &Shape) -> Result<Literal, ParseError> {
        self.ws();
        // Old XLA printed the shape again inside: `constant(f32[2] {1, 2})`.
        if self.at_type() && self.peek() != Some(b'(') {
            self.ty()?;
        }
        self.ws();
        let at = self.pos;
        let mut values: Vec<(usize, &'a str)> = Vec::new();
        if self.peek() == Some(b'{') {
            self.literal_list(shape, 0, &mut values)?;
        } else {
            values.push(self.literal_token()?);
        }
        let n = shape.num_elements();
        if values.len() != n {
            return Err(self.err_at(at, format!("constant has {} elements, its shape {shape} needs {n}", values.len())));
        }
        let mut data = Data::with_capacity(shape.elem, n);
        for (pos, tok) in values {
            push_element(self.text, pos, tok, shape.elem, &mut data)?;
        }
        Ok(Literal { shape: Shape { layout: None, ..shape.clone() }, data })
    }

    fn literal_list(&mut self, shape: &Shape, depth: usize, out: &mut Vec<(usize, &'a str)>) -> Result<(), ParseError> {
        let at = self.pos;
        self.expect(b'{')?;
        if self.eat_str("...") {
            return Err(self.err_at(at, "constant elided as `{...}`; dump with print_large_constants"));
        }
        if depth >= shape.rank().max(1) {
            return Err(self.err_at(at, "constant nested deeper than its shape"));
        }
        let mut count = 0usize;
        if !self.eat(b'}') {
            loop {
                self.ws();
                if self.peek() == Some(b'{') {
                    self.literal_list(shape, depth + 1, out)?;
                } else {
                    out.push(self.literal_token()?);
                }
                count += 1;
                if self.eat(b'}') {
                    break;
                }
                self.expect(b',')?;
            }
        }
        if shape.rank() > 0 && count as i64 != shape.dims[depth] && shape.num_elements() > 0 {
            return Err(self.err_at(
                at,
                format!("constant list has {count} entries, dimension {depth} of {shape} is {}", shape.dims[depth]),
            ));
        }
        Ok(())
    }

    /// One scalar token: `1`, `-2.5e-3`, `inf`, `-nan`, `nan(0x1)`, `true`.
    fn literal_token(&mut self) -> Result<(usize, &'a str), ParseError> {
        self.ws();
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'+' | b'_') {
                self.pos += 1;
            } else if c == b'(' && self.text[start..self.pos].ends_with("nan") {
                // `nan(0x...)`: a payload.
                while let Some(c) = self.peek() {
                    self.pos += 1;
                    if c == b')' {
                        break;
                    }
                }
            } else {
                break;
            }
        }
        if self.pos == start {
            return Err(self.err(format!("expected a constant value, found {}", self.describe())));
        }
        Ok((start, &self.text[start..self.pos]))
    }
}

/// Element type names XLA has but hloscope does not support (to say so precisely).
fn is_unsupported_elem(w: &str) -> bool {
    matches!(w, "c64" | "c128" | "s1" | "s2" | "s4" | "u1" | "u2" | "u4" | "f4e2m1fn" | "f8e8m0fnu" | "opaque")
        || w.starts_with("f8e")
        || w.starts_with("f6e")
}

/// Parses one literal element into `data` (carrier chosen by `elem`).
fn push_element(text: &str, pos: usize, tok: &str, elem: ElementType, data: &mut Data) -> Result<(), ParseError> {
    let bad = || error_at(text, pos, format!("bad {elem} constant `{tok}`"));
    match data {
        Data::Pred(v) => v.push(match tok {
            "true" | "1" => true,
            "false" | "0" => false,
            _ => return Err(bad()),
        }),
        Data::S(v) => {
            let x: i128 = tok.parse().map_err(|_| bad())?;
            let max = (1i128 << (elem.bit_width() - 1)) - 1;
            if x < -max - 1 || x > max {
                return Err(error_at(text, pos, format!("constant {tok} out of range for {elem}")));
            }
            v.push(wrap_signed(elem, x as i64));
        }
        Data::U(v) => {
            let x: u64 = tok.parse().map_err(|_| bad())?;
            if wrap_unsigned(elem, x) != x {
                return Err(error_at(text, pos, format!("constant {tok} out of range for {elem}")));
            }
            v.push(x);
        }
        Data::F(v) => v.push(parse_float(tok, elem).ok_or_else(bad)?),
    }
    Ok(())
}

/// Parses a float as XLA prints it, rounded once to `elem` (`inf`, `-nan`, `nan(0x7)`).
pub(super) fn parse_float(tok: &str, elem: ElementType) -> Option<f64> {
    let (neg, body) = match tok.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, tok.strip_prefix('+').unwrap_or(tok)),
    };
    let sign = if neg { -1.0 } else { 1.0 };
    if body == "inf" {
        return Some(sign * f64::INFINITY);
    }
    if let Some(rest) = body.strip_prefix("nan") {
        let mantissa_bits = mantissa_bits(elem);
        let quiet = 1u64 << (mantissa_bits - 1);
        let payload = if rest.is_empty() {
            quiet
        } else {
            let hex = rest.strip_prefix("(0x")?.strip_suffix(')')?;
            u64::from_str_radix(hex, 16).ok()?
        };
        if payload == 0 || payload >> mantissa_bits != 0 {
            return None;
        }
        let width = elem.bit_width();
        let exp_mask = ((1u64 << (width - 1 - mantissa_bits)) - 1) << mantissa_bits;
        let sign_bit = if neg { 1u64 << (width - 1) } else { 0 };
        return Some(float_from_bits(elem, sign_bit | exp_mask | payload));
    }
    if !body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    // Parse at the target precision where Rust can (no double rounding); f16 and bf16
    // go through f32, which holds every decimal XLA prints for them closely enough.
    let v = match elem {
        ElementType::F64 => tok.parse::<f64>().ok()?,
        _ => tok.parse::<f32>().ok()? as f64,
    };
    Some(round_float(elem, v))
}

/// Explicit mantissa bits of a float type.
fn mantissa_bits(elem: ElementType) -> u32 {
    match elem {
        ElementType::F16 => 10,
        ElementType::BF16 => 7,
        ElementType::F32 => 23,
        _ => 52,
    }
}

#[cfg(test)]
mod line_index_tests {
    use super::*;

    #[test]
    fn line_index_agrees_with_the_scan() {
        let text = "ab\n\nçd e\nlast";
        let index = LineIndex::new(text);
        for pos in (0..=text.len()).filter(|&p| text.is_char_boundary(p)) {
            assert_eq!(index.line_col(text, pos), line_col(text, pos), "at byte {pos}");
        }
        assert_eq!(index.line_col(text, text.len()), (4, 5));
    }
}
