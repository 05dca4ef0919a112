//! RDB and DUMP interop with a real redis-server 7.0.15, both ways.

mod common;

use common::real_redis::RedisServer;

/// The helper starts a real redis-server that answers, in its own directory.
#[test]
fn real_redis_starts_and_answers() {
    let r = RedisServer::start();
    let mut c = r.conn();
    let v: String = redis::cmd("SET").arg("k").arg("v").query(&mut c).unwrap();
    assert_eq!(v, "OK");
    let ver: String = redis::cmd("INFO").arg("server").query(&mut c).unwrap();
    assert!(ver.contains("redis_version:7.0.15"), "{ver}");
    let rdb = r.save_rdb();
    assert_eq!(&rdb[..9], b"REDIS0010");
}
