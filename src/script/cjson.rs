//! `cjson`: JSON encode/decode behaving like the lua-cjson 2.1.0 Redis
//! bundles (its number format, sparse-array rule, escapes and error texts).

use std::cell::Cell;
use std::ffi::c_int;

use super::lua::{self, ffi, push_bytes, push_str, to_bytes, State};

/// The module's settings (`cjson.encode_max_depth(...)` and friends).
#[derive(Clone, Copy)]
struct Config {
    sparse_convert: bool,
    sparse_ratio: i64,
    sparse_safe: i64,
    encode_max_depth: i64,
    decode_max_depth: i64,
    precision: i64,
    encode_invalid: i64,
    decode_invalid: bool,
    keep_buffer: bool,
}

const DEFAULT: Config = Config {
    sparse_convert: false,
    sparse_ratio: 2,
    sparse_safe: 10,
    encode_max_depth: 1000,
    decode_max_depth: 1000,
    precision: 14,
    encode_invalid: 0,
    decode_invalid: true,
    keep_buffer: true,
};

thread_local! {
    static CFG: Cell<Config> = const { Cell::new(DEFAULT) };
}

fn cfg() -> Config {
    CFG.with(|c| c.get())
}

pub unsafe fn open(l: State) {
    CFG.with(|c| c.set(DEFAULT));
    ffi::lua_createtable(l, 0, 16);
    lua::set_funcs(
        l,
        &[
            ("encode", encode),
            ("decode", decode),
            ("encode_sparse_array", encode_sparse_array),
            ("encode_max_depth", encode_max_depth),
            ("decode_max_depth", decode_max_depth),
            ("encode_number_precision", encode_number_precision),
            ("encode_keep_buffer", encode_keep_buffer),
            ("encode_invalid_numbers", encode_invalid_numbers),
            ("decode_invalid_numbers", decode_invalid_numbers),
            ("new", new),
        ],
    );
    ffi::lua_pushlightuserdata(l, std::ptr::null_mut());
    lua::set_field(l, -2, "null");
    push_str(l, "cjson");
    lua::set_field(l, -2, "_NAME");
    push_str(l, "2.1.0");
    lua::set_field(l, -2, "_VERSION");
    ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, c"cjson".as_ptr());
}

/// `cjson.new()`: Redis's scripts share one configuration; a new instance is
/// the same module.
unsafe extern "C-unwind" fn new(l: State) -> c_int {
    ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, c"cjson".as_ptr());
    1
}

// ---------------------------------------------------------------- encode

unsafe extern "C-unwind" fn encode(l: State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        return ffi::luaL_argerror(l, 1, c"expected 1 argument".as_ptr());
    }
    let mut out = Vec::with_capacity(64);
    let res = encode_value(l, &mut out, 0, cfg());
    match res {
        Ok(()) => {
            push_bytes(l, &out);
            drop(out);
            1
        }
        Err(msg) => {
            drop(out);
            ffi::luaL_where(l, 1);
            push_str(l, &msg);
            drop(msg);
            ffi::lua_concat(l, 2);
            lua::raise(l)
        }
    }
}

fn typename(t: c_int) -> &'static str {
    match t {
        ffi::LUA_TNIL => "nil",
        ffi::LUA_TBOOLEAN => "boolean",
        ffi::LUA_TLIGHTUSERDATA | ffi::LUA_TUSERDATA => "userdata",
        ffi::LUA_TNUMBER => "number",
        ffi::LUA_TSTRING => "string",
        ffi::LUA_TTABLE => "table",
        ffi::LUA_TFUNCTION => "function",
        ffi::LUA_TTHREAD => "thread",
        _ => "no value",
    }
}

fn exception(t: c_int, reason: &str) -> String {
    format!("Cannot serialise {}: {reason}", typename(t))
}

