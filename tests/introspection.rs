//! CLIENT LIST/INFO fields and CLIENT REPLY modes as Redis's introspection suite checks them.

mod common;

use common::Raw;

/// The `qbuf=` field of a CLIENT INFO reply.
fn qbuf_of(reply: &[u8]) -> usize {
    let text = String::from_utf8_lossy(reply);
    let field = text
        .split(' ')
        .find_map(|f| f.strip_prefix("qbuf="))
        .expect("qbuf field");
    field.parse().unwrap()
}

// Redis trims its query buffer after a whole batch of requests, so during
// CLIENT INFO `qbuf` counts every byte of the batch read with it (values read
// from redis-server 7.0.15 with these exact writes; the suite's "CLIENT LIST"
// test expects 26 for a lone `client list`).
#[test]
fn qbuf_counts_the_whole_batch() {
    let h = common::start();
    let mut r = Raw::connect(&h);
    r.cmd(&[b"client", b"info"]);
    assert_eq!(qbuf_of(&r.read_raw()), 26);
    r.send(b"*1\r\n$4\r\nPING\r\n*2\r\n$6\r\nclient\r\n$4\r\ninfo\r\n*1\r\n$4\r\nPING\r\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    assert_eq!(qbuf_of(&r.read_raw()), 54);
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    r.send(b"PING\r\nCLIENT INFO\r\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    assert_eq!(qbuf_of(&r.read_raw()), 19);
}
