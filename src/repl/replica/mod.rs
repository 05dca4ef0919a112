//! The replica side of replication (Redis's `replication.c`, slave half): REPLICAOF, the link to the master, applying its stream.
//!
//! Layout:
//! - `command.rs`: REPLICAOF / SLAVEOF.
//! - `task.rs`: the link's task (connect, retry, reconnect), on the data
//!   thread's runtime; it never blocks the thread on the network.
//! - `handshake.rs`: PING, AUTH, REPLCONF, PSYNC and their replies.
//! - `transfer.rs`: the RDB of a full sync (`$<len>` or `$EOF:<mark>`), to a
//!   temporary file or memory, then loaded.
//! - `stream.rs`: the master client, running the master's commands.
//! - `info.rs`: INFO replication's replica lines, ROLE.
//! - `ids.rs`: the replication ids and offset the replica side changes.
//!
//! State: [`Replica`] on `Server::replica`; `link` is Some exactly while
//! this server is a replica (Redis's `server.masterhost != NULL`).

pub mod command;
mod handshake;
pub mod ids;
pub mod info;
mod stream;
mod task;
mod transfer;

use std::time::Instant;

use task::Outcome;

use crate::db::ClientId;
use crate::server::Server;

/// The replica side's state on the server.
#[derive(Default)]
pub struct Replica {
    /// The master this server replicates, if any.
    pub link: Option<Box<Link>>,
}

/// Where the link is (Redis's `repl_state`, handshake states folded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Must connect (after a failure, or the cron's next attempt).
    Connect,
    /// The TCP connect is under way.
    Connecting,
    /// PING .. PSYNC reply.
    Handshake,
    /// Receiving the RDB of a full sync.
    Transfer,
    /// Streaming: the master client runs the master's commands.
    Connected,
}

/// The position in the master's history (Redis's master client, live or
/// cached: `replid`, `reploff`, `read_reploff`).
#[derive(Clone, Debug)]
pub struct Position {
    pub replid: String,
    /// Offset of the last byte applied (outside a MULTI).
    pub reploff: i64,
    /// Offset of the last byte read from the socket.
    pub read_reploff: i64,
    /// The database the master client had selected: a partial resync
    /// continues in it (the master sends no SELECT again).
    pub db: usize,
}

/// The link to the master.
pub struct Link {
    pub host: String,
    pub port: u16,
    pub state: State,
    /// Bumped whenever a task is (re)started: a task whose number is no
    /// longer this one stops at its next step.
    pub generation: u64,
    /// The live master client (registered in `srv.clients`), when connected.
    pub master_client: Option<ClientId>,
    /// The master's position: live (with `master_client`) or cached for a
    /// partial resync after a dropped link. None: `PSYNC ? -1`.
    pub master: Option<Position>,
    /// Last data or PING from the master (`master->lastinteraction`).
    pub last_interaction: Instant,
    /// Unix seconds since the link is down (0: never up).
    pub down_since: i64,
    /// The RDB transfer: size (0 with an EOF mark), bytes read, last I/O.
    pub transfer_size: i64,
    pub transfer_read: i64,
    pub transfer_last_io: Instant,
    /// The RDB streams in while the old data is served (`repl-diskless-load
    /// swapdb` from the master of our own history: Redis's async loading).
    pub async_loading: bool,
    task: Option<tokio::task::AbortHandle>,
}

impl Link {
    fn new(host: &str, port: u16) -> Link {
        Link {
            host: host.to_string(),
            port,
            state: State::Connect,
            generation: 0,
            master_client: None,
            master: None,
            last_interaction: Instant::now(),
            down_since: 0,
            transfer_size: 0,
            transfer_read: 0,
            transfer_last_io: Instant::now(),
            async_loading: false,
            task: None,
        }
    }
}

/// True when this server replicates a master (Redis's `server.masterhost`).
#[inline]
pub fn is_replica(srv: &Server) -> bool {
    srv.replica.link.is_some()
}

/// This server acts as a master (Redis's `iAmMaster`): in cluster mode
/// its own role in the cluster view (a replica is one from its nodes.conf
/// on, before its link to the master is made), else no master is set.
pub fn i_am_master(srv: &Server) -> bool {
    match srv.cluster.as_deref() {
        Some(c) => !c.me().is_replica(),
        None => !is_replica(srv),
    }
}

/// How old this replica's data is, in ms (Redis's `data_age` in
/// `clusterHandleSlaveFailover`): since the master was last heard from on
/// a live link, else since the link went down (since ever when it never
/// came up), counted in whole seconds as Redis.
pub fn data_age_ms(srv: &Server) -> i64 {
    let Some(l) = srv.replica.link.as_deref() else {
        return 0;
    };
    if l.state == State::Connected && l.down_since == 0 {
        l.last_interaction.elapsed().as_secs() as i64 * 1000
    } else {
        (crate::clock::real_now_us() / 1_000_000 - l.down_since) * 1000
    }
}

/// Client `id` is being killed: when it is the master's, the link is down
/// from now on (Redis frees the master client at once and sets
/// `repl_down_since`; the link's task notices later).
pub fn client_killed(srv: &mut Server, id: crate::db::ClientId) {
    if let Some(l) = srv.replica.link.as_deref_mut() {
        if l.master_client == Some(id) && l.down_since == 0 {
            l.down_since = crate::clock::real_now_us() / 1_000_000;
        }
    }
}

/// Writes from clients are refused: a replica with `replica-read-only yes`.
pub fn read_only(srv: &Server) -> bool {
    is_replica(srv) && srv.config.get("replica-read-only") == Some("yes")
}

