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

/// lua-cmsgpack's `table_is_an_array`: keys are exactly 1..n.
unsafe fn is_array(l: State) -> bool {
    let top = ffi::lua_gettop(l);
    let (mut count, mut max) = (0i64, 0i64);
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_pop(l, 1);
        let n = ffi::lua_tonumber(l, -1);
        if ffi::lua_type(l, -1) != ffi::LUA_TNUMBER || n <= 0.0 || (n as i32) as f64 != n {
            ffi::lua_settop(l, top);
            return false;
        }
        max = max.max(n as i64);
        count += 1;
    }
    ffi::lua_settop(l, top);
    max == count
}

/// Encodes the value on top of the stack.
unsafe fn encode(l: State, out: &mut Vec<u8>, level: usize) {
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
            ffi::luaL_checkstack(l, 3, std::ptr::null());
            if is_array(l) {
                let len = ffi::lua_objlen(l, -1);
                header(out, len, 0x90, 0xdc, 0xdd);
                for j in 1..=len {
                    ffi::lua_rawgeti_(l, -1, j as _);
                    encode(l, out, level + 1);
                    ffi::lua_pop(l, 1);
                }
            } else {
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
                    encode(l, out, level + 1);
                    ffi::lua_pop(l, 1);
                    encode(l, out, level + 1);
                    ffi::lua_pop(l, 1);
                }
            }
        }
        _ => out.push(0xc0),
    }
}

unsafe extern "C-unwind" fn pack(l: State) -> c_int {
    let n = ffi::lua_gettop(l);
    if n == 0 {
        return ffi::luaL_argerror(l, 0, c"MessagePack pack needs input.".as_ptr());
    }
    ffi::luaL_checkstack(l, n + 4, std::ptr::null());
    let mut out = Vec::new();
    for i in 1..=n {
        ffi::lua_pushvalue(l, i);
        encode(l, &mut out, 0);
        ffi::lua_pop(l, 1);
    }
    push_bytes(l, &out);
    1
}

// ---------------------------------------------------------------- unpack

enum V {
    Nil,
    Bool(bool),
    Num(f64),
    Str(usize, usize),
    Arr(Vec<V>),
    Map(Vec<(V, V)>),
}

enum DErr {
    Eof,
    BadFmt,
}

struct Cur<'a> {
    s: &'a [u8],
    p: usize,
}

impl Cur<'_> {
    fn need(&self, n: usize) -> Result<(), DErr> {
        if self.s.len() - self.p < n {
            Err(DErr::Eof)
        } else {
            Ok(())
        }
    }

    fn take(&mut self, n: usize) -> Result<&[u8], DErr> {
        self.need(n)?;
        let b = &self.s[self.p..self.p + n];
        self.p += n;
        Ok(b)
    }

    fn be(&mut self, n: usize) -> Result<u64, DErr> {
        Ok(self.take(n)?.iter().fold(0u64, |a, &b| (a << 8) | b as u64))
    }

    fn str(&mut self, len: usize) -> Result<V, DErr> {
        self.need(len)?;
        let v = V::Str(self.p, len);
        self.p += len;
        Ok(v)
    }

    fn arr(&mut self, n: usize) -> Result<V, DErr> {
        let mut items = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            items.push(self.value()?);
        }
        Ok(V::Arr(items))
    }

    fn map(&mut self, n: usize) -> Result<V, DErr> {
        let mut items = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let k = self.value()?;
            let v = self.value()?;
            items.push((k, v));
        }
        Ok(V::Map(items))
    }

    fn value(&mut self) -> Result<V, DErr> {
        let b = self.take(1)?[0];
        Ok(match b {
            0x00..=0x7f => V::Num(b as f64),
            0x80..=0x8f => self.map((b & 0x0f) as usize)?,
            0x90..=0x9f => self.arr((b & 0x0f) as usize)?,
            0xa0..=0xbf => self.str((b & 0x1f) as usize)?,
            0xc0 => V::Nil,
            0xc2 => V::Bool(false),
            0xc3 => V::Bool(true),
            0xc4 | 0xd9 => {
                let n = self.be(1)? as usize;
                self.str(n)?
            }
            0xc5 | 0xda => {
                let n = self.be(2)? as usize;
                self.str(n)?
            }
            0xc6 | 0xdb => {
                let n = self.be(4)? as usize;
                self.str(n)?
            }
            0xca => V::Num(f32::from_bits(self.be(4)? as u32) as f64),
            0xcb => V::Num(f64::from_bits(self.be(8)?)),
            0xcc => V::Num(self.be(1)? as f64),
            0xcd => V::Num(self.be(2)? as f64),
            0xce => V::Num(self.be(4)? as f64),
            0xcf => V::Num(self.be(8)? as f64),
            0xd0 => V::Num(self.be(1)? as u8 as i8 as f64),
            0xd1 => V::Num(self.be(2)? as u16 as i16 as f64),
            0xd2 => V::Num(self.be(4)? as u32 as i32 as f64),
            0xd3 => V::Num(self.be(8)? as i64 as f64),
            0xdc => {
                let n = self.be(2)? as usize;
                self.arr(n)?
            }
            0xdd => {
                let n = self.be(4)? as usize;
                self.arr(n)?
            }
            0xde => {
                let n = self.be(2)? as usize;
                self.map(n)?
            }
            0xdf => {
                let n = self.be(4)? as usize;
                self.map(n)?
            }
            0xe0..=0xff => V::Num(b as i8 as f64),
            _ => return Err(DErr::BadFmt),
        })
    }
}

