//! A user written back as rules (ACL LIST, ACL GETUSER, ACL SAVE), the way
//! Redis 7.0's `ACLDescribeUser` writes it.

use super::categories::{self, NAMES};
use super::rules::set_category;
use super::user::{KeyPattern, Selector, User, KEY_ALL, KEY_READ};
use crate::command::table::table;

/// `on nopass #<hash> ~* &* +@all (...)`: flags, hashes, root selector,
/// other selectors in parentheses.
pub fn user(u: &User) -> Vec<u8> {
    let mut out = Vec::new();
    for w in flags(u) {
        out.extend_from_slice(w.as_bytes());
        out.push(b' ');
    }
    for p in &u.passwords {
        out.push(b'#');
        out.extend_from_slice(p.as_bytes());
        out.push(b' ');
    }
    for s in &u.selectors {
        if s.root {
            out.extend_from_slice(&selector(s));
        } else {
            out.extend_from_slice(b" (");
            out.extend_from_slice(&selector(s));
            out.push(b')');
        }
    }
    out
}

/// The flag words set on `u`, in Redis's order.
pub fn flags(u: &User) -> Vec<&'static str> {
    let mut f = Vec::new();
    f.push(if u.enabled { "on" } else { "off" });
    if u.nopass {
        f.push("nopass");
    }
    match u.skip_sanitize {
        Some(true) => f.push("skip-sanitize-payload"),
        Some(false) => f.push("sanitize-payload"),
        None => {}
    }
    f
}

/// `~pat`, `%R~pat` or `%W~pat`.
pub fn key_pattern(out: &mut Vec<u8>, k: &KeyPattern) {
    out.extend_from_slice(match k.flags {
        KEY_ALL => b"~",
        KEY_READ => b"%R~",
        _ => b"%W~",
    });
    out.extend_from_slice(&k.pattern);
}

/// A selector's keys, channels and command rules.
fn selector(s: &Selector) -> Vec<u8> {
    let mut out = Vec::new();
    if s.allkeys {
        out.extend_from_slice(b"~* ");
    } else {
        for k in &s.keys {
            key_pattern(&mut out, k);
            out.push(b' ');
        }
    }
    if s.allchannels {
        out.extend_from_slice(b"&* ");
    } else {
        out.extend_from_slice(b"resetchannels ");
        for c in &s.channels {
            out.push(b'&');
            out.extend_from_slice(c);
            out.push(b' ');
        }
    }
    out.extend_from_slice(command_rules(s).as_bytes());
    out
}

/// Counts the commands of category `cat` allowed (on) and not (off) in `s`.
fn count(s: &Selector, cat: u32) -> (usize, usize) {
    let (mut on, mut off) = (0, 0);
    for (id, &c) in categories::of_all().iter().enumerate() {
        if c & cat != 0 {
            if s.bit(id) {
                on += 1;
            } else {
                off += 1;
            }
        }
    }
    (on, off)
}

/// The command rules of a selector: `+@all` or `-@all`, then the categories
/// that fit best, then single commands (Redis's
/// `ACLDescribeSelectorCommandRules`: rules are applied to a scratch selector
/// as they are written, so each step writes what still differs).
pub fn command_rules(s: &Selector) -> String {
    let additive = !s.future;
    let mut fake = Selector::new(false, false);
    fake.set_all(!additive);
    let mut rules = String::from(if additive { "-@all " } else { "+@all " });
    let mut temp = Selector::new(false, false);
    temp.allowed = s.allowed.clone();
    let mut applied = [false; NAMES.len()];
    loop {
        let mut best = None;
        let (mut mindiff, mut maxsame) = (usize::MAX, 0);
        for (j, done) in applied.iter().enumerate() {
            if *done {
                continue;
            }
            let (on, off) = count(&temp, 1 << j);
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                best = Some(j);
                mindiff = diff;
                maxsame = same;
            }
        }
        let Some(j) = best else { break };
        set_category(&mut fake, 1 << j, additive);
        set_category(&mut temp, 1 << j, !additive);
        rules.push_str(if additive { "+@" } else { "-@" });
        rules.push_str(NAMES[j]);
        rules.push(' ');
        applied[j] = true;
    }
    for (id, spec) in table().all.iter().enumerate() {
        let bit = s.bit(id);
        if bit != fake.bit(id) {
            rules.push(if bit { '+' } else { '-' });
            rules.push_str(spec.name);
            rules.push(' ');
            fake.change(id, bit);
        }
        if !bit {
            if let Some((_, args)) = s.first_args.iter().find(|(i, _)| *i == id) {
                for a in args {
                    rules.push('+');
                    rules.push_str(spec.name);
                    rules.push('|');
                    rules.push_str(&String::from_utf8_lossy(a));
                    rules.push(' ');
                }
            }
        }
    }
    rules.pop();
    rules
}

/// ACL GETUSER's `keys` field: `~*`, or the patterns joined by spaces.
pub fn keys_field(s: &Selector) -> Vec<u8> {
    if s.allkeys {
        return b"~*".to_vec();
    }
    let mut out = Vec::new();
    for (i, k) in s.keys.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        key_pattern(&mut out, k);
    }
    out
}

/// ACL GETUSER's `channels` field: `&*`, or `&pat` joined by spaces.
pub fn channels_field(s: &Selector) -> Vec<u8> {
    if s.allchannels {
        return b"&*".to_vec();
    }
    let mut out = Vec::new();
    for (i, c) in s.channels.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        out.push(b'&');
        out.extend_from_slice(c);
    }
    out
}
