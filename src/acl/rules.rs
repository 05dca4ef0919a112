//! ACL rules: applying one `ACL SETUSER` word to a user (Redis's
//! `ACLSetUser` and `ACLSetSelector`), with Redis's error for each mistake.

use super::categories;
use super::user::{has_spaces, hash_password, valid_hash, KeyPattern, Selector, User};
use super::user::{KEY_ALL, KEY_READ, KEY_WRITE};
use crate::command::table::{table, CmdRef};

/// Why a rule was refused (Redis's errno values in `ACLSetUser`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// EINVAL
    Syntax,
    /// ENOENT
    UnknownCommand,
    /// EEXIST
    KeyAfterAll,
    /// EISDIR
    ChannelAfterAll,
    /// ENODEV
    NoSuchPassword,
    /// EBADMSG
    BadHash,
    /// ECHILD
    FirstArgOfSub,
}

impl RuleError {
    /// Redis's `ACLSetUserStringError`.
    pub fn message(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::KeyAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::FirstArgOfSub => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

fn is(op: &[u8], word: &str) -> bool {
    op.eq_ignore_ascii_case(word.as_bytes())
}

/// Applies one rule to `u` (`allchannels`: `acl-pubsub-default` is
/// `allchannels`, for `reset` and new selectors). `compile` is left to the caller.
pub fn apply(u: &mut User, op: &[u8], allchannels: bool) -> Result<(), RuleError> {
    if op.is_empty() {
        return Ok(());
    }
    if is(op, "on") {
        u.enabled = true;
    } else if is(op, "off") {
        u.enabled = false;
    } else if is(op, "skip-sanitize-payload") {
        u.skip_sanitize = Some(true);
    } else if is(op, "sanitize-payload") {
        u.skip_sanitize = Some(false);
    } else if is(op, "nopass") {
        u.nopass = true;
        u.passwords.clear();
    } else if is(op, "resetpass") {
        u.nopass = false;
        u.passwords.clear();
    } else if op[0] == b'>' || op[0] == b'#' {
        let h = password_hash(op, b'>')?;
        if !u.passwords.contains(&h) {
            u.passwords.push(h);
        }
        u.nopass = false;
    } else if op[0] == b'<' || op[0] == b'!' {
        let h = password_hash(op, b'<')?;
        let Some(at) = u.passwords.iter().position(|p| *p == h) else {
            return Err(RuleError::NoSuchPassword);
        };
        u.passwords.remove(at);
    } else if op[0] == b'(' && op[op.len() - 1] == b')' {
        let s = selector_from(&op[1..op.len() - 1], allchannels)?;
        u.selectors.push(s);
    } else if is(op, "clearselectors") {
        u.selectors.truncate(1);
    } else if is(op, "reset") {
        u.nopass = false;
        u.passwords.clear();
        let root = u.root_mut();
        root.allkeys = false;
        root.keys.clear();
        root.allchannels = allchannels;
        root.channels.clear();
        u.enabled = false;
        u.skip_sanitize = Some(false);
        u.selectors.truncate(1);
        u.root_mut().set_all(false);
    } else {
        apply_selector(u.root_mut(), op)?;
    }
    Ok(())
}

/// The hash a password rule names: of the clear text after `clear`
/// (`>`/`<`), or the hash itself after `#`/`!`.
fn password_hash(op: &[u8], clear: u8) -> Result<String, RuleError> {
    let rest = &op[1..];
    if op[0] == clear {
        Ok(hash_password(rest))
    } else if valid_hash(rest) {
        Ok(String::from_utf8_lossy(rest).into_owned())
    } else {
        Err(RuleError::BadHash)
    }
}

/// A selector from the words inside `( ... )`, split as Redis's
/// `sdssplitargs` (unbalanced quotes give no words, as there).
fn selector_from(inner: &[u8], allchannels: bool) -> Result<Selector, RuleError> {
    let mut s = Selector::new(false, allchannels);
    let words = crate::resp::inline::split(inner).unwrap_or_default();
    for w in words {
        apply_selector(&mut s, &w)?;
    }
    Ok(s)
}

/// Applies a command, key or channel rule to one selector.
pub fn apply_selector(s: &mut Selector, op: &[u8]) -> Result<(), RuleError> {
    if op.is_empty() {
        return Err(RuleError::Syntax);
    }
    if is(op, "allkeys") || op == b"~*" {
        s.allkeys = true;
        s.keys.clear();
    } else if is(op, "resetkeys") {
        s.allkeys = false;
        s.keys.clear();
    } else if is(op, "allchannels") || op == b"&*" {
        s.allchannels = true;
        s.channels.clear();
    } else if is(op, "resetchannels") {
        s.allchannels = false;
        s.channels.clear();
    } else if is(op, "allcommands") || is(op, "+@all") {
        s.set_all(true);
    } else if is(op, "nocommands") || is(op, "-@all") {
        s.set_all(false);
    } else if op[0] == b'~' || op[0] == b'%' {
        key_pattern(s, op)?;
    } else if op[0] == b'&' {
        if s.allchannels {
            return Err(RuleError::ChannelAfterAll);
        }
        let pat = &op[1..];
        if has_spaces(pat) {
            return Err(RuleError::Syntax);
        }
        if !s.channels.iter().any(|c| c == pat) {
            s.channels.push(pat.to_vec());
        }
        s.allchannels = false;
    } else if op.len() > 1 && op[1] == b'@' && (op[0] == b'+' || op[0] == b'-') {
        let cat = categories::by_name(&op[2..]).ok_or(RuleError::UnknownCommand)?;
        set_category(s, cat, op[0] == b'+');
    } else if op[0] == b'+' {
        allow_command(s, &op[1..])?;
    } else if op[0] == b'-' {
        let cmd = lookup(&op[1..]).ok_or(RuleError::UnknownCommand)?;
        s.change(cmd.id, false);
    } else {
        return Err(RuleError::Syntax);
    }
    Ok(())
}

/// `~pat`, `%R~pat`, `%W~pat`, `%RW~pat`.
fn key_pattern(s: &mut Selector, op: &[u8]) -> Result<(), RuleError> {
    if s.allkeys {
        return Err(RuleError::KeyAfterAll);
    }
    let mut flags = 0;
    let mut offset = 1;
    if op[0] == b'%' {
        while offset < op.len() {
            let c = op[offset].to_ascii_uppercase();
            if c == b'R' && flags & KEY_READ == 0 {
                flags |= KEY_READ;
            } else if c == b'W' && flags & KEY_WRITE == 0 {
                flags |= KEY_WRITE;
            } else if c == b'~' {
                offset += 1;
                break;
            } else {
                return Err(RuleError::Syntax);
            }
            offset += 1;
        }
    } else {
        flags = KEY_ALL;
    }
    // `%~pat` names no access: Redis accepts it and then fails to describe
    // the user (a panic); refused here.
    let pat = op.get(offset..).unwrap_or_default();
    if flags == 0 || has_spaces(pat) {
        return Err(RuleError::Syntax);
    }
    match s.keys.iter_mut().find(|k| k.pattern == pat) {
        Some(k) => k.flags |= flags,
        None => s.keys.push(KeyPattern::new(pat.to_vec(), flags)),
    }
    s.allkeys = false;
    Ok(())
}

/// `+cmd`, `+container|sub`, or `+cmd|first-arg`.
fn allow_command(s: &mut Selector, name: &[u8]) -> Result<(), RuleError> {
    let Some(bar) = name.iter().rposition(|&c| c == b'|') else {
        let cmd = lookup(name).ok_or(RuleError::UnknownCommand)?;
        s.change(cmd.id, true);
        return Ok(());
    };
    let (base, sub) = (&name[..bar], &name[bar + 1..]);
    let cmd = lookup(base).ok_or(RuleError::UnknownCommand)?;
    if cmd.spec.name.contains('|') {
        return Err(RuleError::FirstArgOfSub);
    }
    if sub.is_empty() {
        return Err(RuleError::Syntax);
    }
    if !cmd.spec.subcommands.is_empty() {
        let sub = lookup(name).ok_or(RuleError::UnknownCommand)?;
        s.change(sub.id, true);
        return Ok(());
    }
    let id = cmd.id;
    let at = match s.first_args.iter().position(|(i, _)| *i == id) {
        Some(at) => at,
        None => {
            s.first_args.push((id, Vec::new()));
            s.first_args.len() - 1
        }
    };
    let list = &mut s.first_args[at].1;
    if !list.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
        list.push(sub.to_vec());
    }
    Ok(())
}

/// A command by its ACL name: `get`, `config|get` (any case). Names with
/// more than one `|`, or `|` after a command without subcommands, are none.
pub fn lookup(name: &[u8]) -> Option<CmdRef> {
    let t = table();
    match name.iter().position(|&c| c == b'|') {
        None => t.lookup(name),
        Some(bar) => {
            let (base, sub) = (&name[..bar], &name[bar + 1..]);
            if sub.contains(&b'|') {
                return None;
            }
            t.lookup_sub(base, sub)
        }
    }
}

/// `+@cat` / `-@cat`: every command in the category, and all subcommands
/// of a container in it (Redis's `ACLSetSelectorCommandBitsForCategory`).
pub fn set_category(s: &mut Selector, cat: u32, on: bool) {
    let cats = categories::of_all();
    for (id, &c) in cats.iter().enumerate() {
        if c & cat != 0 {
            s.change(id, on);
        }
    }
}

/// Redis's `ACLMergeSelectorArguments`: a selector written over several
/// arguments (`(~a` `+get)`) becomes one. Err: the index of an opening
/// argument never closed.
pub fn merge_selectors(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, usize> {
    let mut out = Vec::with_capacity(args.len());
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, a) in args.iter().enumerate() {
        // An opening argument starts over even inside an open selector, as in Redis.
        if a.first() == Some(&b'(') && a.last() != Some(&b')') {
            open = Some((i, a.to_vec()));
            continue;
        }
        if let Some((start, mut sel)) = open.take() {
            sel.push(b' ');
            sel.extend_from_slice(a);
            if a.last() == Some(&b')') {
                out.push(sel);
            } else {
                open = Some((start, sel));
            }
            continue;
        }
        out.push(a.to_vec());
    }
    match open {
        Some((i, _)) => Err(i),
        None => Ok(out),
    }
}
