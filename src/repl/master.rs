//! The master side: SYNC/PSYNC (partial from the backlog, or full with an RDB), feeding the replicas, their ACKs, and the replication cron.
//!
//! A full sync: the replica is answered `+FULLRESYNC <replid> <offset>`
//! when an RDB child forks (the offset is the stream's at the fork), and
//! the stream produced from then on waits in its `pending` buffer. The
//! child either writes the RDB file (`repl-diskless-sync no`, or a replica
//! without `capa eof`), which the replica then gets as `$<len>\r\n` and the
//! file, or streams it through a pipe that a task copies to the replicas'
//! sockets between `$EOF:<mark>` and the mark (diskless). Then the pending
//! stream follows and the replica is online. Replicas are ordinary client
//! connections: the bytes go to their reply buffers and their tasks write
//! them.

use super::backlog::Backlog;
use super::{Replica, ReplicaState};
use crate::db::ClientId;
use crate::log;
use crate::server::client::Client;
use crate::server::Server;

/// A SYNC or PSYNC from `client` (Redis's `syncCommand`). `psync` holds
/// the replid and offset a PSYNC asked for. Replies are written to the
/// client's reply buffer; errors are returned as `Err(text)`.
pub fn sync(
    srv: &mut Server,
    client: &mut Client,
    psync: Option<(&[u8], &[u8])>,
) -> Result<(), crate::error::Error> {
    use crate::error::Error;
    if srv.repl.is_replica(client.id) {
        return Ok(());
    }
    // A replica serves replicas of its own only while its link is up.
    if super::replica::link_down(srv) {
        return Err(Error::coded(
            "NOMASTERLINK Can't SYNC while not connected with my master",
        ));
    }
    if !client.reply.buf.is_empty() {
        return Err(Error::msg("SYNC and PSYNC are invalid with pending output"));
    }
    let announce = srv
        .repl
        .announced
        .iter()
        .position(|(c, _)| *c == client.id)
        .map(|i| srv.repl.announced.remove(i).1)
        .unwrap_or_default();
    let mut replica = Replica {
        id: client.id,
        state: ReplicaState::WaitBgsaveStart,
        announce,
        peer: client.addr.to_string(),
        pre_psync: psync.is_none(),
        initial_offset: 0,
        ack_offset: 0,
        ack_time: crate::clock::unix_now(),
        since: crate::clock::unix_now(),
        via_socket: false,
        held: None,
        acked_early: false,
        rdb_end: 0,
        obuf_soft_since: None,
        stalled: None,
    };
    let a = &replica.announce;
    if (a.exclude_data || a.exclude_functions) && !a.capa_eof {
        let a = replica.announce;
        srv.repl.announced.push((client.id, a));
        return Err(Error::msg("Filtered replica requires EOF capability"));
    }
    log::notice(&format!(
        "Replica {} asks for synchronization",
        replica.name()
    ));
    if let Some((replid, offset)) = psync {
        let Some(offset) = std::str::from_utf8(offset)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
        else {
            log::warning(&format!(
                "Replica {} asks for synchronization but with a wrong offset",
                replica.name()
            ));
            return Err(Error::NotInteger);
        };
        if try_partial(srv, client, &mut replica, replid, offset) {
            srv.repl.sync_partial_ok += 1;
            srv.repl.replicas.push(replica);
            return Ok(());
        }
        if replid.first() != Some(&b'?') {
            srv.repl.sync_partial_err += 1;
        }
    }
    srv.repl.sync_full += 1;
    let first = srv.repl.replicas.is_empty();
    srv.repl.replicas.push(replica);
    if first && srv.prop.backlog.is_none() {
        create_backlog(srv);
        log::notice(&format!(
            "Replication backlog created, my new replication IDs are '{}' and '{}'",
            srv.repl.replid, srv.repl.replid2
        ));
    }
    if srv.persist.child.active() {
        // A running BGSAVE serves this replica too when another replica is
        // already collecting the stream since its fork; otherwise the next
        // one (started by the cron once no child runs) will.
        let donor = srv
            .repl
            .replicas
            .iter()
            .find(|r| {
                matches!(r.state, ReplicaState::WaitBgsaveEnd { .. })
                    && !r.via_socket
                    && r.announce
                        .same_rdb(&srv.repl.replicas.last().expect("pushed").announce)
                    && !r.announce.rdb_only
            })
            .map(|r| (r.initial_offset, r.state_pending().to_vec()));
        match donor {
            Some((offset, pending))
                if srv.persist.child.is(crate::persist::child::Kind::Rdb)
                    && !srv.repl.socket_child =>
            {
                let replid = srv.repl.replid.clone();
                if let Some(r) = srv.repl.replica_mut(client.id) {
                    r.state = ReplicaState::WaitBgsaveEnd { pending };
                    r.initial_offset = offset;
                    if !r.pre_psync {
                        client
                            .reply
                            .raw(format!("+FULLRESYNC {replid} {offset}\r\n").as_bytes());
                    }
                }
                log::notice("Waiting for end of BGSAVE for SYNC");
            }
            _ if srv.repl.socket_child => log::notice(
                "Current BGSAVE has socket target. Waiting for next BGSAVE for SYNC",
            ),
            _ if srv.persist.child.is(crate::persist::child::Kind::Rdb) => log::notice(
                "Can't attach the replica to the current BGSAVE. Waiting for next BGSAVE for SYNC",
            ),
            _ => log::notice(
                "No BGSAVE in progress, but another BG operation is active. BGSAVE for replication delayed",
            ),
        }
        return Ok(());
    }
    let diskless = srv.config.get("repl-diskless-sync") == Some("yes");
    let eof = srv
        .repl
        .replica_mut(client.id)
        .is_some_and(|r| r.announce.capa_eof);
    if diskless && eof && srv.config.get_i64("repl-diskless-sync-delay") > 0 {
        // The cron starts it, once more replicas had a chance to come.
        log::notice("Delay next BGSAVE for diskless SYNC");
    } else {
        start_bgsave(srv, Some(client));
    }
    Ok(())
}

