//! The keyspace: databases of keys with values and expiry, WATCH versions and blocked-client waiters.

pub mod dict;
pub mod value;

use std::collections::{HashMap, VecDeque};

use crate::clock;
use crate::server::notify;
use dict::Dict;
pub use value::{Kind, Value};

/// A client's id, unique for the life of the server.
pub type ClientId = u64;

/// WATCH bookkeeping for one watched key. `version` goes up whenever the key
/// is touched (written, deleted, expired, flushed); a client remembers the
/// version it saw at WATCH and EXEC fails when it differs.
#[derive(Debug, Default)]
pub struct Watched {
    pub version: u64,
    pub watchers: u32,
    /// How many of the `version` bumps deleted the key because it had
    /// expired: for a client that WATCHed the key when it was already
    /// expired, that deletion is no logical change (Redis's `wk->expired`).
    pub stale_deletes: u64,
}

/// One numbered database.
#[derive(Default)]
pub struct Db {
    pub id: usize,
    keys: Dict<Value>,
    /// Expiry times in unix milliseconds, only for keys that have one.
    expires: Dict<i64>,
    /// Keys deleted by lazy expiry during the current command; the dispatcher
    /// drains them to publish `expired` events.
    pub expired: Vec<Box<[u8]>>,
    /// `new` and `keymiss` keyspace events this database recorded (only the
    /// classes in `event_mask`, which the notify module keeps in step with
    /// `notify-keyspace-events`); drained with `expired`.
    pub key_events: Vec<(u32, &'static str, Box<[u8]>)>,
    pub event_mask: u32,
    /// Watched keys (see [`Watched`]); empty unless some client WATCHes here.
    pub watched: HashMap<Box<[u8]>, Watched>,
    /// Clients blocked on each key, in arrival order.
    pub waiters: HashMap<Box<[u8]>, VecDeque<ClientId>>,
    /// Keys that were created while clients waited on them; drained after
    /// each command to serve those clients.
    pub ready: Vec<Box<[u8]>>,
    pub hits: u64,
    pub misses: u64,
    pub expired_count: u64,
}

impl Db {
    pub fn new(id: usize) -> Db {
        Db {
            id,
            ..Default::default()
        }
    }

    /// Number of keys, including ones that are expired but not yet reclaimed.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn expires_len(&self) -> usize {
        self.expires.len()
    }

    /// Deletes `key` if its time has come; true when it did.
    fn expire_if_needed(&mut self, key: &[u8]) -> bool {
        if self.expires.is_empty() {
            return false;
        }
        match self.expires.get(key) {
            Some(&at) if at <= clock::now_ms() => {
                self.delete_expired(key);
                true
            }
            _ => false,
        }
    }

    /// Removes an expired key and records it for the `expired` event.
    pub fn delete_expired(&mut self, key: &[u8]) {
        self.expires.remove(key);
        if let Some((k, _)) = self.keys.remove_entry(key) {
            self.touch_stale(&k);
            self.expired_count += 1;
            self.expired.push(k);
        }
    }

    /// Looks a key up for reading, counting a keyspace hit or miss.
    pub fn get(&mut self, key: &[u8]) -> Option<&mut Value> {
        self.expire_if_needed(key);
        match self.keys.get_mut(key) {
            Some(v) => {
                self.hits += 1;
                Some(v)
            }
            None => {
                self.misses += 1;
                if self.event_mask & notify::KEY_MISS != 0 {
                    self.key_events
                        .push((notify::KEY_MISS, "keymiss", key.into()));
                }
                None
            }
        }
    }

    /// Looks a key up for writing (no hit/miss counting).
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Value> {
        self.expire_if_needed(key);
        self.keys.get_mut(key)
    }

    /// Looks a key up without touching stats or expiring it (OBJECT, SCAN filters, DEBUG).
    pub fn peek(&self, key: &[u8]) -> Option<&Value> {
        self.keys.get(key)
    }

    pub fn contains(&mut self, key: &[u8]) -> bool {
        self.expire_if_needed(key);
        self.keys.contains_key(key)
    }

    /// Sets `key` to `val`, dropping any TTL (Redis's `setKey`).
    pub fn set(&mut self, key: &[u8], val: Value) {
        self.set_keep_ttl(key, val);
        if !self.expires.is_empty() {
            self.expires.remove(key);
        }
    }

    /// Sets `key` to `val`, keeping an existing TTL (SET ... KEEPTTL).
    pub fn set_keep_ttl(&mut self, key: &[u8], val: Value) {
        self.expire_if_needed(key);
        match self.keys.get_mut(key) {
            Some(slot) => *slot = val,
            None => self.add_new(key, val),
        }
    }

    /// Adds a key known to be absent (Redis's `dbAdd`): wakes clients waiting on it.
    pub fn add_new(&mut self, key: &[u8], val: Value) {
        let k: Box<[u8]> = key.into();
        if self.event_mask & notify::NEW != 0 {
            self.key_events.push((notify::NEW, "new", k.clone()));
        }
        if !self.waiters.is_empty() && self.waiters.contains_key(key) {
            self.ready.push(k.clone());
        }
        self.keys.insert_new(k, val);
    }

