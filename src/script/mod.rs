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
pub mod ldb;
pub mod ldb_fmt;
pub mod ldb_fork;
pub mod load;
pub mod lua;
pub mod mathrand;
pub mod msgpack;
pub mod redis_lib;
pub mod structlib;
#[cfg(test)]
mod tests;
pub mod vm;

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;

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
    name: Arc<str>,
    /// Flags from a `#!lua flags=...` shebang; None for a script without
    /// one (Redis's EVAL compatibility mode).
    flags: Option<u32>,
}

/// The words of a shebang line, split as Redis's `sdssplitargs` splits it
/// (quotes and escapes); None when its quotes do not balance.
pub(crate) fn shebang_words(line: &[u8]) -> Option<Vec<String>> {
    let words = crate::config::split_config_line(line)?;
    Some(
        words
            .iter()
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect(),
    )
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
    let parts = shebang_words(&body[..nl]).unwrap_or_default();
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

/// Scripting state kept in the server (`srv.script`).
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
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call noscript commands.
    pub allow_noscript: bool,
    /// Forked debugging sessions not yet reaped (SCRIPT DEBUG YES).
    pub ldb_children: Vec<i32>,
}

impl Scripting {
    /// The EVAL VM; a VM dropped after a panic is rebuilt here with every
    /// cached script compiled again, so EVALSHA keeps working.
    fn vm(&mut self) -> &mut Vm {
        if self.vm.is_none() {
            let mut vm = Vm::new();
            for sc in self.scripts.values_mut() {
                let skip = shebang_flags(&sc.body).map_or(0, |(_, skip)| skip);
                // It compiled before, in a VM just like this one.
                if let Ok(r) = vm.compile(&sc.body[skip..], "@user_script") {
                    sc.func_ref = r;
                }
            }
            self.vm = Some(vm);
        }
        self.vm.get_or_insert_with(Vm::new)
    }

    /// SCRIPT FLUSH: forgets every script and starts a fresh VM, as Redis
    /// does. `lazy` (ASYNC) hands a cache of more than 64 scripts, with the
    /// VM, to the freeing thread, counted as one object per script (Redis's
    /// `freeLuaScriptsAsync`). A script that flushes the cache itself
    /// (DEBUG SET-DISABLE-DENY-SCRIPTS) still runs in the VM: freed here.
    pub fn flush(&mut self, lazy: bool) {
        let scripts = std::mem::take(&mut self.scripts);
        let n = scripts.len();
        let vm = self.vm.take();
        if lazy && !running() {
            let vm = vm.map(Vm::retire);
            crate::db::lazyfree::free_counted((scripts, vm), n, true);
        }
    }

    /// Bytes the EVAL VM uses (INFO used_memory_lua).
    pub fn memory(&self) -> usize {
        self.vm.as_ref().map_or(0, |v| v.used_memory())
    }

    /// Bytes the script cache holds, as the allocator counts them (Redis's
    /// `evalScriptsMemory`: the SHAs, the bodies and the table): each
    /// body's and name's block, and the table's slots.
    fn cache_memory(&self) -> usize {
        use crate::server::alloc::block_size;
        let slot = std::mem::size_of::<([u8; 40], Script)>() + 1; // + its control byte
        let blocks: usize = self
            .scripts
            .values()
            // The name's block holds the Arc's two counts before the text.
            .map(|s| block_size(s.body.len()) + block_size(16 + s.name.len()))
            .sum();
        blocks + self.scripts.capacity() * slot
    }

