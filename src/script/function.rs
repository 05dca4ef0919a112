//! Redis 7 functions: libraries loaded with FUNCTION LOAD (`#!lua name=lib`
//! shebang) register functions with `redis.register_function`; FCALL runs
//! them. Functions live in their own Lua VM, so SCRIPT FLUSH leaves them
//! alone and FUNCTION FLUSH leaves the EVAL cache alone.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_int;
use std::time::{Duration, Instant};

use super::lua::{self, ffi, to_bytes, State};
use super::redis_lib::push_error;
use super::vm::{self, Vm};

/// Function flags (`flags={...}` in register_function).
pub const FLAG_NAMES: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];
pub const NO_WRITES: u32 = 1;

/// How long a library's top-level code may run at load time.
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

pub struct Function {
    pub name: String,
    pub desc: Option<Vec<u8>>,
    pub flags: u32,
    pub func_ref: i32,
}

pub struct Library {
    pub name: String,
    /// The full code as loaded, shebang included (FUNCTION LIST WITHCODE).
    pub code: Vec<u8>,
    pub functions: Vec<Function>,
}

/// The function libraries and their VM.
#[derive(Default)]
pub struct Functions {
    vm: Option<Vm>,
    /// Libraries in load order.
    pub libs: Vec<Library>,
    /// Function name → (library index, function index).
    index: HashMap<String, (usize, usize)>,
}

/// What `redis.register_function` collects while a library loads.
struct LoadCtx {
    funcs: Vec<Function>,
    start: Instant,
}

thread_local! {
    static LOAD: Cell<*mut LoadCtx> = const { Cell::new(std::ptr::null_mut()) };
}

/// Forgets the library being loaded after a panic unwound out of it.
pub fn forget_load() {
    LOAD.with(|c| c.set(std::ptr::null_mut()));
}

/// True when a library load ran past its time limit (checked by the hook).
pub fn load_timed_out() -> bool {
    let p = LOAD.with(|c| c.get());
    // SAFETY: set only while `load` is on the stack.
    !p.is_null() && unsafe { (*p).start.elapsed() } > LOAD_TIMEOUT
}

/// True when the name has only letters, digits and underscores.
fn valid_name(n: &[u8]) -> bool {
    !n.is_empty() && n.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// The parsed shebang: engine, library name, and the code after the first line.
struct Meta<'a> {
    engine: String,
    name: String,
    body: &'a [u8],
}

fn parse_meta(code: &[u8]) -> Result<Meta<'_>, String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(nl) = code.iter().position(|&c| c == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    let parts = super::shebang_words(&code[..nl]).unwrap_or_default();
    let Some(first) = parts.first() else {
        return Err("Invalid library metadata".into());
    };
    let engine = first.get(2..).unwrap_or_default().to_string();
    let mut name = None;
    for p in &parts[1..] {
        // Bytes, not chars: a word may start with a multi-byte character.
        if p.as_bytes()
            .get(..5)
            .is_some_and(|w| w.eq_ignore_ascii_case(b"name="))
        {
            if name.is_some() {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(p[5..].to_string());
            continue;
        }
        return Err(format!("Invalid metadata value given: {p}"));
    }
    let Some(name) = name else {
        return Err("Library name was not given".into());
    };
    Ok(Meta {
        engine,
        name,
        body: &code[nl..],
    })
}

impl Functions {
    fn vm(&mut self) -> &mut Vm {
        if self.vm.is_none() && !self.libs.is_empty() {
            // The VM was dropped after a panic: load every library again.
            let libs = std::mem::take(&mut self.libs);
            self.index.clear();
            self.vm = Some(new_vm());
            for lib in libs {
                if let Err(e) = self.load(&lib.code, false) {
                    crate::log::warning(&format!("Library '{}' not reloaded: {e}", lib.name));
                }
            }
        }
        self.vm.get_or_insert_with(new_vm)
    }

