//! Users from the config file's `user` lines and from `aclfile`: at
//! start-up, ACL LOAD (all or nothing) and ACL SAVE, with Redis's messages.

use std::collections::BTreeMap;

use super::rules::{self, RuleError};
use super::user::{has_spaces, User};
use super::{pubsub_default, Acl};
use crate::server::client::Client;
use crate::server::Server;

/// `Duplicate user found. A user can only be defined once in config files`
const DUPLICATE: &str = "Duplicate user found. A user can only be defined once in config files";

/// Checks a config-file `user` line (`words[0]` is `user`) as Redis does
/// while reading the file (Redis's `ACLAppendUserForLoading`): rules with
/// unknown commands pass here and fail at start-up. Ok: the merged rules.
/// The word a message names is `words[i]` for the rule's index `i` among
/// the merged rules, as Redis prints it.
pub fn check_config_user(
    words: &[Vec<u8>],
    seen: &[Vec<Vec<u8>>],
    allchannels: bool,
) -> Result<Vec<Vec<u8>>, String> {
    let say = |i: usize, msg: &str| {
        format!(
            "Error in user declaration '{}': {}",
            String::from_utf8_lossy(words.get(i).map_or(&b""[..], |w| w)),
            msg
        )
    };
    if seen.iter().any(|u| u[0] == words[1]) {
        return Err(say(1, DUPLICATE));
    }
    let rest: Vec<&[u8]> = words[2..].iter().map(|w| w.as_slice()).collect();
    let merged = rules::merge_selectors(&rest).map_err(|i| say(i, "Syntax error"))?;
    let mut fake = User::new("__fakeuser__", allchannels);
    for (j, op) in merged.iter().enumerate() {
        match rules::apply(&mut fake, op, allchannels) {
            Ok(()) | Err(RuleError::UnknownCommand) => {}
            Err(e) => return Err(say(j, e.message())),
        }
    }
    let mut line = vec![words[1].clone()];
    line.extend(merged);
    Ok(line)
}

/// Loads the config file's users, then `aclfile` (Redis's
/// `ACLLoadUsersAtStartup`); an error stops the server from starting.
pub fn load_at_startup(srv: &mut Server) -> Result<(), String> {
    let aclfile = srv.config.get("aclfile").unwrap_or("").to_string();
    if !aclfile.is_empty() && !srv.config.acl_users.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
    }
    let allchannels = pubsub_default(&srv.config);
    for line in srv.config.acl_users.clone() {
        let name = String::from_utf8_lossy(&line[0]).into_owned();
        if has_spaces(&line[0]) {
            return Err("Spaces not allowed in ACL usernames".into());
        }
        let mut u = if name == "default" {
            let mut d = srv.acl.default.clone();
            rules::apply(&mut d, b"reset", allchannels).ok();
            d
        } else {
            User::new(&name, allchannels)
        };
        for op in &line[1..] {
            if let Err(e) = rules::apply(&mut u, op, allchannels) {
                return Err(format!(
                    "Error loading ACL rule '{}' for the user named '{}': {}",
                    String::from_utf8_lossy(op),
                    name,
                    e.message()
                ));
            }
        }
        u.compile();
        if !u.enabled {
            crate::log::notice(&format!("The user '{name}' is disabled (there is no 'on' modifier in the user description). Make sure this is not a configuration error."));
        }
        store(&mut srv.acl, u);
    }
    if !aclfile.is_empty() {
        let users = parse_file(&srv.config, &aclfile, allchannels)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
        install(&mut srv.acl, users, allchannels);
    }
    Ok(())
}

fn store(acl: &mut Acl, u: User) {
    if u.name == "default" {
        acl.default = u;
    } else {
        acl.users.insert(u.name.clone(), u);
    }
}

