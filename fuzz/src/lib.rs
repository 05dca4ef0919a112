//! Shared pieces of the fuzz targets: a harness with a random keyspace and a byte-driven command grammar.

use oxidis::fuzzing::Harness;
use oxidis::Config;

/// The keys commands are drawn over: one per type, and one that is missing.
pub const KEYS: [&[u8]; 8] = [b"s", b"n", b"l", b"h", b"S", b"z", b"p", b"x"];

/// Numbers at and past the edges Redis checks.
pub const NUMS: &[&[u8]] = &[
    b"0",
    b"1",
    b"-1",
    b"2",
    b"3",
    b"10",
    b"-2",
    b"100",
    b"-100",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"18446744073709551615",
    b"4294967295",
    b"4294967296",
    b"2147483647",
    b"-2147483648",
    b"2147483648",
    b"536870911",
    b"536870912",
    b"4611686018427387903",
    b"-4611686018427387904",
    b"1e3",
    b"1.5",
    b"-0",
    b"-0.0",
    b"0.1",
    b"1e308",
    b"1e309",
    b"-1e309",
    b"inf",
    b"-inf",
    b"+inf",
    b"nan",
    b"NaN",
    b"0x10",
    b" 1",
    b"1 ",
    b"01",
    b"+1",
    b"3.0e",
    b"1e-320",
    b".5",
    b"5.",
    b"(1",
    b"[a",
    b"(",
    b"[",
    b"-",
    b"+",
    b"(inf",
    b"(-inf",
    b"1.7976931348623157e308",
    b"17179869184",
    b"-17179869184",
    b"99999999999999999999999",
    b"0.0000001",
];

/// Option keywords and odd words commands parse.
pub const WORDS: &[&[u8]] = &[
    b"NX",
    b"XX",
    b"GT",
    b"LT",
    b"CH",
    b"INCR",
    b"EX",
    b"PX",
    b"EXAT",
    b"PXAT",
    b"KEEPTTL",
    b"GET",
    b"PERSIST",
    b"WITHSCORES",
    b"WITHSCORE",
    b"LIMIT",
    b"COUNT",
    b"MATCH",
    b"TYPE",
    b"BY",
    b"ALPHA",
    b"ASC",
    b"DESC",
    b"STORE",
    b"#",
    b"LEFT",
    b"RIGHT",
    b"BEFORE",
    b"AFTER",
    b"RANK",
    b"MAXLEN",
    b"IDLETIME",
    b"REPLACE",
    b"ABSTTL",
    b"FREQ",
    b"WEIGHTS",
    b"AGGREGATE",
    b"SUM",
    b"MIN",
    b"MAX",
    b"BYSCORE",
    b"BYLEX",
    b"REV",
    b"WITHVALUES",
    b"LEN",
    b"IDX",
    b"MINMATCHLEN",
    b"WITHMATCHLEN",
    b"OVERFLOW",
    b"WRAP",
    b"SAT",
    b"FAIL",
    b"i8",
    b"u8",
    b"i64",
    b"u63",
    b"u64",
    b"u1",
    b"i65",
    b"#1",
    b"#-1",
    b"BIT",
    b"BYTE",
    b"AND",
    b"OR",
    b"XOR",
    b"NOT",
    b"ASYNC",
    b"SYNC",
    b"ID",
    b"KILL",
    b"LIST",
    b"INFO",
    b"ON",
    b"OFF",
    b"SKIP",
    b"YES",
    b"NO",
    b"OPTIN",
    b"OPTOUT",
    b"BCAST",
    b"PREFIX",
    b"NOLOOP",
    b"REDIRECT",
    b"USAGE",
    b"SAMPLES",
    b"ENCODING",
    b"HELP",
    b"DB",
    b"COPY",
    b"AUTH",
    b"KEYS",
    b"FIELDS",
    b"*",
    b"?",
    b"[",
    b"\\",
    b"*[a-",
    b"h[^",
    b"",
    b"a",
    b"b",
    b"c",
    b"foo",
    b"bar",
    b"s",
    b"n",
    b"l",
    b"h",
    b"S",
    b"z",
    b"p",
    b"x",
    b"__keyspace@0__:*",
    b"maxmemory",
    b"hz",
    b"notify-keyspace-events",
    b"KEA",
    b"lazyfree-lazy-user-del",
    b"save",
    b"maxmemory-policy",
    b"allkeys-lru",
    b"hash-max-listpack-entries",
    b"default",
    b"requirepass",
    b"CHANNELS",
    b"NUMSUB",
    b"NUMPAT",
    b"SETNAME",
    b"GETNAME",
    b"REPLY",
    b"TRACKING",
    b"HELLO",
    b"3",
    b"2",
    b"SETNAME",
    b"LADDR",
    b"ADDR",
    b"USER",
    b"SKIPME",
    b"MAXAGE",
    b"WRITE",
    b"ALL",
    b"FLUSH",
    b"EXISTS",
    b"RESET",
    b"LATEST",
    b"HISTORY",
    b"DOCTOR",
    b"GETKEYS",
    b"GETKEYSANDFLAGS",
    b"FILTERBY",
    b"MODULE",
    b"ACLCAT",
    b"PATTERN",
    b"string",
    b"list",
    b"set",
    b"zset",
    b"hash",
    b"HYLL",
    b"\x00",
    b"\xff\xfe",
    b"a\r\nb",
    b"-ERR x",
];

