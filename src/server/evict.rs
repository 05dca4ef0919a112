//! maxmemory: the eight eviction policies, the eviction pool, and the OOM state the gate reads (Redis's evict.c).
//!
//! Before each command (and from a timer while a cycle is left unfinished)
//! [`perform`] compares `used_memory` minus the memory Redis does not count
//! (the AOF buffer) with `maxmemory` and, over it, deletes keys chosen by
//! `maxmemory-policy` until enough was freed or the time allowed by
//! `maxmemory-eviction-tenacity` is spent. The LRU, LFU and TTL policies
//! sample `maxmemory-samples` keys of every database into a pool of the
//! [`POOL_SIZE`] best candidates seen so far, kept from call to call; the
//! random policies take a random key, visiting databases in turn.
//!
//! An evicted key is deleted as any other (WATCH touched, client-side
//! caches invalidated), raises the `evicted` event, counts in INFO's
//! `evicted_keys` and propagates as DEL (UNLINK with
//! `lazyfree-lazy-eviction`).

use std::time::{Duration, Instant};

use super::client::Client;
use super::Server;
use crate::db::evict_sample::Score;

/// Candidates the eviction pool keeps (Redis's `EVPOOL_SIZE`).
pub const POOL_SIZE: usize = 16;

/// `maxmemory-policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Policy {
    #[default]
    NoEviction,
    AllKeysLru,
    AllKeysLfu,
    AllKeysRandom,
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
}

impl Policy {
    /// The policy for a `maxmemory-policy` value (already validated).
    pub fn parse(v: &str) -> Policy {
        match v {
            "allkeys-lru" => Policy::AllKeysLru,
            "allkeys-lfu" => Policy::AllKeysLfu,
            "allkeys-random" => Policy::AllKeysRandom,
            "volatile-lru" => Policy::VolatileLru,
            "volatile-lfu" => Policy::VolatileLfu,
            "volatile-random" => Policy::VolatileRandom,
            "volatile-ttl" => Policy::VolatileTtl,
            _ => Policy::NoEviction,
        }
    }

    /// Only keys with a TTL are candidates.
    fn volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    /// How the pool ranks candidates; None for the random policies.
    fn score(self) -> Option<Score> {
        match self {
            Policy::AllKeysLru | Policy::VolatileLru => Some(Score::Idle),
            Policy::AllKeysLfu | Policy::VolatileLfu => Some(Score::Rare),
            Policy::VolatileTtl => Some(Score::NearExpiry),
            _ => None,
        }
    }
}

/// One remembered candidate.
struct Candidate {
    score: u64,
    db: usize,
    key: Box<[u8]>,
}

/// Eviction state kept across commands.
#[derive(Default)]
pub struct Eviction {
    /// Best candidates so far, ascending by score (the best is last).
    pool: Vec<Candidate>,
    /// The database the random policies try next.
    next_db: usize,
    /// A timer carries on an unfinished cycle (Redis's `evictionTimeProc`).
    timer_running: bool,
    /// Memory was over `maxmemory` with nothing left to evict when the
    /// running top-level command started (Redis's `pre_command_oom_state`):
    /// denyoom commands are refused, and scripts judge their writes by it.
    pub oom: bool,
}

/// What a cycle achieved (Redis's `EVICT_OK`, `EVICT_RUNNING`, `EVICT_FAIL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Memory is within the limit, or eviction may not run now.
    Ok,
    /// Still over the limit; the timer goes on evicting.
    Running,
    /// Over the limit and nothing (more) can be evicted.
    Fail,
}

/// Memory Redis leaves out of the comparison with `maxmemory` (its
/// `freeMemoryGetNotCountedMemory`): the AOF buffer and the replication
/// buffers (replicas' output and the backlog), which the DELs of evicted
/// keys would otherwise grow into a feedback loop.
pub fn not_counted_memory(srv: &Server) -> u64 {
    use super::alloc::block_size;
    let aof = srv.prop.aof.as_ref().map_or(0, |s| s.buf.capacity());
    let backlog = crate::repl::backlog_bytes(srv) as usize;
    (block_size(aof) + block_size(backlog)) as u64 + crate::repl::replica_buffers(srv)
}

