//! Client-side caching over real sockets: invalidations reach a RESP3
//! client and a RESP2 client that redirects to a pub/sub connection.

mod common;

use oxidis::resp::value::Value;

/// The client id, read from HELLO's reply (works in either protocol).
fn client_id(r: &mut common::Raw, proto: &[u8]) -> i64 {
    r.cmd(&[b"HELLO", proto]);
    let pairs: Vec<(Value, Value)> = match r.read() {
        Value::Map(m) => m,
        Value::Array(a) => a.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect(),
        other => panic!("HELLO replied {other:?}"),
    };
    pairs
        .into_iter()
        .find_map(|(k, v)| match (k.as_bytes(), v) {
            (Some(b"id"), Value::Int(id)) => Some(id),
            _ => None,
        })
        .expect("id in HELLO")
}

#[test]
fn resp3_client_gets_invalidations() {
    let h = common::start();
    let mut a = common::Raw::connect(&h);
    client_id(&mut a, b"3");
    a.cmd(&[b"CLIENT", b"TRACKING", b"on"]);
    assert_eq!(a.read_raw(), b"+OK\r\n");
    a.cmd(&[b"GET", b"k1"]);
    assert_eq!(a.read_raw(), b"_\r\n");
    let mut b = common::Raw::connect(&h);
    b.cmd(&[b"SET", b"k1", b"v"]);
    b.read();
    assert_eq!(
        a.read_raw(),
        b">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk1\r\n"
    );
    // Reported once: the key is forgotten until read again.
    b.cmd(&[b"SET", b"k1", b"w"]);
    b.read();
    a.cmd(&[b"PING"]);
    assert_eq!(a.read_raw(), b"+PONG\r\n");
}

