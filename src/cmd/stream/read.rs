//! XREAD and XREADGROUP: reading new entries, the consumer's history, blocking until entries arrive.
//!
//! A blocked reader keeps its command, with `$` replaced by the id it stood
//! for, and runs it again once one of its keys has an entry past that id
//! (or, for a group, past the group's last delivered id): see
//! [`serve_waiters`]. Until then it stays in its place in the queue.

use super::{now_ms, parse_strict, write_entry, write_id};
use crate::command::{Args, Argv};
use crate::db::{Kind, Value};
use crate::error::{stream as err, CmdResult, Error};
use crate::resp::encode::Reply;
use crate::server::{blocking, notify, Ctx};
use crate::types::stream::{Group, Stream, StreamId, ENTRIES_READ_INVALID};

/// Entries a blocked reader without COUNT gets when woken (Redis's
/// XREAD_BLOCKED_DEFAULT_COUNT).
const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// The options before STREAMS.
struct ReadOpts<'a> {
    block_ms: Option<i64>,
    count: usize,
    /// Index of the first key, and how many keys.
    keys_at: usize,
    nkeys: usize,
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
}

fn parse_opts<'a>(ctx: &Ctx, args: &Args<'a>, group_cmd: bool) -> Result<ReadOpts<'a>, Error> {
    let mut o = ReadOpts {
        block_ms: None,
        count: 0,
        keys_at: 0,
        nkeys: 0,
        group: None,
        noack: false,
    };
    let argc = args.len();
    let mut i = 1;
    while i < argc {
        let more = argc - i - 1;
        let a = args.at(i);
        if a.eq_ignore_ascii_case(b"BLOCK") && more > 0 {
            if ctx.in_script() {
                return Err(err::block_in_script(args.at(0)));
            }
            i += 1;
            o.block_ms = Some(blocking::parse_timeout_ms(args.at(i))?);
        } else if a.eq_ignore_ascii_case(b"COUNT") && more > 0 {
            i += 1;
            o.count = super::int_arg(args.at(i))?.max(0) as usize;
        } else if a.eq_ignore_ascii_case(b"STREAMS") && more > 0 {
            o.keys_at = i + 1;
            let n = argc - o.keys_at;
            if !n.is_multiple_of(2) {
                return Err(Error::msg(err::UNBALANCED));
            }
            o.nkeys = n / 2;
            break;
        } else if a.eq_ignore_ascii_case(b"GROUP") && more >= 2 {
            if !group_cmd {
                return Err(Error::msg(err::GROUP_IN_XREAD));
            }
            o.group = Some((args.at(i + 1), args.at(i + 2)));
            i += 2;
        } else if a.eq_ignore_ascii_case(b"NOACK") {
            if !group_cmd {
                return Err(Error::msg(err::NOACK_IN_XREAD));
            }
            o.noack = true;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    if o.keys_at == 0 {
        return Err(Error::Syntax);
    }
    if group_cmd && o.group.is_none() {
        return Err(Error::msg(err::MISSING_GROUP));
    }
    Ok(o)
}

/// Key positions of XREAD and XREADGROUP (Redis's `xreadGetKeys`).
pub fn xread_keys(args: &Args) -> Vec<usize> {
    let argc = args.len();
    let mut i = 1;
    let mut streams = None;
    while i < argc {
        let a = args.at(i);
        if a.eq_ignore_ascii_case(b"BLOCK") || a.eq_ignore_ascii_case(b"COUNT") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"GROUP") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"NOACK") {
        } else if a.eq_ignore_ascii_case(b"STREAMS") {
            streams = Some(i);
            break;
        } else {
            break;
        }
        i += 1;
    }
    let Some(at) = streams else { return Vec::new() };
    let n = argc - at - 1;
    if n == 0 || !n.is_multiple_of(2) {
        return Vec::new();
    }
    (at + 1..at + 1 + n / 2).collect()
}

/// ```text
/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
/// ```
/// RESP2: array of [key, entries]; RESP3: map key → entries; null when
/// nothing arrived (at once, or after BLOCK's timeout).
pub fn xread(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    read_generic(ctx, args, false)
}

/// ```text
/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]
/// ```
/// As XREAD; `>` reads entries never delivered to the group, another id
/// the consumer's pending history. Propagated as the XCLAIMs (and XGROUP
/// SETID / CREATECONSUMER with NOACK) that rebuild the pending lists.
pub fn xreadgroup(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    read_generic(ctx, args, true)
}

