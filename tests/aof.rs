//! The append-only file, with `oxidis-server` and Debian's `redis-server` 7.0.15
//! started as processes in temp dirs: restarts, the files and manifest Redis
//! creates, each server loading the other's AOF directory, torn tails, bad
//! files, BGREWRITEAOF, CONFIG SET appendonly, the old single-file upgrade,
//! MISCONF on a full disk, and the SIGKILL crash test with `appendfsync always`.
//! Expected values come from the real redis-server run side by side.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use redis::Value;

mod common;

const OXIDIS: &str = env!("CARGO_BIN_EXE_oxidis-server");
const REDIS: &str = "/usr/bin/redis-server";

fn have_redis() -> bool {
    Path::new(REDIS).exists()
}

use common::real_redis::{free_port, temp_dir as tmpdir};

/// The servers a comparison runs on: redis-server first when installed.
fn bins() -> &'static [&'static str] {
    if have_redis() {
        &[REDIS, OXIDIS]
    } else {
        &[OXIDIS]
    }
}

/// A server process (Oxidis or Redis) with its own dir and log file.
struct Srv {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Srv {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The settings every test uses, then `extra`.
fn args(dir: &Path, port: u16, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--dir",
        dir.to_str().unwrap(),
        "--logfile",
        "server.log",
        "--save",
        "",
        "--enable-debug-command",
        "yes",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// Starts `bin` in `dir`; None when it exited instead (a refused start).
fn try_start(bin: &str, dir: &Path, extra: &[&str]) -> Result<Srv, i32> {
    let port = free_port();
    let mut child = Command::new(bin)
        .args(args(dir, port, extra))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server");
    let deadline = Instant::now() + Duration::from_secs(20);
    // Ready once PING answers (Redis answers LOADING while it loads, and
    // may listen, then give up loading and exit).
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return Err(st.code().unwrap_or(-1));
        }
        let pong = client
            .get_connection()
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
        if pong.is_ok() {
            return Ok(Srv {
                child,
                port,
                dir: dir.to_path_buf(),
            });
        }
        assert!(Instant::now() < deadline, "{bin} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn start(bin: &str, dir: &Path, extra: &[&str]) -> Srv {
    match try_start(bin, dir, extra) {
        Ok(s) => s,
        Err(code) => panic!(
            "{bin} exited with {code}:\n{}",
            std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
        ),
    }
}

impl Srv {
    fn conn(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .unwrap()
    }

    fn cmd(&self, c: &mut redis::Connection, words: &[&str]) -> Value {
        let mut cmd = redis::cmd(words[0]);
        for w in &words[1..] {
            cmd.arg(*w);
        }
        cmd.query::<Value>(c)
            .unwrap_or_else(|e| panic!("{words:?}: {e}"))
    }

    fn info_field(&self, c: &mut redis::Connection, name: &str) -> String {
        let info: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .unwrap_or_else(|| panic!("no {name} in INFO"))
            .to_string()
    }

    /// Waits until no rewrite runs or is scheduled.
    fn wait_rewrite(&self, c: &mut redis::Connection) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.info_field(c, "aof_rewrite_in_progress") != "0"
            || self.info_field(c, "aof_rewrite_scheduled") != "0"
        {
            assert!(Instant::now() < deadline, "rewrite never ended");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn digest(&self, c: &mut redis::Connection) -> String {
        redis::cmd("DEBUG").arg("DIGEST").query(c).unwrap()
    }

    /// Per database and key: the key, its type, TTL and value digest
    /// (DEBUG DIGEST-VALUE), to name what differs.
    fn keys(&self, c: &mut redis::Connection) -> Vec<(usize, String, String, i64, String)> {
        let mut out = Vec::new();
        for db in 0..16 {
            let _: Value = redis::cmd("SELECT").arg(db).query(c).unwrap();
            let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
            keys.sort();
            for k in keys {
                let t: String = redis::cmd("TYPE").arg(&k).query(c).unwrap();
                let ttl: i64 = redis::cmd("PEXPIRETIME").arg(&k).query(c).unwrap();
                let d: Vec<String> = redis::cmd("DEBUG")
                    .arg("DIGEST-VALUE")
                    .arg(&k)
                    .query(c)
                    .unwrap();
                out.push((db, k, t, ttl, d.concat()));
            }
        }
        let _: Value = redis::cmd("SELECT").arg(0).query(c).unwrap();
        out
    }

    /// SHUTDOWN (the AOF is fsynced), then waits for the exit.
    fn stop(mut self) {
        let mut c = self.conn();
        let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<Value>(&mut c);
        let _ = self.child.wait();
    }

    fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }
}

fn log_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
}

/// A log's messages without the `pid:role date time level` prefix.
fn messages(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| {
            let rest = l.split_once(':')?.1;
            let (_, msg) = rest.split_once(" * ").or_else(|| rest.split_once(" # "))?;
            Some(msg.to_string())
        })
        .collect()
}

/// Files of the AOF directory, sorted.
fn aof_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("appendonlydir"))
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn manifest(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to.join("appendonlydir")).unwrap();
    for f in aof_files(from) {
        std::fs::copy(
            from.join("appendonlydir").join(&f),
            to.join("appendonlydir").join(&f),
        )
        .unwrap();
    }
}

