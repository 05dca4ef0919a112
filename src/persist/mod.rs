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

pub mod aof;
pub mod child;
pub mod child_info;
pub mod info;
pub mod loading;
pub mod rdb;
pub mod snapshot;

use crate::error::Rejection;
use crate::log;
use crate::server::Server;

/// A persistence step failed; it logged why in Redis's words (the client
/// sees only Redis's short error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failed;

/// The persistence state the server owns (`Server::persist`).
#[derive(Debug, Default)]
pub struct Persist {
    /// The background child (BGSAVE or AOF rewrite), at most one.
    pub child: child::Children,
    /// SAVE/BGSAVE state and statistics.
    pub snapshot: snapshot::Snapshots,
    /// `DEBUG SET-SKIP-CHECKSUM-VALIDATION 1`: RESTORE payloads and RDB
    /// files are taken without checking their CRC64.
    pub skip_checksum: bool,
    /// The load in progress (start-up, DEBUG RELOAD, DEBUG LOADAOF).
    pub loading: Option<loading::Loading>,
}

/// Redis's `debugDelay`, once per key saved (`rdb-key-save-delay`) or
/// loaded (`key-load-delay`), for tests that need a slow save or load: a
/// positive value sleeps that many microseconds; a negative `-n` sleeps one
/// microsecond with probability 1/n (as Redis: rarer sleeps instead of
/// shorter ones, each sleep being a system call).
pub struct KeyDelay {
    usec: i64,
    seed: u64,
}

impl KeyDelay {
    pub fn new(usec: i64) -> KeyDelay {
        KeyDelay {
            usec,
            seed: crate::clock::real_now_us() as u64 | 1,
        }
    }

    /// From the configuration parameter `name`.
    pub fn from_config(srv: &Server, name: &str) -> KeyDelay {
        KeyDelay::new(srv.config.get_i64(name))
    }

    #[inline]
    pub fn wait(&mut self) {
        if self.usec == 0 {
            return;
        }
        let us = if self.usec > 0 {
            self.usec as u64
        } else {
            // xorshift64: any cheap uniform source will do.
            self.seed ^= self.seed << 13;
            self.seed ^= self.seed >> 7;
            self.seed ^= self.seed << 17;
            self.seed.is_multiple_of(self.usec.unsigned_abs()) as u64
        };
        if us > 0 {
            std::thread::sleep(std::time::Duration::from_micros(us));
        }
    }
}

/// A background child ended (reaped by the cron, or stopped by
/// [`child::kill`]): its owner finishes the job.
pub fn child_done(srv: &mut Server, running: child::Running, exit: child::Exit) {
    match running.kind {
        child::Kind::Rdb if srv.repl.socket_child => {
            crate::repl::master::socket_child_done(srv, exit)
        }
        child::Kind::Rdb => {
            snapshot::bgsave_done(srv, running, exit);
            crate::repl::master::rdb_done(srv, exit == child::Exit::Ok);
        }
        child::Kind::Aof => aof::rewrite_done(srv, exit),
    }
}

/// The persistence part of the cron (Redis's `serverCron`): a finished
/// child is reaped and its owner told.
pub fn cron(srv: &mut Server) {
    if srv.persist.child.active() {
        srv.persist.child.info.drain();
        child::check_done(srv);
    }
    snapshot::cron(srv);
}

/// Loads the dataset at start-up, before any client is served (Redis's
/// `loadDataFromDisk`). The AOF, when enabled, takes precedence over the
/// RDB file, as in Redis. Err with the reason when the server must not
/// start (Redis logs it and exits).
pub fn load_at_startup(srv: &mut Server) -> Result<(), String> {
    if aof::load_at_startup(srv).map_err(|_| "the append only file could not be loaded")? {
        return Ok(());
    }
    let loaded = snapshot::load(srv);
    match &loaded {
        // A SHUTDOWN stopped the load: no failure to report.
        Err(text) if srv.shutdown.is_none() => log::warning(text),
        _ => {}
    }
    loaded
}

/// Writes are refused because persisting failed (Redis's
/// `writeCommandsDeniedByDiskError`): a failed BGSAVE while save points
/// are set and `stop-writes-on-bgsave-error yes`. The gate asks this for
/// write commands (and PING), after the OOM stage.
pub fn write_denied(srv: &Server) -> Option<Rejection> {
    if !srv.persist.snapshot.last_bgsave_ok
        && srv.config.get("stop-writes-on-bgsave-error") != Some("no")
        && snapshot::has_save_points(srv)
    {
        return Some(Rejection::MisconfRdb);
    }
    aof::write_denied(srv)
}

/// The persistence part of a shutdown (Redis's `finishShutdown`): the
/// running child is stopped, and the dataset is saved when save points are
/// set (unless `save == Some(false)`) or when asked (`Some(true)`). Err when
/// the save failed and `force` is not set: the server must go on running.
pub fn on_shutdown(srv: &mut Server, save: Option<bool>, force: bool) -> Result<(), Failed> {
    crate::script::ldb_fork::kill_all(srv);
    if srv.persist.child.is(child::Kind::Rdb) {
        log::warning("There is a child saving an .rdb. Killing it!");
        child::kill(srv);
    }
    aof::shutdown(srv, force)?;
    let wanted = match save {
        Some(s) => s,
        None => snapshot::has_save_points(srv),
    };
    if wanted {
        log::notice("Saving the final RDB snapshot before exiting.");
        if snapshot::save(srv).is_err() {
            if force {
                log::warning("Error trying to save the DB. Exit anyway.");
            } else {
                log::warning("Error trying to save the DB, can't exit.");
                return Err(Failed);
            }
        }
    }
    Ok(())
}

/// FLUSHALL's persistence side (Redis's `flushAllDataAndResetRDB`): a
/// running BGSAVE is stopped (it would write the old data), and with save
/// points set the now empty dataset is saved at once.
pub fn after_flushall(srv: &mut Server) {
    if srv.persist.child.is(child::Kind::Rdb) {
        child::kill(srv);
    }
    if snapshot::has_save_points(srv) {
        let _ = snapshot::save(srv);
    }
}
