//! Replication: this server's replication ids, the replicas it feeds (master side), and what INFO and ROLE report of them.
//!
//! The stream itself is built in one place, `server::propagate` (the write
//! path): when a backlog exists it also feeds the backlog and advances
//! `master_repl_offset` there, and [`master::distribute`] hands the new
//! bytes to the replicas at the end of each connection's turn and in the
//! cron. The stream's offset only moves while a backlog exists, as in Redis.

pub mod backlog;
pub mod master;
pub mod obuf;
pub mod replica;
pub mod wait;

use crate::db::ClientId;

/// An error reply on a replication link, in either direction (a replica's
/// command from its master, or a replica client of this master): never
/// meant to happen, so Redis logs it and counts it in INFO's
/// `unexpected_error_replies` (`afterErrorReply`). `from`/`to` name the
/// two ends ("replica"/"master", or "master"/"replica").
pub fn unexpected_error(
    srv: &mut crate::server::Server,
    from: &str,
    to: &str,
    reply: &[u8],
    cmd_name: &str,
) {
    let line = reply.split(|&b| b == b'\r').next().unwrap_or_default();
    let text = String::from_utf8_lossy(line.get(1..).unwrap_or_default());
    // Redis quotes ERR-class errors without their code.
    let text = text.strip_prefix("ERR ").unwrap_or(&text);
    crate::log::warning(&format!(
        "== CRITICAL == This {from} is sending an error to its {to}: '{text}' after processing the command '{cmd_name}'"
    ));
    srv.stats.unexpected_error_replies += 1;
}

/// What a client announced with REPLCONF before (or while) it is a replica
/// (Redis keeps these in the client struct).
#[derive(Clone, Debug, Default)]
pub struct Announce {
    pub listening_port: u16,
    pub ip: Option<String>,
    /// `capa eof`: accepts a diskless (EOF-marked) RDB transfer.
    pub capa_eof: bool,
    /// `capa psync2`: understands `+CONTINUE <replid>`.
    pub capa_psync2: bool,
    /// `rdb-only 1`: wants the RDB and no stream after it (`redis-cli --rdb`).
    pub rdb_only: bool,
    /// `rdb-filter-only`: the RDB without the keys / without the functions.
    pub exclude_data: bool,
    pub exclude_functions: bool,
}

impl Announce {
    /// The RDB this replica needs, as save options.
    pub fn save_options(&self) -> crate::persist::rdb::SaveOptions {
        crate::persist::rdb::SaveOptions {
            exclude_data: self.exclude_data,
            exclude_functions: self.exclude_functions,
            ..Default::default()
        }
    }

    /// Replicas that can share one transfer ask for the same RDB.
    fn same_rdb(&self, other: &Announce) -> bool {
        (self.exclude_data, self.exclude_functions) == (other.exclude_data, other.exclude_functions)
    }
}

/// Where a replica is in its synchronisation (Redis's `replstate`).
#[derive(Debug)]
pub enum ReplicaState {
    /// Waiting for a BGSAVE that can serve it to start.
    WaitBgsaveStart,
    /// The RDB child runs; the stream since its fork waits here.
    WaitBgsaveEnd { pending: Vec<u8> },
    /// Receiving the stream as it is produced.
    Online,
}

/// One replica attached to this master.
#[derive(Debug)]
pub struct Replica {
    pub id: ClientId,
    pub state: ReplicaState,
    pub announce: Announce,
    /// The peer's address as `ip:port` (its name in logs until it announces).
    pub peer: String,
    /// Sent SYNC, not PSYNC (redis-cli --replica, the test suite's stream
    /// reader): no `+FULLRESYNC` line and no REPLCONF ACKs are expected.
    pub pre_psync: bool,
    /// The offset the RDB it receives corresponds to.
    pub initial_offset: i64,
    /// The highest offset it acknowledged (REPLCONF ACK).
    pub ack_offset: i64,
    /// Unix seconds of its last ACK (or of going online).
    pub ack_time: i64,
    /// Unix seconds since it waits for a transfer (diskless sync delay).
    pub since: i64,
    /// Its RDB comes through the diskless child's pipe, not the file.
    pub via_socket: bool,
    /// Online after a diskless transfer: the stream is held here until its
    /// first ACK, as Redis's `repl_start_cmd_stream_on_ack` (a replica
    /// looks for the EOF mark at the end of what it reads, so stream bytes
    /// right behind the mark would hide it).
    pub held: Option<Vec<u8>>,
    /// It ACKed since its diskless transfer began: the stream held for it
    /// goes out (or, when the ACK came before the pipe's end was seen,
    /// nothing is held at all).
    pub acked_early: bool,
    /// Its connection's output count (sent and queued) where the RDB
    /// payload ends: what is queued beyond it is stream (see `obuf`).
    pub rdb_end: u64,
    /// Unix seconds since its stream first passed the soft output limit.
    pub obuf_soft_since: Option<i64>,
    /// During a diskless transfer: its connection's sent count when last
    /// seen by the cron, and since when it has not moved with output
    /// waiting (Redis's `repl_last_partial_write`).
    pub stalled: Option<(u64, i64)>,
}

