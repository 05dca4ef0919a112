//! LZF for RDB strings: Redis's exact compressor (so DUMP bytes match), the `lzf` crate to decompress.
//!
//! Why a compressor here and not the `lzf` crate's: the crate refuses matches
//! that start in the last four input bytes, caps its output at the input
//! length instead of Redis's `len - 4`, stops matches short where liblzf's
//! unrolled loop does not, and allocates a 512 KiB table per call. Each of
//! these changes the bytes (or the choice to compress at all), so a DUMP or
//! an RDB would differ from what Redis writes for the same value. This is
//! liblzf 3.6 as Redis builds it (`HLOG 16`, `VERY_FAST`, no `ULTRA_FAST`),
//! with the hash table starting empty on every call (Redis leaves stale
//! entries from earlier calls in it, which can only add matches in rare
//! repetitive inputs).
//!
//! Invariant of the table: a slot holds `(generation << 32) | position`, and
//! only slots of the current call's generation count, so no clearing is
//! needed between calls; position 0 is never a match source (liblzf stores
//! pointers and rejects `ref == in_data`).

use std::cell::RefCell;

const HLOG: u32 = 16;
const HSIZE: usize = 1 << HLOG;
const MAX_LIT: usize = 1 << 5;
const MAX_OFF: usize = 1 << 13;
const MAX_REF: usize = (1 << 8) + (1 << 3);

struct Table {
    slots: Vec<u64>,
    generation: u64,
}

thread_local! {
    static TABLE: RefCell<Table> = const { RefCell::new(Table { slots: Vec::new(), generation: 0 }) };
}

#[inline]
fn frst(p: &[u8], i: usize) -> u32 {
    (p[i] as u32) << 8 | p[i + 1] as u32
}

#[inline]
fn next(v: u32, p: &[u8], i: usize) -> u32 {
    (v << 8) | p[i + 2] as u32
}

#[inline]
fn idx(h: u32) -> usize {
    ((h >> (3 * 8 - HLOG)).wrapping_sub(h.wrapping_mul(5)) as usize) & (HSIZE - 1)
}

/// Compresses `input` into `out` (cleared first) as Redis's
/// `rdbSaveLzfStringObject` does: the result must fit in `len - 4` bytes,
/// else `false` (the caller then writes the string verbatim).
pub fn compress(input: &[u8], out: &mut Vec<u8>) -> bool {
    if input.len() <= 4 {
        return false;
    }
    TABLE.with(|t| {
        let mut t = t.borrow_mut();
        if t.slots.is_empty() {
            t.slots = vec![0; HSIZE];
        }
        t.generation += 1;
        let gen = t.generation;
        compress_with(&mut t.slots, gen, input, input.len() - 4, out)
    })
}

