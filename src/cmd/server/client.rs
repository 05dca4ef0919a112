//! CLIENT: connection introspection and control (ID, SETNAME, GETNAME, SETINFO,
//! LIST, INFO, KILL, PAUSE, UNPAUSE, REPLY, NO-EVICT, NO-TOUCH, UNBLOCK, HELP).

use crate::cmd::tracking;
use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::ClientId;
use crate::error::{CmdResult, Error};
use crate::server::client::{Client, ConnKind, ReplRole, ReplyMode};
use crate::server::client_mem;
use crate::server::{Ctx, Pause, Server};
use crate::types::number::parse_i64;

use super::ADMIN_SUB;

const SUB: u32 = NOSCRIPT | LOADING | STALE;

pub static SUBS: &[CommandSpec] = &[
    CommandSpec::new("client|id", 2, SUB, (0, 0, 0), id),
    CommandSpec::new("client|setname", 3, SUB, (0, 0, 0), setname),
    CommandSpec::new("client|getname", 2, SUB, (0, 0, 0), getname),
    CommandSpec::new("client|setinfo", 4, SUB, (0, 0, 0), setinfo),
    CommandSpec::new("client|list", -2, ADMIN_SUB, (0, 0, 0), list),
    CommandSpec::new("client|info", 2, SUB, (0, 0, 0), info),
    CommandSpec::new("client|kill", -3, ADMIN_SUB, (0, 0, 0), kill),
    CommandSpec::new("client|pause", -3, ADMIN_SUB, (0, 0, 0), pause),
    CommandSpec::new("client|unpause", 2, ADMIN_SUB, (0, 0, 0), unpause),
    CommandSpec::new("client|reply", 3, SUB, (0, 0, 0), reply),
    CommandSpec::new("client|no-evict", 3, ADMIN_SUB, (0, 0, 0), no_evict),
    CommandSpec::new("client|no-touch", 3, SUB, (0, 0, 0), no_touch),
    CommandSpec::new("client|unblock", -3, ADMIN_SUB, (0, 0, 0), unblock),
    CommandSpec::new("client|help", 2, LOADING | STALE, (0, 0, 0), help),
    // Client-side caching (handlers in cmd::tracking).
    CommandSpec::new(
        "client|tracking",
        -3,
        SUB,
        (0, 0, 0),
        tracking::client_tracking,
    ),
    CommandSpec::new(
        "client|caching",
        3,
        SUB,
        (0, 0, 0),
        tracking::client_caching,
    ),
    CommandSpec::new(
        "client|getredir",
        2,
        SUB,
        (0, 0, 0),
        tracking::client_getredir,
    ),
    CommandSpec::new(
        "client|trackinginfo",
        2,
        SUB,
        (0, 0, 0),
        tracking::client_trackinginfo,
    ),
];

const HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "HELP",
    "    Prints this help.",
];

/// ```text
/// CLIENT HELP
/// ```
fn help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::cmd::help_reply(ctx, HELP)
}

/// ```text
/// CLIENT ID
/// ```
/// Integer: this connection's id.
fn id(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let id = ctx.client.id as i64;
    ctx.out().int(id);
    Ok(())
}

/// ```text
/// CLIENT SETNAME name
/// ```
/// `OK`; an empty name removes the name.
fn setname(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let name = args.at(2);
    crate::cmd::connection::validate_client_name(name)?;
    ctx.client.name = (!name.is_empty()).then(|| name.into());
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLIENT GETNAME
/// ```
/// Bulk string, or null when the connection has no name.
fn getname(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    match ctx.client.name.clone() {
        Some(n) => ctx.out().bulk(&n),
        None => ctx.out().null(),
    }
    Ok(())
}

/// ```text
/// CLIENT SETINFO LIB-NAME name | LIB-VER version
/// ```
/// `OK` (Redis 7.2): shown in CLIENT LIST/INFO as `lib-name=` and `lib-ver=`.
fn setinfo(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let attr = args.at(2);
    let val = args.at(3);
    let lib_name = attr.eq_ignore_ascii_case(b"lib-name");
    if !lib_name && !attr.eq_ignore_ascii_case(b"lib-ver") {
        return Err(Error::Msg(
            format!("Unrecognized option '{}'", String::from_utf8_lossy(attr)).into(),
        ));
    }
    if val.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(Error::Msg(
            format!(
                "{} cannot contain spaces, newlines or special characters.",
                String::from_utf8_lossy(attr)
            )
            .into(),
        ));
    }
    let v = (!val.is_empty()).then(|| val.to_vec());
    let lib = ctx.client.lib.get_or_insert_with(Default::default);
    if lib_name {
        lib.name = v;
    } else {
        lib.ver = v;
    }
    ctx.out().ok();
    Ok(())
}

/// Client types for LIST and KILL filters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Type {
    Normal,
    Master,
    Replica,
    PubSub,
}