/// How one key's id was given.
#[derive(Clone, Copy)]
enum Want {
    /// Entries after this id.
    After(StreamId),
    /// `>`: entries never delivered to the group.
    New,
}

fn read_generic(ctx: &mut Ctx, args: &Args, group_cmd: bool) -> CmdResult {
    let o = parse_opts(ctx, args, group_cmd)?;
    // Nothing XREAD(GROUP) does is propagated as itself.
    ctx.prevent_propagation();
    let mut wants = Vec::with_capacity(o.nkeys);
    for j in 0..o.nkeys {
        let key = args.at(o.keys_at + j);
        let arg = args.at(o.keys_at + o.nkeys + j);
        let s = ctx.db().read::<Stream>(key)?;
        if let Some((g, _)) = o.group {
            if !s.is_some_and(|s| s.groups.contains_key(g)) {
                return Err(err::no_key_or_group_read(key, g));
            }
        }
        let want = if arg == b"$" {
            if group_cmd {
                return Err(Error::msg(err::DOLLAR_IN_GROUP));
            }
            Want::After(s.map_or(StreamId::MIN, |s| s.last_id))
        } else if arg == b">" {
            if !group_cmd {
                return Err(Error::msg(err::GT_WITHOUT_GROUP));
            }
            Want::New
        } else {
            Want::After(parse_strict(arg)?)
        };
        wants.push(want);
    }
    let count = if o.count == 0 && ctx.srv.prop.serving_blocked {
        BLOCKED_DEFAULT_COUNT
    } else {
        o.count
    };
    let mut served = 0;
    let mut header = None;
    let mut props: Vec<Vec<Vec<u8>>> = Vec::new();
    for (j, want) in wants.iter().enumerate() {
        let key = args.at(o.keys_at + j);
        if ctx
            .srv
            .prop
            .serving_key
            .as_deref()
            .is_some_and(|k| k != key)
        {
            continue;
        }
        let now = now_ms();
        let Ctx { srv, client, .. } = &mut *ctx;
        let db = &mut srv.ks.dbs[client.db];
        let out = &mut client.reply;
        let Some(s) = db.write::<Stream>(key)? else {
            continue;
        };
        // Which entries to serve, if any: (start after, history?).
        let plan = match (*want, o.group) {
            (Want::After(id), Some(_)) => Some((id, true)),
            (Want::New, Some((g, _))) => {
                let last = s.groups.get(g).map_or(StreamId::MAX, |g| g.last_id);
                (!s.is_empty() && s.last_valid_id() > last).then_some((last, false))
            }
            (Want::After(id), None) => {
                (!s.is_empty() && s.last_valid_id() > id).then_some((id, false))
            }
            (Want::New, None) => None,
        };
        let Some((after, history)) = plan else {
            continue;
        };
        if header.is_none() {
            header = Some(out.deferred());
        }
        served += 1;
        if !out.resp3() {
            out.array(2);
        }
        out.bulk(key);
        let start = after.next().unwrap_or(StreamId::MAX);
        match o.group {
            None => {
                super::write_range(out, s, start, StreamId::MAX, count, false);
            }
            Some((gname, cname)) => {
                let mut g = s.groups.remove(gname).expect("group checked above");
                let (c, created) = g.consumer_or_create(cname, now);
                c.seen_time = now;
                let mut events = Vec::new();
                if created {
                    events.push("xgroup-createconsumer");
                    if o.noack {
                        props.push(argv(&[b"XGROUP", b"CREATECONSUMER", key, gname, cname]));
                    }
                }
                if history {
                    history_range(out, s, &mut g, cname, start, count, now);
                } else {
                    let spi = Spi {
                        key,
                        group: gname,
                        props: &mut props,
                    };
                    group_range(out, s, &mut g, cname, start, count, o.noack, now, spi);
                }
                s.groups.insert(gname.into(), g);
                srv.ks.dirty += 1 + created as u64;
                for ev in events {
                    ctx.event(notify::STREAM, ev, key);
                }
            }
        }
    }
    for p in &props {
        let v: Vec<&[u8]> = p.iter().map(|x| &x[..]).collect();
        ctx.also_propagate(&v);
    }
    if let Some(d) = header {
        let out = ctx.out();
        if out.resp3() {
            out.end_map(d, served);
        } else {
            out.end_array(d, served);
        }
        return Ok(());
    }
    match o.block_ms {
        Some(ms) if !ctx.in_exec => {
            // `$` is fixed to the id it meant now.
            let mut a = Argv::from_slices(args.from(0).take(o.keys_at + o.nkeys));
            for want in &wants {
                match want {
                    Want::After(id) => a.push(&id.to_bytes()),
                    Want::New => a.push(b">"),
                }
            }
            let keys = (0..o.nkeys)
                .map(|j| args.at(o.keys_at + j).into())
                .collect();
            blocking::block(ctx, keys, Kind::Stream, ms, &a.args());
        }
        _ => ctx.out().null_array(),
    }
    Ok(())
}

