//! The AOF buffer to the incr file before any reply goes out (Redis's `flushAppendOnlyFile`): fsync policies, postponed writes, write errors.

use std::fs::File;
use std::io::Write;
use std::sync::Arc;

use super::{now_secs, Aof, Fsync, State};
use crate::server::Server;

/// Seconds between two logs of the same write error (`AOF_WRITE_LOG_ERROR_RATE`).
const WRITE_LOG_ERROR_RATE: i64 = 30;
/// The buffer's capacity kept once written (Redis frees a large one).
const KEEP_BUFFER: usize = 64 * 1024;
/// ENOSPC, what Redis records for a short write.
const ENOSPC: i32 = 28;

/// Bytes ever appended to the AOF: written ones plus the buffer.
pub(super) fn appended_total(srv: &Server) -> u64 {
    srv.aof.written_total + srv.prop.aof.as_ref().map_or(0, |s| s.buf.len() as u64)
}

/// `no-appendfsync-on-rewrite yes` while a child runs.
pub(super) fn skip_fsync(srv: &Server) -> bool {
    srv.persist.child.active() && srv.config.get("no-appendfsync-on-rewrite") == Some("yes")
}

/// Writes the buffer (`force`: even while a background fsync runs).
pub fn flush(srv: &mut Server, force: bool) {
    let skip = skip_fsync(srv);
    let mut empty = Vec::new();
    let buf = match srv.prop.aof.as_mut() {
        Some(sink) => &mut sink.buf,
        None => &mut empty,
    };
    srv.aof.flush_buf(buf, force, skip);
}

/// At shutdown (Redis's `prepareForShutdown`): a running rewrite is
/// stopped, unless it writes the first base of an AOF just turned on (then
/// the shutdown is refused, or goes on with `force`); everything buffered
/// is written and fsynced.
pub fn shutdown(srv: &mut Server, force: bool) -> Result<(), crate::persist::Failed> {
    if srv.aof.rewriting() {
        if srv.aof.state == State::WaitRewrite {
            if !force {
                crate::log::warning("Writing initial AOF, can't exit.");
                return Err(crate::persist::Failed);
            }
            crate::log::warning("Writing initial AOF. Exit anyway.");
        }
        crate::log::warning("There is a child rewriting the AOF. Killing it!");
        super::bgrewrite::kill_child(srv);
    }
    if srv.aof.state == State::Off {
        return Ok(());
    }
    crate::log::notice("Calling fsync() on the AOF file.");
    flush(srv, true);
    if let Some(f) = &srv.aof.file {
        if let Err(e) = f.sync_data() {
            crate::log::warning(&format!(
                "Fail to fsync the AOF file: {}.",
                super::manifest::os(&e)
            ));
        }
    }
    Ok(())
}

