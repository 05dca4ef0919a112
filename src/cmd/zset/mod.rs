//! Sorted-set commands (Redis's t_zset.c): specs and the helpers the sub-modules share.
//!
//! - `write`: ZADD, ZINCRBY, ZREM, ZREMRANGEBY*, pops (ZPOP*, ZMPOP, BZPOP*, BZMPOP)
//! - `read`: ZCARD, ZSCORE, ZMSCORE, ZRANK, ZCOUNT, ZLEXCOUNT, ZRANDMEMBER, ZSCAN
//! - `range`: ZRANGE and its older spellings, ZRANGESTORE
//! - `setop`: ZUNION, ZINTER, ZDIFF (and their STORE forms), ZINTERCARD

mod range;
mod read;
mod setop;
mod write;

pub use write::zadd;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::{Db, Value};
use crate::error::Error;
use crate::resp::encode::Reply;
use crate::server::{notify, Ctx};
use crate::types::zset::{LexBound, LexRange, Limits, ScoreRange, ZSet};

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("zadd", -4, WRITE | DENYOOM | FAST, (1, 1, 1), write::zadd),
    CommandSpec::new(
        "zincrby",
        4,
        WRITE | DENYOOM | FAST,
        (1, 1, 1),
        write::zincrby,
    ),
    CommandSpec::new("zrem", -3, WRITE | FAST, (1, 1, 1), write::zrem),
    CommandSpec::new(
        "zremrangebyrank",
        4,
        WRITE,
        (1, 1, 1),
        write::zremrangebyrank,
    ),
    CommandSpec::new(
        "zremrangebyscore",
        4,
        WRITE,
        (1, 1, 1),
        write::zremrangebyscore,
    ),
    CommandSpec::new("zremrangebylex", 4, WRITE, (1, 1, 1), write::zremrangebylex),
    CommandSpec::new("zpopmin", -2, WRITE | FAST, (1, 1, 1), write::zpopmin),
    CommandSpec::new("zpopmax", -2, WRITE | FAST, (1, 1, 1), write::zpopmax),
    CommandSpec::new("zmpop", -4, WRITE, (0, 0, 0), write::zmpop)
        .with_keys_fn(keys_after_numkeys::<1>),
    CommandSpec::new(
        "bzpopmin",
        -3,
        WRITE | NOSCRIPT | BLOCKING | FAST,
        (1, -2, 1),
        write::bzpopmin,
    ),
    CommandSpec::new(
        "bzpopmax",
        -3,
        WRITE | NOSCRIPT | BLOCKING | FAST,
        (1, -2, 1),
        write::bzpopmax,
    ),
    CommandSpec::new("bzmpop", -5, WRITE | BLOCKING, (0, 0, 0), write::bzmpop)
        .with_keys_fn(keys_after_numkeys::<2>),
    CommandSpec::new("zcard", 2, READONLY | FAST, (1, 1, 1), read::zcard),
    CommandSpec::new("zscore", 3, READONLY | FAST, (1, 1, 1), read::zscore),
    CommandSpec::new("zmscore", -3, READONLY | FAST, (1, 1, 1), read::zmscore),
    CommandSpec::new("zrank", 3, READONLY | FAST, (1, 1, 1), read::zrank),
    CommandSpec::new("zrevrank", 3, READONLY | FAST, (1, 1, 1), read::zrevrank),
    CommandSpec::new("zcount", 4, READONLY | FAST, (1, 1, 1), read::zcount),
    CommandSpec::new("zlexcount", 4, READONLY | FAST, (1, 1, 1), read::zlexcount),
    CommandSpec::new("zrandmember", -2, READONLY, (1, 1, 1), read::zrandmember),
    CommandSpec::new("zscan", -3, READONLY, (1, 1, 1), read::zscan),
    CommandSpec::new("zrange", -4, READONLY, (1, 1, 1), range::zrange),
    CommandSpec::new(
        "zrangestore",
        -5,
        WRITE | DENYOOM,
        (1, 2, 1),
        range::zrangestore,
    ),
    CommandSpec::new(
        "zrangebyscore",
        -4,
        READONLY,
        (1, 1, 1),
        range::zrangebyscore,
    ),
    CommandSpec::new(
        "zrevrangebyscore",
        -4,
        READONLY,
        (1, 1, 1),
        range::zrevrangebyscore,
    ),
    CommandSpec::new("zrangebylex", -4, READONLY, (1, 1, 1), range::zrangebylex),
    CommandSpec::new(
        "zrevrangebylex",
        -4,
        READONLY,
        (1, 1, 1),
        range::zrevrangebylex,
    ),
    CommandSpec::new("zrevrange", -4, READONLY, (1, 1, 1), range::zrevrange),
    CommandSpec::new("zunion", -3, READONLY, (0, 0, 0), setop::zunion)
        .with_keys_fn(keys_after_numkeys::<1>),
    CommandSpec::new("zinter", -3, READONLY, (0, 0, 0), setop::zinter)
        .with_keys_fn(keys_after_numkeys::<1>),
    CommandSpec::new("zdiff", -3, READONLY, (0, 0, 0), setop::zdiff)
        .with_keys_fn(keys_after_numkeys::<1>),
    CommandSpec::new("zintercard", -3, READONLY, (0, 0, 0), setop::zintercard)
        .with_keys_fn(keys_after_numkeys::<1>),
    CommandSpec::new(
        "zunionstore",
        -4,
        WRITE | DENYOOM,
        (1, 1, 1),
        setop::zunionstore,
    )
    .with_keys_fn(store_keys),
    CommandSpec::new(
        "zinterstore",
        -4,
        WRITE | DENYOOM,
        (1, 1, 1),
        setop::zinterstore,
    )
    .with_keys_fn(store_keys),
    CommandSpec::new(
        "zdiffstore",
        -4,
        WRITE | DENYOOM,
        (1, 1, 1),
        setop::zdiffstore,
    )
    .with_keys_fn(store_keys),
];

