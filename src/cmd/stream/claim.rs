//! XCLAIM and XAUTOCLAIM: moving pending entries to another consumer, propagated as idempotent XCLAIMs.

use super::read::{setid_argv, xclaim_argv};
use super::{int_arg_or, now_ms, parse_bound, write_entry, write_id};
use crate::command::Args;
use crate::error::{stream as err, CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::stream::{Group, Nack, Stream, StreamId};

/// NOGROUP unless the stream and its group exist (a read lookup, as Redis's).
fn check_group(ctx: &mut Ctx, key: &[u8], name: &[u8]) -> CmdResult {
    let s = ctx.db().read::<Stream>(key)?;
    if !s.is_some_and(|s| s.groups.contains_key(name)) {
        return Err(err::no_key_or_group(key, name));
    }
    Ok(())
}

/// The group taken out of its stream (put back by [`put_back`]), so that
/// entries can be read while the group changes. Checked to exist.
fn take_group(ctx: &mut Ctx, key: &[u8], name: &[u8]) -> Group {
    let s = ctx
        .db()
        .write::<Stream>(key)
        .ok()
        .flatten()
        .expect("checked");
    s.groups.remove(name).expect("checked")
}

fn put_back(ctx: &mut Ctx, key: &[u8], name: &[u8], g: Group) {
    if let Ok(Some(s)) = ctx.db().write::<Stream>(key) {
        s.groups.insert(name.into(), g);
    }
}

/// Emits what a claim collected: consumer-created events, then the
/// commands that replace it in the propagation stream.
fn finish(ctx: &mut Ctx, key: &[u8], created: bool, props: Vec<Vec<Vec<u8>>>) {
    if created {
        ctx.event(notify::STREAM, "xgroup-createconsumer", key);
    }
    ctx.prevent_propagation();
    for p in &props {
        let v: Vec<&[u8]> = p.iter().map(|x| &x[..]).collect();
        ctx.also_propagate(&v);
    }
}

/// Looks the consumer up (refreshing its seen time) or creates it: true when created.
fn claimer(g: &mut Group, name: &[u8], now: i64) -> bool {
    let (c, created) = g.consumer_or_create(name, now);
    c.seen_time = now;
    created
}

/// ```text
/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
/// ```
/// Array of the claimed entries (ids with JUSTID).
pub fn xclaim(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, gname, cname) = (args.at(1), args.at(2), args.at(3));
    check_group(ctx, key, gname)?;
    let min_idle = int_arg_or(args.at(4), err::XCLAIM_MINIDLE)?.max(0);
    // The ids run until the first argument that is not one.
    let mut ids = Vec::new();
    let mut j = 5;
    while j < args.len() {
        match StreamId::parse(args.at(j), 0, true, false) {
            Some((id, _)) => ids.push((id, args.at(j))),
            None => break,
        }
        j += 1;
    }
    let now = now_ms();
    let (mut force, mut justid) = (false, false);
    let mut delivery: i64 = -1;
    let mut retry: i64 = -1;
    let mut last_id = StreamId::MIN;
    while j < args.len() {
        let more = j + 1 < args.len();
        let opt = args.at(j);
        if opt.eq_ignore_ascii_case(b"FORCE") {
            force = true;
        } else if opt.eq_ignore_ascii_case(b"JUSTID") {
            justid = true;
        } else if opt.eq_ignore_ascii_case(b"IDLE") && more {
            j += 1;
            delivery = now.wrapping_sub(int_arg_or(args.at(j), err::XCLAIM_IDLE)?);
        } else if opt.eq_ignore_ascii_case(b"TIME") && more {
            j += 1;
            delivery = int_arg_or(args.at(j), err::XCLAIM_TIME)?;
        } else if opt.eq_ignore_ascii_case(b"RETRYCOUNT") && more {
            j += 1;
            retry = int_arg_or(args.at(j), err::XCLAIM_RETRYCOUNT)?;
        } else if opt.eq_ignore_ascii_case(b"LASTID") && more {
            j += 1;
            last_id = super::parse_strict(args.at(j))?;
        } else {
            return Err(err::xclaim_option(opt));
        }
        j += 1;
    }
    if delivery < 0 || delivery > now {
        delivery = now;
    }
    let mut g = take_group(ctx, key, gname);
    let mut dirty = 0u64;
    let mut propagate_last_id = false;
    if last_id > g.last_id {
        g.last_id = last_id;
        propagate_last_id = true;
    }
    let mut created = false;
    let mut props = Vec::new();
    {
        let Ctx { srv, client, .. } = &mut *ctx;
        let s: &Stream = srv.ks.dbs[client.db]
            .write::<Stream>(key)?
            .expect("checked");
        let out = &mut client.reply;
        let d = out.deferred();
        let mut n = 0;
        for &(id, raw) in &ids {
            let pending = g.pel.contains_key(&id);
            if s.get(id).is_none() {
                if pending {
                    props.push(xclaim_argv(key, gname, &g, id, raw));
                    propagate_last_id = false;
                    dirty += 1;
                    g.ack(id);
                }
                continue;
            }
            let mut fresh = false;
            if force && !pending {
                g.pel.insert(
                    id,
                    Nack {
                        delivery_time: now,
                        delivery_count: 1,
                        consumer: Box::default(),
                    },
                );
                fresh = true;
            }
            if !pending && !fresh {
                continue;
            }
            if !fresh && min_idle != 0 && now - g.pel[&id].delivery_time < min_idle {
                continue;
            }
            created |= claimer(&mut g, cname, now);
            g.transfer(id, cname);
            let nack = g.pel.get_mut(&id).expect("pending");
            nack.delivery_time = delivery;
            if retry >= 0 {
                nack.delivery_count = retry as u64;
            } else if !justid {
                nack.delivery_count += 1;
            }
            if justid {
                write_id(out, id);
            } else {
                write_entry(out, &s.get(id).expect("exists"));
            }
            n += 1;
            props.push(xclaim_argv(key, gname, &g, id, raw));
            propagate_last_id = false;
            dirty += 1;
        }
        if propagate_last_id {
            props.push(setid_argv(key, gname, &g));
            dirty += 1;
        }
        out.end_array(d, n);
    }
    put_back(ctx, key, gname, g);
    ctx.srv.ks.dirty += dirty + created as u64;
    finish(ctx, key, created, props);
    Ok(())
}

