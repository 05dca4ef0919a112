//! Test controls (OXIDIS, `enable-test-controls yes`): the server's clock, fault injection, seeded randomness, checkpoints, and the switch.

mod common;

use std::time::Duration;

use common::{start_with, Raw};
use oxidis::resp::value::Value;

const ON: &[&str] = &["--enable-test-controls", "yes"];
const DISABLED: &str =
    "ERR OXIDIS test controls are disabled: start the server with --enable-test-controls yes";

fn cmd(r: &mut Raw, args: &[&str]) -> Value {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    r.cmd(&a);
    r.read()
}

fn ok(r: &mut Raw, args: &[&str]) {
    assert_eq!(cmd(r, args), Value::Simple(b"OK".to_vec()), "{args:?}");
}

fn int(r: &mut Raw, args: &[&str]) -> i64 {
    match cmd(r, args) {
        Value::Int(n) => n,
        v => panic!("{args:?}: {v:?}"),
    }
}

/// Sends a command that must fail with `text`.
fn expect_err(r: &mut Raw, args: &[&str], text: &str) {
    assert_eq!(err(cmd(r, args)), text, "{args:?}");
}

fn bulk(v: &Value) -> String {
    String::from_utf8_lossy(v.as_bytes().unwrap_or_default()).into_owned()
}

fn strings(v: Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().map(bulk).collect(),
        v => panic!("{v:?}"),
    }
}

fn err(v: Value) -> String {
    match v {
        Value::Error(e) => String::from_utf8_lossy(&e).into_owned(),
        v => panic!("not an error: {v:?}"),
    }
}

