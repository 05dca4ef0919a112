//! The propagation stream against Redis's replication stream: replays every
//! compat/repl/**/*.case against Oxidis and compares the bytes with those a
//! real redis-server sent its replica (recorded by compat/record_repl.py):
//! step by step through a propagation tap, and whole through a replica
//! attached with SYNC, as the recorder attached to Redis (the bytes on the
//! wire). Set COMPAT_FILTER=substring to run a subset.

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

/// How the test receives the stream.
#[derive(Clone, Copy)]
enum Via {
    /// A propagation tap, read after each command.
    Tap,
    /// A raw replica that sent SYNC, read at the end.
    Sync,
}

/// Attaches a raw replica as the recorder does: SYNC, newlines skipped,
/// the RDB payload read; what follows is the stream.
fn attach_sync(server: &oxidis::Handle) -> Raw {
    let mut r = Raw::connect(server);
    r.send(b"SYNC\r\n");
    r.s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut header = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        std::io::Read::read_exact(&mut r.s, &mut byte).expect("SYNC reply");
        if byte[0] == b'\n' {
            if header.is_empty() {
                continue;
            }
            break;
        }
        if byte[0] != b'\r' {
            header.push(byte[0]);
        }
    }
    assert_eq!(header[0], b'$', "{}", String::from_utf8_lossy(&header));
    let len: usize = std::str::from_utf8(&header[1..]).unwrap().parse().unwrap();
    let mut rdb = vec![0u8; len];
    std::io::Read::read_exact(&mut r.s, &mut rdb).expect("RDB payload");
    assert!(rdb.starts_with(b"REDIS"), "an RDB payload");
    r
}

/// Reads the stream until `n` bytes (or 10 s), then what else arrives
/// within a short while (so extra bytes show up as a difference).
fn read_stream(r: &mut Raw, n: usize) -> Vec<u8> {
    let mut out = std::mem::take(&mut r.buf);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut chunk = [0u8; 65536];
    loop {
        let wait = if out.len() >= n {
            Duration::from_millis(100)
        } else {
            deadline.saturating_duration_since(std::time::Instant::now())
        };
        if wait.is_zero() {
            return out;
        }
        r.s.set_read_timeout(Some(wait)).unwrap();
        match std::io::Read::read(&mut r.s, &mut chunk) {
            Ok(0) | Err(_) => return out,
            Ok(k) => out.extend_from_slice(&chunk[..k]),
        }
    }
}

fn run_file(path: &Path, via: Via) -> (usize, Vec<String>) {
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
    let mut args: Vec<String> = [
        "--port",
        "0",
        "--save",
        "",
        "--enable-debug-command",
        "yes",
        "--repl-ping-replica-period",
        "3600",
    ]
    .map(String::from)
    .to_vec();
    args.extend(case.args.iter().cloned());
    let server = oxidis::start(oxidis::config::from_args(&args).unwrap()).unwrap();
    // As the recorder: keys expire only when looked up.
    let mut setup = Raw::connect(&server);
    setup.cmd(&[b"DEBUG", b"SET-ACTIVE-EXPIRE", b"0"]);
    setup.read_raw();
    let tap = server.tap_propagation();
    let mut replica = matches!(via, Via::Sync).then(|| attach_sync(&server));
    let mut whole_expected = Vec::new();
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
        if replica.is_some() {
            whole_expected.extend_from_slice(&expected);
            continue;
        }
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
    if let Some(r) = replica.as_mut() {
        let actual = normalise(&read_stream(r, whole_expected.len()));
        if actual != whole_expected {
            let at = actual
                .iter()
                .zip(&whole_expected)
                .position(|(a, b)| a != b)
                .unwrap_or(actual.len().min(whole_expected.len()));
            let from = at.saturating_sub(80);
            failures.push(format!(
                "{}: the stream sent to a SYNC replica differs at byte {at}\n    expected: ...{}\n    actual:   ...{}",
                path.display(),
                escape(&whole_expected[from..(at + 120).min(whole_expected.len())]),
                escape(&actual[from.min(actual.len())..(at + 120).min(actual.len())])
            ));
        }
    }
    drop(conns);
    server.shutdown();
    (checked, failures)
}

fn run_all(via: Via) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("compat/repl");
    let mut files = Vec::new();
    case_files(&root, &mut files);
    if let Ok(f) = std::env::var("COMPAT_FILTER") {
        files.retain(|p| p.to_string_lossy().contains(&f));
    }
    assert!(!files.is_empty(), "no cases under {}", root.display());
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = files.iter().map(|p| s.spawn(|| run_file(p, via))).collect();
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

#[test]
fn propagation_matches_redis_replication_stream() {
    run_all(Via::Tap);
}

#[test]
fn a_sync_replica_receives_redis_replication_stream() {
    run_all(Via::Sync);
}
