//! Lists over real sockets: the recent-contacts and red-envelope flows, and
//! blocking pops (arrival order, timeouts, MULTI/EXEC wake-ups, disconnects,
//! CLIENT UNBLOCK).

mod common;

use std::time::Duration;

use common::Raw;
use oxidis::resp::value::Value;
use redis::Commands;

/// Waits (bounded) until the server counts `n` blocked clients.
fn wait_blocked(c: &mut redis::Connection, n: usize) {
    for _ in 0..2000 {
        let info: String = redis::cmd("INFO").arg("clients").query(c).unwrap();
        let blocked = info
            .lines()
            .find_map(|l| l.strip_prefix("blocked_clients:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap();
        if blocked == n {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("never saw {n} blocked clients");
}

fn bulk(v: &Value) -> Vec<u8> {
    match v {
        Value::Bulk(b) => b.to_vec(),
        other => panic!("not a bulk: {other:?}"),
    }
}

fn pair(v: Value) -> (Vec<u8>, Vec<u8>) {
    match v {
        Value::Array(a) if a.len() == 2 => (bulk(&a[0]), bulk(&a[1])),
        other => panic!("not a pair: {other:?}"),
    }
}

/// Recent contacts: each new contact moves to the front (LREM + LPUSH), the
/// list keeps the last 5 (LTRIM), and LRANGE reads them most recent first.
#[test]
fn recent_contacts_autocomplete() {
    let h = common::start();
    let mut c = common::conn(&h);
    let contacts = [
        "ann", "bob", "cid", "dan", "bob", "eve", "fay", "ann", "gus",
    ];
    for who in contacts {
        let (_, _, _): (i64, i64, ()) = redis::pipe()
            .atomic()
            .lrem("recent:u1", 0, who)
            .lpush("recent:u1", who)
            .ltrim("recent:u1", 0, 4)
            .query(&mut c)
            .unwrap();
    }
    let got: Vec<String> = c.lrange("recent:u1", 0, -1).unwrap();
    assert_eq!(got, vec!["gus", "ann", "fay", "eve", "bob"]);
    // Autocomplete on a prefix filters the recent list client-side.
    let b: Vec<String> = got.into_iter().filter(|s| s.starts_with('b')).collect();
    assert_eq!(b, vec!["bob"]);
    let len: i64 = c.llen("recent:u1").unwrap();
    assert_eq!(len, 5);
}

/// Red envelopes: a pre-filled list of amounts is grabbed with RPOP; a hash
/// of winners stops a user from grabbing twice (HEXISTS, then HSET); each
/// grab is recorded with LPUSH; a consumer drains the record queue.
#[test]
fn red_envelope_flow() {
    let h = common::start();
    let mut c = common::conn(&h);
    let amounts: Vec<String> = (1..=10)
        .map(|i| format!("{{\"id\":{i},\"amount\":{}}}", i * 3))
        .collect();
    let _: i64 = c.rpush("envelope:1:pool", &amounts).unwrap();
    let mut grabbed = Vec::new();
    for user in ["u1", "u2", "u1", "u3", "u2", "u4"] {
        let seen: bool = c.hexists("envelope:1:winners", user).unwrap();
        if seen {
            continue;
        }
        let Some(env): Option<String> = c.rpop("envelope:1:pool", None).unwrap() else {
            break;
        };
        let fresh: i64 = c.hset("envelope:1:winners", user, &env).unwrap();
        assert_eq!(fresh, 1);
        let _: i64 = c
            .lpush("envelope:records", format!("{user}:{env}"))
            .unwrap();
        grabbed.push((user, env));
    }
    assert_eq!(grabbed.len(), 4);
    assert_eq!(grabbed[0].1, amounts[9]); // RPOP takes from the tail
    let left: i64 = c.llen("envelope:1:pool").unwrap();
    assert_eq!(left, 6);
    let winners: i64 = c.hlen("envelope:1:winners").unwrap();
    assert_eq!(winners, 4);
    // A consumer drains the records in arrival order (LPUSH + RPOP = FIFO).
    let mut drained = Vec::new();
    while let Some(r) = c
        .rpop::<_, Option<String>>("envelope:records", None)
        .unwrap()
    {
        drained.push(r);
    }
    assert_eq!(drained.len(), 4);
    assert!(drained[0].starts_with("u1:"));
    assert!(drained[3].starts_with("u4:"));
    let exists: bool = c.exists("envelope:records").unwrap();
    assert!(!exists, "the emptied queue is deleted");
}

/// A blocking consumer thread drains a queue that producers fill.
#[test]
fn blocking_consumer_drains_queue() {
    let h = common::start();
    let client = common::client(&h);
    let consumer = std::thread::spawn(move || {
        let mut c = client.get_connection().unwrap();
        let mut got = Vec::new();
        while got.len() < 100 {
            let r: Option<(String, i64)> = c.brpop("jobs", 10.0).unwrap();
            got.push(r.expect("a job within 10 s").1);
        }
        got
    });
    let mut p = common::conn(&h);
    for i in 0..100i64 {
        let _: i64 = p.lpush("jobs", i).unwrap();
    }
    let got = consumer.join().unwrap();
    assert_eq!(got, (0..100).collect::<Vec<_>>());
}

/// Many clients blocked on one key are served first come, first served.
#[test]
fn blocked_clients_served_in_arrival_order() {
    let h = common::start();
    let mut c = common::conn(&h);
    let mut waiters: Vec<Raw> = Vec::new();
    for i in 0..8 {
        let mut r = Raw::connect(&h);
        r.cmd(&[b"BLPOP", b"q", b"0"]);
        wait_blocked(&mut c, i + 1);
        waiters.push(r);
    }
    let items: Vec<String> = (0..8).map(|i| format!("item{i}")).collect();
    let _: i64 = c.rpush("q", &items).unwrap();
    for (i, w) in waiters.iter_mut().enumerate() {
        let (k, v) = pair(w.read());
        assert_eq!(k, b"q");
        assert_eq!(v, items[i].as_bytes());
    }
    let exists: bool = c.exists("q").unwrap();
    assert!(!exists);
    wait_blocked(&mut c, 0);
}

/// A push that serves only some waiters leaves the rest blocked, in order.
#[test]
fn partial_service_keeps_order() {
    let h = common::start();
    let mut c = common::conn(&h);
    let mut a = Raw::connect(&h);
    a.cmd(&[b"BRPOP", b"k", b"0"]);
    wait_blocked(&mut c, 1);
    let mut b = Raw::connect(&h);
    b.cmd(&[b"BLMPOP", b"0", b"1", b"k", b"LEFT", b"COUNT", b"5"]);
    wait_blocked(&mut c, 2);
    let _: i64 = c.rpush("k", "x").unwrap();
    assert_eq!(pair(a.read()), (b"k".to_vec(), b"x".to_vec()));
    assert!(b.try_read_raw(Duration::from_millis(50)).is_none());
    let _: i64 = c.rpush("k", &["y", "z"]).unwrap();
    assert_eq!(
        b.read_raw(),
        b"*2\r\n$1\r\nk\r\n*2\r\n$1\r\ny\r\n$1\r\nz\r\n".to_vec()
    );
}

/// Timeouts fire with a null array, for every blocking list command.
#[test]
fn timeouts_fire() {
    let h = common::start();
    let mut c = common::conn(&h);
    let mut r = Raw::connect(&h);
    for cmd in [
        &[&b"BLPOP"[..], b"a", b"b", b"0.05"][..],
        &[b"BRPOP", b"a", b"0.05"],
        &[b"BLMPOP", b"0.05", b"1", b"a", b"LEFT"],
        &[b"BRPOPLPUSH", b"a", b"b", b"0.05"],
        &[b"BLMOVE", b"a", b"b", b"LEFT", b"RIGHT", b"0.05"],
    ] {
        r.cmd(cmd);
        assert_eq!(r.read_raw(), b"*-1\r\n".to_vec());
    }
    wait_blocked(&mut c, 0);
    // The connection goes on normally afterwards.
    r.cmd(&[b"PING"]);
    assert_eq!(r.read_raw(), b"+PONG\r\n".to_vec());
}

/// A push inside MULTI wakes the waiter only after EXEC, which sees the
/// whole transaction's effect first.
#[test]
fn wake_up_after_exec() {
    let h = common::start();
    let mut c = common::conn(&h);
    let mut w = Raw::connect(&h);
    w.cmd(&[b"BLPOP", b"tq", b"0"]);
    wait_blocked(&mut c, 1);
    let (n, len): (i64, i64) = redis::pipe()
        .atomic()
        .rpush("tq", &["a", "b"])
        .llen("tq")
        .query(&mut c)
        .unwrap();
    assert_eq!((n, len), (2, 2));
    assert_eq!(pair(w.read()), (b"tq".to_vec(), b"a".to_vec()));
    let rest: Vec<String> = c.lrange("tq", 0, -1).unwrap();
    assert_eq!(rest, vec!["b"]);
    // A blocking pop inside MULTI does not block.
    let r: (Option<(String, String)>,) = redis::pipe()
        .atomic()
        .blpop("nothing", 0.0)
        .query(&mut c)
        .unwrap();
    assert_eq!(r.0, None);
}

/// A client that disconnects while blocked leaves no trace: the next push
/// goes to the next waiter, or stays in the list.
#[test]
fn disconnect_while_blocked() {
    let h = common::start();
    let mut c = common::conn(&h);
    let mut gone = Raw::connect(&h);
    gone.cmd(&[b"BLPOP", b"dq", b"0"]);
    wait_blocked(&mut c, 1);
    let mut next = Raw::connect(&h);
    next.cmd(&[b"BLPOP", b"dq", b"0"]);
    wait_blocked(&mut c, 2);
    drop(gone);
    wait_blocked(&mut c, 1);
    let _: i64 = c.rpush("dq", "v1").unwrap();
    assert_eq!(pair(next.read()), (b"dq".to_vec(), b"v1".to_vec()));
    drop(next);
    wait_blocked(&mut c, 0);
    let _: i64 = c.rpush("dq", "v2").unwrap();
    let left: Vec<String> = c.lrange("dq", 0, -1).unwrap();
    assert_eq!(left, vec!["v2"]);
}

/// CLIENT UNBLOCK answers as on timeout, or with the UNBLOCKED error.
#[test]
fn client_unblock() {
    let h = common::start();
    let mut c = common::conn(&h);
    let mut w = Raw::connect(&h);
    w.cmd(&[b"CLIENT", b"ID"]);
    let id = match w.read() {
        Value::Int(n) => n,
        other => panic!("{other:?}"),
    };
    w.cmd(&[b"BLPOP", b"uq", b"0"]);
    wait_blocked(&mut c, 1);
    let n: i64 = redis::cmd("CLIENT")
        .arg("UNBLOCK")
        .arg(id)
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(w.read_raw(), b"*-1\r\n".to_vec());
    w.cmd(&[b"BLMOVE", b"uq", b"dst", b"LEFT", b"LEFT", b"0"]);
    wait_blocked(&mut c, 1);
    let n: i64 = redis::cmd("CLIENT")
        .arg("UNBLOCK")
        .arg(id)
        .arg("ERROR")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(
        w.read_raw(),
        b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n".to_vec()
    );
    wait_blocked(&mut c, 0);
    let n: i64 = redis::cmd("CLIENT")
        .arg("UNBLOCK")
        .arg(id)
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 0);
    // Unblocked clients are gone from the queue: a push stays in the list.
    let _: i64 = c.rpush("uq", "x").unwrap();
    let len: i64 = c.llen("uq").unwrap();
    assert_eq!(len, 1);
}

/// BLMOVE chains: a move into a key another client waits on wakes it too.
#[test]
fn blmove_chain_wakes_next_waiter() {
    let h = common::start();
    let mut c = common::conn(&h);
    let mut first = Raw::connect(&h);
    first.cmd(&[b"BLMOVE", b"s1", b"s2", b"RIGHT", b"LEFT", b"0"]);
    wait_blocked(&mut c, 1);
    let mut second = Raw::connect(&h);
    second.cmd(&[b"BLPOP", b"s2", b"0"]);
    wait_blocked(&mut c, 2);
    let _: i64 = c.rpush("s1", "token").unwrap();
    assert_eq!(first.read_raw(), b"$5\r\ntoken\r\n".to_vec());
    assert_eq!(pair(second.read()), (b"s2".to_vec(), b"token".to_vec()));
    let exists: i64 = c.exists(&["s1", "s2"]).unwrap();
    assert_eq!(exists, 0);
}

/// Large lists span many packed nodes; indexes and ranges stay exact.
#[test]
fn large_list_round_trip() {
    let h = common::start();
    let mut c = common::conn(&h);
    let vals: Vec<String> = (0..5000).map(|i| format!("value-{i:05}")).collect();
    for chunk in vals.chunks(500) {
        let _: i64 = c.rpush("big", chunk).unwrap();
    }
    let all: Vec<String> = c.lrange("big", 0, -1).unwrap();
    assert_eq!(all, vals);
    let v: String = c.lindex("big", 2500).unwrap();
    assert_eq!(v, vals[2500]);
    let v: String = c.lindex("big", -1).unwrap();
    assert_eq!(v, vals[4999]);
    let _: () = c.lset("big", 1234, "changed").unwrap();
    let _: () = c.ltrim("big", 1000, 3999).unwrap();
    let len: i64 = c.llen("big").unwrap();
    assert_eq!(len, 3000);
    let v: String = c.lindex("big", 234).unwrap();
    assert_eq!(v, "changed");
}
