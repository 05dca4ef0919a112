//! MEMORY USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE, HELP, and the overhead breakdown INFO memory shares with them.

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::Value as DbValue;
use crate::error::{CmdResult, Error};
use crate::server::alloc::size_class;
use crate::server::memory::{self as mem, Sample};
use crate::server::{Ctx, Server};

pub static SUBS: &[CommandSpec] = &[
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

/// Redis's `dictEntry` and `robj`: the per-key overhead its figures count.
const DICT_ENTRY: u64 = 24;
const ROBJ: u64 = 16;

/// Where the memory goes, as Redis's `getMemoryOverheadData`: what the
/// server needs besides the data (start-up, clients, buffers, caches, the
/// key tables) and the ratios of the last RSS/allocator sample.
pub struct Overhead {
    pub total: u64,
    pub peak: u64,
    pub startup: u64,
    pub clients_normal: u64,
    pub aof_buffer: u64,
    pub lua_caches: u64,
    pub functions_caches: u64,
    /// (db index, main table, expires table) for each non-empty database.
    pub dbs: Vec<(usize, u64, u64)>,
    pub overhead_total: u64,
    pub keys: u64,
    pub dataset: u64,
    pub s: Sample,
}

/// Slots a Redis dict of `n` entries has (a power of two, at least 4).
fn slots(n: usize) -> u64 {
    if n == 0 {
        0
    } else {
        n.next_power_of_two().max(4) as u64
    }
}

impl Overhead {
    pub fn of(srv: &Server) -> Overhead {
        let total = mem::used_memory();
        let peak = mem::peak();
        let startup = mem::startup();
        // Counted now (Redis reads its running count, current to the
        // second: a buffer freed since would still show).
        // Replicas are counted apart (`mem_clients_slaves`), as in Redis.
        let clients_normal: u64 = srv
            .clients
            .values()
            .map(|cell| match cell.state.try_borrow() {
                Ok(c) if c.repl_role == crate::server::client::ReplRole::Replica => 0,
                Ok(c) => crate::server::client_mem::usage(&c, 0) as u64,
                // The client running this command: its state, buffers aside.
                Err(_) => std::mem::size_of::<crate::server::client::ClientCell>() as u64,
            })
            .sum();
        let aof_buffer = crate::persist::aof::buffer_len(srv) as u64;
        let sc = srv.script.info();
        let (lua_caches, functions_caches) = (sc.scripts_eval as u64, sc.functions_mem as u64);
        let mut dbs = Vec::new();
        let mut keys = 0;
        let mut tables = 0;
        for (i, db) in srv.ks.dbs.iter().enumerate() {
            if db.is_empty() {
                continue;
            }
            let (n, e) = (db.len(), db.expires_len());
            keys += n as u64;
            let main = n as u64 * (DICT_ENTRY + ROBJ) + slots(n) * 8;
            let exp = e as u64 * DICT_ENTRY + slots(e) * 8;
            tables += main + exp;
            dbs.push((i, main, exp));
        }
        let overhead_total =
            startup + clients_normal + aof_buffer + lua_caches + functions_caches + tables;
        Overhead {
            total,
            peak,
            startup,
            clients_normal,
            aof_buffer,
            lua_caches,
            functions_caches,
            dbs,
            overhead_total,
            keys,
            dataset: total.saturating_sub(overhead_total),
            s: mem::sampled(),
        }
    }

    fn net(&self) -> u64 {
        self.total.saturating_sub(self.startup).max(1)
    }
    pub fn dataset_perc(&self) -> f64 {
        self.dataset as f64 * 100.0 / self.net() as f64
    }
    pub fn peak_perc(&self) -> f64 {
        self.total as f64 * 100.0 / self.peak.max(1) as f64
    }
    pub fn bytes_per_key(&self) -> u64 {
        self.net().checked_div(self.keys).unwrap_or(0)
    }
    /// allocator active / allocated.
    pub fn allocator_frag(&self) -> (f64, i64) {
        ratio(self.s.active, self.s.allocated)
    }
    /// allocator resident / active.
    pub fn allocator_rss(&self) -> (f64, i64) {
        ratio(self.s.resident, self.s.active)
    }
    /// process RSS / allocator resident.
    pub fn rss_extra(&self) -> (f64, i64) {
        ratio(self.s.rss, self.s.resident)
    }
    /// process RSS / used_memory, sampled together (`mem_fragmentation_ratio`).
    pub fn total_frag(&self) -> (f64, i64) {
        ratio(self.s.rss, self.s.used)
    }
}

/// a / b and a - b.
fn ratio(a: u64, b: u64) -> (f64, i64) {
    (a as f64 / b.max(1) as f64, a as i64 - b as i64)
}

/// ```text
/// MEMORY HELP
/// ```
fn help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::cmd::help_reply(ctx, HELP)
}

/// Bytes of an sds string holding `len` bytes (header, bytes, NUL), allocated.
pub(super) fn sds_size(len: usize) -> usize {
    let header = match len {
        0..=31 => 1,
        32..=255 => 3,
        256..=65535 => 5,
        _ => 9,
    };
    size_class(header + len + 1)
}

