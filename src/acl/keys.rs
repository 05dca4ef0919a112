//! Which arguments of a command are keys, and with what access, for the ACL
//! check: Redis's key specs (`getKeysFromCommandWithSpecs`), read from the
//! recorded `COMMAND INFO`, and the channel arguments of the pub/sub commands.

use std::sync::OnceLock;

use smallvec::SmallVec;

use crate::command::table::table;
use crate::command::{Args, CommandSpec};
use crate::resp::value::Value;

/// Access a key spec asks for, as ACL key patterns grant it.
pub const NEEDS_READ: u8 = 1;
pub const NEEDS_WRITE: u8 = 2;

#[derive(Clone, Debug)]
enum Begin {
    Index(i64),
    Keyword { word: Vec<u8>, startfrom: i64 },
}

#[derive(Clone, Debug)]
enum Find {
    Range { lastkey: i64, step: i64, limit: i64 },
    KeyNum { idx: i64, first: i64, step: i64 },
}

#[derive(Clone, Debug)]
struct Spec {
    begin: Begin,
    find: Find,
    access: u8,
    incomplete: bool,
}

/// Key positions and the access each needs; inline up to four (the
/// check runs for every command of a restricted user: no allocation).
pub type KeyList = SmallVec<[(usize, u8); 4]>;

/// The commands whose key access depends on their arguments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Variable {
    #[default]
    No,
    Set,
    Bitfield,
}

/// A lone key spec `index` + `range` with no limit: keys from `first` to
/// `lastkey` (from the end when negative) every `step`.
#[derive(Clone, Copy, Debug)]
pub struct Simple {
    first: i64,
    lastkey: i64,
    step: i64,
    pub access: u8,
}

impl Simple {
    /// The key positions for `argc` arguments, as [`by_specs`] finds them;
    /// None when they do not fit (the caller takes the general path).
    #[inline]
    pub fn positions(
        &self,
        argc: usize,
    ) -> Option<std::iter::StepBy<std::ops::RangeInclusive<usize>>> {
        let argc = argc as i64;
        let last = if self.lastkey >= 0 {
            self.first + self.lastkey
        } else {
            argc + self.lastkey
        };
        if last >= argc || last < self.first || self.first >= argc {
            return None;
        }
        Some((self.first as usize..=last as usize).step_by(self.step.max(1) as usize))
    }
}

/// How command `id` names its keys and channels.
#[inline]
pub fn plan(id: usize) -> Option<&'static Plan> {
    plans().get(id)
}

impl Plan {
    /// The plain key spec, if the command has exactly that.
    #[inline]
    pub fn simple(&self) -> Option<&Simple> {
        self.simple.as_ref()
    }

    /// How the command names channels.
    #[inline]
    pub fn channels(&self) -> Option<Channels> {
        self.channels
    }
}

/// How to find one command's keys.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// SET and BITFIELD (see [`variable_access`]).
    variable: Variable,
    /// The one key spec, when it is a plain index and range (GET, MGET,
    /// DEL, HSET...): positions computed without building a list.
    simple: Option<Simple>,
    /// How a pub/sub command names channels.
    channels: Option<Channels>,
    /// Key specs usable as they are (none unknown, no variable flags).
    specs: Option<Vec<Spec>>,
    /// Redis's key specs name no key (none, or only `not_key` ones, as the
    /// shard channel of SPUBLISH): the ACL checks no key.
    keyless: bool,
    /// Access of the key specs, used for positions the fallback finds:
    /// (begin index, access) of index specs, and that of the last other
    /// spec (SORT's STORE, MIGRATE's KEYS: what Redis's key finders give).
    by_index: Vec<(i64, u8)>,
    other_access: u8,
}

fn plans() -> &'static [Plan] {
    static P: OnceLock<Vec<Plan>> = OnceLock::new();
    P.get_or_init(|| table().all.iter().map(|s| build_plan(s)).collect())
}

fn field<'a>(m: &'a Value, name: &str) -> Option<&'a Value> {
    match m {
        Value::Map(pairs) => pairs
            .iter()
            .find(|(k, _)| k.as_bytes() == Some(name.as_bytes()))
            .map(|(_, v)| v),
        _ => None,
    }
}

