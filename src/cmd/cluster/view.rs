//! CLUSTER subcommands that show this node's view: HELP, INFO, MYID, NODES, SLOTS, SHARDS, LINKS, REPLICAS.

use super::{cluster, unknown_node};
use crate::cluster::node::{self, Node};
use crate::cluster::Cluster;
use crate::command::Args;
use crate::error::{CmdResult, Error};
use crate::resp::encode::Reply;
use crate::server::Ctx;

const HELP: &[&str] = &[
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
    "HELP",
    "    Prints this help.",
];

/// ```text
/// CLUSTER HELP
/// ```
pub fn help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    cluster(ctx)?;
    crate::cmd::help_reply(ctx, HELP)
}

/// ```text
/// CLUSTER INFO
/// ```
pub fn info(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let c = cluster(ctx)?;
    let (mut assigned, mut ok, mut pfail, mut fail) = (0, 0, 0, 0);
    for owner in c.owners.iter().flatten() {
        assigned += 1;
        let n = &c.nodes[*owner];
        if n.failed() {
            fail += 1;
        } else if n.flags & node::PFAIL != 0 {
            pfail += 1;
        } else {
            ok += 1;
        }
    }
    let mut text = format!(
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{ok}\r\n\
         cluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{}\r\n\
         cluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{}\r\n",
        if c.ok { "ok" } else { "fail" },
        c.nodes.len(),
        c.size,
        c.current_epoch,
        my_epoch(c),
    );
    // Messages by type, only the types seen (Redis's order and names).
    for (dir, counts) in [("sent", &c.bus.sent), ("received", &c.bus.received)] {
        for (t, n) in counts.iter().enumerate().filter(|(_, n)| **n != 0) {
            text.push_str(&format!(
                "cluster_stats_messages_{}_{dir}:{n}\r\n",
                crate::cluster::bus::msg::type_name(t)
            ));
        }
        let total: u64 = counts.iter().sum();
        text.push_str(&format!("cluster_stats_messages_{dir}:{total}\r\n"));
    }
    text.push_str(&format!(
        "total_cluster_links_buffer_limit_exceeded:{}\r\n",
        c.bus.links_limit_exceeded
    ));
    ctx.out().verbatim(text.as_bytes());
    Ok(())
}

/// This node's config epoch (its master's for a replica).
fn my_epoch(c: &Cluster) -> u64 {
    match c.master_of(c.myself) {
        Some(m) => c.nodes[m].config_epoch,
        None => c.me().config_epoch,
    }
}

/// ```text
/// CLUSTER MYID
/// ```
pub fn myid(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let id = cluster(ctx)?.me().id.clone();
    ctx.out().bulk(id.as_bytes());
    Ok(())
}

/// The `cluster-announce-*` settings as they are now: Redis applies a
/// CONFIG SET of them at once, the cron here only every tick.
fn announce(ctx: &mut Ctx) {
    let Ctx { srv, .. } = ctx;
    if let Some(c) = srv.cluster.as_deref_mut() {
        c.announce(&srv.config);
    }
}

/// ```text
/// CLUSTER NODES
/// ```
pub fn nodes(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    announce(ctx);
    let text = crate::cluster::config_file::describe(cluster(ctx)?);
    ctx.out().verbatim(text.as_bytes());
    Ok(())
}

/// ```text
/// CLUSTER LINKS
/// ```
/// Each node's outbound link, then its inbound one (Redis's order).
pub fn links(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let Ctx { srv, client, .. } = ctx;
    let Some(c) = srv.cluster.as_deref() else {
        return Err(Error::msg(crate::error::cluster::DISABLED));
    };
    let out = &mut client.reply;
    let list: Vec<(&crate::cluster::bus::Link, &str)> = c
        .nodes
        .iter()
        .flat_map(|n| {
            [n.link, n.inbound_link]
                .into_iter()
                .flatten()
                .map(move |l| (l, n))
        })
        .filter_map(|(l, n)| Some((c.bus.links.get(&l)?, n.id.as_str())))
        .collect();
    out.array(list.len());
    for (l, node) in list {
        out.map(6);
        out.bulk(b"direction");
        out.bulk(if l.inbound { &b"from"[..] } else { b"to" });
        out.bulk(b"node");
        out.bulk(node.as_bytes());
        out.bulk(b"create-time");
        out.int(l.ctime);
        out.bulk(b"events");
        out.bulk(if l.sndbuf.is_empty() {
            &b"r"[..]
        } else {
            b"rw"
        });
        out.bulk(b"send-buffer-allocated");
        out.int(l.sndbuf.capacity() as i64);
        out.bulk(b"send-buffer-used");
        out.int(l.sndbuf.len() as i64);
    }
    Ok(())
}

/// ```text
/// CLUSTER REPLICAS node-id
/// ```
pub fn replicas(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let c = cluster(ctx)?;
    let n = c
        .lookup(args.at(2))
        .ok_or_else(|| unknown_node(args.at(2)))?;
    if c.nodes[n].is_replica() {
        return Err(Error::msg(crate::error::cluster::NOT_A_MASTER));
    }
    let lines: Vec<String> = replicas_of(c, n)
        .map(|r| crate::cluster::config_file::describe_node(c, r))
        .collect();
    let out = ctx.out();
    out.array(lines.len());
    for l in lines {
        out.bulk(l.as_bytes());
    }
    Ok(())
}

fn replicas_of(c: &Cluster, n: usize) -> impl Iterator<Item = usize> + '_ {
    let id = c.nodes[n].id.as_str();
    (0..c.nodes.len()).filter(move |&r| c.nodes[r].replica_of.as_deref() == Some(id))
}

