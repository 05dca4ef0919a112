//! `struct` (Roberto Ierusalimschy's struct library, as Redis bundles it):
//! `pack`, `unpack` and `size` of binary records.

use std::ffi::c_int;

use super::lua::{self, ffi, push_bytes, to_bytes, State};

pub unsafe fn open(l: State) {
    ffi::lua_createtable(l, 0, 3);
    lua::set_funcs(l, &[("pack", pack), ("unpack", unpack), ("size", size)]);
    ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, c"struct".as_ptr());
}

const MAXINTSIZE: usize = 32;
const MAXALIGN: usize = 8;

/// An error to raise once the Rust frame holds nothing that needs dropping.
enum SErr {
    /// `luaL_argerror(idx, msg)`
    Arg(c_int, String),
    /// `luaL_typerror(idx, tname)`
    Type(c_int, &'static std::ffi::CStr),
    /// `luaL_error(msg)`
    Msg(String),
}

unsafe fn raise(l: State, e: SErr) -> c_int {
    if !matches!(e, SErr::Type(..)) {
        // Values unpacked so far go: the message needs room on a full
        // stack (a type error names an argument, and comes before any push).
        ffi::lua_settop(l, 0);
    }
    match e {
        SErr::Arg(idx, msg) => {
            lua::push_str(l, &msg);
            drop(msg);
            let p = ffi::lua_tolstring(l, -1, std::ptr::null_mut());
            ffi::luaL_argerror(l, idx, p)
        }
        SErr::Type(idx, t) => ffi::luaL_typerror(l, idx, t.as_ptr()),
        SErr::Msg(msg) => {
            ffi::luaL_where(l, 1);
            lua::push_str(l, &msg);
            drop(msg);
            ffi::lua_concat(l, 2);
            lua::raise(l)
        }
    }
}

struct Header {
    little: bool,
    align: usize,
}

struct Fmt<'a> {
    s: &'a [u8],
    i: usize,
}

impl Fmt<'_> {
    fn getnum(&mut self, df: usize) -> Result<usize, SErr> {
        if !self.s.get(self.i).is_some_and(|c| c.is_ascii_digit()) {
            return Ok(df);
        }
        let mut a: usize = 0;
        while let Some(&c) = self.s.get(self.i).filter(|c| c.is_ascii_digit()) {
            let d = (c - b'0') as usize;
            if a > (i32::MAX as usize) / 10 || a * 10 > i32::MAX as usize - d {
                return Err(SErr::Msg("integral size overflow".into()));
            }
            a = a * 10 + d;
            self.i += 1;
        }
        Ok(a)
    }

    fn optsize(&mut self, opt: u8) -> Result<usize, SErr> {
        Ok(match opt {
            b'B' | b'b' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' => 8,
            b'f' => 4,
            b'd' => 8,
            b'x' => 1,
            b'c' => self.getnum(1)?,
            b'i' | b'I' => {
                let sz = self.getnum(4)?;
                if sz > MAXINTSIZE {
                    return Err(SErr::Msg(format!(
                        "integral size {sz} is larger than limit of {MAXINTSIZE}"
                    )));
                }
                sz
            }
            _ => 0,
        })
    }

    fn control(&mut self, opt: u8, h: &mut Header) -> Result<(), SErr> {
        match opt {
            b' ' => {}
            b'>' => h.little = false,
            b'<' => h.little = true,
            b'!' => {
                let a = self.getnum(MAXALIGN)?;
                if a == 0 || a & (a - 1) != 0 {
                    return Err(SErr::Msg(format!("alignment {a} is not a power of 2")));
                }
                h.align = a;
            }
            _ => {
                return Err(SErr::Arg(
                    1,
                    format!("invalid format option '{}'", opt as char),
                ))
            }
        }
        Ok(())
    }
}

fn toalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    if size == 0 {
        return 0;
    }
    (size - (len & (size - 1))) & (size - 1)
}

unsafe fn check_number(l: State, arg: c_int) -> Result<f64, SErr> {
    if ffi::lua_isnumber(l, arg) == 0 {
        return Err(SErr::Type(arg, c"number"));
    }
    Ok(ffi::lua_tonumber(l, arg))
}

