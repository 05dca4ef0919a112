//! WAIT: block until enough replicas acknowledged the stream up to this client's writes.

use crate::db::ClientId;
use crate::server::client::Client;
use crate::server::Server;

/// A client blocked in WAIT.
#[derive(Debug)]
pub struct Waiter {
    pub client: ClientId,
    /// The stream offset each replica must have acknowledged.
    pub offset: i64,
    pub numreplicas: i64,
}

/// Replicas that acknowledged at least `offset`.
pub fn acked(srv: &Server, offset: i64) -> i64 {
    srv.repl
        .replicas
        .iter()
        .filter(|r| r.ack_offset >= offset)
        .count() as i64
}

/// After an ACK: answers every WAIT it satisfies (Redis's
/// `processClientsWaitingReplicas`).
pub fn acked_by(srv: &mut Server, current: &mut Client) {
    if srv.repl.waiting.is_empty() {
        return;
    }
    let waiting = std::mem::take(&mut srv.repl.waiting);
    let mut still = Vec::new();
    for w in waiting {
        let n = acked(srv, w.offset);
        if n < w.numreplicas {
            still.push(w);
            continue;
        }
        let done = |c: &mut Client, srv: &mut Server| {
            if crate::server::blocking::unregister(srv, c).is_some() {
                c.reply.int(n);
                c.unblocked = true;
            }
        };
        if w.client == current.id {
            done(current, srv);
        } else if let Some(cell) = srv.clients.get(&w.client).cloned() {
            if let Ok(mut c) = cell.state.try_borrow_mut() {
                done(&mut c, srv);
            }
            cell.wake.notify_one();
        }
    }
    srv.repl.waiting.extend(still);
}

/// A WAIT timed out: the replicas that acknowledged by now.
pub fn timed_out(srv: &mut Server, client: &Client) -> i64 {
    let offset = srv
        .repl
        .waiting
        .iter()
        .find(|w| w.client == client.id)
        .map_or(i64::MAX, |w| w.offset);
    srv.repl.waiting.retain(|w| w.client != client.id);
    if offset == i64::MAX {
        0
    } else {
        acked(srv, offset)
    }
}
