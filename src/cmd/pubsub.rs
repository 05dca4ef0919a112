//! Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB.

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error};
use crate::server::client::Client;
use crate::server::pubsub::{self, Kind};
use crate::server::{Ctx, Server};
use crate::types::glob;

const SUB: u32 = PUBSUB | NOSCRIPT | LOADING | STALE;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("subscribe", -2, SUB | PUBSUB_CONTEXT, (0, 0, 0), subscribe),
    CommandSpec::new(
        "unsubscribe",
        -1,
        SUB | PUBSUB_CONTEXT,
        (0, 0, 0),
        unsubscribe,
    ),
    CommandSpec::new(
        "psubscribe",
        -2,
        SUB | PUBSUB_CONTEXT,
        (0, 0, 0),
        psubscribe,
    ),
    CommandSpec::new(
        "punsubscribe",
        -1,
        SUB | PUBSUB_CONTEXT,
        (0, 0, 0),
        punsubscribe,
    ),
    CommandSpec::new(
        "ssubscribe",
        -2,
        SUB | PUBSUB_CONTEXT,
        (1, -1, 1),
        ssubscribe,
    ),
    CommandSpec::new(
        "sunsubscribe",
        -1,
        SUB | PUBSUB_CONTEXT,
        (1, -1, 1),
        sunsubscribe,
    ),
    CommandSpec::new(
        "publish",
        3,
        PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE,
        (0, 0, 0),
        publish,
    ),
    CommandSpec::new(
        "spublish",
        3,
        PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE,
        (1, 1, 1),
        spublish,
    ),
    CommandSpec::container("pubsub", -2, PUBSUB_SUBCOMMANDS),
];

const PS: u32 = PUBSUB | LOADING | STALE;

static PUBSUB_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("pubsub|channels", -2, PS, (0, 0, 0), pubsub_channels),
    CommandSpec::new("pubsub|numsub", -2, PS, (0, 0, 0), pubsub_numsub),
    CommandSpec::new("pubsub|numpat", 2, PS, (0, 0, 0), pubsub_numpat),
    CommandSpec::new(
        "pubsub|shardchannels",
        -2,
        PS,
        (0, 0, 0),
        pubsub_shardchannels,
    ),
    CommandSpec::new("pubsub|shardnumsub", -2, PS, (0, 0, 0), pubsub_shardnumsub),
    CommandSpec::new("pubsub|help", 2, LOADING | STALE, (0, 0, 0), pubsub_help),
];

/// Writes a (un)subscribe confirmation: `[word, name-or-null, count]` as a
/// push in RESP3, an array in RESP2.
fn confirm(c: &mut Client, word: &[u8], name: Option<&[u8]>, count: usize) {
    let start = c.reply.len();
    let r = &mut c.reply;
    r.push(3);
    r.bulk(word);
    match name {
        Some(n) => r.bulk(n),
        None => r.null(),
    }
    r.int(count as i64);
    c.pushed.push((start, c.reply.len()));
}

/// The count a confirmation carries: shard subscriptions are counted apart.
fn count(c: &Client, kind: Kind) -> usize {
    match kind {
        Kind::Shard => c.shard_channels.len(),
        _ => c.subscription_count(),
    }
}

fn subscribe_generic(ctx: &mut Ctx, args: &Args, kind: Kind) -> CmdResult {
    for name in args.from(1) {
        pubsub::subscribe(ctx.srv, ctx.client, kind, name);
        let n = count(ctx.client, kind);
        confirm(ctx.client, kind.words().0, Some(name), n);
    }
    Ok(())
}

fn unsubscribe_generic(ctx: &mut Ctx, args: &Args, kind: Kind) -> CmdResult {
    let word = kind.words().1;
    if args.len() > 1 {
        for name in args.from(1) {
            pubsub::unsubscribe(ctx.srv, ctx.client, kind, name);
            let n = count(ctx.client, kind);
            confirm(ctx.client, word, Some(name), n);
        }
        return Ok(());
    }
    let all: Vec<Vec<u8>> = pubsub::client_set(ctx.client, kind)
        .iter()
        .cloned()
        .collect();
    if all.is_empty() {
        let n = count(ctx.client, kind);
        confirm(ctx.client, word, None, n);
    }
    for name in all {
        pubsub::unsubscribe(ctx.srv, ctx.client, kind, &name);
        let n = count(ctx.client, kind);
        confirm(ctx.client, word, Some(&name), n);
    }
    Ok(())
}

/// ```text
/// SUBSCRIBE channel [channel ...]
/// ```
/// One `subscribe` confirmation (push in RESP3) per channel, with the
/// client's channel + pattern count.
fn subscribe(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    subscribe_generic(ctx, args, Kind::Channel)
}

/// ```text
/// PSUBSCRIBE pattern [pattern ...]
/// ```
/// One `psubscribe` confirmation per pattern.
fn psubscribe(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    subscribe_generic(ctx, args, Kind::Pattern)
}

/// ```text
/// SSUBSCRIBE shardchannel [shardchannel ...]
/// ```
/// One `ssubscribe` confirmation per channel, counting shard channels only.
/// Not allowed inside MULTI (Redis treats EXEC as a client that cannot block).
fn ssubscribe(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if ctx.in_exec {
        return Err(Error::msg(
            "SSUBSCRIBE isn't allowed for a DENY BLOCKING client",
        ));
    }
    subscribe_generic(ctx, args, Kind::Shard)
}

