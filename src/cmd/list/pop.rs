//! Pops and moves: LPOP/RPOP, LMPOP, LMOVE/RPOPLPUSH and their blocking forms.
//!
//! A blocking command that finds nothing registers the client with
//! [`blocking::block`]; when a push makes one of its keys ready, the command
//! runs again from the top and, finding an element, answers as if it had
//! never waited. Inside MULTI or a script it answers as on timeout.

use super::{fill, positive, push_event};
use crate::command::Args;
use crate::db::Kind;
use crate::error::{CmdResult, Error};
use crate::server::{blocking, notify, Ctx};
use crate::types::list::{End, List};

/// The pop event for an end.
fn pop_event(end: End) -> &'static str {
    match end {
        End::Head => "lpop",
        End::Tail => "rpop",
    }
}

/// The non-blocking pop replicas get for a pop at `end`.
fn pop_name(end: End) -> &'static [u8] {
    match end {
        End::Head => b"LPOP",
        End::Tail => b"RPOP",
    }
}

/// Pops up to `count` elements from the non-empty list at `key`, raising the
/// pop event and, when the list empties, deleting it with `del`.
fn pop_n(ctx: &mut Ctx, key: &[u8], end: End, count: usize) -> Vec<Vec<u8>> {
    let mut vals = Vec::new();
    if let Ok(Some(l)) = ctx.db().write::<List>(key) {
        while vals.len() < count {
            match l.pop(end) {
                Some(v) => vals.push(v),
                None => break,
            }
        }
    }
    ctx.modified_by(key, notify::LIST, pop_event(end), vals.len() as u64);
    ctx.delete_if_empty(key);
    vals
}

/// True when `key` holds a non-empty list; WRONGTYPE for another type.
fn has_elements(ctx: &mut Ctx, key: &[u8]) -> Result<bool, Error> {
    Ok(ctx.db().write::<List>(key)?.is_some_and(|l| !l.is_empty()))
}

/// Redis's shared `left` / `right` objects.
fn end_name(end: End) -> &'static [u8] {
    match end {
        End::Head => b"left",
        End::Tail => b"right",
    }
}

/// `LEFT` or `RIGHT`, else a syntax error.
fn parse_end(arg: &[u8]) -> Result<End, Error> {
    if arg.eq_ignore_ascii_case(b"LEFT") {
        Ok(End::Head)
    } else if arg.eq_ignore_ascii_case(b"RIGHT") {
        Ok(End::Tail)
    } else {
        Err(Error::Syntax)
    }
}

fn pop_generic(ctx: &mut Ctx, args: &mut Args, end: End) -> CmdResult {
    if args.len() > 3 {
        return Err(Error::Arity(ctx.spec.name.into()));
    }
    let key = args.at(1);
    args.set_pos(2);
    let count = if args.len() == 3 {
        Some(positive(args, "value is out of range, must be positive")? as usize)
    } else {
        None
    };
    if ctx.db().write::<List>(key)?.is_none() {
        match count {
            Some(_) => ctx.out().null_array(),
            None => ctx.out().null(),
        }
        return Ok(());
    }
    match count {
        Some(0) => ctx.out().empty_array(),
        Some(n) => {
            let vals = pop_n(ctx, key, end, n);
            let out = ctx.out();
            out.array(vals.len());
            for v in &vals {
                out.bulk(v);
            }
        }
        None => {
            // The list exists, so it holds an element to pop.
            match pop_n(ctx, key, end, 1).first() {
                Some(v) => ctx.out().bulk(v),
                None => ctx.out().null(),
            }
        }
    }
    Ok(())
}

/// ```text
/// LPOP key [count]
/// ```
/// Bulk string or null; with a count, an array or a null array.
pub fn lpop(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    pop_generic(ctx, args, End::Head)
}

/// ```text
/// RPOP key [count]
/// ```
/// Bulk string or null; with a count, an array or a null array.
pub fn rpop(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    pop_generic(ctx, args, End::Tail)
}

