//! C `long double` (x87 80-bit extended) in software, for INCRBYFLOAT and HINCRBYFLOAT.
//!
//! Redis parses both operands with `strtold`, adds them in `long double` and
//! prints the sum with `%.17Lf`, stripping trailing zeros (`ld2string`,
//! `LD_STR_HUMAN`). Doing that in `f64` gives different digits
//! (`0.1 + 0.2` is `0.3` in Redis, `0.30000000000000004` in `f64`), so this
//! module reproduces the format exactly: a 64-bit mantissa with an explicit
//! leading bit, exponents down to the subnormal range, round-half-even at every
//! step, and exact decimal conversion in both directions through a small bigint.
//!
//! Use [`incr_by_float`] for the whole INCRBYFLOAT step, or [`LongDouble::parse`],
//! [`LongDouble::checked_add`] and [`LongDouble::to_human`] separately.

use std::cmp::Ordering;

use crate::error::Error;
use big::Big;

mod big;

/// Exponent of the leading bit of the largest finite value.
const EMAX: i64 = 16383;
/// Exponent of the lowest mantissa bit of a subnormal (2^-16445 is the smallest value).
const LOW_MIN: i64 = -16382 - 63;
/// `MAX_LONG_DOUBLE_CHARS`: Redis refuses longer numbers.
pub const MAX_CHARS: usize = 5 * 1024;

/// A `long double` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LongDouble {
    /// `(-1)^neg * m * 2^e`. Canonical: zero has `m == 0`; a normal value has
    /// bit 63 of `m` set; a subnormal has `e == LOW_MIN`. So every non-zero
    /// value has `e >= LOW_MIN`.
    Finite {
        neg: bool,
        m: u64,
        e: i64,
    },
    Inf {
        neg: bool,
    },
}

impl LongDouble {
    pub const ZERO: LongDouble = LongDouble::Finite {
        neg: false,
        m: 0,
        e: 0,
    };

    /// Parses as Redis's `string2ld` does: `strtold` over the whole input, no
    /// leading space, no NaN, no overflow to infinity or underflow to zero
    /// from a non-zero literal (subnormal results are accepted). Accepts
    /// `inf`/`infinity` in any case and hexadecimal floats.
    pub fn parse(s: &[u8]) -> Option<LongDouble> {
        if s.is_empty() || s.len() >= MAX_CHARS {
            return None;
        }
        let (neg, body) = match s[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
            return Some(LongDouble::Inf { neg });
        }
        let v = if body.len() > 1 && body[0] == b'0' && (body[1] | 0x20) == b'x' {
            parse_hex(neg, &body[2..])?
        } else {
            parse_dec(neg, body)?
        };
        match v {
            LongDouble::Inf { .. } => None,
            _ => Some(v),
        }
    }

    /// A 64-bit integer, exactly (every `i64` fits the 64-bit mantissa).
    pub fn from_i64(n: i64) -> LongDouble {
        round(n < 0, Big::from_u64(n.unsigned_abs()), 0, false)
    }

    /// A `double` exactly (every double is a `long double`); `None` for NaN.
    pub fn from_f64(d: f64) -> Option<LongDouble> {
        if d.is_nan() {
            return None;
        }
        if d.is_infinite() {
            return Some(LongDouble::Inf { neg: d < 0.0 });
        }
        let bits = d.to_bits();
        let neg = bits >> 63 == 1;
        let exp = ((bits >> 52) & 0x7ff) as i64;
        let frac = bits & ((1u64 << 52) - 1);
        let (mant, e) = if exp == 0 {
            (frac, -1074)
        } else {
            (frac | (1u64 << 52), exp - 1075)
        };
        Some(round(neg, Big::from_u64(mant), e, false))
    }

    pub fn is_finite(&self) -> bool {
        matches!(self, LongDouble::Finite { .. })
    }

