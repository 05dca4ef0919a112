//! Every way out of a script leaves no state behind: a panic under
//! `redis.call` (caught at the C boundary, or unwinding through Lua) and a
//! script that ran out of memory.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::command::args::{Args, Argv};
use crate::command::dispatch;
use crate::server::client::{Client, ConnKind};
use crate::server::Server;

/// Test-only fault injection: `redis.call('ping', word)` panics where the
/// caller checks for `word`.
pub fn panic_if_asked(args: &Args, word: &[u8]) {
    if args.len() > 1 && args.at(1) == word {
        panic!("injected test panic");
    }
}

fn server() -> (Server, Client) {
    let srv = Server::new(crate::Config::default());
    let c = Client::new(1, String::new(), String::new(), ConnKind::Tcp, false);
    (srv, c)
}

/// Runs one command; its reply as text, or None when it panicked (the
/// panic escaped, or `server::fault` caught it around the handler and
/// answered its internal error).
fn cmd(srv: &mut Server, c: &mut Client, words: &[&str]) -> Option<String> {
    let argv = Argv::from_slices(words.iter().map(|w| w.as_bytes()));
    c.reply.buf.clear();
    let r = catch_unwind(AssertUnwindSafe(|| {
        dispatch::dispatch(srv, c, &argv.args())
    }));
    let out = String::from_utf8_lossy(&c.reply.buf).into_owned();
    c.reply.buf.clear();
    r.ok()
        .map(|()| out)
        .filter(|o| !o.starts_with("-ERR internal error in "))
}

/// The thread is clean: no script context, no hook, the pseudo-client back.
fn assert_clean(srv: &mut Server) {
    // SAFETY: on this (the data) thread, no script running.
    assert!(unsafe { super::run_ctx() }.is_none());
    assert!(srv.script.client.is_some());
}

fn assert_works(srv: &mut Server, c: &mut Client, sha: &str) {
    assert_eq!(cmd(srv, c, &["EVAL", "return 7", "0"]).unwrap(), ":7\r\n");
    // The cached script still runs by its SHA.
    assert_eq!(cmd(srv, c, &["EVALSHA", sha, "0"]).unwrap(), ":42\r\n");
    assert_eq!(cmd(srv, c, &["FCALL", "f", "0"]).unwrap(), ":5\r\n");
    // FUNCTION STATS reads the running-script pointer (issue 10 #2).
    let stats = cmd(srv, c, &["FUNCTION", "STATS"]).unwrap();
    assert!(
        stats.starts_with("*4\r\n$14\r\nrunning_script\r\n$-1\r\n"),
        "{stats}"
    );
}

fn setup(srv: &mut Server, c: &mut Client) -> String {
    let lib = "#!lua name=l\nredis.register_function('f', function() return 5 end)\n\
               redis.register_function('p', function(k, a) return redis.call('ping', a[1]) end)";
    assert_eq!(
        cmd(srv, c, &["FUNCTION", "LOAD", lib]).unwrap(),
        "$1\r\nl\r\n"
    );
    let sha = cmd(srv, c, &["SCRIPT", "LOAD", "return 42"]).unwrap();
    sha.lines().nth(1).unwrap().to_string()
}

/// A panic in a command run by `redis.call` fails that EVAL only; even a
/// `pcall` around it cannot keep the script going.
#[test]
fn panic_under_redis_call_fails_only_that_command() {
    let (mut srv, mut c) = server();
    let sha = setup(&mut srv, &mut c);
    for script in [
        "return redis.call('ping', '__panic__')",
        "return redis.pcall('ping', '__panic__')",
        "local n = 0 while true do pcall(redis.call, 'ping', '__panic__') n = n + 1 end",
    ] {
        assert_eq!(cmd(&mut srv, &mut c, &["EVAL", script, "0"]), None);
        assert_clean(&mut srv);
        assert_works(&mut srv, &mut c, &sha);
    }
    assert_eq!(
        cmd(&mut srv, &mut c, &["FCALL", "p", "0", "__panic__"]),
        None
    );
    assert_clean(&mut srv);
    assert_works(&mut srv, &mut c, &sha);
}

