//! The `redis` table scripts see: call, pcall, error_reply, status_reply,
//! sha1hex, log, setresp, set_repl, replicate_commands, breakpoint, debug,
//! acl_check_cmd and the constants, with Redis 7.0's errors.

use std::borrow::Cow;
use std::cell::Cell;
use std::ffi::c_int;

use super::lua::{self, ffi, push_bytes, push_str, to_bytes, State};
use super::run_ctx;
use crate::command::args::Args;
use crate::command::dispatch;
use crate::command::gate::{self, Caller, Verdict};
use crate::command::names::Names;

/// Creates the global `redis` table.
pub unsafe fn open(l: State) {
    ffi::lua_createtable(l, 0, 32);
    lua::set_funcs(
        l,
        &[
            ("call", call),
            ("pcall", pcall),
            ("error_reply", error_reply),
            ("status_reply", status_reply),
            ("sha1hex", sha1hex),
            ("log", log),
            ("setresp", setresp),
            ("set_repl", set_repl),
            ("replicate_commands", replicate_commands),
            ("breakpoint", breakpoint),
            ("debug", debug),
            ("acl_check_cmd", acl_check_cmd),
        ],
    );
    for (name, v) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        ffi::lua_pushnumber(l, v as f64);
        lua::set_field(l, -2, name);
    }
    push_str(l, crate::REDIS_VERSION);
    lua::set_field(l, -2, "REDIS_VERSION");
    ffi::lua_pushnumber(l, crate::REDIS_VERSION_NUM as f64);
    lua::set_field(l, -2, "REDIS_VERSION_NUM");
    ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, c"redis".as_ptr());
}

/// Pushes an error table `{err = "CODE message"}` the way Redis's
/// `luaPushErrorBuff` builds it: a leading `-CODE ` names the code,
/// otherwise the code is `ERR`; surrounding CR/LF are trimmed.
pub unsafe fn push_error(l: State, text: &[u8]) {
    super::ldb::log_error(text);
    let (code, msg): (&[u8], &[u8]) = match text.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&b| b == b' ') {
            Some(sp) => (&rest[..sp], &rest[sp + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", text),
    };
    let is_crlf = |b: &u8| *b == b'\r' || *b == b'\n';
    let start = msg.iter().position(|b| !is_crlf(b)).unwrap_or(msg.len());
    let end = msg
        .iter()
        .rposition(|b| !is_crlf(b))
        .map_or(start, |e| e + 1);
    let msg = &msg[start..end];
    let mut full = Vec::with_capacity(code.len() + 1 + msg.len());
    full.extend_from_slice(code);
    full.push(b' ');
    full.extend_from_slice(msg);
    // lua_pushstring stops at a NUL byte.
    if let Some(z) = full.iter().position(|&b| b == 0) {
        full.truncate(z);
    }
    ffi::lua_createtable(l, 0, 2);
    push_str(l, "err");
    push_bytes(l, &full);
    drop(full);
    ffi::lua_rawset(l, -3);
}

/// Raises a freshly pushed error table.
unsafe fn raise_error(l: State, msg: &str) -> c_int {
    push_error(l, msg.as_bytes());
    lua::raise(l)
}

/// Argument bytes and the ranges of each argument in them.
type ArgBuf = (Vec<u8>, Vec<(usize, usize)>);

thread_local! {
    /// Scratch argument buffers for `redis.call`, reused across calls.
    static SCRATCH: Cell<ArgBuf> = const { Cell::new((Vec::new(), Vec::new())) };
}

/// Gives back the scratch buffers (after a failed script, which may have
/// grown them with huge arguments).
pub fn release_scratch() {
    SCRATCH.with(|c| drop(c.take()));
}

/// Reads the Lua arguments into `buf`/`ranges` as Redis's
/// `luaArgsToRedisArgv` does: strings as they are, numbers as `%.17g`.
unsafe fn read_args(
    l: State,
    buf: &mut Vec<u8>,
    ranges: &mut Vec<(usize, usize)>,
) -> Result<(), &'static str> {
    let argc = ffi::lua_gettop(l);
    if argc == 0 {
        return Err("Please specify at least one argument for this redis lib call");
    }
    for i in 1..=argc {
        let s = buf.len();
        match ffi::lua_type(l, i) {
            ffi::LUA_TSTRING => buf.extend_from_slice(to_bytes(l, i).unwrap_or_default()),
            ffi::LUA_TNUMBER => {
                let n = ffi::lua_tonumber(l, i);
                let as_int = n as i64;
                if as_int as f64 == n && n.abs() < 1e17 && !(n == 0.0 && n.is_sign_negative()) {
                    let mut b = itoa::Buffer::new();
                    buf.extend_from_slice(b.format(as_int).as_bytes());
                } else {
                    buf.extend_from_slice(crate::types::number::fmt_g(n, 17).as_bytes());
                }
            }
            _ => return Err("Lua redis lib command arguments must be strings or integers"),
        }
        ranges.push((s, buf.len()));
    }
    Ok(())
}

