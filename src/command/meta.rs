//! Redis 7.0's command metadata (`COMMAND INFO` and `COMMAND DOCS` replies),
//! recorded from a real server by `compat/gen_commands.py` and embedded here.
//!
//! COMMAND, COMMAND INFO and COMMAND DOCS serve these entries for the commands
//! in Oxidis's table, with the subcommand lists narrowed to the subcommands the
//! table has. The table test checks every CommandSpec against them.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::{Args, CommandSpec};
use crate::resp::value::{parse_value, Value};

static INFO_RESP: &[u8] = include_bytes!("meta/info.resp");
static DOCS_RESP: &[u8] = include_bytes!("meta/docs.resp");

/// One command's (or subcommand's) recorded metadata.
pub struct Meta {
    /// The `COMMAND INFO` entry: name, arity, flags, first, last, step,
    /// ACL categories, tips, key specs, subcommands.
    pub info: Value,
    /// The `COMMAND DOCS` map (summary, since, group, ...), without the name.
    pub docs: Option<Value>,
}

impl Meta {
    fn field(&self, i: usize) -> Option<&Value> {
        match &self.info {
            Value::Array(items) => items.get(i),
            _ => None,
        }
    }

    fn int(&self, i: usize) -> i64 {
        match self.field(i) {
            Some(Value::Int(n)) => *n,
            _ => 0,
        }
    }

    fn words(&self, i: usize) -> Vec<String> {
        match self.field(i) {
            Some(Value::Set(v)) | Some(Value::Array(v)) => v
                .iter()
                .filter_map(|w| w.as_bytes())
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect(),
            _ => Vec::new(),
        }
    }

    pub fn arity(&self) -> i64 {
        self.int(1)
    }

    /// Flag names as COMMAND INFO lists them (`write`, `movablekeys`, ...).
    pub fn flags(&self) -> Vec<String> {
        self.words(2)
    }

    /// First key, last key, key step.
    pub fn keys(&self) -> (i64, i64, i64) {
        (self.int(3), self.int(4), self.int(5))
    }

    /// ACL categories, e.g. `@read`.
    pub fn acl_categories(&self) -> Vec<String> {
        self.words(6)
    }

    /// The key specs (maps with flags, begin_search, find_keys).
    pub fn key_specs(&self) -> &[Value] {
        match self.field(8) {
            Some(Value::Set(v)) | Some(Value::Array(v)) => v,
            _ => &[],
        }
    }
}

/// Every recorded command and subcommand by lowercase full name (`config|get`).
pub fn all() -> &'static HashMap<String, Meta> {
    static M: OnceLock<HashMap<String, Meta>> = OnceLock::new();
    M.get_or_init(build)
}

/// The metadata of one command or subcommand.
pub fn get(name: &str) -> Option<&'static Meta> {
    all().get(name)
}

fn build() -> HashMap<String, Meta> {
    let mut docs = HashMap::new();
    if let Ok(Some((Value::Map(pairs), _))) = parse_value(DOCS_RESP) {
        for (k, v) in pairs {
            collect_docs(&mut docs, k, v);
        }
    }
    let mut out = HashMap::new();
    if let Ok(Some((Value::Array(entries), _))) = parse_value(INFO_RESP) {
        for e in entries {
            collect_info(&mut out, &mut docs, e);
        }
    }
    out
}

fn collect_docs(docs: &mut HashMap<String, Value>, name: Value, doc: Value) {
    let Some(n) = name.as_bytes() else { return };
    let n = String::from_utf8_lossy(n).into_owned();
    if let Value::Map(fields) = &doc {
        for (k, v) in fields {
            if k.as_bytes() == Some(b"subcommands") {
                if let Value::Map(subs) = v {
                    for (sk, sv) in subs {
                        collect_docs(docs, sk.clone(), sv.clone());
                    }
                }
            }
        }
    }
    docs.insert(n, doc);
}

