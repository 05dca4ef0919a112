//! Command families, one module each; every module exports its `SPECS`.

use crate::command::CommandSpec;
use crate::error::CmdResult;
use crate::resp::encode::Reply;
use crate::server::Ctx;

pub mod bitmap;
pub mod cluster;
pub mod connection;
pub mod hash;
pub mod hll;
pub mod keyspace;
pub mod list;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod set;
pub mod sort;
pub mod string;
pub mod tracking;
pub mod txn;
pub mod zset;

/// Every family's specs, gathered by the command table.
pub static ALL: &[&[CommandSpec]] = &[
    string::SPECS,
    keyspace::SPECS,
    list::SPECS,
    hash::SPECS,
    set::SPECS,
    sort::SPECS,
    zset::SPECS,
    bitmap::SPECS,
    hll::SPECS,
    txn::SPECS,
    scripting::SPECS,
    pubsub::SPECS,
    replication::SPECS,
    server::SPECS,
    connection::SPECS,
    cluster::SPECS,
];

/// Answers a HELP subcommand as Redis's `addReplyHelp` does: an array with
/// one status reply per line. Every family's HELP goes through here.
pub fn help_reply(ctx: &mut Ctx, lines: &[&str]) -> CmdResult {
    let out = ctx.out();
    out.array(lines.len());
    for l in lines {
        out.simple(l);
    }
    Ok(())
}

/// Writes up to `n` items drawn one at a time by `draw` — the elements of a
/// reply whose length the client chose (random members with a negative
/// count), so nothing is sized by `n` — and stops once the output reaches
/// `cap` bytes ([`Ctx::reply_cap`]). True when it stopped there: the caller
/// then calls [`Ctx::reply_capped`].
pub(crate) fn stream_drawn<T>(
    out: &mut Reply,
    n: usize,
    cap: usize,
    mut draw: impl FnMut() -> Option<T>,
    mut write: impl FnMut(&mut Reply, T),
) -> bool {
    for _ in 0..n {
        let Some(item) = draw() else { break };
        write(out, item);
        if out.buf.len() >= cap {
            return true;
        }
    }
    false
}
