//! WAIT: what a standalone server without replicas answers.

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::Kind;
use crate::error::{CmdResult, Error};
use crate::server::{blocking, Ctx};
use crate::types::number;

pub static SPECS: &[CommandSpec] = &[CommandSpec::new("wait", 3, NOSCRIPT, (0, 0, 0), wait)];

/// ```text
/// WAIT numreplicas timeout
/// ```
/// Integer: replicas that acknowledged, always 0 here. Asking for at least
/// one replica blocks until the timeout (milliseconds, 0 = forever), as
/// Redis does with no replica attached; inside MULTI it answers at once.
fn wait(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let numreplicas = args.next_i64()?;
    let timeout = number::parse_i64(args.at(2))
        .ok_or_else(|| Error::msg("timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(Error::msg("timeout is negative"));
    }
    if numreplicas <= 0 || ctx.in_exec {
        ctx.out().int(0);
        return Ok(());
    }
    // No key can serve it: only the timeout (or disconnect) ends the wait.
    blocking::block(ctx, Vec::new(), Kind::Str, timeout, args);
    Ok(())
}