    /// `self + other`, rounded to nearest-even. Infinity plus anything gives
    /// infinity or NaN, which callers reject, so it is returned as `None`.
    pub fn checked_add(self, other: LongDouble) -> Option<LongDouble> {
        let (
            LongDouble::Finite {
                neg: na,
                m: ma,
                e: ea,
            },
            LongDouble::Finite {
                neg: nb,
                m: mb,
                e: eb,
            },
        ) = (self, other)
        else {
            return None;
        };
        if ma == 0 && mb == 0 {
            return Some(LongDouble::Finite {
                neg: na && nb,
                m: 0,
                e: 0,
            });
        }
        if ma == 0 {
            return Some(other);
        }
        if mb == 0 {
            return Some(self);
        }
        // An operand more than 200 binary places below the other only matters
        // as a sticky bit: replace it by a tiny value of the same sign that is
        // still far below the rounding position, so the rounding is unchanged.
        let (mut ma, mut ea, mut mb, mut eb) = (ma, ea, mb, eb);
        if ea - eb > 200 {
            mb = 1;
            eb = ea - 140;
        } else if eb - ea > 200 {
            ma = 1;
            ea = eb - 140;
        }
        let e = ea.min(eb);
        let a = Big::from_u64(ma).shl((ea - e) as u64);
        let b = Big::from_u64(mb).shl((eb - e) as u64);
        let v = if na == nb {
            round(na, a.add(&b), e, false)
        } else {
            match a.cmp(&b) {
                Ordering::Equal => LongDouble::ZERO,
                Ordering::Greater => round(na, a.sub(&b), e, false),
                Ordering::Less => round(nb, b.sub(&a), e, false),
            }
        };
        v.is_finite().then_some(v)
    }

    /// `printf("%.17Lf")` with trailing zeros (and a trailing `.`) removed and
    /// `-0` written `0`: Redis's `ld2string(..., LD_STR_HUMAN)`.
    pub fn to_human(&self) -> Vec<u8> {
        let mut out = self.to_fixed17();
        if out.contains(&b'.') {
            while out.last() == Some(&b'0') {
                out.pop();
            }
            if out.last() == Some(&b'.') {
                out.pop();
            }
        }
        if out == b"-0" {
            out = b"0".to_vec();
        }
        out
    }

    /// `printf("%.17Lf")`, rounding the exact binary value half-to-even as glibc does.
    pub fn to_fixed17(&self) -> Vec<u8> {
        let (neg, m, e) = match *self {
            LongDouble::Inf { neg } => {
                return if neg {
                    b"-inf".to_vec()
                } else {
                    b"inf".to_vec()
                }
            }
            LongDouble::Finite { neg, m, e } => (neg, m, e),
        };
        let scaled = Big::from_u64(m).mul_pow10(17);
        let n = if e >= 0 {
            scaled.shl(e as u64)
        } else {
            let sh = (-e) as u64;
            let q = scaled.shr(sh);
            let half = sh >= 1 && scaled.bit(sh - 1);
            let rest = sh >= 2 && scaled.any_below(sh - 1);
            if half && (rest || q.bit(0)) {
                q.add(&Big::from_u64(1))
            } else {
                q
            }
        };
        let mut digits = n.to_decimal();
        while digits.len() < 18 {
            digits.insert(0, b'0');
        }
        let split = digits.len() - 17;
        let mut out = Vec::with_capacity(digits.len() + 2);
        if neg {
            out.push(b'-');
        }
        out.extend_from_slice(&digits[..split]);
        out.push(b'.');
        out.extend_from_slice(&digits[split..]);
        out
    }
}

/// INCRBYFLOAT's arithmetic: parses the current value and the increment,
/// adds them and formats the sum as Redis stores it.
///
/// Errors: `ERR value is not a valid float` when either does not parse, and
/// `ERR increment would produce NaN or Infinity` when the sum is not finite.
pub fn incr_by_float(current: &[u8], incr: &[u8]) -> Result<Vec<u8>, Error> {
    let a = LongDouble::parse(current).ok_or(Error::NotFloat)?;
    let b = LongDouble::parse(incr).ok_or(Error::NotFloat)?;
    let sum = a.checked_add(b).ok_or_else(nan_or_inf)?;
    Ok(sum.to_human())
}

/// `ERR increment would produce NaN or Infinity`.
pub fn nan_or_inf() -> Error {
    Error::msg("increment would produce NaN or Infinity")
}

