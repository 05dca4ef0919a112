//! maxmemory and eviction, side by side with redis-server 7.0.15: every
//! policy evicts only what it should and in the order it should, OOM
//! refusals with Redis's texts, the `evicted` event, INFO evicted_keys,
//! LFU settings. Each server is its own process, so `used_memory` is that
//! server's alone (the tests in one binary share an allocator).
//!
//! Most scenarios use `maxmemory 1`: memory is then always over the limit,
//! so what happens is decided by the policy alone, not by byte counts.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::process::Oxidis;
use common::real_redis::{temp_dir, RedisServer};
use oxidis::resp::value::{parse_value, Value};

enum Server {
    Ox(Oxidis),
    Real(RedisServer),
}

impl Server {
    fn port(&self) -> u16 {
        match self {
            Server::Ox(o) => o.port,
            Server::Real(r) => r.port,
        }
    }

    fn conn(&self) -> Conn {
        Conn::new(self.port())
    }
}

fn oxidis() -> Server {
    Server::Ox(Oxidis::start())
}

fn redis() -> Server {
    Server::Real(RedisServer::start_in(&temp_dir("evict"), &[]))
}

/// Oxidis and redis-server, named for assertion messages.
fn both() -> [(&'static str, Server); 2] {
    [("oxidis", oxidis()), ("redis", redis())]
}

/// A raw RESP2 connection: replies as their exact bytes or parsed.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn new(port: u16) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Conn { s, buf: Vec::new() }
    }

    fn send(&mut self, args: &[&[u8]]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.s.write_all(&out).unwrap();
    }

    fn read_raw(&mut self) -> Vec<u8> {
        loop {
            if let Ok(Some((_, n))) = parse_value(&self.buf) {
                return self.buf.drain(..n).collect();
            }
            let mut chunk = [0u8; 65536];
            let n = self.s.read(&mut chunk).expect("a reply");
            assert!(n > 0, "connection closed");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends a command and returns its reply's bytes as text.
    fn raw(&mut self, args: &[&str]) -> String {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        self.send(&a);
        String::from_utf8_lossy(&self.read_raw()).into_owned()
    }

    fn cmd(&mut self, args: &[&[u8]]) -> Value {
        self.send(args);
        let raw = self.read_raw();
        parse_value(&raw).unwrap().unwrap().0
    }

    fn ok(&mut self, args: &[&str]) {
        let r = self.raw(args);
        assert!(!r.starts_with('-'), "{args:?}: {r}");
    }

    fn info_field(&mut self, section: &str, field: &str) -> String {
        let r = self.raw(&["INFO", section]);
        r.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
            .unwrap_or_default()
    }

    /// The sorted key names of the selected database.
    fn keys(&mut self) -> Vec<String> {
        let Value::Array(items) = self.cmd(&[b"KEYS", b"*"]) else {
            panic!("KEYS reply");
        };
        let mut v: Vec<String> = items.iter().map(text).collect();
        v.sort();
        v
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    }
}

/// `noeviction` over the limit: writes refused with Redis's text, reads and
/// DEL served; inside MULTI everything but the transaction's own commands is
/// refused; scripts by their flags. Replies compared byte for byte.
#[test]
fn noeviction_refuses_writes_and_serves_reads_and_del() {
    let mut seen = Vec::new();
    for (name, srv) in both() {
        let mut c = srv.conn();
        let mut other = srv.conn();
        let mut out = Vec::new();
        c.ok(&["SET", "a", "1"]);
        c.ok(&["SET", "b", "2"]);
        // A transaction queued before memory ran out.
        out.push(c.raw(&["MULTI"]));
        out.push(c.raw(&["SET", "q", "1"]));
        other.ok(&["CONFIG", "SET", "maxmemory", "1"]);
        out.push(c.raw(&["EXEC"]));
        // Queued while memory was fine, with reads only: EXEC runs it.
        other.ok(&["CONFIG", "SET", "maxmemory", "0"]);
        out.push(c.raw(&["MULTI"]));
        out.push(c.raw(&["GET", "a"]));
        other.ok(&["CONFIG", "SET", "maxmemory", "1"]);
        out.push(c.raw(&["EXEC"]));
        for cmd in [
            &["SET", "c", "3"][..],
            &["APPEND", "a", "x"],
            &["GET", "a"],
            &["EXISTS", "a", "b"],
            &["DEL", "a"],
            &["EXPIRE", "b", "100"],
            &["MULTI"],
            &["GET", "b"],
            &["SET", "c", "3"],
            &["EXEC"],
            &["MULTI"],
            &["DISCARD"],
            &["EVAL", "return 1", "0"],
            &["EVAL", "return redis.call('get','b')", "0"],
            &["EVAL", "return redis.call('set','k','v')", "0"],
            &["EVAL", "#!lua\nreturn 1", "0"],
            &[
                "EVAL",
                "#!lua flags=no-writes\nreturn redis.call('get','b')",
                "0",
            ],
            &[
                "EVAL",
                "#!lua flags=allow-oom\nreturn redis.call('set','k','v')",
                "0",
            ],
            &["GET", "k"],
            &["DBSIZE"],
        ] {
            out.push(c.raw(cmd));
        }
        out.push(c.info_field("stats", "evicted_keys"));
        c.ok(&["CONFIG", "SET", "maxmemory", "0"]);
        out.push(c.raw(&["SET", "c", "3"]));
        seen.push((name, out));
    }
    assert_eq!(seen[0].1, seen[1].1, "oxidis vs redis");
    assert!(seen[0]
        .1
        .contains(&"-OOM command not allowed when used memory > 'maxmemory'.\r\n".to_string()));
}

/// Twenty keys without a TTL and twenty with one, then `maxmemory 1`: the
/// volatile policies evict exactly the twenty with a TTL and then refuse
/// writes with OOM; the allkeys policies evict everything; `noeviction`
/// nothing. INFO evicted_keys counts them. Same outcome as redis-server.
#[test]
fn each_policy_evicts_only_its_candidates() {
    let policies = [
        "noeviction",
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ];
    /// Per policy: its name, the keys left, evicted_keys, a SET's reply.
    type Outcome = (String, Vec<String>, String, String);
    let mut results: Vec<Vec<Outcome>> = Vec::new();
    for (_, srv) in both() {
        let mut c = srv.conn();
        let mut per = Vec::new();
        for policy in policies {
            c.ok(&["CONFIG", "SET", "maxmemory", "0"]);
            c.ok(&["FLUSHALL"]);
            c.ok(&["CONFIG", "RESETSTAT"]);
            c.ok(&["CONFIG", "SET", "maxmemory-eviction-tenacity", "100"]);
            for i in 0..20 {
                c.ok(&["SET", &format!("p{i}"), "v"]);
                c.ok(&["SET", &format!("t{i}"), "v", "EX", &(1000 + i).to_string()]);
            }
            c.ok(&["CONFIG", "SET", "maxmemory-policy", policy]);
            c.ok(&["CONFIG", "SET", "maxmemory", "1"]);
            // The next command evicts what the policy allows first.
            c.ok(&["PING"]);
            let keys = c.keys();
            let evicted = c.info_field("stats", "evicted_keys");
            let set = c.raw(&["SET", "new", "v"]);
            per.push((policy.to_string(), keys, evicted, set));
        }
        c.ok(&["CONFIG", "SET", "maxmemory", "0"]);
        results.push(per);
    }
    let persistent: Vec<String> = {
        let mut v: Vec<String> = (0..20).map(|i| format!("p{i}")).collect();
        v.sort();
        v
    };
    for (policy, keys, evicted, set) in &results[0] {
        let oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
        match policy.as_str() {
            "noeviction" => assert_eq!((keys.len(), evicted.as_str()), (40, "0")),
            p if p.starts_with("volatile") => {
                assert_eq!(keys, &persistent, "{p}");
                assert_eq!(evicted, "20", "{p}");
            }
            p => assert_eq!((keys.len(), evicted.as_str()), (0, "40"), "{p}"),
        }
        assert_eq!(set, oom, "{policy}");
    }
    assert_eq!(results[0], results[1], "oxidis vs redis");
}

/// The `evicted` events of one full eviction, in order, after `setup` (run
/// with `policy`, samples 64 so every key is sampled each round: the pool's
/// best is then the policy's global best).
fn eviction_order(srv: &Server, policy: &str, setup: &dyn Fn(&mut Conn), n: usize) -> Vec<String> {
    let mut c = srv.conn();
    c.ok(&["CONFIG", "SET", "maxmemory-policy", policy]);
    c.ok(&["CONFIG", "SET", "maxmemory-samples", "64"]);
    c.ok(&["CONFIG", "SET", "maxmemory-eviction-tenacity", "100"]);
    c.ok(&["CONFIG", "SET", "notify-keyspace-events", "Ee"]);
    setup(&mut c);
    let mut sub = srv.conn();
    sub.ok(&["SUBSCRIBE", "__keyevent@0__:evicted"]);
    c.ok(&["CONFIG", "SET", "maxmemory", "1"]);
    c.ok(&["PING"]);
    let mut order = Vec::new();
    while order.len() < n {
        let raw = sub.read_raw();
        let Ok(Some((Value::Array(items), _))) = parse_value(&raw) else {
            panic!("a pub/sub message");
        };
        order.push(text(&items[2]));
    }
    c.ok(&["CONFIG", "SET", "maxmemory", "0"]);
    order
}

/// A DUMP payload of a short string, for RESTORE with IDLETIME / FREQ.
fn payload(c: &mut Conn, value: &[u8]) -> Vec<u8> {
    c.cmd(&[b"SET", b"__tmp", value]);
    let Value::Bulk(p) = c.cmd(&[b"DUMP", b"__tmp"]) else {
        panic!("DUMP");
    };
    c.ok(&["DEL", "__tmp"]);
    p
}

/// RESTOREs `key` from `payload` with a TTL in ms (0: none) and one option
/// (IDLETIME or FREQ) set to `val`.
fn restore(c: &mut Conn, key: &str, ttl: &str, payload: &[u8], opt: &[u8], val: &str) {
    let r = c.cmd(&[
        b"RESTORE",
        key.as_bytes(),
        ttl.as_bytes(),
        payload,
        opt,
        val.as_bytes(),
    ]);
    assert_eq!(r, Value::Simple(b"OK".to_vec()), "RESTORE {key}");
}

/// A fixed shuffle of 0..20, so keys are not created in score order.
const SHUFFLE: [usize; 20] = [
    7, 2, 15, 11, 0, 19, 4, 13, 9, 1, 17, 6, 12, 3, 18, 10, 5, 16, 8, 14,
];

/// volatile-ttl evicts the nearest expiry first; allkeys-lru the longest
/// idle; allkeys-lfu the least used; volatile-lru never a key without TTL
/// even when it is the most idle. Each order as redis-server's.
#[test]
fn policies_evict_in_their_order() {
    let expected_rank: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
    let ttl_setup = |c: &mut Conn| {
        for &i in &SHUFFLE {
            c.ok(&[
                "SET",
                &format!("k{i}"),
                "v",
                "EX",
                &(1000 + 10 * i).to_string(),
            ]);
        }
    };
    let lru_setup = |c: &mut Conn| {
        let p = payload(c, b"v");
        for &i in &SHUFFLE {
            let idle = (100_000 - 1000 * i).to_string();
            restore(c, &format!("k{i}"), "0", &p, b"IDLETIME", &idle);
        }
    };
    let lfu_setup = |c: &mut Conn| {
        let p = payload(c, b"v");
        for &i in &SHUFFLE {
            restore(c, &format!("k{i}"), "0", &p, b"FREQ", &(10 * i).to_string());
        }
    };
    let volatile_lru_setup = |c: &mut Conn| {
        let p = payload(c, b"v");
        for &i in &SHUFFLE {
            let idle = (100_000 - 1000 * i).to_string();
            // RESTORE sets the TTL itself: EXPIRE would touch the key.
            restore(c, &format!("k{i}"), "1000000", &p, b"IDLETIME", &idle);
            // Older still, but without a TTL: never a candidate.
            let idle = (200_000 - 1000 * i).to_string();
            restore(c, &format!("p{i}"), "0", &p, b"IDLETIME", &idle);
        }
    };
    type Setup<'a> = &'a dyn Fn(&mut Conn);
    let cases: [(&str, Setup); 4] = [
        ("volatile-ttl", &ttl_setup),
        ("allkeys-lru", &lru_setup),
        ("allkeys-lfu", &lfu_setup),
        ("volatile-lru", &volatile_lru_setup),
    ];
    for (policy, setup) in cases {
        let mut orders = Vec::new();
        for (_, srv) in both() {
            let order = eviction_order(&srv, policy, setup, 20);
            if policy == "volatile-lru" {
                let left = srv.conn().keys();
                assert_eq!(left.len(), 20, "{policy}: the keys without TTL stay");
                assert!(left.iter().all(|k| k.starts_with('p')), "{left:?}");
            }
            orders.push(order);
        }
        assert_eq!(orders[0], expected_rank, "{policy}: oxidis order");
        // Redis's order is exact while its sample covers every key; with a
        // few keys left in a table it does not shrink until its cron, its
        // walk skips long empty stretches and may miss some, so only the
        // start of its order is compared (ours shrinks as keys go).
        assert_eq!(
            orders[0][..10],
            orders[1][..10],
            "{policy}: oxidis vs redis"
        );
    }
}

/// `lfu-log-factor 0` makes every access count (OBJECT FREQ grows by one
/// per GET from the initial 5); the default factor grows it slower.
#[test]
fn lfu_log_factor_is_honoured() {
    let mut seen = Vec::new();
    for (_, srv) in both() {
        let mut c = srv.conn();
        c.ok(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]);
        c.ok(&["CONFIG", "SET", "lfu-log-factor", "0"]);
        c.ok(&["SET", "k", "v"]);
        let mut out = vec![c.raw(&["OBJECT", "FREQ", "k"])];
        for _ in 0..30 {
            c.ok(&["GET", "k"]);
        }
        out.push(c.raw(&["OBJECT", "FREQ", "k"]));
        c.ok(&["CONFIG", "SET", "lfu-log-factor", "100"]);
        c.ok(&["SET", "j", "v"]);
        for _ in 0..30 {
            c.ok(&["GET", "j"]);
        }
        let Value::Int(f) = c.cmd(&[b"OBJECT", b"FREQ", b"j"]) else {
            panic!("OBJECT FREQ");
        };
        // One increment is certain from the initial value, then each one
        // has probability 1/(n*100+1): far fewer than 30.
        assert!((6..15).contains(&f), "{f}");
        seen.push(out);
    }
    assert_eq!(seen[0], [":5\r\n", ":35\r\n"]);
    assert_eq!(seen[0], seen[1]);
}

