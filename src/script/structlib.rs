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
                let mut v: u64 = if n < 0.0 {
                    super::lua::num_to_i64(n) as u64
                } else if n >= 18_446_744_073_709_551_616.0 || n.is_nan() {
                    1u64 << 63
                } else {
                    n as u64
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

/// Decoded values of `unpack`, pushed once decoding succeeded.
enum Out {
    Num(f64),
    Str(usize, usize),
}

unsafe fn unpack_inner(l: State, res: &mut Vec<Out>) -> Result<usize, SErr> {
    let fmt = check_string(l, 1)?;
    let data = check_string(l, 2)?;
    let ld = data.len();
    let start = if ffi::lua_type(l, 3) <= ffi::LUA_TNIL {
        1
    } else {
        check_number(l, 3)? as i64
    };
    let mut pos = (start - 1) as usize;
    if start < 1 || pos > ld {
        return Err(SErr::Arg(3, "offset must be 1 or greater".into()));
    }
    let mut f = Fmt { s: fmt, i: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    while f.i < f.s.len() {
        let opt = f.s[f.i];
        f.i += 1;
        if opt == 0 {
            break;
        }
        let mut size = f.optsize(opt)?;
        pos += toalign(pos, &h, opt, size);
        if !(size <= ld && pos <= ld - size) {
            return Err(SErr::Arg(2, "data string too short".into()));
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let bytes = &data[pos..pos + size];
                let mut v: u64 = 0;
                if h.little {
                    for &b in bytes.iter().rev() {
                        v = (v << 8) | b as u64;
                    }
                } else {
                    for &b in bytes {
                        v = (v << 8) | b as u64;
                    }
                }
                let n = if opt.is_ascii_lowercase() && size > 0 {
                    let bits = (size * 8).min(64);
                    let mask = if size * 8 > 64 {
                        0
                    } else {
                        u64::MAX << (size * 8 - 1)
                    };
                    if bits < 64 && v & mask != 0 {
                        v |= mask;
                    }
                    v as i64 as f64
                } else {
                    v as f64
                };
                res.push(Out::Num(n));
            }
            b'x' => {}
            b'f' => {
                let mut b = [0u8; 4];
                b.copy_from_slice(&data[pos..pos + 4]);
                let v = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                res.push(Out::Num(v as f64));
            }
            b'd' => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[pos..pos + 8]);
                let v = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                res.push(Out::Num(v));
            }
            b'c' => {
                if size == 0 {
                    match res.pop() {
                        Some(Out::Num(n)) => size = n as usize,
                        _ => return Err(SErr::Msg("format 'c0' needs a previous size".into())),
                    }
                    if !(size <= ld && pos <= ld - size) {
                        return Err(SErr::Arg(2, "data string too short".into()));
                    }
                }
                res.push(Out::Str(pos, size));
            }
            b's' => {
                let Some(e) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(SErr::Msg("unfinished string in data".into()));
                };
                size = e + 1;
                res.push(Out::Str(pos, e));
            }
            _ => f.control(opt, &mut h)?,
        }
        pos += size;
    }
    Ok(pos + 1)
}

unsafe extern "C-unwind" fn unpack(l: State) -> c_int {
    let mut res = Vec::new();
    match unpack_inner(l, &mut res) {
        Ok(next) => {
            let data = to_bytes(l, 2).unwrap_or_default();
            if ffi::lua_checkstack(l, res.len() as c_int + 2) == 0 {
                drop(res);
                return raise(l, SErr::Msg("too many results".into()));
            }
            let n = res.len() as c_int;
            for o in &res {
                match *o {
                    Out::Num(v) => ffi::lua_pushnumber(l, v),
                    Out::Str(p, len) => push_bytes(l, &data[p..p + len]),
                }
            }
            drop(res);
            ffi::lua_pushnumber(l, next as f64);
            n + 1
        }
        Err(e) => {
            drop(res);
            raise(l, e)
        }
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
            return Err(SErr::Arg(1, "options 's' has no fixed size".into()));
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
