//! Character-level cursor over MLIR text: whitespace and comments, identifiers, value
//! and symbol names, numbers, strings, punctuation, balanced skipping, and line:col.
//!
//! MLIR's grammar is context-sensitive in small ways (`tensor<2x3xf32>` must not be
//! read as the integer 2 followed by the identifier `x3xf32`), so the parser pulls
//! tokens on demand from this cursor instead of from a pre-lexed token stream.

use crate::parse::ParseError;
use smallvec::SmallVec;

/// Deepest nesting (regions, attribute lists, literals, types) the parser accepts.
pub const MAX_DEPTH: u32 = 200;

/// Maps byte offsets to 1-based line and column (columns count characters).
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(src: &str) -> LineIndex {
        // `match_indices` of a char searches with `memchr`, a word at a time.
        let starts = std::iter::once(0).chain(src.match_indices('\n').map(|(i, _)| i + 1)).collect();
        LineIndex { starts }
    }

    /// The 0-based line of offset `pos`.
    pub fn line_of(&self, pos: usize) -> usize {
        self.starts.partition_point(|&s| s <= pos).saturating_sub(1)
    }

    pub fn line_col(&self, src: &str, pos: usize) -> (u32, u32) {
        let pos = pos.min(src.len());
        let line = self.line_of(pos);
        let start = self.starts[line];
        let col = src.get(start..pos).map(|s| s.chars().count()).unwrap_or(pos - start);
        (line as u32 + 1, col as u32 + 1)
    }
}

/// A number as written: kept as text so that each element type can read it exactly.
#[derive(Clone, Debug, PartialEq)]
pub enum Number {
    /// Decimal integer (sign included).
    Int(i128),
    /// Decimal float text (`1.5e-3`, `-0.0`, `inf`, `nan`).
    Float(String),
    /// `0x...`: a bit pattern (for floats) or an integer value (for integers).
    Hex(u128),
}

impl Number {
    pub fn as_f64(&self) -> f64 {
        match self {
            Number::Int(v) => *v as f64,
            Number::Float(t) => t.parse::<f64>().unwrap_or(f64::NAN),
            Number::Hex(v) => *v as f64,
        }
    }
}

/// The bytes [`Cursor::skip_balanced`] looks at: brackets, a string's quote, and the
/// first byte of `//` and `->`.
static BALANCED_STOPS: [bool; 256] = {
    let mut stops = [false; 256];
    let bytes = *b"([{<)]}>\"/-";
    let mut i = 0;
    while i < bytes.len() {
        stops[bytes[i] as usize] = true;
        i += 1;
    }
    stops
};

pub struct Cursor<'a> {
    pub src: &'a str,
    bytes: &'a [u8],
    pub pos: usize,
    lines: LineIndex,
    pub depth: u32,
    /// Tensor types read so far, by their text (`types::parse_type`): a module spells
    /// the same few types over and over. The keys are the input's own text, so the map
    /// keeps a randomly seeded hasher (foldhash's, as the value names' maps: SipHash
    /// was 1.5% of a parse).
    pub tensor_types: std::collections::HashMap<&'a str, crate::ir::Type, foldhash::fast::RandomState>,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}
fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.'
}
/// Characters of a value name after `%` (`%arg0`, `%iterArg_1`, `%0`).
fn is_value_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.' || b == b'-'
}

