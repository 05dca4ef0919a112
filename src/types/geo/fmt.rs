//! Text of geo replies as Redis writes them: distances with 4 decimals, coordinates in `%.17Lf` trimmed, geohash strings.

use super::hash::{self, Range};
use crate::types::longdouble::LongDouble;

/// A distance with exactly four decimals (Redis's `fixedpoint_d2string(.., 4)`):
/// `llrint(d * 10000)` (half to even; out of range or NaN gives `LLONG_MIN`
/// as on x86-64), then the digits with the point placed four from the right.
pub fn distance(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".into();
    }
    let scaled = (d * 10000.0).round_ties_even();
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    let v: i64 = if (-TWO63..TWO63).contains(&scaled) {
        scaled as i64
    } else {
        i64::MIN
    };
    let sign = if v < 0 { "-" } else { "" };
    let u = v.unsigned_abs();
    format!("{sign}{}.{:04}", u / 10000, u % 10000)
}

/// A coordinate as Redis's `addReplyHumanLongDouble` writes it: the double
/// widened to `long double`, `%.17Lf`, trailing zeros (and point) removed.
pub fn coord(x: f64) -> Vec<u8> {
    match LongDouble::from_f64(x) {
        Some(ld) => ld.to_human(),
        None => b"nan".to_vec(),
    }
}

const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";

/// The standard 11-character geohash of a stored score: decoded, encoded
/// again over latitudes ±90 (Redis hashes over the Mercator limits
/// internally), five bits a character; the 11th character stands for bits
/// a 52-bit hash does not have and is always `0`.
pub fn geohash(score: f64) -> [u8; 11] {
    let (lon, lat) = hash::decode_score(score);
    let lon_r = Range {
        min: -180.0,
        max: 180.0,
    };
    let lat_r = Range {
        min: -90.0,
        max: 90.0,
    };
    let bits = hash::encode(lon_r, lat_r, lon, lat, hash::STEP_MAX).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().take(10).enumerate() {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    out
}
