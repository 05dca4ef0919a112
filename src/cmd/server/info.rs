//! INFO: the server's state in Redis's sections and field names.

use std::fmt::Write;

use crate::command::table::table;
use crate::command::Args;
use crate::error::CmdResult;
use crate::server::{Ctx, Server};

/// Sections in INFO order, and whether `INFO` / `INFO default` includes them.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("latencystats", false),
    ("cluster", true),
    ("keyspace", true),
];

/// ```text
/// INFO [section ...]
/// ```
/// Bulk string (verbatim in RESP3): `# Section` headers and `field:value` lines.
/// Sections: the default set, `all` (plus commandstats), `everything`, or named ones.
pub fn info(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mut wanted: Vec<String> = Vec::new();
    let mut all = false;
    let mut default = !args.has_more();
    for a in args.by_ref() {
        let s = String::from_utf8_lossy(a).to_ascii_lowercase();
        match s.as_str() {
            "all" | "everything" => all = true,
            "default" => default = true,
            _ => wanted.push(s),
        }
    }
    let text = render(ctx, |name, in_default| {
        all || (default && in_default) || wanted.iter().any(|w| w == name)
    });
    ctx.out().verbatim(text.as_bytes());
    Ok(())
}

/// The INFO text for the sections `pick` selects.
pub fn render(ctx: &mut Ctx, pick: impl Fn(&str, bool) -> bool) -> String {
    let mut out = String::new();
    for &(name, in_default) in SECTIONS {
        if !pick(name, in_default) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        let srv: &Server = ctx.srv;
        match name {
            "server" => server(srv, &mut out),
            "clients" => clients(srv, ctx.client.blocked.is_some(), &mut out),
            "memory" => memory(srv, &mut out),
            "persistence" => crate::persist::info::persistence(srv, &mut out),
            "stats" => stats(srv, &mut out),
            "replication" => replication(srv, &mut out),
            "cpu" => cpu(&mut out),
            "modules" => out.push_str("# Modules\r\n"),
            "commandstats" => commandstats(srv, &mut out),
            "errorstats" => errorstats(srv, &mut out),
            "latencystats" => super::latency::section(srv, &mut out),
            "cluster" => {
                let on = srv.cluster.is_some() as u8;
                out.push_str(&format!("# Cluster\r\ncluster_enabled:{on}\r\n"))
            }
            "keyspace" => keyspace(srv, &mut out),
            _ => {}
        }
    }
    out
}

macro_rules! line {
    ($out:expr, $($arg:tt)*) => {{
        let _ = write!($out, $($arg)*);
        $out.push_str("\r\n");
    }};
}

/// Bytes in Redis's human form (`1.32M`, `200B`).
pub fn human(n: u64) -> String {
    let d = n as f64;
    let units = [
        ("B", 1.0),
        ("K", 1024.0),
        ("M", 1048576.0),
        ("G", 1073741824.0),
    ];
    if n < 1024 {
        return format!("{n}B");
    }
    let mut pick = units[1];
    for u in units.iter().skip(1) {
        if d >= u.1 {
            pick = *u;
        }
    }
    if d >= 1099511627776.0 {
        return format!("{:.2}T", d / 1099511627776.0);
    }
    format!("{:.2}{}", d / pick.1, pick.0)
}

fn server(srv: &Server, out: &mut String) {
    let uptime = srv.started.elapsed().as_secs();
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let (sys, release, machine) = uname();
    out.push_str("# Server\r\n");
    line!(out, "redis_version:{}", crate::REDIS_VERSION);
    line!(out, "redis_git_sha1:00000000");
    line!(out, "redis_git_dirty:0");
    line!(out, "redis_build_id:0");
    let mode = if srv.cluster.is_some() {
        "cluster"
    } else {
        "standalone"
    };
    line!(out, "redis_mode:{mode}");
    line!(out, "os:{sys} {release} {machine}");
    line!(out, "arch_bits:64");
    line!(out, "monotonic_clock:POSIX clock_gettime");
    line!(out, "multiplexing_api:epoll");
    line!(out, "atomicvar_api:c11-builtin");
    line!(out, "gcc_version:0.0.0");
    line!(out, "process_id:{}", std::process::id());
    line!(out, "process_supervised:no");
    line!(out, "run_id:{}", srv.run_id);
    line!(out, "tcp_port:{}", srv.config.port);
    line!(out, "server_time_usec:{}", crate::clock::real_now_us());
    line!(out, "uptime_in_seconds:{uptime}");
    line!(out, "uptime_in_days:{}", uptime / 86400);
    line!(out, "hz:{}", srv.config.hz);
    line!(out, "configured_hz:{}", srv.config.hz);
    line!(
        out,
        "lru_clock:{}",
        (crate::clock::real_now_us() / 1_000_000) & ((1 << 24) - 1)
    );
    line!(out, "executable:{exe}");
    line!(
        out,
        "config_file:{}",
        srv.config.config_file.as_deref().unwrap_or("")
    );
    line!(out, "io_threads_active:0");
    // While SHUTDOWN waits for lagging replicas: the time it has left.
    if let Some(deadline) = srv.shutdown_pending.as_ref().and_then(|p| p.deadline_ms) {
        let left = deadline - crate::clock::real_now_us() / 1000;
        line!(out, "shutdown_in_milliseconds:{left}");
    }
}

