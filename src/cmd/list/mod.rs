//! The list command family: pushes, reads and edits here; pops, moves and blocking in [`pop`].

pub mod pop;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::list::{End, List};

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("lpush", -3, WRITE | DENYOOM | FAST, (1, 1, 1), lpush),
    CommandSpec::new("rpush", -3, WRITE | DENYOOM | FAST, (1, 1, 1), rpush),
    CommandSpec::new("lpushx", -3, WRITE | DENYOOM | FAST, (1, 1, 1), lpushx),
    CommandSpec::new("rpushx", -3, WRITE | DENYOOM | FAST, (1, 1, 1), rpushx),
    CommandSpec::new("lpop", -2, WRITE | FAST, (1, 1, 1), pop::lpop),
    CommandSpec::new("rpop", -2, WRITE | FAST, (1, 1, 1), pop::rpop),
    CommandSpec::new("llen", 2, READONLY | FAST, (1, 1, 1), llen),
    CommandSpec::new("lrange", 4, READONLY, (1, 1, 1), lrange),
    CommandSpec::new("lindex", 3, READONLY, (1, 1, 1), lindex),
    CommandSpec::new("lset", 4, WRITE | DENYOOM, (1, 1, 1), lset),
    CommandSpec::new("lrem", 4, WRITE, (1, 1, 1), lrem),
    CommandSpec::new("ltrim", 4, WRITE, (1, 1, 1), ltrim),
    CommandSpec::new("linsert", 5, WRITE | DENYOOM, (1, 1, 1), linsert),
    CommandSpec::new("lpos", -3, READONLY, (1, 1, 1), lpos),
    CommandSpec::new("lmove", 5, WRITE | DENYOOM, (1, 2, 1), pop::lmove),
    CommandSpec::new("rpoplpush", 3, WRITE | DENYOOM, (1, 2, 1), pop::rpoplpush),
    CommandSpec::new("lmpop", -4, WRITE, (0, 0, 0), pop::lmpop).with_keys_fn(pop::lmpop_keys),
    CommandSpec::new(
        "blpop",
        -3,
        WRITE | NOSCRIPT | BLOCKING,
        (1, -2, 1),
        pop::blpop,
    ),
    CommandSpec::new(
        "brpop",
        -3,
        WRITE | NOSCRIPT | BLOCKING,
        (1, -2, 1),
        pop::brpop,
    ),
    CommandSpec::new(
        "blmove",
        6,
        WRITE | DENYOOM | NOSCRIPT | BLOCKING,
        (1, 2, 1),
        pop::blmove,
    ),
    CommandSpec::new(
        "brpoplpush",
        4,
        WRITE | DENYOOM | NOSCRIPT | BLOCKING,
        (1, 2, 1),
        pop::brpoplpush,
    ),
    CommandSpec::new("blmpop", -5, WRITE | BLOCKING, (0, 0, 0), pop::blmpop)
        .with_keys_fn(pop::blmpop_keys),
];

/// The `list-max-listpack-size` setting new elements are packed under.
pub(crate) fn fill(ctx: &Ctx) -> i64 {
    ctx.srv.config.list_max_listpack_size
}

/// The push event for an end.
pub(crate) fn push_event(end: End) -> &'static str {
    match end {
        End::Head => "lpush",
        End::Tail => "rpush",
    }
}

/// Pushes `elems` at `end` of the list at `key`, creating it unless `existing_only`.
fn push_generic(ctx: &mut Ctx, args: &mut Args, end: End, existing_only: bool) -> CmdResult {
    let key = args.at(1);
    let fill = fill(ctx);
    let db = ctx.db();
    let list = if existing_only {
        match db.write::<List>(key)? {
            Some(l) => l,
            None => {
                ctx.out().int(0);
                return Ok(());
            }
        }
    } else {
        db.write_or_create(key, List::new)?.0
    };
    for v in args.from(2) {
        list.push(end, v, fill);
    }
    let len = list.len() as i64;
    ctx.modified_by(key, notify::LIST, push_event(end), args.len() as u64 - 2);
    ctx.out().int(len);
    Ok(())
}

/// ```text
/// LPUSH key element [element ...]
/// ```
/// Integer: the length after the push.
fn lpush(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    push_generic(ctx, args, End::Head, false)
}

/// ```text
/// RPUSH key element [element ...]
/// ```
/// Integer: the length after the push.
fn rpush(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    push_generic(ctx, args, End::Tail, false)
}