fn collect_info(out: &mut HashMap<String, Meta>, docs: &mut HashMap<String, Value>, e: Value) {
    let Value::Array(items) = &e else { return };
    let Some(name) = items.first().and_then(|v| v.as_bytes()) else {
        return;
    };
    let name = String::from_utf8_lossy(name).into_owned();
    if let Some(Value::Array(subs)) = items.get(9) {
        for s in subs {
            collect_info(out, docs, s.clone());
        }
    }
    let doc = docs.remove(&name);
    out.insert(name, Meta { info: e, docs: doc });
}

/// The `COMMAND INFO` entry Oxidis serves for `spec`: the recorded one with its
/// subcommands narrowed to those in the table, or one built from the spec when
/// Redis has no such command.
pub fn info_for(spec: &CommandSpec) -> Value {
    let Some(m) = get(spec.name) else {
        return built_info(spec);
    };
    let mut v = m.info.clone();
    if let Value::Array(items) = &mut v {
        if let Some(Value::Array(subs)) = items.get_mut(9) {
            subs.retain(|s| match s {
                Value::Array(f) => f
                    .first()
                    .and_then(|n| n.as_bytes())
                    .is_some_and(|n| spec.subcommands.iter().any(|c| c.name.as_bytes() == n)),
                _ => false,
            });
            for (i, sub) in spec.subcommands.iter().enumerate() {
                if get(sub.name).is_none() {
                    subs.insert(i.min(subs.len()), built_info(sub));
                }
            }
        }
    }
    v
}

/// The `COMMAND DOCS` map Oxidis serves for `spec` (subcommands narrowed as in [`info_for`]).
pub fn docs_for(spec: &CommandSpec) -> Value {
    let Some(Value::Map(fields)) = get(spec.name).and_then(|m| m.docs.clone()) else {
        return redis72_docs(spec.name).unwrap_or_else(|| {
            Value::Map(vec![
                (bulk("summary"), bulk("")),
                (bulk("since"), bulk("")),
                (bulk("group"), bulk("server")),
                (bulk("complexity"), bulk("")),
            ])
        });
    };
    let fields = fields
        .into_iter()
        .filter_map(|(k, v)| {
            if k.as_bytes() != Some(b"subcommands") {
                return Some((k, v));
            }
            let subs: Vec<(Value, Value)> = spec
                .subcommands
                .iter()
                .map(|s| (bulk(s.name), docs_for(s)))
                .collect();
            (!subs.is_empty()).then_some((k, Value::Map(subs)))
        })
        .collect();
    Value::Map(fields)
}

/// COMMAND DOCS of the Redis 7.2 subcommands Oxidis serves (7.0 has none to
/// record), as 7.2 documents them, so redis-cli can hint their arguments.
fn redis72_docs(name: &str) -> Option<Value> {
    let token_arg = |n: &str, ty: &str, token: &str| {
        Value::Map(vec![
            (bulk("name"), bulk(n)),
            (bulk("type"), bulk(ty)),
            (bulk("token"), bulk(token)),
        ])
    };
    let oneof = |n: &str, args: Vec<Value>| {
        Value::Map(vec![
            (bulk("name"), bulk(n)),
            (bulk("type"), bulk("oneof")),
            (bulk("arguments"), Value::Array(args)),
        ])
    };
    let (summary, args) = match name {
        "client|setinfo" => (
            "Sets information specific to the client or connection.",
            oneof(
                "attr",
                vec![
                    token_arg("libname", "string", "LIB-NAME"),
                    token_arg("libver", "string", "LIB-VER"),
                ],
            ),
        ),
        "client|no-touch" => (
            "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
            oneof(
                "enabled",
                vec![
                    token_arg("on", "pure-token", "ON"),
                    token_arg("off", "pure-token", "OFF"),
                ],
            ),
        ),
        _ => return None,
    };
    Some(Value::Map(vec![
        (bulk("summary"), bulk(summary)),
        (bulk("since"), bulk("7.2.0")),
        (bulk("group"), bulk("connection")),
        (bulk("complexity"), bulk("O(1)")),
        (bulk("arguments"), Value::Array(vec![args])),
    ]))
}

