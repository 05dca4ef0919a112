//! `appendfsync always` as group commit: a dedicated thread fdatasyncs what was written while the data thread runs on, and no reply leaves before the bytes appended ahead of it are on disk.
//!
//! The invariant, "reply after disk": a connection takes its output, notes
//! how many bytes the AOF had been appended by then (its target: every
//! write that output can reflect, its own and the ones it may have read),
//! writes them to the file, and sends nothing until the sync thread reports
//! an fdatasync that began after those bytes were written. Replies of one
//! connection leave in order (its task writes them one after the other).
//!
//! Redis fsyncs on its only thread in `beforeSleep`, so nothing runs during
//! the fsync. Here the data thread keeps running the other clients' commands
//! meanwhile, and the next fdatasync covers all of them: the batch grows
//! with the load. After an fdatasync the thread waits for the connections
//! it released to come back with their next writes (as many waits as it
//! ended) before starting the next one: without that, clients split into
//! two groups that take turns, each fdatasync covering half of them (what
//! Redis does at P1). That wait is bounded by twice the time released
//! connections have lately taken to come back, and by half the last
//! fdatasync: a slow fdatasync (the disk's tail) or a client that does not
//! come back then costs the others little.
//!
//! When the data thread runs out of work it fdatasyncs itself before it
//! sleeps (tokio's `on_thread_park`, Redis's `beforeSleep`), after the
//! same gather: at P1 that is cheaper than waking the sync thread, whose
//! wake-up competes with the clients for the CPU. The sync thread is woken
//! only once a request has waited `KICK_AFTER` (the data thread busy
//! meanwhile): a later request wakes it, and each waiting connection's own
//! timer at that deadline does, so no reply waits on the data thread
//! finding time to park.

use std::cell::RefCell;
use std::fs::File;
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::{Fsync, State};
use crate::server::Server;

/// The sync thread's handle, kept in `Aof::group` (started on first use).
pub struct Group {
    shared: Arc<Shared>,
}

/// What the data thread and the sync thread share.
struct Shared {
    /// Bytes (counted as `Aof::written_total`) known to be on disk.
    synced: AtomicU64,
    /// Wakes the connections waiting for `synced` to grow.
    done: Notify,
    want: Mutex<Want>,
    /// Wakes the sync thread when `want` changes.
    kick: Condvar,
}

/// The newest request: the file being appended to and the bytes written to
/// it (and to the files before it) by then; and the connections waiting.
#[derive(Default)]
struct Want {
    file: Option<Arc<File>>,
    upto: u64,
    stop: bool,
    /// The target of each connection waiting to reply.
    waiting: Vec<u64>,
    /// Waits ever started (`waiting` pushes).
    arrivals: u64,
    /// The sync thread sleeps until `upto` grows: a request wakes it.
    idle: bool,
    /// The gathering sync thread sleeps until `arrivals` reaches this (then
    /// the join that reaches it wakes it; `u64::MAX` otherwise). Wake-ups
    /// only when they change its decision: one per fdatasync, not one per
    /// connection.
    kick_at: u64,
    /// An fdatasync is running (the sync thread's or the data thread's).
    busy: bool,
    /// The data thread synced while the sync thread gathered.
    inline_ran: bool,
    /// When the oldest request not yet covered was made.
    since: Option<Instant>,
    /// The data thread's gather after its own fdatasync, and whether a
    /// waiter armed a timer for its deadline.
    park_gather: Option<(Gather, bool)>,
    park_back: Return,
}

/// Before the next fdatasync: `arrivals` to reach `until`, or `deadline`.
struct Gather {
    until: u64,
    /// When the last fdatasync released its connections.
    released: Instant,
    deadline: Instant,
}

/// How long released connections take to come back, as a moving average
/// of the gathers (one that timed out counts its bound, so the estimate
/// grows while they come back slower than it).
#[derive(Default)]
struct Return {
    estimate: Option<Duration>,
}

impl Return {
    fn record(&mut self, sample: Duration) {
        self.estimate = Some(match self.estimate {
            Some(e) => (e * 7 + sample) / 8,
            None => sample,
        });
    }

    /// The wait for returning connections after an fdatasync that took `took`.
    fn bound(&self, took: Duration) -> Duration {
        match self.estimate {
            Some(e) => (took / 2).min(e * 2),
            None => took / 2,
        }
    }
}

impl Group {
    /// Starts the sync thread; without one, `request` fsyncs in place.
    fn start() -> Group {
        let shared = Arc::new(Shared::new());
        let worker = shared.clone();
        PARK.with(|p| *p.borrow_mut() = Arc::downgrade(&shared));
        let spawned = std::thread::Builder::new()
            .name("aof_fsync_always".into())
            .spawn(move || worker.run());
        if let Err(e) = spawned {
            crate::log::warning(&format!("Can't start the AOF fsync thread: {e}"));
            shared.lock().stop = true;
        }
        Group { shared }
    }

