//! Oxidis as a replica of a real redis-server 7.0.15 started by each test:
//! full sync (disk and diskless), the stream, AUTH, read-only refusals,
//! promotion, partial resync after a dropped link, INFO and ROLE, WAIT.

mod common;

use std::time::{Duration, Instant};

use common::real_redis::{temp_dir, RedisServer};
use redis::{Connection, Value};

/// Waits (polling) for `cond`; panics with `what` after 60 s (a hang, not a
/// measured duration: every wait here ends as soon as the state is reached).
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One field of `INFO <section>`.
fn info_field(c: &mut Connection, section: &str, field: &str) -> Option<String> {
    let text: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    text.lines().find_map(|l| {
        l.strip_prefix(field)
            .and_then(|r| r.strip_prefix(':'))
            .map(|v| v.trim().to_string())
    })
}

/// The field names of `INFO replication`, in order.
fn info_names(c: &mut Connection) -> Vec<String> {
    let text: String = redis::cmd("INFO").arg("replication").query(c).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(':').next().map(str::to_string))
        .collect()
}

fn replicaof(c: &mut Connection, port: u16) -> String {
    redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(port)
        .query(c)
        .unwrap()
}

fn link_up(c: &mut Connection) -> bool {
    info_field(c, "replication", "master_link_status").as_deref() == Some("up")
}

/// Waits until the replica applied everything the master wrote.
fn wait_caught_up(master: &mut Connection, replica: &mut Connection) {
    wait_for("the replica to reach the master's offset", || {
        let m = info_field(master, "replication", "master_repl_offset");
        let r = info_field(replica, "replication", "slave_repl_offset");
        m.is_some() && m == r
    });
}

/// CLIENT KILL TYPE `ty`: how many were killed.
fn kill_type(c: &mut Connection, ty: &str) -> i64 {
    redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg(ty)
        .query(c)
        .unwrap()
}

fn config_set(c: &mut Connection, name: &str, value: impl redis::ToRedisArgs) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query(c)
        .unwrap();
}

fn digest(c: &mut Connection) -> String {
    redis::cmd("DEBUG").arg("DIGEST").query(c).unwrap()
}

fn master(flags: &[&str]) -> RedisServer {
    let mut f = vec![
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ];
    f.extend_from_slice(flags);
    RedisServer::start_in(&temp_dir("repl-master"), &f)
}

fn replica(flags: &[&str]) -> oxidis::Handle {
    let mut f = vec!["--enable-debug-command", "yes"];
    f.extend_from_slice(flags);
    common::start_with(&f)
}

/// A replica of the master on `port`, once its link is up.
fn linked_replica(port: u16, flags: &[&str]) -> (oxidis::Handle, Connection) {
    let r_srv = replica(flags);
    let mut r = common::conn(&r_srv);
    replicaof(&mut r, port);
    wait_for("the link to come up", || link_up(&mut r));
    (r_srv, r)
}

/// A dataset with every type, expiry, and a second database.
fn populate(m: &mut Connection) {
    let q = |m: &mut Connection, args: &[&str]| {
        let mut c = redis::cmd(args[0]);
        for a in &args[1..] {
            c.arg(*a);
        }
        let _: Value = c.query(m).unwrap();
    };
    q(m, &["SET", "s", "v"]);
    q(m, &["SET", "n", "12345"]);
    q(m, &["SET", "ttl", "x", "EX", "1000"]);
    q(m, &["RPUSH", "l", "a", "b", "c", "1", "2"]);
    q(m, &["HSET", "h", "f1", "v1", "f2", "2"]);
    q(m, &["SADD", "set", "a", "b", "c"]);
    q(m, &["SADD", "iset", "1", "2", "3"]);
    q(m, &["ZADD", "z", "1", "a", "2.5", "b", "-3", "c"]);
    q(m, &["XADD", "st", "1-1", "f", "v"]);
    q(m, &["XADD", "st", "2-1", "g", "w"]);
    q(m, &["XGROUP", "CREATE", "st", "grp", "0"]);
    q(
        m,
        &[
            "XREADGROUP",
            "GROUP",
            "grp",
            "c1",
            "COUNT",
            "1",
            "STREAMS",
            "st",
            ">",
        ],
    );
    q(m, &["PFADD", "hll", "a", "b", "c"]);
    let big: String = "x".repeat(300);
    for i in 0..200 {
        q(m, &["HSET", "bigh", &format!("f{i}"), &big]);
        q(m, &["RPUSH", "bigl", &format!("{i}{big}")]);
        q(m, &["ZADD", "bigz", &i.to_string(), &format!("m{i}")]);
    }
    q(m, &["SELECT", "3"]);
    q(m, &["SET", "in3", "yes"]);
    q(m, &["SELECT", "0"]);
}

