//! Replays every compat/cases/**/*.case against Oxidis and compares each reply
//! with the bytes a real redis-server gave (the `.golden` file beside it).
//! See compat/README.md for the format. Set COMPAT_FILTER=substring to run a subset.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use oxidis::resp::value::{parse_value, Value};

struct Step {
    line: usize,
    text: String,
    client: usize,
    mods: Vec<String>,
    argv: Vec<Vec<u8>>,
    sleep_ms: Option<u64>,
}

struct Case {
    args: Vec<String>,
    protocols: Vec<u8>,
    steps: Vec<Step>,
}

fn split_words(s: &str) -> Vec<Vec<u8>> {
    oxidis::resp::inline::split(s.as_bytes())
        .unwrap_or_else(|| panic!("cannot split case line {s:?}: unbalanced quotes"))
}

fn parse_case(path: &Path) -> Case {
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

fn unescape(s: &str) -> Vec<u8> {
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

fn escape(b: &[u8]) -> String {
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

/// Golden lines per protocol.
fn parse_golden(path: &Path) -> Option<[Vec<String>; 2]> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut out = [Vec::new(), Vec::new()];
    let mut cur = None;
    for line in text.lines() {
        match line {
            "@resp2" => cur = Some(0),
            "@resp3" => cur = Some(1),
            l if l.starts_with('#') && cur.is_none() => {}
            l => out[cur?].push(l.to_string()),
        }
    }
    Some(out)
}

fn split_frames(mut b: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let (_, n) = parse_value(b)
            .expect("golden frame parses")
            .expect("golden frame complete");
        out.push(b[..n].to_vec());
        b = &b[n..];
    }
    out
}

struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn open(port: u16, proto: u8) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_nodelay(true).unwrap();
        let mut c = Conn { s, buf: Vec::new() };
        if proto == 3 {
            c.send(&[b"HELLO".to_vec(), b"3".to_vec()]);
            c.read_frames(1);
        }
        c
    }

    fn send(&mut self, argv: &[Vec<u8>]) {
        let mut out = format!("*{}\r\n", argv.len()).into_bytes();
        for a in argv {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.s.write_all(&out).unwrap();
    }

    /// Reads `n` complete frames; fewer if none arrive within the timeout.
    fn read_frames(&mut self, n: usize) -> Vec<Vec<u8>> {
        let mut frames = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while frames.len() < n {
            if let Ok(Some((_, used))) = parse_value(&self.buf) {
                frames.push(self.buf.drain(..used).collect());
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            self.s.set_read_timeout(Some(left)).unwrap();
            let mut chunk = [0u8; 65536];
            match self.s.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(k) => self.buf.extend_from_slice(&chunk[..k]),
            }
        }
        frames
    }
}

fn encode_sorted(items: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut v = items;
    v.sort();
    v
}

fn value_bytes(v: &Value, resp: u8) -> Vec<u8> {
    let mut r = oxidis::resp::encode::Reply::new(resp);
    v.write(&mut r);
    r.buf.to_vec()
}

/// Elements of an aggregate (sorted, encoded), or pairs when `pairs`.
fn aggregate_items(frame: &[u8], pairs: bool, resp: u8) -> Option<Vec<Vec<u8>>> {
    let (v, _) = parse_value(frame).ok()??;
    let items: Vec<Vec<u8>> = match v {
        Value::Map(kv) => kv
            .iter()
            .map(|(k, v)| [value_bytes(k, resp), value_bytes(v, resp)].concat())
            .collect(),
        Value::Array(a) | Value::Set(a) | Value::Push(a) => {
            let enc: Vec<Vec<u8>> = a.iter().map(|x| value_bytes(x, resp)).collect();
            if pairs {
                enc.chunks(2).map(|c| c.concat()).collect()
            } else {
                enc
            }
        }
        _ => return None,
    };
    Some(encode_sorted(items))
}

/// A SCAN-shaped reply `[cursor, [items...]]`: the cursor, then the sorted items.
fn scan_items(frame: &[u8], resp: u8) -> Option<(Vec<u8>, Vec<Vec<u8>>)> {
    let (v, _) = parse_value(frame).ok()??;
    let Value::Array(top) = v else { return None };
    let [cursor, items] = &top[..] else {
        return None;
    };
    let (Value::Array(a) | Value::Set(a)) = items else {
        return None;
    };
    let enc = a.iter().map(|x| value_bytes(x, resp)).collect();
    Some((value_bytes(cursor, resp), encode_sorted(enc)))
}

