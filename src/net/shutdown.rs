//! Orderly shutdown: what SHUTDOWN and SIGTERM do before the process exits, including the wait for lagging replicas.
//!
//! As in Redis 7.0: a signal only schedules the shutdown, which the cron
//! carries out (so `SHUTDOWN ABORT` can cancel it, and DEBUG PAUSE-CRON
//! holds it); and without NOW, while replicas have not acknowledged the
//! whole stream, writes are paused, the replicas are asked for an ACK, and
//! the shutdown waits up to `shutdown-timeout` seconds for them. The
//! SHUTDOWN client stays blocked meanwhile: it is answered only if the
//! shutdown fails or is aborted.

use std::sync::atomic::{AtomicPtr, Ordering};

use crate::db::ClientId;
use crate::log;
use crate::persist::Failed;
use crate::server::client::Client;
use crate::server::{Server, ShutdownRequest};

/// What a SHUTDOWN that could not stop the server answers.
pub const SHUTDOWN_FAILED: &str = "Errors trying to SHUTDOWN. Check logs.";

/// A shutdown asked for and not yet done.
#[derive(Debug, Default)]
pub struct Pending {
    pub save: Option<bool>,
    pub force: bool,
    /// SHUTDOWN ... NOW: no wait for replicas.
    pub now: bool,
    /// Waiting for the replicas until this time (unix ms); None while a
    /// signal's shutdown waits for the cron.
    pub deadline_ms: Option<i64>,
    /// The signal that asked ("SIGTERM"), for its log line on failure.
    pub signal: Option<&'static str>,
    /// SHUTDOWN clients blocked until it ends.
    pub clients: Vec<ClientId>,
}

/// What [`request`] did.
pub enum Outcome {
    /// The server stops now.
    Done,
    /// It waits for the replicas (the cron finishes it).
    Waiting,
}

/// SHUTDOWN (or the cron, for a signal): waits for lagging replicas unless
/// NOW or `shutdown-timeout 0`, else shuts down (Redis's `prepareForShutdown`).
pub fn request(
    srv: &mut Server,
    save: Option<bool>,
    force: bool,
    now: bool,
) -> Result<Outcome, Failed> {
    log::warning("User requested shutdown...");
    let timeout = srv.config.get_i64("shutdown-timeout");
    if !now && timeout != 0 && !replicas_in_sync(srv) {
        let p = srv.shutdown_pending.get_or_insert_with(Pending::default);
        p.save = save;
        p.force = force;
        p.deadline_ms = Some(crate::clock::real_now_us() / 1000 + timeout * 1000);
        srv.prop.feed_replicas_only(&[b"REPLCONF", b"GETACK", b"*"]);
        if srv.pause.is_none() {
            srv.pause = Some(crate::server::Pause {
                until_ms: i64::MAX,
                write_only: true,
            });
        }
        log::notice("Waiting for replicas before shutting down.");
        return Ok(Outcome::Waiting);
    }
    finish_replicas_and_save(srv, save, force)?;
    Ok(Outcome::Done)
}

/// Every replica acknowledged the whole stream (Redis's `isReadyToShutdown`).
fn replicas_in_sync(srv: &Server) -> bool {
    let end = srv.prop.repl_offset;
    srv.repl.replicas.iter().all(|r| r.ack_offset == end)
}

/// Logs the replicas still behind, saves, and marks the server stopping
/// (Redis's `finishShutdown`); a failed save cancels the shutdown.
fn finish_replicas_and_save(
    srv: &mut Server,
    save: Option<bool>,
    force: bool,
) -> Result<(), Failed> {
    let end = srv.prop.repl_offset;
    let now = crate::clock::unix_now();
    let mut lagging = 0;
    for r in &srv.repl.replicas {
        if r.ack_offset != end {
            lagging += 1;
            let lag = match r.state {
                crate::repl::ReplicaState::Online => now - r.ack_time,
                _ => 0,
            };
            log::warning(&format!(
                "Lagging replica {} reported offset {} behind master, lag={lag}, state={}.",
                r.name(),
                end - r.ack_offset,
                r.state_name()
            ));
        }
    }
    let n = srv.repl.replicas.len();
    if n > 0 {
        log::notice(&format!(
            "{} of {n} replicas are in sync when shutting down.",
            n - lagging
        ));
    }
    if let Err(e) = prepare_quiet(srv, save, force) {
        cancel(srv);
        return Err(e);
    }
    srv.shutdown = Some(ShutdownRequest { save });
    srv.shutdown_signal.notify_one();
    Ok(())
}

/// The cron's part (Redis's `serverCron`): a signal's shutdown starts
/// here, and a wait for replicas ends once they are in sync or the
/// timeout passed.
pub fn cron(srv: &mut Server) {
    let Some(p) = &srv.shutdown_pending else {
        return;
    };
    match p.deadline_ms {
        None => {
            let (save, force, signal) = (p.save, p.force, p.signal);
            srv.shutdown_pending = None;
            if request(srv, save, force, false).is_err() {
                log::warning(&format!(
                    "{} received but errors trying to shut down the server, check the logs for more information",
                    signal.unwrap_or("SIGTERM")
                ));
            } else if let Some(p) = srv.shutdown_pending.as_mut() {
                p.signal = signal;
            }
        }
        Some(deadline) => {
            if crate::clock::real_now_us() / 1000 >= deadline || replicas_in_sync(srv) {
                let (save, force) = (p.save, p.force);
                let _ = finish_replicas_and_save(srv, save, force);
            }
        }
    }
}