/// ```text
/// UNSUBSCRIBE [channel [channel ...]]
/// ```
/// One `unsubscribe` confirmation per channel (all channels when none is
/// given; a null channel when there were none).
fn unsubscribe(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Channel)
}

/// ```text
/// PUNSUBSCRIBE [pattern [pattern ...]]
/// ```
/// As UNSUBSCRIBE, for patterns.
fn punsubscribe(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Pattern)
}

/// ```text
/// SUNSUBSCRIBE [shardchannel [shardchannel ...]]
/// ```
/// As UNSUBSCRIBE, for shard channels.
fn sunsubscribe(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Shard)
}

/// ```text
/// PUBLISH channel message
/// ```
/// Integer: the number of deliveries (channel and pattern subscribers).
fn publish(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let n = pubsub::publish(ctx.srv, ctx.client, args.at(1), args.at(2));
    // Over the cluster bus in cluster mode, to the replicas otherwise (Redis's
    // pubsubPublishMessageAndPropagateToCluster / forceCommandPropagation).
    if ctx.srv.cluster.is_some() {
        crate::cluster::bus::propagate_publish(ctx.srv, args.at(1), args.at(2), false);
    } else {
        ctx.force_replica_propagation();
    }
    ctx.out().int(n as i64);
    Ok(())
}

/// ```text
/// SPUBLISH shardchannel message
/// ```
/// Integer: the number of shard channel subscribers reached.
fn spublish(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let n = pubsub::publish_shard(ctx.srv, ctx.client, args.at(1), args.at(2));
    // Over the cluster bus in cluster mode, to the replicas otherwise (Redis's
    // pubsubPublishMessageAndPropagateToCluster / forceCommandPropagation).
    if ctx.srv.cluster.is_some() {
        crate::cluster::bus::propagate_publish(ctx.srv, args.at(1), args.at(2), true);
    } else {
        ctx.force_replica_propagation();
    }
    ctx.out().int(n as i64);
    Ok(())
}

/// Names in `map` matching the optional pattern argument; `CHANNELS` with
/// more than one argument is Redis's "unknown subcommand or wrong number".
fn channels_generic(ctx: &mut Ctx, args: &Args, kind: Kind) -> CmdResult {
    if args.len() > 3 {
        return Err(Error::msg(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            String::from_utf8_lossy(args.at(1))
        )));
    }
    let pat = (args.len() == 3).then(|| args.at(2));
    let names: Vec<Vec<u8>> = ctx
        .srv
        .pubsub
        .registry(kind)
        .keys()
        .filter(|ch| pat.is_none_or(|p| glob::matches(p, ch, false)))
        .cloned()
        .collect();
    let out = ctx.out();
    out.array(names.len());
    for n in &names {
        out.bulk(n);
    }
    Ok(())
}

fn numsub_generic(ctx: &mut Ctx, args: &Args, kind: Kind) -> CmdResult {
    let counts: Vec<(&[u8], usize)> = args
        .from(2)
        .map(|ch| {
            let n = ctx.srv.pubsub.registry(kind).get(ch).map_or(0, Vec::len);
            (ch, n)
        })
        .collect();
    let out = ctx.out();
    out.array(counts.len() * 2);
    for (ch, n) in counts {
        out.bulk(ch);
        out.int(n as i64);
    }
    Ok(())
}

/// ```text
/// PUBSUB CHANNELS [pattern]
/// ```
/// Array of active channels (with at least one subscriber) matching the pattern.
fn pubsub_channels(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    channels_generic(ctx, args, Kind::Channel)
}

/// ```text
/// PUBSUB SHARDCHANNELS [pattern]
/// ```
/// Array of active shard channels matching the pattern.
fn pubsub_shardchannels(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    channels_generic(ctx, args, Kind::Shard)
}

/// ```text
/// PUBSUB NUMSUB [channel ...]
/// ```
/// Flat array of channel, subscriber-count pairs (patterns not counted).
fn pubsub_numsub(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    numsub_generic(ctx, args, Kind::Channel)
}

/// ```text
/// PUBSUB SHARDNUMSUB [shardchannel ...]
/// ```
/// Flat array of shard channel, subscriber-count pairs.
fn pubsub_shardnumsub(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    numsub_generic(ctx, args, Kind::Shard)
}

/// ```text
/// PUBSUB NUMPAT
/// ```
/// Integer: the number of distinct patterns subscribed to.
fn pubsub_numpat(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let n = ctx.srv.pubsub.patterns.len();
    ctx.out().int(n as i64);
    Ok(())
}

/// ```text
/// PUBSUB HELP
/// ```
/// Array of status lines.
fn pubsub_help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    const LINES: &[&str] = &[
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.",
    ];
    crate::cmd::help_reply(ctx, LINES)
}

/// Removes every subscription a client holds (disconnect, RESET).
pub fn unsubscribe_all(srv: &mut Server, c: &mut Client) {
    for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
        let all = pubsub::client_set(c, kind).take();
        let map = srv.pubsub.registry(kind);
        for ch in all {
            if let Some(subs) = map.get_mut(&ch) {
                subs.retain(|s| s.id != c.id);
                if subs.is_empty() {
                    map.remove(&ch);
                }
            }
        }
    }
}
