//! Unit tests: rules applied and described back, the check with selectors
//! and first-args. (Expected texts were observed on redis-server 7.0.15; the
//! compat cases under compat/cases/acl/ hold the recorded replies.)

use super::check::{check, Denied};
use super::rules::merge_selectors;
use super::{describe, Acl};
use crate::command::gate::resolve;
use crate::command::Argv;

fn acl_with(rules: &str) -> Acl {
    let mut acl = Acl::new(&crate::Config::default());
    let words: Vec<Vec<u8>> = crate::resp::inline::split(rules.as_bytes()).unwrap();
    let refs: Vec<&[u8]> = words.iter().map(|w| w.as_slice()).collect();
    acl.set_user("u", &refs, false).unwrap();
    acl
}

fn run(acl: &Acl, line: &str) -> Result<(), Denied> {
    let argv = Argv::from_slices(line.split(' ').map(|w| w.as_bytes()));
    let args = argv.args();
    let cmd = resolve(&Default::default(), &args).ok().unwrap();
    check(acl.get(b"u").unwrap(), cmd, &args)
}

#[test]
fn rules_are_described_as_redis_writes_them() {
    let line = |rules: &str| {
        let acl = acl_with(rules);
        String::from_utf8(describe::user(acl.get(b"u").unwrap())).unwrap()
    };
    assert_eq!(line(""), "off resetchannels -@all");
    assert_eq!(
        line("on nopass ~a* %R~b* &c +@all -@dangerous"),
        "on nopass ~a* %R~b* resetchannels &c +@all -@dangerous"
    );
    assert_eq!(
        line("+@all -config|set"),
        "off resetchannels +@all -config|set"
    );
    assert_eq!(line("-@all +@set"), "off resetchannels -@all +@set");
    assert_eq!(line("+select|0"), "off resetchannels -@all +select|0");
    assert_eq!(
        line("allkeys (~x +get)"),
        "off ~* resetchannels -@all (~x resetchannels -@all +get)"
    );
}

#[test]
fn the_check_follows_selectors_keys_and_first_args() {
    let acl = acl_with("on ~k* %R~r* -@all +get +set +select|0 (~s* +lpush)");
    assert_eq!(run(&acl, "get k1"), Ok(()));
    assert_eq!(run(&acl, "get r1"), Ok(()));
    assert_eq!(run(&acl, "set r1 v"), Err(Denied::Key(1)));
    assert_eq!(run(&acl, "del k1"), Err(Denied::Command));
    assert_eq!(run(&acl, "select 0"), Ok(()));
    assert_eq!(run(&acl, "select 1"), Err(Denied::Command));
    // The second selector allows LPUSH on s*, the root one GET on k*.
    assert_eq!(run(&acl, "lpush s1 a"), Ok(()));
    assert_eq!(run(&acl, "lpush k1 a"), Err(Denied::Key(1)));
    assert_eq!(run(&acl, "get s1"), Err(Denied::Key(1)));
    // AUTH (no_auth) needs no permission.
    assert_eq!(run(&acl, "auth a b"), Ok(()));
}

#[test]
fn selectors_merge_across_arguments() {
    let a: Vec<&[u8]> = vec![b"on", b"(~a", b"+get)", b"off"];
    assert_eq!(
        merge_selectors(&a).unwrap(),
        vec![b"on".to_vec(), b"(~a +get)".to_vec(), b"off".to_vec()]
    );
    let b: Vec<&[u8]> = vec![b"on", b"(~a", b"+get"];
    assert_eq!(merge_selectors(&b), Err(1));
}

#[test]
fn a_failed_setuser_changes_nothing() {
    let mut acl = acl_with("on >pw ~k*");
    let before = acl.get(b"u").unwrap().clone();
    let r = acl.set_user("u", &[b"off", b"+nosuch"], false);
    assert_eq!(
        r.unwrap_err(),
        "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
    );
    assert_eq!(acl.get(b"u").unwrap(), &before);
}

/// A key pattern's prefix fast path answers as the glob matcher does.
#[test]
fn key_pattern_prefix_path_agrees_with_glob() {
    use super::user::KeyPattern;
    let patterns = [
        "key:*", "*", "k*", "", "key:", "k?y:*", "k[e]y:*", "key\\*", "ke*y*", "key:**",
    ];
    let keys = [
        "key:", "key:1", "key", "k", "", "kay:1", "key*", "KEY:1", "key:1*x", "ke",
    ];
    for p in patterns {
        let kp = KeyPattern::new(p.as_bytes().to_vec(), super::user::KEY_ALL);
        for k in keys {
            assert_eq!(
                kp.matches(k.as_bytes()),
                crate::types::glob::matches(p.as_bytes(), k.as_bytes(), false),
                "pattern {p:?} key {k:?}"
            );
        }
    }
}
