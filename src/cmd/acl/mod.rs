//! The ACL command: users (SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI),
//! categories (CAT), GENPASS, the log (LOG), DRYRUN, LOAD/SAVE, HELP.

mod info;

use crate::acl::describe;
use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::server::Ctx;

use crate::acl::clients::{kill_pubsub_clients_if_needed, kill_user_clients};

const SUB: u32 = NOSCRIPT | LOADING | STALE;
const ADMIN_SUB: u32 = ADMIN | NOSCRIPT | LOADING | STALE;

pub static SUBS: &[CommandSpec] = &[
    CommandSpec::new("acl|cat", -2, SUB, (0, 0, 0), info::cat),
    CommandSpec::new("acl|deluser", -3, ADMIN_SUB, (0, 0, 0), deluser),
    CommandSpec::new("acl|dryrun", -4, ADMIN_SUB, (0, 0, 0), info::dryrun),
    CommandSpec::new("acl|genpass", -2, SUB, (0, 0, 0), info::genpass),
    CommandSpec::new("acl|getuser", 3, ADMIN_SUB, (0, 0, 0), getuser),
    CommandSpec::new("acl|list", 2, ADMIN_SUB, (0, 0, 0), list),
    CommandSpec::new("acl|load", 2, ADMIN_SUB, (0, 0, 0), load),
    CommandSpec::new("acl|log", -2, ADMIN_SUB, (0, 0, 0), info::log),
    CommandSpec::new("acl|save", 2, ADMIN_SUB, (0, 0, 0), save),
    CommandSpec::new("acl|setuser", -3, ADMIN_SUB, (0, 0, 0), setuser),
    CommandSpec::new("acl|users", 2, ADMIN_SUB, (0, 0, 0), users),
    CommandSpec::new("acl|whoami", 2, SUB, (0, 0, 0), whoami),
    CommandSpec::new("acl|help", 2, LOADING | STALE, (0, 0, 0), help),
];

pub static SPECS: &[CommandSpec] = &[CommandSpec::container("acl", -2, SUBS)];

/// ```text
/// ACL SETUSER username [rule ...]
/// ```
/// `OK`: the rules applied all together (the user created when new), or
/// the first rule's error and no change.
fn setuser(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let name = args.at(2);
    if crate::acl::user::has_spaces(name) {
        return Err(Error::msg(
            "Usernames can't contain spaces or null characters",
        ));
    }
    let name = String::from_utf8_lossy(name).into_owned();
    let rules: Vec<&[u8]> = args.from(3).collect();
    let allchannels = crate::acl::pubsub_default(&ctx.srv.config);
    let before = ctx
        .srv
        .acl
        .set_user(&name, &rules, allchannels)
        .map_err(|e| Error::Msg(e.into()))?;
    if let Some(before) = before {
        kill_pubsub_clients_if_needed(ctx.srv, ctx.client, &before);
    }
    ctx.out().ok();
    Ok(())
}

/// ```text
/// ACL DELUSER username [username ...]
/// ```
/// Integer: users deleted. Their clients are disconnected.
fn deluser(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if args.from(2).any(|n| n == b"default") {
        return Err(Error::msg("The 'default' user cannot be removed"));
    }
    let mut deleted = 0;
    for n in args.from(2) {
        let Ok(name) = std::str::from_utf8(n) else {
            continue;
        };
        if ctx.srv.acl.users.remove(name).is_some() {
            kill_user_clients(ctx.srv, ctx.client, name);
            deleted += 1;
        }
    }
    ctx.out().int(deleted);
    Ok(())
}

/// ```text
/// ACL GETUSER username
/// ```
/// Map: flags, passwords, commands, keys, channels, selectors; or null.
fn getuser(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let Some(u) = ctx.srv.acl.get(args.at(2)) else {
        ctx.client.reply.null();
        return Ok(());
    };
    let out = &mut ctx.client.reply;
    out.map(6);
    out.bulk(b"flags");
    let flags = describe::flags(u);
    out.set(flags.len());
    for f in flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"passwords");
    out.array(u.passwords.len());
    for p in &u.passwords {
        out.bulk(p.as_bytes());
    }
    selector_fields(out, u.root());
    out.bulk(b"selectors");
    out.array(u.selectors.len() - 1);
    for s in &u.selectors[1..] {
        out.map(3);
        selector_fields(out, s);
    }
    Ok(())
}

fn selector_fields(out: &mut crate::resp::encode::Reply, s: &crate::acl::user::Selector) {
    out.bulk(b"commands");
    out.bulk(describe::command_rules(s).as_bytes());
    out.bulk(b"keys");
    out.bulk(&describe::keys_field(s));
    out.bulk(b"channels");
    out.bulk(&describe::channels_field(s));
}

/// ```text
/// ACL LIST
/// ```
/// Array: every user as a config-file `user` line, by name.
fn list(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let lines: Vec<Vec<u8>> = ctx.srv.acl.all().into_iter().map(user_line).collect();
    let out = ctx.out();
    out.array(lines.len());
    for l in lines {
        out.bulk(&l);
    }
    Ok(())
}

/// `user <name> <rules>`, as ACL LIST and ACL SAVE write it.
pub fn user_line(u: &crate::acl::User) -> Vec<u8> {
    let mut l = b"user ".to_vec();
    l.extend_from_slice(u.name.as_bytes());
    l.push(b' ');
    l.extend_from_slice(&describe::user(u));
    l
}

/// ```text
/// ACL USERS
/// ```
/// Array: the user names, in order.
fn users(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let names: Vec<String> = ctx.srv.acl.all().iter().map(|u| u.name.clone()).collect();
    let out = ctx.out();
    out.array(names.len());
    for n in names {
        out.bulk(n.as_bytes());
    }
    Ok(())
}

/// ```text
/// ACL WHOAMI
/// ```
/// Bulk string: the connection's user.
fn whoami(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let name = ctx.client.user.clone();
    ctx.out().bulk(name.as_bytes());
    Ok(())
}

/// The error of ACL LOAD and ACL SAVE without `aclfile`.
const NO_ACLFILE: &str = "This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

/// The `aclfile` path, or Redis's error when there is none.
fn aclfile(ctx: &Ctx) -> Result<String, Error> {
    match ctx.srv.config.get("aclfile") {
        Some(f) if !f.is_empty() => Ok(f.to_string()),
        _ => Err(Error::msg(NO_ACLFILE)),
    }
}

/// ```text
/// ACL LOAD
/// ```
/// `OK`: the users of `aclfile` replace all users, or nothing changes.
fn load(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let path = aclfile(ctx)?;
    crate::acl::file::load(ctx.srv, ctx.client, &path).map_err(|e| Error::Msg(e.into()))?;
    ctx.out().ok();
    Ok(())
}

/// ```text
/// ACL SAVE
/// ```
/// `OK`: every user written to `aclfile`.
fn save(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let path = aclfile(ctx)?;
    if let Err(e) = crate::acl::file::save(&ctx.srv.acl, &ctx.srv.config.path(&path)) {
        crate::log::warning(&format!("Saving the ACL file {path}: {e}"));
        return Err(Error::msg("There was an error trying to save the ACLs. Please check the server logs for more information"));
    }
    ctx.out().ok();
    Ok(())
}

/// ```text
/// ACL HELP
/// ```
fn help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::cmd::help_reply(
        ctx,
        &[
            "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
            "HELP",
            "    Prints this help.",
        ],
    )
}