const NO_PREAMBLE: &[&str] = &["--appendonly", "yes", "--aof-use-rdb-preamble", "no"];
const PREAMBLE: &[&str] = &["--appendonly", "yes", "--aof-use-rdb-preamble", "yes"];

/// Every type, absolute expiries, a script, a function, a transaction,
/// several databases, deletions and counters: the same on both servers.
fn workload(s: &Srv, c: &mut redis::Connection) {
    let far = "4102444800000"; // 2100-01-01, absolute so both servers agree
    for w in [
        vec!["SET", "str", "hello"],
        vec!["SET", "int", "12345"],
        vec!["INCRBY", "int", "5"],
        vec!["INCRBYFLOAT", "flt", "1.5"],
        vec!["APPEND", "str", " world"],
        vec!["SET", "ttl", "v", "PXAT", far],
        vec!["SET", "gone", "x", "PX", "1"],
        vec!["RPUSH", "list", "a", "b", "c", "1", "2"],
        vec!["LPUSH", "list", "z"],
        vec!["LPOP", "list"],
        vec!["HSET", "hash", "f1", "v1", "f2", "2"],
        vec!["HINCRBY", "hash", "f2", "3"],
        vec!["SADD", "iset", "1", "2", "3"],
        vec!["SADD", "sset", "a", "b", "c"],
        vec!["SREM", "sset", "b"],
        vec!["ZADD", "zset", "1.5", "a", "-2", "b", "inf", "c"],
        vec!["ZINCRBY", "zset", "0.25", "a"],
        vec!["PEXPIREAT", "hash", far],
        vec!["EVAL", "redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[2])", "2", "fromscript", "counter", "v"],
        vec!["FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('myset', function(keys, args) return redis.call('set', keys[1], args[1]) end)"],
        vec!["FCALL", "myset", "1", "fromfunc", "fv"],
        vec!["SELECT", "2"],
        vec!["SET", "db2key", "in2"],
        vec!["RPUSH", "db2list", "x"],
        vec!["SELECT", "9"],
        vec!["HSET", "db9hash", "k", "v"],
        vec!["SELECT", "0"],
        vec!["MULTI"],
        vec!["SET", "tx1", "a"],
        vec!["INCR", "tx2"],
        vec!["EXEC"],
        vec!["DEL", "str2"],
        vec!["SET", "todelete", "x"],
        vec!["DEL", "todelete"],
    ] {
        s.cmd(c, &w);
    }
    // Many members: several RPUSH/SADD/ZADD/HMSET batches in a rewrite.
    let mut rp = vec!["RPUSH".to_string(), "biglist".into()];
    let mut sa = vec!["SADD".to_string(), "bigset".into()];
    let mut za = vec!["ZADD".to_string(), "bigzset".into()];
    let mut hs = vec!["HSET".to_string(), "bighash".into()];
    for i in 0..200 {
        rp.push(format!("e{i}"));
        sa.push(format!("m{i}"));
        za.push(format!("{}", i as f64 / 7.0));
        za.push(format!("z{i}"));
        hs.push(format!("f{i}"));
        hs.push("v".repeat(i % 70));
    }
    for w in [rp, sa, za, hs] {
        let w: Vec<&str> = w.iter().map(String::as_str).collect();
        s.cmd(c, &w);
    }
    std::thread::sleep(Duration::from_millis(5));
    // `gone` has expired: deleted now (and the DEL propagated), not by a
    // later cron pass racing the digest.
    s.cmd(c, &["EXISTS", "gone"]);
}

