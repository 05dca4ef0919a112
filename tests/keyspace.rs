//! Keyspace commands through a real client: SCAN while another client
//! writes, RANDOMKEY, expiry, and the LFU/LRU metadata behind OBJECT.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use redis::Commands;

/// A full SCAN returns every key that exists for the whole iteration while
/// another client keeps adding and deleting keys (resizing the table).
#[test]
fn scan_sees_every_stable_key_during_concurrent_writes() {
    let h = common::start();
    let mut con = common::conn(&h);
    let stable: Vec<String> = (0..5000).map(|i| format!("keep:{i}")).collect();
    let mut pipe = redis::pipe();
    for k in &stable {
        pipe.set(k, 1).ignore();
    }
    let _: () = pipe.query(&mut con).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let mut w = common::conn(&h);
        let stop = stop.clone();
        thread::spawn(move || {
            let mut round = 0u64;
            while !stop.load(Ordering::SeqCst) && round < 100_000 {
                let mut p = redis::pipe();
                for i in 0..200 {
                    p.set(format!("tmp:{round}:{i}"), 1).ignore();
                }
                let _: () = p.query(&mut w).unwrap();
                if round % 3 == 2 {
                    let keys: Vec<String> = w.keys("tmp:*").unwrap();
                    if !keys.is_empty() {
                        let _: i64 = w.del(keys).unwrap();
                    }
                }
                round += 1;
            }
        })
    };

    let mut seen = HashSet::new();
    let mut cursor: u64 = 0;
    let mut steps = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(20)
            .query(&mut con)
            .unwrap();
        seen.extend(keys);
        cursor = next;
        steps += 1;
        if cursor == 0 || steps > 1_000_000 {
            break;
        }
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    assert_eq!(cursor, 0);
    for k in &stable {
        assert!(seen.contains(k), "{k} missing from SCAN");
    }
}

/// SCAN with MATCH and TYPE filters over a bigger keyspace.
#[test]
fn scan_filters() {
    let h = common::start();
    let mut con = common::conn(&h);
    for i in 0..300 {
        let _: () = con.set(format!("user:{i}"), i).unwrap();
        let _: () = con.set(format!("other:{i}"), i).unwrap();
    }
    let mut got = HashSet::new();
    let mut cursor: u64 = 0;
    for _ in 0..100_000 {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("user:1*")
            .arg("TYPE")
            .arg("string")
            .query(&mut con)
            .unwrap();
        for k in keys {
            assert!(k.starts_with("user:1"), "{k}");
            got.insert(k);
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    let want = (0..300).filter(|i| i.to_string().starts_with('1')).count();
    assert_eq!(got.len(), want);
    let (_, none): (u64, Vec<String>) = redis::cmd("SCAN")
        .arg(0)
        .arg("TYPE")
        .arg("hash")
        .arg("COUNT")
        .arg(10_000)
        .query(&mut con)
        .unwrap();
    assert!(none.is_empty());
}

/// RANDOMKEY only ever names keys that exist, and finds more than one.
#[test]
fn randomkey_returns_existing_keys() {
    let h = common::start();
    let mut con = common::conn(&h);
    let none: Option<String> = redis::cmd("RANDOMKEY").query(&mut con).unwrap();
    assert_eq!(none, None);
    for i in 0..100 {
        let _: () = con.set(format!("k{i}"), i).unwrap();
    }
    let mut distinct = HashSet::new();
    for _ in 0..500 {
        let k: String = redis::cmd("RANDOMKEY").query(&mut con).unwrap();
        let exists: bool = con.exists(&k).unwrap();
        assert!(exists);
        distinct.insert(k);
    }
    assert!(distinct.len() > 1);
}

/// Keys with a short TTL disappear (lazily on access, or by the sweeper),
/// and TTL/PTTL report -2 afterwards.
#[test]
fn expired_keys_go_away() {
    let h = common::start();
    let mut con = common::conn(&h);
    for i in 0..50 {
        let _: () = redis::cmd("SET")
            .arg(format!("e{i}"))
            .arg(1)
            .arg("PX")
            .arg(20)
            .query(&mut con)
            .unwrap();
    }
    let _: () = con.set("persistent", 1).unwrap();
    let mut left = usize::MAX;
    for _ in 0..500 {
        let keys: Vec<String> = con.keys("e*").unwrap();
        left = keys.len();
        if left == 0 {
            break;
        }
        thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(left, 0);
    let ttl: i64 = con.ttl("e1").unwrap();
    assert_eq!(ttl, -2);
    let pttl: i64 = con.pttl("e1").unwrap();
    assert_eq!(pttl, -2);
    let ttl: i64 = con.ttl("persistent").unwrap();
    assert_eq!(ttl, -1);
}

/// Under an LFU policy OBJECT FREQ grows with accesses; IDLETIME is refused.
#[test]
fn object_freq_under_lfu() {
    let h = common::start_with(&["--maxmemory-policy", "allkeys-lfu"]);
    let mut con = common::conn(&h);
    let _: () = con.set("hot", 1).unwrap();
    let _: () = con.set("cold", 1).unwrap();
    let f0: i64 = redis::cmd("OBJECT")
        .arg("FREQ")
        .arg("hot")
        .query(&mut con)
        .unwrap();
    assert_eq!(f0, 5);
    for _ in 0..2000 {
        let _: i64 = con.get("hot").unwrap();
    }
    let hot: i64 = redis::cmd("OBJECT")
        .arg("FREQ")
        .arg("hot")
        .query(&mut con)
        .unwrap();
    let cold: i64 = redis::cmd("OBJECT")
        .arg("FREQ")
        .arg("cold")
        .query(&mut con)
        .unwrap();
    assert!(hot > cold, "hot {hot} cold {cold}");
    assert_eq!(cold, 5);
    let err = redis::cmd("OBJECT")
        .arg("IDLETIME")
        .arg("hot")
        .query::<i64>(&mut con)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("An LFU maxmemory policy is selected"),
        "{err}"
    );
}