/// Runs the command in the Lua arguments; pushes its reply converted to Lua,
/// or an error table. Returns true when an error table was pushed.
unsafe fn execute(l: State) -> bool {
    let Some(run) = run_ctx() else {
        push_error(
            l,
            b"redis.call/pcall can only be called inside a script invocation",
        );
        return true;
    };
    let (mut buf, mut ranges) = SCRATCH.with(|c| c.take());
    buf.clear();
    ranges.clear();
    // Err: the error text, and whether it was counted already (a command
    // the gate refused: Redis's scriptCall counts it there).
    let checked = read_args(l, &mut buf, &mut ranges)
        .map_err(|e| (Cow::Borrowed(e), false))
        .and_then(|()| {
            let args = Args::new(&buf, &ranges);
            super::ldb::log_command(&args);
            #[cfg(test)]
            super::tests::panic_if_asked(&args, b"__panic_through_lua__");
            let caller = Caller::Script {
                read_only: run.read_only,
                allow_oom: run.allow_oom,
                wrote: run.wrote,
            };
            match gate::check(&*run.srv, &*run.client, &args, caller) {
                // The script stage never queues or postpones (the script as a
                // whole passed its caller's gate); were it to, run the command:
                // a script cannot wait, and a panic here would cross Lua's frames.
                Verdict::Run(cmd) | Verdict::Queue(cmd) => Ok(cmd),
                Verdict::Reject(cmd, r) => {
                    // Counted now, in errorstats and as the command's
                    // rejected call, as Redis's scriptCall does; the
                    // script's own command does not fail for it unless
                    // the script passes the error on.
                    let e = r.error();
                    let stats = &mut (*run.srv).stats;
                    stats.error(e.code());
                    if let Some(cmd) = cmd {
                        stats.cmd(cmd.id).rejected += 1;
                    }
                    stats.mark_errors();
                    // An ERR error is given without its code, as Redis's
                    // scriptCall words it (the debugger logs the text as given).
                    let text = e.text();
                    let text = match text.strip_prefix("ERR ") {
                        Some(msg) => msg.to_string(),
                        None => format!("-{text}"),
                    };
                    Err((Cow::Owned(text), true))
                }
                Verdict::Postpone => Err((
                    Cow::Owned(format!(
                        "-{}",
                        crate::error::Error::msg("command postponed inside a script").text()
                    )),
                    false,
                )),
            }
        });
    let cmd = match checked {
        Ok(c) => c,
        Err((msg, counted)) => {
            SCRATCH.with(|c| c.set((buf, ranges)));
            push_error(l, msg.as_bytes());
            if counted {
                super::convert::flag_counted(l);
            }
            return true;
        }
    };
    if cmd.spec.is_write() {
        run.wrote = true;
    }
    let srv = &mut *run.srv;
    let client = &mut *run.client;
    client.reply.resp = run.resp;
    client.reply.buf.clear();
    let done = super::no_unwind(l, || {
        let args = Args::new(&buf, &ranges);
        #[cfg(test)]
        super::tests::panic_if_asked(&args, b"__panic__");
        dispatch::call(srv, client, cmd, &args, true);
    });
    SCRATCH.with(|c| c.set((buf, ranges)));
    if done.is_none() {
        client.reply.buf.clear();
        push_error(l, b"Script stopped: the server hit an internal error");
        return true;
    }
    let is_err = super::convert::push_resp(l, &client.reply.buf);
    super::ldb::log_reply(&client.reply.buf);
    client.reply.buf.clear();
    is_err
}

unsafe extern "C-unwind" fn call(l: State) -> c_int {
    if execute(l) {
        return lua::raise(l);
    }
    1
}

unsafe extern "C-unwind" fn pcall(l: State) -> c_int {
    execute(l);
    1
}

unsafe extern "C-unwind" fn error_reply(l: State) -> c_int {
    if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
        push_error(l, b"wrong number or type of arguments");
        return 1;
    }
    let s = to_bytes(l, -1).unwrap_or_default();
    if s.first() == Some(&b'-') {
        push_error(l, s);
    } else {
        let mut v = Vec::with_capacity(s.len() + 1);
        v.push(b'-');
        v.extend_from_slice(s);
        push_error(l, &v);
    }
    1
}

unsafe extern "C-unwind" fn status_reply(l: State) -> c_int {
    if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
        push_error(l, b"wrong number or type of arguments");
        return 1;
    }
    ffi::lua_createtable(l, 0, 1);
    push_str(l, "ok");
    ffi::lua_pushvalue(l, -3);
    ffi::lua_rawset(l, -3);
    1
}