fn bulk(s: &str) -> Value {
    Value::Bulk(s.as_bytes().to_vec())
}

/// A COMMAND INFO entry made from a spec alone (for commands Redis 7.0 lacks).
fn built_info(spec: &CommandSpec) -> Value {
    let mut flags: Vec<Value> = crate::command::flags::NAMES
        .iter()
        .filter(|(f, _)| spec.has(*f))
        .map(|(_, n)| Value::Simple(n.as_bytes().to_vec()))
        .collect();
    if spec.keys_fn.is_some() {
        flags.push(Value::Simple(b"movablekeys".to_vec()));
    }
    Value::Array(vec![
        bulk(spec.name),
        Value::Int(spec.arity as i64),
        Value::Set(flags),
        Value::Int(spec.first_key as i64),
        Value::Int(spec.last_key as i64),
        Value::Int(spec.step as i64),
        // Both 7.2 subcommands Oxidis builds entries for are `@slow
        // @connection`; the test controls are in no category.
        Value::Set(if spec.has(crate::command::flags::TEST_CONTROL) {
            Vec::new()
        } else {
            ["@slow", "@connection"]
                .iter()
                .map(|c| Value::Simple(c.as_bytes().to_vec()))
                .collect()
        }),
        Value::Set(vec![]),
        Value::Set(vec![]),
        Value::Array(spec.subcommands.iter().map(built_info).collect()),
    ])
}

/// Flags of the key spec covering argument `pos` of `args` (COMMAND GETKEYSANDFLAGS),
/// found by evaluating the recorded key specs as Redis does.
pub fn key_flags(spec: &CommandSpec, args: &Args, pos: usize) -> Vec<Value> {
    let Some(m) = get(spec.name) else {
        return Vec::new();
    };
    // Flags Redis takes from the command's getkeys procedure, where they
    // depend on the arguments or the spec cannot find the key: SET reads the
    // old value with GET and only overwrites without it (`setGetKeys`); SORT's
    // STORE key has an `unknown` spec (`sortGetKeys`); BITFIELD only reads
    // when every subcommand is a well-formed GET or OVERFLOW.
    let words: &[&str] = match spec.name {
        "set" if args.from(3).any(|a| a.eq_ignore_ascii_case(b"GET")) => {
            &["RW", "access", "update"]
        }
        "set" => &["OW", "update"],
        "sort" if pos != 1 => &["OW", "update"],
        "bitfield" if bitfield_reads_only(args) => &["RO", "access"],
        "bitfield" => &["RW", "access", "update"],
        _ => &[],
    };
    if !words.is_empty() {
        return words
            .iter()
            .map(|w| Value::Simple(w.as_bytes().to_vec()))
            .collect();
    }
    for ks in m.key_specs() {
        if spec_positions(ks, args).contains(&pos) {
            return map_get(ks, "flags")
                .map(|f| match f {
                    Value::Set(v) | Value::Array(v) => v.clone(),
                    _ => Vec::new(),
                })
                .unwrap_or_default();
        }
    }
    Vec::new()
}

/// True when a BITFIELD call only reads: its subcommands are GET or
/// OVERFLOW with all their arguments (a malformed one counts as a write).
fn bitfield_reads_only(args: &Args) -> bool {
    let mut i = 2;
    while i < args.len() {
        let left = args.len() - i - 1;
        let word = args.at(i);
        if word.eq_ignore_ascii_case(b"GET") && left >= 2 {
            i += 3;
        } else if word.eq_ignore_ascii_case(b"OVERFLOW") && left >= 1 {
            i += 2;
        } else {
            return false;
        }
    }
    true
}

fn map_get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Map(pairs) => pairs
            .iter()
            .find(|(k, _)| k.as_bytes() == Some(key.as_bytes()))
            .map(|(_, v)| v),
        _ => None,
    }
}

