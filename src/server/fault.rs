//! A command that panics fails alone: it is answered with an error and logged, the thread-local state it left is reset, and every connection goes on.
//!
//! Redis would crash on such a bug (`serverPanic`); a server exposed to
//! clients must not let one request take it, or its client slots, down.
//! Data a command had half changed stays as it was left: the fault is a bug
//! to fix, this only keeps it from spreading (see compat/KNOWN_DIFFS.md).

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::client::Client;
use super::Server;
use crate::command::args::Args;
use crate::command::dispatch;
use crate::error::{CmdResult, Error};

/// Runs a command's handler (from `dispatch::call`, the one place handlers
/// are run: a connection, EXEC, `redis.call`, a woken blocked client).
/// `Err` when it panicked: the error to answer in its place.
pub fn run_handler(
    name: &str,
    in_exec: bool,
    handler: impl FnOnce() -> CmdResult,
) -> Result<CmdResult, Error> {
    match catch_unwind(AssertUnwindSafe(handler)) {
        Ok(r) => Ok(r),
        Err(payload) => {
            // Inside EXEC or a script, the state belongs to the command around
            // this one, which goes on.
            let in_script = !in_exec && reset_thread_state();
            crate::log::warning(&format!(
                "Command '{name}' panicked ({}){}; it was answered with an error",
                message(payload.as_ref()),
                if in_script { " inside a script" } else { "" },
            ));
            Err(Error::internal(name))
        }
    }
}

/// Runs one request from a connection, catching a panic outside the
/// handler too (the checks before it, the work after it: keyspace events,
/// serving blocked clients).
pub fn dispatch_guarded(srv: &mut Server, c: &mut Client, args: &Args) {
    let reply_start = c.reply.len();
    let Err(payload) = catch_unwind(AssertUnwindSafe(|| {
        #[cfg(test)]
        injected_outside_handler(args);
        dispatch::dispatch(srv, c, args)
    })) else {
        return;
    };
    reset_thread_state();
    if c.reply.len() >= reply_start {
        c.reply.buf.truncate(reply_start);
    }
    c.pushed.retain(|&(s, _)| s < reply_start);
    let name = String::from_utf8_lossy(args.at(0)).to_lowercase();
    let e = Error::internal(&name);
    c.reply.error_line(&e.text());
    srv.stats.error(e.code());
    crate::log::warning(&format!(
        "Request '{name}' panicked ({}); answered with an error, client id={} addr={}",
        message(payload.as_ref()),
        c.id,
        c.addr
    ));
}

/// Clears what a command sets for its duration on the data thread and
/// resets on return, which a panic skipped: the frozen clock, CLIENT
/// NO-TOUCH, the running script. True when a script was running.
fn reset_thread_state() -> bool {
    crate::clock::set_snapshot(0);
    crate::db::set_no_touch(false);
    crate::script::forget_run()
}

fn message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "no message"
    }
}

/// Test builds only: a command with this argument panics inside `call`,
/// after the clock and NO-TOUCH are set (see `dispatch::call`).
#[cfg(test)]
pub const PANIC_ARG: &[u8] = b"oxidis:test:panic";

/// Test builds only: a request with this argument panics before dispatch,
/// as a fault in the checks around a handler would.
#[cfg(test)]
pub const PANIC_GATE_ARG: &[u8] = b"oxidis:test:panic-gate";

#[cfg(test)]
fn injected_outside_handler(args: &Args) {
    if args.from(1).any(|a| a == PANIC_GATE_ARG) {
        panic!("injected fault outside a handler (test build)");
    }
}

/// Test builds only: a client named this makes its connection task panic,
/// outside any command (see `conn::serve`).
#[cfg(test)]
pub const PANIC_TASK_NAME: &[u8] = b"oxidis-test-panic-task";

