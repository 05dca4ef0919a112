//! Dispatch in Redis's `processCommand` order: lookup, arity, auth, MULTI
//! queueing, pub/sub context, then `call` and the work that follows a command.

use super::args::Args;
use super::spec::flags;
use super::table::{table, CmdRef};
use crate::error::Error;
use crate::server::client::{Client, Queued, ReplyMode};
use crate::server::{blocking, notify, Ctx, Server};

/// Runs one request from a connection: checks, queueing, execution, and the
/// follow-up (keyspace events, blocked clients, MONITOR).
pub fn dispatch(srv: &mut Server, client: &mut Client, args: &Args) {
    if args.is_empty() {
        return;
    }
    crate::server::tracking::before_dispatch(srv, client);
    client.pushed.clear();
    let start_len = client.reply.len();
    // CLIENT REPLY: OFF drops replies until a command turns it back on (the
    // reply of CLIENT REPLY ON itself is sent); SKIP drops the next reply.
    let mode_before = client.reply_mode;
    if mode_before == ReplyMode::SkipThis {
        client.reply_mode = ReplyMode::On;
    }
    match check(srv, client, args) {
        Ok(cmd) => {
            if let Some(m) = client.multi.as_mut().filter(|_| !is_multi_control(cmd)) {
                m.queue.push(Queued {
                    spec: cmd.spec,
                    id: cmd.id,
                    argv: args.to_owned(),
                });
                client.reply.raw(b"+QUEUED\r\n");
            } else {
                call(srv, client, cmd, args, false);
                after_command(srv, client);
            }
        }
        Err((cmd, e)) => reject(srv, client, cmd, e),
    }
    let drop_reply = match mode_before {
        ReplyMode::Off => client.reply_mode == ReplyMode::Off,
        ReplyMode::SkipThis => true,
        ReplyMode::On => false,
    };
    if drop_reply {
        crate::server::pubsub::drop_reply_keep_pushes(client, start_len);
    }
    crate::server::tracking::after_dispatch(client, args);
}

/// Answers a request the gate refused (Redis's `rejectCommand`): a
/// transaction in progress is flagged; a refused EXEC discards it and
/// answers EXECABORT with the reason.
pub fn reject(srv: &mut Server, client: &mut Client, cmd: Option<CmdRef>, e: Error) {
    if let Some(m) = client.multi.as_mut() {
        m.aborted = true;
    }
    let e = match cmd {
        Some(cmd) => {
            srv.stats.cmd(cmd.id).rejected += 1;
            if cmd.spec.name == "exec" {
                crate::cmd::txn::discard_transaction(srv, client);
                Error::exec_abort(&e)
            } else {
                e
            }
        }
        None => e,
    };
    srv.stats.error(e.code());
    client.reply.error_line(&e.text());
}

/// True when CLIENT PAUSE holds this request back: every command under
/// `PAUSE ALL`, and writes (or EXEC of a transaction with writes, or
/// may-replicate commands) under `PAUSE WRITE`. The request stays in the
/// query buffer and runs when the pause ends, as Redis postpones it.
pub fn must_postpone(srv: &mut Server, client: &Client, args: &Args) -> bool {
    let Some(p) = srv.pause else {
        return false;
    };
    if p.until_ms <= crate::clock::real_now_us() / 1000 {
        srv.pause = None;
        return false;
    }
    if client.conn_kind == crate::server::client::ConnKind::Script || args.is_empty() {
        return false;
    }
    // Errors Redis gives before the pause check (unknown command, arity, auth) are not held back.
    let Ok(cmd) = resolve(args) else {
        return false;
    };
    if !cmd.spec.arity_ok(args.len()) || (!client.authenticated && !cmd.spec.has(flags::NO_AUTH)) {
        return false;
    }
    if !p.write_only {
        return true;
    }
    let writes = flags::WRITE | flags::MAY_REPLICATE;
    if cmd.spec.has(writes) {
        return true;
    }
    cmd.spec.name == "exec"
        && client
            .multi
            .as_ref()
            .is_some_and(|m| m.queue.iter().any(|q| q.spec.has(writes)))
}