/// Bytes to free to get back under `maxmemory`; None when within it (or
/// without a limit). Redis's `getMaxmemoryState`.
pub fn to_free(srv: &Server) -> Option<u64> {
    let max = srv.config.maxmemory;
    if max == 0 {
        return None;
    }
    let reported = super::memory::used_memory();
    if reported <= max {
        return None;
    }
    let used = reported.saturating_sub(not_counted_memory(srv));
    (used > max).then(|| used - max)
}

/// Before a client's command (Redis's `processCommand`): evicts when over
/// `maxmemory` and records whether memory is still out of reach for the
/// gate's OOM stage. Invalidations eviction caused reach the running client
/// before its command's reply.
pub fn before_command(srv: &mut Server, client: &mut Client) {
    if srv.config.maxmemory == 0 {
        srv.evict.oom = false;
        return;
    }
    set_growth_limit(srv);
    srv.evict.oom = perform(srv, client) == Outcome::Fail;
    super::tracking::send_pending(srv, client);
}

/// The memory the keyspace tables may grow to: `maxmemory` plus what is
/// not counted (the AOF buffer, as Redis's `overMaxmemoryAfterAlloc`).
fn set_growth_limit(srv: &Server) {
    let max = srv.config.maxmemory;
    let limit = if max == 0 {
        0
    } else {
        max + not_counted_memory(srv)
    };
    crate::db::dict::set_growth_limit(limit);
}

/// Eviction must not change the dataset now: while CLIENT PAUSE holds it
/// (as expiry), or on a replica ignoring maxmemory (no replication yet).
fn safe_to_evict(srv: &Server) -> bool {
    srv.pause
        .is_none_or(|p| p.until_ms <= crate::clock::real_now_us() / 1000)
}

/// Redis's `evictionTimeLimitUs`: tenacity 0-10 grows linearly to 500 µs,
/// then by 15% a step (about 2 minutes at 99); 100 is unlimited.
fn time_limit(tenacity: u32) -> Duration {
    let us = match tenacity {
        0..=10 => 50 * tenacity as u64,
        11..=99 => (500.0 * 1.15f64.powi(tenacity as i32 - 10)) as u64,
        _ => u64::MAX,
    };
    Duration::from_micros(us)
}

/// One eviction cycle (Redis's `performEvictions`): deletes keys the policy
/// picks until the memory to free is freed, nothing is left to pick, or the
/// time limit passes (then the timer goes on).
pub fn perform(srv: &mut Server, current: &mut Client) -> Outcome {
    if !safe_to_evict(srv) {
        return Outcome::Ok;
    }
    let outcome = match to_free(srv) {
        None => Outcome::Ok,
        Some(_) if srv.config.maxmemory_policy == Policy::NoEviction => Outcome::Fail,
        Some(goal) => evict_until(srv, current, goal),
    };
    let st = &mut srv.stats;
    match (outcome, st.eviction_exceeded_since) {
        (Outcome::Ok, Some(since)) => {
            st.eviction_exceeded_us += since.elapsed().as_micros() as u64;
            st.eviction_exceeded_since = None;
        }
        (Outcome::Running | Outcome::Fail, None) => {
            st.eviction_exceeded_since = Some(Instant::now());
        }
        _ => {}
    }
    outcome
}

fn evict_until(srv: &mut Server, current: &mut Client, goal: u64) -> Outcome {
    let started = Instant::now();
    let limit = time_limit(srv.config.maxmemory_eviction_tenacity);
    let policy = srv.config.maxmemory_policy;
    let unlink = srv.config.lazyfree_lazy_eviction;
    let mut freed: i64 = 0;
    let mut keys_freed = 0u64;
    let mut outcome = Outcome::Ok;
    while freed < goal as i64 {
        let Some((db, key)) = pick(srv, policy) else {
            outcome = Outcome::Fail;
            break;
        };
        // What the delete frees on this thread alone: with lazy eviction a
        // large value is freed by the freeing thread, seen by the check
        // every 16 keys below (as Redis's `performEvictions`).
        let before = super::memory::used_memory() as i64;
        let Some((entry, _)) = srv.ks.dbs[db].take(&key) else {
            continue;
        };
        crate::db::lazyfree::free(entry.val, crate::db::Why::Eviction);
        freed += before - super::memory::used_memory() as i64;
        srv.stats.evicted_keys += 1;
        evicted(srv, current, db, &key, unlink);
        keys_freed += 1;
        // The clock is read every 16 keys, as Redis does.
        if keys_freed.is_multiple_of(16) {
            if unlink && to_free(srv).is_none() {
                break;
            }
            if started.elapsed() > limit {
                start_timer(srv);
                break;
            }
        }
    }
    if outcome == Outcome::Fail {
        outcome = wait_for_lazyfree(srv, started, limit);
    }
    let lazy_expire = srv.config.lazyfree_lazy_expire;
    srv.prop.flush_expired(lazy_expire);
    if outcome == Outcome::Ok && srv.evict.timer_running {
        outcome = Outcome::Running;
    }
    outcome
}