fn append_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            c if c < 0x20 || c == 0x7f => {
                out.extend_from_slice(format!("\\u{:04x}", c).as_bytes());
            }
            c => out.push(c),
        }
    }
    out.push(b'"');
}

fn append_number(out: &mut Vec<u8>, n: f64, c: Config) -> Result<(), &'static str> {
    if n.is_nan() || n.is_infinite() {
        match c.encode_invalid {
            0 => return Err("must not be NaN or Inf"),
            2 => {
                out.extend_from_slice(b"null");
                return Ok(());
            }
            _ => {}
        }
    }
    let s = crate::types::number::fmt_g(n, c.precision as usize);
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

/// Encodes the value on top of the stack.
unsafe fn encode_value(l: State, out: &mut Vec<u8>, depth: i64, c: Config) -> Result<(), String> {
    let t = ffi::lua_type(l, -1);
    match t {
        ffi::LUA_TSTRING => append_string(out, to_bytes(l, -1).unwrap_or_default()),
        ffi::LUA_TNUMBER => {
            append_number(out, ffi::lua_tonumber(l, -1), c).map_err(|r| exception(t, r))?
        }
        ffi::LUA_TBOOLEAN => out.extend_from_slice(if ffi::lua_toboolean(l, -1) != 0 {
            b"true"
        } else {
            b"false"
        }),
        ffi::LUA_TNIL => out.extend_from_slice(b"null"),
        ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, -1).is_null() => {
            out.extend_from_slice(b"null")
        }
        ffi::LUA_TTABLE => {
            let depth = depth + 1;
            if depth > c.encode_max_depth || ffi::lua_checkstack(l, 3) == 0 {
                return Err(format!("Cannot serialise, excessive nesting ({depth})"));
            }
            let len = array_length(l, c)?;
            if len > 0 {
                out.push(b'[');
                for i in 1..=len {
                    if i > 1 {
                        out.push(b',');
                    }
                    ffi::lua_rawgeti_(l, -1, i as _);
                    let r = encode_value(l, out, depth, c);
                    ffi::lua_pop(l, 1);
                    r?;
                }
                out.push(b']');
            } else {
                out.push(b'{');
                let mut first = true;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    match ffi::lua_type(l, -2) {
                        ffi::LUA_TSTRING => {
                            append_string(out, to_bytes(l, -2).unwrap_or_default());
                            out.push(b':');
                        }
                        ffi::LUA_TNUMBER => {
                            out.push(b'"');
                            if let Err(r) = append_number(out, ffi::lua_tonumber(l, -2), c) {
                                ffi::lua_pop(l, 2);
                                return Err(exception(ffi::LUA_TNUMBER, r));
                            }
                            out.extend_from_slice(b"\":");
                        }
                        kt => {
                            ffi::lua_pop(l, 2);
                            return Err(exception(kt, "table key must be a number or string"));
                        }
                    }
                    let r = encode_value(l, out, depth, c);
                    ffi::lua_pop(l, 1);
                    if r.is_err() {
                        ffi::lua_pop(l, 1);
                        return r;
                    }
                }
                out.push(b'}');
            }
        }
        _ => return Err(exception(t, "type not supported")),
    }
    Ok(())
}

/// lua-cjson's `lua_array_length`: the array length when every key is a
/// positive integer and the array is not excessively sparse, else 0 (object).
unsafe fn array_length(l: State, c: Config) -> Result<i64, String> {
    let mut max: i64 = 0;
    let mut items: i64 = 0;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        if ffi::lua_type(l, -2) == ffi::LUA_TNUMBER {
            let k = ffi::lua_tonumber(l, -2);
            if k != 0.0 && k.floor() == k && k >= 1.0 {
                if k as i64 > max {
                    max = k as i64;
                }
                items += 1;
                ffi::lua_pop(l, 1);
                continue;
            }
        }
        ffi::lua_pop(l, 2);
        return Ok(-1);
    }
    if c.sparse_ratio > 0 && max > items * c.sparse_ratio && max > c.sparse_safe {
        if !c.sparse_convert {
            return Err(exception(ffi::LUA_TTABLE, "excessively sparse array"));
        }
        return Ok(-1);
    }
    Ok(max)
}