impl Replica {
    fn state_pending(&self) -> &[u8] {
        match &self.state {
            ReplicaState::WaitBgsaveEnd { pending } => pending,
            _ => &[],
        }
    }
}

/// A master restarted from an RDB saved with a replication history
/// (Redis's `loadDataFromDisk`): that history becomes its second id, valid
/// up to the saved offset, and an empty backlog continues from there, so its
/// replicas continue with PSYNC instead of a full sync.
///
/// A cluster replica (by its nodes.conf) takes the history as its own id
/// and offset instead, which it offers its master as a cached one once
/// the cluster makes it replicate (Redis's `replicationCacheMasterUsingMyself`
/// at load; in cluster mode the stream's database is always 0).
pub fn restore_history(srv: &mut Server, h: &crate::persist::rdb::ReplInfo) {
    if srv.cluster.is_some() && !crate::repl::replica::i_am_master(srv) {
        srv.repl.replid = h.id.clone();
        srv.prop.repl_offset = h.offset;
        return;
    }
    if srv.config.get("replicaof").is_some_and(|v| !v.is_empty()) {
        return;
    }
    srv.repl.replid2 = h.id.clone();
    srv.repl.second_replid_offset = h.offset + 1;
    srv.prop.repl_offset = h.offset;
    let size = srv.config.get_i64("repl-backlog-size").max(1) as usize;
    srv.prop.backlog = Some(Box::new(Backlog::new(size, h.offset)));
    srv.repl.no_replicas_since = crate::clock::unix_now();
    crate::db::log_expired(true);
}

/// The backlog, created with a new history (Redis's
/// `createReplicationBacklog` after `changeReplicationId`).
fn create_backlog(srv: &mut Server) {
    srv.repl.new_history(&mut srv.rng);
    let size = srv.config.get_i64("repl-backlog-size").max(1) as usize;
    srv.prop.backlog = Some(Box::new(Backlog::new(size, srv.prop.repl_offset)));
    // Keys expired from now on propagate as DELs.
    crate::db::log_expired(true);
}

