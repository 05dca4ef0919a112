//! The Lua VM: creation with Redis's libraries, the sandbox, compiling
//! chunks (never bytecode), and the per-call globals KEYS and ARGV.

use crate::server::alloc::lua_heap;
use std::ffi::{c_int, c_void};

use super::load::load_chunk;
use super::lua::{self, ffi, push_bytes, push_str, to_bytes, State};

/// Upper bound on the VM's memory; allocations past it fail with Lua's
/// "not enough memory" error instead of exhausting the server (Redis has no
/// cap). Unit tests use a small one to reach it quickly.
pub const MEMORY_LIMIT: usize = if cfg!(test) { 64 << 20 } else { 1 << 30 };

const SANDBOX: &str = include_str!("../../lua/sandbox.lua");

/// Registry keys.
const REG_RO: &str = "__oxidis_readonly";
/// Registry slots read on every call, under negative integer keys (which
/// `luaL_ref` never hands out), so no key string is hashed per call.
const SLOT_REAL_G: i32 = -1;
const SLOT_ERRH: i32 = -2;
const SLOT_KEYS: i32 = -3;
const SLOT_ARGV: i32 = -4;
/// The read-only table `getmetatable(_G)` answers.
const SLOT_G_MT: i32 = -5;

struct AllocState {
    used: usize,
    limit: usize,
    /// The limit applies only while Lua code runs under protection (see
    /// [`guarded`]): the engine's own calls outside a pcall (luaL_ref and
    /// unref, KEYS/ARGV tables) have no error handler to catch "not enough
    /// memory", and Lua's default answer to that is exit(1).
    enforce: bool,
}

/// One Lua state with the sandbox installed.
pub struct Vm {
    pub l: State,
    alloc: *mut AllocState,
}

/// Lua's allocator over the VM's own heap (`lua_heap`, outside
/// `used_memory` as in Redis), counting the bytes Lua asked for
/// (`used_memory_lua`, Lua's own count) and applying the cap.
unsafe extern "C" fn lua_alloc(
    ud: *mut c_void,
    ptr: *mut c_void,
    osize: usize,
    nsize: usize,
) -> *mut c_void {
    let a = &mut *(ud as *mut AllocState);
    let osize = if ptr.is_null() { 0 } else { osize };
    if nsize == 0 {
        if !ptr.is_null() {
            lua_heap::resize(ptr as *mut u8, osize, 0);
            a.used -= osize;
        }
        return std::ptr::null_mut();
    }
    if a.enforce && nsize > osize && a.used + (nsize - osize) > a.limit {
        return std::ptr::null_mut();
    }
    let p = lua_heap::resize(ptr as *mut u8, osize, nsize);
    if !p.is_null() {
        a.used = a.used - osize + nsize;
    }
    p as *mut c_void
}

/// Runs `f` (a protected call into Lua: lua_pcall, lua_load) with the
/// VM's memory limit enforced; outside it the limit is off (see `AllocState`).
pub unsafe fn guarded<R>(l: State, f: impl FnOnce() -> R) -> R {
    let mut ud = std::ptr::null_mut();
    ffi::lua_getallocf(l, &mut ud);
    let a = ud as *mut AllocState;
    let was = (*a).enforce;
    (*a).enforce = true;
    let r = f();
    (*a).enforce = was;
    r
}

impl Drop for Vm {
    fn drop(&mut self) {
        // SAFETY: the state and allocator were created together in `new`.
        unsafe {
            ffi::lua_close(self.l);
            drop(Box::from_raw(self.alloc));
        }
    }
}

/// A VM taken out of service to be dropped on the freeing thread (SCRIPT
/// FLUSH ASYNC, FUNCTION FLUSH ASYNC).
pub struct Retired {
    _vm: Vm,
}

// SAFETY: a VM is retired only while no script runs (`super::running`), so
// nothing else reaches its `lua_State` or allocator state: `run` keeps the
// state pointer only while on the stack, and the engine keeps no other
// pointer to a VM. Closing it calls `lua_alloc`, which uses only its own
// state and the global allocator (usable from any thread), and no Lua value
// of ours has a `__gc` finalizer, so `lua_close` runs no code that reads
// this thread's locals.
unsafe impl Send for Retired {}

