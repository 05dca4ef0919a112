//! HyperLogLog in Redis's exact byte representation (hyperloglog.c), so that
//! keys written by PFADD/PFMERGE are byte-for-byte what Redis would store and
//! PFCOUNT gives the same estimates.
//!
//! Layout: a 16-byte header (`HYLL`, encoding byte 0 dense / 1 sparse, three
//! unused bytes, 8-byte little-endian cached cardinality whose top bit marks
//! it stale), then the registers. Dense: 16384 6-bit registers packed LSB
//! first (12288 bytes). Sparse: run-length opcodes — ZERO `00xxxxxx` (1..64
//! zero registers), XZERO `01xxxxxx yyyyyyyy` (1..16384 zero registers), VAL
//! `1vvvvvxx` (1..4 registers of value 1..32) — covering exactly 16384 registers.

pub const P: u32 = 14;
pub const Q: u32 = 64 - P;
pub const REGISTERS: usize = 1 << P;
pub const HDR: usize = 16;
pub const DENSE_SIZE: usize = HDR + (REGISTERS * 6).div_ceil(8);
const REG_MAX: u8 = 63;
const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
const SPARSE_XZERO_MAX_LEN: usize = 16384;
const DENSE: u8 = 0;
const SPARSE: u8 = 1;

/// The HLL could not be decoded (`INVALIDOBJ Corrupted HLL object detected`).
#[derive(Debug, PartialEq, Eq)]
pub struct Corrupt;

/// Redis's MurmurHash64A (little-endian blocks).
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c); // chunks_exact(8): always 8 bytes
        let mut k = u64::from_le_bytes(w);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        for (i, &b) in rest.iter().enumerate().rev() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// (register index, run length of the pattern `000..1`) for an element.
pub fn pat_len(ele: &[u8]) -> (usize, u8) {
    let mut hash = murmur64a(ele, 0xadc8_3b19);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    hash >>= P;
    hash |= 1u64 << Q;
    (index, hash.trailing_zeros() as u8 + 1)
}

/// A new, empty sparse HLL (Redis's `createHLLObject`).
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR + 2);
    v.extend_from_slice(b"HYLL");
    v.extend_from_slice(&[SPARSE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let mut left = REGISTERS;
    while left > 0 {
        let x = left.min(SPARSE_XZERO_MAX_LEN);
        push_xzero(&mut v, x);
        left -= x;
    }
    v
}

/// True when `b` passes Redis's `isHLLObjectOrReply` checks: every other
/// function here relies on that (a header of 16 bytes, a dense body of the
/// exact size); only the sparse opcodes are left to check as they are read.
pub fn is_valid(b: &[u8]) -> bool {
    b.len() >= HDR
        && b.starts_with(b"HYLL")
        && b[4] <= SPARSE
        && (b[4] != DENSE || b.len() == DENSE_SIZE)
}

pub fn is_dense(b: &[u8]) -> bool {
    b.get(4) == Some(&DENSE)
}

pub fn invalidate_cache(b: &mut [u8]) {
    if let Some(x) = b.get_mut(15) {
        *x |= 0x80;
    }
}

/// The cached cardinality, when valid.
pub fn cached(b: &[u8]) -> Option<u64> {
    let card: [u8; 8] = b.get(8..HDR)?.try_into().ok()?;
    (card[7] & 0x80 == 0).then(|| u64::from_le_bytes(card))
}

pub fn set_cache(b: &mut [u8], card: u64) {
    if let Some(c) = b.get_mut(8..HDR) {
        c.copy_from_slice(&card.to_le_bytes());
    }
}

#[inline]
fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * 6 / 8;
    let fb = (i * 6) & 7;
    let b0 = regs.get(byte).copied().unwrap_or(0) as u32;
    let b1 = regs.get(byte + 1).copied().unwrap_or(0) as u32;
    (((b0 >> fb) | (b1 << (8 - fb))) & REG_MAX as u32) as u8
}

#[inline]
fn dense_set(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * 6 / 8;
    let fb = (i * 6) & 7;
    let v = val as u32;
    if let Some(x) = regs.get_mut(byte) {
        *x &= !((REG_MAX as u32) << fb) as u8;
        *x |= (v << fb) as u8;
    }
    if let Some(x) = regs.get_mut(byte + 1) {
        *x &= !((REG_MAX as u32) >> (8 - fb)) as u8;
        *x |= (v >> (8 - fb)) as u8;
    }
}

/// Sets register `i` to `count` when that raises it; true when it did.
fn dense_update(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_set(regs, i, count);
        true
    } else {
        false
    }
}

fn push_xzero(v: &mut Vec<u8>, len: usize) {
    let l = len - 1;
    v.push((l >> 8) as u8 | 0x40);
    v.push((l & 0xff) as u8);
}

