//! ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD (Redis's
//! `zunionInterDiffGenericCommand`). Plain sets are accepted as inputs, every
//! member scoring 1.

use std::collections::HashMap;

use super::*;
use crate::error::CmdResult;
use crate::types::number;
use crate::types::set::Set;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// One input: a sorted set, a plain set, or nothing (a missing key).
enum Src<'a> {
    Missing,
    Z(&'a ZSet),
    S(&'a Set),
}

impl Src<'_> {
    fn len(&self) -> usize {
        match self {
            Src::Missing => 0,
            Src::Z(z) => z.len(),
            Src::S(s) => s.len(),
        }
    }

    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Src::Missing => None,
            Src::Z(z) => z.score(m),
            Src::S(s) => s.contains(m).then_some(1.0),
        }
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], f64) -> bool) {
        match self {
            Src::Missing => {}
            Src::Z(z) => {
                for (m, s) in z.iter() {
                    if !f(m, s) {
                        return;
                    }
                }
            }
            Src::S(s) => {
                for m in s.iter() {
                    if !f(&m.to_bytes(), 1.0) {
                        return;
                    }
                }
            }
        }
    }
}

/// `weight * score`, with NaN (0 * inf) counted as 0 as Redis does.
#[inline]
fn weighted(w: f64, s: f64) -> f64 {
    let v = w * s;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

#[inline]
fn aggregate(acc: &mut f64, v: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *acc += v;
            if acc.is_nan() {
                *acc = 0.0;
            }
        }
        Aggregate::Min => *acc = acc.min(v),
        Aggregate::Max => *acc = acc.max(v),
    }
}

/// The parsed command.
struct Plan {
    op: Op,
    keys: std::ops::Range<usize>,
    weights: Vec<f64>,
    how: Aggregate,
    withscores: bool,
    /// ZINTERCARD's LIMIT (0 = none).
    limit: usize,
}

fn parse(
    ctx: &mut Ctx,
    args: &Args,
    op: Op,
    nk: usize,
    store: bool,
    card: bool,
) -> Result<Plan, Error> {
    let n = number::parse_i64(args.at(nk)).ok_or(Error::NotInteger)?;
    if n < 1 {
        return Err(Error::msg(format!(
            "at least 1 input key is needed for '{}' command",
            ctx.spec.name
        )));
    }
    if n as u64 > (args.len() - nk - 1) as u64 {
        return Err(Error::Syntax);
    }
    let keys = nk + 1..nk + 1 + n as usize;
    // Types are checked before the options, as Redis does.
    for i in keys.clone() {
        let db = ctx.db();
        let v = if store {
            db.get_mut(args.at(i)).map(|v| &*v)
        } else {
            db.get(args.at(i))
        };
        if let Some(v) = v {
            if !matches!(v, Value::ZSet(_) | Value::Set(_)) {
                return Err(Error::WrongType);
            }
        }
    }
    let mut plan = Plan {
        op,
        keys: keys.clone(),
        weights: vec![1.0; n as usize],
        how: Aggregate::Sum,
        withscores: false,
        limit: 0,
    };
    let mut a = Args::new_at(args, keys.end);
    while a.has_more() {
        let rem = a.remaining();
        if op != Op::Diff && !card && rem > n as usize && a.eat_ci("WEIGHTS") {
            for w in plan.weights.iter_mut() {
                *w = number::parse_f64(a.next_or_syntax()?)
                    .ok_or_else(|| Error::msg("weight value is not a float"))?;
            }
        } else if op != Op::Diff && !card && rem >= 2 && a.eat_ci("AGGREGATE") {
            plan.how = if a.eat_ci("SUM") {
                Aggregate::Sum
            } else if a.eat_ci("MIN") {
                Aggregate::Min
            } else if a.eat_ci("MAX") {
                Aggregate::Max
            } else {
                return Err(Error::Syntax);
            };
        } else if !store && !card && a.eat_ci("WITHSCORES") {
            plan.withscores = true;
        } else if card && rem >= 2 && a.eat_ci("LIMIT") {
            match number::parse_i64(a.next_or_syntax()?) {
                Some(l) if l >= 0 => plan.limit = l as usize,
                _ => return Err(Error::msg("LIMIT can't be negative")),
            }
        } else {
            return Err(Error::Syntax);
        }
    }
    Ok(plan)
}

/// The inputs, in argument order.
fn sources<'a>(db: &'a Db, args: &Args, keys: std::ops::Range<usize>) -> Vec<Src<'a>> {
    keys.map(|i| match db.peek(args.at(i)) {
        Some(Value::ZSet(z)) if !db.is_expired(args.at(i)) => Src::Z(z),
        Some(Value::Set(s)) if !db.is_expired(args.at(i)) => Src::S(s),
        _ => Src::Missing,
    })
    .collect()
}

