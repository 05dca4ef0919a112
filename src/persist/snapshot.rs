//! RDB snapshots: SAVE, BGSAVE (in a forked child), save points, the bgsave error state, loading at start-up.
//!
//! Paths are `dir` + `dbfilename` taken from the configuration (always an
//! absolute `dir`), so servers embedded in one process never depend on the
//! working directory. A save writes `temp-<pid>.rdb` in `dir` (the pid of
//! the process writing it, as Redis), fsyncs it, renames it over the dump
//! and fsyncs the directory: a crash at any point leaves the previous dump
//! whole.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::child::{self, Exit, Kind, Running};
use super::Failed;
use crate::log;
use crate::server::Server;

/// Seconds before a failed BGSAVE is retried by the save points (Redis's
/// CONFIG_BGSAVE_RETRY_DELAY).
const RETRY_DELAY: i64 = 5;
/// With `rdb-save-incremental-fsync yes`, written data is synced every this
/// many bytes (Redis's REDIS_AUTOSYNC_BYTES), so the final fsync is short.
const AUTOSYNC_BYTES: u64 = 4 << 20;

/// The snapshot state (Redis's `lastbgsave_status`, `rdb_save_time_*`, ...).
#[derive(Debug)]
pub struct Snapshots {
    /// INFO `rdb_last_bgsave_status`: false after a failed BGSAVE (or a
    /// failed fork) until a save succeeds.
    pub last_bgsave_ok: bool,
    /// Unix seconds of the last BGSAVE attempt (the retry delay counts from it).
    pub last_bgsave_try: i64,
    /// `ks.dirty` when the running BGSAVE forked: what it saved.
    pub dirty_before_bgsave: u64,
    /// INFO `rdb_saves`: SAVEs and BGSAVEs started.
    pub saves: u64,
    /// A BGSAVE waits for the running child (BGSAVE SCHEDULE, BGSAVE in MULTI).
    pub scheduled: bool,
    /// INFO `rdb_last_bgsave_time_sec`: -1 before the first BGSAVE ends.
    pub last_bgsave_secs: i64,
    /// INFO `rdb_last_load_keys_loaded` / `_expired`.
    pub last_load_keys: u64,
    pub last_load_expired: u64,
}

impl Default for Snapshots {
    fn default() -> Self {
        Snapshots {
            last_bgsave_ok: true,
            last_bgsave_try: 0,
            dirty_before_bgsave: 0,
            saves: 0,
            scheduled: false,
            last_bgsave_secs: -1,
            last_load_keys: 0,
            last_load_expired: 0,
        }
    }
}

fn unix_now() -> i64 {
    crate::clock::real_now_us() / 1_000_000
}

/// `dir`/`dbfilename`.
pub fn rdb_path(srv: &Server) -> PathBuf {
    srv.config
        .path(srv.config.get("dbfilename").unwrap_or("dump.rdb"))
}

pub fn temp_path(srv: &Server, pid: u32) -> PathBuf {
    srv.config.path(format!("temp-{pid}.rdb"))
}

/// The save points (`save` config): (seconds, changes) pairs.
pub fn save_points(srv: &Server) -> Vec<(i64, u64)> {
    let words: Vec<i64> = srv
        .config
        .get("save")
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    words
        .chunks_exact(2)
        .map(|c| (c[0], c[1].max(0) as u64))
        .collect()
}

/// True when at least one save point is set (Redis's `saveparamslen > 0`).
pub fn has_save_points(srv: &Server) -> bool {
    !save_points(srv).is_empty()
}

/// A writer that syncs what it wrote every [`AUTOSYNC_BYTES`] when asked to
/// (`rdb-save-incremental-fsync`).
struct AutoSync<'a> {
    out: io::BufWriter<&'a File>,
    file: &'a File,
    every: Option<u64>,
    since_sync: u64,
}

impl Write for AutoSync<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        if let Some(every) = self.every {
            self.since_sync += n as u64;
            if self.since_sync >= every {
                self.out.flush()?;
                self.file.sync_data()?;
                self.since_sync = 0;
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Writes the dataset to `tmp`, syncs it, renames it to `path` and syncs
/// the directory (Redis's `rdbSave` without the bookkeeping). Logs Redis's
/// texts on failure and removes the temp file.
pub fn write_file(srv: &Server, path: &Path, tmp: &Path) -> Result<(), Failed> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file = match File::create(tmp) {
        Ok(f) => f,
        Err(e) => {
            log::warning(&format!(
                "Failed opening the temp RDB file {} (in server root dir {}) for saving: {}",
                tmp.file_name().unwrap_or_default().to_string_lossy(),
                dir.display(),
                crate::config::os_error(&e)
            ));
            return Err(Failed);
        }
    };
    let incremental = srv.config.get("rdb-save-incremental-fsync") != Some("no");
    let written = (|| -> Result<(), (&'static str, io::Error)> {
        let mut out = AutoSync {
            out: io::BufWriter::with_capacity(64 << 10, &file),
            file: &file,
            every: incremental.then_some(AUTOSYNC_BYTES),
            since_sync: 0,
        };
        super::rdb::write_dataset(srv, &mut out).map_err(|e| ("rdbSaveRio", e))?;
        out.flush().map_err(|e| ("fflush", e))?;
        file.sync_all().map_err(|e| ("fsync", e))?;
        Ok(())
    })();
    drop(file);
    if let Err((op, e)) = written {
        log::warning(&format!(
            "Write error saving DB on disk({op}): {}",
            crate::config::os_error(&e)
        ));
        let _ = std::fs::remove_file(tmp);
        return Err(Failed);
    }
    if let Err(e) = std::fs::rename(tmp, path) {
        log::warning(&format!(
            "Error moving temp DB file {} on the final destination {} (in server root dir {}): {}",
            tmp.file_name().unwrap_or_default().to_string_lossy(),
            path.file_name().unwrap_or_default().to_string_lossy(),
            dir.display(),
            crate::config::os_error(&e)
        ));
        let _ = std::fs::remove_file(tmp);
        return Err(Failed);
    }
    if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
        log::warning(&format!(
            "Write error saving DB on disk(fsyncFileDir): {}",
            crate::config::os_error(&e)
        ));
        return Err(Failed);
    }
    log::notice("DB saved on disk");
    Ok(())
}

