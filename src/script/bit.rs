//! LuaBitOp 1.0 (`bit.*`): 32-bit operations on Lua numbers, as Redis bundles it.

use std::ffi::c_int;

use super::lua::{self, ffi, push_bytes, State};

pub unsafe fn open(l: State) {
    ffi::lua_createtable(l, 0, 12);
    lua::set_funcs(
        l,
        &[
            ("tobit", tobit),
            ("bnot", bnot),
            ("band", band),
            ("bor", bor),
            ("bxor", bxor),
            ("lshift", lshift),
            ("rshift", rshift),
            ("arshift", arshift),
            ("rol", rol),
            ("ror", ror),
            ("bswap", bswap),
            ("tohex", tohex),
        ],
    );
    ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, c"bit".as_ptr());
}

/// The argument as 32 bits: the number rounded and taken modulo 2^32 (the
/// `+ 2^52 + 2^51` trick LuaBitOp uses).
unsafe fn barg(l: State, idx: c_int) -> u32 {
    let n = ffi::lua_tonumber(l, idx) + 6_755_399_441_055_744.0;
    let b = n.to_bits() as u32;
    if b == 0 && ffi::lua_isnumber(l, idx) == 0 {
        ffi::luaL_typerror(l, idx, c"number".as_ptr());
    }
    b
}

unsafe fn ret(l: State, b: u32) -> c_int {
    ffi::lua_pushnumber(l, b as i32 as f64);
    1
}

unsafe extern "C-unwind" fn tobit(l: State) -> c_int {
    ret(l, barg(l, 1))
}

unsafe extern "C-unwind" fn bnot(l: State) -> c_int {
    ret(l, !barg(l, 1))
}

unsafe fn fold(l: State, f: fn(u32, u32) -> u32) -> c_int {
    let mut b = barg(l, 1);
    let mut i = ffi::lua_gettop(l);
    while i > 1 {
        b = f(b, barg(l, i));
        i -= 1;
    }
    ret(l, b)
}

unsafe extern "C-unwind" fn band(l: State) -> c_int {
    fold(l, |a, b| a & b)
}

unsafe extern "C-unwind" fn bor(l: State) -> c_int {
    fold(l, |a, b| a | b)
}

unsafe extern "C-unwind" fn bxor(l: State) -> c_int {
    fold(l, |a, b| a ^ b)
}

unsafe fn shift(l: State, f: fn(u32, u32) -> u32) -> c_int {
    let b = barg(l, 1);
    let n = barg(l, 2) & 31;
    ret(l, f(b, n))
}

unsafe extern "C-unwind" fn lshift(l: State) -> c_int {
    shift(l, |b, n| b << n)
}

unsafe extern "C-unwind" fn rshift(l: State) -> c_int {
    shift(l, |b, n| b >> n)
}

unsafe extern "C-unwind" fn arshift(l: State) -> c_int {
    shift(l, |b, n| ((b as i32) >> n) as u32)
}

unsafe extern "C-unwind" fn rol(l: State) -> c_int {
    shift(l, |b, n| b.rotate_left(n))
}

unsafe extern "C-unwind" fn ror(l: State) -> c_int {
    shift(l, |b, n| b.rotate_right(n))
}

unsafe extern "C-unwind" fn bswap(l: State) -> c_int {
    ret(l, barg(l, 1).swap_bytes())
}

unsafe extern "C-unwind" fn tohex(l: State) -> c_int {
    let mut b = barg(l, 1);
    let mut n: i32 = if ffi::lua_type(l, 2) == ffi::LUA_TNONE {
        8
    } else {
        barg(l, 2) as i32
    };
    let digits: &[u8; 16] = if n < 0 {
        n = n.wrapping_neg();
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let n = (n as u32).min(8) as usize;
    let mut buf = [0u8; 8];
    for i in (0..n).rev() {
        buf[i] = digits[(b & 15) as usize];
        b >>= 4;
    }
    push_bytes(l, &buf[..n]);
    1
}
