//! The link's task: connect, handshake, sync, stream, and after a failure try again as Redis's replication cron does.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::handshake::{self, Conn, Sync};
use super::{ids, link_of, stream, transfer, State};
use crate::log;
use crate::server::Server;

/// How a connection attempt ended: what the task does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The link was replaced or removed (REPLICAOF): the task ends.
    Gone,
    /// The cron's next tick connects again (Redis's `REPL_STATE_CONNECT`).
    Later,
    /// Connect again at once (Redis's `cancelReplicationHandshake(1)`).
    Now,
    /// An established link dropped: the master is cached, connect again at once.
    Dropped,
}

/// Task numbers, unique for the process (a new link starts no lower).
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

/// Starts the task of `srv.replica.link` (the server must run in its
/// listener loop, which set `self_ref`).
pub(super) fn spawn(srv: &mut Server) {
    let Some(me) = srv.self_ref.as_ref().and_then(|w| w.upgrade()) else {
        return;
    };
    let Some(link) = srv.replica.link.as_deref_mut() else {
        return;
    };
    let generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
    link.generation = generation;
    let task = tokio::task::spawn_local(run(me, generation));
    link.task = Some(task.abort_handle());
}

/// `repl-timeout`.
pub(super) fn repl_timeout(srv: &Server) -> Duration {
    Duration::from_secs(srv.config.get_i64("repl-timeout").max(1) as u64)
}

async fn run(srv: Rc<RefCell<Server>>, generation: u64) {
    let mut at_once = true;
    loop {
        if !at_once {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let s = &mut *srv.borrow_mut();
            let Some(l) = link_of(s, generation) else {
                return;
            };
            log::notice(&format!("Connecting to MASTER {}:{}", l.host, l.port));
        }
        let outcome = session(&srv, generation).await;
        let s = &mut *srv.borrow_mut();
        let Some(l) = link_of(s, generation) else {
            return;
        };
        l.state = State::Connect;
        at_once = match outcome {
            Outcome::Gone => return,
            Outcome::Later => false,
            Outcome::Now => {
                log::notice(&format!(
                    "Reconnecting to MASTER {}:{} after failure",
                    l.host, l.port
                ));
                true
            }
            Outcome::Dropped => {
                // Already set when CLIENT KILL dropped the master.
                if l.down_since == 0 {
                    l.down_since = crate::clock::real_now_us() / 1_000_000;
                }
                log::notice(&format!("Reconnecting to MASTER {}:{}", l.host, l.port));
                true
            }
        };
    }
}

/// One connection: connect, handshake, then a full or partial sync and the
/// stream until the link drops.
async fn session(srv: &Rc<RefCell<Server>>, generation: u64) -> Outcome {
    let (host, port, timeout, source) = {
        let s = &mut *srv.borrow_mut();
        let source = s
            .config
            .get("bind-source-addr")
            .filter(|a| !a.is_empty())
            .map(String::from);
        let timeout = repl_timeout(s);
        let Some(l) = link_of(s, generation) else {
            return Outcome::Gone;
        };
        l.state = State::Connecting;
        l.transfer_last_io = Instant::now();
        (l.host.clone(), l.port, timeout, source)
    };
    log::notice("MASTER <-> REPLICA sync started");
    let connect = crate::net::listener::connect_from(&host, port, source.as_deref());
    let stream = match tokio::time::timeout(timeout, connect).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            log::warning(&format!(
                "Error condition on socket for SYNC: {}",
                crate::config::os_error(&e)
            ));
            return Outcome::Later;
        }
        Err(_) => {
            log::warning("Timeout connecting to the MASTER...");
            return Outcome::Now;
        }
    };
    let _ = stream.set_nodelay(true);
    if !handshake::set_state(srv, generation, State::Handshake) {
        return Outcome::Gone;
    }
    log::notice("Non blocking connect for SYNC fired the event.");
    let mut conn = Conn::new(stream);
    let handshake = tokio::time::timeout(timeout, handshake::run(srv, generation, &mut conn));
    let sync = match handshake.await {
        Ok(s) => s,
        Err(_) => {
            log::warning("Timeout connecting to the MASTER...");
            return Outcome::Now;
        }
    };
    match sync {
        Sync::Stop(o) => o,
        Sync::Continue(new_id) => {
            let cell = {
                let s = &mut *srv.borrow_mut();
                let Some(cell) = continue_partial(s, generation, &conn, new_id) else {
                    return Outcome::Gone;
                };
                cell
            };
            log::notice("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
            stream::run(srv, generation, conn, cell, false).await
        }
        Sync::Full { replid, offset } => {
            match transfer::run(srv, generation, &mut conn, &replid, offset).await {
                Ok((cell, ack_now)) => stream::run(srv, generation, conn, cell, ack_now).await,
                Err(o) => o,
            }
        }
    }
}

/// `+CONTINUE`: the cached master becomes the live one (Redis's
/// `replicationResurrectCachedMaster`), under the master's new id if it
/// gave one.
fn continue_partial(
    s: &mut Server,
    generation: u64,
    conn: &Conn,
    new_id: Option<String>,
) -> Option<Rc<crate::server::client::ClientCell>> {
    let cached = link_of(s, generation)?.master.clone()?;
    if let Some(new) = new_id.filter(|n| *n != cached.replid) {
        log::warning(&format!("Master replication ID changed to {new}"));
        ids::master_changed_id(s, &new);
        if let Some(p) = link_of(s, generation)?.master.as_mut() {
            p.replid = new;
        }
    }
    let cell = stream::create_master_client(s, &conn.stream, cached.reploff);
    let l = link_of(s, generation)?;
    l.master_client = Some(cell.state.borrow().id);
    l.state = State::Connected;
    l.down_since = 0;
    l.last_interaction = Instant::now();
    Some(cell)
}
