//! Sorted-set writes: ZADD, ZINCRBY, ZREM, ZREMRANGEBY*, and the pops (plain, multi-key, blocking).

use super::*;
use crate::db::Kind;
use crate::error::CmdResult;
use crate::server::blocking;
use crate::types::number;

/// ZADD's flags.
#[derive(Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// ```text
/// ZADD key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]
/// ```
/// Integer (members added, or added + changed with CH); with INCR the new
/// score as a double, or null when NX/XX/GT/LT stopped it.
pub fn zadd(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mut f = AddFlags::default();
    args.set_pos(2);
    loop {
        if args.eat_ci("NX") {
            f.nx = true;
        } else if args.eat_ci("XX") {
            f.xx = true;
        } else if args.eat_ci("CH") {
            f.ch = true;
        } else if args.eat_ci("INCR") {
            f.incr = true;
        } else if args.eat_ci("GT") {
            f.gt = true;
        } else if args.eat_ci("LT") {
            f.lt = true;
        } else {
            break;
        }
    }
    add_generic(ctx, args, f)
}

/// ```text
/// ZINCRBY key increment member
/// ```
/// The member's new score (double).
pub fn zincrby(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    args.set_pos(2);
    let f = AddFlags {
        incr: true,
        ..Default::default()
    };
    add_generic(ctx, args, f)
}

