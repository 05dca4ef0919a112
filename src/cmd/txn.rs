//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.

use crate::command::dispatch::call;
use crate::command::flags::*;
use crate::command::gate::{self, Caller, Verdict};
use crate::command::table::CmdRef;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::server::client::{Client, WatchedKey};
use crate::server::{Ctx, Server};

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "multi",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | TXN_CONTROL,
        (0, 0, 0),
        multi,
    ),
    CommandSpec::new(
        "exec",
        1,
        NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG | TXN_CONTROL | TXN_EXEC,
        (0, 0, 0),
        exec,
    ),
    CommandSpec::new(
        "discard",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | TXN_CONTROL,
        (0, 0, 0),
        discard,
    ),
    CommandSpec::new(
        "watch",
        -2,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | TXN_CONTROL,
        (1, -1, 1),
        watch,
    ),
    CommandSpec::new(
        "unwatch",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        (0, 0, 0),
        unwatch,
    ),
];

/// ```text
/// MULTI
/// ```
/// `OK`; later commands are queued until EXEC or DISCARD.
fn multi(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(Error::msg("MULTI calls can not be nested"));
    }
    ctx.client.multi = Some(Box::default());
    ctx.out().ok();
    Ok(())
}

/// ```text
/// EXEC
/// ```
/// Array of each queued command's reply; null when a watched key changed;
/// `EXECABORT` when a command was rejected while queueing.
fn exec(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let Some(m) = ctx.client.multi.take() else {
        return Err(Error::msg("EXEC without MULTI"));
    };
    if m.aborted {
        unwatch_all(ctx.srv, ctx.client);
        return Err(Error::coded(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    if watched_touched(ctx.srv, ctx.client) {
        unwatch_all(ctx.srv, ctx.client);
        ctx.out().null_array();
        return Ok(());
    }
    unwatch_all(ctx.srv, ctx.client);
    ctx.out().array(m.queue.len());
    for q in &m.queue {
        let args = q.argv.args();
        let queued = CmdRef {
            id: q.id,
            spec: q.spec,
        };
        match gate::admit(ctx.srv, ctx.client, queued, &args, Caller::Exec) {
            Verdict::Run(cmd) => {
                call(ctx.srv, ctx.client, cmd, &args, true);
            }
            // ACL rules may change between MULTI and EXEC (issue 15): the
            // refused command's slot in the array holds the error.
            Verdict::Reject(_, r) => {
                let e = r.error();
                ctx.srv.stats.error(e.code());
                ctx.client.reply.error_line(&e.text());
            }
            Verdict::Queue(_) | Verdict::Postpone => unreachable!("EXEC's gate runs or refuses"),
        }
    }
    Ok(())
}

/// ```text
/// DISCARD
/// ```
/// `OK`; the queue is dropped and keys unwatched.
fn discard(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    if ctx.client.multi.is_none() {
        return Err(Error::msg("DISCARD without MULTI"));
    }
    discard_transaction(ctx.srv, ctx.client);
    ctx.out().ok();
    Ok(())
}

/// Drops a transaction in progress and every WATCH (DISCARD, RESET).
pub fn discard_transaction(srv: &mut Server, c: &mut Client) {
    c.multi = None;
    unwatch_all(srv, c);
}

/// ```text
/// WATCH key [key ...]
/// ```
/// `OK`.
fn watch(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(Error::msg("WATCH inside MULTI is not allowed"));
    }
    let dbi = ctx.client.db;
    for key in args.from(1) {
        if ctx
            .client
            .watched
            .iter()
            .any(|w| w.db == dbi && &*w.key == key)
        {
            continue;
        }
        let db = &mut ctx.srv.ks.dbs[dbi];
        let expired_at_watch = db.is_expired(key);
        let w = db.watched.entry(key.into()).or_default();
        w.watchers += 1;
        let (version, stale_deletes, stale_arrivals) =
            (w.version, w.stale_deletes, w.stale_arrivals);
        ctx.client.watched.push(WatchedKey {
            db: dbi,
            key: key.into(),
            version,
            expired_at_watch,
            stale_deletes,
            stale_arrivals,
        });
    }
    ctx.out().ok();
    Ok(())
}

/// ```text
/// UNWATCH
/// ```
/// `OK`.
fn unwatch(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    unwatch_all(ctx.srv, ctx.client);
    ctx.out().ok();
    Ok(())
}

/// True when any key the client watches was touched, or expired since
/// WATCH. Deleting a key that had already expired when it was watched is
/// no change (Redis's "WATCH stale keys should not fail EXEC").
fn watched_touched(srv: &Server, c: &Client) -> bool {
    c.watched.iter().any(|w| {
        let db = &srv.ks.dbs[w.db];
        let Some(e) = db.watched.get(&w.key) else {
            return true;
        };
        // A key that SWAPDB brought in already expired counts as expired
        // from then on, as one watched when expired (Redis's `wk->expired`).
        let expired = w.expired_at_watch || e.stale_arrivals != w.stale_arrivals;
        let bumps = e.version - w.version;
        let excused = if expired {
            (e.stale_deletes - w.stale_deletes).min(1)
        } else {
            0
        };
        bumps > excused || (!expired && db.is_expired(&w.key))
    })
}

/// Forgets every key the client watches.
pub fn unwatch_all(srv: &mut Server, c: &mut Client) {
    for w in c.watched.take() {
        let db = &mut srv.ks.dbs[w.db];
        if let Some(e) = db.watched.get_mut(&w.key) {
            e.watchers -= 1;
            if e.watchers == 0 {
                db.watched.remove(&w.key);
            }
        }
    }
}
