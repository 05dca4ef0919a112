//! DEBUG (SLEEP here, more in `debug_more`; only when `enable-debug-command`
//! allows it) and MEMORY USAGE, DOCTOR, STATS, MALLOC-STATS, PURGE, HELP.

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::Value as DbValue;
use crate::error::{CmdResult, Error};
use crate::server::Ctx;

pub static MEMORY_SUBS: &[CommandSpec] = &[
    CommandSpec::new("memory|doctor", 2, 0, (0, 0, 0), doctor),
    CommandSpec::new("memory|malloc-stats", 2, 0, (0, 0, 0), malloc_stats),
    CommandSpec::new("memory|purge", 2, 0, (0, 0, 0), purge),
    CommandSpec::new("memory|stats", 2, 0, (0, 0, 0), stats),
    CommandSpec::new("memory|usage", -3, READONLY, (2, 2, 1), usage),
    CommandSpec::new("memory|help", 2, LOADING | STALE, (0, 0, 0), help),
];

const HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
];

/// The gate's answer to DEBUG when `enable-debug-command` refuses it.
pub const DEBUG_REFUSED: &str = "DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

/// True when `enable-debug-command` lets this client run DEBUG: `yes`, or
/// `local` on a local connection. The gate checks it (before AUTH, as Redis).
pub fn debug_allowed(srv: &crate::server::Server, c: &crate::server::client::Client) -> bool {
    match srv.config.enable_debug {
        1 => true,
        2 => super::is_local(c),
        _ => false,
    }
}

/// ```text
/// DEBUG SLEEP seconds
/// ```
/// `OK` after sleeping (the whole server waits, as in Redis). The gate
/// refuses it unless `enable-debug-command` allows it (see [`debug_allowed`]).
pub fn debug(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let sub = args.next().unwrap_or_default();
    if sub.eq_ignore_ascii_case(b"sleep") && args.len() == 3 {
        let secs = crate::types::number::parse_f64(args.at(2)).unwrap_or(0.0);
        if secs > 0.0 && secs.is_finite() {
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
        }
        ctx.out().ok();
        return Ok(());
    }
    if sub.eq_ignore_ascii_case(b"reload") {
        return super::persistence::debug_reload(ctx, args);
    }
    if let Some(r) = super::debug_more::run(ctx, sub, args) {
        return r;
    }
    if let Some(r) = super::debug_data::run(ctx, sub, args) {
        return r;
    }
    Err(super::wrong_sub_args(args, "DEBUG"))
}

/// ```text
/// MEMORY HELP
/// ```
fn help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::cmd::help_reply(ctx, HELP)
}

/// Rounds an allocation up to jemalloc's size classes (8, 16, then 16-byte
/// steps to 128, then four classes per doubling), as Redis's sizes reflect.
fn alloc_size(n: usize) -> usize {
    if n <= 8 {
        return 8;
    }
    if n <= 128 {
        return n.div_ceil(16) * 16;
    }
    let k = usize::BITS - 1 - (n - 1).leading_zeros(); // 2^k < n <= 2^(k+1)
    let step = 1usize << (k - 2);
    n.div_ceil(step) * step
}

/// Bytes of an sds string holding `len` bytes (header, bytes, NUL), allocated.
fn sds_size(len: usize) -> usize {
    let header = match len {
        0..=31 => 1,
        32..=255 => 3,
        256..=65535 => 5,
        _ => 9,
    };
    alloc_size(header + len + 1)
}

/// Redis's `robj` header.
const ROBJ: usize = 16;
/// Redis's `dictEntry`.
const DICT_ENTRY: usize = 24;

/// Bytes a key and its value take. Strings follow Redis's `objectComputeSize`
/// (int, embstr up to 44 bytes, raw), so they match Redis; collections are an
/// estimate from Oxidis's own structures.
fn usage_of(key: &[u8], v: &DbValue) -> usize {
    let body = match v {
        DbValue::Str(s) => match s.encoding() {
            "int" => ROBJ,
            "embstr" => alloc_size(ROBJ + 3 + s.len() + 1),
            _ => ROBJ + sds_size(s.len()),
        },
        DbValue::List(l) => ROBJ + 32 + l.len() * 16,
        DbValue::Hash(h) => ROBJ + 32 + h.len() * 32,
        DbValue::Set(s) => ROBJ + 32 + s.len() * 16,
        DbValue::ZSet(z) => ROBJ + 64 + z.len() * 48,
    };
    DICT_ENTRY + sds_size(key.len()) + body
}

