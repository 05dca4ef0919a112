//! The order index of a sorted set: entries sorted by (score, member) in
//! fixed-size chunks, with a Fenwick tree over the chunk lengths.
//!
//! Invariants:
//! - Every chunk is non-empty and holds at most [`CHUNK`] entries; chunks are
//!   in order and each chunk's entries are sorted by (score, member bytes),
//!   strictly increasing across the whole index (members are unique).
//! - `fen` is a 1-based Fenwick tree over `chunks[i].len()`, so the rank of a
//!   chunk's first entry (`prefix`) and the chunk holding rank r (`locate`) are
//!   O(log n). Adding or removing a whole chunk rebuilds `fen` in O(chunks).
//! - Entries store the score next to the member pointer so comparisons read
//!   the member bytes only on equal scores.
//!
//! Lookups, rank queries and rank/score/lex range starts are O(log n);
//! an insert or delete moves at most one chunk's worth of entries.

use std::cmp::Ordering;

use super::member::Member;

/// Entries per chunk: 4 KiB of (score, pointer) pairs.
pub const CHUNK: usize = 256;

#[derive(Clone, Copy)]
pub struct Entry {
    pub score: f64,
    pub member: Member,
}

impl Entry {
    #[inline]
    pub fn cmp_key(&self, score: f64, bytes: &[u8]) -> Ordering {
        match self.score.partial_cmp(&score) {
            Some(Ordering::Equal) | None => self.member.bytes().cmp(bytes),
            Some(o) => o,
        }
    }
}

#[derive(Default)]
pub struct Index {
    chunks: Vec<Vec<Entry>>,
    fen: Vec<usize>,
    len: usize,
}

impl Index {
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn rebuild(&mut self) {
        let n = self.chunks.len();
        self.fen.clear();
        self.fen.resize(n + 1, 0);
        for i in 1..=n {
            self.fen[i] += self.chunks[i - 1].len();
            let j = i + (i & i.wrapping_neg());
            if j <= n {
                let v = self.fen[i];
                self.fen[j] += v;
            }
        }
    }

    fn fen_add(&mut self, chunk: usize, delta: isize) {
        let mut i = chunk + 1;
        while i < self.fen.len() {
            self.fen[i] = (self.fen[i] as isize + delta) as usize;
            i += i & i.wrapping_neg();
        }
    }

    /// Number of entries in chunks `[0, chunk)`.
    fn prefix(&self, chunk: usize) -> usize {
        let mut i = chunk;
        let mut s = 0;
        while i > 0 {
            s += self.fen[i];
            i &= i - 1;
        }
        s
    }

    /// The (chunk, offset) holding rank `r` (< len).
    fn locate(&self, mut r: usize) -> (usize, usize) {
        let n = self.chunks.len();
        let mut pos = 0;
        let mut step = if n == 0 {
            0
        } else {
            1 << (usize::BITS - 1 - n.leading_zeros())
        };
        while step > 0 {
            let next = pos + step;
            if next <= n && self.fen[next] <= r {
                pos = next;
                r -= self.fen[next];
            }
            step >>= 1;
        }
        (pos, r)
    }

    /// The chunk where (score, bytes) belongs: the last whose first entry is <= it.
    fn chunk_for(&self, score: f64, bytes: &[u8]) -> usize {
        let p = self
            .chunks
            .partition_point(|c| c[0].cmp_key(score, bytes) != Ordering::Greater);
        p.saturating_sub(1)
    }

    /// Inserts an entry whose member is not present; returns its rank.
    pub fn insert(&mut self, score: f64, member: Member) -> usize {
        let e = Entry { score, member };
        let bytes = member.bytes();
        if self.chunks.is_empty() {
            self.chunks.push(vec![e]);
            self.len = 1;
            self.rebuild();
            return 0;
        }
        let mut ci = self.chunk_for(score, bytes);
        let mut pos =
            self.chunks[ci].partition_point(|x| x.cmp_key(score, bytes) == Ordering::Less);
        if self.chunks[ci].len() >= CHUNK {
            if ci + 1 == self.chunks.len() && pos == CHUNK {
                // Appending at the very end: start a new chunk so that
                // ascending inserts leave full chunks behind.
                let mut c = Vec::with_capacity(CHUNK);
                c.push(e);
                self.chunks.push(c);
                self.len += 1;
                self.rebuild();
                return self.len - 1;
            }
            let mut right = Vec::with_capacity(CHUNK);
            right.extend_from_slice(&self.chunks[ci][CHUNK / 2..]);
            self.chunks[ci].truncate(CHUNK / 2);
            self.chunks.insert(ci + 1, right);
            if pos > CHUNK / 2 {
                ci += 1;
                pos -= CHUNK / 2;
            }
            self.chunks[ci].insert(pos, e);
            self.len += 1;
            self.rebuild();
        } else {
            self.chunks[ci].insert(pos, e);
            self.len += 1;
            self.fen_add(ci, 1);
        }
        self.prefix(ci) + pos
    }

    /// (chunk, offset) of an exact entry.
    fn find(&self, score: f64, bytes: &[u8]) -> Option<(usize, usize)> {
        if self.chunks.is_empty() {
            return None;
        }
        let ci = self.chunk_for(score, bytes);
        self.chunks[ci]
            .binary_search_by(|x| x.cmp_key(score, bytes))
            .ok()
            .map(|p| (ci, p))
    }

