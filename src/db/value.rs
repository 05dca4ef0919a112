//! The value stored under a key: one variant per Redis data type.

use crate::types::{hash::Hash, list::List, set::Set, stream::Stream, string::Str, zset::ZSet};

/// A key's value. Each type's representation (and its compact small encoding)
/// lives in `types/`, free of RESP.
pub enum Value {
    Str(Str),
    List(List),
    Hash(Hash),
    Set(Box<Set>),
    ZSet(Box<ZSet>),
    Stream(Box<Stream>),
}

/// The type names `TYPE` and `SCAN ... TYPE` use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Str,
    List,
    Hash,
    Set,
    ZSet,
    Stream,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Str => "string",
            Kind::List => "list",
            Kind::Hash => "hash",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::Stream => "stream",
        }
    }

    /// Parses a `TYPE` filter name (case-insensitive, as SCAN accepts).
    pub fn from_name(name: &[u8]) -> Option<Kind> {
        let lower = name.to_ascii_lowercase();
        Some(match &lower[..] {
            b"string" => Kind::Str,
            b"list" => Kind::List,
            b"hash" => Kind::Hash,
            b"set" => Kind::Set,
            b"zset" => Kind::ZSet,
            b"stream" => Kind::Stream,
            _ => return None,
        })
    }
}

impl Value {
    pub fn kind(&self) -> Kind {
        match self {
            Value::Str(_) => Kind::Str,
            Value::List(_) => Kind::List,
            Value::Hash(_) => Kind::Hash,
            Value::Set(_) => Kind::Set,
            Value::ZSet(_) => Kind::ZSet,
            Value::Stream(_) => Kind::Stream,
        }
    }

    /// The name `OBJECT ENCODING` answers, at Redis's thresholds.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding(),
            Value::List(l) => l.encoding(),
            Value::Hash(h) => h.encoding(),
            Value::Set(s) => s.encoding(),
            Value::ZSet(z) => z.encoding(),
            Value::Stream(s) => s.encoding(),
        }
    }

    /// An independent copy (for `COPY`).
    pub fn deep_clone(&self) -> Value {
        match self {
            Value::Str(s) => Value::Str(s.clone()),
            Value::List(l) => Value::List(l.clone()),
            Value::Hash(h) => Value::Hash(h.clone()),
            Value::Set(s) => Value::Set(s.clone()),
            Value::ZSet(z) => Value::ZSet(z.clone()),
            Value::Stream(s) => Value::Stream(s.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_value_is_two_words() {
        // The keyspace entry is sized around this (src/db/dict.rs): 16
        // bytes, a small string inline (its tag byte is also the Value's)
        // and every other type behind a pointer (a hash: a packed buffer's
        // pointer and length, 12 bytes).
        assert_eq!(std::mem::size_of::<crate::types::hash::Hash>(), 12);
        assert_eq!(std::mem::size_of::<super::Value>(), 16);
        assert_eq!(std::mem::size_of::<super::super::Entry>(), 24);
    }
}
