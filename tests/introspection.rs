//! CLIENT LIST/INFO fields and CLIENT REPLY modes as Redis's introspection suite checks them.

mod common;

use common::Raw;

/// The `qbuf=` field of a CLIENT INFO reply.
fn qbuf_of(reply: &[u8]) -> usize {
    let text = String::from_utf8_lossy(reply);
    let field = text
        .split(' ')
        .find_map(|f| f.strip_prefix("qbuf="))
        .expect("qbuf field");
    field.parse().unwrap()
}

// Redis trims its query buffer after a whole batch of requests, so during
// CLIENT INFO `qbuf` counts every byte of the batch read with it (values read
// from redis-server 7.0.15 with these exact writes; the suite's "CLIENT LIST"
// test expects 26 for a lone `client list`).
#[test]
fn qbuf_counts_the_whole_batch() {
    let h = common::start();
    let mut r = Raw::connect(&h);
    r.cmd(&[b"client", b"info"]);
    assert_eq!(qbuf_of(&r.read_raw()), 26);
    r.send(b"*1\r\n$4\r\nPING\r\n*2\r\n$6\r\nclient\r\n$4\r\ninfo\r\n*1\r\n$4\r\nPING\r\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    assert_eq!(qbuf_of(&r.read_raw()), 54);
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    r.send(b"PING\r\nCLIENT INFO\r\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    assert_eq!(qbuf_of(&r.read_raw()), 19);
}

/// Command names and call counts of a LATENCY HISTOGRAM reply, in reply order.
fn histogram_names(r: &mut Raw, names: &[&str]) -> Vec<(String, i64)> {
    let mut args: Vec<&[u8]> = vec![b"latency", b"histogram"];
    args.extend(names.iter().map(|n| n.as_bytes()));
    r.cmd(&args);
    let oxidis::resp::value::Value::Array(items) = r.read() else {
        panic!("LATENCY HISTOGRAM answers a map (an array in RESP2)");
    };
    items
        .chunks(2)
        .map(|kv| {
            let oxidis::resp::value::Value::Array(fields) = &kv[1] else {
                panic!("each command maps to its fields");
            };
            let calls = match &fields[1] {
                oxidis::resp::value::Value::Int(n) => *n,
                v => panic!("calls is an integer: {v:?}"),
            };
            (
                String::from_utf8(kv[0].as_bytes().unwrap().to_vec()).unwrap(),
                calls,
            )
        })
        .collect()
}

// Replies read from redis-server 7.0.15 after CONFIG RESETSTAT, CLIENT ID and
// CLIENT LIST (the suite's "LATENCY HISTOGRAM sub commands"): a container name
// gives its subcommands with calls, repeated names repeat, unknown ones are
// skipped. Subcommands are compared as a set (Redis walks its dict).
#[test]
fn latency_histogram_by_container_and_subcommand() {
    let h = common::start();
    let mut r = Raw::connect(&h);
    for args in [
        &[&b"config"[..], b"resetstat"],
        &[b"client", b"id"],
        &[b"client", b"list"],
    ] {
        r.cmd(args);
        r.read_raw();
    }
    let sorted = |mut v: Vec<(String, i64)>| {
        v.sort();
        v
    };
    let id_list = vec![("client|id".to_string(), 1), ("client|list".to_string(), 1)];
    assert_eq!(sorted(histogram_names(&mut r, &["client"])), id_list);
    assert_eq!(histogram_names(&mut r, &["client|id"]), id_list[..1]);
    assert_eq!(histogram_names(&mut r, &["CLIENT|ID"]), id_list[..1]);
    let twice = histogram_names(&mut r, &["client", "client"]);
    assert_eq!(sorted(twice[..2].to_vec()), id_list);
    assert_eq!(sorted(twice[2..].to_vec()), id_list);
    for none in ["nosuch", "client|id|x", "client|nosuch", "get"] {
        assert_eq!(histogram_names(&mut r, &[none]), vec![], "{none}");
    }
    assert_eq!(
        histogram_names(&mut r, &["config"]),
        vec![("config|resetstat".to_string(), 1)]
    );
}

// LATENCY DOCTOR after one slow command, checked against the report
// redis-server 7.0.15 wrote after `CONFIG SET latency-monitor-threshold 1`
// and `DEBUG SLEEP 0.05` (the sample's numbers depend on timing and are masked).
#[test]
fn latency_doctor_reports_a_command_spike() {
    let h = common::start_with(&["--enable-debug-command", "yes"]);
    let mut r = Raw::connect(&h);
    for args in [
        &[&b"config"[..], b"set", b"latency-monitor-threshold", b"1"][..],
        &[b"debug", b"sleep", b"0.05"],
    ] {
        r.cmd(args);
        assert_eq!(r.read_raw(), b"+OK\r\n");
    }
    r.cmd(&[b"latency", b"doctor"]);
    let report = String::from_utf8(r.read().as_bytes().unwrap().to_vec()).unwrap();
    let masked: Vec<String> = report
        .lines()
        .map(|l| {
            // A loaded machine can also see the CONFIG SET itself take
            // over 1 ms, so the count of spikes is masked with the numbers.
            if l.starts_with("1. command: ") && l.contains(" latency spikes (average ") {
                assert!(worst_ms(l) >= 50, "the 50 ms sleep is the worst: {l}");
                "1. command: <sample>".to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    let want = [
        "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?",
        "",
        "1. command: <sample>",
        "",
        "I have a few advices for you:",
        "",
        "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than 1000'.",
        "- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.",
        "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.",
    ];
    assert_eq!(masked, want);
    assert!(report.ends_with(".\n"));
}

/// The "Worst all time event NNms." figure of a LATENCY DOCTOR sample line.
fn worst_ms(line: &str) -> u64 {
    let tail = line
        .split("Worst all time event ")
        .nth(1)
        .expect("worst event");
    tail.trim_end_matches("ms.").parse().expect("milliseconds")
}

/// The argument lists of SLOWLOG GET's entries, newest first.
fn slowlog_args(r: &mut Raw) -> Vec<Vec<String>> {
    use oxidis::resp::value::Value;
    r.cmd(&[b"slowlog", b"get"]);
    let Value::Array(entries) = r.read() else {
        panic!("SLOWLOG GET answers an array");
    };
    entries
        .iter()
        .map(|e| {
            let Value::Array(fields) = e else {
                panic!("entry")
            };
            let Value::Array(argv) = &fields[3] else {
                panic!("argv")
            };
            argv.iter()
                .map(|a| String::from_utf8(a.as_bytes().unwrap().to_vec()).unwrap())
                .collect()
        })
        .collect()
}

// What redis-server 7.0.15 logged for these commands (the suite's "SLOWLOG -
// Certain commands are omitted that contain sensitive information" without
// its ACL SETUSER parts): values of sensitive parameters are redacted, even
// when the CONFIG SET fails.
#[test]
fn slowlog_redacts_sensitive_config_values() {
    let h = common::start();
    let mut r = Raw::connect(&h);
    let run = |r: &mut Raw, args: &[&str]| {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        r.cmd(&a);
        r.read_raw();
    };
    run(&mut r, &["config", "set", "slowlog-log-slower-than", "0"]);
    run(&mut r, &["slowlog", "reset"]);
    run(&mut r, &["config", "set", "masterauth", ""]);
    run(
        &mut r,
        &[
            "config",
            "set",
            "requirepass",
            "",
            "maxmemory",
            "0",
            "masteruser",
            "u",
        ],
    );
    run(
        &mut r,
        &["config", "set", "nosuch", "x", "masterauth", "pw"],
    );
    run(&mut r, &["config", "set", "masterauth"]);
    run(&mut r, &["config", "set", "slowlog-log-slower-than", "-1"]);
    let got = slowlog_args(&mut r);
    let want: Vec<Vec<&str>> = vec![
        vec!["config", "set", "nosuch", "x", "masterauth", "(redacted)"],
        vec![
            "config",
            "set",
            "requirepass",
            "(redacted)",
            "maxmemory",
            "0",
            "masteruser",
            "(redacted)",
        ],
        vec!["config", "set", "masterauth", "(redacted)"],
        vec!["slowlog", "reset"],
    ];
    assert_eq!(got, want);
}
