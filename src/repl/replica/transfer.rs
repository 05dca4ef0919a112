//! The RDB of a full sync (Redis's `readSyncBulkPayload`): `$<len>` or `$EOF:<40-byte mark>`, to a temporary file then `dbfilename` (disk load), or to memory (diskless load), then loaded.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;
use std::time::Instant;

use super::handshake::Conn;
use super::task::repl_timeout;
use super::{ids, link_of, Outcome, Position, State};
use crate::log;
use crate::persist::rdb::{self, LoadOptions};
use crate::server::client::ClientCell;
use crate::server::Server;

/// The EOF mark's length (Redis's `CONFIG_RUN_ID_SIZE`).
const MARK_LEN: usize = 40;

/// Where the payload goes while it arrives.
enum Sink {
    /// Diskless load: kept in memory, loaded once whole.
    Memory(Vec<u8>),
    /// Disk load: `temp-<unixtime>.<pid>.rdb`, renamed to `dbfilename` once whole.
    File(std::fs::File, std::path::PathBuf),
}

impl Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Memory(v) => {
                v.extend_from_slice(b);
                Ok(())
            }
            Sink::File(f, _) => f.write_all(b),
        }
    }
}

/// Diskless load (Redis's `useDisklessLoad`): `swapdb`, or `on-empty-db`
/// with no keys.
fn diskless(srv: &Server) -> bool {
    match srv.config.get("repl-diskless-load") {
        Some("swapdb") => true,
        Some("on-empty-db") => srv.ks.dbs.iter().all(|d| d.is_empty()),
        _ => false,
    }
}

/// Receives and loads the RDB, then sets up the master client at
/// `offset` under `replid`. Err: what the link task does next.
pub(super) async fn run(
    srv: &Rc<RefCell<Server>>,
    generation: u64,
    conn: &mut Conn,
    replid: &str,
    offset: i64,
) -> Result<(Rc<ClientCell>, bool), Outcome> {
    let (timeout, disk_load) = {
        let s = &mut *srv.borrow_mut();
        let timeout = repl_timeout(s);
        let disk_load = !diskless(s);
        let l = link_of(s, generation).ok_or(Outcome::Gone)?;
        l.state = State::Transfer;
        l.transfer_size = -1;
        l.transfer_read = 0;
        l.transfer_last_io = Instant::now();
        (timeout, disk_load)
    };
    let to = if disk_load { "to disk" } else { "to parser" };
    // The bulk count; empty lines keep the link alive meanwhile.
    let header = loop {
        let line = conn.line(timeout).await.map_err(|e| {
            log::warning(&format!("I/O error reading bulk count from MASTER: {e}"));
            Outcome::Now
        })?;
        touch(srv, generation, 0)?;
        if !line.is_empty() {
            break String::from_utf8_lossy(&line).into_owned();
        }
    };
    if let Some(err) = header.strip_prefix('-') {
        log::warning(&format!("MASTER aborted replication with an error: {err}"));
        return Err(Outcome::Now);
    }
    let Some(count) = header.strip_prefix('$') else {
        log::warning(&format!("Bad protocol from MASTER, the first byte is not '$' (we received '{header}'), are you sure the host and port are right?"));
        return Err(Outcome::Now);
    };
    let mark: Option<Vec<u8>> = count
        .strip_prefix("EOF:")
        .filter(|m| m.len() >= MARK_LEN)
        .map(|m| m.as_bytes()[..MARK_LEN].to_vec());
    let size = match &mark {
        Some(_) => {
            log::notice(&format!(
                "MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF {to}"
            ));
            0
        }
        None => {
            let n = crate::types::number::parse_i64(count.as_bytes()).unwrap_or(0);
            log::notice(&format!(
                "MASTER <-> REPLICA sync: receiving {n} bytes from master {to}"
            ));
            n
        }
    };
    {
        let s = &mut *srv.borrow_mut();
        // Swapping in an RDB of our own history (same id), the old data is
        // served meanwhile (Redis's async loading); else loading from the
        // socket answers -LOADING from now on, as Redis's parser does.
        let same_history = ids::replid(s) == replid;
        let swapdb = s.config.get("repl-diskless-load") == Some("swapdb");
        let l = link_of(s, generation).ok_or(Outcome::Gone)?;
        l.transfer_size = size;
        if !disk_load && swapdb && same_history {
            l.async_loading = true;
        } else if !disk_load {
            crate::persist::loading::start(s, size.max(0) as u64);
        }
    }
    let mut sink = if disk_load {
        let dir = srv.borrow().config.path("");
        let name = format!(
            "temp-{}.{}.rdb",
            crate::clock::real_now_us() / 1_000_000,
            std::process::id()
        );
        let path = dir.join(name);
        match std::fs::File::create(&path) {
            Ok(f) => Sink::File(f, path),
            Err(e) => {
                log::warning(&format!(
                    "Opening the temp file needed for MASTER <-> REPLICA synchronization: {}",
                    crate::config::os_error(&e)
                ));
                return Err(Outcome::Later);
            }
        }
    } else {
        Sink::Memory(Vec::new())
    };
    if !disk_load {
        // Loading from the socket starts now, as Redis's parser does.
        load_logs(&srv.borrow(), true);
    }
    let received = receive(srv, generation, conn, &mut sink, size, mark.as_deref()).await;
    let s = &mut *srv.borrow_mut();
    let failed = match received {
        Err(o) => Some(o),
        Ok(()) if link_of(s, generation).is_none() => Some(Outcome::Gone),
        Ok(()) => None,
    };
    if let Some(o) = failed {
        match &sink {
            Sink::File(_, p) => {
                let _ = std::fs::remove_file(p);
            }
            Sink::Memory(_) => {
                // What Redis's loader logs when the socket ends mid-RDB.
                let read = link_of(s, generation).map_or(0, |l| l.transfer_read);
                log::warning("Short read or OOM loading DB. Unrecoverable error, aborting now.");
                log::warning(&format!("Internal error in RDB reading offset {read}, function at rdb.c:0 -> Unexpected EOF reading RDB file"));
                log::warning("Failed trying to load the MASTER synchronization DB from socket: Connection reset by peer");
                end_socket_load(s, generation)
            }
        }
        return Err(o);
    }
    let cell = load(s, generation, sink, conn, replid, offset).inspect_err(|_| {
        // Whatever failed, the load (begun with the transfer when diskless) ends.
        end_socket_load(s, generation);
    })?;
    // After an EOF-marked transfer the first ACK goes at once: it puts this
    // replica online on the master.
    Ok((cell, mark.is_some()))
}

