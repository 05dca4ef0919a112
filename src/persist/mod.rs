//! Persistence in Redis's own formats: RDB snapshots, the multi-part AOF, DUMP payloads.
//!
//! Layout (each file owned by one concern):
//! - `rdb/`: the RDB codec (object encodings, whole-dataset write and load),
//!   shared by snapshots, the AOF's RDB preamble, DUMP/RESTORE and FUNCTION DUMP.
//! - `child.rs`: the one background child (fork), shared by BGSAVE and the
//!   AOF rewrite.
//! - `snapshot.rs`: SAVE, BGSAVE, save points, loading at start-up.
//! - `aof/`: the append-only file fed by the propagation stream.
//!
//! Files are written to a temporary name, fsynced and renamed, so a crash
//! mid-write never leaves a broken file under the real name.

pub mod child;
pub mod rdb;

use crate::server::Server;

/// The persistence state the server owns (`Server::persist`).
#[derive(Debug, Default)]
pub struct Persist {
    /// The background child (BGSAVE or AOF rewrite), at most one.
    pub child: child::Children,
}

/// A background child ended (reaped by the cron, or stopped by
/// [`child::kill`]): its owner finishes the job.
pub fn child_done(srv: &mut Server, running: child::Running, exit: child::Exit) {
    match running.kind {
        child::Kind::Rdb | child::Kind::Aof => {
            let _ = (srv, exit);
        }
    }
}

/// The persistence part of the cron (Redis's `serverCron`): a finished
/// child is reaped and its owner told.
pub fn cron(srv: &mut Server) {
    if srv.persist.child.active() {
        child::check_done(srv);
    }
}
