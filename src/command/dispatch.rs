//! Dispatch: a client's request through the gate (`command::gate`), then
//! queued (MULTI) or run by `call`, which also hands the command's effects to
//! propagation, and the work that follows a command.

use super::args::Args;
use super::gate::{self, Caller, Verdict};
use super::spec::flags;
use super::table::CmdRef;
use crate::error::{Error, Rejection};
use crate::server::client::{Client, Queued, ReplyMode};
use crate::server::{blocking, notify, Ctx, Server};

pub use super::gate::resolve;

/// Runs one request from a connection: the gate, queueing, execution, and
/// the follow-up (keyspace events, blocked clients, MONITOR). A request CLIENT
/// PAUSE holds back sets `client.postponed` and is left for later.
pub fn dispatch(srv: &mut Server, client: &mut Client, args: &Args) {
    if args.is_empty() {
        return;
    }
    // OXIDIS FAULT: a request may be answered with an injected error, close
    // its connection, or have its reply held back (test controls).
    if !srv.testctl.faults.is_empty() && crate::cmd::testctl::fault::inject(srv, client, args) {
        return;
    }
    // maxmemory: evict before the gate's OOM stage decides (Redis's
    // processCommand; eviction here runs before the earlier stages too).
    if srv.config.maxmemory != 0 {
        crate::server::evict::before_command(srv, client);
    }
    // maxmemory-clients: clients over the limit are closed before a command
    // runs (Redis's processCommand), this one counted with its arguments;
    // if it is one of them, its command never runs.
    if srv.client_mem.limit != 0 && crate::server::client_mem::before_command(srv, client, args) {
        return;
    }
    let verdict = gate::check(srv, client, args, Caller::Client);
    if let Verdict::Postpone = verdict {
        client.postponed = true;
        return;
    }
    crate::server::tracking::before_dispatch(srv, client);
    client.pushed.clear();
    let start_len = client.reply.len();
    // CLIENT REPLY: OFF drops replies until a command turns it back on (the
    // reply of CLIENT REPLY ON itself is sent); SKIP drops the next reply,
    // unless that next command is CLIENT REPLY ON.
    let mode_before = client.reply_mode;
    let replica = client.repl_role == crate::server::client::ReplRole::Replica;
    if mode_before == ReplyMode::SkipThis {
        client.reply_mode = ReplyMode::Skipping;
    }
    match verdict {
        Verdict::Run(cmd) => {
            call(srv, client, cmd, args, false);
            after_command(srv, client);
        }
        Verdict::Queue(cmd) => queue(client, cmd, args),
        Verdict::Reject(cmd, r) => reject(srv, client, cmd, &r),
        Verdict::Postpone => unreachable!("handled above"),
    }
    if client.cluster.asking {
        crate::cluster::redirect::after_command(client);
    }
    // With replies on before the command (the usual case) there is nothing
    // to drop: a command can turn them off or set SKIP, never `Skipping`.
    if mode_before != ReplyMode::On {
        end_reply_mode(client, mode_before, start_len);
    }
    if replica && client.reply.len() > start_len {
        replica_replied(srv, client, args, start_len);
    }
    crate::server::tracking::after_dispatch(client, args);
    // client-output-buffer-limit on the client's own replies, looked at
    // once they pass the 16 KiB Redis keeps in its fixed reply buffer (a
    // client over it is closed, and its memory no longer counts below).
    if client.reply.buf.len() > crate::net::conn::KEEP_OUTPUT {
        crate::server::pubsub::check_output_limit(srv, client);
    }
    crate::server::client_mem::update_if_limited(srv, client);
}

/// A replica's command produced a reply, which would land in its
/// replication link: Redis logs it and drops the replica
/// (`logInvalidUseAndFreeClientAsync`).
#[cold]
fn replica_replied(srv: &mut Server, client: &mut Client, args: &Args, start_len: usize) {
    let name = crate::command::gate::resolve(&srv.config.names, args).map_or_else(
        |_| String::from_utf8_lossy(args.at(0)).into_owned(),
        |c| c.spec.full_name().to_string(),
    );
    crate::log::warning(&format!(
        "Replica generated a reply to command '{name}', disconnecting it: {}",
        crate::cmd::server::client::describe(client, true, 0)
    ));
    if client.reply.buf.get(start_len) == Some(&b'-') {
        let reply = client.reply.buf[start_len..].to_vec();
        crate::repl::unexpected_error(srv, "master", "replica", &reply, &name);
    }
    if let Some(cell) = srv.clients.get(&client.id) {
        cell.kill.set(true);
    }
    client.close_after_reply = true;
}

/// After a command run with replies off or skipped: drops its reply unless
/// it turned replies back on, and ends a SKIP.
#[cold]
fn end_reply_mode(client: &mut Client, mode_before: ReplyMode, start_len: usize) {
    let drop_reply = match mode_before {
        ReplyMode::Off => client.reply_mode == ReplyMode::Off,
        ReplyMode::SkipThis | ReplyMode::Skipping => client.reply_mode != ReplyMode::On,
        ReplyMode::On => false,
    };
    if client.reply_mode == ReplyMode::Skipping {
        client.reply_mode = ReplyMode::On;
    }
    if drop_reply {
        crate::server::pubsub::drop_reply_keep_pushes(client, start_len);
    }
}

/// Queues a command inside MULTI and answers `+QUEUED`.
pub fn queue(client: &mut Client, cmd: CmdRef, args: &Args) {
    if let Some(m) = client.multi.as_mut() {
        let argv = args.to_owned();
        m.argv_mem += argv.mem();
        m.queue.push(Queued {
            spec: cmd.spec,
            id: cmd.id,
            argv,
        });
    }
    client.reply.raw(b"+QUEUED\r\n");
}

