//! Replica migration: a replica of a master with more working replicas than `cluster-migration-barrier` moves to a master left without any (Redis's `clusterHandleSlaveMigration`).
//!
//! A master is orphaned when it serves slots, is not FAIL, has no replica
//! that is not FAIL, and is a migration target (MIGRATE_TO: it had
//! replicas, took over from a master that had some, or got its first slot
//! while other masters had some). Among the replicas of the masters with
//! the most working replicas, the one with the smallest id moves, once the
//! target has been orphaned for MIGRATION_DELAY_MS.

use super::now_ms;
use crate::cluster::node::{FAIL, HANDSHAKE, MIGRATE_TO, MYSELF, NOADDR, PFAIL};
use crate::cluster::Cluster;
use crate::server::Server;

/// How long a master stays orphaned before a replica moves to it (Redis's
/// CLUSTER_SLAVE_MIGRATION_DELAY), ms.
const MIGRATION_DELAY_MS: i64 = 5000;

/// The replicas of master `m` that are not FAIL (Redis's
/// `clusterCountNonFailingSlaves`).
fn working_replicas(c: &Cluster, m: usize) -> usize {
    c.replicas(m)
        .filter(|&r| c.nodes[r].flags & FAIL == 0)
        .count()
}

/// The cron's step on a replica (the end of Redis's `clusterCron`): when
/// some master is orphaned and this replica's master has the most working
/// replicas (at least two), consider moving.
pub fn cron(srv: &mut Server) {
    if srv.config.get("cluster-allow-replica-migration") != Some("yes") {
        return;
    }
    let barrier = srv.config.get_i64("cluster-migration-barrier");
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    let me = c.myself;
    if !c.nodes[me].is_replica() {
        return;
    }
    let my_master = c.master_of(me);
    let (mut orphaned, mut max, mut mine) = (0, 0, 0);
    for n in 0..c.nodes.len() {
        let node = &c.nodes[n];
        if node.flags & (MYSELF | NOADDR | HANDSHAKE) != 0 || node.is_replica() || node.failed() {
            continue;
        }
        let ok = working_replicas(c, n);
        if ok == 0 && node.numslots > 0 && node.flags & MIGRATE_TO != 0 {
            orphaned += 1;
        }
        max = max.max(ok);
        if my_master == Some(n) {
            mine = ok;
        }
    }
    if orphaned == 0 || max < 2 || mine != max {
        return;
    }
    if let Some(target) = pick_target(c, max, barrier) {
        crate::log::warning(&format!(
            "Migrating to orphaned master {}",
            c.nodes[target].id
        ));
        super::role::set_master(srv, target);
    }
}

/// Redis's `clusterHandleSlaveMigration`: the orphaned master to move to,
/// when this replica is the one to move and the time has come.
fn pick_target(c: &mut Cluster, max: usize, barrier: i64) -> Option<usize> {
    if !c.ok {
        return None;
    }
    let me = c.myself;
    let my_master = c.master_of(me)?;
    // My master keeps more than `barrier` working replicas without me.
    let ok_mine = c
        .replicas(my_master)
        .filter(|&r| c.nodes[r].flags & (FAIL | PFAIL) == 0)
        .count();
    if ok_mine as i64 <= barrier {
        return None;
    }
    let now = now_ms();
    let mut target = None;
    let mut candidate = me;
    for n in 0..c.nodes.len() {
        let node = &c.nodes[n];
        let master = !node.is_replica();
        let ok = if master { working_replicas(c, n) } else { 0 };
        let is_orphaned = master && !node.failed() && node.flags & MIGRATE_TO != 0 && ok == 0;
        if is_orphaned {
            if target.is_none() && node.numslots > 0 {
                target = Some(n);
            }
            if c.nodes[n].orphaned_time == 0 {
                c.nodes[n].orphaned_time = now;
            }
        } else {
            c.nodes[n].orphaned_time = 0;
        }
        if ok == max {
            for r in c.replicas(n).collect::<Vec<_>>() {
                if c.nodes[r].id < c.nodes[candidate].id {
                    candidate = r;
                }
            }
        }
    }
    let t = target?;
    (candidate == me && now - c.nodes[t].orphaned_time > MIGRATION_DELAY_MS).then_some(t)
}
