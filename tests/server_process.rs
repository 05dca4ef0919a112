//! The real `oxidis-server` binary as a process: start-up line, pidfile,
//! logfile, unix socket permissions, SIGTERM and SHUTDOWN, config file + flag
//! precedence, fatal config errors, daemonize, maxclients, timeout, CONFIG REWRITE.
//! Expected texts come from redis-server 7.0.15 started the same way.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_oxidis-server");

mod common;
use common::real_redis::{free_port, non_loopback_ip};

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("oxidis-proc-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A started server and the lines it logged up to "Ready to accept connections".
struct Proc {
    child: Child,
    log: Vec<String>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(args: &[&str]) -> Child {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn oxidis-server")
}

/// Starts the server and reads its stdout until the ready line.
fn start(args: &[&str]) -> Proc {
    let mut child = spawn(args);
    let out = child.stdout.take().unwrap();
    let mut log = Vec::new();
    let mut r = BufReader::new(out);
    for _ in 0..200 {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let done = line.contains("Ready to accept connections");
        log.push(line.trim_end().to_string());
        if done {
            break;
        }
    }
    // Keep draining stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = r.read_to_end(&mut sink);
    });
    Proc { child, log }
}

fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// Sends one command and returns the first reply line (enough for these tests).
fn call<S: Read + Write>(s: &mut S, args: &[&str]) -> String {
    s.write_all(&resp(args)).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while let Ok(1) = s.read(&mut byte) {
        buf.push(byte[0]);
        if buf.ends_with(b"\r\n") {
            break;
        }
    }
    let line = String::from_utf8_lossy(&buf).trim_end().to_string();
    if let Some(n) = line.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
        let mut body = vec![0u8; n + 2];
        s.read_exact(&mut body).unwrap();
        return String::from_utf8_lossy(&body[..n]).into_owned();
    }
    if let Some(n) = line.strip_prefix('*').and_then(|n| n.parse::<usize>().ok()) {
        let mut items = Vec::new();
        for _ in 0..n {
            items.push(read_bulk(s));
        }
        return items.join("\n");
    }
    line
}

