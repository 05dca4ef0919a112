//! The Lua debugger's text forms: Lua values and Redis replies as it shows them, and its command parser.

use std::ffi::c_int;

use super::lua::{ffi, to_bytes, State};
use crate::server::monitor::repr;

/// Tables nested deeper than this show a marker instead (Redis's `LUA_MINSTACK/2`).
const MAX_DEPTH: u32 = 10;

/// Appends the value at `idx` as the debugger shows it (Redis's
/// `ldbCatStackValue`): strings quoted, numbers as `%g`, tables as
/// `{a; b}` when they look like an array, `{[k]=v; ...}` otherwise.
pub unsafe fn cat_value(out: &mut Vec<u8>, l: State, idx: c_int) {
    cat_rec(out, l, super::lua::abs_index(l, idx), 0);
}

unsafe fn cat_rec(out: &mut Vec<u8>, l: State, idx: c_int, level: u32) {
    if level == MAX_DEPTH {
        out.extend_from_slice(b"<max recursion level reached! Nested table?>");
        return;
    }
    let level = level + 1;
    match ffi::lua_type(l, idx) {
        ffi::LUA_TSTRING => repr(out, to_bytes(l, idx).unwrap_or_default()),
        ffi::LUA_TBOOLEAN => out.extend_from_slice(if ffi::lua_toboolean(l, idx) != 0 {
            b"true"
        } else {
            b"false"
        }),
        ffi::LUA_TNUMBER => {
            let n = ffi::lua_tonumber(l, idx);
            out.extend_from_slice(crate::types::number::fmt_g(n, 6).as_bytes());
        }
        ffi::LUA_TNIL => out.extend_from_slice(b"nil"),
        ffi::LUA_TTABLE => {
            // Both forms are built at once; the walk decides which is true.
            let (mut as_array, mut full) = (Vec::new(), Vec::new());
            let mut is_array = true;
            let mut expected = 1.0;
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, idx) != 0 {
                let (k, v) = (ffi::lua_gettop(l) - 1, ffi::lua_gettop(l));
                if is_array
                    && (ffi::lua_type(l, k) != ffi::LUA_TNUMBER
                        || ffi::lua_tonumber(l, k) != expected)
                {
                    is_array = false;
                }
                cat_rec(&mut as_array, l, v, level);
                as_array.extend_from_slice(b"; ");
                full.push(b'[');
                cat_rec(&mut full, l, k, level);
                full.extend_from_slice(b"]=");
                cat_rec(&mut full, l, v, level);
                full.extend_from_slice(b"; ");
                ffi::lua_pop(l, 1);
                expected += 1.0;
            }
            let body = if is_array { as_array } else { full };
            out.push(b'{');
            out.extend_from_slice(&body[..body.len().saturating_sub(2)]);
            out.push(b'}');
        }
        t => {
            let name = match t {
                ffi::LUA_TFUNCTION => "function",
                ffi::LUA_TUSERDATA => "userdata",
                ffi::LUA_TTHREAD => "thread",
                ffi::LUA_TLIGHTUSERDATA => "light-userdata",
                _ => {
                    out.extend_from_slice(b"\"<unknown-lua-type>\"");
                    return;
                }
            };
            let p = ffi::lua_topointer(l, idx);
            out.extend_from_slice(format!("\"{name}@{p:p}\"").as_bytes());
        }
    }
}

/// Appends a reply in RESP as the debugger shows it (Redis's
/// `ldbRedisProtocolToHuman`); returns the bytes it used. A type Redis's
/// debugger does not know shows nothing and uses nothing.
pub fn cat_reply(out: &mut Vec<u8>, r: &[u8]) -> usize {
    let Some(&kind) = r.first() else { return 0 };
    let eol = r.windows(2).position(|w| w == b"\r\n").unwrap_or(r.len());
    let head = &r[1.min(r.len())..eol];
    let next = (eol + 2).min(r.len());
    let num = || -> i64 {
        std::str::from_utf8(head)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    };
    match kind {
        b':' => {
            out.extend_from_slice(head);
            next
        }
        b'$' => {
            let n = num();
            if n < 0 {
                out.extend_from_slice(b"NULL");
                return next;
            }
            let end = (next + n as usize).min(r.len());
            repr(out, &r[next..end]);
            (end + 2).min(r.len())
        }
        b'+' | b'-' => {
            repr(out, &r[..eol]);
            next
        }
        b'*' | b'~' | b'%' => {
            let n = num();
            if kind == b'*' && n < 0 {
                out.extend_from_slice(b"NULL");
                return next;
            }
            let (open, close): (&[u8], &[u8]) = match kind {
                b'*' => (b"[", b"]"),
                b'~' => (b"~(", b")"),
                _ => (b"{", b"}"),
            };
            out.extend_from_slice(open);
            let mut p = next;
            for j in 0..n.max(0) {
                p += cat_reply(out, &r[p..]);
                if kind == b'%' {
                    out.extend_from_slice(b" => ");
                    p += cat_reply(out, &r[p..]);
                }
                if j != n - 1 {
                    out.push(b',');
                }
            }
            out.extend_from_slice(close);
            p
        }
        b'_' => {
            out.extend_from_slice(b"(null)");
            next
        }
        b'#' => {
            out.extend_from_slice(if head.first() == Some(&b't') {
                b"#true"
            } else {
                b"#false"
            });
            next
        }
        b',' => {
            out.extend_from_slice(b"(double) ");
            out.extend_from_slice(head);
            next
        }
        _ => 0,
    }
}

