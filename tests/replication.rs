//! Oxidis as a master of a real redis-server 7.0 replica: full sync (diskless
//! and from the RDB file), the stream that follows, WAIT, a partial resync
//! after the link drops, and what INFO and ROLE report, compared with what
//! a real Redis master reports for the same replica.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::real_redis::{temp_dir, RedisServer};
use redis::Connection;

/// Polls `f` every 50 ms for up to 20 s.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

fn info_field(c: &mut Connection, section: &str, field: &str) -> String {
    let text: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}:\n{text}"))
        .to_string()
}

/// A real redis-server replica of the server on `port` (with `extra`
/// flags), once its link is up, and a connection to it.
fn redis_replica_of(port: u16, extra: &[&str]) -> (RedisServer, Connection) {
    let port = port.to_string();
    let mut flags = vec!["--replicaof", "127.0.0.1", &port];
    flags.extend_from_slice(extra);
    let replica = RedisServer::start_in(&temp_dir("replica"), &flags);
    let mut r = replica.conn();
    eventually("the link to come up", || {
        info_field(&mut r, "replication", "master_link_status") == "up"
    });
    (replica, r)
}

fn digest(c: &mut Connection) -> String {
    redis::cmd("DEBUG").arg("DIGEST").query(c).unwrap()
}

/// A dataset with every type, expiries and several databases.
fn fill(c: &mut Connection) {
    let cmds: &[&[&str]] = &[
        &["SET", "s", "v"],
        &["SET", "n", "12345"],
        &["SET", "ttl", "x", "EX", "1000"],
        &["RPUSH", "l", "a", "b", "c"],
        &["HSET", "h", "f1", "v1", "f2", "v2"],
        &["SADD", "set", "1", "2", "x"],
        &["ZADD", "z", "1", "a", "2.5", "b"],
        &["XADD", "st", "1-1", "f", "v"],
        &["PFADD", "hll", "a", "b"],
        &["SELECT", "3"],
        &["SET", "db3", "here"],
        &["SELECT", "0"],
    ];
    for c2 in cmds {
        let mut cmd = redis::cmd(c2[0]);
        for a in &c2[1..] {
            cmd.arg(*a);
        }
        let _: redis::Value = cmd.query(c).unwrap();
    }
}

/// Writes after the sync: each must reach the replica as Redis would send it.
fn write_more(c: &mut Connection) {
    let script = "redis.call('incr', KEYS[1]); return redis.call('lpush', KEYS[2], ARGV[1])";
    let cmds: Vec<Vec<String>> = [
        "SET after 1",
        "INCRBYFLOAT f 1.5",
        "EXPIRE s 5000",
        "SETEX tmp 100 v",
        "LPOP l",
        "HINCRBY h f3 7",
        "ZINCRBY z 3 a",
        "XADD st 2-1 g w",
        "SELECT 5",
        "SET in5 yes",
        "SELECT 0",
        "SPOP set",
    ]
    .iter()
    .map(|l| l.split(' ').map(String::from).collect())
    .collect();
    for argv in cmds {
        let mut cmd = redis::cmd(&argv[0]);
        for a in &argv[1..] {
            cmd.arg(a);
        }
        let _: redis::Value = cmd.query(c).unwrap();
    }
    let _: redis::Value = redis::cmd("EVAL")
        .arg(script)
        .arg(2)
        .arg("cnt")
        .arg("lst")
        .arg("e")
        .query(c)
        .unwrap();
    let _: redis::Value = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("m1")
        .arg("1")
        .cmd("DEL")
        .arg("n")
        .query(c)
        .unwrap();
}

