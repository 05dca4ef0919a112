//! Serving clients while the dataset loads (Redis's `startLoading`, `rdbLoadProgressCallback`, `stopLoading`): progress for INFO, `-LOADING` for the rest.
//!
//! The loaders run on the data thread, so no connection task can run until
//! they return. Every `loading-process-events-interval-bytes` of RDB (every
//! 1024 commands of AOF, as Redis) they call back here, and the
//! blocked-events poller (`script::busy::poll`, Redis's
//! `processEventsWhileBlocked`) accepts connections and answers what clients
//! sent: the gate refuses commands without the `loading` flag with
//! `-LOADING`, INFO reports the progress kept here. The cluster bus is
//! served too (`bus::link::poll_while_blocked`).

use crate::server::Server;

/// AOF commands replayed between two polls (Redis's `loadSingleAppendOnlyFile`).
const AOF_COMMANDS_PER_POLL: u64 = 1024;

/// A load in progress (`Persist::loading`).
#[derive(Debug, Default)]
pub struct Loading {
    /// `loading_start_time`: unix seconds.
    pub start_unix: i64,
    /// `loading_total_bytes`: the size of what is loaded (all AOF files together).
    pub total_bytes: u64,
    /// `loading_rdb_used_mem`: the `used-mem` AUX field of the RDB, once read.
    pub rdb_used_mem: u64,
    /// `loading_loaded_bytes`, refreshed when events are processed.
    pub loaded_bytes: u64,
    /// Bytes of the files loaded before the current one.
    base: u64,
    /// The next position (within the whole load) at which events are processed.
    next_poll: u64,
    /// `loading-process-events-interval-bytes` (0: never).
    interval: u64,
    /// AOF commands replayed since the last poll.
    commands: u64,
}

/// Marks the start of a load of `total_bytes` (Redis's `startLoading`):
/// `loading:1`, and the load counters of the last load reset.
pub fn start(srv: &mut Server, total_bytes: u64) {
    let interval = srv
        .config
        .get_i64("loading-process-events-interval-bytes")
        .max(0) as u64;
    srv.persist.loading = Some(Loading {
        start_unix: crate::clock::real_now_us() / 1_000_000,
        total_bytes,
        interval,
        next_poll: interval,
        ..Loading::default()
    });
    srv.persist.snapshot.last_load_keys = 0;
    srv.persist.snapshot.last_load_expired = 0;
    crate::db::set_loading(true);
}

/// The load ended, loaded or not (Redis's `stopLoading`).
pub fn stop(srv: &mut Server) {
    srv.persist.loading = None;
    crate::db::set_loading(false);
}

/// True while a load started by [`start`] runs.
pub fn active(srv: &Server) -> bool {
    srv.persist.loading.is_some()
}

/// The RDB's `used-mem` AUX field.
pub fn rdb_used_mem(srv: &mut Server, bytes: u64) {
    if let Some(l) = &mut srv.persist.loading {
        l.rdb_used_mem = bytes;
    }
}

/// The loader reached `pos` in the current file: events are processed
/// whenever that crosses the next interval (Redis's
/// `rdbLoadProgressCallback` then `loadingAbsProgress`). True when a
/// SHUTDOWN arrived meanwhile: the loader stops.
#[inline]
pub fn progress(srv: &mut Server, pos: u64) -> bool {
    match &srv.persist.loading {
        Some(l) if l.interval > 0 && l.base + pos >= l.next_poll => poll(srv, pos),
        _ => false,
    }
}

/// One AOF command replayed, ending at `pos` in the current file: events are
/// processed every 1024 commands (Redis's `loadSingleAppendOnlyFile`). True
/// when a SHUTDOWN arrived meanwhile.
#[inline]
pub fn command_replayed(srv: &mut Server, pos: u64) -> bool {
    let Some(l) = &mut srv.persist.loading else {
        return false;
    };
    l.commands += 1;
    if !l.commands.is_multiple_of(AOF_COMMANDS_PER_POLL) {
        return false;
    }
    poll(srv, pos)
}

/// A file of `len` bytes is loaded; later positions are in the next one.
pub fn file_done(srv: &mut Server, len: u64) {
    if let Some(l) = &mut srv.persist.loading {
        l.base += len;
        l.loaded_bytes = l.base;
    }
}

#[cold]
fn poll(srv: &mut Server, pos: u64) -> bool {
    if let Some(l) = &mut srv.persist.loading {
        l.loaded_bytes = l.base + pos;
        l.next_poll = l.loaded_bytes + l.interval.max(1);
    }
    // Redis's loadingAbsProgress keeps the memory peak current.
    crate::server::memory::used_memory();
    crate::script::busy::poll(srv, None, crate::command::gate::Caller::Client);
    crate::cluster::bus::link::poll_while_blocked(srv);
    if crate::net::load_signal::take().is_some() {
        shutdown_on_signal(srv);
    }
    srv.shutdown.is_some()
}

/// SIGTERM or SIGINT during the start-up load: shut down without saving
/// (the data is not all there), as Redis's `whileBlockedCron`; when that
/// fails the load goes on.
#[cold]
pub fn shutdown_on_signal(srv: &mut Server) {
    crate::log::warning("Received shutdown signal during loading, scheduling shutdown.");
    if crate::net::shutdown::prepare(srv, Some(false), false).is_ok() {
        srv.shutdown = Some(crate::server::ShutdownRequest { save: Some(false) });
        srv.shutdown_signal.notify_one();
    } else {
        crate::log::warning("SIGTERM received but errors trying to shut down the server, check the logs for more information");
    }
}

/// The `loading_*` lines INFO persistence adds while loading (Redis's
/// `genRedisInfoString`).
pub fn info(srv: &Server, out: &mut String) {
    use std::fmt::Write;
    let Some(l) = &srv.persist.loading else {
        return;
    };
    let mut perc = 0.0;
    let mut remaining: i64 = 1;
    if l.total_bytes > 0 {
        perc = l.loaded_bytes as f64 / l.total_bytes as f64 * 100.0;
        remaining = l.total_bytes as i64 - l.loaded_bytes as i64;
    } else if l.rdb_used_mem > 0 {
        // used-mem is only a rough estimate of the file size: never 100%.
        perc = (l.loaded_bytes as f64 / l.rdb_used_mem as f64 * 100.0).min(99.99);
        remaining = (l.rdb_used_mem as i64 - l.loaded_bytes as i64).max(1);
    }
    let elapsed = crate::clock::real_now_us() / 1_000_000 - l.start_unix;
    let eta = if elapsed == 0 {
        1
    } else {
        elapsed * remaining / (l.loaded_bytes as i64 + 1)
    };
    let _ = write!(
        out,
        "loading_start_time:{}\r\n\
         loading_total_bytes:{}\r\n\
         loading_rdb_used_mem:{}\r\n\
         loading_loaded_bytes:{}\r\n\
         loading_loaded_perc:{perc:.2}\r\n\
         loading_eta_seconds:{eta}\r\n",
        l.start_unix, l.total_bytes, l.rdb_used_mem, l.loaded_bytes
    );
}
