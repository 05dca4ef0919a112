//! The append-only file: Redis 7's multi-part AOF (manifest, base and incr files in `appenddirname`), fed by the propagation stream.
//!
//! - `feed`: the buffer propagation appends every command to.
//! - `writer`: the buffer to the incr file before replies go out
//!   (`appendfsync always|everysec|no`), write errors and their recovery.
//! - `group`: `appendfsync always` as group commit on a sync thread.
//! - `bio`: the background fsync thread.
//! - `manifest`: the manifest's format and atomic update.
//! - `rewrite`: a base file (RDB preamble, or commands as Redis's
//!   `rewriteAppendOnlyFileRio`).
//! - `bgrewrite`: BGREWRITEAOF, the automatic rewrite, turning the AOF on.
//! - `load`: start-up and DEBUG LOADAOF: manifest, base, incr files replayed.
//! - `status`: INFO fields and the MISCONF gate.

mod bgrewrite;
mod bio;
pub mod feed;
mod group;
pub mod load;
pub mod manifest;
pub mod rewrite;
mod status;
mod stream;
mod writer;

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

pub use bgrewrite::{bgrewriteaof_command, config_changed, cron, rewrite_done};
pub(crate) use bgrewrite::{start_append_only, stop_append_only};
pub use group::{before_park, before_reply};
pub use load::{debug_loadaof, load_at_startup};
pub use status::{buffer_len, info, write_denied};
pub use writer::shutdown;

use manifest::Manifest;

/// Redis's `aof_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Off,
    On,
    /// Turned on, waiting for the first rewrite to write a base.
    WaitRewrite,
}

/// `appendfsync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    Always,
    Everysec,
    No,
}

impl Fsync {
    fn from_config(cfg: &crate::config::Config) -> Fsync {
        match cfg.get("appendfsync") {
            Some("always") => Fsync::Always,
            Some("no") => Fsync::No,
            _ => Fsync::Everysec,
        }
    }
}

/// The AOF's state (Redis's `server.aof_*`).
pub struct Aof {
    pub state: State,
    pub fsync: Fsync,
    pub manifest: Manifest,
    /// `dir` as the AOF was loaded: rewrite temp files go there.
    pub workdir: PathBuf,
    /// `appenddirname` (within `workdir`) and `appendfilename`, both immutable.
    pub dirname: PathBuf,
    pub filename: String,
    /// The incr file being appended to.
    file: Option<Arc<File>>,
    /// Base plus incr files (INFO `aof_current_size`).
    pub current_size: u64,
    /// Size after the last rewrite (INFO `aof_base_size`).
    pub rewrite_base_size: u64,
    /// Bytes in the current incr file, and how many of them are fsynced.
    last_incr_size: u64,
    last_incr_fsync_offset: u64,
    /// Unix seconds of the last fsync (or background fsync request).
    last_fsync: i64,
    /// everysec: when a write started waiting for a running fsync (0: none).
    flush_postponed_start: i64,
    pub delayed_fsync: u64,
    /// The last write failed with this errno (writes are refused meanwhile).
    pub write_error: Option<i32>,
    /// Unix seconds of the last write error logged.
    last_write_error_log: i64,
    bio: bio::Bio,
    pub rewrite_scheduled: bool,
    /// Unix seconds the running rewrite started (-1: none).
    pub rewrite_time_start: i64,
    pub rewrite_time_last: i64,
    pub lastbgrewrite_ok: bool,
    pub rewrites: u64,
    pub rewrite_failures: u64,
    /// The running rewrite, if any.
    child: Option<bgrewrite::Child>,
    /// Bytes ever written to incr files (`group` counts what is on disk).
    written_total: u64,
    /// The `appendfsync always` sync thread, once started.
    group: Option<group::Group>,
    /// Unix seconds of the last retry of a failed write (once a second).
    last_retry: i64,
    /// The automatic rewrite's back-off after failures (`aofRewriteLimited`).
    next_delay_minutes: i64,
    next_rewrite_time: i64,
    /// `aof-disable-auto-gc`: history files are kept.
    disable_auto_gc: bool,
    /// `DEBUG AOF-FLUSH-SLEEP <us>`: each write of buffered data to the
    /// AOF sleeps this long first (a test hook that widens the window
    /// between a write and the replies that wait for it).
    pub flush_sleep_us: u64,
}

impl Default for Aof {
    fn default() -> Aof {
        Aof {
            state: State::Off,
            fsync: Fsync::Everysec,
            manifest: Manifest::default(),
            workdir: PathBuf::from("."),
            dirname: PathBuf::from("appendonlydir"),
            filename: "appendonly.aof".into(),
            file: None,
            current_size: 0,
            rewrite_base_size: 0,
            last_incr_size: 0,
            last_incr_fsync_offset: 0,
            last_fsync: now_secs(),
            flush_postponed_start: 0,
            delayed_fsync: 0,
            write_error: None,
            last_write_error_log: 0,
            bio: Default::default(),
            rewrite_scheduled: false,
            rewrite_time_start: -1,
            rewrite_time_last: -1,
            lastbgrewrite_ok: true,
            rewrites: 0,
            rewrite_failures: 0,
            child: None,
            flush_sleep_us: 0,
            written_total: 0,
            group: None,
            last_retry: 0,
            next_delay_minutes: 0,
            next_rewrite_time: 0,
            disable_auto_gc: false,
        }
    }
}

impl Aof {
    /// Reads the immutable names and the fsync policy from the config.
    pub fn configure(&mut self, cfg: &crate::config::Config) {
        let text =
            |n: &str| String::from_utf8_lossy(cfg.get_bytes(n).unwrap_or_default()).into_owned();
        self.workdir = cfg.path("");
        self.dirname = cfg.path(text("appenddirname"));
        self.filename = text("appendfilename");
        self.fsync = Fsync::from_config(cfg);
        self.disable_auto_gc = cfg.get("aof-disable-auto-gc") == Some("yes");
    }

    /// Bytes in the incr file being appended to.
    fn incr_size(&self) -> u64 {
        self.last_incr_size
    }

    /// `appenddirname` as configured (a plain name, Redis refuses paths), for log lines.
    pub fn dirname_shown(&self) -> std::borrow::Cow<'_, str> {
        self.dirname
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
    }

    /// A file of the AOF directory.
    fn path(&self, name: &str) -> PathBuf {
        self.dirname.join(name)
    }

    /// True while a rewrite child runs.
    /// True when replies wait for the `always` sync thread (see `group`).
    pub fn syncs_every_write(&self) -> bool {
        self.state != State::Off && self.fsync == Fsync::Always
    }

    pub fn rewriting(&self) -> bool {
        self.child.is_some()
    }
}

/// Unix seconds (Redis's `server.unixtime`).
fn now_secs() -> i64 {
    crate::clock::real_now_us() / 1_000_000
}

/// Size of a file of the AOF directory; Redis's log line when it can't be
/// read (`getAppendOnlyFileSize`).
fn file_size(aof: &Aof, name: &str) -> std::io::Result<u64> {
    std::fs::metadata(aof.path(name))
        .map(|m| m.len())
        .inspect_err(|e| {
            crate::log::warning(&format!(
                "Unable to obtain the AOF file {name} length. stat: {}",
                manifest::os(e)
            ))
        })
}