/// Starts Oxidis with `flags`, fills it, attaches a real redis-server
/// replica, and checks dataset and stream by DEBUG DIGEST on both sides.
fn replica_follows(flags: &[&str]) {
    let mut all = vec!["--enable-debug-command", "yes"];
    all.extend_from_slice(flags);
    let master = common::start_with(&all);
    let mut m = common::conn(&master);
    fill(&mut m);
    let (_replica, mut r) =
        redis_replica_of(master.addr().port(), &["--enable-debug-command", "yes"]);
    assert_eq!(
        digest(&mut r),
        digest(&mut m),
        "dataset after the full sync"
    );
    write_more(&mut m);
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(10000).query(&mut m).unwrap();
    assert_eq!(acked, 1, "WAIT counts the replica's ACK");
    assert_eq!(digest(&mut r), digest(&mut m), "dataset after the stream");
    let ttl: i64 = redis::cmd("TTL").arg("s").query(&mut r).unwrap();
    assert!(
        ttl > 4000 && ttl <= 5000,
        "EXPIRE reached the replica: {ttl}"
    );
    assert_eq!(info_field(&mut m, "stats", "sync_full"), "1");
}

#[test]
fn a_redis_replica_syncs_diskless() {
    replica_follows(&[
        "--repl-diskless-sync",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ]);
}

#[test]
fn a_redis_replica_syncs_from_the_rdb_file() {
    replica_follows(&["--repl-diskless-sync", "no"]);
}

/// INFO replication's field names in order, and a replica line's keys.
fn replication_shape(c: &mut Connection) -> Vec<String> {
    let text: String = redis::cmd("INFO").arg("replication").query(c).unwrap();
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once(':') {
            Some((k, v)) if k.starts_with("slave") && v.contains('=') => {
                let keys: Vec<&str> = v
                    .split(',')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|p| p.0)
                    .collect();
                format!("{k}:{}", keys.join(","))
            }
            Some((k, _)) => k.to_string(),
            None => l.to_string(),
        })
        .collect()
}

#[test]
fn partial_resync_after_the_link_drops_and_info_as_redis() {
    let master = common::start_with(&["--repl-diskless-sync-delay", "0"]);
    let mut m = common::conn(&master);
    let (replica, mut r) = redis_replica_of(master.addr().port(), &[]);
    let _: () = redis::cmd("SET").arg("k").arg("1").query(&mut m).unwrap();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .query(&mut m)
        .unwrap();
    assert_eq!(killed, 1);
    set_and_see(&mut m, &mut r, "2");
    assert_eq!(info_field(&mut m, "stats", "sync_full"), "1");
    assert_eq!(info_field(&mut m, "stats", "sync_partial_ok"), "1");
    eventually("the replica's ACK", || {
        let off = info_field(&mut m, "replication", "master_repl_offset");
        info_field(&mut m, "replication", "slave0").contains(&format!("offset={off},"))
    });

    // The same replica set-up under a real Redis master: INFO and ROLE
    // have the same shape.
    let real_master = RedisServer::start();
    let real_port = real_master.addr().rsplit_once(':').unwrap().1.to_string();
    let (real_replica, _rr) = redis_replica_of(real_port.parse().unwrap(), &[]);
    let mut rm = real_master.conn();
    let _: () = redis::cmd("SET").arg("k").arg("1").query(&mut rm).unwrap();
    let _: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut rm).unwrap();
    let _: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut m).unwrap();
    assert_eq!(replication_shape(&mut m), replication_shape(&mut rm));
    let role = |c: &mut Connection| -> redis::Value { redis::cmd("ROLE").query(c).unwrap() };
    let (ours, theirs) = (role(&mut m), role(&mut rm));
    let shape = |v: &redis::Value, replica_port: &str| -> String {
        let redis::Value::Array(items) = v else {
            return format!("{v:?}");
        };
        let redis::Value::Array(replicas) = &items[2] else {
            return format!("{v:?}");
        };
        let mut out = format!(
            "{:?} {} replicas:",
            items[0],
            matches!(items[1], redis::Value::Int(_))
        );
        for r in replicas {
            if let redis::Value::Array(f) = r {
                let port =
                    matches!(&f[1], redis::Value::BulkString(p) if p == replica_port.as_bytes());
                out.push_str(&format!(
                    " [{:?} port={port} {}]",
                    f[0],
                    matches!(f[2], redis::Value::BulkString(_))
                ));
            }
        }
        out
    };
    let replica_port = replica.addr().rsplit_once(':').unwrap().1.to_string();
    let real_replica_port = real_replica.addr().rsplit_once(':').unwrap().1.to_string();
    assert_eq!(
        shape(&ours, &replica_port),
        shape(&theirs, &real_replica_port)
    );
}

