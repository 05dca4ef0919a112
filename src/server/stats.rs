//! Counters behind INFO stats, commandstats and errorstats.

use std::collections::HashMap;

/// Per-command counters (INFO commandstats).
#[derive(Clone, Copy, Debug, Default)]
pub struct CmdStat {
    pub calls: u64,
    pub usec: u64,
    pub rejected: u64,
    pub failed: u64,
}

#[derive(Default)]
pub struct Stats {
    pub connections_received: u64,
    pub rejected_connections: u64,
    pub commands_processed: u64,
    pub net_input_bytes: u64,
    pub net_output_bytes: u64,
    pub evicted_keys: u64,
    /// Clients closed by `maxmemory-clients` (INFO `evicted_clients`).
    pub evicted_clients: u64,
    /// Microseconds memory spent over `maxmemory` in past episodes
    /// (`total_eviction_exceeded_time`), and when the current one began.
    pub eviction_exceeded_us: u64,
    pub eviction_exceeded_since: Option<std::time::Instant>,
    pub pubsub_messages: u64,
    /// Indexed by the command id the table assigns.
    pub commands: Vec<CmdStat>,
    /// Error code (first word) → count.
    pub errors: HashMap<String, u64>,
    pub total_error_replies: u64,
    /// `total_error_replies` when the running command began, or when a
    /// command a script called settled its own error (Redis's
    /// `incrCommandStatsOnError` keeps it as `prev_err_count`).
    pub errors_mark: u64,
    /// The running command replied an error already counted elsewhere (a
    /// script passing on its `redis.call`'s error): it failed all the same.
    pub uncounted_error: bool,
    /// Error replies on a replication link (`unexpected_error_replies`).
    pub unexpected_error_replies: u64,
    /// Ops-per-second samples for `instantaneous_ops_per_sec`.
    pub ops_samples: [u64; 16],
    pub ops_sample_idx: usize,
    pub last_sample_commands: u64,
    pub last_sample_ms: i64,
}

impl Stats {
    pub fn cmd(&mut self, id: usize) -> &mut CmdStat {
        if id >= self.commands.len() {
            self.commands.resize(id + 1, CmdStat::default());
        }
        &mut self.commands[id]
    }

    /// CONFIG RESETSTAT: counters, command stats and error stats start from zero.
    pub fn reset(&mut self) {
        *self = Stats::default();
    }

    /// Errors counted from here on are the next command's (or script
    /// call's) own.
    pub fn mark_errors(&mut self) {
        self.errors_mark = self.total_error_replies;
    }

    /// The command since `mark_errors` failed: an error reply was counted,
    /// or one was sent uncounted. Marks again.
    pub fn failed_since_mark(&mut self) -> bool {
        let failed = self.total_error_replies > self.errors_mark
            || std::mem::take(&mut self.uncounted_error);
        self.errors_mark = self.total_error_replies;
        failed
    }

    pub fn error(&mut self, code: String) {
        self.total_error_replies += 1;
        *self.errors.entry(code).or_insert(0) += 1;
    }

    /// Takes an ops/sec sample (called from the cron).
    pub fn sample_ops(&mut self, now_ms: i64) {
        let dt = now_ms - self.last_sample_ms;
        if dt <= 0 {
            return;
        }
        let ops = self.commands_processed - self.last_sample_commands;
        self.ops_samples[self.ops_sample_idx] = ops * 1000 / dt as u64;
        self.ops_sample_idx = (self.ops_sample_idx + 1) % self.ops_samples.len();
        self.last_sample_commands = self.commands_processed;
        self.last_sample_ms = now_ms;
    }

    pub fn instantaneous_ops(&self) -> u64 {
        self.ops_samples.iter().sum::<u64>() / self.ops_samples.len() as u64
    }
}