impl<'a> Cursor<'a> {
    pub fn new(src: &'a str) -> Cursor<'a> {
        Cursor {
            src,
            bytes: src.as_bytes(),
            pos: 0,
            lines: LineIndex::new(src),
            depth: 0,
            tensor_types: Default::default(),
        }
    }

    pub fn line_index(&self) -> &LineIndex {
        &self.lines
    }

    pub fn line_col(&self, pos: usize) -> (u32, u32) {
        self.lines.line_col(self.src, pos)
    }

    pub fn err_at(&self, pos: usize, msg: impl Into<String>) -> ParseError {
        let (l, c) = self.line_col(pos);
        ParseError::new(l, c, msg)
    }

    /// An error at the next token, naming what was expected and what is there.
    pub fn expected(&mut self, what: &str) -> ParseError {
        self.skip_ws();
        let found = self.peek_snippet();
        self.err_at(self.pos, format!("expected {what}, found {found}"))
    }

    fn peek_snippet(&self) -> String {
        let rest = &self.src[self.pos..];
        if rest.is_empty() {
            return "end of input".to_string();
        }
        let s: String = rest.chars().take_while(|c| !c.is_whitespace()).take(20).collect();
        if s.is_empty() {
            "whitespace".to_string()
        } else {
            format!("`{s}`")
        }
    }

    /// Enters one nesting level; errors past `MAX_DEPTH`.
    pub fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err_at(self.pos, format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }
    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    pub fn skip_ws(&mut self) {
        loop {
            while self.pos < self.bytes.len() && self.bytes[self.pos].is_ascii_whitespace() {
                self.pos += 1;
            }
            if self.bytes[self.pos..].starts_with(b"//") {
                while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                    self.pos += 1;
                }
                continue;
            }
            break;
        }
    }