#[inline]
fn val_op(val: u8, len: usize) -> u8 {
    ((val - 1) << 2) | (len as u8 - 1) | 0x80
}

/// A sparse body being read. An XZERO opcode cut short by the end of the
/// string takes its second byte from `tail`: Redis reads the byte just past
/// the string (its NUL terminator, or what a cut-short split left there).
#[derive(Clone, Copy)]
struct Sparse<'a> {
    b: &'a [u8],
    tail: u8,
}

impl<'a> Sparse<'a> {
    fn new(b: &'a [u8]) -> Self {
        Sparse { b, tail: 0 }
    }

    fn byte(self, p: usize) -> u8 {
        self.b.get(p).copied().unwrap_or(self.tail)
    }

    fn op(self, p: usize) -> Op {
        let x = self.byte(p);
        if x & 0xc0 == 0 {
            Op::Zero((x & 0x3f) as usize + 1)
        } else if x & 0xc0 == 0x40 {
            let y = self.byte(p + 1) as usize;
            Op::XZero((((x & 0x3f) as usize) << 8 | y) + 1)
        } else {
            Op::Val(((x >> 2) & 0x1f) + 1, (x & 3) as usize + 1)
        }
    }

    /// Every opcode with its byte offset and first register, in order.
    fn ops(self) -> impl Iterator<Item = (usize, usize, Op)> + 'a {
        let mut p = HDR;
        let mut first = 0;
        std::iter::from_fn(move || {
            if p >= self.b.len() {
                return None;
            }
            let op = self.op(p);
            let item = (p, first, op);
            p += op.bytes();
            first += op.span();
            Some(item)
        })
    }

    /// Calls `f(first_register, len, value)` for each run. Err unless the
    /// runs cover exactly the registers: like Redis since its fix for
    /// CVE-2025-32023 (`hllSparseToDense`, `hllMerge`, `hllSparseRegHisto`),
    /// a run passing the last register makes the value corrupt.
    fn runs(self, mut f: impl FnMut(usize, usize, u8)) -> Result<(), Corrupt> {
        let mut idx = 0;
        for (_, first, op) in self.ops() {
            idx = first + op.span();
            if idx > REGISTERS {
                return Err(Corrupt);
            }
            match op {
                Op::Val(v, n) => f(first, n, v),
                _ => f(first, op.span(), 0),
            }
        }
        if idx != REGISTERS {
            return Err(Corrupt);
        }
        Ok(())
    }
}

/// One decoded sparse opcode.
#[derive(Clone, Copy)]
enum Op {
    Zero(usize),
    XZero(usize),
    Val(u8, usize),
}

impl Op {
    fn span(self) -> usize {
        match self {
            Op::Zero(n) | Op::XZero(n) | Op::Val(_, n) => n,
        }
    }
    fn bytes(self) -> usize {
        if let Op::XZero(_) = self {
            2
        } else {
            1
        }
    }
}

/// Converts a sparse HLL to dense in place (Redis's `hllSparseToDense`);
/// the header, cached cardinality included, is kept.
pub fn to_dense(b: &mut Vec<u8>) -> Result<(), Corrupt> {
    to_dense_with(b, 0)
}

fn to_dense_with(b: &mut Vec<u8>, tail: u8) -> Result<(), Corrupt> {
    if is_dense(b) {
        return Ok(());
    }
    let mut d = vec![0u8; DENSE_SIZE];
    d[..HDR].copy_from_slice(b.get(..HDR).ok_or(Corrupt)?);
    d[4] = DENSE;
    {
        let regs = &mut d[HDR..];
        Sparse { b, tail }.runs(|first, n, v| {
            if v > 0 {
                for i in first..first + n {
                    dense_set(regs, i, v);
                }
            }
        })?;
    }
    *b = d;
    Ok(())
}

