//! Unit tests of the stream structure: node bytes as Redis writes them, ranges, deletion, trimming.

use super::*;

fn id(ms: u64, seq: u64) -> StreamId {
    StreamId::new(ms, seq)
}

fn add(s: &mut Stream, i: StreamId, fields: &[&str]) {
    let f: Vec<&[u8]> = fields.iter().map(|x| x.as_bytes()).collect();
    s.add(NewId::Exact(i), &f, NodeLimits::default(), 0)
        .unwrap();
}

fn ids(r: Range<'_>) -> Vec<StreamId> {
    r.map(|e| e.id).collect()
}

/// `XADD s 1-1 a 1 b hello`, `XADD s 1-2 a 2 b x`, `XADD s 5-0 c 300` on
/// redis-server 7.0.15: the node inside its DUMP payload.
#[test]
fn node_bytes_match_redis() {
    let mut s = Stream::new();
    add(&mut s, id(1, 1), &["a", "1", "b", "hello"]);
    add(&mut s, id(1, 2), &["a", "2", "b", "x"]);
    add(&mut s, id(5, 0), &["c", "300"]);
    let want: &[u8] = b"D\x00\x00\x00\x19\x00\x03\x01\x00\x01\x02\x01\x81a\x02\x81b\x02\x00\x01\x02\x01\x00\x01\x00\x01\x01\x01\x85hello\x06\x05\x01\x02\x01\x00\x01\x01\x01\x02\x01\x81x\x02\x05\x01\x00\x01\x04\x01\xdf\xff\x02\x01\x01\x81c\x02\xc1,\x02\x06\x01\xff";
    let nodes: Vec<_> = s.nodes().collect();
    assert_eq!(nodes.len(), 1);
    assert_eq!(*nodes[0].0, id(1, 1));
    assert_eq!(&nodes[0].1[..], want);
    assert_eq!((s.len(), s.first_id, s.last_id), (3, id(1, 1), id(5, 0)));
    let e = s.get(id(5, 0)).unwrap();
    let mut t1 = itoa::Buffer::new();
    let mut t2 = itoa::Buffer::new();
    let f: Vec<(Vec<u8>, Vec<u8>)> = e
        .fields()
        .map(|(a, b)| (a.bytes(&mut t1).to_vec(), b.bytes(&mut t2).to_vec()))
        .collect();
    assert_eq!(f, vec![(b"c".to_vec(), b"300".to_vec())]);
}

#[test]
fn ranges_forwards_and_backwards_across_nodes() {
    let mut s = Stream::new();
    for i in 1..=250u64 {
        add(&mut s, id(i, 0), &["f", "v"]);
    }
    assert_eq!(s.node_count(), 3, "100 entries per node");
    assert_eq!(
        ids(s.range(id(99, 0), id(102, 0), false)),
        [99, 100, 101, 102].map(|m| id(m, 0))
    );
    assert_eq!(
        ids(s.range(id(99, 0), id(102, 0), true)),
        [102, 101, 100, 99].map(|m| id(m, 0))
    );
    assert_eq!(s.range(StreamId::MIN, StreamId::MAX, false).count(), 250);
    assert_eq!(s.range(StreamId::MIN, StreamId::MAX, true).count(), 250);
    assert_eq!(s.range(id(300, 0), StreamId::MAX, false).count(), 0);
    assert_eq!(s.range(id(5, 0), id(4, 0), false).count(), 0);
}

#[test]
fn delete_flags_entries_and_drops_empty_nodes() {
    let mut s = Stream::new();
    for i in 1..=5u64 {
        add(&mut s, id(i, 0), &["f", "v"]);
    }
    assert_eq!(s.delete(&[id(1, 0), id(3, 0), id(9, 0), id(3, 0)]), 2);
    assert_eq!(s.len(), 3);
    assert_eq!(s.first_id, id(2, 0));
    assert_eq!(s.max_deleted, id(3, 0));
    assert_eq!(
        ids(s.range(StreamId::MIN, StreamId::MAX, false)),
        [id(2, 0), id(4, 0), id(5, 0)]
    );
    assert_eq!(
        s.range_with(StreamId::MIN, StreamId::MAX, false, false)
            .count(),
        5
    );
    assert_eq!(s.delete(&[id(2, 0), id(4, 0), id(5, 0)]), 3);
    assert_eq!(s.node_count(), 0);
    assert_eq!(
        (s.len(), s.first_id, s.last_id),
        (0, StreamId::MIN, id(5, 0))
    );
}