/// Redis's `zaddGenericCommand`; `args` is at the first score.
fn add_generic(ctx: &mut Ctx, args: &mut Args, f: AddFlags) -> CmdResult {
    let event = if f.incr { "zincr" } else { "zadd" };
    let key = args.at(1);
    let first = args.pos();
    let elements = args.remaining();
    if elements == 0 || !elements.is_multiple_of(2) {
        return Err(Error::Syntax);
    }
    let pairs = elements / 2;
    if f.nx && f.xx {
        return Err(Error::msg(
            "XX and NX options at the same time are not compatible",
        ));
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Err(Error::msg(
            "GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && pairs > 1 {
        return Err(Error::msg(
            "INCR option supports a single increment-element pair",
        ));
    }
    let mut scores = Vec::with_capacity(pairs);
    for i in 0..pairs {
        scores.push(number::parse_f64(args.at(first + 2 * i)).ok_or(Error::NotFloat)?);
    }
    let limits = limits(ctx);
    let (db, out) = ctx.db_out();
    let z = match db.write::<ZSet>(key)? {
        Some(z) => z,
        None if f.xx => {
            if f.incr {
                out.null();
            } else {
                out.int(0);
            }
            return Ok(());
        }
        // Redis 7.0 picks the encoding from the first member only.
        None => {
            let first_len = args.at(first + 1).len();
            db.write_or_create(key, || ZSet::with_hint(1, first_len, limits))?
                .0
        }
    };
    let (mut added, mut updated, mut processed) = (0i64, 0i64, 0);
    let mut result = 0.0;
    for (i, &score) in scores.iter().enumerate() {
        let m = args.at(first + 2 * i + 1);
        match z.score(m) {
            Some(cur) => {
                if f.nx {
                    continue;
                }
                let mut new = score;
                if f.incr {
                    new = cur + score;
                    if new.is_nan() {
                        return Err(Error::msg("resulting score is not a number (NaN)"));
                    }
                }
                if (f.lt && new >= cur) || (f.gt && new <= cur) {
                    continue;
                }
                result = new;
                processed += 1;
                if new != cur {
                    z.update_existing(m, cur, new);
                    updated += 1;
                }
            }
            None => {
                if f.xx {
                    continue;
                }
                z.insert_new(m, score, limits);
                result = score;
                added += 1;
                processed += 1;
            }
        }
    }
    if f.incr {
        if processed > 0 {
            ctx.out().double(result);
        } else {
            ctx.out().null();
        }
    } else {
        ctx.out().int(added + if f.ch { updated } else { 0 });
    }
    if added + updated > 0 {
        ctx.modified_by(key, notify::ZSET, event, (added + updated) as u64);
    }
    Ok(())
}

/// ```text
/// ZREM key member [member ...]
/// ```
/// Integer: members removed.
pub fn zrem(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let Some(z) = ctx.db().write::<ZSet>(key)? else {
        ctx.out().int(0);
        return Ok(());
    };
    let mut n = 0;
    for m in args.from(2) {
        if z.remove(m).is_some() {
            n += 1;
            if z.is_empty() {
                break;
            }
        }
    }
    ctx.out().int(n);
    if n > 0 {
        ctx.modified_by(key, notify::ZSET, "zrem", n as u64);
        ctx.delete_if_empty(key);
    }
    Ok(())
}

/// Which range a ZREMRANGEBY* command removes.
enum RemRange {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

fn remrange(ctx: &mut Ctx, args: &Args, r: RemRange, event: &'static str) -> CmdResult {
    let key = args.at(1);
    let Some(z) = ctx.db().write::<ZSet>(key)? else {
        ctx.out().int(0);
        return Ok(());
    };
    let (start, end) = match r {
        RemRange::Rank(a, b) => match rank_span(a, b, z.len()) {
            Some((a, b)) => (a, b + 1),
            None => (0, 0),
        },
        RemRange::Score(r) => z.score_ranks(&r),
        RemRange::Lex(r) => z.lex_ranks(&r),
    };
    let n = z.remove_ranks(start, end);
    ctx.out().int(n as i64);
    if n > 0 {
        ctx.modified_by(key, notify::ZSET, event, n as u64);
        ctx.delete_if_empty(key);
    }
    Ok(())
}

/// Clamps Redis-style `start stop` ranks (negatives count from the end) to
/// an inclusive span, or None when it selects nothing.
pub fn rank_span(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut s = if start < 0 { len + start } else { start };
    let mut e = if end < 0 { len + end } else { end };
    if s < 0 {
        s = 0;
    }
    if s > e || s >= len {
        return None;
    }
    if e >= len {
        e = len - 1;
    }
    Some((s as usize, e as usize))
}

/// ```text
/// ZREMRANGEBYRANK key start stop
/// ```
/// Integer: members removed.
pub fn zremrangebyrank(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let a = number::parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    let b = number::parse_i64(args.at(3)).ok_or(Error::NotInteger)?;
    remrange(ctx, args, RemRange::Rank(a, b), "zremrangebyrank")
}

/// ```text
/// ZREMRANGEBYSCORE key min max
/// ```
/// Integer: members removed.
pub fn zremrangebyscore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let r = parse_score_range(args.at(2), args.at(3))?;
    remrange(ctx, args, RemRange::Score(r), "zremrangebyscore")
}

/// ```text
/// ZREMRANGEBYLEX key min max
/// ```
/// Integer: members removed.
pub fn zremrangebylex(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let r = parse_lex_range(args.at(2), args.at(3))?;
    remrange(ctx, args, RemRange::Lex(r), "zremrangebylex")
}

/// How a pop replies (Redis's `genericZpopCommand` flags).
#[derive(Clone, Copy)]
struct PopShape {
    /// Prefix the reply with the key (BZPOP*, *MPOP).
    emit_key: bool,
    /// Each element as a [member, score] pair.
    nested: bool,
}

/// Pops up to `count` members from the set at `key`, which exists and is not
/// empty, writing the reply; raises the events.
fn pop_from(ctx: &mut Ctx, key: &[u8], max: bool, count: usize, shape: PopShape) {
    let Ok(Some(z)) = ctx.db().write::<ZSet>(key) else {
        unreachable!("pop_from on a missing set")
    };
    let popped: Vec<(Vec<u8>, f64)> = std::iter::from_fn(|| z.pop(max)).take(count).collect();
    let n = popped.len();
    let out = ctx.out();
    match (shape.emit_key, shape.nested) {
        (false, false) => out.array(n * 2),
        (false, true) => out.array(n),
        (true, false) => {
            out.array(n * 2 + 1);
            out.bulk(key);
        }
        (true, true) => {
            out.array(2);
            out.bulk(key);
            out.array(n);
        }
    }
    for (m, s) in &popped {
        if shape.nested {
            out.array(2);
        }
        out.bulk(m);
        out.double(*s);
    }
    let event = if max { "zpopmax" } else { "zpopmin" };
    ctx.modified_by(key, notify::ZSET, event, popped.len() as u64);
    ctx.delete_if_empty(key);
    if shape.emit_key {
        // BZPOP* and *MPOP propagate as the plain pop (with the count
        // popped, for the MPOP forms).
        let name: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
        let mut c = itoa::Buffer::new();
        if shape.nested {
            ctx.propagate_as(&[name, key, c.format(n).as_bytes()]);
        } else {
            ctx.propagate_as(&[name, key]);
        }
    }
}

fn zpop(ctx: &mut Ctx, args: &mut Args, max: bool) -> CmdResult {
    if args.len() > 3 {
        return Err(Error::Syntax);
    }
    let count = if args.len() == 3 {
        match number::parse_i64(args.at(2)) {
            Some(c) if c >= 0 => Some(c as usize),
            _ => return Err(Error::MustBePositive),
        }
    } else {
        None
    };
    let key = args.at(1);
    let nonempty = ctx.db().write::<ZSet>(key)?.is_some();
    if !nonempty || count == Some(0) {
        ctx.out().empty_array();
        return Ok(());
    }
    let nested = ctx.out().resp3() && count.is_some();
    let shape = PopShape {
        emit_key: false,
        nested,
    };
    pop_from(ctx, key, max, count.unwrap_or(1), shape);
    Ok(())
}

/// ```text
/// ZPOPMIN key [count]
/// ```
/// Array of member, score (pairs in RESP3 when count is given).
pub fn zpopmin(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    zpop(ctx, args, false)
}

/// ```text
/// ZPOPMAX key [count]
/// ```
/// Array of member, score (pairs in RESP3 when count is given).
pub fn zpopmax(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    zpop(ctx, args, true)
}

/// The first key in `keys` holding a non-empty sorted set; WRONGTYPE when a
/// key before it holds another type.
fn first_nonempty(
    ctx: &mut Ctx,
    args: &Args,
    keys: std::ops::Range<usize>,
) -> Result<Option<usize>, Error> {
    for i in keys {
        if let Some(z) = ctx.db().write::<ZSet>(args.at(i))? {
            if !z.is_empty() {
                return Ok(Some(i));
            }
        }
    }
    Ok(None)
}

fn bzpop(ctx: &mut Ctx, args: &mut Args, max: bool) -> CmdResult {
    let timeout = blocking::parse_timeout(args.at(args.len() - 1))?;
    let keys = 1..args.len() - 1;
    match first_nonempty(ctx, args, keys.clone())? {
        Some(i) => {
            let shape = PopShape {
                emit_key: true,
                nested: false,
            };
            pop_from(ctx, args.at(i), max, 1, shape);
        }
        None if ctx.in_exec => ctx.out().null_array(),
        None => {
            let ks = keys.map(|i| args.at(i).into()).collect();
            blocking::block(ctx, ks, Kind::ZSet, timeout, args);
        }
    }
    Ok(())
}

/// ```text
/// BZPOPMIN key [key ...] timeout
/// ```
/// [key, member, score], or null on timeout.
pub fn bzpopmin(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    bzpop(ctx, args, false)
}

/// ```text
/// BZPOPMAX key [key ...] timeout
/// ```
/// [key, member, score], or null on timeout.
pub fn bzpopmax(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    bzpop(ctx, args, true)
}

/// Parses `numkeys key... MIN|MAX [COUNT count]` starting at `at`:
/// (key index range, max, count).
fn parse_mpop(args: &Args, at: usize) -> Result<(std::ops::Range<usize>, bool, usize), Error> {
    let n = match number::parse_i64(args.at(at)) {
        Some(n) if n > 0 => n,
        _ => return Err(Error::NumKeysPositive),
    };
    let first = at + 1;
    // numkeys must leave room for MIN|MAX after the keys.
    if n as u64 >= (args.len() - first) as u64 {
        return Err(Error::Syntax);
    }
    let keys = first..first + n as usize;
    let mut a = Args::new_at(args, keys.end);
    let max = if a.eat_ci("MIN") {
        false
    } else if a.eat_ci("MAX") {
        true
    } else {
        return Err(Error::Syntax);
    };
    let mut count = None;
    while a.has_more() {
        if count.is_none() && a.remaining() >= 2 && a.eat_ci("COUNT") {
            match number::parse_i64(a.next_or_syntax()?) {
                Some(c) if c > 0 => count = Some(c as usize),
                _ => return Err(Error::CountPositive),
            }
        } else {
            return Err(Error::Syntax);
        }
    }
    Ok((keys, max, count.unwrap_or(1)))
}

const MPOP_SHAPE: PopShape = PopShape {
    emit_key: true,
    nested: true,
};

/// ```text
/// ZMPOP numkeys key [key ...] MIN | MAX [COUNT count]
/// ```
/// [key, [[member, score], ...]], or null when every set is empty.
pub fn zmpop(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (keys, max, count) = parse_mpop(args, 1)?;
    match first_nonempty(ctx, args, keys)? {
        Some(i) => pop_from(ctx, args.at(i), max, count, MPOP_SHAPE),
        None => ctx.out().null_array(),
    }
    Ok(())
}

/// ```text
/// BZMPOP timeout numkeys key [key ...] MIN | MAX [COUNT count]
/// ```
/// [key, [[member, score], ...]], or null on timeout.
pub fn bzmpop(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    // Redis reads the timeout after numkeys, MIN|MAX and COUNT.
    let (keys, max, count) = parse_mpop(args, 2)?;
    let timeout = blocking::parse_timeout(args.at(1))?;
    match first_nonempty(ctx, args, keys.clone())? {
        Some(i) => pop_from(ctx, args.at(i), max, count, MPOP_SHAPE),
        None if ctx.in_exec => ctx.out().null_array(),
        None => {
            let ks = keys.map(|i| args.at(i).into()).collect();
            blocking::block(ctx, ks, Kind::ZSet, timeout, args);
        }
    }
    Ok(())
}
