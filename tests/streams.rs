//! Streams over real sockets: a job queue with a consumer group whose dead
//! worker's jobs are claimed with XAUTOCLAIM, blocked readers woken in
//! order, and the stream type in RDB, DUMP/RESTORE and the AOF both ways
//! with a real redis-server 7.0.15.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::inproc::InProc;
use common::real_redis::{load_rdb, RedisServer};
use common::Raw;
use oxidis::persist::rdb;
use oxidis::resp::value::Value;

/// Sends a command and reads its reply.
fn run(r: &mut Raw, argv: &[&str]) -> Value {
    let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
    r.cmd(&argv);
    r.read()
}

/// Blocked clients the server counts.
fn blocked(r: &mut Raw) -> usize {
    let Value::Bulk(info) = run(r, &["INFO", "clients"]) else {
        panic!()
    };
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// Waits (bounded) until the server counts `n` blocked clients.
fn wait_blocked(r: &mut Raw, n: usize) {
    for _ in 0..5000 {
        if blocked(r) == n {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("never saw {n} blocked clients");
}

fn text(v: &Value) -> String {
    match v {
        Value::Bulk(b) | Value::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Int(n) => n.to_string(),
        other => panic!("not text: {other:?}"),
    }
}

fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(a) => a,
        other => panic!("not an array: {other:?}"),
    }
}

/// The `(id, job)` pairs of an entries array.
fn jobs_of(entries: &Value) -> Vec<(String, String)> {
    items(entries)
        .iter()
        .map(|e| {
            let pair = items(e);
            (text(&pair[0]), text(&items(&pair[1])[1]))
        })
        .collect()
}

/// XREADGROUP's entries for the one stream read.
fn read_group(c: &mut Raw, consumer: &str, count: usize) -> Vec<(String, String)> {
    let n = count.to_string();
    let v = run(
        c,
        &[
            "XREADGROUP",
            "GROUP",
            "workers",
            consumer,
            "COUNT",
            &n,
            "STREAMS",
            "jobs",
            ">",
        ],
    );
    match v {
        Value::NullArray | Value::Null => Vec::new(),
        v => jobs_of(&items(&items(&v)[0])[1]),
    }
}

/// A job queue: a producer adds 30 jobs, three workers share them through
/// a consumer group; the third dies holding its jobs unacknowledged, and a
/// survivor takes them over with XAUTOCLAIM. Every job is done exactly
/// once and nothing stays pending.
#[test]
fn job_queue_survives_a_dead_worker() {
    let h = common::start();
    let mut producer = Raw::connect(&h);
    let ok = run(
        &mut producer,
        &["XGROUP", "CREATE", "jobs", "workers", "$", "MKSTREAM"],
    );
    assert_eq!(ok, Value::Simple(b"OK".to_vec()));
    for i in 0..30 {
        let job = format!("job-{i}");
        assert!(matches!(
            run(&mut producer, &["XADD", "jobs", "*", "job", &job]),
            Value::Bulk(_)
        ));
    }
    let mut workers: Vec<Raw> = (0..3).map(|_| Raw::connect(&h)).collect();
    let names = ["w1", "w2", "w3"];
    let mut done: Vec<String> = Vec::new();
    let mut held_by_dead = Vec::new();
    'rounds: loop {
        for (i, w) in workers.iter_mut().enumerate() {
            let batch = read_group(w, names[i], 4);
            if batch.is_empty() {
                break 'rounds;
            }
            for (id, job) in batch {
                if names[i] == "w3" {
                    // w3 dies before finishing (and before acknowledging).
                    held_by_dead.push(id);
                    continue;
                }
                done.push(job);
                assert_eq!(run(w, &["XACK", "jobs", "workers", &id]), Value::Int(1));
            }
        }
    }
    drop(workers.pop());
    assert!(!held_by_dead.is_empty());
    let w1 = &mut workers[0];
    let pending = run(w1, &["XPENDING", "jobs", "workers"]);
    assert_eq!(items(&pending)[0], Value::Int(held_by_dead.len() as i64));
    // w1 takes over whatever is pending (no idle threshold: no timing).
    let mut cursor = "0-0".to_string();
    let mut claimed = Vec::new();
    loop {
        let v = run(
            w1,
            &[
                "XAUTOCLAIM",
                "jobs",
                "workers",
                "w1",
                "0",
                &cursor,
                "COUNT",
                "2",
            ],
        );
        let parts = items(&v);
        claimed.extend(jobs_of(&parts[1]));
        assert_eq!(parts[2], Value::Array(vec![]), "nothing was deleted");
        cursor = text(&parts[0]);
        if cursor == "0-0" {
            break;
        }
    }
    let claimed_ids: Vec<String> = claimed.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(claimed_ids, held_by_dead);
    for (id, job) in claimed {
        done.push(job);
        assert_eq!(run(w1, &["XACK", "jobs", "workers", &id]), Value::Int(1));
    }
    let set: BTreeSet<&String> = done.iter().collect();
    assert_eq!(done.len(), 30, "no job done twice");
    assert_eq!(set.len(), 30, "every job done");
    let pending = run(w1, &["XPENDING", "jobs", "workers"]);
    assert_eq!(items(&pending)[0], Value::Int(0));
}

