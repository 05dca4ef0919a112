//! List values: a quicklist, i.e. a deque of packed nodes (see [`super::pack`]).
//!
//! Invariants: no node is empty; `len` is the sum of the nodes' counts; a
//! node grows while it stays within the `list-max-listpack-size` limit it was
//! filled under (negative: a byte budget of 4, 8, 16, 32 or 64 KiB; positive:
//! an entry count, with an 8 KiB safety cap), otherwise a new node starts.
//! Only the two end nodes may carry spare capacity (they are where pushes
//! land); a node gets trimmed to size when a new node starts beside it.
//! Redis 7.0 reports every list as `quicklist`, whatever its size.

use std::collections::VecDeque;

use super::pack;

/// Redis's `optimization_level` byte budgets for negative fill values.
const BUDGETS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// `SIZE_SAFETY_LIMIT` for count-limited nodes.
const SAFETY: usize = 8192;
/// Redis's `SIZE_ESTIMATE_OVERHEAD` plus the listpack header and end byte.
const OVERHEAD: usize = 8;

#[derive(Clone, Debug, Default)]
struct Node {
    buf: Vec<u8>,
    count: u32,
}

impl Node {
    /// True when one more entry of `data_len` bytes fits under `fill`.
    fn allows(&self, data_len: usize, fill: i64) -> bool {
        let new_sz = self.buf.len() + pack::entry_size(data_len) + OVERHEAD;
        if fill < 0 {
            let i = ((-fill) as usize - 1).min(BUDGETS.len() - 1);
            new_sz <= BUDGETS[i]
        } else {
            new_sz <= SAFETY && (self.count as i64) < fill
        }
    }

    /// Offset of entry `i` in this node, walking from the nearer end.
    fn offset(&self, i: usize) -> usize {
        if i <= self.count as usize / 2 {
            let mut it = pack::Iter::new(&self.buf);
            for _ in 0..i {
                it.next();
            }
            it.offset()
        } else {
            let mut end = self.buf.len();
            // `count` entries precede the end of `buf`: each step finds one.
            for _ in i..self.count as usize {
                end = pack::prev(&self.buf, end).unwrap_or(0);
            }
            end
        }
    }
}

/// Where the list ends are: `Head` is the left (LPUSH) end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Head,
    Tail,
}

/// A list: its parts behind one pointer, so a keyspace value stays small
/// (lists are few and large; the indirection costs nothing measurable).
#[derive(Clone, Debug, Default)]
pub struct List(Box<Parts>);

#[derive(Clone, Debug, Default)]
pub struct Parts {
    nodes: VecDeque<Node>,
    len: usize,
}

impl std::ops::Deref for List {
    type Target = Parts;
    #[inline]
    fn deref(&self) -> &Parts {
        &self.0
    }
}

impl std::ops::DerefMut for List {
    #[inline]
    fn deref_mut(&mut self) -> &mut Parts {
        &mut self.0
    }
}

