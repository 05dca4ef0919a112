//! Hashes over real sockets: records as hashes, de-duplication, encodings, HSCAN.

mod common;

use std::collections::{HashMap, HashSet};

use redis::Commands;

/// HEXISTS/HSET de-duplication of events and per-user counters.
#[test]
fn dedup_and_counters() {
    let h = common::start();
    let mut c = common::conn(&h);
    let events = ["e1", "e2", "e1", "e3", "e2", "e1"];
    let mut processed = 0;
    for e in events {
        let seen: bool = c.hexists("seen", e).unwrap();
        if !seen {
            let _: i64 = c.hset("seen", e, 1).unwrap();
            let _: i64 = c.hincr("stats", "processed", 1).unwrap();
            processed += 1;
        }
        // HSETNX is the atomic form of the same check.
        let _: bool = c.hset_nx("seen2", e, 1).unwrap();
    }
    assert_eq!(processed, 3);
    let n: i64 = c.hget("stats", "processed").unwrap();
    assert_eq!(n, 3);
    let n2: i64 = c.hlen("seen2").unwrap();
    assert_eq!(n2, 3);
    let f: String = redis::cmd("HINCRBYFLOAT")
        .arg("stats")
        .arg("ratio")
        .arg("0.1")
        .query(&mut c)
        .unwrap();
    let f2: String = redis::cmd("HINCRBYFLOAT")
        .arg("stats")
        .arg("ratio")
        .arg("0.2")
        .query(&mut c)
        .unwrap();
    assert_eq!((f.as_str(), f2.as_str()), ("0.1", "0.3"));
}

/// A large hash converts to the dict encoding and stays exact; HSCAN
/// returns every field across calls.
#[test]
fn big_hash_and_hscan() {
    let h = common::start();
    let mut c = common::conn(&h);
    let mut model = HashMap::new();
    for i in 0..1000 {
        let (f, v) = (format!("field:{i}"), format!("value:{}", i * 7));
        let _: i64 = c.hset("big", &f, &v).unwrap();
        model.insert(f, v);
    }
    let enc: String = redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg("big")
        .query(&mut c)
        .unwrap();
    assert_eq!(enc, "hashtable");
    let all: HashMap<String, String> = c.hgetall("big").unwrap();
    assert_eq!(all, model);
    let mut seen = HashSet::new();
    let mut cursor = 0u64;
    for _ in 0..10_000 {
        let (next, items): (u64, Vec<String>) = redis::cmd("HSCAN")
            .arg("big")
            .arg(cursor)
            .arg("COUNT")
            .arg(50)
            .query(&mut c)
            .unwrap();
        for p in items.chunks(2) {
            assert_eq!(model[&p[0]], p[1]);
            seen.insert(p[0].clone());
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(seen.len(), 1000);
    for i in 0..1000 {
        let n: i64 = c.hdel("big", format!("field:{i}")).unwrap();
        assert_eq!(n, 1);
    }
    let exists: bool = c.exists("big").unwrap();
    assert!(!exists);
}

/// Small hashes keep insertion order (as Redis's listpack does).
#[test]
fn small_hash_keeps_insertion_order() {
    let h = common::start();
    let mut c = common::conn(&h);
    let _: () = redis::cmd("HSET")
        .arg("h")
        .arg(&["z", "1", "a", "2", "m", "3"])
        .query(&mut c)
        .unwrap();
    let _: i64 = c.hset("h", "a", "changed").unwrap();
    let keys: Vec<String> = c.hkeys("h").unwrap();
    assert_eq!(keys, vec!["z", "a", "m"]);
    let vals: Vec<String> = c.hvals("h").unwrap();
    assert_eq!(vals, vec!["1", "changed", "3"]);
}
