//! DEBUG RESTART and CRASH-AND-RECOVER: the process executes its own binary again, as Redis's `restartServer`.

use std::os::unix::process::CommandExt;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::command::Args;
use crate::error::{text, CmdResult, Error};
use crate::log;
use crate::server::Ctx;

/// Set when the server is the process (the binary's `run_main`): a server
/// embedded in another program never replaces that program's image.
static OWNS_PROCESS: AtomicBool = AtomicBool::new(false);

/// Lets DEBUG RESTART and CRASH-AND-RECOVER re-execute this process.
pub fn allow() {
    OWNS_PROCESS.store(true, Ordering::Relaxed);
}

/// ```text
/// DEBUG RESTART [milliseconds]
/// DEBUG CRASH-AND-RECOVER [milliseconds]
/// ```
/// No reply: every connection closes and, after the delay, the same
/// process (same pid) runs the binary again with its original arguments.
/// RESTART first rewrites the config file (when there is one) and shuts
/// down properly (saving when save points are set); CRASH-AND-RECOVER
/// skips both. When the restart cannot happen the reason is logged and the
/// caller gets `failed to restart the server. Check server logs.`.
pub fn restart(ctx: &mut Ctx, args: &Args, graceful: bool) -> CmdResult {
    let mut delay = 0;
    if args.len() >= 3 {
        delay = crate::types::number::parse_i64(args.at(2))
            .ok_or(Error::NotInteger)?
            .max(0);
    }
    restart_server(ctx, graceful, delay as u64);
    Err(Error::msg(text::DEBUG_RESTART_FAILED))
}

/// Returns only when the restart could not start (logged).
fn restart_server(ctx: &mut Ctx, graceful: bool, delay_ms: u64) {
    if !OWNS_PROCESS.load(Ordering::Relaxed) {
        log::warning("Can't restart: the server is embedded in another program");
        return;
    }
    let exe = std::env::current_exe().unwrap_or_default();
    if !executable(&exe) {
        log::warning(&format!(
            "Can't restart: this process has no permissions to execute {}",
            exe.display()
        ));
        return;
    }
    if graceful {
        if let Some(path) = ctx.srv.config.config_file.clone() {
            let users = super::config::acl_user_lines(ctx.srv);
            let cfg = &ctx.srv.config;
            if let Err(e) = crate::config::rewrite::rewrite_with_users(cfg, &path, Some(&users)) {
                log::warning(&format!(
                    "Can't restart: configuration rewrite process failed: {e}"
                ));
                return;
            }
        }
        if crate::net::shutdown::prepare(ctx.srv, None, false).is_err() {
            log::warning("Can't restart: error preparing for shutdown");
            return;
        }
        crate::net::shutdown::finish(ctx.srv);
    }
    close_descriptors();
    if delay_ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
    }
    let _ = std::process::Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .exec();
    // SAFETY: nothing can be done once the descriptors are gone: exit.
    unsafe { libc::_exit(1) }
}

/// Redis's `access(executable, X_OK)`.
fn executable(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// Closes every descriptor but stdin, stdout and stderr (listeners and
/// clients go at once, as in Redis; the new image opens its own).
fn close_descriptors() {
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_else(|_| (3..4096).collect());
    for fd in fds.into_iter().filter(|&fd| fd > 2) {
        // SAFETY: closing a descriptor this process may hold; the process
        // image is replaced right after, nothing uses them again.
        unsafe { libc::close(fd) };
    }
}
