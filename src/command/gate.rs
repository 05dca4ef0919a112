//! The gate: the one check every command passes before it runs, in Redis's `processCommand` order.
//!
//! Whoever runs a command (a client's request, EXEC, `redis.call`, the
//! busy-script poller, a woken blocked client, the server's own client)
//! asks [`check`] (or [`admit`], when the command is already resolved) and
//! gets a [`Verdict`]. The stages, in order:
//!
//! lookup → test controls (OXIDIS) → arity → protected (DEBUG) → auth → no-multi → ACL → cluster redirection → OOM →
//! read-only replica → pub/sub context (RESP2) → LOADING → BUSY →
//! CLIENT PAUSE → queue (inside MULTI) or run.
//!
//! Which stages apply depends on the [`Caller`]: EXEC and woken clients were
//! checked when their command arrived (Redis re-checks only ACL then), and
//! `redis.call` has its own rules (Redis's `scriptCall`). Decisions read the
//! spec's flags, never a command's name. Stages for features Oxidis does not
//! have yet pass, and name the issue that fills them.

use super::args::Args;
use super::names::Names;
use super::spec::flags;
use super::table::CmdRef;
use crate::error::{Error, Rejection};
use crate::server::client::Client;
use crate::server::Server;

/// Who asks to run a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A request read from a client's connection.
    Client,
    /// A request the busy-script poller read while a script runs past
    /// `busy-reply-threshold` (`function`: the script is a FUNCTION).
    WhileBusy { function: bool },
    /// A command MULTI queued, run by EXEC.
    Exec,
    /// `redis.call` / `redis.pcall` from a script (`read_only`: EVAL_RO,
    /// FCALL_RO or a `no-writes` script; `allow_oom`: it declared
    /// `allow-oom`; `wrote`: a write already ran, so it cannot stop halfway).
    Script {
        read_only: bool,
        allow_oom: bool,
        wrote: bool,
    },
    /// A blocked command run again because one of its keys became ready.
    Woken,
    /// The server's own client (loading an AOF, a master's stream): Redis's
    /// `mustObeyClient`, never refused for the server's state.
    Internal,
}

/// What the gate decided.
pub enum Verdict {
    /// Run it now.
    Run(CmdRef),
    /// Inside MULTI: queue it and answer `+QUEUED`.
    Queue(CmdRef),
    /// CLIENT PAUSE holds it: leave it unread until the pause ends.
    Postpone,
    /// Refused; the command when it was found (for its `rejected_calls`).
    Reject(Option<CmdRef>, Rejection),
}

/// Resolves and checks a command.
pub fn check(srv: &Server, client: &Client, args: &Args, caller: Caller) -> Verdict {
    let cmd = match resolve(&srv.config.names, args) {
        Ok(cmd) => cmd,
        Err(e) => {
            let r = match caller {
                Caller::Script { .. } => Rejection::ScriptUnknown,
                _ => Rejection::Unknown(e),
            };
            return Verdict::Reject(None, r);
        }
    };
    admit(srv, client, cmd, args, caller)
}

