//! Thin helpers over the raw Lua 5.1 C API (`mlua::ffi`) that the engine and
//! its libraries share.
//!
//! Safety rule for every C function in `script/`: Lua reports errors with
//! `longjmp`, which skips Rust destructors. A function that may raise an
//! error builds its result first, drops every owned value, and only then
//! calls [`raise`] (or a Lua API call that can fail) with nothing left to drop.

use std::ffi::{c_char, c_int};

pub use mlua::ffi;
pub use mlua::ffi::lua_State;

pub type State = *mut lua_State;

/// Pushes a byte string.
#[inline]
pub unsafe fn push_bytes(l: State, b: &[u8]) {
    ffi::lua_pushlstring_(l, b.as_ptr() as *const c_char, b.len());
}

/// Pushes a Rust string.
#[inline]
pub unsafe fn push_str(l: State, s: &str) {
    push_bytes(l, s.as_bytes());
}

/// The bytes of the string (or number, converted in place) at `idx`.
/// The slice lives as long as the value stays on the stack.
#[inline]
pub unsafe fn to_bytes<'a>(l: State, idx: c_int) -> Option<&'a [u8]> {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    if p.is_null() {
        None
    } else {
        Some(std::slice::from_raw_parts(p as *const u8, len))
    }
}

/// `t[name] = value on top` for the table at `idx` (raw set).
pub unsafe fn set_field(l: State, idx: c_int, name: &str) {
    let idx = abs_index(l, idx);
    push_str(l, name);
    ffi::lua_insert(l, -2);
    ffi::lua_rawset(l, idx);
}

/// Pushes `t[name]` of the table at `idx` (raw get).
pub unsafe fn get_field(l: State, idx: c_int, name: &str) -> c_int {
    let idx = abs_index(l, idx);
    push_str(l, name);
    ffi::lua_rawget(l, idx);
    ffi::lua_type(l, -1)
}

/// An absolute stack index for a possibly relative one.
#[inline]
pub unsafe fn abs_index(l: State, idx: c_int) -> c_int {
    if idx > 0 || idx <= ffi::LUA_REGISTRYINDEX {
        idx
    } else {
        ffi::lua_gettop(l) + idx + 1
    }
}

/// Registers C functions into the table on top of the stack.
pub unsafe fn set_funcs(l: State, funcs: &[(&str, ffi::lua_CFunction)]) {
    for (name, f) in funcs {
        ffi::lua_pushcclosure(l, *f, 0);
        set_field(l, -2, name);
    }
}

/// Raises the value on top of the stack as a Lua error. Never returns.
#[inline]
pub unsafe fn raise(l: State) -> c_int {
    ffi::lua_error(l)
}

/// Raises `msg` prefixed with the caller's position (`user_script:1: `), as
/// `luaL_error` does. `msg` is copied to the Lua stack before the jump.
pub unsafe fn raise_msg(l: State, msg: &str) -> c_int {
    ffi::luaL_where(l, 1);
    push_str(l, msg);
    ffi::lua_concat(l, 2);
    ffi::lua_error(l)
}

/// [`raise_msg`] for an owned message, dropped before the jump.
pub unsafe fn raise_msg_owned(l: State, msg: String) -> c_int {
    ffi::luaL_where(l, 1);
    push_str(l, &msg);
    drop(msg);
    ffi::lua_concat(l, 2);
    ffi::lua_error(l)
}

/// Lua 5.1's `luaL_checkstack`: raises "stack overflow (msg)" when `n` more
/// slots would take this C function past `LUAI_MAXCSTACK` (mlua's compat
/// version asks for `LUA_MINSTACK` slots more, so it fails 20 slots early).
/// The frame's values are dropped first: the error message needs room
/// (the C library writes it into Lua's slack past the frame's top, which
/// the API checks of a debug build refuse).
pub unsafe fn check_stack(l: State, n: c_int, msg: &std::ffi::CStr) {
    if ffi::lua_checkstack(l, n) == 0 {
        stack_overflow(l, msg);
    }
}

/// Raises "stack overflow (msg)" from a C function whose stack is full.
pub unsafe fn stack_overflow(l: State, msg: &std::ffi::CStr) -> c_int {
    ffi::lua_settop(l, 0);
    ffi::luaL_error(l, c"stack overflow (%s)".as_ptr(), msg.as_ptr())
}

/// Raises `msg` without position information.
pub unsafe fn raise_plain(l: State, msg: &str) -> c_int {
    push_str(l, msg);
    ffi::lua_error(l)
}

/// The Lua number at `idx` as C's `(long long)` cast does on x86-64:
/// out-of-range and NaN give `i64::MIN`.
#[inline]
pub fn num_to_i64(n: f64) -> i64 {
    // 2^63: the first double past i64's range on either side.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if n.is_nan() || !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// Lua's own number-to-string conversion (`%.14g`).
pub fn lua_num_str(n: f64) -> String {
    crate::types::number::fmt_g(n, 14)
}
