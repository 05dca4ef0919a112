//! SORT and SORT_RO over lists, sets and sorted sets (Redis's `sort.c`).

use std::cmp::Ordering;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::{Db, Value};
use crate::error::{CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::list::{End, List};
use crate::types::number::parse_i64;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("sort", -2, WRITE | DENYOOM, (1, 1, 1), sort).with_keys_fn(sort_keys),
    CommandSpec::new("sort_ro", -2, READONLY, (1, 1, 1), sort_ro).with_keys_fn(sort_ro_keys),
];

/// SORT's keys: the sorted key and the last STORE destination (Redis's `sortGetKeys`).
fn sort_keys(args: &Args) -> Vec<usize> {
    let mut keys = vec![1];
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        let a = args.at(i);
        if a.eq_ignore_ascii_case(b"LIMIT") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"GET") || a.eq_ignore_ascii_case(b"BY") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"STORE") && i + 1 < args.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    keys.extend(store);
    keys
}

fn sort_ro_keys(_: &Args) -> Vec<usize> {
    vec![1]
}

/// Parsed SORT options.
struct Opts<'a> {
    desc: bool,
    alpha: bool,
    limit: Option<(i64, i64)>,
    by: Option<&'a [u8]>,
    /// BY given without a `*`: keep the stored order.
    dontsort: bool,
    gets: Vec<&'a [u8]>,
    store: Option<&'a [u8]>,
}

