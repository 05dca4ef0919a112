//! DEBUG (SLEEP here, more in `debug_more`; only when `enable-debug-command` allows it).

use crate::command::Args;
use crate::error::CmdResult;
use crate::server::Ctx;

/// The gate's answer to DEBUG when `enable-debug-command` refuses it.
pub const DEBUG_REFUSED: &str = "DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

/// True when `enable-debug-command` lets this client run DEBUG: `yes`, or
/// `local` on a local connection. The gate checks it (before AUTH, as Redis).
pub fn debug_allowed(srv: &crate::server::Server, c: &crate::server::client::Client) -> bool {
    match srv.config.enable_debug {
        1 => true,
        2 => super::is_local(c),
        _ => false,
    }
}

/// ```text
/// DEBUG SLEEP seconds
/// ```
/// `OK` after sleeping (the whole server waits, as in Redis). The gate
/// refuses it unless `enable-debug-command` allows it (see [`debug_allowed`]).
pub fn debug(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let sub = args.next().unwrap_or_default();
    if sub.eq_ignore_ascii_case(b"sleep") && args.len() == 3 {
        let secs = crate::types::number::parse_f64(args.at(2)).unwrap_or(0.0);
        if secs > 0.0 && secs.is_finite() {
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
        }
        ctx.out().ok();
        return Ok(());
    }
    if sub.eq_ignore_ascii_case(b"reload") {
        return super::persistence::debug_reload(ctx, args);
    }
    if let Some(r) = super::debug_more::run(ctx, sub, args) {
        return r;
    }
    Err(super::wrong_sub_args(args, "DEBUG"))
}
