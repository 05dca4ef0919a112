//! The scripting command family: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and
//! SCRIPT here; FCALL and FUNCTION in `function`. The engine itself lives in
//! `crate::script`.

pub mod function;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::script::function::NO_WRITES;
use crate::script::ldb::Mode;
use crate::script::{self, Call};
use crate::server::Ctx;

const EVAL_FLAGS: u32 = NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | RUNS_SCRIPT;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("eval", -3, EVAL_FLAGS | MAY_REPLICATE, (0, 0, 0), eval)
        .with_keys_fn(numkeys_keys),
    CommandSpec::new(
        "evalsha",
        -3,
        EVAL_FLAGS | MAY_REPLICATE,
        (0, 0, 0),
        evalsha,
    )
    .with_keys_fn(numkeys_keys),
    CommandSpec::new("eval_ro", -3, READONLY | EVAL_FLAGS, (0, 0, 0), eval_ro)
        .with_keys_fn(numkeys_keys),
    CommandSpec::new(
        "evalsha_ro",
        -3,
        READONLY | EVAL_FLAGS,
        (0, 0, 0),
        evalsha_ro,
    )
    .with_keys_fn(numkeys_keys),
    CommandSpec::container("script", -2, SCRIPT_SUBS),
    CommandSpec::new(
        "fcall",
        -3,
        EVAL_FLAGS | MAY_REPLICATE,
        (0, 0, 0),
        function::fcall,
    )
    .with_keys_fn(numkeys_keys),
    CommandSpec::new(
        "fcall_ro",
        -3,
        READONLY | EVAL_FLAGS,
        (0, 0, 0),
        function::fcall_ro,
    )
    .with_keys_fn(numkeys_keys),
    CommandSpec::container("function", -2, function::SUBS),
];

static SCRIPT_SUBS: &[CommandSpec] = &[
    CommandSpec::new("script|debug", 3, NOSCRIPT, (0, 0, 0), script_debug),
    CommandSpec::new("script|exists", -3, NOSCRIPT, (0, 0, 0), script_exists),
    CommandSpec::new("script|flush", -2, NOSCRIPT, (0, 0, 0), script_flush),
    CommandSpec::new("script|help", 2, LOADING | STALE, (0, 0, 0), script_help),
    CommandSpec::new(
        "script|kill",
        2,
        NOSCRIPT | ALLOW_BUSY,
        (0, 0, 0),
        script_kill,
    ),
    CommandSpec::new("script|load", 3, NOSCRIPT | STALE, (0, 0, 0), script_load),
];

/// Keys of `EVAL script numkeys key [key ...] arg [arg ...]` (also FCALL).
pub fn numkeys_keys(args: &Args) -> Vec<usize> {
    let n = args
        .at(2)
        .pipe(crate::types::number::parse_i64)
        .unwrap_or(0)
        .max(0) as usize;
    // As Redis's evalGetKeys: a numkeys larger than the arguments means no keys.
    if 3 + n > args.len() {
        return Vec::new();
    }
    (3..3 + n).collect()
}

trait Pipe: Sized {
    fn pipe<R>(self, f: impl FnOnce(Self) -> R) -> R {
        f(self)
    }
}
impl<T> Pipe for T {}

/// A script's keys and its other arguments.
pub type KeysArgs<'a> = (Vec<&'a [u8]>, Vec<&'a [u8]>);

/// Splits `numkeys key... arg...` (cursor at numkeys) with Redis's errors.
pub fn parse_keys_args<'a>(args: &Args<'a>) -> Result<KeysArgs<'a>, Error> {
    let n = crate::types::number::parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    let rest = args.len() - 3;
    if n > rest as i64 {
        return Err(Error::msg(
            "Number of keys can't be greater than number of args",
        ));
    }
    if n < 0 {
        return Err(Error::msg("Number of keys can't be negative"));
    }
    let n = n as usize;
    Ok((args.from(3).take(n).collect(), args.from(3 + n).collect()))
}

/// Shows a script command to MONITOR clients before its own commands, as
/// Redis does explicitly for EVAL and FCALL (they are flagged skip_monitor).
pub fn feed_monitors(ctx: &mut Ctx, args: &Args) {
    if !ctx.srv.monitors.is_empty() {
        crate::server::monitor::feed(ctx.srv, ctx.client, args);
    }
}

fn eval_generic(ctx: &mut Ctx, args: &Args, by_sha: bool, read_only: bool) -> CmdResult {
    feed_monitors(ctx, args);
    match ctx.client.lua_debug {
        Mode::Off => run_eval(ctx, args, by_sha, read_only),
        // A wrong-length digest cannot match, debugging or not.
        _ if by_sha && args.at(1).len() != 40 => Err(no_script()),
        _ if by_sha => Err(Error::msg(
            "Please use EVAL instead of EVALSHA for debugging",
        )),
        Mode::Sync => eval_debugging(ctx, args, read_only),
        Mode::Fork => eval_forked(ctx, args, read_only),
    }
}

