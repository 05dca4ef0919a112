//! Number parsing and formatting with Redis's exact rules (`string2ll`, `strtod`, `%.17g`).

pub use crate::resp::decode::parse_i64;

/// Formats like C's `printf("%.17g", d)`, which is how Redis 7.0 replies with
/// doubles (`addReplyDouble`), with `inf`/`-inf` spelled out.
pub fn fmt_double(d: f64) -> String {
    // Fast path: an integral value below 1e15 prints as the integer itself.
    if d.fract() == 0.0 && d.abs() < 1e15 && d != 0.0 {
        return itoa::Buffer::new().format(d as i64).to_string();
    }
    fmt_g(d, 17)
}

/// C's `%.<prec>g`.
pub fn fmt_g(d: f64, prec: usize) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d == 0.0 {
        return if d.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let prec = prec.max(1);
    // Scientific form with `prec` significant digits tells us the exponent
    // after rounding, which decides between fixed and exponential notation.
    let sci = match (prec == 17).then(|| digits17(d)).flatten() {
        Some((q, e10)) => {
            let digits = itoa::Buffer::new().format(q).to_string();
            let sign = if d < 0.0 { "-" } else { "" };
            format!("{sign}{}.{}e{e10}", &digits[..1], &digits[1..])
        }
        None => format!("{:.*e}", prec - 1, d),
    };
    // Both forms above always carry an `e` and a decimal exponent.
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= prec as i32 {
        let mant = strip_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        // Fixed notation from the same rounded digits (one exact conversion
        // instead of two): %.Pg prints P significant digits either way.
        let (neg, m) = match mant.strip_prefix('-') {
            Some(m) => (true, m),
            None => (false, mant),
        };
        let digits: String = m.chars().filter(|c| *c != '.').collect();
        let mut out = String::with_capacity(digits.len() + 8);
        if neg {
            out.push('-');
        }
        if exp >= 0 {
            let int_len = exp as usize + 1;
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        } else {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        }
        strip_zeros(&out).to_string()
    }
}

/// The 17 significant digits of `|d|` correctly rounded (half to even, as
/// glibc's printf rounds the exact binary value) and the decimal exponent of
/// the first digit, by exact 128-bit integer arithmetic. Only for
/// 1e-5 <= |d| < 1e17, where the arithmetic fits; None elsewhere.
fn digits17(d: f64) -> Option<(u64, i32)> {
    const P17: u128 = 100_000_000_000_000_000;
    const P16: u128 = 10_000_000_000_000_000;
    let a = d.abs();
    if !(1e-5..1e17).contains(&a) {
        return None;
    }
    let bits = a.to_bits();
    let m = (bits & ((1u64 << 52) - 1) | 1u64 << 52) as u128;
    let e = ((bits >> 52) & 0x7ff) as i32 - 1075;
    let mut e10 = a.log10().floor() as i32;
    for _ in 0..3 {
        let k = 16 - e10;
        if !(0..=22).contains(&k) {
            return None;
        }
        let num = m * 10u128.pow(k as u32);
        let (mut q, r, half) = if e >= 0 {
            (num << e, 0, 1)
        } else {
            let s = (-e) as u32;
            if s >= 127 {
                return None;
            }
            (num >> s, num & ((1u128 << s) - 1), 1u128 << (s - 1))
        };
        if q >= P17 {
            e10 += 1;
            continue;
        }
        if q < P16 {
            e10 -= 1;
            continue;
        }
        if r > half || (r == half && e < 0 && q & 1 == 1) {
            q += 1;
        }
        if q == P17 {
            return Some(((P16) as u64, e10 + 1));
        }
        return Some((q as u64, e10));
    }
    None
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Parses a double the way Redis's `getDoubleFromObject` does with `strtod`:
/// no leading space, no trailing bytes, no NaN, no overflow to infinity or
/// underflow to zero from a finite literal; `inf`/`infinity` in any case and
/// hexadecimal floats are accepted.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s[0].is_ascii_whitespace() {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    let lower = text.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if body.starts_with("0x") {
        return parse_hex_float(&lower);
    }
    // Rust accepts forms strtod does not ("infinity" is fine in both, but Rust
    // also accepts "inf" suffixes only as whole words, which matches strtod).
    let v: f64 = lower.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    if v.is_infinite() && !body.starts_with("inf") {
        return None; // ERANGE overflow
    }
    if v == 0.0
        && body
            .bytes()
            .take_while(|&c| c != b'e')
            .any(|c| (b'1'..=b'9').contains(&c))
    {
        return None; // ERANGE underflow
    }
    Some(v)
}

