//! Configuration: `redis-server`-compatible flags and config files, and the CONFIG GET/SET table.
//!
//! Every parameter lives in [`PARAMS`] with its kind and default. Values are
//! kept as canonical bytes (what CONFIG GET shows: free-text parameters such
//! as `requirepass` hold any bytes, as in Redis); the ones the server acts on
//! are also copied into typed fields by [`Config::apply`] after each change.

use std::collections::BTreeMap;

use crate::server::notify;

mod load;
mod params;
pub mod rewrite;
mod special;
#[cfg(test)]
mod tests;

pub use load::{from_args, quote, split_config_line};

/// How a parameter's value is validated and shown.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Bool,
    /// An integer within bounds.
    Int(i64, i64),
    /// A byte size within bounds that accepts `k`, `kb`, `m`, `mb`, `g`, `gb` suffixes.
    Memory(i64, i64),
    /// A byte size, or a percentage written `N%` (maxmemory-clients). As in
    /// Redis, the lower bound is minus the largest percentage allowed.
    MemoryPercent(i64, i64),
    /// One of the listed words.
    Enum(&'static [&'static str]),
    /// Free text.
    Str,
    /// Validated by [`Config::special`] (save, notify-keyspace-events, bind, ...).
    Special,
}

/// Parameter flags.
pub const IMMUTABLE: u8 = 1; // can't be changed by CONFIG SET
pub const PROTECTED: u8 = 2; // CONFIG SET refused unless enable-protected-configs allows it
pub const SENSITIVE: u8 = 4; // hidden from logs
pub const HIDDEN: u8 = 8; // CONFIG GET shows it only when named exactly, not for a pattern
pub const DENY_LOADING: u8 = 16; // CONFIG SET refused with -LOADING while a load runs (sync or async)

pub struct Param {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub kind: Kind,
    pub default: &'static str,
    pub flags: u8,
}

impl Param {
    /// True when Oxidis acts on this parameter (others are accepted, shown,
    /// and reported at start-up when set to something else than the default).
    pub fn acted(&self) -> bool {
        ACTED.contains(&self.name)
    }
}

/// Parameters Oxidis acts on. A family that starts honouring a parameter adds it here.
pub static ACTED: &[&str] = &[
    "cluster-enabled",
    "cluster-config-file",
    "cluster-port",
    "cluster-announce-ip",
    "cluster-announce-port",
    "cluster-announce-bus-port",
    "cluster-announce-hostname",
    "cluster-node-timeout",
    "cluster-require-full-coverage",
    "cluster-allow-reads-when-down",
    "cluster-preferred-endpoint-type",
    "min-replicas-to-write",
    "min-replicas-max-lag",
    "repl-backlog-size",
    "repl-backlog-ttl",
    "repl-diskless-sync",
    "repl-diskless-sync-delay",
    "repl-diskless-sync-max-replicas",
    "repl-ping-replica-period",
    "repl-timeout",
    "bind",
    "port",
    "unixsocket",
    "unixsocketperm",
    "requirepass",
    "acllog-max-len",
    "acl-pubsub-default",
    "databases",
    "maxclients",
    "timeout",
    "protected-mode",
    "daemonize",
    "always-show-logo",
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-clients",
    "maxmemory-samples",
    "maxmemory-eviction-tenacity",
    "lfu-log-factor",
    "lfu-decay-time",
    "lazyfree-lazy-eviction",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del",
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush",
    "pidfile",
    "port-file",
    "logfile",
    "loglevel",
    "dir",
    "save",
    "dbfilename",
    "stop-writes-on-bgsave-error",
    "rdb-key-save-delay",
    "key-load-delay",
    "rdb-save-incremental-fsync",
    "shutdown-on-sigterm",
    "shutdown-on-sigint",
    "proto-max-bulk-len",
    "client-query-buffer-limit",
    "notify-keyspace-events",
    "hz",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "enable-debug-command",
    "enable-module-command",
    "enable-test-controls",
    "list-max-listpack-size",
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "set-max-intset-entries",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "busy-reply-threshold",
    "latency-tracking",
    "latency-monitor-threshold",
    "latency-tracking-info-percentiles",
    "client-output-buffer-limit",
    "tracking-table-max-keys",
    "oom-score-adj",
    "oom-score-adj-values",
    "appendonly",
    "appendfsync",
    "appenddirname",
    "appendfilename",
    "aof-use-rdb-preamble",
    "aof-load-truncated",
    "aof-timestamp-enabled",
    "aof-disable-auto-gc",
    "auto-aof-rewrite-percentage",
    "auto-aof-rewrite-min-size",
    "no-appendfsync-on-rewrite",
];