// ---------------------------------------------------------------- decode

enum J {
    Str(Vec<u8>),
    Num(f64),
    Bool(bool),
    Null,
    Arr(Vec<J>),
    Obj(Vec<(Vec<u8>, J)>),
}

enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Tok {
    fn name(&self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str(_) => "T_STRING",
            Tok::Num(_) => "T_NUMBER",
            Tok::Bool(_) => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(e) => e,
        }
    }
}

struct Parser<'a> {
    /// The text up to its first NUL byte (lua-cjson reads a C string).
    data: &'a [u8],
    pos: usize,
    depth: i64,
    cfg: Config,
}

impl<'a> Parser<'a> {
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn next_token(&mut self) -> (Tok, usize) {
        while matches!(self.at(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let start = self.pos;
        if self.pos >= self.data.len() {
            return (Tok::End, start);
        }
        let ch = self.at(self.pos);
        let single = match ch {
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b':' => Some(Tok::Colon),
            b',' => Some(Tok::Comma),
            _ => None,
        };
        if let Some(t) = single {
            self.pos += 1;
            return (t, start);
        }
        if ch == b'"' {
            return self.string_token();
        }
        let rest = &self.data[self.pos..];
        if ch == b'-' || ch.is_ascii_digit() {
            if !self.cfg.decode_invalid && self.invalid_number() {
                return (Tok::Error("invalid number"), start);
            }
            return self.number_token();
        }
        if rest.starts_with(b"true") {
            self.pos += 4;
            return (Tok::Bool(true), start);
        }
        if rest.starts_with(b"false") {
            self.pos += 5;
            return (Tok::Bool(false), start);
        }
        if rest.starts_with(b"null") {
            self.pos += 4;
            return (Tok::Null, start);
        }
        if self.cfg.decode_invalid && self.invalid_number() {
            return self.number_token();
        }
        (Tok::Error("invalid token"), start)
    }

    /// lua-cjson's `json_is_invalid_number`: valid for strtod, not for JSON.
    fn invalid_number(&self) -> bool {
        let mut p = self.pos;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        if self.at(p) == b'0' {
            let c2 = self.at(p + 1);
            return (c2 | 0x20) == b'x' || c2.is_ascii_digit();
        } else if self.at(p) <= b'9' {
            return false;
        }
        let word: Vec<u8> = (0..3)
            .map(|i| self.at(p + i).to_ascii_lowercase())
            .collect();
        word == b"inf" || word == b"nan"
    }

    fn number_token(&mut self) -> (Tok, usize) {
        let start = self.pos;
        match strtod(&self.data[self.pos..]) {
            Some((n, used)) if used > 0 => {
                self.pos += used;
                (Tok::Num(n), start)
            }
            _ => (Tok::Error("invalid number"), start),
        }
    }

    fn string_token(&mut self) -> (Tok, usize) {
        let start = self.pos;
        self.pos += 1;
        let mut s = Vec::new();
        loop {
            let ch = self.at(self.pos);
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                return (Tok::Error("unexpected end of string"), self.pos);
            }
            if ch == b'\\' {
                let e = match self.at(self.pos + 1) {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'f' => 12,
                    b'r' => b'\r',
                    b'u' => {
                        if self.unicode_escape(&mut s) {
                            continue;
                        }
                        return (Tok::Error("invalid unicode escape code"), self.pos);
                    }
                    _ => return (Tok::Error("invalid escape code"), self.pos),
                };
                s.push(e);
                self.pos += 2;
                continue;
            }
            s.push(ch);
            self.pos += 1;
        }
        self.pos += 1;
        let _ = start;
        (Tok::Str(s), start)
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let mut v = 0u32;
        for i in 0..4 {
            let d = (self.at(at + i) as char).to_digit(16)?;
            v = v * 16 + d;
        }
        Some(v)
    }

    /// Decodes `\uXXXX` (and a surrogate pair) at `pos` as UTF-8.
    fn unicode_escape(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(mut cp) = self.hex4(self.pos + 2) else {
            return false;
        };
        let mut len = 6;
        if (0xDC00..0xE000).contains(&cp) {
            return false;
        }
        if (0xD800..0xDC00).contains(&cp) {
            if self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u' {
                return false;
            }
            let Some(lo) = self.hex4(self.pos + 8) else {
                return false;
            };
            if !(0xDC00..0xE000).contains(&lo) {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (lo & 0x3FF)) + 0x10000;
            len = 12;
        }
        let mut buf = [0u8; 4];
        match char::from_u32(cp) {
            Some(c) => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
            None => return false,
        }
        self.pos += len;
        true
    }

