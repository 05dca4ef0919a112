//! DEBUG (SLEEP here, more in `debug_more`; only when `enable-debug-command` allows it).

use crate::command::Args;
use crate::error::CmdResult;
use crate::server::Ctx;

/// The gate's check of a `PROTECTED` command (DEBUG; MODULE LOAD, LOADEX,
/// UNLOAD): refused unless its `enable-debug-command` /
/// `enable-module-command` is `yes`, or `local` on a local connection
/// (Redis's `allowProtectedAction`, checked before AUTH).
pub fn protected_refusal(
    srv: &crate::server::Server,
    c: &crate::server::client::Client,
    spec: &crate::command::CommandSpec,
) -> Option<crate::error::Rejection> {
    let module = spec.name.starts_with("module|");
    let option = match module {
        true => srv.config.enable_module,
        false => srv.config.enable_debug,
    };
    let allowed = option == 1 || (option == 2 && super::is_local(c));
    (!allowed).then_some(crate::error::Rejection::Protected { module })
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
    if let Some(r) = super::debug_data::run(ctx, sub, args) {
        return r;
    }
    Err(super::wrong_sub_args(args, "DEBUG"))
}
