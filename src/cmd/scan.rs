//! The SCAN family's shared parts (SCAN, HSCAN, SSCAN, ZSCAN): cursor, options, bounded walk, reply.
//!
//! Redis's `parseScanCursorOrReply` and `scanGenericCommand`: the cursor is
//! read first, then (for HSCAN/SSCAN/ZSCAN) the key, then the options, so a
//! missing key answers an empty scan whatever options follow.

use crate::command::Args;
use crate::error::Error;
use crate::resp::encode::Reply;
use crate::types::glob;

/// Parsed `[MATCH pattern] [COUNT count] [TYPE type]`.
pub struct ScanOpts<'a> {
    /// None when absent or exactly `*` (Redis skips matching then).
    pub pattern: Option<&'a [u8]>,
    /// The COUNT hint, at least 1 (default 10).
    pub count: usize,
    /// SCAN's TYPE filter (a type name as TYPE answers it).
    pub kind: Option<&'a [u8]>,
}

impl ScanOpts<'_> {
    /// True when `item` passes the MATCH filter.
    pub fn keeps(&self, item: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob::matches(p, item, false))
    }
}

/// A SCAN cursor as C's `strtoul` reads it: an optional sign (a negative
/// value wraps around), digits and nothing after; the empty string is 0.
/// Leading spaces, other bases and values past `u64` are `invalid cursor`.
pub fn parse_cursor(arg: &[u8]) -> Result<u64, Error> {
    if arg.is_empty() {
        return Ok(0); // strtoul reads nothing and stops at the end: cursor 0
    }
    let (neg, digits) = match arg[0] {
        b'-' => (true, &arg[1..]),
        b'+' => (false, &arg[1..]),
        _ => (false, arg),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(Error::InvalidCursor);
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add((d - b'0') as u64))
            .ok_or(Error::InvalidCursor)?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// Parses the options from argument `at` on; `TYPE` only when `with_type`
/// (SCAN itself), otherwise it is a syntax error as in Redis.
pub fn parse_opts<'a>(args: &Args<'a>, at: usize, with_type: bool) -> Result<ScanOpts<'a>, Error> {
    let mut o = ScanOpts {
        pattern: None,
        count: 10,
        kind: None,
    };
    let mut i = at;
    while i < args.len() {
        let (opt, more) = (args.at(i), args.len() - i >= 2);
        if opt.eq_ignore_ascii_case(b"COUNT") && more {
            let n = crate::types::number::parse_i64(args.at(i + 1)).ok_or(Error::NotInteger)?;
            if n < 1 {
                return Err(Error::Syntax);
            }
            o.count = n as usize;
        } else if opt.eq_ignore_ascii_case(b"MATCH") && more {
            let p = args.at(i + 1);
            o.pattern = (p != b"*").then_some(p);
        } else if opt.eq_ignore_ascii_case(b"TYPE") && with_type && more {
            o.kind = Some(args.at(i + 1));
        } else {
            return Err(Error::Syntax);
        }
        i += 2;
    }
    Ok(o)
}

/// Walks a hash table from `cursor`: `step` visits one bucket, adds how
/// many items it gathered (before any filtering) to its counter and returns
/// the next cursor. Stops when the iteration is complete, `limit` items were
/// gathered, or after `limit * 10` further steps (a sparse table must not
/// block the server). `limit` counts reply items: twice COUNT for hashes and
/// sorted sets, whose fields come with their values. Returns the cursor.
pub fn walk(mut cursor: u64, limit: usize, mut step: impl FnMut(u64, &mut usize) -> u64) -> u64 {
    let mut gathered = 0;
    let mut budget = limit.saturating_mul(10);
    loop {
        cursor = step(cursor, &mut gathered);
        if cursor == 0 || budget == 0 || gathered >= limit {
            return cursor;
        }
        budget -= 1;
    }
}

/// Writes a SCAN-family reply: the next cursor, then the items.
pub fn reply<T: AsRef<[u8]>>(out: &mut Reply, cursor: u64, items: &[T]) {
    out.array(2);
    out.bulk(itoa::Buffer::new().format(cursor).as_bytes());
    out.array(items.len());
    for it in items {
        out.bulk(it.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected values observed on redis-server 7.0.15 (strtoul's rules).
    #[test]
    fn cursors_parse_as_strtoul() {
        assert_eq!(parse_cursor(b""), Ok(0));
        assert_eq!(parse_cursor(b"0"), Ok(0));
        assert_eq!(parse_cursor(b"+12"), Ok(12));
        assert_eq!(parse_cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Ok(u64::MAX));
        for bad in [
            &b"18446744073709551616"[..],
            b" 1",
            b"1 ",
            b"0x10",
            b"-",
            b"1.0",
        ] {
            assert_eq!(parse_cursor(bad), Err(Error::InvalidCursor), "{bad:?}");
        }
    }

    #[test]
    fn walk_stops_on_end_count_or_budget() {
        // Completes: the step says cursor 0.
        assert_eq!(walk(5, 10, |c, _| c - 1), 0);
        // Enough items gathered.
        assert_eq!(
            walk(100, 4, |c, n| {
                *n += 3;
                c + 1
            }),
            102
        );
        // An empty sparse table: one step plus ten per requested item.
        let mut steps = 0;
        walk(1, 2, |c, _| {
            steps += 1;
            c + 1
        });
        assert_eq!(steps, 21);
    }
}
