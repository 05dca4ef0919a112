//! Clients blocked on keys of a slot this node no longer serves, or while the cluster is down, are answered with their redirection (Redis's `clusterRedirectBlockedClientIfNeeded`).

use super::redirect::Redirect;
use super::slot::key_slot;
use super::Cluster;
use crate::server::Server;

/// Answers and unblocks every client blocked on keys whose first key's slot
/// is not served here (MOVED, or CLUSTERDOWN when no node serves it), or
/// all of them while the cluster is down. Called by the cron.
pub fn redirect(srv: &mut Server) {
    if srv.blocked_clients == 0 {
        return;
    }
    let Some(c) = srv.cluster.as_deref() else {
        return;
    };
    let kind = srv
        .config
        .get("cluster-preferred-endpoint-type")
        .unwrap_or("ip")
        .to_string();
    let mut redirected = Vec::new();
    for cell in srv.clients.values() {
        let Ok(client) = cell.state.try_borrow() else {
            continue;
        };
        let Some(key) = client.blocked.as_ref().and_then(|b| b.keys.first()) else {
            continue;
        };
        if let Some(r) = verdict(c, key, &kind) {
            redirected.push((cell.clone(), r));
        }
    }
    for (cell, r) in redirected {
        let Ok(mut client) = cell.state.try_borrow_mut() else {
            continue;
        };
        let b = crate::server::blocking::unregister(srv, &mut client);
        let e = r.error();
        client.reply.error_line(&e.text());
        srv.stats.error(e.code());
        if let Some(b) = b {
            srv.stats.cmd(b.id).failed += 1;
        }
        client.unblocked = true;
        drop(client);
        cell.wake.notify_one();
    }
}

/// The redirection for a client blocked on `key`, if it needs one.
fn verdict(c: &Cluster, key: &[u8], kind: &str) -> Option<Redirect> {
    if !c.ok {
        return Some(Redirect::Down);
    }
    let slot = key_slot(key);
    match c.owners[slot as usize] {
        Some(n) if n == c.myself => None,
        _ if c.importing[slot as usize].is_some() => None,
        None => Some(Redirect::Unbound),
        Some(n) => {
            let node = &c.nodes[n];
            Some(Redirect::Moved {
                slot,
                addr: format!("{}:{}", c.endpoint(node, kind), node.port),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::node::MASTER;

    #[test]
    fn redirections_follow_the_slot_owner() {
        let mut c = Cluster::fresh("a".repeat(40), "nodes.conf".into());
        let b = c.lookup_or_add(&"b".repeat(40));
        c.nodes[b].flags = MASTER;
        c.nodes[b].ip = "10.0.0.2".into();
        c.nodes[b].port = 7001;
        let foo = key_slot(b"foo");
        c.ok = true;
        assert_eq!(verdict(&c, b"foo", "ip"), Some(Redirect::Unbound));
        c.add_slot(foo, 0);
        assert_eq!(verdict(&c, b"foo", "ip"), None);
        c.del_slot(foo);
        c.add_slot(foo, b);
        assert_eq!(
            verdict(&c, b"foo", "ip"),
            Some(Redirect::Moved {
                slot: foo,
                addr: "10.0.0.2:7001".into()
            })
        );
        // A slot being imported keeps its waiters.
        c.importing[foo as usize] = Some(b);
        assert_eq!(verdict(&c, b"foo", "ip"), None);
        c.ok = false;
        assert_eq!(verdict(&c, b"foo", "ip"), Some(Redirect::Down));
    }
}
