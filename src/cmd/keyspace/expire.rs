//! Expiry: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with NX/XX/GT/LT), TTL, PTTL,
//! EXPIRETIME, PEXPIRETIME and PERSIST.

use crate::clock;
use crate::command::Args;
use crate::error::{CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::number::parse_i64;

/// The NX/XX/GT/LT conditions of the EXPIRE family.
#[derive(Default)]
struct Cond {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

/// Redis's `parseExtendedExpireArgumentsOrReply`.
fn parse_cond(args: &mut Args) -> Result<Cond, Error> {
    let mut c = Cond::default();
    args.set_pos(3);
    for opt in args.by_ref() {
        if opt.eq_ignore_ascii_case(b"NX") {
            c.nx = true;
        } else if opt.eq_ignore_ascii_case(b"XX") {
            c.xx = true;
        } else if opt.eq_ignore_ascii_case(b"GT") {
            c.gt = true;
        } else if opt.eq_ignore_ascii_case(b"LT") {
            c.lt = true;
        } else {
            // `%s` stops at a NUL byte.
            let end = opt.iter().position(|&b| b == 0).unwrap_or(opt.len());
            return Err(Error::msg(format!(
                "Unsupported option {}",
                String::from_utf8_lossy(&opt[..end])
            )));
        }
    }
    if c.nx && (c.xx || c.gt || c.lt) {
        return Err(Error::msg(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if c.gt && c.lt {
        return Err(Error::msg(
            "GT and LT options at the same time are not compatible",
        ));
    }
    Ok(c)
}

/// Redis's `expireGenericCommand`. `relative` adds the current time;
/// `seconds` scales the argument to milliseconds.
fn expire_generic(ctx: &mut Ctx, args: &mut Args, relative: bool, seconds: bool) -> CmdResult {
    let key = args.at(1);
    let cond = parse_cond(args)?;
    let mut when = parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    let invalid = || Error::InvalidExpire(ctx.spec.name.into());
    if seconds {
        when = when.checked_mul(1000).ok_or_else(invalid)?;
    }
    let base = if relative { clock::now_ms() } else { 0 };
    when = when.checked_add(base).ok_or_else(invalid)?;
    let db = ctx.db();
    if db.get_mut(key).is_none() {
        ctx.out().int(0);
        return Ok(());
    }
    let current = db.expire_at(key);
    let refused = (cond.nx && current.is_some())
        || (cond.xx && current.is_none())
        || (cond.gt && current.is_none_or(|c| when <= c))
        || (cond.lt && current.is_some_and(|c| when >= c));
    if refused {
        ctx.out().int(0);
        return Ok(());
    }
    // While loading, a past time is kept: the key expires once loaded.
    if when <= clock::now_ms() && !crate::db::loading() {
        ctx.delete_key_as(key, crate::db::Why::Expire);
        let del = crate::server::propagate::expired_del(ctx.srv);
        ctx.propagate_as(&[del, key]);
    } else {
        db.set_expire(key, when);
        ctx.modified(key, notify::GENERIC, "expire");
        // Replicas get PEXPIREAT with the absolute time (PEXPIREAT itself
        // goes as it came), conditions kept.
        if (relative || seconds) && ctx.propagating() {
            let mut ms = itoa::Buffer::new();
            let mut argv: Vec<&[u8]> = vec![b"PEXPIREAT", key, ms.format(when).as_bytes()];
            argv.extend((3..args.len()).map(|i| args.at(i)));
            ctx.propagate_as(&argv);
        }
    }
    ctx.out().int(1);
    Ok(())
}

/// ```text
/// EXPIRE key seconds [NX | XX | GT | LT]
/// ```
/// Integer: 1 when the timeout was set (or the key deleted because it is
/// already due), 0 when the key is missing or a condition refused it.
pub fn expire(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    expire_generic(ctx, args, true, true)
}

/// ```text
/// PEXPIRE key milliseconds [NX | XX | GT | LT]
/// ```
/// Integer: as EXPIRE.
pub fn pexpire(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    expire_generic(ctx, args, true, false)
}

/// ```text
/// EXPIREAT key unix-time-seconds [NX | XX | GT | LT]
/// ```
/// Integer: as EXPIRE.
pub fn expireat(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    expire_generic(ctx, args, false, true)
}

/// ```text
/// PEXPIREAT key unix-time-milliseconds [NX | XX | GT | LT]
/// ```
/// Integer: as EXPIRE.
pub fn pexpireat(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    expire_generic(ctx, args, false, false)
}

/// The key's expiry for the TTL family: Err(-2) when missing, Ok(None)
/// without a timeout.
fn lookup_expire(ctx: &mut Ctx, key: &[u8]) -> Result<Option<i64>, i64> {
    let db = ctx.db();
    if db.get_no_touch(key).is_none() {
        return Err(-2);
    }
    Ok(db.expire_at(key))
}

/// Shared body of TTL/PTTL (`remaining`) and EXPIRETIME/PEXPIRETIME.
fn ttl_generic(ctx: &mut Ctx, args: &mut Args, ms: bool, remaining: bool) -> CmdResult {
    let n = match lookup_expire(ctx, args.at(1)) {
        Err(n) => n,
        Ok(None) => -1,
        Ok(Some(at)) => {
            let v = if remaining {
                (at - clock::now_ms()).max(0)
            } else {
                at
            };
            if ms {
                v
            } else {
                (v + 500) / 1000
            }
        }
    };
    ctx.out().int(n);
    Ok(())
}

/// ```text
/// TTL key
/// ```
/// Integer: seconds left (rounded), -1 without a timeout, -2 when missing.
pub fn ttl(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    ttl_generic(ctx, args, false, true)
}

/// ```text
/// PTTL key
/// ```
/// Integer: milliseconds left, -1 without a timeout, -2 when missing.
pub fn pttl(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    ttl_generic(ctx, args, true, true)
}

/// ```text
/// EXPIRETIME key
/// ```
/// Integer: the unix time in seconds the key expires at, -1 or -2 as TTL.
pub fn expiretime(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    ttl_generic(ctx, args, false, false)
}

/// ```text
/// PEXPIRETIME key
/// ```
/// Integer: the unix time in milliseconds the key expires at, -1 or -2 as TTL.
pub fn pexpiretime(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    ttl_generic(ctx, args, true, false)
}

/// ```text
/// PERSIST key
/// ```
/// Integer: 1 when a timeout was removed, else 0.
pub fn persist(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let db = ctx.db();
    let done = db.get_mut(key).is_some() && db.persist(key);
    if done {
        ctx.modified(key, notify::GENERIC, "persist");
    }
    ctx.out().int(done as i64);
    Ok(())
}
