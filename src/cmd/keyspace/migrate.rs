//! MIGRATE: keys sent to another server as RESTORE commands over a cached blocking connection, then deleted here.
//!
//! As in Redis, the transfer is synchronous: the data thread writes the
//! RESTOREs and waits for their replies (each step bounded by the
//! command's timeout), so no other client changes the keys meanwhile.
//! Connections are cached per `host:port` (at most 64, closed after 10
//! seconds unused by the cron) with the database last selected on them.
//! The cache belongs to the data thread: one per server.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::clock;
use crate::command::Args;
use crate::error::{CmdResult, Error};
use crate::persist::rdb;
use crate::server::Ctx;
use crate::types::number::parse_i64;

/// Redis's MIGRATE_SOCKET_CACHE_ITEMS and MIGRATE_SOCKET_CACHE_TTL (seconds).
const CACHE_ITEMS: usize = 64;
const CACHE_TTL: i64 = 10;
/// Redis's reply line buffer: longer replies are cut.
const LINE_MAX: usize = 1024;

struct Cached {
    conn: TcpStream,
    /// The database selected on this connection (-1: unknown).
    last_dbid: i64,
    last_use: i64,
}

thread_local! {
    static CACHE: RefCell<HashMap<Vec<u8>, Cached>> = RefCell::new(HashMap::new());
}

/// INFO `migrate_cached_sockets`.
pub fn cached_sockets() -> usize {
    CACHE.with(|c| c.borrow().len())
}

/// Closes the connections unused for more than 10 seconds (the cron's
/// `migrateCloseTimedoutSockets`).
pub fn close_timed_out() {
    let now = clock::real_now_us() / 1_000_000;
    CACHE.with(|c| c.borrow_mut().retain(|_, s| now - s.last_use <= CACHE_TTL));
}

/// MIGRATE's keys (Redis's `migrateGetKeys`): `key`, or those after KEYS.
pub fn migrate_keys(args: &Args) -> Vec<usize> {
    let mut i = 6;
    while i < args.len() {
        let a = args.at(i);
        if a.eq_ignore_ascii_case(b"keys") {
            if !args.at(3).is_empty() {
                return Vec::new();
            }
            return (i + 1..args.len()).collect();
        }
        // The password after AUTH (user and password after AUTH2) may be
        // the word KEYS (Redis's migrateGetKeys skips them).
        if a.eq_ignore_ascii_case(b"auth") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"auth2") {
            i += 2;
        }
        i += 1;
    }
    vec![3]
}

struct Options<'a> {
    copy: bool,
    replace: bool,
    auth: Option<(Option<&'a [u8]>, &'a [u8])>,
    first_key: usize,
}

