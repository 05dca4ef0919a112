//! nodes.conf: the node lines of CLUSTER NODES plus a `vars` line, written and read back as Redis 7.0 does.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::node::{self, Node, MASTER, MYSELF, SLAVE};
use super::slot::SLOTS;
use super::Cluster;

/// `cluster-config-file`, relative to `dir` (Redis runs in `dir`).
pub fn path(config: &crate::Config) -> PathBuf {
    let file = config.get("cluster-config-file").unwrap_or("nodes.conf");
    config.path(file)
}

/// One node's line (Redis's `clusterGenNodeDescription`), without the newline.
pub fn describe_node(c: &Cluster, idx: usize) -> String {
    let n = &c.nodes[idx];
    let master = n.replica_of.as_deref().unwrap_or("-");
    // A replica shows its master's epoch.
    let epoch = match n.replica_of.as_deref().and_then(|m| c.lookup(m.as_bytes())) {
        Some(m) if n.is_replica() => c.nodes[m].config_epoch,
        _ => n.config_epoch,
    };
    let link = if n.is_myself() || n.link.is_some() {
        "connected"
    } else {
        "disconnected"
    };
    let mut s = format!(
        "{} {} {} {master} {} {} {epoch} {link}",
        n.id,
        n.address(),
        n.flag_names(),
        n.ping_sent,
        n.pong_received,
    );
    for (a, b) in node::ranges(&c.owners, idx) {
        if a == b {
            s.push_str(&format!(" {a}"));
        } else {
            s.push_str(&format!(" {a}-{b}"));
        }
    }
    if n.is_myself() {
        for slot in 0..SLOTS {
            if let Some(to) = c.migrating[slot] {
                s.push_str(&format!(" [{slot}->-{}]", c.nodes[to].id));
            } else if let Some(from) = c.importing[slot] {
                s.push_str(&format!(" [{slot}-<-{}]", c.nodes[from].id));
            }
        }
    }
    s
}

/// Every node's line (CLUSTER NODES; nodes.conf without its `vars` line
/// leaves out nodes in handshake with `skip_handshake`).
pub fn describe(c: &Cluster) -> String {
    describe_filtered(c, false)
}

fn describe_filtered(c: &Cluster, skip_handshake: bool) -> String {
    let mut out = String::new();
    for i in 0..c.nodes.len() {
        if skip_handshake && c.nodes[i].flags & node::HANDSHAKE != 0 {
            continue;
        }
        out.push_str(&describe_node(c, i));
        out.push('\n');
    }
    out
}

/// Writes nodes.conf (a temporary file, fsynced, renamed over the old one).
pub fn save(c: &Cluster) -> std::io::Result<()> {
    let mut text = describe_filtered(c, true);
    text.push_str(&format!(
        "vars currentEpoch {} lastVoteEpoch {}\n",
        c.current_epoch, c.last_vote_epoch
    ));
    let tmp = c.config_path.with_extension("tmp-oxidis");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, &c.config_path)
}

/// Reads nodes.conf (Redis's `clusterLoadConfig`): None when the file is
/// missing or empty (a fresh node), an error for a corrupted file.
pub fn load(path: &Path) -> Result<Option<Cluster>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "Loading the cluster node config from {}: {}",
                path.display(),
                crate::config::os_error(&e)
            ))
        }
    };
    if bytes.is_empty() {
        return Ok(None);
    }
    let corrupted = || "Unrecoverable error: corrupted cluster config file.".to_string();
    let mut c = Cluster::fresh(String::new(), path.to_path_buf());
    c.nodes.clear();
    let mut myself = None;
    for line in bytes.split(|&b| b == b'\n') {
        if line.is_empty() {
            continue;
        }
        let argv = crate::config::split_config_line(line).ok_or_else(corrupted)?;
        let argv: Vec<String> = argv
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if argv.is_empty() {
            continue;
        }
        if argv[0].eq_ignore_ascii_case("vars") {
            if argv.len().is_multiple_of(2) {
                return Err(corrupted());
            }
            for kv in argv[1..].chunks(2) {
                let v = kv[1].parse::<u64>().unwrap_or(0);
                if kv[0].eq_ignore_ascii_case("currentEpoch") {
                    c.current_epoch = v;
                } else if kv[0].eq_ignore_ascii_case("lastVoteEpoch") {
                    c.last_vote_epoch = v;
                } else {
                    crate::log::warning(&format!(
                        "Skipping unknown cluster config variable '{}'",
                        kv[0]
                    ));
                }
            }
            continue;
        }
        if argv.len() < 8 || !node::valid_id(&argv[0]) {
            return Err(corrupted());
        }
        let idx = c.lookup_or_add(&argv[0]);
        parse_address(&mut c.nodes[idx], &argv[1]).ok_or_else(corrupted)?;
        let flags = Node::parse_flags(&argv[2]).ok_or_else(corrupted)?;
        c.nodes[idx].flags |= flags;
        if flags & MYSELF != 0 {
            if myself.is_some() {
                return Err(corrupted());
            }
            myself = Some(idx);
        }
        if !argv[3].starts_with('-') {
            if !node::valid_id(&argv[3]) {
                return Err(corrupted());
            }
            let m = c.lookup_or_add(&argv[3]);
            c.set_replica_of(idx, Some(m));
        }
        // A node that had been pinged counts as pinged now (Redis's load).
        let now = crate::clock::real_now_us() / 1000;
        if atoi(&argv[4]) != 0 {
            c.nodes[idx].ping_sent = now;
        }
        if atoi(&argv[5]) != 0 {
            c.nodes[idx].pong_received = now;
        }
        let epoch = argv[6].parse::<u64>().unwrap_or(0);
        c.nodes[idx].config_epoch =
            if c.nodes[idx].flags & SLAVE != 0 && c.nodes[idx].replica_of.is_some() {
                0
            } else {
                epoch
            };
        for word in &argv[8..] {
            parse_slots(&mut c, idx, word).ok_or_else(corrupted)?;
        }
    }
    let me = myself.ok_or_else(corrupted)?;
    c.myself = me;
    c.current_epoch = c.current_epoch.max(c.max_epoch());
    // A node with neither role flag (only named as someone's master) is a master.
    for n in &mut c.nodes {
        if n.flags & (MASTER | SLAVE) == 0 {
            n.flags |= MASTER;
        }
    }
    crate::log::notice(&format!(
        "Node configuration loaded, I'm {}",
        c.nodes[me].id
    ));
    Ok(Some(c))
}