/// ACL LOAD: every user from `path`, replacing all users, or an error and
/// no change. Clients of the users replaced (all but `default`) are
/// disconnected, as Redis frees the old users.
pub fn load(srv: &mut Server, current: &mut Client, path: &str) -> Result<(), String> {
    let allchannels = pubsub_default(&srv.config);
    let users = parse_file(&srv.config, path, allchannels)?;
    let old = install(&mut srv.acl, users, allchannels);
    for name in old {
        super::clients::kill_user_clients(srv, current, &name);
    }
    Ok(())
}

/// Makes `users` the set of users (a `default` user as Redis creates it
/// when the file has none). Returns the names of the users replaced.
fn install(acl: &mut Acl, mut users: BTreeMap<String, User>, allchannels: bool) -> Vec<String> {
    acl.default = users
        .remove("default")
        .unwrap_or_else(|| User::new_default(allchannels));
    let old = std::mem::replace(&mut acl.users, users);
    old.into_keys().collect()
}

/// Reads an ACL file (Redis's `ACLLoadFromFile`): every line checked, all
/// errors reported in one message.
/// `path` is as configured (the errors name it so), found relative to `dir`.
fn parse_file(
    config: &crate::Config,
    path: &str,
    allchannels: bool,
) -> Result<BTreeMap<String, User>, String> {
    let text = std::fs::read(config.path(path)).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{path}': {}",
            crate::config::os_error(&e)
        )
    })?;
    let mut users = BTreeMap::new();
    let mut errors = String::new();
    for (i, raw) in text.split(|&c| c == b'\n').enumerate() {
        let n = i + 1;
        let line = trim(raw, b" \t\r\n");
        if line.is_empty() {
            continue;
        }
        // Words are split at each single space, as Redis's `sdssplitlen`.
        let words: Vec<&[u8]> = line.split(|&c| c == b' ').collect();
        if words[0] != b"user" || words.len() < 2 {
            errors.push_str(&format!(
                "{path}:{n} should start with user keyword followed by the username. "
            ));
            continue;
        }
        let name = String::from_utf8_lossy(words[1]).into_owned();
        if has_spaces(words[1]) {
            errors.push_str(&format!(
                "'{path}:{n}: username '{name}' contains invalid characters. "
            ));
            continue;
        }
        if users.contains_key(&name) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{name}' found on line {n}. "
            ));
            continue;
        }
        let mut u = User::new(&name, allchannels);
        let merged = match rules::merge_selectors(&words[2..]) {
            Ok(m) => m,
            Err(_) => {
                errors.push_str(&format!(
                    "{path}:{n}: Unmatched parenthesis in selector definition."
                ));
                Vec::new()
            }
        };
        let mut syntax_error = false;
        for op in &merged {
            let op = trim(op, b"\t\r\n");
            match rules::apply(&mut u, op, allchannels) {
                Ok(()) => {}
                Err(e @ RuleError::UnknownCommand) => errors.push_str(&format!(
                    "{path}:{n}: Error in applying operation '{}': {}. ",
                    String::from_utf8_lossy(op),
                    e.message()
                )),
                Err(e) if !syntax_error => {
                    errors.push_str(&format!("{path}:{n}: {}. ", e.message()));
                    syntax_error = true;
                }
                Err(_) => {}
            }
        }
        u.compile();
        users.insert(name, u);
    }
    if !errors.is_empty() {
        errors.push_str(
            "WARNING: ACL errors detected, no change to the previously active ACL rules was performed",
        );
        return Err(errors);
    }
    Ok(users)
}

fn trim<'a>(s: &'a [u8], set: &[u8]) -> &'a [u8] {
    let start = s.iter().position(|c| !set.contains(c)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !set.contains(c))
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// ACL SAVE: every user as a `user` line, written to a temporary file and
/// renamed over `path`.
pub fn save(acl: &Acl, path: &std::path::Path) -> std::io::Result<()> {
    let mut text = Vec::new();
    for u in acl.all() {
        text.extend_from_slice(&crate::cmd::acl::user_line(u));
        text.push(b'\n');
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        crate::clock::real_now_us() / 1000
    ));
    let written = std::fs::write(&tmp, &text).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
