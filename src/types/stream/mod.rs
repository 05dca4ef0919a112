//! Streams: entries packed in listpack nodes ordered by master id, plus consumer groups.
//!
//! Layout choice: a `BTreeMap<StreamId, Vec<u8>>` whose values are nodes in
//! exactly Redis's stream listpack layout (see [`node`]) keyed by the node's
//! master id, where Redis has a rax of the same listpacks keyed by the
//! 128-bit big-endian master id. The BTreeMap gives the same ordered seeks
//! (`<=` an id, first, last) as the rax; keeping Redis's bytes inside each
//! node makes RDB save and load (RDB_TYPE_STREAM_LISTPACKS_*) a copy of each
//! node, keeps ~100 entries per allocation (not one heap object per entry),
//! and makes `stream-node-max-bytes`/`-entries` mean what they mean in Redis.
//!
//! Invariants: `length` is the number of live (not deleted) entries over all
//! nodes; `last_id` never decreases (it survives deletions and trims, as the
//! stream's "top item"); `first_id` is the first live id (0-0 when empty);
//! no node is kept once its last live entry is deleted by XDEL (a trim may
//! leave a node whose entries are all tombstones, as Redis does).

pub mod group;
pub mod id;
pub mod node;
pub mod store;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

pub use group::{Consumer, Group, Nack};
pub use id::StreamId;
use node::Entry;
use store::Node;

/// Unpacked node caches a stream keeps when it releases the others (the
/// node a range starts in and the one after it).
const CACHE_KEEP: usize = 2;

/// Redis's STREAM_LISTPACK_MAX_SIZE: a node (and an entry) stays under 1 GiB.
pub const LISTPACK_MAX_SIZE: usize = 1 << 30;

/// `stream-node-max-bytes` and `stream-node-max-entries`.
#[derive(Clone, Copy, Debug)]
pub struct NodeLimits {
    pub bytes: usize,
    pub entries: i64,
}

impl Default for NodeLimits {
    fn default() -> NodeLimits {
        NodeLimits {
            bytes: 4096,
            entries: 100,
        }
    }
}

/// The id XADD asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewId {
    /// `*`: from the clock (`now_ms`), or after the last id.
    Auto,
    /// `ms-*`: this millisecond, with the next free sequence.
    Ms(u64),
    /// An explicit id.
    Exact(StreamId),
}

/// Why an entry could not be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddError {
    /// The id is not above the stream's top item.
    NotGreater,
    /// The fields add up to more than a node may hold.
    TooLarge,
}

/// How to trim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimBy {
    MaxLen(u64),
    MinId(StreamId),
}

/// A trim request (`MAXLEN|MINID [=|~] arg [LIMIT n]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trim {
    pub by: TrimBy,
    /// `~`: only whole nodes go.
    pub approx: bool,
    /// Most entries to remove; 0 = no limit.
    pub limit: u64,
}

/// The consumer-group value of `entries_read` meaning "unknown".
pub const ENTRIES_READ_INVALID: i64 = -1;

#[derive(Default, Clone)]
pub struct Stream {
    /// Sealed nodes (all but the last) are kept compressed (see [`store`]).
    nodes: BTreeMap<StreamId, Node>,
    /// Nodes whose unpacked cache was filled, oldest first.
    unpacked: RefCell<Vec<StreamId>>,
    /// The entry a forward range last returned: the next forward range
    /// starting after it, in the same node (XREADGROUP `>`, XREAD, XRANGE
    /// paging), starts walking there instead of at the node's first entry.
    /// A hint only: checked against the node before use.
    seek: Cell<Option<Seek>>,
    length: u64,
    pub last_id: StreamId,
    pub first_id: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
    /// Consumer groups by name (byte order, as Redis's rax).
    pub groups: BTreeMap<Box<[u8]>, Group>,
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    /// Live entries.
    pub fn len(&self) -> u64 {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    pub fn encoding(&self) -> &'static str {
        "stream"
    }