/// Checks a resolved command (EXEC's queue and woken clients keep theirs).
pub fn admit(srv: &Server, client: &Client, cmd: CmdRef, args: &Args, caller: Caller) -> Verdict {
    let spec = cmd.spec;
    let reject = |r| Verdict::Reject(Some(cmd), r);
    match caller {
        Caller::Exec | Caller::Woken => {
            // Checked when they arrived; Redis checks ACL again at EXEC.
            return match acl(srv, client, cmd, args, caller) {
                Some(r) => reject(r),
                None => Verdict::Run(cmd),
            };
        }
        Caller::Script {
            read_only,
            allow_oom,
            wrote,
        } => {
            return script_stage(srv, client, cmd, args, read_only, allow_oom, wrote);
        }
        Caller::Client | Caller::WhileBusy { .. } | Caller::Internal => {}
    }
    if spec.has(flags::TEST_CONTROL) && !srv.config.enable_test_controls {
        return reject(Rejection::TestControlsDisabled);
    }
    if !spec.arity_ok(args.len()) {
        return reject(Rejection::Arity(spec.full_name()));
    }
    if spec.has(flags::PROTECTED) {
        if let Some(r) = crate::cmd::server::debug::protected_refusal(srv, client, spec) {
            return reject(r);
        }
    }
    if !client.authenticated && !spec.has(flags::NO_AUTH) && srv.acl.auth_required() {
        return reject(Rejection::NoAuth);
    }
    if client.multi.is_some() && spec.has(flags::NO_MULTI) {
        return reject(Rejection::NoMulti);
    }
    if let Some(r) = acl(srv, client, cmd, args, caller) {
        return reject(r);
    }
    let obey = caller == Caller::Internal;
    if !obey {
        if let Some(r) = cluster(srv, client, cmd, args) {
            return reject(r);
        }
        // A command read while a script runs past its threshold neither
        // evicts nor is refused for memory (Redis: a yielding command).
        if !matches!(caller, Caller::WhileBusy { .. }) {
            if let Some(r) = oom(srv, client, cmd, args) {
                return reject(r);
            }
        }
        if let Some(r) = disk_error(srv, client, cmd, args) {
            return reject(r);
        }
        if let Some(r) = min_replicas(srv, client, cmd, args) {
            return reject(r);
        }
        if let Some(r) = read_only_replica(srv, client, cmd, args) {
            return reject(r);
        }
    }
    if client.in_pubsub_context() && !spec.has(flags::PUBSUB_CONTEXT) {
        return reject(Rejection::PubSubContext(spec.full_name()));
    }
    if !obey {
        if let Some(r) = stale_replica(srv, client, cmd, args) {
            return reject(r);
        }
    }
    if let Some(r) = loading(cmd, caller) {
        return reject(r);
    }
    // A replica loading its master's RDB while it serves the old data
    // refuses only what must not run then (`no_async_loading`).
    if !obey && cmd.spec.has(flags::NO_ASYNC_LOADING) && crate::repl::replica::async_loading(srv) {
        return reject(Rejection::Loading);
    }
    if let Caller::WhileBusy { function } = caller {
        if !spec.has(flags::ALLOW_BUSY) {
            return reject(Rejection::Busy { function });
        }
    }
    // A replica's link carries only REPLCONF and the like: keyspace
    // commands would escape CLIENT PAUSE, which replicas are exempt from.
    if client.repl_role == crate::server::client::ReplRole::Replica
        && flagged_or_queued(
            srv,
            client,
            cmd,
            args,
            flags::WRITE | flags::READONLY | flags::MAY_REPLICATE,
        )
    {
        return reject(Rejection::ReplicaKeyspace);
    }
    if !obey && paused(srv, client, cmd, args) {
        return Verdict::Postpone;
    }
    if client.multi.is_some() && !spec.has(flags::TXN_CONTROL) {
        Verdict::Queue(cmd)
    } else {
        Verdict::Run(cmd)
    }
}