fn no_script() -> Error {
    Error::coded("NOSCRIPT No matching script. Please use EVAL.")
}

/// EVAL in a synchronous debugging session (SCRIPT DEBUG SYNC): the server
/// serves only the debugger until the script ends; the connection is then
/// closed after the reply, as Redis does.
fn eval_debugging(ctx: &mut Ctx, args: &Args, read_only: bool) -> CmdResult {
    crate::log::warning("Redis synchronous debugging eval session started");
    let threshold = ctx.srv.config.get_i64("busy-reply-threshold");
    let session = script::ldb::start(ctx.client.fd, args.at(1), threshold);
    let r = run_eval(ctx, args, false, read_only);
    script::ldb::end(session);
    crate::log::warning("Redis synchronous debugging eval session ended");
    ctx.client.close_after_reply = true;
    r
}

/// EVAL in a forked debugging session (SCRIPT DEBUG YES): the child runs
/// the session and answers; the parent drops the client unanswered.
fn eval_forked(ctx: &mut Ctx, args: &Args, read_only: bool) -> CmdResult {
    let fd = ctx.client.fd;
    match script::ldb_fork::fork(ctx.srv, fd) {
        Err(e) => {
            ctx.client.lua_debug = Mode::Off;
            Err(Error::msg(format!(
                "Fork() failed: can't run EVAL in debugging mode: {}",
                script::ldb_fork::strerror(&e)
            )))
        }
        Ok(Some(_)) => {
            ctx.client.lua_debug = Mode::Off;
            ctx.client.close_after_reply = true;
            Ok(())
        }
        Ok(None) => {
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let threshold = ctx.srv.config.get_i64("busy-reply-threshold");
                let session = script::ldb::start(fd, args.at(1), threshold);
                let r = run_eval(ctx, args, false, read_only);
                script::ldb::end(session);
                if let Err(e) = r {
                    ctx.client.reply.error_line(&e.text());
                }
            }));
            match run {
                Ok(()) => script::ldb_fork::finish(fd, &ctx.client.reply.buf),
                Err(_) => script::ldb_fork::abort(),
            }
        }
    }
}

fn run_eval(ctx: &mut Ctx, args: &Args, by_sha: bool, read_only: bool) -> CmdResult {
    let (keys, argv) = parse_keys_args(args)?;
    let s = &mut ctx.srv.script;
    let (func_ref, name, flags) = if by_sha {
        let given = args.at(1);
        let mut sha = [0u8; 40];
        let found = if given.len() == 40 {
            for (d, c) in sha.iter_mut().zip(given) {
                *d = c.to_ascii_lowercase();
            }
            script::lookup(s, &sha)
        } else {
            None
        };
        found.ok_or_else(no_script)?
    } else {
        let sha = script::load(s, args.at(1))?;
        script::lookup(s, &sha).ok_or(Error::Syntax)?
    };
    match flags {
        Some(f) => crate::cluster::redirect::verify_script_start(ctx.srv, f)?,
        // A script without a shebang (compatibility mode) never runs on a
        // stale replica (Redis's scriptPrepareForRun).
        None if crate::repl::replica::is_replica(ctx.srv)
            && crate::repl::replica::stale(ctx.srv) =>
        {
            return Err(crate::error::Rejection::MasterDown.error());
        }
        None => {}
    }
    if crate::cluster::redirect::allows_cross_slot(flags) {
        ctx.client
            .cluster
            .slot
            .set(crate::cluster::redirect::ANY_SLOT);
    }
    // A script with a shebang declares whether it writes; one without runs
    // in compatibility mode, checked command by command.
    let read_only = match flags {
        Some(f) if f & NO_WRITES == 0 && read_only => {
            return Err(Error::msg(
                "Can not execute a script with write flag using *_ro command.",
            ))
        }
        Some(f) => read_only || f & NO_WRITES != 0,
        None => read_only,
    };
    if let Some(f) = flags {
        crate::script::cmd_flags::verify_start_oom(ctx.srv, f)?;
    }
    let call = Call {
        func_ref,
        name,
        keys,
        args: argv,
        read_only,
        allow_oom: flags.is_some_and(|f| f & crate::script::cmd_flags::ALLOW_OOM != 0),
        is_function: false,
        command: Vec::new(),
    };
    script::run(ctx.srv, ctx.client, call);
    Ok(())
}

/// ```text
/// EVAL script numkeys [key [key ...]] [arg [arg ...]]
/// ```
/// The script's return value converted to a reply.
fn eval(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    eval_generic(ctx, args, false, false)
}