fn map_int(v: &Value, path: &[&str]) -> i64 {
    let mut cur = v;
    for p in path {
        match map_get(cur, p) {
            Some(n) => cur = n,
            None => return 0,
        }
    }
    match cur {
        Value::Int(n) => *n,
        _ => 0,
    }
}

/// The argument positions one key spec selects (Redis's `getKeysUsingKeySpecs`).
fn spec_positions(ks: &Value, args: &Args) -> Vec<usize> {
    let argc = args.len() as i64;
    let Some(bs) = map_get(ks, "begin_search") else {
        return Vec::new();
    };
    let first = match map_get(bs, "type").and_then(|t| t.as_bytes()) {
        Some(b"index") => map_int(bs, &["spec", "index"]),
        Some(b"keyword") => {
            let Some(word) = map_get(bs, "spec").and_then(|s| map_get(s, "keyword")) else {
                return Vec::new();
            };
            let word = word.as_bytes().unwrap_or_default();
            let start = map_int(bs, &["spec", "startfrom"]);
            let (from, to, step) = if start >= 0 {
                (start, argc - 1, 1)
            } else {
                (argc + start, 0, -1)
            };
            let mut i = from;
            let mut found = None;
            while (step > 0 && i <= to) || (step < 0 && i >= to) {
                if i > 0 && i < argc && args.at(i as usize).eq_ignore_ascii_case(word) {
                    found = Some(i + 1);
                    break;
                }
                i += step;
            }
            match found {
                Some(f) => f,
                None => return Vec::new(),
            }
        }
        _ => return Vec::new(),
    };
    let Some(fk) = map_get(ks, "find_keys") else {
        return Vec::new();
    };
    let (last, step) = match map_get(fk, "type").and_then(|t| t.as_bytes()) {
        Some(b"range") => {
            let lastkey = map_int(fk, &["spec", "lastkey"]);
            let keystep = map_int(fk, &["spec", "keystep"]).max(1);
            let limit = map_int(fk, &["spec", "limit"]);
            let last = if lastkey >= 0 {
                first + lastkey
            } else if lastkey == -1 || limit <= 1 {
                argc + lastkey
            } else {
                first + ((argc - first) / limit + lastkey)
            };
            (last, keystep)
        }
        Some(b"keynum") => {
            let idx = first + map_int(fk, &["spec", "keynumidx"]);
            if idx >= argc {
                return Vec::new();
            }
            let n = crate::types::number::parse_i64(args.at(idx as usize)).unwrap_or(0);
            let keystep = map_int(fk, &["spec", "keystep"]).max(1);
            let start = first + map_int(fk, &["spec", "firstkey"]);
            return (0..n.max(0))
                .map(|k| start + k * keystep)
                .filter(|&p| p < argc)
                .map(|p| p as usize)
                .collect();
        }
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    let mut i = first;
    while i <= last && i < argc {
        out.push(i as usize);
        i += step;
    }
    out
}

#[cfg(test)]
mod tests {
    //! The table test: every CommandSpec against Redis 7.0's recorded metadata.

    use super::*;
    use crate::command::flags;
    use crate::command::table::table;

    /// Commands Redis 7.0 lacks (7.2 additions Oxidis serves, and Oxidis's
    /// own test controls); they are covered by integration tests instead of
    /// recorded cases.
    const NOT_IN_REDIS_70: &[&str] = &["client|setinfo", "client|no-touch", "oxidis"];

    fn our_flags(spec: &CommandSpec) -> Vec<String> {
        let mut v: Vec<String> = flags::NAMES
            .iter()
            .filter(|(f, _)| spec.has(*f))
            .map(|(_, n)| n.to_string())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn every_spec_matches_redis_metadata() {
        let mut problems = Vec::new();
        for spec in &table().all {
            let name = spec.name;
            if spec.arity == 0 {
                problems.push(format!("{name}: zero arity"));
            }
            if spec.has(flags::WRITE) && spec.has(flags::READONLY) {
                problems.push(format!("{name}: both write and readonly"));
            }
            if spec.arity > 0 && (spec.first_key >= spec.arity || spec.last_key >= spec.arity) {
                problems.push(format!("{name}: key positions outside the arity"));
            }
            if spec.first_key < 0 || (spec.first_key == 0 && (spec.last_key != 0 || spec.step != 0))
            {
                problems.push(format!("{name}: inconsistent key positions"));
            }
            let Some(m) = get(name) else {
                if !NOT_IN_REDIS_70.contains(&name) {
                    problems.push(format!("{name}: not a Redis 7.0 command"));
                }
                continue;
            };
            if m.arity() != spec.arity as i64 {
                problems.push(format!(
                    "{name}: arity {} != Redis {}",
                    spec.arity,
                    m.arity()
                ));
            }
            let mut theirs = m.flags();
            let movable = theirs.iter().any(|f| f == "movablekeys");
            theirs.retain(|f| f != "movablekeys");
            theirs.sort();
            if our_flags(spec) != theirs {
                problems.push(format!(
                    "{name}: flags {:?} != Redis {:?}",
                    our_flags(spec),
                    theirs
                ));
            }
            if movable != spec.keys_fn.is_some() {
                problems.push(format!("{name}: movablekeys {} != keys_fn", movable));
            }
            let keys = (
                spec.first_key as i64,
                spec.last_key as i64,
                spec.step as i64,
            );
            if m.keys() != keys {
                problems.push(format!("{name}: keys {keys:?} != Redis {:?}", m.keys()));
            }
        }
        assert!(
            problems.is_empty(),
            "table problems:\n{}",
            problems.join("\n")
        );
    }

    /// The words a case line sends (after `[n]` and `~modifiers`), lowercased.
    fn case_words(line: &str) -> Vec<String> {
        let mut s = line.trim();
        if s.starts_with('[') {
            s = s.split_once(']').map_or("", |(_, r)| r.trim());
        }
        while s.starts_with('~') {
            s = s.split_once(' ').map_or("", |(_, r)| r.trim());
        }
        s.split_whitespace()
            .take(2)
            .map(|w| w.trim_matches('"').to_ascii_lowercase())
            .collect()
    }

    fn case_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                case_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "case") {
                out.push(p);
            }
        }
    }

    #[test]
    fn every_command_has_a_compat_case() {
        let mut files = Vec::new();
        case_files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("compat/cases"),
            &mut files,
        );
        let mut seen = std::collections::HashSet::new();
        for f in files {
            for line in std::fs::read_to_string(f).unwrap_or_default().lines() {
                let t = line.trim();
                if t.is_empty() || t.starts_with('#') || t.starts_with('!') {
                    continue;
                }
                let w = case_words(t);
                if let Some(first) = w.first() {
                    seen.insert(first.clone());
                    if let Some(second) = w.get(1) {
                        seen.insert(format!("{first}|{second}"));
                    }
                }
            }
        }
        let missing: Vec<&str> = table()
            .all
            .iter()
            .map(|s| s.name)
            .filter(|n| !seen.contains(*n) && !NOT_IN_REDIS_70.contains(n))
            .collect();
        assert!(
            missing.is_empty(),
            "commands without a compat case: {missing:?}"
        );
    }

    #[test]
    fn key_specs_find_keys_like_redis() {
        let argv = crate::command::Argv::from_slices([&b"mset"[..], b"a", b"1", b"b", b"2"]);
        let args = argv.args();
        let m = get("mset").unwrap();
        assert_eq!(spec_positions(&m.key_specs()[0], &args), vec![1, 3]);
        let argv =
            crate::command::Argv::from_slices([&b"eval"[..], b"s", b"2", b"k1", b"k2", b"x"]);
        let m = get("eval").unwrap();
        assert_eq!(spec_positions(&m.key_specs()[0], &argv.args()), vec![3, 4]);
    }
}