/// Starts the oxidis-server binary on `port` in `dir` with `extra` flags
/// (killed or shut down by the caller).
fn spawn_binary(port: u16, dir: &std::path::Path, extra: &[&str]) -> std::process::Child {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_oxidis-server"))
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--repl-diskless-sync-delay",
            "0",
        ])
        .args(extra)
        .arg("--dir")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn oxidis-server");
    eventually("oxidis-server to listen", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    child
}

/// SETs `k` to `v` on the master and waits until the replica has it.
fn set_and_see(m: &mut Connection, r: &mut Connection, v: &str) {
    let _: () = redis::cmd("SET").arg("k").arg(v).query(m).unwrap();
    eventually("the write to reach the replica", || {
        redis::cmd("GET")
            .arg("k")
            .query::<Option<String>>(r)
            .unwrap()
            .as_deref()
            == Some(v)
    });
}

/// A master that restarts from its RDB keeps its replication history: the
/// RDB carries repl-id/repl-offset, and a real Redis replica continues with
/// a partial resync, as with a restarted Redis 7.0 master.
#[test]
fn a_restarted_master_lets_its_replica_continue() {
    let dir = temp_dir("restart-master");
    let port = common::real_redis::free_port();
    let mut master = spawn_binary(port, &dir, &[]);
    let mut m = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let (_replica, mut r) = redis_replica_of(port, &[]);
    let _: () = redis::cmd("SET").arg("k").arg("1").query(&mut m).unwrap();
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(10000).query(&mut m).unwrap();
    assert_eq!(acked, 1);
    let old_id = info_field(&mut m, "replication", "master_replid");
    let offset = info_field(&mut m, "replication", "master_repl_offset");
    let _ = redis::cmd("SHUTDOWN").arg("SAVE").query::<()>(&mut m);
    let _ = master.wait();
    let rdb = std::fs::read(dir.join("dump.rdb")).unwrap();
    assert!(
        rdb.windows(7).any(|w| w == b"repl-id"),
        "the RDB has the history"
    );

    let mut master = spawn_binary(port, &dir, &[]);
    let mut m = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    assert_eq!(info_field(&mut m, "replication", "master_replid2"), old_id);
    // The stream went on a little before the exit (SHUTDOWN asked the
    // replica for an ACK, as Redis does): the saved offset is at least that.
    let restarted: i64 = info_field(&mut m, "replication", "master_repl_offset")
        .parse()
        .unwrap();
    assert!(
        restarted >= offset.parse::<i64>().unwrap(),
        "{restarted} < {offset}"
    );
    eventually("the replica to reconnect", || {
        info_field(&mut r, "replication", "master_link_status") == "up"
    });
    set_and_see(&mut m, &mut r, "2");
    assert_eq!(info_field(&mut m, "stats", "sync_partial_ok"), "1");
    assert_eq!(info_field(&mut m, "stats", "sync_full"), "0");
    let _ = master.kill();
    let _ = master.wait();
}

/// A diskless transfer that lasts over a second (the child slowed by
/// `rdb-key-save-delay`): the cron's keepalive newline must not land
/// inside the RDB bytes the replica is receiving.
#[test]
fn a_slow_diskless_transfer_reaches_the_replica_whole() {
    let master = common::start_with(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
        "--rdb-key-save-delay",
        "150",
    ]);
    let mut m = common::conn(&master);
    let _: () = redis::cmd("DEBUG")
        .arg("POPULATE")
        .arg(20000)
        .arg("key")
        .arg(100)
        .query(&mut m)
        .unwrap();
    let (_replica, mut r) =
        redis_replica_of(master.addr().port(), &["--enable-debug-command", "yes"]);
    assert_eq!(digest(&mut r), digest(&mut m));
}

