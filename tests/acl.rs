//! ACL enforcement over real sockets: every path a command can take (plain,
//! MULTI/EXEC, EVAL, FCALL, a woken blocked client, pub/sub) refuses what
//! the user may not do, and the refused action never takes effect; users
//! changed or deleted while connected; the ACL log; ACL LOAD/SAVE.

mod common;

use std::time::Duration;

use common::Raw;
use oxidis::resp::value::Value;

/// Sends a command written as words (split like redis-cli) and reads the reply.
fn c(r: &mut Raw, line: &str) -> Value {
    let words = common::case::split_words(line);
    let refs: Vec<&[u8]> = words.iter().map(|w| w.as_slice()).collect();
    r.cmd(&refs);
    r.read()
}

fn ok(r: &mut Raw, line: &str) {
    assert_eq!(c(r, line), Value::Simple(b"OK".to_vec()), "{line}");
}

fn err(v: &Value) -> String {
    match v {
        Value::Error(e) => String::from_utf8_lossy(e).into_owned(),
        other => panic!("not an error: {other:?}"),
    }
}

fn int(v: Value) -> i64 {
    match v {
        Value::Int(n) => n,
        other => panic!("not an integer: {other:?}"),
    }
}

const NOPERM_KEY: &str =
    "NOPERM this user has no permissions to access one of the keys used as arguments";
const NOPERM_CHANNEL: &str =
    "NOPERM this user has no permissions to access one of the channels used as arguments";

/// A server, an admin connection (default user) and one logged in as `u`
/// with `rules`.
fn setup(rules: &str) -> (oxidis::Handle, Raw, Raw) {
    let h = common::start();
    let mut admin = Raw::connect(&h);
    ok(&mut admin, &format!("ACL SETUSER u on >pw {rules}"));
    let mut u = Raw::connect(&h);
    ok(&mut u, "AUTH u pw");
    (h, admin, u)
}

#[test]
fn plain_commands_keys_and_channels_are_refused_without_effect() {
    let (h, mut admin, mut u) = setup("~k* &ch* -@all +get +set +publish");
    ok(&mut u, "SET k1 v");
    assert_eq!(err(&c(&mut u, "SET x v")), NOPERM_KEY);
    assert_eq!(
        err(&c(&mut u, "DEL k1")),
        "NOPERM this user has no permissions to run the 'del' command"
    );
    assert_eq!(
        err(&c(&mut u, "CONFIG SET maxmemory 1")),
        "NOPERM this user has no permissions to run the 'config|set' command"
    );
    assert_eq!(int(c(&mut admin, "EXISTS x")), 0);
    assert_eq!(int(c(&mut admin, "EXISTS k1")), 1);
    assert_eq!(c(&mut admin, "CONFIG GET maxmemory"), {
        Value::Array(vec![
            Value::Bulk(b"maxmemory".to_vec()),
            Value::Bulk(b"0".to_vec()),
        ])
    });
    // A denied PUBLISH reaches nobody.
    let mut sub = Raw::connect(&h);
    c(&mut sub, "SUBSCRIBE other");
    assert_eq!(err(&c(&mut u, "PUBLISH other m")), NOPERM_CHANNEL);
    assert_eq!(int(c(&mut u, "PUBLISH ch1 m")), 0);
    assert!(sub.try_read_raw(Duration::from_millis(100)).is_none());
}

#[test]
fn multi_with_a_denied_command_is_discarded() {
    let (_h, mut admin, mut u) = setup("~k* -@all +get +set +multi +exec");
    ok(&mut u, "MULTI");
    assert_eq!(c(&mut u, "SET k1 a"), Value::Simple(b"QUEUED".to_vec()));
    assert_eq!(err(&c(&mut u, "SET x a")), NOPERM_KEY);
    assert_eq!(
        err(&c(&mut u, "EXEC")),
        "EXECABORT Transaction discarded because of previous errors."
    );
    assert_eq!(int(c(&mut admin, "EXISTS k1 x")), 0);
    // Rules changed between queueing and EXEC: that command's slot fails.
    ok(&mut u, "MULTI");
    c(&mut u, "SET k1 a");
    c(&mut u, "SET k2 b");
    ok(&mut admin, "ACL SETUSER u resetkeys ~k1");
    let Value::Array(replies) = c(&mut u, "EXEC") else {
        panic!("EXEC answers an array");
    };
    assert_eq!(replies[0], Value::Simple(b"OK".to_vec()));
    assert_eq!(err(&replies[1]), "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to touch the specified keys");
    assert_eq!(int(c(&mut admin, "EXISTS k2")), 0);
}