/// Waits until the server has `n` blocked clients (the request has arrived).
fn wait_blocked(r: &mut Raw, n: usize) {
    for _ in 0..2000 {
        let info = bulk(&cmd(r, &["INFO", "clients"]));
        if info.contains(&format!("blocked_clients:{n}\r\n")) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("no {n} blocked clients");
}

#[test]
fn an_hour_ttl_expires_when_the_clock_advances_an_hour() {
    let h = start_with(ON);
    let mut c = common::conn(&h);
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("EX")
        .arg(3600)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("OXIDIS")
        .arg("CLOCK")
        .arg("ADVANCE")
        .arg(1_800_000)
        .query(&mut c)
        .unwrap();
    let ttl: i64 = redis::cmd("TTL").arg("k").query(&mut c).unwrap();
    assert!((1799..=1800).contains(&ttl), "{ttl}");
    let _: () = redis::cmd("OXIDIS")
        .arg("CLOCK")
        .arg("ADVANCE")
        .arg(1_800_000)
        .query(&mut c)
        .unwrap();
    let v: Option<String> = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(v, None);
}

#[test]
fn advance_expires_due_keys_actively_with_their_events() {
    let h = start_with(ON);
    let mut r = Raw::connect(&h);
    ok(&mut r, &["CONFIG", "SET", "notify-keyspace-events", "Ex"]);
    let mut sub = Raw::connect(&h);
    cmd(&mut sub, &["SUBSCRIBE", "__keyevent@0__:expired"]);
    ok(&mut r, &["SET", "soon", "v", "PX", "60000"]);
    ok(&mut r, &["SET", "later", "v", "PX", "120000"]);
    ok(&mut r, &["OXIDIS", "CLOCK", "ADVANCE", "60000"]);
    // Nobody read the key: the advance expired it, and the event went out.
    assert_eq!(
        strings(sub.read()),
        ["message", "__keyevent@0__:expired", "soon"]
    );
    assert_eq!(int(&mut r, &["DBSIZE"]), 1);
}

#[test]
fn blocking_timeouts_fire_on_an_advance() {
    let h = start_with(ON);
    let mut ctl = Raw::connect(&h);
    let mut a = Raw::connect(&h);
    let mut b = Raw::connect(&h);
    let mut x = Raw::connect(&h);
    a.cmd(&[b"BLPOP", b"k", b"5"]);
    b.cmd(&[b"BLMOVE", b"src", b"dst", b"LEFT", b"RIGHT", b"10"]);
    assert_eq!(bulk(&cmd(&mut ctl, &["XADD", "s", "1-1", "f", "v"])), "1-1");
    x.cmd(&[b"XREAD", b"BLOCK", b"5000", b"STREAMS", b"s", b"$"]);
    wait_blocked(&mut ctl, 3);
    ok(&mut ctl, &["OXIDIS", "CLOCK", "ADVANCE", "5000"]);
    assert_eq!(a.read(), Value::NullArray);
    assert_eq!(x.read(), Value::NullArray);
    // BLMOVE's 10 s have not passed yet.
    wait_blocked(&mut ctl, 1);
    ok(&mut ctl, &["OXIDIS", "CLOCK", "ADVANCE", "5000"]);
    assert_eq!(b.read(), Value::NullArray);
    wait_blocked(&mut ctl, 0);
}

#[test]
fn a_frozen_clock_keeps_ttls_and_time_still() {
    let h = start_with(ON);
    let mut r = Raw::connect(&h);
    ok(&mut r, &["OXIDIS", "CLOCK", "FREEZE"]);
    ok(&mut r, &["SET", "k", "v", "PX", "100000"]);
    let t = strings(cmd(&mut r, &["TIME"]));
    let now = int(&mut r, &["OXIDIS", "CLOCK", "GET"]);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(int(&mut r, &["PTTL", "k"]), 100000);
    assert_eq!(strings(cmd(&mut r, &["TIME"])), t);
    assert_eq!(int(&mut r, &["OXIDIS", "CLOCK", "GET"]), now);
    ok(&mut r, &["OXIDIS", "CLOCK", "ADVANCE", "250"]);
    assert_eq!(int(&mut r, &["PTTL", "k"]), 99750);
    assert_eq!(int(&mut r, &["OXIDIS", "CLOCK", "GET"]), now + 250);
    ok(&mut r, &["OXIDIS", "CLOCK", "RESUME"]);
    std::thread::sleep(Duration::from_millis(20));
    assert!(int(&mut r, &["OXIDIS", "CLOCK", "GET"]) > now + 250);
}

#[test]
fn clock_set_moves_time_stream_ids_and_idle_time() {
    let h = start_with(ON);
    let mut r = Raw::connect(&h);
    ok(&mut r, &["OXIDIS", "CLOCK", "FREEZE"]);
    ok(&mut r, &["OXIDIS", "CLOCK", "SET", "1000000000123"]);
    assert_eq!(int(&mut r, &["OXIDIS", "CLOCK", "GET"]), 1000000000123);
    assert_eq!(strings(cmd(&mut r, &["TIME"])), ["1000000000", "123000"]);
    assert_eq!(
        bulk(&cmd(&mut r, &["XADD", "s", "*", "f", "v"])),
        "1000000000123-0"
    );
    ok(&mut r, &["SET", "k", "v"]);
    ok(&mut r, &["OXIDIS", "CLOCK", "ADVANCE", "90000"]);
    assert_eq!(int(&mut r, &["OBJECT", "IDLETIME", "k"]), 90);
    // Errors: a bad number, a time before the epoch, extra words.
    expect_err(
        &mut r,
        &["OXIDIS", "CLOCK", "ADVANCE", "-1"],
        "ERR value is not an integer or out of range",
    );
    expect_err(
        &mut r,
        &["OXIDIS", "CLOCK", "SET", "99999999999999999"],
        "ERR the clock must stay between the epoch and year 275000",
    );
    expect_err(
        &mut r,
        &["OXIDIS", "CLOCK", "GET", "x"],
        "ERR unknown subcommand or wrong number of arguments for 'CLOCK'. Try OXIDIS HELP.",
    );
}

#[test]
fn client_pause_ends_when_the_clock_passes_it() {
    let h = start_with(ON);
    let mut ctl = Raw::connect(&h);
    let mut writer = Raw::connect(&h);
    ok(&mut ctl, &["CLIENT", "PAUSE", "100000", "WRITE"]);
    writer.cmd(&[b"SET", b"k", b"v"]);
    // Held: the server answers others meanwhile.
    assert_eq!(cmd(&mut ctl, &["GET", "k"]), Value::Null);
    ok(&mut ctl, &["OXIDIS", "CLOCK", "ADVANCE", "100000"]);
    assert_eq!(writer.read(), Value::Simple(b"OK".to_vec()));
    let list = bulk(&cmd(&mut ctl, &["CLIENT", "LIST"]));
    assert!(list.contains(" age=100 "), "{list}");
}

#[test]
fn client_idle_timeout_follows_the_clock() {
    let h = start_with(&["--enable-test-controls", "yes", "--timeout", "100"]);
    let mut idle = Raw::connect(&h);
    assert_eq!(cmd(&mut idle, &["PING"]), Value::Simple(b"PONG".to_vec()));
    let mut ctl = Raw::connect(&h);
    // A client blocked meanwhile is not idle; once answered, it counts as
    // active from then on (Redis's lastinteraction on write).
    let mut waiter = Raw::connect(&h);
    waiter.cmd(&[b"BLPOP", b"q", b"0"]);
    wait_blocked(&mut ctl, 1);
    ok(&mut ctl, &["OXIDIS", "CLOCK", "ADVANCE", "101000"]);
    assert!(idle.closed_within(Duration::from_secs(10)));
    cmd(&mut ctl, &["RPUSH", "q", "x"]);
    assert_eq!(strings(waiter.read()), ["q", "x"]);
    assert_eq!(cmd(&mut waiter, &["PING"]), Value::Simple(b"PONG".to_vec()));
}

#[test]
fn two_servers_have_independent_clocks() {
    let a = start_with(ON);
    let b = start_with(ON);
    let mut ra = Raw::connect(&a);
    let mut rb = Raw::connect(&b);
    ok(&mut ra, &["SET", "k", "v", "EX", "60"]);
    ok(&mut rb, &["SET", "k", "v", "EX", "60"]);
    ok(&mut ra, &["OXIDIS", "CLOCK", "ADVANCE", "3600000"]);
    assert_eq!(cmd(&mut ra, &["GET", "k"]), Value::Null);
    assert_eq!(bulk(&cmd(&mut rb, &["GET", "k"])), "v");
    let ta = int(&mut ra, &["OXIDIS", "CLOCK", "GET"]);
    let tb = int(&mut rb, &["OXIDIS", "CLOCK", "GET"]);
    assert!(ta - tb >= 3_500_000, "{ta} {tb}");
}

#[test]
fn fault_error_answers_verbatim_for_count_requests() {
    let h = start_with(ON);
    let mut r = Raw::connect(&h);
    ok(&mut r, &["SET", "k", "v"]);
    ok(
        &mut r,
        &[
            "OXIDIS",
            "FAULT",
            "ADD",
            "COMMAND",
            "get",
            "ERROR",
            "LOADING fake",
        ],
    );
    r.cmd(&[b"GET", b"k"]);
    assert_eq!(r.read_raw(), b"-LOADING fake\r\n");
    assert_eq!(bulk(&cmd(&mut r, &["GET", "k"])), "v");
    ok(
        &mut r,
        &[
            "oxidis", "fault", "add", "command", "GET", "error", "ERR boom", "count", "2",
        ],
    );
    assert_eq!(
        strings(
            cmd(&mut r, &["OXIDIS", "FAULT", "LIST"])
                .clone()
                .into_first()
        ),
        ["COMMAND", "get", "ERROR", "ERR boom", "COUNT", "2"]
    );
    expect_err(&mut r, &["GET", "k"], "ERR boom");
    assert_eq!(bulk(&cmd(&mut r, &["SET", "k", "w"])), "OK");
    expect_err(&mut r, &["GET", "k"], "ERR boom");
    assert_eq!(bulk(&cmd(&mut r, &["GET", "k"])), "w");
    assert_eq!(
        cmd(&mut r, &["OXIDIS", "FAULT", "LIST"]),
        Value::Array(vec![])
    );
    // COUNT 0: until cleared. ALL spares OXIDIS itself.
    ok(
        &mut r,
        &[
            "OXIDIS",
            "FAULT",
            "ADD",
            "ALL",
            "ERROR",
            "TRYAGAIN later",
            "COUNT",
            "0",
        ],
    );
    for _ in 0..3 {
        expect_err(&mut r, &["PING"], "TRYAGAIN later");
    }
    ok(&mut r, &["OXIDIS", "FAULT", "CLEAR"]);
    assert_eq!(cmd(&mut r, &["PING"]), Value::Simple(b"PONG".to_vec()));
    // Bad forms.
    for bad in [
        &["OXIDIS", "FAULT", "ADD", "COMMAND"][..],
        &["OXIDIS", "FAULT", "ADD", "ALL", "EXPLODE"],
        &["OXIDIS", "FAULT", "ADD", "ALL", "CLOSE", "COUNT"],
        &["OXIDIS", "FAULT", "ADD", "NOBODY", "CLOSE"],
    ] {
        assert_eq!(err(cmd(&mut r, bad)), "ERR syntax error", "{bad:?}");
    }
    expect_err(
        &mut r,
        &["OXIDIS", "FAULT", "ADD", "ALL", "DELAY", "x"],
        "ERR value is not an integer or out of range",
    );
}

trait First {
    fn into_first(self) -> Value;
}

impl First for Value {
    /// The first element of an array reply.
    fn into_first(self) -> Value {
        match self {
            Value::Array(mut v) if !v.is_empty() => v.remove(0),
            v => panic!("{v:?}"),
        }
    }
}

#[test]
fn fault_close_drops_the_connection_without_a_reply() {
    let h = start_with(ON);
    let mut ctl = Raw::connect(&h);
    ok(
        &mut ctl,
        &["OXIDIS", "FAULT", "ADD", "COMMAND", "ping", "CLOSE"],
    );
    let mut victim = Raw::connect(&h);
    victim.cmd(&[b"PING"]);
    assert!(victim.closed_within(Duration::from_secs(10)));
    assert!(victim.buf.is_empty());
    let mut again = Raw::connect(&h);
    assert_eq!(cmd(&mut again, &["PING"]), Value::Simple(b"PONG".to_vec()));
}

#[test]
fn fault_on_a_client_name_and_a_delay_that_blocks_nobody_else() {
    let h = start_with(ON);
    let mut slow = Raw::connect(&h);
    ok(&mut slow, &["CLIENT", "SETNAME", "slowpoke"]);
    let mut other = Raw::connect(&h);
    ok(
        &mut other,
        &[
            "OXIDIS", "FAULT", "ADD", "CLIENT", "slowpoke", "DELAY", "3000",
        ],
    );
    slow.cmd(&[b"SET", b"k", b"v"]);
    // The other client is answered while the slow one's reply is held.
    assert_eq!(cmd(&mut other, &["PING"]), Value::Simple(b"PONG".to_vec()));
    assert!(slow.try_read_raw(Duration::ZERO).is_none());
    assert_eq!(slow.read(), Value::Simple(b"OK".to_vec()));
    // The command ran; the fault was used once.
    assert_eq!(bulk(&cmd(&mut other, &["GET", "k"])), "v");
    assert_eq!(cmd(&mut slow, &["PING"]), Value::Simple(b"PONG".to_vec()));
    // A name-targeted error leaves other clients alone.
    ok(
        &mut other,
        &[
            "OXIDIS", "FAULT", "ADD", "CLIENT", "slowpoke", "ERROR", "ERR nope", "COUNT", "0",
        ],
    );
    expect_err(&mut slow, &["GET", "k"], "ERR nope");
    assert_eq!(bulk(&cmd(&mut other, &["GET", "k"])), "v");
}

/// The picks a server makes after `OXIDIS SEED seed`, on the same data.
fn picks(h: &oxidis::Handle, seed: &str) -> Vec<String> {
    picks_over(Raw::connect(h), seed)
}

fn picks_over(mut r: Raw, seed: &str) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..200 {
        ok(&mut r, &["SET", &format!("key:{i}"), "v"]);
        cmd(&mut r, &["SADD", "set", &format!("m{i}")]);
        cmd(&mut r, &["HSET", "hash", &format!("f{i}"), "v"]);
        cmd(&mut r, &["ZADD", "zset", &i.to_string(), &format!("z{i}")]);
    }
    ok(&mut r, &["OXIDIS", "SEED", seed]);
    for _ in 0..10 {
        out.push(bulk(&cmd(&mut r, &["RANDOMKEY"])));
        out.push(bulk(&cmd(&mut r, &["SRANDMEMBER", "set"])));
        out.push(bulk(&cmd(&mut r, &["SPOP", "set"])));
        out.push(bulk(&cmd(&mut r, &["HRANDFIELD", "hash"])));
        out.push(bulk(&cmd(&mut r, &["ZRANDMEMBER", "zset"])));
    }
    out.extend(strings(cmd(&mut r, &["SRANDMEMBER", "set", "-5"])));
    let lua = cmd(
        &mut r,
        &[
            "EVAL",
            "return {math.random(1000000), math.random(1000000)}",
            "0",
        ],
    );
    out.push(format!("{lua:?}"));
    out
}

