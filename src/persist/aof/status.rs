//! What the AOF reports: INFO persistence's `aof_*` fields, and the MISCONF refusal of writes after a write error.

use std::fmt::Write;

use super::{now_secs, State};
use crate::error::Rejection;
use crate::server::Server;

/// INFO persistence from `aof_enabled` to `module_fork_last_cow_size`, plus
/// the fields Redis adds with `appendonly yes`, with Redis's names.
pub fn info(srv: &Server, out: &mut String) {
    let aof = &srv.aof;
    let current = if aof.rewriting() {
        now_secs() - aof.rewrite_time_start
    } else {
        -1
    };
    let ok = |b: bool| if b { "ok" } else { "err" };
    let _ = write!(
        out,
        "aof_enabled:{}\r\n\
         aof_rewrite_in_progress:{}\r\n\
         aof_rewrite_scheduled:{}\r\n\
         aof_last_rewrite_time_sec:{}\r\n\
         aof_current_rewrite_time_sec:{current}\r\n\
         aof_last_bgrewrite_status:{}\r\n\
         aof_rewrites:{}\r\n\
         aof_rewrites_consecutive_failures:{}\r\n\
         aof_last_write_status:{}\r\n\
         aof_last_cow_size:{}\r\n\
         module_fork_in_progress:0\r\n\
         module_fork_last_cow_size:0\r\n",
        u8::from(aof.state != State::Off),
        u8::from(aof.rewriting()),
        u8::from(aof.rewrite_scheduled),
        aof.rewrite_time_last,
        ok(aof.lastbgrewrite_ok),
        aof.rewrites,
        aof.rewrite_failures,
        ok(aof.disk_error().is_none()),
        srv.persist.child.info.aof_last_cow,
    );
    // Redis shows these when `appendonly` is set, even while the first
    // rewrite is pending.
    if srv.config.get("appendonly") == Some("yes") {
        let _ = write!(
            out,
            "aof_current_size:{}\r\n\
             aof_base_size:{}\r\n\
             aof_pending_rewrite:{}\r\n\
             aof_buffer_length:{}\r\n\
             aof_pending_bio_fsync:{}\r\n\
             aof_delayed_fsync:{}\r\n",
            aof.current_size,
            aof.rewrite_base_size,
            u8::from(aof.rewrite_scheduled),
            buffer_len(srv),
            aof.pending_fsyncs(),
            aof.delayed_fsync,
        );
    }
}

/// Bytes appended and not yet written (INFO `aof_buffer_length`, `mem_aof_buffer`).
pub fn buffer_len(srv: &Server) -> usize {
    srv.prop.aof.as_ref().map_or(0, |s| s.buf.len())
}

/// The disk-error stage for the AOF (Redis's `writeCommandsDeniedByDiskError`):
/// after a failed write or background fsync, writes are refused with
/// `-MISCONF Errors writing to the AOF file: <strerror>` until a write succeeds.
pub fn write_denied(srv: &Server) -> Option<Rejection> {
    if srv.aof.state == State::Off {
        return None;
    }
    let errno = srv.aof.disk_error()?;
    let e = std::io::Error::from_raw_os_error(errno);
    Some(Rejection::MisconfAof(super::manifest::os(&e)))
}
