//! Propagation: the commands a replica or an AOF replays to reach the same dataset (Redis's `alsoPropagate`).
//!
//! After each command `command::dispatch::call` hands its effects here: the
//! command itself when the dirty counter moved, or what the handler asked to
//! propagate instead (`Ctx::propagate_as`, `Ctx::also_propagate`). Keys that
//! expired on lookup become `DEL` (or `UNLINK` with `lazyfree-lazy-expire`).
//! The ops of one top-level command, with everything its EXEC or script ran,
//! are collected in `pending` and leave together when it ends: wrapped in
//! MULTI/EXEC when there are several, preceded by `SELECT` whenever the
//! database differs from the one the stream last selected. The replicas'
//! stream (and the taps, which see what a replica sees) and the AOF select
//! apart, as Redis's `slaveseldb` and `aof_selected_db`: a command for the
//! replicas only (PUBLISH) leaves the AOF where it was.
//!
//! Consumers are [`Tap`]s, attached from any thread through a [`TapHub`].
//! With none attached nothing is recorded: `enter` is one atomic load and
//! a branch, and no command allocates for propagation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Locks a tap's state; a consumer that panicked holding it leaves the
/// bytes intact, so a poisoned lock is used as it is.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A consumer of the stream: the bytes a replica would receive, in RESP.
#[derive(Default)]
pub struct Tap {
    buf: Mutex<Vec<u8>>,
    grew: Condvar,
}

impl Tap {
    /// Everything received so far, leaving the tap empty.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *lock(&self.buf))
    }

    /// Waits until at least `n` bytes are buffered or `timeout` passes,
    /// then takes them all.
    pub fn take_at_least(&self, n: usize, timeout: Duration) -> Vec<u8> {
        let deadline = Instant::now() + timeout;
        let mut b = lock(&self.buf);
        while b.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            b = self
                .grew
                .wait_timeout(b, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        std::mem::take(&mut *b)
    }

    fn push(&self, bytes: &[u8]) {
        lock(&self.buf).extend_from_slice(bytes);
        self.grew.notify_all();
    }
}

/// Where taps attach from other threads (`oxidis::Handle::tap_propagation`).
#[derive(Default)]
pub struct TapHub {
    /// Taps attached so far; the server compares it with what it has seen.
    attached: AtomicUsize,
    new: Mutex<Vec<Arc<Tap>>>,
}

impl TapHub {
    /// Attaches a new consumer; it receives what is propagated from now on,
    /// starting with a SELECT (as a replica after its full sync).
    pub fn attach(&self) -> Arc<Tap> {
        let tap = Arc::new(Tap::default());
        lock(&self.new).push(tap.clone());
        self.attached.fetch_add(1, Ordering::Release);
        tap
    }
}

/// What the running command asked for (Redis's per-client propagation flags
/// and rewritten argv). Saved and restored around nested calls.
#[derive(Default)]
struct CallState {
    /// `propagate_as`: propagate this instead of the command, if it wrote.
    rewrite: Option<Vec<Box<[u8]>>>,
    /// `prevent_propagation`: the command itself is never propagated.
    prevent: bool,
    /// `force_propagation`: propagated even when the dirty counter stayed.
    force: bool,
    /// `force_replicas`: propagated to the replicas (not the AOF) even when
    /// the dirty counter stayed (Redis's `CLIENT_FORCE_REPL`).
    force_repl: bool,
}

/// An open `enter`: the outer command's state and the dirty counter at entry.
pub struct Entered {
    outer: CallState,
    dirty: u64,
}

/// One command of the stream: the database it runs in and where its RESP
/// encoding lies in `Propagation::op_bytes` (one buffer for all pending
/// ops, reused: no allocation per command).
struct Op {
    db: usize,
    resp: std::ops::Range<usize>,
    /// Who gets it: [`TO_AOF`], [`TO_REPLICAS`] (and taps), or both.
    target: u8,
}

/// Op targets (Redis's PROPAGATE_AOF and PROPAGATE_REPL).
pub const TO_AOF: u8 = 1;
pub const TO_REPLICAS: u8 = 2;
pub const TO_ALL: u8 = TO_AOF | TO_REPLICAS;

