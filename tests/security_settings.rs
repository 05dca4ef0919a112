//! Security settings beside redis-server 7.0.15 started the same way: the
//! fatal errors of `rename-command`, `loadmodule` and module options, a
//! config file's `rename-command`, protected mode and the `local` value of
//! `enable-module-command` / `enable-debug-command` for clients from
//! 127.0.0.1, 127.0.0.2 and (when the machine has one) a non-loopback
//! address. Expected values are what the real server does in each test.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::real_redis::{binary, free_port, non_loopback_ip, temp_dir};

const BIN: &str = env!("CARGO_BIN_EXE_oxidis-server");

/// How a start-up that must fail ended: exit status, stderr, and the log
/// lines (stdout) without their `pid:role date` prefix.
#[derive(Debug, PartialEq)]
struct Exit {
    status: Option<i32>,
    stderr: String,
    log: Vec<String>,
}

/// Runs `bin args` in `dir` until it exits (killed after 20 s: a server that
/// started instead of failing shows as status None).
fn run_to_exit(bin: &Path, dir: &Path, args: &[&str]) -> Exit {
    let mut child = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn server");
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut out = String::new();
    let mut err = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let log = out
        .lines()
        .filter_map(|l| l.split_once(" # ").map(|(_, msg)| msg.to_string()))
        .collect();
    Exit {
        status,
        stderr: err,
        log,
    }
}

