//! The Lua debugger (SCRIPT DEBUG SYNC / YES) against a real redis-server:
//! raw protocol sessions compared byte for byte (redis-cli's `--ldb` and
//! `--ldb-sync-mode` are in `redis_cli.rs`).

mod common;

use std::time::Duration;

use common::process::Oxidis;
use common::real_redis::RedisServer;
use common::{encode, Raw};

/// One step of a raw session.
enum Step<'a> {
    /// Send these bytes, then read this many replies.
    Send(&'a [u8], usize),
    /// Send a command, then read one reply.
    Cmd(&'a [&'a str]),
    /// Read what the server sends until it closes the connection.
    UntilClose,
}
use Step::*;

fn cmd(args: &[&str]) -> Vec<u8> {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    encode(&a)
}

/// Runs the steps on a fresh connection; every reply, as raw bytes.
fn session(port: u16, steps: &[Step]) -> Vec<String> {
    let mut r = Raw::connect_to(("127.0.0.1", port));
    let mut out = Vec::new();
    for s in steps {
        match s {
            Send(bytes, n) => {
                r.send(bytes);
                for _ in 0..*n {
                    out.push(r.read_raw());
                }
            }
            Cmd(args) => {
                r.send(&cmd(args));
                out.push(r.read_raw());
            }
            UntilClose => {
                while let Some(v) = r.try_read_raw(Duration::from_secs(10)) {
                    out.push(v);
                }
                out.push(b"<closed>".to_vec());
            }
        }
    }
    out.into_iter()
        .map(|v| mask_pointers(&String::from_utf8_lossy(&v)))
        .collect()
}

