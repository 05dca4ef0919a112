//! MODULE LIST|LOAD|LOADEX|UNLOAD|HELP for a server that loads no modules: LOAD fails as Redis fails to load one.
//!
//! LOAD, LOADEX and UNLOAD carry the `PROTECTED` flag: the gate refuses them
//! unless `enable-module-command` allows it (LIST and HELP always run, as in
//! Redis 7.0.15).

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::server::Ctx;

const CHANGE: u32 = ADMIN | NOSCRIPT | NO_ASYNC_LOADING | PROTECTED;

pub static SUBS: &[CommandSpec] = &[
    CommandSpec::new("module|help", 2, LOADING | STALE, (0, 0, 0), help),
    CommandSpec::new("module|load", -3, CHANGE, (0, 0, 0), load),
    CommandSpec::new("module|list", 2, ADMIN | NOSCRIPT, (0, 0, 0), list),
    CommandSpec::new("module|loadex", -3, CHANGE, (0, 0, 0), loadex),
    CommandSpec::new("module|unload", 3, CHANGE, (0, 0, 0), unload),
];

const HELP: &[&str] = &[
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::cmd::help_reply(ctx, HELP)
}

/// ```text
/// MODULE LIST
/// ```
/// Array of loaded modules: always empty.
fn list(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    ctx.out().array(0);
    Ok(())
}

/// ```text
/// MODULE LOAD path [arg ...]
/// ```
/// Always Redis's load error; the reason is logged (see [`load_failure`]).
fn load(_: &mut Ctx, args: &mut Args) -> CmdResult {
    crate::log::warning(&load_failure(args.at(2)));
    Err(Error::msg(crate::error::MODULE_LOAD_FAILED))
}

/// ```text
/// MODULE LOADEX path [CONFIG name value ...] [ARGS arg ...]
/// ```
/// As LOAD, after Redis's check of the options (a bad one is logged instead).
fn loadex(_: &mut Ctx, args: &mut Args) -> CmdResult {
    let opts = args.from(3).collect::<Vec<_>>();
    let mut i = 0;
    let mut bad = None;
    while i < opts.len() {
        if opts[i].eq_ignore_ascii_case(b"CONFIG") {
            if i + 2 >= opts.len() {
                bad = Some("CONFIG specified without name value pair".to_string());
                break;
            }
            i += 3;
        } else if opts[i].eq_ignore_ascii_case(b"ARGS") {
            break;
        } else {
            bad = Some(format!(
                "Syntax Error from arguments to loadex around {}.",
                crate::command::gate::c_str(opts[i], usize::MAX)
            ));
            break;
        }
    }
    match bad {
        Some(why) => crate::log::notice(&why),
        None => crate::log::warning(&load_failure(args.at(2))),
    }
    Err(Error::msg(crate::error::MODULE_LOAD_FAILED))
}

/// ```text
/// MODULE UNLOAD name
/// ```
/// No module is ever loaded, so there is none by that name.
fn unload(_: &mut Ctx, _: &mut Args) -> CmdResult {
    Err(Error::msg(crate::error::MODULE_UNLOAD_NO_SUCH))
}

/// The modules and module options of the config file, taken at start-up
/// after `Server initialized` as Redis's `moduleLoadFromQueue` takes them:
/// a `loadmodule` never loads, so the first one is logged with its reason
/// and the server must exit with status 1; so must module options without
/// a module. False when the server must exit.
pub fn load_queued(loadmodules: &[Vec<u8>], module_configs: bool) -> bool {
    if let Some(path) = loadmodules.first() {
        crate::log::warning(&load_failure(path));
        crate::log::warning(&format!(
            "Can't load module from {}: server aborting",
            String::from_utf8_lossy(path)
        ));
        return false;
    }
    if module_configs {
        crate::log::warning("Module Configuration detected without loadmodule directive or no ApplyConfig call: aborting");
        return false;
    }
    true
}

/// The line Redis's `moduleLoad` logs when `path` does not load: a missing
/// file as `dlopen` reports it, a file without execute permission as Redis
/// checks it. Oxidis cannot run a Redis module (their API is C calls into
/// redis-server), so any other file fails with a reason of its own.
pub fn load_failure(path: &[u8]) -> String {
    use std::os::unix::fs::PermissionsExt;
    let shown = String::from_utf8_lossy(path);
    let why = match std::fs::metadata(crate::config::bytes_path(path)) {
        Ok(m) if m.permissions().mode() & 0o111 == 0 => {
            "It does not have execute permissions.".to_string()
        }
        Ok(_) => format!("{shown}: Oxidis does not load Redis modules"),
        Err(e) => format!(
            "{shown}: cannot open shared object file: {}",
            crate::config::os_error(&e)
        ),
    };
    format!("Module {shown} failed to load: {why}")
}
