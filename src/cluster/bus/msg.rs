//! The cluster bus wire format (Redis 7.0's `clusterMsg`): building messages and parsing them without trusting a byte.
//!
//! Every integer is big-endian. A message is a fixed 2256-byte header
//! followed by a body whose shape the type decides: gossip entries and ping
//! extensions (PING, PONG, MEET), a node name (FAIL), a channel and a
//! message (PUBLISH, PUBLISHSHARD), a slot configuration (UPDATE), nothing
//! (FAILOVER_AUTH_REQUEST/ACK, MFSTART). `parse` checks the total length
//! against the body exactly as Redis's `clusterProcessPacket` does and
//! answers `None` where Redis drops the message; it never reads outside the
//! buffer, whatever the lengths inside claim.

use crate::cluster::node::ID_LEN;
use crate::cluster::slot::SLOTS;

/// Message types (CLUSTERMSG_TYPE_*).
pub const PING: u16 = 0;
pub const PONG: u16 = 1;
pub const MEET: u16 = 2;
pub const FAIL: u16 = 3;
pub const PUBLISH: u16 = 4;
pub const FAILOVER_AUTH_REQUEST: u16 = 5;
pub const FAILOVER_AUTH_ACK: u16 = 6;
pub const UPDATE: u16 = 7;
pub const MFSTART: u16 = 8;
pub const MODULE: u16 = 9;
pub const PUBLISHSHARD: u16 = 10;
/// Number of message types (the size of the per-type counters).
pub const TYPES: usize = 11;

/// Names used in CLUSTER INFO's `cluster_stats_messages_<name>_sent`.
pub fn type_name(t: usize) -> &'static str {
    [
        "ping",
        "pong",
        "meet",
        "fail",
        "publish",
        "auth-req",
        "auth-ack",
        "update",
        "mfstart",
        "module",
        "publishshard",
    ]
    .get(t)
    .copied()
    .unwrap_or("unknown")
}

/// `mflags[0]` bits.
pub const FLAG0_PAUSED: u8 = 1;
pub const FLAG0_FORCEACK: u8 = 2;
pub const FLAG0_EXT_DATA: u8 = 4;

/// Ping extension types (7.0 knows only the hostname).
pub const EXT_HOSTNAME: u16 = 0;

/// Sizes and offsets fixed by Redis's static asserts.
pub const HEADER_LEN: usize = 2256;
pub const SLOT_BYTES: usize = SLOTS / 8;
pub const IP_LEN: usize = 46;
pub const GOSSIP_LEN: usize = 104;
const FAIL_LEN: usize = ID_LEN;
const UPDATE_LEN: usize = 8 + ID_LEN + SLOT_BYTES;
/// `clusterMsgDataPublish` is two lengths and an 8-byte placeholder.
const PUBLISH_FIXED: usize = 8;
/// `clusterMsgModule` is an id, a length, a type and a 3-byte placeholder.
const MODULE_FIXED: usize = 13;
const OFF_SENDER: usize = 40;
const OFF_SLOTS: usize = 80;
const OFF_SLAVEOF: usize = 2128;
const OFF_MYIP: usize = 2168;
const OFF_EXTENSIONS: usize = 2214;
const OFF_PPORT: usize = 2246;

/// A slot bitmap as the bus carries it: bit `j & 7` of byte `j / 8`.
pub type Slots = [u8; SLOT_BYTES];

pub fn slot_bit(bits: &Slots, slot: usize) -> bool {
    bits[slot / 8] & (1 << (slot & 7)) != 0
}

pub fn set_slot_bit(bits: &mut Slots, slot: usize) {
    bits[slot / 8] |= 1 << (slot & 7);
}

/// The fixed header of every message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: u16,
    pub port: u16,
    pub count: u16,
    pub current_epoch: u64,
    pub config_epoch: u64,
    pub offset: u64,
    pub sender: [u8; ID_LEN],
    pub myslots: Box<Slots>,
    /// All zeroes for a master.
    pub slaveof: [u8; ID_LEN],
    /// The announced ip (`cluster-announce-ip`), empty for none.
    pub myip: String,
    pub extensions: u16,
    pub pport: u16,
    pub cport: u16,
    pub flags: u16,
    pub state: u8,
    pub mflags: [u8; 3],
}