/// `uname -s`, `-r`, `-m` from /proc, as Redis's `os:` field shows them.
fn uname() -> (String, String, String) {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    (
        read("/proc/sys/kernel/ostype"),
        read("/proc/sys/kernel/osrelease"),
        std::env::consts::ARCH.to_string(),
    )
}

fn clients(srv: &Server, current_blocked: bool, out: &mut String) {
    let mut blocked = 0;
    let mut in_timeout = 0;
    for cell in srv.clients.values() {
        match cell.state.try_borrow() {
            Ok(c) => {
                if let Some(b) = &c.blocked {
                    blocked += 1;
                    if b.deadline_ms.is_some() {
                        in_timeout += 1;
                    }
                } else if c.postponed {
                    // A request held back by CLIENT PAUSE counts as blocked
                    // (Redis blocks it with BLOCKED_POSTPONE, no timeout).
                    blocked += 1;
                }
            }
            Err(_) => blocked += current_blocked as usize,
        }
    }
    out.push_str("# Clients\r\n");
    line!(
        out,
        "connected_clients:{}",
        srv.clients.len() - srv.repl.replicas.len()
    );
    line!(out, "cluster_connections:0");
    line!(out, "maxclients:{}", srv.config.maxclients);
    let (max_in, max_out) = srv.client_mem.recent_max();
    line!(out, "client_recent_max_input_buffer:{max_in}");
    line!(out, "client_recent_max_output_buffer:{max_out}");
    line!(out, "blocked_clients:{blocked}");
    line!(out, "tracking_clients:{}", srv.tracking.clients);
    line!(out, "clients_in_timeout_table:{in_timeout}");
}

fn total_system_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| {
                    l.split_whitespace()
                        .nth(1)
                        .and_then(|v| v.parse::<u64>().ok())
                })
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

