//! Bitmap commands (Redis's bitops.c): SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP
//! here, BITFIELD and BITFIELD_RO in `bitfield`. Bitmaps are ordinary string
//! values; bit 0 is the most significant bit of byte 0.

mod bitfield;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::Value;
use crate::error::{CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::number::parse_i64;
use crate::types::string::Str;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("setbit", 4, WRITE | DENYOOM, (1, 1, 1), setbit),
    CommandSpec::new("getbit", 3, READONLY | FAST, (1, 1, 1), getbit),
    CommandSpec::new("bitcount", -2, READONLY, (1, 1, 1), bitcount),
    CommandSpec::new("bitpos", -3, READONLY, (1, 1, 1), bitpos),
    CommandSpec::new("bitop", -4, WRITE | DENYOOM, (2, -1, 1), bitop),
    CommandSpec::new(
        "bitfield",
        -2,
        WRITE | DENYOOM,
        (1, 1, 1),
        bitfield::bitfield,
    ),
    CommandSpec::new(
        "bitfield_ro",
        -2,
        READONLY | FAST,
        (1, 1, 1),
        bitfield::bitfield_ro,
    ),
];

const BAD_OFFSET: &str = "bit offset is not an integer or out of range";

/// A bit offset (Redis's `getBitOffsetFromArgument`): `#n` means n * `bits`
/// when `hash_bits` is given; the byte must stay under proto-max-bulk-len.
pub(crate) fn bit_offset(ctx: &Ctx, a: &[u8], hash_bits: Option<u64>) -> Result<u64, Error> {
    let (mul, digits) = match (a.split_first(), hash_bits) {
        (Some((b'#', rest)), Some(bits)) => (Some(bits), rest),
        _ => (None, a),
    };
    let mut off = parse_i64(digits).ok_or(Error::msg(BAD_OFFSET))?;
    if let Some(bits) = mul {
        off = off.wrapping_mul(bits as i64);
    }
    if off < 0 || (off >> 3) >= ctx.srv.config.proto_max_bulk_len {
        return Err(Error::msg(BAD_OFFSET));
    }
    Ok(off as u64)
}

/// The string at `key`, grown with zero bytes to hold bit `maxbit`, created
/// when missing (Redis's `lookupStringForBitCommand`). The bool says whether
/// the value was created or grown.
pub(crate) fn bits_for_write<'a>(
    ctx: &'a mut Ctx,
    key: &[u8],
    maxbit: u64,
) -> Result<(&'a mut Vec<u8>, bool), Error> {
    let need = (maxbit >> 3) as usize + 1;
    let (s, _) = ctx.db().write_or_create(key, || Str::raw(Vec::new()))?;
    let v = s.make_raw();
    let grown = v.len() < need;
    if grown {
        v.resize(need, 0);
    }
    Ok((v, grown))
}

/// ```text
/// SETBIT key offset value
/// ```
/// Integer: the bit's previous value.
fn setbit(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let off = bit_offset(ctx, args.at(2), None)?;
    const BAD_BIT: &str = "bit is not an integer or out of range";
    let on = match parse_i64(args.at(3)) {
        Some(v) if v & !1 == 0 => v as u8,
        _ => return Err(Error::msg(BAD_BIT)),
    };
    let (v, grown) = bits_for_write(ctx, key, off)?;
    let byte = (off >> 3) as usize;
    let shift = 7 - (off & 7) as u8;
    let old = (v[byte] >> shift) & 1;
    if on == 1 {
        v[byte] |= 1 << shift;
    } else {
        v[byte] &= !(1 << shift);
    }
    ctx.out().int(old as i64);
    if grown || old != on {
        ctx.modified(key, notify::STRING, "setbit");
    }
    Ok(())
}

