//! A chained hash table keyed by bytes, with Redis's SCAN cursor guarantee.
//!
//! Invariants:
//! - `buckets.len()` is 0 or a power of two; an entry lives in bucket `hash & mask`.
//! - The table doubles when `len > buckets` and halves when it is under 1/8 full,
//!   so chains stay short; a resize rehashes everything at once.
//! - [`Dict::scan`] walks buckets in reverse-binary order (Redis's `dictScan`):
//!   a key present for the whole of a scan is returned at least once, whatever
//!   resizes happen between calls, because growing or shrinking a power-of-two
//!   table maps each bucket onto buckets that share its low bits.

use std::hash::BuildHasher;

type Link<V> = Option<EntryBox<V>>;

/// An entry's fixed part. The key's bytes follow it in the same heap block,
/// from [`EntryBox::KEY_OFF`] (inside the struct's trailing padding when it
/// has some), so an entry costs one allocation sized to its key.
///
/// Invariant: an `Entry` only ever lives in the block of an [`EntryBox`] and
/// is never copied out whole (that could clobber the key bytes in its
/// padding); fields are read and written one at a time.
#[repr(C)]
struct Entry<V> {
    next: Link<V>,
    val: V,
    klen: u32,
}

/// Owning thin pointer to an [`Entry`] and its key bytes.
struct EntryBox<V>(
    std::ptr::NonNull<Entry<V>>,
    std::marker::PhantomData<Entry<V>>,
);

// SAFETY: an EntryBox owns its block exclusively, as a Box does.
unsafe impl<V: Send> Send for EntryBox<V> {}
// SAFETY: shared access only reads, as with a Box.
unsafe impl<V: Sync> Sync for EntryBox<V> {}

impl<V> EntryBox<V> {
    /// Where the key's bytes start: right after `klen`.
    const KEY_OFF: usize = std::mem::offset_of!(Entry<V>, klen) + 4;

    fn layout(klen: usize) -> std::alloc::Layout {
        let size = (Self::KEY_OFF + klen).max(std::mem::size_of::<Entry<V>>());
        match std::alloc::Layout::from_size_align(size, std::mem::align_of::<Entry<V>>()) {
            Ok(l) => l,
            Err(_) => panic!("key too long for a table entry"),
        }
    }

    fn new(key: &[u8], val: V, next: Link<V>) -> Self {
        // Keys are bounded by proto-max-bulk-len; 4 GiB is far above any
        // key a request can carry.
        let klen = u32::try_from(key.len()).expect("key longer than 4 GiB");
        let layout = Self::layout(key.len());
        // SAFETY: the layout is non-zero (it holds an Entry); the Entry is
        // written first, then the key bytes after `KEY_OFF`, all within
        // the block.
        unsafe {
            let p = std::alloc::alloc(layout) as *mut Entry<V>;
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            p.write(Entry { next, val, klen });
            std::ptr::copy_nonoverlapping(
                key.as_ptr(),
                (p as *mut u8).add(Self::KEY_OFF),
                key.len(),
            );
            EntryBox(
                std::ptr::NonNull::new_unchecked(p),
                std::marker::PhantomData,
            )
        }
    }

    #[inline]
    fn key(&self) -> &[u8] {
        // SAFETY: the block holds `klen` key bytes from `KEY_OFF`, and the
        // pointer carries the whole block's provenance.
        unsafe {
            let p = self.0.as_ptr();
            std::slice::from_raw_parts((p as *const u8).add(Self::KEY_OFF), (*p).klen as usize)
        }
    }

    /// The key with the value and the link, mutable (they do not overlap).
    #[inline]
    fn parts_mut(&mut self) -> (&[u8], &mut V, &mut Link<V>) {
        // SAFETY: the key bytes lie past `klen`, apart from `val` and `next`;
        // `self` is borrowed mutably for the results' lifetime.
        unsafe {
            let p = self.0.as_ptr();
            let key =
                std::slice::from_raw_parts((p as *const u8).add(Self::KEY_OFF), (*p).klen as usize);
            (key, &mut (*p).val, &mut (*p).next)
        }
    }