/// SHUTDOWN waits (up to `shutdown-timeout`) for replicas that have not
/// acknowledged the whole stream, with writes paused; SHUTDOWN ABORT
/// cancels it and the waiting client gets Redis's error.
#[test]
fn shutdown_waits_for_lagging_replicas_and_abort_cancels() {
    let dir = temp_dir("shutdown-wait");
    let port = common::real_redis::free_port();
    let mut child = spawn_binary(port, &dir, &["--shutdown-timeout", "2"]);
    // A replica that never acknowledges (SYNC, the old protocol).
    let mut replica = common::Raw::connect_to(("127.0.0.1", port));
    replica.send(b"SYNC\r\n");
    let mut a = common::Raw::connect_to(("127.0.0.1", port));
    eventually("the replica to be online", || {
        a.cmd(&[b"INFO", b"replication"]);
        String::from_utf8_lossy(&a.read_raw()).contains("state=online")
    });
    a.cmd(&[b"SET", b"k", b"v"]);
    assert_eq!(a.read_raw(), b"+OK\r\n");
    a.cmd(&[b"SHUTDOWN"]);
    assert_eq!(
        a.try_read_raw(Duration::from_millis(300)),
        None,
        "SHUTDOWN waits"
    );
    let mut b = common::Raw::connect_to(("127.0.0.1", port));
    b.cmd(&[b"SHUTDOWN", b"ABORT"]);
    assert_eq!(b.read_raw(), b"+OK\r\n");
    assert_eq!(
        a.read_raw(),
        b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n"
    );
    b.cmd(&[b"SET", b"k", b"w"]);
    assert_eq!(b.read_raw(), b"+OK\r\n", "writes resume");
    b.cmd(&[b"SHUTDOWN", b"ABORT"]);
    assert_eq!(b.read_raw(), b"-ERR No shutdown in progress.\r\n");
    // Without ABORT it ends once the timeout passes.
    a.cmd(&[b"SHUTDOWN", b"NOSAVE"]);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// After a diskless transfer the stream waits for the replica's first ACK
/// (Redis's repl_start_cmd_stream_on_ack): bytes right behind the EOF mark
/// would hide it from a replica that looks for the mark at the end of what
/// it read.
#[test]
fn after_a_diskless_transfer_the_stream_waits_for_the_first_ack() {
    let master = common::start_with(&[
        "--repl-diskless-sync",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let mut m = common::conn(&master);
    let mut r = common::Raw::connect(&master);
    r.cmd(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"]);
    assert_eq!(r.read_raw(), b"+OK\r\n");
    r.cmd(&[b"PSYNC", b"?", b"-1"]);
    // +FULLRESYNC line, then $EOF:<mark>, the RDB, the mark.
    let mut got = Vec::new();
    let mark = loop {
        let chunk = r.try_read_raw_bytes(Duration::from_secs(10));
        assert!(!chunk.is_empty(), "transfer stalled: {got:?}");
        got.extend_from_slice(&chunk);
        if let Some(i) = got.windows(5).position(|w| w == b"$EOF:") {
            if got.len() >= i + 5 + 40 {
                break got[i + 5..i + 45].to_vec();
            }
        }
    };
    while got.len() < 45 || !got[45..].windows(40).any(|w| w == &mark[..]) {
        let chunk = r.try_read_raw_bytes(Duration::from_secs(10));
        assert!(!chunk.is_empty(), "no end mark");
        got.extend_from_slice(&chunk);
    }
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut m).unwrap();
    assert!(
        r.try_read_raw_bytes(Duration::from_millis(300)).is_empty(),
        "nothing before the first ACK"
    );
    r.cmd(&[b"REPLCONF", b"ACK", b"0"]);
    let stream =
        String::from_utf8_lossy(&r.try_read_raw_bytes(Duration::from_secs(5))).into_owned();
    assert!(stream.contains("SET") || stream.contains("set"), "{stream}");
}

/// A replica's own command that would be answered is refused as Redis
/// does: logged, and the replica is disconnected (a reply would land inside
/// its replication stream).
#[test]
fn a_replica_that_asks_for_a_reply_is_dropped() {
    let master = common::start_with(&["--repl-diskless-sync", "no"]);
    let mut r = common::Raw::connect(&master);
    r.send(b"SYNC\r\n");
    let mut got = Vec::new();
    while !got.windows(5).any(|w| w == b"REDIS") {
        let chunk = r.try_read_raw_bytes(Duration::from_secs(10));
        assert!(!chunk.is_empty(), "no RDB: {got:?}");
        got.extend_from_slice(&chunk);
    }
    r.cmd(&[b"PING"]);
    assert!(
        r.closed_within(Duration::from_secs(5)),
        "the replica is dropped"
    );
    let mut c = common::conn(&master);
    let n: i64 = redis::cmd("INFO")
        .arg("replication")
        .query::<String>(&mut c)
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("connected_slaves:")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap();
    assert_eq!(n, 0);
}

fn info_int(c: &mut Connection, section: &str, field: &str) -> i64 {
    info_field(c, section, field).parse().unwrap()
}

fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} {pid}");
}

/// Redis's unit/maxmemory "replica buffer don't induce eviction", run on a
/// real redis-server master and on Oxidis alike: with `maxmemory` just
/// above the dataset and a replica that stopped reading, megabytes of
/// stream pile up for it without evicting a key, because what the replica
/// holds is reported (`mem_clients_slaves`) and left out of eviction's
/// count to the byte as the allocator counts it.
fn stalled_replica_evicts_nothing(m: &mut Connection, port: u16) {
    for j in 0..100 {
        let _: i64 = redis::cmd("SETRANGE")
            .arg(format!("key:{j}"))
            .arg(100000)
            .arg("asdf")
            .query(m)
            .unwrap();
    }
    config_set(
        m,
        &[
            ("slowlog-log-slower-than", "-1"),
            ("latency-tracking", "no"),
            ("repl-timeout", "1200"),
            ("maxmemory-policy", "allkeys-random"),
            (
                "client-output-buffer-limit",
                "replica 100000000 100000000 300",
            ),
            ("repl-backlog-size", "10240"),
        ],
    );
    let (replica, _r) = redis_replica_of(port, &[]);
    let used = info_int(m, "memory", "used_memory");
    let not_counted = info_int(m, "memory", "mem_not_counted_for_evict");
    let limit = used - not_counted + 32 * 1024;
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(limit)
        .query(m)
        .unwrap();
    signal(replica.pid(), "-STOP");
    let payload = "A".repeat(100);
    for _ in 0..60000 {
        let _: i64 = redis::cmd("SETRANGE")
            .arg("key:0")
            .arg(0)
            .arg(&payload)
            .query(m)
            .unwrap();
    }
    let slaves = info_int(m, "memory", "mem_clients_slaves");
    let evicted = info_int(m, "stats", "evicted_keys");
    let dbsize: i64 = redis::cmd("DBSIZE").query(m).unwrap();
    signal(replica.pid(), "-CONT");
    assert!(slaves > 2 << 20, "mem_clients_slaves {slaves}");
    assert_eq!((evicted, dbsize), (0, 100));
    let _: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .query(m)
        .unwrap();
    assert_eq!(info_int(m, "memory", "mem_clients_slaves"), 0);
}

#[test]
fn a_stalled_replica_evicts_nothing_as_redis() {
    let redis_master = RedisServer::start();
    stalled_replica_evicts_nothing(&mut redis_master.conn(), redis_master.port);
    // A process of its own: `used_memory` counts the whole process, which
    // in-process servers of other tests share.
    let port = common::real_redis::free_port();
    let mut master = spawn_binary(port, &temp_dir("stalled"), &[]);
    let mut m = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_connection()
        .unwrap();
    stalled_replica_evicts_nothing(&mut m, port);
    let _ = master.kill();
    let _ = master.wait();
}

/// `client-output-buffer-limit replica`: a replica that stopped reading is
/// cut off once the stream waiting for it passes the hard limit, on a real
/// redis-server master and on Oxidis alike; a limit under
/// `repl-backlog-size` counts as the backlog's size, so the same load with
/// a backlog larger than it keeps the replica.
fn stopped_replica_is_cut_off(m: &mut Connection, port: u16, backlog: &str) -> i64 {
    config_set(
        m,
        &[
            ("client-output-buffer-limit", "replica 1mb 0 0"),
            ("repl-backlog-size", backlog),
        ],
    );
    let (replica, _r) = redis_replica_of(port, &[]);
    signal(replica.pid(), "-STOP");
    let value = "v".repeat(256 * 1024);
    for i in 0..64 {
        let _: () = redis::cmd("SET")
            .arg(format!("k{i}"))
            .arg(&value)
            .query(m)
            .unwrap();
    }
    // Past the soft/hard check of the cron as well as the write path.
    std::thread::sleep(Duration::from_millis(1200));
    let _: () = redis::cmd("SET").arg("last").arg(1).query(m).unwrap();
    let connected = info_int(m, "replication", "connected_slaves");
    signal(replica.pid(), "-CONT");
    connected
}

#[test]
fn a_replica_over_its_output_limit_is_closed_as_redis() {
    for backlog in ["1mb", "64mb"] {
        let redis_master = RedisServer::start();
        let want = stopped_replica_is_cut_off(&mut redis_master.conn(), redis_master.port, backlog);
        let master = common::start_with(&[]);
        let got =
            stopped_replica_is_cut_off(&mut common::conn(&master), master.addr().port(), backlog);
        assert_eq!(
            got, want,
            "connected_slaves with repl-backlog-size {backlog}"
        );
        // Redis itself: cut off under the small backlog, kept under the large.
        assert_eq!(want, i64::from(backlog == "64mb"));
    }
}

/// A raw replica: SYNC (disk) or, with `diskless`, PSYNC with `capa eof`;
/// returns once the master answered, its transfer started.
fn raw_replica(port: u16, diskless: bool) -> std::net::TcpStream {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut b = [0u8; 1];
    if diskless {
        s.write_all(b"REPLCONF capa eof capa psync2\r\n").unwrap();
        while s.read(&mut b).unwrap() == 1 && b[0] != b'\n' {}
        s.write_all(b"PSYNC ? -1\r\n").unwrap();
        // +FULLRESYNC <id> <offset>
        while s.read(&mut b).unwrap() == 1 && b[0] != b'\n' {}
    } else {
        s.write_all(b"SYNC\r\n").unwrap();
    }
    s
}

/// A transfer whose replicas all left is stopped: the disk child when no
/// save point wants its file, the diskless child at once; on a real
/// redis-server master and on Oxidis alike. Either child would otherwise
/// run for minutes (`rdb-key-save-delay`).
fn useless_child_is_killed(m: &mut Connection, port: u16, diskless: bool) {
    let _: () = redis::cmd("DEBUG")
        .arg("POPULATE")
        .arg(600)
        .arg("key")
        .arg(100_000)
        .query(m)
        .unwrap();
    let yes_no = if diskless { "yes" } else { "no" };
    config_set(
        m,
        &[
            ("save", ""),
            ("repl-diskless-sync", yes_no),
            ("repl-diskless-sync-delay", "0"),
            ("rdb-key-save-delay", "100000"),
        ],
    );
    let replica = raw_replica(port, diskless);
    eventually("the transfer to start", || {
        info_field(m, "persistence", "rdb_bgsave_in_progress") == "1"
    });
    drop(replica);
    eventually("the child to be stopped", || {
        info_field(m, "persistence", "rdb_bgsave_in_progress") == "0"
    });
}

#[test]
fn a_transfer_nobody_waits_for_is_stopped_as_redis() {
    for diskless in [false, true] {
        let redis_master =
            RedisServer::start_in(&temp_dir("useless"), &["--enable-debug-command", "yes"]);
        useless_child_is_killed(&mut redis_master.conn(), redis_master.port, diskless);
        let master = common::start_with(&["--enable-debug-command", "yes"]);
        useless_child_is_killed(&mut common::conn(&master), master.addr().port(), diskless);
    }
}

/// CONFIG SET of each pair, in order.
fn config_set(m: &mut Connection, pairs: &[(&str, &str)]) {
    for (k, v) in pairs {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(k)
            .arg(v)
            .query(m)
            .unwrap();
    }
}

/// A replica client (after PSYNC) sends GET: what the log says about it
/// (the lines from "Replica generated" and "== CRITICAL ==" on),
/// `unexpected_error_replies`, and whether the error reached the link.
/// The server listens on `port` and logs to `log` (integration/replication
/// "replica do not write the reply to the replication link - PSYNC").
fn replica_sends_get(port: u16, log: impl Fn() -> String) -> (Vec<String>, i64, bool) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"PSYNC replicationid -1\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(5).any(|w| w == b"REDIS") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "no RDB: {got:?}");
        got.extend_from_slice(&buf[..n]);
    }
    s.write_all(b"GET foo\r\n").unwrap();
    // The replica is dropped; whatever came before the close is kept.
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let unexpected = info_int(&mut c, "stats", "unexpected_error_replies");
    let mut lines = Vec::new();
    eventually("the log lines", || {
        lines = log()
            .lines()
            .filter_map(|l| {
                let at = l
                    .find("Replica generated")
                    .or_else(|| l.find("== CRITICAL =="))?;
                // The client description after "disconnecting it:" differs.
                Some(l[at..].split(": id=").next().unwrap().to_string())
            })
            .collect();
        lines.len() == 2
    });
    let leaked = got.windows(8).any(|w| w == b"-Replica");
    (lines, unexpected, leaked)
}