/// Raises register `index` to `count` (Redis's `hllSparseSet`): Ok(true) when
/// the HLL changed. May promote the HLL to dense (values over 32, or growth
/// past `max_bytes`). `tail` is the byte Redis would find just past the
/// string (see [`Sparse`]); a split of an XZERO cut short by the end of the
/// string leaves its last byte there, as Redis's memcpy does.
fn sparse_set(
    b: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: usize,
    tail: &mut u8,
) -> Result<bool, Corrupt> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(b, index, count, *tail);
    }
    // Step 1: find the opcode covering `index`.
    let sparse = Sparse { b, tail: *tail };
    let mut prev: Option<usize> = None;
    let mut found = None;
    for (p, first, o) in sparse.ops() {
        if index < first + o.span() {
            found = Some((p, first, o));
            break;
        }
        prev = Some(p);
    }
    let Some((p, first, op)) = found else {
        return Err(Corrupt);
    };
    let span = op.span();
    // Step 2: the cheap in-place cases.
    match op {
        Op::Val(v, _) if v >= count => return Ok(false),
        Op::Val(_, 1) | Op::Zero(1) => {
            b[p] = val_op(count, 1);
            merge_vals(b, prev.unwrap_or(HDR), tail);
            invalidate_cache(b);
            return Ok(true);
        }
        _ => {}
    }
    // Step 3: split the opcode into up to three.
    let last = first + span - 1;
    let mut seq: Vec<u8> = Vec::with_capacity(5);
    match op {
        Op::Zero(_) | Op::XZero(_) => {
            let zeros = |seq: &mut Vec<u8>, len: usize| {
                if len > SPARSE_ZERO_MAX_LEN {
                    push_xzero(seq, len);
                } else {
                    seq.push((len - 1) as u8);
                }
            };
            if index != first {
                zeros(&mut seq, index - first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                zeros(&mut seq, last - index);
            }
        }
        Op::Val(cur, _) => {
            if index != first {
                seq.push(val_op(cur, index - first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(cur, last - index));
            }
        }
    }
    let oldlen = op.bytes();
    if seq.len() > oldlen && b.len() + seq.len() - oldlen > max_bytes {
        return promote(b, index, count, *tail);
    }
    if p + oldlen <= b.len() {
        b.splice(p..p + oldlen, seq);
        *tail = 0;
    } else {
        // An XZERO whose second byte was past the end: Redis grows the
        // string by `seq.len() - 2` and copies all of `seq` from `p`, so its
        // last byte lands past the new end.
        let new_len = b.len() + seq.len() - oldlen;
        b.truncate(p);
        b.extend_from_slice(&seq);
        *tail = b.get(new_len).copied().unwrap_or(0);
        b.truncate(new_len);
    }
    // Step 4: merge adjacent equal VAL opcodes.
    merge_vals(b, prev.unwrap_or(HDR), tail);
    invalidate_cache(b);
    Ok(true)
}

/// Redis's step 4 of `hllSparseSet`: scans up to 5 opcodes from `p`,
/// merging adjacent VALs of equal value that fit one opcode. A merge shifts
/// the byte past the end in and clears it (Redis's memmove and sdsIncrLen).
fn merge_vals(b: &mut Vec<u8>, mut p: usize, tail: &mut u8) {
    let mut scan = 5;
    while p < b.len() && scan > 0 {
        scan -= 1;
        let op = Sparse { b, tail: *tail }.op(p);
        match op {
            Op::XZero(_) => {
                p += 2;
                continue;
            }
            Op::Zero(_) => {
                p += 1;
                continue;
            }
            Op::Val(v1, l1) => {
                if p + 1 < b.len() {
                    if let Op::Val(v2, l2) = Sparse::new(b).op(p + 1) {
                        if v1 == v2 && l1 + l2 <= SPARSE_VAL_MAX_LEN {
                            b[p + 1] = val_op(v1, l1 + l2);
                            b.remove(p);
                            *tail = 0;
                            continue;
                        }
                    }
                }
                p += 1;
            }
        }
    }
}

fn promote(b: &mut Vec<u8>, index: usize, count: u8, tail: u8) -> Result<bool, Corrupt> {
    to_dense_with(b, tail)?;
    dense_update(&mut b[HDR..], index, count);
    Ok(true)
}

/// Adds elements (Redis's `hllAdd` for each): the number that changed a
/// register, or Err at the first one found corrupt (the changes made before
/// it stay, as in Redis).
pub fn add_all<'e>(
    b: &mut Vec<u8>,
    elements: impl IntoIterator<Item = &'e [u8]>,
    sparse_max_bytes: usize,
) -> Result<usize, Corrupt> {
    let mut tail = 0;
    let mut updated = 0;
    for ele in elements {
        let (index, count) = pat_len(ele);
        let changed = if is_dense(b) {
            dense_update(&mut b[HDR..], index, count)
        } else {
            sparse_set(b, index, count, sparse_max_bytes, &mut tail)?
        };
        updated += changed as usize;
    }
    Ok(updated)
}

/// Raises `max[i]` to each register of `b` (Redis's `hllMerge`).
pub fn merge_into(max: &mut [u8; REGISTERS], b: &[u8]) -> Result<(), Corrupt> {
    if is_dense(b) {
        let regs = &b[HDR..];
        for (i, m) in max.iter_mut().enumerate() {
            *m = (*m).max(dense_get(regs, i));
        }
        Ok(())
    } else {
        Sparse::new(b).runs(|first, n, v| {
            if v == 0 {
                return;
            }
            for m in &mut max[first..first + n] {
                *m = (*m).max(v);
            }
        })
    }
}