/// A PSYNC continuing from the backlog (Redis's
/// `masterTryPartialResynchronization`): true when accepted, with
/// `+CONTINUE` and the missing bytes written.
fn try_partial(
    srv: &mut Server,
    client: &mut Client,
    replica: &mut Replica,
    replid: &[u8],
    offset: i64,
) -> bool {
    let repl = &srv.repl;
    let is = |id: &str| replid.eq_ignore_ascii_case(id.as_bytes());
    let replid_text = String::from_utf8_lossy(replid);
    if !is(&repl.replid) && (!is(&repl.replid2) || offset > repl.second_replid_offset) {
        if replid.first() != Some(&b'?') {
            if !is(&repl.replid) && !is(&repl.replid2) {
                log::notice(&format!(
                    "Partial resynchronization not accepted: Replication ID mismatch (Replica asked for '{replid_text}', my replication IDs are '{}' and '{}')",
                    repl.replid, repl.replid2
                ));
            } else {
                log::notice(&format!(
                    "Partial resynchronization not accepted: Requested offset for second ID was {offset}, but I can reply up to {}",
                    repl.second_replid_offset
                ));
            }
        } else {
            log::notice(&format!(
                "Full resync requested by replica {}",
                replica.name()
            ));
        }
        return false;
    }
    // The backlog already holds the stream not yet handed out: hand it to
    // the online replicas first, or this one would get it twice (from the
    // backlog now and from the next distribution).
    distribute(srv, Some(client));
    let Some(missing) = srv.prop.backlog.as_ref().and_then(|b| b.since(offset)) else {
        log::notice(&format!(
            "Unable to partial resync with replica {} for lack of backlog (Replica request was: {offset}).",
            replica.name()
        ));
        if offset > srv.prop.repl_offset {
            log::warning(&format!(
                "Warning: replica {} tried to PSYNC with an offset that is greater than the master replication offset.",
                replica.name()
            ));
        }
        return false;
    };
    if replica.announce.capa_psync2 {
        client
            .reply
            .raw(format!("+CONTINUE {}\r\n", srv.repl.replid).as_bytes());
    } else {
        client.reply.raw(b"+CONTINUE\r\n");
    }
    client.reply.raw(&missing);
    replica.state = ReplicaState::Online;
    replica.ack_time = crate::clock::unix_now();
    log::notice(&format!(
        "Partial resynchronization request from {} accepted. Sending {} bytes of backlog starting from offset {offset}.",
        replica.name(),
        missing.len()
    ));
    true
}

