//! The keyspace: databases of keys with values and expiry, WATCH versions and blocked-client waiters.

pub mod dict;
pub mod evict_sample;
pub mod lazyfree;
mod typed;
pub mod value;

use std::collections::{HashMap, HashSet, VecDeque};

use crate::clock;
use crate::server::notify;
use dict::Dict;
pub use lazyfree::Why;
pub use typed::Typed;
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
    /// How many times SWAPDB brought an already expired key where the key
    /// did not exist: no logical change, and the key counts as expired for
    /// watchers from then on (Redis sets `wk->expired`).
    pub stale_arrivals: u64,
}

/// A stored value with its access metadata (what Redis keeps in `robj.lru`).
///
/// Both clocks are kept whatever the maxmemory policy, so `OBJECT IDLETIME`
/// and `OBJECT FREQ` answer right after a policy change (Redis reuses one
/// field for either and needs time to adjust).
pub struct Entry {
    pub val: Value,
    /// Unix seconds of the last access (`OBJECT IDLETIME`).
    pub lru: u32,
    /// Redis's LFU word: minutes clock (16 bits) << 8 | logarithmic counter (8 bits).
    pub lfu: u32,
}

/// LFU counter of a new key (`LFU_INIT_VAL`).
pub const LFU_INIT_VAL: u32 = 5;

thread_local! {
    /// `lfu-log-factor` and `lfu-decay-time` (minutes; 0: no decay), kept
    /// in step with the configuration by `server::evict::apply_config`;
    /// Redis's defaults until then.
    static LFU_PARAMS: std::cell::Cell<(u32, u32)> = const { std::cell::Cell::new((10, 1)) };
}

/// Sets `lfu-log-factor` and `lfu-decay-time` for this (the data) thread.
pub fn set_lfu_params(log_factor: u32, decay_time: u32) {
    LFU_PARAMS.with(|c| c.set((log_factor, decay_time)));
}

