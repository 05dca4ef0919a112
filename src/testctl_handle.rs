//! Test controls from Rust: `Handle` methods that send OXIDIS commands (the server must run with `enable-test-controls yes`).
//!
//! Each call opens a connection to the server's first TCP address, sends one
//! command and reads its one-line reply, so a test needs no client crate
//! for the controls themselves.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use crate::Handle;

impl Handle {
    /// Sends `OXIDIS <args...>` and returns its one-line reply's text
    /// (`OK`, or the integer of CLOCK GET); an error reply is `Err` with
    /// its text. Multi-line replies (HELP, FAULT LIST, CHECKPOINT LIST)
    /// need a client.
    pub fn test_control(&self, args: &[&str]) -> std::io::Result<String> {
        let addr = self
            .tcp
            .first()
            .ok_or_else(|| std::io::Error::other("the server has no TCP address"))?;
        let mut s = TcpStream::connect(addr)?;
        let mut req = format!("*{}\r\n$6\r\nOXIDIS\r\n", args.len() + 1).into_bytes();
        for a in args {
            req.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
        s.write_all(&req)?;
        let mut line = String::new();
        BufReader::new(s).read_line(&mut line)?;
        let line = line.trim_end();
        match line.split_at_checked(1) {
            Some(("+" | ":", text)) => Ok(text.to_string()),
            Some(("-", text)) => Err(std::io::Error::other(text.to_string())),
            _ => Err(std::io::Error::other(format!("unexpected reply: {line}"))),
        }
    }

    /// `OXIDIS CLOCK ADVANCE <ms>`: due keys expire, blocked clients time out.
    pub fn advance_clock(&self, ms: u64) -> std::io::Result<()> {
        self.test_control(&["CLOCK", "ADVANCE", &ms.to_string()])
            .map(drop)
    }

    /// `OXIDIS CLOCK GET`: the server's time in unix milliseconds.
    pub fn clock_ms(&self) -> std::io::Result<i64> {
        let t = self.test_control(&["CLOCK", "GET"])?;
        t.parse().map_err(std::io::Error::other)
    }

    /// `OXIDIS CHECKPOINT SAVE <name>`.
    pub fn checkpoint_save(&self, name: &str) -> std::io::Result<()> {
        self.test_control(&["CHECKPOINT", "SAVE", name]).map(drop)
    }

    /// `OXIDIS CHECKPOINT RESTORE <name>`.
    pub fn checkpoint_restore(&self, name: &str) -> std::io::Result<()> {
        self.test_control(&["CHECKPOINT", "RESTORE", name])
            .map(drop)
    }
}
