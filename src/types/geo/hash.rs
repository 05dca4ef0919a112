//! The interleaved geohash: encoding a point into cells, decoding cells, moving to neighbouring cells.
//!
//! A cell of `step` bits per axis is `bits`: latitude bits in the even
//! positions, longitude bits in the odd ones, most significant first
//! (Redis's geohash.c). A sorted-set score is a 26-step cell aligned to 52
//! bits.

/// Bits per axis of a stored position (26 * 2 = 52 bits, exact in a double).
pub const STEP_MAX: u8 = 26;

/// The Web Mercator latitude limits (EPSG:900913): no position is stored nearer the poles.
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
pub const LON_MIN: f64 = -180.0;
pub const LON_MAX: f64 = 180.0;

/// One geohash cell; `bits == 0 && step == 0` is "no cell" (Redis's `GZERO`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashBits {
    pub bits: u64,
    pub step: u8,
}

impl HashBits {
    pub const ZERO: HashBits = HashBits { bits: 0, step: 0 };

    pub fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The cell's bits moved to the top of a 52-bit score.
    pub fn align52(&self) -> u64 {
        self.bits << (52 - self.step as u32 * 2)
    }
}

/// An interval of one coordinate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

impl Range {
    fn is_zero(&self) -> bool {
        self.min == 0.0 && self.max == 0.0
    }
}

/// The longitude range Redis hashes over.
pub const LON_RANGE: Range = Range {
    min: LON_MIN,
    max: LON_MAX,
};
/// The latitude range Redis hashes over (the Mercator limits, not ±90).
pub const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// A decoded cell: its bounds on both axes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Area {
    pub hash: HashBits,
    pub lon: Range,
    pub lat: Range,
}

