//! FUNCTION DUMP/RESTORE payloads (`persist::rdb::{dump,restore}_functions`): parsing any body behind
//! a correct version and CRC64, the dump→restore round trip, and FUNCTION
//! RESTORE through the dispatcher.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use oxidis::fuzzing::Harness;
use oxidis::persist::rdb::{crc64, dump_functions, restore_functions};

thread_local! {
    // One harness for all runs: a Lua VM per run would dominate the time.
    static H: RefCell<Harness> = RefCell::new(Harness::default());
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, body)) = data.split_first() else {
        return;
    };
    // The round trip: codes split on 0xff come back unchanged.
    let codes: Vec<&[u8]> = body.split(|&b| b == 0xff).collect();
    let dumped = dump_functions(codes.iter().copied(), flags & 0x40 != 0);
    let back = restore_functions(&dumped).expect("a dump restores");
    assert_eq!(back, codes.iter().map(|c| c.to_vec()).collect::<Vec<_>>());

    // Any body with a valid trailer.
    let mut p = body.to_vec();
    p.extend_from_slice(&u16::from(flags % 12).to_le_bytes());
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    let parsed = restore_functions(&p);
    if flags & 0x80 != 0 && parsed.is_ok() {
        H.with(|h| {
            let mut h = h.borrow_mut();
            let policy: &[u8] = [&b"APPEND"[..], b"REPLACE", b"FLUSH"][(flags as usize >> 4) % 3];
            h.run(&[b"FUNCTION", b"RESTORE", &p, policy]);
            h.run(&[b"FUNCTION", b"LIST"]);
            h.run(&[b"FUNCTION", b"DUMP"]);
            h.run(&[b"FUNCTION", b"FLUSH"]);
        });
    }
});
