//! What a bus message does to this node's view (Redis's `clusterProcessPacket`): handshakes, gossip, slots and epochs, UPDATE, PUBLISH.
//!
//! Called with the server borrowed for one whole message, so a message's
//! effects are atomic with respect to commands. Work that Redis defers to
//! `clusterBeforeSleep` is flagged with `Cluster::todo` and done by
//! `bus::before_sleep` once the message is handled.

use super::msg::{self, Body, Gossip, Header, Msg};
use super::{failure, now_ms, TODO_SAVE_CONFIG, TODO_SLOTS, TODO_UPDATE_STATE};
use crate::cluster::node::{
    Node, FAIL, HANDSHAKE, MASTER, MEET, MIGRATE_TO, MYSELF, NOADDR, NOFAILOVER, PFAIL, SLAVE,
};
use crate::cluster::slot::SLOTS;
use crate::cluster::Cluster;
use crate::server::Server;

/// The header this node sends (Redis's `clusterBuildMessageHdr`): a
/// replica sends its master's slots and config epoch.
pub fn header(c: &Cluster, kind: u16, offset: u64) -> Header {
    let me = c.me();
    let master = match me.replica_of.as_deref() {
        Some(m) if me.flags & SLAVE != 0 => c.lookup(m.as_bytes()).unwrap_or(c.myself),
        _ => c.myself,
    };
    let mut h = Header::new(kind);
    h.sender.copy_from_slice(&id_bytes(&me.id));
    if !c.announced_ip.is_empty() {
        h.myip = c.announced_ip.clone();
    }
    for s in 0..SLOTS {
        if c.owners[s] == Some(master) {
            msg::set_slot_bit(&mut h.myslots, s);
        }
    }
    if let Some(m) = me.replica_of.as_deref() {
        h.slaveof.copy_from_slice(&id_bytes(m));
    }
    h.port = me.port;
    h.pport = me.pport;
    h.cport = me.cport;
    h.flags = me.flags & !MEET;
    h.state = if c.ok { 0 } else { 1 };
    h.current_epoch = c.current_epoch;
    h.config_epoch = c.nodes[master].config_epoch;
    h.offset = offset;
    if me.flags & MASTER != 0 && c.bus.election.mf_end != 0 {
        h.mflags[0] |= msg::FLAG0_PAUSED;
    }
    h
}

/// A node id as the 40 bytes the bus carries.
pub fn id_bytes(id: &str) -> [u8; 40] {
    let mut b = [0u8; 40];
    let n = id.len().min(40);
    b[..n].copy_from_slice(&id.as_bytes()[..n]);
    b
}

/// The gossip entry describing node `n`.
fn gossip_entry(n: &Node) -> Gossip {
    Gossip {
        name: id_bytes(&n.id),
        ping_sent: (n.ping_sent / 1000) as u32,
        pong_received: (n.pong_received / 1000) as u32,
        ip: n.ip.clone(),
        port: n.port,
        cport: n.cport,
        flags: n.flags & !MEET,
        pport: n.pport,
    }
}