/// Writes merged registers into `b` (PFMERGE's final step). `b` was read by
/// [`merge_into`] first, so every register is found; like Redis, a failure
/// of one register is not reported.
pub fn store_registers(b: &mut Vec<u8>, max: &[u8; REGISTERS], sparse_max_bytes: usize) {
    let mut tail = 0;
    for (i, &m) in max.iter().enumerate() {
        if m == 0 {
            continue;
        }
        if is_dense(b) {
            dense_update(&mut b[HDR..], i, m);
        } else {
            let _ = sparse_set(b, i, m, sparse_max_bytes, &mut tail);
        }
    }
}

/// Every register of a dense HLL.
pub fn registers(b: &[u8]) -> Vec<u8> {
    (0..REGISTERS).map(|i| dense_get(&b[HDR..], i)).collect()
}

/// The sparse opcodes as PFDEBUG DECODE prints them (`z:len`, `Z:len`,
/// `v:value,len`), or None for a dense HLL.
pub fn decode_sparse(b: &[u8]) -> Option<String> {
    if is_dense(b) {
        return None;
    }
    let parts: Vec<String> = Sparse::new(b)
        .ops()
        .map(|(_, _, op)| match op {
            Op::Zero(n) => format!("z:{n}"),
            Op::XZero(n) => format!("Z:{n}"),
            Op::Val(v, n) => format!("v:{v},{n}"),
        })
        .collect();
    Some(parts.join(" "))
}

/// The register histogram of an HLL.
pub fn histogram(b: &[u8]) -> Result<[u32; 64], Corrupt> {
    let mut h = [0u32; 64];
    if is_dense(b) {
        let regs = &b[HDR..];
        for i in 0..REGISTERS {
            h[dense_get(regs, i) as usize] += 1;
        }
    } else {
        Sparse::new(b).runs(|_, n, v| h[v as usize] += n as u32)?;
    }
    Ok(h)
}

/// The histogram of raw registers (one byte each).
pub fn histogram_raw(regs: &[u8; REGISTERS]) -> [u32; 64] {
    let mut h = [0u32; 64];
    for &r in regs.iter() {
        h[(r & 63) as usize] += 1;
    }
    h
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let zp = z;
        z += x * y;
        y += y;
        if zp == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let zp = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if zp == z {
            return z / 3.0;
        }
    }
}

/// The cardinality estimate from a register histogram (Ertl's improved
/// estimator, as Redis's `hllCount`).
pub fn estimate(h: &[u32; 64]) -> u64 {
    const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
    let m = REGISTERS as f64;
    let mut z = m * tau((m - h[Q as usize + 1] as f64) / m);
    for j in (1..=Q as usize).rev() {
        z += h[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(h[0] as f64 / m);
    (ALPHA_INF * m * m / z).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_sparse_layout() {
        let b = new_sparse();
        assert_eq!(b, b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0\x7f\xff");
        assert_eq!(estimate(&histogram(&b).unwrap()), 0);
    }

    #[test]
    fn sparse_and_dense_agree() {
        let mut s = new_sparse();
        let mut d = new_sparse();
        to_dense(&mut d).unwrap();
        for i in 0..3000u32 {
            let e = format!("ele:{i}");
            assert_eq!(
                add_all(&mut s, [e.as_bytes()], 1 << 20),
                add_all(&mut d, [e.as_bytes()], 0)
            );
        }
        assert!(!is_dense(&s));
        assert_eq!(histogram(&s).unwrap(), histogram(&d).unwrap());
        let mut s2 = s.clone();
        to_dense(&mut s2).unwrap();
        assert_eq!(s2[HDR..], d[HDR..]);
    }

    /// Random sparse bodies (short, with opcodes of every kind, runs past
    /// the last register, cut-short XZEROs) never panic any operation.
    #[test]
    fn random_corrupt_bodies_never_panic() {
        let mut next = crate::types::test_rng(0x9e37_79b9_7f4a_7c15u64);
        let eles: Vec<Vec<u8>> = (0..64).map(|i| format!("e{i}").into_bytes()).collect();
        for round in 0..3000 {
            let mut b = new_sparse();
            b.truncate(HDR);
            let n = (next() % 40) as usize;
            for _ in 0..n {
                b.push(next() as u8);
            }
            if round % 3 == 0 {
                b.push(0x40 | (next() as u8 & 0x3f));
            }
            let mut max = [0u8; REGISTERS];
            let _ = merge_into(&mut max, &b);
            let _ = histogram(&b);
            let _ = decode_sparse(&b);
            let mut d = b.clone();
            let _ = to_dense(&mut d);
            let mut s = b.clone();
            let _ = add_all(&mut s, eles.iter().map(|e| e.as_slice()), 3000);
            let mut small = b.clone();
            let _ = add_all(&mut small, eles.iter().map(|e| e.as_slice()), 20);
            store_registers(&mut b, &max, 3000);
        }
    }
}
