//! The stream command family: XADD, XRANGE, XLEN, XDEL, XTRIM, XSETID here; reads, groups, claims and XINFO in submodules.

pub mod claim;
pub mod group;
pub mod info;
pub mod read;
mod trim;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{stream as err, CmdResult, Error};
use crate::resp::encode::Reply;
use crate::server::{notify, Ctx};
use crate::types::stream::id::{Given, IdBuf};
use crate::types::stream::node::Entry;
use crate::types::stream::{AddError, NewId, NodeLimits, Stream, StreamId};

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("xadd", -5, WRITE | DENYOOM | FAST, (1, 1, 1), xadd),
    CommandSpec::new("xrange", -4, READONLY, (1, 1, 1), xrange),
    CommandSpec::new("xrevrange", -4, READONLY, (1, 1, 1), xrevrange),
    CommandSpec::new("xlen", 2, READONLY | FAST, (1, 1, 1), xlen),
    CommandSpec::new("xdel", -3, WRITE | FAST, (1, 1, 1), xdel),
    CommandSpec::new("xtrim", -4, WRITE, (1, 1, 1), trim::xtrim),
    CommandSpec::new("xsetid", -3, WRITE | DENYOOM | FAST, (1, 1, 1), xsetid),
    CommandSpec::new("xread", -4, READONLY | BLOCKING, (0, 0, 0), read::xread)
        .with_keys_fn(read::xread_keys),
    CommandSpec::new(
        "xreadgroup",
        -7,
        WRITE | BLOCKING,
        (0, 0, 0),
        read::xreadgroup,
    )
    .with_keys_fn(read::xread_keys),
    CommandSpec::new("xack", -4, WRITE | FAST, (1, 1, 1), group::xack),
    CommandSpec::new("xpending", -3, READONLY, (1, 1, 1), group::xpending),
    CommandSpec::new("xclaim", -6, WRITE | FAST, (1, 1, 1), claim::xclaim),
    CommandSpec::new("xautoclaim", -6, WRITE | FAST, (1, 1, 1), claim::xautoclaim),
    CommandSpec::container("xgroup", -2, group::XGROUP),
    CommandSpec::container("xinfo", -2, info::XINFO),
];

/// `stream-node-max-bytes` and `stream-node-max-entries`.
pub(crate) fn limits(ctx: &Ctx) -> NodeLimits {
    NodeLimits {
        bytes: ctx.srv.config.stream_node_max_bytes,
        entries: ctx.srv.config.stream_node_max_entries,
    }
}

pub(crate) fn now_ms() -> i64 {
    crate::clock::now_ms()
}

/// An id argument (`-`, `+`, `ms`, `ms-seq`); a missing sequence is `missing_seq`.
pub(crate) fn parse_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, Error> {
    StreamId::parse(arg, missing_seq, false, false)
        .map(|(id, _)| id)
        .ok_or(Error::msg(err::INVALID_ID))
}

/// An id argument where `-` and `+` are not accepted (Redis's strict parse).
pub(crate) fn parse_strict(arg: &[u8]) -> Result<StreamId, Error> {
    StreamId::parse(arg, 0, true, false)
        .map(|(id, _)| id)
        .ok_or(Error::msg(err::INVALID_ID))
}

/// A range bound: `(id` is exclusive (Redis's `streamParseIntervalIDOrReply`).
/// The start is moved past an exclusive bound, the end before it.
pub(crate) fn parse_bound(arg: &[u8], start: bool) -> Result<StreamId, Error> {
    let missing = if start { 0 } else { u64::MAX };
    if arg.len() > 1 && arg[0] == b'(' {
        let id = StreamId::parse(&arg[1..], missing, true, false)
            .map(|(id, _)| id)
            .ok_or(Error::msg(err::INVALID_ID))?;
        return if start {
            id.next().ok_or(Error::msg(err::START_INVALID))
        } else {
            id.prev().ok_or(Error::msg(err::END_INVALID))
        };
    }
    parse_id(arg, missing)
}

/// A count or integer argument (`getLongLongFromObjectOrReply`).
pub(crate) fn int_arg(arg: &[u8]) -> Result<i64, Error> {
    crate::types::number::parse_i64(arg).ok_or(Error::NotInteger)
}

