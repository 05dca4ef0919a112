//! Loading Lua chunks, as text only: the one `lua_load` call of the engine,
//! the `load`/`loadstring` builtins scripts see, and the standard libraries
//! Redis opens (never io, os or package, whose loaders read files).
//!
//! Invariant: no C function reachable from a script can load bytecode. Lua
//! 5.1's bytecode verifier can be bypassed, so a binary chunk is a way out of
//! the sandbox; Redis patches `f_parser` to always run the text parser. We
//! cannot patch the vendored Lua, so every load goes through [`load_text`],
//! whose reader hands Lua an empty first piece: `f_parser` then sees end of
//! input where it looks for the `\x1bLua` signature and picks the text
//! parser, which rejects bytecode as a syntax error ("unexpected symbol near
//! 'char(27)'"), Redis's answer. Lua's own loaders (`luaB_load`,
//! `luaB_loadstring`, `dofile`, `loadfile`) are replaced or removed from the
//! globals right after the base library opens, before any other code runs.

use std::ffi::{c_char, c_int, c_void};

use super::lua::{ffi, State};

/// The state of [`text_only_reader`]: the real reader and its data.
struct TextOnly {
    inner: ffi::lua_Reader,
    ud: *mut c_void,
    started: bool,
}

unsafe extern "C-unwind" fn text_only_reader(
    l: State,
    ud: *mut c_void,
    size: *mut usize,
) -> *const c_char {
    let t = &mut *(ud as *mut TextOnly);
    if !t.started {
        // The empty first piece: see the module comment.
        t.started = true;
        *size = 0;
        return c"".as_ptr();
    }
    (t.inner)(l, t.ud, size)
}

/// `lua_load` in text mode: the only way this engine compiles a chunk.
/// Pushes the function or the error message; returns Lua's status.
pub unsafe fn load_text(
    l: State,
    reader: ffi::lua_Reader,
    ud: *mut c_void,
    name: *const c_char,
) -> c_int {
    let mut t = TextOnly {
        inner: reader,
        ud,
        started: false,
    };
    ffi::lua_load(
        l,
        text_only_reader,
        &mut t as *mut TextOnly as *mut c_void,
        name,
    )
}

/// Reader data for one in-memory buffer.
struct Buffer {
    data: *const u8,
    len: usize,
    done: bool,
}

unsafe extern "C-unwind" fn buffer_reader(
    _l: State,
    ud: *mut c_void,
    size: *mut usize,
) -> *const c_char {
    let b = &mut *(ud as *mut Buffer);
    if b.done {
        *size = 0;
        return std::ptr::null();
    }
    b.done = true;
    *size = b.len;
    b.data as *const c_char
}

/// Loads `len` bytes at `data` as source text with the C string `name`.
unsafe fn load_buffer(l: State, data: *const u8, len: usize, name: *const c_char) -> c_int {
    let mut b = Buffer {
        data,
        len,
        done: false,
    };
    load_text(l, buffer_reader, &mut b as *mut Buffer as *mut c_void, name)
}

/// Loads `body` as source text (never bytecode) with chunk name `name`.
/// Pushes the function, or the error message; returns Lua's status.
pub unsafe fn load_chunk(l: State, body: &[u8], name: &str) -> c_int {
    let cname = std::ffi::CString::new(name.replace('\0', "")).unwrap_or_default();
    load_buffer(l, body.as_ptr(), body.len(), cname.as_ptr())
}

/// Lua's `load_aux`: the function, or nil and the error message.
unsafe fn load_result(l: State, status: c_int) -> c_int {
    if status == 0 {
        1
    } else {
        ffi::lua_pushnil(l);
        ffi::lua_insert(l, -2);
        2
    }
}

/// `loadstring(s [, chunkname])` as Lua 5.1's, text only.
unsafe extern "C-unwind" fn safe_loadstring(l: State) -> c_int {
    let mut len = 0usize;
    let s = ffi::luaL_checklstring(l, 1, &mut len);
    // Lua strings end with a NUL, so the chunk name stops at the first one.
    let name = ffi::luaL_optlstring(l, 2, s, std::ptr::null_mut());
    load_result(l, load_buffer(l, s as *const u8, len, name))
}

