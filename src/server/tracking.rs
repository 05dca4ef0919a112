//! Client-side caching (Redis's tracking.c): remembering which clients read
//! which keys, and sending invalidation messages when those keys change.
//!
//! Invariants:
//! - `table[key]` holds the ids of clients that read `key` since it last
//!   changed (default mode). The entry is removed when the key is
//!   invalidated, so each read is reported at most once. Ids of clients that
//!   stopped tracking stay until then and are skipped, as in Redis.
//! - `items` is the sum of the sizes of the `table` sets (INFO's
//!   `tracking_total_items`).
//! - `prefixes[p].clients` are the BCAST clients registered for prefix `p`;
//!   each such client has `p` in its own `ClientTracking::prefixes`. Buckets
//!   with no clients are removed. `prefixes[p].keys` collects the keys under
//!   `p` changed since the last broadcast, with the client that changed them
//!   (for NOLOOP); [`broadcast`] sends and clears them.
//! - `pending` holds invalidations for the client running a command (its
//!   own writes): they are sent after its reply (after EXEC as a whole).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::client::Client;
use super::pubsub;
use super::Server;
use crate::db::ClientId;

/// One client's tracking mode (`CLIENT TRACKING on ...`).
#[derive(Debug, Default)]
pub struct ClientTracking {
    /// The client invalidations are sent to (0: this client).
    pub redirect: ClientId,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// `CLIENT CACHING yes|no` was given for the next command.
    pub caching: bool,
    /// The redirect client went away.
    pub broken_redir: bool,
    /// BCAST prefixes, sorted as Redis's radix tree lists them.
    pub prefixes: BTreeSet<Vec<u8>>,
}

/// A BCAST prefix: who listens, and what changed since the last broadcast.
#[derive(Default)]
struct Bucket {
    clients: BTreeSet<ClientId>,
    /// Changed key → the client that changed it (0 for expiry and eviction).
    keys: BTreeMap<Vec<u8>, ClientId>,
}

/// Server-wide tracking state (see the module invariants).
#[derive(Default)]
pub struct Tracking {
    table: HashMap<Vec<u8>, BTreeSet<ClientId>>,
    items: usize,
    prefixes: BTreeMap<Vec<u8>, Bucket>,
    /// Clients with tracking on (INFO `tracking_clients`).
    pub clients: usize,
    pending: Vec<(ClientId, Option<Vec<u8>>)>,
    /// Rounds in a row `tracking-table-max-keys` could not be met.
    over_limit_rounds: usize,
    /// The client whose request is running (Redis's `server.current_client`):
    /// commands a script runs act for it.
    caller: ClientId,
    /// Whether that client's reads are to be remembered (mode, OPTIN/OPTOUT
    /// and CLIENT CACHING applied), for the commands its scripts run.
    caller_tracks_reads: bool,
    /// That client's mode (see [`Mode`]), for changes its scripts make.
    caller_mode: Option<Mode>,
}

/// What invalidation needs to know of a tracking client.
#[derive(Clone, Copy, Debug)]
struct Mode {
    bcast: bool,
    noloop: bool,
}

impl Mode {
    fn of(c: &Client) -> Option<Mode> {
        c.tracking.as_deref().map(|t| Mode {
            bcast: t.bcast,
            noloop: t.noloop,
        })
    }
}

/// The tracking mode of client `id` (None: not tracking or unreachable).
/// The running script's caller is busy, so its mode comes from the note
/// taken before its request.
fn mode(srv: &Server, current: &mut Client, id: ClientId) -> Option<Mode> {
    if id != current.id && id == srv.tracking.caller {
        if let Some(cell) = srv.clients.get(&id) {
            if cell.state.try_borrow().is_err() {
                return srv.tracking.caller_mode;
            }
        }
    }
    srv.with_client(id, current, |c| Mode::of(c)).flatten()
}

impl Tracking {
    /// True when no invalidation can be due: the fast path for every write.
    #[inline]
    pub fn idle(&self) -> bool {
        self.table.is_empty() && self.prefixes.is_empty()
    }

    /// INFO figures: tracking_total_keys, tracking_total_items, tracking_total_prefixes.
    pub fn totals(&self) -> (usize, usize, usize) {
        (self.table.len(), self.items, self.prefixes.len())
    }
}

