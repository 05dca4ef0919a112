//! Byte ranges of strings: GETRANGE (and its old name SUBSTR), SETRANGE, and LCS.

use super::check_len;
use crate::command::Args;
use crate::db::Value;
use crate::error::{CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::number::parse_i64;
use crate::types::string::Str;

/// ```text
/// GETRANGE key start end
/// SUBSTR key start end
/// ```
/// Bulk string: the bytes from `start` to `end` inclusive (negative counts
/// from the end); empty for a missing key or an empty range.
pub fn getrange(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let start = parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    let end = parse_i64(args.at(3)).ok_or(Error::NotInteger)?;
    let (db, out) = ctx.db_out();
    let Some(s) = db.read::<Str>(key)? else {
        out.bulk(b"");
        return Ok(());
    };
    let s = s.as_bytes();
    match clamp_range(s.len(), start, end) {
        Some((a, b)) => out.bulk(&s[a..=b]),
        None => out.bulk(b""),
    }
    Ok(())
}

/// GETRANGE's index arithmetic (Redis's `getrangeCommand`): the inclusive
/// byte range, or None when it is empty.
fn clamp_range(len: usize, mut start: i64, mut end: i64) -> Option<(usize, usize)> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let n = len as i64;
    if start < 0 {
        start = n.wrapping_add(start);
    }
    if end < 0 {
        end = n.wrapping_add(end);
    }
    start = start.max(0);
    end = end.max(0);
    if end >= n {
        end = n - 1;
    }
    if start > end || len == 0 {
        return None;
    }
    Some((start as usize, end as usize))
}

/// ```text
/// SETRANGE key offset value
/// ```
/// Integer: the length after the write (zero bytes pad a gap).
pub fn setrange(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, val) = (args.at(1), args.at(3));
    let offset = parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    if offset < 0 {
        return Err(Error::msg("offset is out of range"));
    }
    let offset = offset as usize;
    let max = ctx.srv.config.proto_max_bulk_len;
    let (db, out) = ctx.db_out();
    let len = match db.write::<Str>(key)? {
        None => {
            if val.is_empty() {
                out.int(0);
                return Ok(());
            }
            check_len(max, offset, val.len())?;
            let mut v = vec![0u8; offset + val.len()];
            v[offset..].copy_from_slice(val);
            let len = v.len();
            db.add_new(key, Value::Str(Str::raw(v)));
            len
        }
        Some(s) => {
            if val.is_empty() {
                out.int(s.len() as i64);
                return Ok(());
            }
            check_len(max, offset, val.len())?;
            let v = s.make_raw();
            if v.len() < offset + val.len() {
                v.resize(offset + val.len(), 0);
            }
            v[offset..offset + val.len()].copy_from_slice(val);
            v.len()
        }
    };
    out.int(len as i64);
    ctx.modified(key, notify::STRING, "setrange");
    Ok(())
}

/// What LCS answers with.
#[derive(Default)]
struct LcsOpts {
    idx: bool,
    len: bool,
    withmatchlen: bool,
    minmatchlen: i64,
}

/// ```text
/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]
/// ```
/// Bulk string: the longest common subsequence; with LEN its length; with
/// IDX a map of `matches` (ranges from the end, as Redis emits them) and `len`.
pub fn lcs(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let db = ctx.db();
    let mut strs: [Vec<u8>; 2] = Default::default();
    let mut wrong = false;
    for (i, s) in strs.iter_mut().enumerate() {
        match db.read::<Str>(args.at(1 + i)) {
            Ok(None) => {}
            Ok(Some(v)) => *s = v.as_bytes().into_owned(),
            Err(_) => wrong = true,
        }
    }
    if wrong {
        return Err(Error::msg("The specified keys must contain string values"));
    }
    let [a, b] = strs;
    let mut o = LcsOpts::default();
    args.set_pos(3);
    while let Some(opt) = args.next() {
        if opt.eq_ignore_ascii_case(b"IDX") {
            o.idx = true;
        } else if opt.eq_ignore_ascii_case(b"LEN") {
            o.len = true;
        } else if opt.eq_ignore_ascii_case(b"WITHMATCHLEN") {
            o.withmatchlen = true;
        } else if opt.eq_ignore_ascii_case(b"MINMATCHLEN") && args.has_more() {
            o.minmatchlen = args.next_i64()?.max(0);
        } else {
            return Err(Error::Syntax);
        }
    }
    if o.idx && o.len {
        return Err(Error::msg(
            "If you want both the length and indexes, please just use IDX.",
        ));
    }
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return Err(Error::msg("String too long for LCS"));
    }
    let cells = (a.len() as u128 + 1) * (b.len() as u128 + 1);
    if cells * 4 > ctx.srv.config.proto_max_bulk_len.max(0) as u128 {
        return Err(Error::msg(
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    lcs_reply(ctx, &a, &b, &o);
    Ok(())
}

/// Fills the dynamic-programming table and walks it back exactly as Redis's
/// `lcsCommand` does, so ranges come out in the same order.
fn lcs_reply(ctx: &mut Ctx, a: &[u8], b: &[u8], o: &LcsOpts) {
    let (alen, blen) = (a.len(), b.len());
    let w = blen + 1;
    let mut t = vec![0u32; (alen + 1) * w];
    for i in 1..=alen {
        for j in 1..=blen {
            t[i * w + j] = if a[i - 1] == b[j - 1] {
                t[(i - 1) * w + j - 1] + 1
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    let total = t[alen * w + blen];
    let out = ctx.out();
    if o.len && !o.idx {
        out.int(total as i64);
        return;
    }
    let mut result = vec![0u8; total as usize];
    let mut idx = total as usize;
    let mut deferred = None;
    if o.idx {
        out.map(2);
        out.bulk(b"matches");
        deferred = Some(out.deferred());
    }
    let mut ranges = 0;
    // `arange_start == alen` means no range is being tracked.
    let (mut ar_start, mut ar_end, mut br_start, mut br_end) = (alen, 0, 0, 0);
    let (mut i, mut j) = (alen, blen);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            if ar_start == alen {
                ar_start = i - 1;
                ar_end = i - 1;
                br_start = j - 1;
                br_end = j - 1;
            } else if ar_start == i && br_start == j {
                ar_start -= 1;
                br_start -= 1;
            } else {
                emit = true;
            }
            if ar_start == 0 || br_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if t[(i - 1) * w + j] > t[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if ar_start != alen {
                emit = true;
            }
        }
        let match_len = ar_end.wrapping_sub(ar_start).wrapping_add(1);
        if emit {
            if deferred.is_some() && (o.minmatchlen == 0 || match_len as i64 >= o.minmatchlen) {
                out.array(2 + o.withmatchlen as usize);
                out.array(2);
                out.int(ar_start as i64);
                out.int(ar_end as i64);
                out.array(2);
                out.int(br_start as i64);
                out.int(br_end as i64);
                if o.withmatchlen {
                    out.int(match_len as i64);
                }
                ranges += 1;
            }
            ar_start = alen;
        }
    }
    match deferred {
        Some(d) => {
            out.bulk(b"len");
            out.int(total as i64);
            out.end_array(d, ranges);
        }
        None => out.bulk(&result),
    }
}