#[test]
fn scripts_and_functions_run_as_their_caller() {
    let (_h, mut admin, mut u) = setup("~k* -@all +eval +fcall +get");
    let e = err(&c(&mut u, "EVAL \"return redis.call('set','k1','v')\" 0"));
    assert!(
        e.starts_with("ERR The user executing the script can't run this command or subcommand"),
        "{e}"
    );
    let e = err(&c(&mut u, "EVAL \"return redis.pcall('get','x')\" 0"));
    assert_eq!(e, "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments");
    assert_eq!(int(c(&mut admin, "EXISTS k1")), 0);
    let lib = "#!lua name=lib\n\
        redis.register_function('put', function(keys, args) return redis.call('set', keys[1], 'v') end)\n\
        redis.register_function('putx', function(keys, args) return redis.call('set', 'x', 'v') end)";
    admin.cmd(&[b"FUNCTION", b"LOAD", lib.as_bytes()]);
    assert_eq!(admin.read(), Value::Bulk(b"lib".to_vec()));
    ok(&mut admin, "ACL SETUSER u +set");
    // FCALL's own keys are checked by the gate; what the function touches by redis.call.
    assert_eq!(err(&c(&mut u, "FCALL put 1 x")), NOPERM_KEY);
    let e = err(&c(&mut u, "FCALL putx 0"));
    assert!(
        e.starts_with("ERR The user executing the script can't access at least one of the keys"),
        "{e}"
    );
    assert_eq!(int(c(&mut admin, "EXISTS x")), 0);
    assert_eq!(c(&mut u, "FCALL put 1 k1"), Value::Simple(b"OK".to_vec()));
    assert_eq!(int(c(&mut admin, "EXISTS k1")), 1);
}

#[test]
fn a_blocked_client_is_checked_again_when_served() {
    let (h, mut admin, mut u) = setup("~q* -@all +blpop +lpush");
    u.cmd(&[b"BLPOP", b"q", b"0"]);
    // The client is blocked before the rules change.
    while blocked_clients(&mut admin) == 0 {}
    ok(&mut admin, "ACL SETUSER u -blpop");
    assert_eq!(int(c(&mut admin, "LPUSH q a")), 1);
    assert_eq!(
        err(&u.read()),
        "NOPERM this user has no permissions to run the 'blpop' command"
    );
    // The element is still there: the refused BLPOP took nothing.
    assert_eq!(int(c(&mut admin, "LLEN q")), 1);
    drop(h);
}

