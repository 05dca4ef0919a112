//! How every write command reaches replicas and the AOF: as it came, or as the command Redis propagates instead.
//!
//! `server::propagate` sends a command that changed the dataset as it came
//! unless its handler says otherwise (`Ctx::propagate_as`, ...). This table
//! names the rule of every `write` command, so a new write command cannot
//! go unnoticed: the test below fails until it is listed here (and its
//! rewrite, if Redis has one, is built and recorded in compat/repl/).

/// How a write command propagates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// As it came, when it changed the dataset.
    Verbatim,
    /// As Redis rewrites it (the text says into what).
    Rewritten(&'static str),
}

use Rule::{Rewritten, Verbatim};

/// Every write command (and subcommand) with its rule.
pub static RULES: &[(&str, Rule)] = &[
    // strings
    (
        "set",
        Rewritten("with an expiry: SET key value PXAT ms; with GET: without GET"),
    ),
    ("setnx", Verbatim),
    ("setex", Rewritten("SET key value PXAT ms")),
    ("psetex", Rewritten("SET key value PXAT ms")),
    ("mset", Verbatim),
    ("msetnx", Verbatim),
    ("getset", Rewritten("SET key value")),
    (
        "getdel",
        Rewritten("DEL key (UNLINK with lazyfree-lazy-user-del)"),
    ),
    (
        "getex",
        Rewritten("PEXPIREAT key ms, PERSIST key, or DEL key for a time past"),
    ),
    ("append", Verbatim),
    ("setrange", Verbatim),
    ("incr", Verbatim),
    ("decr", Verbatim),
    ("incrby", Verbatim),
    ("decrby", Verbatim),
    ("incrbyfloat", Rewritten("SET key result KEEPTTL")),
    // keys
    ("del", Verbatim),
    ("unlink", Verbatim),
    ("rename", Verbatim),
    ("renamenx", Verbatim),
    ("copy", Verbatim),
    ("move", Verbatim),
    ("swapdb", Verbatim),
    (
        "migrate",
        Rewritten("DEL of the keys the target acknowledged (nothing with COPY)"),
    ),
    (
        "restore",
        Rewritten("a relative ttl as RESTORE key abs-ms payload ... ABSTTL; DEL key when the ttl is past and REPLACE removed a key"),
    ),
    (
        "restore-asking",
        Rewritten("as RESTORE, under its own name (MIGRATE sends it to cluster nodes)"),
    ),
    (
        "flushdb",
        Rewritten("as it came, even when nothing was flushed"),
    ),
    (
        "flushall",
        Rewritten("as it came, even when nothing was flushed"),
    ),
    (
        "expire",
        Rewritten("PEXPIREAT key ms [cond], or DEL key for a time past"),
    ),
    (
        "pexpire",
        Rewritten("PEXPIREAT key ms [cond], or DEL key for a time past"),
    ),
    (
        "expireat",
        Rewritten("PEXPIREAT key ms [cond], or DEL key for a time past"),
    ),
    (
        "pexpireat",
        Rewritten("as it came, or DEL key for a time past"),
    ),
    ("persist", Verbatim),
    ("sort", Verbatim),
    // lists
    ("lpush", Verbatim),
    ("rpush", Verbatim),
    ("lpushx", Verbatim),
    ("rpushx", Verbatim),
    ("lpop", Verbatim),
    ("rpop", Verbatim),
    ("lset", Verbatim),
    ("lrem", Verbatim),
    (
        "ltrim",
        Rewritten("as it came, only when it removed elements"),
    ),
    ("linsert", Verbatim),
    ("lmove", Verbatim),
    ("rpoplpush", Verbatim),
    ("lmpop", Rewritten("LPOP/RPOP key popped-count")),
    ("blmpop", Rewritten("LPOP/RPOP key popped-count")),
    ("blpop", Rewritten("LPOP key")),
    ("brpop", Rewritten("RPOP key")),
    (
        "blmove",
        Rewritten("LMOVE src dst from to (lowercase ends when served later)"),
    ),
    ("brpoplpush", Rewritten("RPOPLPUSH src dst")),
    // hashes
    ("hset", Verbatim),
    ("hsetnx", Verbatim),
    ("hmset", Verbatim),
    ("hdel", Verbatim),
    ("hincrby", Verbatim),
    ("hincrbyfloat", Rewritten("HSET key field result")),
    // sets
    ("sadd", Verbatim),
    ("srem", Verbatim),
    (
        "spop",
        Rewritten("SREM key member (one per member), or DEL key when it took all"),
    ),
    ("smove", Verbatim),
    ("sinterstore", Verbatim),
    ("sunionstore", Verbatim),
    ("sdiffstore", Verbatim),
    // sorted sets
    ("zadd", Verbatim),
    ("zincrby", Verbatim),
    ("zrem", Verbatim),
    ("zremrangebyrank", Verbatim),
    ("zremrangebyscore", Verbatim),
    ("zremrangebylex", Verbatim),
    ("zpopmin", Verbatim),
    ("zpopmax", Verbatim),
    ("zmpop", Rewritten("ZPOPMIN/ZPOPMAX key popped-count")),
    ("bzmpop", Rewritten("ZPOPMIN/ZPOPMAX key popped-count")),
    ("bzpopmin", Rewritten("ZPOPMIN key")),
    ("bzpopmax", Rewritten("ZPOPMAX key")),
    ("zrangestore", Verbatim),
    ("zunionstore", Verbatim),
    ("zinterstore", Verbatim),
    ("zdiffstore", Verbatim),
    // streams
    (
        "xadd",
        Rewritten("with the id it generated; an approximate trim as MAXLEN = length / MINID = first id"),
    ),
    ("xdel", Verbatim),
    (
        "xtrim",
        Rewritten("an approximate trim as MAXLEN = length / MINID = first id, only when it removed entries"),
    ),
    ("xsetid", Verbatim),
    (
        "xreadgroup",
        Rewritten("XCLAIM key group consumer 0 id TIME t RETRYCOUNT n FORCE JUSTID LASTID id per delivered entry; with NOACK XGROUP SETID / CREATECONSUMER"),
    ),
    ("xack", Verbatim),
    (
        "xclaim",
        Rewritten("XCLAIM ... TIME t RETRYCOUNT n FORCE JUSTID LASTID id per claimed or dropped entry; XGROUP SETID for a LASTID alone"),
    ),
    (
        "xautoclaim",
        Rewritten("XCLAIM ... TIME t RETRYCOUNT n FORCE JUSTID LASTID id per claimed or dropped entry"),
    ),
    ("xgroup|create", Verbatim),
    ("xgroup|setid", Verbatim),
    ("xgroup|destroy", Verbatim),
    ("xgroup|createconsumer", Verbatim),
    ("xgroup|delconsumer", Verbatim),
    // geo
    (
        "geoadd",
        Rewritten("zadd key [options] score member ... (the 52-bit scores)"),
    ),
    ("georadius", Verbatim),
    ("georadiusbymember", Verbatim),
    ("geosearchstore", Verbatim),
    // bitmaps and HyperLogLog
    ("setbit", Verbatim),
    ("bitop", Verbatim),
    ("bitfield", Verbatim),
    ("pfadd", Verbatim),
    ("pfmerge", Verbatim),
    ("pfdebug", Verbatim),
    // functions (EVAL and FCALL propagate the commands they run: script::run)
    ("function|delete", Verbatim),
    ("function|flush", Verbatim),
    ("function|load", Verbatim),
    ("function|restore", Verbatim),
];