/// Nothing is left to evict: values still being freed in the background
/// may bring memory under the limit, so wait for them a little (at most the
/// cycle's time limit, as Redis does).
fn wait_for_lazyfree(srv: &Server, started: Instant, limit: Duration) -> Outcome {
    while crate::db::lazyfree::pending() > 0 && started.elapsed() < limit {
        if to_free(srv).is_none() {
            return Outcome::Ok;
        }
        std::thread::sleep(limit.min(Duration::from_millis(1)));
    }
    Outcome::Fail
}

/// What deleting an evicted key records: WATCH, client-side caches, the
/// `evicted` event and the propagated DEL / UNLINK (Redis's
/// `signalModifiedKey`, `notifyKeyspaceEvent`, `propagateDeletion`).
fn evicted(srv: &mut Server, current: &mut Client, db: usize, key: &[u8], unlink: bool) {
    srv.ks.dbs[db].touch(key);
    if !srv.tracking.idle() {
        super::tracking::invalidate_key(srv, current, 0, key);
    }
    super::notify::emit(srv, current, super::notify::EVICTED, "evicted", db, key);
    srv.prop.deleted_outside_command(db, key, unlink);
}

/// The next key to evict under `policy`, or None when no database has a
/// candidate.
fn pick(srv: &mut Server, policy: Policy) -> Option<(usize, Box<[u8]>)> {
    let volatile = policy.volatile();
    let Some(score) = policy.score() else {
        // Random policies: one random key, from the databases in turn.
        let n = srv.ks.dbs.len();
        for _ in 0..n {
            let j = (srv.evict.next_db + 1) % n;
            srv.evict.next_db = j;
            let Server { ks, rng, .. } = srv;
            let db = &ks.dbs[j];
            if db.eviction_population(volatile) > 0 {
                let key = db.eviction_random(volatile, || rng.next_u64())?;
                return Some((j, key));
            }
        }
        return None;
    };
    loop {
        if !populate(srv, volatile, score) {
            return None;
        }
        // Best first; a candidate deleted (or no longer volatile) since it
        // was sampled is a ghost and is dropped.
        while let Some(c) = srv.evict.pool.pop() {
            if srv.ks.dbs[c.db].eviction_candidate(&c.key, volatile) {
                return Some((c.db, c.key));
            }
        }
    }
}

/// Samples every database into the pool (Redis's `evictionPoolPopulate`);
/// false when there is no candidate key at all.
fn populate(srv: &mut Server, volatile: bool, score: Score) -> bool {
    let samples = srv.config.maxmemory_samples.max(1);
    let Server { ks, rng, evict, .. } = srv;
    let mut total = 0;
    for (i, db) in ks.dbs.iter().enumerate() {
        let n = db.eviction_population(volatile);
        if n == 0 {
            continue;
        }
        total += n;
        db.eviction_sample(
            volatile,
            samples,
            score,
            || rng.next_u64(),
            |k, s| offer(&mut evict.pool, i, k, s),
        );
    }
    total > 0
}

/// Puts a sampled key into the pool when it beats the worst candidate
/// there or the pool has room, dropping the worst when full. A key already
/// in the pool is rescored in place.
fn offer(pool: &mut Vec<Candidate>, db: usize, key: &[u8], score: u64) {
    if let Some(i) = pool.iter().position(|c| c.db == db && &*c.key == key) {
        pool.remove(i);
    }
    let at = pool.partition_point(|c| c.score < score);
    if pool.len() >= POOL_SIZE {
        if at == 0 {
            return;
        }
        pool.remove(0);
        pool.insert(
            at - 1,
            Candidate {
                score,
                db,
                key: key.into(),
            },
        );
    } else {
        pool.insert(
            at,
            Candidate {
                score,
                db,
                key: key.into(),
            },
        );
    }
}

