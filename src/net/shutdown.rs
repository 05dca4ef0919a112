//! Orderly shutdown: what SHUTDOWN and SIGTERM do before the process exits.

use crate::log;
use crate::persist::Failed;
use crate::server::Server;

/// The first half of a shutdown (Redis's `prepareForShutdown` and the
/// persistence steps of `finishShutdown`): stop the background child and
/// save when asked or when save points are set. Err when the save failed
/// without `force`: the shutdown is cancelled and the server goes on.
pub fn prepare(s: &mut Server, save: Option<bool>, force: bool) -> Result<(), Failed> {
    log::warning("User requested shutdown...");
    crate::persist::on_shutdown(s, save, force).inspect_err(|_| {
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
