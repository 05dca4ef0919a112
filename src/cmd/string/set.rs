//! SET and its relatives (SETNX, SETEX, PSETEX, MSET, MSETNX) and GETEX, which
//! share SET's option parser (Redis's `parseExtendedStringArgumentsOrReply`).

use super::reply_get;
use crate::clock;
use crate::command::Args;
use crate::db::{Typed, Value};
use crate::error::{CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::number::parse_i64;
use crate::types::string::Str;

/// The unit and base of an expire argument.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// EX: relative seconds.
    Ex,
    /// PX: relative milliseconds.
    Px,
    /// EXAT: unix seconds.
    ExAt,
    /// PXAT: unix milliseconds.
    PxAt,
}

/// Options of SET (and GETEX, which only takes the expiry ones and PERSIST).
#[derive(Default)]
struct Opts<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    expire: Option<(Unit, &'a [u8])>,
}

/// Parses options exactly as Redis 7.0 does: a flag conflicting with one
/// already seen, or one the command does not take, is a syntax error; the
/// same expiry option may repeat (the last one wins). Expire values are only
/// checked later, by [`expire_at`].
fn parse_opts<'a>(args: &mut Args<'a>, is_set: bool) -> Result<Opts<'a>, Error> {
    let mut o = Opts::default();
    while let Some(opt) = args.next() {
        let has_next = args.has_more();
        let unit = if opt.eq_ignore_ascii_case(b"EX") {
            Some(Unit::Ex)
        } else if opt.eq_ignore_ascii_case(b"PX") {
            Some(Unit::Px)
        } else if opt.eq_ignore_ascii_case(b"EXAT") {
            Some(Unit::ExAt)
        } else if opt.eq_ignore_ascii_case(b"PXAT") {
            Some(Unit::PxAt)
        } else {
            None
        };
        if let Some(unit) = unit {
            let other_expiry = matches!(o.expire, Some((u, _)) if u != unit);
            if o.keepttl || o.persist || other_expiry || !has_next {
                return Err(Error::Syntax);
            }
            o.expire = Some((unit, args.next_or_syntax()?));
        } else if opt.eq_ignore_ascii_case(b"NX") && is_set && !o.xx {
            o.nx = true;
        } else if opt.eq_ignore_ascii_case(b"XX") && is_set && !o.nx {
            o.xx = true;
        } else if opt.eq_ignore_ascii_case(b"GET") && is_set {
            o.get = true;
        } else if opt.eq_ignore_ascii_case(b"KEEPTTL") && is_set && o.expire.is_none() {
            o.keepttl = true;
        } else if opt.eq_ignore_ascii_case(b"PERSIST") && !is_set && o.expire.is_none() {
            o.persist = true;
        } else {
            return Err(Error::Syntax);
        }
    }
    Ok(o)
}

/// Redis's `getExpireMillisecondsOrReply`: the absolute unix-ms time for an
/// expire argument, or `ERR invalid expire time in '<cmd>' command`.
fn expire_at(unit: Unit, raw: &[u8], cmd: &str) -> Result<i64, Error> {
    let n = parse_i64(raw).ok_or(Error::NotInteger)?;
    let seconds = matches!(unit, Unit::Ex | Unit::ExAt);
    if n <= 0 || (seconds && n > i64::MAX / 1000) {
        return Err(Error::InvalidExpire(cmd.into()));
    }
    let mut ms = if seconds { n * 1000 } else { n };
    if matches!(unit, Unit::Ex | Unit::Px) {
        ms = ms.wrapping_add(clock::now_ms());
    }
    if ms <= 0 {
        return Err(Error::InvalidExpire(cmd.into()));
    }
    Ok(ms)
}

/// How SET-like commands answer.
#[derive(Clone, Copy)]
enum Style {
    /// `+OK`, or null when NX/XX stopped it.
    Ok,
    /// `:1` / `:0` (SETNX).
    Int,
}

/// Redis's `setGenericCommand`, after options are parsed.
fn set_generic(
    ctx: &mut Ctx,
    key: &[u8],
    val: &[u8],
    o: &Opts,
    at: Option<i64>,
    style: Style,
) -> CmdResult {
    let (db, out) = ctx.db_out();
    let found = if o.get {
        reply_get(db, out, key)?
    } else {
        db.get_mut(key).is_some()
    };
    if (o.nx && found) || (o.xx && !found) {
        if !o.get {
            match style {
                Style::Ok => out.null(),
                Style::Int => out.int(0),
            }
        }
        return Ok(());
    }
    let value = Value::Str(Str::from_bytes(val));
    if o.keepttl {
        db.set_keep_ttl(key, value);
    } else {
        db.set(key, value);
    }
    if let Some(at) = at {
        db.set_expire(key, at);
    }
    ctx.modified(key, notify::STRING, "set");
    if let Some(at) = at {
        ctx.event(notify::GENERIC, "expire", key);
        // Replicas get the absolute time, whatever the form given.
        let mut ms = itoa::Buffer::new();
        ctx.propagate_as(&[b"SET", key, val, b"PXAT", ms.format(at).as_bytes()]);
    }
    if !o.get {
        match style {
            Style::Ok => ctx.out().ok(),
            Style::Int => ctx.out().int(1),
        }
    }
    Ok(())
}

