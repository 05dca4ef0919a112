//! Readers for the encodings Redis stopped writing: ziplist (before 7.0) and zipmap (before 2.6).
//!
//! Ziplist: total bytes (u32 LE), tail offset (u32 LE), count (u16 LE,
//! 65535 = unknown), entries, 0xFF. An entry is the previous entry's size
//! (1 byte, or 0xFE + u32 LE), an encoding (strings: 6-bit length, 14-bit
//! big-endian length, or 0x80 + u32 big-endian length; integers: 0xC0 i16,
//! 0xD0 i32, 0xE0 i64, 0xF0 i24, 0xFE i8, 0xF1..=0xFD an immediate 0..=12),
//! then the data. Zipmap: a count byte, then pairs of `<len>key<len><free>
//! value<free bytes>` where `<len>` is one byte below 254 or 254 + u32 LE,
//! then 0xFF.

use super::listpack::Elem;

/// Every element of a ziplist, or `None` when it is malformed (entries
/// outside the buffer, a wrong `prevlen`, total size, tail offset or count).
pub fn read(zl: &[u8]) -> Option<Vec<Elem<'_>>> {
    if zl.len() < 11 || *zl.last()? != 0xFF {
        return None;
    }
    let total = u32::from_le_bytes(zl[0..4].try_into().ok()?) as usize;
    let tail = u32::from_le_bytes(zl[4..8].try_into().ok()?) as usize;
    let declared = u16::from_le_bytes([zl[8], zl[9]]) as usize;
    if total != zl.len() {
        return None;
    }
    let end = zl.len() - 1;
    let mut out = Vec::with_capacity(declared.min(4096));
    let mut p = 10;
    let mut prev_size = 0usize;
    // Where the last entry starts: the header's tail offset must say so
    // (just past the header when empty), as Redis's deep check requires.
    let mut last = 10;
    let get = |from: usize, n: usize| {
        zl.get(from..from.checked_add(n)?)
            .filter(|_| from + n <= end)
    };
    while p < end {
        let start = p;
        last = start;
        let prevlen = if zl[p] < 254 {
            p += 1;
            zl[start] as usize
        } else {
            let d = get(p + 1, 4)?;
            p += 5;
            u32::from_le_bytes(d.try_into().ok()?) as usize
        };
        if prevlen != prev_size {
            return None;
        }
        let b = *get(p, 1)?.first()?;
        let elem = match b >> 6 {
            0 => {
                let n = (b & 0x3f) as usize;
                p += 1;
                let s = get(p, n)?;
                p += n;
                Elem::Str(s)
            }
            1 => {
                let n = (((b & 0x3f) as usize) << 8) | *get(p + 1, 1)?.first()? as usize;
                p += 2;
                let s = get(p, n)?;
                p += n;
                Elem::Str(s)
            }
            2 => {
                let n = u32::from_be_bytes(get(p + 1, 4)?.try_into().ok()?) as usize;
                p += 5;
                let s = get(p, n)?;
                p += n;
                Elem::Str(s)
            }
            _ => {
                p += 1;
                let (v, n) = match b {
                    0xC0 => (i16::from_le_bytes(get(p, 2)?.try_into().ok()?) as i64, 2),
                    0xD0 => (i32::from_le_bytes(get(p, 4)?.try_into().ok()?) as i64, 4),
                    0xE0 => (i64::from_le_bytes(get(p, 8)?.try_into().ok()?), 8),
                    0xF0 => {
                        let d = get(p, 3)?;
                        ((i32::from_le_bytes([0, d[0], d[1], d[2]]) >> 8) as i64, 3)
                    }
                    0xFE => (get(p, 1)?[0] as i8 as i64, 1),
                    0xF1..=0xFD => ((b & 0x0f) as i64 - 1, 0),
                    _ => return None,
                };
                p += n;
                Elem::Int(v)
            }
        };
        prev_size = p - start;
        out.push(elem);
    }
    if tail != last || (declared != 65535 && declared != out.len()) {
        return None;
    }
    Some(out)
}

/// The field/value pairs of a zipmap, or `None` when it is malformed.
pub fn read_zipmap(zm: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let mut p = 1;
    let mut out = Vec::new();
    let len = |p: &mut usize| -> Option<usize> {
        let b = *zm.get(*p)?;
        if b < 254 {
            *p += 1;
            Some(b as usize)
        } else if b == 254 {
            let d = zm.get(*p + 1..*p + 5)?;
            *p += 5;
            Some(u32::from_le_bytes(d.try_into().ok()?) as usize)
        } else {
            None
        }
    };
    loop {
        if *zm.get(p)? == 0xFF {
            break;
        }
        let kl = len(&mut p)?;
        let k = zm.get(p..p.checked_add(kl)?)?;
        p += kl;
        let vl = len(&mut p)?;
        let free = *zm.get(p)? as usize;
        p += 1;
        let v = zm.get(p..p.checked_add(vl)?)?;
        p += vl + free;
        out.push((k, v));
    }
    // The terminator is the last byte.
    if p + 1 != zm.len() {
        return None;
    }
    Some(out)
}