/// Moves one element from `src` to `dst` and replies with it (null when
/// `src` is missing). The push event comes first, then the pop and `del`, as
/// in Redis's `lmoveGenericCommand`.
fn move_generic(ctx: &mut Ctx, src: &[u8], dst: &[u8], from: End, to: End) -> CmdResult {
    if !has_elements(ctx, src)? {
        ctx.out().null();
        return Ok(());
    }
    ctx.db().write::<List>(dst)?;
    let fill = fill(ctx);
    // has_elements checked the source holds a non-empty list.
    let Some(v) = ctx.db().write::<List>(src)?.and_then(|l| l.pop(from)) else {
        ctx.out().null();
        return Ok(());
    };
    // The destination's type was checked above, before anything changed.
    let (l, _) = ctx.db().write_or_create(dst, List::new)?;
    l.push(to, &v, fill);
    // One change, as Redis counts a move.
    ctx.modified(dst, notify::LIST, push_event(to));
    ctx.touched(src, notify::LIST, pop_event(from));
    ctx.delete_if_empty(src);
    ctx.out().bulk(&v);
    Ok(())
}

/// ```text
/// LMOVE source destination <LEFT | RIGHT> <LEFT | RIGHT>
/// ```
/// Bulk string: the element moved, or null.
pub fn lmove(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let from = parse_end(args.at(3))?;
    let to = parse_end(args.at(4))?;
    move_generic(ctx, args.at(1), args.at(2), from, to)
}

/// ```text
/// RPOPLPUSH source destination
/// ```
/// Bulk string: the element moved, or null.
pub fn rpoplpush(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    move_generic(ctx, args.at(1), args.at(2), End::Tail, End::Head)
}

/// A parsed `numkeys key... <LEFT | RIGHT> [COUNT count]` tail.
struct Mpop<'a> {
    keys: Vec<&'a [u8]>,
    end: End,
    count: usize,
}

/// Parses LMPOP's arguments from `numkeys` at index `at`.
fn parse_mpop<'a>(args: &Args<'a>, at: usize) -> Result<Mpop<'a>, Error> {
    let numkeys = match crate::types::number::parse_i64(args.at(at)) {
        Some(n) if n > 0 => n as usize,
        _ => return Err(Error::NumKeysPositive),
    };
    let where_idx = at.saturating_add(numkeys).saturating_add(1);
    if where_idx >= args.len() {
        return Err(Error::Syntax);
    }
    let end = parse_end(args.at(where_idx))?;
    let mut count = None;
    let mut j = where_idx + 1;
    while j < args.len() {
        if count.is_none() && args.at(j).eq_ignore_ascii_case(b"COUNT") && j + 1 < args.len() {
            j += 1;
            match crate::types::number::parse_i64(args.at(j)) {
                Some(n) if n > 0 => count = Some(n as usize),
                _ => return Err(Error::CountPositive),
            }
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    Ok(Mpop {
        keys: (at + 1..where_idx).map(|i| args.at(i)).collect(),
        end,
        count: count.unwrap_or(1),
    })
}

/// Key positions after a `numkeys` argument at `at`.
fn numkeys_positions(args: &Args, at: usize) -> Vec<usize> {
    match args.len().checked_sub(at + 1).and_then(|room| {
        let n = crate::types::number::parse_i64(args.at(at))?;
        (n > 0 && n as usize <= room).then_some(n as usize)
    }) {
        Some(n) => (at + 1..at + 1 + n).collect(),
        None => Vec::new(),
    }
}

pub fn lmpop_keys(args: &Args) -> Vec<usize> {
    if args.len() < 2 {
        return Vec::new();
    }
    numkeys_positions(args, 1)
}

pub fn blmpop_keys(args: &Args) -> Vec<usize> {
    if args.len() < 3 {
        return Vec::new();
    }
    numkeys_positions(args, 2)
}

/// Finds the first key holding a non-empty list (WRONGTYPE stops the search).
fn first_ready<'a>(ctx: &mut Ctx, keys: &[&'a [u8]]) -> Result<Option<&'a [u8]>, Error> {
    for &k in keys {
        if has_elements(ctx, k)? {
            return Ok(Some(k));
        }
    }
    Ok(None)
}

/// Pops from the first ready key and replies `[key, [elements]]`;
/// propagated as `[LR]POP key <popped>`.
fn mpop_reply(ctx: &mut Ctx, key: &[u8], end: End, count: usize) {
    let vals = pop_n(ctx, key, end, count);
    let mut n = itoa::Buffer::new();
    ctx.propagate_as(&[pop_name(end), key, n.format(vals.len()).as_bytes()]);
    let out = ctx.out();
    out.array(2);
    out.bulk(key);
    out.array(vals.len());
    for v in &vals {
        out.bulk(v);
    }
}

