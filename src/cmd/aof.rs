//! Append-only file commands: BGREWRITEAOF (the work is in `persist::aof`).

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::CmdResult;
use crate::server::Ctx;

pub static SPECS: &[CommandSpec] = &[CommandSpec::new(
    "bgrewriteaof",
    1,
    ADMIN | NOSCRIPT | NO_ASYNC_LOADING,
    (0, 0, 0),
    bgrewriteaof,
)];

/// ```text
/// BGREWRITEAOF
/// ```
/// Status `Background append only file rewriting started` (or `scheduled`).
fn bgrewriteaof(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::persist::aof::bgrewriteaof_command(ctx)
}