/// Sends a PING, PONG or MEET on `link` with gossip about a tenth of the
/// nodes (at least three) picked at random, plus every node in PFAIL
/// (Redis's `clusterSendPing`).
pub fn send_ping(c: &mut Cluster, link: Option<u64>, kind: u16, offset: u64) {
    let Some(lid) = link else { return };
    let Some(l) = c.bus.links.get(&lid) else {
        return;
    };
    let (inbound, target) = (l.inbound, l.node);
    c.bus.pings_built += 1;
    let round = c.bus.pings_built;
    let total = c.nodes.len();
    let mut fresh = total as i64 - 2;
    let wanted = ((total / 10).max(3) as i64).min(fresh.max(0));
    if !inbound && kind == msg::PING {
        if let Some(t) = target {
            c.nodes[t].ping_sent = now_ms();
        }
    }
    let mut hdr = header(c, kind, offset);
    let mut gossip = Vec::new();
    let mut tries = wanted * 3;
    while fresh > 0 && (gossip.len() as i64) < wanted && tries > 0 {
        tries -= 1;
        let i = (c.bus.random() % total as u64) as usize;
        let n = &c.nodes[i];
        if i == c.myself || n.flags & PFAIL != 0 {
            continue;
        }
        if n.flags & (HANDSHAKE | NOADDR) != 0 || (n.link.is_none() && n.numslots == 0) {
            fresh -= 1;
            continue;
        }
        if n.last_in_ping_gossip == round {
            continue;
        }
        gossip.push(gossip_entry(n));
        c.nodes[i].last_in_ping_gossip = round;
        fresh -= 1;
    }
    let mut pfail_wanted = c.bus.pfail_nodes;
    for n in &c.nodes {
        if pfail_wanted == 0 {
            break;
        }
        if n.flags & (HANDSHAKE | NOADDR) != 0 || n.flags & PFAIL == 0 {
            continue;
        }
        gossip.push(gossip_entry(n));
        pfail_wanted -= 1;
    }
    let hostname = c.me().hostname.clone();
    let hostname = (!hostname.is_empty()).then_some(hostname);
    if hostname.is_some() {
        hdr.mflags[0] |= msg::FLAG0_EXT_DATA;
        hdr.extensions = 1;
    }
    hdr.count = gossip.len() as u16;
    let bytes = msg::encode(&Msg {
        hdr,
        body: Body::Ping {
            gossip,
            hostname,
            unknown: Vec::new(),
        },
    });
    c.send(link, &bytes);
}

/// Sends a PONG to every node with a link (Redis's `clusterBroadcastPong`,
/// all nodes).
pub fn broadcast_pong(c: &mut Cluster, offset: u64) {
    let links: Vec<Option<u64>> = c
        .nodes
        .iter()
        .filter(|n| n.link.is_some() && n.flags & (MYSELF | HANDSHAKE) == 0)
        .map(|n| n.link)
        .collect();
    for l in links {
        send_ping(c, l, msg::PONG, offset);
    }
}

/// Sends an UPDATE about node `n` on `link`.
fn send_update(c: &mut Cluster, link: Option<u64>, n: usize, offset: u64) {
    if link.is_none() {
        return;
    }
    let mut slots = Box::new([0u8; msg::SLOT_BYTES]);
    for s in 0..SLOTS {
        if c.owners[s] == Some(n) && !c.not_claiming[s] {
            msg::set_slot_bit(&mut slots, s);
        }
    }
    let m = Msg {
        hdr: header(c, msg::UPDATE, offset),
        body: Body::Update {
            config_epoch: c.nodes[n].config_epoch,
            node: id_bytes(&c.nodes[n].id),
            slots,
        },
    };
    let bytes = msg::encode(&m);
    c.send(link, &bytes);
}

/// The sender of a message on `link` (Redis's `getNodeFromLinkAndMsg`): the
/// link's node unless it is in handshake, else the node the header names;
/// an inbound link learns its node here.
fn sender_of(c: &mut Cluster, lid: u64, hdr: &Header) -> Option<usize> {
    let link_node = c.bus.links.get(&lid)?.node;
    if let Some(n) = link_node {
        if c.nodes[n].flags & HANDSHAKE == 0 {
            return Some(n);
        }
    }
    let sender = lookup_wire(c, &hdr.sender)?;
    if link_node.is_none() {
        if let Some(l) = c.bus.links.get_mut(&lid) {
            l.node = Some(sender);
        }
        c.nodes[sender].inbound_link = Some(lid);
    }
    Some(sender)
}

/// The node with this wire name (None for a name that is not 40 `[a-z0-9]`).
pub fn lookup_wire(c: &Cluster, name: &[u8; 40]) -> Option<usize> {
    if !crate::cluster::node::valid_wire_id(name) {
        return None;
    }
    c.lookup(name)
}