fn parse_options<'a>(args: &Args<'a>) -> Result<Options<'a>, Error> {
    let mut o = Options {
        copy: false,
        replace: false,
        auth: None,
        first_key: 3,
    };
    let n = args.len();
    let mut j = 6;
    while j < n {
        let a = args.at(j);
        let more = n - 1 - j;
        if a.eq_ignore_ascii_case(b"copy") {
            o.copy = true;
        } else if a.eq_ignore_ascii_case(b"replace") {
            o.replace = true;
        } else if a.eq_ignore_ascii_case(b"auth") {
            if more < 1 {
                return Err(Error::Syntax);
            }
            o.auth = Some((None, args.at(j + 1)));
            j += 1;
        } else if a.eq_ignore_ascii_case(b"auth2") {
            if more < 2 {
                return Err(Error::Syntax);
            }
            o.auth = Some((Some(args.at(j + 1)), args.at(j + 2)));
            j += 2;
        } else if a.eq_ignore_ascii_case(b"keys") {
            if !args.at(3).is_empty() {
                return Err(Error::msg(
                    "When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            o.first_key = j + 1;
            break;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    Ok(o)
}

/// ```text
/// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
///     [AUTH password | AUTH2 username password] [KEYS key [key ...]]
/// ```
/// `OK` once the target acknowledged every key (deleted here unless COPY,
/// and propagated as DEL of the acknowledged keys); `NOKEY` when none of
/// the keys exists; `IOERR ...` on a connection failure or timeout; `ERR
/// Target instance replied with error: ...` when the target refused one.
pub fn migrate(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let o = parse_options(args)?;
    let mut timeout = parse_i64(args.at(5)).ok_or(Error::NotInteger)?;
    let dbid = parse_i64(args.at(4)).ok_or(Error::NotInteger)?;
    if timeout <= 0 {
        timeout = 1000;
    }
    let timeout = Duration::from_millis(timeout as u64);
    let num_keys = if o.first_key == 3 {
        1
    } else {
        args.len() - o.first_key
    };
    let keys: Vec<Vec<u8>> = (o.first_key..o.first_key + num_keys)
        .map(|i| args.at(i))
        .filter(|k| ctx.db().get(k).is_some())
        .map(|k| k.to_vec())
        .collect();
    if keys.is_empty() {
        ctx.out().simple("NOKEY");
        return Ok(());
    }
    let mut name = args.at(1).to_vec();
    name.push(b':');
    name.extend_from_slice(args.at(2));
    let mut may_retry = true;
    loop {
        let failed = match attempt(ctx, args, &o, &name, &keys, dbid, timeout) {
            Ok(r) => return r,
            Err(f) => f,
        };
        if !failed.closed {
            CACHE.with(|c| c.borrow_mut().remove(&name));
        }
        if !failed.timed_out && may_retry && failed.retry {
            may_retry = false;
            continue;
        }
        return Err(Error::coded(format!(
            "IOERR error or timeout {} to target instance",
            if failed.writing { "writing" } else { "reading" }
        )));
    }
}

/// A socket error during one attempt.
struct SocketErr {
    writing: bool,
    timed_out: bool,
    /// Nothing was acknowledged yet: trying once more is safe.
    retry: bool,
    /// The connection was already dropped from the cache.
    closed: bool,
}

impl SocketErr {
    fn new(writing: bool, e: &io::Error) -> SocketErr {
        SocketErr {
            writing,
            timed_out: matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            retry: true,
            closed: false,
        }
    }
}

/// One try (Redis's `try_again` label): Ok with the command's result
/// (`OK` written, or the error to answer), Err on a socket error.
fn attempt(
    ctx: &mut Ctx,
    args: &Args,
    o: &Options,
    name: &[u8],
    keys: &[Vec<u8>],
    dbid: i64,
    timeout: Duration,
) -> Result<CmdResult, SocketErr> {
    let (mut conn, last_dbid) = match get_socket(name, args.at(1), args.at(2), timeout) {
        Connected::Yes(conn, dbid) => (conn, dbid),
        Connected::No => {
            return Ok(Err(Error::coded(
                "IOERR error or timeout connecting to the client",
            )))
        }
        // Redis's blocking connect only waits for the socket to turn
        // writable, which a refused connection also does: the failure
        // shows when the RESTOREs are written.
        Connected::Failed(e) => return Err(SocketErr::new(true, &e)),
    };
    let mut cmd = Vec::new();
    if let Some((user, pass)) = o.auth {
        let mut argv: Vec<&[u8]> = vec![b"AUTH"];
        argv.extend(user);
        argv.push(pass);
        resp_command(&mut cmd, &argv);
    }
    let select = last_dbid != dbid;
    if select {
        resp_command(&mut cmd, &[b"SELECT", dbid.to_string().as_bytes()]);
    }
    // Keys that expired since the first lookup are skipped.
    let compress = ctx.srv.config.get("rdbcompression") == Some("yes");
    let now = clock::now_ms();
    // A cluster node's target may be importing the slot (Redis's migrateCommand).
    let restore: &[u8] = if ctx.srv.cluster.is_some() {
        b"RESTORE-ASKING"
    } else {
        b"RESTORE"
    };
    let mut sent: Vec<&[u8]> = Vec::new();
    let db = ctx.db();
    for key in keys {
        let ttl = match db.expire_at(key) {
            Some(at) if at - now < 0 => continue,
            Some(at) => (at - now).max(1),
            None => 0,
        };
        let Some(v) = db.peek(key) else { continue };
        let payload = rdb::dump_value(v, compress);
        let ttl = ttl.to_string();
        let mut argv: Vec<&[u8]> = vec![restore, key, ttl.as_bytes(), &payload];
        if o.replace {
            argv.push(b"REPLACE");
        }
        resp_command(&mut cmd, &argv);
        sent.push(key);
    }
    if let Err(e) = conn
        .set_write_timeout(Some(timeout))
        .and_then(|()| conn.write_all(&cmd))
    {
        return Err(SocketErr::new(true, &e));
    }
    let _ = conn.set_read_timeout(Some(timeout));
    let read_err = |e: io::Error| SocketErr::new(false, &e);
    let auth_reply = match o.auth {
        Some(_) => Some(read_line(&mut conn).map_err(read_err)?),
        None => None,
    };
    let select_reply = if select {
        Some(read_line(&mut conn).map_err(read_err)?)
    } else {
        None
    };
    let mut target_error: Option<Vec<u8>> = None;
    let mut socket_error: Option<io::Error> = None;
    let mut acked: Vec<&[u8]> = Vec::new();
    let mut read = 0;
    for key in &sent {
        let line = match read_line(&mut conn) {
            Ok(l) => l,
            Err(e) => {
                socket_error = Some(e);
                break;
            }
        };
        read += 1;
        let line = Some(line);
        let refused = [&auth_reply, &select_reply, &line]
            .into_iter()
            .flatten()
            .find(|l| l.first() == Some(&b'-'));
        match refused {
            // The first error is the one answered.
            Some(err) if target_error.is_none() => target_error = Some(err[1..].to_vec()),
            Some(_) => {}
            None if !o.copy => {
                ctx.delete_key(key);
                acked.push(key);
            }
            None => {}
        }
    }
    if let Some(e) = &socket_error {
        if target_error.is_none() && read == 0 {
            // Nothing was processed: Redis's retry path.
            return Err(SocketErr::new(false, e));
        }
    }
    if socket_error.is_some() {
        CACHE.with(|c| c.borrow_mut().remove(name));
    }
    if !acked.is_empty() {
        let mut del: Vec<&[u8]> = vec![b"DEL"];
        del.extend(acked);
        ctx.propagate_as(&del);
    }
    if let (None, Some(e)) = (&target_error, &socket_error) {
        let mut f = SocketErr::new(false, e);
        f.retry = false;
        f.closed = true;
        return Err(f);
    }
    CACHE.with(|c| {
        if let Some(cs) = c.borrow_mut().get_mut(name) {
            cs.last_dbid = if target_error.is_some() { -1 } else { dbid };
        }
    });
    if let Some(e) = target_error {
        return Ok(Err(Error::msg(format!(
            "Target instance replied with error: {}",
            String::from_utf8_lossy(&e)
        ))));
    }
    ctx.out().ok();
    Ok(Ok(()))
}

/// What [`get_socket`] got.
enum Connected {
    /// A connection, with the database last selected on it (-1: unknown).
    Yes(TcpStream, i64),
    /// The address did not resolve, or connecting timed out.
    No,
    /// Connecting failed otherwise (e.g. refused).
    Failed(io::Error),
}

/// The cached connection to `host:port`, or a new one (cached; when the
/// cache is full an arbitrary one is dropped first).
fn get_socket(name: &[u8], host: &[u8], port: &[u8], timeout: Duration) -> Connected {
    let now = clock::real_now_us() / 1_000_000;
    let cached = CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let cs = c.get_mut(name)?;
        cs.last_use = now;
        Some((cs.conn.try_clone().ok()?, cs.last_dbid))
    });
    if let Some((conn, dbid)) = cached {
        return Connected::Yes(conn, dbid);
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= CACHE_ITEMS {
            if let Some(k) = c.keys().next().cloned() {
                c.remove(&k);
            }
        }
    });
    let addr = std::str::from_utf8(host).ok().zip(
        std::str::from_utf8(port)
            .ok()
            .and_then(|p| p.parse::<u16>().ok()),
    );
    let Some(addr) = addr
        .and_then(|a| a.to_socket_addrs().ok())
        .and_then(|mut a| a.next())
    else {
        return Connected::No;
    };
    let conn = match TcpStream::connect_timeout(&addr, timeout) {
        Ok(c) => c,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ) =>
        {
            return Connected::No
        }
        Err(e) => return Connected::Failed(e),
    };
    let _ = conn.set_nodelay(true);
    let Ok(kept) = conn.try_clone() else {
        return Connected::No;
    };
    CACHE.with(|c| {
        c.borrow_mut().insert(
            name.to_vec(),
            Cached {
                conn: kept,
                last_dbid: -1,
                last_use: now,
            },
        )
    });
    Connected::Yes(conn, -1)
}

/// Appends `argv` as a RESP multibulk.
fn resp_command(out: &mut Vec<u8>, argv: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", argv.len()).as_bytes());
    for a in argv {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// One reply line without its CRLF (Redis's `connSyncReadLine`: byte by
/// byte, so nothing after the line is consumed); an empty line or the
/// connection's end is an error.
fn read_line(conn: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    loop {
        if conn.read(&mut b)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if b[0] == b'\n' {
            break;
        }
        if line.len() < LINE_MAX - 1 {
            line.push(b[0]);
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.is_empty() {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(line)
}
