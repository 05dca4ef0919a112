//! Incremental request decoder: RESP multibulk frames and inline commands, with Redis's limits.
//!
//! The decoder never copies multibulk arguments: it records `(start, end)`
//! ranges into the caller's buffer. It never allocates from a declared length
//! either; a client that declares a 512 MB bulk and sends nothing costs us nothing.

use super::inline;
use crate::error::ProtocolError;

/// Longest inline command or header line Redis accepts (`PROTO_INLINE_MAX_SIZE`).
pub const INLINE_MAX: usize = 64 * 1024;
/// Before AUTH, Redis accepts only small requests (7.0 `processMultibulkBuffer`).
const UNAUTH_MULTIBULK_MAX: i64 = 10;
const UNAUTH_BULK_MAX: i64 = 16384;

/// What one call to [`Decoder::parse`] found at the start of the buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole request of `consumed` bytes; [`Decoder::request`] gives its
    /// arguments (possibly none: an empty inline line or `*0`, which Redis skips).
    /// The caller drops those bytes from the front of its buffer before the next call.
    Command { consumed: usize },
    /// Not enough bytes yet; do not parse again until the buffer holds at least `need`.
    Incomplete { need: usize },
    /// A protocol error: Redis answers `-ERR Protocol error: ...` and closes.
    Error(ProtocolError),
}

/// Limits that depend on configuration and on the client.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_bulk: i64,
    pub authenticated: bool,
}

/// A connection's parse state. Progress on a request that is still arriving
/// is kept across calls (Redis's `multibulklen`/`bulklen`/`qb_pos`), so a
/// request sent in pieces is parsed once, not again from its first byte on
/// every read.
///
/// Invariant: between calls that return `Incomplete`, the caller passes the
/// same bytes again with more appended; after `Command` it drops `consumed`
/// bytes first. Positions below are offsets from the request's first byte.
#[derive(Default)]
pub struct Decoder {
    /// Arguments still to come in the multibulk in progress (0: none in progress).
    left: usize,
    /// Where parsing resumes: past the header and every whole argument.
    pos: usize,
    /// Where the search for the current line's end resumes (nothing before it ends the line).
    scan: usize,
    /// The length of the argument whose `$` header is read and whose bytes are still coming.
    bulk: Option<usize>,
    /// Argument ranges: into the caller's buffer, or into `words` for an inline request.
    args: Vec<(usize, usize)>,
    /// The unquoted words of an inline request, back to back.
    words: Vec<u8>,
    inline: bool,
    /// The last call returned `Command`: the next one starts a new request.
    returned: bool,
}

/// Range lists longer than this are not kept for the next request.
const KEEP_ARGS: usize = 1024;

impl Decoder {
    /// Parses (or goes on parsing) the request at the start of `buf`.
    pub fn parse(&mut self, buf: &[u8], limits: Limits) -> Parsed {
        if self.returned {
            self.start_request();
        }
        if self.left == 0 {
            if buf.is_empty() {
                return Parsed::Incomplete { need: 1 };
            }
            if buf[0] != b'*' {
                return self.parse_inline(buf);
            }
            let Some(nl) = self.line_end(buf, 1, b'\r') else {
                if buf.len() > INLINE_MAX {
                    return Parsed::Error(ProtocolError::TooBigMbulkCount);
                }
                return Parsed::Incomplete {
                    need: buf.len() + 1,
                };
            };
            if nl + 1 >= buf.len() {
                self.scan = nl;
                return Parsed::Incomplete { need: nl + 2 };
            }
            let count = match parse_i64(&buf[1..nl]) {
                Some(n) if n <= i32::MAX as i64 => n,
                _ => return Parsed::Error(ProtocolError::InvalidMbulkCount),
            };
            if !limits.authenticated && count > UNAUTH_MULTIBULK_MAX {
                return Parsed::Error(ProtocolError::UnauthMbulkCount);
            }
            if count <= 0 {
                return self.done(nl + 2);
            }
            self.left = count as usize;
            self.pos = nl + 2;
            self.scan = self.pos;
            // As Redis: room for at most 1024 up front, more as arguments arrive.
            self.args.reserve(self.left.min(KEEP_ARGS));
        }
        self.parse_bulks(buf, limits)
    }

