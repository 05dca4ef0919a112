//! Consumer groups: XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP), XACK and XPENDING.

use super::{int_arg, now_ms, parse_bound, parse_id, parse_strict, write_id};
use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{stream as err, CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::stream::{Group, Stream, StreamId, ENTRIES_READ_INVALID};

pub static XGROUP: &[CommandSpec] = &[
    CommandSpec::new("xgroup|create", -5, WRITE | DENYOOM, (2, 2, 1), create),
    CommandSpec::new("xgroup|setid", -5, WRITE, (2, 2, 1), setid),
    CommandSpec::new("xgroup|destroy", 4, WRITE, (2, 2, 1), destroy),
    CommandSpec::new(
        "xgroup|createconsumer",
        5,
        WRITE | DENYOOM,
        (2, 2, 1),
        createconsumer,
    ),
    CommandSpec::new("xgroup|delconsumer", 5, WRITE, (2, 2, 1), delconsumer),
    CommandSpec::new("xgroup|help", 2, LOADING | STALE, (0, 0, 0), help),
];

fn help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::cmd::help_reply(
        ctx,
        &[
            "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
            "HELP",
            "    Prints this help.",
        ],
    )
}

/// XGROUP's options after the id (MKSTREAM for CREATE, ENTRIESREAD for
/// CREATE and SETID): (mkstream, entries_read).
fn options(args: &Args, create: bool, setid: bool) -> Result<(bool, i64), Error> {
    let mut mkstream = false;
    let mut entries_read = ENTRIES_READ_INVALID;
    let mut i = 5;
    while i < args.len() {
        let a = args.at(i);
        if create && a.eq_ignore_ascii_case(b"MKSTREAM") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && a.eq_ignore_ascii_case(b"ENTRIESREAD") && i + 1 < args.len()
        {
            entries_read = int_arg(args.at(i + 1))?;
            if entries_read < 0 && entries_read != ENTRIES_READ_INVALID {
                return Err(Error::msg(err::ENTRIESREAD_INVALID));
            }
            i += 2;
        } else {
            return Err(crate::cmd::server::wrong_sub_args(args, "XGROUP"));
        }
    }
    Ok((mkstream, entries_read))
}

/// The stream and group an XGROUP subcommand works on, with Redis's
/// errors (the key must exist; SETID, CREATECONSUMER and DELCONSUMER need
/// the group).
fn group_of<'a>(ctx: &'a mut Ctx, args: &Args, need_group: bool) -> Result<&'a mut Stream, Error> {
    let (key, g) = (args.at(2), args.at(3));
    let s = ctx
        .db()
        .write::<Stream>(key)?
        .ok_or(Error::msg(err::XGROUP_NO_KEY))?;
    if need_group && !s.groups.contains_key(g) {
        return Err(err::no_group(g, key));
    }
    Ok(s)
}

/// Redis's `signalModifiedKey` alone: WATCH and tracking see the change
/// (no dirty count, no event).
fn signal_modified(ctx: &mut Ctx, key: &[u8]) {
    ctx.db().touch(key);
    if !ctx.srv.tracking.idle() {
        let by = crate::server::tracking::acting_client(ctx.srv, ctx.client);
        crate::server::tracking::invalidate_key(ctx.srv, ctx.client, by, key);
    }
}

/// Counts an XGROUP change and raises its event (Redis does not signal
/// the key as modified for these).
fn changed(ctx: &mut Ctx, event: &'static str, key: &[u8]) {
    ctx.srv.ks.dirty += 1;
    ctx.event(notify::STREAM, event, key);
}

/// ```text
/// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD entries-read]
/// ```
/// `OK`; `BUSYGROUP` when the group exists.
fn create(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, name) = (args.at(2), args.at(3));
    let (mkstream, entries_read) = options(args, true, false)?;
    let exists = ctx.db().write::<Stream>(key)?.is_some();
    if !exists && !mkstream {
        return Err(Error::msg(err::XGROUP_NO_KEY));
    }
    if args.len() > 8 {
        return Err(crate::cmd::server::wrong_sub_args(args, "XGROUP"));
    }
    let last = ctx
        .db()
        .write::<Stream>(key)?
        .map_or(StreamId::MIN, |s| s.last_id);
    let id = if args.at(4) == b"$" {
        last
    } else {
        parse_strict(args.at(4))?
    };
    if !exists {
        ctx.db().write_or_create(key, Stream::new)?;
        signal_modified(ctx, key);
    }
    let s = ctx.db().write::<Stream>(key)?.expect("exists or created");
    if s.groups.contains_key(name) {
        return Err(Error::coded(err::BUSYGROUP));
    }
    s.groups.insert(name.into(), Group::new(id, entries_read));
    changed(ctx, "xgroup-create", key);
    ctx.out().ok();
    Ok(())
}

/// ```text
/// XGROUP SETID key group id|$ [ENTRIESREAD entries-read]
/// ```
/// `OK`.
fn setid(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, name) = (args.at(2), args.at(3));
    let (_, entries_read) = options(args, false, true)?;
    let s = group_of(ctx, args, true)?;
    if args.len() != 5 && args.len() != 7 {
        return Err(crate::cmd::server::wrong_sub_args(args, "XGROUP"));
    }
    let id = if args.at(4) == b"$" {
        s.last_id
    } else {
        parse_id(args.at(4), 0)?
    };
    let g = s.groups.get_mut(name).expect("checked");
    g.last_id = id;
    g.entries_read = entries_read;
    changed(ctx, "xgroup-setid", key);
    ctx.out().ok();
    Ok(())
}