/// As [`int_arg`], with Redis's custom message on failure.
pub(crate) fn int_arg_or(arg: &[u8], msg: &'static str) -> Result<i64, Error> {
    crate::types::number::parse_i64(arg).ok_or(Error::msg(msg))
}

/// A COUNT where 0 means no limit, as a `take` bound.
pub(crate) fn upto(count: usize) -> usize {
    if count == 0 {
        usize::MAX
    } else {
        count
    }
}

pub(crate) fn write_id(out: &mut Reply, id: StreamId) {
    out.bulk(id.format(&mut IdBuf::default()));
}

/// `[id, [field, value, ...]]`, as Redis's `streamReplyWithRange` writes
/// each entry (an array of pairs in RESP3 too).
pub(crate) fn write_entry(out: &mut Reply, e: &Entry<'_>) {
    out.array(2);
    write_id(out, e.id);
    out.array(e.len() * 2);
    let (mut t1, mut t2) = (itoa::Buffer::new(), itoa::Buffer::new());
    for (f, v) in e.fields() {
        out.bulk(f.bytes(&mut t1));
        out.bulk(v.bytes(&mut t2));
    }
}

/// Writes the entries of a range (up to `count`, 0 = all) as an array.
pub(crate) fn write_range(
    out: &mut Reply,
    s: &Stream,
    start: StreamId,
    end: StreamId,
    count: usize,
    rev: bool,
) -> usize {
    let d = out.deferred();
    let mut n = 0;
    for e in s.range(start, end, rev) {
        write_entry(out, &e);
        n += 1;
        if count != 0 && n == count {
            break;
        }
    }
    out.end_array(d, n);
    n
}

/// ```text
/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]
/// ```
/// Bulk string: the id added; null with NOMKSTREAM on a missing key.
/// Propagated with the generated id, and an approximate trim as the exact
/// one it did (Redis's `streamRewriteTrimArgument`).
fn xadd(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let p = trim::parse(args, true, ctx.srv.config.stream_node_max_entries)?;
    let field_pos = p.id_pos + 1;
    let nfields = args.len() - field_pos;
    if nfields < 2 || nfields % 2 == 1 {
        return Err(Error::Arity("xadd".into()));
    }
    let want = match p.id {
        None => NewId::Auto,
        Some((id, Given::MsOnly)) => NewId::Ms(id.ms),
        Some((id, Given::Full)) => {
            if id.is_zero() {
                return Err(Error::msg(err::XADD_ID_ZERO));
            }
            NewId::Exact(id)
        }
    };
    let lim = limits(ctx);
    let now = now_ms().max(0) as u64;
    if p.nomkstream && ctx.db().write::<Stream>(key)?.is_none() {
        ctx.out().null();
        return Ok(());
    }
    let s = ctx.db().write_or_create(key, Stream::new)?.0;
    if s.last_id == StreamId::MAX {
        return Err(Error::msg(err::XADD_EXHAUSTED));
    }
    let fields: Vec<&[u8]> = args.from(field_pos).collect();
    let id = match s.add(want, &fields, lim, now) {
        Ok(id) => id,
        Err(AddError::NotGreater) => return Err(Error::msg(err::XADD_ID_SMALL)),
        Err(AddError::TooLarge) => return Err(Error::msg(err::TOO_LARGE)),
    };
    let trimmed = p.trim.map(|t| s.trim(&t));
    let rewritten = p.trim.filter(|t| t.approx).map(|t| trim::exact_arg(s, &t));
    let idb = id.to_bytes();
    write_id(ctx.out(), id);
    ctx.modified(key, notify::STREAM, "xadd");
    if trimmed.is_some_and(|n| n > 0) {
        ctx.event(notify::STREAM, "xtrim", key);
    }
    if ctx.propagating() && (!matches!(p.id, Some((_, Given::Full))) || rewritten.is_some()) {
        let mut argv: Vec<&[u8]> = args.from(0).collect();
        if let Some(arg) = &rewritten {
            argv[p.trim_arg - 1] = b"=";
            argv[p.trim_arg] = arg;
        }
        argv[p.id_pos] = &idb;
        ctx.propagate_as(&argv);
    }
    ctx.db().signal_ready(key);
    Ok(())
}