fn parse_type(b: &[u8]) -> Result<Type, Error> {
    match b.to_ascii_lowercase().as_slice() {
        b"normal" => Ok(Type::Normal),
        b"master" => Ok(Type::Master),
        b"replica" | b"slave" => Ok(Type::Replica),
        b"pubsub" => Ok(Type::PubSub),
        _ => Err(Error::Msg(
            format!("Unknown client type '{}'", String::from_utf8_lossy(b)).into(),
        )),
    }
}

fn type_of(c: &Client) -> Type {
    if c.repl_role == ReplRole::Replica {
        Type::Replica
    } else if c.repl_role == ReplRole::Master {
        Type::Master
    } else if c.subscription_count() > 0 || !c.shard_channels.is_empty() {
        Type::PubSub
    } else {
        Type::Normal
    }
}

/// The local address as CLIENT LIST shows it (`path:0` for unix sockets).
fn laddr(c: &Client) -> String {
    match c.conn_kind {
        ConnKind::Unix => format!("{}:0", c.laddr),
        _ => c.laddr.to_string(),
    }
}

/// One CLIENT LIST line (without the newline), fields as Redis 7.2 prints them.
/// `argv_mem` is the size of the arguments of the command running (the
/// caller's CLIENT LIST/INFO; 0 for the others, whose arguments are freed).
pub fn describe(c: &Client, current: bool, argv_mem: usize) -> String {
    let mut flags = String::new();
    if c.monitor {
        flags.push('O');
    } else if c.repl_role == ReplRole::Replica {
        flags.push('S');
    }
    if c.repl_role == ReplRole::Master {
        flags.push('M');
    }
    if type_of(c) == Type::PubSub {
        flags.push('P');
    }
    if c.multi.is_some() {
        flags.push('x');
    }
    if c.blocked.is_some() {
        flags.push('b');
    }
    if let Some(t) = &c.tracking {
        flags.push('t');
        if t.broken_redir {
            flags.push('R');
        }
        if t.bcast {
            flags.push('B');
        }
    }
    if c.close_after_reply {
        flags.push('c');
    }
    if c.conn_kind == ConnKind::Unix {
        flags.push('U');
    }
    if c.no_evict {
        flags.push('e');
    }
    if c.no_touch {
        flags.push('T');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let multi = c.multi.as_ref().map_or(-1, |m| m.queue.len() as i64);
    let multi_mem = client_mem::multi_mem(c);
    let rbs = c.reply.buf.capacity().max(1024);
    let out = client_mem::output(c);
    let argv_mem = if current { argv_mem } else { 0 };
    let tot_mem = client_mem::usage(c, argv_mem);
    let events = if c.reply.buf.is_empty() || current {
        "r"
    } else {
        "rw"
    };
    // Tracking redirection: -1 when tracking is off, 0 when on without REDIRECT.
    let redir = c.tracking.as_ref().map_or(-1, |t| t.redirect as i64);
    let s = |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).into_owned();
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events={} cmd={} user={} redir={} resp={} lib-name={} lib-ver={}",
        c.id,
        c.addr,
        laddr(c),
        c.fd,
        s(c.name.as_deref()),
        (crate::clock::now_ms() - c.created).max(0) / 1000,
        (crate::clock::now_ms() - c.last_interaction).max(0) / 1000,
        flags,
        c.db,
        c.channels.len(),
        c.patterns.len(),
        c.shard_channels.len(),
        multi,
        c.qbuf,
        // The connection's own buffer's room; while requests run from the
        // shared read buffer, the room Redis's 16 KiB first read would leave.
        if c.qbuf_cap > c.qbuf {
            c.qbuf_cap - c.qbuf
        } else if c.qbuf > 0 {
            16384usize.saturating_sub(c.qbuf)
        } else {
            0
        },
        argv_mem,
        multi_mem,
        rbs,
        rbs,
        out.obl,
        out.oll,
        out.omem,
        tot_mem,
        events,
        c.last_cmd,
        // The master's client has no user: it may do everything.
        if c.repl_role == ReplRole::Master {
            "(superuser)".to_string()
        } else {
            c.user.to_string()
        },
        redir,
        c.reply.resp,
        s(c.lib.as_ref().and_then(|l| l.name.as_deref())),
        s(c.lib.as_ref().and_then(|l| l.ver.as_deref())),
    )
}

/// Calls `f` on every connected client (the current one included), in id order.
pub(crate) fn each_client(
    srv: &Server,
    current: &mut Client,
    mut f: impl FnMut(&mut Client, bool),
) {
    let mut ids: Vec<ClientId> = srv.clients.keys().copied().collect();
    ids.sort_unstable();
    for id in ids {
        let is_current = id == current.id;
        srv.with_client(id, current, |c| f(c, is_current));
    }
}

