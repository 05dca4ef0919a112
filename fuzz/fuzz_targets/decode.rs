//! The request decoder (`resp::decode`): no panic on any bytes, ranges inside
//! the buffer, and the same commands whether the bytes arrive at once or in
//! pieces (honouring the decoder's `need`, as `net::conn` does).
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxidis::resp::decode::{inline_word, parse, Limits, Parsed};

/// One decoded request, or the error that ends the stream.
#[derive(Debug, PartialEq)]
enum Event {
    Cmd(Vec<Vec<u8>>),
    Error(String),
}

fn words(buf: &[u8], ranges: &[(usize, usize)], inline: bool) -> Vec<Vec<u8>> {
    ranges
        .iter()
        .map(|&(s, e)| {
            assert!(
                s <= e && e <= buf.len(),
                "range {s}..{e} outside {}",
                buf.len()
            );
            if inline {
                inline_word(&buf[s..e])
            } else {
                buf[s..e].to_vec()
            }
        })
        .collect()
}

/// Parses every complete request in `inbuf`, as `net::conn::process` does.
fn drain(inbuf: &mut Vec<u8>, need: &mut usize, limits: Limits, out: &mut Vec<Event>) -> bool {
    let mut ranges = Vec::new();
    while !inbuf.is_empty() && inbuf.len() >= *need {
        match parse(inbuf, &mut ranges, limits) {
            Parsed::Incomplete { need: n } => {
                assert!(n > inbuf.len(), "need {n} with {} buffered", inbuf.len());
                *need = n;
                return true;
            }
            Parsed::Error(m) => {
                out.push(Event::Error(m));
                return false;
            }
            Parsed::Command { consumed, inline } => {
                assert!(consumed > 0 && consumed <= inbuf.len());
                for &(_, e) in &ranges {
                    assert!(e <= consumed, "argument past the consumed bytes");
                }
                out.push(Event::Cmd(words(inbuf, &ranges, inline)));
                inbuf.drain(..consumed);
                *need = 1;
            }
        }
    }
    true
}

/// Events up to (not including) the first "too big" error: whether a long
/// line is refused depends on how much of it has arrived, in Redis too.
fn comparable(ev: &[Event]) -> &[Event] {
    let end = ev
        .iter()
        .position(|e| matches!(e, Event::Error(m) if m.starts_with("too big")))
        .unwrap_or(ev.len());
    &ev[..end]
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let limits = Limits {
        max_bulk: if data[0] & 1 == 0 { 512 << 20 } else { 16 },
        authenticated: data[0] & 2 == 0,
    };
    let chunk = 1 + data[1] as usize % 64;
    let body = &data[2..];

    let mut whole = Vec::new();
    let mut buf = body.to_vec();
    drain(&mut buf, &mut 1, limits, &mut whole);

    let mut pieces = Vec::new();
    let mut inbuf = Vec::new();
    let mut need = 1;
    for c in body.chunks(chunk) {
        inbuf.extend_from_slice(c);
        if !drain(&mut inbuf, &mut need, limits, &mut pieces) {
            break;
        }
    }
    let (a, b) = (comparable(&whole), comparable(&pieces));
    let n = a.len().min(b.len());
    assert_eq!(a[..n], b[..n], "chunked decoding differs");
    if a.len() == whole.len() && b.len() == pieces.len() {
        assert_eq!(whole, pieces, "chunked decoding differs");
    }
});