/// `redis.call`'s stages (Redis's `scriptCall`): arity, noscript, stale,
/// ACL, writes from a read-only script, OOM, cluster slots. No queueing,
/// no pause: the script as a whole passed the client's gate.
fn script_stage(
    srv: &Server,
    client: &Client,
    cmd: CmdRef,
    args: &Args,
    read_only: bool,
    allow_oom: bool,
    wrote: bool,
) -> Verdict {
    let spec = cmd.spec;
    let reject = |r| Verdict::Reject(Some(cmd), r);
    if !spec.arity_ok(args.len()) {
        return reject(Rejection::ScriptArity);
    }
    // DEBUG SET-DISABLE-DENY-SCRIPTS lifts this check (a test hook).
    if spec.has(flags::NOSCRIPT) && !srv.script.allow_noscript {
        return reject(Rejection::ScriptNoScript);
    }
    // A stale replica runs only `stale` commands from scripts.
    if crate::repl::replica::stale(srv) && !spec.has(flags::STALE) {
        return reject(Rejection::ScriptStaleReplica);
    }
    let caller = Caller::Script {
        read_only,
        allow_oom,
        wrote,
    };
    if let Some(r) = acl(srv, client, cmd, args, caller) {
        return reject(r);
    }
    // Redis counts may-replicate commands as writes here, so read-only
    // scripts can run during CLIENT PAUSE WRITE.
    if read_only && spec.has(flags::WRITE | flags::MAY_REPLICATE) {
        return reject(Rejection::ScriptWriteInReadOnly);
    }
    // A script that has not written yet is refused its first write on a
    // read-only replica (unless the master runs it), or while persisting
    // fails (after a write it must go on, as in Redis).
    if !wrote
        && spec.has(flags::WRITE)
        && crate::repl::replica::read_only(srv)
        && !crate::db::applying_master()
    {
        return reject(Rejection::ReadOnlyReplica);
    }
    if !wrote && spec.has(flags::WRITE) {
        if let Some(r) = crate::persist::write_denied(srv) {
            return reject(r);
        }
        if !crate::repl::good_replicas_suffice(srv) {
            return reject(Rejection::NoReplicas);
        }
    }
    let oom_exempt = allow_oom || wrote;
    // A denyoom command is refused over maxmemory unless the script already
    // wrote or declared `allow-oom` (Redis's `scriptVerifyOOM`), judged by
    // the memory state as the command that runs the script started.
    if !oom_exempt && spec.has(flags::DENYOOM) && over_maxmemory(srv) {
        return reject(Rejection::Oom);
    }
    // Cluster mode: keys outside this node's slots, and keys of another
    // slot than the script's unless it declared `allow-cross-slot-keys`.
    if let Some(c) = srv.cluster.as_deref() {
        if let Some(r) = crate::cluster::redirect::check_script_call(srv, c, client, spec, args) {
            return reject(r);
        }
    }
    Verdict::Run(cmd)
}

/// ACL stage: the user's permissions on the command, its keys and channels.
/// The default user allowed everything (the usual case) costs two loads
/// and a branch; everyone else goes to `acl::gate::check`.
#[inline(always)]
fn acl(
    srv: &Server,
    client: &Client,
    cmd: CmdRef,
    args: &Args,
    caller: Caller,
) -> Option<Rejection> {
    if client.user.is_default() && srv.acl.default.unrestricted {
        return None;
    }
    crate::acl::gate::check(srv, client, cmd, args, caller)
}

/// Cluster stage: MOVED / ASK / CROSSSLOT / TRYAGAIN / CLUSTERDOWN for
/// keys this node does not serve (`cluster::redirect`); one branch in
/// standalone mode.
#[inline]
fn cluster(srv: &Server, client: &Client, cmd: CmdRef, args: &Args) -> Option<Rejection> {
    let c = srv.cluster.as_deref()?;
    crate::cluster::redirect::check_request(srv, c, client, cmd.spec, args)
}

/// OOM stage: refuse `denyoom` commands (scripts by their declared flags),
/// EXEC of a transaction holding one, and inside MULTI anything but the
/// transaction's own commands, while memory is over `maxmemory` with nothing
/// left to evict (Redis's `processCommand`). Eviction ran just before, in
/// dispatch (`server::evict::before_command`), which set the state read here.
fn oom(srv: &Server, client: &Client, cmd: CmdRef, args: &Args) -> Option<Rejection> {
    // The memory state first: without maxmemory (the usual case) the
    // command's flags need not be worked out.
    if !over_maxmemory(srv) {
        return None;
    }
    let in_multi = client.multi.is_some() && !cmd.spec.has(flags::TXN_CONTROL);
    let denyoom = flagged_or_queued(srv, client, cmd, args, flags::DENYOOM);
    (denyoom || in_multi).then_some(Rejection::Oom)
}

/// True when the command has one of `mask`'s flags as the checks see them
/// (scripts by their declared flags), or is an EXEC whose queue holds such
/// a command (Redis's `cmd_flags` and `mstate.cmd_flags`).
fn flagged_or_queued(srv: &Server, client: &Client, cmd: CmdRef, args: &Args, mask: u32) -> bool {
    let effective = |spec, args: &Args| crate::script::cmd_flags::effective(srv, spec, args);
    effective(cmd.spec, args) & mask != 0
        || (cmd.spec.has(flags::TXN_EXEC)
            && client.multi.as_ref().is_some_and(|m| {
                m.queue
                    .iter()
                    .any(|q| effective(q.spec, &q.argv.args()) & mask != 0)
            }))
}

