//! The exact opening sequences popular clients send, replayed as raw bytes;
//! every reply is compared byte for byte with what Redis answers (7.0.15 for
//! HELLO, INFO and AUTH; 7.2 for CLIENT SETINFO, which 7.0 lacks).

mod common;

use common::{encode, start, start_with, Raw};

fn hello3(id: i64) -> Vec<u8> {
    format!(
        "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:{id}\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
    )
    .into_bytes()
}

fn id_of(r: &mut Raw) -> i64 {
    r.cmd(&[b"CLIENT", b"ID"]);
    let raw = r.read_raw();
    String::from_utf8_lossy(&raw[1..raw.len() - 2])
        .parse()
        .unwrap()
}

#[test]
fn redis_py_and_ioredis_hello3() {
    let h = start();
    let mut probe = Raw::connect(&h);
    let next = id_of(&mut probe) + 1;
    let mut r = Raw::connect(&h);
    // redis-py 5+/8 with protocol=3 and ioredis 5 with RESP3: HELLO 3 first.
    r.cmd(&[b"HELLO", b"3"]);
    assert_eq!(r.read_raw(), hello3(next));
    // redis-py then sends its library name and version.
    r.send(
        &[
            encode(&[b"CLIENT", b"SETINFO", b"LIB-NAME", b"redis-py"]),
            encode(&[b"CLIENT", b"SETINFO", b"LIB-VER", b"5.0.1"]),
        ]
        .concat(),
    );
    assert_eq!(r.read_raw(), b"+OK\r\n");
    assert_eq!(r.read_raw(), b"+OK\r\n");
    // RESP3 replies from then on: a null is `_`.
    r.cmd(&[b"GET", b"missing"]);
    assert_eq!(r.read_raw(), b"_\r\n");
}

#[test]
fn hello3_with_auth_and_errors() {
    let h = start_with(&["--requirepass", "pw"]);
    let mut probe = Raw::connect(&h);
    probe.cmd(&[b"AUTH", b"pw"]);
    assert_eq!(probe.read_raw(), b"+OK\r\n");
    let next = id_of(&mut probe) + 1;
    let mut r = Raw::connect(&h);
    // Without credentials: NOAUTH (clients fall back only on NOPROTO).
    r.cmd(&[b"HELLO", b"3"]);
    assert_eq!(r.read_raw(), b"-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n".to_vec());
    r.cmd(&[b"HELLO", b"3", b"AUTH", b"default", b"wrong"]);
    assert_eq!(
        r.read_raw(),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n".to_vec()
    );
    r.cmd(&[b"HELLO", b"3", b"AUTH", b"default", b"pw"]);
    assert_eq!(r.read_raw(), hello3(next));
    // An unsupported version answers NOPROTO, the word clients check before falling back.
    r.cmd(&[b"HELLO", b"4"]);
    assert_eq!(
        r.read_raw(),
        b"-NOPROTO unsupported protocol version\r\n".to_vec()
    );
}

#[test]
fn go_redis_v9_pipelined_opening() {
    let h = start_with(&["--requirepass", "pw"]);
    let mut probe = Raw::connect(&h);
    probe.cmd(&[b"AUTH", b"pw"]);
    probe.read_raw();
    let next = id_of(&mut probe) + 1;
    let mut r = Raw::connect(&h);
    // go-redis v9 sends these three in one write.
    r.send(
        &[
            encode(&[b"HELLO", b"3", b"AUTH", b"default", b"pw"]),
            encode(&[b"CLIENT", b"SETINFO", b"LIB-NAME", b"go-redis(,go1.22.1)"]),
            encode(&[b"CLIENT", b"SETINFO", b"LIB-VER", b"9.5.1"]),
        ]
        .concat(),
    );
    assert_eq!(r.read_raw(), hello3(next));
    assert_eq!(r.read_raw(), b"+OK\r\n");
    assert_eq!(r.read_raw(), b"+OK\r\n");
    r.cmd(&[b"CLIENT", b"INFO"]);
    let info = r.read_raw();
    let text = String::from_utf8_lossy(&info);
    assert!(text.starts_with("=") && text.contains("txt:id="), "{text}");
    assert!(
        text.ends_with(" resp=3 lib-name=go-redis(,go1.22.1) lib-ver=9.5.1\n\r\n"),
        "{text}"
    );
}

#[test]
fn ioredis_resp2_auth_then_info_loading() {
    let h = start_with(&["--requirepass", "pw"]);
    let mut r = Raw::connect(&h);
    // ioredis (RESP2) authenticates, then reads INFO and waits while `loading:1`.
    r.send(&[encode(&[b"AUTH", b"pw"]), encode(&[b"INFO"])].concat());
    assert_eq!(r.read_raw(), b"+OK\r\n");
    let info = r.read_raw();
    let text = String::from_utf8_lossy(&info);
    assert!(text.starts_with('$'), "RESP2 INFO is a bulk string");
    assert!(text.contains("\r\nloading:0\r\n"));
    assert!(text.contains("\r\nredis_version:7.0.15\r\n"));
    assert!(text.contains("\r\nrole:master\r\n"));
    // RESP3 INFO is a verbatim string.
    r.cmd(&[b"HELLO", b"3"]);
    r.read_raw();
    r.cmd(&[b"INFO", b"persistence"]);
    let info = r.read_raw();
    assert!(info.starts_with(b"="), "{}", String::from_utf8_lossy(&info));
    assert!(String::from_utf8_lossy(&info).contains("txt:# Persistence\r\nloading:0\r\n"));
}

#[test]
fn ping_and_select_before_hello() {
    // Older clients (redis-py RESP2, jedis) send SELECT and CLIENT SETNAME first.
    let h = start();
    let mut r = Raw::connect(&h);
    r.send(
        &[
            encode(&[b"CLIENT", b"SETNAME", b"app"]),
            encode(&[b"SELECT", b"2"]),
            encode(&[b"PING"]),
        ]
        .concat(),
    );
    assert_eq!(r.read_raw(), b"+OK\r\n");
    assert_eq!(r.read_raw(), b"+OK\r\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
}

#[test]
fn lettuce_hello_with_setname() {
    let h = start_with(&["--requirepass", "pw"]);
    let mut probe = Raw::connect(&h);
    probe.cmd(&[b"AUTH", b"pw"]);
    probe.read_raw();
    let next = id_of(&mut probe) + 1;
    let mut r = Raw::connect(&h);
    // Lettuce 6: HELLO 3 AUTH user pass SETNAME name, then its commands.
    r.cmd(&[
        b"HELLO",
        b"3",
        b"AUTH",
        b"default",
        b"pw",
        b"SETNAME",
        b"lettuce#1",
    ]);
    assert_eq!(r.read_raw(), hello3(next));
    r.cmd(&[b"CLIENT", b"GETNAME"]);
    assert_eq!(r.read_raw(), b"$9\r\nlettuce#1\r\n");
    // A bad name fails the whole HELLO, as in Redis.
    let mut s = Raw::connect(&h);
    s.cmd(&[
        b"HELLO",
        b"3",
        b"AUTH",
        b"default",
        b"pw",
        b"SETNAME",
        b"bad name",
    ]);
    assert_eq!(
        s.read_raw(),
        b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n".to_vec()
    );
    s.cmd(&[b"PING"]);
    assert_eq!(s.read_raw(), b"+PONG\r\n");
}