impl Replica {
    /// `ip:port` as Redis names a replica in its logs
    /// (`replicationGetSlaveName`): the announced address and listening port.
    pub fn name(&self) -> String {
        let ip = self.announce.ip.clone().unwrap_or_else(|| {
            self.peer
                .rsplit_once(':')
                .map_or(String::new(), |p| p.0.into())
        });
        if self.announce.listening_port != 0 {
            format!("{ip}:{}", self.announce.listening_port)
        } else {
            format!("{ip}:<unknown-replica-port>")
        }
    }

    /// INFO's `state=` word.
    pub fn state_name(&self) -> &'static str {
        match self.state {
            ReplicaState::WaitBgsaveStart | ReplicaState::WaitBgsaveEnd { .. } => "wait_bgsave",
            ReplicaState::Online => "online",
        }
    }
}

/// The server's replication state, master side.
pub struct Repl {
    /// The current replication id (INFO `master_replid`).
    pub replid: String,
    /// The previous id, valid up to `second_replid_offset` (after a
    /// promotion); forty zeros when there is none.
    pub replid2: String,
    pub second_replid_offset: i64,
    pub replicas: Vec<Replica>,
    /// REPLCONF settings of clients that are not (yet) replicas.
    pub announced: Vec<(ClientId, Announce)>,
    /// The running RDB child streams to replicas (diskless), not to the file.
    pub socket_child: bool,
    /// Clients blocked in WAIT.
    pub waiting: Vec<wait::Waiter>,
    /// Unix seconds since when no replica is attached (backlog TTL).
    pub no_replicas_since: i64,
    /// INFO stats `sync_full`, `sync_partial_ok`, `sync_partial_err`.
    pub sync_full: u64,
    pub sync_partial_ok: u64,
    pub sync_partial_err: u64,
    /// Wakes [`master::feeder`]: the stream grew.
    pub feed: std::rc::Rc<tokio::sync::Notify>,
    /// Seconds the replication cron has run (pings every
    /// `repl-ping-replica-period` of them).
    pub cron_secs: u64,
}

/// The id a replica has never seen: no previous history.
pub const NO_ID: &str = "0000000000000000000000000000000000000000";

impl Repl {
    pub fn new(rng: &mut crate::server::Rng) -> Repl {
        Repl {
            replid: random_id(rng),
            replid2: NO_ID.into(),
            second_replid_offset: -1,
            replicas: Vec::new(),
            announced: Vec::new(),
            waiting: Vec::new(),
            socket_child: false,
            no_replicas_since: crate::clock::unix_now(),
            sync_full: 0,
            sync_partial_ok: 0,
            sync_partial_err: 0,
            cron_secs: 0,
            feed: Default::default(),
        }
    }

    /// True when the client is a replica of this server.
    pub fn is_replica(&self, id: ClientId) -> bool {
        self.replicas.iter().any(|r| r.id == id)
    }

    pub fn replica_mut(&mut self, id: ClientId) -> Option<&mut Replica> {
        self.replicas.iter_mut().find(|r| r.id == id)
    }

    /// The REPLCONF settings a client gave so far.
    pub fn announce_mut(&mut self, id: ClientId) -> &mut Announce {
        if let Some(i) = self.replicas.iter().position(|r| r.id == id) {
            return &mut self.replicas[i].announce;
        }
        let i = match self.announced.iter().position(|(c, _)| *c == id) {
            Some(i) => i,
            None => {
                self.announced.push((id, Announce::default()));
                self.announced.len() - 1
            }
        };
        &mut self.announced[i].1
    }

    /// A new replication id, the old history forgotten (Redis's
    /// `changeReplicationId` + `clearReplicationId2`).
    pub fn new_history(&mut self, rng: &mut crate::server::Rng) {
        self.replid = random_id(rng);
        self.replid2 = NO_ID.into();
        self.second_replid_offset = -1;
    }
}

impl Replica {
    /// The address INFO and ROLE show: the announced one, else the peer's.
    pub fn ip(&self) -> String {
        self.announce.ip.clone().unwrap_or_else(|| {
            self.peer
                .rsplit_once(':')
                .map_or(String::new(), |p| p.0.trim_matches(['[', ']']).into())
        })
    }
}

/// INFO's replication section, master side (Redis's `genRedisInfoString`).
pub fn info(srv: &crate::server::Server, out: &mut String) {
    use std::fmt::Write;
    let repl = &srv.repl;
    let now = crate::clock::unix_now();
    replica::info::role_lines(srv, out);
    let _ = write!(out, "connected_slaves:{}\r\n", repl.replicas.len());
    for (i, r) in repl.replicas.iter().enumerate() {
        let lag = match r.state {
            ReplicaState::Online => now - r.ack_time,
            _ => 0,
        };
        let _ = write!(
            out,
            "slave{i}:ip={},port={},state={},offset={},lag={lag}\r\n",
            r.ip(),
            r.announce.listening_port,
            r.state_name(),
            r.ack_offset
        );
    }
    let b = srv.prop.backlog.as_deref();
    let _ = write!(
        out,
        "master_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_replid2:{}\r\nmaster_repl_offset:{}\r\nsecond_repl_offset:{}\r\nrepl_backlog_active:{}\r\nrepl_backlog_size:{}\r\nrepl_backlog_first_byte_offset:{}\r\nrepl_backlog_histlen:{}\r\n",
        repl.replid,
        repl.replid2,
        srv.prop.repl_offset,
        repl.second_replid_offset,
        b.is_some() as u8,
        srv.config.get_i64("repl-backlog-size"),
        b.map_or(0, |b| b.first_byte_offset()),
        b.map_or(0, |b| b.histlen()),
    );
}

