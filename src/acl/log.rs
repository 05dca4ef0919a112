//! The ACL log (ACL LOG): denied commands, keys, channels and failed AUTHs,
//! newest first, similar events within a minute counted in one entry.

use std::collections::VecDeque;

/// What was refused (Redis's `reason` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the command came from (Redis's `context` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    /// Unix milliseconds of the latest event.
    pub ctime_ms: i64,
    /// CLIENT LIST line of the client, at the latest event.
    pub client_info: String,
}

/// Entries newest first, at most `acllog-max-len`.
#[derive(Default)]
pub struct Log {
    pub entries: VecDeque<Entry>,
}

/// Events this close (ms) with the same reason, context, object and user
/// share an entry.
const GROUPING_MS: i64 = 60_000;

impl Log {
    /// Records an event (Redis's `addACLLogEntry`): bumps a similar entry
    /// among the 10 newest, or adds one and trims to `max_len`.
    pub fn add(&mut self, e: Entry, max_len: usize) {
        let similar = self.entries.iter().take(10).position(|o| {
            o.reason == e.reason
                && o.context == e.context
                && (o.ctime_ms - e.ctime_ms).abs() <= GROUPING_MS
                && o.object == e.object
                && o.username == e.username
        });
        if let Some(i) = similar {
            let mut o = self.entries.remove(i).expect("found above");
            o.count += 1;
            o.ctime_ms = e.ctime_ms;
            o.client_info = e.client_info;
            self.entries.push_front(o);
            return;
        }
        self.entries.push_front(e);
        self.entries.truncate(max_len);
    }
}
