//! The hash command family, and the HSCAN/SSCAN option parsing both collection scans share.

use super::scan;
use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::resp::encode::Reply;
use crate::server::{notify, Ctx};
use crate::types::hash::{Hash, Limits};
use crate::types::longdouble::{self, LongDouble};
use crate::types::number::parse_i64;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("hset", -4, WRITE | DENYOOM | FAST, (1, 1, 1), hset),
    CommandSpec::new("hsetnx", 4, WRITE | DENYOOM | FAST, (1, 1, 1), hsetnx),
    CommandSpec::new("hget", 3, READONLY | FAST, (1, 1, 1), hget),
    CommandSpec::new("hmset", -4, WRITE | DENYOOM | FAST, (1, 1, 1), hmset),
    CommandSpec::new("hmget", -3, READONLY | FAST, (1, 1, 1), hmget),
    CommandSpec::new("hgetall", 2, READONLY, (1, 1, 1), hgetall),
    CommandSpec::new("hdel", -3, WRITE | FAST, (1, 1, 1), hdel),
    CommandSpec::new("hexists", 3, READONLY | FAST, (1, 1, 1), hexists),
    CommandSpec::new("hlen", 2, READONLY | FAST, (1, 1, 1), hlen),
    CommandSpec::new("hkeys", 2, READONLY, (1, 1, 1), hkeys),
    CommandSpec::new("hvals", 2, READONLY, (1, 1, 1), hvals),
    CommandSpec::new("hstrlen", 3, READONLY | FAST, (1, 1, 1), hstrlen),
    CommandSpec::new("hincrby", 4, WRITE | DENYOOM | FAST, (1, 1, 1), hincrby),
    CommandSpec::new(
        "hincrbyfloat",
        4,
        WRITE | DENYOOM | FAST,
        (1, 1, 1),
        hincrbyfloat,
    ),
    CommandSpec::new("hrandfield", -2, READONLY, (1, 1, 1), hrandfield),
    CommandSpec::new("hscan", -3, READONLY, (1, 1, 1), hscan),
];

/// The `hash-max-listpack-*` limits in force.
fn limits(ctx: &Ctx) -> Limits {
    Limits {
        entries: ctx.srv.config.hash_max_listpack_entries,
        value: ctx.srv.config.hash_max_listpack_value,
    }
}

/// Sets every field/value pair from argument 2 on; returns how many were new.
fn set_pairs(ctx: &mut Ctx, args: &Args) -> Result<i64, Error> {
    if args.len() % 2 == 1 {
        return Err(Error::Arity(ctx.spec.name.into()));
    }
    let key = args.at(1);
    let lim = limits(ctx);
    let h = ctx.db().write_or_create(key, Hash::new)?.0;
    h.prepare(args.from(2), lim);
    let pairs = (2..args.len())
        .step_by(2)
        .map(|i| (args.at(i), args.at(i + 1)));
    let created = h.set_many(pairs, lim) as i64;
    // Redis counts every pair given, new or not.
    ctx.modified_by(key, notify::HASH, "hset", (args.len() as u64 - 2) / 2);
    Ok(created)
}

/// ```text
/// HSET key field value [field value ...]
/// ```
/// Integer: fields created.
fn hset(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let n = set_pairs(ctx, args)?;
    ctx.out().int(n);
    Ok(())
}

/// ```text
/// HMSET key field value [field value ...]
/// ```
/// `OK`.
fn hmset(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    set_pairs(ctx, args)?;
    ctx.out().ok();
    Ok(())
}

/// ```text
/// HSETNX key field value
/// ```
/// Integer: 1 when set, 0 when the field existed.
fn hsetnx(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, field, value) = (args.at(1), args.at(2), args.at(3));
    let lim = limits(ctx);
    let h = ctx.db().write_or_create(key, Hash::new)?.0;
    if h.contains(field) {
        ctx.out().int(0);
        return Ok(());
    }
    h.set(field, value, lim);
    ctx.modified(key, notify::HASH, "hset");
    ctx.out().int(1);
    Ok(())
}

/// ```text
/// HGET key field
/// ```
/// Bulk string, or null.
fn hget(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    match db.read::<Hash>(args.at(1))?.and_then(|h| h.get(args.at(2))) {
        Some(v) => out.bulk(v),
        None => out.null(),
    }
    Ok(())
}

/// ```text
/// HMGET key field [field ...]
/// ```
/// Array of bulk strings or nulls.
fn hmget(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let h = db.read::<Hash>(args.at(1))?;
    out.array(args.len() - 2);
    for f in args.from(2) {
        match h.and_then(|h| h.get(f)) {
            Some(v) => out.bulk(v),
            None => out.null(),
        }
    }
    Ok(())
}

