//! The one background child (Redis's `server.child_type`): fork, run a job in the child, reap it from the cron.
//!
//! Why fork: a BGSAVE (and an AOF rewrite) must write a point-in-time image
//! of the whole dataset while the data thread goes on answering clients.
//! `fork` gives that image for free: the kernel shares every page
//! copy-on-write, so the child sees the dataset exactly as it was at the
//! fork, walks it with the same code SAVE uses, and the parent pays only for
//! the pages that writes touch meanwhile (at most the dataset size, in
//! practice a fraction). A fork-less snapshot (cloning the dataset, or
//! versioning every value so a walker on the data thread can skip later
//! changes) would cost either a full copy up front, or a check on every
//! write forever plus a save that competes with clients for the one data
//! thread; files would also differ from Redis in when they are consistent.
//! Fork is what Redis does and what its tests and operators expect
//! (`latest_fork_usec`, `rdb_last_cow_size`, a `redis-rdb-bgsave` process).
//!
//! Fork safety (only the forking thread exists in the child):
//! - The job runs on the data thread, which forks, so the dataset it reads
//!   is consistent: no other thread touches data.
//! - glibc's malloc re-initialises its arena locks in the child (it takes
//!   them around `fork`), so the job may allocate.
//! - The child never touches tokio (its reactor and timers belong to the
//!   parent), never runs Lua, never uses `std::io::stdout()` (another thread
//!   may have held its lock at the fork: the log writes with `write(2)` in
//!   the child, see `log::enter_child`), and leaves with `_exit`, so no
//!   destructor runs and no buffer the parent also holds is flushed twice.
//! - Every inherited descriptor above stderr is closed first, as Redis
//!   closes its listening sockets in the child: a child outliving a killed
//!   parent must not keep the port, and the job opens what it writes itself.
//! - A panic in the job is caught and becomes exit code 1; it never unwinds
//!   into the parent's code.
//!
//! The parent records pid, kind and start; [`check_done`] (called by the
//! cron) reaps with `waitpid(WNOHANG)` and hands the [`Exit`] to the owner
//! through `persist::child_done`. A child killed on purpose ([`kill`],
//! SIGUSR1) is reported as killed by SIGUSR1, which owners do not count as
//! an error, as in Redis.

use std::time::Instant;

use super::Failed;
use crate::log;
use crate::server::Server;

/// What a child is for (Redis's CHILD_TYPE_RDB / CHILD_TYPE_AOF).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Rdb,
    Aof,
}

/// The running child, as the parent knows it.
#[derive(Clone, Copy, Debug)]
pub struct Running {
    pub pid: i32,
    pub kind: Kind,
    pub started: Instant,
    /// Unix seconds at the fork.
    pub started_unix: i64,
}

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Exit code 0: the job succeeded.
    Ok,
    /// A non-zero exit code: the job failed (it logged why).
    Err(i32),
    /// Terminated by this signal (SIGUSR1 when killed on purpose).
    Killed(i32),
}

impl Exit {
    /// True unless the child was stopped on purpose (SIGUSR1) or succeeded:
    /// what makes `rdb_last_bgsave_status` read `err`.
    pub fn is_failure(self) -> bool {
        match self {
            Exit::Ok => false,
            Exit::Err(_) => true,
            Exit::Killed(sig) => sig != libc::SIGUSR1,
        }
    }
}

/// The parent's side: at most one child at a time, and the fork statistics.
#[derive(Debug, Default)]
pub struct Children {
    pub running: Option<Running>,
    /// Microseconds the last fork took (INFO `latest_fork_usec`).
    pub last_fork_usec: u64,
    /// INFO `total_forks`.
    pub total_forks: u64,
    /// Keys in the dataset at the last fork (INFO `current_save_keys_total`).
    pub keys_total: u64,
    /// What the child reports while it runs (see `child_info`).
    pub info: super::child_info::Reports,
}

impl Children {
    /// True while a child of any kind runs (Redis's `hasActiveChildProcess`).
    pub fn active(&self) -> bool {
        self.running.is_some()
    }

    /// True while a child of this kind runs.
    pub fn is(&self, kind: Kind) -> bool {
        self.running.is_some_and(|r| r.kind == kind)
    }
}

/// Forks a child that runs `job` over the server and exits with 0 when it returns `Ok`, 1
/// otherwise (the job logs its own error text). Returns the child's pid;
/// an error when a child is already running (EEXIST, as Redis) or fork failed.
///
/// `job` runs in the child only, over the parent's memory as it was at the
/// fork; it must use plain std I/O (see the module notes).
pub fn spawn<F>(srv: &mut Server, kind: Kind, job: F) -> std::io::Result<i32>
where
    F: FnOnce(&Server) -> Result<(), Failed>,
{
    spawn_keeping(srv, kind, -1, job)
}