unsafe fn check_string<'a>(l: State, arg: c_int) -> Result<&'a [u8], SErr> {
    if ffi::lua_isstring(l, arg) == 0 {
        return Err(SErr::Type(arg, c"string"));
    }
    Ok(to_bytes(l, arg).unwrap_or_default())
}

unsafe fn pack_inner(l: State, out: &mut Vec<u8>) -> Result<(), SErr> {
    let fmt = check_string(l, 1)?;
    let mut f = Fmt { s: fmt, i: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    let mut arg = 2;
    while f.i < f.s.len() {
        let opt = f.s[f.i];
        f.i += 1;
        if opt == 0 {
            break;
        }
        let mut size = f.optsize(opt)?;
        let pad = toalign(out.len(), &h, opt, size);
        out.extend(std::iter::repeat_n(0u8, pad));
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(l, arg)?;
                arg += 1;
                // putinteger: negatives through a signed cast.
                let mut v: u64 = if n < 0.0 {
                    super::lua::num_to_i64(n) as u64
                } else {
                    c_double_to_u64(n)
                };
                let mut buf = [0u8; MAXINTSIZE];
                if h.little {
                    for b in buf.iter_mut().take(size) {
                        *b = (v & 0xff) as u8;
                        v >>= 8;
                    }
                } else {
                    for i in (0..size).rev() {
                        buf[i] = (v & 0xff) as u8;
                        v >>= 8;
                    }
                }
                out.extend_from_slice(&buf[..size]);
            }
            b'x' => out.push(0),
            b'f' => {
                let v = check_number(l, arg)? as f32;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    v.to_le_bytes()
                } else {
                    v.to_be_bytes()
                });
            }
            b'd' => {
                let v = check_number(l, arg)?;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    v.to_le_bytes()
                } else {
                    v.to_be_bytes()
                });
            }
            b'c' | b's' => {
                let s = check_string(l, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(SErr::Arg(arg, "string too short".into()));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => f.control(opt, &mut h)?,
        }
    }
    Ok(())
}

unsafe extern "C-unwind" fn pack(l: State) -> c_int {
    // The C library pushes a nil here (its buffer marker), so a missing
    // argument reads as nil rather than "no value".
    ffi::lua_pushnil(l);
    let mut out = Vec::new();
    match pack_inner(l, &mut out) {
        Ok(()) => {
            push_bytes(l, &out);
            1
        }
        Err(e) => {
            drop(out);
            raise(l, e)
        }
    }
}

/// Lua 5.1's `luaL_checkinteger`/`luaL_optinteger` (default 1) at `arg`:
/// the number truncated as C's `(ptrdiff_t)` cast does.
unsafe fn opt_integer(l: State, arg: c_int) -> Result<i64, SErr> {
    if ffi::lua_type(l, arg) <= ffi::LUA_TNIL {
        return Ok(1);
    }
    check_number(l, arg).map(super::lua::num_to_i64)
}

/// C's `(size_t)` / `(unsigned long long)` cast of a double as x86-64 code
/// does it: below 2^63 (and NaN) a signed truncation, reinterpreted; from
/// 2^63 on, the truncation of `d - 2^63` with the top bit flipped (so 2^64
/// and beyond wrap to 0).
fn c_double_to_u64(d: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    if d >= TWO63 {
        (super::lua::num_to_i64(d - TWO63) as u64) ^ (1 << 63)
    } else {
        super::lua::num_to_i64(d) as u64
    }
}

/// Reads one integer of `bytes.len()` bytes as `getinteger` does: only the
/// last 64 bits survive the shifts, and the sign mask is shifted by
/// `size * 8 - 1` modulo 64, as the x86-64 shift instruction takes it.
fn get_integer(bytes: &[u8], little: bool, signed: bool) -> f64 {
    let mut v: u64 = 0;
    let mut add = |b: u8| v = (v << 8) | b as u64;
    if little {
        bytes.iter().rev().for_each(|&b| add(b));
    } else {
        bytes.iter().for_each(|&b| add(b));
    }
    if !signed {
        return v as f64;
    }
    let shift = (bytes.len() as u32).wrapping_mul(8).wrapping_sub(1) & 63;
    let mask = u64::MAX << shift;
    if v & mask != 0 {
        v |= mask;
    }
    v as i64 as f64
}