/// Handles one parsed message received on link `lid`; false when the link
/// was freed meanwhile.
pub fn process(srv: &mut Server, lid: u64, m: Msg) -> bool {
    let offset = super::repl_offset(srv);
    let timeout = super::node_timeout(srv);
    let announce_ip = srv
        .config
        .get("cluster-announce-ip")
        .unwrap_or("")
        .to_string();
    let Some(c) = srv.cluster.as_deref_mut() else {
        return false;
    };
    let hdr = &m.hdr;
    let kind = hdr.kind;
    if (kind as usize) < msg::TYPES {
        c.bus.received[kind as usize] += 1;
    }
    let now = now_ms();
    let sender = sender_of(c, lid, hdr);
    if let Some(s) = sender {
        c.nodes[s].data_received = now;
        if c.nodes[s].flags & HANDSHAKE == 0 {
            if hdr.current_epoch > c.current_epoch {
                c.current_epoch = hdr.current_epoch;
            }
            if hdr.config_epoch > c.nodes[s].config_epoch {
                c.nodes[s].config_epoch = hdr.config_epoch;
                c.todo(TODO_SAVE_CONFIG);
            }
            c.nodes[s].repl_offset = hdr.offset;
            super::failover::master_paused(c, s, hdr);
        }
    }
    match (kind, &m.body) {
        (
            msg::PING | msg::PONG | msg::MEET,
            Body::Ping {
                gossip,
                hostname,
                unknown,
            },
        ) => {
            if kind != msg::PONG {
                learn_my_ip(c, lid, kind, &announce_ip);
                if sender.is_none() && kind == msg::MEET {
                    let Some(l) = c.bus.links.get(&lid) else {
                        return false;
                    };
                    let ip = if hdr.myip.is_empty() {
                        l.peer_ip.clone()
                    } else {
                        hdr.myip.clone()
                    };
                    let id = super::random_name(&mut c.bus);
                    let mut node = Node::new(id, HANDSHAKE);
                    node.ip = ip;
                    node.port = hdr.port;
                    node.pport = hdr.pport;
                    node.cport = hdr.cport;
                    c.add_node(node);
                    c.todo(TODO_SAVE_CONFIG);
                    // A MEET from an unknown node: its gossip is trusted.
                    process_gossip(c, None, gossip, true, timeout, offset);
                }
                send_ping(c, Some(lid), msg::PONG, offset);
            }
            if !process_config(c, lid, sender, hdr, timeout, offset) {
                return false;
            }
            if let Some(s) = sender {
                process_gossip(c, Some(s), gossip, false, timeout, offset);
                for t in unknown {
                    crate::log::warning(&format!("Received unknown extension type {t}"));
                }
                let h = hostname.clone().unwrap_or_default();
                c.nodes[s].hostname = h;
            }
            // The slots changed may be ours: keys of lost slots go.
            after_slots_update(srv);
        }
        (msg::FAIL, Body::Fail { about }) => match sender {
            Some(_) => {
                if let Some(f) = lookup_wire(c, about) {
                    if c.nodes[f].flags & (FAIL | MYSELF) == 0 {
                        crate::log::notice(&format!(
                            "FAIL message received from {} about {}",
                            String::from_utf8_lossy(&hdr.sender),
                            c.nodes[f].id
                        ));
                        c.nodes[f].flags |= FAIL;
                        c.nodes[f].fail_time = now;
                        c.nodes[f].flags &= !PFAIL;
                        c.todo(TODO_SAVE_CONFIG | TODO_UPDATE_STATE);
                    }
                }
            }
            None => crate::log::notice(&format!(
                "Ignoring FAIL message from unknown node {} about {}",
                String::from_utf8_lossy(&hdr.sender),
                String::from_utf8_lossy(about)
            )),
        },
        (msg::PUBLISH | msg::PUBLISHSHARD, Body::Publish { channel, message }) => {
            if sender.is_some() {
                let mut internal = crate::server::client::Client::new(
                    0,
                    String::new(),
                    String::new(),
                    crate::server::client::ConnKind::Script,
                    false,
                );
                if kind == msg::PUBLISH {
                    crate::server::pubsub::publish(srv, &mut internal, channel, message);
                } else {
                    crate::server::pubsub::publish_shard(srv, &mut internal, channel, message);
                }
            }
        }
        (
            msg::UPDATE,
            Body::Update {
                config_epoch,
                node,
                slots,
            },
        ) => {
            let Some(_) = sender else { return true };
            let Some(n) = lookup_wire(c, node) else {
                return true;
            };
            if c.nodes[n].config_epoch >= *config_epoch {
                return true;
            }
            if c.nodes[n].flags & SLAVE != 0 {
                set_node_as_master(c, n);
            }
            c.nodes[n].config_epoch = *config_epoch;
            c.todo(TODO_SAVE_CONFIG);
            update_slots_config_with(c, n, *config_epoch, slots);
            after_slots_update(srv);
        }
        (msg::FAILOVER_AUTH_REQUEST, _) => {
            if let Some(s) = sender {
                super::failover::vote(c, s, hdr, timeout, offset);
            }
        }
        (msg::FAILOVER_AUTH_ACK, _) => {
            if let Some(s) = sender {
                super::failover::vote_received(c, s, hdr.current_epoch);
                // The quorum may be there: no need to wait for the cron.
                super::failover::handle(srv);
            }
        }
        (msg::MFSTART, _) => {
            if let Some(s) = sender {
                super::failover::mf_start(srv, s, lid);
            }
        }
        (msg::MODULE, _) => {}
        _ => crate::log::warning(&format!("Received unknown packet type: {kind}")),
    }
    true
}

