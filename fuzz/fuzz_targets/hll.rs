//! HyperLogLog payload loading: a fuzzed string value (optionally behind a
//! valid `HYLL` magic) read by PFCOUNT, PFADD, PFMERGE and PFDEBUG.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxidis_fuzz::{harness, run};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, body)) = data.split_first() else {
        return;
    };
    let mut value = Vec::new();
    if flags & 1 == 1 {
        value.extend_from_slice(b"HYLL");
    }
    value.extend_from_slice(body);
    let mut h = harness(flags & 0x40); // `p` is a valid HLL when bit 6 is set
    let v = |s: &[u8]| s.to_vec();
    run(&mut h, &[v(b"SET"), v(b"f"), value]);
    let ops: [&[&[u8]]; 9] = [
        &[b"PFCOUNT", b"f"],
        &[b"PFADD", b"f", b"a", b"b", b"zzz"],
        &[b"PFCOUNT", b"f", b"p"],
        &[b"PFMERGE", b"d", b"f", b"p"],
        &[b"PFMERGE", b"f", b"p"],
        &[b"PFDEBUG", b"GETREG", b"f"],
        &[b"PFDEBUG", b"DECODE", b"f"],
        &[b"PFDEBUG", b"TODENSE", b"f"],
        &[b"PFADD", b"f"],
    ];
    // Bits 1..5 pick which of the operations run after the first PFCOUNT.
    for (i, op) in ops.iter().enumerate() {
        if i == 0 || flags & (1 << (i % 6)) != 0 {
            let argv: Vec<Vec<u8>> = op.iter().map(|a| a.to_vec()).collect();
            if !run(&mut h, &argv) {
                break;
            }
        }
    }
});