/// True when `maxmemory` is set and the running top-level command started
/// over it with nothing left to evict (Redis's `pre_command_oom_state`).
fn over_maxmemory(srv: &Server) -> bool {
    srv.config.maxmemory > 0 && srv.evict.oom
}

/// Disk-error stage: when persisting failed (`persist::write_denied`),
/// writes, EXEC of a transaction holding one, and PING are refused
/// (Redis's `processCommand` after OOM).
fn disk_error(srv: &Server, client: &Client, cmd: CmdRef, args: &Args) -> Option<Rejection> {
    let denied = crate::persist::write_denied(srv)?;
    let write = flagged_or_queued(srv, client, cmd, args, flags::WRITE);
    (write || cmd.spec.name == "ping").then_some(denied)
}

/// Min-replicas stage: writes (and EXEC of a transaction holding one) are
/// refused while fewer replicas than `min-replicas-to-write` acknowledged
/// within `min-replicas-max-lag` seconds (Redis's checkGoodReplicasStatus).
fn min_replicas(srv: &Server, client: &Client, cmd: CmdRef, args: &Args) -> Option<Rejection> {
    if crate::repl::good_replicas_suffice(srv) {
        return None;
    }
    flagged_or_queued(srv, client, cmd, args, flags::WRITE).then_some(Rejection::NoReplicas)
}

/// Read-only replica stage: writes (scripts by their declared flags, EXEC
/// of a transaction holding one) refused on a replica with
/// `replica-read-only yes` (Redis's `processCommand`).
#[inline]
fn read_only_replica(srv: &Server, client: &Client, cmd: CmdRef, args: &Args) -> Option<Rejection> {
    if !crate::repl::replica::is_replica(srv) {
        return None;
    }
    (crate::repl::replica::read_only(srv)
        && flagged_or_queued(srv, client, cmd, args, flags::WRITE))
    .then_some(Rejection::ReadOnlyReplica)
}

/// Stale replica stage: a replica whose link is down, with
/// `replica-serve-stale-data no`, runs only commands flagged `stale` (EXEC
/// only when all its queue is).
#[inline]
fn stale_replica(srv: &Server, client: &Client, cmd: CmdRef, args: &Args) -> Option<Rejection> {
    if !crate::repl::replica::is_replica(srv) || !crate::repl::replica::stale(srv) {
        return None;
    }
    let effective = |spec, args: &Args| crate::script::cmd_flags::effective(srv, spec, args);
    let deny = effective(cmd.spec, args) & flags::STALE == 0
        || (cmd.spec.has(flags::TXN_EXEC)
            && client.multi.as_ref().is_some_and(|m| {
                m.queue
                    .iter()
                    .any(|q| effective(q.spec, &q.argv.args()) & flags::STALE == 0)
            }));
    deny.then_some(Rejection::MasterDown)
}

/// LOADING stage: while the dataset loads, requests from connections
/// (served while a script replayed from the AOF runs past its time limit)
/// are refused unless the command has the `loading` flag. The loader's own
/// commands and what scripts call are not (Redis's `processCommand` only).
#[inline]
fn loading(cmd: CmdRef, caller: Caller) -> Option<Rejection> {
    let from_connection = matches!(caller, Caller::Client | Caller::WhileBusy { .. });
    (from_connection && crate::db::loading() && !cmd.spec.has(flags::LOADING))
        .then_some(Rejection::Loading)
}

/// CLIENT PAUSE stage: every command under `PAUSE ALL`; under `PAUSE WRITE`
/// writes and may-replicate commands, and EXEC of a transaction holding one.
/// Scripts count by the flags they declare (Redis's `getCommandFlags`, see
/// `script::cmd_flags`).
#[inline]
fn paused(srv: &Server, client: &Client, cmd: CmdRef, args: &Args) -> bool {
    srv.pause.is_some() && paused_now(srv, client, cmd, args)
}

