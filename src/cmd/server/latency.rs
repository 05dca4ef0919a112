//! Latency: per-command histograms behind INFO's `# Latencystats` and
//! LATENCY HISTOGRAM (`latency-tracking`, `latency-tracking-info-percentiles`),
//! and the latency monitor behind LATENCY LATEST/HISTORY/RESET
//! (`latency-monitor-threshold`).
//!
//! Each histogram counts durations in nanoseconds in buckets that keep about
//! two significant digits, like the HDR histograms Redis uses: values below
//! 128 ns have their own bucket; above, each power of two is split into 64
//! buckets. A percentile is reported as the highest value of its bucket.

use std::collections::BTreeMap;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::CmdResult;
use crate::server::{Ctx, Server};

pub static SUBS: &[CommandSpec] = &[
    CommandSpec::new(
        "latency|latest",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        (0, 0, 0),
        latest,
    ),
    CommandSpec::new(
        "latency|history",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        (0, 0, 0),
        history,
    ),
    CommandSpec::new(
        "latency|reset",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        (0, 0, 0),
        reset,
    ),
    CommandSpec::new(
        "latency|histogram",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        (0, 0, 0),
        histogram,
    ),
    CommandSpec::new(
        "latency|doctor",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        (0, 0, 0),
        doctor,
    ),
    CommandSpec::new("latency|help", 2, LOADING | STALE, (0, 0, 0), help),
];

const HELP: &[&str] = &[
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
    "HELP",
    "    Prints this help.",
];

/// Samples kept per event (Redis's LATENCY_TS_LEN).
const SERIES_LEN: usize = 160;

/// One event's samples, oldest first: (unix seconds, milliseconds). A second
/// holds one sample (the largest), as in Redis's `latencyAddSample`.
#[derive(Default)]
pub struct Series {
    pub samples: std::collections::VecDeque<(i64, u64)>,
    pub max: u64,
}

/// Exact buckets for 0..128 ns, then 64 per power of two up to 2^40 ns.
const LINEAR: usize = 128;
const SUB: usize = 64;
const BUCKETS: usize = LINEAR + 34 * SUB;

/// One command's histogram.
pub struct Histogram {
    counts: Box<[u32]>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            total: 0,
        }
    }
}

fn bucket(ns: u64) -> usize {
    if ns < LINEAR as u64 {
        return ns as usize;
    }
    let m = (63 - ns.leading_zeros()) as usize - 6; // ns >> m is in 64..128
    let sub = (ns >> m) as usize;
    (LINEAR + (m - 1) * SUB + (sub - SUB)).min(BUCKETS - 1)
}

/// The highest value that falls in bucket `b`.
fn bucket_top(b: usize) -> u64 {
    if b < LINEAR {
        return b as u64;
    }
    let m = (b - LINEAR) / SUB + 1;
    let sub = (b - LINEAR) % SUB + SUB;
    (((sub + 1) as u64) << m) - 1
}

impl Histogram {
    pub fn record(&mut self, ns: u64) {
        self.counts[bucket(ns)] += 1;
        self.total += 1;
    }

    /// The value at percentile `p` (0..=100), in nanoseconds.
    pub fn percentile(&self, p: f64) -> u64 {
        let want = ((p / 100.0) * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0u64;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen >= want {
                return bucket_top(b);
            }
        }
        0
    }
}

/// Histograms by command id (allocated on a command's first call), and the
/// latency monitor's events (`command`, `fast-command`, `expire-cycle`).
#[derive(Default)]
pub struct Latency {
    pub by_cmd: Vec<Option<Histogram>>,
    pub events: BTreeMap<&'static str, Series>,
}

/// Adds a latency monitor sample when it reaches `latency-monitor-threshold`.
pub fn monitor_sample(srv: &mut Server, event: &'static str, ms: u64) {
    let threshold = srv.config.latency_monitor_threshold;
    if threshold == 0 || ms < threshold {
        return;
    }
    let now = crate::clock::real_now_us() / 1_000_000;
    let series = srv.latency.events.entry(event).or_default();
    series.max = series.max.max(ms);
    match series.samples.back_mut() {
        Some(last) if last.0 == now => last.1 = last.1.max(ms),
        _ => {
            if series.samples.len() == SERIES_LEN {
                series.samples.pop_front();
            }
            series.samples.push_back((now, ms));
        }
    }
}

/// Records one call of command `spec` (id `id`) that took `ns` (called by
/// dispatch after every command).
pub fn record(srv: &mut Server, id: usize, spec: &CommandSpec, ns: u64) {
    if srv.config.latency_monitor_threshold > 0 {
        let event = if spec.has(FAST) {
            "fast-command"
        } else {
            "command"
        };
        monitor_sample(srv, event, ns / 1_000_000);
    }
    if !srv.config.latency_tracking {
        return;
    }
    let v = &mut srv.latency.by_cmd;
    if id >= v.len() {
        v.resize_with(id + 1, || None);
    }
    v[id].get_or_insert_with(Histogram::default).record(ns);
}

/// The `# Latencystats` section: `latency_percentiles_usec_<cmd>:p50=..,p99=..`.
pub fn section(srv: &Server, out: &mut String) {
    out.push_str("# Latencystats\r\n");
    let pcts: Vec<(String, f64)> = srv
        .config
        .get("latency-tracking-info-percentiles")
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|w| w.parse::<f64>().ok().map(|f| (w.to_string(), f)))
        .collect();
    if pcts.is_empty() {
        return;
    }
    let table = crate::command::table::table();
    for (id, h) in srv.latency.by_cmd.iter().enumerate() {
        let (Some(h), Some(spec)) = (h, table.all.get(id)) else {
            continue;
        };
        let fields: Vec<String> = pcts
            .iter()
            .map(|(name, p)| format!("p{name}={:.3}", h.percentile(*p) as f64 / 1000.0))
            .collect();
        out.push_str(&format!(
            "latency_percentiles_usec_{}:{}\r\n",
            spec.name,
            fields.join(",")
        ));
    }
}

