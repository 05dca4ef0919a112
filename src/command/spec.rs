//! `CommandSpec`: the one description of a command (name, arity, flags, keys, handler).

use super::args::Args;
use crate::error::CmdResult;
use crate::server::Ctx;

/// A command's implementation. The dispatcher has checked arity; `args` is
/// positioned after the command name (and subcommand name, for subcommands).
pub type Handler = fn(&mut Ctx, &mut Args) -> CmdResult;

/// Key positions for commands whose keys move (`movablekeys`), e.g. after a numkeys argument.
pub type KeysFn = fn(&Args) -> Vec<usize>;

/// Command flags, named as Redis names them in `COMMAND INFO`.
pub mod flags {
    pub const WRITE: u32 = 1 << 0;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const PUBSUB: u32 = 1 << 4;
    pub const NOSCRIPT: u32 = 1 << 5;
    pub const BLOCKING: u32 = 1 << 6;
    pub const LOADING: u32 = 1 << 7;
    pub const STALE: u32 = 1 << 8;
    pub const SKIP_MONITOR: u32 = 1 << 9;
    pub const SKIP_SLOWLOG: u32 = 1 << 10;
    pub const FAST: u32 = 1 << 11;
    pub const NO_AUTH: u32 = 1 << 12;
    pub const MAY_REPLICATE: u32 = 1 << 13;
    pub const NO_MANDATORY_KEYS: u32 = 1 << 14;
    pub const NO_MULTI: u32 = 1 << 15;
    pub const ALLOW_BUSY: u32 = 1 << 16;
    pub const SENTINEL: u32 = 1 << 17;
    pub const ONLY_SENTINEL: u32 = 1 << 18;
    pub const NO_ASYNC_LOADING: u32 = 1 << 19;

    // Oxidis's own flags for decisions Redis makes by comparing command
    // procs; COMMAND INFO does not show them (they are not in `NAMES`).
    /// Allowed in a RESP2 connection's pub/sub context.
    pub const PUBSUB_CONTEXT: u32 = 1 << 24;
    /// Acts on the transaction itself: runs at once inside MULTI, never queued.
    pub const TXN_CONTROL: u32 = 1 << 25;
    /// EXEC: for the pause stage it counts as the commands it queued.
    pub const TXN_EXEC: u32 = 1 << 26;
    /// Touches keys nobody named (SCAN, RANDOMKEY): the DELs of the keys it
    /// expired are propagated without a MULTI/EXEC around them.
    pub const TOUCHES_ARBITRARY_KEYS: u32 = 1 << 27;
    /// Refused unless its `enable-*-command` option allows it, before AUTH is
    /// checked (Redis's CMD_PROTECTED).
    pub const PROTECTED: u32 = 1 << 28;
    /// Runs a script (EVAL, EVALSHA, FCALL and their `_RO` forms): client
    /// tracking remembers the keys the script reads, not the command's.
    pub const RUNS_SCRIPT: u32 = 1 << 29;
    /// Empties databases (FLUSHDB, FLUSHALL): once it succeeds, every
    /// tracking client is told that everything changed.
    pub const FLUSHES: u32 = 1 << 30;
    /// A test control (OXIDIS): refused unless `enable-test-controls yes`,
    /// and left out of COMMAND's answers then (see `cmd::testctl`).
    pub const TEST_CONTROL: u32 = 1 << 31;

    /// Flag names in Redis's `COMMAND INFO` order.
    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        // MAY_REPLICATE is left out: Redis hides it from COMMAND INFO.
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// One command or subcommand.
pub struct CommandSpec {
    /// Lowercase; subcommands use Redis's full name, e.g. `config|get`.
    pub name: &'static str,
    /// Redis's convention: `n` exactly n arguments (name included), `-n` at least n.
    pub arity: i32,
    pub flags: u32,
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub handler: Handler,
    pub subcommands: &'static [CommandSpec],
    /// For `movablekeys` commands: where the keys are.
    pub keys_fn: Option<KeysFn>,
}

impl CommandSpec {
    /// A command: name, arity, flags, first key, last key, key step, handler.
    pub const fn new(
        name: &'static str,
        arity: i32,
        flags: u32,
        keys: (i32, i32, i32),
        handler: Handler,
    ) -> CommandSpec {
        CommandSpec {
            name,
            arity,
            flags,
            first_key: keys.0,
            last_key: keys.1,
            step: keys.2,
            handler,
            subcommands: &[],
            keys_fn: None,
        }
    }

    /// A container command (CONFIG, CLIENT, ...) whose work is in its subcommands.
    pub const fn container(
        name: &'static str,
        arity: i32,
        subs: &'static [CommandSpec],
    ) -> CommandSpec {
        CommandSpec {
            name,
            arity,
            flags: 0,
            first_key: 0,
            last_key: 0,
            step: 0,
            handler: container_without_sub,
            subcommands: subs,
            keys_fn: None,
        }
    }

    /// A command that runs by itself without arguments and also has subcommands (COMMAND).
    pub const fn with_subcommands(mut self, subs: &'static [CommandSpec]) -> CommandSpec {
        self.subcommands = subs;
        self
    }

    pub const fn with_keys_fn(mut self, f: KeysFn) -> CommandSpec {
        self.keys_fn = Some(f);
        self
    }

    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    pub fn is_write(&self) -> bool {
        self.has(flags::WRITE)
    }

    /// True when `argc` arguments (name included) fit the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let a = self.arity;
        if a >= 0 {
            argc == a as usize
        } else {
            argc >= (-a) as usize
        }
    }

    /// The name as Redis writes it in errors: `get`, `config|get`.
    pub fn full_name(&self) -> &'static str {
        self.name
    }

    /// Indexes of the key arguments in `args` (name at index 0).
    pub fn key_positions(&self, args: &Args) -> Vec<usize> {
        if let Some(f) = self.keys_fn {
            return f(args);
        }
        if self.first_key <= 0 {
            return Vec::new();
        }
        let argc = args.len() as i32;
        let last = if self.last_key < 0 {
            argc + self.last_key
        } else {
            self.last_key
        };
        let step = self.step.max(1);
        let mut out = Vec::new();
        let mut i = self.first_key;
        while i <= last && i < argc {
            out.push(i as usize);
            i += step;
        }
        out
    }
}

/// Container commands are only reached without a subcommand when the arity
/// check let them through; this never answers in practice.
fn container_without_sub(_: &mut Ctx, _: &mut Args) -> CmdResult {
    Err(crate::error::Error::Syntax)
}