/// The server's propagation state.
#[derive(Default)]
pub struct Propagation {
    hub: Arc<TapHub>,
    /// Taps taken from `hub` (how many: `seen`).
    taps: Vec<Arc<Tap>>,
    seen: usize,
    /// Ops of the current top-level command (Redis's `server.also_propagate`).
    pending: Vec<Op>,
    /// The encoded pending ops, back to back.
    op_bytes: Vec<u8>,
    /// The stream bytes of one flush when they go to several consumers
    /// (kept for its capacity).
    scratch: Vec<u8>,
    cur: CallState,
    /// Nesting of `enter` (EXEC and scripts run commands inside a command).
    depth: u32,
    /// The database the replicas' stream last selected (Redis's `slaveseldb`).
    selected: Option<usize>,
    /// The database the AOF last selected (Redis's `aof_selected_db`).
    aof_selected: Option<usize>,
    /// The top-level command touches arbitrary keys (SCAN, RANDOMKEY): its
    /// expired-key DELs are not wrapped in MULTI/EXEC.
    no_multi: bool,
    /// Where the running script's commands go (`redis.set_repl`): a
    /// [`TO_AOF`] / [`TO_REPLICAS`] mask, [`TO_ALL`] unless the script
    /// changed it; stored inverted, so the default (0) is "all".
    script_repl_off: u8,
    /// A blocked client's command runs again because a key became ready
    /// (BLMOVE then propagates Redis's lowercase `left`/`right`).
    pub serving_blocked: bool,
    /// The stream key that woke a blocked XREAD/XREADGROUP: it replies
    /// with that key only, as Redis's `serveClientsBlockedOnStreamKey`.
    pub serving_key: Option<Vec<u8>>,
    /// The AOF buffer, while the AOF collects (`persist::aof`).
    pub aof: Option<crate::persist::aof::feed::Sink>,
    /// The replication backlog, once a replica asked for one (`repl`).
    pub backlog: Option<Box<crate::repl::backlog::Backlog>>,
    /// `master_repl_offset`: bytes of stream produced while a backlog
    /// existed (it keeps its value when the backlog goes).
    pub repl_offset: i64,
    /// Stream bytes not yet handed to the replicas (`repl::master::distribute`).
    pub repl_fresh: Vec<u8>,
    /// This server is a replica: its replicas and backlog get its master's
    /// stream as applied (`repl::replica::ids::applied`), and what its own
    /// commands propagate reaches only its AOF (Redis's
    /// `replicationFeedSlaves` returns early on a replica).
    pub from_master: bool,
}

impl Propagation {
    /// The hub consumers attach through.
    pub fn hub(&self) -> Arc<TapHub> {
        self.hub.clone()
    }

    /// True when some consumer receives the stream. Handlers that build a
    /// replacement command check this first, so they allocate nothing when
    /// nobody listens.
    #[inline]
    pub fn active(&self) -> bool {
        !self.taps.is_empty() || self.aof.is_some() || self.backlog.is_some()
    }

    /// The database the stream is in (Redis's `slaveseldb`), None before
    /// any SELECT.
    pub fn stream_db(&self) -> Option<usize> {
        self.selected
    }

    /// The replicas' next command goes out after a SELECT (a full sync).
    pub fn forget_selected(&mut self) {
        self.selected = None;
    }

    /// The AOF's next command goes out after a SELECT (a new AOF file starts).
    pub fn forget_aof_selected(&mut self) {
        self.aof_selected = None;
    }

    /// Takes taps attached since the last look. Runs before every
    /// command: the "anything new?" test is inlined, taking them is not.
    #[inline(always)]
    fn sync(&mut self) {
        if self.hub.attached.load(Ordering::Acquire) != self.seen {
            self.take_new_taps();
        }
    }

    #[inline(never)]
    fn take_new_taps(&mut self) {
        let new = std::mem::take(&mut *lock(&self.hub.new));
        self.seen += new.len();
        self.taps.extend(new);
        // A new consumer starts with a SELECT, as a replica after a full sync.
        self.selected = None;
        crate::db::log_expired(true);
    }

    /// Starts a command; None (nothing to do afterwards) without consumers.
    #[inline]
    pub fn enter(&mut self, dirty: u64, touches_arbitrary_keys: bool) -> Option<Entered> {
        if self.depth == 0 {
            self.sync();
            self.no_multi = touches_arbitrary_keys;
        }
        if !self.active() {
            return None;
        }
        self.depth += 1;
        Some(Entered {
            outer: std::mem::take(&mut self.cur),
            dirty,
        })
    }

    /// Ends a command run in database `db` with arguments `argv`: records
    /// expired keys, then the command (or its replacement) if it changed the
    /// dataset. At the top level, sends everything collected.
    pub fn leave(
        &mut self,
        e: Entered,
        dirty: u64,
        db: usize,
        argv: &crate::command::Args,
        is_exec: bool,
        lazy_expire: bool,
    ) {
        self.record_expired(lazy_expire);
        let cur = std::mem::replace(&mut self.cur, e.outer);
        self.depth -= 1;
        // A save inside the command (FLUSHALL with save points) resets the
        // counter: only a rise means the dataset changed (Redis's call()).
        let wrote = dirty > e.dirty || cur.force;
        // EXEC is never propagated itself (its commands are), nor what a
        // script runs after redis.set_repl(REPL_NONE).
        let silenced = cur.prevent || is_exec;
        // What a script runs goes where redis.set_repl says.
        let script = if self.depth > 0 {
            TO_ALL & !self.script_repl_off
        } else {
            TO_ALL
        };
        let target = if wrote {
            script
        } else if cur.force_repl {
            script & TO_REPLICAS
        } else {
            0
        };
        // Only for consumers that exist (Redis's `shouldPropagate`): an op
        // nobody gets must not count for the MULTI/EXEC wrap.
        let target = target & self.consumers();
        if target != 0 && !silenced {
            match &cur.rewrite {
                Some(v) => self.push_op(db, v.iter().map(|a| &a[..])),
                None => self.push_op(db, (0..argv.len()).map(|i| argv.at(i))),
            }
            if let Some(op) = self.pending.last_mut() {
                op.target = target;
            }
        }
        if self.depth == 0 {
            self.script_repl_off = 0;
            self.flush(!self.no_multi);
        }
    }

