//! DEBUG subcommands the test suites lean on: DIGEST, DIGEST-VALUE (Redis's
//! SHA1 dataset digest, byte for byte), PROTOCOL (one reply of each RESP
//! type), SET-ACTIVE-EXPIRE, SET-DISABLE-DENY-SCRIPTS, LOADAOF and PAUSE-CRON.

use sha1::{Digest, Sha1};

use crate::command::Args;
use crate::db::{Db, Value};
use crate::error::{text, CmdResult, Error};
use crate::server::Ctx;

/// Runs `DEBUG <sub> ...` when `sub` is one of these; None otherwise.
pub fn run(ctx: &mut Ctx, sub: &[u8], args: &Args) -> Option<CmdResult> {
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    if is("digest") && args.len() == 2 {
        let d = dataset_digest(&ctx.srv.ks.dbs);
        ctx.out().simple(&hex(&d));
    } else if is("digest-value") {
        let db = ctx.client.db;
        let digests: Vec<[u8; 20]> = (2..args.len())
            .map(|i| key_digest(&ctx.srv.ks.dbs[db], args.at(i)))
            .collect();
        let out = ctx.out();
        out.array(digests.len());
        for d in &digests {
            out.simple(&hex(d));
        }
    } else if is("protocol") && args.len() == 3 {
        return Some(protocol(ctx, args.at(2)));
    } else if is("set-active-expire") && args.len() == 3 {
        // Redis reads the flag with atoi: any non-zero number turns it on.
        ctx.srv.active_expire = atoi(args.at(2)) != 0;
        ctx.out().ok();
    } else if is("loadaof") {
        crate::persist::aof::debug_loadaof(ctx.srv);
        ctx.out().ok();
    } else if is("set-disable-deny-scripts") && args.len() == 3 {
        // Scripts may then call commands flagged noscript (a test hook).
        ctx.srv.script.allow_noscript = atoi(args.at(2)) != 0;
        ctx.out().ok();
    } else if is("pause-cron") && args.len() == 3 {
        ctx.srv.cron_paused = atoi(args.at(2)) != 0;
        ctx.out().ok();
    } else {
        return None;
    }
    Some(Ok(()))
}

/// C's `atoi`: optional sign and leading digits, 0 when there are none.
pub(super) fn atoi(b: &[u8]) -> i64 {
    let s = String::from_utf8_lossy(b);
    let s = s.trim_start();
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let n = digits.parse::<i64>().unwrap_or(0);
    if neg {
        -n
    } else {
        n
    }
}

/// Redis's object type number of a value (OBJ_STRING 0 ... OBJ_STREAM 6).
pub(super) fn redis_type(v: &Value) -> u32 {
    match v {
        Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
    }
}

fn hex(d: &[u8; 20]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Xors SHA1(data) into `digest`: the order of xored items does not matter.
fn xor_digest(digest: &mut [u8; 20], data: &[u8]) {
    let h = Sha1::digest(data);
    for (d, x) in digest.iter_mut().zip(h.iter()) {
        *d ^= x;
    }
}

/// digest = SHA1(digest xor SHA1(data)): the order of mixed items matters.
fn mix_digest(digest: &mut [u8; 20], data: &[u8]) {
    xor_digest(digest, data);
    let h = Sha1::digest(&digest[..]);
    digest.copy_from_slice(&h);
}

/// The digest of the whole dataset (DEBUG DIGEST); all zeros when empty.
fn dataset_digest(dbs: &[Db]) -> [u8; 20] {
    let mut fin = [0u8; 20];
    for (id, db) in dbs.iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        mix_digest(&mut fin, &(id as u32).to_be_bytes());
        for (key, _) in db.iter() {
            let mut d = [0u8; 20];
            mix_digest(&mut d, key);
            value_digest(db, key, &mut d);
            xor_digest(&mut fin, &d);
        }
    }
    fin
}

/// DEBUG DIGEST-VALUE of one key: zeros when absent (logically expired keys
/// still count, as Redis reads the dictionary directly).
fn key_digest(db: &Db, key: &[u8]) -> [u8; 20] {
    let mut d = [0u8; 20];
    value_digest(db, key, &mut d);
    d
}

