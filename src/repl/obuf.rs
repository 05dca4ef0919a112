//! The replica class of `client-output-buffer-limit` (Redis's `checkClientOutputBufferLimits` for replicas): the stream waiting on a replica, past its RDB, bounded.
//!
//! What counts is the stream a replica has not taken yet: queued in its
//! connection beyond the end of its RDB payload (which Redis sends apart
//! from the output buffer), held for it after a diskless transfer, or
//! gathered while its RDB is made. A replica over the hard limit, or over
//! the soft one for longer than its seconds, is closed; the hard limit is
//! never below `repl-backlog-size`, as in Redis (a replica the backlog can
//! serve is not cut off for it).

use super::{Replica, ReplicaState};
use crate::db::ClientId;
use crate::server::client::Client;
use crate::server::Server;

/// The client's output count (sent and queued) at which its RDB ends:
/// everything queued so far is the RDB or the sync's reply line.
pub fn mark_rdb_end(r: &mut Replica, c: &Client) {
    r.rdb_end = queued_total(c);
}

/// Bytes the client has been given: sent, being written, and queued.
fn queued_total(c: &Client) -> u64 {
    c.net_out + (c.reply.buf.len() + c.out_inflight) as u64
}

/// Stream bytes waiting on the replica (Redis's
/// `getClientOutputBufferMemoryUsage` for a replica).
pub fn waiting(r: &Replica, c: &Client) -> u64 {
    let kept = match &r.state {
        ReplicaState::WaitBgsaveEnd { pending } => return pending.len() as u64,
        ReplicaState::WaitBgsaveStart => return 0,
        ReplicaState::Online => r.held.as_ref().map_or(0, Vec::len) as u64,
    };
    kept + queued_total(c).saturating_sub(c.net_out.max(r.rdb_end))
}

/// Checks every replica (after the stream grew, and from the cron for the
/// soft limit's seconds) and closes the ones over their limit.
pub fn check_all(srv: &mut Server, current: Option<&mut Client>) {
    let limit = srv.config.obuf_limits.replica;
    if limit.hard == 0 && limit.soft == 0 {
        return;
    }
    let backlog = srv.config.get_i64("repl-backlog-size").max(0) as u64;
    let hard = if limit.hard > 0 {
        limit.hard.max(backlog)
    } else {
        0
    };
    let now = crate::clock::unix_now();
    let mut over: Vec<ClientId> = Vec::new();
    let mut current = current;
    for i in 0..srv.repl.replicas.len() {
        let id = srv.repl.replicas[i].id;
        let used = match current.as_deref() {
            Some(c) if c.id == id => waiting(&srv.repl.replicas[i], c),
            _ => match srv.clients.get(&id).map(|cell| cell.state.try_borrow()) {
                Some(Ok(c)) => waiting(&srv.repl.replicas[i], &c),
                _ => continue,
            },
        };
        let r = &mut srv.repl.replicas[i];
        let mut soft = limit.soft > 0 && used >= limit.soft;
        if soft {
            match r.obuf_soft_since {
                None => {
                    r.obuf_soft_since = Some(now);
                    soft = false;
                }
                Some(t) => soft = now - t > limit.soft_seconds as i64,
            }
        } else {
            r.obuf_soft_since = None;
        }
        if (hard > 0 && used >= hard) || soft {
            over.push(id);
        }
    }
    for id in over {
        close(srv, current.as_deref_mut(), id);
    }
}

/// Closes a replica over its limit, logged as Redis logs it.
fn close(srv: &mut Server, current: Option<&mut Client>, id: ClientId) {
    let Some(cell) = srv.clients.get(&id).cloned() else {
        return;
    };
    if cell.kill.replace(true) {
        return;
    }
    let describe = |c: &Client| crate::cmd::server::client::describe(c, false, 0);
    let info = match current {
        Some(c) if c.id == id => describe(c),
        _ => cell
            .state
            .try_borrow()
            .map(|c| describe(&c))
            .unwrap_or_default(),
    };
    crate::log::warning(&format!(
        "Client {info} scheduled to be closed ASAP for overcoming of output buffer limits."
    ));
    cell.wake.notify_one();
}
