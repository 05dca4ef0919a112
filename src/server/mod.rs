//! The server: shared state owned by the one data thread, and the context handlers run in.

pub mod alloc;
pub mod blocking;
pub mod client;
pub mod client_mem;
pub mod cron;
pub mod evict;
pub mod fault;
pub mod memory;
pub mod monitor;
pub mod notify;
pub mod oom;
pub mod propagate;
pub mod pubsub;
pub mod stats;
pub mod tracking;

use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

use crate::config::Config;
use crate::db::{ClientId, Db, Keyspace};
use crate::resp::encode::Reply;
use client::{Client, ClientCell};

/// Everything the data thread owns besides per-connection state.
pub struct Server {
    pub config: Config,
    pub ks: Keyspace,
    pub clients: HashMap<ClientId, Rc<ClientCell>>,
    pub next_client_id: ClientId,
    pub pubsub: pubsub::PubSub,
    pub stats: stats::Stats,
    /// Keyspace events raised by the current command, published after it.
    pub events: Vec<notify::Event>,
    /// Clients in MONITOR mode.
    pub monitors: Vec<ClientId>,
    pub started: Instant,
    /// 40 hex characters, new at each start (INFO run_id).
    pub run_id: String,
    /// Set by SHUTDOWN or a signal; the listener loop stops when it is set.
    pub shutdown: Option<ShutdownRequest>,
    /// A shutdown scheduled by a signal or waiting for replicas (`net::shutdown`).
    pub shutdown_pending: Option<crate::net::shutdown::Pending>,
    /// Notified when `shutdown` is set, to stop the listener loop.
    pub shutdown_signal: Rc<tokio::sync::Notify>,
    /// Notified when a connection ran requests; wakes the spinner (`net::spin`).
    pub activity: Rc<tokio::sync::Notify>,
    /// Clients paused by CLIENT PAUSE until this unix millisecond, and for which commands.
    pub pause: Option<Pause>,
    /// The cron's active expiry cycle runs (DEBUG SET-ACTIVE-EXPIRE 0 stops it).
    pub active_expire: bool,
    /// DEBUG PAUSE-CRON 1: the cron does nothing until 0.
    pub cron_paused: bool,
    /// DEBUG REPLYBUFFER RESIZING 0: the cron leaves idle clients' output
    /// buffers as they are (tests measuring client memory need it steady).
    pub reply_buffer_resizing: bool,
    pub rng: Rng,
    pub last_save_unix: i64,
    /// Persistence: the background child, snapshots, the AOF (`crate::persist`).
    pub persist: crate::persist::Persist,
    /// The stream of effects replicas and the AOF replay (see [`propagate`]).
    pub prop: propagate::Propagation,
    /// Replication: ids, replicas, WAITs (`repl`).
    pub repl: crate::repl::Repl,
    /// The append-only file (`crate::persist::aof`).
    pub aof: crate::persist::aof::Aof,
    /// SLOWLOG entries (server family).
    pub slowlog: crate::cmd::server::slowlog::SlowLog,
    /// Per-command latency histograms for INFO latencystats (server family).
    pub latency: crate::cmd::server::latency::Latency,
    /// The TCP accept loops, stopped and replaced by CONFIG SET port/bind (server family).
    pub tcp_accepts: Vec<crate::net::listener::Accepting>,
    /// The `bind` addresses and port those loops listen on.
    pub tcp_addrs: (Vec<String>, u16),
    /// The server's own cell, for handlers that start tasks (CONFIG SET port/bind).
    pub self_ref: Option<std::rc::Weak<std::cell::RefCell<Server>>>,
    /// Lua engine and script cache (owned by `crate::script`).
    pub script: crate::script::Scripting,
    /// Client-side caching (pub/sub family).
    pub tracking: tracking::Tracking,
    /// Clients currently blocked on keys (lists family, `blocking.rs`), so
    /// the check after every command costs nothing when nobody waits.
    pub blocked_clients: usize,
    /// maxmemory: the eviction pool and the OOM state (`evict`).
    pub evict: evict::Eviction,
    /// ACL users and the ACL log (`crate::acl`).
    pub acl: crate::acl::Acl,
    /// Client memory and `maxmemory-clients` (see `client_mem`).
    pub client_mem: client_mem::Tracked,
    /// What DEBUG's knobs set (CHANGE-REPL-ID, QUICKLIST-PACKED-THRESHOLD, ...).
    pub debug: crate::cmd::server::debug_flags::Knobs,
    /// The replica side of replication (`crate::repl::replica`).
    pub replica: crate::repl::replica::Replica,
    /// The test controls' faults and checkpoints (OXIDIS, `cmd::testctl`).
    pub testctl: crate::cmd::testctl::State,
    /// Cluster mode (`cluster-enabled yes`): this node's view of the cluster.
    pub cluster: Option<Box<crate::cluster::Cluster>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShutdownRequest {
    pub save: Option<bool>,
}

#[derive(Clone, Copy, Debug)]
pub struct Pause {
    pub until_ms: i64,
    /// Only writes are paused (CLIENT PAUSE ... WRITE).
    pub write_only: bool,
}

/// A small fast PRNG (xorshift64*), enough for sampling and RANDOMKEY.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

impl Server {
    /// Registers a client with no socket behind it, as a TCP client from
    /// 127.0.0.1:40000 would be (needing AUTH when `requirepass` is set):
    /// in-process harnesses (tests, fuzzing) drive it through `dispatch`.
    pub fn add_local_client(&mut self) -> Rc<ClientCell> {
        let id = self.next_client_id;
        self.next_client_id += 1;
        let peer = std::net::SocketAddr::from(([127, 0, 0, 1], 40000));
        let client = Client::new(
            id,
            client::Peer::from(peer),
            "127.0.0.1:6379",
            client::ConnKind::Tcp,
            !self.acl.starts_authenticated(),
        );
        let cell = Rc::new(ClientCell {
            state: std::cell::RefCell::new(client),
            wake: Default::default(),
            kill: std::cell::Cell::new(false),
        });
        self.clients.insert(id, cell.clone());
        cell
    }

