//! The small unsigned bigint behind exact decimal <-> `long double` conversion.

use std::cmp::Ordering;

/// An unsigned big integer, little-endian base 2^32, without high zero limbs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Big(Vec<u32>);

impl Big {
    pub(super) fn from_u64(v: u64) -> Big {
        let mut b = Big(vec![v as u32, (v >> 32) as u32]);
        b.trim();
        b
    }

    pub(super) fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    pub(super) fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn bits(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(&top) => self.0.len() as u64 * 32 - top.leading_zeros() as u64,
        }
    }

    pub(super) fn bit(&self, i: u64) -> bool {
        let w = (i / 32) as usize;
        w < self.0.len() && (self.0[w] >> (i % 32)) & 1 == 1
    }

    /// True when any bit below position `i` is set.
    pub(super) fn any_below(&self, i: u64) -> bool {
        let w = ((i / 32) as usize).min(self.0.len());
        if self.0[..w].iter().any(|&x| x != 0) {
            return true;
        }
        w < self.0.len() && !i.is_multiple_of(32) && self.0[w] & ((1u32 << (i % 32)) - 1) != 0
    }

    /// The value, which the caller knows fits in 64 bits.
    pub(super) fn to_u64(&self) -> u64 {
        debug_assert!(self.bits() <= 64);
        self.0
            .iter()
            .take(2)
            .rev()
            .fold(0u64, |acc, &w| acc << 32 | w as u64)
    }

    pub(super) fn shl(&self, n: u64) -> Big {
        if self.is_zero() {
            return Big::default();
        }
        let words = (n / 32) as usize;
        let bits = (n % 32) as u32;
        let mut out = vec![0u32; words];
        let mut carry = 0u32;
        for &w in &self.0 {
            if bits == 0 {
                out.push(w);
            } else {
                out.push(w << bits | carry);
                carry = w >> (32 - bits);
            }
        }
        if carry != 0 {
            out.push(carry);
        }
        Big(out)
    }

    pub(super) fn shr(&self, n: u64) -> Big {
        let words = (n / 32) as usize;
        if words >= self.0.len() {
            return Big::default();
        }
        let bits = (n % 32) as u32;
        let src = &self.0[words..];
        let mut out = Vec::with_capacity(src.len());
        for i in 0..src.len() {
            let lo = src[i] >> bits;
            let hi = if bits == 0 {
                0
            } else {
                src.get(i + 1).map_or(0, |&h| h << (32 - bits))
            };
            out.push(lo | hi);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    /// `self = self * mul + add`.
    pub(super) fn mul_add_small(&mut self, mul: u32, add: u32) {
        let mut carry = add as u64;
        for w in self.0.iter_mut() {
            let v = *w as u64 * mul as u64 + carry;
            *w = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    pub(super) fn mul_pow10(mut self, mut k: u32) -> Big {
        while k >= 9 {
            self.mul_add_small(1_000_000_000, 0);
            k -= 9;
        }
        if k > 0 {
            self.mul_add_small(10u32.pow(k), 0);
        }
        self
    }

    pub(super) fn add(&self, o: &Big) -> Big {
        let n = self.0.len().max(o.0.len());
        let mut out = Vec::with_capacity(n + 1);
        let mut carry = 0u64;
        for i in 0..n {
            let v = *self.0.get(i).unwrap_or(&0) as u64 + *o.0.get(i).unwrap_or(&0) as u64 + carry;
            out.push(v as u32);
            carry = v >> 32;
        }
        if carry != 0 {
            out.push(carry as u32);
        }
        Big(out)
    }

    /// `self - o`; the caller guarantees `self >= o`.
    pub(super) fn sub(&self, o: &Big) -> Big {
        let mut out = Vec::with_capacity(self.0.len());
        let mut borrow = 0i64;
        for i in 0..self.0.len() {
            let mut v = self.0[i] as i64 - *o.0.get(i).unwrap_or(&0) as i64 - borrow;
            borrow = 0;
            if v < 0 {
                v += 1 << 32;
                borrow = 1;
            }
            out.push(v as u32);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    /// Quotient, and whether the remainder is non-zero (binary long division:
    /// quotients here are short, a few dozen bits).
    pub(super) fn div_rem(&self, d: &Big) -> (Big, bool) {
        let mut rem = self.clone();
        let mut q = Big::default();
        if rem.cmp(d) == Ordering::Less {
            return (q, !rem.is_zero());
        }
        let top = rem.bits() - d.bits();
        q.0 = vec![0; (top / 32 + 1) as usize];
        for i in (0..=top).rev() {
            let t = d.shl(i);
            if rem.cmp(&t) != Ordering::Less {
                rem = rem.sub(&t);
                q.0[(i / 32) as usize] |= 1 << (i % 32);
            }
        }
        q.trim();
        (q, !rem.is_zero())
    }

    pub(super) fn cmp(&self, o: &Big) -> Ordering {
        self.0
            .len()
            .cmp(&o.0.len())
            .then_with(|| self.0.iter().rev().cmp(o.0.iter().rev()))
    }

    /// Decimal digits (`"0"` for zero).
    pub(super) fn to_decimal(&self) -> Vec<u8> {
        if self.is_zero() {
            return b"0".to_vec();
        }
        let mut chunks = Vec::new();
        let mut cur = self.0.clone();
        while !cur.is_empty() {
            let mut rem = 0u64;
            for w in cur.iter_mut().rev() {
                let v = rem << 32 | *w as u64;
                *w = (v / 1_000_000_000) as u32;
                rem = v % 1_000_000_000;
            }
            while cur.last() == Some(&0) {
                cur.pop();
            }
            chunks.push(rem as u32);
        }
        let mut s = String::new();
        for (i, c) in chunks.iter().rev().enumerate() {
            if i == 0 {
                s.push_str(&c.to_string());
            } else {
                s.push_str(&format!("{c:09}"));
            }
        }
        s.into_bytes()
    }
}
