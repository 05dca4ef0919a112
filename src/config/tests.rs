//! Unit tests of configuration parsing and validation.

use super::*;

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn harness_style_flags() {
    let c = from_args(&args(&[
        "--port",
        "7001",
        "--save",
        "",
        "--appendonly",
        "no",
        "--databases",
        "4",
    ]))
    .unwrap();
    assert_eq!(c.port, 7001);
    assert_eq!(c.get("save"), Some(""));
    assert_eq!(c.databases, 4);
    let c = from_args(&args(&["--save", "--port", "7002"])).unwrap();
    assert_eq!(c.get("save"), Some(""));
    assert_eq!(c.port, 7002);
}

#[test]
fn flags_become_quoted_config_lines() {
    // `--port 7001` style, several words for one option, `--save` alone at the end.
    let c = from_args(&args(&[
        "--bind",
        "127.0.0.1",
        "::1",
        "--notify-keyspace-events",
        "KEA",
        "--save",
    ]))
    .unwrap();
    assert_eq!(c.bind, vec!["127.0.0.1".to_string(), "::1".to_string()]);
    assert_eq!(c.get("notify-keyspace-events"), Some("AKE"));
    assert_eq!(c.get("save"), Some(""));
    // A value with spaces and quotes survives the quoting round trip.
    let c = from_args(&args(&["--requirepass", "a \"b\" c"])).unwrap();
    assert_eq!(c.requirepass.as_deref(), Some(&b"a \"b\" c"[..]));
}

#[test]
fn file_then_flags_and_include() {
    let dir = std::env::temp_dir().join(format!("oxidis-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let inc = dir.join("inc.conf");
    std::fs::write(&inc, "hz 33\nmaxmemory 2mb\n").unwrap();
    let main = dir.join("main.conf");
    std::fs::write(
        &main,
        format!(
            "# c\nport 7100\ninclude {}\nsave 900 1\nsave 300 10\n",
            inc.display()
        ),
    )
    .unwrap();
    let c = from_args(&args(&[main.to_str().unwrap(), "--hz", "44"])).unwrap();
    assert_eq!(c.port, 7100);
    assert_eq!(c.get("hz"), Some("44"));
    assert_eq!(c.get("maxmemory"), Some("2097152"));
    assert_eq!(c.get("save"), Some("900 1 300 10"));
    assert!(c.config_file.is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fatal_errors_name_the_line() {
    let e = from_args(&args(&["--port", "0", "--hz", "x"])).unwrap_err();
    assert_eq!(
        e,
        "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nReading the configuration file, at line 3\n>>> 'hz \"x\"'\nargument couldn't be parsed into an integer"
    );
    let e = from_args(&args(&["--appendonly", "maybe"])).unwrap_err();
    assert!(e.ends_with(">>> 'appendonly \"maybe\"'\nargument must be 'yes' or 'no'"));
    let e = from_args(&args(&["--maxmemory-policy", "x"])).unwrap_err();
    assert!(e.ends_with("argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"));
}

#[test]
fn aliases_share_one_value() {
    let mut c = Config::default();
    c.set("slave-read-only", b"no").unwrap();
    assert_eq!(c.get("replica-read-only"), Some("no"));
    c.set("HASH-MAX-ZIPLIST-ENTRIES", b"7").unwrap();
    assert_eq!(c.get("hash-max-listpack-entries"), Some("7"));
    assert_eq!(c.hash_max_listpack_entries, 7);
}

#[test]
fn memory_units() {
    assert_eq!(parse_memory("1gb"), Some(1 << 30));
    assert_eq!(parse_memory("100k"), Some(100_000));
    assert_eq!(parse_memory("12"), Some(12));
    assert_eq!(parse_memory("x"), None);
}

#[test]
fn binary_values_from_a_file_and_through_rewrite() {
    let dir = std::env::temp_dir().join(format!("oxidis-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("b.conf");
    // An escaped value and one with raw bytes that are not UTF-8.
    let mut text = b"requirepass \"\\xff\\xfe\\xfd\"\nmasterauth ".to_vec();
    text.extend_from_slice(b"\xc3\x28\x80\n");
    std::fs::write(&path, &text).unwrap();
    let c = from_args(&args(&[path.to_str().unwrap()])).unwrap();
    assert_eq!(c.requirepass.as_deref(), Some(&b"\xff\xfe\xfd"[..]));
    assert_eq!(c.get_bytes("masterauth"), Some(&b"\xc3\x28\x80"[..]));
    // CONFIG REWRITE writes them escaped; loading the file gives the bytes back.
    rewrite::rewrite(&c, path.to_str().unwrap()).unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(
        written.contains("requirepass \"\\xff\\xfe\\xfd\""),
        "{written}"
    );
    assert!(written.contains("masterauth \"\\xc3(\\x80\""), "{written}");
    let again = from_args(&args(&[path.to_str().unwrap()])).unwrap();
    assert_eq!(again.requirepass, c.requirepass);
    assert_eq!(again.get_bytes("masterauth"), c.get_bytes("masterauth"));
    let _ = std::fs::remove_dir_all(&dir);
}

// A config file line with several shutdown flags, as CONFIG REWRITE writes it
// (redis-server 7.0.15 loads `shutdown-on-sigterm nosave now` and
// `shutdown-on-sigint "save" force` and shows "nosave now" and "save force").
#[test]
fn shutdown_flags_take_several_words() {
    let c = from_args(&args(&[
        "--shutdown-on-sigterm",
        "nosave",
        "now",
        "--shutdown-on-sigint",
        "save",
        "force",
    ]))
    .unwrap();
    assert_eq!(c.get("shutdown-on-sigterm"), Some("nosave now"));
    assert_eq!(c.get("shutdown-on-sigint"), Some("save force"));
    assert!(from_args(&args(&["--shutdown-on-sigterm", "save", "nosave"])).is_err());
}

#[test]
fn replicaof_port_is_checked_as_redis_does() {
    // Found by the config_file fuzz target; texts from redis-server 7.0.15
    // started with `replicaof 127.0.0.1 <port>` in its config file.
    for bad in ["abc", "70000", "-1", "1x", "99999999999999999999"] {
        let mut c = Config::default();
        let e = c
            .load_text(format!("replicaof 127.0.0.1 {bad}").as_bytes())
            .unwrap_err();
        assert!(e.ends_with("\nInvalid master port"), "{bad}: {e}");
    }
    for (good, port) in [
        ("+5", "5"),
        ("6379", "6379"),
        ("-0", "0"),
        ("065535", "65535"),
    ] {
        let mut c = Config::default();
        c.load_text(format!("replicaof 127.0.0.1 {good}").as_bytes())
            .unwrap();
        assert_eq!(c.get("replicaof"), Some(&*format!("127.0.0.1 {port}")));
    }
}