unsafe extern "C-unwind" fn sha1hex(l: State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        return raise_error(l, "wrong number of arguments");
    }
    let s = to_bytes(l, 1).unwrap_or_default();
    let hex = super::sha1_hex(s);
    push_bytes(l, &hex);
    1
}

unsafe extern "C-unwind" fn log(l: State) -> c_int {
    let argc = ffi::lua_gettop(l);
    if argc < 2 {
        return raise_error(l, "redis.log() requires two arguments or more.");
    }
    if ffi::lua_isnumber(l, 1) == 0 {
        return raise_error(l, "First argument must be a number (log level).");
    }
    let level = ffi::lua_tonumber(l, 1) as i64;
    if !(0..=3).contains(&level) {
        return raise_error(l, "Invalid debug level.");
    }
    let mut msg = Vec::new();
    for j in 2..=argc {
        if let Some(s) = to_bytes(l, j) {
            if j != 2 {
                msg.push(b' ');
            }
            msg.extend_from_slice(s);
        }
    }
    let text = String::from_utf8_lossy(&msg);
    match level {
        0 => crate::log::debug(&text),
        1 => crate::log::verbose(&text),
        2 => crate::log::notice(&text),
        _ => crate::log::warning(&text),
    }
    0
}

unsafe extern "C-unwind" fn setresp(l: State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        return raise_error(l, "redis.setresp() requires one argument.");
    }
    let resp = ffi::lua_tonumber(l, 1) as i64;
    if resp != 2 && resp != 3 {
        return raise_error(l, "RESP version must be 2 or 3.");
    }
    if let Some(run) = run_ctx() {
        run.resp = resp as u8;
    }
    0
}

unsafe extern "C-unwind" fn set_repl(l: State) -> c_int {
    if run_ctx().is_none() {
        return raise_error(
            l,
            "redis.set_repl can only be called inside a script invocation",
        );
    }
    if ffi::lua_gettop(l) != 1 {
        return raise_error(l, "redis.set_repl() requires two arguments.");
    }
    let flags = ffi::lua_tonumber(l, 1) as i64;
    if flags & !3 != 0 {
        return raise_error(
            l,
            "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
        );
    }
    if let Some(run) = run_ctx() {
        // REPL_AOF = 1 and REPL_REPLICA = 2 are the propagation targets.
        (*run.srv).prop.set_script_repl(flags as u8);
    }
    0
}

unsafe extern "C-unwind" fn replicate_commands(l: State) -> c_int {
    ffi::lua_pushboolean(l, 1);
    1
}

/// True, with a stop at the next line, in a debugging session; else false.
unsafe extern "C-unwind" fn breakpoint(l: State) -> c_int {
    ffi::lua_pushboolean(l, c_int::from(super::ldb::breakpoint()));
    1
}

/// Logs its arguments in a debugging session; else nothing.
unsafe extern "C-unwind" fn debug(l: State) -> c_int {
    super::ldb::debug(l);
    0
}

unsafe extern "C-unwind" fn acl_check_cmd(l: State) -> c_int {
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    let res = read_args(l, &mut buf, &mut ranges).map(|()| {
        let args = Args::new(&buf, &ranges);
        // Names as `rename-command` left them, as redis.call sees them.
        let none = Names::default();
        let names = run_ctx().map_or(&none, |run| &(*run.srv).config.names);
        dispatch::resolve(names, &args)
            .ok()
            .map(|cmd| caller_may_run(cmd, &args))
    });
    drop(buf);
    drop(ranges);
    match res {
        Err(msg) => raise_error(l, msg),
        Ok(None) => raise_error(l, "Invalid command passed to redis.acl_check_cmd()"),
        Ok(Some(allowed)) => {
            ffi::lua_pushboolean(l, c_int::from(allowed));
            1
        }
    }
}

/// Whether the script's caller may run `cmd` with `args` (Redis's
/// `ACLCheckAllUserCommandPerm` for `script_caller`): the script's client
/// runs as its caller's user. Asking writes no ACL LOG entry.
unsafe fn caller_may_run(cmd: crate::command::table::CmdRef, args: &Args) -> bool {
    // SAFETY: only called from Lua's C functions while the script runs.
    let Some(run) = run_ctx() else {
        return true;
    };
    let (srv, client) = (&*run.srv, &*run.client);
    // A command line of the wrong arity has no keys to check: a user with
    // full access may run it, any other is refused (as redis-server 7.0.15
    // answers `redis.acl_check_cmd('set')` for a user with `~x*`).
    let arity_ok = cmd.spec.arity_ok(args.len());
    srv.acl.user_of(&client.user).is_some_and(|u| {
        u.unrestricted || (arity_ok && crate::acl::check::check(u, cmd, args).is_ok())
    })
}