#[test]
fn resp2_client_redirects_invalidations_to_a_subscriber() {
    let h = common::start();
    let mut sink = common::Raw::connect(&h);
    let sink_id = client_id(&mut sink, b"2");
    sink.cmd(&[b"SUBSCRIBE", b"__redis__:invalidate"]);
    sink.read();
    let mut a = common::Raw::connect(&h);
    let id = sink_id.to_string();
    a.cmd(&[b"CLIENT", b"TRACKING", b"on", b"REDIRECT", id.as_bytes()]);
    assert_eq!(a.read_raw(), b"+OK\r\n");
    a.cmd(&[b"CLIENT", b"GETREDIR"]);
    assert_eq!(a.read(), Value::Int(sink_id));
    a.cmd(&[b"GET", b"x"]);
    a.read();
    a.cmd(&[b"GET", b"y"]);
    a.read();
    let mut w = common::Raw::connect(&h);
    w.cmd(&[b"SET", b"y", b"1"]);
    w.read();
    assert_eq!(
        sink.read_raw(),
        b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\ny\r\n"
    );
    // The tracking client's own write is reported to the redirect target too.
    a.cmd(&[b"SET", b"x", b"1"]);
    assert_eq!(a.read_raw(), b"+OK\r\n");
    assert_eq!(
        sink.read_raw(),
        b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nx\r\n"
    );
    // When the target leaves, the redirect is broken.
    drop(sink);
    // Wait (bounded) until the server has noticed the disconnect.
    let mut broken = false;
    for _ in 0..1000 {
        a.cmd(&[b"GET", b"x"]);
        a.read();
        w.cmd(&[b"SET", b"x", b"2"]);
        w.read();
        a.cmd(&[b"CLIENT", b"TRACKINGINFO"]);
        let info = a.read_raw();
        if info.windows(15).any(|w| w == b"broken_redirect") {
            broken = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(broken);
}

#[test]
fn resp3_redirect_target_gets_pushes() {
    let h = common::start();
    let mut sink = common::Raw::connect(&h);
    let sink_id = client_id(&mut sink, b"3").to_string();
    let mut a = common::Raw::connect(&h);
    a.cmd(&[
        b"CLIENT",
        b"TRACKING",
        b"on",
        b"BCAST",
        b"PREFIX",
        b"user:",
        b"REDIRECT",
        sink_id.as_bytes(),
    ]);
    assert_eq!(a.read_raw(), b"+OK\r\n");
    let mut w = common::Raw::connect(&h);
    w.cmd(&[b"SET", b"other", b"1"]);
    w.read();
    w.cmd(&[b"SET", b"user:1", b"1"]);
    w.read();
    assert_eq!(
        sink.read_raw(),
        b">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\nuser:1\r\n"
    );
}

/// CLIENT INFO flags/redir and INFO tracking counters. Expected values were
/// observed on redis-server 7.0.15 with the same sequence: `flags=tB redir=<id>`,
/// then `flags=tRB` once the redirect client leaves; `flags=N redir=-1` for a
/// client without tracking; INFO shows tracking_clients:1 and one prefix.
#[test]
fn client_info_and_info_show_tracking_state() {
    let h = common::start();
    let mut a = common::Raw::connect(&h);
    let mut b = common::Raw::connect(&h);
    b.cmd(&[b"CLIENT", b"ID"]);
    let bid = match b.read() {
        oxidis::resp::value::Value::Int(n) => n,
        other => panic!("{other:?}"),
    };
    let bid_s = bid.to_string();
    a.cmd(&[
        b"CLIENT",
        b"TRACKING",
        b"on",
        b"BCAST",
        b"PREFIX",
        b"user:",
        b"REDIRECT",
        bid_s.as_bytes(),
    ]);
    assert_eq!(a.read_raw(), b"+OK\r\n");
    let fields = |r: &mut common::Raw| -> Vec<String> {
        r.cmd(&[b"CLIENT", b"INFO"]);
        let v = r.read();
        let text = String::from_utf8(v.as_bytes().unwrap().to_vec()).unwrap();
        text.split_whitespace()
            .filter(|f| f.starts_with("flags=") || f.starts_with("redir="))
            .map(String::from)
            .collect()
    };
    assert_eq!(
        fields(&mut a),
        vec!["flags=tB".to_string(), format!("redir={bid}")]
    );
    b.cmd(&[b"QUIT"]);
    assert_eq!(b.read_raw(), b"+OK\r\n");
    assert!(b.closed_within(std::time::Duration::from_secs(5)));
    a.cmd(&[b"SET", b"user:1", b"x"]);
    assert_eq!(a.read_raw(), b"+OK\r\n");
    // The broken redirect shows once an invalidation found its target gone.
    let mut flags = fields(&mut a);
    for _ in 0..50 {
        if flags[0] == "flags=tRB" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        flags = fields(&mut a);
    }
    assert_eq!(flags, vec!["flags=tRB".to_string(), format!("redir={bid}")]);
    let mut c = common::Raw::connect(&h);
    assert_eq!(
        fields(&mut c),
        vec!["flags=N".to_string(), "redir=-1".to_string()]
    );
    c.cmd(&[b"INFO", b"everything"]);
    let info = String::from_utf8(c.read().as_bytes().unwrap().to_vec()).unwrap();
    let tracking: Vec<&str> = info.lines().filter(|l| l.starts_with("tracking")).collect();
    assert_eq!(
        tracking,
        vec![
            "tracking_clients:1",
            "tracking_total_keys:0",
            "tracking_total_items:0",
            "tracking_total_prefixes:1"
        ]
    );
}

// The suite's "Tracking gets notification on tracking table key eviction":
// keys evicted from the tracking table by a lower `tracking-table-max-keys`
// are reported even to a NOLOOP client (no client is running when the table
// is trimmed). redis-server 7.0.15 sends one message with one of the two keys.
#[test]
fn table_eviction_reaches_a_noloop_redirect() {
    let h = common::start();
    let mut sink = common::Raw::connect(&h);
    let sink_id = client_id(&mut sink, b"2").to_string();
    sink.cmd(&[b"SUBSCRIBE", b"__redis__:invalidate"]);
    sink.read();
    let mut r = common::Raw::connect(&h);
    for args in [
        &[
            &b"CLIENT"[..],
            b"TRACKING",
            b"on",
            b"REDIRECT",
            sink_id.as_bytes(),
            b"NOLOOP",
        ][..],
        &[b"MSET", b"key1{t}", b"1", b"key2{t}", b"2"],
        &[b"MGET", b"key1{t}", b"key2{t}"],
        &[b"CONFIG", b"SET", b"tracking-table-max-keys", b"1"],
    ] {
        r.cmd(args);
        r.read();
    }
    let msg = sink.read_raw();
    let one_of = |k: &str| {
        format!("*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$7\r\n{k}\r\n")
            .into_bytes()
    };
    assert!(
        msg == one_of("key1{t}") || msg == one_of("key2{t}"),
        "{msg:?}"
    );
}