fn memory(srv: &Server, out: &mut String) {
    let o = crate::cmd::server::memory::Overhead::of(srv);
    let (used, rss) = (o.total, o.s.rss);
    let maxmemory = srv.config.get_i64("maxmemory").max(0) as u64;
    let sysmem = total_system_memory();
    out.push_str("# Memory\r\n");
    line!(out, "used_memory:{used}");
    line!(out, "used_memory_human:{}", human(used));
    line!(out, "used_memory_rss:{rss}");
    line!(out, "used_memory_rss_human:{}", human(rss));
    line!(out, "used_memory_peak:{}", o.peak);
    line!(out, "used_memory_peak_human:{}", human(o.peak));
    line!(out, "used_memory_peak_perc:{:.2}%", o.peak_perc());
    line!(out, "used_memory_overhead:{}", o.overhead_total);
    line!(out, "used_memory_startup:{}", o.startup);
    line!(out, "used_memory_dataset:{}", o.dataset);
    line!(out, "used_memory_dataset_perc:{:.2}%", o.dataset_perc());
    line!(out, "allocator_allocated:{}", o.s.allocated);
    line!(out, "allocator_active:{}", o.s.active);
    line!(out, "allocator_resident:{}", o.s.resident);
    line!(out, "total_system_memory:{sysmem}");
    line!(out, "total_system_memory_human:{}", human(sysmem));
    // Scripting figures come from the engines (`script::Scripting::info`).
    let sc = srv.script.info();
    let (eval_vm, fn_vm) = (sc.vm_eval as u64, sc.vm_functions as u64);
    let scripts_mem = (sc.scripts_eval + sc.functions_mem) as u64;
    line!(out, "used_memory_lua:{eval_vm}");
    line!(out, "used_memory_vm_eval:{eval_vm}");
    line!(out, "used_memory_lua_human:{}", human(eval_vm));
    line!(out, "used_memory_scripts_eval:{}", sc.scripts_eval);
    line!(out, "number_of_cached_scripts:{}", sc.cached_scripts);
    line!(out, "number_of_functions:{}", sc.functions);
    line!(out, "number_of_libraries:{}", sc.libraries);
    line!(out, "used_memory_vm_functions:{fn_vm}");
    line!(out, "used_memory_vm_total:{}", eval_vm + fn_vm);
    line!(out, "used_memory_vm_total_human:{}", human(eval_vm + fn_vm));
    line!(out, "used_memory_functions:{}", sc.functions_mem);
    line!(out, "used_memory_scripts:{scripts_mem}");
    line!(out, "used_memory_scripts_human:{}", human(scripts_mem));
    line!(out, "maxmemory:{maxmemory}");
    line!(out, "maxmemory_human:{}", human(maxmemory));
    line!(
        out,
        "maxmemory_policy:{}",
        srv.config.get("maxmemory-policy").unwrap_or("noeviction")
    );
    for (name, (r, b)) in [
        ("allocator_frag", o.allocator_frag()),
        ("allocator_rss", o.allocator_rss()),
        ("rss_overhead", o.rss_extra()),
        ("mem_fragmentation", o.total_frag()),
    ] {
        line!(out, "{name}_ratio:{r:.2}");
        line!(out, "{name}_bytes:{b}");
    }
    // Replica and AOF buffers are what Redis leaves out of eviction's count.
    line!(
        out,
        "mem_not_counted_for_evict:{}",
        crate::server::evict::not_counted_memory(srv)
    );
    let (backlog, replicas) = (
        crate::repl::backlog_bytes(srv),
        crate::repl::replica_buffers(srv),
    );
    line!(out, "mem_replication_backlog:{backlog}");
    line!(out, "mem_total_replication_buffers:{}", backlog + replicas);
    line!(out, "mem_clients_slaves:{replicas}");
    line!(out, "mem_clients_normal:{}", o.clients_normal);
    line!(out, "mem_cluster_links:0");
    line!(out, "mem_aof_buffer:{}", o.aof_buffer);
    line!(out, "mem_allocator:{}", crate::server::memory::ALLOCATOR);
    line!(out, "active_defrag_running:0");
    line!(
        out,
        "lazyfree_pending_objects:{}",
        crate::db::lazyfree::pending()
    );
    line!(out, "lazyfreed_objects:{}", crate::db::lazyfree::freed());
}

