//! The RDB encoder: lengths, strings (integer, LZF, verbatim) and every value in the encoding Redis 7.0 writes for it.

use super::consts::*;
use super::{intset, listpack, lzf};
use crate::db::Value;
use crate::types::pack;
use crate::types::set::Set;
use crate::types::string::Str;
use crate::types::zset::ZSet;

/// An output buffer with Redis's string rules (`rdbcompression`) and
/// reusable scratch space for the compact encodings.
pub struct Encoder {
    pub buf: Vec<u8>,
    pub compress: bool,
    scratch: Vec<u8>,
    lzf: Vec<u8>,
}

/// Redis's `double2ll`: the integer a double holds exactly, within ±2^62.
pub fn double2ll(d: f64) -> Option<i64> {
    const LIM: f64 = (i64::MAX / 2) as f64;
    if !(-LIM..=LIM).contains(&d) {
        return None;
    }
    let ll = d as i64;
    (ll as f64 == d).then_some(ll)
}

impl Encoder {
    pub fn new(compress: bool) -> Encoder {
        Encoder {
            buf: Vec::new(),
            compress,
            scratch: Vec::new(),
            lzf: Vec::new(),
        }
    }

    #[inline]
    pub fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    /// `rdbSaveLen`.
    #[inline]
    pub fn len(&mut self, n: u64) {
        if n < 1 << 6 {
            self.buf.push(n as u8);
        } else if n < 1 << 14 {
            self.buf
                .extend_from_slice(&[(LEN_14BIT << 6) | (n >> 8) as u8, n as u8]);
        } else if n <= u32::MAX as u64 {
            self.buf.push(LEN_32BIT);
            self.buf.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            self.buf.push(LEN_64BIT);
            self.buf.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// `rdbEncodeInteger`: true when `v` fits an 8, 16 or 32 bit encoding.
    #[inline]
    fn try_int(&mut self, v: i64) -> bool {
        let tag = ENCVAL << 6;
        if let Ok(b) = i8::try_from(v) {
            self.buf.extend_from_slice(&[tag | ENC_INT8, b as u8]);
        } else if let Ok(h) = i16::try_from(v) {
            self.buf.push(tag | ENC_INT16);
            self.buf.extend_from_slice(&h.to_le_bytes());
        } else if let Ok(w) = i32::try_from(v) {
            self.buf.push(tag | ENC_INT32);
            self.buf.extend_from_slice(&w.to_le_bytes());
        } else {
            return false;
        }
        true
    }

    /// `rdbSaveLongLongAsStringObject`.
    pub fn int_string(&mut self, v: i64) {
        if !self.try_int(v) {
            let mut b = itoa::Buffer::new();
            let s = b.format(v);
            self.len(s.len() as u64);
            self.buf.extend_from_slice(s.as_bytes());
        }
    }

    /// `rdbSaveRawString`: integer encoding for short decimal strings, LZF
    /// for strings over 20 bytes when it saves at least 4, else verbatim.
    pub fn string(&mut self, s: &[u8]) {
        if s.len() <= 11 {
            if let Some(v) = crate::types::number::parse_i64(s) {
                if self.try_int(v) {
                    return;
                }
            }
        }
        if self.compress && s.len() > 20 && lzf::compress(s, &mut self.lzf) {
            self.buf.push((ENCVAL << 6) | ENC_LZF);
            self.len(self.lzf.len() as u64);
            self.len(s.len() as u64);
            self.buf.extend_from_slice(&self.lzf);
            return;
        }
        self.len(s.len() as u64);
        self.buf.extend_from_slice(s);
    }

    /// Writes the scratch buffer as a string (a listpack or intset blob).
    fn scratch_string(&mut self) {
        let blob = std::mem::take(&mut self.scratch);
        self.string(&blob);
        self.scratch = blob;
    }

    /// Fills the scratch buffer with a Redis listpack of our packed entries.
    fn listpack_of(&mut self, packed: &[u8], count: usize) {
        listpack::begin(&mut self.scratch);
        for e in pack::Iter::new(packed) {
            listpack::push(&mut self.scratch, e);
        }
        listpack::finish(&mut self.scratch, count);
    }

    /// Bytes of each node of a list as the Redis listpack it is saved as
    /// (DEBUG OBJECT's `ql_uncompressed_size` adds them up).
    pub fn list_node_bytes(l: &crate::types::list::List) -> impl Iterator<Item = usize> + '_ {
        let mut lp = Vec::new();
        l.nodes().map(move |(packed, count)| {
            listpack::begin(&mut lp);
            for e in pack::Iter::new(packed) {
                listpack::push(&mut lp, e);
            }
            listpack::finish(&mut lp, count);
            lp.len()
        })
    }

    /// `rdbSaveObjectType`: the RDB type byte Redis 7.0 writes for the value.
    pub fn type_of(v: &Value) -> u8 {
        match v {
            Value::Str(_) => TYPE_STRING,
            Value::List(_) => TYPE_LIST_QUICKLIST_2,
            Value::Set(s) if matches!(**s, Set::Ints(_)) => TYPE_SET_INTSET,
            Value::Set(_) => TYPE_SET,
            Value::ZSet(z) if z.is_listpack() => TYPE_ZSET_LISTPACK,
            Value::ZSet(_) => TYPE_ZSET_2,
            Value::Hash(h) if h.is_packed() => TYPE_HASH_LISTPACK,
            Value::Hash(_) => TYPE_HASH,
            Value::Stream(_) => TYPE_STREAM_LISTPACKS_2,
        }
    }

    /// `rdbSaveObject`: the value's body (after its type byte).
    pub fn object(&mut self, v: &Value) {
        match v {
            Value::Str(Str::Int(n)) => self.int_string(*n),
            Value::Str(s) => self.string(s.as_slice().unwrap_or_default()),
            Value::List(l) => {
                self.len(l.nodes().count() as u64);
                for (packed, count) in l.nodes() {
                    self.len(QUICKLIST_PACKED);
                    self.listpack_of(packed, count);
                    self.scratch_string();
                }
            }
            Value::Set(s) => match &**s {
                Set::Ints(v) => {
                    intset::write(v, &mut self.scratch);
                    self.scratch_string();
                }
                Set::Table(d) => {
                    self.len(d.len() as u64);
                    for (m, _) in d.iter() {
                        self.string(m);
                    }
                }
            },
            Value::Hash(h) => match h.packed() {
                Some(buf) => {
                    self.listpack_of(buf, h.len() * 2);
                    self.scratch_string();
                }
                None => {
                    self.len(h.len() as u64);
                    for (f, v) in h.iter() {
                        self.string(f);
                        self.string(v);
                    }
                }
            },
            Value::Stream(s) => self.stream(s),
            Value::ZSet(z) if z.is_listpack() => self.zset_listpack(z),
            Value::ZSet(z) => {
                // Greatest first, as Redis walks its skiplist backwards.
                self.len(z.len() as u64);
                for (m, s) in z.iter_rev_from(z.len().saturating_sub(1)) {
                    self.string(m);
                    self.buf.extend_from_slice(&s.to_le_bytes());
                }
            }
        }
    }

    /// A listpack zset: member then score, the score as an integer when
    /// `double2ll` allows, else as `d2string` text (Redis's `zzlInsertAt`).
    fn zset_listpack(&mut self, z: &ZSet) {
        let lp = &mut self.scratch;
        listpack::begin(lp);
        for (m, s) in z.iter() {
            listpack::push(lp, m);
            match double2ll(s) {
                Some(i) => listpack::push_int(lp, i),
                None => listpack::push_str(lp, crate::types::number::fmt_g(s, 17).as_bytes()),
            }
        }
        listpack::finish(lp, z.len() * 2);
        self.scratch_string();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_strings() {
        let mut e = Encoder::new(true);
        for n in [0u64, 63, 64, 16383, 16384, u32::MAX as u64, 1 << 40] {
            e.len(n);
        }
        assert_eq!(
            e.buf,
            [
                0, 63, 0x40, 64, 0x7f, 0xff, 0x80, 0, 0, 0x40, 0, 0x80, 0xff, 0xff, 0xff, 0xff,
                0x81, 0, 0, 1, 0, 0, 0, 0, 0
            ]
        );
        let mut e = Encoder::new(true);
        for s in [&b"12"[..], b"-200", b"70000", b"12345678901", b"007", b"x"] {
            e.string(s);
        }
        assert_eq!(
            e.buf,
            [
                0xc0, 12, 0xc1, 0x38, 0xff, 0xc2, 0x70, 0x11, 1, 0, 11, b'1', b'2', b'3', b'4',
                b'5', b'6', b'7', b'8', b'9', b'0', b'1', 3, b'0', b'0', b'7', 1, b'x'
            ]
        );
        assert_eq!(double2ll(-0.0), Some(0));
        assert_eq!(double2ll(1.5), None);
        assert_eq!(double2ll(1e300), None);
    }
}
