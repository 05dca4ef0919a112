//! Replica promotion: elections (FAILOVER_AUTH_REQUEST/ACK), the masters' votes, and CLUSTER FAILOVER [FORCE|TAKEOVER] with its MFSTART handshake.
//!
//! A replica whose master is FAIL (or that was asked by CLUSTER FAILOVER)
//! waits 500-1000 ms plus one second per better-placed replica, then asks
//! every master for a vote in a new epoch; with votes from a majority of
//! the masters serving slots it takes its master's slots under that epoch
//! and tells everyone. A master votes once per epoch, only for a replica
//! of a FAIL master (or one whose request says FORCEACK), and not twice
//! for replicas of one master within twice the node timeout. Invariant:
//! `Bus::election` is Some only on a replica.

use super::msg::{self, Body, Msg};
use super::{now_ms, TODO_SAVE_CONFIG, TODO_SLOTS, TODO_UPDATE_STATE};
use crate::cluster::node::{MASTER, NOFAILOVER, SLAVE};
use crate::cluster::slot::SLOTS;
use crate::cluster::Cluster;
use crate::server::Server;

/// A manual failover's time limit (Redis's CLUSTER_MF_TIMEOUT), ms.
pub const MF_TIMEOUT: i64 = 5000;
/// How long a master holds writes for a manual failover, in MF_TIMEOUTs.
const MF_PAUSE_MULT: i64 = 2;

/// The replica side of an election and a manual failover (Redis's
/// `failover_auth_*` and `mf_*` fields).
#[derive(Clone, Debug, Default)]
pub struct Election {
    /// When the current (or next) election starts, ms; 0 for none yet.
    pub auth_time: i64,
    pub votes: usize,
    pub sent: bool,
    pub rank: usize,
    pub epoch: u64,
    /// A manual failover's deadline (0: none), on a replica or a master.
    pub mf_end: i64,
    /// The master's offset once it paused for our manual failover (-1: not yet).
    pub mf_master_offset: i64,
    pub mf_can_start: bool,
    /// On a master: the replica it paused for.
    pub mf_replica: Option<String>,
    /// When `cant_failover` last logged, ms (0: never).
    pub cant_logged_ms: i64,
}

/// True while this master holds writes for a replica's manual failover.
pub fn in_progress(srv: &Server) -> bool {
    srv.cluster
        .as_deref()
        .is_some_and(|c| c.bus.election.mf_replica.is_some())
}

/// Ends a manual failover (Redis's `resetManualFailover`): a master
/// lets its writes go again.
pub fn reset_manual(srv: &mut Server) {
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    let paused = c.bus.election.mf_replica.is_some();
    let e = &mut c.bus.election;
    e.mf_end = 0;
    e.mf_can_start = false;
    e.mf_replica = None;
    e.mf_master_offset = -1;
    if paused {
        srv.pause = None;
        let ids: Vec<_> = srv.clients.keys().copied().collect();
        for id in ids {
            srv.wake(id);
        }
    }
}

/// This replica's rank among its master's replicas: how many have a
/// better offset (Redis's `clusterGetSlaveRank`).
fn rank(c: &Cluster, my_offset: u64) -> usize {
    let Some(master) = c.me().replica_of.clone() else {
        return 0;
    };
    c.nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| {
            *i != c.myself
                && n.replica_of.as_deref() == Some(master.as_str())
                && n.flags & SLAVE != 0
                && n.flags & NOFAILOVER == 0
                && n.repl_offset > my_offset
        })
        .count()
}

/// Logs, at most every 10 s and not in the master's first node timeout
/// plus 5 s of FAIL, why this replica does not fail over (Redis's
/// `clusterLogCantFailover` for CLUSTER_CANT_FAILOVER_DATA_AGE).
fn cant_failover(c: &mut Cluster, now: i64, timeout: i64, master: usize) {
    let e = &mut c.bus.election;
    if e.cant_logged_ms != 0 && now - e.cant_logged_ms < 10_000 {
        return;
    }
    let m = &c.nodes[master];
    if m.failed() && now - m.fail_time < timeout + 5000 {
        return;
    }
    e.cant_logged_ms = now;
    crate::log::warning("Currently unable to failover: Disconnected from master for longer than allowed. Please check the 'cluster-replica-validity-factor' configuration option.");
}

