//! Snapshots with the real binaries as processes, each in its own --dir:
//! SAVE/BGSAVE and restart, save points, SIGTERM and SHUTDOWN saving,
//! MISCONF after a failed BGSAVE, a kill -9 during BGSAVE, and a real
//! redis-server 7.0.15 loading what Oxidis saved. Where a reply or a field
//! is compared, the same steps run against redis-server in the same test.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::real_redis::{self, temp_dir};
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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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
fn run(c: &mut redis::Connection, args: &[&str]) -> String {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
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
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO"))
        .to_string()
}

/// Polls until no BGSAVE runs and `rdb_saves` reached `saves`; then the
/// last bgsave status.
fn wait_bgsave(c: &mut redis::Connection, saves: u64) -> String {
    for _ in 0..1500 {
        let done = info_field(c, "rdb_bgsave_in_progress") == "0"
            && info_field(c, "rdb_saves").parse::<u64>().unwrap() >= saves;
        if done {
            return info_field(c, "rdb_last_bgsave_status");
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