/// What an invalidation message carries.
enum Payload<'a> {
    Keys(&'a [&'a [u8]]),
    /// FLUSHDB / FLUSHALL: every key; a null.
    Null,
}

/// Options parsed from `CLIENT TRACKING on ...`.
pub struct Options {
    pub redirect: ClientId,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    pub prefixes: Vec<Vec<u8>>,
}

/// Turns tracking on for `c` (Redis's `enableTracking`). Options were
/// checked by the caller. BCAST prefixes add to the ones already set.
pub fn enable(srv: &mut Server, c: &mut Client, o: Options) {
    let t = c.tracking.get_or_insert_with(|| {
        srv.tracking.clients += 1;
        Box::default()
    });
    t.redirect = o.redirect;
    t.broken_redir = false;
    t.bcast = o.bcast;
    t.optin = o.optin;
    t.optout = o.optout;
    t.noloop = o.noloop;
    if o.bcast {
        let mut list = o.prefixes;
        if list.is_empty() {
            list.push(Vec::new());
        }
        for p in list {
            t.prefixes.insert(p.clone());
            srv.tracking
                .prefixes
                .entry(p)
                .or_default()
                .clients
                .insert(c.id);
        }
    }
}

/// Turns tracking off (CLIENT TRACKING off, RESET, disconnect).
pub fn disable(srv: &mut Server, c: &mut Client) {
    let Some(t) = c.tracking.take() else {
        return;
    };
    let tr = &mut srv.tracking;
    tr.clients -= 1;
    for p in &t.prefixes {
        if let Some(b) = tr.prefixes.get_mut(p) {
            b.clients.remove(&c.id);
            if b.clients.is_empty() {
                tr.prefixes.remove(p);
            }
        }
    }
}

/// After a read-only command: remembers the keys it read for a client
/// tracking in default mode, honouring OPTIN/OPTOUT and CLIENT CACHING
/// (Redis's `trackingRememberKeys`).
pub fn remember_keys(srv: &mut Server, c: &Client, keys: impl Iterator<Item = Vec<u8>>) {
    if !c.tracking.as_deref().is_some_and(tracks_reads) {
        return;
    }
    let tr = &mut srv.tracking;
    for k in keys {
        if tr.table.entry(k).or_default().insert(c.id) {
            tr.items += 1;
        }
    }
}

/// Before each request: notes the client it runs for (see `Tracking::caller`).
#[inline]
pub fn before_dispatch(srv: &mut Server, c: &Client) {
    let tr = &mut srv.tracking;
    tr.caller = c.id;
    tr.caller_tracks_reads = c.tracking.as_deref().is_some_and(tracks_reads);
    tr.caller_mode = Mode::of(c);
}

/// The client a change is made for: the script's caller for commands a
/// script runs, else the client itself.
#[inline]
pub fn acting_client(srv: &Server, c: &Client) -> ClientId {
    if c.conn_kind == super::client::ConnKind::Script {
        srv.tracking.caller
    } else {
        c.id
    }
}

/// True when a client's next reads are remembered (default mode, with
/// OPTIN + CACHING yes, or OPTOUT without CACHING no).
fn tracks_reads(t: &ClientTracking) -> bool {
    !(t.bcast || (t.optin && !t.caching) || (t.optout && t.caching))
}

/// After every command (in EXEC and scripts too): a read-only command's
/// keys are remembered for a tracking client; a FLUSHDB / FLUSHALL that
/// succeeded invalidates everything (see [`on_flush`]).
#[inline]
pub fn after_call(
    srv: &mut Server,
    c: &mut Client,
    spec: &crate::command::CommandSpec,
    args: &crate::command::Args,
    ok: bool,
) {
    use crate::command::flags::{FLUSHES, READONLY, RUNS_SCRIPT};
    // The read-only script commands track nothing themselves: their keys
    // are remembered when the script reads (Redis's call() excludes them).
    if spec.flags & (READONLY | RUNS_SCRIPT) == READONLY {
        if c.conn_kind == super::client::ConnKind::Script {
            if srv.tracking.caller_tracks_reads {
                // A script that reads tracks every key it declared, for
                // the client that ran it.
                let id = srv.tracking.caller;
                let tr = &mut srv.tracking;
                for key in crate::script::declared_keys() {
                    if tr.table.entry(key).or_default().insert(id) {
                        tr.items += 1;
                    }
                }
            }
        } else if c.tracking.is_some() {
            remember_read(srv, c, spec, args);
        }
    }
    if ok && spec.has(FLUSHES) && (srv.tracking.clients > 0 || !srv.tracking.idle()) {
        on_flush(srv, c);
    }
}

