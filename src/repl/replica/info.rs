//! What a replica reports: INFO replication's replica lines and ROLE's reply (Redis's `genRedisInfoString`, `roleCommand`).

use std::fmt::Write;

use super::State;
use crate::server::{Ctx, Server};

/// INFO replication from `role:` to `replica_announced:`, for a replica;
/// a master's `role:master` otherwise. What follows (`connected_slaves`,
/// the ids, the backlog) is the same for both.
pub fn role_lines(srv: &Server, out: &mut String) {
    let Some(l) = srv.replica.link.as_deref() else {
        out.push_str("role:master\r\n");
        return;
    };
    let now = crate::clock::real_now_us() / 1_000_000;
    // Redis shows 1 when there is neither a live nor a cached master.
    let (reploff, read_reploff) = l
        .master
        .as_ref()
        .map_or((1, 1), |p| (p.reploff, p.read_reploff));
    let connected = l.state == State::Connected;
    let last_io = if l.master_client.is_some() {
        l.last_interaction.elapsed().as_secs() as i64
    } else {
        -1
    };
    let _ = write!(
        out,
        "role:slave\r\n\
         master_host:{}\r\n\
         master_port:{}\r\n\
         master_link_status:{}\r\n\
         master_last_io_seconds_ago:{last_io}\r\n\
         master_sync_in_progress:{}\r\n\
         slave_read_repl_offset:{read_reploff}\r\n\
         slave_repl_offset:{reploff}\r\n",
        l.host,
        l.port,
        if connected { "up" } else { "down" },
        (l.state == State::Transfer) as u8,
    );
    if l.state == State::Transfer {
        let perc = if l.transfer_size > 0 {
            l.transfer_read as f64 / l.transfer_size as f64 * 100.0
        } else {
            0.0
        };
        let _ = write!(
            out,
            "master_sync_total_bytes:{}\r\n\
             master_sync_read_bytes:{}\r\n\
             master_sync_left_bytes:{}\r\n\
             master_sync_perc:{perc:.2}\r\n\
             master_sync_last_io_seconds_ago:{}\r\n",
            l.transfer_size,
            l.transfer_read,
            l.transfer_size - l.transfer_read,
            l.transfer_last_io.elapsed().as_secs()
        );
    }
    if !connected {
        let since = if l.down_since != 0 {
            now - l.down_since
        } else {
            -1
        };
        let _ = write!(out, "master_link_down_since_seconds:{since}\r\n");
    }
    let cfg = &srv.config;
    let yes = |n: &str| (cfg.get(n) == Some("yes")) as u8;
    let _ = write!(
        out,
        "slave_priority:{}\r\n\
         slave_read_only:{}\r\n\
         replica_announced:{}\r\n",
        cfg.get_i64("replica-priority"),
        yes("replica-read-only"),
        yes("replica-announced"),
    );
}

/// ROLE on a replica: `slave`, host, port, the link's state, the offset
/// applied (-1 with no master client). False on a master (the caller answers).
pub fn role(ctx: &mut Ctx) -> bool {
    let Some(l) = ctx.srv.replica.link.as_deref() else {
        return false;
    };
    let state: &[u8] = match l.state {
        State::Connect => b"connect",
        State::Connecting => b"connecting",
        State::Handshake => b"handshake",
        State::Transfer => b"sync",
        State::Connected => b"connected",
    };
    let offset = match (&l.master_client, &l.master) {
        (Some(_), Some(p)) => p.reploff,
        _ => -1,
    };
    let (host, port) = (l.host.clone(), l.port);
    let out = ctx.out();
    out.array(5);
    out.bulk(b"slave");
    out.bulk(host.as_bytes());
    out.int(port as i64);
    out.bulk(state);
    out.int(offset);
    true
}
