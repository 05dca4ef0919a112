//! The Lua scripting engine: one Lua 5.1 VM per server, the SHA1 script
//! cache, and running a script with `redis.call` wired to the dispatcher.
//!
//! While a script runs, the EVAL handler's `&mut Server` is lent to Lua as a
//! raw pointer in [`RunCtx`] (see `RUN`): Lua calls back into `redis.call`
//! synchronously on this thread, and the handler does not touch the server
//! until Lua returns, so exactly one mutable path to the server is live at a
//! time.

// Every `unsafe fn` in this engine has the same contract, stated once in
// `lua.rs`: called on the data thread with a live `lua_State` of this
// engine, raising Lua errors only with nothing left to drop.
#![allow(clippy::missing_safety_doc)]

pub mod bit;
pub mod busy;
pub mod cjson;
pub mod cmd_flags;
pub mod convert;
pub mod function;
pub mod lua;
pub mod msgpack;
pub mod payload;
pub mod redis_lib;
pub mod structlib;
pub mod vm;

use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::error::Error;
use crate::server::client::{Client, ConnKind};
use crate::server::Server;
use lua::ffi;
use vm::Vm;

/// A cached script: its body and the registry reference of its compiled function.
pub struct Script {
    pub body: Box<[u8]>,
    func_ref: i32,
    /// The SHA as text, shared with each run (error messages name it).
    name: Rc<str>,
    /// Flags from a `#!lua flags=...` shebang; None for a script without
    /// one (Redis's EVAL compatibility mode).
    flags: Option<u32>,
}

