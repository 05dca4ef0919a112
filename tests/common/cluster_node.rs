//! Cluster nodes for tests comparing Oxidis with real redis-servers: start, join, wait, compare views.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::real_redis::{temp_dir, RedisServer};

pub const TIMEOUT: &str = "1000";

/// A cluster node: Oxidis in this process, or a real redis-server.
pub enum Node {
    Ours(oxidis::Handle),
    Real(RedisServer),
}

impl Node {
    pub fn start(real: bool, tag: &str) -> Node {
        Node::start_with(real, tag, &[])
    }

    /// A node with `extra` redis-server flags after the cluster ones.
    pub fn start_with(real: bool, tag: &str, extra: &[&str]) -> Node {
        let dir = temp_dir(tag);
        let mut flags = vec![
            "--cluster-enabled",
            "yes",
            "--cluster-node-timeout",
            TIMEOUT,
        ];
        flags.extend_from_slice(extra);
        if real {
            Node::Real(RedisServer::start_in(&dir, &flags))
        } else {
            let mut all = vec!["--dir", dir.to_str().unwrap()];
            all.extend_from_slice(&flags);
            Node::Ours(super::start_with(&all))
        }
    }

    pub fn addr(&self) -> String {
        match self {
            Node::Ours(h) => h.addr().to_string(),
            Node::Real(r) => r.addr(),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr().rsplit(':').next().unwrap().parse().unwrap()
    }

    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(format!("redis://{}/", self.addr()))
            .unwrap()
            .get_connection()
            .unwrap()
    }

    pub fn cmd(&self, words: &[&str]) -> Result<redis::Value, String> {
        super::cluster::try_cmd(&mut self.conn(), words)
    }

    pub fn text(&self, words: &[&str]) -> String {
        match self.cmd(words) {
            Ok(redis::Value::BulkString(b)) => String::from_utf8(b).unwrap(),
            Ok(redis::Value::VerbatimString { text, .. }) => text,
            Ok(redis::Value::SimpleString(s)) => s,
            other => panic!("{words:?}: {other:?}"),
        }
    }

    pub fn id(&self) -> String {
        self.text(&["CLUSTER", "MYID"])
    }

    /// The bus port, as its own CLUSTER NODES line says.
    pub fn cport(&self) -> u16 {
        let nodes = self.text(&["CLUSTER", "NODES"]);
        let me = nodes.lines().find(|l| l.contains("myself")).unwrap();
        let addr = me.split(' ').nth(1).unwrap();
        addr.split('@')
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }
}

/// Polls `check` until it gives a value (60 s at most: a limit for a hang,
/// not a measure).
pub fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// CLUSTER NODES with ids and ports replaced by the node's place in
/// `nodes`, ping/pong times blanked, lines in that order.
pub fn nodes_shape(text: &str, nodes: &[&Node]) -> Vec<String> {
    let names: Vec<(String, u16)> = nodes.iter().map(|n| (n.id(), n.port())).collect();
    let mut lines: BTreeMap<usize, String> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let Some(i) = names.iter().position(|(id, _)| id == f[0]) else {
            lines.insert(100 + lines.len(), format!("unknown {line}"));
            continue;
        };
        let mut out = vec![format!("n{i}")];
        let addr = f[1].replace(&names[i].1.to_string(), "<port>");
        let addr = addr.split('@').next().unwrap().to_string();
        out.push(addr);
        out.push(f[2].into());
        out.push(match names.iter().position(|(id, _)| id == f[3]) {
            Some(m) => format!("n{m}"),
            None => f[3].into(),
        });
        out.push("<ping>".into());
        out.push("<pong>".into());
        out.extend(f[6..].iter().map(|s| s.to_string()));
        lines.insert(i, out.join(" "));
    }
    lines.into_values().collect()
}

/// Runs `redis-cli --cluster <args>`: success and output.
pub fn cluster_cli(args: &[String]) -> (bool, String) {
    let out = std::process::Command::new("redis-cli")
        .arg("--cluster")
        .args(args)
        .output()
        .expect("redis-cli runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// Three masters joined by `redis-cli --cluster create` (its CLUSTER
/// ADDSLOTS, SET-CONFIG-EPOCH and MEET), once every node sees the others.
pub fn three_masters(real: bool, tag: &str) -> Vec<Node> {
    let nodes: Vec<Node> = (0..3)
        .map(|i| Node::start(real, &format!("{tag}{i}")))
        .collect();
    let mut args = vec!["create".to_string()];
    args.extend(nodes.iter().map(|n| n.addr()));
    args.push("--cluster-yes".into());
    let (ok, text) = cluster_cli(&args);
    assert!(ok, "{text}");
    for n in &nodes {
        wait_for("every node sees the others, cluster ok", || {
            let info = n.text(&["CLUSTER", "INFO"]);
            let nodes = n.text(&["CLUSTER", "NODES"]);
            let settled = nodes.lines().count() == 3
                && !nodes.contains("handshake")
                && !nodes.contains("disconnected");
            (info.starts_with("cluster_state:ok") && settled).then_some(())
        });
    }
    nodes
}

/// Three masters and a replica of the first, once the replica's link is up.
pub fn masters_and_replica(real: bool, tag: &str) -> Vec<Node> {
    let mut nodes = three_masters(real, tag);
    add_replica(&mut nodes, 0, real, &format!("{tag}r"), &[]);
    let r = nodes.last().unwrap();
    nodes[0].cmd(&["SET", "bar", "v"]).unwrap();
    wait_for("the replica has the data", || {
        let mut c = r.conn();
        let _ = super::cluster::try_cmd(&mut c, &["READONLY"]);
        let got = super::cluster::try_cmd(&mut c, &["GET", "bar"]);
        (got == Ok(redis::Value::BulkString(b"v".to_vec()))).then_some(())
    });
    nodes
}

/// A new node (with `flags`) met by `nodes[0]`, made a replica of
/// `nodes[master]` and pushed last, once every node knows it and its link
/// is up.
pub fn add_replica(nodes: &mut Vec<Node>, master: usize, real: bool, tag: &str, flags: &[&str]) {
    let r = Node::start_with(real, tag, flags);
    let (p, c) = (nodes[0].port().to_string(), nodes[0].cport().to_string());
    r.cmd(&["CLUSTER", "MEET", "127.0.0.1", &p, &c]).unwrap();
    let master = nodes[master].id();
    let rid = r.id();
    wait_for(
        "the replica is known everywhere and knows its master",
        || {
            (nodes
                .iter()
                .all(|n| n.text(&["CLUSTER", "NODES"]).contains(&rid))
                && r.text(&["CLUSTER", "NODES"]).contains(&master))
            .then_some(())
        },
    );
    r.cmd(&["CLUSTER", "REPLICATE", &master]).unwrap();
    wait_for("the replica's link is up", || {
        let info = r.text(&["INFO", "replication"]);
        info.contains("master_link_status:up").then_some(())
    });
    nodes.push(r);
}

/// Each node's roles and slots (by place in `nodes`), as `by` sees them.
pub fn roles(by: &Node, nodes: &[&Node]) -> Vec<String> {
    let mut v: Vec<String> = nodes_shape(&by.text(&["CLUSTER", "NODES"]), nodes)
        .into_iter()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let flags = f[2].replace("myself,", "");
            let slots = f[8..].join(" ");
            format!("{} {flags} {} {slots}", f[0], f[3])
        })
        .collect();
    v.sort();
    v
}
