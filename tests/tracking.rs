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
