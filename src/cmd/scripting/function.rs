//! FCALL, FCALL_RO and FUNCTION LOAD|LIST|DELETE|FLUSH|DUMP|RESTORE|STATS|KILL|HELP.

use super::{kill_running, parse_keys_args};
use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::script::function::{flag_names, NO_WRITES};
use crate::script::{self, Call};
use crate::server::Ctx;

pub static SUBS: &[CommandSpec] = &[
    CommandSpec::new("function|delete", 3, WRITE | NOSCRIPT, (0, 0, 0), delete),
    CommandSpec::new("function|dump", 2, NOSCRIPT, (0, 0, 0), dump),
    CommandSpec::new("function|flush", -2, WRITE | NOSCRIPT, (0, 0, 0), flush),
    CommandSpec::new("function|help", 2, LOADING | STALE, (0, 0, 0), help),
    CommandSpec::new("function|kill", 2, NOSCRIPT | ALLOW_BUSY, (0, 0, 0), kill),
    CommandSpec::new("function|list", -2, NOSCRIPT, (0, 0, 0), list),
    CommandSpec::new(
        "function|load",
        -3,
        WRITE | DENYOOM | NOSCRIPT,
        (0, 0, 0),
        load,
    ),
    CommandSpec::new(
        "function|restore",
        -3,
        WRITE | DENYOOM | NOSCRIPT,
        (0, 0, 0),
        restore,
    ),
    CommandSpec::new("function|stats", 2, NOSCRIPT | ALLOW_BUSY, (0, 0, 0), stats),
];

fn fcall_generic(ctx: &mut Ctx, args: &Args, read_only: bool) -> CmdResult {
    super::feed_monitors(ctx, args);
    let (func_ref, flags, name) = {
        let f = ctx
            .srv
            .script
            .functions
            .get(args.at(1))
            .ok_or_else(|| Error::msg("Function not found"))?;
        (f.func_ref, f.flags, f.name.clone())
    };
    if read_only && flags & NO_WRITES == 0 {
        return Err(Error::msg(
            "Can not execute a script with write flag using *_ro command.",
        ));
    }
    if crate::types::number::parse_i64(args.at(2)).is_none() {
        return Err(Error::msg("Bad number of keys provided"));
    }
    let (keys, argv) = parse_keys_args(args)?;
    crate::script::cmd_flags::verify_start_oom(ctx.srv, flags)?;
    let call = Call {
        func_ref,
        name: name.into(),
        keys,
        args: argv,
        read_only: flags & NO_WRITES != 0,
        allow_oom: flags & crate::script::cmd_flags::ALLOW_OOM != 0,
        is_function: true,
        command: args.from(0).map(|a| a.to_vec()).collect(),
    };
    script::run(ctx.srv, ctx.client, call);
    Ok(())
}

/// ```text
/// FCALL function numkeys [key [key ...]] [arg [arg ...]]
/// ```
/// The function's return value converted to a reply.
pub fn fcall(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    fcall_generic(ctx, args, false)
}

/// ```text
/// FCALL_RO function numkeys [key [key ...]] [arg [arg ...]]
/// ```
/// As FCALL, for functions flagged `no-writes`.
pub fn fcall_ro(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    fcall_generic(ctx, args, true)
}

/// ```text
/// FUNCTION LOAD [REPLACE] function-code
/// ```
/// The library name.
fn load(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mut replace = false;
    while args.remaining() > 1 {
        if args.eat_ci("REPLACE") {
            replace = true;
        } else {
            let a = args.next().unwrap_or_default();
            return Err(Error::Msg(
                format!("Unknown option given: {}", String::from_utf8_lossy(a)).into(),
            ));
        }
    }
    let code = args.next_or_syntax()?;
    let name = ctx
        .srv
        .script
        .functions
        .load(code, replace)
        .map_err(|e| Error::Msg(e.into()))?;
    ctx.srv.ks.dirty += 1;
    ctx.out().bulk(name.as_bytes());
    Ok(())
}

/// ```text
/// FUNCTION LIST [LIBRARYNAME library-name-pattern] [WITHCODE]
/// ```
/// Array of library maps (name, engine, functions, and code with WITHCODE).
fn list(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    while let Some(a) = args.next() {
        if !with_code && a.eq_ignore_ascii_case(b"withcode") {
            with_code = true;
        } else if pattern.is_none() && a.eq_ignore_ascii_case(b"libraryname") {
            pattern = Some(
                args.next()
                    .ok_or_else(|| Error::msg("library name argument was not given"))?,
            );
        } else {
            return Err(Error::Msg(
                format!("Unknown argument {}", String::from_utf8_lossy(a)).into(),
            ));
        }
    }
    let funcs = &ctx.srv.script.functions;
    let out = &mut ctx.client.reply;
    let libs: Vec<_> = funcs
        .libs
        .iter()
        .filter(|l| {
            pattern.is_none_or(|p| crate::types::glob::matches(p, l.name.as_bytes(), false))
        })
        .collect();
    out.array(libs.len());
    for lib in libs {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(lib.name.as_bytes());
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(lib.functions.len());
        for f in &lib.functions {
            out.map(3);
            out.bulk(b"name");
            out.bulk(f.name.as_bytes());
            out.bulk(b"description");
            match &f.desc {
                Some(d) => out.bulk(d),
                None => out.null(),
            }
            out.bulk(b"flags");
            let names = flag_names(f.flags);
            out.set(names.len());
            for n in names {
                out.simple(n);
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&lib.code);
        }
    }
    Ok(())
}

/// ```text
/// FUNCTION DELETE library-name
/// ```
/// `OK`.
fn delete(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if !ctx.srv.script.functions.delete(args.at(2)) {
        return Err(Error::msg("Library not found"));
    }
    ctx.srv.ks.dirty += 1;
    ctx.out().ok();
    Ok(())
}

