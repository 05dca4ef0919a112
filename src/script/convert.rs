//! Conversions between RESP replies and Lua values, following Redis 7.0's
//! `redisProtocolToLuaType` and `luaReplyToRedisReply`.

use std::ffi::c_int;

use super::lua::{self, ffi, num_to_i64, push_bytes, push_str, to_bytes, State};
use super::redis_lib::push_error;
use crate::resp::encode::Reply;
use crate::server::Server;

/// Pushes the reply in `buf` (one complete RESP2/RESP3 reply written by our
/// own encoder) as a Lua value. Returns true when it was an error reply.
pub unsafe fn push_resp(l: State, buf: &[u8]) -> bool {
    let mut pos = 0;
    if buf.is_empty() {
        ffi::lua_pushboolean(l, 0);
        return false;
    }
    let is_err = buf[0] == b'-' || buf[0] == b'!';
    push_at(l, buf, &mut pos);
    is_err
}

fn line<'a>(buf: &'a [u8], pos: &mut usize) -> &'a [u8] {
    let start = *pos;
    let end = buf[start..]
        .windows(2)
        .position(|w| w == b"\r\n")
        .map_or(buf.len(), |r| start + r);
    *pos = (end + 2).min(buf.len());
    &buf[start..end]
}

fn int(b: &[u8]) -> i64 {
    crate::types::number::parse_i64(b).unwrap_or(0)
}

unsafe fn push_at(l: State, buf: &[u8], pos: &mut usize) {
    if *pos >= buf.len() {
        ffi::lua_pushnil(l);
        return;
    }
    let kind = buf[*pos];
    *pos += 1;
    let head = line(buf, pos);
    match kind {
        b'+' => {
            ffi::lua_createtable(l, 0, 1);
            push_str(l, "ok");
            push_bytes(l, head);
            ffi::lua_rawset(l, -3);
        }
        b'-' => {
            let mut v = Vec::with_capacity(head.len() + 1);
            v.push(b'-');
            v.extend_from_slice(head);
            push_error(l, &v);
            drop(v);
            flag_counted(l);
        }
        b':' => ffi::lua_pushnumber(l, int(head) as f64),
        b'$' | b'=' | b'!' => {
            let n = int(head);
            if n < 0 {
                ffi::lua_pushboolean(l, 0);
                return;
            }
            let n = n as usize;
            let body = &buf[*pos..(*pos + n).min(buf.len())];
            *pos = (*pos + n + 2).min(buf.len());
            match kind {
                b'$' => push_bytes(l, body),
                b'!' => {
                    let mut v = Vec::with_capacity(body.len() + 1);
                    v.push(b'-');
                    v.extend_from_slice(body);
                    push_error(l, &v);
                }
                _ => {
                    let (fmt, txt) = if body.len() >= 4 {
                        (&body[..3], &body[4..])
                    } else {
                        (&b"txt"[..], body)
                    };
                    ffi::lua_createtable(l, 0, 1);
                    push_str(l, "verbatim_string");
                    ffi::lua_createtable(l, 0, 2);
                    push_str(l, "format");
                    push_bytes(l, fmt);
                    ffi::lua_rawset(l, -3);
                    push_str(l, "string");
                    push_bytes(l, txt);
                    ffi::lua_rawset(l, -3);
                    ffi::lua_rawset(l, -3);
                }
            }
        }
        b'*' | b'>' => {
            let n = int(head);
            if n < 0 {
                ffi::lua_pushboolean(l, 0);
                return;
            }
            ffi::luaL_checkstack(l, 4, std::ptr::null());
            ffi::lua_createtable(l, n.min(1 << 16) as c_int, 0);
            for i in 1..=n {
                push_at(l, buf, pos);
                ffi::lua_rawseti_(l, -2, i as _);
            }
        }
        b'%' | b'~' => {
            let n = int(head);
            ffi::luaL_checkstack(l, 6, std::ptr::null());
            ffi::lua_createtable(l, 0, 1);
            push_str(l, if kind == b'%' { "map" } else { "set" });
            ffi::lua_createtable(l, 0, n.min(1 << 16) as c_int);
            for _ in 0..n {
                push_at(l, buf, pos);
                if kind == b'%' {
                    push_at(l, buf, pos);
                } else {
                    ffi::lua_pushboolean(l, 1);
                }
                ffi::lua_rawset(l, -3);
            }
            ffi::lua_rawset(l, -3);
        }
        b'|' => {
            // Attributes are skipped; the reply follows them.
            let n = int(head);
            for _ in 0..2 * n {
                push_at(l, buf, pos);
                ffi::lua_pop(l, 1);
            }
            push_at(l, buf, pos);
        }
        b'_' => ffi::lua_pushnil(l),
        b'#' => ffi::lua_pushboolean(l, (head == b"t") as c_int),
        b',' => {
            let d = std::str::from_utf8(head)
                .ok()
                .and_then(|s| match s {
                    "inf" => Some(f64::INFINITY),
                    "-inf" => Some(f64::NEG_INFINITY),
                    _ => s.parse().ok(),
                })
                .unwrap_or(f64::NAN);
            ffi::lua_createtable(l, 0, 1);
            push_str(l, "double");
            ffi::lua_pushnumber(l, d);
            ffi::lua_rawset(l, -3);
        }
        b'(' => {
            ffi::lua_createtable(l, 0, 1);
            push_str(l, "big_number");
            push_bytes(l, head);
            ffi::lua_rawset(l, -3);
        }
        _ => ffi::lua_pushnil(l),
    }
}

