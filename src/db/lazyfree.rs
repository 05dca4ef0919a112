//! Letting go of values and whole databases: large ones are dropped on a background thread (Redis's lazyfree.c), counted for INFO.
//!
//! Every value the keyspace lets go of (DEL/UNLINK, expiry, eviction,
//! overwrite) passes through [`free`], and every flushed database through
//! [`Db::clear`](super::Db::clear) into [`free_tables`]: the one place that
//! decides between dropping now and handing to the freeing thread, as
//! Redis's `dbGenericDelete`/`freeObjAsync`/`emptyDbAsync` do. A value goes
//! to the thread only when it is lazy for its reason (UNLINK always, the
//! others by their `lazyfree-lazy-*` parameter) and its free effort is above
//! [`THRESHOLD`]; a small value is cheaper to drop on the spot. SCRIPT
//! FLUSH and FUNCTION FLUSH hand over their caches through [`free_counted`].
//!
//! Soundness of the hand-over: once unlinked from the keyspace a value has
//! no other owner (a `ZSet`'s member blocks belong to the set alone), and
//! `Value` and the key tables are `Send` (checked at compile time below), so
//! the hand-over is a plain move; dropping on the data thread costs what it
//! always did (one thread-local read of the policy).
//!
//! Memory accounting: the counting allocator's total is one process-wide
//! atomic (super::super::server::alloc), so bytes freed on the freeing
//! thread leave `used_memory` as they are freed, as with Redis's zmalloc
//! counter. The thread lowers the pending count with Release only after the
//! drop (and after raising the freed count), and readers load it with
//! Acquire: whoever reads `lazyfree_pending_objects:0` also reads a
//! `used_memory` without those bytes and the final `lazyfreed_objects`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, OnceLock};

use super::dict::Dict;
use super::{Entry, Value};

/// Free effort above which a lazy free goes to the thread (Redis's
/// `LAZYFREE_THRESHOLD`).
pub const THRESHOLD: usize = 64;

/// Why the keyspace lets go of a value: decides, with the configuration,
/// whether the free may be lazy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// DEL, GETDEL (`lazyfree-lazy-user-del`).
    UserDel,
    /// UNLINK: always lazy.
    Unlink,
    /// Implicit deletions and overwrites: RENAME's destination, SET over a
    /// value, *STORE targets, emptied collections (`lazyfree-lazy-server-del`).
    ServerDel,
    /// A key whose time passed (`lazyfree-lazy-expire`).
    Expire,
    /// A key evicted under maxmemory (`lazyfree-lazy-eviction`).
    Eviction,
}

/// The `lazyfree-lazy-*` parameters, as the data thread applies them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Policy {
    pub eviction: bool,
    pub expire: bool,
    pub server_del: bool,
    pub user_del: bool,
    pub user_flush: bool,
}

/// Objects handed to the thread and not yet freed, and objects it freed
/// (Redis's `lazyfree_objects` / `lazyfreed_objects`). One pair per server
/// (per data thread), so servers started in one test process count apart.
#[derive(Debug, Default)]
pub struct Counters {
    pending: AtomicU64,
    freed: AtomicU64,
}

thread_local! {
    static POLICY: Cell<Policy> = const { Cell::new(Policy {
        eviction: false,
        expire: false,
        server_del: false,
        user_del: false,
        user_flush: false,
    }) };
    static COUNTERS: Arc<Counters> = Arc::default();
}

/// Applies the `lazyfree-lazy-*` parameters on this (the data) thread; at
/// start and after CONFIG SET.
pub fn set_policy(p: Policy) {
    POLICY.with(|c| c.set(p));
}

/// The parameters in force on this thread.
pub fn policy() -> Policy {
    POLICY.with(|c| c.get())
}

/// True when a free for `why` may go to the thread.
#[inline]
fn lazy(why: Why) -> bool {
    let p = policy();
    match why {
        Why::UserDel => p.user_del,
        Why::Unlink => true,
        Why::ServerDel => p.server_del,
        Why::Expire => p.expire,
        Why::Eviction => p.eviction,
    }
}

/// INFO memory's `lazyfree_pending_objects`.
pub fn pending() -> u64 {
    COUNTERS.with(|c| c.pending.load(Ordering::Acquire))
}

/// INFO's `lazyfreed_objects`.
pub fn freed() -> u64 {
    COUNTERS.with(|c| {
        // Acquire on `pending` first: a reader that saw it drop sees the
        // matching `freed` increment.
        c.pending.load(Ordering::Acquire);
        c.freed.load(Ordering::Relaxed)
    })
}

/// CONFIG RESETSTAT: `lazyfreed_objects` starts again from zero.
pub fn reset_stats() {
    COUNTERS.with(|c| c.freed.store(0, Ordering::Relaxed));
}

/// Work to free `v`, proportional to its allocations (Redis's
/// `lazyfreeGetFreeEffort`): one for a string or a compact encoding, the
/// node count of a list, the element count of a table-encoded collection.
pub fn effort(v: &Value) -> usize {
    match v {
        Value::Str(_) => 1,
        Value::List(l) => l.node_count(),
        Value::Set(s) if s.encoding() == "hashtable" => s.len(),
        Value::Hash(h) if h.encoding() == "hashtable" => h.len(),
        Value::ZSet(z) if !z.is_listpack() => z.len(),
        Value::Stream(s) => s.free_effort(),
        Value::Set(_) | Value::Hash(_) | Value::ZSet(_) => 1,
    }
}