    /// The figures INFO reports in its scripting memory lines.
    pub fn info(&self) -> ScriptInfo {
        ScriptInfo {
            vm_eval: self.memory(),
            vm_functions: self.functions.memory(),
            cached_scripts: self.scripts.len(),
            scripts_eval: self.cache_memory(),
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
    /// The script declared `allow-oom` (see [`Call::allow_oom`]).
    pub allow_oom: bool,
    /// A write command ran: the script can no longer be killed.
    pub wrote: bool,
    /// `redis.setresp` protocol for replies seen by the script.
    pub resp: u8,
    /// The name errors report (`script: <sha>`).
    pub name: Arc<str>,
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
    /// A panic stopped at a C boundary ([`no_unwind`]), resumed by [`run`].
    pub panic: Option<Box<dyn std::any::Any + Send>>,
    /// The keys the script declared (KEYS), borrowed from the command
    /// for the run: see [`declared_keys`].
    keys: *const [&'static [u8]],
}

/// The keys the running script declared, or none outside a script. A
/// tracking caller remembers them all when its script reads (Redis's
/// `trackingRememberKeys(server.script_caller)`).
pub fn declared_keys() -> Vec<Vec<u8>> {
    // SAFETY: `keys` points into the `Call` that `run` owns while RUN is set.
    unsafe { run_ctx().map_or_else(Vec::new, |r| (*r.keys).iter().map(|k| k.to_vec()).collect()) }
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

/// True while a script or function runs (its `redis.call`, or a client
/// served from its busy hook).
pub fn running() -> bool {
    !RUN.with(|c| c.get()).is_null()
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
    pub name: Arc<str>,
    pub keys: Vec<&'a [u8]>,
    pub args: Vec<&'a [u8]>,
    pub read_only: bool,
    /// The script declared `allow-oom`: its writes pass the OOM check.
    pub allow_oom: bool,
    pub is_function: bool,
    /// The FCALL command line (FUNCTION STATS shows it); empty for EVAL.
    pub command: Vec<Vec<u8>>,
}

/// Restores what [`run`] set up for a script on every way out of it, a
/// return or a panic unwinding through it: `RUN` cleared, the hook
/// removed, the pseudo-client handed back. A panic that unwound through Lua
/// left that VM inconsistent (Lua's C frames were skipped, its error jump
/// buffer dangles), so the VM is dropped; the next use builds a fresh one
/// and recompiles the cached scripts or reloads the libraries.
struct RunGuard {
    srv: *mut Server,
    l: lua::State,
    is_function: bool,
    client: Option<Box<Client>>,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        RUN.with(|c| c.set(std::ptr::null_mut()));
        // SAFETY: `srv` outlives the run; Lua's frames are gone, so nothing
        // else uses the server or the state now.
        let srv = unsafe {
            busy::remove_hook(self.l);
            &mut *self.srv
        };
        // redis.set_repl() lasts for one script.
        srv.prop.set_script_repl(crate::server::propagate::TO_ALL);
        let s = &mut srv.script;
        if let Some(mut sc) = self.client.take() {
            sc.reply.buf.clear();
            s.client = Some(sc);
        }
        if std::thread::panicking() {
            crate::log::warning("A panic unwound through a Lua script: its VM is rebuilt");
            if self.is_function {
                s.functions.discard_vm();
            } else {
                s.vm = None;
            }
        }
    }
}

/// Runs a compiled script for `caller`, writing its reply (or error) into
/// the caller's reply buffer.
/// The script sees the time of the command that runs it (dispatch froze it).
pub fn run(srv: &mut Server, caller: &mut Client, call: Call<'_>) {
    let mut sc = srv.script.client.take().unwrap_or_else(|| {
        Box::new(Client::new(
            0,
            String::new(),
            String::new(),
            ConnKind::Script,
            false,
        ))
    });
    sc.db = caller.db;
    // Cluster mode: calls are routed with the caller's ASKING/READONLY and
    // checked against its slot (Redis's scriptVerifyClusterState).
    sc.cluster = caller.cluster.clone();
    // redis.call runs with the caller's ACL user (Redis's scriptPrepareForRun).
    sc.user = caller.user.clone();
    sc.reply.resp = 2;
    sc.reply.buf.clear();
    let l = if call.is_function {
        srv.script.functions.state()
    } else {
        srv.script.vm().l
    };
    // Run time (for BUSY) is real time, whatever the server's clock says.
    let now = crate::clock::system_us();
    let mut ctx = RunCtx {
        srv: srv as *mut Server,
        client: &mut *sc as *mut Client,
        caller_id: caller.id,
        read_only: call.read_only,
        allow_oom: call.allow_oom,
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
        panic: None,
        keys: std::ptr::slice_from_raw_parts(call.keys.as_ptr().cast(), call.keys.len()),
    };
    let guard = RunGuard {
        srv: ctx.srv,
        l,
        is_function: call.is_function,
        client: Some(sc),
    };
    // The script is propagated as the commands it runs (wrapped in
    // MULTI/EXEC when there are several), never as EVAL/FCALL itself.
    srv.prop.prevent();
    RUN.with(|c| c.set(&mut ctx as *mut RunCtx));
    // SAFETY: the VM belongs to this server and thread; `RUN` points at
    // `ctx`, which outlives the call (the guard clears it first); `srv` is
    // not used again until Lua returns.
    let rc = unsafe {
        if !call.is_function {
            vm::set_keys_argv(l, &call.keys, &call.args);
        }
        if ldb::active() {
            ldb::install_hook(l);
        } else {
            busy::install_hook(l);
        }
        let base = ffi::lua_gettop(l);
        vm::push_error_handler(l);
        ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, call.func_ref as _);
        let nargs = if call.is_function {
            function::push_keys_args(l, &call.keys, &call.args);
            2
        } else {
            0
        };
        let rc = vm::guarded(l, || ffi::lua_pcall(l, nargs, 1, base + 1));
        busy::remove_hook(l);
        RUN.with(|c| c.set(std::ptr::null_mut()));
        if let Some(payload) = ctx.panic.take() {
            // A panic caught at a C boundary (see `no_unwind`) goes on from
            // here, with the VM consistent again.
            ffi::lua_settop(l, base);
            drop(guard);
            std::panic::resume_unwind(payload);
        }
        if rc == 0 {
            let mut errors = Vec::new();
            convert::reply_from_lua(l, &mut caller.reply, ctx.resp, &mut errors);
            for code in errors {
                match code {
                    Some(code) => srv.stats.error(code),
                    None => srv.stats.uncounted_error = true,
                }
            }
        } else {
            convert::reply_error(l, &mut caller.reply, &ctx.name, srv);
        }
        ffi::lua_settop(l, base);
        rc
    };
    drop(guard);
    let s = &mut srv.script;
    if rc != 0 {
        // A failed script leaves its garbage behind; when it ran out of
        // memory, Lua 5.1 (which has no emergency collection) would fail
        // every later allocation until its GC threshold, set past the cap,
        // is reached. Collect now, so the failure stays this script's own.
        collect_after_failure(l, rc);
    }
    // Redis's LUA_GC_CYCLE_PERIOD: a GC step of 50 every 50 calls.
    s.calls += 1;
    if s.calls >= 50 {
        s.calls = 0;
        if let Some(vm) = s.vm.as_mut() {
            vm.gc_step();
        }
    }
}

/// A full collection after a script failed with memory past half the cap
/// or out of memory (Lua's `LUA_ERRMEM`), and the `redis.call` scratch
/// buffers it may have grown given back.
fn collect_after_failure(l: lua::State, rc: std::ffi::c_int) {
    // SAFETY: no script runs now; the state is consistent (pcall returned).
    unsafe {
        let kb = ffi::lua_gc(l, ffi::LUA_GCCOUNT, 0) as usize;
        if rc == ffi::LUA_ERRMEM || kb * 1024 > vm::MEMORY_LIMIT / 2 {
            ffi::lua_gc(l, ffi::LUA_GCCOLLECT, 0);
            redis_lib::release_scratch();
        }
    }
}

/// Runs `f` (server code called from a Lua C function) so that no panic
/// unwinds through Lua's C frames: a panic is kept in the running script's
/// context, the script is stopped as by SCRIPT KILL, and [`run`] resumes the
/// panic once Lua has returned. None when `f` panicked (the caller raises a
/// Lua error then).
///
/// # Safety
/// Called from a C function of the VM `l`, on the data thread.
pub unsafe fn no_unwind<R>(l: lua::State, f: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(payload) => {
            match run_ctx() {
                Some(run) => {
                    run.panic.get_or_insert(payload);
                    busy::stop_on_every_line(l);
                }
                // Not inside a script (a library loading): nothing can
                // carry the panic further, so it is logged and answered as
                // a Lua error.
                None => crate::log::warning("A panic in a Lua C function was stopped"),
            }
            None
        }
    }
}

/// Looks up a cached script: its compiled function, name and shebang flags.
pub fn lookup(s: &Scripting, sha: &[u8; 40]) -> Option<(i32, Arc<str>, Option<u32>)> {
    s.scripts
        .get(sha)
        .map(|sc| (sc.func_ref, sc.name.clone(), sc.flags))
}
