//! Reply encoder: writes RESP2 or RESP3 straight into a client's output buffer.
//!
//! Handlers call the typed methods (`bulk`, `int`, `map`, `double`, ...) and the
//! encoder picks the wire form for the connection's protocol, the way Redis's
//! `addReply*` family does: a map is `%n` in RESP3 and `*2n` in RESP2, a null is
//! `_` in RESP3 and `$-1` or `*-1` in RESP2, and so on.

use bytes::BytesMut;

/// An output buffer plus the protocol version it speaks.
#[derive(Debug)]
pub struct Reply {
    pub buf: BytesMut,
    pub resp: u8,
}

/// A placeholder for an aggregate whose length is known only after its elements
/// are written (Redis's `addReplyDeferredLen`).
pub struct Deferred {
    pos: usize,
}

impl Reply {
    pub fn new(resp: u8) -> Self {
        Reply {
            // Allocated on first use: an idle connection holds no buffer.
            buf: BytesMut::new(),
            resp,
        }
    }

    #[inline]
    pub fn resp3(&self) -> bool {
        self.resp >= 3
    }

    #[inline]
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    #[inline]
    fn header(&mut self, prefix: u8, n: i64) {
        // Assembled on the stack and appended once: tiny appends each cost a
        // capacity check and a memcpy call.
        let mut b = itoa::Buffer::new();
        let s = b.format(n).as_bytes();
        let mut line = [0u8; 24];
        line[0] = prefix;
        line[1..1 + s.len()].copy_from_slice(s);
        line[1 + s.len()..3 + s.len()].copy_from_slice(b"\r\n");
        self.buf.extend_from_slice(&line[..3 + s.len()]);
    }

    /// `+OK`
    #[inline]
    pub fn ok(&mut self) {
        self.raw(b"+OK\r\n");
    }

    /// A status reply (`+text`).
    pub fn simple(&mut self, s: &str) {
        self.simple_bytes(s.as_bytes());
    }

