//! `cmsgpack` (lua-cmsgpack 0.4.0, as Redis bundles it): MessagePack
//! `pack`, `unpack`, `unpack_one` and `unpack_limit`.

use std::ffi::c_int;

use super::lua::{self, ffi, push_bytes, push_str, to_bytes, State};

/// Tables nested deeper than this are packed as nil.
const MAX_NESTING: usize = 16;

pub unsafe fn open(l: State) {
    ffi::lua_createtable(l, 0, 8);
    lua::set_funcs(
        l,
        &[
            ("pack", pack),
            ("unpack", unpack),
            ("unpack_one", unpack_one),
            ("unpack_limit", unpack_limit),
        ],
    );
    for (k, v) in [
        ("_NAME", "lua-cmsgpack"),
        ("_VERSION", "lua-cmsgpack 0.4.0"),
        ("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo"),
        ("_DESCRIPTION", "MessagePack C implementation for Lua"),
    ] {
        push_str(l, v);
        lua::set_field(l, -2, k);
    }
    ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, c"cmsgpack".as_ptr());
}

// ---------------------------------------------------------------- pack

fn encode_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_number(out: &mut Vec<u8>, n: f64) {
    if !n.is_infinite() && (n as i64) as f64 == n {
        encode_int(out, n as i64);
    } else {
        let f = n as f32;
        if f as f64 == n {
            out.push(0xca);
            out.extend_from_slice(&f.to_be_bytes());
        } else {
            out.push(0xcb);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

fn encode_bytes(out: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

fn header(out: &mut Vec<u8>, n: usize, fix: u8, b16: u8, b32: u8) {
    if n < 16 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(b16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(b32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// Why encoding stopped: the `luaL_checkstack` message lua-cmsgpack gives.
type Overflow = &'static std::ffi::CStr;

/// Room for `n` more slots, or the overflow `msg`. Our stack heights are
/// lua-cmsgpack's, so this fails exactly where its `luaL_checkstack` does.
unsafe fn room(l: State, n: c_int, msg: Overflow) -> Result<(), Overflow> {
    if ffi::lua_checkstack(l, n) == 0 {
        Err(msg)
    } else {
        Ok(())
    }
}

/// lua-cmsgpack's `table_is_an_array`: keys are exactly 1..n. The C code
/// iterates in the stack's slack without asking for room; we must ask, so
/// a table exactly at the stack limit fails here (as a map would next).
unsafe fn is_array(l: State) -> Result<bool, Overflow> {
    room(l, 2, c"in function mp_encode_lua_table_as_map")?;
    let top = ffi::lua_gettop(l);
    let (mut count, mut max) = (0i64, 0i64);
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_pop(l, 1);
        let n = ffi::lua_tonumber(l, -1);
        if ffi::lua_type(l, -1) != ffi::LUA_TNUMBER || n <= 0.0 || (n as i32) as f64 != n {
            ffi::lua_settop(l, top);
            return Ok(false);
        }
        max = max.max(n as i64);
        count += 1;
    }
    ffi::lua_settop(l, top);
    Ok(max == count)
}

/// Encodes the value on top of the stack.
unsafe fn encode(l: State, out: &mut Vec<u8>, level: usize) -> Result<(), Overflow> {
    let mut t = ffi::lua_type(l, -1);
    if t == ffi::LUA_TTABLE && level == MAX_NESTING {
        t = ffi::LUA_TNIL;
    }
    match t {
        ffi::LUA_TSTRING => encode_bytes(out, to_bytes(l, -1).unwrap_or_default()),
        ffi::LUA_TBOOLEAN => out.push(if ffi::lua_toboolean(l, -1) != 0 {
            0xc3
        } else {
            0xc2
        }),
        ffi::LUA_TNUMBER => encode_number(out, ffi::lua_tonumber(l, -1)),
        ffi::LUA_TTABLE => {
            if is_array(l)? {
                let len = ffi::lua_objlen(l, -1);
                header(out, len, 0x90, 0xdc, 0xdd);
                room(l, 1, c"in function mp_encode_lua_table_as_array")?;
                for j in 1..=len {
                    ffi::lua_rawgeti_(l, -1, j as _);
                    encode(l, out, level + 1)?;
                    ffi::lua_pop(l, 1);
                }
            } else {
                room(l, 3, c"in function mp_encode_lua_table_as_map")?;
                let mut n = 0;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_pop(l, 1);
                    n += 1;
                }
                header(out, n, 0x80, 0xde, 0xdf);
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_pushvalue(l, -2);
                    encode(l, out, level + 1)?;
                    ffi::lua_pop(l, 1);
                    encode(l, out, level + 1)?;
                    ffi::lua_pop(l, 1);
                }
            }
        }
        _ => out.push(0xc0),
    }
    Ok(())
}

/// `cmsgpack.pack(...)`: each argument packed and pushed, then all
/// concatenated, as lua-cmsgpack does (so its stack limits are ours).
unsafe extern "C-unwind" fn pack(l: State) -> c_int {
    let n = ffi::lua_gettop(l);
    if n == 0 {
        return ffi::luaL_argerror(l, 0, c"MessagePack pack needs input.".as_ptr());
    }
    if ffi::lua_checkstack(l, n) == 0 {
        return ffi::luaL_argerror(l, 0, c"Too many arguments for MessagePack pack.".as_ptr());
    }
    let mut out = Vec::new();
    for i in 1..=n {
        let r = room(l, 1, c"in function mp_check").and_then(|()| {
            ffi::lua_pushvalue(l, i);
            encode(l, &mut out, 0)
        });
        if let Err(msg) = r {
            drop(out);
            return lua::stack_overflow(l, msg);
        }
        ffi::lua_pop(l, 1);
        push_bytes(l, &out);
        out.clear();
    }
    drop(out);
    ffi::lua_concat(l, n);
    1
}

// ---------------------------------------------------------------- unpack
//
// A port of `mp_decode_to_lua_type`: values go onto the Lua stack as they
// are read, so the errors come in Redis's order (a nil map key raises
// "table index is nil" from `lua_settable` before a later truncation is
// seen; the stack limit raises Lua's "stack overflow (...)"). The frames
// below hold only borrowed data and numbers: a Lua error raised inside
// them skips nothing that needs dropping.

/// A decoding failure reported by `mp_unpack_full` once decoding stopped.
enum DErr {
    Eof,
    BadFmt,
}

struct Cur<'a> {
    s: &'a [u8],
    p: usize,
}

impl<'a> Cur<'a> {
    fn need(&self, n: usize) -> Result<(), DErr> {
        if self.s.len() - self.p < n {
            Err(DErr::Eof)
        } else {
            Ok(())
        }
    }

    /// Bytes `from..from + n` after the type byte (`need` checked them).
    fn at(&self, from: usize, n: usize) -> &'a [u8] {
        &self.s[self.p + from..self.p + from + n]
    }

    /// The big-endian number of `n` bytes after the type byte.
    fn be(&self, n: usize) -> Result<u64, DErr> {
        self.need(1 + n)?;
        Ok(self.at(1, n).iter().fold(0u64, |a, &b| (a << 8) | b as u64))
    }
}

/// Pushes a string of `len` bytes found `hdr` bytes after the type byte.
unsafe fn push_str_at(l: State, c: &mut Cur<'_>, hdr: usize, len: usize) -> Result<(), DErr> {
    c.need(hdr + len)?;
    push_bytes(l, c.at(hdr, len));
    c.p += hdr + len;
    Ok(())
}

unsafe fn decode_array(l: State, c: &mut Cur<'_>, len: usize) -> Result<(), DErr> {
    ffi::lua_createtable(l, 0, 0);
    lua::check_stack(l, 1, c"in function mp_decode_to_lua_array");
    for i in 1..=len {
        ffi::lua_pushnumber(l, i as f64);
        decode(l, c)?;
        ffi::lua_settable(l, -3);
    }
    Ok(())
}

unsafe fn decode_map(l: State, c: &mut Cur<'_>, len: usize) -> Result<(), DErr> {
    ffi::lua_createtable(l, 0, 0);
    for _ in 0..len {
        decode(l, c)?;
        decode(l, c)?;
        // Raises "table index is nil" (or NaN) as in Redis.
        ffi::lua_settable(l, -3);
    }
    Ok(())
}

/// Decodes one value onto the stack.
unsafe fn decode(l: State, c: &mut Cur<'_>) -> Result<(), DErr> {
    c.need(1)?;
    lua::check_stack(
        l,
        1,
        c"too many return values at once; use unpack_one or unpack_limit instead.",
    );
    let b = c.s[c.p];
    // lua_pushunsigned is lua_pushinteger in Lua 5.1: through a signed 64-bit.
    let int = |l: State, v: i64| ffi::lua_pushnumber(l, v as f64);
    match b {
        // uint 8/16/32/64 (0xcc..0xcf) and int 8/16/32/64 (0xd0..0xd3).
        0xcc..=0xd3 => {
            let w = 1usize << (b & 3);
            let raw = c.be(w)?;
            let shift = 64 - 8 * w as u32;
            let v = if b >= 0xd0 {
                ((raw << shift) as i64) >> shift
            } else {
                raw as i64
            };
            int(l, v);
            c.p += 1 + w;
        }
        0xc0 => {
            ffi::lua_pushnil(l);
            c.p += 1;
        }
        0xc3 | 0xc2 => {
            ffi::lua_pushboolean(l, (b == 0xc3) as c_int);
            c.p += 1;
        }
        0xca => {
            ffi::lua_pushnumber(l, f32::from_bits(c.be(4)? as u32) as f64);
            c.p += 5;
        }
        0xcb => {
            ffi::lua_pushnumber(l, f64::from_bits(c.be(8)?));
            c.p += 9;
        }
        0xd9 => push_str_at(l, c, 2, c.be(1)? as usize)?,
        0xda => push_str_at(l, c, 3, c.be(2)? as usize)?,
        0xdb => push_str_at(l, c, 5, c.be(4)? as usize)?,
        0xdc..=0xdf => {
            let w = if b & 1 == 0 { 2 } else { 4 };
            let n = c.be(w)? as usize;
            c.p += 1 + w;
            if b <= 0xdd {
                decode_array(l, c, n)?;
            } else {
                decode_map(l, c, n)?;
            }
        }
        0x00..=0x7f | 0xe0..=0xff => {
            // Positive and negative fixnums.
            int(l, b as i8 as i64);
            c.p += 1;
        }
        0xa0..=0xbf => push_str_at(l, c, 1, (b & 0x1f) as usize)?,
        0x90..=0x9f => {
            c.p += 1;
            decode_array(l, c, (b & 0x0f) as usize)?;
        }
        0x80..=0x8f => {
            c.p += 1;
            decode_map(l, c, (b & 0x0f) as usize)?;
        }
        // bin, ext and the reserved byte: lua-cmsgpack 0.4.0 knows none.
        _ => return Err(DErr::BadFmt),
    }
    Ok(())
}

/// lua-cmsgpack's `mp_unpack_full`: the string is argument 1.
unsafe fn unpack_full(l: State, limit: i64, offset: i64) -> c_int {
    ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
    let data = to_bytes(l, 1).unwrap_or_default();
    let len = data.len() as i64;
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        // Redis prints the length where it says limit (and both as C ints).
        let msg = format!(
            "Invalid request to unpack with offset of {} and limit of {}.",
            offset as i32, len as i32
        );
        return lua::raise_msg_owned(l, msg);
    } else if offset > len {
        let msg = format!(
            "Start offset {} greater than input length {}.",
            offset as i32, len as i32
        );
        return lua::raise_msg_owned(l, msg);
    }
    let limit = if decode_all {
        i64::from(i32::MAX)
    } else {
        limit
    };
    let mut c = Cur {
        s: data,
        p: offset as usize,
    };
    let mut cnt: c_int = 0;
    while c.p < data.len() && i64::from(cnt) < limit {
        if let Err(e) = decode(l, &mut c) {
            // What was decoded goes: the message needs room on a full stack.
            ffi::lua_settop(l, 0);
            return lua::raise_msg(
                l,
                match e {
                    DErr::Eof => "Missing bytes in input.",
                    DErr::BadFmt => "Bad data format in input.",
                },
            );
        }
        cnt += 1;
    }
    if !decode_all {
        lua::check_stack(l, 1, c"in function mp_unpack_full");
        let left = data.len() - c.p;
        ffi::lua_pushnumber(l, if left == 0 { -1.0 } else { c.p as f64 });
        ffi::lua_insert(l, 2);
        cnt += 1;
    }
    cnt
}

unsafe extern "C-unwind" fn unpack(l: State) -> c_int {
    unpack_full(l, 0, 0)
}

/// `luaL_optinteger(L, idx, 0)`.
unsafe fn opt_int(l: State, idx: c_int) -> i64 {
    if ffi::lua_type(l, idx) <= ffi::LUA_TNIL {
        0
    } else {
        ffi::luaL_checkinteger(l, idx) as i64
    }
}

unsafe extern "C-unwind" fn unpack_one(l: State) -> c_int {
    let offset = opt_int(l, 2);
    ffi::lua_settop(l, 1);
    unpack_full(l, 1, offset)
}

unsafe extern "C-unwind" fn unpack_limit(l: State) -> c_int {
    let limit = ffi::luaL_checkinteger(l, 2) as i64;
    let offset = opt_int(l, 3);
    ffi::lua_settop(l, 1);
    unpack_full(l, limit, offset)
}