    /// Drops the VM after a panic unwound through it (its state is not
    /// consistent anymore); the next use reloads the libraries.
    pub fn discard_vm(&mut self) {
        self.vm = None;
    }

    pub fn state(&mut self) -> State {
        self.vm().l
    }

    /// Finds a function: its reference, flags and name.
    pub fn get(&self, name: &[u8]) -> Option<&Function> {
        let name = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        let &(li, fi) = self.index.get(&name)?;
        Some(&self.libs[li].functions[fi])
    }

    /// Bytes the functions VM uses (0 before the first library).
    pub fn memory(&self) -> usize {
        self.vm.as_ref().map_or(0, |v| v.used_memory())
    }

    pub fn functions_count(&self) -> usize {
        self.index.len()
    }

    /// FUNCTION FLUSH: every library and the VM go. `lazy` (ASYNC) hands
    /// more than 64 functions, with their libraries and VM, to the freeing
    /// thread, counted as one object per function (Redis's
    /// `freeFunctionsAsync`); not while a function runs in that VM.
    pub fn flush(&mut self, lazy: bool) {
        let libs = std::mem::take(&mut self.libs);
        let index = std::mem::take(&mut self.index);
        let n = index.len();
        let vm = self.vm.take();
        if lazy && !super::running() {
            let vm = vm.map(Vm::retire);
            crate::db::lazyfree::free_counted((libs, index, vm), n, true);
        }
    }

    fn reindex(&mut self) {
        self.index.clear();
        for (li, lib) in self.libs.iter().enumerate() {
            for (fi, f) in lib.functions.iter().enumerate() {
                self.index.insert(f.name.to_ascii_lowercase(), (li, fi));
            }
        }
    }

    /// FUNCTION DELETE.
    pub fn delete(&mut self, name: &[u8]) -> bool {
        let Some(pos) = self.libs.iter().position(|l| l.name.as_bytes() == name) else {
            return false;
        };
        let lib = self.libs.remove(pos);
        if let Some(vm) = self.vm.as_mut() {
            for f in lib.functions {
                vm.unref(f.func_ref);
            }
            // What the library held goes now: the VM's memory is capped and
            // Lua 5.1 collects only as allocations go on.
            vm.full_gc();
        }
        self.reindex();
        true
    }

    /// FUNCTION LOAD: returns the library name, or the error text (without `ERR `).
    pub fn load(&mut self, code: &[u8], replace: bool) -> Result<String, String> {
        let meta = parse_meta(code)?;
        if !valid_name(meta.name.as_bytes()) {
            return Err("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
        }
        // Engines are looked up without regard to case.
        if !meta.engine.eq_ignore_ascii_case("lua") {
            return Err(format!("Engine '{}' not found", meta.engine));
        }
        let old = self.libs.iter().position(|l| l.name == meta.name);
        if old.is_some() && !replace {
            return Err(format!("Library '{}' already exists", meta.name));
        }
        let vm = self.vm();
        let l = vm.l;
        let func_ref = vm
            .compile(meta.body, "@user_function")
            .map_err(|e| format!("Error compiling function: {e}"))?;
        // SAFETY: `func_ref` was just created in this VM.
        unsafe { set_chunk_env(l, func_ref) };
        let mut ctx = LoadCtx {
            funcs: Vec::new(),
            start: Instant::now(),
        };
        LOAD.with(|c| c.set(&mut ctx as *mut LoadCtx));
        // SAFETY: the VM is ours; LOAD points at `ctx` only during the call.
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
            run_load(l, func_ref)
        }));
        LOAD.with(|c| c.set(std::ptr::null_mut()));
        let res = match res {
            Ok(r) => r,
            Err(payload) => {
                // It unwound through Lua: the VM (and the references just
                // registered in it) cannot be used anymore.
                self.discard_vm();
                std::panic::resume_unwind(payload);
            }
        };
        self.vm().unref(func_ref);
        let unref_all = |this: &mut Functions, funcs: Vec<Function>| {
            for f in funcs {
                this.vm().unref(f.func_ref);
            }
        };
        if let Err(e) = res {
            unref_all(self, ctx.funcs);
            return Err(format!("Error registering functions: {e}"));
        }
        if ctx.funcs.is_empty() {
            return Err("No functions registered".into());
        }
        for f in &ctx.funcs {
            if let Some(&(li, _)) = self.index.get(&f.name.to_ascii_lowercase()) {
                if Some(li) != old {
                    let msg = format!("Function {} already exists", f.name);
                    unref_all(self, ctx.funcs);
                    return Err(msg);
                }
            }
        }
        if let Some(pos) = old {
            let prev = self.libs.remove(pos);
            unref_all(self, prev.functions);
        }
        self.libs.push(Library {
            name: meta.name.clone(),
            code: code.to_vec(),
            functions: ctx.funcs,
        });
        self.reindex();
        Ok(meta.name)
    }
}

