//! One stream node: a listpack in Redis's stream layout (master entry, then delta-encoded entries).
//!
//! Layout (t_stream.c `streamAppendItem`), every item a listpack element:
//!
//! ```text
//! count | deleted | master-nfields | master-field... | 0
//! flags | ms-delta | seq-delta | [nfields | field value ...] or [value ...] | lp-count
//! ...
//! ```
//!
//! `count` is the live entries, `deleted` the entries flagged deleted (they
//! stay until the node goes). An entry whose fields are the master's has the
//! SAMEFIELDS flag and stores only values. `lp-count` is the number of items
//! of the entry before it (for walking backwards). Ids are the node's master
//! id (its key in the stream's tree) plus the deltas, as i64 wrapping adds.
//!
//! Invariant: a node's buffer is always a well-formed listpack in this
//! layout (built here, or validated when loaded), so reads here expect it.

use super::id::StreamId;
use crate::persist::rdb::listpack::{self, Elem};

pub const FLAG_DELETED: i64 = 1;
pub const FLAG_SAMEFIELDS: i64 = 2;

/// Reads the element at `pos` (a node is well formed: see the invariant).
#[inline]
fn read(lp: &[u8], pos: usize) -> (Elem<'_>, usize) {
    listpack::elem_at(lp, pos).expect("stream node listpack is well formed")
}

/// Reads an integer element (a string holding an integer also counts, as
/// Redis's `lpGetInteger`).
#[inline]
fn read_int(lp: &[u8], pos: usize) -> (i64, usize) {
    match read(lp, pos) {
        (Elem::Int(v), next) => (v, next),
        (Elem::Str(s), next) => (crate::types::number::parse_i64(s).unwrap_or(0), next),
    }
}

#[inline]
fn skip(lp: &[u8], pos: usize, n: usize) -> usize {
    (0..n).fold(pos, |p, _| read(lp, p).1)
}

/// The master entry's parts.
#[derive(Clone, Copy, Debug)]
pub struct Header {
    /// Live entries.
    pub count: i64,
    /// Entries flagged deleted.
    pub deleted: i64,
    /// Number of master fields and where the first one is.
    pub nfields: usize,
    pub fields_at: usize,
    /// Where the first entry's flags are.
    pub first_entry: usize,
}

pub fn header(lp: &[u8]) -> Header {
    let (count, p) = read_int(lp, listpack::HEADER);
    let (deleted, p) = read_int(lp, p);
    let (nfields, fields_at) = read_int(lp, p);
    let nfields = nfields.max(0) as usize;
    let p = skip(lp, fields_at, nfields);
    let first_entry = read(lp, p).1; // the master's 0 terminator
    Header {
        count,
        deleted,
        nfields,
        fields_at,
        first_entry,
    }
}

/// One entry of a node, decoded up to its fields.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    pub id: StreamId,
    pub flags: i64,
    lp: &'a [u8],
    nfields: usize,
    /// The master fields (for SAMEFIELDS entries).
    master_at: usize,
    /// The first field (or value, for SAMEFIELDS).
    body: usize,
    /// Where the flags are.
    pub at: usize,
    /// Just after the lp-count.
    pub end: usize,
}

impl<'a> Entry<'a> {
    /// Decodes the entry whose flags are at `at`.
    pub fn read(lp: &'a [u8], master: StreamId, h: &Header, at: usize) -> Entry<'a> {
        let (flags, p) = read_int(lp, at);
        let (ms, p) = read_int(lp, p);
        let (seq, p) = read_int(lp, p);
        let id = StreamId::new(
            master.ms.wrapping_add(ms as u64),
            master.seq.wrapping_add(seq as u64),
        );
        let (nfields, body, items) = if flags & FLAG_SAMEFIELDS != 0 {
            (h.nfields, p, h.nfields)
        } else {
            let (n, body) = read_int(lp, p);
            let n = n.max(0) as usize;
            (n, body, 2 * n)
        };
        let end = read(lp, skip(lp, body, items)).1;
        Entry {
            id,
            flags,
            lp,
            nfields,
            master_at: h.fields_at,
            body,
            at,
            end,
        }
    }

    pub fn deleted(&self) -> bool {
        self.flags & FLAG_DELETED != 0
    }

    /// Number of field-value pairs.
    pub fn len(&self) -> usize {
        self.nfields
    }

    pub fn is_empty(&self) -> bool {
        self.nfields == 0
    }

    pub fn fields(&self) -> Fields<'a> {
        Fields {
            lp: self.lp,
            same: self.flags & FLAG_SAMEFIELDS != 0,
            master: self.master_at,
            pos: self.body,
            left: self.nfields,
        }
    }
}

/// An entry's field-value pairs.
pub struct Fields<'a> {
    lp: &'a [u8],
    same: bool,
    master: usize,
    pos: usize,
    left: usize,
}

