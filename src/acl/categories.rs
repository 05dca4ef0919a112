//! ACL categories (`@read`, `@admin`, ...) and which commands Redis 7.0 puts in each.
//!
//! A command's categories are the ones recorded from Redis's `COMMAND INFO`
//! (`command::meta`), which already hold the implicit ones Redis derives from
//! the flags; commands Redis 7.0 lacks get the implicit ones from their spec.

use std::sync::OnceLock;

use crate::command::flags;
use crate::command::table::table;
use crate::command::CommandSpec;

/// Category names in Redis's order (ACL CAT, and the order ACL LIST tries them).
pub const NAMES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// The bit of a category name (case-insensitive), or None.
pub fn by_name(name: &[u8]) -> Option<u32> {
    NAMES
        .iter()
        .position(|n| n.as_bytes().eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

fn bit(name: &str) -> u32 {
    by_name(name.as_bytes()).unwrap_or(0)
}

/// The category bits of every command and subcommand, by table id.
pub fn of_all() -> &'static [u32] {
    static C: OnceLock<Vec<u32>> = OnceLock::new();
    C.get_or_init(|| table().all.iter().map(|s| of_spec(s)).collect())
}

/// The category bits of the command with table id `id`.
#[inline]
pub fn of(id: usize) -> u32 {
    of_all().get(id).copied().unwrap_or(0)
}

fn of_spec(spec: &CommandSpec) -> u32 {
    if let Some(m) = crate::command::meta::get(spec.name) {
        return m
            .acl_categories()
            .iter()
            .map(|c| bit(c.trim_start_matches('@')))
            .fold(0, |a, b| a | b);
    }
    implicit(spec)
}

/// Redis's `setImplicitACLCategories` for a command it does not have.
fn implicit(spec: &CommandSpec) -> u32 {
    // The test controls (OXIDIS) are in no category, so category listings
    // and rule descriptions stay Redis's; `+@all` still allows them.
    if spec.has(flags::TEST_CONTROL) {
        return 0;
    }
    let mut c = 0;
    if spec.has(flags::WRITE) {
        c |= bit("write");
    }
    if spec.has(flags::READONLY) {
        c |= bit("read");
    }
    if spec.has(flags::ADMIN) {
        c |= bit("admin") | bit("dangerous");
    }
    if spec.has(flags::PUBSUB) {
        c |= bit("pubsub");
    }
    if spec.has(flags::FAST) {
        c |= bit("fast");
    }
    if spec.has(flags::BLOCKING) {
        c |= bit("blocking");
    }
    if c & bit("fast") == 0 {
        c |= bit("slow");
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_come_from_redis_metadata() {
        let t = table();
        let get = t.lookup(b"get").unwrap();
        assert_eq!(of(get.id), bit("read") | bit("string") | bit("fast"));
        let flushall = t.lookup(b"flushall").unwrap();
        assert_ne!(of(flushall.id) & bit("dangerous"), 0);
        assert_eq!(by_name(b"ReAd"), Some(2));
        assert_eq!(by_name(b"all"), None);
    }
}
