//! Server commands: CONFIG, CLIENT, COMMAND, INFO, SLOWLOG, LATENCY, MEMORY, DEBUG,
//! TIME, ROLE, MONITOR, SHUTDOWN; SAVE, BGSAVE, LASTSAVE in `persistence`.

pub(crate) mod client;
mod command;
mod config;
pub(crate) mod debug;
mod debug_crash;
mod debug_data;
pub(crate) mod debug_flags;
mod debug_introspect;
mod debug_more;
pub mod debug_restart;
pub mod info;
pub mod latency;
mod latency_doctor;
pub mod memory;
pub mod module;
pub mod persistence;
pub mod slowlog;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::server::Ctx;

/// Flags most server subcommands share.
const ADMIN_SUB: u32 = ADMIN | NOSCRIPT | LOADING | STALE;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::container("config", -2, config::SUBS),
    CommandSpec::container("client", -2, client::SUBS),
    CommandSpec::new("command", -1, LOADING | STALE, (0, 0, 0), command::command)
        .with_subcommands(command::SUBS),
    CommandSpec::new("info", -1, LOADING | STALE, (0, 0, 0), info::info),
    CommandSpec::new("time", 1, LOADING | STALE | FAST, (0, 0, 0), time),
    CommandSpec::new(
        "role",
        1,
        NOSCRIPT | LOADING | STALE | FAST,
        (0, 0, 0),
        role,
    ),
    CommandSpec::new("monitor", 1, ADMIN_SUB, (0, 0, 0), monitor),
    CommandSpec::container("slowlog", -2, slowlog::SUBS),
    CommandSpec::container("memory", -2, memory::SUBS),
    CommandSpec::container("latency", -2, latency::SUBS),
    CommandSpec::new("debug", -2, ADMIN_SUB | PROTECTED, (0, 0, 0), debug::debug),
    CommandSpec::container("module", -2, module::SUBS),
    CommandSpec::new(
        "shutdown",
        -1,
        ADMIN_SUB | NO_MULTI | ALLOW_BUSY,
        (0, 0, 0),
        shutdown,
    ),
];

/// `ERR unknown subcommand or wrong number of arguments for 'SUB'. Try CMD HELP.`
/// (Redis's answer when a subcommand gets arguments it does not take; SUB as typed.)
pub(crate) fn wrong_sub_args(args: &Args, cmd: &str) -> Error {
    Error::Msg(
        format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try {cmd} HELP.",
            String::from_utf8_lossy(args.at(1))
        )
        .into(),
    )
}

/// True for a client on a unix socket or from 127.0.0.1 or ::1 (Redis's
/// `islocalClient`: what protected mode and the `local` value of
/// `enable-debug-command`, `enable-module-command` and
/// `enable-protected-configs` allow).
pub(crate) fn is_local(c: &crate::server::client::Client) -> bool {
    c.conn_kind == crate::server::client::ConnKind::Unix || c.addr.is_local()
}

/// ```text
/// TIME
/// ```
/// Array: unix seconds and microseconds, as bulk strings.
fn time(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let us = crate::clock::real_now_us();
    let out = ctx.out();
    out.array(2);
    out.bulk_int(us / 1_000_000);
    out.bulk_int(us % 1_000_000);
    Ok(())
}

/// ```text
/// ROLE
/// ```
/// Array: this server's role, its replication offset, and its replicas.
fn role(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    if crate::repl::replica::info::role(ctx) {
        return Ok(());
    }
    crate::repl::role(ctx.srv, &mut ctx.client.reply);
    Ok(())
}

/// ```text
/// MONITOR
/// ```
/// `OK`, then every command the server runs, as status lines.
fn monitor(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    if ctx.in_exec {
        return Err(Error::msg("MONITOR isn't allowed for DENY BLOCKING client"));
    }
    if !ctx.client.monitor {
        ctx.client.monitor = true;
        let id = ctx.client.id;
        ctx.srv.monitors.push(id);
    }
    ctx.out().ok();
    Ok(())
}

/// ```text
/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]
/// ```
/// No reply on success (the server exits); an error otherwise.
fn shutdown(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    use crate::net::shutdown::{self as sd, Outcome};
    let mut save = None;
    let mut abort = false;
    let mut now = false;
    let mut force = false;
    for a in args.by_ref() {
        if a.eq_ignore_ascii_case(b"nosave") {
            if save == Some(true) {
                return Err(Error::Syntax);
            }
            save = Some(false);
        } else if a.eq_ignore_ascii_case(b"save") {
            if save == Some(false) {
                return Err(Error::Syntax);
            }
            save = Some(true);
        } else if a.eq_ignore_ascii_case(b"now") {
            now = true;
        } else if a.eq_ignore_ascii_case(b"force") {
            force = true;
        } else if a.eq_ignore_ascii_case(b"abort") {
            abort = true;
        } else {
            return Err(Error::Syntax);
        }
    }
    if abort && (save.is_some() || now || force) {
        return Err(Error::Syntax);
    }
    if abort {
        if sd::abort(ctx.srv) {
            ctx.out().ok();
            return Ok(());
        }
        return Err(Error::msg("No shutdown in progress."));
    }
    // While a script is busy only SHUTDOWN NOSAVE may stop the server (the
    // gate lets SHUTDOWN through as allow-busy).
    if save != Some(false) {
        if let Some(function) = crate::script::busy::busy_script() {
            return Err(crate::error::Rejection::Busy { function }.error());
        }
    }
    // While the dataset loads, the data is not all there: never saved
    // (Redis's shutdownCommand).
    if crate::persist::loading::active(ctx.srv) {
        save = Some(false);
    }
    // A shutdown already waiting for replicas: this client waits with it.
    let waiting = ctx
        .srv
        .shutdown_pending
        .as_ref()
        .is_some_and(|p| p.deadline_ms.is_some());
    let outcome = if waiting {
        Outcome::Waiting
    } else {
        sd::request(ctx.srv, save, force, now).map_err(|_| Error::msg(sd::SHUTDOWN_FAILED))?
    };
    match outcome {
        // No reply: the connection closes when the process ends, as
        // Redis exits inside the command (a client that saw it close
        // before the listener did could connect again).
        Outcome::Done => {}
        Outcome::Waiting => {
            sd::wait_here(ctx.srv, ctx.client);
            crate::server::blocking::block(ctx, Vec::new(), crate::db::Kind::Str, 0, args);
        }
    }
    Ok(())
}
