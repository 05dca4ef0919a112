//! A cluster node as this node knows it, and its line in CLUSTER NODES / nodes.conf.

/// Node flags with Redis's values (CLUSTER_NODE_*): the cluster bus carries
/// them as they are, in headers and gossip entries.
pub const MASTER: u16 = 1;
pub const SLAVE: u16 = 2;
pub const PFAIL: u16 = 4;
pub const FAIL: u16 = 8;
pub const MYSELF: u16 = 16;
pub const HANDSHAKE: u16 = 32;
pub const NOADDR: u16 = 64;
/// Send a MEET (not a PING) on the next link to this node; never shown.
pub const MEET: u16 = 128;
/// A master that had replicas (replica migration); never shown.
pub const MIGRATE_TO: u16 = 256;
pub const NOFAILOVER: u16 = 512;

/// Flag names as Redis's `redisNodeFlagsTable` lists them (the order they are written in).
const FLAG_NAMES: &[(u16, &str)] = &[
    (MYSELF, "myself"),
    (MASTER, "master"),
    (SLAVE, "slave"),
    (PFAIL, "fail?"),
    (FAIL, "fail"),
    (HANDSHAKE, "handshake"),
    (NOADDR, "noaddr"),
    (NOFAILOVER, "nofailover"),
];

/// Length of a node id: 40 hex characters.
pub const ID_LEN: usize = 40;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub id: String,
    /// Empty until learned (a fresh node does not know its own address).
    pub ip: String,
    pub port: u16,
    pub cport: u16,
    pub hostname: String,
    pub flags: u16,
    /// The master's id, for a replica.
    pub replica_of: Option<String>,
    pub config_epoch: u64,
    /// Slots this node serves (as this node's view says).
    pub numslots: usize,
    /// The plaintext client port when `port` is TLS (carried, never used).
    pub pport: u16,
    /// Bus bookkeeping, in milliseconds of the real clock (0 = never):
    /// when this view learnt the node, the PING still unanswered, the last
    /// PONG, any data, and when it was marked FAIL.
    pub ctime: i64,
    pub ping_sent: i64,
    pub pong_received: i64,
    pub data_received: i64,
    pub fail_time: i64,
    /// The replication offset it last announced.
    pub repl_offset: u64,
    /// The link this node opened to it, and the one it accepted from it
    /// (ids in `bus::Bus::links`).
    pub link: Option<u64>,
    pub inbound_link: Option<u64>,
    /// Masters that reported it PFAIL or FAIL: (reporter id, time in ms).
    pub fail_reports: Vec<(String, i64)>,
    /// The number of the last PING whose gossip featured it.
    pub last_in_ping_gossip: u64,
    /// Since when (ms) this master has had no working replica while it
    /// is a replica migration target (0: it is not so).
    pub orphaned_time: i64,
}

impl Node {
    pub fn new(id: String, flags: u16) -> Node {
        Node {
            id,
            ip: String::new(),
            port: 0,
            cport: 0,
            hostname: String::new(),
            flags,
            replica_of: None,
            config_epoch: 0,
            numslots: 0,
            pport: 0,
            ctime: crate::clock::real_now_us() / 1000,
            ping_sent: 0,
            pong_received: 0,
            data_received: 0,
            fail_time: 0,
            repl_offset: 0,
            link: None,
            inbound_link: None,
            fail_reports: Vec::new(),
            last_in_ping_gossip: 0,
            orphaned_time: 0,
        }
    }

    pub fn is_myself(&self) -> bool {
        self.flags & MYSELF != 0
    }

    pub fn is_replica(&self) -> bool {
        self.flags & SLAVE != 0
    }

    pub fn failed(&self) -> bool {
        self.flags & FAIL != 0
    }

    /// The comma-separated flags (`noflags` when none).
    pub fn flag_names(&self) -> String {
        let names: Vec<&str> = FLAG_NAMES
            .iter()
            .filter(|(f, _)| self.flags & f != 0)
            .map(|(_, n)| *n)
            .collect();
        if names.is_empty() {
            "noflags".into()
        } else {
            names.join(",")
        }
    }

    /// Parses a comma-separated flag list (nodes.conf); None for an unknown flag.
    pub fn parse_flags(s: &str) -> Option<u16> {
        let mut flags = 0;
        for word in s.split(',') {
            if word.eq_ignore_ascii_case("noflags") {
                continue;
            }
            let (f, _) = FLAG_NAMES
                .iter()
                .find(|(_, n)| n.eq_ignore_ascii_case(word))?;
            flags |= f;
        }
        Some(flags)
    }

    /// `ip:port@cport[,hostname]`.
    pub fn address(&self) -> String {
        let mut s = format!("{}:{}@{}", self.ip, self.port, self.cport);
        if !self.hostname.is_empty() {
            s.push(',');
            s.push_str(&self.hostname);
        }
        s
    }
}

/// True when `id` has the length of a node id (what nodes.conf and the
/// commands check).
pub fn valid_id(id: &str) -> bool {
    id.len() == ID_LEN
}

/// True when `id` is a node id as the bus accepts it: 40 characters of
/// `[a-z0-9]` (Redis's `verifyClusterNodeId`).
pub fn valid_wire_id(id: &[u8]) -> bool {
    id.len() == ID_LEN
        && id
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// A new random node id: 40 lowercase hex characters.
pub fn random_id(rng: &mut crate::server::Rng) -> String {
    (0..ID_LEN)
        .map(|_| char::from(b"0123456789abcdef"[(rng.next_u64() % 16) as usize]))
        .collect()
}

/// The slot ranges served by node `idx` in `owners` (start, end inclusive).
pub fn ranges(owners: &[Option<usize>], idx: usize) -> Vec<(u16, u16)> {
    let mut out = Vec::new();
    let mut start = None;
    // One step past the last slot closes a run that reaches it.
    let marks = owners.iter().map(|o| *o == Some(idx)).chain([false]);
    for (slot, mine) in marks.enumerate() {
        match (mine, start) {
            (true, None) => start = Some(slot),
            (false, Some(s)) => {
                out.push((s as u16, (slot - 1) as u16));
                start = None;
            }
            _ => {}
        }
    }
    out
}