fn paused_now(srv: &Server, client: &Client, cmd: CmdRef, args: &Args) -> bool {
    let Some(p) = srv.pause else {
        return false;
    };
    if p.until_ms <= crate::clock::real_now_us() / 1000 {
        return false;
    }
    if !p.write_only {
        return true;
    }
    flagged_or_queued(srv, client, cmd, args, flags::WRITE | flags::MAY_REPLICATE)
}

/// Lookup stage: the command (or subcommand) for a request, with Redis's
/// errors for unknown commands and subcommands.
/// Names are looked up as `rename-command` left them (`names`).
pub fn resolve(names: &Names, args: &Args) -> Result<CmdRef, Error> {
    let name = args.at(0);
    let Some(cmd) = names.lookup(name) else {
        return Err(unknown_command(args));
    };
    if cmd.spec.subcommands.is_empty() || args.len() < 2 {
        return Ok(cmd);
    }
    match Names::sub(cmd, args.at(1)) {
        Some(sub) => Ok(sub),
        None => Err(Error::UnknownSubcommand {
            sub: c_str(args.at(1), 128),
            cmd: String::from_utf8_lossy(name).to_uppercase(),
        }),
    }
}

/// C's `%.Ns` of a binary argument: stops at a NUL byte and after N bytes.
pub(crate) fn c_str(b: &[u8], max: usize) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::args::Argv;
    use crate::error::Error;
    use crate::server::client::ConnKind;
    use crate::server::{Pause, Server};

    fn setup() -> (Server, Client) {
        let srv = Server::new(crate::Config::default());
        let c = Client::new(1, String::new(), String::new(), ConnKind::Tcp, false);
        (srv, c)
    }

    fn verdict(srv: &Server, c: &Client, words: &[&str], caller: Caller) -> Verdict {
        let argv = Argv::from_slices(words.iter().map(|w| w.as_bytes()));
        check(srv, c, &argv.args(), caller)
    }

    /// The rejection's error text, or what the gate decided.
    fn outcome(srv: &Server, c: &Client, words: &[&str], caller: Caller) -> String {
        match verdict(srv, c, words, caller) {
            Verdict::Run(cmd) => format!("run {}", cmd.spec.name),
            Verdict::Queue(cmd) => format!("queue {}", cmd.spec.name),
            Verdict::Postpone => "postpone".into(),
            Verdict::Reject(_, r) => r.error().text().into_owned(),
        }
    }

    #[test]
    fn stages_run_in_redis_order() {
        let (mut srv, mut c) = setup();
        // AUTH is needed while the default user has a password.
        srv.acl.set_requirepass(Some(b"pw"));
        c.authenticated = false;
        // Arity comes before auth, auth before everything after it.
        assert_eq!(
            outcome(&srv, &c, &["get"], Caller::Client),
            Error::Arity("get".into()).text()
        );
        assert_eq!(
            outcome(&srv, &c, &["get", "k"], Caller::Client),
            "NOAUTH Authentication required."
        );
        assert_eq!(
            outcome(&srv, &c, &["auth", "pw"], Caller::Client),
            "run auth"
        );
        c.authenticated = true;
        c.multi = Some(Box::default());
        assert_eq!(
            outcome(&srv, &c, &["nosuch", "a"], Caller::Client),
            "ERR unknown command 'nosuch', with args beginning with: 'a' "
        );
        assert_eq!(
            outcome(&srv, &c, &["get", "k"], Caller::Client),
            "queue get"
        );
        assert_eq!(outcome(&srv, &c, &["exec"], Caller::Client), "run exec");
        assert_eq!(outcome(&srv, &c, &["reset"], Caller::Client), "run reset");
    }

    #[test]
    fn pubsub_context_is_decided_by_flag() {
        let (srv, mut c) = setup();
        c.channels.insert(b"ch".to_vec());
        assert_eq!(outcome(&srv, &c, &["ping"], Caller::Client), "run ping");
        assert_eq!(
            outcome(&srv, &c, &["psubscribe", "p*"], Caller::Client),
            "run psubscribe"
        );
        assert!(
            outcome(&srv, &c, &["get", "k"], Caller::Client).starts_with("ERR Can't execute 'get'")
        );
        c.reply.resp = 3;
        assert_eq!(outcome(&srv, &c, &["get", "k"], Caller::Client), "run get");
    }

    #[test]
    fn busy_allows_only_allow_busy_commands() {
        let (srv, c) = setup();
        let busy = Caller::WhileBusy { function: false };
        assert!(outcome(&srv, &c, &["get", "k"], busy)
            .starts_with("BUSY Redis is busy running a script. You can only call SCRIPT KILL"));
        assert_eq!(
            outcome(&srv, &c, &["script", "kill"], busy),
            "run script|kill"
        );
        let fbusy = Caller::WhileBusy { function: true };
        assert!(outcome(&srv, &c, &["get", "k"], fbusy).contains("FUNCTION KILL"));
    }

    #[test]
    fn pause_holds_writes_and_exec_of_writes() {
        let (mut srv, mut c) = setup();
        srv.pause = Some(Pause {
            until_ms: i64::MAX,
            write_only: true,
        });
        assert_eq!(
            outcome(&srv, &c, &["set", "k", "v"], Caller::Client),
            "postpone"
        );
        assert_eq!(outcome(&srv, &c, &["get", "k"], Caller::Client), "run get");
        // Errors found before the pause stage are answered at once.
        assert!(outcome(&srv, &c, &["set", "k"], Caller::Client).starts_with("ERR wrong number"));
        c.multi = Some(Box::default());
        assert_eq!(outcome(&srv, &c, &["exec"], Caller::Client), "run exec");
        assert_eq!(
            outcome(&srv, &c, &["set", "k", "v"], Caller::Client),
            "postpone"
        );
        let q = Argv::from_slices([&b"set"[..], b"k", b"v"]);
        let cmd = resolve(&Names::default(), &q.args()).ok().unwrap();
        c.multi
            .as_mut()
            .unwrap()
            .queue
            .push(crate::server::client::Queued {
                spec: cmd.spec,
                id: cmd.id,
                argv: q,
            });
        assert_eq!(outcome(&srv, &c, &["exec"], Caller::Client), "postpone");
        // Scripts and the server's own client are never held.
        let script = Caller::Script {
            read_only: false,
            allow_oom: false,
            wrote: false,
        };
        assert_eq!(outcome(&srv, &c, &["set", "k", "v"], script), "run set");
        assert_eq!(
            outcome(&srv, &c, &["set", "k", "v"], Caller::Internal),
            "queue set"
        );
        srv.pause = Some(Pause {
            until_ms: 0,
            write_only: false,
        });
        assert_eq!(
            outcome(&srv, &c, &["set", "k", "v"], Caller::Client),
            "queue set"
        );
    }

    #[test]
    fn script_stage_has_its_own_errors() {
        let (srv, c) = setup();
        let s = Caller::Script {
            read_only: false,
            allow_oom: false,
            wrote: false,
        };
        let ro = Caller::Script {
            read_only: true,
            allow_oom: false,
            wrote: false,
        };
        assert_eq!(
            outcome(&srv, &c, &["nosuch"], s),
            "ERR Unknown Redis command called from script"
        );
        assert_eq!(
            outcome(&srv, &c, &["config", "nosuch"], s),
            "ERR Unknown Redis command called from script"
        );
        assert_eq!(
            outcome(&srv, &c, &["get"], s),
            "ERR Wrong number of args calling Redis command from script"
        );
        assert_eq!(
            outcome(&srv, &c, &["multi"], s),
            "ERR This Redis command is not allowed from script"
        );
        assert_eq!(
            outcome(&srv, &c, &["set", "k", "v"], ro),
            "ERR Write commands are not allowed from read-only scripts."
        );
        assert_eq!(outcome(&srv, &c, &["get", "k"], ro), "run get");
    }
}
