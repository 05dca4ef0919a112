//! Incremental request decoder: RESP multibulk frames and inline commands, with Redis's limits.
//!
//! The decoder never copies arguments: it records `(start, end)` ranges into the
//! caller's buffer. It never allocates from a declared length either; a client
//! that declares a 512 MB bulk and sends nothing costs us nothing.

/// Longest inline command or header line Redis accepts (`PROTO_INLINE_MAX_SIZE`).
pub const INLINE_MAX: usize = 64 * 1024;
/// Before AUTH, Redis accepts only small requests (7.0 `processMultibulkBuffer`).
const UNAUTH_MULTIBULK_MAX: i64 = 10;
const UNAUTH_BULK_MAX: i64 = 16384;

/// What one call to [`parse`] found at the start of the buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole command of `consumed` bytes; its arguments are in `args`
    /// (possibly none: an empty inline line or `*0`, which Redis skips).
    /// Inline arguments are raw spans that [`inline_word`] decodes.
    Command { consumed: usize, inline: bool },
    /// Not enough bytes yet; do not parse again until the buffer holds at least `need`.
    Incomplete { need: usize },
    /// A protocol error: Redis answers `-ERR Protocol error: <msg>` and closes.
    Error(String),
}

/// Limits that depend on configuration and on the client.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_bulk: i64,
    pub authenticated: bool,
}

/// Parses one request from the start of `buf`, filling `args` with argument ranges.
pub fn parse(buf: &[u8], args: &mut Vec<(usize, usize)>, limits: Limits) -> Parsed {
    args.clear();
    if buf.is_empty() {
        return Parsed::Incomplete { need: 1 };
    }
    if buf[0] == b'*' {
        parse_multibulk(buf, args, limits)
    } else {
        parse_inline(buf, args)
    }
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    memchr(b'\r', &buf[from..]).map(|i| from + i)
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

/// Redis's `string2ll`: no leading `+`, no leading zeros, no spaces.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !(b'1'..=b'9').contains(&digits[0]) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

fn parse_multibulk(buf: &[u8], args: &mut Vec<(usize, usize)>, limits: Limits) -> Parsed {
    let Some(nl) = find_crlf(buf, 1) else {
        if buf.len() > INLINE_MAX {
            return Parsed::Error("too big mbulk count string".into());
        }
        return Parsed::Incomplete {
            need: buf.len() + 1,
        };
    };
    if nl + 1 >= buf.len() {
        return Parsed::Incomplete { need: nl + 2 };
    }
    let count = match parse_i64(&buf[1..nl]) {
        Some(n) if n <= i32::MAX as i64 => n,
        _ => return Parsed::Error("invalid multibulk length".into()),
    };
    if !limits.authenticated && count > UNAUTH_MULTIBULK_MAX {
        return Parsed::Error("unauthenticated multibulk length".into());
    }
    let mut pos = nl + 2;
    if count <= 0 {
        return Parsed::Command {
            consumed: pos,
            inline: false,
        };
    }
    for _ in 0..count {
        if pos >= buf.len() {
            return Parsed::Incomplete { need: pos + 1 };
        }
        let Some(nl) = find_crlf(buf, pos) else {
            if buf.len() - pos > INLINE_MAX {
                return Parsed::Error("too big bulk count string".into());
            }
            return Parsed::Incomplete {
                need: buf.len() + 1,
            };
        };
        if buf[pos] != b'$' {
            return Parsed::Error(format!("expected '$', got '{}'", buf[pos] as char));
        }
        if nl + 1 >= buf.len() {
            return Parsed::Incomplete { need: nl + 2 };
        }
        let len = match parse_i64(&buf[pos + 1..nl]) {
            Some(n) if n >= 0 && n <= limits.max_bulk => n,
            _ => return Parsed::Error("invalid bulk length".into()),
        };
        if !limits.authenticated && len > UNAUTH_BULK_MAX {
            return Parsed::Error("unauthenticated bulk length".into());
        }
        let start = nl + 2;
        let end = start + len as usize;
        if buf.len() < end + 2 {
            return Parsed::Incomplete { need: end + 2 };
        }
        args.push((start, end));
        // Redis does not check the trailing CRLF; it skips two bytes.
        pos = end + 2;
    }
    Parsed::Command {
        consumed: pos,
        inline: false,
    }
}

fn parse_inline(buf: &[u8], args: &mut Vec<(usize, usize)>) -> Parsed {
    let Some(nl) = memchr(b'\n', buf) else {
        if buf.len() > INLINE_MAX {
            return Parsed::Error("too big inline request".into());
        }
        return Parsed::Incomplete {
            need: buf.len() + 1,
        };
    };
    let mut end = nl;
    if end > 0 && buf[end - 1] == b'\r' {
        end -= 1;
    }
    match split_args(&buf[..end]) {
        Some(words) => {
            args.extend(words.into_iter().map(|(s, e, _)| (s, e)));
            Parsed::Command {
                consumed: nl + 1,
                inline: true,
            }
        }
        None => Parsed::Error("unbalanced quotes in request".into()),
    }
}

/// Splits an inline line like Redis's `sdssplitargs`, returning for each word
/// its raw span and whether it was quoted (and so needs decoding).
fn split_args(line: &[u8]) -> Option<Vec<(usize, usize, bool)>> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= n {
            return Some(out);
        }
        let start = i;
        match line[i] {
            b'"' => {
                i += 1;
                loop {
                    if i >= n {
                        return None;
                    }
                    if line[i] == b'\\' && i + 1 < n {
                        i += 2;
                    } else if line[i] == b'"' {
                        i += 1;
                        if i < n && !line[i].is_ascii_whitespace() {
                            return None;
                        }
                        break;
                    } else {
                        i += 1;
                    }
                }
                out.push((start, i, true));
            }
            b'\'' => {
                i += 1;
                loop {
                    if i >= n {
                        return None;
                    }
                    if line[i] == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                        i += 2;
                    } else if line[i] == b'\'' {
                        i += 1;
                        if i < n && !line[i].is_ascii_whitespace() {
                            return None;
                        }
                        break;
                    } else {
                        i += 1;
                    }
                }
                out.push((start, i, true));
            }
            _ => {
                while i < n && !line[i].is_ascii_whitespace() {
                    i += 1;
                }
                out.push((start, i, false));
            }
        }
    }
}

