//! RDB loading: a fuzzed RESTORE payload or whole RDB image behind a valid
//! version and CRC64, then every read of what loaded, a DUMP → RESTORE round
//! trip and writes into it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxidis::persist::rdb::{crc64, load_dataset};
use oxidis_fuzz::{harness, run};

/// Reads and writes of every type, run on each loaded key: a value that
/// decoded but breaks an invariant (a listpack with a wrong count, a set
/// with duplicates, an unsorted zset) fails here, not in RESTORE.
const OPS: &[&[&[u8]]] = &[
    &[b"TYPE"],
    &[b"OBJECT", b"ENCODING"],
    &[b"MEMORY", b"USAGE"],
    &[b"GET"],
    &[b"STRLEN"],
    &[b"APPEND", b"x"],
    &[b"LRANGE", b"0", b"-1"],
    &[b"LINDEX", b"-1"],
    &[b"LPOS", b"a"],
    &[b"LPUSH", b"a", b"b"],
    &[b"RPOP", b"2"],
    &[b"LINSERT", b"BEFORE", b"a", b"c"],
    &[b"HGETALL"],
    &[b"HGET", b"a"],
    &[b"HRANDFIELD", b"-5", b"WITHVALUES"],
    &[b"HSET", b"a", b"1", b"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", b"2"],
    &[b"HDEL", b"a"],
    &[b"SMEMBERS"],
    &[b"SISMEMBER", b"1"],
    &[b"SRANDMEMBER", b"-5"],
    &[b"SADD", b"1", b"a"],
    &[b"SPOP", b"2"],
    &[b"ZRANGE", b"0", b"-1", b"WITHSCORES"],
    &[b"ZRANGEBYLEX", b"-", b"+"],
    &[b"ZRANGEBYSCORE", b"-inf", b"+inf"],
    &[b"ZRANK", b"a"],
    &[b"ZSCORE", b"a"],
    &[b"ZADD", b"1", b"a", b"2.5", b"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"],
    &[b"ZREM", b"a"],
    &[b"ZPOPMIN", b"2"],
    &[b"PFCOUNT"],
    &[b"DUMP"],
];

fuzz_target!(|data: &[u8]| {
    let Some((&flags, body)) = data.split_first() else {
        return;
    };
    // Bit 7 picks the small encoding limits (listpacks convert sooner).
    let mut h = harness(flags & 0x80);
    let v = |s: &[u8]| s.to_vec();
    let keys: Vec<(usize, Vec<u8>)> = if flags & 1 == 0 {
        // A RESTORE payload: the body, RDB version 1..=10, CRC64.
        let mut p = body.to_vec();
        p.extend_from_slice(&u16::from(1 + (flags >> 1) % 10).to_le_bytes());
        let crc = crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        run(&mut h, &[v(b"RESTORE"), v(b"k"), v(b"0"), p, v(b"REPLACE")]);
        vec![(0, v(b"k"))]
    } else {
        // A whole file: magic, version, the body, EOF and CRC64.
        let mut p = format!("REDIS{:04}", 1 + (flags >> 1) % 12).into_bytes();
        p.extend_from_slice(body);
        p.push(0xff);
        let crc = crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        if load_dataset(&mut h.srv, &p).is_err() {
            return;
        }
        let dbs = h.srv.ks.dbs.iter().enumerate();
        dbs.flat_map(|(i, db)| db.iter().map(move |(k, _)| (i, k.to_vec())))
            .take(8)
            .collect()
    };
    for (db, key) in keys {
        run(&mut h, &[v(b"SELECT"), db.to_string().into_bytes()]);
        // What loaded dumps to a payload that restores to the same value
        // (same digest: hash-table order may differ, as in Redis).
        if let Some(dump) = h.run(&[b"DUMP", &key]) {
            if let Some(payload) = bulk(&dump) {
                let again = [&b"RESTORE"[..], b"k2", b"0", payload, b"REPLACE"];
                assert_eq!(h.run(&again).as_deref(), Some(&b"+OK\r\n"[..]), "our DUMP was refused");
                let a = h.run(&[b"DEBUG", b"DIGEST-VALUE", &key]);
                let b = h.run(&[b"DEBUG", b"DIGEST-VALUE", b"k2"]);
                assert_eq!(a, b, "DUMP → RESTORE changed the value");
            }
        }
        for op in OPS {
            let mut argv: Vec<Vec<u8>> = vec![op[0].to_vec()];
            if op[0] == b"OBJECT" || op[0] == b"MEMORY" {
                argv.push(op[1].to_vec());
                argv.push(key.clone());
            } else {
                argv.push(key.clone());
                argv.extend(op[1..].iter().map(|a| a.to_vec()));
            }
            if !run(&mut h, &argv) {
                break;
            }
        }
    }
});

/// The bytes of a RESP bulk string reply, if that is what `reply` is.
fn bulk(reply: &[u8]) -> Option<&[u8]> {
    let rest = reply.strip_prefix(b"$")?;
    let nl = rest.iter().position(|&b| b == b'\n')?;
    let len: usize = std::str::from_utf8(&rest[..nl - 1]).ok()?.parse().ok()?;
    rest.get(nl + 1..nl + 1 + len)
}