    pub fn simple_bytes(&mut self, s: &[u8]) {
        self.buf.reserve(s.len() + 3);
        self.buf.extend_from_slice(b"+");
        self.buf.extend_from_slice(s);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// An error line; `full` already carries its code (`ERR ...`, `WRONGTYPE ...`).
    /// Newlines inside are replaced by spaces, as Redis does.
    pub fn error_line(&mut self, full: &str) {
        self.error_bytes(full.as_bytes());
    }

    /// As [`Reply::error_line`], for a text holding bytes that are not UTF-8.
    pub fn error_bytes(&mut self, full: &[u8]) {
        self.buf.extend_from_slice(b"-");
        for &b in full {
            self.buf
                .extend_from_slice(&[if b == b'\r' || b == b'\n' { b' ' } else { b }]);
        }
        self.buf.extend_from_slice(b"\r\n");
    }

    #[inline]
    pub fn int(&mut self, n: i64) {
        self.header(b':', n);
    }

    #[inline]
    pub fn bulk(&mut self, b: &[u8]) {
        if b.len() <= 64 {
            // Small values (most replies): the whole frame in one append.
            let mut f = [0u8; 72];
            let n = b.len();
            f[0] = b'$';
            let h = if n < 10 {
                f[1] = b'0' + n as u8;
                2
            } else {
                f[1] = b'0' + (n / 10) as u8;
                f[2] = b'0' + (n % 10) as u8;
                3
            };
            f[h..h + 2].copy_from_slice(b"\r\n");
            f[h + 2..h + 2 + n].copy_from_slice(b);
            f[h + 2 + n..h + 4 + n].copy_from_slice(b"\r\n");
            self.buf.extend_from_slice(&f[..h + 4 + n]);
            return;
        }
        self.buf.reserve(b.len() + 16);
        self.header(b'$', b.len() as i64);
        self.buf.extend_from_slice(b);
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn bulk_str(&mut self, s: &str) {
        self.bulk(s.as_bytes());
    }

    /// An integer sent as a bulk string (e.g. `GET` of an int-encoded value).
    pub fn bulk_int(&mut self, n: i64) {
        let mut b = itoa::Buffer::new();
        self.bulk(b.format(n).as_bytes());
    }

    /// Null bulk: `$-1` in RESP2, `_` in RESP3.
    #[inline]
    pub fn null(&mut self) {
        if self.resp3() {
            self.raw(b"_\r\n");
        } else {
            self.raw(b"$-1\r\n");
        }
    }

    /// Null array: `*-1` in RESP2, `_` in RESP3.
    pub fn null_array(&mut self) {
        if self.resp3() {
            self.raw(b"_\r\n");
        } else {
            self.raw(b"*-1\r\n");
        }
    }

    #[inline]
    pub fn array(&mut self, n: usize) {
        self.header(b'*', n as i64);
    }

    /// A map of `n` pairs: `%n` in RESP3, `*2n` in RESP2.
    pub fn map(&mut self, n: usize) {
        if self.resp3() {
            self.header(b'%', n as i64);
        } else {
            self.header(b'*', 2 * n as i64);
        }
    }

    /// A set of `n` elements: `~n` in RESP3, `*n` in RESP2.
    pub fn set(&mut self, n: usize) {
        if self.resp3() {
            self.header(b'~', n as i64);
        } else {
            self.header(b'*', n as i64);
        }
    }

    /// An attribute-less push: `>n` in RESP3, `*n` in RESP2.
    pub fn push(&mut self, n: usize) {
        if self.resp3() {
            self.header(b'>', n as i64);
        } else {
            self.header(b'*', n as i64);
        }
    }

    /// A boolean: `#t`/`#f` in RESP3, `:1`/`:0` in RESP2.
    pub fn boolean(&mut self, v: bool) {
        if self.resp3() {
            self.raw(if v { b"#t\r\n" } else { b"#f\r\n" });
        } else {
            self.raw(if v { b":1\r\n" } else { b":0\r\n" });
        }
    }

    /// A double: `,d` in RESP3, a bulk string in RESP2, formatted as Redis 7.0
    /// formats it (`%.17g`, with `inf`/`-inf`).
    pub fn double(&mut self, d: f64) {
        let s = crate::types::number::fmt_double(d);
        if self.resp3() {
            self.buf.extend_from_slice(b",");
            self.buf.extend_from_slice(s.as_bytes());
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(s.as_bytes());
        }
    }

    /// A verbatim string (`=len\r\ntxt:...`) in RESP3, a bulk string in RESP2.
    pub fn verbatim(&mut self, s: &[u8]) {
        if self.resp3() {
            self.header(b'=', s.len() as i64 + 4);
            self.buf.extend_from_slice(b"txt:");
            self.buf.extend_from_slice(s);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(s);
        }
    }

    /// An empty array (`*0`).
    pub fn empty_array(&mut self) {
        self.raw(b"*0\r\n");
    }

    /// Starts an aggregate whose length is filled in by [`Reply::end_array`] etc.
    pub fn deferred(&mut self) -> Deferred {
        Deferred {
            pos: self.buf.len(),
        }
    }

    fn end_deferred(&mut self, d: Deferred, prefix: u8, n: usize) {
        let mut b = itoa::Buffer::new();
        let s = b.format(n);
        let mut head = Vec::with_capacity(s.len() + 3);
        head.push(prefix);
        head.extend_from_slice(s.as_bytes());
        head.extend_from_slice(b"\r\n");
        let tail = self.buf.split_off(d.pos);
        self.buf.extend_from_slice(&head);
        self.buf.unsplit(tail);
    }

    pub fn end_array(&mut self, d: Deferred, n: usize) {
        self.end_deferred(d, b'*', n);
    }

    /// Ends a deferred map of `n` pairs.
    pub fn end_map(&mut self, d: Deferred, n: usize) {
        if self.resp3() {
            self.end_deferred(d, b'%', n);
        } else {
            self.end_deferred(d, b'*', 2 * n);
        }
    }

    pub fn end_set(&mut self, d: Deferred, n: usize) {
        let p = if self.resp3() { b'~' } else { b'*' };
        self.end_deferred(d, p, n);
    }

    /// Bytes written so far (lets callers measure or roll back a reply).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_frames_at_every_size_class() {
        for n in [0usize, 1, 9, 10, 63, 64, 65, 99, 100, 1000] {
            let v = vec![b'x'; n];
            let mut r = Reply::new(2);
            r.bulk(&v);
            let mut want = format!("${n}\r\n").into_bytes();
            want.extend_from_slice(&v);
            want.extend_from_slice(b"\r\n");
            assert_eq!(&r.buf[..], &want[..], "length {n}");
        }
        let mut r = Reply::new(2);
        r.int(-1234567890123);
        r.array(0);
        assert_eq!(&r.buf[..], b":-1234567890123\r\n*0\r\n");
    }

    #[test]
    fn shapes_per_protocol() {
        let mut r2 = Reply::new(2);
        r2.map(2);
        r2.null();
        r2.null_array();
        r2.boolean(true);
        r2.double(1.5);
        assert_eq!(&r2.buf[..], b"*4\r\n$-1\r\n*-1\r\n:1\r\n$3\r\n1.5\r\n");
        let mut r3 = Reply::new(3);
        r3.map(2);
        r3.null();
        r3.null_array();
        r3.boolean(true);
        r3.double(1.5);
        assert_eq!(&r3.buf[..], b"%2\r\n_\r\n_\r\n#t\r\n,1.5\r\n");
    }

    #[test]
    fn deferred_lengths() {
        let mut r = Reply::new(2);
        r.int(1);
        let d = r.deferred();
        r.bulk(b"a");
        r.bulk(b"b");
        r.end_array(d, 2);
        assert_eq!(&r.buf[..], b":1\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    }
}
