//! Cluster mode (`cluster-enabled yes`): this node's view of the cluster, its slots and state.
//!
//! One node's view, as Redis's `clusterState`: the nodes it knows (itself
//! first learned from nodes.conf or made at start), which node serves each
//! of the 16384 slots, the slots being migrated or imported, the epochs and
//! whether the cluster is `ok`. Other nodes are learnt from nodes.conf and
//! from the cluster bus (`bus`); the state follows Redis's
//! `clusterUpdateState` from what this view says.

pub mod blocked;
pub mod bus;
pub mod channels;
pub mod config_file;
pub mod keyindex;
pub mod node;
pub mod redirect;
pub mod slot;

use node::{Node, FAIL, MASTER, MYSELF, PFAIL};
use slot::SLOTS;

/// Time a master waits after start before its state may turn ok (Redis's
/// CLUSTER_WRITABLE_DELAY), in milliseconds.
const WRITABLE_DELAY_MS: i64 = 2000;
/// Bounds of the delay before a master that was in the minority serves again.
const MIN_REJOIN_DELAY_MS: i64 = 500;
const MAX_REJOIN_DELAY_MS: i64 = 5000;

/// Default offset of the bus port from the client port.
pub const PORT_INCR: u32 = 10000;

pub struct Cluster {
    /// Every known node; `myself` indexes this node.
    pub nodes: Vec<Node>,
    pub myself: usize,
    /// The node serving each slot.
    pub owners: Vec<Option<usize>>,
    /// Slots this node migrates to (`[slot->-id]`) or imports from.
    pub migrating: Vec<Option<usize>>,
    pub importing: Vec<Option<usize>>,
    pub current_epoch: u64,
    pub last_vote_epoch: u64,
    pub ok: bool,
    /// Masters serving at least one slot (CLUSTER INFO cluster_size).
    pub size: usize,
    first_update_ms: i64,
    among_minority_ms: i64,
    /// Where nodes.conf lives (absolute, or relative to the working directory).
    pub config_path: std::path::PathBuf,
    /// Per slot, its owner at the last change when that owner was in this
    /// node's shard (itself, or its master for a replica), for
    /// `channels::after_change`.
    pub served: Vec<Option<usize>>,
    /// Slots still bound to an owner that stopped claiming them (Redis's
    /// `owner_not_claiming_slot`): not spread in UPDATE messages.
    pub not_claiming: Vec<bool>,
    /// Slots this node lost to the bus while it may hold keys in them
    /// (their keys are deleted once the message is handled).
    pub dirty_slots: Vec<u16>,
    /// A master that took this node's (or its master's) slots: (node,
    /// slots it claims, slots it took from us), for `bus::role`.
    pub new_master: Option<(usize, usize, usize)>,
    /// A slot update ran for the message being handled (`bus::gossip`'s
    /// `after_slots_update` checks this node's role then).
    pub slots_updated: bool,
    /// `cluster-announce-ip` (sent in every header when set).
    pub announced_ip: String,
    pub bus: bus::Bus,
}

impl Cluster {
    /// A fresh node: a new id, master, no slots.
    pub fn fresh(id: String, config_path: std::path::PathBuf) -> Cluster {
        Cluster {
            nodes: vec![Node::new(id, MYSELF | MASTER)],
            myself: 0,
            owners: vec![None; SLOTS],
            migrating: vec![None; SLOTS],
            importing: vec![None; SLOTS],
            current_epoch: 0,
            last_vote_epoch: 0,
            ok: false,
            size: 1,
            first_update_ms: 0,
            among_minority_ms: 0,
            config_path,
            served: vec![None; SLOTS],
            not_claiming: vec![false; SLOTS],
            dirty_slots: Vec::new(),
            new_master: None,
            slots_updated: false,
            announced_ip: String::new(),
            bus: bus::Bus::default(),
        }
    }

    pub fn me(&self) -> &Node {
        &self.nodes[self.myself]
    }

    pub fn me_mut(&mut self) -> &mut Node {
        &mut self.nodes[self.myself]
    }

    /// The node with this id (Redis's `clusterLookupNode`).
    pub fn lookup(&self, id: &[u8]) -> Option<usize> {
        self.nodes.iter().position(|n| n.id.as_bytes() == id)
    }

    /// The node with this id, made (with no flags) when unknown.
    pub fn lookup_or_add(&mut self, id: &str) -> usize {
        match self.lookup(id.as_bytes()) {
            Some(i) => i,
            None => {
                self.nodes.push(Node::new(id.to_string(), 0));
                self.nodes.len() - 1
            }
        }
    }

    /// The master of node `n` as this view knows it (None for a master, or
    /// a replica whose master is unknown).
    pub fn master_of(&self, n: usize) -> Option<usize> {
        self.nodes[n]
            .replica_of
            .as_deref()
            .and_then(|m| self.lookup(m.as_bytes()))
    }

    /// Node `n` when it is a master, else its master: the master of its shard.
    pub fn shard_master(&self, n: usize) -> Option<usize> {
        if self.nodes[n].flags & MASTER != 0 {
            Some(n)
        } else {
            self.master_of(n)
        }
    }