const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning"];

/// Every parameter Redis 7.0 knows, in its names (generated from a real server).
pub static PARAMS: &[Param] = params::GENERATED;

/// The running configuration.
#[derive(Clone, Debug)]
pub struct Config {
    values: BTreeMap<&'static str, Vec<u8>>,
    /// Directives Oxidis reads but ignores, reported at start-up.
    pub warnings: Vec<String>,
    /// `loadmodule` paths: the server refuses to start with any (see
    /// `cmd::server::module::load_queued`).
    pub loadmodules: Vec<Vec<u8>>,
    /// A `module.option` line was read (a module configuration).
    pub module_configs: bool,
    /// The command names after the `rename-command` lines.
    pub names: crate::command::names::Names,
    /// `user` lines of the config file: the name, then its rules (selectors
    /// merged), checked as Redis checks them while reading the file.
    pub acl_users: Vec<Vec<Vec<u8>>>,
    /// Absolute path of the config file the server started with (CONFIG REWRITE target).
    pub config_file: Option<String>,
    /// Setting `dir` also changes the process's working directory, as Redis's
    /// `chdir`. Only the process's own server (`run_main`) does: in-process
    /// servers share one working directory, so every file they touch goes
    /// through [`Config::path`] instead.
    pub chdir: bool,
    /// A `save` line was seen while loading (later ones add to it, as in Redis).
    save_seen: bool,
    pub port: u16,
    pub bind: Vec<String>,
    pub unixsocket: Option<String>,
    pub unixsocketperm: u32,
    pub requirepass: Option<Vec<u8>>,
    pub databases: usize,
    pub maxclients: usize,
    pub timeout_secs: u64,
    pub protected_mode: bool,
    pub daemonize: bool,
    pub pidfile: Option<String>,
    /// `port-file`: where the bound TCP port is written once the server is ready.
    pub port_file: Option<String>,
    pub logfile: Option<String>,
    pub loglevel: usize,
    pub proto_max_bulk_len: i64,
    /// `client-query-buffer-limit`: a client whose unparsed input grows past it is closed.
    pub client_query_buffer_limit: u64,
    pub notify_flags: u32,
    pub hz: u32,
    /// Microseconds; negative disables the slow log, 0 logs every command.
    pub slowlog_log_slower_than: i64,
    pub slowlog_max_len: usize,
    /// `enable-debug-command`: 0 no, 1 yes, 2 local.
    pub enable_debug: u8,
    /// `enable-module-command`: 0 no, 1 yes, 2 local.
    pub enable_module: u8,
    /// `enable-test-controls` (Oxidis's own): the OXIDIS command answers.
    pub enable_test_controls: bool,
    /// `latency-tracking`: per-command histograms for INFO latencystats.
    pub latency_tracking: bool,
    /// `latency-monitor-threshold` in milliseconds; 0 disables the latency monitor.
    pub latency_monitor_threshold: u64,
    // Collection encodings (lists, hashes, sets family).
    pub list_max_listpack_size: i64,
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub set_max_intset_entries: usize,
    /// `stream-node-max-bytes` and `stream-node-max-entries` (0: no limit).
    pub stream_node_max_bytes: usize,
    pub stream_node_max_entries: i64,
    /// `client-output-buffer-limit`, per client class (pub/sub family).
    pub obuf_limits: crate::server::pubsub::OutputLimits,
    /// `tracking-table-max-keys` (client-side caching).
    pub tracking_table_max_keys: u64,
    // Sorted-set encodings and HyperLogLog (zset family).
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    pub hll_sparse_max_bytes: usize,
    /// `min-replicas-to-write` and `min-replicas-max-lag`, read by the
    /// gate's min-replicas stage on every write (`repl::good_replicas_suffice`).
    pub min_replicas_to_write: i64,
    pub min_replicas_max_lag: i64,
    /// `maxmemory` in bytes (0: no limit), read by the gate's OOM stage on
    /// every denyoom command, so never looked up by name there.
    pub maxmemory: u64,
    /// `maxmemory-clients`: bytes, or a percentage of `maxmemory` stored
    /// negative (as Redis); 0 is off (see `server::client_mem`).
    pub maxmemory_clients: i64,
    /// `maxmemory-policy`, `maxmemory-samples`, `maxmemory-eviction-tenacity`
    /// and `lazyfree-lazy-eviction`, read by eviction (`server::evict`).
    pub maxmemory_policy: crate::server::evict::Policy,
    pub maxmemory_samples: usize,
    pub maxmemory_eviction_tenacity: u32,
    pub lazyfree_lazy_eviction: bool,
    /// `lfu-log-factor` and `lfu-decay-time`, handed to the databases by
    /// `server::evict::apply_config`.
    pub lfu_log_factor: u32,
    pub lfu_decay_time: u32,
    /// `lazyfree-lazy-expire`, read after every command while propagation has
    /// a consumer.
    pub lazyfree_lazy_expire: bool,
}

