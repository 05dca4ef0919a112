//! String commands through a real client (the `redis` crate): the patterns
//! applications build on them — locks, counters, stock guards — under
//! concurrent clients, plus limits that compat cases cannot reach.

mod common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::thread;

use redis::Commands;

const CLIENTS: usize = 50;

/// `SET lock token NX PX ms` as a mutex: a non-atomic read-modify-write
/// inside the critical section never loses an update.
#[test]
fn set_nx_px_lock_gives_mutual_exclusion() {
    let h = common::start();
    let per_client = 20;
    let handles: Vec<_> = (0..CLIENTS)
        .map(|id| {
            let mut con = common::conn(&h);
            thread::spawn(move || {
                let token = format!("client-{id}");
                let mut done = 0;
                // Bounded: each attempt either takes the lock or sees it held.
                for _ in 0..1_000_000 {
                    if done == per_client {
                        break;
                    }
                    let got: Option<String> = redis::cmd("SET")
                        .arg("lock")
                        .arg(&token)
                        .arg("NX")
                        .arg("PX")
                        .arg(30_000)
                        .query(&mut con)
                        .unwrap();
                    if got.is_none() {
                        continue;
                    }
                    // Critical section: unsafe without the lock.
                    let v: i64 = con.get::<_, Option<i64>>("guarded").unwrap().unwrap_or(0);
                    let _: () = con.set("guarded", v + 1).unwrap();
                    // Release only our own lock.
                    let owner: Option<String> = con.get("lock").unwrap();
                    assert_eq!(owner.as_deref(), Some(token.as_str()));
                    let _: i64 = con.del("lock").unwrap();
                    done += 1;
                }
                done
            })
        })
        .collect();
    let total: usize = handles.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(total, CLIENTS * per_client);
    let mut con = common::conn(&h);
    let v: i64 = con.get("guarded").unwrap();
    assert_eq!(v, (CLIENTS * per_client) as i64);
    let exists: bool = con.exists("lock").unwrap();
    assert!(!exists);
}

/// The older SETNX + EXPIRE lock, and a lock that expires by itself.
#[test]
fn setnx_expire_lock_and_lock_expiry() {
    let h = common::start();
    let mut a = common::conn(&h);
    let mut b = common::conn(&h);
    let got: bool = a.set_nx("job-lock", "a").unwrap();
    assert!(got);
    let set: bool = a.expire("job-lock", 100).unwrap();
    assert!(set);
    let ttl: i64 = a.ttl("job-lock").unwrap();
    assert!((1..=100).contains(&ttl), "{ttl}");
    let got: bool = b.set_nx("job-lock", "b").unwrap();
    assert!(!got);
    let holder: String = b.get("job-lock").unwrap();
    assert_eq!(holder, "a");
    let _: i64 = a.del("job-lock").unwrap();
    let got: bool = b.set_nx("job-lock", "b").unwrap();
    assert!(got);

    // A lock with a short PX goes away on its own; poll (bounded) until it does.
    let ok: Option<String> = redis::cmd("SET")
        .arg("short")
        .arg("x")
        .arg("NX")
        .arg("PX")
        .arg(30)
        .query(&mut a)
        .unwrap();
    assert_eq!(ok.as_deref(), Some("OK"));
    let mut gone = false;
    for _ in 0..500 {
        let v: Option<String> = a.get("short").unwrap();
        if v.is_none() {
            gone = true;
            break;
        }
        thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(gone, "a PX lock must expire");
    let again: Option<String> = redis::cmd("SET")
        .arg("short")
        .arg("y")
        .arg("NX")
        .arg("PX")
        .arg(30_000)
        .query(&mut b)
        .unwrap();
    assert_eq!(again.as_deref(), Some("OK"));
}

/// 50 clients incrementing one counter end exactly at the sum.
#[test]
fn incr_counters_are_exact_under_concurrency() {
    let h = common::start();
    let per_client = 200;
    let handles: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let mut con = common::conn(&h);
            thread::spawn(move || {
                for j in 0..per_client {
                    let _: i64 = con.incr("hits", 1).unwrap();
                    let _: i64 = redis::cmd("INCRBY")
                        .arg("bytes")
                        .arg(3)
                        .query(&mut con)
                        .unwrap();
                    if (i + j) % 2 == 0 {
                        let _: i64 = redis::cmd("DECR").arg("balance").query(&mut con).unwrap();
                    } else {
                        let _: i64 = redis::cmd("DECRBY")
                            .arg("balance")
                            .arg(-1)
                            .query(&mut con)
                            .unwrap();
                    }
                    let _: String = redis::cmd("INCRBYFLOAT")
                        .arg("f")
                        .arg("0.5")
                        .query(&mut con)
                        .unwrap();
                }
            })
        })
        .collect();
    for t in handles {
        t.join().unwrap();
    }
    let mut con = common::conn(&h);
    let n = (CLIENTS * per_client) as i64;
    let hits: i64 = con.get("hits").unwrap();
    let bytes: i64 = con.get("bytes").unwrap();
    let balance: i64 = con.get("balance").unwrap();
    let f: String = con.get("f").unwrap();
    assert_eq!(hits, n);
    assert_eq!(bytes, 3 * n);
    assert_eq!(balance, 0);
    assert_eq!(f, (n / 2).to_string());
}

