//! Replication commands, master side: SYNC, PSYNC, REPLCONF and WAIT (the work is in `repl`).

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::Kind;
use crate::error::{CmdResult, Error};
use crate::server::client::ReplRole;
use crate::server::{blocking, Ctx};

const SYNC_FLAGS: u32 = ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("wait", 3, NOSCRIPT, (0, 0, 0), wait),
    CommandSpec::new("sync", 1, SYNC_FLAGS, (0, 0, 0), sync),
    CommandSpec::new("psync", -3, SYNC_FLAGS, (0, 0, 0), psync),
    CommandSpec::new(
        "replconf",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
        (0, 0, 0),
        replconf,
    ),
];

/// ```text
/// SYNC
/// ```
/// The whole dataset as an RDB bulk, then the replication stream (the old
/// protocol: no `+FULLRESYNC` line, no ACKs expected).
fn sync(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    start_sync(ctx, None)
}

/// ```text
/// PSYNC replicationid offset
/// ```
/// `+CONTINUE` and the missing stream when the backlog holds it, else
/// `+FULLRESYNC <replid> <offset>`, the RDB, and the stream.
fn psync(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let replid = args.at(1).to_vec();
    let offset = args.at(2).to_vec();
    start_sync(ctx, Some((&replid, &offset)))
}

fn start_sync(ctx: &mut Ctx, psync: Option<(&[u8], &[u8])>) -> CmdResult {
    let was = ctx.srv.repl.is_replica(ctx.client.id);
    crate::repl::master::sync(ctx.srv, ctx.client, psync)?;
    if !was && ctx.srv.repl.is_replica(ctx.client.id) {
        ctx.client.repl_role = ReplRole::Replica;
    }
    Ok(())
}

/// ```text
/// REPLCONF option value [option value ...]
/// ```
/// A replica's settings before it syncs (`listening-port`, `ip-address`,
/// `capa`, `rdb-only`, `rdb-filter-only`): OK. `ACK <offset>` from a
/// replica records its progress and is not answered; `GETACK` is for
/// replicas and ignored here.
fn replconf(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if args.len().is_multiple_of(2) {
        return Err(Error::Syntax);
    }
    let mut i = 1;
    while i < args.len() {
        let opt = args.at(i).to_ascii_lowercase();
        let val = args.at(i + 1);
        match opt.as_slice() {
            b"listening-port" => {
                let port = crate::types::number::parse_i64(val).ok_or(Error::NotInteger)?;
                ctx.srv.repl.announce_mut(ctx.client.id).listening_port = port as u16;
            }
            b"ip-address" => {
                if val.len() >= 46 {
                    return Err(Error::msg(format!(
                        "REPLCONF ip-address provided by replica instance is too long: {} bytes",
                        val.len()
                    )));
                }
                ctx.srv.repl.announce_mut(ctx.client.id).ip =
                    Some(String::from_utf8_lossy(val).into_owned());
            }
            b"capa" => {
                let a = ctx.srv.repl.announce_mut(ctx.client.id);
                if val.eq_ignore_ascii_case(b"eof") {
                    a.capa_eof = true;
                } else if val.eq_ignore_ascii_case(b"psync2") {
                    a.capa_psync2 = true;
                }
            }
            b"ack" => {
                if let Some(offset) = crate::types::number::parse_i64(val) {
                    crate::repl::master::ack(ctx.srv, ctx.client, offset);
                }
                return Ok(());
            }
            b"getack" => return Ok(()),
            b"rdb-only" => match crate::types::number::parse_i64(val) {
                Some(v @ (0 | 1)) => ctx.srv.repl.announce_mut(ctx.client.id).rdb_only = v == 1,
                Some(_) => {
                    return Err(Error::msg(
                        "value is out of range, value must between 0 and 1",
                    ))
                }
                None => return Err(Error::NotInteger),
            },
            b"rdb-filter-only" => {
                let words = crate::resp::inline::split(val)
                    .ok_or_else(|| Error::msg("Missing rdb-filter-only values"))?;
                if let Some(w) = words.iter().find(|w| !w.eq_ignore_ascii_case(b"functions")) {
                    return Err(Error::msg(format!(
                        "Unsupported rdb-filter-only option: {}",
                        String::from_utf8_lossy(w)
                    )));
                }
                let a = ctx.srv.repl.announce_mut(ctx.client.id);
                a.exclude_data = true;
                a.exclude_functions = words.is_empty();
            }
            _ => {
                return Err(Error::msg(format!(
                    "Unrecognized REPLCONF option: {}",
                    String::from_utf8_lossy(args.at(i))
                )))
            }
        }
        i += 2;
    }
    ctx.out().ok();
    Ok(())
}

/// ```text
/// WAIT numreplicas timeout
/// ```
/// Integer: the replicas that acknowledged the stream up to this client's
/// writes. Fewer than asked blocks (asking the replicas for an ACK) until
/// enough did or the timeout (milliseconds, 0 = forever) passes; inside
/// MULTI or a script it answers at once.
fn wait(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let numreplicas = args.next_i64()?;
    let timeout = blocking::parse_timeout_ms(args.at(2))?;
    // Every write of this client is in the stream by now: waiting for the
    // whole stream so far covers them (Redis keeps the offset after the
    // client's last command, which can only be lower).
    let offset = ctx.srv.prop.repl_offset;
    let acked = crate::repl::wait::acked(ctx.srv, offset);
    if acked >= numreplicas || ctx.in_exec {
        ctx.out().int(acked);
        return Ok(());
    }
    ctx.srv.repl.waiting.push(crate::repl::wait::Waiter {
        client: ctx.client.id,
        offset,
        numreplicas,
    });
    ctx.srv
        .prop
        .feed_replicas_only(&[b"REPLCONF", b"GETACK", b"*"]);
    // No key can serve it: an ACK, the timeout or a disconnect ends it.
    blocking::block(ctx, Vec::new(), Kind::Str, timeout, args);
    Ok(())
}
