//! BITFIELD and BITFIELD_RO: typed integer fields at bit offsets, with
//! Redis's overflow rules (WRAP, SAT, FAIL).

use super::{bit_offset, bits_for_write, read_bytes};
use crate::command::Args;
use crate::error::{CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::number::parse_i64;

#[derive(Clone, Copy, PartialEq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

enum FieldOp {
    Get,
    Set(i64),
    Incr(i64),
}

struct Field {
    op: FieldOp,
    signed: bool,
    bits: u32,
    offset: u64,
    overflow: Overflow,
}

/// `i1`..`i64` or `u1`..`u63`.
fn field_type(a: &[u8]) -> Result<(bool, u32), Error> {
    let err = || {
        Error::msg("Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
    };
    let signed = match a.first() {
        Some(b'i' | b'I') => true,
        Some(b'u' | b'U') => false,
        _ => return Err(err()),
    };
    match parse_i64(&a[1..]) {
        Some(n) if n >= 1 && (n <= 63 || (signed && n == 64)) => Ok((signed, n as u32)),
        _ => Err(err()),
    }
}

fn get_bits(b: &[u8], offset: u64, bits: u32) -> u64 {
    let mut v = 0u64;
    for i in 0..bits as u64 {
        let o = offset + i;
        let byte = b.get((o >> 3) as usize).copied().unwrap_or(0);
        v = (v << 1) | ((byte >> (7 - (o & 7))) & 1) as u64;
    }
    v
}

fn set_bits(b: &mut [u8], offset: u64, bits: u32, v: u64) {
    for i in 0..bits as u64 {
        let o = offset + i;
        let bit = (v >> (bits as u64 - 1 - i)) & 1;
        let byte = &mut b[(o >> 3) as usize];
        let mask = 1u8 << (7 - (o & 7));
        if bit == 1 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

fn get_signed(b: &[u8], offset: u64, bits: u32) -> i64 {
    let u = get_bits(b, offset, bits);
    if bits < 64 && u & (1 << (bits - 1)) != 0 {
        (u | (u64::MAX << bits)) as i64
    } else {
        u as i64
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: Some(value to store) when it
/// overflows (None as the value for FAIL), plus whether it overflowed.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> (bool, u64) {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = (value as i64).wrapping_neg();
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX.checked_shl(bits).unwrap_or(0));
    if value > max || (incr > 0 && incr > maxincr) {
        match ow {
            Overflow::Wrap => (true, wrap()),
            Overflow::Sat => (true, max),
            Overflow::Fail => (true, 0),
        }
    } else if incr < 0 && incr < minincr {
        match ow {
            Overflow::Wrap => (true, wrap()),
            _ => (true, 0),
        }
    } else {
        (false, 0)
    }
}

/// Redis's `checkSignedBitfieldOverflow`.
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> (bool, i64) {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1u64 << (bits - 1)) != 0 {
                c |= mask;
            } else {
                c &= !mask;
            }
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        match ow {
            Overflow::Wrap => (true, wrap()),
            Overflow::Sat => (true, max),
            Overflow::Fail => (true, 0),
        }
    } else if value < min
        || (bits != 64 && incr < minincr)
        || (value < 0 && incr < 0 && incr < minincr)
    {
        match ow {
            Overflow::Wrap => (true, wrap()),
            Overflow::Sat => (true, min),
            Overflow::Fail => (true, 0),
        }
    } else {
        (false, 0)
    }
}

/// ```text
/// BITFIELD key [GET type offset | [OVERFLOW WRAP | SAT | FAIL]
///     SET type offset value | INCRBY type offset increment ...]
/// ```
/// Array: one integer (or null when OVERFLOW FAIL stopped it) per GET/SET/INCRBY.
pub(super) fn bitfield(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    bitfield_generic(ctx, args, false)
}

/// ```text
/// BITFIELD_RO key [GET type offset ...]
/// ```
/// Array of integers.
pub(super) fn bitfield_ro(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    bitfield_generic(ctx, args, true)
}

fn bitfield_generic(ctx: &mut Ctx, args: &mut Args, readonly: bool) -> CmdResult {
    let key = args.at(1);
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut writes = false;
    let mut highest = 0u64;
    let mut j = 2;
    while j < args.len() {
        let rem = args.len() - j - 1;
        let sub = args.at(j);
        let kind = if sub.eq_ignore_ascii_case(b"get") && rem >= 2 {
            0
        } else if sub.eq_ignore_ascii_case(b"set") && rem >= 3 {
            1
        } else if sub.eq_ignore_ascii_case(b"incrby") && rem >= 3 {
            2
        } else if sub.eq_ignore_ascii_case(b"overflow") && rem >= 1 {
            let t = args.at(j + 1);
            overflow = if t.eq_ignore_ascii_case(b"wrap") {
                Overflow::Wrap
            } else if t.eq_ignore_ascii_case(b"sat") {
                Overflow::Sat
            } else if t.eq_ignore_ascii_case(b"fail") {
                Overflow::Fail
            } else {
                return Err(Error::msg("Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(Error::Syntax);
        };
        let (signed, bits) = field_type(args.at(j + 1))?;
        let offset = bit_offset(ctx, args.at(j + 2), Some(bits as u64))?;
        let op = match kind {
            0 => FieldOp::Get,
            _ => {
                writes = true;
                let v = parse_i64(args.at(j + 3)).ok_or(Error::NotInteger)?;
                highest = highest.max(offset + bits as u64 - 1);
                if kind == 1 {
                    FieldOp::Set(v)
                } else {
                    FieldOp::Incr(v)
                }
            }
        };
        ops.push(Field {
            op,
            signed,
            bits,
            offset,
            overflow,
        });
        j += if kind == 0 { 3 } else { 4 };
    }
    if readonly && writes {
        return Err(Error::msg("BITFIELD_RO only supports the GET subcommand"));
    }
    if !writes {
        let b = read_bytes(ctx, key)?
            .map(|b| b.into_owned())
            .unwrap_or_default();
        let out = ctx.out();
        out.array(ops.len());
        for f in &ops {
            if f.signed {
                out.int(get_signed(&b, f.offset, f.bits));
            } else {
                out.int(get_bits(&b, f.offset, f.bits) as i64);
            }
        }
        return Ok(());
    }
    let (v, grown) = bits_for_write(ctx, key, highest)?;
    let mut replies: Vec<Option<i64>> = Vec::with_capacity(ops.len());
    let mut changes = 0;
    for f in &ops {
        let (off, bits) = (f.offset, f.bits);
        if f.signed {
            let old = get_signed(v, off, bits);
            let (of, wrapped, new, ret) = match f.op {
                FieldOp::Get => {
                    replies.push(Some(old));
                    continue;
                }
                FieldOp::Incr(i) => {
                    let (of, w) = signed_overflow(old, i, bits, f.overflow);
                    let new = if of { w } else { old.wrapping_add(i) };
                    (of, w, new, new)
                }
                FieldOp::Set(x) => {
                    let (of, w) = signed_overflow(x, 0, bits, f.overflow);
                    (of, w, if of { w } else { x }, old)
                }
            };
            let _ = wrapped;
            if of && f.overflow == Overflow::Fail {
                replies.push(None);
            } else {
                replies.push(Some(ret));
                set_bits(v, off, bits, new as u64);
                if grown || old != new {
                    changes += 1;
                }
            }
        } else {
            let old = get_bits(v, off, bits);
            let (of, new, ret) = match f.op {
                FieldOp::Get => {
                    replies.push(Some(old as i64));
                    continue;
                }
                FieldOp::Incr(i) => {
                    let (of, w) = unsigned_overflow(old, i, bits, f.overflow);
                    let new = if of { w } else { old.wrapping_add(i as u64) };
                    (of, new, new)
                }
                FieldOp::Set(x) => {
                    let (of, w) = unsigned_overflow(x as u64, 0, bits, f.overflow);
                    (of, if of { w } else { x as u64 }, old)
                }
            };
            if of && f.overflow == Overflow::Fail {
                replies.push(None);
            } else {
                replies.push(Some(ret as i64));
                set_bits(v, off, bits, new);
                if grown || old != new {
                    changes += 1;
                }
            }
        }
    }
    let out = ctx.out();
    out.array(replies.len());
    for r in replies {
        match r {
            Some(n) => out.int(n),
            None => out.null(),
        }
    }
    if changes > 0 {
        ctx.modified_by(key, notify::STRING, "setbit", changes as u64);
    }
    Ok(())
}