/// ROLE on a master: `master`, the offset, and each online replica's
/// address, port and acknowledged offset.
pub fn role(srv: &crate::server::Server, out: &mut crate::resp::encode::Reply) {
    out.array(3);
    out.bulk(b"master");
    out.int(srv.prop.repl_offset);
    let online: Vec<&Replica> = srv
        .repl
        .replicas
        .iter()
        .filter(|r| matches!(r.state, ReplicaState::Online))
        .collect();
    out.array(online.len());
    for r in online {
        out.array(3);
        out.bulk(r.ip().as_bytes());
        out.bulk(r.announce.listening_port.to_string().as_bytes());
        out.bulk(r.ack_offset.to_string().as_bytes());
    }
}

/// True unless `min-replicas-to-write` and `min-replicas-max-lag` are set
/// and fewer online replicas than asked sent an ACK within the lag
/// (Redis's `checkGoodReplicasStatus`); a replica itself never refuses.
pub fn good_replicas_suffice(srv: &crate::server::Server) -> bool {
    let (min, lag) = (
        srv.config.min_replicas_to_write,
        srv.config.min_replicas_max_lag,
    );
    if min == 0 || lag == 0 {
        return true;
    }
    let now = crate::clock::unix_now();
    let good = srv
        .repl
        .replicas
        .iter()
        .filter(|r| matches!(r.state, ReplicaState::Online) && now - r.ack_time <= lag)
        .count() as i64;
    good >= min
}

/// Memory the replicas' clients hold on this master, allocated sizes as the
/// allocator counts them in `used_memory`: their connections' buffers and
/// the stream waiting for them (INFO `mem_clients_slaves`; left out of
/// eviction's count as in Redis).
pub fn replica_buffers(srv: &crate::server::Server) -> u64 {
    srv.repl
        .replicas
        .iter()
        .map(|r| {
            let out = srv
                .clients
                .get(&r.id)
                .and_then(|c| {
                    let c = c.state.try_borrow().ok()?;
                    Some(crate::server::client_mem::usage(&c, 0))
                })
                .unwrap_or(0);
            let waiting = match &r.state {
                ReplicaState::WaitBgsaveEnd { pending } => pending.capacity(),
                _ => r.held.as_ref().map_or(0, Vec::capacity),
            };
            let waiting = crate::server::alloc::block_size(waiting);
            (out + waiting) as u64
        })
        .sum()
}

/// The backlog's size (INFO `mem_replication_backlog`).
pub fn backlog_bytes(srv: &crate::server::Server) -> u64 {
    srv.prop.backlog.as_ref().map_or(0, |b| b.size() as u64)
}

/// Forty random hex digits (Redis's `getRandomHexChars`).
pub fn random_id(rng: &mut crate::server::Rng) -> String {
    (0..40)
        .map(|_| char::from(b"0123456789abcdef"[(rng.next_u64() % 16) as usize]))
        .collect()
}

/// A client left: it is no replica and announces nothing any more.
pub fn client_gone(srv: &mut crate::server::Server, id: ClientId) {
    let r = &mut srv.repl;
    r.announced.retain(|(c, _)| *c != id);
    r.waiting.retain(|w| w.client != id);
    if let Some(i) = r.replicas.iter().position(|x| x.id == id) {
        let gone = r.replicas.remove(i);
        crate::log::notice(&format!("Connection with replica {} lost.", gone.name()));
        if r.replicas.is_empty() {
            r.no_replicas_since = crate::clock::unix_now();
        }
        let waited = matches!(gone.state, ReplicaState::WaitBgsaveEnd { .. }) && !gone.via_socket;
        if waited && rdb_for_nobody(srv) {
            crate::persist::child::kill(srv);
        }
    }
}

/// The RDB a disk child writes serves no one any more: no replica waits for
/// it and no save point asked for it (Redis's check in `freeClient`, so the
/// memory the fork holds is given back and the next sync forks at once).
fn rdb_for_nobody(srv: &crate::server::Server) -> bool {
    let child_rdb = srv
        .persist
        .child
        .running
        .is_some_and(|c| c.kind == crate::persist::child::Kind::Rdb);
    child_rdb
        && !srv.repl.socket_child
        && srv.config.get("save").unwrap_or("").is_empty()
        && !srv
            .repl
            .replicas
            .iter()
            .any(|r| matches!(r.state, ReplicaState::WaitBgsaveEnd { .. }))
}
