//! The set command family.

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::{Db, Typed, Value};
use crate::error::{CmdResult, Error};
use crate::resp::encode::Reply;
use crate::server::{notify, Ctx};
use crate::types::number::parse_i64;
use crate::types::set::{Member, Set};

use super::hash::{rand_count, sample_unique, RandCount};
use super::scan;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("sadd", -3, WRITE | DENYOOM | FAST, (1, 1, 1), sadd),
    CommandSpec::new("srem", -3, WRITE | FAST, (1, 1, 1), srem),
    CommandSpec::new("smembers", 2, READONLY, (1, 1, 1), smembers),
    CommandSpec::new("sismember", 3, READONLY | FAST, (1, 1, 1), sismember),
    CommandSpec::new("smismember", -3, READONLY | FAST, (1, 1, 1), smismember),
    CommandSpec::new("scard", 2, READONLY | FAST, (1, 1, 1), scard),
    CommandSpec::new("spop", -2, WRITE | FAST, (1, 1, 1), spop),
    CommandSpec::new("srandmember", -2, READONLY, (1, 1, 1), srandmember),
    CommandSpec::new("smove", 4, WRITE | FAST, (1, 2, 1), smove),
    CommandSpec::new("sinter", -2, READONLY, (1, -1, 1), sinter),
    CommandSpec::new("sintercard", -3, READONLY, (0, 0, 0), sintercard)
        .with_keys_fn(sintercard_keys),
    CommandSpec::new("sinterstore", -3, WRITE | DENYOOM, (1, -1, 1), sinterstore),
    CommandSpec::new("sunion", -2, READONLY, (1, -1, 1), sunion),
    CommandSpec::new("sunionstore", -3, WRITE | DENYOOM, (1, -1, 1), sunionstore),
    CommandSpec::new("sdiff", -2, READONLY, (1, -1, 1), sdiff),
    CommandSpec::new("sdiffstore", -3, WRITE | DENYOOM, (1, -1, 1), sdiffstore),
    CommandSpec::new("sscan", -3, READONLY, (1, 1, 1), sscan),
];

/// `set-max-intset-entries`.
fn max_ints(ctx: &Ctx) -> usize {
    ctx.srv.config.set_max_intset_entries
}

/// Writes a member as a bulk string.
fn bulk_member(out: &mut Reply, m: Member) {
    match m {
        Member::Int(n) => out.bulk_int(n),
        Member::Bytes(b) => out.bulk(b),
    }
}

/// ```text
/// SADD key member [member ...]
/// ```
/// Integer: members added.
fn sadd(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let max = max_ints(ctx);
    let s = ctx.db().write_or_create(key, Set::new)?.0;
    let mut added = 0;
    for m in args.from(2) {
        added += s.add(m, max) as i64;
    }
    if added > 0 {
        ctx.modified_by(key, notify::SET, "sadd", added as u64);
    }
    ctx.out().int(added);
    Ok(())
}

/// ```text
/// SREM key member [member ...]
/// ```
/// Integer: members removed; the key goes with its last member.
fn srem(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let Some(s) = ctx.db().write::<Set>(key)? else {
        ctx.out().int(0);
        return Ok(());
    };
    let mut n = 0;
    for m in args.from(2) {
        if s.remove(m) {
            n += 1;
            if s.is_empty() {
                break;
            }
        }
    }
    if n > 0 {
        ctx.modified_by(key, notify::SET, "srem", n as u64);
        ctx.delete_if_empty(key);
    }
    ctx.out().int(n);
    Ok(())
}

/// ```text
/// SMEMBERS key
/// ```
/// Set of members (ascending for an intset).
fn smembers(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    match db.read::<Set>(args.at(1))? {
        None => out.set(0),
        Some(s) => {
            out.set(s.len());
            for m in s.iter() {
                bulk_member(out, m);
            }
        }
    }
    Ok(())
}

/// ```text
/// SISMEMBER key member
/// ```
/// Integer: 1 or 0.
fn sismember(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let found = db
        .read::<Set>(args.at(1))?
        .is_some_and(|s| s.contains(args.at(2)));
    out.int(found as i64);
    Ok(())
}

