//! This node's role in its shard: turning into a replica of a master (CLUSTER REPLICATE, or a master whose slots all went to another), through the replication code in `repl::replica`.

use super::{TODO_SAVE_CONFIG, TODO_SLOTS, TODO_UPDATE_STATE};
use crate::cluster::node::{MASTER, MIGRATE_TO, NOADDR, SLAVE};
use crate::cluster::slot::SLOTS;
use crate::server::Server;

/// Makes this node a replica of node `n` (Redis's `clusterSetMaster`): a
/// master gives up its open slots; replication starts towards `n`.
pub fn set_master(srv: &mut Server, n: usize) {
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    let me = c.myself;
    if n == me {
        return;
    }
    if c.nodes[me].flags & MASTER != 0 {
        c.nodes[me].flags &= !(MASTER | MIGRATE_TO);
        c.nodes[me].flags |= SLAVE;
        for s in 0..SLOTS {
            c.importing[s] = None;
            c.migrating[s] = None;
        }
    }
    c.set_replica_of(me, Some(n));
    let (ip, port) = (c.nodes[n].ip.clone(), c.nodes[n].port);
    c.todo(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_SLOTS);
    crate::repl::replica::set_master(srv, &ip, port);
    super::failover::reset_manual(srv);
}

/// The cron's check (Redis's `clusterCron`): a replica whose replication
/// is off starts it once its master's address is known; a replica whose
/// master's address changed follows it.
pub fn cron(srv: &mut Server) {
    let Some(c) = srv.cluster.as_deref() else {
        return;
    };
    let me = c.me();
    if me.flags & SLAVE == 0 {
        return;
    }
    let Some(m) = c.master_of(c.myself) else {
        return;
    };
    let master = &c.nodes[m];
    if master.flags & NOADDR != 0 || master.ip.is_empty() {
        return;
    }
    let (ip, port) = (master.ip.clone(), master.port);
    let following = srv.replica.link.as_ref().map(|l| (l.host.clone(), l.port));
    if following != Some((ip.clone(), port)) {
        crate::repl::replica::set_master(srv, &ip, port);
    }
}

/// A master's slots all went to `sender` (Redis's
/// `clusterUpdateSlotsConfigWith`, after the loop): this node follows it as
/// a replica. True when it did.
pub fn follow_new_master(srv: &mut Server, sender: usize) -> bool {
    let allow = srv.config.get("cluster-allow-replica-migration") == Some("yes");
    let Some(c) = srv.cluster.as_deref_mut() else {
        return false;
    };
    let Some(pending) = c.new_master.take() else {
        return false;
    };
    if pending.0 != sender {
        return false;
    }
    let (sender_slots, migrated) = (pending.1, pending.2);
    let cur = c.shard_master(c.myself);
    if cur.is_none_or(|m| c.nodes[m].numslots != 0) || !(allow || sender_slots == migrated) {
        return false;
    }
    crate::log::warning(&format!(
        "Configuration change detected. Reconfiguring myself as a replica of {}",
        c.nodes[sender].id
    ));
    set_master(srv, sender);
    true
}
