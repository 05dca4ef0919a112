//! Consumer groups: the last delivered id, the read counter, the pending entries list and the consumers.
//!
//! Invariant: every id in a consumer's `pel` is in its group's `pel` with
//! that consumer's name as owner, and every group `pel` entry is in exactly
//! its owner's `pel` (Redis shares one NACK between the two radix trees).

use std::collections::{BTreeMap, BTreeSet};

use super::id::StreamId;

/// A delivered, not yet acknowledged entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nack {
    /// Unix milliseconds of the last delivery.
    pub delivery_time: i64,
    pub delivery_count: u64,
    /// The consumer that owns it.
    pub consumer: Box<[u8]>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Consumer {
    /// Unix milliseconds of the last time it read or claimed.
    pub seen_time: i64,
    pub pel: BTreeSet<StreamId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub last_id: StreamId,
    /// Logical reads, or `ENTRIES_READ_INVALID`.
    pub entries_read: i64,
    pub pel: BTreeMap<StreamId, Nack>,
    /// By name, in byte order (as Redis's rax lists them).
    pub consumers: BTreeMap<Box<[u8]>, Consumer>,
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// The consumer, created (seen now) when missing: the bool says created.
    pub fn consumer_or_create(&mut self, name: &[u8], now_ms: i64) -> (&mut Consumer, bool) {
        let created = !self.consumers.contains_key(name);
        let c = self
            .consumers
            .entry(name.into())
            .or_insert_with(|| Consumer {
                seen_time: now_ms,
                pel: BTreeSet::new(),
            });
        (c, created)
    }

    /// Deletes a consumer and its pending entries: how many it had.
    pub fn remove_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// Acknowledges `id`: true when it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(n) = self.pel.remove(&id) else {
            return false;
        };
        if let Some(c) = self.consumers.get_mut(&n.consumer) {
            c.pel.remove(&id);
        }
        true
    }

    /// Records a delivery of `id` to `consumer` (created by the caller):
    /// a new NACK, or the existing one moved to this consumer with its
    /// count reset to 1, as Redis's `streamReplyWithRange`.
    pub fn deliver(&mut self, id: StreamId, consumer: &[u8], now_ms: i64) {
        let nack = Nack {
            delivery_time: now_ms,
            delivery_count: 1,
            consumer: consumer.into(),
        };
        if let Some(old) = self.pel.insert(id, nack) {
            if let Some(c) = self.consumers.get_mut(&old.consumer) {
                c.pel.remove(&id);
            }
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }

    /// Moves the pending entry `id` to `consumer` (XCLAIM).
    pub fn transfer(&mut self, id: StreamId, consumer: &[u8]) {
        let Some(n) = self.pel.get_mut(&id) else {
            return;
        };
        if *n.consumer != *consumer {
            let old = std::mem::replace(&mut n.consumer, consumer.into());
            if let Some(c) = self.consumers.get_mut(&old) {
                c.pel.remove(&id);
            }
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }
}
