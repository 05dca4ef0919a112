//! redis-cli against Oxidis: `-r 3 PING`, `--scan`, `--pipe` (which ends with
//! an ECHO of a random 20-byte marker) and the COMMAND DOCS it builds hints
//! from, `--eval`, `--ldb` / `--ldb-sync-mode` (transcripts compared with a
//! real redis-server's), and redis-benchmark's default suite. Skipped when the
//! tools are not installed (.ci/run installs them).

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::process::Oxidis;
use common::real_redis::RedisServer;

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

#[test]
fn redis_cli_eval_runs_a_script_file() {
    let h = common::start();
    let port = h.addr().port();
    let dir = std::env::temp_dir().join(format!("oxidis-cli-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("keys_args.lua");
    std::fs::write(
        &script,
        "redis.call('SET', KEYS[1], ARGV[1])\nreturn {KEYS[1], KEYS[2], ARGV[1], ARGV[2], redis.call('GET', KEYS[1])}\n",
    )
    .unwrap();
    let Some(out) = cli(
        port,
        &[
            "--eval",
            script.to_str().unwrap(),
            "k1",
            "k2",
            ",",
            "a1",
            "a2",
        ],
        None,
    ) else {
        eprintln!("redis-cli not installed; skipped");
        return;
    };
    // redis-cli prints a multi-bulk reply one element per line when not on a tty.
    assert_eq!(out, "k1\nk2\na1\na2\na1\n");
    let _ = std::fs::remove_dir_all(dir);
}

/// redis-benchmark's default suite (PING through LRANGE_600 and MSET) must
/// complete with no error replies.
#[test]
fn redis_benchmark_default_suite_has_no_errors() {
    let h = common::start();
    let port = h.addr().port().to_string();
    let Ok(out) = Command::new("redis-benchmark")
        .args(["-p", &port, "-n", "2000", "-c", "10", "--csv"])
        .output()
    else {
        eprintln!("redis-benchmark not installed; skipped");
        return;
    };
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("ERR") && !text.contains("Error"), "{text}");
    for t in [
        "PING_INLINE",
        "PING_MBULK",
        "SET",
        "GET",
        "INCR",
        "LPUSH",
        "RPUSH",
        "LPOP",
        "RPOP",
        "SADD",
        "HSET",
        "SPOP",
        "ZADD",
        "ZPOPMIN",
        "LRANGE_100",
        "LRANGE_300",
        "LRANGE_500",
        "LRANGE_600",
        "MSET",
    ] {
        assert!(
            text.contains(&format!("\"{t}")),
            "no result for {t}:\n{text}"
        );
    }
}

/// `redis-cli --rdb` and `--functions-rdb` fetch the dataset through the
/// replication protocol (`REPLCONF rdb-only`, `rdb-filter-only`, SYNC): the
/// files they write load into a real redis-server with what they should hold.
#[test]
fn redis_cli_rdb_and_functions_rdb() {
    let h = common::start_with(&["--repl-diskless-sync-delay", "0"]);
    let port = h.addr().port();
    let mut c = common::conn(&h);
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut c).unwrap();
    let _: () = redis::cmd("RPUSH").arg("l").arg("a").query(&mut c).unwrap();
    let lib = "#!lua name=mylib\nredis.register_function('f', function() return 1 end)";
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(lib)
        .query(&mut c)
        .unwrap();
    let dir = common::real_redis::temp_dir("cli-rdb");
    let all = dir.join("all.rdb");
    let funcs = dir.join("funcs.rdb");
    let Some(out) = cli(port, &["--rdb", all.to_str().unwrap()], None) else {
        eprintln!("redis-cli not installed; skipped");
        return;
    };
    assert!(out.contains("Transfer finished with success"), "{out}");
    let out = cli(port, &["--functions-rdb", funcs.to_str().unwrap()], None).unwrap();
    assert!(out.contains("Transfer finished with success"), "{out}");
    // The replica connections were closed after their RDB: only ours is left.
    let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut c).unwrap();
    assert_eq!(clients.lines().count(), 1, "{clients}");

    let real = common::real_redis::load_rdb(&std::fs::read(&all).unwrap(), &[]).unwrap();
    let mut r = real.conn();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut r).unwrap();
    assert_eq!(keys.len(), 2, "{keys:?}");
    let v: i64 = redis::cmd("FCALL").arg("f").arg(0).query(&mut r).unwrap();
    assert_eq!(v, 1);
    drop(real);
    let real = common::real_redis::load_rdb(&std::fs::read(&funcs).unwrap(), &[]).unwrap();
    let mut r = real.conn();
    let n: i64 = redis::cmd("DBSIZE").query(&mut r).unwrap();
    assert_eq!(n, 0, "--functions-rdb holds no keys");
    let v: i64 = redis::cmd("FCALL").arg("f").arg(0).query(&mut r).unwrap();
    assert_eq!(v, 1);
}

#[test]
fn redis_cli_ldb_transcripts_match_redis() {
    // Processes: --ldb forks the server.
    let (redis, ox) = (RedisServer::start(), Oxidis::start());
    let dir = common::real_redis::temp_dir("ldb-cli");
    let script = dir.join("s.lua");
    std::fs::write(
        &script,
        "local a = 1\nlocal t = {1,2,'x'}\nredis.debug('hi', a, t)\nredis.call('set', KEYS[1], ARGV[1])\nlocal v = redis.call('get', KEYS[1])\nreturn v\n",
    )
    .unwrap();
    let path = script.to_str().unwrap();
    let input =
        "s\ns\np\np t\nl\nw\nb 5\nb\nt\ne a+1\nr ping\nm 10\nm\nhelp\nc\nrestart\nn\nabort\n";
    for mode in ["--ldb-sync-mode", "--ldb"] {
        let args = [mode, "--eval", path, "key", ",", "val"];
        let Some(want) = cli(redis.port, &args, Some(input.as_bytes())) else {
            eprintln!("redis-cli not installed; skipped");
            return;
        };
        let got = cli(ox.port, &args, Some(input.as_bytes())).unwrap();
        assert_eq!(got, want, "{mode}");
        assert!(
            want.contains("<debug> line 3: \"hi\", 1, {1; 2; \"x\"}"),
            "{want}"
        );
        // --ldb (forked) leaves no trace; --ldb-sync-mode keeps the write.
        let kept = if mode == "--ldb" { "\n" } else { "val\n" };
        for port in [redis.port, ox.port] {
            assert_eq!(cli(port, &["GET", "key"], None).unwrap(), kept, "{mode}");
            cli(port, &["DEL", "key"], None).unwrap();
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}