/// A VM for libraries: the sandbox plus the load-time API.
fn new_vm() -> Vm {
    let vm = Vm::new();
    // SAFETY: a fresh VM, no script running.
    unsafe { install_load_api(vm.l) };
    vm
}

/// Runs a library's top-level code with the load-time globals.
unsafe fn run_load(l: State, func_ref: i32) -> Result<(), String> {
    let base = ffi::lua_gettop(l);
    set_env(l, ENV_LOAD);
    super::busy::install_hook(l);
    vm::push_error_handler(l);
    ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, func_ref as _);
    let rc = vm::guarded(l, || ffi::lua_pcall(l, 0, 0, base + 1));
    super::busy::remove_hook(l);
    set_env(l, ENV_RUN);
    let res = if rc == 0 {
        Ok(())
    } else {
        let msg = if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            lua::get_field(l, -1, "err");
            let m = to_bytes(l, -1).map(|b| String::from_utf8_lossy(b).into_owned());
            ffi::lua_pop(l, 1);
            m.unwrap_or_default()
        } else {
            vm::err_string(l)
        };
        Err(msg)
    };
    ffi::lua_settop(l, base);
    res
}

/// Registry keys: the libraries' environment metatable and the two tables
/// its `__index` switches between.
const ENV_MT: &str = "__oxidis_fenv_mt";
const ENV_LOAD: &str = "__oxidis_env_load";
const ENV_RUN: &str = "__oxidis_env_run";
const ENV: &str = "__oxidis_fenv";

/// Points the libraries' globals at the load-time or run-time table, as
/// Redis switches its globals' `__index` around FUNCTION LOAD.
unsafe fn set_env(l: State, which: &str) {
    lua::get_field(l, ffi::LUA_REGISTRYINDEX, ENV_MT);
    lua::get_field(l, ffi::LUA_REGISTRYINDEX, which);
    lua::set_field(l, -2, "__index");
    ffi::lua_pop(l, 1);
}

/// Makes the library environment the chunk's (and so its closures') globals.
unsafe fn set_chunk_env(l: State, func_ref: i32) {
    ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, func_ref as _);
    lua::get_field(l, ffi::LUA_REGISTRYINDEX, ENV);
    ffi::lua_setfenv(l, -2);
    ffi::lua_pop(l, 1);
}

