//! MONITOR: every command, as run, sent to monitoring clients.

use super::client::{Client, ConnKind};
use super::Server;
use crate::command::Args;

/// Quotes bytes like Redis's `sdscatrepr`.
pub fn repr(out: &mut Vec<u8>, b: &[u8]) {
    out.push(b'"');
    for &c in b {
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(c),
            c => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// Sends one command line to every monitor.
pub fn feed(srv: &mut Server, client: &mut Client, args: &Args) {
    let us = crate::clock::real_now_us();
    let mut line =
        format!("+{}.{:06} [{} ", us / 1_000_000, us % 1_000_000, client.db).into_bytes();
    match client.conn_kind {
        ConnKind::Script => line.extend_from_slice(b"lua"),
        ConnKind::Unix => {
            line.extend_from_slice(b"unix:");
            line.extend_from_slice(client.laddr.as_bytes());
        }
        ConnKind::Tcp => line.extend_from_slice(client.addr.to_string().as_bytes()),
    }
    line.push(b']');
    let hidden = crate::cmd::server::slowlog::redacted(args);
    for (i, a) in args.from(0).enumerate() {
        line.push(b' ');
        if hidden.contains(&i) {
            repr(&mut line, b"(redacted)");
        } else {
            repr(&mut line, a);
        }
    }
    line.extend_from_slice(b"\r\n");
    let ids = srv.monitors.clone();
    for id in ids {
        srv.with_client(id, client, |c| c.reply.raw(&line));
        if id != client.id {
            srv.wake(id);
        }
    }
}
