//! Set values: a sorted integer array while every member is an integer (`intset`), a dict beyond.
//!
//! Invariants: `Ints` is strictly increasing and holds at most
//! `set-max-intset-entries` members, each one a string `string2ll` accepts
//! (so formatting it gives the member back byte for byte). Adding a
//! non-integer or growing past the limit converts to the dict for good.
//! Redis 7.0.15 has no listpack sets.

use std::borrow::Cow;

use super::number::parse_i64;
use crate::db::dict::Dict;

pub enum Set {
    Ints(Vec<i64>),
    Table(Box<Dict<()>>),
}

impl Default for Set {
    fn default() -> Self {
        Set::Ints(Vec::new())
    }
}

impl Clone for Set {
    fn clone(&self) -> Self {
        match self {
            Set::Ints(v) => Set::Ints(v.clone()),
            Set::Table(d) => {
                let mut t = Dict::new();
                for (k, _) in d.iter() {
                    t.insert(k, ());
                }
                Set::Table(Box::new(t))
            }
        }
    }
}

/// A member as stored: an intset integer or bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

impl<'a> Member<'a> {
    pub fn to_bytes(self) -> Cow<'a, [u8]> {
        match self {
            Member::Int(n) => Cow::Owned(itoa::Buffer::new().format(n).as_bytes().to_vec()),
            Member::Bytes(b) => Cow::Borrowed(b),
        }
    }
}

impl Set {
    pub fn new() -> Set {
        Set::default()
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            Set::Ints(_) => "intset",
            Set::Table(_) => "hashtable",
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Set::Ints(v) => v.len(),
            Set::Table(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        match self {
            Set::Ints(v) => parse_i64(m).is_some_and(|n| v.binary_search(&n).is_ok()),
            Set::Table(d) => d.contains_key(m),
        }
    }

    fn convert(&mut self) {
        if let Set::Ints(v) = self {
            let mut d = Dict::new();
            let mut b = itoa::Buffer::new();
            for &n in v.iter() {
                d.insert(b.format(n).as_bytes(), ());
            }
            *self = Set::Table(Box::new(d));
        }
    }

    /// Adds a member; true when it is new. `max_ints` is `set-max-intset-entries`.
    pub fn add(&mut self, m: &[u8], max_ints: usize) -> bool {
        if let Set::Ints(v) = self {
            match parse_i64(m) {
                Some(n) => {
                    let Err(at) = v.binary_search(&n) else {
                        return false;
                    };
                    v.insert(at, n);
                    if v.len() > max_ints {
                        self.convert();
                    }
                    return true;
                }
                None => self.convert(),
            }
        }
        match self {
            Set::Table(d) => d.insert(m, ()).is_none(),
            Set::Ints(_) => unreachable!(),
        }
    }

    /// Removes a member; true when it was there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match self {
            Set::Ints(v) => match parse_i64(m).map(|n| v.binary_search(&n)) {
                Some(Ok(i)) => {
                    v.remove(i);
                    true
                }
                _ => false,
            },
            Set::Table(d) => d.remove(m).is_some(),
        }
    }

    /// Every member: ascending for an intset, table order otherwise.
    pub fn iter(&self) -> Box<dyn Iterator<Item = Member<'_>> + '_> {
        match self {
            Set::Ints(v) => Box::new(v.iter().map(|&n| Member::Int(n))),
            Set::Table(d) => Box::new(d.iter().map(|(k, _)| Member::Bytes(k))),
        }
    }

    /// One SSCAN step: an intset is returned whole with cursor 0.
    pub fn scan(&self, cursor: u64, mut f: impl FnMut(Member<'_>)) -> u64 {
        match self {
            Set::Ints(v) => {
                v.iter().for_each(|&n| f(Member::Int(n)));
                0
            }
            Set::Table(d) => d.scan(cursor, |k, _| f(Member::Bytes(k))),
        }
    }

    /// A random member.
    pub fn random(&self, mut rand: impl FnMut() -> u64) -> Option<Member<'_>> {
        match self {
            Set::Ints(v) if v.is_empty() => None,
            Set::Ints(v) => Some(Member::Int(v[(rand() % v.len() as u64) as usize])),
            Set::Table(d) => d.random_fair(rand).map(|(k, _)| Member::Bytes(k)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intset_sorted_then_converts() {
        let mut s = Set::new();
        for m in [&b"5"[..], b"-1", b"3", b"5"] {
            s.add(m, 4);
        }
        assert_eq!(s.encoding(), "intset");
        let v: Vec<Member> = s.iter().collect();
        assert_eq!(v, vec![Member::Int(-1), Member::Int(3), Member::Int(5)]);
        assert!(!s.contains(b"03"));
        assert!(s.contains(b"3"));
        s.add(b"7", 4);
        assert_eq!(s.encoding(), "intset");
        s.add(b"8", 4);
        assert_eq!(s.encoding(), "hashtable");
        assert!(s.contains(b"-1"));
        let mut t = Set::new();
        t.add(b"1", 512);
        t.add(b"a", 512);
        assert_eq!(t.encoding(), "hashtable");
        assert!(t.remove(b"1") && !t.remove(b"1"));
    }
}
