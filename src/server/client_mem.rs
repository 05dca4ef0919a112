//! Client memory (Redis's `getClientMemoryUsage`), its running total, and client eviction under `maxmemory-clients` (Redis's `evictClients`).
//!
//! Each client's memory is counted into [`Tracked::total`] at the points
//! Redis counts it (after a read and the commands it ran, after each
//! command, after a write, when another client's command gives it output:
//! a PUBLISH, an invalidation) while client eviction is on, and once a
//! second for every client by the cron (so INFO's `mem_clients_normal` is
//! current to the second when it is off). Invariant: `total` is the sum of
//! the `mem_usage` of the clients in the server's registry; a client
//! leaving (or evicted) takes its `mem_usage` out.
//!
//! While the total reaches the limit, the clients using the most memory
//! are closed first. Redis keeps clients in buckets by the power of two of
//! their memory and empties the top bucket first, in the order clients
//! entered it; Oxidis sorts the candidates by memory when it has to evict
//! (rare, and only then does it walk the clients), so the largest always
//! goes first, which the buckets approximate.

use std::mem::size_of;

use super::client::{Client, ClientCell, Queued, WatchedKey};
use super::Server;
use crate::db::ClientId;

/// Pending output Redis keeps in a client's fixed reply buffer before it
/// chains reply blocks: CLIENT LIST's `obl` counts up to this, `oll` and
/// `omem` the rest, in blocks of this size.
const REPLY_CHUNK: usize = 16 * 1024;
/// The least limit in effect (Redis's: a tiny `maxmemory-clients` would
/// leave no client able to talk to the server).
const MIN_LIMIT: u64 = 128 * 1024;
/// Counted per subscription (the set's slot and the name's header; the
/// name's bytes are left out, as Redis counts only its pointers).
const PER_SUBSCRIPTION: usize = size_of::<Vec<u8>>() + 8;
/// Counted per tracking prefix: Redis's estimate per radix tree node.
const PER_PREFIX: usize = 32;

/// The server's running count of client memory.
#[derive(Default)]
pub struct Tracked {
    /// Sum of the clients' `mem_usage`: Redis's normal and pub/sub classes
    /// only (replica and master links count nothing here and are never
    /// evicted, as Redis's `clientEvictionAllowed`).
    pub total: u64,
    /// The limit in bytes now, 0 when client eviction is off.
    pub limit: u64,
    /// Largest query buffer and output seen by the cron, per second of the
    /// last 8 (INFO `client_recent_max_input_buffer` and `..._output_buffer`).
    recent_in: [usize; 8],
    recent_out: [usize; 8],
}

impl Tracked {
    /// The largest query buffer and output of the last few seconds.
    pub fn recent_max(&self) -> (usize, usize) {
        (
            self.recent_in.iter().copied().max().unwrap_or(0),
            self.recent_out.iter().copied().max().unwrap_or(0),
        )
    }
}

/// The client eviction limit `maxmemory-clients` sets: bytes, or (stored
/// negative) a percentage of `maxmemory`, which is no limit without one.
pub fn limit_of(maxmemory_clients: i64, maxmemory: u64) -> u64 {
    let bytes = if maxmemory_clients < 0 {
        if maxmemory == 0 {
            return 0;
        }
        (maxmemory as f64 * (-maxmemory_clients) as f64 / 100.0) as u64
    } else {
        maxmemory_clients as u64
    };
    if bytes == 0 {
        0
    } else {
        bytes.max(MIN_LIMIT)
    }
}

/// Pending output as CLIENT LIST shows it.
pub struct Output {
    /// Bytes within the first reply block (`obl`).
    pub obl: usize,
    /// Blocks beyond it (`oll`) and their bytes (`omem`).
    pub oll: usize,
    pub omem: usize,
}

/// The client's pending output: what its commands queued and what is
/// being written.
pub fn output(c: &Client) -> Output {
    let pending = c.reply.buf.len() + c.out_inflight;
    let obl = pending.min(REPLY_CHUNK);
    let omem = pending - obl;
    Output {
        obl,
        oll: omem.div_ceil(REPLY_CHUNK),
        omem,
    }
}

/// MULTI's share (CLIENT LIST `multi-mem`): the queued commands'
/// arguments and slots, and the WATCHed keys' entries (their names aside,
/// as Redis).
pub fn multi_mem(c: &Client) -> usize {
    let queued = c
        .multi
        .as_ref()
        .map_or(0, |m| m.argv_mem + m.queue.capacity() * size_of::<Queued>());
    queued + c.watched.len() * size_of::<WatchedKey>()
}