/// ```text
/// LMPOP numkeys key [key ...] <LEFT | RIGHT> [COUNT count]
/// ```
/// Array `[key, [elements]]`, or a null array when every list is empty.
pub fn lmpop(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let m = parse_mpop(args, 1)?;
    match first_ready(ctx, &m.keys)? {
        Some(k) => mpop_reply(ctx, k, m.end, m.count),
        None => ctx.out().null_array(),
    }
    Ok(())
}

/// Blocks on `keys` (or answers as on timeout inside MULTI and scripts).
fn block_or_null(ctx: &mut Ctx, args: &Args, keys: &[&[u8]], timeout: i64, bulk: bool) {
    if ctx.in_exec {
        if bulk {
            ctx.out().null();
        } else {
            ctx.out().null_array();
        }
        return;
    }
    let keys = keys.iter().map(|&k| Box::<[u8]>::from(k)).collect();
    blocking::block(ctx, keys, Kind::List, timeout, args);
}

fn bpop_generic(ctx: &mut Ctx, args: &mut Args, end: End) -> CmdResult {
    let timeout = blocking::parse_timeout(args.at(args.len() - 1))?;
    let keys: Vec<&[u8]> = (1..args.len() - 1).map(|i| args.at(i)).collect();
    match first_ready(ctx, &keys)? {
        Some(k) => {
            let vals = pop_n(ctx, k, end, 1);
            ctx.propagate_as(&[pop_name(end), k]);
            let out = ctx.out();
            // `k` was found ready (a non-empty list): one element comes out.
            match vals.first() {
                Some(v) => {
                    out.array(2);
                    out.bulk(k);
                    out.bulk(v);
                }
                None => out.null_array(),
            }
        }
        None => block_or_null(ctx, args, &keys, timeout, false),
    }
    Ok(())
}

/// ```text
/// BLPOP key [key ...] timeout
/// ```
/// Array `[key, element]`, or a null array on timeout.
pub fn blpop(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    bpop_generic(ctx, args, End::Head)
}

/// ```text
/// BRPOP key [key ...] timeout
/// ```
/// Array `[key, element]`, or a null array on timeout.
pub fn brpop(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    bpop_generic(ctx, args, End::Tail)
}

/// ```text
/// BLMPOP timeout numkeys key [key ...] <LEFT | RIGHT> [COUNT count]
/// ```
/// Array `[key, [elements]]`, or a null array on timeout.
pub fn blmpop(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    // Redis reads the timeout after numkeys, the direction and COUNT.
    let m = parse_mpop(args, 2)?;
    let timeout = blocking::parse_timeout(args.at(1))?;
    match first_ready(ctx, &m.keys)? {
        Some(k) => mpop_reply(ctx, k, m.end, m.count),
        None => block_or_null(ctx, args, &m.keys, timeout, false),
    }
    Ok(())
}

fn bmove_generic(ctx: &mut Ctx, args: &Args, from: End, to: End, timeout_at: usize) -> CmdResult {
    let timeout = blocking::parse_timeout(args.at(timeout_at))?;
    let (src, dst) = (args.at(1), args.at(2));
    if has_elements(ctx, src)? {
        // Replicas get the non-blocking move: as given when served at once,
        // with Redis's lowercase end names when a push served it later.
        if timeout_at == 3 {
            ctx.propagate_as(&[b"RPOPLPUSH", src, dst]);
        } else if ctx.srv.prop.serving_blocked {
            ctx.propagate_as(&[b"LMOVE", src, dst, end_name(from), end_name(to)]);
        } else {
            ctx.propagate_as(&[b"LMOVE", src, dst, args.at(3), args.at(4)]);
        }
        move_generic(ctx, src, dst, from, to)
    } else {
        block_or_null(ctx, args, &[src], timeout, true);
        Ok(())
    }
}

/// ```text
/// BLMOVE source destination <LEFT | RIGHT> <LEFT | RIGHT> timeout
/// ```
/// Bulk string: the element moved; null (array, in RESP2) on timeout.
pub fn blmove(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let from = parse_end(args.at(3))?;
    let to = parse_end(args.at(4))?;
    bmove_generic(ctx, args, from, to, 5)
}

/// ```text
/// BRPOPLPUSH source destination timeout
/// ```
/// Bulk string: the element moved; null (array, in RESP2) on timeout.
pub fn brpoplpush(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    bmove_generic(ctx, args, End::Tail, End::Head, 3)
}
