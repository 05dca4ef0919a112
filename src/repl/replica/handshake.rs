//! The handshake with the master (Redis's `syncWithMaster` and `slaveTryPartialResynchronization`): PING, AUTH, REPLCONF, PSYNC.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{link_of, Outcome, Position, State};
use crate::log;
use crate::server::Server;

/// Redis's `repl_syncio_timeout`: how long one handshake reply may take.
const SYNCIO_TIMEOUT: Duration = Duration::from_secs(5);

/// The socket to the master with what was read and not yet used.
pub(super) struct Conn {
    pub stream: TcpStream,
    pub buf: Vec<u8>,
}

impl Conn {
    pub fn new(stream: TcpStream) -> Conn {
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    /// Sends a command as a RESP multibulk.
    pub async fn send(&mut self, argv: &[&[u8]]) -> std::io::Result<()> {
        self.stream.write_all(&multibulk(argv)).await
    }

    /// Reads more bytes into `buf`; 0 when the master closed the link.
    pub async fn fill(&mut self) -> std::io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk).await?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// One line (without its `\r\n` or `\n`), waiting at most `limit` for it.
    pub async fn line(&mut self, limit: Duration) -> Result<Vec<u8>, String> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=nl).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            match tokio::time::timeout_at(deadline, self.fill()).await {
                Err(_) => return Err("Resource temporarily unavailable".into()),
                Ok(Err(e)) => return Err(crate::config::os_error(&e)),
                Ok(Ok(0)) => return Err("Connection reset by peer".into()),
                Ok(Ok(_)) => {}
            }
        }
    }
}

