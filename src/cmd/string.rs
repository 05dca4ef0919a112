//! String commands.

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::Value;
use crate::error::{CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::string::Str;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("get", 2, READONLY | FAST, (1, 1, 1), get),
    CommandSpec::new("set", -3, WRITE | DENYOOM, (1, 1, 1), set),
];

/// Writes a string value as a bulk reply.
pub fn reply_str(out: &mut crate::resp::encode::Reply, s: &Str) {
    match s {
        Str::Int(n) => out.bulk_int(*n),
        Str::Emb(v) | Str::Raw(v) => out.bulk(v),
    }
}

/// ```text
/// GET key
/// ```
/// Bulk string, or null.
fn get(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let (db, out) = ctx.db_out();
    match db.get(key) {
        None => out.null(),
        Some(Value::Str(s)) => reply_str(out, s),
        Some(_) => return Err(Error::WrongType),
    }
    Ok(())
}

/// When a SET's key expires.
enum Expiry {
    None,
    Keep,
    At(i64),
}

/// ```text
/// SET key value [NX | XX] [GET] [EX seconds | PX milliseconds |
///     EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]
/// ```
/// `OK`; null when NX/XX stopped it; with GET, the old value or null.
fn set(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let val = args.at(2);
    args.set_pos(3);
    let (mut nx, mut xx, mut get) = (false, false, false);
    let mut expiry = Expiry::None;
    while let Some(opt) = args.next() {
        let o = opt.to_ascii_uppercase();
        match &o[..] {
            b"NX" if !xx => nx = true,
            b"XX" if !nx => xx = true,
            b"GET" => get = true,
            b"KEEPTTL" if matches!(expiry, Expiry::None) => expiry = Expiry::Keep,
            b"EX" | b"PX" | b"EXAT" | b"PXAT"
                if matches!(expiry, Expiry::None) && args.has_more() =>
            {
                let n = args.next_i64()?;
                let at = match &o[..] {
                    b"EX" => n
                        .checked_mul(1000)
                        .and_then(|ms| ms.checked_add(crate::clock::now_ms())),
                    b"PX" => n.checked_add(crate::clock::now_ms()),
                    b"EXAT" => n.checked_mul(1000),
                    _ => Some(n),
                };
                match at {
                    Some(at) if n > 0 => expiry = Expiry::At(at),
                    _ => return Err(Error::InvalidExpire("set".into())),
                }
            }
            _ => return Err(Error::Syntax),
        }
    }
    let db = ctx.db();
    let old = match db.get_mut(key) {
        None => None,
        Some(Value::Str(s)) => Some(s.as_bytes().into_owned()),
        Some(_) if get => return Err(Error::WrongType),
        Some(_) => Some(Vec::new()),
    };
    if (nx && old.is_some()) || (xx && old.is_none()) {
        if get {
            match old {
                Some(v) => ctx.out().bulk(&v),
                None => ctx.out().null(),
            }
        } else {
            ctx.out().null();
        }
        return Ok(());
    }
    let value = Value::Str(Str::from_bytes(val));
    match expiry {
        Expiry::Keep => db.set_keep_ttl(key, value),
        _ => db.set(key, value),
    }
    if let Expiry::At(at) = expiry {
        db.set_expire(key, at);
    }
    ctx.modified(key, notify::STRING, "set");
    if let Expiry::At(_) = expiry {
        ctx.event(notify::GENERIC, "expire", key);
    }
    if get {
        match old {
            Some(v) => ctx.out().bulk(&v),
            None => ctx.out().null(),
        }
    } else {
        ctx.out().ok();
    }
    Ok(())
}