impl Vm {
    /// This VM, ready to move to the freeing thread; see [`Retired`].
    pub fn retire(self) -> Retired {
        debug_assert!(!super::running(), "a VM is retired while a script runs");
        Retired { _vm: self }
    }
}

impl Default for Vm {
    fn default() -> Self {
        Vm::new()
    }
}

impl Vm {
    pub fn new() -> Vm {
        Vm::with_limit(MEMORY_LIMIT)
    }

    /// A VM whose allocations stop at `limit` bytes.
    pub fn with_limit(limit: usize) -> Vm {
        let a = Box::into_raw(Box::new(AllocState {
            used: 0,
            limit,
            enforce: false,
        }));
        // SAFETY: a fresh state; everything below runs before any script.
        unsafe {
            let l = ffi::lua_newstate(lua_alloc, a as *mut c_void);
            assert!(!l.is_null(), "cannot create the Lua state");
            super::load::open_libs(l);
            super::redis_lib::open(l);
            super::cjson::open(l);
            super::bit::open(l);
            super::structlib::open(l);
            super::msgpack::open(l);
            guard_table_lib(l);
            // Registry tables the C helpers consult.
            ffi::lua_createtable(l, 0, 16);
            set_registry(l, REG_RO);
            // Run the sandbox builder with its C helpers.
            if load_chunk(l, SANDBOX.as_bytes(), "=sandbox") != 0 {
                panic!("sandbox.lua: {}", err_string(l));
            }
            ffi::lua_createtable(l, 0, 8);
            lua::set_funcs(
                l,
                &[
                    ("nonexistent", nonexistent_global),
                    ("newindex", readonly_newindex),
                    ("rawset", safe_rawset),
                    ("rawget", safe_rawget),
                    ("next", safe_next),
                    ("pairs", safe_pairs),
                    ("setmetatable", safe_setmetatable),
                    ("getmetatable", safe_getmetatable),
                    ("pcall", redis_pcall),
                ],
            );
            get_registry(l, REG_RO);
            lua::set_field(l, -2, "readonly");
            if ffi::lua_pcall(l, 1, 3, 0) != 0 {
                panic!("sandbox.lua: {}", err_string(l));
            }
            // The sandbox returns the error handler, the globals table and
            // the view getmetatable(_G) shows.
            ffi::lua_rawseti_(l, ffi::LUA_REGISTRYINDEX, SLOT_G_MT as _);
            ffi::lua_rawseti_(l, ffi::LUA_REGISTRYINDEX, SLOT_REAL_G as _);
            ffi::lua_rawseti_(l, ffi::LUA_REGISTRYINDEX, SLOT_ERRH as _);
            push_str(l, "KEYS");
            ffi::lua_rawseti_(l, ffi::LUA_REGISTRYINDEX, SLOT_KEYS as _);
            push_str(l, "ARGV");
            ffi::lua_rawseti_(l, ffi::LUA_REGISTRYINDEX, SLOT_ARGV as _);
            ffi::lua_settop(l, 0);
            ffi::lua_gc(l, ffi::LUA_GCCOLLECT, 0);
            Vm { l, alloc: a }
        }
    }

    /// Compiles a chunk and keeps it in the registry; returns its reference,
    /// or the compile error text.
    pub fn compile(&mut self, body: &[u8], name: &str) -> Result<i32, String> {
        // SAFETY: the state is ours; the stack is left balanced.
        unsafe {
            if guarded(self.l, || load_chunk(self.l, body, name)) != 0 {
                let e = err_string(self.l);
                ffi::lua_pop(self.l, 1);
                return Err(e);
            }
            let r = ffi::luaL_ref(self.l, ffi::LUA_REGISTRYINDEX);
            // One basic collector step per compile. The parser leaves
            // garbage (its constant tables, 64 and 80 bytes); collected a
            // step at a time, its slots go to the next compiles' objects.
            // Paced by allocation alone, this VM (lighter per script than
            // Redis's, which also keeps an `f_<sha>` string per script)
            // freed the garbage of thousands of compiles in one sweep,
            // after their long-lived objects had taken fresh slabs: those
            // slabs stayed part empty, allocator_frag_ratio 1.08 after
            // 50,000 SCRIPT LOADs (Redis 1.02; unit/memefficiency "Active
            // defrag eval scripts" wants < 1.05). With the step: 1.01.
            ffi::lua_gc(self.l, ffi::LUA_GCSTEP, 0);
            Ok(r)
        }
    }

