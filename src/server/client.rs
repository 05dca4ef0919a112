//! Per-connection client state: protocol, database, auth, transaction, subscriptions, blocking.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;

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

impl LazySet {
    /// Takes the names out, leaving no allocation behind (and making none
    /// for a client that never subscribed).
    pub fn take(&mut self) -> HashSet<Vec<u8>> {
        self.0.take().map(|s| *s).unwrap_or_default()
    }
}

impl<'a> IntoIterator for &'a LazySet {
    type Item = &'a Vec<u8>;
    type IntoIter = std::collections::hash_set::Iter<'a, Vec<u8>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A list allocated on first push: most clients never WATCH, are sent no
/// pushes during their own commands and leave no input to the busy-script
/// poller, and an empty `Vec` inline is 24 bytes per connection (this is 8).
/// Reads see an empty slice until then.
// The box is the point, as for `LazySet`.
#[allow(clippy::box_collection)]
pub struct LazyVec<T>(Option<Box<Vec<T>>>);

impl<T> Default for LazyVec<T> {
    fn default() -> Self {
        LazyVec(None)
    }
}

impl<T> std::ops::Deref for LazyVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl<'a, T> IntoIterator for &'a LazyVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T> From<Vec<T>> for LazyVec<T> {
    /// Keeps no allocation for an empty vector.
    fn from(v: Vec<T>) -> Self {
        LazyVec((v.capacity() > 0).then(|| Box::new(v)))
    }
}

impl<T> LazyVec<T> {
    /// The vector, allocated if it was not.
    pub fn vec_mut(&mut self) -> &mut Vec<T> {
        self.0.get_or_insert_with(Default::default)
    }

    pub fn push(&mut self, item: T) {
        self.vec_mut().push(item);
    }

    /// Empties the list, keeping its allocation if it has one.
    pub fn clear(&mut self) {
        if let Some(v) = &mut self.0 {
            v.clear();
        }
    }

    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        if let Some(v) = &mut self.0 {
            v.retain(keep);
        }
    }

    /// Takes the items out, leaving no allocation behind.
    pub fn take(&mut self) -> Vec<T> {
        self.0.take().map(|v| *v).unwrap_or_default()
    }
}

impl LazyVec<u8> {
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        if !bytes.is_empty() {
            self.vec_mut().extend_from_slice(bytes);
        }
    }
}

/// A connection's part in replication.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReplRole {
    #[default]
    None,
    /// A replica of this server (after SYNC/PSYNC).
    Replica,
    /// This server's master (the replica side's link).
    Master,
}

/// The peer's address (CLIENT LIST `addr=`), kept as the address and
/// formatted when shown: a text per connection cost an allocation (and a
/// second, freed, while it was formatted).
#[derive(Clone, Debug, Default)]
pub enum Peer {
    /// Pseudo-clients (scripts, the cron): shown as an empty text.
    #[default]
    None,
    V4(std::net::SocketAddrV4),
    /// Boxed: inline it would make every client 24 bytes larger.
    V6(Box<std::net::SocketAddrV6>),
    /// A text as given: a unix socket's `path:0`, shared by the clients of
    /// its listener.
    Text(std::rc::Rc<String>),
}

impl Peer {
    /// True for a TCP peer Redis 7.0.15 counts as local (`islocalClient`:
    /// the peer's IP text is exactly `127.0.0.1` or `::1`; so `127.0.0.2`
    /// and `::ffff:127.0.0.1` are not). Protected mode and the `local` value
    /// of `enable-*-command` / `enable-protected-configs` ask it.
    pub fn is_local(&self) -> bool {
        match self {
            Peer::None => false,
            Peer::V4(a) => *a.ip() == std::net::Ipv4Addr::LOCALHOST,
            // inet_ntop leaves the scope out: `::1%3` reads `::1`.
            Peer::V6(a) => *a.ip() == std::net::Ipv6Addr::LOCALHOST,
            Peer::Text(t) => t.starts_with("127.0.0.1:") || t.starts_with("[::1]:"),
        }
    }
}

impl std::fmt::Display for Peer {
    /// The text Redis shows: `ip:port`, `[ipv6]:port`, or the text given.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::None => Ok(()),
            Peer::V4(a) => write!(f, "{a}"),
            Peer::V6(a) => write!(f, "{a}"),
            Peer::Text(t) => f.write_str(t),
        }
    }
}

impl From<std::net::SocketAddr> for Peer {
    fn from(a: std::net::SocketAddr) -> Peer {
        match a {
            std::net::SocketAddr::V4(a) => Peer::V4(a),
            std::net::SocketAddr::V6(a) => Peer::V6(Box::new(a)),
        }
    }
}

impl From<String> for Peer {
    /// An empty text is no address.
    fn from(t: String) -> Peer {
        if t.is_empty() {
            Peer::None
        } else {
            Peer::Text(std::rc::Rc::new(t))
        }
    }
}

