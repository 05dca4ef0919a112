//! Every command's argument parsing and execution through `dispatch`, over a
//! random keyspace: no panic, and every reply well-formed RESP.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use oxidis_fuzz::{commands, harness, run, Input};

fuzz_target!(|data: &[u8]| {
    static CMDS: OnceLock<Vec<Vec<&'static [u8]>>> = OnceLock::new();
    let cmds = CMDS.get_or_init(commands);
    let mut inp = Input(data);
    let mask = inp.byte();
    let mut h = harness(mask);
    if inp.byte() & 1 == 1 {
        run(&mut h, &[b"HELLO".to_vec(), b"3".to_vec()]);
    }
    for _ in 0..24 {
        if inp.is_empty() {
            break;
        }
        let i = u16::from_le_bytes([inp.byte(), inp.byte()]) as usize;
        let mut argv: Vec<Vec<u8>> = cmds[i % cmds.len()].iter().map(|w| w.to_vec()).collect();
        let n = inp.byte() % 9;
        for _ in 0..n {
            argv.push(inp.arg());
        }
        if !run(&mut h, &argv) {
            break;
        }
    }
});
