//! Redis's listpack byte format (listpack.c): a writer that picks Redis's entry encodings, a checked reader.
//!
//! Layout: total bytes (u32 LE), entry count (u16 LE, 65535 = "count them"),
//! entries, and a 0xFF terminator. An entry is its encoding (a 7-bit uint,
//! 13/16/24/32/64-bit int, or a 6/12/32-bit length string), its data, and a
//! backwards-readable length of the two (1 to 5 bytes). A string that
//! `lpStringToInt64` accepts is stored as an integer, as Redis's `lpAppend`
//! does, so the bytes equal Redis's for the same elements.

use crate::types::number::parse_i64;

pub const HEADER: usize = 6;
const EOF: u8 = 0xFF;

/// A listpack that does not hold together (bad header, entry or terminator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// One decoded element: listpacks and ziplists store integers natively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl<'a> Elem<'a> {
    /// The element's bytes (an integer is formatted into `tmp`).
    #[inline]
    pub fn bytes<'b>(&'b self, tmp: &'b mut itoa::Buffer) -> &'b [u8]
    where
        'a: 'b,
    {
        match *self {
            Elem::Int(v) => tmp.format(v).as_bytes(),
            Elem::Str(s) => s,
        }
    }

    pub fn byte_len(&self) -> usize {
        match *self {
            Elem::Int(v) => itoa::Buffer::new().format(v).len(),
            Elem::Str(s) => s.len(),
        }
    }
}

/// Bytes of the backlen for an entry of `l` bytes (`lpEncodeBacklen`).
#[inline]
fn backlen_size(l: usize) -> usize {
    if l <= 127 {
        1
    } else if l < 16383 {
        2
    } else if l < 2097151 {
        3
    } else if l < 268435455 {
        4
    } else {
        5
    }
}

#[inline]
fn put_backlen(out: &mut Vec<u8>, l: usize) {
    let n = backlen_size(l);
    // Most significant group first; every byte but the first has bit 7 set.
    for i in (0..n).rev() {
        let b = ((l >> (7 * i)) & 127) as u8;
        out.push(if i == n - 1 { b } else { b | 128 });
    }
}

/// Starts a listpack in `out` (cleared).
pub fn begin(out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&[0; HEADER]);
}

/// Appends an integer entry.
pub fn push_int(out: &mut Vec<u8>, v: i64) {
    let start = out.len();
    if (0..=127).contains(&v) {
        out.push(v as u8);
    } else if (-4096..=4095).contains(&v) {
        let u = (v as u64) & 0x1fff;
        out.extend_from_slice(&[(u >> 8) as u8 | 0xC0, u as u8]);
    } else if (-32768..=32767).contains(&v) {
        out.push(0xF1);
        out.extend_from_slice(&(v as i16).to_le_bytes());
    } else if (-8388608..=8388607).contains(&v) {
        out.push(0xF2);
        out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
    } else if (-2147483648..=2147483647).contains(&v) {
        out.push(0xF3);
        out.extend_from_slice(&(v as i32).to_le_bytes());
    } else {
        out.push(0xF4);
        out.extend_from_slice(&v.to_le_bytes());
    }
    let l = out.len() - start;
    put_backlen(out, l);
}

/// Appends an element as Redis's `lpAppend` stores it.
pub fn push(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() < 21 {
        if let Some(v) = parse_i64(s) {
            return push_int(out, v);
        }
    }
    push_str(out, s);
}

/// Appends a string entry without trying the integer encoding.
pub fn push_str(out: &mut Vec<u8>, s: &[u8]) {
    let start = out.len();
    let n = s.len();
    if n < 64 {
        out.push(n as u8 | 0x80);
    } else if n < 4096 {
        out.extend_from_slice(&[(n >> 8) as u8 | 0xE0, n as u8]);
    } else {
        out.push(0xF0);
        out.extend_from_slice(&(n as u32).to_le_bytes());
    }
    out.extend_from_slice(s);
    let l = out.len() - start;
    put_backlen(out, l);
}

