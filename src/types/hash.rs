//! Hash values: a packed field/value run while small (`listpack`), a dict beyond (`hashtable`).
//!
//! Invariants: the packed form holds `len` pairs as 2·len consecutive entries
//! (field, value), in insertion order, with no field twice, and is only used
//! while `len <= hash-max-listpack-entries` and every field and value is at
//! most `hash-max-listpack-value` bytes. Crossing either limit converts to the
//! dict for good, as Redis never converts back.

use std::ptr::NonNull;

use super::pack;
use crate::db::dict::Dict;

/// The `hash-max-listpack-*` limits a write is checked against.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub entries: usize,
    pub value: usize,
}

/// A hash value in 12 bytes, so that a keyspace `Value` is 16 (the enum
/// tag of `Value` sits in the bytes before it).
///
/// Invariants: when `word` is [`TABLE`], `ptr` is a `Box<Dict<..>>` this
/// value owns; otherwise the hash is packed and `ptr` is the data pointer
/// of a `Box<[u8]>` of exactly `word` bytes (dangling when 0), so the
/// buffer costs its length and nothing for a capacity.
#[repr(C, packed(4))]
pub struct Hash {
    word: u32,
    ptr: NonNull<u8>,
}

/// `Hash::word` of the dict encoding (a packed buffer is always shorter).
const TABLE: u32 = u32::MAX;

type Table = Dict<Box<[u8]>>;

// SAFETY: a Hash owns its buffer or dict exclusively, as a Box does.
unsafe impl Send for Hash {}
// SAFETY: shared access only reads, as with a Box.
unsafe impl Sync for Hash {}

impl Default for Hash {
    fn default() -> Self {
        Hash::from_pack(Vec::new())
    }
}

impl Drop for Hash {
    fn drop(&mut self) {
        if self.word == TABLE {
            // SAFETY: `ptr` came from `Box::into_raw` of a table we own.
            drop(unsafe { Box::from_raw(self.ptr.as_ptr() as *mut Table) });
        } else {
            drop(self.take_pack());
        }
    }
}

impl Clone for Hash {
    fn clone(&self) -> Self {
        match self.packed() {
            Some(buf) => Hash::from_pack(buf.to_vec()),
            None => {
                let mut t = Dict::new();
                for (k, v) in self.table().map(|d| d.iter()).into_iter().flatten() {
                    t.insert(k, v.clone());
                }
                Hash::from_table(Box::new(t))
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

/// A dict holding a packed buffer's pairs.
fn to_dict(buf: &[u8]) -> Box<Table> {
    let mut d = Dict::new();
    let mut it = pack::Iter::new(buf);
    while let (Some(f), Some(v)) = (it.next(), it.next()) {
        d.insert(f, Box::<[u8]>::from(v));
    }
    Box::new(d)
}

impl Hash {
    pub fn new() -> Hash {
        Hash::default()
    }

    /// A packed hash holding `buf` (pairs of `pack` entries), trimmed to
    /// its length; a buffer too long for the length word becomes a dict.
    pub fn from_pack(buf: Vec<u8>) -> Hash {
        let word = match u32::try_from(buf.len()) {
            Ok(w) if w != TABLE => w,
            _ => return Hash::from_table(to_dict(&buf)),
        };
        let raw = Box::into_raw(buf.into_boxed_slice()) as *mut u8;
        Hash {
            word,
            // SAFETY: a Box's data pointer is never null (dangling when empty).
            ptr: unsafe { NonNull::new_unchecked(raw) },
        }
    }

    /// A dict-encoded hash.
    pub fn from_table(d: Box<Table>) -> Hash {
        Hash {
            word: TABLE,
            ptr: NonNull::from(Box::leak(d)).cast(),
        }
    }

    /// The packed buffer, when the hash is packed.
    #[inline]
    pub fn packed(&self) -> Option<&[u8]> {
        let (word, ptr) = (self.word, self.ptr);
        // SAFETY: a packed hash's `ptr` holds `word` initialized bytes,
        // borrowed for as long as `self` is.
        (word != TABLE).then(|| unsafe { std::slice::from_raw_parts(ptr.as_ptr(), word as usize) })
    }

    /// The dict, when the hash is dict-encoded.
    #[inline]
    fn table(&self) -> Option<&Table> {
        let ptr = self.ptr;
        // SAFETY: a dict-encoded hash's `ptr` is its live table.
        (self.word == TABLE).then(|| unsafe { &*(ptr.as_ptr() as *const Table) })
    }

    /// Entries per bucket of the dict, when dict-encoded (DEBUG HTSTATS-KEY).
    pub fn chain_lengths(&self) -> Option<Vec<usize>> {
        self.table().map(|t| t.chain_lengths().collect())
    }

    #[inline]
    fn table_mut(&mut self) -> Option<&mut Table> {
        let ptr = self.ptr;
        // SAFETY: as `table`, borrowed mutably with `self`.
        (self.word == TABLE).then(|| unsafe { &mut *(ptr.as_ptr() as *mut Table) })
    }

    /// Moves a packed hash's buffer out (leaving it empty) for editing;
    /// [`Hash::put_pack`] stores it back. None when dict-encoded.
    fn take_pack(&mut self) -> Option<Vec<u8>> {
        if self.word == TABLE {
            return None;
        }
        let (len, ptr) = (self.word as usize, self.ptr);
        self.word = 0;
        self.ptr = NonNull::dangling();
        // SAFETY: `ptr` and `len` are those of the boxed slice `from_pack`
        // leaked, owned by this hash until now and forgotten by it above.
        let b = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr.as_ptr(), len)) };
        Some(b.into_vec())
    }

    /// Stores an edited buffer back into an emptied packed hash.
    fn put_pack(&mut self, buf: Vec<u8>) {
        // The old value is an empty pack: replacing it frees nothing.
        *self = Hash::from_pack(buf);
    }

    pub fn is_packed(&self) -> bool {
        self.word != TABLE
    }

    pub fn encoding(&self) -> &'static str {
        if self.is_packed() {
            "listpack"
        } else {
            "hashtable"
        }
    }

