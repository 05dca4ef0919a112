//! Snapshots with the real binaries as processes, each in its own --dir:
//! SAVE/BGSAVE and restart, save points, SIGTERM and SHUTDOWN saving,
//! MISCONF after a failed BGSAVE, a kill -9 during BGSAVE, and a real
//! redis-server 7.0.15 loading what Oxidis saved; what Redis's own suite
//! leans on around persistence (DEBUG OBJECT/POPULATE/RELOAD hooks, the
//! save and load delays, MIGRATE, AOF loading rules, load failure logs). Where a reply or a field
//! is compared, the same steps run against redis-server in the same test.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::real_redis::{self, free_port, temp_dir};
use redis::Value;

const OXIDIS: &str = env!("CARGO_BIN_EXE_oxidis-server");

struct Srv {
    child: Child,
    port: u16,
}

impl Drop for Srv {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `bin` in `dir` (log in `dir/<bin>.log`) and waits until it answers.
fn start(bin: &Path, dir: &Path, flags: &[&str]) -> Srv {
    start_on(bin, dir, free_port(), flags)
}

fn start_on(bin: &Path, dir: &Path, port: u16, flags: &[&str]) -> Srv {
    let name = bin.file_name().unwrap().to_string_lossy().to_string();
    let log = dir.join(format!("{name}.log"));
    let child = Command::new(bin)
        .args(["--port", &port.to_string(), "--dir", dir.to_str().unwrap()])
        .args(["--logfile", log.to_str().unwrap()])
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server");
    let mut srv = Srv { child, port };
    for _ in 0..500 {
        if let Ok(mut c) = redis::Client::open(srv.url()).and_then(|c| c.get_connection()) {
            if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                return srv;
            }
        }
        if let Ok(Some(st)) = srv.child.try_wait() {
            panic!(
                "{name} exited with {st}: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{name} did not answer");
}

impl Srv {
    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn conn(&self) -> redis::Connection {
        let c = redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c
    }

    /// Waits (bounded) for the process to end; its exit code.
    fn wait_exit(&mut self) -> Option<i32> {
        for _ in 0..1000 {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
}

fn oxidis() -> PathBuf {
    PathBuf::from(OXIDIS)
}

/// One reply as text: status/bulk/int as their text, errors as `-ERR ...`.
fn run<A: redis::ToRedisArgs>(c: &mut redis::Connection, args: &[A]) -> String {
    let mut cmd = redis::Cmd::new();
    for a in args {
        cmd.arg(a);
    }
    match cmd.query::<Value>(c) {
        Ok(Value::Okay) => "OK".into(),
        Ok(Value::SimpleString(s)) => s,
        Ok(Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(Value::Int(n)) => n.to_string(),
        Ok(Value::Nil) => "(nil)".into(),
        Ok(v) => format!("{v:?}"),
        Err(e) => {
            let code = e.code().unwrap_or("?").to_string();
            let detail = e.detail().unwrap_or("").to_string();
            if detail.is_empty() {
                format!("-{code}")
            } else {
                format!("-{code} {detail}")
            }
        }
    }
}

/// One INFO persistence field.
fn info_field(c: &mut redis::Connection, name: &str) -> String {
    let info: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
    field_of(&info, name)
}

fn field_of(info: &str, name: &str) -> String {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO"))
        .to_string()
}

/// Polls until no BGSAVE runs and `rdb_saves` reached `saves`; then the
/// last bgsave status. Both fields come from one INFO reply: read from two,
/// a BGSAVE starting between them looked finished.
fn wait_bgsave(c: &mut redis::Connection, saves: u64) -> String {
    for _ in 0..1500 {
        let info: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
        let done = field_of(&info, "rdb_bgsave_in_progress") == "0"
            && field_of(&info, "rdb_saves").parse::<u64>().unwrap() >= saves;
        if done {
            return field_of(&info, "rdb_last_bgsave_status");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("BGSAVE did not finish");
}

fn fill(c: &mut redis::Connection, n: usize) {
    let mut p = redis::pipe();
    for i in 0..n {
        p.cmd("SET")
            .arg(format!("key:{i}"))
            .arg(format!("value:{i}"))
            .ignore();
    }
    p.query::<()>(c).unwrap();
}

fn dbsize(c: &mut redis::Connection) -> i64 {
    redis::cmd("DBSIZE").query(c).unwrap()
}

#[test]
fn save_then_restart_loads_the_keys() {
    let dir = temp_dir("snap-save");
    let s = start(&oxidis(), &dir, &["--save", ""]);
    let mut c = s.conn();
    fill(&mut c, 100);
    run(&mut c, &["EXPIRE", "key:7", "1000"]);
    assert_eq!(run(&mut c, &["SAVE"]), "OK");
    assert_eq!(info_field(&mut c, "rdb_changes_since_last_save"), "0");
    assert_eq!(info_field(&mut c, "rdb_saves"), "1");
    drop(c);
    drop(s);
    let s = start(&oxidis(), &dir, &["--save", ""]);
    let mut c = s.conn();
    assert_eq!(dbsize(&mut c), 100);
    assert_eq!(run(&mut c, &["GET", "key:42"]), "value:42");
    assert!(run(&mut c, &["TTL", "key:7"]).parse::<i64>().unwrap() > 0);
    assert_eq!(info_field(&mut c, "rdb_last_load_keys_loaded"), "100");
    // No temp file is left behind.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.starts_with("temp-")), "{names:?}");
}

#[test]
fn bgsave_then_restart_loads_the_keys() {
    let dir = temp_dir("snap-bgsave");
    let s = start(&oxidis(), &dir, &["--save", ""]);
    let mut c = s.conn();
    fill(&mut c, 1000);
    assert_eq!(run(&mut c, &["BGSAVE"]), "Background saving started");
    assert_eq!(wait_bgsave(&mut c, 1), "ok");
    assert_eq!(info_field(&mut c, "rdb_changes_since_last_save"), "0");
    assert!(run(&mut c, &["INFO", "stats"]).contains("total_forks:1"));
    drop(c);
    drop(s);
    let s = start(&oxidis(), &dir, &["--save", ""]);
    let mut c = s.conn();
    assert_eq!(dbsize(&mut c), 1000);
    assert_eq!(run(&mut c, &["GET", "key:999"]), "value:999");
}

#[test]
fn a_save_point_starts_a_bgsave() {
    let dir = temp_dir("snap-points");
    let s = start(&oxidis(), &dir, &["--save", "1 1"]);
    let mut c = s.conn();
    run(&mut c, &["SET", "k", "v"]);
    assert_eq!(wait_bgsave(&mut c, 1), "ok");
    assert!(dir.join("dump.rdb").exists());
    // CONFIG SET save "" stops them.
    assert_eq!(run(&mut c, &["CONFIG", "SET", "save", ""]), "OK");
    drop(c);
    drop(s);
    let s = start(&oxidis(), &dir, &["--save", ""]);
    assert_eq!(run(&mut s.conn(), &["GET", "k"]), "v");
}

#[test]
fn sigterm_saves_only_with_save_points() {
    let dir = temp_dir("snap-term");
    let mut s = start(&oxidis(), &dir, &["--save", "3600 1"]);
    run(&mut s.conn(), &["SET", "k", "v"]);
    s.signal("-TERM");
    assert_eq!(s.wait_exit(), Some(0));
    let s = start(&oxidis(), &dir, &["--save", ""]);
    assert_eq!(run(&mut s.conn(), &["GET", "k"]), "v");
    drop(s);

    let dir = temp_dir("snap-term-nosave");
    let mut s = start(&oxidis(), &dir, &["--save", ""]);
    run(&mut s.conn(), &["SET", "k", "v"]);
    s.signal("-INT");
    assert_eq!(s.wait_exit(), Some(0));
    assert!(!dir.join("dump.rdb").exists());
}

#[test]
fn shutdown_nosave_and_save() {
    let dir = temp_dir("snap-shutdown");
    let mut s = start(&oxidis(), &dir, &["--save", "3600 1"]);
    let mut c = s.conn();
    run(&mut c, &["SET", "k", "v"]);
    let _ = run(&mut c, &["SHUTDOWN", "NOSAVE"]);
    assert_eq!(s.wait_exit(), Some(0));
    assert!(!dir.join("dump.rdb").exists());

    let mut s = start(&oxidis(), &dir, &["--save", ""]);
    let mut c = s.conn();
    run(&mut c, &["SET", "k", "v2"]);
    let _ = run(&mut c, &["SHUTDOWN", "SAVE"]);
    assert_eq!(s.wait_exit(), Some(0));
    let s = start(&oxidis(), &dir, &["--save", ""]);
    assert_eq!(run(&mut s.conn(), &["GET", "k"]), "v2");
}

/// The failure path, side by side with redis-server: the dir disappears,
/// a BGSAVE fails, writes and PING get MISCONF, SAVE and SHUTDOWN fail;
/// once the dir is back a BGSAVE succeeds and writes are accepted again.
fn misconf_steps(bin: &Path) -> Vec<String> {
    let dir = temp_dir("snap-misconf");
    let flags = ["--save", "3600 1", "--enable-protected-configs", "yes"];
    let s = start(bin, &dir, &flags);
    let mut c = s.conn();
    let mut out = vec![run(&mut c, &["SET", "a", "1"])];
    // The log file lives in dir too: remove everything, then the dir.
    std::fs::remove_dir_all(&dir).unwrap();
    out.push(run(&mut c, &["BGSAVE"]));
    out.push(wait_bgsave(&mut c, 1));
    out.push(run(&mut c, &["SET", "b", "2"]));
    out.push(run(&mut c, &["PING"]));
    out.push(run(&mut c, &["GET", "a"]));
    out.push(run(&mut c, &["MULTI"]));
    out.push(run(&mut c, &["SET", "c", "3"]));
    out.push(run(&mut c, &["EXEC"]));
    out.push(run(
        &mut c,
        &["EVAL", "return redis.call('set','d','4')", "0"],
    ));
    out.push(run(&mut c, &["SAVE"]));
    out.push(run(&mut c, &["SHUTDOWN"]));
    out.push(run(
        &mut c,
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "no"],
    ));
    out.push(run(&mut c, &["SET", "b", "2"]));
    out.push(run(
        &mut c,
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"],
    ));
    out.push(run(&mut c, &["SET", "b", "2"]));
    // Redis's working directory is the removed one: CONFIG SET dir enters
    // the new one (Oxidis writes by the configured path either way).
    std::fs::create_dir_all(&dir).unwrap();
    out.push(run(
        &mut c,
        &["CONFIG", "SET", "dir", dir.to_str().unwrap()],
    ));
    out.push(run(&mut c, &["BGSAVE"]));
    out.push(wait_bgsave(&mut c, 2));
    out.push(run(&mut c, &["SET", "b", "2"]));
    out.push(info_field(&mut c, "rdb_changes_since_last_save"));
    out
}

#[test]
fn misconf_after_a_failed_bgsave_and_recovery_as_redis() {
    let ours = misconf_steps(&oxidis());
    let redis = misconf_steps(&real_redis::binary());
    assert_eq!(ours, redis);
    assert!(ours[3].starts_with("-MISCONF"), "{ours:?}");
}

#[test]
fn flushall_saves_when_save_points_are_set_as_redis() {
    let steps = |bin: &Path| {
        let dir = temp_dir("snap-flushall");
        let s = start(bin, &dir, &["--save", "3600 1"]);
        let mut c = s.conn();
        run(&mut c, &["SET", "a", "1"]);
        let mut out = vec![run(&mut c, &["FLUSHALL"])];
        out.push(dir.join("dump.rdb").exists().to_string());
        out.push(info_field(&mut c, "rdb_changes_since_last_save"));
        out.push(info_field(&mut c, "rdb_saves"));
        out
    };
    assert_eq!(steps(&oxidis()), steps(&real_redis::binary()));
}

#[test]
fn info_persistence_has_redis_fields_in_order() {
    let names = |bin: &Path| {
        let dir = temp_dir("snap-info");
        let s = start(bin, &dir, &["--save", ""]);
        let info: String = redis::cmd("INFO")
            .arg("persistence")
            .query(&mut s.conn())
            .unwrap();
        info.lines()
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&oxidis()), names(&real_redis::binary()));
}

#[test]
fn kill_9_during_bgsave_leaves_a_loadable_dump() {
    let dir = temp_dir("snap-kill9");
    let port = free_port();
    let s = start_on(&oxidis(), &dir, port, &["--save", ""]);
    let mut c = s.conn();
    fill(&mut c, 10);
    assert_eq!(run(&mut c, &["SAVE"]), "OK");
    fill(&mut c, 200_000);
    assert_eq!(run(&mut c, &["BGSAVE"]), "Background saving started");
    s.signal("-KILL");
    drop(c);
    drop(s);
    // The child closed its copies of the listening sockets: the port is
    // free again at once, and the dump (old, or new if the orphaned child
    // finished) loads.
    let s = start_on(&oxidis(), &dir, port, &["--save", ""]);
    let n = dbsize(&mut s.conn());
    assert!(n == 10 || n == 200_000, "{n}");
}

#[test]
fn real_redis_loads_what_oxidis_saved() {
    let dir = temp_dir("snap-interop");
    let s = start(&oxidis(), &dir, &["--save", ""]);
    let mut c = s.conn();
    fill(&mut c, 500);
    run(&mut c, &["RPUSH", "list", "a", "b", "c"]);
    run(&mut c, &["HSET", "hash", "f", "v"]);
    assert_eq!(run(&mut c, &["SAVE"]), "OK");
    let image = std::fs::read(dir.join("dump.rdb")).unwrap();
    let r = real_redis::load_rdb(&image, &[]).expect("redis-server loads the dump");
    let mut rc = r.conn();
    assert_eq!(dbsize(&mut rc), 502);
    assert_eq!(run(&mut rc, &["GET", "key:123"]), "value:123");
    assert_eq!(run(&mut rc, &["LINDEX", "list", "2"]), "c");
    assert_eq!(run(&mut rc, &["HGET", "hash", "f"]), "v");
}

/// Replies of `steps` against Oxidis and redis-server, each started in a
/// new dir with `flags` (DEBUG allowed).
fn both<F: Fn(&mut redis::Connection, &Srv) -> Vec<String>>(
    flags: &[&str],
    steps: F,
) -> (Vec<String>, Vec<String>) {
    let mut f = vec!["--enable-debug-command", "yes", "--save", ""];
    f.extend_from_slice(flags);
    let go = |bin: &Path| {
        let dir = temp_dir("suite-hooks");
        let s = start(bin, &dir, &f);
        steps(&mut s.conn(), &s)
    };
    (go(&oxidis()), go(&real_redis::binary()))
}

/// DEBUG OBJECT without the parts that differ between any two servers
/// (the address and the LRU clock).
fn debug_object(c: &mut redis::Connection, key: &str) -> String {
    let r = run(c, &["DEBUG", "OBJECT", key]);
    r.split(' ')
        .filter(|w| !w.starts_with("at:") && !w.starts_with("lru:"))
        // The idle time (1 s resolution) depends on when the clock ticked.
        .map(|w| {
            if w.starts_with("lru_seconds_idle:") {
                "lru_seconds_idle:<n>"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn debug_object_as_redis() {
    let (ours, redis) = both(&[], |c, _| {
        run(c, &["SET", "int", "123"]);
        run(c, &["SET", "shared", "9999"]);
        run(c, &["SET", "str", "hello"]);
        run(c, &["SET", "long", &"x".repeat(100)]);
        run(c, &["RPUSH", "list", "a", "b", "1", "22"]);
        run(c, &["HSET", "hash", "f", "v", "g", "w"]);
        run(c, &["SADD", "ints", "1", "2", "3"]);
        run(c, &["SADD", "set", "a", "b"]);
        run(c, &["ZADD", "zset", "1", "a", "2.5", "b"]);
        let mut out: Vec<String> = [
            "int", "shared", "str", "long", "list", "hash", "ints", "set", "zset",
        ]
        .iter()
        .map(|k| debug_object(c, k))
        .collect();
        out.push(run(c, &["CONFIG", "SET", "rdbcompression", "no"]));
        out.push(debug_object(c, "long"));
        out.push(run(c, &["DEBUG", "OBJECT", "missing"]));
        out.push(run(c, &["DEBUG", "OBJECT"]));
        out
    });
    assert_eq!(ours, redis);
    assert!(ours[4].contains("ql_nodes:1"), "{ours:?}");
}

#[test]
fn debug_populate_as_redis() {
    let (ours, redis) = both(&[], |c, _| {
        let mut out = vec![run(c, &["SET", "key:3", "mine"])];
        out.push(run(c, &["DEBUG", "POPULATE", "10"]));
        out.push(run(c, &["DEBUG", "POPULATE", "5", "p", "3"]));
        out.push(run(c, &["DEBUG", "POPULATE", "5", "q", "20"]));
        out.push(run(c, &["GET", "key:3"]));
        out.push(run(c, &["DEBUG", "DIGEST"]));
        out.push(run(c, &["DBSIZE"]));
        out.push(run(c, &["DEBUG", "POPULATE", "-1"]));
        out.push(run(c, &["DEBUG", "POPULATE", "x"]));
        out.push(run(c, &["DEBUG", "POPULATE", "1", "k", "-5"]));
        out.push(run(c, &["DEBUG", "LOG", "hello"]));
        out
    });
    assert_eq!(ours, redis);
}

#[test]
fn skip_checksum_validation_as_redis() {
    let (ours, redis) = both(&[], |c, _| {
        let mut p: Vec<u8> = redis::cmd("DUMP")
            .arg("nokey")
            .query::<Option<Vec<u8>>>(c)
            .unwrap()
            .unwrap_or_default();
        run(c, &["SET", "k", "some value"]);
        if let Some(d) = redis::cmd("DUMP")
            .arg("k")
            .query::<Option<Vec<u8>>>(c)
            .unwrap()
        {
            p = d;
        }
        let n = p.len();
        p[n - 1] ^= 0xff;
        let mut out = vec![run(c, &[&b"RESTORE"[..], b"a", b"0", &p])];
        out.push(run(c, &["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1"]));
        out.push(run(c, &[&b"RESTORE"[..], b"a", b"0", &p]));
        out.push(run(c, &["GET", "a"]));
        out
    });
    assert_eq!(ours, redis);
    assert_eq!(ours[2], "OK");
}

/// The INFO `migrate_cached_sockets` field.
fn migrate_sockets(c: &mut redis::Connection) -> String {
    let info: String = redis::cmd("INFO").arg("stats").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("migrate_cached_sockets:"))
        .unwrap()
        .to_string()
}

#[test]
fn migrate_as_redis() {
    let target = real_redis::RedisServer::start_in(&temp_dir("migrate-target"), &[]);
    let tport = target.port.to_string();
    let closed = free_port().to_string();
    let t = std::cell::RefCell::new(target.conn());
    // Each source moves keys into its own database of the one target.
    let db = std::cell::Cell::new(1);
    let (ours, redis) = both(&["--appendonly", "yes"], |c, _| {
        let d = db.get().to_string();
        db.set(db.get() + 1);
        run(&mut t.borrow_mut(), &["SELECT", &d]);
        let m = |c: &mut redis::Connection, rest: &[&str]| {
            let mut a = vec!["MIGRATE", "127.0.0.1", &tport];
            a.extend_from_slice(&rest[..1]);
            a.push(&d);
            a.extend_from_slice(&rest[1..]);
            run(c, &a)
        };
        run(c, &["SET", "k", "v"]);
        run(c, &["PEXPIRE", "k", "100000"]);
        run(c, &["RPUSH", "list", "a", "b"]);
        run(c, &["MSET", "a", "1", "b", "2", "c", "3"]);
        let mut out = vec![migrate_sockets(c)];
        out.push(m(c, &["nokey", "1000"]));
        out.push(m(c, &["k", "1000"]));
        out.push(migrate_sockets(c));
        out.push(run(c, &["EXISTS", "k"]));
        out.push(
            (run(&mut t.borrow_mut(), &["PTTL", "k"])
                .parse::<i64>()
                .unwrap()
                > 0)
            .to_string(),
        );
        out.push(m(c, &["list", "1000", "COPY"]));
        out.push(m(c, &["list", "1000", "COPY"]));
        out.push(m(c, &["list", "1000", "COPY", "REPLACE"]));
        out.push(run(c, &["EXISTS", "list"]));
        run(&mut t.borrow_mut(), &["SET", "b", "busy"]);
        out.push(m(c, &["", "1000", "KEYS", "a", "b", "c", "none"]));
        out.push(run(c, &["MGET", "a", "b", "c"]));
        out.push(run(&mut t.borrow_mut(), &["MGET", "a", "b", "c"]));
        out.push(m(c, &["x", "1000", "KEYS", "b"]));
        out.push(m(c, &["b", "1000", "BOGUS"]));
        out.push(m(c, &["b", "1000", "AUTH"]));
        out.push(m(c, &["b", "notanumber"]));
        out.push(m(c, &["b", "1000", "AUTH", "pw"]));
        out.push(run(c, &["MIGRATE", "127.0.0.1", &closed, "b", "0", "1000"]));
        out.push(run(c, &["EXISTS", "b"]));
        // What reached the AOF for the moves: DEL of the acknowledged keys.
        out.extend(
            aof_commands(c)
                .into_iter()
                .filter(|cmd| cmd.starts_with("DEL")),
        );
        out
    });
    assert_eq!(ours, redis);
    assert_eq!(ours[2], "OK");
    assert!(ours.iter().any(|l| l == "DEL k"), "{ours:?}");
}

/// The path of the server's AOF incr file (from its manifest).
fn incr_aof_path(c: &mut redis::Connection) -> PathBuf {
    let cfg: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("dir").query(c).unwrap();
    let adir = PathBuf::from(&cfg[1]).join("appendonlydir");
    let manifest = std::fs::read_to_string(adir.join("appendonly.aof.manifest")).unwrap();
    let incr = manifest
        .lines()
        .find(|l| l.ends_with("type i"))
        .and_then(|l| l.split(' ').nth(1))
        .unwrap()
        .to_string();
    adir.join(incr)
}

/// The commands in the server's AOF incr file, each as its words joined by spaces.
fn aof_commands(c: &mut redis::Connection) -> Vec<String> {
    let data = std::fs::read(incr_aof_path(c)).unwrap();
    let text = String::from_utf8_lossy(&data);
    let mut lines = text.split("\r\n");
    let mut out = Vec::new();
    while let Some(l) = lines.next() {
        let Some(n) = l.strip_prefix('*').and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        let words: Vec<&str> = (0..n).filter_map(|_| lines.nth(1)).collect();
        out.push(words.join(" "));
    }
    out
}

/// An old-style single AOF file that pushes, expires in the past, pushes
/// again: Redis keeps the key while loading (nothing expires then) and it
/// is gone once loaded.
#[test]
fn aof_loading_keeps_past_expiry_times_until_loaded() {
    let steps = |bin: &Path| {
        let dir = temp_dir("aof-expire-load");
        let mut aof = Vec::new();
        for args in [
            &["RPUSH", "list", "foo"][..],
            &["PEXPIREAT", "list", "1000"],
            &["RPUSH", "list", "bar"],
            &["SET", "s", "v"],
            &["PEXPIREAT", "s", "1000"],
            &["SET", "t", "v", "PXAT", "1000"],
            &["SET", "u", "v"],
        ] {
            aof.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
            for a in args {
                aof.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
            }
        }
        std::fs::write(dir.join("appendonly.aof"), aof).unwrap();
        let s = start(bin, &dir, &["--appendonly", "yes", "--save", ""]);
        let mut c = s.conn();
        ["LLEN list", "EXISTS s", "EXISTS t", "DBSIZE"]
            .iter()
            .map(|q| run(&mut c, &q.split(' ').collect::<Vec<_>>()))
            .collect::<Vec<_>>()
    };
    let ours = steps(&oxidis());
    assert_eq!(ours, steps(&real_redis::binary()));
    assert_eq!(ours, ["0", "0", "0", "1"]);
}

/// A dump whose checksum is wrong: the server shows its logo (with the
/// PID line Redis's test harness waits for) before loading, then logs the
/// CRC error report Redis logs for the same bytes, and exits.
#[test]
fn a_corrupt_dump_is_reported_after_the_logo_as_redis() {
    let dir = temp_dir("crc-src");
    let s = start(&oxidis(), &dir, &["--save", ""]);
    let mut c = s.conn();
    fill(&mut c, 3);
    run(&mut c, &["SAVE"]);
    let mut image = std::fs::read(dir.join("dump.rdb")).unwrap();
    let n = image.len();
    image[n - 8..].copy_from_slice(b"foobar00");
    let report = |bin: &Path| {
        let d = temp_dir("crc-load");
        std::fs::write(d.join("dump.rdb"), &image).unwrap();
        let log = d.join("server.log");
        let st = Command::new(bin)
            .args([
                "--port",
                &free_port().to_string(),
                "--dir",
                d.to_str().unwrap(),
            ])
            .args([
                "--logfile",
                log.to_str().unwrap(),
                "--always-show-logo",
                "yes",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .output()
            .unwrap();
        let text = std::fs::read_to_string(&log).unwrap() + &String::from_utf8_lossy(&st.stdout);
        let pid_at = text.find(" PID: ").expect("the logo's PID line");
        let crc_at = text.find("RDB CRC error").expect("the CRC error");
        assert!(pid_at < crc_at, "{text}");
        let lines: Vec<String> = text
            .lines()
            .filter(|l| l.contains("] RDB CRC error") || l.contains("[info]"))
            .map(|l| l.rsplit(['#', '*']).next().unwrap().trim().to_string())
            .collect();
        (st.status.code(), lines)
    };
    let ours = report(&oxidis());
    let redis = report(&real_redis::binary());
    assert_eq!(ours.0, redis.0);
    assert_eq!(ours.1, redis.1);
}

/// `rdb-key-save-delay` slows each key of a BGSAVE (1 s per key here):
/// the save is still running right after it started.
#[test]
fn rdb_key_save_delay_slows_bgsave_as_redis() {
    let (ours, redis) = both(&["--rdb-key-save-delay", "1000000"], |c, _| {
        fill(c, 3);
        let mut out = vec![run(c, &["BGSAVE"])];
        out.push(info_field(c, "rdb_bgsave_in_progress"));
        out.push(run(c, &["CONFIG", "GET", "rdb-key-save-delay"]));
        out
    });
    assert_eq!(ours, redis);
    assert_eq!(ours[1], "1");
}

/// While a script replayed by DEBUG LOADAOF runs past `lua-time-limit`,
/// other clients get LOADING (not BUSY), as in Redis.
#[test]
fn clients_get_loading_during_a_slow_aof_replay_as_redis() {
    let (ours, redis) = both(
        &[
            "--appendonly",
            "yes",
            "--lua-time-limit",
            "1",
            "--aof-use-rdb-preamble",
            "no",
        ],
        |c, srv| {
            // The incr file holds a script that outlives lua-time-limit.
            let incr = incr_aof_path(c);
            let script = "redis.call('set',KEYS[1],'y'); for i=1,3000000 do redis.call('ping') end return 'ok'";
            let mut aof = String::from("*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n");
            aof += &format!(
                "*4\r\n$4\r\nEVAL\r\n${}\r\n{script}\r\n$1\r\n1\r\n$1\r\nx\r\n",
                script.len()
            );
            std::fs::write(incr, aof).unwrap();
            let mut busy = srv.conn();
            // 3M calls in a debug build on a loaded machine outlast 20 s.
            busy.set_read_timeout(Some(Duration::from_secs(300)))
                .unwrap();
            let h = std::thread::spawn(move || run(&mut busy, &["DEBUG", "LOADAOF"]));
            let mut seen = String::new();
            while !h.is_finished() {
                let r = run(c, &["PING"]);
                if r.starts_with('-') {
                    seen = r;
                    break;
                }
            }
            let done = h.join().unwrap();
            vec![seen, done, run(c, &["GET", "x"])]
        },
    );
    assert_eq!(ours, redis);
    assert!(ours[0].starts_with("-LOADING"), "{ours:?}");
}

/// A BGSAVE child reports its progress and copy-on-write size to the
/// parent (INFO persistence `current_*`, then `rdb_last_cow_size`), as
/// Redis's child does through its info pipe.
#[test]
fn bgsave_child_reports_progress_and_cow_as_redis() {
    let (ours, redis) = both(&["--rdb-key-save-delay", "1000"], |c, _| {
        fill(c, 3000);
        let mut out = vec![run(c, &["BGSAVE"])];
        let mut progressed = false;
        for _ in 0..1500 {
            let keys: u64 = info_field(c, "current_save_keys_processed")
                .parse()
                .unwrap();
            let perc: f64 = info_field(c, "current_fork_perc").parse().unwrap();
            if keys > 0 && perc > 0.0 && keys <= 3000 {
                progressed = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        out.push(progressed.to_string());
        // Writes while the child runs copy pages.
        fill(c, 3000);
        out.push(wait_bgsave(c, 1));
        let cow: u64 = info_field(c, "rdb_last_cow_size").parse().unwrap();
        out.push((cow > 0).to_string());
        for f in [
            "current_cow_size",
            "current_save_keys_processed",
            "current_save_keys_total",
        ] {
            out.push(info_field(c, f));
        }
        out
    });
    assert_eq!(ours, redis);
    assert_eq!(ours[1], "true");
}

/// Connects to a server that may still be loading: waits only until it
/// answers INFO (PING gets LOADING then).
fn connect_loading(srv: &Srv) -> redis::Connection {
    for _ in 0..1000 {
        if let Ok(mut c) = redis::Client::open(srv.url()).and_then(|c| c.get_connection()) {
            if redis::cmd("INFO").query::<String>(&mut c).is_ok() {
                c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                return c;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("server did not answer");
}

/// While the dataset loads at start-up (slowed by `key-load-delay`), the
/// server accepts clients: commands without the `loading` flag get
/// `-LOADING`, INFO reports `loading:1` and the progress fields, clients
/// that leave are freed, and a SHUTDOWN stops it without saving (the dump
/// it was loading is intact afterwards), as in Redis.
#[test]
fn clients_are_served_during_a_slow_startup_load_as_redis() {
    let steps = |bin: &Path| {
        let dir = temp_dir("startup-load");
        let base = ["--enable-debug-command", "yes", "--rdbcompression", "no"];
        let mut s = start(bin, &dir, &[&base[..], &["--save", ""]].concat());
        let mut c = s.conn();
        run(&mut c, &["DEBUG", "POPULATE", "2000", "key", "1000"]);
        run(&mut c, &["SAVE"]);
        run(&mut c, &["SHUTDOWN", "NOSAVE"]);
        s.wait_exit();
        let size = std::fs::metadata(dir.join("dump.rdb")).unwrap().len();
        // 100 ms a key: the load outlasts these steps by minutes.
        let slow = [
            "--key-load-delay",
            "100000",
            "--loading-process-events-interval-bytes",
            "1024",
            "--save",
            "3600 1",
        ];
        let port = free_port();
        let name = bin.file_name().unwrap().to_string_lossy().to_string();
        let child = Command::new(bin)
            .args(["--port", &port.to_string(), "--dir", dir.to_str().unwrap()])
            .args([
                "--logfile",
                dir.join(format!("{name}.log")).to_str().unwrap(),
            ])
            .args(base)
            .args(slow)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut s = Srv { child, port };
        let mut c = connect_loading(&s);
        let mut out = vec![
            run(&mut c, &["PING"]),
            run(&mut c, &["GET", "key:1"]),
            run(&mut c, &["DBSIZE"]),
            run(&mut c, &["SELECT", "1"]),
            run(&mut c, &["DEBUG", "LOG", "hello"]),
            run(&mut c, &["CONFIG", "GET", "key-load-delay"]),
        ];
        let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
        out.push(field_of(&info, "loading"));
        let names: Vec<&str> = info
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, _)| k)
            .filter(|k| k.starts_with("loading"))
            .collect();
        out.push(names.join(","));
        out.push((field_of(&info, "loading_total_bytes") == size.to_string()).to_string());
        let used_mem: u64 = field_of(&info, "loading_rdb_used_mem").parse().unwrap();
        out.push((used_mem > 0).to_string());
        let loaded: u64 = field_of(&info, "loading_loaded_bytes").parse().unwrap();
        out.push((loaded > 0 && loaded < size).to_string());
        // Clients that come and go during the load are freed.
        let others: Vec<_> = (0..4).map(|_| connect_loading(&s)).collect();
        out.push((info_clients(&mut c) >= 5).to_string());
        drop(others);
        let mut freed = false;
        for _ in 0..500 {
            if info_clients(&mut c) == 1 {
                freed = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        out.push(freed.to_string());
        out.push(field_of(
            &redis::cmd("INFO")
                .arg("persistence")
                .query::<String>(&mut c)
                .unwrap(),
            "loading",
        ));
        // With a save point set, SHUTDOWN would save: not while loading.
        let _ = run(&mut c, &["SHUTDOWN"]);
        out.push(format!("{:?}", s.wait_exit()));
        let s = start(bin, &dir, &[&base[..], &["--save", ""]].concat());
        out.push(dbsize(&mut s.conn()).to_string());
        out
    };
    let ours = steps(&oxidis());
    let redis = steps(&real_redis::binary());
    assert_eq!(ours, redis);
    assert_eq!(ours[0], "-LOADING Redis is loading the dataset in memory");
    assert_eq!(ours.last().unwrap(), "2000");
}

fn info_clients(c: &mut redis::Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("clients").query(c).unwrap();
    field_of(&info, "connected_clients").parse().unwrap()
}

/// While a BGSAVE child runs, reads leave the LFU counter alone (Redis's
/// `lookupKey` skips the access update with a child active, so reads do
/// not copy pages on write); after it ends they count again.
#[test]
fn reads_during_bgsave_do_not_touch_the_access_counters_as_redis() {
    let (ours, redis) = both(
        &[
            "--maxmemory-policy",
            "allkeys-lfu",
            "--rdb-key-save-delay",
            "1000000",
        ],
        |c, _| {
            run(c, &["SET", "k", "v"]);
            let mut out = vec![run(c, &["OBJECT", "FREQ", "k"])];
            out.push(run(c, &["BGSAVE"]));
            for _ in 0..3 {
                run(c, &["GET", "k"]);
            }
            out.push(run(c, &["OBJECT", "FREQ", "k"]));
            out.push(info_field(c, "rdb_bgsave_in_progress"));
            // A FLUSHALL stops the child; once it is reaped, reads count again.
            run(c, &["FLUSHALL"]);
            for _ in 0..500 {
                if info_field(c, "rdb_bgsave_in_progress") == "0" {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            run(c, &["SET", "k", "v"]);
            run(c, &["GET", "k"]);
            out.push(run(c, &["OBJECT", "FREQ", "k"]));
            out
        },
    );
    assert_eq!(ours, redis);
    assert_eq!(ours[1..4], ["Background saving started", "5", "1"]);
    assert_ne!(ours[4], "5");
}

/// SIGTERM while the dataset loads at start-up: the server stops at once
/// without saving (the data is not all there), removes its pid file and
/// exits 0; the dump it was loading is untouched (Redis's `whileBlockedCron`).
#[test]
fn sigterm_during_a_startup_load_exits_without_saving_as_redis() {
    let steps = |bin: &Path| {
        let dir = temp_dir("sigterm-load");
        let base = ["--enable-debug-command", "yes", "--save", ""];
        let mut s = start(bin, &dir, &base);
        let mut c = s.conn();
        run(&mut c, &["DEBUG", "POPULATE", "2000", "key", "1000"]);
        run(&mut c, &["SAVE"]);
        run(&mut c, &["SHUTDOWN", "NOSAVE"]);
        s.wait_exit();
        let dump = dir.join("dump.rdb");
        let before = std::fs::read(&dump).unwrap();
        let pid = dir.join("srv.pid");
        let log = dir.join("load.log");
        let port = free_port();
        let child = Command::new(bin)
            .args(["--port", &port.to_string(), "--dir", dir.to_str().unwrap()])
            .args([
                "--logfile",
                log.to_str().unwrap(),
                "--pidfile",
                pid.to_str().unwrap(),
            ])
            // 100 ms a key, events every KiB, a save point that would save.
            .args([
                "--key-load-delay",
                "100000",
                "--loading-process-events-interval-bytes",
                "1024",
            ])
            .args(["--save", "3600 1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut s = Srv { child, port };
        drop(connect_loading(&s));
        let pid_file_while_loading = pid.exists();
        s.signal("-TERM");
        let code = s.wait_exit();
        let text = std::fs::read_to_string(&log).unwrap();
        let out = vec![
            format!("{code:?}"),
            pid_file_while_loading.to_string(),
            pid.exists().to_string(),
            text.contains("Received shutdown signal during loading, scheduling shutdown.")
                .to_string(),
            (std::fs::read(&dump).unwrap() == before).to_string(),
        ];
        let s = start(bin, &dir, &base);
        let mut out = out;
        out.push(dbsize(&mut s.conn()).to_string());
        out
    };
    let ours = steps(&oxidis());
    let redis = steps(&real_redis::binary());
    assert_eq!(ours, redis);
    assert_eq!(ours, ["Some(0)", "true", "false", "true", "true", "2000"]);
}

/// The dirty counter (`rdb_changes_since_last_save`) after each write, as
/// Redis counts it (it decides when a save point fires): by the elements a
/// command changed for ZADD, SADD, SREM, HSET (pairs given), HDEL, pushes,
/// pops with a count, LREM, LTRIM, ZREM*, BITFIELD, PFADD and geo stores;
/// once for a move; a collection emptied by its command adds nothing more.
#[test]
fn dirty_counter_counts_as_redis() {
    let steps = |bin: &Path| {
        let dir = temp_dir("dirty-count");
        let s = start(bin, &dir, &["--save", ""]);
        let mut c = s.conn();
        let lines = [
            "ZADD z 1 a 2 b 3 c",
            "ZADD z 5 a 6 b 7 q",
            "ZADD z XX 9 a 9 nope",
            "ZADD z INCR 1 a",
            "ZREM z a b zz",
            "ZREMRANGEBYSCORE z 0 6",
            "ZADD z 1 x 2 y 3 w",
            "ZPOPMIN z 2",
            "ZPOPMAX z 5",
            "ZADD zz 1 a 2 b 3 c",
            "ZMPOP 1 zz MIN COUNT 2",
            "BZMPOP 0 1 zz MAX COUNT 2",
            "SADD s a b c",
            "SADD s a d",
            "SREM s a b zz",
            "SMOVE s s3 c",
            "SMOVE s s3 d",
            "SADD s2 a b c d",
            "SPOP s2 2",
            "SPOP s2 5",
            "HSET h a 1 b 2",
            "HSET h a 3",
            "HMSET h c 1 d 2",
            "HDEL h a b zz",
            "HDEL h c d",
            "RPUSH l a b c d e c",
            "LPUSH l x y",
            "LPOP l 2",
            "RPOP l",
            "LREM l 0 c",
            "LMOVE l l3 LEFT RIGHT",
            "LMPOP 1 l LEFT COUNT 5",
            "RPUSH l2 1 2 3 4 5 6",
            "LTRIM l2 1 3",
            "LTRIM l2 0 -1",
            "LPUSHX l2 x y",
            "RPUSHX nokey x y",
            "LTRIM l2 5 1",
            "SETBIT b 7 1",
            "SETBIT b 7 1",
            "BITFIELD bf SET u8 0 1 SET u8 8 2 GET u8 0",
            "PFADD p a b c",
            "PFADD p a",
            "XADD x 1-1 f v",
            "XADD x 1-2 f v",
            "XDEL x 1-1 1-2 9-9",
            "GEOADD g 13.361389 38.115556 a 15.087269 37.502669 b 13.5 38.0 c",
            "GEOSEARCHSTORE d1 g FROMLONLAT 15 37 BYRADIUS 500 km",
            "GEORADIUS g 15 37 200 km STORE d2",
            "GEORADIUS g 15 37 200 km STOREDIST d3",
            "GEOSEARCHSTORE d1 g FROMLONLAT 0 0 BYRADIUS 1 km",
            "GEOSEARCHSTORE d9 nokey FROMLONLAT 0 0 BYRADIUS 1 km",
            "ZUNIONSTORE u 2 g d2",
        ];
        let mut out = Vec::new();
        for line in lines {
            let args: Vec<&str> = line.split(' ').collect();
            let reply = run(&mut c, &args);
            // SPOP's members are random: only the count is compared.
            out.push(match line.starts_with("SPOP") {
                true => line.to_string(),
                false => format!("{line} -> {reply}"),
            });
            out.push(info_field(&mut c, "rdb_changes_since_last_save"));
        }
        out
    };
    assert_eq!(steps(&oxidis()), steps(&real_redis::binary()));
}
