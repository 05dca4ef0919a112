//! The request decoder (`resp::decode`): no panic on any bytes, ranges inside
//! the buffer, and the same commands whether the bytes arrive at once or in
//! pieces (one `Decoder` kept across reads, honouring its `need`, as
//! `net::conn` does).
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxidis::error::ProtocolError;
use oxidis::resp::decode::{Decoder, Limits, Parsed};

/// One decoded request, or the error that ends the stream.
#[derive(Debug, PartialEq)]
enum Event {
    Cmd(Vec<Vec<u8>>),
    Error(ProtocolError),
}

/// Parses every complete request in `inbuf` with the connection's decoder,
/// as `net::conn::process` does (state kept across reads).
fn drain(
    inbuf: &mut Vec<u8>,
    need: &mut usize,
    dec: &mut Decoder,
    limits: Limits,
    out: &mut Vec<Event>,
) -> bool {
    while !inbuf.is_empty() && inbuf.len() >= *need {
        match dec.parse(inbuf, limits) {
            Parsed::Incomplete { need: n } => {
                assert!(n > inbuf.len(), "need {n} with {} buffered", inbuf.len());
                assert!(dec.parsed_len() <= inbuf.len(), "parsed past the buffer");
                *need = n;
                return true;
            }
            Parsed::Error(e) => {
                out.push(Event::Error(e));
                return false;
            }
            Parsed::Command { consumed } => {
                assert!(consumed > 0 && consumed <= inbuf.len());
                let (buf, ranges) = dec.request(&inbuf[..consumed]);
                let words = ranges
                    .iter()
                    .map(|&(s, e)| {
                        assert!(
                            s <= e && e <= buf.len(),
                            "range {s}..{e} outside {}",
                            buf.len()
                        );
                        buf[s..e].to_vec()
                    })
                    .collect();
                out.push(Event::Cmd(words));
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
        .position(|e| {
            matches!(
                e,
                Event::Error(
                    ProtocolError::TooBigInline
                        | ProtocolError::TooBigMbulkCount
                        | ProtocolError::TooBigBulkCount
                )
            )
        })
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
    drain(
        &mut buf,
        &mut 1,
        &mut Decoder::default(),
        limits,
        &mut whole,
    );

    let mut pieces = Vec::new();
    let mut inbuf = Vec::new();
    let mut need = 1;
    let mut dec = Decoder::default();
    for c in body.chunks(chunk) {
        inbuf.extend_from_slice(c);
        if !drain(&mut inbuf, &mut need, &mut dec, limits, &mut pieces) {
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