/// Counts transfer I/O; Err(Gone) when the link is no longer this task's.
fn touch(srv: &Rc<RefCell<Server>>, generation: u64, n: usize) -> Result<(), Outcome> {
    let s = &mut *srv.borrow_mut();
    let l = link_of(s, generation).ok_or(Outcome::Gone)?;
    l.transfer_last_io = Instant::now();
    l.transfer_read += n as i64;
    Ok(())
}

/// The payload's bytes into `sink`: `size` of them, or up to the EOF mark.
async fn receive(
    srv: &Rc<RefCell<Server>>,
    generation: u64,
    conn: &mut Conn,
    sink: &mut Sink,
    size: i64,
    mark: Option<&[u8]>,
) -> Result<(), Outcome> {
    let timeout = repl_timeout(&srv.borrow());
    let mut left = size as usize;
    // The last MARK_LEN bytes received (with a mark), kept out of the sink
    // until more arrive.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        if conn.buf.is_empty() {
            match tokio::time::timeout(timeout, conn.fill()).await {
                Err(_) => {
                    log::warning("Timeout receiving bulk data from MASTER... If the problem persists try to set the 'repl-timeout' parameter in redis.conf to a larger value.");
                    return Err(Outcome::Now);
                }
                Ok(Err(e)) => {
                    log::warning(&format!(
                        "I/O error trying to sync with MASTER: {}",
                        crate::config::os_error(&e)
                    ));
                    return Err(Outcome::Now);
                }
                Ok(Ok(0)) => {
                    log::warning("I/O error trying to sync with MASTER: connection lost");
                    return Err(Outcome::Now);
                }
                Ok(Ok(_)) => {}
            }
        }
        let take = match mark {
            Some(_) => conn.buf.len(),
            None => left.min(conn.buf.len()),
        };
        let chunk: Vec<u8> = conn.buf.drain(..take).collect();
        touch(srv, generation, chunk.len())?;
        let written = match mark {
            None => {
                left -= chunk.len();
                sink.write(&chunk)
            }
            Some(m) => {
                tail.extend_from_slice(&chunk);
                // The mark may be followed by the stream in the same read
                // (a master that does not wait for the first ACK): what
                // follows it goes back to the connection's buffer.
                if let Some(at) = tail.windows(MARK_LEN).position(|w| w == m) {
                    conn.buf.splice(0..0, tail[at + MARK_LEN..].iter().copied());
                    return sink.write(&tail[..at]).map_err(|e| write_failed(&e));
                }
                // Bytes that cannot start the mark are the RDB's.
                let keep = tail.len().saturating_sub(MARK_LEN - 1);
                let out: Vec<u8> = tail.drain(..keep).collect();
                sink.write(&out)
            }
        };
        written.map_err(|e| write_failed(&e))?;
        if mark.is_none() && left == 0 {
            return Ok(());
        }
    }
}

