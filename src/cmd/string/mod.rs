//! String commands: reads and simple writes here; SET and its relatives in
//! `set`, counters in `incr`, ranges and LCS in `range`.

mod incr;
mod range;
mod set;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::{Db, Value};
use crate::error::{CmdResult, Error};
use crate::resp::encode::Reply;
use crate::server::{notify, Ctx};
use crate::types::string::Str;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("get", 2, READONLY | FAST, (1, 1, 1), get),
    CommandSpec::new("set", -3, WRITE | DENYOOM, (1, 1, 1), set::set),
    CommandSpec::new("setnx", 3, WRITE | DENYOOM | FAST, (1, 1, 1), set::setnx),
    CommandSpec::new("setex", 4, WRITE | DENYOOM, (1, 1, 1), set::setex),
    CommandSpec::new("psetex", 4, WRITE | DENYOOM, (1, 1, 1), set::psetex),
    CommandSpec::new("mget", -2, READONLY | FAST, (1, -1, 1), mget),
    CommandSpec::new("mset", -3, WRITE | DENYOOM, (1, -1, 2), set::mset),
    CommandSpec::new("msetnx", -3, WRITE | DENYOOM, (1, -1, 2), set::msetnx),
    CommandSpec::new("getset", 3, WRITE | DENYOOM | FAST, (1, 1, 1), getset),
    CommandSpec::new("getdel", 2, WRITE | FAST, (1, 1, 1), getdel),
    CommandSpec::new("getex", -2, WRITE | FAST, (1, 1, 1), set::getex),
    CommandSpec::new("append", 3, WRITE | DENYOOM | FAST, (1, 1, 1), append),
    CommandSpec::new("strlen", 2, READONLY | FAST, (1, 1, 1), strlen),
    CommandSpec::new("getrange", 4, READONLY, (1, 1, 1), range::getrange),
    CommandSpec::new("substr", 4, READONLY, (1, 1, 1), range::getrange),
    CommandSpec::new("setrange", 4, WRITE | DENYOOM, (1, 1, 1), range::setrange),
    CommandSpec::new("incr", 2, WRITE | DENYOOM | FAST, (1, 1, 1), incr::incr),
    CommandSpec::new("decr", 2, WRITE | DENYOOM | FAST, (1, 1, 1), incr::decr),
    CommandSpec::new("incrby", 3, WRITE | DENYOOM | FAST, (1, 1, 1), incr::incrby),
    CommandSpec::new("decrby", 3, WRITE | DENYOOM | FAST, (1, 1, 1), incr::decrby),
    CommandSpec::new(
        "incrbyfloat",
        3,
        WRITE | DENYOOM | FAST,
        (1, 1, 1),
        incr::incrbyfloat,
    ),
    CommandSpec::new("lcs", -3, READONLY, (1, 2, 1), range::lcs),
];

/// Writes a string value as a bulk reply.
pub fn reply_str(out: &mut Reply, s: &Str) {
    match s {
        Str::Int(n) => out.bulk_int(*n),
        _ => out.bulk(s.as_slice().unwrap_or_default()),
    }
}

/// Redis's `getGenericCommand`: replies with the string at `key` (or null),
/// counting a hit or miss; WRONGTYPE for other types. True when the key exists.
fn reply_get(db: &mut Db, out: &mut Reply, key: &[u8]) -> Result<bool, Error> {
    match db.read::<Str>(key)? {
        None => {
            out.null();
            Ok(false)
        }
        Some(s) => {
            reply_str(out, s);
            Ok(true)
        }
    }
}

/// Redis's `checkStringLength`: a string may not grow past `proto-max-bulk-len`.
/// `max` is the configured `proto-max-bulk-len`.
fn check_len(max: i64, size: usize, add: usize) -> CmdResult {
    let total = size as u128 + add as u128;
    if total > max.max(0) as u128 {
        return Err(Error::StringTooLong);
    }
    Ok(())
}

/// ```text
/// GET key
/// ```
/// Bulk string, or null.
fn get(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let (db, out) = ctx.db_out();
    reply_get(db, out, key).map(|_| ())
}

/// ```text
/// MGET key [key ...]
/// ```
/// Array of bulk strings; null for missing keys and keys of other types.
fn mget(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let n = args.len() - 1;
    let (db, out) = ctx.db_out();
    out.array(n);
    for key in args.from(1) {
        match db.read::<Str>(key) {
            Ok(Some(s)) => reply_str(out, s),
            _ => out.null(),
        }
    }
    Ok(())
}

/// ```text
/// GETSET key value
/// ```
/// The old value or null; the key gets `value` and loses its TTL.
fn getset(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, val) = (args.at(1), args.at(2));
    let (db, out) = ctx.db_out();
    reply_get(db, out, key)?;
    db.set(key, Value::Str(Str::from_bytes(val)));
    ctx.modified(key, notify::STRING, "set");
    ctx.propagate_as(&[b"SET", key, val]);
    Ok(())
}

/// ```text
/// GETDEL key
/// ```
/// The value (then the key is deleted), or null.
fn getdel(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let (db, out) = ctx.db_out();
    if reply_get(db, out, key)? {
        ctx.delete_key_as(key, crate::db::Why::UserDel);
        let del = crate::server::propagate::deletion(ctx.srv, "lazyfree-lazy-user-del");
        ctx.propagate_as(&[del, key]);
    }
    Ok(())
}

/// ```text
/// APPEND key value
/// ```
/// Integer: the length after appending.
fn append(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, tail) = (args.at(1), args.at(2));
    let max = ctx.srv.config.proto_max_bulk_len;
    let db = ctx.db();
    let total = match db.write_or_create(key, || Str::from_bytes(tail))? {
        (_, true) => tail.len(),
        (s, false) => {
            check_len(max, s.len(), tail.len())?;
            let v = s.make_raw();
            v.extend_from_slice(tail);
            v.len()
        }
    };
    ctx.modified(key, notify::STRING, "append");
    ctx.out().int(total as i64);
    Ok(())
}

/// ```text
/// STRLEN key
/// ```
/// Integer: the value's length, 0 for a missing key.
fn strlen(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let (db, out) = ctx.db_out();
    let n = db.read::<Str>(key)?.map_or(0, |s| s.len());
    out.int(n as i64);
    Ok(())
}