    /// `Ctx::propagate_as`: the command propagates as `argv` if it writes.
    pub fn rewrite(&mut self, argv: &[&[u8]]) {
        if self.depth > 0 {
            self.cur.rewrite = Some(argv.iter().map(|a| Box::from(*a)).collect());
        }
    }

    /// `Ctx::also_propagate`: `argv` in `db` joins the stream after what
    /// the command propagated so far, whether or not it writes.
    pub fn also(&mut self, db: usize, argv: &[&[u8]], lazy_expire: bool) {
        if self.depth == 0 {
            return;
        }
        self.record_expired(lazy_expire);
        self.push_op(db, argv.iter().copied());
    }

    /// The running command is not propagated itself (what it asked with
    /// `also` still is): SPOP with a count, scripts.
    pub fn prevent(&mut self) {
        if self.depth > 0 {
            self.cur.prevent = true;
        }
    }

    /// The running command is propagated even if it changed nothing
    /// (FLUSHALL / FLUSHDB on empty databases).
    pub fn force(&mut self) {
        if self.depth > 0 {
            self.cur.force = true;
        }
    }

    /// The running command goes to the replicas even if it changed nothing,
    /// never to the AOF for that (PUBLISH outside cluster mode).
    pub fn force_replicas(&mut self) {
        if self.depth > 0 {
            self.cur.force_repl = true;
        }
    }

    /// `redis.set_repl`: where the commands the script runs from now on
    /// go (a [`TO_AOF`] / [`TO_REPLICAS`] mask); a script's end sets
    /// [`TO_ALL`] again.
    pub fn set_script_repl(&mut self, target: u8) {
        self.script_repl_off = TO_ALL & !target;
    }

    /// Keys expired outside any command (active expiry): each DEL goes out
    /// alone, never wrapped in MULTI/EXEC.
    pub fn flush_expired(&mut self, lazy_expire: bool) {
        if self.depth > 0 {
            return;
        }
        self.sync();
        if !self.active() {
            return;
        }
        self.record_expired(lazy_expire);
        self.flush(false);
    }

    /// A key deleted outside any command (eviction before a command or in
    /// its timer): DEL, or UNLINK when `unlink`, sent by the next
    /// [`Propagation::flush_expired`] (never wrapped in MULTI/EXEC).
    pub fn deleted_outside_command(&mut self, db: usize, key: &[u8], unlink: bool) {
        self.sync();
        if !self.active() {
            return;
        }
        let name: &[u8] = if unlink { b"UNLINK" } else { b"DEL" };
        self.push_op(db, [name, key].into_iter());
    }

    /// Turns keys the databases expired since the last look into DEL/UNLINK ops.
    fn record_expired(&mut self, lazy: bool) {
        let name: &[u8] = if lazy { b"UNLINK" } else { b"DEL" };
        for (db, key) in crate::db::take_expired_log() {
            self.push_op(db, [name, &key[..]].into_iter());
        }
    }

