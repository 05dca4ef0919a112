//! Keyspace commands: lookups and deletion here; expiry in `expire`, moving
//! keys between names and databases in `moves`, OBJECT in `object`.

mod expire;
pub(crate) mod moves;
mod object;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::Kind;
use crate::error::{CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::glob;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("del", -2, WRITE, (1, -1, 1), del),
    CommandSpec::new("unlink", -2, WRITE | FAST, (1, -1, 1), del),
    CommandSpec::new("exists", -2, READONLY | FAST, (1, -1, 1), exists),
    CommandSpec::new("type", 2, READONLY | FAST, (1, 1, 1), type_),
    CommandSpec::new("keys", 2, READONLY, (0, 0, 0), keys),
    CommandSpec::new("scan", -2, READONLY, (0, 0, 0), scan),
    CommandSpec::new("randomkey", 1, READONLY, (0, 0, 0), randomkey),
    CommandSpec::new("touch", -2, READONLY | FAST, (1, -1, 1), touch),
    CommandSpec::new("dbsize", 1, READONLY | FAST, (0, 0, 0), dbsize),
    CommandSpec::new("rename", 3, WRITE, (1, 2, 1), moves::rename),
    CommandSpec::new("renamenx", 3, WRITE | FAST, (1, 2, 1), moves::renamenx),
    CommandSpec::new("copy", -3, WRITE | DENYOOM, (1, 2, 1), moves::copy),
    CommandSpec::new("move", 3, WRITE | FAST, (1, 1, 1), moves::move_),
    CommandSpec::new("swapdb", 3, WRITE | FAST, (0, 0, 0), moves::swapdb),
    CommandSpec::new("flushdb", -1, WRITE, (0, 0, 0), moves::flushdb),
    CommandSpec::new("flushall", -1, WRITE, (0, 0, 0), moves::flushall),
    CommandSpec::new("expire", -3, WRITE | FAST, (1, 1, 1), expire::expire),
    CommandSpec::new("pexpire", -3, WRITE | FAST, (1, 1, 1), expire::pexpire),
    CommandSpec::new("expireat", -3, WRITE | FAST, (1, 1, 1), expire::expireat),
    CommandSpec::new("pexpireat", -3, WRITE | FAST, (1, 1, 1), expire::pexpireat),
    CommandSpec::new(
        "expiretime",
        2,
        READONLY | FAST,
        (1, 1, 1),
        expire::expiretime,
    ),
    CommandSpec::new(
        "pexpiretime",
        2,
        READONLY | FAST,
        (1, 1, 1),
        expire::pexpiretime,
    ),
    CommandSpec::new("ttl", 2, READONLY | FAST, (1, 1, 1), expire::ttl),
    CommandSpec::new("pttl", 2, READONLY | FAST, (1, 1, 1), expire::pttl),
    CommandSpec::new("persist", 2, WRITE | FAST, (1, 1, 1), expire::persist),
    CommandSpec::container("object", -2, object::SUBCOMMANDS),
];

/// ```text
/// DEL key [key ...]
/// UNLINK key [key ...]
/// ```
/// Integer: how many keys were deleted.
fn del(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mut n = 0;
    for key in args.from(1) {
        if ctx.db().remove(key).is_some() {
            ctx.modified(key, notify::GENERIC, "del");
            n += 1;
        }
    }
    ctx.out().int(n);
    Ok(())
}

/// ```text
/// EXISTS key [key ...]
/// ```
/// Integer: how many of the keys exist (a key named twice counts twice).
fn exists(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let db = ctx.db();
    let n = args
        .from(1)
        .filter(|k| db.get_no_touch(k).is_some())
        .count();
    ctx.out().int(n as i64);
    Ok(())
}

/// ```text
/// TYPE key
/// ```
/// Simple string: `string`, `list`, `set`, `zset`, `hash`, or `none`.
fn type_(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let name = match ctx.db().get_no_touch(args.at(1)) {
        Some(e) => e.val.kind().name(),
        None => "none",
    };
    ctx.out().simple(name);
    Ok(())
}

