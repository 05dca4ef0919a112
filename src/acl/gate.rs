//! The gate's ACL stage for a user with restrictions: the check, the ACL
//! LOG entry, and the rejection with the text the caller's context uses.

use super::check::{self, Denied};
use super::log::{Context, Entry};
use super::User;
use crate::command::gate::Caller;
use crate::command::table::CmdRef;
use crate::command::Args;
use crate::error::{PermStage, Rejection};
use crate::server::client::Client;
use crate::server::Server;

/// The gate's ACL stage past its fast path (the default user allowed
/// everything): None when the client's user may run the command; else
/// logs the denial and says why. Kept out of line so the gate stays small.
#[inline(never)]
pub fn check(
    srv: &Server,
    client: &Client,
    cmd: CmdRef,
    args: &Args,
    caller: Caller,
) -> Option<Rejection> {
    let user = srv.acl.user_of(&client.user);
    if user.is_some_and(|u| u.unrestricted) {
        return None;
    }
    denied(srv, client, user, cmd, args, caller)
}

/// None when `user` may run the command; else logs the denial and says why.
/// `user` None: the client's user was deleted (its connection is closing).
fn denied(
    srv: &Server,
    client: &Client,
    user: Option<&User>,
    cmd: CmdRef,
    args: &Args,
    caller: Caller,
) -> Option<Rejection> {
    // The server's own client (AOF loading, a master's stream) has no user
    // in Redis: nothing is refused to it.
    if caller == Caller::Internal || client.repl_role == crate::server::client::ReplRole::Master {
        return None;
    }
    let d = match user {
        Some(u) => check::check(u, cmd, args).err()?,
        None => Denied::Command,
    };
    let (stage, context) = match caller {
        Caller::Exec => (PermStage::Exec, Context::Multi),
        Caller::Script { .. } => (PermStage::Script, Context::Lua),
        _ if client.multi.is_some() => (PermStage::Request, Context::Multi),
        _ => (PermStage::Request, Context::Toplevel),
    };
    log_denial(srv, client, d, cmd, args, context);
    Some(Rejection::NoPerm(d, cmd.spec.name, stage))
}

/// Adds the ACL LOG entry for a refused command.
pub fn log_denial(
    srv: &Server,
    client: &Client,
    d: Denied,
    cmd: CmdRef,
    args: &Args,
    context: Context,
) {
    let (reason, object) = match d {
        Denied::Command => (super::log::Reason::Command, cmd.spec.name.as_bytes()),
        Denied::Key(i) => (super::log::Reason::Key, args.at(i)),
        Denied::Channel(i) => (super::log::Reason::Channel, args.at(i)),
    };
    log_event(
        srv,
        client,
        reason,
        object,
        client.user.as_bytes(),
        context,
        args,
    );
}

/// Adds an ACL LOG entry about `client`.
pub fn log_event(
    srv: &Server,
    client: &Client,
    reason: super::log::Reason,
    object: &[u8],
    username: &[u8],
    context: Context,
    args: &Args,
) {
    let argv_mem = args.from(0).map(|a| a.len()).sum();
    let entry = Entry {
        count: 1,
        reason,
        context,
        object: object.to_vec(),
        username: username.to_vec(),
        ctime_ms: crate::clock::real_now_us() / 1000,
        client_info: crate::cmd::server::client::describe(client, true, argv_mem),
    };
    let max = srv.config.get_i64("acllog-max-len").max(0) as usize;
    srv.acl.log_event(entry, max);
}