    /// Number of nodes (Redis's `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The nodes in order: master id and listpack bytes (for RDB and
    /// DUMP), unpacked without filling the caches.
    pub fn nodes(&self) -> impl Iterator<Item = (&StreamId, Cow<'_, [u8]>)> {
        self.nodes.iter().map(|(m, n)| (m, n.bytes_uncached()))
    }

    /// Bytes held by the nodes' buffers.
    pub fn node_bytes(&self) -> usize {
        self.nodes.values().map(Node::heap_bytes).sum()
    }

    /// Adds a node as loaded from a file (checked by the caller); false
    /// when a node had that master id already.
    pub fn push_node(&mut self, master: StreamId, lp: Vec<u8>) -> bool {
        self.nodes.insert(master, Node::Plain(lp)).is_none()
    }

    /// After loading: every node but the last is sealed (compressed).
    pub fn seal_loaded(&mut self) {
        let last = self.nodes.keys().next_back().copied();
        for (m, n) in self.nodes.iter_mut() {
            if Some(*m) != last {
                n.seal();
            }
        }
    }

    /// Drops the unpacked caches of all but the [`CACHE_KEEP`] nodes
    /// unpacked last. Every change to the stream does this; read commands
    /// do it once done (`Db::release_stream_cache`).
    pub fn release_cache(&mut self) {
        let unpacked = self.unpacked.get_mut();
        if unpacked.len() <= CACHE_KEEP {
            return;
        }
        let drop_n = unpacked.len() - CACHE_KEEP;
        for m in unpacked.drain(..drop_n) {
            if let Some(n) = self.nodes.get_mut(&m) {
                n.release();
            }
        }
    }

    /// Sets the live length after loading nodes.
    pub fn set_len(&mut self, len: u64) {
        self.length = len;
    }

    /// Appends an entry (`fields` alternates field and value; at least one
    /// pair), as Redis's `streamAppendItem`.
    pub fn add(
        &mut self,
        want: NewId,
        fields: &[&[u8]],
        lim: NodeLimits,
        now_ms: u64,
    ) -> Result<StreamId, AddError> {
        let id = match want {
            NewId::Auto => {
                if now_ms > self.last_id.ms {
                    StreamId::new(now_ms, 0)
                } else {
                    self.last_id.next().unwrap_or(StreamId::MIN)
                }
            }
            NewId::Ms(ms) if ms == self.last_id.ms => {
                if self.last_id.seq == u64::MAX {
                    return Err(AddError::NotGreater);
                }
                StreamId::new(ms, self.last_id.seq + 1)
            }
            NewId::Ms(ms) => StreamId::new(ms, 0),
            NewId::Exact(id) => id,
        };
        if id <= self.last_id {
            return Err(AddError::NotGreater);
        }
        let total = node::fields_len(fields);
        if total > LISTPACK_MAX_SIZE {
            return Err(AddError::TooLarge);
        }
        let max_bytes = if lim.bytes == 0 || lim.bytes > LISTPACK_MAX_SIZE {
            LISTPACK_MAX_SIZE
        } else {
            lim.bytes
        };
        self.release_cache();
        let mut appended = false;
        if let Some((&master, last)) = self.nodes.iter_mut().next_back() {
            let lp = last.bytes_mut();
            let full = lp.len() + total >= max_bytes || {
                lim.entries != 0 && {
                    let h = node::header(lp);
                    h.count + h.deleted >= lim.entries
                }
            };
            if full {
                last.seal();
            } else {
                node::append(lp, master, id, fields);
                appended = true;
            }
        }
        if !appended {
            self.nodes.insert(id, Node::Plain(node::create(id, fields)));
        }
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
        Ok(id)
    }