/// Flash sale: stock is decremented by many buyers; with a guard it never
/// goes below zero and exactly the stock is sold.
#[test]
fn flash_sale_decr_never_oversells() {
    let h = common::start();
    let stock = 100;
    let mut con = common::conn(&h);
    let _: () = con.set("stock", stock).unwrap();
    let _: () = con.set("stock2", stock).unwrap();
    let sold = Arc::new(AtomicI64::new(0));
    let sold2 = Arc::new(AtomicI64::new(0));
    let handles: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let mut con = common::conn(&h);
            let (sold, sold2) = (sold.clone(), sold2.clone());
            thread::spawn(move || {
                for _ in 0..5 {
                    // Guard 1: DECR, and give the unit back when it went negative.
                    let left: i64 = con.decr("stock", 1).unwrap();
                    if left >= 0 {
                        sold.fetch_add(1, Ordering::SeqCst);
                    } else {
                        let _: i64 = con.incr("stock", 1).unwrap();
                    }
                    // Guard 2: WATCH + check + MULTI/DECR/EXEC, retried on conflict.
                    for _ in 0..10_000 {
                        let _: () = redis::cmd("WATCH").arg("stock2").query(&mut con).unwrap();
                        let left: i64 = con.get("stock2").unwrap();
                        if left <= 0 {
                            let _: () = redis::cmd("UNWATCH").query(&mut con).unwrap();
                            break;
                        }
                        let r: Option<(i64,)> = redis::pipe()
                            .atomic()
                            .decr("stock2", 1)
                            .query(&mut con)
                            .unwrap();
                        if let Some((after,)) = r {
                            assert!(after >= 0, "WATCH guard let stock go negative");
                            sold2.fetch_add(1, Ordering::SeqCst);
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    for t in handles {
        t.join().unwrap();
    }
    let left: i64 = con.get("stock").unwrap();
    let left2: i64 = con.get("stock2").unwrap();
    assert_eq!(left, 0);
    assert_eq!(left2, 0);
    assert_eq!(sold.load(Ordering::SeqCst), stock);
    assert_eq!(sold2.load(Ordering::SeqCst), stock);
}

/// APPEND and SETRANGE stop at `proto-max-bulk-len` (1 MB here, Redis's minimum).
#[test]
fn string_size_limit() {
    let h = common::start_with(&["--proto-max-bulk-len", "1mb"]);
    let mut con = common::conn(&h);
    let n: i64 = con.setrange("big", 1024 * 1024 - 1, "x").unwrap();
    assert_eq!(n, 1024 * 1024);
    let err = con.append::<_, _, i64>("big", "y").unwrap_err();
    assert!(
        err.to_string()
            .contains("string exceeds maximum allowed size (proto-max-bulk-len)"),
        "{err}"
    );
    let err = con
        .setrange::<_, _, i64>("big", 1024 * 1024, "y")
        .unwrap_err();
    assert!(err.to_string().contains("proto-max-bulk-len"), "{err}");
    let n: i64 = con.setrange("big", 1024 * 1024 - 1, "z").unwrap();
    assert_eq!(n, 1024 * 1024);
    let len: i64 = con.strlen("big").unwrap();
    assert_eq!(len, 1024 * 1024);
    // A new key may be created by APPEND up to the request size limit.
    let n: i64 = con.append("small", "abc").unwrap();
    assert_eq!(n, 3);
}

/// GET returns exactly what SET stored, binary bytes included, for large values.
#[test]
fn binary_and_large_values_roundtrip() {
    let h = common::start();
    let mut con = common::conn(&h);
    let big: Vec<u8> = (0..500_000u32).map(|i| (i % 251) as u8).collect();
    let _: () = con.set("blob", &big).unwrap();
    let back: Vec<u8> = con.get("blob").unwrap();
    assert_eq!(back, big);
    let part: Vec<u8> = con.getrange("blob", 1000, 1999).unwrap();
    assert_eq!(part, big[1000..2000].to_vec());
    let vals: Vec<Option<Vec<u8>>> = con.mget(&["blob", "none"]).unwrap();
    assert_eq!(vals[0].as_deref(), Some(&big[..]));
    assert_eq!(vals[1], None);
}
