//! Keyspace notifications: the `notify-keyspace-events` classes and event publishing.

use super::client::Client;
use super::Server;

pub const KEYSPACE: u32 = 1 << 0; // K
pub const KEYEVENT: u32 = 1 << 1; // E
pub const GENERIC: u32 = 1 << 2; // g
pub const STRING: u32 = 1 << 3; // $
pub const LIST: u32 = 1 << 4; // l
pub const SET: u32 = 1 << 5; // s
pub const HASH: u32 = 1 << 6; // h
pub const ZSET: u32 = 1 << 7; // z
pub const EXPIRED: u32 = 1 << 8; // x
pub const EVICTED: u32 = 1 << 9; // e
pub const STREAM: u32 = 1 << 10; // t
pub const KEY_MISS: u32 = 1 << 11; // m
pub const MODULE: u32 = 1 << 13; // d
pub const NEW: u32 = 1 << 14; // n
/// `A`: every class but `m` and `n`.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// One pending event.
pub struct Event {
    pub class: u32,
    pub event: &'static str,
    pub db: usize,
    pub key: Box<[u8]>,
}

/// Parses a `notify-keyspace-events` value; None for an unknown character.
pub fn parse_flags(s: &[u8]) -> Option<u32> {
    let mut f = 0;
    for &c in s {
        f |= match c {
            b'A' => ALL,
            b'g' => GENERIC,
            b'$' => STRING,
            b'l' => LIST,
            b's' => SET,
            b'h' => HASH,
            b'z' => ZSET,
            b'x' => EXPIRED,
            b'e' => EVICTED,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b't' => STREAM,
            b'm' => KEY_MISS,
            b'd' => MODULE,
            b'n' => NEW,
            _ => return None,
        };
    }
    Some(f)
}

/// Formats flags the way `CONFIG GET notify-keyspace-events` shows them.
pub fn flags_to_string(f: u32) -> String {
    let mut s = String::new();
    if f & ALL == ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if f & bit != 0 {
                s.push(c);
            }
        }
    }
    if f & KEYSPACE != 0 {
        s.push('K');
    }
    if f & KEYEVENT != 0 {
        s.push('E');
    }
    if f & KEY_MISS != 0 {
        s.push('m');
    }
    s
}

/// True when the configuration asks for events of `class`.
#[inline]
fn wanted(srv: &Server, class: u32) -> bool {
    let flags = srv.config.notify_flags;
    flags & class != 0 && flags & (KEYSPACE | KEYEVENT) != 0
}

/// Queues an event when the configuration asks for its class; it is
/// published by the next [`emit`] or [`flush`]. Handlers call
/// `Ctx::modified`, which publishes at once; this is for code that has no
/// client at hand.
#[inline]
pub fn raise(srv: &mut Server, class: u32, event: &'static str, db: usize, key: &[u8]) {
    if !wanted(srv, class) {
        return;
    }
    srv.events.push(Event {
        class,
        event,
        db,
        key: key.into(),
    });
}

/// Publishes an event now, as Redis's `notifyKeyspaceEvent` does: a client
/// subscribed to its own events sees the message before its command's
/// reply (inside the EXEC array for a transaction). Events still pending
/// (lazy expiry, `new`, `keymiss`) go first, in the order they happened.
pub fn emit(
    srv: &mut Server,
    current: &mut Client,
    class: u32,
    event: &'static str,
    db: usize,
    key: &[u8],
) {
    if !wanted(srv, class) {
        return;
    }
    flush(srv, current);
    publish_event(srv, current, event, db, key);
}

/// Which events the databases record themselves (`new`, `keymiss`), kept in
/// step with `notify-keyspace-events` before each command.
pub fn sync_db_mask(srv: &mut Server) {
    let flags = srv.config.notify_flags;
    let mask = if flags & (KEYSPACE | KEYEVENT) != 0 {
        flags & (NEW | KEY_MISS)
    } else {
        0
    };
    if srv.ks.dbs.first().is_some_and(|d| d.event_mask != mask) {
        for d in srv.ks.dbs.iter_mut() {
            d.event_mask = mask;
        }
    }
}

/// True when some event waits to be published.
#[inline]
pub fn pending(srv: &Server) -> bool {
    !srv.events.is_empty() || crate::db::events_pending()
}

/// Publishes every pending event: keys the databases expired lazily
/// (`expired`, which also invalidates client-side caches) and the `new` /
/// `keymiss` events they recorded, then events queued by [`raise`].
/// Runs after every command: the common case (nothing pending) is this
/// inlined test, the work is out of line.
#[inline]
pub fn flush(srv: &mut Server, current: &mut Client) {
    if pending(srv) {
        flush_pending(srv, current);
    }
}

#[inline(never)]
fn flush_pending(srv: &mut Server, current: &mut Client) {
    // Databases raise a thread-wide flag when they record something, so the
    // common case (nothing expired, no new/keymiss events) skips the scan.
    let db_count = if crate::db::take_events_pending() {
        srv.ks.dbs.len()
    } else {
        0
    };
    for db in 0..db_count {
        let d = &mut srv.ks.dbs[db];
        if d.expired.is_empty() && d.key_events.is_empty() {
            continue;
        }
        let expired = std::mem::take(&mut d.expired);
        let others = std::mem::take(&mut d.key_events);
        for k in expired {
            if wanted(srv, EXPIRED) {
                publish_event(srv, current, "expired", db, &k);
            }
            if !srv.tracking.idle() {
                super::tracking::invalidate_key(srv, current, 0, &k);
            }
        }
        for (class, event, k) in others {
            if wanted(srv, class) {
                publish_event(srv, current, event, db, &k);
            }
        }
    }
    if srv.events.is_empty() {
        return;
    }
    let events = std::mem::take(&mut srv.events);
    for e in events {
        publish_event(srv, current, e.event, e.db, &e.key);
    }
}

/// Publishes pending events, placing what the running client receives
/// itself before the reply it has written since `reply_start` (events from
/// lookups happen before a command replies).
pub fn flush_before_reply(srv: &mut Server, current: &mut Client, reply_start: usize) {
    if !pending(srv) {
        return;
    }
    let own = current.subscription_count() > 0 && current.reply.buf.len() > reply_start;
    if !own {
        flush(srv, current);
        return;
    }
    let tail = current.reply.buf.split_off(reply_start);
    flush(srv, current);
    current.reply.buf.unsplit(tail);
}

/// Sends one event on `__keyspace@<db>__:<key>` and `__keyevent@<db>__:<event>`
/// as the configuration asks.
fn publish_event(srv: &mut Server, current: &mut Client, event: &str, db: usize, key: &[u8]) {
    let flags = srv.config.notify_flags;
    if flags & KEYSPACE != 0 {
        let mut ch = format!("__keyspace@{db}__:").into_bytes();
        ch.extend_from_slice(key);
        super::pubsub::publish(srv, current, &ch, event.as_bytes());
    }
    if flags & KEYEVENT != 0 {
        let ch = format!("__keyevent@{db}__:{event}").into_bytes();
        super::pubsub::publish(srv, current, &ch, key);
    }
}
