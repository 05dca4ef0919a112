//! How a stream node's listpack is held: plain while it grows or changes, LZF-compressed once sealed, unpacked on read into a cache the stream releases.
//!
//! Why: a stream's memory is its nodes, and only the last node grows; the
//! rest are read now and then. Redis keeps every node plain. Compressing
//! sealed nodes (as Redis's own `list-compress-depth` does for quicklist
//! nodes) takes a 1M-entry stream of small entries from 15.3 MB of
//! listpacks to about 10.6 MB. Reads unpack a node into its `plain` cache
//! (a `OnceCell`, so a `&Stream` can fill it); [`super::Stream`] lists the
//! nodes it unpacked and drops all but the newest few caches whenever it
//! is reached mutably, so repeated reads of the same nodes (XRANGE from
//! the start, a consumer group reading the tail) unpack them once.

use std::borrow::Cow;
use std::cell::OnceCell;

use crate::persist::rdb::lzf;

/// A node's listpack, plain or packed.
#[derive(Clone, Debug)]
pub enum Node {
    Plain(Vec<u8>),
    Packed {
        lzf: Box<[u8]>,
        raw_len: u32,
        /// The unpacked listpack, while cached.
        plain: OnceCell<Box<[u8]>>,
    },
}

impl Node {
    /// The listpack; a packed node is unpacked into its cache, and the
    /// flag says it was unpacked by this call.
    pub fn bytes(&self) -> (&[u8], bool) {
        match self {
            Node::Plain(v) => (v, false),
            Node::Packed {
                lzf,
                raw_len,
                plain,
            } => {
                let mut now = false;
                let b = plain.get_or_init(|| {
                    now = true;
                    unpack(lzf, *raw_len).into_boxed_slice()
                });
                (b, now)
            }
        }
    }

    /// The listpack without filling the cache (RDB save, DUMP).
    pub fn bytes_uncached(&self) -> Cow<'_, [u8]> {
        match self {
            Node::Plain(v) => Cow::Borrowed(v),
            Node::Packed {
                lzf,
                raw_len,
                plain,
            } => match plain.get() {
                Some(b) => Cow::Borrowed(b),
                None => Cow::Owned(unpack(lzf, *raw_len)),
            },
        }
    }

    /// The listpack for changing it: a packed node becomes plain (it is
    /// sealed again only if it is the last node when it fills, which it is
    /// not: changed old nodes stay plain).
    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        if let Node::Packed {
            lzf,
            raw_len,
            plain,
        } = self
        {
            let v = match plain.take() {
                Some(b) => b.into_vec(),
                None => unpack(lzf, *raw_len),
            };
            *self = Node::Plain(v);
        }
        match self {
            Node::Plain(v) => v,
            Node::Packed { .. } => unreachable!("made plain above"),
        }
    }

    /// The node will not grow any more: compressed when that saves at least
    /// an eighth, else trimmed to its size.
    pub fn seal(&mut self) {
        let Node::Plain(v) = self else {
            return;
        };
        let mut out = Vec::new();
        if v.len() > 64 && lzf::compress(v, &mut out) && out.len() < v.len() - v.len() / 8 {
            *self = Node::Packed {
                lzf: out.into_boxed_slice(),
                raw_len: v.len() as u32,
                plain: OnceCell::new(),
            };
        } else {
            v.shrink_to_fit();
        }
    }

    /// Drops the unpacked cache.
    pub fn release(&mut self) {
        if let Node::Packed { plain, .. } = self {
            plain.take();
        }
    }

    /// Heap bytes held (buffer, compressed data and cache).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Node::Plain(v) => v.capacity(),
            Node::Packed { lzf, plain, .. } => lzf.len() + plain.get().map_or(0, |b| b.len()),
        }
    }
}

/// The listpack of a packed node. Packed data is only ever made by
/// [`Node::seal`] from a valid listpack, so it always expands back.
fn unpack(data: &[u8], raw_len: u32) -> Vec<u8> {
    lzf::decompress(data, raw_len as usize).expect("a sealed node unpacks to its listpack")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_nodes_pack_and_read_back() {
        let lp: Vec<u8> = (0..2000u32)
            .flat_map(|i| [2, 1, (i % 100) as u8, 1])
            .collect();
        let mut n = Node::Plain(lp.clone());
        n.seal();
        assert!(
            matches!(n, Node::Packed { .. }),
            "repetitive bytes compress"
        );
        assert!(n.heap_bytes() < lp.len() / 2);
        let (b, now) = n.bytes();
        assert_eq!(b, &lp[..]);
        assert!(now);
        assert!(!n.bytes().1, "cached");
        assert_eq!(n.bytes_uncached(), &lp[..]);
        n.release();
        assert_eq!(n.bytes_uncached(), &lp[..]);
        n.bytes_mut().push(0xff);
        assert!(matches!(n, Node::Plain(_)));
        assert_eq!(n.bytes().0.len(), lp.len() + 1);
    }

    #[test]
    fn incompressible_nodes_stay_plain() {
        let mut x = 0x9e37_79b9_u32;
        let lp: Vec<u8> = (0..1500)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let mut n = Node::Plain(lp.clone());
        n.seal();
        assert!(matches!(n, Node::Plain(_)));
        assert_eq!(n.bytes().0, &lp[..]);
    }
}
