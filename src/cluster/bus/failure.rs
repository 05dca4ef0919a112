//! Failure detection: PFAIL after `cluster-node-timeout` without a PONG, FAIL once a majority of masters reports it, FAIL messages.
//!
//! A failure report is a master saying, in its gossip, that a node is PFAIL
//! or FAIL; reports older than twice the node timeout no longer count
//! (Redis's CLUSTER_FAIL_REPORT_VALIDITY_MULT). A FAIL is undone when the
//! node answers again and is a replica or has no slots, or after twice the
//! node timeout when nobody took its slots.

use super::msg::{self, Body, Msg};
use super::{now_ms, TODO_SAVE_CONFIG, TODO_UPDATE_STATE};
use crate::cluster::node::{FAIL, HANDSHAKE, MASTER, MYSELF, NOADDR, PFAIL, SLAVE};
use crate::cluster::Cluster;

const REPORT_VALIDITY_MULT: i64 = 2;
const FAIL_UNDO_TIME_MULT: i64 = 2;

/// Records (or refreshes) `reporter`'s report about `n`; true when new.
pub fn add_report(c: &mut Cluster, n: usize, reporter: usize) -> bool {
    let id = c.nodes[reporter].id.clone();
    let now = now_ms();
    let reports = &mut c.nodes[n].fail_reports;
    if let Some(r) = reports.iter_mut().find(|(r, _)| *r == id) {
        r.1 = now;
        return false;
    }
    reports.push((id, now));
    true
}

/// Drops reports older than the validity window.
fn cleanup(c: &mut Cluster, n: usize, timeout: i64) {
    let now = now_ms();
    let max = timeout * REPORT_VALIDITY_MULT;
    c.nodes[n].fail_reports.retain(|(_, t)| now - t <= max);
}

/// Removes `reporter`'s report about `n`; true when there was one.
pub fn del_report(c: &mut Cluster, n: usize, reporter: usize, timeout: i64) -> bool {
    let id = c.nodes[reporter].id.clone();
    let reports = &mut c.nodes[n].fail_reports;
    let Some(i) = reports.iter().position(|(r, _)| *r == id) else {
        return false;
    };
    reports.remove(i);
    cleanup(c, n, timeout);
    true
}

/// The valid reports about `n` (CLUSTER COUNT-FAILURE-REPORTS).
pub fn count_reports(c: &mut Cluster, n: usize, timeout: i64) -> usize {
    cleanup(c, n, timeout);
    c.nodes[n].fail_reports.len()
}

/// Turns PFAIL into FAIL when the masters' reports (this node counting
/// itself when a master) reach a majority of the cluster's size, and tells
/// everyone (Redis's `markNodeAsFailingIfNeeded`).
pub fn mark_failing_if_needed(c: &mut Cluster, n: usize, timeout: i64, offset: u64) {
    let quorum = c.size / 2 + 1;
    if c.nodes[n].flags & PFAIL == 0 || c.nodes[n].flags & FAIL != 0 {
        return;
    }
    let mut failures = count_reports(c, n, timeout);
    if c.me().flags & MASTER != 0 {
        failures += 1;
    }
    if failures < quorum {
        return;
    }
    crate::log::notice(&format!(
        "Marking node {} as failing (quorum reached).",
        c.nodes[n].id
    ));
    let node = &mut c.nodes[n];
    node.flags &= !PFAIL;
    node.flags |= FAIL;
    node.fail_time = now_ms();
    let id = node.id.clone();
    send_fail(c, &id, offset);
    c.todo(TODO_UPDATE_STATE | TODO_SAVE_CONFIG);
}

/// Broadcasts FAIL about node `id`.
pub fn send_fail(c: &mut Cluster, id: &str, offset: u64) {
    let m = Msg {
        hdr: super::gossip::header(c, msg::FAIL, offset),
        body: Body::Fail {
            about: super::gossip::id_bytes(id),
        },
    };
    let bytes = msg::encode(&m);
    c.broadcast(&bytes);
}

/// A FAIL node answered again (Redis's `clearNodeFailureIfNeeded`).
pub fn clear_if_needed(c: &mut Cluster, n: usize, timeout: i64) {
    let now = now_ms();
    let node = &mut c.nodes[n];
    if node.flags & SLAVE != 0 || node.numslots == 0 {
        crate::log::notice(&format!(
            "Clear FAIL state for node {}: {} is reachable again.",
            node.id,
            if node.flags & SLAVE != 0 {
                "replica"
            } else {
                "master without slots"
            }
        ));
        node.flags &= !FAIL;
        c.todo(TODO_UPDATE_STATE | TODO_SAVE_CONFIG);
        return;
    }
    if node.flags & MASTER != 0 && now - node.fail_time > timeout * FAIL_UNDO_TIME_MULT {
        crate::log::notice(&format!(
            "Clear FAIL state for node {}: is reachable again and nobody is serving its slots after some time.",
            node.id
        ));
        node.flags &= !FAIL;
        c.todo(TODO_UPDATE_STATE | TODO_SAVE_CONFIG);
    }
}

/// The cron's pass over the nodes (the second loop of Redis's
/// `clusterCron`): stale links are dropped, PINGs sent to nodes whose PONG
/// is older than half the timeout, and nodes silent for longer than the
/// timeout marked PFAIL. True when a node became PFAIL.
pub fn check_timeouts(c: &mut Cluster, timeout: i64, offset: u64) -> bool {
    let mut update = false;
    for n in 0..c.nodes.len() {
        let now = now_ms();
        let node = &c.nodes[n];
        if node.flags & (MYSELF | NOADDR | HANDSHAKE) != 0 {
            continue;
        }
        let ping_delay = now - node.ping_sent;
        let data_delay = now - node.data_received;
        if let Some(l) = node.link {
            let ctime = c.bus.links.get(&l).map_or(now, |l| l.ctime);
            if now - ctime > timeout
                && node.ping_sent != 0
                && ping_delay > timeout / 2
                && data_delay > timeout / 2
            {
                // Connected but silent: a new link will be tried.
                c.free_link(l);
            }
        }
        let node = &c.nodes[n];
        if node.link.is_some() && node.ping_sent == 0 && now - node.pong_received > timeout / 2 {
            let l = node.link;
            super::gossip::send_ping(c, l, msg::PING, offset);
            continue;
        }
        if node.ping_sent == 0 {
            continue;
        }
        let delay = ping_delay.min(data_delay);
        if delay > timeout && node.flags & (PFAIL | FAIL) == 0 {
            crate::log::debug(&format!("*** NODE {} possibly failing", node.id));
            c.nodes[n].flags |= PFAIL;
            update = true;
        }
    }
    update
}