    fn error(&self, expected: &str, tok: &Tok, at: usize) -> String {
        format!(
            "Expected {expected} but found {} at character {}",
            tok.name(),
            at + 1
        )
    }

    fn value(&mut self, tok: Tok, at: usize) -> Result<J, String> {
        Ok(match tok {
            Tok::Str(s) => J::Str(s),
            Tok::Num(n) => J::Num(n),
            Tok::Bool(b) => J::Bool(b),
            Tok::Null => J::Null,
            Tok::ObjBegin => self.object()?,
            Tok::ArrBegin => self.array()?,
            t => return Err(self.error("value", &t, at)),
        })
    }

    fn descend(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > self.cfg.decode_max_depth {
            return Err(format!(
                "Found too many nested data structures ({}) at character {}",
                self.depth, self.pos
            ));
        }
        Ok(())
    }

    fn object(&mut self) -> Result<J, String> {
        self.descend()?;
        let mut items = Vec::new();
        let (mut tok, mut at) = self.next_token();
        if matches!(tok, Tok::ObjEnd) {
            self.depth -= 1;
            return Ok(J::Obj(items));
        }
        loop {
            let Tok::Str(key) = tok else {
                return Err(self.error("object key string", &tok, at));
            };
            let (t, a) = self.next_token();
            if !matches!(t, Tok::Colon) {
                return Err(self.error("colon", &t, a));
            }
            let (t, a) = self.next_token();
            let v = self.value(t, a)?;
            items.push((key, v));
            let (t, a) = self.next_token();
            if matches!(t, Tok::ObjEnd) {
                self.depth -= 1;
                return Ok(J::Obj(items));
            }
            if !matches!(t, Tok::Comma) {
                return Err(self.error("comma or object end", &t, a));
            }
            (tok, at) = self.next_token();
        }
    }

    fn array(&mut self) -> Result<J, String> {
        self.descend()?;
        let mut items = Vec::new();
        let (mut tok, mut at) = self.next_token();
        if matches!(tok, Tok::ArrEnd) {
            self.depth -= 1;
            return Ok(J::Arr(items));
        }
        loop {
            items.push(self.value(tok, at)?);
            let (t, a) = self.next_token();
            if matches!(t, Tok::ArrEnd) {
                self.depth -= 1;
                return Ok(J::Arr(items));
            }
            if !matches!(t, Tok::Comma) {
                return Err(self.error("comma or array end", &t, a));
            }
            (tok, at) = self.next_token();
        }
    }
}

