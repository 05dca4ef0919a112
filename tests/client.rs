//! A real Rust Redis client (the `redis` crate) over TCP and a unix socket, in RESP2 and RESP3.

mod common;

use redis::{Commands, Value};

fn roundtrip(con: &mut redis::Connection) {
    let _: () = con.set("greeting", "hello").unwrap();
    let v: String = con.get("greeting").unwrap();
    assert_eq!(v, "hello");
    let missing: Option<String> = con.get("nope").unwrap();
    assert_eq!(missing, None);
    let (a, b): (String, String) = redis::pipe()
        .cmd("SET")
        .arg("p")
        .arg("1")
        .ignore()
        .cmd("GET")
        .arg("p")
        .cmd("ECHO")
        .arg("x")
        .query(con)
        .unwrap();
    assert_eq!((a.as_str(), b.as_str()), ("1", "x"));
    let pong: String = redis::cmd("PING").query(con).unwrap();
    assert_eq!(pong, "PONG");
    let err = redis::cmd("NOSUCHCMD")
        .arg("a")
        .query::<Value>(con)
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown command 'NOSUCHCMD'"),
        "{err}"
    );
}

#[test]
fn tcp_resp2_and_resp3() {
    let h = common::start();
    let mut c2 = redis::Client::open(format!("redis://{}/", h.addr()))
        .unwrap()
        .get_connection()
        .unwrap();
    roundtrip(&mut c2);
    let mut c3 = redis::Client::open(format!("redis://{}/?protocol=resp3", h.addr()))
        .unwrap()
        .get_connection()
        .unwrap();
    roundtrip(&mut c3);
    // HELLO 3 reply is a map in RESP3.
    let hello: Value = redis::cmd("HELLO").arg(3).query(&mut c3).unwrap();
    assert!(matches!(hello, Value::Map(_)), "{hello:?}");
}

#[test]
fn unix_socket() {
    let dir = std::env::temp_dir().join(format!("oxidis-unix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("oxidis.sock");
    let args: Vec<String> = [
        "--port",
        "0",
        "--unixsocket",
        path.to_str().unwrap(),
        "--unixsocketperm",
        "700",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let h = oxidis::start(oxidis::config::from_args(&args).unwrap()).unwrap();
    let mut con = redis::Client::open(format!("redis+unix://{}", path.display()))
        .unwrap()
        .get_connection()
        .unwrap();
    roundtrip(&mut con);
    let mut c3 = redis::Client::open(format!("redis+unix://{}?protocol=resp3", path.display()))
        .unwrap()
        .get_connection()
        .unwrap();
    roundtrip(&mut c3);
    drop(h);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn password_via_client_url() {
    let h = common::start_with(&["--requirepass", "s3cret"]);
    let mut con = redis::Client::open(format!("redis://:s3cret@{}/", h.addr()))
        .unwrap()
        .get_connection()
        .unwrap();
    roundtrip(&mut con);
    let mut c3 = redis::Client::open(format!(
        "redis://default:s3cret@{}/?protocol=resp3",
        h.addr()
    ))
    .unwrap()
    .get_connection()
    .unwrap();
    roundtrip(&mut c3);
    let bad = redis::Client::open(format!("redis://:wrong@{}/", h.addr()))
        .unwrap()
        .get_connection();
    assert!(bad.is_err());
}

#[test]
fn many_concurrent_clients() {
    let h = common::start();
    let addr = h.addr();
    let threads: Vec<_> = (0..20)
        .map(|t| {
            std::thread::spawn(move || {
                let mut con = redis::Client::open(format!("redis://{addr}/"))
                    .unwrap()
                    .get_connection()
                    .unwrap();
                for i in 0..200 {
                    let k = format!("t{t}:{i}");
                    let _: () = con.set(&k, i).unwrap();
                    let v: i64 = con.get(&k).unwrap();
                    assert_eq!(v, i);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}