/// Both servers with the same arguments; `keep` picks the log lines compared.
fn both_exit(args: &[&str], keep: fn(&str) -> bool) -> (Exit, Exit) {
    let dir = temp_dir("sec-exit");
    let mut runs = [binary(), BIN.into()].map(|b| {
        // A real port: with `--port 0` redis-server exits, not listening anywhere.
        let port = free_port().to_string();
        let mut full = vec!["--port", &port, "--bind", "127.0.0.1", "--save", ""];
        full.extend_from_slice(args);
        run_to_exit(&b, &dir, &full)
    });
    for r in &mut runs {
        r.log.retain(|l| keep(l));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let [redis, ours] = runs;
    (redis, ours)
}

#[test]
fn bad_rename_command_lines_are_fatal_as_in_redis() {
    let cases: &[&[&str]] = &[
        &["--rename-command", "nosuch", "x"],
        &["--rename-command", "get"],
        &["--rename-command", "get", "x", "y"],
        &["--rename-command", "get", "set"],
        &[
            "--rename-command",
            "get",
            "fetch",
            "--rename-command",
            "get",
            "x",
        ],
        &[
            "--rename-command",
            "GET",
            "fetch",
            "--rename-command",
            "Fetch",
            "get",
            "--rename-command",
            "nosuch",
            "y",
        ],
        &["--rename-command", "", "x"],
        &["--loadmodule"],
        &["--foo.bar"],
    ];
    for args in cases {
        let (redis, ours) = both_exit(args, |_| false);
        assert_eq!(redis.status, Some(1), "{args:?}: {redis:?}");
        assert!(
            redis.stderr.contains("FATAL CONFIG FILE ERROR"),
            "{args:?}: {redis:?}"
        );
        assert_eq!(ours, redis, "{args:?}");
    }
}

/// A `sentinel` line in a config file (`--sentinel` on the command line
/// would start Redis in sentinel mode): skipped alone, fatal with arguments.
#[test]
fn sentinel_lines_outside_sentinel_mode_as_in_redis() {
    let dir = temp_dir("sec-sentinel");
    let bare = dir.join("bare.conf");
    std::fs::write(&bare, "sentinel\n").unwrap();
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let (redis, ours) = both(bare.to_str(), &[]);
    for port in [redis.port, ours.port] {
        assert_eq!(talk(connect_from(lo, lo, port), &["PING"]), ["+PONG\r\n"]);
    }
    let conf = dir.join("s.conf");
    std::fs::write(&conf, "sentinel monitor a 1.2.3.4 6379 2\n").unwrap();
    let args = [conf.to_str().unwrap()];
    let [redis, ours] = [binary(), BIN.into()].map(|b| run_to_exit(&b, &dir, &args));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(redis.status, Some(1));
    assert!(redis.stderr.ends_with(">>> 'sentinel monitor a 1.2.3.4 6379 2'\nsentinel directive while not in sentinel mode\n"), "{redis:?}");
    assert_eq!((ours.status, ours.stderr), (redis.status, redis.stderr));
}

#[test]
fn loadmodule_and_module_options_abort_start_up_as_in_redis() {
    let dir = temp_dir("sec-mod");
    let noexec = dir.join("noexec.so");
    std::fs::write(&noexec, b"not a module").unwrap();
    let noexec = noexec.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["--loadmodule", "/nonexistent/oxidis-test.so", "a", "b"],
        &["--loadmodule", noexec],
        &[
            "--loadmodule",
            "/nonexistent/oxidis-test.so",
            "--foo.bar",
            "1",
        ],
        &["--foo.bar", "1"],
    ];
    for args in cases {
        let (redis, ours) = both_exit(args, |l| l.contains("odule"));
        assert_eq!(redis.status, Some(1), "{args:?}: {redis:?}");
        assert!(!redis.log.is_empty(), "{args:?}: {redis:?}");
        assert_eq!(ours, redis, "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A started server process, killed (and its directory removed) on drop.
struct Server {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts `bin` with `config` (a file, or nothing) then `flags`, in a new
/// directory, and waits until it accepts connections (not for PING: a
/// password may be set).
fn start(bin: &Path, config: Option<&str>, flags: &[&str]) -> Server {
    let dir = temp_dir("sec");
    let port = free_port();
    let port_s = port.to_string();
    let mut args: Vec<&str> = config.into_iter().collect();
    args.extend_from_slice(&["--port", &port_s, "--bind", "127.0.0.1", "--save", ""]);
    args.extend_from_slice(&["--dir", dir.to_str().unwrap(), "--logfile", "server.log"]);
    args.extend_from_slice(flags);
    let child = Command::new(bin)
        .args(&args)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server");
    let mut s = Server { child, port, dir };
    let end = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(s.child.try_wait().unwrap().is_none(), "{bin:?} exited");
        assert!(Instant::now() < end, "{bin:?} did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    s
}

/// redis-server and oxidis-server started with the same config file and flags.
fn both(config: Option<&str>, flags: &[&str]) -> (Server, Server) {
    (
        start(&binary(), config, flags),
        start(Path::new(BIN), config, flags),
    )
}

/// A connection to `port` on `dst` whose source address is `src`.
fn connect_from(src: IpAddr, dst: IpAddr, port: u16) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let s = rt.block_on(async {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind(SocketAddr::new(src, 0)).unwrap();
        sock.connect(SocketAddr::new(dst, port)).await.unwrap()
    });
    let s = s.into_std().unwrap();
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Sends inline commands one by one and returns each whole reply; a
/// connection the server closed reads as `closed` (and ends the list).
fn talk(mut s: TcpStream, cmds: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for c in cmds {
        let reply = s
            .write_all(format!("{c}\r\n").as_bytes())
            .ok()
            .and_then(|()| read_reply(&mut s));
        match reply {
            Some(r) => out.push(r),
            None => {
                out.push("closed".to_string());
                break;
            }
        }
    }
    out
}

/// One RESP2 reply, raw; None at EOF or on an error.
fn read_reply(s: &mut TcpStream) -> Option<String> {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        match s.read(&mut b) {
            Ok(1) => line.push(b[0]),
            _ => return None,
        }
    }
    let mut text = String::from_utf8_lossy(&line).into_owned();
    let n: i64 = text[1..text.len() - 2].parse().unwrap_or(-1);
    match line[0] {
        b'$' if n >= 0 => {
            let mut body = vec![0u8; n as usize + 2];
            s.read_exact(&mut body).ok()?;
            text.push_str(&String::from_utf8_lossy(&body));
        }
        b'*' => {
            for _ in 0..n.max(0) {
                text.push_str(&read_reply(s)?);
            }
        }
        _ => {}
    }
    Some(text)
}

/// (source, destination) pairs to connect from: 127.0.0.1, 127.0.0.2 (a
/// loopback address Redis does not count as local), and a non-loopback
/// address of this machine when there is one.
fn sources() -> Vec<(IpAddr, IpAddr)> {
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let mut v = vec![(lo, lo), ("127.0.0.2".parse().unwrap(), lo)];
    if let Some(ip) = non_loopback_ip() {
        v.push((ip, ip));
    }
    v
}

/// The INFO stats fields protected mode moves.
fn conn_stats(port: u16) -> Vec<String> {
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let info = talk(connect_from(lo, lo, port), &["INFO stats"]).join("");
    info.lines()
        .filter(|l| {
            l.starts_with("total_connections_received:") || l.starts_with("rejected_connections:")
        })
        .map(String::from)
        .collect()
}

#[test]
fn protected_mode_as_redis_decides() {
    let all = "--bind";
    let variants: &[&[&str]] = &[
        // The default: protected, no password (the bind given or Redis's
        // default: which one changes nothing in 7.0.15).
        &[all, "0.0.0.0"],
        &[all, "* -::*", "--protected-mode", "yes"],
        &[all, "0.0.0.0", "--requirepass", "pw"],
        &[all, "0.0.0.0", "--protected-mode", "no"],
        // A default user given a password by a `user` line.
        &[
            all, "0.0.0.0", "--user", "default", "on", ">pw", "~*", "&*", "+@all",
        ],
        // `local` lets only 127.0.0.1 (and unix sockets) in.
        &[
            all,
            "0.0.0.0",
            "--protected-mode",
            "no",
            "--enable-module-command",
            "local",
            "--enable-debug-command",
            "local",
        ],
    ];
    let cmds = [
        "PING",
        "MODULE LOAD /nonexistent/oxidis-test.so",
        "DEBUG SLEEP 0",
        "CONFIG SET protected-mode yes",
        "PING",
    ];
    for flags in variants {
        let (redis, ours) = both(None, flags);
        for (src, dst) in sources() {
            let want = talk(connect_from(src, dst, redis.port), &cmds);
            let got = talk(connect_from(src, dst, ours.port), &cmds);
            assert_eq!(got, want, "{flags:?} from {src}");
            // What makes the comparison worth it: 127.0.0.2 is refused by
            // default, and is not local for `enable-module-command local`.
            if src.to_string() == "127.0.0.2" && flags.len() == 2 {
                assert!(want[0].starts_with("-DENIED Redis is running in protected mode"));
                assert_eq!(want[1], "closed");
            }
            if src.to_string() == "127.0.0.2" && flags.contains(&"local") {
                assert!(
                    want[1].starts_with("-ERR MODULE command not allowed"),
                    "{want:?}"
                );
            }
            // Put protected mode back as the flags had it.
            let reset = if flags.contains(&"no") { "no" } else { "yes" };
            let lo: IpAddr = "127.0.0.1".parse().unwrap();
            for port in [redis.port, ours.port] {
                let r = talk(
                    connect_from(lo, lo, port),
                    &["AUTH pw", &format!("CONFIG SET protected-mode {reset}")],
                );
                assert_eq!(r[1], "+OK\r\n", "{flags:?}");
            }
        }
        assert_eq!(conn_stats(ours.port), conn_stats(redis.port), "{flags:?}");
    }
}

#[test]
fn protected_mode_serves_unix_socket_clients() {
    let sock = temp_dir("sec-unix");
    let flags = [
        "--enable-module-command",
        "local",
        "--enable-debug-command",
        "local",
    ];
    let mut replies = Vec::new();
    for (i, bin) in [binary(), BIN.into()].iter().enumerate() {
        let path = sock.join(format!("{i}.sock"));
        let mut f = vec!["--unixsocket", path.to_str().unwrap()];
        f.extend_from_slice(&flags);
        let _srv = start(bin, None, &f);
        let mut u = std::os::unix::net::UnixStream::connect(&path).unwrap();
        u.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        u.write_all(b"PING\r\nMODULE UNLOAD x\r\nDEBUG SLEEP 0\r\n")
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        while got.iter().filter(|&&c| c == b'\n').count() < 3 {
            let n = u.read(&mut buf).unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
        replies.push(String::from_utf8_lossy(&got).into_owned());
    }
    let _ = std::fs::remove_dir_all(&sock);
    assert_eq!(
        replies[0],
        "+PONG\r\n-ERR Error unloading module: no such module with that name\r\n+OK\r\n"
    );
    assert_eq!(replies[1], replies[0]);
}

#[test]
fn rename_command_in_a_config_file_as_in_redis() {
    let dir = temp_dir("sec-conf");
    let conf = dir.join("redis.conf");
    std::fs::write(
        &conf,
        "# renames\nrename-command FLUSHALL \"\"\nrename-command get fetch\nrename-command config \"\"\n",
    )
    .unwrap();
    let cmds = [
        "SET k v",
        "FLUSHALL",
        "GET k",
        "FETCH k",
        "CONFIG GET maxmemory",
        "COMMAND INFO flushall",
        "COMMAND GETKEYS fetch k",
        "EVAL \"return redis.call('fetch','k')\" 0",
    ];
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let (redis, ours) = both(conf.to_str(), &["--rename-command", "set", "put"]);
    let want = talk(connect_from(lo, lo, redis.port), &cmds);
    let got = talk(connect_from(lo, lo, ours.port), &cmds);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        want[0],
        "-ERR unknown command 'SET', with args beginning with: 'k' 'v' \r\n"
    );
    assert_eq!(
        want[1],
        "-ERR unknown command 'FLUSHALL', with args beginning with: \r\n"
    );
    assert_eq!(got, want);
}

/// The log lines (mark and text, without pid and time) that mention modules.
fn module_log(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("server.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.splitn(6, ' ').nth(5).map(String::from))
        .filter(|l| l.contains("odule") || l.contains("loadex") || l.contains("CONFIG spec"))
        .collect()
}

#[test]
fn module_load_fails_and_logs_as_in_redis() {
    let files = temp_dir("sec-modfiles");
    let noexec = files.join("noexec.so");
    std::fs::write(&noexec, b"not a module").unwrap();
    let noexec = noexec.to_str().unwrap();
    let missing = "MODULE LOAD /nonexistent/oxidis-test.so a b";
    let cmds = [
        missing,
        &format!("MODULE LOAD {noexec}"),
        "MODULE LOADEX /nonexistent/oxidis-test.so CONFIG a",
        "MODULE LOADEX /nonexistent/oxidis-test.so bad",
        "MODULE LOADEX /nonexistent/oxidis-test.so CONFIG a b ARGS x",
        "MODULE UNLOAD x",
        "MODULE LIST",
        "PING",
    ];
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let (redis, ours) = both(None, &["--enable-module-command", "yes"]);
    let want = talk(connect_from(lo, lo, redis.port), &cmds);
    let got = talk(connect_from(lo, lo, ours.port), &cmds);
    assert_eq!(got, want);
    let want_log = module_log(&redis.dir);
    assert_eq!(want_log.len(), 5, "{want_log:?}");
    assert_eq!(module_log(&ours.dir), want_log);
    let _ = std::fs::remove_dir_all(&files);
}

/// Redis's own protected-mode test (unit/networking) moves the bind to `*`
/// while the server listens on 127.0.0.1 at the same port: Redis closes
/// its listeners before it binds (a failed bind restores them).
#[test]
fn config_set_bind_rebinds_the_same_port_as_in_redis() {
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let (redis, ours) = both(None, &[]);
    let cmds = [
        "CONFIG SET bind *",
        "CONFIG GET bind",
        "CONFIG SET bind 0.0.0.0",
        "CONFIG SET bind \"127.0.0.1 -::1\"",
        "CONFIG SET bind 192.0.2.254",
        "CONFIG GET bind",
        "PING",
    ];
    let want = talk(connect_from(lo, lo, redis.port), &cmds);
    let got = talk(connect_from(lo, lo, ours.port), &cmds);
    assert_eq!(want[0], "+OK\r\n");
    assert_eq!(got, want);
    // Still listening on the restored addresses.
    for port in [redis.port, ours.port] {
        assert_eq!(talk(connect_from(lo, lo, port), &["PING"]), ["+PONG\r\n"]);
    }
    let log = std::fs::read_to_string(ours.dir.join("server.log")).unwrap();
    assert!(log.contains("# Failed applying new configuration. Possibly related to new bind setting. Restoring previous settings."), "{log}");
}