/// Finishes a listpack of `count` entries begun with [`begin`].
pub fn finish(out: &mut Vec<u8>, count: usize) {
    out.push(EOF);
    let total = out.len() as u32;
    out[0..4].copy_from_slice(&total.to_le_bytes());
    let n = count.min(65535) as u16;
    out[4..6].copy_from_slice(&n.to_le_bytes());
}

/// The entries of a listpack, checked as they are read: each entry lies
/// inside the buffer and its backlen matches. Yields `Err(Malformed)` once on a
/// malformed entry.
pub struct Iter<'a> {
    lp: &'a [u8],
    pos: usize,
    /// The count in the header (65535: unknown).
    pub declared: usize,
    seen: usize,
    done: bool,
}

/// Opens a listpack: checks the header's total size and the terminator.
pub fn iter(lp: &[u8]) -> Result<Iter<'_>, Malformed> {
    if lp.len() < HEADER + 1 {
        return Err(Malformed);
    }
    let total = u32::from_le_bytes([lp[0], lp[1], lp[2], lp[3]]) as usize;
    if total != lp.len() || lp[lp.len() - 1] != EOF {
        return Err(Malformed);
    }
    Ok(Iter {
        lp,
        pos: HEADER,
        declared: u16::from_le_bytes([lp[4], lp[5]]) as usize,
        seen: 0,
        done: false,
    })
}

/// The element whose encoding starts at `p` and the length of that
/// encoding (the backlen that follows it is not read).
#[inline]
fn decode(lp: &[u8], p: usize) -> Option<(Elem<'_>, usize)> {
    let b = *lp.get(p)?;
    let get = |from: usize, n: usize| lp.get(from..from.checked_add(n)?);
    Some(if b & 0x80 == 0 {
        (Elem::Int((b & 0x7f) as i64), 1)
    } else if b & 0xC0 == 0x80 {
        let n = (b & 0x3f) as usize;
        (Elem::Str(get(p + 1, n)?), 1 + n)
    } else if b & 0xE0 == 0xC0 {
        let u = (((b & 0x1f) as i64) << 8) | *lp.get(p + 1)? as i64;
        (Elem::Int(if u >= 1 << 12 { u - (1 << 13) } else { u }), 2)
    } else if b & 0xF0 == 0xE0 {
        let n = (((b & 0x0f) as usize) << 8) | *lp.get(p + 1)? as usize;
        (Elem::Str(get(p + 2, n)?), 2 + n)
    } else {
        match b {
            0xF1 => {
                let d = get(p + 1, 2)?;
                (Elem::Int(i16::from_le_bytes([d[0], d[1]]) as i64), 3)
            }
            0xF2 => {
                let d = get(p + 1, 3)?;
                let u = i32::from_le_bytes([d[0], d[1], d[2], 0]);
                (Elem::Int(((u << 8) >> 8) as i64), 4)
            }
            0xF3 => {
                let d = get(p + 1, 4)?;
                (Elem::Int(i32::from_le_bytes(d.try_into().ok()?) as i64), 5)
            }
            0xF4 => {
                let d = get(p + 1, 8)?;
                (Elem::Int(i64::from_le_bytes(d.try_into().ok()?)), 9)
            }
            0xF0 => {
                let d = get(p + 1, 4)?;
                let n = u32::from_le_bytes(d.try_into().ok()?) as usize;
                (Elem::Str(get(p + 5, n)?), 5 + n)
            }
            _ => return None,
        }
    })
}

impl<'a> Iter<'a> {
    fn entry(&mut self) -> Option<Elem<'a>> {
        let lp = self.lp;
        let p = self.pos;
        let (elem, enclen) = decode(lp, p)?;
        let bl = backlen_size(enclen);
        let end = p.checked_add(enclen)?.checked_add(bl)?;
        // The terminator must still follow.
        if end >= lp.len() {
            return None;
        }
        let mut v = 0usize;
        for (i, &c) in lp[p + enclen..end].iter().rev().enumerate() {
            v |= ((c & 127) as usize) << (7 * i);
        }
        if v != enclen {
            return None;
        }
        self.pos = end;
        Some(elem)
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = Result<Elem<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.lp[self.pos] == EOF {
            self.done = true;
            let ok = self.pos == self.lp.len() - 1
                && (self.declared == 65535 || self.declared == self.seen);
            return if ok { None } else { Some(Err(Malformed)) };
        }
        match self.entry() {
            Some(e) => {
                self.seen += 1;
                Some(Ok(e))
            }
            None => {
                self.done = true;
                Some(Err(Malformed))
            }
        }
    }
}