/// Commands that act on the transaction itself instead of being queued.
fn is_multi_control(cmd: CmdRef) -> bool {
    matches!(
        cmd.spec.name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

/// Resolves the command and applies the checks that come before queueing or
/// running it. Errors carry the command when it was found (for its stats).
pub fn check(
    srv: &Server,
    client: &Client,
    args: &Args,
) -> Result<CmdRef, (Option<CmdRef>, Error)> {
    let cmd = resolve(args).map_err(|e| (None, e))?;
    let spec = cmd.spec;
    if !spec.arity_ok(args.len()) {
        return Err((Some(cmd), Error::Arity(spec.full_name().into())));
    }
    if spec.has(flags::PROTECTED) && !crate::cmd::server::debug::debug_allowed(srv, client) {
        return Err((
            Some(cmd),
            Error::msg(crate::cmd::server::debug::DEBUG_REFUSED),
        ));
    }
    if !client.authenticated && !spec.has(flags::NO_AUTH) {
        return Err((Some(cmd), Error::NoAuth));
    }
    if client.multi.is_some() && spec.has(flags::NO_MULTI) {
        return Err((
            Some(cmd),
            Error::msg("Command not allowed inside a transaction"),
        ));
    }
    if client.in_pubsub_context()
        && !matches!(
            spec.name,
            "ping"
                | "subscribe"
                | "ssubscribe"
                | "unsubscribe"
                | "sunsubscribe"
                | "psubscribe"
                | "punsubscribe"
                | "quit"
                | "reset"
        )
    {
        return Err((
            Some(cmd),
            Error::Msg(
                format!(
                    "Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                    spec.full_name()
                )
                .into(),
            ),
        ));
    }
    Ok(cmd)
}

/// Finds the command (or subcommand) for a request, with Redis's errors for
/// unknown commands and subcommands.
pub fn resolve(args: &Args) -> Result<CmdRef, Error> {
    let name = args.at(0);
    let Some(cmd) = table().lookup(name) else {
        return Err(unknown_command(args));
    };
    if cmd.spec.subcommands.is_empty() || args.len() < 2 {
        return Ok(cmd);
    }
    match table().lookup_sub(name, args.at(1)) {
        Some(sub) => Ok(sub),
        None => Err(Error::UnknownSubcommand {
            sub: c_str(args.at(1), 128),
            cmd: String::from_utf8_lossy(name).to_uppercase(),
        }),
    }
}

/// C's `%.Ns` of a binary argument: stops at a NUL byte and after N bytes.
fn c_str(b: &[u8], max: usize) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len()).min(max);
    String::from_utf8_lossy(&b[..end]).into_owned()
}

fn unknown_command(args: &Args) -> Error {
    let mut list = String::new();
    let mut i = 1;
    while i < args.len() && list.len() < 128 {
        let room = 128 - list.len();
        list.push('\'');
        list.push_str(&c_str(args.at(i), room));
        list.push_str("' ");
        i += 1;
    }
    Error::Msg(
        format!(
            "unknown command '{}', with args beginning with: {}",
            c_str(args.at(0), 128),
            list
        )
        .into(),
    )
}

/// Runs a resolved command: the handler, its error reply, and its stats.
/// `in_exec` is true inside EXEC and scripts, where blocking is not allowed.
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
    let started = crate::clock::real_now_us();
    if !in_exec {
        crate::clock::set_snapshot(started);
    }
    // CLIENT NO-TOUCH: lookups by this client leave LRU/LFU metadata alone.
    crate::db::set_no_touch(client.no_touch);
    notify::sync_db_mask(srv);
    let reply_start = client.reply.len();
    let mut cursor = Args::new_at(args, if cmd.spec.name.contains('|') { 2 } else { 1 });
    let result = {
        let mut ctx = Ctx {
            srv,
            client,
            spec: cmd.spec,
            in_exec,
            in_script: false,
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
    let ok = result.is_ok();
    if let Err(e) = result {
        client.reply.error_line(&e.text());
        srv.stats.error(e.code());
        srv.stats.cmd(cmd.id).failed += 1;
    }
    let elapsed_us = (crate::clock::real_now_us() - started).max(0) as u64;
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