/// ```text
/// XGROUP DESTROY key group
/// ```
/// Integer: 1 when the group was there. Its blocked readers get NOGROUP.
fn destroy(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, name) = (args.at(2), args.at(3));
    let s = group_of(ctx, args, false)?;
    if s.groups.remove(name).is_none() {
        ctx.out().int(0);
        return Ok(());
    }
    changed(ctx, "xgroup-destroy", key);
    ctx.db().signal_ready(key);
    ctx.out().int(1);
    Ok(())
}

/// ```text
/// XGROUP CREATECONSUMER key group consumer
/// ```
/// Integer: 1 when created, 0 when it existed.
fn createconsumer(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, name, consumer) = (args.at(2), args.at(3), args.at(4));
    let now = now_ms();
    let s = group_of(ctx, args, true)?;
    let g = s.groups.get_mut(name).expect("checked");
    let (_, created) = g.consumer_or_create(consumer, now);
    if created {
        changed(ctx, "xgroup-createconsumer", key);
    }
    ctx.out().int(created as i64);
    Ok(())
}

/// ```text
/// XGROUP DELCONSUMER key group consumer
/// ```
/// Integer: the pending entries the consumer had (they are dropped).
fn delconsumer(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, name, consumer) = (args.at(2), args.at(3), args.at(4));
    let s = group_of(ctx, args, true)?;
    let g = s.groups.get_mut(name).expect("checked");
    let pending = g.remove_consumer(consumer);
    if pending.is_some() {
        changed(ctx, "xgroup-delconsumer", key);
    }
    ctx.out().int(pending.unwrap_or(0) as i64);
    Ok(())
}

/// ```text
/// XACK key group id [id ...]
/// ```
/// Integer: entries that were pending and are acknowledged now.
pub fn xack(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, name) = (args.at(1), args.at(2));
    let has_group = match ctx.db().read::<Stream>(key)? {
        Some(s) => s.groups.contains_key(name),
        None => false,
    };
    if !has_group {
        ctx.out().int(0);
        return Ok(());
    }
    let ids = args
        .from(3)
        .map(parse_strict)
        .collect::<Result<Vec<_>, _>>()?;
    let s = ctx.db().write::<Stream>(key)?.expect("checked above");
    let g = s.groups.get_mut(name).expect("checked above");
    let acked = ids.iter().filter(|&&id| g.ack(id)).count();
    ctx.srv.ks.dirty += acked as u64;
    ctx.out().int(acked as i64);
    Ok(())
}

/// ```text
/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
/// ```
/// Summary: [count, first id, last id, [[consumer, count], ...]];
/// extended: [[id, consumer, idle ms, deliveries], ...].
pub fn xpending(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, name) = (args.at(1), args.at(2));
    let argc = args.len();
    let summary = argc == 3;
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(Error::Syntax);
    }
    let mut range = None;
    if argc >= 6 {
        let mut at = 3;
        let mut min_idle = 0;
        if args.at(3).eq_ignore_ascii_case(b"IDLE") {
            min_idle = int_arg(args.at(4))?;
            if argc < 8 {
                return Err(Error::Syntax);
            }
            at += 2;
        }
        let count = int_arg(args.at(at + 2))?.max(0) as usize;
        let start = parse_bound(args.at(at), true)?;
        let end = parse_bound(args.at(at + 1), false)?;
        let consumer = (at + 3 < argc).then(|| args.at(at + 3));
        range = Some((min_idle, start, end, count, consumer));
    }
    let (db, out) = ctx.db_out();
    let g = match db.read::<Stream>(key)? {
        Some(s) => s.groups.get(name),
        None => None,
    };
    let Some(g) = g else {
        return Err(err::no_key_or_group(key, name));
    };
    if summary {
        out.array(4);
        out.int(g.pel.len() as i64);
        match (g.pel.keys().next(), g.pel.keys().next_back()) {
            (Some(&first), Some(&last)) => {
                write_id(out, first);
                write_id(out, last);
                let d = out.deferred();
                let mut n = 0;
                for (cname, c) in &g.consumers {
                    if c.pel.is_empty() {
                        continue;
                    }
                    out.array(2);
                    out.bulk(cname);
                    out.bulk_int(c.pel.len() as i64);
                    n += 1;
                }
                out.end_array(d, n);
            }
            _ => {
                out.null();
                out.null();
                out.null_array();
            }
        }
        return Ok(());
    }
    let (min_idle, start, end, count, consumer) = range.expect("extended form");
    let now = now_ms();
    let ids: Box<dyn Iterator<Item = StreamId>> = match consumer {
        Some(c) => match g.consumers.get(c) {
            Some(c) => Box::new(c.pel.range(start..).copied()),
            None => {
                out.empty_array();
                return Ok(());
            }
        },
        None => Box::new(g.pel.range(start..).map(|(id, _)| *id)),
    };
    let d = out.deferred();
    let mut n = 0;
    if start <= end {
        for id in ids.take_while(|id| *id <= end) {
            if n == count {
                break;
            }
            let nack = &g.pel[&id];
            let idle = now - nack.delivery_time;
            if min_idle != 0 && idle < min_idle {
                continue;
            }
            out.array(4);
            write_id(out, id);
            out.bulk(&nack.consumer);
            out.int(idle.max(0));
            out.int(nack.delivery_count as i64);
            n += 1;
        }
    }
    out.end_array(d, n);
    Ok(())
}