#[cfg(test)]
mod tests {
    use super::RULES;
    use crate::command::flags;

    #[test]
    fn every_write_command_has_a_propagation_rule() {
        let table = crate::command::table::table();
        let missing: Vec<&str> = table
            .all
            .iter()
            .filter(|s| s.has(flags::WRITE))
            .map(|s| s.name)
            .filter(|name| !RULES.iter().any(|(n, _)| n == name))
            .collect();
        assert!(
            missing.is_empty(),
            "write commands without a propagation rule in command/replicated.rs: {missing:?}"
        );
        for (name, _) in RULES {
            assert!(
                table
                    .all
                    .iter()
                    .any(|s| s.name == *name && s.has(flags::WRITE)),
                "{name} has a propagation rule but is not a write command"
            );
        }
    }

    /// Each write command runs in some compat/repl case (recorded from a
    /// real redis-server's replication stream).
    #[test]
    fn every_write_command_is_recorded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("compat/repl");
        let mut words = std::collections::HashSet::new();
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            if e.path().extension().is_some_and(|x| x == "case") {
                for line in text.lines() {
                    let mut w = line.split_whitespace().map(str::to_ascii_lowercase);
                    let mut first = w.next().unwrap_or_default();
                    while first.starts_with('[') || first.starts_with('~') {
                        first = w.next().unwrap_or_default();
                    }
                    let second = w.next().unwrap_or_default();
                    words.insert(format!("{first}|{second}"));
                    words.insert(first);
                }
            }
        }
        let missing: Vec<&str> = RULES
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| !words.contains(*n))
            .collect();
        assert!(
            missing.is_empty(),
            "write commands no compat/repl case runs: {missing:?}"
        );
    }
}