impl<'a> Iterator for Fields<'a> {
    type Item = (Elem<'a>, Elem<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let f = if self.same {
            let (f, next) = read(self.lp, self.master);
            self.master = next;
            f
        } else {
            let (f, next) = read(self.lp, self.pos);
            self.pos = next;
            f
        };
        let (v, next) = read(self.lp, self.pos);
        self.pos = next;
        Some((f, v))
    }
}

/// The entries of a node in order, deleted ones included.
pub struct Entries<'a> {
    lp: &'a [u8],
    master: StreamId,
    h: Header,
    pos: usize,
}

/// The id of the entry whose flags are at `at`, or None when `at` is not
/// where an entry could start: checks a remembered position without
/// trusting it.
fn entry_id_at(lp: &[u8], master: StreamId, at: usize) -> Option<StreamId> {
    let int = |pos: usize| match listpack::elem_at(lp, pos)? {
        (Elem::Int(v), next) => Some((v, next)),
        _ => None,
    };
    let (_flags, p) = int(at)?;
    let (ms, p) = int(p)?;
    let (seq, _) = int(p)?;
    Some(StreamId::new(
        master.ms.wrapping_add(ms as u64),
        master.seq.wrapping_add(seq as u64),
    ))
}

/// The entries of a node from the entry `rel` bytes after its first one,
/// when that entry is `id` (None otherwise).
pub fn entries_from(lp: &[u8], master: StreamId, rel: usize, id: StreamId) -> Option<Entries<'_>> {
    let h = header(lp);
    let pos = h.first_entry.checked_add(rel)?;
    (entry_id_at(lp, master, pos)? == id).then_some(Entries { lp, master, pos, h })
}

impl Entries<'_> {
    /// Where `e` (an entry of this node) lies, from the node's first entry:
    /// appends, deletion flags and count updates leave it unchanged.
    pub fn rel(&self, e: &Entry<'_>) -> usize {
        e.at - self.h.first_entry
    }

    pub fn master(&self) -> StreamId {
        self.master
    }
}

pub fn entries(lp: &[u8], master: StreamId) -> Entries<'_> {
    let h = header(lp);
    Entries {
        lp,
        master,
        pos: h.first_entry,
        h,
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        if self.lp[self.pos] == 0xFF {
            return None;
        }
        let e = Entry::read(self.lp, self.master, &self.h, self.pos);
        self.pos = e.end;
        Some(e)
    }
}

/// The entries of a node from the last to the first, deleted ones
/// included, walked back by each entry's lp-count as Redis does.
pub struct RevEntries<'a> {
    lp: &'a [u8],
    master: StreamId,
    h: Header,
    /// Just after the next entry to return.
    end: usize,
}

pub fn entries_rev(lp: &[u8], master: StreamId) -> RevEntries<'_> {
    let h = header(lp);
    RevEntries {
        lp,
        master,
        end: lp.len() - 1,
        h,
    }
}

impl<'a> Iterator for RevEntries<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        if self.end <= self.h.first_entry {
            return None;
        }
        let back = |p: usize| {
            listpack::prev_start(self.lp, p).expect("stream node listpack is well formed")
        };
        let count_at = back(self.end);
        let (items, _) = read_int(self.lp, count_at);
        let at = (0..items.max(0)).fold(count_at, |p, _| back(p));
        let e = Entry::read(self.lp, self.master, &self.h, at);
        self.end = at;
        Some(e)
    }
}

/// Element count in the listpack header: 65535 means "count them", and
/// once reached it stays (Redis's `lpInsert`).
fn add_numele(lp: &mut [u8], added: usize) {
    let n = u16::from_le_bytes([lp[4], lp[5]]) as usize;
    if n != 65535 {
        let n = (n + added).min(65535) as u16;
        lp[4..6].copy_from_slice(&n.to_le_bytes());
    }
}

fn set_total(lp: &mut [u8]) {
    let total = lp.len() as u32;
    lp[0..4].copy_from_slice(&total.to_le_bytes());
}

/// Replaces the integer element at `pos` (Redis's `lpReplaceInteger`).
pub fn replace_int(lp: &mut Vec<u8>, pos: usize, v: i64) {
    let end = read(lp, pos).1;
    let mut enc = Vec::with_capacity(10);
    listpack::push_int(&mut enc, v);
    lp.splice(pos..end, enc);
    set_total(lp);
}

/// A new node holding one entry, with its fields as the master fields.
/// `fields` alternates field and value.
pub fn create(id: StreamId, fields: &[&[u8]]) -> Vec<u8> {
    let _ = id; // the master id is the node's key; the first entry's deltas are 0
    let n = fields.len() / 2;
    let mut lp = Vec::with_capacity(64 + fields.iter().map(|f| f.len() + 2).sum::<usize>());
    listpack::begin(&mut lp);
    listpack::push_int(&mut lp, 1);
    listpack::push_int(&mut lp, 0);
    listpack::push_int(&mut lp, n as i64);
    for f in fields.iter().step_by(2) {
        listpack::push(&mut lp, f);
    }
    listpack::push_int(&mut lp, 0);
    listpack::push_int(&mut lp, FLAG_SAMEFIELDS);
    listpack::push_int(&mut lp, 0);
    listpack::push_int(&mut lp, 0);
    for v in fields.iter().skip(1).step_by(2) {
        listpack::push(&mut lp, v);
    }
    listpack::push_int(&mut lp, n as i64 + 3);
    listpack::finish(&mut lp, 3 + n + 1 + 3 + n + 1);
    lp
}