/// Builds the load-time globals (only a `redis` table with
/// register_function, log and the versions; anything else is an undefined
/// global) and the switchable environment libraries run in.
unsafe fn install_load_api(l: State) {
    ffi::lua_createtable(l, 0, 8);
    lua::set_funcs(l, &[("register_function", register_function)]);
    // Share log and the constants with the run-time table.
    vm::push_globals(l);
    lua::get_field(l, -1, "redis");
    for name in [
        "log",
        "LOG_DEBUG",
        "LOG_VERBOSE",
        "LOG_NOTICE",
        "LOG_WARNING",
        "REDIS_VERSION",
        "REDIS_VERSION_NUM",
    ] {
        // `redis` is a read-only view: read through its metatable.
        let cname = std::ffi::CString::new(name).unwrap_or_default();
        ffi::lua_getfield(l, -1, cname.as_ptr());
        lua::set_field(l, -4, name);
    }
    ffi::lua_pop(l, 2);
    vm::make_readonly(l, true);
    ffi::lua_createtable(l, 0, 1);
    ffi::lua_insert(l, -2);
    lua::set_field(l, -2, "redis");
    vm::make_readonly(l, true);
    lua::set_field(l, ffi::LUA_REGISTRYINDEX, ENV_LOAD);
    ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
    lua::set_field(l, ffi::LUA_REGISTRYINDEX, ENV_RUN);
    // The environment: an empty read-only table whose reads go to ENV_RUN or ENV_LOAD.
    ffi::lua_createtable(l, 0, 0);
    ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
    ffi::lua_getmetatable(l, -1);
    ffi::lua_remove(l, -2);
    // Copy the globals' metatable (its __newindex guard) for the environment.
    ffi::lua_createtable(l, 0, 3);
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -3) != 0 {
        ffi::lua_pushvalue(l, -2);
        ffi::lua_insert(l, -2);
        ffi::lua_rawset(l, -4);
    }
    ffi::lua_remove(l, -2);
    ffi::lua_pushvalue(l, -1);
    lua::set_field(l, ffi::LUA_REGISTRYINDEX, ENV_MT);
    ffi::lua_setmetatable(l, -2);
    lua::set_field(l, ffi::LUA_REGISTRYINDEX, ENV);
    set_env(l, ENV_RUN);
}

fn flag_bit(name: &[u8]) -> Option<u32> {
    FLAG_NAMES
        .iter()
        .position(|f| f.as_bytes() == name)
        .map(|i| 1 << i)
}

/// Reads the flags table at `idx`; None for an unknown flag.
unsafe fn read_flags(l: State, idx: c_int) -> Option<u32> {
    let mut flags = 0;
    let mut j = 1;
    loop {
        ffi::lua_rawgeti_(l, idx, j as _);
        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
            ffi::lua_pop(l, 1);
            return Some(flags);
        }
        let bit = if ffi::lua_type(l, -1) == ffi::LUA_TSTRING {
            flag_bit(to_bytes(l, -1).unwrap_or_default())
        } else {
            None
        };
        ffi::lua_pop(l, 1);
        flags |= bit?;
        j += 1;
    }
}

