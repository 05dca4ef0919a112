//! Which node serves a request (Redis's `getNodeByQuery`), and the redirection a client gets otherwise.

use std::cell::Cell;

use super::slot::key_slot;
use super::Cluster;
use crate::command::args::Args;
use crate::command::spec::{flags, CommandSpec};
use crate::error::{cluster as text, Error, Rejection};
use crate::server::client::Client;
use crate::server::Server;

/// A client's cluster flags (Redis's CLIENT_ASKING, CLIENT_READONLY) and
/// the slot its current command was routed to (`c->slot`: -1 none).
#[derive(Clone, Debug, Default)]
pub struct ClientFlags {
    pub asking: bool,
    /// ASKING was the command just run (it lasts for the next one).
    pub asking_fresh: bool,
    pub readonly: bool,
    /// Set by the gate; scripts compare the slots of their calls with it.
    pub slot: Cell<i16>,
}

/// Why a request is not served here (Redis's CLUSTER_REDIR_*).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Redirect {
    CrossSlot,
    /// Several keys of a slot being migrated, not all of them here.
    Unstable,
    Down,
    DownReadOnly,
    Unbound,
    Moved {
        slot: u16,
        addr: String,
    },
    Ask {
        slot: u16,
        addr: String,
    },
}

impl Redirect {
    /// The error a client gets (Redis's `clusterRedirectClient`).
    pub fn error(&self) -> Error {
        match self {
            Redirect::CrossSlot => Error::coded(text::CROSSSLOT),
            Redirect::Unstable => Error::coded(text::TRYAGAIN),
            Redirect::Down => Error::coded(text::DOWN),
            Redirect::DownReadOnly => Error::coded(text::DOWN_READONLY),
            Redirect::Unbound => Error::coded(text::UNBOUND),
            Redirect::Moved { slot, addr } => text::moved(*slot, addr),
            Redirect::Ask { slot, addr } => text::ask(*slot, addr),
        }
    }

    /// The error `redis.call` raises instead (Redis's `scriptVerifyClusterState`).
    pub fn script_error(&self) -> Error {
        Error::msg(match self {
            Redirect::DownReadOnly => text::SCRIPT_DOWN_READONLY,
            Redirect::Down => text::SCRIPT_DOWN,
            _ => text::SCRIPT_NON_LOCAL,
        })
    }
}

/// After a client's command: ASKING lasts for one command, or for the
/// transaction it was sent before (Redis's `resetClient`).
#[cold]
pub fn after_command(client: &mut Client) {
    let f = &mut client.cluster;
    if f.asking_fresh {
        f.asking_fresh = false;
    } else if client.multi.is_none() {
        f.asking = false;
    }
}

/// The gate's cluster stage for a request (processCommand): None when this
/// node serves it. Sets the client's routed slot.
pub fn check_request(
    srv: &Server,
    c: &Cluster,
    client: &Client,
    spec: &CommandSpec,
    args: &Args,
) -> Option<Rejection> {
    client.cluster.slot.set(-1);
    // The request's own time is taken after the gate: the clock now.
    match route(
        srv,
        c,
        client,
        spec,
        args,
        crate::clock::real_now_us() / 1000,
    ) {
        Ok(slot) => {
            client.cluster.slot.set(slot.map_or(-1, |s| s as i16));
            None
        }
        Err(r) => Some(Rejection::Cluster(r)),
    }
}

/// The cluster check of a `redis.call` (Redis's `scriptVerifyClusterState`):
/// `client` is the script's pseudo-client, holding its caller's flags and
/// slot; `any_slot`: the script declared `allow-cross-slot-keys`.
pub fn check_script_call(
    srv: &Server,
    c: &Cluster,
    client: &Client,
    spec: &CommandSpec,
    args: &Args,
) -> Option<Rejection> {
    // Inside a script keys expire at the script's start, as for its commands.
    let slot = match route(srv, c, client, spec, args, crate::clock::now_ms()) {
        Ok(s) => s,
        Err(r) => return Some(Rejection::ClusterScript(r)),
    };
    let held = client.cluster.slot.get();
    if let Some(s) = slot {
        if held == -1 {
            client.cluster.slot.set(s as i16);
        } else if held >= 0 && held != s as i16 {
            return Some(Rejection::ScriptCrossSlot);
        }
    }
    None
}