/// Appends an entry to a node whose master id is `master`.
pub fn append(lp: &mut Vec<u8>, master: StreamId, id: StreamId, fields: &[&[u8]]) {
    let h = header(lp);
    let n = fields.len() / 2;
    let same = n == h.nfields && {
        let mut tmp = itoa::Buffer::new();
        let mut p = h.fields_at;
        fields.iter().step_by(2).all(|f| {
            let (e, next) = read(lp, p);
            p = next;
            e.bytes(&mut tmp) == *f
        })
    };
    replace_int(lp, listpack::HEADER, h.count + 1);
    lp.pop(); // the terminator
    let before = lp.len();
    let flags = if same { FLAG_SAMEFIELDS } else { 0 };
    listpack::push_int(lp, flags);
    listpack::push_int(lp, id.ms.wrapping_sub(master.ms) as i64);
    listpack::push_int(lp, id.seq.wrapping_sub(master.seq) as i64);
    let mut items = 3;
    if !same {
        listpack::push_int(lp, n as i64);
        items += 1;
    }
    for pair in fields.chunks_exact(2) {
        if !same {
            listpack::push(lp, pair[0]);
            items += 1;
        }
        listpack::push(lp, pair[1]);
        items += 1;
    }
    listpack::push_int(lp, items as i64);
    debug_assert!(lp.len() > before);
    lp.push(0xFF);
    set_total(lp);
    add_numele(lp, items + 1);
}

/// Flags the entry at `at` deleted and moves one from `count` to
/// `deleted`. The caller drops the node instead when it was its last entry.
pub fn mark_deleted(lp: &mut Vec<u8>, at: usize, flags: i64) {
    // Flags are 0..=3: one byte either way, so the entry does not move.
    replace_int(lp, at, flags | FLAG_DELETED);
    let h = header(lp);
    replace_int(lp, listpack::HEADER, h.count - 1);
    let deleted_at = read(lp, listpack::HEADER).1;
    replace_int(lp, deleted_at, h.deleted + 1);
}

/// Sets the live and deleted counts.
pub fn set_counts(lp: &mut Vec<u8>, count: i64, deleted: i64) {
    replace_int(lp, listpack::HEADER, count);
    let deleted_at = read(lp, listpack::HEADER).1;
    replace_int(lp, deleted_at, deleted);
}

/// The last entry of a node (deleted or not): its id.
pub fn last_id(lp: &[u8], master: StreamId) -> StreamId {
    entries(lp, master).last().map_or(master, |e| e.id)
}

/// Bytes an entry adds at most beyond its fields, for the node-size check
/// (Redis compares the listpack size plus the fields' lengths).
pub fn fields_len(fields: &[&[u8]]) -> usize {
    fields.iter().map(|f| f.len()).sum()
}

/// True when `lp` is a listpack in the stream node layout that every read
/// here can walk (checked on RDB load and RESTORE, where Redis runs
/// `streamValidateListpackIntegrity` deeply): the master entry, then
/// entries whose lp-count matches, as many as `count + deleted` say.
pub fn validate(lp: &[u8], master: StreamId) -> bool {
    let _ = master;
    let Ok(items) = listpack::collect(lp) else {
        return false;
    };
    let int = |i: usize| match items.get(i) {
        Some(Elem::Int(v)) => Some(*v),
        _ => None,
    };
    let (Some(count), Some(deleted), Some(nf)) = (int(0), int(1), int(2)) else {
        return false;
    };
    if count < 0 || deleted < 0 || nf < 0 || nf as usize > items.len() {
        return false;
    }
    let nf = nf as usize;
    let mut i = 3 + nf;
    if int(i) != Some(0) {
        return false;
    }
    i += 1;
    let (mut live, mut dead) = (0i64, 0i64);
    while i < items.len() {
        let start = i;
        let Some(flags) = int(i) else { return false };
        if !(0..=3).contains(&flags) || int(i + 1).is_none() || int(i + 2).is_none() {
            return false;
        }
        i += 3;
        let values = if flags & FLAG_SAMEFIELDS != 0 {
            nf
        } else {
            match int(i) {
                Some(n) if n >= 0 && (n as usize) <= items.len() => {
                    i += 1;
                    2 * n as usize
                }
                _ => return false,
            }
        };
        i += values;
        if int(i) != Some((i - start) as i64) {
            return false;
        }
        i += 1;
        if flags & FLAG_DELETED != 0 {
            dead += 1;
        } else {
            live += 1;
        }
    }
    i == items.len() && live == count && dead == deleted && live + dead > 0
}
