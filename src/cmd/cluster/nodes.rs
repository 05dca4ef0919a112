//! CLUSTER subcommands about nodes and epochs: RESET, SAVECONFIG, BUMPEPOCH, SET-CONFIG-EPOCH, COUNT-FAILURE-REPORTS, FORGET, MEET, REPLICATE, FAILOVER.

use super::{changed, cluster, unknown_node};
use crate::cluster::slot::SLOTS;
use crate::command::Args;
use crate::error::cluster::{self as text, needs_bus};
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
    if !ctx.srv.ks.dbs[db].is_empty() {
        return Err(Error::msg(text::RESET_WITH_KEYS));
    }
    let new_id = hard.then(|| crate::cluster::node::random_id(&mut ctx.srv.rng));
    if let Some(c) = ctx.srv.cluster.as_deref_mut() {
        for s in 0..SLOTS {
            c.importing[s] = None;
            c.migrating[s] = None;
            c.del_slot(s as u16);
        }
        let mut me = c.nodes[c.myself].clone();
        me.replica_of = None;
        c.nodes = vec![me];
        c.myself = 0;
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
/// Without the bus no node reports failures: 0 for a known node.
pub fn count_failure_reports(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let c = cluster(ctx)?;
    c.lookup(args.at(2))
        .ok_or_else(|| unknown_node(args.at(2)))?;
    ctx.out().int(0);
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
    if c.me().replica_of.as_deref() == Some(c.nodes[n].id.as_str()) {
        return Err(Error::msg(text::FORGET_MASTER));
    }
    remove_node(c, n);
    changed(ctx);
    ctx.out().ok();
    Ok(())
}

/// Drops node `n` and its slots from the view (Redis's `clusterDelNode`).
fn remove_node(c: &mut crate::cluster::Cluster, n: usize) {
    for s in 0..SLOTS {
        for table in [&mut c.importing, &mut c.migrating] {
            match table[s] {
                Some(x) if x == n => table[s] = None,
                Some(x) if x > n => table[s] = Some(x - 1),
                _ => {}
            }
        }
        match c.owners[s] {
            Some(x) if x == n => c.owners[s] = None,
            Some(x) if x > n => c.owners[s] = Some(x - 1),
            _ => {}
        }
    }
    c.nodes.remove(n);
    if c.myself > n {
        c.myself -= 1;
    }
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
    if args.len() == 5 && parse_i64(args.at(4)).is_none() {
        return Err(text::bad_meet_port(args.at(4), true));
    }
    Err(needs_bus("MEET"))
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
    Err(needs_bus("REPLICATE"))
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
    if !c.me().is_replica() {
        return Err(Error::msg(text::FAILOVER_ON_MASTER));
    }
    Err(needs_bus("FAILOVER"))
}
