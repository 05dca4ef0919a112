//! maxmemory-clients and client memory, side by side with redis-server 7.0.15: which clients are evicted and when, CLIENT NO-EVICT, INFO evicted_clients, and CLIENT LIST's memory fields following real buffers.

mod common;

use std::time::{Duration, Instant};

use common::real_redis::RedisServer;
use common::Raw;
use oxidis::resp::value::Value;

const MB: usize = 1024 * 1024;

/// The two servers under test, each with a control client that is never
/// evicted (CLIENT NO-EVICT on).
struct Pair {
    _ox: oxidis::Handle,
    _redis: RedisServer,
    ports: [(&'static str, u16); 2],
}

fn pair() -> Pair {
    let ox = common::start();
    let redis = RedisServer::start();
    let ports = [("oxidis", ox.addr().port()), ("redis", redis.port)];
    Pair {
        _ox: ox,
        _redis: redis,
        ports,
    }
}

fn text(v: Value) -> String {
    match v {
        Value::Bulk(b) | Value::Simple(b) | Value::Verbatim(_, b) => {
            String::from_utf8_lossy(&b).into_owned()
        }
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

fn call(c: &mut Raw, args: &[&str]) -> String {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    c.cmd(&a);
    text(c.read())
}

fn control(port: u16) -> Raw {
    let mut c = Raw::connect_to(("127.0.0.1", port));
    assert_eq!(call(&mut c, &["CLIENT", "SETNAME", "control"]), "OK");
    assert_eq!(call(&mut c, &["CLIENT", "NO-EVICT", "on"]), "OK");
    c
}

fn named(port: u16, name: &str) -> Raw {
    let mut c = Raw::connect_to(("127.0.0.1", port));
    assert_eq!(call(&mut c, &["CLIENT", "SETNAME", name]), "OK");
    c
}

/// Field `f` of client `name` in CLIENT LIST, None when it is not connected.
fn field(control: &mut Raw, name: &str, f: &str) -> Option<usize> {
    let list = call(control, &["CLIENT", "LIST"]);
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))?;
    let v = line
        .split(' ')
        .find_map(|kv| kv.strip_prefix(&format!("{f}=")))?;
    Some(v.parse().unwrap())
}

/// Polls (up to 10 s) until `cond` holds; false if it never did.
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn evicted_clients(control: &mut Raw) -> usize {
    let info = call(control, &["INFO", "stats"]);
    info.lines()
        .find_map(|l| l.strip_prefix("evicted_clients:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Starts a request whose one argument of `n` bytes never ends: it stays
/// in the query buffer.
fn fill_query_buffer(c: &mut Raw, n: usize) {
    let mut req = format!("*2\r\n${n}\r\n").into_bytes();
    req.extend(std::iter::repeat_n(b'v', n));
    c.send(&req);
}

/// A query buffer over the limit evicts its client; INFO counts it; the
/// client's memory showed the buffer before (qbuf is the argument's bytes).
#[test]
fn query_buffer_over_the_limit_evicts_its_client() {
    let p = pair();
    for (who, port) in p.ports {
        let mut ctl = control(port);
        let mut small = named(port, "small");
        let mut big = named(port, "big");
        fill_query_buffer(&mut small, 100_000);
        fill_query_buffer(&mut big, 2 * MB);
        assert!(
            eventually(|| field(&mut ctl, "big", "qbuf") == Some(2 * MB)),
            "{who}: big's query buffer"
        );
        assert!(
            field(&mut ctl, "big", "tot-mem").unwrap() >= 2 * MB,
            "{who}"
        );
        assert!(
            field(&mut ctl, "small", "tot-mem").unwrap() >= 100_000,
            "{who}"
        );
        assert_eq!(evicted_clients(&mut ctl), 0, "{who}");
        assert_eq!(
            call(&mut ctl, &["CONFIG", "SET", "maxmemory-clients", "1mb"]),
            "OK"
        );
        assert!(
            eventually(|| field(&mut ctl, "big", "qbuf").is_none()),
            "{who}: big evicted"
        );
        assert!(big.closed_within(Duration::from_secs(10)), "{who}");
        // Only what was needed: the small client stays.
        assert_eq!(field(&mut ctl, "small", "qbuf"), Some(100_000), "{who}");
        assert_eq!(evicted_clients(&mut ctl), 1, "{who}");
    }
}

/// The largest clients go first, and no more than needed; a NO-EVICT
/// client stays whatever its size.
#[test]
fn largest_first_and_no_evict() {
    let p = pair();
    for (who, port) in p.ports {
        let mut ctl = control(port);
        let sizes = [("c128k", 128 * 1024), ("c1m", MB), ("c3m", 3 * MB)];
        let mut conns = Vec::new();
        for (name, n) in sizes {
            let mut c = named(port, name);
            fill_query_buffer(&mut c, n);
            conns.push(c);
        }
        let mut keeper = named(port, "keeper");
        assert_eq!(call(&mut keeper, &["CLIENT", "NO-EVICT", "on"]), "OK");
        fill_query_buffer(&mut keeper, 4 * MB);
        for (name, n) in sizes.iter().chain([("keeper", 4 * MB)].iter()) {
            assert!(
                eventually(|| field(&mut ctl, name, "qbuf") == Some(*n)),
                "{who}: {name}'s query buffer"
            );
        }
        // Room for the keeper and the two smaller ones (Redis counts its
        // buffers by the allocator's size classes: 5 MB, 1.25 MB, 160 KiB),
        // not for the 3 MB client as well: it alone goes.
        let limit = (7 * MB).to_string();
        assert_eq!(
            call(&mut ctl, &["CONFIG", "SET", "maxmemory-clients", &limit]),
            "OK"
        );
        assert!(
            eventually(|| field(&mut ctl, "c3m", "qbuf").is_none()),
            "{who}: c3m evicted"
        );
        assert_eq!(field(&mut ctl, "c1m", "qbuf"), Some(MB), "{who}");
        assert_eq!(field(&mut ctl, "c128k", "qbuf"), Some(128 * 1024), "{who}");
        assert_eq!(field(&mut ctl, "keeper", "qbuf"), Some(4 * MB), "{who}");
        assert_eq!(evicted_clients(&mut ctl), 1, "{who}");
        drop(keeper);
    }
}

/// A client that sends requests without reading the replies: the server
/// keeps running them, its output grows (tot-mem, omem), and client
/// eviction closes it once the limit is set.
#[test]
fn output_of_a_client_not_reading_grows_then_is_evicted() {
    let p = pair();
    for (who, port) in p.ports {
        let mut ctl = control(port);
        assert_eq!(
            call(&mut ctl, &["SETRANGE", "k", &MB.to_string(), "v"]),
            (MB + 1).to_string()
        );
        let mut reader = named(port, "sluggish");
        let get = common::encode(&[b"GET", b"k"]);
        let mut grew = false;
        for _ in 0..200 {
            reader.send(&get);
            std::thread::sleep(Duration::from_millis(5));
            if field(&mut ctl, "sluggish", "tot-mem").unwrap() > 10 * MB {
                grew = true;
                break;
            }
        }
        assert!(grew, "{who}: output did not grow");
        assert!(
            field(&mut ctl, "sluggish", "omem").unwrap() > 5 * MB,
            "{who}"
        );
        assert_eq!(
            call(&mut ctl, &["CONFIG", "SET", "maxmemory-clients", "5mb"]),
            "OK"
        );
        assert!(
            eventually(|| field(&mut ctl, "sluggish", "omem").is_none()),
            "{who}: evicted"
        );
        assert_eq!(evicted_clients(&mut ctl), 1, "{who}");
    }
}

/// MULTI's queued arguments count in multi-mem and tot-mem, and a queue
/// past the limit evicts its client before EXEC.
#[test]
fn multi_queue_counts_and_evicts() {
    let p = pair();
    let value = "x".repeat(300_000);
    for (who, port) in p.ports {
        let mut ctl = control(port);
        let mut m = named(port, "queuer");
        assert_eq!(call(&mut m, &["MULTI"]), "OK");
        for _ in 0..3 {
            assert_eq!(call(&mut m, &["SET", "k", &value]), "QUEUED");
        }
        let multi_mem = field(&mut ctl, "queuer", "multi-mem").unwrap();
        assert!(multi_mem >= 900_000, "{who}: multi-mem {multi_mem}");
        assert!(
            field(&mut ctl, "queuer", "tot-mem").unwrap() >= multi_mem,
            "{who}"
        );
        assert_eq!(
            call(&mut ctl, &["CONFIG", "SET", "maxmemory-clients", "2mb"]),
            "OK"
        );
        let set = common::encode(&[b"SET", b"k", value.as_bytes()]);
        for _ in 0..5 {
            // The server may have closed the connection already.
            let _ = std::io::Write::write_all(&mut m.s, &set);
        }
        assert!(m.closed_within(Duration::from_secs(10)), "{who}: evicted");
        assert_eq!(evicted_clients(&mut ctl), 1, "{who}");
        assert_eq!(call(&mut ctl, &["EXISTS", "k"]), "0", "{who}");
    }
}
