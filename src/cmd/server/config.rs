//! CONFIG GET, SET, RESETSTAT, REWRITE, HELP.

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::config::{find_param, DENY_LOADING, HIDDEN, IMMUTABLE, PROTECTED};
use crate::error::{CmdResult, Error};
use crate::server::Ctx;
use crate::types::glob;

use super::ADMIN_SUB;

pub static SUBS: &[CommandSpec] = &[
    CommandSpec::new("config|get", -3, ADMIN_SUB, (0, 0, 0), get),
    CommandSpec::new("config|set", -4, ADMIN_SUB, (0, 0, 0), set),
    CommandSpec::new("config|resetstat", 2, ADMIN_SUB, (0, 0, 0), resetstat),
    CommandSpec::new("config|rewrite", 2, ADMIN_SUB, (0, 0, 0), rewrite),
    CommandSpec::new("config|help", 2, LOADING | STALE, (0, 0, 0), help),
];

const HELP: &[&str] = &[
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Prints this help.",
];

/// ```text
/// CONFIG HELP
/// ```
/// Array of status lines.
fn help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::cmd::help_reply(ctx, HELP)
}

/// ```text
/// CONFIG GET pattern [pattern ...]
/// ```
/// Map of parameter name → value. A pattern without glob characters names one
/// parameter (or alias) exactly and is answered under the name as given;
/// patterns match names and aliases, case-insensitively; each parameter once.
fn get(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mut found: Vec<(String, &'static str)> = Vec::new();
    for pat in args.by_ref() {
        let pat_s = String::from_utf8_lossy(pat);
        if !pat.iter().any(|c| matches!(c, b'[' | b'*' | b'?')) {
            if found.iter().any(|(n, _)| n.eq_ignore_ascii_case(&pat_s)) {
                continue;
            }
            if let Some(p) = find_param(&pat_s) {
                found.push((pat_s.into_owned(), p.name));
            }
            continue;
        }
        // Hidden parameters need their exact name (handled above).
        for (p, _) in ctx.srv.config.all().filter(|(p, _)| p.flags & HIDDEN == 0) {
            for name in std::iter::once(p.name).chain(p.alias) {
                if found.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                    continue;
                }
                if glob::matches(pat, name.as_bytes(), true) {
                    found.push((name.to_string(), p.name));
                }
            }
        }
    }
    let cfg = &ctx.srv.config;
    let out = &mut ctx.client.reply;
    out.map(found.len());
    for (name, canon) in &found {
        out.bulk(name.as_bytes());
        out.bulk(cfg.get_bytes(canon).unwrap_or_default());
    }
    Ok(())
}

/// `ERR CONFIG SET failed (possibly related to argument 'name') - why`
fn set_failed(name: &str, why: &str) -> Error {
    Error::Msg(format!("CONFIG SET failed (possibly related to argument '{name}') - {why}").into())
}

