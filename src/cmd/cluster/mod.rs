//! The cluster command family: CLUSTER and its subcommands, READONLY, READWRITE, ASKING.
//!
//! In standalone mode every one of them, after the usual arity and
//! subcommand checks, answers that cluster support is disabled (clients
//! branch on that error to tell a standalone server from a cluster node).
//! In cluster mode they read and change this node's view (`crate::cluster`).

mod nodes;
mod slots;
mod view;

use crate::cluster::Cluster;
use crate::command::flags::{ADMIN, FAST, LOADING, NOSCRIPT, NO_ASYNC_LOADING, STALE};
use crate::command::{Args, CommandSpec};
use crate::error::cluster::unknown_node;
use crate::error::{self, CmdResult, Error};
use crate::server::Ctx;

/// `admin`, `stale`, `no_async_loading`: the subcommands that change the
/// cluster's configuration.
const CONFIGURES: u32 = ADMIN | STALE | NO_ASYNC_LOADING;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::container("cluster", -2, SUBS),
    CommandSpec::new("readonly", 1, LOADING | STALE | FAST, (0, 0, 0), readonly),
    CommandSpec::new("readwrite", 1, LOADING | STALE | FAST, (0, 0, 0), readwrite),
    CommandSpec::new("asking", 1, FAST, (0, 0, 0), asking),
];

static SUBS: &[CommandSpec] = &[
    CommandSpec::new(
        "cluster|addslots",
        -3,
        CONFIGURES,
        (0, 0, 0),
        slots::addslots,
    ),
    CommandSpec::new(
        "cluster|addslotsrange",
        -4,
        CONFIGURES,
        (0, 0, 0),
        slots::addslotsrange,
    ),
    CommandSpec::new(
        "cluster|bumpepoch",
        2,
        CONFIGURES,
        (0, 0, 0),
        nodes::bumpepoch,
    ),
    CommandSpec::new(
        "cluster|count-failure-reports",
        3,
        ADMIN | STALE,
        (0, 0, 0),
        nodes::count_failure_reports,
    ),
    CommandSpec::new(
        "cluster|countkeysinslot",
        3,
        STALE,
        (0, 0, 0),
        slots::countkeysinslot,
    ),
    CommandSpec::new(
        "cluster|delslots",
        -3,
        CONFIGURES,
        (0, 0, 0),
        slots::delslots,
    ),
    CommandSpec::new(
        "cluster|delslotsrange",
        -4,
        CONFIGURES,
        (0, 0, 0),
        slots::delslotsrange,
    ),
    CommandSpec::new(
        "cluster|failover",
        -2,
        CONFIGURES,
        (0, 0, 0),
        nodes::failover,
    ),
    CommandSpec::new(
        "cluster|flushslots",
        2,
        CONFIGURES,
        (0, 0, 0),
        slots::flushslots,
    ),
    CommandSpec::new("cluster|forget", 3, CONFIGURES, (0, 0, 0), nodes::forget),
    CommandSpec::new(
        "cluster|getkeysinslot",
        4,
        STALE,
        (0, 0, 0),
        slots::getkeysinslot,
    ),
    CommandSpec::new("cluster|help", 2, LOADING | STALE, (0, 0, 0), view::help),
    CommandSpec::new("cluster|info", 2, STALE, (0, 0, 0), view::info),
    CommandSpec::new("cluster|keyslot", 3, STALE, (0, 0, 0), slots::keyslot),
    CommandSpec::new("cluster|links", 2, STALE, (0, 0, 0), view::links),
    CommandSpec::new("cluster|meet", -4, CONFIGURES, (0, 0, 0), nodes::meet),
    CommandSpec::new("cluster|myid", 2, STALE, (0, 0, 0), view::myid),
    CommandSpec::new("cluster|nodes", 2, STALE, (0, 0, 0), view::nodes),
    CommandSpec::new(
        "cluster|replicas",
        3,
        ADMIN | STALE,
        (0, 0, 0),
        view::replicas,
    ),
    CommandSpec::new(
        "cluster|replicate",
        3,
        CONFIGURES,
        (0, 0, 0),
        nodes::replicate,
    ),
    CommandSpec::new(
        "cluster|reset",
        -2,
        ADMIN | NOSCRIPT | STALE,
        (0, 0, 0),
        nodes::reset,
    ),
    CommandSpec::new(
        "cluster|saveconfig",
        2,
        CONFIGURES,
        (0, 0, 0),
        nodes::saveconfig,
    ),
    CommandSpec::new(
        "cluster|set-config-epoch",
        3,
        CONFIGURES,
        (0, 0, 0),
        nodes::set_config_epoch,
    ),
    CommandSpec::new("cluster|setslot", -4, CONFIGURES, (0, 0, 0), slots::setslot),
    CommandSpec::new("cluster|shards", 2, STALE, (0, 0, 0), view::shards),
    CommandSpec::new(
        "cluster|slaves",
        3,
        ADMIN | STALE,
        (0, 0, 0),
        view::replicas,
    ),
    CommandSpec::new("cluster|slots", 2, STALE, (0, 0, 0), view::slots),
];

/// This node's cluster view, or Redis's answer while `cluster_enabled` is 0.
fn cluster<'a>(ctx: &'a mut Ctx) -> Result<&'a mut Cluster, Error> {
    ctx.srv
        .cluster
        .as_deref_mut()
        .ok_or(Error::msg(error::cluster::DISABLED))
}

/// After a change of the view: nodes.conf is written and the state
/// recomputed (Redis's CLUSTER_TODO_SAVE_CONFIG|UPDATE_STATE).
fn changed(ctx: &mut Ctx) {
    if let Some(c) = ctx.srv.cluster.as_deref() {
        if let Err(e) = crate::cluster::config_file::save(c) {
            crate::log::warning(&format!(
                "Could not save the cluster config file: {}",
                crate::config::os_error(&e)
            ));
        }
    }
    crate::cluster::channels::after_change(ctx.srv, ctx.client);
    crate::cluster::cron(ctx.srv);
}

/// ```text
/// ASKING
/// ```
/// `OK`; the next command may touch a slot this node imports.
fn asking(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    cluster(ctx)?;
    ctx.client.cluster.asking = true;
    ctx.client.cluster.asking_fresh = true;
    ctx.out().ok();
    Ok(())
}

/// ```text
/// READONLY
/// ```
fn readonly(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    cluster(ctx)?;
    ctx.client.cluster.readonly = true;
    ctx.out().ok();
    Ok(())
}

/// ```text
/// READWRITE
/// ```
fn readwrite(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    cluster(ctx)?;
    ctx.client.cluster.readonly = false;
    ctx.out().ok();
    Ok(())
}
