//! The pub/sub registry and message delivery to subscribed clients.

use std::collections::HashMap;

use super::client::Client;
use super::Server;
use crate::db::ClientId;
use crate::types::glob;

/// Who listens where. Subscriber lists keep subscription order.
#[derive(Default)]
pub struct PubSub {
    pub channels: HashMap<Vec<u8>, Vec<ClientId>>,
    pub patterns: HashMap<Vec<u8>, Vec<ClientId>>,
    pub shard_channels: HashMap<Vec<u8>, Vec<ClientId>>,
}

/// Delivers `msg` on `channel` to channel and pattern subscribers; returns
/// how many clients received it (PUBLISH's reply).
pub fn publish(srv: &mut Server, current: &mut Client, channel: &[u8], msg: &[u8]) -> usize {
    let mut receivers = 0;
    let mut woken: Vec<ClientId> = Vec::new();
    if let Some(ids) = srv.pubsub.channels.get(channel) {
        for &id in ids {
            let delivered = srv.with_client(id, current, |c| {
                let r = &mut c.reply;
                r.push(3);
                r.bulk(b"message");
                r.bulk(channel);
                r.bulk(msg);
            });
            if delivered.is_some() {
                receivers += 1;
                woken.push(id);
            }
        }
    }
    for (pat, ids) in srv.pubsub.patterns.iter() {
        if !glob::matches(pat, channel, false) {
            continue;
        }
        for &id in ids {
            let delivered = srv.with_client(id, current, |c| {
                let r = &mut c.reply;
                r.push(4);
                r.bulk(b"pmessage");
                r.bulk(pat);
                r.bulk(channel);
                r.bulk(msg);
            });
            if delivered.is_some() {
                receivers += 1;
                woken.push(id);
            }
        }
    }
    for id in woken {
        if id != current.id {
            srv.wake(id);
        }
    }
    srv.stats.pubsub_messages += 1;
    receivers
}
