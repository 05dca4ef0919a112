//! Hash values: a packed field/value run while small (`listpack`), a dict beyond (`hashtable`).
//!
//! Invariants: the packed form holds `len` pairs as 2·len consecutive entries
//! (field, value), in insertion order, with no field twice, and is only used
//! while `len <= hash-max-listpack-entries` and every field and value is at
//! most `hash-max-listpack-value` bytes. Crossing either limit converts to the
//! dict for good, as Redis never converts back.

use super::pack;
use crate::db::dict::Dict;

/// The `hash-max-listpack-*` limits a write is checked against.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub entries: usize,
    pub value: usize,
}

pub enum Hash {
    /// Field, value, field, value... The pair count is not stored (a
    /// small hash is walked whole by any write anyway), which keeps a
    /// keyspace value at 24 bytes.
    Pack {
        buf: Vec<u8>,
    },
    Table(Box<Dict<Box<[u8]>>>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash::Pack { buf: Vec::new() }
    }
}

impl Clone for Hash {
    fn clone(&self) -> Self {
        match self {
            Hash::Pack { buf } => Hash::Pack { buf: buf.clone() },
            Hash::Table(d) => {
                let mut t = Dict::new();
                for (k, v) in d.iter() {
                    t.insert(k, v.clone());
                }
                Hash::Table(Box::new(t))
            }
        }
    }
}

/// Offset of `field`'s entry in a packed hash, and of its value; when it
/// is absent, the number of pairs (the whole buffer was walked).
fn find(buf: &[u8], field: &[u8]) -> Result<(usize, usize), usize> {
    let mut off = 0;
    let mut pairs = 0;
    while off < buf.len() {
        let (f, voff) = pack::entry_at(buf, off);
        if f == field {
            return Ok((off, voff));
        }
        let (_, next) = pack::entry_at(buf, voff);
        off = next;
        pairs += 1;
    }
    Err(pairs)
}

/// Pairs in a packed hash.
fn pairs(buf: &[u8]) -> usize {
    pack::Iter::new(buf).count() / 2
}

