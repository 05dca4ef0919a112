//! Blocking commands: registering waiters, serving them when keys become ready, timeouts.
//!
//! Invariants: a blocked client appears once in `Db::waiters` for each of its
//! keys, in arrival order, and nowhere else; `Client::blocked` is Some exactly
//! while it is registered. A ready key is served after the command that made
//! it ready has finished (or the whole EXEC or script), never in the middle.

use super::client::{Blocked, Client};
use super::{Ctx, Server};
use crate::command::dispatch::call;
use crate::command::gate::{self, Caller, Verdict};
use crate::command::table::CmdRef;
use crate::db::Kind;
use crate::error::Error;

/// Parses a blocking command's timeout in seconds into milliseconds (0 =
/// forever), as Redis's `getTimeoutFromObjectOrReply` does with a long
/// double: the product is rounded up, and a value too large for a 64-bit
/// count of milliseconds wraps negative in C, hence `timeout is negative`.
/// The one parser of every blocking command that takes seconds (BLPOP,
/// BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP).
pub fn parse_timeout(arg: &[u8]) -> Result<i64, Error> {
    if let Some(ms) = plain_decimal_ms(arg) {
        return match ms {
            Some(ms) if ms >= 0 => Ok(ms),
            _ => Err(Error::TimeoutNegative),
        };
    }
    let v = parse_long_double(arg).ok_or(Error::TimeoutNotFloat)?;
    let ms = (v * 1000.0).ceil();
    // 2^63: the first value a C cast to long long cannot hold.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !(0.0..LIMIT).contains(&ms) {
        return Err(Error::TimeoutNegative);
    }
    Ok(ms as i64)
}

/// Parses a timeout given in milliseconds (WAIT, CLIENT PAUSE): the same
/// function in Redis with its integer unit (0 = forever for WAIT).
pub fn parse_timeout_ms(arg: &[u8]) -> Result<i64, Error> {
    match crate::types::number::parse_i64(arg) {
        Some(ms) if ms >= 0 => Ok(ms),
        Some(_) => Err(Error::TimeoutNegative),
        None => Err(Error::TimeoutNotInteger),
    }
}

/// `ceil(x * 1000)` computed exactly for a plain decimal `[-+]digits[.digits]`
/// (what clients send), so large whole-second timeouts keep every digit as
/// they do in a long double. Outer None: not a plain decimal; inner None:
/// beyond a 64-bit count of milliseconds (C's cast then gives LLONG_MIN).
fn plain_decimal_ms(arg: &[u8]) -> Option<Option<i64>> {
    let (neg, body) = match arg.first()? {
        b'-' => (true, &arg[1..]),
        b'+' => (false, &arg[1..]),
        _ => (false, arg),
    };
    let (int, frac) = match body.iter().position(|&c| c == b'.') {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, &b""[..]),
    };
    if (int.is_empty() && frac.is_empty())
        || !int.iter().chain(frac).all(u8::is_ascii_digit)
        || int.len() > 30
    {
        return None;
    }
    let mut v: i128 = 0;
    for &d in int {
        v = v * 10 + (d - b'0') as i128;
    }
    // Thousandths, and whether anything non-zero follows them.
    let mut ms = v * 1000;
    for (i, &d) in frac.iter().take(3).enumerate() {
        ms += (d - b'0') as i128 * [100, 10, 1][i];
    }
    let rest = frac.iter().skip(3).any(|&d| d != b'0');
    let ms = if neg {
        -ms // ceil of a negative value drops the extra digits
    } else {
        ms + rest as i128
    };
    Some(i64::try_from(ms).ok())
}

/// `strtold` as Redis uses it, approximated with doubles: values beyond a
/// double's range but within a long double's come back as infinities (huge)
/// or the smallest normal double (tiny), keeping their sign.
fn parse_long_double(arg: &[u8]) -> Option<f64> {
    if let Some(v) = crate::types::number::parse_f64(arg) {
        return Some(v);
    }
    let text = std::str::from_utf8(arg).ok()?.to_ascii_lowercase();
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let v: f64 = text.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    let exp: i64 = text.split_once('e').and_then(|(_, e)| e.parse().ok())?;
    let neg = text.starts_with('-');
    if v.is_infinite() && exp <= 4932 {
        return Some(v);
    }
    if v == 0.0 && exp >= -4950 {
        return Some(if neg {
            -f64::MIN_POSITIVE
        } else {
            f64::MIN_POSITIVE
        });
    }
    None
}