    /// Gives `slot` to `node`; false when it was already assigned. A
    /// master's first slot makes it a replica migration target when other
    /// masters have replicas (Redis's `clusterNodeSetSlotBit`).
    pub fn add_slot(&mut self, slot: u16, node: usize) -> bool {
        if self.owners[slot as usize].is_some() {
            return false;
        }
        self.owners[slot as usize] = Some(node);
        self.nodes[node].numslots += 1;
        if self.nodes[node].numslots == 1 && self.any_replica() {
            self.nodes[node].flags |= node::MIGRATE_TO;
        }
        true
    }

    /// Some master has a replica (Redis's `clusterMastersHaveSlaves`).
    fn any_replica(&self) -> bool {
        (0..self.nodes.len())
            .filter_map(|n| self.master_of(n))
            .any(|m| !self.nodes[m].is_replica())
    }

    /// The replicas of node `m` (those whose master it is).
    pub fn replicas(&self, m: usize) -> impl Iterator<Item = usize> + '_ {
        let id = self.nodes[m].id.as_str();
        (0..self.nodes.len()).filter(move |&i| self.nodes[i].replica_of.as_deref() == Some(id))
    }

    /// Node `n` now follows `master`, or no one (Redis's
    /// `clusterNodeRemoveSlave` then `clusterNodeAddSlave`): a master that
    /// gains a replica becomes a replica migration target (MIGRATE_TO),
    /// one left without replicas stops being one.
    pub fn set_replica_of(&mut self, n: usize, master: Option<usize>) {
        let old = self.master_of(n);
        self.nodes[n].replica_of = master.map(|m| self.nodes[m].id.clone());
        if let Some(o) = old.filter(|&o| Some(o) != master) {
            if self.replicas(o).next().is_none() {
                self.nodes[o].flags &= !node::MIGRATE_TO;
            }
        }
        if let Some(m) = master {
            self.nodes[m].flags |= node::MIGRATE_TO;
        }
    }

    /// Unassigns every slot of node `n` (Redis's `clusterDelNodeSlots`).
    pub fn del_node_slots(&mut self, n: usize) {
        for s in 0..SLOTS {
            if self.owners[s] == Some(n) {
                self.del_slot(s as u16);
            }
        }
    }

    /// Unassigns `slot`; false when it was unassigned.
    pub fn del_slot(&mut self, slot: u16) -> bool {
        let Some(n) = self.owners[slot as usize].take() else {
            return false;
        };
        self.nodes[n].numslots -= 1;
        true
    }

    /// Is this node serving `slot`?
    #[inline]
    pub fn mine(&self, slot: u16) -> bool {
        self.owners[slot as usize] == Some(self.myself)
    }

    /// The greatest epoch known (Redis's `clusterGetMaxEpoch`).
    pub fn max_epoch(&self) -> u64 {
        self.nodes
            .iter()
            .map(|n| n.config_epoch)
            .max()
            .unwrap_or(0)
            .max(self.current_epoch)
    }

    /// A new config epoch for this node unless it already has the greatest
    /// (Redis's `clusterBumpConfigEpochWithoutConsensus`); true when bumped.
    pub fn bump_epoch(&mut self) -> bool {
        let max = self.max_epoch();
        let me = self.myself;
        if self.nodes[me].config_epoch == 0 || self.nodes[me].config_epoch != max {
            self.current_epoch += 1;
            self.nodes[me].config_epoch = self.current_epoch;
            crate::log::warning(&format!("New configEpoch set to {}", self.current_epoch));
            true
        } else {
            false
        }
    }

    /// Recomputes `ok` and `size` as Redis's `clusterUpdateState` does
    /// (`now_ms`: the time of the call; first calls are the start's delay).
    pub fn update_state(&mut self, now_ms: i64, require_full_coverage: bool, node_timeout: i64) {
        if self.first_update_ms == 0 {
            self.first_update_ms = now_ms;
        }
        let master = !self.me().is_replica();
        if master && !self.ok && now_ms - self.first_update_ms < WRITABLE_DELAY_MS {
            return;
        }
        let mut new_ok = true;
        if require_full_coverage
            && self
                .owners
                .iter()
                .any(|o| o.is_none_or(|n| self.nodes[n].failed()))
        {
            new_ok = false;
        }
        let serving = self
            .nodes
            .iter()
            .filter(|n| n.flags & MASTER != 0 && n.numslots > 0);
        self.size = serving.clone().count();
        let reachable = serving.filter(|n| n.flags & (FAIL | PFAIL) == 0).count();
        if reachable < self.size / 2 + 1 {
            new_ok = false;
            self.among_minority_ms = now_ms;
        }
        if new_ok != self.ok {
            let rejoin = node_timeout.clamp(MIN_REJOIN_DELAY_MS, MAX_REJOIN_DELAY_MS);
            if new_ok && master && now_ms - self.among_minority_ms < rejoin {
                return;
            }
            crate::log::warning(&format!(
                "Cluster state changed: {}",
                if new_ok { "ok" } else { "fail" }
            ));
            self.ok = new_ok;
        }
    }

    /// Takes the announced address settings into this node's entry
    /// (Redis's `clusterUpdateMyself*`).
    pub fn announce(&mut self, config: &crate::Config) {
        let port = config.port as u32;
        let ann_port = config.get_i64("cluster-announce-port") as u32;
        let bus = config.get_i64("cluster-port") as u32;
        let ann_bus = config.get_i64("cluster-announce-bus-port") as u32;
        let ip = config.get("cluster-announce-ip").unwrap_or("").to_string();
        let host = config
            .get("cluster-announce-hostname")
            .unwrap_or("")
            .to_string();
        let me = self.me_mut();
        me.port = if ann_port != 0 { ann_port } else { port } as u16;
        me.cport = if ann_bus != 0 {
            ann_bus
        } else if bus != 0 {
            bus
        } else {
            port + PORT_INCR
        } as u16;
        if !ip.is_empty() {
            me.ip = ip.clone();
        }
        me.hostname = host;
        // A replica that may not fail over says so in its flags (Redis's
        // clusterUpdateMyselfFlags).
        if config.get("cluster-replica-no-failover") == Some("yes") {
            me.flags |= node::NOFAILOVER;
        } else {
            me.flags &= !node::NOFAILOVER;
        }
        self.announced_ip = ip;
    }

    /// The node a client is sent to for `node` (MOVED, ASK, CLUSTER SLOTS):
    /// its endpoint as `cluster-preferred-endpoint-type` says.
    pub fn endpoint<'a>(&'a self, node: &'a Node, kind: &str) -> &'a str {
        match kind {
            "hostname" if node.hostname.is_empty() => "?",
            "hostname" => &node.hostname,
            "unknown-endpoint" => "",
            _ => &node.ip,
        }
    }
}