/// Full sync of every type, then the stream (MULTI/EXEC, EVAL, EXPIRE,
/// other databases, streams, FLUSHALL) keeps the replica's DEBUG DIGEST
/// equal to the master's.
fn sync_and_stream(diskless: bool) {
    let m_srv = master(&["--repl-diskless-sync", if diskless { "yes" } else { "no" }]);
    let mut m = m_srv.conn();
    populate(&mut m);
    let (_r_srv, mut r) = linked_replica(m_srv.port, &[]);
    wait_caught_up(&mut m, &mut r);
    assert_eq!(digest(&mut r), digest(&mut m));
    let get: Option<String> = redis::cmd("GET").arg("s").query(&mut r).unwrap();
    assert_eq!(get.as_deref(), Some("v"));

    // The stream.
    let _: Value = redis::pipe()
        .cmd("MULTI")
        .cmd("INCR")
        .arg("n")
        .cmd("LPUSH")
        .arg("l")
        .arg("z")
        .cmd("EXEC")
        .query(&mut m)
        .unwrap();
    let _: Value = redis::cmd("EVAL")
        .arg("redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', 'n')")
        .arg(1)
        .arg("fromlua")
        .arg("val")
        .query(&mut m)
        .unwrap();
    let _: Value = redis::cmd("EXPIRE")
        .arg("s")
        .arg(5000)
        .query(&mut m)
        .unwrap();
    let _: Value = redis::cmd("SELECT").arg(5).query(&mut m).unwrap();
    let _: Value = redis::cmd("SET")
        .arg("in5")
        .arg("five")
        .query(&mut m)
        .unwrap();
    let _: Value = redis::cmd("SELECT").arg(0).query(&mut m).unwrap();
    let _: Value = redis::cmd("XADD")
        .arg("st")
        .arg("*")
        .arg("k")
        .arg("v")
        .query(&mut m)
        .unwrap();
    let _: Value = redis::cmd("XACK")
        .arg("st")
        .arg("grp")
        .arg("1-1")
        .query(&mut m)
        .unwrap();
    let _: Value = redis::cmd("SPOP").arg("set").query(&mut m).unwrap();
    wait_caught_up(&mut m, &mut r);
    assert_eq!(digest(&mut r), digest(&mut m));
    let ttl: i64 = redis::cmd("TTL").arg("s").query(&mut r).unwrap();
    assert!(ttl > 4000, "TTL on the replica: {ttl}");
    let _: Value = redis::cmd("SELECT").arg(5).query(&mut r).unwrap();
    let v: Option<String> = redis::cmd("GET").arg("in5").query(&mut r).unwrap();
    assert_eq!(v.as_deref(), Some("five"));

    let _: Value = redis::cmd("FLUSHALL").query(&mut m).unwrap();
    wait_caught_up(&mut m, &mut r);
    let n: i64 = redis::cmd("DBSIZE").query(&mut r).unwrap();
    assert_eq!(n, 0);
    assert_eq!(digest(&mut r), digest(&mut m));
}

#[test]
fn full_sync_diskless_then_stream() {
    sync_and_stream(true);
}

#[test]
fn full_sync_from_disk_then_stream() {
    sync_and_stream(false);
}

