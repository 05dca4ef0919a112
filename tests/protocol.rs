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

/// One read holding whole requests and the start of the next: the whole ones
/// run from the shared read buffer, the rest is kept until it completes.
#[test]
fn a_read_ending_inside_a_frame_keeps_the_rest() {
    let h = start();
    let set = encode(&[b"SET", b"rest-key", b"rest-value"]);
    let get = encode(&[b"GET", b"rest-key"]);
    for cut in 1..get.len() {
        let mut r = Raw::connect(&h);
        let mut first = set.clone();
        first.extend_from_slice(&get[..cut]);
        r.send(&first);
        assert_eq!(r.read_raw(), b"+OK\r\n", "cut at {cut}");
        assert!(
            r.try_read_raw(Duration::from_millis(5)).is_none(),
            "reply before frame complete (cut {cut})"
        );
        r.send(&get[cut..]);
        assert_eq!(r.read_raw(), b"$10\r\nrest-value\r\n", "cut at {cut}");
    }
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

/// `client-query-buffer-limit`: input a client sends that is not parsed
/// into arguments yet counts; past the limit the client is closed (no reply,
/// a log line), as redis-server 7.0.15 does with the same requests.
#[test]
fn query_buffer_limit_closes_clients_that_send_too_much_unparsed_input() {
    let h = common::start_with(&["--client-query-buffer-limit", "1mb"]);
    // Blocked in BLPOP and still sending: everything sent stays unparsed.
    let mut blocked = Raw::connect(&h);
    blocked.send(b"BLPOP q 0\r\n");
    let mut other = Raw::connect(&h);
    other.cmd(&[b"PING"]);
    assert_eq!(other.read_raw(), b"+PONG\r\n");
    let chunk = b"PING\r\n".repeat(10_000);
    for _ in 0..40 {
        if std::io::Write::write_all(&mut blocked.s, &chunk).is_err() {
            break;
        }
    }
    assert!(blocked.closed_within(Duration::from_secs(10)));
    // One argument bigger than the limit.
    let mut big = Raw::connect(&h);
    let mut req = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n".to_vec();
    req.resize(req.len() + 2_000_002, b'x');
    let _ = std::io::Write::write_all(&mut big.s, &req);
    assert!(big.closed_within(Duration::from_secs(10)));
    // Arguments already parsed do not count: 7 MB of one-byte arguments pass.
    let mut many = Raw::connect(&h);
    let mut req = b"*1000001\r\n$3\r\nDEL\r\n".to_vec();
    for _ in 0..1_000_000 {
        req.extend_from_slice(b"$1\r\na\r\n");
    }
    many.send(&req);
    assert_eq!(many.read_raw(), b":0\r\n");
    // Neither does a pipeline, run as it is read.
    let mut pipe = Raw::connect(&h);
    pipe.send(&b"PING\r\n".repeat(300_000));
    for _ in 0..300_000 {
        assert_eq!(pipe.read_raw(), b"+PONG\r\n");
    }
    other.cmd(&[b"CLIENT", b"LIST"]);
    let list = other.read_raw();
    assert_eq!(
        String::from_utf8_lossy(&list).matches("id=").count(),
        3,
        "{}",
        String::from_utf8_lossy(&list)
    );
}

/// Inline requests split as Redis's `sdssplitargs` does: form feed and
/// vertical tab separate words only before a word starts, a quote may open
/// in the middle of a word. Replies as redis-server 7.0.15 gave them.
#[test]
fn inline_requests_split_as_redis_does() {
    let h = start();
    let mut r = Raw::connect(&h);
    r.send(b"ECHO\x0ca\r\n\x0c\x0bPING\r\nECHO a\x0bb\r\nECHO a\"b c\"\r\nECHO a'b c'\r\nECHO \"a\"\x0cb\r\n");
    assert_eq!(
        r.read_raw(),
        b"-ERR unknown command 'ECHO\x0ca', with args beginning with: \r\n"
    );
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    assert_eq!(r.read_raw(), b"$3\r\na\x0bb\r\n");
    assert_eq!(r.read_raw(), b"$4\r\nab c\r\n");
    assert_eq!(r.read_raw(), b"$4\r\nab c\r\n");
    assert_eq!(
        r.read_raw(),
        b"-ERR wrong number of arguments for 'echo' command\r\n"
    );
}

/// Redis finds the end of a request line with `strchr`, which stops at a
/// NUL byte: a line holding one never ends, and nothing after it runs, until
/// more than 64 KiB wait (then the inline request is too big). As
/// redis-server 7.0.15 does with the same bytes.
#[test]
fn a_nul_byte_keeps_a_request_line_from_ending() {
    let h = start();
    let mut r = Raw::connect(&h);
    r.send(b"PING\r\n\0PING\r\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    assert!(r.try_read_raw(Duration::from_millis(200)).is_none());
    let mut r = Raw::connect(&h);
    r.send(b"*1\r\n$4\0\r\nPING\r\n");
    assert!(r.try_read_raw(Duration::from_millis(200)).is_none());
    let mut r = Raw::connect(&h);
    r.send(b"PING\0\r\n");
    r.send(&b"PING\r\n".repeat(12_000));
    assert_eq!(
        r.read_raw(),
        b"-ERR Protocol error: too big inline request\r\n"
    );
    assert!(r.closed_within(Duration::from_secs(5)));
}

/// The byte found where a bulk header must start goes out as it came (C's
/// `%c`), not as UTF-8; redis-server 7.0.15 sends the same.
#[test]
fn a_protocol_error_names_the_raw_byte() {
    let h = start();
    let mut r = Raw::connect(&h);
    r.send(b"*1\r\n\xff\r\n");
    assert_eq!(
        r.read_raw(),
        b"-ERR Protocol error: expected '$', got '\xff'\r\n"
    );
}
