//! SCRIPT DEBUG YES: the debugging session runs in a forked child serving only the debugging client, so its changes die with it.
//!
//! The child keeps the client's socket and nothing else (every other
//! descriptor is closed, as for a persistence child), runs the EVAL under
//! the debugger with the blocking I/O of `ldb`, writes the reply and leaves
//! with `_exit`. The parent forgets the client without a word: its end of
//! the socket is swapped for a dead one first, so that closing the
//! connection (whose task shuts the socket down) cannot reach the child's.
//! Children are reaped by the cron and killed at shutdown, as Redis's.

use crate::server::Server;

/// Forks for a session on the client socket `fd`: Ok(None) in the child,
/// Ok(Some(pid)) in the parent, whose side of the socket is then dead.
pub fn fork(srv: &mut Server, fd: i32) -> std::io::Result<Option<i32>> {
    // SAFETY: fork has no preconditions; the child only runs the session
    // (module notes) and ends in `finish`.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: our own process; the child ignores the signals the
        // parent handles (Redis's LDB child does), and keeps only `fd`.
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            crate::persist::child::close_inherited_fds(&[fd]);
        }
        crate::log::enter_child();
        crate::log::warning("Redis forked for debugging eval");
        return Ok(None);
    }
    srv.script.ldb_children.push(pid);
    detach(fd);
    Ok(Some(pid))
}

/// Points the parent's descriptor `fd` at a socket whose peer is closed,
/// leaving the connection to the child.
fn detach(fd: i32) {
    let mut pair = [-1; 2];
    // SAFETY: plain syscalls on descriptors we own; on failure the
    // descriptor is left as it is (the connection then closes for both).
    unsafe {
        if libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            pair.as_mut_ptr(),
        ) == 0
        {
            libc::dup2(pair[0], fd);
            libc::close(pair[0]);
            libc::close(pair[1]);
        }
    }
}

/// The child's end: the reply is written and the process leaves.
pub fn finish(fd: i32, reply: &[u8]) -> ! {
    super::ldb::write_all(fd, reply);
    crate::log::warning("Lua debugging session child exiting");
    // SAFETY: _exit runs no destructor and flushes nothing the parent holds.
    unsafe { libc::_exit(0) }
}

/// Leaves the child after a panic in its session.
pub fn abort() -> ! {
    // SAFETY: as in `finish`.
    unsafe { libc::_exit(1) }
}

/// Reaps the sessions that ended (from the cron).
pub fn reap(srv: &mut Server) {
    srv.script.ldb_children.retain(|&pid| {
        let mut status = 0;
        // SAFETY: waitpid on our own child, with a valid status pointer.
        unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) == 0 }
    });
}

/// Kills every session (at shutdown).
pub fn kill_all(srv: &mut Server) {
    for pid in srv.script.ldb_children.drain(..) {
        crate::log::warning(&format!("Killing debugging session {pid}"));
        // SAFETY: signalling and reaping our own child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
}

/// C's `strerror` text of an OS error (Redis's fork failure message).
pub fn strerror(e: &std::io::Error) -> String {
    let code = e.raw_os_error().unwrap_or(0);
    // SAFETY: strerror returns a valid C string for any code.
    unsafe { std::ffi::CStr::from_ptr(libc::strerror(code)) }
        .to_string_lossy()
        .into_owned()
}