/// ```text
/// CONFIG SET parameter value [parameter value ...]
/// ```
/// `OK`. All pairs are checked first and applied together: when one fails,
/// every parameter keeps its previous value.
fn set(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if !args.remaining().is_multiple_of(2) {
        return Err(Error::Syntax);
    }
    // Values stay bytes: `requirepass "\xff\xfe"` is those two bytes.
    let mut pairs: Vec<(String, &'static crate::config::Param, &[u8])> = Vec::new();
    while let (Some(n), Some(value)) = (args.next(), args.next()) {
        let name = String::from_utf8_lossy(n).into_owned();
        let Some(p) = find_param(&name) else {
            return Err(Error::Msg(
                format!("Unknown option or number of arguments for CONFIG SET - '{name}'").into(),
            ));
        };
        if p.flags & IMMUTABLE != 0 {
            return Err(set_failed(&name, "can't set immutable config"));
        }
        if p.flags & PROTECTED != 0 && !protected_allowed(ctx) {
            return Err(set_failed(&name, "can't set protected config"));
        }
        // Redis's DENY_LOADING_CONFIG: refused during any load, a replica's
        // background (async) load of its master's RDB included.
        if p.flags & DENY_LOADING != 0
            && (crate::db::loading() || crate::repl::replica::async_loading(ctx.srv))
        {
            return Err(Error::coded(crate::error::LOADING));
        }
        // Redis detects duplicates by the names as typed (an alias and its
        // parameter may both appear; the later one wins).
        if pairs.iter().any(|(n, _, _)| n.eq_ignore_ascii_case(&name)) {
            return Err(set_failed(&name, "duplicate parameter"));
        }
        pairs.push((name, p, value));
    }
    let before = ctx.srv.config.clone();
    for (name, p, value) in &pairs {
        if let Err(why) = ctx.srv.config.set(p.name, value) {
            ctx.srv.config = before;
            return Err(set_failed(name, &why));
        }
    }
    // Listening sockets change last, once every value is valid, so a failed
    // pair never leaves the server listening somewhere new.
    for (name, p, _) in &pairs {
        if let Err(why) = runtime_check(ctx, p.name, &before) {
            ctx.srv.config = before;
            return Err(set_failed(name, &why));
        }
    }
    // The OOM score is written once per CONFIG SET, when either parameter
    // changed; a failure restores the previous values and score.
    let oom = ["oom-score-adj", "oom-score-adj-values"];
    if let Some((name, _, _)) = pairs.iter().find(|(_, p, _)| oom.contains(&p.name)) {
        if oom.iter().any(|n| ctx.srv.config.get(n) != before.get(n)) {
            if let Err(why) = crate::server::oom::apply(&ctx.srv.config) {
                ctx.srv.config = before;
                let _ = crate::server::oom::apply(&ctx.srv.config);
                return Err(set_failed(name, &why));
            }
        }
    }
    if let Err(why) = crate::persist::aof::config_changed(ctx.srv, &before, ctx.in_exec) {
        ctx.srv.config = before;
        return Err(set_failed("appendonly", &why));
    }
    // requirepass sets the default user's password each time it is set,
    // even to the same value (Redis's `updateRequirePass`).
    if pairs.iter().any(|(_, p, _)| p.name == "requirepass") {
        let pass = ctx.srv.config.requirepass.clone();
        ctx.srv.acl.set_requirepass(pass.as_deref());
    }
    after_set(ctx, &before);
    ctx.out().ok();
    Ok(())
}

/// `enable-protected-configs`: `yes` always, `local` from loopback and unix sockets.
fn protected_allowed(ctx: &Ctx) -> bool {
    match ctx.srv.config.get("enable-protected-configs") {
        Some("yes") => true,
        Some("local") => super::is_local(ctx.client),
        _ => false,
    }
}

/// Re-binds the TCP listeners when `port` or `bind` changed, as Redis's
/// `changeBindAddr`: the old listeners stop first (connections stay open),
/// then the new addresses are bound; a failure (Redis's error texts and log
/// lines) binds the old ones again.
fn runtime_check(ctx: &mut Ctx, name: &str, before: &crate::config::Config) -> Result<(), String> {
    let cfg = &ctx.srv.config;
    // One re-bind covers a port and a bind change in the same CONFIG SET.
    let changed = matches!(name, "port" | "bind")
        && (cfg.port != before.port || cfg.bind != before.bind)
        && ctx.srv.tcp_addrs != (cfg.bind.clone(), cfg.port);
    if !changed {
        return Ok(());
    }
    let fail = || {
        if name == "port" {
            "Unable to listen on this port. Check server logs.".to_string()
        } else {
            "Failed to bind to specified addresses.".to_string()
        }
    };
    let Some(me) = ctx.srv.self_ref.as_ref().and_then(|w| w.upgrade()) else {
        return Err(fail());
    };
    // Redis closes the listeners first, then binds (so `*` can replace
    // `127.0.0.1` on the same port); on failure it restores the old ones.
    for a in ctx.srv.tcp_accepts.drain(..) {
        a.stop();
    }
    let (listeners, result) = match crate::net::listener::bind_tcp(cfg) {
        Ok(l) => (l, Ok(())),
        Err(_) => {
            crate::log::warning("Failed to bind");
            crate::log::warning(&format!("Failed applying new configuration. Possibly related to new {name} setting. Restoring previous settings."));
            let old = crate::net::listener::bind_tcp(before).unwrap_or_else(|e| {
                crate::log::warning(&format!(
                    "Could not listen again on the previous addresses: {e}"
                ));
                Vec::new()
            });
            (old, Err(fail()))
        }
    };
    // The busy-script poller accepts on raw fds: give it the new sockets.
    let script = &mut ctx.srv.script;
    script.listeners.retain(|(_, unix)| unix.is_some());
    script.listeners.extend(
        listeners
            .iter()
            .map(|l| (std::os::fd::AsRawFd::as_raw_fd(l), None)),
    );
    ctx.srv.tcp_accepts = listeners
        .into_iter()
        .map(|l| crate::net::listener::spawn_tcp_accept(&me, l))
        .collect();
    if result.is_ok() {
        ctx.srv.tcp_addrs = (cfg.bind.clone(), cfg.port);
    }
    result
}

/// Effects of a successful CONFIG SET on running state.
fn after_set(ctx: &mut Ctx, before: &crate::config::Config) {
    let cfg = &ctx.srv.config;
    if cfg.loglevel != before.loglevel {
        crate::log::set_level(cfg.loglevel);
    }
    for p in crate::config::PARAMS.iter().filter(|p| !p.acted()) {
        if cfg.get_bytes(p.name) != before.get_bytes(p.name) {
            crate::log::warning(&format!(
                "CONFIG SET {}: Oxidis accepts this parameter but does not act on it yet",
                p.name
            ));
        }
    }
    let max = cfg.slowlog_max_len;
    let maxmemory_changed = cfg.maxmemory != before.maxmemory;
    let client_limit_changed =
        maxmemory_changed || cfg.maxmemory_clients != before.maxmemory_clients;
    ctx.srv.slowlog.trim(max);
    crate::server::evict::apply_config(ctx.srv);
    if maxmemory_changed {
        crate::server::evict::maxmemory_changed(ctx.srv);
    }
    if client_limit_changed {
        crate::server::client_mem::apply_config(ctx.srv, ctx.client);
    }
    let backlog = ctx.srv.config.get_i64("repl-backlog-size").max(1) as usize;
    if let Some(b) = ctx.srv.prop.backlog.as_mut() {
        if b.size() != backlog {
            b.resize(backlog);
        }
    }
}

/// ```text
/// CONFIG RESETSTAT
/// ```
/// `OK`: INFO's counters, command and error stats start again from zero.
fn resetstat(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    ctx.srv.stats.reset();
    crate::db::lazyfree::reset_stats();
    ctx.srv.latency = Default::default();
    for db in ctx.srv.ks.dbs.iter_mut() {
        db.hits = 0;
        db.misses = 0;
        db.expired_count = 0;
    }
    ctx.out().ok();
    Ok(())
}

/// The ACL users as config file `user` lines (what CONFIG REWRITE writes).
pub(super) fn acl_user_lines(srv: &crate::server::Server) -> Vec<String> {
    srv.acl
        .all()
        .into_iter()
        .map(|u| String::from_utf8_lossy(&crate::cmd::acl::user_line(u)).into_owned())
        .collect()
}

/// ```text
/// CONFIG REWRITE
/// ```
/// `OK` once the config file holds the running configuration.
fn rewrite(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let Some(path) = ctx.srv.config.config_file.clone() else {
        return Err(Error::msg("The server is running without a config file"));
    };
    let users = acl_user_lines(ctx.srv);
    match crate::config::rewrite::rewrite_with_users(&ctx.srv.config, &path, Some(&users)) {
        Ok(()) => {
            crate::log::notice("CONFIG REWRITE executed with success.");
            ctx.out().ok();
            Ok(())
        }
        Err(e) => {
            crate::log::warning(&format!("CONFIG REWRITE failed: {e}"));
            Err(Error::Msg(format!("Rewriting config file: {e}").into()))
        }
    }
}
