//! Oxidis as a master of a real redis-server 7.0 replica: full sync (diskless
//! and from the RDB file), the stream that follows, WAIT, a partial resync
//! after the link drops, and what INFO and ROLE report, compared with what
//! a real Redis master reports for the same replica.

mod common;

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
    let port = master.addr().port().to_string();
    let replica = RedisServer::start_in(
        &temp_dir("replica"),
        &[
            "--replicaof",
            "127.0.0.1",
            &port,
            "--enable-debug-command",
            "yes",
        ],
    );
    let mut r = replica.conn();
    eventually("the link to come up", || {
        info_field(&mut r, "replication", "master_link_status") == "up"
    });
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
    let port = master.addr().port().to_string();
    let replica = RedisServer::start_in(&temp_dir("replica"), &["--replicaof", "127.0.0.1", &port]);
    let mut r = replica.conn();
    eventually("the link to come up", || {
        info_field(&mut r, "replication", "master_link_status") == "up"
    });
    let _: () = redis::cmd("SET").arg("k").arg("1").query(&mut m).unwrap();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .query(&mut m)
        .unwrap();
    assert_eq!(killed, 1);
    let _: () = redis::cmd("SET").arg("k").arg("2").query(&mut m).unwrap();
    eventually("the write after the drop to arrive", || {
        redis::cmd("GET")
            .arg("k")
            .query::<Option<String>>(&mut r)
            .unwrap()
            .as_deref()
            == Some("2")
    });
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
    let real_replica = RedisServer::start_in(
        &temp_dir("replica"),
        &["--replicaof", "127.0.0.1", &real_port],
    );
    let mut rm = real_master.conn();
    let mut rr = real_replica.conn();
    eventually("the real link to come up", || {
        info_field(&mut rr, "replication", "master_link_status") == "up"
    });
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

/// Starts the oxidis-server binary on `port` in `dir` (killed by the caller).
fn spawn_binary(port: u16, dir: &std::path::Path) -> std::process::Child {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_oxidis-server"))
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--repl-diskless-sync-delay",
            "0",
        ])
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

/// A master that restarts from its RDB keeps its replication history: the
/// RDB carries repl-id/repl-offset, and a real Redis replica continues with
/// a partial resync, as with a restarted Redis 7.0 master.
#[test]
fn a_restarted_master_lets_its_replica_continue() {
    let dir = temp_dir("restart-master");
    let port = common::real_redis::free_port();
    let mut master = spawn_binary(port, &dir);
    let mut m = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let replica = RedisServer::start_in(
        &temp_dir("replica"),
        &["--replicaof", "127.0.0.1", &port.to_string()],
    );
    let mut r = replica.conn();
    eventually("the link to come up", || {
        info_field(&mut r, "replication", "master_link_status") == "up"
    });
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

    let mut master = spawn_binary(port, &dir);
    let mut m = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    assert_eq!(info_field(&mut m, "replication", "master_replid2"), old_id);
    assert_eq!(
        info_field(&mut m, "replication", "master_repl_offset"),
        offset
    );
    eventually("the replica to reconnect", || {
        info_field(&mut r, "replication", "master_link_status") == "up"
    });
    let _: () = redis::cmd("SET").arg("k").arg("2").query(&mut m).unwrap();
    eventually("the write after the restart", || {
        redis::cmd("GET")
            .arg("k")
            .query::<Option<String>>(&mut r)
            .unwrap()
            .as_deref()
            == Some("2")
    });
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
    let port = master.addr().port().to_string();
    let replica = RedisServer::start_in(
        &temp_dir("replica"),
        &[
            "--replicaof",
            "127.0.0.1",
            &port,
            "--enable-debug-command",
            "yes",
        ],
    );
    let mut r = replica.conn();
    eventually("the link to come up", || {
        info_field(&mut r, "replication", "master_link_status") == "up"
    });
    assert_eq!(digest(&mut r), digest(&mut m));
}
