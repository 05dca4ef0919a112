//! The cluster bus (issue 16): nodes joined with CLUSTER MEET form a
//! cluster that `redis-cli --cluster create/check` accept, a mixed cluster
//! of Oxidis and real redis-server nodes (the bus is byte-compatible), a
//! killed node marked PFAIL then FAIL, PUBLISH crossing nodes, and bad bus
//! input. Each scenario runs on real redis-servers too: what they show is
//! the expected value.

mod common;
use common::cluster::try_cmd;
use common::cluster_node::*;

use std::io::{Read, Write};
use std::time::Duration;

/// What a three-master cluster looks like once formed: each node's view,
/// `redis-cli --cluster check`'s verdict, and each nodes.conf's shape.
fn formed_cluster(real: bool) -> (Vec<Vec<String>>, bool, Vec<Vec<String>>) {
    let nodes = three_masters(real, if real { "bus-form-r" } else { "bus-form" });
    let refs: Vec<&Node> = nodes.iter().collect();
    let views = nodes
        .iter()
        .map(|n| nodes_shape(&n.text(&["CLUSTER", "NODES"]), &refs))
        .collect();
    let (ok, text) = cluster_cli(&["check".into(), nodes[1].addr()]);
    assert!(
        text.contains("[OK] All nodes agree about slots configuration."),
        "{text}"
    );
    let confs = nodes
        .iter()
        .map(|n| {
            n.cmd(&["CLUSTER", "SAVECONFIG"]).unwrap();
            let Ok(redis::Value::Array(v)) = n.cmd(&["CONFIG", "GET", "dir"]) else {
                panic!()
            };
            let redis::Value::BulkString(d) = &v[1] else {
                panic!()
            };
            let path = std::path::Path::new(std::str::from_utf8(d).unwrap()).join("nodes.conf");
            let text = std::fs::read_to_string(path).unwrap();
            let (nodes_part, vars) = text.trim_end().rsplit_once('\n').unwrap();
            let mut shape = nodes_shape(nodes_part, &refs);
            shape.push(vars.to_string());
            shape
        })
        .collect();
    (views, ok, confs)
}

#[test]
fn three_masters_met_form_a_cluster_redis_cli_checks() {
    let theirs = formed_cluster(true);
    let ours = formed_cluster(false);
    assert!(theirs.1 && ours.1);
    assert_eq!(ours, theirs);
}

/// Node `n`'s flags as `by` sees them.
fn flags_of(by: &Node, n: &str) -> String {
    let nodes = by.text(&["CLUSTER", "NODES"]);
    let line = nodes.lines().find(|l| l.starts_with(n)).unwrap_or("");
    line.split(' ').nth(2).unwrap_or("").to_string()
}

/// Kills masters `kill` of a three-master cluster and waits until the
/// survivors flag each as `flag`: the survivors' views and states.
fn after_kill(real: bool, kill: &[usize], flag: &str) -> Vec<(Vec<String>, String)> {
    let tag = format!("bus-kill{}{}", kill.len(), if real { "r" } else { "" });
    let mut nodes: Vec<Option<Node>> = three_masters(real, &tag).into_iter().map(Some).collect();
    let ids: Vec<String> = nodes.iter().map(|n| n.as_ref().unwrap().id()).collect();
    let ports: Vec<u16> = nodes.iter().map(|n| n.as_ref().unwrap().port()).collect();
    for &k in kill {
        drop(nodes[k].take());
    }
    let alive: Vec<&Node> = nodes.iter().flatten().collect();
    for n in &alive {
        for &k in kill {
            wait_for(&format!("node {k} flagged {flag}"), || {
                (flags_of(n, &ids[k]) == flag).then_some(())
            });
        }
        if flag == "master,fail" {
            wait_for("cluster state fail", || {
                n.text(&["CLUSTER", "INFO"])
                    .starts_with("cluster_state:fail")
                    .then_some(())
            });
        }
    }
    alive
        .iter()
        .map(|n| {
            let text = n.text(&["CLUSTER", "NODES"]);
            let mut shape: Vec<String> = text
                .lines()
                .map(|l| {
                    let f: Vec<&str> = l.split(' ').collect();
                    let i = ids.iter().position(|id| id == f[0]).unwrap();
                    let addr = f[1].replace(&ports[i].to_string(), "<port>");
                    let addr = addr.split('@').next().unwrap().to_string();
                    let rest = f[6..].join(" ");
                    format!("n{i} {addr} {} {rest}", f[2])
                })
                .collect();
            shape.sort();
            let info = n.text(&["CLUSTER", "INFO"]);
            let state: String = info
                .lines()
                .filter(|l| {
                    l.starts_with("cluster_state")
                        || l.starts_with("cluster_slots_")
                        || l.starts_with("cluster_known")
                        || l.starts_with("cluster_size")
                })
                .collect::<Vec<_>>()
                .join(",");
            (shape, state)
        })
        .collect()
}