/// A MEET (or any PING while this node has no address) teaches it its own
/// ip: the address the other node reached it at.
fn learn_my_ip(c: &mut Cluster, lid: u64, kind: u16, announce_ip: &str) {
    if !(kind == msg::MEET || c.me().ip.is_empty()) || !announce_ip.is_empty() {
        return;
    }
    let Some(ip) = c.bus.links.get(&lid).map(|l| l.local_ip.clone()) else {
        return;
    };
    if !ip.is_empty() && ip != c.me().ip {
        crate::log::warning(&format!("IP address for this node updated to {ip}"));
        c.me_mut().ip = ip;
        c.todo(TODO_SAVE_CONFIG);
    }
}

/// PING, PONG, MEET: handshake completion, addresses, roles, slots and
/// epochs; false when the link was freed.
fn process_config(
    c: &mut Cluster,
    lid: u64,
    sender: Option<usize>,
    hdr: &Header,
    timeout: i64,
    offset: u64,
) -> bool {
    let now = now_ms();
    let Some(l) = c.bus.links.get(&lid) else {
        return false;
    };
    let (inbound, link_node) = (l.inbound, l.node);
    if !inbound {
        let Some(ln) = link_node else { return false };
        if c.nodes[ln].flags & HANDSHAKE != 0 {
            if let Some(s) = sender {
                // Already known under its real name: take the address the
                // handshake reached, and drop the handshake node.
                crate::log::verbose(&format!(
                    "Handshake: we already know node {}, updating the address if needed.",
                    c.nodes[s].id
                ));
                if update_address(c, s, lid, hdr) {
                    c.todo(TODO_SAVE_CONFIG | TODO_UPDATE_STATE);
                }
                c.del_node(ln);
                return false;
            }
            let Some(name) = std::str::from_utf8(&hdr.sender)
                .ok()
                .filter(|n| crate::cluster::node::valid_wire_id(n.as_bytes()))
            else {
                return true;
            };
            let node = &mut c.nodes[ln];
            node.id = name.to_string();
            node.flags &= !HANDSHAKE;
            node.flags |= hdr.flags & (MASTER | SLAVE);
            c.todo(TODO_SAVE_CONFIG);
        } else if c.nodes[ln].id.as_bytes() != hdr.sender {
            // The address now answers with another id: it is not the node
            // we knew there.
            let node = &mut c.nodes[ln];
            node.flags |= NOADDR;
            node.ip.clear();
            node.port = 0;
            node.pport = 0;
            node.cport = 0;
            c.free_link(lid);
            c.todo(TODO_SAVE_CONFIG);
            return false;
        }
    }
    // The sender after a rename (an outbound handshake link now names it).
    let sender = sender.or_else(|| {
        let n = c.bus.links.get(&lid)?.node?;
        (c.nodes[n].flags & HANDSHAKE == 0 && c.nodes[n].id.as_bytes() == hdr.sender).then_some(n)
    });
    if let Some(s) = sender {
        c.nodes[s].flags = (c.nodes[s].flags & !NOFAILOVER) | (hdr.flags & NOFAILOVER);
        if hdr.kind == msg::PING
            && c.nodes[s].flags & HANDSHAKE == 0
            && update_address(c, s, lid, hdr)
        {
            c.todo(TODO_SAVE_CONFIG | TODO_UPDATE_STATE);
        }
    }
    if !inbound && hdr.kind == msg::PONG {
        if let Some(ln) = c.bus.links.get(&lid).and_then(|l| l.node) {
            let node = &mut c.nodes[ln];
            node.pong_received = now;
            node.ping_sent = 0;
            if node.flags & PFAIL != 0 {
                node.flags &= !PFAIL;
                c.todo(TODO_SAVE_CONFIG | TODO_UPDATE_STATE);
            } else if node.flags & FAIL != 0 {
                failure::clear_if_needed(c, ln, timeout);
            }
        }
    }
    let Some(s) = sender else { return true };
    // Role switches.
    if hdr.from_master() {
        set_node_as_master(c, s);
    } else {
        if c.nodes[s].flags & MASTER != 0 {
            c.del_node_slots(s);
            c.nodes[s].flags &= !(MASTER | MIGRATE_TO);
            c.nodes[s].flags |= SLAVE;
            c.todo(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_SLOTS);
        }
        if let Some(m) = lookup_wire(c, &hdr.slaveof) {
            if c.master_of(s) != Some(m) {
                c.set_replica_of(s, Some(m));
                c.todo(TODO_SAVE_CONFIG);
            }
        }
    }
    // Slots: only when the claim differs from this view's.
    let sender_master = c.shard_master(s);
    let dirty = sender_master.is_some_and(|m| {
        (0..SLOTS).any(|j| (c.owners[j] == Some(m)) != msg::slot_bit(&hdr.myslots, j))
    });
    if c.nodes[s].flags & MASTER != 0 && dirty {
        update_slots_config_with(c, s, hdr.config_epoch, &hdr.myslots);
    }
    // The sender claims slots this view gives to a node with a greater
    // epoch: tell it (one UPDATE per message, as Redis).
    if dirty {
        for j in 0..SLOTS {
            if !msg::slot_bit(&hdr.myslots, j) {
                continue;
            }
            let Some(owner) = c.owners[j] else { continue };
            if owner == s || c.not_claiming[j] {
                continue;
            }
            if c.nodes[owner].config_epoch > hdr.config_epoch {
                crate::log::verbose(&format!(
                    "Node {} has old slots configuration, sending an UPDATE message about {}",
                    c.nodes[s].id, c.nodes[owner].id
                ));
                let l = c.nodes[s].link;
                send_update(c, l, owner, offset);
                break;
            }
        }
    }
    let me = c.myself;
    if c.nodes[me].flags & MASTER != 0
        && c.nodes[s].flags & MASTER != 0
        && hdr.config_epoch == c.nodes[me].config_epoch
    {
        handle_epoch_collision(c, s);
    }
    true
}