    /// Frees a compiled chunk.
    pub fn unref(&mut self, r: i32) {
        // SAFETY: `r` came from `compile`.
        unsafe { ffi::luaL_unref(self.l, ffi::LUA_REGISTRYINDEX, r) }
    }

    /// The VM's heap as Redis reports it (`used_memory_lua`): Lua's own
    /// count in whole KB (`lua_gc(LUA_GCCOUNT) * 1024`).
    pub fn used_memory(&self) -> usize {
        // SAFETY: the allocator state lives as long as the VM.
        unsafe { (*self.alloc).used & !1023 }
    }

    /// A full collection (no script runs now).
    pub fn full_gc(&mut self) {
        // SAFETY: the state is ours and idle.
        unsafe {
            ffi::lua_gc(self.l, ffi::LUA_GCCOLLECT, 0);
        }
    }

    pub fn gc_step(&mut self) {
        // SAFETY: no script runs now.
        unsafe {
            ffi::lua_gc(self.l, ffi::LUA_GCSTEP, 50);
        }
    }
}

unsafe fn set_registry(l: State, key: &str) {
    lua::set_field(l, ffi::LUA_REGISTRYINDEX, key);
}

unsafe fn get_registry(l: State, key: &str) {
    lua::get_field(l, ffi::LUA_REGISTRYINDEX, key);
}

/// The error value on top of the stack as text.
pub unsafe fn err_string(l: State) -> String {
    match to_bytes(l, -1) {
        Some(b) => String::from_utf8_lossy(b).into_owned(),
        None => "unknown error".into(),
    }
}

/// Pushes the table behind the globals scripts see.
pub unsafe fn push_globals(l: State) {
    ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, SLOT_REAL_G as _);
}

/// Replaces the table on top of the stack by a read-only view of it. With
/// `strict`, reading a missing field raises the undefined-global error too.
pub unsafe fn make_readonly(l: State, strict: bool) {
    let t = ffi::lua_gettop(l);
    if strict {
        ffi::lua_createtable(l, 0, 1);
        ffi::lua_pushcclosure(l, nonexistent_global, 0);
        lua::set_field(l, -2, "__index");
        ffi::lua_setmetatable(l, t);
    }
    ffi::lua_createtable(l, 0, 0);
    ffi::lua_createtable(l, 0, 3);
    ffi::lua_pushvalue(l, t);
    lua::set_field(l, -2, "__index");
    ffi::lua_pushcclosure(l, readonly_newindex, 0);
    lua::set_field(l, -2, "__newindex");
    ffi::lua_pushboolean(l, 0);
    lua::set_field(l, -2, "__metatable");
    ffi::lua_setmetatable(l, -2);
    get_registry(l, REG_RO);
    ffi::lua_pushvalue(l, -2);
    ffi::lua_pushvalue(l, t);
    ffi::lua_rawset(l, -3);
    ffi::lua_pop(l, 1);
    ffi::lua_replace(l, t);
}

/// Pushes the error handler (Redis's `__redis__err__handler`).
pub unsafe fn push_error_handler(l: State) {
    ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, SLOT_ERRH as _);
}

/// Sets the globals KEYS and ARGV for one call.
pub unsafe fn set_keys_argv(l: State, keys: &[&[u8]], args: &[&[u8]]) {
    push_globals(l);
    for (slot, list) in [(SLOT_KEYS, keys), (SLOT_ARGV, args)] {
        ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, slot as _);
        ffi::lua_createtable(l, list.len() as c_int, 0);
        for (i, a) in list.iter().enumerate() {
            push_bytes(l, a);
            ffi::lua_rawseti_(l, -2, (i + 1) as _);
        }
        ffi::lua_rawset(l, -3);
    }
    ffi::lua_pop(l, 1);
}

/// A C closure guarding a `table.*` function that writes raw: refused on
/// read-only tables, else the original (upvalue 1) runs.
unsafe extern "C-unwind" fn guarded_table_fn(l: State) -> c_int {
    if is_readonly(l, 1) {
        return lua::raise_plain(l, READONLY_MSG);
    }
    let n = ffi::lua_gettop(l);
    ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
    ffi::lua_insert(l, 1);
    ffi::lua_call(l, n, ffi::LUA_MULTRET);
    ffi::lua_gettop(l)
}

