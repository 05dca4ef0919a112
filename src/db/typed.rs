//! Typed key access: the value of one Redis type at a key, WRONGTYPE when another type is there.
//!
//! Every command reaches a key's value through [`Db::read`], [`Db::write`] or
//! [`Db::write_or_create`] with the type it works on (`db.read::<List>(key)`).
//! Reads hand out shared references, so a read command cannot change a value
//! by accident; they still count the keyspace hit or miss and record the
//! access (LRU/LFU, metadata beside the value), as Redis's `lookupKeyRead`.

use super::{announce_new, Db, Entry, Value};
use crate::error::Error;
use crate::types::{hash::Hash, list::List, set::Set, stream::Stream, string::Str, zset::ZSet};

/// A Redis value type: its projection out of [`Value`] and its way back in.
pub trait Typed: Sized {
    /// The value as this type, or None when it holds another type.
    fn of(v: &Value) -> Option<&Self>;
    /// As [`Typed::of`], for changing it.
    fn of_mut(v: &mut Value) -> Option<&mut Self>;
    /// The value holding this.
    fn into_value(self) -> Value;
}

macro_rules! typed {
    ($t:ty, $variant:ident, $wrap:expr) => {
        impl Typed for $t {
            #[inline]
            fn of(v: &Value) -> Option<&Self> {
                match v {
                    Value::$variant(x) => Some(x),
                    _ => None,
                }
            }
            #[inline]
            fn of_mut(v: &mut Value) -> Option<&mut Self> {
                match v {
                    Value::$variant(x) => Some(x),
                    _ => None,
                }
            }
            #[inline]
            fn into_value(self) -> Value {
                Value::$variant($wrap(self))
            }
        }
    };
}

typed!(Str, Str, std::convert::identity);
typed!(List, List, std::convert::identity);
typed!(Hash, Hash, std::convert::identity);
typed!(Set, Set, Box::new);
typed!(ZSet, ZSet, Box::new);
typed!(Stream, Stream, Box::new);

impl Db {
    /// The `T` at `key` for reading (Redis's `lookupKeyRead` + `checkType`):
    /// counts a keyspace hit or miss, records the access, raises `keymiss`.
    #[inline]
    pub fn read<T: Typed>(&mut self, key: &[u8]) -> Result<Option<&T>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => T::of(v).map(Some).ok_or(Error::WrongType),
        }
    }

    /// The `T` at `key` for changing it (Redis's `lookupKeyWrite` +
    /// `checkType`): no hit/miss counting; records the access.
    #[inline]
    pub fn write<T: Typed>(&mut self, key: &[u8]) -> Result<Option<&mut T>, Error> {
        match self.get_mut(key) {
            None => Ok(None),
            Some(v) => T::of_mut(v).map(Some).ok_or(Error::WrongType),
        }
    }

    /// The `T` at `key` for changing it, created by `make` when the key is
    /// absent (with the `new` event and waking clients blocked on it); the
    /// bool says whether it was created. Another type there: WRONGTYPE, and
    /// nothing is created.
    #[inline]
    pub fn write_or_create<T: Typed>(
        &mut self,
        key: &[u8],
        make: impl FnOnce() -> T,
    ) -> Result<(&mut T, bool), Error> {
        self.expire_if_needed(key);
        let Db {
            keys,
            rng,
            event_mask,
            key_events,
            waiters,
            ready,
            ..
        } = self;
        let (e, created) = keys.get_or_insert_with(key, || {
            announce_new(*event_mask, key_events, waiters, ready, key);
            Entry::new(make().into_value())
        });
        if !created {
            e.access(rng);
        }
        T::of_mut(&mut e.val)
            .map(|t| (t, created))
            .ok_or(Error::WrongType)
    }
}

impl Db {
    /// After a read of the stream at `key`: drops the node caches it filled
    /// beyond the few it keeps (see `types::stream::store`); no access is
    /// recorded, nothing expires.
    pub fn release_stream_cache(&mut self, key: &[u8]) {
        if let Some(Value::Stream(s)) = self.keys.get_mut(key).map(|e| &mut e.val) {
            s.release_cache();
        }
    }
}

impl Value {
    /// True for a list, hash, set or sorted set with no elements left: Redis
    /// never keeps one, the key is deleted.
    #[inline]
    pub fn is_empty_collection(&self) -> bool {
        match self {
            Value::Str(_) => false,
            Value::List(l) => l.is_empty(),
            Value::Hash(h) => h.is_empty(),
            Value::Set(s) => s.is_empty(),
            Value::ZSet(z) => z.is_empty(),
            // Redis keeps an empty stream (its ids and groups live on).
            Value::Stream(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::notify;

    fn db_with_string() -> Db {
        let mut db = Db::new(0);
        db.set(b"s", Value::Str(Str::from_bytes(b"v")));
        db
    }

    /// Each lookup answers WRONGTYPE for another type, and creating never
    /// replaces a value of another type.
    #[test]
    fn another_type_is_wrongtype() {
        let mut db = db_with_string();
        assert!(matches!(db.read::<List>(b"s"), Err(Error::WrongType)));
        assert!(matches!(db.write::<Hash>(b"s"), Err(Error::WrongType)));
        assert!(matches!(
            db.write_or_create(b"s", Set::new),
            Err(Error::WrongType)
        ));
        assert!(matches!(db.peek(b"s"), Some(Value::Str(_))));
        assert_eq!(db.read::<Str>(b"s").unwrap().unwrap().as_bytes(), &b"v"[..]);
    }

    /// Reads count hits and misses (a wrong type is a hit, as in Redis);
    /// writes count neither.
    #[test]
    fn reads_count_hits_and_misses() {
        let mut db = db_with_string();
        let _ = db.read::<Str>(b"s");
        let _ = db.read::<List>(b"s");
        let _ = db.read::<Str>(b"missing");
        let _ = db.write::<Str>(b"s");
        let _ = db.write::<Str>(b"missing");
        assert_eq!((db.hits, db.misses), (2, 1));
    }

    /// `write_or_create` creates once (with the `new` event, and no access:
    /// a new key's LFU counter stays at its initial value), then finds.
    #[test]
    fn write_or_create_creates_once() {
        let mut db = Db::new(0);
        db.event_mask = notify::NEW;
        let (l, created) = db.write_or_create(b"l", List::new).unwrap();
        assert!(created && l.is_empty());
        assert_eq!(db.peek_entry(b"l").unwrap().freq(), crate::db::LFU_INIT_VAL);
        assert_eq!(db.key_events.len(), 1);
        let (_, created) = db
            .write_or_create::<List>(b"l", || unreachable!("exists"))
            .unwrap();
        assert!(!created);
        assert_eq!(db.key_events.len(), 1);
        // The first access of a key at the initial value always counts.
        assert_eq!(
            db.peek_entry(b"l").unwrap().freq(),
            crate::db::LFU_INIT_VAL + 1
        );
        let limits = crate::types::zset::Limits {
            entries: 128,
            value: 64,
        };
        let (z, created) = db
            .write_or_create(b"z", || ZSet::with_hint(1, 1, limits))
            .unwrap();
        assert!(created && z.is_empty());
        assert!(db.peek(b"z").unwrap().is_empty_collection());
        assert!(!db.peek(b"s").is_some_and(|v| v.is_empty_collection()));
    }
}