/// The reader behind `load(f)`: calls `f` (argument 1) for each piece, as
/// Lua 5.1's `generic_reader`, keeping the piece alive in stack slot 3.
unsafe extern "C-unwind" fn function_reader(
    l: State,
    _ud: *mut c_void,
    size: *mut usize,
) -> *const c_char {
    super::lua::check_stack(l, 2, c"too many nested functions");
    ffi::lua_pushvalue(l, 1);
    ffi::lua_call(l, 0, 1);
    if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
        *size = 0;
        return std::ptr::null();
    }
    if ffi::lua_isstring(l, -1) == 0 {
        ffi::luaL_error(l, c"reader function must return a string".as_ptr());
        return std::ptr::null();
    }
    ffi::lua_replace(l, 3);
    ffi::lua_tolstring(l, 3, size)
}

/// `load(f [, chunkname])` as Lua 5.1's, text only.
unsafe extern "C-unwind" fn safe_load(l: State) -> c_int {
    let name = ffi::luaL_optlstring(l, 2, c"=(load)".as_ptr(), std::ptr::null_mut());
    ffi::luaL_checktype(l, 1, ffi::LUA_TFUNCTION);
    // The function, the name, and a slot for the current piece.
    ffi::lua_settop(l, 3);
    load_result(l, load_text(l, function_reader, std::ptr::null_mut(), name))
}

