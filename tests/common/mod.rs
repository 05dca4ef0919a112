//! Shared helpers for integration tests: an in-process server, clients, raw sockets.
#![allow(dead_code)]

pub mod case;
pub mod clients;
pub mod cluster;
pub mod cluster_node;
pub mod inproc;
pub mod process;
pub mod real_redis;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use oxidis::resp::value::{parse_value, Value};

/// Starts a server on an ephemeral loopback port with default settings.
pub fn start() -> oxidis::Handle {
    start_with(&[])
}

/// Starts a server with redis-server style flags, e.g. `&["--requirepass", "pw"]`.
pub fn start_with(flags: &[&str]) -> oxidis::Handle {
    // No save points (as Redis's own test servers and compat/record.py):
    // FLUSHALL and the cron would otherwise write dump.rdb into the
    // working directory. A test's own `--save` comes later and wins.
    // Its own directory too: `dir` defaults to the process's working
    // directory, which another test's `--dir` may have moved (a dump.rdb
    // one test saved was loaded by the next server started).
    let dir = real_redis::temp_dir("inproc");
    let mut args: Vec<String> = vec!["--port".into(), "0".into(), "--save".into(), "".into()];
    args.extend(["--dir".into(), dir.to_string_lossy().into_owned()]);
    args.extend(flags.iter().map(|s| s.to_string()));
    let config = oxidis::config::from_args(&args).expect("flags parse");
    oxidis::start(config).expect("server starts")
}

/// A `redis` crate client for the server (RESP2).
pub fn client(h: &oxidis::Handle) -> redis::Client {
    redis::Client::open(format!("redis://{}/", h.addr())).unwrap()
}

/// A blocking `redis` crate connection.
pub fn conn(h: &oxidis::Handle) -> redis::Connection {
    client(h).get_connection().unwrap()
}

/// A raw socket speaking bytes, for protocol-level tests.
pub struct Raw {
    pub s: TcpStream,
    pub buf: Vec<u8>,
}

impl Raw {
    pub fn connect(h: &oxidis::Handle) -> Raw {
        Raw::connect_to(h.addr())
    }

    /// To any server (a real redis-server's port, say).
    pub fn connect_to(addr: impl std::net::ToSocketAddrs) -> Raw {
        let s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        Raw { s, buf: Vec::new() }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    /// Sends a command as a multibulk request.
    pub fn cmd(&mut self, args: &[&[u8]]) {
        self.send(&encode(args));
    }

    /// Reads one complete reply and returns its raw bytes.
    pub fn read_raw(&mut self) -> Vec<u8> {
        self.try_read_raw(Duration::from_secs(10))
            .expect("a reply within 10 s")
    }

    /// Reads one reply, or None if none completes within `wait` (or the peer closed).
    pub fn try_read_raw(&mut self, wait: Duration) -> Option<Vec<u8>> {
        let deadline = Instant::now() + wait;
        loop {
            if let Ok(Some((_, n))) = parse_value(&self.buf) {
                return Some(self.buf.drain(..n).collect());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            self.s.set_read_timeout(Some(left)).unwrap();
            let mut chunk = [0u8; 65536];
            match self.s.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(_) => return None,
            }
        }
    }

    /// Whatever bytes arrive within `wait` (what is buffered first; empty
    /// when nothing came), without parsing them as replies.
    pub fn try_read_raw_bytes(&mut self, wait: Duration) -> Vec<u8> {
        if !self.buf.is_empty() {
            return std::mem::take(&mut self.buf);
        }
        self.s.set_read_timeout(Some(wait)).unwrap();
        let mut chunk = [0u8; 65536];
        match self.s.read(&mut chunk) {
            Ok(n) => chunk[..n].to_vec(),
            Err(_) => Vec::new(),
        }
    }

    pub fn read(&mut self) -> Value {
        let raw = self.read_raw();
        parse_value(&raw).unwrap().unwrap().0
    }

    /// True when the server closed the connection (read returns EOF) within `wait`.
    pub fn closed_within(&mut self, wait: Duration) -> bool {
        self.s.set_read_timeout(Some(wait)).unwrap();
        let mut b = [0u8; 1024];
        loop {
            match self.s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
            }
        }
    }
}

pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}