/// After a read-only command ran: remembers the keys of its arguments.
pub fn remember_read(
    srv: &mut Server,
    c: &Client,
    spec: &crate::command::CommandSpec,
    args: &crate::command::Args,
) {
    let keys = spec.key_positions(args);
    remember_keys(srv, c, keys.into_iter().map(|i| args.at(i).to_vec()));
}

/// After each request: `CLIENT CACHING` applies to the next command only
/// (kept while queueing a transaction, and across CLIENT subcommands).
pub fn after_dispatch(c: &mut Client, args: &crate::command::Args) {
    if let Some(t) = c.tracking.as_deref_mut() {
        if t.caching && c.multi.is_none() && !args.at(0).eq_ignore_ascii_case(b"client") {
            t.caching = false;
        }
    }
}

/// A key changed (written, deleted, expired): invalidates it for the
/// clients that read it and queues it for BCAST prefixes that cover it
/// (Redis's `trackingInvalidateKey`). `by` is the client that changed it
/// (0 for expiry); `current` the client whose command is running.
pub fn invalidate_key(srv: &mut Server, current: &mut Client, by: ClientId, key: &[u8]) {
    let running = acting_client(srv, current);
    invalidate_key_for(srv, current, by, key, Some(running));
}

/// [`invalidate_key`] with the client whose command is running, if any:
/// that client's own invalidation waits for its reply, and NOLOOP skips it.
/// None between commands (Redis's `current_client` is NULL in beforeSleep).
fn invalidate_key_for(
    srv: &mut Server,
    current: &mut Client,
    by: ClientId,
    key: &[u8],
    running: Option<ClientId>,
) {
    let tr = &mut srv.tracking;
    if !tr.prefixes.is_empty() {
        for (p, b) in tr.prefixes.iter_mut() {
            if key.starts_with(p) {
                b.keys.insert(key.to_vec(), by);
            }
        }
    }
    let Some(ids) = tr.table.remove(key) else {
        return;
    };
    tr.items -= ids.len();
    for id in ids {
        let Some(m) = mode(srv, current, id) else {
            continue;
        };
        if m.bcast || (m.noloop && Some(id) == running) {
            continue;
        }
        if Some(id) == running {
            srv.tracking.pending.push((id, Some(key.to_vec())));
        } else {
            send(srv, current, id, Payload::Keys(&[key]));
        }
    }
}

/// FLUSHDB / FLUSHALL: every tracking client is told that everything
/// changed (a null), and the table is emptied (Redis's
/// `trackingInvalidateKeysOnFlush`). Call after the flush.
pub fn on_flush(srv: &mut Server, current: &mut Client) {
    if srv.tracking.clients > 0 {
        let mut ids: Vec<ClientId> = srv.clients.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            if mode(srv, current, id).is_none() {
                continue;
            }
            if id == acting_client(srv, current) {
                srv.tracking.pending.push((id, None));
            } else {
                send(srv, current, id, Payload::Null);
            }
        }
    }
    let tr = &mut srv.tracking;
    tr.table.clear();
    tr.items = 0;
}

/// After a top-level command (or EXEC): sends the running client the
/// invalidations its own command caused, one message per key.
/// Runs after every command: the empty check is inlined, the work is not.
#[inline]
pub fn send_pending(srv: &mut Server, current: &mut Client) {
    if !srv.tracking.pending.is_empty() {
        send_pending_now(srv, current);
    }
}

#[inline(never)]
fn send_pending_now(srv: &mut Server, current: &mut Client) {
    let pending = std::mem::take(&mut srv.tracking.pending);
    for (id, key) in pending {
        match &key {
            Some(k) => send(srv, current, id, Payload::Keys(&[k])),
            None => send(srv, current, id, Payload::Null),
        }
    }
}