/// The cron's (and the end of a message's) failover step on a replica
/// (Redis's `clusterHandleManualFailover` then `clusterHandleSlaveFailover`).
pub fn handle(srv: &mut Server) {
    let timeout = super::node_timeout(srv);
    let offset = super::repl_offset(srv);
    let no_failover = srv.config.get("cluster-replica-no-failover") == Some("yes");
    let validity = srv.config.get_i64("cluster-replica-validity-factor");
    let max_age = srv.config.get_i64("repl-ping-replica-period") * 1000 + timeout * validity;
    let data_age = crate::repl::replica::data_age_ms(srv);
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    let now = now_ms();
    if c.bus.election.mf_end != 0 && c.bus.election.mf_end < now {
        crate::log::warning("Manual failover timed out.");
        reset_manual(srv);
        return;
    }
    let me = c.myself;
    if c.nodes[me].flags & SLAVE == 0 {
        return;
    }
    // A manual failover starts once our offset reaches the paused master's.
    let e = &mut c.bus.election;
    if e.mf_end != 0 && !e.mf_can_start && e.mf_master_offset == offset as i64 {
        e.mf_can_start = true;
        crate::log::warning("All master replication stream processed, manual failover can start.");
    }
    let manual = e.mf_end != 0 && e.mf_can_start;
    let Some(master) = c.master_of(me) else {
        return;
    };
    let allowed = manual || (c.nodes[master].failed() && !no_failover);
    if !allowed || c.nodes[master].numslots == 0 {
        return;
    }
    // Data older than the validity allows (beyond the node timeout it took
    // to mark the master FAIL) may not be promoted, but by hand.
    let age = if data_age > timeout {
        data_age - timeout
    } else {
        data_age
    };
    if validity != 0 && age > max_age && !manual {
        cant_failover(c, now, timeout, master);
        return;
    }
    let auth_timeout = (timeout * 2).max(2000);
    let retry = auth_timeout * 2;
    let auth_age = now - c.bus.election.auth_time;
    if auth_age > retry {
        let delay = 500 + (c.bus.random() % 500) as i64;
        let r = rank(c, offset);
        let e = &mut c.bus.election;
        e.auth_time = now + delay + r as i64 * 1000;
        e.votes = 0;
        e.sent = false;
        e.rank = r;
        if e.mf_end != 0 {
            e.auth_time = now;
            e.rank = 0;
        }
        crate::log::notice(&format!(
            "Start of election delayed for {} milliseconds (rank #{}, offset {offset}).",
            e.auth_time - now,
            e.rank
        ));
        // Other replicas of our master learn our offset.
        let master_id = c.nodes[master].id.clone();
        let links: Vec<Option<u64>> = c
            .nodes
            .iter()
            .filter(|n| n.flags & SLAVE != 0 && n.replica_of.as_deref() == Some(&master_id))
            .filter(|n| !n.is_myself())
            .map(|n| n.link)
            .collect();
        for l in links {
            super::gossip::send_ping(c, l, msg::PONG, offset);
        }
        if c.bus.election.mf_end == 0 {
            return;
        }
    }
    if !c.bus.election.sent && c.bus.election.mf_end == 0 {
        let r = rank(c, offset);
        let e = &mut c.bus.election;
        if r > e.rank {
            let added = (r - e.rank) as i64 * 1000;
            e.auth_time += added;
            e.rank = r;
            crate::log::notice(&format!(
                "Replica rank updated to #{r}, added {added} milliseconds of delay."
            ));
        }
    }
    let e = &c.bus.election;
    if now < e.auth_time || now - e.auth_time > auth_timeout {
        return;
    }
    if !c.bus.election.sent {
        c.current_epoch += 1;
        c.bus.election.epoch = c.current_epoch;
        c.bus.election.sent = true;
        crate::log::notice(&format!(
            "Starting a failover election for epoch {}.",
            c.current_epoch
        ));
        let mut hdr = super::gossip::header(c, msg::FAILOVER_AUTH_REQUEST, offset);
        if c.bus.election.mf_end != 0 {
            hdr.mflags[0] |= msg::FLAG0_FORCEACK;
        }
        let bytes = msg::encode(&Msg {
            hdr,
            body: Body::Empty,
        });
        c.broadcast(&bytes);
        c.todo(TODO_SAVE_CONFIG | TODO_UPDATE_STATE);
        return;
    }
    let quorum = c.size / 2 + 1;
    if c.bus.election.votes >= quorum {
        crate::log::notice("Failover election won: I'm the new master.");
        let epoch = c.bus.election.epoch;
        if c.nodes[me].config_epoch < epoch {
            c.nodes[me].config_epoch = epoch;
            crate::log::notice(&format!(
                "configEpoch set to {epoch} after successful failover"
            ));
        }
        replace_master(srv);
    }
}

