//! The child's reports to the parent (Redis's child info pipe): keys saved so far and copy-on-write size.
//!
//! Before forking, the parent opens a pipe; the child keeps its write end
//! (every other inherited descriptor is closed) and writes fixed-size
//! messages, each far below `PIPE_BUF` so a write is atomic. While saving,
//! the child reports about once a second (checked every 1024 keys, as
//! Redis); at a successful end it reports once more, marked final. The
//! copy-on-write size is the child's `Private_Dirty` memory, read from
//! `/proc/self/smaps` at most 1% of the time (Redis's duty cycle): the
//! pages the parent changed since the fork are the ones left private to
//! the child. The parent drains the pipe from the cron and when the child
//! ends, and shows the figures in INFO persistence.

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::Instant;

use crate::log;

/// The write end in the child (-1 in the parent: reports are no-ops).
static FD: AtomicI32 = AtomicI32::new(-1);
/// Keys the child's job saved so far.
static KEYS: AtomicU64 = AtomicU64::new(0);

/// A message: kind (0 = progress, 1 = final), keys, cow bytes, and the
/// unix time in µs of the cow reading.
const MSG: usize = 1 + 8 + 8 + 8;
/// Redis's CHILD_COW_DUTY_CYCLE: a reading that took t waits 100 t.
const COW_DUTY_CYCLE: u64 = 100;

/// The parent's view of the running child's reports (INFO `current_*`)
/// and of the last finished ones (`rdb_last_cow_size`, `aof_last_cow_size`).
#[derive(Debug, Default)]
pub struct Reports {
    /// The pipe's read end while a child runs (non-blocking).
    pub fd: Option<i32>,
    pub cow_peak: u64,
    pub cow: u64,
    /// Unix µs of the last cow reading (0: none yet).
    pub cow_updated_us: i64,
    pub keys_processed: u64,
    /// A final report arrived (the job succeeded).
    pub finished: bool,
    pub rdb_last_cow: u64,
    pub aof_last_cow: u64,
}

/// A pipe for the next child: (read end, write end), both close-on-exec,
/// the read end non-blocking. None when the system refuses one (the child
/// then reports nothing, as in Redis).
pub fn open_pipe() -> Option<(i32, i32)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills the two-element array on success.
    let ok = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } == 0;
    ok.then_some((fds[0], fds[1]))
}

/// In the child, after the fork: reports go to `fd`.
pub fn enter_child(fd: i32, aof: bool) {
    FD.store(fd, Ordering::Relaxed);
    KEYS.store(0, Ordering::Relaxed);
    AOF_CHILD.store(aof, Ordering::Relaxed);
}

/// The child's job saved one more key; about once a second the parent
/// hears how many so far. Free when not in a child.
#[inline]
pub fn key_saved() {
    if FD.load(Ordering::Relaxed) < 0 {
        return;
    }
    let n = KEYS.fetch_add(1, Ordering::Relaxed);
    if n & 1023 == 0 {
        child_state(|s| {
            if s.last_sent.is_none_or(|t| t.elapsed().as_millis() >= 1000) {
                s.send(false, n + 1);
                s.last_sent = Some(Instant::now());
            }
        });
    }
}

/// The job succeeded: the final report, and Redis's log line about it.
pub fn send_final() {
    if FD.load(Ordering::Relaxed) < 0 {
        return;
    }
    child_state(|s| {
        s.send(true, 0);
        log::notice(&format!(
            "Fork CoW for {}: current {} MB, peak {} MB, average {} MB",
            child_name(),
            s.cow >> 20,
            s.peak >> 20,
            (s.sum / s.readings.max(1)) >> 20
        ));
    });
}

/// The child's side: the last cow reading and its cost.
#[derive(Default)]
struct ChildState {
    last_sent: Option<Instant>,
    cow: u64,
    peak: u64,
    sum: u64,
    readings: u64,
    cow_updated_us: i64,
    cost_us: u64,
    read_at: Option<Instant>,
}

thread_local! {
    static STATE: std::cell::RefCell<ChildState> = std::cell::RefCell::new(ChildState::default());
}

fn child_state(f: impl FnOnce(&mut ChildState)) {
    STATE.with(|s| f(&mut s.borrow_mut()));
}