/// Takes the address a node is reached at from a message on one of its
/// other links (Redis's `nodeUpdateAddressIfNeeded`); true when it changed.
fn update_address(c: &mut Cluster, n: usize, lid: u64, hdr: &Header) -> bool {
    if c.nodes[n].link == Some(lid) {
        return false;
    }
    let ip = if hdr.myip.is_empty() {
        match c.bus.links.get(&lid) {
            Some(l) if !l.peer_ip.is_empty() => l.peer_ip.clone(),
            _ => return false,
        }
    } else {
        hdr.myip.clone()
    };
    let node = &c.nodes[n];
    if node.port == hdr.port && node.cport == hdr.cport && node.pport == hdr.pport && node.ip == ip
    {
        return false;
    }
    let node = &mut c.nodes[n];
    node.ip = ip;
    node.port = hdr.port;
    node.pport = hdr.pport;
    node.cport = hdr.cport;
    node.flags &= !NOADDR;
    let old = node.link;
    crate::log::warning(&format!(
        "Address updated for node {}, now {}:{}",
        node.id, node.ip, node.port
    ));
    if let Some(l) = old {
        c.free_link(l);
    }
    true
}

/// A node seen acting as a master (Redis's `clusterSetNodeAsMaster`).
fn set_node_as_master(c: &mut Cluster, n: usize) {
    if c.nodes[n].flags & MASTER != 0 {
        return;
    }
    if c.nodes[n].replica_of.is_some() {
        c.set_replica_of(n, None);
        if n != c.myself {
            c.nodes[n].flags |= MIGRATE_TO;
        }
    }
    let node = &mut c.nodes[n];
    node.flags &= !SLAVE;
    node.flags |= MASTER;
    c.todo(TODO_SAVE_CONFIG | TODO_UPDATE_STATE);
}