/// Keys of `CMD ... numkeys key [key ...] ...` with numkeys at index `N`.
fn keys_after_numkeys<const N: usize>(args: &Args) -> Vec<usize> {
    numkeys_positions(args, N)
}

fn numkeys_positions(args: &Args, at: usize) -> Vec<usize> {
    let n = match crate::types::number::parse_i64(args.at(at)) {
        Some(n) if n > 0 && (n as usize) < args.len() - at => n as usize,
        _ => return Vec::new(),
    };
    (at + 1..at + 1 + n).collect()
}

/// `Z*STORE dst numkeys key ...`: the destination, then the sources.
fn store_keys(args: &Args) -> Vec<usize> {
    // As Redis's zunionInterDiffStoreGetKeys: a bad numkeys means no keys at all.
    let sources = numkeys_positions(args, 2);
    if sources.is_empty() {
        return sources;
    }
    let mut v = vec![1];
    v.extend(sources);
    v
}

/// The encoding thresholds from the configuration.
pub fn limits(ctx: &Ctx) -> Limits {
    let c = &ctx.srv.config;
    Limits {
        entries: c.zset_max_listpack_entries,
        value: c.zset_max_listpack_value,
    }
}

/// Stores a computed result at `dst` (Redis's `setKey`, dropping any TTL), or
/// deletes `dst` when the result is empty. Replies with the result's size.
pub fn store_result(ctx: &mut Ctx, dst: &[u8], mut z: ZSet, event: &'static str) {
    let n = z.len();
    if n > 0 {
        z.compact_if_small(limits(ctx));
        ctx.db().set(dst, Value::ZSet(Box::new(z)));
        ctx.out().int(n as i64);
        ctx.modified(dst, notify::ZSET, event);
    } else {
        ctx.out().int(0);
        ctx.delete_key(dst);
    }
}

/// Parses a score bound as Redis's `zslParseRange` does: `(` makes it
/// exclusive, the rest goes through `strtod` (leading spaces, `inf`, hex and
/// an empty string are accepted; NaN and trailing bytes are not).
fn parse_score_bound(s: &[u8]) -> Option<(f64, bool)> {
    let (ex, body) = match s.first() {
        Some(b'(') => (true, &s[1..]),
        _ => (false, s),
    };
    let v = strtod_whole(body)?;
    Some((v, ex))
}

/// C's `strtod` over the whole argument (`*eptr == '\0'` required).
pub fn strtod_whole(s: &[u8]) -> Option<f64> {
    if s.is_empty() {
        return Some(0.0);
    }
    let start = s.iter().position(|c| !c.is_ascii_whitespace())?;
    let t = std::str::from_utf8(&s[start..]).ok()?;
    let lower = t.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if lower.len() - body.len() > 1 {
        return None;
    }
    let v = if body.starts_with("0x") {
        crate::types::number::parse_f64(lower.as_bytes()).or_else(|| {
            // Out-of-range hex floats saturate to infinity in strtod.
            Some(if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        })?
    } else {
        if !body.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == 'i') {
            return None;
        }
        lower.parse::<f64>().ok()?
    };
    if v.is_nan() {
        return None;
    }
    Some(v)
}

/// `min max` score bounds, or `ERR min or max is not a float`.
pub fn parse_score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, Error> {
    match (parse_score_bound(min), parse_score_bound(max)) {
        (Some((min, minex)), Some((max, maxex))) => Ok(ScoreRange {
            min,
            max,
            minex,
            maxex,
        }),
        _ => Err(Error::msg("min or max is not a float")),
    }
}

fn parse_lex_bound(s: &[u8]) -> Option<LexBound> {
    match s.first()? {
        b'+' if s.len() == 1 => Some(LexBound::PosInf),
        b'-' if s.len() == 1 => Some(LexBound::NegInf),
        b'(' => Some(LexBound::Excl(s[1..].to_vec())),
        b'[' => Some(LexBound::Incl(s[1..].to_vec())),
        _ => None,
    }
}

/// `min max` lex bounds, or `ERR min or max not valid string range item`.
pub fn parse_lex_range(min: &[u8], max: &[u8]) -> Result<LexRange, Error> {
    match (parse_lex_bound(min), parse_lex_bound(max)) {
        (Some(min), Some(max)) => Ok(LexRange { min, max }),
        _ => Err(Error::msg("min or max not valid string range item")),
    }
}

/// Replies with `n` members from `items`, with scores when asked: a flat
/// array in RESP2, an array of [member, score] pairs in RESP3 (Redis's
/// zrange result handler).
pub fn reply_members<'a>(
    out: &mut Reply,
    n: usize,
    withscores: bool,
    items: impl Iterator<Item = (&'a [u8], f64)>,
) {
    if withscores && !out.resp3() {
        out.array(n * 2);
    } else {
        out.array(n);
    }
    for (m, s) in items.take(n) {
        reply_member(out, withscores, m, s);
    }
}

/// One element of [`reply_members`]'s array.
pub fn reply_member(out: &mut Reply, withscores: bool, m: &[u8], s: f64) {
    if withscores {
        if out.resp3() {
            out.array(2);
        }
        out.bulk(m);
        out.double(s);
    } else {
        out.bulk(m);
    }
}
