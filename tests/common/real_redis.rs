//! A real `redis-server` (Debian's 7.0.15, found on PATH) started by a test, killed on drop.
//!
//! Each instance gets a free loopback port and its own temporary directory
//! (`--dir`), with persistence off unless the caller's flags turn it on:
//! `--save "" --appendonly no`. Extra flags come after these, so they win.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A running redis-server.
pub struct RedisServer {
    child: Child,
    pub port: u16,
    /// The server's `--dir`; removed on drop.
    pub dir: PathBuf,
}

/// A fresh, empty directory under the system temp dir, unique to this process and call.
pub fn temp_dir(tag: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("oxidis-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// A local address other than loopback (the one routing would use), if the
/// machine has one (protected-mode tests connect from it).
pub fn non_loopback_ip() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// A loopback port that was free a moment ago, below the kernel's
/// ephemeral range (32768-60999 by default). A port from that range (what
/// binding port 0 gives) can be taken by any outgoing connection on the
/// machine before the server binds it: tests failed that way on a busy
/// machine. Calls in one process walk 20000..32000 from a place given by
/// the process id, each call a different port.
pub fn free_port() -> u16 {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    const LOW: usize = 20_000;
    const SPAN: usize = 12_000;
    let base = std::process::id() as usize % SPAN;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        // 7 and SPAN are coprime: the walk visits every port of the span.
        let port = (LOW + (base + n * 7) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// The redis-server binary: `REDIS_SERVER` if set, else `redis-server` on PATH.
pub fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("REDIS_SERVER") {
        return p.into();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for d in std::env::split_paths(&path) {
        let p = d.join("redis-server");
        if p.is_file() {
            return p;
        }
    }
    panic!("redis-server is not on PATH (CI installs Debian's redis-server; see .ci/run)");
}

impl RedisServer {
    /// Starts redis-server with default flags in a new temporary directory.
    pub fn start() -> RedisServer {
        Self::start_in(&temp_dir("redis"), &[])
    }

    /// Starts redis-server with `--dir dir` and extra flags (e.g.
    /// `&["--dbfilename", "x.rdb"]` to load a file placed in `dir`).
    /// Panics if it does not answer PING (see its log in `dir/redis.log`).
    pub fn start_in(dir: &Path, flags: &[&str]) -> RedisServer {
        match Self::try_start_in(dir, flags) {
            Ok(r) => r,
            Err(log) => panic!("redis-server did not start; its log:\n{log}"),
        }
    }

    /// Like [`RedisServer::start_in`], but a server that exits (e.g. it
    /// refused the RDB file it was given) is an `Err` with its log.
    pub fn try_start_in(dir: &Path, flags: &[&str]) -> Result<RedisServer, String> {
        for _ in 0..5 {
            let port = free_port();
            let port_s = port.to_string();
            let log = dir.join("redis.log");
            let _ = std::fs::remove_file(&log);
            let mut args: Vec<&str> = vec![
                "--port",
                &port_s,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                dir.to_str().expect("utf-8 temp dir"),
                "--logfile",
                "redis.log",
            ];
            args.extend_from_slice(flags);
            let child = Command::new(binary())
                .args(&args)
                .current_dir(dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            let mut srv = RedisServer {
                child,
                port,
                dir: dir.to_path_buf(),
            };
            match srv.wait_ready() {
                Ok(()) => return Ok(srv),
                Err(exited) => {
                    let text = std::fs::read_to_string(&log).unwrap_or_default();
                    // A port taken between our probe and its bind (or,
                    // for a cluster node, its bus port): try another. Not
                    // dropped: the drop would remove `dir`, which the next
                    // try (and the caller's files in it) still needs.
                    if exited && text.contains("Address already in use") {
                        let mut gone = std::mem::ManuallyDrop::new(srv);
                        let _ = gone.child.wait();
                        continue;
                    }
                    return Err(text);
                }
            }
        }
        Err("no free port after 5 tries".into())
    }

    /// Waits until PING answers (Ok) or the process exits (Err(true)).
    /// Loading a big file can take a while: waits up to a minute.
    fn wait_ready(&mut self) -> Result<(), bool> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Err(true);
            }
            if let Ok(mut c) = redis::Client::open(self.url()).and_then(|c| c.get_connection()) {
                let pong: redis::RedisResult<String> = redis::cmd("PING").query(&mut c);
                if pong.as_deref() == Ok("PONG") {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(false)
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A blocking `redis` crate connection.
    /// The server's process id (to stop and continue it with signals).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// A raw socket to the server.
    pub fn tcp(&self) -> TcpStream {
        TcpStream::connect(self.addr()).unwrap()
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    /// Runs SAVE and returns the bytes of the RDB file it wrote.
    pub fn save_rdb(&self) -> Vec<u8> {
        let mut c = self.conn();
        let _: () = redis::cmd("SAVE").query(&mut c).expect("SAVE");
        let name: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("dbfilename")
            .query(&mut c)
            .unwrap();
        std::fs::read(self.dir.join(&name[1])).expect("the saved RDB file")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts redis-server on an RDB image (written to a new temp dir as
/// `dump.rdb`): Ok with the server once it loaded it, Err with its log
/// when it refused the file.
pub fn load_rdb(image: &[u8], flags: &[&str]) -> Result<RedisServer, String> {
    let dir = temp_dir("redis-load");
    std::fs::write(dir.join("dump.rdb"), image).expect("write dump.rdb");
    let mut f = vec!["--dbfilename", "dump.rdb"];
    f.extend_from_slice(flags);
    let r = RedisServer::try_start_in(&dir, &f);
    if r.is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    r
}
