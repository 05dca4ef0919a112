//! The command table: every family's specs gathered once, looked up case-insensitively.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::spec::CommandSpec;

/// A resolved command: its spec and the id its stats are kept under.
#[derive(Clone, Copy)]
pub struct CmdRef {
    pub id: usize,
    pub spec: &'static CommandSpec,
}

/// Maps looked up on every request: foldhash, not std's SipHash (names are ours, not an attack surface).
type Map<V> = HashMap<&'static [u8], V, foldhash::fast::FixedState>;

/// A command and its subcommands by (lowercase) name.
type Entry = (CmdRef, Map<CmdRef>);

pub struct Table {
    /// Top-level commands, in registration order.
    entries: Vec<Entry>,
    /// Open-addressing index into `entries` by [`fold_hash`] of the name
    /// (linear probing, `NO_SLOT` for empty). Looked up on every request: the
    /// name is hashed case-folded where it lies and compared with
    /// `eq_ignore_ascii_case`, with no lowercased copy and no call out.
    /// Invariant: its length is a power of two at least twice the number of
    /// entries, so every probe sequence reaches an empty slot.
    slots: Box<[u32]>,
    /// Every command and subcommand, indexed by id.
    pub all: Vec<&'static CommandSpec>,
}

/// Every family's specs, in the order COMMAND lists them.
fn families() -> Vec<&'static [CommandSpec]> {
    crate::cmd::ALL.to_vec()
}

impl Table {
    fn build() -> Table {
        let mut t = Table {
            entries: Vec::new(),
            slots: Box::new([]),
            all: Vec::new(),
        };
        for fam in families() {
            for spec in fam.iter() {
                let id = t.all.len();
                t.all.push(spec);
                let mut subs = Map::default();
                for sub in spec.subcommands {
                    let sid = t.all.len();
                    t.all.push(sub);
                    let short = sub.name.split('|').nth(1).unwrap_or(sub.name);
                    subs.insert(short.as_bytes(), CmdRef { id: sid, spec: sub });
                }
                assert!(
                    t.entry(spec.name.as_bytes()).is_none(),
                    "command {} registered twice",
                    spec.name
                );
                t.entries.push((CmdRef { id, spec }, subs));
                t.index();
            }
        }
        t
    }

    /// Rebuilds `slots` for `entries` when they have outgrown it (doubling,
    /// so registering every command stays linear overall).
    fn index(&mut self) {
        if self.slots.len() >= 2 * self.entries.len() {
            let i = self.entries.len() - 1;
            let name = self.entries[i].0.spec.name.as_bytes();
            let at = self.free_slot(name);
            self.slots[at] = i as u32;
            return;
        }
        let len = (4 * self.entries.len()).next_power_of_two();
        self.slots = vec![NO_SLOT; len].into_boxed_slice();
        for i in 0..self.entries.len() {
            let at = self.free_slot(self.entries[i].0.spec.name.as_bytes());
            self.slots[at] = i as u32;
        }
    }

    /// The first empty slot on `name`'s probe sequence.
    fn free_slot(&self, name: &[u8]) -> usize {
        let mask = self.slots.len() - 1;
        let mut at = fold_hash(name) as usize & mask;
        while self.slots[at] != NO_SLOT {
            at = (at + 1) & mask;
        }
        at
    }

    /// Looks up a top-level command by name, ignoring case.
    #[inline]
    pub fn lookup(&self, name: &[u8]) -> Option<CmdRef> {
        self.entry(name).map(|(c, _)| *c)
    }

    #[inline]
    fn entry(&self, name: &[u8]) -> Option<&Entry> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = fold_hash(name) as usize & mask;
        loop {
            let i = self.slots[at];
            if i == NO_SLOT {
                return None;
            }
            let e = &self.entries[i as usize];
            // Registered names are lowercase: this is the old lowercase-then-compare.
            if e.0.spec.name.as_bytes().eq_ignore_ascii_case(name) {
                return Some(e);
            }
            at = (at + 1) & mask;
        }
    }

    /// Looks up `name|sub`.
    pub fn lookup_sub(&self, name: &[u8], sub: &[u8]) -> Option<CmdRef> {
        let (_, subs) = self.entry(name)?;
        let lower = sub.to_ascii_lowercase();
        subs.get(&lower[..]).copied()
    }

    /// Top-level commands in table order.
    pub fn commands(&self) -> impl Iterator<Item = CmdRef> + '_ {
        self.all
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.name.contains('|'))
            .map(|(id, spec)| CmdRef { id, spec })
    }
}

/// An empty slot of `Table::slots`.
const NO_SLOT: u32 = u32::MAX;

/// FNV-1a over the name with ASCII letters folded to lowercase (`| 0x20`;
/// other bytes may fold together too, which costs a probe, never a wrong
/// match: entries are compared in full).
#[inline]
fn fold_hash(name: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in name {
        h = (h ^ (b | 0x20) as u32).wrapping_mul(0x0100_0193);
    }
    h
}

/// The table, built on first use.
pub fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(Table::build)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command is found by its name in any case, as itself; a name
    /// that is not a command (or only folds like one) is not found.
    #[test]
    fn lookup_ignores_case_and_finds_each_command() {
        let t = table();
        for cmd in t.commands() {
            let lower = cmd.spec.name.as_bytes();
            let upper = cmd.spec.name.to_ascii_uppercase();
            for name in [lower, upper.as_bytes()] {
                let got = t.lookup(name).expect(cmd.spec.name);
                assert_eq!(got.id, cmd.id, "{}", cmd.spec.name);
            }
        }
        assert!(t.lookup(b"GeT").is_some_and(|c| c.spec.name == "get"));
        // "ge\x14" hashes as "ge4" (0x14 | 0x20 == '4'): a probe, not a match.
        for name in [&b""[..], b"gett", b"ge", b"ge\x14", b"nosuchcommand"] {
            assert!(t.lookup(name).is_none(), "{name:?}");
        }
        assert!(t.lookup(&[b'a'; 100]).is_none());
        assert_eq!(
            t.lookup_sub(b"CONFIG", b"GeT").map(|c| c.spec.name),
            Some("config|get")
        );
    }
}