/// Opens the libraries Redis opens (`luaLoadLibraries`): base, table,
/// string, math and debug (the sandbox drops debug once it has used it).
/// Lua's own loaders are replaced before anything else can see them.
pub unsafe fn open_libs(l: State) {
    let libs: [(&std::ffi::CStr, ffi::lua_CFunction); 5] = [
        (c"", ffi::luaopen_base),
        (c"table", ffi::luaopen_table),
        (c"string", ffi::luaopen_string),
        (c"math", ffi::luaopen_math),
        (c"debug", ffi::luaopen_debug),
    ];
    for (name, open) in libs {
        ffi::lua_pushcclosure(l, open, 0);
        ffi::lua_pushstring(l, name.as_ptr());
        ffi::lua_call(l, 1, 0);
    }
    super::mathrand::install(l);
    let globals = ffi::LUA_GLOBALSINDEX;
    ffi::lua_pushcclosure(l, safe_load, 0);
    ffi::lua_setfield(l, globals, c"load".as_ptr());
    ffi::lua_pushcclosure(l, safe_loadstring, 0);
    ffi::lua_setfield(l, globals, c"loadstring".as_ptr());
    for name in [c"dofile", c"loadfile"] {
        ffi::lua_pushnil(l);
        ffi::lua_setfield(l, globals, name.as_ptr());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Lua's own C functions that can compile a chunk (or reach one that
    /// can), read from a state with every standard library open.
    fn lua_loaders() -> HashSet<usize> {
        let mut out = HashSet::new();
        // SAFETY: a private state, closed before returning.
        unsafe {
            let l = ffi::luaL_newstate();
            ffi::luaL_openlibs(l);
            for name in [
                c"load",
                c"loadstring",
                c"dofile",
                c"loadfile",
                c"require",
                c"module",
            ] {
                ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, name.as_ptr());
                out.insert(ffi::lua_tocfunction(l, -1).expect("a C function") as usize);
                ffi::lua_pop(l, 1);
            }
            // The functions of package (its searchers read files), io and os.
            for lib in [c"package", c"io", c"os"] {
                ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, lib.as_ptr());
                functions_in(l, &mut out);
                ffi::lua_getfield(l, -1, c"loaders".as_ptr());
                functions_in(l, &mut out);
                ffi::lua_pop(l, 2);
            }
            ffi::lua_close(l);
        }
        out
    }

    /// Adds the C functions stored in the table on top of the stack (if it is one).
    unsafe fn functions_in(l: State, out: &mut HashSet<usize>) {
        if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
            return;
        }
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            if let Some(f) = ffi::lua_tocfunction(l, -1) {
                out.insert(f as usize);
            }
            ffi::lua_pop(l, 1);
        }
    }

    /// Visits everything reachable from the value on top of the stack
    /// (table keys and values, metatables, environments, upvalues) and adds
    /// the C functions met to `found`.
    unsafe fn walk(l: State, seen: &mut HashSet<usize>, found: &mut HashSet<usize>) {
        let t = ffi::lua_type(l, -1);
        if !matches!(
            t,
            ffi::LUA_TTABLE | ffi::LUA_TFUNCTION | ffi::LUA_TUSERDATA | ffi::LUA_TTHREAD
        ) {
            return;
        }
        if !seen.insert(ffi::lua_topointer(l, -1) as usize) {
            return;
        }
        assert!(ffi::lua_checkstack(l, 8) != 0);
        let idx = ffi::lua_gettop(l);
        if ffi::lua_getmetatable(l, idx) != 0 {
            walk(l, seen, found);
            ffi::lua_pop(l, 1);
        }
        match t {
            ffi::LUA_TTABLE => {
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, idx) != 0 {
                    walk(l, seen, found);
                    ffi::lua_pop(l, 1);
                    ffi::lua_pushvalue(l, -1);
                    walk(l, seen, found);
                    ffi::lua_pop(l, 1);
                }
            }
            ffi::LUA_TFUNCTION => {
                if let Some(f) = ffi::lua_tocfunction(l, idx) {
                    found.insert(f as usize);
                }
                let mut n = 1;
                while !ffi::lua_getupvalue(l, idx, n).is_null() {
                    walk(l, seen, found);
                    ffi::lua_pop(l, 1);
                    n += 1;
                }
                ffi::lua_getfenv(l, idx);
                walk(l, seen, found);
                ffi::lua_pop(l, 1);
            }
            ffi::LUA_TUSERDATA => {
                ffi::lua_getfenv(l, idx);
                walk(l, seen, found);
                ffi::lua_pop(l, 1);
            }
            _ => {}
        }
    }

    /// Every C function reachable in the state `l` from the registry, the
    /// globals and the string metatable.
    unsafe fn reachable_c_functions(l: State) -> HashSet<usize> {
        let mut seen = HashSet::new();
        let mut found = HashSet::new();
        for root in [ffi::LUA_REGISTRYINDEX, ffi::LUA_GLOBALSINDEX] {
            ffi::lua_pushvalue(l, root);
            walk(l, &mut seen, &mut found);
            ffi::lua_pop(l, 1);
        }
        ffi::lua_pushstring(l, c"".as_ptr());
        if ffi::lua_getmetatable(l, -1) != 0 {
            walk(l, &mut seen, &mut found);
            ffi::lua_pop(l, 1);
        }
        ffi::lua_pop(l, 1);
        found
    }

    /// No function that can load a chunk without the text-only reader is
    /// reachable in the EVAL VM or in the FUNCTION VM (issue 10 #1).
    #[test]
    fn no_lua_loader_is_reachable() {
        let forbidden = lua_loaders();
        assert!(forbidden.len() > 20, "{}", forbidden.len());
        let vm = super::super::vm::Vm::new();
        let mut functions = super::super::function::Functions::default();
        for l in [vm.l, functions.state()] {
            // SAFETY: the VMs are ours and idle; the walk leaves the stack balanced.
            let met = unsafe {
                let top = ffi::lua_gettop(l);
                let met = reachable_c_functions(l);
                assert_eq!(ffi::lua_gettop(l), top);
                met
            };
            // The walk does see C functions (the safe loaders among them).
            assert!(met.contains(&(safe_load as *const () as usize)));
            assert!(met.contains(&(safe_loadstring as *const () as usize)));
            let bad: Vec<_> = met.intersection(&forbidden).collect();
            assert!(bad.is_empty(), "Lua's own loaders are reachable: {bad:?}");
        }
    }

    /// Bytecode fed through any entry point is a syntax error, as in Redis.
    #[test]
    fn binary_chunks_are_refused_by_every_entry_point() {
        let mut vm = super::super::vm::Vm::new();
        let e = vm.compile(b"\x1bLuaQ\x00", "@user_script").unwrap_err();
        assert!(e.contains("unexpected symbol near 'char(27)'"), "{e}");
        let r = vm
            .compile(
                b"local s = string.dump(function() return 1 end) \
                  local d local f, e1 = load(function() if d then return end d = 1 return s end) \
                  local g, e2 = loadstring(s) \
                  return tostring(f) .. tostring(g) .. e1 .. e2",
                "@user_script",
            )
            .unwrap();
        // SAFETY: the VM is ours; the stack is restored.
        let out = unsafe {
            let l = vm.l;
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, r as _);
            assert_eq!(ffi::lua_pcall(l, 0, 1, 0), 0);
            let s = super::super::vm::err_string(l);
            ffi::lua_pop(l, 1);
            s
        };
        assert_eq!(
            out,
            "nilnil(load):1: unexpected symbol near 'char(27)'\
             [string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'"
        );
    }
}
