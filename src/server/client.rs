//! Per-connection client state: protocol, database, auth, transaction, subscriptions, blocking.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::time::Instant;

use tokio::sync::Notify;

use crate::command::args::Argv;
use crate::command::spec::CommandSpec;
use crate::db::{ClientId, Kind};
use crate::resp::encode::Reply;

/// A client as the server's registry holds it. The connection task and other
/// commands (PUBLISH, CLIENT KILL, wake-ups) reach it through here. The
/// `RefCell` is never borrowed across an `.await`.
pub struct ClientCell {
    pub state: RefCell<Client>,
    /// Wakes the connection task: output was queued for it, it was unblocked,
    /// or it must close.
    pub wake: Notify,
    /// Set by CLIENT KILL and output-limit checks; the task closes the socket.
    pub kill: Cell<bool>,
}

/// `CLIENT REPLY` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Set by `CLIENT REPLY SKIP`: the next command's reply is dropped.
    SkipThis,
    /// While the command after `CLIENT REPLY SKIP` runs: its reply is dropped
    /// unless it turns replies back on (CLIENT REPLY ON answers `+OK`).
    Skipping,
}

/// A command queued by MULTI.
pub struct Queued {
    pub spec: &'static CommandSpec,
    /// The command's id in the table (for its stats).
    pub id: usize,
    pub argv: Argv,
}

/// MULTI state: the queue and whether a queueing error doomed the transaction.
#[derive(Default)]
pub struct Multi {
    pub queue: Vec<Queued>,
    /// A command was rejected while queueing: EXEC answers EXECABORT.
    pub aborted: bool,
}

/// A key this client WATCHes: the version it saw, and whether it had already
/// expired at WATCH time (Redis ignores expiry of keys that were gone then).
pub struct WatchedKey {
    pub db: usize,
    pub key: Box<[u8]>,
    pub version: u64,
    pub expired_at_watch: bool,
    /// `Watched::stale_deletes` at WATCH time.
    pub stale_deletes: u64,
    /// `Watched::stale_arrivals` at WATCH time.
    pub stale_arrivals: u64,
}

/// A client waiting in a blocking command (BLPOP, BZPOPMIN, ...).
pub struct Blocked {
    pub db: usize,
    pub keys: Vec<Box<[u8]>>,
    /// The type of value that can serve it; other types leave it waiting.
    pub kind: Kind,
    /// Deadline in unix milliseconds; None blocks forever.
    pub deadline_ms: Option<i64>,
    /// The command to run again when a key becomes ready.
    pub argv: Argv,
    pub spec: &'static CommandSpec,
    pub id: usize,
}

/// Connection kind, for CLIENT LIST and CLIENT KILL TYPE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnKind {
    Tcp,
    Unix,
    /// The pseudo-client scripts run their commands as.
    Script,
}

pub struct Client {
    pub id: ClientId,
    pub reply: Reply,
    pub db: usize,
    pub name: Option<Vec<u8>>,
    pub lib_name: Option<Vec<u8>>,
    pub lib_ver: Option<Vec<u8>>,
    pub authenticated: bool,
    pub user: String,
    pub addr: String,
    pub laddr: String,
    pub conn_kind: ConnKind,
    pub created: Instant,
    pub last_interaction: Instant,
    pub multi: Option<Multi>,
    pub watched: Vec<WatchedKey>,
    pub channels: HashSet<Vec<u8>>,
    pub patterns: HashSet<Vec<u8>>,
    pub shard_channels: HashSet<Vec<u8>>,
    pub blocked: Option<Blocked>,
    /// Answered, then closed (QUIT, protocol errors).
    pub close_after_reply: bool,
    pub reply_mode: ReplyMode,
    pub monitor: bool,
    /// Name of the last command run (CLIENT LIST `cmd=`).
    pub last_cmd: &'static str,
    /// Set when a blocked command was served by another client's write, so
    /// its task knows the reply is already in `reply`.
    pub unblocked: bool,
    /// Skip touching LRU/LFU for keys (CLIENT NO-TOUCH).
    pub no_touch: bool,
    pub no_evict: bool,
    /// Bytes read and written (CLIENT LIST tot-net-in/out).
    pub net_in: u64,
    pub net_out: u64,
    pub commands: u64,
    /// Query buffer size the task last reported (CLIENT LIST qbuf).
    pub qbuf: usize,
    /// The socket's file descriptor (CLIENT LIST fd, and the busy-script
    /// poller in `script::busy`, which reads and answers other clients while
    /// the data thread is inside Lua); -1 when there is none.
    pub fd: i32,
    /// A command is waiting for CLIENT PAUSE to end (it stays in the query buffer).
    pub postponed: bool,
    /// Since when (unix seconds) the output passed the soft
    /// `client-output-buffer-limit` (see `server::pubsub`).
    pub obuf_soft_since: Option<i64>,
    /// Byte ranges of `reply` holding push data (pub/sub replies and
    /// messages, invalidations) written while this client's own request
    /// ran: CLIENT REPLY OFF/SKIP drops the reply but not these, as Redis
    /// sends pushes regardless. Cleared before each request.
    pub pushed: Vec<(usize, usize)>,
    /// Client-side caching mode; None when tracking is off (see `server::tracking`).
    pub tracking: Option<Box<super::tracking::ClientTracking>>,
    /// Bytes the busy-script poller read but did not consume (an incomplete
    /// command); the connection task takes them before reading the socket.
    pub pending_input: Vec<u8>,
}

impl Client {
    pub fn new(
        id: ClientId,
        addr: String,
        laddr: String,
        conn_kind: ConnKind,
        need_auth: bool,
    ) -> Client {
        let now = Instant::now();
        Client {
            id,
            reply: Reply::new(2),
            db: 0,
            name: None,
            lib_name: None,
            lib_ver: None,
            authenticated: !need_auth,
            user: "default".into(),
            addr,
            laddr,
            conn_kind,
            created: now,
            last_interaction: now,
            multi: None,
            watched: Vec::new(),
            channels: HashSet::new(),
            patterns: HashSet::new(),
            shard_channels: HashSet::new(),
            blocked: None,
            close_after_reply: false,
            reply_mode: ReplyMode::On,
            monitor: false,
            last_cmd: "NULL",
            unblocked: false,
            no_touch: false,
            no_evict: false,
            net_in: 0,
            net_out: 0,
            commands: 0,
            qbuf: 0,
            fd: -1,
            postponed: false,
            obuf_soft_since: None,
            pushed: Vec::new(),
            tracking: None,
            pending_input: Vec::new(),
        }
    }

    /// Subscriptions of every kind (what SUBSCRIBE replies count).
    pub fn subscription_count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// True when RESP2 pub/sub rules restrict the commands this client may run.
    pub fn in_pubsub_context(&self) -> bool {
        self.reply.resp == 2
            && (!self.channels.is_empty()
                || !self.patterns.is_empty()
                || !self.shard_channels.is_empty())
    }
}