/// Blocks the running client on `keys` until one holds a value of `kind`, or
/// until `timeout_ms` (0 = forever) passes. Inside MULTI or a script the
/// command must not block: callers check `ctx.in_exec` first and answer as
/// on timeout.
pub fn block(
    ctx: &mut Ctx,
    keys: Vec<Box<[u8]>>,
    kind: Kind,
    timeout_ms: i64,
    args: &crate::command::Args,
) {
    let db = ctx.client.db;
    let deadline_ms = (timeout_ms > 0).then(|| crate::clock::now_ms().saturating_add(timeout_ms));
    for k in &keys {
        let q = ctx.srv.ks.dbs[db].waiters.entry(k.clone()).or_default();
        if !q.contains(&ctx.client.id) {
            q.push_back(ctx.client.id);
        }
    }
    let cmd = crate::command::table::table()
        .lookup(ctx.spec.name.as_bytes())
        .expect("blocking command in table");
    if ctx.client.blocked.is_none() {
        ctx.srv.blocked_clients += 1;
    }
    ctx.client.blocked = Some(Box::new(Blocked {
        db,
        keys,
        kind,
        deadline_ms,
        argv: args.to_owned(),
        spec: ctx.spec,
        id: cmd.id,
    }));
}

/// Removes a client from every waiter list (unblocked, timed out, disconnected).
pub fn unregister(srv: &mut Server, client: &mut Client) -> Option<Box<Blocked>> {
    let b = client.blocked.take()?;
    srv.blocked_clients -= 1;
    let db = &mut srv.ks.dbs[b.db];
    for k in &b.keys {
        if let Some(q) = db.waiters.get_mut(k) {
            q.retain(|&id| id != client.id);
            if q.is_empty() {
                db.waiters.remove(k);
            }
        }
    }
    Some(b)
}

/// True when the client is blocked with a deadline the server's clock has
/// reached (it may have been frozen, moved back or forward meanwhile).
pub fn deadline_passed(client: &Client) -> bool {
    client
        .blocked
        .as_ref()
        .and_then(|b| b.deadline_ms)
        .is_some_and(|at| at <= crate::clock::now_ms())
}

/// Answers a blocked client as on timeout (null array) and unblocks it.
pub fn time_out(srv: &mut Server, client: &mut Client) {
    if let Some(b) = unregister(srv, client) {
        if b.spec.name == "wait" {
            // WAIT answers the replicas that acknowledged by now.
            let n = crate::repl::wait::timed_out(srv, client);
            client.reply.int(n);
        } else {
            client.reply.null_array();
        }
    }
}

/// Serves clients waiting on keys that became ready, first come first served,
/// until no key is ready any more (serving one may make another ready).
/// Runs after every command: with nobody blocked (the common case) this is
/// one inlined test.
#[inline]
pub fn serve_ready(srv: &mut Server, current: &mut Client) {
    if srv.blocked_clients != 0 {
        serve_ready_keys(srv, current);
    }
}

#[inline(never)]
fn serve_ready_keys(srv: &mut Server, current: &mut Client) {
    loop {
        // The common case, after every command: nobody waits, or nothing
        // became ready. (Keys are only marked ready while someone waits.)
        if srv.blocked_clients == 0 || srv.ks.dbs.iter().all(|db| db.ready.is_empty()) {
            return;
        }
        let mut ready = Vec::new();
        for (i, db) in srv.ks.dbs.iter_mut().enumerate() {
            for k in db.ready.drain(..) {
                ready.push((i, k));
            }
        }
        if ready.is_empty() {
            return;
        }
        for (db, key) in ready {
            serve_key(srv, current, db, &key);
        }
    }
}