/// A synchronous save in the data thread (SAVE, SHUTDOWN, FLUSHALL, DEBUG
/// RELOAD): on success the dirty counter restarts and LASTSAVE moves.
pub fn save(srv: &mut Server) -> Result<(), Failed> {
    let path = rdb_path(srv);
    let tmp = temp_path(srv, std::process::id());
    write_file(srv, &path, &tmp)?;
    srv.ks.dirty = 0;
    srv.last_save_unix = unix_now();
    srv.persist.snapshot.last_bgsave_ok = true;
    Ok(())
}

/// Starts a BGSAVE (Redis's `rdbSaveBackground`): Err when a child already
/// runs or fork failed (then `rdb_last_bgsave_status` turns `err`).
pub fn bgsave(srv: &mut Server) -> Result<(), Failed> {
    if srv.persist.child.active() {
        return Err(Failed);
    }
    let snap = &mut srv.persist.snapshot;
    snap.saves += 1;
    snap.dirty_before_bgsave = srv.ks.dirty;
    snap.last_bgsave_try = unix_now();
    let path = rdb_path(srv);
    let spawned = child::spawn(srv, Kind::Rdb, move |srv| {
        write_file(srv, &path, &temp_path(srv, std::process::id()))
    });
    match spawned {
        Ok(pid) => {
            log::notice(&format!("Background saving started by pid {pid}"));
            Ok(())
        }
        Err(e) => {
            srv.persist.snapshot.last_bgsave_ok = false;
            log::warning(&format!(
                "Can't save in background: fork: {}",
                crate::config::os_error(&e)
            ));
            Err(Failed)
        }
    }
}

/// A BGSAVE child ended (Redis's `backgroundSaveDoneHandlerDisk`).
pub fn bgsave_done(srv: &mut Server, running: Running, exit: Exit) {
    match exit {
        Exit::Ok => {
            log::notice("Background saving terminated with success");
            srv.ks.dirty = srv
                .ks
                .dirty
                .saturating_sub(srv.persist.snapshot.dirty_before_bgsave);
            srv.last_save_unix = unix_now();
            srv.persist.snapshot.last_bgsave_ok = true;
        }
        Exit::Err(_) => {
            log::warning("Background saving error");
            srv.persist.snapshot.last_bgsave_ok = false;
        }
        Exit::Killed(sig) => {
            log::warning(&format!("Background saving terminated by signal {sig}"));
            let _ = std::fs::remove_file(temp_path(srv, running.pid as u32));
            if exit.is_failure() {
                srv.persist.snapshot.last_bgsave_ok = false;
            }
        }
    }
    srv.persist.snapshot.last_bgsave_secs = unix_now() - running.started_unix;
}

/// The snapshot part of the cron (Redis's `serverCron`), with no child
/// running: a save point whose time and changes are reached starts a BGSAVE
/// (after a failed one, only once the retry delay passed); a scheduled
/// BGSAVE starts when nothing else runs.
pub fn cron(srv: &mut Server) {
    let now = unix_now();
    let retry_ok = |srv: &Server| {
        let s = &srv.persist.snapshot;
        s.last_bgsave_ok || now - s.last_bgsave_try > RETRY_DELAY
    };
    if !srv.persist.child.active() && retry_ok(srv) {
        let since = now - srv.last_save_unix;
        let dirty = srv.ks.dirty;
        let due = save_points(srv)
            .into_iter()
            .find(|&(secs, changes)| dirty >= changes && since > secs);
        if let Some((secs, changes)) = due {
            log::notice(&format!("{changes} changes in {secs} seconds. Saving..."));
            let _ = bgsave(srv);
        }
    }
    if !srv.persist.child.active()
        && srv.persist.snapshot.scheduled
        && retry_ok(srv)
        && bgsave(srv).is_ok()
    {
        srv.persist.snapshot.scheduled = false;
    }
}

/// Loads `dir`/`dbfilename` if it exists (Redis's `loadDataFromDisk` for
/// RDB). Err with the line Redis logs last before exiting when the file is
/// there but cannot be read or loaded (the codec logged the details).
pub fn load(srv: &mut Server) -> Result<(), String> {
    let path = rdb_path(srv);
    let data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(format!(
                "Fatal error loading the DB: {}. Exiting.",
                crate::config::os_error(&e)
            ))
        }
    };
    let start = Instant::now();
    super::loading::start(srv, data.len() as u64);
    let loaded = super::rdb::load_dataset(srv, &data);
    super::loading::stop(srv);
    let info =
        loaded.map_err(|_| "Terminating server after rdb file reading failure.".to_string())?;
    srv.persist.snapshot.last_load_keys = info.keys;
    srv.persist.snapshot.last_load_expired = info.expired_skipped;
    log::notice(&format!(
        "DB loaded from disk: {:.3} seconds",
        start.elapsed().as_secs_f64()
    ));
    if let Some(history) = info.repl {
        crate::repl::master::restore_history(srv, &history);
    }
    Ok(())
}
