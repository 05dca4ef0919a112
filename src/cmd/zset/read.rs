//! Sorted-set reads: ZCARD, ZSCORE, ZMSCORE, ZRANK, ZREVRANK, ZCOUNT, ZLEXCOUNT, ZRANDMEMBER, ZSCAN.

use super::*;
use crate::cmd::hash::sample_unique;
use crate::cmd::scan;
use crate::error::CmdResult;
use crate::types::number;
use std::borrow::Cow;

/// ```text
/// ZCARD key
/// ```
/// Integer: the number of members (0 for a missing key).
pub fn zcard(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let n = db.read::<ZSet>(args.at(1))?.map_or(0, |z| z.len());
    out.int(n as i64);
    Ok(())
}

/// ```text
/// ZSCORE key member
/// ```
/// Double, or null.
pub fn zscore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    match db
        .read::<ZSet>(args.at(1))?
        .and_then(|z| z.score(args.at(2)))
    {
        Some(s) => out.double(s),
        None => out.null(),
    }
    Ok(())
}

/// ```text
/// ZMSCORE key member [member ...]
/// ```
/// Array of doubles or nulls.
pub fn zmscore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let z = db.read::<ZSet>(args.at(1))?;
    out.array(args.len() - 2);
    for m in args.from(2) {
        match z.as_ref().and_then(|z| z.score(m)) {
            Some(s) => out.double(s),
            None => out.null(),
        }
    }
    Ok(())
}

fn rank(ctx: &mut Ctx, args: &Args, rev: bool) -> CmdResult {
    let (db, out) = ctx.db_out();
    let Some(z) = db.read::<ZSet>(args.at(1))? else {
        out.null();
        return Ok(());
    };
    match z.rank(args.at(2)) {
        Some(r) if rev => out.int((z.len() - 1 - r) as i64),
        Some(r) => out.int(r as i64),
        None => out.null(),
    }
    Ok(())
}

/// ```text
/// ZRANK key member
/// ```
/// Integer (0-based rank by ascending score), or null.
pub fn zrank(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    rank(ctx, args, false)
}

/// ```text
/// ZREVRANK key member
/// ```
/// Integer (0-based rank by descending score), or null.
pub fn zrevrank(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    rank(ctx, args, true)
}

/// ```text
/// ZCOUNT key min max
/// ```
/// Integer: members with a score in [min, max] (`(` for exclusive bounds).
pub fn zcount(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let r = parse_score_range(args.at(2), args.at(3))?;
    let (db, out) = ctx.db_out();
    let n = db.read::<ZSet>(args.at(1))?.map_or(0, |z| {
        let (a, b) = z.score_ranks(&r);
        b - a
    });
    out.int(n as i64);
    Ok(())
}

/// ```text
/// ZLEXCOUNT key min max
/// ```
/// Integer: members between the lex bounds (`-`, `+`, `[x`, `(x`).
pub fn zlexcount(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let r = parse_lex_range(args.at(2), args.at(3))?;
    let (db, out) = ctx.db_out();
    let n = db.read::<ZSet>(args.at(1))?.map_or(0, |z| {
        let (a, b) = z.lex_ranks(&r);
        b - a
    });
    out.int(n as i64);
    Ok(())
}