#[test]
fn seed_makes_random_picks_repeat_across_servers() {
    // All running at once: their threads (and anything derived from their
    // stacks, as a hash seed could be) differ.
    let servers = [start_with(ON), start_with(ON), start_with(ON)];
    let a = picks(&servers[0], "42");
    let b = picks(&servers[1], "42");
    assert_eq!(a, b);
    let c = picks(&servers[2], "43");
    assert_ne!(a, c);
}

/// An oxidis-server process, killed on drop.
struct Process(std::process::Child, u16);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the binary with `args` (a config file first, if any) on a free
/// port, and waits until it accepts connections.
fn spawn(args: &[&str]) -> Process {
    let port = common::real_redis::free_port();
    let dir = common::real_redis::temp_dir("testctl");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_oxidis-server"))
        .args(args)
        .args(["--port", &port.to_string(), "--save", ""])
        .arg("--dir")
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let p = Process(child, port);
    for _ in 0..2000 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return p;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("oxidis-server did not start");
}

/// Two processes (hash seeds and stacks differ between them), one switched
/// on by the flag and one by its config file, pick alike.
#[test]
fn seed_repeats_across_processes_switched_on_by_flag_or_config_file() {
    let dir = common::real_redis::temp_dir("testctl-conf");
    let conf = dir.join("oxidis.conf");
    std::fs::write(&conf, "enable-test-controls yes\n").unwrap();
    let a = spawn(&["--enable-test-controls", "yes"]);
    let b = spawn(&[conf.to_str().unwrap()]);
    let pa = picks_over(Raw::connect_to(("127.0.0.1", a.1)), "7");
    let pb = picks_over(Raw::connect_to(("127.0.0.1", b.1)), "7");
    assert_eq!(pa, pb);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn checkpoint_restores_every_database_with_ttls() {
    let h = start_with(ON);
    let mut r = Raw::connect(&h);
    ok(&mut r, &["SET", "a", "1"]);
    ok(&mut r, &["SET", "b", "2", "EX", "100"]);
    cmd(&mut r, &["RPUSH", "l", "x", "y"]);
    ok(&mut r, &["SELECT", "1"]);
    cmd(&mut r, &["HSET", "h", "f", "v"]);
    ok(&mut r, &["SELECT", "0"]);
    ok(&mut r, &["OXIDIS", "CHECKPOINT", "SAVE", "base"]);
    // Change everything.
    cmd(&mut r, &["DEL", "a"]);
    ok(&mut r, &["SET", "b", "9"]);
    cmd(&mut r, &["RPUSH", "l", "z"]);
    ok(&mut r, &["SET", "new", "n"]);
    ok(&mut r, &["FLUSHDB"]);
    ok(&mut r, &["SELECT", "1"]);
    ok(&mut r, &["FLUSHDB"]);
    ok(&mut r, &["SELECT", "0"]);
    ok(&mut r, &["SET", "new", "n"]);
    let mut watcher = Raw::connect(&h);
    ok(&mut watcher, &["WATCH", "new"]);
    ok(&mut watcher, &["MULTI"]);
    ok(&mut r, &["OXIDIS", "CHECKPOINT", "RESTORE", "base"]);
    assert_eq!(bulk(&cmd(&mut r, &["GET", "a"])), "1");
    assert_eq!(bulk(&cmd(&mut r, &["GET", "b"])), "2");
    let ttl = int(&mut r, &["TTL", "b"]);
    assert!((99..=100).contains(&ttl), "{ttl}");
    assert_eq!(int(&mut r, &["TTL", "a"]), -1);
    assert_eq!(
        strings(cmd(&mut r, &["LRANGE", "l", "0", "-1"])),
        ["x", "y"]
    );
    assert_eq!(cmd(&mut r, &["GET", "new"]), Value::Null);
    assert_eq!(int(&mut r, &["DBSIZE"]), 3);
    ok(&mut r, &["SELECT", "1"]);
    assert_eq!(bulk(&cmd(&mut r, &["HGET", "h", "f"])), "v");
    // The watched key changed: the transaction fails.
    assert_eq!(
        cmd(&mut watcher, &["SET", "x", "1"]),
        Value::Simple(b"QUEUED".to_vec())
    );
    assert_eq!(cmd(&mut watcher, &["EXEC"]), Value::NullArray);
    // The checkpoint stays for more restores; the copy is independent.
    cmd(&mut r, &["HSET", "h", "f", "changed"]);
    ok(&mut r, &["OXIDIS", "CHECKPOINT", "RESTORE", "base"]);
    assert_eq!(bulk(&cmd(&mut r, &["HGET", "h", "f"])), "v");
    ok(&mut r, &["OXIDIS", "CHECKPOINT", "SAVE", "another"]);
    assert_eq!(
        strings(cmd(&mut r, &["OXIDIS", "CHECKPOINT", "LIST"])),
        ["another", "base"]
    );
    ok(&mut r, &["OXIDIS", "CHECKPOINT", "DEL", "base"]);
    expect_err(
        &mut r,
        &["OXIDIS", "CHECKPOINT", "RESTORE", "base"],
        "ERR no such checkpoint",
    );
    expect_err(
        &mut r,
        &["OXIDIS", "CHECKPOINT", "DEL", "base"],
        "ERR no such checkpoint",
    );
}

#[test]
fn handle_helpers_send_the_controls() {
    let h = start_with(ON);
    let mut r = Raw::connect(&h);
    ok(&mut r, &["SET", "k", "v", "EX", "10"]);
    h.checkpoint_save("start").unwrap();
    let t = h.clock_ms().unwrap();
    h.advance_clock(10_000).unwrap();
    assert!(h.clock_ms().unwrap() >= t + 10_000);
    assert_eq!(cmd(&mut r, &["GET", "k"]), Value::Null);
    h.checkpoint_restore("start").unwrap();
    // Restored with its expiry time, which has passed on the moved clock.
    assert_eq!(cmd(&mut r, &["GET", "k"]), Value::Null);
    let e = h.checkpoint_restore("nosuch").unwrap_err();
    assert_eq!(e.to_string(), "ERR no such checkpoint");
    let off = common::start();
    assert_eq!(off.advance_clock(1).unwrap_err().to_string(), DISABLED);
}

#[test]
fn controls_are_not_propagated_but_expired_keys_are() {
    let h = start_with(ON);
    let tap = h.tap_propagation();
    let mut r = Raw::connect(&h);
    ok(&mut r, &["SET", "a", "1", "PX", "1000"]);
    ok(&mut r, &["OXIDIS", "CHECKPOINT", "SAVE", "x"]);
    ok(&mut r, &["SET", "b", "2"]);
    ok(&mut r, &["OXIDIS", "CHECKPOINT", "RESTORE", "x"]);
    ok(&mut r, &["OXIDIS", "CLOCK", "ADVANCE", "1000"]);
    ok(&mut r, &["SET", "end", "1"]);
    let mut got = Vec::new();
    while !String::from_utf8_lossy(&got).contains("$3\r\nend\r\n") {
        got.extend(tap.take_at_least(1, Duration::from_secs(10)));
    }
    let text = String::from_utf8_lossy(&got);
    assert!(!text.to_ascii_lowercase().contains("oxidis"), "{text}");
    assert!(text.contains("*2\r\n$3\r\nDEL\r\n$1\r\na\r\n"), "{text}");
}

#[test]
fn checkpoint_restore_serves_clients_blocked_on_restored_keys() {
    let h = start_with(ON);
    let mut r = Raw::connect(&h);
    cmd(&mut r, &["RPUSH", "q", "job"]);
    ok(&mut r, &["OXIDIS", "CHECKPOINT", "SAVE", "one-job"]);
    cmd(&mut r, &["DEL", "q"]);
    let mut worker = Raw::connect(&h);
    worker.cmd(&[b"BLPOP", b"q", b"0"]);
    wait_blocked(&mut r, 1);
    ok(&mut r, &["OXIDIS", "CHECKPOINT", "RESTORE", "one-job"]);
    assert_eq!(strings(worker.read()), ["q", "job"]);
}

#[test]
fn with_the_switch_off_every_form_is_refused_and_hidden() {
    let h = common::start();
    let mut r = Raw::connect(&h);
    for form in [
        &["OXIDIS"][..],
        &["OXIDIS", "HELP"],
        &["oxidis", "clock", "get"],
        &["OXIDIS", "CLOCK", "ADVANCE", "1000"],
        &["OXIDIS", "CLOCK", "FREEZE"],
        &["OXIDIS", "FAULT", "ADD", "ALL", "CLOSE"],
        &["OXIDIS", "FAULT", "LIST"],
        &["OXIDIS", "SEED", "1"],
        &["OXIDIS", "CHECKPOINT", "SAVE", "x"],
        &["OXIDIS", "CHECKPOINT", "LIST"],
        &["OXIDIS", "NOSUCH"],
    ] {
        assert_eq!(err(cmd(&mut r, form)), DISABLED, "{form:?}");
    }
    // Hidden from COMMAND and CONFIG GET *; the switch is immutable.
    let list = strings(cmd(&mut r, &["COMMAND", "LIST"]));
    assert!(!list.iter().any(|n| n == "oxidis"));
    assert_eq!(
        cmd(&mut r, &["COMMAND", "INFO", "oxidis"]),
        Value::Array(vec![Value::Null])
    );
    assert_eq!(
        strings(cmd(&mut r, &["CONFIG", "GET", "enable-test-controls"])),
        ["enable-test-controls", "no"]
    );
    let all = strings(cmd(&mut r, &["CONFIG", "GET", "*"]));
    assert!(!all.iter().any(|n| n == "enable-test-controls"));
    expect_err(&mut r, &["CONFIG", "SET", "enable-test-controls", "yes"], "ERR CONFIG SET failed (possibly related to argument 'enable-test-controls') - can't set immutable config");
}

#[test]
fn with_the_switch_on_the_command_is_listed_and_helps() {
    let h = start_with(ON);
    let mut r = Raw::connect(&h);
    let off = common::start();
    let mut ro = Raw::connect(&off);
    assert_eq!(
        int(&mut r, &["COMMAND", "COUNT"]),
        int(&mut ro, &["COMMAND", "COUNT"]) + 1
    );
    let list = strings(cmd(&mut r, &["COMMAND", "LIST"]));
    assert!(list.iter().any(|n| n == "oxidis"));
    assert_eq!(
        strings(cmd(&mut r, &["CONFIG", "GET", "enable-test-controls"])),
        ["enable-test-controls", "yes"]
    );
    let help = match cmd(&mut r, &["OXIDIS", "HELP"]) {
        Value::Array(lines) => lines
            .iter()
            .map(|l| match l {
                Value::Simple(s) => String::from_utf8_lossy(s).into_owned(),
                v => panic!("{v:?}"),
            })
            .collect::<Vec<_>>(),
        v => panic!("{v:?}"),
    };
    for sub in [
        "CLOCK ADVANCE",
        "FAULT ADD",
        "SEED",
        "CHECKPOINT RESTORE",
        "HELP",
    ] {
        assert!(help.iter().any(|l| l.starts_with(sub)), "{sub}");
    }
    expect_err(
        &mut r,
        &["OXIDIS", "NOSUCH"],
        "ERR unknown subcommand or wrong number of arguments for 'NOSUCH'. Try OXIDIS HELP.",
    );
    expect_err(
        &mut r,
        &["OXIDIS"],
        "ERR wrong number of arguments for 'oxidis' command",
    );
    // Not from scripts, not inside MULTI.
    let e = err(cmd(
        &mut r,
        &["EVAL", "return redis.call('oxidis','clock','get')", "0"],
    ));
    assert!(
        e.starts_with("ERR This Redis command is not allowed from script"),
        "{e}"
    );
    ok(&mut r, &["MULTI"]);
    expect_err(
        &mut r,
        &["OXIDIS", "CLOCK", "GET"],
        "ERR Command not allowed inside a transaction",
    );
}