impl List {
    pub fn new() -> List {
        List::default()
    }

    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of nodes (Redis's `quicklist->len`): each is one allocation.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Pushes at one end under the `list-max-listpack-size` value `fill`.
    pub fn push(&mut self, end: End, v: &[u8], fill: i64) {
        match end {
            End::Head => match self.nodes.front_mut() {
                Some(n) if n.allows(v.len(), fill) => {
                    pack::insert(&mut n.buf, 0, v);
                    n.count += 1;
                }
                full => {
                    if let Some(f) = full {
                        pack::fit(&mut f.buf); // done growing: no slack kept
                    }
                    let mut n = Node::default();
                    pack::push(&mut n.buf, v);
                    n.count = 1;
                    self.nodes.push_front(n);
                }
            },
            End::Tail => match self.nodes.back_mut() {
                Some(n) if n.allows(v.len(), fill) => {
                    pack::push(&mut n.buf, v);
                    n.count += 1;
                }
                full => {
                    if let Some(f) = full {
                        pack::fit(&mut f.buf);
                    }
                    let mut n = Node::default();
                    pack::push(&mut n.buf, v);
                    n.count = 1;
                    self.nodes.push_back(n);
                }
            },
        }
        self.len += 1;
    }

    /// Removes and returns the element at one end.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let (node, front) = match end {
            End::Head => (self.nodes.front_mut()?, true),
            End::Tail => (self.nodes.back_mut()?, false),
        };
        let off = if front {
            0
        } else {
            // A node in the list holds at least one entry.
            pack::prev(&node.buf, node.buf.len())?
        };
        let v = pack::entry_at(&node.buf, off).0.to_vec();
        node.count -= 1;
        if node.count == 0 {
            if front {
                self.nodes.pop_front();
            } else {
                self.nodes.pop_back();
            }
        } else if front {
            pack::remove(&mut node.buf, 0);
        } else {
            node.buf.truncate(off);
            pack::shrink(&mut node.buf);
        }
        self.len -= 1;
        Some(v)
    }

    /// Node index and entry index within it of element `i` (< len).
    fn locate(&self, i: usize) -> (usize, usize) {
        if i < self.len / 2 {
            let mut rest = i;
            for (ni, n) in self.nodes.iter().enumerate() {
                if rest < n.count as usize {
                    return (ni, rest);
                }
                rest -= n.count as usize;
            }
        } else {
            let mut from_end = self.len - 1 - i;
            for (ni, n) in self.nodes.iter().enumerate().rev() {
                if from_end < n.count as usize {
                    return (ni, n.count as usize - 1 - from_end);
                }
                from_end -= n.count as usize;
            }
        }
        unreachable!("index inside the list")
    }

    /// Element `i` counted from the head (0-based).
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        if i >= self.len {
            return None;
        }
        let (ni, ei) = self.locate(i);
        let n = &self.nodes[ni];
        Some(pack::entry_at(&n.buf, n.offset(ei)).0)
    }

    /// Replaces element `i` (< len).
    pub fn set(&mut self, i: usize, v: &[u8]) {
        let (ni, ei) = self.locate(i);
        let n = &mut self.nodes[ni];
        let off = n.offset(ei);
        pack::replace(&mut n.buf, off, v);
    }

    /// Inserts `v` so that it becomes element `i` (0..=len).
    pub fn insert(&mut self, i: usize, v: &[u8], fill: i64) {
        if i == 0 {
            return self.push(End::Head, v, fill);
        }
        if i == self.len {
            return self.push(End::Tail, v, fill);
        }
        let (ni, ei) = self.locate(i);
        let parts = &mut *self.0;
        let n = &mut parts.nodes[ni];
        let off = n.offset(ei);
        pack::insert(&mut n.buf, off, v);
        n.count += 1;
        parts.len += 1;
        if !n.allows(0, fill) && n.count > 1 {
            // Split the node in two halves so that it stays near its budget.
            let half = n.count as usize / 2;
            let cut = n.offset(half);
            let mut right = Node {
                buf: n.buf[cut..].to_vec(),
                count: n.count - half as u32,
            };
            right.buf.shrink_to_fit();
            n.buf.truncate(cut);
            n.buf.shrink_to_fit();
            n.count = half as u32;
            self.nodes.insert(ni + 1, right);
        }
    }

    /// Elements from the head.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        Iter {
            nodes: &self.nodes,
            front: (
                0,
                pack::Iter::new(self.nodes.front().map_or(&[], |n| &n.buf)),
            ),
            back: (
                self.nodes.len().saturating_sub(1),
                pack::RevIter::new(self.nodes.back().map_or(&[], |n| &n.buf)),
            ),
            left: self.len,
        }
    }

    /// Elements `start..=end` from the head (both inside the list).
    pub fn range(&self, start: usize, end: usize) -> impl Iterator<Item = &[u8]> + '_ {
        let (mut ni, ei) = if start < self.len {
            self.locate(start)
        } else {
            (self.nodes.len(), 0)
        };
        let mut it = pack::Iter::new(self.nodes.get(ni).map_or(&[], |n| &n.buf));
        for _ in 0..ei {
            it.next();
        }
        let mut left = (end + 1)
            .saturating_sub(start)
            .min(self.len - start.min(self.len));
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            loop {
                if let Some(v) = it.next() {
                    left -= 1;
                    return Some(v);
                }
                ni += 1;
                it = pack::Iter::new(&self.nodes.get(ni)?.buf);
            }
        })
    }

    /// Keeps only the elements for which `keep(index, value)` holds, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(usize, &[u8]) -> bool, fill: i64) {
        let mut out = List::new();
        for (i, v) in self.iter().enumerate() {
            if keep(i, v) {
                out.push(End::Tail, v, fill);
            }
        }
        *self = out;
    }

    /// Removes elements from one end (LTRIM): `head` from the head and
    /// `tail` from the tail.
    pub fn trim(&mut self, head: usize, tail: usize) {
        for (n, end) in [(head, End::Head), (tail, End::Tail)] {
            let mut n = n.min(self.len);
            // Drop whole nodes first, then single entries.
            while n > 0 {
                // `n` is at most `len`, the entries the nodes hold.
                let Some(node) = (match end {
                    End::Head => self.nodes.front(),
                    End::Tail => self.nodes.back(),
                }) else {
                    break;
                };
                if node.count as usize <= n {
                    n -= node.count as usize;
                    self.len -= node.count as usize;
                    match end {
                        End::Head => self.nodes.pop_front(),
                        End::Tail => self.nodes.pop_back(),
                    };
                } else {
                    let Some(node) = (match end {
                        End::Head => self.nodes.front_mut(),
                        End::Tail => self.nodes.back_mut(),
                    }) else {
                        break;
                    };
                    let keep = node.count as usize - n;
                    match end {
                        End::Head => {
                            let cut = node.offset(n);
                            node.buf.drain(..cut);
                        }
                        End::Tail => {
                            let cut = node.offset(keep);
                            node.buf.truncate(cut);
                        }
                    }
                    pack::shrink(&mut node.buf);
                    node.count = keep as u32;
                    self.len -= n;
                    n = 0;
                }
            }
        }
    }

    /// The packed nodes from the head, each with its entry count (the RDB
    /// writer saves one Redis listpack per node, as Redis does).
    pub fn nodes(&self) -> impl Iterator<Item = (&[u8], usize)> + '_ {
        self.nodes.iter().map(|n| (&n.buf[..], n.count as usize))
    }

    /// Appends a whole node at the tail: `buf` holds `count` (> 0) packed
    /// entries. RDB loading keeps the file's node boundaries, as Redis's
    /// `quicklistAppendListpack` does.
    pub fn append_node(&mut self, mut buf: Vec<u8>, count: usize) {
        debug_assert!(count > 0);
        if let Some(last) = self.nodes.back_mut() {
            pack::fit(&mut last.buf);
        }
        pack::fit(&mut buf);
        self.nodes.push_back(Node {
            buf,
            count: count as u32,
        });
        self.len += count;
    }

    /// Bytes held by the nodes (for MEMORY USAGE-style estimates).
    pub fn mem(&self) -> usize {
        self.nodes.iter().map(|n| n.buf.capacity() + 32).sum()
    }
}

