//! Configuration: `redis-server`-compatible flags and config files, and the CONFIG GET/SET table.
//!
//! Every parameter lives in [`PARAMS`] with its kind and default. Values are
//! kept as canonical strings (what CONFIG GET shows); the ones the server acts
//! on are also copied into typed fields by [`Config::apply`] after each change.

use std::collections::BTreeMap;

use crate::server::notify;

mod params;
pub mod rewrite;

/// How a parameter's value is validated and shown.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Bool,
    /// An integer within bounds.
    Int(i64, i64),
    /// A byte size within bounds that accepts `k`, `kb`, `m`, `mb`, `g`, `gb` suffixes.
    Memory(i64, i64),
    /// A byte size, or a percentage written `N%` (maxmemory-clients).
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
    "bind",
    "port",
    "unixsocket",
    "unixsocketperm",
    "requirepass",
    "databases",
    "maxclients",
    "timeout",
    "protected-mode",
    "daemonize",
    "pidfile",
    "logfile",
    "loglevel",
    "dir",
    "proto-max-bulk-len",
    "notify-keyspace-events",
    "hz",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "enable-debug-command",
    "list-max-listpack-size",
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "set-max-intset-entries",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "busy-reply-threshold",
    "client-output-buffer-limit",
    "tracking-table-max-keys",
];

const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning"];

/// Every parameter Redis 7.0 knows, in its names (generated from a real server).
pub static PARAMS: &[Param] = params::GENERATED;

