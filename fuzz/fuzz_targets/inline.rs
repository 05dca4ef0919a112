//! The inline command splitter (`resp::decode` on a line not starting with
//! `*`): no panic, and, with `OXIDIS_FUZZ_INLINE_MODEL=1`, the same words or
//! error as a model of Redis 7.0's `processInlineBuffer` + `sdssplitargs`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxidis::error::ProtocolError;
use oxidis::resp::decode::{Decoder, Limits, Parsed};

fn c_isspace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `sdssplitargs` over a C string (it ends at the first NUL).
fn sdssplitargs(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut p = 0;
    let mut out = Vec::new();
    loop {
        while at(p) != 0 && c_isspace(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return Some(out);
        }
        let (mut inq, mut insq, mut done) = (false, false, false);
        let mut cur = Vec::new();
        while !done {
            let c = at(p);
            if inq || insq {
                let quote = if inq { b'"' } else { b'\'' };
                if inq
                    && c == b'\\'
                    && at(p + 1) == b'x'
                    && at(p + 2).is_ascii_hexdigit()
                    && at(p + 3).is_ascii_hexdigit()
                {
                    let h = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
                    cur.push(h(at(p + 2)) * 16 + h(at(p + 3)));
                    p += 3;
                } else if inq && c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    cur.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        o => o,
                    });
                } else if insq && c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if c == quote {
                    // A closing quote must be followed by a blank or the end.
                    if at(p + 1) != 0 && !c_isspace(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None; // unterminated quotes
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    _ => cur.push(c),
                }
            }
            if at(p) != 0 {
                p += 1;
            }
        }
        out.push(cur);
    }
}

/// Redis's answer for one inline line (terminated by `\n`, no NUL in it).
fn model(line: &[u8]) -> Result<Vec<Vec<u8>>, ()> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    sdssplitargs(line).ok_or(())
}

fuzz_target!(|data: &[u8]| {
    if data.first() == Some(&b'*') {
        return;
    }
    let mut buf = data.to_vec();
    buf.push(b'\n');
    let limits = Limits {
        max_bulk: 512 << 20,
        authenticated: true,
    };
    let mut dec = Decoder::default();
    let got = match dec.parse(&buf, limits) {
        Parsed::Command { consumed } => {
            assert!(consumed <= buf.len());
            let (words, ranges) = dec.request(&buf[..consumed]);
            Ok(ranges
                .iter()
                .map(|&(s, e)| words[s..e].to_vec())
                .collect::<Vec<_>>())
        }
        Parsed::Error(e) => {
            assert_eq!(e, ProtocolError::UnbalancedQuotes);
            Err(())
        }
        Parsed::Incomplete { .. } => {
            // Redis finds the line end with strchr: a NUL before the newline
            // hides it, and the request waits for more input.
            assert!(data.contains(&0), "a line ending in \\n is complete");
            return;
        }
    };
    let line = &buf[..buf.iter().position(|&b| b == b'\n').unwrap_or(0)];
    if std::env::var_os("OXIDIS_FUZZ_INLINE_MODEL").is_some() && !line.contains(&0) {
        assert_eq!(
            got,
            model(line),
            "inline split differs from Redis for {line:?}"
        );
    }
});
