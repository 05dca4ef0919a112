//! A harness built after another on the same thread answers as one built on a fresh thread.

use super::Harness;

/// Commands that leave state behind: keys, config, scripts, functions,
/// client flags, a pause (and its hold on expiry), slow log entries.
const POLLUTE: &[&[&[u8]]] = &[
    &[b"SET", b"a", b"1"],
    &[b"SADD", b"S", b"1", b"2", b"3", b"4", b"5"],
    &[b"CONFIG", b"SET", b"hz", b"100"],
    &[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lfu"],
    &[b"CONFIG", b"SET", b"slowlog-log-slower-than", b"0"],
    &[b"SCRIPT", b"LOAD", b"return 1"],
    &[
        b"FUNCTION",
        b"LOAD",
        b"#!lua name=lib\nredis.register_function('f', function() return 1 end)",
    ],
    &[b"EVAL", b"return redis.call('get', 'a')", b"0"],
    &[b"CLIENT", b"SETNAME", b"old"],
    &[b"CLIENT", b"NO-TOUCH", b"ON"],
    &[b"SRANDMEMBER", b"S", b"2"],
    &[b"CLIENT", b"PAUSE", b"100000", b"WRITE"],
];

/// What a fresh harness is asked; every answer must be the same. (Not the
/// order of hash tables, which are seeded per process: SRANDMEMBER or SPOP
/// pick members in an order a replay may not repeat.) `e` expires while the
/// clock moves on between the two halves.
const PROBE: [&[&[&[u8]]]; 2] = [
    &[
        &[b"DBSIZE"],
        &[b"SET", b"e", b"v", b"PX", b"100"],
        &[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lfu"],
        &[b"SET", b"w", b"1"],
    ],
    &[
        &[b"EXISTS", b"e"],
        &[b"DBSIZE"],
        &[b"KEYS", b"*"],
        &[b"GET", b"w"],
        &[b"GET", b"w"],
        &[b"OBJECT", b"FREQ", b"w"],
        &[b"CONFIG", b"GET", b"hz"],
        &[
            b"SCRIPT",
            b"EXISTS",
            b"e0e1f9fabfc9d4800c877a703b823ac0578ff8db",
        ],
        &[b"FUNCTION", b"LIST"],
        &[b"CLIENT", b"GETNAME"],
        &[b"CLIENT", b"INFO"],
        &[b"SLOWLOG", b"LEN"],
        &[b"SCARD", b"S"],
    ],
];

fn answers(h: &mut Harness) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for (i, half) in PROBE.iter().enumerate() {
        if i == 1 {
            crate::clock::set_offset_ms(1_000);
        }
        for argv in *half {
            let words: Vec<_> = argv.iter().map(|a| String::from_utf8_lossy(a)).collect();
            let reply = h
                .run(argv)
                .map(|r| String::from_utf8_lossy(&r).into_owned());
            out.push((words.join(" "), reply));
        }
    }
    out
}

#[test]
fn harness_starts_from_the_same_state_whatever_ran_before() {
    let fresh = std::thread::spawn(|| answers(&mut Harness::default()))
        .join()
        .expect("the fresh thread");
    let mut old = Harness::default();
    for argv in POLLUTE {
        old.run(argv);
    }
    // The pause holds writes: the old harness is left mid-pause, as a fuzz
    // input may leave it.
    assert_eq!(old.run(&[b"SET", b"b", b"1"]), None);
    drop(old);
    let after = answers(&mut Harness::default());
    for (want, got) in fresh.iter().zip(&after) {
        assert_eq!(got, want);
    }
}

#[test]
fn reply_check_takes_what_redis_sends_and_nothing_malformed() {
    use super::check_frames;
    // A script's big_number goes out as given (compat scripting/fuzz_found).
    for ok in [
        &b"(\r\n"[..],
        b"(x1\r\n",
        b"*2\r\n:1\r\n_\r\n",
        b"|1\r\n+a\r\n+b\r\n:1\r\n",
    ] {
        check_frames(ok, 3);
    }
    check_frames(b"*1\r\n$1\r\na\r\n*-1\r\n", 2);
    let bad: [(&[u8], u8); 6] = [
        (b"_\r\n", 2),
        (b"$3\r\nab\r\n", 3),
        (b":+1\r\n", 3),
        (b"#x\r\n", 3),
        (b"*2\r\n:1\r\n", 3),
        (b"+a\rb\r\n", 2),
    ];
    for (out, resp) in bad {
        let r = std::panic::catch_unwind(|| check_frames(out, resp));
        assert!(r.is_err(), "{:?} passed", String::from_utf8_lossy(out));
    }
}