/// C's `strtod` on a prefix of `s`: the value and the bytes it used.
pub fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let mut p = 0;
    let neg = match s.first() {
        Some(b'-') => {
            p = 1;
            true
        }
        Some(b'+') => {
            p = 1;
            false
        }
        _ => false,
    };
    let sign = if neg { -1.0 } else { 1.0 };
    let lower: Vec<u8> = s[p..]
        .iter()
        .take(8)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if lower.starts_with(b"infinity") {
        return Some((sign * f64::INFINITY, p + 8));
    }
    if lower.starts_with(b"inf") {
        return Some((sign * f64::INFINITY, p + 3));
    }
    if lower.starts_with(b"nan") {
        let mut q = p + 3;
        if s.get(q) == Some(&b'(') {
            if let Some(close) = s[q..].iter().position(|&c| c == b')') {
                if s[q + 1..q + close]
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'_')
                {
                    q += close + 1;
                }
            }
        }
        return Some((f64::NAN, q));
    }
    if lower.starts_with(b"0x") {
        let mut q = p + 2;
        let mut v = 0f64;
        let mut digits = 0;
        while let Some(d) = s.get(q).and_then(|c| (*c as char).to_digit(16)) {
            v = v * 16.0 + d as f64;
            q += 1;
            digits += 1;
        }
        let mut scale = 0i32;
        if s.get(q) == Some(&b'.') {
            let mut r = q + 1;
            while let Some(d) = s.get(r).and_then(|c| (*c as char).to_digit(16)) {
                v = v * 16.0 + d as f64;
                scale -= 4;
                r += 1;
                digits += 1;
            }
            if digits > 0 {
                q = r;
            }
        }
        if digits == 0 {
            // Just the "0": strtod reads it and stops before the x.
            return Some((sign * 0.0, p + 1));
        }
        if matches!(s.get(q), Some(b'p' | b'P')) {
            let mut r = q + 1;
            let eneg = match s.get(r) {
                Some(b'-') => {
                    r += 1;
                    true
                }
                Some(b'+') => {
                    r += 1;
                    false
                }
                _ => false,
            };
            let es = r;
            let mut e = 0i32;
            while let Some(d) = s.get(r).filter(|c| c.is_ascii_digit()) {
                e = e.saturating_mul(10).saturating_add((d - b'0') as i32);
                r += 1;
            }
            if r > es {
                scale += if eneg { -e } else { e };
                q = r;
            }
        }
        return Some((sign * v * 2f64.powi(scale), q));
    }
    let mut q = p;
    let int_start = q;
    while s.get(q).is_some_and(|c| c.is_ascii_digit()) {
        q += 1;
    }
    let mut digits = q - int_start;
    if s.get(q) == Some(&b'.') {
        let mut r = q + 1;
        while s.get(r).is_some_and(|c| c.is_ascii_digit()) {
            r += 1;
        }
        digits += r - q - 1;
        if digits > 0 {
            q = r;
        }
    }
    if digits == 0 {
        return None;
    }
    if matches!(s.get(q), Some(b'e' | b'E')) {
        let mut r = q + 1;
        if matches!(s.get(r), Some(b'+' | b'-')) {
            r += 1;
        }
        let es = r;
        while s.get(r).is_some_and(|c| c.is_ascii_digit()) {
            r += 1;
        }
        if r > es {
            q = r;
        }
    }
    let text = std::str::from_utf8(&s[p..q]).ok()?;
    let text = text.strip_suffix('.').unwrap_or(text);
    let v: f64 = text
        .parse()
        .ok()
        .or_else(|| format!("{text}0").parse().ok())?;
    Some((sign * v, q))
}

unsafe fn push_json(l: State, j: &J) {
    match j {
        J::Str(s) => push_bytes(l, s),
        J::Num(n) => ffi::lua_pushnumber(l, *n),
        J::Bool(b) => ffi::lua_pushboolean(l, *b as c_int),
        J::Null => ffi::lua_pushlightuserdata(l, std::ptr::null_mut()),
        J::Arr(items) => {
            ffi::luaL_checkstack(l, 3, std::ptr::null());
            ffi::lua_createtable(l, items.len() as c_int, 0);
            for (i, v) in items.iter().enumerate() {
                push_json(l, v);
                ffi::lua_rawseti_(l, -2, (i + 1) as _);
            }
        }
        J::Obj(items) => {
            ffi::luaL_checkstack(l, 3, std::ptr::null());
            ffi::lua_createtable(l, 0, items.len() as c_int);
            for (k, v) in items {
                push_bytes(l, k);
                push_json(l, v);
                ffi::lua_rawset(l, -3);
            }
        }
    }
}