    pub fn len(&self) -> usize {
        match self.packed() {
            Some(buf) => pairs(buf),
            None => self.table().map_or(0, |d| d.len()),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self.packed() {
            Some(buf) => buf.is_empty(),
            None => self.table().is_none_or(|d| d.is_empty()),
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self.packed() {
            Some(buf) => {
                let (_, voff) = find(buf, field).ok()?;
                Some(pack::entry_at(buf, voff).0)
            }
            None => self.table()?.get(field).map(|v| &v[..]),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Converts to the dict encoding.
    fn convert(&mut self) {
        if let Some(buf) = self.take_pack() {
            *self = Hash::from_table(to_dict(&buf));
        }
    }

    /// The same hash, dict-encoded.
    pub fn into_table(mut self) -> Hash {
        self.convert();
        self
    }

    /// Converts ahead of a write whose strings exceed the packed value limit
    /// (Redis's `hashTypeTryConversion`).
    pub fn prepare<'a>(&mut self, strs: impl IntoIterator<Item = &'a [u8]>, lim: Limits) {
        if self.is_packed() && strs.into_iter().any(|s| s.len() > lim.value) {
            self.convert();
        }
    }

    /// Sets a field; true when it is new.
    pub fn set(&mut self, field: &[u8], value: &[u8], lim: Limits) -> bool {
        self.set_many([(field, value)], lim) == 1
    }

    /// Sets each (field, value) in turn; returns how many fields were new.
    /// A packed buffer is edited in place and trimmed once at the end.
    pub fn set_many<'a>(
        &mut self,
        pairs: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        lim: Limits,
    ) -> usize {
        let mut new = 0;
        let mut pairs = pairs.into_iter();
        if let Some(mut buf) = self.take_pack() {
            // A pair too long for the packed form, set after converting.
            let mut pending = None;
            let mut over = false;
            for (f, v) in pairs.by_ref() {
                if f.len() > lim.value || v.len() > lim.value {
                    pending = Some((f, v));
                    break;
                }
                match find(&buf, f) {
                    Ok((_, voff)) => pack::replace(&mut buf, voff, v),
                    Err(n) => {
                        pack::push(&mut buf, f);
                        pack::push(&mut buf, v);
                        new += 1;
                        if n + 1 > lim.entries {
                            over = true;
                            break;
                        }
                    }
                }
            }
            if pending.is_none() && !over {
                self.put_pack(buf);
                return new;
            }
            *self = Hash::from_table(to_dict(&buf));
            if let Some((f, v)) = pending {
                new += self.table_set(f, v) as usize;
            }
        }
        for (f, v) in pairs {
            new += self.table_set(f, v) as usize;
        }
        new
    }

    /// Sets a field of a dict-encoded hash; true when it is new.
    fn table_set(&mut self, field: &[u8], value: &[u8]) -> bool {
        self.table_mut()
            .is_some_and(|d| d.insert(field, value.into()).is_none())
    }

    /// Removes a field; true when it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self.take_pack() {
            Some(mut buf) => {
                let found = find(&buf, field);
                if let Ok((off, _)) = found {
                    pack::remove(&mut buf, off);
                    pack::remove(&mut buf, off);
                }
                self.put_pack(buf);
                found.is_ok()
            }
            None => self.table_mut().is_some_and(|d| d.remove(field).is_some()),
        }
    }