/// Three XREADGROUP readers blocked on one group are served one entry at a
/// time in the order they blocked; XREAD readers are all served by one XADD.
#[test]
fn blocked_readers_are_woken_in_order() {
    let h = common::start();
    let mut c = Raw::connect(&h);
    run(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let mut readers: Vec<Raw> = Vec::new();
    for (i, name) in ["r1", "r2", "r3"].iter().enumerate() {
        let mut r = Raw::connect(&h);
        r.cmd(&[
            b"XREADGROUP",
            b"GROUP",
            b"g",
            name.as_bytes(),
            b"BLOCK",
            b"0",
            b"STREAMS",
            b"s",
            b">",
        ]);
        wait_blocked(&mut c, i + 1);
        readers.push(r);
    }
    for (i, r) in readers.iter_mut().enumerate() {
        let id = format!("{}-0", i + 1);
        let n = i.to_string();
        assert_eq!(text(&run(&mut c, &["XADD", "s", &id, "n", &n])), id);
        let v = r.read();
        let entries = &items(&items(&v)[0])[1];
        assert_eq!(jobs_of(entries), vec![(id.clone(), n)], "reader {i}");
        wait_blocked(&mut c, 2 - i);
    }
    // Each pending entry belongs to the reader that got it.
    let v = run(&mut c, &["XPENDING", "s", "g", "-", "+", "10"]);
    let owners: Vec<String> = items(&v).iter().map(|r| text(&items(r)[1])).collect();
    assert_eq!(owners, ["r1", "r2", "r3"]);
    // XREAD readers do not consume: one XADD serves them all.
    let mut plain: Vec<Raw> = Vec::new();
    for i in 0..3 {
        let mut r = Raw::connect(&h);
        r.cmd(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$"]);
        wait_blocked(&mut c, i + 1);
        plain.push(r);
    }
    run(&mut c, &["XADD", "s", "9-0", "x", "y"]);
    for r in &mut plain {
        let v = r.read();
        assert_eq!(
            jobs_of(&items(&items(&v)[0])[1]),
            vec![("9-0".into(), "y".into())]
        );
    }
    wait_blocked(&mut c, 0);
}

/// Commands building streams of every shape: several nodes, tombstones,
/// fields differing from the master's, an empty stream, groups with
/// pending entries (claimed with fixed times) and idle consumers.
fn stream_dataset() -> Vec<Vec<String>> {
    let mut c: Vec<Vec<String>> = Vec::new();
    let mut cmd = |s: &str| c.push(s.split(' ').map(String::from).collect());
    for i in 1..=250 {
        cmd(&format!(
            "XADD big {i}-{} f{} {} v {}",
            i % 3,
            i % 2,
            i * 7,
            "x".repeat(i % 40 + 1)
        ));
    }
    cmd("XDEL big 5-2 100-1 101-2 250-1");
    cmd("XADD small 1-1 a 1 b 2");
    cmd("XADD small 1-2 b 2 a 1");
    cmd("XADD small 2-0 num -1234567890123 neg -1");
    cmd("XGROUP CREATE small g 0");
    cmd("XGROUP CREATE small g2 $ ENTRIESREAD 3");
    cmd("XGROUP CREATECONSUMER small g idle");
    cmd("XCLAIM small g alice 0 1-1 FORCE TIME 1700000000000 RETRYCOUNT 3 JUSTID");
    cmd("XCLAIM small g bob 0 2-0 FORCE TIME 1700000000001 RETRYCOUNT 1 JUSTID");
    cmd("XGROUP CREATE empty g 0 MKSTREAM");
    cmd("XADD trimmed 1-0 f v");
    cmd("XADD trimmed 2-0 f v");
    cmd("XTRIM trimmed MAXLEN 0");
    cmd("XSETID trimmed 5-0 ENTRIESADDED 9 MAXDELETEDID 3-0");
    c
}

/// What a server answers about a stream.
fn describe_values(run: &mut dyn FnMut(&[&[u8]]) -> Value, key: &[u8]) -> Vec<Value> {
    vec![
        run(&[b"XINFO", b"STREAM", key, b"FULL", b"COUNT", b"0"]),
        run(&[b"XRANGE", key, b"-", b"+"]),
        run(&[b"XREVRANGE", key, b"+", b"-", b"COUNT", b"3"]),
        run(&[b"TYPE", key]),
    ]
}

fn describe(run: &mut dyn FnMut(&[&[u8]]) -> Value, key: &[u8]) -> String {
    format!("{:?}", describe_values(run, key))
}

const KEYS: [&[u8]; 4] = [b"big", b"small", b"empty", b"trimmed"];

fn build(run: &mut dyn FnMut(&[&[u8]]) -> Value) {
    for c in stream_dataset() {
        let argv: Vec<&[u8]> = c.iter().map(|a| a.as_bytes()).collect();
        let r = run(&argv);
        assert!(!matches!(r, Value::Error(_)), "{c:?} -> {r:?}");
    }
}

fn describe_all(run: &mut dyn FnMut(&[&[u8]]) -> Value) -> BTreeMap<String, String> {
    describe_all_with(run, &mut |_| {})
}

/// As [`describe_all`], each reply passed through `mask` first.
fn describe_all_with(
    run: &mut dyn FnMut(&[&[u8]]) -> Value,
    mask: &mut dyn FnMut(&mut Value),
) -> BTreeMap<String, String> {
    KEYS.iter()
        .map(|k| {
            let mut v = describe_values(run, k);
            v.iter_mut().for_each(&mut *mask);
            (String::from_utf8_lossy(k).into_owned(), format!("{v:?}"))
        })
        .collect()
}

/// A connection to a real Redis that answers in Oxidis's `Value`s.
fn real_runner(r: &RedisServer) -> impl FnMut(&[&[u8]]) -> Value {
    let mut s = r.tcp();
    let mut buf: Vec<u8> = Vec::new();
    move |argv: &[&[u8]]| {
        use std::io::{Read, Write};
        s.write_all(&common::encode(argv)).unwrap();
        loop {
            if let Ok(Some((v, n))) = oxidis::resp::value::parse_value(&buf) {
                buf.drain(..n);
                return v;
            }
            let mut chunk = [0u8; 65536];
            let n = s.read(&mut chunk).unwrap();
            assert!(n > 0);
            buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Redis saves streams, Oxidis loads them: both describe them alike; and
/// Oxidis's image of them is byte for byte what Redis wrote.
#[test]
fn oxidis_loads_streams_redis_writes() {
    let r = RedisServer::start();
    let mut run = real_runner(&r);
    build(&mut run);
    let want = describe_all(&mut run);
    let image = r.save_rdb();
    let mut o = InProc::new(&[]);
    rdb::load_dataset(&mut o.srv, &image).unwrap_or_else(|e| panic!("{}", e.message));
    let got = describe_all(&mut |a| o.cmd(a));
    assert_eq!(got, want);
    // DUMP payloads of the loaded streams equal Redis's.
    for k in KEYS {
        assert_eq!(
            o.cmd(&[b"DUMP", k]),
            run(&[b"DUMP", k]),
            "{}",
            String::from_utf8_lossy(k)
        );
    }
}

/// Oxidis builds and saves streams, Redis loads them and describes them as
/// Oxidis does; RESTORE of Oxidis's DUMP payloads works in Redis.
#[test]
fn redis_loads_streams_oxidis_writes() {
    let mut o = InProc::new(&[]);
    build(&mut |a| o.cmd(a));
    let want = describe_all(&mut |a| o.cmd(a));
    let mut image = Vec::new();
    rdb::write_dataset(&o.srv, &mut image).unwrap();
    let loaded =
        load_rdb(&image, &[]).unwrap_or_else(|log| panic!("Redis refused our image:\n{log}"));
    let mut run = real_runner(&loaded);
    assert_eq!(describe_all(&mut run), want);
    let r = RedisServer::start();
    let mut fresh = real_runner(&r);
    for k in KEYS {
        let Value::Bulk(payload) = o.cmd(&[b"DUMP", k]) else {
            panic!()
        };
        let ok = fresh(&[b"RESTORE", k, b"0", &payload]);
        assert!(!matches!(ok, Value::Error(_)), "{ok:?}");
        assert_eq!(describe(&mut fresh, k), want[&*String::from_utf8_lossy(k)]);
    }
}

/// A stream survives an AOF rewrite (XADD, XSETID, XGROUP CREATE,
/// XCLAIM, CREATECONSUMER as Redis's `rewriteStreamObject`) and a restart.
#[test]
fn streams_survive_an_aof_rewrite_and_restart() {
    let dir = common::real_redis::temp_dir("stream-aof");
    let d = dir.to_str().unwrap();
    let flags = [
        "--dir",
        d,
        "--appendonly",
        "yes",
        "--aof-use-rdb-preamble",
        "no",
    ];
    let h = common::start_with(&flags);
    let mut c = Raw::connect(&h);
    let mut runner = |argv: &[&[u8]]| -> Value {
        c.cmd(argv);
        c.read()
    };
    build(&mut runner);
    let want = describe_all_with(&mut runner, &mut mask_seen);
    let rewriting = |c: &mut Raw| {
        let Value::Bulk(info) = run(c, &["INFO", "persistence"]) else {
            panic!()
        };
        let info = String::from_utf8_lossy(&info).into_owned();
        !(info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0"))
    };
    // The rewrite at startup (if any) ends first, so that ours sees the data.
    for _ in 0..5000 {
        if !rewriting(&mut c) {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    run(&mut c, &["BGREWRITEAOF"]);
    for _ in 0..5000 {
        if !rewriting(&mut c) {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(c);
    drop(h);
    // The base file holds the streams as commands (rewriteStreamObject).
    let base: Vec<u8> = std::fs::read_dir(dir.join("appendonlydir"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".base.aof"))
        .flat_map(|e| std::fs::read(e.path()).unwrap())
        .collect();
    let base = String::from_utf8_lossy(&base);
    for word in [
        "XSETID",
        "ENTRIESADDED",
        "XCLAIM",
        "CREATECONSUMER",
        "ENTRIESREAD",
    ] {
        assert!(base.contains(word), "{word} not in the rewritten base");
    }
    let h = common::start_with(&flags);
    let mut c = Raw::connect(&h);
    // Consumers' seen-times are set again by the commands replayed at
    // load: everything else must be as it was.
    let got = describe_all_with(
        &mut |argv: &[&[u8]]| {
            c.cmd(argv);
            c.read()
        },
        &mut mask_seen,
    );
    assert_eq!(got, want);
    drop(h);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Replaces every value that follows a `seen-time` name with 0.
fn mask_seen(v: &mut Value) {
    if let Value::Array(items) = v {
        for i in 0..items.len() {
            if items[i] == Value::Bulk(b"seen-time".to_vec()) && i + 1 < items.len() {
                items[i + 1] = Value::Int(0);
            }
            mask_seen(&mut items[i]);
        }
    }
}