impl Default for Config {
    fn default() -> Self {
        let mut c = Config {
            values: BTreeMap::new(),
            warnings: Vec::new(),
            names: Default::default(),
            loadmodules: Vec::new(),
            module_configs: false,
            config_file: None,
            chdir: false,
            save_seen: false,
            port: 6379,
            bind: Vec::new(),
            unixsocket: None,
            unixsocketperm: 0,
            requirepass: None,
            acl_users: Vec::new(),
            databases: 16,
            maxclients: 10000,
            timeout_secs: 0,
            protected_mode: true,
            daemonize: false,
            pidfile: None,
            port_file: None,
            logfile: None,
            loglevel: 2,
            proto_max_bulk_len: 512 * 1024 * 1024,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            notify_flags: 0,
            hz: 10,
            slowlog_log_slower_than: 10000,
            slowlog_max_len: 128,
            enable_debug: 0,
            enable_module: 0,
            enable_test_controls: false,
            latency_tracking: true,
            latency_monitor_threshold: 0,
            list_max_listpack_size: -2,
            hash_max_listpack_entries: 128,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            stream_node_max_bytes: 4096,
            stream_node_max_entries: 100,
            obuf_limits: Default::default(),
            tracking_table_max_keys: 1_000_000,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            hll_sparse_max_bytes: 3000,
            maxmemory: 0,
            min_replicas_to_write: 0,
            min_replicas_max_lag: 10,
            maxmemory_clients: 0,
            maxmemory_policy: Default::default(),
            maxmemory_samples: 5,
            maxmemory_eviction_tenacity: 10,
            lazyfree_lazy_eviction: false,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
            lazyfree_lazy_expire: false,
        };
        for prm in PARAMS {
            c.values.insert(prm.name, prm.default.as_bytes().to_vec());
        }
        if let Ok(cwd) = std::env::current_dir() {
            c.values.insert("dir", path_bytes(&cwd));
        }
        for prm in PARAMS {
            c.apply(prm.name);
        }
        c
    }
}

/// Finds a parameter by name or alias, case-insensitively.
pub fn find_param(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| {
        p.name.eq_ignore_ascii_case(name) || p.alias.is_some_and(|a| a.eq_ignore_ascii_case(name))
    })
}

/// Parses a memory amount as Redis's `memtoull` does (`1gb`, `100k`, plain bytes).
pub fn parse_memory(s: &str) -> Option<i64> {
    let lower = s.to_ascii_lowercase();
    let (num, mul) = [
        ("gb", 1i64 << 30),
        ("g", 1_000_000_000),
        ("mb", 1 << 20),
        ("m", 1_000_000),
        ("kb", 1 << 10),
        ("k", 1000),
        ("b", 1),
    ]
    .iter()
    .find_map(|&(suf, mul)| lower.strip_suffix(suf).map(|n| (n.to_string(), mul)))
    .unwrap_or((lower.clone(), 1));
    if num.is_empty() && lower.is_empty() {
        return Some(0); // memtoull("") is 0
    }
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = num.parse().ok()?;
    i64::try_from(n).ok()?.checked_mul(mul)
}

