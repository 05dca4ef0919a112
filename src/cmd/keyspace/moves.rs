//! Moving keys between names and databases: RENAME, RENAMENX, COPY, MOVE,
//! SWAPDB; and emptying databases: FLUSHDB, FLUSHALL.

use crate::command::Args;
use crate::db::Why;
use crate::error::{CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::number::parse_i64;

/// `ERR source and destination objects are the same`.
fn same_object() -> Error {
    Error::msg("source and destination objects are the same")
}

/// Redis's `getIntFromObjectOrReply`: a 32-bit integer. Errors with `msg`
/// when given, else with Redis's not-an-integer or out-of-range text.
fn parse_int(arg: &[u8], msg: Option<&'static str>) -> Result<i32, Error> {
    let fail = |default: Error| msg.map_or(default, Error::msg);
    let n = parse_i64(arg).ok_or_else(|| fail(Error::NotInteger))?;
    i32::try_from(n).map_err(|_| {
        fail(Error::msg(
            "value is out of range, value must between -2147483648 and 2147483647",
        ))
    })
}

/// A database index for SELECT, MOVE and COPY ... DB (`selectDb` rules).
pub(crate) fn db_index(ctx: &Ctx, arg: &[u8]) -> Result<usize, Error> {
    let id = parse_int(arg, None)?;
    if ctx.srv.cluster.is_some() && id != 0 {
        return Err(Error::msg("SELECT is not allowed in cluster mode"));
    }
    if id < 0 || id as usize >= ctx.srv.ks.dbs.len() {
        return Err(Error::DbIndex);
    }
    Ok(id as usize)
}

/// Redis's `renameGenericCommand`.
fn rename_generic(ctx: &mut Ctx, args: &mut Args, nx: bool) -> CmdResult {
    let (src, dst) = (args.at(1), args.at(2));
    let db = ctx.db();
    if db.get_mut(src).is_none() {
        return Err(Error::NoSuchKey);
    }
    let reply_ok = |ctx: &mut Ctx| {
        if nx {
            ctx.out().int(1)
        } else {
            ctx.out().ok()
        }
    };
    if src == dst {
        if nx {
            ctx.out().int(0);
        } else {
            ctx.out().ok();
        }
        return Ok(());
    }
    if db.get_mut(dst).is_some() {
        if nx {
            ctx.out().int(0);
            return Ok(());
        }
        db.delete(dst, Why::ServerDel);
    }
    let (entry, at) = db.take(src).expect("looked up above");
    db.put(dst, entry, at);
    ctx.modified(src, notify::GENERIC, "rename_from");
    ctx.db().touch(dst);
    ctx.event(notify::GENERIC, "rename_to", dst);
    reply_ok(ctx);
    Ok(())
}

/// ```text
/// RENAME key newkey
/// ```
/// `OK`; `ERR no such key` when `key` is missing. The TTL moves with the value.
pub fn rename(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    rename_generic(ctx, args, false)
}

/// ```text
/// RENAMENX key newkey
/// ```
/// Integer: 1 when renamed, 0 when `newkey` exists.
pub fn renamenx(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    rename_generic(ctx, args, true)
}

/// ```text
/// COPY source destination [DB destination-db] [REPLACE]
/// ```
/// Integer: 1 when copied, 0 when the source is missing or the destination
/// exists without REPLACE.
pub fn copy(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (src, dst) = (args.at(1), args.at(2));
    let src_db = ctx.client.db;
    let mut dst_db = src_db;
    let mut replace = false;
    args.set_pos(3);
    while let Some(opt) = args.next() {
        if opt.eq_ignore_ascii_case(b"REPLACE") {
            replace = true;
        } else if opt.eq_ignore_ascii_case(b"DB") && args.has_more() {
            let id = parse_int(args.next_or_syntax()?, None)?;
            if id < 0 || id as usize >= ctx.srv.ks.dbs.len() {
                return Err(Error::DbIndex);
            }
            dst_db = id as usize;
        } else {
            return Err(Error::Syntax);
        }
    }
    if ctx.srv.cluster.is_some() && (src_db != 0 || dst_db != 0) {
        return Err(Error::msg(
            "Copying to another database is not allowed in cluster mode",
        ));
    }
    if src_db == dst_db && src == dst {
        return Err(same_object());
    }
    let dbs = &mut ctx.srv.ks.dbs;
    let Some(val) = dbs[src_db].get(src).map(|v| v.deep_clone()) else {
        ctx.out().int(0);
        return Ok(());
    };
    let at = dbs[src_db].expire_at(src);
    if dbs[dst_db].get_mut(dst).is_some() {
        if !replace {
            ctx.out().int(0);
            return Ok(());
        }
        dbs[dst_db].delete(dst, Why::ServerDel);
    }
    dbs[dst_db].add_new(dst, val);
    if let Some(at) = at {
        dbs[dst_db].set_expire(dst, at);
    }
    ctx.modified_in(dst_db, dst, notify::GENERIC, "copy_to");
    ctx.out().int(1);
    Ok(())
}

/// ```text
/// MOVE key db
/// ```
/// Integer: 1 when moved, 0 when the key is missing here or exists there.
pub fn move_(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if ctx.srv.cluster.is_some() {
        return Err(Error::msg("MOVE is not allowed in cluster mode"));
    }
    let key = args.at(1);
    let src = ctx.client.db;
    let dst = db_index(ctx, args.at(2))?;
    if src == dst {
        return Err(same_object());
    }
    let dbs = &mut ctx.srv.ks.dbs;
    if dbs[src].get_mut(key).is_none() || dbs[dst].get_mut(key).is_some() {
        ctx.out().int(0);
        return Ok(());
    }
    let (entry, at) = dbs[src].take(key).expect("looked up above");
    dbs[dst].put(key, entry, at);
    ctx.modified_in(src, key, notify::GENERIC, "move_from");
    ctx.srv.ks.dbs[dst].touch(key);
    notify::raise(ctx.srv, notify::GENERIC, "move_to", dst, key);
    ctx.out().int(1);
    Ok(())
}

/// ```text
/// SWAPDB index1 index2
/// ```
/// `OK`. Clients stay on their database number and see the other data;
/// WATCHed keys that exist on either side are touched.
pub fn swapdb(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if ctx.srv.cluster.is_some() {
        return Err(Error::msg("SWAPDB is not allowed in cluster mode"));
    }
    let a = parse_int(args.at(1), Some("invalid first DB index"))?;
    let b = parse_int(args.at(2), Some("invalid second DB index"))?;
    let n = ctx.srv.ks.dbs.len();
    if a < 0 || b < 0 || a as usize >= n || b as usize >= n {
        return Err(Error::DbIndex);
    }
    let (a, b) = (a as usize, b as usize);
    let dbs = &mut ctx.srv.ks.dbs;
    if a == b {
        dbs[a].touch_all_existing();
    } else {
        let (lo, hi) = (a.min(b), a.max(b));
        let (left, right) = dbs.split_at_mut(hi);
        left[lo].swap_data(&mut right[0]);
    }
    ctx.srv.ks.dirty += 1;
    ctx.out().ok();
    Ok(())
}

/// Redis's `getFlushCommandFlags`: an optional ASYNC or SYNC; without one
/// `lazyfree-lazy-user-flush` decides. True for a lazy (ASYNC) flush.
fn flush_mode(args: &Args) -> Result<bool, Error> {
    match args.len() {
        1 => Ok(crate::db::lazyfree::policy().user_flush),
        2 if args.at(1).eq_ignore_ascii_case(b"SYNC") => Ok(false),
        2 if args.at(1).eq_ignore_ascii_case(b"ASYNC") => Ok(true),
        _ => Err(Error::Syntax),
    }
}

/// ```text
/// FLUSHDB [ASYNC | SYNC]
/// ```
/// `OK`. ASYNC frees the old keys in the background.
pub fn flushdb(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let lazy = flush_mode(args)?;
    let n = ctx.db().clear(lazy);
    ctx.srv.ks.dirty += n as u64;
    // Propagated even when the database was already empty, as Redis does.
    ctx.force_propagation();
    if !lazy {
        crate::server::cron::release_free_memory();
    }
    ctx.out().ok();
    Ok(())
}

/// ```text
/// FLUSHALL [ASYNC | SYNC]
/// ```
/// `OK`. ASYNC frees the old keys in the background.
pub fn flushall(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let lazy = flush_mode(args)?;
    let mut n = 0;
    for db in ctx.srv.ks.dbs.iter_mut() {
        n += db.clear(lazy);
    }
    ctx.srv.ks.dirty += n as u64 + 1;
    crate::persist::after_flushall(ctx.srv);
    ctx.force_propagation();
    if !lazy {
        crate::server::cron::release_free_memory();
    }
    ctx.out().ok();
    Ok(())
}