/// ```text
/// LATENCY HELP
/// ```
fn help(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    crate::cmd::help_reply(ctx, HELP)
}

/// ```text
/// LATENCY DOCTOR
/// ```
/// Verbatim text: the latency monitor's report and advice.
fn doctor(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let report = super::latency_doctor::report(ctx.srv);
    ctx.out().verbatim(report.as_bytes());
    Ok(())
}

/// ```text
/// LATENCY LATEST
/// ```
/// Array of `[event, unix time, latest ms, max ms]`, one per event.
fn latest(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let events = &ctx.srv.latency.events;
    let out = &mut ctx.client.reply;
    out.array(events.len());
    for (name, s) in events {
        let (t, ms) = s.samples.back().copied().unwrap_or((0, 0));
        out.array(4);
        out.bulk(name.as_bytes());
        out.int(t);
        out.int(ms as i64);
        out.int(s.max as i64);
    }
    Ok(())
}

/// ```text
/// LATENCY HISTORY event
/// ```
/// Array of `[unix time, ms]` samples, oldest first (empty for unknown events).
fn history(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let event = args.at(2);
    let samples: Vec<(i64, u64)> = ctx
        .srv
        .latency
        .events
        .iter()
        .find(|(n, _)| n.as_bytes() == event)
        .map(|(_, s)| s.samples.iter().copied().collect())
        .unwrap_or_default();
    let out = ctx.out();
    out.array(samples.len());
    for (t, ms) in samples {
        out.array(2);
        out.int(t);
        out.int(ms as i64);
    }
    Ok(())
}

/// ```text
/// LATENCY RESET [event ...]
/// ```
/// Integer: how many events were reset (all of them without arguments).
fn reset(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let events = &mut ctx.srv.latency.events;
    let n = if args.has_more() {
        let mut n = 0;
        for e in args.by_ref() {
            let key = events.keys().find(|k| k.as_bytes() == e).copied();
            if let Some(k) = key {
                events.remove(k);
                n += 1;
            }
        }
        n
    } else {
        let n = events.len();
        events.clear();
        n
    };
    ctx.out().int(n as i64);
    Ok(())
}

/// ```text
/// LATENCY HISTOGRAM [command ...]
/// ```
/// Map of command name → {calls, histogram_usec: {upper bound µs → cumulative
/// calls}}, the bounds being powers of two from 1024 ns as Redis iterates them.
/// Without names every command with calls; a name (`client`, `client|id`)
/// gives that command and, for a container, its subcommands, in argument
/// order (unknown names are skipped, repeated ones repeat, as in Redis).
fn histogram(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let table = crate::command::table::table();
    let lat = &ctx.srv.latency;
    let with_calls = |id: usize| {
        lat.by_cmd
            .get(id)
            .and_then(|h| h.as_ref())
            .filter(|h| h.total > 0)
            .map(|h| (table.all[id].name, h))
    };
    let mut picked: Vec<(&'static str, &Histogram)> = Vec::new();
    if !args.has_more() {
        picked.extend((0..table.all.len()).filter_map(with_calls));
    }
    for name in args.by_ref() {
        let Some(c) = ctx.srv.config.names.lookup_path(name) else {
            continue;
        };
        // A container's subcommands follow it in the table.
        let subs = c.id + 1..c.id + 1 + c.spec.subcommands.len();
        picked.extend(std::iter::once(c.id).chain(subs).filter_map(with_calls));
    }
    let out = &mut ctx.client.reply;
    out.map(picked.len());
    for (name, h) in picked {
        out.bulk(name.as_bytes());
        out.map(2);
        out.bulk(b"calls");
        out.int(h.total as i64);
        out.bulk(b"histogram_usec");
        let steps = h.cumulative_pow2();
        out.map(steps.len());
        for (usec, count) in steps {
            out.int(usec as i64);
            out.int(count as i64);
        }
    }
    Ok(())
}

impl Histogram {
    /// (bound in µs, calls that took less than the bound) for bounds 1024 ns,
    /// 2048 ns, ... while the count grows, until every call is counted.
    fn cumulative_pow2(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut bound: u64 = 1024;
        let mut seen = 0u64;
        let mut b = 0usize;
        let mut last = 0u64;
        while seen < self.total && bound < (1 << 42) {
            while b < BUCKETS && bucket_top(b) < bound {
                seen += self.counts[b] as u64;
                b += 1;
            }
            if seen > last {
                out.push((bound / 1000, seen));
                last = seen;
            }
            bound <<= 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Property: every value lands in a bucket whose top is >= the value and
    /// within 1/64 of it, and percentiles follow a sorted model.
    #[test]
    fn buckets_and_percentiles_against_a_model() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut h = Histogram::default();
        let mut model = Vec::new();
        for _ in 0..5000 {
            let v = next() % (1 << (next() % 34));
            let top = bucket_top(bucket(v));
            assert!(top >= v && top - v <= v / 64 + 1, "{v} -> {top}");
            h.record(v);
            model.push(v);
        }
        model.sort_unstable();
        for p in [50.0, 90.0, 99.0, 99.9, 100.0] {
            let idx = ((p / 100.0) * model.len() as f64).ceil() as usize - 1;
            let want = model[idx];
            let got = h.percentile(p);
            assert!(
                got >= want && got - want <= want / 64 + 1,
                "p{p}: {got} vs {want}"
            );
        }
    }
}
