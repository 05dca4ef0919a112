//! Stream entry ids (`<ms>-<seq>`): parsing as Redis's `streamGenericParseIDOrReply`, formatting, successor and predecessor.

use std::fmt;

/// An entry id. The derived order (ms, then seq) is the stream's order, the
/// same as Redis's 128-bit big-endian rax keys.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

/// How an id argument was written, for XADD (`*`, `ms-*` or a full id).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Given {
    /// `ms-seq`, or `ms` alone (the sequence then comes from the caller).
    Full,
    /// `ms-*`: the sequence is to be generated.
    MsOnly,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The next id, None past the last possible one (`streamIncrID`).
    pub fn next(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                return None;
            }
            return Some(StreamId::new(self.ms + 1, 0));
        }
        Some(StreamId::new(self.ms, self.seq + 1))
    }

    /// The previous id, None before 0-0 (`streamDecrID`).
    pub fn prev(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                return None;
            }
            return Some(StreamId::new(self.ms - 1, u64::MAX));
        }
        Some(StreamId::new(self.ms, self.seq - 1))
    }

    /// Parses `ms[-seq]`, `-` and `+` (unless `strict`); a missing sequence
    /// is `missing_seq`. With `allow_star`, `ms-*` parses as [`Given::MsOnly`]
    /// with sequence 0. None on anything else (Redis's "Invalid stream ID").
    pub fn parse(
        arg: &[u8],
        missing_seq: u64,
        strict: bool,
        allow_star: bool,
    ) -> Option<(StreamId, Given)> {
        // Redis copies the argument into a 128-byte buffer first.
        if arg.len() > 127 {
            return None;
        }
        // C string semantics: the text ends at the first NUL.
        let arg = arg.split(|&b| b == 0).next().unwrap_or_default();
        if arg == b"-" || arg == b"+" {
            if strict {
                return None;
            }
            let id = if arg == b"-" {
                StreamId::MIN
            } else {
                StreamId::MAX
            };
            return Some((id, Given::Full));
        }
        let (ms_part, seq_part) = match arg.iter().position(|&b| b == b'-') {
            Some(i) => (&arg[..i], Some(&arg[i + 1..])),
            None => (arg, None),
        };
        let ms = parse_u64(ms_part)?;
        match seq_part {
            None => Some((StreamId::new(ms, missing_seq), Given::Full)),
            Some(b"*") if allow_star => Some((StreamId::new(ms, 0), Given::MsOnly)),
            Some(s) => Some((StreamId::new(ms, parse_u64(s)?), Given::Full)),
        }
    }

    /// Formats as `ms-seq` into a stack buffer.
    pub fn format(self, buf: &mut IdBuf) -> &[u8] {
        let mut a = itoa::Buffer::new();
        let ms = a.format(self.ms).as_bytes();
        buf.len = ms.len();
        buf.bytes[..ms.len()].copy_from_slice(ms);
        buf.bytes[buf.len] = b'-';
        buf.len += 1;
        let seq = a.format(self.seq).as_bytes();
        buf.bytes[buf.len..buf.len + seq.len()].copy_from_slice(seq);
        buf.len += seq.len();
        &buf.bytes[..buf.len]
    }

    pub fn to_bytes(self) -> Vec<u8> {
        self.format(&mut IdBuf::default()).to_vec()
    }
}

/// Room for the longest id text (20 + 1 + 20 bytes).
pub struct IdBuf {
    bytes: [u8; 44],
    len: usize,
}

impl Default for IdBuf {
    fn default() -> IdBuf {
        IdBuf {
            bytes: [0; 44],
            len: 0,
        }
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Redis's `string2ull`: a canonical signed integer (`string2ll`) must not
/// be negative; anything else goes through C's `strtoull`, which skips
/// leading white space, takes a sign (negating modulo 2^64) and refuses
/// overflow and trailing bytes.
fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Some(v) = crate::types::number::parse_i64(s) {
        return (v >= 0).then_some(v as u64);
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let neg = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_redis() {
        let p = |s: &str| StreamId::parse(s.as_bytes(), 7, false, false).map(|x| x.0);
        assert_eq!(p("1-2"), Some(StreamId::new(1, 2)));
        assert_eq!(p("5"), Some(StreamId::new(5, 7)));
        assert_eq!(p("-"), Some(StreamId::MIN));
        assert_eq!(p("+"), Some(StreamId::MAX));
        assert_eq!(
            p("18446744073709551615-18446744073709551615"),
            Some(StreamId::MAX)
        );
        assert_eq!(p("18446744073709551616"), None);
        assert_eq!(p("1-"), None);
        assert_eq!(p("-1"), None);
        assert_eq!(p("1--0"), Some(StreamId::new(1, 0)));
        assert_eq!(p("1- 5"), Some(StreamId::new(1, 5)));
        assert_eq!(p("a"), None);
        assert_eq!(p(""), None);
        assert_eq!(p("1-2-3"), None);
        assert_eq!(p("1-*"), None);
        assert_eq!(
            StreamId::parse(b"1-*", 0, true, true),
            Some((StreamId::new(1, 0), Given::MsOnly))
        );
        assert_eq!(StreamId::parse(b"+", 0, true, false), None);
    }

    #[test]
    fn next_and_prev_stop_at_the_ends() {
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::MIN.prev(), None);
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::new(3, 4).to_bytes(), b"3-4");
        assert_eq!(
            StreamId::MAX.to_bytes(),
            b"18446744073709551615-18446744073709551615"
        );
    }
}
