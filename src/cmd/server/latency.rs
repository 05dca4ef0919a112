//! Per-command latency histograms behind INFO's `# Latencystats` section
//! (`latency-tracking`, `latency-tracking-info-percentiles`).
//!
//! Each histogram counts durations in nanoseconds in buckets that keep about
//! two significant digits, like the HDR histograms Redis uses: values below
//! 128 ns have their own bucket; above, each power of two is split into 64
//! buckets. A percentile is reported as the highest value of its bucket.

use crate::server::Server;

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

/// Histograms by command id (allocated on a command's first call).
#[derive(Default)]
pub struct Latency {
    pub by_cmd: Vec<Option<Histogram>>,
}

/// Records one call of command `id` (called by dispatch after every command).
pub fn record(srv: &mut Server, id: usize, ns: u64) {
    if !srv.config.latency_tracking {
        return;
    }
    let v = &mut srv.ext.latency.by_cmd;
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
    for (id, h) in srv.ext.latency.by_cmd.iter().enumerate() {
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