/// What the command parser made of the buffered input.
#[derive(Debug, PartialEq)]
pub enum Parsed {
    Command(Vec<Vec<u8>>),
    /// More input is needed.
    Incomplete,
    /// Input the debugger refuses (it ends the script).
    Error,
}

/// C's `atoi`: leading blanks, a sign, then digits up to the first other byte.
pub fn atoi(b: &[u8]) -> i64 {
    let b = &b[b.iter().take_while(|c| c.is_ascii_whitespace()).count()..];
    let (neg, b) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    let mut n: i64 = 0;
    for &c in b.iter().take_while(|c| c.is_ascii_digit()) {
        n = n.wrapping_mul(10).wrapping_add(i64::from(c - b'0'));
    }
    if neg {
        -n
    } else {
        n
    }
}

/// Parses one debugger command from `buf` as Redis's `ldbReplParseCommand`:
/// a multi-bulk of 1 to 1024 arguments of 1 to 1024 bytes each, found
/// after the first `*`. Like Redis's (which works on C strings), the scan
/// for `*` and for line ends stops at a NUL byte.
pub fn parse_command(buf: &[u8]) -> Parsed {
    if buf.is_empty() {
        return Parsed::Incomplete;
    }
    let c_str = &buf[..buf.iter().position(|&b| b == 0).unwrap_or(buf.len())];
    let crlf = |from: usize| -> Option<usize> {
        let s = c_str.get(from..)?;
        s.windows(2).position(|w| w == b"\r\n").map(|i| from + i)
    };
    let Some(star) = c_str.iter().position(|&b| b == b'*') else {
        return Parsed::Error;
    };
    let Some(eol) = crlf(star) else {
        return Parsed::Incomplete;
    };
    let argc = atoi(&buf[star + 1..eol]);
    if !(1..=1024).contains(&argc) {
        return Parsed::Error;
    }
    let mut p = eol + 2;
    let mut argv = Vec::with_capacity(argc as usize);
    while (argv.len() as i64) < argc {
        match buf.get(p) {
            None | Some(0) => return Parsed::Incomplete,
            Some(b'$') => {}
            Some(_) => return Parsed::Error,
        }
        // Line ends are searched in the C string starting here.
        let rest = &buf[p..];
        let rest = &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())];
        let Some(e) = rest.windows(2).position(|w| w == b"\r\n").map(|i| p + i) else {
            return Parsed::Incomplete;
        };
        let len = atoi(&buf[p + 1..e]);
        if !(1..=1024).contains(&len) {
            return Parsed::Error;
        }
        let start = e + 2;
        let end = start + len as usize;
        if end + 2 > buf.len() {
            return Parsed::Incomplete;
        }
        argv.push(buf[start..end].to_vec());
        if &buf[end..end + 2] != b"\r\n" {
            return Parsed::Error;
        }
        p = end + 2;
    }
    Parsed::Command(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn human(r: &[u8]) -> String {
        let mut o = Vec::new();
        cat_reply(&mut o, r);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn replies_read_as_redis_shows_them() {
        assert_eq!(human(b"+OK\r\n"), "\"+OK\"");
        assert_eq!(human(b"-ERR x\r\n"), "\"-ERR x\"");
        assert_eq!(human(b":12\r\n"), "12");
        assert_eq!(human(b"$-1\r\n"), "NULL");
        assert_eq!(human(b"*2\r\n$1\r\na\r\n:1\r\n"), "[\"a\",1]");
        assert_eq!(human(b"%1\r\n$1\r\nk\r\n#t\r\n"), "{\"k\" => #true}");
        assert_eq!(human(b"~1\r\n_\r\n"), "~((null))");
        assert_eq!(human(b",1.5\r\n"), "(double) 1.5");
    }

    #[test]
    fn commands_parse_as_redis_parses_them() {
        assert_eq!(
            parse_command(b"*2\r\n$1\r\np\r\n$1\r\na\r\n"),
            Parsed::Command(vec![b"p".to_vec(), b"a".to_vec()])
        );
        assert_eq!(parse_command(b"*2\r\n$1\r\np\r\n"), Parsed::Incomplete);
        assert_eq!(parse_command(b"*1\r\n$1\r"), Parsed::Incomplete);
        assert_eq!(parse_command(b"hello"), Parsed::Error);
        assert_eq!(parse_command(b"*0\r\n"), Parsed::Error);
        assert_eq!(parse_command(b"*1\r\n$0\r\n\r\n"), Parsed::Error);
        assert_eq!(parse_command(b"*1\r\n$1\r\nab\r\n"), Parsed::Error);
        assert_eq!(parse_command(b"*1\r\n:1\r\n"), Parsed::Error);
    }
}
