//! A packed buffer of byte-string entries (Oxidis's listpack): one allocation, walkable both ways.
//!
//! Layout invariant: the buffer is a plain run of entries with no header.
//! Each entry is `len` (LEB128 varint) + `len` data bytes + `back`, where
//! `back` holds the size of the varint plus `len`, written so that it can be
//! read from its last byte backwards: the last byte carries the low 7 bits and
//! has its high bit set when more significant groups precede it. An offset
//! into the buffer is always the start of an entry (or the end of the buffer).
//! Growth adds a quarter of the buffer at a time (so repeated pushes do not
//! copy the buffer on every call), and owners call [`fit`] once a buffer is
//! complete, so a small collection costs its payload plus two or three bytes
//! per entry, as a listpack does.

/// Bytes a LEB128 varint of `n` takes.
#[inline]
fn varint_size(n: usize) -> usize {
    let mut s = 1;
    let mut n = n >> 7;
    while n > 0 {
        s += 1;
        n >>= 7;
    }
    s
}

/// Bytes the entry for `data_len` data bytes takes.
#[inline]
pub fn entry_size(data_len: usize) -> usize {
    let head = varint_size(data_len) + data_len;
    head + varint_size(head)
}

fn encode(data: &[u8], out: &mut [u8]) {
    let mut i = 0;
    let mut n = data.len();
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out[i] = b;
            i += 1;
            break;
        }
        out[i] = b | 0x80;
        i += 1;
    }
    out[i..i + data.len()].copy_from_slice(data);
    i += data.len();
    let head = i;
    let groups = varint_size(head);
    for g in 0..groups {
        // Memory order: most significant group first; every group but the
        // most significant one is flagged as having more before it.
        let shift = 7 * (groups - 1 - g);
        let mut b = ((head >> shift) & 0x7f) as u8;
        if g > 0 {
            b |= 0x80;
        }
        out[i + g] = b;
    }
}

/// The entry starting at `off`: its data and the offset of the next entry.
#[inline]
pub fn entry_at(buf: &[u8], off: usize) -> (&[u8], usize) {
    let mut len = 0usize;
    let mut shift = 0;
    let mut i = off;
    loop {
        let b = buf[i];
        i += 1;
        len |= ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let data = &buf[i..i + len];
    let head = i + len - off;
    (data, i + len + varint_size(head))
}

/// The start of the entry that ends at `end` (None when `end` is 0).
#[inline]
pub fn prev(buf: &[u8], end: usize) -> Option<usize> {
    if end == 0 {
        return None;
    }
    let mut i = end - 1;
    let mut head = (buf[i] & 0x7f) as usize;
    let mut shift = 7;
    let mut more = buf[i] & 0x80 != 0;
    while more {
        i -= 1;
        head |= ((buf[i] & 0x7f) as usize) << shift;
        more = buf[i] & 0x80 != 0;
        shift += 7;
    }
    Some(i - head)
}

/// Makes room for `n` more bytes, growing by at least a quarter.
#[inline]
fn grow(buf: &mut Vec<u8>, n: usize) {
    if buf.capacity() - buf.len() < n {
        buf.reserve_exact(n.max(buf.len() / 4));
    }
}

/// Inserts an entry at `off` (an entry boundary).
pub fn insert(buf: &mut Vec<u8>, off: usize, data: &[u8]) {
    let n = entry_size(data.len());
    grow(buf, n);
    let old = buf.len();
    buf.resize(old + n, 0);
    buf.copy_within(off..old, off + n);
    encode(data, &mut buf[off..off + n]);
}

/// Appends an entry.
#[inline]
pub fn push(buf: &mut Vec<u8>, data: &[u8]) {
    let n = entry_size(data.len());
    grow(buf, n);
    let old = buf.len();
    buf.resize(old + n, 0);
    encode(data, &mut buf[old..]);
}

/// Removes the entry at `off`.
pub fn remove(buf: &mut Vec<u8>, off: usize) {
    let (_, next) = entry_at(buf, off);
    buf.drain(off..next);
    shrink(buf);
}

/// Replaces the entry at `off` with `data`, moving the tail only when the size changes.
pub fn replace(buf: &mut Vec<u8>, off: usize, data: &[u8]) {
    let (_, next) = entry_at(buf, off);
    let n = entry_size(data.len());
    let old = next - off;
    let len = buf.len();
    if n > old {
        grow(buf, n - old);
        buf.resize(len + n - old, 0);
        buf.copy_within(next..len, off + n);
    } else if n < old {
        buf.copy_within(next..len, off + n);
        buf.truncate(len - (old - n));
    }
    encode(data, &mut buf[off..off + n]);
    if n < old {
        shrink(buf);
    }
}

/// Gives back spare capacity once half of the allocation is unused (more
/// than growth leaves, so pushes and pops at one end do not thrash).
pub fn shrink(buf: &mut Vec<u8>) {
    if buf.capacity() - buf.len() > buf.len() / 2 + 64 {
        buf.shrink_to_fit();
    }
}

/// Drops all spare capacity (a buffer that is done growing for now).
pub fn fit(buf: &mut Vec<u8>) {
    if buf.capacity() != buf.len() {
        buf.shrink_to_fit();
    }
}

/// Entries from the front.
pub struct Iter<'a> {
    buf: &'a [u8],
    off: usize,
}