#[cfg(test)]
pub fn injected(args: &Args) {
    if args.from(1).any(|a| a == PANIC_ARG) {
        panic!("injected fault (test build)");
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    fn start(flags: &[&str]) -> crate::Handle {
        let mut args: Vec<String> = vec!["--port".into(), "0".into()];
        args.extend(flags.iter().map(|s| s.to_string()));
        crate::start(crate::config::from_args(&args).expect("flags")).expect("server")
    }

    /// Sends inline requests and reads `replies` whole replies (or until
    /// the peer closes); returns their bytes.
    fn ask(s: &mut TcpStream, req: &str, replies: usize) -> String {
        s.write_all(req.as_bytes()).expect("write");
        let mut out = Vec::new();
        let mut b = [0u8; 4096];
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        loop {
            let (mut n, mut at) = (0, 0);
            while let Ok(Some((_, used))) = crate::resp::value::parse_value(&out[at..]) {
                at += used;
                n += 1;
            }
            if n >= replies {
                break;
            }
            match s.read(&mut b) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&b[..n]),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    fn connect(h: &crate::Handle) -> TcpStream {
        TcpStream::connect(h.addr()).expect("connect")
    }

    fn connected_clients(h: &crate::Handle) -> String {
        let mut s = connect(h);
        let info = ask(&mut s, "INFO clients\r\n", 3);
        let line = info
            .lines()
            .find(|l| l.starts_with("connected_clients:"))
            .unwrap_or_default()
            .to_string();
        line
    }

    const INTERNAL_GET: &str =
        "-ERR internal error in 'get' command, the command was not completed (see the server log)\r\n";

    #[test]
    fn a_panicking_command_fails_alone() {
        let h = start(&[]);
        let mut s = connect(&h);
        let got = ask(
            &mut s,
            "SET k v\r\nCLIENT NO-TOUCH on\r\nGET oxidis:test:panic\r\nGET k\r\nPING\r\n",
            5,
        );
        assert_eq!(
            got,
            format!("+OK\r\n+OK\r\n{INTERNAL_GET}$1\r\nv\r\n+PONG\r\n")
        );
        // In a transaction, the command that panics fails and the others run.
        let got = ask(
            &mut s,
            "MULTI\r\nSET a 1\r\nGET oxidis:test:panic\r\nSET b 2\r\nEXEC\r\nMGET a b\r\n",
            6,
        );
        assert_eq!(
            got,
            format!("+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n+OK\r\n{INTERNAL_GET}+OK\r\n*2\r\n$1\r\n1\r\n$1\r\n2\r\n")
        );
        // A fault around the handler (the checks, the work after it).
        let got = ask(&mut s, "GET oxidis:test:panic-gate\r\nPING\r\n", 2);
        assert_eq!(got, format!("{INTERNAL_GET}+PONG\r\n"));
        let mut other = connect(&h);
        assert_eq!(ask(&mut other, "PING\r\n", 1), "+PONG\r\n");
        let stats = ask(&mut other, "INFO errorstats\r\n", 1);
        assert!(stats.contains("errorstat_ERR:count=3"), "{stats}");
    }

    /// A panic inside `redis.call` fails that call, as a command error
    /// would; the script's context and the Lua VM stay sound: FUNCTION
    /// STATS (which reads the context) answers, and scripts go on running,
    /// errors included, however many times it happens.
    #[test]
    fn a_panic_inside_a_script_fails_the_call_only() {
        let h = start(&[]);
        let mut s = connect(&h);
        let got = ask(
            &mut s,
            "EVAL \"return redis.pcall('get','oxidis:test:panic')\" 0\r\n",
            1,
        );
        assert_eq!(got, INTERNAL_GET);
        let got = ask(
            &mut s,
            "EVAL \"redis.call('get','oxidis:test:panic') return 1\" 0\r\n",
            1,
        );
        assert!(
            got.starts_with(&INTERNAL_GET[..INTERNAL_GET.len() - 2]),
            "{got}"
        );
        let stats = ask(&mut s, "FUNCTION STATS\r\n", 1);
        assert!(
            stats.starts_with("*4\r\n$14\r\nrunning_script\r\n$-1\r\n"),
            "{stats}"
        );
        for i in 0..300 {
            let got = ask(
                &mut s,
                "EVAL \"return redis.call('get','oxidis:test:panic')\" 0\r\nEVAL \"return redis.call('nosuchcmd')\" 0\r\nEVAL \"return 1\" 0\r\n",
                3,
            );
            assert!(
                got.contains("-ERR Unknown Redis command"),
                "round {i}: {got}"
            );
            assert!(got.ends_with(":1\r\n"), "round {i}: {got}");
        }
    }

    /// A panic in a connection task itself (outside any command) closes that
    /// connection only, and its client leaves CLIENT LIST and `maxclients`.
    #[test]
    fn a_task_that_panics_still_removes_its_client() {
        let h = start(&["--maxclients", "3"]);
        for _ in 0..5 {
            let mut s = connect(&h);
            let got = ask(&mut s, "CLIENT SETNAME oxidis-test-panic-task\r\n", 2);
            assert!(!got.contains("PONG"), "{got}");
            let mut b = [0u8; 16];
            s.set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            assert!(
                matches!(s.read(&mut b), Ok(0) | Err(_)),
                "connection stays open"
            );
        }
        // Removal happens as the task unwinds, before the socket's close is seen.
        let mut a = connect(&h);
        let mut b = connect(&h);
        assert_eq!(ask(&mut a, "PING\r\n", 1), "+PONG\r\n");
        assert_eq!(ask(&mut b, "PING\r\n", 1), "+PONG\r\n");
        let list = ask(&mut a, "CLIENT LIST\r\n", 3);
        assert_eq!(list.matches("id=").count(), 2, "{list}");
        drop((a, b));
        for _ in 0..100 {
            if connected_clients(&h) == "connected_clients:1" {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("clients not removed: {}", connected_clients(&h));
    }
}