#[test]
fn a_killed_master_is_marked_fail_by_the_majority() {
    let theirs = after_kill(true, &[2], "master,fail");
    let ours = after_kill(false, &[2], "master,fail");
    assert_eq!(ours, theirs);
}

#[test]
fn a_node_left_alone_marks_the_others_pfail_only() {
    let theirs = after_kill(true, &[1, 2], "master,fail?");
    let ours = after_kill(false, &[1, 2], "master,fail?");
    assert_eq!(ours, theirs);
}

#[test]
fn mixed_cluster_with_real_redis_agrees_and_redirects_both_ways() {
    // A real node and two Oxidis nodes: Oxidis meets Redis, Redis meets
    // the other Oxidis node, which the first learns from gossip.
    let real = Node::start(true, "bus-mix-r");
    let a = Node::start(false, "bus-mix-a");
    let b = Node::start(false, "bus-mix-b");
    real.cmd(&["CLUSTER", "ADDSLOTSRANGE", "0", "5000"])
        .unwrap();
    a.cmd(&["CLUSTER", "ADDSLOTSRANGE", "5001", "10000"])
        .unwrap();
    b.cmd(&["CLUSTER", "ADDSLOTSRANGE", "10001", "16383"])
        .unwrap();
    let (rp, rc) = (real.port().to_string(), real.cport().to_string());
    a.cmd(&["CLUSTER", "MEET", "127.0.0.1", &rp, &rc]).unwrap();
    let (bp, bc) = (b.port().to_string(), b.cport().to_string());
    real.cmd(&["CLUSTER", "MEET", "127.0.0.1", &bp, &bc])
        .unwrap();
    let all = [&real, &a, &b];
    for n in all {
        wait_for("all three agree", || {
            let nodes = n.text(&["CLUSTER", "NODES"]);
            let ok = n.text(&["CLUSTER", "INFO"]).starts_with("cluster_state:ok");
            (ok && nodes.lines().count() == 3
                && !nodes.contains("handshake")
                && !nodes.contains("disconnected"))
            .then_some(())
        });
    }
    // Every node's view is the real node's view.
    let views: Vec<Vec<String>> = all
        .iter()
        .map(|n| {
            let mut v: Vec<String> = nodes_shape(&n.text(&["CLUSTER", "NODES"]), &all)
                .into_iter()
                .map(|l| l.replace("myself,", ""))
                .collect();
            v.sort();
            v
        })
        .collect();
    assert_eq!(views[1], views[0]);
    assert_eq!(views[2], views[0]);
    assert!(
        views[0][0].contains(" master - <ping> <pong> "),
        "{views:?}"
    );
    // CLUSTER SLOTS: the same reply from every node.
    let slots = format!("{:?}", real.cmd(&["CLUSTER", "SLOTS"]).unwrap());
    assert_eq!(
        format!("{:?}", a.cmd(&["CLUSTER", "SLOTS"]).unwrap()),
        slots
    );
    assert_eq!(
        format!("{:?}", b.cmd(&["CLUSTER", "SLOTS"]).unwrap()),
        slots
    );
    // MOVED points at the owner, both ways: foo is slot 12182 (b), bar
    // 5061 (a), baz 4813 (real).
    let moved = |n: &Node, key: &str| n.cmd(&["SET", key, "v"]).unwrap_err();
    assert_eq!(moved(&real, "foo"), format!("MOVED 12182 {}", b.addr()));
    assert_eq!(moved(&real, "bar"), format!("MOVED 5061 {}", a.addr()));
    assert_eq!(moved(&a, "baz"), format!("MOVED 4813 {}", real.addr()));
    assert_eq!(moved(&b, "bar"), format!("MOVED 5061 {}", a.addr()));
    // PUBLISH crosses nodes both ways.
    for (from, to) in [(&a, &real), (&real, &b), (&b, &a)] {
        let mut sub = common::Raw::connect_to(to.addr());
        sub.cmd(&[b"SUBSCRIBE", b"news"]);
        sub.read_raw();
        from.cmd(&["PUBLISH", "news", "hello"]).unwrap();
        assert_eq!(
            sub.read_raw(),
            b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n".to_vec()
        );
    }
    // A slot moved as redis-cli moves it: the importing node takes it with
    // SETSLOT NODE (and a new config epoch), which every node learns.
    let (a_id, b_id) = (a.id(), b.id());
    b.cmd(&["CLUSTER", "SETSLOT", "5061", "IMPORTING", &a_id])
        .unwrap();
    a.cmd(&["CLUSTER", "SETSLOT", "5061", "MIGRATING", &b_id])
        .unwrap();
    b.cmd(&["CLUSTER", "SETSLOT", "5061", "NODE", &b_id])
        .unwrap();
    a.cmd(&["CLUSTER", "SETSLOT", "5061", "NODE", &b_id])
        .unwrap();
    for n in [&real, &a] {
        wait_for("slot 5061 moved to b everywhere", || {
            let e = n.cmd(&["GET", "bar"]);
            (e == Err(format!("MOVED 5061 {}", b.addr()))).then_some(())
        });
    }
    assert_eq!(b.cmd(&["GET", "bar"]), Ok(redis::Value::Nil));
    let epochs = |n: &Node| {
        let nodes = n.text(&["CLUSTER", "NODES"]);
        let mut e: Vec<String> = nodes
            .lines()
            .map(|l| l.split(' ').nth(6).unwrap().to_string())
            .collect();
        e.sort();
        e
    };
    wait_for("the epochs agree", || {
        (epochs(&real) == epochs(&b)).then_some(())
    });
}