impl Hash {
    pub fn new() -> Hash {
        Hash::default()
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            Hash::Pack { .. } => "listpack",
            Hash::Table(_) => "hashtable",
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Hash::Pack { buf } => pairs(buf),
            Hash::Table(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            Hash::Pack { buf } => buf.is_empty(),
            Hash::Table(d) => d.is_empty(),
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            Hash::Pack { buf, .. } => {
                let (_, voff) = find(buf, field).ok()?;
                Some(pack::entry_at(buf, voff).0)
            }
            Hash::Table(d) => d.get(field).map(|v| &v[..]),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Converts to the dict encoding.
    fn convert(&mut self) {
        if let Hash::Pack { buf, .. } = self {
            let mut d = Dict::new();
            let mut it = pack::Iter::new(buf);
            while let (Some(f), Some(v)) = (it.next(), it.next()) {
                d.insert(f, Box::<[u8]>::from(v));
            }
            *self = Hash::Table(Box::new(d));
        }
    }

    /// Converts ahead of a write whose strings exceed the packed value limit
    /// (Redis's `hashTypeTryConversion`).
    pub fn prepare<'a>(&mut self, strs: impl IntoIterator<Item = &'a [u8]>, lim: Limits) {
        if matches!(self, Hash::Pack { .. }) && strs.into_iter().any(|s| s.len() > lim.value) {
            self.convert();
        }
    }

    /// Sets a field; true when it is new.
    pub fn set(&mut self, field: &[u8], value: &[u8], lim: Limits) -> bool {
        if matches!(self, Hash::Pack { .. }) && (field.len() > lim.value || value.len() > lim.value)
        {
            self.convert();
        }
        let (new, over) = match self {
            Hash::Pack { buf } => match find(buf, field) {
                Ok((_, voff)) => {
                    pack::replace(buf, voff, value);
                    (false, false)
                }
                Err(pairs) => {
                    pack::push(buf, field);
                    pack::push(buf, value);
                    (true, pairs + 1 > lim.entries)
                }
            },
            Hash::Table(d) => (d.insert(field, value.into()).is_none(), false),
        };
        if over {
            self.convert();
        }
        new
    }

    /// Drops spare capacity after a write (small hashes are many: no slack).
    pub fn fit(&mut self) {
        if let Hash::Pack { buf, .. } = self {
            pack::fit(buf);
        }
    }

    /// Removes a field; true when it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            Hash::Pack { buf } => match find(buf, field) {
                Ok((off, _)) => {
                    pack::remove(buf, off);
                    pack::remove(buf, off);
                    true
                }
                Err(_) => false,
            },
            Hash::Table(d) => d.remove(field).is_some(),
        }
    }

    /// Every (field, value), in insertion order while packed.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            Hash::Pack { buf, .. } => {
                let mut it = pack::Iter::new(buf);
                Box::new(std::iter::from_fn(move || Some((it.next()?, it.next()?))))
            }
            Hash::Table(d) => Box::new(d.iter().map(|(k, v)| (k, &v[..]))),
        }
    }

    /// One HSCAN step: a packed hash is returned whole with cursor 0.
    pub fn scan(&self, cursor: u64, mut f: impl FnMut(&[u8], &[u8])) -> u64 {
        match self {
            Hash::Pack { .. } => {
                for (k, v) in self.iter() {
                    f(k, v);
                }
                0
            }
            Hash::Table(d) => d.scan(cursor, |k, v| f(k, v)),
        }
    }

    /// A random pair (uniform over pairs when packed, Redis's dict sampling otherwise).
    pub fn random(&self, mut rand: impl FnMut() -> u64) -> Option<(&[u8], &[u8])> {
        match self {
            Hash::Pack { buf } => {
                let len = pairs(buf);
                if len == 0 {
                    return None;
                }
                let i = (rand() % len as u64) as usize;
                self.iter().nth(i)
            }
            Hash::Table(d) => d.random_fair(rand).map(|(k, v)| (k, &v[..])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIM: Limits = Limits {
        entries: 4,
        value: 8,
    };

    #[test]
    fn packed_keeps_insertion_order_then_converts() {
        let mut h = Hash::new();
        assert!(h.set(b"b", b"1", LIM));
        assert!(h.set(b"a", b"2", LIM));
        assert!(!h.set(b"b", b"3", LIM));
        let v: Vec<(&[u8], &[u8])> = h.iter().collect();
        assert_eq!(v, vec![(&b"b"[..], &b"3"[..]), (b"a", b"2")]);
        assert_eq!(h.encoding(), "listpack");
        assert!(h.remove(b"b"));
        assert!(!h.remove(b"b"));
        assert_eq!(h.get(b"a"), Some(&b"2"[..]));
        for f in [b"c", b"d", b"e", b"f"] {
            h.set(f, b"x", LIM);
        }
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 5);
        let mut g = Hash::new();
        g.set(b"f", b"123456789", LIM);
        assert_eq!(g.encoding(), "hashtable");
    }

    /// Random sets and removes against an insertion-ordered model, across
    /// the conversion to the dict.
    #[test]
    fn behaves_like_an_ordered_map() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let lim = Limits {
            entries: 40,
            value: 20,
        };
        let mut h = Hash::new();
        let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for _ in 0..5000 {
            let f = format!("f{}", next() % 60).into_bytes();
            let v = "v".repeat((next() % 22) as usize).into_bytes();
            if next() % 3 == 0 {
                let was = model.iter().position(|(k, _)| *k == f);
                assert_eq!(h.remove(&f), was.is_some());
                if let Some(i) = was {
                    model.remove(i);
                }
            } else {
                let new = h.set(&f, &v, lim);
                match model.iter_mut().find(|(k, _)| *k == f) {
                    Some(e) => {
                        assert!(!new);
                        e.1 = v;
                    }
                    None => {
                        assert!(new);
                        model.push((f, v));
                    }
                }
            }
            h.fit();
            assert_eq!(h.len(), model.len());
            if h.encoding() == "listpack" {
                let got: Vec<(&[u8], &[u8])> = h.iter().collect();
                let want: Vec<(&[u8], &[u8])> =
                    model.iter().map(|(k, v)| (&k[..], &v[..])).collect();
                assert_eq!(got, want);
            } else {
                for (k, v) in &model {
                    assert_eq!(h.get(k), Some(&v[..]));
                }
            }
        }
        assert_eq!(h.encoding(), "hashtable");
    }
}
