//! COMMAND and its subcommands, served from Redis's recorded metadata
//! (`command::meta`) for the commands in Oxidis's table.

use crate::command::flags::*;
use crate::command::names::Names;
use crate::command::table::CmdRef;
use crate::command::{meta, Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::resp::value::Value;
use crate::server::{Ctx, Server};
use crate::types::glob;

const META: u32 = LOADING | STALE;

pub static SUBS: &[CommandSpec] = &[
    CommandSpec::new("command|info", -2, META, (0, 0, 0), info),
    CommandSpec::new("command|docs", -2, META, (0, 0, 0), docs),
    CommandSpec::new("command|count", 2, META, (0, 0, 0), count),
    CommandSpec::new("command|getkeys", -4, META, (0, 0, 0), getkeys),
    CommandSpec::new("command|help", 2, META, (0, 0, 0), help),
    CommandSpec::new("command|list", -2, META, (0, 0, 0), list),
    CommandSpec::new(
        "command|getkeysandflags",
        -4,
        META,
        (0, 0, 0),
        getkeysandflags,
    ),
];

const HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
    "HELP",
    "    Prints this help.",
];

/// Whether COMMAND and its subcommands show a command: the test controls
/// (OXIDIS) only on a server started with `enable-test-controls yes`. So a
/// default server's COMMAND, COUNT, LIST, INFO and DOCS answer what Redis's
/// do (client libraries and the compat cases compare them), while a server
/// started for tests documents the command it answers to.
fn shown(test_controls: bool, spec: &CommandSpec) -> bool {
    test_controls || !spec.has(TEST_CONTROL)
}

/// Every command COMMAND shows (see [`shown`]), in table order.
fn shown_commands(srv: &Server) -> impl Iterator<Item = CmdRef> + '_ {
    let tc = srv.config.enable_test_controls;
    srv.config
        .names
        .commands()
        .filter(move |c| shown(tc, c.spec))
}

/// ```text
/// COMMAND
/// ```
/// Array: the COMMAND INFO entry of every command that answers to a name
/// (a renamed one under its original name, as Redis shows it).
pub fn command(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let cmds: Vec<_> = shown_commands(ctx.srv).collect();
    let out = ctx.out();
    out.array(cmds.len());
    for c in cmds {
        meta::info_for(c.spec).write(out);
    }
    Ok(())
}

/// ```text
/// COMMAND INFO [command-name ...]
/// ```
/// Array of entries (null for unknown names); every command without names.
fn info(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if !args.has_more() {
        return command(ctx, args);
    }
    let tc = ctx.srv.config.enable_test_controls;
    let names = &ctx.srv.config.names;
    let out = &mut ctx.client.reply;
    out.array(args.remaining());
    for name in args.by_ref() {
        match names.lookup_path(name).filter(|c| shown(tc, c.spec)) {
            Some(cmd) => meta::info_for(cmd.spec).write(out),
            None => out.null(),
        }
    }
    Ok(())
}

/// ```text
/// COMMAND DOCS [command-name ...]
/// ```
/// Map of command name → documentation; unknown names are left out.
fn docs(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let tc = ctx.srv.config.enable_test_controls;
    let names = &ctx.srv.config.names;
    let specs: Vec<&'static CommandSpec> = if args.has_more() {
        args.from(args.pos())
            .filter_map(|n| names.lookup_path(n).map(|c| c.spec))
            .filter(|s| shown(tc, s))
            .collect()
    } else {
        shown_commands(ctx.srv).map(|c| c.spec).collect()
    };
    let out = &mut ctx.client.reply;
    out.map(specs.len());
    for s in specs {
        out.bulk(s.name.as_bytes());
        meta::docs_for(s).write(out);
    }
    Ok(())
}

/// ```text
/// COMMAND COUNT
/// ```
/// Integer: number of top-level commands.
fn count(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let n = shown_commands(ctx.srv).count() as i64;
    ctx.out().int(n);
    Ok(())
}