fn int(m: &Value, name: &str) -> i64 {
    match field(m, name) {
        Some(Value::Int(n)) => *n,
        _ => 0,
    }
}

fn words(v: Option<&Value>) -> Vec<Vec<u8>> {
    match v {
        Some(Value::Array(a)) | Some(Value::Set(a)) => a
            .iter()
            .filter_map(|w| w.as_bytes().map(|b| b.to_ascii_lowercase()))
            .collect(),
        _ => Vec::new(),
    }
}

fn build_plan(spec: &CommandSpec) -> Plan {
    let variable = match spec.name {
        "set" => Variable::Set,
        "bitfield" => Variable::Bitfield,
        _ => Variable::No,
    };
    let Some(meta) = crate::command::meta::get(spec.name) else {
        return Plan {
            variable,
            simple: None,
            channels: channels_of(spec),
            specs: None,
            keyless: false,
            by_index: Vec::new(),
            other_access: NEEDS_READ | NEEDS_WRITE,
        };
    };
    let mut p = Plan {
        variable,
        channels: channels_of(spec),
        ..Plan::default()
    };
    let mut specs = Vec::new();
    let mut usable = true;
    let mut any_key = false;
    for ks in meta.key_specs() {
        let flags = words(field(ks, "flags"));
        let has = |w: &str| flags.iter().any(|f| f == w.as_bytes());
        let mut access = 0;
        if has("access") {
            access |= NEEDS_READ;
        }
        if has("insert") || has("delete") || has("update") {
            access |= NEEDS_WRITE;
        }
        if has("not_key") {
            continue;
        }
        any_key = true;
        if has("variable_flags") {
            usable = false;
        }
        let bs = field(ks, "begin_search");
        let bs_spec = bs.and_then(|b| field(b, "spec"));
        let begin = match bs.and_then(|b| field(b, "type")).and_then(|t| t.as_bytes()) {
            Some(b"index") => bs_spec.map(|s| Begin::Index(int(s, "index"))),
            Some(b"keyword") => bs_spec.map(|s| Begin::Keyword {
                word: field(s, "keyword")
                    .and_then(|k| k.as_bytes())
                    .unwrap_or_default()
                    .to_vec(),
                startfrom: int(s, "startfrom"),
            }),
            _ => None,
        };
        match &begin {
            Some(Begin::Index(i)) => p.by_index.push((*i, access)),
            _ => p.other_access = access,
        }
        let fk = field(ks, "find_keys");
        let fk_spec = fk.and_then(|f| field(f, "spec"));
        let find = match fk.and_then(|f| field(f, "type")).and_then(|t| t.as_bytes()) {
            Some(b"range") => fk_spec.map(|s| Find::Range {
                lastkey: int(s, "lastkey"),
                step: int(s, "keystep"),
                limit: int(s, "limit"),
            }),
            Some(b"keynum") => fk_spec.map(|s| Find::KeyNum {
                idx: int(s, "keynumidx"),
                first: int(s, "firstkey"),
                step: int(s, "keystep"),
            }),
            _ => None,
        };
        match (begin, find) {
            (Some(begin), Some(find)) => specs.push(Spec {
                begin,
                find,
                access,
                incomplete: has("incomplete"),
            }),
            _ => usable = false,
        }
    }
    if any_key && usable {
        if let [Spec {
            begin: Begin::Index(first),
            find:
                Find::Range {
                    lastkey,
                    step,
                    limit: 0,
                },
            access,
            incomplete: false,
        }] = specs[..]
        {
            if variable == Variable::No && first > 0 {
                p.simple = Some(Simple {
                    first,
                    lastkey,
                    step,
                    access,
                });
            }
        }
        p.specs = Some(specs);
    }
    p.keyless = !any_key;
    p
}

