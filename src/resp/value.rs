//! A parsed RESP reply tree: read back from bytes (script replies, recorded
//! metadata, tests) and written out again in either protocol.

use super::encode::Reply;

/// One RESP2/RESP3 reply.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Simple(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Bulk(Vec<u8>),
    /// `$-1` (RESP2) or `_` (RESP3).
    Null,
    /// `*-1` (RESP2 only; RESP3 has a single null).
    NullArray,
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
    Set(Vec<Value>),
    Push(Vec<Value>),
    Double(f64),
    /// The text of a RESP3 double as sent, e.g. `inf`, kept for byte-exact replays.
    DoubleText(Vec<u8>),
    Bool(bool),
    BigNumber(Vec<u8>),
    Verbatim(Vec<u8>, Vec<u8>),
}

/// Parses one reply from `buf`. Returns the value and the bytes it used, or
/// `None` when the buffer does not hold a complete reply yet.
pub fn parse_value(buf: &[u8]) -> Result<Option<(Value, usize)>, String> {
    let mut pos = 0;
    match parse_at(buf, &mut pos)? {
        Some(v) => Ok(Some((v, pos))),
        None => Ok(None),
    }
}

fn line<'a>(buf: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let start = *pos;
    let rel = buf[start..].windows(2).position(|w| w == b"\r\n")?;
    *pos = start + rel + 2;
    Some(&buf[start..start + rel])
}

fn num(s: &[u8]) -> Result<i64, String> {
    std::str::from_utf8(s)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad number {:?}", String::from_utf8_lossy(s)))
}

fn parse_at(buf: &[u8], pos: &mut usize) -> Result<Option<Value>, String> {
    if *pos >= buf.len() {
        return Ok(None);
    }
    let kind = buf[*pos];
    *pos += 1;
    let Some(l) = line(buf, pos) else {
        return Ok(None);
    };
    let v = match kind {
        b'+' => Value::Simple(l.to_vec()),
        b'-' => Value::Error(l.to_vec()),
        b':' => Value::Int(num(l)?),
        b'_' => Value::Null,
        b'#' => Value::Bool(l == b"t"),
        b',' => match std::str::from_utf8(l).ok().and_then(|s| s.parse().ok()) {
            Some(d) => Value::Double(d),
            None => Value::DoubleText(l.to_vec()),
        },
        b'(' => Value::BigNumber(l.to_vec()),
        b'$' | b'=' | b'!' => {
            let n = num(l)?;
            if n < 0 {
                return Ok(Some(Value::Null));
            }
            let n = n as usize;
            if buf.len() < *pos + n + 2 {
                return Ok(None);
            }
            let body = buf[*pos..*pos + n].to_vec();
            *pos += n + 2;
            match kind {
                b'$' => Value::Bulk(body),
                b'!' => Value::Error(body),
                _ => {
                    let (fmt, txt) = if body.len() >= 4 {
                        (body[..3].to_vec(), body[4..].to_vec())
                    } else {
                        (Vec::new(), body)
                    };
                    Value::Verbatim(fmt, txt)
                }
            }
        }
        b'*' | b'~' | b'>' => {
            let n = num(l)?;
            if n < 0 {
                return Ok(Some(Value::NullArray));
            }
            let mut items = Vec::with_capacity((n as usize).min(1024));
            for _ in 0..n {
                match parse_at(buf, pos)? {
                    Some(v) => items.push(v),
                    None => return Ok(None),
                }
            }
            match kind {
                b'*' => Value::Array(items),
                b'~' => Value::Set(items),
                _ => Value::Push(items),
            }
        }
        b'%' | b'|' => {
            let n = num(l)?;
            let mut items = Vec::with_capacity((n as usize).min(1024));
            for _ in 0..n {
                let Some(k) = parse_at(buf, pos)? else {
                    return Ok(None);
                };
                let Some(v) = parse_at(buf, pos)? else {
                    return Ok(None);
                };
                items.push((k, v));
            }
            if kind == b'|' {
                // An attribute precedes the real reply; we keep only the reply.
                return parse_at(buf, pos);
            }
            Value::Map(items)
        }
        other => return Err(format!("unknown reply type byte {:?}", other as char)),
    };
    Ok(Some(v))
}

impl Value {
    /// Writes the value for `out`'s protocol, downgrading RESP3 types for RESP2
    /// the way Redis does (maps flatten, sets become arrays, doubles bulk strings).
    pub fn write(&self, out: &mut Reply) {
        match self {
            Value::Simple(s) => out.simple_bytes(s),
            Value::Error(e) => {
                out.raw(b"-");
                out.raw(e);
                out.raw(b"\r\n");
            }
            Value::Int(n) => out.int(*n),
            Value::Bulk(b) => out.bulk(b),
            Value::Null => out.null(),
            Value::NullArray => out.null_array(),
            Value::Array(items) => {
                out.array(items.len());
                items.iter().for_each(|v| v.write(out));
            }
            Value::Set(items) => {
                out.set(items.len());
                items.iter().for_each(|v| v.write(out));
            }
            Value::Push(items) => {
                out.push(items.len());
                items.iter().for_each(|v| v.write(out));
            }
            Value::Map(pairs) => {
                out.map(pairs.len());
                for (k, v) in pairs {
                    k.write(out);
                    v.write(out);
                }
            }
            Value::Double(d) => out.double(*d),
            Value::DoubleText(t) => {
                if out.resp3() {
                    out.raw(b",");
                    out.raw(t);
                    out.raw(b"\r\n");
                } else {
                    out.bulk(t);
                }
            }
            Value::Bool(b) => out.boolean(*b),
            Value::BigNumber(n) => {
                if out.resp3() {
                    out.raw(b"(");
                    out.raw(n);
                    out.raw(b"\r\n");
                } else {
                    out.bulk(n);
                }
            }
            Value::Verbatim(_, txt) => out.verbatim(txt),
        }
    }

    /// Convenience for tests and metadata: a bulk or simple string's bytes.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Simple(s) | Value::Bulk(s) | Value::Verbatim(_, s) => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_downgrade() {
        let src = b"%2\r\n+a\r\n~1\r\n:1\r\n$1\r\nb\r\n,1.5\r\n";
        let (v, used) = parse_value(src).unwrap().unwrap();
        assert_eq!(used, src.len());
        let mut r3 = Reply::new(3);
        v.write(&mut r3);
        assert_eq!(&r3.buf[..], &src[..]);
        let mut r2 = Reply::new(2);
        v.write(&mut r2);
        assert_eq!(
            &r2.buf[..],
            b"*4\r\n+a\r\n*1\r\n:1\r\n$1\r\nb\r\n$3\r\n1.5\r\n"
        );
        assert_eq!(parse_value(b"*2\r\n:1\r\n").unwrap(), None);
    }
}
