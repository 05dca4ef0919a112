//! The cluster bus (Redis 7.0's, byte-compatible): links between nodes, the periodic PINGs, and the work a message leaves to do.
//!
//! Each node listens on its bus port (`cluster-port`, or 10000 above the
//! client port) and opens one link to every node it knows (`Node::link`); the
//! links other nodes open to it are inbound (`Node::inbound_link` once the
//! sender is known). A link is a task (`link`) that moves bytes; what the
//! bytes mean is decided with the server borrowed, synchronously, by
//! `gossip` (PING, PONG, MEET, UPDATE, PUBLISH) and `failure` (PFAIL, FAIL,
//! failure reports). The state here lives in `Cluster::bus`.
//!
//! Invariants: a link id in a node's `link`/`inbound_link` names a link in
//! `Bus::links` whose `node` is that node's index; freeing a link clears
//! both sides and aborts its task. Node indices shift when a node is
//! deleted (`Cluster::del_node` fixes every table that holds one).

pub mod failover;
pub mod failure;
pub mod gossip;
pub mod link;
pub mod migration;
pub mod msg;
pub mod role;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use tokio::sync::Notify;

use super::node::{Node, HANDSHAKE, MASTER, MEET, MYSELF, NOADDR, PFAIL, SLAVE};
use super::Cluster;
use crate::server::Server;

/// How often the bus cron runs (Redis runs clusterCron every 100 ms).
const CRON_MS: u64 = 100;
/// How long a forgotten node is not re-added from gossip (seconds).
pub const BLACKLIST_TTL: i64 = 60;

/// Things to do once the current event is handled (Redis's
/// `clusterDoBeforeSleep` flags).
pub const TODO_UPDATE_STATE: u32 = 1;
pub const TODO_SAVE_CONFIG: u32 = 2;
/// The slots this node serves may have changed: shard channels and
/// blocked clients are checked.
pub const TODO_SLOTS: u32 = 4;

/// One connection between this node and another.
pub struct Link {
    /// The node at the other end (None for an inbound link until its first
    /// message names a known sender).
    pub node: Option<usize>,
    pub inbound: bool,
    /// Creation time, ms.
    pub ctime: i64,
    /// Bytes waiting to be written; the task writes them when woken (or
    /// `link::poll_while_blocked`, while the data thread is busy).
    pub sndbuf: Vec<u8>,
    /// Bytes read and not yet a whole message.
    pub rcvbuf: Vec<u8>,
    /// The socket's descriptor once connected (-1 before): read and
    /// written by `link::poll_while_blocked` while the task cannot run.
    pub fd: i32,
    pub wake: Rc<Notify>,
    /// The link's task (aborted when the link is freed).
    pub task: Option<tokio::task::AbortHandle>,
    /// This end's address as the socket says (a MEET teaches a node its ip).
    pub local_ip: String,
    /// The other end's address.
    pub peer_ip: String,
}

/// The bus state of one node (part of `Cluster`).
#[derive(Default)]
pub struct Bus {
    pub links: BTreeMap<u64, Link>,
    next_link: u64,
    pub sent: [u64; msg::TYPES],
    pub received: [u64; msg::TYPES],
    /// Forgotten nodes and until when (seconds) gossip may not re-add them.
    pub blacklist: Vec<(String, i64)>,
    pub todo: u32,
    /// Clusters cron rounds so far.
    iteration: u64,
    /// PINGs built so far (a node appears once in one PING's gossip).
    pub pings_built: u64,
    /// Nodes in PFAIL at the last cron (extra gossip entries per PING).
    pub pfail_nodes: usize,
    rng: Option<crate::server::Rng>,
    /// Elections and manual failovers (`failover`).
    pub election: failover::Election,
    /// Links freed because their output passed `cluster-link-sendbuf-limit`.
    pub links_limit_exceeded: u64,
    /// When this master last voted for a replica of each master (by id).
    pub voted: std::collections::HashMap<String, i64>,
}

impl Bus {
    pub fn random(&mut self) -> u64 {
        self.rng
            .get_or_insert_with(|| crate::server::Rng::new(crate::clock::system_us() as u64))
            .next_u64()
    }

    /// Registers a new link; its task is attached by the caller.
    pub fn add_link(&mut self, node: Option<usize>, inbound: bool) -> u64 {
        self.next_link += 1;
        let id = self.next_link;
        self.links.insert(
            id,
            Link {
                node,
                inbound,
                ctime: now_ms(),
                sndbuf: Vec::new(),
                rcvbuf: Vec::new(),
                fd: -1,
                wake: Rc::new(Notify::new()),
                task: None,
                local_ip: String::new(),
                peer_ip: String::new(),
            },
        );
        id
    }

