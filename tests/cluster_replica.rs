//! Replicas in a cluster, as Redis's runtest-cluster units see them: shard
//! channels dropped on a replica when its master's slot moves. Each
//! scenario runs on real redis-servers too: what they show is the expected
//! value.

mod common;
use common::cluster_node::*;
use common::Raw;

use std::time::Duration;

/// A channel in slot 0 (served by the first master of `three_masters`).
const CHANNEL: &[u8] = b"ch{06S}";

/// One push read within 60 s (a limit for a hang, not a measure).
fn next_push(sub: &mut Raw) -> String {
    let raw = sub.try_read_raw(Duration::from_secs(60));
    String::from_utf8_lossy(&raw.unwrap_or_default()).into_owned()
}

/// SSUBSCRIBE on the master of slot 0 and on its replica, then slot 0
/// moves to the second master: what each subscriber receives.
fn slot_moves_away(real: bool) -> Vec<String> {
    let tag = if real { "rc-sunsub-r" } else { "rc-sunsub" };
    let nodes = masters_and_replica(real, tag);
    let mut subs: Vec<Raw> = [&nodes[0], &nodes[3]]
        .iter()
        .map(|n| {
            let mut s = Raw::connect_to(n.addr());
            s.cmd(&[b"SSUBSCRIBE", CHANNEL]);
            s.read_raw();
            s
        })
        .collect();
    let (from, to) = (nodes[0].id(), nodes[1].id());
    nodes[0]
        .cmd(&["CLUSTER", "SETSLOT", "0", "MIGRATING", &to])
        .unwrap();
    nodes[1]
        .cmd(&["CLUSTER", "SETSLOT", "0", "IMPORTING", &from])
        .unwrap();
    nodes[0]
        .cmd(&["CLUSTER", "SETSLOT", "0", "NODE", &to])
        .unwrap();
    nodes[1]
        .cmd(&["CLUSTER", "SETSLOT", "0", "NODE", &to])
        .unwrap();
    subs.iter_mut().map(next_push).collect()
}

#[test]
fn a_replica_drops_the_shard_channels_of_a_slot_its_master_gave_away() {
    let theirs = slot_moves_away(true);
    let ours = slot_moves_away(false);
    assert_eq!(ours, theirs);
    assert!(theirs[1].contains("sunsubscribe"), "{theirs:?}");
}