/// Forks the RDB child for the replicas waiting for one (Redis's
/// `startBgsaveForReplication`): streamed through a pipe to their sockets
/// (diskless) when `repl-diskless-sync` is on and all of them take an
/// EOF-marked transfer, else written to the RDB file. `current` is the
/// running client, when it is one of them.
fn start_bgsave(srv: &mut Server, mut current: Option<&mut Client>) {
    // One transfer serves the waiting replicas that want the same RDB as
    // the first; the others wait for the next.
    let Some(first) = srv
        .repl
        .replicas
        .iter()
        .find(|r| matches!(r.state, ReplicaState::WaitBgsaveStart))
        .map(|r| r.announce.clone())
    else {
        return;
    };
    let waiting: Vec<ClientId> = srv
        .repl
        .replicas
        .iter()
        .filter(|r| matches!(r.state, ReplicaState::WaitBgsaveStart))
        .filter(|r| r.announce.same_rdb(&first))
        .map(|r| r.id)
        .collect();
    // A filtered RDB always goes through the sockets (never to the file).
    let filtered = first.exclude_data || first.exclude_functions;
    let diskless = filtered
        || srv.config.get("repl-diskless-sync") == Some("yes")
            && srv
                .repl
                .replicas
                .iter()
                .filter(|r| waiting.contains(&r.id))
                .all(|r| r.announce.capa_eof);
    let started = if diskless {
        log::notice("Starting BGSAVE for SYNC with target: replicas sockets");
        start_socket_transfer(srv, waiting.clone(), first.save_options())
    } else {
        log::notice("Starting BGSAVE for SYNC with target: disk");
        crate::persist::snapshot::bgsave(srv).is_ok()
    };
    let offset = srv.prop.repl_offset;
    let replid = srv.repl.replid.clone();
    if !started {
        log::warning("BGSAVE for replication failed");
    }
    for id in waiting {
        let line = if started {
            let r = srv.repl.replica_mut(id).expect("listed above");
            r.state = ReplicaState::WaitBgsaveEnd {
                pending: Vec::new(),
            };
            r.initial_offset = offset;
            r.via_socket = diskless;
            (!r.pre_psync).then(|| format!("+FULLRESYNC {replid} {offset}\r\n"))
        } else {
            srv.repl.replicas.retain(|r| r.id != id);
            Some("-ERR BGSAVE failed, replication can't continue\r\n".to_string())
        };
        let close = !started;
        with_client(srv, current.as_deref_mut(), id, |c| {
            if let Some(l) = &line {
                c.reply.raw(l.as_bytes());
            }
            c.close_after_reply |= close;
        });
    }
    // The stream after the fork starts with a SELECT, as the replica's
    // database after loading is unknown to it.
    srv.prop.forget_selected();
}

/// Forks a child that writes `$EOF:<mark>\r\n`, the RDB and the mark into
/// a pipe, and a task that copies what comes out to the `targets`
/// (Redis's `rdbSaveToSlavesSockets`). False when pipe or fork failed.
fn start_socket_transfer(
    srv: &mut Server,
    targets: Vec<ClientId>,
    opts: crate::persist::rdb::SaveOptions,
) -> bool {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a valid array of two descriptors for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return false;
    }
    // SAFETY: pipe2 succeeded: both descriptors are open and owned here.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let mark = super::random_id(&mut srv.rng).into_bytes();
    let child_mark = mark.clone();
    let wfd = fds[1];
    let spawned = crate::persist::child::spawn_keeping(
        srv,
        crate::persist::child::Kind::Rdb,
        wfd,
        move |srv| {
            use std::io::Write;
            // SAFETY: the child owns its copy of the pipe's write end, kept
            // open by spawn_keeping; nothing else in the child uses it.
            let file = unsafe { std::fs::File::from_raw_fd(wfd) };
            let mut out = std::io::BufWriter::with_capacity(64 << 10, file);
            let written = (|| {
                out.write_all(b"$EOF:")?;
                out.write_all(&child_mark)?;
                out.write_all(b"\r\n")?;
                crate::persist::rdb::write_dataset_with(srv, &mut out, &opts)?;
                out.write_all(&child_mark)?;
                out.flush()
            })();
            written.map_err(|e| {
                log::warning(&format!("Diskless replication transfer failed: {e}"));
                crate::persist::Failed
            })
        },
    );
    drop(wr);
    match spawned {
        Ok(pid) => {
            log::notice(&format!("Background RDB transfer started by pid {pid}"));
            srv.repl.socket_child = true;
            spawn_pipe_reader(srv, rd, targets, mark);
            true
        }
        Err(e) => {
            log::warning(&format!(
                "Can't save in background: fork: {}",
                crate::config::os_error(&e)
            ));
            false
        }
    }
}