/// Replaces the dataset with the received RDB (Redis's second half of
/// `readSyncBulkPayload`) and makes the master client.
fn load(
    s: &mut Server,
    generation: u64,
    sink: Sink,
    conn: &Conn,
    replid: &str,
    offset: i64,
) -> Result<Rc<ClientCell>, Outcome> {
    // The AOF restarts from a rewrite of the new dataset once loaded.
    if s.aof.state != crate::persist::aof::State::Off {
        crate::persist::aof::stop_append_only(s);
    }
    if s.persist.child.is(crate::persist::child::Kind::Rdb) {
        log::notice("Replica is about to load the RDB file received from the master, but there is a pending RDB child running. Killing process and removing its temp file to avoid any race");
        crate::persist::child::kill(s);
    }
    let from_socket = matches!(sink, Sink::Memory(_));
    let l = link_of(s, generation).ok_or(Outcome::Gone)?;
    if l.master.take().is_some() {
        log::notice("Discarding previously cached master state.");
    }
    ids::attach_to_new_master(s);
    crate::db::forget_replica_keys();
    if !from_socket {
        load_logs(s, false);
    }
    let data = match sink {
        Sink::Memory(v) => v,
        Sink::File(f, tmp) => {
            let synced = f.sync_all();
            drop(f);
            let path = crate::persist::snapshot::rdb_path(s);
            if let Err(e) = synced.and_then(|()| std::fs::rename(&tmp, &path)) {
                log::warning(&format!("Failed trying to rename the temp DB into {} in MASTER <-> REPLICA synchronization: {}", path.display(), crate::config::os_error(&e)));
                let _ = std::fs::remove_file(&tmp);
                return Err(Outcome::Now);
            }
            match std::fs::read(&path) {
                Ok(d) => d,
                Err(e) => {
                    log::warning(&format!(
                        "Failed trying to load the MASTER synchronization DB from disk: {}",
                        crate::config::os_error(&e)
                    ));
                    return Err(Outcome::Now);
                }
            }
        }
    };
    if !from_socket {
        crate::persist::loading::start(s, data.len() as u64);
    }
    let opts = LoadOptions {
        keep_expired: true,
        ..LoadOptions::default()
    };
    let loaded = rdb::load_dataset_with(s, &data, &opts);
    end_socket_load(s, generation);
    drop(data);
    if loaded.is_err() {
        log::warning(&format!(
            "Failed trying to load the MASTER synchronization DB from {}: Invalid argument",
            if from_socket { "socket" } else { "disk" }
        ));
        return Err(Outcome::Now);
    }
    s.ks.dirty += 1;
    // A new history: every database is selected again in what we propagate.
    s.prop.forget_selected();
    let cell = super::stream::create_master_client(s, &conn.stream, offset);
    ids::adopt(s, replid, offset);
    let l = link_of(s, generation).ok_or(Outcome::Gone)?;
    l.master = Some(Position {
        replid: replid.to_string(),
        reploff: offset,
        read_reploff: offset,
        db: 0,
    });
    l.master_client = Some(cell.state.borrow().id);
    l.state = State::Connected;
    l.down_since = 0;
    l.last_interaction = Instant::now();
    log::notice("MASTER <-> REPLICA sync: Finished with success");
    restart_aof_if_needed(s);
    Ok(cell)
}

/// `appendonly yes` with the AOF stopped (for the sync, or a promotion):
/// start it again, from a rewrite (Redis's `restartAOFAfterSYNC`).
pub(super) fn restart_aof_if_needed(s: &mut Server) {
    if s.config.get("appendonly") == Some("yes")
        && s.aof.state == crate::persist::aof::State::Off
        && crate::persist::aof::start_append_only(s, false).is_err()
    {
        log::warning("Failed enabling the AOF after successful master synchronization! Trying it again in one second.");
    }
}

/// The loading state a transfer started (or the final load) ends.
fn end_socket_load(s: &mut Server, generation: u64) {
    crate::persist::loading::stop(s);
    if let Some(l) = link_of(s, generation) {
        l.async_loading = false;
    }
}

/// The payload could not be written to its temporary file.
fn write_failed(e: &std::io::Error) -> Outcome {
    log::warning(&format!("Write error or short write writing to the DB dump file needed for MASTER <-> REPLICA synchronization: {}", crate::config::os_error(e)));
    Outcome::Now
}

/// Redis's lines as the load begins: the flush (none when swapping in
/// the new data) and the load itself.
fn load_logs(s: &Server, from_socket: bool) {
    let swapdb = from_socket && s.config.get("repl-diskless-load") == Some("swapdb");
    if !swapdb {
        log::notice("MASTER <-> REPLICA sync: Flushing old data");
    }
    log::notice("MASTER <-> REPLICA sync: Loading DB in memory");
}