/// `repl-diskless-load swapdb`: the RDB is loaded from memory, not written
/// to `dbfilename`.
#[test]
fn diskless_load_keeps_no_file() {
    let m_srv = master(&[]);
    let mut m = m_srv.conn();
    populate(&mut m);
    let dir = temp_dir("repl-swapdb");
    let d = dir.to_str().unwrap();
    let (_r_srv, mut r) =
        linked_replica(m_srv.port, &["--repl-diskless-load", "swapdb", "--dir", d]);
    wait_caught_up(&mut m, &mut r);
    assert_eq!(digest(&mut r), digest(&mut m));
    assert!(!dir.join("dump.rdb").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Redis's unit/auth "MASTERAUTH test with binary password": a wrong
/// password leaves the link down, the right one (with a NUL byte) brings it up.
#[test]
fn masterauth_with_binary_password() {
    let m_srv = master(&[]);
    let mut m = m_srv.conn();
    config_set(&mut m, "requirepass", &b"abc\x00def"[..]);
    let _: () = redis::cmd("AUTH")
        .arg(&b"abc\x00def"[..])
        .query(&mut m)
        .unwrap();
    let r_srv = replica(&[]);
    let mut r = common::conn(&r_srv);
    replicaof(&mut r, m_srv.port);
    config_set(&mut r, "masterauth", "abc");
    // The master counts the replica's refused AUTH.
    wait_for("a refused AUTH on the master", || {
        info_field(&mut m, "errorstats", "errorstat_WRONGPASS").is_some()
    });
    assert_eq!(
        info_field(&mut r, "replication", "master_link_status").as_deref(),
        Some("down")
    );
    config_set(&mut r, "masterauth", &b"abc\x00def"[..]);
    wait_for("the link to come up", || link_up(&mut r));
}

/// Writes from clients are refused on a replica (scripts at their first
/// write); REPLICAOF NO ONE keeps the data, takes writes, and starts a new
/// replication id with the master's as the secondary one.
#[test]
fn read_only_replica_then_promotion() {
    let m_srv = master(&[]);
    let mut m = m_srv.conn();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut m).unwrap();
    let (_r_srv, mut r) = linked_replica(m_srv.port, &[]);
    wait_caught_up(&mut m, &mut r);

    let err = redis::cmd("SET")
        .arg("x")
        .arg("1")
        .query::<()>(&mut r)
        .unwrap_err();
    assert_eq!(err.code(), Some("READONLY"));
    assert_eq!(
        err.detail(),
        Some("You can't write against a read only replica.")
    );
    let err = redis::cmd("EVAL")
        .arg("redis.call('set', 'x', '1')")
        .arg(0)
        .query::<()>(&mut r)
        .unwrap_err();
    // As redis-server 7.0.15 answers it.
    assert_eq!(err.code(), Some("READONLY"));
    assert_eq!(
        err.detail(),
        Some("You can't write against a read only replica. script: 99db44be2b0a44a6cb85dad80eb9feb054c2570c, on @user_script:1.")
    );
    let v: String = redis::cmd("EVAL_RO")
        .arg("return redis.call('get', KEYS[1])")
        .arg(1)
        .arg("k")
        .query(&mut r)
        .unwrap();
    assert_eq!(v, "v");
    // A script declaring writes is refused before it runs, as a write.
    let err = redis::cmd("EVAL")
        .arg("#!lua\nreturn 1")
        .arg(0)
        .query::<()>(&mut r)
        .unwrap_err();
    assert_eq!(err.code(), Some("READONLY"));

    let role: Vec<Value> = redis::cmd("ROLE").query(&mut r).unwrap();
    assert_eq!(role.len(), 5);
    assert_eq!(role[0], Value::BulkString(b"slave".to_vec()));
    assert_eq!(role[2], Value::Int(m_srv.port as i64));
    assert_eq!(role[3], Value::BulkString(b"connected".to_vec()));

    let master_id = info_field(&mut m, "replication", "master_replid").unwrap();
    let offset: i64 = info_field(&mut r, "replication", "master_repl_offset")
        .unwrap()
        .parse()
        .unwrap();
    let ok: String = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut r)
        .unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(
        info_field(&mut r, "replication", "role").as_deref(),
        Some("master")
    );
    assert_eq!(
        info_field(&mut r, "replication", "master_replid2").as_deref(),
        Some(&*master_id)
    );
    assert_eq!(
        info_field(&mut r, "replication", "second_repl_offset"),
        Some((offset + 1).to_string())
    );
    assert_ne!(
        info_field(&mut r, "replication", "master_replid").as_deref(),
        Some(&*master_id)
    );
    let v: String = redis::cmd("GET").arg("k").query(&mut r).unwrap();
    assert_eq!(v, "v");
    let _: () = redis::cmd("SET").arg("x").arg("1").query(&mut r).unwrap();
}

