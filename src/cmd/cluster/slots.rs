//! CLUSTER subcommands about slots: KEYSLOT, COUNTKEYSINSLOT, GETKEYSINSLOT, ADDSLOTS(RANGE), DELSLOTS(RANGE), FLUSHSLOTS, SETSLOT.

use super::{changed, cluster, unknown_node};
use crate::cluster::slot::{key_slot, parse_slot, SLOTS};
use crate::command::Args;
use crate::error::{cluster as text, CmdResult, Error};
use crate::resp::decode::parse_i64;
use crate::server::Ctx;

fn bad_slot() -> Error {
    Error::msg(text::BAD_SLOT)
}

/// ```text
/// CLUSTER KEYSLOT key
/// ```
pub fn keyslot(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    cluster(ctx)?;
    let slot = key_slot(args.at(2));
    ctx.out().int(slot as i64);
    Ok(())
}

/// ```text
/// CLUSTER COUNTKEYSINSLOT slot
/// ```
pub fn countkeysinslot(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    cluster(ctx)?;
    let slot = parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    if !(0..SLOTS as i64).contains(&slot) {
        return Err(Error::msg(text::INVALID_SLOT));
    }
    let n = count(ctx, slot as u16);
    ctx.out().int(n as i64);
    Ok(())
}

/// Keys of `slot` in database 0 (from its slot index).
fn count(ctx: &Ctx, slot: u16) -> usize {
    ctx.srv.ks.dbs[0]
        .slots
        .as_ref()
        .map_or(0, |ix| ix.count(slot))
}

/// ```text
/// CLUSTER GETKEYSINSLOT slot count
/// ```
pub fn getkeysinslot(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    cluster(ctx)?;
    let slot = parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    let max = parse_i64(args.at(3)).ok_or(Error::NotInteger)?;
    if !(0..SLOTS as i64).contains(&slot) || max < 0 {
        return Err(Error::msg(text::INVALID_SLOT_OR_COUNT));
    }
    let Ctx { srv, client, .. } = ctx;
    let out = &mut client.reply;
    match srv.ks.dbs[0].slots.as_ref() {
        Some(ix) => {
            let n = ix.count(slot as u16).min(max as usize);
            out.array(n);
            for k in ix.keys(slot as u16, n) {
                out.bulk(k);
            }
        }
        None => out.array(0),
    }
    Ok(())
}

/// Parses `args` from index 2 as slots (ADDSLOTS, DELSLOTS) and checks them
/// (Redis's `checkSlotAssignmentsOrReply`); the slots marked.
fn marked_slots(ctx: &mut Ctx, args: &Args, del: bool, ranges: bool) -> Result<Vec<bool>, Error> {
    let c = cluster(ctx)?;
    let mut marked = vec![false; SLOTS];
    let mut check = |a: u16, b: u16| -> Result<(), Error> {
        for s in a..=b {
            let owned = c.owners[s as usize].is_some();
            if del && !owned {
                return Err(text::slot_unassigned(s));
            } else if !del && owned {
                return Err(text::slot_busy(s));
            }
            if std::mem::replace(&mut marked[s as usize], true) {
                return Err(text::slot_repeated(s));
            }
        }
        Ok(())
    };
    if ranges {
        for i in (2..args.len()).step_by(2) {
            let a = parse_slot(args.at(i)).ok_or_else(bad_slot)?;
            let b = parse_slot(args.at(i + 1)).ok_or_else(bad_slot)?;
            if a > b {
                return Err(text::range_reversed(a, b));
            }
            check(a, b)?;
        }
    } else {
        let slots = args
            .from(2)
            .map(|a| parse_slot(a).ok_or_else(bad_slot))
            .collect::<Result<Vec<_>, _>>()?;
        for s in slots {
            check(s, s)?;
        }
    }
    Ok(marked)
}

/// Gives (or takes) the marked slots to this node (Redis's `clusterUpdateSlots`).
fn update_slots(ctx: &mut Ctx, marked: &[bool], del: bool) -> CmdResult {
    if let Some(c) = ctx.srv.cluster.as_deref_mut() {
        let me = c.myself;
        for (s, _) in marked.iter().enumerate().filter(|(_, m)| **m) {
            c.importing[s] = None;
            if del {
                c.del_slot(s as u16);
            } else {
                c.add_slot(s as u16, me);
            }
        }
    }
    changed(ctx);
    ctx.out().ok();
    Ok(())
}