/// What the bus port does with bytes that are not a bus message: a
/// signature other than "RCmb" closes the link.
fn bad_signature_closes(cport: u16) -> bool {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", cport)).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut b = [0u8; 16];
    matches!(s.read(&mut b), Ok(0) | Err(_))
}

#[test]
fn bad_bus_input_closes_the_link_and_never_hurts_the_node() {
    let real = Node::start(true, "bus-bad-r");
    let ours = Node::start(false, "bus-bad");
    assert!(bad_signature_closes(real.cport()));
    assert!(bad_signature_closes(ours.cport()));
    // Random messages with a valid signature and length, of every type,
    // from unknown senders: the node goes on answering, knows no new node
    // but handshakes, and keeps no slot it did not have.
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for round in 0..300 {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", ours.cport())).unwrap();
        let len = 2256 + (next() % 700) as usize;
        let mut msg: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        msg[..4].copy_from_slice(b"RCmb");
        msg[4..8].copy_from_slice(&(len as u32).to_be_bytes());
        msg[8..10].copy_from_slice(&[0, 1]);
        msg[12..14].copy_from_slice(&[0, (round % 12) as u8]);
        if round % 3 == 0 {
            // A plausible PING: no gossip, no extensions.
            msg[14..16].copy_from_slice(&[0, 0]);
            msg.truncate(2256);
            msg[4..8].copy_from_slice(&2256u32.to_be_bytes());
        }
        let _ = s.write_all(&msg);
    }
    // A header that claims more than the node takes closes the link.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", ours.cport())).unwrap();
    s.write_all(b"RCmb\xff\xff\xff\xff").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut b = [0u8; 16];
    assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
    assert_eq!(ours.text(&["PING"]), "PONG");
    let nodes = ours.text(&["CLUSTER", "NODES"]);
    for line in nodes.lines().filter(|l| !l.contains("myself")) {
        assert!(
            line.contains("handshake") || line.contains("noaddr"),
            "{nodes}"
        );
    }
    let info = ours.text(&["CLUSTER", "INFO"]);
    assert!(info.contains("cluster_slots_assigned:0\r\n"), "{info}");
}

