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
    by_name: Map<Entry>,
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
            by_name: Map::default(),
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
                let prev = t
                    .by_name
                    .insert(spec.name.as_bytes(), (CmdRef { id, spec }, subs));
                assert!(prev.is_none(), "command {} registered twice", spec.name);
            }
        }
        t
    }

    /// Looks up a top-level command by name, ignoring case.
    #[inline]
    pub fn lookup(&self, name: &[u8]) -> Option<CmdRef> {
        self.entry(name).map(|(c, _)| *c)
    }

    fn entry(&self, name: &[u8]) -> Option<&Entry> {
        let mut buf = [0u8; 32];
        if name.len() > buf.len() {
            return None;
        }
        for (d, s) in buf.iter_mut().zip(name) {
            *d = s.to_ascii_lowercase();
        }
        self.by_name.get(&buf[..name.len()])
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

/// The table, built on first use.
pub fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(Table::build)
}