/// ```text
/// SMISMEMBER key member [member ...]
/// ```
/// Array of integers, 1 or 0 each.
fn smismember(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let s = db.read::<Set>(args.at(1))?;
    out.array(args.len() - 2);
    for m in args.from(2) {
        out.int(s.is_some_and(|s| s.contains(m)) as i64);
    }
    Ok(())
}

/// ```text
/// SCARD key
/// ```
/// Integer.
fn scard(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let n = db.read::<Set>(args.at(1))?.map_or(0, |s| s.len());
    out.int(n as i64);
    Ok(())
}

/// ```text
/// SPOP key [count]
/// ```
/// Bulk string or null; with a count, a set of members.
fn spop(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    if args.len() > 3 {
        return Err(Error::Syntax);
    }
    let count = if args.len() == 3 {
        args.set_pos(2);
        Some(super::list::positive(args, "value is out of range, must be positive")? as usize)
    } else {
        None
    };
    let Ctx { srv, client, .. } = &mut *ctx;
    let rng = &mut srv.rng;
    let Some(s) = srv.ks.dbs[client.db].write::<Set>(key)? else {
        match count {
            Some(_) => client.reply.set(0),
            None => client.reply.null(),
        }
        return Ok(());
    };
    let size = s.len();
    let popped: Vec<Vec<u8>> = match count {
        Some(0) => {
            client.reply.set(0);
            return Ok(());
        }
        None => {
            // A stored set is never empty; an empty one pops nothing.
            let m = s
                .random(|| rng.next_u64())
                .map(|m| m.to_bytes().into_owned());
            m.inspect(|m| {
                s.remove(m);
            })
            .into_iter()
            .collect()
        }
        Some(n) => {
            let mut all: Vec<Vec<u8>> = s.iter().map(|m| m.to_bytes().into_owned()).collect();
            if n < all.len() {
                sample_unique(&mut all, n, || rng.next_u64());
            }
            for m in &all {
                s.remove(m);
            }
            all
        }
    };
    ctx.modified_by(key, notify::SET, "spop", popped.len() as u64);
    ctx.delete_if_empty(key);
    // Replicas remove what was popped: SREM per member, or DEL for all.
    match count {
        None => ctx.propagate_as(&[b"SREM", key, &popped[0]]),
        Some(n) if n >= size => ctx.propagate_as(&[b"DEL", key]),
        Some(_) => {
            ctx.prevent_propagation();
            for m in &popped {
                ctx.also_propagate(&[b"SREM", key, m]);
            }
        }
    }
    let out = ctx.out();
    if count.is_some() {
        out.set(popped.len());
        for m in &popped {
            out.bulk(m);
        }
    } else {
        match popped.first() {
            Some(m) => out.bulk(m),
            None => out.null(),
        }
    }
    Ok(())
}

/// ```text
/// SRANDMEMBER key [count]
/// ```
/// Bulk string or null; with a count, an array (negative: repeats allowed).
fn srandmember(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    if args.len() > 3 {
        return Err(Error::Syntax);
    }
    let count = if args.len() == 3 {
        Some(rand_count(args.at(2), false)?)
    } else {
        None
    };
    let cap = ctx.reply_cap();
    let Ctx { srv, client, .. } = &mut *ctx;
    let rng = &mut srv.rng;
    let out = &mut client.reply;
    let s = srv.ks.dbs[client.db].read::<Set>(key)?;
    let Some(count) = count else {
        match s.and_then(|s| s.random(|| rng.next_u64())) {
            Some(m) => bulk_member(out, m),
            None => out.null(),
        }
        return Ok(());
    };
    let Some(s) = s else {
        out.empty_array();
        return Ok(());
    };
    let picked: Vec<Member> = match count {
        RandCount::Repeat(n) => {
            // Streamed: a huge count must not be collected first.
            out.array(n);
            let draw = || s.random(|| rng.next_u64());
            if super::stream_drawn(out, n, cap, draw, bulk_member) {
                ctx.reply_capped();
            }
            return Ok(());
        }
        RandCount::Unique(n) if n >= s.len() => s.iter().collect(),
        RandCount::Unique(n) => {
            let mut all: Vec<Member> = s.iter().collect();
            sample_unique(&mut all, n, || rng.next_u64());
            all
        }
    };
    out.array(picked.len());
    for m in picked {
        bulk_member(out, m);
    }
    Ok(())
}