/// Decodes one inline word (as returned in a range) into its bytes, resolving
/// quotes and escapes exactly as `sdssplitargs` does.
pub fn inline_word(raw: &[u8]) -> Vec<u8> {
    if raw.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(raw.len());
    match raw[0] {
        b'"' => {
            let body = &raw[1..raw.len() - 1];
            let mut i = 0;
            while i < body.len() {
                let c = body[i];
                if c == b'\\' && i + 3 < body.len() && body[i + 1] == b'x' {
                    if let (Some(h), Some(l)) = (hex(body[i + 2]), hex(body[i + 3])) {
                        out.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < body.len() {
                    out.push(match body[i + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                    i += 2;
                    continue;
                }
                out.push(c);
                i += 1;
            }
        }
        b'\'' => {
            let body = &raw[1..raw.len() - 1];
            let mut i = 0;
            while i < body.len() {
                if body[i] == b'\\' && i + 1 < body.len() && body[i + 1] == b'\'' {
                    out.push(b'\'');
                    i += 2;
                } else {
                    out.push(body[i]);
                    i += 1;
                }
            }
        }
        _ => out.extend_from_slice(raw),
    }
    out
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits {
        max_bulk: 512 * 1024 * 1024,
        authenticated: true,
    };

    fn words(buf: &[u8]) -> Vec<Vec<u8>> {
        let mut args = Vec::new();
        match parse(buf, &mut args, L) {
            Parsed::Command { .. } => args.iter().map(|&(s, e)| inline_word(&buf[s..e])).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn multibulk_complete_and_split_everywhere() {
        let frame = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
        assert_eq!(
            words(frame),
            vec![b"SET".to_vec(), b"k".to_vec(), b"hello".to_vec()]
        );
        for cut in 0..frame.len() {
            let mut args = Vec::new();
            match parse(&frame[..cut], &mut args, L) {
                Parsed::Incomplete { need } => assert!(need > cut),
                other => panic!("cut {cut}: {other:?}"),
            }
        }
    }

    #[test]
    fn inline_quotes_and_escapes() {
        assert_eq!(
            words(b"set \"a b\" 'c\\'d' \"\\x41\\n\"\r\n"),
            vec![
                b"set".to_vec(),
                b"a b".to_vec(),
                b"c'd".to_vec(),
                b"A\n".to_vec()
            ]
        );
        let mut args = Vec::new();
        assert_eq!(
            parse(b"set \"abc\r\n", &mut args, L),
            Parsed::Error("unbalanced quotes in request".into())
        );
        assert_eq!(
            parse(b"set \"abc\"x\r\n", &mut args, L),
            Parsed::Error("unbalanced quotes in request".into())
        );
    }

    #[test]
    fn huge_declared_lengths_do_not_allocate() {
        let mut args = Vec::new();
        match parse(b"*1\r\n$536870912\r\n", &mut args, L) {
            Parsed::Incomplete { need } => assert!(need > 536870912),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse(b"*1\r\n$536870913\r\n", &mut args, L),
            Parsed::Error("invalid bulk length".into())
        );
        // Redis 7.0 accepts counts up to INT_MAX and allocates as arguments arrive.
        assert!(matches!(
            parse(b"*2147483647\r\n", &mut args, L),
            Parsed::Incomplete { .. }
        ));
        assert_eq!(
            parse(b"*2147483648\r\n", &mut args, L),
            Parsed::Error("invalid multibulk length".into())
        );
        assert_eq!(
            parse(b"*1\r\nx3\r\n", &mut args, L),
            Parsed::Error("expected '$', got 'x'".into())
        );
    }

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-0"), None);
        assert_eq!(parse_i64(b"007"), None);
        assert_eq!(parse_i64(b"+1"), None);
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
    }
}