/// Once per event-loop turn (Redis's `beforeSleep`): sends BCAST
/// invalidations collected since the last turn, then keeps the tracking
/// table under `tracking-table-max-keys`.
pub fn before_sleep(srv: &mut Server, current: &mut Client) {
    if srv.tracking.clients == 0 {
        return;
    }
    broadcast(srv, current);
    limit_table(srv, current);
}

/// Sends each BCAST client the changed keys under its prefixes, skipping
/// keys it changed itself when it asked for NOLOOP.
fn broadcast(srv: &mut Server, current: &mut Client) {
    // (listeners, changed keys) per prefix with news.
    type Work = (Vec<ClientId>, BTreeMap<Vec<u8>, ClientId>);
    let mut work: Vec<Work> = Vec::new();
    for b in srv.tracking.prefixes.values_mut() {
        if !b.keys.is_empty() {
            work.push((
                b.clients.iter().copied().collect(),
                std::mem::take(&mut b.keys),
            ));
        }
    }
    for (clients, keys) in work {
        for id in clients {
            let noloop = srv
                .with_client(id, current, |c| {
                    c.tracking.as_deref().is_some_and(|t| t.noloop)
                })
                .unwrap_or(false);
            let list: Vec<&[u8]> = keys
                .iter()
                .filter(|(_, &by)| !(noloop && by == id))
                .map(|(k, _)| &k[..])
                .collect();
            if !list.is_empty() {
                send(srv, current, id, Payload::Keys(&list));
            }
        }
    }
}

/// Evicts keys from the tracking table while it holds more than
/// `tracking-table-max-keys`, invalidating them as if they changed; the
/// effort grows each turn the limit is still exceeded
/// (Redis's `trackingLimitUsedSlots`).
fn limit_table(srv: &mut Server, current: &mut Client) {
    let max = srv.config.tracking_table_max_keys as usize;
    if max == 0 || srv.tracking.table.len() <= max {
        srv.tracking.over_limit_rounds = 0;
        return;
    }
    let mut effort = 100 * (srv.tracking.over_limit_rounds + 1);
    while effort > 0 {
        effort -= 1;
        let Some(key) = srv.tracking.table.keys().next().cloned() else {
            break;
        };
        // Between commands: no client is running, so NOLOOP skips nobody.
        invalidate_key_for(srv, current, 0, &key, None);
        if srv.tracking.table.len() <= max {
            srv.tracking.over_limit_rounds = 0;
            return;
        }
    }
    srv.tracking.over_limit_rounds += 1;
}

