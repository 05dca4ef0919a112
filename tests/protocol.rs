//! Raw-byte protocol tests: pipelining, inline commands, partial frames, malformed frames.
//! Every expected reply here was checked against redis-server 7.0.15 with the same bytes
//! (these frames can't be expressed as compat cases, which send well-formed requests).

mod common;

use std::time::Duration;

use common::{encode, start, Raw};

#[test]
fn pipelined_requests_get_replies_in_order() {
    let h = start();
    let mut r = Raw::connect(&h);
    let mut batch = Vec::new();
    for i in 0..1000 {
        batch.extend(encode(&[
            b"SET",
            format!("k{i}").as_bytes(),
            format!("v{i}").as_bytes(),
        ]));
        batch.extend(encode(&[b"GET", format!("k{i}").as_bytes()]));
    }
    r.send(&batch);
    for i in 0..1000 {
        assert_eq!(r.read_raw(), b"+OK\r\n");
        let v = format!("v{i}");
        assert_eq!(
            r.read_raw(),
            format!("${}\r\n{v}\r\n", v.len()).into_bytes()
        );
    }
}

#[test]
fn a_frame_split_at_every_byte_is_reassembled() {
    let h = start();
    let frame = encode(&[b"SET", b"split-key", b"a value with \r\n inside"]);
    for cut in 1..frame.len() {
        let mut r = Raw::connect(&h);
        r.send(&frame[..cut]);
        // Nothing may be answered for an incomplete frame.
        assert!(
            r.try_read_raw(Duration::from_millis(5)).is_none(),
            "reply before frame complete (cut {cut})"
        );
        r.send(&frame[cut..]);
        assert_eq!(r.read_raw(), b"+OK\r\n", "cut at {cut}");
    }
    let mut r = Raw::connect(&h);
    r.cmd(&[b"GET", b"split-key"]);
    assert_eq!(r.read_raw(), b"$22\r\na value with \r\n inside\r\n");
}

#[test]
fn inline_commands_as_telnet_sends_them() {
    let h = start();
    let mut r = Raw::connect(&h);
    r.send(b"SET inline \"hello world\"\r\nGET inline\nPING\r\n\r\n");
    assert_eq!(r.read_raw(), b"+OK\r\n");
    assert_eq!(r.read_raw(), b"$11\r\nhello world\r\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
}

/// Each malformed request is answered with Redis's protocol error, then the connection closes.
#[test]
fn malformed_frames_answer_protocol_errors_and_close() {
    let h = start();
    let cases: &[(&[u8], &[u8])] = &[
        (
            b"*1\r\nx3\r\nfoo\r\n",
            b"-ERR Protocol error: expected '$', got 'x'\r\n",
        ),
        (
            b"*abc\r\n",
            b"-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*1\r\n$-5\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\n$536870913\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*2147483648\r\n",
            b"-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"SET k \"unterminated\r\n",
            b"-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
    ];
    for (req, want) in cases {
        let mut r = Raw::connect(&h);
        r.send(b"PING\r\n");
        r.send(req);
        assert_eq!(r.read_raw(), b"+PONG\r\n");
        assert_eq!(
            &r.read_raw()[..],
            *want,
            "request {:?}",
            String::from_utf8_lossy(req)
        );
        assert!(
            r.closed_within(Duration::from_secs(5)),
            "connection stays open after {:?}",
            String::from_utf8_lossy(req)
        );
    }
    // Oversized inline request: more than 64 KiB without a newline.
    let mut r = Raw::connect(&h);
    r.send(&vec![b'a'; 70 * 1024]);
    assert_eq!(
        r.read_raw(),
        b"-ERR Protocol error: too big inline request\r\n"
    );
    assert!(r.closed_within(Duration::from_secs(5)));
}

/// A client that declares a huge bulk and never sends it must not make the
/// server allocate what it declared.
#[test]
fn declared_but_unsent_bulk_does_not_allocate() {
    fn rss_kb() -> u64 {
        let s = std::fs::read_to_string("/proc/self/status").unwrap();
        s.lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap()
            .parse()
            .unwrap()
    }
    let h = start();
    let before = rss_kb();
    let mut conns = Vec::new();
    for _ in 0..20 {
        let mut r = Raw::connect(&h);
        r.send(b"*2\r\n$3\r\nGET\r\n$536870912\r\nabc");
        conns.push(r);
    }
    // The server must still answer others promptly.
    let mut other = Raw::connect(&h);
    other.cmd(&[b"PING"]);
    assert_eq!(other.read_raw(), b"+PONG\r\n");
    let grown_mb = rss_kb().saturating_sub(before) / 1024;
    // 20 declared 512 MB bulks would be 10 GB if allocated up front.
    assert!(grown_mb < 200, "resident memory grew by {grown_mb} MB");
}

#[test]
fn empty_and_zero_count_requests_are_ignored() {
    let h = start();
    let mut r = Raw::connect(&h);
    r.send(b"*0\r\n*-1\r\n\r\n   \r\nPING\r\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
}

#[test]
fn unauthenticated_clients_get_small_limits_and_noauth() {
    let h = common::start_with(&["--requirepass", "secret"]);
    let mut r = Raw::connect(&h);
    r.cmd(&[b"GET", b"k"]);
    assert_eq!(r.read_raw(), b"-NOAUTH Authentication required.\r\n");
    r.cmd(&[b"AUTH", b"wrong"]);
    assert_eq!(
        r.read_raw(),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    r.cmd(&[b"AUTH", b"secret"]);
    assert_eq!(r.read_raw(), b"+OK\r\n");
    let mut r = Raw::connect(&h);
    r.send(b"*11\r\n");
    assert_eq!(
        r.read_raw(),
        b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    );
}

#[test]
fn quit_replies_then_closes() {
    let h = start();
    let mut r = Raw::connect(&h);
    r.send(b"QUIT\r\nPING\r\n");
    assert_eq!(r.read_raw(), b"+OK\r\n");
    assert!(r.closed_within(Duration::from_secs(5)));
}