/// ```text
/// CLIENT LIST [TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID id [id ...]]
/// ```
/// Verbatim string: one line per client.
fn list(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mut ty = None;
    let mut ids: Option<Vec<ClientId>> = None;
    if args.has_more() {
        if args.eat_ci("TYPE") && args.remaining() == 1 {
            ty = Some(parse_type(args.next().unwrap_or_default())?);
        } else if args.eat_ci("ID") && args.remaining() >= 1 {
            let mut v = Vec::new();
            for a in args.by_ref() {
                match parse_i64(a) {
                    Some(n) => v.push(n as ClientId),
                    None => return Err(Error::msg("Invalid client ID")),
                }
            }
            ids = Some(v);
        } else {
            return Err(Error::Syntax);
        }
    }
    // Redis shows the running command as the caller's `cmd=`.
    ctx.client.last_cmd = ctx.spec.name;
    let argv_mem: usize = args.from(0).map(|a| a.len()).sum();
    let mut text = String::new();
    each_client(ctx.srv, ctx.client, |c, cur| {
        if ty.is_some_and(|t| t != type_of(c)) {
            return;
        }
        if ids.as_ref().is_some_and(|v| !v.contains(&c.id)) {
            return;
        }
        text.push_str(&describe(c, cur, argv_mem));
        text.push('\n');
    });
    ctx.out().verbatim(text.as_bytes());
    Ok(())
}

/// ```text
/// CLIENT INFO
/// ```
/// Verbatim string: this connection's CLIENT LIST line.
fn info(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    ctx.client.last_cmd = ctx.spec.name;
    let argv_mem = args.from(0).map(|a| a.len()).sum();
    let mut text = describe(ctx.client, true, argv_mem);
    text.push('\n');
    ctx.out().verbatim(text.as_bytes());
    Ok(())
}

/// ```text
/// CLIENT KILL ip:port
/// CLIENT KILL [ID id] [TYPE type] [USER name] [ADDR ip:port] [LADDR ip:port] [SKIPME yes|no]
/// ```
/// `OK` for the old form (or `ERR No such client`); Integer (clients killed) for the new.
fn kill(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mut id = None;
    let mut ty = None;
    let mut user: Option<Vec<u8>> = None;
    let mut addr: Option<Vec<u8>> = None;
    let mut local: Option<Vec<u8>> = None;
    let mut skipme = true;
    let old_form = args.len() == 3;
    if old_form {
        addr = Some(args.at(2).to_vec());
        skipme = false;
    } else {
        while args.has_more() {
            let opt = args.next().unwrap_or_default();
            let Some(val) = args.next() else {
                return Err(Error::Syntax);
            };
            match opt.to_ascii_lowercase().as_slice() {
                b"id" => match parse_i64(val) {
                    Some(n) if n > 0 => id = Some(n as ClientId),
                    _ => return Err(Error::msg("client-id should be greater than 0")),
                },
                b"type" => ty = Some(parse_type(val)?),
                b"addr" => addr = Some(val.to_vec()),
                b"laddr" => local = Some(val.to_vec()),
                b"user" => {
                    if ctx.srv.acl.get(val).is_none() {
                        return Err(Error::Msg(
                            format!("No such user '{}'", String::from_utf8_lossy(val)).into(),
                        ));
                    }
                    user = Some(val.to_vec());
                }
                b"skipme" => {
                    if val.eq_ignore_ascii_case(b"yes") {
                        skipme = true;
                    } else if val.eq_ignore_ascii_case(b"no") {
                        skipme = false;
                    } else {
                        return Err(Error::Syntax);
                    }
                }
                _ => return Err(Error::Syntax),
            }
        }
    }
    let mut victims = Vec::new();
    each_client(ctx.srv, ctx.client, |c, cur| {
        let hit = id.is_none_or(|i| c.id == i)
            && ty.is_none_or(|t| t == type_of(c))
            && addr
                .as_ref()
                .is_none_or(|a| c.addr.to_string().as_bytes() == a.as_slice())
            && local
                .as_ref()
                .is_none_or(|a| laddr(c).as_bytes() == a.as_slice())
            && user
                .as_ref()
                .is_none_or(|u| c.user.as_bytes() == u.as_slice())
            && !(cur && skipme);
        if hit {
            victims.push(c.id);
        }
    });
    for &v in &victims {
        if v == ctx.client.id {
            ctx.client.close_after_reply = true;
        } else if let Some(cell) = ctx.srv.clients.get(&v) {
            cell.kill.set(true);
            cell.wake.notify_one();
            crate::repl::replica::client_killed(ctx.srv, v);
        }
    }
    if old_form {
        if victims.is_empty() {
            return Err(Error::msg("No such client"));
        }
        ctx.out().ok();
    } else {
        ctx.out().int(victims.len() as i64);
    }
    Ok(())
}