fn argv(items: &[&[u8]]) -> Vec<Vec<u8>> {
    items.iter().map(|x| x.to_vec()).collect()
}

/// Where a group read's propagation goes (Redis's `streamPropInfo`).
struct Spi<'a, 'b> {
    key: &'a [u8],
    group: &'a [u8],
    props: &'b mut Vec<Vec<Vec<u8>>>,
}

/// The XCLAIM that recreates a pending entry on a replica or in the AOF
/// (Redis's `streamPropagateXCLAIM`).
/// `id_arg` is the id as the command gave it (XCLAIM propagates its own
/// argument; the others a formatted id).
pub(crate) fn xclaim_argv(
    key: &[u8],
    group: &[u8],
    g: &Group,
    id: StreamId,
    id_arg: &[u8],
) -> Vec<Vec<u8>> {
    let n = &g.pel[&id];
    let mut b = itoa::Buffer::new();
    vec![
        b"XCLAIM".to_vec(),
        key.to_vec(),
        group.to_vec(),
        n.consumer.to_vec(),
        b"0".to_vec(),
        id_arg.to_vec(),
        b"TIME".to_vec(),
        b.format(n.delivery_time).as_bytes().to_vec(),
        b"RETRYCOUNT".to_vec(),
        b.format(n.delivery_count).as_bytes().to_vec(),
        b"FORCE".to_vec(),
        b"JUSTID".to_vec(),
        b"LASTID".to_vec(),
        g.last_id.to_bytes(),
    ]
}

/// `XGROUP SETID key group last-id ENTRIESREAD n` (Redis's `streamPropagateGroupID`).
pub(crate) fn setid_argv(key: &[u8], group: &[u8], g: &Group) -> Vec<Vec<u8>> {
    vec![
        b"XGROUP".to_vec(),
        b"SETID".to_vec(),
        key.to_vec(),
        group.to_vec(),
        g.last_id.to_bytes(),
        b"ENTRIESREAD".to_vec(),
        itoa::Buffer::new()
            .format(g.entries_read)
            .as_bytes()
            .to_vec(),
    ]
}

/// New entries for a group (Redis's `streamReplyWithRange` with a group):
/// each advances the group's last id and read counter and, unless
/// `noack`, becomes pending for the consumer.
#[allow(clippy::too_many_arguments)]
fn group_range(
    out: &mut Reply,
    s: &Stream,
    g: &mut Group,
    consumer: &[u8],
    start: StreamId,
    count: usize,
    noack: bool,
    now: i64,
    spi: Spi<'_, '_>,
) {
    let d = out.deferred();
    let mut n = 0;
    let mut moved = false;
    for e in s.range(start, StreamId::MAX, false) {
        if e.id > g.last_id {
            if g.entries_read != ENTRIES_READ_INVALID
                && !s.range_has_tombstones(e.id, StreamId::MAX)
            {
                g.entries_read += 1;
            } else if s.entries_added > 0 {
                g.entries_read = s.estimate_distance(e.id);
            }
            g.last_id = e.id;
            moved = true;
        }
        write_entry(out, &e);
        if !noack {
            g.deliver(e.id, consumer, now);
            spi.props
                .push(xclaim_argv(spi.key, spi.group, g, e.id, &e.id.to_bytes()));
        }
        n += 1;
        if count != 0 && n == count {
            break;
        }
    }
    if noack && moved {
        spi.props.push(setid_argv(spi.key, spi.group, g));
    }
    out.end_array(d, n);
}