/// Spreads the 32 bits of `v` to the even bit positions of a u64.
fn spread(v: u32) -> u64 {
    let mut x = v as u64;
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gathers the even bit positions of `v` into 32 bits (the inverse of [`spread`]).
fn gather(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    ((x | (x >> 16)) & 0x0000_0000_FFFF_FFFF) as u32
}

/// Latitude bits in the even positions, longitude bits in the odd ones.
pub fn interleave(lat: u32, lon: u32) -> u64 {
    spread(lat) | (spread(lon) << 1)
}

/// `(lat, lon)` back from [`interleave`].
pub fn deinterleave(bits: u64) -> (u32, u32) {
    (gather(bits), gather(bits >> 1))
}

/// The cell of `step` bits per axis holding the point, within the given
/// ranges; `None` outside them or outside the Mercator limits.
pub fn encode(lon_r: Range, lat_r: Range, lon: f64, lat: f64, step: u8) -> Option<HashBits> {
    if step > 32 || step == 0 || lat_r.is_zero() || lon_r.is_zero() {
        return None;
    }
    if !(LON_MIN..=LON_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_r.min || lat > lat_r.max || lon < lon_r.min || lon > lon_r.max {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let lat_off = (lat - lat_r.min) / (lat_r.max - lat_r.min) * cells;
    let lon_off = (lon - lon_r.min) / (lon_r.max - lon_r.min) * cells;
    // A coordinate on the upper limit gives offset 2^step, one past the last
    // cell, as in Redis (the truncation to u32 keeps that bit).
    Some(HashBits {
        bits: interleave(lat_off as u32, lon_off as u32),
        step,
    })
}

/// [`encode`] over Redis's ranges (longitude ±180, latitude the Mercator limits).
pub fn encode_wgs84(lon: f64, lat: f64, step: u8) -> Option<HashBits> {
    encode(LON_RANGE, LAT_RANGE, lon, lat, step)
}

/// The bounds of a cell; `None` for the zero cell.
pub fn decode(lon_r: Range, lat_r: Range, hash: HashBits) -> Option<Area> {
    if hash.is_zero() || lat_r.is_zero() || lon_r.is_zero() {
        return None;
    }
    let (ilat, ilon) = deinterleave(hash.bits);
    let cells = (1u64 << hash.step) as f64;
    let lat_scale = lat_r.max - lat_r.min;
    let lon_scale = lon_r.max - lon_r.min;
    // `ilat + 1` wraps in 32 bits as Redis's uint32_t does.
    Some(Area {
        hash,
        lat: Range {
            min: lat_r.min + (ilat as f64 / cells) * lat_scale,
            max: lat_r.min + (ilat.wrapping_add(1) as f64 / cells) * lat_scale,
        },
        lon: Range {
            min: lon_r.min + (ilon as f64 / cells) * lon_scale,
            max: lon_r.min + (ilon.wrapping_add(1) as f64 / cells) * lon_scale,
        },
    })
}

/// [`decode`] over Redis's ranges.
pub fn decode_wgs84(hash: HashBits) -> Option<Area> {
    decode(LON_RANGE, LAT_RANGE, hash)
}

/// The centre of a cell, clamped to the valid ranges: `(lon, lat)`.
pub fn area_center(a: &Area) -> (f64, f64) {
    let lon = ((a.lon.min + a.lon.max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((a.lat.min + a.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The 52-bit cell a sorted-set score names, converted as C's
/// `(uint64_t)score` does on x86-64: truncation toward zero, negative values
/// wrapping modulo 2^64, and values out of range (or infinite) giving the
/// "integer indefinite" result of `cvttsd2si` through gcc's two-branch
/// conversion.
pub fn score_bits(score: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    const INDEFINITE: u64 = 1 << 63;
    let signed = |x: f64| -> u64 {
        if !(-TWO63..TWO63).contains(&x) {
            INDEFINITE
        } else {
            x as i64 as u64
        }
    };
    // gcc's branch is `score >= 2^63` (`comisd`); NaN takes the other one.
    if score >= TWO63 {
        signed(score - TWO63) ^ INDEFINITE
    } else {
        signed(score)
    }
}

/// The position `(lon, lat)` a sorted-set score encodes (Redis's
/// `decodeGeohash`; every 26-step cell decodes, so this never fails).
pub fn decode_score(score: f64) -> (f64, f64) {
    let hash = HashBits {
        bits: score_bits(score),
        step: STEP_MAX,
    };
    let area = decode_wgs84(hash).expect("a 26-step cell is never the zero cell");
    area_center(&area)
}

/// The sorted-set score of a position (already checked against the limits).
pub fn encode_score(lon: f64, lat: f64) -> Option<u64> {
    encode_wgs84(lon, lat, STEP_MAX).map(|h| h.align52())
}

/// The eight cells around one, in Redis's field order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Neighbors {
    pub north: HashBits,
    pub east: HashBits,
    pub west: HashBits,
    pub south: HashBits,
    pub north_east: HashBits,
    pub south_east: HashBits,
    pub north_west: HashBits,
    pub south_west: HashBits,
}

/// Moves a cell one step along the longitude (odd) bits, wrapping around
/// the antimeridian.
fn move_x(h: HashBits, d: i8) -> HashBits {
    move_axis(h, d, 0xaaaa_aaaa_aaaa_aaaa, 0x5555_5555_5555_5555)
}

/// Moves a cell one step along the latitude (even) bits.
fn move_y(h: HashBits, d: i8) -> HashBits {
    move_axis(h, d, 0x5555_5555_5555_5555, 0xaaaa_aaaa_aaaa_aaaa)
}

/// Adds or subtracts one on the bits under `axis`: the other axis's bits
/// are set to ones (`fill`) so the carry or borrow runs through them.
fn move_axis(h: HashBits, d: i8, axis: u64, other: u64) -> HashBits {
    if d == 0 {
        return h;
    }
    let shift = 64 - h.step as u32 * 2;
    let mut v = h.bits & axis;
    let keep = h.bits & other;
    let fill = other >> shift;
    if d > 0 {
        v = v.wrapping_add(fill + 1);
    } else {
        v = (v | fill).wrapping_sub(fill + 1);
    }
    v &= axis >> shift;
    HashBits {
        bits: v | keep,
        step: h.step,
    }
}

/// The eight neighbours of a cell (Redis's `geohashNeighbors`).
pub fn neighbors(h: HashBits) -> Neighbors {
    Neighbors {
        east: move_x(h, 1),
        west: move_x(h, -1),
        south: move_y(h, -1),
        north: move_y(h, 1),
        north_west: move_y(move_x(h, -1), 1),
        north_east: move_y(move_x(h, 1), 1),
        south_east: move_y(move_x(h, 1), -1),
        south_west: move_y(move_x(h, -1), -1),
    }
}