/// Two masters with one config epoch: the one with the smaller id takes a
/// new epoch (Redis's `clusterHandleConfigEpochCollision`).
fn handle_epoch_collision(c: &mut Cluster, s: usize) {
    let me = c.myself;
    if c.nodes[s].config_epoch != c.nodes[me].config_epoch {
        return;
    }
    if c.nodes[s].id.as_bytes() <= c.nodes[me].id.as_bytes() {
        return;
    }
    c.current_epoch += 1;
    c.nodes[me].config_epoch = c.current_epoch;
    if let Err(e) = crate::cluster::config_file::save(c) {
        crate::log::warning(&format!(
            "Could not save the cluster config file: {}",
            crate::config::os_error(&e)
        ));
    }
    crate::log::verbose(&format!(
        "WARNING: configEpoch collision with node {}. configEpoch set to {}",
        c.nodes[s].id, c.current_epoch
    ));
}

/// Binds the slots `slots` claims to `sender` where its epoch wins
/// (Redis's `clusterUpdateSlotsConfigWith`). Slots this node loses are
/// recorded in `Cluster::dirty_slots`, and a master left without slots in
/// `Cluster::new_master`: `after_slots_update` makes it a replica of the
/// sender, or deletes the keys of the lost slots.
pub fn update_slots_config_with(c: &mut Cluster, sender: usize, epoch: u64, slots: &msg::Slots) {
    if sender == c.myself {
        crate::log::warning("Discarding UPDATE message about myself.");
        return;
    }
    let me = c.myself;
    let curmaster = c.shard_master(me);
    let mut dirty = Vec::new();
    let mut new_master = false;
    let (mut sender_slots, mut migrated) = (0, 0);
    for j in 0..SLOTS {
        if msg::slot_bit(slots, j) {
            sender_slots += 1;
            if c.owners[j] == Some(sender) {
                c.not_claiming[j] = false;
                continue;
            }
            if c.importing[j].is_some() {
                continue;
            }
            let unclaimed = match c.owners[j] {
                None => true,
                Some(o) => c.not_claiming[j] && o != sender,
            };
            if unclaimed || c.owners[j].is_some_and(|o| c.nodes[o].config_epoch < epoch) {
                if c.owners[j] == Some(me) {
                    dirty.push(j as u16);
                }
                if c.owners[j].is_some() && c.owners[j] == curmaster {
                    new_master = true;
                    migrated += 1;
                }
                c.del_slot(j as u16);
                c.add_slot(j as u16, sender);
                c.not_claiming[j] = false;
                c.todo(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_SLOTS);
            }
        } else if c.owners[j] == Some(sender) {
            // Still bound to the sender, which no longer claims it: kept
            // (no error for clients), but not spread in UPDATEs.
            c.not_claiming[j] = true;
        }
    }
    if new_master {
        // `role::follow_new_master` decides once the message is handled.
        c.new_master = Some((sender, sender_slots, migrated));
    }
    c.dirty_slots.extend(dirty);
    c.slots_updated = true;
}

