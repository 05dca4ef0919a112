//! The names commands answer to: the table's, changed by redis.conf's `rename-command` lines.
//!
//! Redis renames in its command dict (`server.commands`) and keeps the
//! original dict for ACL rules and its own internal calls. Here the table
//! keeps the original names (what ACL rules, blocking and propagation look
//! up) and [`Names`] holds the changes: every lookup by a name a client,
//! script or AOF gave goes through it. A renamed command keeps its spec, so
//! its full name (COMMAND INFO, CLIENT LIST `cmd=`, arity errors, INFO
//! commandstats) stays the original one, as in Redis.

use std::collections::HashMap;

use super::table::{table, CmdRef};

/// The renames of one server, from its config (empty: every command under
/// its own name).
#[derive(Clone, Debug, Default)]
pub struct Names {
    /// Lowercase names `rename-command` changed: the original name of the
    /// top-level command now under that name, or `None` for a name taken away.
    /// Names not in it answer as in the table.
    changed: HashMap<Vec<u8>, Option<&'static str>>,
}

impl Names {
    /// The top-level command under `name` (any case).
    #[inline]
    pub fn lookup(&self, name: &[u8]) -> Option<CmdRef> {
        if self.changed.is_empty() {
            return table().lookup(name);
        }
        self.lookup_changed(name)
    }

    #[cold]
    fn lookup_changed(&self, name: &[u8]) -> Option<CmdRef> {
        match self.changed.get(&name.to_ascii_lowercase()) {
            Some(Some(orig)) => table().lookup(orig.as_bytes()),
            Some(None) => None,
            None => table().lookup(name),
        }
    }

    /// A subcommand of the container `cmd` (found by [`Names::lookup`]).
    pub fn sub(cmd: CmdRef, sub: &[u8]) -> Option<CmdRef> {
        table().lookup_sub(cmd.spec.name.as_bytes(), sub)
    }

    /// A command named `name` or `container|sub`, exactly (Redis's
    /// `lookupCommandBySds`: COMMAND INFO and DOCS, LATENCY HISTOGRAM): a
    /// `|` after a command without subcommands names nothing.
    pub fn lookup_path(&self, path: &[u8]) -> Option<CmdRef> {
        let mut parts = path.split(|&c| c == b'|');
        let base = self.lookup(parts.next()?)?;
        match (parts.next(), parts.next()) {
            (None, _) => Some(base),
            (Some(sub), None) if !base.spec.subcommands.is_empty() => Self::sub(base, sub),
            _ => None,
        }
    }

    /// `rename-command from to`: the command under `from` answers to `to`
    /// instead, or to nothing when `to` is empty. The error is Redis's text.
    /// `from` is looked up as Redis does (`container|sub` too), but only a
    /// top-level command can move (Redis 7.0.15 fails an assertion on a
    /// subcommand).
    pub fn rename(&mut self, from: &[u8], to: &[u8]) -> Result<(), &'static str> {
        let Some(cmd) = self
            .lookup_path(from)
            .filter(|c| !c.spec.name.contains('|'))
        else {
            return Err("No such command in rename-command");
        };
        self.changed.insert(from.to_ascii_lowercase(), None);
        if to.is_empty() {
            return Ok(());
        }
        if self.lookup(to).is_some() {
            return Err("Target command name already exists");
        }
        self.changed
            .insert(to.to_ascii_lowercase(), Some(cmd.spec.name));
        Ok(())
    }

    /// True when the top-level command `cmd` answers to some name: COMMAND,
    /// COMMAND COUNT, LIST and DOCS show only those (Redis walks its renamed dict).
    pub fn reachable(&self, cmd: CmdRef) -> bool {
        let own = cmd.spec.name.as_bytes();
        !self.changed.contains_key(own) || self.changed.values().any(|v| *v == Some(cmd.spec.name))
    }

    /// The top-level commands that answer to some name, in table order.
    pub fn commands(&self) -> impl Iterator<Item = CmdRef> + '_ {
        table().commands().filter(|c| self.reachable(*c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_of(n: &Names, name: &str) -> Option<&'static str> {
        n.lookup(name.as_bytes()).map(|c| c.spec.name)
    }

    /// The cases redis-server 7.0.15 was started with (tests/server_process.rs
    /// compares the errors with it): moving, removing, chaining, case.
    #[test]
    fn renames_as_redis_dict_does() {
        let mut n = Names::default();
        assert_eq!(name_of(&n, "GET"), Some("get"));
        n.rename(b"get", b"Fetch").unwrap();
        assert_eq!(name_of(&n, "get"), None);
        assert_eq!(name_of(&n, "FETCH"), Some("get"));
        // A renamed name renames on; the old one is gone for good.
        n.rename(b"fetch", b"grab").unwrap();
        assert_eq!(name_of(&n, "fetch"), None);
        assert_eq!(name_of(&n, "grab"), Some("get"));
        assert_eq!(
            n.rename(b"get", b"x"),
            Err("No such command in rename-command")
        );
        // A free original name may be taken by another command.
        n.rename(b"set", b"get").unwrap();
        assert_eq!(name_of(&n, "get"), Some("set"));
        assert_eq!(name_of(&n, "set"), None);
        // Renaming to itself (any case) keeps it.
        n.rename(b"del", b"DEL").unwrap();
        assert_eq!(name_of(&n, "del"), Some("del"));
        n.rename(b"flushall", b"").unwrap();
        assert_eq!(name_of(&n, "flushall"), None);
        assert_eq!(
            n.rename(b"ping", b"grab"),
            Err("Target command name already exists")
        );
        assert_eq!(
            n.rename(b"config|get", b"cg"),
            Err("No such command in rename-command")
        );
        assert_eq!(
            n.rename(b"nosuch", b"x"),
            Err("No such command in rename-command")
        );
        let t = table();
        let reach = |name: &str| n.reachable(t.lookup(name.as_bytes()).unwrap());
        assert!(reach("get") && reach("set") && reach("del") && reach("hset"));
        assert!(!reach("flushall"));
        // `ping` was taken away by the failed rename (Redis deletes first).
        assert!(!reach("ping"));
        assert_eq!(n.commands().count(), t.commands().count() - 2);
    }

    #[test]
    fn paths_name_subcommands_of_the_renamed_container() {
        let mut n = Names::default();
        n.rename(b"config", b"cfg").unwrap();
        let path = |p: &str| n.lookup_path(p.as_bytes()).map(|c| c.spec.name);
        assert_eq!(path("cfg|GET"), Some("config|get"));
        assert_eq!(path("config|get"), None);
        assert_eq!(path("cfg"), Some("config"));
        assert_eq!(path("get|x"), None);
        assert_eq!(path("cfg|get|x"), None);
        assert_eq!(path("cfg|nosuch"), None);
    }
}