    /// The value at `key`, created by `make` when absent. The bool says whether it was created.
    pub fn get_or_create(
        &mut self,
        key: &[u8],
        make: impl FnOnce() -> Value,
    ) -> (&mut Value, bool) {
        self.expire_if_needed(key);
        if !self.keys.contains_key(key) {
            self.add_new(key, make());
            return (self.keys.get_mut(key).unwrap(), true);
        }
        (self.keys.get_mut(key).unwrap(), false)
    }

    /// Deletes a key; returns its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<Value> {
        self.expire_if_needed(key);
        let v = self.keys.remove(key)?;
        if !self.expires.is_empty() {
            self.expires.remove(key);
        }
        Some(v)
    }

    /// The key's expiry in unix milliseconds, if it has one.
    pub fn expire_at(&self, key: &[u8]) -> Option<i64> {
        if self.expires.is_empty() {
            return None;
        }
        self.expires.get(key).copied()
    }

    /// Sets an expiry on an existing key. An expiry already in the past deletes
    /// the key instead; callers decide (Redis does this in `expireGenericCommand`).
    pub fn set_expire(&mut self, key: &[u8], at_ms: i64) {
        debug_assert!(self.keys.contains_key(key));
        self.expires.insert(key, at_ms);
    }

    /// Removes the expiry; true when there was one.
    pub fn persist(&mut self, key: &[u8]) -> bool {
        !self.expires.is_empty() && self.expires.remove(key).is_some()
    }

    /// Marks a key as modified for WATCH (Redis's `signalModifiedKey`).
    #[inline]
    pub fn touch(&mut self, key: &[u8]) {
        if !self.watched.is_empty() {
            if let Some(w) = self.watched.get_mut(key) {
                w.version += 1;
            }
        }
    }

    /// Marks the deletion of an expired key for WATCH (see [`Watched`]).
    #[inline]
    pub fn touch_stale(&mut self, key: &[u8]) {
        if let Some(w) = self.watched.get_mut(key) {
            w.version += 1;
            w.stale_deletes += 1;
        }
    }

    /// Touches every watched key that exists (FLUSHDB, SWAPDB); removing an
    /// already expired key counts as a stale deletion.
    pub fn touch_all_existing(&mut self) {
        let now = clock::now_ms();
        let Db {
            keys,
            expires,
            watched,
            ..
        } = self;
        for (k, w) in watched.iter_mut() {
            if keys.contains_key(k) {
                w.version += 1;
                if expires.get(k).is_some_and(|&at| at <= now) {
                    w.stale_deletes += 1;
                }
            }
        }
    }

    /// Removes every key; returns how many there were.
    pub fn clear(&mut self) -> usize {
        self.touch_all_existing();
        let n = self.keys.len();
        self.keys.clear();
        self.expires.clear();
        n
    }

    /// Swaps contents (keys and expiries) with another database (SWAPDB);
    /// watchers and waiters stay with their database number.
    pub fn swap_data(&mut self, other: &mut Db) {
        std::mem::swap(&mut self.keys, &mut other.keys);
        std::mem::swap(&mut self.expires, &mut other.expires);
    }

    /// All keys with their values (expired ones included; callers filter).
    pub fn iter(&self) -> dict::Iter<'_, Value> {
        self.keys.iter()
    }

    /// True when the key has an expiry that has passed (without deleting it).
    pub fn is_expired(&self, key: &[u8]) -> bool {
        matches!(self.expire_at(key), Some(at) if at <= clock::now_ms())
    }

    /// One SCAN step over the keys.
    pub fn scan(&self, cursor: u64, f: impl FnMut(&[u8], &Value)) -> u64 {
        self.keys.scan(cursor, f)
    }

    /// A random key (RANDOMKEY), skipping expired ones when live keys exist.
    pub fn random_key(&mut self, mut rand: impl FnMut() -> u64) -> Option<Box<[u8]>> {
        let mut tries = 0;
        loop {
            let k: Box<[u8]> = self.keys.random(&mut rand)?.0.into();
            // Give up filtering after many tries when every key has a TTL,
            // as Redis does, so a DB full of expired keys cannot loop forever.
            if self.is_expired(&k) {
                tries += 1;
                if tries < 100 || self.expires.len() < self.keys.len() {
                    self.delete_expired(&k);
                    continue;
                }
            }
            return Some(k);
        }
    }

    /// Active expiry: samples keys with a TTL and deletes the expired ones.
    /// Returns how many were sampled and how many deleted, so the caller can
    /// decide whether to run another round (Redis's `activeExpireCycle`).
    pub fn expire_sample(
        &mut self,
        samples: usize,
        mut rand: impl FnMut() -> u64,
    ) -> (usize, usize) {
        let now = clock::now_ms();
        let mut victims: Vec<Box<[u8]>> = Vec::new();
        let n = samples.min(self.expires.len());
        for _ in 0..n {
            if let Some((k, &at)) = self.expires.random(&mut rand) {
                if at <= now && !victims.iter().any(|v| &**v == k) {
                    victims.push(k.into());
                }
            }
        }
        let deleted = victims.len();
        for k in victims {
            self.delete_expired(&k);
        }
        (n, deleted)
    }
}

/// All databases plus the server-wide counters that writes update.
pub struct Keyspace {
    pub dbs: Vec<Db>,
    /// Changes since the last save (Redis's `server.dirty`).
    pub dirty: u64,
}

impl Keyspace {
    pub fn new(databases: usize) -> Keyspace {
        Keyspace {
            dbs: (0..databases).map(Db::new).collect(),
            dirty: 0,
        }
    }
}