    /// Entries from `start` to `end` inclusive, forwards or (`rev`)
    /// backwards, tombstones skipped.
    pub fn range(&self, start: StreamId, end: StreamId, rev: bool) -> Range<'_> {
        self.range_with(start, end, rev, true)
    }

    /// As [`Stream::range`], tombstones included unless `skip_deleted`.
    pub fn range_with(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        skip_deleted: bool,
    ) -> Range<'_> {
        // The node holding `start` (forwards) or `end` (backwards) is the
        // last one whose master id is not above it, as Redis's `<=` seek.
        let mut fwd = None;
        let nodes = if !rev {
            let from = self
                .nodes
                .range(..=start)
                .next_back()
                .map_or(StreamId::MIN, |(k, _)| *k);
            let mut nodes = self.nodes.range(from..);
            // Resume at the last entry returned when it is before `start`
            // in the node `start` is in.
            if let Some(s) = self.seek.get().filter(|s| s.master == from && s.id < start) {
                if let Some(n) = self.nodes.get(&from) {
                    let lp = unpacked_bytes(&self.unpacked, from, n);
                    fwd = node::entries_from(lp, from, s.rel, s.id);
                    if fwd.is_some() {
                        nodes.next();
                    }
                }
            }
            nodes
        } else {
            self.nodes.range(..=end)
        };
        Range {
            nodes,
            unpacked: &self.unpacked,
            back: None,
            fwd,
            seek: (!rev).then_some(&self.seek),
            start,
            end,
            rev,
            skip_deleted,
            done: start > end,
        }
    }

    /// The entry with this id, if live.
    pub fn get(&self, id: StreamId) -> Option<Entry<'_>> {
        self.range(id, id, false).next()
    }

    /// The last live id (Redis's `streamLastValidID`); 0-0 when empty.
    pub fn last_valid_id(&self) -> StreamId {
        self.range(StreamId::MIN, StreamId::MAX, true)
            .next()
            .map_or(StreamId::MIN, |e| e.id)
    }

    /// The first or last id (Redis's `streamGetEdgeID`): when there is none,
    /// the maximal id for `first`, 0-0 for last.
    pub fn edge_id(&self, first: bool, skip_deleted: bool) -> StreamId {
        let found = self
            .range_with(StreamId::MIN, StreamId::MAX, !first, skip_deleted)
            .next()
            .map(|e| e.id);
        found.unwrap_or(if first { StreamId::MAX } else { StreamId::MIN })
    }

    /// Deletes the live entry `id` (XDEL, without the bookkeeping of
    /// `first_id` and `max_deleted`, which [`Stream::delete`] does).
    fn remove_entry(&mut self, id: StreamId) -> bool {
        let Some((&master, n)) = self.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        let lp = n.bytes_mut();
        let found = node::entries(lp, master)
            .take_while(|e| e.id <= id)
            .find(|e| e.id == id && !e.deleted())
            .map(|e| (e.at, e.flags));
        let Some((at, flags)) = found else {
            return false;
        };
        if node::header(lp).count == 1 {
            self.nodes.remove(&master);
        } else {
            node::mark_deleted(lp, at, flags);
        }
        self.length -= 1;
        true
    }

    /// XDEL of several ids: the number deleted. Keeps `first_id` and
    /// `max_deleted` as Redis's `xdelCommand`.
    pub fn delete(&mut self, ids: &[StreamId]) -> u64 {
        self.release_cache();
        let mut deleted = 0;
        let mut first = false;
        for &id in ids {
            if self.remove_entry(id) {
                if id == self.first_id {
                    first = true;
                }
                if id > self.max_deleted {
                    self.max_deleted = id;
                }
                deleted += 1;
            }
        }
        if deleted > 0 {
            if self.length == 0 {
                self.first_id = StreamId::MIN;
            } else if first {
                self.first_id = self.edge_id(true, true);
            }
        }
        deleted
    }

    /// Trims from the head (Redis's `streamTrim`): the number of entries removed.
    pub fn trim(&mut self, t: &Trim) -> u64 {
        self.release_cache();
        let mut deleted: u64 = 0;
        let mut cursor = StreamId::MIN;
        loop {
            if let TrimBy::MaxLen(max) = t.by {
                if self.length <= max {
                    break;
                }
            }
            let Some((&master, n)) = self.nodes.range_mut(cursor..).next() else {
                break;
            };
            let h = node::header(n.bytes().0);
            let entries = h.count.max(0) as u64;
            if t.limit != 0 && deleted + entries > t.limit {
                break;
            }
            let remove = match t.by {
                TrimBy::MaxLen(max) => self.length - entries >= max,
                TrimBy::MinId(min) => node::last_id(n.bytes().0, master) < min,
            };
            if remove {
                self.nodes.remove(&master);
                self.length -= entries;
                deleted += entries;
                cursor = master;
                continue;
            }
            if t.approx {
                break;
            }
            // Flag entries inside this node, from its head.
            let lp = n.bytes_mut();
            let mut marks = Vec::new();
            let mut length = self.length;
            for e in node::entries(lp, master) {
                let stop = match t.by {
                    TrimBy::MaxLen(max) => length <= max,
                    TrimBy::MinId(min) => e.id >= min,
                };
                if stop {
                    break;
                }
                if !e.deleted() {
                    marks.push((e.at, e.flags));
                    length -= 1;
                }
            }
            for &(at, flags) in &marks {
                // One-byte flags: positions stay valid.
                node::replace_int(lp, at, flags | node::FLAG_DELETED);
            }
            let n = marks.len() as i64;
            node::set_counts(lp, h.count - n, h.deleted + n);
            self.length = length;
            deleted += n as u64;
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.edge_id(true, true);
        }
        deleted
    }

    /// True when an id between `start` and `end` may be a tombstone
    /// (Redis's `streamRangeHasTombstones`).
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.length == 0 || self.max_deleted.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted {
            return false;
        }
        start <= self.max_deleted && self.max_deleted <= end
    }

    /// The logical read counter of `id` (Redis's
    /// `streamEstimateDistanceFromFirstEverEntry`), or
    /// [`ENTRIES_READ_INVALID`] when it cannot be known.
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return 0;
        }
        if self.length == 0 && id <= self.last_id {
            return added;
        }
        if id == self.last_id {
            return added;
        } else if id > self.last_id {
            return ENTRIES_READ_INVALID;
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first_id {
            if id < self.first_id {
                return added - self.length as i64;
            } else if id == self.first_id {
                return added - self.length as i64 + 1;
            }
        }
        ENTRIES_READ_INVALID
    }

    /// A group's lag (entries not yet delivered), None when it cannot be
    /// known (Redis's `streamReplyWithCGLag`).
    pub fn group_lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != ENTRIES_READ_INVALID
            && !self.range_has_tombstones(g.last_id, StreamId::MAX)
        {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        let read = self.estimate_distance(g.last_id);
        (read != ENTRIES_READ_INVALID).then(|| self.entries_added as i64 - read)
    }

    /// Work to free it (Redis's `lazyfreeGetFreeEffort`): a unit per node,
    /// and per group one plus its PEL (the first group's PEL size standing
    /// for all).
    pub fn free_effort(&self) -> usize {
        let pel = self.groups.values().next().map_or(0, |g| g.pel.len());
        self.nodes.len() + self.groups.len() * (1 + pel)
    }

    /// Estimated bytes (MEMORY USAGE): the nodes' buffers, a tree slot per
    /// node, and per group and pending entry their structures.
    pub fn mem_usage(&self) -> usize {
        let mut n = 64 + self.node_bytes() + self.nodes.len() * 48;
        for (name, g) in &self.groups {
            n += 96 + name.len() + g.pel.len() * 80;
            n += g.consumers.keys().map(|c| 64 + c.len()).sum::<usize>();
        }
        n
    }

    /// Redis's `radix-tree-nodes` for the node keys, as a rax built by
    /// insertion holds them: the root, each branching point, each child of
    /// a branching point, and each key (compressed runs between them are one
    /// node).
    pub fn rax_nodes(&self) -> usize {
        let keys: Vec<[u8; 16]> = self.nodes.keys().map(|k| encode_id(*k)).collect();
        let mut set = std::collections::HashSet::new();
        set.insert(Vec::new());
        for k in &keys {
            set.insert(k.to_vec());
        }
        for w in keys.windows(2) {
            let l = w[0].iter().zip(&w[1]).take_while(|(a, b)| a == b).count();
            set.insert(w[0][..l].to_vec());
            set.insert(w[0][..=l].to_vec());
            set.insert(w[1][..=l].to_vec());
        }
        set.len()
    }
}