fn compress_with(
    htab: &mut [u64],
    gen: u64,
    data: &[u8],
    out_len: usize,
    out: &mut Vec<u8>,
) -> bool {
    let in_len = data.len();
    out.clear();
    // Slack past `out_len` so that the writes liblzf makes before its
    // bound checks land inside the buffer; the checks decide the result.
    out.resize(out_len + 8, 0);
    let o = &mut out[..];
    let tag = gen << 32;
    let mut ip = 0usize;
    let mut op = 1usize; // start run
    let mut lit = 0usize;
    let mut hval = frst(data, ip);
    while ip < in_len - 2 {
        hval = next(hval, data, ip);
        let slot = &mut htab[idx(hval)];
        let prev = *slot;
        *slot = tag | ip as u64;
        let r = if prev >> 32 == gen {
            (prev & 0xffff_ffff) as usize
        } else {
            0
        };
        let off = ip.wrapping_sub(r).wrapping_sub(1);
        if r > 0
            && off < MAX_OFF
            && data[r + 2] == data[ip + 2]
            && data[r] == data[ip]
            && data[r + 1] == data[ip + 1]
        {
            let mut len = 2usize;
            let maxlen = (in_len - ip - len).min(MAX_REF);
            if op + 3 + 1 >= out_len && op - (lit == 0) as usize + 3 + 1 >= out_len {
                return false;
            }
            o[op - lit - 1] = (lit as u8).wrapping_sub(1); // stop run
            op -= (lit == 0) as usize; // undo run if length is zero
            'scan: {
                if maxlen > 16 {
                    for _ in 0..16 {
                        len += 1;
                        if data[r + len] != data[ip + len] {
                            break 'scan;
                        }
                    }
                }
                loop {
                    len += 1;
                    if !(len < maxlen && data[r + len] == data[ip + len]) {
                        break;
                    }
                }
            }
            len -= 2; // len is now #octets - 1
            ip += 1;
            if len < 7 {
                o[op] = ((off >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                o[op] = ((off >> 8) + (7 << 5)) as u8;
                o[op + 1] = (len - 7) as u8;
                op += 2;
            }
            o[op] = off as u8;
            op += 1;
            lit = 0;
            op += 1; // start run
            ip += len + 1;
            if ip >= in_len - 2 {
                break;
            }
            ip -= 2;
            hval = frst(data, ip);
            hval = next(hval, data, ip);
            htab[idx(hval)] = tag | ip as u64;
            ip += 1;
            hval = next(hval, data, ip);
            htab[idx(hval)] = tag | ip as u64;
            ip += 1;
        } else {
            // One more literal byte to copy.
            if op >= out_len {
                return false;
            }
            lit += 1;
            o[op] = data[ip];
            op += 1;
            ip += 1;
            if lit == MAX_LIT {
                o[op - lit - 1] = (lit - 1) as u8; // stop run
                lit = 0;
                op += 1; // start run
            }
        }
    }
    if op + 3 > out_len {
        return false; // at most 3 bytes can be missing here
    }
    while ip < in_len {
        lit += 1;
        o[op] = data[ip];
        op += 1;
        ip += 1;
        if lit == MAX_LIT {
            o[op - lit - 1] = (lit - 1) as u8;
            lit = 0;
            op += 1;
        }
    }
    o[op - lit - 1] = (lit as u8).wrapping_sub(1); // end run
    op -= (lit == 0) as usize;
    out.truncate(op);
    true
}

/// Decompresses an RDB LZF string of declared length `ulen`; `None` when the
/// data is corrupt or does not expand to exactly `ulen` bytes.
pub fn decompress(input: &[u8], ulen: usize) -> Option<Vec<u8>> {
    // A back reference expands 3 bytes into at most 264: a larger declared
    // length is corrupt, and is refused before allocating it.
    if input.is_empty() || ulen > input.len().saturating_mul(88) {
        return None;
    }
    let v = lzf::decompress(input, ulen).ok()?;
    (v.len() == ulen).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(s: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        if !compress(s, &mut out) {
            return None;
        }
        assert!(out.len() <= s.len() - 4);
        assert_eq!(decompress(&out, s.len()).as_deref(), Some(s));
        Some(out)
    }

    #[test]
    fn compresses_and_round_trips() {
        // Bytes from a real redis-server 7.0.15 (`DUMP` of these values).
        let a = vec![b'a'; 100];
        assert_eq!(
            roundtrip(&a).unwrap(),
            [1, b'a', b'a', 0xe0, 0x57, 0, 1, b'a', b'a']
        );
        let mut hw = vec![0x0c];
        hw.extend_from_slice(b"hello world h");
        hw.extend_from_slice(&[0xe0, 0x05, 0x0b, 0x01, b'l', b'o']);
        assert_eq!(roundtrip(b"hello world hello world hello").unwrap(), hw);
        let mut x: u64 = 7;
        for n in [21usize, 50, 300, 5000, 70000] {
            let s: Vec<u8> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    b"abcab"[(x % 5) as usize]
                })
                .collect();
            roundtrip(&s);
        }
        // Random bytes do not compress.
        let noise: Vec<u8> = (0..200)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert!(roundtrip(&noise).is_none());
    }

    #[test]
    fn decompress_refuses_bad_input() {
        assert!(decompress(&[0, b'a'], 2).is_none());
        assert!(decompress(&[0xe0, 0x59, 0], 100).is_none());
        assert!(decompress(&[1, b'a'], 1_000_000).is_none());
    }
}
