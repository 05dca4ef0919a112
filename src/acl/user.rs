//! An ACL user: its flags, password hashes and selectors (the root one first).

use crate::command::table::table;

/// A key pattern's access: `~` (both), `%R~` (read), `%W~` (write).
pub const KEY_READ: u8 = 1;
pub const KEY_WRITE: u8 = 2;
pub const KEY_ALL: u8 = KEY_READ | KEY_WRITE;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Vec<u8>,
    /// `KEY_READ`, `KEY_WRITE` or both; never 0.
    pub flags: u8,
    /// The pattern is this many literal bytes and one `*` (`key:*`, the
    /// usual shape): matched by a prefix compare, not the glob matcher.
    prefix: Option<usize>,
}

impl KeyPattern {
    pub fn new(pattern: Vec<u8>, flags: u8) -> KeyPattern {
        let prefix = match pattern.split_last() {
            Some((b'*', lit)) if !lit.iter().any(|c| b"*?[]\\".contains(c)) => Some(lit.len()),
            _ => None,
        };
        KeyPattern {
            pattern,
            flags,
            prefix,
        }
    }

    /// The key matches the pattern (Redis's `stringmatchlen`, case-sensitive).
    #[inline]
    pub fn matches(&self, key: &[u8]) -> bool {
        match self.prefix {
            // As Redis 7.0's matcher, `*` does not match an empty key.
            Some(n) => !key.is_empty() && key.starts_with(&self.pattern[..n]),
            None => crate::types::glob::matches(&self.pattern, key, false),
        }
    }
}

/// One set of command, key and channel permissions. A user may run a
/// command when any of its selectors allows all of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    /// The user's own permissions (outside parentheses); always the first.
    pub root: bool,
    pub allkeys: bool,
    pub allchannels: bool,
    /// Every command, checked without the bitset (cleared by any `-cmd`).
    pub allcommands: bool,
    /// Set by `+@all` and cleared only by `-@all`: ACL LIST then starts
    /// from `+@all` (Redis's reserved "future commands" bit).
    pub future: bool,
    /// One bit per command table id: the command may run.
    pub allowed: Vec<u64>,
    /// `+cmd|arg` of a command without subcommands: the first arguments
    /// allowed while the command's bit is clear, by table id (lowercase
    /// compare as in Redis: `strcasecmp`).
    pub first_args: Vec<(usize, Vec<Vec<u8>>)>,
    pub keys: Vec<KeyPattern>,
    pub channels: Vec<Vec<u8>>,
}

impl Selector {
    /// A selector allowing nothing (channels as `acl-pubsub-default` says).
    pub fn new(root: bool, allchannels: bool) -> Selector {
        Selector {
            root,
            allkeys: false,
            allchannels,
            allcommands: false,
            future: false,
            allowed: vec![0; table().all.len().div_ceil(64)],
            first_args: Vec::new(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    #[inline]
    pub fn bit(&self, id: usize) -> bool {
        self.allowed
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    pub fn set_bit(&mut self, id: usize, on: bool) {
        if let Some(w) = self.allowed.get_mut(id / 64) {
            if on {
                *w |= 1 << (id % 64);
            } else {
                *w &= !(1 << (id % 64));
            }
        }
        if !on {
            self.allcommands = false;
        }
    }

    /// Allows or denies a command, and all its subcommands when it has any
    /// (Redis's `ACLChangeSelectorPerm`); its first-args go.
    pub fn change(&mut self, id: usize, on: bool) {
        self.set_bit(id, on);
        self.first_args.retain(|(i, _)| *i != id);
        let spec = table().all[id];
        for (k, _) in spec.subcommands.iter().enumerate() {
            self.set_bit(id + 1 + k, on);
        }
    }

    pub fn set_all(&mut self, on: bool) {
        let fill = if on { u64::MAX } else { 0 };
        self.allowed.iter_mut().for_each(|w| *w = fill);
        self.allcommands = on;
        self.future = on;
        self.first_args.clear();
    }

    /// Allows nothing more than everything: every command, key and channel.
    pub fn unrestricted(&self) -> bool {
        self.allcommands && self.allkeys && self.allchannels
    }
}

/// A user. `flags` words are listed by ACL LIST in Redis's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub enabled: bool,
    pub nopass: bool,
    /// `skip-sanitize-payload` (Some(true)) / `sanitize-payload` (Some(false)).
    pub skip_sanitize: Option<bool>,
    /// SHA-256 hashes, 64 lowercase hex characters each.
    pub passwords: Vec<String>,
    /// The root selector first, then those added with `(...)`.
    pub selectors: Vec<Selector>,
    /// Compiled after each change: the root selector allows everything, so
    /// the gate need not look further.
    pub unrestricted: bool,
}

impl User {
    /// A new user: off, no password, no permissions (Redis's `ACLCreateUser`).
    pub fn new(name: &str, allchannels: bool) -> User {
        User {
            name: name.to_string(),
            enabled: false,
            nopass: false,
            skip_sanitize: None,
            passwords: Vec::new(),
            selectors: vec![Selector::new(true, allchannels)],
            unrestricted: false,
        }
    }

    /// The `default` user as Redis creates it: on, nopass, everything.
    pub fn new_default(allchannels: bool) -> User {
        let mut u = User::new("default", allchannels);
        let root = u.root_mut();
        root.set_all(true);
        root.allkeys = true;
        root.allchannels = true;
        root.channels.clear();
        u.enabled = true;
        u.nopass = true;
        u.compile();
        u
    }

    pub fn root(&self) -> &Selector {
        &self.selectors[0]
    }

    pub fn root_mut(&mut self) -> &mut Selector {
        &mut self.selectors[0]
    }

    /// Recomputes what the gate's fast path reads.
    pub fn compile(&mut self) {
        self.unrestricted = self.root().unrestricted();
    }

    /// True when `password` opens this user (`nopass`, or one of its hashes).
    pub fn password_ok(&self, password: &[u8]) -> bool {
        if self.nopass {
            return true;
        }
        let h = hash_password(password);
        // Every hash is compared in full, matched or not (no early exit
        // tells how far a guess got).
        self.passwords
            .iter()
            .fold(false, |ok, p| same_bytes(p.as_bytes(), h.as_bytes()) | ok)
    }
}

/// Compares two equal-length strings without an early exit.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// SHA-256 of a password as 64 lowercase hex characters (what `#` takes).
pub fn hash_password(password: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(password);
    let mut s = String::with_capacity(64);
    for b in d.iter() {
        s.push(char::from(b"0123456789abcdef"[(b >> 4) as usize]));
        s.push(char::from(b"0123456789abcdef"[(b & 15) as usize]));
    }
    s
}

/// True for a valid `#`/`!` hash: 64 characters of `0-9a-f`.
pub fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// Redis's `ACLStringHasSpaces`: any `isspace` character or NUL.
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r' | 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Passwords are compared as bytes, through their SHA-256 (as Redis).
    #[test]
    fn passwords_compare_as_bytes() {
        let mut u = User::new("u", false);
        u.passwords.push(hash_password(b"\xff\xfe\xfd"));
        assert!(u.password_ok(b"\xff\xfe\xfd"));
        assert!(!u.password_ok("\u{fffd}\u{fffd}\u{fffd}".as_bytes()));
        assert!(!u.password_ok(b"\xff\xfe"));
        u.passwords = vec![hash_password(b"")];
        assert!(u.password_ok(b""));
        assert!(!u.password_ok(b"x"));
        u.nopass = true;
        assert!(u.password_ok(b"anything"));
        // echo -n foo | sha256sum
        assert_eq!(
            hash_password(b"foo"),
            "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
        );
    }
}