/// Everything the client holds (CLIENT LIST `tot-mem`): its state, query
/// buffer, the running command's arguments (`argv_mem`, 0 between
/// commands), output buffers, MULTI state, subscriptions and tracking
/// prefixes.
pub fn usage(c: &Client, argv_mem: usize) -> usize {
    let subs = c.channels.len() + c.patterns.len() + c.shard_channels.len();
    let prefixes = c.tracking.as_ref().map_or(0, |t| t.prefixes.len());
    use super::alloc::block_size;
    size_of::<ClientCell>()
        + block_size(c.qbuf_cap)
        + block_size(c.reply.buf.capacity())
        + block_size(c.out_inflight)
        + argv_mem
        + multi_mem(c)
        + subs * PER_SUBSCRIPTION
        + prefixes * PER_PREFIX
}

/// Counts the client's memory now into the total (Redis's
/// `updateClientMemoryUsage`). A client on its way out counts nothing.
pub fn update(srv: &mut Server, c: &mut Client) {
    let now = usage(c, 0);
    set_usage(srv, c, now);
}

/// Puts `now` in the total in place of the client's last count; a client on
/// its way out counts nothing.
fn set_usage(srv: &mut Server, c: &mut Client, now: usize) {
    let link = c.repl_role != super::client::ReplRole::None;
    let now = if c.close_after_reply || link { 0 } else { now };
    let t = &mut srv.client_mem.total;
    *t = t.saturating_sub(c.mem_usage as u64) + now as u64;
    c.mem_usage = now;
}

/// [`update`] while client eviction is on, for a client it may evict (the
/// hot paths' call: one test when it is off). As in Redis, a client with
/// CLIENT NO-EVICT is counted by the cron only.
#[inline]
pub fn update_if_limited(srv: &mut Server, c: &mut Client) {
    if srv.client_mem.limit != 0 && !c.no_evict {
        update(srv, c);
    }
}

/// Before a command runs (while client eviction is on): the client counted
/// with the command's arguments (Redis counts its `argv`; here they lie in
/// the query buffer, counted once), then clients over the limit evicted.
/// True when this client was.
pub fn before_command(srv: &mut Server, c: &mut Client, args: &crate::command::Args) -> bool {
    if !c.no_evict {
        let argv: usize = args.from(0).map(|a| a.len() + size_of::<usize>()).sum();
        let now = usage(c, 0) - c.qbuf_cap + c.qbuf_cap.max(argv);
        set_usage(srv, c, now);
    }
    evict(srv, c)
}

/// Takes a leaving client's memory out of the total.
pub fn forget(srv: &mut Server, c: &mut Client) {
    srv.client_mem.total = srv.client_mem.total.saturating_sub(c.mem_usage as u64);
    c.mem_usage = 0;
}

/// Evicts clients while their memory reaches the limit. Returns true when
/// `current` was evicted (its command must not run; its connection closes
/// without a reply).
#[inline]
pub fn evict(srv: &mut Server, current: &mut Client) -> bool {
    let t = &srv.client_mem;
    if t.limit == 0 || t.total < t.limit {
        return false;
    }
    evict_over_limit(srv, current)
}

#[cold]
#[inline(never)]
fn evict_over_limit(srv: &mut Server, current: &mut Client) -> bool {
    let evictable = |c: &Client| {
        !c.no_evict && !c.close_after_reply && c.repl_role == super::client::ReplRole::None
    };
    // (memory, id): the largest first, the oldest first among equals.
    let mut candidates: Vec<(usize, ClientId)> = Vec::new();
    for (&id, cell) in &srv.clients {
        if id == current.id || cell.kill.get() {
            continue;
        }
        if let Ok(c) = cell.state.try_borrow() {
            if evictable(&c) {
                candidates.push((c.mem_usage, id));
            }
        }
    }
    // Only a connection: not a script's or the AOF loader's client.
    if evictable(current) && srv.clients.contains_key(&current.id) {
        candidates.push((current.mem_usage, current.id));
    }
    candidates.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut self_evicted = false;
    for (_, id) in candidates {
        if srv.client_mem.total < srv.client_mem.limit {
            break;
        }
        if id == current.id {
            close_evicted(srv, current);
            self_evicted = true;
        } else if let Some(cell) = srv.clients.get(&id).cloned() {
            if let Ok(mut c) = cell.state.try_borrow_mut() {
                close_evicted(srv, &mut c);
            }
        }
    }
    if srv.client_mem.total >= srv.client_mem.limit {
        crate::log::warning("Over client maxmemory after evicting all evictable clients");
    }
    self_evicted
}