/// Mixes the value at `key` (its type, elements and whether it has a TTL)
/// into `d`, as Redis's `xorObjectDigest`.
fn value_digest(db: &Db, key: &[u8], d: &mut [u8; 20]) {
    let Some(v) = db.peek(key) else {
        return;
    };
    mix_digest(d, &redis_type(v).to_be_bytes());
    match v {
        Value::Str(s) => mix_digest(d, &s.as_bytes()),
        Value::List(l) => l.iter().for_each(|e| mix_digest(d, e)),
        Value::Set(s) => s.iter().for_each(|m| xor_digest(d, &m.to_bytes())),
        Value::ZSet(z) => {
            for (member, score) in z.iter() {
                let mut e = [0u8; 20];
                mix_digest(&mut e, member);
                mix_digest(&mut e, crate::types::number::fmt_g(score, 17).as_bytes());
                xor_digest(d, &e);
            }
        }
        Value::Stream(s) => {
            for e in s.range(
                Default::default(),
                crate::types::stream::StreamId::MAX,
                false,
            ) {
                mix_digest(d, format!("{}.{}", e.id.ms, e.id.seq).as_bytes());
                let (mut t1, mut t2) = (itoa::Buffer::new(), itoa::Buffer::new());
                for (f, v) in e.fields() {
                    mix_digest(d, f.bytes(&mut t1));
                    mix_digest(d, v.bytes(&mut t2));
                }
            }
        }
        Value::Hash(h) => {
            for (field, value) in h.iter() {
                let mut e = [0u8; 20];
                mix_digest(&mut e, field);
                mix_digest(&mut e, value);
                xor_digest(d, &e);
            }
        }
    }
    if db.expire_at(key).is_some() {
        xor_digest(d, b"!!expire!!");
    }
}

/// DEBUG PROTOCOL <type>: one reply of the named RESP type.
fn protocol(ctx: &mut Ctx, name: &[u8]) -> CmdResult {
    let resp3 = ctx.client.reply.resp3();
    let out = ctx.out();
    match name.to_ascii_lowercase().as_slice() {
        b"string" => out.bulk(b"Hello World"),
        b"integer" => out.int(12345),
        // Redis's literal 3.141 (not pi).
        #[allow(clippy::approx_constant)]
        b"double" => out.double(3.141),
        b"bignum" => {
            let n = b"1234567999999999999999999999999999999";
            if resp3 {
                out.raw(b"(");
                out.raw(n);
                out.raw(b"\r\n");
            } else {
                out.bulk(n);
            }
        }
        b"null" => out.null(),
        b"array" | b"set" => {
            if name.eq_ignore_ascii_case(b"set") {
                out.set(3);
            } else {
                out.array(3);
            }
            (0..3).for_each(|j| out.int(j));
        }
        b"map" => {
            out.map(3);
            for j in 0..3 {
                out.int(j);
                out.boolean(j == 1);
            }
        }
        b"attrib" => {
            if resp3 {
                out.raw(b"|1\r\n");
                out.bulk(b"key-popularity");
                out.array(2);
                out.bulk(b"key:123");
                out.int(90);
            }
            // An attribute is no reply by itself: a real one follows.
            out.bulk(b"Some real reply following the attribute");
        }
        b"push" => {
            if !resp3 {
                return Err(Error::msg(text::RESP2_NOT_SUPPORTED));
            }
            let start = out.len();
            out.push(2);
            out.bulk(b"server-cpu-usage");
            out.int(42);
            let end = out.len();
            ctx.client.pushed.push((start, end));
            // A push is out of band: a normal reply follows for the caller.
            ctx.out().bulk(b"Some real reply following the push reply");
        }
        b"true" => out.boolean(true),
        b"false" => out.boolean(false),
        b"verbatim" => out.verbatim(b"This is a verbatim\nstring"),
        _ => return Err(Error::msg(text::DEBUG_PROTOCOL_TYPE)),
    }
    Ok(())
}