/// Takes the master's place (Redis's `clusterFailoverReplaceYourMaster`):
/// master role, its slots, everyone told at once.
pub fn replace_master(srv: &mut Server) {
    let offset = super::repl_offset(srv);
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    let me = c.myself;
    let Some(old) = c.master_of(me) else {
        return;
    };
    if c.nodes[me].flags & MASTER != 0 {
        return;
    }
    c.nodes[me].flags &= !SLAVE;
    c.nodes[me].flags |= MASTER;
    c.set_replica_of(me, None);
    for s in 0..SLOTS {
        if c.owners[s] == Some(old) {
            c.del_slot(s as u16);
            c.add_slot(s as u16, me);
        }
    }
    c.bus.election = Election {
        mf_master_offset: -1,
        ..Election::default()
    };
    c.todo(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_SLOTS);
    super::gossip::broadcast_pong(c, offset);
    crate::repl::replica::unset_master(srv);
    reset_manual(srv);
    super::before_sleep(srv);
}

/// A replica asks for our vote (Redis's `clusterSendFailoverAuthIfNeeded`).
pub fn vote(c: &mut Cluster, node: usize, hdr: &msg::Header, timeout: i64, offset: u64) {
    let me = c.myself;
    if c.nodes[me].flags & SLAVE != 0 || c.nodes[me].numslots == 0 {
        return;
    }
    let who = c.nodes[node].id.clone();
    let deny = |why: String| {
        crate::log::warning(&format!("Failover auth denied to {who}: {why}"));
    };
    if hdr.current_epoch < c.current_epoch {
        return deny(format!(
            "reqEpoch ({}) < curEpoch({})",
            hdr.current_epoch, c.current_epoch
        ));
    }
    if c.last_vote_epoch == c.current_epoch {
        return deny(format!("already voted for epoch {}", c.current_epoch));
    }
    let master = c.master_of(node);
    let force = hdr.mflags[0] & msg::FLAG0_FORCEACK != 0;
    if c.nodes[node].flags & MASTER != 0 {
        return deny("it is a master node".into());
    }
    let Some(master) = master else {
        return deny("I don't know its master".into());
    };
    if !c.nodes[master].failed() && !force {
        return deny("its master is up".into());
    }
    let now = now_ms();
    let voted = c.bus.voted.get(&c.nodes[master].id).copied().unwrap_or(0);
    if now - voted < timeout * 2 {
        return deny(format!(
            "can't vote about this master before {} milliseconds",
            timeout * 2 - (now - voted)
        ));
    }
    for j in 0..SLOTS {
        if !msg::slot_bit(&hdr.myslots, j) {
            continue;
        }
        let Some(owner) = c.owners[j] else { continue };
        if c.not_claiming[j] || c.nodes[owner].config_epoch <= hdr.config_epoch {
            continue;
        }
        return deny(format!(
            "slot {j} epoch ({}) > reqEpoch ({})",
            c.nodes[owner].config_epoch, hdr.config_epoch
        ));
    }
    c.last_vote_epoch = c.current_epoch;
    let mid = c.nodes[master].id.clone();
    c.bus.voted.insert(mid, now);
    c.todo(TODO_SAVE_CONFIG);
    let bytes = msg::encode(&Msg {
        hdr: super::gossip::header(c, msg::FAILOVER_AUTH_ACK, offset),
        body: Body::Empty,
    });
    let l = c.nodes[node].link;
    c.send(l, &bytes);
    crate::log::warning(&format!(
        "Failover auth granted to {who} for epoch {}",
        c.current_epoch
    ));
}

