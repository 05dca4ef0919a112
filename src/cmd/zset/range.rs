//! ZRANGE and its older spellings (ZREVRANGE, Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX), and ZRANGESTORE,
//! all through one parser and one selector, as Redis's `zrangeGenericCommand`.

use super::write::rank_span;
use super::*;
use crate::error::CmdResult;
use crate::types::number;

#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Auto,
    Rank,
    Score,
    Lex,
}

/// ```text
/// ZRANGE key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]
/// ```
/// Array of members (with scores: flat in RESP2, pairs in RESP3).
pub fn zrange(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, None, 1, By::Auto, None)
}

/// ```text
/// ZRANGESTORE dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]
/// ```
/// Integer: the number of members stored.
pub fn zrangestore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, Some(args.at(1)), 2, By::Auto, None)
}

/// ```text
/// ZREVRANGE key start stop [WITHSCORES]
/// ```
/// Array of members, highest score first.
pub fn zrevrange(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, None, 1, By::Rank, Some(true))
}

/// ```text
/// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
/// ```
/// Array of members with a score in the range, ascending.
pub fn zrangebyscore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, None, 1, By::Score, Some(false))
}

/// ```text
/// ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]
/// ```
/// Array of members with a score in the range, descending.
pub fn zrevrangebyscore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, None, 1, By::Score, Some(true))
}

/// ```text
/// ZRANGEBYLEX key min max [LIMIT offset count]
/// ```
/// Array of members between the lex bounds, ascending.
pub fn zrangebylex(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, None, 1, By::Lex, Some(false))
}

/// ```text
/// ZREVRANGEBYLEX key max min [LIMIT offset count]
/// ```
/// Array of members between the lex bounds, descending.
pub fn zrevrangebylex(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, None, 1, By::Lex, Some(true))
}

/// Redis's `zrangeGenericCommand`: `src` is the index of the source key,
/// `by`/`rev` are fixed by the older commands and `Auto`/None for ZRANGE.
fn generic(
    ctx: &mut Ctx,
    args: &mut Args,
    store: Option<&[u8]>,
    src: usize,
    mut by: By,
    rev: Option<bool>,
) -> CmdResult {
    let key = args.at(src);
    let (mut min_i, mut max_i) = (src + 1, src + 2);
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut dir = rev;
    let mut j = src + 3;
    while j < args.len() {
        let a = args.at(j);
        let left = args.len() - j - 1;
        if store.is_none() && a.eq_ignore_ascii_case(b"withscores") {
            withscores = true;
        } else if a.eq_ignore_ascii_case(b"limit") && left >= 2 {
            offset = number::parse_i64(args.at(j + 1)).ok_or(Error::NotInteger)?;
            limit = number::parse_i64(args.at(j + 2)).ok_or(Error::NotInteger)?;
            j += 2;
        } else if dir.is_none() && a.eq_ignore_ascii_case(b"rev") {
            dir = Some(true);
        } else if by == By::Auto && a.eq_ignore_ascii_case(b"bylex") {
            by = By::Lex;
        } else if by == By::Auto && a.eq_ignore_ascii_case(b"byscore") {
            by = By::Score;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let rev = dir.unwrap_or(false);
    if by == By::Auto {
        by = By::Rank;
    }
    if limit != -1 && by == By::Rank {
        return Err(Error::msg(
            "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && by == By::Lex {
        return Err(Error::msg(
            "syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    if rev && by != By::Rank {
        std::mem::swap(&mut min_i, &mut max_i);
    }
    enum Sel {
        Rank(i64, i64),
        Score(ScoreRange),
        Lex(LexRange),
    }
    let sel = match by {
        By::Score => Sel::Score(parse_score_range(args.at(min_i), args.at(max_i))?),
        By::Lex => Sel::Lex(parse_lex_range(args.at(min_i), args.at(max_i))?),
        _ => Sel::Rank(
            number::parse_i64(args.at(min_i)).ok_or(Error::NotInteger)?,
            number::parse_i64(args.at(max_i)).ok_or(Error::NotInteger)?,
        ),
    };
    let srv = &mut *ctx.srv;
    let db = &mut srv.ks.dbs[ctx.client.db];
    let Some(z) = db.read::<ZSet>(key)? else {
        match store {
            Some(dst) => {
                let z = ZSet::with_hint(0, 0, limits(ctx));
                store_result(ctx, dst, z, "zrangestore");
            }
            None => ctx.out().empty_array(),
        }
        return Ok(());
    };
    // The selection as `n` ranks from `first`, ascending or descending.
    let len = z.len();
    let (first, n) = match sel {
        Sel::Rank(a, b) => match rank_span(a, b, len) {
            Some((s, e)) if rev => (len - 1 - s, e - s + 1),
            Some((s, e)) => (s, e - s + 1),
            None => (0, 0),
        },
        Sel::Score(_) | Sel::Lex(_) => {
            let (a, b) = match &sel {
                Sel::Score(r) => z.score_ranks(r),
                Sel::Lex(r) => z.lex_ranks(r),
                _ => unreachable!(),
            };
            if offset < 0 || (offset > 0 && offset as u64 >= len as u64) {
                (0, 0)
            } else {
                let avail = (b - a).saturating_sub(offset as usize);
                let n = if limit < 0 {
                    avail
                } else {
                    avail.min(limit as usize)
                };
                if rev {
                    (b.wrapping_sub(1).wrapping_sub(offset as usize), n)
                } else {
                    (a + offset as usize, n)
                }
            }
        }
    };
    let items: Box<dyn Iterator<Item = (&[u8], f64)>> = if n == 0 {
        Box::new(std::iter::empty())
    } else if rev {
        Box::new(z.iter_rev_from(first).take(n))
    } else {
        Box::new(z.iter_from(first).take(n))
    };
    match store {
        None => reply_members(&mut ctx.client.reply, n, withscores, items),
        Some(dst) => {
            let mut maxlen = 0;
            let picked: Vec<(Vec<u8>, f64)> = items
                .map(|(m, s)| {
                    maxlen = maxlen.max(m.len());
                    (m.to_vec(), s)
                })
                .collect();
            let l = limits(ctx);
            let mut out = ZSet::with_hint(picked.len(), maxlen, l);
            for (m, s) in picked {
                out.insert_new(&m, s, l);
            }
            store_result(ctx, dst, out, "zrangestore");
        }
    }
    Ok(())
}