/// ```text
/// SMOVE source destination member
/// ```
/// Integer: 1 when moved, 0 when not a member of the source.
fn smove(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (src, dst, m) = (args.at(1), args.at(2), args.at(3));
    let max = max_ints(ctx);
    let db = ctx.db();
    // The destination is looked up and checked first, its error given after
    // the source's, as Redis does.
    let dst_checked = db.write::<Set>(dst).map(|_| ());
    let Some(s) = db.write::<Set>(src)? else {
        ctx.out().int(0);
        return Ok(());
    };
    dst_checked?;
    if src == dst {
        let found = s.contains(m);
        ctx.out().int(found as i64);
        return Ok(());
    }
    if !s.remove(m) {
        ctx.out().int(0);
        return Ok(());
    }
    ctx.modified(src, notify::SET, "srem");
    ctx.delete_if_empty(src);
    let added = ctx.db().write_or_create(dst, Set::new)?.0.add(m, max);
    if added {
        ctx.modified(dst, notify::SET, "sadd");
    }
    ctx.out().int(1);
    Ok(())
}

/// Looks every key up (expiring, counting hits) and type-checks them all
/// before any work, as Redis does.
fn check_sets(db: &mut Db, keys: &[&[u8]]) -> Result<(), Error> {
    for &k in keys {
        db.read::<Set>(k)?;
    }
    Ok(())
}

/// The sets at `keys` (already checked), None for missing ones.
fn peek_sets<'a>(db: &'a Db, keys: &[&[u8]]) -> Vec<Option<&'a Set>> {
    keys.iter().map(|k| db.peek(k).and_then(Set::of)).collect()
}

/// Members of the intersection, walking the smallest set, stopping after
/// `limit` members (0: no limit). None when some key is missing.
fn intersect(sets: &[Option<&Set>], limit: usize) -> Vec<Vec<u8>> {
    let Some(mut sets) = sets.iter().copied().collect::<Option<Vec<&Set>>>() else {
        return Vec::new();
    };
    sets.sort_by_key(|s| s.len());
    let Some(smallest) = sets.first().filter(|s| !s.is_empty()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for m in smallest.iter() {
        let b = m.to_bytes();
        if sets[1..].iter().all(|o| o.contains(&b)) {
            out.push(b.into_owned());
            if limit != 0 && out.len() >= limit {
                break;
            }
        }
    }
    out
}

/// Union or difference into a new set (iterated like a real set, so an
/// all-integer result comes out sorted, as Redis's intset does).
fn union_diff(sets: &[Option<&Set>], diff: bool, max: usize) -> Set {
    let mut out = Set::new();
    if diff {
        if let Some(first) = sets[0] {
            for m in first.iter() {
                let b = m.to_bytes();
                if !sets[1..].iter().any(|o| o.is_some_and(|o| o.contains(&b))) {
                    out.add(&b, max);
                }
            }
        }
    } else {
        for s in sets.iter().flatten() {
            for m in s.iter() {
                out.add(&m.to_bytes(), max);
            }
        }
    }
    out
}

/// Which set operation a command performs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The result of `op` over the sets at `keys`, as a set value.
fn compute(ctx: &mut Ctx, keys: &[&[u8]], op: Op) -> Result<Set, Error> {
    let max = max_ints(ctx);
    let db = ctx.db();
    check_sets(db, keys)?;
    let sets = peek_sets(db, keys);
    Ok(match op {
        Op::Inter => {
            let mut s = Set::new();
            for m in intersect(&sets, 0) {
                s.add(&m, max);
            }
            s
        }
        Op::Union => union_diff(&sets, false, max),
        Op::Diff => union_diff(&sets, true, max),
    })
}

fn op_reply(ctx: &mut Ctx, args: &Args, op: Op) -> CmdResult {
    let keys: Vec<&[u8]> = args.from(1).collect();
    if op == Op::Inter {
        // Intersection replies in the smallest set's order, not a rebuilt set's.
        let db = ctx.db();
        check_sets(db, &keys)?;
        let members = intersect(&peek_sets(db, &keys), 0);
        let out = ctx.out();
        out.set(members.len());
        for m in &members {
            out.bulk(m);
        }
        return Ok(());
    }
    let s = compute(ctx, &keys, op)?;
    let out = ctx.out();
    out.set(s.len());
    for m in s.iter() {
        bulk_member(out, m);
    }
    Ok(())
}

fn op_store(ctx: &mut Ctx, args: &Args, op: Op, event: &'static str) -> CmdResult {
    let dst = args.at(1);
    let keys: Vec<&[u8]> = args.from(2).collect();
    let s = compute(ctx, &keys, op)?;
    let n = s.len() as i64;
    if n > 0 {
        ctx.db().set(dst, Value::Set(Box::new(s)));
        ctx.modified(dst, notify::SET, event);
    } else {
        ctx.delete_key(dst);
    }
    ctx.out().int(n);
    Ok(())
}

/// ```text
/// SINTER key [key ...]
/// ```
/// Set of members.
fn sinter(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    op_reply(ctx, args, Op::Inter)
}

/// ```text
/// SUNION key [key ...]
/// ```
/// Set of members.
fn sunion(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    op_reply(ctx, args, Op::Union)
}

/// ```text
/// SDIFF key [key ...]
/// ```
/// Set of members.
fn sdiff(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    op_reply(ctx, args, Op::Diff)
}

/// ```text
/// SINTERSTORE destination key [key ...]
/// ```
/// Integer: the size of the stored result (an empty one deletes the destination).
fn sinterstore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    op_store(ctx, args, Op::Inter, "sinterstore")
}