/// A link dropped from either side resumes with +CONTINUE: the master
/// counts a partial resync and no second full sync.
#[test]
fn dropped_link_resumes_with_partial_resync() {
    let m_srv = master(&[]);
    let mut m = m_srv.conn();
    // The stream is in database 9 when the link drops: it goes on there
    // without a SELECT.
    let _: () = redis::cmd("SELECT").arg(9).query(&mut m).unwrap();
    let _: () = redis::cmd("SET").arg("a").arg("1").query(&mut m).unwrap();
    let (_r_srv, mut r) = linked_replica(m_srv.port, &[]);
    wait_caught_up(&mut m, &mut r);

    let killed = kill_type(&mut r, "master");
    assert_eq!(killed, 1);
    let _: () = redis::cmd("SET").arg("b").arg("2").query(&mut m).unwrap();
    wait_for("a partial resync", || {
        info_field(&mut m, "stats", "sync_partial_ok").as_deref() == Some("1")
    });
    wait_for("the link to come up", || link_up(&mut r));
    wait_caught_up(&mut m, &mut r);

    let killed = kill_type(&mut m, "replica");
    assert_eq!(killed, 1);
    let _: () = redis::cmd("SET").arg("c").arg("3").query(&mut m).unwrap();
    wait_for("a second partial resync", || {
        info_field(&mut m, "stats", "sync_partial_ok").as_deref() == Some("2")
    });
    wait_caught_up(&mut m, &mut r);
    assert_eq!(
        info_field(&mut m, "stats", "sync_full").as_deref(),
        Some("1")
    );
    let _: () = redis::cmd("SELECT").arg(9).query(&mut r).unwrap();
    let v: Vec<Option<String>> = redis::cmd("MGET")
        .arg("a")
        .arg("b")
        .arg("c")
        .query(&mut r)
        .unwrap();
    assert_eq!(
        v,
        vec![Some("1".into()), Some("2".into()), Some("3".into())]
    );
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("TYPE")
        .arg("master")
        .query(&mut r)
        .unwrap();
    assert!(list.contains("flags=M"), "{list}");
}

/// INFO replication on a replica has the fields a redis-server replica of
/// the same master has, in its order, and WAIT on the master counts the
/// replica's ACKs.
#[test]
fn info_fields_as_a_real_replica_and_wait() {
    let m_srv = master(&[]);
    let mut m = m_srv.conn();
    let real = RedisServer::start_in(&temp_dir("repl-real-replica"), &[]);
    let mut rr = real.conn();
    replicaof(&mut rr, m_srv.port);
    let r_srv = replica(&[]);
    let mut r = common::conn(&r_srv);
    replicaof(&mut r, m_srv.port);
    wait_for("both links to come up", || {
        link_up(&mut r) && link_up(&mut rr)
    });
    // Same fields in the same order (the replica's own replica count, and
    // the backlog state, aside: the real one is on, Oxidis's master side
    // reports its own).
    assert_eq!(info_names(&mut r), info_names(&mut rr));
    for f in [
        "role",
        "master_host",
        "master_port",
        "master_link_status",
        "slave_read_only",
        "slave_priority",
        "replica_announced",
        "master_replid",
    ] {
        assert_eq!(
            info_field(&mut r, "replication", f),
            info_field(&mut rr, "replication", f),
            "{f}"
        );
    }
    let _: () = redis::cmd("SET").arg("w").arg("1").query(&mut m).unwrap();
    let acked: i64 = redis::cmd("WAIT").arg(2).arg(0).query(&mut m).unwrap();
    assert_eq!(acked, 2);
    let off_m = info_field(&mut m, "replication", "master_repl_offset");
    wait_caught_up(&mut m, &mut r);
    assert_eq!(
        info_field(&mut r, "replication", "slave_repl_offset"),
        off_m
    );
    assert_eq!(
        info_field(&mut r, "replication", "slave_read_repl_offset"),
        off_m
    );
}