unsafe extern "C-unwind" fn decode(l: State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        return ffi::luaL_argerror(l, 1, c"expected 1 argument".as_ptr());
    }
    ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
    let raw = to_bytes(l, 1).unwrap_or_default();
    if raw.len() >= 2 && (raw[0] == 0 || raw[1] == 0) {
        return lua::raise_msg(l, "JSON parser does not support UTF-16 or UTF-32");
    }
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    let mut p = Parser {
        data: &raw[..end],
        pos: 0,
        depth: 0,
        cfg: cfg(),
    };
    let res = (|| {
        let (t, a) = p.next_token();
        let v = p.value(t, a)?;
        let (t, a) = p.next_token();
        if !matches!(t, Tok::End) {
            return Err(p.error("the end", &t, a));
        }
        Ok(v)
    })();
    match res {
        Ok(v) => {
            push_json(l, &v);
            drop(v);
            1
        }
        Err(msg) => {
            ffi::luaL_where(l, 1);
            push_str(l, &msg);
            drop(msg);
            ffi::lua_concat(l, 2);
            lua::raise(l)
        }
    }
}

// ---------------------------------------------------------------- settings

/// Reads an optional integer setting argument in `[min, max]`, as
/// `json_integer_option`: the value is a C `int`, and a value out of range
/// is reported as argument 1 whatever its position.
unsafe fn opt_int(l: State, idx: c_int, min: i64, max: i64) -> Option<i64> {
    if ffi::lua_type(l, idx) <= ffi::LUA_TNIL {
        return None;
    }
    let n = ffi::luaL_checkinteger(l, idx) as i32 as i64;
    if n < min || n > max {
        let msg = format!("expected integer between {min} and {max}");
        push_str(l, &msg);
        drop(msg);
        let text = ffi::lua_tolstring(l, -1, std::ptr::null_mut());
        ffi::luaL_argerror(l, 1, text);
    }
    Some(n)
}

/// `json_arg_init`: at most `n` arguments, padded with nils.
unsafe fn arg_init(l: State, n: c_int) {
    if ffi::lua_gettop(l) > n {
        ffi::luaL_argerror(l, n + 1, c"found too many arguments".as_ptr());
    }
    ffi::lua_settop(l, n);
}

/// `json_enum_option` with `bool_true` 1: nil keeps the setting, a
/// boolean sets 0 or 1, a string is looked up in `options` with Lua's
/// `luaL_checkoption` ("invalid option 'x'").
unsafe fn opt_enum(l: State, idx: c_int, options: &[*const std::ffi::c_char]) -> Option<i64> {
    match ffi::lua_type(l, idx) {
        ffi::LUA_TNONE | ffi::LUA_TNIL => None,
        ffi::LUA_TBOOLEAN => Some(ffi::lua_toboolean(l, idx) as i64),
        _ => Some(ffi::luaL_checkoption(l, idx, std::ptr::null(), options.as_ptr()) as i64),
    }
}

const ON_OFF: [*const std::ffi::c_char; 3] = [c"off".as_ptr(), c"on".as_ptr(), std::ptr::null()];

/// Reads an optional boolean-ish setting ("on"/"off"/true/false).
unsafe fn opt_bool(l: State, idx: c_int) -> Option<bool> {
    opt_enum(l, idx, &ON_OFF).map(|v| v == 1)
}

unsafe fn update(f: impl FnOnce(&mut Config)) -> Config {
    CFG.with(|c| {
        let mut v = c.get();
        f(&mut v);
        c.set(v);
        v
    })
}

