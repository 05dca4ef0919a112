//! Clients of a changed or deleted user: disconnected as Redis does.

use crate::acl::check::channel_ok;
use crate::acl::User;
use crate::db::ClientId;
use crate::server::client::Client;
use crate::server::Server;

/// Disconnects every client authenticated as `name` (a deleted user, or
/// every non-default user on ACL LOAD); `current` closes after its reply.
/// They lose their authentication first and keep the name of a user that
/// no longer exists (so the gate refuses them everything) until closed.
pub fn kill_user_clients(srv: &mut Server, current: &mut Client, name: &str) {
    let victims: Vec<ClientId> = ids(srv, current)
        .into_iter()
        .filter(|&id| {
            srv.with_client(id, current, |c| c.user.as_str() == name)
                .unwrap_or(false)
        })
        .collect();
    for id in victims {
        srv.with_client(id, current, |c| c.authenticated = false);
        close(srv, current, id);
    }
}

fn ids(srv: &Server, current: &Client) -> Vec<ClientId> {
    let mut v: Vec<ClientId> = srv.clients.keys().copied().collect();
    if !v.contains(&current.id) {
        v.push(current.id);
    }
    v.sort_unstable();
    v
}

/// Closes a client: `current` after its reply; another one at once, its
/// subscriptions and blocking dropped now so nothing reaches it meanwhile.
fn close(srv: &mut Server, current: &mut Client, id: ClientId) {
    if id == current.id {
        current.close_after_reply = true;
        return;
    }
    let Some(cell) = srv.clients.get(&id).cloned() else {
        return;
    };
    if let Ok(mut c) = cell.state.try_borrow_mut() {
        crate::cmd::pubsub::unsubscribe_all(srv, &mut c);
        let _ = crate::server::blocking::unregister(srv, &mut c);
    }
    cell.kill.set(true);
    cell.wake.notify_one();
}

/// After `before` became the user now stored under its name: its
/// subscribed clients whose channels or patterns the new rules no longer
/// allow are disconnected (Redis's `ACLKillPubsubClientsIfNeeded`).
pub fn kill_pubsub_clients_if_needed(srv: &mut Server, current: &mut Client, before: &User) {
    let Some(now) = srv.acl.get(before.name.as_bytes()) else {
        return;
    };
    if now.selectors.iter().any(|s| s.allchannels) {
        return;
    }
    let upcoming: Vec<Vec<u8>> = now
        .selectors
        .iter()
        .flat_map(|s| s.channels.iter().cloned())
        .collect();
    let superset = before
        .selectors
        .iter()
        .all(|s| !s.allchannels && s.channels.iter().all(|c| upcoming.contains(c)));
    if superset {
        return;
    }
    let name = before.name.clone();
    let victims: Vec<ClientId> = ids(srv, current)
        .into_iter()
        .filter(|&id| {
            srv.with_client(id, current, |c| {
                c.user.as_str() == name
                    && (c.patterns.iter().any(|p| !channel_ok(&upcoming, p, true))
                        || c.channels
                            .iter()
                            .any(|ch| !channel_ok(&upcoming, ch, false))
                        || c.shard_channels
                            .iter()
                            .any(|ch| !channel_ok(&upcoming, ch, false)))
            })
            .unwrap_or(false)
        })
        .collect();
    for id in victims {
        close(srv, current, id);
    }
}
