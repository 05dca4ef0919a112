//! Counters: INCR, DECR, INCRBY, DECRBY and INCRBYFLOAT. They keep the key's TTL.

use crate::command::Args;
use crate::db::Value;
use crate::error::{CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::longdouble;
use crate::types::number::parse_i64;
use crate::types::string::Str;

/// Redis's `incrDecrCommand`: adds `by` to the integer at `key` (0 when missing).
fn incr_decr(ctx: &mut Ctx, key: &[u8], by: i64) -> CmdResult {
    let (db, out) = ctx.db_out();
    let value = match db.write_or_create(key, || Str::Int(by))? {
        (_, true) => by,
        (s, false) => {
            let old = s.as_i64().ok_or(Error::NotInteger)?;
            let new = old.checked_add(by).ok_or(Error::Overflow)?;
            *s = Str::Int(new);
            new
        }
    };
    out.int(value);
    ctx.modified(key, notify::STRING, "incrby");
    Ok(())
}

/// ```text
/// INCR key
/// ```
/// Integer: the new value.
pub fn incr(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    incr_decr(ctx, args.at(1), 1)
}

/// ```text
/// DECR key
/// ```
/// Integer: the new value.
pub fn decr(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    incr_decr(ctx, args.at(1), -1)
}

/// ```text
/// INCRBY key increment
/// ```
/// Integer: the new value.
pub fn incrby(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let by = parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    incr_decr(ctx, args.at(1), by)
}

/// ```text
/// DECRBY key decrement
/// ```
/// Integer: the new value.
pub fn decrby(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let by = parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    if by == i64::MIN {
        return Err(Error::msg("decrement would overflow"));
    }
    incr_decr(ctx, args.at(1), -by)
}

/// ```text
/// INCRBYFLOAT key increment
/// ```
/// Bulk string: the new value, computed in `long double` and printed as
/// Redis prints it (see [`longdouble`]).
pub fn incrbyfloat(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, by) = (args.at(1), args.at(2));
    // Replicas get the result, not the increment (float formatting).
    let result;
    let keep = ctx.propagating();
    let (db, out) = ctx.db_out();
    match db.write::<Str>(key)? {
        None => {
            let v = longdouble::incr_by_float(b"0", by)?;
            out.bulk(&v);
            result = keep.then(|| v.clone());
            db.add_new(key, Value::Str(Str::plain(v)));
        }
        Some(s) => {
            let v = longdouble::incr_by_float(&s.as_bytes(), by)?;
            out.bulk(&v);
            result = keep.then(|| v.clone());
            *s = Str::plain(v);
        }
    }
    ctx.modified(key, notify::STRING, "incrbyfloat");
    if let Some(v) = result {
        ctx.propagate_as(&[b"SET", key, &v, b"KEEPTTL"]);
    }
    Ok(())
}
