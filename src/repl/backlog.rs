//! The replication backlog: the last `repl-backlog-size` bytes of the stream, so a replica that lost its link can continue (PSYNC) instead of a full sync.

/// A ring over the stream's newest bytes (Redis's `repl_backlog`).
///
/// Invariant: the ring holds the stream bytes at offsets
/// `first_byte_offset() .. first_byte_offset() + histlen`, the last of which
/// is the master's `master_repl_offset` (offsets count from 1, as Redis's).
pub struct Backlog {
    buf: Vec<u8>,
    /// Where the next byte goes in `buf` (when full, also the oldest byte).
    pos: usize,
    /// Bytes held (at most `buf.len()`).
    histlen: usize,
    /// The stream offset of the newest byte held (master_repl_offset).
    end_offset: i64,
}

impl Backlog {
    /// An empty backlog of `size` bytes, continuing a stream that has
    /// reached `offset`.
    pub fn new(size: usize, offset: i64) -> Backlog {
        Backlog {
            buf: vec![0; size.max(1)],
            pos: 0,
            histlen: 0,
            end_offset: offset,
        }
    }

    /// Appends stream bytes, dropping the oldest beyond the size.
    pub fn feed(&mut self, mut data: &[u8]) {
        self.end_offset += data.len() as i64;
        let cap = self.buf.len();
        if data.len() >= cap {
            data = &data[data.len() - cap..];
            self.buf.copy_from_slice(data);
            self.pos = 0;
            self.histlen = cap;
            return;
        }
        let first = data.len().min(cap - self.pos);
        self.buf[self.pos..self.pos + first].copy_from_slice(&data[..first]);
        self.buf[..data.len() - first].copy_from_slice(&data[first..]);
        self.pos = (self.pos + data.len()) % cap;
        self.histlen = (self.histlen + data.len()).min(cap);
    }

    /// Offset of the oldest byte held (INFO `repl_backlog_first_byte_offset`).
    pub fn first_byte_offset(&self) -> i64 {
        self.end_offset - self.histlen as i64 + 1
    }

    pub fn histlen(&self) -> usize {
        self.histlen
    }

    pub fn size(&self) -> usize {
        self.buf.len()
    }

    /// The stream from offset `from` (the first byte a replica lacks) to
    /// the end; None when those bytes are no longer (or not yet) held.
    pub fn since(&self, from: i64) -> Option<Vec<u8>> {
        let first = self.first_byte_offset();
        if from < first || from > self.end_offset + 1 {
            return None;
        }
        let skip = (from - first) as usize;
        let cap = self.buf.len();
        let start = (self.pos + cap - self.histlen + skip) % cap;
        let len = self.histlen - skip;
        let mut out = Vec::with_capacity(len);
        let first_part = len.min(cap - start);
        out.extend_from_slice(&self.buf[start..start + first_part]);
        out.extend_from_slice(&self.buf[..len - first_part]);
        Some(out)
    }

    /// Resizes to `size` bytes, keeping the newest bytes that fit
    /// (CONFIG SET repl-backlog-size).
    pub fn resize(&mut self, size: usize) {
        let keep = self.since(self.first_byte_offset()).unwrap_or_default();
        let end = self.end_offset;
        *self = Backlog::new(size, end - keep.len() as i64);
        self.feed(&keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_bytes_with_their_offsets() {
        let mut b = Backlog::new(8, 100);
        assert_eq!(b.first_byte_offset(), 101);
        assert_eq!(b.since(101), Some(vec![]));
        b.feed(b"abcde");
        assert_eq!(b.first_byte_offset(), 101);
        assert_eq!(b.since(103).unwrap(), b"cde");
        b.feed(b"fghij");
        // 10 bytes fed into 8: offsets 103..=110 held.
        assert_eq!(b.first_byte_offset(), 103);
        assert_eq!(b.histlen(), 8);
        assert_eq!(b.since(103).unwrap(), b"cdefghij");
        assert_eq!(b.since(109).unwrap(), b"ij");
        assert_eq!(b.since(111).unwrap(), b"");
        assert_eq!(b.since(102), None);
        assert_eq!(b.since(112), None);
        b.feed(b"0123456789abc");
        assert_eq!(b.since(b.first_byte_offset()).unwrap(), b"56789abc");
        assert_eq!(b.first_byte_offset(), 123 - 8 + 1);
        b.feed(b"xy");
        assert_eq!(b.since(b.first_byte_offset()).unwrap(), b"789abcxy");
        b.resize(4);
        assert_eq!(b.since(b.first_byte_offset()).unwrap(), b"bcxy");
        assert_eq!(b.first_byte_offset(), 125 - 4 + 1);
    }
}
