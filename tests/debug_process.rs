//! DEBUG subcommands that end or replace the process (SEGFAULT, PANIC,
//! ASSERT, OOM, RESTART, CRASH-AND-RECOVER), each run on the oxidis-server
//! binary and on redis-server 7.0.15 started the same way: the log lines,
//! the way the process ends, what a client sees, what survives a restart.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::real_redis::{binary, free_port, temp_dir};

const OXIDIS: &str = env!("CARGO_BIN_EXE_oxidis-server");

/// A server process logging to `dir/log`, killed on drop.
struct Srv {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Srv {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts `bin` in a fresh directory with DEBUG enabled and `extra` flags
/// (a `redis.conf` there is passed first when `conf` is given).
fn start(bin: &Path, conf: Option<&str>, extra: &[&str]) -> Srv {
    let dir = temp_dir("debugproc");
    let port = free_port();
    let mut args: Vec<String> = Vec::new();
    if let Some(text) = conf {
        std::fs::write(dir.join("redis.conf"), text).unwrap();
        args.push(dir.join("redis.conf").to_string_lossy().into_owned());
    }
    let port_s = port.to_string();
    for a in [
        "--port",
        &port_s,
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--enable-debug-command",
        "yes",
        "--crash-memcheck-enabled",
        "no",
        "--logfile",
        "log",
    ] {
        args.push(a.to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let child = Command::new(bin)
        .args(&args)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server");
    let srv = Srv { child, port, dir };
    wait_up(&srv);
    srv
}

fn wait_up(srv: &Srv) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", srv.port)) {
            if call(&mut s, &["PING"]) == "+PONG" {
                return;
            }
        }
        assert!(Instant::now() < end, "server did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn connect(srv: &Srv) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Sends a command; returns its reply's first line, "" when the server
/// closed the connection instead.
fn call(s: &mut TcpStream, args: &[&str]) -> String {
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    if s.write_all(req.as_bytes()).is_err() {
        return String::new();
    }
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        match s.read(&mut b) {
            Ok(1) => line.push(b[0]),
            _ => return String::new(),
        }
    }
    let head = String::from_utf8_lossy(&line[..line.len() - 2]).into_owned();
    if let Some(n) = head.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
        let mut body = vec![0u8; n + 2];
        s.read_exact(&mut body).unwrap();
        return String::from_utf8_lossy(&body[..n]).into_owned();
    }
    head
}

/// One INFO field.
fn info_field(srv: &Srv, name: &str) -> String {
    let text = call(&mut connect(srv), &["INFO", "server"]);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_default()
        .to_string()
}

fn log(srv: &Srv) -> String {
    std::fs::read_to_string(srv.dir.join("log")).unwrap_or_default()
}

/// Waits for the process to end; its signal, or 1000 + exit code.
fn ended(srv: &mut Srv) -> i32 {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(st) = srv.child.try_wait().unwrap() {
            return st.signal().unwrap_or(1000 + st.code().unwrap_or(0));
        }
        assert!(Instant::now() < end, "server did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `DEBUG <sub>` on a server started with `extra`: the connection
/// closes with no reply; returns how the process ended and its log.
fn crash(bin: &Path, sub: &str, extra: &[&str]) -> (i32, String) {
    let mut srv = start(bin, None, extra);
    let mut c = connect(&srv);
    assert_eq!(call(&mut c, &["SET", "mykey", "v"]), "+OK");
    assert_eq!(
        call(&mut c, &["DEBUG", sub, "mykey"]),
        "",
        "{sub}: no reply"
    );
    let how = ended(&mut srv);
    (how, log(&srv))
}

fn both() -> [PathBuf; 2] {
    [binary(), PathBuf::from(OXIDIS)]
}

/// Texts every crash report holds, with crash-log-enabled (Redis's default).
const REPORT: &[&str] = &[
    "\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===\n",
    "\n------ STACK TRACE ------\n",
    "\n------ INFO OUTPUT ------\n",
    "\n------ CLIENT LIST OUTPUT ------\n",
    "\n------ CURRENT CLIENT INFO ------\n",
    "argv[0]: '\"DEBUG\"'\n",
    "argv[2]: '\"mykey\"'\n",
    "\n------ MODULES INFO OUTPUT ------\n",
    "\n------ CONFIG DEBUG OUTPUT ------\n",
    "slave-read-only yes\n",
    "client-query-buffer-limit 1gb\n",
    "\n=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n\n       Please report the crash by opening an issue on github:\n\n           http://github.com/redis/redis/issues\n\n  If a Redis module was involved, please open in the module's repo instead.\n\n  Suspect RAM error? Use redis-server --test-memory to verify it.\n\n  Some other issues could be detected by redis-server --check-system\n",
];

/// Whether each text of `wanted` is in `log`, for comparing two servers.
fn has(log: &str, wanted: &[&str]) -> Vec<(String, bool)> {
    wanted
        .iter()
        .map(|w| (w.to_string(), log.contains(w)))
        .collect()
}

#[test]
fn segfault_panic_assert_oom_log_the_crash_report_and_die_as_redis() {
    let cases: &[(&str, &[&str])] = &[
        (
            "SEGFAULT",
            &["# Redis 7.0.15 crashed by signal: 11, si_code: 2\n", "# Accessing address: 0x"],
        ),
        (
            "PANIC",
            &[
                "# ------------------------------------------------\n",
                "# !!! Software Failure. Press left mouse button to continue\n",
                "# Guru Meditation: DEBUG PANIC called at Unix time ",
            ],
        ),
        (
            "ASSERT",
            &[
                "# === ASSERTION FAILED CLIENT CONTEXT ===\n",
                "# client->flags = 0\n",
                "# client->conn = fd=",
                "# client->argc = 3\n",
                "# client->argv[0] = \"DEBUG\" (refcount: 1)\n",
                "# client->argv[2] = \"mykey\" (refcount: 1)\n",
                "# === ASSERTION FAILED OBJECT CONTEXT ===\n",
                "# Object type: 0\n",
                "# Object encoding: 8\n",
                "# Object refcount: 1\n",
                "# === ASSERTION FAILED ===\n",
                "' is not true\n",
            ],
        ),
        (
            "OOM",
            &[
                "# Out Of Memory allocating 9223372036854775807 bytes!\n",
                "# Guru Meditation: Redis aborting for OUT OF MEMORY. Allocating 9223372036854775807 bytes! #",
            ],
        ),
    ];
    for (sub, own) in cases {
        let [redis, oxidis] = both().map(|bin| crash(&bin, sub, &[]));
        assert_eq!(oxidis.0, redis.0, "{sub}: how the process ended");
        let wanted: Vec<&str> = own.iter().chain(REPORT).copied().collect();
        assert_eq!(has(&oxidis.1, &wanted), has(&redis.1, &wanted), "{sub}");
        // Every text was picked from what redis-server writes.
        assert!(
            has(&redis.1, &wanted).iter().all(|w| w.1),
            "{sub}: {}",
            redis.1
        );
    }
}

#[test]
fn crash_log_disabled_and_exit_on_panic() {
    let wanted: Vec<&str> = ["# Guru Meditation: DEBUG PANIC called at Unix time "]
        .into_iter()
        .chain(REPORT.iter().copied())
        .collect();
    let off = ["--crash-log-enabled", "no"];
    let [redis, oxidis] = both().map(|bin| crash(&bin, "PANIC", &off));
    assert_eq!(oxidis.0, redis.0);
    assert_eq!(has(&oxidis.1, &wanted), has(&redis.1, &wanted));
    // The panic lines and the banners, nothing of the report between.
    let kept: Vec<bool> = has(&redis.1, &wanted).iter().map(|w| w.1).collect();
    assert_eq!(kept.iter().filter(|&&k| k).count(), 3, "{}", redis.1);
    // No SIGSEGV handler at all: no report, the plain signal.
    let [redis, oxidis] = both().map(|bin| crash(&bin, "SEGFAULT", &off));
    assert_eq!(oxidis.0, redis.0);
    assert_eq!(has(&oxidis.1, REPORT), has(&redis.1, REPORT));
    // use-exit-on-panic: exit code 1 instead of SIGABRT.
    let exit = ["--use-exit-on-panic", "yes"];
    let [redis, oxidis] = both().map(|bin| crash(&bin, "ASSERT", &exit));
    assert_eq!((oxidis.0, redis.0), (1001, 1001));
}

/// What a server shows across a restart: (pid kept, run id changed,
/// maxmemory after, key kept, the config file's maxmemory line, the log's
/// shutdown lines).
fn restart_outcome(bin: &Path, sub: &str) -> (bool, bool, String, String, bool, Vec<bool>) {
    let srv = start(bin, Some("port 6379\n"), &[]);
    let mut c = connect(&srv);
    assert_eq!(call(&mut c, &["SET", "a", "1"]), "+OK");
    assert_eq!(call(&mut c, &["CONFIG", "SET", "maxmemory", "10mb"]), "+OK");
    let (pid, run_id) = (info_field(&srv, "process_id"), info_field(&srv, "run_id"));
    assert_eq!(call(&mut c, &["DEBUG", sub]), "", "{sub}: no reply");
    wait_up(&srv);
    let mut c = connect(&srv);
    let maxmemory = call(&mut c, &["CONFIG", "GET", "maxmemory"]);
    let key = call(&mut c, &["GET", "a"]);
    let conf = std::fs::read_to_string(srv.dir.join("redis.conf")).unwrap();
    let log = log(&srv);
    let lines = [
        "# User requested shutdown...\n",
        " is now ready to exit, bye bye...\n",
    ]
    .map(|l| log.contains(l))
    .to_vec();
    (
        info_field(&srv, "process_id") == pid,
        info_field(&srv, "run_id") != run_id,
        maxmemory,
        key,
        conf.contains("\nmaxmemory 10mb\n"),
        lines,
    )
}

#[test]
fn restart_and_crash_and_recover_re_execute_the_binary() {
    for sub in ["RESTART", "CRASH-AND-RECOVER"] {
        let [redis, oxidis] = both().map(|bin| restart_outcome(&bin, sub));
        assert_eq!(oxidis, redis, "{sub}");
        assert!(redis.0 && redis.1, "{sub}: same pid, new run");
    }
}

#[test]
fn restart_fails_when_the_binary_is_gone() {
    for bin in both() {
        let copy = temp_dir("debugbin").join("server-copy");
        std::fs::copy(&bin, &copy).unwrap();
        let srv = start(&copy, None, &[]);
        std::fs::remove_file(&copy).unwrap();
        let mut c = connect(&srv);
        assert_eq!(
            call(&mut c, &["DEBUG", "RESTART"]),
            "-ERR failed to restart the server. Check server logs.",
            "{}",
            bin.display()
        );
        assert!(
            log(&srv).contains("# Can't restart: this process has no permissions to execute "),
            "{}",
            bin.display()
        );
        assert_eq!(call(&mut c, &["PING"]), "+PONG");
        let _ = std::fs::remove_dir_all(copy.parent().unwrap());
    }
}

/// Every `CONFIG GET *` pair, as one text per parameter.
fn all_config(srv: &Srv) -> Vec<String> {
    let mut s = connect(srv);
    s.write_all(b"*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$1\r\n*\r\n")
        .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    let n: usize = String::from_utf8_lossy(&head[1..head.len() - 2])
        .parse()
        .unwrap();
    let mut items = Vec::new();
    for _ in 0..n {
        let mut h = Vec::new();
        while !h.ends_with(b"\r\n") {
            s.read_exact(&mut b).unwrap();
            h.push(b[0]);
        }
        let len: usize = String::from_utf8_lossy(&h[1..h.len() - 2]).parse().unwrap();
        let mut body = vec![0u8; len + 2];
        s.read_exact(&mut body).unwrap();
        items.push(String::from_utf8_lossy(&body[..len]).into_owned());
    }
    let mut pairs: Vec<String> = items.chunks(2).map(|p| p.join(" ")).collect();
    pairs.sort();
    pairs
}

#[test]
fn config_rewrite_force_all_writes_defaults_and_restarts_the_same() {
    for bin in both() {
        let srv = start(&bin, Some("port 6379\n"), &[]);
        let before = all_config(&srv);
        let mut c = connect(&srv);
        assert_eq!(call(&mut c, &["DEBUG", "CONFIG-REWRITE-FORCE-ALL"]), "+OK");
        let conf = std::fs::read_to_string(srv.dir.join("redis.conf")).unwrap();
        // Parameters at their defaults are written too.
        // Strings Redis keeps as NULL when empty are not.
        for line in [
            "\nhz 10\n",
            "\nlist-compress-depth 0\n",
            "\ndatabases 16\n",
            "\nclient-output-buffer-limit replica 256mb 64mb 60\n",
            "\nnotify-keyspace-events \"\"\n",
        ] {
            assert!(
                conf.contains(line),
                "{}: {line:?} in\n{conf}",
                bin.display()
            );
        }
        for absent in ["\nrequirepass ", "\nunixsocket "] {
            assert!(
                !conf.contains(absent),
                "{}: {absent:?} in\n{conf}",
                bin.display()
            );
        }
        assert_eq!(call(&mut c, &["DEBUG", "RESTART"]), "");
        wait_up(&srv);
        assert_eq!(all_config(&srv), before, "{}", bin.display());
    }
}

#[test]
fn an_embedded_server_does_not_restart_its_host_program() {
    let h = common::start_with(&["--enable-debug-command", "yes"]);
    let mut c = common::conn(&h);
    for sub in ["RESTART", "CRASH-AND-RECOVER"] {
        let r: redis::RedisResult<String> = redis::cmd("DEBUG").arg(sub).query(&mut c);
        let e = r.unwrap_err();
        assert_eq!(
            e.detail(),
            Some("failed to restart the server. Check server logs.")
        );
    }
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
}
