//! The pub/sub registry, message delivery to subscribed clients, and the
//! `client-output-buffer-limit` check that disconnects slow subscribers.
//!
//! Invariants: a client id appears in `channels[ch]` exactly when `ch` is in
//! that client's `Client::channels` (likewise for patterns and shard
//! channels); subscriber lists keep subscription order, which is the order
//! messages are delivered in, as in Redis. Empty lists are removed.

use std::collections::HashMap;
use std::rc::Rc;

use super::client::{Client, ClientCell};
use super::Server;
use crate::db::ClientId;
use crate::types::glob;

/// One subscriber: its id and, for speed, its cell (no client-table lookup
/// per message). The cell is None only for clients outside the table.
pub struct Subscriber {
    pub id: ClientId,
    pub cell: Option<Rc<ClientCell>>,
}

/// Channel (or pattern) → subscribers in subscription order.
pub type Registry = HashMap<Vec<u8>, Vec<Subscriber>, foldhash::fast::RandomState>;

/// Who listens where.
#[derive(Default)]
pub struct PubSub {
    pub channels: Registry,
    pub patterns: Registry,
    pub shard_channels: Registry,
    /// Output for clients whose state was borrowed when it was produced
    /// (a client being served while another one runs); delivered by
    /// [`deliver_stashed`] after the command.
    pub stash: Vec<(ClientId, Vec<u8>)>,
}

/// The three kinds of subscription, each with its own registry and replies.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    /// The reply word for subscribing / unsubscribing.
    pub fn words(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Kind::Channel => (b"subscribe", b"unsubscribe"),
            Kind::Pattern => (b"psubscribe", b"punsubscribe"),
            Kind::Shard => (b"ssubscribe", b"sunsubscribe"),
        }
    }
}

impl PubSub {
    pub fn registry(&mut self, kind: Kind) -> &mut Registry {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard_channels,
        }
    }
}

/// A client's own set of subscriptions of one kind.
pub fn client_set(c: &mut Client, kind: Kind) -> &mut crate::server::client::LazySet {
    match kind {
        Kind::Channel => &mut c.channels,
        Kind::Pattern => &mut c.patterns,
        Kind::Shard => &mut c.shard_channels,
    }
}

/// Adds a subscription; false when the client already had it.
pub fn subscribe(srv: &mut Server, c: &mut Client, kind: Kind, name: &[u8]) -> bool {
    if !client_set(c, kind).insert(name.to_vec()) {
        return false;
    }
    let cell = srv.clients.get(&c.id).cloned();
    srv.pubsub
        .registry(kind)
        .entry(name.to_vec())
        .or_default()
        .push(Subscriber { id: c.id, cell });
    true
}

/// Removes a subscription; false when the client did not have it.
pub fn unsubscribe(srv: &mut Server, c: &mut Client, kind: Kind, name: &[u8]) -> bool {
    if !client_set(c, kind).remove(name) {
        return false;
    }
    let map = srv.pubsub.registry(kind);
    if let Some(subs) = map.get_mut(name) {
        subs.retain(|s| s.id != c.id);
        if subs.is_empty() {
            map.remove(name);
        }
    }
    true
}

