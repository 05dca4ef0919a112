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

/// Checks a username/password pair against `requirepass` (the default user).
fn check_credentials(ctx: &Ctx, user: &[u8], pass: &[u8]) -> bool {
    if user != b"default" {
        return false;
    }
    match &ctx.srv.config.requirepass {
        Some(p) => same_secret(p, pass),
        None => true, // the default user is `nopass` when no password is set
    }
}

/// Compares two secrets in a time that tells nothing about where they
/// differ or how long the stored one is (Redis's `time_independent_strcmp`
/// idea): both are hashed to fixed-length digests, compared without an early
/// exit. Only equal digests go on to the byte comparison, so a SHA-1
/// collision is still refused and a wrong guess never reaches it.
fn same_secret(stored: &[u8], given: &[u8]) -> bool {
    use sha1::{Digest, Sha1};
    let a = Sha1::digest(stored);
    let b = Sha1::digest(given);
    let diff = a
        .iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0 && stored == given
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
        if ctx.srv.config.requirepass.is_none() {
            return Err(Error::msg(
                "AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
            ));
        }
        (&b"default"[..], args.at(1))
    } else {
        (args.at(1), args.at(2))
    };
    if check_credentials(ctx, user, pass) {
        ctx.client.authenticated = true;
        ctx.client.user = String::from_utf8_lossy(user).into_owned().into();
        ctx.out().ok();
        Ok(())
    } else {
        Err(Error::WrongPass)
    }
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
        if !check_credentials(ctx, u, p) {
            return Err(Error::WrongPass);
        }
        ctx.client.authenticated = true;
        ctx.client.user = String::from_utf8_lossy(u).into_owned().into();
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
    c.authenticated = ctx.srv.config.requirepass.is_none();
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

#[cfg(test)]
mod tests {
    use super::same_secret;

    #[test]
    fn secrets_compare_as_bytes() {
        assert!(same_secret(b"\xff\xfe\xfd", b"\xff\xfe\xfd"));
        assert!(!same_secret(
            b"\xff\xfe\xfd",
            "\u{fffd}\u{fffd}\u{fffd}".as_bytes()
        ));
        assert!(!same_secret(b"\xff\xfe\xfd", b"\xff\xfe"));
        assert!(!same_secret(b"a", b"a\0"));
        assert!(!same_secret(b"", b"x"));
        assert!(same_secret(b"", b""));
    }
}