/// Commands whose effect reaches outside one in-process server, that run
/// Lua (fuzzed by the `lua_convert` and `function_payload` targets), or that
/// take no input and cost seconds: PFSELFTEST adds 10M elements per call
/// (96% of this target's time when it was in; its unit test runs it).
const SKIP: &[&str] = &[
    "debug",
    "pfselftest",
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
    "function|load",
    "function|restore",
];

/// CONFIG SET parameters that act on the process (files, sockets, cwd).
const SKIP_PARAMS: &[&str] = &[
    "dir",
    "logfile",
    "port",
    "bind",
    "tls-port",
    "unixsocket",
    "unixsocketperm",
    "pidfile",
    "syslog-enabled",
    "syslog-ident",
    "dbfilename",
    "appenddirname",
    "cluster-config-file",
    "aclfile",
    // Kept at `FUZZ_BULK_LEN` by the harness (see there).
    "proto-max-bulk-len",
];

/// Every command and subcommand name as argv words, the skipped ones left out.
pub fn commands() -> Vec<Vec<&'static [u8]>> {
    oxidis::command::table::table()
        .all
        .iter()
        .filter(|s| !SKIP.contains(&s.name))
        .map(|s| s.name.split('|').map(str::as_bytes).collect())
        .collect()
}

/// Commands whose negative count asks for that many members with repeats:
/// Redis 7.0.15 answers `ZRANDMEMBER z -2147483648` with 2^31 elements too
/// (its RSS passed 17 GB in 6 s), so such a count is no bug, only a
/// timeout. Counts down to `-MAX_REPEATS` still run.
const RANDOM_COUNT: &[&str] = &["srandmember", "zrandmember", "hrandfield"];
const MAX_REPEATS: i64 = 100_000;

/// True when the request must not run in-process (see `SKIP_PARAMS`) or
/// would legitimately build a reply of gigabytes (see `RANDOM_COUNT`).
pub fn refused(argv: &[Vec<u8>]) -> bool {
    let is = |i: usize, w: &str| {
        argv.get(i)
            .is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()))
    };
    let huge_negative = |i: usize| {
        argv.get(i)
            .and_then(|a| std::str::from_utf8(a).ok())
            .and_then(|a| a.parse::<i64>().ok())
            .is_some_and(|n| n < -MAX_REPEATS)
    };
    if RANDOM_COUNT.iter().any(|c| is(0, c)) && huge_negative(2) {
        return true;
    }
    is(0, "config")
        && is(1, "set")
        && argv[2..].iter().any(|a| {
            SKIP_PARAMS
                .iter()
                .any(|p| a.eq_ignore_ascii_case(p.as_bytes()))
        })
}

/// Reads fuzz bytes in order, as zeros once they run out.
pub struct Input<'a>(pub &'a [u8]);

