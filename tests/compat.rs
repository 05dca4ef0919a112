//! Replays every compat/cases/**/*.case against Oxidis and compares each reply
//! with the bytes a real redis-server gave (the `.golden` file beside it).
//! See compat/README.md for the format. Each case file is one test, named
//! by its path: `cargo test --test compat string/` runs the string cases.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use oxidis::resp::value::{parse_value, Value};

mod common;
use common::case::{case_files, escape, parse_case, unescape, Step};

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
        // As record.py starts redis-server: no save points.
        // and its own --dir, as record.py gives redis-server (a dump.rdb
        // left in the working directory was loaded by later cases).
        let dir = std::env::temp_dir().join(format!(
            "oxidis-compat-{}-{}",
            std::process::id(),
            path.display().to_string().replace('/', "_")
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("case dir");
        let mut args = ["--port", "0", "--save", ""].map(String::from).to_vec();
        args.extend(["--dir".into(), dir.to_string_lossy().into_owned()]);
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
        let _ = std::fs::remove_dir_all(&dir);
    }
    (checked, failures)
}

/// One test per case file, named by its path under compat/cases without the
/// extension (`cargo test --test compat hash/incr` runs that file alone).
fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("compat/cases");
    let mut files = Vec::new();
    case_files(&root, &mut files);
    assert!(
        !files.is_empty(),
        "no compat cases found under {}",
        root.display()
    );
    let tests = files
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .with_extension("")
                .to_string_lossy()
                .into_owned();
            libtest_mimic::Trial::test(name, move || {
                let (_, failures) = run_file(&path);
                if failures.is_empty() {
                    Ok(())
                } else {
                    Err(failures.join("\n").into())
                }
            })
        })
        .collect();
    libtest_mimic::run(&args, tests).exit();
}
