//! OXIDIS: test controls (the server's clock, fault injection, seeded randomness, checkpoints), off unless `enable-test-controls yes`.
//!
//! One command with subcommands (any case), for tests driving a real server
//! through their real client:
//!
//! - `OXIDIS CLOCK GET|FREEZE|RESUME|ADVANCE <ms>|SET <unix-ms>` ([`clock`])
//! - `OXIDIS FAULT ADD <target> <action> [COUNT n]|LIST|CLEAR` ([`fault`])
//! - `OXIDIS SEED <u64>` ([`seed`])
//! - `OXIDIS CHECKPOINT SAVE|RESTORE|DEL <name>|LIST` ([`checkpoint`])
//! - `OXIDIS HELP`
//!
//! With the switch off the gate refuses every form of the command with
//! `TESTCTL_DISABLED` (`error.rs`). Compatibility: the command carries the
//! `TEST_CONTROL` flag, and COMMAND (COUNT, LIST, INFO, DOCS) leaves it out
//! unless the switch is on, so a default server's COMMAND answers are
//! Redis's, command for command; it is in no ACL category (`acl::categories`)
//! so `ACL CAT` and ACL rule descriptions stay Redis's too. It is `noscript`
//! and `no-multi`: a test control acts at once, never from a script or EXEC.

pub mod checkpoint;
pub mod clock;
pub mod fault;
pub mod seed;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::server::Ctx;

pub static SPECS: &[CommandSpec] = &[CommandSpec::new(
    "oxidis",
    -2,
    ADMIN | NOSCRIPT | NO_MULTI | TEST_CONTROL,
    (0, 0, 0),
    oxidis,
)];

/// What the test controls keep between commands (`Server::testctl`).
#[derive(Default)]
pub struct State {
    pub faults: fault::Faults,
    pub checkpoints: checkpoint::Checkpoints,
}

const HELP: &[&str] = &[
    "OXIDIS <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CLOCK GET",
    "    Return the server's time in milliseconds since the epoch.",
    "CLOCK FREEZE",
    "    Stop the server's clock where it is.",
    "CLOCK RESUME",
    "    Let the server's time flow again from where it stands.",
    "CLOCK ADVANCE <milliseconds>",
    "    Move the server's time forward; due keys expire, blocked clients time out.",
    "CLOCK SET <unix-time-milliseconds>",
    "    Set the server's time (frozen stays frozen).",
    "FAULT ADD <target> <action> [COUNT <count>]",
    "    Inject a fault into the next <count> (default 1, 0: until cleared) matching",
    "    commands. <target> is COMMAND <name> | ALL | CLIENT <client-name>;",
    "    <action> is ERROR <reply-text> | CLOSE | DELAY <milliseconds>.",
    "FAULT LIST",
    "    List the injected faults.",
    "FAULT CLEAR",
    "    Remove every injected fault.",
    "SEED <u64>",
    "    Seed the server's random choices (SPOP, SRANDMEMBER, HRANDFIELD,",
    "    ZRANDMEMBER, RANDOMKEY, Lua's math.random, eviction sampling).",
    "CHECKPOINT SAVE <name>",
    "    Copy the whole dataset (every database, with expiry) under <name>.",
    "CHECKPOINT RESTORE <name>",
    "    Replace the dataset with the copy saved under <name>.",
    "CHECKPOINT DEL <name>",
    "    Forget a checkpoint.",
    "CHECKPOINT LIST",
    "    List the checkpoints' names.",
    "HELP",
    "    Print this help.",
];

/// ```text
/// OXIDIS <subcommand> [arg ...]
/// ```
fn oxidis(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    // A test control acts on this server alone: never in the AOF or sent
    // to replicas, even when it changes the dataset (RESTORE). Keys an
    // advance expires still go out as DELs, as expired keys do.
    ctx.prevent_propagation();
    let sub = args.next().unwrap_or_default();
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    if is("help") && !args.has_more() {
        crate::cmd::help_reply(ctx, HELP)
    } else if is("clock") {
        clock::command(ctx, args)
    } else if is("fault") {
        fault::command(ctx, args)
    } else if is("seed") {
        seed::command(ctx, args)
    } else if is("checkpoint") {
        checkpoint::command(ctx, args)
    } else {
        Err(wrong(args))
    }
}

/// `ERR unknown subcommand or wrong number of arguments for '<sub>'. Try OXIDIS HELP.`
pub(crate) fn wrong(args: &Args) -> Error {
    crate::cmd::server::wrong_sub_args(args, "OXIDIS")
}

/// The next argument as a word to compare, or the subcommand error.
pub(crate) fn word<'a>(args: &mut Args<'a>) -> Result<&'a [u8], Error> {
    args.next().ok_or_else(|| wrong(args))
}

/// The next argument as a count of milliseconds (or a count): a
/// non-negative integer.
pub(crate) fn non_negative(args: &mut Args) -> Result<i64, Error> {
    let arg = args.next().ok_or_else(|| wrong(args))?;
    match crate::types::number::parse_i64(arg) {
        Some(v) if v >= 0 => Ok(v),
        _ => Err(Error::NotInteger),
    }
}