/// A node's listpack for reading; a node unpacked now is noted in
/// `unpacked`, so the stream can drop its cache later.
fn unpacked_bytes<'a>(
    unpacked: &RefCell<Vec<StreamId>>,
    master: StreamId,
    n: &'a Node,
) -> &'a [u8] {
    let (lp, now) = n.bytes();
    if now {
        unpacked.borrow_mut().push(master);
        UNPACKED.with(|u| u.set(true));
    }
    lp
}

thread_local! {
    /// Set when a read unpacked a node: the command that ran it releases
    /// the caches of its stream keys once done (`command::dispatch::call`).
    static UNPACKED: Cell<bool> = const { Cell::new(false) };
}

/// True (once) when a node was unpacked since the last call.
#[inline]
pub fn take_unpacked() -> bool {
    UNPACKED.with(|u| u.replace(false))
}

/// The 128-bit big-endian form Redis keys nodes and PEL entries by.
pub fn encode_id(id: StreamId) -> [u8; 16] {
    let mut b = [0; 16];
    b[..8].copy_from_slice(&id.ms.to_be_bytes());
    b[8..].copy_from_slice(&id.seq.to_be_bytes());
    b
}

/// The inverse of [`encode_id`].
pub fn decode_id(b: &[u8; 16]) -> StreamId {
    StreamId::new(
        u64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
        u64::from_be_bytes(b[8..].try_into().expect("8 bytes")),
    )
}