/// The example: `maxmemory` 4 MB above use with `allkeys-lru`,
/// then 40 values of 200 KB: both servers evict, and keep a similar number
/// (used_memory counts allocator size classes in both).
#[test]
fn keeps_about_as_many_large_values_as_redis() {
    let big = vec![b'x'; 200_000];
    let mut kept = Vec::new();
    for (name, srv) in both() {
        let mut c = srv.conn();
        let used: u64 = c.info_field("memory", "used_memory").parse().unwrap();
        let max = (used + 4 * 1024 * 1024).to_string();
        c.ok(&["CONFIG", "SET", "maxmemory", &max]);
        c.ok(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
        for i in 0..40 {
            let k = format!("k{i}");
            assert_eq!(
                c.cmd(&[b"SET", k.as_bytes(), &big]),
                Value::Simple(b"OK".to_vec())
            );
        }
        // Each command evicts first while memory is over the limit, so
        // the key count is read alone.
        let Value::Int(n) = c.cmd(&[b"DBSIZE"]) else {
            panic!("DBSIZE");
        };
        let evicted: i64 = c.info_field("stats", "evicted_keys").parse().unwrap();
        assert!(
            evicted > 0 && n + evicted >= 40,
            "{name}: {n} kept, {evicted} evicted"
        );
        kept.push(n);
    }
    assert!(kept[1] > 0 && kept[1] < 40, "redis kept {}", kept[1]);
    assert!(
        (kept[0] - kept[1]).abs() <= 3,
        "oxidis kept {}, redis {}",
        kept[0],
        kept[1]
    );
}

/// Sets `maxmemory` to what is used now, writes 20 values of 100 KB and
/// returns the keys left (at least 15 were evicted to make room).
fn keys_after_pressure(name: &str, c: &mut Conn) -> Vec<String> {
    let used: u64 = c.info_field("memory", "used_memory").parse().unwrap();
    c.ok(&["CONFIG", "SET", "maxmemory", &used.to_string()]);
    let big = vec![b'x'; 100_000];
    for i in 0..20 {
        let k = format!("new{i}");
        c.cmd(&[b"SET", k.as_bytes(), &big]);
    }
    let evicted: usize = c.info_field("stats", "evicted_keys").parse().unwrap();
    assert!(evicted >= 15, "{name}: evicted {evicted}");
    let keys = c.keys();
    c.ok(&["CONFIG", "SET", "maxmemory", "0"]);
    keys
}

/// Under `policy` with the default 5 samples and real memory pressure,
/// one key in five ("hot") survives while others are evicted to make room,
/// on both servers. Every key is restored with `opt` set to `hot_val` or
/// `cold_val`; with `read_hot`, hot keys are then read once.
fn hot_keys_survive(policy: &str, opt: &[u8], hot_val: &str, cold_val: &str, read_hot: bool) {
    for (name, srv) in both() {
        let mut c = srv.conn();
        c.ok(&["CONFIG", "SET", "maxmemory-policy", policy]);
        let p = payload(&mut c, &[b'x'; 100_000]);
        let hot: Vec<String> = (0..50).step_by(5).map(|i| format!("k{i}")).collect();
        for i in 0..50 {
            let k = format!("k{i}");
            let v = if hot.contains(&k) { hot_val } else { cold_val };
            restore(&mut c, &k, "0", &p, opt, v);
        }
        if read_hot {
            for k in &hot {
                c.ok(&["GET", k]);
            }
        }
        let keys = keys_after_pressure(name, &mut c);
        for k in &hot {
            assert!(keys.contains(k), "{name} ({policy}): {k} was evicted");
        }
    }
}

/// allkeys-lru: keys read after every key was made old (RESTORE ...
/// IDLETIME) all survive.
#[test]
fn lru_keeps_recently_read_keys() {
    hot_keys_survive("allkeys-lru", b"IDLETIME", "10000", "10000", true);
}

/// allkeys-lfu: keys with a high access counter survive.
#[test]
fn lfu_keeps_frequently_used_keys() {
    hot_keys_survive("allkeys-lfu", b"FREQ", "100", "0", false);
}

/// A keyspace table does not grow when its new bucket array would take
/// memory over `maxmemory` (Redis's `dictExpandAllowed`): with 4096 keys
/// and 10 KB of room, two more keys fit without evicting anything, where
/// doubling the table (64 KB) would have forced evictions (Redis's suite:
/// "Don't rehash if used memory exceeds maxmemory after rehash").
#[test]
fn keyspace_table_does_not_grow_past_maxmemory() {
    for (name, srv) in both() {
        let mut c = srv.conn();
        c.ok(&["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]);
        for i in 0..4096 {
            let k = format!("key:{i}");
            c.send(&[b"SET", k.as_bytes(), b"value"]);
        }
        for _ in 0..4096 {
            c.read_raw();
        }
        // The first INFO leaves its reply buffer behind; measure after it.
        c.info_field("memory", "used_memory");
        let used: u64 = c.info_field("memory", "used_memory").parse().unwrap();
        c.ok(&[
            "CONFIG",
            "SET",
            "maxmemory",
            &(used + 10 * 1024).to_string(),
        ]);
        c.ok(&["SET", "k1", "v1"]);
        c.ok(&["SET", "k2", "v2"]);
        assert_eq!(c.raw(&["DBSIZE"]), ":4098\r\n", "{name}");
        c.ok(&["CONFIG", "SET", "maxmemory", "0"]);
    }
}