    pub fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.pos >= self.bytes.len()
    }

    /// The next byte after whitespace, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.pos).copied()
    }
    /// The byte `n` after the current position (no whitespace skipping).
    pub fn peek_raw(&self, n: usize) -> Option<u8> {
        self.bytes.get(self.pos + n).copied()
    }

    pub fn starts_with(&mut self, s: &str) -> bool {
        self.skip_ws();
        self.src[self.pos..].starts_with(s)
    }

    /// Consumes the punctuation `s` if it comes next.
    pub fn eat(&mut self, s: &str) -> bool {
        if self.starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    pub fn expect(&mut self, s: &str) -> Result<(), ParseError> {
        if self.eat(s) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{s}`")))
        }
    }

    /// True if the keyword `kw` comes next as a whole word.
    pub fn peek_kw(&mut self, kw: &str) -> bool {
        if !self.starts_with(kw) {
            return false;
        }
        !self.bytes.get(self.pos + kw.len()).is_some_and(|&b| is_ident_char(b))
    }

    pub fn eat_kw(&mut self, kw: &str) -> bool {
        if self.peek_kw(kw) {
            self.pos += kw.len();
            true
        } else {
            false
        }
    }

    pub fn expect_kw(&mut self, kw: &str) -> Result<(), ParseError> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{kw}`")))
        }
    }

    /// A bare identifier (`stablehlo.add`, `dims`, `LT`), if one comes next.
    pub fn ident(&mut self) -> Option<&'a str> {
        self.skip_ws();
        let start = self.pos;
        if !self.bytes.get(start).is_some_and(|&b| is_ident_start(b)) {
            return None;
        }
        let mut end = start + 1;
        while end < self.bytes.len() && is_ident_char(self.bytes[end]) {
            end += 1;
        }
        self.pos = end;
        Some(&self.src[start..end])
    }

    pub fn peek_ident(&mut self) -> Option<&'a str> {
        let save = self.pos;
        let id = self.ident();
        self.pos = save;
        id
    }

    pub fn expect_ident(&mut self, what: &str) -> Result<&'a str, ParseError> {
        match self.ident() {
            Some(id) => Ok(id),
            None => Err(self.expected(what)),
        }
    }

    /// Reads `%name` (without the `%`), if next.
    pub fn value_name(&mut self) -> Option<&'a str> {
        self.skip_ws();
        if self.bytes.get(self.pos) != Some(&b'%') {
            return None;
        }
        let start = self.pos + 1;
        let mut end = start;
        while end < self.bytes.len() && is_value_char(self.bytes[end]) {
            end += 1;
        }
        if end == start {
            return None;
        }
        self.pos = end;
        Some(&self.src[start..end])
    }

    /// Reads `^bb0`-style block labels (without the `^`).
    pub fn block_label(&mut self) -> Option<&'a str> {
        self.skip_ws();
        if self.bytes.get(self.pos) != Some(&b'^') {
            return None;
        }
        let start = self.pos + 1;
        let mut end = start;
        while end < self.bytes.len() && is_value_char(self.bytes[end]) {
            end += 1;
        }
        self.pos = end;
        Some(&self.src[start..end])
    }

    /// Reads `@name` or `@"quoted name"` (without the `@`).
    pub fn symbol(&mut self) -> Result<Option<String>, ParseError> {
        self.skip_ws();
        if self.bytes.get(self.pos) != Some(&b'@') {
            return Ok(None);
        }
        self.pos += 1;
        if self.bytes.get(self.pos) == Some(&b'"') {
            return self.string().map(Some);
        }
        let start = self.pos;
        let mut end = start;
        while end < self.bytes.len() && (is_ident_char(self.bytes[end]) || self.bytes[end] == b'-') {
            end += 1;
        }
        if end == start {
            return Err(self.err_at(start, "expected a symbol name after `@`"));
        }
        self.pos = end;
        Ok(Some(self.src[start..end].to_string()))
    }

    /// A double-quoted string with MLIR escapes (`\"`, `\\`, `\n`, `\t`, `\XX`).
    pub fn string(&mut self) -> Result<String, ParseError> {
        self.skip_ws();
        let start = self.pos;
        if self.bytes.get(self.pos) != Some(&b'"') {
            return Err(self.expected("a string"));
        }
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(self.err_at(start, "unterminated string"));
            };
            self.pos += 1;
            match b {
                b'"' => break,
                b'\n' => return Err(self.err_at(start, "unterminated string")),
                b'\\' => {
                    let Some(&e) = self.bytes.get(self.pos) else {
                        return Err(self.err_at(start, "unterminated string"));
                    };
                    self.pos += 1;
                    match e {
                        b'"' | b'\\' => out.push(e),
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        _ => {
                            let hi = (e as char).to_digit(16);
                            let lo = self.bytes.get(self.pos).and_then(|&c| (c as char).to_digit(16));
                            match (hi, lo) {
                                (Some(h), Some(l)) => {
                                    self.pos += 1;
                                    out.push((h * 16 + l) as u8);
                                }
                                _ => return Err(self.err_at(self.pos - 2, "bad escape in string")),
                            }
                        }
                    }
                }
                _ => out.push(b),
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// True if a number (optionally signed) comes next.
    pub fn peek_number(&mut self) -> bool {
        self.skip_ws();
        let mut i = self.pos;
        if matches!(self.bytes.get(i), Some(b'-') | Some(b'+')) {
            i += 1;
        }
        self.bytes.get(i).is_some_and(|b| b.is_ascii_digit())
    }

    /// Reads an integer or float literal; `allow_words` also accepts `inf`/`nan`
    /// spellings (inside `dense<...>`).
    pub fn number(&mut self, allow_words: bool) -> Result<Number, ParseError> {
        self.skip_ws();
        let start = self.pos;
        let mut i = self.pos;
        let neg = match self.bytes.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        if allow_words {
            let rest = &self.src[i..];
            for word in ["infinity", "inf", "nan", "NaN"] {
                if rest.starts_with(word) && !rest.as_bytes().get(word.len()).is_some_and(|&b| is_ident_char(b)) {
                    self.pos = i + word.len();
                    let text = if word.starts_with('i') { "inf" } else { "NaN" };
                    let text = if neg { format!("-{text}") } else { text.to_string() };
                    return Ok(Number::Float(text));
                }
            }
        }
        if !self.bytes.get(i).is_some_and(|b| b.is_ascii_digit()) {
            return Err(self.expected("a number"));
        }
        if self.bytes[i..].starts_with(b"0x") || self.bytes[i..].starts_with(b"0X") {
            let hs = i + 2;
            let mut e = hs;
            while e < self.bytes.len() && self.bytes[e].is_ascii_hexdigit() {
                e += 1;
            }
            if e == hs || e - hs > 32 {
                return Err(self.err_at(start, "bad hexadecimal literal"));
            }
            self.pos = e;
            let v = u128::from_str_radix(&self.src[hs..e], 16)
                .map_err(|_| self.err_at(start, "bad hexadecimal literal"))?;
            if neg {
                // `-0x..` is an integer value; keep it as a signed decimal.
                return Ok(Number::Int(-(v.min(i128::MAX as u128) as i128)));
            }
            return Ok(Number::Hex(v));
        }
        let mut e = i;
        while e < self.bytes.len() && self.bytes[e].is_ascii_digit() {
            e += 1;
        }
        let mut is_float = false;
        if self.bytes.get(e) == Some(&b'.') {
            is_float = true;
            e += 1;
            while e < self.bytes.len() && self.bytes[e].is_ascii_digit() {
                e += 1;
            }
        }
        if matches!(self.bytes.get(e), Some(b'e') | Some(b'E')) {
            let mut k = e + 1;
            if matches!(self.bytes.get(k), Some(b'-') | Some(b'+')) {
                k += 1;
            }
            if self.bytes.get(k).is_some_and(|b| b.is_ascii_digit()) {
                is_float = true;
                e = k;
                while e < self.bytes.len() && self.bytes[e].is_ascii_digit() {
                    e += 1;
                }
            }
        }
        self.pos = e;
        let text = &self.src[start..e];
        if is_float {
            Ok(Number::Float(text.to_string()))
        } else {
            text.parse::<i128>()
                .map(Number::Int)
                .map_err(|_| self.err_at(start, format!("integer `{text}` out of range")))
        }
    }

    /// A signed integer that fits in i64.
    pub fn int(&mut self) -> Result<i64, ParseError> {
        self.skip_ws();
        let start = self.pos;
        match self.number(false)? {
            Number::Int(v) => i64::try_from(v).map_err(|_| self.err_at(start, "integer out of range")),
            Number::Hex(v) => i64::try_from(v).map_err(|_| self.err_at(start, "integer out of range")),
            Number::Float(_) => Err(self.err_at(start, "expected an integer")),
        }
    }

    /// Skips a balanced group starting at one of `( [ { <` (strings and `//` comments
    /// respected, `->` is not a closing `>`), returning its text.
    pub fn skip_balanced(&mut self) -> Result<&'a str, ParseError> {
        self.skip_ws();
        let start = self.pos;
        let mut stack: SmallVec<[u8; 16]> = SmallVec::new();
        loop {
            // Inside the group, most bytes are none of the ones below: step over them in
            // one scan (a `main` body of a deep model is skipped this way whole).
            if !stack.is_empty() {
                let rest = self.bytes.get(self.pos..).unwrap_or_default();
                self.pos += rest.iter().position(|&b| BALANCED_STOPS[b as usize]).unwrap_or(rest.len());
            }
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(self.err_at(start, "unbalanced brackets"));
            };
            match b {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'/' if self.bytes.get(self.pos + 1) == Some(&b'/') => {
                    self.skip_ws();
                    continue;
                }
                b'(' | b'[' | b'{' | b'<' => {
                    stack.push(b);
                    if stack.len() > MAX_DEPTH as usize {
                        return Err(self.err_at(self.pos, format!("nesting deeper than {MAX_DEPTH} levels")));
                    }
                }
                b'-' if self.bytes.get(self.pos + 1) == Some(&b'>') => {
                    self.pos += 2;
                    continue;
                }
                b')' | b']' | b'}' | b'>' => {
                    let open = match b {
                        b')' => b'(',
                        b']' => b'[',
                        b'}' => b'{',
                        _ => b'<',
                    };
                    if stack.last() != Some(&open) {
                        return Err(self.err_at(self.pos, format!("unbalanced `{}`", b as char)));
                    }
                    stack.pop();
                }
                _ => {}
            }
            self.pos += 1;
            if stack.is_empty() {
                return Ok(&self.src[start..self.pos]);
            }
        }
    }
}