/// [`spawn`], with the descriptor `keep` left open in the child (the write
/// end of the pipe a diskless replication sync streams through; -1: none).
pub fn spawn_keeping<F>(srv: &mut Server, kind: Kind, keep: i32, job: F) -> std::io::Result<i32>
where
    F: FnOnce(&Server) -> Result<(), Failed>,
{
    if srv.persist.child.active() {
        return Err(std::io::Error::from_raw_os_error(libc::EEXIST));
    }
    let start = Instant::now();
    let pipe = super::child_info::open_pipe();
    let close = |fd: i32| {
        // SAFETY: closing a pipe end we opened.
        unsafe { libc::close(fd) };
    };
    // SAFETY: fork has no preconditions; the child side below only does
    // what is fork-safe (module notes) and always ends in _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        in_child(pipe.map(|p| p.1), keep, kind, || job(srv));
    }
    if let Some((_, w)) = pipe {
        close(w);
    }
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        if let Some((r, _)) = pipe {
            close(r);
        }
        return Err(e);
    }
    srv.persist.child.info.start(pipe.map(|p| p.0));
    let keys_total = srv.ks.dbs.iter().map(|db| db.len() as u64).sum();
    let c = &mut srv.persist.child;
    c.keys_total = keys_total;
    c.last_fork_usec = start.elapsed().as_micros() as u64;
    c.total_forks += 1;
    c.running = Some(Running {
        pid,
        kind,
        started: start,
        started_unix: crate::clock::real_now_us() / 1_000_000,
    });
    crate::db::set_forked(true);
    let ms = c.last_fork_usec / 1000;
    crate::cmd::server::latency::monitor_sample(srv, "fork", ms);
    Ok(pid)
}

/// The child's whole life: set up, run, report, `_exit`. Never returns.
/// `report` is the write end of the info pipe and `keep` the caller's
/// descriptor (-1: none), both kept open.
fn in_child<F: FnOnce() -> Result<(), Failed>>(
    report: Option<i32>,
    keep: i32,
    kind: Kind,
    job: F,
) -> ! {
    // SAFETY: plain syscalls on our own process; SIG_DFL handlers so a
    // SIGUSR1 (kill) or SIGTERM ends the child at once instead of reaching
    // the parent's tokio handlers, whose pipes are closed below.
    unsafe {
        for sig in [libc::SIGUSR1, libc::SIGTERM, libc::SIGINT] {
            libc::signal(sig, libc::SIG_DFL);
        }
        close_inherited_fds(&[report.unwrap_or(-1), keep]);
    }
    log::enter_child();
    if let Some(fd) = report {
        super::child_info::enter_child(fd, kind == Kind::Aof);
    }
    let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
        .map(|r| r.is_ok())
        .unwrap_or(false);
    if ok {
        super::child_info::send_final();
    }
    // SAFETY: _exit ends the process without running destructors or
    // flushing buffers shared with the parent.
    unsafe { libc::_exit(if ok { 0 } else { 1 }) }
}

/// Closes every descriptor above stderr (listening sockets, clients, the
/// reactor) except those in `keep` (the info pipe, a replication pipe; -1:
/// none): close_range(2) where the kernel has it, else one by one.
pub(crate) unsafe fn close_inherited_fds(keep: &[i32]) {
    let mut kept: Vec<u32> = keep
        .iter()
        .filter(|&&fd| fd >= 3)
        .map(|&fd| fd as u32)
        .collect();
    kept.sort_unstable();
    let mut ranges = Vec::with_capacity(kept.len() + 1);
    let mut lo = 3u32;
    for fd in kept {
        if fd > lo {
            ranges.push((lo, fd - 1));
        }
        lo = lo.max(fd + 1);
    }
    ranges.push((lo, u32::MAX));
    let mut done = true;
    for &(lo, hi) in &ranges {
        if lo <= hi && libc::syscall(libc::SYS_close_range, lo, hi, 0u32) != 0 {
            done = false;
        }
    }
    if done {
        return;
    }
    let max = match libc::sysconf(libc::_SC_OPEN_MAX) {
        n if n > 0 => n.min(1 << 20) as i32,
        _ => 1024,
    };
    for fd in (3..max).filter(|fd| !keep.contains(fd)) {
        libc::close(fd);
    }
}

/// The cron's check (Redis's `checkChildrenDone`): when the child has
/// ended, its owner hears how (`persist::child_done`).
pub fn check_done(srv: &mut Server) {
    if let Some((running, exit)) = reap(srv) {
        super::child_done(srv, running, exit);
    }
}