/// Answers a command the gate refused (Redis's `rejectCommand`); inside
/// MULTI the transaction is doomed (EXEC answers EXECABORT). A refused EXEC
/// itself discards the transaction (and its WATCHes) and answers EXECABORT
/// with the reason (`execCommandAbort`).
pub fn reject(srv: &mut Server, client: &mut Client, cmd: Option<CmdRef>, r: &Rejection) {
    if let Some(m) = client.multi.as_mut() {
        m.aborted = true;
    }
    if let Some(cmd) = cmd {
        srv.stats.cmd(cmd.id).rejected += 1;
    }
    let mut e = r.error();
    // A rejected EXEC discards its transaction (Redis's execCommandAbort).
    // Redis formats its ERR-class rejections without the code and keeps the
    // code of the others (BUSY, NOAUTH, OOM, ...).
    if cmd.is_some_and(|c| c.spec.name == "exec") {
        crate::cmd::txn::discard_transaction(srv, client);
        // A redirection is answered as it is (Redis's processCommand).
        if !matches!(r, Rejection::Cluster(_)) {
            let text = e.text();
            e = Error::exec_abort(text.strip_prefix("ERR ").unwrap_or(&text));
        }
    }
    srv.stats.error(e.code());
    client.reply.error_line(&e.text());
}

/// Runs a command the gate let through: the handler, its error reply, its
/// stats, and its propagation (Redis's `call`). `in_exec` is true inside
/// EXEC and scripts, where blocking is not allowed.
pub fn call(
    srv: &mut Server,
    client: &mut Client,
    cmd: CmdRef,
    args: &Args,
    in_exec: bool,
) -> bool {
    // One clock read gives both the command's duration start and, for a
    // top-level command, the time it sees (commands inside EXEC or a script
    // keep the time frozen at its start). Clock reads show up in profiles.
    // The duration is measured on the system clock: a test may move or
    // freeze the server's time (OXIDIS CLOCK) meanwhile.
    let started = crate::clock::system_us();
    if !in_exec {
        crate::clock::set_snapshot(crate::clock::at_system(started));
    }
    // CLIENT NO-TOUCH: lookups by this client leave LRU/LFU metadata alone.
    crate::db::set_no_touch(client.no_touch);
    notify::sync_db_mask(srv);
    let reply_start = client.reply.len();
    let prop = srv
        .prop
        .enter(srv.ks.dirty, cmd.spec.has(flags::TOUCHES_ARBITRARY_KEYS));
    let mut cursor = Args::new_at(args, if cmd.spec.name.contains('|') { 2 } else { 1 });
    srv.stats.mark_errors();
    let result = {
        let mut ctx = Ctx {
            srv,
            client,
            spec: cmd.spec,
            in_exec,
        };
        crate::server::fault::run_handler(cmd.spec.full_name(), in_exec, || {
            #[cfg(test)]
            crate::server::fault::injected(args);
            (cmd.spec.handler)(&mut ctx, &mut cursor)
        })
    };
    // A handler that panicked fails alone; what it had written is dropped.
    let result = result.unwrap_or_else(|e| {
        client.reply.buf.truncate(reply_start);
        Err(e)
    });
    // Stream nodes the command unpacked to read are cached; its keys keep
    // only their newest caches (see types::stream::store).
    if crate::types::stream::take_unpacked() {
        let db = &mut srv.ks.dbs[client.db];
        for i in cmd.spec.key_positions(args) {
            db.release_stream_cache(args.at(i));
        }
    }
    if let Some(entered) = prop {
        let lazy = crate::server::lazy_expire(srv);
        let exec = cmd.spec.has(flags::TXN_EXEC);
        srv.prop
            .leave(entered, srv.ks.dirty, client.db, args, exec, lazy);
    }
    let ok = result.is_ok();
    if let Err(e) = result {
        client.reply.error_line(&e.text());
        srv.stats.error(e.code());
    }
    // Failed: it replied an error, counted during the call after the last
    // command a script of it called (Redis's call()).
    if srv.stats.failed_since_mark() {
        srv.stats.cmd(cmd.id).failed += 1;
    }
    let elapsed_us = (crate::clock::system_us() - started).max(0) as u64;
    crate::cmd::server::latency::record(srv, cmd.id, cmd.spec, elapsed_us * 1000);
    notify::flush_before_reply(srv, client, reply_start);
    crate::server::tracking::after_call(srv, client, cmd.spec, args, ok);
    let st = srv.stats.cmd(cmd.id);
    st.calls += 1;
    st.usec += elapsed_us;
    if !cmd.spec.has(flags::SKIP_SLOWLOG) && client.blocked.is_none() {
        crate::cmd::server::slowlog::record(srv, client, args, elapsed_us as i64);
    }
    srv.stats.commands_processed += 1;
    client.commands += 1;
    client.last_cmd = cmd.spec.name;
    if !srv.monitors.is_empty() && !cmd.spec.has(flags::SKIP_MONITOR | flags::ADMIN) {
        crate::server::monitor::feed(srv, client, args);
    }
    ok
}

/// What follows every top-level command: publish keyspace events and serve
/// clients blocked on keys that became ready.
pub fn after_command(srv: &mut Server, client: &mut Client) {
    notify::flush(srv, client);
    crate::server::tracking::send_pending(srv, client);
    crate::server::pubsub::deliver_stashed(srv, client);
    blocking::serve_ready(srv, client);
}