/// `"function@0x55d0c0ffee00"` with the address masked (it is the VM's own).
fn mask_pointers(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("@0x") {
        out.push_str(&rest[..i]);
        out.push_str("@PTR");
        rest = rest[i + 3..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    out
}

/// The same session against both servers gives the same replies.
fn same(redis: &RedisServer, ox: &Oxidis, steps: &[Step]) -> Vec<String> {
    let want = session(redis.port, steps);
    let got = session(ox.port, steps);
    assert_eq!(got, want);
    want
}

fn servers() -> (RedisServer, Oxidis) {
    (RedisServer::start(), Oxidis::start())
}

const DEBUG_SYNC: Step = Cmd(&["SCRIPT", "DEBUG", "SYNC"]);
const CONTINUE: &[u8] = b"*1\r\n$1\r\nc\r\n";

#[test]
fn ldb_protocol_parsing_matches_redis() {
    let (redis, ox) = servers();
    // Redis's unit/scripting "Test scripting debug protocol parsing".
    let out = same(
        &redis,
        &ox,
        &[
            DEBUG_SYNC,
            Cmd(&["EVAL", "return 'hello'", "0"]),
            Cmd(&["hello\0world"]),
            Cmd(&["hello\0"]),
            Cmd(&["\0hello"]),
            Cmd(&["EVAL", "return 'hello'", "0"]),
            Send(CONTINUE, 0),
            UntilClose,
        ],
    );
    assert!(
        out[2].contains("Unknown Redis Lua debugger command"),
        "{out:?}"
    );
    // "lua stack overflow": a redis command of 100 arguments.
    let mut big = b"*101\r\n$5\r\nredis\r\n".to_vec();
    for _ in 0..100 {
        big.extend_from_slice(b"$4\r\ntest\r\n");
    }
    let out = same(
        &redis,
        &ox,
        &[
            DEBUG_SYNC,
            Cmd(&["EVAL", "return 'hello'", "0"]),
            Send(&big, 1),
            Send(CONTINUE, 0),
            UntilClose,
        ],
    );
    assert!(
        out[2].contains("Unknown Redis command called from script"),
        "{out:?}"
    );
    // Input the parser refuses ends the script with an error.
    for bad in [
        &b"hello\r\n"[..],
        b"*0\r\n",
        b"*1\r\n$0\r\n\r\n",
        b"*1\r\n$2000\r\n",
        b"*1\r\n$1\r\nab\r\n",
        b"*1\r\n:1\r\n",
    ] {
        same(
            &redis,
            &ox,
            &[
                DEBUG_SYNC,
                Cmd(&["EVAL", "return 1", "0"]),
                Send(bad, 0),
                UntilClose,
            ],
        );
    }
    // A command split over several writes is put together.
    same(
        &redis,
        &ox,
        &[
            DEBUG_SYNC,
            Cmd(&["EVAL", "local a = 1\nreturn a", "0"]),
            Send(b"*2\r\n$1\r", 0),
            Send(b"\np\r\n$1\r\na", 0),
            Send(b"\r\n", 1),
            Cmd(&["abort"]),
            UntilClose,
        ],
    );
}

#[test]
fn ldb_session_edges_match_redis() {
    let (redis, ox) = servers();
    let sha40 = "0123456789012345678901234567890123456789";
    // EVALSHA refuses to debug; a wrong-length digest is NOSCRIPT first;
    // bad SCRIPT DEBUG arguments; NO turns debugging off again.
    same(
        &redis,
        &ox,
        &[
            DEBUG_SYNC,
            Cmd(&["EVALSHA", sha40, "0"]),
            Cmd(&["EVALSHA", "abc", "0"]),
            Cmd(&["EVALSHA", sha40, "x"]),
            Cmd(&["SCRIPT", "DEBUG", "maybe"]),
            Cmd(&["SCRIPT", "DEBUG"]),
            Cmd(&["SCRIPT", "DEBUG", "NO"]),
            Cmd(&["EVAL", "return 1", "0"]),
        ],
    );
    // SCRIPT DEBUG behind another command in the same write.
    let mut pipe = cmd(&["PING"]);
    pipe.extend(cmd(&["SCRIPT", "DEBUG", "SYNC"]));
    same(&redis, &ox, &[Send(&pipe, 2)]);
    // A script that does not compile, and bad numkeys: the session ends at once.
    for eval in [
        &["EVAL", "return +", "0"][..],
        &["EVAL", "return 1", "x"],
        &["EVAL", "return 1", "5"],
    ] {
        same(&redis, &ox, &[DEBUG_SYNC, Cmd(eval), UntilClose]);
    }
    // abort, with a write already done: in sync mode it stays.
    let script = "redis.call('set', KEYS[1], 'v')\nredis.call('incr', KEYS[1])\nreturn 1";
    same(
        &redis,
        &ox,
        &[
            Cmd(&["DEL", "k"]),
            DEBUG_SYNC,
            Cmd(&["EVAL", script, "1", "k"]),
            Cmd(&["s"]),
            Cmd(&["s"]),
            Cmd(&["abort"]),
            UntilClose,
        ],
    );
    same(&redis, &ox, &[Cmd(&["GET", "k"])]);
    // The client goes away mid-session: the script runs to its end.
    for port in [redis.port, ox.port] {
        let mut r = Raw::connect_to(("127.0.0.1", port));
        r.cmd(&[b"SCRIPT", b"DEBUG", b"SYNC"]);
        r.read_raw();
        r.cmd(&[b"EVAL", b"redis.call('set', 'gone', 'yes')\nreturn 1", b"0"]);
        r.read_raw();
    }
    same(&redis, &ox, &[Cmd(&["GET", "gone"]), Cmd(&["PING"])]);
}

#[test]
fn ldb_commands_match_redis() {
    let (redis, ox) = servers();
    let script = "local function f(x)
  local y = x * 2
  redis.breakpoint()
  return y
end
local t = {1, 'two', {k = true}, n = 3.5}
redis.debug('start', t, nil, 1e20)
redis.call('set', KEYS[1], string.rep('x', 300))
redis.call('get', KEYS[1])
redis.pcall('nosuchcmd')
redis.pcall('incr', KEYS[1])
redis.call('hset', 'h', 'a', '1')
redis.call('hgetall', 'h')
return {f(21), ARGV[1]}";
    let eval = ["EVAL", script, "1", "k", "arg"];
    let mut steps = vec![Cmd(&["DEL", "k", "h"]), DEBUG_SYNC, Cmd(&eval)];
    let cmds: &[&[&str]] = &[
        &["help"],
        &["s"],
        &["n"],
        &["p"],
        &["print", "t"],
        &["p", "KEYS"],
        &["p", "ARGV"],
        &["p", "nope"],
        &["l"],
        &["l", "3", "1"],
        &["list", "0"],
        &["w"],
        &["b"],
        &["b", "11"],
        &["b", "11"],
        &["b", "99", "-4", "x"],
        &["b"],
        &["break", "-11"],
        &["b", "0"],
        &["t"],
        &["e", "1 + 1"],
        &["e", "local z = 1"],
        &["e", "error('boom')"],
        &["e", "nope("],
        &["eval", "redis.pcall('nosuch')"],
        &["r", "set", "a", "1"],
        &["redis", "nosuch"],
        &["r"],
        &["m"],
        &["m", "10"],
        &["m", "0"],
        &["m", "100"],
        &["s"],
        &["s"],
        &["s"],
        &["s"],
        &["s"],
        &["s"],
        &["m", "0"],
        &["s"],
        &["s"],
        &["c"],
        &["t"],
        &["p"],
        &["x"],
        &["c"],
    ];
    for c in cmds {
        steps.push(Cmd(c));
    }
    steps.pop();
    steps.push(Send(CONTINUE, 0));
    steps.push(UntilClose);
    same(&redis, &ox, &steps);
}

#[test]
fn ldb_timeout_stop_matches_redis() {
    let (redis, ox) = servers();
    same(
        &redis,
        &ox,
        &[
            Cmd(&["CONFIG", "SET", "busy-reply-threshold", "10"]),
            DEBUG_SYNC,
            // The loop on one line: where the stop falls in it cannot vary.
            Cmd(&["EVAL", "local i = 0\nwhile true do i = i + 1 end", "0"]),
            Cmd(&["c"]),
            Cmd(&["a"]),
            UntilClose,
        ],
    );
}

#[test]
fn ldb_forked_session_serves_others_and_discards_changes() {
    let (redis, ox) = servers();
    for port in [redis.port, ox.port] {
        let mut other = Raw::connect_to(("127.0.0.1", port));
        other.cmd(&[b"SET", b"k", b"before"]);
        other.read_raw();
        let mut r = Raw::connect_to(("127.0.0.1", port));
        r.cmd(&[b"SCRIPT", b"DEBUG", b"YES"]);
        assert_eq!(r.read_raw(), b"+OK\r\n");
        r.cmd(&[
            b"EVAL",
            b"redis.call('set', KEYS[1], 'during')\nreturn redis.call('get', KEYS[1])",
            b"1",
            b"k",
        ]);
        let stop = r.read_raw();
        assert!(
            String::from_utf8_lossy(&stop).contains("Stopped at 1"),
            "{stop:?}"
        );
        r.cmd(&[b"s"]);
        r.read_raw();
        // The server goes on serving others while the session waits.
        other.cmd(&[b"GET", b"k"]);
        assert_eq!(other.read_raw(), b"$6\r\nbefore\r\n");
        r.send(CONTINUE);
        let mut rest = Vec::new();
        while let Some(v) = r.try_read_raw(Duration::from_secs(10)) {
            rest.push(v);
        }
        assert_eq!(
            rest,
            [
                b"*1\r\n+<endsession>\r\n".to_vec(),
                b"$6\r\nduring\r\n".to_vec()
            ]
        );
        // The session's write died with it.
        other.cmd(&[b"GET", b"k"]);
        assert_eq!(other.read_raw(), b"$6\r\nbefore\r\n");
    }
}
