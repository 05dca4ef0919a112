//! INFO persistence: every field Redis 7.0.15 reports in that section, in its order.

use std::fmt::Write;

use super::child::Kind;
use crate::server::Server;

macro_rules! field {
    ($out:expr, $($arg:tt)*) => {{
        let _ = write!($out, $($arg)*);
        $out.push_str("\r\n");
    }};
}

/// The `# Persistence` section; while the dataset loads, `loading:1` and
/// the `loading_*` progress lines at the end, as Redis.
pub fn persistence(srv: &Server, out: &mut String) {
    let now = crate::clock::real_now_us() / 1_000_000;
    let child = &srv.persist.child;
    let snap = &srv.persist.snapshot;
    out.push_str("# Persistence\r\n");
    field!(out, "loading:{}", crate::db::loading() as u8);
    field!(
        out,
        "async_loading:{}",
        crate::repl::replica::async_loading(srv) as u8
    );
    // Reported by the running child through its info pipe.
    let rep = &child.info;
    field!(out, "current_cow_peak:{}", rep.cow_peak);
    field!(out, "current_cow_size:{}", rep.cow);
    let age = if rep.cow_updated_us > 0 {
        (crate::clock::real_now_us() - rep.cow_updated_us).max(0) / 1_000_000
    } else {
        0
    };
    field!(out, "current_cow_size_age:{age}");
    let keys_total = if child.active() { child.keys_total } else { 0 };
    let perc = if keys_total > 0 {
        rep.keys_processed as f64 / keys_total as f64 * 100.0
    } else {
        0.0
    };
    field!(out, "current_fork_perc:{perc:.2}");
    field!(out, "current_save_keys_processed:{}", rep.keys_processed);
    field!(out, "current_save_keys_total:{keys_total}");
    field!(out, "rdb_changes_since_last_save:{}", srv.ks.dirty);
    let rdb_child = child.running.filter(|r| r.kind == Kind::Rdb);
    field!(out, "rdb_bgsave_in_progress:{}", rdb_child.is_some() as u8);
    field!(out, "rdb_last_save_time:{}", srv.last_save_unix);
    let status = if snap.last_bgsave_ok { "ok" } else { "err" };
    field!(out, "rdb_last_bgsave_status:{status}");
    field!(out, "rdb_last_bgsave_time_sec:{}", snap.last_bgsave_secs);
    let current = rdb_child.map_or(-1, |r| now - r.started_unix);
    field!(out, "rdb_current_bgsave_time_sec:{current}");
    field!(out, "rdb_saves:{}", snap.saves);
    field!(out, "rdb_last_cow_size:{}", rep.rdb_last_cow);
    field!(out, "rdb_last_load_keys_expired:{}", snap.last_load_expired);
    field!(out, "rdb_last_load_keys_loaded:{}", snap.last_load_keys);
    // aof_* and module_fork_*, then the fields Redis adds with the AOF on.
    super::aof::info(srv, out);
    super::loading::info(srv, out);
}
