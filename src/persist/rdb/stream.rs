//! Streams in RDB (RDB_TYPE_STREAM_LISTPACKS_2 as Redis 7.0 writes it; types 15 and 19 load): nodes are copied as they are.

use super::read::{Bad, Reader};
use super::write::Encoder;
use crate::types::stream::{
    decode_id, encode_id, node, Group, Nack, Stream, StreamId, ENTRIES_READ_INVALID,
};

impl Encoder {
    /// `rdbSaveObject` for a stream: the nodes (key, listpack) as they are,
    /// the metadata, then every group with its PEL and consumers.
    pub fn stream(&mut self, s: &Stream) {
        self.len(s.node_count() as u64);
        for (master, lp) in s.nodes() {
            self.string(&encode_id(*master));
            self.string(&lp);
        }
        self.len(s.len());
        self.id(s.last_id);
        self.id(s.first_id);
        self.id(s.max_deleted);
        self.len(s.entries_added);
        self.len(s.groups.len() as u64);
        for (name, g) in &s.groups {
            self.string(name);
            self.id(g.last_id);
            // -1 (unknown) is written as a 64-bit length, as C's cast does.
            self.len(g.entries_read as u64);
            self.len(g.pel.len() as u64);
            for (id, n) in &g.pel {
                self.buf.extend_from_slice(&encode_id(*id));
                self.buf.extend_from_slice(&n.delivery_time.to_le_bytes());
                self.len(n.delivery_count);
            }
            self.len(g.consumers.len() as u64);
            for (name, c) in &g.consumers {
                self.string(name);
                self.buf.extend_from_slice(&c.seen_time.to_le_bytes());
                self.len(c.pel.len() as u64);
                for id in &c.pel {
                    self.buf.extend_from_slice(&encode_id(*id));
                }
            }
        }
    }

    fn id(&mut self, id: StreamId) {
        self.len(id.ms);
        self.len(id.seq);
    }
}

fn corrupt<T>(why: &str) -> Result<T, Bad> {
    Err(Bad::Corrupt(why.into()))
}

impl<'a> Reader<'a> {
    fn stream_id(&mut self) -> Result<StreamId, Bad> {
        let ms = self.length()?;
        let seq = self.length()?;
        Ok(StreamId::new(ms, seq))
    }

    fn raw_id(&mut self) -> Result<StreamId, Bad> {
        let b: [u8; 16] = self.take(16)?.try_into().expect("16 bytes");
        Ok(decode_id(&b))
    }

    fn ms_time(&mut self) -> Result<i64, Bad> {
        let b: [u8; 8] = self.take(8)?.try_into().expect("8 bytes");
        Ok(i64::from_le_bytes(b))
    }

    /// `rdbLoadObject` for RDB_TYPE_STREAM_LISTPACKS (`v2` false) and
    /// RDB_TYPE_STREAM_LISTPACKS_2.
    pub fn stream(&mut self, v2: bool) -> Result<Stream, Bad> {
        let mut s = Stream::new();
        let nodes = self.length()?;
        for _ in 0..nodes {
            let key = self.string()?;
            let Ok(key) = <[u8; 16]>::try_from(&key[..]) else {
                return corrupt("Stream node key entry is not the size of a stream ID");
            };
            let master = decode_id(&key);
            let lp = self.string()?.into_owned();
            if !node::validate(&lp, master) {
                return corrupt("Stream listpack integrity check failed.");
            }
            if !s.push_node(master, lp) {
                return corrupt("Listpack re-added with existing key");
            }
        }
        s.seal_loaded();
        s.set_len(self.length()?);
        s.last_id = self.stream_id()?;
        if v2 {
            s.first_id = self.stream_id()?;
            s.max_deleted = self.stream_id()?;
            s.entries_added = self.length()?;
        } else {
            s.entries_added = s.len();
            s.first_id = s.edge_id(true, true);
        }
        if !s.is_empty() && s.node_count() == 0 {
            return corrupt("Stream length inconsistent with rax entries");
        }
        let groups = self.length()?;
        for _ in 0..groups {
            let name: Box<[u8]> = self.string()?.into_owned().into();
            let last_id = self.stream_id()?;
            let entries_read = if v2 {
                self.length()? as i64
            } else {
                s.estimate_distance(last_id)
            };
            if s.groups.contains_key(&name) {
                return corrupt("Duplicated consumer group name");
            }
            let mut g = Group::new(last_id, entries_read.max(ENTRIES_READ_INVALID));
            let pel = self.length()?;
            for _ in 0..pel {
                let id = self.raw_id()?;
                let delivery_time = self.ms_time()?;
                let delivery_count = self.length()?;
                let nack = Nack {
                    delivery_time,
                    delivery_count,
                    consumer: Box::default(),
                };
                if g.pel.insert(id, nack).is_some() {
                    return corrupt("Duplicated global PEL entry loading stream consumer group");
                }
            }
            let consumers = self.length()?;
            for _ in 0..consumers {
                let cname: Box<[u8]> = self.string()?.into_owned().into();
                if g.consumers.contains_key(&cname) {
                    return corrupt("Duplicate stream consumer detected.");
                }
                let seen = self.ms_time()?;
                let (c, _) = g.consumer_or_create(&cname, seen);
                c.seen_time = seen;
                let n = self.length()?;
                for _ in 0..n {
                    let id = self.raw_id()?;
                    let Some(nack) = g.pel.get_mut(&id) else {
                        return corrupt("Consumer entry not found in group global PEL");
                    };
                    nack.consumer = cname.clone();
                    g.consumers
                        .get_mut(&cname)
                        .expect("just created")
                        .pel
                        .insert(id);
                }
            }
            if g.pel
                .values()
                .any(|n| n.consumer.is_empty() && !g.consumers.contains_key(&n.consumer))
            {
                return corrupt("Stream PEL NACK without a consumer");
            }
            s.groups.insert(name, g);
        }
        Ok(s)
    }
}