#[test]
fn trims_exactly_and_by_whole_nodes() {
    let mut s = Stream::new();
    for i in 1..=250u64 {
        add(&mut s, id(i, 0), &["f", "v"]);
    }
    let approx = Trim {
        by: TrimBy::MaxLen(120),
        approx: true,
        limit: 0,
    };
    assert_eq!(s.trim(&approx), 100);
    assert_eq!(s.len(), 150);
    assert_eq!(s.trim(&approx), 0, "only whole nodes go");
    let exact = Trim {
        approx: false,
        ..approx
    };
    assert_eq!(s.trim(&exact), 30);
    assert_eq!(s.first_id, id(131, 0));
    let minid = Trim {
        by: TrimBy::MinId(id(200, 0)),
        approx: false,
        limit: 0,
    };
    assert_eq!(s.trim(&minid), 69);
    assert_eq!(s.first_id, id(200, 0));
    assert_eq!(s.len(), 51);
}

#[test]
fn ids_generated_and_refused() {
    let mut s = Stream::new();
    let lim = NodeLimits::default();
    let f: &[&[u8]] = &[b"a", b"b"];
    assert_eq!(s.add(NewId::Auto, f, lim, 10), Ok(id(10, 0)));
    assert_eq!(s.add(NewId::Auto, f, lim, 5), Ok(id(10, 1)));
    assert_eq!(s.add(NewId::Ms(10), f, lim, 0), Ok(id(10, 2)));
    assert_eq!(s.add(NewId::Ms(9), f, lim, 0), Err(AddError::NotGreater));
    assert_eq!(
        s.add(NewId::Exact(id(10, 2)), f, lim, 0),
        Err(AddError::NotGreater)
    );
    assert_eq!(s.add(NewId::Ms(11), f, lim, 0), Ok(id(11, 0)));
    // Different fields than the master's: stored with their names.
    let g: &[&[u8]] = &[b"x", b"1", b"y", b"2"];
    assert_eq!(s.add(NewId::Auto, g, lim, 0), Ok(id(11, 1)));
    let e = s.get(id(11, 1)).unwrap();
    assert_eq!(e.len(), 2);
}

#[test]
fn rax_node_counts() {
    let mut s = Stream::new();
    assert_eq!(s.rax_nodes(), 1);
    add(&mut s, id(1, 0), &["f", "v"]);
    assert_eq!(s.rax_nodes(), 2);
}

/// Walking a node backwards (by backlens and lp-counts) meets the entries
/// the forward walk meets, in reverse: mixed field sets, values whose
/// encodings need two-byte backlens, and tombstones.
#[test]
fn backward_walk_mirrors_forward_walk() {
    let mut s = Stream::new();
    let long = "x".repeat(300);
    for i in 1..=60u64 {
        match i % 3 {
            0 => add(&mut s, id(i, 0), &["f", "v"]),
            1 => add(&mut s, id(i, 0), &["other", &long, "g", "12345678901"]),
            _ => add(&mut s, id(i, 7), &["f", &i.to_string()]),
        }
    }
    s.delete(&[id(4, 0), id(9, 0), id(60, 0)]);
    for skip_deleted in [false, true] {
        let fwd: Vec<StreamId> = s
            .range_with(StreamId::MIN, StreamId::MAX, false, skip_deleted)
            .map(|e| e.id)
            .collect();
        let mut back: Vec<StreamId> = s
            .range_with(StreamId::MIN, StreamId::MAX, true, skip_deleted)
            .map(|e| e.id)
            .collect();
        back.reverse();
        assert_eq!(fwd, back);
        assert_eq!(fwd.len(), if skip_deleted { 57 } else { 60 });
    }
    assert_eq!(s.last_valid_id(), id(59, 7));
}

