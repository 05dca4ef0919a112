//! What the replica side changes in the master side's state (`srv.repl`, `srv.prop`): the replication ids, `master_repl_offset`, the backlog, the replicas of this replica.
//!
//! A replica's own replicas and backlog get its master's stream as it is
//! applied, byte for byte (Redis's `replicationFeedStreamFromMasterStream`),
//! never what its own commands propagate (`Propagation::from_master`).

use crate::repl::backlog::Backlog;
use crate::repl::NO_ID;
use crate::server::Server;

/// `master_replid`.
pub fn replid(srv: &Server) -> &str {
    &srv.repl.replid
}

/// `master_repl_offset`.
pub fn offset(srv: &Server) -> i64 {
    srv.prop.repl_offset
}

/// The server became a replica (true) or a master again: what its own
/// commands propagate reaches its AOF only, or its replicas too.
pub fn set_from_master(srv: &mut Server, on: bool) {
    srv.prop.from_master = on;
}

/// Before a full sync's data replaces ours: the history changes, so our
/// replicas must sync again and may not continue from our backlog
/// (Redis's `replicationAttachToNewMaster`).
pub fn attach_to_new_master(srv: &mut Server) {
    disconnect_replicas(srv);
    srv.prop.backlog = None;
}

/// After a full sync: the master's id and offset become ours, with no
/// secondary history, and a backlog from there (Redis's end of
/// `readSyncBulkPayload`).
pub fn adopt(srv: &mut Server, id: &str, offset: i64) {
    srv.repl.replid = id.to_string();
    srv.repl.replid2 = NO_ID.into();
    srv.repl.second_replid_offset = -1;
    srv.prop.repl_offset = offset;
    ensure_backlog(srv);
}

/// A replica keeps a backlog whether or not it has replicas, to serve
/// them, or its old master, after a promotion.
pub fn ensure_backlog(srv: &mut Server) {
    if srv.prop.backlog.is_none() {
        let size = srv.config.get_i64("repl-backlog-size").max(1) as usize;
        srv.prop.backlog = Some(Box::new(Backlog::new(size, srv.prop.repl_offset)));
        crate::db::log_expired(true);
    }
}

/// Bytes of the master's stream applied: into the backlog and to our
/// replicas, moving `master_repl_offset`.
pub fn applied(srv: &mut Server, bytes: &[u8]) {
    srv.prop.feed_replicas(bytes);
    if !srv.prop.repl_fresh.is_empty() {
        srv.repl.feed.notify_one();
    }
}

/// The master continued with a new id (`+CONTINUE <id>`): the old one is
/// valid up to our offset, and our replicas must reconnect to learn it.
pub fn master_changed_id(srv: &mut Server, new: &str) {
    srv.repl.replid2 = std::mem::replace(&mut srv.repl.replid, new.to_string());
    srv.repl.second_replid_offset = srv.prop.repl_offset + 1;
    disconnect_replicas(srv);
}

/// Promotion (Redis's `shiftReplicationId`): a new id, the old one valid
/// up to the offset reached; our replicas reconnect to learn it.
pub fn shift(srv: &mut Server) {
    let new = crate::repl::random_id(&mut srv.rng);
    srv.repl.replid2 = std::mem::replace(&mut srv.repl.replid, new);
    srv.repl.second_replid_offset = srv.prop.repl_offset + 1;
    crate::log::warning(&format!(
        "Setting secondary replication ID to {}, valid up to offset: {}. New replication ID is {}",
        srv.repl.replid2, srv.repl.second_replid_offset, srv.repl.replid
    ));
    disconnect_replicas(srv);
    // The next command a replica of ours receives starts with a SELECT.
    srv.prop.forget_selected();
}

/// Closes every replica of this server (Redis's `disconnectSlaves`).
fn disconnect_replicas(srv: &mut Server) {
    for r in &srv.repl.replicas {
        if let Some(cell) = srv.clients.get(&r.id) {
            cell.kill.set(true);
            cell.wake.notify_one();
        }
    }
}