fn stats(srv: &Server, out: &mut String) {
    let st = &srv.stats;
    out.push_str("# Stats\r\n");
    line!(
        out,
        "total_connections_received:{}",
        st.connections_received
    );
    line!(out, "total_commands_processed:{}", st.commands_processed);
    line!(out, "instantaneous_ops_per_sec:{}", st.instantaneous_ops());
    line!(out, "total_net_input_bytes:{}", st.net_input_bytes);
    line!(out, "total_net_output_bytes:{}", st.net_output_bytes);
    line!(out, "total_net_repl_input_bytes:0");
    line!(out, "total_net_repl_output_bytes:0");
    line!(out, "instantaneous_input_kbps:0.00");
    line!(out, "instantaneous_output_kbps:0.00");
    line!(out, "instantaneous_input_repl_kbps:0.00");
    line!(out, "instantaneous_output_repl_kbps:0.00");
    line!(out, "rejected_connections:{}", st.rejected_connections);
    let (hits, misses, expired) = srv.ks.dbs.iter().fold((0, 0, 0), |(h, m, e), db| {
        (h + db.hits, m + db.misses, e + db.expired_count)
    });
    line!(out, "sync_full:{}", srv.repl.sync_full);
    line!(out, "sync_partial_ok:{}", srv.repl.sync_partial_ok);
    line!(out, "sync_partial_err:{}", srv.repl.sync_partial_err);
    line!(out, "expired_keys:{expired}");
    for f in [
        "expired_stale_perc:0.00",
        "expired_time_cap_reached_count:0",
        "expire_cycle_cpu_milliseconds:0",
    ] {
        line!(out, "{f}");
    }
    line!(out, "evicted_keys:{}", st.evicted_keys);
    line!(out, "evicted_clients:{}", st.evicted_clients);
    let current_us = st
        .eviction_exceeded_since
        .map_or(0, |t| t.elapsed().as_micros() as u64);
    line!(
        out,
        "total_eviction_exceeded_time:{}",
        (st.eviction_exceeded_us + current_us) / 1000
    );
    line!(out, "current_eviction_exceeded_time:{}", current_us / 1000);
    line!(out, "keyspace_hits:{hits}");
    line!(out, "keyspace_misses:{misses}");
    line!(out, "pubsub_channels:{}", srv.pubsub.channels.len());
    line!(out, "pubsub_patterns:{}", srv.pubsub.patterns.len());
    line!(
        out,
        "pubsubshard_channels:{}",
        srv.pubsub.shard_channels.len()
    );
    line!(out, "latest_fork_usec:{}", srv.persist.child.last_fork_usec);
    line!(out, "total_forks:{}", srv.persist.child.total_forks);
    line!(
        out,
        "migrate_cached_sockets:{}",
        crate::cmd::keyspace::migrate::cached_sockets()
    );
    for f in [
        "slave_expires_tracked_keys:0",
        "active_defrag_hits:0",
        "active_defrag_misses:0",
        "active_defrag_key_hits:0",
        "active_defrag_key_misses:0",
        "total_active_defrag_time:0",
        "current_active_defrag_time:0",
    ] {
        line!(out, "{f}");
    }
    let (keys, items, prefixes) = srv.tracking.totals();
    line!(out, "tracking_total_keys:{keys}");
    line!(out, "tracking_total_items:{items}");
    line!(out, "tracking_total_prefixes:{prefixes}");
    line!(
        out,
        "unexpected_error_replies:{}",
        st.unexpected_error_replies
    );
    line!(out, "total_error_replies:{}", st.total_error_replies);
    for f in [
        "dump_payload_sanitizations:0",
        "total_reads_processed:0",
        "total_writes_processed:0",
        "io_threaded_reads_processed:0",
        "io_threaded_writes_processed:0",
        "reply_buffer_shrinks:0",
        "reply_buffer_expands:0",
    ] {
        line!(out, "{f}");
    }
}

fn replication(srv: &Server, out: &mut String) {
    out.push_str("# Replication\r\n");
    crate::repl::info(srv, out);
}

/// User and system CPU seconds of this process (and of its main thread).
fn cpu(out: &mut String) {
    let (user, sys) = cpu_times("/proc/self/stat");
    let (tuser, tsys) = cpu_times("/proc/thread-self/stat");
    out.push_str("# CPU\r\n");
    line!(out, "used_cpu_sys:{sys:.6}");
    line!(out, "used_cpu_user:{user:.6}");
    line!(out, "used_cpu_sys_children:0.000000");
    line!(out, "used_cpu_user_children:0.000000");
    line!(out, "used_cpu_sys_main_thread:{tsys:.6}");
    line!(out, "used_cpu_user_main_thread:{tuser:.6}");
}

fn cpu_times(path: &str) -> (f64, f64) {
    let Ok(s) = std::fs::read_to_string(path) else {
        return (0.0, 0.0);
    };
    // Fields after the parenthesised command name; utime and stime are 14th and 15th.
    let rest = s.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (tick(11), tick(12))
}

fn commandstats(srv: &Server, out: &mut String) {
    out.push_str("# Commandstats\r\n");
    for (id, spec) in table().all.iter().enumerate() {
        let Some(st) = srv.stats.commands.get(id) else {
            continue;
        };
        if st.calls == 0 && st.rejected == 0 && st.failed == 0 {
            continue;
        }
        let per = if st.calls > 0 {
            st.usec as f64 / st.calls as f64
        } else {
            0.0
        };
        line!(
            out,
            "cmdstat_{}:calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}",
            spec.name,
            st.calls,
            st.usec,
            per,
            st.rejected,
            st.failed
        );
    }
}

fn errorstats(srv: &Server, out: &mut String) {
    out.push_str("# Errorstats\r\n");
    let mut errs: Vec<_> = srv.stats.errors.iter().collect();
    errs.sort();
    for (code, n) in errs {
        line!(out, "errorstat_{code}:count={n}");
    }
}

fn keyspace(srv: &Server, out: &mut String) {
    out.push_str("# Keyspace\r\n");
    for (i, db) in srv.ks.dbs.iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        line!(
            out,
            "db{i}:keys={},expires={},avg_ttl=0",
            db.len(),
            db.expires_len()
        );
    }
}