/// ```text
/// MEMORY USAGE key [SAMPLES count]
/// ```
/// Integer: estimated bytes used by the key and its value; null when missing.
fn usage(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(2);
    args.set_pos(3);
    while args.has_more() {
        if args.eat_ci("SAMPLES") && args.has_more() {
            let n = args.next_i64()?;
            if n < 0 {
                return Err(Error::Syntax);
            }
        } else {
            return Err(Error::Syntax);
        }
    }
    let (db, out) = ctx.db_out();
    match db.get(key) {
        Some(v) => {
            let n = usage_of(key, v);
            out.int(n as i64);
        }
        None => out.null(),
    }
    Ok(())
}

/// ```text
/// MEMORY DOCTOR
/// ```
/// Verbatim string: a memory report (Oxidis has no allocator statistics to
/// diagnose, so it answers as Redis does for an instance using little memory).
fn doctor(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    ctx.out().verbatim(b"Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.");
    Ok(())
}

/// ```text
/// MEMORY MALLOC-STATS
/// ```
/// Verbatim string: what Redis answers when built without jemalloc.
fn malloc_stats(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    ctx.out()
        .verbatim(b"Stats not supported for the current allocator");
    Ok(())
}

/// ```text
/// MEMORY PURGE
/// ```
/// `OK`.
fn purge(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    ctx.out().ok();
    Ok(())
}

/// ```text
/// MEMORY STATS
/// ```
/// Map of memory figures with Redis's field names (from the process RSS, as
/// Oxidis keeps no allocator counters).
fn stats(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let rss = crate::server::memory::rss_bytes() as i64;
    let mut keys = 0i64;
    let mut dbs = Vec::new();
    for (i, db) in ctx.srv.ks.dbs.iter().enumerate() {
        if !db.is_empty() {
            keys += db.len() as i64;
            dbs.push((i, db.len() as i64, db.expires_len() as i64));
        }
    }
    let clients = ctx.srv.clients.len() as i64;
    let out = ctx.out();
    out.map(27 + dbs.len());
    let int = |out: &mut crate::resp::encode::Reply, k: &str, v: i64| {
        out.bulk(k.as_bytes());
        out.int(v);
    };
    int(out, "peak.allocated", rss);
    int(out, "total.allocated", rss);
    int(out, "startup.allocated", 0);
    int(out, "replication.backlog", 0);
    int(out, "clients.slaves", 0);
    int(out, "clients.normal", clients * 20 * 1024);
    int(out, "cluster.links", 0);
    int(out, "aof.buffer", 0);
    int(out, "lua.caches", 0);
    int(out, "functions.caches", 0);
    for (i, n, e) in &dbs {
        out.bulk(format!("db.{i}").as_bytes());
        out.map(2);
        int(out, "overhead.hashtable.main", n * 24);
        int(out, "overhead.hashtable.expires", e * 24);
    }
    int(out, "overhead.total", clients * 20 * 1024);
    int(out, "keys.count", keys);
    int(
        out,
        "keys.bytes-per-key",
        if keys > 0 { rss / keys } else { 0 },
    );
    int(out, "dataset.bytes", rss);
    out.bulk(b"dataset.percentage");
    out.double(100.0);
    out.bulk(b"peak.percentage");
    out.double(100.0);
    int(out, "allocator.allocated", rss);
    int(out, "allocator.active", rss);
    int(out, "allocator.resident", rss);
    out.bulk(b"allocator-fragmentation.ratio");
    out.double(1.0);
    int(out, "allocator-fragmentation.bytes", 0);
    out.bulk(b"allocator-rss.ratio");
    out.double(1.0);
    int(out, "allocator-rss.bytes", 0);
    out.bulk(b"rss-overhead.ratio");
    out.double(1.0);
    int(out, "rss-overhead.bytes", 0);
    out.bulk(b"fragmentation");
    out.double(1.0);
    int(out, "fragmentation.bytes", 0);
    Ok(())
}
