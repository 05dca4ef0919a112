//! redis-cli against Oxidis: `-r 3 PING`, `--scan`, `--pipe` (which ends with
//! an ECHO of a random 20-byte marker) and the COMMAND DOCS it builds hints
//! from. Skipped when redis-cli is not installed.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

fn cli(port: u16, args: &[&str], stdin: Option<&[u8]>) -> Option<String> {
    let mut child = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    if let Some(data) = stdin {
        child.stdin.take().unwrap().write_all(data).unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn redis_cli_repeat_scan_and_pipe() {
    let h = common::start();
    let port = h.addr().port();
    let Some(out) = cli(port, &["-r", "3", "PING"], None) else {
        eprintln!("redis-cli not installed; skipped");
        return;
    };
    assert_eq!(out, "PONG\nPONG\nPONG\n");
    let out = cli(
        port,
        &["--pipe"],
        Some(b"SET a 1\r\nSET b 2\r\n*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$1\r\n3\r\nINCR a\r\n"),
    )
    .unwrap();
    assert!(out.contains("errors: 0, replies: 4"), "{out}");
    let out = cli(port, &["--scan"], None).unwrap();
    let mut keys: Vec<&str> = out.lines().collect();
    keys.sort();
    assert_eq!(keys, ["a", "b", "c"]);
    let out = cli(port, &["--scan", "--pattern", "[ab]"], None).unwrap();
    assert_eq!(out.lines().count(), 2);
    assert_eq!(cli(port, &["GET", "a"], None).unwrap(), "2\n");
    // The docs redis-cli turns into hints.
    let out = cli(port, &["COMMAND", "DOCS", "set"], None).unwrap();
    assert!(out.contains("Set the string value of a key"), "{out}");
}