/// Formats a byte count as CONFIG REWRITE writes it (`1gb`, `64mb`, `3kb`, or bytes).
pub fn format_memory(n: i64) -> String {
    for (suf, unit) in [("gb", 1i64 << 30), ("mb", 1 << 20), ("kb", 1 << 10)] {
        if n != 0 && n % unit == 0 {
            return format!("{}{suf}", n / unit);
        }
    }
    n.to_string()
}

/// Parses a decimal integer as Redis's `string2ll` does (no spaces, no `+`).
/// `no`, `yes`, `local` (`enable-debug-command`, `enable-module-command`) as 0, 1, 2.
fn protected_action(v: &str) -> u8 {
    ["no", "yes", "local"]
        .iter()
        .position(|w| *w == v)
        .unwrap_or(0) as u8
}

fn parse_int(s: &str) -> Option<i64> {
    crate::types::number::parse_i64(s.as_bytes())
}

/// A path's bytes (paths are bytes on unix, as Redis keeps them).
fn path_bytes(p: &std::path::Path) -> Vec<u8> {
    std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str()).to_vec()
}

/// A path from bytes.
pub fn bytes_path(b: &[u8]) -> &std::path::Path {
    std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b))
}

impl Config {
    /// The current value of a parameter, as CONFIG GET shows it, when it is
    /// text (every value but a free-text one holding other bytes).
    pub fn get(&self, name: &str) -> Option<&str> {
        std::str::from_utf8(self.get_bytes(name)?).ok()
    }

    /// The current value of a parameter, as CONFIG GET shows it.
    pub fn get_bytes(&self, name: &str) -> Option<&[u8]> {
        let prm = find_param(name)?;
        self.values.get(prm.name).map(|s| s.as_slice())
    }

    /// `name` relative to `dir` (an absolute `name` stays as it is): where
    /// Redis, running in `dir`, would find the file.
    pub fn path(&self, name: impl AsRef<std::path::Path>) -> std::path::PathBuf {
        bytes_path(self.get_bytes("dir").unwrap_or(b".")).join(name)
    }

    /// All parameters with their values (for CONFIG GET patterns).
    pub fn all(&self) -> impl Iterator<Item = (&'static Param, &[u8])> {
        PARAMS.iter().map(move |p| {
            (
                p,
                self.values.get(p.name).map(|s| s.as_slice()).unwrap_or(b""),
            )
        })
    }

    /// Validates and stores one value. The error text is what Redis puts after
    /// `ERR CONFIG SET failed (possibly related to argument '<name>') - `.
    pub fn set(&mut self, name: &str, value: &[u8]) -> Result<(), String> {
        let prm = find_param(name).ok_or_else(|| {
            "Unknown option or number of arguments for CONFIG SET - '".to_string() + name + "'"
        })?;
        let mut canonical = self.validate(prm, value)?;
        if prm.name == "hz" {
            // Redis keeps the configured hz within 1..=500 (CONFIG GET shows the clamped value).
            let hz = std::str::from_utf8(&canonical).ok().and_then(parse_int);
            canonical = hz.unwrap_or(10).clamp(1, 500).to_string().into_bytes();
        }
        if prm.name == "dir" {
            // Relative to the current `dir`, as a chdir would take it (and
            // as chdir(""), an empty path names nothing).
            if canonical.is_empty() {
                return Err(os_error(&std::io::Error::from_raw_os_error(2)));
            }
            let dir = std::fs::canonicalize(self.path(bytes_path(&canonical)))
                .map_err(|e| os_error(&e))?;
            if !dir.is_dir() {
                return Err(os_error(&std::io::Error::from_raw_os_error(20)));
            }
            if self.chdir {
                std::env::set_current_dir(&dir).map_err(|e| os_error(&e))?;
            }
            canonical = path_bytes(&dir);
        }
        self.values.insert(prm.name, canonical);
        self.apply(prm.name);
        if prm.name == "notify-keyspace-events" {
            // Redis shows `A` without `n` (keyspaceEventsFlagsToString) but
            // keeps the flag: take the classes from what was set, not shown.
            self.notify_flags = notify::parse_flags(value).unwrap_or(0);
        }
        Ok(())
    }