/// Lets go of a value the keyspace no longer holds: dropped now, or on the
/// freeing thread when the free is lazy for `why` and its effort is above
/// [`THRESHOLD`] (Redis's `freeObjAsync`).
#[inline]
pub fn free(v: Value, why: Why) {
    if lazy(why) && effort(&v) > THRESHOLD {
        hand_over(Box::new(v), 1, false);
    }
}

/// Lets go of a database's key and expiry tables, on the freeing thread
/// (Redis's `emptyDbAsync`): they count as one object per key.
pub fn free_tables(keys: Dict<Entry>, expires: Dict<i64>) {
    let n = keys.len() as u64;
    hand_over(Box::new((keys, expires)), n, true);
}

/// Lets go of other server state counted as `objects` (the script cache
/// with its Lua VM, the function libraries with theirs): on the freeing
/// thread when `lazy` and `objects` is above [`THRESHOLD`], else now
/// (Redis's `freeLuaScriptsAsync` / `freeFunctionsAsync`).
pub fn free_counted<T: Send + 'static>(garbage: T, objects: usize, lazy: bool) {
    if lazy && objects > THRESHOLD {
        hand_over(Box::new(garbage), objects as u64, false);
    }
}

/// What the freeing thread drops, with what to count for it.
struct Job {
    garbage: Box<dyn Send>,
    objects: u64,
    counters: Arc<Counters>,
    /// A flushed database: give the pages back to the OS afterwards, as a
    /// synchronous flush does.
    purge: bool,
}

// The hand-over moves these to another thread (see the module comment).
const _: () = {
    const fn send<T: Send>() {}
    send::<Value>();
    send::<Dict<Entry>>();
    send::<Dict<i64>>();
};

/// The freeing thread's queue, started on first use; `None` when the
/// thread could not be started (then everything is dropped on the spot).
fn queue() -> Option<&'static Sender<Job>> {
    static QUEUE: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = channel::<Job>();
            std::thread::Builder::new()
                .name("lazyfree".into())
                .spawn(move || {
                    lower_priority();
                    for job in rx {
                        drop(job.garbage);
                        if job.purge {
                            crate::server::memory::purge();
                        }
                        job.counters.freed.fetch_add(job.objects, Ordering::Relaxed);
                        job.counters
                            .pending
                            .fetch_sub(job.objects, Ordering::Release);
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Freeing is never urgent: on a busy machine the data thread, which
/// answers clients, runs first. Linux keeps a nice value per thread.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: changes this thread's nice value only.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (now + FREEING_NICE).min(19));
    }
}

/// How much nicer the freeing thread is than the data thread.
const FREEING_NICE: i32 = 10;

fn hand_over(garbage: Box<dyn Send>, objects: u64, purge: bool) {
    let Some(tx) = queue() else {
        return;
    };
    let counters = COUNTERS.with(Arc::clone);
    counters.pending.fetch_add(objects, Ordering::Relaxed);
    let job = Job {
        garbage,
        objects,
        counters,
        purge,
    };
    if let Err(back) = tx.send(job) {
        // The thread is gone: free here, and undo the count.
        let job = back.0;
        job.counters.pending.fetch_sub(objects, Ordering::Relaxed);
        drop(job.garbage);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::set::Set;
    use crate::types::string::Str;

    fn big_set(n: usize) -> Value {
        let mut s = Set::new();
        for i in 0..n {
            s.add(format!("m{i}").as_bytes(), 512);
        }
        Value::Set(Box::new(s))
    }

    fn wait_done() {
        while pending() != 0 {
            std::thread::yield_now();
        }
    }

    /// Only lazy frees of values above the threshold reach the thread, and
    /// they are counted once freed.
    #[test]
    fn threshold_and_counters() {
        set_policy(Policy::default());
        reset_stats();
        free(big_set(1000), Why::UserDel); // not lazy: dropped here
        free(Value::Str(Str::from_bytes(b"x")), Why::Unlink); // effort 1
        free(big_set(THRESHOLD), Why::Unlink); // effort 64: not above
        wait_done();
        assert_eq!(freed(), 0);
        free(big_set(THRESHOLD + 1), Why::Unlink);
        free(big_set(1000), Why::Unlink);
        wait_done();
        assert_eq!(freed(), 2);
        set_policy(Policy {
            expire: true,
            ..Policy::default()
        });
        free(big_set(1000), Why::Expire);
        free(big_set(1000), Why::Eviction);
        wait_done();
        assert_eq!(freed(), 3);
        let mut keys = Dict::new();
        for i in 0..10 {
            keys.insert(format!("k{i}").as_bytes(), Entry::new(big_set(1)));
        }
        free_tables(keys, Dict::new());
        wait_done();
        assert_eq!(freed(), 13);
        reset_stats();
        assert_eq!(freed(), 0);
        set_policy(Policy::default());
    }
}
