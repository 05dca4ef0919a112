//! Orderly shutdown: what SHUTDOWN and SIGTERM do before the process exits.

use crate::log;
use crate::server::Server;

pub fn finish(s: &mut Server) {
    log::warning("User requested shutdown...");
    crate::persist::aof::shutdown(s);
    if let Some(path) = &s.config.unixsocket {
        log::notice("Removing the unix socket file.");
        let _ = std::fs::remove_file(path);
    }
    if let Some(pid) = &s.config.pidfile {
        log::notice("Removing the pid file.");
        let _ = std::fs::remove_file(pid);
    }
    log::warning("Redis is now ready to exit, bye bye...");
}
