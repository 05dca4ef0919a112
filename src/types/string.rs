//! String values with Redis's three encodings: `int`, `embstr` and `raw`.

use std::borrow::Cow;

/// Longest string Redis stores as `embstr` (`OBJ_ENCODING_EMBSTR_SIZE_LIMIT`).
pub const EMBSTR_MAX: usize = 44;

/// Longest string kept inside the value itself, without a heap allocation
/// (what fits next to the length byte and the enum tag in 16 bytes, so a
/// keyspace value is 24 bytes).
pub const INLINE_MAX: usize = 14;

/// A string value. `Int` holds values that `string2ll` accepts (canonical
/// decimal, no leading zeros, at most 20 bytes), so formatting it gives back
/// exactly the bytes that were stored. `Small` and `Emb` are both Redis's
/// `embstr` (at most 44 bytes): `Small` stores up to [`INLINE_MAX`] bytes
/// inline, saving an allocation per key, `Emb` the rest in one fixed-size
/// block (a thin pointer: the length is beside it). `Raw` is what longer
/// values and in-place edits (APPEND, SETRANGE, SETBIT) produce, as in
/// Redis; boxed so that every form stays a pointer wide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Str {
    Int(i64),
    /// Invariant: `len as usize <= INLINE_MAX`; bytes past `len` are zero.
    Small {
        len: u8,
        buf: [u8; INLINE_MAX],
    },
    /// Invariant: `INLINE_MAX < len as usize <= EMBSTR_MAX`; bytes past
    /// `len` are zero.
    Emb {
        len: u8,
        buf: Box<[u8; EMBSTR_MAX]>,
    },
    Raw(Box<Vec<u8>>),
}

impl Str {
    /// A value as `SET` stores it: integer-encoded when it can be.
    pub fn from_bytes(b: &[u8]) -> Str {
        if b.len() <= 20 {
            if let Some(n) = super::number::parse_i64(b) {
                return Str::Int(n);
            }
        }
        Str::plain_from_slice(b)
    }

    pub fn from_vec(v: Vec<u8>) -> Str {
        if v.len() <= 20 {
            if let Some(n) = super::number::parse_i64(&v) {
                return Str::Int(n);
            }
        }
        Str::plain(v)
    }

    /// A value never integer-encoded (`createStringObject`: INCRBYFLOAT results).
    pub fn plain(v: Vec<u8>) -> Str {
        if v.len() <= EMBSTR_MAX {
            Str::plain_from_slice(&v)
        } else {
            Str::raw(v)
        }
    }

    /// A `raw` value holding `v` as it is.
    pub fn raw(v: Vec<u8>) -> Str {
        Str::Raw(Box::new(v))
    }

    fn plain_from_slice(b: &[u8]) -> Str {
        if b.len() <= INLINE_MAX {
            let mut buf = [0u8; INLINE_MAX];
            buf[..b.len()].copy_from_slice(b);
            Str::Small {
                len: b.len() as u8,
                buf,
            }
        } else if b.len() <= EMBSTR_MAX {
            let mut buf = Box::new([0u8; EMBSTR_MAX]);
            buf[..b.len()].copy_from_slice(b);
            Str::Emb {
                len: b.len() as u8,
                buf,
            }
        } else {
            Str::raw(b.to_vec())
        }
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            Str::Int(_) => "int",
            Str::Small { .. } | Str::Emb { .. } => "embstr",
            Str::Raw(_) => "raw",
        }
    }

    /// The stored bytes, when the value is not integer-encoded.
    #[inline]
    pub fn as_slice(&self) -> Option<&[u8]> {
        match self {
            Str::Int(_) => None,
            Str::Small { len, buf } => Some(&buf[..*len as usize]),
            Str::Emb { len, buf } => Some(&buf[..*len as usize]),
            Str::Raw(v) => Some(v),
        }
    }

    /// The bytes of the value (formatting an integer when needed).
    pub fn as_bytes(&self) -> Cow<'_, [u8]> {
        match self {
            Str::Int(n) => Cow::Owned(itoa::Buffer::new().format(*n).as_bytes().to_vec()),
            _ => Cow::Borrowed(self.as_slice().unwrap_or_default()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Str::Int(n) => itoa::Buffer::new().format(*n).len(),
            Str::Small { len, .. } | Str::Emb { len, .. } => *len as usize,
            Str::Raw(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value as an integer, by `string2ll`'s rules.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Str::Int(n) => Some(*n),
            _ => super::number::parse_i64(self.as_slice()?),
        }
    }

    /// The bytes for in-place editing; the value becomes `raw`, as Redis's
    /// `dbUnshareStringValue` makes it.
    pub fn make_raw(&mut self) -> &mut Vec<u8> {
        let bytes = match self {
            Str::Raw(_) => None,
            Str::Int(n) => Some(itoa::Buffer::new().format(*n).as_bytes().to_vec()),
            Str::Small { len, buf } => Some(buf[..*len as usize].to_vec()),
            Str::Emb { len, buf } => Some(buf[..*len as usize].to_vec()),
        };
        if let Some(b) = bytes {
            *self = Str::raw(b);
        }
        match self {
            Str::Raw(v) => v,
            _ => unreachable!(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_follow_redis() {
        assert_eq!(Str::from_bytes(b"123").encoding(), "int");
        assert_eq!(Str::from_bytes(b"0123").encoding(), "embstr");
        assert_eq!(Str::from_bytes(&[b'a'; 30]).encoding(), "embstr");
        assert_eq!(Str::from_bytes(&[b'a'; 31]).encoding(), "embstr");
        assert_eq!(Str::from_bytes(&[b'a'; 44]).encoding(), "embstr");
        assert_eq!(Str::from_bytes(&[b'a'; 45]).encoding(), "raw");
        assert_eq!(Str::plain(b"1".to_vec()).encoding(), "embstr");
        let mut s = Str::from_bytes(b"12");
        s.make_raw().push(b'3');
        assert_eq!(s, Str::raw(b"123".to_vec()));
        let mut s = Str::from_bytes(b"ab");
        s.make_raw().push(b'c');
        assert_eq!(s.as_bytes(), &b"abc"[..]);
        assert_eq!(s.encoding(), "raw");
    }

    #[test]
    fn every_form_gives_back_its_bytes() {
        for n in [0usize, 1, 13, 14, 15, 20, 29, 30, 31, 44, 45, 100] {
            let b: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            let s = Str::from_bytes(&b);
            assert_eq!(s.as_bytes(), &b[..]);
            assert_eq!(s.len(), n);
            assert_eq!(Str::from_vec(b.clone()), s);
        }
        assert_eq!(Str::from_bytes(b"-42").as_bytes(), &b"-42"[..]);
        assert_eq!(std::mem::size_of::<Str>(), 16);
    }
}