    /// True when `id` was forgotten less than BLACKLIST_TTL seconds ago.
    pub fn blacklisted(&mut self, id: &str) -> bool {
        let now = now_ms() / 1000;
        self.blacklist.retain(|(_, until)| *until >= now);
        self.blacklist.iter().any(|(n, _)| n == id)
    }
}

/// The real clock in milliseconds (the bus's timestamps).
pub fn now_ms() -> i64 {
    crate::clock::real_now_us() / 1000
}

/// `cluster-node-timeout`.
pub fn node_timeout(srv: &Server) -> i64 {
    srv.config.get_i64("cluster-node-timeout")
}

impl Cluster {
    /// Frees link `id`: the node forgets it and its task stops (Redis's
    /// `freeClusterLink`).
    pub fn free_link(&mut self, id: u64) {
        let Some(l) = self.bus.links.remove(&id) else {
            return;
        };
        if let Some(n) = l.node {
            let node = &mut self.nodes[n];
            if node.link == Some(id) {
                node.link = None;
            } else if node.inbound_link == Some(id) {
                node.inbound_link = None;
            }
        }
        if let Some(t) = l.task {
            t.abort();
        }
    }

    /// Appends `bytes` to a link's output and wakes its task; counts the
    /// message by type (Redis's `clusterSendMessage`).
    pub fn send(&mut self, link: Option<u64>, bytes: &[u8]) {
        let Some(l) = link.and_then(|id| self.bus.links.get_mut(&id)) else {
            return;
        };
        if l.sndbuf.is_empty() {
            l.wake.notify_one();
        }
        l.sndbuf.extend_from_slice(bytes);
        let t = u16::from_be_bytes([bytes[12], bytes[13]]) as usize;
        if t < msg::TYPES {
            self.bus.sent[t] += 1;
        }
    }

    /// Sends `bytes` to every node with a link but myself and nodes in handshake.
    pub fn broadcast(&mut self, bytes: &[u8]) {
        let targets: Vec<Option<u64>> = self
            .nodes
            .iter()
            .filter(|n| n.flags & (MYSELF | HANDSHAKE) == 0)
            .map(|n| n.link)
            .collect();
        for l in targets {
            self.send(l, bytes);
        }
    }