/// ```text
/// SET key value [NX | XX] [GET] [EX seconds | PX milliseconds |
///     EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]
/// ```
/// `OK`; null when NX/XX stopped it; with GET, the old value or null.
pub fn set(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, val) = (args.at(1), args.at(2));
    args.set_pos(3);
    let o = parse_opts(args, true)?;
    let at = match o.expire {
        Some((unit, raw)) => Some(expire_at(unit, raw, "set")?),
        None => None,
    };
    if !o.get {
        // The common case ends in the shared body (a tail call).
        return set_generic(ctx, key, val, &o, at, Style::Ok);
    }
    set_generic(ctx, key, val, &o, at, Style::Ok)?;
    if at.is_none() && ctx.propagating() {
        propagate_without_get(ctx, args);
    }
    Ok(())
}

/// SET ... GET propagates without its GET options (GET may repeat); an
/// expiry, if any, was already rewritten by `set_generic`.
#[cold]
fn propagate_without_get(ctx: &mut Ctx, args: &Args) {
    let argv: Vec<&[u8]> = (0..args.len())
        .map(|i| args.at(i))
        .enumerate()
        .filter(|&(i, a)| i < 3 || !a.eq_ignore_ascii_case(b"GET"))
        .map(|(_, a)| a)
        .collect();
    ctx.propagate_as(&argv);
}

/// ```text
/// SETNX key value
/// ```
/// Integer: 1 when set, 0 when the key existed.
pub fn setnx(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let o = Opts {
        nx: true,
        ..Default::default()
    };
    set_generic(ctx, args.at(1), args.at(2), &o, None, Style::Int)
}

/// ```text
/// SETEX key seconds value
/// ```
/// `OK`.
pub fn setex(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let at = expire_at(Unit::Ex, args.at(2), "setex")?;
    set_generic(
        ctx,
        args.at(1),
        args.at(3),
        &Opts::default(),
        Some(at),
        Style::Ok,
    )
}

/// ```text
/// PSETEX key milliseconds value
/// ```
/// `OK`.
pub fn psetex(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let at = expire_at(Unit::Px, args.at(2), "psetex")?;
    set_generic(
        ctx,
        args.at(1),
        args.at(3),
        &Opts::default(),
        Some(at),
        Style::Ok,
    )
}

/// ```text
/// MSET key value [key value ...]
/// ```
/// `OK`.
pub fn mset(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    mset_generic(ctx, args, false)
}

/// ```text
/// MSETNX key value [key value ...]
/// ```
/// Integer: 1 when every key was set, 0 (and nothing set) when any existed.
pub fn msetnx(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    mset_generic(ctx, args, true)
}

fn mset_generic(ctx: &mut Ctx, args: &mut Args, nx: bool) -> CmdResult {
    if args.len().is_multiple_of(2) {
        return Err(Error::Arity(ctx.spec.name.into()));
    }
    if nx {
        let db = ctx.db();
        if (1..args.len())
            .step_by(2)
            .any(|i| db.get_mut(args.at(i)).is_some())
        {
            ctx.out().int(0);
            return Ok(());
        }
    }
    for i in (1..args.len()).step_by(2) {
        let key = args.at(i);
        ctx.db()
            .set(key, Value::Str(Str::from_bytes(args.at(i + 1))));
        ctx.modified(key, notify::STRING, "set");
    }
    if nx {
        ctx.out().int(1);
    } else {
        ctx.out().ok();
    }
    Ok(())
}

/// ```text
/// GETEX key [EX seconds | PX milliseconds | EXAT unix-time-seconds |
///     PXAT unix-time-milliseconds | PERSIST]
/// ```
/// The value (null for a missing key); also sets or removes the TTL. An
/// EXAT/PXAT already in the past deletes the key.
pub fn getex(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    args.set_pos(2);
    let o = parse_opts(args, false)?;
    let db = ctx.db();
    if db.read::<Str>(key)?.is_none() {
        ctx.out().null();
        return Ok(());
    }
    let at = match o.expire {
        Some((unit, raw)) => Some((unit, expire_at(unit, raw, "getex")?)),
        None => None,
    };
    let (db, out) = ctx.db_out();
    if let Some(s) = db.peek(key).and_then(Str::of) {
        super::reply_str(out, s);
    }
    match at {
        Some((Unit::ExAt | Unit::PxAt, at)) if at <= clock::now_ms() && !crate::db::loading() => {
            ctx.delete_key_as(key, crate::db::Why::Expire);
            let del = crate::server::propagate::expired_del(ctx.srv);
            ctx.propagate_as(&[del, key]);
        }
        Some((_, at)) => {
            db.set_expire(key, at);
            ctx.modified(key, notify::GENERIC, "expire");
            let mut ms = itoa::Buffer::new();
            ctx.propagate_as(&[b"PEXPIREAT", key, ms.format(at).as_bytes()]);
        }
        None if o.persist && db.persist(key) => {
            ctx.modified(key, notify::GENERIC, "persist");
            ctx.propagate_as(&[b"PERSIST", key]);
        }
        None => {}
    }
    Ok(())
}
