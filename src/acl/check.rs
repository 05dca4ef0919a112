//! The permission check: may this user run this command with these keys
//! and channels (Redis's `ACLCheckAllUserCommandPerm`).

use super::keys::{self, Channels, NEEDS_READ, NEEDS_WRITE};
use super::user::{Selector, User, KEY_READ, KEY_WRITE};
use crate::command::flags;
use crate::command::table::CmdRef;
use crate::command::Args;
use crate::types::glob;

/// Why a command was refused; keys and channels carry the argument index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    Command,
    Key(usize),
    Channel(usize),
}

impl Denied {
    /// Redis's ACL_DENIED_* order, used to pick the error to report.
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(i) => (2, i),
            Denied::Channel(i) => (4, i),
        }
    }
}

/// Checks `cmd` with `args` against every selector of `u`: allowed when one
/// selector allows all of it. Otherwise the denial Redis reports: the
/// command when no selector runs it, else the last key or channel refused.
pub fn check(u: &User, cmd: CmdRef, args: &Args) -> Result<(), Denied> {
    let plan = keys::plan(cmd.id);
    if let [only] = &u.selectors[..] {
        return check_selector(only, cmd, plan, args, &mut None);
    }
    let mut keys = None;
    let mut worst = Denied::Command;
    for s in &u.selectors {
        match check_selector(s, cmd, plan, args, &mut keys) {
            Ok(()) => return Ok(()),
            Err(d) => {
                if d.rank() > worst.rank() {
                    worst = d;
                }
            }
        }
    }
    Err(worst)
}

fn check_selector(
    s: &Selector,
    cmd: CmdRef,
    plan: Option<&keys::Plan>,
    args: &Args,
    keys: &mut Option<keys::KeyList>,
) -> Result<(), Denied> {
    if !s.allcommands && !cmd.spec.has(flags::NO_AUTH) && !s.bit(cmd.id) {
        let idx = if cmd.spec.name.contains('|') { 2 } else { 1 };
        let allowed = args.len() > idx
            && s.first_args.iter().any(|(i, list)| {
                *i == cmd.id && list.iter().any(|a| a.eq_ignore_ascii_case(args.at(idx)))
            });
        if !allowed {
            return Err(Denied::Command);
        }
    }
    if !s.allkeys {
        if let Some(simple) = plan.and_then(|p| p.simple()) {
            if let Some(positions) = simple.positions(args.len()) {
                for pos in positions {
                    if !key_ok(s, args.at(pos), simple.access) {
                        return Err(Denied::Key(pos));
                    }
                }
                return check_channels(s, plan, args);
            }
        }
        let keys = keys.get_or_insert_with(|| keys::keys(cmd.id, cmd.spec, args));
        for &(pos, need) in keys.iter() {
            if !key_ok(s, args.at(pos), need) {
                return Err(Denied::Key(pos));
            }
        }
    }
    check_channels(s, plan, args)
}

fn check_channels(s: &Selector, plan: Option<&keys::Plan>, args: &Args) -> Result<(), Denied> {
    if !s.allchannels {
        if let Some(how) = plan.and_then(|p| p.channels()) {
            let (range, patterns) = match how {
                Channels::Subscribe { patterns } => (1..args.len(), patterns),
                Channels::Publish => (1..args.len().min(2), false),
            };
            for i in range {
                if !channel_ok(&s.channels, args.at(i), patterns) {
                    return Err(Denied::Channel(i));
                }
            }
        }
    }
    Ok(())
}

/// A key against the selector's patterns, with the access it needs.
pub fn key_ok(s: &Selector, key: &[u8], need: u8) -> bool {
    if s.allkeys {
        return true;
    }
    let mut want = 0;
    if need & NEEDS_READ != 0 {
        want |= KEY_READ;
    }
    if need & NEEDS_WRITE != 0 {
        want |= KEY_WRITE;
    }
    s.keys
        .iter()
        .any(|k| k.flags & want == want && k.matches(key))
}

/// A channel against a list of channel patterns: a channel matches by glob,
/// a subscription pattern (PSUBSCRIBE) only as the same literal text.
pub fn channel_ok(list: &[Vec<u8>], channel: &[u8], is_pattern: bool) -> bool {
    list.iter().any(|p| {
        if is_pattern {
            p.as_slice() == channel
        } else {
            glob::matches(p, channel, false)
        }
    })
}

/// True when some selector of `u` allows `channel` (or the pattern).
pub fn user_channel_ok(u: &User, channel: &[u8], is_pattern: bool) -> bool {
    u.selectors
        .iter()
        .any(|s| s.allchannels || channel_ok(&s.channels, channel, is_pattern))
}

/// True when some selector of `u` allows the command and grants `need`
/// (`NEEDS_READ`, ...) on every key, `*` (Redis's
/// `ACLUserCheckCmdWithUnrestrictedKeyAccess`: SORT's BY and GET read keys
/// nobody named).
pub fn unrestricted_key_access(u: &User, cmd: CmdRef, args: &Args, need: u8) -> bool {
    let mut want = 0;
    if need & NEEDS_READ != 0 {
        want |= KEY_READ;
    }
    if need & NEEDS_WRITE != 0 {
        want |= KEY_WRITE;
    }
    let mut keys = None;
    u.selectors.iter().any(|s| {
        check_selector(s, cmd, keys::plan(cmd.id), args, &mut keys).is_ok()
            && (s.allkeys
                || s.keys
                    .iter()
                    .any(|k| k.pattern == b"*" && k.flags & want == want))
    })
}