/// ```text
/// FUNCTION FLUSH [ASYNC | SYNC]
/// ```
/// `OK`. ASYNC (or `lazyfree-lazy-user-flush yes` without an option) frees
/// the libraries in the background.
fn flush(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if args.len() > 3 {
        return Err(sub_syntax_error(args));
    }
    let lazy = if args.len() == 2 {
        crate::db::lazyfree::policy().user_flush
    } else if args.eat_ci("SYNC") {
        false
    } else if args.eat_ci("ASYNC") {
        true
    } else {
        return Err(Error::msg("FUNCTION FLUSH only supports SYNC|ASYNC option"));
    };
    ctx.srv.script.functions.flush(lazy);
    ctx.srv.ks.dirty += 1;
    ctx.out().ok();
    Ok(())
}

/// ```text
/// FUNCTION KILL
/// ```
/// `OK` when the running function was told to stop; `NOTBUSY` otherwise.
fn kill(ctx: &mut Ctx, _args: &mut Args) -> CmdResult {
    kill_running(false)?;
    ctx.out().ok();
    Ok(())
}

/// ```text
/// FUNCTION STATS
/// ```
/// Map: the running function (or null) and per-engine counts.
fn stats(ctx: &mut Ctx, _args: &mut Args) -> CmdResult {
    // SAFETY: on the data thread; a running script is suspended in its hook.
    let running = unsafe { script::run_ctx() }.map(|r| {
        (
            r.is_function,
            r.name.clone(),
            r.command.clone(),
            (crate::clock::system_us() - r.start_us) / 1000,
        )
    });
    if let Some((false, ..)) = running {
        return Err(Error::coded(script::busy::BUSY_EVAL));
    }
    let funcs = &ctx.srv.script.functions;
    let (nlibs, nfuncs) = (funcs.libs.len(), funcs.functions_count());
    let out = &mut ctx.client.reply;
    out.map(2);
    out.bulk(b"running_script");
    match running {
        Some((_, name, command, ms)) => {
            out.map(3);
            out.bulk(b"name");
            out.bulk(name.as_bytes());
            out.bulk(b"command");
            out.array(command.len());
            for a in &command {
                out.bulk(a);
            }
            out.bulk(b"duration_ms");
            out.int(ms);
        }
        None => out.null(),
    }
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.int(nlibs as i64);
    out.bulk(b"functions_count");
    out.int(nfuncs as i64);
    Ok(())
}

/// ```text
/// FUNCTION DUMP
/// ```
/// The libraries serialized as Redis's DUMP-style payload.
fn dump(ctx: &mut Ctx, _args: &mut Args) -> CmdResult {
    let compress = ctx.srv.config.get("rdbcompression") == Some("yes");
    let codes = ctx.srv.script.functions.libs.iter().map(|l| &l.code[..]);
    let payload = crate::persist::rdb::dump_functions(codes, compress);
    ctx.out().bulk(&payload);
    Ok(())
}

/// ```text
/// FUNCTION RESTORE serialized-value [FLUSH | APPEND | REPLACE]
/// ```
/// `OK`.
fn restore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let data = args.at(2);
    #[derive(PartialEq)]
    enum Policy {
        Flush,
        Append,
        Replace,
    }
    let policy = if args.len() == 3 {
        Policy::Append
    } else if args.len() == 4 {
        let p = args.at(3);
        if p.eq_ignore_ascii_case(b"flush") {
            Policy::Flush
        } else if p.eq_ignore_ascii_case(b"append") {
            Policy::Append
        } else if p.eq_ignore_ascii_case(b"replace") {
            Policy::Replace
        } else {
            return Err(Error::msg(
                "Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ));
        }
    } else {
        return Err(sub_syntax_error(args));
    };
    let codes = crate::persist::rdb::restore_functions(data).map_err(|e| Error::Msg(e.into()))?;
    let funcs = &mut ctx.srv.script.functions;
    // Load into a fresh set first, so a failure leaves the current libraries alone.
    let mut fresh = crate::script::function::Functions::default();
    for code in &codes {
        fresh.load(code, false).map_err(|e| Error::Msg(e.into()))?;
    }
    if policy == Policy::Flush {
        funcs.flush(false);
    } else {
        for lib in &fresh.libs {
            let exists = funcs.libs.iter().any(|l| l.name == lib.name);
            if exists && policy == Policy::Append {
                return Err(Error::Msg(
                    format!("Library {} already exists", lib.name).into(),
                ));
            }
        }
    }
    // Apply: a library of the same name is replaced (REPLACE).
    let backup: Vec<(String, Vec<u8>)> = funcs
        .libs
        .iter()
        .map(|l| (l.name.clone(), l.code.clone()))
        .collect();
    for code in &codes {
        if let Err(e) = funcs.load(code, true) {
            funcs.flush(false);
            for (_, c) in &backup {
                let _ = funcs.load(c, true);
            }
            return Err(Error::Msg(e.into()));
        }
    }
    ctx.srv.ks.dirty += 1;
    ctx.out().ok();
    Ok(())
}

/// Redis's `addReplySubcommandSyntaxError`, naming the subcommand as typed.
fn sub_syntax_error(args: &Args) -> Error {
    Error::Msg(
        format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
            String::from_utf8_lossy(args.at(1))
        )
        .into(),
    )
}

const HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];

/// ```text
/// FUNCTION HELP
/// ```
/// Array of status lines.
fn help(ctx: &mut Ctx, _args: &mut Args) -> CmdResult {
    crate::cmd::help_reply(ctx, HELP)
}