/// ```text
/// EVALSHA sha1 numkeys [key [key ...]] [arg [arg ...]]
/// ```
/// As EVAL, for a cached script; `NOSCRIPT` when it is not cached.
fn evalsha(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    eval_generic(ctx, args, true, false)
}

/// ```text
/// EVAL_RO script numkeys [key [key ...]] [arg [arg ...]]
/// ```
/// As EVAL; write commands from the script are refused.
fn eval_ro(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    eval_generic(ctx, args, false, true)
}

/// ```text
/// EVALSHA_RO sha1 numkeys [key [key ...]] [arg [arg ...]]
/// ```
/// As EVALSHA; write commands from the script are refused.
fn evalsha_ro(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    eval_generic(ctx, args, true, true)
}

/// ```text
/// SCRIPT DEBUG YES | SYNC | NO
/// ```
/// `OK`; this client's next EVAL runs under the Lua debugger (YES: in a
/// forked child, its changes discarded; SYNC: blocking the server).
fn script_debug(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if !ctx.client.reply.buf.is_empty() {
        return Err(Error::msg("SCRIPT DEBUG must be called outside a pipeline"));
    }
    let a = args.at(2);
    ctx.client.lua_debug = if a.eq_ignore_ascii_case(b"no") {
        Mode::Off
    } else if a.eq_ignore_ascii_case(b"yes") {
        Mode::Fork
    } else if a.eq_ignore_ascii_case(b"sync") {
        Mode::Sync
    } else {
        return Err(Error::msg("Use SCRIPT DEBUG YES/SYNC/NO"));
    };
    ctx.out().ok();
    Ok(())
}

/// ```text
/// SCRIPT EXISTS sha1 [sha1 ...]
/// ```
/// Array of 1/0, one per digest.
fn script_exists(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let n = args.len() - 2;
    ctx.client.reply.array(n);
    for a in args.from(2) {
        let mut sha = [0u8; 40];
        let found = a.len() == 40 && {
            for (d, c) in sha.iter_mut().zip(a) {
                *d = c.to_ascii_lowercase();
            }
            ctx.srv.script.scripts.contains_key(&sha)
        };
        ctx.client.reply.int(found as i64);
    }
    Ok(())
}

/// ```text
/// SCRIPT FLUSH [ASYNC | SYNC]
/// ```
/// `OK`; the cache is emptied and the Lua VM restarted. ASYNC (or
/// `lazyfree-lazy-user-flush yes` without an option) frees the old ones in
/// the background.
fn script_flush(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let lazy = if args.len() == 2 {
        crate::db::lazyfree::policy().user_flush
    } else if args.len() == 3 && args.eat_ci("SYNC") {
        false
    } else if args.len() == 3 && args.eat_ci("ASYNC") {
        true
    } else {
        return Err(Error::msg("SCRIPT FLUSH only support SYNC|ASYNC option"));
    };
    ctx.srv.script.flush(lazy);
    ctx.out().ok();
    Ok(())
}

/// ```text
/// SCRIPT KILL
/// ```
/// `OK` when the running script was told to stop; `NOTBUSY` with no script
/// running; `UNKILLABLE` once the script wrote. While a script runs, this is
/// reached from the busy-script poller in `script::busy`.
fn script_kill(ctx: &mut Ctx, _args: &mut Args) -> CmdResult {
    kill_running(true)?;
    ctx.out().ok();
    Ok(())
}

/// SCRIPT KILL (`is_eval`) and FUNCTION KILL, as Redis's `scriptKill`.
pub fn kill_running(is_eval: bool) -> CmdResult {
    // SAFETY: called from a command handler on the data thread; the running
    // script (if any) is suspended in its hook while this runs.
    let Some(run) = (unsafe { script::run_ctx() }) else {
        return Err(Error::coded("NOTBUSY No scripts in execution right now."));
    };
    if run.wrote {
        return Err(Error::coded("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."));
    }
    if is_eval && run.is_function {
        return Err(Error::coded(script::busy::BUSY_FUNCTION));
    }
    if !is_eval && !run.is_function {
        return Err(Error::coded(script::busy::BUSY_EVAL));
    }
    run.killed = true;
    Ok(())
}

/// ```text
/// SCRIPT LOAD script
/// ```
/// The script's SHA1 digest as a bulk string.
fn script_load(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let sha = script::load(&mut ctx.srv.script, args.at(2))?;
    ctx.out().bulk(&sha);
    Ok(())
}

const SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];

/// ```text
/// SCRIPT HELP
/// ```
/// Array of status lines.
fn script_help(ctx: &mut Ctx, _args: &mut Args) -> CmdResult {
    crate::cmd::help_reply(ctx, SCRIPT_HELP)
}
