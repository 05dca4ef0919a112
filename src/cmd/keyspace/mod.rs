//! Keyspace commands: lookups and deletion here; expiry in `expire`, moving
//! keys between names and databases in `moves`, OBJECT in `object`, DUMP and
//! RESTORE in `dump`.

mod dump;
mod expire;
pub mod migrate;
pub(crate) mod moves;
pub(crate) mod object;

use super::scan;
use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::{Kind, Why};
use crate::error::CmdResult;
use crate::server::Ctx;
use crate::types::glob;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("del", -2, WRITE, (1, -1, 1), del),
    CommandSpec::new("unlink", -2, WRITE | FAST, (1, -1, 1), unlink),
    CommandSpec::new("exists", -2, READONLY | FAST, (1, -1, 1), exists),
    CommandSpec::new("type", 2, READONLY | FAST, (1, 1, 1), type_),
    CommandSpec::new("keys", 2, READONLY, (0, 0, 0), keys),
    CommandSpec::new(
        "scan",
        -2,
        READONLY | TOUCHES_ARBITRARY_KEYS,
        (0, 0, 0),
        scan,
    ),
    CommandSpec::new(
        "randomkey",
        1,
        READONLY | TOUCHES_ARBITRARY_KEYS,
        (0, 0, 0),
        randomkey,
    ),
    CommandSpec::new("touch", -2, READONLY | FAST, (1, -1, 1), touch),
    CommandSpec::new("dbsize", 1, READONLY | FAST, (0, 0, 0), dbsize),
    CommandSpec::new("rename", 3, WRITE, (1, 2, 1), moves::rename),
    CommandSpec::new("renamenx", 3, WRITE | FAST, (1, 2, 1), moves::renamenx),
    CommandSpec::new("copy", -3, WRITE | DENYOOM, (1, 2, 1), moves::copy),
    CommandSpec::new("move", 3, WRITE | FAST, (1, 1, 1), moves::move_),
    CommandSpec::new("swapdb", 3, WRITE | FAST, (0, 0, 0), moves::swapdb),
    CommandSpec::new("flushdb", -1, WRITE | FLUSHES, (0, 0, 0), moves::flushdb),
    CommandSpec::new("flushall", -1, WRITE | FLUSHES, (0, 0, 0), moves::flushall),
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
    CommandSpec::new("dump", 2, READONLY, (1, 1, 1), dump::dump),
    CommandSpec::new("restore", -4, WRITE | DENYOOM, (1, 1, 1), dump::restore),
    CommandSpec::new(
        "restore-asking",
        -4,
        WRITE | DENYOOM | ASKING,
        (1, 1, 1),
        dump::restore,
    ),
    CommandSpec::new("migrate", -6, WRITE, (3, 3, 1), migrate::migrate)
        .with_keys_fn(migrate::migrate_keys),
];

/// ```text
/// DEL key [key ...]
/// ```
/// Integer: how many keys were deleted. Values are freed now, or in the
/// background with `lazyfree-lazy-user-del yes`.
fn del(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    del_as(ctx, args, Why::UserDel)
}

/// ```text
/// UNLINK key [key ...]
/// ```
/// As DEL, with large values freed in the background.
fn unlink(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    del_as(ctx, args, Why::Unlink)
}

fn del_as(ctx: &mut Ctx, args: &mut Args, why: Why) -> CmdResult {
    let mut n = 0;
    for key in args.from(1) {
        if ctx.delete_key_as(key, why) {
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

/// ```text
/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
/// ```
/// Array of the next cursor (bulk string, `0` when done) and an array of
/// keys. A key present during the whole iteration is returned at least once.
fn scan(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let cursor = scan::parse_cursor(args.at(1))?;
    let o = scan::parse_opts(args, 2, true)?;
    let db = ctx.db();
    let mut found: Vec<Box<[u8]>> = Vec::new();
    let cursor = scan::walk(cursor, o.count, |c, n| {
        db.scan(c, |k, _| {
            found.push(k.into());
            *n += 1;
        })
    });
    let wanted = o.kind.map(Kind::from_name);
    found.retain(|k| {
        if !o.keeps(k) {
            return false;
        }
        if let Some(w) = wanted {
            // An unknown type name matches nothing (Redis compares names).
            match (w, db.get_no_touch(k)) {
                (Some(w), Some(e)) if e.val.kind() == w => {}
                _ => return false,
            }
        }
        if db.is_expired(k) {
            if !crate::db::expiry_held() {
                db.delete_expired(k);
            }
            return false;
        }
        true
    });
    scan::reply(ctx.out(), cursor, &found);
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