/// Value of `ClientFlags::slot` while a script that declared
/// `allow-cross-slot-keys` runs: any slot goes.
pub const ANY_SLOT: i16 = -2;

/// What routing learned from the keys seen so far.
struct Keys<'a> {
    c: &'a Cluster,
    db: &'a crate::db::Db,
    pubsub: bool,
    first: Option<&'a [u8]>,
    slot: u16,
    multiple: bool,
    migrating: bool,
    importing: bool,
    missing: usize,
    existing: usize,
    /// The time expiry is judged at (see [`route`]).
    now_ms: i64,
}

impl<'a> Keys<'a> {
    fn visit(&mut self, key: &'a [u8]) -> Result<(), Redirect> {
        let this = key_slot(key);
        match self.first {
            None => {
                self.first = Some(key);
                self.slot = this;
                let Some(owner) = self.c.owners[this as usize] else {
                    return Err(Redirect::Unbound);
                };
                if owner == self.c.myself && self.c.migrating[this as usize].is_some() {
                    self.migrating = true;
                } else if self.c.importing[this as usize].is_some() {
                    self.importing = true;
                }
            }
            Some(f) if f != key => {
                if this != self.slot {
                    return Err(Redirect::CrossSlot);
                }
                self.multiple = true;
            }
            _ => {}
        }
        if (self.migrating || self.importing) && !self.pubsub {
            let expired = matches!(self.db.expire_at(key), Some(at) if at <= self.now_ms);
            if self.db.peek(key).is_some() && !expired {
                self.existing += 1;
            } else {
                self.missing += 1;
            }
        }
        Ok(())
    }

    /// Visits the keys of one command (its key positions, without building
    /// a list for the common first/last/step form).
    fn command(&mut self, spec: &CommandSpec, args: &Args<'a>) -> Result<(), Redirect> {
        if spec.keys_fn.is_some() {
            for p in spec.key_positions(args) {
                self.visit(args.at(p))?;
            }
            return Ok(());
        }
        if spec.first_key <= 0 {
            return Ok(());
        }
        let argc = args.len() as i32;
        let last = if spec.last_key < 0 {
            argc + spec.last_key
        } else {
            spec.last_key
        };
        let mut i = spec.first_key;
        while i <= last && i < argc {
            self.visit(args.at(i as usize))?;
            i += spec.step.max(1);
        }
        Ok(())
    }
}