/// The endpoint setting (`cluster-preferred-endpoint-type`).
fn endpoint_kind(ctx: &Ctx) -> String {
    ctx.srv
        .config
        .get("cluster-preferred-endpoint-type")
        .unwrap_or("ip")
        .to_string()
}

/// A node as CLUSTER SLOTS lists it: endpoint, port, id, and a map of the
/// other known endpoints (Redis's `addNodeToNodeReply`).
fn node_entry(out: &mut Reply, node: &Node, kind: &str) {
    out.array(4);
    match kind {
        "hostname" if node.hostname.is_empty() => out.bulk(b"?"),
        "hostname" => out.bulk(node.hostname.as_bytes()),
        "unknown-endpoint" => out.null(),
        _ => out.bulk(node.ip.as_bytes()),
    }
    out.int(node.port as i64);
    out.bulk(node.id.as_bytes());
    let ip = kind != "ip";
    let host = kind != "hostname" && !node.hostname.is_empty();
    out.map(ip as usize + host as usize);
    if ip {
        out.bulk(b"ip");
        out.bulk(node.ip.as_bytes());
    }
    if host {
        out.bulk(b"hostname");
        out.bulk(node.hostname.as_bytes());
    }
}

/// Runs of consecutive slots served by one node, in slot order.
fn runs(c: &Cluster) -> Vec<(u16, u16, usize)> {
    let mut out: Vec<(u16, u16, usize)> = Vec::new();
    for (s, owner) in c.owners.iter().enumerate() {
        let Some(n) = *owner else { continue };
        match out.last_mut() {
            Some((_, end, m)) if *m == n && *end as usize + 1 == s => *end = s as u16,
            _ => out.push((s as u16, s as u16, n)),
        }
    }
    out
}

/// ```text
/// CLUSTER SLOTS
/// ```
pub fn slots(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    announce(ctx);
    let kind = endpoint_kind(ctx);
    let my_offset = crate::cluster::bus::repl_offset(ctx.srv);
    let Ctx { srv, client, .. } = ctx;
    let Some(c) = srv.cluster.as_deref() else {
        return Err(Error::msg(crate::error::cluster::DISABLED));
    };
    let out = &mut client.reply;
    let runs = runs(c);
    out.array(runs.len());
    for (a, b, n) in runs {
        // Replicas are listed once their sync began (Redis's
        // isReplicaAvailable: not failed, a non-zero offset).
        let replicas: Vec<usize> = replicas_of(c, n)
            .filter(|&r| {
                let node = &c.nodes[r];
                let offset = if node.is_myself() {
                    my_offset
                } else {
                    node.repl_offset
                };
                !node.failed() && offset != 0
            })
            .collect();
        out.array(3 + replicas.len());
        out.int(a as i64);
        out.int(b as i64);
        node_entry(out, &c.nodes[n], &kind);
        for r in replicas {
            node_entry(out, &c.nodes[r], &kind);
        }
    }
    Ok(())
}

/// ```text
/// CLUSTER SHARDS
/// ```
pub fn shards(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    announce(ctx);
    let kind = endpoint_kind(ctx);
    let offset = crate::cluster::bus::repl_offset(ctx.srv) as i64;
    let Ctx { srv, client, .. } = ctx;
    let Some(c) = srv.cluster.as_deref() else {
        return Err(Error::msg(crate::error::cluster::DISABLED));
    };
    let out = &mut client.reply;
    let masters: Vec<usize> = (0..c.nodes.len())
        .filter(|&n| !c.nodes[n].is_replica())
        .collect();
    out.array(masters.len());
    for m in masters {
        out.map(2);
        out.bulk(b"slots");
        let ranges = node::ranges(&c.owners, m);
        out.array(ranges.len() * 2);
        for (a, b) in ranges {
            out.int(a as i64);
            out.int(b as i64);
        }
        out.bulk(b"nodes");
        let members: Vec<usize> = std::iter::once(m).chain(replicas_of(c, m)).collect();
        out.array(members.len());
        for n in members {
            shard_node(out, c, n, &kind, offset);
        }
    }
    Ok(())
}

/// One node of a shard (Redis's `addNodeDetailsToShardReply`).
fn shard_node(out: &mut Reply, c: &Cluster, n: usize, kind: &str, my_offset: i64) {
    let node = &c.nodes[n];
    let host = !node.hostname.is_empty();
    let port = node.port != 0;
    out.map(6 + port as usize + host as usize);
    out.bulk(b"id");
    out.bulk(node.id.as_bytes());
    if port {
        out.bulk(b"port");
        out.int(node.port as i64);
    }
    out.bulk(b"ip");
    out.bulk(node.ip.as_bytes());
    out.bulk(b"endpoint");
    out.bulk(c.endpoint(node, kind).as_bytes());
    if host {
        out.bulk(b"hostname");
        out.bulk(node.hostname.as_bytes());
    }
    let offset = if node.is_myself() {
        my_offset
    } else {
        node.repl_offset as i64
    };
    out.bulk(b"role");
    out.bulk(if node.is_replica() {
        &b"replica"[..]
    } else {
        b"master"
    });
    out.bulk(b"replication-offset");
    out.int(offset);
    out.bulk(b"health");
    let health = if node.failed() {
        "fail"
    } else if node.is_replica() && offset == 0 {
        "loading"
    } else {
        "online"
    };
    out.bulk(health.as_bytes());
}