    /// Adds a node to the view.
    pub fn add_node(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Deletes node `n` (Redis's `clusterDelNode`): its slots become
    /// unassigned, its failure reports about others go, its links are
    /// freed, and every index above `n` moves down by one.
    pub fn del_node(&mut self, n: usize) {
        // Its master may be left without replicas (Redis's freeClusterNode).
        self.set_replica_of(n, None);
        let id = self.nodes[n].id.clone();
        for l in [self.nodes[n].link, self.nodes[n].inbound_link]
            .into_iter()
            .flatten()
        {
            self.free_link(l);
        }
        for node in &mut self.nodes {
            node.fail_reports.retain(|(r, _)| *r != id);
            if node.replica_of.as_deref() == Some(id.as_str()) && node.flags & SLAVE != 0 {
                // Its replicas keep their role with an unknown master.
                node.replica_of = None;
            }
        }
        let shift = |x: &mut Option<usize>| match *x {
            Some(i) if i == n => *x = None,
            Some(i) if i > n => *x = Some(i - 1),
            _ => {}
        };
        for s in 0..super::slot::SLOTS {
            shift(&mut self.importing[s]);
            shift(&mut self.migrating[s]);
            shift(&mut self.owners[s]);
            shift(&mut self.served[s]);
        }
        for l in self.bus.links.values_mut() {
            shift(&mut l.node);
        }
        self.nodes.remove(n);
        if self.myself > n {
            self.myself -= 1;
        }
    }

    /// Starts a handshake with `ip:port@cport` unless one is under way
    /// (Redis's `clusterStartHandshake`); false for an invalid address.
    pub fn start_handshake(&mut self, ip: &str, port: i64, cport: i64) -> bool {
        let Ok(addr) = ip.parse::<std::net::IpAddr>() else {
            return false;
        };
        if !(1..=65535).contains(&port) || !(1..=65535).contains(&cport) {
            return false;
        }
        let norm = addr.to_string();
        let busy = self.nodes.iter().any(|n| {
            n.flags & HANDSHAKE != 0
                && n.ip.eq_ignore_ascii_case(&norm)
                && n.port as i64 == port
                && n.cport as i64 == cport
        });
        if !busy {
            let id = random_name(&mut self.bus);
            let mut node = Node::new(id, HANDSHAKE | MEET);
            node.ip = norm;
            node.port = port as u16;
            node.cport = cport as u16;
            self.add_node(node);
        }
        true
    }

    /// Marks work for the end of the current event.
    pub fn todo(&mut self, flags: u32) {
        self.bus.todo |= flags;
    }
}

/// DEBUG CLUSTERLINK KILL to|from|all <node-id>: frees the node's outbound,
/// inbound or both links; the error text for an unknown node or direction.
pub fn kill_links(c: &mut Cluster, dir: &[u8], id: &[u8]) -> Result<(), String> {
    let Some(n) = c.lookup(id) else {
        return Err(format!("Unknown node {}", String::from_utf8_lossy(id)));
    };
    let (out, inb) = (c.nodes[n].link, c.nodes[n].inbound_link);
    let links = if dir.eq_ignore_ascii_case(b"from") {
        vec![inb]
    } else if dir.eq_ignore_ascii_case(b"to") {
        vec![out]
    } else if dir.eq_ignore_ascii_case(b"all") {
        vec![out, inb]
    } else {
        return Err(format!(
            "Unknown direction {}",
            String::from_utf8_lossy(dir)
        ));
    };
    for l in links.into_iter().flatten() {
        c.free_link(l);
    }
    Ok(())
}

/// A random node id (handshake nodes get one until their PONG names them).
pub fn random_name(bus: &mut Bus) -> String {
    (0..super::node::ID_LEN)
        .map(|_| char::from(b"0123456789abcdef"[(bus.random() % 16) as usize]))
        .collect()
}

/// Starts the bus of a cluster-mode server: binds the bus port and spawns
/// the accept loop and the cron. An error when the port cannot be bound
/// (Redis exits then).
pub fn start(srv: &Rc<RefCell<Server>>, ephemeral: bool) -> Result<(), String> {
    let listeners = {
        let mut guard = srv.borrow_mut();
        let s = &mut *guard;
        let Some(c) = s.cluster.as_deref_mut() else {
            return Ok(());
        };
        let fixed = s.config.get_i64("cluster-port") != 0;
        let cport = if ephemeral && !fixed {
            0
        } else {
            bus_port(&s.config)
        };
        let listeners = link::bind(&s.config, cport)?;
        if cport == 0 {
            // The port the OS picked is this node's bus port.
            if let Some(p) = listeners.first().and_then(|l| l.local_addr().ok()) {
                let _ = s
                    .config
                    .set("cluster-port", p.port().to_string().as_bytes());
                c.announce(&s.config);
                let _ = super::config_file::save(c);
            }
        }
        listeners
    };
    for l in listeners {
        link::spawn_accept(srv, l);
    }
    let srv = srv.clone();
    tokio::task::spawn_local(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(CRON_MS)).await;
            let mut s = srv.borrow_mut();
            if s.cluster.is_none() {
                continue;
            }
            cron(&srv, &mut s);
        }
    });
    Ok(())
}

/// The port the bus listens on: `cluster-port`, else the client port + 10000.
fn bus_port(config: &crate::Config) -> u16 {
    let p = config.get_i64("cluster-port");
    if p != 0 {
        p as u16
    } else {
        (config.port as u32 + super::PORT_INCR) as u16
    }
}

/// Redis's `clusterCron`: reconnects links, pings, times nodes out.
fn cron(rc: &Rc<RefCell<Server>>, srv: &mut Server) {
    let timeout = node_timeout(srv);
    let handshake_timeout = timeout.max(1000);
    let offset = repl_offset(srv);
    let sendbuf_limit = srv.config.get_i64("cluster-link-sendbuf-limit");
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    c.bus.iteration += 1;
    let now = now_ms();
    c.bus.pfail_nodes = 0;
    free_overfull_links(c, sendbuf_limit);
    // Handshakes that did not complete in time are dropped; nodes without
    // a link get one.
    let mut n = 0;
    while n < c.nodes.len() {
        let node = &c.nodes[n];
        if node.flags & (MYSELF | NOADDR) != 0 {
            n += 1;
            continue;
        }
        if node.flags & PFAIL != 0 {
            c.bus.pfail_nodes += 1;
        }
        if node.flags & HANDSHAKE != 0 && now - node.ctime > handshake_timeout {
            c.del_node(n);
            continue;
        }
        if node.link.is_none() {
            let id = c.bus.add_link(Some(n), false);
            c.nodes[n].link = Some(id);
            let (ip, cport) = (c.nodes[n].ip.clone(), c.nodes[n].cport);
            link::spawn_connect(rc, c, id, ip, cport, timeout);
        }
        n += 1;
    }
    // Every tenth round, ping the node with the oldest PONG of five picked at random.
    if c.bus.iteration.is_multiple_of(10) && c.nodes.len() > 1 {
        let mut best: Option<usize> = None;
        for _ in 0..5 {
            let i = (c.bus.random() % c.nodes.len() as u64) as usize;
            let node = &c.nodes[i];
            if node.link.is_none() || node.ping_sent != 0 {
                continue;
            }
            if node.flags & (MYSELF | HANDSHAKE) != 0 {
                continue;
            }
            if best.is_none_or(|b| c.nodes[b].pong_received > node.pong_received) {
                best = Some(i);
            }
        }
        if let Some(b) = best {
            let l = c.nodes[b].link;
            gossip::send_ping(c, l, msg::PING, offset);
        }
    }
    if failure::check_timeouts(c, timeout, offset) || !c.ok {
        c.todo(TODO_UPDATE_STATE);
    }
    role::cron(srv);
    failover::handle(srv);
    migration::cron(srv);
    before_sleep(srv);
}

