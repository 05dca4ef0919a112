//! Cluster mode (issue 16): hash slots against a CRC16 reference, nodes.conf
//! written and read back (by real Redis too), the view's shapes beside a
//! real cluster-enabled redis-server, the `redis` crate's cluster client on
//! a one-node cluster, and two nodes sending clients to each other (MOVED,
//! ASK) from a hand-made nodes.conf (no cluster bus yet).

mod common;
use common::cluster::try_cmd;

use std::path::Path;
use std::time::{Duration, Instant};

use common::cluster::conf_line;
use common::real_redis::{temp_dir, RedisServer};
use redis::Commands;

/// Starts an Oxidis cluster node with its data directory `dir`.
fn node_in(dir: &Path, flags: &[&str]) -> oxidis::Handle {
    let mut all = vec!["--cluster-enabled", "yes", "--dir", dir.to_str().unwrap()];
    all.extend_from_slice(flags);
    common::start_with(&all)
}

fn cmd<T: redis::FromRedisValue>(c: &mut redis::Connection, words: &[&str]) -> T {
    let mut cmd = redis::cmd(words[0]);
    for w in &words[1..] {
        cmd.arg(*w);
    }
    cmd.query(c).unwrap()
}

/// Polls CLUSTER INFO until the state is ok (Redis waits 2 s after start
/// before a master turns ok).
fn wait_ok(c: &mut redis::Connection) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info: String = cmd(c, &["CLUSTER", "INFO"]);
        if info.starts_with("cluster_state:ok") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "cluster state never turned ok: {info}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The reference: CRC16-XMODEM of the key or of its first non-empty
/// `{tag}`, modulo 16384, written apart from the server's code.
fn reference_slot(key: &[u8]) -> u16 {
    let mut hashed = key;
    if let Some(s) = key.iter().position(|&b| b == b'{') {
        if let Some(e) = key[s + 1..].iter().position(|&b| b == b'}') {
            if e > 0 {
                hashed = &key[s + 1..s + 1 + e];
            }
        }
    }
    crc16::State::<crc16::XMODEM>::calculate(hashed) % 16384
}

#[test]
fn keyslot_matches_crc16_reference_for_random_keys() {
    let dir = temp_dir("clu-keyslot");
    let h = node_in(&dir, &[]);
    let mut c = common::conn(&h);
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for i in 0..10_000 {
        let len = (next() % 24) as usize;
        let mut k: Vec<u8> = (0..len).map(|_| (next() % 256) as u8).collect();
        // Half the keys carry braces: a tag, an empty tag, or a lone brace.
        if i % 2 == 0 {
            let at = if k.is_empty() {
                0
            } else {
                (next() as usize) % k.len()
            };
            let tag: Vec<u8> = match next() % 4 {
                0 => b"{}".to_vec(),
                1 => b"{".to_vec(),
                _ => {
                    let mut t = vec![b'{'];
                    t.extend((0..1 + next() % 6).map(|_| b'a' + (next() % 26) as u8));
                    t.push(b'}');
                    t
                }
            };
            k.splice(at..at, tag);
        }
        keys.push(k);
    }
    let mut pipe = redis::pipe();
    for k in &keys {
        pipe.cmd("CLUSTER").arg("KEYSLOT").arg(k.as_slice());
    }
    let slots: Vec<u16> = pipe.query(&mut c).unwrap();
    for (k, s) in keys.iter().zip(slots) {
        assert_eq!(s, reference_slot(k), "key {k:?}");
    }
}

/// Splits a CLUSTER NODES line into fields with the node id and the ports
/// (random per server) blanked.
fn shape(line: &str) -> Vec<String> {
    line.split(' ')
        .enumerate()
        .map(|(i, f)| match i {
            0 => "<id>".into(),
            1 => f.chars().filter(|c| !c.is_ascii_digit()).collect(),
            _ => f.to_string(),
        })
        .collect()
}

