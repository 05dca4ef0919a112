//! Memory accounting beside a real redis-server: INFO memory's fields, and `used_memory` following the data added and freed.
//!
//! Oxidis runs as its own process here (the allocator's count is
//! process-wide, so an in-process server would also count the test).

mod common;

use common::process::Oxidis;
use common::real_redis::RedisServer;

/// A client connection to the Oxidis process.
fn connect(o: &Oxidis) -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{}/", o.port))
        .unwrap()
        .get_connection()
        .unwrap()
}

/// INFO memory as (field, value) pairs, in order.
fn info_memory(c: &mut redis::Connection) -> Vec<(String, String)> {
    let s: String = redis::cmd("INFO").arg("memory").query(c).unwrap();
    s.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn field(c: &mut redis::Connection, name: &str) -> String {
    info_memory(c)
        .into_iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {name} in INFO memory"))
        .1
}

fn used(c: &mut redis::Connection) -> i64 {
    field(c, "used_memory").parse().unwrap()
}

#[test]
fn info_memory_fields_are_redis_fields_in_redis_order() {
    let redis = RedisServer::start();
    let ox = Oxidis::start();
    let names = |c: &mut redis::Connection| -> Vec<String> {
        info_memory(c).into_iter().map(|(k, _)| k).collect()
    };
    assert_eq!(names(&mut connect(&ox)), names(&mut redis.conn()));
    let mut c = connect(&ox);
    let alloc = field(&mut c, "mem_allocator");
    assert!(
        ["jemalloc-5.3.0", "libc", "mimalloc"].contains(&alloc.as_str()),
        "{alloc}"
    );
}

/// The MEMORY STATS keys, in order (db.N keys stand for themselves).
fn stats_keys(c: &mut redis::Connection) -> Vec<String> {
    let v: Vec<redis::Value> = redis::cmd("MEMORY").arg("STATS").query(c).unwrap();
    v.iter()
        .step_by(2)
        .map(|k| match k {
            redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn memory_stats_keys_match_redis() {
    let redis = RedisServer::start();
    let ox = Oxidis::start();
    for c in [&mut redis.conn(), &mut connect(&ox)] {
        let _: () = redis::cmd("SET").arg("k").arg("v").query(c).unwrap();
    }
    assert_eq!(stats_keys(&mut connect(&ox)), stats_keys(&mut redis.conn()));
}

/// Fills `n` string keys of `size` bytes and `n / 100` hashes of 100 fields.
fn fill(c: &mut redis::Connection, n: usize, size: usize) {
    let value = "x".repeat(size);
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut p = redis::pipe();
        for i in chunk {
            p.cmd("SET").arg(format!("key:{i}")).arg(&value).ignore();
        }
        p.query::<()>(c).unwrap();
    }
    for h in 0..n / 100 {
        let mut p = redis::pipe();
        for f in 0..100 {
            p.cmd("HSET")
                .arg(format!("hash:{h}"))
                .arg(format!("field:{f}"))
                .arg(&value)
                .ignore();
        }
        p.query::<()>(c).unwrap();
    }
}

/// used_memory before, after the fill, after deleting half the strings, and
/// after FLUSHALL.
fn figures(c: &mut redis::Connection) -> [i64; 4] {
    const N: usize = 50_000;
    let base = used(c);
    fill(c, N, 100);
    let full = used(c);
    for chunk in (0..N / 2).collect::<Vec<_>>().chunks(1000) {
        let mut p = redis::pipe();
        for i in chunk {
            p.cmd("DEL").arg(format!("key:{i}")).ignore();
        }
        p.query::<()>(c).unwrap();
    }
    let half = used(c);
    let _: () = redis::cmd("FLUSHALL").query(c).unwrap();
    let flushed = used(c);
    [base, full, half, flushed]
}

#[test]
fn used_memory_follows_the_data_as_redis_reports_it() {
    let redis = RedisServer::start();
    let ox = Oxidis::start();
    let r = figures(&mut redis.conn());
    let o = figures(&mut connect(&ox));
    eprintln!("redis {r:?}\noxidis {o:?}");
    let (r_grow, o_grow) = (r[1] - r[0], o[1] - o[0]);
    // The data added: 50k keys and values, 500 hashes of 100 fields.
    let payload = 50_000 * (9 + 100) + 500 * 100 * (8 + 100);
    // Grows by at least the data added, and at most what Redis counts for
    // the same data plus a quarter.
    assert!(o_grow >= payload, "grew {o_grow} < payload {payload}");
    assert!(
        o_grow <= r_grow + r_grow / 4,
        "grew {o_grow}, Redis {r_grow}"
    );
    // Deleting half the strings frees about what Redis frees (within a
    // quarter of Redis's figure).
    let (r_del, o_del) = (r[1] - r[2], o[1] - o[2]);
    assert!(
        (o_del - r_del).abs() <= r_del / 4,
        "freed {o_del}, Redis {r_del}"
    );
    // FLUSHALL comes back to the start within what Redis keeps over its own
    // start (plus 1% of the fill for tables kept for reuse).
    let (r_left, o_left) = (r[3] - r[0], o[3] - o[0]);
    assert!(
        o_left <= r_left.max(0) + r_grow / 100,
        "left {o_left} after FLUSHALL, Redis {r_left}"
    );
}

/// Resident set size of a process, from /proc.
fn rss_of(pid: u32) -> i64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap();
    s.split_whitespace().nth(1).unwrap().parse::<i64>().unwrap() * 4096
}

#[test]
fn flushall_returns_the_memory_to_the_os() {
    let ox = Oxidis::start();
    let mut c = connect(&ox);
    let base = rss_of(ox.child.id());
    fill(&mut c, 100_000, 100);
    let full = rss_of(ox.child.id());
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    let flushed = rss_of(ox.child.id());
    assert!(
        flushed - base < (full - base) / 4,
        "RSS {base} -> {full} -> {flushed} after FLUSHALL"
    );
    // MEMORY PURGE answers OK (and purges again).
    let ok: String = redis::cmd("MEMORY").arg("PURGE").query(&mut c).unwrap();
    assert_eq!(ok, "OK");
}

#[test]
fn peak_holds_the_highest_figure_and_doctor_sees_it() {
    let ox = Oxidis::start();
    let mut c = connect(&ox);
    let _: () = redis::cmd("SET")
        .arg("big")
        .arg("x".repeat(32 << 20))
        .query(&mut c)
        .unwrap();
    let full = used(&mut c);
    let _: () = redis::cmd("DEL").arg("big").query(&mut c).unwrap();
    let peak: i64 = field(&mut c, "used_memory_peak").parse().unwrap();
    assert!(peak >= full, "peak {peak} < {full}");
    // Under 5 MB used: Redis's answer for an (almost) empty instance.
    let doctor: String = redis::cmd("MEMORY").arg("DOCTOR").query(&mut c).unwrap();
    assert!(
        doctor.starts_with("Hi Sam, this instance is empty"),
        "{doctor}"
    );
    // Over 5 MB with a peak above 150%: the peak report.
    let _: () = redis::cmd("SET")
        .arg("mid")
        .arg("x".repeat(8 << 20))
        .query(&mut c)
        .unwrap();
    let doctor: String = redis::cmd("MEMORY").arg("DOCTOR").query(&mut c).unwrap();
    assert!(
        doctor.starts_with("Sam, I detected a few issues in this Redis instance memory implants:\n\n * Peak memory: In the past this instance used more than 150% the memory"),
        "{doctor}"
    );
    assert!(doctor.ends_with("I'm here to keep you safe, Sam. I want to help you.\n"));
}

/// INFO memory's figure `name` as a number.
fn num(c: &mut redis::Connection, name: &str) -> f64 {
    field(c, name).parse().unwrap()
}

/// A library that keeps a 300,000-element Lua table alive in the FUNCTION
/// VM; the growth of (used_memory, used_memory_vm_functions) it causes.
fn lua_table_growth(c: &mut redis::Connection) -> (f64, f64) {
    let (used0, vm0) = (num(c, "used_memory"), num(c, "used_memory_vm_functions"));
    let lib = "#!lua name=big\n\
               local t = {} for i = 1, 300000 do t[i] = i end\n\
               redis.register_function('size', function() return #t end)";
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(lib)
        .query(c)
        .unwrap();
    let n: i64 = redis::cmd("FCALL").arg("size").arg(0).query(c).unwrap();
    assert_eq!(n, 300_000);
    (
        num(c, "used_memory") - used0,
        num(c, "used_memory_vm_functions") - vm0,
    )
}

#[test]
fn the_lua_vms_are_outside_used_memory_as_redis() {
    // Redis's Lua calls the C allocator directly, not zmalloc: its VMs'
    // memory shows in used_memory_lua / used_memory_vm_*, not in
    // used_memory, and maxmemory does not count it.
    let redis = RedisServer::start();
    let ox = Oxidis::start();
    for (who, c) in [("redis", &mut redis.conn()), ("oxidis", &mut connect(&ox))] {
        let (used, vm) = lua_table_growth(c);
        eprintln!("{who}: used_memory +{used}, vm +{vm}");
        assert!(vm > 4e6, "{who}: the table shows in the VM's figure: +{vm}");
        assert!(used < vm / 4.0, "{who}: used_memory +{used} for a VM +{vm}");
        // Both VMs' figures are Lua's own count, in whole KB.
        let _: i64 = redis::cmd("EVAL").arg("return 1").arg(0).query(c).unwrap();
        for name in ["used_memory_lua", "used_memory_vm_functions"] {
            let v = num(c, name);
            assert_eq!(v % 1024.0, 0.0, "{who}: {name} {v}");
        }
    }
}

/// Redis's unit/memefficiency "Active defrag eval scripts" fill: 50,000
/// SCRIPT LOADs of 400-byte scripts, each followed by a SET of the same
/// text; then (allocator_frag_ratio, used_memory_dataset / used_memory).
fn cached_scripts_fill(c: &mut redis::Connection) -> (f64, f64) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("hz")
        .arg(100)
        .query(c)
        .unwrap();
    let dummy = format!("--{}\nreturn ", "x".repeat(400));
    for chunk in (0..50_000).collect::<Vec<_>>().chunks(1000) {
        let mut p = redis::pipe();
        for j in chunk {
            let val = format!("{dummy}{j:06}");
            p.cmd("SCRIPT").arg("LOAD").arg(&val).ignore();
            p.cmd("SET").arg(format!("k{j}")).arg(&val).ignore();
        }
        p.query::<()>(c).unwrap();
    }
    // The allocator's figures are sampled at most every 100 ms.
    std::thread::sleep(std::time::Duration::from_millis(250));
    let frag = num(c, "allocator_frag_ratio");
    let dataset = num(c, "used_memory_dataset") / num(c, "used_memory");
    (frag, dataset)
}

#[test]
fn cached_scripts_leave_the_heap_as_dense_as_redis() {
    let redis = RedisServer::start();
    let ox = Oxidis::start();
    let (r_frag, r_dataset) = cached_scripts_fill(&mut redis.conn());
    let (o_frag, o_dataset) = cached_scripts_fill(&mut connect(&ox));
    eprintln!(
        "frag: redis {r_frag} oxidis {o_frag}; dataset share: redis {r_dataset} oxidis {o_dataset}"
    );
    // Redis's test asserts a ratio below 1.05 here (it passes on Redis).
    assert!(r_frag < 1.05, "redis {r_frag}");
    assert!(o_frag < 1.05, "oxidis {o_frag}");
    // The script cache is overhead, as Redis counts it (the SHAs, bodies
    // and table), so the dataset's share of used_memory is Redis's.
    assert!(
        (o_dataset - r_dataset).abs() < 0.05,
        "dataset share: oxidis {o_dataset}, redis {r_dataset}"
    );
}