/// Redis's `aofWrite`: retries short writes; the bytes written, and the
/// error that stopped it.
fn write_all(mut f: &File, buf: &[u8]) -> (usize, Option<std::io::Error>) {
    let mut done = 0;
    while done < buf.len() {
        match f.write(&buf[done..]) {
            Ok(0) => return (done, Some(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (done, Some(e)),
        }
    }
    (done, None)
}

impl Aof {
    fn flush_buf(&mut self, buf: &mut Vec<u8>, force: bool, skip_fsync: bool) {
        let Some(file) = self.file.clone() else {
            return;
        };
        let now = now_secs();
        let lag = self.last_incr_fsync_offset != self.last_incr_size;
        if buf.is_empty() {
            // Data written without an fsync yet (everysec: no new write
            // came to trigger one; always: the policy just changed).
            let due = match self.fsync {
                Fsync::Everysec => lag && now > self.last_fsync && self.bio.pending() == 0,
                Fsync::Always => lag,
                Fsync::No => false,
            };
            if due && !skip_fsync {
                self.fsync_by_policy(&file, now, false);
            }
            return;
        }
        let sync_in_progress = self.fsync == Fsync::Everysec && self.bio.pending() > 0;
        if sync_in_progress && !force {
            // A write would wait for the running fsync anyway: postpone it,
            // for up to two seconds (the cron tries again).
            if self.flush_postponed_start == 0 {
                self.flush_postponed_start = now;
                return;
            } else if now - self.flush_postponed_start < 2 {
                return;
            }
            self.delayed_fsync += 1;
            crate::log::notice("Asynchronous AOF fsync is taking too long (disk is busy?). Writing the AOF buffer without waiting for fsync to complete, this may slow down Redis.");
        }
        if self.flush_sleep_us > 0 {
            std::thread::sleep(std::time::Duration::from_micros(self.flush_sleep_us));
        }
        let (written, err) = write_all(&file, buf);
        self.flush_postponed_start = 0;
        if written != buf.len() {
            self.write_failed(&file, buf, written, err, now);
            return;
        }
        if self.write_error.take().is_some() {
            crate::log::warning("AOF write error looks solved, Redis can write again.");
        }
        self.current_size += written as u64;
        self.last_incr_size += written as u64;
        self.written_total += written as u64;
        buf.clear();
        if buf.capacity() > KEEP_BUFFER {
            *buf = Vec::new();
        }
        if !skip_fsync {
            self.fsync_by_policy(&file, now, sync_in_progress);
        }
    }

    /// A write that did not complete: the partial tail is cut off when
    /// possible and the data stays buffered for the next try; writes are
    /// refused until one succeeds. With `always` the reply is already
    /// promised, so the server exits, as Redis does.
    fn write_failed(
        &mut self,
        file: &File,
        buf: &mut Vec<u8>,
        mut written: usize,
        err: Option<std::io::Error>,
        now: i64,
    ) {
        let can_log = now - self.last_write_error_log > WRITE_LOG_ERROR_RATE;
        if can_log {
            self.last_write_error_log = now;
        }
        let errno;
        if written == 0 {
            let e = err.unwrap_or_else(|| std::io::ErrorKind::WriteZero.into());
            if can_log {
                crate::log::warning(&format!(
                    "Error writing to the AOF file: {}",
                    super::manifest::os(&e)
                ));
            }
            errno = e.raw_os_error().unwrap_or(ENOSPC);
        } else {
            if can_log {
                crate::log::warning(&format!(
                    "Short write while writing to the AOF file: (nwritten={written}, expected={})",
                    buf.len()
                ));
            }
            match file.set_len(self.last_incr_size) {
                Ok(()) => written = 0,
                Err(e) => {
                    if can_log {
                        crate::log::warning(&format!("Could not remove short write from the append-only file.  Redis may refuse to load the AOF the next time it starts.  ftruncate: {}", super::manifest::os(&e)));
                    }
                }
            }
            errno = ENOSPC;
        }
        if self.fsync == Fsync::Always {
            crate::log::warning("Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting...");
            std::process::exit(1);
        }
        self.write_error = Some(errno);
        if written > 0 {
            self.current_size += written as u64;
            self.last_incr_size += written as u64;
            self.written_total += written as u64;
            buf.drain(..written);
        }
    }

    fn fsync_by_policy(&mut self, file: &Arc<File>, now: i64, sync_in_progress: bool) {
        match self.fsync {
            Fsync::Always => {
                // The sync thread fsyncs it; replies wait in `before_reply`.
                self.request_sync(file);
                self.last_incr_fsync_offset = self.last_incr_size;
                self.last_fsync = now;
            }
            Fsync::Everysec if now > self.last_fsync => {
                if !sync_in_progress {
                    self.bio.fsync(file);
                    self.last_incr_fsync_offset = self.last_incr_size;
                }
                self.last_fsync = now;
            }
            _ => {}
        }
    }

    /// Starts appending to `file` (of `size` bytes); the previous file is
    /// fsynced and closed in the background.
    pub(super) fn switch_file(&mut self, file: File, size: u64) {
        if let Some(old) = self.file.take() {
            if self.sync_lag() {
                // Replies wait on these bytes: on disk before the sync
                // thread moves to the new file.
                super::group::fsync_or_exit(&old);
                self.synced_in_place();
            }
            self.bio.fsync_and_close(old);
            self.last_fsync = now_secs();
        }
        self.file = Some(Arc::new(file));
        self.last_incr_size = size;
        self.last_incr_fsync_offset = size;
    }

    /// Stops appending: the file is fsynced and closed (`stopAppendOnly`).
    pub(super) fn close_file(&mut self) {
        if let Some(f) = self.file.take() {
            match f.sync_data() {
                Ok(()) => self.last_fsync = now_secs(),
                Err(e) => crate::log::warning(&format!(
                    "Fail to fsync the AOF file: {}",
                    super::manifest::os(&e)
                )),
            }
            // The AOF is off: replies waiting for the sync thread go out
            // (after a failed fsync too, as Redis's do).
            self.synced_in_place();
        }
        self.last_incr_size = 0;
        self.last_incr_fsync_offset = 0;
    }

    /// Jobs the fsync thread has not finished (INFO `aof_pending_bio_fsync`).
    pub fn pending_fsyncs(&self) -> usize {
        self.bio.pending()
    }

    /// The errno refusing writes: the last write's, or a background fsync's.
    pub fn disk_error(&self) -> Option<i32> {
        self.write_error.or_else(|| self.bio.error())
    }

    pub(super) fn clear_errors(&mut self) {
        if self.bio.error().is_some() {
            crate::log::warning("AOF reopen, just ignore the AOF fsync error in bio job");
            self.bio.clear_error();
        }
        if self.write_error.take().is_some() {
            crate::log::warning("AOF reopen, just ignore the last error.");
        }
    }

    pub(super) fn postponed(&self) -> bool {
        self.flush_postponed_start != 0
    }
}