/// ```text
/// SUNIONSTORE destination key [key ...]
/// ```
/// Integer: the size of the stored result.
fn sunionstore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    op_store(ctx, args, Op::Union, "sunionstore")
}

/// ```text
/// SDIFFSTORE destination key [key ...]
/// ```
/// Integer: the size of the stored result.
fn sdiffstore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    op_store(ctx, args, Op::Diff, "sdiffstore")
}

fn sintercard_keys(args: &Args) -> Vec<usize> {
    match args.len().checked_sub(2).and_then(|room| {
        let n = parse_i64(args.at(1))?;
        (n > 0 && n as usize <= room).then_some(n as usize)
    }) {
        Some(n) => (2..2 + n).collect(),
        None => Vec::new(),
    }
}

/// ```text
/// SINTERCARD numkeys key [key ...] [LIMIT limit]
/// ```
/// Integer: the intersection's size, capped at LIMIT when given (0: no cap).
fn sintercard(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let numkeys = match parse_i64(args.at(1)) {
        Some(n) if n > 0 => n as usize,
        _ => return Err(Error::NumKeysPositive),
    };
    if numkeys > args.len() - 2 {
        return Err(Error::msg(
            "Number of keys can't be greater than number of args",
        ));
    }
    let mut limit = 0usize;
    args.set_pos(2 + numkeys);
    while let Some(opt) = args.next() {
        if opt.eq_ignore_ascii_case(b"LIMIT") && args.has_more() {
            limit = super::list::positive(args, "LIMIT can't be negative")? as usize;
        } else {
            return Err(Error::Syntax);
        }
    }
    let keys: Vec<&[u8]> = (2..2 + numkeys).map(|i| args.at(i)).collect();
    let db = ctx.db();
    check_sets(db, &keys)?;
    let n = intersect(&peek_sets(db, &keys), limit).len();
    ctx.out().int(n as i64);
    Ok(())
}

/// ```text
/// SSCAN key cursor [MATCH pattern] [COUNT count]
/// ```
/// Array: next cursor, then an array of members.
fn sscan(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let cursor = scan::parse_cursor(args.at(2))?;
    let (db, out) = ctx.db_out();
    let Some(s) = db.read::<Set>(args.at(1))? else {
        scan::reply::<&[u8]>(out, 0, &[]);
        return Ok(());
    };
    let o = scan::parse_opts(args, 3, false)?;
    let mut items = Vec::new();
    let cursor = scan::walk(cursor, o.count, |c, n| {
        s.scan(c, |m| {
            *n += 1;
            let b = m.to_bytes();
            if o.keeps(&b) {
                items.push(b.into_owned());
            }
        })
    });
    scan::reply(out, cursor, &items);
    Ok(())
}