/// The running configuration.
#[derive(Clone, Debug)]
pub struct Config {
    values: BTreeMap<&'static str, String>,
    /// Directives Oxidis reads but ignores (`rename-command`, ...), reported at start-up.
    pub warnings: Vec<String>,
    /// Absolute path of the config file the server started with (CONFIG REWRITE target).
    pub config_file: Option<String>,
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
    pub logfile: Option<String>,
    pub loglevel: usize,
    pub proto_max_bulk_len: i64,
    pub notify_flags: u32,
    pub hz: u32,
    /// Microseconds; negative disables the slow log, 0 logs every command.
    pub slowlog_log_slower_than: i64,
    pub slowlog_max_len: usize,
    /// `enable-debug-command`: 0 no, 1 yes, 2 local.
    pub enable_debug: u8,
    // Collection encodings (lists, hashes, sets family).
    pub list_max_listpack_size: i64,
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub set_max_intset_entries: usize,
    /// `client-output-buffer-limit`, per client class (pub/sub family).
    pub obuf_limits: crate::server::pubsub::OutputLimits,
    /// `tracking-table-max-keys` (client-side caching).
    pub tracking_table_max_keys: u64,
    // Sorted-set encodings and HyperLogLog (zset family).
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    pub hll_sparse_max_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        let mut c = Config {
            values: BTreeMap::new(),
            warnings: Vec::new(),
            config_file: None,
            save_seen: false,
            port: 6379,
            bind: Vec::new(),
            unixsocket: None,
            unixsocketperm: 0,
            requirepass: None,
            databases: 16,
            maxclients: 10000,
            timeout_secs: 0,
            protected_mode: true,
            daemonize: false,
            pidfile: None,
            logfile: None,
            loglevel: 2,
            proto_max_bulk_len: 512 * 1024 * 1024,
            notify_flags: 0,
            hz: 10,
            slowlog_log_slower_than: 10000,
            slowlog_max_len: 128,
            enable_debug: 0,
            list_max_listpack_size: -2,
            hash_max_listpack_entries: 128,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            obuf_limits: Default::default(),
            tracking_table_max_keys: 1_000_000,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            hll_sparse_max_bytes: 3000,
        };
        for prm in PARAMS {
            c.values.insert(prm.name, prm.default.to_string());
        }
        if let Ok(cwd) = std::env::current_dir() {
            c.values.insert("dir", cwd.display().to_string());
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
fn parse_int(s: &str) -> Option<i64> {
    crate::types::number::parse_i64(s.as_bytes())
}

impl Config {
    /// The current value of a parameter, as CONFIG GET shows it.
    pub fn get(&self, name: &str) -> Option<&str> {
        let prm = find_param(name)?;
        self.values.get(prm.name).map(|s| s.as_str())
    }

    /// All parameters with their values (for CONFIG GET patterns).
    pub fn all(&self) -> impl Iterator<Item = (&'static Param, &str)> {
        PARAMS
            .iter()
            .map(move |p| (p, self.values.get(p.name).map(|s| s.as_str()).unwrap_or("")))
    }

    /// Validates and stores one value. The error text is what Redis puts after
    /// `ERR CONFIG SET failed (possibly related to argument '<name>') - `.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let prm = find_param(name).ok_or_else(|| {
            "Unknown option or number of arguments for CONFIG SET - '".to_string() + name + "'"
        })?;
        let mut canonical = self.validate(prm, value)?;
        if prm.name == "hz" {
            // Redis keeps the configured hz within 1..=500 (CONFIG GET shows the clamped value).
            canonical = parse_int(&canonical)
                .unwrap_or(10)
                .clamp(1, 500)
                .to_string();
        }
        if prm.name == "dir" {
            std::env::set_current_dir(&canonical).map_err(|e| os_error(&e))?;
            if let Ok(cwd) = std::env::current_dir() {
                canonical = cwd.display().to_string();
            }
        }
        self.values.insert(prm.name, canonical);
        self.apply(prm.name);
        Ok(())
    }

    /// The canonical form of `value` for `prm` (what CONFIG GET will show), or Redis's error.
    pub fn validate(&self, prm: &Param, value: &str) -> Result<String, String> {
        let range = |n: i64, lo: i64, hi: i64| {
            if n < lo || n > hi {
                Err(format!("argument must be between {lo} and {hi} inclusive"))
            } else {
                Ok(n.to_string())
            }
        };
        match prm.kind {
            Kind::Bool => match value.to_ascii_lowercase().as_str() {
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
                        Some(n) if n >= 0 => Ok(format!("{n}%")),
                        _ => Err("argument must be a memory or percent value".into()),
                    };
                }
                let n = parse_memory(value)
                    .ok_or_else(|| "argument must be a memory or percent value".to_string())?;
                range(n, lo, hi)
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

    /// Validation and canonical form for parameters with their own syntax.
    fn special(&self, name: &str, value: &str) -> Result<String, String> {
        let words: Vec<&str> = value.split_whitespace().collect();
        match name {
            "notify-keyspace-events" => notify::parse_flags(value.as_bytes())
                .map(notify::flags_to_string)
                .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()),
            "save" => {
                if !words.len().is_multiple_of(2)
                    || words.iter().any(|p| parse_int(p).is_none_or(|n| n < 0))
                {
                    return Err("Invalid save parameters".into());
                }
                Ok(words.join(" "))
            }
            "dir" => Ok(value.to_string()),
            "unixsocketperm" => u32::from_str_radix(value, 8)
                .ok()
                .filter(|n| *n <= 0o777)
                .map(|n| format!("{n:o}"))
                .ok_or_else(|| "argument couldn't be parsed as an octal number".to_string()),
            "client-output-buffer-limit" => {
                if !words.len().is_multiple_of(4) {
                    return Err("Wrong number of arguments in buffer limit configuration.".into());
                }
                let mut classes = [
                    ("normal", ["0", "0", "0"].map(String::from)),
                    ("slave", ["268435456", "67108864", "60"].map(String::from)),
                    ("pubsub", ["33554432", "8388608", "60"].map(String::from)),
                ];
                let current: Vec<&str> = self
                    .values
                    .get("client-output-buffer-limit")
                    .map(|s| s.split_whitespace().collect())
                    .unwrap_or_default();
                for (i, c) in current.chunks(4).enumerate() {
                    if c.len() == 4 && i < 3 {
                        classes[i].1 = [c[1], c[2], c[3]].map(String::from);
                    }
                }
                for c in words.chunks(4) {
                    let class = match c[0].to_ascii_lowercase().as_str() {
                        "normal" => 0,
                        "slave" | "replica" => 1,
                        "pubsub" => 2,
                        _ => {
                            return Err(
                                "Invalid client class specified in buffer limit configuration."
                                    .into(),
                            )
                        }
                    };
                    let hard = parse_memory(c[1]);
                    let soft = parse_memory(c[2]);
                    let secs = parse_int(c[3]).filter(|n| *n >= 0);
                    match (hard, soft, secs) {
                        (Some(h), Some(s), Some(t)) => {
                            classes[class].1 = [h.to_string(), s.to_string(), t.to_string()]
                        }
                        _ => return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into()),
                    }
                }
                Ok(classes
                    .iter()
                    .map(|(n, v)| format!("{n} {}", v.join(" ")))
                    .collect::<Vec<_>>()
                    .join(" "))
            }
            "oom-score-adj-values" => {
                if words.len() != 3 {
                    return Err("wrong number of arguments".into());
                }
                let mut out = Vec::new();
                for w in &words {
                    match parse_int(w) {
                        Some(n) if (-2000..=2000).contains(&n) => out.push(n.to_string()),
                        _ => return Err("Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into()),
                    }
                }
                Ok(out.join(" "))
            }
            "latency-tracking-info-percentiles" => {
                let mut out = Vec::new();
                for w in &words {
                    match w.parse::<f64>() {
                        Ok(f) if (0.0..=100.0).contains(&f) => {
                            out.push(crate::types::number::fmt_double(f))
                        }
                        Ok(_) => return Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into()),
                        _ => return Err("Invalid latency-tracking-info-percentiles parameters".into()),
                    }
                }
                Ok(out.join(" "))
            }
            "cluster-announce-hostname" => {
                if value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
                {
                    Ok(value.to_string())
                } else {
                    Err(
                        "Hostnames may only contain alphanumeric characters, hyphens or dots"
                            .into(),
                    )
                }
            }
            "replicaof" => {
                if words.is_empty()
                    || (words.len() == 2
                        && words[0].eq_ignore_ascii_case("no")
                        && words[1].eq_ignore_ascii_case("one"))
                {
                    Ok(String::new())
                } else if words.len() == 2 {
                    Ok(words.join(" "))
                } else {
                    Err("wrong number of arguments".into())
                }
            }
            _ => Ok(words.join(" ")),
        }
    }

    /// Copies a parameter into its typed field.
    fn apply(&mut self, name: &str) {
        let v = self.values.get(name).cloned().unwrap_or_default();
        let int = || parse_int(&v).unwrap_or(0);
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        match name {
            "port" => self.port = int() as u16,
            "bind" => self.bind = v.split_whitespace().map(String::from).collect(),
            "unixsocket" => self.unixsocket = opt(&v),
            "unixsocketperm" => self.unixsocketperm = u32::from_str_radix(&v, 8).unwrap_or(0),
            "requirepass" => self.requirepass = opt(&v).map(String::into_bytes),
            "databases" => self.databases = int() as usize,
            "maxclients" => self.maxclients = int() as usize,
            "timeout" => self.timeout_secs = int() as u64,
            "protected-mode" => self.protected_mode = v == "yes",
            "daemonize" => self.daemonize = v == "yes",
            "pidfile" => self.pidfile = opt(&v),
            "logfile" => self.logfile = opt(&v),
            "loglevel" => self.loglevel = LOGLEVELS.iter().position(|l| *l == v).unwrap_or(2),
            "proto-max-bulk-len" => self.proto_max_bulk_len = int(),
            "notify-keyspace-events" => {
                self.notify_flags = notify::parse_flags(v.as_bytes()).unwrap_or(0)
            }
            "hz" => self.hz = int().clamp(1, 500) as u32,
            "slowlog-log-slower-than" => self.slowlog_log_slower_than = int(),
            "slowlog-max-len" => self.slowlog_max_len = int().max(0) as usize,
            "enable-debug-command" => {
                self.enable_debug = ["no", "yes", "local"]
                    .iter()
                    .position(|w| *w == v)
                    .unwrap_or(0) as u8
            }
            "list-max-listpack-size" => self.list_max_listpack_size = int(),
            "hash-max-listpack-entries" => self.hash_max_listpack_entries = int() as usize,
            "hash-max-listpack-value" => self.hash_max_listpack_value = int() as usize,
            "set-max-intset-entries" => self.set_max_intset_entries = int() as usize,
            "client-output-buffer-limit" => {
                self.obuf_limits = crate::server::pubsub::OutputLimits::default()
                    .parse_onto(&v)
                    .unwrap_or_default()
            }
            "tracking-table-max-keys" => self.tracking_table_max_keys = int().max(0) as u64,
            "zset-max-listpack-entries" => self.zset_max_listpack_entries = int().max(0) as usize,
            "zset-max-listpack-value" => self.zset_max_listpack_value = int().max(0) as usize,
            "hll-sparse-max-bytes" => self.hll_sparse_max_bytes = int().max(0) as usize,
            _ => {}
        }
    }

    /// Integer value of a parameter (for the families that read tuning knobs).
    pub fn get_i64(&self, name: &str) -> i64 {
        self.get(name).and_then(parse_int).unwrap_or(0)
    }

    /// Loads config-file text (also what command-line flags turn into).
    /// Errors are the full fatal-error text redis-server prints before exiting.
    pub fn load_text(&mut self, text: &str) -> Result<(), String> {
        for (n, raw) in text.split('\n').enumerate() {
            let line = raw.trim_matches(|c| c == ' ' || c == '\t' || c == '\r');
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fail = |msg: &str| {
                format!(
                    "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***\nReading the configuration file, at line {}\n>>> '{}'\n{}",
                    crate::REDIS_VERSION,
                    n + 1,
                    line,
                    msg
                )
            };
            let words = split_config_line(line)
                .ok_or_else(|| fail("Unbalanced quotes in configuration line"))?;
            if words.is_empty() {
                continue;
            }
            let name = words[0].to_ascii_lowercase();
            let args = &words[1..];
            match name.as_str() {
                "include" => {
                    if args.len() != 1 {
                        return Err(fail("Bad directive or wrong number of arguments"));
                    }
                    let t = std::fs::read_to_string(&args[0]).map_err(|e| {
                        format!(
                            "Fatal error, can't open config file '{}': {}",
                            args[0],
                            os_error(&e)
                        )
                    })?;
                    self.load_text(&t)?;
                }
                "rename-command" | "user" | "loadmodule" | "sentinel" => {
                    self.warnings.push(format!(
                        "'{name}' is not supported by Oxidis and was ignored"
                    ));
                }
                "save" => {
                    // Several `save` lines accumulate, as in Redis; `save ""` clears.
                    let joined = args.join(" ");
                    if joined.trim().is_empty() && args.len() > 1 {
                        return Err(fail("Invalid save parameters"));
                    }
                    let cur = if self.save_seen {
                        self.get("save").unwrap_or("").to_string()
                    } else {
                        String::new()
                    };
                    self.save_seen = true;
                    let v = if joined.trim().is_empty() {
                        String::new()
                    } else if cur.is_empty() {
                        joined
                    } else {
                        format!("{cur} {joined}")
                    };
                    self.set("save", &v).map_err(|e| fail(&e))?;
                }
                _ => match find_param(&name) {
                    Some(prm) => {
                        let multi = matches!(prm.kind, Kind::Special)
                            && !matches!(
                                prm.name,
                                "dir" | "unixsocketperm" | "cluster-announce-hostname"
                            );
                        if !multi && args.len() != 1 {
                            return Err(fail("wrong number of arguments"));
                        }
                        if multi && args.is_empty() {
                            return Err(fail("wrong number of arguments"));
                        }
                        let v = args.join(" ");
                        self.set(prm.name, &v).map_err(|e| fail(&e))?;
                    }
                    None => return Err(fail("Bad directive or wrong number of arguments")),
                },
            }
        }
        Ok(())
    }

    /// Parameters that were set to something other than their default but
    /// that Oxidis does not act on yet (reported at start-up).
    pub fn inert_settings(&self) -> Vec<(&'static str, String)> {
        PARAMS
            .iter()
            .filter(|p| !p.acted())
            .filter_map(|p| {
                let v = self.values.get(p.name)?;
                (v != p.default).then(|| (p.name, v.clone()))
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

/// Splits a config line like Redis's `sdssplitargs`.
pub fn split_config_line(line: &str) -> Option<Vec<String>> {
    let bytes = line.as_bytes();
    let mut words = Vec::new();
    let mut ranges = Vec::new();
    match crate::resp::decode::parse(
        &[bytes, b"\n"].concat(),
        &mut ranges,
        crate::resp::decode::Limits {
            max_bulk: i64::MAX,
            authenticated: true,
        },
    ) {
        crate::resp::decode::Parsed::Command { .. } => {
            for (s, e) in ranges {
                words.push(
                    String::from_utf8_lossy(&crate::resp::decode::inline_word(&bytes[s..e]))
                        .into_owned(),
                );
            }
            Some(words)
        }
        _ => None,
    }
}

/// Turns `redis-server` command-line arguments into a Config, exactly as
/// `redis-server [config-file] [--name value ...] [-]` reads them: the file,
/// then stdin when `-` is given, then the options, one line per `--name`.
pub fn from_args(args: &[String]) -> Result<Config, String> {
    let mut cfg = Config::default();
    let mut j = 0;
    let mut file = None;
    if let Some(first) = args.first() {
        if !first.starts_with('-') {
            file = Some(first.clone());
            j = 1;
        }
    }
    let mut from_stdin = false;
    let mut options = String::new();
    let mut handled_last = true;
    while j < args.len() {
        let a = &args[j];
        if a == "-" && (j == 0 || j == args.len() - 1) {
            from_stdin = true;
        } else if handled_last && a.starts_with("--") {
            if !options.is_empty() {
                options.push('\n');
            }
            options.push_str(&a[2..]);
            options.push(' ');
            if split_config_line(a).is_some_and(|w| w.len() == 1) {
                handled_last = false;
                let next_is_opt = args.get(j + 1).is_some_and(|n| n.starts_with("--"));
                if a.eq_ignore_ascii_case("--save") && (next_is_opt || j == args.len() - 1) {
                    options.push_str("\"\"");
                    handled_last = true;
                }
            } else {
                handled_last = true;
            }
        } else {
            options.push_str(&quote(a));
            options.push(' ');
            handled_last = true;
        }
        j += 1;
    }
    let mut text = String::new();
    if let Some(path) = &file {
        let t = std::fs::read(path).map_err(|e| {
            format!(
                "Fatal error, can't open config file '{path}': {}",
                os_error(&e)
            )
        })?;
        text.push_str(&String::from_utf8_lossy(&t));
        cfg.config_file = std::fs::canonicalize(path)
            .ok()
            .map(|p| p.display().to_string());
    }
    if from_stdin {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map_err(|e| e.to_string())?;
        text.push_str(&s);
    }
    if !options.is_empty() {
        text.push('\n');
        text.push_str(&options);
    }
    cfg.load_text(&text)?;
    Ok(cfg)
}

/// Quotes a word the way `sdscatrepr` does, so the config parser reads it back.
pub fn quote(s: &str) -> String {
    let mut out = Vec::new();
    crate::server::monitor::repr(&mut out, s.as_bytes());
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn harness_style_flags() {
        let c = from_args(&args(&[
            "--port",
            "7001",
            "--save",
            "",
            "--appendonly",
            "no",
            "--databases",
            "4",
        ]))
        .unwrap();
        assert_eq!(c.port, 7001);
        assert_eq!(c.get("save"), Some(""));
        assert_eq!(c.databases, 4);
        let c = from_args(&args(&["--save", "--port", "7002"])).unwrap();
        assert_eq!(c.get("save"), Some(""));
        assert_eq!(c.port, 7002);
    }

    #[test]
    fn flags_become_quoted_config_lines() {
        // `--port 7001` style, several words for one option, `--save` alone at the end.
        let c = from_args(&args(&[
            "--bind",
            "127.0.0.1",
            "::1",
            "--notify-keyspace-events",
            "KEA",
            "--save",
        ]))
        .unwrap();
        assert_eq!(c.bind, vec!["127.0.0.1".to_string(), "::1".to_string()]);
        assert_eq!(c.get("notify-keyspace-events"), Some("AKE"));
        assert_eq!(c.get("save"), Some(""));
        // A value with spaces and quotes survives the quoting round trip.
        let c = from_args(&args(&["--requirepass", "a \"b\" c"])).unwrap();
        assert_eq!(c.requirepass.as_deref(), Some(&b"a \"b\" c"[..]));
    }

    #[test]
    fn file_then_flags_and_include() {
        let dir = std::env::temp_dir().join(format!("oxidis-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let inc = dir.join("inc.conf");
        std::fs::write(&inc, "hz 33\nmaxmemory 2mb\n").unwrap();
        let main = dir.join("main.conf");
        std::fs::write(
            &main,
            format!(
                "# c\nport 7100\ninclude {}\nsave 900 1\nsave 300 10\n",
                inc.display()
            ),
        )
        .unwrap();
        let c = from_args(&args(&[main.to_str().unwrap(), "--hz", "44"])).unwrap();
        assert_eq!(c.port, 7100);
        assert_eq!(c.get("hz"), Some("44"));
        assert_eq!(c.get("maxmemory"), Some("2097152"));
        assert_eq!(c.get("save"), Some("900 1 300 10"));
        assert!(c.config_file.is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn fatal_errors_name_the_line() {
        let e = from_args(&args(&["--port", "0", "--hz", "x"])).unwrap_err();
        assert_eq!(
            e,
            "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nReading the configuration file, at line 3\n>>> 'hz \"x\"'\nargument couldn't be parsed into an integer"
        );
        let e = from_args(&args(&["--appendonly", "maybe"])).unwrap_err();
        assert!(e.ends_with(">>> 'appendonly \"maybe\"'\nargument must be 'yes' or 'no'"));
        let e = from_args(&args(&["--maxmemory-policy", "x"])).unwrap_err();
        assert!(e.ends_with("argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"));
    }

    #[test]
    fn aliases_share_one_value() {
        let mut c = Config::default();
        c.set("slave-read-only", "no").unwrap();
        assert_eq!(c.get("replica-read-only"), Some("no"));
        c.set("HASH-MAX-ZIPLIST-ENTRIES", "7").unwrap();
        assert_eq!(c.get("hash-max-listpack-entries"), Some("7"));
        assert_eq!(c.hash_max_listpack_entries, 7);
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("1gb"), Some(1 << 30));
        assert_eq!(parse_memory("100k"), Some(100_000));
        assert_eq!(parse_memory("12"), Some(12));
        assert_eq!(parse_memory("x"), None);
    }
}