/// Parses `digits[.digits][(e|E)[+-]digits]` exactly (the sign is already taken).
fn parse_dec(neg: bool, s: &[u8]) -> Option<LongDouble> {
    let mut i = 0;
    let mut digits: Vec<u8> = Vec::new();
    let mut dexp: i64 = 0;
    let mut seen = false;
    while i < s.len() && s[i].is_ascii_digit() {
        seen = true;
        if !(digits.is_empty() && s[i] == b'0') {
            digits.push(s[i] - b'0');
        }
        i += 1;
    }
    if i < s.len() && s[i] == b'.' {
        i += 1;
        while i < s.len() && s[i].is_ascii_digit() {
            seen = true;
            if digits.is_empty() && s[i] == b'0' {
                dexp -= 1;
            } else {
                digits.push(s[i] - b'0');
                dexp -= 1;
            }
            i += 1;
        }
    }
    if !seen {
        return None;
    }
    if i < s.len() && (s[i] | 0x20) == b'e' {
        i += 1;
        // "1e" leaves the "e" unparsed, so the whole number is rejected.
        dexp += parse_exponent(s, &mut i)?;
    }
    if i != s.len() {
        return None;
    }
    while digits.last() == Some(&0) {
        digits.pop();
        dexp += 1;
    }
    if digits.is_empty() {
        return Some(LongDouble::Finite { neg, m: 0, e: 0 });
    }
    let nd = digits.len() as i64;
    // The value lies in [10^(nd-1+dexp), 10^(nd+dexp)); the finite range is
    // about 3.6e-4951 ..= 1.19e4932.
    if nd - 1 + dexp > 4933 {
        return None; // overflow: ERANGE with HUGE_VALL
    }
    if nd + dexp < -4952 {
        return None; // underflow to zero: ERANGE with 0
    }
    let mut d = Big::default();
    for &c in &digits {
        d.mul_add_small(10, c as u32);
    }
    let v = if dexp >= 0 {
        round(neg, d.mul_pow10(dexp as u32), 0, false)
    } else {
        let b = Big::from_u64(1).mul_pow10((-dexp) as u32);
        // Enough quotient bits (at least 66) that the remainder is only sticky.
        let s = (66 + b.bits() as i64 - d.bits() as i64 + 1).max(0) as u64;
        let (q, rem_nonzero) = d.shl(s).div_rem(&b);
        round(neg, q, -(s as i64), rem_nonzero)
    };
    check_range(v)
}

/// The value of a hexadecimal digit (callers check `is_ascii_hexdigit`).
fn hex_digit(c: u8) -> u32 {
    (c as char).to_digit(16).unwrap_or(0)
}

/// Parses the part of a hexadecimal float after `0x`: `hex[.hex][p[+-]digits]`.
fn parse_hex(neg: bool, s: &[u8]) -> Option<LongDouble> {
    let mut i = 0;
    let mut n = Big::default();
    let mut bexp: i64 = 0;
    let mut seen = false;
    while i < s.len() && s[i].is_ascii_hexdigit() {
        seen = true;
        n.mul_add_small(16, hex_digit(s[i]));
        i += 1;
    }
    if i < s.len() && s[i] == b'.' {
        i += 1;
        while i < s.len() && s[i].is_ascii_hexdigit() {
            seen = true;
            n.mul_add_small(16, hex_digit(s[i]));
            bexp -= 4;
            i += 1;
        }
    }
    if !seen {
        return None;
    }
    if i < s.len() && (s[i] | 0x20) == b'p' {
        i += 1;
        bexp += parse_exponent(s, &mut i)?;
    }
    if i != s.len() {
        return None;
    }
    if n.is_zero() {
        return Some(LongDouble::Finite { neg, m: 0, e: 0 });
    }
    check_range(round(neg, n, bexp, false))
}

/// `strtold` reports ERANGE for results that overflowed or underflowed to
/// zero; Redis rejects those.
fn check_range(v: LongDouble) -> Option<LongDouble> {
    match v {
        LongDouble::Inf { .. } => None,
        LongDouble::Finite { m: 0, .. } => None,
        v => Some(v),
    }
}

/// Rounds `(n + sticky) * 2^e` to the nearest `long double` (ties to even),
/// where `sticky` stands for a non-zero remainder below bit 0 of `n`.
/// Callers that pass `sticky` give `n` at least 66 bits.
fn round(neg: bool, n: Big, e: i64, sticky: bool) -> LongDouble {
    if n.is_zero() {
        return LongDouble::Finite { neg, m: 0, e: 0 };
    }
    let lead = e + n.bits() as i64 - 1;
    let mut low = (lead - 63).max(LOW_MIN);
    let shift = low - e;
    let m = if shift <= 0 {
        n.shl((-shift) as u64).to_u64()
    } else {
        let sh = shift as u64;
        let q = n.shr(sh).to_u64();
        let half = n.bit(sh - 1);
        let rest = sticky || (sh >= 2 && n.any_below(sh - 1));
        if half && (rest || q & 1 == 1) {
            match q.checked_add(1) {
                Some(v) => v,
                None => {
                    low += 1;
                    1 << 63
                }
            }
        } else {
            q
        }
    };
    if m == 0 {
        return LongDouble::Finite { neg, m: 0, e: 0 };
    }
    // A subnormal that rounded up into bit 63 is now the smallest normal,
    // which has the same exponent: nothing to adjust.
    if low + 63 - m.leading_zeros() as i64 > EMAX {
        return LongDouble::Inf { neg };
    }
    LongDouble::Finite { neg, m, e: low }
}