/// ```text
/// CLIENT PAUSE timeout [WRITE|ALL]
/// ```
/// `OK`; commands from all clients (or only writes) wait until the pause ends.
fn pause(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let ms = crate::server::blocking::parse_timeout_ms(args.at(2))?;
    args.set_pos(3);
    let mut write_only = false;
    if args.len() == 4 {
        if args.eat_ci("WRITE") {
            write_only = true;
        } else if !args.eat_ci("ALL") {
            return Err(Error::msg("CLIENT PAUSE mode must be WRITE or ALL"));
        }
    } else if args.len() > 4 {
        return Err(super::wrong_sub_args(args, "CLIENT"));
    }
    // Redis adds without a check: a timeout past the end of the range wraps
    // to an end in the past, and the pause does nothing.
    let until_ms = (crate::clock::real_now_us() / 1000).wrapping_add(ms);
    // A new pause never shortens or weakens one in effect.
    let p = match ctx.srv.pause {
        Some(old) if old.until_ms > crate::clock::real_now_us() / 1000 => Pause {
            until_ms: old.until_ms.max(until_ms),
            write_only: old.write_only && write_only,
        },
        _ => Pause {
            until_ms,
            write_only,
        },
    };
    ctx.srv.pause = Some(p);
    crate::db::hold_expiry_until(p.until_ms);
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLIENT UNPAUSE
/// ```
/// `OK`; waiting commands run.
fn unpause(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    ctx.srv.pause = None;
    crate::db::hold_expiry_until(0);
    let ids: Vec<ClientId> = ctx.srv.clients.keys().copied().collect();
    for id in ids {
        if id != ctx.client.id {
            ctx.srv.wake(id);
        }
    }
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLIENT REPLY ON|OFF|SKIP
/// ```
/// `OK` for ON; nothing for OFF and SKIP (replies are dropped from then on, or for the next command).
fn reply(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if args.eat_ci("ON") {
        ctx.client.reply_mode = ReplyMode::On;
        ctx.out().ok();
    } else if args.eat_ci("OFF") {
        ctx.client.reply_mode = ReplyMode::Off;
    } else if args.eat_ci("SKIP") {
        if ctx.client.reply_mode != ReplyMode::Off {
            ctx.client.reply_mode = ReplyMode::SkipThis;
        }
    } else {
        return Err(Error::Syntax);
    }
    Ok(())
}

/// ON or OFF as a bool, `ERR syntax error` otherwise.
fn on_off(args: &mut Args) -> Result<bool, Error> {
    if args.eat_ci("ON") {
        Ok(true)
    } else if args.eat_ci("OFF") {
        Ok(false)
    } else {
        Err(Error::Syntax)
    }
}

/// ```text
/// CLIENT NO-EVICT ON|OFF
/// ```
/// `OK`.
fn no_evict(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    ctx.client.no_evict = on_off(args)?;
    client_mem::update_if_limited(ctx.srv, ctx.client);
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLIENT NO-TOUCH ON|OFF
/// ```
/// `OK` (Redis 7.2): this client's reads leave keys' access time alone.
fn no_touch(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    ctx.client.no_touch = on_off(args)?;
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
/// ```
/// Integer: 1 when the client was blocked and is now unblocked, else 0.
fn unblock(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if args.len() > 4 {
        return Err(super::wrong_sub_args(args, "CLIENT"));
    }
    let id = args.next_i64()?;
    let mut error = false;
    if args.has_more() {
        if args.eat_ci("ERROR") {
            error = true;
        } else if !args.eat_ci("TIMEOUT") || args.has_more() {
            return Err(Error::msg(
                "CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ));
        }
    }
    let mut done = false;
    if id > 0 && id as ClientId != ctx.client.id {
        if let Some(cell) = ctx.srv.clients.get(&(id as ClientId)).cloned() {
            if let Ok(mut c) = cell.state.try_borrow_mut() {
                if c.blocked.is_some() {
                    if error {
                        let b = crate::server::blocking::unregister(ctx.srv, &mut c);
                        c.reply
                            .error_line("UNBLOCKED client unblocked via CLIENT UNBLOCK");
                        ctx.srv.stats.error("UNBLOCKED".into());
                        // The blocked command failed (Redis's
                        // updateStatsOnUnblock); CLIENT UNBLOCK itself
                        // counts as failed too, as on Redis, for the error
                        // counted during its call.
                        if let Some(b) = b {
                            ctx.srv.stats.cmd(b.id).failed += 1;
                        }
                    } else {
                        crate::server::blocking::time_out(ctx.srv, &mut c);
                    }
                    c.unblocked = true;
                    done = true;
                }
            }
            if done {
                cell.wake.notify_one();
            }
        }
    }
    ctx.out().int(done as i64);
    Ok(())
}