    pub fn new(config: Config) -> Server {
        let seed = crate::clock::real_now_us() as u64 ^ (std::process::id() as u64) << 32;
        let mut rng = Rng::new(seed);
        let run_id = (0..40)
            .map(|_| char::from(b"0123456789abcdef"[(rng.next_u64() % 16) as usize]))
            .collect();
        let acl = crate::acl::Acl::new(&config);
        let repl = crate::repl::Repl::new(&mut rng);
        // With test controls, tables hash with fixed seeds so that OXIDIS
        // SEED makes random picks repeatable (set before any table exists).
        crate::db::dict::fixed_hash_seeds(config.enable_test_controls);
        Server {
            ks: Keyspace::new(config.databases),
            config,
            clients: HashMap::new(),
            next_client_id: 1,
            pubsub: Default::default(),
            stats: Default::default(),
            events: Vec::new(),
            monitors: Vec::new(),
            started: Instant::now(),
            run_id,
            shutdown: None,
            shutdown_pending: None,
            shutdown_signal: Rc::new(tokio::sync::Notify::new()),
            activity: Rc::new(tokio::sync::Notify::new()),
            pause: None,
            active_expire: true,
            cron_paused: false,
            reply_buffer_resizing: true,
            rng,
            last_save_unix: crate::clock::real_now_us() / 1_000_000,
            persist: Default::default(),
            prop: Default::default(),
            repl,
            aof: Default::default(),
            slowlog: Default::default(),
            latency: Default::default(),
            tcp_accepts: Default::default(),
            tcp_addrs: Default::default(),
            self_ref: Default::default(),
            script: Default::default(),
            tracking: Default::default(),
            blocked_clients: Default::default(),
            evict: Default::default(),
            acl,
            client_mem: Default::default(),
            debug: Default::default(),
            replica: Default::default(),
            testctl: Default::default(),
            cluster: None,
        }
    }

    /// Runs `f` on another client's state, or on `current` when it is that client
    /// (the current client's cell is already borrowed by its task).
    pub fn with_client<R>(
        &self,
        id: ClientId,
        current: &mut Client,
        f: impl FnOnce(&mut Client) -> R,
    ) -> Option<R> {
        if id == current.id {
            return Some(f(current));
        }
        let cell = self.clients.get(&id)?;
        let mut c = cell.state.try_borrow_mut().ok()?;
        Some(f(&mut c))
    }