/// Reads register_function's arguments; on error returns its text.
unsafe fn read_args(l: State) -> Result<Function, &'static str> {
    let argc = ffi::lua_gettop(l);
    if !(1..=2).contains(&argc) {
        return Err("wrong number of arguments to redis.register_function");
    }
    if argc == 2 {
        if ffi::lua_type(l, 1) != ffi::LUA_TSTRING && ffi::lua_type(l, 1) != ffi::LUA_TNUMBER {
            return Err("first argument to redis.register_function must be a string");
        }
        if ffi::lua_type(l, 2) != ffi::LUA_TFUNCTION {
            return Err("second argument to redis.register_function must be a function");
        }
        let name = String::from_utf8_lossy(to_bytes(l, 1).unwrap_or_default()).into_owned();
        ffi::lua_pushvalue(l, 2);
        let func_ref = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        return Ok(Function {
            name,
            desc: None,
            flags: 0,
            func_ref,
        });
    }
    if ffi::lua_type(l, 1) != ffi::LUA_TTABLE {
        return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
    }
    let mut name = None;
    let mut desc = None;
    let mut flags = 0;
    let mut func_ref = None;
    let fail = |l: State, r: Option<i32>, e: &'static str| {
        if let Some(r) = r {
            ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r);
        }
        Err(e)
    };
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, 1) != 0 {
        match ffi::lua_type(l, -2) {
            ffi::LUA_TSTRING => {}
            // A number is a string to Lua's C API, and never a known name.
            ffi::LUA_TNUMBER => {
                ffi::lua_pop(l, 2);
                return fail(
                    l,
                    func_ref,
                    "unknown argument given to redis.register_function",
                );
            }
            _ => {
                ffi::lua_pop(l, 2);
                return fail(
                    l,
                    func_ref,
                    "named argument key given to redis.register_function is not a string",
                );
            }
        }
        let key = to_bytes(l, -2).unwrap_or_default().to_ascii_lowercase();
        let is_str = matches!(ffi::lua_type(l, -1), ffi::LUA_TSTRING | ffi::LUA_TNUMBER);
        match &key[..] {
            b"function_name" => {
                if !is_str {
                    ffi::lua_pop(l, 2);
                    return fail(
                        l,
                        func_ref,
                        "function_name argument given to redis.register_function must be a string",
                    );
                }
                name =
                    Some(String::from_utf8_lossy(to_bytes(l, -1).unwrap_or_default()).into_owned());
            }
            b"description" => {
                if !is_str {
                    ffi::lua_pop(l, 2);
                    return fail(
                        l,
                        func_ref,
                        "description argument given to redis.register_function must be a string",
                    );
                }
                desc = Some(to_bytes(l, -1).unwrap_or_default().to_vec());
            }
            b"callback" => {
                if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
                    ffi::lua_pop(l, 2);
                    return fail(
                        l,
                        func_ref,
                        "callback argument given to redis.register_function must be a function",
                    );
                }
                if let Some(r) = func_ref {
                    ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r);
                }
                func_ref = Some(ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX));
                continue;
            }
            b"flags" => {
                if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
                    ffi::lua_pop(l, 2);
                    return fail(l, func_ref, "flags argument to redis.register_function must be a table representing function flags");
                }
                match read_flags(l, ffi::lua_gettop(l)) {
                    Some(f) => flags = f,
                    None => {
                        ffi::lua_pop(l, 2);
                        return fail(l, func_ref, "unknown flag given");
                    }
                }
            }
            _ => {
                ffi::lua_pop(l, 2);
                return fail(
                    l,
                    func_ref,
                    "unknown argument given to redis.register_function",
                );
            }
        }
        ffi::lua_pop(l, 1);
    }
    let Some(name) = name else {
        return fail(
            l,
            func_ref,
            "redis.register_function must get a function name argument",
        );
    };
    let Some(func_ref) = func_ref else {
        return Err("redis.register_function must get a callback argument");
    };
    Ok(Function {
        name,
        desc,
        flags,
        func_ref,
    })
}

unsafe extern "C-unwind" fn register_function(l: State) -> c_int {
    let p = LOAD.with(|c| c.get());
    if p.is_null() {
        push_error(
            l,
            b"redis.register_function can only be called on FUNCTION LOAD command",
        );
        return lua::raise(l);
    }
    let err: &str = match read_args(l) {
        Err(e) => e,
        Ok(f) => {
            let ctx = &mut *p;
            if !valid_name(f.name.as_bytes()) {
                ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, f.func_ref);
                // Redis 7.0 words this error as for library names.
                "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
            } else if ctx
                .funcs
                .iter()
                .any(|g| g.name.eq_ignore_ascii_case(&f.name))
            {
                ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, f.func_ref);
                "Function already exists in the library"
            } else {
                ctx.funcs.push(f);
                return 0;
            }
        }
    };
    push_error(l, err.as_bytes());
    lua::raise(l)
}

/// Pushes the flag names of `flags`, for FUNCTION LIST.
pub fn flag_names(flags: u32) -> Vec<&'static str> {
    FLAG_NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| flags & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect()
}

/// Pushes the two tables FCALL passes to a function: its keys and its args.
pub unsafe fn push_keys_args(l: State, keys: &[&[u8]], args: &[&[u8]]) {
    for list in [keys, args] {
        ffi::lua_createtable(l, list.len() as c_int, 0);
        for (i, a) in list.iter().enumerate() {
            lua::push_bytes(l, a);
            ffi::lua_rawseti_(l, -2, (i + 1) as _);
        }
    }
}