/// Encodes a pub/sub message frame in RESP2 form (`*n`); RESP3 clients get
/// the same bytes with `>` as first byte. Encoding once serves every receiver.
pub fn frame(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + parts.iter().map(|p| p.len() + 16).sum::<usize>());
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(parts.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for p in parts {
        out.push(b'$');
        out.extend_from_slice(itoa::Buffer::new().format(p.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Appends a frame made by [`frame`] to a reply in the client's protocol.
#[inline]
pub fn write_frame(reply: &mut crate::resp::encode::Reply, frame: &[u8]) {
    if reply.resp3() {
        reply.raw(b">");
        reply.raw(&frame[1..]);
    } else {
        reply.raw(frame);
    }
}

/// Queues `frame` (see [`frame`]) for client `id`, then applies the output
/// buffer limits. A client already scheduled to close gets nothing more.
/// Returns false when there is no such client.
pub fn deliver(srv: &mut Server, current: &mut Client, id: ClientId, frame: &[u8]) -> bool {
    let cell = srv.clients.get(&id).cloned();
    let floor = limit_floor(srv);
    deliver_to(srv, current, id, cell.as_ref(), frame, floor)
}

/// [`deliver`] with the client's cell at hand.
fn deliver_to(
    srv: &mut Server,
    current: &mut Client,
    id: ClientId,
    cell: Option<&Rc<ClientCell>>,
    frame: &[u8],
    floor: u64,
) -> bool {
    if id == current.id {
        if !cell.is_some_and(|c| c.kill.get()) {
            let start = current.reply.len();
            write_frame(&mut current.reply, frame);
            current.pushed.push((start, current.reply.len()));
            if current.reply.buf.len() as u64 >= floor || current.obuf_soft_since.is_some() {
                enforce_output_limit(srv, current, true);
            }
        }
        return true;
    }
    let Some(cell) = cell else {
        return false;
    };
    if cell.kill.get() {
        return true;
    }
    match cell.state.try_borrow_mut() {
        Ok(mut c) => {
            // A client with output pending was already woken (or is
            // writing and will pick this up): wake only on empty -> non-empty.
            let was_empty = c.reply.buf.is_empty();
            write_frame(&mut c.reply, frame);
            if c.reply.buf.len() as u64 >= floor || c.obuf_soft_since.is_some() {
                enforce_output_limit(srv, &mut c, false);
            }
            crate::server::client_mem::update_if_limited(srv, &mut c);
            if was_empty {
                cell.wake.notify_one();
            }
        }
        Err(_) => {
            // The client is running (e.g. being served after a blocking
            // wait): keep its output in order for after the command.
            srv.pubsub.stash.push((id, frame.to_vec()));
        }
    }
    true
}

/// Delivers `frame` to every subscriber of `name` in `kind`'s registry;
/// returns the number of deliveries. The list is taken out while
/// delivering (delivery never changes subscriptions) to avoid copying it.
fn deliver_all(
    srv: &mut Server,
    current: &mut Client,
    kind: Kind,
    name: &[u8],
    frame: &[u8],
) -> usize {
    let Some(list) = srv.pubsub.registry(kind).get_mut(name).map(std::mem::take) else {
        return 0;
    };
    let mut n = 0;
    let floor = limit_floor(srv);
    for s in &list {
        if deliver_to(srv, current, s.id, s.cell.as_ref(), frame, floor) {
            n += 1;
        }
    }
    if let Some(slot) = srv.pubsub.registry(kind).get_mut(name) {
        *slot = list;
    }
    n
}

/// CLIENT REPLY OFF/SKIP: drops what the request wrote since `start`
/// except push data (see `Client::pushed`).
pub fn drop_reply_keep_pushes(c: &mut Client, start: usize) {
    // (The buffer may have been emptied meanwhile: a client over its
    // output limit loses its pending output.)
    if c.pushed.is_empty() || c.reply.buf.len() < start {
        c.pushed.clear();
        c.reply.truncate(start);
        return;
    }
    let tail = c.reply.buf.split_off(start);
    for &(s, e) in &c.pushed {
        if s >= start && e <= start + tail.len() {
            c.reply.raw(&tail[s - start..e - start]);
        }
    }
    c.pushed.clear();
}

/// Delivers output stashed by [`deliver`] to clients that can take it now.
/// Runs after every command: the empty check is inlined, the work is not.
#[inline]
pub fn deliver_stashed(srv: &mut Server, current: &mut Client) {
    if !srv.pubsub.stash.is_empty() {
        deliver_stash(srv, current);
    }
}

#[inline(never)]
fn deliver_stash(srv: &mut Server, current: &mut Client) {
    let stash = std::mem::take(&mut srv.pubsub.stash);
    for (id, f) in stash {
        deliver(srv, current, id, &f);
    }
}

/// Delivers `msg` on `channel` to channel and pattern subscribers; returns
/// how many deliveries were made (PUBLISH's reply; a client subscribed twice
/// counts twice).
pub fn publish(srv: &mut Server, current: &mut Client, channel: &[u8], msg: &[u8]) -> usize {
    let mut receivers = 0;
    if srv.pubsub.channels.contains_key(channel) {
        let f = frame(&[b"message", channel, msg]);
        receivers += deliver_all(srv, current, Kind::Channel, channel, &f);
    }
    if !srv.pubsub.patterns.is_empty() {
        let matched: Vec<Vec<u8>> = srv
            .pubsub
            .patterns
            .keys()
            .filter(|pat| glob::matches(pat, channel, false))
            .cloned()
            .collect();
        for pat in matched {
            let f = frame(&[b"pmessage", &pat, channel, msg]);
            receivers += deliver_all(srv, current, Kind::Pattern, &pat, &f);
        }
    }
    srv.stats.pubsub_messages += 1;
    receivers
}

/// Delivers `msg` to the subscribers of shard channel `channel` (SPUBLISH).
pub fn publish_shard(srv: &mut Server, current: &mut Client, channel: &[u8], msg: &[u8]) -> usize {
    if !srv.pubsub.shard_channels.contains_key(channel) {
        return 0;
    }
    let f = frame(&[b"smessage", channel, msg]);
    deliver_all(srv, current, Kind::Shard, channel, &f)
}

/// One class of `client-output-buffer-limit`: bytes (0 = no limit) and seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_seconds: u64,
}

/// The limits per client class, as `client-output-buffer-limit` sets them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimits {
    pub normal: OutputLimit,
    pub replica: OutputLimit,
    pub pubsub: OutputLimit,
}

impl Default for OutputLimits {
    fn default() -> Self {
        OutputLimits {
            normal: OutputLimit::default(),
            replica: OutputLimit {
                hard: 256 << 20,
                soft: 64 << 20,
                soft_seconds: 60,
            },
            pubsub: OutputLimit {
                hard: 32 << 20,
                soft: 8 << 20,
                soft_seconds: 60,
            },
        }
    }
}

impl OutputLimits {
    /// Applies a `client-output-buffer-limit` value (`<class> <hard> <soft>
    /// <seconds>` repeated) on top of `self`, checking all of it before
    /// changing anything, with Redis's error texts.
    pub fn parse_onto(mut self, value: &str) -> Result<OutputLimits, &'static str> {
        let words: Vec<&str> = value.split_whitespace().collect();
        if !words.len().is_multiple_of(4) {
            return Err("Wrong number of arguments in buffer limit configuration.");
        }
        for w in words.chunks(4) {
            let class = w[0].to_ascii_lowercase();
            let hard = crate::config::parse_memory(w[1]);
            let soft = crate::config::parse_memory(w[2]);
            let secs = w[3].parse::<i64>().ok().filter(|s| *s >= 0);
            let slot = match class.as_str() {
                "normal" => &mut self.normal,
                "slave" | "replica" => &mut self.replica,
                "pubsub" => &mut self.pubsub,
                _ => return Err("Invalid client class specified in buffer limit configuration."),
            };
            let (Some(hard), Some(soft), Some(secs)) = (hard, soft, secs) else {
                return Err(
                    "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
                );
            };
            *slot = OutputLimit {
                hard: hard as u64,
                soft: soft as u64,
                soft_seconds: secs as u64,
            };
        }
        Ok(self)
    }

    /// The canonical form `CONFIG GET` shows.
    pub fn to_config_string(&self) -> String {
        let f = |l: &OutputLimit| format!("{} {} {}", l.hard, l.soft, l.soft_seconds);
        format!(
            "normal {} slave {} pubsub {}",
            f(&self.normal),
            f(&self.replica),
            f(&self.pubsub)
        )
    }
}

/// Redis's `checkClientOutputBufferLimits` for a client that was just given
/// output: a pub/sub client (any subscription) over the hard limit, or over
/// the soft limit for longer than its seconds, is scheduled to close and its
/// pending output dropped, so a slow reader never grows memory without bound.
pub fn check_output_limit(srv: &mut Server, c: &mut Client) {
    if (c.reply.buf.len() as u64) < limit_floor(srv) && c.obuf_soft_since.is_none() {
        return;
    }
    enforce_output_limit(srv, c, true);
}

/// The cron's check of an idle client (Redis's clientsCron): a soft limit
/// passed long enough closes it even when no new output arrives.
pub fn check_output_limit_idle(srv: &mut Server, c: &mut Client) {
    if c.obuf_soft_since.is_some() {
        enforce_output_limit(srv, c, false);
    }
}

/// The reply size at which a command writing a reply of a client-chosen
/// length (SRANDMEMBER/HRANDFIELD/ZRANDMEMBER with a negative count) stops:
/// the hard output limit of the client's class. Redis breaks those loops once
/// the client is flagged `CLIENT_CLOSE_ASAP`; only the hard limit can flag it
/// within one command (the soft one needs its seconds to pass).
pub fn hard_output_cap(srv: &Server, c: &Client) -> usize {
    let subscribed = c.subscription_count() > 0 || !c.shard_channels.is_empty();
    let l = &srv.config.obuf_limits;
    let hard = if subscribed {
        l.pubsub.hard
    } else {
        l.normal.hard
    };
    if hard == 0 {
        usize::MAX
    } else {
        usize::try_from(hard).unwrap_or(usize::MAX)
    }
}

/// The smallest non-zero limit of the classes checked: output below it
/// needs no further look (the fast path of every delivery).
fn limit_floor(srv: &Server) -> u64 {
    let l = &srv.config.obuf_limits;
    [l.pubsub.hard, l.pubsub.soft, l.normal.hard, l.normal.soft]
        .into_iter()
        .filter(|&x| x > 0)
        .min()
        .unwrap_or(u64::MAX)
}

/// `running`: the client's own command is executing, so its buffer stays
/// as it is (a reply may be half written); it is dropped with the
/// connection, and nothing more is queued for it meanwhile.
fn enforce_output_limit(srv: &mut Server, c: &mut Client, running: bool) {
    let subscribed = c.subscription_count() > 0 || !c.shard_channels.is_empty();
    let limit = if subscribed {
        srv.config.obuf_limits.pubsub
    } else {
        srv.config.obuf_limits.normal
    };
    // Queued and being written: all of it waits on the client.
    let used = (c.reply.buf.len() + c.out_inflight) as u64;
    let hard = limit.hard > 0 && used >= limit.hard;
    let mut soft = limit.soft > 0 && used >= limit.soft;
    if soft {
        let now = crate::clock::now_ms() / 1000;
        match c.obuf_soft_since {
            None => {
                c.obuf_soft_since = Some(now as u32);
                soft = false;
            }
            Some(t) => soft = now - i64::from(t) > limit.soft_seconds as i64,
        }
    } else {
        c.obuf_soft_since = None;
    }
    if !(hard || soft) {
        return;
    }
    if let Some(cell) = srv.clients.get(&c.id) {
        if cell.kill.replace(true) {
            return;
        }
        cell.wake.notify_one();
    }
    crate::log::warning(&format!(
        "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
        c.id, c.addr
    ));
    if !running {
        c.reply.buf.clear();
    }
    c.close_after_reply = true;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::encode::Reply;

    #[test]
    fn frames_in_both_protocols() {
        let f = frame(&[b"message", b"ch", b""]);
        assert_eq!(&f[..], b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$0\r\n\r\n");
        let mut r2 = Reply::new(2);
        write_frame(&mut r2, &f);
        assert_eq!(&r2.buf[..], &f[..]);
        let mut r3 = Reply::new(3);
        write_frame(&mut r3, &f);
        assert_eq!(
            &r3.buf[..],
            b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$0\r\n\r\n"
        );
    }

    #[test]
    fn output_limits_parse_merge_and_format() {
        let d = OutputLimits::default();
        assert_eq!(
            d.to_config_string(),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        let l = d.parse_onto("PubSub 1mb 512kb 10 replica 1g 2k 0").unwrap();
        assert_eq!(
            l.pubsub,
            OutputLimit {
                hard: 1 << 20,
                soft: 512 << 10,
                soft_seconds: 10
            }
        );
        assert_eq!(l.replica.hard, 1_000_000_000);
        assert_eq!(l.normal, d.normal);
        assert_eq!(d.parse_onto("").unwrap(), d);
        assert!(d
            .parse_onto("pubsub 1 2")
            .unwrap_err()
            .starts_with("Wrong number"));
        assert!(d
            .parse_onto("master 1 2 3")
            .unwrap_err()
            .starts_with("Invalid client class"));
        assert!(d
            .parse_onto("pubsub 1 2 -3")
            .unwrap_err()
            .starts_with("Error in hard"));
        // One bad class rejects the whole value.
        assert!(d.parse_onto("normal 1 1 1 pubsub x 1 1").is_err());
    }
}