    /// Wakes a client's connection task (output queued, unblocked, or killed).
    pub fn wake(&self, id: ClientId) {
        if let Some(cell) = self.clients.get(&id) {
            cell.wake.notify_one();
        }
    }
}

/// What a handler works with: the server and the client running the command.
pub struct Ctx<'a> {
    pub srv: &'a mut Server,
    pub client: &'a mut Client,
    /// The spec of the command being run.
    pub spec: &'static crate::command::spec::CommandSpec,
    /// True while running inside MULTI/EXEC or a script: blocking commands
    /// must not block there.
    pub in_exec: bool,
}

impl<'a> Ctx<'a> {
    /// True while running on behalf of a script (`redis.call`): the script's
    /// own pseudo-client runs the command.
    #[inline]
    pub fn in_script(&self) -> bool {
        self.client.conn_kind == client::ConnKind::Script
    }

    /// The reply being written.
    #[inline]
    pub fn out(&mut self) -> &mut Reply {
        &mut self.client.reply
    }

    /// The client's selected database.
    #[inline]
    pub fn db(&mut self) -> &mut Db {
        &mut self.srv.ks.dbs[self.client.db]
    }

    /// The selected database and the reply at once, for handlers that read a
    /// value and write it out.
    #[inline]
    pub fn db_out(&mut self) -> (&mut Db, &mut Reply) {
        (&mut self.srv.ks.dbs[self.client.db], &mut self.client.reply)
    }

    /// The reply size at which a reply of a client-chosen length stops
    /// (see [`pubsub::hard_output_cap`]); none for a script's own client,
    /// which Redis never closes.
    pub fn reply_cap(&self) -> usize {
        if self.in_script() {
            usize::MAX
        } else {
            pubsub::hard_output_cap(self.srv, self.client)
        }
    }

    /// Schedules the client's close once a streamed reply reached
    /// [`Ctx::reply_cap`] (Redis's `CLIENT_CLOSE_ASAP`).
    pub fn reply_capped(&mut self) {
        pubsub::check_output_limit(self.srv, self.client);
    }

    /// Records a change to `key` in the selected database: WATCH versions,
    /// the dirty counter and the keyspace event `event` of class `class`
    /// (see [`notify`]). Every command that changes a key calls this once per
    /// change, with the event name Redis uses.
    pub fn modified(&mut self, key: &[u8], class: u32, event: &'static str) {
        let db = self.client.db;
        self.modified_in(db, key, class, event);
    }

    /// As [`Ctx::modified`], counting `changes` in the dirty counter: Redis
    /// counts some commands by the elements they changed (SADD by members
    /// added, RPUSH by elements pushed, HSET by pairs given, ...).
    pub fn modified_by(&mut self, key: &[u8], class: u32, event: &'static str, changes: u64) {
        let db = self.client.db;
        self.signal(db, key, class, event, changes);
    }

    /// As [`Ctx::modified`], not counted in the dirty counter: the command
    /// counted its change once already (SMOVE's destination, LMOVE's push).
    pub fn touched(&mut self, key: &[u8], class: u32, event: &'static str) {
        let db = self.client.db;
        self.signal(db, key, class, event, 0);
    }

    /// As [`Ctx::modified`], for a key in another database (MOVE, COPY ... DB).
    pub fn modified_in(&mut self, db: usize, key: &[u8], class: u32, event: &'static str) {
        self.signal(db, key, class, event, 1);
    }

    /// WATCH versions, `dirty` more changes, tracking and the keyspace event.
    fn signal(&mut self, db: usize, key: &[u8], class: u32, event: &'static str, dirty: u64) {
        self.srv.ks.dbs[db].touch(key);
        self.srv.ks.dirty += dirty;
        if !self.srv.tracking.idle() {
            let by = tracking::acting_client(self.srv, self.client);
            tracking::invalidate_key(self.srv, self.client, by, key);
        }
        notify::emit(self.srv, self.client, class, event, db, key);
    }

