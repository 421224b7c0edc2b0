//! A small JSON value, parser and encoder: what the ABI needs, without
//! crates.io. Strings without escapes borrow the input; nesting is bounded
//! (a hostile request cannot exhaust the guest's stack).

use std::borrow::Cow;
use std::fmt::Write as _;

/// The deepest nesting of arrays and objects the parser accepts.
pub const MAX_DEPTH: usize = 128;

/// A JSON value. Strings borrow the text they were parsed from when they
/// hold no escape; an object keeps its members in order (duplicates and
/// all; `get` finds the last, as a map would keep it).
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    /// A number, kept as its JSON text (exact for big integers).
    Number(Cow<'a, str>),
    String(Cow<'a, str>),
    Array(Vec<Value<'a>>),
    Object(Vec<(Cow<'a, str>, Value<'a>)>),
}

impl<'a> Value<'a> {
    /// The member called `key` of an object (the last one, when given twice).
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Object(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.parse().ok(),
            _ => None,
        }
    }
    /// The number as an i64, when it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.parse().ok().or_else(|| {
                let f: f64 = n.parse().ok()?;
                if f.fract() == 0.0 && f >= -9.2e18 && f <= 9.2e18 {
                    Some(f as i64)
                } else {
                    None
                }
            }),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    pub fn as_array(&self) -> Option<&[Value<'a>]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    pub fn as_object(&self) -> Option<&[(Cow<'a, str>, Value<'a>)]> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A string value that owns its text.
    pub fn string(s: impl Into<String>) -> Value<'static> {
        Value::String(Cow::Owned(s.into()))
    }
    /// A number value; NaN and the infinities are not JSON and become null.
    pub fn number(f: f64) -> Value<'static> {
        if !f.is_finite() {
            return Value::Null;
        }
        Value::Number(Cow::Owned(format_f64(f)))
    }
    pub fn integer(i: i64) -> Value<'static> {
        Value::Number(Cow::Owned(i.to_string()))
    }
    /// An object from owned keys and values.
    pub fn object<K: Into<String>>(members: impl IntoIterator<Item = (K, Value<'static>)>) -> Value<'static> {
        Value::Object(members.into_iter().map(|(k, v)| (Cow::Owned(k.into()), v)).collect())
    }

    /// The value with everything it borrows copied.
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(b),
            Value::Number(n) => Value::Number(Cow::Owned(n.into_owned())),
            Value::String(s) => Value::String(Cow::Owned(s.into_owned())),
            Value::Array(a) => Value::Array(a.into_iter().map(Value::into_owned).collect()),
            Value::Object(m) => Value::Object(
                m.into_iter().map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned())).collect(),
            ),
        }
    }

    /// Appends the value's JSON to out.
    pub fn write_json(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(true) => out.push_str("true"),
            Value::Bool(false) => out.push_str("false"),
            Value::Number(n) => out.push_str(n),
            Value::String(s) => write_str(out, s),
            Value::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write_json(out);
                }
                out.push(']');
            }
            Value::Object(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(out, k);
                    out.push(':');
                    v.write_json(out);
                }
                out.push('}');
            }
        }
    }

    /// The value's JSON.
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        self.write_json(&mut s);
        s
    }
}

/// Appends a finite f64 as JSON (integers without a fraction), as
/// `format_f64` does, without a String of its own when it is an integer.
pub(crate) fn write_f64(out: &mut String, f: f64) {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        let _ = write!(out, "{}", f as i64);
    } else {
        out.push_str(&format_f64(f));
    }
}

/// Formats a finite f64 as JSON (integers without a fraction).
pub(crate) fn format_f64(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        let s = format!("{}", f);
        if s.contains('e') || s.contains('.') {
            s
        } else {
            s + ".0"
        }
    }
}

/// Appends s as a JSON string: quotes, backslashes and control characters
/// escaped, and U+2028/U+2029 too (so the output is safe in JavaScript).
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc: Option<&str> = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Why a text is not JSON, and where.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    pub offset: usize,
    pub message: &'static str,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid JSON at byte {}: {}", self.offset, self.message)
    }
}

/// Parses one JSON value (whitespace around it allowed, nothing else).
pub fn parse(text: &[u8]) -> Result<Value<'_>, ParseError> {
    let text = match std::str::from_utf8(text) {
        Ok(s) => s,
        Err(e) => return Err(ParseError { offset: e.valid_up_to(), message: "invalid UTF-8" }),
    };
    let mut p = Parser::new(text);
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != p.b.len() {
        return p.err("text after the value");
    }
    Ok(v)
}

/// Checks that text is one JSON value (whitespace around it allowed,
/// nothing else) without building it: the same errors as `parse`, at the
/// same offsets, and no allocation but for strings with escapes.
pub(crate) fn validate(text: &[u8]) -> Result<&str, ParseError> {
    let text = match std::str::from_utf8(text) {
        Ok(s) => s,
        Err(e) => return Err(ParseError { offset: e.valid_up_to(), message: "invalid UTF-8" }),
    };
    let mut p = Parser::new(text);
    p.ws();
    p.skip(0)?;
    p.ws();
    if p.i != p.b.len() {
        return p.err("text after the value");
    }
    Ok(text)
}

