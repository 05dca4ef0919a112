//! Replies whose length a client chooses (random members with a negative
//! count): streamed, never sized up front, and cut at the client's hard output
//! limit with the connection closed, as Redis 7.0.15 does (checked by hand:
//! with `client-output-buffer-limit "normal 1mb 0 0"` Redis closes each of
//! these connections without sending a byte and keeps serving).

mod common;

use std::time::Duration;

use common::{start_with, Raw};
use oxidis::resp::value::Value;

fn assert_closed_and_server_alive(h: &oxidis::Handle, cmd: &[&[u8]]) {
    let mut r = Raw::connect(h);
    r.cmd(cmd);
    assert!(
        r.closed_within(Duration::from_secs(30)),
        "{cmd:?} keeps the connection"
    );
    let mut other = Raw::connect(h);
    other.cmd(&[b"PING"]);
    assert_eq!(other.read(), Value::Simple(b"PONG".to_vec()));
}

#[test]
fn negative_counts_stream_until_the_output_limit() {
    let h = start_with(&["--client-output-buffer-limit", "normal 1mb 0 0"]);
    let mut c = Raw::connect(&h);
    c.cmd(&[b"ZADD", b"z", b"1", b"a", b"2", b"b"]);
    c.read();
    c.cmd(&[b"SADD", b"s", b"x", b"y"]);
    c.read();
    c.cmd(&[b"HSET", b"h", b"f", b"v"]);
    c.read();
    for cmd in [
        &[&b"ZRANDMEMBER"[..], b"z", b"-1000000000000"][..],
        &[b"ZRANDMEMBER", b"z", b"-4611686018427387903", b"WITHSCORES"],
        &[b"ZRANDMEMBER", b"z", b"-9223372036854775807"],
        &[b"SRANDMEMBER", b"s", b"-1000000000000"],
        &[b"HRANDFIELD", b"h", b"-1000000000000"],
        &[b"HRANDFIELD", b"h", b"-4611686018427387903", b"WITHVALUES"],
    ] {
        assert_closed_and_server_alive(&h, cmd);
    }
    // The first connection was not touched.
    c.cmd(&[b"ZCARD", b"z"]);
    assert_eq!(c.read(), Value::Int(2));
}
