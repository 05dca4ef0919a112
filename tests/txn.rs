//! Transactions over real sockets: optimistic locking with WATCH under concurrency.

mod common;

use redis::Commands;

/// Redis's WATCH recipe (GET, then MULTI/SET/EXEC, retried when EXEC
/// answers nil) run by 20 clients at once must lose no increment.
#[test]
fn watch_counter_with_20_concurrent_clients_is_exact() {
    let h = common::start();
    let mut c = common::conn(&h);
    let _: () = c.set("counter", 0).unwrap();
    const CLIENTS: usize = 20;
    const INCRS: usize = 50;
    let threads: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let client = common::client(&h);
            std::thread::spawn(move || {
                let mut con = client.get_connection().unwrap();
                let mut retries = 0usize;
                for _ in 0..INCRS {
                    // Bounded: every round some client's EXEC succeeds.
                    for attempt in 0.. {
                        assert!(attempt < 100_000, "no progress");
                        let _: () = redis::cmd("WATCH").arg("counter").query(&mut con).unwrap();
                        let v: i64 = con.get("counter").unwrap();
                        let res: Option<(String,)> = redis::pipe()
                            .atomic()
                            .set("counter", v + 1)
                            .query(&mut con)
                            .unwrap();
                        if res.is_some() {
                            break;
                        }
                        retries += 1;
                    }
                }
                retries
            })
        })
        .collect();
    let retries: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let v: i64 = c.get("counter").unwrap();
    assert_eq!(v, (CLIENTS * INCRS) as i64, "after {retries} retries");
}

/// A queueing error dooms the whole transaction; a run-time error does not.
#[test]
fn queueing_errors_abort_and_runtime_errors_do_not() {
    let h = common::start();
    let mut r = common::Raw::connect(&h);
    r.cmd(&[b"MULTI"]);
    assert_eq!(r.read_raw(), b"+OK\r\n");
    r.cmd(&[b"SET", b"a", b"1"]);
    assert_eq!(r.read_raw(), b"+QUEUED\r\n");
    r.cmd(&[b"NOSUCH"]);
    r.read_raw();
    r.cmd(&[b"EXEC"]);
    assert_eq!(
        r.read_raw(),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    r.cmd(&[b"GET", b"a"]);
    assert_eq!(r.read_raw(), b"$-1\r\n");
    // SELECT out of range fails inside EXEC only; the rest runs.
    r.cmd(&[b"MULTI"]);
    r.read_raw();
    r.cmd(&[b"SELECT", b"999"]);
    r.read_raw();
    r.cmd(&[b"SET", b"a", b"2"]);
    r.read_raw();
    r.cmd(&[b"EXEC"]);
    assert_eq!(
        r.read_raw(),
        b"*2\r\n-ERR DB index is out of range\r\n+OK\r\n"
    );
}

/// A key another client changes between WATCH and EXEC makes EXEC answer nil.
#[test]
fn watched_key_touched_by_other_client_fails_exec() {
    let h = common::start();
    let mut a = common::Raw::connect(&h);
    let mut b = common::conn(&h);
    a.cmd(&[b"WATCH", b"k"]);
    a.read_raw();
    let _: () = b.set("k", "v").unwrap();
    a.cmd(&[b"MULTI"]);
    a.read_raw();
    a.cmd(&[b"GET", b"k"]);
    a.read_raw();
    a.cmd(&[b"EXEC"]);
    assert_eq!(a.read_raw(), b"*-1\r\n");
}