/// ```text
/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
/// ```
/// [next start id, claimed entries (or ids), ids deleted meanwhile (their
/// pending entries are dropped)].
pub fn xautoclaim(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, gname, cname) = (args.at(1), args.at(2), args.at(3));
    let min_idle = int_arg_or(args.at(4), err::XAUTOCLAIM_MINIDLE)?.max(0);
    let start = parse_bound(args.at(5), true)?;
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < args.len() {
        let more = j + 1 < args.len();
        let opt = args.at(j);
        if opt.eq_ignore_ascii_case(b"COUNT") && more {
            // LONG_MAX / max(sizeof(streamID), attempts factor).
            const MAX: i64 = i64::MAX / 16;
            count = match crate::types::number::parse_i64(args.at(j + 1)) {
                Some(c) if (1..=MAX).contains(&c) => c,
                _ => return Err(Error::msg(err::XAUTOCLAIM_COUNT)),
            };
            j += 1;
        } else if opt.eq_ignore_ascii_case(b"JUSTID") {
            justid = true;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    check_group(ctx, key, gname)?;
    let mut g = take_group(ctx, key, gname);
    let now = now_ms();
    let mut attempts = count.saturating_mul(10);
    let mut props = Vec::new();
    let mut deleted = Vec::new();
    let mut created = false;
    let mut dirty = 0u64;
    {
        let Ctx { srv, client, .. } = &mut *ctx;
        let s: &Stream = srv.ks.dbs[client.db]
            .write::<Stream>(key)?
            .expect("checked");
        let out = &mut client.reply;
        out.array(3);
        let mut body = Vec::new();
        let mut claimed = 0;
        // The next PEL id to look at; None once past the last possible id.
        let mut cursor = Some(start);
        let mut eof = false;
        loop {
            if attempts == 0 {
                break;
            }
            attempts -= 1;
            if count == 0 {
                break;
            }
            let Some(id) = cursor.and_then(|c| g.pel.range(c..).next().map(|(k, _)| *k)) else {
                eof = true;
                break;
            };
            cursor = id.next();
            let idb = id.to_bytes();
            if s.get(id).is_none() {
                props.push(xclaim_argv(key, gname, &g, id, &idb));
                dirty += 1;
                g.ack(id);
                deleted.push(id);
                count -= 1;
                continue;
            }
            if min_idle != 0 && now - g.pel[&id].delivery_time < min_idle {
                continue;
            }
            created |= claimer(&mut g, cname, now);
            g.transfer(id, cname);
            let nack = g.pel.get_mut(&id).expect("pending");
            nack.delivery_time = now;
            if !justid {
                nack.delivery_count += 1;
            }
            body.push(id);
            claimed += 1;
            count -= 1;
            props.push(xclaim_argv(key, gname, &g, id, &idb));
            dirty += 1;
        }
        let next = if eof {
            StreamId::MIN
        } else {
            cursor
                .and_then(|c| g.pel.range(c..).next().map(|(k, _)| *k))
                .unwrap_or(StreamId::MIN)
        };
        write_id(out, next);
        out.array(claimed);
        for id in body {
            if justid {
                write_id(out, id);
            } else {
                write_entry(out, &s.get(id).expect("exists"));
            }
        }
        out.array(deleted.len());
        for id in &deleted {
            write_id(out, *id);
        }
    }
    put_back(ctx, key, gname, g);
    ctx.srv.ks.dirty += dirty + created as u64;
    finish(ctx, key, created, props);
    Ok(())
}
