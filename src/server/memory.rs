//! The server's memory figures: `used_memory` (what maxmemory, INFO and eviction compare), its peak, RSS and the allocator's own statistics.
//!
//! One place answers "how much memory does the server hold?", so the OOM
//! stage, eviction, INFO memory and the RDB `used-mem` field agree.
//! `used_memory` is the counting allocator's total (super::alloc): one
//! relaxed load. RSS and allocator statistics cost a /proc read or a mallctl
//! (jemalloc's epoch refresh merges every arena's statistics: ~90,000
//! instructions), so they are sampled at most every 100 ms (the age of
//! Redis's `cronUpdateMemoryStats` figures), and only when read: a server
//! nobody asks pays nothing for them.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use super::alloc::ALLOCATOR;

/// Highest `used_memory` seen (Redis's `stat_peak_memory`).
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// `used_memory` once the server was set up, before loading data.
static STARTUP: AtomicUsize = AtomicUsize::new(0);

/// Bytes the server has allocated, as Redis's `used_memory` (zmalloc's
/// count of allocator size classes, not RSS). Cheap: one load, and the peak
/// follows it.
#[inline]
pub fn used_memory() -> u64 {
    let used = super::alloc::allocated();
    if used > PEAK.load(Relaxed) {
        PEAK.store(used, Relaxed);
    }
    used as u64
}

/// Highest `used_memory` since start (kept across CONFIG RESETSTAT, as in
/// Redis).
pub fn peak() -> u64 {
    used_memory();
    PEAK.load(Relaxed) as u64
}

/// `used_memory` when the server finished setting up (INFO's
/// `used_memory_startup`).
pub fn startup() -> u64 {
    STARTUP.load(Relaxed) as u64
}

/// Called once the server is set up, before it loads data (as Redis's
/// `InitServerLast`): records the start-up figure and lets the allocator
/// return freed memory to the OS on its own.
pub fn init() {
    allocator::start_background_purge();
    STARTUP.store(super::alloc::allocated(), Relaxed);
    used_memory();
    sample();
}

/// One sample of the slow figures, taken together so their ratios agree.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    /// Process RSS.
    pub rss: u64,
    /// `used_memory` when `rss` was read.
    pub used: u64,
    /// Bytes the allocator handed out (`allocator_allocated`).
    pub allocated: u64,
    /// Bytes in the allocator's active pages (`allocator_active`).
    pub active: u64,
    /// Bytes the allocator holds resident (`allocator_resident`).
    pub resident: u64,
}

static S_RSS: AtomicU64 = AtomicU64::new(0);
static S_USED: AtomicU64 = AtomicU64::new(0);
static S_ALLOCATED: AtomicU64 = AtomicU64::new(0);
static S_ACTIVE: AtomicU64 = AtomicU64::new(0);
static S_RESIDENT: AtomicU64 = AtomicU64::new(0);

/// How old a [`sampled`] figure may be (Redis refreshes its own every
/// cron tick, 100 ms at the default hz).
const SAMPLE_MAX_AGE: Duration = Duration::from_millis(100);
/// When the last [`sample`] was taken.
static SAMPLED_AT: Mutex<Option<Instant>> = Mutex::new(None);

/// Reads RSS and the allocator statistics now and keeps them for
/// [`sampled`].
pub fn sample() {
    let used = used_memory();
    let rss = rss_bytes();
    let (allocated, active, resident) = allocator::stats(used, rss);
    S_RSS.store(rss, Relaxed);
    S_USED.store(used, Relaxed);
    S_ALLOCATED.store(allocated, Relaxed);
    S_ACTIVE.store(active, Relaxed);
    S_RESIDENT.store(resident, Relaxed);
    *SAMPLED_AT.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
}

/// The last [`sample`], taken anew when it is older than 100 ms.
pub fn sampled() -> Sample {
    let at = *SAMPLED_AT.lock().unwrap_or_else(|e| e.into_inner());
    if at.is_none_or(|t| t.elapsed() >= SAMPLE_MAX_AGE) {
        sample();
    }
    Sample {
        rss: S_RSS.load(Relaxed),
        used: S_USED.load(Relaxed),
        allocated: S_ALLOCATED.load(Relaxed),
        active: S_ACTIVE.load(Relaxed),
        resident: S_RESIDENT.load(Relaxed),
    }
}

