//! Redis's intset byte format (intset.c): encoding width (u32 LE), count (u32 LE), sorted LE integers.

/// Writes `values` (strictly increasing) at the narrowest width that holds
/// them all, as Redis's intset after inserting them.
pub fn write(values: &[i64], out: &mut Vec<u8>) {
    let fits = |lo: i64, hi: i64| {
        values.first().is_none_or(|&a| a >= lo) && values.last().is_none_or(|&z| z <= hi)
    };
    let width: usize = if fits(i16::MIN as i64, i16::MAX as i64) {
        2
    } else if fits(i32::MIN as i64, i32::MAX as i64) {
        4
    } else {
        8
    };
    out.clear();
    out.reserve(8 + width * values.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(values.len() as u32).to_le_bytes());
    for &v in values {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
}

/// Reads an intset blob; `None` when the header, the size or the order is wrong.
pub fn read(blob: &[u8]) -> Option<Vec<i64>> {
    if blob.len() < 8 {
        return None;
    }
    let width = u32::from_le_bytes(blob[0..4].try_into().ok()?) as usize;
    let n = u32::from_le_bytes(blob[4..8].try_into().ok()?) as usize;
    if !matches!(width, 2 | 4 | 8) || n.checked_mul(width)?.checked_add(8)? != blob.len() {
        return None;
    }
    let mut v = Vec::with_capacity(n);
    for c in blob[8..].chunks_exact(width) {
        let x = match width {
            2 => i16::from_le_bytes([c[0], c[1]]) as i64,
            4 => i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64,
            _ => i64::from_le_bytes(c.try_into().ok()?),
        };
        if v.last().is_some_and(|&p| p >= x) {
            return None;
        }
        v.push(x);
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_and_order() {
        let mut b = Vec::new();
        for vals in [vec![], vec![-3, 5], vec![1, 70000], vec![-1, 1 << 40]] {
            write(&vals, &mut b);
            assert_eq!(read(&b), Some(vals.clone()));
        }
        write(&[1, 2, 3], &mut b);
        // `SADD s 1 2 3` in a real Redis 7.0.15: the blob inside its DUMP.
        assert_eq!(b, [2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 2, 0, 3, 0]);
        b.swap(8, 10);
        assert_eq!(read(&b), None);
        assert_eq!(read(&b[..9]), None);
    }
}