/// An entry's place: its node's master id, its offset from the node's first
/// entry (see [`node::Entries::rel`]) and its id.
#[derive(Clone, Copy)]
struct Seek {
    master: StreamId,
    rel: usize,
    id: StreamId,
}

/// Entries in an id range (see [`Stream::range`]).
pub struct Range<'a> {
    nodes: std::collections::btree_map::Range<'a, StreamId, Node>,
    /// The stream's list of unpacked nodes (a node unpacked here joins it).
    unpacked: &'a RefCell<Vec<StreamId>>,
    /// Backwards: the current node's entries.
    back: Option<node::RevEntries<'a>>,
    /// Forwards: the current node's entries.
    fwd: Option<node::Entries<'a>>,
    /// Forwards: where to note the last entry returned.
    seek: Option<&'a Cell<Option<Seek>>>,
    start: StreamId,
    end: StreamId,
    rev: bool,
    skip_deleted: bool,
    done: bool,
}

impl<'a> Iterator for Range<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        while !self.done {
            let e = if self.rev {
                match self.back.as_mut().and_then(|it| it.next()) {
                    Some(e) => e,
                    None => match self.nodes.next_back() {
                        Some((m, n)) => {
                            let lp = unpacked_bytes(self.unpacked, *m, n);
                            self.back = Some(node::entries_rev(lp, *m));
                            continue;
                        }
                        None => {
                            self.done = true;
                            break;
                        }
                    },
                }
            } else {
                match self.fwd.as_mut().and_then(|it| it.next()) {
                    Some(e) => e,
                    None => match self.nodes.next() {
                        Some((m, n)) => {
                            let lp = unpacked_bytes(self.unpacked, *m, n);
                            self.fwd = Some(node::entries(lp, *m));
                            continue;
                        }
                        None => {
                            self.done = true;
                            break;
                        }
                    },
                }
            };
            if self.skip_deleted && e.deleted() {
                continue;
            }
            if self.rev {
                if e.id > self.end {
                    continue;
                }
                if e.id < self.start {
                    self.done = true;
                    break;
                }
            } else {
                if e.id < self.start {
                    continue;
                }
                if e.id > self.end {
                    self.done = true;
                    break;
                }
            }
            if let (Some(seek), Some(it)) = (self.seek, &self.fwd) {
                seek.set(Some(Seek {
                    master: it.master(),
                    rel: it.rel(&e),
                    id: e.id,
                }));
            }
            return Some(e);
        }
        None
    }
}