/// Which parts of each pair HGETALL, HKEYS and HVALS send.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parts {
    Both,
    Fields,
    Values,
}

fn get_all(ctx: &mut Ctx, args: &Args, parts: Parts) -> CmdResult {
    let (db, out) = ctx.db_out();
    let h = db.read::<Hash>(args.at(1))?;
    let n = h.map_or(0, |h| h.len());
    match parts {
        Parts::Both => out.map(n),
        _ => out.array(n),
    }
    if let Some(h) = h {
        for (f, v) in h.iter() {
            if parts != Parts::Values {
                out.bulk(f);
            }
            if parts != Parts::Fields {
                out.bulk(v);
            }
        }
    }
    Ok(())
}

/// ```text
/// HGETALL key
/// ```
/// Map of fields to values (a flat array in RESP2).
fn hgetall(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    get_all(ctx, args, Parts::Both)
}

/// ```text
/// HKEYS key
/// ```
/// Array of fields.
fn hkeys(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    get_all(ctx, args, Parts::Fields)
}

/// ```text
/// HVALS key
/// ```
/// Array of values.
fn hvals(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    get_all(ctx, args, Parts::Values)
}

/// ```text
/// HDEL key field [field ...]
/// ```
/// Integer: fields removed; the key goes with its last field.
fn hdel(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let Some(h) = ctx.db().write::<Hash>(key)? else {
        ctx.out().int(0);
        return Ok(());
    };
    let mut n = 0;
    for f in args.from(2) {
        if h.remove(f) {
            n += 1;
            if h.is_empty() {
                break;
            }
        }
    }
    let empty = h.is_empty();
    if n > 0 {
        ctx.modified_by(key, notify::HASH, "hdel", n as u64);
        if empty {
            ctx.delete_if_empty(key);
        }
    }
    ctx.out().int(n);
    Ok(())
}

/// ```text
/// HEXISTS key field
/// ```
/// Integer: 1 or 0.
fn hexists(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let found = db
        .read::<Hash>(args.at(1))?
        .is_some_and(|h| h.contains(args.at(2)));
    out.int(found as i64);
    Ok(())
}

/// ```text
/// HLEN key
/// ```
/// Integer.
fn hlen(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let n = db.read::<Hash>(args.at(1))?.map_or(0, |h| h.len());
    out.int(n as i64);
    Ok(())
}

/// ```text
/// HSTRLEN key field
/// ```
/// Integer: the value's length, 0 when absent.
fn hstrlen(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let n = db
        .read::<Hash>(args.at(1))?
        .and_then(|h| h.get(args.at(2)))
        .map_or(0, |v| v.len());
    out.int(n as i64);
    Ok(())
}

/// ```text
/// HINCRBY key field increment
/// ```
/// Integer: the new value.
fn hincrby(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, field) = (args.at(1), args.at(2));
    let by = parse_i64(args.at(3)).ok_or(Error::NotInteger)?;
    let lim = limits(ctx);
    let h = ctx.db().write_or_create(key, Hash::new)?.0;
    let cur = match h.get(field) {
        Some(v) => parse_i64(v).ok_or_else(|| Error::msg("hash value is not an integer"))?,
        None => 0,
    };
    let new = cur.checked_add(by).ok_or(Error::Overflow)?;
    h.set(field, itoa::Buffer::new().format(new).as_bytes(), lim);
    ctx.modified(key, notify::HASH, "hincrby");
    ctx.out().int(new);
    Ok(())
}

/// ```text
/// HINCRBYFLOAT key field increment
/// ```
/// Bulk string: the new value, computed in long double and printed as Redis does.
fn hincrbyfloat(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, field) = (args.at(1), args.at(2));
    let by = LongDouble::parse(args.at(3)).ok_or(Error::NotFloat)?;
    if !by.is_finite() {
        return Err(Error::msg("value is NaN or Infinity"));
    }
    let lim = limits(ctx);
    let h = ctx.db().write_or_create(key, Hash::new)?.0;
    let cur = match h.get(field) {
        Some(v) => LongDouble::parse(v).ok_or_else(|| Error::msg("hash value is not a float"))?,
        None => LongDouble::ZERO,
    };
    let sum = cur.checked_add(by).ok_or_else(longdouble::nan_or_inf)?;
    let text = sum.to_human();
    h.set(field, &text, lim);
    ctx.modified(key, notify::HASH, "hincrbyfloat");
    ctx.out().bulk(&text);
    // Replicas get the result, not the increment (float formatting).
    ctx.propagate_as(&[b"HSET", key, field, &text]);
    Ok(())
}