/// A signal asks for a shutdown: the cron carries it out.
pub fn schedule_from_signal(srv: &mut Server, signal: &'static str, param: &str) {
    let (save, force) = signal_flags(srv, param);
    if srv.shutdown_pending.is_none() {
        srv.shutdown_pending = Some(Pending {
            save,
            force,
            signal: Some(signal),
            ..Default::default()
        });
    }
}

/// The SHUTDOWN client waits for the shutdown in progress.
pub fn wait_here(srv: &mut Server, client: &Client) {
    if let Some(p) = srv.shutdown_pending.as_mut() {
        p.clients.push(client.id);
    }
}

/// SHUTDOWN ABORT: false when no shutdown is in progress.
pub fn abort(srv: &mut Server) -> bool {
    if srv.shutdown_pending.is_none() {
        return false;
    }
    cancel(srv);
    log::notice("Shutdown manually aborted.");
    true
}

/// Forgets the shutdown in progress: writes resume and the SHUTDOWN clients
/// waiting for it get an error (Redis's `cancelShutdown`).
fn cancel(srv: &mut Server) {
    let Some(p) = srv.shutdown_pending.take() else {
        return;
    };
    if p.deadline_ms.is_some()
        && srv
            .pause
            .is_some_and(|x| x.until_ms == i64::MAX && x.write_only)
    {
        srv.pause = None;
    }
    for id in p.clients {
        if let Some(cell) = srv.clients.get(&id).cloned() {
            if let Ok(mut c) = cell.state.try_borrow_mut() {
                if crate::server::blocking::unregister(srv, &mut c).is_some() {
                    let e = crate::error::Error::msg(SHUTDOWN_FAILED);
                    c.reply.error_line(&e.text());
                    c.unblocked = true;
                }
            }
            cell.wake.notify_one();
        }
    }
}

/// The first half of a shutdown (Redis's `prepareForShutdown` and the
/// persistence steps of `finishShutdown`): stop the background child and
/// save when asked or when save points are set. Err when the save failed
/// without `force`: the shutdown is cancelled and the server goes on.
pub fn prepare(s: &mut Server, save: Option<bool>, force: bool) -> Result<(), Failed> {
    log::warning("User requested shutdown...");
    prepare_quiet(s, save, force)
}

/// The temp RDB a shutdown's save writes (a leaked C string), null when
/// none is being written: what a second SIGINT removes before it exits.
static SAVING: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// A SIGINT while a shutdown saves ends the process at once, without the
/// half-written temp RDB (Redis's "You insist... exiting now."). Installed
/// once by the binary, next to tokio's own handler.
pub fn install_insist_handler() {
    // SAFETY: the action only loads an atomic and calls unlink, write and
    // _exit, all async-signal-safe; it touches no lock and allocates nothing.
    let _ = unsafe {
        signal_hook_registry::register(libc::SIGINT, || {
            let path = SAVING.load(Ordering::Acquire);
            if !path.is_null() {
                let msg = b"You insist... exiting now.\n";
                libc::write(2, msg.as_ptr().cast(), msg.len());
                libc::unlink(path);
                libc::_exit(1);
            }
        })
    };
}

/// [`prepare`] without its first log line.
fn prepare_quiet(s: &mut Server, save: Option<bool>, force: bool) -> Result<(), Failed> {
    let tmp = crate::persist::snapshot::temp_path(s, std::process::id());
    let c = std::ffi::CString::new(tmp.as_os_str().as_encoded_bytes()).unwrap_or_default();
    let old = SAVING.swap(c.into_raw(), Ordering::AcqRel);
    let done = crate::persist::on_shutdown(s, save, force);
    let ours = SAVING.swap(old, Ordering::AcqRel);
    // SAFETY: `ours` is the pointer into_raw gave just above; nothing else
    // frees it (the handler only reads it, and it is no longer published).
    drop(unsafe { std::ffi::CString::from_raw(ours) });
    done.inspect_err(|_| {
        log::warning("Errors trying to shut down the server. Check the logs for more information.");
    })
}

/// The flags of `shutdown-on-sigterm` / `shutdown-on-sigint` for a signal
/// shutdown: (save, force).
pub fn signal_flags(s: &Server, param: &str) -> (Option<bool>, bool) {
    let words = s.config.get(param).unwrap_or("default");
    let has = |w: &str| words.split_whitespace().any(|x| x == w);
    let save = if has("save") {
        Some(true)
    } else if has("nosave") {
        Some(false)
    } else {
        None
    };
    (save, has("force"))
}

/// The last half: the files that name this process are removed.
pub fn finish(s: &mut Server) {
    if let Some(path) = &s.config.unixsocket {
        log::notice("Removing the unix socket file.");
        let _ = std::fs::remove_file(path);
    }
    if let Some(pid) = &s.config.pidfile {
        log::notice("Removing the pid file.");
        let _ = std::fs::remove_file(pid);
    }
    if let Some(path) = &s.config.port_file {
        // Gone with the port it names, so a harness never reads a stale one.
        let _ = std::fs::remove_file(path);
    }
    log::warning("Redis is now ready to exit, bye bye...");
}