/// The ACL user a client is authenticated as: no allocation for `default`,
/// every connection's, and 16 bytes (a `Cow<str>` is 24).
#[derive(Clone, Debug, Default)]
pub struct UserName(Option<Box<str>>);

impl UserName {
    #[inline]
    pub fn is_default(&self) -> bool {
        self.0.is_none()
    }

    pub fn as_str(&self) -> &str {
        self.0.as_deref().unwrap_or("default")
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.as_str().as_bytes()
    }
}

impl std::fmt::Display for UserName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for UserName {
    fn from(name: &str) -> UserName {
        UserName((name != "default").then(|| name.into()))
    }
}

impl From<String> for UserName {
    fn from(name: String) -> UserName {
        UserName((name != "default").then(|| name.into_boxed_str()))
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
    /// Bytes of the queued commands' arguments (kept as they are queued:
    /// memory accounting must not walk the queue on every command).
    pub argv_mem: usize,
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
    /// A boxed slice: 8 bytes fewer than a `Vec` in every client.
    pub name: Option<Box<[u8]>>,
    /// CLIENT SETINFO values; boxed, as few clients set them.
    pub lib: Option<Box<LibInfo>>,
    pub authenticated: bool,
    pub user: UserName,
    pub addr: Peer,
    /// Shared by the clients of one listener.
    pub laddr: std::rc::Rc<str>,
    pub conn_kind: ConnKind,
    /// The server's time (unix ms) when the client connected: CLIENT LIST's age.
    pub created: i64,
    /// The server's time (unix ms, `crate::clock`) of the client's last
    /// request: CLIENT LIST's idle, the `timeout` check (which follows the
    /// server's clock, so a test moving it can time a client out).
    pub last_interaction: i64,
    /// Boxed, as most clients never send MULTI.
    pub multi: Option<Box<Multi>>,
    pub watched: LazyVec<WatchedKey>,
    pub channels: LazySet,
    pub patterns: LazySet,
    pub shard_channels: LazySet,
    /// Boxed: most clients never block, and every byte here is paid per connection.
    pub blocked: Option<Box<Blocked>>,
    /// Answered, then closed (QUIT, protocol errors).
    pub close_after_reply: bool,
    /// SCRIPT DEBUG YES / SYNC: this client's next EVAL starts a debugging session.
    pub lua_debug: crate::script::ldb::Mode,
    pub reply_mode: ReplyMode,
    pub monitor: bool,
    /// A replica this server feeds, or the master this server replicates
    /// (CLIENT LIST flags S/M, types replica/master; see `repl`).
    pub repl_role: ReplRole,
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
    /// Bytes the connection's own query buffer has allocated (its
    /// capacity; the shared read buffer is nobody's), for memory accounting.
    pub qbuf_cap: usize,
    /// Bytes of output taken out of `reply` and being written (the
    /// connection task's write buffer): still this client's memory.
    pub out_inflight: usize,
    /// This client's memory as last counted into the server's total
    /// (see `server::client_mem`).
    pub mem_usage: usize,
    /// The socket's file descriptor (CLIENT LIST fd, and the busy-script
    /// poller in `script::busy`, which reads and answers other clients while
    /// the data thread is inside Lua); -1 when there is none.
    pub fd: i32,
    /// A command is waiting for CLIENT PAUSE to end (it stays in the query buffer).
    pub postponed: bool,
    /// Since when (unix seconds) the output passed the soft
    /// `client-output-buffer-limit` (see `server::pubsub`).
    /// (Unix seconds fit 32 bits until 2106; with the other small fields
    /// this takes no room of its own.)
    pub obuf_soft_since: Option<u32>,
    /// Byte ranges of `reply` holding push data (pub/sub replies and
    /// messages, invalidations) written while this client's own request
    /// ran: CLIENT REPLY OFF/SKIP drops the reply but not these, as Redis
    /// sends pushes regardless. Cleared before each request.
    pub pushed: LazyVec<(usize, usize)>,
    /// Client-side caching mode; None when tracking is off (see `server::tracking`).
    pub tracking: Option<Box<super::tracking::ClientTracking>>,
    /// Bytes the busy-script poller read but did not consume (an incomplete
    /// command); the connection task takes them before reading the socket.
    pub pending_input: LazyVec<u8>,
    /// ASKING, READONLY and the routed slot (cluster mode).
    pub cluster: crate::cluster::redirect::ClientFlags,
}

impl Client {
    pub fn new(
        id: ClientId,
        addr: impl Into<Peer>,
        laddr: impl Into<std::rc::Rc<str>>,
        conn_kind: ConnKind,
        need_auth: bool,
    ) -> Client {
        let now = crate::clock::real_now_us() / 1000;
        Client {
            id,
            reply: Reply::new(2),
            db: 0,
            name: None,
            lib: None,
            authenticated: !need_auth,
            user: "default".into(),
            addr: addr.into(),
            laddr: laddr.into(),
            conn_kind,
            created: now,
            last_interaction: now,
            multi: None,
            watched: LazyVec::default(),
            channels: LazySet::default(),
            patterns: LazySet::default(),
            shard_channels: LazySet::default(),
            blocked: None,
            close_after_reply: false,
            lua_debug: crate::script::ldb::Mode::Off,
            reply_mode: ReplyMode::On,
            monitor: false,
            repl_role: ReplRole::None,
            last_cmd: "NULL",
            unblocked: false,
            no_touch: false,
            no_evict: false,
            net_in: 0,
            net_out: 0,
            commands: 0,
            qbuf: 0,
            qbuf_cap: 0,
            out_inflight: 0,
            mem_usage: 0,
            fd: -1,
            postponed: false,
            obuf_soft_since: None,
            pushed: LazyVec::default(),
            tracking: None,
            pending_input: LazyVec::default(),
            cluster: Default::default(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_shows_the_socket_address_text() {
        for text in [
            "127.0.0.1:6379",
            "10.1.2.3:40000",
            "[::1]:5",
            "[fe80::1%2]:7",
        ] {
            let a: std::net::SocketAddr = text.parse().unwrap();
            assert_eq!(Peer::from(a).to_string(), a.to_string());
        }
        assert_eq!(Peer::from(String::new()).to_string(), "");
        assert_eq!(Peer::from("/tmp/s:0".to_string()).to_string(), "/tmp/s:0");
    }

    #[test]
    fn peer_is_local_as_redis_compares_the_ip_text() {
        let tcp = |t: &str| Peer::from(t.parse::<std::net::SocketAddr>().unwrap());
        assert!(tcp("127.0.0.1:1").is_local());
        assert!(tcp("[::1]:1").is_local());
        assert!(tcp("[::1%3]:1").is_local());
        // Loopback addresses other than these two are not local to Redis
        // (redis-server 7.0.15 denies 127.0.0.2 in protected mode).
        assert!(!tcp("127.0.0.2:1").is_local());
        assert!(!tcp("127.9.9.9:1").is_local());
        assert!(!tcp("[::ffff:127.0.0.1]:1").is_local());
        assert!(!tcp("10.0.0.1:1").is_local());
        assert!(!tcp("[::2]:1").is_local());
        assert!(Peer::from("127.0.0.1:2".to_string()).is_local());
        assert!(!Peer::from("127.0.0.12:2".to_string()).is_local());
        assert!(!Peer::from("/tmp/s:0".to_string()).is_local());
        assert!(!Peer::None.is_local());
    }

    #[test]
    fn user_name_default_holds_nothing() {
        assert_eq!(UserName::default().as_str(), "default");
        assert!(UserName::from("default").0.is_none());
        assert!(UserName::from("default".to_string()).0.is_none());
        assert_eq!(UserName::from("alice".to_string()).to_string(), "alice");
    }

    #[test]
    fn lazy_vec_allocates_on_first_push_only() {
        let mut v: LazyVec<u8> = LazyVec::default();
        v.clear();
        v.retain(|_| false);
        v.extend_from_slice(b"");
        assert!(v.0.is_none() && v.is_empty());
        v.extend_from_slice(b"ab");
        v.push(b'c');
        assert_eq!(&*v, b"abc");
        assert_eq!(v.take(), b"abc");
        assert!(v.0.is_none());
        assert!(LazyVec::<u8>::from(Vec::new()).0.is_none());
        assert_eq!(&*LazyVec::from(b"x".to_vec()), b"x");
        let mut s = LazySet::default();
        assert!(s.take().is_empty() && s.0.is_none());
    }

    /// Every idle connection pays for a `Client` (in its `Rc<ClientCell>`):
    /// rarely used parts live behind pointers. At 304 bytes (a 360-byte
    /// `Rc` allocation) it measured 1,244 bytes per idle connection (with
    /// the task and tokio's registration) on `compat/bench_conns.py
    /// --no-ping`, below Redis's ~1,420. The memory-accounting fields
    /// (`qbuf_cap`, `out_inflight`, `mem_usage`) took it to 328: the `Rc`
    /// allocation, 384 bytes, stays in the jemalloc size class 360 was in.
    #[test]
    fn client_stays_within_its_budget() {
        let size = std::mem::size_of::<Client>();
        assert!(
            size <= 328,
            "Client is {size} bytes: box what few clients use"
        );
        // The Rc's two counts and the cell: jemalloc's 384-byte class.
        let rc = std::mem::size_of::<ClientCell>() + 2 * std::mem::size_of::<usize>();
        assert!(rc <= 384, "Rc<ClientCell> is {rc} bytes");
        assert!(std::mem::size_of::<Peer>() <= 16);
    }
}