/// Keys past their time stay on a replica until the master's DEL, and
/// reads treat them as missing meanwhile.
#[test]
fn replica_leaves_expiry_to_the_master() {
    let m_srv = master(&[]);
    let mut m = m_srv.conn();
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(0)
        .query(&mut m)
        .unwrap();
    let (_r_srv, mut r) = linked_replica(m_srv.port, &[]);
    let _: () = redis::cmd("SET")
        .arg("gone")
        .arg("v")
        .arg("PX")
        .arg(1)
        .query(&mut m)
        .unwrap();
    // Past its time (1 ms after the SET) once the master's clock is 2 ms
    // past the SET's end (both servers read this machine's clock).
    let set_done = master_ms(&mut m);
    wait_for("the key's time to pass", || {
        master_ms(&mut m) > set_done + 2
    });
    wait_caught_up(&mut m, &mut r);
    let v: Option<String> = redis::cmd("GET").arg("gone").query(&mut r).unwrap();
    assert_eq!(v, None);
    let n: i64 = redis::cmd("DBSIZE").query(&mut r).unwrap();
    assert_eq!(
        n, 1,
        "the replica keeps the key until the master deletes it"
    );
    // The master expires it on access and sends DEL.
    let v: Option<String> = redis::cmd("GET").arg("gone").query(&mut m).unwrap();
    assert_eq!(v, None);
    wait_caught_up(&mut m, &mut r);
    let n: i64 = redis::cmd("DBSIZE").query(&mut r).unwrap();
    assert_eq!(n, 0);
}

/// The master's TIME in milliseconds.
fn master_ms(m: &mut Connection) -> i64 {
    let t: Vec<i64> = redis::cmd("TIME").query(m).unwrap();
    t[0] * 1000 + t[1] / 1000
}

/// `replica-serve-stale-data no`: with the link down only `stale` commands run.
#[test]
fn stale_replica_answers_masterdown() {
    let closed = common::real_redis::free_port();
    let r_srv = replica(&["--replica-serve-stale-data", "no"]);
    let mut r = common::conn(&r_srv);
    replicaof(&mut r, closed);
    let err = redis::cmd("GET").arg("k").query::<()>(&mut r).unwrap_err();
    assert_eq!(err.code(), Some("MASTERDOWN"));
    assert_eq!(
        err.detail(),
        Some("Link with MASTER is down and replica-serve-stale-data is set to 'no'.")
    );
    assert_eq!(
        info_field(&mut r, "replication", "master_link_status").as_deref(),
        Some("down")
    );
    let role: Vec<Value> = redis::cmd("ROLE").query(&mut r).unwrap();
    assert_eq!(role[4], Value::Int(-1));
}

/// `replicaof` in the configuration starts the link with the server.
#[test]
fn replicaof_from_the_configuration() {
    let m_srv = master(&[]);
    let mut m = m_srv.conn();
    let _: () = redis::cmd("SET").arg("k").arg("cfg").query(&mut m).unwrap();
    let port = m_srv.port.to_string();
    let r_srv = replica(&["--replicaof", "127.0.0.1", &port]);
    let mut r = common::conn(&r_srv);
    wait_for("the link to come up", || link_up(&mut r));
    wait_caught_up(&mut m, &mut r);
    let v: String = redis::cmd("GET").arg("k").query(&mut r).unwrap();
    assert_eq!(v, "cfg");
    let cfg: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("replicaof")
        .query(&mut r)
        .unwrap();
    assert_eq!(cfg[1], format!("127.0.0.1 {port}"));
}