    /// The arguments of the request the last `Command` returned, as a buffer
    /// and ranges into it (`buf` is the caller's buffer that request came in).
    pub fn request<'a>(&'a self, buf: &'a [u8]) -> (&'a [u8], &'a [(usize, usize)]) {
        if self.inline {
            (&self.words, &self.args)
        } else {
            (buf, &self.args)
        }
    }

    /// Bytes at the front of the buffer already parsed into whole arguments of
    /// a request still arriving: Redis has moved these out of its query buffer.
    pub fn parsed_len(&self) -> usize {
        if self.left > 0 {
            self.pos
        } else {
            0
        }
    }

    /// Forgets the previous request; big range lists are not kept.
    fn start_request(&mut self) {
        if self.args.capacity() > KEEP_ARGS {
            self.args = Vec::new();
        }
        if self.words.capacity() > INLINE_MAX {
            self.words = Vec::new();
        }
        self.args.clear();
        self.words.clear();
        self.inline = false;
        self.returned = false;
    }

    fn done(&mut self, consumed: usize) -> Parsed {
        self.left = 0;
        self.pos = 0;
        self.scan = 0;
        self.bulk = None;
        self.returned = true;
        Parsed::Command { consumed }
    }

    /// The offset of the first `byte` at or after `from`, searching as C's
    /// `strchr` does (see [`find_stop`]). Remembers how far it looked, so
    /// bytes arriving one at a time are each looked at once.
    fn line_end(&mut self, buf: &[u8], from: usize, byte: u8) -> Option<usize> {
        match find_stop(buf, self.scan.max(from), byte) {
            Ok(nl) => {
                self.scan = 0;
                Some(nl)
            }
            Err(resume) => {
                self.scan = resume;
                None
            }
        }
    }

    #[inline]
    fn parse_bulks(&mut self, buf: &[u8], limits: Limits) -> Parsed {
        // The loop works on local copies of the progress fields (so an
        // argument costs a few register operations, not a round trip through
        // `self` each) and writes them back when the request is incomplete.
        let (mut left, mut pos, mut bulk) = (self.left, self.pos, self.bulk);
        let mut scan = self.scan.max(pos);
        let incomplete = loop {
            if left == 0 {
                break None;
            }
            let len = match bulk {
                Some(len) => len,
                None => {
                    if pos >= buf.len() {
                        break Some(pos + 1);
                    }
                    let nl = match find_stop(buf, scan, b'\r') {
                        Ok(nl) => nl,
                        Err(resume) => {
                            if buf.len() - pos > INLINE_MAX {
                                return Parsed::Error(ProtocolError::TooBigBulkCount);
                            }
                            scan = resume;
                            break Some(buf.len() + 1);
                        }
                    };
                    if nl + 1 >= buf.len() {
                        // Looked at again once the LF is there.
                        scan = nl;
                        break Some(nl + 2);
                    }
                    if buf[pos] != b'$' {
                        return Parsed::Error(ProtocolError::ExpectedDollar(buf[pos]));
                    }
                    let len = match parse_i64(&buf[pos + 1..nl]) {
                        Some(n) if n >= 0 && n <= limits.max_bulk => n,
                        _ => return Parsed::Error(ProtocolError::InvalidBulkLength),
                    };
                    if !limits.authenticated && len > UNAUTH_BULK_MAX {
                        return Parsed::Error(ProtocolError::UnauthBulkLength);
                    }
                    pos = nl + 2;
                    bulk = Some(len as usize);
                    len as usize
                }
            };
            let start = pos;
            let end = start + len;
            if buf.len() < end + 2 {
                break Some(end + 2);
            }
            self.args.push((start, end));
            // Redis does not check the trailing CRLF; it skips two bytes.
            pos = end + 2;
            scan = pos;
            bulk = None;
            left -= 1;
        };
        match incomplete {
            Some(need) => {
                (self.left, self.pos, self.bulk, self.scan) = (left, pos, bulk, scan);
                Parsed::Incomplete { need }
            }
            None => self.done(pos),
        }
    }

    fn parse_inline(&mut self, buf: &[u8]) -> Parsed {
        let Some(nl) = self.line_end(buf, 0, b'\n') else {
            if buf.len() > INLINE_MAX {
                return Parsed::Error(ProtocolError::TooBigInline);
            }
            return Parsed::Incomplete {
                need: buf.len() + 1,
            };
        };
        let mut end = nl;
        if end > 0 && buf[end - 1] == b'\r' {
            end -= 1;
        }
        if !inline::split_into(&buf[..end], &mut self.words, &mut self.args) {
            return Parsed::Error(ProtocolError::UnbalancedQuotes);
        }
        self.inline = true;
        self.done(nl + 1)
    }
}

