//! Sorted-set values: an order index plus a member→score hash set, with a
//! compact small form that `OBJECT ENCODING` reports as `listpack`.
//!
//! Invariants:
//! - Every member is one heap block ([`member::Member`]) referenced by exactly
//!   one index entry and, in the big form, by the hash set; the block's score
//!   always equals its index entry's score. `Drop` frees each block once.
//! - `dict` is `None` in the small (listpack) form: lookups by member scan the
//!   index, as Redis scans a listpack. A set converts to the big (skiplist)
//!   form once it holds more than `zset-max-listpack-entries` members or a
//!   member longer than `zset-max-listpack-value`, and never converts back by
//!   itself; store commands call [`ZSet::compact_if_small`] as Redis does.
//! - Scores are never NaN, so (score, member) is a total order.

pub mod index;
pub mod member;

use std::collections::HashSet;

use index::{Entry, Index};
use member::Member;

/// The encoding thresholds (`zset-max-listpack-entries`, `zset-max-listpack-value`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub entries: usize,
    pub value: usize,
}

type Dict = HashSet<Member, foldhash::fast::RandomState>;

pub struct ZSet {
    index: Index,
    dict: Option<Dict>,
}

impl ZSet {
    /// Slots of the member index and how many hold a member, when the set
    /// has one (skiplist encoding; DEBUG HTSTATS-KEY). An open-addressing
    /// table: each member has a slot of its own.
    pub fn dict_slots(&self) -> Option<(usize, usize)> {
        self.dict.as_ref().map(|d| (d.capacity(), d.len()))
    }
}

// SAFETY: a ZSet owns all of its member blocks; nothing is shared.
unsafe impl Send for ZSet {}

/// One end of a score interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub max: f64,
    pub minex: bool,
    pub maxex: bool,
}

impl ScoreRange {
    fn below(&self, s: f64) -> bool {
        if self.minex {
            s <= self.min
        } else {
            s < self.min
        }
    }
    fn within_max(&self, s: f64) -> bool {
        if self.maxex {
            s < self.max
        } else {
            s <= self.max
        }
    }
    /// True when no score can fall inside.
    pub fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.minex || self.maxex))
    }
}

/// One end of a lexicographic interval: `-`, `+`, `[x` or `(x`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LexBound {
    NegInf,
    PosInf,
    Incl(Vec<u8>),
    Excl(Vec<u8>),
}

#[derive(Clone, Debug)]
pub struct LexRange {
    pub min: LexBound,
    pub max: LexBound,
}

impl LexRange {
    fn below(&self, m: &[u8]) -> bool {
        match &self.min {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(x) => m < &x[..],
            LexBound::Excl(x) => m <= &x[..],
        }
    }
    fn within_max(&self, m: &[u8]) -> bool {
        match &self.max {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(x) => m <= &x[..],
            LexBound::Excl(x) => m < &x[..],
        }
    }
    /// True when no member can fall inside (Redis's `zslIsInLexRange` pre-check).
    pub fn is_empty(&self) -> bool {
        use LexBound::*;
        match (&self.min, &self.max) {
            (PosInf, _) | (_, NegInf) => true,
            (NegInf, _) | (_, PosInf) => false,
            (Incl(a), Incl(b)) => a > b,
            (Incl(a), Excl(b)) | (Excl(a), Incl(b)) | (Excl(a), Excl(b)) => a >= b,
        }
    }
}

impl ZSet {
    /// An empty set in the encoding Redis's `zsetTypeCreate` would pick for
    /// `size_hint` members, the longest `value_len` bytes long.
    pub fn with_hint(size_hint: usize, value_len: usize, limits: Limits) -> ZSet {
        let mut z = ZSet {
            index: Index::default(),
            dict: None,
        };
        if size_hint > limits.entries || value_len > limits.value {
            z.dict = Some(Dict::default());
        }
        z
    }