/// `ip:port[@cport][,hostname]`.
fn parse_address(n: &mut Node, s: &str) -> Option<()> {
    let (addr, host) = match s.split_once(',') {
        Some((a, h)) => (a, h),
        None => (s, ""),
    };
    n.hostname = host.to_string();
    let (ip, ports) = addr.rsplit_once(':')?;
    n.ip = ip.to_string();
    let (port, cport) = match ports.split_once('@') {
        Some((p, c)) => (atoi(p), Some(atoi(c))),
        None => (atoi(ports), None),
    };
    n.port = port as u16;
    n.cport = cport.unwrap_or(port + super::PORT_INCR as i64) as u16;
    Some(())
}

/// C's `atoi`: leading digits, 0 when none.
fn atoi(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let n = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |a, d| {
            a.saturating_mul(10).saturating_add((d - b'0') as i64)
        });
    if neg {
        -n
    } else {
        n
    }
}

/// A slot word: `N`, `A-B`, or `[N->-id]` / `[N-<-id]` (migrating / importing).
fn parse_slots(c: &mut Cluster, idx: usize, word: &str) -> Option<()> {
    let in_range = |n: i64| (0..SLOTS as i64).contains(&n);
    if let Some(inner) = word.strip_prefix('[') {
        let (slot, rest) = inner.split_once('-')?;
        let slot = atoi(slot);
        if !in_range(slot) {
            return None;
        }
        let dir = rest.as_bytes().first().copied()?;
        let id = rest.get(2..)?.strip_suffix(']')?;
        if !node::valid_id(id) {
            return None;
        }
        let other = c.lookup_or_add(id);
        if dir == b'>' {
            c.migrating[slot as usize] = Some(other);
        } else {
            c.importing[slot as usize] = Some(other);
        }
        return Some(());
    }
    let (a, b) = match word.split_once('-') {
        Some((a, b)) => (atoi(a), atoi(b)),
        None => (atoi(word), atoi(word)),
    };
    if !in_range(a) || !in_range(b) {
        return None;
    }
    for s in a..=b {
        c.add_slot(s as u16, idx);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_file_loads_back_the_same() {
        let dir = std::env::temp_dir().join(format!("oxidis-nodes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("nodes.conf");
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let mut c = Cluster::fresh(a.clone(), path.clone());
        c.me_mut().port = 7000;
        c.me_mut().cport = 17000;
        let other = c.lookup_or_add(&b);
        c.nodes[other].flags = MASTER;
        c.nodes[other].ip = "127.0.0.1".into();
        c.nodes[other].port = 7001;
        c.nodes[other].cport = 17001;
        c.nodes[other].config_epoch = 2;
        for s in 0..100 {
            c.add_slot(s, 0);
        }
        c.add_slot(200, 0);
        c.add_slot(101, other);
        c.migrating[5] = Some(other);
        c.importing[101] = Some(other);
        c.current_epoch = 3;
        save(&c).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            format!(
                "{a} :7000@17000 myself,master - 0 0 0 connected 0-99 200 [5->-{b}] [101-<-{b}]\n\
                 {b} 127.0.0.1:7001@17001 master - 0 0 2 disconnected 101\n\
                 vars currentEpoch 3 lastVoteEpoch 0\n"
            )
        );
        let back = load(&path).unwrap().unwrap();
        assert_eq!(describe(&back), describe(&c));
        assert_eq!(back.current_epoch, 3);
        // Redis's older format without the bus port: port + 10000.
        std::fs::write(
            &path,
            format!("{a} 1.2.3.4:6379 myself,master - 0 0 0 connected\n"),
        )
        .unwrap();
        assert_eq!(load(&path).unwrap().unwrap().me().cport, 16379);
        std::fs::write(&path, "garbage\n").unwrap();
        assert!(load(&path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