    pub fn rank_of(&self, score: f64, bytes: &[u8]) -> Option<usize> {
        self.find(score, bytes).map(|(c, p)| self.prefix(c) + p)
    }

    /// Removes an exact entry, returning its member pointer.
    pub fn remove(&mut self, score: f64, bytes: &[u8]) -> Option<Member> {
        let (ci, p) = self.find(score, bytes)?;
        let e = self.chunks[ci].remove(p);
        self.len -= 1;
        self.after_shrink(ci, 1);
        Some(e.member)
    }

    /// Fixes chunk `ci` after `removed` entries left it: drops it when empty,
    /// merges it into its right neighbour when both are small.
    fn after_shrink(&mut self, ci: usize, removed: usize) {
        if self.chunks[ci].is_empty() {
            self.chunks.remove(ci);
            self.rebuild();
        } else if ci + 1 < self.chunks.len()
            && self.chunks[ci].len() + self.chunks[ci + 1].len() <= CHUNK / 2
        {
            let next = self.chunks.remove(ci + 1);
            self.chunks[ci].extend_from_slice(&next);
            self.rebuild();
        } else {
            self.fen_add(ci, -(removed as isize));
        }
    }

    #[inline]
    pub fn get(&self, rank: usize) -> Entry {
        let (c, p) = self.locate(rank);
        self.chunks[c][p]
    }

    /// Number of leading entries for which `before` holds (`before` must be
    /// true for a prefix of the order and false after it).
    pub fn count_before(&self, before: impl Fn(&Entry) -> bool) -> usize {
        // Chunks are never empty; an empty one would count as "before".
        let ci = self
            .chunks
            .partition_point(|c| c.last().is_none_or(&before));
        if ci == self.chunks.len() {
            return self.len;
        }
        self.prefix(ci) + self.chunks[ci].partition_point(|e| before(e))
    }

    /// Removes ranks `[start, end)`, handing each removed member to `f`.
    pub fn remove_range(&mut self, start: usize, end: usize, mut f: impl FnMut(Entry)) {
        let mut left = end.saturating_sub(start);
        if left == 0 {
            return;
        }
        let (mut ci, off) = self.locate(start);
        if off + left <= self.chunks[ci].len() {
            // Within one chunk (pops, small rank ranges): O(log n) bookkeeping.
            for e in self.chunks[ci].drain(off..off + left) {
                f(e);
            }
            self.len -= left;
            self.after_shrink(ci, left);
            return;
        }
        let mut off = off;
        while left > 0 {
            let c = &mut self.chunks[ci];
            let take = (c.len() - off).min(left);
            for e in c.drain(off..off + take) {
                f(e);
            }
            left -= take;
            self.len -= take;
            if c.is_empty() {
                self.chunks.remove(ci);
            } else {
                ci += 1;
            }
            off = 0;
        }
        // Merge a small chunk at the seam with its right neighbour.
        if ci > 0 && ci < self.chunks.len() {
            let l = ci - 1;
            if self.chunks[l].len() + self.chunks[ci].len() <= CHUNK {
                let next = self.chunks.remove(ci);
                self.chunks[l].extend_from_slice(&next);
            }
        }
        self.rebuild();
    }

    /// Entries from rank `start` on, ascending.
    pub fn iter_from(&self, start: usize) -> Iter<'_> {
        let (c, p) = if start < self.len {
            self.locate(start)
        } else {
            (self.chunks.len(), 0)
        };
        Iter {
            idx: self,
            chunk: c,
            off: p,
        }
    }

    /// Entries from rank `start` down to rank 0, descending.
    pub fn iter_rev_from(&self, start: usize) -> RevIter<'_> {
        if start >= self.len {
            return RevIter {
                idx: self,
                chunk: 0,
                off: 0,
            };
        }
        let (c, p) = self.locate(start);
        RevIter {
            idx: self,
            chunk: c,
            off: p + 1,
        }
    }

    /// Edits entries in place; `f` must keep the order (e.g. -0 to 0).
    pub fn for_each_mut(&mut self, f: impl FnMut(&mut Entry)) {
        self.chunks.iter_mut().flatten().for_each(f);
    }

    /// Every member pointer (for freeing and cloning).
    pub fn drain_all(&mut self) -> impl Iterator<Item = Entry> + '_ {
        self.len = 0;
        self.fen.clear();
        self.chunks.drain(..).flatten()
    }
}

pub struct Iter<'a> {
    idx: &'a Index,
    chunk: usize,
    off: usize,
}

impl Iterator for Iter<'_> {
    type Item = Entry;
    #[inline]
    fn next(&mut self) -> Option<Entry> {
        let c = self.idx.chunks.get(self.chunk)?;
        let e = c[self.off];
        self.off += 1;
        if self.off == c.len() {
            self.chunk += 1;
            self.off = 0;
        }
        Some(e)
    }
}

/// Descending iterator; `off` is one past the next entry in `chunk`.
pub struct RevIter<'a> {
    idx: &'a Index,
    chunk: usize,
    off: usize,
}

impl Iterator for RevIter<'_> {
    type Item = Entry;
    #[inline]
    fn next(&mut self) -> Option<Entry> {
        if self.off == 0 {
            return None;
        }
        self.off -= 1;
        let e = self.idx.chunks[self.chunk][self.off];
        if self.off == 0 && self.chunk > 0 {
            self.chunk -= 1;
            self.off = self.idx.chunks[self.chunk].len();
        }
        Some(e)
    }
}