    /// The canonical form of `value` for `prm` (what CONFIG GET will show), or
    /// Redis's error. Free text (and `dir`, a path) is kept byte for byte;
    /// every other kind is parsed as text, which bytes that are not UTF-8
    /// never pass.
    pub fn validate(&self, prm: &Param, value: &[u8]) -> Result<Vec<u8>, String> {
        if matches!(prm.kind, Kind::Str) || prm.name == "dir" {
            return Ok(value.to_vec());
        }
        let text = String::from_utf8_lossy(value);
        self.validate_text(prm, &text).map(String::into_bytes)
    }

    fn validate_text(&self, prm: &Param, value: &str) -> Result<String, String> {
        let range = |n: i64, lo: i64, hi: i64| {
            if n < lo || n > hi {
                Err(format!("argument must be between {lo} and {hi} inclusive"))
            } else {
                Ok(n.to_string())
            }
        };
        match prm.kind {
            Kind::Bool => match value.to_ascii_lowercase().as_str() {
                // No active defragmentation: Redis built without its patched
                // jemalloc (as Debian's, the reference) refuses it so.
                "yes" if prm.name == "activedefrag" => Err(crate::error::NO_ACTIVE_DEFRAG.into()),
                "yes" => Ok("yes".into()),
                "no" => Ok("no".into()),
                _ => Err("argument must be 'yes' or 'no'".into()),
            },
            Kind::Int(lo, hi) => {
                let n = parse_int(value)
                    .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
                range(n, lo, hi)
            }
            Kind::Memory(lo, hi) => {
                let n = parse_memory(value)
                    .ok_or_else(|| "argument must be a memory value".to_string())?;
                range(n, lo, hi)
            }
            Kind::MemoryPercent(lo, hi) => {
                if let Some(p) = value.strip_suffix('%') {
                    return match parse_int(p) {
                        Some(n) if n > -lo => Err(format!(
                            "percentage argument must be less or equal to {}",
                            -lo
                        )),
                        // Kept as a negative number, so 0% is plain 0.
                        Some(0) => Ok("0".into()),
                        Some(n) if n > 0 => Ok(format!("{n}%")),
                        _ => Err("argument must be a memory or percent value".into()),
                    };
                }
                let n = parse_memory(value)
                    .ok_or_else(|| "argument must be a memory or percent value".to_string())?;
                range(n, lo, hi)
            }
            Kind::Enum(words) if prm.name.starts_with("shutdown-on-sig") => {
                special::shutdown_flags(words, value)
            }
            Kind::Enum(words) => {
                let v = value.to_ascii_lowercase();
                if words.contains(&v.as_str()) {
                    Ok(v)
                } else {
                    Err("argument(s) must be one of the following: ".to_string()
                        + &words.join(", "))
                }
            }
            Kind::Str => Ok(value.to_string()),
            Kind::Special => self.special(prm.name, value),
        }
    }

