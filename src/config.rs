//! Configuration: `redis-server`-compatible flags and config files, and the CONFIG GET/SET table.
//!
//! Every parameter lives in [`PARAMS`] with its kind and default. Values are
//! kept as canonical strings (what CONFIG GET shows); the ones the server acts
//! on are also copied into typed fields by [`Config::apply`] after each change.

use std::collections::BTreeMap;

use crate::server::notify;

/// How a parameter's value is validated and shown.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Bool,
    /// An integer within bounds.
    Int(i64, i64),
    /// A byte size that accepts `k`, `kb`, `m`, `mb`, `g`, `gb` suffixes.
    Memory,
    /// One of the listed words.
    Enum(&'static [&'static str]),
    /// Free text.
    Str,
    /// Validated by [`Config::apply`] (save, notify-keyspace-events, bind, ...).
    Special,
}

/// Parameter flags.
pub const IMMUTABLE: u8 = 1; // can't be changed by CONFIG SET
pub const ACTED: u8 = 2; // Oxidis acts on it (others are accepted and reported at start-up)
pub const SENSITIVE: u8 = 4; // hidden from logs

pub struct Param {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub kind: Kind,
    pub default: &'static str,
    pub flags: u8,
}

const fn p(name: &'static str, kind: Kind, default: &'static str, flags: u8) -> Param {
    Param {
        name,
        alias: None,
        kind,
        default,
        flags,
    }
}

const fn pa(
    name: &'static str,
    alias: &'static str,
    kind: Kind,
    default: &'static str,
    flags: u8,
) -> Param {
    Param {
        name,
        alias: Some(alias),
        kind,
        default,
        flags,
    }
}

const YES_NO: Kind = Kind::Bool;
const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning"];

/// Every parameter Oxidis knows, in Redis's names.
pub static PARAMS: &[Param] = &[
    p("bind", Kind::Special, "* -::*", ACTED),
    p("port", Kind::Int(0, 65535), "6379", ACTED),
    p("unixsocket", Kind::Str, "", ACTED | IMMUTABLE),
    // Octal, as Redis reads and shows it.
    p("unixsocketperm", Kind::Special, "0", ACTED | IMMUTABLE),
    p("requirepass", Kind::Str, "", ACTED | SENSITIVE),
    p(
        "databases",
        Kind::Int(1, i32::MAX as i64),
        "16",
        ACTED | IMMUTABLE,
    ),
    p("maxclients", Kind::Int(1, i32::MAX as i64), "10000", ACTED),
    p("timeout", Kind::Int(0, i32::MAX as i64), "0", ACTED),
    p("tcp-keepalive", Kind::Int(0, i32::MAX as i64), "300", 0),
    p("protected-mode", YES_NO, "yes", ACTED),
    p("daemonize", YES_NO, "no", ACTED | IMMUTABLE),
    p("pidfile", Kind::Str, "", ACTED | IMMUTABLE),
    p("logfile", Kind::Str, "", ACTED | IMMUTABLE),
    p("loglevel", Kind::Enum(LOGLEVELS), "notice", ACTED),
    p("dir", Kind::Special, "", ACTED),
    p("dbfilename", Kind::Str, "dump.rdb", ACTED),
    p("save", Kind::Special, "3600 1 300 100 60 10000", 0),
    p("appendonly", YES_NO, "no", 0),
    p("appendfilename", Kind::Str, "appendonly.aof", IMMUTABLE),
    p(
        "appendfsync",
        Kind::Enum(&["always", "everysec", "no"]),
        "everysec",
        0,
    ),
    p("proto-max-bulk-len", Kind::Memory, "536870912", ACTED),
    p("client-query-buffer-limit", Kind::Memory, "1073741824", 0),
    p("notify-keyspace-events", Kind::Special, "", ACTED),
    p("hz", Kind::Int(1, 500), "10", ACTED),
    p("maxmemory", Kind::Memory, "0", 0),
    p(
        "maxmemory-policy",
        Kind::Enum(&[
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "noeviction",
        ]),
        "noeviction",
        0,
    ),
    p("maxmemory-samples", Kind::Int(1, 64), "5", 0),
    pa(
        "busy-reply-threshold",
        "lua-time-limit",
        Kind::Int(0, i64::MAX),
        "5000",
        0,
    ),
    p(
        "slowlog-log-slower-than",
        Kind::Int(-1, i64::MAX),
        "10000",
        0,
    ),
    p("slowlog-max-len", Kind::Int(0, i64::MAX), "128", 0),
    p("latency-monitor-threshold", Kind::Int(0, i64::MAX), "0", 0),
    p(
        "list-max-listpack-size",
        Kind::Int(i32::MIN as i64, i32::MAX as i64),
        "-2",
        0,
    ),
    p("list-compress-depth", Kind::Int(0, i32::MAX as i64), "0", 0),
    pa(
        "hash-max-listpack-entries",
        "hash-max-ziplist-entries",
        Kind::Int(0, i64::MAX),
        "128",
        0,
    ),
    pa(
        "hash-max-listpack-value",
        "hash-max-ziplist-value",
        Kind::Int(0, i64::MAX),
        "64",
        0,
    ),
    p("set-max-intset-entries", Kind::Int(0, i64::MAX), "512", 0),
    p("set-max-listpack-entries", Kind::Int(0, i64::MAX), "128", 0),
    p("set-max-listpack-value", Kind::Int(0, i64::MAX), "64", 0),
    pa(
        "zset-max-listpack-entries",
        "zset-max-ziplist-entries",
        Kind::Int(0, i64::MAX),
        "128",
        0,
    ),
    pa(
        "zset-max-listpack-value",
        "zset-max-ziplist-value",
        Kind::Int(0, i64::MAX),
        "64",
        0,
    ),
    p("hll-sparse-max-bytes", Kind::Memory, "3000", 0),
    p("lazyfree-lazy-user-flush", YES_NO, "no", 0),
    p("lazyfree-lazy-user-del", YES_NO, "no", 0),
    p("lazyfree-lazy-expire", YES_NO, "no", 0),
    p("lazyfree-lazy-eviction", YES_NO, "no", 0),
    p("lazyfree-lazy-server-del", YES_NO, "no", 0),
    p("io-threads", Kind::Int(1, 128), "1", IMMUTABLE),
    p(
        "supervised",
        Kind::Enum(&["upstart", "systemd", "auto", "no"]),
        "no",
        IMMUTABLE,
    ),
    p(
        "enable-debug-command",
        Kind::Enum(&["no", "yes", "local"]),
        "no",
        IMMUTABLE,
    ),
    p("cluster-enabled", YES_NO, "no", IMMUTABLE),
    p(
        "tracking-table-max-keys",
        Kind::Int(0, i64::MAX),
        "1000000",
        0,
    ),
    p(
        "client-output-buffer-limit",
        Kind::Special,
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        0,
    ),
    p("always-show-logo", YES_NO, "no", IMMUTABLE),
    p("set-proc-title", YES_NO, "yes", IMMUTABLE),
    p("activerehashing", YES_NO, "yes", 0),
    p("active-expire-effort", Kind::Int(1, 10), "1", 0),
    p("lua-replicate-commands", YES_NO, "yes", 0),
    p("replica-read-only", YES_NO, "yes", 0),
    p("stop-writes-on-bgsave-error", YES_NO, "yes", 0),
    p("rdbcompression", YES_NO, "yes", 0),
    p("rdbchecksum", YES_NO, "yes", 0),
];