/// Wraps `table.insert`, which writes raw (run before the sandbox is built).
unsafe fn guard_table_lib(l: State) {
    ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, c"table".as_ptr());
    // remove, sort and setn never write to an empty table, and every
    // protected table looks empty; insert would.
    ffi::lua_getfield(l, -1, c"insert".as_ptr());
    ffi::lua_pushcclosure(l, guarded_table_fn, 1);
    ffi::lua_setfield(l, -2, c"insert".as_ptr());
    ffi::lua_pop(l, 1);
}

/// True when the value at `idx` is a protected (read-only) table.
unsafe fn is_readonly(l: State, idx: c_int) -> bool {
    if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
        return false;
    }
    let idx = lua::abs_index(l, idx);
    get_registry(l, REG_RO);
    ffi::lua_pushvalue(l, idx);
    ffi::lua_rawget(l, -2);
    let ro = ffi::lua_type(l, -1) != ffi::LUA_TNIL;
    ffi::lua_pop(l, 2);
    ro
}

/// Replaces a protected proxy at `idx` by the table it stands for.
unsafe fn unwrap_proxy(l: State, idx: c_int) {
    if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
        return;
    }
    let idx = lua::abs_index(l, idx);
    get_registry(l, REG_RO);
    ffi::lua_pushvalue(l, idx);
    ffi::lua_rawget(l, -2);
    if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
        ffi::lua_replace(l, idx);
        ffi::lua_pop(l, 1);
    } else {
        ffi::lua_pop(l, 2);
    }
}

const READONLY_MSG: &str = "Attempt to modify a readonly table";

/// `__index` of the globals: reading an undefined global is an error.
unsafe extern "C-unwind" fn nonexistent_global(l: State) -> c_int {
    // Reachable as getmetatable(_G).__index, so called by scripts directly.
    if ffi::lua_gettop(l) != 2 {
        return lua::raise_msg(l, "Wrong number of arguments to luaProtectedTableError");
    }
    if ffi::lua_isstring(l, 2) == 0 {
        return lua::raise_msg(
            l,
            "Second argument to luaProtectedTableError must be a string or number",
        );
    }
    let name = to_bytes(l, 2).map(|b| String::from_utf8_lossy(b).into_owned());
    let msg = format!(
        "Script attempted to access nonexistent global variable '{}'",
        name.unwrap_or_default()
    );
    ffi::luaL_where(l, 1);
    push_str(l, &msg);
    drop(msg);
    ffi::lua_concat(l, 2);
    lua::raise(l)
}

/// `__newindex` of every protected table.
unsafe extern "C-unwind" fn readonly_newindex(l: State) -> c_int {
    lua::raise_msg(l, READONLY_MSG)
}

unsafe extern "C-unwind" fn safe_rawset(l: State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    ffi::luaL_checkany(l, 2);
    ffi::luaL_checkany(l, 3);
    if is_readonly(l, 1) {
        return lua::raise_plain(l, READONLY_MSG);
    }
    ffi::lua_settop(l, 3);
    ffi::lua_rawset(l, 1);
    1
}

unsafe extern "C-unwind" fn safe_rawget(l: State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    ffi::luaL_checkany(l, 2);
    unwrap_proxy(l, 1);
    ffi::lua_settop(l, 2);
    ffi::lua_rawget(l, 1);
    1
}

unsafe extern "C-unwind" fn safe_next(l: State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    unwrap_proxy(l, 1);
    ffi::lua_settop(l, 2);
    if ffi::lua_next(l, 1) != 0 {
        2
    } else {
        ffi::lua_pushnil(l);
        1
    }
}

unsafe extern "C-unwind" fn safe_pairs(l: State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    ffi::lua_pushcclosure(l, safe_next, 0);
    ffi::lua_pushvalue(l, 1);
    ffi::lua_pushnil(l);
    3
}

unsafe extern "C-unwind" fn safe_setmetatable(l: State) -> c_int {
    let t = ffi::lua_type(l, 2);
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    if t != ffi::LUA_TNIL && t != ffi::LUA_TTABLE {
        return ffi::luaL_argerror(l, 2, c"nil or table expected".as_ptr());
    }
    if is_readonly(l, 1) {
        return lua::raise_plain(l, READONLY_MSG);
    }
    if ffi::luaL_getmetafield(l, 1, c"__metatable".as_ptr()) != 0 {
        return lua::raise_msg(l, "cannot change a protected metatable");
    }
    ffi::lua_settop(l, 2);
    ffi::lua_setmetatable(l, 1);
    1
}