impl<'a> Iter<'a> {
    pub fn new(buf: &'a [u8]) -> Iter<'a> {
        Iter { buf, off: 0 }
    }

    /// The offset of the entry `next` will return.
    pub fn offset(&self) -> usize {
        self.off
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.off >= self.buf.len() {
            return None;
        }
        let (d, next) = entry_at(self.buf, self.off);
        self.off = next;
        Some(d)
    }
}

/// Entries from the back.
pub struct RevIter<'a> {
    buf: &'a [u8],
    end: usize,
}

impl<'a> RevIter<'a> {
    pub fn new(buf: &'a [u8]) -> RevIter<'a> {
        RevIter {
            buf,
            end: buf.len(),
        }
    }
}

impl<'a> Iterator for RevIter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let start = prev(self.buf, self.end)?;
        let (d, _) = entry_at(self.buf, start);
        self.end = start;
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_both_ways() {
        let mut buf = Vec::new();
        let items: Vec<Vec<u8>> = [0usize, 1, 5, 120, 127, 128, 200, 16383, 16384, 70000]
            .iter()
            .map(|&n| (0..n).map(|i| (i % 251) as u8).collect())
            .collect();
        for it in &items {
            push(&mut buf, it);
        }
        fit(&mut buf);
        assert_eq!(buf.capacity(), buf.len());
        let fwd: Vec<&[u8]> = Iter::new(&buf).collect();
        assert_eq!(fwd.len(), items.len());
        for (a, b) in fwd.iter().zip(&items) {
            assert_eq!(*a, &b[..]);
        }
        let back: Vec<&[u8]> = RevIter::new(&buf).collect();
        for (a, b) in back.iter().zip(items.iter().rev()) {
            assert_eq!(*a, &b[..]);
        }
    }

    #[test]
    fn insert_replace_remove() {
        let mut buf = Vec::new();
        push(&mut buf, b"a");
        push(&mut buf, b"c");
        let (_, second) = entry_at(&buf, 0);
        insert(&mut buf, second, b"b");
        let v: Vec<&[u8]> = Iter::new(&buf).collect();
        assert_eq!(v, vec![&b"a"[..], b"b", b"c"]);
        replace(&mut buf, second, &[7u8; 300]);
        let v: Vec<Vec<u8>> = RevIter::new(&buf).map(|x| x.to_vec()).collect();
        assert_eq!(v, vec![b"c".to_vec(), vec![7u8; 300], b"a".to_vec()]);
        remove(&mut buf, 0);
        let v: Vec<Vec<u8>> = Iter::new(&buf).map(|x| x.to_vec()).collect();
        assert_eq!(v, vec![vec![7u8; 300], b"c".to_vec()]);
    }
}
