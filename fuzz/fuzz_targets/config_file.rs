//! The config-file parser (`Config::load_text`): no panic on any text, and
//! every value it accepted reads back the same when written as CONFIG
//! REWRITE writes it (`config::rewrite::option_lines`) and loaded again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxidis::config::rewrite::option_lines;
use oxidis::config::split_config_line;
use oxidis::Config;

/// Directives that touch the file system or the process (include reads a
/// file, dir changes the working directory): left out of the fuzzed text.
fn outside(line: &[u8]) -> bool {
    split_config_line(line.trim_ascii())
        .and_then(|w| w.first().cloned())
        .is_some_and(|w| w.eq_ignore_ascii_case(b"include") || w.eq_ignore_ascii_case(b"dir"))
}

fuzz_target!(|data: &[u8]| {
    let text: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|l| !outside(l))
        .collect();
    let text = text.join(&b'\n');
    let mut cfg = Config::default();
    if cfg.load_text(&text).is_err() {
        return;
    }
    let fresh = Config::default();
    for (prm, value) in cfg.all() {
        // replicaof: the host is written unquoted, as Redis's rewrite does.
        if fresh.get_bytes(prm.name) == Some(value) || matches!(prm.name, "dir" | "replicaof") {
            continue;
        }
        let line = option_lines(prm.name, prm.kind, value).join("\n");
        let mut again = Config::default();
        let r = again.load_text(line.as_bytes());
        assert!(r.is_ok(), "{line:?} does not load back: {r:?}");
        assert_eq!(
            again.get_bytes(prm.name),
            Some(value),
            "{line:?} reads back differently"
        );
    }
});
