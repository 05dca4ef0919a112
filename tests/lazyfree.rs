//! Lazy free beside a real redis-server: UNLINK, FLUSHALL/FLUSHDB ASYNC and the `lazyfree-lazy-*` parameters, seen through INFO's `lazyfree_pending_objects` / `lazyfreed_objects`.
//!
//! Each test runs one script against both servers and compares what it
//! observed: replies, and `lazyfreed_objects` once `lazyfree_pending_objects`
//! is back to 0 (the counts say which frees went to the background: only
//! values whose free effort is above 64, and whole databases).

mod common;

use common::process::Oxidis;
use common::real_redis::RedisServer;
use redis::Connection;

fn info_field(c: &mut Connection, section: &str, name: &str) -> String {
    let s: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO {section}"))
        .to_string()
}

/// Waits until nothing is left to free (no time limit: a free that never
/// ends hangs the test, and the harness reports it).
fn wait_lazyfree_done(c: &mut Connection) {
    while info_field(c, "memory", "lazyfree_pending_objects") != "0" {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// `lazyfreed_objects` once the background work is done.
fn lazyfreed(c: &mut Connection) -> i64 {
    wait_lazyfree_done(c);
    info_field(c, "memory", "lazyfreed_objects")
        .parse()
        .unwrap()
}

fn cmd(c: &mut Connection, args: &[&str]) -> String {
    let mut k = redis::cmd(args[0]);
    for a in &args[1..] {
        k.arg(*a);
    }
    match k.query::<redis::Value>(c) {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error: {e}"),
    }
}

/// SADD of `n` members that are not integers (a hashtable-encoded set of
/// free effort `n`).
fn sadd(c: &mut Connection, key: &str, n: usize) {
    let mut k = redis::cmd("SADD");
    k.arg(key);
    for i in 0..n {
        k.arg(format!("m{i}"));
    }
    let _: i64 = k.query(c).unwrap();
}

/// What a script observed, step by step.
type Log = Vec<(String, String)>;

/// Runs `script` on both servers, from CONFIG RESETSTAT; each step's
/// observations must agree.
fn same_on_both(script: impl Fn(&mut Connection, &mut Log)) {
    let redis = RedisServer::start();
    let ox = common::start();
    let run = |c: &mut Connection| {
        let mut log = Log::new();
        cmd(c, &["CONFIG", "RESETSTAT"]);
        script(c, &mut log);
        log
    };
    let want = run(&mut redis.conn());
    let got = run(&mut common::conn(&ox));
    assert_eq!(got, want);
}

fn step(log: &mut Log, label: &str, value: impl ToString) {
    log.push((label.to_string(), value.to_string()));
}

/// Only values above the threshold are freed in the background: a set of 64
/// members is freed inline, one of 65 lazily; strings, small encodings and
/// plain DEL never; DEL with `lazyfree-lazy-user-del yes` does.
#[test]
fn unlink_and_del_free_big_values_in_the_background() {
    same_on_both(|c, log| {
        step(log, "start", lazyfreed(c));
        cmd(c, &["SET", "s", "v"]);
        sadd(c, "small", 64);
        sadd(c, "big", 65);
        cmd(c, &["HSET", "packed", "f", "v"]);
        cmd(c, &["ZADD", "zpacked", "1", "a"]);
        step(
            log,
            "unlink 4",
            cmd(c, &["UNLINK", "s", "small", "packed", "zpacked", "nokey"]),
        );
        step(log, "after small", lazyfreed(c));
        step(log, "unlink big", cmd(c, &["UNLINK", "big"]));
        step(log, "exists big", cmd(c, &["EXISTS", "big"]));
        step(log, "after big", lazyfreed(c));
        sadd(c, "big", 1000);
        step(log, "del", cmd(c, &["DEL", "big"]));
        step(log, "after del", lazyfreed(c));
        cmd(c, &["CONFIG", "SET", "lazyfree-lazy-user-del", "yes"]);
        sadd(c, "big", 1000);
        step(log, "lazy del", cmd(c, &["DEL", "big"]));
        sadd(c, "big2", 1000);
        step(log, "lazy del 2", cmd(c, &["DEL", "big2", "big"]));
        step(log, "after lazy del", lazyfreed(c));
        cmd(c, &["CONFIG", "SET", "lazyfree-lazy-user-del", "no"]);
        // Other types: a hashtable hash, a skiplist sorted set and a long
        // list (free effort: fields, members, list nodes).
        let mut h = redis::cmd("HSET");
        let mut z = redis::cmd("ZADD");
        let mut l = redis::cmd("RPUSH");
        h.arg("h");
        z.arg("z");
        l.arg("l");
        for i in 0..200 {
            h.arg(format!("f{i}")).arg("v");
            z.arg(i).arg(format!("m{i}"));
        }
        for i in 0..100_000 {
            l.arg(format!("element-{i}"));
        }
        let _: () = h.query(c).unwrap();
        let _: () = z.query(c).unwrap();
        let _: () = l.query(c).unwrap();
        step(log, "unlink types", cmd(c, &["UNLINK", "h", "z", "l"]));
        step(log, "after types", lazyfreed(c));
        cmd(c, &["CONFIG", "RESETSTAT"]);
        step(log, "resetstat", lazyfreed(c));
    });
}

/// FLUSHALL / FLUSHDB ASYNC free whole databases in the background, one
/// object per key; SYNC and the default (`lazyfree-lazy-user-flush no`)
/// free inline; `lazyfree-lazy-user-flush yes` makes the bare form async.
#[test]
fn flush_async_frees_databases_in_the_background() {
    same_on_both(|c, log| {
        let fill = |c: &mut Connection, db: &str, n: usize| {
            cmd(c, &["SELECT", db]);
            for i in 0..n {
                cmd(c, &["SET", &format!("k{i}"), "v"]);
            }
            cmd(c, &["PEXPIRE", "k0", "100000"]);
        };
        fill(c, "1", 7);
        fill(c, "0", 10);
        step(log, "flushall async", cmd(c, &["FLUSHALL", "ASYNC"]));
        step(log, "dbsize", cmd(c, &["DBSIZE"]));
        step(log, "after flushall async", lazyfreed(c));
        fill(c, "0", 5);
        step(log, "flushdb async", cmd(c, &["FLUSHDB", "ASYNC"]));
        step(log, "after flushdb async", lazyfreed(c));
        fill(c, "0", 5);
        step(log, "flushall sync", cmd(c, &["FLUSHALL", "SYNC"]));
        fill(c, "0", 5);
        step(log, "flushdb", cmd(c, &["FLUSHDB"]));
        step(log, "after sync", lazyfreed(c));
        cmd(c, &["CONFIG", "SET", "lazyfree-lazy-user-flush", "yes"]);
        fill(c, "0", 6);
        step(log, "flushall lazy", cmd(c, &["FLUSHALL"]));
        fill(c, "0", 3);
        step(log, "flushdb lazy", cmd(c, &["FLUSHDB"]));
        step(log, "after user-flush", lazyfreed(c));
        fill(c, "0", 4);
        step(log, "flushall sync wins", cmd(c, &["FLUSHALL", "SYNC"]));
        step(log, "after sync wins", lazyfreed(c));
        step(log, "flush empty async", cmd(c, &["FLUSHALL", "ASYNC"]));
        step(log, "after empty", lazyfreed(c));
        step(log, "bad flag", cmd(c, &["FLUSHALL", "LAZY"]));
        step(log, "bad arity", cmd(c, &["FLUSHDB", "ASYNC", "SYNC"]));
        cmd(c, &["CONFIG", "SET", "lazyfree-lazy-user-flush", "no"]);
    });
}

/// Implicit deletions follow `lazyfree-lazy-server-del` (an overwrite by
/// SET, RENAME over a key, a *STORE target), expiry by EXPIRE with a past
/// time follows `lazyfree-lazy-expire`.
#[test]
fn server_del_and_expire_follow_their_parameters() {
    same_on_both(|c, log| {
        for lazy in ["no", "yes"] {
            cmd(c, &["CONFIG", "SET", "lazyfree-lazy-server-del", lazy]);
            sadd(c, "big", 500);
            step(log, "set over", cmd(c, &["SET", "big", "x"]));
            cmd(c, &["DEL", "big"]);
            sadd(c, "big", 500);
            cmd(c, &["SET", "src", "v"]);
            step(log, "rename over", cmd(c, &["RENAME", "src", "big"]));
            cmd(c, &["DEL", "big"]);
            sadd(c, "big", 500);
            sadd(c, "other", 3);
            step(log, "store over", cmd(c, &["SUNIONSTORE", "big", "other"]));
            step(log, &format!("server-del {lazy}"), lazyfreed(c));
            cmd(c, &["CONFIG", "SET", "lazyfree-lazy-expire", lazy]);
            sadd(c, "exp", 500);
            step(log, "expire past", cmd(c, &["EXPIRE", "exp", "-1"]));
            step(log, "exists", cmd(c, &["EXISTS", "exp"]));
            step(log, &format!("expire {lazy}"), lazyfreed(c));
            cmd(c, &["FLUSHALL", "SYNC"]);
        }
        cmd(c, &["CONFIG", "SET", "lazyfree-lazy-server-del", "no"]);
        cmd(c, &["CONFIG", "SET", "lazyfree-lazy-expire", "no"]);
    });
}

/// Memory freed on the freeing thread leaves `used_memory` (a process-wide
/// count), as soon as `lazyfree_pending_objects` is 0: no waiting, no race
/// (Redis's "UNLINK can reclaim memory in background").
#[test]
fn used_memory_drops_once_the_background_free_is_done() {
    let ox = Oxidis::start();
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{}/", ox.port))
        .unwrap()
        .get_connection()
        .unwrap();
    let used =
        |c: &mut Connection| -> i64 { info_field(c, "memory", "used_memory").parse().unwrap() };
    let before = used(&mut c);
    sadd(&mut c, "myset", 100_000);
    let peak = used(&mut c);
    assert!(peak > before + 1_000_000, "{before} -> {peak}");
    let n: i64 = redis::cmd("UNLINK").arg("myset").query(&mut c).unwrap();
    assert_eq!(n, 1);
    wait_lazyfree_done(&mut c);
    let after = used(&mut c);
    assert!(after < before + 500_000, "{before} -> {peak} -> {after}");
    sadd(&mut c, "myset", 100_000);
    let peak = used(&mut c);
    let _: () = redis::cmd("FLUSHALL").arg("ASYNC").query(&mut c).unwrap();
    wait_lazyfree_done(&mut c);
    let after = used(&mut c);
    assert!(after < before + 500_000, "{before} -> {peak} -> {after}");
    assert_eq!(info_field(&mut c, "memory", "lazyfreed_objects"), "2");
}

/// SHA1 of `return 3` and `return 7` (Python's hashlib).
const SHA_RETURN_3: &str = "09d3822de862f46d784e6a36848b4f0736dda47a";
const SHA_RETURN_7: &str = "59b6ab2fbe0ee4b25733de0f62e6cda4899ef8e9";

/// SCRIPT LOAD of `n` scripts, from `return <from>` on.
fn load_scripts(c: &mut Connection, from: usize, n: usize) {
    for i in from..from + n {
        cmd(c, &["SCRIPT", "LOAD", &format!("return {i}")]);
    }
}

/// SCRIPT FLUSH ASYNC hands a cache of more than 64 scripts to the freeing
/// thread, one object per script (Redis's `freeLuaScriptsAsync`); 64
/// scripts, SYNC and the bare form are freed inline, unless
/// `lazyfree-lazy-user-flush yes` makes the bare form async. The cache
/// starts again empty, in a working VM.
#[test]
fn script_flush_async_frees_the_cache_in_the_background() {
    same_on_both(|c, log| {
        load_scripts(c, 0, 64);
        step(log, "async 64", cmd(c, &["SCRIPT", "FLUSH", "ASYNC"]));
        step(log, "after 64", lazyfreed(c));
        load_scripts(c, 0, 65);
        step(log, "async 65", cmd(c, &["SCRIPT", "FLUSH", "ASYNC"]));
        step(log, "after 65", lazyfreed(c));
        step(log, "evalsha gone", cmd(c, &["EVALSHA", SHA_RETURN_3, "0"]));
        step(log, "eval", cmd(c, &["EVAL", "return 7", "0"]));
        step(log, "evalsha", cmd(c, &["EVALSHA", SHA_RETURN_7, "0"]));
        load_scripts(c, 100, 200);
        step(log, "sync", cmd(c, &["SCRIPT", "FLUSH", "SYNC"]));
        load_scripts(c, 100, 200);
        step(log, "bare", cmd(c, &["SCRIPT", "FLUSH"]));
        step(log, "after sync", lazyfreed(c));
        cmd(c, &["CONFIG", "SET", "lazyfree-lazy-user-flush", "yes"]);
        load_scripts(c, 0, 100);
        step(log, "bare lazy", cmd(c, &["SCRIPT", "FLUSH"]));
        step(log, "after bare lazy", lazyfreed(c));
        load_scripts(c, 0, 100);
        step(log, "sync wins", cmd(c, &["SCRIPT", "FLUSH", "SYNC"]));
        step(log, "after sync wins", lazyfreed(c));
        cmd(c, &["CONFIG", "SET", "lazyfree-lazy-user-flush", "no"]);
        step(log, "bad flag", cmd(c, &["SCRIPT", "FLUSH", "LAZY"]));
        step(
            log,
            "bad arity",
            cmd(c, &["SCRIPT", "FLUSH", "ASYNC", "SYNC"]),
        );
    });
}

/// FUNCTION LOAD of a library `name` registering `n` functions.
fn load_library(c: &mut Connection, name: &str, n: usize) {
    let mut code = format!("#!lua name={name}\n");
    for i in 0..n {
        code += &format!("redis.register_function('{name}_{i}', function() return {i} end)\n");
    }
    let r = cmd(c, &["FUNCTION", "LOAD", &code]);
    assert!(!r.starts_with("error"), "{r}");
}

/// FUNCTION FLUSH ASYNC hands more than 64 functions (counted over all
/// libraries) to the freeing thread, one object per function (Redis's
/// `freeFunctionsAsync`); fewer, SYNC and the bare form are freed inline,
/// unless `lazyfree-lazy-user-flush yes` makes the bare form async.
#[test]
fn function_flush_async_frees_the_libraries_in_the_background() {
    same_on_both(|c, log| {
        load_library(c, "a", 64);
        step(log, "async 64", cmd(c, &["FUNCTION", "FLUSH", "ASYNC"]));
        step(log, "after 64", lazyfreed(c));
        load_library(c, "a", 40);
        load_library(c, "b", 25);
        step(log, "async 65", cmd(c, &["FUNCTION", "FLUSH", "ASYNC"]));
        step(log, "after 65", lazyfreed(c));
        step(log, "list", cmd(c, &["FUNCTION", "LIST"]));
        step(log, "fcall gone", cmd(c, &["FCALL", "a_3", "0"]));
        load_library(c, "a", 5);
        step(log, "fcall", cmd(c, &["FCALL", "a_3", "0"]));
        load_library(c, "b", 100);
        step(log, "sync", cmd(c, &["FUNCTION", "FLUSH", "SYNC"]));
        load_library(c, "b", 100);
        step(log, "bare", cmd(c, &["FUNCTION", "FLUSH"]));
        step(log, "after sync", lazyfreed(c));
        cmd(c, &["CONFIG", "SET", "lazyfree-lazy-user-flush", "yes"]);
        load_library(c, "b", 100);
        step(log, "bare lazy", cmd(c, &["FUNCTION", "FLUSH"]));
        step(log, "after bare lazy", lazyfreed(c));
        cmd(c, &["CONFIG", "SET", "lazyfree-lazy-user-flush", "no"]);
        step(log, "bad flag", cmd(c, &["FUNCTION", "FLUSH", "LAZY"]));
    });
}