fn slots_generic(ctx: &mut Ctx, args: &Args, del: bool, ranges: bool) -> CmdResult {
    if ranges && args.len() % 2 == 1 {
        cluster(ctx)?;
        return Err(Error::Arity(ctx.spec.full_name().into()));
    }
    let marked = marked_slots(ctx, args, del, ranges)?;
    update_slots(ctx, &marked, del)
}

/// ```text
/// CLUSTER ADDSLOTS slot [slot ...]
/// ```
pub fn addslots(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    slots_generic(ctx, args, false, false)
}

/// ```text
/// CLUSTER DELSLOTS slot [slot ...]
/// ```
pub fn delslots(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    slots_generic(ctx, args, true, false)
}

/// ```text
/// CLUSTER ADDSLOTSRANGE start end [start end ...]
/// ```
pub fn addslotsrange(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    slots_generic(ctx, args, false, true)
}

/// ```text
/// CLUSTER DELSLOTSRANGE start end [start end ...]
/// ```
pub fn delslotsrange(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    slots_generic(ctx, args, true, true)
}

/// ```text
/// CLUSTER FLUSHSLOTS
/// ```
pub fn flushslots(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    cluster(ctx)?;
    if !ctx.srv.ks.dbs[0].is_empty() {
        return Err(Error::msg(text::FLUSHSLOTS_NOT_EMPTY));
    }
    if let Some(c) = ctx.srv.cluster.as_deref_mut() {
        let me = c.myself;
        for s in 0..SLOTS {
            if c.owners[s] == Some(me) {
                c.del_slot(s as u16);
            }
        }
    }
    changed(ctx);
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLUSTER SETSLOT slot IMPORTING node-id | MIGRATING node-id | STABLE | NODE node-id
/// ```
pub fn setslot(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let c = cluster(ctx)?;
    if c.me().is_replica() {
        return Err(Error::msg(text::SETSLOT_ON_REPLICA));
    }
    let slot = parse_slot(args.at(2)).ok_or_else(bad_slot)?;
    let action = args.at(3);
    let is = |w: &str| action.eq_ignore_ascii_case(w.as_bytes());
    let n = args.len();
    let target = |c: &crate::cluster::Cluster, unknown: fn(&[u8]) -> Error| {
        let id = args.at(4);
        let node = c.lookup(id).ok_or_else(|| unknown(id))?;
        if c.nodes[node].is_replica() {
            return Err(Error::msg(text::TARGET_NOT_MASTER));
        }
        Ok(node)
    };
    let s = slot as usize;
    if is("migrating") && n == 5 {
        if !c.mine(slot) {
            return Err(text::not_owner(slot));
        }
        let node = target(c, text::dont_know_node)?;
        c.migrating[s] = Some(node);
    } else if is("importing") && n == 5 {
        if c.mine(slot) {
            return Err(text::already_owner(slot));
        }
        let node = target(c, text::dont_know_node)?;
        c.importing[s] = Some(node);
    } else if is("stable") && n == 4 {
        c.importing[s] = None;
        c.migrating[s] = None;
    } else if is("node") && n == 5 {
        let node = target(c, unknown_node)?;
        let keys = ctx.srv.ks.dbs[0]
            .slots
            .as_ref()
            .map_or(0, |ix| ix.count(slot));
        let Some(c) = ctx.srv.cluster.as_deref_mut() else {
            return Ok(());
        };
        if c.mine(slot) && node != c.myself && keys != 0 {
            return Err(text::still_has_keys(slot));
        }
        if keys == 0 && c.migrating[s].is_some() {
            c.migrating[s] = None;
        }
        let was_mine = c.mine(slot);
        c.del_slot(slot);
        c.add_slot(slot, node);
        // A master left without slots follows the node that took the last.
        let follow = was_mine && node != c.myself && c.me().numslots == 0;
        // Taking a slot this node imported: a new epoch, so the change
        // wins over the old owner's (Redis's manual migration).
        if node == c.myself && c.importing[s].is_some() {
            if c.bump_epoch() {
                crate::log::warning(&format!("configEpoch updated after importing slot {slot}"));
            }
            c.importing[s] = None;
        }
        if follow && ctx.srv.config.get("cluster-allow-replica-migration") == Some("yes") {
            if let Some(c) = ctx.srv.cluster.as_deref() {
                crate::log::warning(&format!(
                    "Configuration change detected. Reconfiguring myself as a replica of {}",
                    c.nodes[node].id
                ));
            }
            crate::cluster::bus::role::set_master(ctx.srv, node);
            crate::cluster::bus::before_sleep(ctx.srv);
        }
    } else {
        return Err(Error::msg(text::SETSLOT_SYNTAX));
    }
    changed(ctx);
    ctx.out().ok();
    Ok(())
}