/// A pull decoder over JSON text: typed decoders read values straight
/// from the input, without a value tree. Strings without escapes borrow
/// the input; nesting is bounded by MAX_DEPTH.
pub(crate) struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(s: &'a str) -> Self {
        Parser { s, b: s.as_bytes(), i: 0 }
    }
    /// A parser at byte offset i of s.
    pub(crate) fn at(s: &'a str, i: usize) -> Self {
        Parser { s, b: s.as_bytes(), i }
    }
    /// The next byte after whitespace (the parser is left on it).
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }
    /// The byte offset the parser is at.
    pub(crate) fn offset(&self) -> usize {
        self.i
    }
    /// Reads a null if one is next, and says whether it was.
    pub(crate) fn null(&mut self) -> Result<bool, ParseError> {
        if self.peek() == Some(b'n') {
            self.lit("null", Value::Null)?;
            return Ok(true);
        }
        Ok(false)
    }
    /// Reads the string that is next (the caller checked for the quote).
    pub(crate) fn str(&mut self) -> Result<Cow<'a, str>, ParseError> {
        self.ws();
        self.string()
    }
    /// Reads the value that is next as a tree.
    pub(crate) fn tree(&mut self, depth: usize) -> Result<Value<'a>, ParseError> {
        self.ws();
        self.value(depth)
    }
    /// Skips the value that is next, checking it.
    pub(crate) fn skip_value(&mut self, depth: usize) -> Result<(), ParseError> {
        self.ws();
        self.skip(depth)
    }
    /// Reads the object that is next (the caller checked for the brace),
    /// calling f with each member's name and the parser on its value; f
    /// must read or skip the value.
    pub(crate) fn object<E: From<ParseError>>(
        &mut self,
        depth: usize,
        mut f: impl FnMut(&mut Self, Cow<'a, str>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.ws();
        if depth >= MAX_DEPTH {
            return Err(self.err::<()>("nested too deeply").unwrap_err().into());
        }
        self.i += 1;
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return Err(self.err::<()>("expected a member name").unwrap_err().into());
            }
            let k = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return Err(self.err::<()>("expected : after a member name").unwrap_err().into());
            }
            self.i += 1;
            self.ws();
            f(self, k)?;
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(self.err::<()>("expected , or } in an object").unwrap_err().into()),
            }
        }
    }
    /// Reads the array that is next (the caller checked for the bracket),
    /// calling f with the parser on each element; f must read or skip it.
    pub(crate) fn array<E: From<ParseError>>(
        &mut self,
        depth: usize,
        mut f: impl FnMut(&mut Self) -> Result<(), E>,
    ) -> Result<(), E> {
        self.ws();
        if depth >= MAX_DEPTH {
            return Err(self.err::<()>("nested too deeply").unwrap_err().into());
        }
        self.i += 1;
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            f(self)?;
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(self.err::<()>("expected , or ] in an array").unwrap_err().into()),
            }
        }
    }
    /// Skips one value, checking it as `value` would, without building it.
    fn skip(&mut self, depth: usize) -> Result<(), ParseError> {
        match self.b.get(self.i) {
            Some(b'"') => self.string().map(|_| ()),
            Some(b'[') => self.array(depth, |p: &mut Self| p.skip(depth + 1)),
            Some(b'{') => self.object(depth, |p: &mut Self, _| p.skip(depth + 1)),
            _ => self.value(depth).map(|_| ()),
        }
    }
    fn err<T>(&self, message: &'static str) -> Result<T, ParseError> {
        Err(ParseError { offset: self.i, message })
    }
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    fn lit(&mut self, word: &str, v: Value<'a>) -> Result<Value<'a>, ParseError> {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(v)
        } else {
            self.err("unexpected character")
        }
    }
    fn value(&mut self, depth: usize) -> Result<Value<'a>, ParseError> {
        match self.b.get(self.i) {
            None => self.err("unexpected end of input"),
            Some(b'n') => self.lit("null", Value::Null),
            Some(b't') => self.lit("true", Value::Bool(true)),
            Some(b'f') => self.lit("false", Value::Bool(false)),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b'-') | Some(b'0'..=b'9') => self.number(),
            Some(b'[') => {
                if depth >= MAX_DEPTH {
                    return self.err("nested too deeply");
                }
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Value::Array(a));
                }
                loop {
                    self.ws();
                    a.push(self.value(depth + 1)?);
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::Array(a));
                        }
                        _ => return self.err("expected , or ] in an array"),
                    }
                }
            }
            Some(b'{') => {
                if depth >= MAX_DEPTH {
                    return self.err("nested too deeply");
                }
                self.i += 1;
                let mut m = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Value::Object(m));
                }
                loop {
                    self.ws();
                    if self.b.get(self.i) != Some(&b'"') {
                        return self.err("expected a member name");
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.b.get(self.i) != Some(&b':') {
                        return self.err("expected : after a member name");
                    }
                    self.i += 1;
                    self.ws();
                    let v = self.value(depth + 1)?;
                    m.push((k, v));
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Value::Object(m));
                        }
                        _ => return self.err("expected , or } in an object"),
                    }
                }
            }
            Some(_) => self.err("unexpected character"),
        }
    }
    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        self.i - start
    }
    fn number(&mut self) -> Result<Value<'a>, ParseError> {
        let start = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.err("invalid number"),
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return self.err("invalid number");
            }
        }
        if matches!(self.b.get(self.i), Some(b'e') | Some(b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+') | Some(b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return self.err("invalid number");
            }
        }
        Ok(Value::Number(Cow::Borrowed(&self.s[start..self.i])))
    }
    fn hex4(&mut self) -> Result<u32, ParseError> {
        let h = match self.s.get(self.i..self.i + 4) {
            Some(h) => h,
            None => return self.err("invalid \\u escape"),
        };
        match u32::from_str_radix(h, 16) {
            Ok(n) if h.bytes().all(|c| c.is_ascii_hexdigit()) => {
                self.i += 4;
                Ok(n)
            }
            _ => self.err("invalid \\u escape"),
        }
    }
    fn string(&mut self) -> Result<Cow<'a, str>, ParseError> {
        self.i += 1; // the opening quote
        let start = self.i;
        // Fast path: no escape.
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'"' => {
                    let s = &self.s[start..self.i];
                    self.i += 1;
                    return Ok(Cow::Borrowed(s));
                }
                b'\\' => break,
                c if c < 0x20 => return self.err("control character in a string"),
                _ => self.i += 1,
            }
        }
        let mut out = String::from(&self.s[start..self.i]);
        loop {
            let c = match self.b.get(self.i) {
                None => return self.err("unterminated string"),
                Some(c) => *c,
            };
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok(Cow::Owned(out));
                }
                b'\\' => {
                    self.i += 1;
                    let e = match self.b.get(self.i) {
                        None => return self.err("unterminated string"),
                        Some(e) => *e,
                    };
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut n = self.hex4()?;
                            if (0xd800..0xdc00).contains(&n) && self.s[self.i..].starts_with("\\u") {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xdc00..0xe000).contains(&lo) {
                                    n = 0x10000 + ((n - 0xd800) << 10) + (lo - 0xdc00);
                                } else {
                                    self.i = save;
                                }
                            }
                            // A lone surrogate becomes U+FFFD, as in Go.
                            out.push(char::from_u32(n).unwrap_or('\u{fffd}'));
                        }
                        _ => {
                            self.i -= 1;
                            return self.err("invalid escape");
                        }
                    }
                }
                c if c < 0x20 => return self.err("control character in a string"),
                _ => {
                    // Copy up to the next quote or backslash (UTF-8 safe:
                    // both are ASCII).
                    let from = self.i;
                    while self.i < self.b.len() && !matches!(self.b[self.i], b'"' | b'\\') && self.b[self.i] >= 0x20 {
                        self.i += 1;
                    }
                    out.push_str(&self.s[from..self.i]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let src = r#"{"a":[1,-2.5e3,true,false,null],"b":"x\"\\\n\u00e9\ud83d\ude00","c":{}}"#;
        let v = parse(src.as_bytes()).unwrap();
        assert_eq!(v.get("b").unwrap().as_str().unwrap(), "x\"\\\n\u{e9}\u{1f600}");
        let text = v.to_json();
        let again = parse(text.as_bytes()).unwrap();
        assert_eq!(v, again);
    }

    #[test]
    fn refuses_bad_input() {
        for bad in ["", "{", "[1,]", "{\"a\"}", "01", "1.", "\"\\x\"", "\"a", "nul", "[1] 2", "\"\u{1}\""] {
            assert!(parse(bad.as_bytes()).is_err(), "{:?} parsed", bad);
        }
        assert!(parse(b"\"\xff\"").is_err());
    }

    #[test]
    fn bounds_depth() {
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        let e = parse(deep.as_bytes()).unwrap_err();
        assert_eq!(e.message, "nested too deeply");
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse(ok.as_bytes()).is_ok());
        // Far deeper input fails the same way, without exhausting the stack.
        let hostile = "{\"a\":".repeat(1 << 20);
        assert!(parse(hostile.as_bytes()).is_err());
    }

    #[test]
    fn escapes_output() {
        let mut s = String::new();
        write_str(&mut s, "a\u{1b}b\u{2028}\"");
        assert_eq!(s, "\"a\\u001bb\\u2028\\\"\"");
    }
}