/// Bytes with CR and LF turned into spaces (status lines, big numbers).
fn no_crlf(b: &[u8]) -> Vec<u8> {
    b.iter()
        .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
        .collect()
}

/// Writes the Lua value on top of the stack (left there) as a reply for a
/// caller speaking `out.resp`; `script_resp` is the script's `redis.setresp`.
/// The codes of the error replies written (nested ones too) are added to
/// `errors`, for INFO errorstats (None for one counted already).
pub unsafe fn reply_from_lua(
    l: State,
    out: &mut Reply,
    script_resp: u8,
    errors: &mut Vec<Option<String>>,
) {
    if ffi::lua_checkstack(l, 4) == 0 {
        out.error_line(&crate::error::Error::msg("reached lua stack limit").text());
        return;
    }
    match ffi::lua_type(l, -1) {
        ffi::LUA_TSTRING => out.bulk(to_bytes(l, -1).unwrap_or_default()),
        ffi::LUA_TBOOLEAN => {
            let b = ffi::lua_toboolean(l, -1) != 0;
            if script_resp == 2 {
                if b {
                    out.int(1);
                } else {
                    out.null();
                }
            } else {
                out.boolean(b);
            }
        }
        ffi::LUA_TNUMBER => out.int(num_to_i64(ffi::lua_tonumber(l, -1))),
        ffi::LUA_TTABLE => table_reply(l, out, script_resp, errors),
        _ => out.null(),
    }
}

/// Marks the error table on top of the stack as counted already (Redis's
/// `ignore_error_stats_update` field): passed on as the script's reply, it
/// is not counted again.
pub unsafe fn flag_counted(l: State) {
    push_str(l, "ignore_error_stats_update");
    ffi::lua_pushboolean(l, 1);
    ffi::lua_rawset(l, -3);
}

/// The error table at `t` carries `ignore_error_stats_update` (its error
/// was counted when the command the script called failed).
unsafe fn already_counted(l: State, t: c_int) -> bool {
    lua::get_field(l, t, "ignore_error_stats_update");
    let counted = ffi::lua_toboolean(l, -1) != 0;
    ffi::lua_pop(l, 1);
    counted
}

