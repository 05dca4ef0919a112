//! LATENCY DOCTOR: Redis's human-readable report on the latency monitor's events, with its advice.

use super::latency::Series;
use crate::server::Server;

/// Average, mean absolute deviation and period (seconds since the oldest
/// sample, at least 1) of one event's samples, as Redis's `analyzeLatencyForEvent`.
fn analyze(s: &Series, now: i64) -> (u64, u64, i64) {
    let n = s.samples.len() as u64;
    if n == 0 {
        return (0, 0, 0);
    }
    let avg = s.samples.iter().map(|&(_, ms)| ms).sum::<u64>() / n;
    let mad = s
        .samples
        .iter()
        .map(|&(_, ms)| ms.abs_diff(avg))
        .sum::<u64>()
        / n;
    let oldest = s.samples.iter().map(|&(t, _)| t).min().unwrap_or(now);
    (avg, mad, (now - oldest).max(1))
}

/// Bytes of transparent huge pages the process uses (`AnonHugePages`).
fn anon_huge_pages() -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/smaps_rollup") else {
        return 0;
    };
    text.lines()
        .filter_map(|l| l.strip_prefix("AnonHugePages:"))
        .filter_map(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .sum::<u64>()
        * 1024
}

const DISABLED: &str = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n";
const NOTHING: &str = "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n";
const SLOWLOG_INSPECT: &str = "- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n";
const SCHEDULER: &str = "- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n";
const HZ: &str = "- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n";
const LARGE_OBJECTS: &str = "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n";
const THP: &str = "- I detected a non zero amount of anonymous huge pages used by your process. This creates very serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have already disabled THP, you still need to restart the Redis process to get rid of the huge pages already created.\n";

/// The report Redis's `createLatencyReport` writes, for the events Oxidis
/// records (`command`, `fast-command`, `expire-cycle`).
pub fn report(srv: &Server) -> String {
    let events = &srv.latency.events;
    let threshold = srv.config.latency_monitor_threshold;
    if events.is_empty() && threshold == 0 {
        return DISABLED.to_string();
    }
    let now = crate::clock::real_now_us() / 1_000_000;
    let mut out = String::new();
    let (mut slowlog_enable, mut slowlog_tune, mut slowlog_inspect) = (false, false, false);
    let (mut scheduler, mut hz, mut large) = (false, false, false);
    let mut advices = 0;
    for (i, (name, s)) in events.iter().enumerate() {
        if i == 0 {
            out.push_str("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
        }
        let (avg, mad, period) = analyze(s, now);
        let n = s.samples.len();
        out.push_str(&format!(
            "{}. {name}: {n} latency spikes (average {avg}ms, mean deviation {mad}ms, period {:.2} sec). Worst all time event {}ms.\n",
            i + 1,
            period as f64 / n.max(1) as f64,
            s.max
        ));
        match *name {
            "command" => {
                let slower = srv.config.slowlog_log_slower_than;
                if slower < 0 {
                    slowlog_enable = true;
                    advices += 1;
                } else if (slower / 1000) as u64 > threshold {
                    slowlog_tune = true;
                    advices += 1;
                }
                slowlog_inspect = true;
                large = true;
                advices += 2;
            }
            "fast-command" => {
                scheduler = true;
                advices += 1;
            }
            "expire-cycle" => {
                hz = true;
                large = true;
                advices += 2;
            }
            _ => {}
        }
    }
    let thp = anon_huge_pages() > 0;
    if thp {
        advices += 1;
    }
    if events.is_empty() && advices == 0 {
        out.push_str(NOTHING);
        return out;
    }
    if advices == 0 {
        out.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n");
        return out;
    }
    out.push_str("\nI have a few advices for you:\n\n");
    let us = threshold * 1000;
    if slowlog_enable {
        out.push_str(&format!("- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {us}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n"));
    }
    if slowlog_tune {
        out.push_str(&format!("- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {us}'.\n"));
    }
    if slowlog_inspect {
        out.push_str(SLOWLOG_INSPECT);
    }
    if scheduler {
        out.push_str(SCHEDULER);
    }
    if hz && srv.config.hz < 100 {
        out.push_str(HZ);
    }
    if large {
        out.push_str(LARGE_OBJECTS);
    }
    if thp {
        out.push_str(THP);
    }
    out
}