/// A vote arrived: it counts when it comes from a master serving slots in
/// the election's epoch or later.
pub fn vote_received(c: &mut Cluster, sender: usize, sender_current_epoch: u64) {
    let n = &c.nodes[sender];
    if n.flags & MASTER != 0 && n.numslots > 0 && sender_current_epoch >= c.bus.election.epoch {
        c.bus.election.votes += 1;
    }
}

/// MFSTART from one of our replicas: hold writes and tell it our offset
/// (the next PINGs carry the PAUSED flag).
pub fn mf_start(srv: &mut Server, sender: usize, lid: u64) {
    let offset = super::repl_offset(srv);
    reset_manual(srv);
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    let me_id = c.me().id.clone();
    if c.nodes[sender].replica_of.as_deref() != Some(me_id.as_str()) {
        return;
    }
    let now = now_ms();
    c.bus.election.mf_end = now + MF_TIMEOUT;
    c.bus.election.mf_replica = Some(c.nodes[sender].id.clone());
    crate::log::warning(&format!(
        "Manual failover requested by replica {}.",
        c.nodes[sender].id
    ));
    super::gossip::send_ping(c, Some(lid), msg::PING, offset);
    srv.pause = Some(crate::server::Pause {
        until_ms: now + MF_TIMEOUT * MF_PAUSE_MULT,
        write_only: true,
    });
}

/// A header from our master while it is paused for our manual failover:
/// its offset is the one to reach.
pub fn master_paused(c: &mut Cluster, sender: usize, hdr: &msg::Header) {
    let e = &c.bus.election;
    let mine = c.me().flags & SLAVE != 0
        && c.me().replica_of.as_deref() == Some(c.nodes[sender].id.as_str());
    if e.mf_end != 0 && mine && hdr.mflags[0] & msg::FLAG0_PAUSED != 0 && e.mf_master_offset == -1 {
        c.bus.election.mf_master_offset = hdr.offset as i64;
        crate::log::warning(&format!(
            "Received replication offset for paused master manual failover: {}",
            hdr.offset
        ));
    }
}

/// CLUSTER FAILOVER on a replica whose checks passed: TAKEOVER takes the
/// slots at once under a new epoch, FORCE starts an election without the
/// master, the default asks the master to pause first.
pub fn manual(srv: &mut Server, force: bool, takeover: bool) {
    let offset = super::repl_offset(srv);
    reset_manual(srv);
    let Some(c) = srv.cluster.as_deref_mut() else {
        return;
    };
    c.bus.election.mf_end = now_ms() + MF_TIMEOUT;
    if takeover {
        crate::log::warning("Taking over the master (user request).");
        c.bump_epoch();
        replace_master(srv);
    } else if force {
        crate::log::warning("Forced failover user request accepted.");
        c.bus.election.mf_can_start = true;
    } else {
        crate::log::warning("Manual failover user request accepted.");
        let Some(m) = c.master_of(c.myself) else {
            return;
        };
        let bytes = msg::encode(&Msg {
            hdr: super::gossip::header(c, msg::MFSTART, offset),
            body: Body::Empty,
        });
        let l = c.nodes[m].link;
        c.send(l, &bytes);
    }
}
