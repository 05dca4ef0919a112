//! OXIDIS FAULT: injected faults (an error reply, a closed connection, a delayed reply) for the next requests that match.
//!
//! Checked by `command::dispatch` for each request read from a client,
//! before the gate (so a fault on AUTH or HELLO works as one on GET), never
//! for OXIDIS itself, nor for commands run by EXEC or scripts (the request
//! that carries them is what a client sees). Matching takes the first fault
//! in the order they were added.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{non_negative, word, wrong};
use crate::command::flags::TEST_CONTROL;
use crate::command::Args;
use crate::db::ClientId;
use crate::error::{CmdResult, Error, TESTCTL_DELAY_RANGE};
use crate::server::client::Client;
use crate::server::{Ctx, Server};

/// The longest DELAY: a day.
const MAX_DELAY_MS: i64 = 86_400_000;

/// Which requests a fault applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    /// The command with this (lowercase) name, or `container|sub`.
    Command(Vec<u8>),
    All,
    /// Requests of the clients with this name (CLIENT SETNAME).
    Client(Vec<u8>),
}

/// What happens to a matching request.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Action {
    /// Answered with this error line (code included), not run.
    Error(Vec<u8>),
    /// The connection is closed without an answer; the request is not run.
    Close,
    /// Run, and its reply (with what follows it) held back this long.
    Delay(u64),
}

#[derive(Clone, Debug)]
struct Fault {
    target: Target,
    action: Action,
    /// Matches left; 0: until cleared.
    left: u64,
}

/// The faults waiting for requests, and replies being held back.
#[derive(Default)]
pub struct Faults {
    list: Vec<Fault>,
    /// Clients whose output waits until the instant (DELAY), taken by the
    /// connection task (`net::conn`) before it writes.
    holds: HashMap<ClientId, Instant>,
}

/// `OXIDIS FAULT <ADD target action [COUNT n]|LIST|CLEAR>`
pub fn command(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let sub = word(args)?;
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    let faults = &mut ctx.srv.testctl.faults;
    if is("add") {
        let f = parse(args)?;
        faults.list.push(f);
        ctx.out().ok();
    } else if args.has_more() {
        return Err(wrong(args));
    } else if is("list") {
        let list = faults.list.clone();
        let out = ctx.out();
        out.array(list.len());
        for f in &list {
            describe(out, f);
        }
    } else if is("clear") {
        faults.list.clear();
        ctx.out().ok();
    } else {
        return Err(wrong(args));
    }
    Ok(())
}

/// `<COMMAND name|ALL|CLIENT name> <ERROR text|CLOSE|DELAY ms> [COUNT n]`
fn parse(args: &mut Args) -> Result<Fault, Error> {
    let named = |args: &mut Args| -> Result<Vec<u8>, Error> {
        args.next().map(|n| n.to_vec()).ok_or(Error::Syntax)
    };
    let target = if args.eat_ci("COMMAND") {
        Target::Command(named(args)?.to_ascii_lowercase())
    } else if args.eat_ci("ALL") {
        Target::All
    } else if args.eat_ci("CLIENT") {
        Target::Client(named(args)?)
    } else {
        return Err(Error::Syntax);
    };
    let action = if args.eat_ci("ERROR") {
        let text = named(args)?;
        if text.is_empty() {
            return Err(Error::Syntax);
        }
        Action::Error(text)
    } else if args.eat_ci("CLOSE") {
        Action::Close
    } else if args.eat_ci("DELAY") {
        if !args.has_more() {
            return Err(Error::Syntax);
        }
        let ms = non_negative(args)?;
        if ms > MAX_DELAY_MS {
            return Err(Error::msg(TESTCTL_DELAY_RANGE));
        }
        Action::Delay(ms as u64)
    } else {
        return Err(Error::Syntax);
    };
    let mut left = 1;
    if args.eat_ci("COUNT") {
        if !args.has_more() {
            return Err(Error::Syntax);
        }
        left = non_negative(args)? as u64;
    }
    if args.has_more() {
        return Err(Error::Syntax);
    }
    Ok(Fault {
        target,
        action,
        left,
    })
}

/// A fault as the arguments of the FAULT ADD that would make it again
/// (COUNT: the matches left).
fn describe(out: &mut crate::resp::encode::Reply, f: &Fault) {
    let mut words: Vec<Vec<u8>> = Vec::new();
    match &f.target {
        Target::Command(n) => words.extend([b"COMMAND".to_vec(), n.clone()]),
        Target::All => words.push(b"ALL".to_vec()),
        Target::Client(n) => words.extend([b"CLIENT".to_vec(), n.clone()]),
    }
    match &f.action {
        Action::Error(t) => words.extend([b"ERROR".to_vec(), t.clone()]),
        Action::Close => words.push(b"CLOSE".to_vec()),
        Action::Delay(ms) => words.extend([b"DELAY".to_vec(), ms.to_string().into_bytes()]),
    }
    words.extend([b"COUNT".to_vec(), f.left.to_string().into_bytes()]);
    out.array(words.len());
    for w in words {
        out.bulk(&w);
    }
}

impl Faults {
    /// True when no fault waits (the dispatcher's one test per request).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Applies the first fault matching a client's request, if any; true when
/// the request must not run (answered with an error, or the connection
/// closes). Called by `command::dispatch` only while faults wait.
pub fn inject(srv: &mut Server, client: &mut Client, args: &Args) -> bool {
    let name = args.at(0);
    if srv
        .config
        .names
        .lookup(name)
        .is_some_and(|c| c.spec.has(TEST_CONTROL))
    {
        return false;
    }
    let faults = &mut srv.testctl.faults;
    let Some(i) = faults
        .list
        .iter()
        .position(|f| matches(&f.target, client, args))
    else {
        return false;
    };
    let f = &mut faults.list[i];
    let action = f.action.clone();
    if f.left > 0 {
        f.left -= 1;
        if f.left == 0 {
            faults.list.remove(i);
        }
    }
    match action {
        Action::Error(text) => {
            client.reply.error_bytes(&text);
            true
        }
        Action::Close => {
            client.close_after_reply = true;
            true
        }
        Action::Delay(ms) => {
            let until = Instant::now() + Duration::from_millis(ms);
            let held = faults.holds.entry(client.id).or_insert(until);
            *held = (*held).max(until);
            false
        }
    }
}

fn matches(target: &Target, client: &Client, args: &Args) -> bool {
    match target {
        Target::All => true,
        Target::Client(n) => client.name.as_deref() == Some(&n[..]),
        Target::Command(n) => {
            let cmd = args.at(0);
            match n.iter().position(|&b| b == b'|') {
                None => cmd.eq_ignore_ascii_case(n),
                Some(bar) => {
                    args.len() > 1
                        && cmd.eq_ignore_ascii_case(&n[..bar])
                        && args.at(1).eq_ignore_ascii_case(&n[bar + 1..])
                }
            }
        }
    }
}

/// The instant until which a client's output is held (DELAY), taken once:
/// the connection task waits for it before writing.
#[inline]
pub fn take_hold(srv: &mut Server, id: ClientId) -> Option<Instant> {
    let holds = &mut srv.testctl.faults.holds;
    if holds.is_empty() {
        return None;
    }
    holds.remove(&id)
}
