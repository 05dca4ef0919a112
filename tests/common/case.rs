//! Compat case files (compat/README.md): parsing, golden escapes, and finding them.

use std::path::{Path, PathBuf};

/// One line of a case: a command (or `~read`) on a client, or `!sleep`.
pub struct Step {
    pub line: usize,
    pub text: String,
    pub client: usize,
    pub mods: Vec<String>,
    pub argv: Vec<Vec<u8>>,
    pub sleep_ms: Option<u64>,
}

/// A parsed case file: server flags, protocols, steps.
pub struct Case {
    pub args: Vec<String>,
    pub protocols: Vec<u8>,
    pub steps: Vec<Step>,
}

pub fn split_words(s: &str) -> Vec<Vec<u8>> {
    oxidis::resp::inline::split(s.as_bytes())
        .unwrap_or_else(|| panic!("cannot split case line {s:?}: unbalanced quotes"))
}

pub fn parse_case(path: &Path) -> Case {
    let text = std::fs::read_to_string(path).unwrap();
    let mut case = Case {
        args: Vec::new(),
        protocols: vec![2, 3],
        steps: Vec::new(),
    };
    for (i, raw) in text.lines().enumerate() {
        let mut s = raw.trim();
        if s.is_empty() || s.starts_with('#') {
            continue;
        }
        if let Some(a) = s.strip_prefix("!args ") {
            case.args = split_words(a)
                .into_iter()
                .map(|w| String::from_utf8(w).unwrap())
                .collect();
            continue;
        }
        if let Some(p) = s.strip_prefix("!protocols ") {
            case.protocols = p.split_whitespace().map(|x| x.parse().unwrap()).collect();
            continue;
        }
        if let Some(ms) = s.strip_prefix("!sleep ") {
            case.steps.push(Step {
                line: i + 1,
                text: raw.into(),
                client: 1,
                mods: vec![],
                argv: vec![],
                sleep_ms: Some(ms.trim().parse().unwrap()),
            });
            continue;
        }
        let mut client = 1;
        if s.starts_with('[') {
            let end = s.find(']').unwrap();
            client = s[1..end].parse().unwrap();
            s = s[end + 1..].trim();
        }
        let mut mods = Vec::new();
        while let Some(rest) = s.strip_prefix('~') {
            let (m, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            mods.push(m.to_string());
            s = tail.trim();
        }
        let argv = if s.is_empty() { vec![] } else { split_words(s) };
        case.steps.push(Step {
            line: i + 1,
            text: raw.into(),
            client,
            mods,
            argv,
            sleep_ms: None,
        });
    }
    case
}

pub fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            match b[i + 1] {
                b'r' => out.push(b'\r'),
                b'n' => out.push(b'\n'),
                b'\\' => out.push(b'\\'),
                b'x' => {
                    out.push(u8::from_str_radix(&s[i + 2..i + 4], 16).unwrap());
                    i += 2;
                }
                other => panic!("bad escape \\{}", other as char),
            }
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

pub fn escape(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        match c {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\\' => s.push_str("\\\\"),
            32..=126 => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

/// Every `.case` file under `dir`, sorted.
pub fn case_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            case_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "case") {
            out.push(p);
        }
    }
}