fn parse_hex_float(s: &str) -> Option<f64> {
    let (neg, rest) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let rest = rest.strip_prefix("0x")?;
    let (mant, exp) = match rest.split_once('p') {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + c.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += c.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    let v = v * 2f64.powi(exp);
    if v.is_infinite() {
        return None;
    }
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::excessive_precision)]
    fn percent_17g() {
        assert_eq!(fmt_double(1.1), "1.1000000000000001");
        assert_eq!(fmt_double(1.5), "1.5");
        assert_eq!(fmt_double(100.0), "100");
        assert_eq!(fmt_double(1e20), "1e+20");
        assert_eq!(fmt_double(1.5e-5), "1.5e-05"); // values checked against C printf("%.17g")
        assert_eq!(fmt_double(0.0001), "0.0001");
        assert_eq!(fmt_double(12345678901234567.0), "12345678901234568");
        assert_eq!(fmt_double(f64::INFINITY), "inf");
        assert_eq!(fmt_double(-42.0), "-42");
        assert_eq!(fmt_double(999_999_999_999_999.0), "999999999999999");
        assert_eq!(fmt_double(1e15), "1000000000000000");
        assert_eq!(fmt_double(-0.0), "-0");
        assert_eq!(fmt_double(-1.1), "-1.1000000000000001");
        assert_eq!(fmt_double(0.1), "0.10000000000000001");
        assert_eq!(fmt_double(123.456), "123.456");
        assert_eq!(fmt_double(0.000123), "0.00012300000000000001");
        assert_eq!(
            fmt_double(-0.00012345678901234567),
            "-0.00012345678901234567"
        );
        assert_eq!(fmt_double(1e16 + 2.0), "10000000000000002");
        assert_eq!(fmt_double(2.5e-5), "2.5000000000000001e-05");
        assert_eq!(fmt_g(0.5, 17), "0.5");
        // Exact ties round half to even, as glibc's printf does.
        assert_eq!(fmt_double(1000000000000000.25), "1000000000000000.2");
        assert_eq!(fmt_double(1000000000000000.75), "1000000000000000.8");
        assert_eq!(fmt_double(1500000000000000.75), "1500000000000000.8");
        assert_eq!(fmt_g(1234.5, 3), "1.23e+03");
    }

    /// The fixed-notation digits come from the scientific conversion; check
    /// them against a direct fixed conversion over many doubles.
    #[test]
    fn fixed_notation_matches_direct_conversion() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mant = (x >> 11) as f64 / (1u64 << 53) as f64;
            let e = (x % 24) as i32 - 5;
            let d = mant * 10f64.powi(e) * if x & 1 == 1 { -1.0 } else { 1.0 };
            if d == 0.0 {
                continue;
            }
            let sci = format!("{:.16e}", d);
            let exp: i32 = sci.split_once('e').unwrap().1.parse().unwrap();
            if (-4..17).contains(&exp) {
                let decimals = (16 - exp).max(0) as usize;
                let direct = strip_zeros(&format!("{:.*}", decimals, d)).to_string();
                assert_eq!(fmt_g(d, 17), direct, "{d:e}");
            }
        }
    }

    /// The integer fast path for 17 digits agrees with Rust's exact
    /// conversion over many doubles, ties and powers of ten included.
    #[test]
    fn digits17_matches_exact_conversion() {
        let mut x: u64 = 0x1234_5678_9ABC_DEF1;
        let check = |d: f64| {
            if let Some((q, e10)) = digits17(d) {
                let slow = format!("{:.16e}", d.abs());
                let (m, e) = slow.split_once('e').unwrap();
                let digits: String = m.chars().filter(|c| *c != '.').collect();
                assert_eq!((q.to_string(), e10), (digits, e.parse().unwrap()), "{d:e}");
            }
        };
        for i in -6..18 {
            check(10f64.powi(i));
            check(0.5 * 10f64.powi(i));
        }
        for v in [
            0.1,
            1.1,
            0.3,
            2.5e-5,
            1e-5,
            99999999999999999.0,
            0.30000000000000004,
        ] {
            check(v);
        }
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mant = (x >> 11) as f64 / (1u64 << 53) as f64 + 0.1;
            let e = (x % 24) as i32 - 6;
            check(mant * 10f64.powi(e));
            // Short decimal values (typical scores) and halves.
            check((x % 1_000_000) as f64 / 1000.0);
            check((x % 1_000_000) as f64 + 0.5);
        }
    }

    #[test]
    fn strtod_rules() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"0x10"), Some(16.0));
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"1 "), None);
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b"1e400"), None);
        assert_eq!(parse_f64(b"1e-400"), None);
        assert_eq!(parse_f64(b""), None);
    }
}