/// Computes the result as a sorted set (plus the longest member, for the encoding).
fn compute(srcs: &[Src], plan: &Plan, limits: Limits) -> ZSet {
    let mut pairs: Vec<(Vec<u8>, f64)> = Vec::new();
    match plan.op {
        Op::Inter => {
            if srcs.iter().all(|s| s.len() > 0) {
                // Smallest input first; the others are probed.
                let mut order: Vec<usize> = (0..srcs.len()).collect();
                order.sort_by_key(|&i| srcs[i].len());
                // numkeys is at least 1, so there is a first input.
                let Some((first, rest)) = order.split_first() else {
                    return ZSet::with_hint(0, 0, limits);
                };
                srcs[*first].for_each(|m, s| {
                    let mut acc = weighted(plan.weights[*first], s);
                    for &j in rest {
                        match srcs[j].score(m) {
                            Some(s2) => {
                                aggregate(&mut acc, weighted(plan.weights[j], s2), plan.how)
                            }
                            None => return true,
                        }
                    }
                    pairs.push((m.to_vec(), acc));
                    true
                });
            }
        }
        Op::Union => {
            let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
            let mut order: Vec<Vec<u8>> = Vec::new();
            for (i, src) in srcs.iter().enumerate() {
                src.for_each(|m, s| {
                    let v = weighted(plan.weights[i], s);
                    match acc.get_mut(m) {
                        Some(cur) => aggregate(cur, v, plan.how),
                        None => {
                            acc.insert(m.to_vec(), v);
                            order.push(m.to_vec());
                        }
                    }
                    true
                });
            }
            pairs = order
                .into_iter()
                .map(|m| {
                    let s = acc[&m];
                    (m, s)
                })
                .collect();
        }
        Op::Diff => {
            srcs[0].for_each(|m, s| {
                if !srcs[1..].iter().any(|o| o.score(m).is_some()) {
                    pairs.push((m.to_vec(), s));
                }
                true
            });
        }
    }
    let maxlen = pairs.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
    let mut z = ZSet::with_hint(pairs.len(), maxlen, limits);
    for (m, s) in pairs {
        z.insert_new(&m, s, limits);
    }
    z
}

fn run(ctx: &mut Ctx, args: &Args, op: Op, store: bool) -> CmdResult {
    let nk = if store { 2 } else { 1 };
    let plan = parse(ctx, args, op, nk, store, false)?;
    let limits = limits(ctx);
    let result = {
        let db = &ctx.srv.ks.dbs[ctx.client.db];
        let srcs = sources(db, args, plan.keys.clone());
        compute(&srcs, &plan, limits)
    };
    if store {
        let event = match op {
            Op::Union => "zunionstore",
            Op::Inter => "zinterstore",
            Op::Diff => "zdiffstore",
        };
        store_result(ctx, args.at(1), result, event);
    } else {
        reply_members(ctx.out(), result.len(), plan.withscores, result.iter());
    }
    Ok(())
}

/// ```text
/// ZUNION numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
/// ```
/// Array of members (with scores: flat in RESP2, pairs in RESP3).
pub fn zunion(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    run(ctx, args, Op::Union, false)
}

/// ```text
/// ZINTER numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
/// ```
/// Array of members (with scores: flat in RESP2, pairs in RESP3).
pub fn zinter(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    run(ctx, args, Op::Inter, false)
}

/// ```text
/// ZDIFF numkeys key [key ...] [WITHSCORES]
/// ```
/// Array of the first set's members that no other input holds.
pub fn zdiff(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    run(ctx, args, Op::Diff, false)
}

/// ```text
/// ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]
/// ```
/// Integer: the size of the stored result.
pub fn zunionstore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    run(ctx, args, Op::Union, true)
}

/// ```text
/// ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]
/// ```
/// Integer: the size of the stored result.
pub fn zinterstore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    run(ctx, args, Op::Inter, true)
}

/// ```text
/// ZDIFFSTORE destination numkeys key [key ...]
/// ```
/// Integer: the size of the stored result.
pub fn zdiffstore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    run(ctx, args, Op::Diff, true)
}

/// ```text
/// ZINTERCARD numkeys key [key ...] [LIMIT limit]
/// ```
/// Integer: the size of the intersection, stopping at LIMIT when it is not 0.
pub fn zintercard(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let plan = parse(ctx, args, Op::Inter, 1, false, true)?;
    let db = &ctx.srv.ks.dbs[ctx.client.db];
    let srcs = sources(db, args, plan.keys.clone());
    let mut n = 0usize;
    if srcs.iter().all(|s| s.len() > 0) {
        let mut order: Vec<usize> = (0..srcs.len()).collect();
        order.sort_by_key(|&i| srcs[i].len());
        // numkeys is at least 1, so there is a first input.
        if let Some((first, rest)) = order.split_first() {
            srcs[*first].for_each(|m, _| {
                if rest.iter().all(|&j| srcs[j].score(m).is_some()) {
                    n += 1;
                    if plan.limit != 0 && n >= plan.limit {
                        return false;
                    }
                }
                true
            });
        }
    }
    ctx.out().int(n as i64);
    Ok(())
}
