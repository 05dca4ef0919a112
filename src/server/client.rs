//! Per-connection client state: protocol, database, auth, transaction, subscriptions, blocking.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::time::Instant;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

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
    pub wake: Wake,
    /// Set by CLIENT KILL and output-limit checks; the task closes the socket.
    pub kill: Cell<bool>,
}

/// A one-permit wake-up for a connection task, as tokio's `Notify` with
/// `notify_one`, for the one data thread: a notification with no task
/// waiting is kept for the next wait. Its wait future is a pointer (tokio's
/// is 64 bytes, and every idle connection holds one).
#[derive(Default)]
pub struct Wake {
    permit: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl Wake {
    pub fn notify_one(&self) {
        self.permit.set(true);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    /// Completes once notified (at once if a notification is waiting).
    pub fn notified(&self) -> Notified<'_> {
        Notified(self)
    }
}

/// The future [`Wake::notified`] returns.
pub struct Notified<'a>(&'a Wake);

impl Future for Notified<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.permit.replace(false) {
            return Poll::Ready(());
        }
        self.0.waker.set(Some(cx.waker().clone()));
        Poll::Pending
    }
}

/// A set of names allocated on first insert: most clients subscribe to
/// nothing, and an empty `HashSet` is 48 bytes per connection (this is 8).
/// Reads see an empty set until then; a write allocates it.
#[derive(Default)]
// The box is the point: an empty set inline costs 48 bytes, a pointer 8.
#[allow(clippy::box_collection)]
pub struct LazySet(Option<Box<HashSet<Vec<u8>>>>);

static EMPTY_SET: std::sync::LazyLock<HashSet<Vec<u8>>> = std::sync::LazyLock::new(HashSet::new);

impl std::ops::Deref for LazySet {
    type Target = HashSet<Vec<u8>>;

    fn deref(&self) -> &HashSet<Vec<u8>> {
        self.0.as_deref().unwrap_or(&EMPTY_SET)
    }
}

impl LazySet {
    /// Without the shared empty set (whose first-use check costs more than
    /// this): the gate asks on every command.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|s| s.is_empty())
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |s| s.len())
    }
}

impl std::ops::DerefMut for LazySet {
    fn deref_mut(&mut self) -> &mut HashSet<Vec<u8>> {
        self.0.get_or_insert_with(Default::default)
    }
}

impl<'a> IntoIterator for &'a LazySet {
    type Item = &'a Vec<u8>;
    type IntoIter = std::collections::hash_set::Iter<'a, Vec<u8>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// `CLIENT SETINFO lib-name` / `lib-ver`.
#[derive(Default)]
pub struct LibInfo {
    pub name: Option<Vec<u8>>,
    pub ver: Option<Vec<u8>>,
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
    /// CLIENT SETINFO values; boxed, as few clients set them.
    pub lib: Option<Box<LibInfo>>,
    pub authenticated: bool,
    /// The ACL user (no allocation for `default`, every connection's).
    pub user: std::borrow::Cow<'static, str>,
    pub addr: String,
    /// Shared by the clients of one listener.
    pub laddr: std::rc::Rc<str>,
    pub conn_kind: ConnKind,
    pub created: Instant,
    pub last_interaction: Instant,
    pub multi: Option<Multi>,
    pub watched: Vec<WatchedKey>,
    pub channels: LazySet,
    pub patterns: LazySet,
    pub shard_channels: LazySet,
    /// Boxed: most clients never block, and every byte here is paid per connection.
    pub blocked: Option<Box<Blocked>>,
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
        laddr: impl Into<std::rc::Rc<str>>,
        conn_kind: ConnKind,
        need_auth: bool,
    ) -> Client {
        let now = Instant::now();
        Client {
            id,
            reply: Reply::new(2),
            db: 0,
            name: None,
            lib: None,
            authenticated: !need_auth,
            user: "default".into(),
            addr,
            laddr: laddr.into(),
            conn_kind,
            created: now,
            last_interaction: now,
            multi: None,
            watched: Vec::new(),
            channels: LazySet::default(),
            patterns: LazySet::default(),
            shard_channels: LazySet::default(),
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
    #[inline]
    pub fn in_pubsub_context(&self) -> bool {
        self.reply.resp == 2
            && (!self.channels.is_empty()
                || !self.patterns.is_empty()
                || !self.shard_channels.is_empty())
    }
}