/// ```text
/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]
/// ```
/// Array of command names, subcommands included (`config|get`).
fn list(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    enum Filter<'a> {
        All,
        Module,
        AclCat(String),
        Pattern(&'a [u8]),
    }
    let filter = if !args.has_more() {
        Filter::All
    } else {
        if args.remaining() != 3 || !args.eat_ci("FILTERBY") {
            return Err(Error::Syntax);
        }
        let kind = args.next().unwrap_or_default();
        let val = args.next().unwrap_or_default();
        if kind.eq_ignore_ascii_case(b"MODULE") {
            Filter::Module
        } else if kind.eq_ignore_ascii_case(b"ACLCAT") {
            Filter::AclCat(format!(
                "@{}",
                String::from_utf8_lossy(val).to_ascii_lowercase()
            ))
        } else if kind.eq_ignore_ascii_case(b"PATTERN") {
            Filter::Pattern(val)
        } else {
            return Err(Error::Syntax);
        }
    };
    // Every command that answers to a name, then its subcommands (full names).
    let listed = shown_commands(ctx.srv)
        .flat_map(|c| std::iter::once(c.spec).chain(c.spec.subcommands.iter()));
    let names: Vec<&'static str> = listed
        .filter(|s| match &filter {
            Filter::All => true,
            Filter::Module => false,
            Filter::AclCat(cat) => {
                meta::get(s.name).is_some_and(|m| m.acl_categories().contains(cat))
            }
            Filter::Pattern(p) => glob::matches(p, s.name.as_bytes(), true),
        })
        .map(|s| s.name)
        .collect();
    let out = ctx.out();
    out.array(names.len());
    for n in names {
        out.bulk(n.as_bytes());
    }
    Ok(())
}

/// The command named at the cursor and the key positions in the rest
/// (COMMAND GETKEYS*), checked in Redis's order: known command, has keys at
/// all, arity, then keys found (none is fine for `no_mandatory_keys` commands
/// such as EVAL with 0 keys).
fn keys_of<'a>(
    names: &Names,
    args: &Args<'a>,
) -> Result<(&'static CommandSpec, Args<'a>, Vec<usize>), Error> {
    let start = args.pos();
    let argv = crate::command::Argv::from_slices(args.from(start));
    let sub_args = argv.args();
    let spec = match crate::command::dispatch::resolve(names, &sub_args) {
        Ok(c) => c.spec,
        Err(_) => return Err(Error::msg("Invalid command specified")),
    };
    let has_keys = spec.first_key > 0
        || spec.keys_fn.is_some()
        || meta::get(spec.name).is_some_and(|m| !m.key_specs().is_empty());
    if !has_keys {
        return Err(Error::msg("The command has no key arguments"));
    }
    if !spec.arity_ok(sub_args.len()) {
        return Err(Error::msg(
            "Invalid number of arguments specified for command",
        ));
    }
    let keys = spec.key_positions(&sub_args);
    if keys.is_empty() && !spec.has(NO_MANDATORY_KEYS) {
        return Err(Error::msg("Invalid arguments specified for command"));
    }
    // The positions index the sub-command's arguments; shift them to ours.
    let shifted: Vec<usize> = keys.into_iter().map(|k| k + start).collect();
    Ok((spec, Args::new_at(args, start), shifted))
}

/// ```text
/// COMMAND GETKEYS command [arg ...]
/// ```
/// Array of the keys the command would touch.
fn getkeys(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (_, a, keys) = keys_of(&ctx.srv.config.names, args)?;
    let out = ctx.out();
    out.array(keys.len());
    for k in keys {
        out.bulk(a.at(k));
    }
    Ok(())
}

/// ```text
/// COMMAND GETKEYSANDFLAGS command [arg ...]
/// ```
/// Array of `[key, flags]` pairs, the flags from the command's key specs.
fn getkeysandflags(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let start = args.pos();
    let (spec, a, keys) = keys_of(&ctx.srv.config.names, args)?;
    let argv = crate::command::Argv::from_slices(a.from(start));
    let sub = argv.args();
    let out = ctx.out();
    out.array(keys.len());
    for k in keys {
        out.array(2);
        out.bulk(a.at(k));
        Value::Set(meta::key_flags(spec, &sub, k - start)).write(out);
    }
    Ok(())
}

/// ```text
/// COMMAND HELP
/// ```
fn help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::cmd::help_reply(ctx, HELP)
}