/// Sends one invalidation to tracking client `id`, through its redirect
/// when it has one (Redis's `sendTrackingMessage`): a RESP3 push
/// `invalidate`, or for a RESP2 redirect target in pub/sub mode a message
/// on `__redis__:invalidate`. A RESP2 client without redirect gets nothing.
fn send(srv: &mut Server, current: &mut Client, id: ClientId, payload: Payload) {
    let Some((redirect, resp)) = srv.with_client(id, current, |c| {
        (
            c.tracking.as_deref().map_or(0, |t| t.redirect),
            c.reply.resp,
        )
    }) else {
        return;
    };
    let mut value = Vec::new();
    match payload {
        Payload::Null => value.extend_from_slice(if resp >= 3 { b"_\r\n" } else { b"$-1\r\n" }),
        Payload::Keys(keys) => {
            let f = pubsub::frame(keys);
            value.extend_from_slice(&f);
        }
    }
    let mut dest = id;
    if redirect != 0 {
        if !srv.clients.contains_key(&redirect) && redirect != current.id {
            srv.with_client(id, current, |c| {
                if let Some(t) = c.tracking.as_deref_mut() {
                    t.broken_redir = true;
                }
            });
            if resp >= 3 {
                let mut f = pubsub::frame(&[b"tracking-redir-broken"]);
                f[1] = b'2';
                f.push(b':');
                f.extend_from_slice(itoa::Buffer::new().format(redirect).as_bytes());
                f.extend_from_slice(b"\r\n");
                pubsub::deliver(srv, current, id, &f);
            }
            return;
        }
        dest = redirect;
    }
    let Some((dest_resp3, dest_subscribed)) = srv.with_client(dest, current, |c| {
        (
            c.reply.resp3(),
            c.subscription_count() > 0 || !c.shard_channels.is_empty(),
        )
    }) else {
        return;
    };
    let mut f = if dest_resp3 {
        let mut f = pubsub::frame(&[b"invalidate"]);
        f[1] = b'2';
        f
    } else if redirect != 0 && dest_subscribed {
        let mut f = pubsub::frame(&[b"message", b"__redis__:invalidate"]);
        f[1] = b'3';
        f
    } else {
        return;
    };
    f.extend_from_slice(&value);
    pubsub::deliver(srv, current, dest, &f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::client::ConnKind;

    /// xorshift64: enough randomness for a model test.
    struct Prng(u64);
    impl Prng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn client(id: ClientId) -> Client {
        Client::new(id, String::new(), String::new(), ConnKind::Tcp, false)
    }

    /// Random reads, writes and mode switches of a few clients against a
    /// model (key -> readers since its last change): the table holds exactly
    /// the model's pairs, `items` counts them, and a change empties a key.
    #[test]
    fn table_matches_a_model() {
        let mut srv = Server::new(crate::Config::default());
        let mut clients: Vec<Client> = (1..=4).map(client).collect();
        let mut model: std::collections::BTreeMap<Vec<u8>, BTreeSet<ClientId>> = Default::default();
        let mut rng = Prng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..5000 {
            let ci = (rng.next() % 4) as usize;
            let key = format!("k{}", rng.next() % 12).into_bytes();
            match rng.next() % 6 {
                0 => {
                    let on = clients[ci].tracking.is_some();
                    if on {
                        disable(&mut srv, &mut clients[ci]);
                    } else {
                        let o = Options {
                            redirect: 0,
                            bcast: false,
                            optin: false,
                            optout: false,
                            noloop: false,
                            prefixes: Vec::new(),
                        };
                        enable(&mut srv, &mut clients[ci], o);
                    }
                }
                1..=3 => {
                    let c = &clients[ci];
                    if c.tracking.is_some() {
                        model.entry(key.clone()).or_default().insert(c.id);
                    }
                    remember_keys(&mut srv, c, std::iter::once(key));
                }
                _ => {
                    let by = clients[ci].id;
                    invalidate_key(&mut srv, &mut clients[ci], by, &key);
                    model.remove(&key);
                    srv.tracking.pending.clear();
                }
            }
            let tr = &srv.tracking;
            let table: std::collections::BTreeMap<Vec<u8>, BTreeSet<ClientId>> = tr
                .table
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(table, model);
            assert_eq!(tr.items, model.values().map(|s| s.len()).sum::<usize>());
            assert_eq!(
                tr.clients,
                clients.iter().filter(|c| c.tracking.is_some()).count()
            );
        }
    }

    #[test]
    fn bcast_prefix_buckets_follow_their_clients() {
        let mut srv = Server::new(crate::Config::default());
        let mut a = client(1);
        let mut b = client(2);
        let opts = |p: &[&str]| Options {
            redirect: 0,
            bcast: true,
            optin: false,
            optout: false,
            noloop: false,
            prefixes: p.iter().map(|s| s.as_bytes().to_vec()).collect(),
        };
        enable(&mut srv, &mut a, opts(&["user:", "job:"]));
        enable(&mut srv, &mut b, opts(&["user:"]));
        assert_eq!(srv.tracking.totals().2, 2);
        invalidate_key(&mut srv, &mut a, 1, b"user:7");
        invalidate_key(&mut srv, &mut a, 1, b"other");
        let bucket = &srv.tracking.prefixes[&b"user:"[..]];
        assert_eq!(bucket.keys.len(), 1);
        assert_eq!(bucket.clients.len(), 2);
        disable(&mut srv, &mut a);
        assert_eq!(srv.tracking.totals().2, 1);
        disable(&mut srv, &mut b);
        assert!(srv.tracking.idle());
        assert_eq!(srv.tracking.clients, 0);
    }
}
