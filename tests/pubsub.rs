//! Pub/sub over real sockets: fan-out to many subscribers with channels and
//! patterns, keyspace events for expiry, and slow subscribers cut off at the
//! output buffer limit.

mod common;

use std::time::Duration;

use oxidis::resp::value::Value;

fn bulk(v: &Value) -> Vec<u8> {
    v.as_bytes().expect("a string").to_vec()
}

fn items(v: Value) -> Vec<Value> {
    match v {
        Value::Array(a) | Value::Push(a) => a,
        other => panic!("not an array: {other:?}"),
    }
}

/// 60 subscribers (channel, pattern, both) on 2 channels; every message
/// reaches each in publish order and PUBLISH counts every delivery.
#[test]
fn fan_out_to_many_subscribers_with_patterns() {
    let h = common::start();
    let mut subs = Vec::new();
    for i in 0..60 {
        let mut r = common::Raw::connect(&h);
        match i % 3 {
            0 => {
                r.cmd(&[b"SUBSCRIBE", b"news.a"]);
                r.read();
            }
            1 => {
                r.cmd(&[b"PSUBSCRIBE", b"news.*"]);
                r.read();
            }
            _ => {
                r.cmd(&[b"SUBSCRIBE", b"news.a", b"news.b"]);
                r.read();
                r.read();
                r.cmd(&[b"PSUBSCRIBE", b"news.?"]);
                r.read();
            }
        }
        subs.push(r);
    }
    let mut p = common::Raw::connect(&h);
    const N: usize = 20;
    for m in 0..N {
        let msg = format!("m{m}");
        p.cmd(&[b"PUBLISH", b"news.a", msg.as_bytes()]);
        // 20 channel + 20 pattern + 20*(channel + pattern) deliveries.
        assert_eq!(p.read(), Value::Int(80));
        p.cmd(&[b"PUBLISH", b"news.b", msg.as_bytes()]);
        assert_eq!(p.read(), Value::Int(60));
    }
    p.cmd(&[b"PUBSUB", b"NUMSUB", b"news.a", b"news.b"]);
    assert_eq!(
        items(p.read()),
        vec![
            Value::Bulk(b"news.a".to_vec()),
            Value::Int(40),
            Value::Bulk(b"news.b".to_vec()),
            Value::Int(20)
        ]
    );
    p.cmd(&[b"PUBSUB", b"NUMPAT"]);
    assert_eq!(p.read(), Value::Int(2));
    for (i, s) in subs.iter_mut().enumerate() {
        let mut got: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let per = match i % 3 {
            0 => N,
            1 => 2 * N,
            _ => 4 * N,
        };
        for _ in 0..per {
            let f = items(s.read());
            let kind = bulk(&f[0]);
            let (ch, msg) = if kind == b"message" {
                (bulk(&f[1]), bulk(&f[2]))
            } else {
                assert_eq!(kind, b"pmessage");
                (bulk(&f[2]), bulk(&f[3]))
            };
            got.push((ch, msg));
        }
        // Per channel, messages arrive in publish order.
        for ch in [&b"news.a"[..], b"news.b"] {
            let seq: Vec<Vec<u8>> = got
                .iter()
                .filter(|(c, _)| c == ch)
                .map(|(_, m)| m.clone())
                .collect();
            let mut expect: Vec<Vec<u8>> = Vec::new();
            let copies = seq.len() / N;
            for m in 0..N {
                for _ in 0..copies {
                    expect.push(format!("m{m}").into_bytes());
                }
            }
            assert_eq!(seq, expect, "subscriber {i}");
        }
        assert!(s.try_read_raw(Duration::from_millis(20)).is_none());
    }
}

