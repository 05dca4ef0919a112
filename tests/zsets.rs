//! Sorted sets, bitmaps and HyperLogLogs over real sockets: the counting
//! semaphores and prefix autocomplete of "Redis in Action", a Bloom filter,
//! blocking pops across clients, and a big set checked against a model.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use redis::Connection;

/// A tiny xorshift PRNG for test data.
struct Prng(u64);
impl Prng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn q<T: redis::FromRedisValue>(con: &mut Connection, args: &[&str]) -> T {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con).unwrap()
}

/// Holders currently inside the semaphore, and the most ever seen.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    max: AtomicUsize,
    acquired: AtomicUsize,
}

impl Gauge {
    fn enter(&self) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
        self.acquired.fetch_add(1, Ordering::SeqCst);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

const LIMIT: usize = 3;
const CLIENTS: usize = 8;
const ROUNDS: usize = 40;
/// Far larger than any run: no holder times out during the test.
const TIMEOUT: u64 = 1 << 40;

/// The basic semaphore: drop timed-out holders, add ourselves with the
/// current time, and keep the place when our rank is under the limit.
/// Time is a counter handed out under `clock`, so that scores grow in the
/// order the server runs the transactions (a single, perfect clock).
fn basic_acquire(con: &mut Connection, clock: &Mutex<u64>, id: &str) -> bool {
    let rank: Option<usize> = {
        let mut now = clock.lock().unwrap();
        *now += 1;
        let (_, _, rank): (i64, i64, Option<usize>) = redis::pipe()
            .atomic()
            .cmd("ZREMRANGEBYSCORE")
            .arg("sem")
            .arg("-inf")
            .arg(now.saturating_sub(TIMEOUT))
            .cmd("ZADD")
            .arg("sem")
            .arg(*now)
            .arg(id)
            .cmd("ZRANK")
            .arg("sem")
            .arg(id)
            .query(con)
            .unwrap();
        rank
    };
    if rank.unwrap() < LIMIT {
        return true;
    }
    let _: i64 = q(con, &["ZREM", "sem", id]);
    false
}

/// The fair semaphore: an INCR counter orders the owners; the owner set is
/// trimmed to live holders with `ZINTERSTORE owner 2 owner sem WEIGHTS 1 0`.
/// `now` is the time source (a counter of the test's).
fn fair_acquire(con: &mut Connection, now: u64, id: &str) -> bool {
    let (_, _, counter): (i64, i64, i64) = redis::pipe()
        .atomic()
        .cmd("ZREMRANGEBYSCORE")
        .arg("fsem")
        .arg("-inf")
        .arg(now.saturating_sub(TIMEOUT))
        .cmd("ZINTERSTORE")
        .arg("fsem:owner")
        .arg(2)
        .arg("fsem:owner")
        .arg("fsem")
        .arg("WEIGHTS")
        .arg(1)
        .arg(0)
        .cmd("INCR")
        .arg("fsem:counter")
        .query(con)
        .unwrap();
    let (_, _, rank): (i64, i64, Option<usize>) = redis::pipe()
        .atomic()
        .cmd("ZADD")
        .arg("fsem")
        .arg(now)
        .arg(id)
        .cmd("ZADD")
        .arg("fsem:owner")
        .arg(counter)
        .arg(id)
        .cmd("ZRANK")
        .arg("fsem:owner")
        .arg(id)
        .query(con)
        .unwrap();
    if rank.unwrap() < LIMIT {
        return true;
    }
    fair_release(con, id);
    false
}

fn fair_release(con: &mut Connection, id: &str) {
    let _: (i64, i64) = redis::pipe()
        .atomic()
        .cmd("ZREM")
        .arg("fsem")
        .arg(id)
        .cmd("ZREM")
        .arg("fsem:owner")
        .arg(id)
        .query(con)
        .unwrap();
}

/// Runs `CLIENTS` threads that each try `ROUNDS` times to take the
/// semaphore, hold it for a few round trips, and release it.
fn run_semaphore(
    acquire: impl Fn(&mut Connection, &str) -> bool + Send + Sync + 'static,
    release: impl Fn(&mut Connection, &str) + Send + Sync + 'static,
) -> Arc<Gauge> {
    let h = common::start();
    let gauge = Arc::new(Gauge::default());
    let acquire = Arc::new(acquire);
    let release = Arc::new(release);
    let threads: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let client = common::client(&h);
            let (gauge, acquire, release) = (gauge.clone(), acquire.clone(), release.clone());
            std::thread::spawn(move || {
                let mut con = client.get_connection().unwrap();
                for r in 0..ROUNDS {
                    let id = format!("client{t}:{r}");
                    if acquire(&mut con, &id) {
                        gauge.enter();
                        // Hold it across a few round trips.
                        for _ in 0..3 {
                            let _: String = q(&mut con, &["PING"]);
                        }
                        gauge.leave();
                        release(&mut con, &id);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    gauge
}

#[test]
fn basic_counting_semaphore_never_exceeds_its_limit() {
    let clock = Arc::new(Mutex::new(0u64));
    let g = run_semaphore(
        move |con, id| basic_acquire(con, &clock, id),
        |con, id| {
            let _: i64 = q(con, &["ZREM", "sem", id]);
        },
    );
    assert!(g.max.load(Ordering::SeqCst) <= LIMIT);
    assert!(g.acquired.load(Ordering::SeqCst) >= LIMIT);
}

#[test]
fn fair_counting_semaphore_with_zinterstore_weights_never_exceeds_its_limit() {
    // The fair semaphore orders holders by the INCR counter; guard the
    // counter-to-rank window with a client-side mutex so that counters are
    // added in the order they were handed out (what the lock-guarded variant
    // below does with a Redis lock instead).
    let window = Arc::new(Mutex::new(0u64));
    let g = run_semaphore(
        move |con, id| {
            let mut now = window.lock().unwrap();
            *now += 1;
            fair_acquire(con, *now, id)
        },
        fair_release,
    );
    assert!(g.max.load(Ordering::SeqCst) <= LIMIT);
    assert!(g.acquired.load(Ordering::SeqCst) >= LIMIT);
}

/// `SET lock id NX`, retried a bounded number of times.
fn acquire_lock(con: &mut Connection, id: &str) -> bool {
    for _ in 0..100_000 {
        let ok: Option<String> = redis::cmd("SET")
            .arg("sem:lock")
            .arg(id)
            .arg("NX")
            .query(con)
            .unwrap();
        if ok.is_some() {
            return true;
        }
        std::thread::yield_now();
    }
    false
}

/// Releases the lock only if we still own it (WATCH/GET/MULTI/DEL/EXEC).
fn release_lock(con: &mut Connection, id: &str) {
    let _: () = redis::cmd("WATCH").arg("sem:lock").query(con).unwrap();
    let owner: Option<String> = redis::cmd("GET").arg("sem:lock").query(con).unwrap();
    if owner.as_deref() == Some(id) {
        let _: Option<(i64,)> = redis::pipe().atomic().del("sem:lock").query(con).unwrap();
    } else {
        let _: () = redis::cmd("UNWATCH").query(con).unwrap();
    }
}

#[test]
fn lock_guarded_fair_semaphore_never_exceeds_its_limit() {
    let g = run_semaphore(
        |con, id| {
            assert!(acquire_lock(con, id), "lock never acquired");
            let now: i64 = q(con, &["INCR", "sem:time"]);
            let ok = fair_acquire(con, now as u64, id);
            release_lock(con, id);
            ok
        },
        fair_release,
    );
    assert!(g.max.load(Ordering::SeqCst) <= LIMIT);
    assert!(g.acquired.load(Ordering::SeqCst) >= LIMIT);
}

/// Random lowercase names of 3 to 8 letters.
fn names(n: usize, seed: u64) -> Vec<String> {
    let mut rng = Prng(seed);
    let mut v: Vec<String> = (0..n)
        .map(|_| {
            let len = 3 + (rng.next() % 6) as usize;
            (0..len)
                .map(|_| (b'a' + (rng.next() % 6) as u8) as char)
                .collect()
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Prefix autocomplete (Redis in Action 6.1.2): insert sentinels just
/// before and after the prefix's range, read their ranks, and ZRANGE between.
#[test]
fn prefix_autocomplete_over_thousands_of_names() {
    let h = common::start();
    let mut con = common::conn(&h);
    let all = names(5000, 42);
    for chunk in all.chunks(500) {
        let mut c = redis::cmd("ZADD");
        c.arg("names");
        for n in chunk {
            c.arg(0).arg(n);
        }
        let _: i64 = c.query(&mut con).unwrap();
    }
    let card: usize = q(&mut con, &["ZCARD", "names"]);
    assert_eq!(card, all.len());
    for prefix in ["a", "ab", "bad", "fe", "cccc", "zz", "aaaaaaaaa"] {
        let expect: Vec<&String> = all.iter().filter(|n| n.starts_with(prefix)).collect();
        // Sentinels: the prefix with its last letter decremented plus '{'
        // sorts before every match; the prefix plus '{' after them.
        let mut start = prefix.as_bytes().to_vec();
        let last = start.pop().unwrap();
        start.push(last - 1);
        start.push(b'{');
        let start = String::from_utf8(start).unwrap() + "-sentinel";
        let end = format!("{prefix}{{-sentinel");
        let _: i64 = q(&mut con, &["ZADD", "names", "0", &start, "0", &end]);
        let r0: usize = q(&mut con, &["ZRANK", "names", &start]);
        let r1: usize = q(&mut con, &["ZRANK", "names", &end]);
        let got: Vec<String> = if r1 > r0 + 1 {
            q(
                &mut con,
                &[
                    "ZRANGE",
                    "names",
                    &(r0 + 1).to_string(),
                    &(r1 - 1).to_string(),
                ],
            )
        } else {
            Vec::new()
        };
        let _: i64 = q(&mut con, &["ZREM", "names", &start, &end]);
        assert_eq!(got.iter().collect::<Vec<_>>(), expect, "prefix {prefix}");
        // The same through ZRANGEBYLEX, limited to 10 suggestions.
        let lo = format!("[{prefix}");
        let hi = format!("({prefix}{{");
        let top: Vec<String> = q(
            &mut con,
            &["ZRANGEBYLEX", "names", &lo, &hi, "LIMIT", "0", "10"],
        );
        assert_eq!(
            top.iter().collect::<Vec<_>>(),
            expect.iter().take(10).copied().collect::<Vec<_>>()
        );
        let n: usize = q(&mut con, &["ZLEXCOUNT", "names", &lo, &hi]);
        assert_eq!(n, expect.len());
    }
    let card2: usize = q(&mut con, &["ZCARD", "names"]);
    assert_eq!(card2, all.len());
}

/// k bit positions for an item in an m-bit filter (FNV-1a with k seeds).
fn bloom_bits(item: &str, k: u64, m: u64) -> Vec<u64> {
    (0..k)
        .map(|seed| {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            for b in item.bytes() {
                h ^= b as u64;
                h = h.wrapping_mul(0x100_0000_01b3);
            }
            h % m
        })
        .collect()
}

#[test]
fn bloom_filter_with_setbit_getbit_has_no_false_negatives() {
    let h = common::start();
    let mut con = common::conn(&h);
    const M: u64 = 1 << 20;
    const K: u64 = 7;
    let items: Vec<String> = (0..3000).map(|i| format!("user:{i}")).collect();
    for chunk in items.chunks(200) {
        let mut p = redis::pipe();
        for it in chunk {
            for b in bloom_bits(it, K, M) {
                p.cmd("SETBIT").arg("bloom").arg(b).arg(1).ignore();
            }
        }
        let _: () = p.query(&mut con).unwrap();
    }
    for chunk in items.chunks(200) {
        let mut p = redis::pipe();
        for it in chunk {
            for b in bloom_bits(it, K, M) {
                p.cmd("GETBIT").arg("bloom").arg(b);
            }
        }
        let bits: Vec<u8> = p.query(&mut con).unwrap();
        assert!(bits.iter().all(|&b| b == 1), "a false negative");
    }
    // The filter is an ordinary string of m/8 bytes.
    let len: u64 = q(&mut con, &["STRLEN", "bloom"]);
    assert!(len <= M / 8);
    let set: u64 = q(&mut con, &["BITCOUNT", "bloom"]);
    assert!(set > 0 && set <= 3000 * K);
    // Items never added are mostly absent (each has all 7 bits set by chance
    // with probability (set/m)^7).
    let mut absent = 0;
    for i in 0..200 {
        let bits = bloom_bits(&format!("other:{i}"), K, M);
        let mut p = redis::pipe();
        for b in bits {
            p.cmd("GETBIT").arg("bloom").arg(b);
        }
        let got: Vec<u8> = p.query(&mut con).unwrap();
        if got.contains(&0) {
            absent += 1;
        }
    }
    assert!(absent > 0);
}

/// A few thousand random updates through the server, checked against a
/// sorted Vec model with ZRANK, ZRANGE, ZCOUNT and a full ZSCAN.
#[test]
fn big_sorted_set_matches_a_model() {
    let h = common::start();
    let mut con = common::conn(&h);
    let mut rng = Prng(7);
    let mut model: Vec<(i64, String)> = Vec::new();
    for _ in 0..4000 {
        let m = format!("m{}", rng.next() % 1500);
        let s = (rng.next() % 100) as i64;
        if rng.next().is_multiple_of(5) {
            let _: i64 = q(&mut con, &["ZREM", "big", &m]);
            model.retain(|(_, x)| *x != m);
        } else {
            let _: i64 = q(&mut con, &["ZADD", "big", &s.to_string(), &m]);
            model.retain(|(_, x)| *x != m);
            let at = model.partition_point(|(a, b)| (*a, b) < (s, &m));
            model.insert(at, (s, m));
        }
    }
    let enc: String = q(&mut con, &["OBJECT", "ENCODING", "big"]);
    assert_eq!(enc, "skiplist");
    let all: Vec<String> = q(&mut con, &["ZRANGE", "big", "0", "-1"]);
    assert_eq!(
        all,
        model.iter().map(|(_, m)| m.clone()).collect::<Vec<_>>()
    );
    for (i, (_, m)) in model.iter().enumerate().step_by(37) {
        let r: usize = q(&mut con, &["ZRANK", "big", m]);
        assert_eq!(r, i);
        let rr: usize = q(&mut con, &["ZREVRANK", "big", m]);
        assert_eq!(rr, model.len() - 1 - i);
    }
    let n: usize = q(&mut con, &["ZCOUNT", "big", "10", "(20"]);
    assert_eq!(
        n,
        model.iter().filter(|(s, _)| (10..20).contains(s)).count()
    );
    // ZSCAN walks every member exactly once.
    let mut seen = std::collections::HashSet::new();
    let mut cursor = "0".to_string();
    for _ in 0..10_000 {
        let (next, items): (String, Vec<String>) =
            q(&mut con, &["ZSCAN", "big", &cursor, "COUNT", "50"]);
        for pair in items.chunks(2) {
            assert!(seen.insert(pair[0].clone()));
        }
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), model.len());
}

#[test]
fn bzpopmin_is_served_by_another_clients_zadd() {
    let h = common::start();
    let client = common::client(&h);
    let waiter = std::thread::spawn(move || {
        let mut con = client.get_connection().unwrap();
        let r: (String, String, f64) = q(&mut con, &["BZPOPMIN", "q1", "q2", "0"]);
        r
    });
    let mut con = common::conn(&h);
    // Wait (bounded) until the waiter is blocked, then feed it.
    for _ in 0..10_000 {
        let info: String = q(&mut con, &["CLIENT", "LIST"]);
        if info.contains("cmd=bzpopmin") {
            break;
        }
        std::thread::yield_now();
    }
    let _: i64 = q(&mut con, &["ZADD", "q2", "3", "c", "1", "a"]);
    let (key, member, score) = waiter.join().unwrap();
    assert_eq!((key.as_str(), member.as_str(), score), ("q2", "a", 1.0));
    let left: Vec<String> = q(&mut con, &["ZRANGE", "q2", "0", "-1"]);
    assert_eq!(left, vec!["c"]);
}

#[test]
fn hyperloglog_counts_within_error_and_merges() {
    let h = common::start();
    let mut con = common::conn(&h);
    for chunk in (0..20_000).collect::<Vec<u32>>().chunks(1000) {
        let mut c = redis::cmd("PFADD");
        c.arg("hll1");
        for i in chunk {
            c.arg(format!("e{i}"));
        }
        let _: i64 = c.query(&mut con).unwrap();
    }
    let n: f64 = q::<i64>(&mut con, &["PFCOUNT", "hll1"]) as f64;
    assert!((n - 20_000.0).abs() / 20_000.0 < 0.05, "estimate {n}");
    let _: i64 = q(&mut con, &["PFADD", "hll2", "e1", "x1", "x2"]);
    let _: String = q(&mut con, &["PFMERGE", "hll3", "hll1", "hll2"]);
    let m: i64 = q(&mut con, &["PFCOUNT", "hll3"]);
    let u: i64 = q(&mut con, &["PFCOUNT", "hll1", "hll2"]);
    assert_eq!(m, u);
}

/// ZSCAN's guarantee on a big set: members present for the whole scan are
/// returned even when others are removed and added between calls.
#[test]
fn zscan_survives_removals_and_additions_during_the_scan() {
    let h = common::start();
    let mut con = common::conn(&h);
    for k in 0..20 {
        let mut c = redis::cmd("ZADD");
        c.arg("zs");
        for i in k * 100..k * 100 + 100 {
            // Runs of 3 equal scores.
            c.arg(i / 3).arg(format!("m{i}"));
        }
        let _: i64 = c.query(&mut con).unwrap();
    }
    let mut seen = std::collections::HashSet::new();
    let mut removed = std::collections::HashSet::new();
    let mut cursor = "0".to_string();
    let mut round = 0;
    loop {
        let (next, items): (String, Vec<String>) =
            q(&mut con, &["ZSCAN", "zs", &cursor, "COUNT", "40"]);
        for pair in items.chunks(2) {
            seen.insert(pair[0].clone());
        }
        // Remove some low-ranked members (already returned) and add new ones.
        let victims: Vec<String> = q(&mut con, &["ZRANGE", "zs", "0", "4"]);
        for v in &victims {
            let _: i64 = q(&mut con, &["ZREM", "zs", v]);
            removed.insert(v.clone());
        }
        let _: i64 = q(&mut con, &["ZADD", "zs", "-1", &format!("new{round}")]);
        round += 1;
        assert!(round < 1000, "scan does not finish");
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    for i in 0..2000 {
        let m = format!("m{i}");
        if !removed.contains(&m) {
            assert!(seen.contains(&m), "{m} missed");
        }
    }
}
