//! Server and connection commands over a real socket: CLIENT (SETINFO, LIST,
//! KILL, PAUSE, UNBLOCK, REPLY), SLOWLOG, MONITOR, INFO, CONFIG, COMMAND, DEBUG.

mod common;

use std::time::Duration;

use common::{start, start_with, Raw};
use oxidis::resp::value::Value;

fn bulk(v: &Value) -> String {
    String::from_utf8_lossy(v.as_bytes().unwrap_or_default()).into_owned()
}

fn cmd(r: &mut Raw, args: &[&str]) -> Value {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    r.cmd(&a);
    r.read()
}

fn client_id(r: &mut Raw) -> i64 {
    match cmd(r, &["CLIENT", "ID"]) {
        Value::Int(n) => n,
        v => panic!("{v:?}"),
    }
}

/// Waits (bounded) until CLIENT LIST shows client `id` with flag `flag`.
fn wait_for_flag(r: &mut Raw, id: i64, flag: char) {
    for _ in 0..500 {
        let list = bulk(&cmd(r, &["CLIENT", "LIST", "ID", &id.to_string()]));
        if let Some(f) = list.split(' ').find_map(|f| f.strip_prefix("flags=")) {
            if f.contains(flag) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("client {id} never got flag {flag}");
}

#[test]
fn client_setinfo_shows_in_list_and_info() {
    let h = start();
    let mut r = Raw::connect(&h);
    assert_eq!(
        cmd(
            &mut r,
            &["CLIENT", "SETINFO", "LIB-NAME", "go-redis(,go1.22)"]
        ),
        Value::Simple(b"OK".to_vec())
    );
    assert_eq!(
        cmd(&mut r, &["CLIENT", "SETINFO", "lib-ver", "9.5.1"]),
        Value::Simple(b"OK".to_vec())
    );
    let info = bulk(&cmd(&mut r, &["CLIENT", "INFO"]));
    assert!(
        info.ends_with(" resp=2 lib-name=go-redis(,go1.22) lib-ver=9.5.1\n"),
        "{info}"
    );
    assert_eq!(
        cmd(&mut r, &["CLIENT", "SETINFO", "lib-foo", "x"]),
        Value::Error(b"ERR Unrecognized option 'lib-foo'".to_vec())
    );
    assert_eq!(
        cmd(&mut r, &["CLIENT", "SETINFO", "lib-name", "a b"]),
        Value::Error(
            b"ERR lib-name cannot contain spaces, newlines or special characters.".to_vec()
        )
    );
    assert_eq!(
        cmd(&mut r, &["CLIENT", "SETINFO", "lib-name"]),
        Value::Error(b"ERR wrong number of arguments for 'client|setinfo' command".to_vec())
    );
    // An empty value clears it.
    cmd(&mut r, &["CLIENT", "SETINFO", "lib-name", ""]);
    let info = bulk(&cmd(&mut r, &["CLIENT", "INFO"]));
    assert!(info.contains(" lib-name= lib-ver=9.5.1\n"), "{info}");
    assert_eq!(
        cmd(&mut r, &["CLIENT", "NO-TOUCH", "on"]),
        Value::Simple(b"OK".to_vec())
    );
    let info = bulk(&cmd(&mut r, &["CLIENT", "INFO"]));
    assert!(info.contains(" flags=T "), "{info}");
}

#[test]
fn client_list_fields_and_filters() {
    let h = start();
    let mut a = Raw::connect(&h);
    let mut b = Raw::connect(&h);
    let id_a = client_id(&mut a);
    let id_b = client_id(&mut b);
    cmd(&mut b, &["CLIENT", "SETNAME", "bee"]);
    let list = bulk(&cmd(&mut a, &["CLIENT", "LIST"]));
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    let names: Vec<&str> = lines[0]
        .split(' ')
        .map(|f| f.split('=').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "id",
            "addr",
            "laddr",
            "fd",
            "name",
            "age",
            "idle",
            "flags",
            "db",
            "sub",
            "psub",
            "ssub",
            "multi",
            "qbuf",
            "qbuf-free",
            "argv-mem",
            "multi-mem",
            "rbs",
            "rbp",
            "obl",
            "oll",
            "omem",
            "tot-mem",
            "events",
            "cmd",
            "user",
            "redir",
            "resp",
            "lib-name",
            "lib-ver"
        ]
    );
    assert!(lines[0].starts_with(&format!("id={id_a} addr=127.0.0.1:")));
    assert!(lines[0].contains(" cmd=client|list "), "{}", lines[0]);
    // redis-server 7.0.15 shows argv-mem=10 for its own `CLIENT LIST` ("client" + "list").
    assert!(lines[0].contains(" argv-mem=10 "), "{}", lines[0]);
    assert!(lines[1].contains(" argv-mem=0 "), "{}", lines[1]);
    assert!(lines[1].contains(" name=bee "));
    let only_b = bulk(&cmd(&mut a, &["CLIENT", "LIST", "ID", &id_b.to_string()]));
    assert_eq!(only_b.lines().count(), 1);
    assert!(only_b.starts_with(&format!("id={id_b} ")));
    assert_eq!(
        bulk(&cmd(&mut a, &["CLIENT", "LIST", "TYPE", "pubsub"])),
        ""
    );
    assert_eq!(
        bulk(&cmd(&mut a, &["CLIENT", "LIST", "TYPE", "normal"]))
            .lines()
            .count(),
        2
    );
    cmd(&mut a, &["MULTI"]);
    let list = bulk(&cmd(&mut b, &["CLIENT", "LIST", "ID", &id_a.to_string()]));
    assert!(
        list.contains(" flags=x ") && list.contains(" multi=0 "),
        "{list}"
    );
}

#[test]
fn client_kill_forms() {
    let h = start();
    let mut a = Raw::connect(&h);
    let mut b = Raw::connect(&h);
    let id_b = client_id(&mut b);
    assert_eq!(
        cmd(&mut a, &["CLIENT", "KILL", "ID", &id_b.to_string()]),
        Value::Int(1)
    );
    assert!(b.closed_within(Duration::from_secs(10)));
    let mut c = Raw::connect(&h);
    let info = bulk(&cmd(&mut c, &["CLIENT", "INFO"]));
    let addr = info
        .split(' ')
        .find_map(|f| f.strip_prefix("addr="))
        .unwrap()
        .to_string();
    assert_eq!(
        cmd(&mut a, &["CLIENT", "KILL", &addr]),
        Value::Simple(b"OK".to_vec())
    );
    assert!(c.closed_within(Duration::from_secs(10)));
    // SKIPME yes (default) spares the caller; SKIPME no kills it after the reply.
    assert_eq!(
        cmd(&mut a, &["CLIENT", "KILL", "TYPE", "normal"]),
        Value::Int(0)
    );
    assert_eq!(
        cmd(
            &mut a,
            &["CLIENT", "KILL", "USER", "default", "SKIPME", "no"]
        ),
        Value::Int(1)
    );
    assert!(a.closed_within(Duration::from_secs(10)));
}

#[test]
fn client_pause_holds_commands_until_unpause() {
    let h = start();
    let mut ctl = Raw::connect(&h);
    let mut writer = Raw::connect(&h);
    let mut reader = Raw::connect(&h);
    cmd(&mut ctl, &["SET", "k", "before"]);
    assert_eq!(
        cmd(&mut ctl, &["CLIENT", "PAUSE", "100000", "WRITE"]),
        Value::Simple(b"OK".to_vec())
    );
    writer.cmd(&[b"SET", b"k", b"after"]);
    // Reads go on during a WRITE pause; the write waits.
    assert_eq!(bulk(&cmd(&mut reader, &["GET", "k"])), "before");
    assert_eq!(writer.try_read_raw(Duration::from_millis(200)), None);
    // Errors that come before the pause check in Redis are answered at once.
    assert_eq!(
        cmd(&mut reader, &["SET", "k"]),
        Value::Error(b"ERR wrong number of arguments for 'set' command".to_vec())
    );
    assert_eq!(bulk(&cmd(&mut reader, &["GET", "k"])), "before");
    assert_eq!(
        cmd(&mut ctl, &["CLIENT", "UNPAUSE"]),
        Value::Simple(b"OK".to_vec())
    );
    assert_eq!(writer.read(), Value::Simple(b"OK".to_vec()));
    assert_eq!(bulk(&cmd(&mut reader, &["GET", "k"])), "after");
    // PAUSE ALL holds reads too, and ends by itself when the time is up.
    assert_eq!(
        cmd(&mut ctl, &["CLIENT", "PAUSE", "300", "ALL"]),
        Value::Simple(b"OK".to_vec())
    );
    reader.cmd(&[b"GET", b"k"]);
    assert_eq!(bulk(&reader.read()), "after");
}

#[test]
fn client_unblock_timeout_and_error() {
    let h = start();
    let mut ctl = Raw::connect(&h);
    let mut w = Raw::connect(&h);
    let id = client_id(&mut w);
    w.cmd(&[b"BLPOP", b"q", b"0"]);
    wait_for_flag(&mut ctl, id, 'b');
    assert_eq!(
        cmd(&mut ctl, &["CLIENT", "UNBLOCK", &id.to_string()]),
        Value::Int(1)
    );
    assert_eq!(w.read_raw(), b"*-1\r\n");
    assert_eq!(
        cmd(&mut ctl, &["CLIENT", "UNBLOCK", &id.to_string()]),
        Value::Int(0)
    );
    w.cmd(&[b"BLPOP", b"q", b"0"]);
    wait_for_flag(&mut ctl, id, 'b');
    assert_eq!(
        cmd(&mut ctl, &["CLIENT", "UNBLOCK", &id.to_string(), "ERROR"]),
        Value::Int(1)
    );
    assert_eq!(
        w.read_raw(),
        b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    );
    assert_eq!(cmd(&mut w, &["PING"]), Value::Simple(b"PONG".to_vec()));
    let info = bulk(&cmd(&mut ctl, &["INFO", "errorstats"]));
    assert!(info.contains("errorstat_UNBLOCKED:count=1"), "{info}");
}

#[test]
fn slowlog_records_and_truncates() {
    let h = start();
    let mut r = Raw::connect(&h);
    cmd(&mut r, &["CLIENT", "SETNAME", "slowpoke"]);
    cmd(&mut r, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    cmd(&mut r, &["SLOWLOG", "RESET"]);
    cmd(&mut r, &["SET", "a", "b"]);
    let long = "x".repeat(200);
    cmd(&mut r, &["ECHO", &long]);
    let mut many = vec!["SADD", "s"];
    let members: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    many.extend(members.iter().map(|s| s.as_str()));
    cmd(&mut r, &many);
    let Value::Array(entries) = cmd(&mut r, &["SLOWLOG", "GET", "-1"]) else {
        panic!()
    };
    // Newest first: SADD, ECHO, SET, SLOWLOG RESET.
    let argv = |e: &Value| match e {
        Value::Array(f) => match &f[3] {
            Value::Array(a) => a.iter().map(bulk).collect::<Vec<_>>(),
            _ => vec![],
        },
        _ => vec![],
    };
    let sadd = argv(&entries[0]);
    assert_eq!(sadd.len(), 32);
    assert_eq!(sadd[31], "... (11 more arguments)");
    let echo = argv(&entries[1]);
    assert_eq!(echo[1], format!("{}... (72 more bytes)", "x".repeat(128)));
    assert_eq!(argv(&entries[2]), ["SET", "a", "b"]);
    let Value::Array(f) = &entries[2] else {
        panic!()
    };
    assert_eq!(bulk(&f[5]), "slowpoke");
    assert!(bulk(&f[4]).starts_with("127.0.0.1:"));
    let Value::Int(len) = cmd(&mut r, &["SLOWLOG", "LEN"]) else {
        panic!()
    };
    assert!(len >= 4);
    cmd(&mut r, &["AUTH", "x", "y"]);
    let Value::Array(entries) = cmd(&mut r, &["SLOWLOG", "GET", "1"]) else {
        panic!()
    };
    assert_eq!(argv(&entries[0]), ["AUTH", "(redacted)", "(redacted)"]);
    cmd(&mut r, &["CONFIG", "SET", "slowlog-max-len", "2"]);
    assert_eq!(cmd(&mut r, &["SLOWLOG", "LEN"]), Value::Int(2));
    cmd(&mut r, &["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    cmd(&mut r, &["SLOWLOG", "RESET"]);
    cmd(&mut r, &["PING"]);
    assert_eq!(cmd(&mut r, &["SLOWLOG", "LEN"]), Value::Int(0));
}

#[test]
fn monitor_sees_other_clients_commands() {
    let h = start();
    let mut m = Raw::connect(&h);
    let mut c = Raw::connect(&h);
    assert_eq!(cmd(&mut m, &["MONITOR"]), Value::Simple(b"OK".to_vec()));
    cmd(&mut c, &["SET", "k", "with space"]);
    let Value::Simple(line) = m.read() else {
        panic!()
    };
    let line = String::from_utf8(line).unwrap();
    let (ts, rest) = line.split_once(' ').unwrap();
    assert!(ts.contains('.') && ts.len() == 17, "{line}");
    assert!(
        rest.starts_with("[0 127.0.0.1:") && rest.ends_with("] \"SET\" \"k\" \"with space\""),
        "{line}"
    );
    // Passwords never show (redis-server 7.0.15 prints the same).
    cmd(&mut c, &["auth", "x", "y"]);
    let Value::Simple(line) = m.read() else {
        panic!()
    };
    let line = String::from_utf8(line).unwrap();
    assert!(
        line.ends_with("] \"auth\" \"(redacted)\" \"(redacted)\""),
        "{line}"
    );
    cmd(&mut c, &["hello", "2", "auth", "default", "bar"]);
    let Value::Simple(line) = m.read() else {
        panic!()
    };
    let line = String::from_utf8(line).unwrap();
    assert!(
        line.ends_with("] \"hello\" \"2\" \"auth\" \"(redacted)\" \"(redacted)\""),
        "{line}"
    );
}

#[test]
fn info_sections_and_stats() {
    let h = start();
    let mut r = Raw::connect(&h);
    cmd(&mut r, &["SET", "a", "1"]);
    cmd(&mut r, &["NOSUCH"]);
    let all = bulk(&cmd(&mut r, &["INFO"]));
    for s in [
        "# Server",
        "# Clients",
        "# Memory",
        "# Persistence",
        "# Stats",
        "# Replication",
        "# CPU",
        "# Modules",
        "# Errorstats",
        "# Cluster",
        "# Keyspace",
    ] {
        assert!(all.contains(&format!("{s}\r\n")), "{s}");
    }
    assert!(!all.contains("# Commandstats"));
    assert!(all.contains("\r\nredis_version:7.0.15\r\n"));
    assert!(all.contains("\r\nloading:0\r\n"));
    assert!(all.contains("\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n"));
    assert!(all.contains("\r\nerrorstat_ERR:count=1\r\n"));
    cmd(&mut r, &["GET", "a"]);
    cmd(&mut r, &["GET", "nosuchkey"]);
    let st = bulk(&cmd(&mut r, &["INFO", "stats"]));
    assert!(
        st.contains("\r\nkeyspace_hits:1\r\nkeyspace_misses:1\r\n"),
        "{st}"
    );
    let stats = bulk(&cmd(&mut r, &["INFO", "commandstats"]));
    assert!(stats.starts_with("# Commandstats\r\n"));
    assert!(stats.contains("\r\ncmdstat_set:calls=1,usec="), "{stats}");
    let two = bulk(&cmd(&mut r, &["INFO", "server", "CLIENTS"]));
    assert!(
        two.starts_with("# Server\r\n")
            && two.contains("\r\n\r\n# Clients\r\nconnected_clients:1\r\n")
    );
    let every = bulk(&cmd(&mut r, &["INFO", "everything"]));
    assert!(every.contains("# Commandstats") && every.contains("# Keyspace"));
    let lat = bulk(&cmd(&mut r, &["INFO", "latencystats"]));
    assert!(lat.starts_with("# Latencystats\r\n"), "{lat}");
    let set_line = lat
        .lines()
        .find(|l| l.starts_with("latency_percentiles_usec_set:"))
        .unwrap();
    let fields: Vec<&str> = set_line.split(':').nth(1).unwrap().split(',').collect();
    assert_eq!(fields.len(), 3);
    assert!(
        fields[0].starts_with("p50=")
            && fields[1].starts_with("p99=")
            && fields[2].starts_with("p99.9=")
    );
    assert!(fields[0][4..].parse::<f64>().is_ok());
    cmd(
        &mut r,
        &["CONFIG", "SET", "latency-tracking-info-percentiles", "90"],
    );
    let lat = bulk(&cmd(&mut r, &["INFO", "latencystats"]));
    assert!(lat.contains("latency_percentiles_usec_set:p90="), "{lat}");
    assert!(!bulk(&cmd(&mut r, &["INFO"])).contains("# Latencystats"));
    assert!(bulk(&cmd(&mut r, &["INFO", "all"])).contains("# Latencystats"));
    cmd(&mut r, &["CONFIG", "RESETSTAT"]);
    assert!(!bulk(&cmd(&mut r, &["INFO", "latencystats"])).contains("usec_set:"));
    let stats = bulk(&cmd(&mut r, &["INFO", "commandstats"]));
    assert!(!stats.contains("cmdstat_set"), "{stats}");
}

#[test]
fn config_get_star_lists_every_redis_parameter() {
    let h = start();
    let mut r = Raw::connect(&h);
    let Value::Array(all) = cmd(&mut r, &["CONFIG", "GET", "*"]) else {
        panic!()
    };
    // redis-server 7.0.15 answers 192 names (173 parameters and 19 aliases).
    assert_eq!(all.len(), 2 * 192);
    let names: Vec<String> = all.iter().step_by(2).map(bulk).collect();
    for n in [
        "maxmemory",
        "slave-read-only",
        "replica-read-only",
        "lua-time-limit",
        "tls-port",
        "oom-score-adj-values",
    ] {
        assert!(names.iter().any(|x| x == n), "{n}");
    }
}

#[test]
fn config_set_requirepass_applies_to_new_connections() {
    let h = start();
    let mut r = Raw::connect(&h);
    cmd(&mut r, &["CONFIG", "SET", "requirepass", "pw"]);
    assert_eq!(cmd(&mut r, &["PING"]), Value::Simple(b"PONG".to_vec()));
    let mut n = Raw::connect(&h);
    assert_eq!(
        cmd(&mut n, &["PING"]),
        Value::Error(b"NOAUTH Authentication required.".to_vec())
    );
    assert_eq!(cmd(&mut n, &["AUTH", "pw"]), Value::Simple(b"OK".to_vec()));
}

#[test]
fn command_count_list_docs_agree_with_the_table() {
    let h = start();
    let mut r = Raw::connect(&h);
    let Value::Int(count) = cmd(&mut r, &["COMMAND", "COUNT"]) else {
        panic!()
    };
    let Value::Array(all) = cmd(&mut r, &["COMMAND"]) else {
        panic!()
    };
    assert_eq!(all.len() as i64, count);
    let Value::Array(docs) = cmd(&mut r, &["COMMAND", "DOCS"]) else {
        panic!()
    };
    assert_eq!(docs.len() as i64, count * 2);
    let Value::Array(list) = cmd(&mut r, &["COMMAND", "LIST"]) else {
        panic!()
    };
    assert!(list.len() as i64 > count);
    let Value::Array(read) = cmd(&mut r, &["COMMAND", "LIST", "FILTERBY", "ACLCAT", "read"]) else {
        panic!()
    };
    assert!(read.iter().any(|v| bulk(v) == "get"));
    assert!(!read.iter().any(|v| bulk(v) == "set"));
    let Value::Array(info) = cmd(&mut r, &["COMMAND", "INFO", "client|setinfo"]) else {
        panic!()
    };
    let Value::Array(e) = &info[0] else { panic!() };
    assert_eq!(bulk(&e[0]), "client|setinfo");
    assert_eq!(e[1], Value::Int(4));
}

#[test]
fn debug_sleep_when_enabled() {
    let h = start_with(&["--enable-debug-command", "yes"]);
    let mut r = Raw::connect(&h);
    assert_eq!(
        cmd(&mut r, &["DEBUG", "SLEEP", "0"]),
        Value::Simple(b"OK".to_vec())
    );
    assert_eq!(
        cmd(&mut r, &["DEBUG", "SLEEP", "0.01"]),
        Value::Simple(b"OK".to_vec())
    );
    assert_eq!(
        cmd(&mut r, &["DEBUG", "nosuch"]),
        // Redis 7.0.15's text (debug.c ends with addReplySubcommandSyntaxError).
        Value::Error(
            b"ERR unknown subcommand or wrong number of arguments for 'nosuch'. Try DEBUG HELP."
                .to_vec()
        )
    );
}

#[test]
fn shutdown_stops_the_server() {
    let h = start();
    let mut r = Raw::connect(&h);
    // (SHUTDOWN SAVE and its failure: tests/persistence.rs, with a dir of its own.)
    r.cmd(&[b"SHUTDOWN", b"NOSAVE"]);
    assert!(r.closed_within(Duration::from_secs(10)));
    h.wait();
}

#[test]
fn config_set_port_and_bind_rebind_the_listener() {
    let h = start();
    let mut r = Raw::connect(&h);
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port().to_string();
    // redis-server 7.0.15's errors; the old listener keeps serving.
    assert_eq!(
        cmd(&mut r, &["CONFIG", "SET", "port", &busy_port]),
        Value::Error(b"ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.".to_vec())
    );
    assert_eq!(
        cmd(&mut r, &["CONFIG", "SET", "bind", "192.0.2.123"]),
        Value::Error(b"ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses.".to_vec())
    );
    assert!(std::net::TcpStream::connect(h.addr()).is_ok());
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let new_port = free.local_addr().unwrap().port();
    drop(free);
    assert_eq!(
        cmd(&mut r, &["CONFIG", "SET", "port", &new_port.to_string()]),
        Value::Simple(b"OK".to_vec())
    );
    // New connections go to the new port; this connection stays open.
    let mut n = Raw {
        s: std::net::TcpStream::connect(("127.0.0.1", new_port)).unwrap(),
        buf: Vec::new(),
    };
    assert_eq!(cmd(&mut n, &["PING"]), Value::Simple(b"PONG".to_vec()));
    assert_eq!(cmd(&mut r, &["PING"]), Value::Simple(b"PONG".to_vec()));
    let mut refused = false;
    for _ in 0..200 {
        if std::net::TcpStream::connect(h.addr()).is_err() {
            refused = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(refused, "the old port stops accepting");
}

#[test]
fn latency_monitor_and_histogram() {
    let h = start_with(&[
        "--enable-debug-command",
        "yes",
        "--latency-monitor-threshold",
        "1",
    ]);
    let mut r = Raw::connect(&h);
    cmd(&mut r, &["DEBUG", "SLEEP", "0.02"]);
    let Value::Array(latest) = cmd(&mut r, &["LATENCY", "LATEST"]) else {
        panic!()
    };
    assert_eq!(latest.len(), 1);
    let Value::Array(e) = &latest[0] else {
        panic!()
    };
    assert_eq!(bulk(&e[0]), "command");
    let (Value::Int(latest_ms), Value::Int(max_ms)) = (&e[2], &e[3]) else {
        panic!()
    };
    assert!(*latest_ms >= 20 && max_ms >= latest_ms, "{e:?}");
    let Value::Array(hist) = cmd(&mut r, &["LATENCY", "HISTORY", "command"]) else {
        panic!()
    };
    assert_eq!(hist.len(), 1);
    assert_eq!(
        cmd(&mut r, &["LATENCY", "RESET", "command", "nosuch"]),
        Value::Int(1)
    );
    assert_eq!(cmd(&mut r, &["LATENCY", "LATEST"]), Value::Array(vec![]));
    cmd(&mut r, &["SET", "k", "v"]);
    cmd(&mut r, &["SET", "k", "w"]);
    let Value::Array(m) = cmd(&mut r, &["LATENCY", "HISTOGRAM", "SET"]) else {
        panic!()
    };
    assert_eq!(bulk(&m[0]), "set");
    let Value::Array(fields) = &m[1] else {
        panic!()
    };
    assert_eq!(bulk(&fields[0]), "calls");
    assert_eq!(fields[1], Value::Int(2));
    let Value::Array(buckets) = &fields[3] else {
        panic!()
    };
    // Cumulative counts over power-of-two bounds end at every call.
    assert_eq!(buckets.last(), Some(&Value::Int(2)));
    let bounds: Vec<i64> = buckets
        .iter()
        .step_by(2)
        .map(|v| match v {
            Value::Int(n) => *n,
            _ => 0,
        })
        .collect();
    assert!(
        bounds
            .iter()
            .all(|b| [1, 2, 4, 8, 16, 32, 65, 131, 262, 524, 1048, 2097].contains(b) || *b > 2097),
        "{bounds:?}"
    );
}

/// Servers started in-process share the process's working directory, so
/// `dir` must not move it: each server's files land in its own `dir`
/// (relative CONFIG SET dir taken from the server's current one, as Redis's
/// chdir takes it), and the process stays where it was (a test that spawns
/// a program from a removed directory gets ENOENT).
#[test]
fn in_process_servers_keep_their_own_dir() {
    let cwd = std::env::current_dir().unwrap();
    let a_dir = common::real_redis::temp_dir("dir-a");
    let b_dir = common::real_redis::temp_dir("dir-b");
    std::fs::create_dir(b_dir.join("sub")).unwrap();
    let flags = |d: &std::path::Path| {
        vec![
            "--dir".to_string(),
            d.display().to_string(),
            "--enable-protected-configs".into(),
            "yes".into(),
        ]
    };
    let fa = flags(&a_dir);
    let fb = flags(&b_dir);
    let a = start_with(&fa.iter().map(String::as_str).collect::<Vec<_>>());
    let b = start_with(&fb.iter().map(String::as_str).collect::<Vec<_>>());
    let (mut ca, mut cb) = (Raw::connect(&a), Raw::connect(&b));
    assert_eq!(
        cmd(&mut cb, &["CONFIG", "SET", "dir", "sub"]),
        Value::Simple(b"OK".to_vec())
    );
    let got = cmd(&mut cb, &["CONFIG", "GET", "dir"]);
    let Value::Array(items) = got else {
        panic!("{got:?}")
    };
    let sub = std::fs::canonicalize(b_dir.join("sub")).unwrap();
    assert_eq!(bulk(&items[1]), sub.display().to_string());
    assert_eq!(cmd(&mut ca, &["SAVE"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(cmd(&mut cb, &["SAVE"]), Value::Simple(b"OK".to_vec()));
    assert!(a_dir.join("dump.rdb").is_file());
    assert!(b_dir.join("sub/dump.rdb").is_file());
    assert!(!b_dir.join("dump.rdb").exists());
    assert_eq!(std::env::current_dir().unwrap(), cwd);
}