impl ChildState {
    fn send(&mut self, last: bool, keys: u64) {
        let due = last
            || self
                .read_at
                .is_none_or(|t| t.elapsed().as_micros() as u64 > self.cost_us * COW_DUTY_CYCLE);
        if due {
            let start = Instant::now();
            self.cow = private_dirty();
            self.cost_us = start.elapsed().as_micros() as u64;
            self.read_at = Some(Instant::now());
            self.cow_updated_us = crate::clock::real_now_us();
            self.peak = self.peak.max(self.cow);
            self.sum += self.cow;
            self.readings += 1;
            if self.cow > 0 && !last {
                log::verbose(&format!(
                    "Fork CoW for {}: current {} MB, peak {} MB, average {} MB",
                    child_name(),
                    self.cow >> 20,
                    self.peak >> 20,
                    (self.sum / self.readings) >> 20
                ));
            }
        }
        let mut m = [0u8; MSG];
        m[0] = last as u8;
        m[1..9].copy_from_slice(&keys.to_le_bytes());
        m[9..17].copy_from_slice(&self.cow.to_le_bytes());
        m[17..25].copy_from_slice(&self.cow_updated_us.to_le_bytes());
        let fd = FD.load(Ordering::Relaxed);
        // SAFETY: writing our own buffer to our own descriptor.
        let n = unsafe { libc::write(fd, m.as_ptr().cast(), MSG) };
        if n != MSG as isize {
            log::warning(&format!(
                "Child failed reporting info to parent, exiting. {}",
                std::io::Error::last_os_error()
            ));
            // SAFETY: leaving the child without running destructors.
            unsafe { libc::_exit(1) }
        }
    }
}

/// The child is an AOF rewrite (logged as "AOF"), else a BGSAVE ("RDB").
static AOF_CHILD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn child_name() -> &'static str {
    if AOF_CHILD.load(Ordering::Relaxed) {
        "AOF"
    } else {
        "RDB"
    }
}

/// Bytes of this process's private dirty memory (Redis's
/// `zmalloc_get_private_dirty`): the sum of `Private_Dirty` in smaps.
fn private_dirty() -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    text.lines()
        .filter_map(|l| l.strip_prefix("Private_Dirty:"))
        .filter_map(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .sum::<u64>()
        * 1024
}

impl Reports {
    /// A child was just forked with this read end: the `current_*`
    /// figures start over (Redis's `resetChildState` at the fork).
    pub fn start(&mut self, fd: Option<i32>) {
        self.close();
        self.fd = fd;
        self.cow_peak = 0;
        self.cow = 0;
        self.cow_updated_us = 0;
        self.keys_processed = 0;
        self.finished = false;
    }

    /// Reads every complete report waiting in the pipe.
    pub fn drain(&mut self) {
        let Some(fd) = self.fd else { return };
        let mut m = [0u8; MSG];
        loop {
            // SAFETY: reading into our own buffer from our own descriptor.
            let n = unsafe { libc::read(fd, m.as_mut_ptr().cast(), MSG) };
            if n != MSG as isize {
                return;
            }
            let u64_at = |i: usize| u64::from_le_bytes(m[i..i + 8].try_into().unwrap_or_default());
            self.cow = u64_at(9);
            self.cow_peak = self.cow_peak.max(self.cow);
            self.cow_updated_us = u64_at(17) as i64;
            if m[0] == 1 {
                self.finished = true;
            } else {
                self.keys_processed = u64_at(1);
            }
        }
    }

    /// The child ended: its last reports are read, a successful RDB or AOF
    /// child's peak becomes `rdb_last_cow_size` / `aof_last_cow_size`, and
    /// the `current_*` figures go back to zero.
    pub fn child_ended(&mut self, aof: bool) {
        self.drain();
        if self.finished {
            if aof {
                self.aof_last_cow = self.cow_peak;
            } else {
                self.rdb_last_cow = self.cow_peak;
            }
        }
        self.start(None);
    }

    fn close(&mut self) {
        if let Some(fd) = self.fd.take() {
            // SAFETY: closing the read end we own.
            unsafe { libc::close(fd) };
        }
    }
}
