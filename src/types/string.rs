//! String values with Redis's three encodings: `int`, `embstr` and `raw`.

use std::borrow::Cow;

/// Longest string Redis stores as `embstr` (`OBJ_ENCODING_EMBSTR_SIZE_LIMIT`).
pub const EMBSTR_MAX: usize = 44;

/// A string value. `Int` holds values that `string2ll` accepts (canonical
/// decimal, no leading zeros, at most 20 bytes), so formatting it gives back
/// exactly the bytes that were stored. `Raw` is what in-place edits (APPEND,
/// SETRANGE, SETBIT) produce, as in Redis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Str {
    Int(i64),
    Emb(Vec<u8>),
    Raw(Vec<u8>),
}

impl Str {
    /// A value as `SET` stores it: integer-encoded when it can be.
    pub fn from_bytes(b: &[u8]) -> Str {
        if b.len() <= 20 {
            if let Some(n) = super::number::parse_i64(b) {
                return Str::Int(n);
            }
        }
        if b.len() <= EMBSTR_MAX {
            Str::Emb(b.to_vec())
        } else {
            Str::Raw(b.to_vec())
        }
    }

    pub fn from_vec(v: Vec<u8>) -> Str {
        if v.len() <= 20 {
            if let Some(n) = super::number::parse_i64(&v) {
                return Str::Int(n);
            }
        }
        if v.len() <= EMBSTR_MAX {
            Str::Emb(v)
        } else {
            Str::Raw(v)
        }
    }

    /// A value never integer-encoded (`createStringObject`: INCRBYFLOAT results).
    pub fn plain(v: Vec<u8>) -> Str {
        if v.len() <= EMBSTR_MAX {
            Str::Emb(v)
        } else {
            Str::Raw(v)
        }
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            Str::Int(_) => "int",
            Str::Emb(_) => "embstr",
            Str::Raw(_) => "raw",
        }
    }

    /// The bytes of the value (formatting an integer when needed).
    pub fn as_bytes(&self) -> Cow<'_, [u8]> {
        match self {
            Str::Int(n) => Cow::Owned(itoa::Buffer::new().format(*n).as_bytes().to_vec()),
            Str::Emb(v) | Str::Raw(v) => Cow::Borrowed(v),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Str::Int(n) => itoa::Buffer::new().format(*n).len(),
            Str::Emb(v) | Str::Raw(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value as an integer, by `string2ll`'s rules.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Str::Int(n) => Some(*n),
            Str::Emb(v) | Str::Raw(v) => super::number::parse_i64(v),
        }
    }

    /// The bytes for in-place editing; the value becomes `raw`, as Redis's
    /// `dbUnshareStringValue` makes it.
    pub fn make_raw(&mut self) -> &mut Vec<u8> {
        let bytes = match self {
            Str::Raw(_) => None,
            Str::Int(n) => Some(itoa::Buffer::new().format(*n).as_bytes().to_vec()),
            Str::Emb(v) => Some(std::mem::take(v)),
        };
        if let Some(b) = bytes {
            *self = Str::Raw(b);
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
        assert_eq!(Str::from_bytes(&[b'a'; 44]).encoding(), "embstr");
        assert_eq!(Str::from_bytes(&[b'a'; 45]).encoding(), "raw");
        let mut s = Str::from_bytes(b"12");
        s.make_raw().push(b'3');
        assert_eq!(s, Str::Raw(b"123".to_vec()));
    }
}