/// ```text
/// LPUSHX key element [element ...]
/// ```
/// Integer: the length after the push, 0 when the key does not exist.
fn lpushx(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    push_generic(ctx, args, End::Head, true)
}

/// ```text
/// RPUSHX key element [element ...]
/// ```
/// Integer: the length after the push, 0 when the key does not exist.
fn rpushx(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    push_generic(ctx, args, End::Tail, true)
}

/// ```text
/// LLEN key
/// ```
/// Integer.
fn llen(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let n = db.read::<List>(args.at(1))?.map_or(0, |l| l.len());
    out.int(n as i64);
    Ok(())
}

/// Resolves Redis's `start`/`end` pair against a length: None when empty.
pub(crate) fn clamp_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { len + start } else { start };
    let mut end = if end < 0 { len + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, end as usize))
}

/// ```text
/// LRANGE key start stop
/// ```
/// Array of elements (empty for a missing key or an empty range).
fn lrange(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let start = int_at(args, 2)?;
    let end = int_at(args, 3)?;
    let (db, out) = ctx.db_out();
    let Some(l) = db.read::<List>(key)? else {
        out.empty_array();
        return Ok(());
    };
    match clamp_range(start, end, l.len()) {
        None => out.empty_array(),
        Some((s, e)) => {
            out.array(e - s + 1);
            for v in l.range(s, e) {
                out.bulk(v);
            }
        }
    }
    Ok(())
}

/// A Redis list index (negative from the tail) as a position, if inside.
fn index_of(i: i64, len: usize) -> Option<usize> {
    let i = if i < 0 { len as i64 + i } else { i };
    (i >= 0 && (i as usize) < len).then_some(i as usize)
}

/// ```text
/// LINDEX key index
/// ```
/// Bulk string, or null when out of range or missing.
fn lindex(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let (db, out) = ctx.db_out();
    // The key is looked up before the index is read, as in Redis: a missing
    // key answers null whatever the index says.
    let Some(l) = db.read::<List>(key)? else {
        out.null();
        return Ok(());
    };
    let i = int_at(args, 2)?;
    match index_of(i, l.len()).and_then(|p| l.get(p)) {
        Some(v) => out.bulk(v),
        None => out.null(),
    }
    Ok(())
}

/// ```text
/// LSET key index element
/// ```
/// `OK`; `ERR no such key`, `ERR index out of range`.
fn lset(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let l = ctx.db().write::<List>(key)?.ok_or(Error::NoSuchKey)?;
    let i = int_at(args, 2)?;
    let pos = index_of(i, l.len()).ok_or(Error::IndexOutOfRange)?;
    l.set(pos, args.at(3));
    ctx.modified(key, notify::LIST, "lset");
    ctx.out().ok();
    Ok(())
}

/// ```text
/// LREM key count element
/// ```
/// Integer: elements removed (count > 0 from the head, < 0 from the tail, 0 all).
fn lrem(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let count = int_at(args, 2)?;
    let elem = args.at(3);
    let fill = fill(ctx);
    let Some(l) = ctx.db().write::<List>(key)? else {
        ctx.out().int(0);
        return Ok(());
    };
    let limit = if count == 0 {
        usize::MAX
    } else {
        count.unsigned_abs().min(usize::MAX as u64) as usize
    };
    // Indexes of the elements to remove, found from the chosen end.
    let mut doomed: Vec<usize> = Vec::new();
    if count < 0 {
        let n = l.len();
        for (j, v) in l.iter().rev().enumerate() {
            if doomed.len() >= limit {
                break;
            }
            if v == elem {
                doomed.push(n - 1 - j);
            }
        }
        doomed.reverse();
    } else {
        for (j, v) in l.iter().enumerate() {
            if doomed.len() >= limit {
                break;
            }
            if v == elem {
                doomed.push(j);
            }
        }
    }
    let removed = doomed.len();
    if removed > 0 {
        let mut next = 0;
        l.retain(
            |i, _| {
                if doomed.get(next) == Some(&i) {
                    next += 1;
                    false
                } else {
                    true
                }
            },
            fill,
        );
        ctx.modified_by(key, notify::LIST, "lrem", removed as u64);
        ctx.delete_if_empty(key);
    }
    ctx.out().int(removed as i64);
    Ok(())
}