#[test]
fn fresh_node_looks_like_a_real_cluster_node() {
    let rdir = temp_dir("clu-real");
    let real = RedisServer::start_in(&rdir, &["--cluster-enabled", "yes"]);
    let dir = temp_dir("clu-fresh");
    let h = node_in(&dir, &[]);
    let mut ours = common::conn(&h);
    let mut theirs = real.conn();
    for c in [&mut ours, &mut theirs] {
        let _: () = cmd(c, &["CLUSTER", "ADDSLOTSRANGE", "0", "100", "200", "300"]);
        let _: () = cmd(c, &["CLUSTER", "ADDSLOTS", "5000"]);
    }
    let nodes = |c: &mut redis::Connection| -> Vec<String> {
        let s: String = cmd(c, &["CLUSTER", "NODES"]);
        shape(s.trim_end())
    };
    assert_eq!(nodes(&mut ours), nodes(&mut theirs));
    let id: String = cmd(&mut ours, &["CLUSTER", "MYID"]);
    assert_eq!(id.len(), 40);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    // CLUSTER SLOTS and SHARDS: the same replies but for the id and port.
    for sub in ["SLOTS", "SHARDS"] {
        let mine = format!("{:?}", try_cmd(&mut ours, &["CLUSTER", sub]).unwrap());
        let real_id: String = cmd(&mut theirs, &["CLUSTER", "MYID"]);
        let theirs_v = format!("{:?}", try_cmd(&mut theirs, &["CLUSTER", sub]).unwrap());
        let norm = |s: String, id: &str, port: u16| {
            s.replace(id, "<id>").replace(&port.to_string(), "<port>")
        };
        let real_port: u16 = real.addr().rsplit(':').next().unwrap().parse().unwrap();
        assert_eq!(
            norm(mine, &id, h.addr().port()),
            norm(theirs_v, &real_id, real_port),
            "CLUSTER {sub}"
        );
    }
    // The nodes.conf files have the same shape.
    let read = |d: &Path| std::fs::read_to_string(d.join("nodes.conf")).unwrap();
    let _: () = cmd(&mut theirs, &["CLUSTER", "SAVECONFIG"]);
    let (a, b) = (read(&dir), read(&rdir));
    let lines = |s: &str| s.lines().map(shape).collect::<Vec<_>>();
    assert_eq!(lines(&a), lines(&b));
}

#[test]
fn nodes_conf_survives_a_restart_and_real_redis_reads_it() {
    let dir = temp_dir("clu-reload");
    let (id, before) = {
        let h = node_in(&dir, &[]);
        let mut c = common::conn(&h);
        let _: () = cmd(
            &mut c,
            &["CLUSTER", "ADDSLOTSRANGE", "0", "999", "2000", "2000"],
        );
        let _: String = cmd(&mut c, &["CLUSTER", "BUMPEPOCH"]);
        let id: String = cmd(&mut c, &["CLUSTER", "MYID"]);
        let nodes: String = cmd(&mut c, &["CLUSTER", "NODES"]);
        (id, nodes)
    };
    let h = node_in(&dir, &[]);
    let mut c = common::conn(&h);
    let again: String = cmd(&mut c, &["CLUSTER", "MYID"]);
    assert_eq!(again, id);
    // The same line, but for the port (the test's servers take any free one).
    let nodes: String = cmd(&mut c, &["CLUSTER", "NODES"]);
    assert_eq!(shape(nodes.trim_end()), shape(before.trim_end()));
    let info: String = cmd(&mut c, &["CLUSTER", "INFO"]);
    assert!(info.contains("cluster_current_epoch:1\r\n"), "{info}");
    drop(h);
    // A real redis-server started on that nodes.conf is the same node.
    let real = RedisServer::start_in(&dir, &["--cluster-enabled", "yes"]);
    let mut r = real.conn();
    let real_id: String = cmd(&mut r, &["CLUSTER", "MYID"]);
    assert_eq!(real_id, id);
    let real_nodes: String = cmd(&mut r, &["CLUSTER", "NODES"]);
    assert_eq!(shape(real_nodes.trim_end()), shape(before.trim_end()));
    let real_info: String = cmd(&mut r, &["CLUSTER", "INFO"]);
    assert!(real_info.contains("cluster_current_epoch:1\r\n"));
}