    pub fn encoding(&self) -> &'static str {
        if self.dict.is_some() {
            "skiplist"
        } else {
            "listpack"
        }
    }

    pub fn is_listpack(&self) -> bool {
        self.dict.is_none()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    fn find(&self, m: &[u8]) -> Option<Member> {
        match &self.dict {
            Some(d) => d.get(m).copied(),
            None => self
                .index
                .iter_from(0)
                .find(|e| e.member.bytes() == m)
                .map(|e| e.member),
        }
    }

    /// The member's score.
    #[inline]
    pub fn score(&self, m: &[u8]) -> Option<f64> {
        self.find(m).map(|p| p.score())
    }

    /// Switches to the big form (Redis's `zsetConvert` to skiplist).
    pub fn convert_to_skiplist(&mut self) {
        if self.dict.is_none() {
            let mut d = Dict::default();
            d.reserve(self.len());
            for e in self.index.iter_from(0) {
                d.insert(e.member);
            }
            self.dict = Some(d);
        }
    }

    /// Switches back to the small form when the set fits the limits
    /// (Redis's `zsetConvertToListpackIfNeeded`).
    pub fn compact_if_small(&mut self, limits: Limits) {
        if self.dict.is_some()
            && self.len() <= limits.entries
            && self
                .index
                .iter_from(0)
                .all(|e| e.member.bytes().len() <= limits.value)
        {
            self.dict = None;
            self.index.for_each_mut(|e| {
                if e.score == 0.0 {
                    e.score = 0.0;
                    e.member.set_score(0.0);
                }
            });
        }
    }

    /// The score as this encoding stores it: a listpack keeps scores as
    /// text, which turns -0 into 0.
    #[inline]
    fn stored(&self, score: f64) -> f64 {
        if self.dict.is_none() && score == 0.0 {
            0.0
        } else {
            score
        }
    }

    /// Adds a member known to be absent.
    pub fn insert_new(&mut self, m: &[u8], score: f64, limits: Limits) {
        if self.dict.is_none() && (self.len() + 1 > limits.entries || m.len() > limits.value) {
            self.convert_to_skiplist();
        }
        let score = self.stored(score);
        let p = Member::alloc(m, score);
        self.index.insert(score, p);
        if let Some(d) = &mut self.dict {
            d.insert(p);
        }
    }

    /// Adds or updates a member; returns the previous score.
    pub fn set(&mut self, m: &[u8], score: f64, limits: Limits) -> Option<f64> {
        match self.find(m) {
            Some(p) => {
                let score = self.stored(score);
                let old = p.score();
                if old != score {
                    self.index.remove(old, m);
                    p.set_score(score);
                    self.index.insert(score, p);
                }
                Some(old)
            }
            None => {
                self.insert_new(m, score, limits);
                None
            }
        }
    }

    /// Moves a member known to hold `old` to `new` without looking it up
    /// again (ZADD/ZINCRBY after reading the score).
    pub fn update_existing(&mut self, m: &[u8], old: f64, new: f64) {
        let new = self.stored(new);
        if old != new {
            if let Some(p) = self.index.remove(old, m) {
                p.set_score(new);
                self.index.insert(new, p);
            }
        }
    }

    /// Removes a member; returns its score.
    pub fn remove(&mut self, m: &[u8]) -> Option<f64> {
        let p = self.find(m)?;
        let score = p.score();
        self.index.remove(score, m);
        if let Some(d) = &mut self.dict {
            d.remove(m);
        }
        // SAFETY: the block is no longer referenced by the index or the dict.
        unsafe { p.free() };
        Some(score)
    }

    /// 0-based ascending rank of a member.
    pub fn rank(&self, m: &[u8]) -> Option<usize> {
        let s = self.score(m)?;
        self.index.rank_of(s, m)
    }

    /// The entry at an ascending rank (< len).
    #[inline]
    pub fn at(&self, rank: usize) -> (&[u8], f64) {
        let e = self.index.get(rank);
        (e.member.bytes(), e.score)
    }

    /// Ascending (member, score) pairs from rank `start`.
    pub fn iter_from(&self, start: usize) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        self.index.iter_from(start).map(pair)
    }

    /// Descending (member, score) pairs from rank `start` down to 0.
    pub fn iter_rev_from(&self, start: usize) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        self.index.iter_rev_from(start).map(pair)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        self.iter_from(0)
    }

    /// The ascending ranks `[start, end)` whose scores fall in `r`.
    pub fn score_ranks(&self, r: &ScoreRange) -> (usize, usize) {
        if r.is_empty() {
            return (0, 0);
        }
        let start = self.index.count_before(|e| r.below(e.score));
        let end = self.index.count_before(|e| r.within_max(e.score));
        (start, end.max(start))
    }

    /// The ascending ranks `[start, end)` whose members fall in `r` (meaningful
    /// when all scores are equal, as in Redis).
    pub fn lex_ranks(&self, r: &LexRange) -> (usize, usize) {
        if r.is_empty() {
            return (0, 0);
        }
        let start = self.index.count_before(|e| r.below(e.member.bytes()));
        let end = self.index.count_before(|e| r.within_max(e.member.bytes()));
        (start, end.max(start))
    }

    /// Removes ascending ranks `[start, end)`; returns how many went.
    pub fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        let mut n = 0;
        let dict = &mut self.dict;
        self.index.remove_range(start, end, |e: Entry| {
            if let Some(d) = dict {
                d.remove(e.member.bytes());
            }
            // SAFETY: removed from both the index and the dict.
            unsafe { e.member.free() };
            n += 1;
        });
        n
    }

    /// Removes and returns the lowest (`max == false`) or highest member.
    pub fn pop(&mut self, max: bool) -> Option<(Vec<u8>, f64)> {
        if self.is_empty() {
            return None;
        }
        let r = if max { self.len() - 1 } else { 0 };
        let (m, s) = self.at(r);
        let m = m.to_vec();
        self.remove_ranks(r, r + 1);
        Some((m, s))
    }
}

#[inline]
fn pair<'a>(e: Entry) -> (&'a [u8], f64) {
    (e.member.bytes(), e.score)
}

impl Clone for ZSet {
    fn clone(&self) -> ZSet {
        let mut z = ZSet {
            index: Index::default(),
            dict: self.dict.as_ref().map(|_| Dict::default()),
        };
        for (m, s) in self.iter() {
            let p = Member::alloc(m, s);
            z.index.insert(s, p);
            if let Some(d) = &mut z.dict {
                d.insert(p);
            }
        }
        z
    }
}

impl Drop for ZSet {
    fn drop(&mut self) {
        self.dict = None;
        for e in self.index.drain_all() {
            // SAFETY: each block is referenced by exactly one index entry.
            unsafe { e.member.free() };
        }
    }
}

impl std::fmt::Debug for ZSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|(m, s)| (String::from_utf8_lossy(m), s)))
            .finish()
    }
}

#[cfg(test)]
mod tests;