/// Parses an EVAL script's shebang as Redis 7's `evalExtractShebangFlags`:
/// the flags (None without a shebang) and the bytes to skip (the shebang
/// line, keeping its line feed so line numbers stay the user's).
fn shebang_flags(body: &[u8]) -> Result<(Option<u32>, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((None, 0));
    }
    let Some(nl) = body.iter().position(|&c| c == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    let line = String::from_utf8_lossy(&body[..nl]);
    let parts: Vec<&str> = line.split_ascii_whitespace().collect();
    let Some(engine) = parts.first() else {
        return Err("Invalid engine in script shebang".into());
    };
    if *engine != "#!lua" {
        return Err(format!("Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = 0;
    for p in &parts[1..] {
        let Some(list) = p.strip_prefix("flags=") else {
            return Err(format!("Unknown lua shebang option: {p}"));
        };
        for f in list.split(',').filter(|f| !f.is_empty()) {
            let Some(i) = function::FLAG_NAMES.iter().position(|n| *n == f) else {
                return Err(format!("Unexpected flag in script shebang: {f}"));
            };
            flags |= 1 << i;
        }
    }
    Ok((Some(flags), nl))
}

/// Scripting state kept in the server (`srv.ext.script`).
#[derive(Default)]
pub struct Scripting {
    vm: Option<Vm>,
    /// Lowercase hex SHA1 of the body → script.
    pub scripts: HashMap<[u8; 40], Script, foldhash::fast::RandomState>,
    /// The pseudo-client scripts run their commands as; taken out while a script runs.
    client: Option<Box<Client>>,
    /// Calls since the last full GC step.
    calls: u32,
    /// Listening sockets (fd, unix socket path) the busy-script poller accepts on.
    pub listeners: Vec<(std::os::fd::RawFd, Option<String>)>,
    /// FUNCTION libraries (their own VM).
    pub functions: function::Functions,
    /// The server cell, for spawning tasks of connections accepted while busy.
    pub server: Option<std::rc::Weak<std::cell::RefCell<Server>>>,
}

impl Scripting {
    fn vm(&mut self) -> &mut Vm {
        self.vm.get_or_insert_with(Vm::new)
    }

    /// SCRIPT FLUSH: forgets every script and starts a fresh VM, as Redis does.
    pub fn flush(&mut self) {
        self.scripts.clear();
        self.vm = None;
    }

    /// Bytes the EVAL VM uses (INFO used_memory_lua).
    pub fn memory(&self) -> usize {
        self.vm.as_ref().map_or(0, |v| v.used_memory())
    }

    /// The figures INFO reports in its scripting memory lines.
    pub fn info(&self) -> ScriptInfo {
        ScriptInfo {
            vm_eval: self.memory(),
            vm_functions: self.functions.memory(),
            cached_scripts: self.scripts.len(),
            scripts_eval: self.scripts.values().map(|s| s.body.len() + 40).sum(),
            functions: self.functions.functions_count(),
            libraries: self.functions.libs.len(),
            functions_mem: self.functions.libs.iter().map(|l| l.code.len()).sum(),
        }
    }
}

/// Scripting figures for INFO (`used_memory_lua`, `number_of_cached_scripts`, ...).
pub struct ScriptInfo {
    /// Bytes of the EVAL Lua VM (`used_memory_lua`, `used_memory_vm_eval`).
    pub vm_eval: usize,
    /// Bytes of the FUNCTION Lua VM (`used_memory_vm_functions`).
    pub vm_functions: usize,
    /// `number_of_cached_scripts`
    pub cached_scripts: usize,
    /// Bytes of cached script bodies (`used_memory_scripts_eval`).
    pub scripts_eval: usize,
    /// `number_of_functions`
    pub functions: usize,
    /// `number_of_libraries`
    pub libraries: usize,
    /// Bytes of library code (`used_memory_functions`).
    pub functions_mem: usize,
}

/// What a running script needs from its caller; reached from Lua's C
/// functions through the thread-local `RUN`.
pub struct RunCtx {
    pub srv: *mut Server,
    /// The script's pseudo-client.
    pub client: *mut Client,
    /// Id of the client that called EVAL (its own connection is not polled while busy).
    pub caller_id: crate::db::ClientId,
    /// EVAL_RO / EVALSHA_RO / FCALL_RO, or a `no-writes` script.
    pub read_only: bool,
    /// A write command ran: the script can no longer be killed.
    pub wrote: bool,
    /// `redis.setresp` protocol for replies seen by the script.
    pub resp: u8,
    /// The name errors report (`script: <sha>`).
    pub name: Rc<str>,
    /// When the script started, in unix microseconds (the command's frozen
    /// time, so starting a script reads no clock).
    pub start_us: i64,
    /// Set by SCRIPT KILL / FUNCTION KILL; the hook raises the error.
    pub killed: bool,
    /// The busy threshold passed: other clients get BUSY.
    pub busy: bool,
    /// `busy-reply-threshold`, read by the hook on its first call.
    pub threshold_ms: Option<u64>,
    /// When the busy poller last ran, in unix microseconds.
    pub last_poll_us: i64,
    /// True when the script runs a FUNCTION (FCALL): FUNCTION KILL, not SCRIPT KILL.
    pub is_function: bool,
    /// The FCALL command line, for FUNCTION STATS.
    pub command: Vec<Vec<u8>>,
}

thread_local! {
    static RUN: Cell<*mut RunCtx> = const { Cell::new(std::ptr::null_mut()) };
}

/// The running script's context, or None outside a script.
///
/// # Safety
/// Valid only on the data thread while [`run`] is on the stack; callers must
/// not keep the reference past the C function that asked for it.
pub unsafe fn run_ctx<'a>() -> Option<&'a mut RunCtx> {
    let p = RUN.with(|c| c.get());
    if p.is_null() {
        None
    } else {
        Some(&mut *p)
    }
}

/// Forgets the running script after a panic unwound out of it (see
/// `server::fault`); true when one was running.
pub fn forget_run() -> bool {
    function::forget_load();
    !RUN.with(|c| c.replace(std::ptr::null_mut())).is_null()
}

/// Hex SHA1 of `body`, lowercase (the script's name in the cache).
pub fn sha1_hex(body: &[u8]) -> [u8; 40] {
    use sha1::{Digest, Sha1};
    let d = Sha1::digest(body);
    let mut out = [0u8; 40];
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in d.iter().enumerate() {
        out[2 * i] = HEX[(b >> 4) as usize];
        out[2 * i + 1] = HEX[(b & 15) as usize];
    }
    out
}

/// Compiles `body` into the cache (SCRIPT LOAD, EVAL) and returns its SHA.
pub fn load(s: &mut Scripting, body: &[u8]) -> Result<[u8; 40], Error> {
    let sha = sha1_hex(body);
    if s.scripts.contains_key(&sha) {
        return Ok(sha);
    }
    let (flags, skip) = shebang_flags(body).map_err(|e| Error::Msg(e.into()))?;
    let func_ref = s
        .vm()
        .compile(&body[skip..], "@user_script")
        .map_err(|e| Error::Msg(format!("Error compiling script (new function): {e}").into()))?;
    s.scripts.insert(
        sha,
        Script {
            body: body.into(),
            func_ref,
            name: String::from_utf8_lossy(&sha).into(),
            flags,
        },
    );
    Ok(sha)
}

/// Which script to run and how.
pub struct Call<'a> {
    pub func_ref: i32,
    pub name: Rc<str>,
    pub keys: Vec<&'a [u8]>,
    pub args: Vec<&'a [u8]>,
    pub read_only: bool,
    pub is_function: bool,
    /// The FCALL command line (FUNCTION STATS shows it); empty for EVAL.
    pub command: Vec<Vec<u8>>,
}

/// Runs a compiled script for `caller`, writing its reply (or error) into
/// the caller's reply buffer.
/// The script sees the time of the command that runs it (dispatch froze it).
pub fn run(srv: &mut Server, caller: &mut Client, call: Call<'_>) {
    let mut sc = srv.ext.script.client.take().unwrap_or_else(|| {
        Box::new(Client::new(
            0,
            String::new(),
            String::new(),
            ConnKind::Script,
            false,
        ))
    });
    sc.db = caller.db;
    sc.reply.resp = 2;
    sc.reply.buf.clear();
    let l = if call.is_function {
        srv.ext.script.functions.state()
    } else {
        srv.ext.script.vm().l
    };
    let now = crate::clock::now_us();
    let mut ctx = RunCtx {
        srv: srv as *mut Server,
        client: &mut *sc as *mut Client,
        caller_id: caller.id,
        read_only: call.read_only,
        wrote: false,
        resp: 2,
        name: call.name,
        start_us: now,
        killed: false,
        busy: false,
        threshold_ms: None,
        last_poll_us: now,
        is_function: call.is_function,
        command: call.command,
    };
    // The script is propagated as the commands it runs (wrapped in
    // MULTI/EXEC when there are several), never as EVAL/FCALL itself.
    srv.prop.prevent();
    RUN.with(|c| c.set(&mut ctx as *mut RunCtx));
    // SAFETY: the VM belongs to this server and thread; `RUN` points at
    // `ctx`, which outlives the call; `srv` is not used again until Lua returns.
    unsafe {
        if !call.is_function {
            vm::set_keys_argv(l, &call.keys, &call.args);
        }
        busy::install_hook(l);
        let base = ffi::lua_gettop(l);
        vm::push_error_handler(l);
        ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, call.func_ref as _);
        let nargs = if call.is_function {
            function::push_keys_args(l, &call.keys, &call.args);
            2
        } else {
            0
        };
        let rc = ffi::lua_pcall(l, nargs, 1, base + 1);
        busy::remove_hook(l);
        RUN.with(|c| c.set(std::ptr::null_mut()));
        srv.prop.set_script_repl(true);
        if rc == 0 {
            convert::reply_from_lua(l, &mut caller.reply, ctx.resp);
        } else {
            convert::reply_error(l, &mut caller.reply, &ctx.name, srv);
        }
        ffi::lua_settop(l, base);
    }
    let s = &mut srv.ext.script;
    // Redis's LUA_GC_CYCLE_PERIOD: a GC step of 50 every 50 calls.
    s.calls += 1;
    if s.calls >= 50 {
        s.calls = 0;
        if let Some(vm) = s.vm.as_mut() {
            vm.gc_step();
        }
    }
    sc.reply.buf.clear();
    s.client = Some(sc);
}

/// Looks up a cached script: its compiled function, name and shebang flags.
pub fn lookup(s: &Scripting, sha: &[u8; 40]) -> Option<(i32, Rc<str>, Option<u32>)> {
    s.scripts
        .get(sha)
        .map(|sc| (sc.func_ref, sc.name.clone(), sc.flags))
}