    /// Asks for the first `upto` bytes ever written (the last of them to
    /// `file`) to reach the disk. Called after the write(2) returned.
    pub(super) fn request(&self, file: &Arc<File>, upto: u64) {
        if self.synced() >= upto {
            return;
        }
        let mut want = self.shared.lock();
        if want.stop {
            // No thread: fsync here rather than never.
            drop(want);
            fsync_or_exit(file);
            self.mark_synced(upto);
            return;
        }
        if want.upto < upto {
            want.upto = upto;
            want.file = Some(file.clone());
        }
        let now = Instant::now();
        let since = *want.since.get_or_insert(now);
        if want.idle && !want.busy && now - since >= KICK_AFTER {
            self.shared.kick.notify_one();
        }
    }

    /// `request`, for a connection that then waits for `upto` (counted by
    /// the sync thread's gathering).
    fn join(&self, file: &Arc<File>, upto: u64) -> Timers {
        let mut arm = Timers {
            gather: None,
            kick: Some(Instant::now() + KICK_AFTER),
        };
        {
            let mut want = self.shared.lock();
            if !want.stop {
                want.waiting.push(upto);
                want.arrivals += 1;
                if want.arrivals >= want.kick_at {
                    self.shared.kick.notify_one();
                }
                if let Some((g, armed)) = &mut want.park_gather {
                    if !*armed {
                        *armed = true;
                        arm.gather = Some(g.deadline);
                    }
                }
            }
        }
        self.request(file, upto);
        arm
    }

    pub(super) fn synced(&self) -> u64 {
        self.shared.synced.load(Ordering::Acquire)
    }

    /// The data thread fsynced by itself (a file switched or closed).
    pub(super) fn mark_synced(&self, upto: u64) {
        self.shared.complete(&mut self.shared.lock(), upto);
        self.shared.done.notify_waiters();
    }

    /// Resolves once `synced` reaches `target`.
    async fn wait(shared: Arc<Shared>, target: u64, mut timers: Timers) {
        loop {
            let mut done = pin!(shared.done.notified());
            // Registered before the check: a completion between the check
            // and the await still wakes us.
            done.as_mut().enable();
            if shared.synced.load(Ordering::Acquire) >= target {
                return;
            }
            let next = match (timers.gather, timers.kick) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let Some(at) = next else {
                done.await;
                continue;
            };
            tokio::select! {
                _ = done => {}
                _ = tokio::time::sleep_until(at.into()) => {
                    // The gather's deadline: waking was the point (the
                    // data thread then parks and fdatasyncs).
                    timers.gather = timers.gather.filter(|&g| g > at);
                    if timers.kick.is_some_and(|k| k <= at) {
                        timers.kick = None;
                        shared.kick_if_waiting();
                    }
                }
            }
        }
    }
}

thread_local! {
    /// The group of the server running on this thread, for `before_park`.
    static PARK: RefCell<std::sync::Weak<Shared>> = const { RefCell::new(std::sync::Weak::new()) };
}

/// How long a request waits for the data thread to park and fdatasync
/// before the sync thread is woken to do it.
const KICK_AFTER: Duration = Duration::from_millis(2);

/// A waiting connection's timers: the data thread's gather deadline (it
/// armed it), and when it wakes the sync thread if still not covered.
struct Timers {
    gather: Option<Instant>,
    kick: Option<Instant>,
}

/// The data thread's runtime is about to park (nothing left to run): as
/// Redis in `beforeSleep`, it fdatasyncs what replies wait for itself,
/// unless the sync thread is already in an fdatasync.
pub fn before_park() {
    if let Some(shared) = PARK.with(|p| p.borrow().upgrade()) {
        park_sync(&shared);
    }
}

/// `before_park`'s work: fdatasyncs what is wanted, unless the connections
/// the last one released are still coming back (its gather).
fn park_sync(shared: &Shared) {
    let (file, upto) = {
        let mut want = shared.lock();
        if want.stop || want.busy || want.upto <= shared.synced.load(Ordering::Acquire) {
            return;
        }
        let Some(f) = want.file.clone() else { return };
        let now = Instant::now();
        if let Some((g, _)) = &want.park_gather {
            let sample = if want.arrivals >= g.until {
                now - g.released
            } else if now >= g.deadline {
                g.deadline - g.released
            } else {
                // Released connections still coming back: park (a
                // waiter's timer wakes the thread at the deadline).
                return;
            };
            want.park_back.record(sample);
            want.park_gather = None;
        }
        want.busy = true;
        (f, want.upto)
    };
    let began = Instant::now();
    fsync_or_exit(&file);
    let took = began.elapsed();
    {
        let mut want = shared.lock();
        want.busy = false;
        want.inline_ran = true;
        let released = shared.complete(&mut want, upto);
        let now = Instant::now();
        let g = Gather {
            until: want.arrivals + released,
            released: now,
            deadline: now + want.park_back.bound(took),
        };
        want.park_gather = Some((g, false));
    }
    shared.done.notify_waiters();
}

