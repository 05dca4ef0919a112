//! OXIDIS CLOCK: read, freeze, resume, advance and set the server's clock (`crate::clock`).
//!
//! Everything that reads time reads that clock (expiry, TTLs, TIME, OBJECT
//! IDLETIME/FREQ, scripts, blocking deadlines, stream ids, `timeout`, the
//! slow log and latency monitor). After the time moves, what a real passing
//! of time would have done happens before the reply: due keys expire (with
//! their `expired` events), and blocked clients whose deadline passed are
//! answered as on timeout; every connection is woken to re-arm its timers
//! (idle `timeout`, CLIENT PAUSE's end) against the new time.

use super::{non_negative, word, wrong};
use crate::command::Args;
use crate::error::{CmdResult, Error, TESTCTL_CLOCK_RANGE};
use crate::server::{blocking, Ctx, Server};

/// The latest time the clock may be set to, in unix milliseconds (year
/// 275,000 or so: microseconds still fit an i64 with room to add to).
const MAX_MS: i64 = 8_640_000_000_000_000;

/// `OXIDIS CLOCK <GET|FREEZE|RESUME|ADVANCE ms|SET unix-ms>`
pub fn command(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let sub = word(args)?;
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    let arg = if is("advance") || is("set") {
        Some(non_negative(args)?)
    } else {
        None
    };
    if args.has_more() {
        return Err(wrong(args));
    }
    let now_ms = crate::clock::real_now_us() / 1000;
    match arg {
        Some(ms) => {
            let to = if is("advance") {
                now_ms.checked_add(ms)
            } else {
                Some(ms)
            };
            match to.filter(|&t| t <= MAX_MS) {
                Some(t) => crate::clock::set_us(t * 1000),
                None => return Err(Error::msg(TESTCTL_CLOCK_RANGE)),
            }
            time_moved(ctx);
            ctx.out().ok();
        }
        None if is("get") => ctx.out().int(now_ms),
        None if is("freeze") => {
            crate::clock::freeze();
            ctx.out().ok();
        }
        None if is("resume") => {
            crate::clock::resume();
            ctx.out().ok();
        }
        None => return Err(wrong(args)),
    }
    Ok(())
}

/// What the time passing (or going back) does at once: expiry of due keys,
/// timeouts of blocked clients, and a wake-up of every other connection.
fn time_moved(ctx: &mut Ctx) {
    for db in ctx.srv.ks.dbs.iter_mut() {
        db.expire_all_due();
    }
    time_out_blocked(ctx.srv, ctx.client.id);
    for (&id, cell) in ctx.srv.clients.iter() {
        if id != ctx.client.id {
            cell.wake.notify_one();
        }
    }
}

/// Answers every blocked client whose deadline the clock has now reached.
fn time_out_blocked(srv: &mut Server, current: crate::db::ClientId) {
    if srv.blocked_clients == 0 {
        return;
    }
    let cells: Vec<_> = srv
        .clients
        .iter()
        .filter(|(&id, _)| id != current)
        .map(|(_, cell)| cell.clone())
        .collect();
    for cell in cells {
        let Ok(mut c) = cell.state.try_borrow_mut() else {
            continue;
        };
        if blocking::deadline_passed(&c) {
            blocking::time_out(srv, &mut c);
        }
    }
}