impl<'a> Input<'a> {
    pub fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// One argument: a key, a number, an option word, or raw bytes.
    pub fn arg(&mut self) -> Vec<u8> {
        let t = self.byte();
        let i = self.byte() as usize;
        match t {
            0..=0x4f => KEYS[i % KEYS.len()].to_vec(),
            0x50..=0x8f => NUMS[i % NUMS.len()].to_vec(),
            0x90..=0xcf => WORDS[i % WORDS.len()].to_vec(),
            _ => self.bytes(i % 24).to_vec(),
        }
    }
}

/// A harness whose keyspace holds the keys `mask` selects (each bit one type,
/// bit 7: small encoding limits so a few elements convert encodings).
pub fn harness(mask: u8) -> Harness {
    thread_local! {
        // Config::default() costs more than a whole run: build each once.
        static CONFIGS: [Config; 2] = [bounded(Config::default()), bounded(small_limits())];
    }
    let cfg = CONFIGS.with(|c| c[usize::from(mask >> 7)].clone());
    let mut h = Harness::new(cfg);
    seed(&mut h, mask);
    h
}

/// The largest string an input may build (SETBIT, SETRANGE, APPEND check
/// `proto-max-bulk-len`, as in Redis 7.0). At the default 512 MB, `SETBIT k
/// 4294967295 1` then `SAVE` is 10 s of writing a legitimate 512 MB value
/// (Redis does the same): a timeout that says nothing.
const FUZZ_BULK_LEN: &[u8] = b"8mb";

fn bounded(mut cfg: Config) -> Config {
    cfg.set("proto-max-bulk-len", FUZZ_BULK_LEN).expect("a valid setting");
    cfg
}

fn small_limits() -> Config {
    let mut cfg = Config::default();
    for (k, v) in [
        ("list-max-listpack-size", "4"),
        ("hash-max-listpack-entries", "4"),
        ("hash-max-listpack-value", "8"),
        ("set-max-intset-entries", "4"),
        ("zset-max-listpack-entries", "4"),
        ("zset-max-listpack-value", "8"),
    ] {
        cfg.set(k, v.as_bytes()).expect("a valid setting");
    }
    cfg
}

/// Adds the keys `mask` selects (see [`harness`]).
pub fn seed(h: &mut Harness, mask: u8) {
    let seeds: [&[&[u8]]; 7] = [
        &[b"SET", b"s", b"hello world"],
        &[b"SET", b"n", b"-42"],
        &[b"RPUSH", b"l", b"a", b"1", b"b", b"-2", b"c", b"a"],
        &[b"HSET", b"h", b"f", b"1", b"g", b"v", b"n", b"2.5"],
        &[b"SADD", b"S", b"1", b"2", b"3", b"a", b"-5"],
        &[
            b"ZADD", b"z", b"1", b"a", b"2", b"b", b"2", b"c", b"-inf", b"d", b"3.5", b"e",
        ],
        &[b"PFADD", b"p", b"a", b"b", b"c"],
    ];
    for (bit, seed) in seeds.iter().enumerate() {
        if mask & (1 << bit) != 0 {
            h.run(seed);
        }
    }
}

/// True when `OXIDIS_FUZZ_TRACE` is set: `run` prints each argv and its time.
fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("OXIDIS_FUZZ_TRACE").is_some())
}

/// Runs one request, skipping those `refused` keeps out; false once the
/// client can take no more requests (blocked, closing, paused).
pub fn run(h: &mut Harness, argv: &[Vec<u8>]) -> bool {
    let trace = tracing();
    if trace {
        let shown: Vec<String> = argv
            .iter()
            .map(|a| format!("{:?}", String::from_utf8_lossy(a)))
            .collect();
        eprintln!("argv: {}", shown.join(" "));
    }
    if refused(argv) {
        return true;
    }
    let words: Vec<&[u8]> = argv.iter().map(|a| &a[..]).collect();
    let t = std::time::Instant::now();
    let r = h.run(&words).is_some();
    if trace {
        eprintln!("  took {:?}", t.elapsed());
    }
    r
}