/// ```text
/// ZRANDMEMBER key [count [WITHSCORES]]
/// ```
/// Without count: a bulk member or null. With count: an array (distinct
/// members for a positive count, repeats allowed for a negative one).
pub fn zrandmember(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    if args.len() == 2 {
        let r = ctx.srv.rng.next_u64();
        let (db, out) = ctx.db_out();
        match db.read::<ZSet>(key)? {
            Some(z) => out.bulk(z.at((r % z.len() as u64) as usize).0),
            None => out.null(),
        }
        return Ok(());
    }
    let l = match number::parse_i64(args.at(2)) {
        None => return Err(Error::NotInteger),
        Some(i64::MIN) => {
            return Err(Error::msg(
                "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ))
        }
        Some(l) => l,
    };
    let withscores = match args.len() {
        3 => false,
        4 if args.at(3).eq_ignore_ascii_case(b"withscores") => {
            if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
                return Err(Error::OutOfRange);
            }
            true
        }
        _ => return Err(Error::Syntax),
    };
    let cap = ctx.reply_cap();
    let Ctx { srv, client, .. } = &mut *ctx;
    let rng = &mut srv.rng;
    let out = &mut client.reply;
    let Some(z) = srv.ks.dbs[client.db].read::<ZSet>(key)? else {
        out.empty_array();
        return Ok(());
    };
    let size = z.len();
    let count = l.unsigned_abs() as usize;
    if count == 0 {
        out.empty_array();
        return Ok(());
    }
    if l < 0 || count == 1 {
        // Streamed as Redis does: the count is the client's, not bounded by
        // the set, so nothing is sized by it; the reply stops at the
        // client's hard output limit.
        reply_members(out, count, withscores, std::iter::empty());
        let draw = || Some(z.at((rng.next_u64() % size as u64) as usize));
        let write = |out: &mut Reply, (m, s)| reply_member(out, withscores, m, s);
        if crate::cmd::stream_drawn(out, count, cap, draw, write) {
            ctx.reply_capped();
        }
        return Ok(());
    }
    let ranks: Vec<usize> = if count >= size {
        // Redis 7.0 returns the whole set, highest rank first.
        (0..size).rev().collect()
    } else {
        // Partial Fisher-Yates over the ranks: `count` distinct members.
        let mut all: Vec<usize> = (0..size).collect();
        sample_unique(&mut all, count, || rng.next_u64());
        all
    };
    reply_members(
        out,
        ranks.len(),
        withscores,
        ranks.into_iter().map(|r| z.at(r)),
    );
    Ok(())
}

/// ```text
/// ZSCAN key cursor [MATCH pattern] [COUNT count]
/// ```
/// [next cursor, [member, score, ...]]. A listpack-encoded set is returned
/// whole with cursor 0, as Redis does; a big set is walked in score order
/// with the cursor holding the last score returned.
pub fn zscan(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let cursor = scan::parse_cursor(args.at(2))?;
    let (db, out) = ctx.db_out();
    let Some(z) = db.read::<ZSet>(key)? else {
        scan::reply::<&[u8]>(out, 0, &[]);
        return Ok(());
    };
    let o = scan::parse_opts(args, 3, false)?;
    let count = o.count;
    let len = z.len();
    let (start, end) = if z.is_listpack() {
        (0, len)
    } else {
        // The cursor is the last score returned (order-preserving bits); a
        // batch always ends at the end of a run of equal scores, so removals
        // and insertions never make a scan skip a member.
        let s = if cursor == 0 {
            0
        } else {
            let last = cursor_score(cursor);
            z.score_ranks(&ScoreRange {
                min: last,
                max: f64::INFINITY,
                minex: true,
                maxex: false,
            })
            .0
        };
        let mut e = s.saturating_add(count).min(len);
        if e > s && e < len {
            let last = z.at(e - 1).1;
            e = z
                .score_ranks(&ScoreRange {
                    min: last,
                    max: last,
                    minex: false,
                    maxex: false,
                })
                .1;
        }
        (s, e)
    };
    let next = if end >= len {
        0
    } else {
        score_cursor(z.at(end - 1).1)
    };
    let mut items: Vec<Cow<[u8]>> = Vec::new();
    for (m, s) in z.iter_from(start).take(end - start) {
        if o.keeps(m) {
            items.push(Cow::Borrowed(m));
            items.push(Cow::Owned(crate::types::number::fmt_double(s).into_bytes()));
        }
    }
    scan::reply(out, next, &items);
    Ok(())
}

/// A score as a ZSCAN cursor: its bits mapped so that integer order is score
/// order (never 0 for a score, since scores are not NaN).
fn score_cursor(s: f64) -> u64 {
    let b = s.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

fn cursor_score(c: u64) -> f64 {
    let b = if c >> 63 == 1 { c & !(1 << 63) } else { !c };
    let s = f64::from_bits(b);
    if s.is_nan() {
        f64::NEG_INFINITY
    } else {
        s
    }
}
