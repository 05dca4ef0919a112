//! Shard channels of slots this node stops serving lose their subscribers, who are told so (Redis's `removeChannelsInSlot`).

use super::slot::key_slot;
use super::Cluster;
use crate::server::client::Client;
use crate::server::Server;

/// Per slot, its owner when that node is in this node's shard: the node
/// itself or, for a replica, its master (Redis's `clusterGetNodesServingMySlots`
/// holding myself).
pub fn in_my_shard(c: &Cluster) -> Vec<Option<usize>> {
    let mine = c.shard_master(c.myself).unwrap_or(c.myself);
    c.owners
        .iter()
        .map(|o| o.filter(|&n| n == c.myself || c.shard_master(n) == Some(mine)))
        .collect()
}

/// After a change of the view (ADDSLOTS, DELSLOTS, SETSLOT, FLUSHSLOTS,
/// RESET, or a slot taken over the bus): every shard channel of a slot
/// that left its owner while that owner was in this node's shard (as the
/// last change saw it) is unsubscribed, each subscriber getting an
/// `sunsubscribe` push, on masters and replicas alike (Redis's
/// `clusterDelSlot`). A replica promoted in place of its master keeps its
/// channels: Redis makes it a master before it takes the slots over.
/// `current` is the client that made the change.
pub fn after_change(srv: &mut Server, current: &mut Client) {
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    let me = Some(c.myself);
    let gone: Vec<bool> = c
        .served
        .iter()
        .zip(&c.owners)
        .map(|(was, now)| was.is_some() && was != now && *now != me)
        .collect();
    let any = gone.contains(&true);
    c.served = in_my_shard(c);
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