fn read_bulk<S: Read>(s: &mut S) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n") {
        if s.read(&mut byte).unwrap_or(0) == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let n: usize = String::from_utf8_lossy(&head[1..head.len() - 2])
        .parse()
        .unwrap_or(0);
    let mut body = vec![0u8; n + 2];
    s.read_exact(&mut body).unwrap();
    String::from_utf8_lossy(&body[..n]).into_owned()
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn sigterm(p: &Child) {
    let ok = Command::new("kill")
        .args(["-TERM", &p.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

/// Waits for the process to exit (bounded) and returns its exit code.
fn wait_exit(p: &mut Child) -> Option<i32> {
    for _ in 0..500 {
        if let Some(st) = p.try_wait().unwrap() {
            return st.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn starts_serves_and_stops_on_sigterm() {
    let port = free_port();
    let dir = tmpdir("sigterm");
    let pid = dir.join("oxidis.pid");
    let mut p = start(&[
        "--port",
        &port.to_string(),
        "--save",
        "",
        "--pidfile",
        pid.to_str().unwrap(),
    ]);
    assert!(
        p.log
            .last()
            .unwrap()
            .ends_with("* Ready to accept connections"),
        "{:?}",
        p.log
    );
    let written = std::fs::read_to_string(&pid).unwrap();
    assert_eq!(written.trim(), p.child.id().to_string());
    let mut c = connect(port);
    assert_eq!(call(&mut c, &["PING"]), "+PONG");
    assert_eq!(
        call(&mut c, &["CONFIG", "GET", "port"]),
        format!("port\n{port}")
    );
    sigterm(&p.child);
    assert_eq!(wait_exit(&mut p.child), Some(0));
    assert!(!pid.exists(), "pidfile removed at shutdown");
}

/// SIGTERM while a script is busy, as redis-server 7.0.15 takes it: the
/// shutdown is scheduled, other clients still get BUSY, and once SCRIPT
/// KILL stops the script the server shuts down (issue 11).
#[test]
fn sigterm_during_a_busy_script_shuts_down_once_it_ends() {
    let port = free_port();
    let mut p = start(&[
        "--port",
        &port.to_string(),
        "--save",
        "",
        "--busy-reply-threshold",
        "10",
    ]);
    let mut runner = connect(port);
    runner
        .write_all(&resp(&["EVAL", "while true do end", "0"]))
        .unwrap();
    let mut other = connect(port);
    let busy =
        "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
    let mut seen = false;
    for _ in 0..400 {
        if call(&mut other, &["PING"]) == busy {
            seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(seen, "the script never became busy");
    sigterm(&p.child);
    assert_eq!(call(&mut other, &["PING"]), busy);
    assert_eq!(p.child.try_wait().unwrap(), None, "still serving");
    assert_eq!(call(&mut other, &["SCRIPT", "KILL"]), "+OK");
    assert_eq!(wait_exit(&mut p.child), Some(0));
}

#[test]
fn logfile_receives_the_log() {
    let port = free_port();
    let dir = tmpdir("logfile");
    let log = dir.join("oxidis.log");
    let mut child = spawn(&[
        "--port",
        &port.to_string(),
        "--logfile",
        log.to_str().unwrap(),
        "--loglevel",
        "verbose",
    ]);
    let mut ready = false;
    for _ in 0..500 {
        if std::fs::read_to_string(&log).is_ok_and(|t| t.contains("Ready to accept connections")) {
            ready = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(ready, "log file gets the ready line");
    let mut c = connect(port);
    assert_eq!(
        call(&mut c, &["CONFIG", "GET", "loglevel"]),
        "loglevel\nverbose"
    );
    assert_eq!(call(&mut c, &["SHUTDOWN", "NOSAVE"]), "");
    assert_eq!(wait_exit(&mut child), Some(0));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("Redis is now ready to exit, bye bye..."),
        "{text}"
    );
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(out.is_empty(), "nothing on stdout with a logfile: {out}");
}

#[test]
fn unix_socket_only_with_port_zero() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmpdir("unix");
    let sock = dir.join("oxidis.sock");
    let p = start(&[
        "--port",
        "0",
        "--unixsocket",
        sock.to_str().unwrap(),
        "--unixsocketperm",
        "700",
    ]);
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let mut c = UnixStream::connect(&sock).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(call(&mut c, &["PING"]), "+PONG");
    assert_eq!(
        call(&mut c, &["CONFIG", "GET", "unixsocketperm"]),
        "unixsocketperm\n700"
    );
    assert_eq!(call(&mut c, &["CONFIG", "GET", "port"]), "port\n0");
    let info = call(&mut c, &["CLIENT", "INFO"]);
    assert!(
        info.contains(&format!("addr={}:0 ", sock.display())),
        "{info}"
    );
    assert!(info.contains("flags=U "), "{info}");
    drop(p);
}

#[test]
fn config_file_then_flags() {
    let port = free_port();
    let other = free_port();
    let dir = tmpdir("conffile");
    let conf = dir.join("redis.conf");
    std::fs::write(
        &conf,
        format!(
            "# test config\nport {other}\nhz 20\nmaxmemory 10mb\ndatabases 4\nrequirepass secret\n"
        ),
    )
    .unwrap();
    let p = start(&[
        conf.to_str().unwrap(),
        "--port",
        &port.to_string(),
        "--maxmemory",
        "1mb",
    ]);
    let mut c = connect(port);
    assert!(call(&mut c, &["PING"]).starts_with("-NOAUTH"));
    assert_eq!(call(&mut c, &["AUTH", "secret"]), "+OK");
    assert_eq!(call(&mut c, &["CONFIG", "GET", "hz"]), "hz\n20");
    assert_eq!(
        call(&mut c, &["CONFIG", "GET", "maxmemory"]),
        "maxmemory\n1048576"
    );
    assert_eq!(call(&mut c, &["SELECT", "3"]), "+OK");
    assert_eq!(
        call(&mut c, &["SELECT", "4"]),
        "-ERR DB index is out of range"
    );
    let info = call(&mut c, &["INFO", "server"]);
    let canon = std::fs::canonicalize(&conf).unwrap();
    assert!(info.contains(&format!("config_file:{}\r\n", canon.display())));
    // CONFIG REWRITE keeps the comment and rewrites the changed values in place.
    assert_eq!(call(&mut c, &["CONFIG", "SET", "hz", "30"]), "+OK");
    assert_eq!(call(&mut c, &["CONFIG", "REWRITE"]), "+OK");
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(text.starts_with(&format!("# test config\nport {port}\nhz 30\nmaxmemory 1mb\ndatabases 4\nrequirepass \"secret\"\n")), "{text}");
    drop(p);
}

/// `activedefrag yes` at start: the same fatal error and exit as Redis
/// built without its patched jemalloc (Debian's, the reference).
#[test]
fn activedefrag_is_refused_at_start_as_redis() {
    let run = |bin: &std::path::Path| {
        let out = Command::new(bin)
            .args(["--port", "0", "--activedefrag", "yes"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    let want = run(&common::real_redis::binary());
    assert!(want.1.contains("Active defragmentation cannot be enabled"));
    assert_eq!(run(std::path::Path::new(BIN)), want);
}

#[test]
fn bad_config_is_fatal() {
    // redis-server 7.0.15 --port 0 --databases zzz
    let out = Command::new(BIN)
        .args(["--port", "0", "--databases", "zzz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err,
        "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nReading the configuration file, at line 3\n>>> 'databases \"zzz\"'\nargument couldn't be parsed into an integer\n"
    );
    // redis-server --port 0 --foo bar
    let out = Command::new(BIN)
        .args(["--port", "0", "--foo", "bar"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains(">>> 'foo \"bar\"'\nBad directive or wrong number of arguments"));
    // redis-server --port 0 --maxmemory 1 2
    let out = Command::new(BIN)
        .args(["--port", "0", "--maxmemory", "1", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains(">>> 'maxmemory \"1\" \"2\"'\nwrong number of arguments"));
    // redis-server /nonexist
    let out = Command::new(BIN)
        .arg("/nonexist/redis.conf")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let all =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        all.contains(
            "Fatal error, can't open config file '/nonexist/redis.conf': No such file or directory"
        ),
        "{all}"
    );
    // redis-server --port 0 --save 1
    let out = Command::new(BIN)
        .args(["--port", "0", "--save", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(">>> 'save \"1\"'\nInvalid save parameters")
    );
}

#[test]
fn maxclients_and_timeout() {
    let port = free_port();
    let _p = start(&[
        "--port",
        &port.to_string(),
        "--maxclients",
        "1",
        "--timeout",
        "1",
    ]);
    let mut a = connect(port);
    assert_eq!(call(&mut a, &["PING"]), "+PONG");
    let mut b = connect(port);
    assert_eq!(
        call(&mut b, &["PING"]),
        "-ERR max number of clients reached"
    );
    // The idle client is closed by `timeout` (wait for EOF, bounded by the read timeout).
    let mut buf = [0u8; 1];
    assert_eq!(a.read(&mut buf).unwrap_or(0), 0);
}

#[test]
fn daemonize_detaches_and_writes_pidfile() {
    let port = free_port();
    let dir = tmpdir("daemon");
    let pid = dir.join("d.pid");
    let log = dir.join("d.log");
    let status = Command::new(BIN)
        .args([
            "--port",
            &port.to_string(),
            "--daemonize",
            "yes",
            "--pidfile",
            pid.to_str().unwrap(),
            "--logfile",
            log.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let mut c = None;
    for _ in 0..500 {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            c = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut c = c.expect("daemon listens");
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(
        call(&mut c, &["CONFIG", "GET", "daemonize"]),
        "daemonize\nyes"
    );
    assert!(std::fs::read_to_string(&pid)
        .unwrap()
        .trim()
        .parse::<u32>()
        .is_ok());
    assert_eq!(call(&mut c, &["SHUTDOWN", "NOSAVE"]), "");
    for _ in 0..500 {
        if !pid.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!pid.exists());
}

#[test]
fn protected_mode_refuses_non_loopback_clients() {
    let Some(ip) = non_loopback_ip() else {
        eprintln!("no non-loopback address on this machine; nothing to check");
        return;
    };
    let port = free_port();
    let _p = start(&["--port", &port.to_string()]);
    let mut c = TcpStream::connect((ip, port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut text = String::new();
    let _ = c.read_to_string(&mut text);
    // redis-server 7.0.15 sends this on connect and closes.
    assert!(text.starts_with("-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user."), "{text}");
    assert!(text.ends_with("4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"));
    // Loopback is always served; `protected-mode no` serves everyone.
    let mut l = connect(port);
    assert_eq!(
        call(&mut l, &["CONFIG", "SET", "protected-mode", "no"]),
        "+OK"
    );
    let mut c = TcpStream::connect((ip, port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(call(&mut c, &["PING"]), "+PONG");
}

/// Redis's test harness starts the server with `always-show-logo yes` and
/// waits for ` PID: <pid>` in its log (tests/support/server.tcl,
/// `wait_server_started`); without the logo it logs `Running mode=...`.
#[test]
fn logo_shows_port_and_pid_for_test_harnesses() {
    let port = free_port();
    let p = start(&["--port", &port.to_string(), "--always-show-logo", "yes"]);
    let pid = p.child.id();
    let text = p.log.join("\n");
    assert!(text.contains(&format!(" PID: {pid}")), "{text}");
    assert!(text.contains(&format!(" Port: {port}")), "{text}");
    assert!(!text.contains("does not act on it"), "{text}");

    let port = free_port();
    let p = start(&["--port", &port.to_string()]);
    let text = p.log.join("\n");
    assert!(
        text.contains(&format!("Running mode=standalone, port={port}.")),
        "{text}"
    );
    assert!(!text.contains(" PID: "), "{text}");
}

/// The server process's `/proc/<pid>/oom_score_adj`.
fn oom_score(p: &Proc) -> i64 {
    let path = format!("/proc/{}/oom_score_adj", p.child.id());
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn set_oom_score(p: &Proc, v: i64) {
    std::fs::write(
        format!("/proc/{}/oom_score_adj", p.child.id()),
        format!("{v}\n"),
    )
    .unwrap();
}

// The suite's unit/oom-score-adj steps that need no replica or child process
// (scores as redis-server 7.0.15 writes them, read from /proc the same way):
// relative to the score found when enabled, absolute, restored on `no`, and
// untouched while disabled. Raising the score needs no privilege.
#[test]
fn oom_score_adj_follows_config() {
    let port = free_port();
    let ps = port.to_string();
    let p = start(&["--port", &ps, "--save", ""]);
    let mut s = connect(port);
    set_oom_score(&p, 22);
    // (CONFIG SET arguments, score afterwards); None sets the score by hand.
    let steps: &[(Option<&[&str]>, i64)] = &[
        (
            Some(&["oom-score-adj-values", "9 9 9", "oom-score-adj", "yes"]),
            31,
        ),
        (Some(&["oom-score-adj-values", "15 20 30"]), 37),
        (Some(&["oom-score-adj", "absolute"]), 15),
        (Some(&["oom-score-adj", "no"]), 22),
        (None, 24),
        (Some(&["oom-score-adj-values", "23 23 23"]), 24),
        (
            Some(&[
                "oom-score-adj-values",
                "990 990 990",
                "oom-score-adj",
                "relative",
            ]),
            1000,
        ),
    ];
    for (set, score) in steps {
        match set {
            Some(pairs) => {
                let mut args = vec!["config", "set"];
                args.extend_from_slice(pairs);
                assert_eq!(call(&mut s, &args), "+OK", "{pairs:?}");
            }
            None => set_oom_score(&p, *score),
        }
        assert_eq!(oom_score(&p), *score, "{set:?}");
    }
}

/// The port the server said it bound, from its ephemeral-port log line.
fn logged_port(p: &Proc) -> u16 {
    let prefix = "The server is now ready to accept connections on port ";
    let line = p
        .log
        .iter()
        .find_map(|l| l.split_once(prefix).map(|(_, n)| n.to_string()))
        .unwrap_or_else(|| panic!("no port line in {:?}", p.log));
    line.parse().unwrap()
}

/// `--port 0` without a unix socket: redis-server 7.0.15 exits ("Configured
/// to not listen anywhere, exiting."); Oxidis binds a port the OS picks and
/// reports it in its log and in `port-file` (issue 17). With a unix socket
/// it listens on no TCP port, as Redis (`unix_socket_only_with_port_zero`).
#[test]
fn port_zero_binds_an_ephemeral_port_and_reports_it() {
    let dir = tmpdir("port0");
    let file = dir.join("port");
    let mut p = start(&[
        "--port",
        "0",
        "--save",
        "",
        "--dir",
        dir.to_str().unwrap(),
        "--port-file",
        file.to_str().unwrap(),
    ]);
    let port = logged_port(&p);
    assert_ne!(port, 0);
    assert!(
        p.log
            .iter()
            .any(|l| l.ends_with(&format!("Running mode=standalone, port={port}."))),
        "{:?}",
        p.log
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{port}\n"));
    // Nothing but the port file itself is left in its directory.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("port")]);
    let mut c = connect(port);
    assert_eq!(call(&mut c, &["PING"]), "+PONG");
    assert_eq!(
        call(&mut c, &["CONFIG", "GET", "port"]),
        format!("port\n{port}")
    );
    assert!(call_info(&mut c).contains(&format!("\r\ntcp_port:{port}\r\n")));
    assert_eq!(
        call(&mut c, &["CONFIG", "GET", "port-file"]),
        format!("port-file\n{}", file.display())
    );
    // Shown when named, not for a pattern: CONFIG GET * stays Redis's list.
    assert!(!call(&mut c, &["CONFIG", "GET", "port*"]).contains("port-file"));
    assert_eq!(
        call(&mut c, &["CONFIG", "SET", "port-file", "x"]),
        "-ERR CONFIG SET failed (possibly related to argument 'port-file') - can't set immutable config"
    );
    sigterm(&p.child);
    assert_eq!(wait_exit(&mut p.child), Some(0));
    assert!(!file.exists(), "port file removed at shutdown");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two servers started with `--port 0` get two ports.
#[test]
fn port_zero_twice_gives_two_ports() {
    let a = start(&["--port", "0", "--save", ""]);
    let b = start(&["--port", "0", "--save", ""]);
    let (pa, pb) = (logged_port(&a), logged_port(&b));
    assert_ne!(pa, pb);
    for port in [pa, pb] {
        assert_eq!(call(&mut connect(port), &["PING"]), "+PONG");
    }
}

/// `port-file` with a configured port holds that port; with only a unix
/// socket (port 0) it holds 0, the TCP port there is none of.
#[test]
fn port_file_holds_a_configured_port() {
    let dir = tmpdir("portfile");
    let file = dir.join("p");
    let port = free_port();
    let p = start(&[
        "--port",
        &port.to_string(),
        "--save",
        "",
        "--port-file",
        file.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{port}\n"));
    assert!(!p.log.iter().any(|l| l.contains("connections on port")));
    drop(p);
    let sock = dir.join("s.sock");
    let p = start(&[
        "--port",
        "0",
        "--unixsocket",
        sock.to_str().unwrap(),
        "--save",
        "",
        "--port-file",
        file.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "0\n");
    assert!(!p.log.iter().any(|l| l.contains("connections on port")));
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}

/// INFO's text (a bulk reply of many lines).
fn call_info(c: &mut TcpStream) -> String {
    c.write_all(&resp(&["INFO", "server"])).unwrap();
    read_bulk(c)
}

/// What a server makes of command-line arguments that take several words,
/// none, or too many (unit/introspection "redis-server command line
/// arguments - error cases"): the exit code and the last line of its
/// output, with the log prefix cut. Every case binds no address (`--bind
/// ""`), so one that parses ends with "Configured to not listen anywhere".
fn arguments_outcome(bin: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(bin)
        .args(["--bind", ""])
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let last = text
        .lines()
        .rfind(|l| !l.is_empty() && !l.starts_with("Could not start"))
        .unwrap_or_default();
    // "pid:M date time # text": the text.
    let last = last.split_once(" # ").map_or(last, |(_, t)| t);
    (out.status.code(), last.to_string())
}

#[test]
fn multi_word_arguments_are_parsed_as_redis() {
    let cases: &[&[&str]] = &[
        &["--shutdown-on-sigint"],
        &["--shutdown-on-sigint", "now force", "--shutdown-on-sigterm"],
        &["--shutdown-on-sigint", "now", "force"],
        &["--notify-keyspace-events", "a", "b"],
        &["--notify-keyspace-events"],
        &["--save"],
        &["--save", "60", "10", "30"],
        &["--client-output-buffer-limit"],
        &["--client-output-buffer-limit", "normal", "0", "0", "0"],
        &["--latency-tracking-info-percentiles"],
        &["--oom-score-adj-values"],
        &["--replicaof"],
        &["--replicaof", "127.0.0.1", "abc"],
        &["--port", "6379", "6380"],
        &["--loglevel", "--bla"],
    ];
    for args in cases {
        let want = arguments_outcome(&common::real_redis::binary(), args);
        let got = arguments_outcome(std::path::Path::new(BIN), args);
        assert_eq!(got, want, "{args:?}");
    }
}