unsafe fn push_v(l: State, data: &[u8], v: &V) {
    match v {
        V::Nil => ffi::lua_pushnil(l),
        V::Bool(b) => ffi::lua_pushboolean(l, *b as c_int),
        V::Num(n) => ffi::lua_pushnumber(l, *n),
        V::Str(p, n) => push_bytes(l, &data[*p..*p + *n]),
        V::Arr(items) => {
            ffi::luaL_checkstack(l, 3, std::ptr::null());
            ffi::lua_createtable(l, items.len() as c_int, 0);
            for (i, it) in items.iter().enumerate() {
                push_v(l, data, it);
                ffi::lua_rawseti_(l, -2, (i + 1) as _);
            }
        }
        V::Map(items) => {
            ffi::luaL_checkstack(l, 3, std::ptr::null());
            ffi::lua_createtable(l, 0, items.len() as c_int);
            for (k, val) in items {
                push_v(l, data, k);
                push_v(l, data, val);
                if ffi::lua_type(l, -2) == ffi::LUA_TNIL {
                    ffi::lua_pop(l, 2);
                } else {
                    ffi::lua_rawset(l, -3);
                }
            }
        }
    }
}

/// lua-cmsgpack's `mp_unpack_full`: the string is argument 1.
unsafe fn unpack_full(l: State, limit: i64, offset: i64) -> c_int {
    ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
    let data = to_bytes(l, 1).unwrap_or_default();
    let len = data.len() as i64;
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        return lua::raise_msg(
            l,
            &format!("Invalid request to unpack with offset of {offset} and limit of {len}."),
        );
    } else if offset > len {
        return lua::raise_msg(
            l,
            &format!("Start offset {offset} greater than input length {len}."),
        );
    }
    let limit = if decode_all { i64::MAX } else { limit };
    let mut cur = Cur {
        s: data,
        p: offset as usize,
    };
    let mut vals = Vec::new();
    let mut err = None;
    while cur.p < data.len() && (vals.len() as i64) < limit {
        match cur.value() {
            Ok(v) => vals.push(v),
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    if let Some(e) = err {
        drop(vals);
        return lua::raise_msg(
            l,
            match e {
                DErr::Eof => "Missing bytes in input.",
                DErr::BadFmt => "Bad data format in input.",
            },
        );
    }
    let left = data.len() - cur.p;
    if ffi::lua_checkstack(l, vals.len() as c_int + 2) == 0 {
        drop(vals);
        return lua::raise_msg(l, "too many items to unpack");
    }
    let mut n = vals.len() as c_int;
    if !decode_all {
        ffi::lua_pushnumber(l, if left == 0 { -1.0 } else { cur.p as f64 });
        n += 1;
    }
    for v in &vals {
        push_v(l, data, v);
    }
    drop(vals);
    n
}

unsafe extern "C-unwind" fn unpack(l: State) -> c_int {
    unpack_full(l, 0, 0)
}

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