/// ```text
/// HRANDFIELD key [count [WITHVALUES]]
/// ```
/// Without count: a bulk field or null. With count: an array of fields (or
/// of field/value pairs: flat in RESP2, two-element arrays in RESP3); a
/// negative count allows repeats.
fn hrandfield(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    if args.len() == 2 {
        let Ctx { srv, client, .. } = ctx;
        let rng = &mut srv.rng;
        let db = &mut srv.ks.dbs[client.db];
        let out = &mut client.reply;
        match db
            .read::<Hash>(key)?
            .and_then(|h| h.random(|| rng.next_u64()))
        {
            Some((f, _)) => out.bulk(f),
            None => out.null(),
        }
        return Ok(());
    }
    let withvalues = match args.len() {
        3 => false,
        4 if args.at(3).eq_ignore_ascii_case(b"WITHVALUES") => true,
        _ => return Err(Error::Syntax),
    };
    let count = rand_count(args.at(2), withvalues)?;
    let cap = ctx.reply_cap();
    let Ctx { srv, client, .. } = &mut *ctx;
    let rng = &mut srv.rng;
    let db = &mut srv.ks.dbs[client.db];
    let out = &mut client.reply;
    let Some(h) = db.read::<Hash>(key)? else {
        out.empty_array();
        return Ok(());
    };
    let resp3 = out.resp3();
    let write_pair = |out: &mut Reply, (f, v): (&[u8], &[u8])| {
        if withvalues && resp3 {
            out.array(2);
        }
        out.bulk(f);
        if withvalues {
            out.bulk(v);
        }
    };
    let header = |n: usize| if withvalues && !resp3 { n * 2 } else { n };
    let pairs: Vec<(&[u8], &[u8])> = match count {
        RandCount::Repeat(n) => {
            // Streamed: a huge count must not be collected first.
            out.array(header(n));
            let draw = || h.random(|| rng.next_u64());
            if super::stream_drawn(out, n, cap, draw, write_pair) {
                ctx.reply_capped();
            }
            return Ok(());
        }
        RandCount::Unique(n) if n >= h.len() => h.iter().collect(),
        RandCount::Unique(n) => {
            let mut all: Vec<(&[u8], &[u8])> = h.iter().collect();
            sample_unique(&mut all, n, || rng.next_u64());
            all
        }
    };
    out.array(header(pairs.len()));
    for p in pairs {
        write_pair(out, p);
    }
    Ok(())
}

/// A random-member count: distinct members, or (negative) repeats allowed.
#[derive(Clone, Copy)]
pub(crate) enum RandCount {
    Unique(usize),
    Repeat(usize),
}

/// Parses HRANDFIELD/SRANDMEMBER's count with Redis's range errors.
pub(crate) fn rand_count(arg: &[u8], withvalues: bool) -> Result<RandCount, Error> {
    let n = parse_i64(arg).ok_or(Error::NotInteger)?;
    if n == i64::MIN {
        return Err(Error::msg(
            "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    let m = n.unsigned_abs();
    // Redis refuses counts whose reply (two items each) would overflow.
    if withvalues && m > (i64::MAX / 2) as u64 {
        return Err(Error::OutOfRange);
    }
    if n >= 0 {
        return Ok(RandCount::Unique(n as usize));
    }
    Ok(RandCount::Repeat(m as usize))
}

/// Keeps `n` members of `all` chosen uniformly (a partial Fisher-Yates shuffle).
pub(crate) fn sample_unique<T>(all: &mut Vec<T>, n: usize, mut rand: impl FnMut() -> u64) {
    let len = all.len();
    for i in 0..n.min(len) {
        let j = i + (rand() % (len - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(n);
}

/// ```text
/// HSCAN key cursor [MATCH pattern] [COUNT count]
/// ```
/// Array: next cursor, then a flat array of fields and values.
fn hscan(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let cursor = scan::parse_cursor(args.at(2))?;
    let (db, out) = ctx.db_out();
    let Some(h) = db.read::<Hash>(args.at(1))? else {
        scan::reply::<&[u8]>(out, 0, &[]);
        return Ok(());
    };
    let o = scan::parse_opts(args, 3, false)?;
    let mut items: Vec<Vec<u8>> = Vec::new();
    // A field and its value are two of the items COUNT asks for, times two.
    let cursor = scan::walk(cursor, o.count.saturating_mul(2), |c, n| {
        h.scan(c, |f, v| {
            *n += 2;
            if o.keeps(f) {
                items.push(f.to_vec());
                items.push(v.to_vec());
            }
        })
    });
    scan::reply(out, cursor, &items);
    Ok(())
}