/// The signed decimal exponent after `e` (decimal) or `p` (hex) at `*i`,
/// clamped far beyond any finite range; None when no digit follows.
fn parse_exponent(s: &[u8], i: &mut usize) -> Option<i64> {
    let neg = match s.get(*i) {
        Some(b'-') => {
            *i += 1;
            true
        }
        Some(b'+') => {
            *i += 1;
            false
        }
        _ => false,
    };
    let start = *i;
    let mut x: i64 = 0;
    while *i < s.len() && s[*i].is_ascii_digit() {
        x = (x * 10 + (s[*i] - b'0') as i64).min(1_000_000_000);
        *i += 1;
    }
    (*i > start).then_some(if neg { -x } else { x })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn human(s: &str) -> String {
        String::from_utf8(LongDouble::parse(s.as_bytes()).unwrap().to_human()).unwrap()
    }

    fn incr(a: &str, b: &str) -> String {
        match incr_by_float(a.as_bytes(), b.as_bytes()) {
            Ok(v) => String::from_utf8(v).unwrap(),
            Err(e) => e.text().into_owned(),
        }
    }

    #[test]
    fn parse_rejects_what_string2ld_rejects() {
        for bad in [
            "", " 1", "1 ", "nan", "-nan", "1e", "1e+", ".", "e5", "0x", "0xp1", "1e5000",
            "1e-5000", "abc", "1.2.3", "--1", "0x1p", "1\x002",
        ] {
            assert_eq!(LongDouble::parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert!(LongDouble::parse(&vec![b'1'; MAX_CHARS]).is_none());
        for good in [
            "0",
            "-0",
            "+5",
            ".5",
            "5.",
            "1e10",
            "1E-3",
            "inf",
            "-Infinity",
            "0x1p-2",
            "0X.8",
        ] {
            assert!(LongDouble::parse(good.as_bytes()).is_some(), "{good:?}");
        }
    }

    #[test]
    fn integers_are_exact() {
        assert_eq!(
            LongDouble::from_i64(i64::MAX).to_human(),
            b"9223372036854775807".to_vec()
        );
        assert_eq!(
            LongDouble::from_i64(i64::MIN).to_human(),
            b"-9223372036854775808".to_vec()
        );
        assert_eq!(LongDouble::from_i64(0).to_human(), b"0".to_vec());
    }

    /// Checks `incr_by_float` against lines `a b expected` produced by a C
    /// program doing exactly what Redis does (`strtold`, `+=`, `%.17Lf`).
    fn check_vectors(text: &str) -> usize {
        let mut n = 0;
        for line in text.lines() {
            let mut it = line.splitn(3, ' ');
            let (a, b, want) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
            assert_eq!(incr(a, b), want, "{a} + {b}");
            n += 1;
        }
        n
    }

    #[test]
    fn matches_c_long_double() {
        // Generated with gcc on x86-64 (80-bit long double), random operands
        // of many shapes plus edge cases (ties, subnormals, overflow, hex).
        let n = check_vectors(include_str!("vectors.txt"));
        assert!(n >= 500);
    }

    #[test]
    fn known_redis_results() {
        // From Redis's own test suite and its documentation.
        assert_eq!(incr("10.50", "0.1"), "10.6");
        assert_eq!(incr("5.0e3", "2.0e2"), "5200");
        assert_eq!(incr("0.1", "0.2"), "0.3");
        assert_eq!(incr("1", "-1"), "0");
        assert_eq!(
            incr("inf", "1"),
            "ERR increment would produce NaN or Infinity"
        );
        assert_eq!(incr("1", "nan"), "ERR value is not a valid float");
        assert_eq!(
            incr(
                "1.18973149535723176502e+4932",
                "1.18973149535723176502e+4932"
            ),
            "ERR increment would produce NaN or Infinity"
        );
        assert_eq!(human("-0.000000000000000001"), "0");
        assert_eq!(human("1e20"), "100000000000000000000");
    }

    /// Set LD_VECTORS=/path to check a larger generated file.
    #[test]
    fn matches_c_long_double_external() {
        if let Ok(path) = std::env::var("LD_VECTORS") {
            let text = std::fs::read_to_string(path).unwrap();
            check_vectors(&text);
        }
    }
}
