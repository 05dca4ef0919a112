//! The replication ids and offset this server reports (Redis's `server.replid`, `replid2`, `master_repl_offset`, `second_replid_offset`), as the replica side changes them.
//!
//! The master side owns these in the end (its backlog advances the offset);
//! until then the primary id lives where INFO reads it (`srv.debug.replid`,
//! else the run id) and the rest here. Every change the replica side makes
//! goes through the functions below, so joining the two sides changes only
//! this file.

use crate::server::Server;

/// The secondary id and the offsets (see the module comment).
#[derive(Debug)]
pub struct ReplIds {
    /// `master_replid2`: the id of the history this one continues.
    pub replid2: Option<String>,
    /// `second_repl_offset`: up to where `replid2` is valid (-1: none).
    pub second_offset: i64,
    /// `master_repl_offset`.
    pub offset: i64,
}

impl Default for ReplIds {
    fn default() -> ReplIds {
        ReplIds {
            replid2: None,
            second_offset: -1,
            offset: 0,
        }
    }
}

/// `master_replid`.
pub fn replid(srv: &Server) -> &str {
    srv.debug.replid.as_deref().unwrap_or(&srv.run_id)
}

/// `master_repl_offset`.
pub fn offset(srv: &Server) -> i64 {
    srv.replica.ids.offset
}

/// After a full sync: the master's id and offset become ours, with no
/// secondary history (Redis's `clearReplicationId2`).
pub fn adopt(srv: &mut Server, id: &str, offset: i64) {
    srv.debug.replid = Some(id.to_string());
    srv.replica.ids = ReplIds {
        offset,
        ..ReplIds::default()
    };
}

/// Bytes of the master's stream applied: our offset follows (Redis feeds
/// them to its backlog and sub-replicas, `replicationFeedStreamFromMasterStream`).
pub fn applied(srv: &mut Server, bytes: &[u8]) {
    srv.replica.ids.offset += bytes.len() as i64;
}

/// The master continued with a new id (`+CONTINUE <id>`): the old one is
/// valid up to our offset.
pub fn master_changed_id(srv: &mut Server, new: &str) {
    let old = replid(srv).to_string();
    srv.replica.ids.replid2 = Some(old);
    srv.replica.ids.second_offset = srv.replica.ids.offset + 1;
    srv.debug.replid = Some(new.to_string());
}

/// Promotion (Redis's `shiftReplicationId`): a new id, the old one valid
/// up to the offset reached.
pub fn shift(srv: &mut Server) {
    let old = replid(srv).to_string();
    let new: String = (0..40)
        .map(|_| char::from(b"0123456789abcdef"[(srv.rng.next_u64() % 16) as usize]))
        .collect();
    srv.replica.ids.replid2 = Some(old);
    srv.replica.ids.second_offset = srv.replica.ids.offset + 1;
    srv.debug.replid = Some(new);
    let ids = &srv.replica.ids;
    crate::log::warning(&format!(
        "Setting secondary replication ID to {}, valid up to offset: {}. New replication ID is {}",
        ids.replid2.as_deref().unwrap_or_default(),
        ids.second_offset,
        replid(srv)
    ));
}

/// `master_replid2` and `second_repl_offset` as INFO shows them.
pub fn secondary(srv: &Server) -> (&str, i64) {
    let ids = &srv.replica.ids;
    (
        ids.replid2
            .as_deref()
            .unwrap_or("0000000000000000000000000000000000000000"),
        ids.second_offset,
    )
}