/// The bytes of a string value for reading (None when missing).
pub(crate) fn read_bytes<'a>(
    ctx: &'a mut Ctx,
    key: &[u8],
) -> Result<Option<std::borrow::Cow<'a, [u8]>>, Error> {
    Ok(ctx.db().read::<Str>(key)?.map(Str::as_bytes))
}

/// ```text
/// GETBIT key offset
/// ```
/// Integer: the bit (0 past the end or for a missing key).
fn getbit(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let off = bit_offset(ctx, args.at(2), None)?;
    let bit = match read_bytes(ctx, args.at(1))? {
        Some(b) => b
            .get((off >> 3) as usize)
            .map_or(0, |byte| (byte >> (7 - (off & 7))) & 1),
        None => 0,
    };
    ctx.out().int(bit as i64);
    Ok(())
}

/// A [start, end] range resolved against a string of `len` bytes, as bit
/// positions (inclusive), or None when empty. Negative indexes count from
/// the end; `bit` selects BIT units instead of BYTE.
fn resolve_range(start: i64, end: i64, len: usize, bit: bool) -> Option<(u64, u64)> {
    let total = if bit { len as i64 * 8 } else { len as i64 };
    let mut s = if start < 0 { total + start } else { start };
    let mut e = if end < 0 { total + end } else { end };
    s = s.max(0);
    e = e.max(0);
    if e >= total {
        e = total - 1;
    }
    if s > e {
        return None;
    }
    if bit {
        Some((s as u64, e as u64))
    } else {
        Some((s as u64 * 8, e as u64 * 8 + 7))
    }
}

/// `BYTE` or `BIT` (true for BIT).
fn unit(a: &[u8]) -> Result<bool, Error> {
    if a.eq_ignore_ascii_case(b"bit") {
        Ok(true)
    } else if a.eq_ignore_ascii_case(b"byte") {
        Ok(false)
    } else {
        Err(Error::Syntax)
    }
}

/// Set bits in the bit range [s, e] of `b`.
fn popcount(b: &[u8], s: u64, e: u64) -> u64 {
    let (sb, eb) = ((s >> 3) as usize, (e >> 3) as usize);
    let mut n: u64 = b[sb..=eb].iter().map(|x| x.count_ones() as u64).sum();
    n -= (b[sb] & !(0xffu8 >> (s & 7))).count_ones() as u64;
    n -= (b[eb] & (0x7fu8 >> (e & 7))).count_ones() as u64;
    n
}

/// ```text
/// BITCOUNT key [start end [BYTE | BIT]]
/// ```
/// Integer: the number of set bits.
fn bitcount(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    // Redis looks the key up before reading the range: a missing key counts
    // 0 whatever follows, and a range of two negatives with start > end
    // counts 0 before the unit word is read.
    let argc = args.len();
    let Some(b) = read_bytes(ctx, args.at(1))? else {
        ctx.out().int(0);
        return Ok(());
    };
    let span = match argc {
        2 if b.is_empty() => None,
        2 => Some((0, b.len() as u64 * 8 - 1)),
        4 | 5 => {
            let s = parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
            let e = parse_i64(args.at(3)).ok_or(Error::NotInteger)?;
            if s < 0 && e < 0 && s > e {
                None
            } else {
                let bit = argc == 5 && unit(args.at(4))?;
                resolve_range(s, e, b.len(), bit)
            }
        }
        _ => return Err(Error::Syntax),
    };
    let n = span.map_or(0, |(s, e)| popcount(&b, s, e));
    ctx.out().int(n as i64);
    Ok(())
}