    /// Encodes a command as a pending op.
    fn push_op<'a>(&mut self, db: usize, argv: impl ExactSizeIterator<Item = &'a [u8]>) {
        let start = self.op_bytes.len();
        encode_into(&mut self.op_bytes, argv);
        self.pending.push(Op {
            db,
            resp: start..self.op_bytes.len(),
            target: TO_ALL,
        });
    }

    /// The replicas' stream has consumers: taps, or a backlog on a master.
    fn to_replicas(&self) -> bool {
        !self.taps.is_empty() || (self.backlog.is_some() && !self.from_master)
    }

    /// Which streams have consumers now, as a target mask.
    fn consumers(&self) -> u8 {
        let aof = if self.aof.is_some() { TO_AOF } else { 0 };
        let repl = if self.to_replicas() { TO_REPLICAS } else { 0 };
        aof | repl
    }

    /// Sends the pending ops to every consumer (Redis's `propagatePendingCommands`).
    fn flush(&mut self, may_wrap: bool) {
        if self.pending.is_empty() {
            return;
        }
        let ops = std::mem::take(&mut self.pending);
        // Redis counts every op, whoever gets it, and wraps for both.
        let wrap = may_wrap && ops.len() > 1;
        let to_repl = self.to_replicas();
        let to_aof = self.aof.is_some();
        // One encoding serves both when they would get the same bytes.
        let shared = to_repl
            && to_aof
            && self.selected == self.aof_selected
            && ops.iter().all(|o| o.target == TO_ALL);
        if to_repl {
            let mut out = std::mem::take(&mut self.scratch);
            out.clear();
            let mut sel = self.selected;
            self.encode(&ops, wrap, true, &mut sel, &mut out);
            self.selected = sel;
            for t in &self.taps {
                t.push(&out);
            }
            if !self.from_master {
                self.feed_replicas(&out);
            }
            if shared {
                self.aof_selected = sel;
                if let Some(sink) = &mut self.aof {
                    sink.begin();
                    sink.buf.extend_from_slice(&out);
                }
            }
            self.scratch = out;
        }
        if to_aof && !shared {
            // Encoded straight into the AOF buffer (no copy).
            let mut sel = self.aof_selected;
            if let Some(sink) = &mut self.aof {
                sink.begin();
                let mut out = std::mem::take(&mut sink.buf);
                self.encode(&ops, wrap, false, &mut sel, &mut out);
                if let Some(sink) = &mut self.aof {
                    sink.buf = out;
                }
            }
            self.aof_selected = sel;
        }
        // Both buffers keep their capacity for the next command.
        self.pending = ops;
        self.pending.clear();
        self.op_bytes.clear();
    }

    /// Appends the ops to `out` for one consumer, whose last selected
    /// database is `selected`: `repl` takes the replicas-only ops too.
    fn encode(
        &self,
        ops: &[Op],
        wrap: bool,
        repl: bool,
        selected: &mut Option<usize>,
        out: &mut Vec<u8>,
    ) {
        if wrap {
            select(out, selected, ops[0].db);
            out.extend_from_slice(b"*1\r\n$5\r\nMULTI\r\n");
        }
        let to = if repl { TO_REPLICAS } else { TO_AOF };
        for op in ops.iter().filter(|o| o.target & to != 0) {
            select(out, selected, op.db);
            out.extend_from_slice(&self.op_bytes[op.resp.clone()]);
        }
        if wrap {
            out.extend_from_slice(b"*1\r\n$4\r\nEXEC\r\n");
        }
    }

    /// Appends stream bytes to the backlog (and to what the replicas get
    /// next), moving `master_repl_offset`; nothing without a backlog.
    pub fn feed_replicas(&mut self, bytes: &[u8]) {
        if let Some(b) = &mut self.backlog {
            b.feed(bytes);
            self.repl_offset += bytes.len() as i64;
            self.repl_fresh.extend_from_slice(bytes);
        }
    }

    /// A command for the replicas only, never the AOF (the master's PING
    /// and REPLCONF GETACK): in whatever database the stream is in, as
    /// Redis feeds them with `slaveseldb`.
    pub fn feed_replicas_only(&mut self, argv: &[&[u8]]) {
        if self.backlog.is_some() && !self.from_master {
            let resp = encode(argv.iter().copied());
            self.feed_replicas(&resp);
        }
    }
}

/// A SELECT when `db` is not the database a consumer's stream is in.
fn select(out: &mut Vec<u8>, selected: &mut Option<usize>, db: usize) {
    if *selected != Some(db) {
        let mut n = itoa::Buffer::new();
        let n = n.format(db);
        out.extend_from_slice(&encode([&b"SELECT"[..], n.as_bytes()].into_iter()));
        *selected = Some(db);
    }
}

/// How a key deleted because its time passed propagates: `UNLINK` with
/// `lazyfree-lazy-expire yes`, else `DEL`.
pub fn expired_del(srv: &super::Server) -> &'static [u8] {
    deletion(srv, "lazyfree-lazy-expire")
}

/// `UNLINK` when the lazyfree parameter `param` is `yes`, else `DEL`.
pub fn deletion(srv: &super::Server, param: &str) -> &'static [u8] {
    if srv.config.get(param) == Some("yes") {
        b"UNLINK"
    } else {
        b"DEL"
    }
}

/// A command as a RESP multibulk.
fn encode<'a>(argv: impl ExactSizeIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(&mut out, argv);
    out
}

/// Appends a command as a RESP multibulk.
fn encode_into<'a>(out: &mut Vec<u8>, argv: impl ExactSizeIterator<Item = &'a [u8]>) {
    let mut n = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(n.format(argv.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in argv {
        out.push(b'$');
        out.extend_from_slice(n.format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multibulk_encoding() {
        let v = encode([&b"SET"[..], b"k", b""].into_iter());
        assert_eq!(v, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
    }
}
