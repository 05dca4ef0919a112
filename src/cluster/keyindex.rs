//! The keys of each hash slot (Redis's `slots_to_keys`), kept by the database in cluster mode only.
//!
//! `db::Db` adds and removes keys here on its one add and delete path, so
//! CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT never scan the keyspace.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use super::slot::{key_slot, SLOTS};

/// One slot's keys, newest first when listed (as Redis's per-slot list,
/// which adds at its head).
#[derive(Default)]
struct Slot {
    order: HashMap<Rc<[u8]>, u64>,
    keys: BTreeMap<u64, Rc<[u8]>>,
}

pub struct SlotIndex {
    slots: Vec<Slot>,
    /// Arrival counter: orders the keys of a slot.
    seq: u64,
}

impl Default for SlotIndex {
    fn default() -> Self {
        SlotIndex {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            seq: 0,
        }
    }
}

impl SlotIndex {
    #[inline]
    pub fn add(&mut self, key: &[u8]) {
        let slot = &mut self.slots[key_slot(key) as usize];
        self.seq += 1;
        let k: Rc<[u8]> = key.into();
        if let Some(old) = slot.order.insert(k.clone(), self.seq) {
            slot.keys.remove(&old);
        }
        slot.keys.insert(self.seq, k);
    }

    #[inline]
    pub fn remove(&mut self, key: &[u8]) {
        let slot = &mut self.slots[key_slot(key) as usize];
        if let Some(seq) = slot.order.remove(key) {
            slot.keys.remove(&seq);
        }
    }

    pub fn clear(&mut self) {
        for s in &mut self.slots {
            *s = Slot::default();
        }
    }

    /// Keys in `slot` (expired ones not yet reclaimed included, as Redis counts them).
    pub fn count(&self, slot: u16) -> usize {
        self.slots[slot as usize].order.len()
    }

    /// Up to `n` keys of `slot`, newest first.
    pub fn keys(&self, slot: u16, n: usize) -> impl Iterator<Item = &[u8]> + '_ {
        self.slots[slot as usize]
            .keys
            .values()
            .rev()
            .take(n)
            .map(|k| &**k)
    }
}

/// Deletes every key of `slot` in database 0 as Redis's `delKeysInSlot`
/// does when the bus gives the slot to another node: WATCH touched, a
/// `del` event, a DEL propagated.
pub fn delete_keys_in_slot(srv: &mut crate::server::Server, slot: u16) {
    let keys: Vec<Vec<u8>> = match srv.ks.dbs[0].slots.as_deref() {
        Some(ix) => ix.keys(slot, ix.count(slot)).map(|k| k.to_vec()).collect(),
        None => return,
    };
    let mut internal = crate::server::client::Client::new(
        0,
        String::new(),
        String::new(),
        crate::server::client::ConnKind::Script,
        false,
    );
    for key in keys {
        if srv.ks.dbs[0].delete(&key, crate::db::lazyfree::Why::ServerDel) {
            srv.ks.dbs[0].touch(&key);
            crate::server::notify::emit(
                srv,
                &mut internal,
                crate::server::notify::GENERIC,
                "del",
                0,
                &key,
            );
            srv.prop.deleted_outside_command(0, &key, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_adds_and_removes() {
        let mut ix = SlotIndex::default();
        ix.add(b"{a}1");
        ix.add(b"{a}2");
        ix.add(b"b");
        let s = key_slot(b"a");
        assert_eq!(ix.count(s), 2);
        ix.remove(b"{a}1");
        assert_eq!(ix.count(s), 1);
        assert_eq!(ix.keys(s, 10).collect::<Vec<_>>(), vec![&b"{a}2"[..]]);
        ix.clear();
        assert_eq!(ix.count(key_slot(b"b")), 0);
    }
}
