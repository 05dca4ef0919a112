//! Sets over real sockets: tags and followers, set algebra against a model, SPOP draining.

mod common;

use std::collections::BTreeSet;

use redis::Commands;

/// Tags per article and common followers, checked against std sets.
#[test]
fn set_algebra_matches_model() {
    let h = common::start();
    let mut c = common::conn(&h);
    let a: BTreeSet<String> = (0..300).map(|i| format!("u{}", i * 2)).collect();
    let b: BTreeSet<String> = (0..300).map(|i| format!("u{}", i * 3)).collect();
    let _: i64 = c.sadd("fa", a.iter().collect::<Vec<_>>()).unwrap();
    let _: i64 = c.sadd("fb", b.iter().collect::<Vec<_>>()).unwrap();
    let inter: BTreeSet<String> = c.sinter(&["fa", "fb"]).unwrap();
    assert_eq!(inter, a.intersection(&b).cloned().collect());
    let union: BTreeSet<String> = c.sunion(&["fa", "fb"]).unwrap();
    assert_eq!(union, a.union(&b).cloned().collect());
    let diff: BTreeSet<String> = c.sdiff(&["fa", "fb"]).unwrap();
    assert_eq!(diff, a.difference(&b).cloned().collect());
    let n: usize = redis::cmd("SINTERCARD")
        .arg(2)
        .arg("fa")
        .arg("fb")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, inter.len());
    let stored: usize = c.sunionstore("fu", &["fa", "fb"]).unwrap();
    assert_eq!(stored, union.len());
}

/// Integer sets are intsets and come back sorted; SPOP drains them.
#[test]
fn intset_sorted_and_spop_drains() {
    let h = common::start();
    let mut c = common::conn(&h);
    let _: i64 = c.sadd("ids", &[50, -3, 7, 1000, 0]).unwrap();
    let m: Vec<i64> = c.smembers("ids").unwrap();
    assert_eq!(m, vec![-3, 0, 7, 50, 1000]);
    let mut got = BTreeSet::new();
    for _ in 0..10 {
        match c.spop::<_, Option<i64>>("ids").unwrap() {
            Some(v) => assert!(got.insert(v)),
            None => break,
        }
    }
    assert_eq!(got.len(), 5);
    let exists: bool = c.exists("ids").unwrap();
    assert!(!exists);
    // SRANDMEMBER with a negative count repeats; positive counts are distinct.
    let _: i64 = c.sadd("few", &["a", "b"]).unwrap();
    let r: Vec<String> = c.srandmember_multiple("few", -10).unwrap();
    assert_eq!(r.len(), 10);
    let r: BTreeSet<String> = c.srandmember_multiple("few", 10).unwrap();
    assert_eq!(r.len(), 2);
}