/// The element at byte offset `pos` and the offset of the next one; None at
/// the terminator or past the end. Backlens are not checked: this reads
/// listpacks already validated whole (stream nodes), on their hot path.
#[inline]
pub fn elem_at(lp: &[u8], pos: usize) -> Option<(Elem<'_>, usize)> {
    if *lp.get(pos)? == EOF {
        return None;
    }
    let (e, enclen) = decode(lp, pos)?;
    let end = pos + enclen + backlen_size(enclen);
    (end < lp.len()).then_some((e, end))
}

/// Where the element that ends just before `pos` starts (walking back by
/// its backlen), or None at the first element. Reads listpacks already
/// validated whole, as [`elem_at`].
#[inline]
pub fn prev_start(lp: &[u8], pos: usize) -> Option<usize> {
    if pos <= HEADER {
        return None;
    }
    // The backlen's last byte holds the low 7 bits; a set high bit means
    // more bytes before it.
    let (mut enclen, mut shift, mut p) = (0usize, 0, pos);
    loop {
        p = p.checked_sub(1)?;
        let b = *lp.get(p)?;
        enclen |= ((b & 127) as usize) << shift;
        if b & 128 == 0 || shift >= 28 {
            break;
        }
        shift += 7;
    }
    pos.checked_sub(backlen_size(enclen) + enclen)
        .filter(|&s| s >= HEADER)
}

/// Every element of a listpack, or `Err` when it is malformed.
pub fn collect(lp: &[u8]) -> Result<Vec<Elem<'_>>, Malformed> {
    let it = iter(lp)?;
    let mut v = Vec::with_capacity(it.declared.min(4096));
    for e in it {
        v.push(e?);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_round_trip() {
        let items: Vec<Vec<u8>> = [
            "0",
            "127",
            "128",
            "-1",
            "-4096",
            "4095",
            "4096",
            "-32768",
            "32767",
            "40000",
            "-8388608",
            "8388607",
            "8388608",
            "2147483647",
            "-2147483648",
            "2147483648",
            "9223372036854775807",
            "-9223372036854775808",
            "01",
            "-0",
            "+1",
            "",
            "a",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .chain([
            vec![b'x'; 63],
            vec![b'y'; 64],
            vec![b'z'; 4095],
            vec![b'w'; 4096],
            vec![b'v'; 70000],
        ])
        .collect();
        let mut lp = Vec::new();
        begin(&mut lp);
        for it in &items {
            push(&mut lp, it);
        }
        finish(&mut lp, items.len());
        let got = collect(&lp).unwrap();
        assert_eq!(got.len(), items.len());
        let mut tmp = itoa::Buffer::new();
        for (g, want) in got.iter().zip(&items) {
            assert_eq!(g.bytes(&mut tmp), &want[..]);
        }
        assert_eq!(got[0], Elem::Int(0));
        assert_eq!(got[18], Elem::Str(b"01"));
        // A flipped backlen or a short buffer is refused.
        let mut bad = lp.clone();
        bad[HEADER + 1] ^= 1;
        assert!(collect(&bad).is_err());
        assert!(collect(&lp[..lp.len() - 1]).is_err());
    }

    /// `HSET h a 1 bb hello` in a real Redis 7.0.15: the listpack inside its DUMP.
    #[test]
    fn matches_redis_bytes() {
        let mut lp = Vec::new();
        begin(&mut lp);
        for s in [&b"a"[..], b"1", b"bb", b"hello"] {
            push(&mut lp, s);
        }
        finish(&mut lp, 4);
        let want = [
            0x17, 0, 0, 0, 4, 0, 0x81, b'a', 2, 1, 1, 0x82, b'b', b'b', 3, 0x85, b'h', b'e', b'l',
            b'l', b'o', 6, 0xff,
        ];
        assert_eq!(lp, want);
    }
}
