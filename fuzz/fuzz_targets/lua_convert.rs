//! Lua ↔ RESP conversion (`script::convert`) and the libraries scripts parse
//! bytes with: EVAL of `redis.pcall` on fuzzed commands (every reply type into
//! Lua and back), and of cjson / cmsgpack / struct on fuzzed bytes, in RESP2
//! and RESP3 (`redis.setresp(3)`).
#![no_main]

use std::cell::RefCell;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use oxidis::fuzzing::Harness;
use oxidis_fuzz::{commands, harness, refused, seed, Input};

/// Script bodies; ARGV holds the fuzzed words. None loops, so none can hang.
const SCRIPTS: &[&str] = &[
    "return redis.pcall(unpack(ARGV))",
    "return {redis.pcall(unpack(ARGV))}",
    "local r = redis.pcall(unpack(ARGV)) return {type(r), r}",
    "return cjson.decode(ARGV[1])",
    "return cmsgpack.unpack(ARGV[1])",
    "return {cmsgpack.unpack(ARGV[1])}",
    "return cjson.encode(cmsgpack.unpack(ARGV[1]))",
    "return cmsgpack.pack(cjson.decode(ARGV[1]))",
    "return cjson.encode(cjson.decode(ARGV[1]))",
    "return {struct.unpack(ARGV[1], ARGV[2])}",
    "return struct.pack(ARGV[1], ARGV[2], ARGV[3])",
    "return redis.sha1hex(ARGV[1])",
    "return redis.status_reply(ARGV[1])",
    "return redis.error_reply(ARGV[1])",
    "return {err = ARGV[1]}",
    "return {ok = ARGV[1]}",
    "return {double = tonumber(ARGV[1])}",
    "return {big_number = ARGV[1]}",
    "return {map = cjson.decode(ARGV[1])}",
    "return {set = cjson.decode(ARGV[1])}",
    "return {verbatim_string = {format = ARGV[1], string = ARGV[2]}}",
    "return tonumber(ARGV[1])",
    "return {tonumber(ARGV[1]), tonumber(ARGV[2])}",
    "return bit.tohex(tonumber(ARGV[1]) or 0, tonumber(ARGV[2]) or 0)",
];

thread_local! {
    // One harness for all runs (a Lua VM per run would dominate the time);
    // each run starts from FLUSHALL and a fresh random keyspace.
    static H: RefCell<Harness> = RefCell::new(harness(0));
}

fuzz_target!(|data: &[u8]| {
    static CMDS: OnceLock<Vec<Vec<&'static [u8]>>> = OnceLock::new();
    let cmds = CMDS.get_or_init(commands);
    let mut inp = Input(data);
    let flags = inp.byte();
    let script_no = inp.byte() as usize % SCRIPTS.len();
    let mut script = String::new();
    if flags & 1 == 1 {
        script.push_str("redis.setresp(3) ");
    }
    script.push_str(SCRIPTS[script_no]);
    let mut argv: Vec<Vec<u8>> = vec![b"EVAL".to_vec(), script.into_bytes(), b"0".to_vec()];
    if script_no < 3 {
        let i = u16::from_le_bytes([inp.byte(), inp.byte()]) as usize;
        argv.extend(cmds[i % cmds.len()].iter().map(|w| w.to_vec()));
        for _ in 0..inp.byte() % 8 {
            argv.push(inp.arg());
        }
        if refused(&argv[3..]) {
            return;
        }
    } else {
        // Raw arguments split on 0xff, so whole payloads reach cjson/cmsgpack.
        argv.extend(inp.0.split(|&b| b == 0xff).take(3).map(|a| a.to_vec()));
    }
    H.with(|h| {
        let mut h = h.borrow_mut();
        // Undo what an earlier run may have left that stops all requests.
        h.srv.pause = None;
        h.cell.kill.set(false);
        let mut c = h.cell.state.borrow_mut();
        (c.close_after_reply, c.postponed) = (false, false);
        drop(c);
        h.run(&[b"FLUSHALL"]);
        seed(&mut h, flags >> 1);
        h.run(&[b"HELLO", if flags & 0x80 != 0 { b"3" } else { b"2" }]);
        let words: Vec<&[u8]> = argv.iter().map(|a| &a[..]).collect();
        h.run(&words);
    });
});