/// INFO `async_loading`: see [`Link::async_loading`].
pub fn async_loading(srv: &Server) -> bool {
    srv.replica.link.as_ref().is_some_and(|l| l.async_loading)
}

/// A replica whose link to its master is not up (it refuses SYNC/PSYNC
/// with `-NOMASTERLINK`).
pub fn link_down(srv: &Server) -> bool {
    srv.replica
        .link
        .as_ref()
        .is_some_and(|l| l.state != State::Connected)
}

/// Commands without the `stale` flag are refused: a replica whose link is
/// not up, with `replica-serve-stale-data no`.
pub fn stale(srv: &Server) -> bool {
    link_down(srv) && srv.config.get("replica-serve-stale-data") == Some("no")
}

/// `replicaof host port` from the configuration file or flags: the link
/// starts with the server (Redis's cron connects from `REPL_STATE_CONNECT`).
pub fn start_from_config(srv: &mut Server) {
    let Some(v) = srv.config.get("replicaof").map(str::to_string) else {
        return;
    };
    let mut w = v.split_whitespace();
    let (Some(host), Some(port)) = (w.next(), w.next().and_then(|p| p.parse().ok())) else {
        return;
    };
    let mut link = Box::new(Link::new(host, port));
    link.master = Some(own_position(srv));
    srv.replica.link = Some(link);
    became_replica(srv, true);
    task::spawn(srv);
}

/// The role changed: key expiry and the log's role character follow.
fn became_replica(srv: &mut Server, on: bool) {
    use crate::db::ReplicaExpiry;
    ids::set_from_master(srv, on);
    crate::db::forget_replica_keys();
    crate::db::set_replica_expiry(if on {
        ReplicaExpiry::Replica
    } else {
        ReplicaExpiry::Off
    });
    crate::log::set_replica_role(on);
}

/// Our own id and offset as a cached master: a master turned replica may
/// continue partially from the new master (Redis's
/// `replicationCacheMasterUsingMyself`).
fn own_position(srv: &Server) -> Position {
    let off = ids::offset(srv);
    Position {
        replid: ids::replid(srv).to_string(),
        reploff: off,
        read_reploff: off,
        db: 0,
    }
}

/// REPLICAOF host port (Redis's `replicationSetMaster`).
pub fn set_master(srv: &mut Server, host: &str, port: u16) {
    let was_master = !is_replica(srv);
    let mut cached = None;
    if let Some(old) = srv.replica.link.take() {
        cached = stop(srv, *old, true);
    }
    if was_master {
        crate::log::notice("Before turning into a replica, using my own master parameters to synthesize a cached master: I may be able to synchronize with the new master with just a partial transfer.");
        cached = Some(own_position(srv));
    }
    disconnect_blocked(srv);
    let mut link = Box::new(Link::new(host, port));
    link.master = cached;
    srv.replica.link = Some(link);
    let _ = srv
        .config
        .set("replicaof", format!("{host} {port}").as_bytes());
    became_replica(srv, true);
    crate::log::notice(&format!("Connecting to MASTER {host}:{port}"));
    task::spawn(srv);
}

/// REPLICAOF NO ONE (Redis's `replicationUnsetMaster`): the data stays,
/// a new replication id starts, the AOF restarts if it was stopped.
pub fn unset_master(srv: &mut Server) {
    let Some(old) = srv.replica.link.take() else {
        return;
    };
    if stop(srv, *old, false).is_some() {
        crate::log::notice("Discarding previously cached master state.");
    }
    ids::shift(srv);
    let _ = srv.config.set("replicaof", b"");
    became_replica(srv, false);
    transfer::restart_aof_if_needed(srv);
}

/// Ends a link: its task, its master client. Returns the master's position
/// when `cache` (for a partial resync with the next master) or when there
/// was a cached one to discard.
fn stop(srv: &mut Server, mut link: Link, cache: bool) -> Option<Position> {
    if let Some(t) = link.task.take() {
        t.abort();
    }
    if let Some(id) = link.master_client.take() {
        let db = srv
            .clients
            .get(&id)
            .and_then(|c| c.state.try_borrow().ok().map(|c| c.db));
        if let (Some(p), Some(db)) = (link.master.as_mut(), db) {
            p.db = db;
        }
        stream::free_master_client(srv, id);
        if cache {
            crate::log::notice("Caching the disconnected master state.");
        }
    }
    link.master.take().map(|mut p| {
        // What was read but not applied is dropped with the client.
        p.read_reploff = p.reploff;
        p
    })
}

/// The link of the task numbered `generation`, if it is still current.
fn link_of(srv: &mut Server, generation: u64) -> Option<&mut Link> {
    srv.replica
        .link
        .as_deref_mut()
        .filter(|l| l.generation == generation)
}

/// The ACK offset (Redis's `replicationGetSlaveOffset`).
pub fn slave_offset(srv: &Server) -> i64 {
    srv.replica
        .link
        .as_ref()
        .and_then(|l| l.master.as_ref())
        .map_or(0, |p| p.reploff.max(0))
}

/// Clients blocked on keys are answered an error and closed: the instance
/// changed role (Redis's `disconnectAllBlockedClients`).
fn disconnect_blocked(srv: &mut Server) {
    if srv.blocked_clients == 0 {
        return;
    }
    let cells: Vec<_> = srv.clients.values().cloned().collect();
    for cell in cells {
        let Ok(mut c) = cell.state.try_borrow_mut() else {
            continue;
        };
        if crate::server::blocking::unregister(srv, &mut c).is_some() {
            c.reply.error_line(
                "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
            );
            c.close_after_reply = true;
            cell.wake.notify_one();
        }
    }
}
