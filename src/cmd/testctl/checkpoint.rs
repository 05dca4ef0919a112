//! OXIDIS CHECKPOINT: named in-memory copies of the whole dataset, restored in one command (per-test isolation after loading fixtures once).
//!
//! SAVE copies every database's keys with their values, access metadata and
//! expiry times. RESTORE builds fresh tables from the copy (sized up front,
//! so nothing rehashes), swaps them in database by database as SWAPDB does,
//! and hands the old tables to the lazy-free thread. The swap gives
//! watchers and blocked clients SWAPDB's treatment: a watched key that
//! exists before or after is touched (EXEC then fails), every key a client
//! waits on is looked at again (served if it now holds what it waits for),
//! and tracking clients are told that everything changed, as after FLUSHALL.
//! A restore is not propagated (test controls are for a lone server).

use std::collections::BTreeMap;

use super::{word, wrong};
use crate::command::Args;
use crate::db::{Db, Entry, Value};
use crate::error::{CmdResult, Error, TESTCTL_NO_CHECKPOINT};
use crate::server::Ctx;

/// One key as saved.
struct Saved {
    key: Box<[u8]>,
    val: Value,
    lru: u32,
    lfu: u32,
    expire_at: Option<i64>,
}

/// One database's copy, and how many of its keys have a TTL.
struct DbCopy {
    keys: Vec<Saved>,
    expires: usize,
}

/// The checkpoints by name (listed in name order).
#[derive(Default)]
pub struct Checkpoints {
    saved: BTreeMap<Vec<u8>, Vec<DbCopy>>,
}

/// `OXIDIS CHECKPOINT <SAVE name|RESTORE name|DEL name|LIST>`
pub fn command(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let sub = word(args)?;
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    if is("list") {
        if args.has_more() {
            return Err(wrong(args));
        }
        let names: Vec<Vec<u8>> = ctx.srv.testctl.checkpoints.saved.keys().cloned().collect();
        let out = ctx.out();
        out.array(names.len());
        for n in names {
            out.bulk(&n);
        }
        return Ok(());
    }
    let name = word(args)?.to_vec();
    if args.has_more() {
        return Err(wrong(args));
    }
    if is("save") {
        let copy = ctx.srv.ks.dbs.iter().map(save_db).collect();
        ctx.srv.testctl.checkpoints.saved.insert(name, copy);
    } else if is("restore") {
        restore(ctx, &name)?;
    } else if is("del") {
        if ctx.srv.testctl.checkpoints.saved.remove(&name).is_none() {
            return Err(Error::msg(TESTCTL_NO_CHECKPOINT));
        }
    } else {
        return Err(wrong(args));
    }
    ctx.out().ok();
    Ok(())
}

fn save_db(db: &Db) -> DbCopy {
    let mut keys = Vec::with_capacity(db.len());
    for (k, e) in db.entries() {
        keys.push(Saved {
            key: k.into(),
            val: e.val.deep_clone(),
            lru: e.lru,
            lfu: e.lfu,
            expire_at: db.expire_at(k),
        });
    }
    DbCopy {
        keys,
        expires: db.expires_len(),
    }
}

fn restore(ctx: &mut Ctx, name: &[u8]) -> CmdResult {
    let Some(copy) = ctx.srv.testctl.checkpoints.saved.get(name) else {
        return Err(Error::msg(TESTCTL_NO_CHECKPOINT));
    };
    let mut changed = 0;
    for (i, saved) in copy.iter().enumerate() {
        let Some(db) = ctx.srv.ks.dbs.get_mut(i) else {
            break;
        };
        if db.is_empty() && saved.keys.is_empty() {
            continue;
        }
        let mut fresh = Db::new(i);
        fresh.reserve(saved.keys.len(), saved.expires);
        for s in &saved.keys {
            let entry = Entry {
                val: s.val.deep_clone(),
                lru: s.lru,
                lfu: s.lfu,
            };
            fresh.add_loaded(&s.key, entry, s.expire_at);
        }
        changed += db.len() + fresh.len();
        db.swap_data(&mut fresh);
        // The old dataset, now in `fresh`, goes to the lazy-free thread.
        fresh.clear(true);
    }
    ctx.srv.ks.dirty += changed as u64;
    if ctx.srv.tracking.clients > 0 {
        crate::server::tracking::on_flush(ctx.srv, ctx.client);
    }
    Ok(())
}