/// ```text
/// LTRIM key start stop
/// ```
/// `OK`; the key is deleted when nothing is left.
fn ltrim(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let start = int_at(args, 2)?;
    let end = int_at(args, 3)?;
    let Some(l) = ctx.db().write::<List>(key)? else {
        ctx.out().ok();
        return Ok(());
    };
    let len = l.len();
    let (head, tail) = match clamp_range(start, end, len) {
        None => (len, 0),
        Some((s, e)) => (s, len - e - 1),
    };
    l.trim(head, tail);
    // Redis counts the elements trimmed as the changes: a trim that removes
    // nothing is not propagated.
    ctx.modified_by(key, notify::LIST, "ltrim", (head + tail) as u64);
    ctx.delete_if_empty(key);
    ctx.out().ok();
    Ok(())
}

/// ```text
/// LINSERT key <BEFORE | AFTER> pivot element
/// ```
/// Integer: the new length, -1 when the pivot is absent, 0 when the key is.
fn linsert(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    args.set_pos(2);
    let after = if args.eat_ci("AFTER") {
        true
    } else if args.eat_ci("BEFORE") {
        false
    } else {
        return Err(Error::Syntax);
    };
    let (pivot, elem) = (args.at(3), args.at(4));
    let fill = fill(ctx);
    let Some(l) = ctx.db().write::<List>(key)? else {
        ctx.out().int(0);
        return Ok(());
    };
    let Some(at) = l.iter().position(|v| v == pivot) else {
        ctx.out().int(-1);
        return Ok(());
    };
    l.insert(at + after as usize, elem, fill);
    let len = l.len() as i64;
    ctx.modified(key, notify::LIST, "linsert");
    ctx.out().int(len);
    Ok(())
}

/// ```text
/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
/// ```
/// Integer or null; with COUNT, an array of integers.
fn lpos(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let elem = args.at(2);
    args.set_pos(3);
    let (mut rank, mut count, mut maxlen) = (1i64, -1i64, 0i64);
    while let Some(opt) = args.next() {
        let more = args.has_more();
        if opt.eq_ignore_ascii_case(b"RANK") && more {
            rank = args.next_i64()?;
            if rank == 0 {
                return Err(Error::msg("RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"));
            }
        } else if opt.eq_ignore_ascii_case(b"COUNT") && more {
            count = positive(args, "COUNT can't be negative")?;
        } else if opt.eq_ignore_ascii_case(b"MAXLEN") && more {
            maxlen = positive(args, "MAXLEN can't be negative")?;
        } else {
            return Err(Error::Syntax);
        }
    }
    let (db, out) = ctx.db_out();
    let Some(l) = db.read::<List>(key)? else {
        if count != -1 {
            out.empty_array();
        } else {
            out.null();
        }
        return Ok(());
    };
    let from_tail = rank < 0;
    if from_tail {
        // Redis negates in C, where LONG_MIN stays negative (and then every match counts).
        rank = rank.wrapping_neg();
    }
    let len = l.len();
    let items: Box<dyn Iterator<Item = &[u8]>> = if from_tail {
        Box::new(l.iter().rev())
    } else {
        Box::new(l.iter())
    };
    let mut found = Vec::new();
    let mut matches = 0i64;
    for (index, v) in items.enumerate() {
        if maxlen != 0 && index as i64 >= maxlen {
            break;
        }
        if v == elem {
            matches += 1;
            if matches >= rank {
                found.push(if from_tail { len - index - 1 } else { index });
                if count == -1 || (count != 0 && matches - rank + 1 >= count) {
                    break;
                }
            }
        }
    }
    if count == -1 {
        match found.first() {
            Some(&i) => out.int(i as i64),
            None => out.null(),
        }
    } else {
        out.array(found.len());
        for i in found {
            out.int(i as i64);
        }
    }
    Ok(())
}

/// The next argument as a non-negative integer, with `msg` when it is not one.
pub(crate) fn positive(args: &mut Args, msg: &'static str) -> Result<i64, Error> {
    match crate::types::number::parse_i64(args.next_or_syntax()?) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(Error::msg(msg)),
    }
}

/// Argument `i` as an integer (`ERR value is not an integer or out of range`).
pub(crate) fn int_at(args: &Args, i: usize) -> Result<i64, Error> {
    crate::types::number::parse_i64(args.at(i)).ok_or(Error::NotInteger)
}