    /// Deletes `key` from the selected database: the one way a command
    /// removes a key (Redis's `dbDelete` + `signalModifiedKey` + the `del`
    /// event). Records the WATCH touch, the dirty count, tracking
    /// invalidation and the `del` keyspace event; the command then
    /// propagates as it came (DEL, UNLINK, ...) unless it asked otherwise.
    /// A key past its TTL is expired instead (its own `expired` event and
    /// propagated DEL). True when a live key was deleted. The value is let
    /// go of as an implicit deletion (`lazyfree-lazy-server-del`); see
    /// [`Ctx::delete_key_as`].
    pub fn delete_key(&mut self, key: &[u8]) -> bool {
        self.delete_key_as(key, crate::db::Why::ServerDel)
    }

    /// As [`Ctx::delete_key`], freeing the value as `why` says: DEL and
    /// GETDEL as a user deletion, UNLINK lazily, EXPIRE with a past time as
    /// an expiry (Redis's `dbSyncDelete` / `dbAsyncDelete` choice).
    pub fn delete_key_as(&mut self, key: &[u8], why: crate::db::Why) -> bool {
        if !self.db().delete(key, why) {
            return false;
        }
        self.modified(key, notify::GENERIC, "del");
        true
    }

    /// Deletes `key` when it holds a collection whose last element a command
    /// just removed (Redis never keeps an empty list, hash, set or sorted
    /// set), as [`Ctx::delete_key`] but not counted in the dirty counter
    /// (Redis counts the elements the command removed, not the key). True
    /// when it did.
    pub fn delete_if_empty(&mut self, key: &[u8]) -> bool {
        let empty = self
            .db()
            .peek(key)
            .is_some_and(crate::db::Value::is_empty_collection);
        if !empty || !self.db().delete(key, crate::db::Why::ServerDel) {
            return false;
        }
        self.touched(key, notify::GENERIC, "del");
        true
    }

    /// True when something consumes the propagation stream; handlers that
    /// must build a replacement command check it first, so they allocate
    /// nothing when nobody listens.
    #[inline]
    pub fn propagating(&self) -> bool {
        self.srv.prop.active()
    }

    /// Propagate this instead of the command, if it changes the dataset
    /// (Redis's `rewriteClientCommandVector`): SET EX → SET PXAT, ...
    /// Without a call the command propagates as it came.
    #[inline]
    pub fn propagate_as(&mut self, argv: &[&[u8]]) {
        if self.srv.prop.active() {
            self.srv.prop.rewrite(argv);
        }
    }

    /// Propagate `argv` (in the selected database) whether or not the command
    /// changes the dataset, after what was propagated so far (Redis's
    /// `alsoPropagate`). Usually with [`Ctx::prevent_propagation`].
    #[inline]
    pub fn also_propagate(&mut self, argv: &[&[u8]]) {
        if self.srv.prop.active() {
            let lazy = lazy_expire(self.srv);
            self.srv.prop.also(self.client.db, argv, lazy);
        }
    }

    /// The command itself is not propagated (what it gave to
    /// [`Ctx::also_propagate`] still is).
    #[inline]
    pub fn prevent_propagation(&mut self) {
        if self.srv.prop.active() {
            self.srv.prop.prevent();
        }
    }

    /// The command goes to the replicas (never the AOF) even though it
    /// changed nothing: PUBLISH and SPUBLISH outside cluster mode, where
    /// the cluster bus carries them instead (Redis's
    /// `forceCommandPropagation(c, PROPAGATE_REPL)`).
    #[inline]
    pub fn force_replica_propagation(&mut self) {
        if self.srv.prop.active() {
            self.srv.prop.force_replicas();
        }
    }

    /// The command is propagated even if it changed nothing (FLUSHALL).
    #[inline]
    pub fn force_propagation(&mut self) {
        if self.srv.prop.active() {
            self.srv.prop.force();
        }
    }

    /// A keyspace event with no WATCH touch or dirty count (e.g. `expire` on
    /// a key whose TTL was set, already counted by `modified`).
    pub fn event(&mut self, class: u32, event: &'static str, key: &[u8]) {
        let db = self.client.db;
        notify::emit(self.srv, self.client, class, event, db, key);
    }
}

/// `lazyfree-lazy-expire`: expired keys propagate as UNLINK instead of DEL.
pub fn lazy_expire(srv: &Server) -> bool {
    srv.config.lazyfree_lazy_expire
}