impl Drop for Group {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.kick.notify_one();
    }
}

impl Shared {
    /// Nothing synced, nothing wanted, nobody waiting.
    fn new() -> Shared {
        Shared {
            synced: AtomicU64::new(0),
            done: Notify::new(),
            want: Mutex::new(Want {
                kick_at: u64::MAX,
                ..Want::default()
            }),
            kick: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Want> {
        self.want.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A connection's kick timer fired: wakes the sync thread if what is
    /// wanted is still not on disk and nobody is syncing it.
    fn kick_if_waiting(&self) {
        let want = self.lock();
        if !want.stop && want.idle && !want.busy && want.upto > self.synced.load(Ordering::Acquire)
        {
            self.kick.notify_one();
        }
    }

    /// `upto` is on disk: the waiters it covers are released (their count).
    fn complete(&self, want: &mut Want, upto: u64) -> u64 {
        self.synced.fetch_max(upto, Ordering::AcqRel);
        let before = want.waiting.len();
        want.waiting.retain(|&t| t > upto);
        if want.upto <= upto {
            want.since = None;
        }
        (before - want.waiting.len()) as u64
    }

    /// The sync thread: one fdatasync at a time, each covering everything
    /// written before it began, back to back while writes keep coming.
    fn run(&self) {
        let mut gather: Option<Gather> = None;
        let mut back = Return::default();
        loop {
            let (file, upto) = {
                let mut want = self.lock();
                loop {
                    if want.stop {
                        return;
                    }
                    if want.inline_ran {
                        want.inline_ran = false;
                        gather = None;
                    }
                    if want.busy || want.upto <= self.synced.load(Ordering::Acquire) {
                        want.idle = true;
                        want = self.kick.wait(want).unwrap_or_else(|e| e.into_inner());
                        want.idle = false;
                        continue;
                    }
                    let now = Instant::now();
                    let Some(g) = &gather else { break };
                    if want.arrivals >= g.until {
                        back.record(now - g.released);
                    } else if now >= g.deadline {
                        back.record(g.deadline - g.released);
                    } else {
                        want.kick_at = g.until;
                        want = self
                            .kick
                            .wait_timeout(want, g.deadline - now)
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                        want.kick_at = u64::MAX;
                        continue;
                    }
                    gather = None;
                    break;
                }
                match want.file.clone() {
                    Some(f) => {
                        want.busy = true;
                        (f, want.upto)
                    }
                    None => continue,
                }
            };
            let began = Instant::now();
            fsync_or_exit(&file);
            let took = began.elapsed();
            {
                let mut want = self.lock();
                want.busy = false;
                let released = self.complete(&mut want, upto);
                let now = Instant::now();
                gather = Some(Gather {
                    until: want.arrivals + released,
                    released: now,
                    deadline: now + back.bound(took),
                });
            }
            self.done.notify_waiters();
        }
    }
}

/// Redis exits when an fsync fails under `always`: replies were promised.
pub(super) fn fsync_or_exit(file: &File) {
    if let Err(e) = file.sync_data() {
        crate::log::warning(&format!("Can't persist AOF for fsync error when the AOF fsync policy is 'always': {}. Exiting...", super::manifest::os(&e)));
        std::process::exit(1);
    }
}

impl super::Aof {
    /// After a write(2) under `always`: the new bytes go to the sync thread.
    pub(super) fn request_sync(&mut self, file: &Arc<File>) {
        self.group
            .get_or_insert_with(Group::start)
            .request(file, self.written_total);
    }

    /// The data thread fsynced `file` by itself: everything written is on disk.
    pub(super) fn synced_in_place(&mut self) {
        if let Some(g) = &self.group {
            g.mark_synced(self.written_total);
        }
    }

    /// True when bytes written under `always` still wait for the sync thread.
    pub(super) fn sync_lag(&self) -> bool {
        self.group
            .as_ref()
            .is_some_and(|g| g.synced() < self.written_total)
    }
}

/// Called by a connection that took output to send (`has_output`), before
/// sending it. The AOF buffer is written to the file first, whatever the
/// policy (a write(2), so a crash of the process loses nothing
/// acknowledged). With `always` the connection then waits for the sync
/// thread to cover every byte appended until now, without holding up the
/// data thread.
pub async fn before_reply(srv: &Rc<RefCell<Server>>, has_output: bool) {
    let (shared, target, arm) = {
        let Ok(mut s) = srv.try_borrow_mut() else {
            return;
        };
        if s.aof.state == State::Off {
            return;
        }
        super::writer::flush(&mut s, false);
        if !has_output || s.aof.fsync != Fsync::Always || super::writer::skip_fsync(&s) {
            return;
        }
        // Everything appended so far: `flush` wrote it all (a failed write
        // under `always` exits).
        let target = super::writer::appended_total(&s);
        let Some(file) = s.aof.file.clone() else {
            return;
        };
        let g = s.aof.group.get_or_insert_with(Group::start);
        if g.synced() >= target {
            return;
        }
        // Bytes written while another policy was in force, or before the
        // policy changed back, are covered by this request.
        let arm = g.join(&file, target);
        (g.shared.clone(), target, arm)
    };
    Group::wait(shared, target, arm).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::task::{Context, Waker};

    /// A waiter is released by the sync thread's completion, not before:
    /// with the thread stopped nothing syncs, and marking the bytes synced
    /// releases it.
    #[test]
    fn waiter_is_released_only_once_its_bytes_are_synced() {
        let g = Group::start();
        g.shared.lock().stop = true;
        g.shared.kick.notify_one();
        let none = Timers {
            gather: None,
            kick: None,
        };
        let mut w = Box::pin(Group::wait(g.shared.clone(), 10, none));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(w.as_mut().poll(&mut cx).is_pending());
        g.mark_synced(9);
        assert!(w.as_mut().poll(&mut cx).is_pending());
        g.mark_synced(10);
        assert!(w.as_mut().poll(&mut cx).is_ready());
    }

    /// The wait after an fdatasync: half of it before anything is known;
    /// then twice the connections' recent return time, never more than half
    /// the fdatasync (a slow one no longer stretches it when they come back
    /// fast); gathers that time out raise the estimate up to that half again.
    #[test]
    fn the_gather_bound_follows_the_return_time() {
        let ms = Duration::from_millis;
        let mut back = Return::default();
        assert_eq!(back.bound(ms(40)), ms(20));
        back.record(ms(1));
        assert_eq!(back.bound(ms(40)), ms(2));
        assert_eq!(back.bound(ms(2)), ms(1));
        for _ in 0..64 {
            let timed_out = back.bound(ms(40));
            back.record(timed_out);
        }
        assert_eq!(back.bound(ms(40)), ms(20));
    }

    /// The data thread's park fdatasyncs what a waiter wants and releases
    /// it; the next one waits until the released connection came back, or
    /// the gather's deadline passed.
    #[test]
    fn the_park_hook_syncs_and_gathers() {
        let dir = std::env::temp_dir().join(format!("oxidis-park-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let file = Arc::new(File::create(dir.join("f")).unwrap());
        let shared = Shared::new();
        let join = |upto: u64| {
            let mut w = shared.lock();
            w.waiting.push(upto);
            w.arrivals += 1;
            w.upto = upto;
            w.file = Some(file.clone());
        };
        join(10);
        park_sync(&shared);
        assert_eq!(shared.synced.load(Ordering::Acquire), 10);
        assert!(shared.lock().waiting.is_empty());
        // A gather for one connection, with a deadline far away.
        shared.lock().park_gather.as_mut().unwrap().0.deadline =
            Instant::now() + Duration::from_secs(3600);
        shared.lock().request_only(20, &file);
        park_sync(&shared);
        assert_eq!(shared.synced.load(Ordering::Acquire), 10);
        join(30);
        park_sync(&shared);
        assert_eq!(shared.synced.load(Ordering::Acquire), 30);
        // Nobody comes back, and the deadline passes.
        shared.lock().park_gather.as_mut().unwrap().0.deadline = Instant::now();
        shared.lock().request_only(40, &file);
        park_sync(&shared);
        assert_eq!(shared.synced.load(Ordering::Acquire), 40);
        let _ = std::fs::remove_dir_all(&dir);
    }

    impl Want {
        fn request_only(&mut self, upto: u64, file: &Arc<File>) {
            self.upto = upto;
            self.file = Some(file.clone());
        }
    }

    /// A waiter on a runtime that never runs the park hook (a data thread
    /// that never runs out of work) is still covered: its kick timer wakes
    /// the sync thread, which fsyncs and reports the bytes it covered.
    #[test]
    fn the_sync_thread_covers_a_request() {
        let dir = std::env::temp_dir().join(format!("oxidis-group-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let file = Arc::new(File::create(dir.join("f")).unwrap());
        let g = Group::start();
        let timers = g.join(&file, 42);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(Group::wait(g.shared.clone(), 42, timers));
        assert!(g.synced() >= 42);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