/// Walks nodes from both ends; `left` bounds the walk so the two ends never cross.
struct Iter<'a> {
    nodes: &'a VecDeque<Node>,
    front: (usize, pack::Iter<'a>),
    back: (usize, pack::RevIter<'a>),
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        loop {
            if let Some(v) = self.front.1.next() {
                self.left -= 1;
                return Some(v);
            }
            self.front.0 += 1;
            self.front.1 = pack::Iter::new(&self.nodes.get(self.front.0)?.buf);
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<'a> DoubleEndedIterator for Iter<'a> {
    fn next_back(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        loop {
            if let Some(v) = self.back.1.next() {
                self.left -= 1;
                return Some(v);
            }
            self.back.0 = self.back.0.checked_sub(1)?;
            self.back.1 = pack::RevIter::new(&self.nodes[self.back.0].buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny xorshift PRNG for the model test.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn behaves_like_a_vecdeque() {
        for fill in [-2i64, -1, 1, 3, 0] {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ fill as u64);
            let mut l = List::new();
            let mut m: VecDeque<Vec<u8>> = VecDeque::new();
            for step in 0..4000 {
                let op = rng.next() % 10;
                let v: Vec<u8> =
                    format!("v{}-{}", step, "x".repeat((rng.next() % 300) as usize)).into_bytes();
                match op {
                    0 | 1 => {
                        l.push(End::Head, &v, fill);
                        m.push_front(v);
                    }
                    2 | 3 => {
                        l.push(End::Tail, &v, fill);
                        m.push_back(v);
                    }
                    4 => assert_eq!(l.pop(End::Head), m.pop_front()),
                    5 => assert_eq!(l.pop(End::Tail), m.pop_back()),
                    6 if !m.is_empty() => {
                        let i = (rng.next() % m.len() as u64) as usize;
                        l.set(i, &v);
                        m[i] = v;
                    }
                    7 => {
                        let i = (rng.next() % (m.len() as u64 + 1)) as usize;
                        l.insert(i, &v, fill);
                        m.insert(i, v);
                    }
                    8 if !m.is_empty() => {
                        let a = (rng.next() % 3) as usize;
                        let b = (rng.next() % 3) as usize;
                        l.trim(a, b);
                        for _ in 0..a.min(m.len()) {
                            m.pop_front();
                        }
                        for _ in 0..b.min(m.len()) {
                            m.pop_back();
                        }
                    }
                    _ => {
                        let k = rng.next() % 7;
                        l.retain(|i, _| i as u64 % 7 != k, fill);
                        let mut i = 0;
                        m.retain(|_| {
                            i += 1;
                            (i - 1) % 7 != k
                        });
                    }
                }
                assert_eq!(l.len(), m.len());
                if step % 97 == 0 && !m.is_empty() {
                    let i = (rng.next() % m.len() as u64) as usize;
                    assert_eq!(l.get(i), Some(&m[i][..]));
                    let j = i + (rng.next() % (m.len() - i) as u64) as usize;
                    let got: Vec<&[u8]> = l.range(i, j).collect();
                    let want: Vec<&[u8]> = m.range(i..=j).map(|v| &v[..]).collect();
                    assert_eq!(got, want);
                    let rev: Vec<&[u8]> = l.iter().rev().collect();
                    let want: Vec<&[u8]> = m.iter().rev().map(|v| &v[..]).collect();
                    assert_eq!(rev, want);
                }
            }
        }
    }
}