/// Builders of the old layouts, for tests (Redis 7.0 cannot write them).
#[cfg(test)]
pub mod build {
    /// A ziplist as Redis's `ziplistPush` lays it out (integers encoded as
    /// `zipTryEncoding` does for strings of at most 32 bytes).
    pub fn ziplist(items: &[&[u8]]) -> Vec<u8> {
        let mut body = Vec::new();
        let mut prev = 0usize;
        let mut tail = 10;
        for it in items {
            let start = body.len();
            tail = 10 + start;
            if prev < 254 {
                body.push(prev as u8);
            } else {
                body.push(0xFE);
                body.extend_from_slice(&(prev as u32).to_le_bytes());
            }
            match crate::types::number::parse_i64(it).filter(|_| it.len() <= 32) {
                Some(v) if (0..=12).contains(&v) => body.push(0xF1 + v as u8),
                Some(v) if i8::try_from(v).is_ok() => body.extend_from_slice(&[0xFE, v as u8]),
                Some(v) if i16::try_from(v).is_ok() => {
                    body.push(0xC0);
                    body.extend_from_slice(&(v as i16).to_le_bytes());
                }
                Some(v) if (-(1 << 23)..(1 << 23)).contains(&v) => {
                    body.push(0xF0);
                    body.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
                }
                Some(v) if i32::try_from(v).is_ok() => {
                    body.push(0xD0);
                    body.extend_from_slice(&(v as i32).to_le_bytes());
                }
                Some(v) => {
                    body.push(0xE0);
                    body.extend_from_slice(&v.to_le_bytes());
                }
                None => {
                    let n = it.len();
                    if n < 64 {
                        body.push(n as u8);
                    } else if n < 16384 {
                        body.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
                    } else {
                        body.push(0x80);
                        body.extend_from_slice(&(n as u32).to_be_bytes());
                    }
                    body.extend_from_slice(it);
                }
            }
            prev = body.len() - start;
        }
        let mut zl = Vec::new();
        zl.extend_from_slice(&((body.len() + 11) as u32).to_le_bytes());
        zl.extend_from_slice(&(tail as u32).to_le_bytes());
        zl.extend_from_slice(&(items.len().min(65535) as u16).to_le_bytes());
        zl.extend_from_slice(&body);
        zl.push(0xFF);
        zl
    }

    /// A zipmap with `free` spare bytes after each value.
    pub fn zipmap(pairs: &[(&[u8], &[u8])], free: u8) -> Vec<u8> {
        let mut zm = vec![pairs.len().min(254) as u8];
        let len = |zm: &mut Vec<u8>, n: usize| {
            if n < 254 {
                zm.push(n as u8);
            } else {
                zm.push(254);
                zm.extend_from_slice(&(n as u32).to_le_bytes());
            }
        };
        for (k, v) in pairs {
            len(&mut zm, k.len());
            zm.extend_from_slice(k);
            len(&mut zm, v.len());
            zm.push(free);
            zm.extend_from_slice(v);
            zm.extend(std::iter::repeat_n(0u8, free as usize));
        }
        zm.push(0xFF);
        zm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ziplist_every_encoding() {
        let big = vec![b'q'; 300];
        let huge = vec![b'h'; 20000];
        let items: Vec<&[u8]> = vec![
            b"0",
            b"12",
            b"13",
            b"-1",
            b"127",
            b"-128",
            b"300",
            b"-30000",
            b"8000000",
            b"-8000000",
            b"2000000000",
            b"9000000000",
            b"abc",
            &big,
            &huge,
            b"",
            b"007",
        ];
        let zl = build::ziplist(&items);
        let got = read(&zl).unwrap();
        let mut tmp = itoa::Buffer::new();
        let got: Vec<Vec<u8>> = got.iter().map(|e| e.bytes(&mut tmp).to_vec()).collect();
        let want: Vec<Vec<u8>> = items.iter().map(|s| s.to_vec()).collect();
        assert_eq!(got, want);
        // The entry after the 20000-byte string has a 5-byte prevlen.
        let mut bad = zl.clone();
        bad[10 + 1] ^= 0x7f;
        assert!(read(&bad).is_none());
        assert!(read(&zl[..zl.len() - 2]).is_none());
        // The tail offset must point at the last entry.
        let mut bad = zl.clone();
        bad[4] ^= 1;
        assert!(read(&bad).is_none());
        assert_eq!(read(&build::ziplist(&[])).map(|v| v.len()), Some(0));
    }

    #[test]
    fn zipmap_pairs_and_free_bytes() {
        let long = vec![b'v'; 300];
        let zm = build::zipmap(&[(b"f", b"v"), (b"k2", &long)], 3);
        let got = read_zipmap(&zm).unwrap();
        assert_eq!(got, vec![(&b"f"[..], &b"v"[..]), (b"k2", &long[..])]);
        assert!(read_zipmap(&zm[..zm.len() - 1]).is_none());
    }
}