    /// Frees the block, giving back a copy of the key and the value.
    fn into_parts(self) -> (Box<[u8]>, V) {
        let key: Box<[u8]> = self.key().into();
        let me = std::mem::ManuallyDrop::new(self);
        // SAFETY: `me` is not dropped; `val` is moved out once, `next` is
        // dropped in place, then the block is freed with its own layout.
        unsafe {
            let p = me.0.as_ptr();
            let klen = (*p).klen as usize;
            let val = std::ptr::read(&(*p).val);
            std::ptr::drop_in_place(&mut (*p).next);
            std::alloc::dealloc(p as *mut u8, Self::layout(klen));
            (key, val)
        }
    }
}

impl<V> Drop for EntryBox<V> {
    fn drop(&mut self) {
        // SAFETY: the block is live and owned; its Entry is dropped in place
        // (its fields only) and the block freed with the layout it had.
        unsafe {
            let p = self.0.as_ptr();
            let klen = (*p).klen as usize;
            std::ptr::drop_in_place(&mut (*p).next);
            std::ptr::drop_in_place(&mut (*p).val);
            std::alloc::dealloc(p as *mut u8, Self::layout(klen));
        }
    }
}

impl<V> std::ops::Deref for EntryBox<V> {
    type Target = Entry<V>;
    #[inline]
    fn deref(&self) -> &Entry<V> {
        // SAFETY: the block is live while the box is.
        unsafe { self.0.as_ref() }
    }
}

impl<V> std::ops::DerefMut for EntryBox<V> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Entry<V> {
        // SAFETY: the block is live and owned exclusively.
        unsafe { self.0.as_mut() }
    }
}

/// Bytes of a table entry before its key (the link, the value, the key
/// length): the fixed part of every entry (DEBUG STRUCTSIZE).
pub fn entry_header_size<V>() -> usize {
    EntryBox::<V>::KEY_OFF
}

/// Hash table from byte strings to `V`.
pub struct Dict<V> {
    buckets: Vec<Link<V>>,
    len: usize,
    /// foldhash's per-table seed: random, or fixed (see [`fixed_hash_seeds`]).
    seed: u64,
    /// The table hashes with foldhash's fixed shared seed instead of the
    /// process's random one.
    fixed_seed: bool,
    /// A keyspace table: it does not grow when the new bucket array would
    /// take memory over `maxmemory` (see [`set_growth_limit`]).
    guarded: bool,
}

