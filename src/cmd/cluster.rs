//! The cluster command family: CLUSTER and its subcommands, READONLY, READWRITE, ASKING.
//!
//! Cluster mode is not built yet (issue 16; `cluster-enabled yes` is
//! accepted and logged, and the server runs standalone, INFO saying
//! `cluster_enabled:0`). What a standalone Redis 7.0 answers to these
//! commands is their whole behaviour here: every subcommand, after the
//! usual arity and subcommand checks, answers that cluster support is
//! disabled. Clients branch on that error to tell a standalone server from
//! a cluster node, and ACL rules may name these commands.

use crate::command::flags::{ADMIN, FAST, LOADING, NOSCRIPT, NO_ASYNC_LOADING, STALE};
use crate::command::{Args, CommandSpec};
use crate::error::{self, CmdResult, Error};
use crate::server::Ctx;

/// `admin`, `stale`, `no_async_loading`: the subcommands that change the
/// cluster's configuration.
const CONFIGURES: u32 = ADMIN | STALE | NO_ASYNC_LOADING;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::container("cluster", -2, SUBS),
    CommandSpec::new("readonly", 1, LOADING | STALE | FAST, (0, 0, 0), disabled),
    CommandSpec::new("readwrite", 1, LOADING | STALE | FAST, (0, 0, 0), disabled),
    CommandSpec::new("asking", 1, FAST, (0, 0, 0), disabled),
];

static SUBS: &[CommandSpec] = &[
    CommandSpec::new("cluster|addslots", -3, CONFIGURES, (0, 0, 0), disabled),
    CommandSpec::new("cluster|addslotsrange", -4, CONFIGURES, (0, 0, 0), disabled),
    CommandSpec::new("cluster|bumpepoch", 2, CONFIGURES, (0, 0, 0), disabled),
    CommandSpec::new(
        "cluster|count-failure-reports",
        3,
        ADMIN | STALE,
        (0, 0, 0),
        disabled,
    ),
    CommandSpec::new("cluster|countkeysinslot", 3, STALE, (0, 0, 0), disabled),
    CommandSpec::new("cluster|delslots", -3, CONFIGURES, (0, 0, 0), disabled),
    CommandSpec::new("cluster|delslotsrange", -4, CONFIGURES, (0, 0, 0), disabled),
    CommandSpec::new("cluster|failover", -2, CONFIGURES, (0, 0, 0), disabled),
    CommandSpec::new("cluster|flushslots", 2, CONFIGURES, (0, 0, 0), disabled),
    CommandSpec::new("cluster|forget", 3, CONFIGURES, (0, 0, 0), disabled),
    CommandSpec::new("cluster|getkeysinslot", 4, STALE, (0, 0, 0), disabled),
    CommandSpec::new("cluster|help", 2, LOADING | STALE, (0, 0, 0), disabled),
    CommandSpec::new("cluster|info", 2, STALE, (0, 0, 0), disabled),
    CommandSpec::new("cluster|keyslot", 3, STALE, (0, 0, 0), disabled),
    CommandSpec::new("cluster|links", 2, STALE, (0, 0, 0), disabled),
    CommandSpec::new("cluster|meet", -4, CONFIGURES, (0, 0, 0), disabled),
    CommandSpec::new("cluster|myid", 2, STALE, (0, 0, 0), disabled),
    CommandSpec::new("cluster|nodes", 2, STALE, (0, 0, 0), disabled),
    CommandSpec::new("cluster|replicas", 3, ADMIN | STALE, (0, 0, 0), disabled),
    CommandSpec::new("cluster|replicate", 3, CONFIGURES, (0, 0, 0), disabled),
    CommandSpec::new(
        "cluster|reset",
        -2,
        ADMIN | NOSCRIPT | STALE,
        (0, 0, 0),
        disabled,
    ),
    CommandSpec::new("cluster|saveconfig", 2, CONFIGURES, (0, 0, 0), disabled),
    CommandSpec::new(
        "cluster|set-config-epoch",
        3,
        CONFIGURES,
        (0, 0, 0),
        disabled,
    ),
    CommandSpec::new("cluster|setslot", -4, CONFIGURES, (0, 0, 0), disabled),
    CommandSpec::new("cluster|shards", 2, STALE, (0, 0, 0), disabled),
    CommandSpec::new("cluster|slaves", 3, ADMIN | STALE, (0, 0, 0), disabled),
    CommandSpec::new("cluster|slots", 2, STALE, (0, 0, 0), disabled),
];

/// Redis's answer while `cluster_enabled` is 0.
fn disabled(_: &mut Ctx, _: &mut Args) -> CmdResult {
    Err(Error::msg(error::CLUSTER_DISABLED))
}