/// Resident set size of this process, from /proc/self/statm.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}

/// Returns free memory to the OS now (`MEMORY PURGE`, and the cron after
/// many clients left).
pub fn purge() {
    allocator::purge();
}

/// The allocator's own report (`MEMORY MALLOC-STATS`), or `None` when it
/// has none (Redis's answer for libc).
pub fn malloc_stats() -> Option<String> {
    allocator::report()
}

#[cfg(feature = "alloc-jemalloc")]
mod allocator {
    use tikv_jemalloc_ctl::{background_thread, epoch, stats};

    /// jemalloc's background threads purge dirty pages as they decay (Redis
    /// turns them on with `jemalloc-bg-thread yes`), so freed memory goes
    /// back to the OS while the server is idle.
    pub fn start_background_purge() {
        let _ = background_thread::write(true);
    }

    /// allocated / active / resident after refreshing jemalloc's merged
    /// statistics (an epoch advance: a mallctl, hence only in the sample).
    pub fn stats(used: u64, rss: u64) -> (u64, u64, u64) {
        if epoch::advance().is_err() {
            return (used, used, rss);
        }
        let a = stats::allocated::read().unwrap_or(0) as u64;
        let ac = stats::active::read().unwrap_or(0) as u64;
        let r = stats::resident::read().unwrap_or(0) as u64;
        (a, ac, r)
    }

    pub fn purge() {
        // "arena.<MALLCTL_ARENAS_ALL>.purge": every arena's unused dirty pages.
        let name = b"arena.4096.purge\0";
        // SAFETY: a valid mallctl name that takes and returns nothing.
        unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            );
        }
    }

    pub fn report() -> Option<String> {
        let mut out = Vec::new();
        tikv_jemalloc_ctl::stats_print::stats_print(&mut out, Default::default()).ok()?;
        Some(String::from_utf8_lossy(&out).into_owned())
    }
}

#[cfg(all(feature = "alloc-mimalloc", not(feature = "alloc-jemalloc")))]
mod allocator {
    pub fn start_background_purge() {}

    /// mimalloc has no allocated/active split: its committed memory stands
    /// for active and resident.
    pub fn stats(used: u64, _rss: u64) -> (u64, u64, u64) {
        let mut v = [0usize; 8];
        // SAFETY: every out-pointer is a valid usize.
        unsafe {
            let [a, b, c, d, e, f, g, h] = &mut v;
            libmimalloc_sys::mi_process_info(a, b, c, d, e, f, g, h);
        }
        (used, v[5] as u64, v[5] as u64)
    }

    pub fn purge() {
        // SAFETY: collects this thread's and abandoned free pages.
        unsafe { libmimalloc_sys::mi_collect(true) }
    }

    pub fn report() -> Option<String> {
        None
    }
}

#[cfg(not(any(feature = "alloc-jemalloc", feature = "alloc-mimalloc")))]
mod allocator {
    pub fn start_background_purge() {}

    /// glibc keeps no cheap figure for active pages: the counter stands for
    /// allocated and active, RSS for resident.
    pub fn stats(used: u64, rss: u64) -> (u64, u64, u64) {
        (used, used, rss)
    }

    /// glibc keeps freed heap pages otherwise, so resident memory would
    /// stay at its peak after FLUSHALL or after many clients left.
    pub fn purge() {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            extern "C" {
                fn malloc_trim(pad: usize) -> i32;
            }
            // SAFETY: malloc_trim only returns free heap memory to the
            // kernel; it touches no live allocation.
            unsafe {
                malloc_trim(0);
            }
        }
    }

    pub fn report() -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures are taken when read, not by a cron: with no sample yet,
    /// or one past its age, a read takes the process's RSS. (Other test
    /// threads may sample meanwhile: each check holds either way.)
    #[test]
    fn sampled_reads_figures_on_demand() {
        *SAMPLED_AT.lock().unwrap() = None;
        S_RSS.store(0, Relaxed);
        assert!(sampled().rss > 0, "RSS was not read on demand");
        assert!(SAMPLED_AT.lock().unwrap().is_some());
        S_RSS.store(1, Relaxed);
        *SAMPLED_AT.lock().unwrap() = Some(Instant::now() - SAMPLE_MAX_AGE);
        assert!(sampled().rss > 1, "a sample past its age was not refreshed");
    }
}
