//! FUNCTION DUMP / RESTORE payloads in Redis's format: each library as
//! `RDB_OPCODE_FUNCTION2` plus its code as an RDB string, then the RDB
//! version (2 bytes, little endian) and a CRC64 (Jones) of everything before.
//! Oxidis writes strings uncompressed; it reads LZF-compressed ones too.

const OPCODE_FUNCTION2: u8 = 245;
const RDB_VERSION: u16 = 10;

/// CRC64 with the Jones polynomial, reflected, as Redis's `crc64`.
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    const POLY: u64 = 0x95AC_9329_AC4B_C9B5;
    for &b in data {
        crc ^= b as u64;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
        }
    }
    crc
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    if n < 64 {
        out.push(n as u8);
    } else if n < 16384 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u32::MAX as usize {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&(n as u64).to_be_bytes());
    }
}

/// Serializes library codes.
pub fn dump(codes: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in codes {
        out.push(OPCODE_FUNCTION2);
        put_len(&mut out, c.len());
        out.extend_from_slice(c);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

struct Reader<'a> {
    b: &'a [u8],
    p: usize,
}

const BAD: &str = "DUMP payload version or checksum are wrong";

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let v = *self.b.get(self.p)?;
        self.p += 1;
        Some(v)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.p..self.p.checked_add(n)?)?;
        self.p += n;
        Some(s)
    }

    /// A length, or `Err(enc)` for a special string encoding.
    fn len(&mut self) -> Option<Result<usize, u8>> {
        let b = self.byte()?;
        Some(match b >> 6 {
            0 => Ok((b & 0x3f) as usize),
            1 => Ok((((b & 0x3f) as usize) << 8) | self.byte()? as usize),
            2 if b == 0x80 => Ok(u32::from_be_bytes(self.take(4)?.try_into().ok()?) as usize),
            2 if b == 0x81 => Ok(u64::from_be_bytes(self.take(8)?.try_into().ok()?) as usize),
            3 => Err(b & 0x3f),
            _ => return None,
        })
    }

    fn string(&mut self) -> Option<Vec<u8>> {
        match self.len()? {
            Ok(n) => Some(self.take(n)?.to_vec()),
            Err(0) => Some((self.byte()? as i8).to_string().into_bytes()),
            Err(1) => Some(
                i16::from_le_bytes(self.take(2)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            Err(2) => Some(
                i32::from_le_bytes(self.take(4)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            Err(3) => {
                let clen = self.len()?.ok()?;
                let ulen = self.len()?.ok()?;
                lzf_decompress(self.take(clen)?, ulen)
            }
            Err(_) => None,
        }
    }
}

/// LZF decompression (the format Redis compresses RDB strings with).
pub fn lzf_decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    // The length comes from the payload: reserve no more than the input can
    // expand to (a 3-byte back reference yields at most 264 bytes), and stop
    // as soon as the output would pass the declared length.
    let mut out = Vec::with_capacity(out_len.min(input.len().saturating_mul(88)));
    let mut i = 0;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            out.extend_from_slice(input.get(i..i + n)?);
            i += n;
            if out.len() > out_len {
                return None;
            }
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input.get(i)? as usize;
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + *input.get(i)? as usize + 1;
            i += 1;
            let start = out.len().checked_sub(back)?;
            if out.len() + len + 2 > out_len {
                return None;
            }
            for k in 0..len + 2 {
                let c = out[start + k];
                out.push(c);
            }
        }
    }
    (out.len() == out_len).then_some(out)
}

/// Parses a payload into library codes, with Redis's error texts.
pub fn restore(data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    if data.len() < 10 {
        return Err(BAD.into());
    }
    let body = &data[..data.len() - 10];
    let ver = u16::from_le_bytes([data[data.len() - 10], data[data.len() - 9]]);
    let crc = u64::from_le_bytes(data[data.len() - 8..].try_into().unwrap_or_default());
    if ver > RDB_VERSION || crc64(0, &data[..data.len() - 8]) != crc {
        return Err(BAD.into());
    }
    let mut r = Reader { b: body, p: 0 };
    let mut codes = Vec::new();
    while r.p < body.len() {
        let op = r.byte().ok_or("payload is invalid")?;
        if op != OPCODE_FUNCTION2 {
            return Err("given type is not a function".into());
        }
        codes.push(r.string().ok_or("Failed loading library payload")?);
    }
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_check_value() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn dump_restore_roundtrip() {
        let codes: Vec<&[u8]> = vec![b"#!lua name=a\nx", &[b'y'; 300]];
        let p = dump(&codes);
        let back = restore(&p).unwrap();
        assert_eq!(back[0], codes[0]);
        assert_eq!(back[1], codes[1]);
        let mut bad = p.clone();
        bad[3] ^= 1;
        assert!(restore(&bad).is_err());
    }

    #[test]
    fn lzf_literal_and_backref() {
        // "abcabcabc": literal "abc" then a back reference of length 6, offset 3.
        let input = [2, b'a', b'b', b'c', (4 << 5), 2];
        assert_eq!(lzf_decompress(&input, 9).unwrap(), b"abcabcabc");
    }
}