/// The running configuration.
#[derive(Clone, Debug)]
pub struct Config {
    values: BTreeMap<&'static str, String>,
    /// `rename-command` and other directives Oxidis reads but that are not CONFIG parameters.
    pub warnings: Vec<String>,
    /// Path of the config file, for CONFIG REWRITE and INFO config_file.
    pub config_file: Option<String>,
    /// A `save` line was read: later ones accumulate instead of replacing the default.
    save_seen: bool,
    // Typed copies of the parameters the server acts on.
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
    let lower = name.to_ascii_lowercase();
    PARAMS
        .iter()
        .find(|p| p.name == lower || p.alias == Some(lower.as_str()))
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
    let n: i64 = num.parse().ok()?;
    if n < 0 {
        return None;
    }
    n.checked_mul(mul)
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
        let canonical = match prm.kind {
            Kind::Bool => match value.to_ascii_lowercase().as_str() {
                "yes" => "yes".to_string(),
                "no" => "no".to_string(),
                _ => return Err("argument must be 'yes' or 'no'".into()),
            },
            Kind::Int(lo, hi) => {
                let n: i64 = value
                    .parse()
                    .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
                if n < lo || n > hi {
                    return Err(format!("argument must be between {lo} and {hi} inclusive"));
                }
                n.to_string()
            }
            Kind::Memory => parse_memory(value)
                .ok_or_else(|| "argument must be a memory value".to_string())?
                .to_string(),
            Kind::Enum(words) => {
                let v = value.to_ascii_lowercase();
                if !words.contains(&v.as_str()) {
                    return Err("argument(s) must be one of the following: ".to_string()
                        + &words.join(", "));
                }
                v
            }
            Kind::Str => value.to_string(),
            Kind::Special => self.special(prm.name, value)?,
        };
        self.values.insert(prm.name, canonical);
        self.apply(prm.name);
        Ok(())
    }

    /// Validation and canonical form for parameters with their own syntax.
    fn special(&self, name: &str, value: &str) -> Result<String, String> {
        match name {
            "notify-keyspace-events" => notify::parse_flags(value.as_bytes())
                .map(notify::flags_to_string)
                .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmd'.".to_string()),
            "unixsocketperm" => match u32::from_str_radix(value, 8) {
                Ok(n) if n <= 0o777 => Ok(format!("{n:o}")),
                _ => Err("argument must be between 0 and 777 inclusive".into()),
            },
            "save" => {
                let parts: Vec<&str> = value.split_whitespace().collect();
                if parts.len() % 2 != 0 || parts.iter().any(|p| p.parse::<i64>().is_err()) {
                    return Err("Invalid save parameters".into());
                }
                Ok(parts.join(" "))
            }
            "dir" => {
                if !value.is_empty() && std::env::set_current_dir(value).is_err() {
                    return Err(format!("No such file or directory"));
                }
                Ok(std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_else(|_| value.to_string()))
            }
            _ => Ok(value.split_whitespace().collect::<Vec<_>>().join(" ")),
        }
    }

    /// Copies a parameter into its typed field.
    fn apply(&mut self, name: &str) {
        let v = self.values.get(name).cloned().unwrap_or_default();
        let int = || v.parse::<i64>().unwrap_or(0);
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
            _ => {}
        }
    }

    /// Integer value of a parameter (for the families that read tuning knobs).
    pub fn get_i64(&self, name: &str) -> i64 {
        self.get(name).and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    /// Loads config-file text (also what command-line flags turn into).
    pub fn load_text(&mut self, text: &str) -> Result<(), String> {
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words = split_config_line(line).ok_or_else(|| {
                format!("*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nReading the configuration file, at line {}\n>>> '{}'\nUnbalanced quotes in configuration line", n + 1, line)
            })?;
            if words.is_empty() {
                continue;
            }
            let name = words[0].to_ascii_lowercase();
            let args = &words[1..];
            let fail = |msg: &str| {
                format!("\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nReading the configuration file, at line {}\n>>> '{}'\n{}", n + 1, line, msg)
            };
            match name.as_str() {
                "include" => {
                    for path in args {
                        let t = std::fs::read_to_string(path).map_err(|e| {
                            fail(&format!(
                                "Fatal error, can't open config file '{path}': {e}"
                            ))
                        })?;
                        self.load_text(&t)?;
                    }
                }
                "rename-command" | "user" | "loadmodule" | "sentinel" => {
                    self.warnings.push(format!(
                        "'{name}' is not supported by Oxidis and was ignored"
                    ));
                }
                "save" => {
                    // Several `save` lines accumulate, as in Redis; `save ""` clears.
                    let joined = args.join(" ");
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
                        let v = args.join(" ");
                        if matches!(prm.kind, Kind::Special)
                            || args.len() == 1
                            || (args.is_empty() && matches!(prm.kind, Kind::Str))
                        {
                            self.set(prm.name, &v).map_err(|e| fail(&e))?;
                        } else {
                            return Err(fail("wrong number of arguments"));
                        }
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
            .filter(|p| p.flags & ACTED == 0)
            .filter_map(|p| {
                let v = self.values.get(p.name)?;
                (v != p.default).then(|| (p.name, v.clone()))
            })
            .collect()
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
/// `redis-server [config-file] [--name value ...]` reads them.
pub fn from_args(args: &[String]) -> Result<Config, String> {
    let mut cfg = Config::default();
    let mut i = 0;
    let mut text = String::new();
    if let Some(first) = args.first() {
        if !first.starts_with("--") {
            if first == "-" {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                    .map_err(|e| e.to_string())?;
                text.push_str(&s);
            } else {
                let t = std::fs::read_to_string(first)
                    .map_err(|e| format!("Fatal error, can't open config file '{first}': {e}"))?;
                cfg.config_file = std::fs::canonicalize(first)
                    .ok()
                    .map(|p| p.display().to_string());
                text.push_str(&t);
            }
            text.push('\n');
            i = 1;
        }
    }
    // Each `--name` starts a new line; the words after it are quoted into it.
    let mut line = String::new();
    let flush = |line: &mut String, text: &mut String| {
        if !line.is_empty() {
            text.push_str(line);
            text.push('\n');
            line.clear();
        }
    };
    while i < args.len() {
        let a = &args[i];
        if let Some(name) = a.strip_prefix("--") {
            flush(&mut line, &mut text);
            line.push_str(name);
            // `--save` followed by another option (or nothing) means `save ""`.
            if name == "save" && args.get(i + 1).map_or(true, |n| n.starts_with("--")) {
                line.push_str(" \"\"");
            }
        } else {
            line.push(' ');
            line.push_str(&quote(a));
        }
        i += 1;
    }
    flush(&mut line, &mut text);
    cfg.load_text(&text)?;
    Ok(cfg)
}

/// Quotes a word the way `sdscatrepr` does, so the config parser reads it back.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
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
    fn memory_units() {
        assert_eq!(parse_memory("1gb"), Some(1 << 30));
        assert_eq!(parse_memory("100k"), Some(100_000));
        assert_eq!(parse_memory("12"), Some(12));
        assert_eq!(parse_memory("x"), None);
    }
}