unsafe extern "C-unwind" fn encode_sparse_array(l: State) -> c_int {
    arg_init(l, 3);
    let conv = opt_bool(l, 1);
    let ratio = opt_int(l, 2, 0, i32::MAX as i64);
    let safe = opt_int(l, 3, 0, i32::MAX as i64);
    let c = update(|c| {
        if let Some(v) = conv {
            c.sparse_convert = v;
        }
        if let Some(v) = ratio {
            c.sparse_ratio = v;
        }
        if let Some(v) = safe {
            c.sparse_safe = v;
        }
    });
    ffi::lua_pushboolean(l, c.sparse_convert as c_int);
    ffi::lua_pushnumber(l, c.sparse_ratio as f64);
    ffi::lua_pushnumber(l, c.sparse_safe as f64);
    3
}

unsafe extern "C-unwind" fn encode_max_depth(l: State) -> c_int {
    arg_init(l, 1);
    let v = opt_int(l, 1, 1, i32::MAX as i64);
    let c = update(|c| {
        if let Some(v) = v {
            c.encode_max_depth = v;
        }
    });
    ffi::lua_pushnumber(l, c.encode_max_depth as f64);
    1
}

unsafe extern "C-unwind" fn decode_max_depth(l: State) -> c_int {
    arg_init(l, 1);
    let v = opt_int(l, 1, 1, i32::MAX as i64);
    let c = update(|c| {
        if let Some(v) = v {
            c.decode_max_depth = v;
        }
    });
    ffi::lua_pushnumber(l, c.decode_max_depth as f64);
    1
}

unsafe extern "C-unwind" fn encode_number_precision(l: State) -> c_int {
    arg_init(l, 1);
    let v = opt_int(l, 1, 1, 14);
    let c = update(|c| {
        if let Some(v) = v {
            c.precision = v;
        }
    });
    ffi::lua_pushnumber(l, c.precision as f64);
    1
}

unsafe extern "C-unwind" fn encode_keep_buffer(l: State) -> c_int {
    arg_init(l, 1);
    let v = opt_bool(l, 1);
    let c = update(|c| {
        if let Some(v) = v {
            c.keep_buffer = v;
        }
    });
    ffi::lua_pushboolean(l, c.keep_buffer as c_int);
    1
}

unsafe extern "C-unwind" fn encode_invalid_numbers(l: State) -> c_int {
    arg_init(l, 1);
    let options = [
        c"off".as_ptr(),
        c"on".as_ptr(),
        c"null".as_ptr(),
        std::ptr::null(),
    ];
    let v = opt_enum(l, 1, &options);
    let c = update(|c| {
        if let Some(v) = v {
            c.encode_invalid = v;
        }
    });
    if c.encode_invalid == 2 {
        push_str(l, "null");
    } else {
        ffi::lua_pushboolean(l, c.encode_invalid as c_int);
    }
    1
}

unsafe extern "C-unwind" fn decode_invalid_numbers(l: State) -> c_int {
    arg_init(l, 1);
    let v = opt_bool(l, 1);
    let c = update(|c| {
        if let Some(v) = v {
            c.decode_invalid = v;
        }
    });
    ffi::lua_pushboolean(l, c.decode_invalid as c_int);
    1
}

#[cfg(test)]
mod tests {
    use super::strtod;

    #[test]
    fn strtod_prefixes() {
        assert_eq!(strtod(b"12abc"), Some((12.0, 2)));
        assert_eq!(strtod(b"-1.5e3,"), Some((-1500.0, 6)));
        assert_eq!(strtod(b"1e"), Some((1.0, 1)));
        assert_eq!(strtod(b"-"), None);
        assert_eq!(strtod(b"0x1p4"), Some((16.0, 5)));
        assert!(strtod(b"nan").unwrap().0.is_nan());
        assert_eq!(strtod(b"-inf").unwrap().0, f64::NEG_INFINITY);
        assert_eq!(strtod(b".5"), Some((0.5, 2)));
    }
}