/// ```text
/// KEYS pattern
/// ```
/// Array of the keys matching the glob pattern (expired keys left out).
fn keys(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let pattern = args.at(1);
    let all = pattern == b"*";
    let (db, out) = ctx.db_out();
    let d = out.deferred();
    let mut n = 0;
    for (k, _) in db.iter() {
        if (all || glob::matches(pattern, k, false)) && !db.is_expired(k) {
            out.bulk(k);
            n += 1;
        }
    }
    out.end_array(d, n);
    Ok(())
}

/// Redis's `parseScanCursorOrReply`: `strtoul` over the whole argument, so
/// an empty string is 0 and `-1` wraps to the largest cursor.
pub fn parse_cursor(arg: &[u8]) -> Result<u64, Error> {
    let invalid = || Error::msg("invalid cursor");
    let (neg, digits) = match arg.first() {
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        _ => (false, arg),
    };
    if arg.is_empty() {
        return Ok(0);
    }
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid());
    }
    let mut v: u64 = 0;
    for &c in digits {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add((c - b'0') as u64))
            .ok_or_else(invalid)?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// ```text
/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
/// ```
/// Array of the next cursor (bulk string, `0` when done) and an array of
/// keys. A key present during the whole iteration is returned at least once.
fn scan(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mut cursor = parse_cursor(args.at(1))?;
    let mut count: i64 = 10;
    let mut pattern: Option<&[u8]> = None;
    let mut kind: Option<&[u8]> = None;
    args.set_pos(2);
    while let Some(opt) = args.next() {
        let more = args.has_more();
        if opt.eq_ignore_ascii_case(b"COUNT") && more {
            count = args.next_i64()?;
            if count < 1 {
                return Err(Error::Syntax);
            }
        } else if opt.eq_ignore_ascii_case(b"MATCH") && more {
            let p = args.next().unwrap();
            pattern = (p != b"*").then_some(p);
        } else if opt.eq_ignore_ascii_case(b"TYPE") && more {
            kind = Some(args.next().unwrap());
        } else {
            return Err(Error::Syntax);
        }
    }
    let db = ctx.db();
    let mut found: Vec<Box<[u8]>> = Vec::new();
    let mut budget = count.saturating_mul(10);
    loop {
        cursor = db.scan(cursor, |k, _| found.push(k.into()));
        if cursor == 0 || budget == 0 || found.len() as i64 >= count {
            break;
        }
        budget -= 1;
    }
    let wanted = kind.map(Kind::from_name);
    found.retain(|k| {
        if let Some(p) = pattern {
            if !glob::matches(p, k, false) {
                return false;
            }
        }
        if let Some(w) = wanted {
            // An unknown type name matches nothing (Redis compares names).
            match (w, db.get_no_touch(k)) {
                (Some(w), Some(e)) if e.val.kind() == w => {}
                _ => return false,
            }
        }
        if db.is_expired(k) {
            db.delete_expired(k);
            return false;
        }
        true
    });
    let out = ctx.out();
    out.array(2);
    out.bulk(itoa::Buffer::new().format(cursor).as_bytes());
    out.array(found.len());
    for k in &found {
        out.bulk(k);
    }
    Ok(())
}

/// ```text
/// RANDOMKEY
/// ```
/// Bulk string: a random key, or null when the database is empty.
fn randomkey(ctx: &mut Ctx, _args: &mut Args) -> CmdResult {
    let Ctx { srv, client, .. } = ctx;
    let rng = &mut srv.rng;
    let key = srv.ks.dbs[client.db].random_key(|| rng.next_u64());
    match key {
        Some(k) => client.reply.bulk(&k),
        None => client.reply.null(),
    }
    Ok(())
}

/// ```text
/// TOUCH key [key ...]
/// ```
/// Integer: how many of the keys exist; their access time is updated.
fn touch(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let db = ctx.db();
    let n = args.from(1).filter(|k| db.get(k).is_some()).count();
    ctx.out().int(n as i64);
    Ok(())
}

/// ```text
/// DBSIZE
/// ```
/// Integer: the number of keys (including expired keys not yet reclaimed).
fn dbsize(ctx: &mut Ctx, _args: &mut Args) -> CmdResult {
    let n = ctx.db().len();
    ctx.out().int(n as i64);
    Ok(())
}