/// A replica with `appendonly yes` logs what its master sends through its
/// own write path, after rewriting its AOF from the synced dataset. (A
/// process of its own: the AOF's paths are relative to the working
/// directory, which in-process servers of other tests move.)
#[test]
fn replica_appends_the_stream_to_its_aof() {
    let m_srv = master(&[]);
    let mut m = m_srv.conn();
    let _: () = redis::cmd("SET")
        .arg("before")
        .arg("1")
        .query(&mut m)
        .unwrap();
    let dir = temp_dir("repl-aof");
    let proc = common::process::Oxidis::start_in(&dir, &["--appendonly", "yes"]);
    let mut r = redis::Client::open(format!("redis://127.0.0.1:{}/", proc.port))
        .unwrap()
        .get_connection()
        .unwrap();
    replicaof(&mut r, m_srv.port);
    wait_for("the link to come up", || link_up(&mut r));
    let _: i64 = redis::cmd("INCR").arg("from_master").query(&mut m).unwrap();
    wait_caught_up(&mut m, &mut r);
    let incr_has = |what: &str| {
        std::fs::read_dir(dir.join("appendonlydir"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".incr.aof"))
            .any(|e| {
                String::from_utf8_lossy(&std::fs::read(e.path()).unwrap_or_default()).contains(what)
            })
    };
    wait_for("the master's INCR in the replica's AOF", || {
        incr_has("from_master")
    });
    drop(proc);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Oxidis replicating Oxidis: full sync, the stream, a dropped link
/// continued partially, then a promotion the old master follows with a
/// partial resync on the new id (PSYNC on `master_replid2`).
#[test]
fn oxidis_replica_of_oxidis_and_failover() {
    let m_srv = replica(&[]);
    let mut m = common::conn(&m_srv);
    populate(&mut m);
    let r_srv = replica(&[]);
    let mut r = common::conn(&r_srv);
    let ok: String = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(m_srv.addr().port())
        .query(&mut r)
        .unwrap();
    assert_eq!(ok, "OK");
    wait_for("the link to come up", || link_up(&mut r));
    let _: i64 = redis::cmd("INCR").arg("n").query(&mut m).unwrap();
    wait_caught_up(&mut m, &mut r);
    assert_eq!(digest(&mut r), digest(&mut m));

    let _ = kill_type(&mut r, "master");
    let _: () = redis::cmd("SET")
        .arg("after")
        .arg("kill")
        .query(&mut m)
        .unwrap();
    wait_for("a partial resync", || {
        info_field(&mut m, "stats", "sync_partial_ok").as_deref() == Some("1")
    });
    wait_caught_up(&mut m, &mut r);
    assert_eq!(digest(&mut r), digest(&mut m));

    // Failover: the replica is promoted, the old master follows it.
    let _: String = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut r)
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("on_new")
        .arg("1")
        .query(&mut r)
        .unwrap();
    let _: String = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(r_srv.addr().port())
        .query(&mut m)
        .unwrap();
    wait_for("the old master's link to come up", || link_up(&mut m));
    wait_caught_up(&mut r, &mut m);
    assert_eq!(digest(&mut r), digest(&mut m));
    assert_eq!(
        info_field(&mut r, "stats", "sync_partial_ok").as_deref(),
        Some("1")
    );
    assert_eq!(
        info_field(&mut r, "stats", "sync_full").as_deref(),
        Some("0")
    );
}

/// A diskless load (`repl-diskless-load swapdb`) holds the replica in the
/// loading state while the RDB streams in (clients get -LOADING); a
/// transfer cut short leaves the old data, as Redis's
/// "Diskless load swapdb (different replid)".
#[test]
fn diskless_load_is_loading_until_the_rdb_is_in() {
    // Uncompressed values fill the master's child's 16 KiB buffer, so the
    // EOF-marked header goes out after a few keys.
    let m_srv = master(&["--repl-diskless-sync", "yes", "--rdbcompression", "no"]);
    let mut m = m_srv.conn();
    let value = "v".repeat(1000);
    for i in 0..500 {
        let _: () = redis::cmd("SET")
            .arg(format!("k{i}"))
            .arg(&value)
            .query(&mut m)
            .unwrap();
    }
    // 100 ms per key saved: the transfer lasts until the test cuts it.
    config_set(&mut m, "rdb-key-save-delay", 100_000);
    let r_srv = replica(&[
        "--repl-diskless-load",
        "swapdb",
        "--replica-read-only",
        "no",
    ]);
    let mut r = common::conn(&r_srv);
    let _: () = redis::cmd("SET")
        .arg("mine")
        .arg("old")
        .query(&mut r)
        .unwrap();
    replicaof(&mut r, m_srv.port);
    wait_for("the replica to load from the socket", || {
        info_field(&mut r, "persistence", "loading").as_deref() == Some("1")
    });
    let err = redis::cmd("GET")
        .arg("mine")
        .query::<()>(&mut r)
        .unwrap_err();
    assert_eq!(err.code(), Some("LOADING"));
    assert_eq!(
        info_field(&mut r, "replication", "master_sync_in_progress").as_deref(),
        Some("1")
    );
    let _ = kill_type(&mut m, "replica");
    wait_for("the load to stop", || {
        info_field(&mut r, "persistence", "loading").as_deref() == Some("0")
    });
    let v: String = redis::cmd("GET").arg("mine").query(&mut r).unwrap();
    assert_eq!(v, "old");
    config_set(&mut m, "rdb-key-save-delay", 0);
}

