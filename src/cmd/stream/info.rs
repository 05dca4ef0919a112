//! XINFO STREAM [FULL [COUNT n]], GROUPS, CONSUMERS and HELP.

use super::{int_arg, now_ms, upto, write_entry, write_id, write_range};
use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{stream as err, CmdResult, Error};
use crate::resp::encode::Reply;
use crate::server::Ctx;
use crate::types::stream::{Group, Stream, StreamId, ENTRIES_READ_INVALID};

pub static XINFO: &[CommandSpec] = &[
    CommandSpec::new("xinfo|consumers", 4, READONLY, (2, 2, 1), consumers),
    CommandSpec::new("xinfo|groups", 3, READONLY, (2, 2, 1), groups),
    CommandSpec::new("xinfo|stream", -3, READONLY, (2, 2, 1), stream),
    CommandSpec::new("xinfo|help", 2, LOADING | STALE, (0, 0, 0), help),
];

fn help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::cmd::help_reply(
        ctx,
        &[
            "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
            "HELP",
            "    Prints this help.",
        ],
    )
}

fn write_entries_read(out: &mut Reply, g: &Group) {
    if g.entries_read != ENTRIES_READ_INVALID {
        out.int(g.entries_read);
    } else {
        out.null();
    }
}

fn write_lag(out: &mut Reply, s: &Stream, g: &Group) {
    match s.group_lag(g) {
        Some(lag) => out.int(lag),
        None => out.null(),
    }
}

/// ```text
/// XINFO CONSUMERS key group
/// ```
/// Array of maps: name, pending, idle.
fn consumers(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (key, name) = (args.at(2), args.at(3));
    let now = now_ms();
    let (db, out) = ctx.db_out();
    let s = db.read::<Stream>(key)?.ok_or(Error::NoSuchKey)?;
    let g = s.groups.get(name).ok_or_else(|| err::no_group(name, key))?;
    out.array(g.consumers.len());
    for (cname, c) in &g.consumers {
        out.map(3);
        out.bulk(b"name");
        out.bulk(cname);
        out.bulk(b"pending");
        out.int(c.pel.len() as i64);
        out.bulk(b"idle");
        out.int((now - c.seen_time).max(0));
    }
    Ok(())
}

/// ```text
/// XINFO GROUPS key
/// ```
/// Array of maps: name, consumers, pending, last-delivered-id, entries-read, lag.
fn groups(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let s = db.read::<Stream>(args.at(2))?.ok_or(Error::NoSuchKey)?;
    out.array(s.groups.len());
    for (name, g) in &s.groups {
        out.map(6);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"consumers");
        out.int(g.consumers.len() as i64);
        out.bulk(b"pending");
        out.int(g.pel.len() as i64);
        out.bulk(b"last-delivered-id");
        write_id(out, g.last_id);
        out.bulk(b"entries-read");
        write_entries_read(out, g);
        out.bulk(b"lag");
        write_lag(out, s, g);
    }
    Ok(())
}

/// ```text
/// XINFO STREAM key [FULL [COUNT count]]
/// ```
/// A map of the stream's metadata with its first and last entries, or
/// with FULL its entries (COUNT, default 10, 0 = all) and every group with
/// its pending entries and consumers.
fn stream(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(2);
    let (db, out) = ctx.db_out();
    let s = db.read::<Stream>(key)?.ok_or(Error::NoSuchKey)?;
    let opts = args.len() - 3;
    let full = opts > 0;
    let mut count: i64 = 10;
    if full {
        if (opts != 1 && opts != 3) || !args.at(3).eq_ignore_ascii_case(b"FULL") {
            return Err(crate::cmd::server::wrong_sub_args(args, "XINFO"));
        }
        if opts == 3 {
            if !args.at(4).eq_ignore_ascii_case(b"COUNT") {
                return Err(crate::cmd::server::wrong_sub_args(args, "XINFO"));
            }
            count = int_arg(args.at(5))?;
            if count < 0 {
                count = 10;
            }
        }
    }
    let count = count as usize;
    out.map(if full { 9 } else { 10 });
    out.bulk(b"length");
    out.int(s.len() as i64);
    out.bulk(b"radix-tree-keys");
    out.int(s.node_count() as i64);
    out.bulk(b"radix-tree-nodes");
    out.int(s.rax_nodes() as i64);
    out.bulk(b"last-generated-id");
    write_id(out, s.last_id);
    out.bulk(b"max-deleted-entry-id");
    write_id(out, s.max_deleted);
    out.bulk(b"entries-added");
    out.int(s.entries_added as i64);
    out.bulk(b"recorded-first-entry-id");
    write_id(out, s.first_id);
    if !full {
        out.bulk(b"groups");
        out.int(s.groups.len() as i64);
        for (name, rev) in [(&b"first-entry"[..], false), (b"last-entry", true)] {
            out.bulk(name);
            match s.range(StreamId::MIN, StreamId::MAX, rev).next() {
                Some(e) => write_entry(out, &e),
                None => out.null(),
            }
        }
        return Ok(());
    }
    out.bulk(b"entries");
    write_range(out, s, StreamId::MIN, StreamId::MAX, count, false);
    out.bulk(b"groups");
    out.array(s.groups.len());
    for (name, g) in &s.groups {
        out.map(7);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"last-delivered-id");
        write_id(out, g.last_id);
        out.bulk(b"entries-read");
        write_entries_read(out, g);
        out.bulk(b"lag");
        write_lag(out, s, g);
        out.bulk(b"pel-count");
        out.int(g.pel.len() as i64);
        out.bulk(b"pending");
        let shown: Vec<_> = g.pel.iter().take(upto(count)).collect();
        out.array(shown.len());
        for (id, n) in shown {
            out.array(4);
            write_id(out, *id);
            out.bulk(&n.consumer);
            out.int(n.delivery_time);
            out.int(n.delivery_count as i64);
        }
        out.bulk(b"consumers");
        out.array(g.consumers.len());
        for (cname, c) in &g.consumers {
            out.map(4);
            out.bulk(b"name");
            out.bulk(cname);
            out.bulk(b"seen-time");
            out.int(c.seen_time);
            out.bulk(b"pel-count");
            out.int(c.pel.len() as i64);
            out.bulk(b"pending");
            let ids: Vec<_> = c.pel.iter().take(upto(count)).collect();
            out.array(ids.len());
            for id in ids {
                let n = &g.pel[id];
                out.array(3);
                write_id(out, *id);
                out.int(n.delivery_time);
                out.int(n.delivery_count as i64);
            }
        }
    }
    Ok(())
}
