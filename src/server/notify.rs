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

/// Queues an event when the configuration asks for its class.
#[inline]
pub fn raise(srv: &mut Server, class: u32, event: &'static str, db: usize, key: &[u8]) {
    let flags = srv.config.notify_flags;
    if flags & class == 0 || flags & (KEYSPACE | KEYEVENT) == 0 {
        return;
    }
    srv.events.push(Event {
        class,
        event,
        db,
        key: key.into(),
    });
}

/// Publishes the queued events (called by the dispatcher after each command).
pub fn flush(srv: &mut Server, current: &mut Client) {
    // Lazily expired keys become `expired` events first.
    for db in 0..srv.ks.dbs.len() {
        if srv.ks.dbs[db].expired.is_empty() {
            continue;
        }
        let keys = std::mem::take(&mut srv.ks.dbs[db].expired);
        for k in keys {
            raise(srv, EXPIRED, "expired", db, &k);
        }
    }
    if srv.events.is_empty() {
        return;
    }
    let events = std::mem::take(&mut srv.events);
    let flags = srv.config.notify_flags;
    for e in events {
        if flags & KEYSPACE != 0 {
            let mut ch = format!("__keyspace@{}__:", e.db).into_bytes();
            ch.extend_from_slice(&e.key);
            super::pubsub::publish(srv, current, &ch, e.event.as_bytes());
        }
        if flags & KEYEVENT != 0 {
            let ch = format!("__keyevent@{}__:{}", e.db, e.event).into_bytes();
            super::pubsub::publish(srv, current, &ch, &e.key);
        }
    }
}