/// A writable replica expires the keys its own clients gave a TTL (the
/// master knows nothing of them), and logs the errors its master's
/// commands get.
#[test]
fn writable_replica_expires_its_own_keys() {
    let m_srv = master(&[]);
    let mut m = m_srv.conn();
    let (_r_srv, mut r) = linked_replica(m_srv.port, &["--replica-read-only", "no"]);
    let _: () = redis::cmd("SET")
        .arg("mine")
        .arg("v")
        .arg("PX")
        .arg(1)
        .query(&mut r)
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("kept")
        .arg("v")
        .query(&mut r)
        .unwrap();
    wait_for("the replica to expire its own key", || {
        redis::cmd("DBSIZE").query::<i64>(&mut r).unwrap() == 1
    });
    // Diverged data: the master's INCRBY fails on the replica, which goes on.
    let _: () = redis::cmd("SET")
        .arg("kept")
        .arg("1")
        .query(&mut m)
        .unwrap();
    wait_caught_up(&mut m, &mut r);
    let _: () = redis::cmd("SET")
        .arg("kept")
        .arg("foo")
        .query(&mut r)
        .unwrap();
    let _: i64 = redis::cmd("INCRBY")
        .arg("kept")
        .arg(1)
        .query(&mut m)
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("after")
        .arg("x")
        .query(&mut m)
        .unwrap();
    wait_caught_up(&mut m, &mut r);
    let v: String = redis::cmd("GET").arg("after").query(&mut r).unwrap();
    assert_eq!(v, "x");
    assert!(link_up(&mut r));
}

/// `repl-diskless-load swapdb` with a master of the same history (a second
/// full sync): the old data is served while the RDB streams in
/// (`async_loading:1`), REPLICAOF is refused with -LOADING, and the new
/// data replaces it once loaded.
#[test]
fn swapdb_of_the_same_history_serves_old_data_meanwhile() {
    let m_srv = master(&["--repl-diskless-sync", "yes", "--rdbcompression", "no"]);
    let mut m = m_srv.conn();
    let (_r_srv, mut r) = linked_replica(
        m_srv.port,
        &[
            "--repl-diskless-load",
            "swapdb",
            "--replica-read-only",
            "no",
        ],
    );
    let value = "v".repeat(1000);
    for i in 0..500 {
        let _: () = redis::cmd("SET")
            .arg(format!("k{i}"))
            .arg(&value)
            .query(&mut m)
            .unwrap();
    }
    wait_caught_up(&mut m, &mut r);
    let _: () = redis::cmd("SET")
        .arg("mine")
        .arg("old")
        .query(&mut r)
        .unwrap();
    config_set(&mut m, "rdb-key-save-delay", 100_000);
    // A backlog too small for what follows: the replica must sync in full.
    config_set(&mut m, "repl-backlog-size", 16384);
    let _ = kill_type(&mut m, "replica");
    for i in 0..10 {
        let _: () = redis::cmd("SET")
            .arg(format!("fill{i}"))
            .arg("A".repeat(16384))
            .query(&mut m)
            .unwrap();
    }
    wait_for("the replica to load in the background", || {
        info_field(&mut r, "persistence", "async_loading").as_deref() == Some("1")
    });
    assert_eq!(
        info_field(&mut r, "persistence", "loading").as_deref(),
        Some("0")
    );
    let v: String = redis::cmd("GET").arg("mine").query(&mut r).unwrap();
    assert_eq!(v, "old");
    let err = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query::<()>(&mut r)
        .unwrap_err();
    assert_eq!(err.code(), Some("LOADING"));
    // Redis's DENY_LOADING_CONFIG parameters (alone or among others, which
    // then keep their values); the others change as usual.
    for pairs in [
        &["appendonly", "no"][..],
        &["repl-diskless-load", "disabled"],
        &["maxmemory-samples", "7", "appendonly", "no"],
    ] {
        let err = redis::cmd("CONFIG")
            .arg("SET")
            .arg(pairs)
            .query::<()>(&mut r)
            .unwrap_err();
        assert_eq!(err.code(), Some("LOADING"), "{pairs:?}");
        assert_eq!(
            err.detail(),
            Some("Redis is loading the dataset in memory"),
            "{pairs:?}"
        );
    }
    let samples: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-samples")
        .query(&mut r)
        .unwrap();
    assert_eq!(samples[1], "5");
    config_set(&mut r, "maxmemory-samples", 7);
    // The slow child keeps its delay: cut this transfer, the next one is fast.
    config_set(&mut m, "rdb-key-save-delay", 0);
    let _ = kill_type(&mut m, "replica");
    wait_for("the new data", || {
        redis::cmd("EXISTS")
            .arg("mine")
            .query::<i64>(&mut r)
            .unwrap()
            == 0
    });
    wait_caught_up(&mut m, &mut r);
    assert_eq!(digest(&mut r), digest(&mut m));
}