/// The common part of XRANGE and XREVRANGE.
fn range_generic(ctx: &mut Ctx, args: &Args, rev: bool) -> CmdResult {
    let (sa, ea) = if rev {
        (args.at(3), args.at(2))
    } else {
        (args.at(2), args.at(3))
    };
    let start = parse_bound(sa, true)?;
    let end = parse_bound(ea, false)?;
    let mut count: i64 = -1;
    let mut i = 4;
    while i < args.len() {
        if args.at(i).eq_ignore_ascii_case(b"COUNT") && i + 1 < args.len() {
            count = int_arg(args.at(i + 1))?.max(0);
            i += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let (db, out) = ctx.db_out();
    let Some(s) = db.read::<Stream>(args.at(1))? else {
        out.empty_array();
        return Ok(());
    };
    if count == 0 {
        out.null_array();
        return Ok(());
    }
    write_range(out, s, start, end, count.max(0) as usize, rev);
    Ok(())
}

/// ```text
/// XRANGE key start end [COUNT count]
/// ```
/// Array of entries; `(` makes a bound exclusive.
fn xrange(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    range_generic(ctx, args, false)
}

/// ```text
/// XREVRANGE key end start [COUNT count]
/// ```
/// Array of entries, last first.
fn xrevrange(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    range_generic(ctx, args, true)
}

/// ```text
/// XLEN key
/// ```
/// Integer: live entries (0 for a missing key).
fn xlen(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let n = db.read::<Stream>(args.at(1))?.map_or(0, |s| s.len());
    out.int(n as i64);
    Ok(())
}

/// ```text
/// XDEL key id [id ...]
/// ```
/// Integer: entries deleted. Every id is checked before any is deleted.
fn xdel(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let Some(_) = ctx.db().write::<Stream>(key)? else {
        ctx.out().int(0);
        return Ok(());
    };
    let ids = args
        .from(2)
        .map(parse_strict)
        .collect::<Result<Vec<_>, _>>()?;
    let s = ctx.db().write::<Stream>(key)?.expect("checked above");
    let deleted = s.delete(&ids);
    if deleted > 0 {
        ctx.modified(key, notify::STREAM, "xdel");
        ctx.srv.ks.dirty += deleted - 1;
    }
    ctx.out().int(deleted as i64);
    Ok(())
}

/// ```text
/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
/// ```
/// `OK`.
fn xsetid(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let id = parse_strict(args.at(2))?;
    let mut added: i64 = -1;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < args.len() {
        let more = i + 1 < args.len();
        let opt = args.at(i);
        if opt.eq_ignore_ascii_case(b"ENTRIESADDED") && more {
            added = int_arg(args.at(i + 1))?;
            if added < 0 {
                return Err(Error::msg(err::ENTRIES_ADDED_NEGATIVE));
            }
        } else if opt.eq_ignore_ascii_case(b"MAXDELETEDID") && more {
            max_deleted = parse_strict(args.at(i + 1))?;
            if id < max_deleted {
                return Err(Error::msg(err::XSETID_BELOW_MAXDELETED));
            }
        } else {
            return Err(Error::Syntax);
        }
        i += 2;
    }
    let s = ctx.db().write::<Stream>(key)?.ok_or(Error::NoSuchKey)?;
    if !s.is_empty() {
        if id < s.last_valid_id() {
            return Err(Error::msg(err::XSETID_BELOW_TOP));
        }
        if added != -1 && s.len() > added as u64 {
            return Err(Error::msg(err::XSETID_ADDED_BELOW_LEN));
        }
    }
    s.last_id = id;
    if added != -1 {
        s.entries_added = added as u64;
    }
    if !max_deleted.is_zero() {
        s.max_deleted = max_deleted;
    }
    // Redis counts the change and raises the event, without signalling the
    // key as modified (no WATCH or tracking touch).
    ctx.srv.ks.dirty += 1;
    ctx.event(notify::STREAM, "xsetid", key);
    ctx.out().ok();
    Ok(())
}