thread_local! {
    /// Set while a `CLIENT NO-TOUCH` client runs a command: lookups leave the
    /// access metadata alone.
    static NO_TOUCH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Lookups made from now on skip (or resume) updating LRU/LFU metadata;
/// the dispatcher calls this with the client's `no_touch` flag.
pub fn set_no_touch(on: bool) {
    NO_TOUCH.with(|c| c.set(on));
}

thread_local! {
    /// Set while a forked child (BGSAVE, AOF rewrite) runs: lookups leave
    /// the access metadata alone, as Redis's `lookupKey` does, since writing
    /// it would copy every page a read touches (copy-on-write).
    static FORKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A child was forked (true) or has ended (false); see `FORKED`.
pub fn set_forked(on: bool) {
    FORKED.with(|c| c.set(on));
}

thread_local! {
    /// While CLIENT PAUSE is in effect (until this real-clock unix ms), reads
    /// treat keys past their TTL as missing but leave them in place, so the
    /// dataset does not change under a pause (Redis's `expireIfNeeded`).
    static EXPIRY_HELD_UNTIL_MS: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
}

/// Holds deletion of expired keys by reads until `until_ms` (0: no hold);
/// CLIENT PAUSE and UNPAUSE call this.
pub fn hold_expiry_until(until_ms: i64) {
    EXPIRY_HELD_UNTIL_MS.with(|c| c.set(until_ms));
}

/// True while CLIENT PAUSE holds the deletion of expired keys.
pub fn expiry_held() -> bool {
    let until = EXPIRY_HELD_UNTIL_MS.with(|c| c.get());
    until != 0 && clock::real_now_us() / 1000 < until
}

thread_local! {
    /// Set while the dataset loads (an AOF replay): nothing expires, and
    /// past expiry times are kept rather than deleting the key (Redis's
    /// `server.loading` in `keyIsExpired` and `checkAlreadyExpired`).
    static LOADING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the start (or end) of a load; see [`loading`].
pub fn set_loading(on: bool) {
    LOADING.with(|c| c.set(on));
}

/// True while the dataset loads: keys do not expire.
pub fn loading() -> bool {
    LOADING.with(|c| c.get())
}

/// How keys past their time behave on a replica (Redis's `expireIfNeeded`
/// with `masterhost` set): the master expires them and sends DELs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaExpiry {
    /// A master: due keys are deleted when looked up.
    Off,
    /// A replica: reads treat due keys as missing but leave them in place.
    Replica,
    /// A replica running its master's stream: due keys are still there.
    Applying,
}

thread_local! {
    static REPLICA_EXPIRY: std::cell::Cell<ReplicaExpiry> =
        const { std::cell::Cell::new(ReplicaExpiry::Off) };
}

/// Sets how due keys behave (see [`ReplicaExpiry`]); the replica side calls it.
pub fn set_replica_expiry(mode: ReplicaExpiry) {
    REPLICA_EXPIRY.with(|c| c.set(mode));
}

/// The current [`ReplicaExpiry`].
pub fn replica_expiry() -> ReplicaExpiry {
    REPLICA_EXPIRY.with(|c| c.get())
}

thread_local! {
    /// Keys a client of a writable replica gave a TTL: the master never
    /// expires them, so the replica does (Redis's `slaveKeysWithExpire`).
    static REPLICA_KEYS: std::cell::RefCell<HashSet<(usize, Box<[u8]>)>> =
        std::cell::RefCell::new(HashSet::new());
}

fn remember_replica_key(db: usize, key: &[u8]) {
    REPLICA_KEYS.with(|s| s.borrow_mut().insert((db, key.into())));
}

/// Forgets the keys [`expire_replica_keys`] watches (a full sync, a promotion).
pub fn forget_replica_keys() {
    REPLICA_KEYS.with(|s| s.borrow_mut().clear());
}

/// Deletes the keys written with a TTL on this writable replica whose time
/// has come (Redis's `expireSlaveKeys`); keys gone or without a TTL any
/// more are forgotten.
pub fn expire_replica_keys(dbs: &mut [Db]) {
    REPLICA_KEYS.with(|s| {
        let now = clock::now_ms();
        s.borrow_mut().retain(|(db, key)| {
            let Some(d) = dbs.get_mut(*db) else {
                return false;
            };
            match d.expire_at(key) {
                Some(at) if at <= now => {
                    d.delete_expired(key);
                    false
                }
                Some(_) => true,
                None => false,
            }
        })
    });
}

/// True while a replica runs its master's stream (Redis's
/// `server.current_client == server.master`).
pub fn applying_master() -> bool {
    replica_expiry() == ReplicaExpiry::Applying
}

fn now_secs() -> u32 {
    (clock::now_ms() / 1000) as u32
}

fn now_minutes() -> u32 {
    ((clock::now_ms() / 60_000) & 0xffff) as u32
}

impl Entry {
    fn new(val: Value) -> Entry {
        Entry {
            val,
            lru: now_secs(),
            lfu: now_minutes() << 8 | LFU_INIT_VAL,
        }
    }

    /// Seconds since the last access.
    pub fn idle_secs(&self) -> u64 {
        now_secs().saturating_sub(self.lru) as u64
    }

    /// The LFU counter after decay (Redis's `LFUDecrAndReturn`).
    pub fn freq(&self) -> u32 {
        let ldt = self.lfu >> 8;
        let counter = self.lfu & 255;
        let now = now_minutes();
        let elapsed = if now >= ldt {
            now - ldt
        } else {
            65535 - ldt + now
        };
        let decay = LFU_PARAMS.with(|c| c.get().1);
        let periods = elapsed.checked_div(decay).unwrap_or(0);
        counter.saturating_sub(periods)
    }

    /// Records an access (Redis's `lookupKey` LRU/LFU update).
    fn access(&mut self, rand: &mut u64) {
        if NO_TOUCH.with(|c| c.get()) || FORKED.with(|c| c.get()) {
            return;
        }
        self.lru = now_secs();
        let mut counter = self.freq();
        if counter < 255 {
            // LFULogIncr: increment with probability 1/((counter-init)*factor+1).
            let base = counter.saturating_sub(LFU_INIT_VAL) as f64;
            let factor = LFU_PARAMS.with(|c| c.get().0);
            let p = 1.0 / (base * factor as f64 + 1.0);
            *rand = rand.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *rand;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let r = (z >> 11) as f64 / (1u64 << 53) as f64;
            if r < p {
                counter += 1;
            }
        }
        self.lfu = now_minutes() << 8 | counter;
    }
}

/// One numbered database.
#[derive(Default)]
pub struct Db {
    pub id: usize,
    keys: Dict<Entry>,
    /// State of the PRNG behind LFU's probabilistic counter (splitmix64).
    rng: u64,
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
    /// The keys of each hash slot, in cluster mode only (database 0).
    pub slots: Option<Box<crate::cluster::keyindex::SlotIndex>>,
}

impl Db {
    pub fn new(id: usize) -> Db {
        Db {
            id,
            keys: Dict::guarded(),
            expires: Dict::guarded(),
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

    /// The keys' and the expiry times' tables (DEBUG HTSTATS).
    pub fn tables(&self) -> (&Dict<Entry>, &Dict<i64>) {
        (&self.keys, &self.expires)
    }

    /// Deletes `key` if its time has come; true when it did.
    fn expire_if_needed(&mut self, key: &[u8]) -> bool {
        if self.expires.is_empty() || loading() || applying_master() {
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

    /// For reads: deletes `key` if its time has come, unless CLIENT PAUSE
    /// holds expiry; true when the key is due but held (reads then treat it
    /// as missing).
    fn expire_for_read(&mut self, key: &[u8]) -> bool {
        if self.expires.is_empty() || loading() {
            return false;
        }
        match self.expires.get(key) {
            Some(&at) if at <= clock::now_ms() => {
                match replica_expiry() {
                    ReplicaExpiry::Off => {}
                    ReplicaExpiry::Replica => return true,
                    ReplicaExpiry::Applying => return false,
                }
                if expiry_held() {
                    return true;
                }
                self.delete_expired(key);
                false
            }
            _ => false,
        }
    }

    /// Removes an expired key and records it for the `expired` event.
    pub fn delete_expired(&mut self, key: &[u8]) {
        self.expires.remove(key);
        if let Some((k, e)) = self.keys.remove_entry(key) {
            self.unindex(&k);
            lazyfree::free(e.val, Why::Expire);
            self.touch_stale(&k);
            self.expired_count += 1;
            if LOG_EXPIRED.with(|c| c.get()) {
                EXPIRED_LOG.with(|l| l.borrow_mut().push((self.id, k.clone())));
            }
            self.expired.push(k);
            mark_events_pending();
        }
    }

    /// Looks a key up for reading, counting a keyspace hit or miss and
    /// recording the access (LRU/LFU); the value itself stays unchanged.
    /// Commands use the typed [`Db::read`].
    #[inline]
    pub fn get(&mut self, key: &[u8]) -> Option<&Value> {
        self.lookup_read(key).map(|v| &*v)
    }

    /// As [`Db::get`], for the few read commands that change how a value is
    /// stored, never what it holds: SORT converts a small sorted set for
    /// good, PFCOUNT refreshes the cardinality cached in the HLL header.
    pub fn read_mut(&mut self, key: &[u8]) -> Option<&mut Value> {
        self.lookup_read(key)
    }

    /// Redis's `lookupKeyRead`: expires the key if due (unless CLIENT PAUSE
    /// holds expiry), counts a hit or miss, records the access, raises
    /// `keymiss`.
    #[inline]
    fn lookup_read(&mut self, key: &[u8]) -> Option<&mut Value> {
        let held = self.expire_for_read(key);
        match if held { None } else { self.keys.get_mut(key) } {
            Some(e) => {
                self.hits += 1;
                e.access(&mut self.rng);
                Some(&mut e.val)
            }
            None => {
                self.misses += 1;
                if self.event_mask & notify::KEY_MISS != 0 {
                    self.key_events
                        .push((notify::KEY_MISS, "keymiss", key.into()));
                    mark_events_pending();
                }
                None
            }
        }
    }

    /// Looks a key up for writing (no hit/miss counting; records the access).
    /// Commands use the typed [`Db::write`].
    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Value> {
        self.expire_if_needed(key);
        let e = self.keys.get_mut(key)?;
        e.access(&mut self.rng);
        Some(&mut e.val)
    }

    /// Looks a key up without touching stats or expiring it (OBJECT, SCAN filters, DEBUG).
    pub fn peek(&self, key: &[u8]) -> Option<&Value> {
        self.keys.get(key).map(|e| &e.val)
    }

    /// The stored entry with its access metadata, without expiring or touching it.
    pub fn peek_entry(&self, key: &[u8]) -> Option<&Entry> {
        self.keys.get(key)
    }

    /// OBJECT's lookup (`LOOKUP_NOTOUCH | LOOKUP_NONOTIFY`): expires the key
    /// if due and counts a hit or miss, without recording an access or
    /// raising `keymiss`.
    pub fn lookup_no_touch(&mut self, key: &[u8]) -> Option<&Entry> {
        self.counted_lookup(key, false)
    }

    /// Looks a key up the way Redis's `LOOKUP_NOTOUCH` reads do (TYPE, EXISTS,
    /// TTL): like [`Db::lookup_no_touch`], and a miss raises `keymiss`.
    pub fn get_no_touch(&mut self, key: &[u8]) -> Option<&Entry> {
        self.counted_lookup(key, true)
    }

    /// Expires `key` if due, counts a hit or miss, and on a miss raises
    /// `keymiss` when `keymiss` is set and the event is enabled.
    fn counted_lookup(&mut self, key: &[u8], keymiss: bool) -> Option<&Entry> {
        let held = self.expire_for_read(key);
        match if held { None } else { self.keys.get(key) } {
            Some(e) => {
                self.hits += 1;
                Some(e)
            }
            None => {
                self.misses += 1;
                if keymiss && self.event_mask & notify::KEY_MISS != 0 {
                    self.key_events
                        .push((notify::KEY_MISS, "keymiss", key.into()));
                    mark_events_pending();
                }
                None
            }
        }
    }

    /// Removes a key with its metadata and expiry, for moving it elsewhere
    /// (RENAME, MOVE). No expiry check: callers looked the key up first.
    pub fn take(&mut self, key: &[u8]) -> Option<(Entry, Option<i64>)> {
        let e = self.keys.remove(key)?;
        self.unindex(key);
        let at = if self.expires.is_empty() {
            None
        } else {
            self.expires.remove(key)
        };
        Some((e, at))
    }

    /// Adds a key known to be absent with the metadata it had elsewhere
    /// (RENAME, MOVE keep the object, so idle time and LFU counter carry over).
    /// Wakes clients waiting on it, like [`Db::add_new`].
    pub fn put(&mut self, key: &[u8], entry: Entry, expire_at: Option<i64>) {
        self.announce_new(key);
        self.keys.insert_new_slice(key, entry);
        self.index(key);
        if let Some(at) = expire_at {
            self.expires.insert(key, at);
            if replica_expiry() == ReplicaExpiry::Replica {
                remember_replica_key(self.id, key);
            }
        }
    }

    /// Adds a key read from an RDB image with its metadata and expiry;
    /// false (nothing changes) when the key is already there.
    /// Room for `keys` keys and `expires` TTLs, so loading that many
    /// resizes nothing (an RDB's RESIZEDB).
    pub fn reserve(&mut self, keys: usize, expires: usize) {
        self.keys.reserve(keys);
        self.expires.reserve(expires);
    }

    pub fn add_loaded(&mut self, key: &[u8], entry: Entry, expire_at: Option<i64>) -> bool {
        let (_, added) = self.keys.get_or_insert_with(key, || entry);
        if added {
            self.index(key);
            if let Some(at) = expire_at {
                self.expires.insert(key, at);
            }
        }
        added
    }

    /// [`add_loaded`](Db::add_loaded) over whatever the key held (Redis's
    /// `RDBFLAGS_ALLOW_DUP`: DEBUG RELOAD MERGE): the old value and TTL go.
    pub fn replace_loaded(&mut self, key: &[u8], entry: Entry, expire_at: Option<i64>) {
        if let Some(old) = self.keys.remove(key) {
            self.unindex(key);
            self.expires.remove(key);
            lazyfree::free(old.val, Why::ServerDel);
        }
        self.add_loaded(key, entry, expire_at);
    }

    /// Records an access without reading the value (TOUCH); true when the key exists.
    pub fn touch_access(&mut self, key: &[u8]) -> bool {
        let held = self.expire_for_read(key);
        match if held { None } else { self.keys.get_mut(key) } {
            Some(e) => {
                e.access(&mut self.rng);
                true
            }
            None => false,
        }
    }

    pub fn contains(&mut self, key: &[u8]) -> bool {
        !self.expire_for_read(key) && self.keys.contains_key(key)
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
            // Overwriting keeps the LFU counter and restarts idle time, as
            // Redis's `dbOverwrite` does with a new object.
            Some(slot) => {
                let old = std::mem::replace(&mut slot.val, val);
                slot.lru = now_secs();
                lazyfree::free(old, Why::ServerDel);
                // A stream replaced by another value: its XREADGROUP
                // waiters are answered (Redis's `dbSetValue`).
                self.signal_ready(key);
            }
            None => self.add_new(key, val),
        }
    }

    /// Adds a key known to be absent (Redis's `dbAdd`): wakes clients waiting on it.
    pub fn add_new(&mut self, key: &[u8], val: Value) {
        self.announce_new(key);
        self.keys.insert_new_slice(key, Entry::new(val));
        self.index(key);
    }

    /// Adds `key` to the slot index (cluster mode; one branch otherwise).
    #[inline]
    fn index(&mut self, key: &[u8]) {
        if let Some(ix) = self.slots.as_deref_mut() {
            ix.add(key);
        }
    }

    #[inline]
    fn unindex(&mut self, key: &[u8]) {
        if let Some(ix) = self.slots.as_deref_mut() {
            ix.remove(key);
        }
    }

    /// Starts keeping the slot index (cluster mode), built from the keys there.
    pub fn index_slots(&mut self) {
        let mut ix = Box::<crate::cluster::keyindex::SlotIndex>::default();
        for (k, _) in self.keys.iter() {
            ix.add(k);
        }
        self.slots = Some(ix);
    }

    #[inline]
    fn announce_new(&mut self, key: &[u8]) {
        announce_new(
            self.event_mask,
            &mut self.key_events,
            &self.waiters,
            &mut self.ready,
            key,
        );
    }

    /// Deletes a key, letting go of its value as `why` says (now or on the
    /// freeing thread, see [`lazyfree`]); true when a live key was there.
    /// Records nothing: a command deletes through `Ctx::delete_key` (WATCH,
    /// dirty, tracking, the `del` event); RENAME and COPY ... REPLACE call
    /// this to clear the key they overwrite.
    pub fn delete(&mut self, key: &[u8], why: Why) -> bool {
        self.expire_if_needed(key);
        let Some(e) = self.keys.remove(key) else {
            return false;
        };
        self.unindex(key);
        if !self.expires.is_empty() {
            self.expires.remove(key);
        }
        // XREADGROUP waiters are answered when their key goes (Redis's
        // `signalDeletedKeyAsReady`).
        self.signal_ready(key);
        lazyfree::free(e.val, why);
        true
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
        if replica_expiry() == ReplicaExpiry::Replica {
            remember_replica_key(self.id, key);
        }
    }

    /// Removes the expiry; true when there was one.
    pub fn persist(&mut self, key: &[u8]) -> bool {
        !self.expires.is_empty() && self.expires.remove(key).is_some()
    }

    /// Marks `key` ready for the clients blocked on it (Redis's
    /// `signalKeyAsReady`): XADD to an existing stream, XGROUP DESTROY, and
    /// the deletion of a key XREADGROUP waits on.
    #[inline]
    pub fn signal_ready(&mut self, key: &[u8]) {
        if !self.waiters.is_empty() && self.waiters.contains_key(key) {
            self.ready.push(key.into());
        }
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

    /// Removes every key; returns how many there were. With `lazy` the
    /// old tables are freed on the freeing thread (FLUSHALL ASYNC), and
    /// this returns at once whatever their size.
    pub fn clear(&mut self, lazy: bool) -> usize {
        self.touch_all_existing();
        // Keys clients wait on are gone: XREADGROUP waiters are answered
        // (Redis's `scanDatabaseForDeletedKeys`).
        for k in self.waiters.keys() {
            if self.keys.contains_key(k) {
                self.ready.push(k.clone());
            }
        }
        let n = self.keys.len();
        if let Some(ix) = self.slots.as_deref_mut() {
            ix.clear();
        }
        if lazy && n > 0 {
            let keys = std::mem::replace(&mut self.keys, Dict::guarded());
            let expires = std::mem::replace(&mut self.expires, Dict::guarded());
            lazyfree::free_tables(keys, expires);
        } else {
            self.keys.clear();
            self.expires.clear();
        }
        n
    }

    /// Swaps contents (keys and expiries) with another database (SWAPDB);
    /// watchers and waiters stay with their database number.
    /// Touches watched keys as Redis's `touchAllWatchedKeysInDb` does (a
    /// watched key of either database that exists in either one), and marks
    /// every key clients wait on as ready (it may exist now, or be gone).
    pub fn swap_data(&mut self, other: &mut Db) {
        // A watched key is touched when it exists on either side. When
        // neither side holds a live value (an expired key leaves, and nothing
        // or another expired key comes in) it also counts as a stale
        // deletion: no logical change for a client that WATCHed it expired.
        fn live(keys: &Dict<Entry>, expires: &Dict<i64>, k: &[u8], now: i64) -> bool {
            keys.contains_key(k) && expires.get(k).is_none_or(|&at| at > now)
        }
        fn touch_watched(db: &mut Db, other: &Db, now: i64) {
            let Db {
                keys,
                expires,
                watched,
                ..
            } = db;
            for (k, w) in watched.iter_mut() {
                if !keys.contains_key(k)
                    && other.keys.contains_key(k)
                    && !live(&other.keys, &other.expires, k, now)
                {
                    w.stale_arrivals += 1;
                } else if keys.contains_key(k) || other.keys.contains_key(k) {
                    w.version += 1;
                    if !live(keys, expires, k, now) && !live(&other.keys, &other.expires, k, now) {
                        w.stale_deletes += 1;
                    }
                }
            }
        }
        let now = clock::now_ms();
        touch_watched(self, other, now);
        touch_watched(other, self, now);
        std::mem::swap(&mut self.keys, &mut other.keys);
        std::mem::swap(&mut self.expires, &mut other.expires);
        // Each side keeps its slot index, rebuilt for the keys it now holds.
        for db in [&mut *self, &mut *other] {
            if db.slots.is_some() {
                db.index_slots();
            }
        }
        for db in [self, other] {
            let Db { waiters, ready, .. } = db;
            // Keys that now exist, and (for XREADGROUP waiters) keys that
            // went away.
            for k in waiters.keys() {
                ready.push(k.clone());
            }
        }
    }

    /// All keys with their values (expired ones included; callers filter).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Value)> + '_ {
        self.keys.iter().map(|(k, e)| (k, &e.val))
    }

    /// All keys with their entries (value and access metadata), for saving.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], &Entry)> + '_ {
        self.keys.iter()
    }

    /// True when the key has an expiry that has passed (without deleting it).
    pub fn is_expired(&self, key: &[u8]) -> bool {
        matches!(self.expire_at(key), Some(at) if at <= clock::now_ms())
    }

    /// One SCAN step over the keys.
    pub fn scan(&self, cursor: u64, mut f: impl FnMut(&[u8], &Value)) -> u64 {
        self.keys.scan(cursor, |k, e| f(k, &e.val))
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
                    if !expiry_held() {
                        self.delete_expired(&k);
                    }
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

    /// Deletes every key whose time has come, all at once (the whole
    /// expiry table is read: OXIDIS CLOCK moved the time, so a test sees
    /// what an active expiry cycle would do eventually). Returns how many.
    pub fn expire_all_due(&mut self) -> usize {
        if self.expires.is_empty() || loading() || expiry_held() {
            return 0;
        }
        let now = clock::now_ms();
        let due: Vec<Box<[u8]>> = self
            .expires
            .iter()
            .filter(|(_, &at)| at <= now)
            .map(|(k, _)| k.into())
            .collect();
        for k in &due {
            self.delete_expired(k);
        }
        due.len()
    }
}

/// What `dbAdd` does besides adding: the `new` event, and waking clients
/// blocked on the key. Takes the [`Db`] fields it needs, so that it can run
/// while the key table is borrowed ([`Db::write_or_create`]).
#[inline]
fn announce_new(
    event_mask: u32,
    key_events: &mut Vec<(u32, &'static str, Box<[u8]>)>,
    waiters: &HashMap<Box<[u8]>, VecDeque<ClientId>>,
    ready: &mut Vec<Box<[u8]>>,
    key: &[u8],
) {
    if event_mask & notify::NEW != 0 {
        key_events.push((notify::NEW, "new", key.into()));
        mark_events_pending();
    }
    if !waiters.is_empty() && waiters.contains_key(key) {
        ready.push(key.into());
    }
}

thread_local! {
    /// Set when any database records an expired key or a key event, so the
    /// notify module can skip scanning every database after each command.
    /// Thread-local because one thread owns all data (as the clock snapshot).
    static EVENTS_PENDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[inline]
fn mark_events_pending() {
    EVENTS_PENDING.with(|c| c.set(true));
}

thread_local! {
    /// Set while the stream has consumers (`server::propagate`): expired keys
    /// are then also logged in `EXPIRED_LOG`, to be propagated as DEL.
    static LOG_EXPIRED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static EXPIRED_LOG: std::cell::RefCell<Vec<(usize, Box<[u8]>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Starts (or stops) logging expired keys for propagation.
pub fn log_expired(on: bool) {
    LOG_EXPIRED.with(|c| c.set(on));
}

/// Expired keys (database, key) logged since the last call, oldest first.
pub fn take_expired_log() -> Vec<(usize, Box<[u8]>)> {
    EXPIRED_LOG.with(|l| std::mem::take(&mut *l.borrow_mut()))
}

/// True when some database recorded expired keys or key events not yet taken.
#[inline]
pub fn events_pending() -> bool {
    EVENTS_PENDING.with(|c| c.get())
}

/// True, once, when some database recorded expired keys or key events since
/// the last call (they wait in `Db::expired` / `Db::key_events`).
#[inline]
pub fn take_events_pending() -> bool {
    EVENTS_PENDING.with(|c| c.replace(false))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::string::Str;
    use std::collections::HashSet;

    fn s(v: &str) -> Value {
        Value::Str(Str::from_bytes(v.as_bytes()))
    }

    /// SCAN's guarantee: every key present for the whole iteration is
    /// returned, while other keys are added and removed (growing and
    /// shrinking the table) between steps.
    #[test]
    fn scan_returns_every_stable_key_under_mutation() {
        let mut db = Db::new(0);
        let stable: Vec<String> = (0..3000).map(|i| format!("keep:{i}")).collect();
        for k in &stable {
            db.set(k.as_bytes(), s("v"));
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut next_tmp = 0u64;
        let mut live_tmp: Vec<String> = Vec::new();
        let mut rng = 0x1234_5678_u64;
        for step in 0..1_000_000 {
            cursor = db.scan(cursor, |k, _| {
                seen.insert(k.to_vec());
            });
            // Phase 1 grows the table a lot, phase 2 shrinks it back.
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            if step % 400 < 200 {
                for _ in 0..(rng % 60) {
                    let k = format!("tmp:{next_tmp}");
                    next_tmp += 1;
                    db.set(k.as_bytes(), s("t"));
                    live_tmp.push(k);
                }
            } else {
                for _ in 0..(rng % 80) {
                    if let Some(k) = live_tmp.pop() {
                        db.delete(k.as_bytes(), Why::ServerDel);
                    }
                }
            }
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(cursor, 0, "the scan must finish");
        for k in &stable {
            assert!(seen.contains(k.as_bytes()), "{k} missed");
        }
    }

    /// Access metadata: reads refresh it, `peek` and NO-TOUCH leave it.
    #[test]
    fn lfu_counter_starts_at_init_and_first_hit_increments() {
        let mut db = Db::new(0);
        db.set(b"k", s("v"));
        assert_eq!(db.peek_entry(b"k").unwrap().freq(), LFU_INIT_VAL);
        db.peek(b"k");
        assert_eq!(db.peek_entry(b"k").unwrap().freq(), LFU_INIT_VAL);
        set_no_touch(true);
        db.get(b"k");
        set_no_touch(false);
        assert_eq!(db.peek_entry(b"k").unwrap().freq(), LFU_INIT_VAL);
        db.get(b"k");
        // The first increment from LFU_INIT_VAL happens with probability 1.
        assert_eq!(db.peek_entry(b"k").unwrap().freq(), LFU_INIT_VAL + 1);
        // Overwriting keeps the counter, as Redis's dbOverwrite does.
        db.set(b"k", s("w"));
        assert_eq!(db.peek_entry(b"k").unwrap().freq(), LFU_INIT_VAL + 1);
        let mut n = LFU_INIT_VAL + 1;
        for _ in 0..10_000 {
            db.get(b"k");
            let f = db.peek_entry(b"k").unwrap().freq();
            assert!(f >= n && f <= 255);
            n = f;
        }
        assert!(n > LFU_INIT_VAL + 1, "the counter grows logarithmically");
    }

    /// `lfu-decay-time`: the counter loses one per period of that many
    /// minutes since its last decrement; 0 turns decay off.
    #[test]
    fn lfu_decay_time_is_honoured() {
        let mut db = Db::new(0);
        db.set(b"k", s("v"));
        let ten_minutes_ago = now_minutes().wrapping_sub(10) & 0xffff;
        db.keys.get_mut(b"k").unwrap().lfu = ten_minutes_ago << 8 | 20;
        let freq = |db: &Db, decay| {
            set_lfu_params(10, decay);
            db.peek_entry(b"k").unwrap().freq()
        };
        assert_eq!(freq(&db, 1), 10);
        assert_eq!(freq(&db, 5), 18);
        assert_eq!(freq(&db, 0), 20);
        assert_eq!(freq(&db, 3), 17);
        set_lfu_params(10, 1);
    }

    /// SWAPDB touches watched keys present on either side; an expired key
    /// replaced by nothing live is a stale deletion (Redis 7.0 multi.tcl:
    /// "SWAPDB does not touch watched stale keys").
    #[test]
    fn swap_touches_watched_keys() {
        let mut a = Db::new(0);
        let mut b = Db::new(1);
        a.set(b"stale", s("v"));
        a.set_expire(b"stale", 1);
        a.set(b"live", s("v"));
        b.set(b"theirs", s("v"));
        b.set(b"arrives_stale", s("v"));
        b.set_expire(b"arrives_stale", 1);
        for k in [
            &b"stale"[..],
            b"live",
            b"theirs",
            b"nowhere",
            b"arrives_stale",
        ] {
            a.watched.insert(k.into(), Watched::default());
        }
        a.swap_data(&mut b);
        let w = |k: &[u8]| {
            let w = &a.watched[k];
            (w.version, w.stale_deletes)
        };
        assert_eq!(w(b"stale"), (1, 1));
        assert_eq!(w(b"live"), (1, 0));
        assert_eq!(w(b"theirs"), (1, 0));
        assert_eq!(w(b"nowhere"), (0, 0));
        // Nothing replaced by an expired key: no touch, a stale arrival.
        assert_eq!(w(b"arrives_stale"), (0, 0));
        assert_eq!(a.watched[&b"arrives_stale"[..]].stale_arrivals, 1);
        assert!(a.peek(b"theirs").is_some() && b.peek(b"live").is_some());
    }

    /// RENAME-style take/put keeps value, expiry and metadata.
    #[test]
    fn take_and_put_keep_expiry() {
        let mut db = Db::new(0);
        db.set(b"a", s("1"));
        db.set_expire(b"a", i64::MAX / 2);
        let (e, at) = db.take(b"a").unwrap();
        assert!(db.peek(b"a").is_none());
        db.put(b"b", e, at);
        assert_eq!(db.expire_at(b"b"), Some(i64::MAX / 2));
        assert_eq!(db.expire_at(b"a"), None);
        assert_eq!(db.len(), 1);
        assert_eq!(db.expires_len(), 1);
    }
}