    /// Every (field, value), in insertion order while packed.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match (self.packed(), self.table()) {
            (Some(buf), _) => {
                let mut it = pack::Iter::new(buf);
                Box::new(std::iter::from_fn(move || Some((it.next()?, it.next()?))))
            }
            (None, d) => Box::new(
                d.into_iter()
                    .flat_map(|d| d.iter().map(|(k, v)| (k, &v[..]))),
            ),
        }
    }

    /// One HSCAN step: a packed hash is returned whole with cursor 0.
    pub fn scan(&self, cursor: u64, mut f: impl FnMut(&[u8], &[u8])) -> u64 {
        match self.table() {
            None => {
                for (k, v) in self.iter() {
                    f(k, v);
                }
                0
            }
            Some(d) => d.scan(cursor, |k, v| f(k, v)),
        }
    }

    /// A random pair (uniform over pairs when packed, Redis's dict sampling otherwise).
    pub fn random(&self, mut rand: impl FnMut() -> u64) -> Option<(&[u8], &[u8])> {
        match self.packed() {
            Some(buf) => {
                let len = pairs(buf);
                if len == 0 {
                    return None;
                }
                let i = (rand() % len as u64) as usize;
                self.iter().nth(i)
            }
            None => self.table()?.random_fair(rand).map(|(k, v)| (k, &v[..])),
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

    /// `set_many` gives what setting each pair in turn gives, whether the
    /// batch converts to a dict on the way (too many fields, or a value too
    /// long for the packed form) or not.
    #[test]
    fn set_many_matches_one_by_one_across_conversions() {
        let long = [b'x'; 9];
        let batches: [&[(&[u8], &[u8])]; 3] = [
            &[(b"a", b"1"), (b"b", b"2"), (b"a", b"3")],
            &[
                (b"a", b"1"),
                (b"b", b"2"),
                (b"c", b"3"),
                (b"d", b"4"),
                (b"e", b"5"),
                (b"a", b"6"),
            ],
            &[(b"a", b"1"), (b"b", &long), (b"c", b"3"), (b"b", b"4")],
        ];
        for batch in batches {
            let mut one = Hash::new();
            let created: usize = batch.iter().map(|(f, v)| one.set(f, v, LIM) as usize).sum();
            let mut many = Hash::new();
            assert_eq!(many.set_many(batch.iter().copied(), LIM), created);
            assert_eq!(many.encoding(), one.encoding());
            let mut a: Vec<(&[u8], &[u8])> = one.iter().collect();
            let mut b: Vec<(&[u8], &[u8])> = many.iter().collect();
            a.sort();
            b.sort();
            assert_eq!(a, b);
        }
    }

    /// A packed hash's buffer is exactly its entries (nothing kept for
    /// growth), and cloning or converting keeps every pair.
    #[test]
    fn packed_buffer_is_exact_and_survives_clone_and_conversion() {
        let mut h = Hash::new();
        assert!(h.is_empty() && h.packed() == Some(&[][..]));
        h.set_many([(&b"f1"[..], &b"v1"[..]), (b"f2", b"v2")], LIM);
        assert_eq!(h.packed().map(<[u8]>::len), Some(4 * pack::entry_size(2)));
        let c = h.clone();
        let t = h.into_table();
        assert_eq!(t.encoding(), "hashtable");
        assert_eq!(c.encoding(), "listpack");
        for x in [&c, &t] {
            assert_eq!(x.len(), 2);
            assert_eq!(x.get(b"f2"), Some(&b"v2"[..]));
        }
        assert_eq!(t.clone().get(b"f1"), Some(&b"v1"[..]));
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
