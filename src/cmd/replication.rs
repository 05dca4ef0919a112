//! WAIT: what a standalone server without replicas answers.

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::Kind;
use crate::error::CmdResult;
use crate::server::{blocking, Ctx};

pub static SPECS: &[CommandSpec] = &[CommandSpec::new("wait", 3, NOSCRIPT, (0, 0, 0), wait)];

/// ```text
/// WAIT numreplicas timeout
/// ```
/// Integer: replicas that acknowledged, always 0 here. Asking for at least
/// one replica blocks until the timeout (milliseconds, 0 = forever), as
/// Redis does with no replica attached; inside MULTI it answers at once.
fn wait(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let numreplicas = args.next_i64()?;
    let timeout = blocking::parse_timeout_ms(args.at(2))?;
    if numreplicas <= 0 || ctx.in_exec {
        ctx.out().int(0);
        return Ok(());
    }
    // No key can serve it: only the timeout (or disconnect) ends the wait.
    blocking::block(ctx, Vec::new(), Kind::Str, timeout, args);
    Ok(())
}