/// Redis's `getKeysUsingKeySpecs`; None when a spec cannot be applied
/// (the caller falls back to the command's own key finder).
fn by_specs(specs: &[Spec], args: &Args, out: &mut KeyList) -> Option<()> {
    let argc = args.len() as i64;
    for s in specs {
        let mut first = match &s.begin {
            Begin::Index(i) => *i,
            Begin::Keyword { word, startfrom } => {
                let start = if *startfrom > 0 {
                    *startfrom
                } else {
                    argc + startfrom
                };
                let end = if *startfrom > 0 { argc - 1 } else { 1 };
                let mut found = 0;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if args.at(i as usize).eq_ignore_ascii_case(word) {
                        found = i + 1;
                        break;
                    }
                    i = if start <= end { i + 1 } else { i - 1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
        };
        let (last, step) = match &s.find {
            Find::Range {
                lastkey,
                step,
                limit,
            } => {
                let last = if *lastkey >= 0 {
                    first + lastkey
                } else if *limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (last, *step)
            }
            Find::KeyNum {
                idx,
                first: f,
                step,
            } => {
                if *idx >= argc || first + idx >= argc {
                    return None;
                }
                let n = crate::types::number::parse_i64(args.at((first + idx) as usize))
                    .filter(|n| *n >= 0)?;
                first += f;
                (first + n - 1, *step)
            }
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let mut i = first;
        while i <= last {
            if i < argc {
                out.push((i as usize, s.access));
            }
            i += step.max(1);
        }
        if s.incomplete {
            return None;
        }
    }
    Some(())
}

/// The key arguments of a command with the access each needs, in the
/// order Redis checks them.
pub fn keys(id: usize, spec: &CommandSpec, args: &Args) -> KeyList {
    let mut out = KeyList::new();
    let Some(p) = plans().get(id) else {
        return out;
    };
    if p.variable != Variable::No {
        out.push((1, variable_access(p.variable, args)));
        return out;
    }
    if p.keyless {
        return out;
    }
    if let Some(specs) = &p.specs {
        if by_specs(specs, args, &mut out).is_some() {
            return out;
        }
        out.clear();
    }
    // The command's own key finder; access by the key spec starting at the
    // position, else every access the other specs ask for.
    for pos in spec.key_positions(args) {
        let access = p
            .by_index
            .iter()
            .find(|(i, _)| *i == pos as i64)
            .map_or(p.other_access, |(_, a)| *a);
        out.push((pos, access));
    }
    out
}

/// The two commands whose key specs have `variable_flags`: their key's
/// access depends on the arguments (Redis's `setGetKeys`, `bitfieldGetKeys`).
fn variable_access(which: Variable, args: &Args) -> u8 {
    match which {
        Variable::Set => {
            let get = args.from(3).any(|a| a.eq_ignore_ascii_case(b"get"));
            if get {
                NEEDS_READ | NEEDS_WRITE
            } else {
                NEEDS_WRITE
            }
        }
        Variable::Bitfield => {
            let mut readonly = true;
            let mut i = 2;
            while i < args.len() {
                let rem = args.len() - i - 1;
                let a = args.at(i);
                if a.eq_ignore_ascii_case(b"get") && rem >= 2 {
                    i += 3;
                } else if a.eq_ignore_ascii_case(b"overflow") && rem >= 1 {
                    i += 2;
                } else {
                    // SET / INCRBY, or a syntax error: taken as a write.
                    readonly = false;
                    break;
                }
            }
            if readonly {
                NEEDS_READ
            } else {
                NEEDS_READ | NEEDS_WRITE
            }
        }
        Variable::No => 0,
    }
}

/// How a pub/sub command names channels (Redis's `commands_with_channels`,
/// only the entries ACL checks: subscribing and publishing).
#[derive(Clone, Copy, Debug)]
pub enum Channels {
    /// SUBSCRIBE, SSUBSCRIBE: every argument; PSUBSCRIBE: every argument, as patterns.
    Subscribe { patterns: bool },
    /// PUBLISH, SPUBLISH: the first argument.
    Publish,
}

fn channels_of(spec: &CommandSpec) -> Option<Channels> {
    match spec.name {
        "subscribe" | "ssubscribe" => Some(Channels::Subscribe { patterns: false }),
        "psubscribe" => Some(Channels::Subscribe { patterns: true }),
        "publish" | "spublish" => Some(Channels::Publish),
        _ => None,
    }
}
