//! Command families, one module each; every module exports its `SPECS`.
//!
//! # Adding a command
//!
//! 1. The handler: a `fn(&mut Ctx, &mut Args) -> CmdResult` in its family's
//!    module (a new file when the family grows past one sitting). Parse every
//!    option into a typed value first, then touch the keyspace; errors come
//!    from `crate::error`. Arity is already checked by the gate.
//! 2. Its spec line in the family's `SPECS`: name, arity, flags, key
//!    positions, exactly as `COMMAND INFO <name>` answers on Redis 7.0.15.
//!    The flags are what the gate decides by (write, denyoom, noscript, ...).
//!    COMMAND/COMMAND DOCS serve the metadata recorded in
//!    `src/command/meta/` (`compat/gen_commands.py` records it); the table
//!    test fails when a spec disagrees with it.
//! 3. A compat case: `compat/cases/<family>/<name>.case` with normal use,
//!    edge cases and every error, then `python3 compat/record.py` on it to
//!    record Redis's replies; commit both files. `cargo test --test compat
//!    <family>/<name>` replays it.
//! 4. If the command writes and Redis propagates something other than the
//!    command itself, say so with the propagation API (see `command::dispatch`).

use crate::command::CommandSpec;
use crate::error::CmdResult;
use crate::resp::encode::Reply;
use crate::server::Ctx;

pub mod acl;
pub mod aof;
pub mod bitmap;
pub mod cluster;
pub mod connection;
pub mod geo;
pub mod hash;
pub mod hll;
pub mod keyspace;
pub mod list;
pub mod pfselftest;
pub mod pubsub;
pub mod replication;
pub mod scan;
pub mod scripting;
pub mod server;
pub mod set;
pub mod sort;
pub mod stream;
pub mod string;
pub mod testctl;
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
    geo::SPECS,
    bitmap::SPECS,
    hll::SPECS,
    stream::SPECS,
    txn::SPECS,
    scripting::SPECS,
    pubsub::SPECS,
    replication::SPECS,
    crate::repl::replica::command::SPECS,
    server::SPECS,
    server::persistence::SPECS,
    aof::SPECS,
    connection::SPECS,
    acl::SPECS,
    cluster::SPECS,
    testctl::SPECS,
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