/// `blocked_clients:<n>` of INFO clients.
fn blocked_clients(admin: &mut Raw) -> i64 {
    let v = c(admin, "INFO clients");
    let text = String::from_utf8_lossy(v.as_bytes().unwrap_or_default()).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn pubsub_channels_and_patterns_need_permission() {
    let (_h, mut admin, mut u) = setup("&ch* -@all +subscribe +psubscribe +publish");
    assert_eq!(err(&c(&mut u, "SUBSCRIBE ch1 other")), NOPERM_CHANNEL);
    // Nothing was subscribed, not even ch1.
    assert_eq!(
        c(&mut admin, "PUBSUB NUMSUB ch1"),
        Value::Array(vec![Value::Bulk(b"ch1".to_vec()), Value::Int(0)])
    );
    // A pattern needs the same pattern literally.
    assert_eq!(err(&c(&mut u, "PSUBSCRIBE ch1*")), NOPERM_CHANNEL);
    assert_eq!(int(c(&mut admin, "PUBSUB NUMPAT")), 0);
    let Value::Array(a) = c(&mut u, "PSUBSCRIBE ch*") else {
        panic!("a subscribe reply");
    };
    assert_eq!(a[2], Value::Int(1));
}

#[test]
fn users_changed_or_deleted_while_connected() {
    let (h, mut admin, mut u) = setup("~* &ch* -@all +get +subscribe");
    assert_eq!(c(&mut u, "GET k"), Value::Null);
    ok(&mut admin, "ACL SETUSER u -get");
    assert_eq!(
        err(&c(&mut u, "GET k")),
        "NOPERM this user has no permissions to run the 'get' command"
    );
    // Channels revoked: a subscriber on a channel no longer allowed is cut off.
    let mut s = Raw::connect(&h);
    ok(&mut s, "AUTH u pw");
    c(&mut s, "SUBSCRIBE ch1");
    ok(&mut admin, "ACL SETUSER u resetchannels &other");
    assert!(s.closed_within(Duration::from_secs(5)));
    assert_eq!(
        c(&mut admin, "PUBSUB NUMSUB ch1"),
        Value::Array(vec![Value::Bulk(b"ch1".to_vec()), Value::Int(0)])
    );
    // Deleted: its connections are closed.
    assert_eq!(int(c(&mut admin, "ACL DELUSER u")), 1);
    assert!(u.closed_within(Duration::from_secs(5)));
    // Deleting yourself answers, then closes.
    ok(&mut admin, "ACL SETUSER me on nopass +@all ~*");
    let mut me = Raw::connect(&h);
    ok(&mut me, "AUTH me x");
    assert_eq!(int(c(&mut me, "ACL DELUSER me")), 1);
    assert!(me.closed_within(Duration::from_secs(5)));
}

fn log_field(entry: &Value, name: &str) -> Value {
    let Value::Array(items) = entry else {
        panic!("a log entry: {entry:?}");
    };
    items
        .chunks(2)
        .find(|kv| kv[0].as_bytes() == Some(name.as_bytes()))
        .map(|kv| kv[1].clone())
        .unwrap_or_else(|| panic!("no {name}"))
}

fn bulk(v: Value) -> String {
    String::from_utf8_lossy(v.as_bytes().expect("a string")).into_owned()
}

#[test]
fn the_acl_log_records_denials_and_failed_auths() {
    let (_h, mut admin, mut u) = setup("~k* -@all +get +multi +discard +eval");
    c(&mut u, "GET x");
    c(&mut u, "GET x");
    c(&mut u, "MULTI");
    c(&mut u, "SET k v");
    c(&mut u, "DISCARD");
    c(&mut u, "EVAL \"return redis.pcall('get','y')\" 0");
    c(&mut admin, "AUTH u wrong");
    let Value::Array(entries) = c(&mut admin, "ACL LOG") else {
        panic!("an array");
    };
    let seen: Vec<(String, String, String, String, i64)> = entries
        .iter()
        .map(|e| {
            (
                bulk(log_field(e, "reason")),
                bulk(log_field(e, "context")),
                bulk(log_field(e, "object")),
                bulk(log_field(e, "username")),
                int(log_field(e, "count")),
            )
        })
        .collect();
    let s = |a: &str, b: &str, o: &str, u: &str, n: i64| {
        (
            a.to_string(),
            b.to_string(),
            o.to_string(),
            u.to_string(),
            n,
        )
    };
    assert_eq!(
        seen,
        vec![
            s("auth", "toplevel", "AUTH", "u", 1),
            s("key", "lua", "y", "u", 1),
            s("command", "multi", "set", "u", 1),
            s("key", "toplevel", "x", "u", 2),
        ]
    );
    let info = bulk(log_field(&entries[3], "client-info"));
    assert!(info.contains(" user=u "), "{info}");
    assert!(info.contains(" cmd="), "{info}");
    ok(&mut admin, "CONFIG SET acllog-max-len 2");
    c(&mut u, "GET z");
    let Value::Array(entries) = c(&mut admin, "ACL LOG") else {
        panic!("an array");
    };
    assert_eq!(entries.len(), 2);
    ok(&mut admin, "ACL LOG RESET");
    assert_eq!(c(&mut admin, "ACL LOG"), Value::Array(vec![]));
}

#[test]
fn client_list_and_kill_by_user() {
    let (_h, mut admin, mut u) = setup("~* +@all");
    let list = bulk(c(&mut admin, "CLIENT LIST"));
    assert!(list.contains(" user=u "), "{list}");
    assert!(list.contains(" user=default "), "{list}");
    assert_eq!(int(c(&mut admin, "CLIENT KILL USER u")), 1);
    assert!(u.closed_within(Duration::from_secs(5)));
    assert_eq!(
        err(&c(&mut admin, "CLIENT KILL USER nosuch")),
        "ERR No such user 'nosuch'"
    );
}

#[test]
fn users_from_config_lines_and_the_acl_file() {
    let dir = common::real_redis::temp_dir("acl-file");
    let file = dir.join("users.acl");
    std::fs::write(
        &file,
        "user alice on >pw ~a* +get\nuser default on nopass ~* &* +@all\n",
    )
    .unwrap();
    let h = common::start_with(&["--aclfile", file.to_str().unwrap()]);
    let mut admin = Raw::connect(&h);
    let mut a = Raw::connect(&h);
    ok(&mut a, "AUTH alice pw");
    assert_eq!(c(&mut a, "GET a1"), Value::Null);
    assert_eq!(err(&c(&mut a, "GET b1")), NOPERM_KEY);
    // ACL SAVE writes every user; ACL LOAD reads them back (all or nothing).
    ok(&mut admin, "ACL SETUSER bob on >x +@all ~*");
    ok(&mut admin, "ACL SAVE");
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.starts_with("user alice on #"), "{saved}");
    assert!(saved.contains("\nuser bob on #"), "{saved}");
    std::fs::write(&file, "user carol on nopass +get\nnot a user line\n").unwrap();
    let e = err(&c(&mut admin, "ACL LOAD"));
    assert!(e.contains("should start with user keyword"), "{e}");
    assert_eq!(int(c(&mut admin, "EXISTS nothing")), 0);
    let Value::Array(users) = c(&mut admin, "ACL USERS") else {
        panic!("an array");
    };
    assert_eq!(users.len(), 3, "unchanged after a failed load");
    // A good file replaces the users; alice's connection is closed.
    std::fs::write(&file, "user carol on nopass +get ~*\n").unwrap();
    ok(&mut admin, "ACL LOAD");
    assert!(a.closed_within(Duration::from_secs(5)));
    assert_eq!(
        c(&mut admin, "ACL USERS"),
        Value::Array(vec![
            Value::Bulk(b"carol".to_vec()),
            Value::Bulk(b"default".to_vec())
        ])
    );
    std::fs::remove_dir_all(&dir).ok();
    // `user` lines in the configuration.
    let h2 = common::start_with(&["--user", "dave", "on", ">pw", "+ping"]);
    let mut d = Raw::connect(&h2);
    ok(&mut d, "AUTH dave pw");
    assert_eq!(c(&mut d, "PING"), Value::Simple(b"PONG".to_vec()));
    assert!(err(&c(&mut d, "GET k")).starts_with("NOPERM"));
}
