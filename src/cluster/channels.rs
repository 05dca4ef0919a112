//! Shard channels of slots this node stops serving lose their subscribers, who are told so (Redis's `removeChannelsInSlot`).

use super::slot::{key_slot, SLOTS};
use crate::server::client::Client;
use crate::server::Server;

/// After a change of the view (ADDSLOTS, DELSLOTS, SETSLOT, FLUSHSLOTS,
/// RESET): every shard channel whose slot this node served at the last
/// change and no longer does is unsubscribed, each subscriber getting an
/// `sunsubscribe` push. `current` is the client that made the change.
pub fn after_change(srv: &mut Server, current: &mut Client) {
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    let me = c.myself;
    let mut gone = vec![false; SLOTS];
    let mut any = false;
    for (s, served) in c.served.iter_mut().enumerate() {
        let now = c.owners[s] == Some(me);
        if *served && !now {
            gone[s] = true;
            any = true;
        }
        *served = now;
    }
    if !any || srv.pubsub.shard_channels.is_empty() {
        return;
    }
    let mut channels: Vec<(u16, Vec<u8>)> = srv
        .pubsub
        .shard_channels
        .keys()
        .map(|ch| (key_slot(ch), ch.clone()))
        .filter(|(slot, _)| gone[*slot as usize])
        .collect();
    // In Redis's order: by slot, then by name (its slots_to_channels rax).
    channels.sort();
    for (_, ch) in channels {
        let subs = srv.pubsub.shard_channels.remove(&ch).unwrap_or_default();
        for s in subs {
            let left = if s.id == current.id {
                current.shard_channels.remove(&ch);
                current.shard_channels.len()
            } else {
                let Some(cell) = s.cell.as_ref() else {
                    continue;
                };
                let Ok(mut other) = cell.state.try_borrow_mut() else {
                    continue;
                };
                other.shard_channels.remove(&ch);
                other.shard_channels.len()
            };
            let frame = unsubscribed(&ch, left);
            crate::server::pubsub::deliver(srv, current, s.id, &frame);
        }
    }
}

/// `["sunsubscribe", channel, count]` in the form `pubsub::frame` makes.
fn unsubscribed(channel: &[u8], count: usize) -> Vec<u8> {
    let mut f = b"*3\r\n$12\r\nsunsubscribe\r\n$".to_vec();
    f.extend_from_slice(itoa::Buffer::new().format(channel.len()).as_bytes());
    f.extend_from_slice(b"\r\n");
    f.extend_from_slice(channel);
    f.extend_from_slice(b"\r\n:");
    f.extend_from_slice(itoa::Buffer::new().format(count).as_bytes());
    f.extend_from_slice(b"\r\n");
    f
}