fn functions(s: &Srv, c: &mut redis::Connection) -> Value {
    s.cmd(c, &["FUNCTION", "LIST", "WITHCODE"])
}

/// Writes, restart, the same dataset (digest, functions), then a rewrite
/// and a restart again.
#[test]
fn restart_brings_everything_back() {
    restart_with(NO_PREAMBLE, "aof");
    restart_with(PREAMBLE, "rdb");
}

fn restart_with(cfg: &[&str], base_ext: &str) {
    let dir = tmpdir("restart");
    let s = start(OXIDIS, &dir, cfg);
    let mut c = s.conn();
    workload(&s, &mut c);
    let keys = s.keys(&mut c);
    let funcs = functions(&s, &mut c);
    s.kill9();
    let s = start(OXIDIS, &dir, cfg);
    let mut c = s.conn();
    assert_eq!(s.keys(&mut c), keys, "{cfg:?}");
    assert_eq!(functions(&s, &mut c), funcs);
    assert_eq!(s.cmd(&mut c, &["EXISTS", "gone"]), Value::Int(0));
    // BGREWRITEAOF, more writes, restart.
    assert_eq!(
        s.cmd(&mut c, &["BGREWRITEAOF"]),
        Value::SimpleString("Background append only file rewriting started".into())
    );
    s.wait_rewrite(&mut c);
    s.cmd(&mut c, &["SET", "after", "rewrite"]);
    let digest = s.keys(&mut c);
    s.stop();
    assert_eq!(
        manifest(&dir),
        format!("file appendonly.aof.2.base.{base_ext} seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n")
    );
    let s = start(OXIDIS, &dir, cfg);
    let mut c = s.conn();
    assert_eq!(s.keys(&mut c), digest);
    assert_eq!(functions(&s, &mut c), funcs);
    // DEBUG LOADAOF: the same dataset read back in place.
    s.cmd(&mut c, &["DEBUG", "LOADAOF"]);
    assert_eq!(s.keys(&mut c), digest);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each server loads the AOF directory the other wrote: the same dataset.
#[test]
fn redis_and_oxidis_load_each_others_aof() {
    if !have_redis() {
        return;
    }
    for (writer, reader) in [(OXIDIS, REDIS), (REDIS, OXIDIS)] {
        for (rewrite, cfg) in [
            (false, NO_PREAMBLE),
            (true, NO_PREAMBLE),
            (false, PREAMBLE),
            (true, PREAMBLE),
        ] {
            let a = tmpdir("xw");
            let b = tmpdir("xr");
            let s = start(writer, &a, cfg);
            let mut c = s.conn();
            workload(&s, &mut c);
            if rewrite {
                s.cmd(&mut c, &["BGREWRITEAOF"]);
                s.wait_rewrite(&mut c);
                s.cmd(&mut c, &["SET", "after", "rewrite"]);
            }
            let keys = s.keys(&mut c);
            let funcs = functions(&s, &mut c);
            s.stop();
            copy_dir(&a, &b);
            let r = start(reader, &b, cfg);
            let mut c = r.conn();
            let got = r.keys(&mut c);
            for (x, y) in keys.iter().zip(&got) {
                assert_eq!(x, y, "{writer} -> {reader}, rewrite {rewrite}, {cfg:?}");
            }
            assert_eq!(keys.len(), got.len());
            assert_eq!(functions(&r, &mut c), funcs);
            r.stop();
            let _ = std::fs::remove_dir_all(&a);
            let _ = std::fs::remove_dir_all(&b);
        }
    }
}

/// Run the same steps on both: the same file names, manifest and incr bytes.
fn same_files_as_redis(extra: &[&str], steps: &[&[&str]]) {
    same_files_as_redis_with(extra, steps, false)
}

/// [`same_files_as_redis`], with a replica (a raw SYNC connection) attached
/// first when `replica`: its stream must not change the AOF's.
fn same_files_as_redis_with(extra: &[&str], steps: &[&[&str]], replica: bool) {
    let mut seen = Vec::new();
    for bin in [REDIS, OXIDIS] {
        let dir = tmpdir("names");
        let s = start(bin, &dir, extra);
        let _replica = replica.then(|| {
            use std::io::{Read, Write};
            let mut r = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
            r.write_all(b"SYNC\r\n").unwrap();
            // The RDB's `$<len>` line (newlines may come first).
            let mut b = [0u8; 1];
            while r.read(&mut b).unwrap() == 1 && b[0] != b'$' {}
            r
        });
        let mut c = s.conn();
        for w in steps {
            s.cmd(&mut c, w);
            if w[0] == "BGREWRITEAOF" || w[0] == "CONFIG" {
                s.wait_rewrite(&mut c);
            }
        }
        s.stop();
        let files = aof_files(&dir);
        let incr: Vec<Vec<u8>> = files
            .iter()
            .filter(|f| f.contains(".incr."))
            .map(|f| std::fs::read(dir.join("appendonlydir").join(f)).unwrap())
            .collect();
        seen.push((files, manifest(&dir), incr));
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert_eq!(seen[0], seen[1], "redis-server vs oxidis");
}

#[test]
fn file_names_and_manifest_match_redis() {
    if !have_redis() {
        return;
    }
    same_files_as_redis(
        NO_PREAMBLE,
        &[&["SET", "a", "1"], &["SELECT", "3"], &["INCR", "n"]],
    );
    same_files_as_redis(
        NO_PREAMBLE,
        &[
            &["SET", "a", "1"],
            &["BGREWRITEAOF"],
            &["SET", "b", "2"],
            &["BGREWRITEAOF"],
            &["DEL", "a"],
        ],
    );
    // Turned on by CONFIG SET: the first base comes from a rewrite.
    same_files_as_redis(
        &["--aof-use-rdb-preamble", "no"],
        &[
            &["SET", "a", "1"],
            &["CONFIG", "SET", "appendonly", "yes"],
            &["SET", "b", "2"],
        ],
    );
    // The default base is an RDB file.
    same_files_as_redis(
        &["--appendonly", "yes"],
        &[&["SET", "a", "1"], &["BGREWRITEAOF"], &["SET", "b", "2"]],
    );
    // History files kept with aof-disable-auto-gc.
    same_files_as_redis(
        &[
            "--appendonly",
            "yes",
            "--aof-use-rdb-preamble",
            "no",
            "--aof-disable-auto-gc",
            "yes",
        ],
        &[&["SET", "a", "1"], &["BGREWRITEAOF"], &["SET", "b", "2"]],
    );
}

/// PUBLISH goes to the replicas only: the AOF gets the transaction around
/// it (MULTI/EXEC even when PUBLISH was all it held) and no SELECT for it,
/// with or without a replica attached, as Redis's.
#[test]
fn publish_stays_out_of_the_aof_as_redis() {
    if !have_redis() {
        return;
    }
    let steps: &[&[&str]] = &[
        &["PUBLISH", "ch", "m0"],
        &["SELECT", "3"],
        &["PUBLISH", "ch", "m3"],
        &["MULTI"],
        &["PUBLISH", "ch", "a"],
        &["SET", "k", "v"],
        &["EXEC"],
        &["MULTI"],
        &["PUBLISH", "ch", "b"],
        &["PUBLISH", "ch", "c"],
        &["EXEC"],
        &["SELECT", "5"],
        &["PUBLISH", "ch", "m5"],
        &["SET", "k", "5"],
    ];
    for replica in [false, true] {
        same_files_as_redis_with(NO_PREAMBLE, steps, replica);
    }
}

/// `redis.set_repl` sends a script's commands to the AOF, the replicas,
/// both or neither (unit/scripting "Test selective replication of certain
/// Redis commands from Lua"): the AOF holds what Redis's holds, with and
/// without a replica.
#[test]
fn a_scripts_set_repl_targets_reach_the_aof_as_redis() {
    if !have_redis() {
        return;
    }
    let body = "redis.call('set','a','1') \
                redis.set_repl(redis.REPL_NONE) redis.call('set','b','2') \
                redis.set_repl(redis.REPL_AOF) redis.call('set','c','3') \
                redis.set_repl(redis.REPL_REPLICA) redis.call('set','e','5') \
                redis.set_repl(redis.REPL_ALL) redis.call('set','d','4')";
    let only_aof = "redis.set_repl(redis.REPL_AOF) redis.call('incr','x')";
    let only_replicas = "redis.set_repl(redis.REPL_REPLICA) redis.call('incr','y') \
                         redis.call('incr','y')";
    let steps: &[&[&str]] = &[
        &["EVAL", body, "0"],
        &["EVAL", only_aof, "0"],
        &["EVAL", only_replicas, "0"],
        &["SET", "after", "1"],
    ];
    for replica in [false, true] {
        same_files_as_redis_with(NO_PREAMBLE, steps, replica);
    }
}

/// CONFIG SET appendonly yes writes a base; a restart with the AOF loads it.
#[test]
fn config_set_appendonly_yes_creates_a_base() {
    let dir = tmpdir("cfgset");
    let s = start(OXIDIS, &dir, &["--aof-use-rdb-preamble", "no"]);
    let mut c = s.conn();
    s.cmd(&mut c, &["SET", "before", "1"]);
    assert!(aof_files(&dir).is_empty());
    assert_eq!(
        s.cmd(&mut c, &["CONFIG", "SET", "appendonly", "yes"]),
        Value::Okay
    );
    s.wait_rewrite(&mut c);
    assert_eq!(s.info_field(&mut c, "aof_enabled"), "1");
    s.cmd(&mut c, &["SET", "after", "2"]);
    let digest = s.digest(&mut c);
    s.stop();
    assert_eq!(
        aof_files(&dir),
        [
            "appendonly.aof.1.base.aof",
            "appendonly.aof.1.incr.aof",
            "appendonly.aof.manifest"
        ]
    );
    let s = start(OXIDIS, &dir, NO_PREAMBLE);
    let mut c = s.conn();
    assert_eq!(s.digest(&mut c), digest);
    // And off again: the AOF stops growing.
    s.cmd(&mut c, &["CONFIG", "SET", "appendonly", "no"]);
    assert_eq!(s.info_field(&mut c, "aof_enabled"), "0");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Appends raw bytes to the last incr file of `dir`.
fn append_to_incr(dir: &Path, bytes: &[u8]) -> PathBuf {
    let name = aof_files(dir)
        .into_iter()
        .rfind(|f| f.contains(".incr."))
        .unwrap();
    let p = dir.join("appendonlydir").join(name);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .unwrap()
        .write_all(bytes)
        .unwrap();
    p
}

/// A torn last command: cut off and logged with `aof-load-truncated yes`,
/// refused without it; a bad command in the middle is refused. The log
/// lines are Redis's, compared with a real redis-server given the same file.
#[test]
fn torn_and_bad_files() {
    let torn = b"*3\r\n$3\r\nSET\r\n$4\r\ntorn\r\n$5\r\nval";
    let bad = b"+garbage\r\n*3\r\n$3\r\nSET\r\n$1\r\nz\r\n$1\r\n1\r\n";
    let mut results = Vec::new();
    for &bin in bins() {
        let mut r = Vec::new();
        for (tail, truncated) in [(&torn[..], "yes"), (&torn[..], "no"), (&bad[..], "yes")] {
            let dir = tmpdir("torn");
            let s = start(bin, &dir, NO_PREAMBLE);
            let mut c = s.conn();
            s.cmd(&mut c, &["SET", "k", "v"]);
            s.stop();
            let path = append_to_incr(&dir, tail);
            let len_before = std::fs::metadata(&path).unwrap().len() - tail.len() as u64;
            let _ = std::fs::remove_file(dir.join("server.log"));
            let mut extra = NO_PREAMBLE.to_vec();
            extra.extend(["--aof-load-truncated", truncated]);
            let started = match try_start(bin, &dir, &extra) {
                Ok(s) => {
                    let mut c = s.conn();
                    assert_eq!(
                        s.cmd(&mut c, &["GET", "k"]),
                        Value::BulkString(b"v".to_vec())
                    );
                    assert_eq!(s.cmd(&mut c, &["EXISTS", "torn"]), Value::Int(0));
                    s.stop();
                    assert_eq!(std::fs::metadata(&path).unwrap().len(), len_before);
                    0
                }
                Err(code) => code,
            };
            let lines: Vec<String> = messages(&log_of(&dir))
                .into_iter()
                .filter(|l| {
                    l.contains("AOF") || l.contains("append only") || l.contains("append-only")
                })
                .filter(|l| !l.contains("seconds"))
                .collect();
            r.push((started, lines));
            let _ = std::fs::remove_dir_all(&dir);
        }
        results.push(r);
    }
    let ours = results.last().unwrap();
    assert_eq!(
        ours[0].0, 0,
        "truncated tail loads with aof-load-truncated yes"
    );
    assert_eq!(ours[1].0, 1, "refused without it");
    assert_eq!(ours[2].0, 1, "bad format refused");
    if results.len() == 2 {
        for (i, (theirs, ours)) in results[0].iter().zip(&results[1]).enumerate() {
            assert_eq!(theirs.0, ours.0, "case {i}");
            for line in &theirs.1 {
                assert!(
                    ours.1.contains(line),
                    "case {i}: missing {line:?} in {:?}",
                    ours.1
                );
            }
        }
    }
}

/// An `appendonly.aof` of a Redis before 7 becomes the base of a new AOF
/// directory, as Redis 7 upgrades it.
#[test]
fn old_single_file_aof_is_upgraded() {
    let old = b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$3\r\nold\r\n$5\r\nstyle\r\n";
    let mut seen = Vec::new();
    for &bin in bins() {
        let dir = tmpdir("upgrade");
        std::fs::write(dir.join("appendonly.aof"), old).unwrap();
        let s = start(bin, &dir, NO_PREAMBLE);
        let mut c = s.conn();
        assert_eq!(
            s.cmd(&mut c, &["GET", "old"]),
            Value::BulkString(b"style".to_vec())
        );
        s.cmd(&mut c, &["SET", "new", "1"]);
        s.stop();
        assert!(!dir.join("appendonly.aof").exists());
        let msgs: Vec<String> = messages(&log_of(&dir))
            .into_iter()
            .filter(|m| m.contains("migrated"))
            .collect();
        seen.push((aof_files(&dir), manifest(&dir), msgs));
        let s = start(bin, &dir, NO_PREAMBLE);
        let mut c = s.conn();
        assert_eq!(
            s.cmd(&mut c, &["GET", "new"]),
            Value::BulkString(b"1".to_vec())
        );
        s.stop();
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert_eq!(
        seen.last().unwrap().1,
        "file appendonly.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    if seen.len() == 2 {
        assert_eq!(seen[0], seen[1]);
    }
}

/// A full disk: writes refused with Redis's MISCONF error, PING too, reads
/// served; once space frees, the buffered writes reach the file and writes
/// are accepted again. Needs a small tmpfs (root); skipped otherwise.
#[test]
fn disk_full_refuses_writes_until_space_frees() {
    let dir = tmpdir("full");
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            "size=512k",
            "tmpfs",
            mnt.to_str().unwrap(),
        ])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        return;
    }
    let mut results = Vec::new();
    for &bin in bins() {
        let d = mnt.join("d");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let s = start(bin, &d, NO_PREAMBLE);
        let mut c = s.conn();
        s.cmd(&mut c, &["SET", "k", "v"]);
        // Fill the disk.
        let filler = d.join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![b'x'; 4096];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
        drop(f);
        let big = "y".repeat(8192);
        let first = redis::cmd("SET").arg("k2").arg(&big).query::<Value>(&mut c);
        let refused = redis::cmd("SET").arg("k3").arg("v").query::<Value>(&mut c);
        let ping = redis::cmd("PING").query::<Value>(&mut c);
        let get = redis::cmd("GET").arg("k").query::<Value>(&mut c).unwrap();
        let status = s.info_field(&mut c, "aof_last_write_status");
        std::fs::remove_file(&filler).unwrap();
        // Redis retries once a second from its cron.
        let deadline = Instant::now() + Duration::from_secs(10);
        while redis::cmd("SET")
            .arg("k4")
            .arg("v")
            .query::<Value>(&mut c)
            .is_err()
        {
            assert!(Instant::now() < deadline, "{bin} never recovered");
            std::thread::sleep(Duration::from_millis(50));
        }
        let status_after = s.info_field(&mut c, "aof_last_write_status");
        let digest = s.digest(&mut c);
        s.stop();
        let s = start(bin, &d, NO_PREAMBLE);
        let mut c = s.conn();
        assert_eq!(
            s.digest(&mut c),
            digest,
            "{bin}: what was acknowledged survived"
        );
        s.stop();
        let text = |r: redis::RedisResult<Value>| match r {
            Ok(v) => format!("{v:?}"),
            Err(e) => e.to_string(),
        };
        results.push((
            text(first),
            text(refused),
            text(ping),
            get,
            status,
            status_after,
        ));
    }
    let _ = Command::new("umount").arg(&mnt).status();
    let _ = std::fs::remove_dir_all(&dir);
    let ours = results.last().unwrap();
    assert!(
        ours.1
            .contains("Errors writing to the AOF file: No space left on device"),
        "{ours:?}"
    );
    assert_eq!(ours.4, "err");
    assert_eq!(ours.5, "ok");
    if results.len() == 2 {
        assert_eq!(results[0], results[1]);
    }
}

/// One crash trial: a writer sends SETs with `appendfsync always` and
/// records each acknowledged one; the server is SIGKILLed after a random
/// delay; after a restart every acknowledged write must be there.
fn crash_trial(dir: &Path, seed: u64) {
    let s = start(OXIDIS, dir, CRASH_ARGS);
    let port = s.port;
    let base: i64 = {
        let mut c = s.conn();
        redis::cmd("DBSIZE").query(&mut c).unwrap()
    };
    let writer = std::thread::spawn(move || {
        let mut acked = Vec::new();
        let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}/")) else {
            return acked;
        };
        let Ok(mut c) = client.get_connection() else {
            return acked;
        };
        for i in 0.. {
            let k = format!("s{seed}:{i}");
            match redis::cmd("SET").arg(&k).arg(i).query::<Value>(&mut c) {
                Ok(Value::Okay) => acked.push(k),
                _ => break,
            }
        }
        acked
    });
    // A pseudo-random delay between 5 and 300 ms.
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    x ^= x >> 33;
    std::thread::sleep(Duration::from_millis(5 + x % 295));
    s.kill9();
    let acked = writer.join().unwrap();
    let s = start(OXIDIS, dir, CRASH_ARGS);
    let mut c = s.conn();
    for k in &acked {
        let v: Option<String> = redis::cmd("GET").arg(k).query(&mut c).unwrap();
        assert!(v.is_some(), "trial {seed}: acknowledged {k} lost");
    }
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    // At most the one write in flight at the kill is there unacknowledged.
    assert!(n - base >= acked.len() as i64 && n - base <= acked.len() as i64 + 1);
    s.kill9();
}