/// ```text
/// BITPOS key bit [start [end [BYTE | BIT]]]
/// ```
/// Integer: the first position holding `bit`, or -1.
fn bitpos(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let bit = parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    if bit != 0 && bit != 1 {
        return Err(Error::msg("The bit argument must be 1 or 0."));
    }
    let want = bit as u8;
    let argc = args.len();
    let Some(b) = read_bytes(ctx, args.at(1))? else {
        ctx.out().int(if want == 1 { -1 } else { 0 });
        return Ok(());
    };
    let len = b.len();
    let mut end_given = false;
    let span = match argc {
        3 => (len > 0).then(|| (0, len as u64 * 8 - 1)),
        4..=6 => {
            let s = parse_i64(args.at(3)).ok_or(Error::NotInteger)?;
            let isbit = if argc == 6 { unit(args.at(5))? } else { false };
            let e = if argc >= 5 {
                end_given = true;
                parse_i64(args.at(4)).ok_or(Error::NotInteger)?
            } else if isbit {
                len as i64 * 8 + 7
            } else {
                len as i64 - 1
            };
            resolve_range(s, e, len, isbit)
        }
        _ => return Err(Error::Syntax),
    };
    let Some((s, e)) = span else {
        ctx.out().int(-1);
        return Ok(());
    };
    let found = find_bit(&b, s, e, want);
    let pos = match found {
        Some(p) => p as i64,
        None if want == 1 || end_given => -1,
        // Looking for a 0 past the data: the string is zero-padded.
        None => ((e >> 3) + 1) as i64 * 8,
    };
    ctx.out().int(pos);
    Ok(())
}

/// First bit equal to `want` in the bit range [s, e].
fn find_bit(b: &[u8], s: u64, e: u64, want: u8) -> Option<u64> {
    let mut p = s;
    while p <= e {
        let byte = b[(p >> 3) as usize];
        let x = if want == 1 { byte } else { !byte };
        if p & 7 == 0 && e - p >= 7 {
            if x == 0 {
                p += 8;
                continue;
            }
            return Some(p + x.leading_zeros() as u64);
        }
        if (x >> (7 - (p & 7))) & 1 == 1 {
            return Some(p);
        }
        p += 1;
    }
    None
}

/// ```text
/// BITOP AND | OR | XOR | NOT destkey key [key ...]
/// ```
/// Integer: the length of the result (the longest input).
fn bitop(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    #[derive(PartialEq)]
    enum Op {
        And,
        Or,
        Xor,
        Not,
    }
    let name = args.at(1);
    let op = if name.eq_ignore_ascii_case(b"and") {
        Op::And
    } else if name.eq_ignore_ascii_case(b"or") {
        Op::Or
    } else if name.eq_ignore_ascii_case(b"xor") {
        Op::Xor
    } else if name.eq_ignore_ascii_case(b"not") {
        Op::Not
    } else {
        return Err(Error::Syntax);
    };
    if op == Op::Not && args.len() != 4 {
        return Err(Error::msg(
            "BITOP NOT must be called with a single source key.",
        ));
    }
    let dst = args.at(2);
    let mut srcs: Vec<Vec<u8>> = Vec::with_capacity(args.len() - 3);
    for k in args.from(3) {
        srcs.push(
            read_bytes(ctx, k)?
                .map(|b| b.into_owned())
                .unwrap_or_default(),
        );
    }
    let maxlen = srcs.iter().map(Vec::len).max().unwrap_or(0);
    if maxlen == 0 {
        ctx.delete_key(dst);
        ctx.out().int(0);
        return Ok(());
    }
    let byte = |s: &Vec<u8>, j: usize| s.get(j).copied().unwrap_or(0);
    let mut res = vec![0u8; maxlen];
    for (j, r) in res.iter_mut().enumerate() {
        let mut out = byte(&srcs[0], j);
        match op {
            Op::Not => out = !out,
            Op::And => srcs[1..].iter().for_each(|s| out &= byte(s, j)),
            Op::Or => srcs[1..].iter().for_each(|s| out |= byte(s, j)),
            Op::Xor => srcs[1..].iter().for_each(|s| out ^= byte(s, j)),
        }
        *r = out;
    }
    ctx.db().set(dst, Value::Str(Str::raw(res)));
    ctx.modified(dst, notify::STRING, "set");
    ctx.out().int(maxlen as i64);
    Ok(())
}