/// A command as a RESP multibulk.
pub(super) fn multibulk(argv: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", argv.len()).into_bytes();
    for a in argv {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// How the handshake ended.
pub(super) enum Sync {
    /// `+CONTINUE [id]`: the stream goes on from the cached position (under
    /// a new id when the master gives one).
    Continue(Option<String>),
    /// `+FULLRESYNC` (or SYNC after a master refused PSYNC): an RDB comes
    /// next, then the stream from `offset` (-1: unknown).
    Full { replid: String, offset: i64 },
    /// Stop here: the link task goes on as the outcome says.
    Stop(Outcome),
}

/// Reads one handshake reply, logging Redis's lines when there is none.
async fn reply(conn: &mut Conn) -> Option<String> {
    match conn.line(SYNCIO_TIMEOUT).await {
        Ok(l) => Some(String::from_utf8_lossy(&l).into_owned()),
        Err(e) => {
            log::warning(&format!("Failed to read response from the server: {e}"));
            None
        }
    }
}

fn no_response() -> Sync {
    log::warning("Master did not respond to command during SYNC handshake");
    Sync::Stop(Outcome::Later)
}

fn write_error(e: &std::io::Error) -> Sync {
    log::warning(&format!(
        "Sending command to master in replication handshake: {}",
        crate::config::os_error(e)
    ));
    Sync::Stop(Outcome::Later)
}

/// PING .. PSYNC reply (Redis's `syncWithMaster` up to the transfer).
pub(super) async fn run(srv: &Rc<RefCell<Server>>, generation: u64, conn: &mut Conn) -> Sync {
    if let Err(e) = conn.send(&[b"PING"]).await {
        return write_error(&e);
    }
    let Some(pong) = reply(conn).await else {
        return no_response();
    };
    if !pong.starts_with('+')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        log::warning(&format!("Error reply to PING from master: '{pong}'"));
        return Sync::Stop(Outcome::Later);
    }
    log::notice("Master replied to PING, replication can continue...");

    // What the handshake sends, read from the configuration now (a
    // CONFIG SET masterauth between two attempts takes effect).
    let (auth, port, ip, cached) = {
        let mut s = srv.borrow_mut();
        let cfg = &s.config;
        let bytes = |n: &str| {
            cfg.get_bytes(n)
                .filter(|v| !v.is_empty())
                .map(<[u8]>::to_vec)
        };
        let auth = bytes("masterauth").map(|pass| (bytes("masteruser"), pass));
        let announced = cfg.get_i64("replica-announce-port");
        let port = if announced != 0 {
            announced
        } else {
            cfg.port as i64
        };
        let ip = bytes("replica-announce-ip");
        let Some(link) = link_of(&mut s, generation) else {
            return Sync::Stop(Outcome::Gone);
        };
        (auth, port, ip, link.master.clone())
    };
    let mut batch = Vec::new();
    if let Some((user, pass)) = &auth {
        let mut argv: Vec<&[u8]> = vec![b"AUTH"];
        if let Some(u) = user {
            argv.push(u);
        }
        argv.push(pass);
        batch.extend(multibulk(&argv));
    }
    batch.extend(multibulk(&[
        b"REPLCONF",
        b"listening-port",
        port.to_string().as_bytes(),
    ]));
    if let Some(ip) = &ip {
        batch.extend(multibulk(&[b"REPLCONF", b"ip-address", ip]));
    }
    batch.extend(multibulk(&[
        b"REPLCONF",
        b"capa",
        b"eof",
        b"capa",
        b"psync2",
    ]));
    if let Err(e) = conn.stream.write_all(&batch).await {
        return write_error(&e);
    }
    if auth.is_some() {
        let Some(r) = reply(conn).await else {
            return no_response();
        };
        if r.starts_with('-') {
            log::warning(&format!("Unable to AUTH to MASTER: {r}"));
            return Sync::Stop(Outcome::Later);
        }
    }
    let mut optional = vec!["listening-port"];
    if ip.is_some() {
        optional.push("ip-address");
    }
    optional.push("capa");
    for what in optional {
        let Some(r) = reply(conn).await else {
            return no_response();
        };
        if r.starts_with('-') {
            log::notice(&format!(
                "(Non critical) Master does not understand REPLCONF {what}: {r}"
            ));
        }
    }
    psync(conn, cached).await
}

/// Sends PSYNC and reads its reply (Redis's `slaveTryPartialResynchronization`),
/// falling back to SYNC when the master does not take PSYNC.
async fn psync(conn: &mut Conn, cached: Option<Position>) -> Sync {
    let (id, offset) = match &cached {
        Some(p) => {
            let off = (p.reploff + 1).to_string();
            log::notice(&format!(
                "Trying a partial resynchronization (request {}:{off}).",
                p.replid
            ));
            (p.replid.clone(), off)
        }
        None => {
            log::notice("Partial resynchronization not possible (no cached master)");
            ("?".to_string(), "-1".to_string())
        }
    };
    if let Err(e) = conn
        .send(&[b"PSYNC", id.as_bytes(), offset.as_bytes()])
        .await
    {
        log::warning(&format!(
            "Unable to send PSYNC to master: {}",
            crate::config::os_error(&e)
        ));
        return write_error(&e);
    }
    let r = loop {
        match reply(conn).await {
            None => {
                log::warning("Master did not reply to PSYNC, will try later");
                return Sync::Stop(Outcome::Later);
            }
            // Newlines keep the link alive while the master prepares.
            Some(r) if r.is_empty() => continue,
            Some(r) => break r,
        }
    };
    if let Some(rest) = r.strip_prefix("+FULLRESYNC") {
        let mut w = rest.split(' ').filter(|w| !w.is_empty());
        return match (w.next(), w.next()) {
            (Some(id), Some(off)) if id.len() == 40 => {
                let offset = off.trim().parse::<i64>().unwrap_or(0);
                log::notice(&format!("Full resync from master: {id}:{offset}"));
                Sync::Full {
                    replid: id.to_string(),
                    offset,
                }
            }
            _ => {
                log::warning("Master replied with wrong +FULLRESYNC syntax.");
                Sync::Full {
                    replid: String::new(),
                    offset: -1,
                }
            }
        };
    }
    if r.starts_with("+CONTINUE") {
        log::notice("Successful partial resynchronization with master.");
        return Sync::Continue(continue_id(&r).map(str::to_string));
    }
    if r.starts_with("-NOMASTERLINK") || r.starts_with("-LOADING") {
        log::notice(&format!(
            "Master is currently unable to PSYNC but should be in the future: {r}"
        ));
        return Sync::Stop(Outcome::Later);
    }
    if r.starts_with("-ERR") {
        log::notice(&format!(
            "Master does not support PSYNC or is in error state (reply: {r})"
        ));
    } else {
        log::warning(&format!("Unexpected reply to PSYNC from master: {r}"));
    }
    log::notice("Retrying with SYNC...");
    if let Err(e) = conn.stream.write_all(b"SYNC\r\n").await {
        log::warning(&format!(
            "I/O error writing to MASTER: {}",
            crate::config::os_error(&e)
        ));
        return Sync::Stop(Outcome::Later);
    }
    Sync::Full {
        replid: String::new(),
        offset: -1,
    }
}

/// The new id a `+CONTINUE <id>` reply carries, if any (PSYNC2).
fn continue_id(reply: &str) -> Option<&str> {
    let id = reply.strip_prefix("+CONTINUE")?.trim();
    (id.len() == 40).then_some(id)
}

/// Sets the link's state if it is still this task's.
pub(super) fn set_state(srv: &Rc<RefCell<Server>>, generation: u64, state: State) -> bool {
    let mut s = srv.borrow_mut();
    match link_of(&mut s, generation) {
        Some(l) => {
            l.state = state;
            true
        }
        None => false,
    }
}