/// Frees the links whose unsent output passed `limit` bytes (0: no limit),
/// as Redis's `clusterNodeCronFreeLinkOnBufferLimitReached`; an outbound
/// link is made again by the cron.
fn free_overfull_links(c: &mut Cluster, limit: i64) {
    if limit <= 0 {
        return;
    }
    let over: Vec<u64> = c
        .bus
        .links
        .iter()
        .filter(|(_, l)| l.node.is_some() && l.sndbuf.capacity() as i64 > limit)
        .map(|(id, _)| *id)
        .collect();
    for id in over {
        if let Some(n) = c.bus.links.get(&id).and_then(|l| l.node) {
            crate::log::warning(&format!(
                "Freeing cluster link({}node {}, used memory: {}) due to exceeding send buffer memory limit.",
                if c.bus.links.get(&id).is_some_and(|l| l.inbound) { "from " } else { "to " },
                c.nodes[n].id,
                c.bus.links.get(&id).map_or(0, |l| l.sndbuf.capacity())
            ));
        }
        c.free_link(id);
        c.bus.links_limit_exceeded += 1;
    }
}

/// The replication offset a header carries: the master's offset, or what
/// a replica processed.
pub fn repl_offset(srv: &Server) -> u64 {
    if crate::repl::replica::is_replica(srv) {
        crate::repl::replica::slave_offset(srv).max(0) as u64
    } else {
        srv.prop.repl_offset.max(0) as u64
    }
}

/// Does what the last event left to do (Redis's `clusterBeforeSleep`):
/// the state, nodes.conf, and the effects of a change of served slots.
pub fn before_sleep(srv: &mut Server) {
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    let todo = std::mem::take(&mut c.bus.todo);
    if todo == 0 {
        return;
    }
    if todo & TODO_SLOTS != 0 {
        let mut internal = crate::server::client::Client::new(
            0,
            String::new(),
            String::new(),
            crate::server::client::ConnKind::Script,
            false,
        );
        super::channels::after_change(srv, &mut internal);
        super::blocked::redirect(srv);
    }
    if todo & TODO_UPDATE_STATE != 0 {
        let full = srv.config.get("cluster-require-full-coverage") == Some("yes");
        let timeout = node_timeout(srv);
        if let Some(c) = srv.cluster.as_deref_mut() {
            c.update_state(now_ms(), full, timeout);
        }
    }
    if todo & TODO_SAVE_CONFIG != 0 {
        if let Some(c) = srv.cluster.as_deref() {
            if let Err(e) = super::config_file::save(c) {
                crate::log::warning(&format!(
                    "Could not save the cluster config file: {}",
                    crate::config::os_error(&e)
                ));
            }
        }
    }
}

/// Sends PUBLISH (or, `sharded`, PUBLISHSHARD to the nodes of this shard)
/// to the other nodes (Redis's `clusterPropagatePublish`).
pub fn propagate_publish(srv: &mut Server, channel: &[u8], message: &[u8], sharded: bool) {
    let offset = repl_offset(srv);
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    let kind = if sharded {
        msg::PUBLISHSHARD
    } else {
        msg::PUBLISH
    };
    let m = msg::Msg {
        hdr: gossip::header(c, kind, offset),
        body: msg::Body::Publish {
            channel: channel.to_vec(),
            message: message.to_vec(),
        },
    };
    let bytes = msg::encode(&m);
    if !sharded {
        c.broadcast(&bytes);
        return;
    }
    let me = &c.nodes[c.myself];
    let master = if me.flags & MASTER != 0 {
        Some(me.id.clone())
    } else {
        me.replica_of.clone()
    };
    let Some(master) = master else { return };
    let targets: Vec<Option<u64>> = c
        .nodes
        .iter()
        .filter(|n| n.flags & (MYSELF | HANDSHAKE) == 0)
        .filter(|n| n.id == master || n.replica_of.as_deref() == Some(master.as_str()))
        .map(|n| n.link)
        .collect();
    for l in targets {
        c.send(l, &bytes);
    }
}