/// A panic that unwinds through Lua's C frames leaves that VM unusable:
/// it is rebuilt, with the script cache and the libraries intact.
#[test]
fn panic_through_lua_rebuilds_the_vm() {
    let (mut srv, mut c) = server();
    let sha = setup(&mut srv, &mut c);
    let eval = [
        "EVAL",
        "return redis.pcall('ping', '__panic_through_lua__')",
        "0",
    ];
    assert_eq!(cmd(&mut srv, &mut c, &eval), None);
    assert_clean(&mut srv);
    assert_works(&mut srv, &mut c, &sha);
    let fcall = ["FCALL", "p", "0", "__panic_through_lua__"];
    assert_eq!(cmd(&mut srv, &mut c, &fcall), None);
    assert_clean(&mut srv);
    assert_works(&mut srv, &mut c, &sha);
}

/// A script that runs out of memory fails alone (issue 10 #8): the next
/// EVAL and SCRIPT LOAD work, and the memory is given back.
#[test]
fn out_of_memory_fails_alone() {
    let (mut srv, mut c) = server();
    let sha = setup(&mut srv, &mut c);
    let hog = "local t={} for i=1,1e9 do t[i]={i} end";
    let e = cmd(&mut srv, &mut c, &["EVAL", hog, "0"]).unwrap();
    assert!(e.ends_with(", not enough memory \r\n"), "{e}");
    let used = srv.script.memory();
    assert!(used < super::vm::MEMORY_LIMIT / 4, "{used}");
    assert_works(&mut srv, &mut c, &sha);
    let r = cmd(&mut srv, &mut c, &["SCRIPT", "LOAD", "return 'fresh'"]).unwrap();
    assert!(r.starts_with("$40\r\n"), "{r}");
    // Caught by the script itself, the error leaves the VM usable too.
    let caught = "local ok = pcall(function() local t={} for i=1,1e9 do t[i]={i} end end) \
                  collectgarbage() return {tostring(ok), #string.rep('x', 1000)}";
    let r = cmd(&mut srv, &mut c, &["EVAL", caught, "0"]).unwrap();
    assert_eq!(r, "*2\r\n$5\r\nfalse\r\n:1000\r\n");
}

/// A library that keeps the functions VM at its memory cap (in an upvalue)
/// does not take the server down: the engine's own calls outside a pcall
/// (the KEYS/ARGV tables, registry references) are not limited, since Lua
/// answers an unprotected "not enough memory" with exit(1).
#[test]
fn a_vm_kept_at_its_cap_still_serves() {
    let (mut srv, mut c) = server();
    let lib = "#!lua name=hog\nlocal keep = {}\n\
               redis.register_function('fill', function() \
                 local n = keep \
                 return tostring(pcall(function() for i = 1, 1e9 do n.x = {} n = n.x end end)) end)\n\
               redis.register_function('size', function(k, a) return {keep.x ~= nil, #k, #a} end)";
    assert_eq!(
        cmd(&mut srv, &mut c, &["FUNCTION", "LOAD", lib]).unwrap(),
        "$3\r\nhog\r\n"
    );
    assert_eq!(
        cmd(&mut srv, &mut c, &["FCALL", "fill", "0"]).unwrap(),
        "$5\r\nfalse\r\n"
    );
    // The function itself has no room left: that call fails, alone.
    let r = cmd(&mut srv, &mut c, &["FCALL", "size", "2", "k1", "k2", "a1"]).unwrap();
    assert_eq!(r, "-ERR Error running script size, not enough memory \r\n");
    // Deleting the library gives its memory back.
    assert_eq!(
        cmd(&mut srv, &mut c, &["FUNCTION", "DELETE", "hog"]).unwrap(),
        "+OK\r\n"
    );
    let lib = "#!lua name=small\nredis.register_function('k', function(k) return #k end)";
    assert_eq!(
        cmd(&mut srv, &mut c, &["FUNCTION", "LOAD", lib]).unwrap(),
        "$5\r\nsmall\r\n"
    );
    let r = cmd(&mut srv, &mut c, &["FCALL", "k", "2", "k1", "k2"]).unwrap();
    assert_eq!(r, ":2\r\n");
}