thread_local! {
    /// Tables made on this thread hash with fixed seeds (see [`fixed_hash_seeds`]).
    static FIXED_HASH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The per-table seed of tables with fixed seeds.
const FIXED_TABLE_SEED: u64 = 0x1d15_5eed_0000_0001;

/// Makes tables created from now on, on this (a server's data) thread, hash
/// with fixed seeds, so that their layout, and with it every random pick
/// (RANDOMKEY, SRANDMEMBER, SPOP, HRANDFIELD, eviction samples), depends
/// only on what was stored and on the server's generator. Set when a
/// server starts with `enable-test-controls yes` (OXIDIS SEED); otherwise
/// every table has random seeds, against hash flooding.
pub fn fixed_hash_seeds(on: bool) {
    FIXED_HASH.with(|c| c.set(on));
}

thread_local! {
    /// The memory guarded tables may grow to (Redis's
    /// `overMaxmemoryAfterAlloc`): `maxmemory` plus what eviction does not
    /// count; 0 when there is no limit. Kept by `server::evict`.
    static GROWTH_LIMIT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Sets the memory limit guarded tables respect when they grow (0: none).
pub fn set_growth_limit(limit: u64) {
    GROWTH_LIMIT.with(|c| c.set(limit));
}

/// Past this load (entries per bucket) a guarded table grows whatever the
/// memory (Redis's `HASHTABLE_MAX_LOAD_FACTOR`).
const MAX_LOAD: f64 = 1.618;

/// Redis's `dictExpandAllowed`: growing by `more` bytes is allowed unless
/// it would cross the limit while the table is not yet overloaded.
fn growth_allowed(more: usize, load: f64) -> bool {
    let limit = GROWTH_LIMIT.with(|c| c.get());
    limit == 0 || load > MAX_LOAD || crate::server::memory::used_memory() + more as u64 <= limit
}

impl<V> Default for Dict<V> {
    fn default() -> Self {
        Self::new()
    }
}

const MIN_SIZE: usize = 4;

/// Entries [`Dict::random_fair`] samples before picking one (Redis's 15).
const FAIR_SAMPLE: usize = 15;

impl<V> Dict<V> {
    pub fn new() -> Self {
        Dict {
            buckets: Vec::new(),
            len: 0,
            seed: if FIXED_HASH.with(|c| c.get()) {
                FIXED_TABLE_SEED
            } else {
                // A random per-table seed, from foldhash's own source.
                foldhash::quality::RandomState::default().hash_one(0u64)
            },
            fixed_seed: FIXED_HASH.with(|c| c.get()),
            guarded: false,
        }
    }

    /// A keyspace table, whose growth respects `maxmemory`.
    pub fn guarded() -> Self {
        let mut d = Self::new();
        d.guarded = true;
        d
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of buckets (what Redis reports as the table size).
    pub fn slots(&self) -> usize {
        self.buckets.len()
    }

    /// How many entries each bucket chains (DEBUG HTSTATS).
    pub fn chain_lengths(&self) -> impl Iterator<Item = usize> + '_ {
        self.buckets.iter().map(|link| {
            let mut n = 0;
            let mut cur = link.as_ref();
            while let Some(e) = cur {
                n += 1;
                cur = e.next.as_ref();
            }
            n
        })
    }

    /// foldhash (quality) of the key, as its `RandomState` would hash it,
    /// with this table's seeds.
    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        use foldhash::SharedSeed;
        use std::hash::{Hash, Hasher};
        let shared = if self.fixed_seed {
            SharedSeed::global_fixed()
        } else {
            SharedSeed::global_random()
        };
        let mut h = foldhash::quality::FoldHasher::with_seed(self.seed, shared);
        key.hash(&mut h);
        h.finish()
    }

    #[inline]
    fn index(&self, key: &[u8]) -> usize {
        (self.hash(key) as usize) & (self.buckets.len() - 1)
    }

    pub fn get(&self, key: &[u8]) -> Option<&V> {
        if self.len == 0 {
            return None;
        }
        let mut cur = self.buckets[self.index(key)].as_ref();
        while let Some(e) = cur {
            if e.key() == key {
                return Some(&e.val);
            }
            cur = e.next.as_ref();
        }
        None
    }

    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        if self.len == 0 {
            return None;
        }
        let i = self.index(key);
        let mut cur = self.buckets[i].as_mut();
        while let Some(e) = cur {
            let (k, val, next) = e.parts_mut();
            if k == key {
                return Some(val);
            }
            cur = next.as_mut();
        }
        None
    }

    /// The stored key and value (the key is the table's own copy).
    pub fn get_key_value(&self, key: &[u8]) -> Option<(&[u8], &V)> {
        if self.len == 0 {
            return None;
        }
        let mut cur = self.buckets[self.index(key)].as_ref();
        while let Some(e) = cur {
            if e.key() == key {
                return Some((e.key(), &e.val));
            }
            cur = e.next.as_ref();
        }
        None
    }

    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: &[u8], val: V) -> Option<V> {
        if let Some(slot) = self.get_mut(key) {
            return Some(std::mem::replace(slot, val));
        }
        self.insert_key(key, val);
        None
    }

    /// Inserts a key known to be absent.
    pub fn insert_new(&mut self, key: Box<[u8]>, val: V) -> &mut V {
        self.insert_key(&key, val)
    }

    /// Inserts a key known to be absent, copying it from a slice.
    pub fn insert_new_slice(&mut self, key: &[u8], val: V) -> &mut V {
        self.insert_key(key, val)
    }

    /// Makes room for `n` entries, so that many inserts resize nothing on
    /// the way (Redis's `dictExpand` for an RDB's RESIZEDB); a guarded
    /// table only as far as `maxmemory` allows.
    pub fn reserve(&mut self, n: usize) {
        let size = n.checked_next_power_of_two().unwrap_or(0).max(MIN_SIZE);
        if size <= self.buckets.len() {
            return;
        }
        if !self.guarded || growth_allowed(size * std::mem::size_of::<Link<V>>(), 0.0) {
            self.resize(size);
        }
    }

    fn insert_key(&mut self, key: &[u8], val: V) -> &mut V {
        let hash = self.hash(key);
        self.insert_hashed(key, val, hash)
    }

    /// Inserts a key known to be absent whose hash is `hash`.
    fn insert_hashed(&mut self, key: &[u8], val: V, hash: u64) -> &mut V {
        if self.len >= self.buckets.len() {
            let size = (self.buckets.len() * 2).max(MIN_SIZE);
            let allowed = !self.guarded
                || self.buckets.is_empty()
                || growth_allowed(
                    size * std::mem::size_of::<Link<V>>(),
                    self.len as f64 / self.buckets.len() as f64,
                );
            if allowed {
                self.resize(size);
            }
        }
        let i = (hash as usize) & (self.buckets.len() - 1);
        let next = self.buckets[i].take();
        self.len += 1;
        &mut self.buckets[i].insert(EntryBox::new(key, val, next)).val
    }

    /// The value for `key`, inserting `make()` first when absent. The bool is true when inserted.
    /// One hash either way: the key's place in its chain is found first
    /// with a shared borrow, then reached again by counting links.
    #[inline]
    pub fn get_or_insert_with(&mut self, key: &[u8], make: impl FnOnce() -> V) -> (&mut V, bool) {
        let hash = self.hash(key);
        if self.len != 0 {
            let i = (hash as usize) & (self.buckets.len() - 1);
            let mut depth = 0;
            let mut cur = self.buckets[i].as_ref();
            let found = loop {
                match cur {
                    Some(e) if e.key() == key => break true,
                    Some(e) => {
                        cur = e.next.as_ref();
                        depth += 1;
                    }
                    None => break false,
                }
            };
            if found {
                let mut cur = self.buckets[i].as_mut();
                for _ in 0..depth {
                    cur = cur.and_then(|e| e.next.as_mut());
                }
                match cur {
                    Some(e) => return (&mut e.val, false),
                    None => unreachable!("the chain holds the key at this depth"),
                }
            }
        }
        (self.insert_hashed(key, make(), hash), true)
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        self.remove_entry(key).map(|(_, v)| v)
    }

    pub fn remove_entry(&mut self, key: &[u8]) -> Option<(Box<[u8]>, V)> {
        if self.len == 0 {
            return None;
        }
        let i = self.index(key);
        let mut link = &mut self.buckets[i];
        loop {
            match link {
                None => return None,
                Some(e) if e.key() == key => {
                    let Some(mut boxed) = link.take() else {
                        return None; // matched as Some just above
                    };
                    *link = boxed.next.take();
                    self.len -= 1;
                    let out = boxed.into_parts();
                    self.maybe_shrink();
                    return Some(out);
                }
                Some(e) => link = &mut e.next,
            }
        }
    }

    fn maybe_shrink(&mut self) {
        let size = self.buckets.len();
        if size > MIN_SIZE && self.len * 8 < size {
            self.resize((self.len.next_power_of_two()).max(MIN_SIZE));
        }
    }

    fn resize(&mut self, size: usize) {
        let old = std::mem::replace(&mut self.buckets, (0..size).map(|_| None).collect());
        for mut link in old {
            while let Some(mut e) = link {
                link = e.next.take();
                let i = (self.hash(e.key()) as usize) & (size - 1);
                e.next = self.buckets[i].take();
                self.buckets[i] = Some(e);
            }
        }
    }

    pub fn clear(&mut self) {
        // Drop chains iteratively so a long chain cannot overflow the stack.
        for link in self.buckets.iter_mut() {
            let mut cur = link.take();
            while let Some(mut e) = cur {
                cur = e.next.take();
            }
        }
        self.buckets = Vec::new();
        self.len = 0;
    }

    pub fn iter(&self) -> Iter<'_, V> {
        Iter {
            buckets: &self.buckets,
            bucket: 0,
            cur: None,
        }
    }

    /// Visits every entry mutably.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&[u8], &mut V)) {
        for link in self.buckets.iter_mut() {
            let mut cur = link.as_mut();
            while let Some(e) = cur {
                let (k, val, next) = e.parts_mut();
                f(k, val);
                cur = next.as_mut();
            }
        }
    }

    /// Keeps only the entries for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8], &mut V) -> bool) {
        let mut removed = 0;
        for link in self.buckets.iter_mut() {
            let mut cur = link.take();
            let mut kept: Link<V> = None;
            while let Some(mut e) = cur {
                let (k, val, next) = e.parts_mut();
                cur = next.take();
                if keep(k, val) {
                    e.next = kept;
                    kept = Some(e);
                } else {
                    removed += 1;
                }
            }
            *link = kept;
        }
        self.len -= removed;
        self.maybe_shrink();
    }

    /// One SCAN step: visits one bucket (and, after a resize, the buckets it
    /// maps to) and returns the next cursor, 0 when the iteration is complete.
    pub fn scan(&self, cursor: u64, mut f: impl FnMut(&[u8], &V)) -> u64 {
        if self.buckets.is_empty() {
            return 0;
        }
        let mask = (self.buckets.len() - 1) as u64;
        let mut v = cursor;
        let mut cur = self.buckets[(v & mask) as usize].as_ref();
        while let Some(e) = cur {
            f(e.key(), &e.val);
            cur = e.next.as_ref();
        }
        // Increment the reversed cursor (Redis's dictScan).
        v |= !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }

    /// Walks whole chains of consecutive buckets from a random one, handing
    /// `visit` every entry met, until `visit` says it has enough or about
    /// `want * 10` buckets were looked at; a long stretch of empty buckets
    /// jumps to another random place (sparse tables). The walk of Redis's
    /// `dictGetSomeKeys`, shared by [`Dict::random_fair`] and [`Dict::sample`].
    fn walk_from_random<'a>(
        &'a self,
        want: usize,
        mut rand: impl FnMut() -> u64,
        mut visit: impl FnMut(&'a EntryBox<V>, &mut dyn FnMut() -> u64) -> bool,
    ) {
        if self.len == 0 {
            return;
        }
        let mask = self.buckets.len() - 1;
        let mut i = (rand() as usize) & mask;
        let mut empty_run = 0;
        let mut steps = want * 10;
        while steps > 0 {
            steps -= 1;
            match self.buckets[i].as_ref() {
                None => {
                    empty_run += 1;
                    if empty_run >= 5 && empty_run > want {
                        i = (rand() as usize) & mask;
                        empty_run = 0;
                    }
                }
                Some(head) => {
                    empty_run = 0;
                    let mut cur = Some(head);
                    while let Some(e) = cur {
                        if visit(e, &mut rand) {
                            return;
                        }
                        cur = e.next.as_ref();
                    }
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// A random entry, drawn from a sample of up to [`FAIR_SAMPLE`] entries
    /// found in consecutive buckets from a random one (Redis's
    /// `dictGetFairRandomKey`). [`Dict::random`] favours entries alone in
    /// their bucket (one in a chain of two is picked half as often); this is
    /// what HRANDFIELD, SRANDMEMBER, SPOP and RANDOMKEY use, as Redis does.
    pub fn random_fair(&self, mut rand: impl FnMut() -> u64) -> Option<(&[u8], &V)> {
        if self.len == 0 {
            return None;
        }
        let want = FAIR_SAMPLE.min(self.len);
        let mut sample: [Option<&EntryBox<V>>; FAIR_SAMPLE] = [None; FAIR_SAMPLE];
        let mut seen = 0usize;
        // The whole chain is sampled (reservoir sampling past `want`), so
        // the end of a chain is not disfavoured; the walk stops once a
        // chain ends with `want` entries seen.
        self.walk_from_random(want, &mut rand, |e, rand| {
            if seen < want {
                sample[seen] = Some(e);
            } else {
                let r = (rand() % (seen as u64 + 1)) as usize;
                if r < want {
                    sample[r] = Some(e);
                }
            }
            seen += 1;
            seen >= want && e.next.is_none()
        });
        if seen == 0 {
            return self.random(rand);
        }
        let e = sample[(rand() % seen.min(want) as u64) as usize]?;
        Some((e.key(), &e.val))
    }

    /// Up to `count` entries found in consecutive buckets from a random one
    /// (Redis's `dictGetSomeKeys`, what eviction samples): cheap, not
    /// uniform, and possibly fewer than `count` in a sparse table.
    pub fn sample(&self, count: usize, rand: impl FnMut() -> u64, mut f: impl FnMut(&[u8], &V)) {
        let want = count.min(self.len);
        let mut n = 0;
        self.walk_from_random(want, rand, |e, _| {
            f(e.key(), &e.val);
            n += 1;
            n >= want
        });
    }

    /// A random entry, choosing a random non-empty bucket then a random entry
    /// in its chain (Redis's `dictGetRandomKey`). `rand` returns uniform u64s.
    pub fn random(&self, mut rand: impl FnMut() -> u64) -> Option<(&[u8], &V)> {
        if self.len == 0 {
            return None;
        }
        let mask = self.buckets.len() - 1;
        loop {
            let i = (rand() as usize) & mask;
            if let Some(head) = self.buckets[i].as_ref() {
                let mut n = 0;
                let mut cur = Some(head);
                while let Some(e) = cur {
                    n += 1;
                    cur = e.next.as_ref();
                }
                let pick = (rand() % n) as usize;
                // `pick` is below the chain's length, counted just above.
                let mut cur = head;
                for _ in 0..pick {
                    match cur.next.as_ref() {
                        Some(next) => cur = next,
                        None => break,
                    }
                }
                return Some((cur.key(), &cur.val));
            }
        }
    }
}

impl<V> Drop for Dict<V> {
    fn drop(&mut self) {
        self.clear();
    }
}

pub struct Iter<'a, V> {
    buckets: &'a [Link<V>],
    bucket: usize,
    cur: Option<&'a EntryBox<V>>,
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a [u8], &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.cur {
                self.cur = e.next.as_ref();
                return Some((e.key(), &e.val));
            }
            if self.bucket >= self.buckets.len() {
                return None;
            }
            self.cur = self.buckets[self.bucket].as_ref();
            self.bucket += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn reserve_sizes_the_table_once_for_that_many_inserts() {
        let mut d: Dict<usize> = Dict::new();
        d.reserve(1000);
        assert_eq!(d.slots(), 1024);
        for i in 0..1000 {
            d.get_or_insert_with(format!("k{i}").as_bytes(), || i);
        }
        assert_eq!(d.slots(), 1024);
        assert!((0..1000).all(|i| d.get(format!("k{i}").as_bytes()) == Some(&i)));
        // Never smaller, and a count no size holds is ignored.
        d.reserve(10);
        d.reserve(usize::MAX);
        assert_eq!(d.slots(), 1024);
        assert_eq!(d.len(), 1000);
    }

    /// A keyspace entry (16-byte value, LRU and LFU words) with a key of up
    /// to 12 bytes takes jemalloc's 48-byte class: 1M small strings cost
    /// 48 bytes each plus a bucket.
    #[test]
    fn a_small_keyspace_entry_fits_48_bytes() {
        assert_eq!(EntryBox::<crate::db::Entry>::KEY_OFF, 36);
        assert!(EntryBox::<crate::db::Entry>::layout(12).size() <= 48);
    }

    #[test]
    fn short_and_long_keys_round_trip() {
        let mut d: Dict<usize> = Dict::new();
        let keys: Vec<Vec<u8>> = (0..64).map(|n| vec![b'k'; n]).collect();
        for (i, k) in keys.iter().enumerate() {
            if i % 2 == 0 {
                d.insert_new(k.clone().into_boxed_slice(), i);
            } else {
                d.insert(k, i);
            }
        }
        assert_eq!(std::mem::size_of::<Link<usize>>(), 8);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(d.get(k), Some(&i));
            assert_eq!(d.get_key_value(k).unwrap().0, &k[..]);
        }
        let mut seen: Vec<Vec<u8>> = d.iter().map(|(k, _)| k.to_vec()).collect();
        seen.sort();
        assert_eq!(seen, keys);
        for (i, k) in keys.iter().enumerate() {
            let (bk, v) = d.remove_entry(k).unwrap();
            assert_eq!((&*bk, v), (&k[..], i));
        }
        assert!(d.is_empty());
    }

    #[test]
    fn insert_get_remove() {
        let mut d = Dict::new();
        for i in 0..1000u32 {
            assert!(d.insert(&i.to_be_bytes(), i).is_none());
        }
        assert_eq!(d.len(), 1000);
        for i in 0..1000u32 {
            assert_eq!(d.get(&i.to_be_bytes()), Some(&i));
        }
        for i in 0..990u32 {
            assert_eq!(d.remove(&i.to_be_bytes()), Some(i));
        }
        assert_eq!(d.len(), 10);
        assert!(d.slots() <= 16);
        assert_eq!(d.iter().count(), 10);
    }

    /// `get_or_insert_with` finds a key wherever it sits in its chain (the
    /// table is as full as it gets, so chains are several links long) and
    /// inserts only what is absent.
    #[test]
    fn get_or_insert_with_reaches_every_link() {
        let mut d: Dict<usize> = Dict::new();
        for i in 0..512 {
            let (v, new) = d.get_or_insert_with(format!("k{i}").as_bytes(), || i);
            assert!(new && *v == i);
        }
        assert!(d
            .buckets
            .iter()
            .any(|b| b.as_ref().is_some_and(|e| e.next.is_some())));
        for i in 0..512 {
            let (v, new) = d.get_or_insert_with(format!("k{i}").as_bytes(), || usize::MAX);
            assert!(!new);
            assert_eq!(*v, i);
            *v += 1000;
        }
        for i in 0..512 {
            assert_eq!(d.get(format!("k{i}").as_bytes()), Some(&(i + 1000)));
        }
        assert_eq!(d.len(), 512);
    }

    #[test]
    fn scan_returns_every_stable_key_across_resizes() {
        let mut d = Dict::new();
        for i in 0..500u32 {
            d.insert(format!("stable{i}").as_bytes(), ());
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut step = 0;
        loop {
            cursor = d.scan(cursor, |k, _| {
                seen.insert(k.to_vec());
            });
            // Grow and shrink the table while the scan is in progress.
            step += 1;
            if step % 7 == 0 {
                for j in 0..300u32 {
                    d.insert(format!("tmp{step}-{j}").as_bytes(), ());
                }
            } else if step % 5 == 0 {
                d.retain(|k, _| k.starts_with(b"stable"));
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..500u32 {
            assert!(
                seen.contains(format!("stable{i}").as_bytes()),
                "missing {i}"
            );
        }
    }

    /// A deterministic xorshift generator for the sampling tests.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn random_fair_is_uniform_whatever_the_chains() {
        // 10 entries in 16 buckets: some share a bucket, which `random`
        // picks half as often (HRANDFIELD's chi-square test in Redis's suite).
        let mut d = Dict::new();
        for i in 0..10u32 {
            d.insert(format!("f{i}").as_bytes(), i as usize);
        }
        let mut counts = [0u32; 10];
        let mut rand = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..100_000 {
            counts[*d.random_fair(&mut rand).unwrap().1] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn random_fair_reaches_every_entry_of_a_big_table() {
        let mut d = Dict::new();
        for i in 0..1000u32 {
            d.insert(format!("m{i}").as_bytes(), i as usize);
        }
        // Leave it sparse (1/8 full) so the empty-run jumps are exercised.
        d.retain(|_, v| *v % 7 == 0);
        let mut seen = HashSet::new();
        let mut rand = xorshift(42);
        for _ in 0..20_000 {
            seen.insert(*d.random_fair(&mut rand).unwrap().1);
        }
        assert_eq!(seen.len(), d.len());
    }
}
