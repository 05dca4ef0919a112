//! The slow log: commands that ran longer than `slowlog-log-slower-than`
//! microseconds, newest first, at most `slowlog-max-len` entries; SLOWLOG GET|LEN|RESET|HELP.

use std::collections::VecDeque;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::server::client::Client;
use crate::server::{Ctx, Server};

pub static SUBS: &[CommandSpec] = &[
    CommandSpec::new("slowlog|get", -2, ADMIN | LOADING | STALE, (0, 0, 0), get),
    CommandSpec::new("slowlog|len", 2, ADMIN | LOADING | STALE, (0, 0, 0), len),
    CommandSpec::new(
        "slowlog|reset",
        2,
        ADMIN | LOADING | STALE,
        (0, 0, 0),
        reset,
    ),
    CommandSpec::new("slowlog|help", 2, LOADING | STALE, (0, 0, 0), help),
];

const HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Prints this help.",
];

/// Redis keeps at most this many arguments per entry (the last says how many more).
const MAX_ARGC: usize = 32;
/// ... and at most this many bytes of each argument.
const MAX_ARGLEN: usize = 128;

/// One logged command.
pub struct Entry {
    pub id: u64,
    pub time_unix: i64,
    pub duration_us: i64,
    pub argv: Vec<Vec<u8>>,
    pub peer: String,
    pub name: Vec<u8>,
}

/// The log itself: newest entry at the front.
#[derive(Default)]
pub struct SlowLog {
    pub entries: VecDeque<Entry>,
    pub next_id: u64,
}

impl SlowLog {
    pub fn trim(&mut self, max: usize) {
        self.entries.truncate(max);
    }
}

/// Arguments Redis replaces by `(redacted)` in the slow log and MONITOR:
/// passwords of AUTH, HELLO ... AUTH and MIGRATE ... AUTH/AUTH2, everything
/// after ACL SETUSER, and the values CONFIG SET gives sensitive parameters
/// (masterauth, requirepass, ...).
pub fn redacted(args: &Args) -> Vec<usize> {
    let name = args.at(0);
    let mut out = Vec::new();
    if name.eq_ignore_ascii_case(b"config")
        && args.len() > 2
        && args.at(1).eq_ignore_ascii_case(b"set")
        && args.len().is_multiple_of(2)
    {
        for i in (2..args.len()).step_by(2) {
            let param = crate::config::find_param(&String::from_utf8_lossy(args.at(i)));
            if param.is_some_and(|p| p.flags & crate::config::SENSITIVE != 0) {
                out.push(i + 1);
            }
        }
    } else if name.eq_ignore_ascii_case(b"auth") {
        out.extend(1..args.len());
    } else if name.eq_ignore_ascii_case(b"acl")
        && args.len() > 2
        && args.at(1).eq_ignore_ascii_case(b"setuser")
    {
        out.extend(2..args.len());
    } else if name.eq_ignore_ascii_case(b"hello") || name.eq_ignore_ascii_case(b"migrate") {
        let mut i = 1;
        while i < args.len() {
            let a = args.at(i);
            if a.eq_ignore_ascii_case(b"auth") && name.eq_ignore_ascii_case(b"migrate") {
                out.push(i + 1);
                i += 2;
            } else if a.eq_ignore_ascii_case(b"auth") || a.eq_ignore_ascii_case(b"auth2") {
                out.extend([i + 1, i + 2]);
                i += 3;
            } else {
                i += 1;
            }
        }
        out.retain(|&p| p < args.len());
    }
    out
}

/// Logs a command that took `duration_us` when it passes the threshold
/// (called by dispatch after every command without `skip_slowlog`).
pub fn record(srv: &mut Server, client: &Client, args: &Args, duration_us: i64) {
    let threshold = srv.config.slowlog_log_slower_than;
    if threshold < 0 || duration_us < threshold {
        return;
    }
    let argc = args.len();
    let kept = argc.min(MAX_ARGC);
    let hidden = redacted(args);
    let mut argv = Vec::with_capacity(kept);
    for i in 0..kept {
        if hidden.contains(&i) {
            argv.push(b"(redacted)".to_vec());
            continue;
        }
        if kept < argc && i == kept - 1 {
            argv.push(format!("... ({} more arguments)", argc - kept + 1).into_bytes());
            break;
        }
        let a = args.at(i);
        if a.len() > MAX_ARGLEN {
            let mut v = a[..MAX_ARGLEN].to_vec();
            v.extend_from_slice(format!("... ({} more bytes)", a.len() - MAX_ARGLEN).as_bytes());
            argv.push(v);
        } else {
            argv.push(a.to_vec());
        }
    }
    let log = &mut srv.slowlog;
    let id = log.next_id;
    log.next_id += 1;
    log.entries.push_front(Entry {
        id,
        time_unix: crate::clock::real_now_us() / 1_000_000,
        duration_us,
        argv,
        peer: client.addr.to_string(),
        name: client.name.as_deref().unwrap_or_default().to_vec(),
    });
    let max = srv.config.slowlog_max_len;
    log.trim(max);
}

/// ```text
/// SLOWLOG GET [count]
/// ```
/// Array of entries, newest first: id, unix time, microseconds, arguments,
/// client address, client name. `count` defaults to 10; -1 means all.
fn get(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mut count = 10usize;
    if args.len() > 3 {
        return Err(super::wrong_sub_args(args, "SLOWLOG"));
    }
    if let Some(a) = args.next() {
        match crate::types::number::parse_i64(a) {
            Some(-1) => count = usize::MAX,
            Some(n) if n >= 0 => count = n as usize,
            _ => return Err(Error::msg("count should be greater than or equal to -1")),
        }
    }
    let log = &ctx.srv.slowlog;
    let out = &mut ctx.client.reply;
    let n = count.min(log.entries.len());
    out.array(n);
    for e in log.entries.iter().take(n) {
        out.array(6);
        out.int(e.id as i64);
        out.int(e.time_unix);
        out.int(e.duration_us);
        out.array(e.argv.len());
        for a in &e.argv {
            out.bulk(a);
        }
        out.bulk(e.peer.as_bytes());
        out.bulk(&e.name);
    }
    Ok(())
}

/// ```text
/// SLOWLOG LEN
/// ```
/// Integer: entries in the log.
fn len(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let n = ctx.srv.slowlog.entries.len() as i64;
    ctx.out().int(n);
    Ok(())
}

/// ```text
/// SLOWLOG RESET
/// ```
/// `OK`; the log is emptied (ids keep counting).
fn reset(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    ctx.srv.slowlog.entries.clear();
    ctx.out().ok();
    Ok(())
}

/// ```text
/// SLOWLOG HELP
/// ```
fn help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::cmd::help_reply(ctx, HELP)
}