/// Bytes a key and its value take. Strings follow Redis's `objectComputeSize`
/// (int, embstr up to 44 bytes, raw), so they match Redis; collections are an
/// estimate from Oxidis's own structures.
fn usage_of(key: &[u8], v: &DbValue) -> usize {
    let robj = ROBJ as usize;
    let body = match v {
        DbValue::Str(s) => match s.encoding() {
            "int" => robj,
            "embstr" => size_class(robj + 3 + s.len() + 1),
            _ => robj + sds_size(s.len()),
        },
        DbValue::List(l) => robj + 32 + l.len() * 16,
        DbValue::Hash(h) => robj + 32 + h.len() * 32,
        DbValue::Set(s) => robj + 32 + s.len() * 16,
        DbValue::ZSet(z) => robj + 64 + z.len() * 48,
        DbValue::Stream(s) => robj + s.mem_usage(),
    };
    DICT_ENTRY as usize + sds_size(key.len()) + body
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

/// The report Redis's `getMemoryDoctorReport` writes for the conditions it
/// checks (its texts, its thresholds).
fn doctor_report(srv: &Server) -> String {
    let o = Overhead::of(srv);
    if o.total < 5 << 20 {
        return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n".into();
    }
    let mut found: Vec<String> = Vec::new();
    if o.peak as f64 / o.total as f64 > 1.5 {
        found.push(" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n".into());
    }
    let over = |(r, b): (f64, i64), limit: f64| r > limit && b > 10 << 20;
    if over(o.total_frag(), 1.4) {
        found.push(format!(" * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"{}\".\n\n", mem::ALLOCATOR));
    }
    if over(o.allocator_frag(), 1.1) {
        found.push(" * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n".into());
    }
    if over(o.allocator_rss(), 1.1) {
        found.push(" * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n".into());
    }
    if over(o.rss_extra(), 1.1) {
        found.push(" * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n".into());
    }
    let clients = srv.clients.len().max(1) as u64;
    if o.clients_normal / clients > 200 * 1024 {
        found.push(" * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n".into());
    }
    if srv.script.info().cached_scripts > 1000 {
        found.push(" * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\n".into());
    }
    if found.is_empty() {
        return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n".into();
    }
    let mut s =
        String::from("Sam, I detected a few issues in this Redis instance memory implants:\n\n");
    for f in found {
        s.push_str(&f);
    }
    s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
    s
}

/// ```text
/// MEMORY DOCTOR
/// ```
/// Verbatim string: Redis's memory report for this instance.
fn doctor(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let report = doctor_report(ctx.srv);
    ctx.out().verbatim(report.as_bytes());
    Ok(())
}

/// ```text
/// MEMORY MALLOC-STATS
/// ```
/// Verbatim string: the allocator's statistics report (jemalloc's
/// `malloc_stats_print`); Redis's answer for other allocators otherwise.
fn malloc_stats(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    match mem::malloc_stats() {
        Some(r) => ctx.out().verbatim(r.as_bytes()),
        None => ctx
            .out()
            .bulk(b"Stats not supported for the current allocator"),
    }
    Ok(())
}

/// ```text
/// MEMORY PURGE
/// ```
/// `OK` after returning the allocator's free pages to the OS.
fn purge(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    mem::purge();
    ctx.out().ok();
    Ok(())
}

/// ```text
/// MEMORY STATS
/// ```
/// Map of memory figures with Redis's field names and order.
fn stats(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let o = Overhead::of(ctx.srv);
    let out = ctx.out();
    out.map(27 + o.dbs.len());
    let int = |out: &mut crate::resp::encode::Reply, k: &str, v: i64| {
        out.bulk(k.as_bytes());
        out.int(v);
    };
    let dbl = |out: &mut crate::resp::encode::Reply, k: &str, v: f64| {
        out.bulk(k.as_bytes());
        out.double(v);
    };
    int(out, "peak.allocated", o.peak as i64);
    int(out, "total.allocated", o.total as i64);
    int(out, "startup.allocated", o.startup as i64);
    int(out, "replication.backlog", 0);
    int(out, "clients.slaves", 0);
    int(out, "clients.normal", o.clients_normal as i64);
    int(out, "cluster.links", 0);
    int(out, "aof.buffer", o.aof_buffer as i64);
    int(out, "lua.caches", o.lua_caches as i64);
    int(out, "functions.caches", o.functions_caches as i64);
    for &(i, main, exp) in &o.dbs {
        out.bulk(format!("db.{i}").as_bytes());
        out.map(3);
        int(out, "overhead.hashtable.main", main as i64);
        int(out, "overhead.hashtable.expires", exp as i64);
        int(out, "overhead.hashtable.slot-to-keys", 0);
    }
    int(out, "overhead.total", o.overhead_total as i64);
    int(out, "keys.count", o.keys as i64);
    int(out, "keys.bytes-per-key", o.bytes_per_key() as i64);
    int(out, "dataset.bytes", o.dataset as i64);
    dbl(out, "dataset.percentage", o.dataset_perc());
    dbl(out, "peak.percentage", o.peak_perc());
    int(out, "allocator.allocated", o.s.allocated as i64);
    int(out, "allocator.active", o.s.active as i64);
    int(out, "allocator.resident", o.s.resident as i64);
    for (name, (r, b)) in [
        ("allocator-fragmentation", o.allocator_frag()),
        ("allocator-rss", o.allocator_rss()),
        ("rss-overhead", o.rss_extra()),
    ] {
        dbl(out, &format!("{name}.ratio"), r);
        int(out, &format!("{name}.bytes"), b);
    }
    let (r, b) = o.total_frag();
    dbl(out, "fragmentation", r);
    int(out, "fragmentation.bytes", b);
    Ok(())
}