/// `getmetatable(v)` as Redis shows it: Redis protects its tables with a
/// read-only flag, ours are proxies, so a proxy answers what the table it
/// stands for would: nil for a library, the (read-only) globals metatable
/// for `_G`. Anything else as Lua's own.
unsafe extern "C-unwind" fn safe_getmetatable(l: State) -> c_int {
    ffi::luaL_checkany(l, 1);
    if is_readonly(l, 1) {
        push_globals(l);
        lua::get_field(l, -1, "_G");
        if ffi::lua_rawequal(l, 1, -1) != 0 {
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, SLOT_G_MT as _);
        } else {
            ffi::lua_pushnil(l);
        }
        return 1;
    }
    if ffi::lua_getmetatable(l, 1) == 0 {
        ffi::lua_pushnil(l);
        return 1;
    }
    ffi::luaL_getmetafield(l, 1, c"__metatable".as_ptr());
    1
}

/// Redis 7's `pcall`: as Lua's, except that an error table (what
/// `redis.call` raises) comes back as its `err` string.
unsafe extern "C-unwind" fn redis_pcall(l: State) -> c_int {
    let argc = ffi::lua_gettop(l);
    ffi::luaL_checkany(l, 1);
    ffi::lua_pushboolean(l, 1);
    ffi::lua_insert(l, 1);
    if ffi::lua_pcall(l, argc - 1, ffi::LUA_MULTRET, 0) != 0 {
        ffi::lua_remove(l, 1);
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            ffi::lua_getfield(l, -1, c"err".as_ptr());
            if ffi::lua_isstring(l, -1) != 0 {
                ffi::lua_replace(l, -2);
            } else {
                ffi::lua_pop(l, 1);
            }
        }
        ffi::lua_pushboolean(l, 0);
        ffi::lua_insert(l, 1);
    }
    ffi::lua_gettop(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `body` as a script would; returns its string result or error text.
    fn run(vm: &mut Vm, body: &str) -> Result<String, String> {
        let r = vm.compile(body.as_bytes(), "@user_script")?;
        // SAFETY: the VM is ours; the stack is restored before returning.
        unsafe {
            let l = vm.l;
            let base = ffi::lua_gettop(l);
            push_error_handler(l);
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, r as _);
            let rc = guarded(l, || ffi::lua_pcall(l, 0, 1, base + 1));
            let out = if rc == 0 {
                Ok(err_string(l))
            } else if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
                lua::get_field(l, -1, "err");
                let e = err_string(l);
                ffi::lua_pop(l, 1);
                Err(e)
            } else {
                Err(err_string(l))
            };
            ffi::lua_settop(l, base);
            vm.unref(r);
            out
        }
    }

    #[test]
    fn memory_is_bounded_and_the_vm_survives() {
        let mut vm = Vm::with_limit(8 << 20);
        let e = run(
            &mut vm,
            "local t = {} for i = 1, 1e7 do t[i] = string.rep('x', 100) .. i end return 'done'",
        )
        .unwrap_err();
        assert_eq!(e, "not enough memory");
        assert!(vm.used_memory() <= 8 << 20);
        // Garbage from the failed script is collectable; the VM still works.
        unsafe { ffi::lua_gc(vm.l, ffi::LUA_GCCOLLECT, 0) };
        assert_eq!(run(&mut vm, "return 'ok'").unwrap(), "ok");
    }

    #[test]
    fn globals_are_protected_and_scripts_do_not_leak() {
        let mut vm = Vm::new();
        let e = run(&mut vm, "x = 1").unwrap_err();
        assert_eq!(e, "ERR user_script:1: Attempt to modify a readonly table");
        let e = run(&mut vm, "return x").unwrap_err();
        assert_eq!(
            e,
            "ERR user_script:1: Script attempted to access nonexistent global variable 'x'"
        );
        let e = run(&mut vm, "table.insert(redis, 1)").unwrap_err();
        assert_eq!(e, "ERR Attempt to modify a readonly table");
        assert_eq!(
            run(&mut vm, "return tostring(next(redis) ~= nil)").unwrap(),
            "true"
        );
        assert_eq!(
            run(&mut vm, "return tostring(rawget(redis, 1))").unwrap(),
            "nil"
        );
    }
}