/// The slot every key of the request (or of the transaction EXEC runs)
/// hashes to, when this node serves it; the redirection otherwise. During
/// a migration a key expired at `now_ms` counts as missing.
fn route<'a>(
    srv: &'a Server,
    c: &'a Cluster,
    client: &'a Client,
    spec: &CommandSpec,
    args: &Args<'a>,
    now_ms: i64,
) -> Result<Option<u16>, Redirect> {
    let mut k = Keys {
        c,
        db: &srv.ks.dbs[0],
        pubsub: is_shard_pubsub(spec),
        first: None,
        slot: 0,
        multiple: false,
        migrating: false,
        importing: false,
        missing: 0,
        existing: 0,
        now_ms,
    };
    if spec.has(flags::TXN_EXEC) {
        let Some(m) = client.multi.as_ref() else {
            return Ok(None);
        };
        for q in &m.queue {
            k.command(q.spec, &q.argv.args())?;
        }
    } else {
        k.command(spec, args)?;
    }
    if k.first.is_none() {
        return Ok(None);
    }
    let slot = k.slot;
    if !c.ok {
        let cmd_flags = crate::script::cmd_flags::effective(srv, spec, args);
        if k.pubsub {
            if srv.config.get("cluster-allow-pubsubshard-when-down") != Some("yes") {
                return Err(Redirect::Down);
            }
        } else if srv.config.get("cluster-allow-reads-when-down") != Some("yes") {
            return Err(Redirect::Down);
        } else if cmd_flags & flags::WRITE != 0 {
            return Err(Redirect::DownReadOnly);
        }
    }
    if (k.migrating || k.importing) && spec.name == "migrate" {
        return Ok(Some(slot));
    }
    if k.migrating && k.missing > 0 {
        if k.existing > 0 {
            return Err(Redirect::Unstable);
        }
        let to = c.migrating[slot as usize].unwrap_or(c.myself);
        // A slot "migrating" to this node itself is served here, as Redis
        // redirects only to another node (processCommand).
        if to == c.myself {
            return Ok(Some(slot));
        }
        return Err(Redirect::Ask {
            slot,
            addr: address(srv, c, to),
        });
    }
    if k.importing && (client.cluster.asking || spec.has(flags::ASKING)) {
        if k.multiple && k.missing > 0 {
            return Err(Redirect::Unstable);
        }
        return Ok(Some(slot));
    }
    match c.owners[slot as usize] {
        Some(n) if n == c.myself => Ok(Some(slot)),
        // A replica serves reads of its master's slots to READONLY clients
        // (and shard pub/sub) (Redis's getNodeByQuery).
        Some(n)
            if (client.cluster.readonly || k.pubsub)
                && replica_of(c, n)
                && !writes(srv, client, spec, args) =>
        {
            Ok(Some(slot))
        }
        Some(n) => Err(Redirect::Moved {
            slot,
            addr: address(srv, c, n),
        }),
        None => Err(Redirect::Unbound),
    }
}

/// True when this node is a replica of node `n`.
fn replica_of(c: &Cluster, n: usize) -> bool {
    let me = c.me();
    me.is_replica() && me.replica_of.as_deref() == Some(c.nodes[n].id.as_str())
}

/// The request writes (EXEC: a queued command writes).
fn writes(srv: &Server, client: &Client, spec: &CommandSpec, args: &Args) -> bool {
    if spec.has(flags::TXN_EXEC) {
        return client
            .multi
            .as_ref()
            .is_some_and(|m| m.queue.iter().any(|q| q.spec.has(flags::WRITE)));
    }
    crate::script::cmd_flags::effective(srv, spec, args) & flags::WRITE != 0
}

/// SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH: their keys are channels.
fn is_shard_pubsub(spec: &CommandSpec) -> bool {
    matches!(spec.name, "ssubscribe" | "sunsubscribe" | "spublish")
}

/// `endpoint:port` of node `n` for MOVED and ASK.
fn address(srv: &Server, c: &Cluster, n: usize) -> String {
    let kind = srv
        .config
        .get("cluster-preferred-endpoint-type")
        .unwrap_or("ip");
    let node = &c.nodes[n];
    format!("{}:{}", c.endpoint(node, kind), node.port)
}

/// Checks at the start of a script that declared `flags` (Redis's
/// `scriptPrepareForRun`): `no-cluster` scripts do not run in cluster mode.
pub fn verify_script_start(srv: &Server, flags: u32) -> Result<(), Error> {
    const NO_CLUSTER: u32 = 1 << 3;
    if srv.cluster.is_some() && flags & NO_CLUSTER != 0 {
        return Err(Error::msg(
            "Can not run script on cluster, 'no-cluster' flag is set.",
        ));
    }
    Ok(())
}

/// A script may touch keys of several slots: it declared
/// `allow-cross-slot-keys`, or declared no flags at all (an EVAL script in
/// compatibility mode, as Redis's `scriptPrepareForRun` decides).
pub fn allows_cross_slot(flags: Option<u32>) -> bool {
    const ALLOW_CROSS_SLOT: u32 = 1 << 4;
    flags.is_none_or(|f| f & ALLOW_CROSS_SLOT != 0)
}
