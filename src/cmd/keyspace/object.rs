//! OBJECT: a key's encoding, reference count, idle time and access frequency.

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::Entry;
use crate::error::{CmdResult, Error};
use crate::server::Ctx;
use crate::types::string::Str;

pub static SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("object|encoding", 3, READONLY, (2, 2, 1), encoding),
    CommandSpec::new("object|freq", 3, READONLY, (2, 2, 1), freq),
    CommandSpec::new("object|idletime", 3, READONLY, (2, 2, 1), idletime),
    CommandSpec::new("object|refcount", 3, READONLY, (2, 2, 1), refcount),
    CommandSpec::new("object|help", 2, LOADING | STALE, (0, 0, 0), help),
];

/// Redis's `objectCommandLookupOrReply`: the entry, or a null reply when the
/// key is missing (no access is recorded).
fn lookup<'a>(ctx: &'a mut Ctx, args: &Args) -> Option<&'a Entry> {
    let key = args.at(2);
    let (db, out) = ctx.db_out();
    let e = db.lookup_no_touch(key);
    if e.is_none() {
        out.null();
    }
    e
}

fn policy_is_lfu(ctx: &Ctx) -> bool {
    ctx.srv
        .config
        .get("maxmemory-policy")
        .is_some_and(|p| p.ends_with("lfu"))
}

/// ```text
/// OBJECT ENCODING key
/// ```
/// Bulk string: the internal encoding's name, or null.
fn encoding(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if let Some(e) = lookup(ctx, args) {
        let name = e.val.encoding();
        ctx.out().bulk_str(name);
    }
    Ok(())
}

/// ```text
/// OBJECT REFCOUNT key
/// ```
/// Integer: 2147483647 for Redis's shared integers (0..9999), else 1.
fn refcount(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let shared_ints = ints_shared(&ctx.srv.config);
    if let Some(e) = lookup(ctx, args) {
        let n = refcount_of(shared_ints, &e.val);
        ctx.out().int(n);
    }
    Ok(())
}

/// Redis shares small integers unless maxmemory evicts by LRU/LFU.
pub(crate) fn ints_shared(config: &crate::config::Config) -> bool {
    !(config.get_i64("maxmemory") != 0
        && config
            .get("maxmemory-policy")
            .is_some_and(|p| p.ends_with("lru") || p.ends_with("lfu")))
}

/// The reference count Redis reports for a value: 2147483647 for its shared
/// integers (0..9999, when [`ints_shared`]), else 1.
pub(crate) fn refcount_of(shared_ints: bool, v: &crate::db::Value) -> i64 {
    let shared = matches!(v, crate::db::Value::Str(Str::Int(n)) if (0..10000).contains(n));
    if shared && shared_ints {
        i32::MAX as i64
    } else {
        1
    }
}

/// ```text
/// OBJECT IDLETIME key
/// ```
/// Integer: seconds since the key was last accessed; an error under an LFU policy.
fn idletime(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let lfu = policy_is_lfu(ctx);
    if let Some(e) = lookup(ctx, args) {
        if lfu {
            return Err(Error::msg("An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
        }
        let idle = e.idle_secs();
        ctx.out().int(idle as i64);
    }
    Ok(())
}

/// ```text
/// OBJECT FREQ key
/// ```
/// Integer: the logarithmic access counter; an error unless the policy is LFU.
fn freq(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let lfu = policy_is_lfu(ctx);
    if let Some(e) = lookup(ctx, args) {
        if !lfu {
            return Err(Error::msg("An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
        }
        let f = e.freq();
        ctx.out().int(f as i64);
    }
    Ok(())
}

/// ```text
/// OBJECT HELP
/// ```
/// Array of help lines.
fn help(ctx: &mut Ctx, _args: &mut Args) -> CmdResult {
    const LINES: &[&str] = &[
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Prints this help.",
    ];
    crate::cmd::help_reply(ctx, LINES)
}