/// Closes one evicted client: logged, counted, its output dropped, its
/// memory out of the total, its task woken to close the connection.
fn close_evicted(srv: &mut Server, c: &mut Client) {
    crate::log::notice(&format!(
        "Evicting client: {}",
        crate::cmd::server::client::describe(c, false, 0)
    ));
    srv.stats.evicted_clients += 1;
    forget(srv, c);
    c.reply.buf = Default::default();
    c.close_after_reply = true;
    if let Some(cell) = srv.clients.get(&c.id) {
        cell.kill.set(true);
        cell.wake.notify_one();
    }
}

/// After a change of `maxmemory-clients` or `maxmemory`: the limit in
/// effect, and every client it may evict counted anew (Redis's
/// `applyClientMaxMemoryUsage`; the eviction itself follows before the
/// next command or sleep).
pub fn apply_config(srv: &mut Server, current: &mut Client) {
    srv.client_mem.limit = limit_of(srv.config.maxmemory_clients, srv.config.maxmemory);
    update_all(srv, current);
}

/// Counts every client's memory anew (CLIENT NO-EVICT ones aside).
fn update_all(srv: &mut Server, current: &mut Client) {
    let cells: Vec<_> = srv.clients.values().cloned().collect();
    for cell in cells {
        if let Ok(mut c) = cell.state.try_borrow_mut() {
            update_if_limited(srv, &mut c);
        }
    }
    if srv.clients.contains_key(&current.id) {
        update_if_limited(srv, current);
    }
}

/// The cron's pass, once a second (Redis's clientsCron): every client
/// counted anew, the largest query buffer and output noted for INFO, and
/// output soft limits enforced on clients no new output reaches.
pub fn cron(srv: &mut Server) {
    let slot = (crate::clock::now_ms() / 1000) as usize % 8;
    let (mut max_in, mut max_out) = (0, 0);
    let cells: Vec<_> = srv.clients.values().cloned().collect();
    for cell in cells {
        if let Ok(mut c) = cell.state.try_borrow_mut() {
            max_in = max_in.max(c.qbuf_cap);
            let o = output(&c);
            max_out = max_out.max(o.obl + o.omem);
            super::pubsub::check_output_limit_idle(srv, &mut c);
            update(srv, &mut c);
        }
    }
    let t = &mut srv.client_mem;
    // The next second's slot starts afresh (as Redis zeroes it).
    t.recent_in[(slot + 1) % 8] = 0;
    t.recent_out[(slot + 1) % 8] = 0;
    t.recent_in[slot] = t.recent_in[slot].max(max_in);
    t.recent_out[slot] = t.recent_out[slot].max(max_out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_from_bytes_or_percent() {
        assert_eq!(limit_of(0, 0), 0);
        assert_eq!(limit_of(0, 1 << 30), 0);
        assert_eq!(limit_of(3_000_000, 0), 3_000_000);
        // A percentage needs maxmemory.
        assert_eq!(limit_of(-7, 0), 0);
        assert_eq!(limit_of(-7, 6 * 1024 * 1024), 440_401);
        // Never below 128 KiB.
        assert_eq!(limit_of(1, 0), MIN_LIMIT);
        assert_eq!(limit_of(-1, 1024 * 1024), MIN_LIMIT);
    }

    #[test]
    fn output_splits_at_the_reply_block() {
        let mut c = Client::new(
            1,
            String::new(),
            String::new(),
            super::super::client::ConnKind::Tcp,
            false,
        );
        c.reply.raw(&[b'x'; 100]);
        let o = output(&c);
        assert_eq!((o.obl, o.oll, o.omem), (100, 0, 0));
        c.reply.raw(&vec![b'x'; REPLY_CHUNK * 2]);
        c.out_inflight = 50;
        let o = output(&c);
        assert_eq!(o.obl, REPLY_CHUNK);
        assert_eq!(o.omem, REPLY_CHUNK + 150);
        assert_eq!(o.oll, 2);
        assert!(usage(&c, 0) >= REPLY_CHUNK * 2 + 150);
    }
}
