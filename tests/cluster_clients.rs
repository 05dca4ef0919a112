//! Cluster clients against Oxidis cluster nodes beside real Redis (issue 16):
//! redis-py's `RedisCluster` and ioredis's `Cluster` run one script
//! (tests/cluster_clients/) against a one-node cluster and against two
//! nodes with half the slots each, on Oxidis and on real redis-server, and
//! the transcripts must be equal; a slot moved under write load by the
//! `redis` crate's cluster client loses nothing; MIGRATE to a real
//! cluster-enabled redis-server and back.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::clients::{node, node_project, repo, venv};
use common::cluster::conf_line;
use common::real_redis::{free_port, temp_dir, RedisServer};

fn cmd<T: redis::FromRedisValue>(c: &mut redis::Connection, words: &[&str]) -> T {
    let mut cmd = redis::cmd(words[0]);
    for w in &words[1..] {
        cmd.arg(*w);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

fn conn(addr: &str) -> redis::Connection {
    redis::Client::open(format!("redis://{addr}/"))
        .unwrap()
        .get_connection()
        .unwrap()
}

/// Polls until every node says `cluster_state:ok` and serves all 16384
/// slots in as many ranges as there are nodes (real nodes learn each other
/// through the bus; Redis waits 2 s after start before a master turns ok).
fn wait_ok(addrs: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    for a in addrs {
        let mut c = conn(a);
        loop {
            let info: String = cmd(&mut c, &["CLUSTER", "INFO"]);
            let slots: Vec<redis::Value> = cmd(&mut c, &["CLUSTER", "SLOTS"]);
            if info.starts_with("cluster_state:ok")
                && info.contains("cluster_slots_ok:16384\r\n")
                && slots.len() == addrs.len()
            {
                break;
            }
            assert!(Instant::now() < deadline, "{a} never turned ok: {info}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A cluster under test: its nodes' addresses in slot order, and what keeps
/// the servers running.
struct Cluster {
    addrs: Vec<String>,
    _oxidis: Vec<oxidis::Handle>,
    _real: Vec<RedisServer>,
}

/// A free port whose bus port (+10000) is free too.
fn node_port() -> u16 {
    loop {
        let p = free_port();
        if std::net::TcpListener::bind(("127.0.0.1", p + 10000)).is_ok() {
            return p;
        }
    }
}

/// Oxidis nodes with the slots split evenly: one node takes them all with
/// ADDSLOTSRANGE; two learn each other from hand-made nodes.conf files
/// (there is no cluster bus yet).
fn oxidis_cluster(tag: &str, n: usize) -> Cluster {
    let mut handles = Vec::new();
    if n == 1 {
        let dir = temp_dir(tag);
        let h = common::start_with(&[
            "--cluster-enabled",
            "yes",
            "--dir",
            dir.to_str().unwrap(),
            "--cluster-announce-ip",
            "127.0.0.1",
        ]);
        let _: () = cmd(
            &mut common::conn(&h),
            &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"],
        );
        handles.push(h);
    } else {
        assert_eq!(n, 2);
        let ids = ["a".repeat(40), "b".repeat(40)];
        let ports = [node_port(), node_port()];
        let slots = ["0-8191", "8192-16383"];
        for me in 0..2 {
            let dir = temp_dir(&format!("{tag}-{me}"));
            let other = 1 - me;
            let conf = conf_line(&ids[me], ports[me], true, 2 - me as u64, slots[me])
                + &conf_line(
                    &ids[other],
                    ports[other],
                    false,
                    2 - other as u64,
                    slots[other],
                )
                + "vars currentEpoch 2 lastVoteEpoch 0\n";
            std::fs::write(dir.join("nodes.conf"), conf).unwrap();
            let port = ports[me].to_string();
            handles.push(common::start_with(&[
                "--cluster-enabled",
                "yes",
                "--dir",
                dir.to_str().unwrap(),
                "--port",
                &port,
                "--bind",
                "127.0.0.1",
            ]));
        }
    }
    let addrs: Vec<String> = handles.iter().map(|h| h.addr().to_string()).collect();
    wait_ok(&addrs);
    Cluster {
        addrs,
        _oxidis: handles,
        _real: Vec::new(),
    }
}

/// Real redis-server nodes with the same slots, joined by CLUSTER MEET.
fn real_cluster(tag: &str, n: usize) -> Cluster {
    let servers: Vec<RedisServer> = (0..n)
        .map(|i| {
            RedisServer::start_in(
                &temp_dir(&format!("{tag}-real{i}")),
                // A node that met no other does not know its own address
                // (CLUSTER SLOTS would give ""), as the Oxidis node above.
                &[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-announce-ip",
                    "127.0.0.1",
                ],
            )
        })
        .collect();
    let addrs: Vec<String> = servers.iter().map(|s| s.addr()).collect();
    let per = 16384 / n;
    for (i, s) in servers.iter().enumerate() {
        let mut c = s.conn();
        if i > 0 {
            let _: () = cmd(
                &mut c,
                &["CLUSTER", "MEET", "127.0.0.1", &servers[0].port.to_string()],
            );
        }
        let (lo, hi) = (i * per, (i + 1) * per - 1);
        let _: () = cmd(
            &mut c,
            &["CLUSTER", "ADDSLOTSRANGE", &lo.to_string(), &hi.to_string()],
        );
    }
    wait_ok(&addrs);
    Cluster {
        addrs,
        _oxidis: Vec::new(),
        _real: servers,
    }
}

/// Runs a client script on the cluster (killed after three minutes, a
/// hang's bound): its transcript (stdout).
fn transcript(script: impl Fn(&[String]) -> Command, c: &Cluster) -> String {
    let mut cmd = script(&c.addrs);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            r.read_to_string(&mut s).unwrap();
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(
        status.is_some_and(|s| s.success()),
        "{cmd:?} failed or hung ({status:?}):\n{out}{err}"
    );
    assert!(out.contains("{\"done\""), "{out}");
    out
}

/// The script's transcript on Oxidis equals the one on real Redis, line by line.
fn same_as_redis(tag: &str, n: usize, script: impl Fn(&[String]) -> Command) {
    let theirs = transcript(&script, &real_cluster(tag, n));
    let ours = transcript(&script, &oxidis_cluster(tag, n));
    // Shown with a failure (or --nocapture).
    println!("{ours}");
    for (o, t) in ours.lines().zip(theirs.lines()) {
        assert_eq!(o, t);
    }
    assert_eq!(ours.lines().count(), theirs.lines().count(), "{ours}");
}

fn redis_py(addrs: &[String]) -> Command {
    let mut c = Command::new(venv());
    c.arg(repo().join("tests/cluster_clients/redis_py.py"))
        .arg(addrs.join(","))
        .env("PYTHONDONTWRITEBYTECODE", "1");
    c
}

fn ioredis(addrs: &[String]) -> Command {
    let mut c = node(
        &node_project(),
        &repo().join("tests/cluster_clients/ioredis.js"),
    );
    c.arg(addrs.join(","));
    c
}

#[test]
fn redis_py_cluster_on_one_node() {
    same_as_redis("clc-py1", 1, redis_py);
}

#[test]
fn redis_py_cluster_on_two_nodes_follows_ask_and_moved() {
    same_as_redis("clc-py2", 2, redis_py);
}

#[test]
fn ioredis_cluster_on_one_node() {
    same_as_redis("clc-io1", 1, ioredis);
}

#[test]
fn ioredis_cluster_on_two_nodes_follows_ask_and_moved() {
    same_as_redis("clc-io2", 2, ioredis);
}

/// What one writer had acknowledged when it stopped: iterations, each a SET
/// of a new key, an INCR and an RPUSH in the moving slot, and a SET of a
/// key in another slot.
fn writer(seed: String, tag: String, w: usize, stop: Arc<AtomicBool>, done: Arc<AtomicU64>) -> u64 {
    let client = redis::cluster::ClusterClient::new(vec![format!("redis://{seed}/")]).unwrap();
    let mut cc = client.get_connection().unwrap();
    let mut i: u64 = 0;
    while !stop.load(Ordering::SeqCst) {
        // Any error fails the test: the client must follow every redirect.
        let _: () = redis::cmd("SET")
            .arg(format!("{{{tag}}}s:{w}:{i}"))
            .arg(i)
            .query(&mut cc)
            .unwrap();
        let n: u64 = redis::cmd("INCR")
            .arg(format!("{{{tag}}}n:{w}"))
            .query(&mut cc)
            .unwrap();
        assert_eq!(n, i + 1, "writer {w}");
        let len: u64 = redis::cmd("RPUSH")
            .arg(format!("{{{tag}}}l:{w}"))
            .arg(i)
            .query(&mut cc)
            .unwrap();
        assert_eq!(len, i + 1, "writer {w}");
        let _: () = redis::cmd("SET")
            .arg(format!("other:{w}:{i}"))
            .arg(i)
            .query(&mut cc)
            .unwrap();
        i += 1;
        done.fetch_add(1, Ordering::SeqCst);
    }
    i
}

/// Waits until the writers have acknowledged `more` iterations beyond `from`
/// (bounded: a minute); the count reached.
fn wait_writes(done: &AtomicU64, from: u64, more: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n = done.load(Ordering::SeqCst);
        if n >= from + more {
            return n;
        }
        assert!(Instant::now() < deadline, "the writers stalled at {n}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The `errorstat_<code>` count in INFO errorstats (0 when absent).
fn errorstat(c: &mut redis::Connection, code: &str) -> u64 {
    let info: String = cmd(c, &["INFO", "errorstats"]);
    let prefix = format!("errorstat_{code}:count=");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// Moves a slot of node 0 to node 1 (SETSLOT IMPORTING/MIGRATING, MIGRATE
/// ... KEYS in batches of 10 taken with GETKEYSINSLOT, SETSLOT NODE on both)
/// while three cluster clients seeded with node 0 write into it; then every
/// acknowledged write is on node 1, once, and node 0 holds nothing of the
/// slot. Node 0 sent ASK (during the move) and MOVED (after).
fn move_slot_under_load(c: &Cluster) {
    let (a, b) = (&c.addrs[0], &c.addrs[1]);
    let (mut ca, mut cb) = (conn(a), conn(b));
    let a_id: String = cmd(&mut ca, &["CLUSTER", "MYID"]);
    let b_id: String = cmd(&mut cb, &["CLUSTER", "MYID"]);
    let tag = (0..)
        .map(|i| format!("load{i}"))
        .find(|t| cmd::<u16>(&mut ca, &["CLUSTER", "KEYSLOT", t]) < 8192)
        .unwrap();
    let slot: u16 = cmd(&mut ca, &["CLUSTER", "KEYSLOT", &tag]);
    let slot_s = slot.to_string();
    let (ask0, moved0) = (errorstat(&mut ca, "ASK"), errorstat(&mut ca, "MOVED"));
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (seed, tag, stop, done) = (a.clone(), tag.clone(), stop.clone(), done.clone());
            std::thread::spawn(move || writer(seed, tag, w, stop, done))
        })
        .collect();
    let mut n = wait_writes(&done, 0, 200);
    let _: () = cmd(
        &mut cb,
        &["CLUSTER", "SETSLOT", &slot_s, "IMPORTING", &a_id],
    );
    let _: () = cmd(
        &mut ca,
        &["CLUSTER", "SETSLOT", &slot_s, "MIGRATING", &b_id],
    );
    let (bhost, bport) = b.rsplit_once(':').unwrap();
    let mut batches = 0;
    loop {
        let keys: Vec<String> = cmd(&mut ca, &["CLUSTER", "GETKEYSINSLOT", &slot_s, "10"]);
        if keys.is_empty() {
            break;
        }
        let mut m = vec!["MIGRATE", bhost, bport, "", "0", "5000", "KEYS"];
        m.extend(keys.iter().map(String::as_str));
        let ok: String = cmd(&mut ca, &m);
        assert_eq!(ok, "OK");
        batches += 1;
        // Writes go on between the batches.
        n = wait_writes(&done, n, 5);
    }
    assert!(batches > 1, "{batches} batches");
    let _: () = cmd(&mut cb, &["CLUSTER", "SETSLOT", &slot_s, "NODE", &b_id]);
    let _: () = cmd(&mut ca, &["CLUSTER", "SETSLOT", &slot_s, "NODE", &b_id]);
    wait_writes(&done, n, 100);
    stop.store(true, Ordering::SeqCst);
    let counts: Vec<u64> = writers.into_iter().map(|w| w.join().unwrap()).collect();

    // Nothing of the slot is left on node 0; node 1 has each write once.
    let left: u64 = cmd(&mut ca, &["CLUSTER", "COUNTKEYSINSLOT", &slot_s]);
    assert_eq!(left, 0);
    let held: u64 = cmd(&mut cb, &["CLUSTER", "COUNTKEYSINSLOT", &slot_s]);
    assert_eq!(
        held,
        counts.iter().map(|n| n + 2).sum::<u64>(),
        "{counts:?}"
    );
    for (w, &n) in counts.iter().enumerate() {
        let total: u64 = cmd(&mut cb, &["GET", &format!("{{{tag}}}n:{w}")]);
        assert_eq!(total, n, "writer {w}");
        let list: Vec<u64> = cmd(&mut cb, &["LRANGE", &format!("{{{tag}}}l:{w}"), "0", "-1"]);
        assert_eq!(list, (0..n).collect::<Vec<_>>(), "writer {w}");
        let keys: Vec<String> = (0..n).map(|i| format!("{{{tag}}}s:{w}:{i}")).collect();
        for chunk in keys.chunks(500) {
            let mut mget = vec!["MGET"];
            mget.extend(chunk.iter().map(String::as_str));
            let vals: Vec<Option<u64>> = cmd(&mut cb, &mget);
            for (k, v) in chunk.iter().zip(vals) {
                let i: u64 = k.rsplit(':').next().unwrap().parse().unwrap();
                assert_eq!(v, Some(i), "{k}");
            }
        }
    }
    // The clients were sent on by node 0: ASK during the move, MOVED after.
    assert!(errorstat(&mut ca, "ASK") > ask0);
    assert!(errorstat(&mut ca, "MOVED") > moved0);
}

#[test]
fn slot_moves_under_write_load_as_on_redis() {
    // The scenario's own claims hold on real Redis first.
    move_slot_under_load(&real_cluster("clc-load", 2));
    move_slot_under_load(&oxidis_cluster("clc-load", 2));
}

/// A key of each type in one slot, written through `c`.
const TYPED: [(&str, &[&str]); 6] = [
    ("{m}str", &["SET", "{m}str", "v", "PX", "100000"]),
    ("{m}list", &["RPUSH", "{m}list", "a", "b", "c"]),
    ("{m}hash", &["HSET", "{m}hash", "f", "1", "g", "2"]),
    ("{m}set", &["SADD", "{m}set", "x", "y"]),
    ("{m}zset", &["ZADD", "{m}zset", "1", "one", "2.5", "two"]),
    ("{m}stream", &["XADD", "{m}stream", "1-1", "f", "v"]),
];

/// Reads the typed keys back as text (TTL as present or not).
fn read_typed(c: &mut redis::Connection) -> Vec<String> {
    let read = |c: &mut redis::Connection, w: &[&str]| format!("{:?}", cmd::<redis::Value>(c, w));
    vec![
        read(c, &["GET", "{m}str"]),
        (cmd::<i64>(c, &["PTTL", "{m}str"]) > 0).to_string(),
        read(c, &["LRANGE", "{m}list", "0", "-1"]),
        read(c, &["HGET", "{m}hash", "g"]),
        read(c, &["SISMEMBER", "{m}set", "y"]),
        read(c, &["ZSCORE", "{m}zset", "two"]),
        read(c, &["XRANGE", "{m}stream", "-", "+"]),
    ]
}

#[test]
fn migrate_to_a_real_cluster_node_and_back() {
    let ours = oxidis_cluster("clc-mig", 1);
    let real = real_cluster("clc-mig", 1);
    let (mut co, mut cr) = (conn(&ours.addrs[0]), conn(&real.addrs[0]));
    for (_, w) in TYPED {
        let _: redis::Value = cmd(&mut co, w);
    }
    let before = read_typed(&mut co);
    let (rhost, rport) = real.addrs[0].rsplit_once(':').unwrap();
    let keys: Vec<&str> = TYPED.iter().map(|(k, _)| *k).collect();
    let migrate = |c: &mut redis::Connection, host: &str, port: &str| {
        let mut m = vec!["MIGRATE", host, port, "", "0", "5000", "KEYS"];
        m.extend(&keys);
        cmd::<String>(c, &m)
    };
    assert_eq!(migrate(&mut co, rhost, rport), "OK");
    assert_eq!(cmd::<i64>(&mut co, &["DBSIZE"]), 0);
    assert_eq!(read_typed(&mut cr), before);
    // And back, from real Redis to Oxidis.
    let (ohost, oport) = ours.addrs[0].rsplit_once(':').unwrap();
    assert_eq!(migrate(&mut cr, ohost, oport), "OK");
    assert_eq!(cmd::<i64>(&mut cr, &["DBSIZE"]), 0);
    assert_eq!(read_typed(&mut co), before);
    let slot: String = cmd::<i64>(&mut cr, &["CLUSTER", "KEYSLOT", "{m}"]).to_string();
    assert_eq!(
        cmd::<i64>(&mut co, &["CLUSTER", "COUNTKEYSINSLOT", &slot]),
        6
    );
}