/// Chained replication: a replica of an Oxidis replica gets the top
/// master's stream through it (and its backlog).
#[test]
fn chained_replica_gets_the_masters_stream() {
    let m_srv = master(&[]);
    let mut m = m_srv.conn();
    populate(&mut m);
    let (r_srv, mut r) = linked_replica(m_srv.port, &[]);
    let (_r2_srv, mut r2) = linked_replica(r_srv.addr().port(), &[]);
    let _: i64 = redis::cmd("INCR").arg("n").query(&mut m).unwrap();
    let _: () = redis::cmd("SET")
        .arg("chained")
        .arg("yes")
        .query(&mut m)
        .unwrap();
    wait_caught_up(&mut m, &mut r);
    wait_for("the chained replica to catch up", || {
        info_field(&mut r2, "replication", "slave_repl_offset")
            == info_field(&mut m, "replication", "master_repl_offset")
    });
    assert_eq!(digest(&mut r2), digest(&mut m));
}

/// A master that sends its stream right behind the EOF mark of a diskless
/// transfer (in the same write): the replica loads the RDB and runs what
/// follows the mark. The "master" here is the test, speaking the protocol.
#[test]
fn stream_right_behind_the_eof_mark() {
    use std::io::{BufRead, BufReader, Write};
    const AFTER: &[u8] = b"*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n2\r\n";
    // An RDB with one key, written by a real redis-server.
    let src = master(&[]);
    let mut sc = src.conn();
    let _: () = redis::cmd("SET")
        .arg("from_rdb")
        .arg("1")
        .query(&mut sc)
        .unwrap();
    let rdb = src.save_rdb();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake = std::thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        let mut rd = BufReader::new(sock.try_clone().unwrap());
        let mut w = sock;
        let mut line = String::new();
        loop {
            // One command: *N, then N bulk strings.
            line.clear();
            rd.read_line(&mut line).unwrap();
            let n: usize = line.trim()[1..].parse().unwrap();
            let mut argv = Vec::new();
            for _ in 0..n {
                line.clear();
                rd.read_line(&mut line).unwrap();
                line.clear();
                rd.read_line(&mut line).unwrap();
                argv.push(line.trim().to_ascii_uppercase());
            }
            match argv[0].as_str() {
                "PING" => w.write_all(b"+PONG\r\n").unwrap(),
                "REPLCONF" => w.write_all(b"+OK\r\n").unwrap(),
                "PSYNC" => break,
                other => panic!("unexpected {other}"),
            }
        }
        let id = "a".repeat(40);
        let mark = "m".repeat(40);
        let mut out = format!("+FULLRESYNC {id} 0\r\n$EOF:{mark}\r\n").into_bytes();
        out.extend_from_slice(&rdb);
        out.extend_from_slice(mark.as_bytes());
        out.extend_from_slice(AFTER);
        w.write_all(&out).unwrap();
        // Keep the link open until the replica hangs up.
        let mut rest = Vec::new();
        let _ = std::io::Read::read_to_end(&mut rd, &mut rest);
    });
    let r_srv = replica(&["--repl-diskless-load", "swapdb"]);
    let mut r = common::conn(&r_srv);
    replicaof(&mut r, port);
    wait_for("the key sent behind the mark", || {
        redis::cmd("GET")
            .arg("after")
            .query::<Option<String>>(&mut r)
            .unwrap()
            .is_some()
    });
    let v: String = redis::cmd("GET").arg("from_rdb").query(&mut r).unwrap();
    assert_eq!(v, "1");
    assert_eq!(
        info_field(&mut r, "replication", "slave_repl_offset"),
        Some(AFTER.len().to_string())
    );
    drop(r);
    drop(r_srv);
    let _ = fake.join();
}