/// The replica of a killed master takes its slots.
fn failover_after_kill(real: bool) -> Vec<Vec<String>> {
    let tag = if real { "bus-fo-r" } else { "bus-fo" };
    let mut nodes: Vec<Option<Node>> = masters_and_replica(real, tag)
        .into_iter()
        .map(Some)
        .collect();
    let all: Vec<String> = nodes.iter().map(|n| n.as_ref().unwrap().id()).collect();
    let ports: Vec<u16> = nodes.iter().map(|n| n.as_ref().unwrap().port()).collect();
    drop(nodes[0].take());
    let replica = nodes[3].as_ref().unwrap();
    wait_for("the replica is the master of slots 0-5460", || {
        let n = replica.text(&["CLUSTER", "NODES"]);
        n.lines()
            .any(|l| l.contains("myself,master") && l.ends_with(" 0-5460"))
            .then_some(())
    });
    let mut c = replica.conn();
    assert_eq!(
        try_cmd(&mut c, &["GET", "bar"]),
        Ok(redis::Value::BulkString(b"v".to_vec()))
    );
    let alive: Vec<&Node> = nodes.iter().flatten().collect();
    for n in &alive {
        wait_for("everyone sees the new master", || {
            let state = n.text(&["CLUSTER", "INFO"]).starts_with("cluster_state:ok");
            let text = n.text(&["CLUSTER", "NODES"]);
            (state
                && text
                    .lines()
                    .any(|l| l.starts_with(&all[3]) && l.contains("master")))
            .then_some(())
        });
    }
    alive
        .iter()
        .map(|n| {
            let text = n.text(&["CLUSTER", "NODES"]);
            let mut v: Vec<String> = text
                .lines()
                .map(|l| {
                    let f: Vec<&str> = l.split(' ').collect();
                    let i = all.iter().position(|id| id == f[0]).unwrap();
                    let master = all
                        .iter()
                        .position(|id| id == f[3])
                        .map_or("-".to_string(), |m| format!("n{m}"));
                    let _ = ports[i];
                    format!(
                        "n{i} {} {master} {}",
                        f[2].replace("myself,", ""),
                        f[8..].join(" ")
                    )
                })
                .collect();
            v.sort();
            v
        })
        .collect()
}

#[test]
fn the_replica_of_a_failed_master_takes_its_slots() {
    let theirs = failover_after_kill(true);
    let ours = failover_after_kill(false);
    assert_eq!(ours, theirs);
}

/// CLUSTER FAILOVER `mode` on the replica: the replica serves the slots and
/// the old master becomes its replica.
fn manual_failover(real: bool, mode: &str) -> Vec<Vec<String>> {
    let tag = format!(
        "bus-mf{}{}",
        mode.to_lowercase(),
        if real { "r" } else { "" }
    );
    let nodes = masters_and_replica(real, &tag);
    let refs: Vec<&Node> = nodes.iter().collect();
    let mut args = vec!["CLUSTER", "FAILOVER"];
    if !mode.is_empty() {
        args.push(mode);
    }
    nodes[3].cmd(&args).unwrap();
    let rid = nodes[3].id();
    for n in &nodes {
        wait_for("the old master follows the new one everywhere", || {
            let text = n.text(&["CLUSTER", "NODES"]);
            let new_master = text
                .lines()
                .any(|l| l.starts_with(&rid) && l.contains("master") && l.ends_with(" 0-5460"));
            let old_replica = text
                .lines()
                .any(|l| l.starts_with(&refs[0].id()) && l.contains(&format!("slave {rid}")));
            (new_master && old_replica).then_some(())
        });
    }
    wait_for("the old master replicates the new one", || {
        nodes[0]
            .text(&["INFO", "replication"])
            .contains("master_link_status:up")
            .then_some(())
    });
    nodes.iter().map(|n| roles(n, &refs)).collect()
}

#[test]
fn cluster_failover_takeover_and_force_swap_the_roles() {
    for mode in ["TAKEOVER", "FORCE"] {
        let theirs = manual_failover(true, mode);
        let ours = manual_failover(false, mode);
        assert_eq!(ours, theirs, "{mode}");
    }
}