fn serve_key(srv: &mut Server, current: &mut Client, db: usize, key: &[u8]) {
    // Stream readers do not consume: each is served or kept in its place.
    crate::cmd::stream::read::serve_waiters(srv, current, db, key);
    loop {
        let Some(&id) = srv.ks.dbs[db].waiters.get(key).and_then(|q| q.front()) else {
            return;
        };
        let Some(cell) = srv.clients.get(&id).cloned() else {
            // A client that left without cleaning up; drop it from the queue.
            srv.ks.dbs[db].waiters.get_mut(key).map(|q| q.pop_front());
            continue;
        };
        if id == current.id {
            return;
        }
        let mut waiter = cell.state.borrow_mut();
        let kind = match &waiter.blocked {
            Some(b) if b.kind != Kind::Stream => b.kind,
            _ => return,
        };
        if srv.ks.dbs[db].is_expired(key) {
            // Looked up before serving, as Redis does: the expired key is
            // deleted, its DEL propagated, and the waiter stays blocked.
            drop(waiter);
            srv.ks.dbs[db].get_mut(key);
            let lazy = crate::server::lazy_expire(srv);
            srv.prop.flush_expired(lazy);
            return;
        }
        match srv.ks.dbs[db].peek(key) {
            Some(v) if v.kind() == kind => {}
            _ => return,
        }
        // The client cannot change database while blocked, so it runs in b.db.
        let Some(b) = unregister(srv, &mut waiter) else {
            return; // looked up as blocked just above
        };
        run_woken(srv, &mut waiter, &b);
        let blocked_again = waiter.blocked.is_some();
        if !blocked_again {
            waiter.unblocked = true;
        }
        drop(waiter);
        cell.wake.notify_one();
        if blocked_again {
            return;
        }
    }
}

/// Runs an unblocked client's command again (through the gate, as Redis
/// re-processes it); if it blocks again, its original deadline stands.
pub(crate) fn run_woken(srv: &mut Server, waiter: &mut Client, b: &Blocked) {
    let cmd = CmdRef {
        id: b.id,
        spec: b.spec,
    };
    let args = b.argv.args();
    match gate::admit(srv, waiter, cmd, &args, Caller::Woken) {
        Verdict::Run(cmd) => {
            srv.prop.serving_blocked = true;
            call(srv, waiter, cmd, &args, false);
            srv.prop.serving_blocked = false;
        }
        Verdict::Reject(cmd, r) => crate::command::dispatch::reject(srv, waiter, cmd, &r),
        Verdict::Queue(_) | Verdict::Postpone => {
            unreachable!("a woken command runs or is refused")
        }
    }
    crate::server::notify::flush(srv, waiter);
    // Waiting again (nothing it could take): the original deadline stands.
    if let Some(again) = waiter.blocked.as_mut() {
        again.deadline_ms = b.deadline_ms;
    }
}

#[cfg(test)]
mod tests {
    use super::parse_timeout;

    /// Expected values observed on redis-server 7.0.15.
    #[test]
    fn timeouts_parse_as_redis() {
        let neg = Err(crate::error::Error::TimeoutNegative);
        let nf = Err(crate::error::Error::TimeoutNotFloat);
        assert_eq!(parse_timeout(b"0"), Ok(0));
        assert_eq!(parse_timeout(b"1.5"), Ok(1500));
        assert_eq!(parse_timeout(b"0.0001"), Ok(1));
        assert_eq!(parse_timeout(b"-0.0009"), Ok(0));
        assert_eq!(
            parse_timeout(b"9223372036854775"),
            Ok(9_223_372_036_854_775_000)
        );
        assert_eq!(parse_timeout(b"9223372036854775.9"), neg);
        assert_eq!(parse_timeout(b"-1"), neg);
        assert_eq!(parse_timeout(b"1e400"), neg);
        assert_eq!(parse_timeout(b"inf"), neg);
        assert_eq!(parse_timeout(b"1e-400"), Ok(1));
        assert_eq!(parse_timeout(b"0x10"), Ok(16000));
        assert_eq!(parse_timeout(b"1e5000"), nf);
        assert_eq!(parse_timeout(b"nan"), nf);
        assert_eq!(parse_timeout(b" 1"), nf);
        assert_eq!(parse_timeout(b""), nf);
        assert_eq!(parse_timeout(b"."), nf);
    }
}