#[test]
fn a_replica_client_that_reads_the_keyspace_is_refused_and_logged_as_redis() {
    let redis = RedisServer::start_in(&temp_dir("repl-get-real"), &[]);
    let theirs = replica_sends_get(redis.port, || redis.log());
    let dir = temp_dir("repl-get");
    let ox = common::process::Oxidis::start_in(&dir, &["--logfile", "ox.log"]);
    let ours = replica_sends_get(ox.port, || {
        std::fs::read_to_string(dir.join("ox.log")).unwrap_or_default()
    });
    assert_eq!(ours, theirs);
    assert_eq!(ours.1, 1);
}

/// The address a master sees for a replica started with `bind-source-addr
/// 127.0.0.2` (`slave0` of INFO replication): `replica` starts it with the
/// given flags and returns it (kept alive while the master is asked).
fn replica_seen_from<R>(replica: impl Fn(&[&str]) -> R) -> String {
    // Protected mode admits 127.0.0.1 only.
    let master = RedisServer::start_in(&temp_dir("srcaddr-m"), &["--protected-mode", "no"]);
    let port = master.port.to_string();
    let _r = replica(&[
        "--replicaof",
        "127.0.0.1",
        &port,
        "--bind-source-addr",
        "127.0.0.2",
    ]);
    let mut m = master.conn();
    let mut seen = String::new();
    eventually("the replica to be online", || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut m).unwrap();
        seen = info
            .lines()
            .find_map(|l| l.strip_prefix("slave0:"))
            .unwrap_or_default()
            .to_string();
        seen.contains("state=online")
    });
    seen.split(',').next().unwrap().to_string()
}

#[test]
fn a_replica_connects_from_bind_source_addr_as_redis() {
    let theirs = replica_seen_from(|f| RedisServer::start_in(&temp_dir("srcaddr-r"), f));
    let ours = replica_seen_from(common::start_with);
    assert_eq!(ours, theirs);
    assert_eq!(ours, "ip=127.0.0.2");
}
