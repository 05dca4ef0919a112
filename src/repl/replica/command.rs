//! REPLICAOF / SLAVEOF (Redis's `replicaofCommand`).

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::log;
use crate::server::Ctx;

/// The flags Redis 7.0 gives both names.
const FLAGS: u32 = ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("replicaof", 3, FLAGS, (0, 0, 0), replicaof),
    CommandSpec::new("slaveof", 3, FLAGS, (0, 0, 0), replicaof),
];

/// ```text
/// REPLICAOF host port | NO ONE
/// ```
/// `OK` (`OK Already connected to specified master` when it is the same):
/// starts replicating `host:port`, or with NO ONE stops and keeps the data.
fn replicaof(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if ctx.srv.config.get("cluster-enabled") == Some("yes") {
        return Err(Error::msg("REPLICAOF not allowed in cluster mode."));
    }
    let (host, port) = (args.at(1), args.at(2));
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        if super::is_replica(ctx.srv) {
            super::unset_master(ctx.srv);
            log::notice(&format!(
                "MASTER MODE enabled (user request from '{}')",
                client_info(ctx, args)
            ));
        }
        ctx.out().ok();
        return Ok(());
    }
    let port = crate::types::number::parse_i64(port)
        .filter(|p| (0..=65535).contains(p))
        .ok_or_else(|| Error::msg("Invalid master port"))? as u16;
    let host = String::from_utf8_lossy(host).into_owned();
    if let Some(l) = &ctx.srv.replica.link {
        if l.host.eq_ignore_ascii_case(&host) && l.port == port {
            log::notice("REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.");
            ctx.out().simple("OK Already connected to specified master");
            return Ok(());
        }
    }
    super::set_master(ctx.srv, &host, port);
    log::notice(&format!(
        "REPLICAOF {host}:{port} enabled (user request from '{}')",
        client_info(ctx, args)
    ));
    ctx.out().ok();
    Ok(())
}

/// The client as CLIENT INFO describes it, for the log.
fn client_info(ctx: &Ctx, args: &Args) -> String {
    let argv_mem = (0..args.len()).map(|i| args.at(i).len()).sum();
    crate::cmd::server::client::describe(ctx.client, true, argv_mem)
}