/// A forward range resumes where the last one stopped, and stays right
/// when the node changed in between: appends that grow the header's counts
/// past a one-byte encoding, deletions (of the remembered entry too), and
/// the node removed by trimming.
#[test]
fn resumed_ranges_stay_right_after_the_node_changes() {
    let mut s = Stream::new();
    let lim = NodeLimits {
        entries: 1000,
        ..NodeLimits::default()
    };
    let put = |s: &mut Stream, i: u64| {
        s.add(NewId::Exact(id(i, 0)), &[b"f", b"v"], lim, 0)
            .unwrap();
    };
    for i in 1..=100 {
        put(&mut s, i);
    }
    let first = |s: &Stream, after: u64| {
        s.range(id(after, 1), StreamId::MAX, false)
            .next()
            .map(|e| e.id)
    };
    assert_eq!(first(&s, 50), Some(id(51, 0)));
    // The count grows past 127: the header gets longer, entries move.
    for i in 101..=300 {
        put(&mut s, i);
    }
    assert_eq!(first(&s, 51), Some(id(52, 0)));
    // The remembered entry and the one after it are deleted.
    s.delete(&[id(52, 0), id(53, 0)]);
    assert_eq!(first(&s, 52), Some(id(54, 0)));
    assert_eq!(first(&s, 299), Some(id(300, 0)));
    assert_eq!(first(&s, 300), None);
    // Trimmed away: the node the hint names is gone.
    s.trim(&Trim {
        by: TrimBy::MaxLen(0),
        approx: false,
        limit: 0,
    });
    assert_eq!(first(&s, 10), None);
    put(&mut s, 400);
    assert_eq!(first(&s, 10), Some(id(400, 0)));
}

/// Sealed nodes are compressed; reads, deletions and trims see the same
/// entries as with plain nodes, and reads keep only a few caches.
#[test]
fn sealed_nodes_are_packed_and_behave_as_plain_ones() {
    let mut s = Stream::new();
    let mut plain = 0;
    for i in 1..=1000u64 {
        let v = (i * 7).to_string();
        add(&mut s, id(i, 0), &["sensor", "12", "reading", &v]);
    }
    for (_, lp) in s.nodes() {
        plain += lp.len();
    }
    assert_eq!(s.node_count(), 10);
    assert!(
        s.node_bytes() < plain * 3 / 4,
        "{} bytes held for {plain} of listpacks",
        s.node_bytes()
    );
    // Reads across packed nodes, both ways.
    assert_eq!(s.range(id(150, 0), id(450, 0), false).count(), 301);
    assert_eq!(s.range(id(150, 0), id(450, 0), true).count(), 301);
    assert!(take_unpacked());
    assert!(s.unpacked.borrow().len() >= 4);
    s.release_cache();
    assert_eq!(s.unpacked.borrow().len(), CACHE_KEEP);
    // An entry in an old (packed) node is deleted; the node turns plain.
    assert_eq!(s.delete(&[id(205, 0)]), 1);
    assert!(s.get(id(205, 0)).is_none());
    assert_eq!(s.get(id(206, 0)).map(|e| e.id), Some(id(206, 0)));
    // Exact trim inside a packed node.
    let t = Trim {
        by: TrimBy::MinId(id(350, 0)),
        approx: false,
        limit: 0,
    };
    assert_eq!(s.trim(&t), 348);
    assert_eq!(s.first_id, id(350, 0));
    assert_eq!(s.range(StreamId::MIN, StreamId::MAX, false).count(), 651);
    // Appends still go to the (plain) last node.
    add(&mut s, id(2000, 0), &["sensor", "1"]);
    assert_eq!(s.last_valid_id(), id(2000, 0));
}
