//! CLUSTER subcommands about nodes and epochs: RESET, SAVECONFIG, BUMPEPOCH, SET-CONFIG-EPOCH, COUNT-FAILURE-REPORTS, FORGET, MEET, REPLICATE, FAILOVER.

use super::{changed, cluster, unknown_node};
use crate::cluster::slot::SLOTS;
use crate::command::Args;
use crate::error::cluster as text;
use crate::error::{CmdResult, Error};
use crate::resp::decode::parse_i64;
use crate::server::Ctx;

/// ```text
/// CLUSTER RESET [HARD|SOFT]
/// ```
pub fn reset(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    cluster(ctx)?;
    let hard = match args.len() {
        2 => false,
        3 if args.at(2).eq_ignore_ascii_case(b"hard") => true,
        3 if args.at(2).eq_ignore_ascii_case(b"soft") => false,
        3 => return Err(Error::Syntax),
        _ => return Err(crate::cmd::server::wrong_sub_args(args, "CLUSTER")),
    };
    let db = ctx.client.db;
    let replica = ctx
        .srv
        .cluster
        .as_deref()
        .is_some_and(|c| c.me().is_replica());
    if !replica && !ctx.srv.ks.dbs[db].is_empty() {
        return Err(Error::msg(text::RESET_WITH_KEYS));
    }
    if replica {
        // A replica turns master again and drops its data (Redis's
        // clusterReset: replicationUnsetMaster, emptyData).
        crate::repl::replica::unset_master(ctx.srv);
        for db in ctx.srv.ks.dbs.iter_mut() {
            db.clear(false);
        }
        if let Some(c) = ctx.srv.cluster.as_deref_mut() {
            let me = c.me_mut();
            me.flags &= !crate::cluster::node::SLAVE;
            me.flags |= crate::cluster::node::MASTER;
        }
    }
    let new_id = hard.then(|| crate::cluster::node::random_id(&mut ctx.srv.rng));
    if let Some(c) = ctx.srv.cluster.as_deref_mut() {
        for s in 0..SLOTS {
            c.importing[s] = None;
            c.migrating[s] = None;
            c.del_slot(s as u16);
        }
        let me = c.myself;
        c.set_replica_of(me, None);
        // Every other node is forgotten, its links closed.
        while c.nodes.len() > 1 {
            let other = if c.myself == 0 { 1 } else { 0 };
            c.del_node(other);
        }
        if let Some(id) = new_id {
            c.current_epoch = 0;
            c.last_vote_epoch = 0;
            c.nodes[0].config_epoch = 0;
            crate::log::notice(&format!("Node hard reset, now I'm {id}"));
            c.nodes[0].id = id;
        }
    }
    changed(ctx);
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLUSTER SAVECONFIG
/// ```
pub fn saveconfig(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let c = cluster(ctx)?;
    crate::cluster::config_file::save(c)
        .map_err(|e| text::save_failed(&crate::config::os_error(&e)))?;
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLUSTER BUMPEPOCH
/// ```
/// `BUMPED <epoch>`, or `STILL <epoch>` when this node's epoch is already the greatest.
pub fn bumpepoch(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let c = cluster(ctx)?;
    let bumped = c.bump_epoch();
    let line = format!(
        "{} {}",
        if bumped { "BUMPED" } else { "STILL" },
        c.me().config_epoch
    );
    if bumped {
        changed(ctx);
    }
    ctx.out().simple(&line);
    Ok(())
}

/// ```text
/// CLUSTER SET-CONFIG-EPOCH epoch
/// ```
pub fn set_config_epoch(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let c = cluster(ctx)?;
    let epoch = parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    if epoch < 0 {
        return Err(text::bad_epoch(epoch));
    }
    if c.nodes.len() > 1 {
        return Err(Error::msg(text::EPOCH_WITH_OTHERS));
    }
    if c.me().config_epoch != 0 {
        return Err(Error::msg(text::EPOCH_NOT_ZERO));
    }
    c.me_mut().config_epoch = epoch as u64;
    c.current_epoch = c.current_epoch.max(epoch as u64);
    crate::log::warning(&format!(
        "configEpoch set to {epoch} via CLUSTER SET-CONFIG-EPOCH"
    ));
    changed(ctx);
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLUSTER COUNT-FAILURE-REPORTS node-id
/// ```
/// The masters' reports about the node that are still valid.
pub fn count_failure_reports(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let timeout = crate::cluster::bus::node_timeout(ctx.srv);
    let c = cluster(ctx)?;
    let n = c
        .lookup(args.at(2))
        .ok_or_else(|| unknown_node(args.at(2)))?;
    let count = crate::cluster::bus::failure::count_reports(c, n, timeout);
    ctx.out().int(count as i64);
    Ok(())
}

/// ```text
/// CLUSTER FORGET node-id
/// ```
pub fn forget(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let c = cluster(ctx)?;
    let n = c
        .lookup(args.at(2))
        .ok_or_else(|| unknown_node(args.at(2)))?;
    if n == c.myself {
        return Err(Error::msg(text::FORGET_MYSELF));
    }
    if c.me().is_replica() && c.me().replica_of.as_deref() == Some(c.nodes[n].id.as_str()) {
        return Err(Error::msg(text::FORGET_MASTER));
    }
    // Gossip from nodes that still know it may not bring it back for a minute.
    let until = crate::cluster::bus::now_ms() / 1000 + crate::cluster::bus::BLACKLIST_TTL;
    let id = c.nodes[n].id.clone();
    c.bus.blacklist.retain(|(b, _)| *b != id);
    c.bus.blacklist.push((id, until));
    c.del_node(n);
    changed(ctx);
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLUSTER MEET ip port [cluster-bus-port]
/// ```
pub fn meet(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    cluster(ctx)?;
    if args.len() > 5 {
        return Err(crate::cmd::server::wrong_sub_args(args, "CLUSTER"));
    }
    if parse_i64(args.at(3)).is_none() {
        return Err(text::bad_meet_port(args.at(3), false));
    }
    let port = parse_i64(args.at(3)).unwrap_or(0);
    let cport = if args.len() == 5 {
        parse_i64(args.at(4)).ok_or_else(|| text::bad_meet_port(args.at(4), true))?
    } else {
        port.saturating_add(crate::cluster::PORT_INCR as i64)
    };
    let ip = String::from_utf8_lossy(args.at(2)).into_owned();
    let c = cluster(ctx)?;
    if !c.start_handshake(&ip, port, cport) {
        return Err(Error::Msg(
            format!(
                "Invalid node address specified: {ip}:{}",
                String::from_utf8_lossy(args.at(3))
            )
            .into(),
        ));
    }
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLUSTER REPLICATE node-id
/// ```
pub fn replicate(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let c = cluster(ctx)?;
    let n = c
        .lookup(args.at(2))
        .ok_or_else(|| unknown_node(args.at(2)))?;
    if n == c.myself {
        return Err(Error::msg(text::REPLICATE_MYSELF));
    }
    if c.nodes[n].is_replica() {
        return Err(Error::msg(text::REPLICATE_REPLICA));
    }
    let has_slots = c.me().numslots != 0;
    if !c.me().is_replica() && (has_slots || !ctx.srv.ks.dbs[0].is_empty()) {
        return Err(Error::msg(text::REPLICATE_NOT_EMPTY));
    }
    crate::cluster::bus::role::set_master(ctx.srv, n);
    crate::cluster::bus::before_sleep(ctx.srv);
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLUSTER FAILOVER [FORCE|TAKEOVER]
/// ```
pub fn failover(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let c = cluster(ctx)?;
    match args.len() {
        2 => {}
        3 if args.at(2).eq_ignore_ascii_case(b"force")
            || args.at(2).eq_ignore_ascii_case(b"takeover") => {}
        3 => return Err(Error::Syntax),
        _ => return Err(crate::cmd::server::wrong_sub_args(args, "CLUSTER")),
    }
    let (force, takeover) = match args.len() {
        3 if args.at(2).eq_ignore_ascii_case(b"force") => (true, false),
        3 => (false, true),
        _ => (false, false),
    };
    if !c.me().is_replica() {
        return Err(Error::msg(text::FAILOVER_ON_MASTER));
    }
    let master = c.master_of(c.myself);
    let Some(master) = master else {
        return Err(Error::msg("I'm a replica but my master is unknown to me"));
    };
    if !force && !takeover && (c.nodes[master].failed() || c.nodes[master].link.is_none()) {
        return Err(Error::msg(
            "Master is down or failed, please use CLUSTER FAILOVER FORCE",
        ));
    }
    crate::cluster::bus::failover::manual(ctx.srv, force, takeover);
    ctx.out().ok();
    Ok(())
}