fn frames_match(mods: &[String], expected: &[Vec<u8>], actual: &[Vec<u8>], resp: u8) -> bool {
    if expected.len() != actual.len() {
        return false;
    }
    for (e, a) in expected.iter().zip(actual) {
        let ok = if mods.iter().any(|m| m == "any") {
            e.first() == a.first()
        } else if mods.iter().any(|m| m == "unordered-scan") {
            scan_items(e, resp).is_some() && scan_items(e, resp) == scan_items(a, resp)
        } else if mods
            .iter()
            .any(|m| m == "unordered" || m == "unordered-pairs")
        {
            let pairs = mods.iter().any(|m| m == "unordered-pairs");
            e.first() == a.first()
                && aggregate_items(e, pairs, resp) == aggregate_items(a, pairs, resp)
        } else {
            e == a
        };
        if !ok {
            return false;
        }
    }
    true
}

fn run_file(path: &Path) -> (usize, Vec<String>) {
    let case = parse_case(path);
    let golden_path = path.with_extension("golden");
    let Some(golden) = parse_golden(&golden_path) else {
        return (
            0,
            vec![format!(
                "{}: not recorded (run compat/record.py)",
                path.display()
            )],
        );
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    for proto in [2u8, 3] {
        if !case.protocols.contains(&proto) {
            continue;
        }
        let lines = &golden[(proto - 2) as usize];
        let replies: Vec<&Step> = case.steps.iter().filter(|s| s.sleep_ms.is_none()).collect();
        if lines.len() != replies.len() {
            failures.push(format!(
                "{}: golden has {} lines for RESP{proto}, case has {} steps: re-record",
                path.display(),
                lines.len(),
                replies.len()
            ));
            continue;
        }
        let mut args = vec!["--port".to_string(), "0".to_string()];
        args.extend(case.args.iter().cloned());
        let config = oxidis::config::from_args(&args).expect("case args parse");
        let server = oxidis::start(config).expect("server starts");
        let port = server.addr().port();
        let mut conns: std::collections::HashMap<usize, Conn> = Default::default();
        let mut golden_iter = lines.iter();
        for step in &case.steps {
            if let Some(ms) = step.sleep_ms {
                std::thread::sleep(Duration::from_millis(ms));
                continue;
            }
            let expected_line = golden_iter.next().unwrap();
            let conn = conns
                .entry(step.client)
                .or_insert_with(|| Conn::open(port, proto));
            if !step.argv.is_empty() {
                conn.send(&step.argv);
            }
            if step.mods.iter().any(|m| m == "noreply") {
                continue;
            }
            let expected = split_frames(&unescape(expected_line));
            let actual = conn.read_frames(expected.len());
            checked += 1;
            if !frames_match(&step.mods, &expected, &actual, proto) {
                failures.push(format!(
                    "{}:{} (RESP{proto}) {}\n    expected: {}\n    actual:   {}",
                    path.display(),
                    step.line,
                    step.text.trim(),
                    escape(&expected.concat()),
                    escape(&actual.concat())
                ));
                // Later replies on a desynchronised connection would only add noise.
                break;
            }
        }
        drop(conns);
        server.shutdown();
    }
    (checked, failures)
}

fn case_files(dir: &Path, out: &mut Vec<PathBuf>) {
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

#[test]
fn compat_cases_match_recorded_redis() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("compat/cases");
    let mut files = Vec::new();
    case_files(&root, &mut files);
    if let Ok(f) = std::env::var("COMPAT_FILTER") {
        files.retain(|p| p.to_string_lossy().contains(&f));
    }
    assert!(
        !files.is_empty(),
        "no compat cases found under {}",
        root.display()
    );
    let queue = std::sync::Mutex::new(files.clone());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let Some(p) = queue.lock().unwrap().pop() else {
                    break;
                };
                let r = run_file(&p);
                results.lock().unwrap().push(r);
            });
        }
    });
    let results = results.into_inner().unwrap();
    let checked: usize = results.iter().map(|r| r.0).sum();
    let failures: Vec<String> = results.into_iter().flat_map(|r| r.1).collect();
    eprintln!(
        "compat: {} files, {} replies checked, {} failures",
        files.len(),
        checked,
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "compat failures:\n{}",
        failures.join("\n")
    );
}