/// Starts the timer that keeps evicting between commands until memory is
/// under the limit or nothing is left (Redis's `startEvictionTimeProc`).
/// Without an event loop (in-process harnesses) the next command's
/// eviction carries on instead.
pub fn start_timer(srv: &mut Server) {
    if srv.evict.timer_running {
        return;
    }
    let Some(me) = srv.self_ref.clone() else {
        return;
    };
    srv.evict.timer_running = true;
    tokio::task::spawn_local(async move {
        let mut internal = Client::new(
            0,
            String::new(),
            String::new(),
            super::client::ConnKind::Script,
            false,
        );
        loop {
            tokio::task::yield_now().await;
            let Some(srv) = me.upgrade() else {
                return;
            };
            let Ok(mut s) = srv.try_borrow_mut() else {
                continue;
            };
            crate::clock::begin_command();
            let outcome = perform(&mut s, &mut internal);
            crate::command::dispatch::after_command(&mut s, &mut internal);
            internal.reply.buf.clear();
            if outcome != Outcome::Running {
                s.evict.timer_running = false;
                return;
            }
        }
    });
}

/// CONFIG SET maxmemory (Redis's `updateMaxmemory`): warns when the new
/// limit is under current use, and starts evicting in the background.
pub fn maxmemory_changed(srv: &mut Server) {
    let max = srv.config.maxmemory;
    if max == 0 {
        return;
    }
    let used = super::memory::used_memory().saturating_sub(not_counted_memory(srv));
    if max < used {
        crate::log::warning(&format!(
            "WARNING: the new maxmemory value set via CONFIG SET ({max}) is smaller than the current memory usage ({used}). This will result in key eviction and/or the inability to accept new write commands depending on the maxmemory-policy."
        ));
    }
    start_timer(srv);
}

/// Hands the LFU and `lazyfree-lazy-*` settings to the databases; at start
/// and after CONFIG SET, on the data thread.
pub fn apply_config(srv: &Server) {
    let c = &srv.config;
    crate::db::set_lfu_params(c.lfu_log_factor, c.lfu_decay_time);
    crate::db::lazyfree::set_policy(crate::db::lazyfree::Policy {
        eviction: c.lazyfree_lazy_eviction,
        expire: c.lazyfree_lazy_expire,
        server_del: c.get("lazyfree-lazy-server-del") == Some("yes"),
        user_del: c.get("lazyfree-lazy-user-del") == Some("yes"),
        user_flush: c.get("lazyfree-lazy-user-flush") == Some("yes"),
    });
    set_growth_limit(srv);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scores(pool: &[Candidate]) -> Vec<u64> {
        pool.iter().map(|c| c.score).collect()
    }

    /// The pool keeps the best 16 in ascending order; a worse key than all
    /// of a full pool is not taken; a key seen again is rescored.
    #[test]
    fn pool_keeps_the_best_candidates() {
        let mut pool = Vec::new();
        for s in [5u64, 1, 9, 3] {
            offer(&mut pool, 0, format!("k{s}").as_bytes(), s);
        }
        assert_eq!(scores(&pool), [1, 3, 5, 9]);
        for s in 10..30u64 {
            offer(&mut pool, 0, format!("k{s}").as_bytes(), s);
        }
        assert_eq!(pool.len(), POOL_SIZE);
        assert_eq!(scores(&pool), (14..30).collect::<Vec<_>>());
        offer(&mut pool, 0, b"low", 2);
        assert!(!pool.iter().any(|c| &*c.key == b"low"));
        offer(&mut pool, 0, b"k20", 100);
        assert_eq!(pool.len(), POOL_SIZE);
        assert_eq!(&*pool.last().unwrap().key, b"k20");
        assert_eq!(pool.iter().filter(|c| &*c.key == b"k20").count(), 1);
    }

    #[test]
    fn tenacity_time_limits() {
        assert_eq!(time_limit(0), Duration::ZERO);
        assert_eq!(time_limit(10), Duration::from_micros(500));
        assert_eq!(time_limit(11), Duration::from_micros(575));
        assert_eq!(time_limit(100), Duration::from_micros(u64::MAX));
    }
}