/// The offset of the first `byte` (`\r` or `\n`) at or after `from`, as
/// C's `strchr` finds it: a NUL byte ends the search (Redis's query buffer is
/// a C string there), so a line holding a NUL never ends. `Err` gives where
/// to resume once more bytes arrive: the NUL, or the end.
#[inline]
fn find_stop(buf: &[u8], from: usize, byte: u8) -> Result<usize, usize> {
    debug_assert!(byte <= b'\r');
    for (i, &b) in buf[from..].iter().enumerate() {
        // Both stops are at most '\r': one comparison for every other byte.
        if b <= b'\r' && (b == byte || b == 0) {
            return if b == byte {
                Ok(from + i)
            } else {
                Err(from + i)
            };
        }
    }
    Err(buf.len())
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
    if digits.len() <= 18 {
        // Cannot overflow (10^18 < 2^63): no checked arithmetic, which every
        // request's header and bulk lengths would pay for.
        for &c in digits {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + (c - b'0') as u64;
        }
        return Some(if neg { -(v as i64) } else { v as i64 });
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use ProtocolError as P;

    const L: Limits = Limits {
        max_bulk: 512 * 1024 * 1024,
        authenticated: true,
    };

    fn parse(buf: &[u8]) -> Parsed {
        Decoder::default().parse(buf, L)
    }

    fn words(buf: &[u8]) -> Vec<Vec<u8>> {
        let mut d = Decoder::default();
        match d.parse(buf, L) {
            Parsed::Command { .. } => {
                let (b, r) = d.request(buf);
                r.iter().map(|&(s, e)| b[s..e].to_vec()).collect()
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn multibulk_complete_and_split_everywhere() {
        let frame = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
        assert_eq!(words(frame), [&b"SET"[..], b"k", b"hello"]);
        for cut in 0..frame.len() {
            match parse(&frame[..cut]) {
                Parsed::Incomplete { need } => assert!(need > cut),
                other => panic!("cut {cut}: {other:?}"),
            }
        }
    }

    /// The same decoder fed a frame one byte at a time finishes it with the
    /// same arguments, resuming where it stopped.
    #[test]
    fn resumes_across_reads() {
        let mut frame = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n".to_vec();
        frame.extend_from_slice(b"PING\r\n");
        let mut d = Decoder::default();
        let mut buf = Vec::new();
        let mut got = Vec::new();
        for &b in &frame {
            buf.push(b);
            loop {
                match d.parse(&buf, L) {
                    Parsed::Command { consumed } => {
                        let (b, r) = d.request(&buf);
                        got.push(r.iter().map(|&(s, e)| b[s..e].to_vec()).collect::<Vec<_>>());
                        buf.drain(..consumed);
                    }
                    Parsed::Incomplete { .. } => break,
                    Parsed::Error(e) => panic!("{e:?}"),
                }
            }
        }
        assert_eq!(
            got,
            vec![
                vec![b"SET".to_vec(), b"k".to_vec(), b"hello".to_vec()],
                vec![b"PING".to_vec()]
            ]
        );
    }

    /// Arguments already parsed are not parsed again: the position kept
    /// across calls is past them.
    #[test]
    fn parsed_arguments_are_not_parsed_again() {
        let mut d = Decoder::default();
        let mut buf = b"*3\r\n$1\r\na\r\n$1\r\nb\r\n".to_vec();
        assert!(matches!(d.parse(&buf, L), Parsed::Incomplete { .. }));
        assert_eq!(d.parsed_len(), buf.len());
        // A header already parsed is not looked at again (parsed from byte 0,
        // this would be a protocol error).
        buf[4] = b'x';
        buf.extend_from_slice(b"$1\r\nc\r\n");
        assert_eq!(
            d.parse(&buf, L),
            Parsed::Command {
                consumed: buf.len()
            }
        );
        assert_eq!(d.request(&buf).1, &[(8, 9), (15, 16), (22, 23)]);
    }

    #[test]
    fn inline_requests() {
        assert_eq!(
            words(b"set \"a b\" 'c\\'d' \"\\x41\\n\"\r\n"),
            [&b"set"[..], b"a b", b"c'd", b"A\n"]
        );
        assert_eq!(parse(b"set \"abc\r\n"), Parsed::Error(P::UnbalancedQuotes));
        assert_eq!(
            parse(b"set \"abc\"x\r\n"),
            Parsed::Error(P::UnbalancedQuotes)
        );
        assert!(words(b"\r\n").is_empty());
    }

    /// Redis looks for the end of a line with `strchr`, which stops at a NUL:
    /// a line holding one never ends, until it is too big.
    #[test]
    fn a_nul_byte_keeps_a_line_from_ending() {
        assert!(matches!(parse(b"PING\0\r\n"), Parsed::Incomplete { .. }));
        assert!(matches!(parse(b"*1\0\r\n"), Parsed::Incomplete { .. }));
        assert!(matches!(
            parse(b"*1\r\n$4\0\r\n"),
            Parsed::Incomplete { .. }
        ));
        let mut big = b"PING\0\r\n".to_vec();
        big.resize(INLINE_MAX + 1, b'a');
        assert_eq!(parse(&big), Parsed::Error(P::TooBigInline));
        // NULs inside a bulk are data.
        assert_eq!(words(b"*1\r\n$3\r\na\0b\r\n"), [&b"a\0b"[..]]);
    }

    #[test]
    fn huge_declared_lengths_do_not_allocate() {
        match parse(b"*1\r\n$536870912\r\n") {
            Parsed::Incomplete { need } => assert!(need > 536870912),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse(b"*1\r\n$536870913\r\n"),
            Parsed::Error(P::InvalidBulkLength)
        );
        // Redis 7.0 accepts counts up to INT_MAX and allocates as arguments arrive.
        assert!(matches!(
            parse(b"*2147483647\r\n"),
            Parsed::Incomplete { .. }
        ));
        assert_eq!(
            parse(b"*2147483648\r\n"),
            Parsed::Error(P::InvalidMbulkCount)
        );
        assert_eq!(
            parse(b"*1\r\nx3\r\n"),
            Parsed::Error(P::ExpectedDollar(b'x'))
        );
        // Redis wants the whole header line before it looks at its first byte.
        assert!(matches!(parse(b"*1\r\nx3\r"), Parsed::Incomplete { .. }));
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