    /// Copies a parameter into its typed field.
    fn apply(&mut self, name: &str) {
        let raw = self.values.get(name).cloned().unwrap_or_default();
        if name == "requirepass" {
            // Compared byte for byte by AUTH: never through text.
            self.requirepass = (!raw.is_empty()).then_some(raw);
            return;
        }
        let v = String::from_utf8_lossy(&raw).into_owned();
        let int = || parse_int(&v).unwrap_or(0);
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        match name {
            "port" => self.port = int() as u16,
            "bind" => self.bind = v.split_whitespace().map(String::from).collect(),
            "unixsocket" => self.unixsocket = opt(&v),
            "unixsocketperm" => self.unixsocketperm = u32::from_str_radix(&v, 8).unwrap_or(0),
            "databases" => self.databases = int() as usize,
            "maxclients" => self.maxclients = int() as usize,
            "timeout" => self.timeout_secs = int() as u64,
            "protected-mode" => self.protected_mode = v == "yes",
            "daemonize" => self.daemonize = v == "yes",
            "pidfile" => self.pidfile = opt(&v),
            "port-file" => self.port_file = opt(&v),
            "logfile" => self.logfile = opt(&v),
            "loglevel" => self.loglevel = LOGLEVELS.iter().position(|l| *l == v).unwrap_or(2),
            "proto-max-bulk-len" => self.proto_max_bulk_len = int(),
            "client-query-buffer-limit" => self.client_query_buffer_limit = int().max(0) as u64,
            "notify-keyspace-events" => {
                self.notify_flags = notify::parse_flags(v.as_bytes()).unwrap_or(0)
            }
            "hz" => self.hz = int().clamp(1, 500) as u32,
            "slowlog-log-slower-than" => self.slowlog_log_slower_than = int(),
            "slowlog-max-len" => self.slowlog_max_len = int().max(0) as usize,
            "latency-tracking" => self.latency_tracking = v == "yes",
            "latency-monitor-threshold" => self.latency_monitor_threshold = int().max(0) as u64,
            "enable-debug-command" => self.enable_debug = protected_action(&v),
            "enable-module-command" => self.enable_module = protected_action(&v),
            "enable-test-controls" => self.enable_test_controls = v == "yes",
            "list-max-listpack-size" => self.list_max_listpack_size = int(),
            "hash-max-listpack-entries" => self.hash_max_listpack_entries = int() as usize,
            "hash-max-listpack-value" => self.hash_max_listpack_value = int() as usize,
            "set-max-intset-entries" => self.set_max_intset_entries = int() as usize,
            "stream-node-max-bytes" => self.stream_node_max_bytes = int().max(0) as usize,
            "stream-node-max-entries" => self.stream_node_max_entries = int().max(0),
            "client-output-buffer-limit" => {
                self.obuf_limits = crate::server::pubsub::OutputLimits::default()
                    .parse_onto(&v)
                    .unwrap_or_default()
            }
            "tracking-table-max-keys" => self.tracking_table_max_keys = int().max(0) as u64,
            "zset-max-listpack-entries" => self.zset_max_listpack_entries = int().max(0) as usize,
            "zset-max-listpack-value" => self.zset_max_listpack_value = int().max(0) as usize,
            "hll-sparse-max-bytes" => self.hll_sparse_max_bytes = int().max(0) as usize,
            "maxmemory" => self.maxmemory = int().max(0) as u64,
            "min-replicas-to-write" => self.min_replicas_to_write = int(),
            "min-replicas-max-lag" => self.min_replicas_max_lag = int(),
            "maxmemory-clients" => {
                self.maxmemory_clients = match v.strip_suffix('%') {
                    Some(p) => -parse_int(p).unwrap_or(0),
                    None => int().max(0),
                }
            }
            "maxmemory-policy" => self.maxmemory_policy = crate::server::evict::Policy::parse(&v),
            "maxmemory-samples" => self.maxmemory_samples = int().max(1) as usize,
            "maxmemory-eviction-tenacity" => {
                self.maxmemory_eviction_tenacity = int().clamp(0, 100) as u32
            }
            "lazyfree-lazy-eviction" => self.lazyfree_lazy_eviction = v == "yes",
            "lfu-log-factor" => self.lfu_log_factor = int().clamp(0, u32::MAX as i64) as u32,
            "lfu-decay-time" => self.lfu_decay_time = int().clamp(0, u32::MAX as i64) as u32,
            "lazyfree-lazy-expire" => self.lazyfree_lazy_expire = v == "yes",
            _ => {}
        }
    }

    /// Integer value of a parameter (for the families that read tuning knobs).
    pub fn get_i64(&self, name: &str) -> i64 {
        self.get(name).and_then(parse_int).unwrap_or(0)
    }

    /// Parameters that were set to something other than their default but
    /// that Oxidis does not act on yet (reported at start-up).
    pub fn inert_settings(&self) -> Vec<(&'static str, Vec<u8>)> {
        PARAMS
            .iter()
            .filter(|p| !p.acted())
            .filter_map(|p| {
                let v = self.values.get(p.name)?;
                // A password (masterauth, ...) is not written to the log.
                let shown = if p.flags & SENSITIVE != 0 {
                    b"(redacted)".to_vec()
                } else {
                    v.clone()
                };
                (v.as_slice() != p.default.as_bytes()).then_some((p.name, shown))
            })
            .collect()
    }
}

/// The text of an OS error without Rust's " (os error N)" suffix, as strerror prints it.
pub fn os_error(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