/// Reaps a finished child without waiting: clears the record and returns
/// what ran and how it ended.
fn reap(srv: &mut Server) -> Option<(Running, Exit)> {
    let running = srv.persist.child.running?;
    let mut status = 0;
    // SAFETY: waitpid on our own child with a valid status pointer.
    let pid = unsafe { libc::waitpid(running.pid, &mut status, libc::WNOHANG) };
    if pid == 0 {
        return None;
    }
    if pid < 0 {
        // The child is gone without a status we can read (ECHILD): treat it
        // as failed rather than waiting for it forever.
        log::warning(&format!(
            "waitpid() returned an error: {}. child_type: {}, child_pid = {}",
            std::io::Error::last_os_error(),
            kind_name(running.kind),
            running.pid
        ));
        srv.persist.child.running = None;
        crate::db::set_forked(false);
        return Some((running, Exit::Err(-1)));
    }
    srv.persist.child.running = None;
    crate::db::set_forked(false);
    srv.persist
        .child
        .info
        .child_ended(running.kind == Kind::Aof);
    Some((running, exit_of(status)))
}

fn exit_of(status: i32) -> Exit {
    if libc::WIFSIGNALED(status) {
        Exit::Killed(libc::WTERMSIG(status))
    } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Exit::Ok
    } else if libc::WIFEXITED(status) {
        Exit::Err(libc::WEXITSTATUS(status))
    } else {
        Exit::Err(-1)
    }
}

/// Stops the running child with SIGUSR1 (not an error for its owner) and
/// waits for it, so the caller may start another at once. The owner hears
/// of it as of any end (`persist::child_done`, usually
/// `Exit::Killed(SIGUSR1)`), so it cleans up (e.g. removes its temp file).
/// Returns what was stopped.
pub fn kill(srv: &mut Server) -> Option<Kind> {
    let running = srv.persist.child.running?;
    // SAFETY: signalling and waiting for our own child.
    let status = unsafe {
        libc::kill(running.pid, libc::SIGUSR1);
        let mut status = 0;
        while libc::waitpid(running.pid, &mut status, 0) < 0 {
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        status
    };
    srv.persist.child.running = None;
    crate::db::set_forked(false);
    srv.persist
        .child
        .info
        .child_ended(running.kind == Kind::Aof);
    super::child_done(srv, running, exit_of(status));
    Some(running.kind)
}

/// The name Redis logs for a child type.
pub fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Rdb => "RDB",
        Kind::Aof => "AOF",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_decoding() {
        // A normal exit: status = code << 8; a signal: status = signo.
        assert_eq!(exit_of(0), Exit::Ok);
        assert_eq!(exit_of(1 << 8), Exit::Err(1));
        assert_eq!(exit_of(libc::SIGUSR1), Exit::Killed(libc::SIGUSR1));
        assert!(!Exit::Killed(libc::SIGUSR1).is_failure());
        assert!(Exit::Killed(libc::SIGKILL).is_failure());
        assert!(Exit::Err(1).is_failure());
    }

    fn wait_reaped(srv: &mut Server) {
        // The child is ours and finishes on its own: block until it has.
        while srv.persist.child.active() {
            check_done(srv);
            std::thread::yield_now();
        }
    }

    #[test]
    fn spawn_runs_the_job_in_a_child_and_reaps_it() {
        let mut srv = Server::new(crate::Config::default());
        let path = std::env::temp_dir().join(format!("oxidis-child-{}", std::process::id()));
        let p2 = path.clone();
        let me = std::process::id();
        let pid = spawn(&mut srv, Kind::Rdb, move |_| {
            // Runs in another process: prove it by writing our pid there.
            std::fs::write(&p2, std::process::id().to_string()).map_err(|_| Failed)
        })
        .expect("fork");
        assert!(srv.persist.child.is(Kind::Rdb));
        assert_eq!(srv.persist.child.total_forks, 1);
        // A second child is refused while one runs (EEXIST, as Redis).
        let again = spawn(&mut srv, Kind::Aof, |_| Ok(()));
        assert_eq!(
            again.err().and_then(|e| e.raw_os_error()),
            Some(libc::EEXIST)
        );
        wait_reaped(&mut srv);
        let written = std::fs::read_to_string(&path).expect("the child wrote");
        assert_eq!(written, pid.to_string());
        assert_ne!(written, me.to_string());
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn kill_stops_a_running_child() {
        let mut srv = Server::new(crate::Config::default());
        spawn(&mut srv, Kind::Aof, |_| loop {
            std::thread::sleep(std::time::Duration::from_millis(10));
        })
        .expect("fork");
        assert_eq!(kill(&mut srv), Some(Kind::Aof));
        assert!(!srv.persist.child.active());
        assert_eq!(kill(&mut srv), None);
    }
}