/// Starts cluster mode for a server configured with `cluster-enabled yes`:
/// loads nodes.conf, or makes a fresh node and writes it.
pub fn init(srv: &mut crate::server::Server) -> Result<(), String> {
    let path = config_file::path(&srv.config);
    let mut cluster = match config_file::load(&path)? {
        Some(c) => c,
        None => {
            let id = node::random_id(&mut srv.rng);
            crate::log::notice(&format!("No cluster configuration found, I'm {id}"));
            Cluster::fresh(id, path)
        }
    };
    cluster.announce(&srv.config);
    config_file::save(&cluster).map_err(|e| {
        format!(
            "Fatal: can't update cluster config file: {}",
            crate::config::os_error(&e)
        )
    })?;
    cluster.served = channels::in_my_shard(&cluster);
    srv.cluster = Some(Box::new(cluster));
    srv.ks.dbs[0].index_slots();
    cron(srv);
    Ok(())
}

/// Periodic work (Redis's `clusterCron` without the bus): the announced
/// address and the state.
pub fn cron(srv: &mut crate::server::Server) {
    let full = srv.config.get("cluster-require-full-coverage") == Some("yes");
    let timeout = srv.config.get_i64("cluster-node-timeout");
    if let Some(c) = srv.cluster.as_mut() {
        c.announce(&srv.config);
        c.update_state(crate::clock::real_now_us() / 1000, full, timeout);
    }
    blocked::redirect(srv);
}

/// After the dataset loaded at start (Redis's `verifyClusterConfigWithData`):
/// keys outside database 0 refuse the start; a slot holding keys that this
/// node neither serves nor imports is taken when unassigned, or marked as
/// imported from its owner.
pub fn verify_with_data(srv: &mut crate::server::Server) -> Result<(), String> {
    if srv.ks.dbs.iter().skip(1).any(|db| !db.is_empty()) {
        return Err(
            "You can't have keys in a DB different than DB 0 when in Cluster mode. Exiting.".into(),
        );
    }
    let Some(ix) = srv.ks.dbs[0].slots.as_deref() else {
        return Ok(());
    };
    let Some(c) = srv.cluster.as_deref_mut() else {
        return Ok(());
    };
    if c.me().is_replica() {
        return Ok(());
    }
    let mut changed = false;
    for s in 0..SLOTS {
        let slot = s as u16;
        if ix.count(slot) == 0 || c.mine(slot) || c.importing[s].is_some() {
            continue;
        }
        changed = true;
        match c.owners[s] {
            None => {
                crate::log::warning(&format!(
                    "I have keys for unassigned slot {s}. Taking responsibility for it."
                ));
                c.add_slot(slot, c.myself);
            }
            Some(owner) => {
                crate::log::warning(&format!("I have keys for slot {s}, but the slot is assigned to another node. Setting it to importing state."));
                c.importing[s] = Some(owner);
            }
        }
    }
    if changed {
        c.served = channels::in_my_shard(c);
        config_file::save(c).map_err(|e| {
            format!(
                "Fatal: can't update cluster config file: {}",
                crate::config::os_error(&e)
            )
        })?;
    }
    Ok(())
}