impl Header {
    /// A header with no content but the type (the builder fills the rest).
    pub fn new(kind: u16) -> Header {
        Header {
            kind,
            port: 0,
            count: 0,
            current_epoch: 0,
            config_epoch: 0,
            offset: 0,
            sender: [0; ID_LEN],
            myslots: Box::new([0; SLOT_BYTES]),
            slaveof: [0; ID_LEN],
            myip: String::new(),
            extensions: 0,
            pport: 0,
            cport: 0,
            flags: 0,
            state: 0,
            mflags: [0; 3],
        }
    }

    /// True when the sender says it is a master (no `slaveof`).
    pub fn from_master(&self) -> bool {
        self.slaveof.iter().all(|&b| b == 0)
    }
}

/// One gossip entry: what the sender knows of another node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gossip {
    pub name: [u8; ID_LEN],
    /// Seconds (Redis sends milliseconds / 1000, truncated to 32 bits).
    pub ping_sent: u32,
    pub pong_received: u32,
    pub ip: String,
    pub port: u16,
    pub cport: u16,
    pub flags: u16,
    pub pport: u16,
}

/// What follows the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// PING, PONG, MEET: gossip entries, the announced hostname (None when
    /// the sender sent no hostname extension) and unknown extension types.
    Ping {
        gossip: Vec<Gossip>,
        hostname: Option<String>,
        unknown: Vec<u16>,
    },
    Fail {
        about: [u8; ID_LEN],
    },
    Publish {
        channel: Vec<u8>,
        message: Vec<u8>,
    },
    Update {
        config_epoch: u64,
        node: [u8; ID_LEN],
        slots: Box<Slots>,
    },
    /// FAILOVER_AUTH_REQUEST/ACK, MFSTART, MODULE and types this node does not know.
    Empty,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Msg {
    pub hdr: Header,
    pub body: Body,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

fn name(b: &[u8], at: usize) -> [u8; ID_LEN] {
    let mut n = [0; ID_LEN];
    n.copy_from_slice(&b[at..at + ID_LEN]);
    n
}

/// A C string in a fixed field: the bytes before the first NUL (the whole
/// field but its last byte when there is none, as Redis terminates it).
fn c_string(field: &[u8]) -> String {
    let end = field
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(field.len().saturating_sub(1));
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// The total length a message's first 8 bytes announce, or None when they
/// are not a bus message (Redis closes the link then).
pub fn frame_len(first8: &[u8]) -> Option<usize> {
    if first8.len() < 8 || &first8[..4] != b"RCmb" {
        return None;
    }
    let len = be32(first8, 4) as usize;
    (len >= HEADER_LEN).then_some(len)
}

/// Parses one whole message (`buf` is exactly its total length). None when
/// Redis would ignore it: another protocol version, or lengths that do not
/// add up.
pub fn parse(buf: &[u8]) -> Option<Msg> {
    if buf.len() < HEADER_LEN || frame_len(buf)? != buf.len() {
        return None;
    }
    if be16(buf, 8) != 1 {
        return None;
    }
    let mut myslots = Box::new([0u8; SLOT_BYTES]);
    myslots.copy_from_slice(&buf[OFF_SLOTS..OFF_SLOTS + SLOT_BYTES]);
    let hdr = Header {
        port: be16(buf, 10),
        kind: be16(buf, 12),
        count: be16(buf, 14),
        current_epoch: be64(buf, 16),
        config_epoch: be64(buf, 24),
        offset: be64(buf, 32),
        sender: name(buf, OFF_SENDER),
        myslots,
        slaveof: name(buf, OFF_SLAVEOF),
        myip: c_string(&buf[OFF_MYIP..OFF_MYIP + IP_LEN]),
        extensions: be16(buf, OFF_EXTENSIONS),
        pport: be16(buf, OFF_PPORT),
        cport: be16(buf, OFF_PPORT + 2),
        flags: be16(buf, OFF_PPORT + 4),
        state: buf[OFF_PPORT + 6],
        mflags: [buf[2253], buf[2254], buf[2255]],
    };
    let data = &buf[HEADER_LEN..];
    let body = match hdr.kind {
        PING | PONG | MEET => parse_ping(&hdr, data)?,
        FAIL => {
            if data.len() != FAIL_LEN {
                return None;
            }
            Body::Fail {
                about: name(data, 0),
            }
        }
        PUBLISH | PUBLISHSHARD => {
            if data.len() < PUBLISH_FIXED {
                return None;
            }
            let ch = be32(data, 0) as usize;
            let msg = be32(data, 4) as usize;
            // Redis's explen: the placeholder's 8 bytes do not count.
            if (PUBLISH_FIXED as u64 + ch as u64 + msg as u64) != data.len() as u64 {
                return None;
            }
            Body::Publish {
                channel: data[8..8 + ch].to_vec(),
                message: data[8 + ch..].to_vec(),
            }
        }
        FAILOVER_AUTH_REQUEST | FAILOVER_AUTH_ACK | MFSTART => {
            if !data.is_empty() {
                return None;
            }
            Body::Empty
        }
        UPDATE => {
            if data.len() != UPDATE_LEN {
                return None;
            }
            let mut slots = Box::new([0u8; SLOT_BYTES]);
            slots.copy_from_slice(&data[8 + ID_LEN..]);
            Body::Update {
                config_epoch: be64(data, 0),
                node: name(data, 8),
                slots,
            }
        }
        MODULE => {
            if data.len() < MODULE_FIXED || (MODULE_FIXED + be32(data, 8) as usize) != data.len() {
                return None;
            }
            Body::Empty
        }
        // Redis assumes a type it does not know is well formed.
        _ => Body::Empty,
    };
    Some(Msg { hdr, body })
}

/// The body of a PING, PONG or MEET: `count` gossip entries, then (when
/// the EXT_DATA flag is set) `extensions` extensions of 8-byte-aligned
/// lengths that must fill the message exactly.
fn parse_ping(hdr: &Header, data: &[u8]) -> Option<Body> {
    let gossip_len = hdr.count as usize * GOSSIP_LEN;
    if gossip_len > data.len() {
        return None;
    }
    let mut gossip = Vec::with_capacity(hdr.count as usize);
    for g in data[..gossip_len].chunks_exact(GOSSIP_LEN) {
        gossip.push(Gossip {
            name: name(g, 0),
            ping_sent: be32(g, 40),
            pong_received: be32(g, 44),
            ip: c_string(&g[48..48 + IP_LEN]),
            port: be16(g, 94),
            cport: be16(g, 96),
            flags: be16(g, 98),
            pport: be16(g, 100),
        });
    }
    let mut rest = &data[gossip_len..];
    let mut hostname = None;
    let mut unknown = Vec::new();
    if hdr.mflags[0] & FLAG0_EXT_DATA != 0 {
        for _ in 0..hdr.extensions {
            if rest.len() < 8 {
                return None;
            }
            let len = be32(rest, 0) as usize;
            // A length that is not a multiple of 8, or longer than what is
            // left, drops the message (as Redis); so does one shorter than
            // the extension's own header, which Redis would read past.
            if !len.is_multiple_of(8) || len > rest.len() || len < 8 {
                return None;
            }
            let kind = be16(rest, 4);
            let payload = &rest[8..len];
            if kind == EXT_HOSTNAME {
                let end = payload
                    .iter()
                    .position(|&b| b == 0)
                    .unwrap_or(payload.len());
                hostname = Some(String::from_utf8_lossy(&payload[..end]).into_owned());
            } else {
                unknown.push(kind);
            }
            rest = &rest[len..];
        }
    }
    if !rest.is_empty() {
        return None;
    }
    Some(Body::Ping {
        gossip,
        hostname,
        unknown,
    })
}

/// Writes the header (totlen patched by `finish`).
pub fn write_header(out: &mut Vec<u8>, h: &Header) {
    let start = out.len();
    out.resize(start + HEADER_LEN, 0);
    let b = &mut out[start..];
    b[..4].copy_from_slice(b"RCmb");
    b[8..10].copy_from_slice(&1u16.to_be_bytes());
    b[10..12].copy_from_slice(&h.port.to_be_bytes());
    b[12..14].copy_from_slice(&h.kind.to_be_bytes());
    b[14..16].copy_from_slice(&h.count.to_be_bytes());
    b[16..24].copy_from_slice(&h.current_epoch.to_be_bytes());
    b[24..32].copy_from_slice(&h.config_epoch.to_be_bytes());
    b[32..40].copy_from_slice(&h.offset.to_be_bytes());
    b[OFF_SENDER..OFF_SENDER + ID_LEN].copy_from_slice(&h.sender);
    b[OFF_SLOTS..OFF_SLOTS + SLOT_BYTES].copy_from_slice(&h.myslots[..]);
    b[OFF_SLAVEOF..OFF_SLAVEOF + ID_LEN].copy_from_slice(&h.slaveof);
    let ip = h.myip.as_bytes();
    let n = ip.len().min(IP_LEN - 1);
    b[OFF_MYIP..OFF_MYIP + n].copy_from_slice(&ip[..n]);
    b[OFF_EXTENSIONS..OFF_EXTENSIONS + 2].copy_from_slice(&h.extensions.to_be_bytes());
    b[OFF_PPORT..OFF_PPORT + 2].copy_from_slice(&h.pport.to_be_bytes());
    b[OFF_PPORT + 2..OFF_PPORT + 4].copy_from_slice(&h.cport.to_be_bytes());
    b[OFF_PPORT + 4..OFF_PPORT + 6].copy_from_slice(&h.flags.to_be_bytes());
    b[OFF_PPORT + 6] = h.state;
    b[2253..2256].copy_from_slice(&h.mflags);
}

/// Appends one gossip entry.
pub fn write_gossip(out: &mut Vec<u8>, g: &Gossip) {
    let start = out.len();
    out.resize(start + GOSSIP_LEN, 0);
    let b = &mut out[start..];
    b[..ID_LEN].copy_from_slice(&g.name);
    b[40..44].copy_from_slice(&g.ping_sent.to_be_bytes());
    b[44..48].copy_from_slice(&g.pong_received.to_be_bytes());
    let ip = g.ip.as_bytes();
    let n = ip.len().min(IP_LEN - 1);
    b[48..48 + n].copy_from_slice(&ip[..n]);
    b[94..96].copy_from_slice(&g.port.to_be_bytes());
    b[96..98].copy_from_slice(&g.cport.to_be_bytes());
    b[98..100].copy_from_slice(&g.flags.to_be_bytes());
    b[100..102].copy_from_slice(&g.pport.to_be_bytes());
}

/// Appends the hostname extension: its NUL-terminated text padded to 8 bytes.
pub fn write_hostname_ext(out: &mut Vec<u8>, hostname: &str) {
    let padded = (hostname.len() + 1).div_ceil(8) * 8;
    let len = (8 + padded) as u32;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&EXT_HOSTNAME.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(hostname.as_bytes());
    out.resize(out.len() + padded - hostname.len(), 0);
}

/// Writes the total length into a finished message.
pub fn finish(out: &mut [u8]) {
    let len = out.len() as u32;
    out[4..8].copy_from_slice(&len.to_be_bytes());
}

/// Appends a body with the given shape (FAIL, PUBLISH, UPDATE).
pub fn write_body(out: &mut Vec<u8>, body: &Body) {
    match body {
        Body::Fail { about } => out.extend_from_slice(about),
        Body::Publish { channel, message } => {
            out.extend_from_slice(&(channel.len() as u32).to_be_bytes());
            out.extend_from_slice(&(message.len() as u32).to_be_bytes());
            out.extend_from_slice(channel);
            out.extend_from_slice(message);
        }
        Body::Update {
            config_epoch,
            node,
            slots,
        } => {
            out.extend_from_slice(&config_epoch.to_be_bytes());
            out.extend_from_slice(node);
            out.extend_from_slice(&slots[..]);
        }
        Body::Ping {
            gossip, hostname, ..
        } => {
            for g in gossip {
                write_gossip(out, g);
            }
            if let Some(h) = hostname {
                write_hostname_ext(out, h);
            }
        }
        Body::Empty => {}
    }
}

/// A whole message: header, body and total length.
pub fn encode(m: &Msg) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + 128);
    write_header(&mut out, &m.hdr);
    write_body(&mut out, &m.body);
    finish(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(kind: u16) -> Header {
        let mut h = Header::new(kind);
        h.port = 7000;
        h.cport = 17000;
        h.current_epoch = 5;
        h.config_epoch = 3;
        h.offset = 99;
        h.sender = [b'a'; ID_LEN];
        set_slot_bit(&mut h.myslots, 0);
        set_slot_bit(&mut h.myslots, 16383);
        h.myip = "10.0.0.1".into();
        h.flags = 1;
        h
    }

    #[test]
    fn field_offsets_match_redis() {
        let mut h = sample(PING);
        h.extensions = 0x0102;
        h.pport = 0x0304;
        h.state = 7;
        h.mflags = [1, 2, 3];
        let b = encode(&Msg {
            hdr: h,
            body: Body::Ping {
                gossip: vec![],
                hostname: None,
                unknown: vec![],
            },
        });
        assert_eq!(b.len(), HEADER_LEN);
        assert_eq!(&b[0..8], b"RCmb\0\0\x08\xd0");
        assert_eq!(&b[8..16], &[0, 1, 0x1b, 0x58, 0, 0, 0, 0]);
        assert_eq!(b[40], b'a');
        assert_eq!(b[80], 1);
        assert_eq!(b[2127], 0x80);
        assert_eq!(&b[2168..2176], b"10.0.0.1");
        assert_eq!(&b[2214..2216], &[1, 2]);
        assert_eq!(&b[2246..2256], &[3, 4, 0x42, 0x68, 0, 1, 7, 1, 2, 3]);
    }

    #[test]
    fn messages_round_trip() {
        let g = Gossip {
            name: [b'b'; ID_LEN],
            ping_sent: 1,
            pong_received: 2,
            ip: "127.0.0.1".into(),
            port: 7001,
            cport: 17001,
            flags: 1,
            pport: 0,
        };
        let mut h = sample(PONG);
        h.count = 1;
        h.extensions = 1;
        h.mflags[0] = FLAG0_EXT_DATA;
        let ping = Msg {
            hdr: h,
            body: Body::Ping {
                gossip: vec![g],
                hostname: Some("host-1".into()),
                unknown: vec![],
            },
        };
        let bytes = encode(&ping);
        assert_eq!(bytes.len(), HEADER_LEN + GOSSIP_LEN + 16);
        assert_eq!(parse(&bytes), Some(ping));
        let publish = Msg {
            hdr: sample(PUBLISH),
            body: Body::Publish {
                channel: b"ch".to_vec(),
                message: b"hello".to_vec(),
            },
        };
        assert_eq!(parse(&encode(&publish)), Some(publish));
        let update = Msg {
            hdr: sample(UPDATE),
            body: Body::Update {
                config_epoch: 9,
                node: [b'c'; ID_LEN],
                slots: Box::new([0xff; SLOT_BYTES]),
            },
        };
        assert_eq!(parse(&encode(&update)), Some(update));
    }

    #[test]
    fn bad_lengths_are_dropped_not_trusted() {
        let mut h = sample(PING);
        h.count = 3;
        let mut b = Vec::new();
        write_header(&mut b, &h);
        finish(&mut b);
        assert_eq!(parse(&b), None);
        // A publish whose lengths overflow when added.
        let mut b = Vec::new();
        write_header(&mut b, &sample(PUBLISH));
        b.extend_from_slice(&u32::MAX.to_be_bytes());
        b.extend_from_slice(&9u32.to_be_bytes());
        finish(&mut b);
        assert_eq!(parse(&b), None);
        // An extension claiming more than the message holds, or zero.
        for len in [64u32, 0, 12] {
            let mut h = sample(MEET);
            h.extensions = 1;
            h.mflags[0] = FLAG0_EXT_DATA;
            let mut b = Vec::new();
            write_header(&mut b, &h);
            b.extend_from_slice(&len.to_be_bytes());
            b.extend_from_slice(&[0; 12]);
            finish(&mut b);
            assert_eq!(parse(&b), None, "{len}");
        }
        assert_eq!(frame_len(b"RCmb\0\0\0\x10"), None);
        assert_eq!(frame_len(b"XXmb\0\0\x10\0"), None);
        // Random bytes after a valid signature never panic.
        let mut rng = crate::server::Rng::new(7);
        for _ in 0..2000 {
            let n = HEADER_LEN + (rng.next_u64() % 600) as usize;
            let mut b: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            b[..4].copy_from_slice(b"RCmb");
            b[8..10].copy_from_slice(&[0, 1]);
            b[12] = 0;
            b[13] = (rng.next_u64() % 12) as u8;
            finish(&mut b);
            let _ = parse(&b);
        }
    }
}