unsafe fn table_reply(
    l: State,
    out: &mut Reply,
    script_resp: u8,
    errors: &mut Vec<Option<String>>,
) {
    let t = ffi::lua_gettop(l);
    if lua::get_field(l, t, "err") == ffi::LUA_TSTRING {
        let e = to_bytes(l, -1).unwrap_or_default();
        let msg = String::from_utf8_lossy(e);
        out.error_line(&msg);
        // Counted under its first word, verbatim ("ERR" when empty),
        // unless it was counted when the command the script called failed.
        let code = msg.split(' ').next().filter(|c| !c.is_empty());
        let counted = already_counted(l, t);
        errors.push((!counted).then(|| code.unwrap_or("ERR").to_string()));
        ffi::lua_pop(l, 1);
        return;
    }
    ffi::lua_pop(l, 1);
    if lua::get_field(l, t, "ok") == ffi::LUA_TSTRING {
        let s = no_crlf(to_bytes(l, -1).unwrap_or_default());
        out.simple_bytes(&s);
        ffi::lua_pop(l, 1);
        return;
    }
    ffi::lua_pop(l, 1);
    if lua::get_field(l, t, "double") == ffi::LUA_TNUMBER {
        out.double(ffi::lua_tonumber(l, -1));
        ffi::lua_pop(l, 1);
        return;
    }
    ffi::lua_pop(l, 1);
    if lua::get_field(l, t, "big_number") == ffi::LUA_TSTRING {
        let s = no_crlf(to_bytes(l, -1).unwrap_or_default());
        if out.resp3() {
            out.raw(b"(");
            out.raw(&s);
            out.raw(b"\r\n");
        } else {
            out.bulk(&s);
        }
        ffi::lua_pop(l, 1);
        return;
    }
    ffi::lua_pop(l, 1);
    if lua::get_field(l, t, "map") == ffi::LUA_TTABLE {
        let m = ffi::lua_gettop(l);
        let d = out.deferred();
        let mut n = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, m) != 0 {
            ffi::lua_pushvalue(l, -2);
            reply_from_lua(l, out, script_resp, errors);
            ffi::lua_pop(l, 1);
            reply_from_lua(l, out, script_resp, errors);
            ffi::lua_pop(l, 1);
            n += 1;
        }
        out.end_map(d, n);
        ffi::lua_pop(l, 1);
        return;
    }
    ffi::lua_pop(l, 1);
    if lua::get_field(l, t, "set") == ffi::LUA_TTABLE {
        let m = ffi::lua_gettop(l);
        let d = out.deferred();
        let mut n = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, m) != 0 {
            ffi::lua_pop(l, 1);
            ffi::lua_pushvalue(l, -1);
            reply_from_lua(l, out, script_resp, errors);
            ffi::lua_pop(l, 1);
            n += 1;
        }
        out.end_set(d, n);
        ffi::lua_pop(l, 1);
        return;
    }
    ffi::lua_pop(l, 1);
    if lua::get_field(l, t, "verbatim_string") == ffi::LUA_TTABLE {
        let v = ffi::lua_gettop(l);
        let f = lua::get_field(l, v, "format");
        let s = lua::get_field(l, v, "string");
        if f == ffi::LUA_TSTRING && s == ffi::LUA_TSTRING {
            let fmt = to_bytes(l, -2).unwrap_or_default();
            let txt = to_bytes(l, -1).unwrap_or_default();
            if out.resp3() {
                let mut b = itoa::Buffer::new();
                out.raw(b"=");
                out.raw(b.format(txt.len() + 4).as_bytes());
                out.raw(b"\r\n");
                // Redis's addReplyVerbatim: the format is exactly three
                // bytes, cut or padded with spaces (a NUL ends it early).
                let mut ext = [b' '; 3];
                for (d, &c) in ext.iter_mut().zip(fmt.iter().take_while(|&&c| c != 0)) {
                    *d = c;
                }
                out.raw(&ext);
                out.raw(b":");
                out.raw(txt);
                out.raw(b"\r\n");
            } else {
                out.bulk(txt);
            }
            ffi::lua_pop(l, 3);
            return;
        }
        ffi::lua_pop(l, 2);
    }
    ffi::lua_pop(l, 1);
    // An array: elements 1, 2, ... up to the first nil.
    let d = out.deferred();
    let mut j = 1;
    loop {
        ffi::lua_rawgeti_(l, t, j as _);
        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
            ffi::lua_pop(l, 1);
            break;
        }
        reply_from_lua(l, out, script_resp, errors);
        ffi::lua_pop(l, 1);
        j += 1;
    }
    out.end_array(d, j - 1);
}

/// Writes the error a failed script left on top of the stack, as Redis's
/// `luaCallFunction` does: `<err> script: <name>, on <source>:<line>.`
pub unsafe fn reply_error(l: State, out: &mut Reply, name: &str, srv: &mut Server) {
    let mut counted = false;
    let text = if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
        let t = ffi::lua_gettop(l);
        counted = already_counted(l, t);
        lua::get_field(l, t, "err");
        let err = to_bytes(l, -1).map(|b| String::from_utf8_lossy(b).into_owned());
        lua::get_field(l, t, "source");
        let source = to_bytes(l, -1).map(|b| String::from_utf8_lossy(b).into_owned());
        lua::get_field(l, t, "line");
        let line = to_bytes(l, -1).map(|b| String::from_utf8_lossy(b).into_owned());
        ffi::lua_settop(l, t);
        let mut s = err.unwrap_or_default();
        if let (Some(src), Some(line)) = (source, line) {
            s.push_str(&format!(" script: {name}, on {src}:{line}."));
        }
        s
    } else {
        let msg = to_bytes(l, -1)
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_else(|| "execution failure".into());
        let msg: String = msg.chars().take(100).collect();
        format!(
            "{}\n",
            crate::error::Error::msg(format!("Error running script {name}, {msg}")).text()
        )
    };
    if counted {
        srv.stats.uncounted_error = true;
    } else {
        let code = text.split(' ').next().unwrap_or("ERR").to_string();
        srv.stats.error(code);
    }
    out.error_line(&text);
}