const CRASH_ARGS: &[&str] = &["--appendonly", "yes", "--appendfsync", "always"];

fn crash_trials(n: u64) {
    let dir = tmpdir("crash");
    for t in 0..n {
        crash_trial(&dir, t);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigkill_loses_no_acknowledged_write_with_always() {
    let n = std::env::var("AOF_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    crash_trials(n);
}

/// The long run: `cargo test --release --test aof -- --ignored`.
#[test]
#[ignore = "100 SIGKILL trials take about a minute; cargo test runs the same check with 3 trials (sigkill_loses_no_acknowledged_write_with_always)"]
fn sigkill_crash_test_100_trials() {
    crash_trials(100);
}

/// The server log names the files it created, as Redis does.
#[test]
fn startup_logs_the_files() {
    let dir = tmpdir("logs");
    let s = start(OXIDIS, &dir, NO_PREAMBLE);
    let log = s.log();
    s.stop();
    let r = BufReader::new(log.as_bytes());
    let msgs: Vec<String> = messages(&r.lines().map(|l| l.unwrap() + "\n").collect::<String>());
    assert!(msgs
        .contains(&"Creating AOF base file appendonly.aof.1.base.aof on server start".to_string()));
    assert!(msgs
        .contains(&"Creating AOF incr file appendonly.aof.1.incr.aof on server start".to_string()));
    let _ = std::fs::remove_dir_all(&dir);
}