/// `struct.unpack(fmt, data [, pos])`, pushing each value as it is read
/// (a `c0` takes its size from the value just pushed, as in C). Only
/// borrowed data and plain numbers live in this frame, so a Lua error
/// raised by a push skips nothing that needs dropping.
unsafe fn unpack_inner(l: State) -> Result<c_int, SErr> {
    let fmt = check_string(l, 1)?;
    let data = check_string(l, 2)?;
    let ld = data.len();
    // A size_t: a negative offset wraps to a huge one, which then fails as
    // "data string too short", as in Redis.
    let mut pos = opt_integer(l, 3)? as u64 as usize;
    if pos == 0 {
        return Err(SErr::Arg(3, "offset must be 1 or greater".into()));
    }
    pos -= 1;
    let mut n: c_int = 0;
    let mut f = Fmt { s: fmt, i: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    let too_short = || SErr::Arg(2, "data string too short".into());
    while f.i < f.s.len() {
        let opt = f.s[f.i];
        f.i += 1;
        if opt == 0 {
            break;
        }
        let mut size = f.optsize(opt)?;
        pos = pos.wrapping_add(toalign(pos, &h, opt, size));
        if !(size <= ld && pos <= ld - size) {
            return Err(too_short());
        }
        lua::check_stack(l, 2, c"too many results");
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let v = get_integer(&data[pos..pos + size], h.little, opt.is_ascii_lowercase());
                ffi::lua_pushnumber(l, v);
                n += 1;
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().unwrap_or_default();
                let v = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                ffi::lua_pushnumber(l, v as f64);
                n += 1;
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().unwrap_or_default();
                let v = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                ffi::lua_pushnumber(l, v);
                n += 1;
            }
            b'c' => {
                if size == 0 {
                    // The previous value, a number or a numeric string.
                    if n == 0 || ffi::lua_isnumber(l, -1) == 0 {
                        return Err(SErr::Msg("format 'c0' needs a previous size".into()));
                    }
                    size = c_double_to_u64(ffi::lua_tonumber(l, -1)) as usize;
                    ffi::lua_pop(l, 1);
                    n -= 1;
                    if !(size <= ld && pos <= ld - size) {
                        return Err(too_short());
                    }
                }
                push_bytes(l, &data[pos..pos + size]);
                n += 1;
            }
            b's' => {
                let Some(e) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(SErr::Msg("unfinished string in data".into()));
                };
                size = e + 1;
                push_bytes(l, &data[pos..pos + e]);
                n += 1;
            }
            _ => f.control(opt, &mut h)?,
        }
        pos += size;
    }
    // lua_pushinteger of a size_t: through ptrdiff_t.
    ffi::lua_pushnumber(l, pos.wrapping_add(1) as i64 as f64);
    Ok(n + 1)
}

unsafe extern "C-unwind" fn unpack(l: State) -> c_int {
    match unpack_inner(l) {
        Ok(n) => n,
        Err(e) => raise(l, e),
    }
}

unsafe fn size_inner(l: State) -> Result<usize, SErr> {
    let fmt = check_string(l, 1)?;
    let mut f = Fmt { s: fmt, i: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    let mut pos = 0;
    while f.i < f.s.len() {
        let opt = f.s[f.i];
        f.i += 1;
        if opt == 0 {
            break;
        }
        let size = f.optsize(opt)?;
        pos += toalign(pos, &h, opt, size);
        if opt == b's' {
            return Err(SErr::Arg(1, "option 's' has no fixed size".into()));
        } else if opt == b'c' && size == 0 {
            return Err(SErr::Arg(1, "option 'c0' has no fixed size".into()));
        }
        if !opt.is_ascii_alphanumeric() {
            f.control(opt, &mut h)?;
        }
        pos += size;
    }
    Ok(pos)
}

unsafe extern "C-unwind" fn size(l: State) -> c_int {
    match size_inner(l) {
        Ok(n) => {
            ffi::lua_pushnumber(l, n as f64);
            1
        }
        Err(e) => raise(l, e),
    }
}