/// `full_key_access`: the user may read every key, which BY (with a `*`)
/// and GET need (Redis refuses them otherwise, as they read keys nobody named).
fn parse<'a>(args: &Args<'a>, readonly: bool, full_key_access: bool) -> Result<Opts<'a>, Error> {
    let mut o = Opts {
        desc: false,
        alpha: false,
        limit: None,
        by: None,
        dontsort: false,
        gets: Vec::new(),
        store: None,
    };
    let mut j = 2;
    while j < args.len() {
        let a = args.at(j);
        let left = args.len() - j - 1;
        if a.eq_ignore_ascii_case(b"ASC") {
            o.desc = false;
        } else if a.eq_ignore_ascii_case(b"DESC") {
            o.desc = true;
        } else if a.eq_ignore_ascii_case(b"ALPHA") {
            o.alpha = true;
        } else if a.eq_ignore_ascii_case(b"LIMIT") && left >= 2 {
            let start = parse_i64(args.at(j + 1)).ok_or(Error::NotInteger)?;
            let count = parse_i64(args.at(j + 2)).ok_or(Error::NotInteger)?;
            o.limit = Some((start, count));
            j += 2;
        } else if !readonly && a.eq_ignore_ascii_case(b"STORE") && left >= 1 {
            o.store = Some(args.at(j + 1));
            j += 1;
        } else if a.eq_ignore_ascii_case(b"BY") && left >= 1 {
            let p = args.at(j + 1);
            o.by = Some(p);
            o.dontsort = !p.contains(&b'*');
            if !o.dontsort && !full_key_access {
                return Err(Error::msg(
                    "BY option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            j += 1;
        } else if a.eq_ignore_ascii_case(b"GET") && left >= 1 {
            if !full_key_access {
                return Err(Error::msg(
                    "GET option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            o.gets.push(args.at(j + 1));
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    Ok(o)
}

/// The value SORT's BY and GET patterns point at for `elem`: `#` is the
/// element itself; otherwise the first `*` is replaced by the element, and a
/// `->field` after it reads a hash field instead of a string. None when the
/// pattern has no `*` or the key or field is missing or of another type.
fn lookup_pattern(db: &mut Db, pattern: &[u8], elem: &[u8], write: bool) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(elem.to_vec());
    }
    let star = pattern.iter().position(|&c| c == b'*')?;
    let after = &pattern[star + 1..];
    let arrow = after
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&i| i + 2 < after.len());
    let (post, field) = match arrow {
        Some(i) => (&after[..i], Some(&after[i + 2..])),
        None => (after, None),
    };
    let mut key = Vec::with_capacity(pattern.len() + elem.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(post);
    let v = if write {
        db.get_mut(&key).map(|v| &*v)
    } else {
        db.get(&key)
    }?;
    match (v, field) {
        (Value::Str(s), None) => Some(s.as_bytes().into_owned()),
        (Value::Hash(h), Some(f)) => h.get(f).map(|v| v.to_vec()),
        _ => None,
    }
}

/// `strtod` as SORT applies it to weights: leading white space is skipped,
/// the empty string is 0, anything left over (or NaN, or a range error) fails.
fn sort_score(b: &[u8]) -> Option<f64> {
    if b.is_empty() {
        return Some(0.0);
    }
    let start = b
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
    crate::types::number::parse_f64(&b[start..])
}

/// One element being sorted, with what it sorts by.
struct Item {
    elem: Vec<u8>,
    score: f64,
    cmp: Option<Vec<u8>>,
}

fn sort_generic(ctx: &mut Ctx, args: &Args, readonly: bool) -> CmdResult {
    let full_key_access = ctx.srv.acl.reads_any_key(&ctx.client.user, ctx.spec, args);
    let mut o = parse(args, readonly, full_key_access)?;
    let key = args.at(1);
    let in_script = ctx.in_script();
    let write = o.store.is_some();
    let db = ctx.db();
    // The elements in stored order; sets in their iteration order.
    let (elems, is_set, ordered) = match db.read_mut(key) {
        None => (Vec::new(), false, true),
        Some(Value::List(l)) => (l.iter().map(|v| v.to_vec()).collect(), false, true),
        Some(Value::Set(s)) => (
            s.iter().map(|m| m.to_bytes().into_owned()).collect(),
            true,
            false,
        ),
        Some(Value::ZSet(z)) => {
            // Redis converts a listpack sorted set for good before sorting it.
            z.convert_to_skiplist();
            (z.iter().map(|(m, _)| m.to_vec()).collect(), false, true)
        }
        Some(_) => return Err(Error::WrongType),
    };
    if o.dontsort && is_set && (write || in_script) {
        // A set's order is not deterministic: force a lexical sort so that
        // replicas and scripts see the same result.
        o.dontsort = false;
        o.alpha = true;
        o.by = None;
    }
    let len = elems.len() as i64;
    let (lstart, lcount) = o.limit.unwrap_or((0, -1));
    let mut start = lstart.max(0);
    let mut end = if lcount < 0 {
        len - 1
    } else {
        start.saturating_add(lcount) - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    let mut items: Vec<Item> = if o.dontsort && ordered {
        // Stored order, honouring DESC, limited to the range directly.
        let n = (end - start + 1).max(0) as usize;
        let it: Box<dyn Iterator<Item = Vec<u8>>> = if o.desc {
            Box::new(elems.into_iter().rev())
        } else {
            Box::new(elems.into_iter())
        };
        let v = it
            .skip(start.max(0) as usize)
            .take(n)
            .map(|elem| Item {
                elem,
                score: 0.0,
                cmp: None,
            })
            .collect();
        end -= start;
        start = 0;
        v
    } else {
        elems
            .into_iter()
            .map(|elem| Item {
                elem,
                score: 0.0,
                cmp: None,
            })
            .collect()
    };
    if !o.dontsort {
        let mut bad_score = false;
        for it in items.iter_mut() {
            let byval = match o.by {
                Some(p) => match lookup_pattern(db, p, &it.elem, write) {
                    Some(v) => Some(v),
                    None => continue,
                },
                None => None,
            };
            if o.alpha {
                it.cmp = byval;
            } else {
                match sort_score(byval.as_deref().unwrap_or(&it.elem)) {
                    Some(s) => it.score = s,
                    None => bad_score = true,
                }
            }
        }
        if bad_score {
            return Err(Error::msg(
                "One or more scores can't be converted into double",
            ));
        }
        let by = o.by.is_some();
        let (alpha, desc) = (o.alpha, o.desc);
        items.sort_by(|a, b| {
            let c = if !alpha {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.elem.cmp(&b.elem))
            } else if by {
                match (&a.cmp, &b.cmp) {
                    (Some(x), Some(y)) => x.cmp(y),
                    (None, None) => Ordering::Equal,
                    (None, _) => Ordering::Less,
                    _ => Ordering::Greater,
                }
            } else {
                a.elem.cmp(&b.elem)
            };
            if desc {
                c.reverse()
            } else {
                c
            }
        });
    }
    let range: &[Item] = if end >= start && start >= 0 {
        &items[start as usize..=end as usize]
    } else {
        &[]
    };
    // What goes out (or into the stored list), in order; None is a missing GET.
    let mut output: Vec<Option<Vec<u8>>> = Vec::new();
    for it in range {
        if o.gets.is_empty() {
            output.push(Some(it.elem.clone()));
        }
        for g in &o.gets {
            output.push(lookup_pattern(db, g, &it.elem, write));
        }
    }
    match o.store {
        None => {
            let out = ctx.out();
            out.array(output.len());
            for v in &output {
                match v {
                    Some(v) => out.bulk(v),
                    None => out.null(),
                }
            }
        }
        Some(dst) => {
            let n = output.len() as i64;
            if n > 0 {
                let fill = super::list::fill(ctx);
                let mut l = List::new();
                for v in &output {
                    l.push(End::Tail, v.as_deref().unwrap_or(b""), fill);
                }
                ctx.db().set(dst, Value::List(l));
                ctx.modified(dst, notify::LIST, "sortstore");
            } else {
                ctx.delete_key(dst);
            }
            ctx.out().int(n);
        }
    }
    Ok(())
}

/// ```text
/// SORT key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]]
///     [ASC | DESC] [ALPHA] [STORE destination]
/// ```
/// Array of elements (or GET results); with STORE, the stored list's length.
fn sort(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    sort_generic(ctx, args, false)
}

/// ```text
/// SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]]
///     [ASC | DESC] [ALPHA]
/// ```
/// Array of elements (or GET results).
fn sort_ro(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    sort_generic(ctx, args, true)
}