/// Active expiry (the cron, no client touching the key) raises `expired`.
#[test]
fn keyspace_events_for_expiry() {
    let h = common::start_with(&["--notify-keyspace-events", "KEx"]);
    let mut sub = common::Raw::connect(&h);
    sub.cmd(&[b"SUBSCRIBE", b"__keyevent@0__:expired"]);
    sub.read();
    sub.cmd(&[b"PSUBSCRIBE", b"__keyspace@0__:*"]);
    sub.read();
    let mut c = common::Raw::connect(&h);
    c.cmd(&[b"SET", b"soon", b"v", b"PX", b"30"]);
    c.read();
    // Nothing reads the key: only the cron can expire it.
    let f = items(sub.read());
    assert_eq!(
        f,
        vec![
            Value::Bulk(b"pmessage".to_vec()),
            Value::Bulk(b"__keyspace@0__:*".to_vec()),
            Value::Bulk(b"__keyspace@0__:soon".to_vec()),
            Value::Bulk(b"expired".to_vec()),
        ]
    );
    let f = items(sub.read());
    assert_eq!(
        f,
        vec![
            Value::Bulk(b"message".to_vec()),
            Value::Bulk(b"__keyevent@0__:expired".to_vec()),
            Value::Bulk(b"soon".to_vec()),
        ]
    );
    // Lazy expiry on access raises it too.
    c.cmd(&[b"SET", b"lazy", b"v", b"PX", b"1"]);
    c.read();
    std::thread::sleep(Duration::from_millis(5));
    c.cmd(&[b"GET", b"lazy"]);
    assert_eq!(c.read(), Value::Null);
    let f = items(sub.read());
    assert_eq!(bulk(&f[2]), b"__keyspace@0__:lazy");
}

/// A subscriber that stops reading is disconnected once its pending output
/// passes the pub/sub hard limit, and the server forgets it.
#[test]
fn slow_subscriber_is_disconnected_at_the_limit() {
    let h = common::start_with(&["--client-output-buffer-limit", "pubsub 256kb 128kb 60"]);
    let mut slow = common::Raw::connect(&h);
    slow.cmd(&[b"SUBSCRIBE", b"firehose"]);
    slow.read();
    let mut p = common::Raw::connect(&h);
    let payload = vec![b'x'; 64 * 1024];
    let mut gone = false;
    // Socket buffers absorb some megabytes; the server must cut the reader
    // off well before this bound.
    for _ in 0..4000 {
        p.cmd(&[b"PUBLISH", b"firehose", &payload]);
        if p.read() == Value::Int(0) {
            gone = true;
            break;
        }
    }
    assert!(gone, "slow subscriber still receiving");
    p.cmd(&[b"PUBSUB", b"NUMSUB", b"firehose"]);
    assert_eq!(
        items(p.read()),
        vec![Value::Bulk(b"firehose".to_vec()), Value::Int(0)]
    );
    assert!(slow.closed_within(Duration::from_secs(10)));
    // A subscriber that keeps up is not affected.
    let mut fast = common::Raw::connect(&h);
    fast.cmd(&[b"SUBSCRIBE", b"firehose"]);
    fast.read();
    for _ in 0..50 {
        p.cmd(&[b"PUBLISH", b"firehose", &payload]);
        assert_eq!(p.read(), Value::Int(1));
        let f = items(fast.read());
        assert_eq!(bulk(&f[2]).len(), payload.len());
    }
}

/// RESP3: a subscribed client runs any command; pushes interleave with replies.
#[test]
fn resp3_pushes_interleave_with_replies() {
    let h = common::start();
    let mut a = common::Raw::connect(&h);
    a.cmd(&[b"HELLO", b"3"]);
    a.read();
    a.cmd(&[b"SUBSCRIBE", b"c"]);
    assert_eq!(a.read_raw(), b">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n");
    a.cmd(&[b"SET", b"k", b"v"]);
    assert_eq!(a.read_raw(), b"+OK\r\n");
    a.cmd(&[b"PUBLISH", b"c", b"self"]);
    assert_eq!(
        a.read_raw(),
        b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$4\r\nself\r\n"
    );
    assert_eq!(a.read_raw(), b":1\r\n");
}

/// Over the soft limit (no hard limit) for longer than its seconds: the
/// subscriber is cut off too, and only then.
#[test]
fn slow_subscriber_is_disconnected_after_the_soft_limit_period() {
    let h = common::start_with(&["--client-output-buffer-limit", "pubsub 0 64kb 1"]);
    let mut slow = common::Raw::connect(&h);
    slow.cmd(&[b"SUBSCRIBE", b"firehose"]);
    slow.read();
    let mut p = common::Raw::connect(&h);
    let payload = vec![b'x'; 32 * 1024];
    let mut sent = 0;
    let mut gone = false;
    // Bounded: about 10 s of publishing at most; the limit needs 1-2 s.
    for _ in 0..5000 {
        p.cmd(&[b"PUBLISH", b"firehose", &payload]);
        if p.read() == Value::Int(0) {
            gone = true;
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(gone, "still subscribed after {sent} messages");
    assert!(slow.closed_within(Duration::from_secs(10)));
}