/// After a slot update: a master that lost all its slots to one node
/// follows it as a replica (its data comes from the new master); a
/// replica whose master turned replica follows its master's master
/// (Redis's sub-replica safeguard); otherwise the keys of the slots it
/// lost are deleted (Redis's `delKeysInSlot`).
fn after_slots_update(srv: &mut Server) {
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    let ran = std::mem::take(&mut c.slots_updated);
    if let Some((sender, _, _)) = c.new_master {
        if super::role::follow_new_master(srv, sender) {
            if let Some(c) = srv.cluster.as_deref_mut() {
                c.dirty_slots.clear();
            }
            return;
        }
    }
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    c.new_master = None;
    let me = c.myself;
    let grandmaster = c
        .master_of(me)
        .filter(|&m| c.nodes[m].is_replica())
        .and_then(|m| c.master_of(m))
        .filter(|&g| g != me);
    if let Some(g) = grandmaster.filter(|_| ran && c.nodes[me].is_replica()) {
        crate::log::warning(&format!(
            "I'm a sub-replica! Reconfiguring myself as a replica of grandmaster {}",
            c.nodes[g].id
        ));
        c.dirty_slots.clear();
        super::role::set_master(srv, g);
        return;
    }
    if c.dirty_slots.is_empty() {
        return;
    }
    let slots = std::mem::take(&mut c.dirty_slots);
    for slot in slots {
        crate::cluster::keyindex::delete_keys_in_slot(srv, slot);
    }
}

/// The gossip section of a PING, PONG or MEET (Redis's
/// `clusterProcessGossipSection`): failure reports from masters, PONG
/// times, new addresses of unreachable nodes, nodes this view does not know.
/// `sender` is None for the MEET of a node not known yet (`trusted`).
fn process_gossip(
    c: &mut Cluster,
    sender: Option<usize>,
    gossip: &[Gossip],
    trusted: bool,
    timeout: i64,
    offset: u64,
) {
    let now = now_ms();
    for g in gossip {
        let flags = g.flags;
        match lookup_wire(c, &g.name) {
            Some(n) => {
                if let Some(s) = sender {
                    if c.nodes[s].flags & MASTER != 0 && n != c.myself {
                        if flags & (FAIL | PFAIL) != 0 {
                            if failure::add_report(c, n, s) {
                                crate::log::verbose(&format!(
                                    "Node {} reported node {} as not reachable.",
                                    c.nodes[s].id, c.nodes[n].id
                                ));
                            }
                            failure::mark_failing_if_needed(c, n, timeout, offset);
                        } else if failure::del_report(c, n, s, timeout) {
                            crate::log::verbose(&format!(
                                "Node {} reported node {} is back online.",
                                c.nodes[s].id, c.nodes[n].id
                            ));
                        }
                    }
                }
                if flags & (FAIL | PFAIL) == 0
                    && c.nodes[n].ping_sent == 0
                    && failure::count_reports(c, n, timeout) == 0
                {
                    let pong = g.pong_received as i64 * 1000;
                    if pong <= now + 500 && pong > c.nodes[n].pong_received {
                        c.nodes[n].pong_received = pong;
                    }
                }
                let node = &c.nodes[n];
                if node.flags & (FAIL | PFAIL) != 0
                    && flags & NOADDR == 0
                    && flags & (FAIL | PFAIL) == 0
                    && (!node.ip.eq_ignore_ascii_case(&g.ip)
                        || node.port != g.port
                        || node.cport != g.cport)
                {
                    if let Some(l) = node.link {
                        c.free_link(l);
                    }
                    let node = &mut c.nodes[n];
                    node.ip = g.ip.clone();
                    node.port = g.port;
                    node.pport = g.pport;
                    node.cport = g.cport;
                    node.flags &= !NOADDR;
                }
            }
            None => {
                // Only a known sender (or a MEET) may introduce nodes, and
                // never one recently forgotten.
                if (sender.is_none() && !trusted) || flags & NOADDR != 0 {
                    continue;
                }
                if !crate::cluster::node::valid_wire_id(&g.name) {
                    continue;
                }
                let id = String::from_utf8_lossy(&g.name).into_owned();
                if c.bus.blacklisted(&id) {
                    continue;
                }
                // Redis keeps the gossiped flags, MYSELF included, as they
                // came; a node that gossips about us as MYSELF is not us.
                let mut node = Node::new(id, flags & !(MYSELF | MEET));
                node.ip = g.ip.clone();
                node.port = g.port;
                node.pport = g.pport;
                node.cport = g.cport;
                c.add_node(node);
            }
        }
    }
}
