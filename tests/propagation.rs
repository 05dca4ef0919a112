//! The propagation stream against Redis's replication stream: replays every
//! compat/repl/**/*.case against Oxidis with a propagation tap and compares,
//! step by step, the bytes with those a real redis-server sent its replica
//! (recorded by compat/record_repl.py). Set COMPAT_FILTER=substring to run a subset.

mod common;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::case::{case_files, escape, parse_case, unescape};
use common::Raw;

/// Replaces unix-millisecond timestamps near now with 13 `T`s, as the
/// recorder does (`compat/record_repl.py`).
fn normalise(stream: &[u8]) -> Vec<u8> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut out = Vec::with_capacity(stream.len());
    let mut i = 0;
    while i < stream.len() {
        let rest = &stream[i..];
        if let Some(digits) = rest.strip_prefix(b"$13\r\n").map(|r| &r[..r.len().min(15)]) {
            if digits.len() == 15
                && digits[..13].iter().all(u8::is_ascii_digit)
                && &digits[13..] == b"\r\n"
            {
                let v: i64 = std::str::from_utf8(&digits[..13]).unwrap().parse().unwrap();
                if (now - 86_400_000..=now + 366 * 86_400_000).contains(&v) {
                    out.extend_from_slice(b"$13\r\nTTTTTTTTTTTTT\r\n");
                    i += 20;
                    continue;
                }
            }
        }
        out.push(stream[i]);
        i += 1;
    }
    out
}

fn golden_lines(path: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(
        text.lines()
            .skip_while(|l| l.starts_with('#'))
            .map(str::to_string)
            .collect(),
    )
}

fn run_file(path: &Path) -> (usize, Vec<String>) {
    let case = parse_case(path);
    let Some(golden) = golden_lines(&path.with_extension("golden")) else {
        return (
            0,
            vec![format!(
                "{}: not recorded (run compat/record_repl.py)",
                path.display()
            )],
        );
    };
    let steps: Vec<_> = case.steps.iter().filter(|s| s.sleep_ms.is_none()).collect();
    if steps.len() != golden.len() {
        return (
            0,
            vec![format!(
                "{}: golden has {} lines, case has {} steps: re-record",
                path.display(),
                golden.len(),
                steps.len()
            )],
        );
    }
    let mut args: Vec<String> = ["--port", "0", "--save", "", "--enable-debug-command", "yes"]
        .map(String::from)
        .to_vec();
    args.extend(case.args.iter().cloned());
    let server = oxidis::start(oxidis::config::from_args(&args).unwrap()).unwrap();
    // As the recorder: keys expire only when looked up.
    let mut setup = Raw::connect(&server);
    setup.cmd(&[b"DEBUG", b"SET-ACTIVE-EXPIRE", b"0"]);
    setup.read_raw();
    let tap = server.tap_propagation();
    let mut conns: std::collections::HashMap<usize, Raw> = Default::default();
    let mut golden = golden.iter();
    let mut failures = Vec::new();
    let mut checked = 0;
    for step in &case.steps {
        if let Some(ms) = step.sleep_ms {
            std::thread::sleep(Duration::from_millis(ms));
            continue;
        }
        let expected = unescape(golden.next().unwrap());
        let conn = conns
            .entry(step.client)
            .or_insert_with(|| Raw::connect(&server));
        if !step.argv.is_empty() {
            let argv: Vec<&[u8]> = step.argv.iter().map(|a| &a[..]).collect();
            conn.cmd(&argv);
        }
        if !step.mods.iter().any(|m| m == "noreply") {
            // The stream is written before the reply: once the reply is
            // here, so is everything the command propagated.
            conn.read_raw();
        }
        let actual = normalise(&tap.take());
        checked += 1;
        if actual != expected {
            failures.push(format!(
                "{}:{} {}\n    expected: {}\n    actual:   {}",
                path.display(),
                step.line,
                step.text.trim(),
                escape(&expected),
                escape(&actual)
            ));
        }
    }
    drop(conns);
    server.shutdown();
    (checked, failures)
}

#[test]
fn propagation_matches_redis_replication_stream() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("compat/repl");
    let mut files = Vec::new();
    case_files(&root, &mut files);
    if let Ok(f) = std::env::var("COMPAT_FILTER") {
        files.retain(|p| p.to_string_lossy().contains(&f));
    }
    assert!(!files.is_empty(), "no cases under {}", root.display());
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = files.iter().map(|p| s.spawn(|| run_file(p))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let checked: usize = results.iter().map(|r| r.0).sum();
    let failures: Vec<String> = results.into_iter().flat_map(|r| r.1).collect();
    eprintln!(
        "propagation: {} files, {} steps checked, {} failures",
        files.len(),
        checked,
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "propagation differs from Redis:\n{}",
        failures.join("\n")
    );
}