#[test]
fn cluster_client_works_against_a_one_node_cluster() {
    let dir = temp_dir("clu-client");
    let h = node_in(&dir, &["--cluster-announce-ip", "127.0.0.1"]);
    let mut c = common::conn(&h);
    let _: () = cmd(&mut c, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    wait_ok(&mut c);
    let client =
        redis::cluster::ClusterClient::new(vec![format!("redis://{}/", h.addr())]).unwrap();
    let mut cc = client.get_connection().unwrap();
    for i in 0..200 {
        let _: () = cc.set(format!("key:{i}"), i).unwrap();
    }
    for i in 0..200 {
        let v: i64 = cc.get(format!("key:{i}")).unwrap();
        assert_eq!(v, i);
    }
    // A pipeline over keys of many slots.
    let mut p = redis::cluster::cluster_pipe();
    for i in 0..50 {
        p.cmd("INCR").arg(format!("n:{i}"));
    }
    let got: Vec<i64> = p.query(&mut cc).unwrap();
    assert_eq!(got, vec![1; 50]);
    // MULTI within one slot, on the node's own connection.
    let (a,): (i64,) = redis::pipe()
        .atomic()
        .set("{u}a", 1)
        .ignore()
        .set("{u}b", 2)
        .ignore()
        .get("{u}a")
        .query(&mut c)
        .unwrap();
    assert_eq!(a, 1);
    // Keys of two slots in one transaction: CROSSSLOT at EXEC.
    let _: () = cmd(&mut c, &["MULTI"]);
    let _: String = cmd(&mut c, &["SET", "a", "1"]);
    let _: String = cmd(&mut c, &["SET", "b", "2"]);
    assert_eq!(
        try_cmd(&mut c, &["EXEC"]).unwrap_err(),
        "CROSSSLOT Keys in request don't hash to the same slot"
    );
    // A script with declared keys.
    let v: String = redis::cmd("EVAL")
        .arg("redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])")
        .arg(1)
        .arg("{u}s")
        .arg("hello")
        .query(&mut cc)
        .unwrap();
    assert_eq!(v, "hello");
    let n: i64 = cmd(&mut c, &["CLUSTER", "COUNTKEYSINSLOT", "9842"]);
    let expected: i64 = (0..200)
        .filter(|i| reference_slot(format!("key:{i}").as_bytes()) == 9842)
        .count() as i64;
    assert_eq!(n, expected);
}

#[test]
fn two_nodes_send_clients_to_each_other() {
    let (a_id, b_id) = ("a".repeat(40), "b".repeat(40));
    let (a_port, b_port) = (28601u16, 28602u16);
    let (a_dir, b_dir) = (temp_dir("clu-a"), temp_dir("clu-b"));
    let vars = "vars currentEpoch 2 lastVoteEpoch 0\n";
    std::fs::write(
        a_dir.join("nodes.conf"),
        conf_line(&a_id, a_port, true, 2, "0-8191")
            + &conf_line(&b_id, b_port, false, 1, "8192-16383")
            + vars,
    )
    .unwrap();
    std::fs::write(
        b_dir.join("nodes.conf"),
        conf_line(&b_id, b_port, true, 1, "8192-16383")
            + &conf_line(&a_id, a_port, false, 2, "0-8191")
            + vars,
    )
    .unwrap();
    let port = |p: u16| p.to_string();
    let (pa, pb) = (port(a_port), port(b_port));
    let a = node_in(&a_dir, &["--port", &pa, "--bind", "127.0.0.1"]);
    let b = node_in(&b_dir, &["--port", &pb, "--bind", "127.0.0.1"]);
    let (mut ca, mut cb) = (common::conn(&a), common::conn(&b));
    wait_ok(&mut ca);
    wait_ok(&mut cb);
    // foo is in slot 12182 (B's), bar in 5061 (A's).
    assert_eq!(
        try_cmd(&mut ca, &["SET", "foo", "1"]).unwrap_err(),
        format!("MOVED 12182 127.0.0.1:{b_port}")
    );
    assert_eq!(
        try_cmd(&mut cb, &["GET", "bar"]).unwrap_err(),
        format!("MOVED 5061 127.0.0.1:{a_port}")
    );
    // A cluster client seeded with A alone reaches both.
    let client =
        redis::cluster::ClusterClient::new(vec![format!("redis://127.0.0.1:{a_port}/")]).unwrap();
    let mut cc = client.get_connection().unwrap();
    for i in 0..100 {
        let _: () = cc.set(format!("k{i}"), i).unwrap();
    }
    let on_a: i64 = cmd(&mut ca, &["DBSIZE"]);
    let on_b: i64 = cmd(&mut cb, &["DBSIZE"]);
    assert_eq!(on_a + on_b, 100);
    assert!(on_a > 0 && on_b > 0);
    // Moving slot 0 by hand: A migrates it, B imports it.
    let key0 = (0..100_000)
        .map(|i| format!("m{i}"))
        .find(|k| reference_slot(k.as_bytes()) == 0)
        .unwrap();
    let _: () = cmd(&mut ca, &["SET", &key0, "v"]);
    let _: () = cmd(&mut ca, &["CLUSTER", "SETSLOT", "0", "MIGRATING", &b_id]);
    let _: () = cmd(&mut cb, &["CLUSTER", "SETSLOT", "0", "IMPORTING", &a_id]);
    // Present on A: served there; absent: ASK to B.
    let v: String = cmd(&mut ca, &["GET", &key0]);
    assert_eq!(v, "v");
    let other0 = (0..1_000_000)
        .map(|i| format!("n{i}"))
        .find(|k| reference_slot(k.as_bytes()) == 0)
        .unwrap();
    assert_eq!(
        try_cmd(&mut ca, &["GET", &other0]).unwrap_err(),
        format!("ASK 0 127.0.0.1:{b_port}")
    );
    // Both keys in one request, one of them missing: TRYAGAIN.
    assert_eq!(
        try_cmd(&mut ca, &["MGET", &key0, &other0]).unwrap_err(),
        "TRYAGAIN Multiple keys request during rehashing of slot"
    );
    // B serves the slot only after ASKING, for that one command.
    assert_eq!(
        try_cmd(&mut cb, &["SET", &other0, "w"]).unwrap_err(),
        format!("MOVED 0 127.0.0.1:{a_port}")
    );
    let _: () = cmd(&mut cb, &["ASKING"]);
    let _: () = cmd(&mut cb, &["SET", &other0, "w"]);
    assert!(try_cmd(&mut cb, &["GET", &other0]).is_err());
    // MIGRATE moves the key (RESTORE-ASKING on B), then both nodes give
    // the slot to B.
    let bp = b_port.to_string();
    let _: () = cmd(&mut ca, &["MIGRATE", "127.0.0.1", &bp, &key0, "0", "5000"]);
    assert_eq!(
        try_cmd(&mut ca, &["GET", &key0]).unwrap_err(),
        format!("ASK 0 127.0.0.1:{b_port}")
    );
    let left: i64 = cmd(&mut ca, &["CLUSTER", "COUNTKEYSINSLOT", "0"]);
    assert_eq!(left, 0);
    let _: () = cmd(&mut ca, &["CLUSTER", "SETSLOT", "0", "NODE", &b_id]);
    let _: () = cmd(&mut cb, &["CLUSTER", "SETSLOT", "0", "NODE", &b_id]);
    let v: String = cmd(&mut cb, &["GET", &key0]);
    assert_eq!(v, "v");
    assert_eq!(
        try_cmd(&mut ca, &["GET", &key0]).unwrap_err(),
        format!("MOVED 0 127.0.0.1:{b_port}")
    );
    // B took the slot it imported: a new config epoch, above A's.
    let info: String = cmd(&mut cb, &["CLUSTER", "INFO"]);
    assert!(info.contains("cluster_my_epoch:3\r\n"), "{info}");
    let nodes: String = cmd(&mut cb, &["CLUSTER", "NODES"]);
    assert!(
        nodes.contains("myself,master - 0 0 3 connected 0 8192-16383"),
        "{nodes}"
    );
}

#[test]
fn standalone_answers_cluster_disabled() {
    let h = common::start();
    let mut c = common::conn(&h);
    assert_eq!(
        try_cmd(&mut c, &["CLUSTER", "INFO"]).unwrap_err(),
        "ERR This instance has cluster support disabled"
    );
    let _: () = cmd(&mut c, &["SELECT", "1"]);
}

/// Runs `redis-cli --cluster <sub> 127.0.0.1:port`; its exit status and output.
fn cluster_cli(sub: &str, addr: std::net::SocketAddr) -> (bool, String) {
    let out = std::process::Command::new("redis-cli")
        .args(["--cluster", sub, &addr.to_string()])
        .output()
        .expect("redis-cli runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success(), text)
}

#[test]
fn redis_cli_cluster_check_accepts_a_one_node_cluster() {
    let dir = temp_dir("clu-cli");
    let h = node_in(&dir, &[]);
    let mut c = common::conn(&h);
    // No slots yet: the check reports the uncovered slots and fails.
    let (ok, text) = cluster_cli("check", h.addr());
    assert!(!ok, "{text}");
    assert!(
        text.contains("Not all 16384 slots are covered by nodes."),
        "{text}"
    );
    let _: () = cmd(&mut c, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    wait_ok(&mut c);
    let _: () = cmd(&mut c, &["SET", "foo", "bar"]);
    let (ok, text) = cluster_cli("check", h.addr());
    assert!(ok, "{text}");
    assert!(
        text.contains("[OK] All nodes agree about slots configuration."),
        "{text}"
    );
    assert!(text.contains("[OK] All 16384 slots covered."), "{text}");
    let (ok, text) = cluster_cli("info", h.addr());
    assert!(ok, "{text}");
    assert!(text.contains("1 keys | 16384 slots | 0 slaves."), "{text}");
    // An open slot is reported, as redis-cli does for Redis.
    let id: String = cmd(&mut c, &["CLUSTER", "MYID"]);
    let _: () = cmd(&mut c, &["CLUSTER", "SETSLOT", "7", "MIGRATING", &id]);
    let (_, text) = cluster_cli("check", h.addr());
    assert!(text.contains("has slots in migrating state 7"), "{text}");
}

/// What a client blocked in BLPOP on `foo` gets when the slot of `foo`
/// (12182) is taken from the node: the server at `addr` decides.
fn blocked_client_answer(addr: &str) -> String {
    let url = format!("redis://{addr}/");
    let mut admin = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = cmd(&mut admin, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    wait_ok(&mut admin);
    let mut blocked = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let waiter = std::thread::spawn(move || try_cmd(&mut blocked, &["BLPOP", "foo", "0"]));
    // Wait until the client is blocked, then take the slot away.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info: String = cmd(&mut admin, &["INFO", "clients"]);
        if info.contains("blocked_clients:1\r\n") {
            break;
        }
        assert!(Instant::now() < deadline, "the client never blocked");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _: () = cmd(&mut admin, &["CLUSTER", "DELSLOTS", "12182"]);
    waiter.join().unwrap().unwrap_err()
}

/// Runs `scenario` against a real cluster-enabled redis-server, then a
/// fresh Oxidis cluster node: both answers.
fn on_both<T>(tag: &str, scenario: impl Fn(&str) -> T) -> (T, T) {
    let real = RedisServer::start_in(
        &temp_dir(&format!("{tag}-real")),
        &["--cluster-enabled", "yes"],
    );
    let theirs = scenario(&real.addr());
    let h = node_in(&temp_dir(tag), &[]);
    (scenario(&h.addr().to_string()), theirs)
}

#[test]
fn blocked_client_is_answered_when_its_slot_goes() {
    let (ours, theirs) = on_both("clu-block", blocked_client_answer);
    assert_eq!(ours, theirs);
    assert_eq!(ours, "CLUSTERDOWN The cluster is down");
}

/// What a client subscribed to shard channels `{t}a` and `{t}b` (slot
/// 15891) and `foo` (12182) receives when slot 15891 is deleted, then what
/// SPUBLISH to `foo` counts: the server at `addr` decides.
fn shard_subscriber_after_delslots(addr: &str) -> (Vec<Vec<u8>>, i64) {
    let url = format!("redis://{addr}/");
    let mut admin = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = cmd(&mut admin, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    wait_ok(&mut admin);
    let mut sub = common::Raw::connect_to(addr);
    sub.cmd(&[b"SSUBSCRIBE", b"{t}a", b"{t}b"]);
    sub.read_raw();
    sub.read_raw();
    sub.cmd(&[b"SSUBSCRIBE", b"foo"]);
    sub.read_raw();
    let _: () = cmd(&mut admin, &["CLUSTER", "DELSLOTS", "15891"]);
    let got = vec![sub.read_raw(), sub.read_raw()];
    // With the cluster down, shard pub/sub goes on (its own setting).
    let n: i64 = cmd(&mut admin, &["SPUBLISH", "foo", "m"]);
    (got, n)
}

#[test]
fn shard_channels_of_a_deleted_slot_are_unsubscribed() {
    let (ours, theirs) = on_both("clu-shard", shard_subscriber_after_delslots);
    assert_eq!(ours, theirs);
    assert_eq!(ours.1, 1);
}

#[test]
fn keys_loaded_at_start_claim_their_unassigned_slots() {
    let dir = temp_dir("clu-claim");
    {
        // A standalone server leaves a dump with keys in slots 12182 and 5061.
        let h = common::start_with(&["--dir", dir.to_str().unwrap()]);
        let mut c = common::conn(&h);
        let _: () = cmd(&mut c, &["SET", "foo", "1"]);
        let _: () = cmd(&mut c, &["SET", "bar", "2"]);
        let _: () = cmd(&mut c, &["SAVE"]);
    }
    let h = node_in(&dir, &[]);
    let mut c = common::conn(&h);
    let nodes: String = cmd(&mut c, &["CLUSTER", "NODES"]);
    assert!(
        nodes.trim_end().ends_with("connected 5061 12182"),
        "{nodes}"
    );
    let n: i64 = cmd(&mut c, &["CLUSTER", "COUNTKEYSINSLOT", "12182"]);
    assert_eq!(n, 1);
    drop(h);
    // Keys outside database 0: the node does not start.
    let other = temp_dir("clu-db1");
    {
        let h = common::start_with(&["--dir", other.to_str().unwrap()]);
        let mut c = common::conn(&h);
        let _: () = cmd(&mut c, &["SELECT", "1"]);
        let _: () = cmd(&mut c, &["SET", "foo", "1"]);
        let _: () = cmd(&mut c, &["SAVE"]);
    }
    let mut args: Vec<String> = ["--port", "0", "--cluster-enabled", "yes", "--dir"]
        .map(String::from)
        .to_vec();
    args.push(other.to_string_lossy().into_owned());
    let config = oxidis::config::from_args(&args).unwrap();
    let err = oxidis::start(config).err().expect("refused");
    assert!(err.to_string().contains("DB different than DB 0"), "{err}");
}

/// During a migration of FOO's slot from node `a` to node `b`, GET of
/// FOO once its TTL has passed but before active expiry removed it, then
/// of a live key of the slot; then the same with `a` migrating the slot to
/// itself (unit/cluster/misc "Key lazy expires during key migration").
/// The nodes at `a` and `b` decide; their ports read as A and B.
fn get_during_migration(a: &str, b: &str) -> Vec<Result<redis::Value, String>> {
    let conn = |addr: &str| {
        redis::Client::open(format!("redis://{addr}/"))
            .unwrap()
            .get_connection()
            .unwrap()
    };
    let (mut c, mut cb) = (conn(a), conn(b));
    let _: () = cmd(&mut c, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    let (host, port_b) = b.rsplit_once(':').unwrap();
    // B's bus port, from its own line ("... :port@busport ...").
    let nodes_b: String = cmd(&mut cb, &["CLUSTER", "NODES"]);
    let bus_b = nodes_b.split_whitespace().nth(1).unwrap();
    let bus_b = bus_b.split(['@', ',']).nth(1).unwrap();
    let _: () = cmd(&mut c, &["CLUSTER", "MEET", host, port_b, bus_b]);
    let id_b: String = cmd(&mut cb, &["CLUSTER", "MYID"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let nodes: String = cmd(&mut c, &["CLUSTER", "NODES"]);
        if nodes
            .lines()
            .any(|l| l.starts_with(&id_b) && l.contains(" connected"))
        {
            break;
        }
        assert!(Instant::now() < deadline, "the nodes never met: {nodes}");
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_ok(&mut c);
    let _: () = cmd(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let id_a: String = cmd(&mut c, &["CLUSTER", "MYID"]);
    let slot: i64 = cmd(&mut c, &["CLUSTER", "KEYSLOT", "FOO"]);
    let slot = slot.to_string();
    let port_a = a.rsplit(':').next().unwrap();
    let mut got = Vec::new();
    for to in [&id_b, &id_a] {
        let _: () = cmd(&mut c, &["SET", "FOO", "BAR", "PX", "10"]);
        let _: () = cmd(&mut c, &["SET", "{FOO}live", "v"]);
        let _: () = cmd(&mut c, &["CLUSTER", "SETSLOT", &slot, "MIGRATING", to]);
        // Wait (not a bound on anything) until the TTL has passed.
        std::thread::sleep(Duration::from_millis(20));
        for k in ["FOO", "{FOO}live"] {
            got.push(try_cmd(&mut c, &["GET", k]).map_err(|e| {
                e.replace(&format!(":{port_b}"), ":B")
                    .replace(&format!(":{port_a}"), ":A")
            }));
        }
        let _: () = cmd(&mut c, &["CLUSTER", "SETSLOT", &slot, "STABLE"]);
    }
    got
}

#[test]
fn an_expired_key_counts_as_missing_during_a_migration() {
    let flags = ["--cluster-enabled", "yes", "--enable-debug-command", "yes"];
    let ra = RedisServer::start_in(&temp_dir("clu-lazy-ra"), &flags);
    let rb = RedisServer::start_in(&temp_dir("clu-lazy-rb"), &flags);
    let theirs = get_during_migration(&ra.addr(), &rb.addr());
    let a = node_in(&temp_dir("clu-lazy-a"), &flags[2..]);
    let b = node_in(&temp_dir("clu-lazy-b"), &flags[2..]);
    let ours = get_during_migration(&a.addr().to_string(), &b.addr().to_string());
    assert_eq!(ours, theirs);
    assert!(
        matches!(&ours[0], Err(e) if e.starts_with("ASK ")),
        "{ours:?}"
    );
}

/// The address node `b` records for node `a` (its CLUSTER NODES line)
/// after `a`, started with `bind-source-addr 127.0.0.2`, meets it.
fn address_seen_for(a_port: u16, b_port: u16) -> String {
    let conn = |port: u16| {
        redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection()
            .unwrap()
    };
    let (mut a, mut b) = (conn(a_port), conn(b_port));
    let _: () = cmd(
        &mut a,
        &["CLUSTER", "MEET", "127.0.0.1", &b_port.to_string()],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let nodes: String = cmd(&mut b, &["CLUSTER", "NODES"]);
        let seen = nodes
            .lines()
            // In handshake (under a name of its own) or known: the other line.
            .find(|l| !l.contains("myself"))
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|a| a.split(':').next())
            .filter(|ip| !ip.is_empty())
            .map(String::from);
        if let Some(ip) = seen {
            return ip;
        }
        assert!(Instant::now() < deadline, "b never learnt a: {nodes}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_bus_connects_from_bind_source_addr_as_redis() {
    // Protected mode admits 127.0.0.1 only.
    let b_flags = ["--cluster-enabled", "yes", "--protected-mode", "no"];
    let a_flags = [
        "--cluster-enabled",
        "yes",
        "--protected-mode",
        "no",
        "--bind-source-addr",
        "127.0.0.2",
    ];
    let rb = RedisServer::start_in(&temp_dir("clu-src-rb"), &b_flags);
    let ra = RedisServer::start_in(&temp_dir("clu-src-ra"), &a_flags);
    let theirs = address_seen_for(ra.port, rb.port);
    let rb2 = RedisServer::start_in(&temp_dir("clu-src-rb2"), &b_flags);
    let a = common::process::Oxidis::start_in(&temp_dir("clu-src-a"), &a_flags);
    let ours = address_seen_for(a.port, rb2.port);
    assert_eq!(ours, theirs);
    assert_eq!(ours, "127.0.0.2");
}
