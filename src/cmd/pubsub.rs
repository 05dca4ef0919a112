//! Pub/sub commands. (SUBSCRIBE and friends arrive with the pub/sub family.)

use crate::command::CommandSpec;
use crate::server::client::Client;
use crate::server::Server;

pub static SPECS: &[CommandSpec] = &[];

/// Removes every subscription a client holds (disconnect, RESET).
pub fn unsubscribe_all(srv: &mut Server, c: &mut Client) {
    let id = c.id;
    for (set, map) in [
        (&mut c.channels, &mut srv.pubsub.channels),
        (&mut c.patterns, &mut srv.pubsub.patterns),
        (&mut c.shard_channels, &mut srv.pubsub.shard_channels),
    ] {
        for ch in set.drain() {
            if let Some(ids) = map.get_mut(&ch) {
                ids.retain(|&x| x != id);
                if ids.is_empty() {
                    map.remove(&ch);
                }
            }
        }
    }
}
