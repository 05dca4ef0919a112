//! ACL: users, their rules, the permission check the gate calls, the ACL log.
//!
//! Clients name their user (`Client::user`); the `default` user is kept
//! apart so the gate reaches it without a lookup, and a user whose root
//! selector allows everything is passed by one flag (`User::unrestricted`).
//! Changing a user changes it for its connected clients at once, as in Redis.

pub mod categories;
pub mod check;
pub mod clients;
pub mod describe;
pub mod file;
pub mod gate;
pub mod keys;
pub mod log;
pub mod rules;
pub mod user;

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::command::{Args, CommandSpec};
use crate::server::client::UserName;
pub use check::Denied;
pub use user::User;

/// `acl-pubsub-default allchannels`: new users may use every channel.
pub fn pubsub_default(config: &crate::config::Config) -> bool {
    config.get("acl-pubsub-default") == Some("allchannels")
}

/// Every user, and the ACL log.
pub struct Acl {
    /// The `default` user (never deleted).
    pub default: User,
    /// The other users by name.
    pub users: BTreeMap<String, User>,
    /// Written by the gate, which reads the server shared.
    pub log: RefCell<log::Log>,
}

impl Acl {
    /// The users a server starts with: `default`, its password from `requirepass`.
    pub fn new(config: &crate::config::Config) -> Acl {
        let mut acl = Acl {
            default: User::new_default(pubsub_default(config)),
            users: BTreeMap::new(),
            log: RefCell::default(),
        };
        acl.set_requirepass(config.requirepass.as_deref());
        acl
    }

    /// The user a client is authenticated as (None: deleted meanwhile).
    #[inline]
    pub fn user_of(&self, name: &UserName) -> Option<&User> {
        if name.is_default() {
            Some(&self.default)
        } else {
            self.users.get(name.as_str())
        }
    }

    pub fn get(&self, name: &[u8]) -> Option<&User> {
        if name == b"default" {
            return Some(&self.default);
        }
        std::str::from_utf8(name)
            .ok()
            .and_then(|n| self.users.get(n))
    }

    /// Every user in name order (Redis's radix tree order), default included.
    pub fn all(&self) -> Vec<&User> {
        let mut v: Vec<&User> = self.users.values().collect();
        v.push(&self.default);
        v.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        v
    }

    /// Connections must AUTH before other commands: the default user has a
    /// password or is off.
    #[inline]
    pub fn auth_required(&self) -> bool {
        !self.default.nopass || !self.default.enabled
    }

    /// A new connection starts authenticated as `default` when it is on and nopass.
    pub fn starts_authenticated(&self) -> bool {
        !self.auth_required()
    }

    /// The user opened by `name` and `password`, if on and the password fits.
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<&User> {
        let u = self.get(name)?;
        (u.enabled && u.password_ok(password)).then_some(u)
    }

    /// `requirepass`: the default user's one password, or nopass when empty
    /// (Redis's `ACLUpdateDefaultUserPassword`).
    pub fn set_requirepass(&mut self, pass: Option<&[u8]>) {
        let d = &mut self.default;
        d.passwords.clear();
        d.nopass = false;
        match pass {
            Some(p) => d.passwords.push(user::hash_password(p)),
            None => d.nopass = true,
        }
    }

    /// Applies `rules` to the user `name` (creating it), all or nothing
    /// (Redis's `ACLStringSetUser`). Returns the user as it was before
    /// (None when new), or the error text.
    pub fn set_user(
        &mut self,
        name: &str,
        rules: &[&[u8]],
        allchannels: bool,
    ) -> Result<Option<User>, String> {
        let merged = rules::merge_selectors(rules).map_err(|i| {
            format!(
                "Unmatched parenthesis in acl selector starting at '{}'.",
                String::from_utf8_lossy(rules[i])
            )
        })?;
        let before = if name == "default" {
            Some(self.default.clone())
        } else {
            self.users.get(name).cloned()
        };
        let mut u = before
            .clone()
            .unwrap_or_else(|| User::new(name, allchannels));
        for op in &merged {
            if let Err(e) = rules::apply(&mut u, op, allchannels) {
                return Err(format!(
                    "Error in ACL SETUSER modifier '{}': {}",
                    String::from_utf8_lossy(op),
                    e.message()
                ));
            }
        }
        u.compile();
        if name == "default" {
            self.default = u;
        } else {
            self.users.insert(name.to_string(), u);
        }
        Ok(before)
    }

    /// True when `user` may read any key with this command (SORT's BY and GET).
    pub fn reads_any_key(&self, user: &UserName, spec: &CommandSpec, args: &Args) -> bool {
        match (self.user_of(user), rules::lookup(spec.name.as_bytes())) {
            (Some(u), _) if u.unrestricted => true,
            (Some(u), Some(cmd)) => check::unrestricted_key_access(u, cmd, args, keys::NEEDS_READ),
            _ => false,
        }
    }

    /// Records a denial or failed AUTH in the ACL log.
    pub fn log_event(&self, e: log::Entry, max_len: usize) {
        self.log.borrow_mut().add(e, max_len);
    }
}

#[cfg(test)]
mod tests;