/// Copies the diskless child's output to the replicas it was forked for;
/// at its end (the child closed the pipe) they go online, or are dropped
/// when the transfer did not end with the mark (the child failed).
fn spawn_pipe_reader(
    srv: &Server,
    rd: std::os::fd::OwnedFd,
    targets: Vec<ClientId>,
    mark: Vec<u8>,
) {
    use tokio::io::AsyncReadExt;
    let Some(weak) = srv.self_ref.clone() else {
        return;
    };
    tokio::task::spawn_local(async move {
        let mut tail: Vec<u8> = Vec::with_capacity(2 * mark.len());
        if let Ok(mut rx) = tokio::net::unix::pipe::Receiver::from_owned_fd(rd) {
            let mut buf = vec![0u8; 64 << 10];
            loop {
                let n = match rx.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let chunk = &buf[..n];
                tail.extend_from_slice(chunk);
                if tail.len() > mark.len() {
                    tail.drain(..tail.len() - mark.len());
                }
                if let Some(srv) = weak.upgrade() {
                    let s = srv.borrow();
                    for &id in &targets {
                        push(&s, None, id, |c| c.reply.raw(chunk));
                    }
                } else {
                    return;
                }
                // The next chunk is read once every replica has taken this
                // one (Redis's rdbPipeWriteHandler): the slowest paces the
                // child, and the RDB does not pile up here. (No strong
                // reference to the server is held while it waits.)
                loop {
                    let Some(srv) = weak.upgrade() else {
                        return;
                    };
                    let (alive, busy) = pipe_targets(&srv.borrow(), &targets);
                    if alive == 0 {
                        log::warning(
                            "Diskless rdb transfer, last replica dropped, killing fork child.",
                        );
                        crate::persist::child::kill(&mut srv.borrow_mut());
                        return;
                    }
                    if !busy {
                        break;
                    }
                    drop(srv);
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
            }
        }
        let Some(srv) = weak.upgrade() else {
            return;
        };
        let mut s = srv.borrow_mut();
        let ok = tail == mark;
        if ok {
            let (alive, _) = pipe_targets(&s, &targets);
            log::warning(&format!(
                "Diskless rdb transfer, done reading from pipe, {alive} replicas still up."
            ));
        }
        for id in targets {
            if ok {
                put_online(&mut s, id);
            } else if let Some(i) = s.repl.replicas.iter().position(|r| r.id == id) {
                let r = s.repl.replicas.remove(i);
                log::warning(&format!(
                    "Diskless transfer to replica {} did not complete",
                    r.name()
                ));
                kill(&s, id);
            }
        }
    });
}

/// Replicas whose diskless transfer has not moved for `repl-timeout`
/// seconds while output waited for them (a replica that stopped reading
/// would otherwise hold the transfer, which it paces, for ever).
fn full_sync_stalled(srv: &mut Server, now: i64, timeout: i64) -> Vec<ClientId> {
    let mut out = Vec::new();
    for i in 0..srv.repl.replicas.len() {
        let r = &srv.repl.replicas[i];
        if !(r.via_socket && matches!(r.state, ReplicaState::WaitBgsaveEnd { .. })) {
            continue;
        }
        let seen = srv.clients.get(&r.id).and_then(|cell| {
            let c = cell.state.try_borrow().ok()?;
            let waiting = c.reply.buf.len() + c.out_inflight > 0;
            Some((c.net_out, waiting))
        });
        let r = &mut srv.repl.replicas[i];
        match (seen, r.stalled) {
            (Some((sent, true)), Some((was, since))) if sent == was => {
                if now - since > timeout {
                    log::warning(&format!(
                        "Disconnecting timedout replica (full sync): {}",
                        r.name()
                    ));
                    out.push(r.id);
                }
            }
            (Some((sent, true)), _) => r.stalled = Some((sent, now)),
            _ => r.stalled = None,
        }
    }
    out
}

/// How many of a diskless transfer's replicas are still there, and whether
/// one of them still has much of the RDB to take.
fn pipe_targets(srv: &Server, targets: &[ClientId]) -> (usize, bool) {
    const PACE: usize = 256 << 10;
    let mut alive = 0;
    let mut busy = false;
    for id in targets {
        let Some(cell) = srv.clients.get(id) else {
            continue;
        };
        if cell.kill.get() || srv.repl.replicas.iter().all(|r| r.id != *id) {
            continue;
        }
        alive += 1;
        if let Ok(c) = cell.state.try_borrow() {
            busy |= c.reply.buf.len() + c.out_inflight > PACE;
        }
    }
    (alive, busy)
}

/// A replica has its RDB: the stream that waited for it follows, and from
/// now on it gets the stream as it is produced.
fn put_online(srv: &mut Server, id: ClientId) {
    let Some(r) = srv.repl.replica_mut(id) else {
        return;
    };
    if r.announce.rdb_only {
        // It asked for the RDB alone: closed once it is written.
        log::notice(&format!(
            "RDB transfer completed, rdb only replica ({}) should be disconnected asap",
            r.name()
        ));
        srv.repl.replicas.retain(|r| r.id != id);
        with_client(srv, None, id, |c| c.close_after_reply = true);
        srv.wake(id);
        return;
    }
    let pending = match std::mem::replace(&mut r.state, ReplicaState::Online) {
        ReplicaState::WaitBgsaveEnd { pending } => pending,
        _ => Vec::new(),
    };
    // All its connection holds now is its RDB: the stream follows.
    if let Some(Ok(c)) = srv.clients.get(&id).map(|cell| cell.state.try_borrow()) {
        super::obuf::mark_rdb_end(r, &c);
    }
    r.ack_time = crate::clock::unix_now();
    let name = r.name();
    if r.via_socket && !r.acked_early {
        r.held = Some(pending);
        log::notice(&format!(
            "Streamed RDB transfer with replica {name} succeeded (socket). Waiting for REPLCONF ACK from replica to enable streaming"
        ));
        return;
    }
    push(srv, None, id, |c| c.reply.raw(&pending));
    log::notice(&format!("Synchronization with replica {name} succeeded"));
}

/// The diskless child ended (Redis's `backgroundSaveDoneHandlerSocket`):
/// the pipe's reader puts its replicas online; replicas that came meanwhile
/// start the next transfer.
pub fn socket_child_done(srv: &mut Server, exit: crate::persist::child::Exit) {
    srv.repl.socket_child = false;
    match exit {
        crate::persist::child::Exit::Ok => {
            log::notice("Background RDB transfer terminated with success")
        }
        crate::persist::child::Exit::Killed(sig) => {
            log::warning(&format!("Background transfer terminated by signal {sig}"))
        }
        crate::persist::child::Exit::Err(_) => log::warning("Background transfer error"),
    }
    start_pending(srv);
}

/// Starts a transfer for replicas waiting for one, once no child runs and
/// (diskless) `repl-diskless-sync-delay` has passed since the last came or
/// `repl-diskless-sync-max-replicas` are waiting (Redis's
/// `replicationStartPendingFork`).
fn start_pending(srv: &mut Server) {
    if srv.persist.child.active() {
        return;
    }
    // The RDB forked now holds the effects of the stream not yet handed
    // out: it goes to the online replicas only, not into what the new ones
    // gather after the fork.
    distribute(srv, None);
    let now = crate::clock::unix_now();
    let waiting: Vec<&Replica> = srv
        .repl
        .replicas
        .iter()
        .filter(|r| matches!(r.state, ReplicaState::WaitBgsaveStart))
        .collect();
    if waiting.is_empty() {
        return;
    }
    let diskless = srv.config.get("repl-diskless-sync") == Some("yes");
    let delay = srv.config.get_i64("repl-diskless-sync-delay");
    let max = srv.config.get_i64("repl-diskless-sync-max-replicas");
    let idle = waiting.iter().map(|r| now - r.since).max().unwrap_or(0);
    if !diskless || (max > 0 && waiting.len() as i64 >= max) || idle >= delay {
        start_bgsave(srv, None);
    }
}

/// The RDB child ended (Redis's `updateSlavesWaitingBgsave`, disk
/// target): replicas waiting for it get the file and go online, or are
/// dropped when it failed; replicas that could not use it start the next.
pub fn rdb_done(srv: &mut Server, ok: bool) {
    if srv.repl.replicas.is_empty() {
        return;
    }
    let ended: Vec<ClientId> = srv
        .repl
        .replicas
        .iter()
        .filter(|r| matches!(r.state, ReplicaState::WaitBgsaveEnd { .. }) && !r.via_socket)
        .map(|r| r.id)
        .collect();
    let rdb = if ok && !ended.is_empty() {
        match std::fs::read(crate::persist::snapshot::rdb_path(srv)) {
            Ok(d) => Some(d),
            Err(e) => {
                log::warning(&format!(
                    "SYNC failed. Can't open/stat DB after BGSAVE: {e}"
                ));
                None
            }
        }
    } else {
        None
    };
    for id in ended {
        let Some(i) = srv.repl.replicas.iter().position(|r| r.id == id) else {
            continue;
        };
        match &rdb {
            Some(data) => {
                push(srv, None, id, |c| {
                    c.reply.raw(format!("${}\r\n", data.len()).as_bytes());
                    c.reply.raw(data);
                });
                put_online(srv, id);
            }
            None => {
                let r = srv.repl.replicas.remove(i);
                log::warning("SYNC failed. BGSAVE child returned an error");
                kill(srv, r.id);
            }
        }
    }
    start_pending(srv);
}

/// Hands the stream produced since the last call to the replicas: online
/// ones get it now, ones waiting for their RDB keep it for later.
/// `current` is the client whose turn it is (its state is borrowed).
pub fn distribute(srv: &mut Server, mut current: Option<&mut Client>) {
    release_held(srv);
    if srv.prop.repl_fresh.is_empty() {
        return;
    }
    let fresh = std::mem::take(&mut srv.prop.repl_fresh);
    let online: Vec<ClientId> = srv
        .repl
        .replicas
        .iter_mut()
        .filter_map(|r| match &mut r.state {
            ReplicaState::Online => match &mut r.held {
                Some(held) => {
                    held.extend_from_slice(&fresh);
                    None
                }
                None => Some(r.id),
            },
            ReplicaState::WaitBgsaveEnd { pending } => {
                if !r.announce.rdb_only {
                    pending.extend_from_slice(&fresh);
                }
                None
            }
            ReplicaState::WaitBgsaveStart => None,
        })
        .collect();
    for id in online {
        push(srv, current.as_deref_mut(), id, |c| c.reply.raw(&fresh));
    }
    let mut fresh = fresh;
    fresh.clear();
    srv.prop.repl_fresh = fresh;
    super::obuf::check_all(srv, current);
}

/// The task that hands the stream to the replicas: woken when a
/// connection's turn grew it, it runs once the clients ready in this round
/// have had theirs, so a replica gets the round's writes in one piece (one
/// write on its socket, as Redis writes replicas in beforeSleep) instead of
/// one per client.
pub async fn feeder(srv: std::rc::Rc<std::cell::RefCell<Server>>) {
    let feed = srv.borrow().repl.feed.clone();
    loop {
        feed.notified().await;
        distribute(&mut srv.borrow_mut(), None);
    }
}

/// Replicas that ACKed after a diskless transfer get the stream held for
/// them, and from now on the stream as it comes.
fn release_held(srv: &mut Server) {
    for i in 0..srv.repl.replicas.len() {
        let r = &mut srv.repl.replicas[i];
        if !r.acked_early {
            continue;
        }
        let Some(held) = r.held.take() else {
            continue;
        };
        let (id, name) = (r.id, r.name());
        push(srv, None, id, |c| c.reply.raw(&held));
        log::notice(&format!("Synchronization with replica {name} succeeded"));
    }
}

/// Runs `f` on a client's state, the running one included.
fn with_client(
    srv: &Server,
    current: Option<&mut Client>,
    id: ClientId,
    f: impl FnOnce(&mut Client),
) {
    match current {
        Some(c) if c.id == id => f(c),
        _ => {
            if let Some(cell) = srv.clients.get(&id) {
                if let Ok(mut c) = cell.state.try_borrow_mut() {
                    f(&mut c);
                }
            }
        }
    }
}

/// Writes to a replica's output and wakes its task to send it.
fn push(srv: &Server, current: Option<&mut Client>, id: ClientId, f: impl FnOnce(&mut Client)) {
    with_client(srv, current, id, f);
    srv.wake(id);
}

/// Closes a replica's connection.
fn kill(srv: &Server, id: ClientId) {
    if let Some(cell) = srv.clients.get(&id) {
        cell.kill.set(true);
        cell.wake.notify_one();
    }
}

/// `REPLCONF ACK <offset>` from a replica (no reply): records it and
/// answers the WAITs it satisfies.
pub fn ack(srv: &mut Server, current: &mut Client, offset: i64) {
    let now = crate::clock::unix_now();
    let Some(r) = srv.repl.replica_mut(current.id) else {
        return;
    };
    if offset > r.ack_offset {
        r.ack_offset = offset;
    }
    r.ack_time = now;
    if matches!(r.state, ReplicaState::WaitBgsaveEnd { .. }) && r.via_socket {
        // The ACK came before the pipe's end was seen (Redis checks the
        // child here for the same race): its stream will not be held.
        r.acked_early = true;
    }
    if r.held.is_some() {
        // Its first ACK: the RDB is loaded, the stream can flow. The feeder
        // sends what was held (not this command's reply, which a replica's
        // command must not have).
        r.acked_early = true;
        srv.repl.feed.notify_one();
    }
    super::wait::acked_by(srv, current);
}

/// Once a second (Redis's `replicationCron`, master part): a PING into the
/// stream every `repl-ping-replica-period` seconds, a newline to replicas
/// still waiting for their RDB (so they know the master is alive; not
/// during a diskless transfer, whose bytes share the connection),
/// replicas silent for `repl-timeout` dropped, a delayed RDB child
/// started, and the backlog freed after `repl-backlog-ttl` without
/// replicas.
pub fn cron(srv: &mut Server) {
    // A cluster manual failover waits for the replica to reach the offset
    // the paused master announced: no PING may move it meanwhile.
    let manual_failover = crate::cluster::bus::failover::in_progress(srv);
    let repl = &mut srv.repl;
    repl.cron_secs += 1;
    let now = crate::clock::unix_now();
    if !repl.replicas.is_empty() {
        let period = srv.config.get_i64("repl-ping-replica-period").max(1) as u64;
        if repl.cron_secs.is_multiple_of(period) && !manual_failover {
            srv.prop.feed_replicas_only(&[b"PING"]);
        }
        let timeout = srv.config.get_i64("repl-timeout").max(1);
        let mut dropped = full_sync_stalled(srv, now, timeout);
        for r in &srv.repl.replicas {
            match r.state {
                ReplicaState::Online if !r.pre_psync && now - r.ack_time > timeout => {
                    log::warning(&format!(
                        "Disconnecting timedout replica (streaming sync): {}",
                        r.name()
                    ));
                    dropped.push(r.id);
                }
                // Not while a diskless transfer streams the RDB into the
                // same connection: a newline there would land inside it.
                ReplicaState::WaitBgsaveStart => push(srv, None, r.id, |c| c.reply.raw(b"\n")),
                ReplicaState::WaitBgsaveEnd { .. } if !r.via_socket => {
                    push(srv, None, r.id, |c| c.reply.raw(b"\n"));
                }
                _ => {}
            }
        }
        super::obuf::check_all(srv, None);
        for id in dropped {
            kill(srv, id);
        }
        start_pending(srv);
    } else if srv.prop.backlog.is_some() {
        let ttl = srv.config.get_i64("repl-backlog-ttl");
        if ttl > 0 && now - srv.repl.no_replicas_since > ttl {
            // A later replica cannot continue this history: a new id.
            srv.repl.new_history(&mut srv.rng);
            srv.prop.backlog = None;
            log::notice(&format!(
                "Replication backlog freed after {ttl} seconds without connected replicas."
            ));
        }
    }
    distribute(srv, None);
}