/// The consumer's own pending entries after `start` (Redis's
/// `streamReplyWithRangeFromConsumerPEL`): each counts as delivered again;
/// one deleted since is `[id, null]`.
fn history_range(
    out: &mut Reply,
    s: &Stream,
    g: &mut Group,
    consumer: &[u8],
    start: StreamId,
    count: usize,
    now: i64,
) {
    let ids: Vec<StreamId> = g
        .consumers
        .get(consumer)
        .map(|c| {
            c.pel
                .range(start..)
                .take(super::upto(count))
                .copied()
                .collect()
        })
        .unwrap_or_default();
    out.array(ids.len());
    for id in ids {
        match s.get(id) {
            Some(e) => {
                write_entry(out, &e);
                if let Some(n) = g.pel.get_mut(&id) {
                    n.delivery_time = now;
                    n.delivery_count += 1;
                }
            }
            None => {
                out.array(2);
                write_id(out, id);
                out.null_array();
            }
        }
    }
}

/// What a blocked reader waits for on one key, read back from its command.
enum Waits<'a> {
    /// XREAD: an entry after this id.
    After(StreamId),
    /// XREADGROUP: an entry after the group's last delivered id.
    Group(&'a [u8]),
}

fn waits_on<'a>(argv: &'a Argv, key: &[u8]) -> Option<Waits<'a>> {
    let args = argv.args();
    let keys = xread_keys(&args);
    let n = keys.len();
    let j = keys.iter().position(|&i| argv.at(i) == key)?;
    let group_cmd = argv.at(0).eq_ignore_ascii_case(b"XREADGROUP");
    if group_cmd {
        let mut i = 1;
        while i + 2 < argv.len() {
            if argv.at(i).eq_ignore_ascii_case(b"GROUP") {
                return Some(Waits::Group(argv.at(i + 1)));
            }
            i += 1;
        }
        return None;
    }
    let id = parse_strict(argv.at(keys[0] + n + j)).ok()?;
    Some(Waits::After(id))
}

/// Serves the XREAD/XREADGROUP clients blocked on `key`, in the order they
/// blocked (Redis's `serveClientsBlockedOnStreamKey` and
/// `unblockDeletedStreamReadgroupClients`): every reader with something
/// new runs its command again; a group reader whose key or group is gone
/// gets Redis's error; the others keep waiting in their place.
pub fn serve_waiters(
    srv: &mut crate::server::Server,
    current: &mut crate::server::client::Client,
    db: usize,
    key: &[u8],
) {
    let Some(queue) = srv.ks.dbs[db].waiters.get(key) else {
        return;
    };
    let queue: Vec<_> = queue.iter().copied().collect();
    for id in queue {
        if id == current.id {
            continue;
        }
        let Some(cell) = srv.clients.get(&id).cloned() else {
            continue;
        };
        let Ok(mut waiter) = cell.state.try_borrow_mut() else {
            continue;
        };
        let Some(b) = waiter.blocked.as_ref() else {
            continue;
        };
        if b.kind != Kind::Stream {
            continue;
        }
        let d = &srv.ks.dbs[db];
        let value = d.peek(key).filter(|_| !d.is_expired(key));
        let verdict = match (waits_on(&b.argv, key), value) {
            (None, _) => None,
            (Some(Waits::Group(g)), Some(Value::Stream(s))) => match s.groups.get(g) {
                None => Some(Err(err::GROUP_DESTROYED)),
                Some(grp) => (s.last_id > grp.last_id).then_some(Ok(())),
            },
            // The key went, or holds another type now.
            (Some(Waits::Group(_)), _) => Some(Err(err::UNBLOCKED_DELETED)),
            (Some(Waits::After(after)), Some(Value::Stream(s))) => {
                (s.last_id > after).then_some(Ok(()))
            }
            (Some(Waits::After(_)), _) => None,
        };
        match verdict {
            None => continue,
            Some(Err(text)) => {
                let Some(b) = blocking::unregister(srv, &mut waiter) else {
                    continue;
                };
                // Counted as the blocked command failing (its call was
                // counted when it blocked).
                let code = text.split(' ').next().unwrap_or("ERR");
                srv.stats.error(code.to_string());
                srv.stats.cmd(b.id).failed += 1;
                waiter.reply.error_line(text);
                waiter.unblocked = true;
                drop(waiter);
                cell.wake.notify_one();
            }
            Some(Ok(())) => {
                let Some(b) = blocking::unregister(srv, &mut waiter) else {
                    continue;
                };
                srv.prop.serving_key = Some(key.to_vec());
                blocking::run_woken(srv, &mut waiter, &b);
                srv.prop.serving_key = None;
                let again = waiter.blocked.is_some();
                if !again {
                    waiter.unblocked = true;
                }
                drop(waiter);
                cell.wake.notify_one();
            }
        }
    }
}
