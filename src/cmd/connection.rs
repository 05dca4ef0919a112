//! Connection commands: PING, ECHO, QUIT, SELECT, AUTH, HELLO, RESET.

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::server::Ctx;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "ping",
        -1,
        FAST | SENTINEL | PUBSUB_CONTEXT,
        (0, 0, 0),
        ping,
    ),
    CommandSpec::new("echo", 2, LOADING | STALE | FAST, (0, 0, 0), echo),
    CommandSpec::new(
        "quit",
        -1,
        ALLOW_BUSY | NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | PUBSUB_CONTEXT | TXN_CONTROL,
        (0, 0, 0),
        quit,
    ),
    CommandSpec::new("select", 2, LOADING | STALE | FAST, (0, 0, 0), select),
    CommandSpec::new(
        "auth",
        -2,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | SENTINEL | ALLOW_BUSY,
        (0, 0, 0),
        auth,
    ),
    CommandSpec::new(
        "hello",
        -1,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | SENTINEL | ALLOW_BUSY,
        (0, 0, 0),
        hello,
    ),
    CommandSpec::new(
        "reset",
        1,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | PUBSUB_CONTEXT | TXN_CONTROL,
        (0, 0, 0),
        reset,
    ),
];

/// ```text
/// PING [message]
/// ```
/// Simple string `PONG`, or the message as a bulk string. In RESP2 pub/sub
/// context: the array `["pong", message-or-empty]`.
fn ping(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if args.len() > 2 {
        return Err(Error::Arity("ping".into()));
    }
    let msg = args.next();
    if ctx.client.in_pubsub_context() {
        let out = ctx.out();
        out.array(2);
        out.bulk(b"pong");
        out.bulk(msg.unwrap_or(b""));
        return Ok(());
    }
    match msg {
        Some(m) => ctx.out().bulk(m),
        None => ctx.out().raw(b"+PONG\r\n"),
    }
    Ok(())
}

/// ```text
/// ECHO message
/// ```
/// Bulk string: the message.
fn echo(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let m = args.at(1);
    ctx.out().bulk(m);
    Ok(())
}

/// ```text
/// QUIT
/// ```
/// `OK`, then the connection closes.
fn quit(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    ctx.out().ok();
    ctx.client.close_after_reply = true;
    Ok(())
}

/// ```text
/// SELECT index
/// ```
/// `OK`.
fn select(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let idx = crate::cmd::keyspace::moves::db_index(ctx, args.at(1))?;
    ctx.client.db = idx;
    ctx.out().ok();
    Ok(())
}

/// Authenticates the client as `user` when the password opens it; a
/// failure is logged in the ACL log (Redis's `ACLAuthenticateUser`).
fn authenticate(ctx: &mut Ctx, args: &Args, user: &[u8], pass: &[u8]) -> CmdResult {
    if ctx.srv.acl.authenticate(user, pass).is_some() {
        ctx.client.authenticated = true;
        ctx.client.user = String::from_utf8_lossy(user).into_owned().into();
        return Ok(());
    }
    let context = if ctx.client.multi.is_some() {
        crate::acl::log::Context::Multi
    } else {
        crate::acl::log::Context::Toplevel
    };
    let reason = crate::acl::log::Reason::Auth;
    crate::acl::gate::log_event(ctx.srv, ctx.client, reason, args.at(0), user, context, args);
    Err(Error::WrongPass)
}

/// ```text
/// AUTH [username] password
/// ```
/// `OK`, or `WRONGPASS`.
fn auth(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if args.len() > 3 {
        return Err(Error::Syntax);
    }
    let (user, pass) = if args.len() == 2 {
        if ctx.srv.acl.default.nopass {
            return Err(Error::msg(
                "AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
            ));
        }
        (&b"default"[..], args.at(1))
    } else {
        (args.at(1), args.at(2))
    };
    authenticate(ctx, args, user, pass)?;
    ctx.out().ok();
    Ok(())
}

/// ```text
/// HELLO [protover [AUTH username password] [SETNAME clientname]]
/// ```
/// Map: server, version, proto, id, mode, role, modules.
fn hello(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mut proto = None;
    if let Some(v) = args.next() {
        match crate::types::number::parse_i64(v) {
            Some(n) => proto = Some(n),
            None => {
                return Err(Error::msg(
                    "Protocol version is not an integer or out of range",
                ))
            }
        }
    }
    let mut creds = None;
    let mut name = None;
    while let Some(opt) = args.next() {
        let more = args.remaining();
        if opt.eq_ignore_ascii_case(b"AUTH") && more >= 2 {
            creds = Some((args.next_or_syntax()?, args.next_or_syntax()?));
        } else if opt.eq_ignore_ascii_case(b"SETNAME") && more >= 1 {
            name = Some(args.next_or_syntax()?);
        } else {
            return Err(Error::Msg(
                format!(
                    "Syntax error in HELLO option '{}'",
                    String::from_utf8_lossy(opt)
                )
                .into(),
            ));
        }
    }
    if let Some(p) = proto {
        if !(2..=3).contains(&p) {
            return Err(Error::coded("NOPROTO unsupported protocol version"));
        }
    }
    if let Some((u, p)) = creds {
        authenticate(ctx, args, u, p)?;
    }
    if !ctx.client.authenticated {
        return Err(Error::coded("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"));
    }
    if let Some(n) = name {
        validate_client_name(n)?;
        ctx.client.name = (!n.is_empty()).then(|| n.into());
    }
    if let Some(p) = proto {
        ctx.client.reply.resp = p as u8;
    }
    let id = ctx.client.id as i64;
    let out = ctx.out();
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(crate::REDIS_VERSION.as_bytes());
    out.bulk(b"proto");
    let resp = out.resp as i64;
    out.int(resp);
    out.bulk(b"id");
    out.int(id);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.empty_array();
    Ok(())
}

/// ```text
/// RESET
/// ```
/// Simple string `RESET`: the connection returns to its initial state.
fn reset(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::cmd::txn::discard_transaction(ctx.srv, ctx.client);
    crate::cmd::pubsub::unsubscribe_all(ctx.srv, ctx.client);
    crate::server::tracking::disable(ctx.srv, ctx.client);
    let id = ctx.client.id;
    ctx.srv.monitors.retain(|&m| m != id);
    let c = &mut *ctx.client;
    c.monitor = false;
    c.db = 0;
    c.reply.resp = 2;
    c.name = None;
    // RESET ends CLIENT REPLY OFF and a pending SKIP, but when RESET is itself
    // the skipped command its reply stays dropped.
    if c.reply_mode != crate::server::client::ReplyMode::Skipping {
        c.reply_mode = crate::server::client::ReplyMode::On;
    }
    c.no_evict = false;
    c.no_touch = false;
    c.authenticated = ctx.srv.acl.starts_authenticated();
    c.user = "default".into();
    ctx.out().simple("RESET");
    Ok(())
}

/// Client names may not contain spaces, newlines or special characters (CLIENT SETNAME, HELLO SETNAME).
pub fn validate_client_name(name: &[u8]) -> CmdResult {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(Error::msg(
            "Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    Ok(())
}
